/* workloads: the daemon's workload operations.
 * Owns: submit, cancel, delete, view and list; the tick that asks the engine for a
 * scheduling pass and hands its decisions to the executor (run/executor.h); recovery's
 * orchestration after a restart (store rows -> engine and runs, then re-adoption); the
 * executor's hooks (what it asks of the engine, what it records); and persisting every
 * change before it is acknowledged.
 * Must not: start, signal or watch processes (run/executor does), decide who runs (that
 * is src/core) or parse HTTP (api/routes.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/alloc.h"
#include "lib/gxtime.h"
#include "ops/daemon.h"
#include "ops/idle.h"
#include "ops/wlname.h"
#include "fleet/fleet.h"
#include "run/executor.h"

void gx_d_log_path(const gx_daemon *d, const char *key, int index, char *out, size_t n)
{
    gx_run_log_path(d->log_dir, key, index, out, n);
}

_Static_assert(sizeof ((gx_daemon *)0)->log_dir <= GX_EXEC_DIR_MAX && sizeof ((gx_daemon *)0)->run_dir <= GX_EXEC_DIR_MAX,
               "the executor holds the daemon's log and run directories whole");

static gx_run *wl_get(gx_daemon *d, const char *key) { return gx_exec_get(d->exec, key); }

/* Write the engine's status and our run record. Inside a transaction when the caller
 * opened one; otherwise this is its own committed transaction. */
static int persist(gx_daemon *d, gx_run *w, gx_err *err)
{
    int64_t now = gx_loop_now(d->loop);
    json_t *st = gx_engine_workload(d->eng, w->key, now);
    json_t *run = gx_run_record(w);
    int rc = gx_store_update_workload(d->store, w->ns, w->name, st ? st : json_null(), run, now, err);
    json_decref(st);
    json_decref(run);
    return rc;
}

static void persist_or_log(gx_daemon *d, gx_run *w)
{
    gx_err e;
    gx_err_clear(&e);
    if (persist(d, w, &e)) fprintf(stderr, "gpuaas: cannot record %s: %s\n", w->key, e.msg);
}

/* ---- the executor's hooks (run/executor.h) --------------------------------------------- */

static int hook_admission(void *ud, const char *key, int *count)
{
    gx_daemon *d = ud;
    gx_wl_phase ph = gx_engine_wl_phase(d->eng, key);
    if (ph == GX_PHASE_ABSENT) return -1;
    if (count) *count = gx_engine_wl_admitted_count(d->eng, key, 0);
    return ph == GX_PHASE_ADMITTED;
}

static int hook_slot_devices(void *ud, const char *key, int slot, gx_engine_dev *out, int max)
{
    gx_daemon *d = ud;
    return gx_engine_wl_devices(d->eng, key, slot, out, max);
}

/* The Job ended in the executor's eyes: the engine finishes it, or requeues it when its
 * pods were lost across a restart. */
static void hook_ended(void *ud, gx_run *w, gx_run_end how)
{
    gx_daemon *d = ud;
    gx_err e;
    int64_t now = gx_loop_now(d->loop);
    if (how == GX_RUN_LOST) gx_engine_evict(d->eng, w->key, "ProcessesLost", w->note, now, &e);
    else gx_engine_finish(d->eng, w->key, how == GX_RUN_SUCCEEDED, w->note, now, &e);
}

static void hook_reschedule(void *ud) { ((gx_daemon *)ud)->dirty = 1; }

static void hook_persist(void *ud, gx_run *w) { persist_or_log(ud, w); }

static void hook_wake(void *ud) { gx_http_wake_streams(((gx_daemon *)ud)->http); }

/* A pod's intent, committed before its start (never inside a transaction of ours: the
 * executor asks only from gx_exec_start, its tick and pod exits). */
static int hook_commit(void *ud, gx_run *w)
{
    gx_daemon *d = ud;
    gx_err e;
    gx_err_clear(&e);
    if (!persist(d, w, &e)) return 0;
    fprintf(stderr, "gpuaas: cannot record the pods of %s before starting them: %s\n", w->key, e.msg);
    return -1;
}

