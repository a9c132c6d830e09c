/* engine_queue: the pending queues of the cluster queues.
 * Owns: each ClusterQueue's pending workloads in Kueue's order (higher priority first,
 * then earlier queue timestamp, then arrival sequence as the UID tie-break), the
 * BestEffortFIFO "inadmissible" set, and the list of queues that have heads.
 * Must not: decide admission; it only orders and moves workload indices.
 *
 * Workloads with the same scheduling hash (same pod sets, requests, selectors,
 * tolerations and priority) would be judged identically, so they form a group: a
 * heap per group, and a heap of active groups ordered by their first workload. When
 * a head does not fit, its whole group is parked (Kueue's SchedulingEquivalenceHashing
 * moves equivalent workloads to the inadmissible set together), and a cluster event
 * wakes groups, not workloads. That keeps a wake O(groups) instead of O(workloads),
 * which is what lets 50,000 workloads in 1,000 queues replay in seconds. A new
 * workload arriving in a parked group un-parks the group (an arrival is tried, as in
 * Kueue). */
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

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
    return h * 0xff51afd7ed558ccdULL;
}

static uint64_t mix_str(uint64_t h, const char *s)
{
    for (; s && *s; s++) h = mix(h, (unsigned char)*s);
    return mix(h, 0xff);
}

uint64_t gx_engine_queue_hash(const gx_wl *w)
{
    uint64_t h = mix(1469598103934665603ULL, (uint64_t)(uint32_t)w->priority);
    h = mix(h, (uint64_t)(uint32_t)w->lq);
    h = mix(h, (uint64_t)w->s.nps);
    for (int i = 0; i < w->s.nps; i++) {
        const gx_podset *p = &w->s.ps[i];
        h = mix(mix(h, (uint64_t)p->count), (uint64_t)p->min_count);
        for (int r = 0; r < p->nreq; r++) h = mix(mix(h, (uint64_t)p->res[r]), (uint64_t)p->req[r]);
        for (int k = 0; k < p->node_selector.n; k++) h = mix_str(mix_str(h, p->node_selector.k[k]), p->node_selector.v[k]);
        if (p->affinity) {
            char *a = json_dumps(p->affinity, JSON_COMPACT | JSON_SORT_KEYS);
            h = mix_str(h, a);
            free(a);
        }
        for (int k = 0; k < p->n_tols; k++)
            h = mix_str(mix_str(mix_str(mix_str(h, p->tols[k].key), p->tols[k].op), p->tols[k].value), p->tols[k].effect);
    }
    return h ? h : 1;
}

/* ---- a group's heap of workloads --------------------------------------------------- */

static void wswap(gx_engine *e, gx_qgroup *g, int i, int j)
{
    int t = g->h[i]; g->h[i] = g->h[j]; g->h[j] = t;
    e->wls[g->h[i]].heap_pos = i;
    e->wls[g->h[j]].heap_pos = j;
}

static int wless(const gx_engine *e, const gx_qgroup *g, int i, int j)
{
    return gx_engine_queue_before(e, &e->wls[g->h[i]], &e->wls[g->h[j]]);
}

static void wup(gx_engine *e, gx_qgroup *g, int i)
{
    while (i > 0) { int p = (i - 1) / 2; if (!wless(e, g, i, p)) break; wswap(e, g, i, p); i = p; }
}

static void wdown(gx_engine *e, gx_qgroup *g, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < g->n && wless(e, g, l, m)) m = l;
        if (r < g->n && wless(e, g, r, m)) m = r;
        if (m == i) return;
        wswap(e, g, i, m);
        i = m;
    }
}

/* ---- the heap of active groups ------------------------------------------------------ */

static int gless(const gx_engine *e, const gx_queue *q, int a, int b)
{
    const gx_qgroup *x = &q->g[q->gheap[a]], *y = &q->g[q->gheap[b]];
    return gx_engine_queue_before(e, &e->wls[x->h[0]], &e->wls[y->h[0]]);
}

static void gswap(gx_queue *q, int i, int j)
{
    int t = q->gheap[i]; q->gheap[i] = q->gheap[j]; q->gheap[j] = t;
    q->g[q->gheap[i]].gpos = i;
    q->g[q->gheap[j]].gpos = j;
}

static void gup(const gx_engine *e, gx_queue *q, int i)
{
    while (i > 0) { int p = (i - 1) / 2; if (!gless(e, q, i, p)) break; gswap(q, i, p); i = p; }
}

static void gdown(const gx_engine *e, gx_queue *q, int i)
{
    for (;;) {
        int l = 2 * i + 1, r = l + 1, m = i;
        if (l < q->gheap_n && gless(e, q, l, m)) m = l;
        if (r < q->gheap_n && gless(e, q, r, m)) m = r;
        if (m == i) return;
        gswap(q, i, m);
        i = m;
    }
}

