/* maas/proxy: forwarding one OpenAI request to a model server, in the daemon's loop.
 * Owns: the transport choice (upstream.c, our pooled HTTP/1.1 client, for http://
 * servers by address; libcurl multi_socket driven by gx_loop for https://, names and
 * readiness probes), the sink both transports feed (status, body, end), admission
 * (model, tier, what the request asks: prompt, completions, the limit it names), the
 * upstream body (stream_options.include_usage added to streamed requests, the granted
 * completion limit when the body names none or more), retry on another replica while
 * nothing has been received, streaming back with back-pressure (the upstream is paused
 * while the client is behind) and heartbeats, cancellation when the client leaves,
 * settlement and the usage record.
 * Must not: block, or touch SQLite (records go to usage.c's batch).
 * Lifetime of a call: referenced by the HTTP request (req->async, released at the
 * request's end) and by its streamed body while one is queued; the curl transfer is
 * removed as soon as the HTTP side lets go, so the upstream sees the disconnect. */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include "maas/maas_int.h"
#include "maas/scrape.h"
#include "net/upstream.h"
#include "lib/sbuf.h"

#define HIGH_WATER (256 * 1024)   /* pause the upstream above this much unsent */
#define LOW_WATER (64 * 1024)
#define MAX_ANSWER (64u << 20)    /* a non-streamed answer is buffered up to this */

enum { WAITING, STREAMING, DONE };

typedef struct call {
    gx_maas *m;
    gx_req *req;                  /* NULL once the HTTP side let go */
    gx_maas_key *key;
    gx_maas_tier *tier;
    gx_maas_user_bucket *ubucket; /* the key's user in the tier (userLimits; NULL: none): the
                                   * admission's, settled with it even if the Tier changes */
    gx_maas_model *model;
    gx_maas_replica *rep;
    char endpoint[24];
    char *body;                   /* what the upstream gets */
    size_t body_len;
    int own_body, stream, attempts;
    int64_t reserved, prompt_est;
    gx_maas_verdict v;
    CURL *easy;                   /* the transfer, when through libcurl */
    struct curl_slist *hdrs;
    gx_up_req up;                 /* the transfer, when through upstream.c (up.conn set) */
    int active;                   /* a transfer (either) is in progress */
    int too_big;
    long status;
    char ctype[128];
    gx_maas_buf out;
    gx_maas_sse sse;
    int state, refs, gone, paused;
    void *wake;
    double t0, t_first;
    int64_t last_send;
    int err_status;
    char err_type[40], err_code[40], err_msg[300];
    struct call *next, *prev;
} call;

struct gx_maas_proxy {
    gx_maas *m;
    CURLM *multi;
    gx_up *up;
    int curl_only;                /* GPUAAS_GATEWAY_UPSTREAM=curl: every transfer through libcurl */
    int64_t timer_at;             /* -1: no curl timer */
    CURL **pool;
    size_t npool, cappool;
    call *calls;
    int ncalls;
    uint64_t pauses;              /* times an upstream was paused for a slow client */
};

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
    p->timer_at = ms < 0 ? -1 : gx_maas_now(p->m) + ms;
    return 0;
}

int64_t gx_maas_proxy_tick(gx_maas_proxy *p)
{
    int64_t u = gx_up_tick(p->up);
    int64_t now = gx_maas_now(p->m);
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
        CURL **q = realloc(p->pool, p->cappool * sizeof *q);
        if (!q) abort();
        p->pool = q;
    }
    p->pool[p->npool++] = e;
}

