/* gpu/api: /api/v1/gpus views, MIG apply and DCGM-style metrics (see api.h).
 * Owns: merging the engine's view of who holds what with the inventory's live figures.
 * Must not: hold state; everything comes from the engine and the runtime handed in. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/num.h"
#include "gpu/api.h"
#include "gpu/runtime.h"
#include "lib/alloc.h"
#include "lib/sbuf.h"

int64_t gx_gpu_parse_window(const char *s)
{
    if (!s || !*s) return 3600 * 1000LL;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (end == s || v <= 0) return -1;
    int64_t mult = !*end || !strcmp(end, "s") ? 1000 : !strcmp(end, "m") ? 60000 : !strcmp(end, "h") ? 3600000 : -1;
    if (mult < 0 || v > 7 * 24 * 3600) return -1;
    return v * mult;
}

static json_t *mig_json(const gx_gpu_dev *d)
{
    json_t *a = json_array();
    for (int m = 0; m < d->n_mig; m++) {
        json_t *x = json_pack("{s:i,s:s,s:s,s:s,s:i,s:i,s:I,s:I,s:i}", "index", m, "profile", d->mig[m].profile,
                              "uuid", d->mig[m].uuid, "resource", d->mig[m].resource, "start", d->mig[m].start,
                              "size", d->mig[m].size, "memoryMiB", (json_int_t)d->mig[m].mem_mib,
                              "memoryUsedMiB", (json_int_t)d->mig[m].mem_used_mib, "replicas", d->mig[m].replicas);
        /* GPM-measured graphics-engine activity (percent), only when measured */
        if (d->mig[m].gr_active >= 0) json_object_set_new(x, "grEngineActive", json_real(d->mig[m].gr_active));
        json_array_append_new(a, x);
    }
    return a;
}

/* One item of GET /api/v1/gpus: the engine's GPU (who holds it) plus live figures. */
static json_t *item(gx_gpu_rt *r, const json_t *node, const json_t *g)
{
    json_t *x = json_deep_copy(g);
    json_object_set(x, "node", json_object_get(node, "name"));
    gx_gpu_dev *d = r ? gx_gpu_inventory_find(r->inv, json_string_value(json_object_get(g, "uuid"))) : NULL;
    if (!d) {
        json_object_set_new(x, "mode", json_string("exclusive"));
        return x;
    }
    const json_t *sh = json_object_get(g, "sharing");
    json_object_set_new(x, "mode", json_string(gx_share_mode_name(d->mode)));
    json_object_set_new(x, "product", json_string(d->product));
    json_object_set_new(x, "pciBusId", json_string(d->pci_bus_id));
    json_object_set_new(x, "minor", json_integer(d->minor));   /* its /dev/nvidiaN */
    json_object_set_new(x, "memoryMiB", json_integer(d->mem_mib));
    json_object_set_new(x, "memoryUsedMiB", json_integer(d->mem_used_mib));
    json_object_set_new(x, "utilization", d->util >= 0 ? json_integer(d->util) : json_null());
    json_object_set_new(x, "source", json_string(d->nvml_index >= 0 ? "nvml" : "simulated"));
    if (d->mode == GX_SHARE_TIMESLICING || d->mode == GX_SHARE_MPS) {
        json_object_set_new(x, "replicas", json_integer(d->replicas));
        json_object_set_new(x, "resource", json_string(d->resource));
    }
    if (d->mode == GX_SHARE_MIG) {
        json_object_set_new(x, "migDevices", mig_json(d));
        if (d->mig_config[0]) json_object_set_new(x, "migConfig", json_string(d->mig_config));
    }
    const char *ms = gx_gpu_mps_state(r->mps, d->uuid);
    if (ms) json_object_set_new(x, "mps", json_string(ms));
    if (!sh) {   /* the engine has no sharing view of it: whole-GPU holders only */
        int used = (int)json_array_size(json_object_get(g, "workloads")), total = 1;
        if (d->mode == GX_SHARE_TIMESLICING || d->mode == GX_SHARE_MPS) total = d->replicas;
        if (d->mode == GX_SHARE_MIG)
            for (int m = total = 0; m < d->n_mig; m++) total += d->mig[m].replicas;
        json_object_set_new(x, "slotsUsed", json_integer(used));
        json_object_set_new(x, "slotsTotal", json_integer(total));
    } else {
        json_object_set(x, "slotsUsed", json_object_get(sh, "slotsUsed"));
        json_object_set(x, "slotsTotal", json_object_get(sh, "slotsTotal"));
    }
    json_t *procs = json_array();
    for (int p = 0; p < d->n_procs; p++)
        json_array_append_new(procs, json_pack("{s:i,s:I}", "pid", (int)d->procs[p].pid, "memoryMiB",
                                               (json_int_t)d->procs[p].mem_mib));
    json_object_set_new(x, "processes", procs);
    return x;
}

