/* net/upstream: a pooled keep-alive HTTP/1.1 client in the daemon's loop (see
 * upstream.h for what it owns and must not do).
 * Syscalls per request on a warm connection: one writev, usually one read; the socket
 * is registered once, edge-triggered, for its whole life (no epoll_ctl per request),
 * and a short read means the socket is drained (as nginx assumes), so no extra read
 * to see EAGAIN. No liveness poll before reusing a connection: a pooled connection
 * that fails before any byte of the answer is retried once on a fresh one (nginx's
 * proxy_next_upstream behaviour for a keep-alive connection the server closed).
 * Connections are allocated once and reused; requests are the caller's memory. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>
#include "net/upstream.h"
#include "lib/alloc.h"
#include "lib/sbuf.h"

#define RBUF (GX_UP_MAX_HEAD * 2)   /* read buffer of a connection: a whole head fits */
#define POOL_CAP 1024                /* idle connections kept per host */
#define IDLE_KEEP_MS 4000            /* under uvicorn's 5 s keep-alive, so that we rarely race its close */
#define MAX_HOSTS 64
#define SCAN_MS 100                  /* how often timeouts are looked at */

/* ---- the parser ------------------------------------------------------------------ */

enum { P_HEAD, P_LEN, P_CHUNK_SIZE, P_CHUNK_DATA, P_CHUNK_CRLF, P_TRAILER, P_CLOSE, P_END_PENDING, P_DONE, P_ERR };

void gx_up_parser_init(gx_up_parser *p)
{
    memset(p, 0, sizeof *p);
    p->clen = -1;
}

static int perr(gx_up_parser *p, const char *why)
{
    p->state = P_ERR;
    p->err = why;
    return GX_UP_ERR;
}

/* Index just past the empty line that ends a head (or trailer block) in b[0..n), 0 if
 * none yet. Lines end in LF, optionally preceded by CR. */
static size_t block_end(const char *b, size_t n)
{
    if (n >= 1 && b[0] == '\n') return 1;
    if (n >= 2 && b[0] == '\r' && b[1] == '\n') return 2;
    for (const char *q = b; (q = memchr(q, '\n', n - (size_t)(q - b))); q++) {
        size_t i = (size_t)(q - b) + 1;
        if (i < n && b[i] == '\n') return i + 1;
        if (i + 1 < n && b[i] == '\r' && b[i + 1] == '\n') return i + 2;
        if (i >= n) break;
    }
    return 0;
}

static int has_token(const char *v, size_t n, const char *tok)
{
    size_t t = strlen(tok);
    for (size_t i = 0; i + t <= n; i++)
        if (!strncasecmp(v + i, tok, t) && (i == 0 || v[i - 1] == ' ' || v[i - 1] == ',') &&
            (i + t == n || v[i + t] == ' ' || v[i + t] == ',' || v[i + t] == ';'))
            return 1;
    return 0;
}

