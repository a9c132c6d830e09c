/* ops/reports: the utilisation report's arithmetic, apart from the daemon so that a test
 * can feed it a real store and a real GPU history without running one.
 * Owns: what allocated, busy, reclaimed, unused and queue wait mean (docs/operations.md,
 * "Utilisation reports"). Must not: hold SQL (store/) or answer HTTP (api/, portal/). */
#ifndef GX_OPS_REPORTS_H
#define GX_OPS_REPORTS_H
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "lib/err.h"
#include "store/store.h"

/* One GPU's minute summaries from since_ms on: [{"t","utilization"}] (gpu/history.h's
 * shape), or NULL with err. */
typedef json_t *(*gx_report_history_fn)(void *ud, const char *uuid, int64_t since_ms, gx_err *err);

typedef struct gx_report_src {
    gx_store *store;               /* workloads, idle_reclaims, reservation_noshows */
    const json_t *models;          /* {GPU UUID: model}: a device's class */
    gx_report_history_fn history;  /* NULL: no history (busy is 0) */
    void *history_ud;
} gx_report_src;

/* The report over [since_ms, now_ms), grouped by "namespace", "class" or NULL/"" (both),
 * of the namespaces given (n_ns 0: all). *out:
 * {"since","until","sinceMs","untilMs","by","rows":[ROW],"total":ROW} where ROW is
 * {"namespace"?,"class"?,"allocatedGpuMs","allocatedGpuHours","busyGpuMs","busyGpuHours",
 *  "idleReclaimedGpuMs","idleReclaimedGpuHours","noShowGpuMs","noShowGpuHours",
 *  "admitted","queueWaitP50Ms","queueWaitP90Ms"} (hours: strings with 2 decimals).
 * -1 with err: 400 naming "by" or "since", or the store's error. */
int gx_report_utilization(const gx_report_src *src, int64_t since_ms, int64_t now_ms, const char *by,
                          const char *const *namespaces, size_t n_ns, json_t **out, gx_err *err);
/* Hours with two decimals ("1.50"), rounded half up, from GPU-milliseconds. */
const char *gx_report_hours(int64_t gpu_ms, char *buf, size_t n);

#endif
