/* cli/cmd_keys: the gateway from the command line: API keys (keys create, ls, revoke),
 * the models a user may call (models) and what was used (usage, of one user with --user).
 * Owns: how a new API key is shown: once, on stdout alone on its line (so scripts can
 * take it), with the "store it now" advice on stderr, like users create.
 * Must not: store or cache keys anywhere. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cmd.h"
#include "cli/fmt.h"

#define WANT_JSON(c) ((c)->out == GX_CLI_OUT_JSON || (c)->out == GX_CLI_OUT_YAML)

int gx_cli_run_keys_create(gx_cli_ctx *c);
int gx_cli_run_keys_ls(gx_cli_ctx *c);
int gx_cli_run_keys_revoke(gx_cli_ctx *c);
int gx_cli_run_models(gx_cli_ctx *c);
int gx_cli_run_usage(gx_cli_ctx *c);

int gx_cli_run_keys_create(gx_cli_ctx *c)
{
    const char *tier = gx_opt_get(&c->args, "tier"), *exp = gx_opt_get(&c->args, "expires");
    const char *ns = gx_opt_get(&c->args, "namespace");
    if (!tier || !*tier) return gx_cli_usage_error(c, "a key needs --tier TIER (gpuaas get tiers lists them)");
    json_t *req = json_pack("{s:s,s:s}", "name", c->args.pos[0], "tier", tier);
    if (exp) json_object_set_new(req, "expires", json_string(exp));
    if (ns) json_object_set_new(req, "namespace", json_string(ns));
    char *body = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!body) { fputs("error: out of memory\n", stderr); return 1; }
    gx_cli_resp r;
    int rc = 0;
    if (gx_cli_http_call(&c->http, "POST", "/api/v1/keys", body, strlen(body), "application/json", &r)) {
        rc = gx_cli_http_report(&c->http, &r, NULL);
    } else if (WANT_JSON(c)) {
        rc = gx_cli_print_json(c, r.json);
    } else {
        printf("key %s (%s) created: tier %s, expires %s\n", gx_cli_jstr_or(r.json, "id", "?"),
               gx_cli_jstr_or(r.json, "name", "?"), gx_cli_jstr_or(r.json, "tier", "?"), gx_cli_jstr_or(r.json, "expiresAt", "?"));
        printf("key: %s\n", gx_cli_jstr_or(r.json, "key", "(none in the answer)"));
        fputs("Store this key now: it is shown only once. Use it as an OpenAI API key: OPENAI_API_KEY=<key>\n"
              "OPENAI_BASE_URL=<server>/v1\n", stderr);
    }
    gx_cli_resp_free(&r);
    free(body);
    return rc;
}

int gx_cli_run_keys_ls(gx_cli_ctx *c)
{
    json_t *ans = gx_cli_get(&c->http, gx_opt_has(&c->args, "all") ? "/api/v1/keys?all=1" : "/api/v1/keys");
    if (!ans) return 1;
    int rc = 0;
    if (WANT_JSON(c)) {
        rc = gx_cli_print_json(c, ans);
    } else {
        static const char *const h[] = {"ID", "NAME", "USER", "TIER", "STATE", "CREATED", "EXPIRES"};
        gx_cli_table *t = gx_cli_table_new(7, h);
        size_t i;
        const json_t *k;
        json_array_foreach(json_object_get(ans, "items"), i, k) {
            char age[32];
            const char *cells[] = {gx_cli_jstr_or(k, "id", "-"), gx_cli_jstr_or(k, "name", "-"), gx_cli_jstr_or(k, "user", "-"),
                                   gx_cli_jstr_or(k, "tier", "-"), gx_cli_jstr_or(k, "state", "-"),
                                   gx_cli_fmt_since(gx_cli_jstr(k, "createdAt"), gx_cli_now(c), age, sizeof age),
                                   gx_cli_jstr_or(k, "expiresAt", "-")};
            if (t) gx_cli_table_add(t, cells);
        }
        if (t) gx_cli_table_print(t, stdout, 0);
        gx_cli_table_free(t);
    }
    json_decref(ans);
    return rc;
}

int gx_cli_run_keys_revoke(gx_cli_ctx *c)
{
    int rc = 0;
    for (int i = 0; i < c->args.npos; i++) {
        const char *id = c->args.pos[i];
        char e[100], path[200];
        /* accept the whole key too: gpa_<id>_<secret> */
        char idb[64];
        if (!strncmp(id, "gpa_", 4)) {
            snprintf(idb, sizeof idb, "%.12s", id + 4);
            id = idb;
        }
        if (!gx_cli_pct(id, e, sizeof e)) return gx_cli_usage_error(c, "key id too long");
        snprintf(path, sizeof path, "/api/v1/keys/%s", e);
        gx_cli_resp r;
        if (gx_cli_http_call(&c->http, "DELETE", path, NULL, 0, NULL, &r)) rc = gx_cli_http_report_about(&c->http, &r, id);
        else if (WANT_JSON(c) && r.json) gx_cli_print_json(c, r.json);
        else printf("key %s revoked; it no longer works\n", id);
        gx_cli_resp_free(&r);
    }
    return rc;
}

