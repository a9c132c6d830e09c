/* tests/unit/test_place: the placement engine (src/core/place*.c) on small hand-made
 * nodes whose right answer is worked out by hand in the comments.
 * Owns: suites place_model, place_fit, place_commit, place_<policy>, place_memo, and
 * place_bound (the replay's offline upper bound, on hand-made pod lists).
 * Must not: read the trace (the replay has its own integration test). */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "core/place.h"
#include "lib/rng.h"
#include "sim/trace_internal.h"

/* ---- helpers --------------------------------------------------------------------- */

static gx_place_node node(int64_t cpu, int ngpu)
{
    gx_place_node n;
    gx_place_node_init(&n, cpu, 1 << 20, 0, ngpu, 16384);
    return n;
}

static gx_place_pod share(int64_t cpu, int milli)
{
    return (gx_place_pod){ .cpu_milli = cpu, .mem_mib = 1024, .num_gpu = 1, .gpu_milli = milli };
}

static gx_place_pod whole(int64_t cpu, int n)
{
    return (gx_place_pod){ .cpu_milli = cpu, .mem_mib = 1024, .num_gpu = n, .gpu_milli = 1000 };
}

static gx_place_ctx *ctx_cov(const char *policy, gx_place_type *types, int n, double coverage)
{
    gx_place_workload wl = { n, types, coverage };
    gx_place_ctx *cx = gx_place_ctx_new(gx_place_policy_by_name(policy), n ? &wl : NULL, 42);
    cr_assert_not_null(cx, "policy %s", policy);
    return cx;
}

static gx_place_ctx *ctx(const char *policy, gx_place_type *types, int n)
{
    return ctx_cov(policy, types, n, 1.0);
}

/* ---- models, names, workload --------------------------------------------------------- */

Test(place_model, ids_and_masks)
{
    gx_place_models m = { 0 };
    cr_assert_eq(gx_place_model_id(&m, "T4"), 0);
    cr_assert_eq(gx_place_model_id(&m, "V100M16"), 1);
    cr_assert_eq(gx_place_model_id(&m, "T4"), 0);
    cr_assert_eq(gx_place_model_id(&m, ""), -1);
    uint64_t mask;
    cr_assert_eq(gx_place_models_mask(&m, "V100M16|A10", &mask), 0);
    cr_assert_eq(mask, (UINT64_C(1) << 1) | (UINT64_C(1) << 2));
    cr_assert_eq(gx_place_models_mask(&m, "", &mask), 0);
    cr_assert_eq(mask, 0);
}

Test(place_model, policy_names)
{
    const char *names[] = { "random", "dot-product", "gpu-packing", "gpu-clustering",
                            "best-fit", "fgd", "ours" };
    for (int i = 0; i < GX_PLACE_NPOLICIES; i++) {
        const gx_place_policy *p = gx_place_policy_by_name(names[i]);
        cr_assert_not_null(p, "%s", names[i]);
        cr_assert_str_eq(p->name, names[i]);
        cr_assert_eq(gx_place_policy_at(i), p);
    }
    cr_assert_null(gx_place_policy_by_name("first-fit"));
    cr_assert_not_null(gx_place_policy_by_name(GX_PLACE_DEFAULT_POLICY));
}

Test(place_model, workload_types_sorted_by_count)
{
    gx_place_pod pods[6] = { share(1000, 500), whole(2000, 1), share(1000, 500),
                             whole(2000, 1), share(1000, 500), { .cpu_milli = 500 } };
    gx_place_type t[8];
    int n = gx_place_workload_from_pods(pods, 6, t, 8);
    cr_assert_eq(n, 3);
    cr_assert_eq(t[0].gpu_milli, 500);
    cr_assert_float_eq(t[0].p, 0.5, 1e-9);
    cr_assert_eq(t[1].num_gpu, 1);
    cr_assert_eq(t[1].gpu_milli, 1000);
    cr_assert_float_eq(t[1].p, 2.0 / 6, 1e-9);
    cr_assert_eq(t[2].num_gpu, 0);
}

/* ---- feasibility, commit, release ---------------------------------------------------- */

Test(place_fit, cpu_memory_model_and_gpu_room)
{
    gx_place_node n = node(8000, 2);
    n.gpu_free[0] = 300;
    n.gpu_free[1] = 1000;
    cr_assert(gx_place_fits(&n, &(gx_place_pod){ .cpu_milli = 8000 }));
    cr_assert_not(gx_place_fits(&n, &(gx_place_pod){ .cpu_milli = 8001 }));
    cr_assert_not(gx_place_fits(&n, &(gx_place_pod){ .mem_mib = (1 << 20) + 1 }));
    cr_assert(gx_place_fits(&n, &(gx_place_pod){ .num_gpu = 1, .gpu_milli = 1000 }));
    cr_assert_not(gx_place_fits(&n, &(gx_place_pod){ .num_gpu = 2, .gpu_milli = 1000 }),
                  "only one GPU is wholly free");
    gx_place_pod p = share(0, 300);
    p.models = UINT64_C(1) << 3;             /* model 3 only; the node is model 0 */
    cr_assert_not(gx_place_fits(&n, &p));
    p.models |= 1;
    cr_assert(gx_place_fits(&n, &p));
    p.gpu_mem_mib = 20000;                   /* more than the 16 GiB per GPU */
    cr_assert_not(gx_place_fits(&n, &p));
}

