/* http_parse: a strict HTTP/1.1 request parser with no I/O, for api/http.c.
 * Owns: finding the end of a request head, parsing the request line and headers in
 * place (NULs written into the caller's buffer), body framing (Content-Length or
 * chunked), decoding chunked bodies in place, percent-decoding the path and query.
 * Must not: read sockets, allocate, or read the clock: every function works on the
 * caller's bytes so that the unit tests can feed it anything.
 * Errors are returned as an HTTP status (400, 417, 431, 501, 505) with a message. */
#ifndef GX_HTTP_PARSE_H
#define GX_HTTP_PARSE_H
#include <stddef.h>
#include <stdint.h>

#define GX_HP_MAX_HEAD 16384     /* request line + headers, bytes */
#define GX_HP_MAX_HEADERS 100
#define GX_HP_MAX_QUERY 64       /* query parameters */

enum { GX_HP_BODY_NONE, GX_HP_BODY_LENGTH, GX_HP_BODY_CHUNKED };

typedef struct gx_hp_pair { const char *name, *value; } gx_hp_pair;

typedef struct gx_hp_req {
    const char *method;
    const char *path;            /* percent-decoded, without the query */
    int minor;                   /* HTTP/1.<minor>: 0 or 1 (higher minors count as 1) */
    int keep_alive;              /* by version and Connection */
    int expect_continue;         /* Expect: 100-continue */
    int body;                    /* GX_HP_BODY_* */
    uint64_t content_length;
    gx_hp_pair h[GX_HP_MAX_HEADERS];
    int nh;
    gx_hp_pair q[GX_HP_MAX_QUERY];
    int nq;
} gx_hp_req;

/* Where the head in b[0..len) ends (the index just past its empty line), or 0 when
 * it is not complete yet. *scan keeps where to look from on the next call. */
size_t gx_hp_head_end(const char *b, size_t len, size_t *scan);
/* Parse the complete head b[0..len) in place. 0, or an HTTP status with *why set. */
int gx_hp_parse_head(char *b, size_t len, gx_hp_req *r, const char **why);
/* Case-insensitive header lookup (the first one): NULL when absent. */
const char *gx_hp_header(const gx_hp_req *r, const char *name);
const char *gx_hp_query(const gx_hp_req *r, const char *key);

/* Chunked body decoder: call with the bytes received so far; it decodes in place. */
typedef struct gx_hp_chunked {
    int state;
    int digits;
    uint64_t left;              /* data bytes left in the current chunk */
    size_t extra;               /* bytes of extensions and trailers seen (bounded) */
} gx_hp_chunked;
/* Consumes from b[0..len) and moves the chunk data to the front of b: *out is the
 * data byte count, *done is set at the end of the body. Returns the bytes consumed
 * (the rest belongs to the next request), or -1 on malformed framing (*why). */
long gx_hp_unchunk(gx_hp_chunked *st, char *b, size_t len, size_t *out, int *done, const char **why);
/* Whether the decoder has seen the whole body. */
int gx_hp_unchunk_done(const gx_hp_chunked *st);

#endif
