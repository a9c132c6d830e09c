/* template: Template validation, typed form values and manifest rendering (template.h).
 * Owns: the subset of JSON Schema the portal understands (type, title, description,
 * default, enum/enumNames, minimum/maximum, minLength/maxLength, pattern, required)
 * plus the ui: hints it draws (ui:widget, ui:help, ui:placeholder, ui:field).
 * Must not: accept what it cannot draw or check: an unknown keyword is an error when
 * the template is applied, not a field silently ignored in front of a user. */
#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/num.h"
#include "lib/alloc.h"
#include "portal/template.h"

static const char *const PROP_KEYS[] = {
    "type", "title", "description", "default", "enum", "enumNames", "minimum", "maximum", "minLength",
    "maxLength", "pattern", "format", "ui:widget", "ui:help", "ui:placeholder", "ui:field", "ui:autofocus",
    "ui:options", NULL};
static const char *const WIDGETS[] = {"text", "textarea", "select", "radio", "updown", "checkbox", "password",
                                      "hidden", "range", NULL};
static const char *const ICONS[] = {"gpu", "terminal", "train", "tune", "model", "notebook", NULL};

static int in_list(const char *s, const char *const *l)
{
    for (; s && *l; l++)
        if (!strcmp(s, *l)) return 1;
    return 0;
}

static int name_ok(const char *s)
{
    if (!s || !isalpha((unsigned char)*s) || strlen(s) > 64) return 0;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_') return 0;
    return 1;
}

static int str_max(const json_t *v, size_t max) { return !v || (json_is_string(v) && json_string_length(v) <= max); }

/* Does v have the JSON type named t? ("integer" also accepts 3.0 written as a real) */
static int type_ok(const json_t *v, const char *t)
{
    if (!strcmp(t, "string")) return json_is_string(v);
    if (!strcmp(t, "boolean")) return json_is_boolean(v);
    if (!strcmp(t, "integer")) return json_is_integer(v);
    if (!strcmp(t, "number")) return json_is_number(v);
    return 0;
}

static double num(const json_t *v) { return json_number_value(v); }

/* Check one value against a property schema; message into err with field = name. */
static int check_value(const char *name, const json_t *s, const json_t *v, gx_err *err)
{
    const char *type = json_string_value(json_object_get(s, "type"));
    const char *title = json_string_value(json_object_get(s, "title")) ?: name;
    if (!type_ok(v, type))
        return gx_errf(err, 422, name, "%s must be %s", title,
                       !strcmp(type, "integer") ? "a whole number" : !strcmp(type, "number") ? "a number" :
                       !strcmp(type, "boolean") ? "true or false" : "text");
    const json_t *en = json_object_get(s, "enum");
    if (en) {
        size_t i;
        const json_t *x;
        int found = 0;
        json_array_foreach(en, i, x) found |= json_equal(x, v);
        if (!found) return gx_errf(err, 422, name, "%s must be one of the listed choices", title);
    }
    const json_t *mn = json_object_get(s, "minimum"), *mx = json_object_get(s, "maximum");
    char nb[GX_NUM_MAX];
    if (json_is_number(v) && mn && num(v) < num(mn))
        return gx_errf(err, 422, name, "%s must be at least %s", title, gx_num_fmt(num(mn), nb, sizeof nb));
    if (json_is_number(v) && mx && num(v) > num(mx))
        return gx_errf(err, 422, name, "%s must be at most %s", title, gx_num_fmt(num(mx), nb, sizeof nb));
    if (json_is_string(v)) {
        size_t len = json_string_length(v);
        const json_t *a = json_object_get(s, "minLength"), *b = json_object_get(s, "maxLength");
        size_t lo = a ? (size_t)json_integer_value(a) : 0, hi = b ? (size_t)json_integer_value(b) : GX_PORTAL_TPL_MAX_STRING;
        if (len < lo) return gx_errf(err, 422, name, "%s needs at least %zu characters", title, lo);
        if (len > hi) return gx_errf(err, 422, name, "%s may have at most %zu characters", title, hi);
        const char *pat = json_string_value(json_object_get(s, "pattern"));
        if (pat) {
            regex_t re;
            if (regcomp(&re, pat, REG_EXTENDED | REG_NOSUB)) return gx_errf(err, 422, name, "bad pattern");
            int m = regexec(&re, json_string_value(v), 0, NULL, 0);
            regfree(&re);
            if (m) return gx_errf(err, 422, name, "%s does not have the expected form (%s)", title, pat);
        }
    }
    return 0;
}

