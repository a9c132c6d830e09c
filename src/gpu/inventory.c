/* gpu/inventory: GPUs from NVML or simulated Nodes, sharing resolved per GPU (see
 * inventory.h for the rules).
 * Owns: device list, resolution of modes from the device-plugin and mig-parted files,
 * the resolved Node manifests, samples and their ring, MIG re-layout.
 * Must not: start processes, or change a real GPU except in gx_gpu_inventory_mig_apply. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/engine.h"
#include "core/quantity.h"
#include "core/share_json.h"
#include "gpu/devplugin.h"
#include "gpu/inventory.h"
#include "gpu/mig.h"
#include "lib/alloc.h"

/* A MIG device as NVML reports it (at start, and after `gpus mig apply`). */
static void mig_from_nvml(gx_gpu_mig_dev *o, const gx_nvml_mig *m)
{
    memset(o, 0, sizeof *o);
    snprintf(o->profile, sizeof o->profile, "%s", m->profile);
    snprintf(o->uuid, sizeof o->uuid, "%s", m->uuid);
    o->start = m->start;
    o->size = m->size;
    o->mem_mib = m->mem_total_mib;
    o->replicas = 1;
    o->gi_id = m->gi_id;
    o->ci_id = m->ci_id;
    o->gr_active = -1;
}

