/* maas/body: what the gateway reads from a request body before it forwards it (the
 * model, stream, stream_options, max_tokens, n, and the size of the prompt's text).
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

typedef struct gx_maas_body {
    int has_model;                    /* "model" is a string */
    int model_long;                   /* ... of GX_MAAS_BODY_MODEL bytes or more: names no model */
    char model[GX_MAAS_BODY_MODEL];   /* its value (cut when model_long) */
    int stream;                       /* "stream": true */
    int stream_opts;                  /* 0: no "stream_options"; 1: an object whose include_usage is
                                       * true; 2: anything else */
    int has_max;                      /* max_completion_tokens if an integer, else max_tokens if one */
    int64_t max_tokens;
    int has_n;                        /* "n" is an integer */
    int64_t n;
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

#endif
