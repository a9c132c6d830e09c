/* maas/body: the fields the gateway reads from a request body, by a scan of the bytes
 * (the fast path) or from a jansson tree (the reference, and the fallback), and the body
 * it forwards when it must change it.
 * Owns: the scan, and the rules shared by both: which field wins (max_completion_tokens
 * over max_tokens), what counts as text for the prompt estimate; the upstream body
 * (usage asked for, the granted completion limit), changed as little as it can be.
 * Must not: accept anything jansson with JSON_REJECT_DUPLICATES rejects. Each check
 * below is as strict as jansson's or stricter; where it would need more than a few
 * lines to match jansson exactly (escaped keys, exponents, integers past 18 digits,
 * nesting past 64, more than 32 keys in one object) the scan gives up and the caller
 * parses with jansson.
 *
 * Why: parsing each request into a tree, to read five fields, cost about 6 % of the
 * gateway loop's CPU (jansson, malloc and free in perf); the scan reads the bytes once
 * and allocates nothing. tests/unit/test_maas_body.c holds it to the tree's answers on
 * hand-written and on randomly mutated bodies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "maas/body.h"

#define MAX_DEPTH  64   /* deeper: jansson decides (its own limit is 2048) */
#define MAX_KEYS   32   /* more keys in one object: jansson checks them for duplicates */
#define MAX_DIGITS 18   /* an integer part this long fits int64_t: no overflow to check */
#define TEXT_DEPTH 16   /* the prompt estimate counts text down to this depth */

enum { T_STR, T_INT, T_REAL, T_TRUE, T_FALSE, T_NULL, T_ARR, T_OBJ };
enum { M_PLAIN, M_TOP, M_OPTS };   /* whose members an object is: the body's, stream_options' */

typedef struct val {
    int type;
    const char *s;   /* T_STR: the raw bytes between the quotes */
    size_t slen;
    int esc;         /* T_STR: has a backslash escape */
    int64_t ulen;    /* T_STR: bytes once unescaped */
    int64_t i;       /* T_INT */
    int64_t count;   /* T_ARR: elements */
    int first;       /* T_ARR: the first element's type (-1: empty) */
} val;

typedef struct scan {
    const char *p, *e;
    gx_maas_body *out;
    int so_usage;
} scan;

static int value(scan *s, int depth, int td, val *v, int mode);

static void ws(scan *s)
{
    while (s->p < s->e && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t')) s->p++;
}

static int hex4(const unsigned char *p, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p[i], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f') d = (c | 0x20) - 'a' + 10;
        else return -1;
        *v = *v << 4 | d;
    }
    return 0;
}

/* Length of the UTF-8 sequence at p, 0 when it is not one jansson accepts (overlong
 * forms, surrogates and code points past U+10FFFF are refused, as jansson does). */
