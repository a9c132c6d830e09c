/* cli/cmd_work: the workload commands a user types most: submit, ls, logs, cancel,
 * and the -f file sending that submit shares with apply.
 * Owns: their output lines and the ls table's columns.
 * Must not: change anything but through the documented endpoints (docs/api.md). */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "cli/cmd.h"
#include "cli/fmt.h"

/* ---- sending -f files ------------------------------------------------------ */

static int send_one(gx_cli_ctx *c, const char *path, const gx_cli_body *b, json_t *answers)
{
    gx_cli_resp r;
    int rc = 0;
    if (gx_cli_http_call(&c->http, "POST", path, b->data, b->len, b->ctype, &r)) {
        rc = gx_cli_http_report(&c->http, &r, b);
    } else if (!r.json) {
        fprintf(stderr, "error: gpuaas at %s answered %s with something that is not JSON\n", c->http.server, path);
        rc = 1;
    } else {
        json_array_append(answers, r.json);
    }
    gx_cli_resp_free(&r);
    return rc;
}

int gx_cli_send_files(gx_cli_ctx *c, const char *path, json_t **answers)
{
    int n = gx_opt_count(&c->args, "filename"), stdin_seen = 0, rc = 0, json_files = 0;
    *answers = NULL;
    if (n <= 0) return gx_cli_usage_error(c, "no manifest given: pass -f FILE (or -f - for stdin)");
    for (int i = 0; i < n; i++)
        if (!strcmp(gx_opt_nth(&c->args, "filename", i), "-") && stdin_seen++)
            return gx_cli_usage_error(c, "-f - (stdin) may be given only once");
    gx_cli_body *b = calloc((size_t)n, sizeof *b);
    json_t *out = json_array();
    if (!b || !out) { free(b); json_decref(out); fputs("error: out of memory\n", stderr); return 1; }
    int nread = 0;
    for (; nread < n && !rc; nread++) {
        char err[600];
        if (gx_cli_body_read(gx_opt_nth(&c->args, "filename", nread), stdin, &b[nread], err, sizeof err)) {
            fprintf(stderr, "error: %s\n", err);
            rc = 1;
        } else {
            json_files += gx_cli_body_is_json(b[nread].data, b[nread].len);
        }
    }
    if (!rc && (n == 1 || json_files)) {
        /* JSON cannot be joined with "---"; such files go one request each, in order. */
        for (int i = 0; i < n && !rc; i++) {
            rc = send_one(c, path, &b[i], out);
            if (rc && i > 0) fprintf(stderr, "note: the files before %s were sent already\n", b[i].parts[0].name);
        }
    } else if (!rc) {
        gx_cli_body all;
        if (gx_cli_body_concat(b, (size_t)n, &all)) { fputs("error: out of memory\n", stderr); rc = 1; }
        else { rc = send_one(c, path, &all, out); gx_cli_body_free(&all); }
    }
    for (int i = 0; i < nread; i++) gx_cli_body_free(&b[i]);
    free(b);
    if (rc) json_decref(out);
    else *answers = out;
    return rc;
}

/* The answers' items as one {"items":[...]}, for -o json|yaml. */
static json_t *merge_items(const json_t *answers)
{
    json_t *items = json_array();
    size_t i;
    const json_t *a;
    json_array_foreach(answers, i, a) json_array_extend(items, json_object_get(a, "items"));
    return json_pack("{so}", "items", items);
}

int gx_cli_print_items(gx_cli_ctx *c, const json_t *answers)
{
    json_t *all = merge_items(answers);
    int rc = gx_cli_print_json(c, all);
    json_decref(all);
    return rc;
}

/* ---- submit ---------------------------------------------------------------- */

