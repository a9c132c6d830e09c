/* fleet/render_job: a request (a batch/v1 Job as a user submitted it to gpuaas) as the Job
 * a cluster of the fleet runs, and the resource names of a cluster's sharing mode
 * (render_res.h, shared with render_model.c).
 * Owns: gx_fleet_render_job (fleet.h) and gx_fleet_map_resources: the clean Job
 * (name, namespace, labels, annotations; suspend: true; managedBy for a MultiKueue
 * manager; never ttlSecondsAfterFinished), and nvidia.com/gpu renamed as the cluster's
 * default device-plugin config offers it (gpu/devplugin.h's parser, not a second one).
 * Must not: do I/O, read a clock, or decide admission (the cluster's Kueue does). */
#include <stdio.h>
#include <string.h>
#include "fleet/fleet.h"
#include "fleet/render_res.h"
#include "gpu/devplugin.h"
#include "gpu/mig.h"
#include "lib/k8sname.h"

#define QUEUE_LABEL "kueue.x-k8s.io/queue-name"
#define USER_LABEL "gpuaas.dev/requested-by"
#define MULTIKUEUE "kueue.x-k8s.io/multikueue"

int gx_fleet_offers_ns(const gx_fleet_cluster *c, const char *ns)
{
    for (size_t i = 0; ns && i < c->nnamespaces; i++)
        if (!strcmp(c->namespaces[i], ns)) return 1;
    return 0;
}

/* The config nodes without a nvidia.com/device-plugin.config label get: the one named
 * default (fleet.h), else the entry "default", else the only one, as the plugin's config
 * manager falls back. *have is 0 when c runs no device-plugin config at all. */
static int default_config(const gx_fleet_cluster *c, gx_dp_config *cfg, int *have, gx_err *err)
{
    *have = 0;
    if (!c->device_plugin || !json_object_size(c->device_plugin)) return 0;
    const char *key = c->device_plugin_default;
    if (!key && json_object_get(c->device_plugin, "default")) key = "default";
    if (!key && json_object_size(c->device_plugin) == 1) key = json_object_iter_key(json_object_iter(c->device_plugin));
    if (!key) return 0;
    const json_t *doc = json_object_get(c->device_plugin, key);
    if (!doc)
        return gx_errf(err, 422, "gpuOperator.devicePlugin.default", "cluster %s has no device-plugin config %s",
                       c->name, key);
    if (gx_gpu_dp_parse(doc, cfg, err)) {
        gx_err_wrap(err, "cluster %s, device-plugin config %s", c->name, key);
        return -1;
    }
    *have = 1;
    return 0;
}

/* How c runs its GPUs, for a refusal's reason. */
static const char *mode_words(const gx_fleet_cluster *c, const gx_dp_config *cfg, int have)
{
    if (have && cfg->strategy == GX_DP_MPS) return "its GPUs are shared with MPS";
    if (have && cfg->strategy == GX_DP_TIMESLICING) return "its GPUs are time-sliced";
    if (c->mig_parted) return "its GPUs are partitioned with MIG";
    return "it offers whole GPUs";
}

/* Whether some config of the mig-parted document makes MIG devices of this profile. */
static int mig_profile_made(const json_t *parted, const char *profile)
{
    const char *name, *k;
    json_t *entries, *v;
    json_object_foreach(json_object_get(parted, "mig-configs"), name, entries) {
        size_t i;
        json_t *e;
        json_array_foreach(entries, i, e) {
            json_object_foreach(json_object_get(e, "mig-devices"), k, v)
                if (!strcmp(k, profile) && json_integer_value(v) > 0) return 1;
        }
    }
    return 0;
}

/* A fractional share: gpuaas's own (docs/gpu-sharing.md) and HAMi's names; no Kubernetes
 * device plugin the GPU Operator runs offers them. */
static int fractional(const char *name)
{
    static const char *const names[] = {"nvidia.com/gpumem", "nvidia.com/gpucores", NULL};
    for (int i = 0; names[i]; i++) {
        size_t n = strlen(names[i]);
        if (!strncmp(name, names[i], n) && (!name[n] || name[n] == '-')) return 1;
    }
    return 0;
}

