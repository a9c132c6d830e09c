/* Unit tests of the executor (run/executor.h) with real processes through the real
 * gpuaas-shim, unsandboxed, on a real event loop; the engine is replaced by hooks that
 * record what the executor tells it. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "run/executor.h"

static char dir[64], logs[96], runs[96];
static gx_loop *loop;
static gx_exec *X;

/* The engine's side, as the hooks see it. */
static struct {
    int admitted;          /* what hook_admission answers (1, 0 or -1) */
    char devices[64];      /* every slot's devices */
    int ended;             /* calls of hook_ended */
    gx_run_end how;
    char note[256];
    int reschedules, persists, wakes;
    int commits, commit_fails;   /* commit hook calls; fail them when commit_fails */
    json_t *committed;     /* the last record the commit hook made durable */
} eng;

static int h_admission(void *ud, const char *key, int *count)
{
    (void)ud; (void)key;
    if (count) *count = -1;
    return eng.admitted;
}

/* Every slot on the one device eng.devices names ("" none): the engine's typed answer. */
static int h_slot_devices(void *ud, const char *key, int slot, gx_engine_dev *out, int max)
{
    (void)ud; (void)key; (void)slot;
    if (!eng.devices[0]) return 0;
    if (max > 0) out[0] = (gx_engine_dev){.uuid = eng.devices, .gpu_uuid = eng.devices, .mig = -1, .replica = -1};
    return 1;
}

static void h_ended(void *ud, gx_run *r, gx_run_end how)
{
    (void)ud;
    eng.ended++;
    eng.how = how;
    snprintf(eng.note, sizeof eng.note, "%s", r->note);
    eng.admitted = 0;   /* the engine finishes or requeues it */
}

static void h_reschedule(void *ud) { (void)ud; eng.reschedules++; }
static void h_persist(void *ud, gx_run *r) { (void)ud; (void)r; eng.persists++; }
static void h_wake(void *ud) { (void)ud; eng.wakes++; }

/* The store's side of a commit: what a kill -9 right after it would leave. */
static int h_commit(void *ud, gx_run *r)
{
    (void)ud;
    eng.commits++;
    if (eng.commit_fails) return -1;
    json_decref(eng.committed);
    eng.committed = gx_run_record(r);
    return 0;
}

static gx_exec *exec_new(void)
{
    gx_exec_config c = {loop, NULL, 0, logs, runs, NULL,
                        {NULL, h_admission, h_slot_devices, h_ended, h_reschedule, h_persist, h_wake, h_commit}, 0, 0};
    return gx_exec_new(&c);
}

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/gpuaas-exec.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    snprintf(logs, sizeof logs, "%s/logs", dir);
    snprintf(runs, sizeof runs, "%s/run", dir);
    memset(&eng, 0, sizeof eng);
    eng.admitted = 1;
    loop = gx_loop_new();
    X = exec_new();
}

static void teardown(void)
{
    gx_exec_free(X);
    gx_loop_free(loop);
    json_decref(eng.committed);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(executor, .init = setup, .fini = teardown, .timeout = 30);

/* A Job running `script` under sh -c, with the given spec fields. */
static gx_run *job(const char *name, const char *script, int completions, int backoff, int grace)
{
    json_t *m = json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:i,s:i,s:i,s:{s:{s:i,s:s,s:[{s:s,s:s,s:[s,s,s]}]}}}}",
                          "apiVersion", "batch/v1", "kind", "Job", "metadata", "name", name, "namespace", "team-a",
                          "spec", "completions", completions, "parallelism", 1, "backoffLimit", backoff,
                          "template", "spec", "terminationGracePeriodSeconds", grace, "restartPolicy", "Never",
                          "containers", "name", "main", "image", "busybox", "command", "sh", "-c", script);
    cr_assert_not_null(m);
    gx_err e;
    gx_err_clear(&e);
    gx_run *r = gx_run_new(m, &e);
    json_decref(m);
    cr_assert_not_null(r, "%s", e.msg);
    gx_exec_add(X, r);
    return r;
}

/* Run the loop, with the executor's timers, until done(r) or ms pass; done's answer. */
static int (*until_fn)(const gx_run *);
static const gx_run *until_run;
static int64_t until_deadline;

