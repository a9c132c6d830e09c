/* fleet/kubewatch: the status read-back of one cluster (kubewatch.h), as client-go's
 * reflector does it: per resource LIST (pages of 500, continue tokens) -> a relist into
 * fleet/status -> WATCH from the list's resourceVersion, a streamed body of one JSON
 * event per line. BOOKMARK moves the resourceVersion only; 410 Gone (the HTTP status or
 * an ERROR event) relists; a watch that ends normally (timeoutSeconds) watches again; a
 * broken one backs off (1 s doubling to 60 s) and watches from the last resourceVersion.
 * Owns: a curl multi handle driven by gx_loop (CURLMOPT_SOCKETFUNCTION/TIMERFUNCTION
 * -> gx_loop_watch/gx_loop_at, as maas/proxy_io.c), each transfer's buffer and bounds
 * (4 MiB an event, 64 MiB a list page, 200 pages), the connection health it reports.
 * Must not: block, write to the cluster, or put a token in a log line or an error. */
#include <curl/curl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <jansson.h>
#include "fleet/kubeconfig.h"
#include "fleet/kubewatch.h"
#include "lib/alloc.h"
#include "lib/sbuf.h"
#include "net/loop.h"

#define EVENT_MAX (4u << 20)     /* one watch event (one line) */
#define PAGE_MAX (64u << 20)     /* one list page */
#define ERRBODY_MAX (64u << 10)  /* the body of a failed request kept for its message */
#define PAGES_MAX 200            /* 100 000 objects of a kind */
#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS 60000
#define NRES 4

enum { LIST, WATCH };
enum { AB_NONE, AB_GONE, AB_BIG, AB_BAD };

typedef struct gx_kube_watch gx_kube_watch;

typedef struct res {
    gx_kube_watch *w;
    const char *kind, *group, *plural;
    int kueue, v1beta1;           /* a Kueue kind; fell back to v1beta1 after a 404 */
    char *rv;                     /* last resourceVersion seen; NULL: list first */
    char *cont;                   /* the next page's continue token while listing */
    int pages;
    int mode;
    CURL *easy;
    struct curl_slist *hdrs;
    gx_sbuf buf;
    long code;                    /* HTTP status of the transfer in flight (0: not yet) */
    int abort, events;
    char abort_msg[256];
    int64_t started;              /* monotonic ms the transfer began */
    int64_t backoff;              /* the next back-off; 0 after a success */
    uint64_t retry;               /* timer id of a pending start */
    int failed;                   /* the last attempt failed */
} res;

struct gx_kube_watch {
    gx_loop *loop;
    char *cluster;
    gx_kubeconfig kc;
    gx_fleet_status *st;
    CURLM *multi;
    uint64_t timer;
    res r[NRES];
};

static void start(res *r);
static void check_done(gx_kube_watch *w);

/* ---- curl in our loop --------------------------------------------------------------- */

static void on_fd(gx_loop *l, int fd, uint32_t ev, void *ud)
{
    (void)l;
    gx_kube_watch *w = ud;
    int flags = (ev & EPOLLIN ? CURL_CSELECT_IN : 0) | (ev & EPOLLOUT ? CURL_CSELECT_OUT : 0) |
                (ev & (EPOLLERR | EPOLLHUP) ? CURL_CSELECT_ERR : 0);
    int running;
    curl_multi_socket_action(w->multi, fd, flags, &running);
    check_done(w);
}

static int on_socket(CURL *e, curl_socket_t s, int what, void *userp, void *socketp)
{
    (void)e; (void)socketp;
    gx_kube_watch *w = userp;
    if (what == CURL_POLL_REMOVE) gx_loop_unwatch(w->loop, s);
    else gx_loop_watch(w->loop, s, (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0), on_fd, w);
    return 0;
}

