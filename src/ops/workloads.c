/* workloads: the daemon's side of each workload: its processes.
 * Owns: turning the engine's decisions into processes (start on admission, stop on
 * cancel/preemption/expiry, SIGKILL after the grace period, back-off restarts),
 * turning process exits into engine events (finish), recovery after a restart,
 * and persisting every change before it is acknowledged.
 * Must not: decide who runs (that is src/core) or parse HTTP (routes.c).
 *
 * Recovery rule (docs/operations.md): after a restart, each pod recorded as running
 * is re-adopted when its shim is still alive (same pid and start time); a pod whose
 * shim ended while the daemon was down is settled from the exit status the shim
 * wrote; a pod that is gone without a record is lost, and a workload with a lost pod
 * has its other pods stopped and is requeued (Evicted, reason ProcessesLost). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ops/daemon.h"
#include "ops/wlname.h"
#include "core/quantity.h"
#include "gpu/runtime.h"
#include "run/sandbox.h"
#include "lib/path.h"

#define BACKOFF_BASE_MS 10000
#define BACKOFF_MAX_MS 360000

typedef struct watch_ctx { gx_daemon *d; gx_wlkey key; int gen, index; } watch_ctx;

static void on_pod_fd(gx_loop *l, int fd, uint32_t ev, void *ud);
static void pod_exited(gx_daemon *d, gx_wl *w, gx_pod *p);
static void stop_pods(gx_daemon *d, gx_wl *w);

static void wl_dir(const char *base, const gx_wl *w, char *out, size_t n)
{
    snprintf(out, n, "%s/%s/%s", base, w->ns, w->name);
}

void gx_d_log_path(const gx_daemon *d, const char *key, int index, char *out, size_t n)
{
    gx_wlkey k;
    gx_err e;
    if (gx_wlkey_parse(&k, key, &e)) { out[0] = 0; return; }  /* no such workload: "" opens nothing */
    snprintf(out, n, "%s/%s/%s/pod-%d.log", d->log_dir, k.ns, k.name, index);
}

static void exit_path(const gx_daemon *d, const gx_wl *w, int gen, int index, char *out, size_t n)
{
    snprintf(out, n, "%s/%s/%s/g%d-p%d.exit", d->run_dir, w->ns, w->name, gen, index);
}

static gx_wl *wl_get(gx_daemon *d, const char *key) { return gx_strmap_get(&d->wls, key); }

