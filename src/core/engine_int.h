/* engine_int: the engine's internal data model, shared by src/core/engine_*.c only.
 * Owns: the structs behind gx_engine and the internal functions between the engine's
 * files (prefix gx_engine_<file>_). Nothing outside src/core includes this.
 *
 * Model. Names (resources, flavors) are interned into small integer ids; a
 * (flavor, resource) pair is an "fr" id. Quantities are int64 milli-units.
 * Objects (flavors, cluster queues, cohorts, local queues, priority classes, nodes) are
 * parsed once from JSON into structs. The quota tree (Kueue's resource nodes: cohorts
 * and cluster queues with dense per-fr arrays) is derived from the objects and rebuilt
 * when an object changes; usage is then re-added from the admitted workloads.
 * Each cluster queue holds its pending workloads in Kueue's queue order (priority, then
 * queue timestamp, then arrival sequence), grouped by scheduling hash so that a
 * BestEffortFIFO head that does not fit sets its whole group aside until something
 * changes (engine_queue.c). Files: obj (objects, validation), obj_fields (labels,
 * taints, tolerations, affinity, names), quota (resource tree), queue, assign (flavor
 * assignment), preempt (preemption, partial admission), fair (dominant resource share),
 * sched (the pass), place (devices), wl (workloads), view (JSON), query (typed answers),
 * util (interned names). Maps by name are lib/strmap index maps; every allocation goes
 * through lib/alloc (it aborts in one place: the engine cannot go on half-updated). */
#ifndef GX_ENGINE_INT_H
#define GX_ENGINE_INT_H
#include <stdint.h>
#include <stddef.h>
#include <jansson.h>
#include "core/engine.h"
#include "lib/alloc.h"
#include "lib/strmap.h"

#define GX_MAX_RG 16
#define GX_MAX_COVERED 64
#define GX_MAX_FLAVORS 64
#define GX_MAX_PODSETS 18
#define GX_NIL (-1)                 /* an absent borrowingLimit / lendingLimit */

/* ---- small containers (engine_util.c) ---------------------------------------------- */

/* Name -> index maps are lib/strmap's index maps (gx_strmap_geti/puti, -1 when absent). */

/* Interned names: id <-> string, append-only. */
typedef struct gx_names {
    gx_strmap map;
    char **s;
    int n, cap;
} gx_names;
int gx_engine_util_intern(gx_names *t, const char *s);
int gx_engine_util_lookup(const gx_names *t, const char *s);        /* -1 when unknown */
void gx_engine_util_names_free(gx_names *t);

/* Grow an int-counted array to hold element n (lib/alloc's gx_xgrow: the one growth rule). */
#define GX_GROW(arr, n, cap) do { if ((size_t)(n) >= (size_t)(cap)) { size_t gx_c_ = (size_t)(cap); \
    (arr) = gx_xgrow((arr), &gx_c_, (size_t)(n) + 1, sizeof *(arr)); (cap) = gx_c_; } } while (0)

/* ---- objects ------------------------------------------------------------------------ */

typedef struct gx_taint { char *key, *value, *effect; } gx_taint;
typedef struct gx_toler { char *key, *op, *value, *effect; } gx_toler;

typedef struct gx_labels { int n; char **k, **v; } gx_labels;

typedef struct gx_rf {           /* ResourceFlavor, indexed by flavor id */
    int present;
    json_t *manifest;
    gx_labels node_labels;
    int n_taints; gx_taint *taints;
    int n_tols; gx_toler *tols;
} gx_rf;

typedef struct gx_fq { int64_t nominal, borrow, lend; } gx_fq;   /* borrow/lend GX_NIL = unset */

typedef struct gx_rg {
    int nres, nflv;
    int res[GX_MAX_COVERED];
    int flv[GX_MAX_FLAVORS];
    gx_fq *q;                    /* [nflv * nres] */
    int *fr;                     /* [nflv * nres] fr ids */
} gx_rg;

