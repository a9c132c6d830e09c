/* http: our HTTP/1.1 server (http.c, parser in http_parse.c) driven by the epoll
 * loop, with bodies collected up to a limit, deferred answers, and streamed responses
 * that wait without busy-looping. No TLS (put a TLS-terminating proxy in front), no
 * HTTP/2.
 * Owns: request/response plumbing, keep-alive, limits and timeouts, streams.
 * Must not: know routes or JSON shapes beyond the two error envelopes (the daemon's,
 * and OpenAI's under the prefix of gx_http_set_prefix_limit). */
#ifndef GX_HTTP_H
#define GX_HTTP_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>
#include "net/loop.h"
#include "lib/err.h"

typedef struct gx_http gx_http;

typedef struct gx_req {
    void *conn;              /* http.c's connection (opaque) */
    const char *method;
    const char *path;        /* without the query string */
    char *body;              /* NUL-terminated */
    size_t body_len;
    int body_too_large;
    void *user;              /* set by the router after authentication */
    /* Deferred answers (the gateway): a handler that sets resp->defer keeps req as
     * its handle and the connection waiting, and later answers with gx_http_complete
     * (the handler is entered once per request). async is the handler's own state:
     * async_free(async) runs when the request ends (the answer sent, or the client
     * gone: after that req must not be used), never from inside gx_http_complete. */
    void *async;
    void (*async_free)(void *async);
} gx_req;

/* A streamed body: read() fills buf and returns the byte count, 0 for "nothing yet"
 * (the connection sleeps until gx_http_wake_streams / gx_http_wake_stream), or -1 at
 * the end. free() runs when the stream ends or the client leaves (noticed at once). */
typedef struct gx_stream {
    ssize_t (*read)(void *ud, char *buf, size_t max);
    void (*free)(void *ud);
    void *ud;
    /* Optional: where http keeps a handle for gx_http_wake_stream (wakes this stream
     * alone); set to NULL before free() runs. */
    void **wake;
} gx_stream;

typedef struct gx_resp {
    int status;
    json_t *json;            /* owned; sent as application/json */
    char *text;              /* owned; sent as ctype (default text/plain) */
    size_t text_len;
    const char *ctype;
    gx_stream stream;        /* when stream.read is set: chunked streamed body */
    const char *hname[16];
    char hval[16][128];
    int nh;
    int defer;               /* answer later, with gx_http_complete: see gx_req.async */
} gx_resp;

typedef void (*gx_http_fn)(gx_req *req, gx_resp *resp, void *ud);

/* The server's limits (gpuaas.yaml `limits:`, docs/configuration.md); a 0 takes the
 * default. A connection over conns or conns_per_addr (counted when accepted, whatever
 * it then does) first takes the place of an idle keep-alive connection (of its own
 * address for conns_per_addr), the longest idle; with none, it is answered 503 with
 * Retry-After and closed at once, before its request is read. */
typedef struct gx_http_limits {
    size_t body_bytes;      /* larger request bodies get 413 (the prefix's: see below) */
    int conns;              /* connections at once, every client together */
    int conns_per_addr;     /* connections at once from one client address */
} gx_http_limits;
#define GX_HTTP_BODY_DEFAULT ((size_t)1 << 20)
#define GX_HTTP_CONNS_DEFAULT 4096
#define GX_HTTP_CONNS_PER_ADDR_DEFAULT 256

/* Listen on host:port (port 0 = any free port), handing every complete request to fn. */
gx_http *gx_http_start(gx_loop *loop, const char *host, int port, const gx_http_limits *lim,
                       gx_http_fn fn, void *ud, gx_err *err);
void gx_http_stop(gx_http *h);
int gx_http_port(const gx_http *h);
/* Let every sleeping stream read again (new log output, a workload ended). */
void gx_http_wake_streams(gx_http *h);
int gx_http_stream_count(const gx_http *h);
/* Wake one stream by the handle gx_stream.wake received (NULL: nothing). */
void gx_http_wake_stream(void *handle);
/* The answer to a deferred request (see gx_req.async). resp is the caller's, filled
 * as a handler fills one; its json, text and stream are taken (resp is left empty).
 * The head and a plain body are written at once (one send); the cleanup (async_free)
 * and a stream's body follow at the next gx_http_run, so no callback into the caller
 * runs from in here. Called before the handler returned (the answer was ready at
 * once), it is sent when the handler returns. -1 when req is not waiting for an
 * answer (answered already): json and text are freed, a stream stays the caller's. */
int gx_http_complete(gx_req *req, gx_resp *resp);
/* Requests under path prefix (the gateway's "/v1/") get their own body limit, and an
 * over-limit body reaches the handler with body_too_large set (so it can answer in its
 * own error format). The prefix is the OpenAI-compatible surface: what the HTTP layer
 * refuses there itself (400, 408, 431, 501, 505...) is answered in OpenAI's envelope,
 * {"error":{"message","type","param":null,"code"}}, when the target is known (read
 * from the raw request line if the head did not parse). */
void gx_http_set_prefix_limit(gx_http *h, const char *prefix, size_t limit);
/* The durability barrier. ticket() counts the changes saved so far (the store's
 * commits). An answer whose request moved that count (a commit between the request's
 * dispatch and its answer) is held, not sent, until gx_http_release says every change
 * up to the count at its answer is on the disk; the connection reads nothing more
 * meanwhile (pipelined requests wait). Streams are never held. Without a barrier
 * nothing is held. Why here: one place sees every answer, so no write path can forget
 * to wait, and read-only requests never do. */
void gx_http_set_barrier(gx_http *h, uint64_t (*ticket)(void *ud), void *ud);
void gx_http_release(gx_http *h, uint64_t synced);
/* Answers held by the barrier now. */
int gx_http_held(const gx_http *h);
/* 0 when gx_http_run has pending work, else -1 (timeouts run on loop timers). */
int64_t gx_http_timeout(gx_http *h);
/* Do pending work now: woken streams, the cleanup after completed answers. */
void gx_http_run(gx_http *h);

const char *gx_req_query(const gx_req *r, const char *key);
const char *gx_req_header(const gx_req *r, const char *name);
/* The client's IPv4 address, dotted ("127.0.0.1"). */
const char *gx_req_peer(const gx_req *r);

/* The i-th header (name and value as received), or the i-th query pair (decoded), for
 * a caller that forwards a request (the portal's session proxy): 0, or -1 past the end. */
int gx_req_header_at(const gx_req *r, int i, const char **name, const char **value);
int gx_req_query_at(const gx_req *r, int i, const char **key, const char **value);
/* Hand the request's connection over, from inside the handler (which then sets
 * resp->defer and never completes): a new descriptor of the client's socket, which the
 * caller now owns (reads, writes, closes); the server forgets the connection when the
 * handler returns (no answer, no timeouts, it no longer counts toward the connection
 * limits). For a proxy that relays a WebSocket or an answer byte for byte. -1 when it
 * cannot (outside a handler, or bytes of a next request already read). */
int gx_http_takeover(gx_req *req);

/* Response helpers. */
void gx_resp_json(gx_resp *r, int status, json_t *body);           /* steals body */
void gx_resp_text(gx_resp *r, int status, const char *ctype, const char *text);
void gx_resp_header(gx_resp *r, const char *name, const char *value);
/* {"error": {"code","reason","message","field","line","document"}} from err. */
void gx_resp_error(gx_resp *r, const gx_err *err);
void gx_resp_errorf(gx_resp *r, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
