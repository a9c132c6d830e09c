/* yaml: YAML <-> JSON bridge over libyaml's event parser.
 * Owns: turning YAML documents into json_t (with a path -> line map for error
 * messages) and writing json_t back as block YAML.
 * Must not: accept anchors, aliases, tags or duplicate keys (Kubernetes manifests
 * need none of them, and aliases are the classic "billion laughs" bomb). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include "lib/yaml.h"

#define YAML_MAX_DEPTH 64
#define YAML_MAX_DOCS  200000

struct gx_linemap {
    size_t n, cap;
    char **paths;
    int *lines;
};

static void linemap_add(gx_linemap *m, const char *path, int line)
{
    if (m->n == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 32;
        char **p = realloc(m->paths, cap * sizeof *p);
        int *l = realloc(m->lines, cap * sizeof *l);
        if (!p || !l) { free(p ? p : NULL); abort(); }
        m->paths = p;
        m->lines = l;
        m->cap = cap;
    }
    m->paths[m->n] = strdup(path);
    if (!m->paths[m->n]) abort();
    m->lines[m->n] = line;
    m->n++;
}

static void linemap_free(gx_linemap *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->n; i++) free(m->paths[i]);
    free(m->paths);
    free(m->lines);
    free(m);
}

int gx_linemap_line(const gx_linemap *m, const char *path)
{
    if (!m || !path) return 0;
    char buf[512];
    snprintf(buf, sizeof buf, "%s", path);
    /* Walk up the path ("a.b[2].c" -> "a.b[2]" -> "a.b" -> "a") until a known node. */
    for (;;) {
        for (size_t i = 0; i < m->n; i++)
            if (!strcmp(m->paths[i], buf)) return m->lines[i];
        char *dot = strrchr(buf, '.');
        char *br = strrchr(buf, '[');
        char *cut = dot > br ? dot : br;
        if (!cut) break;
        *cut = 0;
    }
    return m->n ? m->lines[0] : 0;
}

void gx_linemap_annotate(const gx_linemap *m, gx_err *err)
{
    if (m && err && err->line == 0) err->line = gx_linemap_line(m, err->field);
}

/* ---- scalars (YAML 1.2 core schema) -------------------------------------------- */

static int is_int(const char *s)
{
    if (*s == '-' || *s == '+') s++;
    if (!*s) return 0;
    for (; *s; s++) if (!isdigit((unsigned char)*s)) return 0;
    return 1;
}

static int is_float(const char *s)
{
    if (*s == '-' || *s == '+') s++;
    int digits = 0, dot = 0;
    while (isdigit((unsigned char)*s)) { s++; digits++; }
    if (*s == '.') { dot = 1; s++; while (isdigit((unsigned char)*s)) { s++; digits++; } }
    if (!digits) return 0;
    if (*s == 'e' || *s == 'E') {
        s++;
        if (*s == '-' || *s == '+') s++;
        if (!isdigit((unsigned char)*s)) return 0;
        while (isdigit((unsigned char)*s)) s++;
        return *s == 0;
    }
    return *s == 0 && dot;
}

static json_t *plain_scalar(const char *s)
{
    if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"))
        return json_null();
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")) return json_true();
    if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE")) return json_false();
    if (is_int(s)) {
        errno = 0;
        char *end;
        long long v = strtoll(s, &end, 10);
        if (!errno && !*end) return json_integer(v);
        return json_string(s); /* beyond int64: keep the text */
    }
    if (is_float(s)) return json_real(strtod(s, NULL));
    return json_string(s);
}

/* ---- parser -------------------------------------------------------------------- */

typedef struct pstate {
    yaml_parser_t p;
    gx_err *err;
    gx_linemap *map;
} pstate;

static int perr(pstate *st, int line, const char *field, const char *msg)
{
    gx_errf(st->err, 400, field, "%s", msg);
    st->err->line = line;
    return -1;
}

static int next_event(pstate *st, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&st->p, ev)) {
        gx_errf(st->err, 400, "", "YAML syntax error: %s%s%s",
                st->p.problem ? st->p.problem : "malformed",
                st->p.context ? " " : "", st->p.context ? st->p.context : "");
        st->err->line = (int)st->p.problem_mark.line + 1;
        return -1;
    }
    return 0;
}

