/* engine: the pure queueing, admission and placement engine (Kueue v1beta2 semantics).
 *
 * Owns: the objects (ResourceFlavor, ClusterQueue, Cohort, LocalQueue,
 * WorkloadPriorityClass, gpuaas Node), the workloads and their state machine,
 * quota accounting, admission, preemption, placement on concrete devices.
 * Must not: do I/O, read a clock, allocate randomness, log. Time comes in as
 * `now_ms` (milliseconds since the Unix epoch, or since 0 on a virtual clock).
 * The daemon (src/api), the scenario runner (src/sim) and the tests all drive
 * exactly this code.
 *
 * Input objects are JSON (jansson) in Kubernetes shape; YAML is converted by
 * lib/yaml before it gets here. Errors come back in gx_err with `field` set to the
 * JSON path inside the object that is wrong, so callers can add the YAML line.
 *
 * Workload keys are "namespace/name". Workload state, as seen by callers:
 *   Pending     waiting for quota (or devices); conditions say why
 *   Admitted    quota reserved and devices placed (QuotaReserved + Admitted)
 *   Finished    succeeded or failed (status.succeeded true/false)
 *   Deactivated cancelled, or its maximum execution time ran out
 * An eviction (preemption, explicit evict) puts an Admitted workload back to Pending
 * with an Evicted condition and its execution time accumulated. */
#ifndef GX_ENGINE_H
#define GX_ENGINE_H
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "core/reservation.h"
#include "lib/err.h"

typedef struct gx_engine gx_engine;

typedef struct gx_engine_opts {
    int fair_sharing;   /* Kueue fairSharing.enable (server config); 0 = classic */
} gx_engine_opts;

gx_engine *gx_engine_new(const gx_engine_opts *opts);
void gx_engine_free(gx_engine *e);

/* ---- objects ------------------------------------------------------------------ */

/* Create or replace one object: kueue.x-k8s.io/v1beta2 ResourceFlavor, ClusterQueue,
 * Cohort, LocalQueue, WorkloadPriorityClass, AdmissionCheck, or gpuaas.dev/v1alpha1 Node. The object
 * is validated completely before anything changes (Kueue's schema, CEL and webhook
 * rules; unknown kind/apiVersion -> 400). Returns 0, or -1 with err (status 400/422). */
int gx_engine_apply(gx_engine *e, const json_t *obj, gx_err *err);

/* Remove an object by kind and name (ns is used for LocalQueue only).
 * -1 with 404 when it does not exist, 409 when it is still in use. */
int gx_engine_delete(gx_engine *e, const char *kind, const char *ns, const char *name, gx_err *err);

/* The objects of one kind as applied (normalised manifests), sorted by (namespace, name).
 * kind: "ResourceFlavor", "ClusterQueue", "Cohort", "LocalQueue",
 * "WorkloadPriorityClass", "Node". Returns a new JSON array. */
json_t *gx_engine_objects(const gx_engine *e, const char *kind);

/* ---- workloads ------------------------------------------------------------------ */

/* Create a workload from a batch/v1 Job or a kueue.x-k8s.io/v1beta2 Workload, arriving
 * at now_ms. Reads metadata.name/namespace, labels kueue.x-k8s.io/queue-name,
 * kueue.x-k8s.io/priority-class, kueue.x-k8s.io/max-exec-time-seconds, annotation
 * kueue.x-k8s.io/job-min-parallelism, spec.parallelism/completions and the pod
 * template's containers[].resources.requests (limits used when requests absent).
 * Errors: unknown LocalQueue or priority class, bad quantity, a resource that no
 * flavor of the ClusterQueue covers -> 422 naming the field; duplicate key -> 409. */
int gx_engine_submit(gx_engine *e, const json_t *job, int64_t now_ms, gx_err *err);

/* Re-create a workload after a restart from the manifest it was submitted with and the
 * status last returned by gx_engine_workload(). An Admitted workload keeps its quota and
 * devices; call gx_engine_evict() next if its processes are gone. */
int gx_engine_restore(gx_engine *e, const json_t *job, const json_t *status, gx_err *err);

/* The workload's pods ended. Admitted -> Finished; quota and devices are released.
 * -1 with 404 unknown, 409 when not Admitted. */
int gx_engine_finish(gx_engine *e, const char *key, int succeeded, const char *message,
                     int64_t now_ms, gx_err *err);

