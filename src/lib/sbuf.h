/* sbuf: a growing text buffer written with printf formats, and the escaping of
 * Prometheus label values; shared by every /metrics renderer (api, gpu, maas). */
#ifndef GX_SBUF_H
#define GX_SBUF_H
#include <stddef.h>

typedef struct gx_sbuf {
    char *p;       /* NUL-terminated; malloc'd, owned by the caller once done */
    size_t n, cap;
} gx_sbuf;

/* Append formatted text, growing as needed (aborts only when memory is exhausted). */
void gx_sbuf_printf(gx_sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A label value escaped as the exposition format asks (\\, \", \n), into buf. */
const char *gx_prom_label(const char *s, char *buf, size_t n);

#endif