static void on_fire(gx_loop *l, void *ud)
{
    (void)l;
    gx_kube_watch *w = ud;
    w->timer = 0;
    int running;
    curl_multi_socket_action(w->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    check_done(w);
}

/* curl's one timer: never act inside the callback (curl may be mid-call), only schedule. */
static int on_timer(CURLM *multi, long ms, void *userp)
{
    (void)multi;
    gx_kube_watch *w = userp;
    if (w->timer) gx_loop_cancel(w->loop, w->timer);
    w->timer = ms < 0 ? 0 : gx_loop_at(w->loop, gx_loop_mono(w->loop) + ms, on_fire, w);
    return 0;
}

/* ---- health ------------------------------------------------------------------------ */

static void report_ok(res *r)
{
    gx_kube_watch *w = r->w;
    r->failed = 0;
    r->backoff = 0;
    for (int i = 0; i < NRES; i++)
        if (w->r[i].failed) return;
    gx_fleet_status_connection(w->st, w->cluster, 1, NULL, gx_loop_now(w->loop));
}

static void on_retry(gx_loop *l, void *ud)
{
    (void)l;
    res *r = ud;
    r->retry = 0;
    start(r);
}

static void later(res *r, int64_t ms)
{
    if (r->retry) gx_loop_cancel(r->w->loop, r->retry);
    r->retry = gx_loop_at(r->w->loop, gx_loop_mono(r->w->loop) + ms, on_retry, r);
}

/* A failed attempt: say why (logged and shown on the portal), try again after a while. */
static void fail(res *r, const char *msg)
{
    gx_kube_watch *w = r->w;
    char m[512];
    snprintf(m, sizeof m, "%s %s: %s", r->mode == LIST ? "list" : "watch", r->plural, msg);
    fprintf(stderr, "gpuaas: fleet cluster %s: %s\n", w->cluster, m);
    r->failed = 1;
    gx_fleet_status_connection(w->st, w->cluster, 0, m, gx_loop_now(w->loop));
    r->backoff = r->backoff ? (r->backoff * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : r->backoff * 2) : BACKOFF_FIRST_MS;
    later(r, r->backoff);
}

/* ---- events ------------------------------------------------------------------------ */

static void set_rv(res *r, const json_t *obj)
{
    const char *rv = json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));
    if (!rv || !*rv) return;
    free(r->rv);
    r->rv = gx_xstrdup(rv);
}

/* One line of a watch. Returns 0, or an AB_* reason to drop the connection. */
static int on_event(res *r, const char *line, size_t n)
{
    while (n && (line[n - 1] == '\r' || line[n - 1] == ' ')) n--;
    if (!n) return 0;
    json_error_t je;
    json_t *ev = json_loadb(line, n, 0, &je);
    const char *type = json_string_value(json_object_get(ev, "type"));
    json_t *obj = json_object_get(ev, "object");
    int rc = 0;
    if (!type || !json_is_object(obj)) {
        snprintf(r->abort_msg, sizeof r->abort_msg, "a watch event that is not {type, object}: %s", ev ? "" : je.text);
        rc = AB_BAD;
    } else if (!strcmp(type, "BOOKMARK")) {
        set_rv(r, obj);
    } else if (!strcmp(type, "ERROR")) {
        json_int_t code = json_integer_value(json_object_get(obj, "code"));
        const char *msg = json_string_value(json_object_get(obj, "message"));
        snprintf(r->abort_msg, sizeof r->abort_msg, "ERROR event %d: %s", (int)code, msg ? msg : "");
        rc = code == 410 ? AB_GONE : AB_BAD;
    } else if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED") || !strcmp(type, "DELETED")) {
        gx_fleet_status_event(r->w->st, r->w->cluster, r->kind, type, obj);
        set_rv(r, obj);
        r->events++;
    }
    json_decref(ev);
    return rc;
}

/* The body as it arrives: a watch's lines are handled as soon as they are whole (events
 * are split across chunks anywhere); a list page or an error is kept, bounded. */
