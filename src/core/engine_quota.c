/* engine_quota: Kueue's resource tree (cohorts and cluster queues as resource nodes).
 * Owns: building the tree from the objects (implicit cohorts, parents, cycles),
 * subtree quotas, usage bookkeeping and the quota arithmetic:
 *   localQuota(n)  = max(0, subtreeQuota - lendingLimit)   (kept for the subtree, never lent)
 *   available(n)   = localAvailable + min(available(parent), storedInParent - usedInParent + borrowingLimit)
 *   potential(n)   = localQuota + min(potential(parent), subtreeQuota + borrowingLimit)
 *   cohort.subtree = own nominal + sum over children (child.subtree - child.localQuota)
 *   cohort.usage   = sum over children max(0, child.usage - child.localQuota)
 * Must not: decide admission (engine_assign does) or touch queues. */
#include <stdlib.h>
#include <string.h>
#include "core/engine_int.h"

static inline int64_t imax(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t imin(int64_t a, int64_t b) { return a < b ? a : b; }

void gx_engine_quota_free(gx_engine *e)
{
    for (int i = 0; i < e->n_qn; i++) {
        free(e->nodes_q[i].child);
        free(e->nodes_q[i].nominal);      /* one block for the five arrays */
    }
    free(e->nodes_q);
    e->nodes_q = NULL;
    e->n_qn = 0;
}

int64_t gx_engine_quota_local(const gx_qnode *n, int fr)
{
    if (n->llim[fr] == GX_NIL) return 0;
    return imax(0, n->subtree[fr] - n->llim[fr]);
}

static int64_t local_avail(const gx_qnode *n, int fr)
{
    return imax(0, gx_engine_quota_local(n, fr) - n->usage[fr]);
}

int64_t gx_engine_quota_available(const gx_engine *e, int node, int fr)
{
    if (fr >= e->n_fr_tree) return 0;
    const gx_qnode *n = &e->nodes_q[node];
    if (n->parent < 0) return n->subtree[fr] - n->usage[fr];
    int64_t pa = gx_engine_quota_available(e, n->parent, fr);
    if (n->blim[fr] != GX_NIL) {
        int64_t lq = gx_engine_quota_local(n, fr);
        int64_t stored = n->subtree[fr] - lq;
        int64_t used = imax(0, n->usage[fr] - lq);
        pa = imin(stored - used + n->blim[fr], pa);
    }
    return local_avail(n, fr) + pa;
}

int64_t gx_engine_quota_potential(const gx_engine *e, int node, int fr)
{
    if (fr >= e->n_fr_tree) return 0;
    const gx_qnode *n = &e->nodes_q[node];
    if (n->parent < 0) return n->subtree[fr];
    int64_t a = gx_engine_quota_local(n, fr) + gx_engine_quota_potential(e, n->parent, fr);
    if (n->blim[fr] != GX_NIL) a = imin(n->subtree[fr] + n->blim[fr], a);
    return a;
}

void gx_engine_quota_add(gx_engine *e, int node, int fr, int64_t v)
{
    if (fr >= e->n_fr_tree || node < 0) return;
    gx_qnode *n = &e->nodes_q[node];
    int64_t la = local_avail(n, fr);
    n->usage[fr] += v;
    if (n->parent >= 0 && v > la) gx_engine_quota_add(e, n->parent, fr, v - la);
}

void gx_engine_quota_sub(gx_engine *e, int node, int fr, int64_t v)
{
    if (fr >= e->n_fr_tree || node < 0) return;
    gx_qnode *n = &e->nodes_q[node];
    int64_t stored = n->usage[fr] - gx_engine_quota_local(n, fr);
    n->usage[fr] -= v;
    if (stored <= 0 || n->parent < 0) return;
    gx_engine_quota_sub(e, n->parent, fr, imin(v, stored));
}

static int node_height(const gx_engine *e, int node)
{
    const gx_qnode *n = &e->nodes_q[node];
    int h = n->n_child ? 1 : 0;
    for (int i = 0; i < n->n_child; i++) {
        const gx_qnode *c = &e->nodes_q[n->child[i]];
        if (c->cq < 0) { int x = node_height(e, n->child[i]) + 1; if (x > h) h = x; }
    }
    return h;
}

/* Kueue's FindHeightOfLowestSubtreeThatFits: the borrowing level is the height of the
 * lowest subtree that fits v more of fr (0 = within the queue's own quota);
 * *may_reclaim tells whether that subtree is smaller than the whole tree (so that
 * reclaiming inside the hierarchy could make room). */
int gx_engine_quota_borrow_level(const gx_engine *e, int node, int fr, int64_t v, int *may_reclaim)
{
    const gx_qnode *n = &e->nodes_q[node];
    *may_reclaim = n->parent >= 0;
    if (fr >= e->n_fr_tree) return 0;
    if (n->usage[fr] + v <= n->subtree[fr] || n->parent < 0) return 0;
    int64_t rem = v - local_avail(n, fr);
    for (int t = n->parent; t >= 0; t = e->nodes_q[t].parent) {
        const gx_qnode *tn = &e->nodes_q[t];
        if (tn->usage[fr] + rem <= tn->subtree[fr]) { *may_reclaim = tn->parent >= 0; return node_height(e, t); }
        rem -= local_avail(tn, fr);
    }
    *may_reclaim = 0;
    int root = n->parent;
    while (e->nodes_q[root].parent >= 0) root = e->nodes_q[root].parent;
    return node_height(e, root);
}

/* ---- rebuild --------------------------------------------------------------------------- */

static int cohort_index(gx_engine *e, const char *name, int make)
{
    int i = gx_strmap_geti(&e->co_map, name);
    if (i >= 0 || !make) return i;
    GX_GROW(e->cohorts, e->n_co, e->cap_co);
    i = e->n_co++;
    memset(&e->cohorts[i], 0, sizeof e->cohorts[i]);
    e->cohorts[i].name = gx_xstrdup(name);
    e->cohorts[i].qs.fs_weight = 1000;
    gx_strmap_puti(&e->co_map, name, i);
    return i;
}

static void drop_implicit_cohorts(gx_engine *e)
{
    int j = 0;
    for (int i = 0; i < e->n_co; i++) {
        gx_cohort *c = &e->cohorts[i];
        if (!c->manifest) {
            gx_strmap_del(&e->co_map, c->name);
            free(c->name);
            free(c->parent_name);
            continue;
        }
        if (i != j) {
            e->cohorts[j] = *c;
            gx_strmap_puti(&e->co_map, c->name, j);
        }
        j++;
    }
    e->n_co = j;
}

static void add_child(gx_qnode *p, int c)
{
    p->child = gx_xreallocarray(p->child, (size_t)(p->n_child + 1), sizeof(int));
    p->child[p->n_child++] = c;
}

static void load_quotas(gx_qnode *n, const gx_quota_spec *qs)
{
    for (int g = 0; g < qs->n_rg; g++) {
        const gx_rg *rg = &qs->rg[g];
        for (int k = 0; k < rg->nflv * rg->nres; k++) {
            int fr = rg->fr[k];
            n->nominal[fr] = rg->q[k].nominal;
            n->blim[fr] = rg->q[k].borrow;
            n->llim[fr] = rg->q[k].lend;
        }
    }
}

static void accumulate(gx_engine *e, int node, int nfr)
{
    gx_qnode *n = &e->nodes_q[node];
    for (int f = 0; f < nfr; f++) n->subtree[f] = n->nominal[f];
    for (int i = 0; i < n->n_child; i++) {
        gx_qnode *c = &e->nodes_q[n->child[i]];
        accumulate(e, n->child[i], nfr);
        for (int f = 0; f < nfr; f++) n->subtree[f] += c->subtree[f] - gx_engine_quota_local(c, f);
    }
}

/* Mark CQs active/inactive and map resources to resource groups. */
static void cq_derive(gx_engine *e, gx_cq *c, int in_cycle)
{
    c->active = 1;
    c->inactive_reason = NULL;
    if (in_cycle) { c->active = 0; c->inactive_reason = "CohortHasCycle"; }
    for (int g = 0; g < c->qs.n_rg && c->active; g++)
        for (int k = 0; k < c->qs.rg[g].nflv; k++) {
            int f = c->qs.rg[g].flv[k];
            if (f >= e->rf_cap || !e->rfs[f].present) { c->active = 0; c->inactive_reason = "FlavorNotFound"; break; }
        }
    if (c->stop != GX_STOP_NONE) { c->active = 0; c->inactive_reason = "Stopped"; }
    free(c->res_rg);
    c->n_res_map = e->res.n;
    c->res_rg = gx_xmalloc((size_t)(c->n_res_map ? c->n_res_map : 1) * sizeof(int));
    for (int r = 0; r < c->n_res_map; r++) c->res_rg[r] = -1;
    for (int g = 0; g < c->qs.n_rg; g++)
        for (int k = 0; k < c->qs.rg[g].nres; k++) c->res_rg[c->qs.rg[g].res[k]] = g;
}

void gx_engine_quota_rebuild(gx_engine *e)
{
    gx_engine_quota_free(e);
    drop_implicit_cohorts(e);
    for (int i = 0; i < e->n_cq; i++)
        if (e->cqs[i].cohort_name) cohort_index(e, e->cqs[i].cohort_name, 1);
    for (int i = 0; i < e->n_co; i++)
        if (e->cohorts[i].parent_name) cohort_index(e, e->cohorts[i].parent_name, 1);
    int nfr = e->fr.n;
    e->n_fr_tree = nfr;
    e->n_qn = e->n_co + e->n_cq;
    e->nodes_q = gx_xcalloc((size_t)(e->n_qn > 0 ? e->n_qn : 1), sizeof *e->nodes_q);
    for (int i = 0; i < e->n_qn; i++) {
        gx_qnode *n = &e->nodes_q[i];
        int64_t *blk = gx_xmalloc((size_t)(nfr ? nfr : 1) * 5 * sizeof(int64_t));
        n->nominal = blk; n->blim = blk + nfr; n->llim = blk + 2 * nfr;
        n->subtree = blk + 3 * nfr; n->usage = blk + 4 * nfr;
        for (int f = 0; f < nfr; f++) { n->nominal[f] = 0; n->blim[f] = GX_NIL; n->llim[f] = GX_NIL; n->subtree[f] = 0; n->usage[f] = 0; }
        n->parent = -1;
        n->cq = i >= e->n_co ? i - e->n_co : -1;
        n->cohort = i < e->n_co ? i : -1;
    }
    for (int i = 0; i < e->n_co; i++) {
        e->cohorts[i].node = i;
        load_quotas(&e->nodes_q[i], &e->cohorts[i].qs);
        if (e->cohorts[i].parent_name) e->nodes_q[i].parent = cohort_index(e, e->cohorts[i].parent_name, 0);
    }
    /* cycles: a cohort whose parent chain does not end within n_co steps */
    char *cyc = gx_xcalloc((size_t)(e->n_co > 0 ? e->n_co : 1), 1);
    for (int i = 0; i < e->n_co; i++) {
        int p = i, steps = 0;
        while (p >= 0 && steps <= e->n_co) { p = e->nodes_q[p].parent; steps++; }
        if (p >= 0) cyc[i] = 1;
    }
    for (int i = 0; i < e->n_co; i++) if (cyc[i]) e->nodes_q[i].parent = -1;
    for (int i = 0; i < e->n_co; i++)
        if (e->nodes_q[i].parent >= 0) add_child(&e->nodes_q[e->nodes_q[i].parent], i);
    for (int i = 0; i < e->n_cq; i++) {
        gx_cq *c = &e->cqs[i];
        int node = e->n_co + i;
        c->node = node;
        load_quotas(&e->nodes_q[node], &c->qs);
        int in_cycle = 0;
        if (c->cohort_name) {
            int co = cohort_index(e, c->cohort_name, 0);
            e->nodes_q[node].parent = co;
            add_child(&e->nodes_q[co], node);
            in_cycle = cyc[co];
        }
        cq_derive(e, c, in_cycle);
    }
    free(cyc);
    for (int i = 0; i < e->n_co; i++)
        if (e->nodes_q[i].parent < 0) accumulate(e, i, nfr);
    for (int i = 0; i < e->n_cq; i++)
        if (e->nodes_q[e->n_co + i].parent < 0) accumulate(e, e->n_co + i, nfr);
    e->dirty = 0;
    e->qversion++;
    for (int w = 0; w < e->n_wl; w++) {
        gx_wl *wl = &e->wls[w];
        if (!wl->live || wl->state != GX_WL_ADMITTED || wl->cq < 0) continue;
        for (int u = 0; u < wl->n_use; u++) gx_engine_quota_add(e, e->cqs[wl->cq].node, wl->use_fr[u], wl->use_amt[u]);
    }
}
