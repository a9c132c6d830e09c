/* k8s_objects: gx_d_k8s_objects, the Kueue objects of the daemon as Kubernetes shows them.
 * Owns: gathering what the renderers (ops/k8s.h) need: the applied manifests and when
 * they were first applied, the engine's queue views, the workloads' manifests and views.
 * Must not: change state; it only reads. */
#include <string.h>
#include "lib/alloc.h"
#include "ops/daemon.h"
#include "ops/k8s.h"

static int64_t created_of(const gx_daemon *d, const char *key)
{
    return d->created ? json_integer_value(json_object_get(d->created, key)) : 0;
}

static int ns_allowed(const char *ns, const char *const *namespaces, size_t n_ns)
{
    if (!n_ns) return 1;
    for (size_t i = 0; i < n_ns; i++)
        if (ns && !strcmp(ns, namespaces[i])) return 1;
    return 0;
}

static const json_t *named(const json_t *arr, const char *ns, const char *name)
{
    size_t i;
    const json_t *x;
    json_array_foreach(arr, i, x)
        if (!strcmp(json_string_value(json_object_get(x, "name")) ?: "", name) &&
            (!ns || !strcmp(json_string_value(json_object_get(x, "namespace")) ?: "", ns)))
            return x;
    return NULL;
}

/* The applied objects of kind in the engine's order (by namespace and name), each with
 * its status where the kind has one. */
static json_t *applied(gx_daemon *d, const char *kind, const char *const *namespaces, size_t n_ns, const char *name)
{
    json_t *mans = gx_engine_objects(d->eng, kind), *out = json_array();
    json_t *cqs = strcmp(kind, "ClusterQueue") && strcmp(kind, "LocalQueue") ? NULL : gx_engine_cluster_queues(d->eng);
    json_t *lqs = strcmp(kind, "LocalQueue") ? NULL : gx_engine_local_queues(d->eng, namespaces, n_ns);
    size_t i;
    const json_t *m;
    json_array_foreach(mans, i, m) {
        const json_t *md = json_object_get(m, "metadata");
        const char *n = json_string_value(json_object_get(md, "name")) ?: "";
        const char *ns = json_string_value(json_object_get(md, "namespace"));
        int is_lq = !strcmp(kind, "LocalQueue");
        if (is_lq && !ns) ns = "default";
        if ((name && strcmp(n, name)) || (is_lq && !ns_allowed(ns, namespaces, n_ns))) continue;
        char key[600];
        snprintf(key, sizeof key, "%s/%s/%s", kind, is_lq ? ns : "", n);
        int64_t created = created_of(d, key);
        json_t *st = NULL;
        if (!strcmp(kind, "ClusterQueue")) {
            const json_t *v = named(cqs, NULL, n);
            if (v) st = gx_k8s_cq_status(v, created);
        } else if (is_lq) {
            const json_t *v = named(lqs, ns, n);
            if (v) {
                char lqkey[600];
                snprintf(lqkey, sizeof lqkey, "%s/%s", ns, n);
                const char *one[1] = {ns};
                gx_wl_filter f = {.namespaces = one, .n_namespaces = 1, .state = "Admitted", .local_queue = lqkey};
                json_t *adm = gx_engine_workloads(d->eng, &f, gx_loop_now(d->loop));
                const char *cqn = json_string_value(json_object_get(v, "clusterQueue")) ?: "";
                st = gx_k8s_lq_status(v, adm, named(cqs, NULL, cqn), m, created);
                json_decref(adm);
            }
        }
        json_t *o = gx_k8s_applied(m, created, st);
        if (is_lq) json_object_set_new(json_object_get(o, "metadata"), "namespace", json_string(ns));
        json_array_append_new(out, o);
    }
    json_decref(mans);
    json_decref(cqs);
    json_decref(lqs);
    return out;
}

static json_t *workloads(gx_daemon *d, const char *const *namespaces, size_t n_ns, const char *name)
{
    gx_wl_filter f = {.namespaces = namespaces, .n_namespaces = n_ns};
    json_t *views = gx_d_list(d, &f), *out = json_array();
    size_t i;
    const json_t *v;
    json_array_foreach(views, i, v) {
        if (name && strcmp(json_string_value(json_object_get(v, "name")) ?: "", name)) continue;
        const gx_run *w = gx_exec_get(d->exec, json_string_value(json_object_get(v, "key")) ?: "");
        json_array_append_new(out, gx_k8s_workload(w ? w->manifest : NULL, v));
    }
    json_decref(views);
    return out;
}

json_t *gx_d_k8s_objects(gx_daemon *d, const char *kind, const char *const *namespaces, size_t n_ns, const char *name)
{
    static const char *const kinds[] = {"ClusterQueue", "LocalQueue", "ResourceFlavor", "Cohort", "WorkloadPriorityClass"};
    if (!strcmp(kind, "Workload")) return workloads(d, namespaces, n_ns, name);
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (!strcmp(kind, kinds[i])) return applied(d, kind, namespaces, n_ns, name);
    return NULL;
}