Test(place_commit, release_restores_the_node)
{
    gx_place_ctx *cx = ctx("best-fit", NULL, 0);
    gx_place_node n = node(16000, 4), before;
    n.gpu_free[1] = 600;
    before = n;
    gx_place_pod p = whole(4000, 2);
    gx_place_assign a;
    cr_assert_eq(gx_place_choose(cx, &n, 1, NULL, &p, &a), 0);
    cr_assert_eq(a.num, 2);
    cr_assert_eq(a.gpu[0], 0, "lowest-index wholly free GPUs");
    cr_assert_eq(a.gpu[1], 2);
    cr_assert(gx_place_commit(cx, &n, &p, &a));
    cr_assert_eq(n.gpu_free[0], 0);
    cr_assert_eq(n.cpu_free, 12000);
    cr_assert(gx_place_release(cx, &n, &p, &a));
    cr_assert_eq(memcmp(&n, &before, sizeof n), 0);
    cr_assert_not(gx_place_release(cx, &n, &p, &a), "a second release is refused");
    gx_place_ctx_free(cx);
}

Test(place_commit, nothing_fits)
{
    gx_place_ctx *cx = ctx("fgd", NULL, 0);
    gx_place_node n[2] = { node(1000, 1), node(1000, 1) };
    gx_place_pod p = whole(500, 2);
    gx_place_assign a;
    cr_assert_eq(gx_place_choose(cx, n, 2, NULL, &p, &a), -1);
    cr_assert_eq(a.node, -1);
    gx_place_pod bad = { .num_gpu = 2, .gpu_milli = 500 };   /* shares only with one GPU */
    cr_assert_eq(gx_place_choose(cx, n, 2, NULL, &bad, &a), -1);
    gx_place_ctx_free(cx);
}

/* ---- best-fit ------------------------------------------------------------------------ */

Test(place_best_fit, score_formula_and_choice)
{
    gx_place_ctx *cx = ctx("best-fit", NULL, 0);
    /* node 0: 64 CPUs, 8 free GPUs; node 1: 64 CPUs, 2 free GPUs */
    gx_place_node n[2] = { node(64000, 8), node(64000, 2) };
    gx_place_pod p = whole(32000, 1);
    gx_place_assign a;
    /* node 1: int(100 (1 - 0.5*32000/128000 - 0.5*1000/8000)) = int(81.25) = 81 */
    cr_assert_eq(gx_place_choose(cx, n, 2, NULL, &p, &a), 1);
    cr_assert_eq(a.score, 81);
    gx_place_ctx_free(cx);
}

Test(place_best_fit, sharing_pod_takes_the_tightest_gpu)
{
    gx_place_ctx *cx = ctx("best-fit", NULL, 0);
    gx_place_node n = node(8000, 3);
    n.gpu_free[0] = 1000;
    n.gpu_free[1] = 400;
    n.gpu_free[2] = 700;
    gx_place_pod p = share(100, 350);
    gx_place_assign a;
    cr_assert_eq(gx_place_choose(cx, &n, 1, NULL, &p, &a), 0);
    cr_assert_eq(a.gpu[0], 1, "400 free is the least room that still fits 350");
    gx_place_ctx_free(cx);
}

/* ---- FGD ------------------------------------------------------------------------------ */

Test(place_fgd, fragmentation_by_hand)
{
    /* types: a 500 share and one whole GPU, half each. GPUs free {300, 1000}:
     * share 500 runs (1000 >= 500); fragment = GPUs with less than 500: 300 -> 0.5*300
     * whole runs (one full GPU);     fragment = GPUs with less than 1000: 300 -> 0.5*300
     * F = 300. With 10 CPUs free and types asking 20, nothing runs: F = all idle = 1300. */
    gx_place_type t[2] = { { 1000, 1, 500, 0, 0.5 }, { 1000, 1, 1000, 0, 0.5 } };
    gx_place_ctx *cx = ctx("fgd", t, 2);
    gx_place_node n = node(10000, 2);
    n.gpu_free[0] = 300;
    cr_assert_float_eq(gx_place_frag(cx, &n), 300.0, 1e-9);
    t[0].cpu_milli = t[1].cpu_milli = 20000;
    gx_place_ctx *cx2 = ctx("fgd", t, 2);
    cr_assert_float_eq(gx_place_frag(cx2, &n), 1300.0, 1e-9);
    gx_place_ctx_free(cx);
    gx_place_ctx_free(cx2);
}