static void where_line(const json_t *w, const char *verb)
{
    char key[300], pos[32];
    const char *k = gx_cli_jstr(w, "key");
    if (!k) {
        snprintf(key, sizeof key, "%s/%s", gx_cli_jstr_or(w, "namespace", "?"), gx_cli_jstr_or(w, "name", "?"));
        k = key;
    }
    const char *phase = gx_cli_jstr_or(w, "phase", gx_cli_jstr_or(w, "state", "unknown"));
    const char *cq = gx_cli_jstr(w, "clusterQueue");
    printf("workload %s %s: %s", k, verb, phase);
    if (gx_cli_jstr(w, "cluster")) {   /* a fleet request: where it goes and how far it got */
        printf(" on cluster %s (%s)\n", gx_cli_jstr(w, "cluster"), gx_cli_jstr_or(w, "message", ""));
        return;
    }
    const char *msg = gx_cli_jstr(w, "message");
    if (!strcmp(verb, "cancelled") && msg && *msg)
        printf(" (%s)", msg);
    else if (json_object_get(w, "positionInClusterQueue"))
        printf(" (position %s in ClusterQueue %s)", gx_cli_position(w, "positionInClusterQueue", pos, sizeof pos), cq ? cq : "?");
    else if (cq && *cq && strcmp(phase, "Deactivated"))
        printf(" (ClusterQueue %s)", cq);
    else if (msg && *msg)
        printf(" (%s)", msg);
    putchar('\n');
}

int gx_cli_run_submit(gx_cli_ctx *c)
{
    json_t *answers;
    char path[400] = "/api/v1/workloads", esc[300];
    const char *cluster = gx_opt_get(&c->args, "cluster");
    if (cluster && !gx_cli_pct(cluster, esc, sizeof esc)) return gx_cli_usage_error(c, "--cluster: name too long");
    if (cluster) snprintf(path, sizeof path, "/api/v1/workloads?cluster=%s", esc);
    int rc = gx_cli_send_files(c, path, &answers);
    if (rc) return rc;
    if (c->out == GX_CLI_OUT_JSON || c->out == GX_CLI_OUT_YAML) {
        rc = gx_cli_print_items(c, answers);
    } else {
        size_t i, j;
        const json_t *a, *w;
        json_array_foreach(answers, i, a) json_array_foreach(json_object_get(a, "items"), j, w) where_line(w, "submitted");
    }
    json_decref(answers);
    return rc;
}

/* ---- ls -------------------------------------------------------------------- */

int gx_cli_state_kind(const char *s, const char **canon)
{
    static const char *states[] = {"Pending", "Admitted", "Finished", "Deactivated"};
    static const char *phases[] = {"Running", "Terminating", "Succeeded", "Failed"};
    for (int i = 0; i < 4; i++) {
        if (!strcasecmp(s, states[i])) { *canon = states[i]; return 1; }
        if (!strcasecmp(s, phases[i])) { *canon = phases[i]; return 2; }
    }
    return 0;
}

static int add_query(char *q, size_t n, const char *key, const char *val)
{
    char esc[600];
    if (!val || !*val) return 0;
    if (!gx_cli_pct(val, esc, sizeof esc)) return -1;
    size_t l = strlen(q);
    return (size_t)snprintf(q + l, n - l, "%c%s=%s", strchr(q, '?') ? '&' : '?', key, esc) >= n - l ? -1 : 0;
}

/* cells (n of them) with the CLUSTER cell put after NAME when the list holds fleet
 * requests (docs/fleet.md); a list without them keeps its columns. */
static void add_row(gx_cli_table *t, const char *const *cells, size_t n, int fleet, const char *cluster)
{
    const char *row[16];
    size_t k = 0;
    for (size_t i = 0; i < n && k < 16; i++) {
        row[k++] = cells[i];
        if (i == 1 && fleet) row[k++] = cluster ? cluster : "-";
    }
    gx_cli_table_add(t, row);
}

