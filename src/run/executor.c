/* executor: the processes of each workload's run (run/executor.h).
 * Owns: the executor handle and its registry of runs; starting a run's pods on the
 * devices of its admission (or deferring them while stopping processes still hold those
 * devices), each in two steps: recorded as starting and committed (the commit hook), then
 * started, so that no pod can run unrecorded (the rule in executor.h); stopping them (SIGTERM, SIGKILL after the grace period), turning each exit
 * into the Job's next step (the next completion, a back-off restart, success, failure),
 * and the timed work behind those.
 * Must not: decide who runs or read the engine but through the hooks (ops/workloads.c
 * answers them), write the store, or include anything from ops/, api/, maas/, portal/. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>
#include "core/quantity.h"
#include "gpu/runtime.h"
#include "lib/alloc.h"
#include "lib/path.h"
#include "run/executor_int.h"
#include "run/sandbox.h"

#define BACKOFF_BASE_MS 10000
#define BACKOFF_MAX_MS 360000

typedef struct watch_ctx { gx_exec *x; gx_wlkey key; int gen, index; } watch_ctx;

static void on_pod_fd(gx_loop *l, int fd, uint32_t ev, void *ud);
static void stop_pods(gx_exec *x, gx_run *w);

static void wl_dir(const char *base, const gx_run *w, char *out, size_t n)
{
    snprintf(out, n, "%s/%s/%s", base, w->ns, w->name);
}

void gx_exec_watch_pod(gx_exec *x, gx_run *w, gx_run_pod *p)
{
    if (p->proc.pidfd < 0) return; /* polled in tick instead */
    watch_ctx *c = gx_xmalloc(sizeof *c);
    c->x = x;
    c->key = w->id;
    c->gen = p->gen;
    c->index = p->index;
    if (gx_loop_watch(x->loop, p->proc.pidfd, EPOLLIN, on_pod_fd, c)) {
        free(c);
        gx_proc_close(&p->proc);
        return;
    }
    p->watch = c;
}

/* The Job cannot go on: say why, stop what still runs, and tell the engine it failed. */
static void fail_job(gx_exec *x, gx_run *w, const char *why)
{
    char msg[sizeof w->note];
    snprintf(msg, sizeof msg, "%s", why);
    gx_run_note(w, "%s", msg);
    stop_pods(x, w);
    x->h.ended(x->h.ud, w, GX_RUN_FAILED);
    x->h.reschedule(x->h.ud);
}

/* The environment of a pod's shared devices (MPS pipe and limits, vGPU limits:
 * gpu/podenv), from the engine's placement of this slot; NULL when the pod has no GPU or
 * the daemon has no GPU runtime. It goes before the Job's own env in envp, so a Job
 * cannot raise its limits by setting them again. */
static char **pod_gpu_env(gx_exec *x, const gx_run *w, int slot, const char *devices)
{
    gx_gpu_rt *rt = x->gpu;
    if (!rt || !*devices) return NULL;
    gx_engine_dev devs[GX_EXEC_POD_DEVS];
    int n = x->h.slot_devices(x->h.ud, w->key, slot, devs, GX_EXEC_POD_DEVS);
    return n > 0 ? gx_gpu_podenv_devs(rt->inv, rt->mps, devs, n < GX_EXEC_POD_DEVS ? n : GX_EXEC_POD_DEVS) : NULL;
}

/* The UUIDs of the devices the admission gives pod slot `slot`, "uuid,uuid" into out
 * ("" when none). -1 when they do not fit: a placement longer than any real pod's. */
static int slot_uuids(gx_exec *x, const gx_run *w, int slot, char *out, size_t n)
{
    gx_engine_dev devs[GX_EXEC_POD_DEVS];
    int nd = x->h.slot_devices(x->h.ud, w->key, slot, devs, GX_EXEC_POD_DEVS);
    size_t len = 0;
    out[0] = 0;
    if (nd > GX_EXEC_POD_DEVS) return -1;
    for (int i = 0; i < nd; i++) {
        size_t l = strlen(devs[i].uuid);
        if (len + (len ? 1 : 0) + l + 1 > n) return -1;
        if (len) out[len++] = ',';
        memcpy(out + len, devs[i].uuid, l + 1);
        len += l;
    }
    return 0;
}

/* Plan the pod for `slot` with the next completion index: recorded in w as starting (no
 * process yet), to be committed before launch_pod starts it. Its exit record from an
 * earlier workload of the same name goes now, so that after a crash an exit record can
 * only be this pod's own. */
