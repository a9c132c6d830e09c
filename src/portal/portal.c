/* portal: the router of the web UI (see portal.h).
 * Owns: which paths are the portal's, who the request is from (session cookie or
 * trusted proxy), the CSRF check on every POST, the embedded static assets.
 * Must not: let a POST through without a valid CSRF token (403), show a page to
 * someone not signed in (they go to /login), or an admin page to a non-admin (403). */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/alloc.h"
#include "portal/portal_int.h"
#include "portal/template.h"

gx_portal *gx_portal_new(const gx_portal_env *env)
{
    if (sodium_init() < 0) return NULL;
    gx_portal *p = gx_xcalloc(1, sizeof *p);
    p->env = *env;
    p->d = env->ops;
    p->loop = env->loop;
    p->store = env->store;
    p->auth = env->auth;
    gx_portal_sessions_load(p, p->loop ? gx_loop_now(p->loop) : 0);
    return p;
}

void gx_portal_free(gx_portal *p)
{
    if (!p) return;
    gx_portal_tunnels_free(p);
    if (p->sess) sodium_memzero(p->sess, p->capsess * sizeof *p->sess);
    free(p->sess);
    sodium_memzero(p->key, sizeof p->key);
    free(p);
}

static int kind_validate(void *ud, const json_t *doc, json_t *const *others, size_t n, gx_err *err)
{
    (void)ud; (void)others; (void)n;
    return gx_portal_check_object(doc, err);
}

size_t gx_portal_kinds(gx_portal *p, gx_kind out[2])
{
    out[0] = (gx_kind){.kind = "Template", .api_version = "gpuaas.dev/v1alpha1", .validate = kind_validate, .ud = p};
    out[1] = (gx_kind){.kind = "PortalConfig", .api_version = "gpuaas.dev/v1alpha1", .validate = kind_validate, .ud = p};
    return 2;
}

static void hook_user_deleted(void *ud, const char *user) { gx_portal_user_deleted(ud, user); }

gx_hooks gx_portal_hooks(gx_portal *p) { return (gx_hooks){.user_deleted = hook_user_deleted, .ud = p}; }

int gx_portal_check_object(const json_t *doc, gx_err *err)
{
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    const char *av = json_string_value(json_object_get(doc, "apiVersion"));
    if (!av || strcmp(av, "gpuaas.dev/v1alpha1"))
        return gx_errf(err, 400, "apiVersion", "%s is gpuaas.dev/v1alpha1", kind ? kind : "this kind");
    if (kind && !strcmp(kind, "Template")) return gx_portal_template_check(doc, err);
    const char *name = json_string_value(json_object_get(json_object_get(doc, "metadata"), "name"));
    if (!name || !gx_dns_label_ok(name)) return gx_errf(err, 422, "metadata.name", "a PortalConfig needs a DNS-label name");
    return gx_portal_check_config(doc, err);
}

static int wants_https(const gx_req *req)
{
    const char *x = gx_req_header(req, "X-Forwarded-Proto");
    return x && !strcmp(x, "https");
}

const gx_user *gx_portal_api_user(gx_portal *p, gx_req *req)
{
    gx_portal_session *s = gx_portal_session_find(p, req, gx_loop_now(p->loop));
    if (!s || !gx_portal_csrf_ok(s, gx_req_header(req, "X-CSRF-Token"))) return NULL;
    return gx_auth_find(p->auth, s->user);
}

/* ---- assets --------------------------------------------------------------------------- */

static int asset(gx_portal_ctx *c, const char *name)
{
    for (const gx_portal_asset *a = gx_portal_assets; a->path; a++) {
        if (strcmp(a->path, name)) continue;
        gx_resp *r = c->resp;
        r->status = 200;
        free(r->text);
        r->text = gx_xmalloc(a->len + 1);
        memcpy(r->text, a->data, a->len);
        r->text[a->len] = 0;
        r->text_len = a->len;
        r->ctype = a->ctype;
        /* assets change only with the binary; an hour of caching keeps pages quick */
        gx_resp_header(r, "Cache-Control", "public, max-age=3600");
        gx_resp_header(r, "X-Content-Type-Options", "nosniff");
        return 1;
    }
    gx_resp_text(c->resp, 404, "text/plain; charset=utf-8", "no such asset\n");
    return 1;
}