static void gfix(const gx_engine *e, gx_queue *q, int gi)
{
    int i = q->g[gi].gpos;
    if (i < 0) return;
    gup(e, q, i);
    gdown(e, q, q->g[gi].gpos);
}

static void gactivate(const gx_engine *e, gx_queue *q, int gi)
{
    gx_qgroup *g = &q->g[gi];
    if (g->gpos >= 0 || !g->n) return;
    GX_GROW(q->gheap, q->gheap_n, q->gheap_cap);
    q->gheap[q->gheap_n] = gi;
    g->gpos = q->gheap_n++;
    gup(e, q, g->gpos);
}

static void gdeactivate(const gx_engine *e, gx_queue *q, int gi)
{
    int i = q->g[gi].gpos;
    if (i < 0) return;
    gswap(q, i, q->gheap_n - 1);
    q->gheap_n--;
    q->g[gi].gpos = -1;
    if (i < q->gheap_n) {
        int moved = q->gheap[i];
        gup(e, q, i);
        gdown(e, q, q->g[moved].gpos);
    }
}

static void unpark(gx_queue *q, int gi)
{
    int i = q->g[gi].ppos;
    if (i < 0) return;
    q->gpark[i] = q->gpark[--q->gpark_n];
    if (i < q->gpark_n) q->g[q->gpark[i]].ppos = i;
    q->g[gi].ppos = -1;
}

/* ---- hash -> group map ------------------------------------------------------------------ */

static int map_get(const gx_queue *q, uint64_t k)
{
    if (!q->mcap) return -1;
    size_t m = (size_t)q->mcap - 1, i = (size_t)(k * 0x9e3779b97f4a7c15ULL >> 7) & m;
    while (q->mk[i]) { if (q->mk[i] == k) return q->mv[i]; i = (i + 1) & m; }
    return -1;
}

static void map_put(gx_queue *q, uint64_t k, int v)
{
    if ((q->mused + 1) * 2 > q->mcap) {
        int ncap = q->mcap ? q->mcap * 2 : 16;
        uint64_t *ok = q->mk;
        int *ov = q->mv, ocap = q->mcap;
        q->mk = gx_xcalloc((size_t)ncap, sizeof *q->mk);
        q->mv = gx_xcalloc((size_t)ncap, sizeof *q->mv);
        q->mcap = ncap;
        q->mused = 0;
        for (int i = 0; i < ocap; i++) if (ok[i]) map_put(q, ok[i], ov[i]);
        free(ok);
        free(ov);
    }
    size_t m = (size_t)q->mcap - 1, i = (size_t)(k * 0x9e3779b97f4a7c15ULL >> 7) & m;
    while (q->mk[i] && q->mk[i] != k) i = (i + 1) & m;
    if (!q->mk[i]) q->mused++;
    q->mk[i] = k;
    q->mv[i] = v;
}

static int group_of(gx_queue *q, uint64_t hash)
{
    int gi = map_get(q, hash);
    if (gi >= 0) return gi;
    GX_GROW(q->g, q->n_g, q->cap_g);
    gi = q->n_g++;
    memset(&q->g[gi], 0, sizeof q->g[gi]);
    q->g[gi].hash = hash;
    q->g[gi].n = 0;
    q->g[gi].gpos = q->g[gi].ppos = -1;
    map_put(q, hash, gi);
    return gi;
}

/* ---- public operations -------------------------------------------------------------------- */

static void mark_ready(gx_engine *e, int cq)
{
    gx_cq *c = &e->cqs[cq];
    if (c->ready) return;
    c->ready = 1;
    GX_GROW(e->ready, e->n_ready, e->cap_ready);
    e->ready[e->n_ready++] = cq;
}

static void insert(gx_engine *e, gx_queue *q, int gi, int wi)
{
    gx_qgroup *g = &q->g[gi];
    GX_GROW(g->h, g->n, g->cap);
    g->h[g->n] = wi;
    e->wls[wi].heap_pos = g->n++;
    e->wls[wi].qgroup = gi;
    wup(e, g, g->n - 1);
    q->pending++;
}

void gx_engine_queue_push(gx_engine *e, int cq, int wi)
{
    gx_queue *q = &e->cqs[cq].q;
    int gi = group_of(q, e->wls[wi].hash);
    insert(e, q, gi, wi);
    unpark(q, gi);
    if (q->g[gi].gpos >= 0) gfix(e, q, gi);
    else gactivate(e, q, gi);
    mark_ready(e, cq);
}

