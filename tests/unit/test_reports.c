/* Unit tests for the utilisation report (ops/reports.c, store/reports.c): known workloads,
 * GPU minutes and reclaim records in real SQLite files, and the exact figures expected
 * (docs/operations.md, "Utilisation reports", defines them). */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>
#include "lib/gxtime.h"
#include "ops/reports.h"
#include "store/gpu_history.h"
#include "test_store_util.h"

#define H (3600LL * 1000)
#define MIN 60000LL
static const int64_t T = 1764547200000LL;   /* 2025-12-01T00:00:00Z: the window's start */

static json_t *history(void *ud, const char *uuid, int64_t since_ms, gx_err *err)
{
    return gx_store_gpu_history_read(ud, uuid, since_ms, err);
}

/* A workload row: requests (JSON object of the first pod set), created/admitted times
 * (-1: none), one pod on devs over [t0, t1) (t1 0: still running), an admission flavor. */
static void put_wl(gx_store *s, const char *ns, const char *name, const char *requests, int64_t created,
                   int64_t admitted, const char *devs, int64_t t0, int64_t t1, const char *flavor)
{
    char c[40], a[40];
    json_t *st = json_pack("{s:[{s:s,s:i,s:o}]}", "podSets", "name", "main", "count", 1, "requests",
                           json_loads(requests, 0, NULL));
    if (created >= 0) json_object_set_new(st, "createdAt", json_string(gx_time_fmt(created, c, sizeof c)));
    if (admitted >= 0) json_object_set_new(st, "admittedAt", json_string(gx_time_fmt(admitted, a, sizeof a)));
    if (flavor)
        json_object_set_new(st, "admission", json_pack("{s:[{s:{s:s}}]}", "podSetAssignments", "flavors",
                                                       "nvidia.com/gpu", flavor));
    json_t *run = json_pack("{s:[{s:I,s:I,s:s,s:b}]}", "pods", "startedMs", (json_int_t)t0, "finishedMs",
                            (json_int_t)t1, "devices", devs, "alive", t1 == 0);
    json_t *man = json_pack("{s:s}", "kind", "Job");
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_store_put_workload(s, ns, name, man, st, run, T, &e), 0, "%s", e.msg);
    json_decref(st);
    json_decref(run);
    json_decref(man);
}

static gx_store *st;
static gx_store_gpu_history *hist;
static json_t *models;
static char hpath[128];

