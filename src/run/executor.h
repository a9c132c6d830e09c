/* executor: running the pods of each workload on this machine (docs/jobs.md).
 * Owns: the registry of runs (one gx_run per workload the daemon holds, by key), turning
 * the engine's decisions into processes (start on admission, stop on cancel/preemption/
 * expiry, SIGKILL after the grace period, back-off restarts of failed pods), turning
 * process exits into the Job's outcome, each run's durable record and the re-adoption of
 * its processes after a daemon restart.
 * Must not: decide who runs or read the engine (ops/workloads.c does, and answers through
 * gx_exec_hooks), write the store (the persist hook does), or parse HTTP. It includes
 * nothing from ops/, api/, maas/ or portal/.
 *
 * One thread: every function runs on the loop, so nothing is locked.
 *
 * A pod never runs twice: its intent (admission, completion index, slot, devices, cgroup)
 * is recorded and committed (the commit hook) BEFORE its shim is started, as a pod that
 * is "starting" with no pid; the pid follows in a later record. A kill -9 between the two
 * leaves a starting pod in the store, and recovery looks for it instead of starting it
 * again: the shim is found by its command line, which names the pod's exit file.
 *
 * Recovery rule (docs/operations.md): after a restart, each pod recorded as running
 * is re-adopted when its shim is still alive (same pid and start time); a pod recorded
 * as starting is re-adopted when a shim for its exit file runs; a pod of either kind
 * whose shim ended while the daemon was down is settled from the exit status the shim
 * wrote; a pod that is gone without a record (or a starting pod with neither a shim nor
 * an exit record: never started, or its shim was killed) is lost, whatever is left in its
 * cgroup is killed, and a workload with a lost pod has its other pods stopped and is
 * requeued (Evicted, reason ProcessesLost). Nothing recorded is ever started again. */
#ifndef GX_EXECUTOR_H
#define GX_EXECUTOR_H
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>
#include "core/engine.h"
#include "gpu/cuda_region_ops.h"
#include "lib/err.h"
#include "lib/wlkey.h"
#include "net/loop.h"
#include "run/podbox.h"
#include "run/podspec.h"
#include "run/proc.h"

struct gx_gpu_rt;

/* The longest log or run directory (with its NUL): short enough that NS/NAME/files under
 * it fit PATH_MAX (the daemon's data directory is bounded for this: GX_DATA_DIR_MAX). */
#define GX_EXEC_DIR_MAX 3080
#define GX_EXEC_POD_DEVS 16      /* devices one pod may be placed on (GPUs or MIG devices) */
#define GX_EXEC_DEVS_MAX 512     /* their UUIDs, "uuid,uuid": 16 MIG UUIDs (~45 bytes) fit */

/* One process of a workload's run. */
typedef struct gx_run_pod {
    int gen;               /* the admission it belongs to */
    int index;             /* completion index (JOB_COMPLETION_INDEX) */
    int slot;              /* which of the admitted pods' devices it uses */
    gx_proc proc;
    int alive;
    int starting;          /* recorded, not yet started (no pid): see the rule at the top */
    int64_t started_ms, finished_ms;
    int exit_code, signal_no;   /* valid when !alive; -1 exit_code = unknown */
    char devices[GX_EXEC_DEVS_MAX];   /* comma-separated GPU UUIDs */
    void *watch;           /* the loop watch's context while alive */
    /* sandboxed pods (run/podbox.h): signalled and killed through their cgroup */
    int sandboxed;
    uid_t uid;             /* the uid it runs as */
    char cgroup[GX_PODBOX_CG_MAX];   /* relative to run.cgroupParent */
    int64_t memory_limit;  /* bytes, 0 none */
    char reason[16];       /* when ended: Completed, Error, OOMKilled (Kubernetes' words) */
    int cuda;              /* GX_POD_CUDA_*: the CUDA shim (executor_cuda.c) */
} gx_run_pod;

/* A pod's CUDA shim (docs/gpu-sharing.md "Limits inside the pod"): none (no time-sliced
 * or fractional GPU, or run.cudaShim off), injected (its region holds its use), or
 * wanted but the library was missing (run.cudaShim auto): its limits are not enforced. */
