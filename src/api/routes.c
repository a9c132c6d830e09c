/* routes: the REST API of docs/api.md (see api.h for what it owns). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "api/api.h"
#include "lib/alloc.h"
#include "lib/gxtime.h"
#include "lib/wlkey.h"
#include "lib/yaml.h"

#define MAX_SEGS 8

#define MAX_MOUNTS 8

struct gx_api {
    gx_api_env env;
    struct { const char *name; gx_api_resource_fn fn; void *ud; } mounts[MAX_MOUNTS];
    int nmounts;
};

gx_api *gx_api_new(const gx_api_env *env)
{
    gx_api *a = gx_xcalloc(1, sizeof *a);
    a->env = *env;
    return a;
}

void gx_api_free(gx_api *a) { free(a); }

int gx_api_mount(gx_api *a, const char *name, gx_api_resource_fn fn, void *ud)
{
    if (a->nmounts == MAX_MOUNTS) return -1;
    a->mounts[a->nmounts].name = name;
    a->mounts[a->nmounts].fn = fn;
    a->mounts[a->nmounts].ud = ud;
    a->nmounts++;
    return 0;
}

typedef struct route_ctx {
    gx_api *a;
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

/* POST .../approve|reject {"check": optional, "message"}: the gpuaas.dev/approval
 * admission-check controller's verdict (admins only; a rejection needs its reason). */
static void approve(route_ctx *c, const char *key, int yes)
{
    gx_err e;
    gx_err_clear(&e);
    json_error_t je;
    json_t *b = c->req->body_len ? json_loadb(c->req->body, c->req->body_len, JSON_REJECT_DUPLICATES, &je) : json_object();
    const json_t *chk = json_object_get(b, "check"), *msg = json_object_get(b, "message");
    if (!json_is_object(b)) gx_errf(&e, 400, "", "body must be a JSON object {\"check\", \"message\"}");
    else if (chk && !json_is_string(chk)) gx_errf(&e, 422, "check", "check must be the name of an admission check");
    else if (msg && !json_is_string(msg)) gx_errf(&e, 422, "message", "message must be a string");
    else if (!yes && !*(json_string_value(msg) ?: "")) gx_errf(&e, 422, "message", "a rejection needs a message: the reason the user will see");
    if (e.status || gx_d_approve(c->d, key, yes, json_string_value(chk), json_string_value(msg), c->user->name, &e))
        reply_err(c, &e);
    else
        gx_resp_json(c->resp, 200, gx_d_view(c->d, key));
    json_decref(b);
}

static int need_ns(route_ctx *c, const char *ns)
{
    if (gx_user_in_ns(c->user, ns)) return 0;
    gx_resp_errorf(c->resp, 403, "user %s has no access to namespace %s", c->user->name, ns);
    return -1;
}

/* 405 with Allow (RFC 9110 15.5.6): the methods the path answers, so a client can tell
 * a wrong method from a wrong path. */
static void method_not_allowed(route_ctx *c, const char *allow)
{
    gx_resp_errorf(c->resp, 405, "%s is not allowed on %s (%s)", c->req->method, c->req->path, allow);
    gx_resp_header(c->resp, "Allow", allow);
}

/* ---- ?format=k8s: Kueue's objects as Kubernetes shows them (ops/k8s_objects.c) ------ */

/* Did the request ask for ?format=k8s? Another format is refused (1: answered). */
static int want_k8s(route_ctx *c, int *answered)
{
    const char *f = gx_req_query(c->req, "format");
    *answered = 0;
    if (!f) return 0;
    if (!strcmp(f, "k8s")) return 1;
    gx_resp_errorf(c->resp, 400, "format: unknown format %s (the one format is k8s)", f);
    *answered = 1;
    return 0;
}

/* GET of kind as Kubernetes objects: one by name (404 when absent), or a kind: List.
 * ns: the one namespace asked for (checked), else the caller's (all for an admin). */
