/* sbuf: a growing text buffer written with printf formats, the escaping of
 * Prometheus label values (shared by every /metrics renderer: api, gpu, maas), and a
 * bounded string copy for hot paths where snprintf's format parsing shows. */
#ifndef GX_SBUF_H
#define GX_SBUF_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct gx_sbuf {
    char *p;       /* NUL-terminated; malloc'd, owned by the caller once done */
    size_t n, cap;
} gx_sbuf;

/* Append formatted text, growing as needed (aborts only when memory is exhausted). */
void gx_sbuf_printf(gx_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A label value escaped as the exposition format asks (\\, \", \n), into buf. */
const char *gx_prom_label(const char *s, char *buf, size_t n);

/* v in decimal at the end of buf (at least 21 bytes), NUL-terminated; returns the first
 * digit. For hot paths (response heads, rate-limit headers) where snprintf showed. */
static inline char *gx_fmt_u64(char *buf, size_t n, uint64_t v)
{
    char *e = buf + n - 1;
    *e = 0;
    do *--e = (char)('0' + v % 10); while (v /= 10);
    return e;
}

/* Copy src into dst of n bytes (n > 0), cut to fit and always NUL-terminated: what
 * snprintf(dst, n, "%s", src) does, without parsing a format. Returns dst. */
static inline char *gx_strcpy_cut(char *dst, size_t n, const char *src)
{
    size_t len = strnlen(src, n - 1);
    memcpy(dst, src, len);
    dst[len] = 0;
    return dst;
}

#endif
