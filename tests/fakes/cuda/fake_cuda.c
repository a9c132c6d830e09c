/* fake_cuda: a stand-in libcuda.so.1 for testing libgpuaas-cuda.so on machines without a
 * GPU. The real driver cannot exist in CI (no GPU, no kernel module), so the tests build
 * this one and load it through the same names an application or the CUDA runtime uses
 * (linked, dlopen + dlsym, cuGetProcAddress, which answers the fake's OWN functions: the
 * shim must still intercept). Declarations are src/cudashim/cuda_api.h's.
 * Behaviour comes from the environment:
 *   FAKE_CUDA_DEVICES  devices (default 1, at most 16)
 *   FAKE_CUDA_MEM_MIB  physical memory of each device (default 81920); an allocation past
 *                      it fails with CUDA_ERROR_OUT_OF_MEMORY, as the real one would
 *   FAKE_CUDA_KERNEL_US how long every kernel "runs" (default 0) on its stream's timeline:
 *                      a launch returns at once, a synchronize waits until the timeline
 *                      is done; the busy time is recorded per device
 * Debug exports for tests: fake_cuda_used(dev) (bytes allocated in this process) and
 * fake_cuda_busy_ns(dev) (kernel time launched).
 * Owns: nothing of gpuaas; must not be linked into the daemon or the shim. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "cudashim/cuda_api.h"

#define EXPORT __attribute__((visibility("default")))
#define MAXDEV 16
#define MAXALLOC 16384

struct CUctx_st { int dev; };
struct CUstream_st { int dev; uint64_t done_at; };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int inited, ndev = 1;
static uint64_t mem_bytes = 81920ull << 20, kernel_ns;
static uint64_t used[MAXDEV], busy[MAXDEV];
static struct CUctx_st ctxs[MAXDEV];
static struct CUstream_st default_stream[MAXDEV];
static __thread int cur_dev = -1;
static uint64_t next_addr = 0x700000000000ull, next_handle = 1;
static struct { uint64_t key; uint64_t size; int kind, dev; } allocs[MAXALLOC];

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t env_u64(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 10) : dflt;
}

EXPORT CUresult cuInit(unsigned flags)
{
    pthread_mutex_lock(&mu);
    if (!inited) {
        ndev = (int)env_u64("FAKE_CUDA_DEVICES", 1);
        if (ndev < 1 || ndev > MAXDEV) ndev = 1;
        mem_bytes = env_u64("FAKE_CUDA_MEM_MIB", 81920) << 20;
        kernel_ns = env_u64("FAKE_CUDA_KERNEL_US", 0) * 1000;
        for (int d = 0; d < MAXDEV; d++) ctxs[d].dev = default_stream[d].dev = d;
        inited = 1;
    }
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

EXPORT CUresult cuDriverGetVersion(int *v) { *v = 12040; return CUDA_SUCCESS; }
EXPORT CUresult cuDeviceGetCount(int *n) { if (!inited) return CUDA_ERROR_NOT_INITIALIZED; *n = ndev; return CUDA_SUCCESS; }
EXPORT CUresult cuDeviceGet(CUdevice *d, int ordinal)
{
    if (!inited) return CUDA_ERROR_NOT_INITIALIZED;
    if (ordinal < 0 || ordinal >= ndev) return CUDA_ERROR_INVALID_VALUE;
    *d = ordinal;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuDeviceGetName(char *name, int len, CUdevice d) { snprintf(name, (size_t)len, "Fake GPU %d", d); return CUDA_SUCCESS; }
EXPORT CUresult cuDeviceTotalMem_v2(size_t *b, CUdevice d) { *b = (size_t)mem_bytes; return CUDA_SUCCESS; }

EXPORT CUresult cuCtxCreate_v2(CUcontext *c, unsigned flags, CUdevice d)
{
    if (!inited) return CUDA_ERROR_NOT_INITIALIZED;
    if (d < 0 || d >= ndev) return CUDA_ERROR_INVALID_VALUE;
    *c = &ctxs[d];
    cur_dev = d;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuCtxDestroy_v2(CUcontext c) { if (c && cur_dev == c->dev) cur_dev = -1; return CUDA_SUCCESS; }
EXPORT CUresult cuCtxSetCurrent(CUcontext c) { cur_dev = c ? c->dev : -1; return CUDA_SUCCESS; }
EXPORT CUresult cuCtxGetDevice(CUdevice *d)
{
    if (cur_dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    *d = cur_dev;
    return CUDA_SUCCESS;
}

static struct CUstream_st *stream_of(CUstream s)
{
    if (!s || (uintptr_t)s <= 2) return &default_stream[cur_dev < 0 ? 0 : cur_dev];
    return s;
}
EXPORT CUresult cuStreamCreate(CUstream *s, unsigned flags)
{
    if (cur_dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    struct CUstream_st *x = calloc(1, sizeof *x);
    if (!x) return CUDA_ERROR_OUT_OF_MEMORY;
    x->dev = cur_dev;
    *s = x;
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamDestroy_v2(CUstream s) { if (s && (uintptr_t)s > 2) free(s); return CUDA_SUCCESS; }

/* Sleep to just before T, then spin, as the real driver's default synchronize spins
 * while it waits: the caller sees the end of the work within microseconds. */