static void k8s_get(route_ctx *c, const char *kind, const char *ns, const char *name)
{
    const char *one[1] = {ns};
    const char **allowed = NULL;
    size_t nn = 0;
    if (ns) {
        allowed = one;
        nn = 1;
    } else if (!c->user->admin && (!strcmp(kind, "LocalQueue") || !strcmp(kind, "Workload"))) {
        nn = json_array_size(c->user->namespaces);
        if (!nn) { gx_resp_json(c->resp, 200, json_pack("{s:s,s:s,s:[]}", "apiVersion", "v1", "kind", "List", "items")); return; }
        allowed = gx_xcalloc(nn, sizeof *allowed);
        for (size_t i = 0; i < nn; i++) allowed[i] = json_string_value(json_array_get(c->user->namespaces, i));
    }
    json_t *arr = gx_d_k8s_objects(c->d, kind, allowed, nn, name);
    if (allowed != one) free(allowed);
    if (!name) { gx_resp_json(c->resp, 200, json_pack("{s:s,s:s,s:o}", "apiVersion", "v1", "kind", "List", "items", arr)); return; }
    if (json_array_size(arr)) gx_resp_json(c->resp, 200, json_incref(json_array_get(arr, 0)));
    else gx_resp_errorf(c->resp, 404, "no %s %s%s%s", kind, ns ? ns : "", ns ? "/" : "", name);
    json_decref(arr);
}

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
        /* ?cluster=NAME (gpuaas submit --cluster): every document goes to that cluster of the Fleet */
        const char *target = gx_req_query(c->req, "cluster");
        if (target) {
            if (!json_is_object(json_object_get(md, "annotations"))) json_object_set_new(md, "annotations", json_object());
            json_object_set_new(json_object_get(md, "annotations"), "gpuaas.dev/cluster", json_string(target));
        }
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
        /* a request for a cluster of the Fleet is committed to git as its user (ops/fleet.c):
         * who that is comes from the token, never from what the document says */
        json_t *ann = json_object_get(md, "annotations");
        if (json_is_object(ann) && json_object_get(ann, "gpuaas.dev/cluster"))
            json_object_set_new(ann, "gpuaas.dev/requested-by", json_string(c->user->name));
    }
    /* all or nothing, in one transaction */
    json_t **views = NULL;
    int failed = i < docs.n;
    if (failed) e.doc = (int)i;
    else {
        views = gx_xcalloc(docs.n, sizeof *views);
        e.doc = -1;   /* set to the document at fault, if one is */
        failed = gx_d_submit_all(c->d, docs.docs, docs.n, views, &e) != 0;
    }
    if (failed) {
        if (e.doc >= 0 && (size_t)e.doc < docs.n && docs.lines && docs.lines[e.doc])
            gx_linemap_annotate(docs.lines[e.doc], &e);
        reply_err(c, &e);
    } else {
        json_t *out = json_array();
        for (size_t k = 0; k < docs.n; k++) json_array_append_new(out, views[k]);
        gx_resp_json(c->resp, 201, json_pack("{s:o}", "items", out));
    }
    free(views);
    gx_yaml_docs_free(&docs);
}

