/* portal: the self-serve web UI of gpuaas, served by the daemon at /.
 * Owns: everything under /, /ui/, /assets/, /login, /logout: sessions, CSRF tokens,
 * sign-in (local passwords, API tokens, a trusted authenticating proxy), the pages,
 * request templates (kind Template) and the portal's settings (kind PortalConfig).
 * Must not: change state except through the daemon's own entry points
 * (gx_d_submit, gx_d_cancel, gx_d_apply, gx_auth_*), which commit before they
 * return; block the loop for long (one password hash per sign-in at most). */
#ifndef GX_PORTAL_H
#define GX_PORTAL_H
#include <jansson.h>
#include "auth/auth.h"
#include "net/http.h"
#include "net/loop.h"
#include "lib/err.h"
#include "ops/kinds.h"
#include "ops/ops.h"
#include "store/store.h"

typedef struct gx_portal gx_portal;

/* What the portal is built with (src/daemon/serve.c fills it). The Models page asks
 * the gateway through the two callbacks, so that the portal does not depend on it
 * (either may be NULL: no gateway). */
typedef struct gx_portal_env {
    gx_loop *loop;
    gx_store *store;
    gx_auth *auth;
    gx_daemon *ops;
    /* May u create keys of this tier in namespace ns (the rule of POST /api/v1/keys)? */
    int (*tier_open)(void *ud, const char *tier, const gx_user *u, const char *ns);
    /* A Model as GET /api/v1/models/NAME shows it, or NULL. */
    json_t *(*model_status)(void *ud, const char *name);
    void *models_ud;
} gx_portal_env;

gx_portal *gx_portal_new(const gx_portal_env *env);
void gx_portal_free(gx_portal *p);

/* Answer req when it is the portal's (returns 1), else 0 and resp untouched. */
int gx_portal_route(gx_portal *p, gx_req *req, gx_resp *resp);

/* For /api/v1 requests without a bearer token: the user of a valid session cookie
 * whose X-CSRF-Token header matches the session's token, else NULL. This lets the
 * pages' JavaScript call the REST API as the signed-in person. */
const gx_user *gx_portal_api_user(gx_portal *p, gx_req *req);

/* A user was deleted (gx_d_delete_user, for the REST API and the Admin page): end their
 * sessions at once, in memory and in the store, so a user created later under the same
 * name does not inherit them. */
void gx_portal_user_deleted(gx_portal *p, const char *user);

/* The portal's kinds (Template, PortalConfig) for the daemon's table; returns 2. They
 * have no apply: the portal reads them with gx_d_objects() when a page needs them. */
size_t gx_portal_kinds(gx_portal *p, gx_kind out[2]);
/* Its hook: a deleted user's sessions end. */
gx_hooks gx_portal_hooks(gx_portal *p);
/* Validate a Template or PortalConfig before it is applied (all or nothing). */
int gx_portal_check_object(const json_t *doc, gx_err *err);

#endif
