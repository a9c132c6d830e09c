/* core/share: the sharing-aware device model of a node's GPUs.
 *
 * Each GPU has a mode: exclusive (one pod), timeSlicing or MPS (N replicas), MIG
 * (its MIG devices, each maybe time-sliced), or fractional (HAMi vGPUs: memory in MiB
 * and cores in percent). Given a pod's GPU request this decides which device, slice,
 * replica or fraction it takes, records it under an owner id, and releases it.
 * Fractional requests are bin-packed with the placement engine (core/place.h,
 * gx_place_choose with the caller's policy: best-fit, fgd, ours ...).
 *
 * Rules (why: a pod must never see two handles of one device, and nothing is
 * over-committed):
 *  - the devices of one pod are distinct physical devices (GPU or MIG device);
 *  - a replica is 1/N of its GPU; a fraction never exceeds the GPU's free memory or
 *    cores; an exclusive or whole fractional GPU is taken only when wholly free;
 *  - failRequestsGreaterThanOne: such GPUs serve only requests for one device.
 * Order of preference for a plain nvidia.com/gpu request (least fragmentation): a free
 * replica of a GPU already shared (fewest replicas left first), then an untouched
 * shared GPU, then an exclusive GPU, then a wholly free fractional GPU.
 *
 * Owns: gx_share_node and its allocations. Must not: do I/O, read a clock, print.
 * Allocates only inside gx_place_ctx (fractional choice); nodes are plain structs. */
#ifndef GX_SHARE_H
#define GX_SHARE_H
#include <stddef.h>
#include <stdint.h>
#include "core/place.h"

#define GX_SHARE_MAX_GPUS GX_PLACE_MAX_GPUS
#define GX_SHARE_MAX_MIG 7
#define GX_SHARE_MAX_REPLICAS 1024   /* per device: far above use (the device plugin has no cap) */
#define GX_SHARE_MAX_ALLOCS 1024   /* allocations per node */

typedef enum gx_share_mode {
    GX_SHARE_EXCLUSIVE = 0,
    GX_SHARE_TIMESLICING,
    GX_SHARE_MPS,
    GX_SHARE_MIG,
    GX_SHARE_FRACTIONAL,
} gx_share_mode;

const char *gx_share_mode_name(gx_share_mode m);   /* "exclusive", "timeSlicing", ... */
int gx_share_mode_parse(const char *s, gx_share_mode *m);   /* -1 when unknown */

/* Which replicas of a device are taken: one bit per replica. */
typedef struct gx_share_bits { uint64_t w[GX_SHARE_MAX_REPLICAS / 64]; } gx_share_bits;

typedef struct gx_share_mig {
    char profile[24];            /* "1g.10gb" */
    char resource[64];           /* offered as: nvidia.com/mig-1g.10gb (or a time-sliced name) */
    char uuid[96];               /* MIG-... */
    int64_t mem_mib;
    int start, size;             /* memory slices */
    int replicas;                /* time-slicing of the MIG device; 1 = not shared */
    gx_share_bits used;          /* bit per replica taken */
} gx_share_mig;

typedef struct gx_share_gpu {
    char uuid[96];
    int64_t mem_mib;
    gx_share_mode mode;
    char resource[64];           /* exclusive/timeSlicing/mps: nvidia.com/gpu or .shared */
    int replicas;                /* timeSlicing / mps; 1 otherwise */
    int fail_gt1;                /* failRequestsGreaterThanOne */
    gx_share_bits used;          /* exclusive: bit 0; replicas: bit per replica */
    int n_mig;
    gx_share_mig mig[GX_SHARE_MAX_MIG];
    int cores_free;              /* fractional: percent */
    int64_t mem_free;            /* fractional: MiB */
} gx_share_gpu;