int gx_cli_run_models(gx_cli_ctx *c)
{
    json_t *ans = gx_cli_get(&c->http, "/api/v1/models");
    if (!ans) return 1;
    int rc = 0;
    if (WANT_JSON(c)) {
        rc = gx_cli_print_json(c, ans);
    } else {
        static const char *const h[] = {"NAME", "SERVED AS", "TIERS", "BACKEND", "STATE", "READY", "REQUESTS"};
        gx_cli_table *t = gx_cli_table_new(7, h);
        size_t i;
        const json_t *m;
        json_array_foreach(json_object_get(ans, "items"), i, m) {
            char served[512], tiers[512], ready[32], reqs[32];
            snprintf(ready, sizeof ready, "%lld/%lld", (long long)json_integer_value(json_object_get(m, "readyReplicas")),
                     (long long)json_integer_value(json_object_get(m, "replicas")));
            snprintf(reqs, sizeof reqs, "%lld", (long long)json_integer_value(json_object_get(m, "requests")));
            const char *cells[] = {gx_cli_jstr_or(m, "name", "-"),
                                   gx_cli_join(json_object_get(m, "servedNames"), ",", served, sizeof served),
                                   gx_cli_join(json_object_get(m, "tiers"), ",", tiers, sizeof tiers),
                                   gx_cli_jstr_or(m, "backend", "-"), gx_cli_jstr_or(m, "state", "-"), ready, reqs};
            if (t) gx_cli_table_add(t, cells);
        }
        if (t) gx_cli_table_print(t, stdout, 0);
        gx_cli_table_free(t);
        /* a model that cannot serve: why, and the end of its server's log, under the table */
        json_array_foreach(json_object_get(ans, "items"), i, m) {
            const char *why = gx_cli_jstr_or(m, "message", ""), *log = gx_cli_jstr_or(m, "log", "");
            if (*why) printf("\n%s: %s\n", gx_cli_jstr_or(m, "state", "-"), why);
            if (*log) {
                printf("  the end of its log:\n");
                for (const char *p = log; *p;) {
                    size_t n = strcspn(p, "\n");
                    printf("    %.*s\n", (int)n, p);
                    p += n + (p[n] == '\n');
                }
            }
        }
    }
    json_decref(ans);
    return rc;
}

int gx_cli_run_usage(gx_cli_ctx *c)
{
    const char *g = gx_opt_get(&c->args, "group-by"), *since = gx_opt_get(&c->args, "since");
    const char *user = gx_opt_get(&c->args, "user");
    char path[400], ge[64], se[64], ue[200];
    if (!gx_cli_pct(g ? g : "key", ge, sizeof ge) || !gx_cli_pct(since ? since : "24h", se, sizeof se))
        return gx_cli_usage_error(c, "--group-by or --since too long");
    if (user && (!*user || strlen(user) > 63 || !gx_cli_pct(user, ue, sizeof ue)))
        return gx_cli_usage_error(c, "--user wants a user name (at most 63 characters)");
    snprintf(path, sizeof path, "/api/v1/usage?group_by=%s&since=%s%s%s", ge, se, user ? "&user=" : "", user ? ue : "");
    json_t *ans = gx_cli_get(&c->http, path);
    if (!ans) return 1;
    int rc = 0;
    if (WANT_JSON(c)) {
        rc = gx_cli_print_json(c, ans);
    } else {
        const char *h[] = {"KEY", "REQUESTS", "PROMPT", "COMPLETION", "TOTAL", "ESTIMATED", "ERRORS", "LIMITED"};
        char head[16];
        snprintf(head, sizeof head, "%s", g ? g : "key");
        for (char *p = head; *p; p++) *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        h[0] = head;
        gx_cli_table *t = gx_cli_table_new(8, h);
        size_t i;
        const json_t *u;
        json_array_foreach(json_object_get(ans, "items"), i, u) {
            char n[7][32];
            const char *f[] = {"requests", "promptTokens", "completionTokens", "totalTokens", "estimatedRequests", "errors", "limited"};
            for (int k = 0; k < 7; k++) snprintf(n[k], sizeof n[k], "%lld", (long long)json_integer_value(json_object_get(u, f[k])));
            const char *cells[] = {gx_cli_jstr_or(u, "group", "-"), n[0], n[1], n[2], n[3], n[4], n[5], n[6]};
            if (t) gx_cli_table_add(t, cells);
        }
        if (t) gx_cli_table_print(t, stdout, 0);
        gx_cli_table_free(t);
    }
    json_decref(ans);
    return rc;
}