static gx_wl *wl_new(const json_t *manifest, gx_err *err)
{
    gx_wl *w = calloc(1, sizeof *w);
    if (!w) abort();
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

static void wl_free(gx_daemon *d, gx_wl *w)
{
    for (size_t i = 0; i < w->npods; i++) {
        gx_pod *p = &w->pods[i];
        if (p->proc.pidfd >= 0) gx_loop_unwatch(d->loop, p->proc.pidfd);
        gx_proc_close(&p->proc);
        free(p->watch);
    }
    free(w->pods);
    json_decref(w->manifest);
    free(w);
}

/* ---- run record (the "run" column) ---------------------------------------------- */

static json_t *run_record(const gx_wl *w)
{
    json_t *pods = json_array();
    for (size_t i = 0; i < w->npods; i++) {
        const gx_pod *p = &w->pods[i];
        json_t *po = json_pack("{s:i,s:i,s:i,s:i,s:I,s:b,s:I,s:I,s:i,s:i,s:s,s:s}",
            "gen", p->gen, "index", p->index, "slot", p->slot, "pid", (int)p->proc.pid,
            "startTime", (json_int_t)p->proc.start_time, "alive", p->alive,
            "startedMs", (json_int_t)p->started_ms, "finishedMs", (json_int_t)p->finished_ms,
            "exitCode", p->exit_code, "signal", p->signal_no, "devices", p->devices, "reason", p->reason);
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

static gx_pod *pod_add(gx_wl *w)
{
    if (w->npods == w->cappods) {
        size_t cap = w->cappods ? w->cappods * 2 : 4;
        gx_pod *p = realloc(w->pods, cap * sizeof *p);
        if (!p) abort();
        w->pods = p;
        w->cappods = cap;
    }
    gx_pod *p = &w->pods[w->npods++];
    memset(p, 0, sizeof *p);
    p->proc.pidfd = -1;
    p->proc.errfd = -1;
    return p;
}

static void run_restore(gx_wl *w, const json_t *r)
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
        gx_pod *p = pod_add(w);
        p->gen = (int)json_integer_value(json_object_get(x, "gen"));
        p->index = (int)json_integer_value(json_object_get(x, "index"));
        p->slot = (int)json_integer_value(json_object_get(x, "slot"));
        p->proc.pid = (pid_t)json_integer_value(json_object_get(x, "pid"));
        p->proc.start_time = (uint64_t)json_integer_value(json_object_get(x, "startTime"));
        p->alive = json_is_true(json_object_get(x, "alive"));
        p->started_ms = json_integer_value(json_object_get(x, "startedMs"));
        p->finished_ms = json_integer_value(json_object_get(x, "finishedMs"));
        p->exit_code = (int)json_integer_value(json_object_get(x, "exitCode"));
        p->signal_no = (int)json_integer_value(json_object_get(x, "signal"));
        snprintf(p->devices, sizeof p->devices, "%s", json_string_value(json_object_get(x, "devices")) ?: "");
        snprintf(p->reason, sizeof p->reason, "%s", json_string_value(json_object_get(x, "reason")) ?: "");
        p->sandboxed = json_is_true(json_object_get(x, "sandboxed"));
        p->uid = (uid_t)json_integer_value(json_object_get(x, "uid"));
        p->memory_limit = json_integer_value(json_object_get(x, "memoryLimit"));
        snprintf(p->cgroup, sizeof p->cgroup, "%s", json_string_value(json_object_get(x, "cgroup")) ?: "");
    }
}

/* Write the engine's status and our run record. Inside a transaction when the caller
 * opened one; otherwise this is its own committed transaction. */
static int persist(gx_daemon *d, gx_wl *w, gx_err *err)
{
    int64_t now = gx_loop_now(d->loop);
    json_t *st = gx_engine_workload(d->eng, w->key, now);
    json_t *run = run_record(w);
    int rc = gx_store_update_workload(d->store, w->ns, w->name, st ? st : json_null(), run, now, err);
    json_decref(st);
    json_decref(run);
    return rc;
}

static void persist_or_log(gx_daemon *d, gx_wl *w)
{
    gx_err e;
    gx_err_clear(&e);
    if (persist(d, w, &e)) fprintf(stderr, "gpuaas: cannot record %s: %s\n", w->key, e.msg);
}

/* ---- processes ---------------------------------------------------------------------- */

static int alive_pods(const gx_wl *w, int gen_only)
{
    int n = 0;
    for (size_t i = 0; i < w->npods; i++)
        if (w->pods[i].alive && (!gen_only || w->pods[i].gen == w->gen)) n++;
    return n;
}

static void watch_pod(gx_daemon *d, gx_wl *w, gx_pod *p)
{
    if (p->proc.pidfd < 0) return; /* polled in tick instead */
    watch_ctx *c = malloc(sizeof *c);
    if (!c) abort();
    c->d = d;
    c->key = w->id;
    c->gen = p->gen;
    c->index = p->index;
    if (gx_loop_watch(d->loop, p->proc.pidfd, EPOLLIN, on_pod_fd, c)) {
        free(c);
        gx_proc_close(&p->proc);
        return;
    }
    p->watch = c;
}

/* Devices of the engine's placement for one pod slot, "uuid,uuid". */
static void slot_devices(const json_t *view, int slot, char *out, size_t n)
{
    out[0] = 0;
    size_t i, k, len = 0;
    json_t *pl, *dev;
    json_array_foreach(json_object_get(view, "placement"), i, pl) {
        if (json_integer_value(json_object_get(pl, "pod")) != slot) continue;
        json_array_foreach(json_object_get(pl, "devices"), k, dev) {
            const char *u = json_string_value(json_object_get(dev, "uuid"));
            if (u) len += (size_t)snprintf(out + len, len < n ? n - len : 0, "%s%s", len ? "," : "", u);
        }
    }
}

static void set_note(gx_wl *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_note(gx_wl *w, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->note, sizeof w->note, fmt, ap);
    va_end(ap);
}

/* The Job cannot go on: say why, stop what still runs, and tell the engine it failed. */
static void fail_job(gx_daemon *d, gx_wl *w, const char *why)
{
    char msg[sizeof w->note];
    snprintf(msg, sizeof msg, "%s", why);
    set_note(w, "%s", msg);
    stop_pods(d, w);
    gx_err e;
    gx_engine_finish(d->eng, w->key, 0, w->note, gx_loop_now(d->loop), &e);
    d->dirty = 1;
}

/* The environment of a pod's shared devices (MPS pipe and limits, vGPU limits:
 * gpu/podenv), from the engine's placement of this slot; NULL when the pod has no GPU or
 * the daemon has no GPU runtime. It goes before the Job's own env in envp, so a Job
 * cannot raise its limits by setting them again. */
static char **pod_gpu_env(gx_daemon *d, const gx_wl *w, int slot, const char *devices)
{
    gx_gpu_rt *rt = d->gpu;
    if (!rt || !*devices) return NULL;
    json_t *view = gx_engine_workload(d->eng, w->key, gx_loop_now(d->loop));
    json_t *devs = json_array();
    size_t i, k;
    json_t *pl, *dev;
    json_array_foreach(json_object_get(view, "placement"), i, pl) {
        if (json_integer_value(json_object_get(pl, "pod")) != slot) continue;
        json_array_foreach(json_object_get(pl, "devices"), k, dev) json_array_append(devs, dev);
    }
    char **env = gx_gpu_podenv(rt->inv, rt->mps, devices, devs);
    json_decref(devs);
    json_decref(view);
    return env;
}

/* Start the pod for `slot` with the next completion index. Returns -1 when the
 * command cannot be started at all (the Job then fails: retrying cannot help). */
static int start_pod(gx_daemon *d, gx_wl *w, int slot, const char *devices, gx_err *err)
{
    char dir[PATH_MAX], cwd[PATH_MAX], logp[PATH_MAX], exitp[PATH_MAX];
    wl_dir(d->log_dir, w, dir, sizeof dir);
    gx_mkdirs(dir, 0755);
    wl_dir(d->run_dir, w, cwd, sizeof cwd);
    gx_mkdirs(cwd, 0755);
    int index = w->next_index;
    gx_d_log_path(d, w->key, index, logp, sizeof logp);
    exit_path(d, w, w->gen, index, exitp, sizeof exitp);
    char **argv = gx_podspec_argv(&w->ps);
    int boxed = d->cfg.run.sandbox;
    gx_podbox_run br;
    if (boxed && gx_d_pod_box(d, w, index, devices, argv, &br, err)) {
        gx_podspec_free_vec(argv);
        return -1;
    }
    w->next_index++;
    const char *procs[GX_CG_NCTRL + 1];
    for (int i = 0; boxed && i < br.nprocs; i++) procs[i] = br.procs[i];
    gx_proc_contain box = {procs, boxed ? br.nprocs : 0, 1};
    char **gpu_env = pod_gpu_env(d, w, slot, devices);
    char **envp = gx_podspec_envp(&w->ps, w->key, index, devices, (const char *const *)gpu_env,
                                  boxed ? br.work_dir : NULL);
    gx_podspec_free_vec(gpu_env);
    gx_proc_spec spec = {argv, envp, w->ps.working_dir ? w->ps.working_dir : cwd, logp, exitp};
    if (boxed) spec = (gx_proc_spec){br.argv, envp, "", logp, exitp};
    gx_pod *p = pod_add(w);
    p->gen = w->gen;
    p->index = index;
    p->slot = slot;
    p->started_ms = gx_loop_now(d->loop);
    p->exit_code = -1;
    snprintf(p->devices, sizeof p->devices, "%s", devices);
    if (boxed) {
        p->sandboxed = 1;
        p->uid = br.uid;
        p->memory_limit = br.memory_bytes;
        snprintf(p->cgroup, sizeof p->cgroup, "%s", br.cgroup);
    }
    int rc = gx_proc_start_contained(&spec, boxed ? &box : NULL, &p->proc, err);
    gx_podspec_free_vec(argv);
    gx_podspec_free_vec(envp);
    if (boxed) gx_sandbox_free_argv(br.argv);
    if (rc && boxed) gx_d_pod_release(d, p);
    if (rc) { /* the shim could not be started (not the command: see pod_exited) */
        p->finished_ms = p->started_ms;
        p->exit_code = 127;
        return -1;
    }
    p->alive = 1;
    watch_pod(d, w, p);
    return 0;
}

/* start_pod on the devices the admission `view` gives `slot`; a command that cannot be
 * started fails the Job, and -1 tells the caller to start no more slots. */
static int start_slot(gx_daemon *d, gx_wl *w, const json_t *view, int slot)
{
    char dev[512];
    slot_devices(view, slot, dev, sizeof dev);
    gx_err e;
    gx_err_clear(&e);
    if (!start_pod(d, w, slot, dev, &e)) return 0;
    fail_job(d, w, e.msg);
    return -1;
}

static void stop_pods(gx_daemon *d, gx_wl *w)
{
    int64_t now = gx_loop_now(d->loop);
    int any = 0;
    for (size_t i = 0; i < w->npods; i++)
        if (w->pods[i].alive) {
            gx_d_pod_signal(d, &w->pods[i], w->ps.grace_ms ? SIGTERM : SIGKILL);
            any = 1;
        }
    w->retry_at = 0;
    w->deferred = 0;
    if (!any) { w->stopping = 0; return; }
    w->stopping = 1;
    w->kill_at = now + w->ps.grace_ms;
    if (!d->next_timer_check || w->kill_at < d->next_timer_check) d->next_timer_check = w->kill_at;
}

/* Does `list` ("uuid,uuid") name uuid exactly? */
static int names_device(const char *list, const char *uuid)
{
    size_t n = strlen(uuid);
    for (const char *p = list; p && *p;) {
        const char *e = strchr(p, ',');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l == n && !strncmp(p, uuid, n)) return 1;
        p = e ? e + 1 : NULL;
    }
    return 0;
}

