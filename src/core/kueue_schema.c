/* kueue_schema: Kueue's objects walked against the field table of their CRDs
 * (kueue_schema_table.c), as the API server's strict field validation and OpenAPI
 * checks would: unknown fields refused, types, enums, patterns, lengths and item counts
 * enforced, with Kubernetes' own words. Also the list of fields gpuaas accepts but does
 * not implement, each answered with a warning.
 * Must not: do I/O, read a clock, or apply anything: engine_obj.c calls this before it
 * parses, and ops/objects.c calls it again only to collect the warnings. */
#include <stdio.h>
#include <string.h>
#include "core/kueue_schema.h"
#include "core/quantity.h"
#include "lib/k8sname.h"

const char *const gx_ks_unimplemented[] = {
    "ClusterQueue spec.admissionScope",
    "ClusterQueue spec.concurrentAdmissionPolicy",
    "LocalQueue spec.fairSharing",
    "ResourceFlavor spec.topologyName",
    NULL,
};

typedef struct {
    const char *kind, *version;
    char who[320];           /* "ClusterQueue team-a", for warnings */
    json_t *warnings;
    gx_err *err;
} walk_ctx;

static const gx_ks_field *find(const walk_ctx *c, const char *path)
{
    for (int i = 0; i < gx_ks_nfields; i++) {
        const gx_ks_field *f = &gx_ks_fields[i];
        if (!strcmp(f->path, path) && !strcmp(f->kind, c->kind) && !strcmp(f->version, c->version)) return f;
    }
    return NULL;
}

static int unimplemented(const char *kind, const char *path)
{
    size_t n = strlen(kind);
    for (int i = 0; gx_ks_unimplemented[i]; i++)
        if (!strncmp(gx_ks_unimplemented[i], kind, n) && gx_ks_unimplemented[i][n] == ' '
            && !strcmp(gx_ks_unimplemented[i] + n + 1, path))
            return 1;
    return 0;
}

static const char *json_type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: return "integer";
    case JSON_REAL: return "number";
    case JSON_TRUE: case JSON_FALSE: return "boolean";
    default: return "null";
    }
}

static int wrong_type(walk_ctx *c, const char *cpath, const json_t *v, const char *want)
{
    return gx_errf(c->err, 422, cpath, "Invalid value: \"%s\": must be of type %s", json_type_name(v), want);
}

/* enums is "A|B|C": is s one of them? */
static int in_enum(const char *enums, const char *s)
{
    size_t n = strlen(s);
    for (const char *p = enums; p && *p;) {
        const char *bar = strchr(p, '|');
        size_t m = bar ? (size_t)(bar - p) : strlen(p);
        if (m == n && !strncmp(p, s, n)) return 1;
        p = bar ? bar + 1 : NULL;
    }
    return 0;
}

static int bad_enum(walk_ctx *c, const char *cpath, const char *enums, const char *s)
{
    char list[512] = "";
    size_t at = 0;
    for (const char *p = enums; p && *p && at < sizeof list;) {
        const char *bar = strchr(p, '|');
        int m = bar ? (int)(bar - p) : (int)strlen(p);
        int w = snprintf(list + at, sizeof list - at, "%s\"%.*s\"", at ? ", " : "", m, p);
        if (w < 0) break;
        at += (size_t)w;
        p = bar ? bar + 1 : NULL;
    }
    return gx_errf(c->err, 422, cpath, "Unsupported value: \"%.64s\": supported values: %s", s, list);
}

static int walk(walk_ctx *c, const json_t *v, const char *gpath, const char *cpath);

/* An object's keys: each must be a field of the CRD (strict decoding), then walked. */
static int walk_object(walk_ctx *c, const gx_ks_field *f, const json_t *v, const char *gpath, const char *cpath)
{
    char rq[256];
    snprintf(rq, sizeof rq, "%s", f->required ? f->required : "");
    for (char *save = NULL, *r = strtok_r(rq, ",", &save); r; r = strtok_r(NULL, ",", &save)) {
        const json_t *x = json_object_get(v, r);
        if (!x || json_is_null(x)) {
            char p[512];
            snprintf(p, sizeof p, "%s%s%s", cpath, *cpath ? "." : "", r);
            return gx_errf(c->err, 422, p, "Required value");
        }
    }
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        char g[512], p[512];
        snprintf(g, sizeof g, "%s%s%s", gpath, *gpath ? "." : "", k);
        snprintf(p, sizeof p, "%s%s%s", cpath, *cpath ? "." : "", k);
        if (!find(c, g)) return gx_errf(c->err, 400, p, "unknown field \"%s\"", p);
        if (c->warnings && !json_is_null(x) && unimplemented(c->kind, g)) {
            char w[1024];
            snprintf(w, sizeof w, "%s: %s is not implemented by gpuaas and has no effect", c->who, p);
            json_array_append_new(c->warnings, json_string(w));
        }
        if (walk(c, x, g, p) < 0) return -1;
    }
    return 0;
}

