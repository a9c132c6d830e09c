/* engine_view: the JSON views of the engine (workloads, queues) for the REST API,
 * the CLI, /metrics and the scenario runner.
 * Owns: rendering state into new json_t values, turning a pending workload's "why"
 * record into a Kueue-style condition with a reason and a message a person
 * understands, and 0-based queue positions.
 * Must not: change engine state. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/share_place.h"
#include "core/engine_int.h"
#include "core/quantity.h"
#include "lib/gxtime.h"

static const char *const COND_TYPE[GX_C_N] = {"QuotaReserved", "Admitted", "Evicted", "Preempted", "Requeued",
                                              "Finished", "Deactivated"};

static const char *q(int64_t v, char *b) { return gx_quantity_format(v, b, 48); }

static const char *fname(const gx_engine *e, int f) { return f >= 0 && f < e->flv.n ? e->flv.s[f] : "?"; }
static const char *rname(const gx_engine *e, int r) { return r >= 0 && r < e->res.n ? e->res.s[r] : "?"; }

/* Reason for the QuotaReserved=False condition of a pending workload. */
static const char *why_reason(const gx_engine *e, const gx_wl *w)
{
    if (w->cq >= 0 && !e->cqs[w->cq].active && !e->dirty) return "Inadmissible";
    switch (w->why.kind) {
    case GX_WHY_NO_CQ: case GX_WHY_NS: case GX_WHY_LQ_STOPPED: case GX_WHY_NOT_COVERED: case GX_WHY_INACTIVE_CQ:
        return "Inadmissible";
    case GX_WHY_NO_FLAVOR_MATCH: return "NoMatchingFlavor";
    case GX_WHY_MAX_QUOTA: return "ExceedsMaxQuota";
    case GX_WHY_QUOTA: return "WaitingForQuota";
    case GX_WHY_BORROW_LIMIT: return "BorrowingLimitReached";
    case GX_WHY_PREEMPTING: return "WaitingForPreemption";
    case GX_WHY_NO_DEVICE: return "NoDeviceFits";
    case GX_WHY_BOOKED: return "WaitingForReservation";
    default: return "Pending";
    }
}

