/* Unit tests for core/share: the sharing-aware device model (exclusive, time-slicing,
 * MPS, MIG, fractional), its preferences, its refusals with reasons, and fractional
 * bin-packing through core/place's policies. Pure data: these nodes describe GPUs,
 * none is needed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "core/share.h"

static void gpu(gx_share_node *n, int i, gx_share_mode m, int replicas, int64_t mem)
{
    gx_share_gpu *g = &n->gpu[i];
    memset(g, 0, sizeof *g);
    snprintf(g->uuid, sizeof g->uuid, "GPU-%d", i);
    g->mode = m;
    g->replicas = replicas;
    g->mem_mib = mem;
    g->fail_gt1 = m == GX_SHARE_MPS;
    if (n->n_gpus <= i) n->n_gpus = i + 1;
}

static gx_share_req R(const char *res, int count, int64_t mem, int cores)
{
    gx_share_req r;
    memset(&r, 0, sizeof r);
    snprintf(r.resource, sizeof r.resource, "%s", res);
    r.count = count;
    r.gpumem_mib = mem;
    r.gpucores = cores;
    return r;
}

static gx_share_node *new_node(void)
{
    gx_share_node *n = calloc(1, sizeof *n);
    cr_assert(n);
    return n;
}

Test(share, mps_replicas_then_exclusive)
{
    gx_share_node *n = new_node();
    gpu(n, 0, GX_SHARE_EXCLUSIVE, 1, 81920);
    gpu(n, 1, GX_SHARE_MPS, 4, 81920);
    gx_share_node_reset(n);
    cr_assert(gx_share_node_shared(n));
    cr_assert_eq(gx_share_offered(n, "nvidia.com/gpu", NULL), 5);
    gx_share_req r = R("nvidia.com/gpu", 1, 0, 0);
    gx_share_pick p;
    char why[256];
    for (int k = 0; k < 4; k++) {
        cr_assert(gx_share_fit(n, &r, &p, why, sizeof why), "%s", why);
        cr_assert_eq(p.dev[0].gpu, 1, "replicas are taken before the exclusive GPU");
        cr_assert_eq(p.dev[0].replica, k);
        cr_assert_eq(p.dev[0].cores, 25);
        cr_assert_eq(p.dev[0].mem_mib, 20480);
        cr_assert_eq(gx_share_commit(n, 100 + k, &p), 0);
    }
    cr_assert(gx_share_fit(n, &r, &p, why, sizeof why));
    cr_assert_eq(p.dev[0].gpu, 0);
    cr_assert_eq(p.dev[0].replica, -1);
    cr_assert_eq(gx_share_commit(n, 200, &p), 0);
    /* the same pick cannot be committed twice */
    cr_assert_eq(gx_share_commit(n, 201, &p), -1);
    cr_assert_not(gx_share_fit(n, &r, &p, why, sizeof why));
    cr_assert(strstr(why, "0 nvidia.com/gpu free"), "%s", why);
    gx_share_usage u;
    gx_share_gpu_usage(n, 1, &u);
    cr_assert_eq(u.slots_used, 4);
    cr_assert_eq(u.slots_total, 4);
    cr_assert_eq(u.cores_alloc, 100);
    cr_assert_eq(gx_share_release(n, 102), 1);
    cr_assert(gx_share_fit(n, &r, &p, why, sizeof why));
    cr_assert_eq(p.dev[0].replica, 2, "the freed replica is reused");
    gx_share_dev d[4];
    cr_assert_eq(gx_share_owned(n, 103, d, 4), 1);
    cr_assert_eq(d[0].replica, 3);
    free(n);
}

