/* fleet: the Fleet object (gpuaas.dev/v1alpha1), read and judged (docs/fleet.md,
 * "Configuration").
 * Owns: gx_fleet_parse / free / find: every field of the document checked with its path
 * in the error (unknown fields refused, names as Kubernetes spells them, counts and
 * lengths bounded), the git overlay (a cluster's git fields over spec.git) and defaults.
 * Must not: read files or resolve paths (the caller resolves them against the config's
 * folder), or look at the applied objects (render_kueue.c checks the references). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fleet/fleet.h"
#include "gpu/devplugin.h"
#include "gpu/mig.h"
#include "lib/alloc.h"
#include "lib/k8sname.h"

#define LIST_MAX 64       /* namespaces, clusterQueues, nodes per cluster */
#define STR_MAX 253       /* any string of the document */
/* spec.clusters of a MultiKueueConfig: +kubebuilder:validation:MaxItems=20 in Kueue's
 * v1beta2 types (tests/k8s/crds/kueue.x-k8s.io_multikueueconfigs.yaml) */
#define WORKERS_MAX 20

/* Refuse any key of obj not in known (NULL-ended); field is obj's path. */
static int only_known(const json_t *obj, const char *field, const char *const *known, gx_err *err)
{
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)obj, k, v) {
        int ok = 0;
        for (int i = 0; known[i] && !ok; i++) ok = !strcmp(k, known[i]);
        if (ok) continue;
        char f[192], list[256] = "";
        size_t at = 0;
        for (int i = 0; known[i] && at < sizeof list; i++) {
            int w = snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "", known[i]);
            if (w < 0) break;
            at += (size_t)w;
        }
        return gx_errf(err, 422, gx_err_path(f, sizeof f, field, "%s%s%s", field, *field ? "." : "", k),
                       "unknown field \"%s\" (known: %s)", k, list);
    }
    return 0;
}

static int need_object(const json_t *v, const char *field, gx_err *err)
{
    return json_is_object(v) ? 0 : gx_errf(err, 422, field, "must be a mapping");
}

/* An optional string field of obj: *out stays NULL when absent. Strings are at most
 * 253 bytes and never empty. */
static int opt_str(const json_t *obj, const char *key, const char *field, char **out, gx_err *err)
{
    const json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) return 0;
    char f[192];
    gx_err_path(f, sizeof f, field, "%s.%s", field, key);
    if (!json_is_string(v) || !json_string_length(v)) return gx_errf(err, 422, f, "must be a non-empty string");
    if (json_string_length(v) > STR_MAX) return gx_errf(err, 422, f, "must be at most %d characters", STR_MAX);
    if (strlen(json_string_value(v)) != json_string_length(v)) return gx_errf(err, 422, f, "must not contain NUL");
    free(*out);
    *out = gx_xstrdup(json_string_value(v));
    return 0;
}

static void git_free(gx_fleet_git *g)
{
    free(g->repo);
    free(g->branch);
    free(g->folder);
    free(g->credentials_file);
    free(g->author_name);
    free(g->author_email);
    memset(g, 0, sizeof *g);
}

/* A git block (spec.git or a cluster's git) read over *g: the fields it has replace
 * those of g, which is how a cluster's git overlays the Fleet's. */
static int git_read(const json_t *v, const char *field, int per_cluster, gx_fleet_git *g, gx_err *err)
{
    static const char *const known[] = {"repo", "branch", "folder", "credentialsFile", "author", NULL};
    if (!v) return 0;
    if (need_object(v, field, err) || only_known(v, field, known, err)) return -1;
    char f[192];
    if (!per_cluster && json_object_get(v, "folder"))
        return gx_errf(err, 422, gx_err_path(f, sizeof f, field, "%s.folder", field),
                       "a folder is per cluster (spec.clusters[].git.folder; default clusters/<name>)");
    if (opt_str(v, "repo", field, &g->repo, err) || opt_str(v, "branch", field, &g->branch, err) ||
        opt_str(v, "folder", field, &g->folder, err) || opt_str(v, "credentialsFile", field, &g->credentials_file, err))
        return -1;
    if (g->folder && json_object_get(v, "folder")) {
        /* the folder becomes a path under the output and the repository: relative, no
         * "." or ".." part, no empty part */
        const char *s = g->folder;
        int bad = s[0] == '/' || s[strlen(s) - 1] == '/';
        for (const char *p = s; *p && !bad; p = strchr(p, '/') ? strchr(p, '/') + 1 : p + strlen(p)) {
            size_t n = strcspn(p, "/");
            bad = n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.');
        }
        if (bad)
            return gx_errf(err, 422, gx_err_path(f, sizeof f, field, "%s.folder", field),
                           "must be a relative path without \".\", \"..\" or empty parts (\"%s\")", s);
    }
    const json_t *a = json_object_get(v, "author");
    if (a) {
        static const char *const ak[] = {"name", "email", NULL};
        gx_err_path(f, sizeof f, field, "%s.author", field);
        if (need_object(a, f, err) || only_known(a, f, ak, err) || opt_str(a, "name", f, &g->author_name, err) ||
            opt_str(a, "email", f, &g->author_email, err))
            return -1;
    }
    return 0;
}

