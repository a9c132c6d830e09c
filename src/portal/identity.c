/* identity: who is using the portal.
 * Owns: the sign-in page (local password, or an API token for the first admin),
 * sign-out, the account page (change one's password), and sign-in by a trusted
 * authenticating reverse proxy (oauth2-proxy and the like) configured by a
 * PortalConfig object: its user and groups headers, groups mapped to namespaces.
 * Must not: trust proxy headers unless PortalConfig enables them AND the request
 * comes from one of its trustedAddresses; log or echo a password or a token. */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "portal/portal_int.h"

/* Failed sign-ins allowed per minute from one address, and from everyone: the first
 * slows guessing, the second bounds the Argon2 work an attacker can make the loop do
 * (about 300 x 20 ms a minute) without one client locking everyone out. */
#define MAX_FAILS_PER_MIN 300

const json_t *gx_portal_config(const gx_daemon *d)
{
    const char *k;
    json_t *m;
    json_object_foreach((json_t *)gx_d_objects(d), k, m)
        if (!strncmp(k, "PortalConfig/", 13)) return m;
    return NULL;
}

static int str_list_ok(const json_t *v, size_t max)
{
    if (!v) return 1;
    if (!json_is_array(v) || json_array_size(v) > max) return 0;
    size_t i;
    const json_t *x;
    json_array_foreach(v, i, x)
        if (!json_is_string(x) || json_string_length(x) > 128) return 0;
    return 1;
}

int gx_portal_check_config(const json_t *doc, gx_err *err)
{
    const json_t *spec = json_object_get(doc, "spec");
    if (!json_is_object(spec)) return gx_errf(err, 422, "spec", "missing spec");
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)spec, k, v)
        if (strcmp(k, "title") && strcmp(k, "authProxy") && strcmp(k, "passwordLogin"))
            return gx_errf(err, 422, "spec", "unknown field \"%s\" (known: title, authProxy, passwordLogin)", k);
    const json_t *t = json_object_get(spec, "title");
    if (t && (!json_is_string(t) || json_string_length(t) > 60)) return gx_errf(err, 422, "spec.title", "at most 60 characters");
    const json_t *pl = json_object_get(spec, "passwordLogin");
    if (pl && !json_is_boolean(pl)) return gx_errf(err, 422, "spec.passwordLogin", "must be true or false");
    const json_t *ap = json_object_get(spec, "authProxy");
    if (!ap) return 0;
    if (!json_is_object(ap)) return gx_errf(err, 422, "spec.authProxy", "must be a mapping");
    static const char *const known[] = {"enabled", "userHeader", "groupsHeader", "trustedAddresses", "adminGroups",
                                        "groupNamespaces", "logoutUrl", NULL};
    json_object_foreach((json_t *)ap, k, v) {
        int ok = 0;
        for (int i = 0; known[i]; i++) ok |= !strcmp(k, known[i]);
        if (!ok) return gx_errf(err, 422, "spec.authProxy", "unknown field \"%s\" (known: enabled, userHeader, groupsHeader, "
                                "trustedAddresses, adminGroups, groupNamespaces, logoutUrl)", k);
    }
    if (!json_is_boolean(json_object_get(ap, "enabled"))) return gx_errf(err, 422, "spec.authProxy.enabled", "must be true or false");
    for (const char *const *h = (const char *const[]){"userHeader", "groupsHeader", "logoutUrl", NULL}; *h; h++) {
        const json_t *x = json_object_get(ap, *h);
        if (x && (!json_is_string(x) || !json_string_length(x) || json_string_length(x) > 100)) {
            char f[64];
            snprintf(f, sizeof f, "spec.authProxy.%s", *h);
            return gx_errf(err, 422, f, "must be a header name / URL of at most 100 characters");
        }
    }
    const json_t *ta = json_object_get(ap, "trustedAddresses");
    if (!str_list_ok(ta, 16)) return gx_errf(err, 422, "spec.authProxy.trustedAddresses", "a list of IPv4 addresses");
    size_t i;
    json_array_foreach(ta, i, v) {
        struct in_addr a;
        if (inet_pton(AF_INET, json_string_value(v), &a) != 1)
            return gx_errf(err, 422, "spec.authProxy.trustedAddresses", "\"%s\" is not an IPv4 address", json_string_value(v));
    }
    if (!str_list_ok(json_object_get(ap, "adminGroups"), 32)) return gx_errf(err, 422, "spec.authProxy.adminGroups", "a list of group names");
    const json_t *gn = json_object_get(ap, "groupNamespaces");
    if (gn && !json_is_object(gn)) return gx_errf(err, 422, "spec.authProxy.groupNamespaces", "a mapping group -> [namespace]");
    json_object_foreach((json_t *)gn, k, v) {
        size_t j;
        const json_t *n;
        if (!json_is_array(v)) return gx_errf(err, 422, "spec.authProxy.groupNamespaces", "%s: a list of namespaces", k);
        json_array_foreach(v, j, n)
            if (!json_is_string(n) || !gx_dns_label_ok(json_string_value(n)))
                return gx_errf(err, 422, "spec.authProxy.groupNamespaces", "%s: namespace %zu is not a DNS label", k, j);
    }
    return 0;
}

