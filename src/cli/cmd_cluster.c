/* cli/cmd_cluster: the cluster-wide views and configuration: apply, queues, gpus, get.
 * Owns: the kinds "get" knows (names, short names, endpoints, columns).
 * Must not: validate manifests itself (the daemon does, with file/line answers). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "cli/cmd.h"
#include "cli/fmt.h"
#include "lib/gxtime.h"

#define WANT_JSON(c) ((c)->out == GX_CLI_OUT_JSON || (c)->out == GX_CLI_OUT_YAML)

/* ---- apply ----------------------------------------------------------------- */

int gx_cli_run_apply(gx_cli_ctx *c)
{
    json_t *answers;
    int rc = gx_cli_send_files(c, "/api/v1/apply", &answers);
    if (rc) return rc;
    /* the daemon's warnings (fields it accepts but ignores), on stderr in kubectl's style */
    size_t wa, wi;
    const json_t *an, *w;
    json_array_foreach(answers, wa, an) json_array_foreach(json_object_get(an, "warnings"), wi, w)
        fprintf(stderr, "Warning: %s\n", json_string_value(w) ? json_string_value(w) : "");
    if (WANT_JSON(c)) {
        rc = gx_cli_print_items(c, answers);
    } else {
        size_t i, j;
        const json_t *a, *it;
        json_array_foreach(answers, i, a) json_array_foreach(json_object_get(a, "items"), j, it) {
            const char *ns = gx_cli_jstr_or(it, "namespace", NULL);
            printf("%s %s%s%s %s\n", gx_cli_jstr_or(it, "kind", "object"), ns ? ns : "", ns ? "/" : "",
                   gx_cli_jstr_or(it, "name", "?"), gx_cli_jstr_or(it, "action", "applied"));
        }
    }
    json_decref(answers);
    return rc;
}

/* ---- queues ---------------------------------------------------------------- */

static void cq_rows(gx_cli_table *t, const json_t *cq)
{
    const json_t *res = json_object_get(cq, "resources"), *r;
    size_t i, n = json_array_size(res);
    char pend[32], adm[32], fr[256], nom[64], use[64], bl[64], ll[64];
    const char *active = json_is_false(json_object_get(cq, "active")) ? "false" : "true";
    for (i = 0; i < (n ? n : 1); i++) {
        r = json_array_get(res, i);
        const char *b = i ? gx_cli_table_blank : NULL; /* continuation rows show the resource only */
        snprintf(fr, sizeof fr, "%s/%s", gx_cli_jstr_or(r, "flavor", "-"), gx_cli_jstr_or(r, "resource", "-"));
        const char *cells[] = {
            b ? b : gx_cli_jstr_or(cq, "name", NULL), b ? b : gx_cli_jstr_or(cq, "cohort", NULL),
            b ? b : gx_cli_jstr_or(cq, "queueingStrategy", NULL), r ? fr : NULL,
            gx_cli_jnum(r, "nominalQuota", nom, sizeof nom), gx_cli_jnum(r, "usage", use, sizeof use),
            b ? b : gx_cli_jnum(cq, "pendingWorkloads", pend, sizeof pend),
            b ? b : gx_cli_jnum(cq, "admittedWorkloads", adm, sizeof adm),
            gx_cli_jnum(r, "borrowingLimit", bl, sizeof bl), gx_cli_jnum(r, "lendingLimit", ll, sizeof ll),
            b ? b : active,
        };
        gx_cli_table_add(t, cells);
    }
}

static void print_cqs(const json_t *items, int wide)
{
    static const char *const h[] = {"NAME", "COHORT", "STRATEGY", "FLAVOR/RESOURCE", "NOMINAL", "USAGE",
                                    "PENDING", "ADMITTED", "BORROW", "LEND", "ACTIVE"};
    gx_cli_table *t = gx_cli_table_new(wide ? 11 : 8, h);
    if (!t) return;
    size_t i;
    const json_t *cq;
    json_array_foreach(items, i, cq) cq_rows(t, cq);
    gx_cli_table_print(t, stdout, 0);
    gx_cli_table_free(t);
}

