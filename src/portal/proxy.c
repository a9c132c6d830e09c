/* proxy: interactive sessions reachable through the portal, as Open OnDemand's reverse
 * proxy makes a Jupyter server reachable: /ui/sessions/NS/NAME/REST goes to /REST on the
 * port the session's Job declares (annotation gpuaas.dev/session-port).
 * Owns: who may reach a session (signed-in users of its namespace; anyone else, admins
 * of the whole server too, 404 as if absent; nobody signed in: the sign-in page or 403:
 * see gx_user_member_of), which port (1024 or
 * above, and not one that a session admitted earlier declares too), the request as
 * forwarded (without the portal's session cookie, CSRF token, credentials or the trusted
 * proxy's identity headers, with X-Forwarded-Prefix), and the relay of bytes both ways in
 * the daemon's loop: a plain answer until the session closes it (we ask it to), or a
 * WebSocket after its upgrade, until either side closes.
 * Must not: connect anywhere but 127.0.0.1 (pods share the host's network: run/sandbox.c
 * gives them no network namespace, so a session listens on the host's loopback), block
 * the loop (a non-blocking connect), or hold more than GX_PORTAL_TUNNELS relays or an
 * idle one longer than GX_PORTAL_TUNNEL_IDLE_MS. */
#include <errno.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "lib/alloc.h"
#include "lib/gxtime.h"
#include "lib/wlkey.h"
#include "portal/portal_int.h"

#define TUNNEL_BUF 65536

typedef struct half {            /* bytes on their way to one side */
    char *b;
    size_t cap, off, len;
} half;

struct gx_portal_tunnel {
    gx_portal *p;
    int cfd, ufd;                /* the browser's socket (taken over), the session's */
    int connected, c_eof, u_eof, u_shut;
    half to_u, to_c;
    int64_t seen_ms;             /* last byte either way (gx_loop_mono) */
    gx_portal_tunnel *next, *prev;
};

static void tunnel_end(gx_portal_tunnel *t)
{
    gx_portal *p = t->p;
    gx_loop_unwatch(p->loop, t->cfd);
    gx_loop_unwatch(p->loop, t->ufd);
    close(t->cfd);
    close(t->ufd);
    free(t->to_u.b);
    free(t->to_c.b);
    if (t->prev) t->prev->next = t->next;
    else p->tunnels = t->next;
    if (t->next) t->next->prev = t->prev;
    p->ntunnels--;
    free(t);
}

static void on_fd(gx_loop *l, int fd, uint32_t ev, void *ud);

/* What each side should wake us for: read a side only when what we hold for the other
 * side is written (back-pressure without unbounded buffers). */
static void interest(gx_portal_tunnel *t)
{
    uint32_t c = 0, u = 0;
    if (t->to_c.len > t->to_c.off) c |= EPOLLOUT;
    else if (!t->u_eof && t->connected) u |= EPOLLIN;
    if (t->to_u.len > t->to_u.off || !t->connected) u |= EPOLLOUT;
    else if (!t->c_eof) c |= EPOLLIN;
    /* a side we want nothing from is not watched at all: a hung-up socket would report
     * EPOLLHUP at every turn of the loop while we wait for the other side */
    if (c) gx_loop_watch(t->p->loop, t->cfd, c, on_fd, t);
    else gx_loop_unwatch(t->p->loop, t->cfd);
    if (u) gx_loop_watch(t->p->loop, t->ufd, u, on_fd, t);
    else gx_loop_unwatch(t->p->loop, t->ufd);
}

