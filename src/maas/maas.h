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
#include "lib/err.h"

typedef struct gx_maas gx_maas;
struct gx_daemon;

gx_maas *gx_maas_new(struct gx_daemon *d, gx_err *err);
/* Start listening-side things that need the HTTP server (body limit of /v1/). */
void gx_maas_attach_http(gx_maas *m, gx_http *h);
void gx_maas_free(gx_maas *m);
/* Before the HTTP server stops: end transfers, answer requests still waiting. */
void gx_maas_shutdown(gx_maas *m);

/* Is this one of the gateway's kinds (Model, Tier)? */
int gx_maas_owns_kind(const char *kind);
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