/* A simulated MIG UUID: stable for (GPU, start, profile), so a restart finds the same one. */
static void mig_uuid(const char *gpu, int start, const char *profile, char *out, size_t n)
{
    uint64_t h = 1469598103934665603ULL;
    for (const char *p = gpu; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    for (const char *p = profile; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    h = (h ^ (uint64_t)start) * 1099511628211ULL;
    uint64_t g = h * 0x9E3779B97F4A7C15ULL;
    snprintf(out, n, "MIG-%08x-%04x-4%03x-8%03x-%012llx", (unsigned)(h >> 32), (unsigned)(h >> 16) & 0xffff,
             (unsigned)h & 0xfff, (unsigned)(g >> 52) & 0xfff, (unsigned long long)(g & 0xffffffffffffULL));
}

static const char *label(const json_t *manifest, const char *key)
{
    return json_string_value(json_object_get(json_object_get(json_object_get(manifest, "metadata"), "labels"), key));
}

static gx_gpu_dev *add_dev(gx_gpu_inv *inv)
{
    inv->devs = gx_xgrow(inv->devs, &inv->cap_devs, (size_t)inv->n_devs + 1, sizeof *inv->devs);
    gx_gpu_dev *d = &inv->devs[inv->n_devs++];
    memset(d, 0, sizeof *d);
    d->nvml_index = -1;
    d->util = -1;
    d->gr_active = -1;
    d->replicas = 1;
    return d;
}

static int add_node(gx_gpu_inv *inv, const json_t *manifest, const char *name)
{
    inv->nodes = gx_xgrow(inv->nodes, &inv->cap_nodes, (size_t)inv->n_nodes + 1, sizeof *inv->nodes);
    gx_gpu_node *n = &inv->nodes[inv->n_nodes];
    memset(n, 0, sizeof *n);
    snprintf(n->name, sizeof n->name, "%s", name);
    n->manifest = manifest ? json_deep_copy(manifest) : json_pack("{s:s,s:s,s:{s:s},s:{}}", "apiVersion",
                                                                   "gpuaas.dev/v1alpha1", "kind", "Node", "metadata",
                                                                   "name", name, "spec");
    const char *k = label(manifest, "nvidia.com/device-plugin.config");
    snprintf(n->dp_key, sizeof n->dp_key, "%s", k ? k : inv->dp_default);
    k = label(manifest, "nvidia.com/mig.config");
    snprintf(n->mig_config, sizeof n->mig_config, "%s", k ? k : inv->mig_default);
    return inv->n_nodes++;
}

/* One GPU of a simulated Node: {model, memory, uuid, sharing}. */
static int sim_gpu(gx_gpu_inv *inv, int node, int idx, const json_t *g, const char *f, gx_err *err)
{
    gx_gpu_dev *d = add_dev(inv);
    d->node = node;
    d->index = idx;
    d->minor = idx;
    const char *model = json_string_value(json_object_get(g, "model"));
    const char *u = json_string_value(json_object_get(g, "uuid"));
    char fv[192];
    if (model && strlen(model) >= sizeof d->model)
        return gx_errf(err, 422, gx_err_path(fv, sizeof fv, f, "%s.model", f), "must be no more than %zu characters",
                       sizeof d->model - 1);
    if (u && strlen(u) >= sizeof d->uuid)
        return gx_errf(err, 422, gx_err_path(fv, sizeof fv, f, "%s.uuid", f), "must be no more than %zu characters",
                       sizeof d->uuid - 1);
    snprintf(d->model, sizeof d->model, "%s", model ? model : "GPU");
    snprintf(d->product, sizeof d->product, "%s", d->model);
    const gx_gpu_model *m = gx_gpu_mig_model(d->model);
    if (m) d->pci_id = m->pci_id;
    const json_t *mem = json_object_get(g, "memory");
    int64_t milli = 0;
    char fm[192];
    snprintf(fm, sizeof fm, "%s.memory", f);
    if (mem && gx_quantity_from_json(mem, &milli, fm, err) < 0) return -1;
    d->mem_mib = mem ? milli / 1000 / (1024 * 1024) : m ? m->memory_mib : 0;
    if (u) snprintf(d->uuid, sizeof d->uuid, "%s", u);
    else gx_engine_gpu_uuid(inv->nodes[node].name, idx, d->uuid, sizeof d->uuid);   /* as the engine does */
    snprintf(d->pci_bus_id, sizeof d->pci_bus_id, "00000000:%02X:00.0", 0x17 + idx);
    char fs[192];
    snprintf(fs, sizeof fs, "%s.sharing", f);
    return gx_share_gpu_from_json(json_object_get(g, "sharing"), d->uuid, d->mem_mib, &d->base, fs, err);
}

static int load_sim_node(gx_gpu_inv *inv, const json_t *manifest, size_t which, gx_err *err)
{
    const char *name = json_string_value(json_object_get(json_object_get(manifest, "metadata"), "name"));
    if (!name || !*name) return gx_errf(err, 422, "metadata.name", "inventory node %zu has no metadata.name", which);
    /* what the inventory holds in fixed fields: refused when longer, never cut */
    if (strlen(name) >= sizeof inv->nodes[0].name)
        return gx_errf(err, 422, "metadata.name", "must be no more than %zu characters", sizeof inv->nodes[0].name - 1);
    static const char *const keys[] = {"nvidia.com/device-plugin.config", "nvidia.com/mig.config"};
    for (int k = 0; k < 2; k++)
        if (label(manifest, keys[k]) && strlen(label(manifest, keys[k])) >= sizeof inv->nodes[0].dp_key) {
            char f[96];
            snprintf(f, sizeof f, "metadata.labels[\"%s\"]", keys[k]);
            return gx_errf(err, 422, f, "must be no more than %zu characters", sizeof inv->nodes[0].dp_key - 1);
        }
    int ni = add_node(inv, manifest, name);
    const json_t *gpus = json_object_get(json_object_get(manifest, "spec"), "gpus");
    char f[160];
    if (json_is_array(gpus)) {
        size_t i;
        json_t *g;
        json_array_foreach(gpus, i, g) {
            snprintf(f, sizeof f, "spec.gpus[%zu]", i);
            if (sim_gpu(inv, ni, (int)i, g, f, err)) return -1;
        }
    } else if (json_is_object(gpus)) {
        json_int_t c = json_integer_value(json_object_get(gpus, "count"));
        for (json_int_t i = 0; i < c && i < 4096; i++)
            if (sim_gpu(inv, ni, (int)i, gpus, "spec.gpus", err)) return -1;
    }
    return 0;
}

/* GPM's GRAPHICS_UTIL (DCGM_FI_PROF_GR_ENGINE_ACTIVE) since the previous sample: per
 * MIG instance in MIG mode, else for the GPU. -1 while unmeasured (first sample, no GPM). */
static void gpm_sample(gx_gpu_inv *inv, gx_gpu_dev *d)
{
    double pct;
    if (!d->gpm) return;
    if (d->mig_on) {
        for (int m = 0; m < d->n_mig; m++)
            d->mig[m].gr_active = gx_gpu_nvml_gr_active(inv->nvml, d->nvml_index, (int)d->mig[m].gi_id, &pct) == 1 ? pct : -1;
        return;
    }
    d->gr_active = gx_gpu_nvml_gr_active(inv->nvml, d->nvml_index, -1, &pct) == 1 ? pct : -1;
}

/* The first configured Node lends its name, labels and CPU/memory; NVML gives the GPUs. */
static int load_nvml(gx_gpu_inv *inv, const gx_gpu_config *cfg, gx_err *err)
{
    int count = gx_gpu_nvml_count(inv->nvml, err);
    if (count <= 0) {
        if (count == 0) gx_errf(err, 500, "", "NVML found no GPU");
        return -1;
    }
    const json_t *first = json_array_get(cfg->nodes, 0);
    char host[128] = "localhost";
    gethostname(host, sizeof host - 1);
    const char *name = json_string_value(json_object_get(json_object_get(first, "metadata"), "name"));
    int ni = add_node(inv, first, name ? name : host);
    for (int i = 0; i < count && i < GX_SHARE_MAX_GPUS; i++) {
        gx_nvml_dev nd;
        if (gx_gpu_nvml_query(inv->nvml, i, &nd, err)) return -1;
        gx_gpu_dev *d = add_dev(inv);
        d->node = ni;
        d->index = i;
        d->nvml_index = i;
        d->minor = nd.minor >= 0 ? nd.minor : i;
        snprintf(d->uuid, sizeof d->uuid, "%s", nd.uuid);
        snprintf(d->product, sizeof d->product, "%s", nd.name);
        const gx_gpu_model *m = gx_gpu_mig_model_from_nvml(nd.name, nd.mem_total_mib);
        snprintf(d->model, sizeof d->model, "%s", m ? m->name : nd.name);
        snprintf(d->pci_bus_id, sizeof d->pci_bus_id, "%s", nd.pci_bus_id);
        d->pci_id = nd.pci_id;
        d->mem_mib = nd.mem_total_mib;
        d->mem_used_mib = nd.mem_used_mib;
        d->util = nd.util_gpu;
        d->base.mode = GX_SHARE_EXCLUSIVE;
        d->mig_on = nd.mig_mode == 1;
        for (int k = 0; k < nd.n_mig; k++) mig_from_nvml(&d->mig[d->n_mig++], &nd.mig[k]);
        /* GPM: a first sample now, so the daemon's first sampling tick has a measurement */
        if ((d->gpm = gx_gpu_nvml_gpm_supported(inv->nvml, i))) gpm_sample(inv, d);
    }
    return 0;
}

/* A simulated GPU's MIG layout from its node's mig-parted config. */
static int sim_mig(gx_gpu_inv *inv, gx_gpu_dev *d, const char *config, gx_err *err)
{
    d->mig_on = 0;
    d->n_mig = 0;
    d->mig_config[0] = 0;
    if (!config || !*config) return 0;
    if (!inv->mig_parted)
        return gx_errf(err, 422, "metadata.labels", "asks for mig-parted config %s, but inventory.migConfig names no file", config);
    const gx_gpu_model *m = gx_gpu_mig_model(d->model);
    const char *names[GX_MIG_MAX_PROFILES];
    int counts[GX_MIG_MAX_PROFILES], en = 0;
    gx_gpu_model unknown = {d->model, d->pci_id, d->mem_mib, 0, NULL, 0};
    int n = gx_gpu_mig_config_for(inv->mig_parted, config, d->index, m ? m : &unknown, &en, names, counts, err);
    if (n < 0) return -1;
    if (!en) return 0;
    gx_mig_slot s[GX_MIG_MAX_DEVICES];
    char f[96];
    snprintf(f, sizeof f, "mig-configs.%s.mig-devices", config);
    int k = gx_gpu_mig_fit(m ? m : &unknown, names, counts, n, s, f, err);
    if (k < 0) return -1;
    d->mig_on = 1;
    snprintf(d->mig_config, sizeof d->mig_config, "%s", config);
    for (int i = 0; i < k; i++) {
        gx_gpu_mig_dev *o = &d->mig[d->n_mig++];
        memset(o, 0, sizeof *o);
        snprintf(o->profile, sizeof o->profile, "%s", s[i].p->name);
        mig_uuid(d->uuid, s[i].start, o->profile, o->uuid, sizeof o->uuid);
        o->start = s[i].start;
        o->size = s[i].p->size;
        o->mem_mib = s[i].p->memory_mib;
        o->replicas = 1;
        o->gr_active = -1;
    }
    return 0;
}

/* Mode of one GPU: MIG first (its devices may be time-sliced), else the device-plugin
 * config, else what the Node file says (exclusive or fractional). */
static int resolve_dev(gx_gpu_inv *inv, gx_gpu_dev *d, const gx_dp_config *dp, gx_err *err)
{
    d->mode = d->base.mode;
    d->replicas = d->base.replicas > 0 ? d->base.replicas : 1;
    d->fail_gt1 = d->base.fail_gt1;
    snprintf(d->resource, sizeof d->resource, "%s", d->base.resource[0] ? d->base.resource : "nvidia.com/gpu");
    if (d->mig_on) {
        if (d->base.mode != GX_SHARE_EXCLUSIVE)
            return gx_errf(err, 422, "sharing", "GPU %d (%s) is in MIG mode and cannot also be %s", d->index, d->uuid,
                           gx_share_mode_name(d->base.mode));
        d->mode = GX_SHARE_MIG;
        /* migStrategy: single offers each MIG device as nvidia.com/gpu, none offers nothing */
        const char *strategy = dp->mig_strategy[0] ? dp->mig_strategy : "mixed";
        snprintf(d->mig_strategy, sizeof d->mig_strategy, "%s", strategy);
        for (int m = 0; m < d->n_mig; m++) {
            gx_gpu_mig_dev *o = &d->mig[m];
            char res[64];
            if (!strcmp(strategy, "none")) {
                o->resource[0] = 0;
                o->replicas = 1;
                continue;
            }
            if (!strcmp(strategy, "single")) snprintf(res, sizeof res, "nvidia.com/gpu");
            else snprintf(res, sizeof res, "nvidia.com/mig-%s", o->profile);
            const gx_dp_resource *r = gx_gpu_dp_for_mig(dp, res, d->index, d->uuid, m, o->uuid);
            o->replicas = r ? r->replicas : 1;
            if (r) gx_gpu_dp_offered(dp, r, o->resource, sizeof o->resource);
            else snprintf(o->resource, sizeof o->resource, "%s", res);
            if (r) d->fail_gt1 = dp->fail_gt1;
        }
        return 0;
    }
    const gx_dp_resource *r = gx_gpu_dp_for(dp, "nvidia.com/gpu", d->index, d->uuid);
    if (!r) return 0;
    if (d->base.mode != GX_SHARE_EXCLUSIVE)
        return gx_errf(err, 422, "sharing", "GPU %d (%s) is %s in the Node file and %s by the device-plugin config",
                       d->index, d->uuid, gx_share_mode_name(d->base.mode), gx_gpu_dp_strategy_name(dp->strategy));
    d->mode = dp->strategy == GX_DP_MPS ? GX_SHARE_MPS : GX_SHARE_TIMESLICING;
    d->replicas = r->replicas;
    d->fail_gt1 = dp->fail_gt1;
    gx_gpu_dp_offered(dp, r, d->resource, sizeof d->resource);
    return 0;
}

/* migStrategy single, as the device plugin checks it: every MIG GPU of the node has
 * devices of one profile only, the same on all of them (they are all nvidia.com/gpu,
 * so a pod must not be able to tell them apart). The error names the GPU. */
static int check_single(const gx_gpu_inv *inv, int ni, gx_err *err)
{
    const gx_gpu_dev *first = NULL;
    for (int i = 0; i < inv->n_devs; i++) {
        const gx_gpu_dev *d = &inv->devs[i];
        if (d->node != ni || d->mode != GX_SHARE_MIG) continue;
        if (!d->n_mig)
            return gx_errf(err, 422, "flags.migStrategy", "single: GPU %d (%s) is in MIG mode but has no MIG device",
                           d->index, d->uuid);
        for (int m = 1; m < d->n_mig; m++)
            if (strcmp(d->mig[m].profile, d->mig[0].profile))
                return gx_errf(err, 422, "flags.migStrategy", "single needs one MIG profile per GPU: GPU %d (%s) has %s "
                               "and %s (use migStrategy: mixed, or a single-profile mig-parted config)",
                               d->index, d->uuid, d->mig[0].profile, d->mig[m].profile);
        if (!first) first = d;
        else if (strcmp(first->mig[0].profile, d->mig[0].profile))
            return gx_errf(err, 422, "flags.migStrategy", "single needs the same MIG profile on every MIG GPU of the node: "
                           "GPU %d (%s) has %s, GPU %d has %s", d->index, d->uuid, d->mig[0].profile, first->index,
                           first->mig[0].profile);
    }
    return 0;
}

static int resolve_node(gx_gpu_inv *inv, int ni, gx_err *err)
{
    gx_gpu_node *n = &inv->nodes[ni];
    gx_dp_config dp;
    memset(&dp, 0, sizeof dp);
    if (n->dp_key[0]) {
        const json_t *doc = json_object_get(inv->device_plugin, n->dp_key);
        if (!doc)
            return gx_errf(err, 422, "metadata.labels", "node %s asks for device-plugin config \"%s\", which "
                           "inventory.devicePlugin.configs does not have", n->name, n->dp_key);
        if (gx_gpu_dp_parse(doc, &dp, err)) {
            gx_err_prefix(err, n->dp_key);
            return -1;
        }
    }
    for (int i = 0; i < inv->n_devs; i++) {
        gx_gpu_dev *d = &inv->devs[i];
        if (d->node != ni) continue;
        if (d->nvml_index < 0 && sim_mig(inv, d, n->mig_config, err)) goto bad;
        if (resolve_dev(inv, d, &dp, err)) goto bad;
    }
    if (!strcmp(dp.mig_strategy, "single") && check_single(inv, ni, err)) goto bad;
    return 0;
bad:
    gx_err_wrap(err, "node %s", n->name);
    return -1;
}

gx_gpu_inv *gx_gpu_inventory_open(const gx_gpu_config *cfg, gx_err *err)
{
    gx_gpu_inv *inv = gx_xcalloc(1, sizeof *inv);
    inv->device_plugin = cfg->device_plugin ? json_incref((json_t *)cfg->device_plugin) : NULL;
    inv->mig_parted = cfg->mig_parted ? json_incref((json_t *)cfg->mig_parted) : NULL;
    snprintf(inv->dp_default, sizeof inv->dp_default, "%s", cfg->device_plugin_default ? cfg->device_plugin_default : "");
    snprintf(inv->mig_default, sizeof inv->mig_default, "%s", cfg->mig_default ? cfg->mig_default : "");
    const char *src = cfg->source && *cfg->source ? cfg->source : "simulated";
    snprintf(inv->source, sizeof inv->source, "simulated");
    if (!strcmp(src, "nvml") || !strcmp(src, "auto")) {
        gx_err e;
        gx_err_clear(&e);
        inv->nvml = gx_gpu_nvml_open(cfg->nvml_library, &e);
        if (inv->nvml && load_nvml(inv, cfg, &e) == 0) {
            snprintf(inv->source, sizeof inv->source, "nvml");
        } else {
            snprintf(inv->note, sizeof inv->note, "NVML not used (%s): using the simulated node%s of inventory.nodes",
                     e.msg, json_array_size(cfg->nodes) == 1 ? "" : "s");
            gx_gpu_nvml_close(inv->nvml);
            inv->nvml = NULL;
            for (int i = 0; i < inv->n_nodes; i++) json_decref(inv->nodes[i].manifest);
            inv->n_nodes = inv->n_devs = 0;
        }
    }
    if (!inv->nvml) {
        size_t i;
        json_t *x;
        json_array_foreach(cfg->nodes, i, x) if (load_sim_node(inv, x, i, err)) goto bad;
    }
    for (int i = 0; i < inv->n_nodes; i++)
        if (resolve_node(inv, i, err)) goto bad;
    return inv;
bad:
    gx_gpu_inventory_free(inv);
    return NULL;
}

void gx_gpu_inventory_free(gx_gpu_inv *inv)
{
    if (!inv) return;
    for (int i = 0; i < inv->n_nodes; i++) json_decref(inv->nodes[i].manifest);
    free(inv->nodes);
    free(inv->devs);
    json_decref(inv->device_plugin);
    json_decref(inv->mig_parted);
    gx_gpu_nvml_close(inv->nvml);
    free(inv);
}

static json_t *sharing_json(const gx_gpu_dev *d)
{
    json_t *s = json_pack("{s:s}", "mode", gx_share_mode_name(d->mode));
    if (d->mode == GX_SHARE_TIMESLICING || d->mode == GX_SHARE_MPS) {
        json_object_set_new(s, "replicas", json_integer(d->replicas));
        json_object_set_new(s, "resource", json_string(d->resource));
        json_object_set_new(s, "failRequestsGreaterThanOne", json_boolean(d->fail_gt1));
    }
    if (d->mode == GX_SHARE_MIG) {
        json_t *a = json_array();
        char mem[32];
        for (int m = 0; m < d->n_mig; m++) {
            const gx_gpu_mig_dev *o = &d->mig[m];
            if (!o->resource[0]) continue;   /* migStrategy none: not offered */
            snprintf(mem, sizeof mem, "%lldMi", (long long)o->mem_mib);
            json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:i,s:i,s:s,s:i}", "profile", o->profile, "uuid", o->uuid,
                                               "resource", o->resource, "start", o->start < 0 ? 0 : o->start, "size",
                                               o->size < 1 ? 1 : o->size, "memory", mem, "replicas", o->replicas));
        }
        json_object_set_new(s, "migDevices", a);
        json_object_set_new(s, "failRequestsGreaterThanOne", json_boolean(d->fail_gt1));
    }
    return s;
}

