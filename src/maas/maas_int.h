/* maas_int: what the gateway's files share (keys.c, limits.c, models.c, proxy.c,
 * sse.c, usage.c, maas.c). Not for use outside src/maas.
 * Lifetimes: tiers (with their users' buckets), keys, models and replicas are never
 * freed while the daemon runs (a delete marks them gone), so an in-flight request may
 * keep pointers to them. */
#ifndef GX_MAAS_INT_H
#define GX_MAAS_INT_H
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "net/http.h"
#include "lib/err.h"
#include "lib/sbuf.h"
#include "lib/strmap.h"
#include "lib/wlkey.h"
#include "store/store.h"
#include "maas/maas.h"
#include "maas/body.h"

#define GX_MAAS_WIN 4          /* windows per kind (e.g. per minute and per day) */
#define GX_MAAS_MAX_REPLICAS 16
#define GX_MAAS_HASH 32
#define GX_MAAS_MODEL_NAME_MAX 50   /* a Model's name: a DNS-1123 subdomain this long at most */

/* ---- limits.c: windows, buckets, reservation ------------------------------------ */

typedef struct gx_maas_wspec { int64_t limit, len_ms; } gx_maas_wspec;

typedef struct gx_maas_limits {
    gx_maas_wspec req[GX_MAAS_WIN], tok[GX_MAAS_WIN];
    int nreq, ntok;
    int max_concurrent;        /* 0: none */
} gx_maas_limits;

/* The counters of one subject (a key, or a whole tier). Fixed windows aligned on
 * multiples of their length (like Limitador); reserved tokens are window-independent
 * so that in-flight reservations still count after a window rolls over. */
typedef struct gx_maas_bucket {
    int64_t req_start[GX_MAAS_WIN], req_used[GX_MAAS_WIN];
    int64_t tok_start[GX_MAAS_WIN], tok_used[GX_MAAS_WIN];
    int64_t req_len[GX_MAAS_WIN], tok_len[GX_MAAS_WIN];  /* each slot's window (0: empty), so that
                                                         * a bucket read back at start, or a tier whose
                                                         * windows changed, lines up by length */
    int64_t tok_reserved;
    int inflight;
    int dirty;                 /* used counts changed since they were last saved */
} gx_maas_bucket;

enum { GX_MAAS_OK = 0, GX_MAAS_LIM_REQUESTS, GX_MAAS_LIM_TOKENS, GX_MAAS_LIM_CONCURRENCY, GX_MAAS_LIM_TOO_BIG };

/* What a request asks of the token budgets. */
typedef struct gx_maas_ask {
    int64_t prompt;            /* the prompt's tokens at most (gx_maas_prompt_bound) */
    int64_t choices;           /* completions it generates (n, times the prompts of a batch); 0: none
                                * (embeddings) */
    int64_t want;              /* the completion limit it names, per completion; 0: none */
    int64_t dflt;              /* when it names none, the API's own default (16 on /v1/completions),
                                * a cap below the tier's; 0: none */
} gx_maas_ask;

/* The answer of an admission: what to say in x-ratelimit-* and retry-after, and what
 * was granted. Each kind's headers are of its tightest window (least remaining) across
 * the key's, the user's and the tier's shared budget; on a refusal, of the window that
 * refused. */
typedef struct gx_maas_verdict {
    int result;                /* GX_MAAS_OK or GX_MAAS_LIM_* */
    int never;                 /* refused for good: no retry can succeed (x-should-retry: false) */
    int64_t lim_req, rem_req, reset_req_ms;   /* -1 lim: no request window */
    int64_t lim_tok, rem_tok, reset_tok_ms;
    int64_t retry_ms;
    int64_t grant;             /* admitted: completion tokens granted per completion (0: none) */
    int64_t cost;              /* admitted: tokens reserved (settle with it) */
    char msg[320];
} gx_maas_verdict;

/* The counters of one user across all their keys of a tier (spec.userLimits); user
 * names the subject in a refusal. */
typedef struct gx_maas_user_bucket {
    gx_maas_bucket b;
    char user[64];
} gx_maas_user_bucket;