Test(place_fgd, sharing_pod_fills_the_fragment)
{
    /* Only whole-GPU pods follow. GPUs free {1000, 500}: F = 500. A 500 share on GPU 1
     * leaves {1000, 0}: F = 0, dF = +500, score int(100 sigmoid(0.5)) = 62. On GPU 0 it
     * leaves {500, 500}: F = 1000, score int(100 sigmoid(-0.5)) = 37. */
    gx_place_type t[1] = { { 0, 1, 1000, 0, 1.0 } };
    gx_place_ctx *cx = ctx("fgd", t, 1);
    gx_place_node n = node(8000, 2);
    n.gpu_free[1] = 500;
    gx_place_pod p = share(100, 500);
    gx_place_assign a;
    cr_assert_eq(gx_place_choose(cx, &n, 1, NULL, &p, &a), 0);
    cr_assert_eq(a.gpu[0], 1);
    cr_assert_eq(a.score, 62);
    gx_place_ctx_free(cx);
}

Test(place_fgd, ties_go_to_the_first_node_in_order)
{
    gx_place_type t[1] = { { 0, 1, 1000, 0, 1.0 } };
    gx_place_ctx *cx = ctx("fgd", t, 1);
    gx_place_node n[3] = { node(8000, 2), node(8000, 2), node(8000, 2) };
    int order[3] = { 2, 0, 1 };
    gx_place_pod p = whole(100, 1);
    gx_place_assign a;
    cr_assert_eq(gx_place_choose(cx, n, 3, order, &p, &a), 2);
    cr_assert_eq(gx_place_choose(cx, n, 3, NULL, &p, &a), 0);
    gx_place_ctx_free(cx);
}

Test(place_fgd, no_workload_uses_the_pod_itself)
{
    /* Without a workload the pod is the only type: two 0.5 pods on one node with two
     * GPUs share a GPU and keep the other whole (a one-node daemon). */
    gx_place_ctx *cx = ctx("fgd", NULL, 0);
    gx_place_node n = node(8000, 2);
    gx_place_pod p = share(100, 500);
    gx_place_assign a;
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(gx_place_choose(cx, &n, 1, NULL, &p, &a), 0);
        cr_assert(gx_place_commit(cx, &n, &p, &a));
    }
    cr_assert_eq(n.gpu_free[0] + n.gpu_free[1], 1000);
    cr_assert(n.gpu_free[0] == 1000 || n.gpu_free[1] == 1000);
    gx_place_ctx_free(cx);
}

/* ---- gpu-packing ------------------------------------------------------------------- */

Test(place_gpu_packing, shared_gpu_then_used_node_then_idle_node)
{
    gx_place_ctx *cx = ctx("gpu-packing", NULL, 0);
    gx_place_node idle = node(8000, 8), used = node(8000, 2), shared = node(8000, 2);
    used.gpu_free[0] = 0;                     /* one GPU taken, one wholly free */
    shared.gpu_free[0] = 600;                 /* a GPU already shared */
    shared.gpu_free[1] = 0;
    gx_place_pod p = share(100, 500);
    gx_place_assign a;
    /* idle: max(33 - 8, 8) = 25; used: 50 - 1 = 49; shared: 100 - 60/10 = 94 */
    gx_place_node all[3] = { idle, used, shared };
    cr_assert_eq(gx_place_choose(cx, all, 3, NULL, &p, &a), 2);
    cr_assert_eq(a.score, 94);
    cr_assert_eq(gx_place_choose(cx, all, 2, NULL, &p, &a), 1);
    cr_assert_eq(a.score, 49);
    cr_assert_eq(gx_place_choose(cx, all, 1, NULL, &p, &a), 0);
    cr_assert_eq(a.score, 25);
    gx_place_ctx_free(cx);
}

/* ---- gpu-clustering ------------------------------------------------------------------ */

Test(place_gpu_clustering, same_shape_first)
{
    gx_place_ctx *cx = ctx("gpu-clustering", NULL, 0);
    gx_place_node n[3] = { node(64000, 8), node(64000, 8), node(64000, 8) };
    gx_place_assign a;
    gx_place_pod w = whole(1000, 1), s = share(1000, 300);
    /* node 1 runs a whole-GPU pod, node 2 a sharing pod, node 0 nothing */
    cr_assert(gx_place_pick_whole(&n[1], &w, &a));
    cr_assert(gx_place_commit(cx, &n[1], &w, &a));
    cr_assert(gx_place_pick_share_bestfit(&n[2], &s, &a));
    cr_assert(gx_place_commit(cx, &n[2], &s, &a));
    /* another sharing pod: node 2 (only its shape): 75 + 25*(8000-7700)/8000 = 75 */
    cr_assert_eq(gx_place_choose(cx, n, 3, NULL, &s, &a), 2);
    cr_assert_eq(a.score, 75);
    /* a whole-GPU pod: node 1 (75 + 25*1000/8000 = 78) */
    cr_assert_eq(gx_place_choose(cx, n, 3, NULL, &w, &a), 1);
    cr_assert_eq(a.score, 78);
    /* a CPU-only pod scores 0 everywhere: first node */
    gx_place_pod c = { .cpu_milli = 100 };
    cr_assert_eq(gx_place_choose(cx, n, 3, NULL, &c, &a), 0);
    gx_place_ctx_free(cx);
}

