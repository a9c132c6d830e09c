/* cli/cmd_show: "gpuaas show NS/NAME", one workload described for a person.
 * Owns: the layout of the description (fields, pods and devices, the conditions as a
 * timeline, oldest first), so that "why is my job pending?" is answered on screen.
 * Must not: guess at fields the server did not send: absent ones print as "-". */
#include <stdlib.h>
#include <string.h>
#include "cli/cmd.h"
#include "cli/fmt.h"
#include "lib/alloc.h"
#include "lib/gxtime.h"

static void field(const char *label, const char *value)
{
    printf("%-15s %s\n", label, value && *value ? value : "-");
}

static void time_field(const char *label, const json_t *w, const char *key, int64_t now)
{
    const char *t = gx_cli_jstr(w, key);
    char age[32], line[160];
    if (!t) { field(label, NULL); return; }
    snprintf(line, sizeof line, "%s (%s ago)", t, gx_cli_fmt_since(t, now, age, sizeof age));
    field(label, line);
}

static void summary(const json_t *w, int64_t now)
{
    char a[512], b[64], c2[64];
    snprintf(a, sizeof a, "%s (%s)", gx_cli_jstr_or(w, "key", gx_cli_jstr_or(w, "name", "?")), gx_cli_jstr_or(w, "kind", "?"));
    field("Workload:", a);
    field("Image:", gx_cli_jstr(w, "image"));
    snprintf(a, sizeof a, "LocalQueue %s -> ClusterQueue %s", gx_cli_jstr_or(w, "queueName", "-"),
             gx_cli_jstr_or(w, "clusterQueue", "-"));
    field("Queue:", a);
    const char *pc = gx_cli_jstr(w, "priorityClass");
    snprintf(a, sizeof a, "%s%s%s%s", gx_cli_jnum(w, "priority", b, sizeof b), pc ? " (class " : "", pc ? pc : "", pc ? ")" : "");
    field("Priority:", a);
    const char *st = gx_cli_jstr_or(w, "state", "-"), *ph = gx_cli_jstr(w, "phase");
    if (ph && strcmp(ph, st)) snprintf(a, sizeof a, "%s (phase %s)", st, ph);
    else snprintf(a, sizeof a, "%s", st);
    field("State:", a);
    const char *reason = gx_cli_jstr(w, "reason"), *msg = gx_cli_jstr(w, "message");
    snprintf(a, sizeof a, "%s%s%s", reason ? reason : "", reason && msg ? ": " : "", msg ? msg : "");
    field("Why:", a);
    if (json_object_get(w, "positionInClusterQueue") || json_object_get(w, "positionInLocalQueue")) {
        snprintf(a, sizeof a, "%s in ClusterQueue, %s in LocalQueue (1 is next)",
                 gx_cli_position(w, "positionInClusterQueue", b, sizeof b), gx_cli_position(w, "positionInLocalQueue", c2, sizeof c2));
        field("Position:", a);
    }
    time_field("Created:", w, "createdAt", now);
    time_field("Admitted:", w, "admittedAt", now);
    time_field("Finished:", w, "finishedAt", now);
}

/* Limit and time used: the past admissions plus the current one while admitted. */
static void run_time(const json_t *w, int64_t now)
{
    const json_t *max = json_object_get(w, "maxExecutionTimeSeconds");
    const json_t *past = json_object_get(w, "accumulatedPastExecutionTimeSeconds");
    int64_t used = json_is_integer(past) ? json_integer_value(past) * 1000 : 0, adm;
    const char *at = gx_cli_jstr(w, "admittedAt");
    if (!strcmp(gx_cli_jstr_or(w, "state", ""), "Admitted") && at && !gx_time_parse(at, &adm) && now > adm)
        used += now - adm;
    char a[128], u[32], m[32];
    if (json_is_integer(max))
        snprintf(a, sizeof a, "%s, used %s", gx_duration_exact(json_integer_value(max) * 1000, m, sizeof m),
                 gx_duration_age(used, u, sizeof u));
    else
        snprintf(a, sizeof a, "no limit, used %s", gx_duration_age(used, u, sizeof u));
    field("Max run time:", a);
}

static void pod_sets(const json_t *w)
{
    size_t i;
    const json_t *ps, *psa;
    char kv[512], b[32];
    if (json_array_size(json_object_get(w, "podSets"))) puts("Pod sets:");
    json_array_foreach(json_object_get(w, "podSets"), i, ps) {
        gx_cli_jnum(ps, "count", b, sizeof b);
        printf("  %s: %s pod%s, each %s\n", gx_cli_jstr_or(ps, "name", "?"), b, strcmp(b, "1") ? "s" : "",
               gx_cli_kv(json_object_get(ps, "requests"), kv, sizeof kv));
    }
    const json_t *asg = gx_cli_jget(w, "admission.podSetAssignments");
    if (json_array_size(asg)) printf("Admission:      ClusterQueue %s\n", gx_cli_jstr_or(w, "admission.clusterQueue", "-"));
    json_array_foreach(asg, i, psa) {
        char fl[512];
        gx_cli_jnum(psa, "count", b, sizeof b);
        printf("  %s: %s pod%s, flavors %s; total usage %s\n", gx_cli_jstr_or(psa, "name", "?"), b, strcmp(b, "1") ? "s" : "",
               gx_cli_kv(json_object_get(psa, "flavors"), fl, sizeof fl),
               gx_cli_kv(json_object_get(psa, "resourceUsage"), kv, sizeof kv));
    }
}