static int check_prop(const char *name, const json_t *s, gx_err *err)
{
    if (!name_ok(name)) return gx_errf(err, 422, "", "parameter name \"%s\" must be letters, digits and _ (at most 64)", name);
    if (!json_is_object(s)) return gx_errf(err, 422, name, "must be a JSON Schema mapping");
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)s, k, v)
        if (!in_list(k, PROP_KEYS)) return gx_errf(err, 422, name, "unknown keyword \"%s\" (this portal understands: "
                                                   "type, title, description, default, enum, enumNames, minimum, maximum, "
                                                   "minLength, maxLength, pattern, ui:widget, ui:help, ui:placeholder, ui:field)", k);
    const char *type = json_string_value(json_object_get(s, "type"));
    if (!type || !in_list(type, (const char *const[]){"string", "integer", "number", "boolean", NULL}))
        return gx_errf(err, 422, name, "type must be string, integer, number or boolean");
    if (!str_max(json_object_get(s, "title"), 100) || !str_max(json_object_get(s, "description"), 1000) ||
        !str_max(json_object_get(s, "ui:help"), 1000) || !str_max(json_object_get(s, "ui:placeholder"), 200))
        return gx_errf(err, 422, name, "title (100), description, ui:help (1000) and ui:placeholder (200) are text of limited length");
    const char *w = json_string_value(json_object_get(s, "ui:widget"));
    if (json_object_get(s, "ui:widget") && !in_list(w, WIDGETS))
        return gx_errf(err, 422, name, "ui:widget must be one of text, textarea, select, radio, updown, checkbox, password, hidden, range");
    const char *f = json_string_value(json_object_get(s, "ui:field"));
    if (json_object_get(s, "ui:field") && (!f || strcmp(f, "NamespacePicker") || strcmp(type, "string")))
        return gx_errf(err, 422, name, "ui:field: only NamespacePicker (on a string) is known");
    const json_t *en = json_object_get(s, "enum"), *names = json_object_get(s, "enumNames");
    if (en) {
        if (!json_is_array(en) || !json_array_size(en) || json_array_size(en) > 100)
            return gx_errf(err, 422, name, "enum must be a list of 1 to 100 values");
        size_t i;
        const json_t *x;
        json_array_foreach(en, i, x)
            if (!type_ok(x, type) || (json_is_string(x) && json_string_length(x) > 200))
                return gx_errf(err, 422, name, "enum[%zu] is not a %s (of at most 200 characters)", i, type);
    }
    if (names && (!json_is_array(names) || !en || json_array_size(names) != json_array_size(en)))
        return gx_errf(err, 422, name, "enumNames must be a list as long as enum");
    for (const char *const *nk = (const char *const[]){"minimum", "maximum", NULL}; *nk; nk++) {
        const json_t *x = json_object_get(s, *nk);
        if (x && (!json_is_number(x) || (strcmp(type, "integer") && strcmp(type, "number"))))
            return gx_errf(err, 422, name, "%s is a number, and only for integer or number parameters", *nk);
    }
    const json_t *mn = json_object_get(s, "minimum"), *mx = json_object_get(s, "maximum");
    if (mn && mx && num(mn) > num(mx)) return gx_errf(err, 422, name, "minimum is larger than maximum");
    for (const char *const *lk = (const char *const[]){"minLength", "maxLength", NULL}; *lk; lk++) {
        const json_t *x = json_object_get(s, *lk);
        if (x && (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > GX_PORTAL_TPL_MAX_STRING ||
                  strcmp(type, "string")))
            return gx_errf(err, 422, name, "%s is a whole number 0..%d, only for string parameters", *lk, GX_PORTAL_TPL_MAX_STRING);
    }
    const json_t *pat = json_object_get(s, "pattern");
    if (pat) {
        regex_t re;
        if (!json_is_string(pat) || json_string_length(pat) > 500 || strcmp(type, "string") ||
            regcomp(&re, json_string_value(pat), REG_EXTENDED | REG_NOSUB))
            return gx_errf(err, 422, name, "pattern must be a valid regular expression on a string parameter");
        regfree(&re);
    }
    const json_t *def = json_object_get(s, "default");
    if (def && !json_is_null(def)) {
        gx_err e2;
        if (check_value(name, s, def, &e2)) return gx_errf(err, 422, name, "its default does not satisfy it: %s", e2.msg);
    }
    return 0;
}

