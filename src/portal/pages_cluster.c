/* pages_cluster: Queues (quota, usage, borrowing; admins edit quotas), GPUs (each
 * GPU with what runs on it and live charts). The Models page is pages_models.c.
 * Owns: these two pages and the quota change (a ClusterQueue re-applied with one
 * nominalQuota changed, through gx_d_apply: validated, all or nothing, durable).
 * Must not: show a non-admin the queues of other teams, or change anything else. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/num.h"
#include "core/quantity.h"
#include "lib/yaml.h"
#include "portal/portal_int.h"

static double qty(const json_t *v)
{
    int64_t m = 0;
    gx_err e;
    if (!v || gx_quantity_from_json(v, &m, "", &e)) return 0;
    return (double)m / 1000.0;
}

static int mine(gx_portal_ctx *c, const json_t *cqs_of_user, const char *cq)
{
    if (c->user->admin) return 1;
    size_t i;
    const json_t *x;
    json_array_foreach(cqs_of_user, i, x) if (!strcmp(json_string_value(x), cq)) return 1;
    return 0;
}

/* A refused quota change, shown on the form that sent it (not on a bare error page). */
typedef struct { const char *cq, *flavor, *resource, *value, *msg; } quota_error;

static void cq_card(gx_portal_ctx *c, gx_sbuf *b, const json_t *q, const quota_error *qe)
{
    const char *name = json_string_value(json_object_get(q, "name"));
    const char *cohort = json_string_value(json_object_get(q, "cohort"));
    gx_portal_putf(b, "<article class=\"card cq\" id=\"cq-%H\"><h2>%H</h2><p class=\"sub\">%s%H%s · %lld waiting · %lld admitted%s</p>",
                   name, name, cohort ? "cohort " : "no cohort", cohort ? cohort : "", "",
                   (long long)json_integer_value(json_object_get(q, "pendingWorkloads")),
                   (long long)json_integer_value(json_object_get(q, "admittedWorkloads")),
                   json_is_false(json_object_get(q, "active")) ? " · <b>inactive</b>" : "");
    gx_sbuf_puts(b, "<table class=\"list\"><thead><tr><th scope=\"col\">Resource</th><th scope=\"col\">Flavor</th>"
                     "<th scope=\"col\">Used / quota</th><th scope=\"col\"></th><th scope=\"col\">Borrowing</th>");
    if (c->user->admin) gx_sbuf_puts(b, "<th scope=\"col\">Change quota</th>");
    gx_sbuf_puts(b, "</tr></thead><tbody>");
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(q, "resources"), i, r) {
        const char *res = json_string_value(json_object_get(r, "resource")), *fl = json_string_value(json_object_get(r, "flavor"));
        const char *use = json_string_value(json_object_get(r, "usage")) ?: "0";
        const char *nom = json_string_value(json_object_get(r, "nominalQuota")) ?: "0";
        double u = qty(json_object_get(r, "usage")), n = qty(json_object_get(r, "nominalQuota"));
        char label[200], borrow[100];
        snprintf(label, sizeof label, "%s of %s %s used", use, nom, res);
        char nb[GX_NUM_MAX];
        if (u > n) snprintf(borrow, sizeof borrow, "borrows %s from the cohort", gx_num_fmt(u - n, nb, sizeof nb));
        else snprintf(borrow, sizeof borrow, "%s", "—");
        gx_portal_putf(b, "<tr><td>%H</td><td>%H</td><td>%H / %H</td><td>", res, fl, use, nom);
        gx_portal_bar(b, u, n, label);
        gx_portal_putf(b, "</td><td>%H</td>", borrow);
        if (c->user->admin) {
            int bad = qe && !strcmp(qe->cq, name) && !strcmp(qe->flavor, fl ? fl : "") && !strcmp(qe->resource, res ? res : "");
            gx_portal_putf(b, "<td><form method=\"post\" action=\"/ui/queues/%U/quota\" class=\"inline\" data-progress=\"Applying…\">", name);
            gx_portal_csrf_field(c, b);
            gx_portal_putf(b, "<input type=\"hidden\" name=\"flavor\" value=\"%H\"><input type=\"hidden\" name=\"resource\" value=\"%H\">"
                              "<label class=\"sr\" for=\"q-%H-%zu\">New nominal quota of %H in %H</label>"
                              "<input id=\"q-%H-%zu\" name=\"quota\" value=\"%H\" size=\"6\" maxlength=\"32\" required%s>"
                              "<button type=\"submit\">Set</button></form>",
                           fl, res, name, i, res, name, name, i, bad ? qe->value : nom, bad ? " aria-invalid=\"true\"" : "");
            if (bad) gx_portal_putf(b, "<p class=\"field-error\" role=\"alert\">%H</p>", qe->msg);
            gx_sbuf_puts(b, "</td>");
        }
        gx_sbuf_puts(b, "</tr>");
    }
    gx_sbuf_puts(b, "</tbody></table></article>");
}

