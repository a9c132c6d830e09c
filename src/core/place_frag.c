/* core/place_frag: FGD's fragmentation measure and the FGD policy (Weng et al., "Beware
 * of Fragmentation", USENIX ATC'23), written from the paper's description.
 * Owns: the workload type table (gx_place_workload_from_pods), the fragmentation of a
 * node state under that workload, its cache keyed by node state, the FGD score.
 * Must not: change nodes, do I/O, or keep state outside the context.
 *
 * Fragmentation F of a node for a pod type t: all of the node's idle milli-GPU if t
 * cannot run there at all (CPU-only type, model not allowed, not enough CPU, no GPU
 * with room for it); otherwise only the idle milli-GPU on GPUs with less room than t's
 * share. F = sum over types of p(t) x fragment(t). Memory is ignored, as in the paper. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/place.h"
#include "lib/alloc.h"

/* ---- workload ---------------------------------------------------------------------- */

static bool same_shape(const gx_place_type *t, const gx_place_pod *p)
{
    return t->cpu_milli == p->cpu_milli && t->num_gpu == p->num_gpu &&
           t->gpu_milli == (p->num_gpu > 0 ? p->gpu_milli : 0) && t->models == p->models;
}

int gx_place_workload_from_pods(const gx_place_pod *pods, size_t n, gx_place_type *out,
                                int cap)
{
    if (n == 0 || cap <= 0) return 0;
    /* distinct shapes with counts (p holds the count), in order of first appearance */
    size_t ncap = 64, nt = 0;
    gx_place_type *t = gx_xmalloc(ncap * sizeof *t);
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < nt && !same_shape(&t[k], &pods[i])) k++;
        if (k == nt) {
            if (nt == ncap) {
                t = gx_xreallocarray(t, 2 * ncap, sizeof *t);
                ncap *= 2;
            }
            t[nt].cpu_milli = pods[i].cpu_milli;
            t[nt].num_gpu = pods[i].num_gpu;
            t[nt].gpu_milli = pods[i].num_gpu > 0 ? pods[i].gpu_milli : 0;
            t[nt].models = pods[i].models;
            t[nt].p = 0;
            nt++;
        }
        t[k].p += 1;
    }
    /* stable selection sort by count, descending (nt is small) */
    for (size_t i = 0; i < nt; i++) {
        size_t m = i;
        for (size_t j = i + 1; j < nt; j++) if (t[j].p > t[m].p) m = j;
        if (m != i) {
            gx_place_type x = t[m];
            memmove(&t[i + 1], &t[i], (m - i) * sizeof *t);
            t[i] = x;
        }
    }
    int k = 0;
    for (; (size_t)k < nt && k < cap; k++) {
        out[k] = t[k];
        out[k].p /= (double)n;
    }
    free(t);
    return k;
}
/* ---- fragmentation of a node state ------------------------------------------------- */

typedef struct frag_state {
    int model, ng;
    int64_t cpu_free;
    int32_t free[GX_PLACE_MAX_GPUS];
} frag_state;

/* FGD's F, and in *fill the fill-fragmentation: for each type, the idle GPU that would
 * stay idle if only pods of that type kept arriving until the node is full, limited by
 * GPU room and by free CPU alike (a type that cannot run leaves all idle GPU), weighted
 * by fillw[] (the type's share of GPU demand; NULL: by p as F is). */
static double frag_compute(const gx_place_type *types, const double *fillw, int ntypes,
                           const frag_state *s, double *fill)
{
    int64_t idle = 0, maxfree = 0;
    int full = 0;
    for (int g = 0; g < s->ng; g++) {
        idle += s->free[g];
        if (s->free[g] > maxfree) maxfree = s->free[g];
        full += s->free[g] == GX_PLACE_MILLI;
    }
    *fill = 0;
    if (idle == 0) return 0;
    double f = 0, fl = 0;
    for (int i = 0; i < ntypes; i++) {
        const gx_place_type *t = &types[i];
        double w = fillw ? fillw[i] : t->p;
        bool runs = t->num_gpu > 0 && s->cpu_free >= t->cpu_milli &&
                    (!t->models || (s->model >= 0 && (t->models & (UINT64_C(1) << s->model))));
        if (runs) runs = t->gpu_milli < GX_PLACE_MILLI ? maxfree >= t->gpu_milli
                                                       : full >= t->num_gpu;
        if (!runs) { f += t->p * (double)idle; fl += w * (double)idle; continue; }
        int64_t frag = 0, slots = 0;
        for (int g = 0; g < s->ng; g++) {
            if (s->free[g] < t->gpu_milli) frag += s->free[g];
            slots += s->free[g] / t->gpu_milli;
        }
        if (t->gpu_milli == GX_PLACE_MILLI) slots /= t->num_gpu;
        int64_t by_cpu = t->cpu_milli > 0 ? s->cpu_free / t->cpu_milli : slots;
        if (by_cpu < slots) slots = by_cpu;
        f += t->p * (double)frag;
        fl += w * (double)(idle - slots * t->gpu_milli * t->num_gpu);
    }
    *fill = fl;
    return f;
}

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Cached F of a state. The key is the model, free CPU and the sorted per-GPU free
 * milli (11 bits each), so nodes in the same state share one entry. */
