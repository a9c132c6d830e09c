/* http_resp: the response side of our HTTP/1.1 server: the gx_resp helpers handlers
 * call, the status line and headers built with the body into the connection's output
 * in one pass (one send), the Date header, the server's own refusals in the envelope
 * its client reads (the daemon's, or OpenAI's on the prefix surface), and the chunk
 * framing of streamed bodies, and the x-request-id every answer carries.
 * Owns: the bytes of an answer, up to the output buffer; request ids.
 * Must not: touch sockets, epoll or a connection's state (http.c decides when and
 * whether anything is sent), or call back into handlers. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include "net/http_int.h"
#include "lib/sbuf.h"

typedef gx_http_conn conn;

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
    r->text = gx_xstrdup(text);
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

/* ---- request ids ------------------------------------------------------------------- */

/* splitmix64's finaliser: consecutive counters come out as unrelated-looking ids. */
static uint64_t mix64(uint64_t x)
{
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* Unique per server (a counter under a random seed), not secret: an id names a request
 * in logs and support questions, it grants nothing. */
void gx_http_rid_new(gx_http *h, char *out)
{
    if (!h->rid_seed) {
        if (getrandom(&h->rid_seed, sizeof h->rid_seed, GRND_NONBLOCK) != (ssize_t)sizeof h->rid_seed)
            h->rid_seed = (uint64_t)gx_loop_now(h->loop) ^ ((uint64_t)getpid() << 32);
        h->rid_seed |= 1;
    }
    uint64_t n = ++h->rid_n;
    snprintf(out, GX_HTTP_RID_MAX + 1, "req_%016llx%016llx", (unsigned long long)mix64(h->rid_seed + n),
             (unsigned long long)mix64(h->rid_seed ^ (n * 0x9e3779b97f4a7c15ULL)));
}

/* A client's id is echoed only as it came and only when it is harmless in a header and
 * a log line; anything else (too long, spaces, quotes, control bytes) gets a new id
 * rather than a mangled copy that would match nothing the client logged. */
void gx_http_rid_set(conn *c, int parsed)
{
    const char *v = parsed ? gx_hp_header(&c->hp, "x-request-id") : NULL;
    size_t n = v ? strlen(v) : 0;
    static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-";
    if (n >= 1 && n <= GX_HTTP_RID_MAX && strspn(v, safe) == n) memcpy(c->rid, v, n + 1);
    else gx_http_rid_new(c->h, c->rid);
}

/* ---- the answer's bytes ---------------------------------------------------------- */

/* Copy s to p (no NUL), return the end: the head builder's stpcpy without the NUL. */
static char *put(char *p, const char *s)
{
    size_t n = strlen(s);
    memcpy(p, s, n);
    return p + n;
}

/* The Date header's value, formatted once a second (the wall clock: it is a stamp). */
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

/* need is counted before anything is written, so the head is built with plain copies
 * into one reservation (no printf, no second buffer on the hot path). */
void gx_http_resp_build(conn *c, gx_resp *r)
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
        if (!dumped) gx_alloc_fail(0);
        body = dumped;
        blen = strlen(dumped);
        ctype = "application/json";
    } else if (r->text && r->text_len) {
        body = r->text;
        blen = r->text_len;
    }
    int no_body = status < 200 || status == 204 || status == 304;
    if (!c->rid[0]) gx_http_rid_new(h, c->rid);   /* every answer names its request */
    size_t need = 256 + strlen(ctype) + blen + sizeof "x-request-id: \r\n" + strlen(c->rid);
    for (int i = 0; i < r->nh; i++) need += strlen(r->hname[i]) + strlen(r->hval[i]) + 4;
    gx_http_out_reserve(c, need);
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
    p = put(p, "x-request-id: ");
    p = put(p, c->rid);
    p = put(p, "\r\n");
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
        gx_http_out_add(c, body, blen);
        if (dumped) gx_http_out_add(c, "\n", 1);
    }
    free(dumped);
}

/* ---- refusals by the server ------------------------------------------------------- */

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
void gx_http_resp_refusal(conn *c, gx_resp *r, int status, const char *msg, int parsed)
{
    if (!openai_surface(c, parsed)) {
        gx_resp_errorf(r, status, "%s", msg);
        return;
    }
    const char *type = status == 503 ? "service_unavailable" : status >= 500 ? "server_error" : "invalid_request_error";
    gx_resp_json(r, status, json_pack("{s:{s:s,s:s,s:n,s:s?}}", "error", "message", msg, "type", type, "param",
                                      "code", openai_code(status)));
}

/* ---- streamed bodies -------------------------------------------------------------- */

/* Fill the output with what the stream has, chunk-framed; it sleeps when it has none. */
void gx_http_resp_pump(conn *c)
{
    int rounds = 0;
    while (!c->s_sleep && !c->s_end && c->out_len - c->out_off < STREAM_HIGH && rounds++ < 16) {
        gx_http_out_reserve(c, STREAM_CHUNK + 8);
        char *o = c->out + c->out_len;
        size_t hl = c->s_chunked ? 6 : 0;
        ssize_t n = c->s.read(c->s.ud, o + hl, STREAM_CHUNK);
        if (n < 0) {
            c->s_end = 1;
            if (c->s_chunked) gx_http_out_add(c, "0\r\n\r\n", 5);
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
