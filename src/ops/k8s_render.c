/* k8s_render: the pure renderers of ops/k8s.h (see there for what they own).
 * Must not: reach the daemon; every input is a JSON value the caller gathered. */
#include <stdio.h>
#include <string.h>
#include "core/quantity.h"
#include "lib/gxtime.h"
#include "ops/k8s.h"

static json_t *time_str(int64_t ms)
{
    char t[GX_TIME_LEN];
    return json_string(gx_time_fmt(ms, t, sizeof t));
}

json_t *gx_k8s_applied(const json_t *manifest, int64_t created_ms, json_t *status)
{
    json_t *o = json_deep_copy(manifest);
    json_object_del(o, "status");
    json_t *md = json_object_get(o, "metadata");
    if (!json_is_object(md)) json_object_set_new(o, "metadata", md = json_object());
    if (created_ms) json_object_set_new(md, "creationTimestamp", time_str(created_ms));
    if (status) json_object_set_new(o, "status", status);
    return o;
}

static json_t *condition(const char *type, int status, const char *reason, const char *msg, json_t *when)
{
    return json_pack("{s:s,s:s,s:s,s:s,s:o}", "type", type, "status", status ? "True" : "False", "reason", reason,
                     "message", msg, "lastTransitionTime", when);
}

static int64_t milli(const json_t *v)
{
    int64_t m = 0;
    gx_err e;
    if (v && gx_quantity_from_json(v, &m, "", &e)) m = 0;
    return m;
}

static json_t *qty(int64_t m)
{
    char b[48];
    return json_string(gx_quantity_format(m, b, sizeof b));
}

/* The flavor entry named flavor in list (appended when missing): {name, resources: []}. */
static json_t *flavor_entry(json_t *list, const char *flavor)
{
    size_t i;
    json_t *f;
    json_array_foreach(list, i, f)
        if (!strcmp(json_string_value(json_object_get(f, "name")) ?: "", flavor)) return f;
    f = json_pack("{s:s,s:[]}", "name", flavor, "resources");
    json_array_append_new(list, f);
    return f;
}

/* Per flavor, each resource's use ("total") and, for a ClusterQueue, what of it is
 * beyond the nominal quota ("borrowed"), from the view's [{flavor,resource,nominalQuota,
 * usage}] rows. usage_of, when given, replaces the row's usage (a LocalQueue's share). */
static json_t *flavors_usage(const json_t *rows, int with_borrowed, const json_t *usage_of)
{
    json_t *out = json_array();
    size_t i;
    const json_t *r;
    json_array_foreach(rows, i, r) {
        const char *fl = json_string_value(json_object_get(r, "flavor")), *res = json_string_value(json_object_get(r, "resource"));
        if (!fl || !res) continue;
        int64_t use = milli(json_object_get(r, "usage")), nom = milli(json_object_get(r, "nominalQuota"));
        if (usage_of) use = json_integer_value(json_object_get(json_object_get(usage_of, fl), res));
        json_t *entry = json_pack("{s:s,s:o}", "name", res, "total", qty(use));
        if (with_borrowed) json_object_set_new(entry, "borrowed", qty(use > nom ? use - nom : 0));
        json_array_append_new(json_object_get(flavor_entry(out, fl), "resources"), entry);
    }
    return out;
}

json_t *gx_k8s_cq_status(const json_t *v, int64_t since_ms)
{
    json_t *st = json_object();
    json_int_t admitted = json_integer_value(json_object_get(v, "admittedWorkloads"));
    json_object_set_new(st, "pendingWorkloads", json_integer(json_integer_value(json_object_get(v, "pendingWorkloads"))));
    /* gpuaas admits as it reserves: every reserving workload is admitted */
    json_object_set_new(st, "reservingWorkloads", json_integer(admitted));
    json_object_set_new(st, "admittedWorkloads", json_integer(admitted));
    json_object_set_new(st, "flavorsReservation", flavors_usage(json_object_get(v, "resources"), 1, NULL));
    json_object_set_new(st, "flavorsUsage", flavors_usage(json_object_get(v, "resources"), 1, NULL));
    if (json_is_integer(json_object_get(v, "weightedShare")))
        json_object_set_new(st, "fairSharing", json_pack("{s:O}", "weightedShare", json_object_get(v, "weightedShare")));
    int active = !json_is_false(json_object_get(v, "active"));
    const char *why = json_string_value(json_object_get(v, "inactiveReason"));
    char msg[200];
    if (active) snprintf(msg, sizeof msg, "Can admit new workloads");
    else if (why && !strcmp(why, "Stopped")) snprintf(msg, sizeof msg, "Can't admit new workloads: the ClusterQueue is stopped (stopPolicy)");
    else if (why && !strcmp(why, "FlavorNotFound")) snprintf(msg, sizeof msg, "Can't admit new workloads: references missing ResourceFlavor(s)");
    else snprintf(msg, sizeof msg, "Can't admit new workloads: %s", why ? why : "inactive");
    json_object_set_new(st, "conditions", json_pack("[o]", condition("Active", active, active ? "Ready" : why ? why : "Inactive",
                                                                      msg, time_str(since_ms))));
    return st;
}

