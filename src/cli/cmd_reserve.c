/* cli/cmd_reserve: `gpuaas reserve`, `gpuaas reservations` and `gpuaas unreserve`, the
 * bookings of kind Reservation (docs/cli.md, docs/queueing.md "Reservations").
 * Owns: turning the command line into a Reservation document for POST
 * /api/v1/reservations, the bookings table, and printing a refusal's conflicts and free
 * windows.
 * Must not: judge a booking (the daemon does, and names the field or limit). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cmd.h"
#include "cli/fmt.h"
#include "lib/alloc.h"

/* The conflicts and the free windows of a 409 answer, one per line to stderr. */
static void print_refusal(const json_t *body)
{
    size_t i;
    const json_t *x;
    json_array_foreach(json_object_get(body, "conflicts"), i, x)
        fprintf(stderr, "  conflicts with %s/%s [%s, %s)\n", gx_cli_jstr_or(x, "namespace", "?"), gx_cli_jstr_or(x, "name", "?"),
                gx_cli_jstr_or(x, "start", "?"), gx_cli_jstr_or(x, "end", "?"));
    json_array_foreach(json_object_get(body, "alternatives"), i, x)
        fprintf(stderr, "  free: --start %s --end %s\n", gx_cli_jstr_or(x, "start", "?"), gx_cli_jstr_or(x, "end", "?"));
}

int gx_cli_run_reserve(gx_cli_ctx *c)
{
    const char *ns = gx_opt_get(&c->args, "namespace") ?: getenv("GPUAAS_NAMESPACE");
    const char *cq = gx_opt_get(&c->args, "cluster-queue"), *flavor = gx_opt_get(&c->args, "flavor");
    const char *gpus = gx_opt_get(&c->args, "gpus"), *start = gx_opt_get(&c->args, "start"), *end = gx_opt_get(&c->args, "end");
    const char *weekly = gx_opt_get(&c->args, "weekly"), *tz = gx_opt_get(&c->args, "tz");
    if (!ns) return gx_cli_usage_error(c, "-n NS is required: the namespace that owns the booking");
    if (!cq || !flavor || !gpus || !start || !end)
        return gx_cli_usage_error(c, "--cluster-queue, --flavor, --gpus, --start and --end are required");
    char *stop;
    long n = strtol(gpus, &stop, 10);
    if (*stop || n <= 0) return gx_cli_usage_error(c, "--gpus: %s is not a positive whole number", gpus);
    if (tz && !weekly) return gx_cli_usage_error(c, "--tz goes with --weekly");
    json_t *spec = json_pack("{s:s, s:[{s:s, s:s, s:i}], s:s, s:s}", "clusterQueue", cq, "resources", "flavor", flavor,
                             "name", "nvidia.com/gpu", "quantity", (int)n, "start", start, "end", end);
    if (weekly) {
        json_t *days = json_array();
        char buf[128];
        snprintf(buf, sizeof buf, "%s", weekly);
        char *save = NULL;
        for (char *d = strtok_r(buf, ",", &save); d; d = strtok_r(NULL, ",", &save)) json_array_append_new(days, json_string(d));
        json_object_set_new(spec, "recurrence", json_pack("{s:o, s:s}", "weekly", days, "timeZone", tz ? tz : "UTC"));
    }
    if (gx_opt_get(&c->args, "lead-time")) json_object_set_new(spec, "leadTime", json_string(gx_opt_get(&c->args, "lead-time")));
    if (gx_opt_get(&c->args, "no-show")) json_object_set_new(spec, "noShowTimeout", json_string(gx_opt_get(&c->args, "no-show")));
    json_t *doc = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o}", "apiVersion", "gpuaas.dev/v1alpha1", "kind", "Reservation",
                            "metadata", "name", c->args.pos[0], "namespace", ns, "spec", spec);
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    if (!text) { fputs("error: out of memory\n", stderr); return 1; }
    gx_cli_resp r;
    int rc = 0;
    if (gx_cli_http_call(&c->http, "POST", "/api/v1/reservations", text, strlen(text), "application/json", &r)) {
        char what[600];
        snprintf(what, sizeof what, "%s/%s", ns, c->args.pos[0]);
        gx_cli_http_report_about(&c->http, &r, what);
        if (r.status == 409) print_refusal(r.json);
        rc = 1;
    } else if (c->out == GX_CLI_OUT_JSON || c->out == GX_CLI_OUT_YAML) {
        rc = gx_cli_print_json(c, r.json);
    } else {
        const json_t *o = json_array_get(json_object_get(r.json, "occurrences"), 0);
        printf("reservation %s/%s booked", ns, c->args.pos[0]);
        if (o) printf(": next [%s, %s)", gx_cli_jstr_or(o, "start", "?"), gx_cli_jstr_or(o, "end", "?"));
        putchar('\n');
    }
    gx_cli_resp_free(&r);
    free(text);
    return rc;
}

