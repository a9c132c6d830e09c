/* k8s: Kueue's kinds written out as Kubernetes objects (apiVersion, kind, metadata, spec,
 * status), so that `gpuaas get KIND -o yaml` prints what Kueue's CRDs describe and what
 * `gpuaas apply -f` takes back.
 * Owns: the shapes of the objects going out (the pure renderers below: JSON in, JSON
 * out, no daemon, testable alone); the fields the server sets are lib/k8sobj.h's.
 * Must not: change what was applied: spec and the user's metadata go out exactly as they
 * came in; status is made from the engine's views, never stored. */
#ifndef GX_OPS_K8S_H
#define GX_OPS_K8S_H
#include <stdint.h>
#include <jansson.h>
#include "lib/k8sobj.h"   /* gx_k8s_strip_server_fields */


/* An applied manifest as an object: a copy, metadata.creationTimestamp set from
 * created_ms (0: left out), status (stolen; NULL: none) attached. */
json_t *gx_k8s_applied(const json_t *manifest, int64_t created_ms, json_t *status);

/* ClusterQueue status from gx_engine_cluster_queues()' entry for it: workload counts,
 * flavorsReservation and flavorsUsage (total, borrowed) per flavor, fairSharing, and
 * the Active condition. since_ms stands for the condition's lastTransitionTime (gpuaas
 * does not record when a queue's activity changed). */
json_t *gx_k8s_cq_status(const json_t *cq_view, int64_t since_ms);

/* LocalQueue status from gx_engine_local_queues()' entry (lq_view), the engine views of
 * its admitted workloads (their admission gives the usage per flavor), its ClusterQueue's
 * entry (NULL: no such ClusterQueue) and its manifest (spec.stopPolicy). */
json_t *gx_k8s_lq_status(const json_t *lq_view, const json_t *admitted, const json_t *cq_view,
                         const json_t *lq_manifest, int64_t since_ms);

/* A Workload from the manifest as submitted (a batch/v1 Job or a Workload) and its view
 * (gx_d_view: the engine's status plus phase and pods). */
json_t *gx_k8s_workload(const json_t *manifest, const json_t *view);

#endif