/* Cancel (Kueue: spec.active=false). Pending or Admitted -> Deactivated, reason
 * "Deactivated", message given. Returns 1 when it was Admitted (the caller must stop
 * its processes), 0 when it was Pending, -1 with 404 unknown / 409 already ended. */
int gx_engine_cancel(gx_engine *e, const char *key, const char *message, int64_t now_ms, gx_err *err);

/* Evict an Admitted workload back to Pending (reason e.g. "NodeRestarted"), releasing
 * quota and devices and accumulating its execution time. -1 on 404/409. */
int gx_engine_evict(gx_engine *e, const char *key, const char *reason, const char *message,
                    int64_t now_ms, gx_err *err);

/* added (idle reclamation): gx_engine_evict(), and the workload queues behind those
 * already waiting (ordered by the eviction's time, as Kueue orders an admission-check
 * eviction), not by its creation. */
int gx_engine_requeue_back(gx_engine *e, const char *key, const char *reason, const char *message,
                           int64_t now_ms, gx_err *err);
/* added (idle reclamation): gx_engine_cancel() with the reason given ("Idle",
 * "MaxAgeExceeded") instead of "Deactivated". Returns as gx_engine_cancel(). */
int gx_engine_deactivate_for(gx_engine *e, const char *key, const char *reason, const char *message,
                             int64_t now_ms, gx_err *err);

/* Forget a workload that has ended (Finished/Deactivated). -1 on 404/409. */
int gx_engine_remove(gx_engine *e, const char *key, gx_err *err);

/* ---- scheduling ----------------------------------------------------------------- */

typedef enum gx_act_kind {
    GX_ACT_ADMIT = 1,      /* workload got quota and devices: start it */
    GX_ACT_PREEMPT,        /* workload was evicted for `by`: stop it (it is Pending again) */
    GX_ACT_DEACTIVATE,     /* workload ran out of time (MaximumExecutionTimeExceeded): stop it */
    GX_ACT_RESERVATION,    /* a booking changed: workload = the Reservation's "ns/name", reason
                            * ReservationStarted / ReservationEnded / ReservationReleased (no-show) */
} gx_act_kind;

typedef struct gx_action {
    gx_act_kind kind;
    char workload[256];    /* "ns/name" */
    char by[256];          /* preemptor key for GX_ACT_PREEMPT, else "" */
    char reason[64];       /* Kueue reason: "Preempted", "MaximumExecutionTimeExceeded", ... */
    char message[256];
    /* added: the state at the time of the action (GX_ACT_ADMIT: where it was admitted).
     * GX_ACT_PREEMPT reasons: InClusterQueue, InCohortReclamation,
     * InCohortReclaimWhileBorrowing, InCohortFairSharing (by = preemptor); or
     * ClusterQueueStopped / LocalQueueStopped when a HoldAndDrain stop evicted it (by = ""). */
    char cluster_queue[128];   /* the workload's ClusterQueue, "" if none */
    char flavors[256];         /* GX_ACT_ADMIT: "res=flavor,res=flavor" in resource-name order */
} gx_action;

/* One scheduling pass at now_ms: deactivate workloads whose time ran out, preempt, and
 * admit what fits, in Kueue's order. The engine's state is already updated when it
 * returns. *out gets a malloc'd array (free() it) of the actions, in the order they
 * happened; returns their count. */
size_t gx_engine_schedule(gx_engine *e, int64_t now_ms, gx_action **out);

/* The earliest time > now at which schedule() would have timed work to do (a maximum
 * execution time running out), or INT64_MAX when none. */
int64_t gx_engine_next_wakeup(const gx_engine *e, int64_t now_ms);

/* ---- admission checks (engine_check.c) --------------------------------------------
 * Kueue's two-phase admission: a workload whose ClusterQueue has admission checks
 * (spec.admissionChecks, or admissionChecksStrategy with onFlavors) first reserves quota
 * (condition QuotaReserved; it holds quota and devices and blocks others) and is
 * Admitted, with a GX_ACT_ADMIT action, only at the first pass after every check is
 * Ready. Until then its phase is Pending and the view's "admissionChecks" lists
 * [{"name","state","message","lastTransitionTime"}]. gpuaas runs one controller,
 * GX_APPROVAL_CONTROLLER; checks of other controllers wait until someone sets them. */