static size_t on_write(char *p, size_t size, size_t nm, void *ud)
{
    res *r = ud;
    size_t len = size * nm;
    if (!r->code) curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &r->code);
    if (r->code != 200) {
        if (r->buf.n < ERRBODY_MAX) gx_sbuf_put(&r->buf, p, len < ERRBODY_MAX - r->buf.n ? len : ERRBODY_MAX - r->buf.n);
        return len;
    }
    if (r->mode == LIST) {
        if (r->buf.n + len > PAGE_MAX) {
            snprintf(r->abort_msg, sizeof r->abort_msg, "a list page over %u MiB", PAGE_MAX >> 20);
            r->abort = AB_BIG;
            return 0;
        }
        gx_sbuf_put(&r->buf, p, len);
        return len;
    }
    size_t from = r->buf.n;
    gx_sbuf_put(&r->buf, p, len);
    size_t start_at = 0;
    for (size_t i = from; i < r->buf.n; i++) {
        if (r->buf.p[i] != '\n') continue;
        int ab = on_event(r, r->buf.p + start_at, i - start_at);
        start_at = i + 1;
        if (ab) { r->abort = ab; return 0; }
    }
    if (start_at) {
        memmove(r->buf.p, r->buf.p + start_at, r->buf.n - start_at);
        r->buf.n -= start_at;
        r->buf.p[r->buf.n] = 0;
    }
    if (r->buf.n > EVENT_MAX) {
        snprintf(r->abort_msg, sizeof r->abort_msg, "a watch event over %u MiB", EVENT_MAX >> 20);
        r->abort = AB_BIG;
        return 0;
    }
    report_ok(r);   /* a 200 stream flows: connected (and lastEventAt moves when events came) */
    return len;
}

/* ---- transfers --------------------------------------------------------------------- */

static void end_transfer(res *r)
{
    if (r->easy) {
        curl_multi_remove_handle(r->w->multi, r->easy);
        curl_easy_cleanup(r->easy);
        r->easy = NULL;
    }
    for (struct curl_slist *h = r->hdrs; h; h = h->next) sodium_memzero(h->data, strlen(h->data));   /* the token */
    curl_slist_free_all(r->hdrs);
    r->hdrs = NULL;
    gx_sbuf_free(&r->buf);
}

/* key=value, the value escaped, appended to the query. */
static void param(gx_sbuf *u, CURL *e, const char *key, const char *val)
{
    char *v = curl_easy_escape(e, val, 0);
    gx_sbuf_printf(u, "%c%s=%s", strchr(u->p, '?') ? '&' : '?', key, v ? v : "");
    curl_free(v);
}

static void tls(CURL *e, const gx_kubeconfig *k)
{
    if (k->insecure) {
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (k->ca.p) {
        struct curl_blob b = {k->ca.p, k->ca.n, CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_CAINFO_BLOB, &b);
    } else if (k->ca_file) {
        curl_easy_setopt(e, CURLOPT_CAINFO, k->ca_file);
    }
    if (k->cert.p && k->key.p) {
        struct curl_blob c = {k->cert.p, k->cert.n, CURL_BLOB_COPY}, kb = {k->key.p, k->key.n, CURL_BLOB_COPY};
        curl_easy_setopt(e, CURLOPT_SSLCERT_BLOB, &c);
        curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(e, CURLOPT_SSLKEY_BLOB, &kb);
        curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
    }
}

/* Begin r's next request: a list page when there is no resourceVersion, else a watch. */
static void start(res *r)
{
    gx_kube_watch *w = r->w;
    end_transfer(r);
    r->mode = r->rv ? WATCH : LIST;
    r->code = 0;
    r->abort = AB_NONE;
    r->abort_msg[0] = 0;
    r->events = 0;
    r->started = gx_loop_mono(w->loop);
    gx_err e;
    char *tok = gx_kubeconfig_bearer(&w->kc, &e);
    if (!tok && e.msg[0]) { fail(r, e.msg); return; }
    CURL *easy = curl_easy_init();
    if (!easy) { if (tok) { sodium_memzero(tok, strlen(tok)); free(tok); } fail(r, "out of memory"); return; }
    r->easy = easy;
    gx_sbuf u = {0};
    gx_sbuf_printf(&u, "%s%s%s", w->kc.server, r->kueue ? (r->v1beta1 ? "/apis/kueue.x-k8s.io/v1beta1/" : r->group) : r->group,
                   r->plural);
    if (r->mode == LIST) {
        param(&u, easy, "limit", "500");
        if (r->cont) param(&u, easy, "continue", r->cont);
    } else {
        param(&u, easy, "watch", "1");
        param(&u, easy, "resourceVersion", r->rv);
        param(&u, easy, "allowWatchBookmarks", "true");
        param(&u, easy, "timeoutSeconds", "300");
    }
    r->hdrs = curl_slist_append(NULL, "Accept: application/json");
    if (tok) {
        size_t n = strlen(tok) + 32;
        char *h = gx_xmalloc(n);
        snprintf(h, n, "Authorization: Bearer %s", tok);
        r->hdrs = curl_slist_append(r->hdrs, h);
        sodium_memzero(h, n);
        sodium_memzero(tok, strlen(tok));
        free(h);
        free(tok);
    }
    curl_easy_setopt(easy, CURLOPT_URL, u.p);
    gx_sbuf_free(&u);
    curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "https,http");
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, r->hdrs);
    curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, r);
    curl_easy_setopt(easy, CURLOPT_PRIVATE, r);
    curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, r->mode == LIST ? 120000L : 330000L);   /* past timeoutSeconds */
    curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
    tls(easy, &w->kc);
    if (curl_multi_add_handle(w->multi, easy) != CURLM_OK) { end_transfer(r); fail(r, "cannot start a transfer"); }
}