static void print_lqs(const json_t *items)
{
    static const char *const h[] = {"NAMESPACE", "NAME", "CLUSTERQUEUE", "PENDING", "ADMITTED", "USAGE"};
    gx_cli_table *t = gx_cli_table_new(6, h);
    if (!t) return;
    size_t i;
    const json_t *lq;
    json_array_foreach(items, i, lq) {
        char p[32], a[32], u[512];
        const char *cells[] = {gx_cli_jstr_or(lq, "namespace", NULL), gx_cli_jstr_or(lq, "name", NULL),
                               gx_cli_jstr_or(lq, "clusterQueue", NULL), gx_cli_jnum(lq, "pendingWorkloads", p, sizeof p),
                               gx_cli_jnum(lq, "admittedWorkloads", a, sizeof a),
                               gx_cli_kv(json_object_get(lq, "usage"), u, sizeof u)};
        gx_cli_table_add(t, cells);
    }
    gx_cli_table_print(t, stdout, 0);
    gx_cli_table_free(t);
}

static void ns_path(char *path, size_t n, const char *base, const char *ns)
{
    char e[600];
    if (ns && *ns && gx_cli_pct(ns, e, sizeof e)) snprintf(path, n, "%s?namespace=%s", base, e);
    else snprintf(path, n, "%s", base);
}

int gx_cli_run_queues(gx_cli_ctx *c)
{
    char path[1024];
    ns_path(path, sizeof path, "/api/v1/localqueues", gx_cli_list_ns(c));
    json_t *cqs = gx_cli_get(&c->http, "/api/v1/clusterqueues"), *lqs = cqs ? gx_cli_get(&c->http, path) : NULL;
    int rc = 0;
    if (!cqs || !lqs) {
        rc = 1;
    } else if (WANT_JSON(c)) {
        json_t *both = json_pack("{sOsO}", "clusterQueues", json_object_get(cqs, "items"),
                                 "localQueues", json_object_get(lqs, "items"));
        rc = gx_cli_print_json(c, both);
        json_decref(both);
    } else {
        puts("ClusterQueues:");
        if (json_array_size(json_object_get(cqs, "items"))) print_cqs(json_object_get(cqs, "items"), c->out == GX_CLI_OUT_WIDE);
        else puts("  (none: define them with gpuaas apply -f)");
        puts("\nLocalQueues:");
        if (json_array_size(json_object_get(lqs, "items"))) print_lqs(json_object_get(lqs, "items"));
        else puts("  (none)");
    }
    json_decref(cqs);
    json_decref(lqs);
    return rc;
}

/* ---- gpus: cmd_gpus.c ----------------------------------------------------- */

/* ---- get ------------------------------------------------------------------- */

typedef struct kind {
    const char *plural, *singular, *shrt, *path, *title;
    int namespaced;
    int ncols;
    const char *const *headers;
    const char *const *fields;  /* per column: JSON path, or a computed cell ("=join:..") */
    int k8s;                    /* -o json|yaml prints Kueue's object (GET ...?format=k8s) */
} kind;

static const char *const cq_h[] = {"NAME", "COHORT", "STRATEGY", "PENDING", "ADMITTED", "ACTIVE"};
static const char *const cq_f[] = {"name", "cohort", "queueingStrategy", "pendingWorkloads", "admittedWorkloads", "active"};
static const char *const lq_h[] = {"NAMESPACE", "NAME", "CLUSTERQUEUE", "PENDING", "ADMITTED"};
static const char *const lq_f[] = {"namespace", "name", "clusterQueue", "pendingWorkloads", "admittedWorkloads"};
static const char *const rf_h[] = {"NAME", "NODELABELS"};
static const char *const rf_f[] = {"metadata.name", "=kv:spec.nodeLabels"};
static const char *const co_h[] = {"NAME", "PARENT"};
static const char *const co_f[] = {"metadata.name", "spec.parentName"};
static const char *const wpc_h[] = {"NAME", "VALUE", "DESCRIPTION"};
static const char *const wpc_f[] = {"metadata.name", "value", "description"};
static const char *const ac_h[] = {"NAME", "CONTROLLER"};
static const char *const ac_f[] = {"metadata.name", "spec.controllerName"};
static const char *const node_h[] = {"NAME", "APIVERSION"};
static const char *const node_f[] = {"metadata.name", "apiVersion"};
static const char *const user_h[] = {"NAME", "ADMIN", "NAMESPACES", "CREATED"};
static const char *const user_f[] = {"name", "admin", "=join:namespaces", "createdAt"};
/* the gateway's (src/maas): what keys create --tier and a request's "model" name */
static const char *const tier_h[] = {"NAME", "REQUESTS", "TOKENS", "CONCURRENT", "KEY LIFETIME", "MAX TOKENS"};
static const char *const tier_f[] = {"name", "=win:limits.requests", "=win:limits.tokens", "=nz:limits.maxConcurrentRequests",
                                     "=dur:maxKeyLifetimeSeconds", "maxTokensPerRequest"};