static void path_key(char *out, size_t n, const char *base, const char *key)
{
    int simple = 1;
    for (const char *k = key; *k; k++)
        if (!(isalnum((unsigned char)*k) || *k == '_' || *k == '-')) { simple = 0; break; }
    if (!*key) simple = 0;
    if (simple) snprintf(out, n, "%s%s%s", base, *base ? "." : "", key);
    else snprintf(out, n, "%s[\"%s\"]", base, key);
}

static json_t *parse_node(pstate *st, yaml_event_t *ev, const char *path, int depth);

static json_t *parse_mapping(pstate *st, const char *path, int depth)
{
    json_t *obj = json_object();
    for (;;) {
        yaml_event_t kev;
        if (next_event(st, &kev)) goto fail;
        if (kev.type == YAML_MAPPING_END_EVENT) { yaml_event_delete(&kev); return obj; }
        int line = (int)kev.start_mark.line + 1;
        if (kev.type != YAML_SCALAR_EVENT) {
            yaml_event_delete(&kev);
            perr(st, line, path, "mapping keys must be plain strings");
            goto fail;
        }
        char key[256];
        snprintf(key, sizeof key, "%s", (const char *)kev.data.scalar.value);
        int too_long = kev.data.scalar.length >= sizeof key;
        yaml_event_delete(&kev);
        if (too_long) { perr(st, line, path, "mapping key longer than 255 bytes"); goto fail; }
        char sub[512];
        path_key(sub, sizeof sub, path, key);
        if (json_object_get(obj, key)) {
            char m[320];
            snprintf(m, sizeof m, "duplicate key \"%s\"", key);
            perr(st, line, sub, m);
            goto fail;
        }
        yaml_event_t vev;
        if (next_event(st, &vev)) goto fail;
        json_t *v = parse_node(st, &vev, sub, depth + 1);
        yaml_event_delete(&vev);
        if (!v) goto fail;
        json_object_set_new(obj, key, v);
    }
fail:
    json_decref(obj);
    return NULL;
}

static json_t *parse_sequence(pstate *st, const char *path, int depth)
{
    json_t *arr = json_array();
    for (size_t i = 0;; i++) {
        yaml_event_t ev;
        if (next_event(st, &ev)) goto fail;
        if (ev.type == YAML_SEQUENCE_END_EVENT) { yaml_event_delete(&ev); return arr; }
        char sub[512];
        snprintf(sub, sizeof sub, "%s[%zu]", path, i);
        json_t *v = parse_node(st, &ev, sub, depth + 1);
        yaml_event_delete(&ev);
        if (!v) goto fail;
        json_array_append_new(arr, v);
    }
fail:
    json_decref(arr);
    return NULL;
}

/* ev is the node's first event; the caller deletes it. */
static json_t *parse_node(pstate *st, yaml_event_t *ev, const char *path, int depth)
{
    int line = (int)ev->start_mark.line + 1;
    if (depth > YAML_MAX_DEPTH) { perr(st, line, path, "nesting deeper than 64 levels"); return NULL; }
    if (st->map) linemap_add(st->map, path, line);
    switch (ev->type) {
    case YAML_ALIAS_EVENT:
        perr(st, line, path, "YAML aliases (*name) are not accepted");
        return NULL;
    case YAML_SCALAR_EVENT: {
        if (ev->data.scalar.anchor) { perr(st, line, path, "YAML anchors (&name) are not accepted"); return NULL; }
        if (ev->data.scalar.tag) { perr(st, line, path, "YAML tags (!tag) are not accepted"); return NULL; }
        const char *s = (const char *)ev->data.scalar.value;
        if (strlen(s) != ev->data.scalar.length) { perr(st, line, path, "NUL byte in a string"); return NULL; }
        json_t *v = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? plain_scalar(s) : json_string(s);
        if (!v) perr(st, line, path, "string is not valid UTF-8");
        return v;
    }
    case YAML_MAPPING_START_EVENT:
        if (ev->data.mapping_start.anchor) { perr(st, line, path, "YAML anchors (&name) are not accepted"); return NULL; }
        return parse_mapping(st, path, depth);
    case YAML_SEQUENCE_START_EVENT:
        if (ev->data.sequence_start.anchor) { perr(st, line, path, "YAML anchors (&name) are not accepted"); return NULL; }
        return parse_sequence(st, path, depth);
    default:
        perr(st, line, path, "unexpected YAML event");
        return NULL;
    }
}

