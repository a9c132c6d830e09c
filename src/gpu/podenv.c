/* gpu/podenv: MPS and fractional limits as environment variables (see podenv.h).
 * Owns: the variable names and their formats (MPS docs, HAMi-core).
 * Must not: know processes; it only returns strings. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu/podenv.h"
#include "lib/alloc.h"

#define MAX_ENV 24

static void push(char **v, int *n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void push(char **v, int *n, const char *fmt, ...)
{
    if (*n >= MAX_ENV) return;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&v[*n], fmt, ap) >= 0) (*n)++;
    va_end(ap);
}

typedef struct { const gx_engine_dev *d; int n; } dev_list;

/* The same figures from the engine's typed answer (gx_engine_wl_devices). */
static int dev_limits(const void *ctx, const char *uuid, int *cores, long long *mem)
{
    const dev_list *l = ctx;
    for (int k = 0; k < l->n; k++) {
        if (!l->d[k].shared || strcmp(l->d[k].uuid, uuid)) continue;
        *cores = l->d[k].cores;
        *mem = (long long)l->d[k].mem_mib;
        return 1;
    }
    return 0;
}

/* The entries for a pod holding `uuids` (CUDA_VISIBLE_DEVICES order), with the engine's
 * limits per device from `limits` when it has them. */
static char **podenv(gx_gpu_inv *inv, const gx_gpu_mps *mps, const char *const *uuids, int ndev,
                     int (*limits)(const void *ctx, const char *uuid, int *cores, long long *mem), const void *ctx)
{
    if (!inv || ndev <= 0) return NULL;
    char **v = gx_xcalloc(MAX_ENV + 1, sizeof *v);
    int n = 0;
    for (int i = 0; i < ndev; i++) {
        const char *u = uuids[i];
        int mig;
        gx_gpu_dev *d = gx_gpu_inventory_owner(inv, u, &mig);
        if (!d) continue;
        if (i == 0) push(v, &n, "GPUAAS_GPU_SHARING=%s", gx_share_mode_name(d->mode));
        if (d->mode != GX_SHARE_MPS && d->mode != GX_SHARE_FRACTIONAL) continue;
        int cores = 100;
        long long mem = d->mem_mib;
        if (!limits(ctx, u, &cores, &mem) && d->mode == GX_SHARE_MPS) {
            cores = 100 / (d->replicas > 0 ? d->replicas : 1);
            mem = d->mem_mib / (d->replicas > 0 ? d->replicas : 1);
        }
        if (d->mode == GX_SHARE_FRACTIONAL) {
            push(v, &n, "CUDA_DEVICE_MEMORY_LIMIT_%d=%lldm", i, mem);
            if (i == 0) push(v, &n, "CUDA_DEVICE_SM_LIMIT=%d", cores);
        }
        const char *pipe_dir, *log_dir;
        /* one MPS server per client process: only a single-device pod can use it */
        if (ndev == 1 && mps && gx_gpu_mps_dirs(mps, d->uuid, &pipe_dir, &log_dir)) {
            push(v, &n, "CUDA_MPS_PIPE_DIRECTORY=%s", pipe_dir);
            push(v, &n, "CUDA_MPS_LOG_DIRECTORY=%s", log_dir);
            push(v, &n, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=%d", cores);
            push(v, &n, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=%lldM", mem);
        }
    }
    if (!n) { free(v); return NULL; }
    return v;
}

char **gx_gpu_podenv_devs(gx_gpu_inv *inv, const gx_gpu_mps *mps, const gx_engine_dev *devs, int n)
{
    if (!inv || n <= 0) return NULL;
    const char **list = gx_xcalloc((size_t)n, sizeof *list);
    for (int k = 0; k < n; k++) list[k] = devs[k].uuid;
    dev_list l = {devs, n};
    char **v = podenv(inv, mps, list, n, dev_limits, &l);
    free(list);
    return v;
}