enum { GX_POD_CUDA_NONE = 0, GX_POD_CUDA_INJECTED, GX_POD_CUDA_MISSING };

/* The daemon's side of one workload: its processes and their bookkeeping (the engine's
 * side is core's struct gx_wl). */
typedef struct gx_run {
    gx_wlkey id;           /* namespace, name and "ns/name", length-checked (lib/wlkey.h) */
    const char *key, *ns, *name;   /* id.key, id.ns and id.name, set once by gx_run_new */
    json_t *manifest;
    gx_podspec ps;         /* points into manifest */
    int gen;               /* admissions so far */
    gx_run_pod *pods;      /* pods of the current run plus any still dying */
    size_t npods, cappods;
    int succeeded, failures, next_index;
    int stopping;          /* SIGTERM sent to the current processes */
    int64_t kill_at;       /* when SIGKILL follows */
    int deferred;          /* admitted, waiting for devices held by dying processes */
    int64_t retry_at;      /* a failed pod restarts at this time (back-off) */
    char note[256];        /* the daemon's last word on it ("pod 0 exited with code 1") */
} gx_run;

/* How a Job ended, for the engine (gx_exec_hooks.ended). */
typedef enum gx_run_end {
    GX_RUN_SUCCEEDED,      /* completions reached: finish, succeeded */
    GX_RUN_FAILED,         /* cannot go on (backoffLimit, a command that cannot run): finish, failed */
    GX_RUN_LOST,           /* pods gone across a restart: requeue (Evicted, ProcessesLost) */
} gx_run_end;

/* What the executor asks of, and tells, the layer above (ops/workloads.c), which knows
 * the engine and the store. ud is passed back to each. */
typedef struct gx_exec_hooks {
    void *ud;
    /* The engine's word on workload `key`: -1 it does not know it, 0 not admitted,
     * 1 admitted. count (may be NULL) gets the pods its admission gives, -1 when the
     * admission does not say (the Job's parallelism then). */
    int (*admission)(void *ud, const char *key, int *count);
    /* The devices the admission places pod slot `slot` on (the engine's typed answer,
     * gx_engine_wl_devices): how many (0: no GPU, -1: not admitted), the first max in
     * out. Their strings are the engine's: use them before the engine changes. */
    int (*slot_devices)(void *ud, const char *key, int slot, gx_engine_dev *out, int max);
    /* The Job cannot go on (how; r->note says why): the engine finishes or requeues it. */
    void (*ended)(void *ud, gx_run *r, gx_run_end how);
    /* A pod ended or a Job failed: devices may be free, a scheduling pass is due. */
    void (*reschedule)(void *ud);
    /* r changed on its own (a pod exited, a timer fired): record it (errors logged). */
    void (*persist)(void *ud, gx_run *r);
    /* A pod exited while the loop waited: whoever follows logs may look again. */
    void (*wake)(void *ud);
    /* Record r and commit it now, before the pods it holds as starting are started: 0
     * when durable, -1 when not (they are then not started, and tried again later). The
     * executor calls it from gx_exec_start, its tick and pod exits, never from
     * gx_exec_recover: the caller holds no transaction open around those. */
    int (*commit)(void *ud, gx_run *r);
} gx_exec_hooks;

typedef struct gx_exec_config {
    gx_loop *loop;
    gx_podbox *box;        /* the pod sandbox; its cgroups; may be NULL when !sandbox */
    int sandbox;           /* run.sandbox: pods start inside the podbox */
    const char *log_dir;   /* DATA/logs: NS/NAME/pod-I.log (copied; < GX_EXEC_DIR_MAX) */
    const char *run_dir;   /* DATA/run: NS/NAME/gG-pI.exit, the default working folder (the same) */
    struct gx_gpu_rt *gpu; /* the GPU runtime (device env, MPS pipes, sharing); NULL none */
    gx_exec_hooks hooks;
    int start_delay_ms;    /* tests only (GPUAAS_TEST_START_DELAY_MS): wait after each pod's start */
    int cuda_shim;         /* run.cudaShim: GX_CUDA_SHIM_AUTO, _ON or _OFF (run/run_config.h) */
} gx_exec_config;

