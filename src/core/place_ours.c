/* core/place_ours: our placement policy ("ours"), built on FGD's fragmentation measure.
 * Owns: gx_place_score_ours, the nodes it reserves (gx_place_ours_prepare) and its
 * table of what a GPU's free share is worth (gx_place_ours_init; core/place_lp.c prices it).
 * Must not: change nodes, do I/O, or keep state outside the context.
 *
 * The key, compared lexicographically (the first node in the tie order wins ties):
 *   1. Not an empty reserved node. A pod shape that at most 1/10 of the nodes can host
 *      even when empty (8 GPUs with 120 CPUs, a pod pinned to a rare GPU model) gets
 *      some of its hosts reserved: four times as many as such pods are expected while
 *      the cluster fills once. An empty reserved node is opened only when the pod fits
 *      nowhere else, so the pods that need it still find it late; once in use it is
 *      filled like any other node.
 *   2. The least value lost, in steps of 1/100 GPU. The cutting-stock LP of the
 *      workload's sharing pods prices each share size (core/place_lp.c); value[r] is the
 *      most a GPU with r milli free can still earn at those prices. A share of s put on
 *      a GPU with r free loses value[r] - value[r - s]: its own price when the GPU can
 *      still be completed as in an optimal packing, more when it spoils the GPU (a 0.32
 *      on the 0.53 left by a 0.47 leaves 0.21 that almost nothing fills, where a 0.47
 *      would have left 0.06). Whole-GPU and CPU-only pods lose the same everywhere, so
 *      for them the next rules decide. FGD judges a hole by the next pod only and counts
 *      a GPU's part share as lost to the whole-GPU pods, so it fills the 0.53 with the
 *      0.32 (the replay: 96.05 %, against 95.77 % with the random-fill hole model this
 *      rule replaced).
 *   3. FGD's integer score int(100 sigmoid((F_before - F_after) / 1000)), F the expected
 *      idle GPU the next pod could not use. Its coarse integer steps tie many nodes, and
 *      taking the first of them in the fixed order packs load onto few nodes (most of
 *      FGD's edge: ranking by the exact gradient gives about 92 %).
 *   4. The least growth of the fill-fragmentation, in steps of 1/10 GPU: the idle GPU
 *      that would stay idle if pods of each one-GPU type kept arriving until the node is
 *      full, limited by GPU room and by free CPU alike, each type weighted by its part of
 *      all the GPU demand (multi-GPU types are FGD's to judge; see set_workload). FGD looks one pod ahead and ignores CPU once a type fits; this sees
 *      CPU-starved GPUs (a node whose CPUs are gone strands its GPUs) and the leftovers a
 *      type cannot pack (two 470s leave 60 of a GPU). The steps keep small differences
 *      tied, so the fixed order still consolidates load.
 * A sharing pod takes, within the node, the GPU that is best by the same key. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "core/place.h"
#include "lib/alloc.h"

static bool class_hosts(const gx_place_class *c, const gx_place_type *t)
{
    if (c->cpu_milli < t->cpu_milli || c->num_gpus < t->num_gpu) return false;
    if (t->num_gpu > 0 && t->models && (c->model < 0 || !(t->models & (UINT64_C(1) << c->model))))
        return false;
    return true;
}

static int find_class(gx_place_ctx *cx, const gx_place_node *n)
{
    for (int c = 0; c < cx->ncls; c++) {
        const gx_place_class *k = &cx->cls[c];
        if (k->cpu_milli == n->cpu_milli && k->mem_mib == n->mem_mib &&
            k->num_gpus == n->num_gpus && k->model == n->model)
            return c;
    }
    if (cx->ncls == GX_PLACE_MAX_CLASSES) return -1;
    cx->cls[cx->ncls] = (gx_place_class){ n->cpu_milli, n->mem_mib, n->num_gpus, n->model, 0 };
    return cx->ncls++;
}

/* The expected number of type-t pods while the cluster fills up once: t's share of the
 * pods times the pods the cluster's GPUs hold at the workload's mean GPU per pod. */
static double expected_pods(const gx_place_ctx *cx, const gx_place_type *t, double gpu_milli)
{
    double mean = 0;
    for (int i = 0; i < cx->nall; i++)
        mean += cx->all[i].p * cx->all[i].num_gpu * cx->all[i].gpu_milli;
    return mean > 0 ? t->p * gpu_milli / mean : 0;
}

/* Marks the reserved nodes. A pod type is rare when at most a tenth of the nodes can host
 * it even empty (8 GPUs with 120 CPUs; a pod pinned to a rare GPU model). Of its hosts,
 * the last ones in the tie order are reserved for it: four times as many as such pods
 * are expected while the cluster fills once (a margin for bursts and for running past
 * full), so the rest of its hosts serve everyone. Redone when the node array, its size
 * or the order changes. */
