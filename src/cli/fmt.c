/* cli/fmt: pure formatting and parsing helpers of the client (times, ages, references,
 * URL escaping, JSON field access, the GPUS cell).
 * Owns: the exact text of ages and cells, so that tables look the same everywhere.
 * Must not: do I/O, read the clock (callers pass "now") or keep state. */
#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/num.h"
#include "cli/fmt.h"
#include "lib/gxtime.h"

const char *gx_cli_fmt_since(const char *t, int64_t now_ms, char *buf, size_t n)
{
    int64_t ms;
    if (!t || gx_time_parse(t, &ms)) { snprintf(buf, n, "-"); return buf; }
    return gx_duration_age(now_ms - ms, buf, n);
}

static int bad_name(const char *s)
{
    if (!*s) return 1;
    for (; *s; s++)
        if ((unsigned char)*s <= ' ' || *s == '/' || *s == 0x7f) return 1;
    return 0;
}

int gx_cli_parse_ref(const char *arg, const char *flag_ns, const char *def_ns,
                     char *ns, size_t nsn, char *name, size_t namen, char *err, size_t errn)
{
    const char *slash = strchr(arg, '/');
    ns[0] = name[0] = 0;
    if (slash) {
        size_t l = (size_t)(slash - arg);
        if (l == 0 || l >= nsn || strchr(slash + 1, '/') || strlen(slash + 1) >= namen) {
            snprintf(err, errn, "'%s' is not NAMESPACE/NAME", arg);
            return -1;
        }
        memcpy(ns, arg, l);
        ns[l] = 0;
        snprintf(name, namen, "%s", slash + 1);
        if (flag_ns && *flag_ns && strcmp(flag_ns, ns)) {
            snprintf(err, errn, "'%s' names namespace %s but -n says %s", arg, ns, flag_ns);
            return -1;
        }
    } else {
        if (strlen(arg) >= namen) { snprintf(err, errn, "name '%.40s...' is too long", arg); return -1; }
        snprintf(name, namen, "%s", arg);
        const char *d = flag_ns && *flag_ns ? flag_ns : def_ns;
        if (d && *d) snprintf(ns, nsn, "%s", d);
    }
    if (bad_name(name) || (ns[0] && bad_name(ns))) {
        snprintf(err, errn, "'%s' is not a valid NAMESPACE/NAME", arg);
        return -1;
    }
    return 0;
}

const char *gx_cli_pct(const char *s, char *buf, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
            if (o + 1 >= n) return NULL;
            buf[o++] = (char)c;
        } else {
            if (o + 3 >= n) return NULL;
            buf[o++] = '%';
            buf[o++] = hex[c >> 4];
            buf[o++] = hex[c & 15];
        }
    }
    if (o >= n) return NULL;
    buf[o] = 0;
    return buf;
}

size_t gx_cli_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80) w++;
    return w;
}

const char *gx_cli_shorten(const char *s, size_t max, char *buf, size_t n)
{
    if (!n) return buf;
    size_t o = 0, cols = 0, total = gx_cli_width(s);
    size_t keep = total > max ? (max > 3 ? max - 3 : 0) : total;
    int cut = total > max;
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        int lead = (c & 0xC0) != 0x80;
        if (lead && cols == keep) break;
        size_t clen = 1;
        if (lead && c >= 0x80) clen = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
        if (lead && o + clen + 4 > n) { cut = 1; break; } /* keep room for "..." and the NUL */
        cols += lead;
        buf[o++] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
    }
    for (int i = 0; cut && i < 3 && o + 1 < n; i++) buf[o++] = '.';
    buf[o] = 0;
    return buf;
}

const json_t *gx_cli_jget(const json_t *o, const char *path)
{
    char key[128];
    while (o && path && *path) {
        const char *dot = strchr(path, '.');
        size_t l = dot ? (size_t)(dot - path) : strlen(path);
        if (l >= sizeof key || !json_is_object(o)) return NULL;
        memcpy(key, path, l);
        key[l] = 0;
        o = json_object_get(o, key);
        path = dot ? dot + 1 : NULL;
    }
    return o;
}

const char *gx_cli_jstr(const json_t *o, const char *path)
{
    const json_t *v = gx_cli_jget(o, path);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

const char *gx_cli_jstr_or(const json_t *o, const char *path, const char *def)
{
    const char *s = gx_cli_jstr(o, path);
    return s && *s ? s : def;
}

const char *gx_cli_jnum(const json_t *o, const char *path, char *buf, size_t n)
{
    const json_t *v = gx_cli_jget(o, path);
    if (json_is_integer(v)) snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v)) gx_num_fmt(json_real_value(v), buf, n);
    else if (json_is_string(v) && *json_string_value(v)) snprintf(buf, n, "%s", json_string_value(v));
    else if (json_is_boolean(v)) snprintf(buf, n, "%s", json_is_true(v) ? "true" : "false");
    else snprintf(buf, n, "-");
    return buf;
}

