/* http: our own small HTTP/1.1 server, driven by gx_loop.
 * Why we own it: the gateway path (a deferred answer per request) cost libmicrohttpd
 * a suspend (epoll_ctl DEL), a resume (eventfd write + read + epoll_ctl ADD) and a
 * read-until-EAGAIN per request; profiling put the gateway at 0.39 of nginx's
 * proxy_pass throughput, mostly in those syscalls. Here a request costs one recv and
 * one send: level-triggered epoll, one recv per readiness, the head parsed in place
 * (http_parse.c), status line + headers + body built in one buffer and sent with one
 * send(); EPOLLOUT is registered only while a write is partial, and a deferred answer
 * (gx_http_resume) is written at once without touching the epoll registration.
 * Owns: the listening socket, connections (keep-alive, pipelining handled one request
 * at a time, 100-continue, HEAD), body limits, streamed chunked bodies, timeouts
 * (header read, idle keep-alive, body, stalled writes; streams and deferred requests
 * are exempt), the connection limit, and the envelope of its own refusals (the
 * daemon's, or OpenAI's on the prefix surface: see server_error).
 * Does not: TLS (put a TLS-terminating proxy such as nginx or haproxy in front),
 * HTTP/2, request trailers (read and dropped), absolute-form targets.
 * Must not: call back into its callers' cleanup (async_free, stream free) from inside
 * gx_http_resume or the wake functions: those are called from the callers' own
 * callbacks, so such work waits for gx_http_run (the loop's before-sleep hook). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include "net/http.h"
#include "net/http_parse.h"
#include "lib/sbuf.h"

#define IN_CAP (GX_HP_MAX_HEAD + 16384)  /* a full head, and room to read a body */
#define MAX_CONNS 4000                    /* gateway streams are long-lived */
#define HEAD_MS 30000                     /* a whole head within this (slowloris) */
#define IDLE_MS 120000                    /* keep-alive connection with no request */
#define BODY_MS 60000                     /* without any body byte */
#define SEND_MS 60000                     /* a stalled write */
#define LINGER_MS 2000                    /* draining an unread body before close */
#define DISCARD_MAX (1u << 20)            /* over-limit body bytes read to keep-alive */
#define STREAM_CHUNK 16384
_Static_assert(STREAM_CHUNK <= 0xffff, "a chunk's size header is 4 hex digits");
#define STREAM_HIGH (64 * 1024)           /* buffered stream output before waiting */
#define STREAM_SNDBUF (64 * 1024)         /* kernel send buffer of a streaming connection */
#define OUT_KEEP (64 * 1024)              /* larger output buffers are freed after use */

enum { C_HEAD, C_BODY, C_HANDLER, C_SEND, C_STREAM, C_LINGER };

typedef struct conn conn;
struct conn {
    gx_req req;
    gx_http *h;
    int fd;
    int state;
    uint32_t ev;                  /* current epoll interest */
    struct sockaddr_in peer;
    char peer_s[INET_ADDRSTRLEN];
    char *in;                     /* IN_CAP bytes: [in_off, in_len) not yet consumed */
    size_t in_off, in_len, scan;
    size_t head_len;              /* the current request's head: in[0, head_len) */
    gx_hp_req hp;
    size_t limit;
    int own_413;
    int eof;                      /* the client shut its side */
    int dead;                     /* failed inside gx_http_resume: close at the next run */
    int in_handler, early;        /* gx_http_resume called before the handler returned */
    int keep_alive, head_only, close_after;
    uint64_t body_left;           /* Content-Length bytes still to read */
    gx_hp_chunked ch;
    size_t body_cap, discarded;
    char nobody[1];
    char *out;
    size_t out_off, out_len, out_cap;
    gx_stream s;
    int s_on, s_sleep, s_end, s_chunked;
    int64_t deadline;             /* 0: none */
    int pending;
    conn *pnext, *pprev;          /* the pending list (work for gx_http_run) */
    conn *next, *prev;            /* every connection */
};

struct gx_http {
    gx_loop *loop;
    int lfd;
    int port;
    size_t limit;
    gx_http_fn fn;
    void *ud;
    char prefix[32];
    size_t prefix_limit;
    conn *conns;
    int nconns, nstreams;
    conn *phead, *ptail;
    uint64_t sweep_timer;
    uint64_t accept_timer;        /* re-enables accept after EMFILE */
    int64_t date_sec;
    char date[40];
};

static int kick(conn *c);
static void server_error(conn *c, gx_resp *r, int status, const char *msg, int parsed);
static void on_conn(gx_loop *l, int fd, uint32_t ev, void *ud);

/* ---- responses ------------------------------------------------------------------ */