static int64_t prepare(gx_loop *l, void *ud)
{
    (void)ud;
    int64_t now = gx_loop_update_time(l);
    int64_t due = gx_exec_next_tick(X);
    if (due && due <= now) gx_exec_tick(X, now);
    if (until_fn(until_run) || now >= until_deadline) { gx_loop_stop(l); return 0; }
    return 20;
}

static int run_until(int (*done)(const gx_run *), const gx_run *r, int ms)
{
    until_fn = done;
    until_run = r;
    until_deadline = gx_loop_update_time(loop) + ms;
    gx_loop_set_prepare(loop, prepare, NULL);
    gx_loop_run(loop);
    return done(r);
}

static int ended(const gx_run *r) { (void)r; return eng.ended > 0; }
static int no_live_pods(const gx_run *r) { return r->npods && !gx_run_alive(r, 0); }
static int started(const gx_run *r) { return r->npods > 0; }

static void read_file(const char *path, char *out, size_t n)
{
    out[0] = 0;
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s", path);
    size_t k = fread(out, 1, n - 1, f);
    out[k] = 0;
    fclose(f);
}

/* Wait until pod 0's log reads `want` (the command got that far). */
static void wait_log(const gx_run *r, const char *want)
{
    char path[PATH_MAX], text[64] = "";
    gx_run_log_path(logs, r->key, 0, path, sizeof path);
    for (int i = 0; i < 500 && strcmp(text, want); i++) {
        usleep(10000);
        FILE *f = fopen(path, "r");
        if (f) { text[fread(text, 1, sizeof text - 1, f)] = 0; fclose(f); }
    }
    cr_assert_str_eq(text, want);
}

Test(executor, completions_start_one_after_another_and_succeed)
{
    gx_run *r = job("ok", "echo pod-$JOB_COMPLETION_INDEX", 2, 0, 30);
    gx_exec_admit(X, r);
    cr_assert(r->deferred);
    cr_assert_str_eq(r->note, "admitted");
    gx_exec_start(X, r);
    cr_assert_eq(r->npods, 1, "parallelism 1: one pod at a time");
    cr_assert_str_eq(r->note, "1 pod started");
    cr_assert(run_until(ended, r, 10000), "the Job never ended: %s", r->note);
    cr_assert_eq(eng.how, GX_RUN_SUCCEEDED);
    cr_assert_str_eq(eng.note, "2 of 2 pods succeeded");
    cr_assert_eq(r->npods, 2);
    cr_assert_eq(r->succeeded, 2);
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(r->pods[i].index, i);
        cr_assert_eq(r->pods[i].exit_code, 0);
        cr_assert_str_eq(r->pods[i].reason, "Completed");
        char path[PATH_MAX], text[64], want[16];
        gx_run_log_path(logs, r->key, i, path, sizeof path);
        read_file(path, text, sizeof text);
        snprintf(want, sizeof want, "pod-%d\n", i);
        cr_assert_str_eq(text, want);
    }
    cr_assert_geq(eng.reschedules, 2, "each exit asks for a scheduling pass");
    cr_assert_geq(eng.persists, 2, "each exit is recorded");
    cr_assert_geq(eng.wakes, 2);
}

Test(executor, failures_back_off_then_reach_the_limit)
{
    gx_run *r = job("bad", "exit 3", 1, 1, 30);
    gx_exec_admit(X, r);
    gx_exec_start(X, r);
    cr_assert(run_until(no_live_pods, r, 10000));
    cr_assert_eq(eng.ended, 0, "backoffLimit 1 tolerates one failure");
    cr_assert_eq(r->pods[0].exit_code, 3);
    cr_assert_str_eq(r->pods[0].reason, "Error");
    cr_assert_str_eq(r->note, "pod 0 exited with code 3; restarting in 10s (failure 1 of backoffLimit 1)");
    cr_assert_gt(r->retry_at, 0);
    cr_assert_leq(gx_exec_next_tick(X), r->retry_at);
    r->retry_at = gx_loop_update_time(loop);   /* the back-off has passed */
    gx_exec_tick(X, r->retry_at);
    cr_assert_eq(r->npods, 2, "the failed slot restarts: %s", r->note);
    cr_assert(run_until(ended, r, 10000), "%s", r->note);
    cr_assert_eq(r->npods, 2, "the failed slot restarted with the next index");
    cr_assert_eq(r->pods[1].index, 1);
    cr_assert_eq(eng.how, GX_RUN_FAILED);
    cr_assert_str_eq(eng.note, "pod 1 exited with code 3; backoffLimit 1 reached");
}

