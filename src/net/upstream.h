/* net/upstream: the gateway's own HTTP/1.1 client for plain http:// model servers,
 * in the daemon's epoll loop, with a keep-alive pool per host (what nginx's
 * `upstream { keepalive N; }` does).
 * Owns: non-blocking connects, one writev per request (head and body), the response
 * parser (status, headers, Content-Length / chunked / until-close bodies, with limits),
 * body delivery as it arrives, pause/resume for back-pressure, cancellation (the
 * connection is closed, never pooled), timeouts (connect, first byte, idle between
 * reads), the idle pool (capped, expired before the usual server keep-alive timeout),
 * one transparent retry on a fresh connection when a pooled one fails before any byte
 * of the answer.
 * Must not: resolve names (blocking; callers use libcurl for those), do TLS, know what
 * the bodies mean, or allocate per request (the request lives in the caller's struct).
 * Callbacks never run inside gx_up_start/gx_up_resume/gx_up_cancel: only from the loop
 * (socket events) and gx_up_tick, so a caller may start, pause or cancel from any of
 * its own callbacks. */
#ifndef GX_MAAS_UPSTREAM_H
#define GX_MAAS_UPSTREAM_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "net/loop.h"

#define GX_UP_MAX_HEAD 16384   /* status line + headers of an answer */
#define GX_UP_MAX_HEADERS 100
#define GX_UP_MAX_CHUNK_LINE 1024
#define GX_UP_REQ_HEAD 1400    /* the request head we send (Authorization included) */

/* ---- the response parser (pure: no I/O, unit-tested on its own) -------------------- */

enum { GX_UP_NEED, GX_UP_HEAD, GX_UP_DATA, GX_UP_END, GX_UP_ERR };

typedef struct gx_up_parser {
    int state;
    int status;
    int keepalive;             /* the connection may carry another request after END */
    int chunked;
    int64_t clen;              /* Content-Length, -1 none */
    int64_t left;              /* of the body or of the current chunk */
    char ctype[128];
    const char *err;           /* why GX_UP_ERR */
} gx_up_parser;

void gx_up_parser_init(gx_up_parser *p);
/* Parse from buf[0..len): returns one event and sets *used to the bytes consumed
 * (the caller keeps the rest and calls again with it first, plus what arrives).
 * GX_UP_HEAD: status, ctype, keepalive are set. GX_UP_DATA: body bytes at *data,
 * *dlen (inside buf). GX_UP_NEED: nothing more can be done without more input.
 * GX_UP_END: the answer is complete. GX_UP_ERR: p->err says why. */
int gx_up_parse(gx_up_parser *p, const char *buf, size_t len, size_t *used, const char **data, size_t *dlen);
/* The peer closed: GX_UP_END when that ends the answer (a body read until close),
 * else GX_UP_ERR (cut short). */
int gx_up_parse_eof(gx_up_parser *p);

/* ---- the client -------------------------------------------------------------------- */

enum { GX_UP_OK = 0, GX_UP_ECONNECT, GX_UP_ECLOSED, GX_UP_ETIMEOUT, GX_UP_EPROTO, GX_UP_EIO };

typedef struct gx_up_cb {
    void (*head)(void *ud, int status, const char *ctype);
    void (*body)(void *ud, const char *p, size_t n);
    /* The end: err GX_UP_*; got_bytes: any byte of an answer arrived (a request that
     * failed without one may be sent elsewhere). The request is forgotten before. */
    void (*done)(void *ud, int err, int got_bytes, const char *why);
} gx_up_cb;

typedef struct gx_up_req {     /* embedded in the caller's state: no allocation */
    const gx_up_cb *cb;
    void *ud;
    struct gx_up_conn *conn;   /* NULL when not in flight */
    struct gx_up_host *host;
    char head[GX_UP_REQ_HEAD];
    size_t head_len;
    const char *body;          /* the caller keeps it alive while in flight */
    size_t body_len;
    size_t sent;
    int retried, got_bytes, paused;
    int64_t connect_ms, first_byte_ms, idle_ms;
    char why[160];
} gx_up_req;

typedef struct gx_up gx_up;

gx_up *gx_up_new(gx_loop *loop);
void gx_up_free(gx_up *u);
/* 1 when url ("http://IP[:port][/prefix]", or localhost) can go through this client. */
int gx_up_handles(const char *url);
/* Send POST base_url + path with body; extra_header ("Name: value", or NULL/"") is
 * added. Returns 0 (the answer comes through cb), -1 when this client cannot do it
 * (the caller uses another way). timeouts in ms (<= 0: none). */
int gx_up_start(gx_up *u, gx_up_req *r, const char *base_url, const char *path, const char *extra_header,
                const char *body, size_t body_len, int64_t connect_ms, int64_t first_byte_ms, int64_t idle_ms,
                const gx_up_cb *cb, void *ud);
/* Stop delivering body bytes (the reader is behind); resume lets them flow again. */
void gx_up_pause(gx_up_req *r);
void gx_up_resume(gx_up *u, gx_up_req *r);
/* The caller no longer wants the answer: the connection is closed (the server sees the
 * client leave) and no callback follows. */
void gx_up_cancel(gx_up *u, gx_up_req *r);
/* Timeouts, idle expiry and resumed requests; returns ms until it wants to run (-1 none). */
int64_t gx_up_tick(gx_up *u);
/* Connections: open (in use and idle) and idle. */
void gx_up_counts(const gx_up *u, int *open, int *idle);
const char *gx_up_strerror(int err);

#endif