static void wait_until(uint64_t t)
{
    uint64_t now = now_ns();
    if (t <= now) return;
    if (t - now > 300000) {
        uint64_t s = t - 300000;
        struct timespec ts = {(time_t)(s / 1000000000u), (long)(s % 1000000000u)};
        while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {}
    }
    while (now_ns() < t) {}
}
EXPORT CUresult cuStreamSynchronize(CUstream s)
{
    pthread_mutex_lock(&mu);
    uint64_t t = stream_of(s)->done_at;
    pthread_mutex_unlock(&mu);
    wait_until(t);
    return CUDA_SUCCESS;
}
/* Events: an event is reached on its stream's timeline when the work before it is done;
 * ElapsedTime is the difference of those GPU times, as the real one measures on the GPU. */
struct CUevent_st { uint64_t t; };
EXPORT CUresult cuEventCreate(CUevent *e, unsigned flags)
{
    *e = calloc(1, sizeof **e);
    return *e ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}
EXPORT CUresult cuEventDestroy_v2(CUevent e) { free(e); return CUDA_SUCCESS; }
EXPORT CUresult cuEventRecord(CUevent e, CUstream s)
{
    pthread_mutex_lock(&mu);
    uint64_t now = now_ns(), d = stream_of(s)->done_at;
    e->t = d > now ? d : now;
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuEventRecord_ptsz(CUevent e, CUstream s) { return cuEventRecord(e, s); }
EXPORT CUresult cuEventSynchronize(CUevent e) { wait_until(e->t); return CUDA_SUCCESS; }
EXPORT CUresult cuEventElapsedTime(float *ms, CUevent a, CUevent b)
{
    *ms = (float)((double)((int64_t)(b->t - a->t)) / 1e6);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuStreamSynchronize_ptsz(CUstream s) { return cuStreamSynchronize(s); }
EXPORT CUresult cuCtxSynchronize(void) { return cuStreamSynchronize(NULL); }

/* ---- memory ---- */
static int track(int kind, uint64_t key, int dev, uint64_t size)
{
    for (int i = 0; i < MAXALLOC; i++)
        if (!allocs[i].kind) {
            allocs[i].key = key, allocs[i].size = size, allocs[i].kind = kind, allocs[i].dev = dev;
            used[dev] += size;
            return 0;
        }
    return -1;
}
static CUresult untrack(int kind, uint64_t key)
{
    pthread_mutex_lock(&mu);
    for (int i = 0; i < MAXALLOC; i++)
        if (allocs[i].kind == kind && allocs[i].key == key) {
            used[allocs[i].dev] -= allocs[i].size;
            allocs[i].kind = 0;
            pthread_mutex_unlock(&mu);
            return CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&mu);
    return CUDA_ERROR_INVALID_VALUE;
}
/* Allocate SIZE on DEV (kind 1 pointer, 2 handle, 3 array): the key in *KEY. */
static CUresult fake_alloc(int kind, int dev, uint64_t size, uint64_t *key)
{
    if (!inited) return CUDA_ERROR_NOT_INITIALIZED;
    if (dev < 0 || dev >= ndev) return CUDA_ERROR_INVALID_CONTEXT;
    if (size == 0) return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&mu);
    if (used[dev] + size > mem_bytes) { pthread_mutex_unlock(&mu); return CUDA_ERROR_OUT_OF_MEMORY; }
    uint64_t k = kind == 2 ? next_handle++ : next_addr;
    if (kind != 2) next_addr += (size + 0xfffff) & ~0xfffffull;
    CUresult rc = track(kind, k, dev, size) == 0 ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&mu);
    if (rc == CUDA_SUCCESS) *key = k;
    return rc;
}

