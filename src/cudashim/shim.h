/* cudashim/shim: what the files of libgpuaas-cuda.so share: the pod's region (region.c),
 * the process's allocation table (table.c), the real driver and the hook table
 * (resolve.c), and the hooks themselves (mem.c, launch.c, nvml.c).
 * Owns: internal declarations only; nothing here is exported from the library except the
 * hooks marked GX_CS_EXPORT. Must not: include anything but libc and gpu/cuda_region.h
 * (the library links libc, libdl and libpthread alone). */
#ifndef GX_CUDASHIM_SHIM_H
#define GX_CUDASHIM_SHIM_H
#include <stddef.h>
#include <stdint.h>
#include "cudashim/cuda_api.h"
#include "gpu/cuda_region.h"

#define GX_CS_EXPORT __attribute__((visibility("default")))

/* region.c: NULL when no region is configured (or a bad one): everything passes through. */
gx_cuda_region *gx_cs_region(void);
/* Reserve SIZE bytes on DEV against the pod's limit (compare-and-swap on used[], dead
 * processes' slots reaped before refusing): 0, or -1 when over the limit (counted in
 * refused[]). Without a region: always 0. */
int gx_cs_reserve(int dev, uint64_t size);
void gx_cs_release(int dev, uint64_t size);

/* table.c: this process's live allocations, so that a free subtracts exactly what the
 * allocation added. KIND keeps the key spaces (pointers, handles, arrays) apart. */
enum { GX_CS_PTR = 1, GX_CS_HANDLE = 2, GX_CS_ARRAY = 3, GX_CS_MIPMAP = 4 };
int gx_cs_track(int kind, uint64_t key, int dev, uint64_t size);   /* 0, -1 table full */
int gx_cs_untrack(int kind, uint64_t key, int *dev, uint64_t *size); /* 0, -1 unknown */
int gx_cs_known(int kind, uint64_t key);
void gx_cs_table_reset(void);   /* the child of a fork starts with an empty table */

/* resolve.c: the real driver's entry point NAME (exact exported name), or NULL. */
void *gx_cs_real(const char *name);
void *gx_cs_real_dlsym(void *handle, const char *name);
/* hooktab.c: every hook by its exported name, and (filled by resolve.c) the real entry
 * point of that name. */
typedef struct { const char *name; void *hook; void *real; } gx_cs_hook_entry;
extern gx_cs_hook_entry gx_cs_cuda_hooks[], gx_cs_nvml_hooks[];
extern const size_t gx_cs_ncuda, gx_cs_nnvml;
/* launch.c: forget throttle state (fork child). */
void gx_cs_launch_reset(void);

/* The current context's device (0 when it cannot be asked). */
int gx_cs_current_device(void);
uint64_t gx_cs_now_ns(void);

/* Resolve the real NAME once into a static, typed pointer: REAL(fp_t, var, "name"). */
#define GX_CS_REAL(type, var, name)                                                     \
    static type var;                                                                    \
    if (!__atomic_load_n(&var, __ATOMIC_ACQUIRE))                                       \
        __atomic_store_n(&var, (type)gx_cs_real(name), __ATOMIC_RELEASE)

#endif
