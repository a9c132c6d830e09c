/* cudashim/info: what a program of the pod is told about memory. cuMemGetInfo_v2 and
 * NVML's nvmlDeviceGetMemoryInfo / _v2 (so nvidia-smi inside the pod agrees) report
 * total = min(limit, physical) and free = total - what the pod's processes hold
 * together (never more than the device really has free).
 * NVML numbers devices its own way: a handle is matched to its index by asking NVML
 * for each index's handle, and the index is taken to be the region's device (the
 * sandbox shows the pod only its own GPUs, in the order of CUDA_VISIBLE_DEVICES).
 * Owns: the memory-information hooks. Must not: change anything but the reported figures. */
#include "cudashim/shim.h"

/* The pod's view of device DEV: 0 when there is no limit to show. */
static int clamp(int dev, uint64_t *total, uint64_t *free_, uint64_t *used)
{
    gx_cuda_region *r = gx_cs_region();
    if (!r || dev < 0 || dev >= GX_CUDA_REGION_DEVICES || !r->limit[dev]) return 0;
    uint64_t t = r->limit[dev] < *total ? r->limit[dev] : *total;
    uint64_t u = __atomic_load_n(&r->used[dev], __ATOMIC_ACQUIRE);
    uint64_t f = t > u ? t - u : 0;
    if (f > *free_) f = *free_;
    *total = t;
    *free_ = f;
    if (used) *used = t - f;
    return 1;
}

typedef CUresult (*info_fn)(size_t *, size_t *);
GX_CS_EXPORT CUresult cuMemGetInfo_v2(size_t *free_, size_t *total)
{
    GX_CS_REAL(info_fn, real, "cuMemGetInfo_v2");
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult rc = real(free_, total);
    if (rc != CUDA_SUCCESS || !free_ || !total || !gx_cs_region()) return rc;
    uint64_t t = *total, f = *free_;
    if (clamp(gx_cs_current_device(), &t, &f, NULL)) {
        *total = (size_t)t;
        *free_ = (size_t)f;
    }
    return rc;
}

typedef int (*count_fn)(unsigned *);
typedef int (*handle_fn)(unsigned, nvmlDevice_t *);
static int nvml_index(nvmlDevice_t h)
{
    GX_CS_REAL(count_fn, count, "nvmlDeviceGetCount_v2");
    GX_CS_REAL(handle_fn, by_index, "nvmlDeviceGetHandleByIndex_v2");
    unsigned n = 0;
    if (!count || !by_index || count(&n) != 0) return -1;
    for (unsigned i = 0; i < n && i < GX_CUDA_REGION_DEVICES; i++) {
        nvmlDevice_t x;
        if (by_index(i, &x) == 0 && x == h) return (int)i;
    }
    return -1;
}

typedef int (*nvinfo_fn)(nvmlDevice_t, nvmlMemory_t *);
GX_CS_EXPORT int nvmlDeviceGetMemoryInfo(nvmlDevice_t h, nvmlMemory_t *m)
{
    GX_CS_REAL(nvinfo_fn, real, "nvmlDeviceGetMemoryInfo");
    if (!real) return 9;   /* NVML_ERROR_DRIVER_NOT_LOADED */
    int rc = real(h, m);
    if (rc != 0 || !m || !gx_cs_region()) return rc;
    uint64_t t = m->total, f = m->free, u = m->used;
    if (clamp(nvml_index(h), &t, &f, &u)) {
        m->total = t;
        m->free = f;
        m->used = u;
    }
    return rc;
}

typedef int (*nvinfo2_fn)(nvmlDevice_t, nvmlMemory_v2_t *);
GX_CS_EXPORT int nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t h, nvmlMemory_v2_t *m)
{
    GX_CS_REAL(nvinfo2_fn, real, "nvmlDeviceGetMemoryInfo_v2");
    if (!real) return 3;   /* NVML_ERROR_NOT_SUPPORTED: this NVML has no _v2 */
    int rc = real(h, m);
    if (rc != 0 || !m || !gx_cs_region()) return rc;
    uint64_t t = m->total, f = m->free, u = m->used;
    if (clamp(nvml_index(h), &t, &f, &u)) {
        m->total = t;
        m->free = f;
        m->used = u;
    }
    return rc;
}