static json_t *items(gx_gpu_rt *r, gx_engine *eng)
{
    json_t *nodes = gx_engine_nodes(eng), *out = json_array();
    if (r) gx_gpu_inventory_refresh(r->inv, nodes);
    size_t i, k;
    json_t *n, *g;
    json_array_foreach(nodes, i, n) json_array_foreach(json_object_get(n, "gpus"), k, g)
        json_array_append_new(out, item(r, n, g));
    json_decref(nodes);
    return out;
}

static int history(gx_gpu_rt *r, const char *uuid, const char *window, int64_t now_ms, json_t **out, gx_err *err)
{
    gx_gpu_dev *d = r ? gx_gpu_inventory_find(r->inv, uuid) : NULL;
    if (!d) return gx_errf(err, 404, "", "no GPU %s", uuid);
    int64_t w = gx_gpu_parse_window(window);
    if (w < 0) return gx_errf(err, 400, "window", "window must look like 90s, 15m, 1h, 24h or a number of seconds");
    if (w > (int64_t)GX_GPU_HIST * GX_GPU_SAMPLE_MS) {   /* beyond the ring: minute summaries from SQLite */
        json_t *minutes = gx_gpu_history_read(r->hist, d->uuid, now_ms - w, err);
        if (!minutes) return -1;
        *out = json_pack("{s:s,s:I,s:i,s:o}", "uuid", d->uuid, "windowSeconds", (json_int_t)(w / 1000),
                         "intervalSeconds", GX_GPU_SUMMARY_MS / 1000, "samples", minutes);
        return 0;
    }
    json_t *s = json_array();
    long long sum = 0, n = 0, max = 0;
    for (int k = 0; k < d->hist_n; k++) {
        const gx_gpu_sample *x = &d->hist[(d->hist_pos - d->hist_n + k + GX_GPU_HIST) % GX_GPU_HIST];
        if (x->t_ms < now_ms - w) continue;
        json_array_append_new(s, json_pack("{s:I,s:i,s:I}", "t", (json_int_t)x->t_ms, "utilization", x->util,
                                           "memoryUsedMiB", (json_int_t)x->mem_used_mib));
        if (x->util >= 0) {
            sum += x->util;
            n++;
            if (x->util > max) max = x->util;
        }
    }
    *out = json_pack("{s:s,s:I,s:i,s:o,s:o,s:I}", "uuid", d->uuid, "windowSeconds", (json_int_t)(w / 1000),
                     "intervalSeconds", GX_GPU_SAMPLE_MS / 1000, "samples", s, "mean",
                     n ? json_real((double)sum / (double)n) : json_null(), "max", (json_int_t)max);
    return 0;
}