static gx_run_pod *intend_pod(gx_exec *x, gx_run *w, int slot, const char *devices)
{
    gx_run_pod *p = gx_exec_pod_add(w);
    p->gen = w->gen;
    p->index = w->next_index++;
    p->slot = slot;
    p->starting = 1;
    p->started_ms = gx_loop_now(x->loop);
    p->exit_code = -1;
    snprintf(p->devices, sizeof p->devices, "%s", devices);
    if (x->sandbox) {
        /* its cgroup's name is known before the sandbox is made: recovery kills what runs there */
        p->sandboxed = 1;
        if (gx_podbox_cgroup_name(w->ns, w->name, w->gen, p->index, p->cgroup, sizeof p->cgroup)) p->cgroup[0] = 0;
    }
    char exitp[PATH_MAX];
    gx_exec_exit_path(x, w, p->gen, p->index, exitp, sizeof exitp);
    unlink(exitp);
    gx_exec_cuda_path(x, w, p->gen, p->index, exitp, sizeof exitp);   /* its CUDA region, likewise */
    unlink(exitp);
    return p;
}

/* Forget w's planned pods that were not started (their record was not committed, or an
 * earlier one failed the Job): the completion index goes back to the first of them. */
static void drop_intents(gx_run *w)
{
    size_t k = 0;
    for (size_t i = 0; i < w->npods; i++) {
        if (!w->pods[i].starting) { w->pods[k++] = w->pods[i]; continue; }
        if (w->pods[i].index < w->next_index) w->next_index = w->pods[i].index;
    }
    w->npods = k;
}

/* Start planned pod p (its record is committed). Returns -1 when the command cannot be
 * started at all (the Job then fails: retrying cannot help); a pod whose sandbox could
 * not be made is left starting, and dropped by the caller (it never ran). */
static int launch_pod(gx_exec *x, gx_run *w, gx_run_pod *p, gx_err *err)
{
    char dir[PATH_MAX], cwd[PATH_MAX], logp[PATH_MAX], exitp[PATH_MAX];
    wl_dir(x->log_dir, w, dir, sizeof dir);
    gx_mkdirs(dir, 0755);
    wl_dir(x->run_dir, w, cwd, sizeof cwd);
    gx_mkdirs(cwd, 0755);
    gx_run_log_path(x->log_dir, w->key, p->index, logp, sizeof logp);
    gx_exec_exit_path(x, w, p->gen, p->index, exitp, sizeof exitp);
    char **argv = gx_podspec_argv(&w->ps);
    int boxed = x->sandbox;
    gx_podbox_run br;
    gx_exec_cuda cu;   /* the CUDA shim: its region is made once the pod's uid is known */
    if (gx_exec_cuda_plan(x, w, p, &cu, err) || (boxed && gx_exec_pod_box(x, w, p->index, p->devices, &cu, argv, &br, err))) {
        gx_podspec_free_vec(argv);
        return -1;
    }
    if (gx_exec_cuda_create(&cu, boxed ? br.uid : geteuid(), boxed ? br.gid : getegid(), err)) {
        gx_podspec_free_vec(argv);
        if (boxed) {
            gx_podbox_release(x->box, br.cgroup);
            gx_sandbox_free_argv(br.argv);
        }
        return -1;
    }
    const char *procs[GX_CG_NCTRL + 1];
    for (int i = 0; boxed && i < br.nprocs; i++) procs[i] = br.procs[i];
    gx_proc_contain box = {procs, boxed ? br.nprocs : 0, 1};
    char **gpu_env = gx_exec_cuda_env(&cu, boxed, pod_gpu_env(x, w, p->slot, p->devices));
    char **envp = gx_podspec_envp(&w->ps, w->key, p->index, p->devices, (const char *const *)gpu_env,
                                  boxed ? br.work_dir : NULL);
    gx_podspec_free_vec(gpu_env);
    gx_proc_spec spec = {argv, envp, w->ps.working_dir ? w->ps.working_dir : cwd, logp, exitp};
    if (boxed) spec = (gx_proc_spec){br.argv, envp, "", logp, exitp};
    p->starting = 0;
    p->started_ms = gx_loop_now(x->loop);
    if (boxed) {
        p->uid = br.uid;
        p->memory_limit = br.memory_bytes;
        snprintf(p->cgroup, sizeof p->cgroup, "%s", br.cgroup);
    }
    int rc = gx_proc_start_contained(&spec, boxed ? &box : NULL, &p->proc, err);
    gx_podspec_free_vec(argv);
    gx_podspec_free_vec(envp);
    if (boxed) gx_sandbox_free_argv(br.argv);
    if (rc && boxed) gx_exec_pod_release(x, p);
    if (rc) { /* the shim could not be started (not the command: see pod_exited) */
        p->finished_ms = p->started_ms;
        p->exit_code = 127;
        return -1;
    }
    p->alive = 1;
    gx_exec_watch_pod(x, w, p);
    /* tests only: hold the loop between the start and whatever records it */
    if (x->start_delay_ms) usleep((useconds_t)x->start_delay_ms * 1000);
    return 0;
}

