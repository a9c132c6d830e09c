/* gpu/inventory: the machine's GPUs, from NVML or from simulated Node descriptions, with
 * the sharing mode of each GPU resolved from the formats platform teams already use.
 *
 * Per node, as the GPU Operator does it: the label nvidia.com/device-plugin.config picks
 * a device-plugin config (time-slicing or MPS) among inventory.devicePlugin.configs (else
 * its default); the label nvidia.com/mig.config picks a mig-parted config from
 * inventory.migConfig (simulated GPUs get that layout; real GPUs keep the layout they
 * have until `gpuaas gpus mig apply`). A GPU may also say `sharing: fractional` in the
 * Node file (HAMi-style vGPUs). The result is a list of resolved gpuaas Node manifests
 * whose spec.gpus[i] carry {model, memory, uuid, sharing: {...}} (core/share_json.h):
 * that is what the engine reads.
 *
 * Owns: building the device list, the fall-back from NVML to the simulated node (with a
 * note saying why), live figures (utilisation, memory used, processes) and their
 * history, MIG re-layout. Must not: start processes (gpu/mps.c) or place workloads. */
#ifndef GX_GPU_INVENTORY_H
#define GX_GPU_INVENTORY_H
#include <limits.h>
#include <stdint.h>
#include <jansson.h>
#include "core/share.h"
#include "gpu/nvml.h"
#include "lib/err.h"

typedef struct gx_gpu_config {
    const char *source;              /* "simulated", "nvml", "auto" */
    const char *nvml_library;        /* NULL/"" = libnvidia-ml.so.1 */
    const json_t *nodes;             /* Node manifests (array) */
    const json_t *device_plugin;     /* {key: device-plugin config document} or NULL */
    const char *device_plugin_default;   /* key for nodes without the label, "" none */
    const json_t *mig_parted;        /* mig-parted document or NULL */
    const char *mig_default;         /* mig config for simulated nodes without the label */
} gx_gpu_config;

typedef struct gx_gpu_mig_dev {
    char profile[24], uuid[96], resource[64];
    int start, size, replicas;
    int64_t mem_mib, mem_used_mib;
    unsigned gi_id;                  /* NVML GPU instance id (0 when simulated) */
    unsigned ci_id;                  /* NVML compute instance id (0 when simulated) */
    double gr_active;                /* GPM GRAPHICS_UTIL percent at the last sample, -1 unmeasured */
} gx_gpu_mig_dev;

#define GX_GPU_HIST 360              /* samples kept per GPU (an hour at 10 s) */

typedef struct gx_gpu_sample { int64_t t_ms; int16_t util; int64_t mem_used_mib; } gx_gpu_sample;

typedef struct gx_gpu_dev {
    int node;                        /* index into the inventory's nodes */
    int index;                       /* on its node */
    int nvml_index;                  /* -1: simulated */
    int minor;                       /* N of its /dev/nvidiaN: NVML's minor number; simulated:
                                        its index on the node */
    char uuid[96], model[96], product[96], pci_bus_id[32];   /* model: NVML's name when no known model matches */
    uint32_t pci_id;
    int64_t mem_mib;
    gx_share_mode mode;
    int replicas, fail_gt1;
    char resource[64];               /* offered as (not MIG) */
    char mig_config[64];             /* mig-parted config applied ("" none) */
    gx_share_gpu base;               /* the sharing the Node file itself gives (fractional) */
    int mig_on;                      /* MIG mode (NVML: as the GPU is; simulated: from mig-parted) */
    char mig_strategy[16];           /* the node's flags.migStrategy in effect: none, single, mixed (sized as
                                      * gx_dp_config's) */
    int n_mig;
    gx_gpu_mig_dev mig[GX_MIG_MAX_DEVICES];
    /* live figures (NVML, or simulated from what is allocated) */
    int util;                        /* percent, -1 unknown */
    double gr_active;                /* GPM GRAPHICS_UTIL percent (whole GPU), -1 unmeasured */
    int gpm;                         /* NVML offers GPM for this GPU (DCGM_FI_PROF_GR_ENGINE_ACTIVE measured) */
    int64_t mem_used_mib;
    int n_procs;
    gx_nvml_proc procs[GX_NVML_MAX_PROCS];
    /* history: a ring of samples */
    gx_gpu_sample hist[GX_GPU_HIST];
    int hist_n, hist_pos;
} gx_gpu_dev;

typedef struct gx_gpu_node {
    char name[128];
    json_t *manifest;                /* the Node as configured */
    char dp_key[64], mig_config[64];
} gx_gpu_node;

typedef struct gx_gpu_inv {
    char source[16];                 /* "nvml" or "simulated": what is in use */
    char note[640];                  /* why NVML was not used, "" when it was or not asked */
    gx_nvml *nvml;
    json_t *device_plugin, *mig_parted;   /* own references */
    char dp_default[64], mig_default[64];
    int n_nodes;
    gx_gpu_node *nodes;
    int n_devs;
    gx_gpu_dev *devs;
    size_t cap_nodes, cap_devs;      /* allocated lengths of nodes and devs (gx_xgrow) */
    int64_t last_sample_ms;
} gx_gpu_inv;

/* Build the inventory. NVML is tried for "nvml" and "auto"; when it cannot be used the
 * simulated nodes stand in and inv->note says why. Errors: bad configs (unknown
 * device-plugin key, MIG on a GPU without MIG, layouts that do not fit, conflicting
 * modes), with the node and GPU named. */
gx_gpu_inv *gx_gpu_inventory_open(const gx_gpu_config *cfg, gx_err *err);
void gx_gpu_inventory_free(gx_gpu_inv *inv);

/* Resolved Node manifests for the engine (new reference). Nodes none of whose GPUs is
 * shared are returned exactly as configured. */
json_t *gx_gpu_inventory_nodes(const gx_gpu_inv *inv);
gx_gpu_dev *gx_gpu_inventory_find(gx_gpu_inv *inv, const char *uuid);
/* The physical GPU holding a GPU or MIG UUID; *mig gets the MIG index or -1. */
gx_gpu_dev *gx_gpu_inventory_owner(gx_gpu_inv *inv, const char *uuid, int *mig);

/* Take a sample at now_ms (NVML figures, or simulated from `engine_nodes`, the
 * gx_engine_nodes() view: a GPU's utilisation is the share of it allocated). With GPM,
 * the graphics-engine activity of each GPU / MIG instance since the previous sample. */
void gx_gpu_inventory_sample(gx_gpu_inv *inv, int64_t now_ms, const json_t *engine_nodes);
/* Only the simulated figures, from engine_nodes (cheap; views call it before showing). */
void gx_gpu_inventory_refresh(gx_gpu_inv *inv, const json_t *engine_nodes);

/* Re-lay out the MIG devices of a node from mig-parted config `name` (of `doc`, or the
 * configured file when doc is NULL). NVML: destroys and creates instances; simulated:
 * replaces the layout. The caller checks that no workload uses the GPUs. */
int gx_gpu_inventory_mig_apply(gx_gpu_inv *inv, const char *node, const char *name, const json_t *doc,
                               json_t **changed, gx_err *err);

#endif