enum { GX_STRICT = 0, GX_BESTEFFORT = 1 };
enum { GX_STOP_NONE = 0, GX_STOP_HOLD, GX_STOP_DRAIN };
enum { GX_PW_NEVER = 0, GX_PW_LOWER, GX_PW_LOWER_NEWER, GX_PW_ANY };
enum { GX_FUNG_STOP = 0, GX_FUNG_NEXT = 1 };
enum { GX_PREF_NONE = 0, GX_PREF_BORROW, GX_PREF_PREEMPT };

/* Label selector restricted to what a namespace can show (its name label). */
typedef struct gx_nssel { int nil; json_t *sel; } gx_nssel;

/* A quota holder: a ClusterQueue or a Cohort (both own resourceGroups). */
typedef struct gx_quota_spec {
    int n_rg;
    gx_rg rg[GX_MAX_RG];
    int64_t fs_weight;           /* milli; default 1000 */
} gx_quota_spec;

/* Pending workloads of one ClusterQueue, grouped by scheduling hash (same shape and
 * priority): each group is a heap in queue order; the active groups form a heap
 * ordered by their first workload. A BestEffortFIFO head that does not fit parks its
 * whole group (Kueue's inadmissible set with SchedulingEquivalenceHashing) until a
 * cluster event wakes the queue. See engine_queue.c. */
typedef struct gx_qgroup {
    uint64_t hash;
    int *h; int n, cap;          /* workload indices, heap in queue order */
    int gpos;                    /* index in gheap, -1 when not active */
    int ppos;                    /* index in gpark, -1 when not parked */
} gx_qgroup;

typedef struct gx_queue {
    gx_qgroup *g; int n_g, cap_g;
    int *gheap; int gheap_n, gheap_cap;
    int *gpark; int gpark_n, gpark_cap;
    uint64_t *mk; int *mv; int mcap, mused;   /* hash -> group (open addressing) */
    int pending;                 /* workloads queued in all groups */
} gx_queue;

typedef struct gx_cq {
    char *name;
    json_t *manifest;
    char *cohort_name;           /* NULL when none */
    gx_quota_spec qs;
    int strategy, stop;
    gx_nssel nssel;
    int p_within, p_reclaim, p_borrow;   /* GX_PW_* */
    int has_borrow_threshold; int32_t borrow_threshold;
    int fung_borrow, fung_preempt, fung_pref;
    /* derived (rebuild) */
    int node;                    /* quota tree node */
    int active;                  /* all flavors exist, no cycle, not stopped */
    const char *inactive_reason; /* "Stopped", "FlavorNotFound", "CohortHasCycle" */
    int *res_rg;                 /* [n_res_map] resource id -> rg index or -1 */
    int n_res_map;
    gx_queue q;                  /* pending workloads (engine_queue.c) */
    int ready;                   /* in engine ready list */
    int blocked;                 /* StrictFIFO head blocked during this schedule() */
    int *adm; int adm_n, adm_cap;    /* admitted workloads (indices) */
    /* counters */
    int admitted_now;
    int64_t admitted_total, evicted_total;
    int64_t preempting_total;    /* workloads preempted by this queue's workloads */
    json_t *counts;              /* admissions and evictions by label set (engine_counts.c) */
    struct gx_cq_chk *chk; int n_chk;    /* admission checks (engine_check.c) */
} gx_cq;

typedef struct gx_cohort {
    char *name;
    json_t *manifest;            /* NULL for an implicit cohort (named only by CQs) */
    char *parent_name;
    gx_quota_spec qs;
    int node;
} gx_cohort;

typedef struct gx_lq {
    char *ns, *name, *key;       /* key "ns/name" */
    json_t *manifest;
    char *cq_name;
    int stop;
    int admitted_now;
} gx_lq;

typedef struct gx_wpc { char *name; json_t *manifest; int32_t value; } gx_wpc;

typedef struct gx_gpu {
    char *uuid, *model;
    int64_t memory;
    int n_users, cap_users;
    int *user_wl;                /* workload index */
    int *user_pod;
} gx_gpu;

typedef struct gx_node {
    char *name;
    json_t *manifest;
    gx_labels labels;
    int n_taints; gx_taint *taints;
    int64_t cpu, memory;
    int n_gpus;
    gx_gpu *gpus;
    struct gx_share_node *share; /* GPU sharing model (core/share_place.c), NULL when no GPU is shared */
} gx_node;