/* The labels NVIDIA's GPU Feature Discovery puts on a node, so Kueue flavors can pick
 * nodes by sharing (nodeLabels: {nvidia.com/gpu.sharing-strategy: mps}). Labels the Node
 * file sets itself win. */
static void gfd_labels(const gx_gpu_inv *inv, int ni, json_t *m)
{
    json_t *md = json_object_get(m, "metadata"), *labels = json_object_get(md, "labels");
    if (!labels) json_object_set_new(md, "labels", labels = json_object());
    const char *strategy = "none", *product = "", *mig_strategy = NULL;
    int replicas = 1, count = 0, mig = 0;
    for (int i = 0; i < inv->n_devs; i++) {
        const gx_gpu_dev *d = &inv->devs[i];
        if (d->node != ni) continue;
        count++;
        if (!*product) product = d->model;
        mig |= d->mode == GX_SHARE_MIG;
        if (d->mode == GX_SHARE_MIG) mig_strategy = d->mig_strategy;
        if (d->mode == GX_SHARE_TIMESLICING || d->mode == GX_SHARE_MPS) {
            strategy = d->mode == GX_SHARE_MPS ? "mps" : "time-slicing";
            replicas = d->replicas;
        }
    }
    char buf[96];
    snprintf(buf, sizeof buf, "%s%s", product, strcmp(strategy, "none") ? "-SHARED" : "");
    const char *kv[][2] = {{"nvidia.com/gpu.sharing-strategy", strategy}, {"nvidia.com/gpu.product", buf},
                           {"nvidia.com/mig.strategy", mig ? mig_strategy : NULL}};
    for (size_t k = 0; k < sizeof kv / sizeof kv[0]; k++)
        if (kv[k][1] && !json_object_get(labels, kv[k][0])) json_object_set_new(labels, kv[k][0], json_string(kv[k][1]));
    if (!json_object_get(labels, "nvidia.com/gpu.count")) {
        snprintf(buf, sizeof buf, "%d", count);
        json_object_set_new(labels, "nvidia.com/gpu.count", json_string(buf));
    }
    if (!json_object_get(labels, "nvidia.com/gpu.replicas")) {
        snprintf(buf, sizeof buf, "%d", replicas);
        json_object_set_new(labels, "nvidia.com/gpu.replicas", json_string(buf));
    }
}