/* POST /api/v1/gpus/mig: only when no workload holds a GPU of the node. */
static int mig_apply(gx_gpu_rt *r, gx_engine *eng, const char *body, size_t len, json_t **out, gx_err *err)
{
    if (!r) return gx_errf(err, 503, "", "the GPU inventory is not running");
    json_error_t je;
    json_t *b = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &je);
    const char *config = json_string_value(json_object_get(b, "config"));
    const char *node = json_string_value(json_object_get(b, "node"));
    if (!json_is_object(b) || !config) {
        json_decref(b);
        return gx_errf(err, 400, "config", "body must be {\"config\": NAME, \"node\"?, \"migConfig\"?}");
    }
    if (!node && r->inv->n_nodes == 1) node = r->inv->nodes[0].name;
    if (!node) { json_decref(b); return gx_errf(err, 400, "node", "say which node (there are several)"); }
    size_t ng = gx_engine_gpus(eng, node, NULL, 0);
    gx_engine_gpu *gs = gx_xcalloc(ng, sizeof *gs);
    gx_engine_gpus(eng, node, gs, ng);
    int rc = 0;
    for (size_t k = 0; k < ng && !rc; k++)
        if (gs[k].user)
            rc = gx_errf(err, 409, "", "GPU %d (%s) is used by %s: MIG changes need idle GPUs", gs[k].index, gs[k].uuid, gs[k].user);
    free(gs);
    size_t i;
    json_t *n;
    json_t *changed = NULL;
    if (!rc) rc = gx_gpu_inventory_mig_apply(r->inv, node, config, json_object_get(b, "migConfig"), &changed, err);
    if (!rc) {   /* the engine learns the new devices: the node is applied again */
        json_t *all = gx_gpu_inventory_nodes(r->inv);
        json_array_foreach(all, i, n)
            if (!strcmp(json_string_value(json_object_get(json_object_get(n, "metadata"), "name")) ?: "", node) &&
                gx_engine_apply(eng, n, err))
                rc = -1;
        json_decref(all);
    }
    if (!rc) *out = json_pack("{s:s,s:s,s:o}", "node", node, "config", config, "gpus", changed);
    else json_decref(changed);
    json_decref(b);
    return rc;
}

int gx_gpu_api(gx_gpu_rt *rt, gx_engine *eng, const char *method, const char *const *segs, int n, const char *body,
               size_t body_len, int admin, const char *window, int64_t now_ms, json_t **out, gx_err *err)
{
    *out = NULL;
    if (n == 0) {
        if (strcmp(method, "GET")) return gx_errf(err, 405, "", "%s is not allowed on /api/v1/gpus (GET)", method);
        *out = json_pack("{s:o}", "items", items(rt, eng));
        return 0;
    }
    if (n == 1 && !strcmp(segs[0], "mig")) {
        if (strcmp(method, "POST")) return gx_errf(err, 405, "", "%s is not allowed on /api/v1/gpus/mig (POST)", method);
        if (!admin) return gx_errf(err, 403, "", "only an admin may change MIG layouts");
        return mig_apply(rt, eng, body, body_len, out, err);
    }
    if (n == 2 && !strcmp(segs[1], "utilization")) {
        if (strcmp(method, "GET")) return gx_errf(err, 405, "", "%s is not allowed on /api/v1/gpus/GPU/utilization (GET)", method);
        return history(rt, segs[0], window, now_ms, out, err);
    }
    return gx_errf(err, 404, "", "no such path under /api/v1/gpus");
}

/* DCGM's GPU_I_ID is the GPU instance id NVML reports; a simulated MIG device has none,
 * so it gets its index on the GPU (distinct, stable across samples). */
static unsigned gi_label(const gx_gpu_inv *inv, const gx_gpu_dev *d, int m)
{
    return inv->nvml ? d->mig[m].gi_id : (unsigned)m;
}

/* ---- metrics ----------------------------------------------------------------------- */

/* DCGM exporter's labels in its order (dcgm-exporter 4.x): gpu, UUID, pci_bus_id, device,
 * modelName, then GPU_I_PROFILE and GPU_I_ID for MIG instance m (m < 0: the whole GPU),
 * Hostname, DCGM_FI_DRIVER_VERSION ("" for a simulated GPU, which has no driver). */
static void labels(const gx_gpu_inv *inv, const gx_gpu_dev *d, int m, char *out, size_t n)
{
    char mn[160], h[160], mig[160] = "";
    if (m >= 0)
        snprintf(mig, sizeof mig, ",GPU_I_PROFILE=\"%s\",GPU_I_ID=\"%u\"", d->mig[m].profile, gi_label(inv, d, m));
    snprintf(out, n, "gpu=\"%d\",UUID=\"%s\",pci_bus_id=\"%s\",device=\"nvidia%d\",modelName=\"%s\"%s,Hostname=\"%s\","
             "DCGM_FI_DRIVER_VERSION=\"%s\"", d->index, d->uuid, d->pci_bus_id, d->index, gx_prom_label(d->product, mn, sizeof mn), mig,
             gx_prom_label(inv->nodes[d->node].name, h, sizeof h), inv->nvml ? gx_gpu_nvml_driver(inv->nvml) : "");
}

