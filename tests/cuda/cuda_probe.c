/* cuda_probe: a small CUDA driver API program for tests/integration/cuda_shim.sh. It uses
 * the driver exactly as an application or the CUDA runtime does: dlopen("libcuda.so.1")
 * and dlsym, or cuGetProcAddress (how CUDA >= 11.3 runtimes find everything); under
 * LD_PRELOAD=libgpuaas-cuda.so it is what the shim must keep in its limits.
 *   cuda_probe mkregion PATH LIMIT_MIB [SHARE] [BAD]  write a region as the daemon would
 *                                                    (BAD=1: a wrong version)
 *   cuda_probe region PATH        print device 0's figures from the region
 *   cuda_probe entry NAME MIB     through entry point NAME: MIB/2 (under), then MIB/2+1
 *                                 more (over), free the first, again, free: rc of each
 *   cuda_probe hosttype MIB       cuMemCreate on a HOST location: not device memory
 *   cuda_probe meminfo            cuMemGetInfo_v2 and NVML's memory info, MiB
 *   cuda_probe hold MIB [SECS]    cuMemAlloc_v2 MIB, print the rc, keep it SECS (default 600)
 *   cuda_probe fork MIB           parent and forked child each take MIB: the figures
 *   cuda_probe bypass MIB         MIB through every other way of finding cuMemAlloc
 *   cuda_probe share N            N kernel launches (all four launch calls in turn):
 *                                 the achieved share of the fake's busy time
 * Owns: nothing of gpuaas. */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "cudashim/cuda_api.h"
#include "gpu/cuda_region.h"

#define MIB (1024ull * 1024ull)
static void *lib;

static void *sym(const char *name)
{
    void *p = dlsym(lib, name);
    if (!p) { fprintf(stderr, "cuda_probe: %s not found\n", name); exit(3); }
    return p;
}
#define FN(type, name) ((type)sym(name))

typedef CUresult (*init_fn)(unsigned);
typedef CUresult (*ctx_fn)(CUcontext *, unsigned, CUdevice);
static void start(void)
{
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!lib) { fprintf(stderr, "cuda_probe: %s\n", dlerror()); exit(3); }
    CUcontext c;
    if (FN(init_fn, "cuInit")(0) || FN(ctx_fn, "cuCtxCreate_v2")(&c, 0, 0)) { fprintf(stderr, "cuda_probe: no context\n"); exit(3); }
}

static gx_cuda_region *map_region(const char *path)
{
    int fd = open(path, O_RDONLY);
    void *m = fd < 0 ? MAP_FAILED : mmap(NULL, sizeof(gx_cuda_region), PROT_READ, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) { perror(path); exit(3); }
    close(fd);
    return m;
}
/* the region's use on device 0, MiB (rounded down), or -1 without a region */
static long region_used(void)
{
    const char *p = getenv(GX_CUDA_REGION_ENV);
    if (!p) return -1;
    gx_cuda_region *r = map_region(p);
    long u = (long)(__atomic_load_n(&r->used[0], __ATOMIC_ACQUIRE) / MIB);
    munmap(r, sizeof *r);
    return u;
}

static int mkregion(const char *path, uint64_t limit_mib, unsigned share, int bad)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0666);
    if (fd < 0 || ftruncate(fd, GX_CUDA_REGION_LOCK_BASE + GX_CUDA_REGION_PROCS) != 0) { perror(path); return 1; }
    gx_cuda_region *r = mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (r == MAP_FAILED) { perror("mmap"); return 1; }
    r->version = bad ? 99 : GX_CUDA_REGION_VERSION;
    r->ndevices = 1;
    r->limit[0] = limit_mib * MIB;
    r->total[0] = 81920 * MIB;
    r->sm_share[0] = share;
    __atomic_store_n(&r->magic, GX_CUDA_REGION_MAGIC, __ATOMIC_RELEASE);
    munmap(r, sizeof *r);
    close(fd);
    return 0;
}

static int region(const char *path)
{
    gx_cuda_region *r = map_region(path);
    int slots = 0;
    for (int i = 0; i < GX_CUDA_REGION_PROCS; i++) slots += r->slots[i].in_use != 0;
    printf("used=%llu peak=%llu refused=%llu launches=%llu busy_ms=%llu window_ms=%llu throttled_ms=%llu slots=%d\n",
           (unsigned long long)(r->used[0] / MIB), (unsigned long long)(r->peak[0] / MIB),
           (unsigned long long)r->refused[0], (unsigned long long)r->launches[0],
           (unsigned long long)(r->busy_ns[0] / 1000000), (unsigned long long)(r->window_ns[0] / 1000000),
           (unsigned long long)(r->throttled_ns[0] / 1000000), slots);
    return 0;
}

