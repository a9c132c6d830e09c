/* pages_admin: the admin's page: users (create with a password and a token shown
 * once, change role and namespaces, set a password, delete), namespaces and their
 * queues, tiers (the gateway's, when it is there), templates, and applying Kueue
 * configuration (YAML pasted or loaded from a file).
 * Owns: those forms; every change goes through gx_auth_*, gx_d_delete_user or gx_d_apply, which
 * validate and commit before they return.
 * Must not: be reachable by a non-admin (portal.c answers 403 before this file), or
 * hold a gx_user pointer across a change of the user table (it moves). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ops/ops.h"
#include "lib/yaml.h"
#include "portal/portal_int.h"

/* "team-a, team-b" -> ["team-a","team-b"] */
static json_t *ns_list(const char *s)
{
    json_t *a = json_array();
    char buf[2048];
    snprintf(buf, sizeof buf, "%s", s);
    char *save = NULL;
    for (char *t = strtok_r(buf, ", \t\r\n", &save); t; t = strtok_r(NULL, ", \t\r\n", &save)) json_array_append_new(a, json_string(t));
    return a;
}

static void users_section(gx_portal_ctx *c, gx_sbuf *b)
{
    gx_sbuf_puts(b, "<h2 id=\"users\">Users</h2><table class=\"list\"><thead><tr><th scope=\"col\">User</th><th scope=\"col\">Role and namespaces</th>"
                     "<th scope=\"col\">Password</th><th scope=\"col\"></th></tr></thead><tbody>");
    json_t *users = gx_auth_users(c->p->auth);
    size_t i;
    const json_t *u;
    json_array_foreach(users, i, u) {
        const char *name = json_string_value(json_object_get(u, "name"));
        char nss[1024] = "";
        size_t k;
        const json_t *n;
        json_array_foreach(json_object_get(u, "namespaces"), k, n)
            snprintf(nss + strlen(nss), sizeof nss - strlen(nss), "%s%s", k ? ", " : "", json_string_value(n));
        gx_portal_putf(b, "<tr><td>%H</td><td><form method=\"post\" action=\"/ui/admin/update\" class=\"inline\">", name);
        gx_portal_csrf_field(c, b);
        gx_portal_putf(b, "<input type=\"hidden\" name=\"user\" value=\"%H\"><label class=\"sr\" for=\"ns-%H\">Namespaces of %H</label>"
                          "<input id=\"ns-%H\" name=\"namespaces\" value=\"%H\" size=\"18\" maxlength=\"1000\">"
                          "<label><input type=\"checkbox\" name=\"admin\"%s> admin</label> <button type=\"submit\">Save</button></form></td>",
                       name, name, name, name, nss, json_is_true(json_object_get(u, "admin")) ? " checked" : "");
        gx_sbuf_puts(b, "<td><form method=\"post\" action=\"/ui/admin/password\" class=\"inline\">");
        gx_portal_csrf_field(c, b);
        gx_portal_putf(b, "<input type=\"hidden\" name=\"user\" value=\"%H\"><label class=\"sr\" for=\"pw-%H\">New password for %H</label>"
                          "<input id=\"pw-%H\" name=\"password\" type=\"password\" autocomplete=\"new-password\" minlength=\"8\" maxlength=\"256\" "
                          "placeholder=\"%s\" required> <button type=\"submit\">Set</button></form></td><td>",
                       name, name, name, name, gx_auth_has_password(c->p->auth, name) ? "set · change" : "none · set one");
        if (strcmp(name, "admin")) {
            gx_portal_putf(b, "<form method=\"post\" action=\"/ui/admin/delete\" class=\"inline\" data-confirm=\"Delete user %H? "
                              "Their tokens stop working at once.\">", name);
            gx_portal_csrf_field(c, b);
            gx_portal_putf(b, "<input type=\"hidden\" name=\"user\" value=\"%H\"><button type=\"submit\" class=\"danger\">Delete</button></form>", name);
        }
        gx_sbuf_puts(b, "</td></tr>");
    }
    json_decref(users);
    gx_sbuf_puts(b, "</tbody></table><h3>New user</h3><form method=\"post\" action=\"/ui/admin/create\" class=\"stack narrow\">");
    gx_portal_csrf_field(c, b);
    gx_sbuf_puts(b, "<label for=\"nu-name\">User name</label><input id=\"nu-name\" name=\"user\" required maxlength=\"63\" "
                     "pattern=\"[a-z0-9]([\\-a-z0-9]*[a-z0-9])?\" aria-describedby=\"nu-h\">"
                     "<p class=\"help\" id=\"nu-h\">Lowercase letters, digits and '-'.</p>"
                     "<label for=\"nu-ns\">Namespaces (comma-separated)</label><input id=\"nu-ns\" name=\"namespaces\" maxlength=\"1000\">"
                     "<label for=\"nu-pw\">Password (optional; 8 characters or more)</label>"
                     "<input id=\"nu-pw\" name=\"password\" type=\"password\" autocomplete=\"new-password\" minlength=\"8\" maxlength=\"256\">"
                     "<label><input type=\"checkbox\" name=\"admin\"> admin</label>"
                     "<button type=\"submit\" class=\"primary\">Create user</button></form>");
}

