/* core/share_json: the JSON side of core/share: a Node's GPU `sharing` object in, and the
 * per-GPU view (mode, slices with their holders, allocation) out.
 *
 *   spec.gpus[i].sharing:
 *     {mode: exclusive | timeSlicing | mps | fractional | mig,
 *      replicas: N, resource: nvidia.com/gpu.shared, failRequestsGreaterThanOne: bool,
 *      migDevices: [{profile, uuid, start, size, memory, replicas, resource}]}
 *
 * gpu/inventory writes this form from NVIDIA's device-plugin and mig-parted files; a
 * simulated Node may also carry it directly (e.g. {mode: fractional}).
 * Owns: parse + check of that object and the view. Must not: do I/O. */
#include <stdio.h>
#include <string.h>
#include "core/quantity.h"
#include "core/share.h"
#include "core/share_json.h"

static int str_field(const json_t *o, const char *k, char *out, size_t n, const char *f, gx_err *err)
{
    const json_t *v = json_object_get(o, k);
    if (!v) return 0;
    if (!json_is_string(v) || json_string_length(v) >= n) return gx_errf(err, 422, f, "%s must be a short string", k);
    snprintf(out, n, "%s", json_string_value(v));
    return 0;
}

static int int_field(const json_t *o, const char *k, int lo, int hi, int *out, const char *f, gx_err *err)
{
    const json_t *v = json_object_get(o, k);
    if (!v) return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return gx_errf(err, 422, f, "%s must be a whole number from %d to %d", k, lo, hi);
    *out = (int)json_integer_value(v);
    return 0;
}

static int parse_mig(const json_t *m, gx_share_mig *d, const char *f, gx_err *err)
{
    memset(d, 0, sizeof *d);
    if (!json_is_object(m)) return gx_errf(err, 422, f, "a MIG device is {profile, uuid, start, size, memory}");
    if (str_field(m, "profile", d->profile, sizeof d->profile, f, err) ||
        str_field(m, "uuid", d->uuid, sizeof d->uuid, f, err) ||
        str_field(m, "resource", d->resource, sizeof d->resource, f, err) ||
        int_field(m, "start", 0, 7, &d->start, f, err) || int_field(m, "size", 1, 8, &d->size, f, err) ||
        int_field(m, "replicas", 1, GX_SHARE_MAX_REPLICAS, &d->replicas, f, err))
        return -1;
    if (!d->profile[0] || !d->uuid[0]) return gx_errf(err, 422, f, "a MIG device needs its profile and uuid");
    int64_t milli = 0;
    const json_t *mem = json_object_get(m, "memory");
    if (mem && gx_quantity_from_json(mem, &milli, f, err) < 0) return -1;
    d->mem_mib = milli / 1000 / (1024 * 1024);
    return 0;
}

int gx_share_gpu_from_json(const json_t *sharing, const char *uuid, int64_t mem_mib, gx_share_gpu *g,
                           const char *field, gx_err *err)
{
    memset(g, 0, sizeof *g);
    snprintf(g->uuid, sizeof g->uuid, "%s", uuid ? uuid : "");
    g->mem_mib = mem_mib;
    g->replicas = 1;
    if (!sharing || json_is_null(sharing)) return 0;
    if (json_is_string(sharing)) {   /* shorthand: sharing: fractional */
        if (gx_share_mode_parse(json_string_value(sharing), &g->mode) || g->mode == GX_SHARE_MIG ||
            g->mode == GX_SHARE_TIMESLICING || g->mode == GX_SHARE_MPS)
            return gx_errf(err, 422, field, "sharing: %s is not a mode on its own (exclusive or fractional; "
                           "time-slicing and MPS come from the device-plugin config, MIG from mig-parted)",
                           json_string_value(sharing));
        return 0;
    }
    if (!json_is_object(sharing)) return gx_errf(err, 422, field, "sharing must be {mode, replicas, ...}");
    const char *mode = json_string_value(json_object_get(sharing, "mode"));
    if (gx_share_mode_parse(mode, &g->mode))
        return gx_errf(err, 422, field, "sharing.mode must be exclusive, timeSlicing, mps, mig or fractional");
    if (str_field(sharing, "resource", g->resource, sizeof g->resource, field, err) ||
        int_field(sharing, "replicas", 1, GX_SHARE_MAX_REPLICAS, &g->replicas, field, err))
        return -1;
    g->fail_gt1 = json_is_true(json_object_get(sharing, "failRequestsGreaterThanOne"));
    const json_t *migs = json_object_get(sharing, "migDevices");
    if (g->mode == GX_SHARE_MIG) {
        if (!json_is_array(migs)) return gx_errf(err, 422, field, "mode mig needs migDevices");
        if (json_array_size(migs) > GX_SHARE_MAX_MIG)
            return gx_errf(err, 422, field, "at most %d MIG devices per GPU", GX_SHARE_MAX_MIG);
        size_t i;
        json_t *m;
        char f[256];
        json_array_foreach(migs, i, m) {
            snprintf(f, sizeof f, "%s.migDevices[%zu]", field, i);
            if (parse_mig(m, &g->mig[g->n_mig++], f, err)) return -1;
        }
    } else if (migs) {
        return gx_errf(err, 422, field, "migDevices only go with mode mig");
    }
    if ((g->mode == GX_SHARE_TIMESLICING || g->mode == GX_SHARE_MPS) && g->replicas < 2 && !json_object_get(sharing, "replicas"))
        return gx_errf(err, 422, field, "mode %s needs replicas", mode);
    return 0;
}