/* One allocation of MIB mebibytes through entry point NAME; KEY receives what frees it. */
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*alloc3_fn)(CUdeviceptr *, size_t, unsigned);
typedef CUresult (*allocs_fn)(CUdeviceptr *, size_t, CUstream);
typedef CUresult (*allocp_fn)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
typedef CUresult (*pitch_fn)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
typedef CUresult (*arr_fn)(CUarray *, const CUDA_ARRAY_DESCRIPTOR *);
typedef CUresult (*arr3_fn)(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *);
typedef CUresult (*mip_fn)(CUmipmappedArray *, const CUDA_ARRAY3D_DESCRIPTOR *, unsigned);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*frees_fn)(CUdeviceptr, CUstream);
typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
typedef CUresult (*arrd_fn)(CUarray);
typedef CUresult (*mipd_fn)(CUmipmappedArray);

static CUresult alloc_by(const char *name, uint64_t mib, uint64_t *key)
{
    uint64_t n = mib * MIB;
    CUdeviceptr p = 0;
    CUresult rc;
    if (!strcmp(name, "cuMemAlloc_v2")) rc = FN(alloc_fn, name)(&p, n);
    else if (!strcmp(name, "cuMemAllocManaged")) rc = FN(alloc3_fn, name)(&p, n, 1);
    else if (!strcmp(name, "cuMemAllocAsync")) rc = FN(allocs_fn, name)(&p, n, NULL);
    else if (!strcmp(name, "cuMemAllocFromPoolAsync")) rc = FN(allocp_fn, name)(&p, n, NULL, NULL);
    else if (!strcmp(name, "cuMemAllocPitch_v2")) {
        size_t pitch;
        rc = FN(pitch_fn, name)(&p, &pitch, 1024 * 1024, mib, 4);   /* 1 MiB rows */
    } else if (!strcmp(name, "cuMemCreate")) {
        CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED, .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
        CUmemGenericAllocationHandle h = 0;
        rc = FN(create_fn, name)(&h, n, &prop, 0);
        if (rc == CUDA_SUCCESS) {
            CUresult m = FN(map_fn, "cuMemMap")(0x100000000ull, n, 0, h, 0);
            if (m != CUDA_SUCCESS) printf("cuMemMap rc=%d\n", m);
        }
        p = h;
    } else if (!strcmp(name, "cuArrayCreate_v2")) {
        CUDA_ARRAY_DESCRIPTOR d = {n / 4, 0, 0x20, 1};
        CUarray a = NULL;
        rc = FN(arr_fn, name)(&a, &d);
        p = (uintptr_t)a;
    } else if (!strcmp(name, "cuArray3DCreate_v2") || !strcmp(name, "cuMipmappedArrayCreate")) {
        CUDA_ARRAY3D_DESCRIPTOR d = {1024, 256, mib, 0x20, 1, 0};
        if (!strcmp(name, "cuArray3DCreate_v2")) {
            CUarray a = NULL;
            rc = FN(arr3_fn, name)(&a, &d);
            p = (uintptr_t)a;
        } else {
            CUmipmappedArray a = NULL;
            rc = FN(mip_fn, name)(&a, &d, 1);
            p = (uintptr_t)a;
        }
    } else {
        fprintf(stderr, "cuda_probe: unknown entry point %s\n", name);
        exit(3);
    }
    *key = p;
    return rc;
}

static CUresult free_by(const char *name, uint64_t key)
{
    if (!strcmp(name, "cuMemCreate")) return FN(release_fn, "cuMemRelease")(key);
    if (!strcmp(name, "cuArrayCreate_v2") || !strcmp(name, "cuArray3DCreate_v2"))
        return FN(arrd_fn, "cuArrayDestroy")((CUarray)(uintptr_t)key);
    if (!strcmp(name, "cuMipmappedArrayCreate")) return FN(mipd_fn, "cuMipmappedArrayDestroy")((CUmipmappedArray)(uintptr_t)key);
    if (!strcmp(name, "cuMemAllocAsync") || !strcmp(name, "cuMemAllocFromPoolAsync"))
        return FN(frees_fn, "cuMemFreeAsync")(key, NULL);
    return FN(free_fn, "cuMemFree_v2")(key);
}

static int entry(const char *name, uint64_t mib)
{
    start();
    uint64_t a, b, c;
    CUresult under = alloc_by(name, mib / 2, &a);
    long used_under = region_used();
    CUresult over = alloc_by(name, mib / 2 + 1, &b);
    CUresult fr = free_by(name, a);
    long used_freed = region_used();
    CUresult again = alloc_by(name, mib / 2 + 1, &c);
    CUresult fr2 = again == CUDA_SUCCESS ? free_by(name, c) : -1;
    printf("%s under=%d over=%d free=%d again=%d free2=%d used_under=%ld used_freed=%ld used_end=%ld\n", name,
           under, over, fr, again, fr2, used_under, used_freed, region_used());
    return 0;
}