/* The status line and headers in h[0..n) (n includes the blank line). */
static int parse_head(gx_up_parser *p, const char *h, size_t n)
{
    const char *end = h + n, *nl = memchr(h, '\n', n);
    size_t l = (size_t)(nl - h);
    if (l && h[l - 1] == '\r') l--;
    if (l < 12 || memcmp(h, "HTTP/1.", 7) || (h[7] != '0' && h[7] != '1') || h[8] != ' ' ||
        h[9] < '1' || h[9] > '5' || h[10] < '0' || h[10] > '9' || h[11] < '0' || h[11] > '9' || (l > 12 && h[12] != ' '))
        return perr(p, "bad status line");
    p->status = (h[9] - '0') * 100 + (h[10] - '0') * 10 + (h[11] - '0');
    int http10 = h[7] == '0', conn_close = 0, conn_keep = 0, nh = 0;
    p->chunked = 0;
    p->clen = -1;
    p->ctype[0] = 0;
    for (const char *q = nl + 1; q < end;) {
        const char *e = memchr(q, '\n', (size_t)(end - q));
        size_t ll = (size_t)(e - q);
        if (ll && q[ll - 1] == '\r') ll--;
        if (!ll) break;
        if (++nh > GX_UP_MAX_HEADERS) return perr(p, "too many headers");
        if (*q == ' ' || *q == '\t') return perr(p, "folded header line");
        const char *colon = memchr(q, ':', ll);
        if (!colon || colon == q) return perr(p, "header line without a name");
        size_t nlen = (size_t)(colon - q);
        for (size_t i = 0; i < nlen; i++)
            if (q[i] <= ' ' || q[i] >= 127) return perr(p, "bad header name");
        const char *v = colon + 1, *ve = q + ll;
        while (v < ve && (*v == ' ' || *v == '\t')) v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t')) ve--;
        size_t vl = (size_t)(ve - v);
        if (nlen == 14 && !strncasecmp(q, "content-length", 14)) {
            int64_t x = 0;
            if (!vl || vl > 18) return perr(p, "bad Content-Length");
            for (size_t i = 0; i < vl; i++) {
                if (v[i] < '0' || v[i] > '9') return perr(p, "bad Content-Length");
                x = x * 10 + (v[i] - '0');
            }
            if (p->clen >= 0 && p->clen != x) return perr(p, "conflicting Content-Length");
            p->clen = x;
        } else if (nlen == 17 && !strncasecmp(q, "transfer-encoding", 17)) {
            /* only plain chunked: we asked for no other coding */
            if (vl != 7 || strncasecmp(v, "chunked", 7)) return perr(p, "unsupported Transfer-Encoding");
            p->chunked = 1;
        } else if (nlen == 10 && !strncasecmp(q, "connection", 10)) {
            conn_close |= has_token(v, vl, "close");
            conn_keep |= has_token(v, vl, "keep-alive");
        } else if (nlen == 12 && !strncasecmp(q, "content-type", 12)) {
            if (vl >= sizeof p->ctype) vl = sizeof p->ctype - 1;
            memcpy(p->ctype, v, vl);
            p->ctype[vl] = 0;
        }
        q = e + 1;
    }
    p->keepalive = http10 ? conn_keep && !conn_close : !conn_close;
    if (p->status == 101) return perr(p, "unexpected protocol switch");
    if (p->status < 200) { p->state = P_HEAD; return GX_UP_NEED; } /* 1xx: another head follows */
    if (p->chunked) {
        if (p->clen >= 0) p->keepalive = 0; /* both: chunked wins, but do not trust the connection */
        p->state = P_CHUNK_SIZE;
    } else if (p->status == 204 || p->status == 304 || p->clen == 0) {
        p->state = P_END_PENDING;
    } else if (p->clen > 0) {
        p->left = p->clen;
        p->state = P_LEN;
    } else {
        p->keepalive = 0;
        p->state = P_CLOSE;
    }
    return GX_UP_HEAD;
}

/* A chunk-size line "1a[;ext=v]" in b[0..n) (without its LF). */
static int chunk_size(gx_up_parser *p, const char *b, size_t n)
{
    if (n && b[n - 1] == '\r') n--;
    size_t i = 0;
    int64_t x = 0;
    for (; i < n; i++) {
        int c = b[i], d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                        : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) break;
        if (i >= 15) return perr(p, "chunk size too large");
        x = x * 16 + d;
    }
    if (!i) return perr(p, "bad chunk size");
    while (i < n && (b[i] == ' ' || b[i] == '\t')) i++;
    if (i < n && b[i] != ';') return perr(p, "bad chunk size");
    p->left = x;
    p->state = x ? P_CHUNK_DATA : P_TRAILER;
    return GX_UP_NEED;
}

