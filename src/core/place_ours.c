/* core/place_ours: our placement policy ("ours"), built on FGD's fragmentation measure.
 * Owns: gx_place_score_ours, the nodes it reserves (gx_place_ours_prepare) and its
 * table of expected hole waste (gx_place_ours_init).
 * Must not: change nodes, do I/O, or keep state outside the context.
 *
 * The key, compared lexicographically (the first node in the tie order wins ties):
 *   1. Not an empty reserved node. A pod shape that at most 1/10 of the nodes can host
 *      even when empty (8 GPUs with 120 CPUs, a pod pinned to a rare GPU model) gets
 *      some of its hosts reserved: four times as many as such pods are expected while
 *      the cluster fills once. An empty reserved node is opened only when the pod fits
 *      nowhere else, so the pods that need it still find it late; once in use it is
 *      filled like any other node.
 *   2. FGD's integer score int(100 sigmoid(x / 1000)), with x = dF + dH / 2: F is FGD's
 *      fragmentation (idle GPU the NEXT pod could not use) and H the expected idle GPU
 *      left in the node's GPUs once pods drawn from the workload fill them until none
 *      fits (hole[] below). F judges a hole by one pod: with shares of 250, 350 and 450,
 *      a 350 put where 600 are free leaves 250 that two of the three types cannot use,
 *      so FGD prefers a GPU with 500 free and leaves 150 that nothing will ever fill; H
 *      knows that a 250 fills the first hole exactly. Half of H keeps FGD's scale, so
 *      its coarse integer steps still tie many nodes and the first of them in the fixed
 *      order wins, which packs load onto few nodes (most of FGD's edge: ranking by the
 *      exact gradient gives about 92 %). At full weight the ties thin out and the
 *      replay loses 0.2 point; from 0.4 to 0.6 the result is flat.
 *   3. The least growth of the fill-fragmentation, in steps of 1/10 GPU: the idle GPU
 *      that would stay idle if pods of each type kept arriving until the node is full,
 *      limited by GPU room and by free CPU alike, each type weighted by the GPU demand it
 *      brings. FGD looks one pod ahead and ignores CPU once a type fits; this sees
 *      CPU-starved GPUs (a node whose CPUs are gone strands its GPUs) and the leftovers a
 *      type cannot pack (two 470s leave 60 of a GPU). The steps keep small differences
 *      tied, so the fixed order still consolidates load.
 * A sharing pod takes, within the node, the GPU that is best by the same key. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

#include "core/place.h"

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
    cx->node_cls = malloc(sz * sizeof *cx->node_cls);
    cx->node_res = calloc(sz, sizeof *cx->node_res);
    cx->cls_base = nodes;
    cx->cls_count = count;
    cx->cls_order = order;
    cx->ncls = 0;
    if (!cx->node_cls || !cx->node_res) { cx->cls_count = -1; return; }
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

/* hole[r]: the expected milli-GPU left idle on a GPU with r free when pods drawn from the
 * workload's GPU-sharing and one-GPU types (FGD's types, by their share of the pods)
 * fill it one after another, each draw among the types that still fit, until none
 * fits: hole[r] = r if none fits, else the p-weighted mean of hole[r - s(t)] over the
 * types t that fit. Learned from the workload only; no pod size is special. */
int gx_place_ours_init(gx_place_ctx *cx)
{
    cx->hole = calloc(GX_PLACE_MILLI + 1, sizeof *cx->hole);
    if (!cx->hole) return -1;
    for (int r = 0; r <= GX_PLACE_MILLI; r++) {
        double pf = 0, acc = 0;
        for (int i = 0; i < cx->ntypes; i++) {
            const gx_place_type *t = &cx->types[i];
            if (t->num_gpu != 1 || t->gpu_milli <= 0 || t->gpu_milli > r) continue;
            pf += t->p;
            acc += t->p * cx->hole[r - t->gpu_milli];
        }
        cx->hole[r] = pf > 0 ? acc / pf : r;
    }
    return 0;
}

/* H of node n, after assignment a when a is not NULL: hole[] summed over its GPUs. */
static double holes_of(const gx_place_ctx *cx, const gx_place_node *n, const gx_place_assign *a)
{
    if (!cx->hole) return 0;
    int32_t f[GX_PLACE_MAX_GPUS];
    for (int g = 0; g < n->num_gpus; g++) f[g] = n->gpu_free[g];
    for (int k = 0; a && k < a->num; k++) f[a->gpu[k]] -= a->milli;
    double h = 0;
    for (int g = 0; g < n->num_gpus; g++)
        h += cx->hole[f[g] < 0 ? 0 : (f[g] > GX_PLACE_MILLI ? GX_PLACE_MILLI : f[g])];
    return h;
}

/* The lexicographic key packed in one integer: the keep flag at bit 50, FGD's score
 * (0..100, its input x = dF + dH / 2) from bit 40, the fill-fragmentation decrease in
 * tenths of a GPU below. */
static int64_t key(double f_before, double f_after, bool keep, double fill_before,
                   double fill_after, double hole_decrease)
{
    double x = f_before - f_after + 0.5 * hole_decrease;
    int64_t fgd = (int64_t)(100.0 / (1.0 + exp(-x / 1000.0)));
    double steps = floor((fill_before - fill_after) / 100.0);
    if (steps > 1e6) steps = 1e6;
    if (steps < -1e6) steps = -1e6;
    return (int64_t)keep * (INT64_C(1) << 50) + fgd * (INT64_C(1) << 40) +
           (int64_t)steps + (INT64_C(1) << 31);
}

int64_t gx_place_score_ours(gx_place_ctx *cx, const gx_place_node *n, const gx_place_pod *pod,
                            gx_place_assign *a)
{
    double fill0, fill1;
    double f0 = gx_place_measure_after(cx, n, pod, NULL, &fill0);
    double h0 = holes_of(cx, n, NULL);
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
            int64_t k = key(f0, f1, keep, fill0, fill1, h0 - holes_of(cx, n, a));
            if (k > best) { best = k; bg = g; }
        }
        a->gpu[0] = bg;
        return best;
    }
    if (pod->num_gpu > 0) gx_place_pick_whole(n, pod, a);
    else a->num = 0;
    double f1 = gx_place_measure_after(cx, n, pod, a, &fill1);
    return key(f0, f1, keep, fill0, fill1, h0 - holes_of(cx, n, a));
}
