/* cudashim/hooks: the list of hooked driver and NVML entry points, one X(name) line each,
 * expanded by resolve.c into the lookup table that dlsym and cuGetProcAddress answer
 * from, and by the hook files into their declarations.
 * Owns: the list. Must not: name an entry point without a hook of that exact name. */
#ifndef GX_CUDASHIM_HOOKS_H
#define GX_CUDASHIM_HOOKS_H
#define GX_CS_CUDA_HOOKS(X)                                                          \
    X(cuMemAlloc_v2) X(cuMemAllocPitch_v2) X(cuMemAllocManaged) X(cuMemAllocAsync)    \
    X(cuMemAllocAsync_ptsz) X(cuMemAllocFromPoolAsync) X(cuMemAllocFromPoolAsync_ptsz) \
    X(cuMemCreate) X(cuMemRelease) X(cuMemMap) X(cuArrayCreate_v2) X(cuArray3DCreate_v2) \
    X(cuMipmappedArrayCreate) X(cuMemFree_v2) X(cuMemFreeAsync) X(cuMemFreeAsync_ptsz) \
    X(cuArrayDestroy) X(cuMipmappedArrayDestroy) X(cuMemGetInfo_v2)                   \
    X(cuLaunchKernel) X(cuLaunchKernel_ptsz) X(cuLaunchKernelEx) X(cuLaunchKernelEx_ptsz) \
    X(cuLaunchCooperativeKernel) X(cuLaunchCooperativeKernel_ptsz)                    \
    X(cuGraphLaunch) X(cuGraphLaunch_ptsz) X(cuGetProcAddress) X(cuGetProcAddress_v2)
#define GX_CS_NVML_HOOKS(X) X(nvmlDeviceGetMemoryInfo) X(nvmlDeviceGetMemoryInfo_v2)
#endif
