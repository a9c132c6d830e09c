/* maas/proxy_io: the gateway's byte relay: libcurl's multi handle driven by gx_loop
 * (probes, scrapes, and https:// or named upstreams), upstream.c's callbacks for plain
 * http:// ones, the sink both transports feed (status, body; the end goes to proxy.c),
 * back-pressure (the upstream is paused while the client is behind), and the streamed
 * body to the client with heartbeats.
 * Owns: transfers (start, stop, pause, resume), the easy-handle pool, c->out's
 * producer and consumer sides.
 * Must not: block; decide outcomes (settlement, errors, retries: proxy.c), or copy an
 * answer more than once on its way (upstream bytes -> c->out -> the client's buffer). */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include "maas/proxy_int.h"
#include "maas/scrape.h"
#include "lib/alloc.h"

#define HIGH_WATER (256 * 1024)   /* pause the upstream above this much unsent */
#define LOW_WATER (64 * 1024)
#define MAX_ANSWER (64u << 20)    /* a non-streamed answer is buffered up to this */

typedef gx_maas_call call;

static void check_done(gx_maas_proxy *p);

/* ---- curl in our loop --------------------------------------------------------------- */

static void on_fd(gx_loop *l, int fd, uint32_t ev, void *ud)
{
    (void)l;
    gx_maas_proxy *p = ud;
    int flags = (ev & EPOLLIN ? CURL_CSELECT_IN : 0) | (ev & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                (ev & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
    int running;
    curl_multi_socket_action(p->multi, fd, flags, &running);
    check_done(p);
}

static int on_socket(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)e; (void)socketp;
    gx_maas_proxy *p = userp;
    gx_loop *loop = p->m->loop;
    if (what == CURL_POLL_REMOVE) gx_loop_unwatch(loop, s);
    else gx_loop_watch(loop, s, (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0), on_fd, p);
    return 0;
}

static int on_timer(CURLM *multi, long ms, void *userp)
{
    (void)multi;
    gx_maas_proxy *p = userp;
    p->timer_at = ms < 0 ? -1 : gx_maas_mono_ms(p->m) + ms;
    return 0;
}

int64_t gx_maas_proxy_tick(gx_maas_proxy *p)
{
    int64_t u = gx_up_tick(p->up);
    int64_t now = gx_maas_mono_ms(p->m);
    if (p->timer_at >= 0 && now >= p->timer_at) {
        p->timer_at = -1;
        int running;
        curl_multi_socket_action(p->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        check_done(p);
    }
    int64_t t = p->timer_at < 0 ? -1 : p->timer_at > now ? p->timer_at - now : 0;
    return t < 0 || (u >= 0 && u < t) ? u : t;
}

static CURL *easy_get(gx_maas_proxy *p)
{
    if (p->npool) {
        CURL *e = p->pool[--p->npool];
        curl_easy_reset(e);
        return e;
    }
    return curl_easy_init();
}

static void easy_put(gx_maas_proxy *p, CURL *e)
{
    if (p->npool == p->cappool) {
        if (p->cappool >= 1024) { curl_easy_cleanup(e); return; }
        p->cappool = p->cappool ? p->cappool * 2 : 64;
        p->pool = gx_xreallocarray(p->pool, p->cappool, sizeof *p->pool);
    }
    p->pool[p->npool++] = e;
}

int gx_maas_proxy_io_init(gx_maas_proxy *p)
{
    p->timer_at = -1;
    p->multi = curl_multi_init();
    p->up = gx_up_new(p->m->loop);
    if (!p->multi || !p->up) { curl_multi_cleanup(p->multi); free(p->up); return -1; }
    p->curl_only = p->m->env.upstream_curl_only; /* for A/B runs and testing the libcurl path */
    curl_multi_setopt(p->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(p->multi, CURLMOPT_SOCKETDATA, p);
    curl_multi_setopt(p->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(p->multi, CURLMOPT_TIMERDATA, p);
    /* keep a warm connection per concurrent request, as nginx's upstream keepalive does */
    curl_multi_setopt(p->multi, CURLMOPT_MAXCONNECTS, 4096L);
    return 0;
}

void gx_maas_proxy_io_close(gx_maas_proxy *p)
{
    for (size_t i = 0; i < p->npool; i++) curl_easy_cleanup(p->pool[i]);
    free(p->pool);
    curl_multi_cleanup(p->multi);
    gx_up_free(p->up);
}

/* ---- probes and scrapes ------------------------------------------------------------- */

static size_t discard(char *ptr, size_t size, size_t n, void *ud) { (void)ptr; (void)ud; return size * n; }

/* A pooled easy handle set up for a GET of url (with the model's auth header, whose
 * list the caller keeps until the transfer ends: curl does not copy it). */
static CURL *get_easy(gx_maas_proxy *p, const char *url, const char *auth, void **hdrs, long timeout_ms)
{
    CURL *e = easy_get(p);
    if (!e) return NULL;
    *hdrs = NULL;
    if (auth && *auth) {
        struct curl_slist *h = curl_slist_append(NULL, auth);
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
        *hdrs = h;
    }
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(e, CURLOPT_PRIVATE, NULL);
    return e;
}

void *gx_maas_proxy_probe(gx_maas_proxy *p, const char *url, const char *auth, void **hdrs)
{
    CURL *e = get_easy(p, url, auth, hdrs, 2000L);
    if (!e) return NULL;
    if (curl_multi_add_handle(p->multi, e) != CURLM_OK) {
        gx_maas_proxy_free_headers(*hdrs);   /* the caller keeps no list when there is no probe */
        *hdrs = NULL;
        curl_easy_cleanup(e);
        return NULL;
    }
    return e;
}

void gx_maas_proxy_free_headers(void *hdrs) { curl_slist_free_all(hdrs); }

/* CURLINFO_PRIVATE of a scrape: tells it from a probe (NULL) and a call (its call *). */
static char scrape_tag;

/* A scrape's body, up to the limit: past it the transfer is aborted (a write error),
 * so a server that sends endless metrics costs at most that much. */
static size_t scrape_write(char *ptr, size_t size, size_t n, void *ud)
{
    gx_maas_scrape_in *in = ud;
    size_t len = size * n;
    if (in->body.n + len > GX_MAAS_SCRAPE_MAX_BODY) { in->cut = 1; return 0; }
    gx_sbuf_put(&in->body, ptr, len);
    return len;
}

void *gx_maas_proxy_scrape(gx_maas_proxy *p, const char *url, const char *auth, void **hdrs, gx_maas_scrape_in *in)
{
    CURL *e = get_easy(p, url, auth, hdrs, 5000L);
    if (!e) return NULL;
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, scrape_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, in);
    curl_easy_setopt(e, CURLOPT_PRIVATE, &scrape_tag);
    if (curl_multi_add_handle(p->multi, e) != CURLM_OK) {
        gx_maas_proxy_free_headers(*hdrs);
        *hdrs = NULL;
        easy_put(p, e);
        return NULL;
    }
    return e;
}

void gx_maas_proxy_probe_cancel(gx_maas_proxy *p, void *easy)
{
    curl_multi_remove_handle(p->multi, easy);
    easy_put(p, easy);
}

/* ---- transfers --------------------------------------------------------------------- */

/* Stop the transfer (the upstream sees its connection close). */
void gx_maas_proxy_io_stop(call *c)
{
    if (!c->active) return;
    c->active = 0;
    if (c->easy) {
        curl_multi_remove_handle(c->m->proxy->multi, c->easy);
        curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, NULL);
        easy_put(c->m->proxy, c->easy);
        c->easy = NULL;
        curl_slist_free_all(c->hdrs);
        c->hdrs = NULL;
    }
    gx_up_cancel(c->m->proxy->up, &c->up); /* nothing when it already ended */
    if (c->rep->outstanding > 0) c->rep->outstanding--;
}

void gx_maas_proxy_io_wake(call *c)
{
    if (c->state == WAITING || !c->req) return;
    gx_http_wake_stream(c->wake);
}

/* ---- the sink both transports feed --------------------------------------------------- */

/* The upstream's status and headers: a 200 stream starts toward the client now, so
 * that heartbeats flow while the model is still reading a long prompt. */
static void sink_head(call *c, int status, const char *ctype)
{
    c->status = status;
    gx_strcpy_cut(c->ctype, sizeof c->ctype, ctype ? ctype : "application/json");
    if (c->stream && c->status == 200 && c->state == WAITING) {
        c->state = STREAMING;
        gx_maas_proxy_complete(c);
    }
}

static void pause_upstream(call *c)
{
    if (c->paused) return;
    c->paused = 1;
    c->m->proxy->pauses++;
    if (c->up.conn) gx_up_pause(&c->up);
    /* libcurl: on_write answers CURL_WRITEFUNC_PAUSE to its next call */
}

static void resume_upstream(call *c)
{
    if (!c->paused) return;
    c->paused = 0;
    if (c->up.conn) gx_up_resume(c->m->proxy->up, &c->up);
    else if (c->easy) curl_easy_pause(c->easy, CURLPAUSE_CONT); /* may deliver the held data right here */
}

/* Room for about add more bytes of a stream: the front the client already has is given
 * back before the buffer grows (the client drains it while the upstream fills it, so
 * without this a stream never fully drained would grow for as long as it lasts). */
static void out_room(gx_maas_out *o, size_t add)
{
    if (!o->off || o->b.n + add + 1 <= o->b.cap) return;
    memmove(o->b.p, o->b.p + o->off, o->b.n - o->off + 1);   /* with the terminator */
    o->b.n -= o->off;
    o->off = 0;
}

/* Bytes of the answer. Returns -1 when the answer is too large to buffer (the caller
 * ends the transfer). */
static int sink_body(call *c, const char *p, size_t n)
{
    if (c->t_first <= 0) c->t_first = gx_maas_mono();
    if (c->stream && c->status == 200) {
        out_room(&c->out, n);
        gx_maas_sse_feed(&c->sse, p, n, &c->out.b, 0);
        if (c->out.b.n - c->out.off > HIGH_WATER) pause_upstream(c);
        if (c->state == WAITING) {
            c->state = STREAMING;
            gx_maas_proxy_complete(c);
        } else {
            gx_maas_proxy_io_wake(c);
        }
        return 0;
    }
    if (c->out.b.n + n > MAX_ANSWER) return -1;
    gx_sbuf_put(&c->out.b, p, n);
    return 0;
}

/* ---- transport: upstream.c ------------------------------------------------------------- */

static void up_head(void *ud, int status, const char *ctype) { sink_head(ud, status, ctype); }

static void up_body(void *ud, const char *p, size_t n)
{
    call *c = ud;
    if (!sink_body(c, p, n)) return;
    c->too_big = 1;
    gx_up_cancel(c->m->proxy->up, &c->up);
    gx_maas_proxy_end(c, 0, 1, "the answer is too large");
}

static void up_done(void *ud, int err, int got_bytes, const char *why)
{
    call *c = ud;
    gx_maas_proxy_end(c, err == GX_UP_OK, got_bytes, why && *why ? why : gx_up_strerror(err));
}

static const gx_up_cb up_cb = {up_head, up_body, up_done};

/* ---- transport: libcurl ------------------------------------------------------------------ */

static void curl_status(call *c)
{
    char *ct = NULL;
    long code = 0;
    curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_getinfo(c->easy, CURLINFO_CONTENT_TYPE, &ct);
    sink_head(c, (int)code, ct);
}

/* The end of the upstream's headers (curl calls this for each header line). */
static size_t on_header(char *buf, size_t size, size_t nmemb, void *ud)
{
    call *c = ud;
    size_t n = size * nmemb;
    if (n <= 2 && (buf[0] == '\r' || buf[0] == '\n')) {
        long code = 0;
        curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &code);
        if (code >= 200) curl_status(c);
    }
    return n;
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
    call *c = ud;
    size_t n = size * nmemb;
    if (!c->status) curl_status(c);
    if (c->paused) return CURL_WRITEFUNC_PAUSE; /* held by curl until resume_upstream */
    if (sink_body(c, ptr, n)) { c->too_big = 1; return 0; } /* aborts the transfer */
    return n;
}

/* The timeouts: the model's timeoutSeconds (600 s unless set) for the first byte and
 * between bytes, 3 s to connect. */
int gx_maas_proxy_io_start(call *c)
{
    gx_maas_proxy *p = c->m->proxy;
    json_t *to = json_object_get(c->model->spec, "timeoutSeconds");
    int64_t limit_ms = json_is_integer(to) ? json_integer_value(to) * 1000 : 600000;
    char path[64] = "/v1/";
    gx_strcpy_cut(path + 4, sizeof path - 4, c->endpoint);
    c->status = 0;
    c->paused = 0;
    c->rep->outstanding++;
    c->attempts++;
    c->active = 1;
    if (!p->curl_only && !gx_up_start(p->up, &c->up, c->rep->url, path, c->model->auth, c->body, c->body_len, 3000, limit_ms, limit_ms,
                     &up_cb, c))
        return 0;
    char url[400];
    snprintf(url, sizeof url, "%s%s", c->rep->url, path);
    CURL *e = easy_get(p);
    if (!e) { gx_maas_proxy_io_stop(c); return -1; }
    c->easy = e;
    c->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    c->hdrs = curl_slist_append(c->hdrs, "Expect:");
    if (c->model->auth[0]) c->hdrs = curl_slist_append(c->hdrs, c->model->auth);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, c->body);
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)c->body_len);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->hdrs);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(e, CURLOPT_PRIVATE, c);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 3000L);
    curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)limit_ms);
    if (curl_multi_add_handle(p->multi, e) != CURLM_OK) { gx_maas_proxy_io_stop(c); return -1; }
    return 0;
}