#define GX_APPROVAL_CONTROLLER "gpuaas.dev/approval"
typedef enum gx_check_state {
    GX_CHECK_PENDING = 0, GX_CHECK_READY, GX_CHECK_RETRY, GX_CHECK_REJECTED
} gx_check_state;
/* "Pending", "Ready", "Retry", "Rejected" -> the state, or -1. */
int gx_engine_check_state_parse(const char *s);
/* Set check `check` of workload ns/name (check NULL: every check of the workload run by
 * GX_APPROVAL_CONTROLLER). Ready: admitted at the next pass once all are Ready. Retry:
 * quota released and the workload requeued (checks start again as Pending). Rejected:
 * the workload is Deactivated (Evicted, reason "Deactivated", with message) and not
 * restarted. -1 with 404 (workload or check unknown), 409 (not waiting for checks). */
int gx_engine_set_check(gx_engine *e, const char *ns, const char *name, const char *check,
                        gx_check_state st, const char *message, int64_t now_ms, gx_err *err);

/* ---- views (new JSON values; the caller owns them) -------------------------------- */

/* One workload, or NULL when unknown:
 * {"key","namespace","name","kind","queueName","clusterQueue","priorityClass","priority",
 *  "state": "Pending|Admitted|Finished|Deactivated", "succeeded": bool (Finished only),
 *  "createdAt","admittedAt","finishedAt": RFC 3339 UTC with milliseconds (absent when unset),
 *  "maxExecutionTimeSeconds", "accumulatedPastExecutionTimeSeconds",
 *  "podSets": [{"name","count","minCount","requests":{res: quantity string}}],
 *  "admission": {"clusterQueue","podSetAssignments":[{"name","count","flavors":{res:flavor},
 *                "resourceUsage":{res: quantity}}]}            (Admitted only)
 *  "placement": [{"pod": i, "node": name, "devices": [{"uuid","index","model"}]}] (Admitted only)
 *  "conditions": [{"type","status":"True|False","reason","message","lastTransitionTime"}],
 *  "positionInClusterQueue", "positionInLocalQueue"                  (Pending only, 0-based)}
 * This object is also what gx_engine_restore() takes back as `status`. */
json_t *gx_engine_workload(const gx_engine *e, const char *key, int64_t now_ms);

/* Filter for gx_engine_workloads(); NULL/0 fields match everything. */
typedef struct gx_wl_filter {
    const char *const *namespaces; size_t n_namespaces;  /* allowed namespaces */
    const char *state;             /* exact state */
    const char *local_queue;       /* "ns/name" or name */
    const char *cluster_queue;
} gx_wl_filter;

/* Matching workloads as an array of gx_engine_workload() objects, sorted by
 * (namespace, name); positions computed in one pass. */
json_t *gx_engine_workloads(const gx_engine *e, const gx_wl_filter *f, int64_t now_ms);

/* Every ClusterQueue with its state:
 * [{"name","cohort","queueingStrategy","stopPolicy","active": bool,
 *   "resources":[{"flavor","resource","nominalQuota","borrowingLimit","lendingLimit",
 *                 "usage": quantity strings}],
 *   "pendingWorkloads": n, "admittedWorkloads": n, "admittedTotal": n since start,
 *   "evictedTotal": n}]
 * added: "pendingActive"/"pendingInadmissible" (Kueue's kueue_pending_workloads status
 * split), "preemptingTotal" (workloads this queue's workloads preempted), "inactiveReason",
 * "fairSharingWeight", "weightedShare" (Kueue's status.fairSharing.weightedShare). */
json_t *gx_engine_cluster_queues(const gx_engine *e);

/* LocalQueues (optionally only some namespaces):
 * [{"namespace","name","clusterQueue","pendingWorkloads","admittedWorkloads","usage":{res:q}}] */
json_t *gx_engine_local_queues(const gx_engine *e, const char *const *namespaces, size_t n_ns);

/* Nodes and their devices with what is placed on them:
 * [{"name","labels":{},"cpu","memory","gpus":[{"index","uuid","model","memory",
 *   "workloads":[{"workload":"ns/name","pod":i}]}]}] */
json_t *gx_engine_nodes(const gx_engine *e);
/* The UUID the engine gives GPU idx of a node described by a count only: deterministic
 * (FNV-1a of name and index, UUID-shaped), so the same GPU keeps its UUID across
 * restarts and whether or not src/gpu describes it (inventory.c calls this too). */
