/* portal_int: what the portal's files share (not for the rest of the daemon).
 * Owns: the portal's state, one request's context, and the functions each page
 * file offers the router in portal.c.
 * Must not: be included outside src/portal. */
#ifndef GX_PORTAL_INT_H
#define GX_PORTAL_INT_H
#include <stdint.h>
#include "ops/ops.h"
#include "portal/html.h"
#include "portal/portal.h"

#define GX_PORTAL_MAX_SESSIONS 10000
#define GX_PORTAL_IDLE_MS (8LL * 3600 * 1000)       /* signed out after 8 h without a request */
#define GX_PORTAL_ABS_MS (7LL * 24 * 3600 * 1000)   /* and after 7 days whatever happens */
#define GX_PORTAL_ADDR_FAILS 10                     /* failed sign-ins per address per minute */
#define GX_PORTAL_CSRF_LEN 43                       /* base64url of 32 random bytes */
/* A used session's stored end moves at most this often: one small write per active
 * person per 5 minutes, and after a restart the idle limit may come 5 minutes early. */
#define GX_PORTAL_TOUCH_MS (5LL * 60 * 1000)

#define GX_PORTAL_TUNNELS 256                       /* session relays at once (proxy.c) */
#define GX_PORTAL_TUNNEL_IDLE_MS (3600LL * 1000)    /* a relay with no byte either way for an hour ends */
typedef struct gx_portal_tunnel gx_portal_tunnel;

typedef struct gx_portal_session {
    unsigned char id_hash[32];   /* keyed hash of the cookie value; the value is never kept */
    char user[64];
    char csrf[GX_PORTAL_CSRF_LEN + 1];
    int64_t created_ms, seen_ms;
    int proxy;                   /* signed in by the trusted proxy's headers (never stored: the
                                  * proxy signs the person in again after a restart) */
    int64_t stored_exp_ms;       /* the end written to the store; 0: not in the store */
} gx_portal_session;

struct gx_portal {
    gx_portal_env env;           /* what it was built with */
    gx_daemon *d;                /* env.ops: the daemon's operations (ops/ops.h) */
    gx_loop *loop;               /* env.loop */
    gx_store *store;             /* env.store; NULL in unit tests */
    gx_auth *auth;               /* env.auth */
    unsigned char key[32];       /* key of the session id hashes, kept in the store's meta
                                  * table so that a restart still recognises cookies */
    int store_ok;                /* 0: the store refused us once; sessions stay in memory */
    gx_portal_session *sess;
    size_t nsess, capsess;
    int64_t fail_window_ms;      /* failed sign-ins in the current minute: */
    int fails;                   /* ... from everyone (bounds the hashing work) */
    /* ... and per client address, the times of its last GX_PORTAL_ADDR_FAILS failures: an
     * address is locked out while the oldest of them is less than a minute old (a
     * sliding window: no reset at a minute's boundary lets a burst through, or lifts a
     * lock-out early) */
    struct { char addr[48]; int64_t at[GX_PORTAL_ADDR_FAILS]; int next; } fail_by[64];
    gx_portal_tunnel *tunnels;   /* relays to interactive sessions (proxy.c) */
    int ntunnels;
    uint64_t tunnel_timer;       /* the idle sweep, while there are relays */
};

/* One request. */
typedef struct gx_portal_ctx {
    gx_portal *p;
    gx_daemon *d;
    gx_req *req;
    gx_resp *resp;
    int64_t now;
    const gx_user *user;         /* NULL when nobody is signed in */
    gx_portal_session *s;
    json_t *form;                /* decoded POST body (or NULL) */
    int secure;                  /* reached over TLS (X-Forwarded-Proto: https) */
    char seg[8][128];
    int nseg;
} gx_portal_ctx;

/* session.c */
/* Key of the id hashes and the stored sessions: called once by gx_portal_new. */
void gx_portal_sessions_load(gx_portal *p, int64_t now);
gx_portal_session *gx_portal_session_find(gx_portal *p, const gx_req *req, int64_t now);
/* New session for user; sets the cookie header on resp. */
gx_portal_session *gx_portal_session_new(gx_portal_ctx *c, const char *user, int proxy);
void gx_portal_session_end(gx_portal_ctx *c);
/* Drop every session of a user (deleted, or password changed). */
void gx_portal_session_drop_user(gx_portal *p, const char *user);
/* A password changed: end every session of user but the current request's (c->s is
 * updated, as the table moves). */
void gx_portal_session_drop_others(gx_portal_ctx *c, const char *user);
int gx_portal_csrf_ok(const gx_portal_session *s, const char *token);
void gx_portal_random_token(char *out, size_t n);   /* base64url, n >= 44 */
const char *gx_portal_cookie(const gx_req *req, const char *name, char *out, size_t n);