gx_exec_hooks gx_d_exec_hooks(gx_daemon *d)
{
    return (gx_exec_hooks){d, hook_admission, hook_slot_devices, hook_ended, hook_reschedule, hook_persist, hook_wake,
                           hook_commit};
}

/* ---- the tick: the executor's timers, the scheduling pass ------------------------------- */

#define UNRECORDED_RETRY_MS 1000

/* Admitted workloads are started only once their admission is durable: a pod that runs
 * for an admission the store never saw would run again (or be lost) after a restart.
 * When the record fails they wait, not started, and the record is retried. */
static void hold_unrecorded(gx_daemon *d, gx_run *w, const char *why)
{
    w->deferred = 0;   /* neither step 2 below nor the executor's tick starts it */
    gx_run_note(w, "admitted; waiting until the store records it (%s)", why);
    if (!d->unrecorded) d->unrecorded = json_array();
    json_array_append_new(d->unrecorded, json_string(w->key));
    d->unrecorded_retry_at = gx_loop_now(d->loop) + UNRECORDED_RETRY_MS;
}

/* Record the held admissions again; once they are durable, start them. */
static void retry_unrecorded(gx_daemon *d, int64_t now)
{
    if (!json_array_size(d->unrecorded) || now < d->unrecorded_retry_at) return;
    gx_err e;
    gx_err_clear(&e);
    size_t i;
    json_t *k;
    int ok = gx_store_begin(d->store, &e) == 0;
    json_array_foreach(d->unrecorded, i, k) {
        gx_run *w = wl_get(d, json_string_value(k));
        if (ok && w && gx_engine_wl_phase(d->eng, w->key) == GX_PHASE_ADMITTED && persist(d, w, &e)) ok = 0;
    }
    if (ok && gx_store_commit(d->store, &e)) ok = 0;
    if (!ok) {
        gx_store_rollback(d->store);
        d->unrecorded_retry_at = now + UNRECORDED_RETRY_MS;
        return;
    }
    json_array_foreach(d->unrecorded, i, k) {
        gx_run *w = wl_get(d, json_string_value(k));
        if (!w || gx_engine_wl_phase(d->eng, w->key) != GX_PHASE_ADMITTED) continue;
        fprintf(stderr, "gpuaas: %s: its admission is recorded now; starting it\n", w->key);
        gx_run_note(w, "%s", "");
        w->deferred = 1;
        gx_exec_start(d->exec, w);
        persist_or_log(d, w);
    }
    json_array_clear(d->unrecorded);
}

