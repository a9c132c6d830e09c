/* cli/fmt: pure helpers for the client commands: times, ages, NS/NAME references,
 * URL escaping, short strings and JSON field access.
 * Owns: nothing with state. Must not: do I/O, read the clock or allocate (except
 * where a function says it returns a malloc'd string). Everything here is unit-tested. */
#ifndef GX_CLI_FMT_H
#define GX_CLI_FMT_H
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

/* Age of an RFC 3339 time at now_ms, or "-" when t is NULL or not a time. */
const char *gx_cli_fmt_since(const char *t, int64_t now_ms, char *buf, size_t n);

/* Split "NS/NAME" or "NAME" into ns and name. For a bare NAME, ns becomes def_ns
 * (may be NULL or "": ns is then left empty for the caller to resolve). A namespace
 * in the reference that contradicts a non-empty flag_ns is an error.
 * Returns 0, or -1 with a message in err. */
int gx_cli_parse_ref(const char *arg, const char *flag_ns, const char *def_ns,
                     char *ns, size_t nsn, char *name, size_t namen, char *err, size_t errn);

/* Percent-encode s for one URL path segment or query value (RFC 3986 unreserved
 * characters pass). Returns buf, or NULL when it does not fit. */
const char *gx_cli_pct(const char *s, char *buf, size_t n);

/* Copy s into buf, cut to at most max display columns (UTF-8 aware, ends in "..."
 * when cut); control characters become spaces. Returns buf. */
const char *gx_cli_shorten(const char *s, size_t max, char *buf, size_t n);

/* Display width of a UTF-8 string in columns (one per code point). */
size_t gx_cli_width(const char *s);

/* Field access that tolerates absent or mistyped fields. Paths are dotted
 * ("admission.clusterQueue"). */
const json_t *gx_cli_jget(const json_t *o, const char *path);
/* String value at path, or NULL. */
const char *gx_cli_jstr(const json_t *o, const char *path);
/* String value at path, or def when absent/empty. */
const char *gx_cli_jstr_or(const json_t *o, const char *path, const char *def);
/* Integer or integral string at path written into buf ("-" when absent). */
const char *gx_cli_jnum(const json_t *o, const char *path, char *buf, size_t n);
/* A queue position at path counted from 1 ("1" is next), as the portal shows it; the
 * API's positions count from 0. "-" when absent. */
const char *gx_cli_position(const json_t *o, const char *path, char *buf, size_t n);

/* Join a JSON array of strings with sep ("-" when empty). Returns buf. */
const char *gx_cli_join(const json_t *arr, const char *sep, char *buf, size_t n);
/* An object of scalars as "k=v, k=v" ("-" when empty). Returns buf. */
const char *gx_cli_kv(const json_t *obj, char *buf, size_t n);

/* GPU demand of a workload for the GPUS column, summed over its pod sets: "2", "1 shared",
 * "2 mig-1g.10gb", "4000Mi mem 30% cores"; "0" when it asks for none. Returns buf. */
const char *gx_cli_gpus(const json_t *workload, char *buf, size_t n);

#endif