/* ---- quota tree (engine_quota.c) ------------------------------------------------------ */

typedef struct gx_qnode {
    int parent;                  /* node index, -1 for a root */
    int cq;                      /* cq index, or -1 for a cohort */
    int cohort;                  /* cohort index, or -1 */
    int n_child; int *child;
    int64_t *nominal, *blim, *llim, *subtree, *usage;   /* [n_fr] each */
} gx_qnode;

/* ---- workloads ---------------------------------------------------------------------- */

/* gx_wl.state: the public phases (engine.h), so views and typed queries agree. */
enum { GX_WL_PENDING = GX_PHASE_PENDING, GX_WL_ADMITTED = GX_PHASE_ADMITTED,
       GX_WL_FINISHED = GX_PHASE_FINISHED, GX_WL_DEACTIVATED = GX_PHASE_DEACTIVATED };

typedef struct gx_podset {
    char *name;
    int32_t count, min_count;
    int nreq;
    int *res;                    /* resource ids */
    int64_t *req;                /* per pod, milli */
    gx_labels node_selector;
    int n_tols; gx_toler *tols;
    json_t *affinity;            /* required node affinity terms (nodeSelectorTerms), or NULL */
} gx_podset;

/* Why a workload is pending: rendered into a condition message by the views. */
enum {
    GX_WHY_QUEUED = 0,           /* not evaluated yet */
    GX_WHY_INACTIVE_CQ, GX_WHY_NO_CQ, GX_WHY_NS, GX_WHY_LQ_STOPPED,
    GX_WHY_NOT_COVERED, GX_WHY_NO_FLAVOR_MATCH,
    GX_WHY_MAX_QUOTA,            /* can never fit: request > potential available */
    GX_WHY_QUOTA,                /* waiting for quota */
    GX_WHY_BORROW_LIMIT,
    GX_WHY_PREEMPTING,           /* preemption issued, waiting for victims */
    GX_WHY_NO_DEVICE,            /* quota fits, devices do not */
    GX_WHY_SKIPPED,              /* fitted, but an earlier admission this cycle took it */
    GX_WHY_BOOKED,               /* lead time of a booking: would not end before it starts */
};
typedef struct gx_why {
    uint8_t kind;
    int flavor, res, podset;
    int64_t need, used, nominal, lendable, avail;
    int cq_lq_cq;                /* cq index the message refers to */
} gx_why;

enum { GX_C_QUOTA = 0, GX_C_ADMITTED, GX_C_EVICTED, GX_C_PREEMPTED, GX_C_REQUEUED,
       GX_C_FINISHED, GX_C_DEACTIVATED, GX_C_N };
typedef struct gx_cond {
    uint8_t set, status;
    const char *reason;          /* static string */
    char *msg;                   /* malloc'd, NULL = rendered by view */
    int64_t t;
} gx_cond;

typedef struct gx_psadm {        /* admission of one podset */
    int32_t count;
    int *flv;                    /* [podset nreq] flavor id per request */
} gx_psadm;

struct gx_wl_spec {              /* a parsed workload (before it is queued) */
    char *ns, *name, *kind, *lq_name, *pc_name;
    int has_priority; int32_t priority;
    int32_t boost;               /* annotation kueue.x-k8s.io/priority-boost */
    int64_t max_exec_s;          /* 0 = none */
    int64_t acc_ms;
    int nps;
    gx_podset *ps;
};

