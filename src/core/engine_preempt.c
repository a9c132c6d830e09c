/* engine_preempt: preemption (Kueue pkg/scheduler/preemption, classical and fair).
 * Owns: the preemption oracle used by flavor assignment, the search for a minimal
 * victim set, issuing preemptions, partial admission (Kueue's podset reducer), and
 * the per-cycle capacity reservation of preemptors that found no victims.
 * Must not: admit anything (engine_sched does). Simulations remove and re-add usage
 * on the live quota tree; the tree's usage is path-independent (see engine_quota), so
 * every simulation leaves it exactly as it found it.
 *
 * Classical candidates (Kueue classical/hierarchical_preemption.go):
 *   same queue       allowed by withinClusterQueue                  -> InClusterQueue
 *   hierarchy        other queues under a subtree where the preemptor
 *                    fits its quota, any priority                    -> InCohortReclamation
 *   priority         other borrowing queues, by reclaimWithinCohort;
 *                    below borrowWithinCohort's threshold they may be
 *                    preempted while the preemptor borrows           -> InCohortReclaimWhileBorrowing
 * Each list sorted: lower priority first, then most recently admitted, then UID;
 * hierarchy, then priority, then same-queue candidates. Greedy removal until the
 * workload fits (with or without borrowing), then fill back in reverse. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/engine_int.h"

enum { V_NEVER = 0, V_WITHIN, V_HIER, V_NOBORROW, V_WHILEBORROW, V_FAIR, V_RSV };

/* A candidate with its sort key precomputed (other queue first, lower priority,
 * later admission, lower sequence), so sorting does not chase workload pointers. */
typedef struct cand { int wi; int variant; int lca; int own; int32_t prio; int64_t adm; uint64_t seq; } cand;

typedef struct pctx {
    gx_engine *e;
    int cq;
    const gx_wl *w;
    int nfr;
    int fr[GX_MAX_USE];          /* flavor-resources needing preemption */
    int nreq;
    int req_fr[GX_MAX_USE];
    int64_t req_amt[GX_MAX_USE];
    int rsv;                     /* an active booking of the queue covers the request (engine_rsv.c) */
} pctx;

static int uses_frs(const gx_engine *e, const gx_wl *w, const pctx *p)
{
    for (int u = 0; u < w->n_use; u++)
        for (int k = 0; k < p->nfr; k++)
            if (w->use_fr[u] == p->fr[k]) return 1;
    (void)e;
    return 0;
}

/* usage <= subtree quota in every fr needing preemption (not borrowing there) */
static int within_nominal(const gx_engine *e, int node, const pctx *p)
{
    const gx_qnode *n = &e->nodes_q[node];
    for (int k = 0; k < p->nfr; k++) {
        int fr = p->fr[k];
        if (fr < e->n_fr_tree && n->usage[fr] > n->subtree[fr]) return 0;
    }
    return 1;
}

static int too_high(const pctx *p, const gx_wl *cw)
{
    const gx_cq *c = &p->e->cqs[p->cq];
    if (p->rsv && cw->cq != p->cq) return 0;    /* a booking takes back its capacity from anyone */
    int policy = cw->cq == p->cq ? c->p_within : c->p_reclaim;
    int lower = p->w->priority > cw->priority;
    if (policy == GX_PW_LOWER) return !lower;
    if (policy == GX_PW_LOWER_NEWER) {
        int newer_eq = p->w->priority == cw->priority && p->w->queue_ts < cw->queue_ts;
        return !(lower || newer_eq);
    }
    return policy != GX_PW_ANY;
}

static int classify(const pctx *p, const gx_wl *cw, int hier_adv)
{
    if (!uses_frs(p->e, cw, p)) return V_NEVER;
    if (too_high(p, cw)) return V_NEVER;
    if (cw->cq == p->cq) return V_WITHIN;
    if (p->rsv) return V_RSV;
    if (hier_adv) return V_HIER;
    const gx_cq *c = &p->e->cqs[p->cq];
    if (c->p_borrow == GX_PW_NEVER) return V_NOBORROW;
    if (cw->priority >= p->w->priority) return V_NOBORROW;
    if (c->has_borrow_threshold && cw->priority > c->borrow_threshold) return V_NOBORROW;
    return V_WHILEBORROW;
}