/* A pod's vGPU memory on a fractional GPU of `whole` MiB, from its Job's requests (HAMi's
 * rule: memory asked, else the cores share of the memory, else the whole GPU). */
static int64_t vgpu_mem(const gx_wl *o, int64_t whole)
{
    const json_t *res = json_object_get(o->ps.container, "resources");
    const json_t *rq = json_object_get(res, "requests") ?: json_object_get(res, "limits");
    const json_t *jm = json_object_get(rq, "nvidia.com/gpumem"), *jc = json_object_get(rq, "nvidia.com/gpucores");
    long long mem = json_is_integer(jm) ? json_integer_value(jm) : json_string_value(jm) ? atoll(json_string_value(jm)) : 0;
    long long cores = json_is_integer(jc) ? json_integer_value(jc) : json_string_value(jc) ? atoll(json_string_value(jc)) : 0;
    if (mem > 0) return mem;
    if (cores > 0) return whole * (cores > 100 ? 100 : cores) / 100;
    return whole;
}

/* Must the pods about to start on `uuid` (`adding` of them, of workload self) wait for
 * processes that are still stopping? A whole device waits for every one of them; a
 * share only needs room for its own slot: a time-sliced/MPS replica waits while the
 * live processes on the GPU (running and stopping) leave no replica of the N, a vGPU
 * while their memory and its own would exceed the GPU's. Without the GPU runtime's
 * inventory (Node files only) every device is treated as whole. */