typedef struct gx_wl {
    int live;
    char *key;
    struct gx_wl_spec s;
    int lq, cq;                  /* resolved at submit */
    int32_t priority;
    uint64_t seq;
    int64_t created, queue_ts, admitted_at, quota_at, finished_at;
    int state, succeeded;
    int64_t acc_ms;              /* accumulated past execution time */
    gx_psadm *adm;               /* [nps] when admitted */
    int n_use; int *use_fr; int64_t *use_amt;
    int *pl_node;                /* [total pods] node per pod, placement */
    int n_pl_dev; int *pl_dev;   /* pairs (node, gpu) * n, with pod in pl_devpod */
    int *pl_devpod;
    int heap_pos;                /* index in its group's heap, -1 when not queued */
    int qgroup;                  /* group index in its cq's queue, -1 when not queued */
    uint64_t hash;               /* scheduling hash: shape and priority */
    gx_why why;
    gx_cond cond[GX_C_N];
    int max_exec_tracked;        /* counted in e->n_max_exec */
    int adm_pos;                 /* index in cq->adm, -1 when not admitted */
    int pvariant;                /* preemption reason class while chosen as a target */
    /* admission checks (engine_check.c): with checks, an ADMITTED workload holds its quota
     * (QuotaReserved) but is Admitted only once every check is Ready */
    struct gx_wl_chk *chk; int n_chk;
    int chk_wait;                /* 0 admitted, 1 waiting for checks, 2 all Ready: admit next pass */
} gx_wl;

/* The phase callers see: quota reserved but checks not all Ready is still Pending. */
static inline int gx_engine_wl_pub(const gx_wl *w)
{
    return w->state == GX_WL_ADMITTED && w->chk_wait ? GX_WL_PENDING : w->state;
}

struct gx_engine {
    gx_engine_opts opts;
    gx_names res, flv, fr;       /* fr names are "flavor\x1fresource" */
    gx_names reasons;            /* condition reasons read back by restore (stable strings) */
    int *fr_flv, *fr_res;        /* fr id -> flavor id / resource id */
    int fr_cap;
    gx_rf *rfs; int rf_cap;      /* by flavor id */
    gx_cq *cqs; int n_cq, cap_cq; gx_strmap cq_map;
    gx_cohort *cohorts; int n_co, cap_co; gx_strmap co_map;
    gx_lq *lqs; int n_lq, cap_lq; gx_strmap lq_map;
    gx_wpc *wpcs; int n_wpc, cap_wpc; gx_strmap wpc_map;
    gx_node *nodes; int n_nodes, cap_nodes; gx_strmap node_map;
    gx_wl *wls; int n_wl, cap_wl; gx_strmap wl_map;
    int *free_wl; int n_free_wl, cap_free_wl;
    uint64_t seq;
    uint64_t gen_seq;            /* metadata.generateName suffixes */
    /* quota tree */
    int dirty;
    gx_qnode *nodes_q; int n_qn;
    int n_fr_tree;               /* size of the per-node arrays */
    /* CQs with a non-empty heap */
    int *ready; int n_ready, cap_ready;
    int n_max_exec;              /* admitted workloads with a maximum execution time */
    int orphans;                 /* pending workloads without a ClusterQueue exist */
    /* bumped on every real usage change; keys the preemption search cache */
    uint64_t qversion;
    /* the placement policy of shared GPUs with its online target workload (share_place.c),
     * rebuilt when seq moves on */
    struct gx_place_ctx *share_cx;
    uint64_t share_cx_seq;
    struct { uint64_t wseq; int fr; int64_t val; uint64_t ver; int n; int *t; int *v; } pcache;
    /* quota reserved for preemptors without targets during one cycle */
    int *rsv_node, *rsv_fr; int64_t *rsv_amt; int n_rsv, cap_rsv;
    struct gx_entry *ents; int cap_ents;   /* scratch heads of a cycle (engine_sched.c) */
    /* AdmissionCheck objects (engine_check.c) */
    struct gx_ac *acs; int n_ac, cap_ac; gx_strmap ac_map;
    int n_chk_go;                /* workloads whose checks all became Ready (chk_wait 2) */
    /* bookings (engine_rsv.c): NULL until the first; rsv_prev: the last pass that looked */
    struct gx_rsv_book *rsv; int64_t rsv_prev, rsv_now;
    /* actions being produced by schedule() */
    gx_action *acts; size_t n_acts, cap_acts;
};