typedef struct gx_maas_tier {
    char name[64];
    int present;
    gx_maas_limits per_key;    /* spec.limits: every key of the tier has this budget */
    gx_maas_limits per_user;   /* spec.userLimits: each user, all their keys of the tier together */
    gx_maas_limits shared;     /* spec.sharedLimits: all keys of the tier together */
    gx_maas_bucket bucket;     /* counters of the shared limits */
    gx_strmap user_buckets;    /* user -> gx_maas_user_bucket *, made on first use, freed with the
                                * tier (never while the daemon runs: calls keep pointers) */
    int dirty;                 /* this bucket, a user's or one of its keys' changed since the last save */
    int64_t max_key_life_ms;
    int64_t max_tokens;        /* maxTokensPerRequest: the most one completion is granted */
    json_t *users, *namespaces;  /* who may create keys of this tier (NULL: everyone) */
} gx_maas_tier;

/* Parse a Tier manifest into t (name and counters untouched). */
int gx_maas_tier_parse(const json_t *doc, gx_maas_tier *t, gx_err *err);
/* Admit a request costing cost tokens against the key's and the tier's budgets, all or
 * nothing (no user budget). On success the request, the reservation and the concurrency
 * slot are taken. */
int gx_maas_admit(gx_maas_tier *t, gx_maas_bucket *kb, int64_t cost, int64_t now, gx_maas_verdict *v);
/* Admit a request by what it asks, against the key's, the user's (ub; NULL: none) and the
 * tier's budgets, all or nothing: one that names a completion limit reserves the prompt
 * and min(limit, cap) per completion, or is refused; one that names none is granted
 * min(cap, what every token window has left after the prompt, per completion), and is
 * refused only when that is 0. v->grant and v->cost say what was taken. */
int gx_maas_admit_ask(gx_maas_tier *t, gx_maas_bucket *kb, gx_maas_user_bucket *ub, const gx_maas_ask *a,
                      int64_t now, gx_maas_verdict *v);
/* Give back the reservation and charge the actual tokens, to the same buckets the
 * admission took (ub as given to gx_maas_admit_ask); refund_request undoes the request
 * count (the upstream never answered). */
void gx_maas_settle(gx_maas_tier *t, gx_maas_bucket *kb, gx_maas_user_bucket *ub, int64_t reserved,
                    int64_t actual, int refund_request, int64_t now);
/* What a served request is charged: the usage the upstream reported (*prompt,
 * *completion), cut to the reservation when it reports more (the prompt first, then the
 * completion gets the rest). Returns the tokens cut (0 when it kept to the reservation). */
int64_t gx_maas_charge_cap(int64_t reserved, int64_t *prompt, int64_t *completion);
/* Does l hold any window or a concurrency limit? */
int gx_maas_limits_any(const gx_maas_limits *l);
/* The user's bucket in the tier, made on first use; NULL when the tier has no userLimits
 * (the admission then skips it). */
gx_maas_user_bucket *gx_maas_tier_user(gx_maas_tier *t, const char *user);
/* The same, made whatever the limits (windows read back at start, before the Tier). */
gx_maas_user_bucket *gx_maas_tier_user_ensure(gx_maas_tier *t, const char *user);
/* Free the tier's user buckets (at the daemon's end). */
void gx_maas_tier_free_users(gx_maas_tier *t);
/* "1s", "20ms", "6m0s" (OpenAI's reset format). */
void gx_maas_fmt_reset(int64_t ms, char *out, size_t n);
/* Put back a window saved before a restart (tokens: 0 requests, 1 tokens); the next
 * admission lines it up with the tier's windows. -1 when the bucket has no free slot. */
int gx_maas_bucket_restore(gx_maas_bucket *b, int tokens, int64_t len_ms, int64_t start_ms, int64_t used);

/* ---- keys.c ------------------------------------------------------------------------ */

typedef struct gx_maas_key {
    char id[16], name[64], user[64], ns[64], tier[64];
    unsigned char hash[GX_MAAS_HASH];
    int64_t created_ms, expires_ms, revoked_ms;
    gx_maas_bucket bucket;
} gx_maas_key;

typedef struct gx_maas_keys gx_maas_keys;
gx_maas_keys *gx_maas_keys_open(gx_store *st, const char *data_dir, const long caps[3], gx_err *err);
void gx_maas_keys_free(gx_maas_keys *k);
/* The key a bearer value names, if it is valid now; else NULL with why (for 401). */
gx_maas_key *gx_maas_keys_check(gx_maas_keys *k, const char *bearer, int64_t now, const char **why);
/* Create and commit; the full key is written to out (shown once). */
gx_maas_key *gx_maas_keys_create(gx_maas_keys *k, const char *name, const char *user, const char *ns,
                                 const char *tier, int64_t now, int64_t expires_ms, char *out, size_t outn,
                                 gx_err *err);