static void ls_row(gx_cli_table *t, const json_t *w, int wide, int fleet, int64_t now)
{
    char prio[32], age[32], gpus[128], pos[32], reason[1024];
    const char *phase = gx_cli_jstr_or(w, "phase", gx_cli_jstr(w, "state"));
    const char *state = gx_cli_jstr_or(w, "state", "");
    const char *why = NULL;
    /* REASON matters for what is not running: why it waits, why it failed or stopped. */
    if (!strcmp(state, "Pending") || (phase && (!strcmp(phase, "Failed") || !strcmp(phase, "Deactivated"))))
        why = gx_cli_jstr_or(w, "message", gx_cli_jstr(w, "reason"));
    if (why) gx_cli_shorten(why, wide ? 100000 : 60, reason, sizeof reason);
    const char *cells[] = {
        gx_cli_jstr(w, "namespace"), gx_cli_jstr(w, "name"), gx_cli_jstr(w, "queueName"),
        gx_cli_jstr(w, "clusterQueue"), gx_cli_jnum(w, "priority", prio, sizeof prio),
        gx_cli_jstr(w, "priorityClass"), phase,
        gx_cli_fmt_since(gx_cli_jstr(w, "createdAt"), now, age, sizeof age),
        gx_cli_gpus(w, gpus, sizeof gpus), gx_cli_position(w, "positionInClusterQueue", pos, sizeof pos),
        why ? reason : NULL,
    };
    if (wide) {
        add_row(t, cells, 11, fleet, gx_cli_jstr(w, "cluster"));
    } else {
        const char *narrow[] = {cells[0], cells[1], cells[2], cells[4], cells[6], cells[7], cells[8], cells[9], cells[10]};
        add_row(t, narrow, 9, fleet, gx_cli_jstr(w, "cluster"));
    }
}

int gx_cli_print_workloads(gx_cli_ctx *c, const json_t *items)
{
    int wide = c->out == GX_CLI_OUT_WIDE;
    static const char *const hw[] = {"NAMESPACE", "NAME", "QUEUE", "CLUSTERQUEUE", "PRIORITY", "PRIORITYCLASS",
                                     "STATE", "AGE", "GPUS", "POSITION", "REASON"};
    static const char *const hn[] = {"NAMESPACE", "NAME", "QUEUE", "PRIORITY", "STATE", "AGE", "GPUS", "POSITION", "REASON"};
    size_t i;
    const json_t *w;
    int fleet = 0;
    json_array_foreach(items, i, w) fleet |= gx_cli_jstr(w, "cluster") != NULL;
    const char *h[12];
    size_t nh = 0, nsrc = wide ? 11 : 9;
    for (size_t k = 0; k < nsrc; k++) {
        h[nh++] = wide ? hw[k] : hn[k];
        if (k == 1 && fleet) h[nh++] = "CLUSTER";
    }
    gx_cli_table *t = gx_cli_table_new((int)nh, h);
    if (!t) { fputs("error: out of memory\n", stderr); return 1; }
    json_array_foreach(items, i, w) ls_row(t, w, wide, fleet, gx_cli_now(c));
    gx_cli_table_print(t, stdout, 0);
    gx_cli_table_free(t);
    return 0;
}

