/* maas/body: what the gateway reads from a request body before it forwards it (the
 * model, stream, stream_options, max_tokens, n, and the size of the prompt's text), and
 * the body it forwards when it must change it (usage asked for, the granted limit).
 * Owns: a scan of the raw bytes that finds those fields, and the same fields taken from
 * a jansson tree; the second is the reference the first is tested against.
 * Must not: accept a body that jansson (JSON_REJECT_DUPLICATES) would reject, or read a
 * field differently from the tree. When the scan is not sure (invalid JSON, escaped
 * keys, exponents, deep nesting, many keys in one object) it says so and the caller
 * parses with jansson, which also words the error: the scan never makes one up. */
#ifndef GX_MAAS_BODY_H
#define GX_MAAS_BODY_H
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>

#define GX_MAAS_BODY_MODEL 256   /* a longer "model" names no model (served names <= 128) */

/* What a field holds. A limit that is null (or not a number) names no limit, yet the
 * gateway must know the field is there: it replaces it rather than adding a second one. */
enum { GX_MAAS_F_ABSENT = 0, GX_MAAS_F_INT, GX_MAAS_F_NULL, GX_MAAS_F_OTHER };

/* Which fields limit a completion's length (for gx_maas_body_upstream). */
enum { GX_MAAS_FIELD_MT = 1, GX_MAAS_FIELD_MCT = 2 };

typedef struct gx_maas_body {
    int has_model;                    /* "model" is a string */
    int model_long;                   /* ... of GX_MAAS_BODY_MODEL bytes or more: names no model */
    char model[GX_MAAS_BODY_MODEL];   /* its value (cut when model_long) */
    int stream;                       /* "stream": true */
    int stream_opts;                  /* 0: no "stream_options"; 1: an object whose include_usage is
                                       * true; 2: anything else */
    int stream_opts_bad;              /* "stream_options" is there but neither an object nor null:
                                       * a streamed request with it is refused (400), since the
                                       * gateway must set include_usage inside it */
    int has_max;                      /* max_completion_tokens if an integer, else max_tokens if one */
    int64_t max_tokens;
    int mt_kind, mct_kind;            /* "max_tokens", "max_completion_tokens": GX_MAAS_F_* */
    int64_t mt, mct;                  /* ... their values when GX_MAAS_F_INT (else 0) */
    int has_n;                        /* "n" is an integer */
    int64_t n;
    int n_kind;                       /* GX_MAAS_F_* */
    int64_t prompts;                  /* "prompt" as a list of prompts (its first element a string
                                       * or a list): how many; else 1 */
    int64_t text_bytes;               /* bytes of text in "messages", "prompt" and "input": every
                                       * string value, 3 for an integer (a token id), down to
                                       * depth 16 */
    int64_t messages;                 /* elements of "messages" when it is an array */
} gx_maas_body;

/* Scan len bytes: 0 with *out filled, or 1 when the caller must parse with jansson (the
 * body may still be valid; the scan only takes what it can check as jansson would). */
int gx_maas_body_scan(const char *p, size_t len, gx_maas_body *out);
/* The same fields from a parsed body (an object). */
void gx_maas_body_of_json(const json_t *b, gx_maas_body *out);
/* The body to send upstream for the len bytes at p (whose fields are *b): with
 * stream_options.include_usage true when add_usage, and, when grant > 0, with every
 * limit field of `fields` (GX_MAAS_FIELD_*) that is present an integer in 1..grant, or
 * "max_tokens": grant when none is present. Returns 0 with *out NULL when the bytes
 * already say all that (sent as they are), 0 with *out malloc'ed otherwise, -1 when
 * the body cannot be changed (stream_options not an object). *tree is a parse of the
 * body the caller already has, or NULL; it is parsed here when needed and the caller
 * frees it. */
int gx_maas_body_upstream(const char *p, size_t len, const gx_maas_body *b, json_t **tree, int add_usage, int fields,
                          int64_t grant, char **out, size_t *out_len);

#endif