static void apply_actions(gx_daemon *d, const gx_action *acts, size_t n)
{
    char note[sizeof ((gx_run *)0)->note];
    gx_err e;
    gx_err_clear(&e);
    int ok = gx_store_begin(d->store, &e) == 0;
    /* 1. record the decisions */
    for (size_t i = 0; i < n; i++) {
        /* a booking's event names the Reservation, not a workload; a no-show is recorded */
        if (ok) gx_d_rsv_noshow(d, &acts[i], gx_loop_now(d->loop));
        gx_run *w = acts[i].kind == GX_ACT_RESERVATION ? NULL : wl_get(d, acts[i].workload);
        if (!w) continue;
        if (acts[i].kind == GX_ACT_ADMIT) {
            gx_exec_admit(d->exec, w);   /* started in step 2, after the commit */
        } else if (acts[i].kind == GX_ACT_PREEMPT) {
            snprintf(note, sizeof note, "preempted by %s: %s", acts[i].by, acts[i].message);
            gx_exec_stop(d->exec, w, note);
        } else {
            snprintf(note, sizeof note, "%s: %s", acts[i].reason, acts[i].message);
            gx_exec_stop(d->exec, w, note);
        }
        if (ok && persist(d, w, &e)) ok = 0;
    }
    if (ok && gx_store_commit(d->store, &e)) ok = 0;
    if (!ok) {
        /* stops already happened (a pod stopped without a record is requeued at the next
         * start as ProcessesLost); starts wait until they are recorded */
        fprintf(stderr, "gpuaas: cannot record the scheduling decisions: %s\n", e.msg);
        gx_store_rollback(d->store);
        for (size_t i = 0; i < n; i++) {
            gx_run *w = acts[i].kind == GX_ACT_ADMIT ? wl_get(d, acts[i].workload) : NULL;
            if (w) hold_unrecorded(d, w, e.msg);
        }
    }
    /* 2. plan the pods of what was admitted and commit them before any starts (a pod
     * must never run twice: run/executor.h), 3. start them, 4. record their processes */
    char *planned = gx_xcalloc(n, 1);   /* which actions' runs have pods to start */
    int any = 0;
    ok = gx_store_begin(d->store, &e) == 0;
    for (size_t i = 0; i < n; i++) {
        gx_run *w = acts[i].kind == GX_ACT_ADMIT ? wl_get(d, acts[i].workload) : NULL;
        if (!w || !w->deferred) continue;
        any |= planned[i] = gx_exec_prepare(d->exec, w) > 0;
        if (ok && persist(d, w, &e)) ok = 0;
    }
    if (ok && gx_store_commit(d->store, &e)) ok = 0;
    if (!ok) gx_store_rollback(d->store);
    for (size_t i = 0; any && i < n; i++) {
        gx_run *w = planned[i] ? wl_get(d, acts[i].workload) : NULL;
        if (!w) continue;
        if (ok) gx_exec_launch(d->exec, w);
        else gx_exec_unprepare(d->exec, w, e.msg);
    }
    int txn = any && gx_store_begin(d->store, &e) == 0;
    for (size_t i = 0; txn && i < n; i++) {
        gx_run *w = planned[i] ? wl_get(d, acts[i].workload) : NULL;
        if (w) persist_or_log(d, w);
    }
    if (txn && gx_store_commit(d->store, &e)) {
        fprintf(stderr, "gpuaas: commit failed: %s\n", e.msg);
        gx_store_rollback(d->store);
    }
    free(planned);
}

int64_t gx_d_tick(gx_daemon *d)
{
    int64_t now = gx_loop_now(d->loop);
    int64_t release = gx_podbox_tick(d->box, now);   /* cgroups of ended pods that could not go at once */
    int64_t due = gx_exec_next_tick(d->exec);   /* the executor's timers: kills, restarts, polls */
    if (due && due <= now) gx_exec_tick(d->exec, now);
    retry_unrecorded(d, now);
    int64_t idle = gx_d_idle_tick(d, now);   /* IdlePolicy: warn, requeue, stop (ops/idle.c) */
    if (d->dirty || (d->engine_wake && d->engine_wake <= now)) {
        d->dirty = 0;
        gx_action *acts = NULL;
        size_t n = gx_engine_schedule(d->eng, now, &acts);
        if (n) {
            apply_actions(d, acts, n);
            gx_http_wake_streams(d->http);
            idle = gx_d_idle_poke(d);   /* judge new admissions at once */
        }
        free(acts);
        /* deferred starts and newly freed devices are handled by the executor's tick */
        gx_exec_tick(d->exec, gx_loop_now(d->loop));
    }
    int64_t sleep = -1;
    int64_t wake = gx_engine_next_wakeup(d->eng, now);
    d->engine_wake = wake == INT64_MAX ? 0 : wake;
    if (wake != INT64_MAX) sleep = wake > now ? wake - now : 0;
    if ((due = gx_exec_next_tick(d->exec))) {
        int64_t t = due > now ? due - now : 0;
        if (sleep < 0 || t < sleep) sleep = t;
    }
    if (release >= 0 && (sleep < 0 || release < sleep)) sleep = release;
    if (json_array_size(d->unrecorded)) {
        int64_t t = d->unrecorded_retry_at > now ? d->unrecorded_retry_at - now : 0;
        if (sleep < 0 || t < sleep) sleep = t;
    }
    if (idle >= 0 && (sleep < 0 || idle < sleep)) sleep = idle;
    int64_t rv = gx_d_rsv_tick(d, now);   /* recurring bookings re-expanded (ops/reservations.c) */
    if (sleep < 0 || rv < sleep) sleep = rv;
    int64_t fl = gx_d_fleet_tick(d);   /* fleet requests: publish, retry, expire */
    if (fl >= 0 && (sleep < 0 || fl < sleep)) sleep = fl;
    return sleep;
}

