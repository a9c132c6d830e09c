/* core/place_score: the classic placement scores the FGD paper compares against:
 * random, dot-product (Tetris alignment), GPU packing, GPU clustering, best-fit.
 * Owns: one score function per policy; each fills the GPUs the pod would take.
 * Must not: change nodes, do I/O, or draw randomness other than from the context. */
#include "core/place.h"

#define MAX_SPEC_CPU 128000   /* the largest node's CPU (milli), normalises scores */
#define MAX_SPEC_GPU 8000     /* the largest node's GPU (milli) */

/* The GPUs every policy but FGD takes: whole GPUs lowest index first, a shared GPU
 * by best fit. */
static bool default_pick(const gx_place_node *n, const gx_place_pod *pod, gx_place_assign *a)
{
    if (pod->num_gpu <= 0) { a->num = 0; a->milli = 0; return true; }
    if (pod->gpu_milli < GX_PLACE_MILLI) return gx_place_pick_share_bestfit(n, pod, a);
    return gx_place_pick_whole(n, pod, a);
}

/* Random: every feasible node draws a random 62-bit score; the largest wins, which is a
 * uniformly random feasible node. A sharing pod takes a random GPU that fits. */
int64_t gx_place_score_random(gx_place_ctx *cx, const gx_place_node *n,
                              const gx_place_pod *pod, gx_place_assign *a)
{
    default_pick(n, pod, a);
    if (pod->num_gpu == 1 && pod->gpu_milli < GX_PLACE_MILLI) {
        int fit[GX_PLACE_MAX_GPUS], nf = 0;
        for (int g = 0; g < n->num_gpus; g++)
            if (gx_place_gpu_ok(n, g, pod)) fit[nf++] = g;
        if (nf > 0) a->gpu[0] = fit[gx_place_rand(cx) % (uint64_t)nf];
    }
    return (int64_t)(gx_place_rand(cx) >> 2);
}

/* Dot-product (Tetris alignment, as configured in the FGD paper: CPU and GPU merged into
 * one (cpu, gpu) vector each, normalised by the largest node): the smaller the dot
 * product of the node's free resources and the request, the higher the score. */
int64_t gx_place_score_dot(gx_place_ctx *cx, const gx_place_node *n, const gx_place_pod *pod,
                           gx_place_assign *a)
{
    (void)cx;
    default_pick(n, pod, a);
    double cpu = ((double)n->cpu_free / MAX_SPEC_CPU) * ((double)pod->cpu_milli / MAX_SPEC_CPU);
    double gpu = ((double)gx_place_gpu_free_total(n) / MAX_SPEC_GPU) *
                 ((double)gx_place_pod_gpu_total(pod) / MAX_SPEC_GPU);
    return (int64_t)(100.0 * (1.0 - (cpu + gpu) / 2.0));
}

/* GPU packing: prefer (1) GPUs already shared, by least room left on them, (2) free GPUs
 * of a node already in use, by fewest such GPUs taken, (3) a wholly idle node, smaller
 * first. CPU-only pods score 0 everywhere. */
int64_t gx_place_score_packing(gx_place_ctx *cx, const gx_place_node *n,
                               const gx_place_pod *pod, gx_place_assign *a)
{
    (void)cx;
    default_pick(n, pod, a);
    if (pod->num_gpu <= 0) return 0;
    int full = 0;
    for (int g = 0; g < n->num_gpus; g++) full += n->gpu_free[g] == GX_PLACE_MILLI;
    if (full == n->num_gpus) {
        int64_t s = 100 / 3 - full;
        return s > full ? s : full;
    }
    int whole_used = 0;
    int64_t pct = 0;
    for (int k = 0; k < a->num; k++) {
        int32_t left = n->gpu_free[a->gpu[k]];
        whole_used += left == GX_PLACE_MILLI;
        pct += left * 100 / GX_PLACE_MILLI;
    }
    if (whole_used > 0) {
        int64_t s = 100 / 2 - whole_used;
        return s > 100 / 3 ? s : 100 / 3;
    }
    int64_t s = 100 - pct / 10;
    return s > 100 / 2 ? s : 100 / 2;
}

/* GPU clustering: nodes that already run pods of the same GPU shape (sharing, or k
 * whole GPUs)
 * first, nodes running only that shape above all; within a band, fuller nodes first. */
int64_t gx_place_score_clustering(gx_place_ctx *cx, const gx_place_node *n,
                                  const gx_place_pod *pod, gx_place_assign *a)
{
    (void)cx;
    default_pick(n, pod, a);
    if (pod->num_gpu <= 0) return 0;
    uint32_t tag = gx_place_pod_tag(pod);
    int64_t fill = 100 / 4 * (MAX_SPEC_GPU - gx_place_gpu_free_total(n)) / MAX_SPEC_GPU;
    int ntags = n->ntags < 0 ? GX_PLACE_MAX_TAGS + 1 : n->ntags;
    bool same = false;
    for (int i = 0; i < n->ntags; i++) same |= n->tag[i] == tag;
    if (same) return fill + (ntags == 1 ? 100 * 3 / 4 : 100 * 2 / 4);
    return fill + (ntags == 0 ? 100 / 4 : 0);
}

/* Best-fit: int(100 * (1 - 0.5 cpu_left/128000 - 0.5 gpu_left/8000)) after placing. */
int64_t gx_place_score_bestfit(gx_place_ctx *cx, const gx_place_node *n,
                               const gx_place_pod *pod, gx_place_assign *a)
{
    (void)cx;
    default_pick(n, pod, a);
    double cpu_left = (double)(n->cpu_free - pod->cpu_milli);
    double gpu_left = (double)(gx_place_gpu_free_total(n) - gx_place_pod_gpu_total(pod));
    double s = 0.5 * cpu_left / MAX_SPEC_CPU + 0.5 * gpu_left / MAX_SPEC_GPU;
    return (int64_t)((1.0 - s) * 100.0);
}
