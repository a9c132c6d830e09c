/* core/place: the placement engine's frame: node and pod model, feasibility, the
 * choose loop with its fixed tie order, commit/release, the policy table and the
 * context (workload copy, PRNG state, caches).
 * Owns: everything in place.h that is not a policy's score (place_score.c holds the
 * classic scores, place_frag.c FGD's fragmentation, place_ours.c our policy).
 * Must not: do I/O, read a clock, seed itself from anything but the caller's seed, or
 * print. Allocates only in gx_place_ctx_new(). */
#include <stdlib.h>
#include <string.h>

#include "core/place.h"
#include "lib/alloc.h"
#include "lib/rng.h"

/* ---- models ------------------------------------------------------------------------ */

int gx_place_model_id(gx_place_models *m, const char *name)
{
    if (!name || !*name) return -1;
    for (int i = 0; i < m->n; i++)
        if (!strcmp(m->name[i], name)) return i;
    if (m->n >= GX_PLACE_MAX_MODELS || strlen(name) >= sizeof m->name[0]) return -1;
    strcpy(m->name[m->n], name);
    return m->n++;
}

int gx_place_models_mask(gx_place_models *m, const char *spec, uint64_t *mask)
{
    *mask = 0;
    const char *s = spec ? spec : "";
    while (*s) {
        const char *e = strchr(s, '|');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        if (len > 0) {
            char buf[32];
            if (len >= sizeof buf) return -1;
            memcpy(buf, s, len);
            buf[len] = 0;
            int id = gx_place_model_id(m, buf);
            if (id < 0) return -1;
            *mask |= UINT64_C(1) << id;
        }
        s += len;
        if (*s == '|') s++;
    }
    return 0;
}

/* ---- nodes and pods ---------------------------------------------------------------- */

void gx_place_node_init(gx_place_node *n, int64_t cpu_milli, int64_t mem_mib, int model,
                        int num_gpus, int64_t gpu_mem_mib_each)
{
    memset(n, 0, sizeof *n);
    n->cpu_milli = n->cpu_free = cpu_milli;
    n->mem_mib = n->mem_free = mem_mib;
    n->model = model;
    if (num_gpus < 0) num_gpus = 0;
    if (num_gpus > GX_PLACE_MAX_GPUS) num_gpus = GX_PLACE_MAX_GPUS;
    n->num_gpus = num_gpus;
    for (int g = 0; g < num_gpus; g++) {
        n->gpu_free[g] = GX_PLACE_MILLI;
        n->gpu_mem_free[g] = gpu_mem_mib_each;
    }
}

int64_t gx_place_pod_gpu_total(const gx_place_pod *p)
{
    return p->num_gpu > 0 ? (int64_t)p->num_gpu * p->gpu_milli : 0;
}

int64_t gx_place_gpu_free_total(const gx_place_node *n)
{
    int64_t s = 0;
    for (int g = 0; g < n->num_gpus; g++) s += n->gpu_free[g];
    return s;
}

bool gx_place_gpu_ok(const gx_place_node *n, int g, const gx_place_pod *pod)
{
    return n->gpu_free[g] >= pod->gpu_milli &&
           (pod->gpu_mem_mib <= 0 || n->gpu_mem_free[g] >= pod->gpu_mem_mib);
}

/* Whole-GPU pods take the lowest-index wholly free GPUs. */
bool gx_place_pick_whole(const gx_place_node *n, const gx_place_pod *pod, gx_place_assign *a)
{
    a->num = 0;
    a->milli = GX_PLACE_MILLI;
    for (int g = 0; g < n->num_gpus && a->num < pod->num_gpu; g++)
        if (n->gpu_free[g] == GX_PLACE_MILLI && gx_place_gpu_ok(n, g, pod)) a->gpu[a->num++] = g;
    return a->num == pod->num_gpu;
}