char *gx_engine_view_why(const gx_engine *e, const gx_wl *w)
{
    char m[600], b1[48], b2[48], b3[48];
    const gx_why *y = &w->why;
    const char *cqn = w->cq >= 0 ? e->cqs[w->cq].name : "?";
    const char *psn = y->podset >= 0 && y->podset < w->s.nps ? w->s.ps[y->podset].name : "main";
    if (w->cq >= 0 && !e->cqs[w->cq].active && !e->dirty) {
        const char *r = e->cqs[w->cq].inactive_reason;
        snprintf(m, sizeof m, "ClusterQueue %s is inactive: %s", cqn,
                 !r ? "unknown" : !strcmp(r, "Stopped") ? "it is stopped (stopPolicy)" :
                 !strcmp(r, "FlavorNotFound") ? "one of its ResourceFlavors does not exist" : "its cohort tree has a cycle");
        return gx_xstrdup(m);
    }
    switch (y->kind) {
    case GX_WHY_NO_CQ:
        snprintf(m, sizeof m, "ClusterQueue %s of LocalQueue %s doesn't exist",
                 w->lq >= 0 && e->lqs[w->lq].key ? e->lqs[w->lq].cq_name : "?", w->lq >= 0 && e->lqs[w->lq].key ? e->lqs[w->lq].key : "?");
        break;
    case GX_WHY_NS:
        snprintf(m, sizeof m, "namespace %s doesn't match the namespaceSelector of ClusterQueue %s", w->s.ns, cqn);
        break;
    case GX_WHY_LQ_STOPPED:
        snprintf(m, sizeof m, "LocalQueue %s is stopped (stopPolicy %s)", w->lq >= 0 && e->lqs[w->lq].key ? e->lqs[w->lq].key : "?",
                 w->lq >= 0 && e->lqs[w->lq].stop == GX_STOP_DRAIN ? "HoldAndDrain" : "Hold");
        break;
    case GX_WHY_NOT_COVERED:
        snprintf(m, sizeof m, "resource %s is not covered by any flavor of ClusterQueue %s", rname(e, y->res), cqn);
        break;
    case GX_WHY_NO_FLAVOR_MATCH:
        snprintf(m, sizeof m, "couldn't assign flavors to pod set %s: flavor %s %s", psn, fname(e, y->flavor),
                 y->need == 1 ? "has a taint the pod doesn't tolerate" : y->need == 2 ? "doesn't match the pod's nodeSelector or node affinity" : "not found");
        break;
    case GX_WHY_MAX_QUOTA:
        snprintf(m, sizeof m, "pod set %s needs %s %s in flavor %s, more than ClusterQueue %s can ever get (%s)", psn,
                 q(y->need, b1), rname(e, y->res), fname(e, y->flavor), cqn, q(y->avail, b2));
        break;
    case GX_WHY_QUOTA:
    case GX_WHY_BORROW_LIMIT: {
        int n = snprintf(m, sizeof m, "waiting for %s %s in flavor %s: queue %s uses %s of %s", q(y->need, b1), rname(e, y->res),
                         fname(e, y->flavor), cqn, q(y->used, b2), q(y->nominal, b3));
        const char *co = w->cq >= 0 ? e->cqs[w->cq].cohort_name : NULL;
        int64_t own_free = y->nominal > y->used ? y->nominal - y->used : 0;
        if (co && n > 0 && (size_t)n < sizeof m) {
            if (y->avail >= own_free)
                n += snprintf(m + n, sizeof m - (size_t)n, ", cohort %s can lend %s", co, q(y->lendable, b1));
            else
                n += snprintf(m + n, sizeof m - (size_t)n, ", only %s free: other queues of cohort %s borrow the rest",
                              q(y->avail, b1), co);
        }
        if (y->kind == GX_WHY_BORROW_LIMIT && n > 0 && (size_t)n < sizeof m)
            snprintf(m + n, sizeof m - (size_t)n, " (borrowingLimit reached)");
        break;
    }
    case GX_WHY_PREEMPTING:
        snprintf(m, sizeof m, "preempting workloads in ClusterQueue %s to make room; waiting for them to release their quota", cqn);
        break;
    case GX_WHY_NO_DEVICE:
        if (gx_share_engine_explain(e, w, m, sizeof m)) break;   /* shared GPUs say which device */
        if (y->need > 0) snprintf(m, sizeof m, "quota fits but no node has %s free nvidia.com/gpu", q(y->need, b1));
        else snprintf(m, sizeof m, "quota fits but no node matches the flavor's nodeLabels and the pod's nodeSelector and tolerations");
        break;
    case GX_WHY_SKIPPED:
        snprintf(m, sizeof m, "Workload no longer fits after processing another workload");
        break;
    case GX_WHY_BOOKED: {
        char t[GX_TIME_LEN];
        snprintf(m, sizeof m, "%s %s in flavor %s is booked from %s: only a workload whose maximum execution time ends by then may use it",
                 q(y->need, b1), rname(e, y->res), fname(e, y->flavor), gx_time_fmt(y->nominal, t, sizeof t));
        break;
    }
    default:
        snprintf(m, sizeof m, "waiting in ClusterQueue %s to be considered by the scheduler", cqn);
    }
    return gx_xstrdup(m);
}

static void positions(const gx_engine *e, const gx_wl *w, int *pcq, int *plq)
{
    *pcq = *plq = -1;
    if (w->state != GX_WL_PENDING || w->cq < 0) return;
    gx_engine_queue_position(e, w, pcq, plq);
}

static json_t *podset_json(const gx_engine *e, const gx_podset *p)
{
    json_t *req = json_object();
    char b[48];
    for (int r = 0; r < p->nreq; r++) json_object_set_new(req, rname(e, p->res[r]), json_string(q(p->req[r], b)));
    return json_pack("{s:s, s:i, s:i, s:o}", "name", p->name, "count", (int)p->count, "minCount", (int)p->min_count, "requests", req);
}