const char *gx_cli_position(const json_t *o, const char *path, char *buf, size_t n)
{
    const json_t *v = gx_cli_jget(o, path);
    if (json_is_integer(v)) snprintf(buf, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v) + 1);
    else snprintf(buf, n, "-");
    return buf;
}

/* Append to buf at *o without overflowing; output is cut when it does not fit. */
static void app(char *buf, size_t n, size_t *o, const char *fmt, const char *s)
{
    if (*o >= n) return;
    int w = snprintf(buf + *o, n - *o, fmt, s);
    if (w > 0) *o += (size_t)w < n - *o ? (size_t)w : n - *o - 1;
}

const char *gx_cli_join(const json_t *arr, const char *sep, char *buf, size_t n)
{
    size_t o = 0, i;
    const json_t *v;
    buf[0] = 0;
    json_array_foreach(arr, i, v) {
        if (!json_is_string(v)) continue;
        if (o) app(buf, n, &o, "%s", sep);
        app(buf, n, &o, "%s", json_string_value(v));
    }
    if (!o) snprintf(buf, n, "-");
    return buf;
}

const char *gx_cli_kv(const json_t *obj, char *buf, size_t n)
{
    size_t o = 0;
    const char *k;
    const json_t *v;
    char num[64];
    buf[0] = 0;
    json_object_foreach((json_t *)obj, k, v) {
        if (o) app(buf, n, &o, "%s", ", ");
        app(buf, n, &o, "%s=", k);
        json_t *wrap = json_pack("{sO}", "v", (json_t *)v);
        app(buf, n, &o, "%s", gx_cli_jnum(wrap, "v", num, sizeof num));
        json_decref(wrap);
    }
    if (!o) snprintf(buf, n, "-");
    return buf;
}

/* One GPU resource of the GPUS cell: its label and total over pod sets. */
typedef struct gpu_sum { const char *res; int64_t total; int whole; } gpu_sum;

static int gpu_resource(const char *r)
{
    return !strcmp(r, "nvidia.com/gpu") || !strcmp(r, "nvidia.com/gpu.shared") ||
           !strncmp(r, "nvidia.com/mig-", 15) || !strcmp(r, "nvidia.com/gpumem") ||
           !strcmp(r, "nvidia.com/gpucores");
}

static void gpu_label(const gpu_sum *g, char *out, size_t n)
{
    const char *r = g->res;
    if (!g->whole) snprintf(out, n, "? %s", r + 11); /* a quantity we cannot sum */
    else if (!strcmp(r, "nvidia.com/gpu")) snprintf(out, n, "%" PRId64, g->total);
    else if (!strcmp(r, "nvidia.com/gpu.shared")) snprintf(out, n, "%" PRId64 " shared", g->total);
    else if (!strcmp(r, "nvidia.com/gpumem")) snprintf(out, n, "%" PRId64 "Mi mem", g->total);
    else if (!strcmp(r, "nvidia.com/gpucores")) snprintf(out, n, "%" PRId64 "%% cores", g->total);
    else snprintf(out, n, "%" PRId64 " %s", g->total, r + 11); /* "mig-1g.10gb" */
}

const char *gx_cli_gpus(const json_t *workload, char *buf, size_t n)
{
    gpu_sum sums[8];
    size_t ns = 0, i;
    const json_t *ps;
    json_array_foreach(gx_cli_jget(workload, "podSets"), i, ps) {
        const json_t *cnt = json_object_get(ps, "count");
        int64_t count = json_is_integer(cnt) ? json_integer_value(cnt) : 1;
        const char *res;
        const json_t *q;
        json_object_foreach((json_t *)gx_cli_jget(ps, "requests"), res, q) {
            if (!gpu_resource(res)) continue;
            size_t k = 0;
            while (k < ns && strcmp(sums[k].res, res)) k++;
            if (k == ns) {
                if (ns == sizeof sums / sizeof sums[0]) continue;
                sums[ns++] = (gpu_sum){res, 0, 1};
            }
            char *end = NULL;
            long long v = json_is_string(q) ? strtoll(json_string_value(q), &end, 10)
                                            : json_is_integer(q) ? json_integer_value(q) : -1;
            if (json_is_string(q) && (!end || *end || end == json_string_value(q))) v = -1;
            if (v < 0) sums[k].whole = 0;
            else sums[k].total += v * count;
        }
    }
    size_t o = 0;
    buf[0] = 0;
    for (size_t k = 0; k < ns; k++) {
        char one[96];
        gpu_label(&sums[k], one, sizeof one);
        if (o) app(buf, n, &o, "%s", " ");
        app(buf, n, &o, "%s", one);
    }
    if (!o) snprintf(buf, n, "0");
    return buf;
}
