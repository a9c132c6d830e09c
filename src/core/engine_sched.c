/* engine_sched: the scheduling pass (Kueue's scheduler.schedule(), repeated until quiet).
 * Owns: expiring maximum execution times, draining stopped queues, the cycles
 * (one head per active ClusterQueue -> nominate -> order -> admit / preempt / requeue),
 * and the actions returned to the caller.
 * Must not: do I/O or read a clock; everything happens at the caller's now_ms.
 *
 * Kueue takes a snapshot per cycle, nominates every head against it, and then walks
 * the entries in order, re-checking each against what earlier entries of the same
 * cycle took. We do the same on the live state: nominate all heads first, then
 * process them in order with a fresh fit check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/engine_int.h"

typedef gx_entry entry;

void gx_engine_sched_act(gx_engine *e, gx_act_kind k, const gx_wl *w, const char *by,
                         const char *reason, const char *msg)
{
    GX_GROW(e->acts, e->n_acts, e->cap_acts);
    gx_action *a = &e->acts[e->n_acts++];
    memset(a, 0, sizeof *a);
    a->kind = k;
    snprintf(a->workload, sizeof a->workload, "%s", w->key);
    snprintf(a->by, sizeof a->by, "%s", by ? by : "");
    snprintf(a->reason, sizeof a->reason, "%s", reason ? reason : "");
    snprintf(a->message, sizeof a->message, "%s", msg ? msg : "");
    if (w->cq >= 0 && w->cq < e->n_cq) snprintf(a->cluster_queue, sizeof a->cluster_queue, "%s", e->cqs[w->cq].name);
    if (k == GX_ACT_ADMIT && w->adm) {
        /* resource=flavor pairs sorted by resource name (few: insertion sort) */
        const char *rn[64], *fn[64];
        int n = 0;
        for (int ps = 0; ps < w->s.nps; ps++)
            for (int r = 0; r < w->s.ps[ps].nreq && n < 64; r++) {
                const char *res = e->res.s[w->s.ps[ps].res[r]], *flv = e->flv.s[w->adm[ps].flv[r]];
                int dup = 0;
                for (int i = 0; i < n; i++) dup |= !strcmp(rn[i], res);
                if (dup) continue;
                int j = n++;
                for (; j > 0 && strcmp(rn[j - 1], res) > 0; j--) { rn[j] = rn[j - 1]; fn[j] = fn[j - 1]; }
                rn[j] = res;
                fn[j] = flv;
            }
        size_t off = 0;
        for (int i = 0; i < n && off < sizeof a->flavors; i++)
            off += (size_t)snprintf(a->flavors + off, sizeof a->flavors - off, "%s%s=%s", i ? "," : "", rn[i], fn[i]);
    }
}

