/* maas/scrape: filtering one model server's /metrics text down to its vllm:* families,
 * labelled with the gateway's model and replica, and merging those of every replica
 * into one valid exposition (see scrape.h).
 * Owns: a strict reading of the text format (metric and label names, quoted label
 * values with their three escapes, value, optional timestamp), the family a sample
 * belongs to (a histogram's _bucket/_sum/_count, a counter's _total), the bounds.
 * Must not: do I/O or read a clock (unit-tested as it is); pass on a line it did not
 * understand, or a label gpuaas_model/gpuaas_replica of the server's own (a duplicate
 * label would make the whole /metrics unreadable). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/alloc.h"
#include "lib/strmap.h"
#include "maas/scrape.h"

#define PREFIX "vllm:"
#define MAX_NAME 200                /* a longer metric name is skipped */

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int label_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static int name_start(char c) { return label_start(c) || c == ':'; }
static int name_char(char c) { return name_start(c) || is_digit(c); }
static int blank(char c) { return c == ' ' || c == '\t'; }

/* A line worth reading: valid UTF-8 (Prometheus rejects the whole exposition
 * otherwise) without control bytes other than tab. */
static int line_ok(const unsigned char *p, size_t n)
{
    for (size_t i = 0; i < n;) {
        unsigned c = p[i];
        if (c < 0x80) {
            if ((c < 0x20 && c != '\t') || c == 0x7f) return 0;
            i++;
            continue;
        }
        size_t k = c >= 0xf0 && c <= 0xf4 ? 3 : c >= 0xe0 && c <= 0xef ? 2 : c >= 0xc2 && c <= 0xdf ? 1 : 0;
        if (!k || n - i <= k) return 0;
        unsigned v = c & (0x3fu >> k);
        for (size_t j = 1; j <= k; j++) {
            if ((p[i + j] & 0xc0) != 0x80) return 0;
            v = v << 6 | (p[i + j] & 0x3fu);
        }
        if ((k == 2 && (v < 0x800 || (v >= 0xd800 && v <= 0xdfff))) || (k == 3 && (v < 0x10000 || v > 0x10ffff)))
            return 0;              /* overlong, surrogate, beyond Unicode */
        i += k + 1;
    }
    return 1;
}

/* Length of the metric name that opens p[0..n); 0 when none (or too long). */
static size_t metric_name(const char *p, size_t n)
{
    if (!n || !name_start(p[0])) return 0;
    size_t i = 1;
    while (i < n && name_char(p[i])) i++;
    return i <= MAX_NAME ? i : 0;
}

static size_t skip_blank(const char *p, size_t n, size_t i)
{
    while (i < n && blank(p[i])) i++;
    return i;
}

/* The gateway's own labels: a server that sends them is not trusted with the line. */
static int reserved(const char *p, size_t n)
{
    return (n == 12 && !memcmp(p, "gpuaas_model", 12)) || (n == 14 && !memcmp(p, "gpuaas_replica", 14));
}

/* p[0] is '{': the index just past the matching '}', or 0 when the label set is not
 * valid (names, '=', quoted values with \\ \" \n only, commas). */
static size_t labels_end(const char *p, size_t n)
{
    size_t i = 1;
    for (;;) {
        i = skip_blank(p, n, i);
        if (i < n && p[i] == '}') return i + 1;
        size_t s = i;
        if (i >= n || !label_start(p[i])) return 0;
        while (i < n && (label_start(p[i]) || is_digit(p[i]))) i++;
        if (reserved(p + s, i - s)) return 0;
        i = skip_blank(p, n, i);
        if (i >= n || p[i] != '=') return 0;
        i = skip_blank(p, n, i + 1);
        if (i >= n || p[i] != '"') return 0;
        for (i++; i < n && p[i] != '"'; i++)
            if (p[i] == '\\') {
                if (i + 1 >= n || (p[i + 1] != '\\' && p[i + 1] != '"' && p[i + 1] != 'n')) return 0;
                i++;
            }
        if (i >= n) return 0;
        i = skip_blank(p, n, i + 1);
        if (i < n && p[i] == ',') { i++; continue; }
        if (i < n && p[i] == '}') return i + 1;
        return 0;
    }
}

