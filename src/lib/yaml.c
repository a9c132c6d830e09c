/* yaml: YAML <-> JSON bridge over libyaml's event parser.
 * Owns: turning YAML documents into json_t (with a path -> line map for error
 * messages) and writing json_t back as block YAML through libyaml's emitter, quoting
 * every string that a YAML 1.2 or 1.1 reader would take for another type.
 * Must not: accept anchors, aliases, tags or duplicate keys (Kubernetes manifests
 * need none of them, and aliases are the classic "billion laughs" bomb). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>
#include "lib/alloc.h"
#include "lib/sbuf.h"
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
        size_t cap = m->cap;
        m->paths = gx_xgrow(m->paths, &cap, m->n + 1, sizeof *m->paths);
        m->lines = gx_xreallocarray(m->lines, cap, sizeof *m->lines);
        m->cap = cap;
    }
    m->paths[m->n] = gx_xstrdup(path);
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
        /* any length, as in JSON (an annotation key may be 317 bytes): the same manifest
         * must read the same either way */
        char *key = gx_xstrndup((const char *)kev.data.scalar.value, kev.data.scalar.length);
        yaml_event_delete(&kev);
        char sub[512];
        path_key(sub, sizeof sub, path, key);
        if (json_object_get(obj, key)) {
            char m[320];
            snprintf(m, sizeof m, "duplicate key \"%.280s\"", key);
            free(key);
            perr(st, line, sub, m);
            goto fail;
        }
        yaml_event_t vev;
        if (next_event(st, &vev)) { free(key); goto fail; }
        json_t *v = parse_node(st, &vev, sub, depth + 1);
        yaml_event_delete(&vev);
        if (!v) { free(key); goto fail; }
        json_object_set_new(obj, key, v);
        free(key);
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
    /* One element at a time: the three arrays stay the same length (gx_yaml_docs has
     * no capacity field); documents are few next to the work of parsing each. */
    out->docs = gx_xreallocarray(out->docs, out->n + 1, sizeof *out->docs);
    out->lines = gx_xreallocarray(out->lines, out->n + 1, sizeof *out->lines);
    out->first_line = gx_xreallocarray(out->first_line, out->n + 1, sizeof *out->first_line);
    out->docs[out->n] = doc;
    out->lines[out->n] = map;
    out->first_line[out->n] = line;
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
        st.map = gx_xcalloc(1, sizeof *st.map);
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

/* Would a reader take the plain scalar s for something other than this string? Our
 * parser follows YAML 1.2's core schema (plain_scalar above); kubectl and PyYAML read
 * YAML 1.1, which also has booleans yes/no/on/off/y/n, octal 017, 0x/0b/0o, 1_000,
 * sexagesimal 1:20 (so "00000000:17:00.0", a PCI bus id, is a number), .inf/.nan and
 * timestamps. Any of these is quoted: it may quote a string no reader would misread
 * ("0089"), never the other way round. */
static int looks_typed(const char *s)
{
    static const char *const words[] = {"y", "n", "yes", "no", "on", "off", "true", "false", "null", "~", "<<", "="};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
        if (!strcasecmp(s, words[i])) return 1;
    const char *t = s + (*s == '+' || *s == '-');
    if (!strcasecmp(t, ".inf") || !strcasecmp(s, ".nan")) return 1;
    if (t[0] == '0' && t[1] && strchr("xXoObB", t[1]) && t[2]) {
        const char *set = strchr("xX", t[1]) ? "0123456789abcdefABCDEF_" : strchr("oO", t[1]) ? "01234567_" : "01_";
        if (strspn(t + 2, set) == strlen(t + 2)) return 1;
    }
    if (isdigit((unsigned char)*t) && strchr(t, ':') && strspn(t, "0123456789_:.") == strlen(t))
        return 1; /* sexagesimal, loosely */
    int digits = 0, dot = 0;
    const char *c = t;
    for (; *c; c++) {
        if (isdigit((unsigned char)*c)) digits++;
        else if (*c == '.' && !dot) dot = 1;
        else if (*c != '_') break;
    }
    if (digits && !*c) return 1;
    if (digits && (*c == 'e' || *c == 'E')) {
        c += 1 + (c[1] == '+' || c[1] == '-');
        if (*c && strspn(c, "0123456789") == strlen(c)) return 1;
    }
    /* A YAML 1.1 timestamp starts "YYYY-M-D" and ends there or goes on with a time. */
    if (strspn(s, "0123456789") == 4 && s[4] == '-') {
        size_t m = strspn(s + 5, "0123456789");
        if (m >= 1 && m <= 2 && s[5 + m] == '-') {
            size_t d = strspn(s + 6 + m, "0123456789");
            char after = s[6 + m + d];
            if (d >= 1 && d <= 2 && (!after || after == 'T' || after == 't' || after == ' ' || after == '\t')) return 1;
        }
    }
    return 0;
}