static int walk_array(walk_ctx *c, const gx_ks_field *f, const json_t *v, const char *gpath, const char *cpath)
{
    size_t n = json_array_size(v);
    if (f->max_items >= 0 && n > (size_t)f->max_items)
        return gx_errf(c->err, 422, cpath, "Too many: %zu: must have at most %d items", n, f->max_items);
    if (f->min_items >= 0 && n < (size_t)f->min_items)
        return gx_errf(c->err, 422, cpath, "Invalid value: %zu: must have at least %d items", n, f->min_items);
    char g[512];
    snprintf(g, sizeof g, "%s[]", gpath);
    for (size_t i = 0; i < n; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s[%zu]", cpath, i);
        if (walk(c, json_array_get(v, i), g, p) < 0) return -1;
    }
    return 0;
}

static int walk_string(walk_ctx *c, const gx_ks_field *f, const json_t *v, const char *cpath)
{
    const char *s = json_string_value(v);
    if (f->max_len && json_string_length(v) > (size_t)f->max_len)
        return gx_errf(c->err, 422, cpath, "Too long: may not be more than %d bytes", f->max_len);
    if (f->enums && !in_enum(f->enums, s)) return bad_enum(c, cpath, f->enums, s);
    if (f->pattern == GX_KS_PAT_SUBDOMAIN)
        return gx_k8s_check_subdomain(s, f->max_len ? (size_t)f->max_len : GX_K8S_SUBDOMAIN_MAX, cpath, c->err);
    return 0;
}

/* One value at gpath (the table's path, "[]" for items) and cpath (the one the user
 * wrote, with indices, for errors). A null is an unset field, as in Kubernetes. */
static int walk(walk_ctx *c, const json_t *v, const char *gpath, const char *cpath)
{
    const gx_ks_field *f = find(c, gpath);
    if (!f || json_is_null(v)) return 0;
    switch (f->type) {
    case GX_KS_OPAQUE:
        return 0;
    case GX_KS_OBJECT:
        if (!json_is_object(v)) return wrong_type(c, cpath, v, "object");
        return walk_object(c, f, v, gpath, cpath);
    case GX_KS_STRING_MAP: {
        if (!json_is_object(v)) return wrong_type(c, cpath, v, "object");
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x)
            if (!json_is_string(x)) {
                char p[512];
                snprintf(p, sizeof p, "%s.%s", cpath, k);
                return wrong_type(c, p, x, "string");
            }
        return 0;
    }
    case GX_KS_ARRAY:
        if (!json_is_array(v)) return wrong_type(c, cpath, v, "array");
        return walk_array(c, f, v, gpath, cpath);
    case GX_KS_STRING:
        if (!json_is_string(v)) return wrong_type(c, cpath, v, "string");
        return walk_string(c, f, v, cpath);
    case GX_KS_INTEGER:
        return json_is_integer(v) ? 0 : wrong_type(c, cpath, v, "integer");
    case GX_KS_BOOLEAN:
        return json_is_boolean(v) ? 0 : wrong_type(c, cpath, v, "boolean");
    case GX_KS_NUMBER:
        return json_is_number(v) ? 0 : wrong_type(c, cpath, v, "number");
    case GX_KS_INT_OR_STRING:
        if (!json_is_integer(v) && !json_is_string(v)) return wrong_type(c, cpath, v, "integer or string");
        if (f->pattern == GX_KS_PAT_QUANTITY) {
            int64_t milli;
            return gx_quantity_from_json(v, &milli, cpath, c->err) < 0 ? -1 : 0;
        }
        return 0;
    }
    return 0;
}

int gx_kueue_schema_check(const json_t *obj, json_t *warnings, gx_err *err)
{
    walk_ctx c = {.warnings = warnings, .err = err};
    const char *av = json_string_value(json_object_get(obj, "apiVersion"));
    c.kind = json_string_value(json_object_get(obj, "kind"));
    if (!av || !c.kind || strncmp(av, "kueue.x-k8s.io/", 15)) return 0;
    c.version = av + 15;
    if (!find(&c, "")) return 0;
    const json_t *md = json_object_get(obj, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    if (!strcmp(c.kind, "LocalQueue"))
        snprintf(c.who, sizeof c.who, "%s %s/%s", c.kind, ns && *ns ? ns : "default", name ? name : "");
    else
        snprintf(c.who, sizeof c.who, "%s %s", c.kind, name ? name : "");
    return walk(&c, obj, "", "");
}
