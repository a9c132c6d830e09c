/* core/place: put one pod on concrete GPUs of one node (the placement engine).
 *
 * The daemon calls it to place an admitted workload on its node's GPUs; `gpuaas sim
 * trace` calls the very same functions to replay a 1,213-node cluster trace. Pure: no
 * I/O, no clock, no randomness of its own (the caller hands in a PRNG state), no
 * printf. Memory is allocated only by gx_place_ctx_new() and freed by
 * gx_place_ctx_free().
 *
 * Units: CPU in milli-CPU, memory in MiB, GPU in milli-GPU (1000 = one whole GPU).
 *
 * Typical use:
 *     gx_place_ctx *cx = gx_place_ctx_new(policy, workload_or_NULL, seed);
 *     gx_place_assign a;
 *     if (gx_place_choose(cx, nodes, n, order, &pod, &a) >= 0)
 *         gx_place_commit(cx, &nodes[a.node], &pod, &a);
 *     ...  gx_place_release(cx, &nodes[a.node], &pod, &a) when the pod ends.
 */
#ifndef GX_PLACE_H
#define GX_PLACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define GX_PLACE_MAX_GPUS   16  /* GPUs per node */
#define GX_PLACE_MAX_MODELS 64  /* distinct GPU model names (bit index in a mask) */
#define GX_PLACE_MAX_TAGS   8   /* distinct pod shapes tracked per node (gpu-clustering) */
#define GX_PLACE_MILLI      1000

/* GPU model names interned to small ids, so a pod's allowed models are a bitmask. */
typedef struct gx_place_models {
    int n;
    char name[GX_PLACE_MAX_MODELS][32];
} gx_place_models;

/* Returns the id of `name` (adding it), or -1 when the table is full or name is empty. */
int gx_place_model_id(gx_place_models *m, const char *name);
/* Parses "A|B|C" into a mask of ids (unknown names are added); "" gives 0 = any model.
 * Returns -1 when a name does not fit the table. */
int gx_place_models_mask(gx_place_models *m, const char *spec, uint64_t *mask);

/* One node: capacity, what is free now, and bookkeeping the policies read. */
typedef struct gx_place_node {
    int64_t cpu_milli, mem_mib;        /* capacity */
    int64_t cpu_free, mem_free;        /* free now */
    int model;                         /* gx_place_models id, -1 = unknown */
    int num_gpus;                      /* 0..GX_PLACE_MAX_GPUS */
    int32_t gpu_free[GX_PLACE_MAX_GPUS];     /* milli-GPU free per GPU, 0..1000 */
    int64_t gpu_mem_free[GX_PLACE_MAX_GPUS]; /* MiB free per GPU (HAMi gpumem); only
                                                checked for pods that ask for gpumem */
    int pods;                          /* pods placed here */
    /* pod shapes present (gpu-clustering): tag and count; ntags == -1 after overflow */
    int ntags;
    uint32_t tag[GX_PLACE_MAX_TAGS];
    int32_t tag_count[GX_PLACE_MAX_TAGS];
} gx_place_node;

/* Sets capacity, everything free, no pods. */
void gx_place_node_init(gx_place_node *n, int64_t cpu_milli, int64_t mem_mib, int model,
                        int num_gpus, int64_t gpu_mem_mib_each);

/* One request. A sharing pod has num_gpu == 1 and gpu_milli < 1000; a whole-GPU pod
 * has gpu_milli == 1000 and num_gpu >= 1 (it takes whole GPUs); CPU-only: num_gpu 0. */
typedef struct gx_place_pod {
    int64_t cpu_milli, mem_mib;
    int num_gpu;
    int gpu_milli;            /* per GPU: 1..1000 when num_gpu > 0 */
    int64_t gpu_mem_mib;      /* per GPU, 0 = not asked */
    uint64_t models;          /* allowed models (bit per gx_place_models id); 0 = any */
} gx_place_pod;

/* The GPU milli the pod asks for in all (num_gpu x gpu_milli). */
int64_t gx_place_pod_gpu_total(const gx_place_pod *p);

/* Where a pod goes. */
typedef struct gx_place_assign {
    int node;                         /* index into the node array; -1 = fits nowhere */
    int num;                          /* GPUs taken */
    int gpu[GX_PLACE_MAX_GPUS];       /* their indices on the node */
    int milli;                        /* milli taken on each of them */
    int score;                        /* the winning score (policy units) */
} gx_place_assign;

/* The workload's distribution of pod shapes (FGD's "target workload"): pod types with
 * their probabilities (summing to 1), most frequent first. FGD's fragmentation uses the
 * most frequent types that cover `coverage` of the pods (the paper: 0.95), renormalised;
 * our policy also looks at the rare ones (large pods that only few nodes can host). */