int gx_cli_run_ls(gx_cli_ctx *c)
{
    const char *ns = gx_cli_list_ns(c), *st = gx_opt_get(&c->args, "state"), *canon = NULL;
    if (gx_opt_get(&c->args, "namespace") && gx_opt_has(&c->args, "all-namespaces"))
        return gx_cli_usage_error(c, "give -n NS or -A, not both");
    int kind = st ? gx_cli_state_kind(st, &canon) : 0;
    if (st && !kind)
        return gx_cli_usage_error(c, "unknown state '%s' (Pending, Admitted, Finished, Deactivated, Running, Terminating, Succeeded, Failed)", st);
    char path[2048] = "/api/v1/workloads";
    if (add_query(path, sizeof path, "namespace", ns) || add_query(path, sizeof path, "state", kind == 1 ? canon : NULL) ||
        add_query(path, sizeof path, "queue", gx_opt_get(&c->args, "queue")) ||
        add_query(path, sizeof path, "clusterQueue", gx_opt_get(&c->args, "cluster-queue")))
        return gx_cli_usage_error(c, "filter values are too long");
    json_t *ans = gx_cli_get(&c->http, path);
    if (!ans) return 1;
    /* Phases are not a server filter: keep the matching items here. */
    json_t *items = json_object_get(ans, "items");
    if (kind == 2) {
        json_t *keep = json_array();
        size_t i;
        json_t *w;
        json_array_foreach(items, i, w)
            if (!strcmp(gx_cli_jstr_or(w, "phase", ""), canon)) json_array_append(keep, w);
        json_object_set_new(ans, "items", keep);
        items = keep;
    }
    int rc = 0;
    if (c->out == GX_CLI_OUT_JSON || c->out == GX_CLI_OUT_YAML) rc = gx_cli_print_json(c, ans);
    else if (!json_array_size(items)) fprintf(stderr, "No workloads found%s%s.\n", ns ? " in namespace " : "", ns ? ns : "");
    else rc = gx_cli_print_workloads(c, items);
    json_decref(ans);
    return rc;
}

/* ---- logs ------------------------------------------------------------------ */

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

/* logs -f on a workload that has not started shows nothing until it does: say so (on
 * stderr, so the output itself stays the log), or the user takes it for a hang. */
static void say_if_waiting(gx_cli_ctx *c, const char *ns, const char *name)
{
    char ens[800], ename[800], path[2048];
    snprintf(path, sizeof path, "/api/v1/workloads/%s/%s", gx_cli_pct(ns, ens, sizeof ens), gx_cli_pct(name, ename, sizeof ename));
    gx_cli_resp r;
    if (gx_cli_http_call(&c->http, "GET", path, NULL, 0, NULL, &r)) { gx_cli_resp_free(&r); return; }   /* the stream reports it */
    const char *state = gx_cli_jstr_or(r.json, "state", "");
    if (!strcmp(state, "Pending") || (!strcmp(state, "Admitted") && !json_array_size(json_object_get(r.json, "pods")))) {
        const char *why = gx_cli_jstr_or(r.json, "message", gx_cli_jstr(r.json, "reason"));
        fprintf(stderr, "%s/%s is waiting to start%s%s%s; its output follows once it runs (Ctrl-C stops)\n", ns, name,
                why ? " (" : "", why ? why : "", why ? ")" : "");
    }
    gx_cli_resp_free(&r);
}

int gx_cli_run_logs(gx_cli_ctx *c)
{
    char ns[256], name[256], ens[800], ename[800], path[2048];
    int rc = gx_cli_ref(c, c->args.pos[0], ns, sizeof ns, name, sizeof name);
    if (rc) return rc;
    const char *pod = gx_opt_get(&c->args, "pod");
    if (pod) {
        char *end;
        long v = strtol(pod, &end, 10);
        if (!*pod || *end || v < 0 || v > 100000) return gx_cli_usage_error(c, "--pod wants a pod index (0, 1, ...), not '%s'", pod);
    }
    snprintf(path, sizeof path, "/api/v1/workloads/%s/%s/logs", gx_cli_pct(ns, ens, sizeof ens), gx_cli_pct(name, ename, sizeof ename));
    if (gx_opt_has(&c->args, "follow")) {
        add_query(path, sizeof path, "follow", "1");
        say_if_waiting(c, ns, name);
    }
    add_query(path, sizeof path, "pod", pod);
    /* Ctrl-C ends the stream cleanly (exit 130) instead of killing us mid-write. */
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old);
    interrupted = 0;
    rc = gx_cli_http_stream(&c->http, path, stdout, &interrupted);
    sigaction(SIGINT, &old, NULL);
    return rc;
}

/* ---- cancel ---------------------------------------------------------------- */