gx_maas_key *gx_maas_keys_get(gx_maas_keys *k, const char *id);
int gx_maas_keys_revoke(gx_maas_keys *k, gx_maas_key *key, int64_t now, gx_err *err);
/* Revoke every key of user; returns how many. */
int gx_maas_keys_revoke_user(gx_maas_keys *k, const char *user, int64_t now);
/* [{id,name,user,namespace,tier,createdAt,expiresAt,revokedAt,state}] of user (NULL: all). */
json_t *gx_maas_keys_list(gx_maas_keys *k, const char *user, int64_t now);
json_t *gx_maas_key_view(const gx_maas_key *key, int64_t now);
/* Every key, for the periodic save of their windows: i from 0 to gx_maas_keys_count - 1. */
size_t gx_maas_keys_count(const gx_maas_keys *k);
gx_maas_key *gx_maas_keys_at(gx_maas_keys *k, size_t i);

/* ---- models.c ------------------------------------------------------------------------ */

typedef struct gx_maas_replica {
    char url[256];             /* base URL, no trailing slash ("http://127.0.0.1:8001") */
    int ready;
    int outstanding;           /* requests in flight to it */
    int retired;
    int64_t next_probe_ms;
    void *probe;               /* CURL * of the readiness probe in flight */
    void *probe_hdrs;          /* its header list (the upstream's API key), freed when it ends */
    /* its /metrics, scraped while ready (scrape.c keeps the vllm:* families) */
    void *scrape;              /* CURL * of the scrape in flight (at most one) */
    void *scrape_hdrs;
    struct gx_maas_scrape_in *scrape_in;  /* the answer being received */
    char *scraped;             /* the kept families (gx_maas_scrape_filter), NULL: none */
    int64_t scraped_at, next_scrape_ms;
    /* workload-backed */
    gx_wlkey wl;               /* its Job's key: namespace and "maas-MODEL-I" */
    int port;
    int wl_state;              /* 0 none, 1 submitted, 2 stopping (waiting to delete) */
    int64_t start_at;          /* restart after back-off */
    char created[40];          /* createdAt of its Job, recorded so a restarted daemon adopts it */
    int64_t backoff_ms;
    int restarts;
    /* why it is not serving: the last failed readiness probe or request, in words
     * ("connection refused", "answered HTTP 500"); "" before the first probe ended */
    char why[160];
    int probed;                /* a readiness probe has ended since the replica was made */
    /* workload-backed: a server that can never start (a missing binary, a bad flag) */
    int ever_ready;            /* the current server answered its readiness probe once */
    int starts_failed;         /* servers in a row that ended without ever being ready */
    int failed;                /* given up after GX_MAAS_START_TRIES of those: no more restarts,
                                * its last Job (pods and log) kept until the Model changes */
    char fail_reason[256];     /* how the last one ended ("exited with code 127") */
    char fail_log[1024];       /* the tail of its log */
} gx_maas_replica;

/* Servers in a row that may end without ever becoming ready before the replica is
 * reported Failed instead of restarted again (with back-off: 1 s, 2 s between). */
#define GX_MAAS_START_TRIES 3

typedef struct gx_maas_model {
    char name[128];
    int present;
    json_t *spec;              /* owned copy */
    json_t *served, *tiers;    /* borrowed from spec */
    int workload;              /* backend: 0 spec.url(s), 1 spec.workload */
    gx_maas_replica *rep[GX_MAAS_MAX_REPLICAS];
    int nrep;
    size_t max_body;
    char ready_path[128];
    int min_replicas;          /* 0: scale to zero when idle */
    int wanted;                /* workload replicas should run */
    int64_t idle_ms, last_request_ms;
    uint64_t requests;
    char auth[600];            /* "Authorization: Bearer ..." for the upstream, from spec.apiKeyFile; "" none */
    uint64_t scrapes_ok, scrapes_failed;  /* of its replicas' /metrics */
} gx_maas_model;

int gx_maas_model_validate(const json_t *doc, gx_err *err);
void gx_maas_models_apply(gx_maas *m, const json_t *doc);
int gx_maas_models_delete(gx_maas *m, const char *name, gx_err *err);
gx_maas_model *gx_maas_models_find(gx_maas *m, const char *served);
/* The ready replica with the fewest requests in flight, skipping `not`; NULL if none. */
gx_maas_replica *gx_maas_models_pick(gx_maas_model *md, const gx_maas_replica *not);
int gx_maas_model_allows(const gx_maas_model *md, const char *tier);
/* Probes and workloads (now: gx_maas_mono_ms); returns ms until it wants to run again. */
int64_t gx_maas_models_tick(gx_maas *m, int64_t now);
/* A readiness probe ended; why: the failure in words when !ok. */
void gx_maas_models_probe_done(gx_maas *m, void *easy, int ok, const char *why);
/* A scrape of a replica's /metrics ended (ok: 2xx, complete, within the size limit). */
void gx_maas_models_scrape_done(gx_maas *m, void *easy, int ok);
/* Append gpuaas_gateway_scrapes_total and the ready replicas' vllm:* families (fresher
 * than 60 s by now, gx_maas_mono_ms; merged per family) to text (malloc'd; returns it, moved). */
