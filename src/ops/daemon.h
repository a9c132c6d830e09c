/* daemon: the state of one running `gpuaas serve`, shared by its modules.
 * Owns: nothing by itself; serve.c creates it, workloads.c runs the workloads,
 * routes.c answers HTTP, metrics.c renders /metrics, logs.c streams logs.
 * One thread: every function here runs on the loop, so nothing is locked. */
#ifndef GX_DAEMON_H
#define GX_DAEMON_H
#include <limits.h>
#include <stdint.h>
#include <jansson.h>
#include "auth/auth.h"
#include "config/config.h"
#include "net/http.h"
#include "net/loop.h"
#include "core/engine.h"
#include "lib/gxtime.h"
#include "lib/strmap.h"
#include "lib/wlkey.h"
#include "run/podbox.h"
#include "run/podspec.h"
#include "run/proc.h"
#include "store/store.h"
#include "ops/kinds.h"
#include "ops/ops.h"

/* One process of a workload's run. */
typedef struct gx_pod {
    int gen;               /* the admission it belongs to */
    int index;             /* completion index (JOB_COMPLETION_INDEX) */
    int slot;              /* which of the admitted pods' devices it uses */
    gx_proc proc;
    int alive;
    int64_t started_ms, finished_ms;
    int exit_code, signal_no;   /* valid when !alive; -1 exit_code = unknown */
    char devices[512];     /* comma-separated GPU UUIDs */
    void *watch;           /* the loop watch's context while alive */
    /* sandboxed pods (run/podbox.h): signalled and killed through their cgroup */
    int sandboxed;
    uid_t uid;             /* the uid it runs as */
    char cgroup[GX_PODBOX_CG_MAX];   /* relative to run.cgroupParent */
    int64_t memory_limit;  /* bytes, 0 none */
    char reason[16];       /* when ended: Completed, Error, OOMKilled (Kubernetes' words) */
} gx_pod;

/* The daemon's side of one workload: its processes and their bookkeeping. */
typedef struct gx_wl {
    gx_wlkey id;           /* namespace, name and "ns/name", length-checked (lib/wlkey.h) */
    const char *key, *ns, *name;   /* id.key, id.ns and id.name, set once by wl_new */
    json_t *manifest;
    gx_podspec ps;         /* points into manifest */
    int gen;               /* admissions so far */
    gx_pod *pods;          /* pods of the current run plus any still dying */
    size_t npods, cappods;
    int succeeded, failures, next_index;
    int stopping;          /* SIGTERM sent to the current processes */
    int64_t kill_at;       /* when SIGKILL follows */
    int deferred;          /* admitted, waiting for devices held by dying processes */
    int64_t retry_at;      /* a failed pod restarts at this time (back-off) */
    char note[256];        /* the daemon's last word on it ("pod 0 exited with code 1") */
} gx_wl;

typedef struct gx_daemon {
    gx_config cfg;
    gx_loop *loop;
    gx_http *http;
    gx_store *store;
    gx_engine *eng;
    gx_auth *auth;
    gx_strmap wls;         /* key -> gx_wl */
    json_t *objects;       /* "Kind/ns/name" -> manifest, as applied */
    int dirty;             /* a scheduling pass is due */
    int ready;
    char log_dir[GX_DATA_DIR_MAX + 8], run_dir[GX_DATA_DIR_MAX + 8];   /* DATA/logs, DATA/run: short enough that
                                                                        * NS/NAME/files under them fit PATH_MAX */
    int64_t next_timer_check;
    int64_t engine_wake;   /* when the engine has timed work (max execution time), 0 none */
    const struct gx_mux *mux;  /* the HTTP dispatcher (net/mux.h): its request count */
    gx_kind kinds[GX_KINDS_MAX];   /* every kind apply takes, in order of application */
    int nkinds;
    gx_engine *scratch;    /* during an apply: the engine the new documents are judged on */
    gx_hooks hooks[4];     /* the front doors' subscriptions (user deleted, /metrics) */
    int nhooks;
    gx_podbox *box;        /* the pod sandbox (run/podbox.h); its cgroups also in none mode */
    struct gx_gpu_rt *gpu; /* the GPU layer (gpu/runtime.h), owned; NULL until serve opens it */
} gx_daemon;

/* workloads.c */
/* (the operations the front doors call are in ops/ops.h) */
/* A scheduling pass plus everything timed (kills, restarts); returns ms to sleep at most. */
int64_t gx_d_tick(gx_daemon *d);
int gx_d_recover(gx_daemon *d, gx_err *err);
/* Forget a workload submitted in a transaction that was rolled back (memory only). */
void gx_d_unsubmit(gx_daemon *d, const char *key);
void gx_d_log_path(const gx_daemon *d, const char *key, int index, char *out, size_t n);
int gx_d_pod_count(gx_daemon *d, const char *key);
void gx_d_free_all(gx_daemon *d);

/* pods_box.c: the daemon's side of the pod sandbox */
/* Prepare pod `index` of w on `devices` ("uuid,uuid"): its command becomes bwrap's. */
int gx_d_pod_box(gx_daemon *d, gx_wl *w, int index, const char *devices, char **argv, gx_podbox_run *br,
                 gx_err *err);
/* SIGTERM to a pod's own processes, SIGKILL to its whole cgroup (unsandboxed: its group). */
void gx_d_pod_signal(gx_daemon *d, gx_pod *p, int sig);
/* A sandboxed pod has ended: its cgroup is emptied and removed (retried until it can go). */
void gx_d_pod_release(gx_daemon *d, gx_pod *p);
/* After a pod's exit: its signal, OOMKilled and reason; its cgroup released. */
void gx_d_pod_settle(gx_daemon *d, gx_pod *p);
/* The last non-empty line of pod `index`'s log, at most n-1 bytes of it. */
void gx_d_pod_log_tail(gx_daemon *d, const gx_wl *w, int index, char *out, size_t n);

/* objects.c */
struct gx_yaml_docs;
/* The composition root registers the engine's kinds first, then each front door's. */
void gx_d_register_engine_kinds(gx_daemon *d);
int gx_d_register_kind(gx_daemon *d, const gx_kind *k);
int gx_d_register_hooks(gx_daemon *d, const gx_hooks *h);
int gx_d_load_objects(gx_daemon *d, gx_err *err);


#endif
