/* sim/trace_bound: an upper bound on the GPU allocation ratio that ANY placement, even
 * one that knew every arrival in advance and could drop pods at will, reaches when the
 * arrived demand of the replay's arrival sequence first comes to a given share of
 * capacity. It shows how far a policy is from the optimum (docs/placement.md).
 * Owns: gx_trace_bound, gx_trace_offline_bfd.
 * Must not: place pods or touch the placement code.
 *
 * The relaxation: every GPU of the cluster is a bin of 1000 milli, pods may go to any
 * GPUs (CPU, memory, models and nodes ignored), a multi-GPU pod is that many whole-GPU
 * items. Dual-feasible functions bound bin packing: for e < 500,
 *     f_e(x) = 1000 if x >= 1000 - e,  0 if x <= e,  x otherwise
 * never sums above 1000 in one GPU (an item >= 1000 - e leaves room only for items
 * <= e). So the pods placed satisfy sum f_e <= GPUs x 1000. When the arrived pods break
 * that, some must be dropped; the cheapest way (least milli-GPU dropped per unit of f_e
 * removed) drops the smallest items >= 1000 - e first (ratio x/1000), then the others
 * (ratio 1); taken fractionally this is a lower bound on what must be dropped. The
 * bound is the smallest over all e (e = 0 is "allocation <= capacity"). */
#include <stdlib.h>

#include "lib/alloc.h"
#include "sim/trace_internal.h"

/* The pods of arr[] that arrive until `at` x capacity: their GPU milli in total, and in
 * cnt[m] how many GPUs they ask with m milli each. */
static double arrivals(const gx_trace *t, const int *arr, size_t na, double at, double *cnt)
{
    double cap = (double)t->gpu_milli, arrived = 0;
    for (size_t i = 0; i < na; i++) {
        const gx_place_pod *p = &t->pods[arr[i]].req;
        double g = (double)gx_place_pod_gpu_total(p);
        if (arrived + g > at * cap) break;
        arrived += g;
        if (p->num_gpu > 0) cnt[p->gpu_milli] += p->num_gpu;
    }
    return arrived;
}

/* Milli-GPU that must be dropped from the item histogram cnt[0..1000] for f_e. */
static double must_drop(const double *cnt, double gpus_milli, int e)
{
    double fsum = 0;
    for (int x = 1; x <= GX_PLACE_MILLI; x++) {
        double f = x >= GX_PLACE_MILLI - e ? GX_PLACE_MILLI : (x <= e ? 0 : x);
        fsum += cnt[x] * f;
    }
    double excess = fsum - gpus_milli, dropped = 0;
    if (excess <= 0) return 0;
    for (int x = GX_PLACE_MILLI - e; x <= GX_PLACE_MILLI && excess > 0; x++) {
        double take = cnt[x] * GX_PLACE_MILLI < excess ? cnt[x] : excess / GX_PLACE_MILLI;
        dropped += take * x;
        excess -= take * GX_PLACE_MILLI;
    }
    return dropped + (excess > 0 ? excess : 0);   /* the rest at ratio 1 */
}

double gx_trace_bound(const gx_trace *t, const int *arr, size_t na, double at)
{
    double *cnt = gx_xcalloc(GX_PLACE_MILLI + 1, sizeof *cnt);
    double cap = (double)t->gpu_milli, arrived = arrivals(t, arr, na, at, cnt);
    double best = arrived;
    for (int e = 0; e < GX_PLACE_MILLI / 2; e++) {
        double placed = arrived - must_drop(cnt, cap, e);
        if (placed < best) best = placed;
    }
    free(cnt);
    return 100.0 * best / cap;
}

/* Offline best-fit decreasing on the same relaxation: the arrived pods (up to `at` x
 * capacity) sorted by GPU size, largest first, each into the GPU with the least room
 * that fits it (whole-GPU items into free GPUs), dropped when none does. Not a bound: a
 * reference for what a packer that saw every arrival in advance gets. */
double gx_trace_offline_bfd(const gx_trace *t, const int *arr, size_t na, double at)
{
    double *cnt = gx_xcalloc(GX_PLACE_MILLI + 1, sizeof *cnt);
    double *room = gx_xcalloc(GX_PLACE_MILLI + 1, sizeof *room);   /* GPUs per free milli */
    double cap = (double)t->gpu_milli, placed = 0;
    arrivals(t, arr, na, at, cnt);
    room[GX_PLACE_MILLI] = (double)t->gpus;
    for (int x = GX_PLACE_MILLI; x >= 1; x--) {
        for (; cnt[x] > 0; cnt[x] -= 1) {
            int r = x;
            while (r <= GX_PLACE_MILLI && room[r] <= 0) r++;
            if (r > GX_PLACE_MILLI) break;              /* nothing left fits size x */
            room[r] -= 1;
            room[r - x] += 1;
            placed += x;
        }
    }
    free(cnt);
    free(room);
    return 100.0 * placed / cap;
}