static void list_workloads(route_ctx *c)
{
    gx_wl_filter f = {0};
    const char *ns = gx_req_query(c->req, "namespace");
    int answered;
    if (want_k8s(c, &answered)) {
        if (!ns || !need_ns(c, ns)) k8s_get(c, "Workload", ns, NULL);
        return;
    }
    if (answered) return;
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
        allowed = gx_xcalloc(nallowed + 1, sizeof *allowed);
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
        else method_not_allowed(c, "GET, POST");
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
        int answered;
        if (is(c, "GET") && want_k8s(c, &answered)) { json_decref(v); k8s_get(c, "Workload", ns, name); return; }
        if (is(c, "GET") && answered) { json_decref(v); return; }
        if (is(c, "GET")) { gx_resp_json(c->resp, 200, v); return; }
        json_decref(v);
        if (is(c, "DELETE")) {
            if (gx_d_delete(c->d, key, &e)) reply_err(c, &e);
            else gx_resp_json(c->resp, 200, json_pack("{s:{s:s}}", "deleted", "key", key));
        } else method_not_allowed(c, "GET, DELETE");
        return;
    }
    json_decref(v);
    if (!strcmp(c->seg[5], "cancel")) {
        if (!is(c, "POST")) { method_not_allowed(c, "POST"); return; }
        if (gx_d_cancel(c->d, key, c->user->name, &e)) { reply_err(c, &e); return; }
        gx_resp_json(c->resp, 200, gx_d_view(c->d, key));
    } else if (!strcmp(c->seg[5], "approve") || !strcmp(c->seg[5], "reject")) {
        if (!is(c, "POST")) { method_not_allowed(c, "POST"); return; }
        if (need_admin(c)) return;
        approve(c, key, c->seg[5][0] == 'a');
    } else if (!strcmp(c->seg[5], "logs")) {
        if (!is(c, "GET")) { method_not_allowed(c, "GET"); return; }
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
    if (!is(c, "POST")) { method_not_allowed(c, "POST"); return; }
    if (need_admin(c)) return;
    gx_err e;
    gx_err_clear(&e);
    gx_yaml_docs docs;
    if (gx_manifest_parse(c->req->body, c->req->body_len, &docs, &e)) { reply_err(c, &e); return; }
    json_t *res = NULL;
    if (gx_d_apply(c->d, &docs, &res, &e)) { reply_err(c, &e); gx_yaml_docs_free(&docs); return; }
    /* as the API server: each warning also as a `Warning: 299 - "text"` header (a few) */
    size_t wi;
    json_t *w;
    json_array_foreach(json_object_get(res, "warnings"), wi, w) {
        if (wi == 8) break;
        char h[128];   /* the size of a response header value: a longer warning is cut */
        size_t at = 0;
        at += (size_t)snprintf(h, sizeof h, "299 - \"");
        for (const char *s = json_string_value(w); s && *s && at < sizeof h - 3; s++) {
            if (*s == '"' || *s == '\\') h[at++] = '\\';
            h[at++] = *s;
        }
        h[at++] = '"';
        h[at] = 0;
        gx_resp_header(c->resp, "Warning", h);
    }
    gx_resp_json(c->resp, 200, res);
    gx_yaml_docs_free(&docs);
}

static const struct { const char *plural, *kind; } kinds[] = {
    {"resourceflavors", "ResourceFlavor"}, {"cohorts", "Cohort"}, {"workloadpriorityclasses", "WorkloadPriorityClass"},
    {"nodes", "Node"}, {"clusterqueues", "ClusterQueue"}, {"localqueues", "LocalQueue"},
    {"admissionchecks", "AdmissionCheck"}, {NULL, NULL},
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
        if (!name) { method_not_allowed(c, "GET"); return; }
        if (need_admin(c)) return;
        gx_err e;
        gx_err_clear(&e);
        if (gx_d_delete_object(c->d, kind, ns, name, &e)) reply_err(c, &e);
        else gx_resp_json(c->resp, 200, json_pack("{s:{s:s,s:s}}", "deleted", "kind", kind, "name", name));
        return;
    }
    if (!is(c, "GET")) { method_not_allowed(c, name ? "GET, DELETE" : "GET"); return; }
    int answered;
    if (strcmp(kind, "Node") && want_k8s(c, &answered)) {
        const char *q = lq ? (ns ? ns : gx_req_query(c->req, "namespace")) : NULL;
        if (!q || !need_ns(c, q)) k8s_get(c, kind, q, name);
        return;
    }
    if (strcmp(kind, "Node") && answered) return;
    json_t *arr;
    if (!strcmp(kind, "ClusterQueue")) arr = gx_engine_cluster_queues(gx_d_engine(c->d));
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
            allowed = gx_xcalloc(nn + 1, sizeof *allowed);
            for (size_t i = 0; i < nn; i++) allowed[i] = json_string_value(json_array_get(c->user->namespaces, i));
        }
        arr = (allowed || c->user->admin) && (nn || c->user->admin) ? gx_engine_local_queues(gx_d_engine(c->d), allowed, nn) : json_array();
        if (allowed && allowed != one) free((void *)allowed);
    } else arr = gx_engine_objects(gx_d_engine(c->d), kind);
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
    if (gx_d_gpus(c->d, c->req->method, (const char *const *)c->seg + 3, c->nseg - 3, c->req->body,
                  c->req->body_len, c->user->admin, gx_req_query(c->req, "window"), &out, &e)) {
        reply_err(c, &e);
        /* gpu/api.c names the one method each of its paths answers */
        if (e.status == 405) gx_resp_header(c->resp, "Allow", c->nseg == 4 && !strcmp(c->seg[3], "mig") ? "POST" : "GET");
    } else
        gx_resp_json(c->resp, 200, out);
}