/* Call fn for every property of every page, in order; stops at the first -1. */
typedef int (*prop_fn)(const char *name, const json_t *schema, int required, const char *page, void *ud);

static int each_prop(const json_t *params, prop_fn fn, void *ud)
{
    size_t np = json_is_array(params) ? json_array_size(params) : 1;
    for (size_t p = 0; p < np; p++) {
        const json_t *page = json_is_array(params) ? json_array_get(params, p) : params;
        const json_t *req = json_object_get(page, "required");
        const char *title = json_string_value(json_object_get(page, "title")) ?: "";
        const char *k;
        const json_t *s;
        json_object_foreach((json_t *)json_object_get(page, "properties"), k, s) {
            int r = 0;
            size_t i;
            const json_t *x;
            json_array_foreach(req, i, x) r |= json_is_string(x) && !strcmp(json_string_value(x), k);
            if (fn(k, s, r, title, ud)) return -1;
        }
    }
    return 0;
}

static int check_page(const json_t *page, gx_err *err)
{
    if (!json_is_object(page)) return gx_errf(err, 422, "", "must be a JSON Schema object");
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)page, k, v)
        if (!in_list(k, (const char *const[]){"type", "title", "description", "required", "properties", NULL}))
            return gx_errf(err, 422, k, "unknown keyword (a page has type, title, description, required, properties)");
    const char *t = json_string_value(json_object_get(page, "type"));
    if (json_object_get(page, "type") && (!t || strcmp(t, "object"))) return gx_errf(err, 422, "type", "must be object");
    if (!str_max(json_object_get(page, "title"), 100) || !str_max(json_object_get(page, "description"), 1000))
        return gx_errf(err, 422, "title", "title and description must be short text");
    const json_t *props = json_object_get(page, "properties");
    if (!json_is_object(props)) return gx_errf(err, 422, "properties", "must be a mapping of parameter names to schemas");
    json_object_foreach((json_t *)props, k, v) {
        if (check_prop(k, v, err)) { gx_err_prefix(err, "properties"); return -1; }
    }
    const json_t *req = json_object_get(page, "required");
    size_t i;
    json_array_foreach(req, i, v)
        if (!json_is_string(v) || !json_object_get(props, json_string_value(v)))
            return gx_errf(err, 422, "required", "required[%zu] names no property of this page", i);
    if (req && !json_is_array(req)) return gx_errf(err, 422, "required", "must be a list of property names");
    return 0;
}

/* ---- expressions ----------------------------------------------------------------- */

typedef struct expr {
    char var[80];     /* "parameters.x" or "user.name" */
    double mul;       /* 0: none */
    int to_string, lower;
} expr;

/* Parse the inside of ${{ ... }}; -1 when it is not one we evaluate. */
static int parse_expr(const char *s, size_t n, expr *x)
{
    char buf[200];
    if (n >= sizeof buf) return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    memset(x, 0, sizeof *x);
    char *save = NULL, *tok = strtok_r(buf, " \t", &save);
    if (!tok || strlen(tok) >= sizeof x->var) return -1;
    snprintf(x->var, sizeof x->var, "%s", tok);
    if (strncmp(x->var, "parameters.", 11) && strcmp(x->var, "user.name")) return -1;
    if (!strncmp(x->var, "parameters.", 11) && !name_ok(x->var + 11)) return -1;
    while ((tok = strtok_r(NULL, " \t", &save))) {
        if (!strcmp(tok, "*")) {
            char *num = strtok_r(NULL, " \t", &save), *end;
            if (!num) return -1;
            errno = 0;
            x->mul = strtod(num, &end);
            if (*end || errno || x->mul == 0) return -1;
        } else if (!strcmp(tok, "|")) {
            char *f = strtok_r(NULL, " \t", &save);
            if (f && !strcmp(f, "string")) x->to_string = 1;
            else if (f && !strcmp(f, "lower")) x->lower = x->to_string = 1;
            else return -1;
        } else return -1;
    }
    return 0;
}