/* A sharing pod on the GPU with the least room that still fits (lowest index on ties). */
bool gx_place_pick_share_bestfit(const gx_place_node *n, const gx_place_pod *pod,
                                 gx_place_assign *a)
{
    int best = -1;
    for (int g = 0; g < n->num_gpus; g++)
        if (gx_place_gpu_ok(n, g, pod) && (best < 0 || n->gpu_free[g] < n->gpu_free[best]))
            best = g;
    a->num = best >= 0 ? 1 : 0;
    a->gpu[0] = best;
    a->milli = pod->gpu_milli;
    return best >= 0;
}

bool gx_place_fits(const gx_place_node *n, const gx_place_pod *pod)
{
    if (n->cpu_free < pod->cpu_milli || n->mem_free < pod->mem_mib) return false;
    if (pod->num_gpu <= 0) return true;
    if (pod->num_gpu > n->num_gpus) return false;
    if (pod->models && (n->model < 0 || !(pod->models & (UINT64_C(1) << n->model))))
        return false;
    if (pod->gpu_milli < GX_PLACE_MILLI) {
        for (int g = 0; g < n->num_gpus; g++)
            if (gx_place_gpu_ok(n, g, pod)) return true;
        return false;
    }
    int whole = 0;
    for (int g = 0; g < n->num_gpus; g++)
        if (n->gpu_free[g] == GX_PLACE_MILLI && gx_place_gpu_ok(n, g, pod)) whole++;
    return whole >= pod->num_gpu;
}

/* ---- choose, commit, release ------------------------------------------------------- */

/* ---- score memo ---------------------------------------------------------------------
 * A node's score for a pod depends only on the node's state and the pod's shape, and a
 * placement changes one node; so fgd and ours remember each node's score per shape
 * under a hash of the node's state, and recompute only nodes that changed. */

static uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v + UINT64_C(0x9E3779B97F4A7C15) + (h << 6) + (h >> 2);
    return h * UINT64_C(0xBF58476D1CE4E5B9);
}

static uint64_t state_hash(const gx_place_node *n)
{
    uint64_t h = mix((uint64_t)n->cpu_free, (uint64_t)(n->model + 2) << 8 |
                     (uint64_t)n->num_gpus << 1 | (n->pods > 0));
    h = mix(h, (uint64_t)n->cpu_milli ^ (uint64_t)n->mem_mib << 24);
    for (int g = 0; g < n->num_gpus; g++)
        h = mix(h, (uint64_t)n->gpu_free[g] << 40 ^ (uint64_t)n->gpu_mem_free[g]);
    return h | 1;
}

static void memo_reset(gx_place_ctx *cx, const gx_place_node *nodes, int count)
{
    for (int i = 0; i < cx->nshapes; i++) free(cx->shapes[i].memo);
    cx->nshapes = 0;
    cx->memo_base = nodes;
    cx->memo_count = count;
}

/* The memo row of this pod's shape, or NULL (no memo: table full, out of memory). */
static gx_place_memo *memo_row(gx_place_ctx *cx, const gx_place_node *nodes, int count,
                               const int *order, const gx_place_pod *pod)
{
    if (!cx->pol->needs_workload || count <= 0) return NULL;
    if (!cx->shapes) {
        cx->shapes = gx_xcalloc(GX_PLACE_MAX_SHAPES, sizeof *cx->shapes);
    }
    if (cx->memo_base != nodes || cx->memo_count != count || cx->memo_order != order) {
        memo_reset(cx, nodes, count);      /* ours' scores depend on the order too */
        cx->memo_order = order;
    }
    for (int i = 0; i < cx->nshapes; i++) {
        const gx_place_shape *sh = &cx->shapes[i];
        if (sh->cpu_milli == pod->cpu_milli && sh->num_gpu == pod->num_gpu &&
            sh->gpu_milli == pod->gpu_milli && sh->gpu_mem_mib == pod->gpu_mem_mib)
            return sh->memo;
    }
    if (cx->nshapes == GX_PLACE_MAX_SHAPES) return NULL;
    gx_place_memo *m = gx_xcalloc((size_t)count, sizeof *m);
    cx->shapes[cx->nshapes++] = (gx_place_shape){ pod->cpu_milli, pod->gpu_mem_mib,
                                                  pod->num_gpu, pod->gpu_milli, m };
    return m;
}

