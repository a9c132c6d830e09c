/* maas: the OpenAI-compatible gateway (Model-as-a-Service), seen from the daemon.
 * Owns: the gateway's life cycle and the few entry points the daemon calls: HTTP
 * dispatch for /v1/... and /api/v1/{keys,models,tiers,usage}, validation and
 * application of Model and Tier objects, the per-iteration tick, /metrics lines.
 * Must not: be called from anything but the loop's thread. */
#ifndef GX_MAAS_H
#define GX_MAAS_H
#include <stdint.h>
#include <jansson.h>
#include "auth/auth.h"
#include "net/http.h"
#include "net/loop.h"
#include "lib/err.h"
#include "ops/kinds.h"
#include "ops/ops.h"
#include "store/store.h"

typedef struct gx_maas gx_maas;

/* What the gateway is built with (src/daemon/serve.c, the composition root, fills it:
 * it alone reads the environment). */
typedef struct gx_maas_env {
    gx_loop *loop;
    gx_store *store;
    gx_daemon *ops;            /* model servers are workloads: submitted through ops */
    const char *data_dir;
    int64_t heartbeat_ms;      /* SSE keep-alive comment every... (0: 15 s) */
    int64_t scrape_ms;         /* replicas' /metrics scraped every... (0: 15 s) */
    int upstream_curl_only;    /* every transfer through libcurl (A/B runs, tests) */
    long key_caps[3];          /* lower key caps (tests): active, per user, ended held; 0 default */
    const char *bin_dir;       /* the daemon binary's folder: {bindir} in a server's command */
} gx_maas_env;

gx_maas *gx_maas_new(const gx_maas_env *env, gx_err *err);
/* Start listening-side things that need the HTTP server (body limit of /v1/). */
void gx_maas_attach_http(gx_maas *m, gx_http *h);
void gx_maas_free(gx_maas *m);
/* Before the HTTP server stops: end transfers, answer requests still waiting. */
void gx_maas_shutdown(gx_maas *m);

/* The gateway's kinds (Tier, Model) for the daemon's table (ops/kinds.h); returns 2. */
size_t gx_maas_kinds(gx_maas *m, gx_kind out[2]);
/* Its hooks: a deleted user's keys revoked, its /metrics lines. */
gx_hooks gx_maas_hooks(gx_maas *m);
/* Validate one Model or Tier; others holds every document of the same apply (for
 * references between them). Returns 0 or -1 with err filled. */
int gx_maas_validate(gx_maas *m, const json_t *doc, json_t *const *others, size_t nothers, gx_err *err);
/* Take a validated (and committed) Model or Tier into effect. */
void gx_maas_apply(gx_maas *m, const json_t *doc);
int gx_maas_delete(gx_maas *m, const char *kind, const char *name, gx_err *err);

/* /v1/... (OpenAI API): answers, or defers (resp->defer) and completes the request
 * with gx_http_complete when the upstream answers. */
void gx_maas_v1(gx_maas *m, gx_req *req, gx_resp *resp);
/* /api/v1/{keys,models,tiers,usage}: seg are the path's segments ("api","v1",...). */
void gx_maas_api(gx_maas *m, const gx_user *u, gx_req *req, gx_resp *resp, char **seg, int nseg);

/* Per loop iteration: curl timers, readiness probes, model workloads, usage flush.
 * Returns the longest the loop may sleep in ms (-1: no limit). */
int64_t gx_maas_tick(gx_maas *m);

/* A user was deleted: revoke their API keys (committed, effective at once). */
void gx_maas_user_deleted(gx_maas *m, const char *user);

/* Append the gateway's Prometheus lines to a malloc'd text (returns the new text). */
char *gx_maas_metrics(gx_maas *m, char *text);

/* For the portal: may u create keys of this tier in namespace ns (the rule of
 * POST /api/v1/keys)? 0 when there is no such tier. */
int gx_maas_tier_open(gx_maas *m, const char *tier, const gx_user *u, const char *ns);
/* For the portal: a Model as GET /api/v1/models/NAME shows it, or NULL. */
json_t *gx_maas_model_status(gx_maas *m, const char *name);

#endif