/* Write what h holds to fd. 0: all, or the socket is full; -1: the peer is gone. */
static int put(int fd, half *h)
{
    while (h->off < h->len) {
        ssize_t n = send(fd, h->b + h->off, h->len - h->off, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        h->off += (size_t)n;
    }
    h->off = h->len = 0;
    return 0;
}

/* Read what fd has into h (empty). 1: bytes, 0: nothing now, -1: end or error. */
static int get(int fd, half *h)
{
    if (h->cap < TUNNEL_BUF) { h->b = gx_xrealloc(h->b, TUNNEL_BUF); h->cap = TUNNEL_BUF; }
    for (;;) {
        ssize_t n = recv(fd, h->b, h->cap, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -1;
        if (n == 0) return -1;
        h->off = 0;
        h->len = (size_t)n;
        return 1;
    }
}

static void on_fd(gx_loop *l, int fd, uint32_t ev, void *ud)
{
    gx_portal_tunnel *t = ud;
    t->seen_ms = gx_loop_mono(l);
    if (fd == t->ufd && !t->connected) {
        int err = 0;
        socklen_t el = sizeof err;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) {
            static const char bad[] = "HTTP/1.1 502 Bad Gateway\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n"
                                      "Content-Length: 52\r\n\r\nThe session is not listening on its declared port.\n";
            if (send(t->cfd, bad, sizeof bad - 1, MSG_NOSIGNAL) < 0) { /* the browser left: nothing to tell */ }
            tunnel_end(t);
            return;
        }
        t->connected = 1;
    }
    if (fd == t->cfd && (ev & EPOLLERR)) { tunnel_end(t); return; }
    if (fd == t->cfd && (ev & EPOLLOUT) && put(t->cfd, &t->to_c) < 0) { tunnel_end(t); return; }
    if (fd == t->ufd && (ev & EPOLLOUT) && put(t->ufd, &t->to_u) < 0) { tunnel_end(t); return; }
    if (fd == t->cfd && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) && t->to_u.len == 0) {
        int r = get(t->cfd, &t->to_u);
        if (r < 0) t->c_eof = 1;
        else if (r > 0 && put(t->ufd, &t->to_u) < 0) { tunnel_end(t); return; }
    }
    if (fd == t->ufd && t->connected && (ev & (EPOLLIN | EPOLLHUP | EPOLLERR)) && t->to_c.len == 0) {
        int r = get(t->ufd, &t->to_c);
        if (r < 0) t->u_eof = 1;
        else if (r > 0 && put(t->cfd, &t->to_c) < 0) { tunnel_end(t); return; }
    }
    /* the session finished its answer (or closed its WebSocket) and all of it is out:
     * done. The browser finished sending: tell the session, and wait for its end. */
    if (t->u_eof && t->to_c.len == 0) { tunnel_end(t); return; }
    if (t->c_eof && t->to_u.len == 0 && !t->u_shut) { shutdown(t->ufd, SHUT_WR); t->u_shut = 1; }
    interest(t);
}

static void sweep(gx_loop *l, void *ud)
{
    gx_portal *p = ud;
    p->tunnel_timer = 0;
    int64_t now = gx_loop_mono(l);
    for (gx_portal_tunnel *t = p->tunnels, *n; t; t = n) {
        n = t->next;
        if (now - t->seen_ms > GX_PORTAL_TUNNEL_IDLE_MS) tunnel_end(t);
    }
    if (p->tunnels) p->tunnel_timer = gx_loop_at(l, now + 30000, sweep, p);
}

void gx_portal_tunnels_free(gx_portal *p)
{
    while (p->tunnels) tunnel_end(p->tunnels);
    if (p->tunnel_timer) gx_loop_cancel(p->loop, p->tunnel_timer);
    p->tunnel_timer = 0;
}

/* ---- the request ---------------------------------------------------------------------- */

static int skip_header(const char *name)
{
    static const char *const H[] = {"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authorization", "TE", "Trailer",
                                    "Transfer-Encoding", "Content-Length", "Upgrade", "Expect", "Cookie", "Authorization",
                                    "X-CSRF-Token", "X-Forwarded-Prefix", "X-Forwarded-For", "X-Forwarded-User",
                                    "X-Forwarded-Groups", "X-Forwarded-Email", "X-Forwarded-Preferred-Username", NULL};
    for (int i = 0; H[i]; i++)
        if (!strcasecmp(name, H[i])) return 1;
    return !strncasecmp(name, "X-Auth-Request-", 15);
}

/* The browser's cookies but the portal's session cookie: the session's own (a notebook's
 * login and XSRF cookies) pass. */
static void cookies(gx_sbuf *b, const char *v)
{
    int any = 0;
    while (v && *v) {
        while (*v == ' ' || *v == ';') v++;
        const char *e = strchr(v, ';');
        size_t n = e ? (size_t)(e - v) : strlen(v);
        if (n && strncmp(v, "gx_session=", 11)) {
            gx_sbuf_puts(b, any ? "; " : "Cookie: ");
            gx_sbuf_put(b, v, n);
            any = 1;
        }
        v += n;
    }
    if (any) gx_sbuf_puts(b, "\r\n");
}

