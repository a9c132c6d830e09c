/* ops/reports: the utilisation report (GET /api/v1/reports/utilization, `gpuaas report`,
 * the portal's Reports page): per namespace and GPU class, over [since, now), GPU time
 * allocated and busy, reclaimed by the idle policy, booked and unused, and queue waits.
 * Owns: the arithmetic (docs/operations.md, "Utilisation reports", says it in words).
 * Must not: hold SQL (store/reports.c and store.c read the records) or format HTTP. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "gpu/runtime.h"
#include "lib/alloc.h"
#include "lib/gxtime.h"
#include "ops/daemon.h"
#include "ops/reports.h"

#define MINUTE_MS 60000

/* One group's sums; doubles because a shared device's time is split in fractions. */
typedef struct group {
    char ns[256], cls[128];
    double alloc, busy;
    int64_t reclaimed, noshow;
    int64_t *waits;
    size_t nwaits, capwaits;
} group;

typedef struct acc {
    group *g;
    size_t n, cap;
    int by_ns, by_class;        /* which keys the rows keep */
} acc;

/* The group a (namespace, class) pair falls into under the chosen grouping. */
static group *group_of(acc *a, const char *ns, const char *cls)
{
    const char *kn = a->by_ns ? ns : "", *kc = a->by_class ? cls : "";
    for (size_t i = 0; i < a->n; i++)
        if (!strcmp(a->g[i].ns, kn) && !strcmp(a->g[i].cls, kc)) return &a->g[i];
    if (a->n == a->cap) a->g = gx_xgrow(a->g, &a->cap, a->n + 1, sizeof *a->g);
    group *g = &a->g[a->n++];
    memset(g, 0, sizeof *g);
    snprintf(g->ns, sizeof g->ns, "%s", kn);
    snprintf(g->cls, sizeof g->cls, "%s", kc);
    return g;
}

static int ns_allowed(const char *ns, const char *const *namespaces, size_t n_ns)
{
    if (!n_ns) return 1;
    for (size_t i = 0; i < n_ns; i++)
        if (!strcmp(namespaces[i], ns)) return 1;
    return 0;
}

/* One pod's hold of one device over [t0, t1) (already clipped to the window). share > 0:
 * a fractional request (its nvidia.com/gpucores / 100); 0: a whole device or a replica,
 * split evenly with the other such holders of the device at each instant. */
typedef struct hold {
    char uuid[96];
    group *g;
    int64_t t0, t1;
    double share;
} hold;

typedef struct holds {
    hold *h;
    size_t n, cap;
} holds;

static int by_uuid(const void *x, const void *y)
{
    return strcmp(((const hold *)x)->uuid, ((const hold *)y)->uuid);
}

static int by_i64(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* The GPU-fraction of one device a pod of this workload holds: gpucores/100 when the pod
 * set asks for fractional cores, else 0 (whole or replica: split at the sweep). */
static double pod_share(const json_t *status)
{
    const json_t *ps = json_array_get(json_object_get(status, "podSets"), 0);
    const char *cores = json_string_value(json_object_get(json_object_get(ps, "requests"), "nvidia.com/gpucores"));
    if (!cores) return 0;
    double c = atof(cores);
    return c > 0 && c <= 100 ? c / 100.0 : 0;
}

/* Does the workload ask for a GPU of any kind (nvidia.com/...)? Others are not in the
 * report: it is about GPUs. */
static int wants_gpu(const json_t *status)
{
    size_t i;
    const json_t *ps;
    json_array_foreach(json_object_get(status, "podSets"), i, ps) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)json_object_get(ps, "requests"), k, v)
            if (!strncmp(k, "nvidia.com/", 11)) return 1;
    }
    return 0;
}

/* The admission's flavor for GPUs, when the status still has the admission. */
static const char *admitted_flavor(const json_t *status)
{
    const json_t *psa = json_array_get(json_object_get(json_object_get(status, "admission"), "podSetAssignments"), 0);
    return json_string_value(json_object_get(json_object_get(psa, "flavors"), "nvidia.com/gpu"));
}

/* A device's class: its model in the inventory, else the admission's flavor, else
 * "unknown" (a device no longer in the inventory). */
static const char *class_of(const gx_report_src *src, const char *uuid, const json_t *status)
{
    const char *m = uuid ? json_string_value(json_object_get(src->models, uuid)) : NULL;
    if (m && *m) return m;
    const char *f = admitted_flavor(status);
    return f && *f ? f : "unknown";
}