int gx_up_parse(gx_up_parser *p, const char *buf, size_t len, size_t *used, const char **data, size_t *dlen)
{
    *used = 0;
    for (;;) {
        const char *b = buf + *used;
        size_t n = len - *used;
        switch (p->state) {
        case P_HEAD: {
            size_t e = block_end(b, n > GX_UP_MAX_HEAD ? GX_UP_MAX_HEAD : n);
            if (!e) return n >= GX_UP_MAX_HEAD ? perr(p, "response head too large") : GX_UP_NEED;
            if (e <= 2) return perr(p, "empty status line");
            *used += e;
            int ev = parse_head(p, b, e);
            if (ev != GX_UP_NEED) return ev;
            continue; /* a 1xx answer: read the next head */
        }
        case P_END_PENDING:
            p->state = P_DONE;
            return GX_UP_END;
        case P_LEN:
        case P_CHUNK_DATA:
        case P_CLOSE: {
            if (!n) return GX_UP_NEED;
            size_t k = n;
            if (p->state != P_CLOSE && (int64_t)k > p->left) k = (size_t)p->left;
            *data = b;
            *dlen = k;
            *used += k;
            if (p->state != P_CLOSE) {
                p->left -= (int64_t)k;
                if (!p->left) p->state = p->state == P_LEN ? P_END_PENDING : P_CHUNK_CRLF;
            }
            return GX_UP_DATA;
        }
        case P_CHUNK_CRLF:
            if (!n) return GX_UP_NEED;
            if (b[0] == '\n') { *used += 1; p->state = P_CHUNK_SIZE; continue; }
            if (b[0] != '\r') return perr(p, "chunk not followed by CRLF");
            if (n < 2) return GX_UP_NEED;
            if (b[1] != '\n') return perr(p, "chunk not followed by CRLF");
            *used += 2;
            p->state = P_CHUNK_SIZE;
            continue;
        case P_CHUNK_SIZE: {
            const char *nl = memchr(b, '\n', n > GX_UP_MAX_CHUNK_LINE ? GX_UP_MAX_CHUNK_LINE : n);
            if (!nl) return n >= GX_UP_MAX_CHUNK_LINE ? perr(p, "chunk size line too long") : GX_UP_NEED;
            if (chunk_size(p, b, (size_t)(nl - b)) == GX_UP_ERR) return GX_UP_ERR;
            *used += (size_t)(nl - b) + 1;
            continue;
        }
        case P_TRAILER: {
            size_t e = block_end(b, n > GX_UP_MAX_HEAD ? GX_UP_MAX_HEAD : n);
            if (!e) return n >= GX_UP_MAX_HEAD ? perr(p, "trailers too large") : GX_UP_NEED;
            *used += e;
            p->state = P_DONE;
            return GX_UP_END;
        }
        case P_DONE:
            return GX_UP_END;
        default:
            return GX_UP_ERR;
        }
    }
}

int gx_up_parse_eof(gx_up_parser *p)
{
    if (p->state == P_CLOSE || p->state == P_DONE || p->state == P_END_PENDING) {
        p->state = P_DONE;
        return GX_UP_END;
    }
    return perr(p, p->state == P_HEAD ? "closed before a complete answer head" : "closed in the middle of the body");
}

/* ---- connections and the pool ------------------------------------------------------ */

enum { C_CONNECTING, C_SENDING, C_READING, C_IDLE, C_FAILED };

typedef struct gx_up_conn {
    struct gx_up *u;
    struct gx_up_host *host;
    int fd, state, reused, rdhup, queued, drained;
    unsigned gen;                  /* changes when the socket is closed: callbacks may close it */
    int fail_err;                  /* C_FAILED: errno of the connect */
    gx_up_req *req;
    gx_up_parser ps;
    char *rbuf;
    size_t roff, rlen;
    int64_t deadline;              /* of the current wait (connect, first byte, idle, or pool expiry), on gx_loop_mono */
    struct gx_up_conn *next, *prev;    /* the host's idle list, or the client's busy list */
    struct gx_up_conn *qnext;          /* the kick queue */
} gx_up_conn;

typedef struct gx_up_host {
    struct sockaddr_storage sa;
    socklen_t salen;
    char hostport[80];
    gx_up_conn *idle;
    int nidle;
    int nconn;                     /* open connections (busy and idle): 0 lets the slot be reused */
} gx_up_host;

