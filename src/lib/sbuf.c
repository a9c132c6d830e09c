/* sbuf: the growable buffer and Prometheus label escaping (see sbuf.h).
 * Owns: growth through gx_xgrow (doubling; out of memory aborts in lib/alloc).
 * Must not: call realloc itself or keep anything but p, n, cap. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "lib/alloc.h"
#include "lib/sbuf.h"

void gx_sbuf_init(gx_sbuf *b) { memset(b, 0, sizeof *b); }

/* Room for add more bytes and the terminator. */
static void reserve(gx_sbuf *b, size_t add)
{
    if (add >= SIZE_MAX - b->n) gx_alloc_fail(SIZE_MAX);
    if (!b->p) b->cap = 0;   /* {malloc(n), 0, n} whose malloc failed: start afresh */
    if (b->n + add + 1 > b->cap) b->p = gx_xgrow(b->p, &b->cap, b->n + add + 1, 1);
}

void gx_sbuf_put(gx_sbuf *b, const void *s, size_t n)
{
    reserve(b, n);
    if (n) memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

void gx_sbuf_puts(gx_sbuf *b, const char *s)
{
    if (s) gx_sbuf_put(b, s, strlen(s));
}

void gx_sbuf_vprintf(gx_sbuf *b, const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    size_t room = b->p ? b->cap - b->n : 0;
    int w = vsnprintf(room ? b->p + b->n : NULL, room, fmt, ap);
    if (w >= 0 && (size_t)w >= room) {   /* did not fit: grow to the size it told us */
        reserve(b, (size_t)w);
        w = vsnprintf(b->p + b->n, (size_t)w + 1, fmt, again);
    }
    va_end(again);
    if (w > 0) b->n += (size_t)w;
    else if (!b->p) gx_sbuf_put(b, "", 0);   /* "" or a format error: still a string */
}

void gx_sbuf_printf(gx_sbuf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    gx_sbuf_vprintf(b, fmt, ap);
    va_end(ap);
}

void gx_sbuf_reset(gx_sbuf *b)
{
    b->n = 0;
    if (b->p) b->p[0] = 0;
}

void gx_sbuf_free(gx_sbuf *b)
{
    free(b->p);
    gx_sbuf_init(b);
}

char *gx_sbuf_take(gx_sbuf *b)
{
    if (!b->p) gx_sbuf_put(b, "", 0);
    char *p = b->p;
    gx_sbuf_init(b);
    return p;
}

const char *gx_prom_label(const char *s, char *buf, size_t n)
{
    size_t k = 0;
    for (; s && *s && k + 3 < n; s++) {
        if (*s == '\\' || *s == '"') buf[k++] = '\\';
        if (*s == '\n') { buf[k++] = '\\'; buf[k++] = 'n'; continue; }
        buf[k++] = *s;
    }
    buf[k] = 0;
    return buf;
}