Test(share, fail_requests_greater_than_one_and_distinct_devices)
{
    gx_share_node *n = new_node();
    gpu(n, 0, GX_SHARE_MPS, 4, 81920);
    gx_share_node_reset(n);
    gx_share_pick p;
    char why[256];
    gx_share_req r = R("nvidia.com/gpu", 2, 0, 0);
    cr_assert_not(gx_share_fit(n, &r, &p, why, sizeof why));
    cr_assert(strstr(why, "failRequestsGreaterThanOne"), "%s", why);
    n->gpu[0].mode = GX_SHARE_TIMESLICING;
    n->gpu[0].fail_gt1 = 0;
    cr_assert_not(gx_share_fit(n, &r, &p, why, sizeof why), "two replicas of one GPU are one device");
    cr_assert(strstr(why, "distinct"), "%s", why);
    gpu(n, 1, GX_SHARE_TIMESLICING, 2, 81920);
    gx_share_node_reset(n);
    cr_assert(gx_share_fit(n, &r, &p, why, sizeof why), "%s", why);
    cr_assert_neq(p.dev[0].gpu, p.dev[1].gpu);
    /* renamed resources are separate */
    snprintf(n->gpu[1].resource, sizeof n->gpu[1].resource, "nvidia.com/gpu.shared");
    gx_share_req s = R("nvidia.com/gpu.shared", 1, 0, 0);
    cr_assert(gx_share_fit(n, &s, &p, why, sizeof why));
    cr_assert_eq(p.dev[0].gpu, 1);
    free(n);
}

Test(share, mig_devices)
{
    gx_share_node *n = new_node();
    gpu(n, 0, GX_SHARE_MIG, 1, 81920);
    gx_share_gpu *g = &n->gpu[0];
    const char *prof[] = {"1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"};
    int start[] = {0, 1, 2, 4}, size[] = {1, 1, 2, 4};
    for (int i = 0; i < 4; i++) {
        snprintf(g->mig[i].profile, sizeof g->mig[i].profile, "%s", prof[i]);
        snprintf(g->mig[i].uuid, sizeof g->mig[i].uuid, "MIG-%d", i);
        g->mig[i].start = start[i];
        g->mig[i].size = size[i];
        g->mig[i].mem_mib = 9984 * size[i];
    }
    g->n_mig = 4;
    gx_share_node_reset(n);
    cr_assert_str_eq(g->mig[3].resource, "nvidia.com/mig-3g.40gb");
    cr_assert_eq(gx_share_offered(n, "nvidia.com/mig-1g.10gb", NULL), 2);
    cr_assert_eq(gx_share_offered(n, "nvidia.com/gpu", NULL), 0);
    gx_share_pick p;
    char why[256];
    gx_share_req r = R("nvidia.com/mig-1g.10gb", 2, 0, 0);
    cr_assert(gx_share_fit(n, &r, &p, why, sizeof why), "%s", why);
    cr_assert_eq(p.n, 2);
    cr_assert_eq(p.dev[0].mig, 0);
    cr_assert_eq(p.dev[1].mig, 1);
    cr_assert_eq(gx_share_commit(n, 1, &p), 0);
    r.count = 1;
    cr_assert_not(gx_share_fit(n, &r, &p, why, sizeof why));
    cr_assert(strstr(why, "2 of 2 in use"), "%s", why);
    gx_share_req w = R("nvidia.com/gpu", 1, 0, 0);
    cr_assert_not(gx_share_fit(n, &w, &p, why, sizeof why));
    cr_assert(strstr(why, "no GPU offers nvidia.com/gpu"), "%s", why);
    gx_share_req big = R("nvidia.com/mig-3g.40gb", 1, 0, 0);
    cr_assert(gx_share_fit(n, &big, &p, why, sizeof why));
    cr_assert_eq(p.dev[0].mig, 3);
    cr_assert_eq(p.dev[0].mem_mib, 39936);
    free(n);
}