static const char *reason_of(int status)
{
    switch (status) {
    case 400: return "BadRequest";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "NotFound";
    case 405: return "MethodNotAllowed";
    case 409: return "Conflict";
    case 413: return "PayloadTooLarge";
    case 422: return "Invalid";
    case 429: return "TooManyRequests";
    case 503: return "Unavailable";
    default: return status >= 500 ? "InternalError" : "BadRequest";
    }
}

/* The reason phrase of the status line. */
static const char *phrase_of(int s)
{
    switch (s) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 303: return "See Other";
    case 304: return "Not Modified";
    case 307: return "Temporary Redirect";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 410: return "Gone";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Status";
    }
}

void gx_resp_json(gx_resp *r, int status, json_t *body)
{
    r->status = status;
    json_decref(r->json);
    r->json = body;
}

void gx_resp_text(gx_resp *r, int status, const char *ctype, const char *text)
{
    r->status = status;
    free(r->text);
    r->text = strdup(text);
    r->text_len = strlen(text);
    r->ctype = ctype;
}

void gx_resp_header(gx_resp *r, const char *name, const char *value)
{
    if (r->nh >= 16) return;
    r->hname[r->nh] = name;
    size_t n = strlen(value);
    if (n >= sizeof r->hval[0]) n = sizeof r->hval[0] - 1;
    memcpy(r->hval[r->nh], value, n);
    r->hval[r->nh][n] = 0;
    r->nh++;
}

void gx_resp_error(gx_resp *r, const gx_err *err)
{
    int status = err->status >= 400 ? err->status : 500;
    json_t *e = json_pack("{s:i,s:s,s:s}", "code", status, "reason", reason_of(status), "message", err->msg);
    if (err->field[0]) json_object_set_new(e, "field", json_string(err->field));
    if (err->line > 0) json_object_set_new(e, "line", json_integer(err->line));
    if (err->doc >= 0) json_object_set_new(e, "document", json_integer(err->doc));
    gx_resp_json(r, status, json_pack("{s:o}", "error", e));
}

void gx_resp_errorf(gx_resp *r, int status, const char *fmt, ...)
{
    gx_err e;
    gx_err_clear(&e);
    e.status = status;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.msg, sizeof e.msg, fmt, ap);
    va_end(ap);
    gx_resp_error(r, &e);
}

const char *gx_req_query(const gx_req *r, const char *key) { return gx_hp_query(&((conn *)r->conn)->hp, key); }
const char *gx_req_header(const gx_req *r, const char *name) { return gx_hp_header(&((conn *)r->conn)->hp, name); }

const char *gx_req_peer(const gx_req *r)
{
    conn *c = r->conn;
    if (!c->peer_s[0]) inet_ntop(AF_INET, &c->peer.sin_addr, c->peer_s, sizeof c->peer_s);
    return c->peer_s;
}

/* ---- connection plumbing ---------------------------------------------------------- */

static void out_reserve(conn *c, size_t more)
{
    if (c->out_len + more <= c->out_cap) return;
    size_t cap = c->out_cap ? c->out_cap : 4096;
    while (cap < c->out_len + more) cap *= 2;
    char *o = realloc(c->out, cap);
    if (!o) abort();
    c->out = o;
    c->out_cap = cap;
}

static void out_add(conn *c, const void *p, size_t n)
{
    out_reserve(c, n);
    memcpy(c->out + c->out_len, p, n);
    c->out_len += n;
}

static void add_pending(conn *c)
{
    if (c->pending) return;
    gx_http *h = c->h;
    c->pending = 1;
    c->pnext = NULL;
    c->pprev = h->ptail;
    if (h->ptail) h->ptail->pnext = c;
    else h->phead = c;
    h->ptail = c;
}

static void del_pending(conn *c)
{
    if (!c->pending) return;
    gx_http *h = c->h;
    if (c->pprev) c->pprev->pnext = c->pnext;
    else h->phead = c->pnext;
    if (c->pnext) c->pnext->pprev = c->pprev;
    else h->ptail = c->pprev;
    c->pending = 0;
}

/* Level-triggered interest: input unless the client is done or the input buffer is
 * full while a request is in progress (pipelined data waits in the kernel), output
 * only while a write is partial. Changed only when it differs. */
static void update_interest(conn *c)
{
    uint32_t ev = 0;
    int busy = c->state >= C_HANDLER;
    if (!c->eof && !(busy && c->in_len == IN_CAP)) ev |= EPOLLIN | EPOLLRDHUP;
    if (c->out_len > c->out_off) ev |= EPOLLOUT;
    if (ev == c->ev) return;
    c->ev = ev;
    gx_loop_watch(c->h->loop, c->fd, ev, on_conn, c);
}