/* ---- dot-product --------------------------------------------------------------------- */

Test(place_dot_product, least_aligned_node)
{
    gx_place_ctx *cx = ctx("dot-product", NULL, 0);
    /* pod (64000 cpu, 1 GPU). node 0: 128000 cpu, 8 GPUs free -> dot = (1*0.5 +
     * 1*0.125)/2 = 0.3125 -> 68; node 1: 64000 cpu, 1 GPU free -> (0.25 + 0.015625)/2
     * -> int(100 * 0.8671875) = 86: the node with less left wins. */
    gx_place_node n[2] = { node(128000, 8), node(64000, 1) };
    gx_place_pod p = whole(64000, 1);
    gx_place_assign a;
    cr_assert_eq(gx_place_choose(cx, n, 2, NULL, &p, &a), 1);
    cr_assert_eq(a.score, 86);
    gx_place_ctx_free(cx);
}

/* ---- random ------------------------------------------------------------------------ */

Test(place_random, only_feasible_nodes_all_of_them)
{
    gx_place_ctx *cx = ctx("random", NULL, 0);
    gx_place_node n[3] = { node(8000, 1), node(100, 1), node(8000, 1) };
    gx_place_pod p = whole(4000, 1);
    int hits[3] = { 0 };
    gx_place_assign a;
    for (int i = 0; i < 400; i++) hits[gx_place_choose(cx, n, 3, NULL, &p, &a)]++;
    cr_assert_eq(hits[1], 0, "node 1 lacks CPU");
    cr_assert_gt(hits[0], 120);
    cr_assert_gt(hits[2], 120);
    gx_place_ctx_free(cx);
    /* the same seed gives the same choices */
    gx_place_ctx *c1 = ctx("random", NULL, 0), *c2 = ctx("random", NULL, 0);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(gx_place_choose(c1, n, 3, NULL, &p, &a), gx_place_choose(c2, n, 3, NULL, &p, &a));
    gx_place_ctx_free(c1);
    gx_place_ctx_free(c2);
}

/* ---- ours ------------------------------------------------------------------------------ */

Test(place_ours, keeps_the_only_home_of_a_big_shape_empty)
{
    /* Ten small nodes (2 GPUs, 32 CPUs) and one big node (8 GPUs, 128 CPUs). The workload
     * is 1-GPU pods (90 %) and 8-GPU pods needing 120 CPUs (10 %); FGD's fragmentation
     * covers the 90 % only, so it scores all empty nodes 50 and takes the first, the big
     * node. Only the big node (1 of 11, at most a tenth) can host the 8-GPU shape, so
     * ours opens a small node instead. */
    gx_place_type t[2] = { { 8000, 1, 1000, 0, 0.9 }, { 120000, 8, 1000, 0, 0.1 } };
    gx_place_ctx *ours = ctx_cov("ours", t, 2, 0.9), *fgd = ctx_cov("fgd", t, 2, 0.9);
    gx_place_node n[11];
    n[0] = node(128000, 8);
    for (int i = 1; i < 11; i++) n[i] = node(32000, 2);
    gx_place_pod p = whole(8000, 1);
    gx_place_assign a;
    cr_assert_eq(gx_place_choose(fgd, n, 11, NULL, &p, &a), 0);
    cr_assert_eq(a.score, 50);
    cr_assert_eq(gx_place_choose(ours, n, 11, NULL, &p, &a), 1);
    /* once the big node is in use, it is filled like any other */
    gx_place_assign b;
    cr_assert(gx_place_pick_whole(&n[0], &p, &b));
    cr_assert(gx_place_commit(ours, &n[0], &p, &b));
    cr_assert_eq(gx_place_choose(ours, n, 11, NULL, &p, &a), 0);
    gx_place_ctx_free(ours);
    gx_place_ctx_free(fgd);
}

Test(place_ours, avoids_stranding_gpus_without_cpu)
{
    /* Two nodes with 2 idle GPUs each; node 0 has 20 CPUs free, node 1 has 40. The only
     * GPU type needs 10 CPUs per GPU. A CPU-only pod of 10 CPUs: on node 0 it leaves 10
     * CPUs, so one GPU can never be used (fill-fragmentation +1000); on node 1, 30 CPUs
     * still feed both GPUs. FGD sees no difference (the type still fits once) and takes
     * the first node; ours takes node 1. */
    gx_place_type t[1] = { { 10000, 1, 1000, 0, 1.0 } };
    gx_place_ctx *ours = ctx("ours", t, 1), *fgd = ctx("fgd", t, 1);
    gx_place_node n[2] = { node(20000, 2), node(40000, 2) };
    gx_place_pod c = { .cpu_milli = 10000 };
    gx_place_assign a;
    cr_assert_eq(gx_place_choose(fgd, n, 2, NULL, &c, &a), 0);
    cr_assert_eq(gx_place_choose(ours, n, 2, NULL, &c, &a), 1);
    gx_place_ctx_free(ours);
    gx_place_ctx_free(fgd);
}