/* Reserve quota and devices for an assignment and mark the workload admitted. */
void gx_engine_sched_admit(gx_engine *e, gx_wl *w, const gx_assign *a, int64_t now, int emit)
{
    int node = e->cqs[w->cq].node;
    w->adm = gx_xcalloc((size_t)w->s.nps, sizeof *w->adm);
    for (int ps = 0; ps < w->s.nps; ps++) {
        w->adm[ps].count = a->count[ps];
        w->adm[ps].flv = gx_xmalloc((size_t)(w->s.ps[ps].nreq ? w->s.ps[ps].nreq : 1) * sizeof(int));
        if (w->s.ps[ps].nreq) memcpy(w->adm[ps].flv, a->flv[ps], (size_t)w->s.ps[ps].nreq * sizeof(int));
    }
    w->n_use = a->n_use;
    w->use_fr = gx_xmalloc((size_t)(a->n_use ? a->n_use : 1) * sizeof(int));
    w->use_amt = gx_xmalloc((size_t)(a->n_use ? a->n_use : 1) * sizeof(int64_t));
    if (a->n_use) memcpy(w->use_fr, a->use_fr, (size_t)a->n_use * sizeof(int));
    if (a->n_use) memcpy(w->use_amt, a->use_amt, (size_t)a->n_use * sizeof(int64_t));
    for (int u = 0; u < a->n_use; u++) gx_engine_quota_add(e, node, a->use_fr[u], a->use_amt[u]);
    e->qversion++;
    if (emit) {
        char why[160];
        gx_engine_place_try(e, w, 1, why, sizeof why);
    }
    w->state = GX_WL_ADMITTED;
    w->admitted_at = w->quota_at = now;
    memset(&w->why, 0, sizeof w->why);
    char msg[300];
    snprintf(msg, sizeof msg, "Quota reserved in ClusterQueue %s", e->cqs[w->cq].name);
    gx_engine_wl_set_cond(w, GX_C_QUOTA, 1, "QuotaReserved", NULL, now);     /* message rendered by the view */
    gx_engine_wl_set_cond(w, GX_C_ADMITTED, 1, "Admitted", NULL, now);
    /* Kueue keeps why it was evicted, as "Previously: ...", once it is admitted again. */
    static const int past[] = {GX_C_EVICTED, GX_C_PREEMPTED};
    for (int i = 0; i < 2; i++) {
        gx_cond *k = &w->cond[past[i]];
        if (!k->set) continue;
        char prev[400];
        snprintf(prev, sizeof prev, "Previously: %s", k->msg ? k->msg : (k->reason ? k->reason : ""));
        if (k->status || !k->msg || strncmp(k->msg, "Previously: ", 12))
            gx_engine_wl_set_cond(w, past[i], 0, "QuotaReserved", gx_xstrdup(prev), now);
    }
    if (w->cond[GX_C_REQUEUED].set) gx_engine_wl_set_cond(w, GX_C_REQUEUED, 1, "QuotaReserved", NULL, now);
    gx_cq *cq = &e->cqs[w->cq];
    GX_GROW(cq->adm, cq->adm_n, cq->adm_cap);
    w->adm_pos = cq->adm_n;
    cq->adm[cq->adm_n++] = (int)(w - e->wls);
    cq->admitted_now++;
    cq->admitted_total++;
    gx_engine_count_admit(cq, w);
    if (w->lq >= 0) e->lqs[w->lq].admitted_now++;
    /* two-phase admission: with admission checks it only holds its quota for now */
    if (gx_engine_check_reserve(e, w, now)) return;
    if (w->s.max_exec_s > 0) { w->max_exec_tracked = 1; e->n_max_exec++; }
    if (emit) gx_engine_sched_act(e, GX_ACT_ADMIT, w, NULL, "Admitted", msg);
}

static int64_t remaining_ms(const gx_wl *w, int64_t now)
{
    return w->s.max_exec_s * 1000 - w->acc_ms - (now - w->admitted_at);
}

static void expire(gx_engine *e, int64_t now)
{
    if (!e->n_max_exec) return;
    for (int i = 0; i < e->n_wl; i++) {
        gx_wl *w = &e->wls[i];
        if (!w->live || w->state != GX_WL_ADMITTED || w->chk_wait || w->s.max_exec_s <= 0) continue;
        if (remaining_ms(w, now) > 0) continue;
        char msg[200];
        snprintf(msg, sizeof msg, "exceeded the maximum execution time (%llds)", (long long)w->s.max_exec_s);
        w->acc_ms = 0;    /* Kueue resets the accumulator on deactivation */
        gx_engine_wl_deactivate(e, w, "MaximumExecutionTimeExceeded", gx_xstrdup(msg), now);
        gx_engine_sched_act(e, GX_ACT_DEACTIVATE, w, NULL, "MaximumExecutionTimeExceeded", msg);
    }
}

int64_t gx_engine_next_wakeup(const gx_engine *e, int64_t now_ms)
{
    int64_t best = gx_engine_rsv_wakeup(e, now_ms);
    if (!e->n_max_exec) return best;
    for (int i = 0; i < e->n_wl; i++) {
        const gx_wl *w = &e->wls[i];
        if (!w->live || w->state != GX_WL_ADMITTED || w->chk_wait || w->s.max_exec_s <= 0) continue;
        int64_t t = now_ms + remaining_ms(w, now_ms);
        if (t <= now_ms) t = now_ms + 1;
        if (t < best) best = t;
    }
    return best;
}