static double frag_cached(gx_place_ctx *cx, const frag_state *s, double *fill)
{
    if (!cx->fc || s->ng > 8 || s->cpu_free < 0 || s->cpu_free >= (INT64_C(1) << 46) ||
        s->model >= 126)
        return frag_compute(cx->types, cx->fillw, cx->ntypes, s, fill);
    int32_t v[8];
    int ng = s->ng;
    for (int i = 0; i < ng; i++) {            /* insertion sort, ng <= 8 */
        int32_t x = s->free[i];
        int j = i;
        while (j > 0 && v[j - 1] > x) { v[j] = v[j - 1]; j--; }
        v[j] = x;
    }
    uint64_t k0 = (uint64_t)s->cpu_free << 16 | (uint64_t)(s->model + 1) << 8 |
                  (uint64_t)ng << 1 | 1;
    uint64_t k1 = 0, k2 = 0;
    for (int i = 0; i < ng && i < 5; i++) k1 |= (uint64_t)v[i] << (11 * i);
    for (int i = 5; i < ng; i++) k2 |= (uint64_t)v[i] << (11 * (i - 5));
    size_t h = (size_t)mix64(k0 ^ mix64(k1 ^ mix64(k2))) & cx->fc_mask;
    for (;;) {
        gx_place_fcache_ent *e = &cx->fc[h];
        if (e->k0 == 0) break;
        if (e->k0 == k0 && e->k1 == k1 && e->k2 == k2) {
            cx->fc_hits++;
            *fill = e->fill;
            return e->f;
        }
        h = (h + 1) & cx->fc_mask;
    }
    cx->fc_misses++;
    double f = frag_compute(cx->types, cx->fillw, cx->ntypes, s, fill);
    if (cx->fc_used * 10 >= (cx->fc_mask + 1) * 7) {    /* 70 % full: start over */
        memset(cx->fc, 0, (cx->fc_mask + 1) * sizeof *cx->fc);
        cx->fc_used = 0;
        h = (size_t)mix64(k0 ^ mix64(k1 ^ mix64(k2))) & cx->fc_mask;
    }
    gx_place_fcache_ent *e = &cx->fc[h];
    e->k0 = k0;
    e->k1 = k1;
    e->k2 = k2;
    e->f = f;
    e->fill = *fill;
    cx->fc_used++;
    return f;
}

static void state_of(const gx_place_node *n, frag_state *s)
{
    s->model = n->model;
    s->ng = n->num_gpus;
    s->cpu_free = n->cpu_free;
    memcpy(s->free, n->gpu_free, (size_t)n->num_gpus * sizeof s->free[0]);
}

/* With no workload the pod being placed stands in for it (a one-type workload). */
static double frag_of(gx_place_ctx *cx, const frag_state *s, const gx_place_pod *pod,
                      double *fill)
{
    if (cx->ntypes > 0) return frag_cached(cx, s, fill);
    gx_place_type t = { pod->cpu_milli, pod->num_gpu, pod->num_gpu > 0 ? pod->gpu_milli : 0,
                        pod->models, 1.0 };
    return frag_compute(&t, NULL, 1, s, fill);
}

double gx_place_measure_after(gx_place_ctx *cx, const gx_place_node *n,
                              const gx_place_pod *pod, const gx_place_assign *a,
                              double *fill)
{
    frag_state s;
    state_of(n, &s);
    if (a && pod) {
        s.cpu_free -= pod->cpu_milli;
        for (int k = 0; k < a->num; k++) s.free[a->gpu[k]] -= a->milli;
    }
    gx_place_pod none = { 0 };
    return frag_of(cx, &s, pod ? pod : &none, fill);
}

double gx_place_frag(gx_place_ctx *cx, const gx_place_node *n)
{
    double fill;
    return gx_place_measure_after(cx, n, NULL, NULL, &fill);
}

/* ---- FGD ----------------------------------------------------------------------------- */

static int fgd_int(double before, double after)
{
    double x = (before - after) / 1000.0;
    return (int)(100.0 / (1.0 + exp(-x)));
}

/* FGD: int(100 * sigmoid((F_before - F_after) / 1000)). A sharing pod goes to the GPU
 * with the best score (lowest index on ties); whole GPUs are the lowest-index free ones. */
int64_t gx_place_score_fgd(gx_place_ctx *cx, const gx_place_node *n, const gx_place_pod *pod,
                           gx_place_assign *a)
{
    double fill, before = gx_place_measure_after(cx, n, pod, NULL, &fill);
    if (pod->num_gpu > 0 && pod->gpu_milli < GX_PLACE_MILLI) {
        int best = -1, bg = -1;
        a->num = 1;
        a->milli = pod->gpu_milli;
        for (int g = 0; g < n->num_gpus; g++) {
            if (!gx_place_gpu_ok(n, g, pod)) continue;
            a->gpu[0] = g;
            int s = fgd_int(before, gx_place_measure_after(cx, n, pod, a, &fill));
            if (s > best) { best = s; bg = g; }
        }
        a->gpu[0] = bg;
        return best;
    }
    if (pod->num_gpu > 0) gx_place_pick_whole(n, pod, a);
    else a->num = 0;
    return fgd_int(before, gx_place_measure_after(cx, n, pod, a, &fill));
}