/* ---- trusted proxy ---------------------------------------------------------------- */

static int peer_trusted(const gx_req *req, const json_t *ap)
{
    const char *ip = gx_req_peer(req);
    const json_t *ta = json_object_get(ap, "trustedAddresses");
    size_t i;
    const json_t *v;
    if (!ta) return !strcmp(ip, "127.0.0.1"); /* default: a proxy on the same machine */
    json_array_foreach(ta, i, v)
        if (!strcmp(json_string_value(v), ip)) return 1;
    return 0;
}

static void peer_addr(const gx_req *req, char *out, size_t n)
{
    snprintf(out, n, "%s", gx_req_peer(req));
}

/* This address's slot of recent failures (a small table: the slot whose latest
 * failure is oldest is reused, so the table cannot grow). */
static int fails_of(gx_portal *p, const char *addr)
{
    int best = 0;
    int64_t best_at = INT64_MAX;
    for (int i = 0; i < 64; i++) {
        if (!strcmp(p->fail_by[i].addr, addr)) return i;
        int last = (p->fail_by[i].next + GX_PORTAL_ADDR_FAILS - 1) % GX_PORTAL_ADDR_FAILS;
        if (p->fail_by[i].at[last] < best_at) { best_at = p->fail_by[i].at[last]; best = i; }
    }
    memset(&p->fail_by[best], 0, sizeof p->fail_by[best]);
    snprintf(p->fail_by[best].addr, sizeof p->fail_by[best].addr, "%s", addr);
    return best;
}

/* Locked out: GX_PORTAL_ADDR_FAILS failures within the last minute. at[next] is the
 * oldest of the last ones (0 while there have been fewer). */
static int addr_locked(const gx_portal *p, int slot, int64_t now)
{
    int64_t oldest = p->fail_by[slot].at[p->fail_by[slot].next];
    return oldest && now - oldest < 60000;
}

/* "Alice.Smith@example.com" -> "alice-smith": user names are DNS labels. */
static int user_from_header(const char *h, char *out, size_t n)
{
    size_t k = 0;
    for (const char *p = h; *p && *p != '@' && k + 1 < n; p++) {
        char ch = (char)tolower((unsigned char)*p);
        out[k++] = isalnum((unsigned char)ch) ? ch : '-';
    }
    while (k && out[k - 1] == '-') k--;
    out[k] = 0;
    return gx_dns_label_ok(out) ? 0 : -1;
}

const gx_user *gx_portal_proxy_user(gx_portal_ctx *c)
{
    const json_t *ap = json_object_get(json_object_get(gx_portal_config(c->d), "spec"), "authProxy");
    if (!json_is_true(json_object_get(ap, "enabled"))) return NULL;
    const char *uh = json_string_value(json_object_get(ap, "userHeader")) ?: "X-Forwarded-User";
    const char *gh = json_string_value(json_object_get(ap, "groupsHeader")) ?: "X-Forwarded-Groups";
    const char *hv = gx_req_header(c->req, uh);
    char name[64];
    if (!hv || !peer_trusted(c->req, ap) || strlen(hv) > 200 || user_from_header(hv, name, sizeof name)) return NULL;
    /* the identity provider is the source of truth: groups decide role and namespaces */
    json_t *ns = json_array();
    int admin = 0;
    const char *groups = gx_req_header(c->req, gh);
    char gbuf[2048];
    snprintf(gbuf, sizeof gbuf, "%s", groups ? groups : "");
    char *save = NULL;
    for (char *g = strtok_r(gbuf, ",", &save); g; g = strtok_r(NULL, ",", &save)) {
        while (*g == ' ') g++;
        size_t i;
        const json_t *x;
        json_array_foreach(json_object_get(ap, "adminGroups"), i, x) admin |= !strcmp(json_string_value(x), g);
        json_array_foreach(json_object_get(json_object_get(ap, "groupNamespaces"), g), i, x) {
            size_t j;
            const json_t *y;
            int dup = 0;
            json_array_foreach(ns, j, y) dup |= json_equal(x, y);
            if (!dup && json_array_size(ns) < 64) json_array_append(ns, (json_t *)x);
        }
    }
    gx_err e;
    gx_err_clear(&e);
    int rc = gx_auth_upsert_user(c->p->auth, name, admin || !strcmp(name, "admin"), ns, c->now, &e);
    json_decref(ns);
    if (rc) {
        fprintf(stderr, "gpuaas: portal: proxy user %s not accepted: %s\n", name, e.msg);
        return NULL;
    }
    if (!c->s || strcmp(c->s->user, name)) gx_portal_session_new(c, name, 1);
    return gx_auth_find(c->p->auth, name);
}

