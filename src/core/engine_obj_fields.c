/* engine_obj_fields: the Kubernetes-shaped fields that several objects and workloads
 * share: labels, taints, tolerations, required node affinity, metadata names.
 * Owns: parsing them from JSON (errors name the field) and matching them (a toleration
 * against a taint, node affinity against labels), and freeing what they parse into.
 * Must not: know any object kind or touch the engine: callers (engine_obj.c for the
 * Kueue objects, engine_place.c for Nodes, engine_wl.c for pod templates) decide what
 * the fields mean there. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/engine_int.h"
#include "lib/k8sname.h"

const char *gx_engine_obj_label(const gx_labels *l, const char *k)
{
    for (int i = 0; i < l->n; i++)
        if (!strcmp(l->k[i], k)) return l->v[i];
    return NULL;
}

void gx_engine_obj_labels_free(gx_labels *l)
{
    for (int i = 0; i < l->n; i++) { free(l->k[i]); free(l->v[i]); }
    free(l->k);
    free(l->v);
    memset(l, 0, sizeof *l);
}

void gx_engine_obj_taints_free(gx_taint *t, int n)
{
    for (int i = 0; i < n; i++) { free(t[i].key); free(t[i].value); free(t[i].effect); }
    free(t);
}

void gx_engine_obj_tols_free(gx_toler *t, int n)
{
    for (int i = 0; i < n; i++) { free(t[i].key); free(t[i].op); free(t[i].value); free(t[i].effect); }
    free(t);
}

int gx_engine_obj_parse_labels(const json_t *o, gx_labels *out, const char *field, gx_err *err)
{
    memset(out, 0, sizeof *out);
    if (!o || json_is_null(o)) return 0;
    if (!json_is_object(o)) return gx_errf(err, 422, field, "must be a map of string to string");
    size_t n = json_object_size(o);
    out->k = gx_xcalloc(n ? n : 1, sizeof *out->k);
    out->v = gx_xcalloc(n ? n : 1, sizeof *out->v);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)o, k, v) {
        if (!json_is_string(v)) {
            char f[192];
            snprintf(f, sizeof f, "%s[\"%s\"]", field, k);
            gx_engine_obj_labels_free(out);
            return gx_errf(err, 422, f, "label value must be a string");
        }
        out->k[out->n] = gx_xstrdup(k);
        out->v[out->n++] = gx_xstrdup(json_string_value(v));
    }
    return 0;
}


/* spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution
 * .nodeSelectorTerms, validated; *out = a copy of the terms or NULL. */
int gx_engine_obj_parse_affinity(const json_t *spec, json_t **out, const char *field, gx_err *err)
{
    *out = NULL;
    const json_t *req = json_object_get(json_object_get(json_object_get(spec, "affinity"), "nodeAffinity"),
                                        "requiredDuringSchedulingIgnoredDuringExecution");
    if (!req) return 0;
    const json_t *terms = json_object_get(req, "nodeSelectorTerms");
    char f[256];
    snprintf(f, sizeof f, "%s.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms", field);
    if (!json_is_array(terms)) return gx_errf(err, 422, f, "must be a list of terms");
    for (size_t i = 0; i < json_array_size(terms); i++) {
        const json_t *ex = json_object_get(json_array_get(terms, i), "matchExpressions");
        for (size_t j = 0; j < json_array_size(ex); j++) {
            const char *op = gx_engine_obj_str(json_array_get(ex, j), "operator"), *k = gx_engine_obj_str(json_array_get(ex, j), "key");
            if (!k || !op || (strcmp(op, "In") && strcmp(op, "NotIn") && strcmp(op, "Exists") && strcmp(op, "DoesNotExist")
                               && strcmp(op, "Gt") && strcmp(op, "Lt"))) {
                char g[320];
                snprintf(g, sizeof g, "%s[%zu].matchExpressions[%zu]", f, i, j);
                return gx_errf(err, 422, g, "a match expression needs a key and an operator In, NotIn, Exists, DoesNotExist, Gt or Lt");
            }
        }
    }
    *out = json_deep_copy(terms);
    return 0;
}

static int expr_match(const json_t *x, const gx_labels *labels)
{
    const char *key = gx_engine_obj_str(x, "key"), *op = gx_engine_obj_str(x, "operator");
    const char *v = gx_engine_obj_label(labels, key);
    const json_t *vals = json_object_get(x, "values");
    if (!strcmp(op, "Exists")) return v != NULL;
    if (!strcmp(op, "DoesNotExist")) return v == NULL;
    if (!v) return 0;
    if (!strcmp(op, "Gt") || !strcmp(op, "Lt")) {
        const char *w = json_string_value(json_array_get(vals, 0));
        if (!w) return 0;
        long long a = strtoll(v, NULL, 10), b = strtoll(w, NULL, 10);
        return !strcmp(op, "Gt") ? a > b : a < b;
    }
    int in = 0;
    for (size_t i = 0; i < json_array_size(vals) && !in; i++)
        in = json_is_string(json_array_get(vals, i)) && !strcmp(json_string_value(json_array_get(vals, i)), v);
    return !strcmp(op, "In") ? in : !in;
}

int gx_engine_obj_affinity_match(const json_t *terms, const gx_labels *labels, const gx_labels *only_keys)
{
    if (!terms || !json_array_size(terms)) return 1;
    for (size_t i = 0; i < json_array_size(terms); i++) {
        const json_t *ex = json_object_get(json_array_get(terms, i), "matchExpressions");
        int used = 0, ok = 1;
        for (size_t j = 0; j < json_array_size(ex) && ok; j++) {
            const json_t *x = json_array_get(ex, j);
            if (only_keys && !gx_engine_obj_label(only_keys, gx_engine_obj_str(x, "key"))) continue;
            used++;
            ok = expr_match(x, labels);
        }
        if (only_keys && !used) return 1;      /* a term with no relevant key matches any flavor */
        if (ok) return 1;
    }
    return 0;
}