static const char *const model_h[] = {"NAME", "SERVED AS", "TIERS", "BACKEND", "STATE", "READY", "REPLICAS"};
static const char *const model_f[] = {"name", "=join:servedNames", "=join:tiers", "backend", "state", "readyReplicas", "replicas"};

/* the portal's request templates */
static const char *const tpl_h[] = {"NAME", "TYPE", "TITLE"};
static const char *const tpl_f[] = {"metadata.name", "spec.type", "metadata.title"};

static const kind kinds[] = {
    {"clusterqueues", "clusterqueue", "cq", "/api/v1/clusterqueues", "ClusterQueue", 0, 6, cq_h, cq_f, 1},
    {"localqueues", "localqueue", "lq", "/api/v1/localqueues", "LocalQueue", 1, 5, lq_h, lq_f, 1},
    {"resourceflavors", "resourceflavor", "rf", "/api/v1/resourceflavors", "ResourceFlavor", 0, 2, rf_h, rf_f, 1},
    {"cohorts", "cohort", "co", "/api/v1/cohorts", "Cohort", 0, 2, co_h, co_f, 1},
    {"workloadpriorityclasses", "workloadpriorityclass", "wpc", "/api/v1/workloadpriorityclasses",
     "WorkloadPriorityClass", 0, 3, wpc_h, wpc_f, 1},
    {"admissionchecks", "admissioncheck", "ac", "/api/v1/admissionchecks", "AdmissionCheck", 0, 2, ac_h, ac_f, 0},
    {"nodes", "node", "no", "/api/v1/nodes", "Node", 0, 2, node_h, node_f, 0},
    {"users", "user", NULL, "/api/v1/users", "user", 0, 4, user_h, user_f, 0},
    {"tiers", "tier", NULL, "/api/v1/tiers", "Tier", 0, 6, tier_h, tier_f, 0},
    {"models", "model", NULL, "/api/v1/models", "Model", 0, 7, model_h, model_f, 0},
    {"templates", "template", "tpl", "/api/v1/templates", "Template", 0, 3, tpl_h, tpl_f, 0},
    {"workloads", "workload", "wl", "/api/v1/workloads", "workload", 1, 0, NULL, NULL, 1},
};

static const kind *find_kind(const char *s)
{
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcasecmp(s, kinds[i].plural) || !strcasecmp(s, kinds[i].singular) ||
            (kinds[i].shrt && !strcasecmp(s, kinds[i].shrt)))
            return &kinds[i];
    return NULL;
}

static const char *obj_name(const json_t *o)
{
    return gx_cli_jstr_or(o, "name", gx_cli_jstr(o, "metadata.name"));
}

static const char *obj_ns(const json_t *o)
{
    return gx_cli_jstr_or(o, "namespace", gx_cli_jstr(o, "metadata.namespace"));
}

/* Rate-limit windows [{limit, windowSeconds}] as "60/1m, 10000/1d" ("-": none). */
static const char *windows_cell(const json_t *ws, char *buf, size_t n)
{
    size_t i, o = 0;
    const json_t *w;
    buf[0] = 0;
    json_array_foreach(ws, i, w) {
        char lim[32], dur[32];
        int wr = snprintf(buf + o, n - o, "%s%s/%s", o ? ", " : "", gx_cli_jnum(w, "limit", lim, sizeof lim),
                          gx_duration_exact(json_integer_value(json_object_get(w, "windowSeconds")) * 1000, dur, sizeof dur));
        if (wr < 0 || (size_t)wr >= n - o) break;
        o += (size_t)wr;
    }
    if (!o) snprintf(buf, n, "-");
    return buf;
}

/* A computed cell ("=kind:path"), or NULL when f is a plain JSON path. */
static const char *computed_cell(const char *f, const json_t *o, char *buf, size_t n)
{
    if (!strncmp(f, "=kv:", 4)) return gx_cli_kv(gx_cli_jget(o, f + 4), buf, n);
    if (!strncmp(f, "=join:", 6)) return gx_cli_join(gx_cli_jget(o, f + 6), ", ", buf, n);
    if (!strncmp(f, "=win:", 5)) return windows_cell(gx_cli_jget(o, f + 5), buf, n);
    if (!strncmp(f, "=dur:", 5)) {   /* seconds as 30d, 12h; 0 or absent: "-" */
        json_int_t secs = json_integer_value(gx_cli_jget(o, f + 5));
        return secs > 0 ? gx_duration_exact(secs * 1000, buf, n) : "-";
    }
    if (!strncmp(f, "=nz:", 4))       /* a number where 0 means "no limit" */
        return json_integer_value(gx_cli_jget(o, f + 4)) ? gx_cli_jnum(o, f + 4, buf, n) : "-";
    return NULL;
}