/* The message of a Kubernetes Status body (or the body's start). */
static void status_msg(const res *r, char *out, size_t n)
{
    json_t *s = r->buf.p ? json_loadb(r->buf.p, r->buf.n, 0, NULL) : NULL;
    const char *m = json_string_value(json_object_get(s, "message"));
    snprintf(out, n, "%.200s", m ? m : r->buf.p && !s ? r->buf.p : "");
    json_decref(s);
}

/* A list page answered 200: feed it to status; next page, or watch from its version. */
static void list_done(res *r)
{
    gx_kube_watch *w = r->w;
    json_t *l = json_loadb(r->buf.p ? r->buf.p : "", r->buf.n, 0, NULL);
    json_t *items = json_object_get(l, "items"), *meta = json_object_get(l, "metadata");
    const char *rv = json_string_value(json_object_get(meta, "resourceVersion"));
    if (!json_is_array(items) || !rv) {
        json_decref(l);
        free(r->cont);
        r->cont = NULL;
        fail(r, "the answer is not a list (items, metadata.resourceVersion)");
        return;
    }
    if (!r->cont) { gx_fleet_status_relist_begin(w->st, w->cluster, r->kind); r->pages = 0; }
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it) gx_fleet_status_event(w->st, w->cluster, r->kind, "ADDED", it);
    const char *cont = json_string_value(json_object_get(meta, "continue"));
    free(r->cont);
    r->cont = cont && *cont ? gx_xstrdup(cont) : NULL;
    if (r->cont && ++r->pages >= PAGES_MAX) {
        free(r->cont);
        r->cont = NULL;
        json_decref(l);
        fail(r, "more than 100000 objects");
        return;
    }
    if (!r->cont) {
        gx_fleet_status_relist_end(w->st, w->cluster, r->kind);
        free(r->rv);
        r->rv = gx_xstrdup(rv);
    }
    json_decref(l);
    report_ok(r);
    start(r);
}

