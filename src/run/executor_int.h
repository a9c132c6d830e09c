/* executor_int: what the executor's files share (executor.c, executor_record.c,
 * executor_box.c); nothing outside src/run/executor*.c includes it.
 * Owns: the gx_exec handle's layout. */
#ifndef GX_EXECUTOR_INT_H
#define GX_EXECUTOR_INT_H
#include "lib/strmap.h"
#include "run/executor.h"

struct gx_exec_cuda;

struct gx_exec {
    gx_loop *loop;
    gx_podbox *box;
    int sandbox;
    char log_dir[GX_EXEC_DIR_MAX], run_dir[GX_EXEC_DIR_MAX];   /* copies of the config's */
    struct gx_gpu_rt *gpu;
    gx_exec_hooks h;
    gx_strmap runs;        /* key -> gx_run */
    int start_delay_ms;    /* tests only: see gx_exec_config */
    int recovering;        /* in gx_exec_recover: pods are not started (nothing can be committed) */
    int64_t next_timer_check;
    int cuda_shim;         /* run.cudaShim */
    int cuda_warned;       /* the missing library was logged (once) */
};

/* executor.c */
/* Watch a live pod's pidfd on the loop (a pod without one is polled by the tick). */
void gx_exec_watch_pod(gx_exec *x, gx_run *r, gx_run_pod *p);
/* A pod's process is gone: settle its status, then decide what the Job does next. */
void gx_exec_pod_exited(gx_exec *x, gx_run *r, gx_run_pod *p);

/* executor_record.c */
gx_run_pod *gx_exec_pod_add(gx_run *r);
/* DATA/run/NS/NAME/gGEN-pINDEX.exit: where the shim writes the pod's exit status. */
void gx_exec_exit_path(const gx_exec *x, const gx_run *r, int gen, int index, char *out, size_t n);

/* executor_box.c: a pod's side of the sandbox */
/* Prepare pod `index` of r on `devices` ("uuid,uuid"): its command becomes bwrap's. */
int gx_exec_pod_box(gx_exec *x, gx_run *r, int index, const char *devices, const struct gx_exec_cuda *cu,
                    char **argv, gx_podbox_run *br, gx_err *err);
/* SIGTERM to a pod's own processes, SIGKILL to its whole cgroup (unsandboxed: its group). */
void gx_exec_pod_signal(gx_exec *x, gx_run_pod *p, int sig);
/* A sandboxed pod has ended: its cgroup is emptied and removed (retried until it can go). */
void gx_exec_pod_release(gx_exec *x, gx_run_pod *p);
/* After a pod's exit: its signal, OOMKilled and reason; its cgroup released. */
void gx_exec_pod_settle(gx_exec *x, gx_run_pod *p);
/* The last non-empty line of pod `index`'s log, at most n-1 bytes of it. */
void gx_exec_pod_log_tail(gx_exec *x, const gx_run *r, int index, char *out, size_t n);

/* executor_cuda.c: a pod's CUDA shim (docs/gpu-sharing.md "Limits inside the pod") */
typedef struct gx_exec_cuda {   /* a pod's CUDA shim, as planned */
    int on;                        /* the pod gets the library */
    gx_cuda_limits lim;
    char region[PATH_MAX];         /* DATA/run/NS/NAME/gG-pP.cuda */
    char lib[PATH_MAX];            /* libgpuaas-cuda.so beside the gpuaas binary */
    char preload[PATH_MAX];        /* DATA/run/ld.so.preload: names GX_CUDA_LIB_PATH */
} gx_exec_cuda;
/* Decide pod p's shim from its devices and run.cudaShim; p->cuda says what was decided.
 * -1 with err when the pod must not start (run.cudaShim on and no library). */
int gx_exec_cuda_plan(gx_exec *x, const gx_run *r, gx_run_pod *p, gx_exec_cuda *c, gx_err *err);
/* Create the planned region, owned by the pod's uid:gid (c->on only). */
int gx_exec_cuda_create(const gx_exec_cuda *c, uid_t uid, gid_t gid, gx_err *err);
/* The pod's environment entries for its shim appended to env (a vector of malloc'd
 * strings, may be NULL): GX_CUDA_REGION_ENV, and LD_PRELOAD when unsandboxed. */
char **gx_exec_cuda_env(const gx_exec_cuda *c, int boxed, char **env);
/* DATA/run/NS/NAME/gGEN-pINDEX.cuda */
void gx_exec_cuda_path(const gx_exec *x, const gx_run *r, int gen, int index, char *out, size_t n);
/* Remove the region files of r's pods (the run is dropped). */
void gx_exec_cuda_forget(const gx_exec *x, const gx_run *r);

#endif