static void git_copy(gx_fleet_git *to, const gx_fleet_git *from)
{
#define DUP(x) to->x = from->x ? gx_xstrdup(from->x) : NULL
    DUP(repo); DUP(branch); DUP(folder); DUP(credentials_file); DUP(author_name); DUP(author_email);
#undef DUP
}

static void free_strs(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* A list of unique names: label (namespaces, workers) or subdomain (queues). */
static int name_list(const json_t *v, const char *field, int label, char ***out, size_t *n, size_t max, gx_err *err)
{
    if (!v || json_is_null(v)) return 0;
    if (!json_is_array(v)) return gx_errf(err, 422, field, "must be a list of names");
    if (json_array_size(v) > max) return gx_errf(err, 422, field, "at most %zu entries", max);
    *out = gx_xcalloc(json_array_size(v) + 1, sizeof **out);
    size_t i;
    const json_t *x;
    json_array_foreach(v, i, x) {
        char f[192];
        gx_err_path(f, sizeof f, field, "%s[%zu]", field, i);
        const char *s = json_string_value(x);
        if (!s) return gx_errf(err, 422, f, "must be a name");
        if (label ? gx_k8s_check_label(s, GX_K8S_LABEL_MAX, f, err) : gx_k8s_check_subdomain(s, GX_K8S_SUBDOMAIN_MAX, f, err))
            return -1;
        for (size_t k = 0; k < *n; k++)
            if (!strcmp((*out)[k], s)) return gx_errf(err, 422, f, "Duplicate value: \"%s\"", s);
        (*out)[(*n)++] = gx_xstrdup(s);
    }
    return 0;
}

/* labels: {key: value}, both strings of at most 253 bytes, keys non-empty. */
static int labels_read(const json_t *v, const char *field, json_t **out, gx_err *err)
{
    *out = json_object();
    if (!v || json_is_null(v)) return 0;
    if (!json_is_object(v)) return gx_errf(err, 422, field, "must be a mapping of label: value");
    const char *k;
    const json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        char f[192];
        gx_err_path(f, sizeof f, field, "%s.%s", field, k);
        if (!*k || strlen(k) > STR_MAX) return gx_errf(err, 422, field, "a label key must be 1 to %d characters", STR_MAX);
        if (!json_is_string(x) || json_string_length(x) > STR_MAX)
            return gx_errf(err, 422, f, "must be a string of at most %d characters", STR_MAX);
        json_object_set_new(*out, k, json_string(json_string_value(x)));
    }
    return 0;
}