Test(executor, a_command_that_cannot_run_fails_the_job)
{
    json_t *m = json_pack("{s:s,s:s,s:{s:s},s:{s:{s:{s:[{s:s,s:s,s:[s]}]}}}}", "apiVersion", "batch/v1", "kind",
                          "Job", "metadata", "name", "nocmd", "spec", "template", "spec", "containers", "name", "main",
                          "image", "busybox", "command", "/nonexistent/gpuaas-no-such-command");
    gx_err e;
    gx_run *r = gx_run_new(m, &e);
    json_decref(m);
    cr_assert_not_null(r, "%s", e.msg);
    gx_exec_add(X, r);
    gx_exec_admit(X, r);
    gx_exec_start(X, r);
    cr_assert(run_until(ended, r, 10000));
    cr_assert_eq(eng.how, GX_RUN_FAILED);
    cr_assert_str_eq(eng.note, "cannot run \"/nonexistent/gpuaas-no-such-command\": No such file or directory");
    cr_assert_eq(r->failures, 0, "not a failure of the pod: retrying cannot help");
}

Test(executor, stop_sends_sigterm_then_sigkill_after_the_grace_period)
{
    /* ignores SIGTERM: only the SIGKILL after the grace period ends it */
    gx_run *r = job("stubborn", "trap '' TERM; echo up; while :; do sleep 0.05; done", 1, 0, 1);
    gx_exec_admit(X, r);
    gx_exec_start(X, r);
    wait_log(r, "up\n");   /* the trap is set */
    int64_t t0 = gx_loop_update_time(loop);
    gx_exec_stop(X, r, "cancelled by test");
    cr_assert(r->stopping);
    cr_assert_str_eq(r->note, "cancelled by test");
    cr_assert_eq(r->kill_at, t0 + 1000);
    cr_assert(run_until(no_live_pods, r, 10000));
    cr_assert_geq(gx_loop_now(loop) - t0, 900, "it outlived SIGTERM until the grace period ended");
    cr_assert_eq(r->pods[0].signal_no, SIGKILL);
    cr_assert_eq(r->pods[0].exit_code, 128 + SIGKILL);
    cr_assert_eq(r->stopping, 0);
    cr_assert_eq(eng.ended, 0, "a stopped pod is no outcome of the Job");
}

Test(executor, stopping_processes_defer_a_start_on_their_device)
{
    snprintf(eng.devices, sizeof eng.devices, "GPU-test-0");   /* every pod on one whole GPU */
    gx_run *a = job("a", "trap '' TERM; echo up; while :; do sleep 0.05; done", 1, 0, 1);
    gx_exec_admit(X, a);
    gx_exec_start(X, a);
    wait_log(a, "up\n");
    gx_exec_stop(X, a, "preempted");
    gx_run *b = job("b", "sleep 30", 1, 0, 0);
    gx_exec_admit(X, b);
    gx_exec_start(X, b);
    cr_assert_eq(b->npods, 0);
    cr_assert(b->deferred);
    cr_assert_str_eq(b->note, "waiting for stopping processes to release GPUs GPU-test-0");
    cr_assert(run_until(started, b, 10000), "b: %s", b->note);
    cr_assert_eq(gx_run_alive(a, 0), 0, "b started only once a's pod was gone");
    cr_assert_leq(a->pods[0].finished_ms, b->pods[0].started_ms);
    cr_assert_str_eq(b->pods[0].devices, "GPU-test-0");
    cr_assert_str_eq(b->note, "1 pod started");
    gx_exec_stop(X, b, NULL);   /* grace 0: SIGKILL at once */
    cr_assert(run_until(no_live_pods, b, 10000));
    cr_assert_eq(b->pods[0].signal_no, SIGKILL);
}