static json_t *admission_json(const gx_engine *e, const gx_wl *w)
{
    json_t *psa = json_array();
    char b[48];
    for (int ps = 0; ps < w->s.nps; ps++) {
        const gx_podset *p = &w->s.ps[ps];
        json_t *fl = json_object(), *use = json_object();
        for (int r = 0; r < p->nreq; r++) {
            json_object_set_new(fl, rname(e, p->res[r]), json_string(fname(e, w->adm[ps].flv[r])));
            json_object_set_new(use, rname(e, p->res[r]), json_string(q(p->req[r] * w->adm[ps].count, b)));
        }
        json_array_append_new(psa, json_pack("{s:s, s:i, s:o, s:o}", "name", p->name, "count", (int)w->adm[ps].count,
                                             "flavors", fl, "resourceUsage", use));
    }
    return json_pack("{s:s, s:o}", "clusterQueue", w->cq >= 0 ? e->cqs[w->cq].name : "", "podSetAssignments", psa);
}

static json_t *wl_json(const gx_engine *e, const gx_wl *w, int pcq, int plq)
{
    char t[40];
    json_t *o = json_object();
    json_object_set_new(o, "key", json_string(w->key));
    json_object_set_new(o, "namespace", json_string(w->s.ns));
    json_object_set_new(o, "name", json_string(w->s.name));
    json_object_set_new(o, "kind", json_string(w->s.kind));
    json_object_set_new(o, "queueName", json_string(w->s.lq_name ? w->s.lq_name : "default"));
    if (w->cq >= 0) json_object_set_new(o, "clusterQueue", json_string(e->cqs[w->cq].name));
    if (w->s.pc_name) json_object_set_new(o, "priorityClass", json_string(w->s.pc_name));
    json_object_set_new(o, "priority", json_integer(w->priority));
    json_object_set_new(o, "state", json_string(gx_engine_phase_name((gx_wl_phase)gx_engine_wl_pub(w))));
    if (w->state == GX_WL_FINISHED) json_object_set_new(o, "succeeded", json_boolean(w->succeeded));
    gx_time_fmt(w->created, t, sizeof t);
    json_object_set_new(o, "createdAt", json_string(t));
    /* An ended workload keeps its last admission time: "when did it start?" still matters. */
    int was_admitted = (w->state == GX_WL_ADMITTED && !w->chk_wait) ||
                       ((w->state == GX_WL_FINISHED || w->state == GX_WL_DEACTIVATED) && w->cond[GX_C_ADMITTED].set);
    if (was_admitted) { gx_time_fmt(w->admitted_at, t, sizeof t); json_object_set_new(o, "admittedAt", json_string(t)); }
    if (w->state == GX_WL_FINISHED || w->state == GX_WL_DEACTIVATED) {
        gx_time_fmt(w->finished_at, t, sizeof t);
        json_object_set_new(o, "finishedAt", json_string(t));
    }
    if (w->s.max_exec_s > 0) json_object_set_new(o, "maxExecutionTimeSeconds", json_integer(w->s.max_exec_s));
    json_object_set_new(o, "accumulatedPastExecutionTimeSeconds", json_integer(w->acc_ms / 1000));
    json_t *ps = json_array();
    for (int i = 0; i < w->s.nps; i++) json_array_append_new(ps, podset_json(e, &w->s.ps[i]));
    json_object_set_new(o, "podSets", ps);
    if (w->state == GX_WL_ADMITTED && w->adm) {
        json_object_set_new(o, "admission", admission_json(e, w));
        json_object_set_new(o, "placement", gx_engine_place_view(e, w));
    }
    json_t *conds = json_array();
    for (int c = 0; c < GX_C_N; c++) {
        const gx_cond *k = &w->cond[c];
        if (!k->set) continue;
        const char *reason = k->reason;
        char *msg = k->msg;
        int own = 0;
        char tmp[320];
        if (c == GX_C_QUOTA && w->state == GX_WL_PENDING && !k->status) {
            reason = why_reason(e, w);
            msg = gx_engine_view_why(e, w);
            own = 1;
        } else if (!msg && c == GX_C_QUOTA && k->status) {
            snprintf(tmp, sizeof tmp, "Quota reserved in ClusterQueue %s", w->cq >= 0 ? e->cqs[w->cq].name : "?");
            msg = tmp;
        } else if (!msg && c == GX_C_ADMITTED && k->status) {
            msg = (char *)"The workload is admitted";
        }
        gx_time_fmt(k->t, t, sizeof t);
        json_array_append_new(conds, json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", COND_TYPE[c], "status", k->status ? "True" : "False",
                                               "reason", reason ? reason : "", "message", msg ? msg : "", "lastTransitionTime", t));
        if (own) free(msg);
    }
    json_object_set_new(o, "conditions", conds);
    json_t *checks = gx_engine_check_view(w);          /* Kueue's status.admissionChecks */
    if (checks) json_object_set_new(o, "admissionChecks", checks);
    if (w->state == GX_WL_PENDING && pcq >= 0) {
        json_object_set_new(o, "positionInClusterQueue", json_integer(pcq));
        json_object_set_new(o, "positionInLocalQueue", json_integer(plq));
    }
    return o;
}

