/* routes: the REST API of docs/api.md.
 * Owns: URL matching, authentication and authorisation per route, query parameters,
 * turning bodies into manifests and results into JSON answers.
 * Must not: change state except through workloads.c / objects.c / auth.c, which
 * commit before they return (so every 2xx here describes durable state). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ops/daemon.h"
#include "ops/users.h"
#include "gpu/api.h"
#include "lib/yaml.h"
#include "portal/portal.h"
#include "maas/maas.h"

#define MAX_SEGS 8

typedef struct route_ctx {
    gx_daemon *d;
    gx_req *req;
    gx_resp *resp;
    const gx_user *user;
    char *seg[MAX_SEGS];
    int nseg;
    char buf[1024];
} route_ctx;

static int is(const route_ctx *c, const char *m) { return !strcmp(c->req->method, m); }

static void reply_err(route_ctx *c, gx_err *e) { gx_resp_error(c->resp, e); }

static void items(route_ctx *c, json_t *arr) { gx_resp_json(c->resp, 200, json_pack("{s:o}", "items", arr)); }

static int need_admin(route_ctx *c)
{
    if (c->user->admin) return 0;
    gx_resp_errorf(c->resp, 403, "only an admin may do this (you are %s)", c->user->name);
    return -1;
}

static int need_ns(route_ctx *c, const char *ns)
{
    if (gx_user_in_ns(c->user, ns)) return 0;
    gx_resp_errorf(c->resp, 403, "user %s has no access to namespace %s", c->user->name, ns);
    return -1;
}

static void method_not_allowed(route_ctx *c) { gx_resp_errorf(c->resp, 405, "%s is not allowed on %s", c->req->method, c->req->path); }

/* ---- workloads ------------------------------------------------------------------- */

static void submit(route_ctx *c)
{
    gx_err e;
    gx_err_clear(&e);
    gx_yaml_docs docs;
    if (gx_manifest_parse(c->req->body, c->req->body_len, &docs, &e)) { reply_err(c, &e); return; }
    if (docs.n > 100) {
        gx_yaml_docs_free(&docs);
        gx_resp_errorf(c->resp, 413, "more than 100 workloads in one submission");
        return;
    }
    json_t *out = json_array();
    size_t i;
    for (i = 0; i < docs.n; i++) {
        json_t *doc = docs.docs[i];
        const char *kind = json_string_value(json_object_get(doc, "kind"));
        const char *av = json_string_value(json_object_get(doc, "apiVersion"));
        if (!json_is_object(doc)) { gx_errf(&e, 400, "", "a manifest must be a mapping"); break; }
        if (!kind || !av || !((!strcmp(kind, "Job") && !strcmp(av, "batch/v1")) ||
                              (!strcmp(kind, "Workload") && !strcmp(av, "kueue.x-k8s.io/v1beta2")))) {
            gx_errf(&e, 400, kind ? "kind" : "", "submit takes batch/v1 Job or kueue.x-k8s.io/v1beta2 Workload, "
                    "not %s %s%s", av ? av : "(no apiVersion)", kind ? kind : "(no kind)",
                    kind && strcmp(kind, "Job") && strcmp(kind, "Workload") ? " (queues are applied: gpuaas apply -f)" : "");
            break;
        }
        json_t *md = json_object_get(doc, "metadata");
        if (!json_is_object(md)) { gx_errf(&e, 422, "metadata", "missing metadata with a name"); break; }
        if (!json_is_string(json_object_get(md, "namespace"))) {
            const char *def = c->user->admin || !json_array_size(c->user->namespaces)
                                  ? "default" : json_string_value(json_array_get(c->user->namespaces, 0));
            json_object_set_new(md, "namespace", json_string(def));
        }
        const char *ns = json_string_value(json_object_get(md, "namespace"));
        if (!gx_user_in_ns(c->user, ns)) {
            gx_errf(&e, 403, "metadata.namespace", "user %s may not submit to namespace %s", c->user->name, ns);
            break;
        }
        json_t *view = NULL;
        if (gx_d_submit(c->d, doc, NULL, &view, &e)) break;
        json_array_append_new(out, view);
    }
    if (i < docs.n) {
        e.doc = (int)i;
        if (docs.lines && docs.lines[i]) gx_linemap_annotate(docs.lines[i], &e);
        /* all or nothing: withdraw what this request already created */
        size_t k;
        json_t *v;
        json_array_foreach(out, k, v) {
            gx_err e2;
            const char *key = json_string_value(json_object_get(v, "key"));
            gx_d_cancel(c->d, key, "a failed submission", &e2);
            gx_d_delete(c->d, key, &e2);
        }
        json_decref(out);
        reply_err(c, &e);
    } else {
        gx_resp_json(c->resp, 201, json_pack("{s:o}", "items", out));
    }
    gx_yaml_docs_free(&docs);
}