/* A sample value: a Go-style float, NaN, +Inf or -Inf. */
static int value_ok(const char *p, size_t n)
{
    if ((n == 3 && !memcmp(p, "NaN", 3)) || (n == 4 && (!memcmp(p, "+Inf", 4) || !memcmp(p, "-Inf", 4)))) return 1;
    char buf[64];
    if (!n || n >= sizeof buf) return 0;
    for (size_t i = 0; i < n; i++)
        if (!is_digit(p[i]) && !strchr(".eE+-", p[i])) return 0;
    memcpy(buf, p, n);
    buf[n] = 0;
    char *end;
    strtod(buf, &end);
    return end == buf + n;
}

/* A timestamp: milliseconds, an integer that may be negative. */
static int stamp_ok(const char *p, size_t n)
{
    size_t i = n && p[0] == '-';
    if (i == n || n - i > 19) return 0;
    for (; i < n; i++)
        if (!is_digit(p[i])) return 0;
    return 1;
}

/* One sample line, split: name, the label set's inside (may be empty), value, stamp. */
typedef struct sample {
    const char *name, *lab, *val, *ts;
    size_t nl, ll, vl, tl;
} sample;

static int parse_sample(const char *p, size_t n, sample *s)
{
    memset(s, 0, sizeof *s);
    s->name = p;
    if (!(s->nl = metric_name(p, n))) return -1;
    size_t i = s->nl;
    if (i < n && p[i] == '{') {
        size_t e = labels_end(p + i, n - i);
        if (!e) return -1;
        s->lab = p + i + 1;
        s->ll = e - 2;
        while (s->ll && blank(s->lab[0])) { s->lab++; s->ll--; }
        while (s->ll && (blank(s->lab[s->ll - 1]) || s->lab[s->ll - 1] == ',')) s->ll--; /* a trailing comma is allowed */
        i += e;
    }
    if (i >= n || !blank(p[i])) return -1;
    i = skip_blank(p, n, i);
    s->val = p + i;
    while (i < n && !blank(p[i])) i++;
    s->vl = (size_t)(p + i - s->val);
    i = skip_blank(p, n, i);
    if (i < n) {
        s->ts = p + i;
        while (i < n && !blank(p[i])) i++;
        s->tl = (size_t)(p + i - s->ts);
        if (skip_blank(p, n, i) != n || !stamp_ok(s->ts, s->tl)) return -1;
    }
    return value_ok(s->val, s->vl) ? 0 : -1;
}

/* Does a sample called name[0..nl) belong to family fam of that type? A histogram's
 * _bucket/_sum/_count, a summary's _sum/_count, a counter's _total (when the family is
 * named without it) and _created do. */
static int in_family(const char *name, size_t nl, const char *fam, const char *type)
{
    size_t fl = strlen(fam);
    if (!fl || nl < fl || memcmp(name, fam, fl)) return 0;
    const char *suf = name + fl;
    size_t sl = nl - fl;
#define IS(x) (sl == sizeof(x) - 1 && !memcmp(suf, x, sl))
    if (!sl) return 1;
    if (!strcmp(type, "histogram")) return IS("_bucket") || IS("_sum") || IS("_count") || IS("_created");
    if (!strcmp(type, "summary")) return IS("_sum") || IS("_count") || IS("_created");
    if (!strcmp(type, "counter")) return IS("_total") || IS("_created");
#undef IS
    return 0;
}

/* What the filter knows of the family it is in. */
typedef struct fstate {
    char fam[MAX_NAME + 1];
    char type[16];
    const char *help;          /* the HELP text in the input, or NULL */
    size_t hl;
    int emitted;               /* its HELP/TYPE are in the output */
} fstate;