typedef struct clist { cand *v; int n, cap; } clist;

static void cl_add(const pctx *p, clist *l, int wi, int variant, int lca)
{
    const gx_wl *w = &p->e->wls[wi];
    GX_GROW(l->v, l->n, l->cap);
    l->v[l->n++] = (cand){wi, variant, lca, w->cq == p->cq, w->priority, w->admitted_at, w->seq};
}

static void from_cq(const pctx *p, int cqi, int lca, int hier_adv, clist *out)
{
    const gx_cq *c = &p->e->cqs[cqi];
    for (int i = 0; i < c->adm_n; i++) {
        int v = classify(p, &p->e->wls[c->adm[i]], hier_adv);
        if (v != V_NEVER) cl_add(p, out, c->adm[i], v, lca);
    }
}

static void in_subtree(const pctx *p, int node, int root, int skip, int hier_adv, clist *out)
{
    const gx_qnode *n = &p->e->nodes_q[node];
    for (int i = 0; i < n->n_child; i++) {
        int ch = n->child[i];
        const gx_qnode *cn = &p->e->nodes_q[ch];
        if (cn->cq >= 0) {
            if (cn->cq == p->cq) continue;
            if (!within_nominal(p->e, ch, p)) from_cq(p, cn->cq, root, hier_adv, out);
        } else {
            if (ch == skip || within_nominal(p->e, ch, p)) continue;
            in_subtree(p, ch, root, skip, hier_adv, out);
        }
    }
}

/* QuantitiesFitInQuota on one node: fits, and what remains for the parent. */
static int fit_in_quota(const gx_engine *e, int node, int64_t *rem, const pctx *p)
{
    const gx_qnode *n = &e->nodes_q[node];
    int fits = 1;
    for (int k = 0; k < p->nreq; k++) {
        int fr = p->req_fr[k];
        if (fr >= e->n_fr_tree) continue;
        if (n->usage[fr] + rem[k] > n->subtree[fr]) fits = 0;
        int64_t lq = gx_engine_quota_local(n, fr) - n->usage[fr];
        rem[k] -= lq > 0 ? lq : 0;
        if (rem[k] < 0) rem[k] = 0;
    }
    return fits;
}

