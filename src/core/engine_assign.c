/* engine_assign: Kueue's flavor assignment (pkg/scheduler/flavorassigner).
 * Owns: choosing, per pod set and resource group, the flavor to charge: flavors in the
 * ClusterQueue's order; all resources of a group from one flavor; a flavor is skipped
 * when its NoSchedule/NoExecute taints are not tolerated or the pod's nodeSelector
 * (restricted to the flavor's own label keys) does not match its nodeLabels; per resource
 *   val > potentialAvailable         -> NoFit (ExceedsMaxQuota)
 *   val <= available                 -> Fit at borrowing level b
 *   else, if val <= nominal, or reclaim in the hierarchy is possible, or
 *   borrowWithinCohort/fair sharing allows preempting while borrowing -> ask the
 *   preemption oracle (Preempt / Reclaim / NoCandidates), else NoFit.
 * flavorFungibility decides whether to stop at a flavor or keep looking and
 * which of the tried flavors is best.
 * Must not: change any state (it only reads the quota tree). */
#include <string.h>
#include "core/engine_int.h"

typedef struct gmode { int mode, borrow; } gmode;

static int better_borrow(int a, int b) { return a < b; }

/* Kueue isPreferred: is a better than b under the queue's fungibility preference. */
static int is_preferred(gmode a, gmode b, const gx_cq *c)
{
    if (a.mode == GX_M_NOFIT) return 0;
    if (b.mode == GX_M_NOFIT) return 1;
    int an = a.mode == GX_M_NOCAND, bn = b.mode == GX_M_NOCAND;
    if (an != bn) return !an;
    if (c->fung_pref == GX_PREF_PREEMPT) {          /* PreemptionOverBorrowing */
        if (a.borrow != b.borrow) return better_borrow(a.borrow, b.borrow);
        return a.mode > b.mode;
    }
    if (a.mode != b.mode) return a.mode > b.mode;  /* BorrowingOverPreemption, default */
    return better_borrow(a.borrow, b.borrow);
}

static int should_try_next(gmode m, const gx_cq *c)
{
    if (m.mode == GX_M_NOFIT || m.mode == GX_M_NOCAND) return 1;
    if ((m.mode == GX_M_PREEMPT || m.mode == GX_M_RECLAIM) && c->fung_preempt == GX_FUNG_NEXT) return 1;
    if (m.borrow != 0 && c->fung_borrow == GX_FUNG_NEXT) return 1;
    return 0;
}

static int can_preempt_while_borrowing(const gx_engine *e, const gx_cq *c)
{
    return c->p_borrow != GX_PW_NEVER || (e->opts.fair_sharing && c->p_reclaim != GX_PW_NEVER);
}

static void set_why(gx_why *w, int kind, int flavor, int res, int ps, int64_t need)
{
    memset(w, 0, sizeof *w);
    w->kind = (uint8_t)kind;
    w->flavor = flavor;
    w->res = res;
    w->podset = ps;
    w->need = need;
}

/* fitsResourceQuota for one flavor-resource. */
static gmode fits_quota(gx_engine *e, int cqi, const gx_wl *w, int fr, int64_t val, int64_t nominal,
                        int ps, gx_why *why)
{
    const gx_cq *c = &e->cqs[cqi];
    int node = c->node;
    int64_t avail = gx_engine_quota_available(e, node, fr);
    int64_t maxcap = gx_engine_quota_potential(e, node, fr);
    gmode m = {GX_M_NOFIT, 0};
    if (val > maxcap) {
        set_why(why, GX_WHY_MAX_QUOTA, e->fr_flv[fr], e->fr_res[fr], ps, val);
        why->avail = maxcap;
        why->nominal = nominal;
        return m;
    }
    int may_reclaim = 0;
    int borrow = gx_engine_quota_borrow_level(e, node, fr, val, &may_reclaim);
    if (val <= avail) { m.mode = GX_M_FIT; m.borrow = borrow; return m; }
    const gx_qnode *n = &e->nodes_q[node];
    set_why(why, GX_WHY_QUOTA, e->fr_flv[fr], e->fr_res[fr], ps, val);
    why->used = n->usage[fr];
    why->nominal = nominal;
    why->avail = avail < 0 ? 0 : avail;
    int64_t own = nominal - n->usage[fr];
    if (own < 0) own = 0;
    why->lendable = why->avail > own ? why->avail - own : 0;
    if (n->blim[fr] != GX_NIL && n->usage[fr] + val > n->subtree[fr] + n->blim[fr]) why->kind = GX_WHY_BORROW_LIMIT;
    if (nominal >= val || may_reclaim || can_preempt_while_borrowing(e, c)) {
        int b = borrow;
        m.mode = gx_engine_preempt_simulate(e, cqi, w, fr, val, &b);
        m.borrow = b;
    }
    return m;
}

static int flavor_matches(const gx_engine *e, const gx_podset *p, int f, gx_why *why, int ps)
{
    if (f >= e->rf_cap || !e->rfs[f].present) { set_why(why, GX_WHY_NO_FLAVOR_MATCH, f, -1, ps, 0); return 0; }
    const gx_rf *rf = &e->rfs[f];
    for (int t = 0; t < rf->n_taints; t++) {
        const gx_taint *tt = &rf->taints[t];
        if (!strcmp(tt->effect, "PreferNoSchedule")) continue;
        if (gx_engine_obj_tolerates(tt, p->tols, p->n_tols) || gx_engine_obj_tolerates(tt, rf->tols, rf->n_tols)) continue;
        set_why(why, GX_WHY_NO_FLAVOR_MATCH, f, -1, ps, 1);
        return 0;
    }
    for (int i = 0; i < p->node_selector.n; i++) {
        const char *v = gx_engine_obj_label(&rf->node_labels, p->node_selector.k[i]);
        if (v && strcmp(v, p->node_selector.v[i])) { set_why(why, GX_WHY_NO_FLAVOR_MATCH, f, -1, ps, 2); return 0; }
    }
    if (!gx_engine_obj_affinity_match(p->affinity, &rf->node_labels, &rf->node_labels)) {
        set_why(why, GX_WHY_NO_FLAVOR_MATCH, f, -1, ps, 2);
        return 0;
    }
    return 1;
}