static void enter_family(fstate *f, const char *name, size_t nl)
{
    memcpy(f->fam, name, nl);
    f->fam[nl] = 0;
    strcpy(f->type, "untyped");
    f->help = NULL;
    f->hl = 0;
    f->emitted = 0;
}

/* HELP text: escapes only \\\\ and \\n (anything else makes the exposition unreadable). */
static int help_ok(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] == '\\' && (++i == n || (p[i] != '\\' && p[i] != 'n'))) return 0;
    return 1;
}

/* "# HELP name text" or "# TYPE name type": the family's metadata (other comments are
 * ignored). A TYPE after the family's samples cannot be honoured and is ignored. */
static void meta_line(fstate *f, const char *p, size_t n)
{
    size_t i = skip_blank(p, n, 1);
    int help = n - i > 5 && !memcmp(p + i, "HELP", 4) && blank(p[i + 4]);
    int type = n - i > 5 && !memcmp(p + i, "TYPE", 4) && blank(p[i + 4]);
    if (!help && !type) return;
    i = skip_blank(p, n, i + 4);
    size_t nl = metric_name(p + i, n - i);
    if (!nl || (i + nl < n && !blank(p[i + nl]))) return;
    if (strlen(f->fam) != nl || memcmp(f->fam, p + i, nl)) enter_family(f, p + i, nl);
    size_t r = skip_blank(p, n, i + nl);
    if (help) {
        if (!help_ok(p + r, n - r)) return;
        f->help = p + r;
        f->hl = n - r;
        return;
    }
    static const char *const types[] = {"counter", "gauge", "histogram", "summary", "untyped"};
    if (f->emitted) return;
    for (size_t k = 0; k < sizeof types / sizeof *types; k++)
        if (n - r == strlen(types[k]) && !memcmp(p + r, types[k], n - r)) strcpy(f->type, types[k]);
}

/* Write one kept sample (with its family's HELP/TYPE first when they are not out yet). */
static void emit(gx_sbuf *b, fstate *f, const sample *s, const char *ours)
{
    if (!f->emitted) {
        if (f->help) gx_sbuf_printf(b, "# HELP %s %.*s\n", f->fam, (int)f->hl, f->help);
        gx_sbuf_printf(b, "# TYPE %s %s\n", f->fam, f->type);
        f->emitted = 1;
    }
    gx_sbuf_printf(b, "%.*s{%.*s%s%s} %.*s", (int)s->nl, s->name, (int)s->ll, s->lab ? s->lab : "", s->ll ? "," : "",
                   ours, (int)s->vl, s->val);
    if (s->ts) gx_sbuf_printf(b, " %.*s", (int)s->tl, s->ts);
    gx_sbuf_printf(b, "\n");
}

char *gx_maas_scrape_filter(const char *in, size_t len, const char *model, int replica, int *cut)
{
    gx_sbuf b = {0};
    gx_sbuf_printf(&b, "%s", "");
    char esc[300], ours[400];
    snprintf(ours, sizeof ours, "gpuaas_model=\"%s\",gpuaas_replica=\"%d\"", gx_prom_label(model, esc, sizeof esc), replica);
    fstate f;
    enter_family(&f, "", 0);
    int samples = 0;
    *cut = 0;
    for (size_t at = 0; at < len;) {
        const char *p = in + at, *nl = memchr(p, '\n', len - at);
        size_t n = nl ? (size_t)(nl - p) : len - at;
        at += n + 1;
        if (n && p[n - 1] == '\r') n--;
        if (!n || !line_ok((const unsigned char *)p, n)) continue;
        if (p[0] == '#') { meta_line(&f, p, n); continue; }
        sample s;
        if (parse_sample(p, n, &s) || s.nl < sizeof PREFIX - 1 || memcmp(s.name, PREFIX, sizeof PREFIX - 1)) continue;
        if (!in_family(s.name, s.nl, f.fam, f.type)) enter_family(&f, s.name, s.nl); /* no metadata: its own, untyped */
        size_t mark = b.n;
        int was = f.emitted;
        if (samples < GX_MAAS_SCRAPE_MAX_SAMPLES) emit(&b, &f, &s, ours);
        if (samples >= GX_MAAS_SCRAPE_MAX_SAMPLES || b.n > GX_MAAS_SCRAPE_MAX_KEEP) {
            b.n = mark;                /* keep whole lines and families that have samples */
            b.p[b.n] = 0;
            f.emitted = was;
            *cut = 1;
            break;
        }
        samples++;
    }
    return b.p;
}