/* ---- memo ------------------------------------------------------------------------------ */

Test(place_memo, a_changed_node_is_scored_again)
{
    gx_place_type t[1] = { { 0, 1, 1000, 0, 1.0 } };
    gx_place_ctx *cx = ctx("fgd", t, 1);
    gx_place_node n[2] = { node(8000, 2), node(8000, 2) };
    gx_place_pod p = share(100, 500);
    gx_place_assign a;
    /* first pod: both nodes alike, node 0 */
    cr_assert_eq(gx_place_choose(cx, n, 2, NULL, &p, &a), 0);
    cr_assert(gx_place_commit(cx, &n[0], &p, &a));
    /* second pod: node 0 now has a 500 fragment that it fills (score 62 > 37) */
    cr_assert_eq(gx_place_choose(cx, n, 2, NULL, &p, &a), 0);
    cr_assert_eq(a.gpu[0], 0);
    cr_assert_eq(a.score, 62);
    cr_assert(gx_place_commit(cx, &n[0], &p, &a));
    /* node 0 GPU 0 is full: a third pod goes to node 0 GPU 1 or node 1, never GPU 0 */
    cr_assert_geq(gx_place_choose(cx, n, 2, NULL, &p, &a), 0);
    cr_assert(a.node == 1 || a.gpu[0] == 1);
    gx_place_ctx_free(cx);
}

Test(place_memo, one_array_reused_for_other_nodes)
{
    /* a daemon may rebuild its node array in place: nothing cached may leak across */
    gx_place_type t[2] = { { 8000, 1, 1000, 0, 0.9 }, { 120000, 8, 1000, 0, 0.1 } };
    gx_place_ctx *cx = ctx_cov("ours", t, 2, 0.9);
    gx_place_node n[11];
    gx_place_pod p = whole(8000, 1);
    gx_place_assign a;
    for (int round = 0; round < 2; round++) {
        n[0] = node(128000, 8);              /* the only home of the 8-GPU shape */
        for (int i = 1; i < 11; i++) n[i] = node(32000, 2);
        cr_assert_eq(gx_place_choose(cx, n, 11, NULL, &p, &a), 1);
        for (int i = 0; i < 11; i++) n[i] = node(32000, 2);   /* now all alike */
        n[0].gpu_free[1] = 0;                /* node 0 is the tightest fit for FGD too */
        cr_assert_eq(gx_place_choose(cx, n, 11, NULL, &p, &a), 0);
    }
    gx_place_ctx_free(cx);
}

Test(place_ours, prices_are_the_cutting_stock_duals)
{
    /* Shares 470 (0.4 of the pods) and 320 (0.2), whole GPUs (0.4, not priced). The best
     * packing puts two 470s on a GPU and three 320s on another, so a 470 costs 1/2 GPU
     * and a 320 1/3; no pattern is worth more (470 + 320 = 5/6), and both patterns are
     * used, so these prices are the only optimal ones. value[r] is the best fill of r. */
    gx_place_type t[3] = { { 1000, 1, 1000, 0, 0.4 }, { 1000, 1, 470, 0, 0.4 },
                           { 1000, 1, 320, 0, 0.2 } };
    gx_place_ctx *cx = ctx("ours", t, 3);
    cr_assert_not_null(cx->value);
    cr_assert_float_eq(cx->value[319], 0.0, 1e-6);
    cr_assert_float_eq(cx->value[320], 1000.0 / 3, 1e-6);
    cr_assert_float_eq(cx->value[470], 500.0, 1e-6);
    cr_assert_float_eq(cx->value[640], 2000.0 / 3, 1e-6);
    cr_assert_float_eq(cx->value[790], 2500.0 / 3, 1e-6);
    cr_assert_float_eq(cx->value[940], 1000.0, 1e-6);
    cr_assert_float_eq(cx->value[1000], 1000.0, 1e-6);
    gx_place_ctx_free(cx);
    gx_place_ctx *fgd = ctx("fgd", t, 3);
    cr_assert_null(fgd->value);               /* only ours builds it */
    gx_place_ctx_free(fgd);
    /* three sizes, one third each: 350 costs 3/8, 450 1/2, 250 1/4 (the LP's unique
     * optimum, 0.375 GPU a pod); no shares at all: nothing is worth anything */
    gx_place_type u[3] = { { 1000, 1, 350, 0, 1.0 / 3 }, { 1000, 1, 450, 0, 1.0 / 3 },
                           { 1000, 1, 250, 0, 1.0 / 3 } };
    double v[GX_PLACE_MILLI + 1], per_pod;
    cr_assert_eq(gx_place_lp_values(t, 3, v, &per_pod), 0);
    cr_assert_float_eq(per_pod, 4.0 / 9, 1e-9);     /* 3 pods (two 470s, a 320): 4/3 GPU */
    cr_assert_eq(gx_place_lp_values(u, 3, v, &per_pod), 0);
    cr_assert_float_eq(per_pod, 0.375, 1e-9);
    cr_assert_float_eq(v[250], 250.0, 1e-6);
    cr_assert_float_eq(v[350], 375.0, 1e-6);
    cr_assert_float_eq(v[450], 500.0, 1e-6);
    cr_assert_float_eq(v[600], 625.0, 1e-6);   /* 350 + 250 */
    cr_assert_float_eq(v[1000], 1000.0, 1e-6);
    cr_assert_eq(gx_place_lp_values(t, 1, v, &per_pod), 0);
    cr_assert_float_eq(v[1000], 0.0, 1e-9);
    cr_assert_float_eq(per_pod, 0.0, 1e-9);
}