/* Sum the admitted workloads' resourceUsage per flavor: {flavor: {resource: milli}}. */
static json_t *lq_usage(const json_t *admitted)
{
    json_t *sum = json_object();
    size_t i, j;
    const json_t *w, *psa;
    json_array_foreach(admitted, i, w) json_array_foreach(json_object_get(json_object_get(w, "admission"), "podSetAssignments"), j, psa) {
        const char *res;
        const json_t *q;
        json_object_foreach((json_t *)json_object_get(psa, "resourceUsage"), res, q) {
            const char *fl = json_string_value(json_object_get(json_object_get(psa, "flavors"), res));
            if (!fl) continue;
            json_t *byres = json_object_get(sum, fl);
            if (!byres) json_object_set_new(sum, fl, byres = json_object());
            json_object_set_new(byres, res, json_integer(json_integer_value(json_object_get(byres, res)) + milli(q)));
        }
    }
    return sum;
}

json_t *gx_k8s_lq_status(const json_t *v, const json_t *admitted, const json_t *cq, const json_t *lq_manifest, int64_t since_ms)
{
    json_t *st = json_object();
    json_int_t adm = json_integer_value(json_object_get(v, "admittedWorkloads"));
    json_object_set_new(st, "pendingWorkloads", json_integer(json_integer_value(json_object_get(v, "pendingWorkloads"))));
    json_object_set_new(st, "reservingWorkloads", json_integer(adm));
    json_object_set_new(st, "admittedWorkloads", json_integer(adm));
    json_t *use = lq_usage(admitted);
    json_object_set_new(st, "flavorsReservation", flavors_usage(json_object_get(cq, "resources"), 0, use));
    json_object_set_new(st, "flavorsUsage", flavors_usage(json_object_get(cq, "resources"), 0, use));
    json_decref(use);
    const char *stop = json_string_value(json_object_get(json_object_get(lq_manifest, "spec"), "stopPolicy"));
    const char *reason = "Ready", *msg = "Can submit new workloads to localQueue";
    int active = 0;
    if (!cq) { reason = "ClusterQueueDoesNotExist"; msg = "Can't submit new workloads to clusterQueue"; }
    else if (stop && strcmp(stop, "None")) { reason = "Stopped"; msg = "LocalQueue is stopped"; }
    else if (json_is_false(json_object_get(cq, "active"))) { reason = "ClusterQueueIsInactive"; msg = "Can't submit new workloads to clusterQueue"; }
    else active = 1;
    json_object_set_new(st, "conditions", json_pack("[o]", condition("Active", active, reason, msg, time_str(since_ms))));
    return st;
}

/* ---- Workload --------------------------------------------------------------------- */

/* The spec's podSets: a Workload's own (name and count filled in where the API server's
 * defaults would put them), or a Job's pod template with the engine's count. */