static int hosttype(uint64_t mib)
{
    start();
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED, .location = {CU_MEM_LOCATION_TYPE_HOST, 7}};
    CUmemGenericAllocationHandle h = 0;
    CUresult rc = FN(create_fn, "cuMemCreate")(&h, mib * MIB, &prop, 0);
    printf("host rc=%d used=%ld release=%d\n", rc, region_used(), FN(release_fn, "cuMemRelease")(h));
    return 0;
}

typedef CUresult (*info_fn)(size_t *, size_t *);
typedef int (*nvinit_fn)(void);
typedef int (*nvh_fn)(unsigned, nvmlDevice_t *);
typedef int (*nvmem_fn)(nvmlDevice_t, nvmlMemory_t *);
typedef int (*nvmem2_fn)(nvmlDevice_t, nvmlMemory_v2_t *);
static int meminfo(void)
{
    start();
    uint64_t key;
    alloc_by("cuMemAlloc_v2", 100, &key);
    size_t fr = 0, tot = 0;
    CUresult rc = FN(info_fn, "cuMemGetInfo_v2")(&fr, &tot);
    printf("cuda rc=%d total=%llu free=%llu\n", rc, (unsigned long long)(tot / MIB), (unsigned long long)(fr / MIB));
    void *nv = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    if (!nv) { printf("nvml missing\n"); return 0; }
    nvmlDevice_t h;
    ((nvinit_fn)dlsym(nv, "nvmlInit_v2"))();
    ((nvh_fn)dlsym(nv, "nvmlDeviceGetHandleByIndex_v2"))(0, &h);
    nvmlMemory_t m = {0};
    int r1 = ((nvmem_fn)dlsym(nv, "nvmlDeviceGetMemoryInfo"))(h, &m);
    printf("nvml rc=%d total=%llu free=%llu used=%llu\n", r1, m.total / MIB, m.free / MIB, m.used / MIB);
    nvmem2_fn f2 = (nvmem2_fn)dlsym(nv, "nvmlDeviceGetMemoryInfo_v2");
    if (f2) {
        nvmlMemory_v2_t m2 = {.version = 2u << 24 | (unsigned)sizeof m2};
        int r2 = f2(h, &m2);
        printf("nvml2 rc=%d total=%llu free=%llu used=%llu\n", r2, m2.total / MIB, m2.free / MIB, m2.used / MIB);
    }
    return 0;
}

static int hold(uint64_t mib, int secs)
{
    start();
    uint64_t key;
    printf("held rc=%d\n", alloc_by("cuMemAlloc_v2", mib, &key));
    fflush(stdout);
    sleep((unsigned)secs);
    return 0;
}

static int do_fork(uint64_t mib)
{
    start();
    uint64_t key;
    CUresult prc = alloc_by("cuMemAlloc_v2", mib, &key);
    printf("parent rc=%d used=%ld\n", prc, region_used());
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        start();   /* a child makes its own context: CUDA forbids using the parent's */
        uint64_t k2;
        CUresult rc = alloc_by("cuMemAlloc_v2", mib, &k2);
        printf("child rc=%d used=%ld\n", rc, region_used());
        const char *p = getenv(GX_CUDA_REGION_ENV);
        if (p) region(p);
        fflush(stdout);
        exit(0);   /* without freeing: its exit gives the bytes back */
    }
    int st;
    waitpid(pid, &st, 0);
    printf("after child used=%ld\n", region_used());
    return 0;
}