/* Path segments percent-encoded again ('/' kept), the query likewise. */
static void target(gx_sbuf *b, const gx_req *req, const char *rest)
{
    for (const char *s = rest; *s;) {
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        char *seg = gx_xstrndup(s, n);
        gx_portal_urlenc(b, seg);
        free(seg);
        s += n;
        if (*s == '/') { gx_sbuf_puts(b, "/"); s++; }
    }
    const char *k, *v;
    for (int i = 0; !gx_req_query_at(req, i, &k, &v); i++) {
        gx_sbuf_puts(b, i ? "&" : "?");
        gx_portal_urlenc(b, k);
        if (v && *v) { gx_sbuf_puts(b, "="); gx_portal_urlenc(b, v); }
    }
}

static int is_upgrade(const gx_req *req)
{
    const char *u = gx_req_header(req, "Upgrade"), *c = gx_req_header(req, "Connection");
    return u && c && strcasestr(c, "upgrade") && !strcasecmp(u, "websocket");
}

static char *request_head(gx_portal_ctx *c, const char *prefix, const char *rest, size_t *len)
{
    gx_req *req = c->req;
    gx_sbuf b;
    gx_sbuf_init(&b);
    gx_sbuf_puts(&b, req->method);
    gx_sbuf_puts(&b, " ");
    target(&b, req, rest);
    gx_sbuf_puts(&b, " HTTP/1.1\r\n");
    const char *n, *v;
    for (int i = 0; !gx_req_header_at(req, i, &n, &v); i++) {
        if (!strcasecmp(n, "Cookie")) cookies(&b, v);
        if (skip_header(n)) continue;
        gx_portal_putf(&b, "%s: %s\r\n", n, v);
    }
    if (is_upgrade(req)) gx_sbuf_puts(&b, "Connection: Upgrade\r\nUpgrade: websocket\r\n");
    else gx_sbuf_puts(&b, "Connection: close\r\n"); /* one answer, then the session closes: the relay's end */
    if (req->body_len || (strcmp(req->method, "GET") && strcmp(req->method, "HEAD")))
        gx_portal_putf(&b, "Content-Length: %zu\r\n", req->body_len);
    gx_portal_putf(&b, "X-Forwarded-Prefix: %s\r\nX-Forwarded-For: %s\r\nX-Forwarded-Proto: %s\r\n\r\n", prefix,
                   gx_req_peer(req), c->secure ? "https" : "http");
    gx_sbuf_put(&b, req->body, req->body_len);
    *len = b.n;
    return gx_sbuf_take(&b);
}

/* ---- who, which session, which port ---------------------------------------------------- */

/* The port of session w, or 0 with why (a 409 or 404 for the page). A session's port is
 * its own: below 1024 is refused (a system service), and when several running sessions
 * declare one, the one admitted first holds it. */
static int session_port(gx_portal_ctx *c, const json_t *w, int *status, const char **why)
{
    const char *state = json_string_value(json_object_get(w, "state")) ?: "";
    json_int_t port = json_integer_value(json_object_get(w, "sessionPort"));
    *status = 404;
    if (!json_object_get(w, "sessionPort")) { *why = "This workload declares no session port (annotation gpuaas.dev/session-port)."; return 0; }
    if (port < 1024 || port > 65535) { *why = "Its session port must be between 1024 and 65535."; return 0; }
    *status = 409;
    if (strcmp(state, "Admitted")) { *why = "The session is not running (it waits, or it ended)."; return 0; }
    const char *mine = json_string_value(json_object_get(w, "admittedAt")) ?: "", *key = json_string_value(json_object_get(w, "key")) ?: "";
    gx_wl_filter f = {.state = "Admitted"};
    json_t *all = gx_d_list(c->d, &f);
    size_t i;
    const json_t *o;
    int taken = 0;
    json_array_foreach(all, i, o) {
        const char *ok = json_string_value(json_object_get(o, "key")) ?: "", *oa = json_string_value(json_object_get(o, "admittedAt")) ?: "";
        if (!strcmp(ok, key) || json_integer_value(json_object_get(o, "sessionPort")) != port) continue;
        int d = strcmp(oa, mine);
        if (d < 0 || (d == 0 && strcmp(ok, key) < 0)) taken = 1;
    }
    json_decref(all);
    if (taken) { *why = "Another running session, started earlier, declares the same port: this one is not reachable."; return 0; }
    return (int)port;
}