/* ---- sign-in page ------------------------------------------------------------------ */

static int password_login(const gx_daemon *d)
{
    const json_t *pl = json_object_get(json_object_get(gx_portal_config(d), "spec"), "passwordLogin");
    return !json_is_false(pl);
}

void gx_portal_login_page(gx_portal_ctx *c, int status, const char *error)
{
    /* sign-in forms get their own CSRF token, a double-submit cookie, as there is no session yet */
    char tok[64];
    gx_portal_random_token(tok, sizeof tok);
    char cookie[160];
    snprintf(cookie, sizeof cookie, "gx_login=%s; Path=/login; Max-Age=3600; HttpOnly; SameSite=Strict%s", tok,
             c->secure ? "; Secure" : "");
    gx_resp_header(c->resp, "Set-Cookie", cookie);
    gx_sbuf b;
    gx_sbuf_init(&b);
    gx_portal_page_begin(c, &b, "Sign in", NULL);
    gx_sbuf_puts(&b, "<div class=\"narrow card\">");
    if (error) gx_portal_putf(&b, "<p class=\"error\" role=\"alert\">%H</p>", error);
    if (password_login(c->d)) {
        gx_portal_putf(&b, "<form method=\"post\" action=\"/login\" class=\"stack\" data-progress=\"Signing in…\">"
                           "<input type=\"hidden\" name=\"_login\" value=\"%H\">"
                           "<label for=\"username\">User name</label>"
                           "<input id=\"username\" name=\"username\" autocomplete=\"username\" required maxlength=\"63\" autofocus>"
                           "<label for=\"password\">Password</label>"
                           "<input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"current-password\" required maxlength=\"256\">"
                           "<button type=\"submit\" class=\"primary\">Sign in</button></form>",
                       tok);
        gx_portal_putf(&b, "<details><summary>Sign in with an API token instead</summary>"
                           "<form method=\"post\" action=\"/login\" class=\"stack\">"
                           "<input type=\"hidden\" name=\"_login\" value=\"%H\">"
                           "<label for=\"token\">API token (gpt_…)</label>"
                           "<input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"off\" required maxlength=\"96\">"
                           "<p class=\"help\">The token <code>gpuaas serve</code> printed for the admin at its first start, "
                           "or one an admin created for you with <code>gpuaas users create</code>.</p>"
                           "<button type=\"submit\">Sign in with token</button></form></details>",
                       tok);
    } else {
        gx_sbuf_puts(&b, "<p>Sign-in goes through your organisation's single sign-on; reload this page through it.</p>");
    }
    gx_sbuf_puts(&b, "</div>");
    gx_portal_page_end(c, &b, status);
}