/* ---- requests ----------------------------------------------------------------------- */

int gx_d_submit(gx_daemon *d, const json_t *manifest, const char *unused, json_t **view, gx_err *err)
{
    (void)unused;
    /* a Job for a cluster of the Fleet is published there, not run here (ops/fleet.c) */
    if (json_object_get(json_object_get(json_object_get(manifest, "metadata"), "annotations"), GX_FLEET_CLUSTER_ANNOTATION))
        return gx_d_fleet_submit(d, manifest, view, err);
    int64_t now = gx_loop_now(d->loop);
    if (gx_exec_count(d->exec) >= d->cfg.max_workloads)
        return gx_errf(err, 422, "", "the server holds %zu workloads, its limit (limits.maxWorkloads); "
                       "delete finished ones first", gx_exec_count(d->exec));
    json_t *named = gx_d_name_workload(d, manifest, err);   /* Kubernetes' name rules, generateName */
    gx_run *w = named ? gx_run_new(named, err) : NULL;
    json_decref(named);
    if (!w) return -1;
    if (gx_podbox_check_mounts(&d->cfg.run, w->ns, &w->ps, err)) {
        gx_run_free(w);
        return -1;
    }
    if (wl_get(d, w->key) || gx_d_fleet_has(d, w->key)) {
        gx_errf(err, 409, "metadata.name", "workload %s already exists", w->key);
        gx_run_free(w);
        return -1;
    }
    if (gx_engine_submit(d->eng, w->manifest, now, err)) { gx_run_free(w); return -1; }
    json_t *st = gx_engine_workload(d->eng, w->key, now), *run = gx_run_record(w);
    int rc = gx_store_put_workload(d->store, w->ns, w->name, w->manifest, st, run, now, err);
    json_decref(st);
    json_decref(run);
    if (rc) {
        gx_err e2;
        gx_engine_cancel(d->eng, w->key, "not recorded", now, &e2);
        gx_engine_remove(d->eng, w->key, &e2);
        gx_run_free(w);
        return -1;
    }
    gx_exec_add(d->exec, w);
    d->dirty = 1;
    if (view) *view = gx_d_view(d, w->key);
    return 0;
}

int gx_d_cancel(gx_daemon *d, const char *key, const char *who, gx_err *err)
{
    if (gx_d_fleet_has(d, key)) return gx_d_fleet_cancel(d, key, who, err);
    gx_run *w = wl_get(d, key);
    if (!w) return gx_errf(err, 404, "", "no workload %s", key);
    char msg[256];
    snprintf(msg, sizeof msg, "cancelled by %s", who);
    int rc = gx_engine_cancel(d->eng, key, msg, gx_loop_now(d->loop), err);
    if (rc < 0) return -1;
    gx_exec_stop(d->exec, w, msg);
    if (persist(d, w, err)) return -1;
    d->dirty = 1;
    gx_http_wake_streams(d->http);
    return 0;
}

/* As gx_d_cancel, for an IdlePolicy (ops/idle.c): the reason is the policy's. */
int gx_d_idle_reclaim(gx_daemon *d, const char *key, int requeue, const char *reason, const char *msg, gx_err *err)
{
    gx_run *w = wl_get(d, key);
    if (!w) return gx_errf(err, 404, "", "no workload %s", key);
    int64_t now = gx_loop_now(d->loop);
    if ((requeue ? gx_engine_requeue_back(d->eng, key, reason, msg, now, err)
                 : gx_engine_deactivate_for(d->eng, key, reason, msg, now, err)) < 0)
        return -1;
    gx_exec_stop(d->exec, w, msg);
    if (persist(d, w, err)) return -1;
    d->dirty = 1;
    gx_http_wake_streams(d->http);
    return 0;
}