struct gx_up {
    gx_loop *loop;
    gx_up_host hosts[MAX_HOSTS];
    int nhosts;
    gx_up_conn *busy;              /* connections carrying a request */
    gx_up_conn *kick, *kick_tail;  /* work for the next tick: resumed, or failed at start */
    gx_up_conn *spare;             /* closed connections kept for their buffers */
    int nopen, nspare;
    int64_t next_scan;
};

static void on_event(gx_loop *l, int fd, uint32_t ev, void *ud);

gx_up *gx_up_new(gx_loop *loop)
{
    gx_up *u = calloc(1, sizeof *u);
    if (u) u->loop = loop;
    return u;
}

static void list_del(gx_up_conn **head, gx_up_conn *c)
{
    if (c->prev) c->prev->next = c->next;
    else *head = c->next;
    if (c->next) c->next->prev = c->prev;
    c->next = c->prev = NULL;
}

static void list_add(gx_up_conn **head, gx_up_conn *c)
{
    c->prev = NULL;
    c->next = *head;
    if (*head) (*head)->prev = c;
    *head = c;
}

/* Close the socket; the struct (and its buffer) is kept for the next connection. */
static void conn_close(gx_up_conn *c)
{
    gx_up *u = c->u;
    if (c->state == C_IDLE) { list_del(&c->host->idle, c); c->host->nidle--; }
    else list_del(&u->busy, c);
    if (c->fd >= 0) {
        gx_loop_unwatch(u->loop, c->fd);
        close(c->fd);
        u->nopen--;
        c->host->nconn--;
    }
    c->fd = -1;
    c->req = NULL;
    c->gen++;
    c->state = C_FAILED;
    /* never freed here (a caller up the stack may still look at c->gen): the tick trims */
    if (!c->queued) { c->next = u->spare; u->spare = c; u->nspare++; }
}

static void kick(gx_up_conn *c)
{
    if (c->queued) return;
    c->queued = 1;
    c->qnext = NULL;
    if (c->u->kick_tail) c->u->kick_tail->qnext = c;
    else c->u->kick = c;
    c->u->kick_tail = c;
}

/* A new connection to h for r (connect started, or C_FAILED queued for the tick). */
static gx_up_conn *conn_open(gx_up *u, gx_up_host *h, gx_up_req *r)
{
    gx_up_conn *c = u->spare;
    if (c) { u->spare = c->next; u->nspare--; }
    else {
        c = gx_xcalloc(1, sizeof *c);
        c->rbuf = gx_xmalloc(RBUF);
    }
    char *rb = c->rbuf;
    unsigned gen = c->gen;
    memset(c, 0, sizeof *c);
    c->rbuf = rb;
    c->gen = gen;
    c->u = u;
    c->host = h;
    c->req = r;
    r->conn = c;
    list_add(&u->busy, c);
    gx_up_parser_init(&c->ps);
    int64_t now = gx_loop_mono(u->loop);
    c->deadline = r->connect_ms > 0 ? now + r->connect_ms : INT64_MAX;
    c->fd = socket(h->sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0) { c->state = C_FAILED; c->fail_err = errno; kick(c); return c; }
    u->nopen++;
    h->nconn++;
    int one = 1;
    setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    c->state = C_CONNECTING;
    if (connect(c->fd, (struct sockaddr *)&h->sa, h->salen) && errno != EINPROGRESS) {
        c->fail_err = errno;
        c->state = C_FAILED;
        kick(c);
        return c;
    }
    /* registered once for the connection's life: edge-triggered, both directions */
    if (gx_loop_watch(u->loop, c->fd, EPOLLIN | EPOLLOUT | EPOLLRDHUP | EPOLLET, on_event, c)) {
        c->fail_err = errno;
        c->state = C_FAILED;
        kick(c);
    }
    return c;
}