/* The devices placed for one pod: "demo-node GPU0 H100-80GB (GPU-...), ...". */
static void devices_of(const json_t *w, const json_t *pod_index, char *buf, size_t n, const char **node)
{
    size_t i, j, o = 0;
    const json_t *pl, *d;
    buf[0] = 0;
    *node = NULL;
    json_array_foreach(json_object_get(w, "placement"), i, pl) {
        if (!json_equal(json_object_get(pl, "pod"), (json_t *)pod_index)) continue;
        *node = gx_cli_jstr(pl, "node");
        json_array_foreach(json_object_get(pl, "devices"), j, d) {
            char idx[32];
            int wr = snprintf(buf + o, n - o, "%sGPU%s %s %s", o ? ", " : "", gx_cli_jnum(d, "index", idx, sizeof idx),
                              gx_cli_jstr_or(d, "model", ""), gx_cli_jstr_or(d, "uuid", ""));
            if (wr < 0 || (size_t)wr >= n - o) return;
            o += (size_t)wr;
        }
    }
}

static void pods(const json_t *w, int64_t now)
{
    const json_t *ps = json_object_get(w, "pods");
    if (!json_array_size(ps) && !json_array_size(json_object_get(w, "placement"))) return;
    static const char *const h[] = {"POD", "STATE", "REASON", "PID", "EXIT", "STARTED", "FINISHED", "NODE", "DEVICES"};
    gx_cli_table *t = gx_cli_table_new(9, h);
    if (!t) return;
    size_t i;
    const json_t *p;
    /* Pods not started yet still have their placement: list those from it. */
    const json_t *rows = json_array_size(ps) ? ps : json_object_get(w, "placement");
    json_array_foreach(rows, i, p) {
        const json_t *idx = json_object_get(p, rows == ps ? "index" : "pod");
        char ix[32], pid[32], ex[32], st[32], fin[32], dev[1024];
        const char *node;
        devices_of(w, rows == ps ? json_object_get(p, "slot") : idx, dev, sizeof dev, &node);
        /* A started pod carries its own UUIDs (they outlive the placement, which goes
         * when the workload ends). */
        if (rows == ps && *gx_cli_jstr_or(p, "devices", "")) snprintf(dev, sizeof dev, "%s", gx_cli_jstr_or(p, "devices", ""));
        const char *cells[] = {gx_cli_jnum(p, rows == ps ? "index" : "pod", ix, sizeof ix),
                               rows == ps ? gx_cli_jstr(p, "state") : "NotStarted", gx_cli_jstr(p, "reason"),
                               gx_cli_jnum(p, "pid", pid, sizeof pid), gx_cli_jnum(p, "exitCode", ex, sizeof ex),
                               gx_cli_fmt_since(gx_cli_jstr(p, "startedAt"), now, st, sizeof st),
                               gx_cli_fmt_since(gx_cli_jstr(p, "finishedAt"), now, fin, sizeof fin), node, dev};
        gx_cli_table_add(t, cells);
    }
    puts("Pods (times are ages):");
    gx_cli_table_print(t, stdout, 2);
    gx_cli_table_free(t);
}

/* A condition and its place in the answer: conditions often share a transition time,
 * and those keep the server's order (qsort alone is not stable). */
typedef struct cond { const json_t *c; int64_t t; size_t i; } cond;

static int by_time(const void *a, const void *b)
{
    const cond *x = a, *y = b;
    if (x->t != y->t) return (x->t > y->t) - (x->t < y->t);
    return (x->i > y->i) - (x->i < y->i);
}

static void conditions(const json_t *w, int64_t now)
{
    const json_t *conds = json_object_get(w, "conditions");
    size_t n = json_array_size(conds);
    if (!n) { puts("Conditions:     -"); return; }
    cond *v = gx_xcalloc(n, sizeof *v);
    static const char *const h[] = {"WHEN", "AGE", "TYPE", "STATUS", "REASON", "MESSAGE"};
    gx_cli_table *t = gx_cli_table_new(6, h);
    for (size_t i = 0; i < n; i++) {
        v[i].c = json_array_get(conds, i);
        v[i].i = i;
        v[i].t = 0;
        gx_time_parse(gx_cli_jstr(v[i].c, "lastTransitionTime"), &v[i].t);
    }
    qsort(v, n, sizeof *v, by_time); /* a timeline: oldest first */
    for (size_t i = 0; i < n; i++) {
        char age[32];
        const json_t *c = v[i].c;
        const char *cells[] = {gx_cli_jstr(c, "lastTransitionTime"),
                               gx_cli_fmt_since(gx_cli_jstr(c, "lastTransitionTime"), now, age, sizeof age),
                               gx_cli_jstr(c, "type"), gx_cli_jstr(c, "status"), gx_cli_jstr(c, "reason"),
                               gx_cli_jstr(c, "message")};
        gx_cli_table_add(t, cells);
    }
    puts("Conditions (oldest first):");
    gx_cli_table_print(t, stdout, 2);
    gx_cli_table_free(t);
    free(v);
}

int gx_cli_run_show(gx_cli_ctx *c)
{
    char ns[256], name[256], ens[800], ename[800], path[2048];
    int rc = gx_cli_ref(c, c->args.pos[0], ns, sizeof ns, name, sizeof name);
    if (rc) return rc;
    snprintf(path, sizeof path, "/api/v1/workloads/%s/%s", gx_cli_pct(ns, ens, sizeof ens), gx_cli_pct(name, ename, sizeof ename));
    json_t *w = gx_cli_get(&c->http, path);
    if (!w) return 1;
    if (c->out == GX_CLI_OUT_JSON || c->out == GX_CLI_OUT_YAML) {
        rc = gx_cli_print_json(c, w);
    } else {
        int64_t now = gx_cli_now(c);
        summary(w, now);
        run_time(w, now);
        pod_sets(w);
        pods(w, now);
        conditions(w, now);
    }
    json_decref(w);
    return rc;
}
