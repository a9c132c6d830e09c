/* bench/windows_save: how long the gateway's event loop is held by the once-a-second
 * save of the rate-limit windows of its busy keys.
 * Reference, in the same run: the loop writing them itself (gx_store_put_rate_windows,
 * one transaction, as it did before). Measured: the loop handing them to the store's
 * writer thread (gx_store_queue_rate_windows), and, apart, how long the writer then
 * takes to commit them (so the work is shown moved, not gone).
 * Wall time of the calling thread, WINDOWS rows (one per key), ROUNDS rounds alternating
 * the two; prints the medians and their ratio. Never fails on time.
 * Usage: build/bench-windows-save DIR [WINDOWS=10000] [ROUNDS=5] */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "store/ratelimit.h"
#include "store/store.h"

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    if (argc < 2) { fprintf(stderr, "usage: %s DIR [WINDOWS] [ROUNDS]\n", argv[0]); return 2; }
    int n = argc > 2 ? atoi(argv[2]) : 10000, rounds = argc > 3 ? atoi(argv[3]) : 5;
    if (n < 1 || rounds < 1 || rounds > 100) { fprintf(stderr, "WINDOWS and ROUNDS must be positive\n"); return 2; }
    gx_err e;
    gx_err_clear(&e);
    gx_store *s = gx_store_open(argv[1], &e);
    if (!s) { fprintf(stderr, "bench/windows_save: %s\n", e.msg); return 1; }
    gx_store_rate_window *w = calloc((size_t)n, sizeof *w);
    char (*names)[24] = calloc((size_t)n, sizeof *names);
    double *direct = calloc((size_t)rounds, sizeof *direct), *handed = calloc((size_t)rounds, sizeof *handed),
           *commit = calloc((size_t)rounds, sizeof *commit);
    if (!w || !names || !direct || !handed || !commit) return 1;
    for (int i = 0; i < n; i++) {
        snprintf(names[i], sizeof names[i], "%012x", (unsigned)i * 2654435761u);
        w[i] = (gx_store_rate_window){"key", names[i], "tokens", 60000, 1700000000000LL, i};
    }
    printf("rate-limit windows save: %d windows a save, %d rounds\n", n, rounds);
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < n; i++) w[i].used += 7;   /* each save changes every row */
        double t0 = now_ms();
        if (gx_store_put_rate_windows(s, w, (size_t)n, &e)) { fprintf(stderr, "%s\n", e.msg); return 1; }
        double t1 = now_ms();
        for (int i = 0; i < n; i++) w[i].used += 7;
        if (gx_store_queue_rate_windows(s, w, (size_t)n, &e)) { fprintf(stderr, "%s\n", e.msg); return 1; }
        double t2 = now_ms();
        gx_store_sync_usage(s);
        double t3 = now_ms();
        direct[r] = t1 - t0, handed[r] = t2 - t1, commit[r] = t3 - t2;
        printf("  round %d: written on the loop %8.3f ms   handed to the writer %7.3f ms   (writer committed %.3f ms later)\n",
               r + 1, direct[r], handed[r], commit[r]);
    }
    double d = median(direct, rounds), h = median(handed, rounds), c = median(commit, rounds);
    printf("  medians: loop held %.3f ms (reference: %.3f ms when the loop wrote them), ratio %.3f; the writer then took %.3f ms\n",
           h, d, h / d, c);
    gx_store_close(s);
    free(w), free(names), free(direct), free(handed), free(commit);
    return 0;
}
