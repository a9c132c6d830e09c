/* render_kueue: the Kueue objects one cluster of a fleet needs, as kueue.x-k8s.io/v1beta2.
 * Owns: gx_fleet_render_kueue: picking from the applied objects the cluster's
 * ClusterQueues and what they reference (ResourceFlavors, Cohorts up their parent chain,
 * AdmissionChecks), every WorkloadPriorityClass, the LocalQueues of its namespaces that
 * point at its queues, a v1 Namespace per namespace; for a MultiKueue manager the
 * AdmissionCheck, MultiKueueConfig and MultiKueueClusters; the v1beta1 -> v1beta2 field
 * renames; dropping the fields a server sets; the order (kind, namespace, name); and the
 * rules Kueue's webhooks and controllers enforce on these that the CRDs cannot express.
 * Must not: do I/O, read a clock, or change the objects it is given (it copies). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fleet/fleet.h"
#include "lib/k8sobj.h"
#include "lib/alloc.h"

#define KUEUE_V1B2 "kueue.x-k8s.io/v1beta2"
#define KUEUE_V1B1 "kueue.x-k8s.io/v1beta1"
#define MK_CONTROLLER "kueue.x-k8s.io/multikueue"
#define MK_CHECK "multikueue"
/* MultiKueueConfig spec.clusters maxItems (Kueue v1beta2 types, tests/k8s/crds) */
#define MK_CLUSTERS_MAX 20
/* Kueue's cohort tree has no cycles (its webhook refuses one); a chain this long is one */
#define COHORT_DEPTH_MAX 64

static const char *str_at(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }

static const json_t *obj_get(const json_t *objects, const char *kind, const char *ns, const char *name)
{
    char key[600];
    snprintf(key, sizeof key, "%s/%s/%s", kind, ns ? ns : "", name);
    return json_object_get(objects, key);
}

/* A copy as v1beta2: the renames Kueue's conversion makes (ClusterQueue spec.cohort ->
 * spec.cohortName; spec.admissionChecks [names] -> spec.admissionChecksStrategy;
 * flavorFungibility Borrow/Preempt -> MayStopSearch), server fields dropped. */
static json_t *as_v1beta2(const json_t *m)
{
    json_t *o = json_deep_copy(m);
    gx_k8s_strip_server_fields(o);
    int old = !strcmp(str_at(o, "apiVersion") ?: "", KUEUE_V1B1);
    json_object_set_new(o, "apiVersion", json_string(KUEUE_V1B2));
    json_t *spec = json_object_get(o, "spec");
    if (!old || strcmp(str_at(o, "kind") ?: "", "ClusterQueue") || !json_is_object(spec)) return o;
    json_t *co = json_object_get(spec, "cohort");
    if (co) {
        if (!json_object_get(spec, "cohortName")) json_object_set(spec, "cohortName", co);
        json_object_del(spec, "cohort");
    }
    json_t *names = json_object_get(spec, "admissionChecks");
    if (json_is_array(names)) {
        json_t *list = json_array();
        size_t i;
        json_t *x;
        json_array_foreach(names, i, x) json_array_append_new(list, json_pack("{s:O}", "name", x));
        json_object_set_new(spec, "admissionChecksStrategy", json_pack("{s:o}", "admissionChecks", list));
    }
    json_object_del(spec, "admissionChecks");
    json_t *fg = json_object_get(spec, "flavorFungibility");
    static const char *const keys[] = {"whenCanBorrow", "whenCanPreempt"};
    for (int i = 0; i < 2 && json_is_object(fg); i++) {
        const char *v = str_at(fg, keys[i]);
        if (v && (!strcmp(v, "Borrow") || !strcmp(v, "Preempt"))) json_object_set_new(fg, keys[i], json_string("MayStopSearch"));
    }
    return o;
}

/* out keeps one object per (kind, namespace, name): a flavor two queues use goes once. */
static int has(const json_t *out, const char *kind, const char *ns, const char *name)
{
    size_t i;
    const json_t *o;
    json_array_foreach(out, i, o) {
        const json_t *md = json_object_get(o, "metadata");
        if (!strcmp(str_at(o, "kind") ?: "", kind) && !strcmp(str_at(md, "name") ?: "", name) &&
            !strcmp(str_at(md, "namespace") ?: "", ns ? ns : ""))
            return 1;
    }
    return 0;
}