Test(executor, a_restarted_executor_readopts_running_pods)
{
    gx_run *r = job("long", "sleep 30", 1, 0, 0);
    gx_exec_admit(X, r);
    gx_exec_start(X, r);
    cr_assert_eq(gx_run_alive(r, 0), 1);
    pid_t pid = r->pods[0].proc.pid;
    json_t *rec = gx_run_record(r), *manifest = json_incref(r->manifest);
    gx_exec_free(X);                 /* the daemon stops; its pods do not */
    cr_assert_eq(kill(pid, 0), 0, "the shim outlives the executor");
    X = exec_new();
    gx_err e;
    gx_run *again = gx_run_new(manifest, &e);
    cr_assert_not_null(again);
    gx_run_restore(again, rec);
    gx_exec_add(X, again);
    gx_exec_recover(X, again);
    cr_assert_eq(gx_run_alive(again, 0), 1);
    cr_assert_eq(again->pods[0].proc.pid, pid);
    cr_assert_geq(again->pods[0].proc.pidfd, 0, "watched again");
    cr_assert_eq(eng.ended, 0);
    gx_exec_stop(X, again, NULL);
    cr_assert(run_until(no_live_pods, again, 10000));
    cr_assert_eq(again->pods[0].signal_no, SIGKILL);

    /* a pod gone without a record is lost: the Job is requeued */
    json_object_set_new(json_array_get(json_object_get(rec, "pods"), 0), "startTime", json_integer(1));
    gx_run *lost = gx_run_new(manifest, &e);
    gx_run_restore(lost, rec);
    cr_assert_str_eq(lost->key, "team-a/long");
    gx_exec_drop(X, again);
    char ep[PATH_MAX];
    snprintf(ep, sizeof ep, "%s/team-a/long/g1-p0.exit", runs);
    unlink(ep);   /* a record of the end would settle the pod instead (SIGKILL to the group took the shim) */
    gx_exec_add(X, lost);
    gx_exec_recover(X, lost);
    cr_assert_eq(eng.ended, 1);
    cr_assert_eq(eng.how, GX_RUN_LOST);
    cr_assert_str_eq(eng.note, "1 pod was gone when gpuaas restarted; requeued");
    cr_assert_eq(gx_run_alive(lost, 0), 0);
    json_decref(rec);
    json_decref(manifest);
}

Test(executor, record_round_trips)
{
    gx_run *r = job("rec", "true", 3, 2, 5);
    r->gen = 2; r->succeeded = 1; r->failures = 1; r->next_index = 4; r->deferred = 1;
    gx_run_note(r, "note %d", 7);
    json_t *rec = gx_run_record(r);
    gx_err e;
    gx_run *b = gx_run_new(r->manifest, &e);
    gx_run_restore(b, rec);
    json_t *rec2 = gx_run_record(b);
    cr_assert(json_equal(rec, rec2));
    cr_assert_str_eq(b->note, "note 7");
    cr_assert_eq(b->ps.completions, 3);
    json_decref(rec);
    json_decref(rec2);
    gx_run_free(b);
}

/* The daemon dies right after committing a pod's intent and starting it, before its pid
 * is recorded: a new executor recovers from that record (eng.committed). */
static gx_run *restart_from_commit(gx_run *r)
{
    json_t *rec = json_incref(eng.committed), *manifest = json_incref(r->manifest);
    gx_exec_free(X);                 /* the daemon stops; its pods do not */
    X = exec_new();
    gx_err e;
    gx_run *again = gx_run_new(manifest, &e);
    cr_assert_not_null(again);
    gx_run_restore(again, rec);
    gx_exec_add(X, again);
    json_decref(rec);
    json_decref(manifest);
    return again;
}

Test(executor, a_pod_is_recorded_before_it_starts)
{
    gx_run *r = job("intent", "sleep 30", 1, 0, 0);
    gx_exec_admit(X, r);
    gx_exec_start(X, r);
    cr_assert_eq(eng.commits, 1, "one commit before the start");
    json_t *p0 = json_array_get(json_object_get(eng.committed, "pods"), 0);
    cr_assert_not_null(p0, "the committed record holds the pod");
    cr_assert(json_is_true(json_object_get(p0, "starting")));
    cr_assert_eq(json_integer_value(json_object_get(p0, "pid")), 0, "no process yet when it was committed");
    cr_assert_eq(json_integer_value(json_object_get(p0, "index")), 0);
    cr_assert_eq(gx_run_alive(r, 0), 1);
    cr_assert_gt(r->pods[0].proc.pid, 0);
    cr_assert_eq(r->pods[0].starting, 0);
    json_t *now = gx_run_record(r);
    cr_assert_null(json_object_get(json_array_get(json_object_get(now, "pods"), 0), "starting"));
    json_decref(now);
    gx_exec_stop(X, r, NULL);
    cr_assert(run_until(no_live_pods, r, 10000));
}