/* ---- merge ------------------------------------------------------------------------------ */

typedef struct seg { const char *p; size_t n; } seg;

typedef struct family {
    const char *help, *type;   /* whole lines, '\n' included; NULL: none seen */
    size_t hn, tn;
    seg *segs;
    size_t nseg, cap;
    char name[MAX_NAME + 1];
} family;

typedef struct families {
    gx_strmap by_name;
    family **v;
    size_t n, cap;
} families;

/* The family a "# HELP name ..." or "# TYPE name ..." line names, made on first sight. */
static family *family_of(families *fs, const char *line, size_t n)
{
    size_t i = 7, e = 7;
    while (e < n && line[e] != ' ') e++;
    if (e == i || e - i > MAX_NAME) return NULL;
    char name[MAX_NAME + 1];
    memcpy(name, line + i, e - i);
    name[e - i] = 0;
    family *f = gx_strmap_get(&fs->by_name, name);
    if (f) return f;
    f = gx_xcalloc(1, sizeof *f);
    memcpy(f->name, name, e - i + 1);
    fs->v = gx_xgrow(fs->v, &fs->cap, fs->n + 1, sizeof *fs->v);
    fs->v[fs->n++] = f;
    gx_strmap_put(&fs->by_name, name, f);
    return f;
}

/* Add sample lines p[0..n) to f, extending its last run when they follow on. */
static void add_seg(family *f, const char *p, size_t n)
{
    if (f->nseg && f->segs[f->nseg - 1].p + f->segs[f->nseg - 1].n == p) { f->segs[f->nseg - 1].n += n; return; }
    f->segs = gx_xgrow(f->segs, &f->cap, f->nseg + 1, sizeof *f->segs);
    f->segs[f->nseg++] = (seg){p, n};
}

void gx_maas_scrape_merge(const char *const *texts, size_t n, gx_sbuf *out)
{
    families fs = {0};
    gx_strmap_init(&fs.by_name);
    for (size_t t = 0; t < n; t++) {
        family *cur = NULL;
        for (const char *p = texts[t]; p && *p;) {
            const char *e = strchr(p, '\n');
            size_t len = e ? (size_t)(e - p) + 1 : strlen(p);
            int help = len > 7 && !memcmp(p, "# HELP ", 7), type = len > 7 && !memcmp(p, "# TYPE ", 7);
            if (help || type) {
                cur = family_of(&fs, p, len);
                if (cur && help && !cur->help) { cur->help = p; cur->hn = len; }
                if (cur && type && !cur->type) { cur->type = p; cur->tn = len; }
            } else if (cur && *p != '#') {
                add_seg(cur, p, len);
            }
            p += len;
        }
    }
    for (size_t i = 0; i < fs.n; i++) {
        family *f = fs.v[i];
        if (f->help) gx_sbuf_printf(out, "%.*s", (int)f->hn, f->help);
        if (f->type) gx_sbuf_printf(out, "%.*s", (int)f->tn, f->type);
        else gx_sbuf_printf(out, "# TYPE %s untyped\n", f->name);
        for (size_t k = 0; k < f->nseg; k++) gx_sbuf_printf(out, "%.*s", (int)f->segs[k].n, f->segs[k].p);
        free(f->segs);
        free(f);
    }
    free(fs.v);
    gx_strmap_free(&fs.by_name);
}