/* Allocation per namespace: each holder's share of its GPU (cores / 100), summed. */
static void per_namespace(gx_sbuf *o, const json_t *nodes)
{
    json_t *ns = json_object();
    size_t a, b, c, e;
    json_t *n, *g, *sl, *h;
    json_array_foreach(nodes, a, n) json_array_foreach(json_object_get(n, "gpus"), b, g) {
        const json_t *sh = json_object_get(g, "sharing");
        json_t *who = json_array();
        if (sh) {
            json_array_foreach(json_object_get(sh, "slices"), c, sl) json_array_foreach(json_object_get(sl, "holders"), e, h)
                json_array_append_new(who, json_pack("{s:s?,s:f}", "w", json_string_value(json_object_get(h, "workload")),
                                                     "share", json_integer_value(json_object_get(h, "cores")) / 100.0));
        } else {
            json_array_foreach(json_object_get(g, "workloads"), c, h)
                json_array_append_new(who, json_pack("{s:s?,s:f}", "w", json_string_value(json_object_get(h, "workload")),
                                                     "share", 1.0));
        }
        json_array_foreach(who, c, h) {
            const char *w = json_string_value(json_object_get(h, "w"));
            if (!w || !strchr(w, '/')) continue;
            char key[128];
            snprintf(key, sizeof key, "%.*s", (int)(strchr(w, '/') - w), w);
            double v = json_real_value(json_object_get(ns, key)) + json_real_value(json_object_get(h, "share"));
            json_object_set_new(ns, key, json_real(v));
        }
        json_decref(who);
    }
    gx_sbuf_printf(o, "# HELP gpuaas_namespace_gpu_allocated GPUs allocated to each namespace (a share of a GPU counts its fraction)\n"
           "# TYPE gpuaas_namespace_gpu_allocated gauge\n");
    const char *k;
    json_t *v;
    char b1[160];
    char nb[GX_NUM_MAX];
    json_object_foreach(ns, k, v) gx_sbuf_printf(o, "gpuaas_namespace_gpu_allocated{namespace=\"%s\"} %s\n", gx_prom_label(k, b1, sizeof b1),
                                      gx_num_fmt(json_real_value(v), nb, sizeof nb));
    json_decref(ns);
}