static void namespaces_section(gx_portal_ctx *c, gx_sbuf *b)
{
    json_t *lqs = gx_engine_local_queues(gx_d_engine(c->d), NULL, 0), *users = gx_auth_users(c->p->auth);
    gx_sbuf_puts(b, "<h2 id=\"namespaces\">Namespaces</h2><table class=\"list\"><thead><tr><th scope=\"col\">Namespace</th>"
                     "<th scope=\"col\">LocalQueue → ClusterQueue</th><th scope=\"col\">Users</th></tr></thead><tbody>");
    size_t i, k, j;
    const json_t *q, *u, *n;
    json_array_foreach(lqs, i, q) {
        const char *ns = json_string_value(json_object_get(q, "namespace"));
        gx_portal_putf(b, "<tr><td>%H</td><td>%H → %H</td><td>", ns, json_string_value(json_object_get(q, "name")),
                       json_string_value(json_object_get(q, "clusterQueue")));
        json_array_foreach(users, k, u)
            json_array_foreach(json_object_get(u, "namespaces"), j, n)
                if (!strcmp(json_string_value(n), ns)) gx_portal_putf(b, "<span class=\"tag\">%H</span> ", json_string_value(json_object_get(u, "name")));
        gx_sbuf_puts(b, "</td></tr>");
    }
    gx_sbuf_puts(b, "</tbody></table>");
    json_decref(lqs);
    json_decref(users);
}

static void tiers_and_templates(gx_portal_ctx *c, gx_sbuf *b)
{
    gx_sbuf_puts(b, "<h2 id=\"tiers\">Tiers</h2>");
    static const struct { const char *k, *words; } L[] = {
        {"requestsPerMinute", "requests a minute"}, {"requestsPerDay", "requests a day"}, {"tokensPerMinute", "tokens a minute"},
        {"tokensPerDay", "tokens a day"}, {"concurrentRequests", "requests at once"}, {NULL, NULL}};
    const char *k;
    json_t *m;
    int n = 0;
    json_object_foreach((json_t *)gx_d_objects(c->d), k, m) {
        if (strncmp(k, "Tier/", 5)) continue;
        const json_t *spec = json_object_get(m, "spec");
        if (!n++)
            gx_sbuf_puts(b, "<table class=\"list\" id=\"tier-table\"><thead><tr><th scope=\"col\">Tier</th><th scope=\"col\">Open to</th>"
                             "<th scope=\"col\">Limits per key</th><th scope=\"col\">Longest key lifetime</th>"
                             "<th scope=\"col\">Tokens per request</th></tr></thead><tbody>");
        gx_portal_putf(b, "<tr><td><b>%H</b></td><td>", json_string_value(json_object_get(json_object_get(m, "metadata"), "name")));
        size_t i, shown = 0;
        const json_t *x;
        json_array_foreach(json_object_get(spec, "namespaces"), i, x) gx_portal_putf(b, "%snamespace %H", shown++ ? ", " : "", json_string_value(x));
        json_array_foreach(json_object_get(spec, "users"), i, x) gx_portal_putf(b, "%suser %H", shown++ ? ", " : "", json_string_value(x));
        if (!shown) gx_sbuf_puts(b, "everyone");
        gx_sbuf_puts(b, "</td><td>");
        const char *lk;
        const json_t *lv;
        shown = 0;
        json_object_foreach((json_t *)json_object_get(spec, "limits"), lk, lv) {
            if (!strcmp(lk, "maxKeyLifetime")) continue;
            const char *words = lk;
            for (int j = 0; L[j].k; j++) if (!strcmp(L[j].k, lk)) words = L[j].words;
            char *v = json_dumps(lv, JSON_ENCODE_ANY | JSON_COMPACT);
            gx_portal_putf(b, "%s%H %H", shown++ ? "<br>" : "", v ? v : "", words);
            free(v);
        }
        if (!shown) gx_sbuf_puts(b, "no limit");
        char days[32];
        snprintf(days, sizeof days, "%d days", gx_portal_tier_key_days(m));
        const json_t *mt = json_object_get(spec, "maxTokensPerRequest");
        char tok[32];
        snprintf(tok, sizeof tok, "%lld", mt ? (long long)json_integer_value(mt) : 4096LL);
        gx_portal_putf(b, "</td><td>%H</td><td>%H</td></tr>", days, tok);
    }
    if (n) gx_sbuf_puts(b, "</tbody></table>");
    if (!n) gx_sbuf_puts(b, "<p class=\"sub\">No tiers applied. Tiers (request and token limits for model API keys) belong to the "
                             "model gateway; apply <code>kind: Tier</code> objects below once it is part of this server.</p>");
    json_t *tpls = gx_portal_templates(c->d);
    gx_portal_putf(b, "<h2 id=\"templates\">Templates</h2><p>%zu applied: <a href=\"/ui/new\">see the catalog</a>. "
                      "Change them by applying <code>kind: Template</code> documents below.</p>", json_array_size(tpls));
    json_decref(tpls);
}