Test(place_ours, fill_weights_leave_multi_gpu_types_to_fgd)
{
    /* whole GPUs (half the pods), 4-GPU pods and 0.5 shares (a quarter each): GPU demand
     * 500 + 1000 + 125 = 1625 milli a pod. The fill tie-break weighs each one-GPU type by
     * its part of all of it; the 4-GPU type weighs nothing (FGD's score judges it). */
    gx_place_type t[3] = { { 1000, 1, 1000, 0, 0.5 }, { 4000, 4, 1000, 0, 0.25 },
                           { 1000, 1, 500, 0, 0.25 } };
    gx_place_ctx *cx = ctx("ours", t, 3);
    cr_assert_float_eq(cx->fillw[0], 500.0 / 1625, 1e-12);
    cr_assert_float_eq(cx->fillw[1], 0.0, 1e-12);
    cr_assert_float_eq(cx->fillw[2], 125.0 / 1625, 1e-12);
    gx_place_ctx_free(cx);
}

/* The cutting-stock dual of up to three sizes solved the slow way, independently of
 * the simplex: its constraints are a.y <= 1 for every packing pattern a of one GPU and
 * y >= 0; the optimum is a vertex, so every n of the constraints are tried as
 * equalities and the best feasible point is kept. */
typedef struct brute {
    int n, size[3], nr;
    double d[3], row[400][3];   /* patterns, then the rows of y_i >= 0 as -y_i <= 0 */
    double best;
} brute;

static void brute_patterns(brute *b, int i, int room, double *cnt)
{
    if (i == b->n) {
        if (b->nr < 400) memcpy(b->row[b->nr++], cnt, sizeof b->row[0]);
        return;
    }
    for (int c = 0; c * b->size[i] <= room; c++) {
        cnt[i] = c;
        brute_patterns(b, i + 1, room - c * b->size[i], cnt);
    }
    cnt[i] = 0;
}

/* Solves rows pick[0..n) as equalities by Gaussian elimination; keeps a feasible best. */
static void brute_vertex(brute *b, const int *pick, int total)
{
    int n = b->n;
    double m[3][4];
    for (int k = 0; k < n; k++) {
        int r = pick[k];
        for (int j = 0; j < n; j++) m[k][j] = r < total - n ? b->row[r][j] : (r - (total - n) == j ? -1 : 0);
        m[k][n] = r < total - n ? 1 : 0;
    }
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int k = c + 1; k < n; k++) if (fabs(m[k][c]) > fabs(m[p][c])) p = k;
        if (fabs(m[p][c]) < 1e-12) return;                      /* singular */
        for (int j = 0; j <= n; j++) { double x = m[c][j]; m[c][j] = m[p][j]; m[p][j] = x; }
        for (int k = 0; k < n; k++) {
            if (k == c) continue;
            double f = m[k][c] / m[c][c];
            for (int j = c; j <= n; j++) m[k][j] -= f * m[c][j];
        }
    }
    double y[3], obj = 0;
    for (int j = 0; j < n; j++) {
        y[j] = m[j][n] / m[j][j];
        if (y[j] < -1e-9) return;
        obj += b->d[j] * y[j];
    }
    for (int r = 0; r < total - n; r++) {
        double v = 0;
        for (int j = 0; j < n; j++) v += b->row[r][j] * y[j];
        if (v > 1 + 1e-9) return;
    }
    if (obj > b->best) b->best = obj;
}

static void brute_choose(brute *b, int *pick, int k, int from, int total)
{
    if (k == b->n) { brute_vertex(b, pick, total); return; }
    for (int r = from; r < total; r++) {
        pick[k] = r;
        brute_choose(b, pick, k + 1, r + 1, total);
    }
}

/* GPUs per pod at the LP's optimum, for sizes[0..n) with weights d[0..n). */
static double brute_dual(const int *size, const double *d, int n)
{
    brute b = { .n = n };
    double cnt[3] = { 0 }, pods = 0;
    for (int i = 0; i < n; i++) { b.size[i] = size[i]; b.d[i] = d[i]; pods += d[i]; }
    brute_patterns(&b, 0, 1000, cnt);
    int pick[3];
    brute_choose(&b, pick, 0, 0, b.nr + n);
    return b.best / pods;
}