/* The value of x (new reference), or NULL when the parameter was left empty. */
static json_t *eval(const expr *x, const json_t *values, const char *user)
{
    json_t *v = !strcmp(x->var, "user.name") ? json_string(user ? user : "")
                                              : json_incref(json_object_get(values, x->var + 11));
    if (!v) return NULL;
    if (x->mul && json_is_number(v)) {
        double r = json_number_value(v) * x->mul;
        json_decref(v);
        v = r == (double)(long long)r ? json_integer((json_int_t)r) : json_real(r);
    }
    if (x->to_string && !json_is_string(v)) {
        char b[64];
        if (json_is_integer(v)) snprintf(b, sizeof b, "%lld", (long long)json_integer_value(v));
        else if (json_is_real(v)) gx_num_fmt(json_real_value(v), b, sizeof b);
        else snprintf(b, sizeof b, "%s", json_is_true(v) ? "true" : "false");
        json_decref(v);
        v = json_string(b);
    }
    if (x->lower && json_is_string(v)) {
        char *s = gx_xstrdup(json_string_value(v));
        for (char *p = s; *p; p++) *p = (char)tolower((unsigned char)*p);
        json_decref(v);
        v = json_string(s);
        free(s);
    }
    return v;
}

/* Render one string: a lone expression keeps its type; otherwise text is spliced.
 * With values == NULL only checks that each expression is known (names in `known`). */
static json_t *render_str(const char *s, const json_t *values, const json_t *known, const char *user, gx_err *err)
{
    const char *p = s, *open;
    char out[8192];
    size_t n = 0;
    while ((open = strstr(p, "${{"))) {
        const char *close = strstr(open + 3, "}}");
        if (!close) { gx_errf(err, 422, "", "\"${{\" without a closing \"}}\""); return NULL; }
        expr x;
        if (parse_expr(open + 3, (size_t)(close - open - 3), &x)) {
            gx_errf(err, 422, "", "cannot evaluate \"%.*s\": write ${{ parameters.NAME }}, optionally with \"* N\", "
                    "\"| string\" or \"| lower\", or ${{ user.name }}", (int)(close - open + 2), open);
            return NULL;
        }
        if (!values) {
            if (strcmp(x.var, "user.name") && !json_object_get(known, x.var + 11)) {
                gx_errf(err, 422, "", "${{ %s }}: the template has no parameter %s", x.var, x.var + 11);
                return NULL;
            }
        } else {
            json_t *v = eval(&x, values, user);
            if (open == s && close[2] == 0) return v ? v : json_null(); /* a lone expression keeps its type */
            char b[64];
            const char *t = "";
            if (json_is_string(v)) t = json_string_value(v);
            else if (json_is_integer(v)) { snprintf(b, sizeof b, "%lld", (long long)json_integer_value(v)); t = b; }
            else if (json_is_real(v)) t = gx_num_fmt(json_real_value(v), b, sizeof b);
            else if (json_is_boolean(v)) t = json_is_true(v) ? "true" : "false";
            size_t pre = (size_t)(open - p), tl = strlen(t);
            if (n + pre + tl >= sizeof out) { json_decref(v); gx_errf(err, 422, "", "rendered text is too long"); return NULL; }
            memcpy(out + n, p, pre);
            memcpy(out + n + pre, t, tl);
            n += pre + tl;
            json_decref(v);
        }
        p = close + 2;
    }
    if (!values) return json_true();
    size_t rest = strlen(p);
    if (n + rest >= sizeof out) { gx_errf(err, 422, "", "rendered text is too long"); return NULL; }
    memcpy(out + n, p, rest + 1);
    return json_string(out);
}

/* Walk v, rendering (values != NULL) or checking every string. */
static json_t *render(const json_t *v, const json_t *values, const json_t *known, const char *user, gx_err *err)
{
    if (json_is_string(v)) return render_str(json_string_value(v), values, known, user, err);
    if (json_is_object(v)) {
        json_t *o = json_object();
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x) {
            json_t *r = render(x, values, known, user, err);
            if (!r) { json_decref(o); gx_err_prefix(err, k); return NULL; }
            /* an empty optional parameter drops its key rather than writing null */
            if (json_is_null(r) && !json_is_null(x)) json_decref(r);
            else json_object_set_new(o, k, r);
        }
        return o;
    }
    if (json_is_array(v)) {
        json_t *a = json_array();
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            json_t *r = render(x, values, known, user, err);
            if (!r) {
                char f[32];
                snprintf(f, sizeof f, "[%zu]", i);
                gx_err_prefix(err, f);
                json_decref(a);
                return NULL;
            }
            json_array_append_new(a, r);
        }
        return a;
    }
    return json_deep_copy(v);
}