Test(share, fractional_packs_and_never_overcommits)
{
    gx_share_node *n = new_node();
    gpu(n, 0, GX_SHARE_FRACTIONAL, 1, 81920);
    gpu(n, 1, GX_SHARE_FRACTIONAL, 1, 81920);
    gx_share_node_reset(n);
    gx_share_pick p;
    char why[256];
    gx_share_req r = R("nvidia.com/gpu", 1, 20480, 30);
    cr_assert(gx_share_fit(n, &r, &p, why, sizeof why));
    cr_assert_eq(gx_share_commit(n, 1, &p), 0);
    int first = p.dev[0].gpu;
    cr_assert(gx_share_fit(n, &r, &p, why, sizeof why));
    cr_assert_eq(p.dev[0].gpu, first, "best fit packs onto the used GPU");
    cr_assert_eq(gx_share_commit(n, 2, &p), 0);
    cr_assert_eq(gx_share_commit(n, 3, &p), 0);
    /* 90% of cores used on `first`: a 30% vGPU goes to the other GPU */
    cr_assert(gx_share_fit(n, &r, &p, why, sizeof why));
    cr_assert_neq(p.dev[0].gpu, first);
    /* memory alone: cores follow the memory share (40960 of 81920 -> 50%) */
    gx_share_req m = R("nvidia.com/gpu", 1, 40960, 0);
    cr_assert(gx_share_fit(n, &m, &p, why, sizeof why));
    cr_assert_eq(p.dev[0].cores, 50);
    /* more memory than any GPU has free */
    gx_share_req huge = R("nvidia.com/gpu", 1, 90000, 10);
    cr_assert_not(gx_share_fit(n, &huge, &p, why, sizeof why));
    cr_assert(strstr(why, "90000 MiB"), "%s", why);
    /* a whole-GPU request takes only a wholly free fractional GPU */
    gx_share_req whole = R("nvidia.com/gpu", 1, 0, 0);
    cr_assert(gx_share_fit(n, &whole, &p, why, sizeof why));
    cr_assert_neq(p.dev[0].gpu, first);
    cr_assert_eq(p.dev[0].cores, 100);
    cr_assert_eq(gx_share_commit(n, 9, &p), 0);
    cr_assert_not(gx_share_fit(n, &whole, &p, why, sizeof why));
    gx_share_usage u;
    gx_share_gpu_usage(n, first, &u);
    cr_assert_eq(u.cores_alloc, 90);
    cr_assert_eq(u.mem_alloc_mib, 3 * 20480);
    cr_assert_eq(u.slots_used, 3);
    cr_assert_eq(gx_share_release(n, 1) + gx_share_release(n, 2) + gx_share_release(n, 3), 3);
    gx_share_gpu_usage(n, first, &u);
    cr_assert_eq(u.cores_alloc, 0);
    cr_assert_eq(n->gpu[first].mem_free, 81920);
    /* two vGPUs land on two GPUs */
    gx_share_release(n, 9);
    gx_share_req two = R("nvidia.com/gpu", 2, 10000, 10);
    cr_assert(gx_share_fit(n, &two, &p, why, sizeof why));
    cr_assert_eq(p.n, 2);
    cr_assert_neq(p.dev[0].gpu, p.dev[1].gpu);
    free(n);
}

Test(share, choose_across_nodes_with_place_policies)
{
    gx_share_node *a = new_node(), *b = new_node();
    gpu(a, 0, GX_SHARE_FRACTIONAL, 1, 81920);
    gpu(b, 0, GX_SHARE_FRACTIONAL, 1, 81920);
    gx_share_node_reset(a);
    gx_share_node_reset(b);
    gx_share_pick p;
    char why[256];
    gx_share_req r = R("nvidia.com/gpu", 1, 8192, 10);
    cr_assert_eq(gx_share_fit(b, &r, &p, why, sizeof why), 1);
    cr_assert_eq(gx_share_commit(b, 1, &p), 0);   /* b is partly used */
    gx_share_node *nodes[3] = {a, NULL, b};
    gx_place_ctx *cx = gx_place_ctx_new(gx_place_policy_by_name("best-fit"), NULL, 1);
    cr_assert(cx);
    cr_assert_eq(gx_share_choose(cx, nodes, 3, &r, &p, why, sizeof why), 2, "best-fit packs onto the used node");
    cr_assert_eq(p.dev[0].cores, 10);
    gx_place_ctx_free(cx);
    /* 35% left on b: a 30% vGPU there strands 5% that no 30% vGPU can use; FGD (and ours)
     * put it on the empty node instead, best-fit on the fuller one. */
    gx_share_release(b, 1);
    gx_share_req r65 = R("nvidia.com/gpu", 1, 0, 65);
    cr_assert_eq(gx_share_fit(b, &r65, &p, why, sizeof why), 1);
    cr_assert_eq(gx_share_commit(b, 1, &p), 0);
    gx_share_req r30 = R("nvidia.com/gpu", 1, 0, 30);
    const char *pols[] = {"best-fit", "fgd", "ours"};
    int want[] = {2, 0, 0};
    for (int i = 0; i < 3; i++) {
        cx = gx_place_ctx_new(gx_place_policy_by_name(pols[i]), NULL, 1);
        cr_assert(cx);
        cr_assert_eq(gx_share_choose(cx, nodes, 3, &r30, &p, why, sizeof why), want[i], "policy %s", pols[i]);
        cr_assert_eq(p.dev[0].cores, 30);
        gx_place_ctx_free(cx);
    }
    gx_share_release(b, 1);
    cr_assert_eq(gx_share_fit(b, &r, &p, why, sizeof why), 1);
    cr_assert_eq(gx_share_commit(b, 1, &p), 0);
    cr_assert_eq(gx_share_choose(NULL, nodes, 3, &r, &p, why, sizeof why), 2);
    gx_share_req big = R("nvidia.com/gpu", 1, 80000, 95);
    cr_assert_eq(gx_share_choose(NULL, nodes, 3, &big, &p, why, sizeof why), 0);
    gx_share_req too = R("nvidia.com/gpu", 1, 100000, 0);
    cr_assert_eq(gx_share_choose(NULL, nodes, 3, &too, &p, why, sizeof why), -1);
    cr_assert(why[0]);
    /* plain requests: the node whose shared GPU is already in use wins */
    gpu(a, 0, GX_SHARE_TIMESLICING, 4, 81920);
    gpu(b, 0, GX_SHARE_TIMESLICING, 4, 81920);
    gx_share_node_reset(a);
    gx_share_node_reset(b);
    gx_share_req one = R("nvidia.com/gpu", 1, 0, 0);
    cr_assert_eq(gx_share_fit(b, &one, &p, why, sizeof why), 1);
    cr_assert_eq(gx_share_commit(b, 1, &p), 0);
    cr_assert_eq(gx_share_choose(NULL, nodes, 3, &one, &p, why, sizeof why), 2);
    free(a);
    free(b);
}

