/* api: the REST front door of docs/api.md, under /api/v1, plus the probes (/healthz,
 * /readyz) and /metrics.
 * Owns: URL matching, authentication (bearer tokens, or the portal's session through
 * the session callback) and authorisation per route, query parameters, turning bodies
 * into manifests and results into JSON answers; the resources other front doors mount
 * under /api/v1 (the gateway's keys, models, tiers, usage) are authenticated here first.
 * Must not: change state except through ops/ops.h, whose operations commit before they
 * return (so every 2xx here describes durable state); know the gateway or the portal. */
#ifndef GX_API_H
#define GX_API_H
#include "auth/auth.h"
#include "net/http.h"
#include "net/loop.h"
#include "ops/ops.h"

typedef struct gx_api gx_api;

/* A collection served by another front door: seg are the path's segments
 * ("api","v1",name,...), u the authenticated user. */
typedef void (*gx_api_resource_fn)(void *ud, const gx_user *u, gx_req *req, gx_resp *resp, char **seg, int nseg);
/* Who a request without a bearer token is, or NULL (the portal's session cookie). */
typedef const gx_user *(*gx_api_session_fn)(void *ud, gx_req *req);

typedef struct gx_api_env {
    gx_daemon *ops;
    gx_loop *loop;
    gx_auth *auth;
    gx_api_session_fn session;   /* may be NULL */
    void *session_ud;
} gx_api_env;

gx_api *gx_api_new(const gx_api_env *env);
void gx_api_free(gx_api *a);
/* Serve /api/v1/NAME[/...] with fn after authentication. -1 when the table is full. */
int gx_api_mount(gx_api *a, const char *name, gx_api_resource_fn fn, void *ud);

/* net/mux mount functions (ud: the gx_api). */
int gx_api_route(void *a, gx_req *req, gx_resp *resp);    /* "/api/": everything under it */
int gx_api_probes(void *a, gx_req *req, gx_resp *resp);   /* /healthz /health /readyz /metrics */

#endif
