/* gpu/cuda_region_ops: the daemon's side of a pod's CUDA region (gpu/cuda_region.h, the
 * layout shared with libgpuaas-cuda.so; docs/gpu-sharing.md "Limits inside the pod").
 * Owns: which pods get limits and what they are (per sharing mode), creating a region
 * file fresh for one run of one pod, and reading back what the pod's processes use.
 * Must not: start processes or bind anything (run/ does), write a region after its pod
 * started, or map one: the file is the pod's own (it can truncate it), and a mapping of
 * a truncated file would take the daemon down with SIGBUS; it is read with pread. */
#ifndef GX_GPU_CUDA_REGION_OPS_H
#define GX_GPU_CUDA_REGION_OPS_H
#include <stdint.h>
#include <sys/types.h>
#include "core/engine.h"
#include "gpu/cuda_region.h"
#include "gpu/inventory.h"
#include "lib/err.h"

/* Where a sandboxed pod sees the library (its /etc/ld.so.preload names it), beside its
 * region in the same tmpfs (run/sandbox.h). */
#define GX_CUDA_LIB_PATH "/run/gpuaas/libgpuaas-cuda.so"
/* Its file name beside the gpuaas binary (the Makefile builds it there). */
#define GX_CUDA_LIB_NAME "libgpuaas-cuda.so"

/* What the daemon writes before the pod starts, per device in CUDA_VISIBLE_DEVICES order. */
typedef struct gx_cuda_limits {
    int ndevices;
    uint64_t limit[GX_CUDA_REGION_DEVICES];     /* bytes, 0 none */
    uint64_t total[GX_CUDA_REGION_DEVICES];     /* the device's memory, bytes, 0 unknown */
    uint32_t sm_share[GX_CUDA_REGION_DEVICES];  /* percent 1..99, 0 none */
} gx_cuda_limits;

/* The limits of a pod placed on devs (the engine's answer for its slot). Returns 1 when
 * the pod gets the shim: one of its devices is a time-sliced GPU (limit: the GPU's
 * memory / replicas) or a fractional one (the vGPU's memory and cores); 0 when none is
 * (exclusive, MIG and MPS keep their own limits: *out is then all zero). */
int gx_cuda_limits_for(gx_gpu_inv *inv, const gx_engine_dev *devs, int n, gx_cuda_limits *out);

/* Create the region at path, fresh: an old file there is removed first (never reused: a
 * stale region would carry a dead run's use), then written with magic last, sized to
 * GX_CUDA_REGION_LOCK_BASE + GX_CUDA_REGION_PROCS bytes, owned by uid:gid, mode 0600.
 * 0, or -1 with err (500, naming the path). */
int gx_cuda_region_create(const char *path, const gx_cuda_limits *l, uid_t uid, gid_t gid, gx_err *err);

typedef struct gx_cuda_dev_usage {
    uint64_t used, peak, limit, total, refused, launches;
    uint32_t sm_share;               /* the target, percent; 0 none */
    double achieved;                 /* measured share of SM time, percent; -1 unmeasured */
} gx_cuda_dev_usage;

typedef struct gx_cuda_usage {
    int ndevices;
    int procs;                       /* live processes holding a slot */
    int dead;                        /* slots of dead processes, their use left out */
    gx_cuda_dev_usage dev[GX_CUDA_REGION_DEVICES];
} gx_cuda_usage;

/* Read the region at path: a snapshot of every counter (for display: a counter that
 * changes during the read may be seen mid-update), with the use of dead processes' slots (cuda_region.h's OFD-lock
 * rule: in use, but its lock byte free) left out of used[]. The slot itself is freed by
 * the next shim that finds it. 0; -1 with err when the file is missing (404), not a
 * region or damaged by the pod (422: size, magic, version, device count). */
int gx_cuda_region_read(const char *path, gx_cuda_usage *out, gx_err *err);

#endif
