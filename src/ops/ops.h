/* ops: the one interface the front doors (src/api, src/maas, src/portal) use to act on
 * the daemon. The daemon itself (struct gx_daemon, src/ops/daemon.h) is opaque to them:
 * they hold a gx_daemon * handed over by the composition root (src/daemon/serve.c) and
 * call these functions, each of which commits before it returns, so an answer a front
 * door gives describes durable state.
 * Owns: the list of what a front door may ask; nothing else.
 * Must not: grow a getter per field. A front door that needs more asks for an
 * operation here, named for what it does. */
#ifndef GX_OPS_H
#define GX_OPS_H
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "auth/auth.h"
#include "core/engine.h"
#include "lib/err.h"
#include "net/http.h"

typedef struct gx_daemon gx_daemon;
struct gx_yaml_docs;

/* ---- workloads (ops/workloads.c) ----------------------------------------------------- */

/* Submit one Job or Workload (manifest is copied). view: its state as GET shows it. */
int gx_d_submit(gx_daemon *d, const json_t *manifest, const char *user_ns_check, json_t **view, gx_err *err);
/* Submit several as one: all are recorded in one transaction, or none (routes, portal). */
int gx_d_submit_all(gx_daemon *d, json_t *const *manifests, size_t n, json_t **views, gx_err *err);
int gx_d_cancel(gx_daemon *d, const char *key, const char *who, gx_err *err);
/* The gpuaas.dev/approval controller (ops/approval.c), for admins only (the caller
 * checks): approve (its checks Ready) or reject (Rejected: the workload is deactivated
 * with message) a workload waiting for admission checks; check NULL: every check of the
 * workload run by gpuaas.dev/approval. 404 unknown, 409 not waiting for checks. */
int gx_d_approve(gx_daemon *d, const char *key, int approve, const char *check, const char *message,
                 const char *who, gx_err *err);
int gx_d_delete(gx_daemon *d, const char *key, gx_err *err);
json_t *gx_d_view(gx_daemon *d, const char *key);
json_t *gx_d_list(gx_daemon *d, const gx_wl_filter *f);
/* Does a workload still have live processes or can it still produce output? */
int gx_d_active(gx_daemon *d, const char *key);

/* ---- objects (ops/objects.c) ------------------------------------------------------- */

/* Apply Kueue objects, Nodes and the front doors' kinds, all or nothing.
 * result: {"items":[{kind,namespace,name,action}]}. */
int gx_d_apply(gx_daemon *d, const struct gx_yaml_docs *docs, json_t **result, gx_err *err);
int gx_d_delete_object(gx_daemon *d, const char *kind, const char *ns, const char *name, gx_err *err);
/* Every applied object, "Kind/ns/name" -> manifest, read-only (valid until the next
 * apply or delete). */
const json_t *gx_d_objects(const gx_daemon *d);
/* Kueue's kinds as Kubernetes objects (apiVersion, kind, metadata, spec as applied,
 * status), for GET ...?format=k8s (ops/k8s_objects.c): kind is ClusterQueue, LocalQueue,
 * ResourceFlavor, Cohort, WorkloadPriorityClass or Workload. namespaces (n_ns 0: all)
 * limit the namespaced kinds, name (NULL: all) picks by name. A new array sorted by
 * namespace and name, or NULL for another kind. */
json_t *gx_d_k8s_objects(gx_daemon *d, const char *kind, const char *const *namespaces, size_t n_ns, const char *name);
/* The admission engine, read-only: queues, cohorts and nodes as the engine sees them. */
const gx_engine *gx_d_engine(const gx_daemon *d);

/* ---- logs and state (ops/logs.c, ops/metrics.c, ops/daemon.c) ---------------------- */

/* Pod pod's log of workload key as the answer's body; follow: streamed until it ends. */
int gx_d_logs(gx_daemon *d, const char *key, int pod, int follow, gx_resp *resp, gx_err *err);
/* Prometheus text (malloc'd): the daemon's lines, then every front door's. */
char *gx_d_metrics(gx_daemon *d);
/* Recovery is done and requests are served from a complete state (/readyz). */
int gx_d_ready(const gx_daemon *d);

