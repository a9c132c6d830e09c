/* fleet/kubewatch: list+watch of one cluster's Kueue Workloads, Jobs, ClusterQueues and
 * LocalQueues over libcurl on the daemon's loop, feeding fleet/status.
 * Owns: its own curl multi handle, one transfer per resource at a time, resourceVersions,
 * bookmarks, 410 relists and back-off.
 * Must not: block, write to a cluster, or log a credential. */
#ifndef GX_FLEET_KUBEWATCH_H
#define GX_FLEET_KUBEWATCH_H
#include "fleet/status.h"
#include "lib/err.h"

struct gx_loop;
typedef struct gx_kube_watch gx_kube_watch;
/* Start list+watch of workloads.kueue.x-k8s.io (v1beta2; fall back to v1beta1 on 404),
 * jobs.batch/v1, clusterqueues and localqueues, all namespaces, on cluster's API server
 * (kubeconfig file + context, NULL: current-context), feeding st. Runs on loop l.
 * NULL with err (naming the kubeconfig and field) when the kubeconfig is unusable;
 * a server that cannot be reached is no error here: st says so and it keeps trying. */
gx_kube_watch *gx_kube_watch_new(struct gx_loop *l, const char *cluster, const char *kubeconfig,
                                 const char *context, gx_fleet_status *st, gx_err *err);
void gx_kube_watch_free(gx_kube_watch *w);

#endif