static void docs_push(gx_yaml_docs *out, json_t *doc, gx_linemap *map, int line)
{
    json_t **d = realloc(out->docs, (out->n + 1) * sizeof *d);
    gx_linemap **l = realloc(out->lines, (out->n + 1) * sizeof *l);
    int *f = realloc(out->first_line, (out->n + 1) * sizeof *f);
    if (!d || !l || !f) abort();
    out->docs = d;
    out->lines = l;
    out->first_line = f;
    d[out->n] = doc;
    l[out->n] = map;
    f[out->n] = line;
    out->n++;
}

int gx_yaml_parse(const char *buf, size_t len, gx_yaml_docs *out, gx_err *err)
{
    memset(out, 0, sizeof *out);
    pstate st = {.err = err};
    if (!yaml_parser_initialize(&st.p)) return gx_errf(err, 500, "", "out of memory");
    yaml_parser_set_input_string(&st.p, (const unsigned char *)buf, len);
    int rc = -1;
    for (;;) {
        yaml_event_t ev;
        if (next_event(&st, &ev)) goto out;
        yaml_event_type_t t = ev.type;
        yaml_event_delete(&ev);
        if (t == YAML_STREAM_END_EVENT) break;
        if (t != YAML_DOCUMENT_START_EVENT) continue;
        if (out->n >= YAML_MAX_DOCS) { gx_errf(err, 413, "", "more than %d documents", YAML_MAX_DOCS); goto out; }
        yaml_event_t root;
        if (next_event(&st, &root)) goto out;
        int line = (int)root.start_mark.line + 1;
        if (root.type == YAML_DOCUMENT_END_EVENT) { yaml_event_delete(&root); continue; }
        st.map = calloc(1, sizeof *st.map);
        if (!st.map) abort();
        json_t *doc = parse_node(&st, &root, "", 0);
        yaml_event_delete(&root);
        if (!doc) { err->doc = (int)out->n; linemap_free(st.map); goto out; }
        if (json_is_null(doc)) { json_decref(doc); linemap_free(st.map); st.map = NULL; }
        else docs_push(out, doc, st.map, line);
        st.map = NULL;
        yaml_event_t end;
        if (next_event(&st, &end)) goto out;
        yaml_event_delete(&end);
    }
    rc = 0;
out:
    yaml_parser_delete(&st.p);
    if (rc) gx_yaml_docs_free(out);
    return rc;
}

void gx_yaml_docs_free(gx_yaml_docs *d)
{
    if (!d) return;
    for (size_t i = 0; i < d->n; i++) {
        json_decref(d->docs[i]);
        linemap_free(d->lines[i]);
    }
    free(d->docs);
    free(d->lines);
    free(d->first_line);
    memset(d, 0, sizeof *d);
}

int gx_manifest_parse(const char *buf, size_t len, gx_yaml_docs *out, gx_err *err)
{
    size_t i = 0;
    while (i < len && isspace((unsigned char)buf[i])) i++;
    if (i == len) { memset(out, 0, sizeof *out); return gx_errf(err, 400, "", "empty body: no manifest given"); }
    if (buf[i] != '{' && buf[i] != '[') {
        if (gx_yaml_parse(buf, len, out, err)) return -1;
        if (!out->n) return gx_errf(err, 400, "", "no document found");
        return 0;
    }
    memset(out, 0, sizeof *out);
    json_error_t je;
    json_t *v = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je);
    if (!v) {
        gx_errf(err, 400, "", "JSON syntax error: %s", je.text);
        err->line = je.line;
        return -1;
    }
    json_t *items = NULL;
    if (json_is_array(v)) items = v;
    else if (json_is_string(json_object_get(v, "kind")) &&
             !strcmp(json_string_value(json_object_get(v, "kind")), "List"))
        items = json_object_get(v, "items");
    if (items) {
        if (!json_is_array(items)) { json_decref(v); return gx_errf(err, 400, "items", "must be an array"); }
        size_t k;
        json_t *it;
        json_array_foreach(items, k, it) docs_push(out, json_incref(it), NULL, 1);
        json_decref(v);
    } else {
        docs_push(out, v, NULL, 1);
    }
    if (!out->n) return gx_errf(err, 400, "", "no document found");
    return 0;
}

/* ---- emitter ------------------------------------------------------------------- */

typedef struct sbuf { char *p; size_t n, cap; } sbuf;