/* HoldAndDrain on a ClusterQueue or LocalQueue evicts what it admitted. */
static void drain(gx_engine *e, int64_t now)
{
    int any = 0;
    for (int i = 0; i < e->n_cq && !any; i++) any = e->cqs[i].stop == GX_STOP_DRAIN && e->cqs[i].admitted_now;
    for (int i = 0; i < e->n_lq && !any; i++) any = e->lqs[i].key && e->lqs[i].stop == GX_STOP_DRAIN && e->lqs[i].admitted_now;
    if (!any) return;
    for (int i = 0; i < e->n_wl; i++) {
        gx_wl *w = &e->wls[i];
        if (!w->live || w->state != GX_WL_ADMITTED) continue;
        const char *reason = NULL;
        if (w->cq >= 0 && e->cqs[w->cq].stop == GX_STOP_DRAIN) reason = "ClusterQueueStopped";
        else if (w->lq >= 0 && e->lqs[w->lq].key && e->lqs[w->lq].stop == GX_STOP_DRAIN) reason = "LocalQueueStopped";
        if (!reason) continue;
        char msg[200];
        snprintf(msg, sizeof msg, "The %s is stopped (stopPolicy HoldAndDrain)",
                 reason[0] == 'C' ? "ClusterQueue" : "LocalQueue");
        gx_engine_wl_evict(e, w, reason, gx_xstrdup(msg), now);
        gx_engine_sched_act(e, GX_ACT_PREEMPT, w, NULL, reason, msg);
    }
}

/* Classic entry order: lower borrowing first, then priority, then queue order. */
typedef struct ent_ctx { const gx_engine *e; const entry *ents; } ent_ctx;

/* Sorts indices into the cycle's entries (an entry is ~5 KB: never move them). */
static int entry_cmp(const void *pa, const void *pb, void *ctx)
{
    const ent_ctx *c = ctx;
    const entry *a = &c->ents[*(const int *)pa], *b = &c->ents[*(const int *)pb];
    const gx_engine *cmp_e = c->e;
    if (a->inadmissible != b->inadmissible) return a->inadmissible - b->inadmissible;
    int ba = a->a.borrow, bb = b->a.borrow;
    if (ba != bb) return ba < bb ? -1 : 1;
    const gx_wl *x = &cmp_e->wls[a->wi], *y = &cmp_e->wls[b->wi];
    if (gx_engine_queue_before(cmp_e, x, y)) return -1;
    if (gx_engine_queue_before(cmp_e, y, x)) return 1;
    return 0;
}

/* Put a head that was not admitted back: StrictFIFO keeps it at the head (blocking the
 * queue until something changes), BestEffortFIFO sets it aside. */
static void requeue(gx_engine *e, entry *en, int immediate)
{
    gx_cq *c = &e->cqs[en->cq];
    if (immediate) { gx_engine_queue_push(e, en->cq, en->wi); return; }
    if (c->strategy == GX_STRICT) {
        gx_engine_queue_push(e, en->cq, en->wi);
        c->blocked = 1;
    } else {
        gx_engine_queue_park(e, en->cq, en->wi);
    }
}