/* engine_obj.c, engine_obj_fields.c (the fields several kinds share) */
int gx_engine_obj_fr(gx_engine *e, int flv, int res);
void gx_engine_obj_free_all(gx_engine *e);
int gx_engine_obj_ns_matches(const gx_cq *cq, const char *ns);
int gx_engine_obj_lq_cq(const gx_engine *e, int lq);     /* cq index of a local queue or -1 */
void gx_engine_obj_labels_free(gx_labels *l);
void gx_engine_obj_taints_free(gx_taint *t, int n);
void gx_engine_obj_tols_free(gx_toler *t, int n);
/* The string at o[k], NULL when absent or not a string. */
const char *gx_engine_obj_str(const json_t *o, const char *k);
/* metadata.name (a DNS subdomain) and, with ns, metadata.namespace ("default" when
 * need_ns and absent); -1 with err naming the field. */
int gx_engine_obj_check_name(const json_t *obj, int need_ns, const char **name, const char **ns, gx_err *err);
int gx_engine_obj_parse_taints(const json_t *a, gx_taint **out, int *n, const char *field, gx_err *err);
int gx_engine_obj_parse_labels(const json_t *o, gx_labels *out, const char *field, gx_err *err);
int gx_engine_obj_parse_tols(const json_t *a, gx_toler **out, int *n, const char *field, gx_err *err);
int gx_engine_obj_tolerates(const gx_taint *t, const gx_toler *tols, int n_tols);
const char *gx_engine_obj_label(const gx_labels *l, const char *k);
/* Required node affinity (nodeSelectorTerms, ORed) against labels; with only_keys,
 * expressions on other keys are ignored (Kueue's flavorSelector). 1 = matches. */
int gx_engine_obj_affinity_match(const json_t *terms, const gx_labels *labels, const gx_labels *only_keys);
int gx_engine_obj_parse_affinity(const json_t *spec, json_t **out, const char *field, gx_err *err);

/* engine_quota.c */
void gx_engine_quota_rebuild(gx_engine *e);
static inline void gx_engine_quota_ensure(gx_engine *e) { if (e->dirty) gx_engine_quota_rebuild(e); }
int64_t gx_engine_quota_available(const gx_engine *e, int node, int fr);
int64_t gx_engine_quota_potential(const gx_engine *e, int node, int fr);
int64_t gx_engine_quota_local(const gx_qnode *n, int fr);
void gx_engine_quota_add(gx_engine *e, int node, int fr, int64_t v);
void gx_engine_quota_sub(gx_engine *e, int node, int fr, int64_t v);
int gx_engine_quota_borrow_level(const gx_engine *e, int node, int fr, int64_t v, int *may_reclaim);
void gx_engine_quota_free(gx_engine *e);

/* engine_wl.c */
gx_wl *gx_engine_wl_get(const gx_engine *e, const char *key);
void gx_engine_wl_release(gx_engine *e, gx_wl *w);     /* give back quota + devices */
void gx_engine_wl_set_cond(gx_wl *w, int c, int status, const char *reason, char *msg, int64_t t);
void gx_engine_wl_clear_adm(gx_wl *w);
void gx_engine_wl_spec_clear(struct gx_wl_spec *s);
int64_t gx_engine_wl_pods(const gx_wl *w);

void gx_engine_wl_attach_orphans(gx_engine *e);
void gx_engine_wl_deactivate(gx_engine *e, gx_wl *w, const char *reason, char *msg, int64_t now);
void gx_engine_wl_evict(gx_engine *e, gx_wl *w, const char *reason, char *msg, int64_t now);

/* ---- flavor assignment (engine_assign.c) ----------------------------------------------- */

#define GX_MAX_REQ 32
#define GX_MAX_USE 96
/* Kueue's granular modes, worst to best */
enum { GX_M_NOFIT = 0, GX_M_NOCAND, GX_M_PREEMPT, GX_M_RECLAIM, GX_M_FIT };

typedef struct gx_assign {
    int mode;                    /* representative (worst) granular mode */
    int borrow;                  /* highest borrowing level */
    int32_t count[GX_MAX_PODSETS];
    int flv[GX_MAX_PODSETS][GX_MAX_REQ];      /* flavor id per podset request */
    int fmode[GX_MAX_PODSETS][GX_MAX_REQ];    /* granular mode per podset request */
    int n_use;
    int use_fr[GX_MAX_USE];
    int64_t use_amt[GX_MAX_USE];
    gx_why why;
} gx_assign;