int gx_d_delete(gx_daemon *d, const char *key, gx_err *err)
{
    if (gx_d_fleet_has(d, key)) return gx_d_fleet_delete(d, key, err);
    gx_run *w = wl_get(d, key);
    if (!w) return gx_errf(err, 404, "", "no workload %s", key);
    if (gx_run_alive(w, 0)) return gx_errf(err, 409, "", "workload %s still has processes; cancel it and wait", key);
    gx_wl_phase ph = gx_engine_wl_phase(d->eng, key);   /* absent: the engine is done with it */
    if (ph == GX_PHASE_PENDING || ph == GX_PHASE_ADMITTED)
        return gx_errf(err, 409, "", "workload %s is %s; cancel it first", key, gx_engine_phase_name(ph));
    if (gx_store_delete_workload(d->store, w->ns, w->name, err)) return -1;
    gx_err e2;
    if (gx_podbox_remove_work(d->box, w->ns, w->name, &e2)) fprintf(stderr, "gpuaas: %s\n", e2.msg);
    gx_engine_remove(d->eng, key, &e2);
    gx_exec_drop(d->exec, w);
    return 0;
}

int gx_d_active(gx_daemon *d, const char *key)
{
    gx_run *w = wl_get(d, key);
    if (!w) return 0;
    if (gx_run_alive(w, 0) || w->deferred || w->retry_at) return 1;
    gx_wl_phase ph = gx_engine_wl_phase(d->eng, key);
    return ph == GX_PHASE_PENDING || ph == GX_PHASE_ADMITTED;
}

int gx_d_pod_count(gx_daemon *d, const char *key)
{
    gx_run *w = wl_get(d, key);
    if (!w) return 0;
    int n = w->next_index;
    return n > w->ps.parallelism ? n : w->ps.parallelism;
}

/* The n-th UUID of "uuid,uuid" into out ("" past the end). */
static void nth_device(const char *list, int n, char *out, size_t len)
{
    const char *p = list;
    for (int i = 0; i < n && p; i++) p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL;
    snprintf(out, len, "%.*s", p ? (int)strcspn(p, ",") : 0, p ? p : "");
}

/* A pod's GPU memory and compute share as its CUDA shim counts them, read from its
 * region (docs/gpu-sharing.md "Limits inside the pod"); a pod whose shim was wanted but
 * missing says its limits are not enforced, never silently nothing. */
static void add_gpu_memory(gx_daemon *d, const gx_run *w, const gx_run_pod *p, json_t *po)
{
    if (p->cuda == GX_POD_CUDA_MISSING) {
        json_object_set_new(po, "gpuLimitsEnforced", json_false());
        json_object_set_new(po, "gpuLimitsNote", json_string("libgpuaas-cuda.so is missing beside the gpuaas "
                                                             "binary: this pod's GPU memory limit is not enforced"));
        return;
    }
    gx_cuda_usage u;
    gx_err e;
    if (p->cuda != GX_POD_CUDA_INJECTED) return;
    json_object_set_new(po, "gpuLimitsEnforced", json_true());
    if (gx_exec_pod_cuda_usage(d->exec, w, p, &u, &e)) {
        json_object_set_new(po, "gpuLimitsNote", json_string(e.msg));
        return;
    }
    json_t *arr = json_array();
    for (int k = 0; k < u.ndevices; k++) {
        const gx_cuda_dev_usage *g = &u.dev[k];
        char uuid[128];
        nth_device(p->devices, k, uuid, sizeof uuid);
        json_t *share = json_object();
        json_object_set_new(share, "target", g->sm_share ? json_integer(g->sm_share) : json_null());
        json_object_set_new(share, "achieved", g->achieved >= 0 ? json_real((double)(int)(g->achieved * 10) / 10) : json_null());
        json_array_append_new(arr, json_pack("{s:s,s:I,s:I,s:I,s:I,s:o}", "device", uuid,
            "usedBytes", (json_int_t)g->used, "limitBytes", (json_int_t)g->limit, "peakBytes", (json_int_t)g->peak,
            "refused", (json_int_t)g->refused, "computeShare", share));
    }
    json_object_set_new(po, "gpuMemory", arr);
}