void gx_place_ours_prepare(gx_place_ctx *cx, const gx_place_node *nodes, int count,
                           const int *order)
{
    if (cx->cls_base == nodes && cx->cls_count == count && cx->cls_order == order) return;
    free(cx->node_cls);
    free(cx->node_res);
    size_t sz = (size_t)(count > 0 ? count : 1);
    cx->node_cls = gx_xmalloc(sz * sizeof *cx->node_cls);
    cx->node_res = gx_xcalloc(sz, sizeof *cx->node_res);
    cx->cls_base = nodes;
    cx->cls_count = count;
    cx->cls_order = order;
    cx->ncls = 0;
    double gpus = 0;
    for (int i = 0; i < count; i++) {
        int c = find_class(cx, &nodes[i]);
        cx->node_cls[i] = c;
        if (c >= 0) cx->cls[c].count++;
        gpus += nodes[i].num_gpus * (double)GX_PLACE_MILLI;
    }
    for (int t = 0; t < cx->nall; t++) {
        const gx_place_type *ty = &cx->all[t];
        if (ty->num_gpu <= 0) continue;
        int hosts = 0;
        for (int c = 0; c < cx->ncls; c++)
            if (class_hosts(&cx->cls[c], ty)) hosts += cx->cls[c].count;
        if (hosts == 0 || hosts * 10 > count) continue;
        int k = (int)ceil(4.0 * expected_pods(cx, ty, gpus));
        for (int j = count - 1; j >= 0 && k > 0; j--) {
            int i = order ? order[j] : j;
            if (i < 0 || i >= count || cx->node_cls[i] < 0) continue;
            if (class_hosts(&cx->cls[cx->node_cls[i]], ty)) {
                cx->node_res[i] = 1;
                k--;
            }
        }
    }
}

/* A caller may reuse one node array for other nodes: a node whose capacity no longer
 * matches its class forces the classes to be rebuilt at the next gx_place_choose. */
static bool node_reserved(gx_place_ctx *cx, const gx_place_node *n)
{
    if (!cx->node_cls || !cx->node_res || cx->base != cx->cls_base) return false;
    ptrdiff_t i = n - cx->base;
    if (i < 0 || i >= cx->cls_count || cx->node_cls[i] < 0) return false;
    const gx_place_class *k = &cx->cls[cx->node_cls[i]];
    if (k->cpu_milli != n->cpu_milli || k->mem_mib != n->mem_mib ||
        k->num_gpus != n->num_gpus || k->model != n->model) {
        cx->cls_count = -1;
        return false;
    }
    return cx->node_res[i];
}

/* value[r] for r = 0..1000: what a GPU with r milli free can still earn from the
 * workload's sharing pods at the cutting-stock LP's prices (core/place_lp.c). Built from
 * FGD's types, the common ones; a rarer share is placed by the same table. */
int gx_place_ours_init(gx_place_ctx *cx)
{
    cx->value = gx_xcalloc(GX_PLACE_MILLI + 1, sizeof *cx->value);
    return gx_place_lp_values(cx->types, cx->ntypes, cx->value, NULL);
}

/* What node n's GPUs lose of that value with assignment a: for a share of s on a GPU
 * with r free value[r] - value[r - s], at least the pod's own price; the excess is what
 * the placement gives up against the best packing of the mix. A whole GPU loses 1000
 * wherever it is taken, a CPU-only pod nothing. */
static double value_lost(const gx_place_ctx *cx, const gx_place_node *n, const gx_place_assign *a)
{
    if (!cx->value || !a) return 0;
    double lost = 0;
    for (int k = 0; k < a->num; k++) {
        int32_t r = n->gpu_free[a->gpu[k]];
        int32_t after = r - a->milli;
        if (r > GX_PLACE_MILLI) r = GX_PLACE_MILLI;
        if (after < 0) after = 0;
        if (after > r) after = r;
        lost += cx->value[r] - cx->value[after];
    }
    return lost;
}

/* The lexicographic key packed in one integer: the keep flag at bit 60, the value lost
 * (in steps of 1/100 GPU, less is better) from bit 48, FGD's score (0..100) from bit 40,
 * the fill-fragmentation decrease in tenths of a GPU below. */
static int64_t key(bool keep, double lost, double f_before, double f_after, double fill_before,
                   double fill_after)
{
    double q = floor(lost / 10.0);
    if (q < 0) q = 0;
    if (q > 1000) q = 1000;
    int64_t fgd = (int64_t)(100.0 / (1.0 + exp(-(f_before - f_after) / 1000.0)));
    double steps = floor((fill_before - fill_after) / 100.0);
    if (steps > 1e6) steps = 1e6;
    if (steps < -1e6) steps = -1e6;
    return (int64_t)keep * (INT64_C(1) << 60) + (1000 - (int64_t)q) * (INT64_C(1) << 48) +
           fgd * (INT64_C(1) << 40) + (int64_t)steps + (INT64_C(1) << 31);
}

int64_t gx_place_score_ours(gx_place_ctx *cx, const gx_place_node *n, const gx_place_pod *pod,
                            gx_place_assign *a)
{
    double fill0, fill1;
    double f0 = gx_place_measure_after(cx, n, pod, NULL, &fill0);
    bool keep = n->pods > 0 || !node_reserved(cx, n);
    if (pod->num_gpu > 0 && pod->gpu_milli < GX_PLACE_MILLI) {
        int64_t best = INT64_MIN;
        int bg = -1;
        a->num = 1;
        a->milli = pod->gpu_milli;
        for (int g = 0; g < n->num_gpus; g++) {
            if (!gx_place_gpu_ok(n, g, pod)) continue;
            a->gpu[0] = g;
            double f1 = gx_place_measure_after(cx, n, pod, a, &fill1);
            int64_t k = key(keep, value_lost(cx, n, a), f0, f1, fill0, fill1);
            if (k > best) { best = k; bg = g; }
        }
        a->gpu[0] = bg;
        return best;
    }
    if (pod->num_gpu > 0) gx_place_pick_whole(n, pod, a);
    else a->num = 0;
    double f1 = gx_place_measure_after(cx, n, pod, a, &fill1);
    return key(keep, value_lost(cx, n, a), f0, f1, fill0, fill1);
}
