/* metrics: /metrics in Prometheus text format, with the names people already chart:
 * Kueue's for queues (kueue_pending_workloads, kueue_admitted_workloads_total,
 * kueue_cluster_queue_resource_usage, ...) and gpuaas_* for the daemon itself.
 * Owns: rendering only; every figure comes from the engine's views. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/num.h"
#include "lib/sbuf.h"
#include "ops/daemon.h"
#include "core/quantity.h"
#include "gpu/api.h"
#include "net/mux.h"

static double qty(const json_t *v)
{
    if (json_is_number(v)) return json_number_value(v);
    int64_t m = 0;
    if (json_is_string(v) && gx_quantity_parse(json_string_value(v), &m, "", NULL) == 0) return (double)m / 1000.0;
    return 0;
}

static void header(gx_sbuf *o, const char *name, const char *type, const char *help)
{
    gx_sbuf_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* kueue_admitted_workloads_total{cluster_queue, priority_class} and
 * kueue_evicted_workloads_total{cluster_queue, reason, underlying_cause, priority_class}
 * as Kueue labels them; a queue that has seen none still has its unlabelled-by-class
 * series at 0, so a dashboard's rate() starts from a sample. */
static void admitted_evicted(gx_sbuf *o, const json_t *cqs)
{
    char b1[256], b2[256], b3[256], b4[256];
    size_t i, k;
    const json_t *cq, *c;
    header(o, "kueue_admitted_workloads_total", "counter", "Workloads admitted since the daemon started, by priority class");
    json_array_foreach(cqs, i, cq) {
        const json_t *by = json_object_get(cq, "admittedByPriorityClass");
        gx_prom_label(json_string_value(json_object_get(cq, "name")), b1, sizeof b1);
        if (!json_array_size(by)) gx_sbuf_printf(o, "kueue_admitted_workloads_total{cluster_queue=\"%s\",priority_class=\"\"} 0\n", b1);
        json_array_foreach(by, k, c)
            gx_sbuf_printf(o, "kueue_admitted_workloads_total{cluster_queue=\"%s\",priority_class=\"%s\"} %lld\n", b1,
                           gx_prom_label(json_string_value(json_object_get(c, "priorityClass")), b2, sizeof b2),
                           (long long)json_integer_value(json_object_get(c, "count")));
    }
    header(o, "kueue_evicted_workloads_total", "counter",
           "Workloads evicted since the daemon started, by reason (Preempted, Deactivated, ClusterQueueStopped, ...), "
           "underlying cause and priority class");
    json_array_foreach(cqs, i, cq) {
        gx_prom_label(json_string_value(json_object_get(cq, "name")), b1, sizeof b1);
        json_array_foreach(json_object_get(cq, "evictedByReason"), k, c)
            gx_sbuf_printf(o, "kueue_evicted_workloads_total{cluster_queue=\"%s\",reason=\"%s\",underlying_cause=\"%s\","
                           "priority_class=\"%s\"} %lld\n", b1,
                           gx_prom_label(json_string_value(json_object_get(c, "reason")), b2, sizeof b2),
                           gx_prom_label(json_string_value(json_object_get(c, "underlyingCause")), b3, sizeof b3),
                           gx_prom_label(json_string_value(json_object_get(c, "priorityClass")), b4, sizeof b4),
                           (long long)json_integer_value(json_object_get(c, "count")));
    }
}

/* The quota and usage gauges, labelled {cohort, cluster_queue, flavor, resource} as Kueue
 * does (cohort "" when the queue has none). Borrowing and lending limits are written only
 * where the queue sets them, as Kueue. Usage and reservation are the same figure here: a
 * workload holds its quota from admission to its end. */
static void quota_series(gx_sbuf *o, const json_t *cqs)
{
    static const char *const per_res[][3] = {
        {"kueue_cluster_queue_nominal_quota", "nominalQuota", "Nominal quota per ClusterQueue, flavor and resource"},
        {"kueue_cluster_queue_borrowing_limit", "borrowingLimit", "Borrowing limit per ClusterQueue, flavor and resource"},
        {"kueue_cluster_queue_lending_limit", "lendingLimit", "Lending limit per ClusterQueue, flavor and resource"},
        {"kueue_cluster_queue_resource_usage", "usage", "Quota in use per ClusterQueue, flavor and resource"},
        {"kueue_cluster_queue_resource_reservation", "usage", "Quota reserved per ClusterQueue, flavor and resource"},
    };
    char b0[256], b1[256], b2[256], b3[256], nb[GX_NUM_MAX];
    size_t i, k;
    const json_t *cq, *r;
    for (size_t m = 0; m < sizeof per_res / sizeof per_res[0]; m++) {
        header(o, per_res[m][0], "gauge", per_res[m][2]);
        json_array_foreach(cqs, i, cq) {
            const char *co = json_string_value(json_object_get(cq, "cohort"));
            json_array_foreach(json_object_get(cq, "resources"), k, r) {
                const json_t *v = json_object_get(r, per_res[m][1]);
                if (!v) continue;
                gx_sbuf_printf(o, "%s{cohort=\"%s\",cluster_queue=\"%s\",flavor=\"%s\",resource=\"%s\"} %s\n", per_res[m][0],
                    gx_prom_label(co ? co : "", b0, sizeof b0),
                    gx_prom_label(json_string_value(json_object_get(cq, "name")), b1, sizeof b1),
                    gx_prom_label(json_string_value(json_object_get(r, "flavor")), b2, sizeof b2),
                    gx_prom_label(json_string_value(json_object_get(r, "resource")), b3, sizeof b3),
                    gx_num_fmt(qty(v), nb, sizeof nb));
            }
        }
    }
}