/* The person's view: the engine's status plus phase, reason, message and pods. */
static void add_phase(gx_daemon *d, json_t *v)
{
    gx_run *w = wl_get(d, json_string_value(json_object_get(v, "key")) ?: "");
    const char *state = json_string_value(json_object_get(v, "state")) ?: "Pending";
    int alive = w ? gx_run_alive(w, 0) : 0;
    const char *phase = state, *reason = state;
    char msg[512] = "";
    /* the newest condition explains most states */
    json_t *conds = json_object_get(v, "conditions");
    json_t *last = NULL;
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c) {
        const char *t = json_string_value(json_object_get(c, "type")) ?: "";
        if (!strcmp(state, "Pending") && !strcmp(t, "QuotaReserved") &&
            !strcmp(json_string_value(json_object_get(c, "status")) ?: "", "False"))
            last = c;
        else if (!strcmp(state, "Pending") && !strcmp(t, "Admitted") &&   /* quota held: waits for its checks */
                 !strcmp(json_string_value(json_object_get(c, "reason")) ?: "", "UnsatisfiedChecks"))
            last = c;
        else if (strcmp(state, "Pending")) last = c;
    }
    if (!last) last = json_array_get(conds, json_array_size(conds) ? json_array_size(conds) - 1 : 0);
    if (last) {
        reason = json_string_value(json_object_get(last, "reason")) ?: state;
        snprintf(msg, sizeof msg, "%s", json_string_value(json_object_get(last, "message")) ?: "");
    }
    if (!strcmp(state, "Admitted")) {
        if (w && w->stopping) { phase = "Terminating"; reason = "Stopping"; }
        else if (alive) { phase = "Running"; reason = "Running"; }
        else { phase = "Admitted"; }
        if (w && w->note[0]) snprintf(msg, sizeof msg, "%s", w->note);
    } else if (!strcmp(state, "Finished")) {
        phase = json_is_true(json_object_get(v, "succeeded")) ? "Succeeded" : "Failed";
        reason = phase;
        if (w && w->note[0]) snprintf(msg, sizeof msg, "%s", w->note);
    } else if (!strcmp(state, "Deactivated")) {
        phase = alive ? "Terminating" : "Deactivated";
    }
    json_object_set_new(v, "phase", json_string(phase));
    json_object_set_new(v, "reason", json_string(reason));
    json_object_set_new(v, "message", json_string(msg));
    if (!w) return;
    if (w->ps.image) json_object_set_new(v, "image", json_string(w->ps.image));
    /* an interactive session's declared port (the portal proxies /ui/sessions/NS/NAME/ to it) */
    const char *sp = json_string_value(json_object_get(json_object_get(json_object_get(w->manifest, "metadata"), "annotations"),
                                                       "gpuaas.dev/session-port"));
    if (sp && strspn(sp, "0123456789") == strlen(sp) && strlen(sp) <= 5 && *sp)
        json_object_set_new(v, "sessionPort", json_integer(atoi(sp)));
    json_t *pods = json_array();
    for (size_t k = 0; k < w->npods; k++) {
        const gx_run_pod *p = &w->pods[k];
        if (p->gen != w->gen && !p->alive) continue;
        char t1[40], t2[40];
        gx_time_fmt(p->started_ms, t1, sizeof t1);
        gx_time_fmt(p->finished_ms, t2, sizeof t2);
        json_t *po = json_pack("{s:i,s:i,s:i,s:s,s:s,s:s}", "index", p->index, "slot", p->slot, "pid", (int)p->proc.pid,
                               "state", p->alive ? "Running" : (p->exit_code == 0 ? "Succeeded" : "Failed"),
                               "startedAt", t1, "devices", p->devices);
        if (!p->alive) {
            json_object_set_new(po, "finishedAt", json_string(t2));
            json_object_set_new(po, "exitCode", json_integer(p->exit_code));
            if (p->signal_no) json_object_set_new(po, "signal", json_integer(p->signal_no));
            if (p->reason[0]) json_object_set_new(po, "reason", json_string(p->reason));
        }
        if (p->sandboxed) json_object_set_new(po, "runAsUser", json_integer((json_int_t)p->uid));
        if (p->memory_limit) json_object_set_new(po, "memoryLimitBytes", json_integer(p->memory_limit));
        add_gpu_memory(d, w, p, po);
        json_array_append_new(pods, po);
    }
    json_object_set_new(v, "pods", pods);
    json_object_set_new(v, "succeededPods", json_integer(w->succeeded));
    json_object_set_new(v, "failedPods", json_integer(w->failures));
}

