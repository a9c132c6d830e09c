/* pages_work: "My work" (Home) and one workload's page.
 * Owns: the list of the user's workloads with state, queue position, why it waits
 * in plain words, an estimate of when it starts and the time it has left; the
 * workload page (conditions as a timeline, devices, pods, their GPU memory and compute
 * share as the CUDA shim counts them, live logs, cancel).
 * Must not: show a workload outside the user's namespaces (404, as if absent), or
 * cancel one except through gx_d_cancel (which commits first). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "lib/alloc.h"
#include "lib/wlkey.h"
#include "portal/portal_int.h"
#include "lib/gxtime.h"

#define HOME_ROWS 50   /* rows of "My work" per page (the estimates cost a list each) */

static json_t *my_workloads(gx_portal_ctx *c)
{
    gx_wl_filter f = {0};
    const char *ns[64];
    size_t n = 0;
    if (!c->user->admin) {
        size_t i;
        const json_t *x;
        json_array_foreach(c->user->namespaces, i, x) if (n < 64) ns[n++] = json_string_value(x);
        if (!n) return json_array();
        f.namespaces = ns;
        f.n_namespaces = n;
    }
    return gx_d_list(c->d, &f);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* When admitted work in the same ClusterQueue reaches its time limit: the latest time
 * the p-th in line can expect a turn (work may end sooner). 0: no estimate. */
static int64_t estimate_start(gx_portal_ctx *c, const json_t *wl, int64_t pos, int *unlimited_out)
{
    const char *cq = json_string_value(json_object_get(wl, "clusterQueue"));
    gx_wl_filter f = {.cluster_queue = cq, .state = "Admitted"};
    json_t *adm = gx_d_list(c->d, &f);
    size_t n = json_array_size(adm), k = 0, i;
    int64_t *ends = gx_xcalloc(n + 1, sizeof *ends);
    const json_t *x;
    int unlimited = 0;
    json_array_foreach(adm, i, x) {
        json_int_t max = json_integer_value(json_object_get(x, "maxExecutionTimeSeconds"));
        json_int_t used = json_integer_value(json_object_get(x, "accumulatedPastExecutionTimeSeconds"));
        int64_t at = 0;
        gx_time_parse(json_string_value(json_object_get(x, "admittedAt")), &at);
        if (max <= 0 || !at) { unlimited++; continue; }
        ends[k++] = at + (int64_t)(max - used) * 1000;
    }
    qsort(ends, k, sizeof *ends, cmp_i64);
    int64_t t = !unlimited && pos >= 0 && (size_t)pos < k ? ends[pos] : 0;
    *unlimited_out = unlimited;
    free(ends);
    json_decref(adm);
    return t;
}

static void clock_time(int64_t ms, char *out, size_t n)
{
    time_t s = (time_t)(ms / 1000);
    struct tm tm;
    gmtime_r(&s, &tm);
    strftime(out, n, "%H:%M UTC", &tm);
}

void gx_portal_why(gx_portal_ctx *c, const json_t *wl, gx_sbuf *b)
{
    const char *reason = json_string_value(json_object_get(wl, "reason"));
    const char *msg = json_string_value(json_object_get(wl, "message"));
    const json_t *pos = json_object_get(wl, "positionInClusterQueue");
    char words[600];
    int plain = gx_portal_plain_message(msg, words, sizeof words);
    gx_portal_putf(b, "<div class=\"why\"><strong>%H</strong>", plain ? words : gx_portal_plain_reason(reason));
    if (json_is_integer(pos))
        gx_portal_putf(b, " <span class=\"pos\">#%lld in line</span>", (long long)json_integer_value(pos) + 1);
    int unlimited = 0;
    int64_t est = estimate_start(c, wl, json_is_integer(pos) ? (int64_t)json_integer_value(pos) : -1, &unlimited);
    char when[32], in[32];
    if (est > c->now) {
        clock_time(est, when, sizeof when);
        gx_duration_words(est - c->now, in, sizeof in);
        gx_portal_putf(b, "<br><span class=\"est\">Expected to start by %H (in %H) at the latest: running work in its "
                          "queue reaches its time limit then.</span>", when, in);
    } else if (unlimited) {
        gx_sbuf_puts(b, "<br><span class=\"est\">No start estimate: work running in its queue has no time limit.</span>");
    } else {
        gx_sbuf_puts(b, "<br><span class=\"est\">No start time can be promised: even when the running work in its queue "
                         "reaches its time limits, that frees too few GPUs for it. It starts when other work ends early or "
                         "the team gets more quota.</span>");
    }
    if (msg && *msg) gx_portal_putf(b, "<details><summary>The scheduler's words</summary><p>%H</p></details>", msg);
    gx_sbuf_puts(b, "</div>");
}

/* Time left for admitted work with a maximum execution time; -1 when unlimited. */
static int64_t time_left(const gx_portal_ctx *c, const json_t *wl)
{
    json_int_t max = json_integer_value(json_object_get(wl, "maxExecutionTimeSeconds"));
    json_int_t used = json_integer_value(json_object_get(wl, "accumulatedPastExecutionTimeSeconds"));
    int64_t at = 0;
    gx_time_parse(json_string_value(json_object_get(wl, "admittedAt")), &at);
    if (max <= 0 || !at) return -1;
    int64_t left = (int64_t)(max - used) * 1000 - (c->now - at);
    return left < 0 ? 0 : left;
}

static const char *gpus_of(const json_t *wl, char *out, size_t n)
{
    const json_t *ps = json_array_get(json_object_get(wl, "podSets"), 0);
    const json_t *req = json_object_get(ps, "requests");
    const char *k;
    const json_t *v;
    out[0] = 0;
    json_object_foreach((json_t *)req, k, v)
        if (!strncmp(k, "nvidia.com/", 11))
            snprintf(out + strlen(out), n - strlen(out), "%s%s %s", out[0] ? ", " : "", json_string_value(v), k + 11);
    return out[0] ? out : "none";
}

/* A Job the gateway runs for a workload-backed Model: maas-MODEL-N in the Model's
 * namespace (src/maas/models.c names them so). Shown apart: it is not the user's work. */
static int model_server(const gx_portal_ctx *c, const json_t *w)
{
    const char *ns = json_string_value(json_object_get(w, "namespace")), *name = json_string_value(json_object_get(w, "name"));
    if (!ns || !name || strncmp(name, "maas-", 5)) return 0;
    const char *k;
    json_t *m;
    json_object_foreach((json_t *)gx_d_objects(c->d), k, m) {
        if (strncmp(k, "Model/", 6)) continue;
        const json_t *wl = json_object_get(json_object_get(m, "spec"), "workload");
        const char *mn = json_string_value(json_object_get(json_object_get(m, "metadata"), "name"));
        const char *mns = json_string_value(json_object_get(wl, "namespace")) ?: "default";
        size_t l = mn ? strlen(mn) : 0;
        if (!wl || !l || strcmp(mns, ns) || strncmp(name + 5, mn, l) || name[5 + l] != '-' || !name[6 + l]) continue;
        if (strspn(name + 6 + l, "0123456789") == strlen(name + 6 + l)) return 1;
    }
    return 0;
}

/* In lists: a fleet request's cluster, and a warning while it is not yet published. */
static void fleet_tags(gx_sbuf *b, const json_t *w)
{
    const char *cl = json_string_value(json_object_get(w, "cluster"));
    if (!cl) return;
    gx_portal_putf(b, " <span class=\"tag cluster\">cluster %H</span>", cl);
    if (!strcmp(json_string_value(json_object_get(json_object_get(w, "publish"), "state")) ?: "", "Pending"))
        gx_sbuf_puts(b, " <span class=\"tag warn\">not yet published</span>");
}

static void row(gx_portal_ctx *c, gx_sbuf *b, const json_t *w)
{
    const char *ns = json_string_value(json_object_get(w, "namespace")), *name = json_string_value(json_object_get(w, "name"));
    const char *phase = json_string_value(json_object_get(w, "phase"));
    const char *state = json_string_value(json_object_get(w, "state"));
    char g[128], age[32], left[32];
    int64_t created = 0;
    gx_time_parse(json_string_value(json_object_get(w, "createdAt")), &created);
    gx_duration_words(c->now - created, age, sizeof age);
    gx_portal_putf(b, "<tr data-phase=\"%H\"><td><a href=\"/ui/workloads/%U/%U\">%H</a><div class=\"sub\">%H · %H</div></td>"
                      "<td>", phase, ns, name, name, ns, json_string_value(json_object_get(w, "queueName")));
    gx_portal_badge(b, phase);
    if (model_server(c, w)) gx_sbuf_puts(b, " <span class=\"tag model-server\">model server</span>");
    fleet_tags(b, w);
    gx_portal_putf(b, "</td><td>%H</td><td class=\"wide\">", gpus_of(w, g, sizeof g));
    if (state && !strcmp(state, "Pending")) gx_portal_why(c, w, b);
    else if (state && !strcmp(state, "Admitted")) {
        int64_t l = time_left(c, w);
        gx_duration_words(l, left, sizeof left);
        if (l >= 0) gx_portal_putf(b, "<span class=\"left\">%H left before its time limit</span>", left);
        else gx_sbuf_puts(b, "<span class=\"left\">no time limit</span>");
    } else {
        gx_portal_putf(b, "%H", json_string_value(json_object_get(w, "message")));
    }
    gx_portal_putf(b, "</td><td>%H ago</td></tr>", age);
}

/* Newest first (createdAt has a fixed width, so it sorts as text); within the same
 * millisecond (one submission of many) the later name first, as job-10 follows job-9. */
static int newest_first(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    int d = strcmp(json_string_value(json_object_get(y, "createdAt")) ?: "", json_string_value(json_object_get(x, "createdAt")) ?: "");
    return d ? d : strcmp(json_string_value(json_object_get(y, "key")) ?: "", json_string_value(json_object_get(x, "key")) ?: "");
}

static void table_head(gx_sbuf *b, const char *cls)
{
    gx_portal_putf(b, "<table class=\"list work\" id=\"%s\"><thead><tr><th scope=\"col\">Workload</th><th scope=\"col\">State</th>"
                      "<th scope=\"col\">GPUs</th><th scope=\"col\">Why / when</th><th scope=\"col\">Age</th></tr></thead><tbody>", cls);
}

void gx_portal_home(gx_portal_ctx *c)
{
    gx_sbuf b;
    gx_sbuf_init(&b);
    gx_portal_page_begin(c, &b, "My work", "home");
    json_t *all = my_workloads(c);
    size_t n = json_array_size(all), nmine = 0, nsrv = 0, i, running = 0, pending = 0;
    json_t **mine = gx_xcalloc(n + 1, sizeof *mine), **srv = gx_xcalloc(n + 1, sizeof *srv);
    json_t *w;
    json_array_foreach(all, i, w) {
        if (model_server(c, w)) { srv[nsrv++] = w; continue; }
        mine[nmine++] = w;
        const char *st = json_string_value(json_object_get(w, "state")) ?: "";
        running += !strcmp(st, "Admitted");
        pending += !strcmp(st, "Pending");
    }
    qsort(mine, nmine, sizeof *mine, newest_first);
    qsort(srv, nsrv, sizeof *srv, newest_first);
    size_t pages = nmine ? (nmine + HOME_ROWS - 1) / HOME_ROWS : 1;
    const char *pq = gx_req_query(c->req, "page");
    long page = pq ? strtol(pq, NULL, 10) : 1;
    if (page < 1) page = 1;
    if ((size_t)page > pages) page = (long)pages;
    gx_sbuf_puts(&b, "<p class=\"actions\"><a class=\"button primary\" href=\"/ui/new\">Request GPUs</a></p>");
    gx_sbuf_puts(&b, "<section id=\"work\" data-refresh=\"2\" aria-live=\"polite\">");
    gx_portal_putf(&b, "<ul class=\"stats\"><li><b>%zu</b> running</li><li><b>%zu</b> waiting</li><li><b>%zu</b> in all</li></ul>",
                   running, pending, nmine);
    if (!nmine) {
        gx_sbuf_puts(&b, "<p class=\"empty\">Nothing here yet. <a href=\"/ui/new\">Request a GPU from a template</a>: "
                          "a notebook, a training run, a fine-tuning job or a model.</p>");
    } else {
        /* newest first: what someone just asked for is what they look for; older work is
         * a page away (never cut silently) */
        table_head(&b, "my-work");
        size_t from = (size_t)(page - 1) * HOME_ROWS;
        for (size_t k = from; k < nmine && k < from + HOME_ROWS; k++) row(c, &b, mine[k]);
        gx_sbuf_puts(&b, "</tbody></table>");
        if (pages > 1) {
            gx_portal_putf(&b, "<nav class=\"pager\" aria-label=\"Pages of your work\"><span>Newest %zu–%zu of %zu</span> ", from + 1,
                           from + HOME_ROWS < nmine ? from + HOME_ROWS : nmine, nmine);
            if (page > 1) gx_portal_putf(&b, "<a href=\"/?page=%ld\" rel=\"prev\">Newer</a> ", page - 1);
            if ((size_t)page < pages) gx_portal_putf(&b, "<a href=\"/?page=%ld\" rel=\"next\">Older</a>", page + 1);
            gx_sbuf_puts(&b, "</nav>");
        }
    }
    if (nsrv) {
        gx_sbuf_puts(&b, "<h2 id=\"model-servers-h\">Model servers</h2><p class=\"sub\">The gateway runs these for the "
                          "<a href=\"/ui/models\">Models</a> page's models; they use your team's quota, but are not your requests.</p>");
        table_head(&b, "model-servers");
        for (size_t k = 0; k < nsrv; k++) row(c, &b, srv[k]);
        gx_sbuf_puts(&b, "</tbody></table>");
    }
    gx_sbuf_puts(&b, "</section>");
    free(mine);
    free(srv);
    json_decref(all);
    gx_portal_page_end(c, &b, 200);
}

/* ---- one workload -------------------------------------------------------------------- */

static json_t *visible(gx_portal_ctx *c, const char *ns, const char *name)
{
    gx_wlkey k;
    gx_err e;
    if (!gx_user_in_ns(c->user, ns) || gx_wlkey_make(&k, ns, name, &e)) return NULL;
    return gx_d_view(c->d, k.key);
}

static int by_time(const void *a, const void *b)
{
    const char *x = json_string_value(json_object_get(*(json_t *const *)a, "lastTransitionTime")) ?: "";
    const char *y = json_string_value(json_object_get(*(json_t *const *)b, "lastTransitionTime")) ?: "";
    return strcmp(x, y);
}

/* "2026-11-29T19:12:20.307Z" -> "2026-11-29 19:12:20 UTC" */
static void human_time(const char *t, char *out, size_t n)
{
    if (!t || strlen(t) < 19) { snprintf(out, n, "%s", t ? t : ""); return; }
    snprintf(out, n, "%.10s %.8s UTC", t, t + 11);
}

static void timeline(gx_sbuf *b, const json_t *w)
{
    const json_t *conds = json_object_get(w, "conditions");
    size_t n = json_array_size(conds), i;
    json_t **v = gx_xcalloc(n + 1, sizeof *v);
    for (i = 0; i < n; i++) v[i] = json_array_get(conds, i);
    qsort(v, n, sizeof *v, by_time);
    const char *created = json_string_value(json_object_get(w, "createdAt"));
    char when[40];
    human_time(created, when, sizeof when);
    gx_portal_putf(b, "<h2>History</h2><ol class=\"timeline\"><li><time datetime=\"%H\">%H</time> <b>Submitted</b></li>",
                   created, when);
    for (i = 0; i < n; i++) {
        const char *st = json_string_value(json_object_get(v[i], "status")) ?: "";
        const char *t = json_string_value(json_object_get(v[i], "lastTransitionTime"));
        char at[40];
        human_time(t, at, sizeof at);
        char words[600];
        gx_portal_plain_message(json_string_value(json_object_get(v[i], "message")), words, sizeof words);
        gx_portal_putf(b, "<li class=\"c-%s\"><time datetime=\"%H\">%H</time> <b>%H</b> <span class=\"sub\">%H</span></li>",
                       !strcmp(st, "True") ? "true" : "false", t, at,
                       gx_portal_plain_condition(json_string_value(json_object_get(v[i], "type")), !strcmp(st, "True")), words);
    }
    gx_sbuf_puts(b, "</ol>");
    free(v);
}

static void devices(gx_sbuf *b, const json_t *w)
{
    const json_t *pl = json_object_get(w, "placement");
    gx_sbuf_puts(b, "<h2>Devices</h2>");
    if (!json_array_size(pl)) { gx_sbuf_puts(b, "<p class=\"sub\">No devices yet: they are chosen when it is admitted.</p>"); return; }
    gx_sbuf_puts(b, "<table class=\"list\"><thead><tr><th scope=\"col\">Pod</th><th scope=\"col\">Node</th>"
                     "<th scope=\"col\">GPU</th><th scope=\"col\">UUID</th></tr></thead><tbody>");
    size_t i, k;
    const json_t *p, *d;
    json_array_foreach(pl, i, p)
        json_array_foreach(json_object_get(p, "devices"), k, d)
            gx_portal_putf(b, "<tr><td>%lld</td><td>%H</td><td>#%lld %H</td><td><code>%H</code></td></tr>",
                           (long long)json_integer_value(json_object_get(p, "pod")), json_string_value(json_object_get(p, "node")),
                           (long long)json_integer_value(json_object_get(d, "index")), json_string_value(json_object_get(d, "model")),
                           json_string_value(json_object_get(d, "uuid")));
    gx_sbuf_puts(b, "</tbody></table>");
}

/* The pods that ran, with how each ended in Kubernetes' words (Completed, Error,
 * OOMKilled): a Job that failed says why without opening its log. */
static void pods(gx_sbuf *b, const json_t *w)
{
    const json_t *ps = json_object_get(w, "pods");
    if (!json_array_size(ps)) return;
    gx_sbuf_puts(b, "<h2>Pods</h2><table class=\"list\"><thead><tr><th scope=\"col\">Pod</th><th scope=\"col\">State</th>"
                     "<th scope=\"col\">Reason</th><th scope=\"col\">Exit code</th></tr></thead><tbody>");
    size_t i;
    const json_t *p;
    json_array_foreach(ps, i, p) {
        const json_t *ex = json_object_get(p, "exitCode");
        char code[24] = "—";
        if (json_is_integer(ex)) snprintf(code, sizeof code, "%lld", (long long)json_integer_value(ex));
        gx_portal_putf(b, "<tr><td>%lld</td><td>%H</td><td>%H</td><td>%H</td></tr>",
                       (long long)json_integer_value(json_object_get(p, "index")),
                       json_string_value(json_object_get(p, "state")),
                       json_string_value(json_object_get(p, "reason")) ?: "", code);
    }
    gx_sbuf_puts(b, "</tbody></table>");
}

/* Bytes as GiB with one decimal (MiB below 1 GiB): what a person compares at a glance. */
static void bytes_words(json_int_t v, char *out, size_t n)
{
    if (v >= (json_int_t)1 << 30) snprintf(out, n, "%.1f GiB", (double)v / (double)((json_int_t)1 << 30));
    else snprintf(out, n, "%lld MiB", (long long)(v >> 20));
}

/* Each pod's GPU memory used against its limit and its compute share, as the CUDA shim
 * counts them (docs/gpu-sharing.md "Limits inside the pod"); a pod whose limits are not
 * enforced says so, never shows nothing. */
static void gpu_memory(gx_sbuf *b, const json_t *w)
{
    const json_t *ps = json_object_get(w, "pods");
    size_t i, k;
    const json_t *p, *g;
    int any = 0;
    json_array_foreach(ps, i, p) any |= json_object_get(p, "gpuLimitsEnforced") != NULL;
    if (!any) return;
    gx_sbuf_puts(b, "<h2>GPU memory</h2><table class=\"list\"><thead><tr><th scope=\"col\">Pod</th><th scope=\"col\">GPU</th>"
                     "<th scope=\"col\">Used / limit</th><th scope=\"col\">Peak</th><th scope=\"col\">Refused</th>"
                     "<th scope=\"col\">Compute share</th></tr></thead><tbody>");
    json_array_foreach(ps, i, p) {
        long long idx = (long long)json_integer_value(json_object_get(p, "index"));
        if (json_is_false(json_object_get(p, "gpuLimitsEnforced"))) {
            gx_portal_putf(b, "<tr><td>%lld</td><td colspan=\"5\">Not enforced: %H</td></tr>", idx,
                           json_string_value(json_object_get(p, "gpuLimitsNote")) ?: "");
            continue;
        }
        json_array_foreach(json_object_get(p, "gpuMemory"), k, g) {
            char used[32], lim[32] = "no limit", peak[32], share[64] = "—";
            bytes_words(json_integer_value(json_object_get(g, "usedBytes")), used, sizeof used);
            if (json_integer_value(json_object_get(g, "limitBytes")))
                bytes_words(json_integer_value(json_object_get(g, "limitBytes")), lim, sizeof lim);
            bytes_words(json_integer_value(json_object_get(g, "peakBytes")), peak, sizeof peak);
            const json_t *cs = json_object_get(g, "computeShare");
            const json_t *t = json_object_get(cs, "target"), *a = json_object_get(cs, "achieved");
            if (json_is_integer(t) && json_is_number(a))
                snprintf(share, sizeof share, "%.0f %% of %lld %% target", json_number_value(a), (long long)json_integer_value(t));
            else if (json_is_integer(t)) snprintf(share, sizeof share, "target %lld %%, not measured yet", (long long)json_integer_value(t));
            else if (json_is_number(a)) snprintf(share, sizeof share, "%.0f %% (no target)", json_number_value(a));
            gx_portal_putf(b, "<tr><td>%lld</td><td><code>%H</code></td><td>%H / %H</td><td>%H</td><td>%lld</td><td>%H</td></tr>",
                           idx, json_string_value(json_object_get(g, "device")), used, lim, peak,
                           (long long)json_integer_value(json_object_get(g, "refused")), share);
        }
    }
    gx_sbuf_puts(b, "</tbody></table>");
}

/* A fleet request's notice (docs/fleet.md): which cluster it went to and, while its file
 * is not in git yet, that it is kept and retried, with the last error. */
static void fleet_notice(gx_sbuf *b, const json_t *w)
{
    const char *cl = json_string_value(json_object_get(w, "cluster"));
    if (!cl) return;
    const json_t *p = json_object_get(w, "publish");
    const char *ps = json_string_value(json_object_get(p, "state")) ?: "";
    if (!strcmp(ps, "Pending"))
        gx_portal_putf(b, "<p class=\"notice\" role=\"status\"><strong>Not yet published</strong> to cluster %H. It is kept "
                          "and tried again%s%H.</p>", cl, json_object_get(p, "lastError") ? ": " : "",
                       json_string_value(json_object_get(p, "lastError")) ?: "");
    else {
        char sc[8];
        snprintf(sc, sizeof sc, "%.7s", json_string_value(json_object_get(p, "commit")) ?: "-");
        gx_portal_putf(b, "<p class=\"notice\">Sent to cluster %H through git (%H, commit %H).</p>", cl, ps, sc);
    }
}

static void status_section(gx_portal_ctx *c, gx_sbuf *b, const json_t *w)
{
    const char *state = json_string_value(json_object_get(w, "state")) ?: "";
    const char *phase = json_string_value(json_object_get(w, "phase"));
    gx_sbuf_puts(b, "<section id=\"status\" data-refresh=\"2\" aria-live=\"polite\"><p class=\"state\">");
    gx_portal_badge(b, phase);
    /* a waiting workload's message is in the "why" box below, in plain words first */
    if (strcmp(state, "Pending")) gx_portal_putf(b, " <span class=\"msg\">%H</span>", json_string_value(json_object_get(w, "message")));
    gx_sbuf_puts(b, "</p>");
    fleet_notice(b, w);
    if (!strcmp(state, "Pending")) gx_portal_why(c, w, b);
    char left[32], g[128];
    int64_t l = !strcmp(state, "Admitted") ? time_left(c, w) : -1;
    gx_duration_words(l, left, sizeof left);
    gx_portal_putf(b, "<dl class=\"facts\"><dt>Queue</dt><dd>%H → %H</dd><dt>Priority</dt><dd>%H</dd><dt>GPUs</dt><dd>%H</dd>"
                      "<dt>Image</dt><dd><code>%H</code></dd><dt>Time left</dt><dd>%H</dd></dl>",
                   json_string_value(json_object_get(w, "queueName")), json_string_value(json_object_get(w, "clusterQueue")),
                   json_string_value(json_object_get(w, "priorityClass")) ?: "default", gpus_of(w, g, sizeof g),
                   json_string_value(json_object_get(w, "image")), l >= 0 ? left : "—");
    timeline(b, w);
    devices(b, w);
    pods(b, w);
    gpu_memory(b, w);
    gx_sbuf_puts(b, "</section>");
}

/* Waiting for admission checks: Pending with a check not yet Ready (the view lists
 * them; see core/engine_check.c). */
static int waits_for_checks(const json_t *w)
{
    if (strcmp(json_string_value(json_object_get(w, "state")) ?: "", "Pending")) return 0;
    size_t i;
    json_t *ch;
    json_array_foreach(json_object_get(w, "admissionChecks"), i, ch)
        if (!strcmp(json_string_value(json_object_get(ch, "state")) ?: "", "Pending")) return 1;
    return 0;
}

void gx_portal_workload(gx_portal_ctx *c, const char *ns, const char *name)
{
    json_t *w = visible(c, ns, name);
    if (!w) { gx_portal_error_page(c, 404, "Not found", "No such workload in your namespaces."); return; }
    gx_sbuf b;
    gx_sbuf_init(&b);
    char title[300];
    snprintf(title, sizeof title, "%s/%s", ns, name);
    gx_portal_page_begin(c, &b, title, "home");
    const char *state = json_string_value(json_object_get(w, "state")) ?: "";
    if (!strcmp(state, "Pending") || !strcmp(state, "Admitted")) {
        gx_portal_putf(&b, "<form method=\"post\" action=\"/ui/workloads/%U/%U/cancel\" class=\"actions\" "
                           "data-confirm=\"Cancel %H? Its processes are stopped.\" data-progress=\"Cancelling…\">", ns, name, title);
        gx_portal_csrf_field(c, &b);
        gx_sbuf_puts(&b, "<button type=\"submit\" class=\"danger\">Cancel</button></form>");
    }
    if (c->user->admin && waits_for_checks(w)) {
        /* the gpuaas.dev/approval controller: an admin's verdict, with a reason */
        gx_portal_putf(&b, "<form method=\"post\" action=\"/ui/workloads/%U/%U/verdict\" class=\"actions verdict\">", ns, name);
        gx_portal_csrf_field(c, &b);
        gx_sbuf_puts(&b, "<label>Reason (the user sees it; required to reject) "
                          "<input name=\"message\" maxlength=\"512\" autocomplete=\"off\"></label> "
                          "<button type=\"submit\" name=\"verdict\" value=\"approve\">Approve</button> "
                          "<button type=\"submit\" name=\"verdict\" value=\"reject\" class=\"danger\">Reject</button></form>");
    }
    if (model_server(c, w))
        gx_sbuf_puts(&b, "<p class=\"note\"><span class=\"tag model-server\">model server</span> The gateway runs this for a model "
                          "on the <a href=\"/ui/models\">Models</a> page; it starts and stops it by itself.</p>");
    status_section(c, &b, w);
    gx_portal_putf(&b, "<h2>Logs</h2><pre id=\"logs\" class=\"logs\" tabindex=\"0\" aria-label=\"Logs\" "
                       "data-logs=\"/api/v1/workloads/%U/%U/logs?follow=1\">(no output yet)</pre>", ns, name);
    json_decref(w);
    gx_portal_page_end(c, &b, 200);
}

void gx_portal_workload_cancel(gx_portal_ctx *c, const char *ns, const char *name)
{
    json_t *w = visible(c, ns, name);
    if (!w) { gx_portal_error_page(c, 404, "Not found", "No such workload in your namespaces."); return; }
    json_decref(w);
    char to[600];
    gx_wlkey k;
    gx_err e;
    gx_err_clear(&e);
    if (gx_wlkey_make(&k, ns, name, &e) || gx_d_cancel(c->d, k.key, c->user->name, &e)) {
        gx_portal_error_page(c, e.status >= 400 ? e.status : 500, "Cannot cancel", e.msg);
        return;
    }
    gx_sbuf u;
    gx_sbuf_init(&u);
    gx_portal_putf(&u, "/ui/workloads/%U/%U", ns, name);
    snprintf(to, sizeof to, "%s", u.p);
    gx_sbuf_free(&u);
    gx_portal_redirect(c, to);
}

/* POST /ui/workloads/NS/NAME/verdict (admins): approve or reject through the same
 * operation as the REST API and the CLI, which records the verdict before answering. */
void gx_portal_workload_verdict(gx_portal_ctx *c, const char *ns, const char *name)
{
    if (!c->user->admin) { gx_portal_error_page(c, 403, "Not allowed", "Only admins approve or reject workloads."); return; }
    const char *v = gx_portal_form_get(c->form, "verdict") ?: "";
    const char *msg = gx_portal_form_get(c->form, "message") ?: "";
    int approve = !strcmp(v, "approve");
    if (!approve && strcmp(v, "reject")) { gx_portal_error_page(c, 400, "Bad request", "verdict: approve or reject"); return; }
    if (!approve && !*msg) {
        gx_portal_error_page(c, 422, "Cannot reject", "message: say why it is rejected (the workload's user sees it)");
        return;
    }
    if (strlen(msg) > 512) { gx_portal_error_page(c, 413, "Cannot decide", "message: at most 512 characters"); return; }
    gx_wlkey k;
    gx_err e;
    gx_err_clear(&e);
    if (gx_wlkey_make(&k, ns, name, &e) || gx_d_approve(c->d, k.key, approve, NULL, *msg ? msg : NULL, c->user->name, &e)) {
        gx_portal_error_page(c, e.status >= 400 ? e.status : 500, approve ? "Cannot approve" : "Cannot reject", e.msg);
        return;
    }
    gx_sbuf u;
    gx_sbuf_init(&u);
    gx_portal_putf(&u, "/ui/workloads/%U/%U", ns, name);
    gx_portal_redirect(c, u.p);
    gx_sbuf_free(&u);
}