/* What each live pod's CUDA shim counts (docs/gpu-sharing.md "Limits inside the pod"),
 * labelled {namespace, workload, pod, gpu}: one series per device of a pod that has a
 * region, read from it (gpu/cuda_region_ops.h). */
static void pod_gpu_memory(gx_sbuf *o, gx_daemon *d)
{
    static const char *const names[][3] = {
        {"gpuaas_pod_gpu_memory_used_bytes", "gauge", "GPU memory a pod's processes hold, as its CUDA shim counts it"},
        {"gpuaas_pod_gpu_memory_limit_bytes", "gauge", "GPU memory limit the CUDA shim keeps for a pod (0: none)"},
        {"gpuaas_pod_gpu_oom_refusals_total", "counter", "GPU allocations the CUDA shim refused a pod (over its limit)"},
    };
    char b1[256], b2[256], b3[256];
    for (int m = 0; m < 3; m++) {
        header(o, names[m][0], names[m][1], names[m][2]);
        size_t pos = 0;
        for (gx_run *w; (w = gx_exec_next(d->exec, &pos));)
            for (size_t i = 0; i < w->npods; i++) {
                const gx_run_pod *p = &w->pods[i];
                gx_cuda_usage u;
                gx_err e;
                if (!p->alive || p->cuda != GX_POD_CUDA_INJECTED || gx_exec_pod_cuda_usage(d->exec, w, p, &u, &e)) continue;
                gx_prom_label(w->ns, b1, sizeof b1);
                gx_prom_label(w->name, b2, sizeof b2);
                const char *dev = p->devices;
                for (int k = 0; k < u.ndevices && dev; k++) {
                    char uuid[128];
                    snprintf(uuid, sizeof uuid, "%.*s", (int)strcspn(dev, ","), dev);
                    dev = strchr(dev, ',') ? strchr(dev, ',') + 1 : NULL;
                    uint64_t v = m == 0 ? u.dev[k].used : m == 1 ? u.dev[k].limit : u.dev[k].refused;
                    gx_sbuf_printf(o, "%s{namespace=\"%s\",workload=\"%s\",pod=\"%d\",gpu=\"%s\"} %llu\n", names[m][0], b1,
                                   b2, p->index, gx_prom_label(uuid, b3, sizeof b3), (unsigned long long)v);
                }
            }
    }
}