static int cand_cmp(const void *a, const void *b, void *ctx)
{
    (void)ctx;
    const cand *x = a, *y = b;
    if (x->own != y->own) return x->own - y->own;       /* other queues first */
    if (x->prio != y->prio) return x->prio < y->prio ? -1 : 1;
    if (x->adm != y->adm) return x->adm > y->adm ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void collect(const pctx *p, clist *all, int *no_other, int *no_hier)
{
    gx_engine *e = p->e;
    const gx_cq *c = &e->cqs[p->cq];
    clist same = {0}, hier = {0}, prio = {0};
    if (c->p_within != GX_PW_NEVER) from_cq(p, p->cq, -1, 0, &same);
    const gx_qnode *cn = &e->nodes_q[c->node];
    if (cn->parent >= 0 && (c->p_reclaim != GX_PW_NEVER || p->rsv)) {
        int64_t rem[GX_MAX_USE];
        for (int k = 0; k < p->nreq; k++) rem[k] = p->req_amt[k];
        int adv = fit_in_quota(e, c->node, rem, p);
        int prev = -1;
        for (int t = cn->parent; t >= 0; t = e->nodes_q[t].parent) {
            in_subtree(p, t, t, prev, adv, adv ? &hier : &prio);
            adv = fit_in_quota(e, t, rem, p) || adv;
            prev = t;
        }
    }
    if (same.n) qsort_r(same.v, (size_t)same.n, sizeof(cand), cand_cmp, (void *)p);
    if (hier.n) qsort_r(hier.v, (size_t)hier.n, sizeof(cand), cand_cmp, (void *)p);
    if (prio.n) qsort_r(prio.v, (size_t)prio.n, sizeof(cand), cand_cmp, (void *)p);
    *no_other = hier.n == 0 && prio.n == 0;
    *no_hier = hier.n == 0;
    all->n = 0;
    clist *parts[3] = {&hier, &prio, &same};
    for (int i = 0; i < 3; i++) {
        for (int k = 0; k < parts[i]->n; k++) { GX_GROW(all->v, all->n, all->cap); all->v[all->n++] = parts[i]->v[k]; }
        free(parts[i]->v);
    }
}

static void remove_wl(gx_engine *e, const gx_wl *w, int sign)
{
    int node = e->cqs[w->cq].node;
    for (int u = 0; u < w->n_use; u++) {
        if (sign < 0) gx_engine_quota_sub(e, node, w->use_fr[u], w->use_amt[u]);
        else gx_engine_quota_add(e, node, w->use_fr[u], w->use_amt[u]);
    }
}

static int wl_fits(const pctx *p, int allow_borrow)
{
    const gx_engine *e = p->e;
    int node = e->cqs[p->cq].node;
    const gx_qnode *n = &e->nodes_q[node];
    for (int k = 0; k < p->nreq; k++) {
        int fr = p->req_fr[k];
        int64_t v = p->req_amt[k];
        if (fr >= e->n_fr_tree) return 0;
        if (!allow_borrow && n->usage[fr] + v > n->subtree[fr]) return 0;
        if (v > gx_engine_quota_available(e, node, fr)) return 0;
    }
    return 1;
}

static int cand_valid(const pctx *p, const cand *c, int borrow)
{
    const gx_engine *e = p->e;
    const gx_wl *w = &e->wls[c->wi];
    if (w->cq == p->cq) return 1;
    if (borrow && c->variant == V_NOBORROW) return 0;
    int node = e->cqs[w->cq].node;
    if (within_nominal(e, node, p)) return 0;
    for (int t = e->nodes_q[node].parent; t >= 0 && t != c->lca; t = e->nodes_q[t].parent)
        if (within_nominal(e, t, p)) return 0;
    return 1;
}

static const char *variant_reason(int v)
{
    switch (v) {
    case V_WITHIN: return "InClusterQueue";
    case V_WHILEBORROW: return "InCohortReclaimWhileBorrowing";
    case V_FAIR: return "InCohortFairSharing";
    case V_RSV: return "ReservationStarted";
    default: return "InCohortReclamation";
    }
}

/* Greedy removal then fill-back; returns the number of targets (in out/vout). */
static int minimal(pctx *p, const clist *all, int borrow, int *out, int *vout)
{
    gx_engine *e = p->e;
    int n = 0, fits = 0;
    for (int i = 0; i < all->n && !fits; i++) {
        if (!cand_valid(p, &all->v[i], borrow)) continue;
        remove_wl(e, &e->wls[all->v[i].wi], -1);
        out[n] = all->v[i].wi;
        vout[n++] = all->v[i].variant;
        fits = wl_fits(p, borrow);
    }
    if (!fits) {
        for (int i = 0; i < n; i++) remove_wl(e, &e->wls[out[i]], +1);
        return 0;
    }
    for (int i = n - 2; i >= 0; i--) {
        remove_wl(e, &e->wls[out[i]], +1);
        if (wl_fits(p, borrow)) {
            out[i] = out[n - 1];
            vout[i] = vout[n - 1];
            n--;
        } else {
            remove_wl(e, &e->wls[out[i]], -1);
        }
    }
    for (int i = 0; i < n; i++) remove_wl(e, &e->wls[out[i]], +1);
    return n;
}

static int under_nominal(const pctx *p)
{
    const gx_engine *e = p->e;
    const gx_cq *c = &e->cqs[p->cq];
    const gx_qnode *n = &e->nodes_q[c->node];
    for (int k = 0; k < p->nfr; k++) {
        int fr = p->fr[k];
        if (fr < e->n_fr_tree && n->usage[fr] >= n->nominal[fr]) return 0;
    }
    return 1;
}

/* The amounts needing preemption, covered by an active booking of the queue? */
static int rsv_covers(const pctx *p)
{
    int fr[GX_MAX_USE];
    int64_t amt[GX_MAX_USE];
    int n = 0;
    for (int k = 0; k < p->nreq; k++)
        for (int j = 0; j < p->nfr; j++)
            if (p->req_fr[k] == p->fr[j]) { fr[n] = p->req_fr[k]; amt[n++] = p->req_amt[k]; break; }
    return gx_engine_rsv_covers(p->e, p->cq, fr, amt, n);
}

/* The classical strategy: which of "with borrowing" / "without" to try, in order. */
static int classical(pctx *p, int **targets, int **variants)
{
    clist all = {0};
    int no_other, no_hier;
    p->rsv = rsv_covers(p);
    collect(p, &all, &no_other, &no_hier);
    if (!all.n) { free(all.v); return 0; }
    int forbidden = p->e->cqs[p->cq].p_borrow == GX_PW_NEVER;
    int opts[2], nopt;
    if (no_other || (forbidden && !under_nominal(p))) { opts[0] = 1; nopt = 1; }
    else if (forbidden && no_hier) { opts[0] = 0; opts[1] = 1; nopt = 2; }
    else { opts[0] = 1; opts[1] = 0; nopt = 2; }
    *targets = gx_xmalloc((size_t)all.n * sizeof(int));
    *variants = gx_xmalloc((size_t)all.n * sizeof(int));
    int n = 0;
    for (int i = 0; i < nopt && !n; i++) n = minimal(p, &all, opts[i], *targets, *variants);
    free(all.v);
    return n;
}

/* ---- fair sharing preemption (Kueue fairPreemptions, rules S2-a then S2-b) ------------ */

static int cq_borrowing(const pctx *p, int cqi)
{
    return !within_nominal(p->e, p->e->cqs[cqi].node, p);
}

/* Flat candidates: same queue by withinClusterQueue, plus borrowing queues of the
 * cohort tree by reclaimWithinCohort; sorted by Kueue's candidate order. */
static void fair_candidates(const pctx *p, clist *all)
{
    gx_engine *e = p->e;
    const gx_cq *c = &e->cqs[p->cq];
    all->n = 0;
    if (c->p_within != GX_PW_NEVER) from_cq(p, p->cq, -1, 0, all);
    if (e->nodes_q[c->node].parent >= 0 && c->p_reclaim != GX_PW_NEVER) {
        int root = c->node;
        while (e->nodes_q[root].parent >= 0) root = e->nodes_q[root].parent;
        for (int i = 0; i < e->n_cq; i++) {
            if (i == p->cq || !cq_borrowing(p, i)) continue;
            int r = e->cqs[i].node;
            while (e->nodes_q[r].parent >= 0) r = e->nodes_q[r].parent;
            if (r != root) continue;
            for (int k = 0; k < e->cqs[i].adm_n; k++) {
                const gx_wl *cw = &e->wls[e->cqs[i].adm[k]];
                if (!uses_frs(e, cw, p)) continue;
                if (c->p_reclaim == GX_PW_LOWER && cw->priority >= p->w->priority) continue;
                cl_add(p, all, e->cqs[i].adm[k], V_FAIR, -1);
            }
        }
    }
    if (all->n) qsort_r(all->v, (size_t)all->n, sizeof(cand), cand_cmp, (void *)p);
}

typedef struct fcq { int cq; int *wl; int n, off; int dropped; } fcq;

/* The "almost least common ancestors" of the preemptor's queue and a target queue:
 * the two children of their lowest common ancestor on each side (Kueue compares the
 * shares of these, so that fairness is judged between siblings of the tree). */
static void almost_lca(const gx_engine *e, int pnode, int tnode, int *ap, int *at)
{
    int path[64], np = 0;
    for (int n = pnode; n >= 0 && np < 64; n = e->nodes_q[n].parent) path[np++] = n;
    int child = tnode;
    for (int n = e->nodes_q[tnode].parent; n >= 0; child = n, n = e->nodes_q[n].parent)
        for (int k = 1; k < np; k++)
            if (path[k] == n) { *ap = path[k - 1]; *at = child; return; }
    *ap = pnode;
    *at = tnode;
}

static int64_t node_share(const gx_engine *e, int node)
{
    return gx_engine_fair_drs(e, node, NULL, NULL, 0, 1);
}

static void preemptor_usage(pctx *p, int sign)
{
    int node = p->e->cqs[p->cq].node;
    for (int k = 0; k < p->nreq; k++) {
        if (sign > 0) gx_engine_quota_add(p->e, node, p->req_fr[k], p->req_amt[k]);
        else gx_engine_quota_sub(p->e, node, p->req_fr[k], p->req_amt[k]);
    }
}

/* The fit test runs on the real state: take the simulated preemptor usage out. */
static int fits_now(pctx *p)
{
    preemptor_usage(p, -1);
    int ok = wl_fits(p, 1);
    preemptor_usage(p, +1);
    return ok;
}

static int build_fcq(const pctx *p, const int *wls, int nw, fcq **out)
{
    fcq *v = NULL;
    int n = 0, cap = 0;
    for (int i = 0; i < nw; i++) {
        int cqi = p->e->wls[wls[i]].cq, k;
        for (k = 0; k < n && v[k].cq != cqi; k++) {}
        if (k == n) {
            GX_GROW(v, n, cap);
            v[n] = (fcq){cqi, gx_xmalloc((size_t)nw * sizeof(int)), 0, 0, 0};
            n++;
        }
        v[k].wl[v[k].n++] = wls[i];
    }
    *out = v;
    return n;
}

static void free_fcq(fcq *v, int n)
{
    for (int i = 0; i < n; i++) free(v[i].wl);
    free(v);
}

/* Kueue's target queue ordering: the queue whose (almost-LCA) share is highest; queues
 * with no candidates left, and other queues that do not borrow, drop out. Ties go to
 * the later queue, as Kueue's ">=" walk over a cohort's children does. */
static int pick_fcq(pctx *p, fcq *v, int n)
{
    const gx_engine *e = p->e;
    int best = -1;
    int64_t best_share = -1;
    int pnode = e->cqs[p->cq].node;
    for (int i = 0; i < n; i++) {
        if (v[i].dropped) continue;
        if (v[i].off >= v[i].n) { v[i].dropped = 1; continue; }
        int ap, at;
        almost_lca(e, pnode, e->cqs[v[i].cq].node, &ap, &at);
        int64_t sh = v[i].cq == p->cq ? node_share(e, pnode) : node_share(e, at);
        if (sh == 0 && v[i].cq != p->cq) { v[i].dropped = 1; continue; }
        if (sh >= best_share) { best_share = sh; best = i; }
    }
    return best;
}

static int fcq_cmp(const void *a, const void *b)
{
    return ((const fcq *)a)->cq - ((const fcq *)b)->cq;
}

/* Kueue fairPreemptionStrategy: rule S2-a (LessThanOrEqualToFinalShare) over the
 * ordered target queues, then S2-b (LessThanInitialShare) over what S2-a rejected; the
 * preemptor's usage is simulated while shares are computed. */
static int fair(pctx *p, int **targets, int **variants)
{
    gx_engine *e = p->e;
    clist all = {0};
    fair_candidates(p, &all);
    if (!all.n) { free(all.v); return 0; }
    *targets = gx_xmalloc((size_t)all.n * sizeof(int));
    *variants = gx_xmalloc((size_t)all.n * sizeof(int));
    int *ids = gx_xmalloc((size_t)all.n * sizeof(int)), *retry = gx_xmalloc((size_t)all.n * sizeof(int));
    int nretry = 0, nt = 0, fits = 0;
    for (int i = 0; i < all.n; i++) ids[i] = all.v[i].wi;
    int pnode = e->cqs[p->cq].node;
    preemptor_usage(p, +1);
    fcq *h;
    int nh = build_fcq(p, ids, all.n, &h);
    qsort(h, (size_t)nh, sizeof *h, fcq_cmp);
    while (!fits) {
        int k = pick_fcq(p, h, nh);
        if (k < 0) break;
        fcq *q = &h[k];
        if (q->cq == p->cq) {
            int wi = q->wl[q->off++];
            remove_wl(e, &e->wls[wi], -1);
            (*targets)[nt] = wi; (*variants)[nt++] = V_WITHIN;
            fits = fits_now(p);
            continue;
        }
        int ap, at;
        almost_lca(e, pnode, e->cqs[q->cq].node, &ap, &at);
        int64_t pns = node_share(e, ap), tos = node_share(e, at);
        int took = 0;
        while (q->off < q->n && pns <= tos) {
            int wi = q->wl[q->off++];
            remove_wl(e, &e->wls[wi], -1);
            int64_t tns = node_share(e, at);
            if (pns <= tns) {
                (*targets)[nt] = wi; (*variants)[nt++] = V_FAIR;
                fits = fits_now(p);
                took = 1;
                break;                                  /* shares changed: pick again */
            }
            remove_wl(e, &e->wls[wi], +1);
            retry[nretry++] = wi;
        }
        if (!took) {
            while (q->off < q->n) retry[nretry++] = q->wl[q->off++];
            q->dropped = 1;
        }
    }
    free_fcq(h, nh);
    if (!fits && nretry) {
        nh = build_fcq(p, retry, nretry, &h);
        qsort(h, (size_t)nh, sizeof *h, fcq_cmp);
        while (!fits) {
            int k = pick_fcq(p, h, nh);
            if (k < 0) break;
            fcq *q = &h[k];
            int ap, at;
            almost_lca(e, pnode, e->cqs[q->cq].node, &ap, &at);
            if (node_share(e, ap) < node_share(e, at)) {
                int wi = q->wl[0];
                remove_wl(e, &e->wls[wi], -1);
                (*targets)[nt] = wi; (*variants)[nt++] = V_FAIR;
                fits = fits_now(p);
            }
            q->dropped = 1;
        }
        free_fcq(h, nh);
    }
    preemptor_usage(p, -1);
    free(ids);
    free(retry);
    free(all.v);
    if (!fits) {
        for (int i = 0; i < nt; i++) remove_wl(e, &e->wls[(*targets)[i]], +1);
        return 0;
    }
    for (int i = nt - 2; i >= 0; i--) {
        remove_wl(e, &e->wls[(*targets)[i]], +1);
        if (wl_fits(p, 1)) {
            (*targets)[i] = (*targets)[nt - 1];
            (*variants)[i] = (*variants)[nt - 1];
            nt--;
        } else {
            remove_wl(e, &e->wls[(*targets)[i]], -1);
        }
    }
    for (int i = 0; i < nt; i++) remove_wl(e, &e->wls[(*targets)[i]], +1);
    return nt;
}

/* The oracle (one flavor-resource) and the target search for a one-resource
 * assignment ask the same question; remember the last answer until usage changes. */
static void cache_store(gx_engine *e, const gx_wl *w, int fr, int64_t val, const int *t, const int *v, int n)
{
    e->pcache.wseq = w->seq;
    e->pcache.fr = fr;
    e->pcache.val = val;
    e->pcache.ver = e->qversion;
    e->pcache.n = n;
    e->pcache.t = gx_xreallocarray(e->pcache.t, (size_t)(n ? n : 1), sizeof(int));
    e->pcache.v = gx_xreallocarray(e->pcache.v, (size_t)(n ? n : 1), sizeof(int));
    if (n) { memcpy(e->pcache.t, t, (size_t)n * sizeof(int)); memcpy(e->pcache.v, v, (size_t)n * sizeof(int)); }
}

static int cache_hit(gx_engine *e, const gx_wl *w, int fr, int64_t val, int **t, int **v, int *n)
{
    if (e->pcache.wseq != w->seq || e->pcache.fr != fr || e->pcache.val != val || e->pcache.ver != e->qversion)
        return 0;
    *n = e->pcache.n;
    *t = gx_xmalloc((size_t)(*n ? *n : 1) * sizeof(int));
    *v = gx_xmalloc((size_t)(*n ? *n : 1) * sizeof(int));
    if (*n) { memcpy(*t, e->pcache.t, (size_t)*n * sizeof(int)); memcpy(*v, e->pcache.v, (size_t)*n * sizeof(int)); }
    return 1;
}

static void ctx_init(pctx *p, gx_engine *e, int cq, const gx_wl *w)
{
    memset(p, 0, sizeof *p);
    p->e = e;
    p->cq = cq;
    p->w = w;
}

/* The oracle: can preempting make room for val of fr? Preempt (a target in the
 * queue itself), Reclaim (only other queues), or NoCandidates. */
int gx_engine_preempt_simulate(gx_engine *e, int cq, const gx_wl *w, int fr, int64_t val, int *borrow)
{
    pctx p;
    ctx_init(&p, e, cq, w);
    p.nfr = 1;
    p.fr[0] = fr;
    p.nreq = 1;
    p.req_fr[0] = fr;
    p.req_amt[0] = val;
    int *t = NULL, *v = NULL;
    int n = e->opts.fair_sharing ? fair(&p, &t, &v) : classical(&p, &t, &v);
    cache_store(e, w, fr, val, t, v, n);
    int mr;
    int node = e->cqs[cq].node;
    if (!n) {
        free(t); free(v);
        *borrow = gx_engine_quota_borrow_level(e, node, fr, val, &mr);
        return GX_M_NOCAND;
    }
    for (int i = 0; i < n; i++) remove_wl(e, &e->wls[t[i]], -1);
    *borrow = gx_engine_quota_borrow_level(e, node, fr, val, &mr);
    int same = 0;
    for (int i = 0; i < n; i++) { remove_wl(e, &e->wls[t[i]], +1); if (e->wls[t[i]].cq == cq) same = 1; }
    free(t); free(v);
    return same ? GX_M_PREEMPT : GX_M_RECLAIM;
}

/* Targets for a whole assignment (Kueue GetTargets). */
void gx_engine_preempt_targets(gx_engine *e, int cq, const gx_wl *w, gx_assign *a, int **targets, int *n)
{
    pctx p;
    ctx_init(&p, e, cq, w);
    for (int ps = 0; ps < w->s.nps; ps++)
        for (int r = 0; r < w->s.ps[ps].nreq; r++) {
            if (a->fmode[ps][r] == GX_M_FIT) continue;
            int fr = -1;
            for (int u = 0; u < a->n_use; u++)
                if (e->fr_flv[a->use_fr[u]] == a->flv[ps][r] && e->fr_res[a->use_fr[u]] == w->s.ps[ps].res[r]) fr = a->use_fr[u];
            int dup = 0;
            for (int k = 0; k < p.nfr; k++) dup |= p.fr[k] == fr;
            if (fr >= 0 && !dup && p.nfr < GX_MAX_USE) p.fr[p.nfr++] = fr;
        }
    p.nreq = a->n_use;
    if (a->n_use) memcpy(p.req_fr, a->use_fr, (size_t)a->n_use * sizeof(int));
    if (a->n_use) memcpy(p.req_amt, a->use_amt, (size_t)a->n_use * sizeof(int64_t));
    int *t = NULL, *v = NULL;
    int k;
    if (p.nfr == 1 && p.nreq == 1 && p.req_fr[0] == p.fr[0] && cache_hit(e, w, p.fr[0], p.req_amt[0], &t, &v, &k)) {
        /* the oracle just searched exactly this: same workload, fr, amount, state */
    } else {
        k = e->opts.fair_sharing ? fair(&p, &t, &v) : classical(&p, &t, &v);
    }
    if (!k) { free(t); free(v); *targets = NULL; *n = 0; return; }
    /* remember each target's reason until issued */
    for (int i = 0; i < k; i++) e->wls[t[i]].pvariant = v[i];
    free(v);
    *targets = t;
    *n = k;
}

void gx_engine_preempt_issue(gx_engine *e, gx_wl *preemptor, const int *targets, int n, int64_t now)
{
    for (int i = 0; i < n; i++) {
        gx_wl *t = &e->wls[targets[i]];
        const char *reason = variant_reason(t->pvariant);
        char msg[400];
        const char *human = !strcmp(reason, "InClusterQueue") ? "prioritization in the ClusterQueue"
                          : !strcmp(reason, "InCohortFairSharing") ? "fair sharing within the cohort"
                          : !strcmp(reason, "InCohortReclaimWhileBorrowing") ? "reclamation within the cohort while borrowing"
                          : "reclamation within the cohort";
        snprintf(msg, sizeof msg, "Preempted to accommodate a workload (%s) due to %s", preemptor->key, human);
        gx_engine_wl_set_cond(t, GX_C_PREEMPTED, 1, reason, gx_xstrdup(msg), now);
        gx_engine_wl_evict(e, t, "Preempted", gx_xstrdup(msg), now);
        gx_engine_sched_act(e, GX_ACT_PREEMPT, t, preemptor->key, reason, msg);
        gx_engine_queue_wake_tree(e, t->cq);     /* its quota is free again: a cluster event */
        if (preemptor->cq >= 0) e->cqs[preemptor->cq].preempting_total++;
    }
}

/* Kueue's podset reducer: counts(i) = count - floor(delta * i / totalDelta); the
 * smallest i (largest counts) that fits or finds victims wins. */
int gx_engine_partial(gx_engine *e, const gx_wl *w, gx_assign *a, int32_t *counts, int **targets, int *n)
{
    int64_t total = 0;
    for (int ps = 0; ps < w->s.nps; ps++) total += w->s.ps[ps].count - w->s.ps[ps].min_count;
    if (total <= 0) return 0;
    int64_t lo = 0, hi = total + 1;   /* search [0, total] for the first fit; hi = not found */
    int found = 0;
    gx_assign best;
    int *best_t = NULL, best_n = 0;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        for (int ps = 0; ps < w->s.nps; ps++) {
            int64_t d = w->s.ps[ps].count - w->s.ps[ps].min_count;
            counts[ps] = (int32_t)(w->s.ps[ps].count - d * mid / total);
        }
        gx_assign t;
        gx_engine_assign(e, w, counts, &t);
        int ok = t.mode == GX_M_FIT;
        int *tt = NULL, tn = 0;
        if (!ok && t.mode != GX_M_NOFIT) {
            gx_engine_preempt_targets(e, w->cq, w, &t, &tt, &tn);
            ok = tn > 0;
        }
        if (ok) {
            hi = mid;
            best = t;
            free(best_t);
            best_t = tt;
            best_n = tn;
            found = 1;
        } else {
            free(tt);
            lo = mid + 1;
        }
    }
    if (!found || lo != hi || hi > total) { free(best_t); return 0; }
    *a = best;
    free(*targets);
    *targets = best_t;
    *n = best_n;
    return 1;
}