json_t *gx_gpu_inventory_nodes(const gx_gpu_inv *inv)
{
    json_t *out = json_array();
    for (int ni = 0; ni < inv->n_nodes; ni++) {
        const gx_gpu_node *n = &inv->nodes[ni];
        int shared = 0;
        for (int i = 0; i < inv->n_devs; i++) shared |= inv->devs[i].node == ni && inv->devs[i].mode != GX_SHARE_EXCLUSIVE;
        if (!shared && !inv->nvml) {   /* unchanged: the engine sees exactly the configured Node */
            json_array_append(out, n->manifest);
            continue;
        }
        json_t *m = json_deep_copy(n->manifest), *spec = json_object_get(m, "spec");
        if (!spec) json_object_set_new(m, "spec", spec = json_object());
        json_t *gpus = json_array();
        char mem[32];
        for (int i = 0; i < inv->n_devs; i++) {
            const gx_gpu_dev *d = &inv->devs[i];
            if (d->node != ni) continue;
            snprintf(mem, sizeof mem, "%lldMi", (long long)d->mem_mib);
            json_t *g = json_pack("{s:s,s:s,s:s}", "model", d->model, "memory", mem, "uuid", d->uuid);
            if (d->mode != GX_SHARE_EXCLUSIVE) json_object_set_new(g, "sharing", sharing_json(d));
            json_array_append_new(gpus, g);
        }
        json_object_set_new(spec, "gpus", gpus);
        gfd_labels(inv, ni, m);
        json_array_append_new(out, m);
    }
    return out;
}