/* identity.c */
void gx_portal_login_page(gx_portal_ctx *c, int status, const char *error);
void gx_portal_login_post(gx_portal_ctx *c);
void gx_portal_logout(gx_portal_ctx *c);
/* Sign in by the trusted proxy's headers when PortalConfig enables it. */
const gx_user *gx_portal_proxy_user(gx_portal_ctx *c);
int gx_portal_check_config(const json_t *doc, gx_err *err);
const json_t *gx_portal_config(const gx_daemon *d);
void gx_portal_account_page(gx_portal_ctx *c, const char *note, const char *error);
void gx_portal_account_post(gx_portal_ctx *c);

/* layout.c */
void gx_portal_page_begin(gx_portal_ctx *c, gx_sbuf *b, const char *title, const char *nav);
void gx_portal_page_end(gx_portal_ctx *c, gx_sbuf *b, int status);
void gx_portal_csrf_field(gx_portal_ctx *c, gx_sbuf *b);
void gx_portal_badge(gx_sbuf *b, const char *phase);
void gx_portal_error_page(gx_portal_ctx *c, int status, const char *title, const char *msg);
void gx_portal_redirect(gx_portal_ctx *c, const char *to);
void gx_portal_bar(gx_sbuf *b, double used, double total, const char *label);
/* Templates applied, sorted by name (new array of manifests). */
json_t *gx_portal_templates(const gx_daemon *d);

/* pages_work.c: Home, Workload */
void gx_portal_home(gx_portal_ctx *c);
void gx_portal_workload(gx_portal_ctx *c, const char *ns, const char *name);
void gx_portal_workload_cancel(gx_portal_ctx *c, const char *ns, const char *name);
void gx_portal_workload_verdict(gx_portal_ctx *c, const char *ns, const char *name);
/* plain words for why a workload waits, and when it may start */
void gx_portal_why(gx_portal_ctx *c, const json_t *wl, gx_sbuf *b);

/* proxy.c: /ui/sessions/NS/NAME/... to the session's port (always answers: returns 1) */
int gx_portal_proxy(gx_portal *p, gx_req *req, gx_resp *resp);
void gx_portal_tunnels_free(gx_portal *p);

/* words.c: the scheduler's words in plain ones */
const char *gx_portal_plain_reason(const char *reason);
/* A condition type (QuotaReserved, Admitted...) and its status as a phrase. */
const char *gx_portal_plain_condition(const char *type, int status);
/* A scheduler message rewritten ("Waiting for quota: needs 2 GPUs, team-a has 1 free
 * (of 2)") into out: 1; else out is msg as it is: 0. */
int gx_portal_plain_message(const char *msg, char *out, size_t n);

/* pages_new.c: catalog, form, review, submit */
void gx_portal_catalog(gx_portal_ctx *c);
void gx_portal_request(gx_portal_ctx *c, const char *tpl);

/* pages_cluster.c: Queues, GPUs */
void gx_portal_queues(gx_portal_ctx *c);
void gx_portal_quota_post(gx_portal_ctx *c, const char *cq);
void gx_portal_gpus(gx_portal_ctx *c);
/* pages_reports.c: Reports (GPU-hours allocated and busy, a chart and the table) */
void gx_portal_reports(gx_portal_ctx *c);

/* pages_calendar.c: Bookings (a week of GPU bookings per class, the booking form, cancel) */
void gx_portal_reservations(gx_portal_ctx *c);
void gx_portal_reservations_post(gx_portal_ctx *c);
void gx_portal_reservation_cancel(gx_portal_ctx *c, const char *ns, const char *name);

/* pages_models.c: Models (the catalog of the user's tiers, keys, usage, playground) */
void gx_portal_models(gx_portal_ctx *c);
/* The models (views as GET /api/v1/models gives them) that one of tiers (names) opens,
 * each with "tiers" cut down to those; a new array, in the order of models. */
json_t *gx_portal_models_for(const json_t *models, const json_t *tiers);

/* The longest key lifetime a Tier object allows, in whole days (its maxKeyLifetime, or
 * the gateway's default of 90 days). */
int gx_portal_tier_key_days(const json_t *tier);

/* pages_admin.c */
void gx_portal_admin(gx_portal_ctx *c, const char *note, const char *error);
void gx_portal_admin_post(gx_portal_ctx *c);

/* assets (generated by scripts/embed-assets.sh into the build folder) */
typedef struct gx_portal_asset {
    const char *path;            /* "portal.css" */
    const char *ctype;
    const unsigned char *data;
    unsigned long len;
} gx_portal_asset;
extern const gx_portal_asset gx_portal_assets[];

#endif