static void get_table(const gx_cli_ctx *c, const kind *k, const json_t *items)
{
    gx_cli_table *t = gx_cli_table_new(k->ncols, k->headers);
    if (!t) return;
    size_t i;
    const json_t *o;
    json_array_foreach(items, i, o) {
        char buf[8][512];
        const char *cells[8];
        for (int col = 0; col < k->ncols; col++) {
            const char *f = k->fields[col];
            if ((cells[col] = computed_cell(f, o, buf[col], sizeof buf[col]))) continue;
            if (!strcmp(k->headers[col], "CREATED")) cells[col] = gx_cli_fmt_since(gx_cli_jstr(o, f), gx_cli_now(c), buf[col], sizeof buf[col]);
            else cells[col] = gx_cli_jnum(o, f, buf[col], sizeof buf[col]);
        }
        gx_cli_table_add(t, cells);
    }
    gx_cli_table_print(t, stdout, 0);
    gx_cli_table_free(t);
}

/* Keep the items named name (and in namespace ns, when given). */
static json_t *filter(const json_t *items, const char *ns, const char *name)
{
    json_t *keep = json_array();
    size_t i;
    json_t *o;
    json_array_foreach(items, i, o) {
        const char *n = obj_name(o), *s = obj_ns(o);
        if (n && !strcmp(n, name) && (!ns || !*ns || (s && !strcmp(s, ns)))) json_array_append(keep, o);
    }
    return keep;
}

int gx_cli_run_get(gx_cli_ctx *c)
{
    const kind *k = find_kind(c->args.pos[0]);
    if (!k) return gx_cli_usage_error(c, "unknown kind '%s'", c->args.pos[0]);
    const char *name = c->args.npos > 1 ? c->args.pos[1] : NULL, *ns = k->namespaced ? gx_cli_list_ns(c) : NULL;
    char nsb[256] = "", nameb[256] = "", err[300], path[1200];
    if (name && k->namespaced) {
        if (gx_cli_parse_ref(name, ns, NULL, nsb, sizeof nsb, nameb, sizeof nameb, err, sizeof err))
            return gx_cli_usage_error(c, "%s", err);
        ns = *nsb ? nsb : NULL;
        name = nameb;
    }
    ns_path(path, sizeof path, k->path, ns);
    int k8s = k->k8s && WANT_JSON(c);
    if (k8s) strncat(path, strchr(path, '?') ? "&format=k8s" : "?format=k8s", sizeof path - strlen(path) - 1);
    json_t *ans = gx_cli_get(&c->http, path);
    if (!ans) return 1;
    json_t *items = json_incref(json_object_get(ans, "items"));
    int rc = 0;
    if (name) {
        json_t *f = filter(items, ns, name);
        json_decref(items);
        items = f;
        if (!json_array_size(items)) {
            fprintf(stderr, "error: %s \"%s%s%s\" not found\n", k->title, ns ? ns : "", ns ? "/" : "", name);
            rc = 1;
        }
    }
    if (rc) {
        /* reported above */
    } else if (WANT_JSON(c)) {
        /* One object by name prints as itself, as kubectl get KIND NAME -o json does. */
        if (!name) {
            rc = gx_cli_print_json(c, ans);
        } else if (json_array_size(items) == 1) {
            rc = gx_cli_print_json(c, json_array_get(items, 0));
        } else {
            /* Kueue's kinds as kubectl lists them: a v1 List */
            json_t *l = k8s ? json_pack("{s:s,s:s,s:O}", "apiVersion", "v1", "kind", "List", "items", items)
                            : json_pack("{sO}", "items", items);
            rc = gx_cli_print_json(c, l);
            json_decref(l);
        }
    } else if (!json_array_size(items)) {
        fprintf(stderr, "No %s found%s%s.\n", k->plural, ns ? " in namespace " : "", ns ? ns : "");
    } else if (!k->ncols) {
        rc = gx_cli_print_workloads(c, items);
    } else {
        get_table(c, k, items);
    }
    json_decref(items);
    json_decref(ans);
    return rc;
}