/* Stream end or connection end: the caller's free() runs once, wake handle cleared. */
static void stream_release(conn *c)
{
    if (!c->s_on) return;
    c->s_on = 0;
    c->h->nstreams--;
    if (c->s.wake) *c->s.wake = NULL;
    if (c->s.free) c->s.free(c->s.ud);
    memset(&c->s, 0, sizeof c->s);
}

/* The request is over (answered, or the connection is going): the owners' cleanup. */
static void request_release(conn *c)
{
    stream_release(c);
    if (c->req.async && c->req.async_free) c->req.async_free(c->req.async);
    c->req.async = NULL;
    c->req.async_free = NULL;
    if (c->req.body != c->nobody) free(c->req.body);
    c->req.body = NULL;
}

static void close_conn(conn *c)
{
    gx_http *h = c->h;
    del_pending(c);
    request_release(c);
    gx_loop_unwatch(h->loop, c->fd);
    close(c->fd);
    if (c->prev) c->prev->next = c->next;
    else h->conns = c->next;
    if (c->next) c->next->prev = c->prev;
    h->nconns--;
    free(c->in);
    free(c->out);
    free(c);
}

/* Write what is buffered. 0: all of it or the socket is full; -1: the client is gone. */
static int flush(conn *c)
{
    while (c->out_len > c->out_off) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            return -1;
        }
        c->out_off += (size_t)n;
        if (c->state == C_SEND) c->deadline = gx_loop_now(c->h->loop) + SEND_MS;
    }
    if (c->out_off == c->out_len) {
        c->out_off = c->out_len = 0;
        if (c->out_cap > OUT_KEEP) { free(c->out); c->out = NULL; c->out_cap = 0; }
    }
    return 0;
}

/* The Date header's value, formatted once a second. */
/* Copy s to p (no NUL), return the end: the head builder's stpcpy without the NUL. */
static char *put(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}


static const char *date_now(gx_http *h)
{
    int64_t sec = gx_loop_now(h->loop) / 1000;
    if (sec != h->date_sec) {
        time_t t = (time_t)sec;
        struct tm tm;
        gmtime_r(&t, &tm);
        strftime(h->date, sizeof h->date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
        h->date_sec = sec;
    }
    return h->date;
}

/* Append the whole answer (status line, headers, body) to the output buffer. A stream
 * gets its headers here; its body comes from the stream pump (kick). */
static void build_resp(conn *c, gx_resp *r)
{
    gx_http *h = c->h;
    int status = r->status ? r->status : 200;
    const char *body = "";
    size_t blen = 0;
    char *dumped = NULL;
    const char *ctype = r->ctype ? r->ctype : "text/plain; charset=utf-8";
    if (r->stream.read) {
        ctype = r->ctype ? r->ctype : "text/plain; charset=utf-8";
    } else if (r->json) {
        dumped = json_dumps(r->json, JSON_INDENT(2) | JSON_ENCODE_ANY);
        if (!dumped) abort();
        body = dumped;
        blen = strlen(dumped);
        ctype = "application/json";
    } else if (r->text && r->text_len) {
        body = r->text;
        blen = r->text_len;
    }
    int no_body = status < 200 || status == 204 || status == 304;
    size_t need = 256 + strlen(ctype) + blen;
    for (int i = 0; i < r->nh; i++) need += strlen(r->hname[i]) + strlen(r->hval[i]) + 4;
    out_reserve(c, need);
    char *o = c->out + c->out_len;
    size_t room = c->out_cap - c->out_len;
    /* need covers every byte below: plain copies, no printf on the hot path */
    char *p = o;
    char num[24];
    p = put(p, "HTTP/1.1 ");
    p = put(p, gx_fmt_u64(num, sizeof num, (uint64_t)status));
    p = put(p, " ");
    p = put(p, phrase_of(status));
    p = put(p, "\r\nDate: ");
    p = put(p, date_now(h));
    p = put(p, "\r\nContent-Type: ");
    p = put(p, ctype);
    p = put(p, "\r\n");
    if (r->stream.read) {
        c->s_chunked = c->hp.minor >= 1;
        if (!c->s_chunked) c->keep_alive = 0; /* HTTP/1.0: the end of the body is the close */
        if (c->s_chunked) p = put(p, "Transfer-Encoding: chunked\r\n");
        p = put(p, "Cache-Control: no-cache\r\nX-Content-Type-Options: nosniff\r\n");
    } else if (!no_body) {
        p = put(p, "Content-Length: ");
        p = put(p, gx_fmt_u64(num, sizeof num, (uint64_t)(blen + (dumped ? 1 : 0))));
        p = put(p, "\r\n");
    }
    if (!c->keep_alive) p = put(p, "Connection: close\r\n");
    else if (c->hp.minor == 0) p = put(p, "Connection: keep-alive\r\n");
    for (int i = 0; i < r->nh; i++) {
        /* values come from code, but may carry user text: no header splitting */
        if (strpbrk(r->hval[i], "\r\n")) continue;
        p = put(p, r->hname[i]);
        p = put(p, ": ");
        p = put(p, r->hval[i]);
        p = put(p, "\r\n");
    }
    p = put(p, "\r\n");
    size_t n = (size_t)(p - o);
    if (n >= room) abort();   /* need was computed wrong: never send a torn head */
    c->out_len += n;
    if (!no_body && !c->head_only && blen) {
        out_add(c, body, blen);
        if (dumped) out_add(c, "\n", 1);
    }
    free(dumped);
}

/* Queue the handler's answer, and take its stream if it has one. */
static void answer(conn *c, gx_resp *r)
{
    gx_http *h = c->h;
    if (r->defer) { r->defer = 0; server_error(c, r, 500, "the answer was deferred twice", 1); }
    if (c->close_after) c->keep_alive = 0;
    build_resp(c, r);
    c->deadline = 0;
    if (r->stream.read) {
        c->s = r->stream;
        c->s_on = 1;
        c->s_sleep = c->s_end = 0;
        h->nstreams++;
        if (c->head_only) {
            stream_release(c);
            c->state = C_SEND;
        } else {
            if (c->s.wake) *c->s.wake = c;
            c->state = C_STREAM;
            /* a fixed send buffer: a slow reader pushes back on the stream's source
             * (the gateway pauses its upstream) instead of filling megabytes of
             * autotuned kernel buffer */
            int sb = STREAM_SNDBUF;
            setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &sb, sizeof sb);
        }
    } else {
        c->state = C_SEND;
        c->deadline = gx_loop_now(h->loop) + SEND_MS;
    }
    json_decref(r->json);
    free(r->text);
    r->json = NULL;
    r->text = NULL;
}