json_t *gx_fleet_map_resources(const gx_fleet_cluster *c, const json_t *res, const char *field, gx_err *err)
{
    gx_dp_config cfg;
    int have;
    if (default_config(c, &cfg, &have, err)) return NULL;
    if (res && !json_is_object(res)) return gx_errf(err, 422, field, "must be a mapping of quantities"), NULL;
    json_t *out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)res, k, v) {
        char f[192], offered[80];
        const char *to = k;
        gx_err_path(f, sizeof f, field, "%s.%s", field, k);
        if (fractional(k)) {
            json_decref(out);
            return gx_errf(err, 422, f, "cluster %s offers no %s: %s (ask for nvidia.com/gpu)", c->name, k,
                           mode_words(c, &cfg, have)), NULL;
        }
        if (!strncmp(k, "nvidia.com/mig-", 15)) {
            const char *why = NULL;
            if (!c->mig_parted) why = mode_words(c, &cfg, have);
            else if (have && !strcmp(cfg.mig_strategy, "single"))
                why = "its MIG devices are offered as nvidia.com/gpu (migStrategy: single)";
            else if (!mig_profile_made(c->mig_parted, k + 15)) why = "no config of its mig-parted document makes that profile";
            if (why) {
                json_decref(out);
                return gx_errf(err, 422, f, "cluster %s offers no %s: %s", c->name, k, why), NULL;
            }
        }
        for (int i = 0; have && cfg.strategy != GX_DP_NONE && i < cfg.n_res; i++)
            if (!strcmp(cfg.res[i].name, k)) to = gx_gpu_dp_offered(&cfg, &cfg.res[i], offered, sizeof offered);
        if (json_object_get(out, to)) {
            json_decref(out);
            return gx_errf(err, 422, f, "cluster %s offers %s under %s, which is asked for twice", c->name, k, to), NULL;
        }
        json_object_set_new(out, to, json_deep_copy(v));
    }
    return out;
}

/* A label value as Kubernetes allows it: at most 63 of [-_.A-Za-z0-9], starting and
 * ending with a letter or digit. */
static int label_value_ok(const char *s)
{
    size_t n = strlen(s);
    if (!n || n > 63) return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = s[i];
        int alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
        if (!alnum && ((i == 0 || i == n - 1) || (ch != '-' && ch != '_' && ch != '.'))) return 0;
    }
    return 1;
}

/* requests and limits of every container (and init container) of the pod template,
 * renamed in place. */
static int map_containers(const gx_fleet_cluster *c, json_t *podspec, const char *list, gx_err *err)
{
    json_t *cs = json_object_get(podspec, list), *ct;
    size_t i;
    json_array_foreach(cs, i, ct) {
        json_t *r = json_object_get(ct, "resources");
        for (int w = 0; r && w < 2; w++) {
            const char *which = w ? "limits" : "requests";
            json_t *m = json_object_get(r, which);
            if (!m) continue;
            char f[160];
            snprintf(f, sizeof f, "spec.template.spec.%s[%zu].resources.%s", list, i, which);
            json_t *to = gx_fleet_map_resources(c, m, f, err);
            if (!to) return -1;
            json_object_set_new(r, which, to);
        }
    }
    return 0;
}

/* The pod template as Kubernetes would take it from git: restartPolicy Never when the
 * user gave none (a Job requires Never or OnFailure), and the labels the Job controller
 * added when the request came from `get -o yaml` of a live Job dropped (they would name
 * another Job's uid). */
static int clean_template(const gx_fleet_cluster *c, json_t *spec, gx_err *err)
{
    json_t *tpl = json_object_get(spec, "template");
    json_t *ps = json_object_get(tpl, "spec");
    if (!json_is_object(ps)) return gx_errf(err, 422, "spec.template.spec", "a Job needs a pod template"), -1;
    json_t *cs = json_object_get(ps, "containers");
    if (!json_is_array(cs) || !json_array_size(cs))
        return gx_errf(err, 422, "spec.template.spec.containers", "a Job needs at least one container"), -1;
    if (!json_object_get(ps, "restartPolicy")) json_object_set_new(ps, "restartPolicy", json_string("Never"));
    static const char *const server[] = {"controller-uid", "batch.kubernetes.io/controller-uid", "job-name",
                                         "batch.kubernetes.io/job-name", NULL};
    json_t *tl = json_object_get(json_object_get(tpl, "metadata"), "labels");
    for (int i = 0; tl && server[i]; i++) json_object_del(tl, server[i]);
    if (!json_is_true(json_object_get(spec, "manualSelector"))) json_object_del(spec, "selector");
    if (map_containers(c, ps, "initContainers", err) || map_containers(c, ps, "containers", err)) return -1;
    return 0;
}