gx_gpu_dev *gx_gpu_inventory_find(gx_gpu_inv *inv, const char *uuid)
{
    for (int i = 0; inv && uuid && i < inv->n_devs; i++)
        if (!strcmp(inv->devs[i].uuid, uuid)) return &inv->devs[i];
    return NULL;
}

gx_gpu_dev *gx_gpu_inventory_owner(gx_gpu_inv *inv, const char *uuid, int *mig)
{
    *mig = -1;
    for (int i = 0; inv && uuid && i < inv->n_devs; i++) {
        gx_gpu_dev *d = &inv->devs[i];
        if (!strcmp(d->uuid, uuid)) return d;
        for (int m = 0; m < d->n_mig; m++)
            if (!strcmp(d->mig[m].uuid, uuid)) { *mig = m; return d; }
    }
    return NULL;
}

/* Simulated figures: what is allocated is what is used (a whole GPU busy at 100 %). */
static void sim_figures(gx_gpu_inv *inv, const json_t *engine_nodes)
{
    for (int i = 0; i < inv->n_devs; i++) {
        gx_gpu_dev *d = &inv->devs[i];
        if (d->nvml_index >= 0) continue;
        d->util = 0;
        d->mem_used_mib = 0;
        for (int m = 0; m < d->n_mig; m++) d->mig[m].mem_used_mib = 0;
    }
    size_t a, b;
    json_t *n, *g;
    json_array_foreach(engine_nodes, a, n) json_array_foreach(json_object_get(n, "gpus"), b, g) {
        gx_gpu_dev *d = gx_gpu_inventory_find(inv, json_string_value(json_object_get(g, "uuid")));
        if (!d || d->nvml_index >= 0) continue;
        const json_t *sh = json_object_get(g, "sharing");
        if (sh) {
            d->util = (int)json_integer_value(json_object_get(sh, "coresAllocated"));
            d->mem_used_mib = json_integer_value(json_object_get(sh, "memoryAllocatedMiB"));
            size_t k;
            json_t *sl;
            json_array_foreach(json_object_get(sh, "slices"), k, sl) {
                int idx = (int)json_integer_value(json_object_get(sl, "index"));
                if (d->mode == GX_SHARE_MIG && idx < d->n_mig && json_array_size(json_object_get(sl, "holders")))
                    d->mig[idx].mem_used_mib = d->mig[idx].mem_mib;
            }
        } else if (json_array_size(json_object_get(g, "workloads"))) {
            d->util = 100;
            d->mem_used_mib = d->mem_mib;
        }
        if (d->util > 100) d->util = 100;
    }
}