/* ---- per-cycle reservation for preemptors without victims ----------------------------- */

void gx_engine_reserve_begin(gx_engine *e) { e->n_rsv = 0; }

void gx_engine_reserve_end(gx_engine *e)
{
    for (int i = e->n_rsv - 1; i >= 0; i--) gx_engine_quota_sub(e, e->rsv_node[i], e->rsv_fr[i], e->rsv_amt[i]);
    if (e->n_rsv) e->qversion++;
    e->n_rsv = 0;
}

/* Kueue resourcesToReserve: block what the preemptor could use (up to its nominal
 * quota, or its borrowing limit when it borrows) so that lower entries of the same
 * cycle cannot take it first. */
void gx_engine_preempt_reserve(gx_engine *e, int cq, const gx_assign *a)
{
    int node = e->cqs[cq].node;
    const gx_qnode *n = &e->nodes_q[node];
    for (int u = 0; u < a->n_use; u++) {
        int fr = a->use_fr[u];
        if (fr >= e->n_fr_tree) continue;
        int64_t want = a->use_amt[u];
        int64_t cap;
        if (a->borrow == 0) cap = n->nominal[fr] - n->usage[fr];
        else if (n->blim[fr] != GX_NIL) cap = n->nominal[fr] + n->blim[fr] - n->usage[fr];
        else cap = want;
        int64_t avail = gx_engine_quota_available(e, node, fr);
        if (cap > avail) cap = avail;
        if (want > cap) want = cap;
        if (want <= 0) continue;
        if (e->n_rsv == e->cap_rsv) {
            e->cap_rsv = e->cap_rsv ? e->cap_rsv * 2 : 16;
            e->rsv_node = gx_xreallocarray(e->rsv_node, (size_t)e->cap_rsv, sizeof(int));
            e->rsv_fr = gx_xreallocarray(e->rsv_fr, (size_t)e->cap_rsv, sizeof(int));
            e->rsv_amt = gx_xreallocarray(e->rsv_amt, (size_t)e->cap_rsv, sizeof(int64_t));
        }
        gx_engine_quota_add(e, node, fr, want);
        e->qversion++;
        e->rsv_node[e->n_rsv] = node;
        e->rsv_fr[e->n_rsv] = fr;
        e->rsv_amt[e->n_rsv++] = want;
    }
}