/* metadata: name, namespace, labels (the user's, with the queue, requester and cluster),
 * annotations (the user's but the cluster choice, which the folder already says). Server
 * fields (uid, resourceVersion, managedFields ...) are not carried. */
static json_t *metadata(const gx_fleet_cluster *c, const json_t *md, const char *user, gx_err *err)
{
    const char *name = json_string_value(json_object_get(md, "name"));
    if (!name) return gx_errf(err, 422, "metadata.name", "the Job needs a name on cluster %s", c->name), NULL;
    if (gx_k8s_check_label(name, 63, "metadata.name", err)) return NULL;
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    if (!gx_fleet_offers_ns(c, ns)) {
        char list[256] = "";
        for (size_t i = 0, o = 0; i < c->nnamespaces && o < sizeof list; i++)
            o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", c->namespaces[i]);
        return gx_errf(err, 422, "metadata.namespace", "cluster %s offers no namespace %s (it offers: %s)", c->name,
                       ns ? ns : "(none given)", list[0] ? list : "none"), NULL;
    }
    const json_t *ul = json_object_get(md, "labels");
    const char *q = json_string_value(json_object_get(ul, QUEUE_LABEL));
    if (!q || !gx_k8s_is_label(q))
        return gx_errf(err, 422, "metadata.labels." QUEUE_LABEL,
                       "the LocalQueue the Job waits in on cluster %s (required, a name)", c->name), NULL;
    if (!user || !label_value_ok(user))
        return gx_errf(err, 422, "metadata.labels." USER_LABEL,
                       "the requesting user \"%s\" is no label value (at most 63 letters, digits, '-', '_', '.')",
                       user ? user : ""), NULL;
    json_t *labels = json_object(), *v;
    const char *k;
    json_object_foreach((json_t *)ul, k, v)
        if (json_is_string(v)) json_object_set(labels, k, v);
    json_object_set_new(labels, USER_LABEL, json_string(user));
    json_object_set_new(labels, GX_FLEET_CLUSTER_ANNOTATION, json_string(c->name));
    json_t *out = json_pack("{s:s,s:s,s:o}", "name", name, "namespace", ns, "labels", labels);
    json_t *ann = json_object();
    json_object_foreach(json_object_get(md, "annotations"), k, v)
        if (strcmp(k, GX_FLEET_CLUSTER_ANNOTATION) && json_is_string(v)) json_object_set(ann, k, v);
    if (json_object_size(ann)) json_object_set_new(out, "annotations", ann);
    else json_decref(ann);
    return out;
}

/* f is not needed: c carries its own workers. It stays in the signature so the caller
 * need not know that. */
json_t *gx_fleet_render_job(const gx_fleet *f, const gx_fleet_cluster *c, const json_t *request, const char *user,
                            gx_err *err)
{
    (void)f;
    const char *api = json_string_value(json_object_get(request, "apiVersion"));
    const char *kind = json_string_value(json_object_get(request, "kind"));
    if (!api || strcmp(api, "batch/v1"))
        return gx_errf(err, 422, "apiVersion", "a request for cluster %s is a batch/v1 Job", c->name), NULL;
    if (!kind || strcmp(kind, "Job")) return gx_errf(err, 422, "kind", "a request for cluster %s is a Job", c->name), NULL;
    const json_t *md = json_object_get(request, "metadata");
    if (!json_is_object(md)) return gx_errf(err, 422, "metadata", "the Job needs metadata (name, namespace)"), NULL;
    const json_t *us = json_object_get(request, "spec");
    if (!json_is_object(us)) return gx_errf(err, 422, "spec", "the Job needs a spec"), NULL;
    json_t *m = metadata(c, md, user, err);
    if (!m) return NULL;
    json_t *spec = json_deep_copy(us);
    /* Argo CD's self-heal re-creates a Job its TTL deleted, and so runs it again
     * (argo-cd #8586): the file's removal (cancel, expiry) is what ends a fleet Job */
    json_object_del(spec, "ttlSecondsAfterFinished");
    json_object_del(spec, "managedBy");
    json_object_set_new(spec, "suspend", json_true());
    if (c->nworkers > 0) json_object_set_new(spec, "managedBy", json_string(MULTIKUEUE));
    if (clean_template(c, spec, err)) {
        json_decref(spec);
        json_decref(m);
        return NULL;
    }
    return json_pack("{s:s,s:s,s:o,s:o}", "apiVersion", "batch/v1", "kind", "Job", "metadata", m, "spec", spec);
}