/* Whether the request being refused is on the OpenAI-compatible surface (the prefix
 * given to gx_http_set_prefix_limit): its clients read only OpenAI's error envelope.
 * parsed: c->hp belongs to this request, and its path is set once the request line
 * parsed. Otherwise (a head too large, a timeout, a bad request line) the raw head at
 * c->in is read: the method, one space (or the NUL the parser wrote there), then the
 * target's first bytes, which is enough even when the line was cut short. */
static int openai_surface(const conn *c, int parsed)
{
    size_t pl = strlen(c->h->prefix);
    if (!pl) return 0;
    if (parsed && c->hp.path) return !strncmp(c->hp.path, c->h->prefix, pl);
    const char *b = c->in;
    size_t i = 0, n = c->in_len;
    while (i < n && i <= 32 && b[i] != ' ' && b[i] && b[i] != '\r' && b[i] != '\n') i++;
    if (!i || i >= n || (b[i] != ' ' && b[i])) return 0;
    i++;
    return n - i >= pl && !memcmp(b + i, c->h->prefix, pl);
}

/* OpenAI's "code" for a refusal by the HTTP layer: a stable, short name per status. */
static const char *openai_code(int status)
{
    switch (status) {
    case 400: return "bad_request";
    case 408: return "request_timeout";
    case 413: return "request_too_large";
    case 414: return "uri_too_long";
    case 417: return "expectation_failed";
    case 431: return "headers_too_large";
    case 500: return "internal_error";
    case 501: return "not_implemented";
    case 503: return "service_unavailable";
    case 505: return "http_version_not_supported";
    default: return NULL;
    }
}

/* A refusal by the server itself, in the envelope the client reads: OpenAI's
 * {"error":{"message","type","param","code"}} on the OpenAI surface, else the daemon's
 * (gx_resp_error). Cold path only: the check reads the head again. */
static void server_error(conn *c, gx_resp *r, int status, const char *msg, int parsed)
{
    if (!openai_surface(c, parsed)) {
        gx_resp_errorf(r, status, "%s", msg);
        return;
    }
    const char *type = status == 503 ? "service_unavailable" : status >= 500 ? "server_error" : "invalid_request_error";
    gx_resp_json(r, status, json_pack("{s:{s:s,s:s,s:n,s:s?}}", "error", "message", msg, "type", type, "param",
                                      "code", openai_code(status)));
}

/* An answer from the server itself (bad framing, limits, timeouts): the connection
 * closes. parsed: as for openai_surface. */