/* Compute the flavor assignment of w in its cq for the given podset counts (NULL = full). */
void gx_engine_assign(gx_engine *e, const gx_wl *w, const int32_t *counts, gx_assign *a);
/* Do the assignment's usages still fit the queue's available quota right now? */
int gx_engine_assign_fits(const gx_engine *e, int cq, const gx_assign *a);

/* One head in a scheduling cycle. */
typedef struct gx_entry {
    int wi, cq;
    gx_assign a;
    int n_targets;
    int *targets;                /* workload indices to preempt (malloc'd) */
    int inadmissible;            /* not nominated: namespace, stopped LocalQueue */
} gx_entry;

/* engine_preempt.c: the preemption oracle, target search and issuing */
int gx_engine_preempt_simulate(gx_engine *e, int cq, const gx_wl *w, int fr, int64_t val, int *borrow);
void gx_engine_preempt_targets(gx_engine *e, int cq, const gx_wl *w, gx_assign *a, int **targets, int *n);
void gx_engine_preempt_issue(gx_engine *e, gx_wl *preemptor, const int *targets, int n, int64_t now);
void gx_engine_preempt_reserve(gx_engine *e, int cq, const gx_assign *a);
void gx_engine_reserve_begin(gx_engine *e);
void gx_engine_reserve_end(gx_engine *e);
/* Partial admission: largest pod counts >= minCount that fit or can preempt; 1 when found. */
int gx_engine_partial(gx_engine *e, const gx_wl *w, gx_assign *a, int32_t *counts, int **targets, int *n);

/* engine_fair.c: fair sharing (dominant resource share) */
/* Weighted DRS of a quota node with n amounts added (sign +1) or removed (-1);
 * 0 when not borrowing, INT64_MAX for weight 0 while borrowing. */
int64_t gx_engine_fair_drs(const gx_engine *e, int node, const int *fr, const int64_t *amt, int n, int sign);
/* Index of the next entry to process under fair sharing (tournament over the cohort
 * tree on the current state), among those with done[i] == 0; -1 when none. */
int gx_engine_fair_next(const gx_engine *e, const gx_entry *ents, int n, const char *done);
int gx_engine_fair_share_view(const gx_engine *e, int cq);   /* weightedShare, ceil */

/* engine_queue.c */
int gx_engine_queue_before(const gx_engine *e, const gx_wl *a, const gx_wl *b);
void gx_engine_queue_push(gx_engine *e, int cq, int wi);
int gx_engine_queue_pop(gx_engine *e, int cq);
void gx_engine_queue_remove(gx_engine *e, gx_wl *w);
void gx_engine_queue_park(gx_engine *e, int cq, int wi);      /* inadmissible set */
void gx_engine_queue_wake(gx_engine *e, int cq);              /* inadmissible -> heap */
void gx_engine_queue_wake_tree(gx_engine *e, int cq);         /* whole cohort tree */
void gx_engine_queue_wake_all(gx_engine *e);
void gx_engine_queue_free(gx_cq *cq);
/* pending workloads of a cq in queue order (active and parked); malloc'd */
int *gx_engine_queue_sorted(const gx_engine *e, int cq, int *n);
/* 0-based position of a pending workload in its ClusterQueue and LocalQueue */
void gx_engine_queue_position(const gx_engine *e, const gx_wl *w, int *pcq, int *plq);
uint64_t gx_engine_queue_hash(const gx_wl *w);
int gx_engine_queue_parked(const gx_cq *c);   /* pending workloads set aside (inadmissible) */
/* engine_counts.c: Kueue's label sets of the admitted and evicted counters */
void gx_engine_count_admit(gx_cq *cq, const gx_wl *w);
void gx_engine_count_evict(gx_cq *cq, const gx_wl *w, const char *reason, int deactivated);
void gx_engine_counts_view(const gx_cq *cq, json_t *o);
void gx_engine_lq_inadmissible(const gx_engine *e, int *per_lq);
static inline int gx_engine_queue_pending(const gx_cq *c) { return c->q.pending; }
static inline int gx_engine_queue_active(const gx_cq *c) { return c->q.gheap_n > 0; }