/* The first occurrence not yet ended (the list is in time order), else the last. */
static const json_t *next_occ(const json_t *b)
{
    const json_t *occ = json_object_get(b, "occurrences"), *o;
    size_t i;
    json_array_foreach(occ, i, o) if (strcmp(gx_cli_jstr_or(o, "phase", ""), "Ended")) return o;
    return json_array_get(occ, json_array_size(occ) ? json_array_size(occ) - 1 : 0);
}

int gx_cli_run_reservations(gx_cli_ctx *c)
{
    char path[1200] = "/api/v1/reservations", esc[400];
    size_t at = strlen(path);
    static const char *const q[][2] = {{"namespace", "namespace"}, {"from", "from"}, {"to", "to"}};
    for (size_t i = 0; i < 3; i++) {
        const char *v = gx_opt_get(&c->args, q[i][0]);
        if (!v) continue;
        if (!gx_cli_pct(v, esc, sizeof esc)) return gx_cli_usage_error(c, "--%s: too long", q[i][0]);
        at += (size_t)snprintf(path + at, sizeof path - at, "%c%s=%s", at == 20 ? '?' : '&', q[i][1], esc);
    }
    gx_cli_resp r;
    if (gx_cli_http_call(&c->http, "GET", path, NULL, 0, NULL, &r)) {
        int rc = gx_cli_http_report(&c->http, &r, NULL);
        gx_cli_resp_free(&r);
        return rc;
    }
    int rc = 0;
    if (c->out == GX_CLI_OUT_JSON || c->out == GX_CLI_OUT_YAML) rc = gx_cli_print_json(c, r.json);
    else {
        static const char *const h[] = {"NAMESPACE", "NAME", "QUEUE", "GPUS", "NEXT-START", "NEXT-END", "PHASE"};
        gx_cli_table *t = gx_cli_table_new(7, h);
        size_t i;
        const json_t *b;
        json_array_foreach(json_object_get(r.json, "items"), i, b) {
            double g = 0;
            size_t k;
            const json_t *it;
            json_array_foreach(json_object_get(b, "resources"), k, it)
                if (!strcmp(gx_cli_jstr_or(it, "name", ""), "nvidia.com/gpu")) g += json_number_value(json_object_get(it, "quantity"));
            char gs[32];
            snprintf(gs, sizeof gs, "%g", g);
            const json_t *o = next_occ(b);
            const char *cells[] = {gx_cli_jstr_or(b, "namespace", "-"), gx_cli_jstr_or(b, "name", "-"), gx_cli_jstr_or(b, "clusterQueue", "-"), gs,
                                   gx_cli_jstr_or(o, "start", "-"), gx_cli_jstr_or(o, "end", "-"), gx_cli_jstr_or(o, "phase", "-")};
            gx_cli_table_add(t, cells);
        }
        if (gx_cli_table_rows(t)) gx_cli_table_print(t, stdout, 0);
        else puts("no reservations in this window");
        gx_cli_table_free(t);
    }
    gx_cli_resp_free(&r);
    return rc;
}

int gx_cli_run_unreserve(gx_cli_ctx *c)
{
    const char *arg = c->args.pos[0], *slash = strchr(arg, '/');
    if (!slash || slash == arg || !slash[1]) return gx_cli_usage_error(c, "expected NS/NAME, got %s", arg);
    char ns[300], ens[800], ename[800], path[2048];
    snprintf(ns, sizeof ns, "%.*s", (int)(slash - arg), arg);
    if (!gx_cli_pct(ns, ens, sizeof ens) || !gx_cli_pct(slash + 1, ename, sizeof ename)) return gx_cli_usage_error(c, "%s: too long", arg);
    snprintf(path, sizeof path, "/api/v1/reservations/%s/%s", ens, ename);
    gx_cli_resp r;
    int rc = 0;
    if (gx_cli_http_call(&c->http, "DELETE", path, NULL, 0, NULL, &r)) {
        gx_cli_http_report_about(&c->http, &r, arg);
        rc = 1;
    } else {
        printf("reservation %s cancelled\n", arg);
    }
    gx_cli_resp_free(&r);
    return rc;
}