EXPORT CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n) { return fake_alloc(1, cur_dev, n, p); }
EXPORT CUresult cuMemAllocManaged(CUdeviceptr *p, size_t n, unsigned f) { return fake_alloc(1, cur_dev, n, p); }
EXPORT CUresult cuMemAllocAsync(CUdeviceptr *p, size_t n, CUstream s) { return fake_alloc(1, cur_dev, n, p); }
EXPORT CUresult cuMemAllocAsync_ptsz(CUdeviceptr *p, size_t n, CUstream s) { return fake_alloc(1, cur_dev, n, p); }
EXPORT CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s) { return fake_alloc(1, cur_dev, n, p); }
EXPORT CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *p, size_t n, CUmemoryPool pool, CUstream s) { return fake_alloc(1, cur_dev, n, p); }
EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t w, size_t h, unsigned elem)
{
    *pitch = (w + 511) / 512 * 512;
    return fake_alloc(1, cur_dev, (uint64_t)*pitch * h, p);
}
EXPORT CUresult cuMemFree_v2(CUdeviceptr p) { return untrack(1, p); }
EXPORT CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) { return untrack(1, p); }
EXPORT CUresult cuMemFreeAsync_ptsz(CUdeviceptr p, CUstream s) { return untrack(1, p); }
EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *h, size_t n, const CUmemAllocationProp *prop,
                            unsigned long long flags)
{
    if (!prop) return CUDA_ERROR_INVALID_VALUE;
    if (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) return fake_alloc(2, prop->location.id, n, h);
    /* host memory: taken from no device */
    pthread_mutex_lock(&mu);
    *h = next_handle++;
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}
EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle h)
{
    CUresult rc = untrack(2, h);
    return rc == CUDA_SUCCESS || h < next_handle ? CUDA_SUCCESS : rc;
}
EXPORT CUresult cuMemMap(CUdeviceptr p, size_t n, size_t off, CUmemGenericAllocationHandle h, unsigned long long f)
{
    return h && h < next_handle ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
static uint64_t arr_bytes(size_t w, size_t h, size_t d, unsigned ch, int fmt)
{
    uint64_t e = fmt == 1 || fmt == 8 ? 1 : fmt == 2 || fmt == 9 || fmt == 0x10 ? 2 : 4;
    return (uint64_t)w * (h ? h : 1) * (d ? d : 1) * (ch ? ch : 1) * e;
}
EXPORT CUresult cuArrayCreate_v2(CUarray *a, const CUDA_ARRAY_DESCRIPTOR *d)
{
    uint64_t k;
    CUresult rc = fake_alloc(3, cur_dev, arr_bytes(d->Width, d->Height, 1, d->NumChannels, d->Format), &k);
    if (rc == CUDA_SUCCESS) *a = (CUarray)(uintptr_t)k;
    return rc;
}
EXPORT CUresult cuArray3DCreate_v2(CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    uint64_t k;
    CUresult rc = fake_alloc(3, cur_dev, arr_bytes(d->Width, d->Height, d->Depth, d->NumChannels, d->Format), &k);
    if (rc == CUDA_SUCCESS) *a = (CUarray)(uintptr_t)k;
    return rc;
}
EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *a, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
    uint64_t k, n = 0;
    size_t w = d->Width, h = d->Height, z = d->Depth;
    for (unsigned l = 0; l < (levels ? levels : 1); l++) {
        n += arr_bytes(w, h, z, d->NumChannels, d->Format);
        w = w > 1 ? w / 2 : 1, h = h > 1 ? h / 2 : h, z = z > 1 ? z / 2 : z;
    }
    CUresult rc = fake_alloc(3, cur_dev, n, &k);
    if (rc == CUDA_SUCCESS) *a = (CUmipmappedArray)(uintptr_t)k;
    return rc;
}
EXPORT CUresult cuArrayDestroy(CUarray a) { return untrack(3, (uint64_t)(uintptr_t)a); }
EXPORT CUresult cuMipmappedArrayDestroy(CUmipmappedArray a) { return untrack(3, (uint64_t)(uintptr_t)a); }
EXPORT CUresult cuMemGetInfo_v2(size_t *free_, size_t *total)
{
    int d = cur_dev < 0 ? 0 : cur_dev;
    pthread_mutex_lock(&mu);
    *total = (size_t)mem_bytes;
    *free_ = (size_t)(mem_bytes - used[d]);
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}

/* ---- kernels: each runs kernel_ns on its stream's timeline ---- */
static CUresult run_kernel(CUstream s)
{
    if (!inited) return CUDA_ERROR_NOT_INITIALIZED;
    if (cur_dev < 0) return CUDA_ERROR_INVALID_CONTEXT;
    pthread_mutex_lock(&mu);
    struct CUstream_st *x = stream_of(s);
    uint64_t now = now_ns(), start = x->done_at > now ? x->done_at : now;
    x->done_at = start + kernel_ns;
    busy[x->dev] += kernel_ns;
    pthread_mutex_unlock(&mu);
    return CUDA_SUCCESS;
}
#define KARGS CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz, \
              unsigned sh, CUstream s, void **p