static void answer_error(conn *c, int status, const char *why, int parsed)
{
    gx_resp r;
    memset(&r, 0, sizeof r);
    server_error(c, &r, status, why, parsed);
    c->close_after = 1;
    c->head_only = 0;
    answer(c, &r);
}

/* A complete request (or one whose over-limit body is being refused): run the handler. */
static void dispatch(conn *c)
{
    gx_http *h = c->h;
    if (!c->req.body) {
        c->nobody[0] = 0;
        c->req.body = c->nobody;
    }
    gx_resp r;
    memset(&r, 0, sizeof r);
    if (c->req.body_too_large && !c->own_413)
        gx_resp_errorf(&r, 413, "request body larger than the limit of %zu bytes (limits.maxBodyBytes)", h->limit);
    else {
        c->in_handler = 1;
        h->fn(&c->req, &r, h->ud);
        c->in_handler = 0;
    }
    if (r.defer) {
        json_decref(r.json);
        free(r.text);
        c->state = C_HANDLER;
        c->deadline = 0;
        if (c->early) {
            c->early = 0;
            gx_http_resume(&c->req);
        }
        return;
    }
    answer(c, &r);
}

/* Body bytes: kept up to the limit, then only counted. */
static void body_add(conn *c, const char *p, size_t n)
{
    if (!n) return;
    if (c->req.body_too_large || c->req.body_len + n > c->limit) {
        c->req.body_too_large = 1;
        c->discarded += n;
        return;
    }
    if (c->req.body_len + n + 1 > c->body_cap) {
        size_t cap = c->body_cap ? c->body_cap * 2 : 4096;
        while (cap < c->req.body_len + n + 1) cap *= 2;
        char *b = realloc(c->req.body, cap);
        if (!b) abort();
        c->req.body = b;
        c->body_cap = cap;
    }
    memcpy(c->req.body + c->req.body_len, p, n);
    c->req.body_len += n;
    c->req.body[c->req.body_len] = 0;
}

/* A head is complete: set up the request. 0 to go on, or it queued an error answer. */
static void start_request(conn *c, size_t head_end)
{
    gx_http *h = c->h;
    const char *why = "";
    int rc = gx_hp_parse_head(c->in, head_end, &c->hp, &why);
    c->in_off = c->head_len = head_end;
    if (rc) { answer_error(c, rc, why, 1); return; }
    c->req.conn = c;
    c->req.method = c->hp.method;
    c->req.path = c->hp.path;
    c->keep_alive = c->hp.keep_alive;
    c->head_only = !strcmp(c->hp.method, "HEAD");
    c->limit = h->limit;
    c->own_413 = 0;
    if (h->prefix[0] && !strncmp(c->hp.path, h->prefix, strlen(h->prefix))) {
        c->limit = h->prefix_limit;
        c->own_413 = 1;
    }
    c->body_left = c->hp.body == GX_HP_BODY_LENGTH ? c->hp.content_length : 0;
    memset(&c->ch, 0, sizeof c->ch);
    if (c->hp.body == GX_HP_BODY_LENGTH && c->body_left > c->limit) {
        c->req.body_too_large = 1;
        /* refuse now rather than read a large body, or one the client waits to send */
        if (c->hp.expect_continue || c->body_left - c->limit > DISCARD_MAX) {
            c->close_after = 1;
            dispatch(c);
            return;
        }
    } else if (c->hp.body == GX_HP_BODY_LENGTH && c->body_left) {
        c->body_cap = (size_t)c->body_left + 1;
        c->req.body = malloc(c->body_cap);
        if (!c->req.body) abort();
        c->req.body[0] = 0;
    }
    if (c->hp.body == GX_HP_BODY_NONE) { dispatch(c); return; }
    if (c->hp.expect_continue && c->in_len == c->in_off) {
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        out_add(c, cont, sizeof cont - 1);
    }
    c->state = C_BODY;
    c->deadline = gx_loop_now(h->loop) + BODY_MS;
}

/* Take body bytes from the input buffer. */
static void read_body(conn *c)
{
    size_t avail = c->in_len - c->in_off;
    if (!avail) return;
    c->deadline = gx_loop_now(c->h->loop) + BODY_MS;
    if (c->hp.body == GX_HP_BODY_LENGTH) {
        size_t n = avail < c->body_left ? avail : (size_t)c->body_left;
        body_add(c, c->in + c->in_off, n);
        c->in_off += n;
        c->body_left -= n;
        if (!c->body_left) dispatch(c);
    } else {
        size_t out;
        int done;
        const char *why = "";
        long used = gx_hp_unchunk(&c->ch, c->in + c->in_off, avail, &out, &done, &why);
        if (used < 0) { c->in_off = c->in_len; answer_error(c, 400, why, 1); return; }
        body_add(c, c->in + c->in_off, out);
        c->in_off += (size_t)used;
        if (done) dispatch(c);
        else if (c->discarded > DISCARD_MAX) { c->close_after = 1; dispatch(c); }
    }
    /* the consumed body bytes' room is reused: the head stays where it is */
    if (c->state == C_BODY && c->in_off == c->in_len) c->in_off = c->in_len = c->head_len;
}