void gx_gpu_inventory_refresh(gx_gpu_inv *inv, const json_t *engine_nodes)
{
    if (inv) sim_figures(inv, engine_nodes);
}

void gx_gpu_inventory_sample(gx_gpu_inv *inv, int64_t now_ms, const json_t *engine_nodes)
{
    if (!inv) return;
    sim_figures(inv, engine_nodes);
    for (int i = 0; i < inv->n_devs; i++) {
        gx_gpu_dev *d = &inv->devs[i];
        if (d->nvml_index >= 0) {
            gx_nvml_dev nd;
            memset(&nd, 0, sizeof nd);
            nd.index = d->nvml_index;
            gx_err e;
            if (gx_gpu_nvml_sample(inv->nvml, &nd, &e) == 0) {
                d->util = nd.util_gpu;
                d->mem_used_mib = nd.mem_used_mib;
                d->n_procs = nd.n_procs;
                memcpy(d->procs, nd.procs, sizeof d->procs);
            }
            gpm_sample(inv, d);
        }
        d->hist[d->hist_pos] = (gx_gpu_sample){now_ms, (int16_t)d->util, d->mem_used_mib};
        d->hist_pos = (d->hist_pos + 1) % GX_GPU_HIST;
        if (d->hist_n < GX_GPU_HIST) d->hist_n++;
    }
    inv->last_sample_ms = now_ms;
}

