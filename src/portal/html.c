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