/* GET /api/v1/reports/utilization?since=7d&by=namespace|class&namespace=NS: an admin's
 * covers every namespace (or the one asked for), a user's only their own (docs/api.md). */
static void reports(route_ctx *c)
{
    if (c->nseg != 4 || strcmp(c->seg[3], "utilization")) { gx_resp_errorf(c->resp, 404, "no such path %s", c->req->path); return; }
    if (!is(c, "GET")) { method_not_allowed(c, "GET"); return; }
    const char *want = gx_req_query(c->req, "namespace");
    size_t nn = json_array_size(c->user->namespaces);
    const char **allowed = gx_xcalloc(nn + 1, sizeof *allowed);
    size_t n = 0;
    for (size_t i = 0; i < nn; i++) {
        const char *ns = json_string_value(json_array_get(c->user->namespaces, i));
        if (ns && (!want || !strcmp(want, ns))) allowed[n++] = ns;
    }
    if (want && c->user->admin) { allowed[0] = want; n = 1; }
    if (want && !n) gx_resp_errorf(c->resp, 403, "namespace: %s is not one of your namespaces", want);
    else if (!n && !c->user->admin) gx_resp_errorf(c->resp, 403, "you have no namespace to report on");
    else {
        gx_err e;
        gx_err_clear(&e);
        json_t *out = NULL;
        if (gx_d_report_utilization(c->d, gx_req_query(c->req, "since"), gx_req_query(c->req, "by"), allowed,
                                    c->user->admin && !want ? 0 : n, &out, &e))
            reply_err(c, &e);
        else
            gx_resp_json(c->resp, 200, out);
    }
    free(allowed);
}

/* ---- reservations (ops/reservations.c, docs/api.md "Reservations") ----------------- */

/* A time of the query (RFC 3339), def when absent; -1 with a 400 naming the parameter. */
static int query_time(route_ctx *c, const char *k, int64_t def, int64_t *out)
{
    const char *v = gx_req_query(c->req, k);
    *out = def;
    if (!v) return 0;
    if (gx_time_parse(v, out) == 0) return 0;
    gx_err e;
    gx_errf(&e, 400, k, "%s is not an RFC 3339 time (2026-12-07T09:00:00Z)", v);
    reply_err(c, &e);
    return -1;
}

/* GET|POST /api/v1/reservations, GET|DELETE /api/v1/reservations/NS/NAME. A refused
 * booking answers 409 with the error and its conflicts and free windows beside it. */
static void reservations(route_ctx *c)
{
    gx_err e;
    gx_err_clear(&e);
    int64_t now = gx_loop_now(c->a->env.loop), from, to;
    if (c->nseg == 3 && is(c, "GET")) {
        if (query_time(c, "from", now, &from) || query_time(c, "to", from + 7 * 86400000LL, &to)) return;
        if (to <= from) { gx_errf(&e, 400, "to", "to must be after from"); reply_err(c, &e); return; }
        gx_resp_json(c->resp, 200, gx_d_reservations(c->d, c->user, gx_req_query(c->req, "namespace"), from, to));
        return;
    }
    if (c->nseg == 3 && is(c, "POST")) {
        gx_yaml_docs docs;
        if (gx_manifest_parse(c->req->body, c->req->body_len, &docs, &e)) { reply_err(c, &e); return; }
        json_t *out = NULL, *why = NULL;
        if (docs.n != 1) gx_errf(&e, 422, "", "one Reservation document is expected, not %zu", docs.n);
        else if (gx_d_reserve(c->d, c->user, docs.docs[0], &out, &why, &e) == 0) gx_resp_json(c->resp, 201, out);
        if (e.status && why) {
            json_t *err = json_pack("{s:i, s:s, s:s, s:s}", "code", e.status, "reason", "Conflict", "message", e.msg, "field", e.field);
            json_object_set(err, "conflicts", json_object_get(why, "conflicts"));
            json_object_set(err, "alternatives", json_object_get(why, "alternatives"));
            json_object_set_new(why, "error", err);
            gx_resp_json(c->resp, e.status, why);
        } else if (e.status)
            reply_err(c, &e);
        gx_yaml_docs_free(&docs);
        return;
    }
    if (c->nseg == 5 && is(c, "GET")) {
        json_t *all = gx_d_reservations(c->d, c->user, c->seg[3], now, now + 7 * 86400000LL), *hit = NULL;
        size_t i;
        json_t *x;
        json_array_foreach(json_object_get(all, "items"), i, x)
            if (!strcmp(json_string_value(json_object_get(x, "name")) ?: "", c->seg[4])) hit = json_incref(x);
        json_decref(all);
        if (hit) gx_resp_json(c->resp, 200, hit);
        else gx_resp_errorf(c->resp, 404, "no Reservation %s/%s", c->seg[3], c->seg[4]);
        return;
    }
    if (c->nseg == 5 && is(c, "DELETE")) {
        if (gx_d_unreserve(c->d, c->user, c->seg[3], c->seg[4], &e)) reply_err(c, &e);
        else gx_resp_json(c->resp, 200, json_pack("{s:{s:s,s:s}}", "deleted", "namespace", c->seg[3], "name", c->seg[4]));
        return;
    }
    if (c->nseg == 3 || c->nseg == 5) method_not_allowed(c, c->nseg == 3 ? "GET, POST" : "GET, DELETE");
    else gx_resp_errorf(c->resp, 404, "no such path %s", c->req->path);
}