Test(share, modes_by_name)
{
    gx_share_mode m;
    cr_assert_eq(gx_share_mode_parse("mps", &m), 0);
    cr_assert_eq(m, GX_SHARE_MPS);
    cr_assert_str_eq(gx_share_mode_name(GX_SHARE_FRACTIONAL), "fractional");
    cr_assert_eq(gx_share_mode_parse("bogus", &m), -1);
}

/* Time-slicing has no cap in the device plugin; here a device takes up to
 * GX_SHARE_MAX_REPLICAS (1024) replicas, each its own (the model was capped at 64). */
Test(share, time_slicing_far_past_64_replicas)
{
    gx_share_node *n = new_node();
    gpu(n, 0, GX_SHARE_TIMESLICING, 300, 81920);
    gx_share_node_reset(n);
    cr_assert_eq(n->gpu[0].replicas, 300);
    cr_assert_eq(gx_share_offered(n, "nvidia.com/gpu", NULL), 300);
    gx_share_req r = R("nvidia.com/gpu", 1, 0, 0);
    gx_share_pick p;
    char why[256];
    for (int k = 0; k < 300; k++) {
        cr_assert(gx_share_fit(n, &r, &p, why, sizeof why), "replica %d: %s", k, why);
        cr_assert_eq(p.dev[0].replica, k);
        cr_assert_eq(gx_share_commit(n, 1000 + k, &p), 0);
    }
    int used = 0;
    cr_assert_eq(gx_share_offered(n, "nvidia.com/gpu", &used), 300);
    cr_assert_eq(used, 300);
    cr_assert_not(gx_share_fit(n, &r, &p, why, sizeof why), "all 300 taken");
    cr_assert_eq(gx_share_release(n, 1000 + 200), 1);
    cr_assert(gx_share_fit(n, &r, &p, why, sizeof why), "%s", why);
    cr_assert_eq(p.dev[0].replica, 200, "the freed replica is the one taken next");
    gx_share_usage u;
    gx_share_gpu_usage(n, 0, &u);
    cr_assert_eq(u.slots_used, 299);
    cr_assert_eq(u.slots_total, 300);
    gpu(n, 0, GX_SHARE_TIMESLICING, GX_SHARE_MAX_REPLICAS + 5, 81920);
    gx_share_node_reset(n);
    cr_assert_eq(n->gpu[0].replicas, GX_SHARE_MAX_REPLICAS, "clamped at the model's limit");
    free(n);
}
