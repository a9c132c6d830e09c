/* http_int: what the two halves of the HTTP server share: the connection and server
 * structs, the limits, the output buffer, and the calls from the connection side
 * (http.c: sockets, reading, the request's lifecycle) into the response side
 * (http_resp.c: status line, headers, bodies, refusals, stream framing).
 * Owns: nothing at run time; the layout of a connection.
 * Must not: be included outside src/net/http*.c (callers see net/http.h only). */
#ifndef GX_HTTP_INT_H
#define GX_HTTP_INT_H
#include <netinet/in.h>
#include <arpa/inet.h>
#include <string.h>
#include "net/addrs.h"
#include "net/http.h"
#include "net/http_parse.h"
#include "lib/alloc.h"

#define IN_CAP (GX_HP_MAX_HEAD + 16384)  /* a full head, and room to read a body */
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
#define GX_HTTP_RID_MAX 64                /* the longest x-request-id a client's is echoed at */

/* A connection's state. C_HANDLER: the handler has the request (while it runs, and
 * after it deferred until gx_http_complete). */
enum { C_HEAD, C_BODY, C_HANDLER, C_SEND, C_STREAM, C_LINGER };

typedef struct gx_http_conn gx_http_conn;
struct gx_http_conn {
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
    int dead;                     /* failed inside gx_http_complete: close at the next run */
    int in_handler;               /* the handler is running (gx_http_complete waits for it) */
    int keep_alive, head_only, close_after;
    uint64_t body_left;           /* Content-Length bytes still to read */
    gx_hp_chunked ch;
    size_t body_cap, discarded;
    char nobody[1];
    char rid[GX_HTTP_RID_MAX + 1]; /* the request's x-request-id (gx_http_rid_set): every answer carries it */
    char *out;
    size_t out_off, out_len, out_cap;
    gx_stream s;
    int s_on, s_sleep, s_end, s_chunked;
    int64_t deadline;             /* on gx_loop_mono's clock; 0: none */
    int pending;
    uint64_t t0;                  /* the barrier's ticket when the request was dispatched */
    uint64_t hold;                /* the answer waits for synced >= hold; 0: not held */
    int idle;                     /* on the idle list: kept alive, waiting for a request */
    gx_http_conn *inext, *iprev;  /* the idle list, longest idle first (reclaimed first) */
    gx_http_conn *pnext, *pprev;  /* the pending list (work for gx_http_run) */
    gx_http_conn *next, *prev;    /* every connection */
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
    gx_http_conn *conns;
    int nconns, nstreams;
    int max_conns, max_per_addr;  /* gx_http_limits, defaults filled in */
    gx_addrs addrs;               /* connections per client address */
    gx_http_conn *ihead, *itail;  /* idle keep-alive connections */
    gx_http_conn *phead, *ptail;
    uint64_t sweep_timer;
    uint64_t accept_timer;        /* re-enables accept after EMFILE */
    int64_t date_sec;
    char date[40];
    uint64_t (*ticket)(void *);   /* gx_http_set_barrier, or NULL */
    void *ticket_ud;
    uint64_t synced;
    int nheld;
    uint64_t rid_seed, rid_n;     /* request ids made here: a random seed, a counter */
};

/* Room for `more` bytes at the end of the output buffer (doubling: appends are cheap). */
static inline void gx_http_out_reserve(gx_http_conn *c, size_t more)
{
    if (c->out_len + more <= c->out_cap) return;
    size_t cap = c->out_cap ? c->out_cap : 4096;
    while (cap < c->out_len + more) cap *= 2;
    c->out = gx_xrealloc(c->out, cap);
    c->out_cap = cap;
}

static inline void gx_http_out_add(gx_http_conn *c, const void *p, size_t n)
{
    gx_http_out_reserve(c, n);
    memcpy(c->out + c->out_len, p, n);
    c->out_len += n;
}

/* http_resp.c: append the whole answer (status line, headers, body) to c's output;
 * a stream gets its head here and its body from gx_http_resp_pump. */
void gx_http_resp_build(gx_http_conn *c, gx_resp *r);
/* c->rid for the request being answered: the client's own x-request-id when parsed
 * (c->hp is this request's) and it is 1 to GX_HTTP_RID_MAX characters of
 * [A-Za-z0-9._:-], else a new one, "req_" and 32 hex digits (OpenAI's form). */
void gx_http_rid_set(gx_http_conn *c, int parsed);
/* A new request id into out (at least GX_HTTP_RID_MAX + 1 bytes). */
void gx_http_rid_new(gx_http *h, char *out);
/* A refusal by the server itself, in the envelope its client reads (OpenAI's on the
 * prefix surface, else the daemon's). parsed: c->hp belongs to this request. */
void gx_http_resp_refusal(gx_http_conn *c, gx_resp *r, int status, const char *msg, int parsed);
/* Fill c's output with what its stream has, chunk-framed; sets s_sleep or s_end. */
void gx_http_resp_pump(gx_http_conn *c);

#endif
