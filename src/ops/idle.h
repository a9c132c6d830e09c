/* ops/idle: the daemon's IdlePolicy kind and its tick (ops/idle.c); the decisions are
 * core/idle's. Owns: these entry points for the composition root and workloads.c.
 * Must not: be seen by the front doors (they see views, which carry IdleWarning). */
#ifndef GX_OPS_IDLE_H
#define GX_OPS_IDLE_H
#include <stdint.h>
#include <jansson.h>
#include "lib/err.h"

struct gx_daemon;
/* The store's meta key holding {"namespace": GPU-hours reclaimed} (a JSON object). */
#define GX_IDLE_META "idle.reclaimed_gpu_hours"

/* Register the IdlePolicy kind and the /metrics lines; read the totals back. */
void gx_d_idle_register(struct gx_daemon *d);
void gx_d_idle_free(struct gx_daemon *d);
/* Judge the running workloads when due (every 10 s, sooner when a verdict may change
 * then); ms until the next time, -1 when no policy is in effect. */
int64_t gx_d_idle_tick(struct gx_daemon *d, int64_t now_ms);
/* Something was admitted: judge at the next tick. Returns 0 (sleep no longer), or -1
 * when no policy is in effect. */
int64_t gx_d_idle_poke(struct gx_daemon *d);
/* Add the IdleWarning condition to a workload view while it is warned. */
void gx_d_idle_decorate(struct gx_daemon *d, json_t *view);
/* workloads.c: take a workload back for an idle policy: requeue (evicted, queued behind
 * those waiting) or stop (deactivated), with reason; its processes are stopped and the
 * change recorded. 0, or -1 with err. */
int gx_d_idle_reclaim(struct gx_daemon *d, const char *key, int requeue, const char *reason, const char *msg,
                      gx_err *err);

#endif
