/* sim/trace_timed: the time-driven replay of a trace through the real placement engine:
 * pods arrive at their creation time, run for (deletion - creation) seconds once
 * placed, and wait in a FIFO queue (with backfill) while they fit nowhere.
 * Owns: gx_trace_timed: the event loop, the queue, GPU utilisation and delay figures.
 * Must not: score or pick nodes itself (gx_place_choose does), or print. */
#include <stdlib.h>
#include <string.h>

#include "lib/alloc.h"
#include "sim/trace_internal.h"

typedef struct fin { double at; int pod; } fin;

/* a binary min-heap of finish events */
typedef struct heap { fin *a; size_t n; } heap;

static void heap_push(heap *h, fin x)
{
    size_t i = h->n++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (h->a[p].at <= x.at) break;
        h->a[i] = h->a[p];
        i = p;
    }
    h->a[i] = x;
}

static fin heap_pop(heap *h)
{
    fin top = h->a[0], x = h->a[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && h->a[c + 1].at < h->a[c].at) c++;
        if (x.at <= h->a[c].at) break;
        h->a[i] = h->a[c];
        i = c;
    }
    if (h->n) h->a[i] = x;
    return top;
}

typedef struct sim {
    const gx_trace *t;
    gx_place_ctx *cx;
    gx_place_node *nodes;
    int *order;
    gx_place_pod *req;           /* requests as replayed (rounded up with no sharing) */
    gx_place_assign *where;
    double *arrive, *start;
    heap fins;
    int *queue;
    size_t nq;
    double last;
    /* allocated and requested milli-GPU now, integrated over [t0, t1] (arrival window) */
    double alloc_now, req_now, t_prev, t0, t1, alloc_area, req_area;
} sim;

/* Advances the integrals of allocated and requested GPU to time `now`. */
static void advance(sim *s, double now)
{
    double a = s->t_prev > s->t0 ? s->t_prev : s->t0, b = now < s->t1 ? now : s->t1;
    if (b > a) {
        s->alloc_area += s->alloc_now * (b - a);
        s->req_area += s->req_now * (b - a);
    }
    if (now > s->t_prev) s->t_prev = now;
}

