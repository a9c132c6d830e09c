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

char *gx_d_metrics(gx_daemon *d)
{
    gx_sbuf o;
    gx_sbuf_init(&o);
    json_t *cqs = gx_engine_cluster_queues(d->eng);
    char b1[256], b2[256], b3[256], nb[GX_NUM_MAX];
    size_t i, k;
    json_t *cq, *r;

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
    static const char *const per_cq[][4] = {
        {"kueue_admitted_active_workloads", "admittedWorkloads", "gauge", "Workloads holding quota in each ClusterQueue"},
        {"kueue_admitted_workloads_total", "admittedTotal", "counter", "Workloads admitted since the daemon started"},
        {"kueue_evicted_workloads_total", "evictedTotal", "counter", "Workloads evicted since the daemon started"},
    };
    for (size_t m = 0; m < sizeof per_cq / sizeof per_cq[0]; m++) {
        header(&o, per_cq[m][0], per_cq[m][2], per_cq[m][3]);
        json_array_foreach(cqs, i, cq)
            gx_sbuf_printf(&o, "%s{cluster_queue=\"%s\"} %lld\n", per_cq[m][0],
                gx_prom_label(json_string_value(json_object_get(cq, "name")), b1, sizeof b1),
                (long long)json_integer_value(json_object_get(cq, per_cq[m][1])));
    }
    header(&o, "kueue_cluster_queue_status", "gauge", "1 when the ClusterQueue is active");
    json_array_foreach(cqs, i, cq)
        gx_sbuf_printf(&o, "kueue_cluster_queue_status{cluster_queue=\"%s\",status=\"active\"} %d\n",
            gx_prom_label(json_string_value(json_object_get(cq, "name")), b1, sizeof b1),
            json_is_false(json_object_get(cq, "active")) ? 0 : 1);
    const char *per_res[][3] = {
        {"kueue_cluster_queue_resource_usage", "usage", "Quota in use per ClusterQueue, flavor and resource"},
        {"kueue_cluster_queue_nominal_quota", "nominalQuota", "Nominal quota per ClusterQueue, flavor and resource"},
    };
    for (int m = 0; m < 2; m++) {
        header(&o, per_res[m][0], "gauge", per_res[m][2]);
        json_array_foreach(cqs, i, cq) {
            json_array_foreach(json_object_get(cq, "resources"), k, r)
                gx_sbuf_printf(&o, "%s{cluster_queue=\"%s\",flavor=\"%s\",resource=\"%s\"} %s\n", per_res[m][0],
                    gx_prom_label(json_string_value(json_object_get(cq, "name")), b1, sizeof b1),
                    gx_prom_label(json_string_value(json_object_get(r, "flavor")), b2, sizeof b2),
                    gx_prom_label(json_string_value(json_object_get(r, "resource")), b3, sizeof b3),
                    gx_num_fmt(qty(json_object_get(r, per_res[m][1])), nb, sizeof nb));
        }
    }
    header(&o, "kueue_cluster_queue_weighted_share", "gauge", "Fair sharing: the ClusterQueue's weighted dominant resource share");
    json_array_foreach(cqs, i, cq)
        gx_sbuf_printf(&o, "kueue_cluster_queue_weighted_share{cluster_queue=\"%s\"} %lld\n",
            gx_prom_label(json_string_value(json_object_get(cq, "name")), b1, sizeof b1),
            (long long)json_integer_value(json_object_get(cq, "weightedShare")));
    json_decref(cqs);

    json_t *lqs = gx_engine_local_queues(d->eng, NULL, 0);
    header(&o, "kueue_local_queue_pending_workloads", "gauge", "Workloads waiting in each LocalQueue");
    json_array_foreach(lqs, i, cq)
        gx_sbuf_printf(&o, "kueue_local_queue_pending_workloads{name=\"%s\",namespace=\"%s\",status=\"active\"} %lld\n",
            gx_prom_label(json_string_value(json_object_get(cq, "name")), b1, sizeof b1),
            gx_prom_label(json_string_value(json_object_get(cq, "namespace")), b2, sizeof b2),
            (long long)json_integer_value(json_object_get(cq, "pendingWorkloads")));
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
    char *gm = gx_gpu_metrics(d->gpu, d->eng);   /* DCGM-exporter names for the GPUs (src/gpu/api.c) */
    gx_sbuf_printf(&o, "%s", gm);
    free(gm);
    char *text = o.p;
    for (int h = 0; h < d->nhooks; h++)
        if (d->hooks[h].metrics) text = d->hooks[h].metrics(d->hooks[h].ud, text);
    return text;
}
