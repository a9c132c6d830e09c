/* daemon: the state of one running `gpuaas serve`, shared by its modules.
 * Owns: nothing by itself; serve.c creates it, workloads.c runs the workload operations
 * (their processes: run/executor.h),
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
#include "run/executor.h"
#include "run/podbox.h"
#include "store/store.h"
#include "ops/kinds.h"
#include "ops/ops.h"

typedef struct gx_d_idle gx_d_idle;

typedef struct gx_daemon {
    gx_config cfg;
    gx_loop *loop;
    gx_http *http;
    gx_store *store;
    gx_engine *eng;
    gx_auth *auth;
    json_t *objects;       /* "Kind/ns/name" -> manifest, as applied */
    json_t *created;       /* "Kind/ns/name" -> ms it was first applied (metadata.creationTimestamp) */
    int dirty;             /* a scheduling pass is due */
    int ready;
    char log_dir[GX_DATA_DIR_MAX + 8], run_dir[GX_DATA_DIR_MAX + 8];   /* DATA/logs, DATA/run: short enough that
                                                                        * NS/NAME/files under them fit PATH_MAX */
    int64_t engine_wake;   /* when the engine has timed work (max execution time), 0 none */
    json_t *unrecorded;    /* keys of admitted workloads whose admission the store refused:
                            * not started until it is recorded (retried every tick) */
    int64_t unrecorded_retry_at;
    const struct gx_mux *mux;  /* the HTTP dispatcher (net/mux.h): its request count */
    gx_kind kinds[GX_KINDS_MAX];   /* every kind apply takes, in order of application */
    int nkinds;
    gx_engine *scratch;    /* during an apply: the engine the new documents are judged on */
    gx_hooks hooks[4];     /* the front doors' subscriptions (user deleted, /metrics) */
    int nhooks;
    gx_podbox *box;        /* the pod sandbox (run/podbox.h); its cgroups also in none mode */
    struct gx_gpu_rt *gpu; /* the GPU layer (gpu/runtime.h), owned; NULL until serve opens it */
    gx_exec *exec;         /* the workloads' runs and their processes (run/executor.h) */
    struct gx_d_fleet *fleet;  /* fleet mode (ops/fleet.c): the Fleet and its requests; NULL until registered */
    struct gx_d_idle *idle;    /* IdlePolicy (ops/idle.c): the policies in effect, warnings, totals */
    int64_t rsv_refresh_at;    /* reservations.c: when recurring bookings are next re-expanded */
} gx_daemon;

/* reservations.c, objects.c: bookings (kind Reservation) beyond apply */
/* Hand the config's reservations.limits to e's booking model. */
void gx_d_rsv_limits(gx_daemon *d, gx_engine *e);
int gx_d_reservation_judge(gx_daemon *d, const json_t *doc, gx_rsv_refusal *why, gx_err *err);
int gx_d_reservation_reput(gx_daemon *d, const json_t *doc, gx_err *err);
/* From the tick: recurring bookings re-expanded daily; returns ms until the next look. */
int64_t gx_d_rsv_tick(gx_daemon *d, int64_t now);
/* From apply_actions: a booking's no-show (ReservationReleased) recorded for the reports. */
void gx_d_rsv_noshow(gx_daemon *d, const gx_action *a, int64_t now);

/* workloads.c */
/* (the operations the front doors call are in ops/ops.h) */
/* A scheduling pass plus everything timed (kills, restarts); returns ms to sleep at most. */
int64_t gx_d_tick(gx_daemon *d);
int gx_d_recover(gx_daemon *d, gx_err *err);
/* Forget a workload submitted in a transaction that was rolled back (memory only). */
void gx_d_unsubmit(gx_daemon *d, const char *key);
void gx_d_log_path(const gx_daemon *d, const char *key, int index, char *out, size_t n);
int gx_d_pod_count(gx_daemon *d, const char *key);
/* Frees the runs (d->exec); their processes keep running. */
void gx_d_free_all(gx_daemon *d);
/* What the executor asks of the engine and the store (serve.c passes it to gx_exec_new). */
gx_exec_hooks gx_d_exec_hooks(gx_daemon *d);

/* objects.c */
struct gx_yaml_docs;
/* The composition root registers the engine's kinds first, then each front door's. */
void gx_d_register_engine_kinds(gx_daemon *d);
int gx_d_register_kind(gx_daemon *d, const gx_kind *k);
int gx_d_register_hooks(gx_daemon *d, const gx_hooks *h);
int gx_d_load_objects(gx_daemon *d, gx_err *err);

/* fleet.c, fleet_view.c: requests for a cluster of the Fleet (docs/fleet.md). A finished
 * request's file stays in git this long by default (docs/fleet.md, "Expiry"). */
#define GX_FLEET_RETAIN_MS (60 * 60 * 1000)
/* Register the Fleet kind and the fleet's /metrics lines (retain_ms 0: the default). */
void gx_d_fleet_register(gx_daemon *d, int64_t retain_ms);
/* Read the stored requests back (gx_d_recover); the unpublished are tried again at once. */
int gx_d_fleet_recover(gx_daemon *d, gx_err *err);
/* Hand due changes to the publisher and expire finished requests; ms to sleep, -1 none. */
int64_t gx_d_fleet_tick(gx_daemon *d);
void gx_d_fleet_free(gx_daemon *d);
/* What workloads.c routes to the fleet: a Job with the gpuaas.dev/cluster annotation,
 * and every operation on a key that is a fleet request. */
int gx_d_fleet_has(const gx_daemon *d, const char *key);
int gx_d_fleet_submit(gx_daemon *d, const json_t *manifest, json_t **view, gx_err *err);
void gx_d_fleet_unsubmit(gx_daemon *d, const char *key);
int gx_d_fleet_cancel(gx_daemon *d, const char *key, const char *who, gx_err *err);
int gx_d_fleet_delete(gx_daemon *d, const char *key, gx_err *err);
json_t *gx_d_fleet_view(gx_daemon *d, const char *key);
/* Append the requests f matches to arr, then sort arr by namespace and name. */
void gx_d_fleet_list(gx_daemon *d, const gx_wl_filter *f, json_t *arr);


#endif
