/* err: one error record threaded through every fallible call.
 * Owns: gx_err and the helpers that fill it.
 * A function that can fail returns 0 (or a value) on success and -1 on failure
 * after filling *err, so that the outermost caller (HTTP handler, CLI, sim) can tell
 * the user which file, line and field is wrong, and why. */
#ifndef GX_ERR_H
#define GX_ERR_H
#include <stdarg.h>
#include <stddef.h>

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
/* Prefix the field path: gx_err_prefix(e, "spec") turns "flavors[0]" into "spec.flavors[0]".
 * A path too long for field keeps its end, after "...". */
void gx_err_prefix(gx_err *e, const char *prefix);
/* Put "WHERE: " (from fmt) before the message: gx_err_wrap(e, "%s:%d", file, line). The
 * message stays whole; when both do not fit, WHERE keeps its end, after "...". */
void gx_err_wrap(gx_err *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A field path from fmt into buf (n bytes), for gx_errf: buf, or `parent` when the path
 * does not fit (a user's key of any length): a shorter path, never a cut one. */
const char *gx_err_path(char *buf, size_t n, const char *parent, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* "file.yaml:12: spec.x: message" style one-liner into buf. */
const char *gx_err_str(const gx_err *e, const char *file, char *buf, unsigned n);

#endif
