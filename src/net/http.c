/* http: our own small HTTP/1.1 server, driven by gx_loop: the connection side
 * (http_resp.c writes the answers' bytes, http_parse.c parses heads).
 * Why we own it: the gateway path (a deferred answer per request) cost libmicrohttpd
 * a suspend (epoll_ctl DEL), a resume (eventfd write + read + epoll_ctl ADD) and a
 * read-until-EAGAIN per request; profiling put the gateway at 0.39 of nginx's
 * proxy_pass throughput, mostly in those syscalls. Here a request costs one recv and
 * one send: level-triggered epoll, one recv per readiness, the head parsed in place
 * (http_parse.c), status line + headers + body built in one buffer and sent with one
 * send(); EPOLLOUT is registered only while a write is partial, and a deferred answer
 * (gx_http_complete) is written at once without touching the epoll registration.
 * Owns: the listening socket, connections (keep-alive, pipelining handled one request
 * at a time, 100-continue, HEAD), body limits, a request's lifecycle (read, handler
 * entered once, deferred or not, answer, cleanup), streams' wakeups, timeouts (header
 * read, idle keep-alive, body, stalled writes; streams and deferred requests are
 * exempt; all on the monotonic clock), the connection limits (in all and per client
 * address, an idle keep-alive connection given up for a new one before a 503).
 * Does not: TLS (put a TLS-terminating proxy such as nginx or haproxy in front),
 * HTTP/2, request trailers (read and dropped), absolute-form targets.
 * Must not: call back into its callers' cleanup (async_free, stream free) from inside
 * gx_http_complete or the wake functions: those are called from the callers' own
 * callbacks, so such work waits for gx_http_run (the loop's before-sleep hook). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "net/http_int.h"

typedef gx_http_conn conn;

static int kick(conn *c);
static void on_conn(gx_loop *l, int fd, uint32_t ev, void *ud);

const char *gx_req_query(const gx_req *r, const char *key) { return gx_hp_query(&((conn *)r->conn)->hp, key); }
const char *gx_req_header(const gx_req *r, const char *name) { return gx_hp_header(&((conn *)r->conn)->hp, name); }

const char *gx_req_peer(const gx_req *r)
{
    conn *c = r->conn;
    if (!c->peer_s[0]) inet_ntop(AF_INET, &c->peer.sin_addr, c->peer_s, sizeof c->peer_s);
    return c->peer_s;
}

/* ---- connection plumbing ---------------------------------------------------------- */

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

/* Idle keep-alive connections, longest idle first: what a connection over a limit
 * may take the place of (nginx likewise reuses idle keep-alive connections when it
 * runs out). A connection that never sent a request is not on it: its client may be
 * sending one now, and clients retry a request only on a connection they reused. */
static void idle_add(conn *c)
{
    gx_http *h = c->h;
    if (c->idle) return;
    c->idle = 1;
    c->inext = NULL;
    c->iprev = h->itail;
    if (h->itail) h->itail->inext = c;
    else h->ihead = c;
    h->itail = c;
}

static void idle_del(conn *c)
{
    if (!c->idle) return;
    gx_http *h = c->h;
    if (c->iprev) c->iprev->inext = c->inext;
    else h->ihead = c->inext;
    if (c->inext) c->inext->iprev = c->iprev;
    else h->itail = c->iprev;
    c->idle = 0;
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
    if (c->out_len > c->out_off && !c->hold) ev |= EPOLLOUT;
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
    idle_del(c);
    if (c->hold) h->nheld--;
    request_release(c);
    gx_addrs_dec(&h->addrs, c->peer.sin_addr.s_addr);
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
    if (c->hold) return 0;   /* the barrier: sent by gx_http_release */
    while (c->out_len > c->out_off) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) break;
            return -1;
        }
        c->out_off += (size_t)n;
        if (c->state == C_SEND) c->deadline = gx_loop_mono(c->h->loop) + SEND_MS;
    }
    if (c->out_off == c->out_len) {
        c->out_off = c->out_len = 0;
        if (c->out_cap > OUT_KEEP) { free(c->out); c->out = NULL; c->out_cap = 0; }
    }
    return 0;
}