/* A string can be written plain when every reader gives the same string back and YAML's
 * syntax does not get in the way; otherwise it is double-quoted (JSON-like escapes). */
static int plain_ok(const char *s)
{
    if (!*s || looks_typed(s)) return 0;
    json_t *back = plain_scalar(s);
    int is_str = json_is_string(back);
    json_decref(back);
    if (!is_str) return 0;
    if (strchr("-?:,[]{}#&*!|>'\"%@` ", s[0])) {
        if (!(s[0] == '-' && s[1] && s[1] != ' ')) return 0;
    }
    size_t n = strlen(s);
    if (s[n - 1] == ' ' || s[n - 1] == ':') return 0;
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c < 0x20 || *c == 0x7f) return 0;
        if (*c == ':' && c[1] == ' ') return 0;
        if (*c == ' ' && c[1] == '#') return 0;
    }
    return 1;
}

static int emit_text(yaml_emitter_t *em, const char *s, size_t n, yaml_scalar_style_t style)
{
    yaml_event_t ev;
    /* Both implicit flags: no tag is written, plain or quoted. */
    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)n, 1, 1, style)) return -1;
    return yaml_emitter_emit(em, &ev) ? 0 : -1;
}

/* A string of n bytes (a NUL among them is written as "\0"). Several lines go out as a
 * literal block (`|`), so a ConfigMap holding a YAML document reads, and diffs in git, line
 * by line; libyaml falls back to quotes where a block cannot hold the text exactly. */
static int emit_str(yaml_emitter_t *em, const char *s, size_t n)
{
    if (n > INT_MAX) return -1;   /* libyaml counts in int */
    int nul = memchr(s, 0, n) != NULL;
    if (!nul && memchr(s, '\n', n)) return emit_text(em, s, n, YAML_LITERAL_SCALAR_STYLE);
    int plain = !nul && plain_ok(s);
    return emit_text(em, s, n, plain ? YAML_PLAIN_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
}

static int emit_scalar(yaml_emitter_t *em, const json_t *v)
{
    if (json_is_string(v)) return emit_str(em, json_string_value(v), json_string_length(v));
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(17));
    if (!s) return -1;
    int rc = emit_text(em, s, strlen(s), YAML_PLAIN_SCALAR_STYLE);
    free(s);
    return rc;
}

/* Objects and arrays in block style; empty ones as {} and [] (block style has no way
 * to write an empty collection). Keys in the object's own order, as JSON prints them. */
static int emit_node(yaml_emitter_t *em, const json_t *v, int depth)
{
    yaml_event_t ev;
    if (depth > YAML_MAX_DEPTH) return -1;
    if (json_is_object(v)) {
        int flow = !json_object_size(v);
        if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE) ||
            !yaml_emitter_emit(em, &ev))
            return -1;
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x)
            if (emit_str(em, k, strlen(k)) || emit_node(em, x, depth + 1)) return -1;
        if (!yaml_mapping_end_event_initialize(&ev)) return -1;
    } else if (json_is_array(v)) {
        int flow = !json_array_size(v);
        if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE) ||
            !yaml_emitter_emit(em, &ev))
            return -1;
        size_t i;
        json_t *x;
        json_array_foreach((json_t *)v, i, x) if (emit_node(em, x, depth + 1)) return -1;
        if (!yaml_sequence_end_event_initialize(&ev)) return -1;
    } else {
        return emit_scalar(em, v);
    }
    return yaml_emitter_emit(em, &ev) ? 0 : -1;
}

static int to_sbuf(void *data, unsigned char *buf, size_t size)
{
    gx_sbuf_put(data, buf, size);
    return 1;
}

char *gx_yaml_emit(const json_t *v)
{
    yaml_emitter_t em;
    yaml_event_t ev;
    gx_sbuf b = {0};
    if (!yaml_emitter_initialize(&em)) return NULL;
    yaml_emitter_set_output(&em, to_sbuf, &b);
    yaml_emitter_set_indent(&em, 2);
    yaml_emitter_set_width(&em, -1);     /* never fold a long line */
    yaml_emitter_set_unicode(&em, 1);    /* UTF-8 as is, not \u escapes */
    int ok = yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) && yaml_emitter_emit(&em, &ev) &&
             yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) && yaml_emitter_emit(&em, &ev) &&
             !emit_node(&em, v, 0) &&
             yaml_document_end_event_initialize(&ev, 1) && yaml_emitter_emit(&em, &ev) &&
             yaml_stream_end_event_initialize(&ev) && yaml_emitter_emit(&em, &ev);
    yaml_emitter_delete(&em);
    if (!ok) { gx_sbuf_free(&b); return NULL; }
    return gx_sbuf_take(&b);
}