/* Start every planned pod of w (its record holding them is committed); the first that
 * cannot be started fails the Job, and the rest are forgotten. -1 then. */
static int launch_intents(gx_exec *x, gx_run *w)
{
    gx_err e;
    gx_err_clear(&e);
    int rc = 0;
    for (size_t i = 0; i < w->npods && !rc; i++)
        if (w->pods[i].starting && launch_pod(x, w, &w->pods[i], &e)) rc = -1;
    drop_intents(w);
    if (rc) fail_job(x, w, e.msg);
    return rc;
}

/* Plan the pod of `slot` on the devices its admission gives it; a placement that cannot
 * be expressed fails the Job (and plans no more slots): -1. */
static int intend_slot(gx_exec *x, gx_run *w, int slot)
{
    char dev[GX_EXEC_DEVS_MAX];
    if (!slot_uuids(x, w, slot, dev, sizeof dev)) {
        intend_pod(x, w, slot, dev);
        return 0;
    }
    char why[200];
    snprintf(why, sizeof why, "pod %d is placed on more devices than a pod may use (%d)", slot, GX_EXEC_POD_DEVS);
    drop_intents(w);
    fail_job(x, w, why);
    return -1;
}

/* Commit w's planned pods through the hook, then start them. When the record cannot be
 * committed nothing starts: they are forgotten and *retry set for a later try. */
static void commit_and_launch(gx_exec *x, gx_run *w, int64_t *retry)
{
    if (x->h.commit(x->h.ud, w)) {
        drop_intents(w);
        int64_t now = gx_loop_now(x->loop);
        *retry = now + 1000;
        if (!x->next_timer_check || *retry < x->next_timer_check) x->next_timer_check = *retry;
        return;
    }
    launch_intents(x, w);
}