static void nominate(gx_engine *e, entry *en)
{
    gx_wl *w = &e->wls[en->wi];
    const gx_cq *c = &e->cqs[en->cq];
    en->inadmissible = 0;
    if (w->lq >= 0 && e->lqs[w->lq].key && e->lqs[w->lq].stop != GX_STOP_NONE) {
        memset(&w->why, 0, sizeof w->why);
        w->why.kind = GX_WHY_LQ_STOPPED;
        en->inadmissible = 1;
        return;
    }
    if (!gx_engine_obj_ns_matches(c, w->s.ns)) {
        memset(&w->why, 0, sizeof w->why);
        w->why.kind = GX_WHY_NS;
        en->inadmissible = 1;
        return;
    }
    gx_engine_assign(e, w, NULL, &en->a);
    if (en->a.mode != GX_M_NOFIT && gx_engine_rsv_hold(e, en->cq, w, &en->a, e->rsv_now)) {
        en->a.mode = GX_M_NOFIT;      /* lead time of a booking: held, not preempting */
        en->a.why = w->why;
        return;
    }
    if (en->a.mode != GX_M_FIT && en->a.mode != GX_M_NOFIT)
        gx_engine_preempt_targets(e, en->cq, w, &en->a, &en->targets, &en->n_targets);
    if (en->a.mode == GX_M_NOFIT || (en->a.mode != GX_M_FIT && !en->n_targets)) {
        int32_t counts[GX_MAX_PODSETS];
        gx_assign pa;
        if (gx_engine_partial(e, w, &pa, counts, &en->targets, &en->n_targets)) en->a = pa;
    }
}

/* Would the assignment's pods get devices (always true without Nodes)? */
static int place_ok(gx_engine *e, gx_wl *w, const gx_assign *a)
{
    if (!e->n_nodes) return 1;
    gx_psadm tmp[GX_MAX_PODSETS];
    for (int ps = 0; ps < w->s.nps; ps++) { tmp[ps].count = a->count[ps]; tmp[ps].flv = (int *)a->flv[ps]; }
    w->adm = tmp;
    char why[160];
    int ok = gx_engine_place_try(e, w, 0, why, sizeof why);
    w->adm = NULL;
    return ok;
}

static int process(gx_engine *e, entry *en, int64_t now, int *preempted, int *n_pre)
{
    gx_wl *w = &e->wls[en->wi];
    if (en->inadmissible) {
        /* Kueue keeps a stopped LocalQueue's workloads out of the ClusterQueue's heap,
         * so they never block a StrictFIFO queue: set them aside in both strategies */
        if (w->why.kind == GX_WHY_LQ_STOPPED) gx_engine_queue_park(e, en->cq, en->wi);
        else requeue(e, en, 0);
        return 0;
    }
    if (en->a.mode == GX_M_NOFIT) {
        w->why = en->a.why;
        requeue(e, en, 0);
        return 0;
    }
    if (en->a.mode != GX_M_FIT) {
        if (!en->n_targets) {
            w->why = en->a.why;
            gx_engine_preempt_reserve(e, en->cq, &en->a);
            requeue(e, en, 0);
            return 0;
        }
        for (int t = 0; t < en->n_targets; t++)
            for (int p = 0; p < *n_pre; p++)
                if (preempted[p] == en->targets[t]) {
                    w->why.kind = GX_WHY_SKIPPED;
                    requeue(e, en, 1);
                    return 0;
                }
        gx_engine_preempt_issue(e, w, en->targets, en->n_targets, now);
        for (int t = 0; t < en->n_targets; t++) preempted[(*n_pre)++] = en->targets[t];
        /* Evictions here are instantaneous, so the preemptor's wait is over: Kueue
         * would nominate it first next (sticky preemptor) and admit it on the quota
         * its victims released. Doing that now keeps another head from taking that
         * quota in between, which would only restart the preemption. */
        gx_engine_assign(e, w, en->a.count, &en->a);
        if (en->a.mode == GX_M_FIT && gx_engine_assign_fits(e, en->cq, &en->a) && place_ok(e, w, &en->a)) {
            gx_engine_sched_admit(e, w, &en->a, now, 1);
            return 1;
        }
        memset(&w->why, 0, sizeof w->why);
        w->why.kind = GX_WHY_PREEMPTING;
        requeue(e, en, 1);
        return 1;
    }
    if (!gx_engine_assign_fits(e, en->cq, &en->a)) {
        w->why.kind = GX_WHY_SKIPPED;
        requeue(e, en, 1);
        return 0;
    }
    /* devices: the admission must also fit on concrete GPUs */
    if (e->n_nodes) {
        if (!place_ok(e, w, &en->a)) {
            memset(&w->why, 0, sizeof w->why);
            w->why.kind = GX_WHY_NO_DEVICE;
            w->why.need = 0;
            for (int r = 0; r < w->s.ps[0].nreq; r++)
                if (!strcmp(e->res.s[w->s.ps[0].res[r]], "nvidia.com/gpu")) w->why.need = w->s.ps[0].req[r];
            requeue(e, en, 0);
            return 0;
        }
    }
    gx_engine_sched_admit(e, w, &en->a, now, 1);
    return 1;
}

