/* gpu/devplugin: NVIDIA device-plugin sharing config (see devplugin.h).
 * Owns: parse + check of one config document; lookups by device.
 * Must not: read files (the caller hands in the parsed document) or keep state. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/share.h"
#include "gpu/devplugin.h"
#include "lib/k8sname.h"

/* what the sharing model can hold is what the config may ask for */
_Static_assert(GX_DP_MAX_REPLICAS == GX_SHARE_MAX_REPLICAS, "time-slicing cap differs from the sharing model's");

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

/* Is s hex digits and dashes in the 8-4-4-4-12 form of a UUID (as google/uuid parses it)? */
static int is_uuid36(const char *s)
{
    if (strlen(s) != 36) return 0;
    for (int i = 0; i < 36; i++) {
        int dash = i == 8 || i == 13 || i == 18 || i == 23;
        if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i])) return 0;
    }
    return 1;
}

/* Digits only, as strconv.ParseUint: 0 .. 2^31-1 here; -1 when not. */
static int parse_index(const char *s, size_t len)
{
    if (!len || len > 9) return -1;
    int v = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i])) return -1;
        v = v * 10 + (s[i] - '0');
    }
    return v;
}

/* A UUID as the plugin accepts it: GPU-<uuid>, MIG-<uuid>, or MIG-GPU-<uuid>/<gi>/<ci>. */
static int is_device_uuid(const char *s)
{
    if (!strncmp(s, "GPU-", 4)) return is_uuid36(s + 4);
    if (strncmp(s, "MIG-", 4)) return 0;
    if (is_uuid36(s + 4)) return 1;
    if (strncmp(s + 4, "GPU-", 4) || strlen(s) < 8 + 36 + 4) return 0;
    char u[37];
    memcpy(u, s + 8, 36);
    u[36] = 0;
    const char *gi = s + 8 + 36, *ci;
    if (!is_uuid36(u) || *gi != '/' || !(ci = strchr(gi + 1, '/'))) return 0;
    return parse_index(gi + 1, (size_t)(ci - gi - 1)) >= 0 && parse_index(ci + 1, strlen(ci + 1)) >= 0;
}

/* One entry of a devices list, as the plugin reads it: a non-negative integer, or a string
 * that is a GPU index, a MIG index ("0:1") or a UUID; anything else is refused, naming it. */
static int parse_dev(const json_t *x, gx_dp_dev *d, const char *f, gx_err *err)
{
    memset(d, 0, sizeof *d);
    if (json_is_integer(x) && json_integer_value(x) >= 0 && json_integer_value(x) <= 999999999) {
        d->kind = GX_DP_DEV_INDEX;
        d->gpu = (int)json_integer_value(x);
        return 0;
    }
    const char *s = json_string_value(x), *colon = s ? strchr(s, ':') : NULL;
    if (s && !colon && parse_index(s, strlen(s)) >= 0) {
        d->kind = GX_DP_DEV_INDEX;
        d->gpu = parse_index(s, strlen(s));
        return 0;
    }
    if (s && colon && parse_index(s, (size_t)(colon - s)) >= 0 && parse_index(colon + 1, strlen(colon + 1)) >= 0) {
        d->kind = GX_DP_DEV_MIG_INDEX;
        d->gpu = parse_index(s, (size_t)(colon - s));
        d->mig = parse_index(colon + 1, strlen(colon + 1));
        return 0;
    }
    if (s && strlen(s) < sizeof d->uuid && is_device_uuid(s)) {
        d->kind = GX_DP_DEV_UUID;
        snprintf(d->uuid, sizeof d->uuid, "%s", s);
        return 0;
    }
    char shown[64];
    if (s) snprintf(shown, sizeof shown, "\"%.48s%s\"", s, strlen(s) > 48 ? "..." : "");
    else if (json_is_integer(x)) snprintf(shown, sizeof shown, "%lld", (long long)json_integer_value(x));
    else snprintf(shown, sizeof shown, "a %s", json_is_object(x) ? "mapping" : json_is_array(x) ? "list" : "non-string");
    return gx_errf(err, 422, f, "%s is not a device: use a GPU index (0), a MIG index (0:1), or a UUID "
                   "(GPU-<uuid>, MIG-<uuid>)", shown);
}

static int parse_devices(const json_t *v, gx_dp_resource *r, const char *f, gx_err *err)
{
    static const char shape[] = "must be \"all\", a count, or a list of GPU indices, MIG indices (0:1) or UUIDs";
    r->all = 0;
    if (!v) { r->all = 1; return 0; }
    if (json_is_string(v)) {
        if (strcmp(json_string_value(v), "all")) return gx_errf(err, 422, f, "%s (got \"%s\")", shape, json_string_value(v));
        r->all = 1;
        return 0;
    }
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 1 || json_integer_value(v) > 4096)
            return gx_errf(err, 422, f, "a count of devices must be from 1 to 4096 (got %lld)",
                           (long long)json_integer_value(v));
        r->first_n = (int)json_integer_value(v);
        return 0;
    }
    if (!json_is_array(v) || !json_array_size(v)) return gx_errf(err, 422, f, "%s", shape);
    size_t i;
    json_t *x;
    char g[224];
    json_array_foreach(v, i, x) {
        if (r->n_devs == GX_DP_MAX_DEVS) return gx_errf(err, 422, f, "more than %d devices listed", GX_DP_MAX_DEVS);
        if (parse_dev(x, &r->devs[r->n_devs++], gx_err_path(g, sizeof g, f, "%s[%zu]", f, i), err)) return -1;
    }
    return 0;
}

