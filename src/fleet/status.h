/* fleet/status: what the hub knows of each cluster's Kueue and Jobs, as read back from
 * its API server (kubewatch.c feeds it), and the workload view a fleet request shows.
 * Owns: the last seen copy of every Workload, Job, ClusterQueue and LocalQueue per
 * cluster, relists (what a list did not name is gone), each cluster's connection health,
 * and the translation of Kueue's conditions into the local view's words.
 * Must not: do I/O or read a clock (times come in as arguments), or change a cluster. */
#ifndef GX_FLEET_STATUS_H
#define GX_FLEET_STATUS_H
#include <stdint.h>
#include <jansson.h>

typedef struct gx_fleet_status gx_fleet_status;

gx_fleet_status *gx_fleet_status_new(void);
void gx_fleet_status_free(gx_fleet_status *s);
/* One object from cluster's list or watch: kind "Workload" | "Job" | "ClusterQueue" |
 * "LocalQueue"; type "ADDED" | "MODIFIED" | "DELETED". obj is borrowed. */
void gx_fleet_status_event(gx_fleet_status *s, const char *cluster, const char *kind, const char *type, const json_t *obj);
/* A relist replaces what is known of (cluster, kind): begin, the list's items as ADDED,
 * end (drops what the list did not name). */
void gx_fleet_status_relist_begin(gx_fleet_status *s, const char *cluster, const char *kind);
void gx_fleet_status_relist_end(gx_fleet_status *s, const char *cluster, const char *kind);
/* The connection's health, for the portal (kubewatch.c calls it, after each batch of
 * events too: lastEventAt is the now_ms of the first such call after an event). */
void gx_fleet_status_connection(gx_fleet_status *s, const char *cluster, int connected, const char *error, int64_t now_ms);
/* The remote state of Job ns/name on cluster in the workload view's words (docs/api.md
 * "workload"): {state: Pending|Admitted|Finished|Deactivated (Kueue's), phase:
 * Pending|Admitted|Running|Succeeded|Failed|Deactivated, reason, message, conditions
 * (the Workload's), admission, clusterQueue, positionInClusterQueue,
 * positionInLocalQueue (while pending: by priority, then creation, among that
 * cluster's pending Workloads of the same ClusterQueue/LocalQueue), pods: [{index,
 * state}] from the Job's status (active/succeeded/failed counts), admittedAt,
 * finishedAt, remoteWorkload: the Workload's name}; NULL: nothing seen yet. */
json_t *gx_fleet_status_job(const gx_fleet_status *s, const char *cluster, const char *ns, const char *name);
/* {connected: bool, lastError: string|null, lastEventAt: RFC 3339|null}; NULL: unknown cluster. */
json_t *gx_fleet_status_cluster(const gx_fleet_status *s, const char *cluster);

#endif