static void finish(gx_up_conn *c, int err, const char *why)
{
    gx_up *u = c->u;
    gx_up_req *r = c->req;
    int pool = !err && c->state == C_READING && c->ps.keepalive && c->roff == c->rlen && !c->rdhup && c->host->nidle < POOL_CAP;
    if (pool) {
        list_del(&u->busy, c);
        c->req = NULL;
        c->state = C_IDLE;
        c->reused = 1;
        c->roff = c->rlen = 0;
        c->deadline = gx_loop_mono(u->loop) + IDLE_KEEP_MS;
        list_add(&c->host->idle, c);
        c->host->nidle++;
    } else {
        conn_close(c);
    }
    if (!r) return;
    r->conn = NULL;
    if (why) snprintf(r->why, sizeof r->why, "%s", why);
    else r->why[0] = 0;
    r->cb->done(r->ud, err, r->got_bytes, r->why);
}

/* A connection failed before any byte of the answer: a pooled one is retried once on
 * a fresh connection (the server may have closed it while idle); else the caller hears. */
static void failed_early(gx_up_conn *c, int err, const char *why)
{
    gx_up_req *r = c->req;
    if (r && c->reused && !r->got_bytes && !r->retried) {
        r->retried = 1;
        r->sent = 0;
        c->req = NULL;
        conn_close(c);
        conn_open(c->u, r->host, r); /* a failure at once is reported by the tick */
        return;
    }
    finish(c, err, why);
}

/* Write what is left of the request (head and body in one writev). */
static void conn_send(gx_up_conn *c)
{
    gx_up_req *r = c->req;
    size_t total = r->head_len + r->body_len;
    while (r->sent < total) {
        struct iovec iov[2];
        int n = 0;
        if (r->sent < r->head_len) iov[n++] = (struct iovec){(char *)r->head + r->sent, r->head_len - r->sent};
        size_t boff = r->sent > r->head_len ? r->sent - r->head_len : 0;
        if (r->body_len > boff) iov[n++] = (struct iovec){(char *)r->body + boff, r->body_len - boff};
        ssize_t w = writev(c->fd, iov, n);
        if (w < 0) {
            if (errno == EAGAIN || errno == EINTR) return; /* EPOLLOUT (edge) says when */
            char why[100];
            snprintf(why, sizeof why, "sending the request: %s", strerror(errno));
            failed_early(c, GX_UP_EIO, why);
            return;
        }
        r->sent += (size_t)w;
    }
    c->state = C_READING;
    int64_t now = gx_loop_mono(c->u->loop);
    c->deadline = r->first_byte_ms > 0 ? now + r->first_byte_ms : INT64_MAX;
}

/* Hand buffered events to the request. Returns 0 when more input is needed, 1 when
 * this connection must not be touched further now (answer done, paused, cancelled). */
static int deliver(gx_up_conn *c)
{
    unsigned gen = c->gen;
    while (c->req && !c->req->paused) {
        size_t used;
        const char *d = NULL;
        size_t dn = 0;
        int ev = gx_up_parse(&c->ps, c->rbuf + c->roff, c->rlen - c->roff, &used, &d, &dn);
        c->roff += used;
        gx_up_req *r = c->req;
        if (ev == GX_UP_HEAD) r->cb->head(r->ud, c->ps.status, c->ps.ctype[0] ? c->ps.ctype : NULL);
        else if (ev == GX_UP_DATA) r->cb->body(r->ud, d, dn);
        else if (ev == GX_UP_END) { finish(c, GX_UP_OK, NULL); return 1; }
        else if (ev == GX_UP_ERR) { finish(c, GX_UP_EPROTO, c->ps.err); return 1; }
        else return 0;
        if (c->gen != gen) return 1; /* cancelled from the callback */
    }
    return 1;
}

/* Deliver what is buffered and read more until the answer ends, the socket is drained
 * (a short read: the next edge will say when there is more), or the request is paused
 * or cancelled. */
