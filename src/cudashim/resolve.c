/* cudashim/resolve: how the shim finds the real driver and how applications find the
 * shim. It exports dlsym (so a runtime that dlopens libcuda.so.1 and looks entry points
 * up by name still gets the hooks) and cuGetProcAddress / cuGetProcAddress_v2 (the path
 * CUDA >= 11.3 runtimes use for everything): asked for a hooked entry point, either
 * answers the hook; asked for cuGetProcAddress it answers itself, so nested lookups stay
 * hooked.
 * Owns: the real dlsym, the real libcuda.so.1 and libnvidia-ml.so.1 handles, the hook
 * table. Must not: use the exported dlsym for its own lookups (it would find itself). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include "cudashim/shim.h"

#define cuda_hooks gx_cs_cuda_hooks
#define nvml_hooks gx_cs_nvml_hooks
#define NCUDA gx_cs_ncuda
#define NNVML gx_cs_nnvml

typedef void *(*dlsym_fn)(void *, const char *);
static dlsym_fn real_dlsym;
static pthread_once_t dlsym_once = PTHREAD_ONCE_INIT, cuda_once = PTHREAD_ONCE_INIT,
                      nvml_once = PTHREAD_ONCE_INIT, reals_once = PTHREAD_ONCE_INIT;
static void *cuda_lib, *nvml_lib;

/* glibc 2.34 moved dlsym into libc under a new version; older ones have the base
 * version of the architecture. dlvsym itself is not interposed. */
static void find_dlsym(void)
{
    static const char *const vers[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17", "GLIBC_2.0"};
    for (size_t i = 0; i < sizeof vers / sizeof vers[0] && !real_dlsym; i++)
        real_dlsym = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", vers[i]);
    if (!real_dlsym) fprintf(stderr, "gpuaas-cuda: the real dlsym cannot be found\n");
}

void *gx_cs_real_dlsym(void *handle, const char *name)
{
    pthread_once(&dlsym_once, find_dlsym);
    return real_dlsym ? real_dlsym(handle, name) : NULL;
}

static void open_cuda(void) { cuda_lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NODELETE); }
static void open_nvml(void) { nvml_lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NODELETE); }

void *gx_cs_real(const char *name)
{
    if (!strncmp(name, "nvml", 4)) {
        pthread_once(&nvml_once, open_nvml);
        return nvml_lib ? gx_cs_real_dlsym(nvml_lib, name) : NULL;
    }
    pthread_once(&cuda_once, open_cuda);
    return cuda_lib ? gx_cs_real_dlsym(cuda_lib, name) : NULL;
}

static void *by_name(const gx_cs_hook_entry *t, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(t[i].name, name)) return t[i].hook;
    return NULL;
}

static void *hook_by_name(const char *name)
{
    if (!name) return NULL;
    if (name[0] == 'c' && name[1] == 'u') return by_name(cuda_hooks, NCUDA, name);
    if (!strncmp(name, "nvml", 4)) return by_name(nvml_hooks, NNVML, name);
    return NULL;
}

/* The hook only where the real lookup finds the name: a program probing whether a driver
 * or library has an entry point (or looking in some other library) gets the true answer. */
GX_CS_EXPORT void *dlsym(void *handle, const char *name)
{
    void *r = gx_cs_real_dlsym(handle, name), *h = r ? hook_by_name(name) : NULL;
    return h ? h : r;
}

static void load_reals(void)
{
    for (size_t i = 0; i < NCUDA; i++) cuda_hooks[i].real = gx_cs_real(cuda_hooks[i].name);
}

/* The hook for what the real cuGetProcAddress answered: by address first (exact for any
 * version and flag), by name second (a driver that answers addresses it does not export
 * under those names: the base name, its _v2, with _ptsz when the per-thread default
 * stream was asked for). */
static void *hook_for(const char *sym, void *real, cuuint64_t flags)
{
    pthread_once(&reals_once, load_reals);
    for (size_t i = 0; i < NCUDA; i++)
        if (cuda_hooks[i].real == real) return cuda_hooks[i].hook;
    const char *sfx[] = {"_v2", ""};
    char name[128];
    int ptsz = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0;
    for (int p = ptsz; p >= 0; p--)
        for (size_t k = 0; k < 2; k++) {
            if (snprintf(name, sizeof name, "%s%s%s", sym, sfx[k], p ? "_ptsz" : "") >= (int)sizeof name) continue;
            void *h = by_name(cuda_hooks, NCUDA, name);
            if (h) return h;
        }
    return NULL;
}

typedef CUresult (*gpa1_fn)(const char *, void **, int, cuuint64_t);
typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

GX_CS_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                          CUdriverProcAddressQueryResult *symbolStatus)
{
    GX_CS_REAL(gpa2_fn, real, "cuGetProcAddress_v2");
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult rc = real(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (rc == CUDA_SUCCESS && symbol && pfn && *pfn) {
        void *h = hook_for(symbol, *pfn, flags);
        if (h) *pfn = h;
    }
    return rc;
}

GX_CS_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    GX_CS_REAL(gpa1_fn, real, "cuGetProcAddress");
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult rc = real(symbol, pfn, cudaVersion, flags);
    if (rc == CUDA_SUCCESS && symbol && pfn && *pfn) {
        void *h = hook_for(symbol, *pfn, flags);
        if (h) *pfn = h;
    }
    return rc;
}

typedef CUresult (*ctxdev_fn)(CUdevice *);
int gx_cs_current_device(void)
{
    GX_CS_REAL(ctxdev_fn, real, "cuCtxGetDevice");
    CUdevice d = 0;
    if (!real || real(&d) != CUDA_SUCCESS) return 0;
    return d;
}
