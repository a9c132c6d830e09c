/* cli/cmd_report: `gpuaas report`, the utilisation report (GET /api/v1/reports/utilization)
 * as a table, JSON or CSV.
 * Owns: the report's columns and its CSV. Must not: compute anything (the daemon's
 * ops/reports.c does; this prints what it answers). */
#include <stdio.h>
#include <string.h>
#include <curl/curl.h>
#include "cli/cmd_report.h"
#include "lib/gxtime.h"

static const char *const cols[] = {"allocatedGpuHours", "busyGpuHours", "idleReclaimedGpuHours", "noShowGpuHours",
                                   "admitted", "queueWaitP50Ms", "queueWaitP90Ms"};
static const char *const heads[] = {"ALLOCATED-GPU-H", "BUSY-GPU-H", "RECLAIMED-GPU-H", "NO-SHOW-GPU-H", "ADMITTED",
                                    "WAIT-P50", "WAIT-P90"};
/* CSV carries the exact milliseconds as well as the hours, for spreadsheets and scripts */
static const char *const csv_cols[] = {"allocatedGpuMs", "allocatedGpuHours", "busyGpuMs", "busyGpuHours",
                                       "idleReclaimedGpuMs", "idleReclaimedGpuHours", "noShowGpuMs", "noShowGpuHours",
                                       "admitted", "queueWaitP50Ms", "queueWaitP90Ms"};
#define NCOLS (sizeof cols / sizeof cols[0])
#define NCSV (sizeof csv_cols / sizeof csv_cols[0])

/* A cell as text: strings as they are, integers in decimal, waits in words. */
static const char *cell(const json_t *row, const char *k, int words, char *buf, size_t n)
{
    const json_t *v = json_object_get(row, k);
    if (json_is_string(v)) return json_string_value(v);
    if (words && json_integer_value(v) >= 1000) return gx_duration_exact(json_integer_value(v), buf, n);
    if (words) { snprintf(buf, n, "%lldms", (long long)json_integer_value(v)); return buf; }
    snprintf(buf, n, "%lld", (long long)json_integer_value(v));
    return buf;
}

/* RFC 4180: quote a field that holds a comma, a quote or a line break. */
static void csv_field(const char *s, int last)
{
    if (strpbrk(s, ",\"\r\n")) {
        putchar('"');
        for (; *s; s++) { if (*s == '"') putchar('"'); putchar(*s); }
        putchar('"');
    } else
        fputs(s, stdout);
    putchar(last ? '\n' : ',');
}

static void print_csv(const json_t *ans, int by_ns, int by_class)
{
    if (by_ns) csv_field("namespace", 0);
    if (by_class) csv_field("class", 0);
    for (size_t i = 0; i < NCSV; i++) csv_field(csv_cols[i], i + 1 == NCSV);
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(ans, "rows"), i, r) {
        char b[32];
        if (by_ns) csv_field(json_string_value(json_object_get(r, "namespace")) ?: "", 0);
        if (by_class) csv_field(json_string_value(json_object_get(r, "class")) ?: "", 0);
        for (size_t k = 0; k < NCSV; k++) csv_field(cell(r, csv_cols[k], 0, b, sizeof b), k + 1 == NCSV);
    }
}

static void print_table(const json_t *ans, int by_ns, int by_class)
{
    const char *h[NCOLS + 2];
    int nh = 0;
    if (by_ns) h[nh++] = "NAMESPACE";
    if (by_class) h[nh++] = "CLASS";
    for (size_t i = 0; i < NCOLS; i++) h[nh++] = heads[i];
    gx_cli_table *t = gx_cli_table_new(nh, h);
    json_t *all = json_copy(json_object_get(ans, "rows"));
    json_t *tot = json_deep_copy(json_object_get(ans, "total"));
    if (by_ns) json_object_set_new(tot, "namespace", json_string("TOTAL"));
    else json_object_set_new(tot, "class", json_string("TOTAL"));
    json_array_append_new(all, tot);
    size_t i;
    const json_t *r;
    json_array_foreach(all, i, r) {
        char b[NCOLS][32];
        const char *cells[NCOLS + 2];
        int n = 0;
        if (by_ns) cells[n++] = json_string_value(json_object_get(r, "namespace"));
        if (by_class) cells[n++] = json_string_value(json_object_get(r, "class"));
        for (size_t k = 0; k < NCOLS; k++) cells[n++] = cell(r, cols[k], k >= NCOLS - 2, b[k], sizeof b[k]);
        gx_cli_table_add(t, cells);
    }
    json_decref(all);
    gx_cli_table_print(t, stdout, 0);
    gx_cli_table_free(t);
    printf("(%s to %s)\n", json_string_value(json_object_get(ans, "since")) ?: "?",
           json_string_value(json_object_get(ans, "until")) ?: "?");
}

int gx_cli_run_report(gx_cli_ctx *c)
{
    const char *o = gx_opt_get(&c->args, "output"), *by = gx_opt_get(&c->args, "by");
    const char *since = gx_opt_get(&c->args, "since"), *ns = gx_opt_get(&c->args, "namespace");
    if (o && strcmp(o, "table") && strcmp(o, "json") && strcmp(o, "csv"))
        return gx_cli_usage_error(c, "unknown output format '%s' (table, json, csv)", o);
    if (by && strcmp(by, "namespace") && strcmp(by, "class"))
        return gx_cli_usage_error(c, "--by must be namespace or class, not '%s'", by);
    char path[1024];
    size_t n = (size_t)snprintf(path, sizeof path, "/api/v1/reports/utilization?since=");
    const char *vals[] = {since ? since : "7d", by, ns}, *keys[] = {NULL, "by", "namespace"};
    for (int i = 0; i < 3; i++) {
        if (!vals[i]) continue;
        char *e = curl_easy_escape(NULL, vals[i], 0);
        if (!e) return 1;
        if (keys[i]) n += (size_t)snprintf(path + n, n < sizeof path ? sizeof path - n : 0, "&%s=", keys[i]);
        n += (size_t)snprintf(path + n, n < sizeof path ? sizeof path - n : 0, "%s", e);
        curl_free(e);
    }
    if (n >= sizeof path) return gx_cli_usage_error(c, "arguments too long");
    json_t *ans = gx_cli_get(&c->http, path);
    if (!ans) return 1;
    int by_ns = !by || !strcmp(by, "namespace"), by_class = !by || !strcmp(by, "class");
    if (o && !strcmp(o, "json")) {
        c->out = GX_CLI_OUT_JSON;
        gx_cli_print_json(c, ans);
    } else if (o && !strcmp(o, "csv"))
        print_csv(ans, by_ns, by_class);
    else
        print_table(ans, by_ns, by_class);
    json_decref(ans);
    return 0;
}
