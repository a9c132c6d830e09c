/* gpu/podenv: the environment a pod gets for its shared devices.
 *
 * On top of CUDA_VISIBLE_DEVICES (podspec.c), per device the pod holds:
 *  - MPS or fractional with a running MPS daemon, one device: CUDA_MPS_PIPE_DIRECTORY,
 *    CUDA_MPS_LOG_DIRECTORY, CUDA_MPS_ACTIVE_THREAD_PERCENTAGE (100/N, or the vGPU's
 *    cores) and CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=<MiB>M (memory/N, or the vGPU's);
 *  - fractional: HAMi-core's CUDA_DEVICE_MEMORY_LIMIT_<i>=<MiB>m and CUDA_DEVICE_SM_LIMIT;
 *  - always GPUAAS_GPU_SHARING=<mode of the first device>.
 * run/executor.c passes them to gx_podspec_envp() as extra_env for each pod.
 * Owns: computing those entries. Must not: start anything or change the engine. */
#ifndef GX_GPU_PODENV_H
#define GX_GPU_PODENV_H
#include <jansson.h>
#include "core/engine.h"
#include "gpu/inventory.h"
#include "gpu/mps.h"

/* The entries of a pod placed on devs (the engine's typed answer for the pod,
 * gx_engine_wl_devices(): its devices in CUDA_VISIBLE_DEVICES order, with their shares;
 * MPS limits follow the GPU's replicas where a device has no share). Returns a
 * NULL-terminated array of malloc'd "K=V" strings (free each and the array), or NULL
 * when there is nothing to add. */
char **gx_gpu_podenv_devs(gx_gpu_inv *inv, const gx_gpu_mps *mps, const gx_engine_dev *devs, int n);

#endif