json_t *gx_engine_workload(const gx_engine *e, const char *key, int64_t now_ms)
{
    (void)now_ms;
    const gx_wl *w = key ? gx_engine_wl_get(e, key) : NULL;
    if (!w) return NULL;
    int pcq, plq;
    positions(e, w, &pcq, &plq);
    return wl_json(e, w, pcq, plq);
}

static int match_filter(const gx_engine *e, const gx_wl *w, const gx_wl_filter *f)
{
    if (!f) return 1;
    if (f->n_namespaces) {
        int ok = 0;
        for (size_t i = 0; i < f->n_namespaces && !ok; i++) ok = !strcmp(f->namespaces[i], w->s.ns);
        if (!ok) return 0;
    }
    if (f->state && gx_engine_phase_parse(f->state) != (gx_wl_phase)gx_engine_wl_pub(w)) return 0;
    if (f->cluster_queue && (w->cq < 0 || strcmp(f->cluster_queue, e->cqs[w->cq].name))) return 0;
    if (f->local_queue) {
        const char *qn = w->s.lq_name ? w->s.lq_name : "default";
        const char *sl = strchr(f->local_queue, '/');
        if (sl) {
            size_t nl = (size_t)(sl - f->local_queue);
            if (strlen(w->s.ns) != nl || strncmp(w->s.ns, f->local_queue, nl) || strcmp(sl + 1, qn)) return 0;
        } else if (strcmp(f->local_queue, qn)) return 0;
    }
    return 1;
}

static int cmp_key(const void *a, const void *b, void *ctx)
{
    const gx_engine *e = ctx;
    const gx_wl *x = &e->wls[*(const int *)a], *y = &e->wls[*(const int *)b];
    int c = strcmp(x->s.ns, y->s.ns);
    return c ? c : strcmp(x->s.name, y->s.name);
}

json_t *gx_engine_workloads(const gx_engine *e, const gx_wl_filter *f, int64_t now_ms)
{
    (void)now_ms;
    int *pcq = gx_xmalloc((size_t)(e->n_wl ? e->n_wl : 1) * sizeof(int));
    int *plq = gx_xmalloc((size_t)(e->n_wl ? e->n_wl : 1) * sizeof(int));
    for (int i = 0; i < e->n_wl; i++) pcq[i] = plq[i] = -1;
    /* positions: one sort per ClusterQueue, then a running count per LocalQueue */
    int *lqcount = gx_xcalloc((size_t)(e->n_lq ? e->n_lq : 1), sizeof(int));
    for (int c = 0; c < e->n_cq; c++) {
        int n;
        int *v = gx_engine_queue_sorted(e, c, &n);
        for (int i = 0; i < n; i++) {
            const gx_wl *w = &e->wls[v[i]];
            pcq[v[i]] = i;
            if (w->lq >= 0) plq[v[i]] = lqcount[w->lq]++;
        }
        for (int i = 0; i < n; i++) if (e->wls[v[i]].lq >= 0) lqcount[e->wls[v[i]].lq] = 0;
        free(v);
    }
    free(lqcount);
    int *sel = gx_xmalloc((size_t)(e->n_wl ? e->n_wl : 1) * sizeof(int));
    int n = 0;
    for (int i = 0; i < e->n_wl; i++)
        if (e->wls[i].live && match_filter(e, &e->wls[i], f)) sel[n++] = i;
    if (n) qsort_r(sel, (size_t)n, sizeof(int), cmp_key, (void *)e);
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, wl_json(e, &e->wls[sel[i]], pcq[sel[i]], plq[sel[i]]));
    free(sel);
    free(pcq);
    free(plq);
    return a;
}

