/* gpu/devplugin: NVIDIA device-plugin sharing config (see devplugin.h).
 * Owns: parse + check of one config document; lookups by device.
 * Must not: read files (the caller hands in the parsed document) or keep state. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu/devplugin.h"

const char *gx_gpu_dp_strategy_name(int strategy)
{
    return strategy == GX_DP_MPS ? "mps" : strategy == GX_DP_TIMESLICING ? "time-slicing" : "none";
}

static int known_key(const char *k, const char *const *known)
{
    for (int i = 0; known[i]; i++)
        if (!strcmp(k, known[i])) return 1;
    return 0;
}

static int parse_devices(const json_t *v, gx_dp_resource *r, const char *f, gx_err *err)
{
    r->all = 0;
    if (!v || (json_is_string(v) && !strcmp(json_string_value(v), "all"))) { r->all = 1; return 0; }
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 1 || json_integer_value(v) > 4096)
            return gx_errf(err, 422, f, "a device count must be 1 or more");
        r->first_n = (int)json_integer_value(v);
        return 0;
    }
    if (!json_is_array(v) || !json_array_size(v))
        return gx_errf(err, 422, f, "must be \"all\", a count, or a list of GPU indices or UUIDs");
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) {
        if (r->n_devs == GX_DP_MAX_DEVS) return gx_errf(err, 422, f, "more than %d devices listed", GX_DP_MAX_DEVS);
        if (json_is_integer(x) && json_integer_value(x) >= 0)
            snprintf(r->devs[r->n_devs++], sizeof r->devs[0], "%lld", (long long)json_integer_value(x));
        else if (json_is_string(x) && json_string_length(x) && json_string_length(x) < sizeof r->devs[0])
            snprintf(r->devs[r->n_devs++], sizeof r->devs[0], "%s", json_string_value(x));
        else
            return gx_errf(err, 422, f, "must be \"all\", a count, or a list of GPU indices or UUIDs");
    }
    return 0;
}

static int parse_resource(const json_t *x, gx_dp_resource *r, int mps, const char *f, gx_err *err)
{
    static const char *const known[] = {"name", "rename", "replicas", "devices", NULL};
    char g[224];
    memset(r, 0, sizeof *r);
    if (!json_is_object(x)) return gx_errf(err, 422, f, "must be {name, replicas, devices}");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)x, k, v) if (!known_key(k, known))
        return gx_errf(err, 422, gx_err_path(g, sizeof g, f, "%s.%s", f, k),
                       "unknown field (known: name, rename, replicas, devices)");
    const char *name = json_string_value(json_object_get(x, "name"));
    const char *gf = gx_err_path(g, sizeof g, f, "%s.name", f);
    if (!name || !*name) return gx_errf(err, 422, gf, "name is required (nvidia.com/gpu or nvidia.com/mig-<profile>)");
    if (strcmp(name, "nvidia.com/gpu") && strncmp(name, "nvidia.com/mig-", 15))
        return gx_errf(err, 422, gf, "%s cannot be shared: only nvidia.com/gpu and nvidia.com/mig-<profile>", name);
    if (mps && !strncmp(name, "nvidia.com/mig-", 15))
        return gx_errf(err, 422, gf, "MPS cannot share a MIG device (%s); use timeSlicing, or MPS on full GPUs", name);
    if (strlen(name) >= sizeof r->name)
        return gx_errf(err, 422, gf, "must be at most %zu characters", sizeof r->name - 1);
    snprintf(r->name, sizeof r->name, "%s", name);
    const json_t *rn = json_object_get(x, "rename");
    if (rn) {
        if (!json_is_string(rn) || !json_string_length(rn) || json_string_length(rn) >= sizeof r->rename)
            return gx_errf(err, 422, gx_err_path(g, sizeof g, f, "%s.rename", f), "must be a resource name of at most %zu "
                           "characters", sizeof r->rename - 1);
        snprintf(r->rename, sizeof r->rename, "%s", json_string_value(rn));
    }
    const json_t *rep = json_object_get(x, "replicas");
    gf = gx_err_path(g, sizeof g, f, "%s.replicas", f);
    if (!json_is_integer(rep)) return gx_errf(err, 422, gf, "replicas is required: how many workloads share each device");
    if (json_integer_value(rep) < 1)
        return gx_errf(err, 422, gf, "replicas must be at least 1 (got %lld)", (long long)json_integer_value(rep));
    int cap = mps ? GX_DP_MPS_MAX_CLIENTS : 64;
    if (json_integer_value(rep) > cap)
        return gx_errf(err, 422, gf, "%s allows at most %d replicas per device (got %lld)", mps ? "MPS" : "time-slicing",
                       cap, (long long)json_integer_value(rep));
    r->replicas = (int)json_integer_value(rep);
    return parse_devices(json_object_get(x, "devices"), r, gx_err_path(g, sizeof g, f, "%s.devices", f), err);
}

static int parse_section(const json_t *s, gx_dp_config *c, int mps, const char *f, gx_err *err)
{
    static const char *const known[] = {"renameByDefault", "failRequestsGreaterThanOne", "resources", NULL};
    char g[224];
    if (!json_is_object(s)) return gx_errf(err, 422, f, "must be {renameByDefault, failRequestsGreaterThanOne, resources}");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)s, k, v) if (!known_key(k, known))
        return gx_errf(err, 422, gx_err_path(g, sizeof g, f, "%s.%s", f, k),
                       "unknown field (known: renameByDefault, failRequestsGreaterThanOne, resources)");
    const json_t *rb = json_object_get(s, "renameByDefault"), *fg = json_object_get(s, "failRequestsGreaterThanOne");
    snprintf(g, sizeof g, "%s.renameByDefault", f);
    if (rb && !json_is_boolean(rb)) return gx_errf(err, 422, g, "must be true or false");
    snprintf(g, sizeof g, "%s.failRequestsGreaterThanOne", f);
    if (fg && !json_is_boolean(fg)) return gx_errf(err, 422, g, "must be true or false");
    const json_t *res = json_object_get(s, "resources");
    snprintf(g, sizeof g, "%s.resources", f);
    if (!json_is_array(res) || !json_array_size(res))
        return gx_errf(err, 422, g, "must list at least one {name, replicas}");
    if (json_array_size(res) > GX_DP_MAX_RES) return gx_errf(err, 422, g, "at most %d resources", GX_DP_MAX_RES);
    gx_dp_config tmp;
    memset(&tmp, 0, sizeof tmp);
    size_t i;
    json_t *x;
    int replicated = 0;
    json_array_foreach(res, i, x) {
        snprintf(g, sizeof g, "%s.resources[%zu]", f, i);
        if (parse_resource(x, &tmp.res[tmp.n_res], mps, g, err)) return -1;
        replicated |= tmp.res[tmp.n_res++].replicas > 1;
    }
    /* As the plugin: the section only counts when some resource has replicas > 1. */
    if (!replicated) return 0;
    memcpy(c->res, tmp.res, sizeof c->res);
    c->n_res = tmp.n_res;
    c->strategy = mps ? GX_DP_MPS : GX_DP_TIMESLICING;
    c->rename_by_default = json_is_true(rb);
    c->fail_gt1 = mps || json_is_true(fg);   /* MPS forces it (plugin v0.15) */
    return 0;
}