/* A ConfigMap data key, which is what a device-plugin config key becomes. */
static int configmap_key_ok(const char *k)
{
    size_t n = strlen(k);
    return n && n <= STR_MAX && strspn(k, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._") == n &&
           strcmp(k, ".") && strcmp(k, "..");
}

/* gpuOperator: {devicePlugin: {default, configs: {KEY: config}}, migConfig, nodes}. */
static int gpu_read(const json_t *v, const char *field, gx_fleet_cluster *c, gx_err *err)
{
    static const char *const known[] = {"devicePlugin", "migConfig", "nodes", NULL};
    static const char *const dk[] = {"default", "configs", NULL};
    static const char *const nk[] = {"name", "devicePluginConfig", "migConfig", NULL};
    if (!v || json_is_null(v)) return 0;
    char f[192], g[192];
    if (need_object(v, field, err) || only_known(v, field, known, err)) return -1;
    const json_t *dp = json_object_get(v, "devicePlugin");
    if (dp) {
        gx_err_path(f, sizeof f, field, "%s.devicePlugin", field);
        if (need_object(dp, f, err) || only_known(dp, f, dk, err) || opt_str(dp, "default", f, &c->device_plugin_default, err))
            return -1;
        const json_t *cfgs = json_object_get(dp, "configs");
        gx_err_path(g, sizeof g, f, "%s.configs", f);
        if (!json_is_object(cfgs) || !json_object_size(cfgs))
            return gx_errf(err, 422, g, "must be a mapping of name: device-plugin config (at least one)");
        if (json_object_size(cfgs) > LIST_MAX) return gx_errf(err, 422, g, "at most %d configs", LIST_MAX);
        const char *k;
        const json_t *doc;
        json_object_foreach((json_t *)cfgs, k, doc) {
            char h[192];
            gx_err_path(h, sizeof h, g, "%s.%s", g, k);
            if (!configmap_key_ok(k))
                return gx_errf(err, 422, g, "\"%.64s\" is not a ConfigMap key ([-._a-zA-Z0-9]+, at most %d)", k, STR_MAX);
            gx_dp_config parsed;
            if (gx_gpu_dp_parse(doc, &parsed, err)) { gx_err_prefix(err, h); return -1; }
        }
        if (c->device_plugin_default && !json_object_get(cfgs, c->device_plugin_default))
            return gx_errf(err, 422, gx_err_path(g, sizeof g, f, "%s.default", f), "\"%s\" is not one of the configs",
                           c->device_plugin_default);
        if (!c->device_plugin_default && json_object_size(cfgs) > 1)
            return gx_errf(err, 422, gx_err_path(g, sizeof g, f, "%s.default", f),
                           "Required value: name the config nodes without devicePluginConfig get");
        c->device_plugin = json_deep_copy(cfgs);
    }
    const json_t *mig = json_object_get(v, "migConfig");
    if (mig) {
        gx_err_path(f, sizeof f, field, "%s.migConfig", field);
        if (gx_gpu_mig_config_check(mig, err)) { gx_err_prefix(err, f); return -1; }
        c->mig_parted = json_deep_copy(mig);
    }
    const json_t *nodes = json_object_get(v, "nodes");
    if (!nodes) return 0;
    gx_err_path(f, sizeof f, field, "%s.nodes", field);
    if (!json_is_array(nodes)) return gx_errf(err, 422, f, "must be a list of {name, devicePluginConfig, migConfig}");
    if (json_array_size(nodes) > LIST_MAX) return gx_errf(err, 422, f, "at most %d nodes", LIST_MAX);
    c->nodes = gx_xcalloc(json_array_size(nodes) + 1, sizeof *c->nodes);
    size_t i;
    const json_t *x;
    json_array_foreach(nodes, i, x) {
        gx_err_path(g, sizeof g, f, "%s[%zu]", f, i);
        gx_fleet_node *n = &c->nodes[c->nnodes++];
        char h[192];
        if (need_object(x, g, err) || only_known(x, g, nk, err)) return -1;
        const char *name = json_string_value(json_object_get(x, "name"));
        if (gx_k8s_check_subdomain(name, GX_K8S_SUBDOMAIN_MAX, gx_err_path(h, sizeof h, g, "%s.name", g), err)) return -1;
        for (size_t k = 0; k + 1 < c->nnodes; k++)
            if (!strcmp(c->nodes[k].name, name)) return gx_errf(err, 422, h, "Duplicate value: \"%s\"", name);
        n->name = gx_xstrdup(name);
        if (opt_str(x, "devicePluginConfig", g, &n->device_plugin_config, err) || opt_str(x, "migConfig", g, &n->mig_config, err))
            return -1;
        if (n->device_plugin_config && !json_object_get(c->device_plugin, n->device_plugin_config))
            return gx_errf(err, 422, gx_err_path(h, sizeof h, g, "%s.devicePluginConfig", g),
                           "\"%s\" is not a key of gpuOperator.devicePlugin.configs", n->device_plugin_config);
        if (n->mig_config && !json_object_get(json_object_get(c->mig_parted, "mig-configs"), n->mig_config))
            return gx_errf(err, 422, gx_err_path(h, sizeof h, g, "%s.migConfig", g),
                           "\"%s\" is not a config of gpuOperator.migConfig's mig-configs", n->mig_config);
    }
    return 0;
}

static int cluster_read(const json_t *v, const char *field, const gx_fleet_git *base, gx_fleet_cluster *c, gx_err *err)
{
    static const char *const known[] = {"name", "labels", "git", "kubeconfig", "kubeContext", "namespaces",
                                        "clusterQueues", "gpuOperator", "multiKueue", NULL};
    char f[192];
    if (need_object(v, field, err) || only_known(v, field, known, err)) return -1;
    const char *name = json_string_value(json_object_get(v, "name"));
    if (gx_k8s_check_label(name, GX_K8S_LABEL_MAX, gx_err_path(f, sizeof f, field, "%s.name", field), err)) return -1;
    c->name = gx_xstrdup(name);
    git_copy(&c->git, base);
    if (labels_read(json_object_get(v, "labels"), gx_err_path(f, sizeof f, field, "%s.labels", field), &c->labels, err) ||
        git_read(json_object_get(v, "git"), gx_err_path(f, sizeof f, field, "%s.git", field), 1, &c->git, err) ||
        opt_str(v, "kubeconfig", field, &c->kubeconfig, err) || opt_str(v, "kubeContext", field, &c->kube_context, err))
        return -1;
    if (!c->git.repo)
        return gx_errf(err, 422, gx_err_path(f, sizeof f, field, "%s.git.repo", field),
                       "Required value: a git repository, here or in spec.git.repo");
    if (!c->git.branch) c->git.branch = gx_xstrdup("main");
    if (!c->git.author_name) c->git.author_name = gx_xstrdup("gpuaas");
    if (!c->git.author_email) c->git.author_email = gx_xstrdup("gpuaas@localhost");
    if (!c->git.folder) {
        char d[96];
        snprintf(d, sizeof d, "clusters/%s", c->name);
        c->git.folder = gx_xstrdup(d);
    }
    if (name_list(json_object_get(v, "namespaces"), gx_err_path(f, sizeof f, field, "%s.namespaces", field), 1,
                  &c->namespaces, &c->nnamespaces, LIST_MAX, err) ||
        name_list(json_object_get(v, "clusterQueues"), gx_err_path(f, sizeof f, field, "%s.clusterQueues", field), 0,
                  &c->cluster_queues, &c->ncluster_queues, LIST_MAX, err) ||
        gpu_read(json_object_get(v, "gpuOperator"), gx_err_path(f, sizeof f, field, "%s.gpuOperator", field), c, err))
        return -1;
    const json_t *mk = json_object_get(v, "multiKueue");
    if (mk) {
        static const char *const mkk[] = {"workers", NULL};
        gx_err_path(f, sizeof f, field, "%s.multiKueue", field);
        if (need_object(mk, f, err) || only_known(mk, f, mkk, err)) return -1;
        char g[192];
        if (name_list(json_object_get(mk, "workers"), gx_err_path(g, sizeof g, f, "%s.workers", f), 1, &c->workers,
                      &c->nworkers, WORKERS_MAX, err))
            return -1;
    }
    return 0;
}

/* The workers of every manager: other clusters of the fleet, never a manager (no
 * chains), never the manager itself. */
static int check_workers(const gx_fleet *f, gx_err *err)
{
    for (size_t i = 0; i < f->n; i++) {
        const gx_fleet_cluster *c = &f->clusters[i];
        for (size_t k = 0; k < c->nworkers; k++) {
            char p[192];
            snprintf(p, sizeof p, "spec.clusters[%zu].multiKueue.workers[%zu]", i, k);
            const gx_fleet_cluster *w = gx_fleet_find(f, c->workers[k]);
            if (!strcmp(c->workers[k], c->name)) return gx_errf(err, 422, p, "a cluster cannot be its own worker");
            if (!w) return gx_errf(err, 422, p, "\"%s\" is not a cluster of this fleet", c->workers[k]);
            if (w->nworkers)
                return gx_errf(err, 422, p, "\"%s\" is a MultiKueue manager itself: a worker cannot dispatch further (no chains)",
                               c->workers[k]);
        }
    }
    return 0;
}

int gx_fleet_parse(const json_t *doc, gx_fleet *out, gx_err *err)
{
    static const char *const known[] = {"apiVersion", "kind", "metadata", "spec", NULL};
    static const char *const mdk[] = {"name", "labels", "annotations", NULL};
    static const char *const sk[] = {"git", "clusters", NULL};
    memset(out, 0, sizeof *out);
    gx_err_clear(err);
    if (need_object(doc, "", err) || only_known(doc, "", known, err)) return -1;
    const char *av = json_string_value(json_object_get(doc, "apiVersion"));
    if (!av || strcmp(av, GX_FLEET_API_VERSION)) return gx_errf(err, 422, "apiVersion", "must be %s", GX_FLEET_API_VERSION);
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (!kind || strcmp(kind, "Fleet")) return gx_errf(err, 422, "kind", "must be Fleet");
    const json_t *md = json_object_get(doc, "metadata");
    if (need_object(md, "metadata", err) || only_known(md, "metadata", mdk, err)) return -1;
    const char *name = json_string_value(json_object_get(md, "name"));
    if (gx_k8s_check_subdomain(name, GX_K8S_SUBDOMAIN_MAX, "metadata.name", err)) return -1;
    const json_t *spec = json_object_get(doc, "spec");
    if (need_object(spec, "spec", err) || only_known(spec, "spec", sk, err)) return -1;
    gx_fleet_git base = {0};
    const json_t *cl = json_object_get(spec, "clusters");
    int rc = -1;
    out->name = gx_xstrdup(name);
    if (git_read(json_object_get(spec, "git"), "spec.git", 0, &base, err)) goto out;
    if (!json_is_array(cl) || !json_array_size(cl)) {
        gx_errf(err, 422, "spec.clusters", "Required value: a list of clusters (at least one)");
        goto out;
    }
    if (json_array_size(cl) > GX_FLEET_CLUSTERS_MAX) {
        gx_errf(err, 422, "spec.clusters", "at most %d clusters", GX_FLEET_CLUSTERS_MAX);
        goto out;
    }
    out->clusters = gx_xcalloc(json_array_size(cl), sizeof *out->clusters);
    size_t i;
    const json_t *x;
    json_array_foreach(cl, i, x) {
        char f[64];
        snprintf(f, sizeof f, "spec.clusters[%zu]", i);
        gx_fleet_cluster *c = &out->clusters[out->n++];
        if (cluster_read(x, f, &base, c, err)) goto out;
        for (size_t k = 0; k + 1 < out->n; k++)
            if (!strcmp(out->clusters[k].name, c->name)) {
                gx_errf(err, 422, strcat(f, ".name"), "Duplicate value: \"%s\"", c->name);
                goto out;
            }
        for (size_t k = 0; k + 1 < out->n; k++)
            if (!strcmp(out->clusters[k].git.repo, c->git.repo) && !strcmp(out->clusters[k].git.branch, c->git.branch) &&
                !strcmp(out->clusters[k].git.folder, c->git.folder)) {
                gx_errf(err, 422, strcat(f, ".git.folder"), "\"%s\" is also cluster %s's folder in the same repository and branch",
                        c->git.folder, out->clusters[k].name);
                goto out;
            }
    }
    rc = check_workers(out, err);
out:
    git_free(&base);
    if (rc) gx_fleet_free(out);
    return rc;
}

void gx_fleet_free(gx_fleet *f)
{
    for (size_t i = 0; i < f->n; i++) {
        gx_fleet_cluster *c = &f->clusters[i];
        free(c->name);
        json_decref(c->labels);
        git_free(&c->git);
        free(c->kubeconfig);
        free(c->kube_context);
        free_strs(c->namespaces, c->nnamespaces);
        free_strs(c->cluster_queues, c->ncluster_queues);
        json_decref(c->device_plugin);
        free(c->device_plugin_default);
        json_decref(c->mig_parted);
        for (size_t k = 0; k < c->nnodes; k++) {
            free(c->nodes[k].name);
            free(c->nodes[k].device_plugin_config);
            free(c->nodes[k].mig_config);
        }
        free(c->nodes);
        free_strs(c->workers, c->nworkers);
    }
    free(f->clusters);
    free(f->name);
    memset(f, 0, sizeof *f);
}

const gx_fleet_cluster *gx_fleet_find(const gx_fleet *f, const char *name)
{
    for (size_t i = 0; name && i < f->n; i++)
        if (!strcmp(f->clusters[i].name, name)) return &f->clusters[i];
    return NULL;
}