static void conn_read(gx_up_conn *c)
{
    gx_up *u = c->u;
    for (;;) {
        if (deliver(c)) return;
        if (c->roff == c->rlen) c->roff = c->rlen = 0;
        else if (c->roff) {
            memmove(c->rbuf, c->rbuf + c->roff, c->rlen - c->roff);
            c->rlen -= c->roff;
            c->roff = 0;
        }
        size_t room = RBUF - c->rlen;
        if (!room) { finish(c, GX_UP_EPROTO, "answer head too large"); return; }
        if (c->drained && !c->rdhup) { c->drained = 0; return; }
        ssize_t n = read(c->fd, c->rbuf + c->rlen, room);
        if (n > 0) {
            c->rlen += (size_t)n;
            c->req->got_bytes = 1;
            c->deadline = c->req->idle_ms > 0 ? gx_loop_mono(u->loop) + c->req->idle_ms : INT64_MAX;
            c->drained = (size_t)n < room;
            continue;
        }
        c->drained = 0;
        if (n < 0 && (errno == EAGAIN || errno == EINTR)) return;
        /* EOF or an error */
        if (!c->req->got_bytes) {
            failed_early(c, GX_UP_ECLOSED, n ? "connection reset before an answer" : "closed before an answer");
            return;
        }
        if (n == 0 && gx_up_parse_eof(&c->ps) == GX_UP_END) {
            deliver(c); /* the END of a body read until close */
            return;
        }
        finish(c, n ? GX_UP_EIO : GX_UP_ECLOSED, n ? strerror(errno) : c->ps.err);
        return;
    }
}

static void on_event(gx_loop *l, int fd, uint32_t ev, void *ud)
{
    (void)l; (void)fd;
    gx_up_conn *c = ud;
    unsigned gen = c->gen;
    c->drained = 0; /* an edge: something new arrived */
    if (ev & (EPOLLRDHUP | EPOLLHUP)) c->rdhup = 1;
    if (c->state == C_IDLE) { /* the server closed (or spoke out of turn): not reusable */
        if (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) conn_close(c);
        return;
    }
    if (c->state == C_CONNECTING) {
        int e = 0;
        socklen_t el = sizeof e;
        if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &el);
        if (e || (ev & (EPOLLERR | EPOLLHUP))) {
            char why[100];
            snprintf(why, sizeof why, "connect: %s", strerror(e ? e : ECONNREFUSED));
            finish(c, GX_UP_ECONNECT, why);
            return;
        }
        c->state = C_SENDING;
    }
    if (c->state == C_SENDING && (ev & EPOLLOUT)) conn_send(c);
    if (c->gen != gen) return;
    /* (while sending, the server may answer an error before reading the whole body) */
    if ((c->state == C_SENDING || c->state == C_READING) && (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)))
        conn_read(c);
}