/* ---- dispatch ------------------------------------------------------------------------- */

static int split(gx_portal_ctx *c, const char *path)
{
    c->nseg = 0;
    const char *s = path;
    while (*s) {
        while (*s == '/') s++;
        if (!*s) break;
        const char *e = strchr(s, '/');
        size_t n = e ? (size_t)(e - s) : strlen(s);
        if (c->nseg == 8 || n >= sizeof c->seg[0]) return -1;
        memcpy(c->seg[c->nseg], s, n);
        c->seg[c->nseg][n] = 0;
        c->nseg++;
        s += n;
    }
    return 0;
}

/* Browsers send Origin on POST: it must name this server (defence in depth next to
 * the CSRF token and SameSite cookies). No Origin (old clients, curl) passes; the
 * CSRF token still has to be right. */
static int same_origin(const gx_req *req)
{
    const char *o = gx_req_header(req, "Origin"), *h = gx_req_header(req, "Host");
    const char *fh = gx_req_header(req, "X-Forwarded-Host"); /* a proxy may rewrite Host */
    if (!o || !strcmp(o, "null")) return !o;
    const char *sep = strstr(o, "://");
    return sep && ((h && !strcmp(sep + 3, h)) || (fh && !strcmp(sep + 3, fh)));
}

static int is_post(const gx_portal_ctx *c) { return !strcmp(c->req->method, "POST"); }

static void not_found(gx_portal_ctx *c) { gx_portal_error_page(c, 404, "Not found", "There is no such page."); }

static void route_ui(gx_portal_ctx *c)
{
    const char *a = c->nseg > 1 ? c->seg[1] : "";
    int post = is_post(c), n = c->nseg;
    if (!strcmp(a, "new") && n == 2 && !post) gx_portal_catalog(c);
    else if (!strcmp(a, "new") && n == 3) gx_portal_request(c, c->seg[2]);
    else if (!strcmp(a, "workloads") && n == 4 && !post) gx_portal_workload(c, c->seg[2], c->seg[3]);
    else if (!strcmp(a, "workloads") && n == 5 && post && !strcmp(c->seg[4], "cancel"))
        gx_portal_workload_cancel(c, c->seg[2], c->seg[3]);
    else if (!strcmp(a, "workloads") && n == 5 && post && !strcmp(c->seg[4], "verdict"))
        gx_portal_workload_verdict(c, c->seg[2], c->seg[3]);
    else if (!strcmp(a, "models") && n == 2 && !post) gx_portal_models(c);
    else if (!strcmp(a, "queues") && n == 2 && !post) gx_portal_queues(c);
    else if (!strcmp(a, "queues") && n == 4 && post && !strcmp(c->seg[3], "quota")) gx_portal_quota_post(c, c->seg[2]);
    else if (!strcmp(a, "gpus") && n == 2 && !post) gx_portal_gpus(c);
    else if (!strcmp(a, "reports") && n == 2 && !post) gx_portal_reports(c);
    else if (!strcmp(a, "reservations") && n == 2) post ? gx_portal_reservations_post(c) : gx_portal_reservations(c);
    else if (!strcmp(a, "reservations") && n == 5 && post && !strcmp(c->seg[4], "cancel"))
        gx_portal_reservation_cancel(c, c->seg[2], c->seg[3]);
    else if (!strcmp(a, "account") && n == 2) post ? gx_portal_account_post(c) : gx_portal_account_page(c, NULL, NULL);
    else if (!strcmp(a, "admin")) {
        if (!c->user->admin) gx_portal_error_page(c, 403, "Not allowed", "Only admins may open the admin pages.");
        else if (n == 2 && !post) gx_portal_admin(c, NULL, NULL);
        else if (n == 3 && post) gx_portal_admin_post(c);
        else not_found(c);
    } else not_found(c);
}