void gx_portal_admin(gx_portal_ctx *c, const char *note, const char *error)
{
    gx_sbuf b;
    gx_sbuf_init(&b);
    gx_portal_page_begin(c, &b, "Admin", "admin");
    gx_sbuf_puts(&b, "<p class=\"toc\"><a href=\"#users\">Users</a> · <a href=\"#namespaces\">Namespaces</a> · "
                      "<a href=\"#tiers\">Tiers</a> · <a href=\"#templates\">Templates</a> · <a href=\"#apply\">Apply configuration</a></p>");
    if (note) gx_portal_putf(&b, "<div class=\"note\" role=\"status\">%H</div>", note);
    if (error) gx_portal_putf(&b, "<p class=\"error\" role=\"alert\">%H</p>", error);
    users_section(c, &b);
    namespaces_section(c, &b);
    tiers_and_templates(c, &b);
    gx_sbuf_puts(&b, "<h2 id=\"apply\">Apply configuration</h2><form method=\"post\" action=\"/ui/admin/apply\" class=\"stack\" "
                      "data-progress=\"Applying…\">");
    gx_portal_csrf_field(c, &b);
    gx_sbuf_puts(&b, "<label for=\"yaml\">Kueue objects (ResourceFlavor, Cohort, ClusterQueue, LocalQueue, WorkloadPriorityClass), "
                      "Nodes, Templates or a PortalConfig, as YAML; several documents separated by ---</label>"
                      "<textarea id=\"yaml\" name=\"yaml\" rows=\"14\" class=\"code\" required maxlength=\"262144\" spellcheck=\"false\"></textarea>"
                      "<label for=\"yaml-file\">…or load a file</label><input id=\"yaml-file\" type=\"file\" accept=\".yaml,.yml,.json\" data-load-into=\"yaml\">"
                      "<p class=\"help\">All or nothing: if one document is wrong, nothing is applied and the error names it.</p>"
                      "<button type=\"submit\" class=\"primary\">Apply</button></form>");
    gx_portal_page_end(c, &b, error ? 422 : 200);
}