/* engine_place.c: whole-GPU placement (the seam for src/core/place*) */
int gx_engine_place_try(gx_engine *e, gx_wl *w, int commit, char *why, size_t why_n);
void gx_engine_place_release(gx_engine *e, gx_wl *w);
void gx_engine_place_node_free(gx_node *n);
int gx_engine_place_parse_node(const json_t *obj, gx_node *out, gx_err *err);
json_t *gx_engine_place_view(const gx_engine *e, const gx_wl *w);
/* Devices of pod `pod` of w (shared or whole GPUs): their count, the first max in out;
 * -1 when w has no placement or no such pod. gx_engine_wl_devices() and the view use it. */
int gx_engine_place_devs(const gx_engine *e, const gx_wl *w, int pod, gx_engine_dev *out, int max);
int gx_engine_place_restore(gx_engine *e, gx_wl *w, const json_t *placement);
/* Record pod `pod` of workload wi as a user of GPU g (share_place.c uses it too). */
void gx_engine_gpu_add_user(gx_gpu *g, int wi, int pod);

/* engine_sched.c */
void gx_engine_sched_act(gx_engine *e, gx_act_kind k, const gx_wl *w, const char *by,
                         const char *reason, const char *msg);
void gx_engine_sched_admit(gx_engine *e, gx_wl *w, const gx_assign *a, int64_t now, int emit);

/* engine_check.c: AdmissionChecks and the two-phase admission */
typedef struct gx_ac { char *name, *controller; json_t *manifest; } gx_ac;
typedef struct gx_cq_chk { char *name; int n_on; int *on; } gx_cq_chk;   /* on: flavor ids */
typedef struct gx_wl_chk { char *name; int state; char *msg; int64_t t; } gx_wl_chk;
int gx_engine_check_apply(gx_engine *e, const json_t *obj, gx_err *err);
int gx_engine_check_delete(gx_engine *e, const char *name, gx_err *err);
void gx_engine_check_add_objects(const gx_engine *e, json_t ***v, int *n, int *cap);
void gx_engine_check_free_all(gx_engine *e);
int gx_engine_check_parse_cq(gx_engine *e, const json_t *spec, gx_cq *c, gx_err *err);
void gx_engine_check_cq_free(gx_cq *c);
/* After quota was reserved: 1 when the workload now waits for checks, 0 when it has none. */
int gx_engine_check_reserve(gx_engine *e, gx_wl *w, int64_t now);
/* Every check Ready: the workload is Admitted (an ADMIT action when emit). */
void gx_engine_check_admit(gx_engine *e, gx_wl *w, int64_t now, int emit);
void gx_engine_check_pass(gx_engine *e, int64_t now);   /* admit those whose checks became Ready */
void gx_engine_check_reset(gx_engine *e, gx_wl *w, int64_t now);   /* eviction: back to Pending */
void gx_engine_check_wl_free(gx_wl *w);
void gx_engine_check_restore(gx_engine *e, gx_wl *w, const json_t *status, int64_t admitted_at);
int gx_engine_check_restoring(const json_t *status);   /* status of a workload waiting for checks? */
json_t *gx_engine_check_view(const gx_wl *w);           /* status.admissionChecks, NULL when none */

/* engine_rsv.c: bookings in admission (see engine.h) */
void gx_engine_rsv_pass(gx_engine *e, int64_t now);     /* start of schedule(): events, no-shows */
/* Must w (assignment a, in cq) wait because it would run into a booking's window? 1 = hold
 * (w->why filled). */
int gx_engine_rsv_hold(gx_engine *e, int cq, gx_wl *w, const gx_assign *a, int64_t now);
/* Does an active booking of cq cover n amounts of frs on top of its usage (so that it may
 * reclaim them from borrowers whatever its policy)? */
int gx_engine_rsv_covers(const gx_engine *e, int cq, const int *fr, const int64_t *amt, int n);
int64_t gx_engine_rsv_wakeup(const gx_engine *e, int64_t now);
void gx_engine_rsv_free(gx_engine *e);

/* engine_view.c */
char *gx_engine_view_why(const gx_engine *e, const gx_wl *w);

#endif