static int64_t usage_of(const gx_assign *a, int fr)
{
    for (int i = 0; i < a->n_use; i++) if (a->use_fr[i] == fr) return a->use_amt[i];
    return 0;
}

static void add_use(gx_assign *a, int fr, int64_t v)
{
    for (int i = 0; i < a->n_use; i++) if (a->use_fr[i] == fr) { a->use_amt[i] += v; return; }
    if (a->n_use < GX_MAX_USE) { a->use_fr[a->n_use] = fr; a->use_amt[a->n_use++] = v; }
}

/* findFlavorForPodSets for one pod set and one resource group. Returns the chosen
 * flavor index in the group (or -1) and its mode. */
static int find_flavor(gx_engine *e, int cqi, const gx_wl *w, int ps, int g, int32_t count,
                       const gx_assign *a, gmode *best_mode, gx_why *why)
{
    const gx_cq *c = &e->cqs[cqi];
    const gx_rg *rg = &c->qs.rg[g];
    const gx_podset *p = &w->s.ps[ps];
    int best = -1;
    gmode bm = {GX_M_NOFIT, 1 << 30};
    gx_why why_q, why_m;
    int have_q = 0, have_m = 0;
    for (int k = 0; k < rg->nflv; k++) {
        gx_why fw;
        memset(&fw, 0, sizeof fw);
        if (!flavor_matches(e, p, rg->flv[k], &fw, ps)) {
            if (!have_m) { why_m = fw; have_m = 1; }
            continue;
        }
        gmode rep = {GX_M_FIT, 0};
        int maxb = 0;
        for (int j = 0; j < rg->nres; j++) {
            int res = rg->res[j];
            int64_t per = -1;
            for (int r = 0; r < p->nreq; r++) if (p->res[r] == res) per = p->req[r];
            if (per < 0) continue;
            int fr = rg->fr[k * rg->nres + j];
            int64_t val = usage_of(a, fr) + per * count;
            gmode m = fits_quota(e, cqi, w, fr, val, rg->q[k * rg->nres + j].nominal, ps, &fw);
            if (m.borrow > maxb) maxb = m.borrow;
            if (is_preferred(rep, m, c)) rep = m;
            if (rep.mode == GX_M_NOFIT) break;
        }
        if (rep.mode != GX_M_NOFIT) rep.borrow = maxb;
        if (rep.mode != GX_M_FIT && fw.kind && !have_q) { why_q = fw; have_q = 1; }
        if (!should_try_next(rep, c)) { best = k; bm = rep; break; }
        if (is_preferred(rep, bm, c)) { best = k; bm = rep; }
    }
    if (have_q) *why = why_q;
    else if (have_m) *why = why_m;
    *best_mode = bm;
    return bm.mode == GX_M_NOFIT ? -1 : best;
}

void gx_engine_assign(gx_engine *e, const gx_wl *w, const int32_t *counts, gx_assign *a)
{
    /* no memset of the whole struct (5 KB): only [ps][r] below nps/nreq are read */
    a->mode = GX_M_FIT;
    a->borrow = 0;
    a->n_use = 0;
    memset(&a->why, 0, sizeof a->why);
    const gx_cq *c = &e->cqs[w->cq];
    for (int ps = 0; ps < w->s.nps; ps++) {
        const gx_podset *p = &w->s.ps[ps];
        a->count[ps] = counts ? counts[ps] : p->count;
        int done[GX_MAX_RG] = {0};
        for (int r = 0; r < p->nreq; r++) {
            int res = p->res[r];
            int g = res < c->n_res_map ? c->res_rg[res] : -1;
            if (g < 0) {
                set_why(&a->why, GX_WHY_NOT_COVERED, -1, res, ps, p->req[r]);
                a->mode = GX_M_NOFIT;
                return;
            }
            if (done[g]) continue;
            done[g] = 1;
            gmode m;
            int k = find_flavor(e, w->cq, w, ps, g, a->count[ps], a, &m, &a->why);
            if (k < 0) { a->mode = GX_M_NOFIT; return; }
            const gx_rg *rg = &c->qs.rg[g];
            for (int j = 0; j < rg->nres; j++)
                for (int q = 0; q < p->nreq; q++)
                    if (p->res[q] == rg->res[j]) {
                        a->flv[ps][q] = rg->flv[k];
                        a->fmode[ps][q] = m.mode;
                        add_use(a, rg->fr[k * rg->nres + j], p->req[q] * a->count[ps]);
                    }
            if (m.mode < a->mode) a->mode = m.mode;
            if (m.borrow > a->borrow) a->borrow = m.borrow;
        }
    }
    if (a->mode == GX_M_FIT) memset(&a->why, 0, sizeof a->why);
}

int gx_engine_assign_fits(const gx_engine *e, int cq, const gx_assign *a)
{
    int node = e->cqs[cq].node;
    for (int i = 0; i < a->n_use; i++)
        if (a->use_amt[i] > gx_engine_quota_available(e, node, a->use_fr[i])) return 0;
    return 1;
}
