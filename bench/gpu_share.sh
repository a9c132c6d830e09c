#!/usr/bin/env bash
# Fractional GPU packing (core/share over core/place's policies): 64 nodes x 8 H100-80GB
# in fractional mode receive a seeded random stream of HAMi-style vGPU requests (sizes
# 10/20/25/30/50/70/100 % of a GPU, memory in proportion), placed one by one until the
# first request that fits nowhere. Prints, per policy, the share of all GPU cores
# allocated at that point (higher = less fragmentation; ratio against random placement
# in the same run) and the time per placement.
# A figure, never a pass/fail (bench/ convention). Needs `make` first (uses build/obj).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
make -s build/obj/src/core/share.o build/obj/src/core/place.o build/obj/src/core/place_frag.o \
  build/obj/src/core/place_ours.o build/obj/src/core/place_score.o >/dev/null
W=$(mktemp -d /tmp/gpuaas-bench.XXXXXX)
trap 'rm -rf "$W"' EXIT
cat > "$W/pack.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "core/share.h"
#define NODES 64
#define GPUS 8
static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint64_t next(void) { rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17; return rng; }
int main(void)
{
    static const int sizes[] = {10, 20, 25, 30, 50, 70, 100};
    const char *pols[] = {"random", "best-fit", "fgd", "ours", "gpu-packing"};
    double ref = 0;   /* random placement, the reference measured in the same run */
    for (int p = 0; p < 5; p++) {
        gx_share_node *nodes = calloc(NODES, sizeof *nodes);
        gx_share_node *ptr[NODES];
        for (int i = 0; i < NODES; i++) {
            nodes[i].n_gpus = GPUS;
            for (int g = 0; g < GPUS; g++) {
                nodes[i].gpu[g].mode = GX_SHARE_FRACTIONAL;
                nodes[i].gpu[g].mem_mib = 81920;
            }
            gx_share_node_reset(&nodes[i]);
            ptr[i] = &nodes[i];
        }
        gx_place_ctx *cx = gx_place_ctx_new(gx_place_policy_by_name(pols[p]), NULL, 42);
        rng = 0x9E3779B97F4A7C15ull;
        long placed = 0, cores = 0;
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        for (;;) {
            int c = sizes[next() % 7];
            gx_share_req r = {"nvidia.com/gpu", 1, 81920LL * c / 100, c};
            gx_share_pick pick;
            char why[256];
            int k = gx_share_choose(cx, ptr, NODES, &r, &pick, why, sizeof why);
            if (k < 0 || gx_share_commit(&nodes[k], placed, &pick)) break;
            placed++;
            cores += c;
        }
        clock_gettime(CLOCK_MONOTONIC, &b);
        double us = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / 1e3 / (placed ? placed : 1);
        double share = 100.0 * cores / (NODES * GPUS * 100);
        if (p == 0) ref = share;
        printf("gpu_share: %-12s %5ld vGPUs placed, %5.1f%% of all GPU cores allocated at the first refusal "
               "(%.2fx random), %6.1f us/placement\n", pols[p], placed, share, ref > 0 ? share / ref : 0, us);
        gx_place_ctx_free(cx);
        free(nodes);
    }
    return 0;
}
C
cc -std=c17 -D_GNU_SOURCE -O2 -Isrc -o "$W/pack" "$W/pack.c" build/obj/src/core/share.o build/obj/src/core/place.o \
  build/obj/src/core/place_frag.o build/obj/src/core/place_ours.o build/obj/src/core/place_score.o -lm
"$W/pack"