/* The fixture every test reads (numbers worked out in the comments). */
static void setup(void)
{
    store_tmp_make();
    st = open_store();
    snprintf(hpath, sizeof hpath, "%s/gpu-history.db", dir);
    gx_err e;
    gx_err_clear(&e);
    hist = gx_store_gpu_history_open(hpath, &e);
    cr_assert_not_null(hist, "%s", e.msg);
    models = json_pack("{s:s,s:s,s:s}", "GPU-1", "H100", "GPU-2", "H100", "GPU-3", "A100");
    /* a: 2 GPUs from an hour before the window to T+1h: 2 x 1h allocated in it; its
     * admission was before the window, so no wait counted */
    put_wl(st, "team-a", "a", "{\"nvidia.com/gpu\":\"2\"}", T - 2 * H, T - H, "GPU-1,GPU-2", T - H, T + H, NULL);
    /* b and c share GPU-3 (time-slicing) for 30 min: b 30 + 15, c 15 + 30 minutes */
    put_wl(st, "team-b", "b", "{\"nvidia.com/gpu\":\"1\"}", T + H / 2, T + H, "GPU-3", T + H, T + 2 * H, NULL);
    put_wl(st, "team-b", "c", "{\"nvidia.com/gpu\":\"1\"}", T + H + H / 4, T + H + H / 2, "GPU-3", T + H + H / 2,
           T + 2 * H + H / 2, NULL);
    /* d: half of GPU-4's cores, still running at now = T+4h: 0.5 x 1h; GPU-4 is not in
     * the inventory, so its class is the admission's flavor */
    put_wl(st, "team-a", "d", "{\"nvidia.com/gpu\":\"1\",\"nvidia.com/gpucores\":\"50\"}", T + 2 * H, T + 3 * H,
           "GPU-4", T + 3 * H, 0, "h100-frac");
    /* e: no GPU, not in the report */
    put_wl(st, "team-a", "e", "{\"cpu\":\"1\"}", T, T + H, "", T + H, T + 2 * H, NULL);
    /* GPU-1 50 % busy over [T, T+1h): 0.5 h busy; GPU-3 100 % in minute T+1h30 (shared) */
    gx_store_gpu_minute rows[61];
    for (int i = 0; i < 60; i++) rows[i] = (gx_store_gpu_minute){"GPU-1", T + i * MIN, 50.0, 50, 0, 6};
    rows[60] = (gx_store_gpu_minute){"GPU-3", T + H + H / 2, 100.0, 100, 0, 6};
    cr_assert_eq(gx_store_gpu_history_put(hist, rows, 61, 0, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_store_put_idle_reclaim(st, "team-a", "H100", 600000, T + H, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_store_put_idle_reclaim(st, "team-a", "H100", 999, T - 1, &e), 0, "before the window");
    cr_assert_eq(gx_store_put_reservation_noshow(st, "team-b", "A100", H, T + 2 * H, &e), 0, "%s", e.msg);
}

static void teardown(void)
{
    json_decref(models);
    gx_store_gpu_history_close(hist);
    gx_store_close(st);
    store_tmp_remove();
}

static json_t *report(const char *by, const char *const *ns, size_t n)
{
    gx_report_src src = {st, models, history, hist};
    json_t *out = NULL;
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_report_utilization(&src, T, T + 4 * H, by, ns, n, &out, &e), 0, "%s", e.msg);
    return out;
}

static json_int_t num(const json_t *row, const char *k)
{
    cr_assert(json_is_integer(json_object_get(row, k)), "%s missing", k);
    return json_integer_value(json_object_get(row, k));
}

TestSuite(reports, .init = setup, .fini = teardown);

Test(reports, per_namespace_and_class_exact)
{
    json_t *r = report(NULL, NULL, 0), *rows = json_object_get(r, "rows");
    cr_assert_eq(json_array_size(rows), 3);
    json_t *a = json_array_get(rows, 0), *frac = json_array_get(rows, 1), *b = json_array_get(rows, 2);
    cr_assert_str_eq(json_string_value(json_object_get(a, "namespace")), "team-a");
    cr_assert_str_eq(json_string_value(json_object_get(a, "class")), "H100");
    cr_assert_eq(num(a, "allocatedGpuMs"), 2 * H);
    cr_assert_str_eq(json_string_value(json_object_get(a, "allocatedGpuHours")), "2.00");
    cr_assert_eq(num(a, "busyGpuMs"), H / 2, "GPU-1 half busy for the hour, GPU-2 never sampled");
    cr_assert_eq(num(a, "idleReclaimedGpuMs"), 600000);
    cr_assert_str_eq(json_string_value(json_object_get(a, "idleReclaimedGpuHours")), "0.17");
    cr_assert_eq(num(a, "admitted"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(frac, "class")), "h100-frac");
    cr_assert_eq(num(frac, "allocatedGpuMs"), H / 2, "half a GPU for an hour");
    cr_assert_eq(num(frac, "queueWaitP50Ms"), H);
    cr_assert_str_eq(json_string_value(json_object_get(b, "class")), "A100");
    cr_assert_eq(num(b, "allocatedGpuMs"), H + H / 2, "45 + 45 minutes: the shared half hour split");
    cr_assert_eq(num(b, "busyGpuMs"), MIN, "one busy minute, split between b and c");
    cr_assert_eq(num(b, "noShowGpuMs"), H);
    cr_assert_eq(num(b, "admitted"), 2);
    cr_assert_eq(num(b, "queueWaitP50Ms"), H / 4);
    cr_assert_eq(num(b, "queueWaitP90Ms"), H / 2);
    json_t *t = json_object_get(r, "total");
    cr_assert_eq(num(t, "allocatedGpuMs"), 4 * H);
    cr_assert_eq(num(t, "busyGpuMs"), H / 2 + MIN);
    cr_assert_str_eq(json_string_value(json_object_get(t, "busyGpuHours")), "0.52");
    cr_assert_eq(num(t, "idleReclaimedGpuMs"), 600000, "the record before the window is not counted");
    cr_assert_eq(num(t, "queueWaitP50Ms"), H / 2);
    cr_assert_eq(num(t, "queueWaitP90Ms"), H);
    cr_assert_eq(num(r, "sinceMs"), T);
    cr_assert_str_eq(json_string_value(json_object_get(r, "since")), "2025-12-01T00:00:00.000Z");
    json_decref(r);
}

Test(reports, by_namespace_and_by_class)
{
    json_t *r = report("namespace", NULL, 0), *rows = json_object_get(r, "rows");
    cr_assert_eq(json_array_size(rows), 2);
    cr_assert_null(json_object_get(json_array_get(rows, 0), "class"));
    cr_assert_eq(num(json_array_get(rows, 0), "allocatedGpuMs"), 2 * H + H / 2);
    cr_assert_eq(num(json_array_get(rows, 1), "allocatedGpuMs"), H + H / 2);
    json_decref(r);
    r = report("class", NULL, 0);
    rows = json_object_get(r, "rows");
    cr_assert_eq(json_array_size(rows), 3);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(rows, 0), "class")), "A100");
    cr_assert_null(json_object_get(json_array_get(rows, 0), "namespace"));
    json_decref(r);
}