/* Queue the handler's answer, and take its stream if it has one. */
static void answer(conn *c, gx_resp *r)
{
    gx_http *h = c->h;
    if (r->defer) { r->defer = 0; gx_http_resp_refusal(c, r, 500, "the answer was deferred twice", 1); }
    if (c->close_after) c->keep_alive = 0;
    gx_http_resp_build(c, r);
    c->deadline = 0;
    if (r->stream.read) {
        c->s = r->stream;
        c->s_on = 1;
        c->s_sleep = c->s_end = 0;
        h->nstreams++;
        if (c->head_only) {
            /* no body: the stream is released with the request, at its end (not here,
             * which may be inside gx_http_complete) */
            c->state = C_SEND;
            c->deadline = gx_loop_mono(h->loop) + SEND_MS;
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
        c->deadline = gx_loop_mono(h->loop) + SEND_MS;
        if (h->ticket) {
            uint64_t now = h->ticket(h->ticket_ud);
            if (now > c->t0 && now > h->synced) { c->hold = now; h->nheld++; }
        }
    }
    json_decref(r->json);
    free(r->text);
    r->json = NULL;
    r->text = NULL;
}

/* An answer from the server itself (bad framing, limits, timeouts): the connection
 * closes. parsed: as for gx_http_resp_refusal. */
static void answer_error(conn *c, int status, const char *why, int parsed)
{
    gx_resp r;
    memset(&r, 0, sizeof r);
    c->t0 = c->h->ticket ? c->h->ticket(c->h->ticket_ud) : 0;   /* no change of its own */
    if (!parsed) gx_http_rid_set(c, 0);   /* else start_request set this request's */
    gx_http_resp_refusal(c, &r, status, why, parsed);
    c->close_after = 1;
    c->head_only = 0;
    answer(c, &r);
}

/* A complete request (or one whose over-limit body is being refused): the handler is
 * entered, once. It answers in r, or defers (r.defer) and answers later through
 * gx_http_complete, which it may also have called already before returning. */
static void dispatch(conn *c)
{
    gx_http *h = c->h;
    c->t0 = h->ticket ? h->ticket(h->ticket_ud) : 0;
    if (!c->req.body) {
        c->nobody[0] = 0;
        c->req.body = c->nobody;
    }
    gx_resp r;
    memset(&r, 0, sizeof r);
    if (c->req.body_too_large && !c->own_413) {
        gx_resp_errorf(&r, 413, "request body larger than the limit of %zu bytes (limits.maxBodyBytes)", h->limit);
        answer(c, &r);
        return;
    }
    c->state = C_HANDLER;
    c->deadline = 0;
    c->in_handler = 1;
    h->fn(&c->req, &r, h->ud);
    c->in_handler = 0;
    if (c->state != C_HANDLER || r.defer) {
        /* answered by gx_http_complete already (kick sends it), or to be */
        json_decref(r.json);
        free(r.text);
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
        c->req.body = gx_xrealloc(c->req.body, cap);
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
    gx_http_rid_set(c, !rc);   /* a head that did not parse has no header to trust */
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
        c->req.body = gx_xmalloc(c->body_cap);
        c->req.body[0] = 0;
    }
    if (c->hp.body == GX_HP_BODY_NONE) { dispatch(c); return; }
    if (c->hp.expect_continue && c->in_len == c->in_off) {
        static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
        gx_http_out_add(c, cont, sizeof cont - 1);
    }
    c->state = C_BODY;
    c->deadline = gx_loop_mono(h->loop) + BODY_MS;
}

/* Take body bytes from the input buffer. */
static void read_body(conn *c)
{
    size_t avail = c->in_len - c->in_off;
    if (!avail) return;
    c->deadline = gx_loop_mono(c->h->loop) + BODY_MS;
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
        c->deadline = gx_loop_mono(h->loop) + LINGER_MS;
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
    c->deadline = gx_loop_mono(h->loop) + (left ? HEAD_MS : IDLE_MS);
    if (!left) idle_add(c);
    return 0;
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
                if (c->in_len && c->deadline - gx_loop_mono(h->loop) > HEAD_MS)
                    c->deadline = gx_loop_mono(h->loop) + HEAD_MS;
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
            gx_http_resp_pump(c);
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
        idle_del(c);
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
    int64_t now = gx_loop_mono(l);
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

/* A connection over a limit gets a 503 it can read, then the close: one send, nothing
 * kept (a client hammering at its limit costs an accept and a close each time). Its
 * target is not read yet, so the body is the daemon's envelope; OpenAI clients still
 * find error.message in it. The length is counted, not written by hand. */
static void refuse(gx_http *h, int fd, const char *why)
{
    char body[256], msg[600], rid[GX_HTTP_RID_MAX + 1];
    gx_http_rid_new(h, rid);
    int b = snprintf(body, sizeof body,
                     "{\"error\": {\"code\": 503, \"reason\": \"Unavailable\", \"message\": \"%s, retry later\"}}\n", why);
    int n = b < 0 ? -1 : snprintf(msg, sizeof msg,
                     "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
                     "Retry-After: 1\r\nx-request-id: %s\r\nConnection: close\r\n\r\n%s", b, rid, body);
    if (n > 0 && (size_t)n < sizeof msg && send(fd, msg, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) { /* nothing more to do */ }
    close(fd);
}

/* Make room for a new connection by closing the longest-idle keep-alive connection
 * (of addr when one is given, network byte order). 0 when there is none to close. */
static int reclaim_idle(gx_http *h, const uint32_t *addr)
{
    for (conn *c = h->ihead; c; c = c->inext)
        if (!addr || c->peer.sin_addr.s_addr == *addr) {
            close_conn(c);
            return 1;
        }
    return 0;
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
                if (!h->accept_timer) h->accept_timer = gx_loop_at(l, gx_loop_mono(l) + 100, accept_again, h);
            }
            return;
        }
        /* the client's own limit first: a greedy address is turned away before it can
         * take an idle connection of someone else's under the total */
        uint32_t addr = sa.sin_addr.s_addr;
        if (gx_addrs_get(&h->addrs, addr) >= (uint32_t)h->max_per_addr && !reclaim_idle(h, &addr)) {
            refuse(h, cfd, "too many connections from this address");
            continue;
        }
        if (h->nconns >= h->max_conns && !reclaim_idle(h, NULL)) {
            refuse(h, cfd, "too many connections");
            continue;
        }
        conn *c = gx_xcalloc(1, sizeof *c);
        char *in = gx_xmalloc(IN_CAP);
        c->in = in;
        c->h = h;
        c->fd = cfd;
        c->peer = sa;
        c->state = C_HEAD;
        c->deadline = gx_loop_mono(l) + IDLE_MS;
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
        gx_addrs_inc(&h->addrs, addr);
        if (!h->sweep_timer) h->sweep_timer = gx_loop_at(l, gx_loop_mono(l) + 1000, sweep, h);
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
 * next pipelined request, a stream's body) waits for gx_http_run. Inside the handler
 * (the answer was ready before it returned) only the bytes are queued: the handler's
 * caller, dispatch, returns to kick, which sends them. */
int gx_http_complete(gx_req *req, gx_resp *resp)
{
    conn *c = req ? req->conn : NULL;
    if (!c || c->state != C_HANDLER) {
        json_decref(resp->json);
        free(resp->text);
        resp->json = NULL;
        resp->text = NULL;
        return -1;
    }
    answer(c, resp);
    memset(&resp->stream, 0, sizeof resp->stream);   /* the connection's now */
    if (c->in_handler) return 0;
    if (c->state == C_SEND) {
        if (flush(c) < 0) c->dead = 1;
        else if (c->out_len > c->out_off) update_interest(c);
    }
    add_pending(c);
    return 0;
}

void gx_http_set_barrier(gx_http *h, uint64_t (*ticket)(void *ud), void *ud)
{
    h->ticket = ticket;
    h->ticket_ud = ud;
}

/* Held answers now covered go out at the next gx_http_run, in the order their
 * connections were opened (not that of their commits: each waited for its own). */
void gx_http_release(gx_http *h, uint64_t synced)
{
    if (synced > h->synced) h->synced = synced;
    if (!h->nheld) return;
    for (conn *c = h->conns; c; c = c->next)
        if (c->hold && c->hold <= h->synced) {
            c->hold = 0;
            h->nheld--;
            add_pending(c);
        }
}

int gx_http_held(const gx_http *h) { return h->nheld; }

int gx_req_header_at(const gx_req *r, int i, const char **name, const char **value)
{
    const gx_hp_req *hp = &((conn *)r->conn)->hp;
    if (i < 0 || i >= hp->nh) return -1;
    *name = hp->h[i].name;
    *value = hp->h[i].value;
    return 0;
}

int gx_req_query_at(const gx_req *r, int i, const char **key, const char **value)
{
    const gx_hp_req *hp = &((conn *)r->conn)->hp;
    if (i < 0 || i >= hp->nq) return -1;
    *key = hp->q[i].name;
    *value = hp->q[i].value;
    return 0;
}

/* The connection is closed as the handler returns (dead), which closes only our
 * descriptor: the caller's duplicate keeps the socket. */
int gx_http_takeover(gx_req *req)
{
    conn *c = req ? req->conn : NULL;
    if (!c || !c->in_handler || c->state != C_HANDLER || c->in_len > c->in_off || c->req.body_too_large) return -1;
    int fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 3);
    if (fd < 0) return -1;
    c->dead = 1;
    return fd;
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

gx_http *gx_http_start(gx_loop *loop, const char *host, int port, const gx_http_limits *lim,
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
    gx_http *h = gx_xcalloc(1, sizeof *h);
    h->loop = loop;
    h->lfd = fd;
    h->port = ntohs(sa.sin_port);
    h->limit = lim && lim->body_bytes ? lim->body_bytes : GX_HTTP_BODY_DEFAULT;
    h->max_conns = lim && lim->conns > 0 ? lim->conns : GX_HTTP_CONNS_DEFAULT;
    h->max_per_addr = lim && lim->conns_per_addr > 0 ? lim->conns_per_addr : GX_HTTP_CONNS_PER_ADDR_DEFAULT;
    if (h->max_per_addr > h->max_conns) h->max_per_addr = h->max_conns;
    gx_addrs_init(&h->addrs, (size_t)h->max_conns);
    h->fn = fn;
    h->ud = ud;
    h->date_sec = -1;
    if (gx_loop_watch(loop, fd, EPOLLIN, on_listen, h)) {
        close(fd);
        gx_addrs_free(&h->addrs);
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
    gx_addrs_free(&h->addrs);
    free(h);
}