static int64_t score_node(gx_place_ctx *cx, gx_place_memo *m, const gx_place_node *n,
                          const gx_place_pod *pod, gx_place_assign *a)
{
    if (!m) return cx->pol->score(cx, n, pod, a);
    uint64_t h = state_hash(n);
    if (m->h == h) {
        if (pod->num_gpu <= 0) a->num = 0;
        else if (pod->gpu_milli < GX_PLACE_MILLI) {
            a->num = 1;
            a->gpu[0] = m->gpu;
            a->milli = pod->gpu_milli;
        } else gx_place_pick_whole(n, pod, a);
        return m->score;
    }
    int64_t s = cx->pol->score(cx, n, pod, a);
    m->h = h;
    m->score = s;
    m->gpu = a->num > 0 ? a->gpu[0] : -1;
    return s;
}

int gx_place_choose(gx_place_ctx *cx, const gx_place_node *nodes, int count,
                    const int *order, const gx_place_pod *pod, gx_place_assign *a)
{
    memset(a, 0, sizeof *a);
    a->node = -1;
    bool bad_pod = pod->num_gpu < 0 || pod->num_gpu > GX_PLACE_MAX_GPUS ||
                   (pod->num_gpu > 0 && (pod->gpu_milli <= 0 || pod->gpu_milli > GX_PLACE_MILLI)) ||
                   (pod->num_gpu > 1 && pod->gpu_milli != GX_PLACE_MILLI);
    if (bad_pod) return -1;
    int64_t best = INT64_MIN;
    gx_place_assign tmp;
    cx->base = nodes;
    if (cx->pol->id == GX_PLACE_OURS) gx_place_ours_prepare(cx, nodes, count, order);
    gx_place_memo *row = memo_row(cx, nodes, count, order, pod);
    for (int k = 0; k < count; k++) {
        int i = order ? order[k] : k;
        if (!gx_place_fits(&nodes[i], pod)) continue;
        tmp.num = 0;
        int64_t s = score_node(cx, row ? &row[i] : NULL, &nodes[i], pod, &tmp);
        if (s > best) {
            best = s;
            *a = tmp;
            a->node = i;
            a->score = s > INT32_MAX ? INT32_MAX : (s < INT32_MIN ? INT32_MIN : (int)s);
        }
    }
    return a->node;
}

/* A pod's GPU shape for gpu-clustering: "shares a GPU" or "takes k whole GPUs". */
uint32_t gx_place_pod_tag(const gx_place_pod *pod)
{
    return pod->gpu_milli < GX_PLACE_MILLI ? 1u : (uint32_t)pod->num_gpu << 1;
}

static void tag_add(gx_place_node *n, uint32_t tag, int d)
{
    if (n->ntags < 0) return;
    for (int i = 0; i < n->ntags; i++) {
        if (n->tag[i] != tag) continue;
        n->tag_count[i] += d;
        if (n->tag_count[i] <= 0) {     /* drop it, keep the array dense */
            n->ntags--;
            n->tag[i] = n->tag[n->ntags];
            n->tag_count[i] = n->tag_count[n->ntags];
            n->tag[n->ntags] = 0;
            n->tag_count[n->ntags] = 0;
        }
        return;
    }
    if (d <= 0) return;
    if (n->ntags == GX_PLACE_MAX_TAGS) { n->ntags = -1; return; }
    n->tag[n->ntags] = tag;
    n->tag_count[n->ntags++] = d;
}

static bool assign_valid(const gx_place_node *n, const gx_place_pod *pod,
                         const gx_place_assign *a)
{
    if (pod->num_gpu <= 0) return a->num == 0;
    if (a->num != pod->num_gpu || a->milli != pod->gpu_milli) return false;
    for (int k = 0; k < a->num; k++)
        if (a->gpu[k] < 0 || a->gpu[k] >= n->num_gpus) return false;
    return true;
}