int gx_gpu_dp_parse(const json_t *doc, gx_dp_config *c, gx_err *err)
{
    static const char *const known[] = {"version", "flags", "resources", "sharing", "imex", NULL};
    memset(c, 0, sizeof *c);
    /* "" = not set: MIG devices are offered mixed (the GPU Operator's usual choice) */
    if (!json_is_object(doc)) return gx_errf(err, 422, "", "a device-plugin config is a mapping (version: v1, sharing: ...)");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)doc, k, v) if (!known_key(k, known))
        return gx_errf(err, 422, k, "unknown field of a device-plugin config (known: version, flags, resources, sharing, imex)");
    const char *ver = json_string_value(json_object_get(doc, "version"));
    if (!ver || strcmp(ver, "v1")) return gx_errf(err, 422, "version", "device-plugin configs are version: v1");
    const char *ms = json_string_value(json_object_get(json_object_get(doc, "flags"), "migStrategy"));
    if (ms) {
        if (strcmp(ms, "none") && strcmp(ms, "single") && strcmp(ms, "mixed"))
            return gx_errf(err, 422, "flags.migStrategy", "must be none, single or mixed");
        snprintf(c->mig_strategy, sizeof c->mig_strategy, "%s", ms);
    }
    const json_t *sh = json_object_get(doc, "sharing");
    if (!sh) return 0;
    if (!json_is_object(sh)) return gx_errf(err, 422, "sharing", "must be {timeSlicing: ...} or {mps: ...}");
    json_object_foreach((json_t *)sh, k, v) if (strcmp(k, "timeSlicing") && strcmp(k, "mps")) {
        char g[96];
        return gx_errf(err, 422, gx_err_path(g, sizeof g, "sharing", "sharing.%s", k),
                       "unknown sharing strategy (known: timeSlicing, mps)");
    }
    const json_t *ts = json_object_get(sh, "timeSlicing"), *mps = json_object_get(sh, "mps");
    if (ts && parse_section(ts, c, 0, "sharing.timeSlicing", err)) return -1;
    /* mps wins over timeSlicing, as in the plugin's SharingStrategy() */
    if (mps) {
        gx_dp_config m;
        memset(&m, 0, sizeof m);
        if (parse_section(mps, &m, 1, "sharing.mps", err)) return -1;
        if (m.strategy) {
            snprintf(m.mig_strategy, sizeof m.mig_strategy, "%s", c->mig_strategy);
            *c = m;
        }
    }
    return 0;
}

const gx_dp_resource *gx_gpu_dp_for(const gx_dp_config *c, const char *resource, int index,
                                    const char *uuid)
{
    if (!c || c->strategy == GX_DP_NONE) return NULL;
    char idx[16];
    snprintf(idx, sizeof idx, "%d", index);
    for (int i = 0; i < c->n_res; i++) {
        const gx_dp_resource *r = &c->res[i];
        if (strcmp(r->name, resource)) continue;
        int hit = r->all || (r->first_n > 0 && index < r->first_n);
        for (int d = 0; d < r->n_devs && !hit; d++) hit = !strcmp(r->devs[d], idx) || (uuid && !strcmp(r->devs[d], uuid));
        if (hit) return r;
    }
    return NULL;
}

const char *gx_gpu_dp_offered(const gx_dp_config *c, const gx_dp_resource *r, char *out, size_t n)
{
    if (r->rename[0]) snprintf(out, n, "%s", r->rename);
    else if (c->rename_by_default) snprintf(out, n, "%s.shared", r->name);
    else snprintf(out, n, "%s", r->name);
    return out;
}