/* The transfer of r ended with curl's result rc. */
static void finish(res *r, CURLcode rc)
{
    char m[400], sm[256];
    long code = 0;
    curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &code);
    if (r->abort == AB_GONE) {   /* too old a resourceVersion: relist */
        fprintf(stderr, "gpuaas: fleet cluster %s: watch %s: %s: relisting\n", r->w->cluster, r->plural, r->abort_msg);
        free(r->rv);
        r->rv = NULL;
        start(r);
        return;
    }
    if (r->abort) {
        if (r->abort == AB_BIG) { free(r->rv); r->rv = NULL; free(r->cont); r->cont = NULL; }
        end_transfer(r);
        fail(r, r->abort_msg);
        return;
    }
    if (rc != CURLE_OK) {
        snprintf(m, sizeof m, "%s: %s", r->w->kc.server, curl_easy_strerror(rc));
        if (r->mode == LIST) { free(r->cont); r->cont = NULL; }
        end_transfer(r);
        fail(r, m);
        return;
    }
    if (code == 200 && r->mode == LIST) { list_done(r); return; }
    if (code == 200) {   /* the watch ended (timeoutSeconds): again from the last version */
        int quick = r->events == 0 && gx_loop_mono(r->w->loop) - r->started < 1000;
        end_transfer(r);
        report_ok(r);
        if (quick) later(r, 1000);   /* a server that ends every watch at once is not hammered */
        else start(r);
        return;
    }
    if (code == 404 && r->kueue && !r->v1beta1) { r->v1beta1 = 1; start(r); return; }
    if (code == 410) { free(r->rv); r->rv = NULL; free(r->cont); r->cont = NULL; start(r); return; }
    status_msg(r, sm, sizeof sm);
    snprintf(m, sizeof m, "HTTP %ld from %s%s%s", code, r->w->kc.server, sm[0] ? ": " : "", sm);
    if (r->mode == LIST) { free(r->cont); r->cont = NULL; }
    end_transfer(r);
    fail(r, m);
}

static void check_done(gx_kube_watch *w)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(w->multi, &left))) {
        if (msg->msg != CURLMSG_DONE) continue;
        res *r = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&r);
        if (r) finish(r, msg->data.result);
    }
}

/* ---- the watch --------------------------------------------------------------------- */

gx_kube_watch *gx_kube_watch_new(gx_loop *l, const char *cluster, const char *kubeconfig, const char *context,
                                 gx_fleet_status *st, gx_err *err)
{
    gx_kube_watch *w = gx_xcalloc(1, sizeof *w);
    if (gx_kubeconfig_load(kubeconfig, context, &w->kc, err)) { free(w); return NULL; }
    w->multi = curl_multi_init();
    if (!w->multi) {
        gx_kubeconfig_free(&w->kc);
        free(w);
        gx_errf(err, 500, "", "cannot start libcurl");
        return NULL;
    }
    w->loop = l;
    w->cluster = gx_xstrdup(cluster);
    w->st = st;
    curl_multi_setopt(w->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(w->multi, CURLMOPT_SOCKETDATA, w);
    curl_multi_setopt(w->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(w->multi, CURLMOPT_TIMERDATA, w);
    static const struct { const char *kind, *group, *plural; int kueue; } R[NRES] = {
        {"Workload", "/apis/kueue.x-k8s.io/v1beta2/", "workloads", 1},
        {"Job", "/apis/batch/v1/", "jobs", 0},
        {"ClusterQueue", "/apis/kueue.x-k8s.io/v1beta2/", "clusterqueues", 1},
        {"LocalQueue", "/apis/kueue.x-k8s.io/v1beta2/", "localqueues", 1},
    };
    gx_fleet_status_connection(st, cluster, 0, NULL, gx_loop_now(l));
    for (int i = 0; i < NRES; i++) {
        w->r[i] = (res){.w = w, .kind = R[i].kind, .group = R[i].group, .plural = R[i].plural, .kueue = R[i].kueue};
    }
    for (int i = 0; i < NRES; i++) start(&w->r[i]);
    return w;
}

void gx_kube_watch_free(gx_kube_watch *w)
{
    if (!w) return;
    for (int i = 0; i < NRES; i++) {
        res *r = &w->r[i];
        end_transfer(r);
        if (r->retry) gx_loop_cancel(w->loop, r->retry);
        free(r->rv);
        free(r->cont);
    }
    curl_multi_cleanup(w->multi);
    if (w->timer) gx_loop_cancel(w->loop, w->timer);
    gx_kubeconfig_free(&w->kc);
    free(w->cluster);
    free(w);
}
