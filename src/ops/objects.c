/* objects: applying and deleting configuration objects (Kueue kinds, Nodes).
 * Owns: the all-or-nothing apply (every document is first validated on a scratch
 * engine holding the current objects, so a bad third document leaves the first two
 * unapplied), the created/configured/unchanged verdict, and their durable record.
 * Must not: validate fields itself beyond the names every kind shares: the engine (or the
 * gateway, the portal) is the one judge of a manifest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ops/daemon.h"
#include "lib/k8sname.h"
#include "lib/yaml.h"
#include "maas/maas.h"
#include "portal/portal.h"

static const char *const kinds[] = {"ResourceFlavor", "Cohort", "ClusterQueue", "LocalQueue",
                                    "WorkloadPriorityClass", "Node", "Tier", "Model", "Template",
                                    "PortalConfig", NULL};

/* Objects are applied in this order so that references resolve whatever the order
 * of documents in a file. */
static int kind_rank(const char *kind)
{
    for (int i = 0; kinds[i]; i++)
        if (kind && !strcmp(kind, kinds[i])) return i;
    return -1;
}

static int check_kind(const json_t *doc, gx_err *err)
{
    if (!json_is_object(doc)) return gx_errf(err, 400, "", "a manifest must be a mapping");
    const char *av = json_string_value(json_object_get(doc, "apiVersion"));
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (!kind) return gx_errf(err, 400, "kind", "missing kind");
    if (!av) return gx_errf(err, 400, "apiVersion", "missing apiVersion");
    if (!strcmp(kind, "Job") || !strcmp(kind, "Workload"))
        return gx_errf(err, 422, "kind", "a %s is submitted, not applied: gpuaas submit -f FILE "
                       "(POST /api/v1/workloads)", kind);
    int r = kind_rank(kind);
    if (r < 0)
        return gx_errf(err, 400, "kind", "unknown kind %s (known: ResourceFlavor, Cohort, ClusterQueue, "
                       "LocalQueue, WorkloadPriorityClass, Node, Tier, Model, Template, PortalConfig)", kind);
    const char *want = !strcmp(kind, "Node") || gx_maas_owns_kind(kind) || gx_portal_owns_kind(kind)
                           ? "gpuaas.dev/v1alpha1" : "kueue.x-k8s.io/v1beta2";
    if (strcmp(av, want)) {
        if (!strcmp(av, "kueue.x-k8s.io/v1beta1"))
            return gx_errf(err, 400, "apiVersion", "kueue.x-k8s.io/v1beta1 is deprecated; write %s "
                           "(ClusterQueue spec.cohort became spec.cohortName)", want);
        return gx_errf(err, 400, "apiVersion", "%s %s is unknown; %s is %s", av, kind, kind, want);
    }
    return 0;
}

/* Kubernetes' name rules for applied objects: every name a DNS-1123 subdomain, a
 * LocalQueue's namespace a label. Checked here for every kind (Kueue's, Node, the
 * gateway's and the portal's), before any kind's own checks. */