static size_t utf8_len(const unsigned char *p, const unsigned char *e)
{
    unsigned c = p[0], v;
    size_t k;
    if (c >= 0xC2 && c <= 0xDF) k = 2, v = c & 0x1F;
    else if (c >= 0xE0 && c <= 0xEF) k = 3, v = c & 0x0F;
    else if (c >= 0xF0 && c <= 0xF4) k = 4, v = c & 0x07;
    else return 0;
    if ((size_t)(e - p) < k) return 0;
    for (size_t i = 1; i < k; i++) {
        if ((p[i] & 0xC0) != 0x80) return 0;
        v = v << 6 | (p[i] & 0x3F);
    }
    if ((k == 3 && v < 0x800) || (k == 4 && v < 0x10000) || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return 0;
    return k;
}

/* A string at the opening quote: its raw span and its length once unescaped (what
 * json_string_length gives). */
static int str(scan *s, val *v)
{
    const unsigned char *p = (const unsigned char *)s->p + 1, *e = (const unsigned char *)s->e;
    int64_t n = 0;
    v->esc = 0;
    v->s = (const char *)p;
    for (;;) {
        if (p >= e) return -1;
        unsigned c = *p;
        if (c == '"') break;
        if (c < 0x20) return -1;
        if (c < 0x80 && c != '\\') { p++, n++; continue; }
        if (c >= 0x80) {
            size_t k = utf8_len(p, e);
            if (!k) return -1;
            p += k, n += (int64_t)k;
            continue;
        }
        v->esc = 1;
        if (e - p < 2) return -1;
        if (p[1] && strchr("\"\\/bfnrt", p[1])) { p += 2, n++; continue; }
        unsigned u, lo;
        if (p[1] != 'u' || e - p < 6 || hex4(p + 2, &u)) return -1;
        p += 6;
        if (u == 0 || (u >= 0xDC00 && u <= 0xDFFF)) return -1;   /* \u0000, a lone low surrogate */
        if (u >= 0xD800 && u <= 0xDBFF) {
            if (e - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF) return -1;
            p += 6, n += 4;
            continue;
        }
        n += u < 0x80 ? 1 : u < 0x800 ? 2 : 3;
    }
    v->type = T_STR;
    v->slen = (size_t)((const char *)p - v->s);
    v->ulen = n;
    s->p = (const char *)p + 1;
    return 0;
}

static int is_digit(const char *p, const char *e) { return p < e && *p >= '0' && *p <= '9'; }

static int num(scan *s, val *v)
{
    const char *p = s->p, *e = s->e;
    int neg = p < e && *p == '-';
    p += neg;
    const char *d = p;
    if (!is_digit(p, e)) return -1;
    if (*p == '0') {
        if (is_digit(++p, e)) return -1;   /* a leading zero */
    } else {
        while (is_digit(p, e)) p++;
    }
    if (p - d > MAX_DIGITS) return -1;
    const char *int_end = p;
    v->type = T_INT;
    if (p < e && *p == '.') {
        if (!is_digit(++p, e)) return -1;
        while (is_digit(p, e)) p++;
        v->type = T_REAL;
    }
    if (p < e && (*p == 'e' || *p == 'E')) return -1;   /* strtod's range is jansson's call */
    if (v->type == T_INT) {
        int64_t x = 0;
        for (const char *q = d; q < int_end; q++) x = x * 10 + (*q - '0');
        v->i = neg ? -x : x;
    }
    s->p = p;
    return 0;
}

static int lit(scan *s, const char *w, size_t n, int type, val *v)
{
    if ((size_t)(s->e - s->p) < n || memcmp(s->p, w, n)) return -1;
    s->p += n;
    v->type = type;
    return 0;
}

static int key_is(const val *k, const char *name)
{
    size_t n = strlen(name);
    return k->slen == n && !memcmp(k->s, name, n);
}

/* A name too long for any model is kept cut, for the error message that names it. */
static void keep_model(gx_maas_body *o, const char *p, size_t n)
{
    o->model_long = n >= GX_MAAS_BODY_MODEL;
    if (o->model_long) n = GX_MAAS_BODY_MODEL - 1;
    memcpy(o->model, p, n);
    o->model[n] = 0;
}

static int arr(scan *s, int depth, int td, val *v)
{
    int64_t n = 0;
    v->first = -1;
    s->p++;
    ws(s);
    if (s->p < s->e && *s->p == ']') s->p++;
    else for (;;) {
        val x;
        if (value(s, depth + 1, td < 0 ? -1 : td + 1, &x, M_PLAIN)) return -1;
        if (!n++) v->first = x.type;
        ws(s);
        if (s->p >= s->e) return -1;
        if (*s->p == ']') { s->p++; break; }
        if (*s->p++ != ',') return -1;
        ws(s);
    }
    v->type = T_ARR;
    v->count = n;
    return 0;
}

static int kind_of(const val *x)
{
    return x->type == T_INT ? GX_MAAS_F_INT : x->type == T_NULL ? GX_MAAS_F_NULL : GX_MAAS_F_OTHER;
}

/* A member of the body itself: the fields the gateway reads. */
static int top_member(scan *s, const val *k, const val *x)
{
    gx_maas_body *o = s->out;
    if (key_is(k, "model")) {
        if (x->type != T_STR) return 0;
        if (x->esc) return -1;   /* rare: the tree unescapes it */
        o->has_model = 1;
        keep_model(o, x->s, x->slen);
    } else if (key_is(k, "stream")) {
        o->stream = x->type == T_TRUE;
    } else if (key_is(k, "stream_options")) {
        o->stream_opts = x->type == T_OBJ && s->so_usage ? 1 : 2;
        o->stream_opts_bad = x->type != T_OBJ && x->type != T_NULL;
    } else if (key_is(k, "max_completion_tokens")) {
        o->mct_kind = kind_of(x);
        if (x->type == T_INT) o->mct = x->i;
    } else if (key_is(k, "max_tokens")) {
        o->mt_kind = kind_of(x);
        if (x->type == T_INT) o->mt = x->i;
    } else if (key_is(k, "n")) {
        o->n_kind = kind_of(x);
        if (x->type == T_INT) o->has_n = 1, o->n = x->i;
    } else if (key_is(k, "messages")) {
        if (x->type == T_ARR) o->messages = x->count;
    } else if (key_is(k, "prompt")) {
        if (x->type == T_ARR && (x->first == T_STR || x->first == T_ARR)) o->prompts = x->count;
    }
    return 0;
}

static int obj(scan *s, int depth, int td, val *v, int mode)
{
    struct { const char *k; size_t n; } keys[MAX_KEYS];
    size_t nk = 0;
    s->p++;
    ws(s);
    if (s->p < s->e && *s->p == '}') s->p++;
    else for (;;) {
        val k, x;
        if (s->p >= s->e || *s->p != '"' || str(s, &k) || k.esc || nk == MAX_KEYS) return -1;
        for (size_t i = 0; i < nk; i++)
            if (keys[i].n == k.slen && !memcmp(keys[i].k, k.s, k.slen)) return -1;   /* a duplicate */
        keys[nk].k = k.s;
        keys[nk++].n = k.slen;
        ws(s);
        if (s->p >= s->e || *s->p++ != ':') return -1;
        ws(s);
        int cmode = M_PLAIN, ctd = td < 0 ? -1 : td + 1;
        if (mode == M_TOP && (key_is(&k, "messages") || key_is(&k, "prompt") || key_is(&k, "input"))) ctd = 0;
        if (mode == M_TOP && key_is(&k, "stream_options")) cmode = M_OPTS;
        if (value(s, depth + 1, ctd, &x, cmode)) return -1;
        if (mode == M_TOP && top_member(s, &k, &x)) return -1;
        if (mode == M_OPTS && key_is(&k, "include_usage") && x.type == T_TRUE) s->so_usage = 1;
        ws(s);
        if (s->p >= s->e) return -1;
        if (*s->p == '}') { s->p++; break; }
        if (*s->p++ != ',') return -1;
        ws(s);
    }
    v->type = T_OBJ;
    return 0;
}

/* One value at s->p. td: its depth inside messages/prompt/input (-1: not inside), for
 * the text count. */
static int value(scan *s, int depth, int td, val *v, int mode)
{
    if (s->p >= s->e || depth > MAX_DEPTH) return -1;
    int counted = td >= 0 && td <= TEXT_DEPTH;
    switch (*s->p) {
    case '"':
        if (str(s, v)) return -1;
        if (counted) s->out->text_bytes += v->ulen;
        return 0;
    case '{': return obj(s, depth, td, v, mode);
    case '[': return arr(s, depth, td, v);
    case 't': return lit(s, "true", 4, T_TRUE, v);
    case 'f': return lit(s, "false", 5, T_FALSE, v);
    case 'n': return lit(s, "null", 4, T_NULL, v);
    default:
        if (num(s, v)) return -1;
        if (counted && v->type == T_INT) s->out->text_bytes += 3;   /* a token id is a token */
        return 0;
    }
}

static void clear(gx_maas_body *o)
{
    o->has_model = o->model_long = o->stream = o->stream_opts = o->stream_opts_bad = o->has_max = o->has_n = 0;
    o->mt_kind = o->mct_kind = o->n_kind = 0;
    o->model[0] = 0;
    o->max_tokens = o->n = o->text_bytes = o->messages = o->mt = o->mct = 0;
    o->prompts = 1;
}

/* The rule both readers share: max_completion_tokens wins when it is an integer (as in
 * vLLM, `max_completion_tokens or max_tokens`). */
static void effective_max(gx_maas_body *o)
{
    if (o->mct_kind == GX_MAAS_F_INT) o->has_max = 1, o->max_tokens = o->mct;
    else if (o->mt_kind == GX_MAAS_F_INT) o->has_max = 1, o->max_tokens = o->mt;
}

int gx_maas_body_scan(const char *p, size_t len, gx_maas_body *out)
{
    scan s = {.p = p, .e = p + len, .out = out};
    val v;
    clear(out);
    ws(&s);
    if (s.p >= s.e || *s.p != '{' || obj(&s, 0, -1, &v, M_TOP)) return 1;
    ws(&s);
    if (s.p != s.e) return 1;
    effective_max(out);
    return 0;
}

/* ---- the same from a tree ---------------------------------------------------------- */

static int64_t text_bytes(const json_t *v, int depth)
{
    if (depth > TEXT_DEPTH) return 0;
    if (json_is_string(v)) return (int64_t)json_string_length(v);
    if (json_is_integer(v)) return 3;
    int64_t n = 0;
    size_t i;
    const char *k;
    json_t *x;
    if (json_is_array(v)) json_array_foreach((json_t *)v, i, x) n += text_bytes(x, depth + 1);
    else if (json_is_object(v)) json_object_foreach((json_t *)v, k, x) n += text_bytes(x, depth + 1);
    return n;
}

static int json_kind(const json_t *v)
{
    return !v ? GX_MAAS_F_ABSENT : json_is_integer(v) ? GX_MAAS_F_INT : json_is_null(v) ? GX_MAAS_F_NULL : GX_MAAS_F_OTHER;
}

void gx_maas_body_of_json(const json_t *b, gx_maas_body *out)
{
    clear(out);
    const char *model = json_string_value(json_object_get(b, "model"));
    if (model) {
        out->has_model = 1;
        keep_model(out, model, strlen(model));
    }
    out->stream = json_is_true(json_object_get(b, "stream"));
    const json_t *so = json_object_get(b, "stream_options");
    if (so) out->stream_opts = json_is_object(so) && json_is_true(json_object_get(so, "include_usage")) ? 1 : 2;
    out->stream_opts_bad = so && !json_is_object(so) && !json_is_null(so);
    const json_t *mct = json_object_get(b, "max_completion_tokens"), *mt = json_object_get(b, "max_tokens");
    out->mct_kind = json_kind(mct);
    if (json_is_integer(mct)) out->mct = json_integer_value(mct);
    out->mt_kind = json_kind(mt);
    if (json_is_integer(mt)) out->mt = json_integer_value(mt);
    effective_max(out);
    const json_t *n = json_object_get(b, "n");
    out->n_kind = json_kind(n);
    if (json_is_integer(n)) out->has_n = 1, out->n = json_integer_value(n);
    const json_t *pr = json_object_get(b, "prompt"), *p0 = json_array_get(pr, 0);
    if (json_is_string(p0) || json_is_array(p0)) out->prompts = (int64_t)json_array_size(pr);
    const json_t *msgs = json_object_get(b, "messages");
    out->text_bytes = text_bytes(msgs, 0) + text_bytes(json_object_get(b, "prompt"), 0) +
                      text_bytes(json_object_get(b, "input"), 0);
    out->messages = json_is_array(msgs) ? (int64_t)json_array_size(msgs) : 0;
}

/* ---- the body sent upstream ------------------------------------------------------------ */

/* Some limit field of `fields` is in the body (whatever it holds). */
static int limit_present(const gx_maas_body *b, int fields)
{
    return ((fields & GX_MAAS_FIELD_MT) && b->mt_kind) || ((fields & GX_MAAS_FIELD_MCT) && b->mct_kind);
}

/* The bytes already bound the completion to the grant: some limit field is present and
 * every one present is an integer in 1..grant (whichever field the upstream reads). */
static int limit_said(const gx_maas_body *b, int fields, int64_t grant)
{
    if ((fields & GX_MAAS_FIELD_MT) && b->mt_kind && (b->mt_kind != GX_MAAS_F_INT || b->mt < 1 || b->mt > grant))
        return 0;
    if ((fields & GX_MAAS_FIELD_MCT) && b->mct_kind && (b->mct_kind != GX_MAAS_F_INT || b->mct < 1 || b->mct > grant))
        return 0;
    return limit_present(b, fields);
}

/* Members inserted right after the body's opening brace: every byte the client sent
 * stays as sent, and no tree is built (this runs for every request that names no
 * max_tokens, or streams without asking for usage). */
static int insert_members(const char *p, size_t len, int usage, int64_t grant, char **out, size_t *out_len)
{
    static const char so[] = "\"stream_options\":{\"include_usage\":true},";
    char ins[sizeof so + 40];
    size_t k = 0;
    if (usage) memcpy(ins, so, sizeof so - 1), k = sizeof so - 1;
    if (grant > 0) k += (size_t)snprintf(ins + k, sizeof ins - k, "\"max_tokens\":%lld,", (long long)grant);
    const char *brace = memchr(p, '{', len), *q;
    if (!brace) return -1;
    size_t pre = (size_t)(brace - p) + 1;
    for (q = brace + 1; q < p + len && (*q == ' ' || *q == '\n' || *q == '\r' || *q == '\t'); q++) {}
    if (q < p + len && *q == '}') k--;   /* an empty object: no comma after the last member */
    char *b = malloc(len + k + 1);
    if (!b) return -1;   /* this request is refused (500), the others go on */
    memcpy(b, p, pre);
    memcpy(b + pre, ins, k);
    memcpy(b + pre + k, p + pre, len - pre);
    b[len + k] = 0;
    *out = b;
    *out_len = len + k;
    return 0;
}

/* A limit field the client sent that does not keep to the grant is set to it. */
static void lower_field(json_t *tree, const char *name, int64_t grant)
{
    json_t *v = json_object_get(tree, name);
    if (!v || (json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= grant)) return;
    json_object_set_new(tree, name, json_integer(grant));
}

int gx_maas_body_upstream(const char *p, size_t len, const gx_maas_body *b, json_t **tree, int add_usage, int fields,
                          int64_t grant, char **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    int usage = add_usage && b->stream_opts != 1;
    int limit = grant > 0 && !limit_said(b, fields, grant);
    if (!usage && !limit) return 0;   /* the fast path: the client's bytes */
    int add_limit = limit && !limit_present(b, fields);
    if ((!usage || !b->stream_opts) && (!limit || add_limit))
        return insert_members(p, len, usage, limit ? grant : 0, out, out_len);
    /* a field to change in place (a limit above the grant, a null one, stream_options
     * without include_usage): through the tree, which keeps the keys unique */
    if (!*tree) *tree = json_loadb(p, len, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(*tree)) return -1;
    if (usage) {
        json_t *so = json_object_get(*tree, "stream_options");
        if (!so || json_is_null(so)) json_object_set_new(*tree, "stream_options", so = json_object());
        if (!json_is_object(so)) return -1;
        json_object_set_new(so, "include_usage", json_true());
    }
    if (add_limit) {
        json_object_set_new(*tree, "max_tokens", json_integer(grant));
    } else if (limit) {
        if (fields & GX_MAAS_FIELD_MT) lower_field(*tree, "max_tokens", grant);
        if (fields & GX_MAAS_FIELD_MCT) lower_field(*tree, "max_completion_tokens", grant);
    }
    *out = json_dumps(*tree, JSON_COMPACT);
    if (!*out) return -1;
    *out_len = strlen(*out);
    return 0;
}