#define refuse gx_portal_error_page
int gx_portal_proxy(gx_portal *p, gx_req *req, gx_resp *resp)
{
    gx_portal_ctx ctx = {.p = p, .d = p->d, .req = req, .resp = resp, .now = gx_loop_now(p->loop)}, *c = &ctx;
    const char *x = gx_req_header(req, "X-Forwarded-Proto");
    c->secure = x && !strcmp(x, "https");
    c->s = gx_portal_session_find(p, req, c->now);
    const gx_user *pu = gx_portal_proxy_user(c);
    c->user = pu ? pu : c->s ? gx_auth_find(p->auth, c->s->user) : NULL;
    /* /ui/sessions/NS/NAME[/REST] */
    const char *s = req->path + strlen("/ui/sessions/");
    const char *sl = strchr(s, '/');
    char ns[128] = "", name[128] = "";
    const char *nm = sl ? sl + 1 : "", *rest = strchr(nm, '/');
    size_t nl = sl ? (size_t)(sl - s) : 0, ml = rest ? (size_t)(rest - nm) : strlen(nm);
    if (nl && nl < sizeof ns && ml && ml < sizeof name) {
        memcpy(ns, s, nl);
        memcpy(name, nm, ml);
    }
    /* the session's own forms carry no portal CSRF token: another site's page must not
     * post to them with the viewer's cookie (SameSite=Lax already keeps it off a
     * cross-site POST; browsers send Origin, which must name this server) */
    const char *o = gx_req_header(req, "Origin"), *host = gx_req_header(req, "Host"), *fh = gx_req_header(req, "X-Forwarded-Host");
    const char *sep = o ? strstr(o, "://") : NULL;
    if (strcmp(req->method, "GET") && strcmp(req->method, "HEAD") && o &&
        !(sep && ((host && !strcmp(sep + 3, host)) || (fh && !strcmp(sep + 3, fh))))) {
        refuse(c, 403, "Request refused", "This request to a session was sent from another site.");
        return 1;
    }
    if (!c->user) {
        if (!strcmp(req->method, "GET")) gx_portal_redirect(c, "/login");
        else refuse(c, 403, "Not signed in", "Sign in to reach a session.");
        return 1;
    }
    gx_wlkey k;
    gx_err e;
    json_t *w = NULL;
    /* membership, not admin rights: a session's pages are served from the portal's own
     * origin, so its scripts act with the viewer's portal session. A team trusts its own
     * members' sessions (they share the namespace's work anyway); an admin who opened any
     * team's session would hand that team the admin's portal. */
    if (ns[0] && name[0] && gx_user_member_of(c->user, ns) && !gx_wlkey_make(&k, ns, name, &e)) w = gx_d_view(c->d, k.key);
    if (!w) { refuse(c, 404, "Not found", "No such session in your namespaces."); return 1; }
    char prefix[300];
    snprintf(prefix, sizeof prefix, "/ui/sessions/%s/%s", ns, name);
    if (!rest) { /* the session's relative links need the trailing slash */
        json_decref(w);
        gx_sbuf u;
        gx_sbuf_init(&u);
        gx_portal_putf(&u, "/ui/sessions/%U/%U/", ns, name);
        gx_portal_redirect(c, u.p);
        gx_sbuf_free(&u);
        return 1;
    }
    int status;
    const char *why = "";
    int port = session_port(c, w, &status, &why);
    json_decref(w);
    if (!port) { refuse(c, status, "Session not reachable", why); return 1; }
    if (p->ntunnels >= GX_PORTAL_TUNNELS) { refuse(c, 503, "Busy", "Too many session connections at once; try again."); return 1; }
    int ufd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (ufd < 0 || (connect(ufd, (struct sockaddr *)&a, sizeof a) < 0 && errno != EINPROGRESS)) {
        if (ufd >= 0) close(ufd);
        refuse(c, 502, "Session not reachable", "The session is not listening on its declared port (yet?).");
        return 1;
    }
    int cfd = gx_http_takeover(req);
    if (cfd < 0) { close(ufd); refuse(c, 502, "Session not reachable", "This request cannot be relayed; reload the page."); return 1; }
    resp->defer = 1;
    gx_portal_tunnel *t = gx_xcalloc(1, sizeof *t);
    t->p = p;
    t->cfd = cfd;
    t->ufd = ufd;
    t->to_u.b = request_head(c, prefix, rest, &t->to_u.len);
    t->to_u.cap = t->to_u.len;
    t->seen_ms = gx_loop_mono(p->loop);
    t->next = p->tunnels;
    if (p->tunnels) p->tunnels->prev = t;
    p->tunnels = t;
    p->ntunnels++;
    if (!p->tunnel_timer) p->tunnel_timer = gx_loop_at(p->loop, t->seen_ms + 30000, sweep, p);
    interest(t);
    return 1;
}
