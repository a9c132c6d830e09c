/* core/place_ours: our placement policy ("ours"), built on FGD's fragmentation measure.
 * Owns: gx_place_score_ours and the node classes it ranks (gx_place_ours_prepare).
 * Must not: change nodes, do I/O, or keep state outside the context.
 *
 * The key, compared lexicographically (the first node in the tie order wins ties):
 *   1. FGD's integer score, int(100 sigmoid(dF / 1000)). Kept as is: its coarse steps
 *      make many nodes tie, and taking the first of them in one fixed order packs load
 *      onto few nodes, which is most of FGD's edge over exact-gradient ranking.
 *   2. Not a reserved node: a node class that alone can host a large pod shape (one that
 *      at most 1/10 of the nodes can host even when empty, say 8 GPUs with 120 CPUs) is
 *      opened only when FGD strictly prefers it, so those pods still find a home late.
 *   3. The least growth of the fill-fragmentation: the idle GPU that would stay idle if
 *      pods of each type kept arriving until the node is full, limited by GPU room and by
 *      free CPU alike. FGD looks one pod ahead and ignores CPU once a type fits; this
 *      sees CPU-starved GPUs (a node whose CPUs are gone strands its GPUs) and the
 *      leftovers a type cannot pack (two 470s leave 60 of a GPU).
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
    cx->cls[cx->ncls] = (gx_place_class){ n->cpu_milli, n->mem_mib, n->num_gpus, n->model, 0,
                                          false };
    return cx->ncls++;
}

/* Groups the nodes into capacity classes and marks a class reserved when it can host a
 * GPU pod type of the workload that at most a tenth of all nodes can host when empty.
 * Redone only when the node array or its size changes. */
void gx_place_ours_prepare(gx_place_ctx *cx, const gx_place_node *nodes, int count)
{
    if (cx->cls_base == nodes && cx->cls_count == count) return;
    free(cx->node_cls);
    cx->node_cls = malloc((size_t)(count > 0 ? count : 1) * sizeof *cx->node_cls);
    cx->cls_base = nodes;
    cx->cls_count = count;
    cx->ncls = 0;
    if (!cx->node_cls) { cx->cls_count = -1; return; }
    for (int i = 0; i < count; i++) {
        int c = find_class(cx, &nodes[i]);
        cx->node_cls[i] = c;
        if (c >= 0) cx->cls[c].count++;
    }
    for (int t = 0; t < cx->nall; t++) {
        const gx_place_type *ty = &cx->all[t];
        if (ty->num_gpu <= 0) continue;
        int hosts = 0;
        for (int c = 0; c < cx->ncls; c++)
            if (class_hosts(&cx->cls[c], ty)) hosts += cx->cls[c].count;
        if (hosts == 0 || hosts * 10 > count) continue;
        for (int c = 0; c < cx->ncls; c++)
            if (class_hosts(&cx->cls[c], ty)) cx->cls[c].reserved = true;
    }
}

static bool node_reserved(const gx_place_ctx *cx, const gx_place_node *n)
{
    if (!cx->node_cls || cx->base != cx->cls_base) return false;
    ptrdiff_t i = n - cx->base;
    if (i < 0 || i >= cx->cls_count || cx->node_cls[i] < 0) return false;
    return cx->cls[cx->node_cls[i]].reserved;
}

static int64_t key(double f_before, double f_after, bool keep, double fill_before,
                   double fill_after)
{
    int64_t fgd = (int64_t)(100.0 / (1.0 + exp(-(f_before - f_after) / 1000.0)));
    double d = (fill_before - fill_after) * 100.0;
    static int ab = -1;
    if (ab < 0) { const char *e = getenv("GXAB"); ab = e ? atoi(e) : 0; }
    if (ab & 1) keep = true;
    if (ab & 2) d = 0;
    if (d > 1e9) d = 1e9;
    if (d < -1e9) d = -1e9;
    return fgd * (INT64_C(1) << 40) + (int64_t)keep * (INT64_C(1) << 38) +
           (int64_t)llround(d) + (INT64_C(1) << 31);
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
            int64_t k = key(f0, f1, keep, fill0, fill1);
            if (k > best) { best = k; bg = g; }
        }
        a->gpu[0] = bg;
        return best;
    }
    if (pod->num_gpu > 0) gx_place_pick_whole(n, pod, a);
    else a->num = 0;
    double f1 = gx_place_measure_after(cx, n, pod, a, &fill1);
    return key(f0, f1, keep, fill0, fill1);
}
