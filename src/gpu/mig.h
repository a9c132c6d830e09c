/* gpu/mig: MIG profile tables, layout validation and mig-parted's `mig-configs` format.
 *
 * A MIG-capable GPU has 8 memory slices and 7 compute slices. A GPU instance of a
 * profile occupies `size` memory slices starting at one of the profile's allowed
 * starts (nvidia-smi mig -lgipp): 1g {0..6}:1, 1g double-memory {0,2,4,6}:2,
 * 2g {0,2,4}:2, 3g {0,4}:4, 4g {0}:4, 7g {0}:8. A layout fits when every instance gets
 * a start, no two overlap, and the compute slices add up to at most 7.
 * Worked example (A100-40GB): 2×3g.20gb + 1g.5gb uses 7 compute slices, but the two
 * 3g instances sit at 0 (slices 0-3) and 4 (4-7), leaving no memory slice for the 1g:
 * rejected with "no placement", as NVIDIA's table of valid combinations says.
 * Owns: the tables (gx_gpu_mig_*), fitting a layout, parsing a mig-parted file.
 * Must not: talk to NVML (gpu/nvml.c applies layouts) or keep state. */
#ifndef GX_GPU_MIG_H
#define GX_GPU_MIG_H
#include <stdint.h>
#include <jansson.h>
#include "lib/err.h"

#define GX_MIG_MAX_DEVICES 7      /* GPU instances per GPU */
#define GX_MIG_MEM_SLICES 8
#define GX_MIG_COMPUTE_SLICES 7

typedef struct gx_mig_profile {
    const char *name;             /* "1g.10gb" */
    int nvml_id;                  /* info.id used by -cgi and the create calls (19, 15, ...) */
    int nvml_index;               /* NVML_GPU_INSTANCE_PROFILE_* index for GetGpuInstanceProfileInfo */
    int compute;                  /* compute slices (the "Ng") */
    int size;                     /* memory slices taken */
    int64_t memory_mib;
    int sms;                      /* streaming multiprocessors */
    int max;                      /* instances per GPU */
    uint8_t starts;               /* bit i: may start at memory slice i */
} gx_mig_profile;

/* A known GPU model: its canonical name, PCI device id (as mig-parted's device-filter
 * writes it, 0xDDDD10DE), memory, and its MIG profiles (NULL/0 when it has no MIG). */
typedef struct gx_gpu_model {
    const char *name;             /* "A100-40GB", "H100-80GB", "L4", ... */
    uint32_t pci_id;
    int64_t memory_mib;
    int compute_capability;       /* major*10+minor */
    const gx_mig_profile *mig;
    int n_mig;
} gx_gpu_model;

/* By canonical name ("H100-80GB"), case-insensitive; NULL when unknown. */
const gx_gpu_model *gx_gpu_mig_model(const char *name);
/* From an NVML product name ("NVIDIA A100-SXM4-40GB", "NVIDIA H100 80GB HBM3", "Tesla T4")
 * and its memory; NULL when unknown. */
const gx_gpu_model *gx_gpu_mig_model_from_nvml(const char *product, int64_t memory_mib);
/* Every known model, for listings: i from 0 until NULL. */
const gx_gpu_model *gx_gpu_mig_model_at(int i);
const gx_mig_profile *gx_gpu_mig_profile(const gx_gpu_model *m, const char *profile);

/* One placed GPU instance. */
typedef struct gx_mig_slot {
    const gx_mig_profile *p;
    int start;                    /* first memory slice */
} gx_mig_slot;

/* Fit a layout (profile names with counts) on a GPU of model m. Fills out[] (at most
 * GX_MIG_MAX_DEVICES, ordered by start) and returns how many, or -1 with err saying why
 * (unknown profile, model without MIG, count over the profile's maximum, more compute
 * or memory slices than the GPU has, or no placement). `field` prefixes err->field. */
int gx_gpu_mig_fit(const gx_gpu_model *m, const char *const *names, const int *counts, int n,
                   gx_mig_slot *out, const char *field, gx_err *err);

/* mig-parted's file: version v1, mig-configs: {NAME: [{device-filter, devices,
 * mig-enabled, mig-devices}]}. Picks config `name` and resolves it for one GPU (its
 * index on the node and model): *enabled tells whether MIG is on, names/counts the
 * devices asked (pointers into doc, valid while doc lives). Returns the number of
 * profiles (0 with MIG off or nothing asked), or -1 with err. A GPU no entry selects
 * keeps MIG off. */
#define GX_MIG_MAX_PROFILES 8
int gx_gpu_mig_config_for(const json_t *doc, const char *name, int gpu_index,
                          const gx_gpu_model *m, int *enabled, const char **names, int *counts,
                          gx_err *err);
/* Checks the whole file's shape (no GPU yet): 0 or -1 with err->field set. */
int gx_gpu_mig_config_check(const json_t *doc, gx_err *err);

#endif