/* ---- GPUs (ops/gpus.c) ---------------------------------------------------------------- */

/* GET /api/v1/gpus[/UUID/utilization] and POST /api/v1/gpus/mig (gpu/api.c's REST, with
 * the engine and the GPU runtime behind it). segs: the path after "gpus". */
int gx_d_gpus(gx_daemon *d, const char *method, const char *const *segs, int n, const char *body, size_t body_len,
              int admin, const char *window, json_t **out, gx_err *err);

/* ---- fleet (ops/fleet_view.c, docs/fleet.md) -------------------------------------------- */

/* The Fleet's clusters u may target (those offering one of u's namespaces; all for an
 * admin or u NULL): [{name, labels, namespaces, clusterQueues, workers?, manager?,
 * readBack, requests: {Pending, Published, Removing, Removed}}]; [] without a Fleet. */
json_t *gx_d_clusters(gx_daemon *d, const gx_user *u);

/* ---- reports (ops/reports.c, docs/operations.md "Utilisation reports") ---------------- */

/* The utilisation report over [since, now): since is a duration back from now ("7d",
 * "36h") or an RFC 3339 time, NULL the last 7 days; by "namespace", "class" or NULL
 * (both); of the namespaces given (n_ns 0: all). *out as ops/reports.h's
 * gx_report_utilization says. -1 with err: 400 naming "since" or "by", 500 from the
 * store or the GPU history. */
int gx_d_report_utilization(gx_daemon *d, const char *since, const char *by, const char *const *namespaces, size_t n_ns,
                            json_t **out, gx_err *err);

/* ---- reservations (ops/reservations.c, docs/queueing.md "Reservations") ---------------- */

/* Bookings visible to u between from_ms and to_ms: an admin sees all; a user sees every
 * booking's window and quantity (a calendar must show what is taken) but the owner
 * namespace's name and the booking's name only for namespaces they belong to (others:
 * "namespace": null, "name": null). {"items":[{namespace, name, clusterQueue, resources:
 * [{flavor,name,quantity}], start, end, recurrence|null, leadTime|null, noShowTimeout|null,
 * occurrences: [{start, end, phase: "Upcoming"|"Lead"|"Active"|"Released"|"Ended"}]}],
 * "capacity": [{clusterQueue, flavor, resource, nominal}]}, occurrences clipped to
 * [from,to), times RFC 3339 UTC. ns (NULL: all visible) filters by owner namespace. */
json_t *gx_d_reservations(gx_daemon *d, const gx_user *u, const char *ns, int64_t from_ms, int64_t to_ms);
/* Create (or replace, same ns/name) a booking from a Reservation document as u: a user
 * may book for their own namespaces only (403), and only on a ClusterQueue that one of
 * their namespace's LocalQueues points at (403 naming spec.clusterQueue); limits
 * checked. 0 with *out (the booking as gx_d_reservations shows it); -1 with err (422
 * naming the field; 409 when it does not fit) and, on 409, *refusal =
 * {"conflicts":[{namespace?,name?,start,end}], "alternatives":[{start,end}]}. Recorded
 * durably (the objects table, as apply does) before it returns. */
int gx_d_reserve(gx_daemon *d, const gx_user *u, const json_t *doc, json_t **out, json_t **refusal, gx_err *err);
/* Cancel a booking (its owner namespace's members or an admin). 404 / 403. */
int gx_d_unreserve(gx_daemon *d, const gx_user *u, const char *ns, const char *name, gx_err *err);

/* ---- users (ops/users.c) ----------------------------------------------------------- */

/* Delete a user: their tokens, the gateway keys and the portal sessions go with them. */
int gx_d_delete_user(gx_daemon *d, const char *name, gx_err *err);

#endif