static void queues_page(gx_portal_ctx *c, const quota_error *qe)
{
    gx_sbuf b;
    gx_sbuf_init(&b);
    gx_portal_page_begin(c, &b, c->user->admin ? "Queues and cohorts" : "Your team's queues", "queues");
    json_t *lqs;
    if (c->user->admin) lqs = gx_engine_local_queues(gx_d_engine(c->d), NULL, 0);
    else {
        const char *ns[64];
        size_t n = 0, i;
        const json_t *x;
        json_array_foreach(c->user->namespaces, i, x) if (n < 64) ns[n++] = json_string_value(x);
        lqs = n ? gx_engine_local_queues(gx_d_engine(c->d), ns, n) : json_array();
    }
    json_t *mycqs = json_array();
    gx_sbuf_puts(&b, "<section id=\"queues\" data-refresh=\"3\"><h2>Where to submit</h2><table class=\"list\"><thead><tr>"
                      "<th scope=\"col\">Namespace</th><th scope=\"col\">LocalQueue</th><th scope=\"col\">ClusterQueue</th>"
                      "<th scope=\"col\">Waiting</th><th scope=\"col\">Admitted</th></tr></thead><tbody>");
    size_t i;
    const json_t *q;
    json_array_foreach(lqs, i, q) {
        json_array_append(mycqs, json_object_get(q, "clusterQueue"));
        gx_portal_putf(&b, "<tr><td>%H</td><td>%H</td><td><a href=\"#cq-%H\">%H</a></td><td>%lld</td><td>%lld</td></tr>",
                       json_string_value(json_object_get(q, "namespace")), json_string_value(json_object_get(q, "name")),
                       json_string_value(json_object_get(q, "clusterQueue")), json_string_value(json_object_get(q, "clusterQueue")),
                       (long long)json_integer_value(json_object_get(q, "pendingWorkloads")),
                       (long long)json_integer_value(json_object_get(q, "admittedWorkloads")));
    }
    gx_sbuf_puts(&b, "</tbody></table>");
    if (!json_array_size(lqs)) gx_sbuf_puts(&b, "<p class=\"empty\">You have no queue yet: ask an admin to give your namespace a LocalQueue.</p>");
    json_t *cqs = gx_engine_cluster_queues(gx_d_engine(c->d));
    gx_sbuf_puts(&b, "<div class=\"cqs\">");
    json_array_foreach(cqs, i, q)
        if (mine(c, mycqs, json_string_value(json_object_get(q, "name")))) cq_card(c, &b, q, qe);
    gx_sbuf_puts(&b, "</div>");
    if (c->user->admin) {
        json_t *cohorts = gx_engine_objects(gx_d_engine(c->d), "Cohort");
        gx_sbuf_puts(&b, "<h2>Cohorts</h2><p class=\"sub\">ClusterQueues in one cohort lend each other unused quota.</p><ul>");
        json_t *names = json_object();
        json_array_foreach(cqs, i, q) {
            const char *co = json_string_value(json_object_get(q, "cohort"));
            if (!co) continue;
            json_t *l = json_object_get(names, co);
            if (!l) json_object_set_new(names, co, l = json_array());
            json_array_append(l, json_object_get(q, "name"));
        }
        const char *k;
        json_t *l;
        json_object_foreach(names, k, l) {
            gx_portal_putf(&b, "<li><b>%H</b>: ", k);
            size_t j;
            const json_t *x;
            json_array_foreach(l, j, x) gx_portal_putf(&b, "%s%H", j ? ", " : "", json_string_value(x));
            gx_sbuf_puts(&b, "</li>");
        }
        if (!json_object_size(names)) gx_sbuf_puts(&b, "<li>No cohorts: each queue has only its own quota.</li>");
        gx_portal_putf(&b, "</ul><p class=\"sub\">%zu Cohort object(s) applied.</p>", json_array_size(cohorts));
        json_decref(names);
        json_decref(cohorts);
    }
    gx_sbuf_puts(&b, "</section>");
    json_decref(cqs);
    json_decref(mycqs);
    json_decref(lqs);
    gx_portal_page_end(c, &b, qe ? 422 : 200);
}

void gx_portal_queues(gx_portal_ctx *c) { queues_page(c, NULL); }

/* Set spec.resourceGroups[*].flavors[flavor].resources[resource].nominalQuota. */
static int set_quota(json_t *cq, const char *flavor, const char *res, const char *value)
{
    size_t i, j, k;
    json_t *g, *f, *r;
    json_array_foreach(json_object_get(json_object_get(cq, "spec"), "resourceGroups"), i, g)
        json_array_foreach(json_object_get(g, "flavors"), j, f) {
            if (strcmp(json_string_value(json_object_get(f, "name")) ?: "", flavor)) continue;
            json_array_foreach(json_object_get(f, "resources"), k, r)
                if (!strcmp(json_string_value(json_object_get(r, "name")) ?: "", res)) {
                    json_object_set_new(r, "nominalQuota", json_string(value));
                    return 0;
                }
        }
    return -1;
}