static int collect(const char *name, const json_t *schema, int required, const char *page, void *ud)
{
    json_t *arr = ud;
    json_array_append_new(arr, json_pack("{s:s,s:O,s:b,s:s}", "name", name, "schema", schema, "required", required,
                                         "page", page));
    return 0;
}

json_t *gx_portal_template_params(const json_t *tpl)
{
    json_t *arr = json_array();
    each_prop(json_object_get(json_object_get(tpl, "spec"), "parameters"), collect, arr);
    return arr;
}

static int check_meta(const json_t *tpl, gx_err *err)
{
    if (!json_is_object(tpl)) return gx_errf(err, 400, "", "a Template must be a mapping");
    const json_t *md = json_object_get(tpl, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    if (!name || !*name || strlen(name) > 63) return gx_errf(err, 422, "metadata.name", "a Template needs a name (at most 63 characters)");
    for (const char *c = name; *c; c++)
        if (!islower((unsigned char)*c) && !isdigit((unsigned char)*c) && *c != '-')
            return gx_errf(err, 422, "metadata.name", "must be lowercase letters, digits and '-'");
    if (!str_max(json_object_get(md, "title"), 100)) return gx_errf(err, 422, "metadata.title", "must be text of at most 100 characters");
    if (!str_max(json_object_get(md, "description"), 2000)) return gx_errf(err, 422, "metadata.description", "must be text of at most 2000 characters");
    const json_t *tags = json_object_get(md, "tags");
    if (tags) {
        if (!json_is_array(tags) || json_array_size(tags) > 10) return gx_errf(err, 422, "metadata.tags", "must be a list of at most 10 tags");
        size_t i;
        const json_t *t;
        json_array_foreach(tags, i, t)
            if (!json_is_string(t) || !str_max(t, 40)) return gx_errf(err, 422, "metadata.tags", "tag %zu must be text of at most 40 characters", i);
    }
    const json_t *spec = json_object_get(tpl, "spec");
    if (!json_is_object(spec)) return gx_errf(err, 422, "spec", "missing spec with parameters and manifest");
    const json_t *icon = json_object_get(spec, "icon");
    if (icon && !in_list(json_string_value(icon), ICONS))
        return gx_errf(err, 422, "spec.icon", "must be one of gpu, terminal, train, tune, model, notebook");
    if (!str_max(json_object_get(spec, "type"), 40) || !str_max(json_object_get(spec, "owner"), 100))
        return gx_errf(err, 422, "spec.type", "spec.type and spec.owner are short text");
    return 0;
}

static int count_prop(const char *name, const json_t *schema, int required, const char *page, void *ud)
{
    (void)schema; (void)required; (void)page;
    json_t *seen = ud;
    if (json_object_get(seen, name)) return -1;
    json_object_set_new(seen, name, json_true());
    return 0;
}

int gx_portal_template_check(const json_t *tpl, gx_err *err)
{
    if (check_meta(tpl, err)) return -1;
    const json_t *spec = json_object_get(tpl, "spec");
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)spec, k, v)
        if (!in_list(k, (const char *const[]){"type", "owner", "icon", "parameters", "manifest", NULL}))
            return gx_errf(err, 422, "spec", "unknown field \"%s\" (known: type, owner, icon, parameters, manifest)", k);
    const json_t *params = json_object_get(spec, "parameters");
    if (params) {
        size_t np = json_is_array(params) ? json_array_size(params) : 1;
        if (json_is_array(params) && (np == 0 || np > 10)) return gx_errf(err, 422, "spec.parameters", "1 to 10 pages");
        for (size_t p = 0; p < np; p++) {
            if (check_page(json_is_array(params) ? json_array_get(params, p) : params, err)) {
                char f[48];
                if (json_is_array(params)) snprintf(f, sizeof f, "spec.parameters[%zu]", p);
                else snprintf(f, sizeof f, "spec.parameters");
                gx_err_prefix(err, f);
                return -1;
            }
        }
    }
    json_t *seen = json_object();
    if (params && each_prop(params, count_prop, seen)) {
        json_decref(seen);
        return gx_errf(err, 422, "spec.parameters", "a parameter name appears on two pages");
    }
    if (json_object_size(seen) > GX_PORTAL_TPL_MAX_PARAMS) {
        json_decref(seen);
        return gx_errf(err, 422, "spec.parameters", "at most %d parameters", GX_PORTAL_TPL_MAX_PARAMS);
    }
    const json_t *m = json_object_get(spec, "manifest");
    const char *av = json_string_value(json_object_get(m, "apiVersion")), *kind = json_string_value(json_object_get(m, "kind"));
    int rc = 0;
    if (!json_is_object(m)) rc = gx_errf(err, 422, "spec.manifest", "missing: the Job or Model this template creates");
    else if (!av || !kind || !((!strcmp(av, "batch/v1") && !strcmp(kind, "Job")) ||
                               (!strcmp(av, "gpuaas.dev/v1alpha1") && !strcmp(kind, "Model"))))
        rc = gx_errf(err, 422, "spec.manifest.kind", "a template renders a batch/v1 Job or a gpuaas.dev/v1alpha1 Model, not %s %s",
                     av ? av : "(no apiVersion)", kind ? kind : "(no kind)");
    else {
        json_t *ok = render(m, NULL, seen, NULL, err);
        if (!ok) { gx_err_prefix(err, "spec.manifest"); rc = -1; }
        json_decref(ok);
    }
    json_decref(seen);
    return rc;
}