static void list_workloads(route_ctx *c)
{
    gx_wl_filter f = {0};
    const char *ns = gx_req_query(c->req, "namespace");
    const char *one[1];
    const char **allowed = NULL;
    size_t nallowed = 0;
    if (ns) {
        if (need_ns(c, ns)) return;
        one[0] = ns;
        f.namespaces = one;
        f.n_namespaces = 1;
    } else if (!c->user->admin) {
        nallowed = json_array_size(c->user->namespaces);
        allowed = calloc(nallowed + 1, sizeof *allowed);
        if (!allowed) abort();
        for (size_t i = 0; i < nallowed; i++) allowed[i] = json_string_value(json_array_get(c->user->namespaces, i));
        f.namespaces = allowed;
        f.n_namespaces = nallowed;
        if (!nallowed) { free(allowed); items(c, json_array()); return; }
    }
    f.state = gx_req_query(c->req, "state");
    f.local_queue = gx_req_query(c->req, "queue");
    f.cluster_queue = gx_req_query(c->req, "clusterQueue");
    json_t *arr = gx_d_list(c->d, &f);
    /* "phase" is the daemon's word; let ?state= match it too (Running, Succeeded...) */
    free(allowed);
    items(c, arr);
}

static void workload_routes(route_ctx *c)
{
    gx_err e;
    gx_err_clear(&e);
    if (c->nseg == 3) {
        if (is(c, "GET")) list_workloads(c);
        else if (is(c, "POST")) submit(c);
        else method_not_allowed(c);
        return;
    }
    if (c->nseg < 5 || c->nseg > 6) { gx_resp_errorf(c->resp, 404, "no such path %s", c->req->path); return; }
    const char *ns = c->seg[3], *name = c->seg[4];
    if (need_ns(c, ns)) return;
    gx_wlkey k;
    if (gx_wlkey_make(&k, ns, name, &e)) { /* no workload can have this key: say why */
        gx_resp_errorf(c->resp, 404, "no such workload: %s: %s", e.field, e.msg);
        return;
    }
    const char *key = k.key;
    json_t *v = gx_d_view(c->d, key);
    if (!v) { gx_resp_errorf(c->resp, 404, "no workload %s", key); return; }
    if (c->nseg == 5) {
        if (is(c, "GET")) { gx_resp_json(c->resp, 200, v); return; }
        json_decref(v);
        if (is(c, "DELETE")) {
            if (gx_d_delete(c->d, key, &e)) reply_err(c, &e);
            else gx_resp_json(c->resp, 200, json_pack("{s:{s:s}}", "deleted", "key", key));
        } else method_not_allowed(c);
        return;
    }
    json_decref(v);
    if (!strcmp(c->seg[5], "cancel")) {
        if (!is(c, "POST")) { method_not_allowed(c); return; }
        if (gx_d_cancel(c->d, key, c->user->name, &e)) { reply_err(c, &e); return; }
        gx_resp_json(c->resp, 200, gx_d_view(c->d, key));
    } else if (!strcmp(c->seg[5], "logs")) {
        if (!is(c, "GET")) { method_not_allowed(c); return; }
        const char *f = gx_req_query(c->req, "follow");
        const char *p = gx_req_query(c->req, "pod");
        int follow = f && (!strcmp(f, "1") || !strcmp(f, "true"));
        int pod = -1;
        if (p) {
            char *end;
            long x = strtol(p, &end, 10);
            if (*end || x < 0 || x > 100000) { gx_resp_errorf(c->resp, 400, "pod must be a pod index"); return; }
            pod = (int)x;
        }
        if (gx_d_logs(c->d, key, pod, follow, c->resp, &e)) reply_err(c, &e);
    } else {
        gx_resp_errorf(c->resp, 404, "no such path %s", c->req->path);
    }
}

/* ---- objects, queues, GPUs --------------------------------------------------------- */

static void apply(route_ctx *c)
{
    if (!is(c, "POST")) { method_not_allowed(c); return; }
    if (need_admin(c)) return;
    gx_err e;
    gx_err_clear(&e);
    gx_yaml_docs docs;
    if (gx_manifest_parse(c->req->body, c->req->body_len, &docs, &e)) { reply_err(c, &e); return; }
    json_t *res = NULL;
    if (gx_d_apply(c->d, &docs, &res, &e)) reply_err(c, &e);
    else gx_resp_json(c->resp, 200, res);
    gx_yaml_docs_free(&docs);
}