static int is_portal_path(const char *p)
{
    return !strcmp(p, "/") || !strcmp(p, "/login") || !strcmp(p, "/logout") || !strncmp(p, "/ui/", 4) ||
           !strcmp(p, "/ui") || !strncmp(p, "/assets/", 8) || !strcmp(p, "/favicon.ico");
}

int gx_portal_route(gx_portal *p, gx_req *req, gx_resp *resp)
{
    const char *path = req->path;
    if (!is_portal_path(path)) return 0;
    gx_portal_ctx c = {.p = p, .d = p->d, .req = req, .resp = resp, .now = gx_loop_now(p->loop)};
    c.secure = wants_https(req);
    int asset_path = !strncmp(path, "/assets/", 8) || !strcmp(path, "/favicon.ico");
    if (asset_path && strcmp(req->method, "GET") && strcmp(req->method, "HEAD")) {
        gx_resp_text(resp, 405, "text/plain; charset=utf-8", "method not allowed\n");
        gx_resp_header(resp, "Allow", "GET, HEAD");
        return 1;
    }
    if (!strncmp(path, "/assets/", 8)) return asset(&c, path + 8);
    /* a session's own pages: any method, its own forms (no portal CSRF token), proxy.c */
    if (!strncmp(path, "/ui/sessions/", 13)) return gx_portal_proxy(p, req, resp);
    if (!strcmp(path, "/favicon.ico")) return asset(&c, "favicon.svg");
    if (split(&c, path)) { not_found(&c); return 1; }
    int post = !strcmp(req->method, "POST");
    if (strcmp(req->method, "GET") && !post && strcmp(req->method, "HEAD")) {
        gx_resp_text(resp, 405, "text/plain; charset=utf-8", "method not allowed\n");
        gx_resp_header(resp, "Allow", "GET, HEAD, POST");
        return 1;
    }
    if (post) {
        const char *ct = gx_req_header(req, "Content-Type");
        if (!ct || strncmp(ct, "application/x-www-form-urlencoded", 33) ||
            !(c.form = gx_portal_form_parse(req->body, req->body_len, 200, 256 * 1024))) {
            gx_portal_error_page(&c, 400, "Bad request", "The form could not be read (too many or too large fields).");
            return 1;
        }
    }
    if (post && !same_origin(req)) {
        gx_portal_error_page(&c, 403, "Request refused", "This form was sent from another site.");
        json_decref(c.form);
        return 1;
    }
    c.s = gx_portal_session_find(p, req, c.now);
    const gx_user *pu = gx_portal_proxy_user(&c);
    c.user = pu ? pu : c.s ? gx_auth_find(p->auth, c.s->user) : NULL;
    if (!c.user && c.s) { /* its user was deleted (by the API): the session ends for good */
        char who[sizeof c.s->user];
        memcpy(who, c.s->user, sizeof who); /* drop_user moves the table under c.s */
        c.s = NULL;
        gx_portal_session_drop_user(p, who);
    }
    if (!strcmp(path, "/login")) {
        if (post) gx_portal_login_post(&c);
        else if (c.user) gx_portal_redirect(&c, "/");
        else gx_portal_login_page(&c, 200, NULL);
    } else if (!c.user) {
        /* a deleted user's session ends here too */
        if (post) gx_portal_error_page(&c, 403, "Not signed in", "Your session ended; sign in again.");
        else gx_portal_redirect(&c, "/login");
    } else if (post && !gx_portal_csrf_ok(c.s, gx_portal_form_get(c.form, "_csrf"))) {
        gx_portal_error_page(&c, 403, "Request refused",
                             "This form was not sent from a page of this portal (its CSRF token is missing or stale). "
                             "Reload the page and try again.");
    } else if (!strcmp(path, "/logout")) {
        if (post) gx_portal_logout(&c);
        else not_found(&c);
    } else if (!strcmp(path, "/")) {
        if (post) not_found(&c);
        else gx_portal_home(&c);
    } else {
        route_ui(&c);
    }
    json_decref(c.form);
    return 1;
}
