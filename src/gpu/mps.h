/* gpu/mps: one NVIDIA MPS control daemon per GPU that is shared by MPS (and per
 * fractional GPU, whose vGPU limits MPS enforces where it is available).
 *
 * For each such GPU: DATA/mps/<uuid>/{pipe,log}; `nvidia-cuda-mps-control -d` started
 * with CUDA_VISIBLE_DEVICES=<uuid>, CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY;
 * for MPS replicas N the defaults every client gets, written to the control daemon:
 * `set_default_active_thread_percentage 100/N` and
 * `set_default_device_pinned_mem_limit 0 <memory/N>M` (device by index, as the device
 * plugin does: the UUID form was not applied). Stop: `quit`. A daemon already running
 * on the pipe directory (a gpuaas restart while MPS workloads run) is reused; at stop a
 * GPU that still has workloads keeps its daemon, so they survive a gpuaas restart.
 *
 * Compute mode (real GPUs, MPS mode): as NVIDIA's MPS guide asks, the GPU is set to
 * EXCLUSIVE_PROCESS before its control daemon starts (only the MPS server then opens a
 * context; a stray non-MPS process fails fast instead of time-slicing with it), and set
 * back at stop. The mode found is recorded first in DATA/mps/<uuid>/compute-mode (one
 * line: the number, as nvmlComputeMode_t), so a start after a crash restores the
 * original, not the EXCLUSIVE_PROCESS it finds; the file goes when the mode is restored.
 * Setting it fails without root: a warning says so and MPS runs in the mode as it is.
 * Fractional GPUs keep their mode: a pod spanning two of them is no MPS client of
 * either and would be refused by an exclusive-process GPU.
 * Owns: those processes, directories and the compute mode of MPS GPUs. Must not: block the loop after start-up (it
 * runs at start and stop only; each control command is bounded to a few seconds). */
#ifndef GX_GPU_MPS_H
#define GX_GPU_MPS_H
#include <stdio.h>
#include "gpu/inventory.h"

#define GX_MPS_CONTROL "nvidia-cuda-mps-control"

typedef struct gx_gpu_mps gx_gpu_mps;

/* Start (or adopt) the daemons for inv's MPS and fractional GPUs under root (created).
 * What happens is reported on `log` per GPU, including a missing control binary for
 * the GPUs that need it (their workloads then run without MPS limits). Never NULL. */
gx_gpu_mps *gx_gpu_mps_start(const gx_gpu_inv *inv, const char *root, FILE *log);
/* Quit every daemon except those of GPUs listed in busy (UUIDs, may be NULL), then free. */
void gx_gpu_mps_stop(gx_gpu_mps *m, const char *const *busy, int n_busy, FILE *log);
/* The pipe and log directories of a GPU whose daemon runs: 1, or 0 when none runs. */
int gx_gpu_mps_dirs(const gx_gpu_mps *m, const char *uuid, const char **pipe, const char **logdir);
/* "running", "adopted", "no nvidia-cuda-mps-control", "failed: ..." or NULL (no MPS). */
const char *gx_gpu_mps_state(const gx_gpu_mps *m, const char *uuid);

#endif
