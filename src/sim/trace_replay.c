/* sim/trace_replay: the FGD paper's arrival replay of a trace through the real placement
 * engine (src/core/place*.c): shuffled pods, sampled with replacement up to tune x
 * capacity, placed one by one with no departures, a pod that fits nowhere dropped, the
 * allocation ratio logged after each arrival and averaged per arrived-demand percent.
 * Owns: gx_trace_replay, gx_trace_arrivals.
 * Must not: score or pick nodes itself (gx_place_choose does), or print. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/alloc.h"
#include "sim/trace_internal.h"

/* The arrival sequence for one seed: every trace pod once in shuffled order, then pods
 * drawn with replacement until the next draw would push requested GPU over the target;
 * when the trace alone is over it, random pods are removed instead. */
static int *arrivals_rng(const gx_trace *t, gx_trace_rng *r, double tune, size_t *count)
{
    size_t n = t->npods, cap = n * 2 + 16, len = n;
    int *a = gx_xreallocarray(NULL, cap, sizeof *a);
    for (size_t i = 0; i < n; i++) a[i] = (int)i;
    gx_trace_rng_shuffle(r, a, n);
    double target = tune * (double)t->gpu_milli;
    double total = 0;
    for (size_t i = 0; i < n; i++) total += (double)gx_place_pod_gpu_total(&t->pods[i].req);
    if (total <= target) {
        for (;;) {
            int j = (int)gx_trace_rng_below(r, n);
            double g = (double)gx_place_pod_gpu_total(&t->pods[j].req);
            if (total + g > target) break;
            a = gx_xgrow(a, &cap, len + 1, sizeof *a);
            a[len++] = j;
            total += g;
        }
    } else {
        while (total > target && len > 0) {      /* drop random pods, keep the order */
            size_t k = (size_t)gx_trace_rng_below(r, len);
            total -= (double)gx_place_pod_gpu_total(&t->pods[a[k]].req);
            memmove(&a[k], &a[k + 1], (len - k - 1) * sizeof *a);
            len--;
        }
    }
    *count = len;
    return a;
}

int *gx_trace_arrivals(const gx_trace *t, uint64_t seed, double tune, size_t *count)
{
    gx_trace_rng r;
    gx_trace_rng_seed(&r, seed);
    return arrivals_rng(t, &r, tune, count);
}

int gx_trace_replay(const gx_trace *t, const gx_place_policy *pol, uint64_t seed,
                    const gx_trace_replay_opts *o, gx_trace_run *out)
{
    memset(out, 0, sizeof *out);
    int ncols = (int)floor(o->tune * 100.0 + 0.5) + 1;
    if (ncols > GX_TRACE_MAX_COLS) ncols = GX_TRACE_MAX_COLS;
    if (ncols < 1) ncols = 1;
    out->ncols = ncols;

    gx_trace_rng r;
    gx_trace_rng_seed(&r, seed);
    size_t na = 0;
    int *arr = arrivals_rng(t, &r, o->tune, &na);
    int *order = gx_xreallocarray(NULL, (size_t)t->nnodes, sizeof *order);
    gx_place_node *nodes = gx_xreallocarray(NULL, (size_t)t->nnodes, sizeof *nodes);
    gx_place_ctx *cx = gx_place_ctx_new(pol, o->wl, seed ^ UINT64_C(0x5eed));
    double *sum = gx_xcalloc((size_t)ncols, sizeof *sum);
    size_t *cnt = gx_xcalloc((size_t)ncols, sizeof *cnt);
    int rc = -1;
    if (!cx) goto out;

    /* one fixed tie order per run: a seeded permutation of the nodes */
    for (int i = 0; i < t->nnodes; i++) order[i] = i;
    gx_trace_rng_shuffle(&r, order, (size_t)t->nnodes);
    memcpy(nodes, t->nodes, (size_t)t->nnodes * sizeof *nodes);

    double cap = (double)t->gpu_milli, arrived = 0, alloc = 0;
    for (size_t i = 0; i < na; i++) {
        const gx_place_pod *pod = &t->pods[arr[i]].req;
        double g = (double)gx_place_pod_gpu_total(pod);
        gx_place_assign a;
        arrived += g;
        if (gx_place_choose(cx, nodes, t->nnodes, order, pod, &a) >= 0 &&
            gx_place_commit(cx, &nodes[a.node], pod, &a)) {
            alloc += g;
            out->placed++;
        } else {
            out->dropped++;
        }
        int k = (int)floor(100.0 * arrived / cap + 0.5);
        if (k >= 0 && k < ncols) {
            sum[k] += 100.0 * alloc / cap;
            cnt[k]++;
        }
    }
    out->arrived = na;
    double last = 0;
    for (int k = 0; k < ncols; k++) {   /* a column no arrival landed in repeats the last */
        out->curve[k] = cnt[k] ? sum[k] / (double)cnt[k] : last;
        last = out->curve[k];
    }
    rc = 0;
out:
    free(arr);
    free(order);
    free(nodes);
    free(sum);
    free(cnt);
    gx_place_ctx_free(cx);
    return rc;
}