bool gx_place_commit(gx_place_ctx *cx, gx_place_node *n, const gx_place_pod *pod,
                     const gx_place_assign *a)
{
    (void)cx;
    if (!assign_valid(n, pod, a) || n->cpu_free < pod->cpu_milli || n->mem_free < pod->mem_mib)
        return false;
    for (int k = 0; k < a->num; k++)
        if (!gx_place_gpu_ok(n, a->gpu[k], pod)) return false;
    n->cpu_free -= pod->cpu_milli;
    n->mem_free -= pod->mem_mib;
    for (int k = 0; k < a->num; k++) {
        n->gpu_free[a->gpu[k]] -= a->milli;
        n->gpu_mem_free[a->gpu[k]] -= pod->gpu_mem_mib;
    }
    n->pods++;
    if (pod->num_gpu > 0) tag_add(n, gx_place_pod_tag(pod), 1);
    return true;
}

bool gx_place_release(gx_place_ctx *cx, gx_place_node *n, const gx_place_pod *pod,
                      const gx_place_assign *a)
{
    (void)cx;
    if (!assign_valid(n, pod, a) || n->pods <= 0 ||
        n->cpu_free + pod->cpu_milli > n->cpu_milli || n->mem_free + pod->mem_mib > n->mem_mib)
        return false;
    for (int k = 0; k < a->num; k++)
        if (n->gpu_free[a->gpu[k]] + a->milli > GX_PLACE_MILLI) return false;
    n->cpu_free += pod->cpu_milli;
    n->mem_free += pod->mem_mib;
    for (int k = 0; k < a->num; k++) {
        n->gpu_free[a->gpu[k]] += a->milli;
        n->gpu_mem_free[a->gpu[k]] += pod->gpu_mem_mib;
    }
    n->pods--;
    if (pod->num_gpu > 0) tag_add(n, gx_place_pod_tag(pod), -1);
    return true;
}

/* ---- policies ---------------------------------------------------------------------- */

static const gx_place_policy policies[GX_PLACE_NPOLICIES] = {
    { GX_PLACE_RANDOM, "random", "a uniformly random feasible node", false,
      gx_place_score_random },
    { GX_PLACE_DOT_PRODUCT, "dot-product",
      "Tetris alignment: smallest dot product of free resources and request", false,
      gx_place_score_dot },
    { GX_PLACE_GPU_PACKING, "gpu-packing",
      "shared GPUs first, then free GPUs of used nodes, then idle nodes", false,
      gx_place_score_packing },
    { GX_PLACE_GPU_CLUSTERING, "gpu-clustering",
      "nodes already running pods of the same GPU shape first", false,
      gx_place_score_clustering },
    { GX_PLACE_BEST_FIT, "best-fit", "least CPU and GPU left over after placing", false,
      gx_place_score_bestfit },
    { GX_PLACE_FGD, "fgd",
      "fragmentation gradient descent (Weng et al., ATC'23): least growth of "
      "expected fragmented GPU", true, gx_place_score_fgd },
    { GX_PLACE_OURS, "ours",
      "keep a few homes of rare big pod shapes empty, then least share value lost "
      "(the cutting-stock LP's prices of the workload's shares), then FGD's score, "
      "then least growth of fill-fragmentation (GPU that CPU or packing leaves "
      "unusable)", true,
      gx_place_score_ours },
};

const gx_place_policy *gx_place_policy_by_name(const char *name)
{
    if (!name) return NULL;
    for (int i = 0; i < GX_PLACE_NPOLICIES; i++)
        if (!strcmp(policies[i].name, name)) return &policies[i];
    return NULL;
}

const gx_place_policy *gx_place_policy_at(int i)
{
    return i >= 0 && i < GX_PLACE_NPOLICIES ? &policies[i] : NULL;
}

