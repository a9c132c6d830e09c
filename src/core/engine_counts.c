/* engine_counts: the label sets of Kueue's per-ClusterQueue counters, kept beside the
 * plain totals: admissions by priority class (kueue_admitted_workloads_total
 * {cluster_queue, priority_class}) and evictions by reason, underlying cause and
 * priority class (kueue_evicted_workloads_total{cluster_queue, reason, underlying_cause,
 * priority_class}), and the LocalQueues' inadmissible pending workloads.
 * Owns: counting on admission and eviction, and the views of those counts.
 * Must not: decide anything, do I/O or read a clock. The few label combinations a queue
 * sees are kept as small JSON arrays searched linearly: a handful per queue. */
#include <string.h>
#include "core/engine_int.h"

static const char *str_or_empty(const char *s) { return s ? s : ""; }

/* The entry of arr whose string fields keys[0..n) equal vals[0..n), made at 0 when new. */
static json_t *entry(json_t *arr, const char *const *keys, const char *const *vals, int n)
{
    size_t i;
    json_t *o;
    json_array_foreach(arr, i, o) {
        int same = 1;
        for (int k = 0; k < n && same; k++) same = !strcmp(json_string_value(json_object_get(o, keys[k])), vals[k]);
        if (same) return o;
    }
    o = json_object();
    for (int k = 0; k < n; k++) json_object_set_new(o, keys[k], json_string(vals[k]));
    json_object_set_new(o, "count", json_integer(0));
    json_array_append_new(arr, o);
    return o;
}

static void bump(json_t *o)
{
    json_object_set_new(o, "count", json_integer(json_integer_value(json_object_get(o, "count")) + 1));
}

static json_t *counts_of(gx_cq *cq, const char *which)
{
    if (!cq->counts) cq->counts = json_pack("{s:[], s:[]}", "admitted", "evicted");
    return json_object_get(cq->counts, which);
}

void gx_engine_count_admit(gx_cq *cq, const gx_wl *w)
{
    static const char *const keys[] = {"priorityClass"};
    const char *vals[] = {str_or_empty(w->s.pc_name)};
    bump(entry(counts_of(cq, "admitted"), keys, vals, 1));
}

/* Kueue's reasons: a deactivation (a cancel, the maximum execution time) is reason
 * "Deactivated" with what caused it as the underlying cause; a preemption is "Preempted"
 * with the preemption's reason (InClusterQueue, InCohortReclamation, ...) as the cause. */
void gx_engine_count_evict(gx_cq *cq, const gx_wl *w, const char *reason, int deactivated)
{
    static const char *const keys[] = {"reason", "underlyingCause", "priorityClass"};
    const char *cause = "";
    if (deactivated) {
        if (strcmp(reason, "Deactivated")) cause = reason;
        reason = "Deactivated";
    } else if (!strcmp(reason, "Preempted") && w->cond[GX_C_PREEMPTED].set && w->cond[GX_C_PREEMPTED].status) {
        cause = str_or_empty(w->cond[GX_C_PREEMPTED].reason);
    }
    const char *vals[] = {reason, cause, str_or_empty(w->s.pc_name)};
    bump(entry(counts_of(cq, "evicted"), keys, vals, 3));
}

void gx_engine_counts_view(const gx_cq *cq, json_t *o)
{
    json_object_set_new(o, "admittedByPriorityClass",
                        cq->counts ? json_deep_copy(json_object_get(cq->counts, "admitted")) : json_array());
    json_object_set_new(o, "evictedByReason", cq->counts ? json_deep_copy(json_object_get(cq->counts, "evicted")) : json_array());
}

/* Pending workloads of each LocalQueue that sit in the inadmissible set: those of a
 * parked group, or all of an inactive ClusterQueue's (as the ClusterQueue view counts). */
void gx_engine_lq_inadmissible(const gx_engine *e, int *per_lq)
{
    for (int c = 0; c < e->n_cq; c++) {
        const gx_queue *q = &e->cqs[c].q;
        for (int g = 0; g < q->n_g; g++) {
            if (e->cqs[c].active && q->g[g].ppos < 0) continue;
            for (int k = 0; k < q->g[g].n; k++) {
                int lq = e->wls[q->g[g].h[k]].lq;
                if (lq >= 0 && lq < e->n_lq) per_lq[lq]++;
            }
        }
    }
}
