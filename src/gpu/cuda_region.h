/* gpu/cuda_region: the memory a pod's processes share with libgpuaas-cuda.so, the CUDA
 * driver shim that keeps memory and compute limits on time-sliced and fractional GPUs
 * (src/cudashim, docs/gpu-sharing.md "Limits inside the pod").
 *
 * The daemon creates one region file per pod, fresh for every run of the pod (never a
 * cache that outlives it: HAMi-core's stale /tmp/cudevshr.cache is the failure this
 * avoids), writes the limits, and binds it into the pod's sandbox at GX_CUDA_REGION_PATH
 * before the pod's first process starts. Every process of the pod that loads the shim
 * maps it MAP_SHARED and accounts its allocations in it; the daemon reads it with pread,
 * never a mapping (the pod could shrink the file, and a mapping read past its end would
 * SIGBUS the daemon), to show the pod's real use (portal, /metrics).
 *
 * Ownership of a slot is an open-file-description lock (F_OFD_SETLK, write) on one byte,
 * GX_CUDA_REGION_LOCK_BASE + slot index, of the region file, taken on a descriptor the
 * process opened itself (a forked child opens its own and takes a new slot). The kernel
 * drops the lock when the process dies however it dies, so a slot whose byte can be
 * locked by someone else while slot.used is non-zero belongs to a dead process: whoever
 * finds it (a shim in any process) subtracts its use from the totals and frees it; the
 * daemon, which never writes the region once the pod runs, leaves it out of what it shows. This works across PID namespaces, where PIDs would not.
 *
 * Owns: the layout (this header only: no code, no includes beyond <stdint.h>, so the
 * shim, built alone against libc, can share it).
 * Must not: change without bumping GX_CUDA_REGION_VERSION. */
#ifndef GX_GPU_CUDA_REGION_H
#define GX_GPU_CUDA_REGION_H
#include <stdint.h>

#define GX_CUDA_REGION_MAGIC 0x67786375u   /* "gxcu" */
#define GX_CUDA_REGION_VERSION 1u
#define GX_CUDA_REGION_DEVICES 16          /* CUDA devices of one pod (its CUDA_VISIBLE_DEVICES order) */
#define GX_CUDA_REGION_PROCS 256           /* processes of one pod using CUDA at once */
#define GX_CUDA_REGION_LOCK_BASE 1048576   /* byte offset of slot 0's lock byte (beyond the struct) */
/* Where the sandbox shows the pod's region, and the environment that names it. */
#define GX_CUDA_REGION_PATH "/run/gpuaas/cuda-region"
#define GX_CUDA_REGION_ENV "GPUAAS_CUDA_REGION"

typedef struct gx_cuda_slot {
    uint64_t used[GX_CUDA_REGION_DEVICES]; /* bytes this process holds per device (atomic) */
    uint32_t pid;                          /* in the pod's PID namespace, for reports only */
    uint32_t in_use;                       /* 1 while owned (atomic; the lock byte is the truth) */
} gx_cuda_slot;

typedef struct gx_cuda_region {
    uint32_t magic;                        /* written last by the daemon: a shim that sees another
                                            * value refuses to start accounting (and says so) */
    uint32_t version;
    uint32_t ndevices;
    uint32_t flags;                        /* reserved, 0 */
    /* written by the daemon before the pod starts, read-only afterwards */
    uint64_t limit[GX_CUDA_REGION_DEVICES];       /* bytes; 0: no limit on that device */
    uint64_t total[GX_CUDA_REGION_DEVICES];       /* the device's physical memory, 0 unknown */
    uint32_t sm_share[GX_CUDA_REGION_DEVICES];    /* target percent of SM time 1..100; 0 or 100: none */
    /* kept by the shims (every field atomic, __atomic builtins) */
    uint64_t used[GX_CUDA_REGION_DEVICES];        /* bytes held by every live process together:
                                                   * reserved by compare-and-swap before the real
                                                   * allocation, so two processes cannot both pass */
    uint64_t peak[GX_CUDA_REGION_DEVICES];        /* the most used ever held */
    uint64_t refused[GX_CUDA_REGION_DEVICES];     /* allocations answered CUDA_ERROR_OUT_OF_MEMORY */
    uint64_t launches[GX_CUDA_REGION_DEVICES];    /* kernel launches seen */
    uint64_t busy_ns[GX_CUDA_REGION_DEVICES];     /* measured kernel time (compute share) */
    uint64_t window_ns[GX_CUDA_REGION_DEVICES];   /* wall time the share was measured over */
    uint64_t throttled_ns[GX_CUDA_REGION_DEVICES];/* time launches were held back */
    uint64_t next_ok_ns[GX_CUDA_REGION_DEVICES];  /* compute share: CLOCK_MONOTONIC ns before which
                                                   * no throttled launch of the pod starts (one
                                                   * clock for every process, so the pod shares S) */
    gx_cuda_slot slots[GX_CUDA_REGION_PROCS];
} gx_cuda_region;

_Static_assert(sizeof(gx_cuda_region) < GX_CUDA_REGION_LOCK_BASE, "the lock bytes lie beyond the struct");

#endif