/* The answer is out: the owners' cleanup, then the next request (pipelined bytes may
 * be waiting) or the close. -1 when the connection was closed. */
static int end_request(conn *c)
{
    gx_http *h = c->h;
    int unread = c->in_len > c->in_off || c->body_left ||
                 (c->hp.body == GX_HP_BODY_CHUNKED && !gx_hp_unchunk_done(&c->ch));
    request_release(c);
    if (!c->keep_alive || c->close_after) {
        if (c->eof || !unread) { close_conn(c); return -1; }
        /* the client may still be sending a body we refused: drain it so that it reads
         * the answer instead of a reset */
        shutdown(c->fd, SHUT_WR);
        c->state = C_LINGER;
        c->in_off = c->in_len = 0;
        c->deadline = gx_loop_now(h->loop) + LINGER_MS;
        return 0;
    }
    size_t left = c->in_len - c->in_off;
    if (left && c->in_off) memmove(c->in, c->in + c->in_off, left);
    c->in_off = 0;
    c->in_len = left;
    c->scan = 0;
    memset(&c->req, 0, sizeof c->req);
    c->body_left = 0;
    c->body_cap = c->discarded = 0;
    c->close_after = 0;
    c->hp.body = GX_HP_BODY_NONE;
    c->state = C_HEAD;
    c->deadline = gx_loop_now(h->loop) + (left ? HEAD_MS : IDLE_MS);
    return 0;
}

/* Fill the output with what the stream has, chunk-framed; it sleeps when it has none. */
static void pump(conn *c)
{
    int rounds = 0;
    while (!c->s_sleep && !c->s_end && c->out_len - c->out_off < STREAM_HIGH && rounds++ < 16) {
        out_reserve(c, STREAM_CHUNK + 8);
        char *o = c->out + c->out_len;
        size_t hl = c->s_chunked ? 6 : 0;
        ssize_t n = c->s.read(c->s.ud, o + hl, STREAM_CHUNK);
        if (n < 0) {
            c->s_end = 1;
            if (c->s_chunked) out_add(c, "0\r\n\r\n", 5);
        } else if (n == 0) {
            c->s_sleep = 1;
        } else {
            if (c->s_chunked) {
                char hx[24];   /* room for any size_t; n <= STREAM_CHUNK needs 4 digits */
                snprintf(hx, sizeof hx, "%04zx\r\n", (size_t)n); /* leading zeros are valid */
                memcpy(o, hx, 6);
                memcpy(o + 6 + n, "\r\n", 2);
            }
            c->out_len += (size_t)n + (c->s_chunked ? 8 : 0);
        }
    }
}

/* Do whatever the connection can do now. -1 when it was closed. */
static int kick(conn *c)
{
    gx_http *h = c->h;
    for (;;) {
        if (c->dead) { close_conn(c); return -1; }
        switch (c->state) {
        case C_HEAD: {
            /* blank lines before a request are ignored (RFC 9112 2.2) */
            while (c->in_off < c->in_len && (c->in[c->in_off] == '\r' || c->in[c->in_off] == '\n')) c->in_off++;
            if (c->in_off) { /* the head is parsed at the buffer's start */
                memmove(c->in, c->in + c->in_off, c->in_len - c->in_off);
                c->in_len -= c->in_off;
                c->in_off = 0;
                c->scan = 0;
            }
            size_t end = gx_hp_head_end(c->in, c->in_len, &c->scan);
            if (!end) {
                if (c->eof) { close_conn(c); return -1; }
                if (c->in_len >= GX_HP_MAX_HEAD) {
                    c->in_off = c->in_len;
                    answer_error(c, 431, "request line and headers larger than 16 KiB", 0);
                    break;
                }
                if (c->in_len && c->deadline - gx_loop_now(h->loop) > HEAD_MS)
                    c->deadline = gx_loop_now(h->loop) + HEAD_MS;
                update_interest(c);
                return 0;
            }
            start_request(c, end);
            break;
        }
        case C_BODY:
            if (c->out_len > c->out_off && flush(c) < 0) { close_conn(c); return -1; } /* 100 Continue */
            read_body(c);
            if (c->state == C_BODY) {
                if (c->eof) { close_conn(c); return -1; }
                update_interest(c);
                return 0;
            }
            break;
        case C_HANDLER:
            update_interest(c);
            return 0;
        case C_SEND:
            if (c->out_len > c->out_off && flush(c) < 0) { close_conn(c); return -1; }
            if (c->out_len > c->out_off) { update_interest(c); return 0; }
            if (end_request(c) < 0) return -1;
            break;
        case C_STREAM:
            pump(c);
            if (c->out_len > c->out_off && flush(c) < 0) { close_conn(c); return -1; }
            if (c->out_len == c->out_off && c->s_end) {
                if (end_request(c) < 0) return -1;
                break;
            }
            /* all sent and the stream has more: go on at the next run (fairness) */
            if (c->out_len == c->out_off && !c->s_sleep) add_pending(c);
            update_interest(c);
            return 0;
        case C_LINGER:
            update_interest(c);
            return 0;
        }
    }
}