static json_t *workload_spec(const json_t *manifest, const json_t *view)
{
    const json_t *vps = json_object_get(view, "podSets");
    const char *kind = json_string_value(json_object_get(manifest, "kind")) ?: "";
    json_t *spec;
    if (!strcmp(kind, "Workload")) {
        spec = json_deep_copy(json_object_get(manifest, "spec"));
        if (!json_is_object(spec)) { json_decref(spec); spec = json_object(); }
        size_t i;
        json_t *ps;
        json_array_foreach(json_object_get(spec, "podSets"), i, ps) {
            const json_t *e = json_array_get(vps, i);
            if (!json_object_get(ps, "name") && json_object_get(e, "name")) json_object_set(ps, "name", json_object_get(e, "name"));
            if (!json_object_get(ps, "count") && json_object_get(e, "count")) json_object_set(ps, "count", json_object_get(e, "count"));
        }
    } else {
        spec = json_object();
        json_t *sets = json_array();
        const json_t *tmpl = json_object_get(json_object_get(manifest, "spec"), "template");
        size_t i;
        const json_t *e;
        json_array_foreach(vps, i, e) {
            json_t *ps = json_pack("{s:O,s:O,s:o}", "name", json_object_get(e, "name"), "count", json_object_get(e, "count"),
                                   "template", tmpl ? json_deep_copy(tmpl) : json_object());
            json_int_t min = json_integer_value(json_object_get(e, "minCount"));
            if (min > 0 && min < json_integer_value(json_object_get(e, "count"))) json_object_set_new(ps, "minCount", json_integer(min));
            json_array_append_new(sets, ps);
        }
        json_object_set_new(spec, "podSets", sets);
    }
    const char *pc = json_string_value(json_object_get(view, "priorityClass"));
    if (!json_object_get(spec, "queueName") && json_is_string(json_object_get(view, "queueName")))
        json_object_set(spec, "queueName", json_object_get(view, "queueName"));
    if (pc && !json_object_get(spec, "priorityClassName")) json_object_set_new(spec, "priorityClassName", json_string(pc));
    json_object_set(spec, "priority", json_object_get(view, "priority"));
    json_object_set_new(spec, "active", json_boolean(strcmp(json_string_value(json_object_get(view, "state")) ?: "", "Deactivated")));
    const json_t *max = json_object_get(view, "maxExecutionTimeSeconds");
    if (json_is_integer(max) && !json_object_get(spec, "maximumExecutionTimeSeconds"))
        json_object_set_new(spec, "maximumExecutionTimeSeconds", json_integer(json_integer_value(max)));
    return spec;
}

/* The view's conditions as Kueue writes them (a reason is never empty), and PodsReady
 * while the pods run (gpuaas's phase Running: every pod started, none ended). */
static json_t *workload_conditions(const json_t *view)
{
    json_t *out = json_array();
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(view, "conditions"), i, c) {
        const char *type = json_string_value(json_object_get(c, "type")) ?: "Unknown";
        const char *st = json_string_value(json_object_get(c, "status")) ?: "False";
        const char *reason = json_string_value(json_object_get(c, "reason"));
        if (!reason || !*reason) reason = !strcmp(st, "True") ? type : "Pending";
        json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:s,s:O}", "type", type, "status", st, "reason", reason,
                                             "message", json_string_value(json_object_get(c, "message")) ?: "",
                                             "lastTransitionTime", json_object_get(c, "lastTransitionTime")));
    }
    if (!strcmp(json_string_value(json_object_get(view, "phase")) ?: "", "Running")) {
        const char *latest = NULL;
        const json_t *p;
        json_array_foreach(json_object_get(view, "pods"), i, p) {
            const char *t = json_string_value(json_object_get(p, "startedAt"));
            if (t && (!latest || strcmp(t, latest) > 0)) latest = t;   /* RFC 3339 in UTC sorts as text */
        }
        const char *at = latest ? latest : json_string_value(json_object_get(view, "admittedAt"));
        if (at)
            json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", "PodsReady", "status", "True", "reason", "PodsReady",
                                                 "message", "All pods are running", "lastTransitionTime", at));
    }
    return out;
}

json_t *gx_k8s_workload(const json_t *manifest, const json_t *view)
{
    json_t *md = json_pack("{s:O,s:O}", "name", json_object_get(view, "name"), "namespace", json_object_get(view, "namespace"));
    if (json_is_string(json_object_get(view, "createdAt"))) json_object_set(md, "creationTimestamp", json_object_get(view, "createdAt"));
    const json_t *mmd = json_object_get(manifest, "metadata");
    static const char *const keep[] = {"labels", "annotations"};
    for (size_t i = 0; i < 2; i++)
        if (json_object_size(json_object_get(mmd, keep[i]))) json_object_set_new(md, keep[i], json_deep_copy(json_object_get(mmd, keep[i])));
    json_t *st = json_pack("{s:o}", "conditions", workload_conditions(view));
    const json_t *adm = json_object_get(view, "admission");
    if (adm) json_object_set_new(st, "admission", json_deep_copy(adm));
    return json_pack("{s:s,s:s,s:o,s:o,s:o}", "apiVersion", "kueue.x-k8s.io/v1beta2", "kind", "Workload", "metadata", md,
                     "spec", workload_spec(manifest, view), "status", st);
}