static void take(gx_engine *e, gx_queue *q, int gi, int pos)
{
    gx_qgroup *g = &q->g[gi];
    int wi = g->h[pos];
    wswap(e, g, pos, g->n - 1);
    g->n--;
    if (pos < g->n) {
        int moved = g->h[pos];
        wup(e, g, pos);
        wdown(e, g, e->wls[moved].heap_pos);
    }
    e->wls[wi].heap_pos = -1;
    e->wls[wi].qgroup = -1;
    q->pending--;
    if (!g->n) {                 /* empty: stays mapped, the same shape tends to come back */
        gdeactivate(e, q, gi);
        unpark(q, gi);
    } else if (g->gpos >= 0) {
        gfix(e, q, gi);
    }
}

int gx_engine_queue_pop(gx_engine *e, int cq)
{
    gx_queue *q = &e->cqs[cq].q;
    if (!q->gheap_n) return -1;
    int gi = q->gheap[0];
    int wi = q->g[gi].h[0];
    take(e, q, gi, 0);
    return wi;
}

void gx_engine_queue_remove(gx_engine *e, gx_wl *w)
{
    if (w->cq < 0 || w->qgroup < 0) return;
    take(e, &e->cqs[w->cq].q, w->qgroup, w->heap_pos);
}

/* The head wi did not fit: it goes back, and its whole group is set aside. */
void gx_engine_queue_park(gx_engine *e, int cq, int wi)
{
    gx_queue *q = &e->cqs[cq].q;
    int gi = group_of(q, e->wls[wi].hash);
    insert(e, q, gi, wi);
    gdeactivate(e, q, gi);
    if (q->g[gi].ppos < 0) {
        GX_GROW(q->gpark, q->gpark_n, q->gpark_cap);
        q->g[gi].ppos = q->gpark_n;
        q->gpark[q->gpark_n++] = gi;
    }
}

void gx_engine_queue_wake(gx_engine *e, int cq)
{
    gx_queue *q = &e->cqs[cq].q;
    if (!q->gpark_n) return;
    while (q->gpark_n) {
        int gi = q->gpark[--q->gpark_n];
        q->g[gi].ppos = -1;
        gactivate(e, q, gi);
    }
    if (q->gheap_n) mark_ready(e, cq);
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
    int *stack = gx_xmalloc((size_t)(e->n_qn > 0 ? e->n_qn : 1) * sizeof(int)), sp = 0;
    stack[sp++] = root;
    while (sp) {
        const gx_qnode *n = &e->nodes_q[stack[--sp]];
        if (n->cq >= 0) { gx_engine_queue_wake(e, n->cq); continue; }
        for (int i = 0; i < n->n_child && sp < e->n_qn; i++) stack[sp++] = n->child[i];
    }
    free(stack);
}

void gx_engine_queue_wake_all(gx_engine *e)
{
    for (int i = 0; i < e->n_cq; i++) gx_engine_queue_wake(e, i);
}

void gx_engine_queue_free(gx_cq *c)
{
    gx_queue *q = &c->q;
    for (int i = 0; i < q->n_g; i++) free(q->g[i].h);
    free(q->g);
    free(q->gheap);
    free(q->gpark);
    free(q->mk);
    free(q->mv);
    memset(q, 0, sizeof *q);
    free(c->adm);
    c->adm = NULL;
    c->adm_n = c->adm_cap = 0;
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
    const gx_queue *q = &e->cqs[cq].q;
    int *v = gx_xmalloc((size_t)(q->pending > 0 ? q->pending : 1) * sizeof(int));
    int k = 0;
    for (int gi = 0; gi < q->n_g; gi++)
        for (int i = 0; i < q->g[gi].n; i++) v[k++] = q->g[gi].h[i];
    qsort_r(v, (size_t)k, sizeof(int), cmp_wl, (void *)e);
    *n = k;
    return v;
}

void gx_engine_queue_position(const gx_engine *e, const gx_wl *w, int *pcq, int *plq)
{
    const gx_queue *q = &e->cqs[w->cq].q;
    int a = 0, b = 0;
    for (int gi = 0; gi < q->n_g; gi++)
        for (int i = 0; i < q->g[gi].n; i++) {
            const gx_wl *o = &e->wls[q->g[gi].h[i]];
            if (o == w || !gx_engine_queue_before(e, o, w)) continue;
            a++;
            if (o->lq == w->lq) b++;
        }
    *pcq = a;
    *plq = b;
}

int gx_engine_queue_parked(const gx_cq *c)
{
    int n = 0;
    for (int i = 0; i < c->q.gpark_n; i++) n += c->q.g[c->q.gpark[i]].n;
    return n;
}