gx_maas_proxy *gx_maas_proxy_new(gx_maas *m)
{
    gx_maas_proxy *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->m = m;
    p->timer_at = -1;
    p->multi = curl_multi_init();
    p->up = gx_up_new(m->loop);
    if (!p->multi || !p->up) { curl_multi_cleanup(p->multi); free(p->up); free(p); return NULL; }
    p->curl_only = m->env.upstream_curl_only; /* for A/B runs and testing the libcurl path */
    curl_multi_setopt(p->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(p->multi, CURLMOPT_SOCKETDATA, p);
    curl_multi_setopt(p->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(p->multi, CURLMOPT_TIMERDATA, p);
    /* keep a warm connection per concurrent request, as nginx's upstream keepalive does */
    curl_multi_setopt(p->multi, CURLMOPT_MAXCONNECTS, 4096L);
    return p;
}

int gx_maas_proxy_inflight(const gx_maas_proxy *p) { return p->ncalls; }
uint64_t gx_maas_proxy_pauses(const gx_maas_proxy *p) { return p->pauses; }

/* ---- probes -------------------------------------------------------------------------- */

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
    if (in->body.len + len > GX_MAAS_SCRAPE_MAX_BODY) { in->cut = 1; return 0; }
    gx_maas_buf_add(&in->body, ptr, len);
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

/* ---- calls ---------------------------------------------------------------------------- */

/* same-size NUL-terminated arrays on both sides: plain copies (no formatting per request) */
#define COPY(dst, src) do { _Static_assert(sizeof(dst) == sizeof(src), #dst); memcpy(dst, src, sizeof dst); } while (0)

/* The part of a usage record that names who asked: the key's id, user and namespace,
 * and the tier, for served and refused requests alike. */
static void record_of(gx_maas_record *r, gx_maas *m, const gx_maas_key *key, const gx_maas_tier *tier)
{
    memset(r, 0, sizeof *r);
    r->ts_ms = gx_maas_now(m);
    COPY(r->key_id, key->id);
    COPY(r->user, key->user);
    COPY(r->ns, key->ns);
    COPY(r->tier, tier->name);
}

static void record(call *c, int status, int64_t prompt, int64_t completion, int estimated)
{
    gx_maas_record r;
    record_of(&r, c->m, c->key, c->tier);
    COPY(r.model, c->model->name);
    COPY(r.endpoint, c->endpoint);
    r.prompt = prompt;
    r.completion = completion;
    r.estimated = estimated;
    r.stream = c->stream;
    r.status = status;
    double now = gx_maas_mono();
    r.latency_s = now - c->t0;
    r.ttft_s = c->t_first > 0 ? c->t_first - c->t0 : -1;
    gx_maas_usage_add(c->m->usage, &r);
}

/* A request its key got in with but that went no further (400, 403, 404, 413, 429,
 * 503 starting, 500): it leaves a record too (no tokens), so that usage shows who is
 * refused and why, and a 429 counts in limited_calls. model: the model, or the name
 * the client asked for. */
static void refused(gx_maas *m, const gx_maas_key *key, const gx_maas_tier *tier, const char *model,
                    const char *endpoint, int status, int stream)
{
    gx_maas_record r;
    record_of(&r, m, key, tier);
    gx_strcpy_cut(r.model, sizeof r.model, model ? model : "");   /* maybe the client's, of any length */
    gx_strcpy_cut(r.endpoint, sizeof r.endpoint, endpoint);
    r.stream = stream;
    r.status = status;
    r.ttft_s = -1;
    gx_maas_usage_refused(m->usage, &r);
}
#undef COPY

/* Settle the reservation with what the upstream reported (or an estimate). */
static void settle(call *c, int status, int refund)
{
    int64_t prompt = 0, completion = 0, content = 0;
    int est = 0;
    /* An upstream error (a 5xx, streamed or not; a plain answer cut short) charges no
     * tokens: the client got nothing it asked for. A stream cut short charges what was
     * streamed: the client has it. */
    if (refund) {
        /* nothing was served */
    } else if (c->stream && c->status == 200) {
        if (c->sse.have_usage) { prompt = c->sse.prompt; completion = c->sse.completion; }
        else { est = 1; prompt = c->prompt_est; completion = c->sse.content_chunks; }
    } else if (!c->stream && status == 200) {   /* a plain answer, delivered whole */
        if (gx_maas_usage_of(c->out.p ? c->out.p : "", c->out.len, &prompt, &completion, &content)) {
            est = 1;
            prompt = c->prompt_est;
            completion = (content + 3) / 4;
        }
    }
    gx_maas_settle(c->tier, &c->key->bucket, c->ubucket, c->reserved, prompt + completion, refund,
                        gx_maas_now(c->m));
    record(c, status, prompt, completion, est);
}

static void unlink_call(gx_maas_proxy *p, call *c)
{
    if (c->prev) c->prev->next = c->next;
    else p->calls = c->next;
    if (c->next) c->next->prev = c->prev;
    p->ncalls--;
}

static void free_call(call *c)
{
    unlink_call(c->m->proxy, c);
    if (c->own_body) free(c->body);
    gx_maas_buf_free(&c->out);
    gx_maas_sse_free(&c->sse);
    free(c);
}

/* Stop the transfer (the upstream sees its connection close). */
static void stop_transfer(call *c)
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

/* The HTTP side let go (answer sent, or the client left). */
static void release(call *c)
{
    if (!c->gone) {
        c->gone = 1;
        c->req = NULL;
        if (c->active) { /* client left mid-answer: cancel the upstream request */
            stop_transfer(c);
            gx_maas_sse_feed(&c->sse, "", 0, &c->out, 1);
            settle(c, 499, 0);
            c->state = DONE;
        }
    }
    if (--c->refs == 0) free_call(c);
}

static void on_req_gone(void *ud) { release(ud); }
static void on_stream_gone(void *ud) { release(ud); }

static void wake(call *c)
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
        if (c->req) gx_http_resume(c->req);
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

/* Bytes of the answer. Returns -1 when the answer is too large to buffer (the caller
 * ends the transfer). */
static int sink_body(call *c, const char *p, size_t n)
{
    if (c->t_first <= 0) c->t_first = gx_maas_mono();
    if (c->stream && c->status == 200) {
        gx_maas_sse_feed(&c->sse, p, n, &c->out, 0);
        if (c->out.len - c->out.off > HIGH_WATER) pause_upstream(c);
        if (c->state == WAITING) {
            c->state = STREAMING;
            if (c->req) gx_http_resume(c->req);
        } else {
            wake(c);
        }
        return 0;
    }
    if (c->out.len + n > MAX_ANSWER) return -1;
    gx_maas_buf_add(&c->out, p, n);
    return 0;
}

static void sink_end(call *c, int ok, int got_bytes, const char *why);

/* ---- transport: upstream.c ------------------------------------------------------------- */

static void up_head(void *ud, int status, const char *ctype) { sink_head(ud, status, ctype); }

static void up_body(void *ud, const char *p, size_t n)
{
    call *c = ud;
    if (!sink_body(c, p, n)) return;
    c->too_big = 1;
    gx_up_cancel(c->m->proxy->up, &c->up);
    sink_end(c, 0, 1, "the answer is too large");
}

static void up_done(void *ud, int err, int got_bytes, const char *why)
{
    call *c = ud;
    sink_end(c, err == GX_UP_OK, got_bytes, why && *why ? why : gx_up_strerror(err));
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

static void fail(call *c, int status, const char *type, const char *code, const char *msg)
{
    c->err_status = status;
    snprintf(c->err_type, sizeof c->err_type, "%s", type);
    snprintf(c->err_code, sizeof c->err_code, "%s", code);
    snprintf(c->err_msg, sizeof c->err_msg, "%s", msg);
}

/* Send the request to c->rep: through upstream.c when it can (plain http:// to an
 * address), else through libcurl. */
static int start(call *c)
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
    if (!e) { stop_transfer(c); return -1; }
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
    if (curl_multi_add_handle(p->multi, e) != CURLM_OK) { stop_transfer(c); return -1; }
    return 0;
}

/* An upstream error body in OpenAI's envelope (older vLLM answers {"object":"error",...}). */
static void wrap_error(call *c)
{
    json_t *j = json_loadb(c->out.p ? c->out.p : "", c->out.len, 0, NULL);
    if (json_is_object(json_object_get(j, "error"))) { json_decref(j); return; }
    const char *msg = json_string_value(json_object_get(j, "message"));
    json_t *code = json_object_get(j, "code");
    char cbuf[32] = "";
    if (json_is_integer(code)) snprintf(cbuf, sizeof cbuf, "%lld", (long long)json_integer_value(code));
    char text[300];
    snprintf(text, sizeof text, "%.*s", (int)(c->out.len > 200 ? 200 : c->out.len), c->out.p ? c->out.p : "");
    json_t *env = json_pack("{s:{s:s,s:s,s:n,s:s?}}", "error", "message", msg ? msg : text[0] ? text : "upstream error",
                            "type", json_string_value(json_object_get(j, "type")) ?: "upstream_error", "param",
                            "code", json_is_string(code) ? json_string_value(code) : cbuf[0] ? cbuf : NULL);
    json_decref(j);
    char *s = json_dumps(env, JSON_COMPACT);
    json_decref(env);
    gx_maas_buf_free(&c->out);
    if (s) { gx_maas_buf_add(&c->out, s, strlen(s)); free(s); }
    snprintf(c->ctype, sizeof c->ctype, "application/json");
}

/* The transfer ended (either transport): ok, or why not; got_bytes: any of the answer
 * arrived (else another replica may be tried: nothing was served). */
static void sink_end(call *c, int ok, int got_bytes, const char *why)
{
    gx_maas_replica *failed = c->rep;
    stop_transfer(c);
    if (!ok && !got_bytes && !c->status) {
        /* nothing came back: this replica is not serving; try another one */
        failed->ready = 0;
        failed->next_probe_ms = gx_maas_now(c->m);
        gx_maas_replica *r = gx_maas_models_pick(c->model, failed);
        if (r && c->attempts < GX_MAAS_MAX_REPLICAS) {
            c->rep = r;
            if (!start(c)) return;
        }
        char msg[256];
        snprintf(msg, sizeof msg, "the model server of %s did not answer (%s); retry shortly", c->model->name, why);
        fail(c, 502, "api_error", "upstream_unavailable", msg);
        settle(c, 502, 1);
    } else if (c->stream && c->status == 200) {
        gx_maas_sse_feed(&c->sse, "", 0, &c->out, 1);
        if (!ok) {
            static const char ev[] = "data: {\"error\":{\"message\":\"the model server stopped in the middle of the "
                                     "answer\",\"type\":\"api_error\",\"param\":null,\"code\":\"upstream_error\"}}\n\n";
            gx_maas_buf_add(&c->out, ev, sizeof ev - 1);
        }
        settle(c, ok ? 200 : 502, 0);
    } else {
        if (!ok) {
            fail(c, 502, "api_error", "upstream_error", "the model server's answer was cut or too large");
            settle(c, 502, 0);
        } else {
            if (c->status >= 400) wrap_error(c);
            settle(c, (int)c->status, 0);
        }
    }
    int was = c->state;
    c->state = DONE;
    if (c->req && was == WAITING) gx_http_resume(c->req);
    else wake(c);
}

static void transfer_done(call *c, CURLcode rc)
{
    sink_end(c, rc == CURLE_OK, c->status != 0, c->too_big ? "the answer is too large" : curl_easy_strerror(rc));
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
            if (priv) gx_maas_models_scrape_done(p->m, e, ok);
            else gx_maas_models_probe_done(p->m, e, ok);
        } else {
            transfer_done((call *)(void *)priv, rc);
        }
    }
}