typedef struct gx_place_type {
    int64_t cpu_milli;
    int num_gpu, gpu_milli;
    uint64_t models;
    double p;
} gx_place_type;

typedef struct gx_place_workload {
    int n;
    gx_place_type *t;         /* owned by the caller */
    double coverage;          /* 0 = 0.95 */
} gx_place_workload;

/* Counts shapes among pods[0..n) and writes them into out[] (at most cap, most frequent
 * first; equal counts in order of first appearance) with p = their share of the pods.
 * Returns how many. */
int gx_place_workload_from_pods(const gx_place_pod *pods, size_t n, gx_place_type *out,
                                int cap);

typedef enum gx_place_policy_id {
    GX_PLACE_RANDOM,
    GX_PLACE_DOT_PRODUCT,
    GX_PLACE_GPU_PACKING,
    GX_PLACE_GPU_CLUSTERING,
    GX_PLACE_BEST_FIT,
    GX_PLACE_FGD,
    GX_PLACE_OURS,
    GX_PLACE_NPOLICIES
} gx_place_policy_id;

typedef struct gx_place_ctx gx_place_ctx;

/* A policy: its name, a one-line summary, and how it scores. */
typedef struct gx_place_policy {
    gx_place_policy_id id;
    const char *name;
    const char *summary;
    bool needs_workload;      /* uses gx_place_workload (fgd, ours) */
    /* Scores `pod` on node `n` (already known to fit) and fills the GPUs it would
     * take into a->gpu/num/milli. Higher is better; ties go to the earlier node. */
    int64_t (*score)(gx_place_ctx *cx, const gx_place_node *n, const gx_place_pod *pod,
                     gx_place_assign *a);
} gx_place_policy;

/* The policy the daemon uses unless told otherwise (the best measured one). */
#define GX_PLACE_DEFAULT_POLICY "ours"

/* NULL when unknown. gx_place_policy_names lists them "random, dot-product, ...". */
const gx_place_policy *gx_place_policy_by_name(const char *name);
const gx_place_policy *gx_place_policy_at(int i); /* 0..GX_PLACE_NPOLICIES-1 */
const char *gx_place_policy_names(void);

/* A placement context: the policy, the workload it assumes (copied; may be NULL, then
 * fgd/ours assume the pod being placed is the only type), a PRNG state for the random
 * policy, and caches. NULL on allocation failure or bad workload. */
gx_place_ctx *gx_place_ctx_new(const gx_place_policy *pol, const gx_place_workload *wl,
                               uint64_t seed);
void gx_place_ctx_free(gx_place_ctx *cx);
const gx_place_policy *gx_place_ctx_policy(const gx_place_ctx *cx);

/* Whether pod fits node n at all (CPU, memory, model, GPU room, GPU memory). */
bool gx_place_fits(const gx_place_node *n, const gx_place_pod *pod);

/* Chooses a node among nodes[0..count) and the GPUs on it. `order` is the tie order (a
 * permutation of 0..count-1; NULL = index order): among equal scores the node that
 * comes first in it wins. Fills *a and returns a->node, or -1 when nothing fits. */
int gx_place_choose(gx_place_ctx *cx, const gx_place_node *nodes, int count,
                    const int *order, const gx_place_pod *pod, gx_place_assign *a);

/* Applies / undoes an assignment on its node. Release must get the same pod and
 * assignment that commit got. Returns false (and changes nothing) if it does not apply. */
bool gx_place_commit(gx_place_ctx *cx, gx_place_node *n, const gx_place_pod *pod,
                     const gx_place_assign *a);
bool gx_place_release(gx_place_ctx *cx, gx_place_node *n, const gx_place_pod *pod,
                      const gx_place_assign *a);

/* FGD's fragmentation of a node (expected fragmented idle milli-GPU under the
 * context's workload); exported for tests and reports. */
double gx_place_frag(gx_place_ctx *cx, const gx_place_node *n);

/* ---- Internal to src/core/place*.c (not an API for other modules) ---------------- */

/* An open-addressing cache of node fragmentation keyed by the node's state. */
typedef struct gx_place_fcache_ent {
    uint64_t k0, k1, k2;      /* k0 == 0: empty slot */
    double f, fill;           /* FGD's fragmentation; fill-fragmentation (place_ours.c) */
} gx_place_fcache_ent;

#define GX_PLACE_MAX_CLASSES 64

/* Nodes of the same capacity (CPU, memory, GPUs, model) form a class (ours). */
typedef struct gx_place_class {
    int64_t cpu_milli, mem_mib;
    int num_gpus, model;
    int count;
} gx_place_class;

