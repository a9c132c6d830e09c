/* executor_record: a run's record and its life across daemon restarts (run/executor.h).
 * Owns: gx_run's creation and freeing, its durable record (the store's "run" column) and
 * its restoring, the paths of a pod's log and exit record, and the re-adoption of
 * recorded processes after a restart (the recovery rule in executor.h).
 * Must not: write the store (the persist hook does) or read the engine but through the
 * hooks. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/alloc.h"
#include "run/executor_int.h"

gx_run *gx_run_new(const json_t *manifest, gx_err *err)
{
    gx_run *w = gx_xcalloc(1, sizeof *w);
    w->manifest = json_deep_copy(manifest);
    const json_t *md = json_object_get(w->manifest, "metadata");
    w->key = w->id.key; w->ns = w->id.ns; w->name = w->id.name;
    if (gx_wlkey_make(&w->id, json_string_value(json_object_get(md, "namespace")) ?: "default",
                      json_string_value(json_object_get(md, "name")), err) ||
        gx_podspec_read(w->manifest, &w->ps, err)) {
        json_decref(w->manifest);
        free(w);
        return NULL;
    }
    return w;
}

void gx_run_free(gx_run *w)
{
    if (!w) return;
    for (size_t i = 0; i < w->npods; i++) {
        gx_proc_close(&w->pods[i].proc);
        free(w->pods[i].watch);
    }
    free(w->pods);
    json_decref(w->manifest);
    free(w);
}

void gx_run_note(gx_run *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->note, sizeof w->note, fmt, ap);
    va_end(ap);
}

int gx_run_alive(const gx_run *w, int gen_only)
{
    int n = 0;
    for (size_t i = 0; i < w->npods; i++)
        if (w->pods[i].alive && (!gen_only || w->pods[i].gen == w->gen)) n++;
    return n;
}

void gx_run_log_path(const char *log_dir, const char *key, int index, char *out, size_t n)
{
    gx_wlkey k;
    gx_err e;
    if (gx_wlkey_parse(&k, key, &e)) { out[0] = 0; return; }  /* no such workload: "" opens nothing */
    snprintf(out, n, "%s/%s/%s/pod-%d.log", log_dir, k.ns, k.name, index);
}

void gx_exec_exit_path(const gx_exec *x, const gx_run *w, int gen, int index, char *out, size_t n)
{
    snprintf(out, n, "%s/%s/%s/g%d-p%d.exit", x->run_dir, w->ns, w->name, gen, index);
}

/* ---- run record (the "run" column) ---------------------------------------------- */

json_t *gx_run_record(const gx_run *w)
{
    json_t *pods = json_array();
    for (size_t i = 0; i < w->npods; i++) {
        const gx_run_pod *p = &w->pods[i];
        json_t *po = json_pack("{s:i,s:i,s:i,s:i,s:I,s:b,s:I,s:I,s:i,s:i,s:s,s:s}",
            "gen", p->gen, "index", p->index, "slot", p->slot, "pid", (int)p->proc.pid,
            "startTime", (json_int_t)p->proc.start_time, "alive", p->alive,
            "startedMs", (json_int_t)p->started_ms, "finishedMs", (json_int_t)p->finished_ms,
            "exitCode", p->exit_code, "signal", p->signal_no, "devices", p->devices, "reason", p->reason);
        if (p->starting) json_object_set_new(po, "starting", json_true());
        if (p->cuda) json_object_set_new(po, "cuda", json_integer(p->cuda));
        if (p->sandboxed)
            json_object_update_new(po, json_pack("{s:b,s:I,s:s,s:I}", "sandboxed", 1, "uid", (json_int_t)p->uid,
                                                 "cgroup", p->cgroup, "memoryLimit", (json_int_t)p->memory_limit));
        json_array_append_new(pods, po);
    }
    return json_pack("{s:i,s:i,s:i,s:i,s:b,s:I,s:I,s:b,s:s,s:o}", "gen", w->gen, "succeeded", w->succeeded,
                     "failures", w->failures, "nextIndex", w->next_index, "stopping", w->stopping,
                     "killAt", (json_int_t)w->kill_at, "retryAt", (json_int_t)w->retry_at,
                     "deferred", w->deferred, "note", w->note, "pods", pods);
}

gx_run_pod *gx_exec_pod_add(gx_run *w)
{
    if (w->npods == w->cappods) w->pods = gx_xgrow(w->pods, &w->cappods, w->npods + 1, sizeof *w->pods);
    gx_run_pod *p = &w->pods[w->npods++];
    memset(p, 0, sizeof *p);
    p->proc.pidfd = -1;
    p->proc.errfd = -1;
    return p;
}