/* "http://IP[:port][/path]" or localhost: the host (its pool) and the path prefix. */
static gx_up_host *host_of(gx_up *u, const char *url, const char **prefix)
{
    if (strncmp(url, "http://", 7)) return NULL;
    const char *h = url + 7, *e = h + strcspn(h, "/?#");
    if (*e == '?' || *e == '#') return NULL;
    char host[64];
    int port = 80;
    const char *hp = h, *he;
    if (*h == '[') {
        he = memchr(h, ']', (size_t)(e - h));
        if (!he) return NULL;
        hp = h + 1;
    } else {
        he = memchr(h, ':', (size_t)(e - h));
        if (!he) he = e;
    }
    if ((size_t)(he - hp) >= sizeof host || he == hp) return NULL;
    memcpy(host, hp, (size_t)(he - hp));
    host[he - hp] = 0;
    const char *pp = *h == '[' ? he + 1 : he;
    if (pp < e) {
        if (*pp != ':' || pp + 1 == e || e - pp > 6) return NULL;
        port = 0;
        for (const char *q = pp + 1; q < e; q++) {
            if (*q < '0' || *q > '9') return NULL;
            port = port * 10 + (*q - '0');
        }
        if (port < 1 || port > 65535) return NULL;
    }
    struct sockaddr_storage sa;
    memset(&sa, 0, sizeof sa);
    socklen_t salen;
    struct sockaddr_in *s4 = (struct sockaddr_in *)&sa;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&sa;
    if (!strcmp(host, "localhost")) snprintf(host, sizeof host, "127.0.0.1");
    if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        s4->sin_port = htons((uint16_t)port);
        salen = sizeof *s4;
    } else if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        s6->sin6_port = htons((uint16_t)port);
        salen = sizeof *s6;
    } else {
        return NULL; /* a name: resolving it would block */
    }
    *prefix = e;
    for (int i = 0; i < u->nhosts; i++)
        if (u->hosts[i].salen == salen && !memcmp(&u->hosts[i].sa, &sa, salen)) return &u->hosts[i];
    /* a new server: a fresh slot, or one whose server has no connection left (workload
     * replicas get a new port at each restart) */
    gx_up_host *n = NULL;
    if (u->nhosts < MAX_HOSTS) n = &u->hosts[u->nhosts++];
    else
        for (int i = 0; i < MAX_HOSTS && !n; i++)
            if (!u->hosts[i].nconn && !u->hosts[i].nidle) n = &u->hosts[i];
    if (!n) return NULL; /* libcurl takes it */
    memset(n, 0, sizeof *n);
    n->sa = sa;
    n->salen = salen;
    snprintf(n->hostport, sizeof n->hostport, "%.*s", (int)(e - h), h);
    return n;
}

int gx_up_handles(const char *url)
{
    static gx_up probe; /* host_of needs a table; this one only answers yes or no */
    const char *pre;
    probe.nhosts = 0;
    return url && host_of(&probe, url, &pre) != NULL;
}

int gx_up_start(gx_up *u, gx_up_req *r, const char *base_url, const char *path, const char *extra_header,
                const char *body, size_t body_len, int64_t connect_ms, int64_t first_byte_ms, int64_t idle_ms,
                const gx_up_cb *cb, void *ud)
{
    const char *prefix;
    gx_up_host *h = host_of(u, base_url, &prefix);
    if (!h) return -1;
    char len[24];
    const char *extra = extra_header && *extra_header ? extra_header : NULL;
    const char *parts[] = {"POST ", prefix, path, " HTTP/1.1\r\nHost: ", h->hostport,
                           "\r\nContent-Type: application/json\r\nContent-Length: ",
                           gx_fmt_u64(len, sizeof len, body_len), "\r\n", extra ? extra : "", extra ? "\r\n" : "", "\r\n"};
    size_t n = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {   /* no snprintf: once a request */
        size_t k = strlen(parts[i]);
        if (n + k >= sizeof r->head) return -1;
        memcpy(r->head + n, parts[i], k);
        n += k;
    }
    r->head[n] = 0;
    r->head_len = n;
    r->body = body;
    r->body_len = body_len;
    r->sent = 0;
    r->retried = r->got_bytes = r->paused = 0;
    r->connect_ms = connect_ms;
    r->first_byte_ms = first_byte_ms;
    r->idle_ms = idle_ms;
    r->cb = cb;
    r->ud = ud;
    r->host = h;
    r->why[0] = 0;
    gx_up_conn *c = h->idle;
    if (!c) {
        conn_open(u, h, r); /* the answer (or the failure) comes from the loop */
        return 0;
    }
    /* the most recently used idle connection (LIFO: the warmest) */
    list_del(&h->idle, c);
    h->nidle--;
    list_add(&u->busy, c);
    c->state = C_SENDING;
    c->drained = 0;
    c->req = r;
    r->conn = c;
    gx_up_parser_init(&c->ps);
    conn_send(c);
    if (r->conn == c && c->state == C_FAILED) kick(c);
    return 0;
}

void gx_up_pause(gx_up_req *r)
{
    r->paused = 1;
}