/* The field of the cluster in the Fleet, for errors: spec.clusters[i].SUFFIX. */
static const char *cfield(const gx_fleet *f, const gx_fleet_cluster *c, const char *suffix, char *buf, size_t n)
{
    size_t i = f && c >= f->clusters && c < f->clusters + f->n ? (size_t)(c - f->clusters) : 0;
    snprintf(buf, n, "spec.clusters[%zu].%s", i, suffix);
    return buf;
}

/* The ResourceFlavors named by resourceGroups[].flavors[].name of a ClusterQueue or a
 * Cohort; a flavor that is not applied is an error (the queue would be inactive there). */
static int add_flavors(json_t *out, const json_t *objects, const json_t *spec, const char *owner, gx_err *err)
{
    size_t i, k;
    const json_t *rg, *fl;
    json_array_foreach(json_object_get(spec, "resourceGroups"), i, rg)
        json_array_foreach(json_object_get(rg, "flavors"), k, fl) {
            const char *n = str_at(fl, "name");
            if (!n || has(out, "ResourceFlavor", NULL, n)) continue;
            const json_t *m = obj_get(objects, "ResourceFlavor", NULL, n);
            if (!m)
                return gx_errf(err, 422, "", "%s: ResourceFlavor %s (spec.resourceGroups[%zu].flavors[%zu].name) is not "
                               "among the applied objects", owner, n, i, k);
            json_array_append_new(out, as_v1beta2(m));
        }
    return 0;
}

/* The Cohort named by a queue and its parents. A Cohort without an object is an
 * implicit one (Kueue creates it from the name), so only applied ones are written. */
static int add_cohorts(json_t *out, const json_t *objects, const char *name, gx_err *err)
{
    for (int depth = 0; name && *name; depth++) {
        if (depth == COHORT_DEPTH_MAX) return gx_errf(err, 422, "", "Cohort %s: the parentName chain is a cycle", name);
        if (has(out, "Cohort", NULL, name)) return 0;
        const json_t *m = obj_get(objects, "Cohort", NULL, name);
        if (!m) return 0;
        json_t *o = as_v1beta2(m);
        json_array_append_new(out, o);
        char owner[300];
        snprintf(owner, sizeof owner, "Cohort %s", name);
        if (add_flavors(out, objects, json_object_get(o, "spec"), owner, err)) return -1;
        name = str_at(json_object_get(o, "spec"), "parentName");
    }
    return 0;
}

/* The AdmissionChecks a ClusterQueue names; Kueue's rules on them: each exists, at most
 * one is MultiKueue's, and that one never per flavor (ClusterQueueActiveReason
 * MultipleMultiKueueAdmissionChecks, MultiKueueAdmissionCheckAppliedPerFlavor). */
static int add_checks(json_t *out, const json_t *objects, const json_t *cq, int manager, gx_err *err)
{
    const char *name = str_at(json_object_get(cq, "metadata"), "name");
    const json_t *list = json_object_get(json_object_get(json_object_get(cq, "spec"), "admissionChecksStrategy"), "admissionChecks");
    int mk = manager;
    size_t i;
    const json_t *x;
    json_array_foreach(list, i, x) {
        const char *n = str_at(x, "name");
        if (!n) continue;
        const json_t *m = obj_get(objects, "AdmissionCheck", NULL, n);
        if (!m)
            return gx_errf(err, 422, "", "ClusterQueue %s: AdmissionCheck %s (spec.admissionChecksStrategy.admissionChecks[%zu]) "
                           "is not among the applied objects", name, n, i);
        int is_mk = !strcmp(str_at(json_object_get(m, "spec"), "controllerName") ?: "", MK_CONTROLLER);
        if (manager && !strcmp(n, MK_CHECK) && !is_mk)
            return gx_errf(err, 409, "", "ClusterQueue %s: AdmissionCheck %s is another controller's, and the manager's "
                           "MultiKueue check has that name", name, n);
        if (is_mk && mk++)
            return gx_errf(err, 422, "", "ClusterQueue %s: more than one MultiKueue admission check (Kueue allows one)", name);
        if (is_mk && json_array_size(json_object_get(x, "onFlavors")))
            return gx_errf(err, 422, "", "ClusterQueue %s: the MultiKueue admission check %s cannot be per flavor (onFlavors)",
                           name, n);
        if (!has(out, "AdmissionCheck", NULL, n)) json_array_append_new(out, as_v1beta2(m));
    }
    return 0;
}

