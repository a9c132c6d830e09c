/* http: libmicrohttpd in external epoll mode inside gx_loop.
 * Owns: the MHD daemon, per-connection request state, streamed responses.
 * Must not: answer on the first handler call (MHD would close keep-alive
 * connections), epoll_wait on MHD's own epoll fd (that steals its edge-triggered
 * events): we only watch it from our epoll and call MHD_run().
 * Streams: a reader with nothing to send suspends its connection; wake_streams()
 * resumes them all. Suspended connections do not time out and do not notice a
 * client leaving, so owners wake them periodically (a write then fails and MHD
 * frees the stream). */
#include <arpa/inet.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/http.h"

typedef struct stream_ctx stream_ctx;
struct stream_ctx {
    gx_http *h;
    struct MHD_Connection *conn;
    gx_stream s;
    int suspended;
    stream_ctx *next, *prev;
};

struct gx_http {
    struct MHD_Daemon *d;
    gx_loop *loop;
    int epfd;
    int port;
    size_t limit;
    gx_http_fn fn;
    void *ud;
    stream_ctx *streams;
    int nstreams;
    char prefix[32];
    size_t prefix_limit;
};

typedef struct conn_ctx {
    gx_req req;              /* first: gx_http_resume finds the rest from it */
    gx_http *h;
    int answered;            /* a deferred answer was queued by gx_http_resume */
    size_t cap;
    size_t limit;
    int own_413;          /* the handler answers an over-limit body itself */
} conn_ctx;

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
    snprintf(r->hval[r->nh], sizeof r->hval[0], "%s", value);
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

const char *gx_req_query(const gx_req *r, const char *key)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, key);
}

const char *gx_req_header(const gx_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

/* ---- streams ------------------------------------------------------------------ */

static void stream_unlink(stream_ctx *s)
{
    gx_http *h = s->h;
    if (s->prev) s->prev->next = s->next;
    else h->streams = s->next;
    if (s->next) s->next->prev = s->prev;
    h->nstreams--;
}

static ssize_t stream_reader(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    stream_ctx *s = cls;
    ssize_t n = s->s.read(s->s.ud, buf, max);
    if (n < 0) return MHD_CONTENT_READER_END_OF_STREAM;
    if (n == 0) {
        s->suspended = 1;
        MHD_suspend_connection(s->conn);
    }
    return n;
}

static void stream_free(void *cls)
{
    stream_ctx *s = cls;
    stream_unlink(s);
    if (s->s.wake) *s->s.wake = NULL;
    if (s->s.free) s->s.free(s->s.ud);
    free(s);
}

void gx_http_wake_streams(gx_http *h)
{
    for (stream_ctx *s = h->streams; s; s = s->next)
        if (s->suspended) {
            s->suspended = 0;
            MHD_resume_connection(s->conn);
        }
}

int gx_http_stream_count(const gx_http *h) { return h->nstreams; }

void gx_http_wake_stream(void *handle)
{
    stream_ctx *s = handle;
    if (s && s->suspended) {
        s->suspended = 0;
        MHD_resume_connection(s->conn);
    }
}


void gx_http_set_prefix_limit(gx_http *h, const char *prefix, size_t limit)
{
    snprintf(h->prefix, sizeof h->prefix, "%s", prefix);
    h->prefix_limit = limit;
}

/* ---- request handling ------------------------------------------------------------ */

static enum MHD_Result send_resp(gx_http *h, struct MHD_Connection *c, gx_resp *r)
{
    struct MHD_Response *mr;
    if (r->stream.read) {
        stream_ctx *s = calloc(1, sizeof *s);
        if (!s) abort();
        s->h = h;
        s->conn = c;
        s->s = r->stream;
        if (s->s.wake) *s->s.wake = s;
        s->next = h->streams;
        if (h->streams) h->streams->prev = s;
        h->streams = s;
        h->nstreams++;
        mr = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16384, stream_reader, s, stream_free);
        MHD_add_response_header(mr, "Content-Type", r->ctype ? r->ctype : "text/plain; charset=utf-8");
        MHD_add_response_header(mr, "Cache-Control", "no-cache");
        MHD_add_response_header(mr, "X-Content-Type-Options", "nosniff");
    } else if (r->json) {
        char *body = json_dumps(r->json, JSON_INDENT(2) | JSON_ENCODE_ANY);
        size_t n = strlen(body);
        body[n] = 0;
        char *nl = realloc(body, n + 2);
        if (!nl) abort();
        nl[n] = '\n';
        nl[n + 1] = 0;
        mr = MHD_create_response_from_buffer(n + 1, nl, MHD_RESPMEM_MUST_FREE);
        MHD_add_response_header(mr, "Content-Type", "application/json");
    } else if (r->text && r->text_len) { /* MHD takes the buffer: no copy */
        mr = MHD_create_response_from_buffer(r->text_len, r->text, MHD_RESPMEM_MUST_FREE);
        r->text = NULL;
        MHD_add_response_header(mr, "Content-Type", r->ctype ? r->ctype : "text/plain; charset=utf-8");
    } else {
        mr = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(mr, "Content-Type", r->ctype ? r->ctype : "text/plain; charset=utf-8");
    }
    for (int i = 0; i < r->nh; i++) MHD_add_response_header(mr, r->hname[i], r->hval[i]);
    enum MHD_Result rc = MHD_queue_response(c, (unsigned)(r->status ? r->status : 200), mr);
    MHD_destroy_response(mr);
    return rc;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *data_size, void **con_cls)
{
    (void)version;
    gx_http *h = cls;
    conn_ctx *cc = *con_cls;
    if (!cc) {
        cc = calloc(1, sizeof *cc);
        if (!cc) return MHD_NO;
        cc->req.conn = c;
        cc->req.method = method;
        cc->req.path = url;
        cc->h = h;
        cc->limit = h->limit;
        if (h->prefix[0] && !strncmp(url, h->prefix, strlen(h->prefix))) {
            cc->limit = h->prefix_limit;
            cc->own_413 = 1;
        }
        *con_cls = cc;
        return MHD_YES;
    }
    if (*data_size) {
        size_t n = *data_size;
        *data_size = 0;
        if (cc->req.body_too_large || cc->req.body_len + n > cc->limit) {
            cc->req.body_too_large = 1;
            return MHD_YES; /* keep reading so the client gets the 413 */
        }
        if (cc->req.body_len + n + 1 > cc->cap) {
            size_t cap = cc->cap ? cc->cap : 4096;
            while (cap < cc->req.body_len + n + 1) cap *= 2;
            char *b = realloc(cc->req.body, cap);
            if (!b) return MHD_NO;
            cc->req.body = b;
            cc->cap = cap;
        }
        memcpy(cc->req.body + cc->req.body_len, data, n);
        cc->req.body_len += n;
        cc->req.body[cc->req.body_len] = 0;
        return MHD_YES;
    }
    if (cc->answered) return MHD_YES; /* MHD calls again after a resume: already queued */
    if (!cc->req.body) {
        cc->req.body = calloc(1, 1);
        if (!cc->req.body) return MHD_NO;
    }
    gx_resp resp;
    memset(&resp, 0, sizeof resp);
    if (cc->req.body_too_large && !cc->own_413)
        gx_resp_errorf(&resp, 413, "request body larger than the limit of %zu bytes (limits.maxBodyBytes)", h->limit);
    else
        h->fn(&cc->req, &resp, h->ud);
    if (resp.defer) {
        /* no answer yet: the owner calls gx_http_resume, and MHD calls us again */
        json_decref(resp.json);
        free(resp.text);
        MHD_suspend_connection(c);
        return MHD_YES;
    }
    enum MHD_Result rc = send_resp(h, c, &resp);
    json_decref(resp.json);
    free(resp.text);
    return rc;
}