void gx_up_resume(gx_up *u, gx_up_req *r)
{
    if (!r->paused) return;
    r->paused = 0;
    gx_up_conn *c = r->conn;
    if (!c || c->state != C_READING) return;
    /* the wait for the reader does not count against the model server */
    c->deadline = r->idle_ms > 0 ? gx_loop_mono(u->loop) + r->idle_ms : INT64_MAX;
    c->drained = 0; /* an edge may have come and gone while paused */
    kick(c); /* the tick reads on */
}

void gx_up_cancel(gx_up *u, gx_up_req *r)
{
    (void)u;
    gx_up_conn *c = r->conn;
    if (!c) return;
    r->conn = NULL;
    c->req = NULL;
    conn_close(c);
}

int64_t gx_up_tick(gx_up *u)
{
    /* queued work: resumed readers, and connections that failed at start */
    gx_up_conn *q = u->kick;
    u->kick = u->kick_tail = NULL;
    while (q) {
        gx_up_conn *c = q;
        q = q->qnext;
        c->queued = 0;
        if (!c->req) { /* closed while queued */
            if (c->fd < 0) { c->next = u->spare; u->spare = c; u->nspare++; }
            continue;
        }
        if (c->state == C_FAILED) {
            char why[100];
            snprintf(why, sizeof why, "connect: %s", strerror(c->fail_err ? c->fail_err : ECONNREFUSED));
            finish(c, GX_UP_ECONNECT, why);
        } else if (c->state == C_READING && c->req) {
            conn_read(c);
        }
    }
    int64_t now = gx_loop_mono(u->loop);
    if (now >= u->next_scan) {
        u->next_scan = now + SCAN_MS;
        for (gx_up_conn *c = u->busy, *nx; c; c = nx) {
            nx = c->next;
            if (c->req && c->deadline <= now && !c->req->paused) {
                const char *why = c->state == C_CONNECTING ? "connect timed out"
                                  : c->req->got_bytes ? "no data from the model server in time" : "no answer in time";
                finish(c, GX_UP_ETIMEOUT, why);
                nx = u->busy; /* the callback may have changed the list: start over (rare) */
            }
        }
        for (int i = 0; i < u->nhosts; i++)
            for (gx_up_conn *c = u->hosts[i].idle, *nx; c; c = nx) {
                nx = c->next;
                if (c->deadline <= now) conn_close(c);
            }
    }
    while (u->nspare > 256) { /* keep some closed connections' buffers, not all */
        gx_up_conn *c = u->spare;
        u->spare = c->next;
        u->nspare--;
        free(c->rbuf);
        free(c);
    }
    if (u->kick) return 0;
    return u->busy || u->nopen ? (u->next_scan > now ? u->next_scan - now : 0) : -1;
}

void gx_up_counts(const gx_up *u, int *open, int *idle)
{
    int n = 0;
    for (int i = 0; i < u->nhosts; i++) n += u->hosts[i].nidle;
    *open = u->nopen;
    *idle = n;
}

const char *gx_up_strerror(int err)
{
    switch (err) {
    case GX_UP_OK: return "ok";
    case GX_UP_ECONNECT: return "cannot connect";
    case GX_UP_ECLOSED: return "connection closed";
    case GX_UP_ETIMEOUT: return "timed out";
    case GX_UP_EPROTO: return "bad answer";
    default: return "I/O error";
    }
}

void gx_up_free(gx_up *u)
{
    if (!u) return;
    while (u->busy) conn_close(u->busy);
    for (int i = 0; i < u->nhosts; i++)
        while (u->hosts[i].idle) conn_close(u->hosts[i].idle);
    for (gx_up_conn *c = u->kick; c;) {  /* closed, queued ones */
        gx_up_conn *n = c->qnext;
        c->queued = 0;
        if (c->fd < 0 && !c->req) { c->next = u->spare; u->spare = c; }
        c = n;
    }
    while (u->spare) {
        gx_up_conn *c = u->spare;
        u->spare = c->next;
        free(c->rbuf);
        free(c);
    }
    free(u);
}