static int mig_apply_node(gx_gpu_inv *inv, int ni, const char *name, json_t **changed, gx_err *err);

int gx_gpu_inventory_mig_apply(gx_gpu_inv *inv, const char *node, const char *name, const json_t *doc,
                               json_t **changed, gx_err *err)
{
    int ni = -1;
    for (int i = 0; i < inv->n_nodes; i++)
        if (!strcmp(inv->nodes[i].name, node)) ni = i;
    if (ni < 0) return gx_errf(err, 404, "node", "no node %s", node);
    /* A file sent with the request replaces the configured one only when it applies. */
    json_t *prev = inv->mig_parted;
    if (doc) {
        if (gx_gpu_mig_config_check(doc, err)) return -1;
        inv->mig_parted = json_incref((json_t *)doc);
    }
    int rc = mig_apply_node(inv, ni, name, changed, err);
    if (doc && rc) {
        json_decref(inv->mig_parted);
        inv->mig_parted = prev;
    } else if (doc) {
        json_decref(prev);
    }
    return rc;
}

static int mig_apply_node(gx_gpu_inv *inv, int ni, const char *name, json_t **changed, gx_err *err)
{
    if (!inv->mig_parted) return gx_errf(err, 422, "config", "no mig-parted file: set inventory.migConfig or send one");
    if (!json_object_get(json_object_get(inv->mig_parted, "mig-configs"), name))
        return gx_errf(err, 422, "config", "the mig-parted file has no config named %s", name);
    /* Plan every GPU first, so a layout that does not fit changes nothing. */
    gx_mig_slot plan[GX_SHARE_MAX_GPUS][GX_MIG_MAX_DEVICES];
    int nplan[GX_SHARE_MAX_GPUS], en[GX_SHARE_MAX_GPUS];
    for (int i = 0; i < inv->n_devs; i++) {
        gx_gpu_dev *d = &inv->devs[i];
        if (d->node != ni || d->index >= GX_SHARE_MAX_GPUS) continue;
        const gx_gpu_model *m = gx_gpu_mig_model(d->model);
        gx_gpu_model unknown = {d->model, d->pci_id, d->mem_mib, 0, NULL, 0};
        const char *names[GX_MIG_MAX_PROFILES];
        int counts[GX_MIG_MAX_PROFILES];
        int n = gx_gpu_mig_config_for(inv->mig_parted, name, d->index, m ? m : &unknown, &en[d->index], names, counts, err);
        if (n < 0) return -1;
        nplan[d->index] = 0;
        if (en[d->index]) {
            char f[96];
            snprintf(f, sizeof f, "GPU %d", d->index);
            if ((nplan[d->index] = gx_gpu_mig_fit(m ? m : &unknown, names, counts, n, plan[d->index], f, err)) < 0) return -1;
        }
    }
    *changed = json_array();
    for (int i = 0; i < inv->n_devs; i++) {
        gx_gpu_dev *d = &inv->devs[i];
        if (d->node != ni || d->index >= GX_SHARE_MAX_GPUS) continue;
        if (d->nvml_index >= 0) {
            gx_nvml_dev nd;
            if (gx_gpu_nvml_mig_apply(inv->nvml, d->nvml_index, en[d->index], plan[d->index], nplan[d->index], err) ||
                gx_gpu_nvml_query(inv->nvml, d->nvml_index, &nd, err)) {
                json_decref(*changed);
                *changed = NULL;
                return -1;
            }
            d->mig_on = nd.mig_mode == 1;
            d->n_mig = 0;
            for (int k = 0; k < nd.n_mig; k++) mig_from_nvml(&d->mig[d->n_mig++], &nd.mig[k]);
            snprintf(d->mig_config, sizeof d->mig_config, "%s", name);
        }
        json_array_append_new(*changed, json_pack("{s:i,s:s,s:b,s:i}", "index", d->index, "uuid", d->uuid, "migEnabled",
                                                  en[d->index], "devices", nplan[d->index]));
    }
    /* simulated GPUs take the layout from the node's label, which now names `name`; on a
     * conflict (e.g. MIG on a fractional GPU) the node goes back to how it was */
    gx_gpu_dev *saved = gx_xreallocarray(NULL, (size_t)inv->n_devs, sizeof *saved);
    memcpy(saved, inv->devs, (size_t)inv->n_devs * sizeof *saved);
    gx_gpu_node old = inv->nodes[ni];
    old.manifest = json_deep_copy(inv->nodes[ni].manifest);
    snprintf(inv->nodes[ni].mig_config, sizeof inv->nodes[ni].mig_config, "%s", name);
    json_t *labels = json_object_get(json_object_get(inv->nodes[ni].manifest, "metadata"), "labels");
    if (!labels) json_object_set_new(json_object_get(inv->nodes[ni].manifest, "metadata"), "labels", labels = json_object());
    json_object_set_new(labels, "nvidia.com/mig.config", json_string(name));
    int rc = resolve_node(inv, ni, err);
    if (rc) {
        json_decref(*changed);
        *changed = NULL;
        memcpy(inv->devs, saved, (size_t)inv->n_devs * sizeof *saved);
        json_decref(inv->nodes[ni].manifest);
        inv->nodes[ni] = old;
    } else {
        json_decref(old.manifest);
    }
    free(saved);
    return rc;
}
