/* gpu/nvml: the NVML backend, libnvidia-ml.so.1 loaded with dlopen at run time.
 *
 * We declare the few NVML types and functions we call ourselves (no NVIDIA header at
 * build time) and resolve the versioned symbols the header would pick: nvmlInit_v2,
 * nvmlDeviceGetCount_v2, nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetPciInfo_v3,
 * nvmlDeviceGetComputeRunningProcesses_v3. Required symbols missing = the library is
 * refused with the symbol named; optional ones (MIG, processes, utilisation) missing =
 * that information is absent. The binary therefore runs on machines without a GPU.
 *
 * Optional too: the compute mode (read and set around MPS) and GPM (GPU Performance
 * Monitoring, Hopper and newer, driver >= 520), whose GRAPHICS_UTIL metric is what DCGM
 * reports as DCGM_FI_PROF_GR_ENGINE_ACTIVE, per GPU and per MIG GPU instance.
 *
 * Owns: loading, querying one device (identity, memory, utilisation, processes, MIG
 * mode and MIG devices), applying a MIG layout, the compute mode, GPM samples (the
 * previous sample of each GPU / GPU instance is kept here, since a GPM metric is the
 * difference of two). Must not: decide sharing or keep anything else. */
#ifndef GX_GPU_NVML_H
#define GX_GPU_NVML_H
#include <stdint.h>
#include "gpu/mig.h"
#include "lib/err.h"

#define GX_NVML_LIBRARY "libnvidia-ml.so.1"
#define GX_NVML_MAX_PROCS 32
/* nvmlComputeMode_t */
#define GX_NVML_COMPUTE_DEFAULT 0
#define GX_NVML_COMPUTE_PROHIBITED 2
#define GX_NVML_COMPUTE_EXCLUSIVE_PROCESS 3

typedef struct gx_nvml gx_nvml;

typedef struct gx_nvml_mig {
    char uuid[96];               /* MIG-... */
    char profile[24];            /* from the device name: "1g.10gb" */
    unsigned gi_id, ci_id;
    int start, size;             /* memory slices, -1 when NVML cannot say */
    int64_t mem_total_mib, mem_used_mib;
} gx_nvml_mig;

typedef struct gx_nvml_proc {
    unsigned pid;
    int64_t mem_mib;
    unsigned gi_id;              /* 0xFFFFFFFF when not on a MIG device */
} gx_nvml_proc;

typedef struct gx_nvml_dev {
    int index;
    int minor;                   /* of /dev/nvidiaN (nvmlDeviceGetMinorNumber), -1 unknown */
    char uuid[96];
    char name[96];               /* "NVIDIA H100 80GB HBM3" */
    char pci_bus_id[32];
    uint32_t pci_id;             /* device id << 16 | vendor, as mig-parted's device-filter */
    int64_t mem_total_mib, mem_used_mib;
    int util_gpu, util_mem;      /* percent, -1 unknown */
    int mig_mode, mig_pending;   /* -1 when the GPU has no MIG */
    int n_mig;
    gx_nvml_mig mig[GX_MIG_MAX_DEVICES];
    int n_procs;
    gx_nvml_proc procs[GX_NVML_MAX_PROCS];
} gx_nvml_dev;

/* Load and initialise. path NULL = GX_NVML_LIBRARY through the normal library search.
 * NULL with err saying why (library missing, symbol missing, nvmlInit failed with
 * NVML's own error string). */
gx_nvml *gx_gpu_nvml_open(const char *path, gx_err *err);
void gx_gpu_nvml_close(gx_nvml *n);
const char *gx_gpu_nvml_driver(const gx_nvml *n);   /* driver version, "" if unknown */
int gx_gpu_nvml_count(gx_nvml *n, gx_err *err);      /* -1 on error */
int gx_gpu_nvml_query(gx_nvml *n, int index, gx_nvml_dev *out, gx_err *err);
/* Only the changing figures: memory used, utilisation, processes (cheap, for sampling). */
int gx_gpu_nvml_sample(gx_nvml *n, gx_nvml_dev *d, gx_err *err);

/* Change a GPU's MIG layout: MIG mode on (slots) or off (n == 0 and !enable); destroys
 * every compute and GPU instance first, then creates one GPU instance per slot at its
 * start with a full compute instance. On failure everything created is destroyed again.
 * Needs root and an idle GPU. */
int gx_gpu_nvml_mig_apply(gx_nvml *n, int index, int enable, const gx_mig_slot *slots, int count,
                          gx_err *err);

/* The compute mode of GPU `index` (GX_NVML_COMPUTE_*); -1 with err when NVML cannot say. */
int gx_gpu_nvml_compute_mode(gx_nvml *n, int index, gx_err *err);
/* Set it (needs root). -1 with err naming NVML's reason. */
int gx_gpu_nvml_set_compute_mode(gx_nvml *n, int index, int mode, gx_err *err);
const char *gx_gpu_nvml_compute_mode_name(int mode);   /* "Default", "Exclusive_Process", ... */

/* Does this library and GPU offer GPM (nvmlGpmQueryDeviceSupport)? 1 yes, 0 no. */
int gx_gpu_nvml_gpm_supported(gx_nvml *n, int index);
/* NVML_GPM_METRIC_GRAPHICS_UTIL (percent, 0..100) of GPU `index` (gi_id < 0) or of its
 * GPU instance gi_id (nvmlGpmMigSampleGet), over the time since the previous call for
 * the same GPU / instance. 1 with *pct set; 0 when this was the first sample (ask again
 * later); -1 when GPM is not available (old driver, GPU before Hopper, error). */
int gx_gpu_nvml_gr_active(gx_nvml *n, int index, int gi_id, double *pct);

#endif