/* ---- the streamed body to the client ---------------------------------------------------- */

static ssize_t stream_read(void *ud, char *buf, size_t max)
{
    call *c = ud;
    int64_t now = gx_maas_now(c->m);
    size_t avail = c->out.len - c->out.off;
    if (!avail && c->paused && c->active) {
        resume_upstream(c);
        avail = c->out.len - c->out.off;
    }
    if (avail) {
        size_t n = avail < max ? avail : max;
        memcpy(buf, c->out.p + c->out.off, n);
        c->out.off += n;
        if (c->out.off == c->out.len) c->out.off = c->out.len = 0;
        c->last_send = now;
        if (c->paused && c->active && c->out.len - c->out.off < LOW_WATER) resume_upstream(c);
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

void gx_maas_proxy_answer(gx_maas *m, gx_req *req, gx_resp *resp)
{
    call *c = req->async;
    if (c->err_status) {
        gx_maas_oai_error(resp, c->err_status, c->err_type, c->err_code, "%s", c->err_msg);
        gx_maas_limit_headers(resp, &c->v);
        return;
    }
    gx_maas_limit_headers(resp, &c->v);
    if (c->stream && c->status == 200) {
        resp->status = 200;
        resp->ctype = "text/event-stream";
        resp->stream = (gx_stream){.read = stream_read, .free = on_stream_gone, .ud = c, .wake = &c->wake};
        c->refs++;
        c->last_send = gx_maas_now(m);
        return;
    }
    resp->status = (int)c->status;
    resp->ctype = c->ctype;
    resp->text = c->out.p ? c->out.p : calloc(1, 1);
    resp->text_len = c->out.len;
    c->out.p = NULL;
    c->out.len = c->out.cap = c->out.off = 0;
}

/* ---- admission ------------------------------------------------------------------------ */

/* The body sent upstream: the client's bytes, except that a stream must report usage
 * (stream_options.include_usage), which the meter needs and the client may not have
 * asked for, and that a completion must be told the limit it was granted when the body
 * names none or a larger one (else the upstream may generate past the reservation: vLLM
 * without max_tokens runs to the context length). body.c changes as little as it can;
 * a body that already says both is sent as it came. */
static int upstream_body(call *c, gx_req *req, const gx_maas_body *bi, json_t **b)
{
    c->body = req->body;
    c->body_len = req->body_len;
    if (c->stream && bi->stream_opts != 1) c->sse.strip_usage = 1;
    int fields = !strcmp(c->endpoint, "chat/completions") ? GX_MAAS_FIELD_MT | GX_MAAS_FIELD_MCT : GX_MAAS_FIELD_MT;
    char *out;
    size_t n;
    if (gx_maas_body_upstream(req->body, req->body_len, bi, b, c->stream, fields, c->v.grant, &out, &n)) return -1;
    if (out) {
        c->body = out;
        c->body_len = n;
        c->own_body = 1;
    }
    return 0;
}

/* What a request asks of the budgets. The completion limit it names is max_tokens (or
 * max_completion_tokens, which wins, on chat: /v1/completions has only max_tokens and
 * defaults to 16 when it is absent); completions are n per prompt of a batch. Returns
 * -1 with the 400 answered when a limit or n is out of range (the upstream would
 * refuse it, or worse: some servers take -1 as "no limit"). */
static int ask_of(const gx_maas_body *b, const char *endpoint, int64_t prompt, gx_maas_ask *a, gx_resp *resp)
{
    memset(a, 0, sizeof *a);
    a->prompt = prompt;
    if (!strcmp(endpoint, "embeddings")) return 0;
    int chat = !strcmp(endpoint, "chat/completions");
    if (b->mt_kind == GX_MAAS_F_INT && b->mt < 1) {
        gx_maas_oai_error_param(resp, 400, "max_tokens", "integer_below_min_value",
                                "max_tokens must be at least 1 (got %lld)", (long long)b->mt);
        return -1;
    }
    if (chat && b->mct_kind == GX_MAAS_F_INT && b->mct < 1) {
        gx_maas_oai_error_param(resp, 400, "max_completion_tokens", "integer_below_min_value",
                                "max_completion_tokens must be at least 1 (got %lld)", (long long)b->mct);
        return -1;
    }
    if (b->n_kind == GX_MAAS_F_OTHER || (b->n_kind == GX_MAAS_F_INT && (b->n < 1 || b->n > 128))) {
        gx_maas_oai_error_param(resp, 400, "n", "invalid_value", "n must be an integer between 1 and 128");
        return -1;
    }
    if (chat) a->want = b->has_max ? b->max_tokens : 0;
    else a->want = b->mt_kind == GX_MAAS_F_INT ? b->mt : 0;
    if (!chat && !a->want) a->dflt = 16;   /* OpenAI's default for /v1/completions */
    a->choices = (b->has_n ? b->n : 1) * (chat || b->prompts < 1 ? 1 : b->prompts);
    return 0;
}

void gx_maas_proxy_call(gx_maas *m, gx_req *req, gx_resp *resp, gx_maas_key *key, gx_maas_tier *tier,
                        const char *endpoint)
{
    gx_maas_body bi;
    json_t *b = NULL;
    if (gx_maas_body_scan(req->body, req->body_len, &bi)) { /* not sure: jansson reads it, or words the error */
        json_error_t je;
        b = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &je);
        if (!json_is_object(b)) {
            gx_maas_oai_error(resp, 400, "invalid_request_error", NULL, "the body must be a JSON object (%s)",
                              b ? "it is not an object" : je.text);
            json_decref(b);
            refused(m, key, tier, NULL, endpoint, 400, 0);
            return;
        }
        gx_maas_body_of_json(b, &bi);
    }
    const char *name = bi.has_model ? bi.model : NULL;
    gx_maas_model *md = name && !bi.model_long ? gx_maas_models_find(m, name) : NULL;
    if (!name) {
        gx_maas_oai_error_param(resp, 400, "model", NULL, "you must provide a model parameter");
        goto out;
    }
    if (!md || !gx_maas_model_allows(md, tier->name)) {
        if (md) gx_maas_oai_error(resp, 403, "permission_error", "model_not_allowed",
                                  "The model `%.128s` is not available to tier %s", name, tier->name);
        else gx_maas_oai_error(resp, 404, "invalid_request_error", "model_not_found",
                               "The model `%.128s` does not exist or you do not have access to it.", name);
        goto out;
    }
    if (req->body_len > md->max_body) {
        gx_maas_oai_error(resp, 413, "invalid_request_error", "request_too_large",
                          "the request body is larger than %zu bytes, the limit of model %s", md->max_body, md->name);
        goto out;
    }
    gx_maas_ask ask;
    if (ask_of(&bi, endpoint, gx_maas_prompt_estimate(&bi), &ask, resp)) goto out;
    int64_t now = gx_maas_now(m);
    md->last_request_ms = now;
    gx_maas_replica *rep = gx_maas_models_pick(md, NULL);
    if (!rep) {
        int cold = md->workload && !md->wanted;
        md->wanted = 1;
        gx_maas_oai_error(resp, 503, "service_unavailable", "model_starting",
                          "The model `%.128s` is starting%s; retry in a few seconds", name,
                          cold ? " (it was scaled to zero and starts now)" : " (no replica is ready yet)");
        gx_resp_header(resp, "retry-after", "5");
        goto out;
    }
    call *c = calloc(1, sizeof *c);
    if (!c) abort();
    c->m = m;
    c->key = key;
    c->tier = tier;
    c->model = md;
    c->rep = rep;
    c->t0 = gx_maas_mono();
    gx_strcpy_cut(c->endpoint, sizeof c->endpoint, endpoint);
    c->stream = bi.stream && strcmp(endpoint, "embeddings");
    c->prompt_est = ask.prompt;
    c->ubucket = gx_maas_tier_user(tier, key->user);
    if (gx_maas_admit_ask(tier, &key->bucket, c->ubucket, &ask, now, &c->v)) {
        gx_maas_oai_error(resp, 429, c->v.result == GX_MAAS_LIM_TOKENS || c->v.result == GX_MAAS_LIM_TOO_BIG
                          ? "tokens" : "requests", "rate_limit_exceeded", "%s", c->v.msg);
        gx_maas_limit_headers(resp, &c->v);
        if (c->v.never) gx_resp_header(resp, "x-should-retry", "false");   /* the openai clients obey it */
        free(c);
        goto out;
    }
    c->reserved = c->v.cost;
    md->requests++;
    c->refs = 1;
    c->next = m->proxy->calls;
    if (c->next) c->next->prev = c;
    m->proxy->calls = c;
    m->proxy->ncalls++;
    if (upstream_body(c, req, &bi, &b) || start(c)) {
        gx_maas_settle(tier, &key->bucket, c->ubucket, c->reserved, 0, 1, now);
        gx_maas_oai_error(resp, 500, "api_error", NULL, "cannot forward the request");
        free_call(c);
        goto out;
    }
    c->req = req;
    req->async = c;
    req->async_free = on_req_gone;
    resp->defer = 1;
out:
    if (resp->status >= 400) refused(m, key, tier, md ? md->name : name, endpoint, resp->status, bi.stream);
    json_decref(b);
}

/* Daemon stop: end every transfer and let waiting requests answer. */
static void shutdown_calls(gx_maas_proxy *p)
{
    for (call *c = p->calls; c; c = c->next) {
        if (!c->active) continue;
        stop_transfer(c);
        if (c->state == WAITING) {
            fail(c, 503, "service_unavailable", "shutting_down", "the gateway is stopping");
            settle(c, 503, 1);
            c->state = DONE;
            if (c->req) gx_http_resume(c->req);
        } else {
            settle(c, 503, 0);
            c->state = DONE;
        }
    }
}

void gx_maas_proxy_shutdown(gx_maas_proxy *p) { shutdown_calls(p); }

void gx_maas_proxy_free(gx_maas_proxy *p)
{
    if (!p) return;
    while (p->calls) { /* only when the HTTP server did not release them */
        call *c = p->calls;
        stop_transfer(c);
        free_call(c);
    }
    for (size_t i = 0; i < p->npool; i++) curl_easy_cleanup(p->pool[i]);
    free(p->pool);
    curl_multi_cleanup(p->multi);
    gx_up_free(p->up);
    free(p);
}
