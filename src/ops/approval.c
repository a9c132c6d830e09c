/* approval: the gpuaas.dev/approval admission-check controller, the one controller of
 * Kueue's AdmissionChecks that gpuaas runs. An admin approves a workload that holds its
 * quota and waits for its checks (its checks run by this controller become Ready), or
 * rejects it (they become Rejected and the engine deactivates it with the reason).
 * Owns: gx_d_approve (the daemon's side: set the engine's check state, record the
 * workload's new status before answering, and ask for a scheduling pass).
 * Must not: decide who may call it (api/routes.c and the portal check for an admin), or
 * judge check states itself: the engine (core/engine_check.c) does. */
#include <stdio.h>
#include <string.h>
#include "ops/daemon.h"
#include "run/executor.h"

int gx_d_approve(gx_daemon *d, const char *key, int approve, const char *check, const char *message,
                 const char *who, gx_err *err)
{
    gx_run *w = gx_exec_get(d->exec, key);
    if (!w) return gx_errf(err, 404, "", "no workload %s", key);
    int64_t now = gx_loop_now(d->loop);
    char msg[600];
    if (message && *message) snprintf(msg, sizeof msg, "%s by %s: %s", approve ? "approved" : "rejected", who, message);
    else snprintf(msg, sizeof msg, "%s by %s", approve ? "approved" : "rejected", who);
    if (gx_engine_set_check(d->eng, w->ns, w->name, check && *check ? check : NULL,
                            approve ? GX_CHECK_READY : GX_CHECK_REJECTED, msg, now, err))
        return -1;
    if (!approve && gx_engine_wl_phase(d->eng, key) == GX_PHASE_DEACTIVATED) gx_exec_stop(d->exec, w, msg);
    /* record before answering: a restart keeps the verdict */
    json_t *st = gx_engine_workload(d->eng, key, now);
    json_t *run = gx_run_record(w);
    int rc = gx_store_update_workload(d->store, w->ns, w->name, st ? st : json_null(), run, now, err);
    json_decref(st);
    json_decref(run);
    if (rc) return -1;
    d->dirty = 1;
    gx_http_wake_streams(d->http);
    return 0;
}