static void transfer_done(call *c, CURLcode rc)
{
    gx_maas_proxy_end(c, rc == CURLE_OK, c->status != 0, c->too_big ? "the answer is too large" : curl_easy_strerror(rc));
}

/* A failed probe in the words the 503 and the model's status use: the system's reason
 * for a connection that failed ("connection refused"), else curl's, else the status. */
static void probe_why(CURL *e, CURLcode rc, long status, char *out, size_t n)
{
    long os = 0;
    if (rc == CURLE_OK) { snprintf(out, n, "its readiness probe answered HTTP %ld", status); return; }
    if (rc == CURLE_COULDNT_CONNECT && curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &os) == CURLE_OK && os > 0)
        snprintf(out, n, "%s", strerror((int)os));
    else
        snprintf(out, n, "%s", curl_easy_strerror(rc));
    if (out[0] >= 'A' && out[0] <= 'Z' && out[1] >= 'a' && out[1] <= 'z') out[0] = (char)(out[0] - 'A' + 'a');
}

static void check_done(gx_maas_proxy *p)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(p->multi, &left))) {
        if (msg->msg != CURLMSG_DONE) continue;
        CURL *e = msg->easy_handle;
        CURLcode rc = msg->data.result;
        char *priv = NULL;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, &priv);
        if (!priv || priv == &scrape_tag) {
            long st = 0;
            curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &st);
            curl_multi_remove_handle(p->multi, e);
            easy_put(p, e);
            int ok = rc == CURLE_OK && st >= 200 && st < 300;
            char why[160] = "";
            if (!priv && !ok) probe_why(e, rc, st, why, sizeof why);
            if (priv) gx_maas_models_scrape_done(p->m, e, ok);
            else gx_maas_models_probe_done(p->m, e, ok, why);
        } else {
            transfer_done((call *)(void *)priv, rc);
        }
    }
}

