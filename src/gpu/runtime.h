/* gpu/runtime: the GPU layer of one running `gpuaas serve`: inventory, MPS daemons and
 * sampling, started and stopped by serve.c (ops/workloads.c asks gpu/podenv for each
 * pod's device environment through gx_gpu_rt_get()).
 *
 * One daemon per process, one thread: the runtime is a process-wide singleton that
 * routes.c and metrics.c reach through gx_gpu_rt_get() (NULL until started), so the
 * daemon struct in ops/daemon.h does not have to know about GPUs.
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

gx_gpu_rt *gx_gpu_rt_get(void);

/* Build the inventory and return the Node manifests to apply to the engine (new
 * reference); say on `log` where the GPUs come from (and why NVML was not used). */
json_t *gx_gpu_rt_open(const gx_gpu_config *cfg, const char *policy, gx_engine *eng, FILE *log, gx_err *err);
/* Open the history (DATA/gpu-history.db) and start the MPS daemons (under mps_root). */
void gx_gpu_rt_start(const char *data_dir, const char *mps_root, FILE *log);
/* Sample when due; returns ms until the next sample. */
int64_t gx_gpu_rt_tick(int64_t now_ms);
/* Quit the MPS daemons of GPUs without workloads, free everything. */
void gx_gpu_rt_stop(FILE *log);

#endif
