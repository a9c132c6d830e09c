/* engine_queue: the pending queues of the cluster queues.
 * Owns: each ClusterQueue's heap of pending workloads in Kueue's order (higher priority
 * first, then earlier queue timestamp, then arrival sequence as the UID tie-break), the
 * BestEffortFIFO "inadmissible" set (heads that did not fit, set aside until a cluster
 * event), and the list of queues that have heads ("ready").
 * Must not: decide admission; it only orders and moves workload indices. */
#include <stdlib.h>
#include <string.h>
#include "core/engine_int.h"

int gx_engine_queue_before(const gx_engine *e, const gx_wl *a, const gx_wl *b)
{
    (void)e;
    if (a->priority != b->priority) return a->priority > b->priority;
    if (a->queue_ts != b->queue_ts) return a->queue_ts < b->queue_ts;
    return a->seq < b->seq;
}

static void hswap(gx_engine *e, gx_cq *c, int i, int j)
{
    int t = c->heap[i];
    c->heap[i] = c->heap[j];
    c->heap[j] = t;
    e->wls[c->heap[i]].heap_pos = i;
    e->wls[c->heap[j]].heap_pos = j;
}

static void sift_up(gx_engine *e, gx_cq *c, int i)
{
    while (i > 0) {
        int p = (i - 1) / 2;
        if (!gx_engine_queue_before(e, &e->wls[c->heap[i]], &e->wls[c->heap[p]])) break;
        hswap(e, c, i, p);
        i = p;
    }
}

static void sift_down(gx_engine *e, gx_cq *c, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < c->heap_n && gx_engine_queue_before(e, &e->wls[c->heap[l]], &e->wls[c->heap[m]])) m = l;
        if (r < c->heap_n && gx_engine_queue_before(e, &e->wls[c->heap[r]], &e->wls[c->heap[m]])) m = r;
        if (m == i) return;
        hswap(e, c, i, m);
        i = m;
    }
}

static void mark_ready(gx_engine *e, int cq)
{
    gx_cq *c = &e->cqs[cq];
    if (c->ready) return;
    c->ready = 1;
    GX_GROW(e->ready, e->n_ready, e->cap_ready);
    e->ready[e->n_ready++] = cq;
}

void gx_engine_queue_push(gx_engine *e, int cq, int wi)
{
    gx_cq *c = &e->cqs[cq];
    GX_GROW(c->heap, c->heap_n, c->heap_cap);
    c->heap[c->heap_n] = wi;
    e->wls[wi].heap_pos = c->heap_n++;
    e->wls[wi].inadm_pos = -1;
    sift_up(e, c, c->heap_n - 1);
    mark_ready(e, cq);
}

int gx_engine_queue_pop(gx_engine *e, int cq)
{
    gx_cq *c = &e->cqs[cq];
    if (!c->heap_n) return -1;
    int top = c->heap[0];
    hswap(e, c, 0, c->heap_n - 1);
    c->heap_n--;
    if (c->heap_n) sift_down(e, c, 0);
    e->wls[top].heap_pos = -1;
    return top;
}

void gx_engine_queue_remove(gx_engine *e, gx_wl *w)
{
    if (w->cq < 0) return;
    gx_cq *c = &e->cqs[w->cq];
    if (w->heap_pos >= 0) {
        int i = w->heap_pos;
        hswap(e, c, i, c->heap_n - 1);
        c->heap_n--;
        if (i < c->heap_n) { sift_up(e, c, i); sift_down(e, c, e->wls[c->heap[i]].heap_pos); }
        w->heap_pos = -1;
    }
    if (w->inadm_pos >= 0) {
        int i = w->inadm_pos;
        c->inadm[i] = c->inadm[--c->inadm_n];
        if (i < c->inadm_n) e->wls[c->inadm[i]].inadm_pos = i;
        w->inadm_pos = -1;
    }
}

void gx_engine_queue_park(gx_engine *e, int cq, int wi)
{
    gx_cq *c = &e->cqs[cq];
    GX_GROW(c->inadm, c->inadm_n, c->inadm_cap);
    c->inadm[c->inadm_n] = wi;
    e->wls[wi].inadm_pos = c->inadm_n++;
    e->wls[wi].heap_pos = -1;
}

void gx_engine_queue_wake(gx_engine *e, int cq)
{
    gx_cq *c = &e->cqs[cq];
    while (c->inadm_n) {
        int wi = c->inadm[--c->inadm_n];
        e->wls[wi].inadm_pos = -1;
        gx_engine_queue_push(e, cq, wi);
    }
}

/* A cluster event in a cohort can make any queue of the same tree admissible again. */
void gx_engine_queue_wake_tree(gx_engine *e, int cq)
{
    if (cq < 0) return;
    if (e->dirty || !e->cqs[cq].cohort_name) {
        if (e->dirty) gx_engine_queue_wake_all(e);
        else gx_engine_queue_wake(e, cq);
        return;
    }
    int root = e->cqs[cq].node;
    while (e->nodes_q[root].parent >= 0) root = e->nodes_q[root].parent;
    /* walk the tree under root */
    int stack[256], sp = 0;
    stack[sp++] = root;
    while (sp) {
        int n = stack[--sp];
        const gx_qnode *q = &e->nodes_q[n];
        if (q->cq >= 0) { gx_engine_queue_wake(e, q->cq); continue; }
        for (int i = 0; i < q->n_child; i++) {
            if (sp < 256) stack[sp++] = q->child[i];
            else gx_engine_queue_wake_all(e);
        }
    }
}

void gx_engine_queue_wake_all(gx_engine *e)
{
    for (int i = 0; i < e->n_cq; i++) gx_engine_queue_wake(e, i);
}

void gx_engine_queue_free(gx_cq *c)
{
    free(c->heap);
    free(c->inadm);
    free(c->adm);
    c->adm = NULL;
    c->adm_n = c->adm_cap = 0;
    c->heap = c->inadm = NULL;
    c->heap_n = c->inadm_n = c->heap_cap = c->inadm_cap = 0;
}

static int cmp_wl(const void *a, const void *b, void *ctx)
{
    const gx_engine *e = ctx;
    const gx_wl *x = &e->wls[*(const int *)a], *y = &e->wls[*(const int *)b];
    if (gx_engine_queue_before(e, x, y)) return -1;
    if (gx_engine_queue_before(e, y, x)) return 1;
    return 0;
}

int *gx_engine_queue_sorted(const gx_engine *e, int cq, int *n)
{
    const gx_cq *c = &e->cqs[cq];
    *n = c->heap_n + c->inadm_n;
    int *v = malloc((size_t)(*n ? *n : 1) * sizeof(int));
    if (c->heap_n) memcpy(v, c->heap, (size_t)c->heap_n * sizeof(int));
    if (c->inadm_n) memcpy(v + c->heap_n, c->inadm, (size_t)c->inadm_n * sizeof(int));
    if (*n) qsort_r(v, (size_t)*n, sizeof(int), cmp_wl, (void *)e);
    return v;
}