static int device_busy(gx_daemon *d, const gx_wl *self, const char *uuid, int adding)
{
    int stopping = 0, live = 0;
    int64_t live_mem = 0;
    gx_gpu_rt *rt = d->gpu;
    int mig = -1;
    gx_gpu_dev *g = rt ? gx_gpu_inventory_owner(rt->inv, uuid, &mig) : NULL;
    int64_t whole = g ? (mig >= 0 ? g->mig[mig].mem_mib : g->mem_mib) : 0;
    for (size_t s = 0; s < d->wls.cap; s++) {
        if (!d->wls.keys[s] || d->wls.keys[s] == (char *)1) continue;
        const gx_wl *o = d->wls.vals[s];
        for (size_t i = 0; i < o->npods; i++) {
            const gx_pod *p = &o->pods[i];
            if (!p->alive || !names_device(p->devices, uuid)) continue;
            if (o == self && p->gen == self->gen) continue;   /* the new run's own pods */
            live++;
            live_mem += vgpu_mem(o, whole);
            stopping += o != self ? o->stopping : 1;
        }
    }
    if (!stopping) return 0;
    if (!g) return 1;
    int replicas = mig >= 0 ? g->mig[mig].replicas : g->replicas;
    if (mig < 0 && (g->mode == GX_SHARE_TIMESLICING || g->mode == GX_SHARE_MPS) && replicas > 1)
        return live + adding > replicas;
    if (mig >= 0 && replicas > 1) return live + adding > replicas;
    if (mig < 0 && g->mode == GX_SHARE_FRACTIONAL) return live_mem + (int64_t)adding * vgpu_mem(self, whole) > whole;
    return 1;
}

/* Are any of these devices ("uuid,uuid", one entry per pod slot device) held by a
 * process that is still stopping, beyond what sharing allows? */
static int devices_busy(gx_daemon *d, const gx_wl *self, const char *devices)
{
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", devices);
    char *save = NULL;
    for (char *u = strtok_r(copy, ",", &save); u; u = strtok_r(NULL, ",", &save)) {
        int adding = 0;   /* pods of this run on the same device */
        for (const char *p = devices; p && *p;) {
            const char *e = strchr(p, ',');
            size_t l = e ? (size_t)(e - p) : strlen(p);
            adding += l == strlen(u) && !strncmp(p, u, l);
            p = e ? e + 1 : NULL;
        }
        if (device_busy(d, self, u, adding)) return 1;
    }
    return 0;
}

/* The workload was just admitted (or its devices just freed): start its pods. */
static void start_run(gx_daemon *d, gx_wl *w)
{
    int64_t now = gx_loop_now(d->loop);
    json_t *view = gx_engine_workload(d->eng, w->key, now);
    if (!view) return;
    int count = w->ps.parallelism;
    json_t *psa = json_array_get(json_object_get(json_object_get(view, "admission"), "podSetAssignments"), 0);
    if (json_is_integer(json_object_get(psa, "count"))) count = (int)json_integer_value(json_object_get(psa, "count"));
    int remaining = w->ps.completions - w->succeeded;
    if (count > remaining) count = remaining;
    char all[4096] = "";
    size_t len = 0;
    for (int s = 0; s < count; s++) {
        char dev[512];
        slot_devices(view, s, dev, sizeof dev);
        if (*dev) len += (size_t)snprintf(all + len, len < sizeof all ? sizeof all - len : 0, "%s%s", len ? "," : "", dev);
    }
    if (devices_busy(d, w, all)) {
        w->deferred = 1;
        set_note(w, "waiting for stopping processes to release GPUs %s", all);
        json_decref(view);
        return;
    }
    w->deferred = 0;
    for (int s = 0; s < count; s++)
        if (start_slot(d, w, view, s)) break;
    if (alive_pods(w, 1)) set_note(w, "%d pod%s started", alive_pods(w, 1), alive_pods(w, 1) == 1 ? "" : "s");
    json_decref(view);
}

static void on_pod_fd(gx_loop *l, int fd, uint32_t ev, void *ud)
{
    (void)l; (void)ev;
    watch_ctx *c = ud;
    gx_daemon *d = c->d;
    gx_wl *w = wl_get(d, c->key.key);
    gx_pod *p = NULL;
    for (size_t i = 0; w && i < w->npods; i++)
        if (w->pods[i].gen == c->gen && w->pods[i].index == c->index && w->pods[i].proc.pidfd == fd) p = &w->pods[i];
    gx_loop_unwatch(d->loop, fd);
    free(c);
    if (!p) { close(fd); return; }
    p->watch = NULL;
    if (!gx_proc_exited(&p->proc)) { /* spurious: watch again */
        watch_pod(d, w, p);
        return;
    }
    pod_exited(d, w, p);
    persist_or_log(d, w);
    gx_http_wake_streams(d->http);
}