/* Collect the holds of one workload row and its queue wait. */
static void add_workload(acc *a, holds *H, const gx_report_src *src, const json_t *row, int64_t since, int64_t now)
{
    const char *ns = json_string_value(json_object_get(row, "namespace"));
    const json_t *status = json_object_get(row, "status"), *run = json_object_get(row, "run");
    if (!ns || !wants_gpu(status)) return;
    double share = pod_share(status);
    const char *first_uuid = NULL;
    size_t i;
    const json_t *p;
    json_array_foreach(json_object_get(run, "pods"), i, p) {
        int64_t t0 = json_integer_value(json_object_get(p, "startedMs"));
        int64_t t1 = json_integer_value(json_object_get(p, "finishedMs"));
        const char *devs = json_string_value(json_object_get(p, "devices"));
        if (t0 <= 0 || !devs || !*devs) continue;
        if (t1 <= 0) t1 = json_is_true(json_object_get(p, "alive")) ? now : t0;   /* no end: running, or lost */
        if (t0 < since) t0 = since;
        if (t1 > now) t1 = now;
        char list[1024];
        snprintf(list, sizeof list, "%s", devs);
        char *save = NULL;
        for (char *u = strtok_r(list, ",", &save); u; u = strtok_r(NULL, ",", &save)) {
            if (!first_uuid) first_uuid = devs;   /* the class of the wait: this pod's first device */
            if (t1 <= t0) continue;
            if (H->n == H->cap) H->h = gx_xgrow(H->h, &H->cap, H->n + 1, sizeof *H->h);
            hold *h = &H->h[H->n++];
            snprintf(h->uuid, sizeof h->uuid, "%s", u);
            h->g = group_of(a, ns, class_of(src, u, status));
            h->t0 = t0;
            h->t1 = t1;
            h->share = share;
        }
    }
    int64_t created, admitted;
    if (gx_time_parse(json_string_value(json_object_get(status, "createdAt")), &created) ||
        gx_time_parse(json_string_value(json_object_get(status, "admittedAt")), &admitted) ||
        admitted < since || admitted >= now)
        return;
    char first[96] = "";
    if (first_uuid) snprintf(first, sizeof first, "%.*s", (int)strcspn(first_uuid, ","), first_uuid);
    group *g = group_of(a, ns, class_of(src, first[0] ? first : NULL, status));
    if (g->nwaits == g->capwaits) g->waits = gx_xgrow(g->waits, &g->capwaits, g->nwaits + 1, sizeof *g->waits);
    g->waits[g->nwaits++] = admitted > created ? admitted - created : 0;
}

/* The device's busy GPU-time over [x, y): each minute's mean utilisation times the part
 * of [x, y) in that minute (minutes without a sample count as idle). */
static double busy_in(const json_t *hist, int64_t x, int64_t y)
{
    double sum = 0;
    size_t i;
    const json_t *m;
    json_array_foreach(hist, i, m) {
        int64_t t = json_integer_value(json_object_get(m, "t"));
        const json_t *u = json_object_get(m, "utilization");
        if (!json_is_number(u) || t + MINUTE_MS <= x || t >= y) continue;
        int64_t lo = t > x ? t : x, hi = t + MINUTE_MS < y ? t + MINUTE_MS : y;
        sum += (double)(hi - lo) * json_number_value(u) / 100.0;
    }
    return sum;
}

/* Sweep the holds of one device (H->h[lo..hi), same uuid): cut time at every start and
 * end; in each piece, fractional holders get their share, the others split the rest
 * of the device evenly (a device is never counted more than once at an instant). */
static int sweep_device(const gx_report_src *src, hold *h, size_t n, int64_t since, gx_err *err)
{
    json_t *hist = NULL;
    if (src->history && !(hist = src->history(src->history_ud, h[0].uuid, since - MINUTE_MS, err))) return -1;
    int64_t *cuts = gx_xreallocarray(NULL, 2 * n, sizeof *cuts);
    for (size_t i = 0; i < n; i++) { cuts[2 * i] = h[i].t0; cuts[2 * i + 1] = h[i].t1; }
    qsort(cuts, 2 * n, sizeof *cuts, by_i64);
    for (size_t c = 0; c + 1 < 2 * n; c++) {
        int64_t x = cuts[c], y = cuts[c + 1];
        if (y <= x) continue;
        int whole = 0;
        double frac = 0;
        for (size_t i = 0; i < n; i++)
            if (h[i].t0 <= x && h[i].t1 >= y) { if (h[i].share > 0) frac += h[i].share; else whole++; }
        double rest = frac < 1 ? 1 - frac : 0, busy = hist ? busy_in(hist, x, y) : 0;
        for (size_t i = 0; i < n; i++) {
            if (!(h[i].t0 <= x && h[i].t1 >= y)) continue;
            double f = h[i].share > 0 ? h[i].share : rest / whole;
            h[i].g->alloc += f * (double)(y - x);
            h[i].g->busy += f * busy;
        }
    }
    free(cuts);
    json_decref(hist);
    return 0;
}

