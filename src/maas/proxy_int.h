/* maas/proxy_int: what the two halves of the gateway's proxy share: a call (one
 * forwarded request) and the proxy's state, and the calls between the call's lifecycle
 * (proxy.c: admission, start and retry, the end, settlement, the answer to the client,
 * release) and the byte relay (proxy_io.c: libcurl in our loop, upstream.c's
 * callbacks, the sink both feed, back-pressure, the streamed body to the client).
 * Owns: the layout of a call.
 * Must not: be included outside src/maas/proxy*.c. */
#ifndef GX_MAAS_PROXY_INT_H
#define GX_MAAS_PROXY_INT_H
#include <curl/curl.h>
#include "maas/maas_int.h"
#include "net/upstream.h"

/* A call's progress toward its client. WAITING: nothing sent yet (the request is
 * deferred); STREAMING: a 200 stream's head is out, its body relayed as it comes;
 * DONE: the transfer ended and the outcome is settled. */
enum { WAITING, STREAMING, DONE };

/* The answer on its way to the client: appended at the end (lib/sbuf), sent from off
 * (a streaming client drains it as it comes; lib/sbuf keeps no read cursor). */
typedef struct gx_maas_out { gx_sbuf b; size_t off; } gx_maas_out;

typedef struct gx_maas_call gx_maas_call;
struct gx_maas_call {
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
    gx_maas_out out;
    gx_maas_sse sse;
    int state, refs, gone, paused;
    void *wake;
    double t0, t_first;
    int64_t last_send;            /* gx_loop_mono: the last bytes to a streaming client */
    int err_status;
    char err_type[40], err_code[40], err_msg[300];
    gx_maas_call *next, *prev;
};

struct gx_maas_proxy {
    gx_maas *m;
    CURLM *multi;
    gx_up *up;
    int curl_only;                /* GPUAAS_GATEWAY_UPSTREAM=curl: every transfer through libcurl */
    int64_t timer_at;             /* gx_loop_mono; -1: no curl timer */
    CURL **pool;
    size_t npool, cappool;
    gx_maas_call *calls;
    int ncalls;
    uint64_t pauses;              /* times an upstream was paused for a slow client */
};

/* proxy.c: the transfer ended (either transport): ok, or why not; got_bytes: any of
 * the answer arrived (else another replica may be tried). */
void gx_maas_proxy_end(gx_maas_call *c, int ok, int got_bytes, const char *why);
/* proxy.c: answer the waiting client now (gx_http_complete): the error, the buffered
 * answer, or a stream's head. */
void gx_maas_proxy_complete(gx_maas_call *c);
/* proxy.c: one holder of the call let go (the HTTP request, or its streamed body). */
void gx_maas_proxy_release(void *call);

/* proxy_io.c: libcurl's multi handle in the loop (0), or -1. */
int gx_maas_proxy_io_init(gx_maas_proxy *p);
void gx_maas_proxy_io_close(gx_maas_proxy *p);
/* Send the request to c->rep: through upstream.c when it can (plain http:// to an
 * address), else through libcurl. -1: it could not be started. */
int gx_maas_proxy_io_start(gx_maas_call *c);
/* Stop the transfer (the upstream sees its connection close); nothing if none. */
void gx_maas_proxy_io_stop(gx_maas_call *c);
/* The streamed body of a 200 stream, relayed from c->out with heartbeats. */
gx_stream gx_maas_proxy_io_stream(gx_maas_call *c);
/* Let a streaming client read what arrived. */
void gx_maas_proxy_io_wake(gx_maas_call *c);

#endif