/* ---- the streamed body to the client ---------------------------------------------------- */

static ssize_t stream_read(void *ud, char *buf, size_t max)
{
    call *c = ud;
    int64_t now = gx_maas_mono_ms(c->m);
    size_t avail = c->out.b.n - c->out.off;
    if (!avail && c->paused && c->active) {
        resume_upstream(c);
        avail = c->out.b.n - c->out.off;
    }
    if (avail) {
        size_t n = avail < max ? avail : max;
        memcpy(buf, c->out.b.p + c->out.off, n);
        c->out.off += n;
        if (c->out.off == c->out.b.n) { c->out.off = 0; gx_sbuf_reset(&c->out.b); }   /* all sent: start over */
        c->last_send = now;
        if (c->paused && c->active && c->out.b.n - c->out.off < LOW_WATER) resume_upstream(c);
        return (ssize_t)n;
    }
    if (c->state == DONE) return -1;
    /* an SSE comment keeps idle streams (a long prefill) alive and finds departed clients */
    if (now - c->last_send >= c->m->heartbeat_ms && max >= 16) {
        c->last_send = now;
        memcpy(buf, ": keep-alive\n\n", 14);
        return 14;
    }
    return 0;
}

gx_stream gx_maas_proxy_io_stream(call *c)
{
    c->last_send = gx_maas_mono_ms(c->m);
    return (gx_stream){.read = stream_read, .free = gx_maas_proxy_release, .ud = c, .wake = &c->wake};
}