void gx_run_restore(gx_run *w, const json_t *r)
{
    w->gen = (int)json_integer_value(json_object_get(r, "gen"));
    w->succeeded = (int)json_integer_value(json_object_get(r, "succeeded"));
    w->failures = (int)json_integer_value(json_object_get(r, "failures"));
    w->next_index = (int)json_integer_value(json_object_get(r, "nextIndex"));
    w->stopping = json_is_true(json_object_get(r, "stopping"));
    w->kill_at = json_integer_value(json_object_get(r, "killAt"));
    w->retry_at = json_integer_value(json_object_get(r, "retryAt"));
    w->deferred = json_is_true(json_object_get(r, "deferred"));
    snprintf(w->note, sizeof w->note, "%s", json_string_value(json_object_get(r, "note")) ?: "");
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(r, "pods"), i, x) {
        gx_run_pod *p = gx_exec_pod_add(w);
        p->gen = (int)json_integer_value(json_object_get(x, "gen"));
        p->index = (int)json_integer_value(json_object_get(x, "index"));
        p->slot = (int)json_integer_value(json_object_get(x, "slot"));
        p->proc.pid = (pid_t)json_integer_value(json_object_get(x, "pid"));
        p->proc.start_time = (uint64_t)json_integer_value(json_object_get(x, "startTime"));
        p->alive = json_is_true(json_object_get(x, "alive"));
        p->starting = json_is_true(json_object_get(x, "starting"));
        p->started_ms = json_integer_value(json_object_get(x, "startedMs"));
        p->finished_ms = json_integer_value(json_object_get(x, "finishedMs"));
        p->exit_code = (int)json_integer_value(json_object_get(x, "exitCode"));
        p->signal_no = (int)json_integer_value(json_object_get(x, "signal"));
        snprintf(p->devices, sizeof p->devices, "%s", json_string_value(json_object_get(x, "devices")) ?: "");
        snprintf(p->reason, sizeof p->reason, "%s", json_string_value(json_object_get(x, "reason")) ?: "");
        p->sandboxed = json_is_true(json_object_get(x, "sandboxed"));
        p->cuda = (int)json_integer_value(json_object_get(x, "cuda"));
        p->uid = (uid_t)json_integer_value(json_object_get(x, "uid"));
        p->memory_limit = json_integer_value(json_object_get(x, "memoryLimit"));
        snprintf(p->cgroup, sizeof p->cgroup, "%s", json_string_value(json_object_get(x, "cgroup")) ?: "");
    }
}

/* ---- recovery ------------------------------------------------------------------------- */

/* A pod recorded as starting (its intent was committed, its pid was not): did its shim
 * start? Its exit record says it ran and ended (it is then settled like a pod that ended
 * while the daemon was down: 1); a shim for its exit file says it runs (adopted: 1); with
 * neither it never started or its shim was killed: 0, and it is lost. It is never
 * started again: a copy of it may live. */
static int find_started(gx_exec *x, gx_run *w, gx_run_pod *p, int *ended)
{
    char ep[PATH_MAX];
    gx_exec_exit_path(x, w, p->gen, p->index, ep, sizeof ep);
    *ended = 0;
    gx_proc found;
    if (access(ep, F_OK) == 0) *ended = 1;
    else if (gx_proc_find_shim(ep, &found)) return 0;
    else p->proc = found;
    p->starting = 0;
    p->alive = 1;
    return 1;
}

/* Re-attach one workload's recorded processes (see the rule in executor.h). */
void gx_exec_recover(gx_exec *x, gx_run *w)
{
    int64_t now = gx_loop_now(x->loop);
    int lost = 0;
    gx_run_pod *ended[64];
    int nended = 0;
    x->recovering = 1;
    for (size_t i = 0; i < w->npods; i++) {
        gx_run_pod *p = &w->pods[i];
        int found_ended = 0;
        if (p->starting && find_started(x, w, p, &found_ended)) {
            if (found_ended) { if (nended < 64) ended[nended++] = p; }
            else gx_exec_watch_pod(x, w, p);
            continue;
        }
        if (!p->alive && !p->starting) continue;
        char ep[PATH_MAX];
        gx_exec_exit_path(x, w, p->gen, p->index, ep, sizeof ep);
        gx_proc adopted;
        if (p->alive && access(ep, F_OK) == 0) {
            if (nended < 64) ended[nended++] = p;
        } else if (p->alive && gx_proc_adopt(p->proc.pid, p->proc.start_time, &adopted) == 0) {
            p->proc = adopted;
            p->watch = NULL;
            gx_exec_watch_pod(x, w, p);
        } else {
            /* its shim is gone without a record (or a starting pod's never showed up):
             * whatever of it still runs in its cgroup is stopped, so that the requeued
             * run can never overlap it */
            gx_exec_pod_release(x, p);
            p->starting = 0;
            p->alive = 0;
            p->finished_ms = now;
            p->exit_code = -1;
            if (p->gen == w->gen) lost++;
        }
    }
    int admitted = x->h.admission(x->h.ud, w->key, NULL) == 1;
    if (admitted && lost) {
        gx_exec_stop(x, w, NULL);
        gx_run_note(w, "%d pod%s gone when gpuaas restarted; requeued", lost, lost == 1 ? " was" : "s were");
        x->h.ended(x->h.ud, w, GX_RUN_LOST);
        for (int i = 0; i < nended; i++) { ended[i]->alive = 0; ended[i]->finished_ms = now; }
    } else {
        for (int i = 0; i < nended; i++) gx_exec_pod_exited(x, w, ended[i]);
        if (admitted && !w->stopping && !gx_run_alive(w, 1) && !w->retry_at &&
            w->succeeded < w->ps.completions && !nended)
            w->deferred = 1; /* admitted but never started: start now */
        if (!admitted && gx_run_alive(w, 0)) gx_exec_stop(x, w, NULL); /* they were being stopped */
    }
    x->recovering = 0;
    x->next_timer_check = now;
}