char *gx_d_metrics(gx_daemon *d)
{
    gx_sbuf o;
    gx_sbuf_init(&o);
    json_t *cqs = gx_engine_cluster_queues(d->eng);
    char b1[256], b2[256];
    size_t i;
    json_t *cq;

    header(&o, "kueue_pending_workloads", "gauge", "Workloads waiting in each ClusterQueue");
    /* Kueue splits pending workloads into active (in the heap) and inadmissible (set
     * aside by BestEffortFIFO until something changes). */
    json_array_foreach(cqs, i, cq) {
        const json_t *act = json_object_get(cq, "pendingActive"), *inad = json_object_get(cq, "pendingInadmissible");
        gx_prom_label(json_string_value(json_object_get(cq, "name")), b1, sizeof b1);
        gx_sbuf_printf(&o, "kueue_pending_workloads{cluster_queue=\"%s\",status=\"active\"} %lld\n", b1,
            (long long)json_integer_value(act ? act : json_object_get(cq, "pendingWorkloads")));
        gx_sbuf_printf(&o, "kueue_pending_workloads{cluster_queue=\"%s\",status=\"inadmissible\"} %lld\n", b1,
            (long long)json_integer_value(inad));
    }
    /* One integer field of the ClusterQueue view per metric. */
    header(&o, "kueue_admitted_active_workloads", "gauge", "Workloads holding quota in each ClusterQueue");
    json_array_foreach(cqs, i, cq)
        gx_sbuf_printf(&o, "kueue_admitted_active_workloads{cluster_queue=\"%s\"} %lld\n",
            gx_prom_label(json_string_value(json_object_get(cq, "name")), b1, sizeof b1),
            (long long)json_integer_value(json_object_get(cq, "admittedWorkloads")));
    admitted_evicted(&o, cqs);
    /* Kueue writes every status of every ClusterQueue, 1 for the one it is in: pending
     * (stopped, a flavor missing), active, terminating (gpuaas deletes at once or refuses
     * while workloads remain, so never terminating). */
    header(&o, "kueue_cluster_queue_status", "gauge", "Each ClusterQueue's status: 1 for the one it is in (pending, active or terminating)");
    json_array_foreach(cqs, i, cq) {
        static const char *const st[] = {"pending", "active", "terminating"};
        int active = !json_is_false(json_object_get(cq, "active"));
        gx_prom_label(json_string_value(json_object_get(cq, "name")), b1, sizeof b1);
        for (int s = 0; s < 3; s++)
            gx_sbuf_printf(&o, "kueue_cluster_queue_status{cluster_queue=\"%s\",status=\"%s\"} %d\n", b1, st[s],
                           s == 0 ? !active : s == 1 ? active : 0);
    }
    quota_series(&o, cqs);
    header(&o, "kueue_cluster_queue_weighted_share", "gauge", "Fair sharing: the ClusterQueue's weighted dominant resource share");
    json_array_foreach(cqs, i, cq)
        gx_sbuf_printf(&o, "kueue_cluster_queue_weighted_share{cluster_queue=\"%s\"} %lld\n",
            gx_prom_label(json_string_value(json_object_get(cq, "name")), b1, sizeof b1),
            (long long)json_integer_value(json_object_get(cq, "weightedShare")));
    json_decref(cqs);

    json_t *lqs = gx_engine_local_queues(d->eng, NULL, 0);
    header(&o, "kueue_local_queue_pending_workloads", "gauge", "Workloads waiting in each LocalQueue, active or inadmissible");
    json_array_foreach(lqs, i, cq) {
        long long pend = (long long)json_integer_value(json_object_get(cq, "pendingWorkloads"));
        long long inad = (long long)json_integer_value(json_object_get(cq, "pendingInadmissible"));
        gx_prom_label(json_string_value(json_object_get(cq, "name")), b1, sizeof b1);
        gx_prom_label(json_string_value(json_object_get(cq, "namespace")), b2, sizeof b2);
        gx_sbuf_printf(&o, "kueue_local_queue_pending_workloads{name=\"%s\",namespace=\"%s\",status=\"active\"} %lld\n", b1, b2,
                       pend - inad);
        gx_sbuf_printf(&o, "kueue_local_queue_pending_workloads{name=\"%s\",namespace=\"%s\",status=\"inadmissible\"} %lld\n", b1,
                       b2, inad);
    }
    header(&o, "kueue_local_queue_admitted_active_workloads", "gauge", "Workloads holding quota in each LocalQueue");
    json_array_foreach(lqs, i, cq)
        gx_sbuf_printf(&o, "kueue_local_queue_admitted_active_workloads{name=\"%s\",namespace=\"%s\"} %lld\n",
            gx_prom_label(json_string_value(json_object_get(cq, "name")), b1, sizeof b1),
            gx_prom_label(json_string_value(json_object_get(cq, "namespace")), b2, sizeof b2),
            (long long)json_integer_value(json_object_get(cq, "admittedWorkloads")));
    json_decref(lqs);

    header(&o, "gpuaas_workloads", "gauge", "Workloads known to the daemon by state");
    for (int p = 0; p < GX_PHASE_N; p++)   /* counted by the engine: no view built per scrape */
        gx_sbuf_printf(&o, "gpuaas_workloads{state=\"%s\"} %zu\n", gx_engine_phase_name((gx_wl_phase)p),
                       gx_engine_count_phase(d->eng, (gx_wl_phase)p));
    header(&o, "gpuaas_http_requests_total", "counter", "HTTP requests served");
    gx_sbuf_printf(&o, "gpuaas_http_requests_total %llu\n", (unsigned long long)(d->mux ? d->mux->requests : 0));
    pod_gpu_memory(&o, d);
    char *gm = gx_gpu_metrics(d->gpu, d->eng);   /* DCGM-exporter names for the GPUs (src/gpu/api.c) */
    gx_sbuf_printf(&o, "%s", gm);
    free(gm);
    char *text = o.p;
    for (int h = 0; h < d->nhooks; h++)
        if (d->hooks[h].metrics) text = d->hooks[h].metrics(d->hooks[h].ud, text);
    return text;
}
