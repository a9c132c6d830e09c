/* sbuf: the one growable byte buffer (text written with printf formats or appended as
 * bytes; the portal's pages, the YAML emitter and /metrics all build into it), the
 * escaping of Prometheus label values (shared by every /metrics renderer: api, gpu,
 * maas), and a bounded string copy for hot paths where snprintf's format parsing shows.
 * Owns: growth (through lib/alloc: out of memory aborts there, in one place).
 * Must not: hold a read cursor; a consumer that drains a buffer keeps its own offset. */
#ifndef GX_SBUF_H
#define GX_SBUF_H
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* All zero is an empty buffer. p is NULL until the first append, then always
 * NUL-terminated after its n bytes; malloc'd, owned by the caller once done. */
typedef struct gx_sbuf {
    char *p;
    size_t n, cap;
} gx_sbuf;

/* An empty buffer (the same as = {0}). */
void gx_sbuf_init(gx_sbuf *b);
/* Append n bytes (may contain NULs; the terminator follows them). */
void gx_sbuf_put(gx_sbuf *b, const void *s, size_t n);
/* Append a string; NULL appends nothing. */
void gx_sbuf_puts(gx_sbuf *b, const char *s);
/* Append formatted text. */
void gx_sbuf_printf(gx_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void gx_sbuf_vprintf(gx_sbuf *b, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
/* Empty it, keeping the memory for the next use. */
void gx_sbuf_reset(gx_sbuf *b);
/* Free the memory; the buffer is empty again. */
void gx_sbuf_free(gx_sbuf *b);
/* Take the string out (malloc'd, never NULL: "" when nothing was written); the buffer
 * is left empty. */
char *gx_sbuf_take(gx_sbuf *b);
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