static int is_current(gx_daemon *d, gx_wl *w, const gx_pod *p)
{
    if (p->gen != w->gen || w->stopping) return 0;
    json_t *v = gx_engine_workload(d->eng, w->key, gx_loop_now(d->loop));
    int admitted = v && !strcmp(json_string_value(json_object_get(v, "state")) ?: "", "Admitted");
    json_decref(v);
    return admitted;
}

/* A pod's process is gone: settle its status, then decide what the Job does next. */
static void pod_exited(gx_daemon *d, gx_wl *w, gx_pod *p)
{
    int64_t now = gx_loop_now(d->loop);
    char ep[PATH_MAX];
    exit_path(d, w, p->gen, p->index, ep, sizeof ep);
    p->alive = 0;
    p->finished_ms = now;
    int sandbox_up = 0;
    int start_errno = gx_proc_start_outcome(&p->proc, &sandbox_up);
    gx_proc_close(&p->proc);
    if (gx_proc_read_status(ep, &p->exit_code, &p->signal_no)) {
        p->exit_code = 137; /* the shim itself was killed: only SIGKILL does that */
        p->signal_no = SIGKILL;
    }
    gx_d_pod_settle(d, p);
    d->dirty = 1;
    if (!is_current(d, w, p)) {
        if (!alive_pods(w, 0)) { w->stopping = 0; w->kill_at = 0; }
        return;
    }
    gx_err e;
    gx_err_clear(&e);
    if (p->sandboxed && sandbox_up == 0 && !start_errno && !p->signal_no) {
        /* bwrap gave up before the pod's command ran: its reason is the log's last line */
        char why[400], tail[300];
        gx_d_pod_log_tail(d, w, p->index, tail, sizeof tail);
        snprintf(why, sizeof why, "the pod sandbox could not be set up: %s", tail);
        fail_job(d, w, why);
        return;
    }
    if (start_errno) {
        /* the command cannot be run at all: retrying cannot help */
        const json_t *cmd = json_array_get(json_object_get(w->ps.container, "command"), 0);
        char why[300];
        snprintf(why, sizeof why, "cannot run \"%s\": %s", json_string_value(cmd) ?: "?", strerror(start_errno));
        /* in the sandbox the shim said which step failed (the working directory, the exec)
         * on the pod's log: its own words are more exact than the errno alone */
        char tail[300];
        if (p->sandboxed && (gx_d_pod_log_tail(d, w, p->index, tail, sizeof tail), !strncmp(tail, "gpuaas-shim: ", 13)) &&
            strncmp(tail, "gpuaas-shim: cannot run ", 24))
            snprintf(why, sizeof why, "%s", tail + 13);
        fail_job(d, w, why);
        return;
    }
    if (p->exit_code == 0) {
        w->succeeded++;
        if (w->succeeded >= w->ps.completions) {
            set_note(w, "%d of %d pods succeeded", w->succeeded, w->ps.completions);
            stop_pods(d, w);
            gx_engine_finish(d->eng, w->key, 1, w->note, now, &e);
        } else if (w->succeeded + alive_pods(w, 1) < w->ps.completions) {
            char dev[512];
            snprintf(dev, sizeof dev, "%s", p->devices);
            if (start_pod(d, w, p->slot, dev, &e)) fail_job(d, w, e.msg);
        }
        return;
    }
    w->failures++;
    if (!strcmp(p->reason, "OOMKilled")) {
        char lim[32];
        set_note(w, "pod %d was OOMKilled (memory limit %s)", p->index,
                 gx_quantity_format(p->memory_limit * 1000, lim, sizeof lim));
    } else if (p->signal_no) set_note(w, "pod %d was killed by signal %d", p->index, p->signal_no);
    else set_note(w, "pod %d exited with code %d", p->index, p->exit_code);
    if (w->failures > w->ps.backoff_limit) {
        char msg[300];
        snprintf(msg, sizeof msg, "%s; backoffLimit %d reached", w->note, w->ps.backoff_limit);
        fail_job(d, w, msg);
        return;
    }
    /* Kubernetes' back-off: 10 s, 20 s, 40 s ... capped at 6 minutes. */
    int64_t delay = BACKOFF_BASE_MS;
    for (int i = 1; i < w->failures && delay < BACKOFF_MAX_MS; i++) delay *= 2;
    if (delay > BACKOFF_MAX_MS) delay = BACKOFF_MAX_MS;
    w->retry_at = now + delay;
    if (!d->next_timer_check || w->retry_at < d->next_timer_check) d->next_timer_check = w->retry_at;
    char m[sizeof w->note + 96];   /* the note and the longest tail below */
    snprintf(m, sizeof m, "%s; restarting in %llds (failure %d of backoffLimit %d)", w->note,
             (long long)(delay / 1000), w->failures, w->ps.backoff_limit);
    set_note(w, "%s", m);
}