EXPORT CUresult cuLaunchKernel(KARGS, void **e) { return run_kernel(s); }
EXPORT CUresult cuLaunchKernel_ptsz(KARGS, void **e) { return run_kernel(s); }
EXPORT CUresult cuLaunchCooperativeKernel(KARGS) { return run_kernel(s); }
EXPORT CUresult cuLaunchCooperativeKernel_ptsz(KARGS) { return run_kernel(s); }
EXPORT CUresult cuLaunchKernelEx(const CUlaunchConfig *c, CUfunction f, void **p, void **e) { return run_kernel(c->hStream); }
EXPORT CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *c, CUfunction f, void **p, void **e) { return run_kernel(c->hStream); }
EXPORT CUresult cuGraphLaunch(CUgraphExec g, CUstream s) { return run_kernel(s); }
EXPORT CUresult cuGraphLaunch_ptsz(CUgraphExec g, CUstream s) { return run_kernel(s); }

EXPORT uint64_t fake_cuda_used(int dev) { return dev >= 0 && dev < MAXDEV ? used[dev] : 0; }
EXPORT uint64_t fake_cuda_busy_ns(int dev) { return dev >= 0 && dev < MAXDEV ? busy[dev] : 0; }

/* ---- entry points by name, as the real driver's cuGetProcAddress answers them ---- */
EXPORT CUresult cuGetProcAddress(const char *sym, void **pfn, int ver, cuuint64_t flags);
EXPORT CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *st);
typedef struct { const char *name; int since; void *fn, *ptsz; } proc;
#define P(n, v, f) {n, v, (void *)f, NULL}
#define PP(n, v, f) {n, v, (void *)f, (void *)f##_ptsz}
static const proc procs[] = {
    P("cuInit", 2000, cuInit), P("cuDeviceGet", 2000, cuDeviceGet), P("cuDeviceGetCount", 2000, cuDeviceGetCount),
    P("cuCtxCreate", 3020, cuCtxCreate_v2), P("cuCtxGetDevice", 2000, cuCtxGetDevice),
    P("cuMemAlloc", 3020, cuMemAlloc_v2), P("cuMemAllocPitch", 3020, cuMemAllocPitch_v2),
    P("cuMemAllocManaged", 6000, cuMemAllocManaged), PP("cuMemAllocAsync", 11020, cuMemAllocAsync),
    PP("cuMemAllocFromPoolAsync", 11020, cuMemAllocFromPoolAsync), P("cuMemCreate", 10020, cuMemCreate),
    P("cuMemRelease", 10020, cuMemRelease), P("cuMemMap", 10020, cuMemMap),
    P("cuArrayCreate", 3020, cuArrayCreate_v2), P("cuArray3DCreate", 3020, cuArray3DCreate_v2),
    P("cuMipmappedArrayCreate", 5000, cuMipmappedArrayCreate), P("cuMemFree", 3020, cuMemFree_v2),
    PP("cuMemFreeAsync", 11020, cuMemFreeAsync), P("cuArrayDestroy", 2000, cuArrayDestroy),
    P("cuMipmappedArrayDestroy", 5000, cuMipmappedArrayDestroy), P("cuMemGetInfo", 3020, cuMemGetInfo_v2),
    PP("cuLaunchKernel", 4000, cuLaunchKernel), PP("cuLaunchKernelEx", 11060, cuLaunchKernelEx),
    PP("cuLaunchCooperativeKernel", 9000, cuLaunchCooperativeKernel), PP("cuGraphLaunch", 10000, cuGraphLaunch),
    PP("cuStreamSynchronize", 2000, cuStreamSynchronize), P("cuCtxSynchronize", 2000, cuCtxSynchronize),
    P("cuStreamCreate", 2000, cuStreamCreate),
};

static CUresult lookup(const char *sym, void **pfn, int ver, cuuint64_t flags, CUdriverProcAddressQueryResult *st)
{
    *pfn = NULL;
    if (st) *st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (!strcmp(sym, "cuGetProcAddress")) {
        *pfn = ver >= 12000 ? (void *)cuGetProcAddress_v2 : (void *)cuGetProcAddress;
    } else {
        for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
            if (strcmp(procs[i].name, sym)) continue;
            if (ver < procs[i].since) {
                if (st) *st = CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT;
                return CUDA_SUCCESS;
            }
            *pfn = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) && procs[i].ptsz ? procs[i].ptsz : procs[i].fn;
        }
    }
    if (*pfn && st) *st = CU_GET_PROC_ADDRESS_SUCCESS;
    return *pfn ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}
EXPORT CUresult cuGetProcAddress_v2(const char *sym, void **pfn, int ver, cuuint64_t flags,
                                    CUdriverProcAddressQueryResult *st)
{
    return lookup(sym, pfn, ver, flags, st);
}
EXPORT CUresult cuGetProcAddress(const char *sym, void **pfn, int ver, cuuint64_t flags)
{
    return lookup(sym, pfn, ver, flags, NULL);
}
