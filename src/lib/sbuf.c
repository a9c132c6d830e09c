/* sbuf: growing printf buffer and Prometheus label escaping (see sbuf.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "lib/sbuf.h"

void gx_sbuf_printf(gx_sbuf *b, const char *fmt, ...)
{
    for (;;) {
        size_t room = b->cap - b->n;
        int w = -1;
        if (room) {
            va_list ap;
            va_start(ap, fmt);
            w = vsnprintf(b->p + b->n, room, fmt, ap);
            va_end(ap);
            if (w >= 0 && (size_t)w < room) { b->n += (size_t)w; return; }
        }
        b->cap = b->cap * 2 + (size_t)(w > 0 ? w : 0) + 256;
        char *np = realloc(b->p, b->cap);
        if (!np) abort();
        b->p = np;
    }
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