int gx_cli_run_cancel(gx_cli_ctx *c)
{
    int n = c->args.npos, rc = 0;
    if (n <= 0) return gx_cli_usage_error(c, "name at least one workload");
    char (*refs)[2][256] = calloc((size_t)n, sizeof *refs);
    json_t *done = json_array();
    if (!refs || !done) { free(refs); json_decref(done); fputs("error: out of memory\n", stderr); return 1; }
    /* Resolve every name before cancelling any: a typo must not leave half the job done. */
    for (int i = 0; i < n && !rc; i++) rc = gx_cli_ref(c, c->args.pos[i], refs[i][0], 256, refs[i][1], 256);
    for (int i = 0; i < n && rc == 0; i++) {
        char ens[800], ename[800], path[2048];
        snprintf(path, sizeof path, "/api/v1/workloads/%s/%s/cancel", gx_cli_pct(refs[i][0], ens, sizeof ens),
                 gx_cli_pct(refs[i][1], ename, sizeof ename));
        gx_cli_resp r;
        /* A failure is reported and the others are still cancelled; the count below
         * turns it into exit status 1. */
        if (gx_cli_http_call(&c->http, "POST", path, NULL, 0, NULL, &r)) {
            char what[520];
            snprintf(what, sizeof what, "%s/%s", refs[i][0], refs[i][1]);
            gx_cli_http_report_about(&c->http, &r, what);
        } else if (json_is_object(r.json)) {
            json_array_append(done, r.json);
            if (c->out != GX_CLI_OUT_JSON && c->out != GX_CLI_OUT_YAML) where_line(r.json, "cancelled");
        }
        gx_cli_resp_free(&r);
    }
    free(refs);
    if (!rc && (c->out == GX_CLI_OUT_JSON || c->out == GX_CLI_OUT_YAML)) {
        if (json_array_size(done) == 1) rc = gx_cli_print_json(c, json_array_get(done, 0));
        else {
            json_t *l = json_pack("{sO}", "items", done);
            rc = gx_cli_print_json(c, l);
            json_decref(l);
        }
    }
    if (!rc && (int)json_array_size(done) < c->args.npos) rc = 1;
    json_decref(done);
    return rc;
}

/* ---- clusters (fleet mode) --------------------------------------------------- */

int gx_cli_run_clusters(gx_cli_ctx *c)
{
    json_t *r = gx_cli_get(&c->http, "/api/v1/clusters");
    if (!r) return 1;
    int rc = 0;
    if (c->out == GX_CLI_OUT_JSON || c->out == GX_CLI_OUT_YAML) {
        json_t *one = json_array();
        json_array_append(one, r);
        rc = gx_cli_print_items(c, one);
        json_decref(one);
    } else {
        printf("%-20s %-30s %8s %10s %9s %8s  %s\n", "NAME", "NAMESPACES", "PENDING", "PUBLISHED", "REMOVING",
               "REMOVED", "READ-BACK");
        size_t i, k;
        json_t *cl, *ns;
        json_array_foreach(json_object_get(r, "items"), i, cl) {
            char nss[256] = "";
            size_t at = 0;
            json_array_foreach(json_object_get(cl, "namespaces"), k, ns) {
                int w = snprintf(nss + at, sizeof nss - at, "%s%s", k ? "," : "", json_string_value(ns) ?: "");
                if (w < 0 || (size_t)w >= sizeof nss - at) break;
                at += (size_t)w;
            }
            const json_t *req = json_object_get(cl, "requests"), *rb = json_object_get(cl, "readBack");
            printf("%-20s %-30s %8lld %10lld %9lld %8lld  %s\n", gx_cli_jstr_or(cl, "name", "?"), nss,
                   (long long)json_integer_value(json_object_get(req, "Pending")),
                   (long long)json_integer_value(json_object_get(req, "Published")),
                   (long long)json_integer_value(json_object_get(req, "Removing")),
                   (long long)json_integer_value(json_object_get(req, "Removed")),
                   !json_is_object(rb) ? "none" : json_is_true(json_object_get(rb, "connected")) ? "connected" : "disconnected");
        }
    }
    json_decref(r);
    return rc;
}