Test(place_ours, prices_match_a_brute_force_lp_on_small_mixes)
{
    /* 300 random mixes of one to three share sizes from 0.2 to 0.99 GPU: the solver's
     * optimum (GPUs per pod) equals the best vertex of the same LP found by trying them
     * all. A solver that stops early, cycles or pivots wrongly gives a different one. */
    uint64_t rng[4];
    gx_rng_seed(rng, 11);
    for (int trial = 0; trial < 300; trial++) {
        int n = 1 + (int)(gx_rng_next(rng) % 3), size[3];
        double d[3];
        gx_place_type t[3];
        for (int i = 0; i < n; i++) {
            do {
                size[i] = 200 + (int)(gx_rng_next(rng) % 800);
                for (int j = 0; j < i; j++) if (size[j] == size[i]) size[i] = 0;
            } while (size[i] == 0);
            d[i] = (double)(1 + gx_rng_next(rng) % 100);
            t[i] = (gx_place_type){ 1000, 1, size[i], 0, d[i] };
        }
        double v[GX_PLACE_MILLI + 1], per_pod;
        cr_assert_eq(gx_place_lp_values(t, n, v, &per_pod), 0);
        double want = brute_dual(size, d, n);
        cr_assert_float_eq(per_pod, want, 1e-7, "trial %d (%d sizes: %d %d %d): %.9f, brute force %.9f",
                           trial, n, size[0], n > 1 ? size[1] : 0, n > 2 ? size[2] : 0, per_pod, want);
    }
}

Test(place_ours, prices_of_random_mixes_stay_in_bounds)
{
    /* Whatever the mix (up to 100 types, more sizes than the LP prices, sizes down to 1
     * milli so patterns hold hundreds of pods), a free GPU is worth one GPU and more
     * room never less. This guards the solver's arrays and its pattern budget (the
     * sanitizer builds run it); that the prices are the optimal ones is checked on the
     * hand-made mixes above. */
    uint64_t rng[4];
    gx_rng_seed(rng, 7);
    for (int trial = 0; trial < 200; trial++) {
        gx_place_type t[100];
        int n = 1 + (int)(gx_rng_next(rng) % 100);
        for (int i = 0; i < n; i++)
            t[i] = (gx_place_type){ 1000, 1, 1 + (int)(gx_rng_next(rng) % 999), 0,
                                    (double)(1 + gx_rng_next(rng) % 1000) };
        double v[GX_PLACE_MILLI + 1];
        cr_assert_eq(gx_place_lp_values(t, n, v, NULL), 0);
        cr_assert_float_eq(v[1000], 1000.0, 1e-6, "trial %d: %f", trial, v[1000]);
        for (int r = 1; r <= GX_PLACE_MILLI; r++)
            cr_assert_geq(v[r], v[r - 1] - 1e-9, "trial %d at %d", trial, r);
    }
}

Test(place_ours, leaves_a_hole_for_the_share_that_completes_it)
{
    /* The mix above. A 320 pod; node 0's GPU has 530 free (a 470 runs there), node 1's
     * GPU is free. FGD: node 0 turns 530, a fragment to whole-GPU pods (F 212), into
     * 210 that no type fits (F 210): score 50; node 1 turns a whole GPU into 680 (F 272):
     * score 43; it takes node 0 and leaves 210 idle for good. ours: on node 0 the GPU
     * loses value[530] - value[210] = 500 - 0, on node 1 value[1000] - value[680] =
     * 1000 - 666.7 = 333.3, the 320's own price: node 1, and the next 470 fills node 0
     * to 60. */
    gx_place_type t[3] = { { 1000, 1, 1000, 0, 0.4 }, { 1000, 1, 470, 0, 0.4 },
                           { 1000, 1, 320, 0, 0.2 } };
    gx_place_ctx *ours = ctx("ours", t, 3), *fgd = ctx("fgd", t, 3);
    gx_place_node n[2] = { node(64000, 1), node(64000, 1) };
    n[0].gpu_free[0] = 530;
    n[0].pods = 1;
    gx_place_pod p = share(1000, 320);
    gx_place_assign a;
    cr_assert_eq(gx_place_choose(fgd, n, 2, NULL, &p, &a), 0);
    cr_assert_eq(a.score, 50);
    cr_assert_eq(gx_place_choose(ours, n, 2, NULL, &p, &a), 1);
    gx_place_ctx_free(ours);
    gx_place_ctx_free(fgd);
}