Test(executor, a_starting_pod_whose_shim_runs_is_readopted_not_started_again)
{
    gx_run *r = job("twice", "echo ran; sleep 30", 1, 0, 0);
    gx_exec_admit(X, r);
    gx_exec_start(X, r);
    pid_t pid = r->pods[0].proc.pid;
    wait_log(r, "ran\n");
    gx_run *again = restart_from_commit(r);
    gx_exec_recover(X, again);
    cr_assert_eq(again->npods, 1, "no second pod");
    cr_assert_eq(gx_run_alive(again, 0), 1);
    cr_assert_eq(again->pods[0].proc.pid, pid, "the running shim was found and adopted");
    cr_assert_eq(again->pods[0].starting, 0);
    cr_assert_geq(again->pods[0].proc.pidfd, 0, "watched");
    cr_assert_eq(eng.ended, 0);
    gx_exec_tick(X, gx_loop_update_time(loop));   /* whatever is due after recovery */
    usleep(200000);
    cr_assert_eq(again->npods, 1, "still one pod after the tick");
    char path[PATH_MAX], text[64];
    gx_run_log_path(logs, again->key, 0, path, sizeof path);
    read_file(path, text, sizeof text);
    cr_assert_str_eq(text, "ran\n", "the command ran once");
    gx_exec_stop(X, again, NULL);
    cr_assert(run_until(no_live_pods, again, 10000));
    cr_assert_eq(again->pods[0].signal_no, SIGKILL);
}

Test(executor, a_starting_pod_that_ended_meanwhile_is_settled_from_its_exit_record)
{
    gx_run *r = job("quick", "echo ran", 1, 0, 0);
    gx_exec_admit(X, r);
    gx_exec_start(X, r);
    char ep[PATH_MAX];
    snprintf(ep, sizeof ep, "%s/team-a/quick/g1-p0.exit", runs);
    for (int i = 0; i < 500 && access(ep, F_OK); i++) usleep(10000);
    cr_assert_eq(access(ep, F_OK), 0, "the shim wrote its exit record");
    gx_run *again = restart_from_commit(r);
    gx_exec_recover(X, again);
    cr_assert_eq(again->npods, 1);
    cr_assert_eq(gx_run_alive(again, 0), 0);
    cr_assert_eq(again->pods[0].exit_code, 0);
    cr_assert_eq(eng.ended, 1);
    cr_assert_eq(eng.how, GX_RUN_SUCCEEDED);
}

Test(executor, a_starting_pod_with_no_shim_and_no_exit_record_is_lost_not_started_again)
{
    gx_run *r = job("gone", "sleep 30", 1, 0, 0);
    gx_exec_admit(X, r);
    gx_exec_start(X, r);
    pid_t pid = r->pods[0].proc.pid;
    kill(-pid, SIGKILL);   /* the shim and its command: no exit record */
    for (int i = 0; i < 500 && !gx_proc_exited(&r->pods[0].proc); i++) usleep(10000);
    gx_run *again = restart_from_commit(r);
    gx_exec_recover(X, again);
    cr_assert_eq(again->npods, 1, "nothing started again");
    cr_assert_eq(gx_run_alive(again, 0), 0);
    cr_assert_eq(again->pods[0].starting, 0);
    cr_assert_eq(eng.ended, 1);
    cr_assert_eq(eng.how, GX_RUN_LOST);
    cr_assert_str_eq(eng.note, "1 pod was gone when gpuaas restarted; requeued");
}

Test(executor, a_pod_whose_intent_cannot_be_committed_does_not_start)
{
    gx_run *r = job("nocommit", "echo ran", 1, 0, 0);
    eng.commit_fails = 1;
    gx_exec_admit(X, r);
    gx_exec_start(X, r);
    cr_assert_eq(eng.commits, 1);
    cr_assert_eq(r->npods, 0, "nothing started without a durable intent");
    cr_assert_eq(r->next_index, 0);
    cr_assert(r->deferred, "tried again by the tick");
    cr_assert_str_eq(r->note, "admitted; waiting until the store records its pods (the store did not commit)");
    eng.commit_fails = 0;
    cr_assert(run_until(ended, r, 10000), "%s", r->note);
    cr_assert_eq(eng.how, GX_RUN_SUCCEEDED);
    cr_assert_eq(r->npods, 1);
    cr_assert_eq(eng.commits, 2);
}