/* ---- users ------------------------------------------------------------------------ */

/* GET /api/v1/templates: the portal's request templates as applied (`gpuaas get
 * templates`), by name; readable by every signed-in user, as the portal's catalog is. */
static int by_tpl_name(const void *x, const void *y)
{
    const json_t *a = *(json_t *const *)x, *b = *(json_t *const *)y;
    const char *na = json_string_value(json_object_get(json_object_get(a, "metadata"), "name"));
    const char *nb = json_string_value(json_object_get(json_object_get(b, "metadata"), "name"));
    return strcmp(na ? na : "", nb ? nb : "");
}

static void templates(route_ctx *c)
{
    if (!is(c, "GET")) { method_not_allowed(c, "GET"); return; }
    const char *k;
    json_t *m, *arr = json_array();
    json_object_foreach((json_t *)gx_d_objects(c->d), k, m)
        if (!strncmp(k, "Template/", 9)) json_array_append(arr, m);
    size_t n = json_array_size(arr);
    json_t **v = gx_xcalloc(n ? n : 1, sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = json_array_get(arr, i);
    qsort(v, n, sizeof *v, by_tpl_name);
    json_t *sorted = json_array();
    for (size_t i = 0; i < n; i++) json_array_append(sorted, v[i]);
    free(v);
    json_decref(arr);
    items(c, sorted);
}

static void users(route_ctx *c)
{
    if (need_admin(c)) return;
    gx_err e;
    gx_err_clear(&e);
    if (c->nseg == 3 && is(c, "GET")) { items(c, gx_auth_users(c->a->env.auth)); return; }
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
        if (gx_auth_create_user(c->a->env.auth, name, admin, ns ? ns : json_array(), token, gx_loop_now(c->a->env.loop), &e)) {
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
    method_not_allowed(c, c->nseg == 3 ? "GET, POST" : "DELETE");
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

/* The samples of /metrics that name a user (the gateway's per-user counters, label
 * user="..."), taken out in place: an anonymous scraper must not learn who uses the
 * gateway. Comments stay, so every family keeps its HELP and TYPE. */
static void drop_user_series(char *m)
{
    char *w = m;
    for (char *r = m; *r;) {
        char *nl = strchr(r, '\n');
        size_t n = nl ? (size_t)(nl - r) + 1 : strlen(r);
        char *brace = *r == '#' ? NULL : memchr(r, '{', n);
        int named = 0;
        if (brace) {
            char *end = memchr(brace, '}', n - (size_t)(brace - r));
            for (char *q = brace; end && q < end && !named; q++)
                named = (*q == '{' || *q == ',') && !strncmp(q + 1, "user=\"", 6);
        }
        if (!named) { memmove(w, r, n); w += n; }
        r += n;
    }
    *w = 0;
}

int gx_api_probes(void *ud, gx_req *req, gx_resp *resp)
{
    gx_api *a = ud;
    const char *p = req->path;
    if (strcmp(req->method, "GET") && strcmp(req->method, "HEAD")) {
        gx_resp_errorf(resp, 405, "%s is not allowed on %s (GET)", req->method, p);
        gx_resp_header(resp, "Allow", "GET, HEAD");
        return 1;
    }
    /* /health is where vLLM and OpenAI-compatible tooling probe a server */
    if (!strcmp(p, "/healthz") || !strcmp(p, "/health")) { gx_resp_text(resp, 200, "text/plain", "ok\n"); return 1; }
    if (!strcmp(p, "/readyz")) {
        if (gx_d_ready(a->env.ops)) gx_resp_text(resp, 200, "text/plain", "ok\n");
        else gx_resp_text(resp, 503, "text/plain", "recovering\n");
        return 1;
    }
    if (!strcmp(p, "/metrics")) {
        char *m = gx_d_metrics(a->env.ops);
        const gx_user *u = gx_auth_check(a->env.auth, gx_req_header(req, "Authorization"));
        if (!u || !u->admin) drop_user_series(m);   /* per-user series: an admin's token only */
        gx_resp_text(resp, 200, "text/plain; version=0.0.4", m);
        free(m);
        return 1;
    }
    return 0;
}

int gx_api_route(void *ud, gx_req *req, gx_resp *resp)
{
    gx_api *a = ud;
    route_ctx c = {.a = a, .d = a->env.ops, .req = req, .resp = resp};
    const char *p = req->path;
    if (strncmp(p, "/api/v1/", 8) && strcmp(p, "/api/v1")) {
        gx_resp_errorf(resp, 404, "no such path %s (the API is under /api/v1)", p);
        return 1;
    }
    if (split(&c, p) || c.nseg < 3) { gx_resp_errorf(resp, 404, "no such path %s", p); return 1; }
    c.user = gx_auth_check(a->env.auth, gx_req_header(req, "Authorization"));
    /* the portal's pages call the API as the signed-in person: session cookie + CSRF header */
    if (!c.user && !gx_req_header(req, "Authorization") && a->env.session) c.user = a->env.session(a->env.session_ud, req);
    if (!c.user) {
        gx_resp_errorf(resp, 401, "missing or invalid token: send Authorization: Bearer <token> "
                                  "(the CLI reads GPUAAS_TOKEN)");
        gx_resp_header(resp, "WWW-Authenticate", "Bearer");
        return 1;
    }
    const char *what = c.seg[2];
    if (!strcmp(what, "whoami") && c.nseg == 3) {
        if (!is(&c, "GET")) { method_not_allowed(&c, "GET"); return 1; }
        gx_resp_json(resp, 200, json_pack("{s:s,s:b,s:O}", "name", c.user->name, "admin", c.user->admin,
                                          "namespaces", c.user->namespaces));
        return 1;
    }
    if (!strcmp(what, "workloads")) { workload_routes(&c); return 1; }
    if (!strcmp(what, "apply") && c.nseg == 3) { apply(&c); return 1; }
    if (!strcmp(what, "gpus") && c.nseg <= 5) { gpus(&c); return 1; }
    if (!strcmp(what, "users") && c.nseg <= 4) { users(&c); return 1; }
    if (!strcmp(what, "reports")) { reports(&c); return 1; }
    if (!strcmp(what, "reservations")) { reservations(&c); return 1; }
    if (!strcmp(what, "templates") && c.nseg == 3) { templates(&c); return 1; }
    if (!strcmp(what, "clusters") && c.nseg == 3) {   /* the Fleet's clusters (docs/fleet.md) */
        if (!is(&c, "GET")) method_not_allowed(&c, "GET");
        else items(&c, gx_d_clusters(c.d, c.user));
        return 1;
    }
    for (int i = 0; i < a->nmounts; i++)
        if (!strcmp(what, a->mounts[i].name)) {
            a->mounts[i].fn(a->mounts[i].ud, c.user, req, resp, c.seg, c.nseg);
            return 1;
        }
    for (int i = 0; kinds[i].plural; i++)
        if (!strcmp(what, kinds[i].plural)) { object_routes(&c, kinds[i].plural, kinds[i].kind); return 1; }
    gx_resp_errorf(resp, 404, "no such path %s", p);
    return 1;
}