Test(place_ours, leaves_the_hole_a_common_share_fills)
{
    /* sharing types 350, 450, 250 (one third each); a 350 pod, GPU 0 of node 0 has 600
     * free, that of node 1 has 500. FGD: 600 -> 250 makes the 250 hole useless to 350
     * and 450 (F +166.7, score 45); 500 -> 150 leaves 150 that nothing fits (F +150,
     * score 46): FGD takes node 1 and strands 150 for good. ours: at the prices above,
     * node 0 loses value[600] - value[250] = 625 - 250 = 375, the 350's own price (a 250
     * completes the GPU), node 1 value[500] - value[150] = 500 - 0: node 0. */
    gx_place_type t[3] = { { 1000, 1, 350, 0, 1.0 / 3 }, { 1000, 1, 450, 0, 1.0 / 3 },
                           { 1000, 1, 250, 0, 1.0 / 3 } };
    gx_place_ctx *ours = ctx("ours", t, 3), *fgd = ctx("fgd", t, 3);
    gx_place_node n[2] = { node(64000, 1), node(64000, 1) };
    n[0].gpu_free[0] = 600;
    n[1].gpu_free[0] = 500;
    n[0].pods = n[1].pods = 1;
    gx_place_pod p = share(1000, 350);
    gx_place_assign a;
    cr_assert_eq(gx_place_choose(fgd, n, 2, NULL, &p, &a), 1);
    cr_assert_eq(a.score, 46);
    cr_assert_eq(gx_place_choose(ours, n, 2, NULL, &p, &a), 0);
    cr_assert_eq(a.gpu[0], 0);
    gx_place_ctx_free(ours);
    gx_place_ctx_free(fgd);
}

/* ---- the offline upper bound of the replay (src/sim/trace_bound.c) ------------------- */

static double bound_or_bfd(const int *milli, int npods, int gpus, bool bfd)
{
    gx_trace t;
    memset(&t, 0, sizeof t);
    gx_trace_pod pods[8];
    int arr[8];
    cr_assert_leq(npods, 8);
    for (int i = 0; i < npods; i++) {
        memset(&pods[i], 0, sizeof pods[i]);
        pods[i].req = milli[i] < 1000 ? share(1000, milli[i]) : whole(1000, milli[i] / 1000);
        arr[i] = i;
    }
    t.pods = pods;
    t.npods = (size_t)npods;
    t.gpus = gpus;
    t.gpu_milli = (int64_t)gpus * 1000;
    return bfd ? gx_trace_offline_bfd(&t, arr, (size_t)npods, 1.0)
               : gx_trace_bound(&t, arr, (size_t)npods, 1.0);
}

static double bound_of(const int *milli, int npods, int gpus)
{
    return bound_or_bfd(milli, npods, gpus, false);
}

Test(place_bound, pairs_that_cannot_share_a_gpu)
{
    /* 2 GPUs, pods 810, 600, 590 (exactly the capacity): no two of them fit one GPU, so
     * at most two are placed, best 810 + 600 = 1410 of 2000 (70.5 %). f_e with e = 410
     * counts each as a whole GPU: one must go, the cheapest is 590. */
    int p[] = { 810, 600, 590 };
    cr_assert_float_eq(bound_of(p, 3, 2), 70.5, 1e-9);
}

Test(place_bound, perfect_packing_is_not_penalised)
{
    /* four halves and a whole GPU on 3 GPUs pack perfectly: the bound is 100 % */
    int p[] = { 500, 500, 500, 500, 1000 };
    cr_assert_float_eq(bound_of(p, 5, 3), 100.0, 1e-9);
    /* arrivals beyond 100 % are not counted: 1000 + 1000 on 1 GPU stops after one */
    int q[] = { 1000, 1000 };
    cr_assert_float_eq(bound_of(q, 2, 1), 100.0, 1e-9);
}

Test(place_bound, holes_only_small_pods_can_fill)
{
    /* 3 GPUs: 810, 810, 190, 600, 590 = 3000. No two of 810, 810, 600, 590 share a GPU,
     * so the best keeps 810, 810, 600 and the 190 in a hole: 2410 (80.33 %). f_e with
     * e = 410 counts those four as whole GPUs (4000, 1000 over 3 GPUs) and the 190 as
     * 0; the cheapest drop is the 590: 2410. e = 190 alone would only drop 0.19 of an
     * 810 (2846): the bound is the smallest over e. */
    int p[] = { 810, 810, 190, 600, 590 };
    cr_assert_float_eq(bound_of(p, 5, 3), 2410.0 / 30.0, 1e-9);
    /* offline best-fit decreasing: 810, 810, 600 open the three GPUs, the 590 fits
     * nowhere, the 190 fills an 810's hole: the same 2410 */
    cr_assert_float_eq(bound_or_bfd(p, 5, 3, true), 2410.0 / 30.0, 1e-9);
    /* 500, 400, 300, 300, 250, 250 on 2 GPUs: BFD puts 500 + 400 on one, 300 + 300 +
     * 250 on the other, and the last 250 fits nowhere (1750 of 2000, 87.5 %), although
     * 500 + 250 + 250 and 400 + 300 + 300 pack everything: the bound says 100 % */
    int q[] = { 500, 400, 300, 300, 250, 250 };
    cr_assert_float_eq(bound_or_bfd(q, 6, 2, true), 87.5, 1e-9);
    cr_assert_float_eq(bound_of(q, 6, 2), 100.0, 1e-9);
}