/* A resource name as the plugin's NewResourceName takes it: "x" means nvidia.com/x; the
 * whole name at most 63 characters; what follows nvidia.com/ a DNS-1123 subdomain. */
static int resource_name(const char *in, char out[64], const char *f, gx_err *err)
{
    char full[320];
    if (!strchr(in, '/')) snprintf(full, sizeof full, "nvidia.com/%.300s", in);
    else if (strncmp(in, "nvidia.com/", 11))
        return gx_errf(err, 422, f, "\"%.64s\" is not an nvidia.com/ resource name", in);
    else snprintf(full, sizeof full, "%.300s", in);
    if (strlen(full) > 63)
        return gx_errf(err, 422, f, "a resource name must be 63 characters or less (\"%.64s...\")", full);
    char buf[GX_K8S_PROBLEM_MAX];
    const char *why = gx_k8s_subdomain_problem(full + 11, GX_K8S_SUBDOMAIN_MAX, buf, sizeof buf);
    if (why) return gx_errf(err, 422, f, "\"%s\" is not a valid resource name: %s", full, why);
    snprintf(out, 64, "%s", full);
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
    if (resource_name(name, r->name, gf, err)) return -1;
    if (strcmp(r->name, "nvidia.com/gpu") && strncmp(r->name, "nvidia.com/mig-", 15))
        return gx_errf(err, 422, gf, "%s cannot be shared: only nvidia.com/gpu and nvidia.com/mig-<profile>", r->name);
    if (mps && !strncmp(r->name, "nvidia.com/mig-", 15))
        return gx_errf(err, 422, gf, "MPS cannot share a MIG device (%s); use timeSlicing, or MPS on full GPUs", r->name);
    const json_t *rn = json_object_get(x, "rename");
    if (rn) {
        gf = gx_err_path(g, sizeof g, f, "%s.rename", f);
        if (!json_is_string(rn) || !json_string_length(rn))
            return gx_errf(err, 422, gf, "must be a resource name (nvidia.com/<name>)");
        if (resource_name(json_string_value(rn), r->rename, gf, err)) return -1;
    }
    const json_t *rep = json_object_get(x, "replicas");
    gf = gx_err_path(g, sizeof g, f, "%s.replicas", f);
    if (!json_is_integer(rep)) return gx_errf(err, 422, gf, "replicas is required: how many workloads share each device");
    /* as the plugin: a resource that is listed is shared, so 1 is a mistake, not "off" */
    if (json_integer_value(rep) < 2)
        return gx_errf(err, 422, gf, "replicas must be >= 2 (got %lld)",
                       (long long)json_integer_value(rep));
    int cap = mps ? GX_DP_MPS_MAX_CLIENTS : GX_DP_MAX_REPLICAS;
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
    size_t i;
    json_t *x;
    json_array_foreach(res, i, x) {
        snprintf(g, sizeof g, "%s.resources[%zu]", f, i);
        if (parse_resource(x, &c->res[c->n_res], mps, g, err)) return -1;
        c->n_res++;
    }
    c->strategy = mps ? GX_DP_MPS : GX_DP_TIMESLICING;
    c->rename_by_default = json_is_true(rb);
    /* MPS: true when not set (the plugin's conservative default), an explicit false is
     * honoured (plugin PR #1762); time-slicing: false when not set. */
    c->fail_gt1 = fg ? json_is_true(fg) : mps;
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

/* Does entry d name this device? mig < 0: the GPU itself. A MIG device is also named by
 * its GPU's index or UUID (every MIG device of that GPU), as gpuaas always did. */
static int dev_names(const gx_dp_dev *d, int index, const char *uuid, int mig, const char *mig_uuid)
{
    switch (d->kind) {
    case GX_DP_DEV_INDEX: return d->gpu == index;
    case GX_DP_DEV_MIG_INDEX: return mig >= 0 && d->gpu == index && d->mig == mig;
    case GX_DP_DEV_UUID: return (uuid && !strcmp(d->uuid, uuid)) || (mig >= 0 && mig_uuid && !strcmp(d->uuid, mig_uuid));
    }
    return 0;
}

const gx_dp_resource *gx_gpu_dp_for_mig(const gx_dp_config *c, const char *resource, int index,
                                        const char *uuid, int mig, const char *mig_uuid)
{
    if (!c || c->strategy == GX_DP_NONE) return NULL;
    for (int i = 0; i < c->n_res; i++) {
        const gx_dp_resource *r = &c->res[i];
        if (strcmp(r->name, resource)) continue;
        int hit = r->all || (r->first_n > 0 && index < r->first_n);
        for (int d = 0; d < r->n_devs && !hit; d++) hit = dev_names(&r->devs[d], index, uuid, mig, mig_uuid);
        if (hit) return r;
    }
    return NULL;
}

const gx_dp_resource *gx_gpu_dp_for(const gx_dp_config *c, const char *resource, int index,
                                    const char *uuid)
{
    return gx_gpu_dp_for_mig(c, resource, index, uuid, -1, NULL);
}

const char *gx_gpu_dp_offered(const gx_dp_config *c, const gx_dp_resource *r, char *out, size_t n)
{
    if (r->rename[0]) snprintf(out, n, "%s", r->rename);
    else if (c->rename_by_default) snprintf(out, n, "%s.shared", r->name);
    else snprintf(out, n, "%s", r->name);
    return out;
}
