/* cli/cmd_users: who am I, and user management (users create, ls, delete).
 * Owns: how a new token is shown: once, on stdout alone on its line (so scripts can
 * take it), with the "store it now" advice on stderr.
 * Must not: store or cache tokens anywhere. */
#include <stdlib.h>
#include <string.h>
#include "cli/cmd.h"
#include "cli/fmt.h"

#define WANT_JSON(c) ((c)->out == GX_CLI_OUT_JSON || (c)->out == GX_CLI_OUT_YAML)

/* "a, b,,c" -> ["a","b","c"]; NULL when an entry is not a plausible namespace name. */
static json_t *split_namespaces(const char *list, char *bad, size_t badn)
{
    json_t *arr = json_array();
    const char *p = list;
    while (arr && *p) {
        while (*p == ',' || *p == ' ') p++;
        size_t l = strcspn(p, ", ");
        if (!l) break;
        char ns[256];
        if (l >= sizeof ns || memchr(p, '/', l)) {
            snprintf(bad, badn, "%.*s", (int)(l > 60 ? 60 : l), p);
            json_decref(arr);
            return NULL;
        }
        memcpy(ns, p, l);
        ns[l] = 0;
        json_array_append_new(arr, json_string(ns));
        p += l;
    }
    return arr;
}

int gx_cli_run_users_create(gx_cli_ctx *c)
{
    const char *name = c->args.pos[0], *nsl = gx_opt_get(&c->args, "namespaces");
    int admin = gx_opt_has(&c->args, "admin");
    char bad[64];
    if (!admin && (!nsl || !*nsl)) return gx_cli_usage_error(c, "a user needs --namespaces A,B (or --admin)");
    json_t *nss = split_namespaces(nsl ? nsl : "", bad, sizeof bad);
    if (!nss) return gx_cli_usage_error(c, "'%s' is not a namespace name", bad);
    json_t *req = json_pack("{sssosb}", "name", name, "namespaces", nss, "admin", admin);
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!body) { fputs("error: out of memory\n", stderr); return 1; }
    gx_cli_resp r;
    int rc = 0;
    if (gx_cli_http_call(&c->http, "POST", "/api/v1/users", body, strlen(body), "application/json", &r)) {
        rc = gx_cli_http_report(&c->http, &r, NULL);
    } else if (WANT_JSON(c)) {
        rc = gx_cli_print_json(c, r.json);
    } else {
        char nsb[1024];
        const char *tok = gx_cli_jstr(r.json, "token");
        printf("user %s created (%s%s)\n", gx_cli_jstr_or(r.json, "name", name),
               json_is_true(json_object_get(r.json, "admin")) ? "admin; " : "namespaces: ",
               json_is_true(json_object_get(r.json, "admin")) ? "every namespace" :
               gx_cli_join(json_object_get(r.json, "namespaces"), ", ", nsb, sizeof nsb));
        printf("token: %s\n", tok ? tok : "(none in the answer)");
        fputs("Store this token now: it is shown only once. Use it with: export GPUAAS_TOKEN=<token>\n", stderr);
    }
    gx_cli_resp_free(&r);
    free(body);
    return rc;
}

int gx_cli_run_users_ls(gx_cli_ctx *c)
{
    json_t *ans = gx_cli_get(&c->http, "/api/v1/users");
    if (!ans) return 1;
    int rc = 0;
    if (WANT_JSON(c)) {
        rc = gx_cli_print_json(c, ans);
    } else {
        static const char *const h[] = {"NAME", "ADMIN", "NAMESPACES", "CREATED"};
        gx_cli_table *t = gx_cli_table_new(4, h);
        size_t i;
        const json_t *u;
        json_array_foreach(json_object_get(ans, "items"), i, u) {
            char ns[1024], age[32];
            const char *cells[] = {gx_cli_jstr_or(u, "name", NULL), json_is_true(json_object_get(u, "admin")) ? "yes" : "no",
                                   gx_cli_join(json_object_get(u, "namespaces"), ",", ns, sizeof ns),
                                   gx_cli_fmt_since(gx_cli_jstr(u, "createdAt"), gx_cli_now(c), age, sizeof age)};
            if (t) gx_cli_table_add(t, cells);
        }
        if (t) gx_cli_table_print(t, stdout, 0);
        gx_cli_table_free(t);
    }
    json_decref(ans);
    return rc;
}

int gx_cli_run_users_delete(gx_cli_ctx *c)
{
    char e[800], path[1024];
    if (!gx_cli_pct(c->args.pos[0], e, sizeof e)) return gx_cli_usage_error(c, "user name too long");
    snprintf(path, sizeof path, "/api/v1/users/%s", e);
    gx_cli_resp r;
    int rc = 0;
    if (gx_cli_http_call(&c->http, "DELETE", path, NULL, 0, NULL, &r)) rc = gx_cli_http_report(&c->http, &r, NULL);
    else if (WANT_JSON(c) && r.json) rc = gx_cli_print_json(c, r.json);
    else printf("user %s deleted; its tokens no longer work\n", c->args.pos[0]);
    gx_cli_resp_free(&r);
    return rc;
}

int gx_cli_run_whoami(gx_cli_ctx *c)
{
    json_t *me = gx_cli_get(&c->http, "/api/v1/whoami");
    if (!me) return 1;
    int rc = 0;
    if (WANT_JSON(c)) {
        rc = gx_cli_print_json(c, me);
    } else {
        char ns[1024];
        int admin = json_is_true(json_object_get(me, "admin"));
        printf("%-12s %s\n", "name:", gx_cli_jstr_or(me, "name", "?"));
        printf("%-12s %s\n", "role:", admin ? "admin (everything, every namespace)" : "user");
        printf("%-12s %s\n", "namespaces:", admin ? "all" : gx_cli_join(json_object_get(me, "namespaces"), ", ", ns, sizeof ns));
        printf("%-12s %s\n", "server:", c->http.server);
        printf("%-12s %s\n", "token from:", c->http.token_src ? c->http.token_src : "-");
    }
    json_decref(me);
    return rc;
}