/* Restart failed pod slots once their back-off has passed. */
static void restart_failed(gx_daemon *d, gx_wl *w)
{
    w->retry_at = 0;
    json_t *view = gx_engine_workload(d->eng, w->key, gx_loop_now(d->loop));
    int admitted = view && !strcmp(json_string_value(json_object_get(view, "state")) ?: "", "Admitted");
    if (!admitted || w->stopping) { json_decref(view); return; }
    int count = w->ps.parallelism;
    for (int s = 0; s < count && w->succeeded + alive_pods(w, 1) < w->ps.completions; s++) {
        int busy = 0;
        for (size_t i = 0; i < w->npods; i++)
            if (w->pods[i].alive && w->pods[i].gen == w->gen && w->pods[i].slot == s) busy = 1;
        if (busy) continue;
        if (start_slot(d, w, view, s)) break;
    }
    json_decref(view);
}

/* ---- the tick: timers, scheduling pass, deferred starts ----------------------------- */

static void timed_work(gx_daemon *d, int64_t now)
{
    int64_t next = 0;
    for (size_t s = 0; s < d->wls.cap; s++) {
        if (!d->wls.keys[s] || d->wls.keys[s] == (char *)1) continue;
        gx_wl *w = d->wls.vals[s];
        int changed = 0;
        for (size_t i = 0; i < w->npods; i++) {
            gx_pod *p = &w->pods[i];
            if (p->alive && p->proc.pidfd < 0 && gx_proc_exited(&p->proc)) {
                pod_exited(d, w, p);
                changed = 1;
            }
        }
        if (w->stopping && w->kill_at && w->kill_at <= now) {
            int boxed = 0;
            for (size_t i = 0; i < w->npods; i++)
                if (w->pods[i].alive) {
                    gx_d_pod_signal(d, &w->pods[i], SIGKILL);
                    boxed |= w->pods[i].sandboxed;
                }
            /* a cgroup kill can race a fork: again each second until the shims report the end */
            w->kill_at = boxed ? now + 1000 : 0;
            changed = 1;
        }
        if (w->retry_at && w->retry_at <= now) { restart_failed(d, w); changed = 1; }
        if (w->deferred) { w->deferred = 0; start_run(d, w); changed = 1; }
        if (changed) persist_or_log(d, w);
        int polling = 0;
        for (size_t i = 0; i < w->npods; i++) polling |= w->pods[i].alive && w->pods[i].proc.pidfd < 0;
        int64_t t = polling ? now + 1000 : 0;
        if (w->kill_at && (!t || w->kill_at < t)) t = w->kill_at;
        if (w->retry_at && (!t || w->retry_at < t)) t = w->retry_at;
        if (w->deferred && (!t || now + 1000 < t)) t = now + 1000;
        if (t && (!next || t < next)) next = t;
    }
    d->next_timer_check = next;
}

static void apply_actions(gx_daemon *d, const gx_action *acts, size_t n)
{
    gx_err e;
    gx_err_clear(&e);
    int txn = gx_store_begin(d->store, &e) == 0;
    /* 1. record the decisions */
    for (size_t i = 0; i < n; i++) {
        gx_wl *w = wl_get(d, acts[i].workload);
        if (!w) continue;
        if (acts[i].kind == GX_ACT_ADMIT) {
            w->gen++;
            w->deferred = 1; /* started in step 2, after the commit */
            set_note(w, "admitted");
        } else if (acts[i].kind == GX_ACT_PREEMPT) {
            set_note(w, "preempted by %s: %s", acts[i].by, acts[i].message);
            stop_pods(d, w);
        } else {
            set_note(w, "%s: %s", acts[i].reason, acts[i].message);
            stop_pods(d, w);
        }
        persist_or_log(d, w);
    }
    if (txn && gx_store_commit(d->store, &e)) {
        fprintf(stderr, "gpuaas: commit failed: %s\n", e.msg);
        gx_store_rollback(d->store);
    }
    /* 2. start what was admitted; record the processes */
    txn = gx_store_begin(d->store, &e) == 0;
    for (size_t i = 0; i < n; i++) {
        if (acts[i].kind != GX_ACT_ADMIT) continue;
        gx_wl *w = wl_get(d, acts[i].workload);
        if (!w || !w->deferred) continue;
        w->deferred = 0;
        start_run(d, w);
        persist_or_log(d, w);
    }
    if (txn && gx_store_commit(d->store, &e)) {
        fprintf(stderr, "gpuaas: commit failed: %s\n", e.msg);
        gx_store_rollback(d->store);
    }
}

int64_t gx_d_tick(gx_daemon *d)
{
    int64_t now = gx_loop_now(d->loop);
    int64_t release = gx_podbox_tick(d->box, now);   /* cgroups of ended pods that could not go at once */
    if (d->next_timer_check && d->next_timer_check <= now) timed_work(d, now);
    if (d->dirty || (d->engine_wake && d->engine_wake <= now)) {
        d->dirty = 0;
        gx_action *acts = NULL;
        size_t n = gx_engine_schedule(d->eng, now, &acts);
        if (n) {
            apply_actions(d, acts, n);
            gx_http_wake_streams(d->http);
        }
        free(acts);
        /* deferred starts and newly freed devices are handled by timed_work */
        timed_work(d, gx_loop_now(d->loop));
    }
    int64_t sleep = -1;
    int64_t wake = gx_engine_next_wakeup(d->eng, now);
    d->engine_wake = wake == INT64_MAX ? 0 : wake;
    if (wake != INT64_MAX) sleep = wake > now ? wake - now : 0;
    if (d->next_timer_check) {
        int64_t t = d->next_timer_check > now ? d->next_timer_check - now : 0;
        if (sleep < 0 || t < sleep) sleep = t;
    }
    if (release >= 0 && (sleep < 0 || release < sleep)) sleep = release;
    return sleep;
}

