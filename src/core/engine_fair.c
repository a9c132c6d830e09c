/* engine_fair: fair sharing (Kueue pkg/cache/scheduler/fair_sharing.go and the
 * scheduler's fair sharing iterator).
 * Owns: the dominant resource share (DRS) of queues and cohorts and the order in
 * which a cycle's heads are processed when fair sharing is on.
 *   borrowed(r) = sum over flavors of max(0, usage + request - subtreeQuota)
 *   lendable(r) = sum over flavors of potentialAvailable(parent, fr)
 *   DRS         = max over r of borrowed * 1000 / lendable, then * 1000 / weight(milli)
 * 0 when not borrowing; a weight of 0 makes a borrowing node's share infinite.
 * Order: a tournament down the cohort tree; at each cohort the child whose share,
 * as if its candidate were admitted, is lowest wins; ties: not borrowing first, then
 * higher priority, then earlier queue time.
 * Must not: change quota or queues. */
#include <stdlib.h>
#include <string.h>
#include "core/engine_int.h"

static int64_t weight_of(const gx_engine *e, const gx_qnode *n)
{
    if (n->cq >= 0) return e->cqs[n->cq].qs.fs_weight;
    if (n->cohort >= 0) return e->cohorts[n->cohort].qs.fs_weight;
    return 1000;
}

int64_t gx_engine_fair_drs(const gx_engine *e, int node, const int *fr, const int64_t *amt, int n, int sign)
{
    const gx_qnode *q = &e->nodes_q[node];
    if (q->parent < 0) return 0;
    int nres = e->res.n;
    int64_t *borrowed = gx_xcalloc((size_t)(nres ? nres : 1), sizeof(int64_t));
    int any = 0;
    for (int f = 0; f < e->n_fr_tree; f++) {
        int64_t u = q->usage[f];
        for (int k = 0; k < n; k++) if (fr[k] == f) u += sign * amt[k];
        int64_t b = u - q->subtree[f];
        if (b > 0) { borrowed[e->fr_res[f]] += b; any = 1; }
    }
    int64_t drs = 0;
    if (any) {
        int64_t w = weight_of(e, q);
        if (w == 0) { free(borrowed); return INT64_MAX; }
        int64_t best = -1;
        for (int r = 0; r < nres; r++) {
            if (!borrowed[r]) continue;
            int64_t lend = 0;
            for (int f = 0; f < e->n_fr_tree; f++)
                if (e->fr_res[f] == r) lend += gx_engine_quota_potential(e, q->parent, f);
            if (lend <= 0) continue;
            int64_t ratio = borrowed[r] * 1000 / lend;
            if (ratio > best) best = ratio;
        }
        drs = best < 0 ? 0 : best * 1000 / w;
    }
    free(borrowed);
    return drs;
}

int gx_engine_fair_share_view(const gx_engine *e, int cq)
{
    if (e->dirty || cq < 0 || cq >= e->n_cq || e->cqs[cq].node < 0 || e->cqs[cq].node >= e->n_qn) return 0;
    int64_t d = gx_engine_fair_drs(e, e->cqs[cq].node, NULL, NULL, 0, 1);
    return d > 1000000000 ? 1000000000 : (int)d;
}

typedef struct pick { int ent; int64_t drs; int borrows; } pick;

/* Is entry a (with its share at this level) better than b? */
static int better(const gx_engine *e, const gx_entry *ents, pick a, pick b)
{
    if (a.drs != b.drs) return a.drs < b.drs;
    if (a.borrows != b.borrows) return a.borrows < b.borrows;
    const gx_wl *x = &e->wls[ents[a.ent].wi], *y = &e->wls[ents[b.ent].wi];
    return gx_engine_queue_before(e, x, y);
}

/* Winner of the subtree under node (an entry index or -1). */
static int winner(const gx_engine *e, const gx_entry *ents, int n, const char *done, const int *ent_of_cq, int node)
{
    const gx_qnode *q = &e->nodes_q[node];
    if (q->cq >= 0) {
        int i = ent_of_cq[q->cq];
        return i >= 0 && !done[i] ? i : -1;
    }
    pick best = {-1, 0, 0};
    for (int c = 0; c < q->n_child; c++) {
        int i = winner(e, ents, n, done, ent_of_cq, q->child[c]);
        if (i < 0) continue;
        const gx_assign *a = &ents[i].a;
        pick p = {i, gx_engine_fair_drs(e, q->child[c], a->use_fr, a->use_amt, a->n_use, 1), a->borrow > 0};
        if (best.ent < 0 || better(e, ents, p, best)) best = p;
    }
    return best.ent;
}

int gx_engine_fair_next(const gx_engine *e, const gx_entry *ents, int n, const char *done)
{
    int *ent_of_cq = gx_xmalloc((size_t)(e->n_cq ? e->n_cq : 1) * sizeof(int));
    for (int i = 0; i < e->n_cq; i++) ent_of_cq[i] = -1;
    for (int i = 0; i < n; i++) ent_of_cq[ents[i].cq] = i;
    int best = -1;
    /* inadmissible heads first (they only get requeued), then one winner per root */
    for (int i = 0; i < n && best < 0; i++) if (!done[i] && ents[i].inadmissible) best = i;
    if (best < 0) {
        pick bp = {-1, 0, 0};
        for (int r = 0; r < e->n_qn; r++) {
            if (e->nodes_q[r].parent >= 0) continue;
            int i = winner(e, ents, n, done, ent_of_cq, r);
            if (i < 0) continue;
            pick p = {i, 0, ents[i].a.borrow > 0};
            if (bp.ent < 0 || better(e, ents, p, bp)) bp = p;
        }
        best = bp.ent;
    }
    free(ent_of_cq);
    return best;
}