static void stop_pods(gx_exec *x, gx_run *w)
{
    int64_t now = gx_loop_now(x->loop);
    int any = 0;
    for (size_t i = 0; i < w->npods; i++)
        if (w->pods[i].alive) {
            gx_exec_pod_signal(x, &w->pods[i], w->ps.grace_ms ? SIGTERM : SIGKILL);
            any = 1;
        }
    w->retry_at = 0;
    w->deferred = 0;
    if (!any) { w->stopping = 0; return; }
    w->stopping = 1;
    w->kill_at = now + w->ps.grace_ms;
    if (!x->next_timer_check || w->kill_at < x->next_timer_check) x->next_timer_check = w->kill_at;
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
static int64_t vgpu_mem(const gx_run *o, int64_t whole)
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
static int device_busy(gx_exec *x, const gx_run *self, const char *uuid, int adding)
{
    int stopping = 0, live = 0;
    int64_t live_mem = 0;
    gx_gpu_rt *rt = x->gpu;
    int mig = -1;
    gx_gpu_dev *g = rt ? gx_gpu_inventory_owner(rt->inv, uuid, &mig) : NULL;
    int64_t whole = g ? (mig >= 0 ? g->mig[mig].mem_mib : g->mem_mib) : 0;
    size_t pos = 0;
    for (const gx_run *o; (o = gx_exec_next(x, &pos));) {
        for (size_t i = 0; i < o->npods; i++) {
            const gx_run_pod *p = &o->pods[i];
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
static int devices_busy(gx_exec *x, const gx_run *self, const char *devices)
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
        if (device_busy(x, self, u, adding)) return 1;
    }
    return 0;
}

/* The workload was just admitted (or its devices just freed): plan its pods (see
 * gx_exec_prepare). */
static int prepare_run(gx_exec *x, gx_run *w)
{
    int count = -1;
    if (x->h.admission(x->h.ud, w->key, &count) < 0) return 0;
    if (count < 0) count = w->ps.parallelism;
    int remaining = w->ps.completions - w->succeeded;
    if (count > remaining) count = remaining;
    char all[4096] = "";
    size_t len = 0;
    for (int s = 0; s < count; s++) {
        char dev[GX_EXEC_DEVS_MAX];
        if (slot_uuids(x, w, s, dev, sizeof dev)) continue;   /* intend_slot fails the Job */
        if (*dev) len += (size_t)snprintf(all + len, len < sizeof all ? sizeof all - len : 0, "%s%s", len ? "," : "", dev);
    }
    if (devices_busy(x, w, all)) {
        w->deferred = 1;
        gx_run_note(w, "waiting for stopping processes to release GPUs %s", all);
        return 0;
    }
    w->deferred = 0;
    for (int s = 0; s < count; s++)
        if (intend_slot(x, w, s)) return 0;
    return count;
}

int gx_exec_prepare(gx_exec *x, gx_run *w)
{
    w->deferred = 0;
    return prepare_run(x, w);
}

void gx_exec_launch(gx_exec *x, gx_run *w)
{
    launch_intents(x, w);
    int n = gx_run_alive(w, 1);
    if (n) gx_run_note(w, "%d pod%s started", n, n == 1 ? "" : "s");
}

void gx_exec_unprepare(gx_exec *x, gx_run *w, const char *why)
{
    size_t before = w->npods;
    drop_intents(w);
    if (w->npods == before) return;   /* nothing was planned (deferred, or the Job failed) */
    w->deferred = 1;   /* the tick tries again within a second */
    gx_run_note(w, "admitted; waiting until the store records its pods (%s)", why);
    int64_t t = gx_loop_now(x->loop) + 1000;
    if (!x->next_timer_check || t < x->next_timer_check) x->next_timer_check = t;
}

/* prepare_run, the commit hook, then the launch. */
static void start_run(gx_exec *x, gx_run *w)
{
    if (!prepare_run(x, w)) return;
    if (x->h.commit(x->h.ud, w)) { gx_exec_unprepare(x, w, "the store did not commit"); return; }
    gx_exec_launch(x, w);
}

static void on_pod_fd(gx_loop *l, int fd, uint32_t ev, void *ud)
{
    (void)l; (void)ev;
    watch_ctx *c = ud;
    gx_exec *x = c->x;
    gx_run *w = gx_exec_get(x, c->key.key);
    gx_run_pod *p = NULL;
    for (size_t i = 0; w && i < w->npods; i++)
        if (w->pods[i].gen == c->gen && w->pods[i].index == c->index && w->pods[i].proc.pidfd == fd) p = &w->pods[i];
    gx_loop_unwatch(x->loop, fd);
    free(c);
    if (!p) { close(fd); return; }
    p->watch = NULL;
    if (!gx_proc_exited(&p->proc)) { /* spurious: watch again */
        gx_exec_watch_pod(x, w, p);
        return;
    }
    gx_exec_pod_exited(x, w, p);
    x->h.persist(x->h.ud, w);
    x->h.wake(x->h.ud);
}

static int is_current(gx_exec *x, gx_run *w, const gx_run_pod *p)
{
    if (p->gen != w->gen || w->stopping) return 0;
    return x->h.admission(x->h.ud, w->key, NULL) == 1;
}

/* A pod's process is gone: settle its status, then decide what the Job does next. */
void gx_exec_pod_exited(gx_exec *x, gx_run *w, gx_run_pod *p)
{
    int64_t now = gx_loop_now(x->loop);
    char ep[PATH_MAX];
    gx_exec_exit_path(x, w, p->gen, p->index, ep, sizeof ep);
    p->alive = 0;
    p->finished_ms = now;
    int sandbox_up = 0;
    int start_errno = gx_proc_start_outcome(&p->proc, &sandbox_up);
    gx_proc_close(&p->proc);
    if (gx_proc_read_status(ep, &p->exit_code, &p->signal_no)) {
        p->exit_code = 137; /* the shim itself was killed: only SIGKILL does that */
        p->signal_no = SIGKILL;
    }
    gx_exec_pod_settle(x, p);
    x->h.reschedule(x->h.ud);
    if (!is_current(x, w, p)) {
        if (!gx_run_alive(w, 0)) { w->stopping = 0; w->kill_at = 0; }
        return;
    }
    if (p->sandboxed && sandbox_up == 0 && !start_errno && !p->signal_no) {
        /* bwrap gave up before the pod's command ran: its reason is the log's last line */
        char why[400], tail[300];
        gx_exec_pod_log_tail(x, w, p->index, tail, sizeof tail);
        snprintf(why, sizeof why, "the pod sandbox could not be set up: %s", tail);
        fail_job(x, w, why);
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
        if (p->sandboxed && (gx_exec_pod_log_tail(x, w, p->index, tail, sizeof tail), !strncmp(tail, "gpuaas-shim: ", 13)) &&
            strncmp(tail, "gpuaas-shim: cannot run ", 24))
            snprintf(why, sizeof why, "%s", tail + 13);
        fail_job(x, w, why);
        return;
    }
    if (p->exit_code == 0) {
        w->succeeded++;
        if (w->succeeded >= w->ps.completions) {
            gx_run_note(w, "%d of %d pods succeeded", w->succeeded, w->ps.completions);
            stop_pods(x, w);
            x->h.ended(x->h.ud, w, GX_RUN_SUCCEEDED);
        } else if (w->succeeded + gx_run_alive(w, 1) < w->ps.completions) {
            /* the next completion on the same slot; while recovering nothing can be
             * committed, so the tick starts it (restart_failed fills free slots) */
            if (x->recovering) {
                w->retry_at = now;
                x->next_timer_check = now;
                return;
            }
            char dev[GX_EXEC_DEVS_MAX];
            snprintf(dev, sizeof dev, "%s", p->devices);
            intend_pod(x, w, p->slot, dev);
            commit_and_launch(x, w, &w->retry_at);
        }
        return;
    }
    w->failures++;
    if (!strcmp(p->reason, "OOMKilled")) {
        char lim[32];
        gx_run_note(w, "pod %d was OOMKilled (memory limit %s)", p->index,
                 gx_quantity_format(p->memory_limit * 1000, lim, sizeof lim));
    } else if (p->signal_no) gx_run_note(w, "pod %d was killed by signal %d", p->index, p->signal_no);
    else gx_run_note(w, "pod %d exited with code %d", p->index, p->exit_code);
    if (w->failures > w->ps.backoff_limit) {
        char msg[300];
        snprintf(msg, sizeof msg, "%s; backoffLimit %d reached", w->note, w->ps.backoff_limit);
        fail_job(x, w, msg);
        return;
    }
    /* Kubernetes' back-off: 10 s, 20 s, 40 s ... capped at 6 minutes. */
    int64_t delay = BACKOFF_BASE_MS;
    for (int i = 1; i < w->failures && delay < BACKOFF_MAX_MS; i++) delay *= 2;
    if (delay > BACKOFF_MAX_MS) delay = BACKOFF_MAX_MS;
    w->retry_at = now + delay;
    if (!x->next_timer_check || w->retry_at < x->next_timer_check) x->next_timer_check = w->retry_at;
    char m[sizeof w->note + 96];   /* the note and the longest tail below */
    snprintf(m, sizeof m, "%s; restarting in %llds (failure %d of backoffLimit %d)", w->note,
             (long long)(delay / 1000), w->failures, w->ps.backoff_limit);
    gx_run_note(w, "%s", m);
}

/* Restart failed pod slots once their back-off has passed. */
static void restart_failed(gx_exec *x, gx_run *w)
{
    w->retry_at = 0;
    int admitted = x->h.admission(x->h.ud, w->key, NULL) == 1;
    if (!admitted || w->stopping) return;
    int count = w->ps.parallelism, planned = 0;
    for (int s = 0; s < count && w->succeeded + gx_run_alive(w, 1) + planned < w->ps.completions; s++) {
        int busy = 0;
        for (size_t i = 0; i < w->npods; i++)
            if ((w->pods[i].alive || w->pods[i].starting) && w->pods[i].gen == w->gen && w->pods[i].slot == s) busy = 1;
        if (busy) continue;
        if (intend_slot(x, w, s)) return;
        planned++;
    }
    if (planned) commit_and_launch(x, w, &w->retry_at);
}

/* ---- the tick: timers, scheduling pass, deferred starts ----------------------------- */

static void timed_work(gx_exec *x, int64_t now)
{
    int64_t next = 0;
    size_t pos = 0;
    for (gx_run *w; (w = gx_exec_next(x, &pos));) {
        int changed = 0;
        for (size_t i = 0; i < w->npods; i++) {
            gx_run_pod *p = &w->pods[i];
            if (p->alive && p->proc.pidfd < 0 && gx_proc_exited(&p->proc)) {
                gx_exec_pod_exited(x, w, p);
                changed = 1;
            }
        }
        if (w->stopping && w->kill_at && w->kill_at <= now) {
            int boxed = 0;
            for (size_t i = 0; i < w->npods; i++)
                if (w->pods[i].alive) {
                    gx_exec_pod_signal(x, &w->pods[i], SIGKILL);
                    boxed |= w->pods[i].sandboxed;
                }
            /* a cgroup kill can race a fork: again each second until the shims report the end */
            w->kill_at = boxed ? now + 1000 : 0;
            changed = 1;
        }
        if (w->retry_at && w->retry_at <= now) { restart_failed(x, w); changed = 1; }
        if (w->deferred) { w->deferred = 0; start_run(x, w); changed = 1; }
        if (changed) x->h.persist(x->h.ud, w);
        int polling = 0;
        for (size_t i = 0; i < w->npods; i++) polling |= w->pods[i].alive && w->pods[i].proc.pidfd < 0;
        int64_t t = polling ? now + 1000 : 0;
        if (w->kill_at && (!t || w->kill_at < t)) t = w->kill_at;
        if (w->retry_at && (!t || w->retry_at < t)) t = w->retry_at;
        if (w->deferred && (!t || now + 1000 < t)) t = now + 1000;
        if (t && (!next || t < next)) next = t;
    }
    x->next_timer_check = next;
}

void gx_exec_tick(gx_exec *x, int64_t now) { timed_work(x, now); }

int64_t gx_exec_next_tick(const gx_exec *x) { return x->next_timer_check; }

/* ---- the engine's decisions ------------------------------------------------------------ */

void gx_exec_admit(gx_exec *x, gx_run *w)
{
    (void)x;
    w->gen++;
    w->deferred = 1; /* started by gx_exec_start, after the caller's commit */
    gx_run_note(w, "admitted");
}

void gx_exec_start(gx_exec *x, gx_run *w)
{
    w->deferred = 0;
    start_run(x, w);
}

void gx_exec_stop(gx_exec *x, gx_run *w, const char *note)
{
    if (note) gx_run_note(w, "%s", note);
    stop_pods(x, w);
}

/* ---- the handle and its registry ------------------------------------------------------- */

gx_exec *gx_exec_new(const gx_exec_config *c)
{
    gx_exec *x = gx_xcalloc(1, sizeof *x);
    x->loop = c->loop;
    x->box = c->box;
    x->sandbox = c->sandbox;
    snprintf(x->log_dir, sizeof x->log_dir, "%s", c->log_dir);
    snprintf(x->run_dir, sizeof x->run_dir, "%s", c->run_dir);
    x->gpu = c->gpu;
    x->h = c->hooks;
    x->start_delay_ms = c->start_delay_ms;
    x->cuda_shim = c->cuda_shim;
    gx_strmap_init(&x->runs);
    return x;
}

/* A run's watches go with it; its processes do not (they are re-adopted at the next start). */
static void run_unwatch(gx_exec *x, gx_run *w)
{
    for (size_t i = 0; i < w->npods; i++)
        if (w->pods[i].proc.pidfd >= 0) gx_loop_unwatch(x->loop, w->pods[i].proc.pidfd);
}

void gx_exec_free(gx_exec *x)
{
    if (!x) return;
    size_t pos = 0;
    for (gx_run *w; (w = gx_exec_next(x, &pos));) {
        run_unwatch(x, w);
        gx_run_free(w);
    }
    gx_strmap_free(&x->runs);
    free(x);
}

void gx_exec_add(gx_exec *x, gx_run *w) { gx_strmap_put(&x->runs, w->key, w); }

gx_run *gx_exec_get(const gx_exec *x, const char *key) { return gx_strmap_get(&x->runs, key); }

size_t gx_exec_count(const gx_exec *x) { return x->runs.n; }

gx_run *gx_exec_next(const gx_exec *x, size_t *pos)
{
    for (; *pos < x->runs.cap; (*pos)++)
        if (x->runs.keys[*pos] && x->runs.keys[*pos] != (char *)1) return x->runs.vals[(*pos)++];
    return NULL;
}

void gx_exec_drop(gx_exec *x, gx_run *w)
{
    gx_exec_cuda_forget(x, w);   /* the regions go with the run's files */
    gx_strmap_del(&x->runs, w->key);
    run_unwatch(x, w);
    gx_run_free(w);
}