void gx_portal_quota_post(gx_portal_ctx *c, const char *cq)
{
    if (!c->user->admin) { gx_portal_error_page(c, 403, "Not allowed", "Only admins change quotas."); return; }
    char key[200];
    snprintf(key, sizeof key, "ClusterQueue//%s", cq);
    const json_t *cur = json_object_get(gx_d_objects(c->d), key);
    const char *q = gx_portal_form_get(c->form, "quota");
    const char *fl = gx_portal_form_get(c->form, "flavor"), *res = gx_portal_form_get(c->form, "resource");
    int64_t milli;
    gx_err e;
    gx_err_clear(&e);
    if (!cur) { gx_portal_error_page(c, 404, "Not found", "No such ClusterQueue."); return; }
    if (strlen(q) > 32 || gx_quantity_parse(q, &milli, "quota", &e) || milli < 0) {
        quota_error qe = {cq, fl, res, q, "Not changed: a quota is a quantity such as 2, 500m or 64Gi."};
        queues_page(c, &qe);
        return;
    }
    json_t *m = json_deep_copy(cur);
    if (set_quota(m, fl, res, q)) {
        json_decref(m);
        quota_error qe = {cq, fl, res, q, "Not changed: that queue has no such flavor and resource."};
        queues_page(c, &qe);
        return;
    }
    json_t *d1[1] = {m};
    gx_yaml_docs docs = {.n = 1, .docs = d1};
    json_t *applied = NULL;
    int rc = gx_d_apply(c->d, &docs, &applied, &e);
    json_decref(applied);
    json_decref(m);
    if (rc) {
        char msg[sizeof e.msg + 32];
        snprintf(msg, sizeof msg, "Not changed: %s", e.msg);
        quota_error qe = {cq, fl, res, q, msg};
        queues_page(c, &qe);
        return;
    }
    fprintf(stderr, "gpuaas: portal: %s set the quota of %s in ClusterQueue %s to %s\n", c->user->name,
            gx_portal_form_get(c->form, "resource"), cq, q);
    gx_portal_redirect(c, "/ui/queues");
}

/* May the user see workload "ns/name"? Others' work shows only as "in use". */
static int key_visible(const gx_portal_ctx *c, const char *key)
{
    const char *slash = strchr(key, '/');
    if (!slash) return 0;
    char ns[128];
    snprintf(ns, sizeof ns, "%.*s", (int)(slash - key), key);
    return gx_user_in_ns(c->user, ns);
}

void gx_portal_gpus(gx_portal_ctx *c)
{
    gx_sbuf b;
    gx_sbuf_init(&b);
    gx_portal_page_begin(c, &b, "GPUs", "gpus");
    json_t *nodes = gx_engine_nodes(gx_d_engine(c->d));
    gx_sbuf_puts(&b, "<p class=\"sub\">Live charts sample every 2 seconds while this page is open. Utilisation and memory come "
                      "from the GPU inventory; where it reports none (a simulated node), the chart shows whether the GPU is "
                      "allocated.</p><section id=\"gpus\" data-refresh=\"5\">");
    size_t i, k;
    const json_t *n, *g;
    json_array_foreach(nodes, i, n) {
        gx_portal_putf(&b, "<h2>Node %H</h2><div class=\"grid\">", json_string_value(json_object_get(n, "name")));
        json_array_foreach(json_object_get(n, "gpus"), k, g) {
            const char *uuid = json_string_value(json_object_get(g, "uuid"));
            const json_t *wls = json_object_get(g, "workloads");
            gx_portal_putf(&b, "<article class=\"card gpu\"><h3>#%lld %H <span class=\"sub\">%H</span></h3><p><code>%H</code></p>",
                           (long long)json_integer_value(json_object_get(g, "index")), json_string_value(json_object_get(g, "model")),
                           json_string_value(json_object_get(g, "memory")), uuid);
            gx_portal_putf(&b, "<figure><figcaption>Utilisation</figcaption><svg class=\"spark\" viewBox=\"0 0 240 60\" "
                               "role=\"img\" aria-label=\"utilisation of GPU %H\" data-gpu=\"%H\" data-metric=\"util\"></svg></figure>"
                               "<figure><figcaption>Memory</figcaption><svg class=\"spark\" viewBox=\"0 0 240 60\" role=\"img\" "
                               "aria-label=\"memory of GPU %H\" data-gpu=\"%H\" data-metric=\"mem\"></svg></figure>",
                           uuid, uuid, uuid, uuid);
            gx_portal_putf(&b, "<ul class=\"slices\" data-slices=\"%H\"></ul><p>", uuid);
            if (!json_array_size(wls)) gx_sbuf_puts(&b, "<span class=\"sub\">free</span>");
            size_t j;
            const json_t *w;
            json_array_foreach(wls, j, w) {
                const char *key = json_string_value(json_object_get(w, "workload")) ?: "";
                if (key_visible(c, key)) gx_portal_putf(&b, "<a href=\"/ui/workloads/%H\">%H</a> ", key, key);
                else gx_sbuf_puts(&b, "<span class=\"tag\">in use by another team</span> ");
            }
            gx_sbuf_puts(&b, "</p></article>");
        }
        gx_sbuf_puts(&b, "</div>");
    }
    gx_sbuf_puts(&b, "</section>");
    json_decref(nodes);
    gx_portal_page_end(c, &b, 200);
}