typedef CUresult (*gpa1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
static void try_alloc(const char *how, void *fn, uint64_t mib)
{
    CUdeviceptr p;
    if (!fn) { printf("%s missing\n", how); return; }
    CUresult rc = ((alloc_fn)fn)(&p, mib * MIB);
    printf("%s rc=%d\n", how, rc);
    if (rc == CUDA_SUCCESS) FN(free_fn, "cuMemFree_v2")(p);
}
static int bypass(uint64_t mib)
{
    start();
    void *fn = NULL;
    CUdriverProcAddressQueryResult st;
    gpa2_fn gpa2 = FN(gpa2_fn, "cuGetProcAddress_v2");
    gpa1_fn gpa1 = FN(gpa1_fn, "cuGetProcAddress");
    gpa2("cuMemAlloc", &fn, 12000, 0, &st);
    try_alloc("gpa2_cuMemAlloc_12000", fn, mib);
    fn = NULL;
    gpa1("cuMemAlloc", &fn, 3020, 0);
    try_alloc("gpa1_cuMemAlloc_3020", fn, mib);
    try_alloc("dlsym_default", dlsym(RTLD_DEFAULT, "cuMemAlloc_v2"), mib);
    try_alloc("dlsym_handle", dlsym(lib, "cuMemAlloc_v2"), mib);
    void *h2 = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    try_alloc("dlsym_second_handle", h2 ? dlsym(h2, "cuMemAlloc_v2") : NULL, mib);
    void *nested = NULL;
    gpa2("cuGetProcAddress", &nested, 12000, 0, &st);
    fn = NULL;
    if (nested) ((gpa2_fn)nested)("cuMemAlloc", &fn, 12000, 0, &st);
    try_alloc("nested_gpa", fn, mib);
    void *nested1 = NULL;
    gpa1("cuGetProcAddress", &nested1, 11030, 0);
    fn = NULL;
    if (nested1) ((gpa1_fn)nested1)("cuMemAlloc", &fn, 11030, 0);
    try_alloc("nested_gpa_v1", fn, mib);
    /* the per-thread default stream variants answer _ptsz functions */
    fn = NULL;
    gpa2("cuMemAllocAsync", &fn, 12000, CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM, &st);
    CUdeviceptr p;
    CUresult rc = fn ? ((allocs_fn)fn)(&p, mib * MIB, NULL) : -1;
    printf("gpa2_ptsz_cuMemAllocAsync rc=%d\n", rc);
    return 0;
}

typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);
typedef CUresult (*coop_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                            CUstream, void **);
typedef CUresult (*ex_fn)(const CUlaunchConfig *, CUfunction, void **, void **);
typedef CUresult (*graph_fn)(CUgraphExec, CUstream);
typedef CUresult (*sync_fn)(void);
typedef uint64_t (*busy_fn)(int);
static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
static int share(int n)
{
    start();
    CUdriverProcAddressQueryResult st;
    void *lk = NULL, *co = NULL, *ex = NULL, *gr = NULL;
    gpa2_fn gpa2 = FN(gpa2_fn, "cuGetProcAddress_v2");
    gpa2("cuLaunchKernel", &lk, 12000, 0, &st);
    gpa2("cuLaunchCooperativeKernel", &co, 12000, 0, &st);
    gpa2("cuLaunchKernelEx", &ex, 12000, 0, &st);
    gpa2("cuGraphLaunch", &gr, 12000, 0, &st);
    CUlaunchConfig cfg = {1, 1, 1, 32, 1, 1, 0, NULL, NULL, 0};
    busy_fn busy = FN(busy_fn, "fake_cuda_busy_ns");
    uint64_t b0 = busy(0), t0 = now_ns();
    for (int i = 0; i < n; i++) {
        switch (i % 4) {
        case 0: ((launch_fn)lk)(NULL, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL); break;
        case 1: ((coop_fn)co)(NULL, 1, 1, 1, 32, 1, 1, 0, NULL, NULL); break;
        case 2: ((ex_fn)ex)(&cfg, NULL, NULL, NULL); break;
        default: ((graph_fn)gr)(NULL, NULL); break;
        }
    }
    FN(sync_fn, "cuCtxSynchronize")();
    uint64_t wall = now_ns() - t0, b = busy(0) - b0;
    printf("achieved=%.1f busy_ms=%.1f wall_ms=%.1f\n", 100.0 * (double)b / (double)wall, b / 1e6, wall / 1e6);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    const char *c = argc > 1 ? argv[1] : "";
    if (!strcmp(c, "mkregion") && argc >= 4)
        return mkregion(argv[2], strtoull(argv[3], NULL, 10), argc > 4 ? (unsigned)atoi(argv[4]) : 0,
                        argc > 5 && atoi(argv[5]));
    if (!strcmp(c, "region") && argc == 3) return region(argv[2]);
    if (!strcmp(c, "entry") && argc == 4) return entry(argv[2], strtoull(argv[3], NULL, 10));
    if (!strcmp(c, "hosttype") && argc == 3) return hosttype(strtoull(argv[2], NULL, 10));
    if (!strcmp(c, "meminfo")) return meminfo();
    if (!strcmp(c, "hold") && argc >= 3) return hold(strtoull(argv[2], NULL, 10), argc > 3 ? atoi(argv[3]) : 600);
    if (!strcmp(c, "fork") && argc == 3) return do_fork(strtoull(argv[2], NULL, 10));
    if (!strcmp(c, "bypass") && argc == 3) return bypass(strtoull(argv[2], NULL, 10));
    if (!strcmp(c, "share") && argc == 3) return share(atoi(argv[2]));
    fprintf(stderr, "usage: see the opening comment of tests/cuda/cuda_probe.c\n");
    return 2;
}