static void header(gx_sbuf *o, const char *name, const char *type, const char *help)
{
    gx_sbuf_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

char *gx_gpu_metrics(gx_gpu_rt *r, gx_engine *eng)
{
    gx_sbuf o = {0};
    gx_sbuf_printf(&o, "%s", "");   /* "" when there is nothing to say */
    if (!r || !r->inv->n_devs) return o.p;
    json_t *nodes = gx_engine_nodes(eng);
    gx_gpu_inv *inv = r->inv;
    gx_gpu_inventory_refresh(inv, nodes);
    char l[768], nb[GX_NUM_MAX];
    header(&o, "DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).");
    for (int i = 0; i < inv->n_devs; i++) {
        const gx_gpu_dev *d = &inv->devs[i];
        if (d->util < 0 || d->mode == GX_SHARE_MIG) continue;   /* not reported for MIG, as DCGM */
        labels(inv, d, -1, l, sizeof l);
        gx_sbuf_printf(&o, "DCGM_FI_DEV_GPU_UTIL{%s} %d\n", l, d->util);
    }
    /* one family at a time: Prometheus wants each metric's samples together */
    static const char *const fb[2][2] = {{"DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB)."},
                                         {"DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB)."}};
    for (int f = 0; f < 2; f++) {
        header(&o, fb[f][0], "gauge", fb[f][1]);
        for (int i = 0; i < inv->n_devs; i++) {
            const gx_gpu_dev *d = &inv->devs[i];
            labels(inv, d, -1, l, sizeof l);
            gx_sbuf_printf(&o, "%s{%s} %lld\n", fb[f][0], l, (long long)(f ? d->mem_mib - d->mem_used_mib : d->mem_used_mib));
            for (int m = 0; m < d->n_mig; m++) {
                labels(inv, d, m, l, sizeof l);
                gx_sbuf_printf(&o, "%s{%s} %lld\n", fb[f][0], l,
                               (long long)(f ? d->mig[m].mem_mib - d->mig[m].mem_used_mib : d->mig[m].mem_used_mib));
            }
        }
    }
    header(&o, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active. source=\"gpm\": "
                                                         "measured by NVML GPM (GRAPHICS_UTIL / 100) over the last sample "
                                                         "interval; source=\"estimate\": 1 while the MIG instance is held.");
    for (int i = 0; i < inv->n_devs; i++) {
        const gx_gpu_dev *d = &inv->devs[i];
        labels(inv, d, -1, l, sizeof l);
        if (!d->n_mig && d->gr_active >= 0)   /* a whole GPU: only when measured */
            gx_sbuf_printf(&o, "DCGM_FI_PROF_GR_ENGINE_ACTIVE{%s,source=\"gpm\"} %s\n", l, gx_num_fmt(d->gr_active / 100.0, nb, sizeof nb));
        for (int m = 0; m < d->n_mig; m++) {
            int measured = d->mig[m].gr_active >= 0;
            char lm[768];
            labels(inv, d, m, lm, sizeof lm);
            gx_sbuf_printf(&o, "DCGM_FI_PROF_GR_ENGINE_ACTIVE{%s,source=\"%s\"} %s\n", lm, measured ? "gpm" : "estimate",
                           gx_num_fmt(measured ? d->mig[m].gr_active / 100.0 : d->mig[m].mem_used_mib > 0 ? 1.0 : 0.0, nb, sizeof nb));
        }
    }
    static const char *const fam[3][2] = {
        {"gpuaas_gpu_slots", "Devices, replicas or vGPUs of each GPU by state (used, total)"},
        {"gpuaas_gpu_allocated_cores_percent", "Share of each GPU's SMs allocated to workloads"},
        {"gpuaas_gpu_allocated_memory_mib", "GPU memory allocated to workloads (MiB)"}};
    for (int f = 0; f < 3; f++) {
        header(&o, fam[f][0], "gauge", fam[f][1]);
        size_t a, b;
        json_t *n, *g;
        json_array_foreach(nodes, a, n) json_array_foreach(json_object_get(n, "gpus"), b, g) {
            gx_gpu_dev *d = gx_gpu_inventory_find(inv, json_string_value(json_object_get(g, "uuid")));
            if (!d) continue;
            labels(inv, d, -1, l, sizeof l);
            const json_t *sh = json_object_get(g, "sharing");
            long long used = sh ? json_integer_value(json_object_get(sh, "slotsUsed"))
                                : json_array_size(json_object_get(g, "workloads")) > 0;
            long long total = sh ? json_integer_value(json_object_get(sh, "slotsTotal")) : 1;
            long long cores = sh ? json_integer_value(json_object_get(sh, "coresAllocated")) : 100 * used;
            long long mem = sh ? json_integer_value(json_object_get(sh, "memoryAllocatedMiB")) : d->mem_mib * used;
            const char *mode = gx_share_mode_name(d->mode);
            if (f == 0) {
                gx_sbuf_printf(&o, "%s{%s,mode=\"%s\",state=\"used\"} %lld\n", fam[f][0], l, mode, used);
                gx_sbuf_printf(&o, "%s{%s,mode=\"%s\",state=\"total\"} %lld\n", fam[f][0], l, mode, total);
            } else {
                gx_sbuf_printf(&o, "%s{%s,mode=\"%s\"} %lld\n", fam[f][0], l, mode, f == 1 ? cores : mem);
            }
        }
    }
    per_namespace(&o, nodes);
    json_decref(nodes);
    return o.p;
}
