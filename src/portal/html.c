/* html: output buffer, escaping and form decoding for the portal (see html.h).
 * Owns: the one formatter every page uses (%H escapes, %U percent-encodes).
 * Must not: let a conversion it does not know pass through unescaped: an unknown
 * conversion aborts, so a typo shows up in the first test instead of as an injection. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/alloc.h"
#include "portal/html.h"

void gx_portal_esc(gx_sbuf *b, const char *s)
{
    if (!s) return;
    const char *run = s;
    for (; *s; s++) {
        const char *rep = NULL;
        switch (*s) {
        case '&': rep = "&amp;"; break;
        case '<': rep = "&lt;"; break;
        case '>': rep = "&gt;"; break;
        case '"': rep = "&quot;"; break;
        case '\'': rep = "&#39;"; break;
        case '`': rep = "&#96;"; break;
        case '=': rep = "&#61;"; break;
        default: continue;
        }
        gx_sbuf_put(b, run, (size_t)(s - run));
        gx_sbuf_puts(b, rep);
        run = s + 1;
    }
    gx_sbuf_put(b, run, (size_t)(s - run));
}

void gx_portal_urlenc(gx_sbuf *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
            c == '.' || c == '~') {
            gx_sbuf_put(b, (const char *)&c, 1);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            gx_sbuf_put(b, e, 3);
        }
    }
}

/* One conversion spec "%[-0-9.]*(l|ll|z)?[conv]" at fmt; returns its length. */
static size_t spec_len(const char *fmt)
{
    size_t i = 1;
    while (fmt[i] && strchr("-+ #0123456789.", fmt[i])) i++;
    while (fmt[i] == 'l' || fmt[i] == 'z') i++;
    return fmt[i] ? i + 1 : i;
}

void gx_portal_putf(gx_sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const char *run = fmt;
    while (*fmt) {
        if (*fmt != '%') { fmt++; continue; }
        gx_sbuf_put(b, run, (size_t)(fmt - run));
        size_t n = spec_len(fmt);
        char spec[32], conv = fmt[n - 1], tmp[128];
        if (n >= sizeof spec) abort();
        memcpy(spec, fmt, n);
        spec[n] = 0;
        int longs = (int)(strchr(spec, 'l') ? (strstr(spec, "ll") ? 2 : 1) : 0), z = strchr(spec, 'z') != NULL;
        switch (conv) {
        case '%': gx_sbuf_puts(b, "%"); break;
        case 'H': gx_portal_esc(b, va_arg(ap, const char *)); break;
        case 'U': gx_portal_urlenc(b, va_arg(ap, const char *)); break;
        case 's': {
            const char *s = va_arg(ap, const char *);
            if (!strcmp(spec, "%s")) gx_sbuf_puts(b, s ? s : "");
            else { snprintf(tmp, sizeof tmp, spec, s ? s : ""); gx_sbuf_puts(b, tmp); }
            break;
        }
        case 'd': case 'u': case 'x':
            if (z) snprintf(tmp, sizeof tmp, spec, va_arg(ap, size_t));
            else if (longs == 2) snprintf(tmp, sizeof tmp, spec, va_arg(ap, long long));
            else if (longs == 1) snprintf(tmp, sizeof tmp, spec, va_arg(ap, long));
            else snprintf(tmp, sizeof tmp, spec, va_arg(ap, int));
            gx_sbuf_puts(b, tmp);
            break;
        case 'f': case 'g':
            snprintf(tmp, sizeof tmp, spec, va_arg(ap, double));
            gx_sbuf_puts(b, tmp);
            break;
        case 'c':
            tmp[0] = (char)va_arg(ap, int);
            gx_sbuf_put(b, tmp, 1);
            break;
        default: abort(); /* see the header comment */
        }
        fmt += n;
        run = fmt;
    }
    gx_sbuf_put(b, run, (size_t)(fmt - run));
    va_end(ap);
}

/* Characters that may (and, when plain, should) be escaped inside a `v`-flag class:
 * ECMAScript's class syntax characters, syntax characters and reserved punctuators. */
static int v_class_punct(char c) { return c && strchr("()[]{}/-\\|^$.*+?&!#%,:;<=>@`~", c) != NULL; }

static int pat_put(char *out, size_t n, size_t *k, const char *s)
{
    size_t l = strlen(s);
    if (*k + l >= n) return -1;
    memcpy(out + *k, s, l);
    *k += l;
    out[*k] = 0;
    return 0;
}

/* One character of a bracket expression, escaped for a `v` class. */
static int pat_class_char(char *out, size_t n, size_t *k, char c)
{
    char t[3] = {'\\', c, 0};
    return pat_put(out, n, k, v_class_punct(c) ? t : t + 1);
}

/* A POSIX bracket expression at s ('[' already consumed); returns the length consumed
 * up to and including the closing ']', or 0 when it has no translation. */