char *gx_maas_models_metrics(gx_maas *m, char *text, int64_t now);
void gx_maas_models_free(gx_maas *m);

/* ---- health.c: why a model cannot serve ------------------------------------------ */

/* {name, servedNames, tiers, backend, state, readyReplicas, replicas, requests,
 * replicaStatus[], and message (+ log) when it is Failed or Unavailable}. state: Ready,
 * Starting, ScaledToZero, Failed (every replica's server gave up starting) or
 * Unavailable (a url model whose upstreams all fail their readiness probe). */
json_t *gx_maas_model_view(const gx_maas_model *md);
/* The 503 for a model with no ready replica, in OpenAI's envelope: model_failed (with
 * x-should-retry: false), upstream_unavailable (a url model), both naming the Model as
 * `gpuaas models` does, or model_starting naming what the client asked for (name); the
 * last two with retry-after. */
void gx_maas_unavailable(gx_resp *resp, const gx_maas_model *md, const char *name, int cold);
/* Give up on a workload replica whose servers never became ready (view: its ended Job
 * as gx_d_view shows it): record how it ended and the tail of its log, and say so on
 * stderr. */
void gx_maas_replica_fail(gx_maas *m, const gx_maas_model *md, gx_maas_replica *r, const json_t *view);

/* ---- sse.c: the event stream from the upstream ------------------------------------ */

typedef struct gx_maas_sse {
    char *pend;                /* an incomplete event */
    size_t plen, pcap;
    int strip_usage;           /* the client did not ask for usage: hide it */
    int have_usage;
    int64_t prompt, completion;
    int64_t content_chunks, content_bytes;
} gx_maas_sse;

/* Feed upstream bytes; complete events are appended to out (usage chunk handled as the
 * issue says). flush=1 at the end of the stream passes on what is left. */
void gx_maas_sse_feed(gx_maas_sse *s, const char *p, size_t n, gx_sbuf *out, int flush);
void gx_maas_sse_free(gx_maas_sse *s);
/* Usage of a non-streamed answer; 0 when found. */
int gx_maas_usage_of(const char *body, size_t len, int64_t *prompt, int64_t *completion, int64_t *content_bytes);
/* A prompt's token estimate from the request (bytes of text / 3, plus per message). */
int64_t gx_maas_prompt_estimate(const gx_maas_body *b);
/* An upper bound on the prompt's tokens under any byte-level tokenizer and a template
 * that adds only its special tokens (the argument is at the definition, in sse.c): what
 * admission reserves for the prompt. */
#define GX_MAAS_TPL_PER_MESSAGE 6
#define GX_MAAS_TPL_PER_PROMPT 8
int64_t gx_maas_prompt_bound(const gx_maas_body *b);

/* ---- usage.c: records and metrics ---------------------------------------------------- */

typedef struct gx_maas_record {
    int64_t ts_ms;
    char key_id[16], user[64], ns[64], model[128], tier[64], endpoint[24];
    int64_t prompt, completion;
    int estimated, stream, status;
    double latency_s, ttft_s;  /* ttft < 0: none */
} gx_maas_record;

typedef struct gx_maas_usage gx_maas_usage;
gx_maas_usage *gx_maas_usage_new(gx_store *st);
void gx_maas_usage_free(gx_maas_usage *u);
void gx_maas_usage_add(gx_maas_usage *u, const gx_maas_record *r);
/* A request refused after its key was accepted (429, 403, 404, 413, 503...): its record
 * is written like any other (no tokens), and a 429 counts in limited_calls. */
void gx_maas_usage_refused(gx_maas_usage *u, const gx_maas_record *r);
/* Write pending records when due (now: gx_maas_mono_ms; one transaction). */
void gx_maas_usage_flush(gx_maas_usage *u, int64_t now, int force);
/* An upstream reported `tokens` more than its request reserved (not charged): counted for
 * /metrics, so that a model whose template passes the prompt's bound shows. */