/* One device a pod holds. */
typedef struct gx_share_dev {
    int gpu;                     /* index on the node */
    int mig;                     /* MIG device index, -1 = the GPU itself */
    int replica;                 /* replica taken, -1 = none (whole device or fraction) */
    int64_t mem_mib;             /* memory it may use (MPS limit / vGPU size / the device) */
    int cores;                   /* percent of the SMs it may use */
} gx_share_dev;

typedef struct gx_share_pick {
    int n;
    gx_share_dev dev[GX_SHARE_MAX_GPUS];
} gx_share_pick;

typedef struct gx_share_alloc {
    int64_t owner;
    gx_share_dev dev;
} gx_share_alloc;

typedef struct gx_share_node {
    int n_gpus;
    gx_share_gpu gpu[GX_SHARE_MAX_GPUS];
    int n_allocs;
    gx_share_alloc alloc[GX_SHARE_MAX_ALLOCS];
} gx_share_node;

/* A pod's GPU request, per pod. */
typedef struct gx_share_req {
    char resource[64];           /* nvidia.com/gpu, nvidia.com/gpu.shared, nvidia.com/mig-3g.40gb */
    int count;                   /* devices of it (for fractional: vGPUs, default 1) */
    int64_t gpumem_mib;          /* HAMi nvidia.com/gpumem per vGPU; 0 = not asked */
    int gpucores;                /* HAMi nvidia.com/gpucores per vGPU (percent); 0 = not asked */
} gx_share_req;

/* Clears allocations and sets every GPU's free state from its mode (call after filling
 * gpu[] / n_gpus). Replicas are clamped to 1..GX_SHARE_MAX_REPLICAS. */
void gx_share_node_reset(gx_share_node *n);
/* Whether any GPU of the node is shared (not exclusive). */
int gx_share_node_shared(const gx_share_node *n);
/* How many devices of `resource` the node offers in all (replicas and MIG devices
 * counted), used / total; for fractional GPUs counts vGPU-capable GPUs. */
int gx_share_offered(const gx_share_node *n, const char *resource, int *used);

/* Decide where req goes on one node. 1 with *out filled, 0 with `why` set. */
int gx_share_fit(const gx_share_node *n, const gx_share_req *req, gx_share_pick *out,
                 char *why, size_t why_n);

/* The placement engine's view of one vGPU request (milli = cores x 10, memory in MiB),
 * sized against the first fractional GPU among nodes; -1 if req is not one vGPU. The
 * daemon counts these over its workloads to give the policy its target workload. */
int gx_share_place_pod(gx_share_node *const *nodes, int count, const gx_share_req *req,
                       gx_place_pod *out);
/* Choose among candidate nodes (nodes[i] NULL = not eligible): fractional requests
 * through the placement policy of cx (NULL: best fit), others by best fit (the node
 * whose chosen devices leave the fewest free replicas). Returns the node index with
 * *out filled, or -1 with why set (the reason of the first eligible node). */
int gx_share_choose(gx_place_ctx *cx, gx_share_node *const *nodes, int count,
                    const gx_share_req *req, gx_share_pick *out, char *why, size_t why_n);

/* Record / undo. commit returns 0, or -1 (nothing changed) when a device is not free. */
int gx_share_commit(gx_share_node *n, int64_t owner, const gx_share_pick *p);
/* Releases everything `owner` holds on the node; returns how many devices. */
int gx_share_release(gx_share_node *n, int64_t owner);
/* The devices owner holds, in commit order: copies at most cap, returns the count. */
int gx_share_owned(const gx_share_node *n, int64_t owner, gx_share_dev *out, int cap);

/* Per GPU usage for views: devices/replicas taken and offered, memory and cores
 * allocated (fractional and replicas as their share, whole devices as all of it). */
typedef struct gx_share_usage {
    int slots_used, slots_total;
    int64_t mem_alloc_mib;
    int cores_alloc;             /* percent of the GPU */
} gx_share_usage;
void gx_share_gpu_usage(const gx_share_node *n, int g, gx_share_usage *u);

#endif