/* ---- requests ----------------------------------------------------------------------- */

int gx_d_submit(gx_daemon *d, const json_t *manifest, const char *unused, json_t **view, gx_err *err)
{
    (void)unused;
    int64_t now = gx_loop_now(d->loop);
    if (d->wls.n >= d->cfg.max_workloads)
        return gx_errf(err, 422, "", "the server holds %zu workloads, its limit (limits.maxWorkloads); "
                       "delete finished ones first", d->wls.n);
    json_t *named = gx_d_name_workload(d, manifest, err);   /* Kubernetes' name rules, generateName */
    gx_wl *w = named ? wl_new(named, err) : NULL;
    json_decref(named);
    if (!w) return -1;
    if (gx_podbox_check_mounts(&d->cfg.run, w->ns, &w->ps, err)) {
        wl_free(d, w);
        return -1;
    }
    if (wl_get(d, w->key)) {
        gx_errf(err, 409, "metadata.name", "workload %s already exists", w->key);
        wl_free(d, w);
        return -1;
    }
    if (gx_engine_submit(d->eng, w->manifest, now, err)) { wl_free(d, w); return -1; }
    json_t *st = gx_engine_workload(d->eng, w->key, now), *run = run_record(w);
    int rc = gx_store_put_workload(d->store, w->ns, w->name, w->manifest, st, run, now, err);
    json_decref(st);
    json_decref(run);
    if (rc) {
        gx_err e2;
        gx_engine_cancel(d->eng, w->key, "not recorded", now, &e2);
        gx_engine_remove(d->eng, w->key, &e2);
        wl_free(d, w);
        return -1;
    }
    gx_strmap_put(&d->wls, w->key, w);
    d->dirty = 1;
    if (view) *view = gx_d_view(d, w->key);
    return 0;
}

int gx_d_cancel(gx_daemon *d, const char *key, const char *who, gx_err *err)
{
    gx_wl *w = wl_get(d, key);
    if (!w) return gx_errf(err, 404, "", "no workload %s", key);
    char msg[256];
    snprintf(msg, sizeof msg, "cancelled by %s", who);
    int rc = gx_engine_cancel(d->eng, key, msg, gx_loop_now(d->loop), err);
    if (rc < 0) return -1;
    set_note(w, "%s", msg);
    stop_pods(d, w);
    if (persist(d, w, err)) return -1;
    d->dirty = 1;
    gx_http_wake_streams(d->http);
    return 0;
}

int gx_d_delete(gx_daemon *d, const char *key, gx_err *err)
{
    gx_wl *w = wl_get(d, key);
    if (!w) return gx_errf(err, 404, "", "no workload %s", key);
    if (alive_pods(w, 0)) return gx_errf(err, 409, "", "workload %s still has processes; cancel it and wait", key);
    json_t *v = gx_engine_workload(d->eng, key, gx_loop_now(d->loop));
    const char *state = v ? json_string_value(json_object_get(v, "state")) : "Finished";
    int ended = state && (!strcmp(state, "Finished") || !strcmp(state, "Deactivated"));
    json_decref(v);
    if (!ended) return gx_errf(err, 409, "", "workload %s is %s; cancel it first", key, state ? state : "active");
    if (gx_store_delete_workload(d->store, w->ns, w->name, err)) return -1;
    gx_err e2;
    if (gx_podbox_remove_work(d->box, w->ns, w->name, &e2)) fprintf(stderr, "gpuaas: %s\n", e2.msg);
    gx_engine_remove(d->eng, key, &e2);
    gx_strmap_del(&d->wls, key);
    wl_free(d, w);
    return 0;
}

int gx_d_active(gx_daemon *d, const char *key)
{
    gx_wl *w = wl_get(d, key);
    if (!w) return 0;
    if (alive_pods(w, 0) || w->deferred || w->retry_at) return 1;
    json_t *v = gx_engine_workload(d->eng, key, gx_loop_now(d->loop));
    const char *state = v ? json_string_value(json_object_get(v, "state")) : NULL;
    int active = state && (!strcmp(state, "Pending") || !strcmp(state, "Admitted"));
    json_decref(v);
    return active;
}

int gx_d_pod_count(gx_daemon *d, const char *key)
{
    gx_wl *w = wl_get(d, key);
    if (!w) return 0;
    int n = w->next_index;
    return n > w->ps.parallelism ? n : w->ps.parallelism;
}