/* Add the sums of one reclaim table (idle_reclaims or reservation_noshows). */
static int add_reclaimed(acc *a, const gx_report_src *src, const char *table, int noshow, int64_t since, int64_t now,
                         const char *const *namespaces, size_t n_ns, gx_err *err)
{
    json_t *rows = gx_store_reclaimed(src->store, table, since, now, err);
    if (!rows) return -1;
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        const char *ns = json_string_value(json_object_get(r, "namespace"));
        if (!ns_allowed(ns, namespaces, n_ns)) continue;
        group *g = group_of(a, ns, json_string_value(json_object_get(r, "class")));
        *(noshow ? &g->noshow : &g->reclaimed) += json_integer_value(json_object_get(r, "gpuMs"));
    }
    json_decref(rows);
    return 0;
}

const char *gx_report_hours(int64_t gpu_ms, char *buf, size_t n)
{
    int64_t c = (gpu_ms + 18000) / 36000;   /* hundredths of an hour, half up */
    snprintf(buf, n, "%lld.%02lld", (long long)(c / 100), (long long)(c % 100));
    return buf;
}

/* Nearest rank: the smallest wait with at least p % of the waits at or below it. */
static int64_t percentile(const int64_t *v, size_t n, int p)
{
    if (!n) return 0;
    size_t r = ((size_t)p * n + 99) / 100;
    return v[r ? r - 1 : 0];
}

static json_t *row_json(const acc *a, const group *g, int64_t alloc, int64_t busy)
{
    char h1[32], h2[32], h3[32], h4[32];
    json_t *o = json_object();
    if (a->by_ns) json_object_set_new(o, "namespace", json_string(g->ns));
    if (a->by_class) json_object_set_new(o, "class", json_string(g->cls));
    json_object_update_new(o, json_pack("{s:I,s:s,s:I,s:s,s:I,s:s,s:I,s:s,s:I,s:I,s:I}",
        "allocatedGpuMs", (json_int_t)alloc, "allocatedGpuHours", gx_report_hours(alloc, h1, sizeof h1),
        "busyGpuMs", (json_int_t)busy, "busyGpuHours", gx_report_hours(busy, h2, sizeof h2),
        "idleReclaimedGpuMs", (json_int_t)g->reclaimed, "idleReclaimedGpuHours", gx_report_hours(g->reclaimed, h3, sizeof h3),
        "noShowGpuMs", (json_int_t)g->noshow, "noShowGpuHours", gx_report_hours(g->noshow, h4, sizeof h4),
        "admitted", (json_int_t)g->nwaits, "queueWaitP50Ms", (json_int_t)percentile(g->waits, g->nwaits, 50),
        "queueWaitP90Ms", (json_int_t)percentile(g->waits, g->nwaits, 90)));
    return o;
}

static int by_key(const void *x, const void *y)
{
    const group *a = x, *b = y;
    int c = strcmp(a->ns, b->ns);
    return c ? c : strcmp(a->cls, b->cls);
}

/* The rows and the total, sorted by (namespace, class). */
static json_t *render(acc *a, int64_t since, int64_t now, const char *by)
{
    if (a->n) qsort(a->g, a->n, sizeof *a->g, by_key);
    group total;
    memset(&total, 0, sizeof total);
    int64_t talloc = 0, tbusy = 0;
    json_t *rows = json_array();
    for (size_t i = 0; i < a->n; i++) {
        group *g = &a->g[i];
        if (g->nwaits) qsort(g->waits, g->nwaits, sizeof *g->waits, by_i64);
        int64_t al = llround(g->alloc), bu = llround(g->busy);
        json_array_append_new(rows, row_json(a, g, al, bu));
        talloc += al;
        tbusy += bu;
        total.reclaimed += g->reclaimed;
        total.noshow += g->noshow;
        if (g->nwaits) {
            total.waits = gx_xreallocarray(total.waits, total.nwaits + g->nwaits, sizeof *total.waits);
            memcpy(total.waits + total.nwaits, g->waits, g->nwaits * sizeof *g->waits);
            total.nwaits += g->nwaits;
        }
    }
    if (total.nwaits) qsort(total.waits, total.nwaits, sizeof *total.waits, by_i64);
    acc none = {0};
    json_t *tot = row_json(&none, &total, talloc, tbusy);
    free(total.waits);
    char t1[40], t2[40];
    return json_pack("{s:s,s:s,s:I,s:I,s:s,s:o,s:o}", "since", gx_time_fmt(since, t1, sizeof t1), "until",
                     gx_time_fmt(now, t2, sizeof t2), "sinceMs", (json_int_t)since, "untilMs", (json_int_t)now,
                     "by", by, "rows", rows, "total", tot);
}

