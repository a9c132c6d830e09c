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
#include "lib/err.h"

struct gx_daemon;
typedef struct gx_portal gx_portal;

gx_portal *gx_portal_new(struct gx_daemon *d);
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

/* Is kind one of the portal's (Template, PortalConfig)? */
int gx_portal_owns_kind(const char *kind);
/* Validate a Template or PortalConfig before it is applied (all or nothing). */
int gx_portal_check_object(const json_t *doc, gx_err *err);

#endif