/* The person's view: the engine's status plus phase, reason, message and pods. */
static void add_phase(gx_daemon *d, json_t *v)
{
    gx_wl *w = wl_get(d, json_string_value(json_object_get(v, "key")) ?: "");
    const char *state = json_string_value(json_object_get(v, "state")) ?: "Pending";
    int alive = w ? alive_pods(w, 0) : 0;
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
    json_t *pods = json_array();
    for (size_t k = 0; k < w->npods; k++) {
        const gx_pod *p = &w->pods[k];
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
        json_array_append_new(pods, po);
    }
    json_object_set_new(v, "pods", pods);
    json_object_set_new(v, "succeededPods", json_integer(w->succeeded));
    json_object_set_new(v, "failedPods", json_integer(w->failures));
}

json_t *gx_d_view(gx_daemon *d, const char *key)
{
    json_t *v = gx_engine_workload(d->eng, key, gx_loop_now(d->loop));
    if (v) add_phase(d, v);
    return v;
}

json_t *gx_d_list(gx_daemon *d, const gx_wl_filter *f)
{
    json_t *arr = gx_engine_workloads(d->eng, f, gx_loop_now(d->loop));
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) add_phase(d, v);
    return arr;
}

/* ---- recovery ------------------------------------------------------------------------- */

/* Re-attach one workload's recorded processes (see the rule at the top of the file). */
static void recover_processes(gx_daemon *d, gx_wl *w)
{
    int64_t now = gx_loop_now(d->loop);
    int lost = 0;
    gx_pod *ended[64];
    int nended = 0;
    for (size_t i = 0; i < w->npods; i++) {
        gx_pod *p = &w->pods[i];
        if (!p->alive) continue;
        char ep[PATH_MAX];
        exit_path(d, w, p->gen, p->index, ep, sizeof ep);
        gx_proc adopted;
        if (access(ep, F_OK) == 0) {
            if (nended < 64) ended[nended++] = p;
        } else if (gx_proc_adopt(p->proc.pid, p->proc.start_time, &adopted) == 0) {
            p->proc = adopted;
            p->watch = NULL;
            watch_pod(d, w, p);
        } else {
            /* its shim is gone without a record: whatever of it still runs in its cgroup
             * is stopped, so that the requeued run can never overlap it */
            gx_d_pod_release(d, p);
            p->alive = 0;
            p->finished_ms = now;
            p->exit_code = -1;
            if (p->gen == w->gen) lost++;
        }
    }
    json_t *v = gx_engine_workload(d->eng, w->key, now);
    int admitted = v && !strcmp(json_string_value(json_object_get(v, "state")) ?: "", "Admitted");
    json_decref(v);
    if (admitted && lost) {
        gx_err e;
        stop_pods(d, w);
        set_note(w, "%d pod%s gone when gpuaas restarted; requeued", lost, lost == 1 ? " was" : "s were");
        gx_engine_evict(d->eng, w->key, "ProcessesLost", w->note, now, &e);
        for (int i = 0; i < nended; i++) { ended[i]->alive = 0; ended[i]->finished_ms = now; }
    } else {
        for (int i = 0; i < nended; i++) pod_exited(d, w, ended[i]);
        if (admitted && !w->stopping && !alive_pods(w, 1) && !w->retry_at &&
            w->succeeded < w->ps.completions && !nended)
            w->deferred = 1; /* admitted but never started: start now */
        if (!admitted && alive_pods(w, 0)) stop_pods(d, w); /* they were being stopped */
    }
    d->next_timer_check = now;
}

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
        gx_wl *w = wl_new(manifest, &e);
        if (!w || gx_engine_restore(d->eng, w->manifest, json_object_get(r, "status"), &e)) {
            fprintf(stderr, "gpuaas: cannot restore workload %s/%s: %s (kept in the store)\n",
                    json_string_value(json_object_get(r, "namespace")),
                    json_string_value(json_object_get(r, "name")), e.msg);
            if (w) wl_free(d, w);
            continue;
        }
        run_restore(w, json_object_get(r, "run"));
        gx_strmap_put(&d->wls, w->key, w);
    }
    json_decref(rows);
    if (gx_store_begin(d->store, err)) return -1;
    for (size_t s = 0; s < d->wls.cap; s++) {
        if (!d->wls.keys[s] || d->wls.keys[s] == (char *)1) continue;
        gx_wl *w = d->wls.vals[s];
        recover_processes(d, w);
        persist_or_log(d, w);
    }
    if (gx_store_commit(d->store, err)) { gx_store_rollback(d->store); return -1; }
    d->dirty = 1;
    return 0;
}

void gx_d_free_all(gx_daemon *d)
{
    for (size_t s = 0; s < d->wls.cap; s++) {
        if (!d->wls.keys[s] || d->wls.keys[s] == (char *)1) continue;
        wl_free(d, d->wls.vals[s]);
    }
    gx_strmap_free(&d->wls);
}

void gx_d_unsubmit(gx_daemon *d, const char *key)
{
    gx_wl *w = wl_get(d, key);
    if (!w) return;
    gx_err e;
    gx_engine_cancel(d->eng, key, "not recorded", gx_loop_now(d->loop), &e);
    gx_engine_remove(d->eng, key, &e);
    gx_strmap_del(&d->wls, key);
    wl_free(d, w);
}
