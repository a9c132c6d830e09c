/* bench/cuda_launch: the cost of libgpuaas-cuda.so on a launch-bound loop. N launches of
 * a 0-us kernel (the fake driver's, or a real one on a GPU machine where the fake is not
 * on the library path) through cuLaunchKernel found by cuGetProcAddress, then one
 * synchronize; run twice in the same invocation, in child processes: without the shim
 * and with it preloaded over a pod region (a memory limit, no compute share, so the
 * launch path counts launches and nothing waits). Prints ns/launch of both and the ratio.
 * A benchmark, not a test: it never fails on time.
 *   build/bench-cuda-launch [N] [SHIM]   (N default 1000000, SHIM build/libgpuaas-cuda.so)
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

typedef CUresult (*init_fn)(unsigned);
typedef CUresult (*ctx_fn)(CUcontext *, unsigned, CUdevice);
typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              CUstream, void **, void **);
typedef CUresult (*sync_fn)(void);

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The loop itself (in a child): prints ns per launch. */
static int loop(long n)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW);
    if (!lib) { fprintf(stderr, "bench-cuda-launch: %s\n", dlerror()); return 1; }
    CUcontext c;
    CUdriverProcAddressQueryResult st;
    void *lk = NULL;
    if (((init_fn)dlsym(lib, "cuInit"))(0) || ((ctx_fn)dlsym(lib, "cuCtxCreate_v2"))(&c, 0, 0)) return 1;
    ((gpa2_fn)dlsym(lib, "cuGetProcAddress_v2"))("cuLaunchKernel", &lk, 12000, 0, &st);
    if (!lk) return 1;
    double t0 = now_s();
    for (long i = 0; i < n; i++) ((launch_fn)lk)(NULL, 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL);
    ((sync_fn)dlsym(lib, "cuCtxSynchronize"))();
    printf("%.1f\n", (now_s() - t0) * 1e9 / (double)n);
    return 0;
}

static double run_child(char *self, const char *n, const char *preload)
{
    int fd[2];
    if (pipe(fd) != 0) return -1;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], 1);
        close(fd[0]);
        if (preload) setenv("LD_PRELOAD", preload, 1);
        else unsetenv("LD_PRELOAD");
        execl(self, self, "--loop", n, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    char buf[64] = {0};
    ssize_t k = read(fd[0], buf, sizeof buf - 1);
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    return k > 0 ? atof(buf) : -1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--loop")) return loop(atol(argv[2]));
    const char *n = argc > 1 ? argv[1] : "1000000";
    char shim[4096];
    if (!realpath(argc > 2 ? argv[2] : "build/libgpuaas-cuda.so", shim)) { perror("shim"); return 1; }
    char reg[] = "/tmp/bench-cuda-region.XXXXXX";
    int fd = mkstemp(reg);
    if (fd < 0 || ftruncate(fd, GX_CUDA_REGION_LOCK_BASE + GX_CUDA_REGION_PROCS) != 0) { perror(reg); return 1; }
    gx_cuda_region *r = mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (r == MAP_FAILED) { perror("mmap"); return 1; }
    r->version = GX_CUDA_REGION_VERSION;
    r->ndevices = 1;
    r->limit[0] = 8ull << 30;
    r->magic = GX_CUDA_REGION_MAGIC;
    setenv(GX_CUDA_REGION_ENV, reg, 1);
    double without = run_child(argv[0], n, NULL), with = run_child(argv[0], n, shim);
    printf("cuda_launch: %s launches of a 0-us kernel: without shim %.1f ns/launch, with shim %.1f ns/launch, "
           "ratio %.2f (launches counted in the region: %llu)\n", n, without, with, without > 0 ? with / without : 0,
           (unsigned long long)r->launches[0]);
    unlink(reg);
    return 0;
}