const char *gx_place_policy_names(void)
{
    return "random, dot-product, gpu-packing, gpu-clustering, best-fit, fgd, ours";
}

/* ---- context ----------------------------------------------------------------------- */

/* xoshiro256** seeded through splitmix64 (lib/rng), so a seed gives the same run anywhere. */
uint64_t gx_place_rand(gx_place_ctx *cx) { return gx_rng_next(cx->rng); }

#define FCACHE_SLOTS (1u << 16)

/* Copies the workload: all types, and FGD's most frequent ones covering `coverage`. */
static int set_workload(gx_place_ctx *cx, const gx_place_workload *wl)
{
    double total = 0, coverage = wl->coverage > 0 ? wl->coverage : 0.95;
    for (int i = 0; i < wl->n; i++) {
        if (!(wl->t[i].p >= 0)) return -1;
        total += wl->t[i].p;
    }
    if (total <= 0) return -1;
    cx->all = gx_xcalloc((size_t)wl->n, sizeof *cx->all);
    cx->types = gx_xcalloc((size_t)wl->n, sizeof *cx->types);
    memcpy(cx->all, wl->t, (size_t)wl->n * sizeof *cx->all);
    cx->nall = wl->n;
    for (int i = 0; i < cx->nall; i++) cx->all[i].p /= total;
    double got = 0;
    while (cx->ntypes < cx->nall && got < coverage - 1e-9) {
        cx->types[cx->ntypes] = cx->all[cx->ntypes];
        got += cx->all[cx->ntypes++].p;
    }
    for (int i = 0; i < cx->ntypes; i++) cx->types[i].p /= got;
    /* ours weighs the fill-fragmentation of a one-GPU type (a share or a whole GPU) by
     * its part of all the GPU demand; multi-GPU types weigh nothing there: whether a
     * node still has room for them is FGD's score, and counting it twice breaks FGD's
     * ties away from the fixed order (0.1 point lost where half the GPU pods take
     * several GPUs). Where they dominate, the rule weighs little and FGD decides. */
    cx->fillw = gx_xcalloc((size_t)cx->ntypes, sizeof *cx->fillw);
    double demand = 0;
    for (int i = 0; i < cx->ntypes; i++)
        demand += cx->types[i].p * cx->types[i].num_gpu * cx->types[i].gpu_milli;
    for (int i = 0; i < cx->ntypes && demand > 0; i++)
        if (cx->types[i].num_gpu == 1)
            cx->fillw[i] = cx->types[i].p * cx->types[i].gpu_milli / demand;
    return 0;
}

gx_place_ctx *gx_place_ctx_new(const gx_place_policy *pol, const gx_place_workload *wl,
                               uint64_t seed)
{
    if (!pol) return NULL;
    gx_place_ctx *cx = gx_xcalloc(1, sizeof *cx);
    cx->pol = pol;
    gx_rng_seed(cx->rng, seed);
    if (wl && wl->n > 0 && set_workload(cx, wl)) goto fail;
    if (pol->id == GX_PLACE_OURS && cx->ntypes > 0 && gx_place_ours_init(cx)) goto fail;
    if (pol->needs_workload) {
        cx->fc = gx_xcalloc(FCACHE_SLOTS, sizeof *cx->fc);
        cx->fc_mask = FCACHE_SLOTS - 1;
    }
    return cx;
fail:
    gx_place_ctx_free(cx);
    return NULL;
}

void gx_place_ctx_free(gx_place_ctx *cx)
{
    if (!cx) return;
    free(cx->types);
    free(cx->all);
    free(cx->fillw);
    free(cx->value);
    free(cx->node_cls);
    free(cx->node_res);
    if (cx->shapes) memo_reset(cx, NULL, 0);
    free(cx->shapes);
    free(cx->fc);
    free(cx);
}

const gx_place_policy *gx_place_ctx_policy(const gx_place_ctx *cx) { return cx->pol; }
