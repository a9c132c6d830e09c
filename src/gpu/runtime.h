/* gpu/runtime: the GPU layer of one running `gpuaas serve`: inventory, MPS daemons and
 * sampling, opened and closed by serve.c, which keeps the handle in the daemon
 * (gx_daemon.gpu); ops/workloads.c asks gpu/podenv for each pod's device environment
 * through it, and routes.c and metrics.c hand it to gpu/api.c.
 * A handle, not a process-wide instance: each caller says which runtime it means, and
 * a test can run two daemons' GPU layers side by side.
 * Owns: the order of start (inventory -> Nodes for the engine -> MPS) and
 * stop (MPS daemons of idle GPUs quit). Must not: answer HTTP (gpu/api.c does). */
#ifndef GX_GPU_RUNTIME_H
#define GX_GPU_RUNTIME_H
#include <stdio.h>
#include "core/engine.h"
#include "core/place.h"
#include "gpu/history.h"
#include "gpu/inventory.h"
#include "gpu/mps.h"
#include "gpu/podenv.h"

#define GX_GPU_SAMPLE_MS 10000

typedef struct gx_gpu_rt {
    gx_gpu_inv *inv;
    gx_gpu_mps *mps;
    gx_engine *eng;
    gx_gpu_history *hist;     /* minute summaries in DATA/gpu-history.db, NULL when unavailable */
    char policy[32];          /* fractional placement policy (core/place) */
    int64_t next_sample_ms;
} gx_gpu_rt;

/* Build the inventory (the caller owns the handle: gx_gpu_rt_close); say on `log` where
 * the GPUs come from (and why NVML was not used). NULL with err. */
gx_gpu_rt *gx_gpu_rt_open(const gx_gpu_config *cfg, const char *policy, gx_engine *eng, FILE *log, gx_err *err);
/* The Node manifests to apply to the engine (new reference). */
json_t *gx_gpu_rt_nodes(gx_gpu_rt *rt);
/* Open the history (DATA/gpu-history.db) and start the MPS daemons (under mps_root). */
void gx_gpu_rt_start(gx_gpu_rt *rt, const char *data_dir, const char *mps_root, FILE *log);
/* Sample when due; returns ms until the next sample (-1 when rt is NULL). */
int64_t gx_gpu_rt_tick(gx_gpu_rt *rt, int64_t now_ms);
/* Quit the MPS daemons of GPUs without workloads, free everything (NULL: nothing). */
void gx_gpu_rt_close(gx_gpu_rt *rt, FILE *log);

#endif