size_t gx_engine_schedule(gx_engine *e, int64_t now_ms, gx_action **out)
{
    e->n_acts = 0;
    gx_engine_quota_ensure(e);
    if (e->orphans) { gx_engine_wl_attach_orphans(e); e->orphans = 0; }
    gx_engine_rsv_pass(e, now_ms);
    gx_engine_check_pass(e, now_ms);
    expire(e, now_ms);
    drain(e, now_ms);
    for (int i = 0; i < e->n_cq; i++) e->cqs[i].blocked = 0;
    entry *ents = e->ents;           /* kept between passes: a cycle holds one entry per queue */
    int cap = e->cap_ents;
    int *preempted = NULL, n_pre = 0, cap_pre = 0;
    /* Each cycle admits, preempts or sets aside at least one head; the guard only
     * protects against a preemption ping-pong that never settles. */
    long guard = 4L * (e->n_wl + e->n_cq) + 64;
    while (guard-- > 0) {
        int n = 0;
        for (int r = 0; r < e->n_ready; r++) {
            int ci = e->ready[r];
            gx_cq *c = &e->cqs[ci];
            if (!gx_engine_queue_active(c)) { c->ready = 0; e->ready[r--] = e->ready[--e->n_ready]; continue; }
            if (c->blocked || !c->active) continue;
            GX_GROW(ents, n, cap);
            ents[n].n_targets = 0;
            ents[n].targets = NULL;
            ents[n].inadmissible = 0;
            ents[n].a.mode = GX_M_NOFIT;
            ents[n].a.borrow = 0;
            ents[n].cq = ci;
            ents[n].wi = gx_engine_queue_pop(e, ci);
            n++;
        }
        if (!n) break;
        gx_engine_reserve_begin(e);
        for (int i = 0; i < n; i++) nominate(e, &ents[i]);
        n_pre = 0;                   /* overlap is checked within one cycle, as in Kueue */
        char *done = gx_xcalloc((size_t)n, 1);
        int *order = gx_xmalloc((size_t)n * sizeof(int));
        for (int i = 0; i < n; i++) order[i] = i;
        if (!e->opts.fair_sharing) {
            ent_ctx ec = {e, ents};
            qsort_r(order, (size_t)n, sizeof(int), entry_cmp, &ec);
        }
        for (int k = 0; k < n; k++) {
            int i = e->opts.fair_sharing ? gx_engine_fair_next(e, ents, n, done) : order[k];
            if (i < 0) break;
            done[i] = 1;
            int need = n_pre + ents[i].n_targets;
            if (need > cap_pre) { cap_pre = need * 2; preempted = gx_xreallocarray(preempted, (size_t)cap_pre, sizeof(int)); }
            process(e, &ents[i], now_ms, preempted, &n_pre);
        }
        for (int i = 0; i < n; i++) {
            if (!done[i]) requeue(e, &ents[i], 1);
            free(ents[i].targets);
        }
        free(done);
        free(order);
        gx_engine_reserve_end(e);
    }
    e->ents = ents;
    e->cap_ents = cap;
    free(preempted);
    *out = NULL;
    if (e->n_acts) {
        *out = gx_xmalloc(e->n_acts * sizeof **out);
        memcpy(*out, e->acts, e->n_acts * sizeof **out);
    }
    return e->n_acts;
}