typedef struct gx_exec gx_exec;

gx_exec *gx_exec_new(const gx_exec_config *c);
/* Frees every run; their processes keep running (re-adopted at the next start). */
void gx_exec_free(gx_exec *x);

/* ---- runs (executor_record.c) ---- */

/* A run for a workload manifest (copied), not yet registered; NULL with err (422 naming
 * the field) when its name or process side is invalid. */
gx_run *gx_run_new(const json_t *manifest, gx_err *err);
/* Free a run that is not registered and has no watched pod (gx_exec_drop otherwise). */
void gx_run_free(gx_run *r);
/* The durable record of a run (the store's "run" column), and back. */
json_t *gx_run_record(const gx_run *r);
void gx_run_restore(gx_run *r, const json_t *record);
/* Live pods, of the current admission only when gen_only. */
int gx_run_alive(const gx_run *r, int gen_only);
/* Pod `index`'s log: LOG_DIR/NS/NAME/pod-INDEX.log; "" when key is not a workload key. */
void gx_run_log_path(const char *log_dir, const char *key, int index, char *out, size_t n);
/* Set r->note. */
void gx_run_note(gx_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- the registry ---- */

/* Register r (its key must be free); the executor owns it from now on. */
void gx_exec_add(gx_exec *x, gx_run *r);
gx_run *gx_exec_get(const gx_exec *x, const char *key);
size_t gx_exec_count(const gx_exec *x);
/* Iterate: start with *pos = 0; NULL at the end. Do not add or drop while iterating. */
gx_run *gx_exec_next(const gx_exec *x, size_t *pos);
/* Unregister and free r (its pods have ended). */
void gx_exec_drop(gx_exec *x, gx_run *r);

/* ---- the engine's decisions ---- */

/* Admitted: a new generation whose pods gx_exec_start starts (after the caller's commit). */
void gx_exec_admit(gx_exec *x, gx_run *r);
/* Start the pods of an admitted run on the admission's devices, or defer them while
 * stopping processes still hold those devices: gx_exec_prepare, the commit hook, then
 * gx_exec_launch (gx_exec_unprepare when the commit fails). */
void gx_exec_start(gx_exec *x, gx_run *r);
/* gx_exec_start in steps, for a caller that commits many runs at once: plan r's pods
 * (each recorded in r as starting, no process yet) and return how many, 0 when none
 * (deferred while stopping processes hold its devices, or the Job failed). r's record
 * must then be committed before gx_exec_launch starts them; when it cannot be,
 * gx_exec_unprepare forgets them and the run waits (deferred, retried by the tick; a run
 * with nothing planned is left as it is). */
int gx_exec_prepare(gx_exec *x, gx_run *r);
void gx_exec_launch(gx_exec *x, gx_run *r);
void gx_exec_unprepare(gx_exec *x, gx_run *r, const char *why);
/* Stop every live pod: SIGTERM (SIGKILL without a grace period), SIGKILL after the
 * grace period. note (may be NULL) becomes r->note. */
void gx_exec_stop(gx_exec *x, gx_run *r, const char *note);
/* Re-attach r's recorded processes after a restart (see the rule at the top). */
void gx_exec_recover(gx_exec *x, gx_run *r);

/* ---- the CUDA shim (executor_cuda.c) ---- */

/* What pod p's processes use of its GPUs, from its region (gpu/cuda_region_ops.h):
 * 0, or -1 with err when it has none (404) or the pod damaged it (422). */
int gx_exec_pod_cuda_usage(const gx_exec *x, const gx_run *r, const gx_run_pod *p, gx_cuda_usage *out, gx_err *err);

/* ---- time ---- */

/* Everything timed: exits of pods without a pidfd (polled), SIGKILL after the grace
 * period, back-off restarts, deferred starts. Persists what changed. */
void gx_exec_tick(gx_exec *x, int64_t now);
/* When gx_exec_tick next has work (ms, loop time), 0 when nothing is timed. */
int64_t gx_exec_next_tick(const gx_exec *x);

#endif