static int check_names(const json_t *doc, gx_err *err)
{
    const json_t *md = json_object_get(doc, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    if (!name || !*name) {
        if (json_object_get(md, "generateName"))
            return gx_errf(err, 422, "metadata.generateName", "apply needs a fixed metadata.name "
                           "(generateName is for what is submitted)");
        return gx_errf(err, 422, "metadata.name", "Required value: name or generateName is required");
    }
    if (gx_k8s_check_subdomain(name, GX_K8S_SUBDOMAIN_MAX, "metadata.name", err)) return -1;
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    if (!strcmp(json_string_value(json_object_get(doc, "kind")), "LocalQueue") && ns &&
        gx_k8s_check_label(ns, GX_K8S_LABEL_MAX, "metadata.namespace", err))
        return -1;
    return 0;
}

static void obj_key(const json_t *doc, char *out, size_t n, const char **kind, const char **ns, const char **name)
{
    const json_t *md = json_object_get(doc, "metadata");
    *kind = json_string_value(json_object_get(doc, "kind"));
    *name = json_string_value(json_object_get(md, "name")) ?: "";
    *ns = "";
    if (*kind && !strcmp(*kind, "LocalQueue")) *ns = json_string_value(json_object_get(md, "namespace")) ?: "default";
    snprintf(out, n, "%s/%s/%s", *kind ? *kind : "", *ns, *name);
}

/* Apply every known object to e in kind order. */
static int apply_current(gx_daemon *d, gx_engine *e, gx_err *err)
{
    for (int r = 0; kinds[r]; r++) {
        const char *k;
        json_t *m;
        json_object_foreach(d->objects, k, m) {
            if (kind_rank(json_string_value(json_object_get(m, "kind"))) != r) continue;
            if (gx_maas_owns_kind(json_string_value(json_object_get(m, "kind")))) continue; /* the gateway's */
            if (gx_portal_owns_kind(json_string_value(json_object_get(m, "kind")))) continue; /* the portal's */
            if (gx_engine_apply(e, m, err)) return -1;
        }
    }
    return 0;
}

/* Indices of docs sorted by kind rank, stable. */
static void order_docs(const gx_yaml_docs *docs, size_t *idx)
{
    size_t k = 0;
    for (int r = 0; kinds[r]; r++)
        for (size_t i = 0; i < docs->n; i++)
            if (kind_rank(json_string_value(json_object_get(docs->docs[i], "kind"))) == r) idx[k++] = i;
}

static void annotate(const gx_yaml_docs *docs, size_t i, gx_err *err)
{
    err->doc = (int)i;
    if (docs->lines && docs->lines[i]) gx_linemap_annotate(docs->lines[i], err);
}

int gx_d_apply(gx_daemon *d, const gx_yaml_docs *docs, json_t **result, gx_err *err)
{
    if (docs->n > 1000) return gx_errf(err, 413, "", "more than 1000 objects in one apply");
    for (size_t i = 0; i < docs->n; i++)
        if (check_kind(docs->docs[i], err) || check_names(docs->docs[i], err)) { annotate(docs, i, err); return -1; }
    size_t *idx = calloc(docs->n ? docs->n : 1, sizeof *idx);
    if (!idx) abort();
    order_docs(docs, idx);
    /* 1. validate everything on a scratch engine */
    gx_engine_opts o = {.fair_sharing = d->cfg.fair_sharing};
    gx_engine *scratch = gx_engine_new(&o);
    gx_err ignore;
    if (apply_current(d, scratch, &ignore)) {
        /* cannot happen unless the store holds something the engine now refuses */
        fprintf(stderr, "gpuaas: warning: stored objects no longer validate: %s\n", ignore.msg);
    }
    size_t ni;
    json_t *node;
    json_array_foreach(d->cfg.nodes, ni, node) gx_engine_apply(scratch, node, &ignore);
    for (size_t k = 0; k < docs->n; k++)
        if (gx_portal_owns_kind(json_string_value(json_object_get(docs->docs[idx[k]], "kind")))
                ? gx_portal_check_object(docs->docs[idx[k]], err)
                : gx_maas_owns_kind(json_string_value(json_object_get(docs->docs[idx[k]], "kind")))
                ? gx_maas_validate(d->maas, docs->docs[idx[k]], docs->docs, docs->n, err)
                : gx_engine_apply(scratch, docs->docs[idx[k]], err)) {
            annotate(docs, idx[k], err);
            gx_engine_free(scratch);
            free(idx);
            return -1;
        }
    gx_engine_free(scratch);
    /* 2. record, then apply for real */
    int64_t now = gx_loop_now(d->loop);
    json_t *items = json_array();
    if (gx_store_begin(d->store, err)) goto fail;
    for (size_t k = 0; k < docs->n; k++) {
        const json_t *doc = docs->docs[idx[k]];
        char key[512];
        const char *kind, *ns, *name;
        obj_key(doc, key, sizeof key, &kind, &ns, &name);
        json_t *old = json_object_get(d->objects, key);
        const char *action = !old ? "created" : json_equal(old, (json_t *)doc) ? "unchanged" : "configured";
        json_t *item = json_pack("{s:s,s:s,s:s}", "kind", kind, "name", name, "action", action);
        if (*ns) json_object_set_new(item, "namespace", json_string(ns));
        json_array_append_new(items, item);
        if (!strcmp(action, "unchanged")) continue;
        if (gx_store_put_object(d->store, kind, ns, name, doc, now, err)) { gx_store_rollback(d->store); goto fail; }
    }
    if (gx_store_commit(d->store, err)) { gx_store_rollback(d->store); goto fail; }
    for (size_t k = 0; k < docs->n; k++) {
        const json_t *doc = docs->docs[idx[k]];
        char key[512];
        const char *kind, *ns, *name;
        obj_key(doc, key, sizeof key, &kind, &ns, &name);
        gx_err e;
        gx_err_clear(&e);
        if (gx_maas_owns_kind(kind)) gx_maas_apply(d->maas, doc);
        else if (gx_portal_owns_kind(kind)) { /* the portal reads d->objects */ }
        else if (gx_engine_apply(d->eng, doc, &e))
            fprintf(stderr, "gpuaas: warning: %s validated but did not apply: %s\n", key, e.msg);
        json_object_set_new(d->objects, key, json_deep_copy(doc));
    }
    d->dirty = 1;
    free(idx);
    *result = json_pack("{s:o}", "items", items);
    return 0;
fail:
    json_decref(items);
    free(idx);
    return -1;
}

int gx_d_load_objects(gx_daemon *d, gx_err *err)
{
    json_t *rows = gx_store_objects(d->store, err);
    if (!rows) return -1;
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        char key[512];
        snprintf(key, sizeof key, "%s/%s/%s", json_string_value(json_object_get(r, "kind")),
                 json_string_value(json_object_get(r, "namespace")), json_string_value(json_object_get(r, "name")));
        json_object_set(d->objects, key, json_object_get(r, "manifest"));
    }
    json_decref(rows);
    for (int k = 0; kinds[k]; k++) {
        const char *key;
        json_t *m;
        json_object_foreach(d->objects, key, m) {
            if (kind_rank(json_string_value(json_object_get(m, "kind"))) != k) continue;
            gx_err e;
            gx_err_clear(&e);
            if (gx_maas_owns_kind(json_string_value(json_object_get(m, "kind")))) {
                if (d->maas) gx_maas_apply(d->maas, m);
            } else if (gx_portal_owns_kind(json_string_value(json_object_get(m, "kind")))) {
                continue; /* the portal reads d->objects */
            } else if (gx_engine_apply(d->eng, m, &e))
                fprintf(stderr, "gpuaas: warning: stored %s no longer applies: %s\n", key, e.msg);
        }
    }
    return 0;
}

int gx_d_delete_object(gx_daemon *d, const char *kind, const char *ns, const char *name, gx_err *err)
{
    char key[512];
    snprintf(key, sizeof key, "%s/%s/%s", kind, ns ? ns : "", name);
    if (!json_object_get(d->objects, key)) return gx_errf(err, 404, "", "no %s %s%s%s", kind, ns && *ns ? ns : "", ns && *ns ? "/" : "", name);
    if (gx_portal_owns_kind(kind)) {
        if (gx_store_delete_object(d->store, kind, ns, name, err)) return -1;
        json_object_del(d->objects, key);
        return 0;
    }
    int maas = gx_maas_owns_kind(kind);
    if (maas) {
        if (gx_store_delete_object(d->store, kind, ns, name, err)) return -1;
        gx_maas_delete(d->maas, kind, name, err);
        json_object_del(d->objects, key);
        return 0;
    }
    if (gx_engine_delete(d->eng, kind, ns, name, err)) return -1;
    if (gx_store_delete_object(d->store, kind, ns, name, err)) {
        gx_engine_apply(d->eng, json_object_get(d->objects, key), err); /* put it back */
        return -1;
    }
    json_object_del(d->objects, key);
    d->dirty = 1;
    return 0;
}