static int cmp_arrival(const void *a, const void *b, void *arg)
{
    const double *at = arg;
    double x = at[*(const int *)a], y = at[*(const int *)b];
    return x < y ? -1 : x > y ? 1 : *(const int *)a - *(const int *)b;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static bool try_start(sim *s, int p, double now)
{
    gx_place_assign *a = &s->where[p];
    if (gx_place_choose(s->cx, s->nodes, s->t->nnodes, s->order, &s->req[p], a) < 0 ||
        !gx_place_commit(s->cx, &s->nodes[a->node], &s->req[p], a))
        return false;
    const gx_trace_pod *tp = &s->t->pods[p];
    double dur = (double)(tp->deleted - tp->created);
    advance(s, now);
    s->alloc_now += (double)gx_place_pod_gpu_total(&s->req[p]);
    s->req_now += (double)gx_place_pod_gpu_total(&tp->req);
    s->start[p] = now;
    heap_push(&s->fins, (fin){ now + dur, p });
    return true;
}

/* A pod finished at `now`: free its GPUs, then start queued pods (in queue order) that
 * fit on the node it left, the only node that gained room. */
static void finish(sim *s, fin f)
{
    int p = f.pod;
    gx_place_node *n = &s->nodes[s->where[p].node];
    gx_place_release(s->cx, n, &s->req[p], &s->where[p]);
    advance(s, f.at);
    s->alloc_now -= (double)gx_place_pod_gpu_total(&s->req[p]);
    s->req_now -= (double)gx_place_pod_gpu_total(&s->t->pods[p].req);
    if (f.at > s->last) s->last = f.at;
    size_t k = 0;
    for (size_t i = 0; i < s->nq; i++) {
        int q = s->queue[i];
        if (gx_place_fits(n, &s->req[q]) && try_start(s, q, f.at)) continue;
        s->queue[k++] = q;
    }
    s->nq = k;
}

static void figures(sim *s, gx_trace_timed_result *out, const int *by_arrival)
{
    size_t n = s->t->npods, started = 0;
    double *d = gx_xreallocarray(NULL, n, sizeof *d), first = s->arrive[by_arrival[0]];
    for (size_t i = 0; i < n; i++) {
        if (s->start[i] < 0) continue;
        d[started++] = s->start[i] - s->arrive[i];
        out->queued += s->start[i] > s->arrive[i];
    }
    qsort(d, started, sizeof *d, cmp_double);
    double sum = 0;
    for (size_t i = 0; i < started; i++) sum += d[i];
    if (started) {
        out->delay_mean = sum / (double)started;
        out->delay_p50 = d[(size_t)(0.50 * (double)(started - 1))];
        out->delay_p90 = d[(size_t)(0.90 * (double)(started - 1))];
        out->delay_p99 = d[(size_t)(0.99 * (double)(started - 1))];
    }
    out->pods = n;
    out->never_started = n - started;
    (void)first;
    out->makespan = s->last - s->t0;
    double cap = (double)s->t->gpu_milli * (s->t1 - s->t0);
    out->util = cap > 0 ? 100.0 * s->alloc_area / cap : 0;
    out->util_req = cap > 0 ? 100.0 * s->req_area / cap : 0;
    free(d);
}

int gx_trace_timed(const gx_trace *t, const gx_place_policy *pol, uint64_t seed,
                   const gx_place_workload *wl, bool no_sharing, double time_scale,
                   gx_trace_timed_result *out)
{
    memset(out, 0, sizeof *out);
    size_t n = t->npods;
    sim s = { .t = t };
    s.cx = gx_place_ctx_new(pol, wl, seed);
    s.nodes = malloc((size_t)t->nnodes * sizeof *s.nodes);
    s.order = malloc((size_t)t->nnodes * sizeof *s.order);
    s.req = malloc(n * sizeof *s.req);
    s.where = calloc(n, sizeof *s.where);
    s.arrive = malloc(n * sizeof *s.arrive);
    s.start = malloc(n * sizeof *s.start);
    s.fins.a = malloc(n * sizeof *s.fins.a);
    s.queue = malloc(n * sizeof *s.queue);
    int *by = malloc(n * sizeof *by), rc = -1;
    if (!s.cx || !s.nodes || !s.order || !s.req || !s.where || !s.arrive || !s.start ||
        !s.fins.a || !s.queue || !by)
        goto out;
    memcpy(s.nodes, t->nodes, (size_t)t->nnodes * sizeof *s.nodes);
    gx_trace_rng r;
    gx_trace_rng_seed(&r, seed);
    for (int i = 0; i < t->nnodes; i++) s.order[i] = i;
    gx_trace_rng_shuffle(&r, s.order, (size_t)t->nnodes);
    for (size_t i = 0; i < n; i++) {
        s.req[i] = t->pods[i].req;
        if (no_sharing && s.req[i].num_gpu > 0) s.req[i].gpu_milli = GX_PLACE_MILLI;
        s.arrive[i] = (double)t->pods[i].created / time_scale;
        s.start[i] = -1;
        by[i] = (int)i;
    }
    qsort_r(by, n, sizeof *by, cmp_arrival, s.arrive);
    s.t0 = s.t_prev = s.arrive[by[0]];
    s.t1 = s.arrive[by[n - 1]];
    for (size_t i = 0; i < n; i++) {
        int p = by[i];
        while (s.fins.n && s.fins.a[0].at <= s.arrive[p]) finish(&s, heap_pop(&s.fins));
        if (s.arrive[p] > s.last) s.last = s.arrive[p];
        if (!try_start(&s, p, s.arrive[p])) s.queue[s.nq++] = p;
    }
    while (s.fins.n) finish(&s, heap_pop(&s.fins));
    figures(&s, out, by);
    rc = 0;
out:
    gx_place_ctx_free(s.cx);
    free(s.nodes);
    free(s.order);
    free(s.req);
    free(s.where);
    free(s.arrive);
    free(s.start);
    free(s.fins.a);
    free(s.queue);
    free(by);
    return rc;
}