void gx_engine_gpu_uuid(const char *node, int idx, char *out, size_t n);

/* ---- additions (phase 2): used by the scenario runner ---------------------------- */

/* A workload parsed and validated on its own (no queue lookups yet), so a caller can
 * read many manifests, drop the JSON and submit them later: 50k parsed workloads
 * stay small. gx_engine_submit() == prepare + submit_spec. */
typedef struct gx_wl_spec gx_wl_spec;
int gx_engine_prepare(gx_engine *e, const json_t *job, gx_wl_spec **out, gx_err *err);
/* Takes ownership of spec (freed on error too). Errors as gx_engine_submit(). */
int gx_engine_submit_spec(gx_engine *e, gx_wl_spec *spec, int64_t now_ms, gx_err *err);
void gx_engine_spec_free(gx_wl_spec *spec);
/* The spec's "namespace/name" key (name generated from metadata.generateName if needed). */
const char *gx_engine_spec_key(const gx_wl_spec *spec, char *buf, size_t n);

/* An admitted workload's admission, cheaply: {"clusterQueue","flavors":{res:flavor},
 * "counts":[pods per pod set]}, or NULL when it is not admitted. */
json_t *gx_engine_admission(const gx_engine *e, const char *key);

/* The ClusterQueue a workload is queued in or admitted to (NULL when unknown or none);
 * the pointer stays valid until the next change of the engine. Cheap. */
const char *gx_engine_workload_cq(const gx_engine *e, const char *key);

/* Number of workloads in a state ("Pending", "Admitted", "Finished", "Deactivated"). */
size_t gx_engine_count(const gx_engine *e, const char *state);

/* Switch fair sharing (the server config) on or off; takes effect at the next pass. */
void gx_engine_set_fair_sharing(gx_engine *e, int on);

/* ---- typed questions (no JSON): what the daemon, the GPU runtime and the scenario
 * runner ask about one workload or device. Cheap (a map lookup); strings point into the
 * engine and stay valid until its next change. The views' "state" is the name of the
 * same phase (gx_engine_phase_name), so the two cannot disagree. ---------------------- */

typedef enum gx_wl_phase {
    GX_PHASE_ABSENT = -1,  /* no such workload (never submitted, or removed) */
    GX_PHASE_PENDING = 0,  /* queued: waiting for quota or devices (also after an eviction) */
    GX_PHASE_ADMITTED,     /* quota reserved and devices placed: its pods should run */
    GX_PHASE_FINISHED,     /* its pods ended (succeeded or failed) */
    GX_PHASE_DEACTIVATED,  /* cancelled, or its maximum execution time ran out */
} gx_wl_phase;
#define GX_PHASE_N 4       /* phases a workload can be in (ABSENT excluded) */

/* "Pending", "Admitted", "Finished", "Deactivated"; NULL for ABSENT or out of range. */
const char *gx_engine_phase_name(gx_wl_phase p);
/* The phase named s (as the views spell it); GX_PHASE_ABSENT when s names none. */
gx_wl_phase gx_engine_phase_parse(const char *s);

gx_wl_phase gx_engine_wl_phase(const gx_engine *e, const char *key);

/* One workload's state without its JSON view. */
typedef struct gx_wl_info {
    gx_wl_phase phase;
    int succeeded;            /* FINISHED: 1 succeeded, 0 failed; else 0 */
    const char *cluster_queue;/* queued in or admitted to; NULL when none */
    int64_t created_ms;
    int64_t admitted_ms;      /* last admission; kept once it ended (the view's admittedAt); -1 never */
    int64_t finished_ms;      /* FINISHED/DEACTIVATED; else -1 */
    int64_t max_exec_s;       /* 0 = no maximum execution time */
    int64_t acc_ms;           /* execution time accumulated by earlier admissions */
    int n_podsets;
    int admitted_pods;        /* ADMITTED: pods admitted in all pod sets (= its pod slots); else 0 */
} gx_wl_info;
/* 0 and *out filled, or -1 (out->phase = GX_PHASE_ABSENT) when the key is unknown. */
int gx_engine_wl_info(const gx_engine *e, const char *key, gx_wl_info *out);

/* Pods admitted in pod set `podset` of an ADMITTED workload (partial admission may give
 * fewer than its count): the view's admission.podSetAssignments[podset].count; -1 when
 * not admitted or no such pod set. */