static json_t *quota_resources(const gx_engine *e, const gx_quota_spec *qs, int node)
{
    json_t *a = json_array();
    char b1[48], b2[48], b3[48], b4[48];
    for (int g = 0; g < qs->n_rg; g++) {
        const gx_rg *rg = &qs->rg[g];
        for (int k = 0; k < rg->nflv; k++)
            for (int j = 0; j < rg->nres; j++) {
                const gx_fq *fq = &rg->q[k * rg->nres + j];
                int fr = rg->fr[k * rg->nres + j];
                int64_t use = node >= 0 && fr < e->n_fr_tree && !e->dirty ? e->nodes_q[node].usage[fr] : 0;
                json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "flavor", fname(e, rg->flv[k]), "resource", rname(e, rg->res[j]),
                                      "nominalQuota", q(fq->nominal, b1), "usage", q(use, b4));
                if (fq->borrow != GX_NIL) json_object_set_new(o, "borrowingLimit", json_string(q(fq->borrow, b2)));
                if (fq->lend != GX_NIL) json_object_set_new(o, "lendingLimit", json_string(q(fq->lend, b3)));
                json_array_append_new(a, o);
            }
    }
    return a;
}

json_t *gx_engine_cluster_queues(const gx_engine *e)
{
    gx_engine_quota_ensure((gx_engine *)e);
    static const char *const STRAT[] = {"StrictFIFO", "BestEffortFIFO"};
    static const char *const STOP[] = {"None", "Hold", "HoldAndDrain"};
    int *order = gx_xmalloc((size_t)(e->n_cq ? e->n_cq : 1) * sizeof(int));
    for (int i = 0; i < e->n_cq; i++) order[i] = i;
    for (int i = 1; i < e->n_cq; i++)          /* insertion sort by name; few queues */
        for (int j = i; j > 0 && strcmp(e->cqs[order[j - 1]].name, e->cqs[order[j]].name) > 0; j--) {
            int t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
        }
    json_t *a = json_array();
    for (int x = 0; x < e->n_cq; x++) {
        const gx_cq *c = &e->cqs[order[x]];
        json_t *o = json_pack("{s:s, s:s, s:s, s:b, s:o, s:i, s:i, s:I, s:I}", "name", c->name, "queueingStrategy", STRAT[c->strategy],
                              "stopPolicy", STOP[c->stop], "active", c->active, "resources", quota_resources(e, &c->qs, c->node),
                              "pendingWorkloads", gx_engine_queue_pending(c), "admittedWorkloads", c->admitted_now,
                              "admittedTotal", (json_int_t)c->admitted_total, "evictedTotal", (json_int_t)c->evicted_total);
        /* Kueue's kueue_pending_workloads{status="active|inadmissible"} split */
        int parked = c->active ? gx_engine_queue_parked(c) : gx_engine_queue_pending(c);
        json_object_set_new(o, "pendingActive", json_integer(gx_engine_queue_pending(c) - parked));
        json_object_set_new(o, "pendingInadmissible", json_integer(parked));
        json_object_set_new(o, "preemptingTotal", json_integer(c->preempting_total));
        if (c->cohort_name) json_object_set_new(o, "cohort", json_string(c->cohort_name));
        gx_engine_counts_view(c, o);
        if (!c->active && c->inactive_reason) json_object_set_new(o, "inactiveReason", json_string(c->inactive_reason));
        json_object_set_new(o, "fairSharingWeight", json_real((double)c->qs.fs_weight / 1000.0));
        json_object_set_new(o, "weightedShare", json_integer(gx_engine_fair_share_view(e, order[x])));
        json_array_append_new(a, o);
    }
    free(order);
    return a;
}