void gx_maas_usage_over(gx_maas_usage *u, int64_t tokens);
char *gx_maas_usage_metrics(gx_maas_usage *u, char *text);
/* Rate-limit windows survive restarts: read them back at start (into keys, and into
 * placeholder tiers that the Tier's apply fills in), and save the changed ones from the
 * tick, at most once a second, and at shutdown (force). */
void gx_maas_windows_load(gx_maas *m, int64_t now);
void gx_maas_windows_flush(gx_maas *m, int64_t now, int force);
json_t *gx_maas_usage_query(gx_maas_usage *u, const char *group_by, int64_t since_ms, const char *user, gx_err *err);

/* ---- proxy.c ------------------------------------------------------------------------- */

typedef struct gx_maas_proxy gx_maas_proxy;
gx_maas_proxy *gx_maas_proxy_new(gx_maas *m);
void gx_maas_proxy_free(gx_maas_proxy *p);
void gx_maas_proxy_shutdown(gx_maas_proxy *p);
int64_t gx_maas_proxy_tick(gx_maas_proxy *p);
/* Start a GET for a readiness probe; done through gx_maas_models_probe_done. */
void *gx_maas_proxy_probe(gx_maas_proxy *p, const char *url, const char *auth, void **hdrs);
void gx_maas_proxy_free_headers(void *hdrs);
void gx_maas_proxy_probe_cancel(gx_maas_proxy *p, void *easy);
/* The body of a scrape: at most GX_MAAS_SCRAPE_MAX_BODY bytes, cut (and failed) beyond. */
typedef struct gx_maas_scrape_in {
    gx_sbuf body;
    int cut;
} gx_maas_scrape_in;
/* Start a GET of a replica's /metrics into in (kept by the caller until it ends);
 * done through gx_maas_models_scrape_done, cancelled with gx_maas_proxy_probe_cancel. */
void *gx_maas_proxy_scrape(gx_maas_proxy *p, const char *url, const char *auth, void **hdrs, gx_maas_scrape_in *in);
/* A POST /v1/... that passed auth: route, limit, forward (answered now, or deferred
 * and completed with gx_http_complete when the upstream answers). */
void gx_maas_proxy_call(gx_maas *m, gx_req *req, gx_resp *resp, gx_maas_key *key, gx_maas_tier *tier,
                        const char *endpoint);
int gx_maas_proxy_inflight(const gx_maas_proxy *p);
uint64_t gx_maas_proxy_pauses(const gx_maas_proxy *p);

/* ---- maas.c ------------------------------------------------------------------------- */

struct gx_maas {
    gx_maas_env env;           /* what it was built with (loop, store, ops, settings) */
    gx_loop *loop;             /* env.loop */
    gx_store *store;           /* env.store */
    gx_daemon *ops;            /* env.ops: the daemon's operations (ops/ops.h) */
    gx_maas_keys *keys;
    gx_strmap tiers;           /* name -> gx_maas_tier * */
    gx_strmap models;          /* name -> gx_maas_model * */
    gx_strmap served;          /* served name -> gx_maas_model * (rebuilt on change) */
    gx_maas_proxy *proxy;
    gx_maas_usage *usage;
    gx_http *http;
    size_t body_limit;         /* of /v1/ */
    int64_t heartbeat_ms;
    int64_t next_models_ms;    /* the models' next tick (replicas, probes, idle scale-down) */
};

gx_maas_tier *gx_maas_tier_get(gx_maas *m, const char *name);
/* The tier of that name, created empty (not yet applied) when there is none: the Tier's
 * apply and the rate windows loaded at start (usage.c) meet in the same struct. */
gx_maas_tier *gx_maas_tier_ensure(gx_maas *m, const char *name);
/* {"error":{"message","type","param","code"}} (OpenAI's envelope), param null. */
void gx_maas_oai_error(gx_resp *resp, int status, const char *type, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* The same, naming the request field at fault in "param" (as OpenAI does for its 400s). */
void gx_maas_oai_error_param(gx_resp *resp, int status, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* x-ratelimit-* (and retry-after when refused) from a verdict. */
void gx_maas_limit_headers(gx_resp *resp, const gx_maas_verdict *v);
/* The wall clock (ms): stamps, usage rows, rate-limit windows, key expiry. */
int64_t gx_maas_now(const gx_maas *m);
/* The loop's monotonic clock (ms): timers, probe and scrape schedules, idle times. */
int64_t gx_maas_mono_ms(const gx_maas *m);
/* Monotonic seconds, for latencies. */
double gx_maas_mono(void);

#endif