Test(reports, namespaces_limit_everything)
{
    const char *only[] = {"team-b"};
    json_t *r = report(NULL, only, 1), *rows = json_object_get(r, "rows");
    cr_assert_eq(json_array_size(rows), 1);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(rows, 0), "namespace")), "team-b");
    cr_assert_eq(num(json_object_get(r, "total"), "idleReclaimedGpuMs"), 0, "team-a's reclaim is not shown");
    json_decref(r);
}

Test(reports, bad_arguments_name_the_field)
{
    gx_report_src src = {st, models, history, hist};
    json_t *out = NULL;
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_report_utilization(&src, T, T + H, "user", NULL, 0, &out, &e), -1);
    cr_assert_eq(e.status, 400);
    cr_assert_str_eq(e.field, "by");
    gx_err_clear(&e);
    cr_assert_eq(gx_report_utilization(&src, T + H, T + H, NULL, NULL, 0, &out, &e), -1);
    cr_assert_str_eq(e.field, "since");
    cr_assert_null(out);
    gx_err_clear(&e);
    cr_assert_eq(gx_store_put_idle_reclaim(st, "team-a", "H100", -1, T, &e), -1);
    cr_assert_str_eq(e.field, "gpuMs");
    gx_err_clear(&e);
    cr_assert_eq(gx_store_put_reservation_noshow(st, "", "H100", 1, T, &e), -1);
    cr_assert_str_eq(e.field, "namespace");
}

Test(reports, hours_round_half_up)
{
    char b[32];
    cr_assert_str_eq(gx_report_hours(0, b, sizeof b), "0.00");
    cr_assert_str_eq(gx_report_hours(17999, b, sizeof b), "0.00");
    cr_assert_str_eq(gx_report_hours(18000, b, sizeof b), "0.01");
    cr_assert_str_eq(gx_report_hours(5400000, b, sizeof b), "1.50");
    cr_assert_str_eq(gx_report_hours(100 * H, b, sizeof b), "100.00");
}