/* The manager's queues name the MultiKueue check (added to the checks they already have). */
static void name_mk_check(json_t *cq)
{
    json_t *spec = json_object_get(cq, "spec");
    if (!json_is_object(spec)) json_object_set_new(cq, "spec", spec = json_object());
    json_t *st = json_object_get(spec, "admissionChecksStrategy");
    if (!json_is_object(st)) json_object_set_new(spec, "admissionChecksStrategy", st = json_object());
    json_t *list = json_object_get(st, "admissionChecks");
    if (!json_is_array(list)) json_object_set_new(st, "admissionChecks", list = json_array());
    json_array_append_new(list, json_pack("{s:s}", "name", MK_CHECK));
}

/* MultiKueue on a manager: the check, its config (spec.clusters: the workers, each one
 * rendered as a MultiKueueCluster here, at most the CRD's maxItems), and one
 * MultiKueueCluster per worker, whose kubeconfig is the Secret <worker>-kubeconfig in
 * Kueue's namespace (put there by whoever runs the clusters: gpuaas holds no credentials
 * for Kueue). */
static int add_multikueue(json_t *out, const gx_fleet *f, const gx_fleet_cluster *c, gx_err *err)
{
    char fld[192];
    if (c->nworkers > MK_CLUSTERS_MAX)
        return gx_errf(err, 422, cfield(f, c, "multiKueue.workers", fld, sizeof fld),
                       "a MultiKueueConfig lists at most %d clusters", MK_CLUSTERS_MAX);
    json_array_append_new(out, json_pack("{s:s, s:s, s:{s:s}, s:{s:s, s:{s:s, s:s, s:s}}}", "apiVersion", KUEUE_V1B2,
                                         "kind", "AdmissionCheck", "metadata", "name", MK_CHECK, "spec", "controllerName",
                                         MK_CONTROLLER, "parameters", "apiGroup", "kueue.x-k8s.io", "kind",
                                         "MultiKueueConfig", "name", c->name));
    json_t *names = json_array();
    for (size_t i = 0; i < c->nworkers; i++) {
        char wf[64];
        snprintf(wf, sizeof wf, "multiKueue.workers[%zu]", i);
        if (!f || !gx_fleet_find(f, c->workers[i]) || !strcmp(c->workers[i], c->name)) {
            json_decref(names);
            return gx_errf(err, 422, cfield(f, c, wf, fld, sizeof fld), "\"%s\" is not another cluster of the fleet",
                           c->workers[i]);
        }
        json_array_append_new(names, json_string(c->workers[i]));
        char loc[96];
        snprintf(loc, sizeof loc, "%s-kubeconfig", c->workers[i]);
        json_array_append_new(out, json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:{s:s, s:s}}}}", "apiVersion", KUEUE_V1B2, "kind",
                                             "MultiKueueCluster", "metadata", "name", c->workers[i], "spec",
                                             "clusterSource", "kubeConfig", "location", loc, "locationType", "Secret"));
    }
    json_array_append_new(out, json_pack("{s:s, s:s, s:{s:s}, s:{s:o}}", "apiVersion", KUEUE_V1B2, "kind",
                                         "MultiKueueConfig", "metadata", "name", c->name, "spec", "clusters", names));
    return 0;
}

static int cmp_obj(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    const json_t *mx = json_object_get(x, "metadata"), *my = json_object_get(y, "metadata");
    int r = strcmp(str_at(x, "kind") ?: "", str_at(y, "kind") ?: "");
    if (!r) r = strcmp(str_at(mx, "namespace") ?: "", str_at(my, "namespace") ?: "");
    if (!r) r = strcmp(str_at(mx, "name") ?: "", str_at(my, "name") ?: "");
    return r;
}

