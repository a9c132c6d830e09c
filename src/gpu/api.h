/* gpu/api: the GPU part of the REST API and of /metrics.
 *
 *   GET  /api/v1/gpus                              every GPU: model, memory, mode, slices or
 *                                                  replicas with their holders, utilisation,
 *                                                  memory used, MPS state, processes
 *   GET  /api/v1/gpus/{uuid}/utilization?window=1h the sampled history (10 s, last hour)
 *   POST /api/v1/gpus/mig {"config", "node"?, "migConfig"?}   admin: re-lay out MIG devices
 *
 * /metrics: DCGM-exporter names and labels (DCGM_FI_DEV_GPU_UTIL, DCGM_FI_DEV_FB_USED,
 * DCGM_FI_DEV_FB_FREE; DCGM_FI_PROF_GR_ENGINE_ACTIVE and FB_* per MIG instance with
 * GPU_I_PROFILE/GPU_I_ID) and gpuaas_gpu_* allocation per device and per namespace.
 * Owns: those shapes. Must not: change workloads; MIG apply refuses busy GPUs. */
#ifndef GX_GPU_API_H
#define GX_GPU_API_H
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "core/engine.h"
#include "lib/err.h"

struct gx_gpu_rt;

/* rt: the daemon's GPU runtime (gpu/runtime.h), NULL when it has none.
 * segs: the path segments after /api/v1/gpus (n may be 0). Returns 0 with *out (the
 * answer, status 200), or -1 with err (status in err->status). */
int gx_gpu_api(struct gx_gpu_rt *rt, gx_engine *eng, const char *method, const char *const *segs, int n, const char *body,
               size_t body_len, int admin, const char *window, int64_t now_ms, json_t **out, gx_err *err);

/* The GPU metrics as Prometheus text (malloc'd; "" when there are no GPUs). */
char *gx_gpu_metrics(struct gx_gpu_rt *rt, gx_engine *eng);

/* "15m", "1h", "90s", "3600" (seconds) -> ms; -1 when malformed. */
int64_t gx_gpu_parse_window(const char *s);

#endif