json_t *gx_engine_local_queues(const gx_engine *e, const char *const *namespaces, size_t n_ns)
{
    int *pend = gx_xcalloc((size_t)(e->n_lq ? e->n_lq : 1), sizeof(int));
    int *inad = gx_xcalloc((size_t)(e->n_lq ? e->n_lq : 1), sizeof(int));
    gx_engine_lq_inadmissible(e, inad);
    int64_t *use = gx_xcalloc((size_t)(e->n_lq ? e->n_lq : 1) * (size_t)(e->res.n ? e->res.n : 1), sizeof(int64_t));
    for (int i = 0; i < e->n_wl; i++) {
        const gx_wl *w = &e->wls[i];
        if (!w->live || w->lq < 0) continue;
        if (w->state == GX_WL_PENDING) pend[w->lq]++;
        if (w->state == GX_WL_ADMITTED && w->adm)
            for (int ps = 0; ps < w->s.nps; ps++)
                for (int r = 0; r < w->s.ps[ps].nreq; r++)
                    use[(size_t)w->lq * (size_t)e->res.n + (size_t)w->s.ps[ps].res[r]] += w->s.ps[ps].req[r] * w->adm[ps].count;
    }
    json_t *a = json_array();
    int *order = gx_xmalloc((size_t)(e->n_lq ? e->n_lq : 1) * sizeof(int));
    int n = 0;
    for (int i = 0; i < e->n_lq; i++) {
        if (!e->lqs[i].key) continue;
        int ok = !n_ns;
        for (size_t k = 0; k < n_ns && !ok; k++) ok = !strcmp(namespaces[k], e->lqs[i].ns);
        if (ok) order[n++] = i;
    }
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && strcmp(e->lqs[order[j - 1]].key, e->lqs[order[j]].key) > 0; j--) {
            int t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
        }
    char b[48];
    for (int x = 0; x < n; x++) {
        int i = order[x];
        const gx_lq *l = &e->lqs[i];
        json_t *u = json_object();
        for (int r = 0; r < e->res.n; r++) {
            int64_t v = use[(size_t)i * (size_t)e->res.n + (size_t)r];
            if (v) json_object_set_new(u, e->res.s[r], json_string(q(v, b)));
        }
        json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:i, s:i, s:o}", "namespace", l->ns, "name", l->name,
                                           "clusterQueue", l->cq_name, "pendingWorkloads", pend[i],
                                           "admittedWorkloads", l->admitted_now, "usage", u));
        json_object_set_new(json_array_get(a, json_array_size(a) - 1), "pendingInadmissible", json_integer(inad[i]));
    }
    free(order);
    free(pend);
    free(inad);
    free(use);
    return a;
}

const char *gx_engine_workload_cq(const gx_engine *e, const char *key)
{
    const gx_wl *w = key ? gx_engine_wl_get(e, key) : NULL;
    return w && w->cq >= 0 && w->cq < e->n_cq ? e->cqs[w->cq].name : NULL;
}

json_t *gx_engine_admission(const gx_engine *e, const char *key)
{
    const gx_wl *w = key ? gx_engine_wl_get(e, key) : NULL;
    if (!w || w->state != GX_WL_ADMITTED || !w->adm) return NULL;
    json_t *fl = json_object();
    for (int ps = 0; ps < w->s.nps; ps++)
        for (int r = 0; r < w->s.ps[ps].nreq; r++)
            json_object_set_new(fl, rname(e, w->s.ps[ps].res[r]), json_string(fname(e, w->adm[ps].flv[r])));
    json_t *counts = json_array();
    for (int ps = 0; ps < w->s.nps; ps++) json_array_append_new(counts, json_integer(w->adm[ps].count));
    return json_pack("{s:s, s:o, s:o}", "clusterQueue", w->cq >= 0 ? e->cqs[w->cq].name : "", "flavors", fl, "counts", counts);
}