static void apply_yaml(gx_portal_ctx *c)
{
    const char *y = gx_portal_form_get(c->form, "yaml");
    gx_err e;
    gx_err_clear(&e);
    gx_yaml_docs docs;
    if (gx_manifest_parse(y, strlen(y), &docs, &e)) {
        char m[700];
        gx_err_str(&e, "yaml", m, sizeof m);
        gx_portal_admin(c, NULL, m);
        return;
    }
    json_t *res = NULL;
    if (gx_d_apply(c->d, &docs, &res, &e)) {
        char m[700], where[64] = "";
        if (e.doc >= 0) snprintf(where, sizeof where, "document %d", e.doc + 1);
        gx_err_str(&e, where, m, sizeof m);
        gx_yaml_docs_free(&docs);
        gx_portal_admin(c, NULL, m);
        return;
    }
    gx_yaml_docs_free(&docs);
    gx_sbuf note;
    gx_sbuf_init(&note);
    gx_sbuf_puts(&note, "Applied: ");
    size_t i;
    const json_t *it;
    json_array_foreach(json_object_get(res, "items"), i, it) {
        const char *ns = json_string_value(json_object_get(it, "namespace"));
        gx_portal_putf(&note, "%s%s %s%s%s %s", i ? "; " : "", json_string_value(json_object_get(it, "kind")), ns ? ns : "",
                       ns ? "/" : "", json_string_value(json_object_get(it, "name")), json_string_value(json_object_get(it, "action")));
    }
    json_decref(res);
    fprintf(stderr, "gpuaas: portal: %s applied configuration\n", c->user->name);
    gx_portal_admin(c, note.p, NULL);
    gx_sbuf_free(&note);
}

void gx_portal_admin_post(gx_portal_ctx *c)
{
    const char *op = c->seg[2];
    char user[64];
    snprintf(user, sizeof user, "%s", gx_portal_form_get(c->form, "user"));
    int admin = !strcmp(gx_portal_form_get(c->form, "admin"), "on");
    const char *pw = gx_portal_form_get(c->form, "password");
    gx_err e;
    gx_err_clear(&e);
    char note[400];
    if (!strcmp(op, "apply")) { apply_yaml(c); return; }
    if (!strcmp(op, "create")) {
        json_t *ns = ns_list(gx_portal_form_get(c->form, "namespaces"));
        char token[GX_TOKEN_MAX];
        int rc = gx_auth_create_user(c->p->auth, user, admin, ns, token, c->now, &e);
        json_decref(ns);
        if (!rc && *pw && gx_auth_set_password(c->p->auth, user, pw, c->now, &e)) rc = -1;
        if (rc) { gx_portal_admin(c, NULL, e.msg); return; }
        snprintf(note, sizeof note, "User %s created. Their API token for the CLI, shown only now: %s", user, token);
        gx_portal_admin(c, note, NULL);
        return;
    }
    if (!strcmp(op, "update")) {
        json_t *ns = ns_list(gx_portal_form_get(c->form, "namespaces"));
        int rc = gx_auth_find(c->p->auth, user) ? gx_auth_upsert_user(c->p->auth, user, admin, ns, c->now, &e)
                                                : gx_errf(&e, 404, "user", "no user %s", user);
        json_decref(ns);
        c->user = c->s ? gx_auth_find(c->p->auth, c->s->user) : NULL;
        if (!c->user) { gx_portal_redirect(c, "/login"); return; }
        if (!c->user->admin) { gx_portal_redirect(c, "/"); return; }
        snprintf(note, sizeof note, "User %s saved.", user);
        gx_portal_admin(c, rc ? NULL : note, rc ? e.msg : NULL);
        return;
    }
    if (!strcmp(op, "password")) {
        int rc = gx_auth_set_password(c->p->auth, user, pw, c->now, &e);
        if (!rc) gx_portal_session_drop_others(c, user); /* the old password's sessions end */
        snprintf(note, sizeof note, "Password of %s set; their sessions were signed out.", user);
        gx_portal_admin(c, rc ? NULL : note, rc ? e.msg : NULL);
        return;
    }
    if (!strcmp(op, "delete")) {
        int self = c->s && !strcmp(c->s->user, user);
        if (self) { gx_portal_admin(c, NULL, "You cannot delete yourself here."); return; }
        /* the same path as DELETE /api/v1/users/NAME: keys revoked, sessions ended */
        int rc = gx_d_delete_user(c->d, user, &e);
        /* dropping sessions may move ours in the table; find it and the user again */
        c->s = gx_portal_session_find(c->p, c->req, c->now);
        c->user = c->s ? gx_auth_find(c->p->auth, c->s->user) : NULL;
        if (!c->user) { gx_portal_redirect(c, "/login"); return; }
        snprintf(note, sizeof note, "User %s deleted.", user);
        gx_portal_admin(c, rc ? NULL : note, rc ? e.msg : NULL);
        return;
    }
    gx_portal_error_page(c, 404, "Not found", "There is no such admin action.");
}