static const struct { const char *plural, *kind; } kinds[] = {
    {"resourceflavors", "ResourceFlavor"}, {"cohorts", "Cohort"}, {"workloadpriorityclasses", "WorkloadPriorityClass"},
    {"nodes", "Node"}, {"clusterqueues", "ClusterQueue"}, {"localqueues", "LocalQueue"}, {NULL, NULL},
};

static json_t *find_named(json_t *arr, const char *ns, const char *name)
{
    size_t i;
    json_t *x;
    json_array_foreach(arr, i, x) {
        const json_t *md = json_object_get(x, "metadata");
        const char *n = json_string_value(json_object_get(x, "name")) ?: json_string_value(json_object_get(md, "name"));
        const char *s = json_string_value(json_object_get(x, "namespace")) ?: json_string_value(json_object_get(md, "namespace"));
        if (n && !strcmp(n, name) && (!ns || (s && !strcmp(s, ns)))) return json_incref(x);
    }
    return NULL;
}

static void object_routes(route_ctx *c, const char *plural, const char *kind)
{
    int lq = !strcmp(kind, "LocalQueue");
    const char *ns = NULL, *name = NULL;
    if (lq && c->nseg == 5) { ns = c->seg[3]; name = c->seg[4]; }
    else if (!lq && c->nseg == 4) name = c->seg[3];
    else if (c->nseg != 3) { gx_resp_errorf(c->resp, 404, "no such path %s", c->req->path); return; }
    if (is(c, "DELETE")) {
        if (!name) { method_not_allowed(c); return; }
        if (need_admin(c)) return;
        gx_err e;
        gx_err_clear(&e);
        if (gx_d_delete_object(c->d, kind, ns, name, &e)) reply_err(c, &e);
        else gx_resp_json(c->resp, 200, json_pack("{s:{s:s,s:s}}", "deleted", "kind", kind, "name", name));
        return;
    }
    if (!is(c, "GET")) { method_not_allowed(c); return; }
    json_t *arr;
    if (!strcmp(kind, "ClusterQueue")) arr = gx_engine_cluster_queues(c->d->eng);
    else if (lq) {
        const char *q = gx_req_query(c->req, "namespace");
        if (ns) q = ns;
        if (q && need_ns(c, q)) return;
        const char *one[1] = {q};
        size_t nn = 0;
        const char **allowed = NULL;
        if (q) { allowed = one; nn = 1; }
        else if (!c->user->admin) {
            nn = json_array_size(c->user->namespaces);
            allowed = calloc(nn + 1, sizeof *allowed);
            if (!allowed) abort();
            for (size_t i = 0; i < nn; i++) allowed[i] = json_string_value(json_array_get(c->user->namespaces, i));
        }
        arr = (allowed || c->user->admin) && (nn || c->user->admin) ? gx_engine_local_queues(c->d->eng, allowed, nn) : json_array();
        if (allowed && allowed != one) free((void *)allowed);
    } else arr = gx_engine_objects(c->d->eng, kind);
    if (!name) { items(c, arr); return; }
    json_t *x = find_named(arr, ns, name);
    json_decref(arr);
    if (!x) gx_resp_errorf(c->resp, 404, "no %s %s%s%s", kind, ns ? ns : "", ns ? "/" : "", name);
    else gx_resp_json(c->resp, 200, x);
    (void)plural;
}

/* /api/v1/gpus, /api/v1/gpus/{uuid}/utilization, POST /api/v1/gpus/mig (src/gpu/api.c) */
static void gpus(route_ctx *c)
{
    gx_err e;
    gx_err_clear(&e);
    json_t *out = NULL;
    if (gx_gpu_api(c->d->gpu, c->d->eng, c->req->method, (const char *const *)c->seg + 3, c->nseg - 3, c->req->body,
                   c->req->body_len, c->user->admin, gx_req_query(c->req, "window"), gx_loop_now(c->d->loop), &out, &e))
        reply_err(c, &e);
    else
        gx_resp_json(c->resp, 200, out);
}

/* ---- users ------------------------------------------------------------------------ */

