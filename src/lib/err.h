/* err: one error record threaded through every fallible call.
 * Owns: gx_err and the helpers that fill it.
 * A function that can fail returns 0 (or a value) on success and -1 on failure
 * after filling *err, so that the outermost caller (HTTP handler, CLI, sim) can tell
 * the user which file, line and field is wrong, and why. */
#ifndef GX_ERR_H
#define GX_ERR_H
#include <stdarg.h>

typedef struct gx_err {
    int status;       /* the HTTP status this error maps to: 400, 404, 409, 413, 422, 500 */
    int line;         /* 1-based YAML/JSON line of `field`, 0 when unknown */
    int doc;          /* 0-based document index in a multi-document file, -1 when unknown */
    char field[192];  /* JSON path of the offending field ("spec.resourceGroups[0].flavors[1].name"), "" if none */
    char msg[512];    /* what is wrong, for a person */
} gx_err;

/* Reset to "no error". */
void gx_err_clear(gx_err *e);
/* Fill e (which may be NULL) and return -1, so callers can `return gx_errf(...)`. */
int gx_errf(gx_err *e, int status, const char *field, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Prefix the field path: gx_err_prefix(e, "spec") turns "flavors[0]" into "spec.flavors[0]". */
void gx_err_prefix(gx_err *e, const char *prefix);
/* "file.yaml:12: spec.x: message" style one-liner into buf. */
const char *gx_err_str(const gx_err *e, const char *file, char *buf, unsigned n);

#endif