/* Memo of a node's score for one pod shape, valid while the node's state hash matches. */
typedef struct gx_place_memo {
    uint64_t h;               /* 0 = empty */
    int64_t score;
    int32_t gpu;              /* the shared GPU chosen (sharing pods) */
} gx_place_memo;

#define GX_PLACE_MAX_SHAPES 512

typedef struct gx_place_shape {
    int64_t cpu_milli, gpu_mem_mib;
    int num_gpu, gpu_milli;
    gx_place_memo *memo;      /* one per node */
} gx_place_shape;

struct gx_place_ctx {
    const gx_place_policy *pol;
    int ntypes;
    gx_place_type *types;     /* FGD's types: those covering `coverage`, renormalised */
    double *fillw;            /* per FGD type: a one-GPU type's part of the GPU demand,
                                 0 for multi-GPU types (ours' fill tie-break) */
    double *value;            /* ours: value[r], r = 0..1000: what a GPU with r milli
                                 free can still earn from the FGD types' shares at the
                                 cutting-stock LP's prices (NULL without a workload) */
    int nall;
    gx_place_type *all;       /* every type of the workload */
    /* node classes and reserved nodes (ours): recomputed when the node array, its size
     * or the tie order changes */
    const gx_place_node *cls_base;
    const int *cls_order;
    int cls_count, ncls;
    int *node_cls;            /* class of each node, -1 = unclassified */
    unsigned char *node_res;  /* 1: reserved for a rare pod shape while empty */
    gx_place_class cls[GX_PLACE_MAX_CLASSES];
    const gx_place_node *base;   /* the node array of the gx_place_choose call running */
    /* score memo (fgd, ours): per pod shape, per node; reset when the node array moves */
    const gx_place_node *memo_base;
    const int *memo_order;
    int memo_count, nshapes;
    gx_place_shape *shapes;
    uint64_t rng[4];          /* xoshiro256** state (random policy) */
    gx_place_fcache_ent *fc;  /* fragmentation cache, fc_mask + 1 slots */
    size_t fc_mask, fc_used;
    uint64_t fc_hits, fc_misses;
};

uint64_t gx_place_rand(gx_place_ctx *cx);
/* Called by gx_place_ctx_new for ours with a workload: builds cx->value. -1: no memory. */
int gx_place_ours_init(gx_place_ctx *cx);
/* value[0..1000] (milli-GPU): the best fill of each free share at the dual prices of the
 * cutting-stock LP of the types' sharing pods (place_lp.c); *gpus_per_pod (if not NULL):
 * the LP's optimum, GPUs per sharing pod of the mix. 0, or -1: no memory. */
int gx_place_lp_values(const gx_place_type *types, int ntypes, double *value,
                       double *gpus_per_pod);
/* Called by gx_place_choose before scoring: lets ours classify the nodes. */
void gx_place_ours_prepare(gx_place_ctx *cx, const gx_place_node *nodes, int count,
                           const int *order);
uint32_t gx_place_pod_tag(const gx_place_pod *pod);
/* GPU pickers shared by the policies; both return false when the pod does not fit. */
bool gx_place_pick_whole(const gx_place_node *n, const gx_place_pod *pod, gx_place_assign *a);
bool gx_place_pick_share_bestfit(const gx_place_node *n, const gx_place_pod *pod,
                                 gx_place_assign *a);
bool gx_place_gpu_ok(const gx_place_node *n, int g, const gx_place_pod *pod);
int64_t gx_place_gpu_free_total(const gx_place_node *n);
/* FGD's fragmentation of the state "node n after taking pod on assignment a" (a may be
 * NULL: the node as it is); *fill gets the fill-fragmentation of that state. */
double gx_place_measure_after(gx_place_ctx *cx, const gx_place_node *n,
                              const gx_place_pod *pod, const gx_place_assign *a,
                              double *fill);

int64_t gx_place_score_random(gx_place_ctx *, const gx_place_node *, const gx_place_pod *,
                              gx_place_assign *);
int64_t gx_place_score_dot(gx_place_ctx *, const gx_place_node *, const gx_place_pod *,
                           gx_place_assign *);
int64_t gx_place_score_packing(gx_place_ctx *, const gx_place_node *, const gx_place_pod *,
                               gx_place_assign *);
int64_t gx_place_score_clustering(gx_place_ctx *, const gx_place_node *,
                                  const gx_place_pod *, gx_place_assign *);
int64_t gx_place_score_bestfit(gx_place_ctx *, const gx_place_node *, const gx_place_pod *,
                               gx_place_assign *);
int64_t gx_place_score_fgd(gx_place_ctx *, const gx_place_node *, const gx_place_pod *,
                           gx_place_assign *);
int64_t gx_place_score_ours(gx_place_ctx *, const gx_place_node *, const gx_place_pod *,
                            gx_place_assign *);

#endif