static json_t *holders(const gx_share_node *n, int g, int mig, int replica, const char *const *owner_names)
{
    json_t *a = json_array();
    for (int i = 0; i < n->n_allocs; i++) {
        const gx_share_alloc *al = &n->alloc[i];
        if (al->dev.gpu != g || al->dev.mig != mig || (replica >= 0 && al->dev.replica != replica)) continue;
        json_t *h = json_pack("{s:I, s:I, s:i}", "owner", (json_int_t)al->owner, "memoryMiB", (json_int_t)al->dev.mem_mib,
                              "cores", al->dev.cores);
        if (owner_names && owner_names[i]) json_object_set_new(h, "workload", json_string(owner_names[i]));
        json_array_append_new(a, h);
    }
    return a;
}

json_t *gx_share_gpu_view(const gx_share_node *n, int gi, const char *const *owner_names)
{
    const gx_share_gpu *g = &n->gpu[gi];
    gx_share_usage u;
    gx_share_gpu_usage(n, gi, &u);
    json_t *v = json_pack("{s:s, s:s, s:i, s:i, s:I, s:i}", "mode", gx_share_mode_name(g->mode), "resource",
                          g->mode == GX_SHARE_MIG ? "" : g->mode == GX_SHARE_FRACTIONAL ? "nvidia.com/gpu" : g->resource,
                          "slotsUsed", u.slots_used, "slotsTotal", u.slots_total, "memoryAllocatedMiB",
                          (json_int_t)u.mem_alloc_mib, "coresAllocated", u.cores_alloc);
    json_t *slices = json_array();
    if (g->mode == GX_SHARE_MIG) {
        for (int m = 0; m < g->n_mig; m++) {
            const gx_share_mig *d = &g->mig[m];
            json_array_append_new(slices, json_pack("{s:i, s:s, s:s, s:s, s:i, s:i, s:I, s:i, s:o}", "index", m, "uuid",
                                                    d->uuid, "profile", d->profile, "resource", d->resource, "start",
                                                    d->start, "size", d->size, "memoryMiB", (json_int_t)d->mem_mib,
                                                    "replicas", d->replicas, "holders", holders(n, gi, m, -1, owner_names)));
        }
    } else if (g->mode == GX_SHARE_TIMESLICING || g->mode == GX_SHARE_MPS) {
        for (int r = 0; r < g->replicas; r++)
            json_array_append_new(slices, json_pack("{s:i, s:o}", "replica", r, "holders",
                                                    holders(n, gi, -1, r, owner_names)));
        json_object_set_new(v, "replicas", json_integer(g->replicas));
        json_object_set_new(v, "failRequestsGreaterThanOne", json_boolean(g->fail_gt1));
    } else {
        json_array_append_new(slices, json_pack("{s:o}", "holders", holders(n, gi, -1, -1, owner_names)));
    }
    json_object_set_new(v, "slices", slices);
    return v;
}