static void sb_put(sbuf *b, const char *s, size_t n)
{
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) abort();
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}
static void sb_str(sbuf *b, const char *s) { sb_put(b, s, strlen(s)); }
static void sb_indent(sbuf *b, int n) { for (int i = 0; i < n; i++) sb_put(b, " ", 1); }

/* A string can be written plain when reading it back gives the same string. */
static int plain_ok(const char *s)
{
    if (!*s) return 0;
    json_t *back = plain_scalar(s);
    int is_str = json_is_string(back);
    json_decref(back);
    if (!is_str) return 0;
    if (strchr("-?:,[]{}#&*!|>'\"%@` ", s[0])) {
        if (!(s[0] == '-' && s[1] && s[1] != ' ')) return 0;
    }
    size_t n = strlen(s);
    if (s[n - 1] == ' ' || s[n - 1] == ':') return 0;
    if (!strcmp(s, "yes") || !strcmp(s, "no") || !strcmp(s, "on") || !strcmp(s, "off") ||
        !strcmp(s, "y") || !strcmp(s, "n") || !strcmp(s, "Yes") || !strcmp(s, "No") ||
        !strcmp(s, "On") || !strcmp(s, "Off"))
        return 0; /* YAML 1.1 readers (kubectl) take these as booleans */
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c < 0x20 || *c == 0x7f) return 0;
        if (*c == ':' && c[1] == ' ') return 0;
        if (*c == ' ' && c[1] == '#') return 0;
    }
    return 1;
}

static void emit_string(sbuf *b, const char *s)
{
    if (plain_ok(s)) { sb_str(b, s); return; }
    json_t *tmp = json_string(s);
    char *q = json_dumps(tmp, JSON_ENCODE_ANY);
    sb_str(b, q);
    free(q);
    json_decref(tmp);
}

static void emit_scalar(sbuf *b, const json_t *v)
{
    if (json_is_string(v)) { emit_string(b, json_string_value(v)); return; }
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
    sb_str(b, s);
    free(s);
}

static int is_empty_container(const json_t *v)
{
    return (json_is_object(v) && json_object_size(v) == 0) || (json_is_array(v) && json_array_size(v) == 0);
}

static void emit_node(sbuf *b, const json_t *v, int indent);

/* Write the items of an object at `indent`; the first line's indent is already written
 * when first_inline is set (an object inside "- "). */
static void emit_object(sbuf *b, const json_t *v, int indent, int first_inline)
{
    const char *k;
    json_t *x;
    int first = 1;
    json_object_foreach((json_t *)v, k, x) {
        if (!(first && first_inline)) sb_indent(b, indent);
        first = 0;
        emit_string(b, k);
        sb_str(b, ":");
        if (json_is_object(x) && !is_empty_container(x)) {
            sb_str(b, "\n");
            emit_object(b, x, indent + 2, 0);
        } else if (json_is_array(x) && !is_empty_container(x)) {
            sb_str(b, "\n");
            emit_node(b, x, indent);
        } else {
            sb_str(b, " ");
            if (json_is_object(x)) sb_str(b, "{}");
            else if (json_is_array(x)) sb_str(b, "[]");
            else emit_scalar(b, x);
            sb_str(b, "\n");
        }
    }
}

static void emit_node(sbuf *b, const json_t *v, int indent)
{
    if (json_is_object(v)) {
        if (!json_object_size(v)) { sb_indent(b, indent); sb_str(b, "{}\n"); return; }
        emit_object(b, v, indent, 0);
    } else if (json_is_array(v)) {
        if (!json_array_size(v)) { sb_indent(b, indent); sb_str(b, "[]\n"); return; }
        size_t i;
        json_t *x;
        json_array_foreach((json_t *)v, i, x) {
            sb_indent(b, indent);
            sb_str(b, "- ");
            if (json_is_object(x) && json_object_size(x)) emit_object(b, x, indent + 2, 1);
            else if (json_is_array(x) && json_array_size(x)) { sb_str(b, "\n"); emit_node(b, x, indent + 2); }
            else {
                if (json_is_object(x)) sb_str(b, "{}");
                else if (json_is_array(x)) sb_str(b, "[]");
                else emit_scalar(b, x);
                sb_str(b, "\n");
            }
        }
    } else {
        sb_indent(b, indent);
        emit_scalar(b, v);
        sb_str(b, "\n");
    }
}

char *gx_yaml_emit(const json_t *v)
{
    sbuf b = {0};
    sb_put(&b, "", 0);
    emit_node(&b, v, 0);
    return b.p;
}
