/* fleet_int: what ops/fleet.c (the Fleet kind, requests, publishing) and ops/fleet_view.c
 * (views, lists, clusters, metrics) share.
 * Owns: the daemon's fleet state (one per daemon) and a request's record in memory.
 * Must not: be included outside src/ops. */
#ifndef GX_OPS_FLEET_INT_H
#define GX_OPS_FLEET_INT_H
#include <stdint.h>
#include <jansson.h>
#include "fleet/fleet.h"
#include "lib/wlkey.h"
#include "net/loop.h"
#include "ops/daemon.h"

#include "fleet/publisher.h"
#include "fleet/status.h"
#include "fleet/kubewatch.h"

/* A request's place in its life: its file is to be added (Pending), is in git
 * (Published), is to be removed (Removing: cancelled or expired), or is gone (Removed). */
typedef enum { FL_PENDING, FL_PUBLISHED, FL_REMOVING, FL_REMOVED } fl_state;
extern const char *const gx_fl_state_names[4];

typedef struct fl_req {
    gx_wlkey k;
    char *cluster, *user, *path;
    json_t *manifest;        /* as submitted */
    json_t *rendered;        /* the Job the cluster gets (gx_fleet_render_job), kept as first rendered */
    fl_state state;
    char commit[41];         /* the last commit that changed it */
    int64_t attempts;        /* failed tries of the current change */
    char *last_error;        /* NULL: none */
    int64_t next_at;         /* when the current change may be tried again */
    int64_t published_ms, created_ms;
    char *note;              /* why it is being removed ("cancelled by alice", "expired") */
    uint64_t inflight;       /* the publisher's job id, 0: none */
} fl_req;

typedef struct gx_d_fleet {
    json_t *doc;             /* the Fleet as applied (paths resolved), NULL: none */
    gx_fleet fleet;          /* parsed from doc */
    gx_publisher *pub;
    gx_fleet_status *status;
    gx_kube_watch *watches[GX_FLEET_CLUSTERS_MAX];
    fl_req **reqs;
    size_t n, cap;
    json_t *failures;        /* cluster -> publish failures since start */
    int64_t retain_ms;       /* how long a finished request stays in git */
    char workdir[GX_DATA_DIR_MAX + 8];   /* DATA/fleet */
} gx_d_fleet;

fl_req *gx_fl_find(const gx_d_fleet *f, const char *key);
/* The request's view (docs/api.md, workload): the fleet fields and, once published, its
 * remote status merged in. */
json_t *gx_fl_view(gx_daemon *d, const fl_req *r);

#endif