/* One recv per readiness (level-triggered: more data reports again). -1: closed. */
static int read_some(conn *c)
{
    if (c->state == C_LINGER) {
        char junk[16384];
        ssize_t n = recv(c->fd, junk, sizeof junk, 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) { close_conn(c); return -1; }
        return 0;
    }
    if (c->in_len == IN_CAP) return 0;
    ssize_t n = recv(c->fd, c->in + c->in_len, IN_CAP - c->in_len, 0);
    if (n > 0) {
        c->in_len += (size_t)n;
        return 0;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
    if (n < 0 || c->state == C_HANDLER || c->state == C_STREAM) { close_conn(c); return -1; } /* client left */
    c->eof = 1;
    return 0;
}

static void on_conn(gx_loop *l, int fd, uint32_t ev, void *ud)
{
    (void)l; (void)fd;
    conn *c = ud;
    if (ev & EPOLLERR) { close_conn(c); return; }
    if ((ev & EPOLLOUT) && flush(c) < 0) { close_conn(c); return; }
    if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP)) {
        if (read_some(c) < 0) return;
    }
    kick(c);
}

/* ---- accepting ------------------------------------------------------------------- */

static void on_listen(gx_loop *l, int fd, uint32_t ev, void *ud);

static void accept_again(gx_loop *l, void *ud)
{
    gx_http *h = ud;
    h->accept_timer = 0;
    gx_loop_watch(l, h->lfd, EPOLLIN, on_listen, h);
}

/* Timeouts, once a second while there are connections. */
static void sweep(gx_loop *l, void *ud)
{
    gx_http *h = ud;
    h->sweep_timer = 0;
    int64_t now = gx_loop_now(l);
    conn *next;
    for (conn *c = h->conns; c; c = next) {
        next = c->next;
        if (!c->deadline || now < c->deadline) continue;
        if ((c->state == C_HEAD && c->in_len > c->in_off) || c->state == C_BODY) {
            /* a slow client: tell it, then close */
            int parsed = c->state == C_BODY;
            c->deadline = 0;
            c->in_off = c->in_len;
            c->state = C_SEND;
            answer_error(c, 408, "the request was not received in time", parsed);
            c->deadline = now + LINGER_MS;
            if (flush(c) == 0 && c->out_len == c->out_off) { close_conn(c); continue; }
            update_interest(c);
        } else {
            close_conn(c);
        }
    }
    if (h->nconns) h->sweep_timer = gx_loop_at(l, now + 1000, sweep, h);
}

/* A connection over the limit gets a 503 it can read, then the close. Its target is
 * not read yet, so the body is the daemon's envelope; OpenAI clients still find
 * error.message in it. The length is counted, not written by hand. */