json_t *gx_d_view(gx_daemon *d, const char *key)
{
    json_t *v = gx_engine_workload(d->eng, key, gx_loop_now(d->loop));
    if (v) { add_phase(d, v); gx_d_idle_decorate(d, v); }
    else v = gx_d_fleet_view(d, key);
    return v;
}

json_t *gx_d_list(gx_daemon *d, const gx_wl_filter *f)
{
    json_t *arr = gx_engine_workloads(d->eng, f, gx_loop_now(d->loop));
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) { add_phase(d, v); gx_d_idle_decorate(d, v); }
    gx_d_fleet_list(d, f, arr);
    return arr;
}

/* ---- recovery ------------------------------------------------------------------------- */

/* Rebuild the engine and the runs from the store, then let the executor re-attach each
 * run's processes (the recovery rule in run/executor.h), all recorded in one transaction. */
int gx_d_recover(gx_daemon *d, gx_err *err)
{
    json_t *rows = gx_store_workloads(d->store, err);
    if (!rows) return -1;
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        const json_t *manifest = json_object_get(r, "manifest");
        gx_err e;
        gx_err_clear(&e);
        gx_run *w = gx_run_new(manifest, &e);
        if (!w || gx_engine_restore(d->eng, w->manifest, json_object_get(r, "status"), &e)) {
            fprintf(stderr, "gpuaas: cannot restore workload %s/%s: %s (kept in the store)\n",
                    json_string_value(json_object_get(r, "namespace")),
                    json_string_value(json_object_get(r, "name")), e.msg);
            gx_run_free(w);
            continue;
        }
        gx_run_restore(w, json_object_get(r, "run"));
        gx_exec_add(d->exec, w);
    }
    json_decref(rows);
    if (gx_d_fleet_recover(d, err)) return -1;
    if (gx_store_begin(d->store, err)) return -1;
    size_t pos = 0;
    for (gx_run *w; (w = gx_exec_next(d->exec, &pos));) {
        gx_exec_recover(d->exec, w);
        persist_or_log(d, w);
    }
    if (gx_store_commit(d->store, err)) { gx_store_rollback(d->store); return -1; }
    d->dirty = 1;
    return 0;
}

void gx_d_free_all(gx_daemon *d)
{
    gx_exec_free(d->exec);
    d->exec = NULL;
    json_decref(d->unrecorded);
    d->unrecorded = NULL;
    gx_d_fleet_free(d);
    gx_d_idle_free(d);
}

void gx_d_unsubmit(gx_daemon *d, const char *key)
{
    gx_d_fleet_unsubmit(d, key);
    gx_run *w = wl_get(d, key);
    if (!w) return;
    gx_err e;
    gx_engine_cancel(d->eng, key, "not recorded", gx_loop_now(d->loop), &e);
    gx_engine_remove(d->eng, key, &e);
    gx_exec_drop(d->exec, w);
}
