/* gpu/runtime: start, sampling and stop of the daemon's GPU layer (see runtime.h).
 * Owns: the handle's lifetime. Must not: keep a process-wide instance (the caller owns
 * the handle; tests of the pure parts build their own inventories). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "gpu/runtime.h"
#include "lib/alloc.h"

gx_gpu_rt *gx_gpu_rt_open(const gx_gpu_config *cfg, const char *policy, gx_engine *eng, FILE *log, gx_err *err)
{
    gx_gpu_rt *rt = gx_xcalloc(1, sizeof *rt);
    rt->eng = eng;
    snprintf(rt->policy, sizeof rt->policy, "%s", policy && *policy ? policy : "best-fit");
    if (!(rt->inv = gx_gpu_inventory_open(cfg, err))) {
        free(rt);
        return NULL;
    }
    if (rt->inv->note[0]) fprintf(log, "gpuaas serve: %s\n", rt->inv->note);
    else if (rt->inv->nvml)
        fprintf(log, "gpuaas serve: NVML %s (driver %s): %d GPU%s\n", cfg->nvml_library && *cfg->nvml_library ?
                cfg->nvml_library : GX_NVML_LIBRARY, gx_gpu_nvml_driver(rt->inv->nvml), rt->inv->n_devs,
                rt->inv->n_devs == 1 ? "" : "s");
    return rt;
}

json_t *gx_gpu_rt_nodes(gx_gpu_rt *rt)
{
    return gx_gpu_inventory_nodes(rt->inv);
}

void gx_gpu_rt_start(gx_gpu_rt *rt, const char *data_dir, const char *mps_root, FILE *log)
{
    if (!rt) return;
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/gpu-history.db", data_dir);
    gx_err e;
    gx_err_clear(&e);
    if (!(rt->hist = gx_gpu_history_open(path, &e))) fprintf(log, "gpuaas serve: GPU history kept in memory only: %s\n", e.msg);
    rt->mps = gx_gpu_mps_start(rt->inv, mps_root, log);
}

int64_t gx_gpu_rt_tick(gx_gpu_rt *rt, int64_t now_ms)
{
    if (!rt) return -1;
    if (now_ms >= rt->next_sample_ms) {
        json_t *nodes = gx_engine_nodes(rt->eng);
        gx_gpu_inventory_sample(rt->inv, now_ms, nodes);
        json_decref(nodes);
        gx_gpu_history_flush(rt->hist, rt->inv, now_ms);   /* writes once a minute */
        rt->next_sample_ms = now_ms + GX_GPU_SAMPLE_MS;
    }
    return rt->next_sample_ms - now_ms;
}

void gx_gpu_rt_close(gx_gpu_rt *rt, FILE *log)
{
    if (!rt) return;
    /* GPUs with workloads keep their MPS daemon: the workloads outlive a gpuaas restart */
    const char *busy[256];
    int nb = 0;
    size_t ng = rt->eng ? gx_engine_gpus(rt->eng, NULL, NULL, 0) : 0;
    gx_engine_gpu *gs = gx_xcalloc(ng, sizeof *gs);
    if (ng) gx_engine_gpus(rt->eng, NULL, gs, ng);
    for (size_t k = 0; k < ng && nb < 256; k++)
        if (gs[k].n_users) busy[nb++] = gs[k].uuid;   /* the engine's strings: valid until it changes */
    gx_gpu_mps_stop(rt->mps, busy, nb, log);
    free(gs);
    gx_gpu_history_close(rt->hist);
    gx_gpu_inventory_free(rt->inv);
    free(rt);
}