static void refuse(int fd)
{
    static const char body[] =
        "{\"error\": {\"code\": 503, \"reason\": \"Unavailable\", \"message\": \"too many connections, retry later\"}}\n";
    char msg[512];
    int n = snprintf(msg, sizeof msg,
                     "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                     "Retry-After: 1\r\nConnection: close\r\n\r\n%s", sizeof body - 1, body);
    if (n > 0 && (size_t)n < sizeof msg && send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) { /* nothing more to do */ }
    close(fd);
}

static void on_listen(gx_loop *l, int fd, uint32_t ev, void *ud)
{
    (void)ev;
    gx_http *h = ud;
    for (int i = 0; i < 64; i++) {
        struct sockaddr_in sa;
        socklen_t sl = sizeof sa;
        int cfd = accept4(fd, (struct sockaddr *)&sa, &sl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* out of descriptors: stop accepting for a while instead of spinning */
                gx_loop_unwatch(l, fd);
                if (!h->accept_timer) h->accept_timer = gx_loop_at(l, gx_loop_now(l) + 100, accept_again, h);
            }
            return;
        }
        if (h->nconns >= MAX_CONNS) { refuse(cfd); continue; }
        conn *c = calloc(1, sizeof *c);
        char *in = malloc(IN_CAP);
        if (!c || !in) abort();
        c->in = in;
        c->h = h;
        c->fd = cfd;
        c->peer = sa;
        c->state = C_HEAD;
        c->deadline = gx_loop_now(l) + IDLE_MS;
        int one = 1;
        setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        c->ev = EPOLLIN | EPOLLRDHUP;
        if (gx_loop_watch(l, cfd, c->ev, on_conn, c)) {
            close(cfd);
            free(in);
            free(c);
            continue;
        }
        c->next = h->conns;
        if (h->conns) h->conns->prev = c;
        h->conns = c;
        h->nconns++;
        if (!h->sweep_timer) h->sweep_timer = gx_loop_at(l, gx_loop_now(l) + 1000, sweep, h);
    }
}

/* ---- public ------------------------------------------------------------------------ */

void gx_http_wake_streams(gx_http *h)
{
    for (conn *c = h->conns; c; c = c->next)
        if (c->state == C_STREAM && c->s_sleep) {
            c->s_sleep = 0;
            add_pending(c);
        }
}

int gx_http_stream_count(const gx_http *h) { return h->nstreams; }

void gx_http_wake_stream(void *handle)
{
    conn *c = handle;
    if (c && c->state == C_STREAM && c->s_sleep) {
        c->s_sleep = 0;
        add_pending(c);
    }
}

void gx_http_set_prefix_limit(gx_http *h, const char *prefix, size_t limit)
{
    snprintf(h->prefix, sizeof h->prefix, "%s", prefix);
    h->prefix_limit = limit;
}

/* The deferred answer goes out now, in one send; the rest (the owners' cleanup, the
 * next pipelined request, a stream's body) waits for gx_http_run. */
void gx_http_resume(gx_req *req)
{
    conn *c = req->conn;
    if (c && c->in_handler) { c->early = 1; return; }
    if (!c || c->state != C_HANDLER) return;
    gx_resp r;
    memset(&r, 0, sizeof r);
    c->h->fn(req, &r, c->h->ud);
    answer(c, &r);
    if (c->state == C_SEND) {
        if (flush(c) < 0) c->dead = 1;
        else if (c->out_len > c->out_off) update_interest(c);
    }
    add_pending(c);
}

int64_t gx_http_timeout(gx_http *h) { return h->phead ? 0 : -1; }

/* Pending work: connections whose deferred answer went out, woken streams. A stream
 * with more to send puts itself back, so the budget bounds one call. */
void gx_http_run(gx_http *h)
{
    int budget = 4096;
    conn *c;
    while ((c = h->phead) && budget-- > 0) {
        del_pending(c);
        kick(c);
    }
}

int gx_http_port(const gx_http *h) { return h->port; }

gx_http *gx_http_start(gx_loop *loop, const char *host, int port, size_t body_limit,
                       gx_http_fn fn, void *ud, gx_err *err)
{
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        gx_errf(err, 400, "listen", "\"%s\" is not an IPv4 address", host);
        return NULL;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(fd, (struct sockaddr *)&sa, sizeof sa) || listen(fd, 1024)) {
        gx_errf(err, 500, "listen", "cannot listen on %s:%d: %s", host, port, strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    socklen_t sl = sizeof sa;
    getsockname(fd, (struct sockaddr *)&sa, &sl);
    gx_http *h = calloc(1, sizeof *h);
    if (!h) abort();
    h->loop = loop;
    h->lfd = fd;
    h->port = ntohs(sa.sin_port);
    h->limit = body_limit;
    h->fn = fn;
    h->ud = ud;
    h->date_sec = -1;
    if (gx_loop_watch(loop, fd, EPOLLIN, on_listen, h)) {
        close(fd);
        free(h);
        gx_errf(err, 500, "listen", "cannot watch the listening socket");
        return NULL;
    }
    return h;
}

/* Every connection ends: deferred requests and streams get their cleanup calls. */
void gx_http_stop(gx_http *h)
{
    if (!h) return;
    while (h->conns) close_conn(h->conns);
    if (h->sweep_timer) gx_loop_cancel(h->loop, h->sweep_timer);
    if (h->accept_timer) gx_loop_cancel(h->loop, h->accept_timer);
    gx_loop_unwatch(h->loop, h->lfd);
    close(h->lfd);
    free(h);
}