void gx_portal_login_post(gx_portal_ctx *c)
{
    char ck[64];
    const char *pre = gx_portal_cookie(c->req, "gx_login", ck, sizeof ck);
    const char *sent = gx_portal_form_get(c->form, "_login");
    if (!pre || strlen(pre) != GX_PORTAL_CSRF_LEN || strcmp(pre, sent)) {
        gx_portal_login_page(c, 403, "This sign-in form expired (or cookies are blocked); please try again.");
        return;
    }
    if (c->now - c->p->fail_window_ms > 60000) {
        c->p->fail_window_ms = c->now;
        c->p->fails = 0;
    }
    char addr[48];
    peer_addr(c->req, addr, sizeof addr);
    int mine = fails_of(c->p, addr);
    if (c->p->fails >= MAX_FAILS_PER_MIN || addr_locked(c->p, mine, c->now)) {
        gx_portal_login_page(c, 429, "Too many failed sign-ins in the last minute; wait a minute and try again.");
        return;
    }
    const char *token = gx_portal_form_get(c->form, "token");
    const gx_user *u = NULL;
    if (*token) {
        char hdr[128];
        snprintf(hdr, sizeof hdr, "Bearer %s", token);
        u = strlen(token) < 100 ? gx_auth_check(c->p->auth, hdr) : NULL;
    } else if (password_login(c->d)) {
        u = gx_auth_check_password(c->p->auth, gx_portal_form_get(c->form, "username"),
                                   gx_portal_form_get(c->form, "password"));
    }
    if (!u) {
        c->p->fails++;
        c->p->fail_by[mine].at[c->p->fail_by[mine].next] = c->now;
        c->p->fail_by[mine].next = (c->p->fail_by[mine].next + 1) % GX_PORTAL_ADDR_FAILS;
        gx_portal_login_page(c, 401, *token ? "That token is not valid." : "Wrong user name or password.");
        return;
    }
    /* a new session id at every sign-in: no session fixation */
    if (c->s) gx_portal_session_end(c);
    c->resp->nh = 0;
    gx_portal_session_new(c, u->name, 0);
    gx_portal_redirect(c, "/");
}

void gx_portal_logout(gx_portal_ctx *c)
{
    int proxy = c->s && c->s->proxy;
    gx_portal_session_end(c);
    const char *to = json_string_value(json_object_get(
        json_object_get(json_object_get(gx_portal_config(c->d), "spec"), "authProxy"), "logoutUrl"));
    gx_portal_redirect(c, proxy && to ? to : "/login");
}

/* ---- account ------------------------------------------------------------------------ */

void gx_portal_account_page(gx_portal_ctx *c, const char *note, const char *error)
{
    gx_sbuf b;
    gx_sbuf_init(&b);
    gx_portal_page_begin(c, &b, "Your account", NULL);
    if (note) gx_portal_putf(&b, "<p class=\"note\" role=\"status\">%H</p>", note);
    if (error) gx_portal_putf(&b, "<p class=\"error\" role=\"alert\">%H</p>", error);
    gx_portal_putf(&b, "<dl class=\"facts\"><dt>User</dt><dd>%H</dd><dt>Role</dt><dd>%s</dd><dt>Namespaces</dt><dd>",
                   c->user->name, c->user->admin ? "admin (every namespace)" : "user");
    size_t i;
    const json_t *n;
    json_array_foreach(c->user->namespaces, i, n) gx_portal_putf(&b, "<span class=\"tag\">%H</span> ", json_string_value(n));
    gx_sbuf_puts(&b, "</dd></dl>");
    if (c->s && c->s->proxy) {
        gx_sbuf_puts(&b, "<p>You signed in through your organisation's single sign-on; your password is managed there.</p>");
    } else {
        gx_sbuf_puts(&b, "<h2>Change your password</h2><form method=\"post\" action=\"/ui/account\" class=\"stack narrow\">");
        gx_portal_csrf_field(c, &b);
        gx_sbuf_puts(&b, "<label for=\"pw1\">New password (8 characters or more)</label>"
                          "<input id=\"pw1\" name=\"password\" type=\"password\" autocomplete=\"new-password\" minlength=\"8\" maxlength=\"256\" required>"
                          "<label for=\"pw2\">Repeat it</label>"
                          "<input id=\"pw2\" name=\"password2\" type=\"password\" autocomplete=\"new-password\" minlength=\"8\" maxlength=\"256\" required>"
                          "<button type=\"submit\" class=\"primary\">Change password</button></form>");
    }
    gx_portal_page_end(c, &b, error ? 422 : 200);
}

void gx_portal_account_post(gx_portal_ctx *c)
{
    const char *p1 = gx_portal_form_get(c->form, "password"), *p2 = gx_portal_form_get(c->form, "password2");
    if (strcmp(p1, p2)) { gx_portal_account_page(c, NULL, "The two passwords differ."); return; }
    gx_err e;
    gx_err_clear(&e);
    if (gx_auth_set_password(c->p->auth, c->user->name, p1, c->now, &e)) { gx_portal_account_page(c, NULL, e.msg); return; }
    /* whoever knew the old password is signed out everywhere else */
    gx_portal_session_drop_others(c, c->user->name);
    gx_portal_account_page(c, "Password changed; your other sessions were signed out.", NULL);
}