const char *gx_engine_obj_str(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int effect_ok(const char *e)
{
    return !strcmp(e, "NoSchedule") || !strcmp(e, "PreferNoSchedule") || !strcmp(e, "NoExecute");
}

int gx_engine_obj_parse_taints(const json_t *a, gx_taint **out, int *n, const char *field, gx_err *err)
{
    *out = NULL;
    *n = 0;
    if (!a || json_is_null(a)) return 0;
    if (!json_is_array(a)) return gx_errf(err, 422, field, "must be a list of {key, value, effect}");
    size_t m = json_array_size(a);
    *out = gx_xcalloc(m ? m : 1, sizeof **out);
    for (size_t i = 0; i < m; i++) {
        const json_t *t = json_array_get(a, i);
        char f[192];
        snprintf(f, sizeof f, "%s[%zu]", field, i);
        const char *k = gx_engine_obj_str(t, "key"), *eff = gx_engine_obj_str(t, "effect");
        if (!json_is_object(t) || !k || !*k) { gx_engine_obj_taints_free(*out, *n); return gx_errf(err, 422, f, "a taint needs a key"); }
        if (!eff || !effect_ok(eff)) {
            gx_engine_obj_taints_free(*out, *n);
            return gx_errf(err, 422, f, "taint effect must be NoSchedule, PreferNoSchedule or NoExecute");
        }
        (*out)[*n].key = gx_xstrdup(k);
        (*out)[*n].value = gx_xstrdup(gx_engine_obj_str(t, "value") ? gx_engine_obj_str(t, "value") : "");
        (*out)[*n].effect = gx_xstrdup(eff);
        (*n)++;
    }
    return 0;
}

int gx_engine_obj_parse_tols(const json_t *a, gx_toler **out, int *n, const char *field, gx_err *err)
{
    *out = NULL;
    *n = 0;
    if (!a || json_is_null(a)) return 0;
    if (!json_is_array(a)) return gx_errf(err, 422, field, "must be a list of tolerations");
    size_t m = json_array_size(a);
    *out = gx_xcalloc(m ? m : 1, sizeof **out);
    for (size_t i = 0; i < m; i++) {
        const json_t *t = json_array_get(a, i);
        char f[192];
        snprintf(f, sizeof f, "%s[%zu]", field, i);
        const char *op = gx_engine_obj_str(t, "operator"), *k = gx_engine_obj_str(t, "key"), *eff = gx_engine_obj_str(t, "effect");
        if (!op) op = "Equal";
        const char *bad = NULL;
        if (!json_is_object(t)) bad = "a toleration must be an object";
        else if (strcmp(op, "Equal") && strcmp(op, "Exists")) bad = "operator must be Equal or Exists";
        else if ((!k || !*k) && strcmp(op, "Exists")) bad = "a toleration without key must use operator Exists";
        else if (!strcmp(op, "Exists") && gx_engine_obj_str(t, "value") && *gx_engine_obj_str(t, "value")) bad = "operator Exists takes no value";
        else if (eff && *eff && !effect_ok(eff)) bad = "effect must be NoSchedule, PreferNoSchedule or NoExecute";
        if (bad) { gx_engine_obj_tols_free(*out, *n); return gx_errf(err, 422, f, "%s", bad); }
        gx_toler *o = &(*out)[(*n)++];
        o->key = gx_xstrdup(k ? k : "");
        o->op = gx_xstrdup(op);
        o->value = gx_xstrdup(gx_engine_obj_str(t, "value") ? gx_engine_obj_str(t, "value") : "");
        o->effect = gx_xstrdup(eff ? eff : "");
    }
    return 0;
}

/* Kubernetes toleration matching: empty key with Exists matches every taint; empty
 * effect matches every effect. */
int gx_engine_obj_tolerates(const gx_taint *t, const gx_toler *tols, int n_tols)
{
    if (!strcmp(t->effect, "PreferNoSchedule")) return 1;
    for (int i = 0; i < n_tols; i++) {
        const gx_toler *o = &tols[i];
        if (o->effect[0] && strcmp(o->effect, t->effect)) continue;
        if (!o->key[0]) { if (!strcmp(o->op, "Exists")) return 1; continue; }
        if (strcmp(o->key, t->key)) continue;
        if (!strcmp(o->op, "Exists") || !strcmp(o->value, t->value)) return 1;
    }
    return 0;
}

int gx_engine_obj_check_name(const json_t *obj, int need_ns, const char **name, const char **ns, gx_err *err)
{
    const json_t *md = json_object_get(obj, "metadata");
    *name = gx_engine_obj_str(md, "name");
    if (!*name || !**name) return gx_errf(err, 422, "metadata.name", "Required value: name or generateName is required");
    if (gx_k8s_check_subdomain(*name, GX_K8S_SUBDOMAIN_MAX, "metadata.name", err)) return -1;
    if (ns) {
        *ns = gx_engine_obj_str(md, "namespace");
        if (need_ns && (!*ns || !**ns)) *ns = "default";
        if (*ns && gx_k8s_check_label(*ns, GX_K8S_LABEL_MAX, "metadata.namespace", err)) return -1;
    }
    return 0;
}
