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
#include "daemon/config.h"
#include "net/http.h"
#include "net/loop.h"
#include "core/engine.h"
#include "lib/strmap.h"
#include "lib/wlkey.h"
#include "run/executor.h"
#include "run/podbox.h"
#include "store/store.h"

typedef struct gx_daemon {
    gx_config cfg;
    gx_loop *loop;
    gx_http *http;
    gx_store *store;
    gx_engine *eng;
    gx_auth *auth;
    json_t *objects;       /* "Kind/ns/name" -> manifest, as applied */
    int dirty;             /* a scheduling pass is due */
    int ready;
    char log_dir[GX_DATA_DIR_MAX + 8], run_dir[GX_DATA_DIR_MAX + 8];   /* DATA/logs, DATA/run: short enough that
                                                                        * NS/NAME/files under them fit PATH_MAX */
    int64_t engine_wake;   /* when the engine has timed work (max execution time), 0 none */
    uint64_t http_requests;
    struct gx_maas *maas;  /* the OpenAI-compatible gateway (src/maas) */
    struct gx_portal *portal;  /* the web UI (src/portal) */
    gx_podbox *box;        /* the pod sandbox (run/podbox.h); its cgroups also in none mode */
    gx_exec *exec;         /* the workloads' runs and their processes (run/executor.h) */
} gx_daemon;

/* workloads.c */
int gx_d_submit(gx_daemon *d, const json_t *manifest, const char *user_ns_check, json_t **view, gx_err *err);
int gx_d_cancel(gx_daemon *d, const char *key, const char *who, gx_err *err);
int gx_d_delete(gx_daemon *d, const char *key, gx_err *err);
json_t *gx_d_view(gx_daemon *d, const char *key);
json_t *gx_d_list(gx_daemon *d, const gx_wl_filter *f);
/* A scheduling pass plus everything timed (kills, restarts); returns ms to sleep at most. */
int64_t gx_d_tick(gx_daemon *d);
int gx_d_recover(gx_daemon *d, gx_err *err);
/* Does a workload still have live processes or can it still produce output? */
int gx_d_active(gx_daemon *d, const char *key);
void gx_d_log_path(const gx_daemon *d, const char *key, int index, char *out, size_t n);
int gx_d_pod_count(gx_daemon *d, const char *key);
/* Frees the runs (d->exec); their processes keep running. */
void gx_d_free_all(gx_daemon *d);
/* What the executor asks of the engine and the store (serve.c passes it to gx_exec_new). */
gx_exec_hooks gx_d_exec_hooks(gx_daemon *d);

/* objects.c */
struct gx_yaml_docs;
/* Apply Kueue objects and Nodes, all or nothing. result: {"items":[{kind,namespace,name,action}]}. */
int gx_d_apply(gx_daemon *d, const struct gx_yaml_docs *docs, json_t **result, gx_err *err);
int gx_d_load_objects(gx_daemon *d, gx_err *err);
int gx_d_delete_object(gx_daemon *d, const char *kind, const char *ns, const char *name, gx_err *err);

/* routes.c */
void gx_d_route(gx_req *req, gx_resp *resp, void *ud);

/* metrics.c */
char *gx_d_metrics(gx_daemon *d);

/* logs.c */
int gx_d_logs(gx_daemon *d, const char *key, int pod, int follow, gx_resp *resp, gx_err *err);

/* RFC 3339 UTC with milliseconds. */
void gx_fmt_time(int64_t ms, char *out, size_t n);

#endif