static size_t pat_class(const char *s, char *out, size_t n, size_t *k)
{
    static const struct { const char *name, *js; } CL[] = {
        {"alpha", "a-zA-Z"}, {"digit", "0-9"}, {"alnum", "a-zA-Z0-9"}, {"upper", "A-Z"}, {"lower", "a-z"},
        {"space", "\\s"}, {"xdigit", "0-9a-fA-F"}, {NULL, NULL}};
    size_t i = 0;
    if (pat_put(out, n, k, "[")) return 0;
    if (s[i] == '^') { if (pat_put(out, n, k, "^")) return 0; i++; }
    int first = 1;
    while (s[i] && (first || s[i] != ']')) {
        first = 0;
        if (s[i] == '[' && (s[i + 1] == '.' || s[i + 1] == '=')) return 0;
        if (s[i] == '[' && s[i + 1] == ':') {
            const char *end = strstr(s + i + 2, ":]");
            int found = 0;
            for (int j = 0; end && CL[j].name; j++)
                if ((size_t)(end - (s + i + 2)) == strlen(CL[j].name) && !strncmp(s + i + 2, CL[j].name, strlen(CL[j].name))) {
                    if (pat_put(out, n, k, CL[j].js)) return 0;
                    found = 1;
                    i = (size_t)(end - s) + 2;
                }
            if (!found) return 0;
            continue;
        }
        /* a range a-z (the '-' neither first nor last): its ends are characters */
        if (s[i + 1] == '-' && s[i + 2] && s[i + 2] != ']') {
            if (pat_class_char(out, n, k, s[i]) || pat_put(out, n, k, "-") || pat_class_char(out, n, k, s[i + 2])) return 0;
            i += 3;
            continue;
        }
        if (pat_class_char(out, n, k, s[i])) return 0;
        i++;
    }
    if (s[i] != ']' || pat_put(out, n, k, "]")) return 0;
    return i + 1;
}

int gx_portal_html_pattern(const char *posix, char *out, size_t n)
{
    size_t k = 0;
    if (!n) return -1;
    out[0] = 0;
    for (const char *s = posix; *s;) {
        if (*s == '[') {
            size_t used = pat_class(s + 1, out, n, &k);
            if (!used) return -1;
            s += 1 + used;
        } else if (*s == '\\') {
            char c = s[1], t[3] = {'\\', c, 0};
            if (!c) return -1;
            /* `v` allows escaping only syntax characters and '/'; GNU's \w \s \b mean the same */
            if (strchr("^$\\.*+?()[]{}|/", c) || strchr("wWsSbB", c)) { if (pat_put(out, n, &k, t)) return -1; }
            else if (c > ' ' && c < 0x7f && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) {
                if (pat_put(out, n, &k, t + 1)) return -1; /* \- \# ...: the plain character */
            } else return -1;
            s += 2;
        } else if (*s == ']' || *s == '}') {
            char t[3] = {'\\', *s, 0}; /* a lone one is plain in POSIX, an error under `v` */
            if (pat_put(out, n, &k, t)) return -1;
            s++;
        } else {
            char t[2] = {*s, 0};
            if (*s == '{') { /* a bound {m} {m,} {m,n}; a '{' that starts none is plain */
                const char *e = s + 1;
                while ((*e >= '0' && *e <= '9') || *e == ',') e++;
                if (*e != '}' || e == s + 1) { if (pat_put(out, n, &k, "\\{")) return -1; s++; continue; }
                size_t l = (size_t)(e - s) + 1;
                if (k + l >= n) return -1;
                memcpy(out + k, s, l);
                k += l;
                out[k] = 0;
                s += l;
                continue;
            }
            if (pat_put(out, n, &k, t)) return -1;
            s++;
        }
    }
    return 0;
}

static int hexv(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Decode s[0..n) into out (room for n + 1 bytes); -1 on a bad escape or a NUL. */
static int decode(const char *s, size_t n, char *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '+') c = ' ';
        else if (c == '%') {
            if (i + 2 >= n) return -1;
            int h = hexv(s[i + 1]), l = hexv(s[i + 2]);
            if (h < 0 || l < 0) return -1;
            c = (char)(h * 16 + l);
            i += 2;
        }
        if (!c) return -1;
        out[k++] = c;
    }
    out[k] = 0;
    return 0;
}

json_t *gx_portal_form_parse(const char *body, size_t len, size_t max_fields, size_t max_value)
{
    json_t *form = json_object();
    size_t fields = 0, i = 0;
    while (i < len) {
        size_t j = i;
        while (j < len && body[j] != '&') j++;
        if (j > i) {
            const char *eq = memchr(body + i, '=', j - i);
            size_t kl = eq ? (size_t)(eq - (body + i)) : j - i;
            size_t vl = eq ? (size_t)(body + j - eq - 1) : 0;
            if (++fields > max_fields || vl > max_value * 3 || kl > 256) goto bad;
            char *k = gx_xmalloc(kl + 1), *v = gx_xmalloc(vl + 1);
            int rc = decode(body + i, kl, k) || decode(eq ? eq + 1 : "", vl, v);
            if (!rc && strlen(v) > max_value) rc = -1;
            json_t *sv = rc ? NULL : json_string(v); /* NULL when not UTF-8 */
            free(v);
            if (!sv) { free(k); goto bad; }
            json_t *old = json_object_get(form, k);
            if (!old) json_object_set_new(form, k, sv);
            else if (json_is_array(old)) json_array_append_new(old, sv);
            else json_object_set_new(form, k, json_pack("[O,o]", old, sv));
            free(k);
        }
        i = j + 1;
    }
    return form;
bad:
    json_decref(form);
    return NULL;
}

const char *gx_portal_form_get(const json_t *form, const char *key)
{
    const json_t *v = json_object_get(form, key);
    if (json_is_array(v)) v = json_array_get(v, 0);
    return json_string_value(v) ? json_string_value(v) : "";
}