int gx_engine_wl_admitted_count(const gx_engine *e, const char *key, int podset);

/* A device placed for one pod: what the placement view's "devices" entries say. */
typedef struct gx_engine_dev {
    const char *uuid;         /* what the pod is given: the GPU's UUID, or its MIG device's */
    const char *gpu_uuid;     /* the physical GPU's UUID (== uuid unless mig >= 0) */
    const char *model;
    const char *node;
    int index;                /* the GPU's index on its node */
    int shared;               /* 1 on a node with shared GPUs: mode, cores and mem_mib apply */
    const char *mode;         /* shared: "exclusive", "timeSlicing", "mps", "mig", ... else NULL */
    int cores;                /* shared: percent of the SMs it may use */
    int64_t mem_mib;          /* shared: memory it may use, MiB */
    int mig;                  /* MIG device index on the GPU, -1 when none */
    const char *profile;      /* MIG profile, NULL when mig < 0 */
    int replica;              /* replica taken (time-slicing, MPS), -1 when none */
} gx_engine_dev;
/* The devices of pod slot `pod` (0-based, over all pod sets) of an ADMITTED workload:
 * returns how many there are, writing the first `max` to out (0: the pod has no GPU);
 * -1 when the workload is unknown, not admitted, or has no such pod. */
int gx_engine_wl_devices(const gx_engine *e, const char *key, int pod, gx_engine_dev *out, int max);

/* A GPU as the engine knows it, with who uses it. */
typedef struct gx_engine_gpu {
    const char *node, *uuid, *model;
    int index;                /* on its node */
    int n_users;              /* pods placed on it (whole or shared) */
    const char *user;         /* the first such pod's workload key; NULL when idle */
    int user_pod;             /* that pod's slot; -1 when idle */
} gx_engine_gpu;
/* The GPUs of one node (node NULL: of every node, in node order): returns how many there
 * are, writing the first `max` to out. 0 for an unknown node. */
size_t gx_engine_gpus(const gx_engine *e, const char *node, gx_engine_gpu *out, size_t max);

/* Number of workloads in a phase (GX_PHASE_ABSENT: all of them). */
size_t gx_engine_count_phase(const gx_engine *e, gx_wl_phase p);

/* ---- bookings: kind Reservation, gpuaas.dev/v1alpha1 (engine_rsv.c, core/reservation.h)
 * The shell turns spec.start/end/recurrence into occurrences (UTC [start, end) ms; lib/tzwin
 * for a weekly recurrence) and hands them in with the object, whose metadata and
 * spec.clusterQueue, spec.resources [{flavor, name, quantity}], spec.leadTime and
 * spec.noShowTimeout the engine reads. A booking draws on its ClusterQueue's nominal quota
 * of each flavor/resource: never more is booked at any instant. During an occurrence the
 * ClusterQueue reclaims the booked quantity from borrowers of its cohort whatever its
 * reclaimWithinCohort (reason ReservationStarted); from start - leadTime to start, other
 * queues are admitted onto the booked capacity only when their maximum execution time ends
 * by start; noShowTimeout after start with nothing of the queue using the booked
 * flavor/resources, the occurrence is released. Not with fair sharing's preemption. */
/* Add or replace a booking at now_ms. 0, or -1 with *why (err names the field; a refused
 * booking lists its conflicts and free windows); free it with gx_reservation_refusal_free. */
int gx_engine_reservation_apply(gx_engine *e, const json_t *obj, const gx_rsv_window *occ, size_t n_occ,
                                int64_t now_ms, gx_rsv_refusal *why);
/* -1 with 404 when there is no such booking. */
int gx_engine_reservation_delete(gx_engine *e, const char *ns, const char *name, gx_err *err);
/* The admins' per-namespace booking limits, as gx_reservation_set_limit (milli-GPUs,
 * milli-GPU-milliseconds per week; -1 unlimited): set before the bookings are applied. */
void gx_engine_reservation_limit(gx_engine *e, const char *ns, int64_t gpus_at_once, int64_t gpu_ms_per_week);
/* The phase of booking ns/name at t, as gx_reservation_phase (GX_RSV_NONE when there is
 * no such booking, or its occurrence at t was released). */
int gx_engine_reservation_phase(const gx_engine *e, const char *ns, const char *name, int64_t t, gx_rsv_window *occ);

#endif