static void acc_free(acc *a)
{
    for (size_t i = 0; i < a->n; i++) free(a->g[i].waits);
    free(a->g);
}

int gx_report_utilization(const gx_report_src *src, int64_t since_ms, int64_t now_ms, const char *by,
                          const char *const *namespaces, size_t n_ns, json_t **out, gx_err *err)
{
    *out = NULL;
    acc a = {0};
    if (!by || !*by) { by = "namespace,class"; a.by_ns = a.by_class = 1; }
    else if (!strcmp(by, "namespace")) a.by_ns = 1;
    else if (!strcmp(by, "class")) a.by_class = 1;
    else return gx_errf(err, 400, "by", "by must be namespace or class (or absent for both)");
    if (since_ms >= now_ms) return gx_errf(err, 400, "since", "since must be before now");
    json_t *wls = gx_store_workloads(src->store, err);
    if (!wls) return -1;
    holds H = {0};
    size_t i;
    json_t *row;
    json_array_foreach(wls, i, row)
        if (ns_allowed(json_string_value(json_object_get(row, "namespace")) ?: "", namespaces, n_ns))
            add_workload(&a, &H, src, row, since_ms, now_ms);
    json_decref(wls);
    if (H.n) qsort(H.h, H.n, sizeof *H.h, by_uuid);
    int rc = 0;
    for (size_t lo = 0, hi; lo < H.n && !rc; lo = hi) {
        for (hi = lo + 1; hi < H.n && !strcmp(H.h[hi].uuid, H.h[lo].uuid); hi++) {}
        rc = sweep_device(src, H.h + lo, hi - lo, since_ms, err);
    }
    free(H.h);
    if (!rc) rc = add_reclaimed(&a, src, "idle_reclaims", 0, since_ms, now_ms, namespaces, n_ns, err);
    if (!rc) rc = add_reclaimed(&a, src, "reservation_noshows", 1, since_ms, now_ms, namespaces, n_ns, err);
    if (!rc) *out = render(&a, since_ms, now_ms, by);
    acc_free(&a);
    return rc;
}

/* ---- the daemon's operation ---------------------------------------------------------- */

static json_t *daemon_history(void *ud, const char *uuid, int64_t since_ms, gx_err *err)
{
    return gx_gpu_history_read(ud, uuid, since_ms, err);
}

int gx_d_report_utilization(gx_daemon *d, const char *since, const char *by, const char *const *namespaces, size_t n_ns,
                            json_t **out, gx_err *err)
{
    int64_t now = gx_loop_now(d->loop), since_ms, back = since && *since ? gx_duration_parse(since) : 7 * 86400000LL;
    *out = NULL;
    if (back >= 0) since_ms = now - back;
    else if (gx_time_parse(since, &since_ms))
        return gx_errf(err, 400, "since", "since must be a duration back from now (7d, 36h) or an RFC 3339 time, not %s",
                       since);
    /* a device's class is its model as the engine's nodes list it */
    json_t *models = json_object(), *nodes = gx_engine_nodes(d->eng);
    size_t i, j;
    json_t *n, *g;
    json_array_foreach(nodes, i, n)
        json_array_foreach(json_object_get(n, "gpus"), j, g) {
            const char *u = json_string_value(json_object_get(g, "uuid")), *m = json_string_value(json_object_get(g, "model"));
            if (u && m) json_object_set_new(models, u, json_string(m));
        }
    json_decref(nodes);
    gx_report_src src = {d->store, models, d->gpu && d->gpu->hist ? daemon_history : NULL,
                         d->gpu ? d->gpu->hist : NULL};
    int rc = gx_report_utilization(&src, since_ms, now, by, namespaces, n_ns, out, err);
    json_decref(models);
    return rc;
}
