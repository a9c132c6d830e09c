/* loop: epoll + a small timer list + the before-sleep hook.
 * Owns: the only epoll_wait of the daemon.
 * Must not: block anywhere but in epoll_wait.
 * Timers are few (grace-period kills, wakeups for maximum execution time, log
 * followers), so a flat array scanned per iteration is simpler than a heap and fast
 * enough; the watch table is indexed by fd. Timers run on the monotonic clock; the
 * wall clock is kept beside it for the stamps callers write (see loop.h).
 * An event names its descriptor and the watch's generation: a descriptor unwatched,
 * closed and reused by a new watch within one batch of events (a connection closed
 * to make room for the one just accepted) never gets the old one's events. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>
#include "lib/alloc.h"
#include "net/loop.h"

typedef struct watch { gx_fd_fn fn; void *ud; int used; uint32_t gen; } watch;
typedef struct timer { uint64_t id; int64_t at; gx_timer_fn fn; void *ud; } timer;

struct gx_loop {
    int ep;
    int stop;
    int64_t now;                  /* wall clock, ms */
    int64_t mono;                 /* monotonic clock, ms: timers */
    watch *w;
    int nw;
    timer *t;
    size_t nt, capt;
    uint64_t next_id;
    gx_prepare_fn prepare;
    void *prepare_ud;
};

static int64_t clock_ms(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Both clocks at once (vDSO reads, no system call). */
static void read_clocks(gx_loop *l)
{
    l->mono = clock_ms(CLOCK_MONOTONIC);
    l->now = clock_ms(CLOCK_REALTIME);
}

gx_loop *gx_loop_new(void)
{
    gx_loop *l = calloc(1, sizeof *l);
    if (!l) return NULL;
    l->ep = epoll_create1(EPOLL_CLOEXEC);
    if (l->ep < 0) { free(l); return NULL; }
    read_clocks(l);
    l->next_id = 1;
    return l;
}

void gx_loop_free(gx_loop *l)
{
    if (!l) return;
    close(l->ep);
    free(l->w);
    free(l->t);
    free(l);
}

int gx_loop_watch(gx_loop *l, int fd, uint32_t events, gx_fd_fn fn, void *ud)
{
    if (fd < 0) return -1;
    if (fd >= l->nw) {
        int n = fd + 64;
        watch *w = realloc(l->w, (size_t)n * sizeof *w);
        if (!w) return -1;
        memset(w + l->nw, 0, (size_t)(n - l->nw) * sizeof *w);
        l->w = w;
        l->nw = n;
    }
    uint32_t gen = l->w[fd].gen;
    struct epoll_event ev = {.events = events, .data.u64 = (uint64_t)gen << 32 | (uint32_t)fd};
    int op = l->w[fd].used ? EPOLL_CTL_MOD : EPOLL_CTL_ADD;
    if (epoll_ctl(l->ep, op, fd, &ev) < 0) return -1;
    l->w[fd] = (watch){fn, ud, 1, gen};
    return 0;
}

void gx_loop_unwatch(gx_loop *l, int fd)
{
    if (fd < 0 || fd >= l->nw || !l->w[fd].used) return;
    epoll_ctl(l->ep, EPOLL_CTL_DEL, fd, NULL);
    l->w[fd].used = 0;
    l->w[fd].gen++;   /* events of this watch still in the batch are not delivered */
}

uint64_t gx_loop_at(gx_loop *l, int64_t at_ms, gx_timer_fn fn, void *ud)
{
    l->t = gx_xgrow(l->t, &l->capt, l->nt + 1, sizeof *l->t);
    uint64_t id = l->next_id++;
    l->t[l->nt++] = (timer){id, at_ms, fn, ud};
    return id;
}

void gx_loop_cancel(gx_loop *l, uint64_t id)
{
    for (size_t i = 0; i < l->nt; i++)
        if (l->t[i].id == id) {
            l->t[i] = l->t[--l->nt];
            return;
        }
}

void gx_loop_set_prepare(gx_loop *l, gx_prepare_fn fn, void *ud)
{
    l->prepare = fn;
    l->prepare_ud = ud;
}

int64_t gx_loop_now(const gx_loop *l) { return l->now; }
int64_t gx_loop_mono(const gx_loop *l) { return l->mono; }

int64_t gx_loop_update_time(gx_loop *l)
{
    read_clocks(l);
    return l->now;
}
void gx_loop_stop(gx_loop *l) { l->stop = 1; }

/* Fire due timers. A callback may add or cancel timers, so restart the scan after each. */
static void run_timers(gx_loop *l)
{
    for (;;) {
        size_t i;
        for (i = 0; i < l->nt; i++)
            if (l->t[i].at <= l->mono) break;
        if (i == l->nt) return;
        timer t = l->t[i];
        l->t[i] = l->t[--l->nt];
        t.fn(l, t.ud);
    }
}

int gx_loop_run(gx_loop *l)
{
    struct epoll_event evs[64];
    l->stop = 0;   /* a stopped loop can run again (the executor's unit tests run it in phases) */
    while (!l->stop) {
        int64_t timeout = -1;
        if (l->prepare) timeout = l->prepare(l, l->prepare_ud);
        if (l->stop) break;
        for (size_t i = 0; i < l->nt; i++) {
            int64_t d = l->t[i].at - l->mono;
            if (d < 0) d = 0;
            if (timeout < 0 || d < timeout) timeout = d;
        }
        if (timeout > 60000 || timeout < 0) timeout = 60000;
        int n = epoll_wait(l->ep, evs, 64, (int)timeout);
        if (n < 0 && errno != EINTR) return -1;
        read_clocks(l);
        for (int i = 0; i < n; i++) {
            int fd = (int)(uint32_t)evs[i].data.u64;
            uint32_t gen = (uint32_t)(evs[i].data.u64 >> 32);
            if (fd < l->nw && l->w[fd].used && l->w[fd].gen == gen) l->w[fd].fn(l, fd, evs[i].events, l->w[fd].ud);
        }
        run_timers(l);
    }
    return 0;
}