/* A new array of out's objects in (kind, namespace, name) order. */
static json_t *sorted(json_t *out)
{
    size_t n = json_array_size(out);
    json_t **v = gx_xcalloc(n ? n : 1, sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = json_incref(json_array_get(out, i));
    qsort(v, n, sizeof *v, cmp_obj);
    json_t *s = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(s, v[i]);
    free(v);
    json_decref(out);
    return s;
}

static int offers_cq(const gx_fleet_cluster *c, const char *name)
{
    for (size_t i = 0; name && i < c->ncluster_queues; i++)
        if (!strcmp(c->cluster_queues[i], name)) return 1;
    return 0;
}

/* The LocalQueues in c's namespaces that point at c's queues (key "LocalQueue/ns/name"). */
static void add_local_queues(json_t *out, const gx_fleet_cluster *c, const json_t *objects)
{
    const char *key;
    const json_t *m;
    json_object_foreach((json_t *)objects, key, m) {
        if (strncmp(key, "LocalQueue/", 11) || !offers_cq(c, str_at(json_object_get(m, "spec"), "clusterQueue"))) continue;
        const char *ns = key + 11, *slash = strchr(ns, '/');
        if (!slash) continue;
        for (size_t i = 0; i < c->nnamespaces; i++) {
            if (strlen(c->namespaces[i]) != (size_t)(slash - ns) || strncmp(c->namespaces[i], ns, (size_t)(slash - ns))) continue;
            json_t *o = as_v1beta2(m);
            /* a LocalQueue written without a namespace was applied into "default" */
            json_object_set_new(json_object_get(o, "metadata"), "namespace", json_string(c->namespaces[i]));
            json_array_append_new(out, o);
        }
    }
}

json_t *gx_fleet_render_kueue(const gx_fleet *f, const gx_fleet_cluster *c, const json_t *objects, gx_err *err)
{
    gx_err_clear(err);
    json_t *out = json_array();
    char fld[192];
    int manager = c->nworkers > 0;
    for (size_t i = 0; i < c->ncluster_queues; i++) {
        const json_t *m = obj_get(objects, "ClusterQueue", NULL, c->cluster_queues[i]);
        char sub[64];
        snprintf(sub, sizeof sub, "clusterQueues[%zu]", i);
        if (!m) {
            gx_errf(err, 422, cfield(f, c, sub, fld, sizeof fld), "ClusterQueue %s is not among the applied objects",
                    c->cluster_queues[i]);
            goto fail;
        }
        json_t *cq = as_v1beta2(m);
        json_array_append_new(out, cq);
        char owner[300];
        snprintf(owner, sizeof owner, "ClusterQueue %s", c->cluster_queues[i]);
        const json_t *spec = json_object_get(cq, "spec");
        if (add_flavors(out, objects, spec, owner, err) || add_cohorts(out, objects, str_at(spec, "cohortName"), err) ||
            add_checks(out, objects, cq, manager, err)) {
            gx_err_prefix(err, cfield(f, c, sub, fld, sizeof fld));
            goto fail;
        }
        if (manager) name_mk_check(cq);
    }
    const char *key;
    const json_t *m;
    json_object_foreach((json_t *)objects, key, m)
        if (!strncmp(key, "WorkloadPriorityClass/", 22)) json_array_append_new(out, as_v1beta2(m));
    add_local_queues(out, c, objects);
    /* Tenants' Jobs reach the cluster through Argo CD, which may create anything: the
     * namespace enforces Kubernetes' "baseline" Pod Security Standard, so the cluster's
     * own API server refuses a tenant's pod that asks for a host path, the host's
     * network, PID or IPC namespace, or privileged mode (docs/fleet.md) */
    for (size_t i = 0; i < c->nnamespaces; i++)
        json_array_append_new(out, json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s}}}", "apiVersion", "v1", "kind",
                                             "Namespace", "metadata", "name", c->namespaces[i], "labels",
                                             "pod-security.kubernetes.io/enforce", "baseline",
                                             "pod-security.kubernetes.io/enforce-version", "latest"));
    if (manager && add_multikueue(out, f, c, err)) goto fail;
    return sorted(out);
fail:
    json_decref(out);
    return NULL;
}