static void users(route_ctx *c)
{
    if (need_admin(c)) return;
    gx_err e;
    gx_err_clear(&e);
    if (c->nseg == 3 && is(c, "GET")) { items(c, gx_auth_users(c->d->auth)); return; }
    if (c->nseg == 3 && is(c, "POST")) {
        json_error_t je;
        json_t *b = json_loadb(c->req->body, c->req->body_len, JSON_REJECT_DUPLICATES, &je);
        if (!json_is_object(b)) {
            json_decref(b);
            gx_resp_errorf(c->resp, 400, "body must be a JSON object {\"name\",\"namespaces\",\"admin\"}");
            return;
        }
        const char *name = json_string_value(json_object_get(b, "name"));
        json_t *ns = json_object_get(b, "namespaces");
        int admin = json_is_true(json_object_get(b, "admin"));
        char token[GX_TOKEN_MAX];
        /* c->user may move when the user table grows: do not use it after this call */
        if (gx_auth_create_user(c->d->auth, name, admin, ns ? ns : json_array(), token, gx_loop_now(c->d->loop), &e)) {
            json_decref(b);
            reply_err(c, &e);
            return;
        }
        gx_resp_json(c->resp, 201, json_pack("{s:s,s:O,s:b,s:s}", "name", name, "namespaces", ns ? ns : json_array(),
                                             "admin", admin, "token", token));
        json_decref(b);
        return;
    }
    if (c->nseg == 4 && is(c, "DELETE")) {
        if (gx_d_delete_user(c->d, c->seg[3], &e)) reply_err(c, &e);
        else gx_resp_json(c->resp, 200, json_pack("{s:{s:s}}", "deleted", "name", c->seg[3]));
        return;
    }
    method_not_allowed(c);
}

/* ---- dispatch ----------------------------------------------------------------------- */

static int split(route_ctx *c, const char *path)
{
    snprintf(c->buf, sizeof c->buf, "%s", path);
    c->nseg = 0;
    char *save = NULL;
    for (char *s = strtok_r(c->buf, "/", &save); s; s = strtok_r(NULL, "/", &save)) {
        if (c->nseg == MAX_SEGS) return -1;
        c->seg[c->nseg++] = s;
    }
    return 0;
}

void gx_d_route(gx_req *req, gx_resp *resp, void *ud)
{
    gx_daemon *d = ud;
    d->http_requests++;
    route_ctx c = {.d = d, .req = req, .resp = resp};
    const char *p = req->path;
    /* /health is where vLLM and OpenAI-compatible tooling probe a server */
    if (!strcmp(p, "/healthz") || !strcmp(p, "/health")) { gx_resp_text(resp, 200, "text/plain", "ok\n"); return; }
    if (!strcmp(p, "/readyz")) {
        if (d->ready) gx_resp_text(resp, 200, "text/plain", "ok\n");
        else gx_resp_text(resp, 503, "text/plain", "recovering\n");
        return;
    }
    if (!strcmp(p, "/metrics")) {
        char *m = gx_d_metrics(d);
        gx_resp_text(resp, 200, "text/plain; version=0.0.4", m);
        free(m);
        return;
    }
    if (!strncmp(p, "/v1/", 4)) { gx_maas_v1(d->maas, req, resp); return; } /* the OpenAI API */
    if (d->portal && gx_portal_route(d->portal, req, resp)) return;
    if (strncmp(p, "/api/v1/", 8) && strcmp(p, "/api/v1")) {
        gx_resp_errorf(resp, 404, "no such path %s (the API is under /api/v1)", p);
        return;
    }
    if (split(&c, p) || c.nseg < 3) { gx_resp_errorf(resp, 404, "no such path %s", p); return; }
    c.user = gx_auth_check(d->auth, gx_req_header(req, "Authorization"));
    /* the portal's pages call the API as the signed-in person: session cookie + CSRF header */
    if (!c.user && !gx_req_header(req, "Authorization") && d->portal) c.user = gx_portal_api_user(d->portal, req);
    if (!c.user) {
        gx_resp_errorf(resp, 401, "missing or invalid token: send Authorization: Bearer <token> "
                                  "(the CLI reads GPUAAS_TOKEN)");
        gx_resp_header(resp, "WWW-Authenticate", "Bearer");
        return;
    }
    const char *what = c.seg[2];
    if (!strcmp(what, "whoami") && c.nseg == 3) {
        gx_resp_json(resp, 200, json_pack("{s:s,s:b,s:O}", "name", c.user->name, "admin", c.user->admin,
                                          "namespaces", c.user->namespaces));
    } else if (!strcmp(what, "workloads")) workload_routes(&c);
    else if (!strcmp(what, "apply") && c.nseg == 3) apply(&c);
    else if (!strcmp(what, "gpus") && c.nseg <= 5) gpus(&c);
    else if (!strcmp(what, "users") && c.nseg <= 4) users(&c);
    else if (!strcmp(what, "keys") || !strcmp(what, "models") || !strcmp(what, "tiers") || !strcmp(what, "usage"))
        gx_maas_api(d->maas, c.user, req, resp, c.seg, c.nseg);
    else {
        for (int i = 0; kinds[i].plural; i++)
            if (!strcmp(what, kinds[i].plural)) { object_routes(&c, kinds[i].plural, kinds[i].kind); return; }
        gx_resp_errorf(resp, 404, "no such path %s", p);
    }
}