/* MHD lets a suspended connection queue its response at any time; it goes out once
 * the connection is resumed. */
void gx_http_resume(gx_req *req)
{
    conn_ctx *cc = (conn_ctx *)(void *)req;
    gx_resp resp;
    memset(&resp, 0, sizeof resp);
    cc->h->fn(req, &resp, cc->h->ud);
    if (resp.defer) resp.defer = 0, gx_resp_errorf(&resp, 500, "the answer was deferred twice");
    cc->answered = 1;
    send_resp(cc->h, req->conn, &resp);
    json_decref(resp.json);
    free(resp.text);
    MHD_resume_connection(req->conn);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe)
{
    (void)cls; (void)c; (void)toe;
    conn_ctx *cc = *con_cls;
    if (!cc) return;
    if (cc->req.async && cc->req.async_free) cc->req.async_free(cc->req.async);
    free(cc->req.body);
    free(cc);
    *con_cls = NULL;
}

static void on_mhd_fd(gx_loop *l, int fd, uint32_t ev, void *ud)
{
    (void)l; (void)fd; (void)ev;
    gx_http *h = ud;
    MHD_run(h->d);
}

static void mhd_logger(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    fputs("gpuaas: http: ", stderr);
    vfprintf(stderr, fmt, ap);
}

gx_http *gx_http_start(gx_loop *loop, const char *host, int port, size_t body_limit,
                       gx_http_fn fn, void *ud, gx_err *err)
{
    gx_http *h = calloc(1, sizeof *h);
    if (!h) { gx_errf(err, 500, "", "out of memory"); return NULL; }
    h->loop = loop;
    h->limit = body_limit;
    h->fn = fn;
    h->ud = ud;
    struct sockaddr_in sa;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_port = htons((uint16_t)port);
    if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        free(h);
        gx_errf(err, 400, "listen", "\"%s\" is not an IPv4 address", host);
        return NULL;
    }
    h->d = MHD_start_daemon(MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG,
                            (uint16_t)port, NULL, NULL, on_request, h,
                            MHD_OPTION_EXTERNAL_LOGGER, mhd_logger, NULL,
                            MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, h,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)120,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)4000, /* gateway streams */
                            MHD_OPTION_LISTENING_ADDRESS_REUSE, (unsigned)1,
                            MHD_OPTION_END);
    if (!h->d) {
        free(h);
        gx_errf(err, 500, "listen", "cannot listen on %s:%d (in use, or not allowed)", host, port);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);
    h->epfd = di ? di->epoll_fd : -1;
    di = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    h->port = di ? di->port : port;
    if (h->epfd < 0 || gx_loop_watch(loop, h->epfd, 0x001 /* EPOLLIN */, on_mhd_fd, h)) {
        MHD_stop_daemon(h->d);
        free(h);
        gx_errf(err, 500, "", "cannot watch the HTTP server's epoll descriptor");
        return NULL;
    }
    return h;
}

int64_t gx_http_timeout(gx_http *h)
{
    MHD_UNSIGNED_LONG_LONG t;
    if (MHD_get_timeout(h->d, &t) == MHD_YES) return (int64_t)t;
    return -1;
}

void gx_http_run(gx_http *h) { MHD_run(h->d); }

int gx_http_port(const gx_http *h) { return h->port; }

void gx_http_stop(gx_http *h)
{
    if (!h) return;
    gx_http_wake_streams(h); /* MHD requires suspended connections resumed before stop */
    gx_loop_unwatch(h->loop, h->epfd);
    MHD_stop_daemon(h->d);
    free(h);
}