/* ---- values ------------------------------------------------------------------------- */

typedef struct vctx {
    const json_t *form, *namespaces;
    json_t *out;
    gx_err *err;
} vctx;

static int take_value(const char *name, const json_t *s, int required, const char *page, void *ud)
{
    (void)page;
    vctx *c = ud;
    const char *type = json_string_value(json_object_get(s, "type"));
    const char *title = json_string_value(json_object_get(s, "title")) ?: name;
    const json_t *fv = json_object_get(c->form, name);
    if (json_is_array(fv)) return gx_errf(c->err, 422, name, "%s was given more than once", title);
    const char *raw = json_string_value(fv);
    json_t *v = NULL;
    if (!strcmp(type, "boolean")) {
        v = json_boolean(raw && (!strcmp(raw, "on") || !strcmp(raw, "true") || !strcmp(raw, "1")));
    } else if (!raw || !*raw) {
        const json_t *def = json_object_get(s, "default");
        if (def && !json_is_null(def)) v = json_deep_copy(def);
        else if (required) return gx_errf(c->err, 422, name, "%s is required", title);
        else return 0;
    } else if (!strcmp(type, "integer") || !strcmp(type, "number")) {
        char *end;
        errno = 0;
        if (!strcmp(type, "integer")) {
            long long x = strtoll(raw, &end, 10);
            if (*end || errno || end == raw) return gx_errf(c->err, 422, name, "%s must be a whole number", title);
            v = json_integer(x);
        } else {
            double x = strtod(raw, &end);
            if (*end || errno || end == raw || x != x) return gx_errf(c->err, 422, name, "%s must be a number", title);
            v = json_real(x);
        }
    } else {
        v = json_string(raw);
        if (!v) return gx_errf(c->err, 422, name, "%s is not valid UTF-8 text", title);
    }
    int rc = check_value(name, s, v, c->err);
    const char *field = json_string_value(json_object_get(s, "ui:field"));
    if (!rc && field && !strcmp(field, "NamespacePicker")) {
        int ok = 0;
        size_t i;
        const json_t *x;
        json_array_foreach(c->namespaces, i, x) ok |= json_equal(x, v);
        if (!ok) rc = gx_errf(c->err, 422, name, "%s must be one of your namespaces", title);
    }
    if (rc) { json_decref(v); return -1; }
    json_object_set_new(c->out, name, v);
    return 0;
}

json_t *gx_portal_template_values(const json_t *tpl, const json_t *form, const json_t *namespaces, gx_err *err)
{
    vctx c = {.form = form, .namespaces = namespaces, .out = json_object(), .err = err};
    if (each_prop(json_object_get(json_object_get(tpl, "spec"), "parameters"), take_value, &c)) {
        json_decref(c.out);
        return NULL;
    }
    return c.out;
}

json_t *gx_portal_template_render(const json_t *tpl, const json_t *values, const char *user, gx_err *err)
{
    json_t *m = render(json_object_get(json_object_get(tpl, "spec"), "manifest"), values, NULL, user, err);
    if (!m) gx_err_prefix(err, "spec.manifest");
    return m;
}
