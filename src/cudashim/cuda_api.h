/* cudashim/cuda_api: the few CUDA driver API and NVML types, values and signatures the
 * shim (and the fake driver and test programs of tests/) use, declared here because no
 * CUDA header exists in this tree and none may be copied into it.
 * Written from NVIDIA's public documentation:
 *   - CUresult values, CUdeviceptr (unsigned 64-bit), cuMemAlloc_v2 & co.: CUDA Driver
 *     API reference, "Data types used by CUDA driver" and "Memory Management";
 *   - cuGetProcAddress (v1: symbol, pfn, cudaVersion, flags; _v2 adds
 *     CUdriverProcAddressQueryResult *symbolStatus, values SUCCESS 0, SYMBOL_NOT_FOUND 1,
 *     VERSION_NOT_SUFFICIENT 2) and the flags CU_GET_PROC_ADDRESS_DEFAULT 0,
 *     LEGACY_STREAM 1<<0, PER_THREAD_DEFAULT_STREAM 1<<1: "Driver Entry Point Access";
 *   - CUmemAllocationProp {type, requestedHandleTypes, location {type, id},
 *     win32HandleMetaData, allocFlags (8 bytes)}, CU_MEM_LOCATION_TYPE_DEVICE 1:
 *     "Virtual Memory Management" and the CUmemAllocationProp / CUmemLocation structs;
 *   - CUDA_ARRAY_DESCRIPTOR {Width, Height, Format, NumChannels}, CUDA_ARRAY3D_DESCRIPTOR
 *     {Width, Height, Depth, Format, NumChannels, Flags}, CUarray_format values (1, 2, 3
 *     unsigned 8/16/32-bit, 8, 9, 10 signed, 0x10 half, 0x20 float);
 *   - CUlaunchConfig {gridDim[XYZ], blockDim[XYZ], sharedMemBytes, hStream, attrs,
 *     numAttrs} (cuLaunchKernelEx, CUDA 12);
 *   - nvmlMemory_t {total, free, used} and nvmlMemory_v2_t {version, total, reserved,
 *     free, used}: NVML API reference, "Device Queries".
 * Owns: declarations only. Must not: hold code, or grow past what the shim uses. */
#ifndef GX_CUDASHIM_CUDA_API_H
#define GX_CUDASHIM_CUDA_API_H
#include <stddef.h>
#include <stdint.h>

typedef int CUresult;
enum {
    CUDA_SUCCESS = 0,
    CUDA_ERROR_INVALID_VALUE = 1,
    CUDA_ERROR_OUT_OF_MEMORY = 2,
    CUDA_ERROR_NOT_INITIALIZED = 3,
    CUDA_ERROR_INVALID_CONTEXT = 201,
    CUDA_ERROR_INVALID_HANDLE = 400,
    CUDA_ERROR_NOT_FOUND = 500,
    CUDA_ERROR_NOT_READY = 600,
};
typedef int CUdevice;
typedef uint64_t CUdeviceptr;
typedef uint64_t cuuint64_t;
typedef uint64_t CUmemGenericAllocationHandle;
typedef struct CUctx_st *CUcontext;
typedef struct CUstream_st *CUstream;
typedef struct CUfunc_st *CUfunction;
typedef struct CUarray_st *CUarray;
typedef struct CUmipmappedArray_st *CUmipmappedArray;
typedef struct CUmemPoolHandle_st *CUmemoryPool;
typedef struct CUgraphExec_st *CUgraphExec;
typedef struct CUevent_st *CUevent;   /* cuEventCreate / Record / Synchronize / ElapsedTime: "Event Management" */
typedef int CUdriverProcAddressQueryResult;
enum { CU_GET_PROC_ADDRESS_SUCCESS = 0, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND = 1,
       CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT = 2 };
enum { CU_GET_PROC_ADDRESS_DEFAULT = 0, CU_GET_PROC_ADDRESS_LEGACY_STREAM = 1,
       CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM = 2 };
enum { CU_MEM_LOCATION_TYPE_INVALID = 0, CU_MEM_LOCATION_TYPE_DEVICE = 1, CU_MEM_LOCATION_TYPE_HOST = 2 };
enum { CU_MEM_ALLOCATION_TYPE_PINNED = 1 };

typedef struct { int type; int id; } CUmemLocation;
typedef struct {
    int type;                       /* CUmemAllocationType */
    int requestedHandleTypes;       /* CUmemAllocationHandleType */
    CUmemLocation location;
    void *win32HandleMetaData;
    unsigned char allocFlags[8];    /* compressionType, gpuDirectRDMACapable, usage, reserved[4] */
} CUmemAllocationProp;

typedef struct { size_t Width, Height; int Format; unsigned NumChannels; } CUDA_ARRAY_DESCRIPTOR;
typedef struct { size_t Width, Height, Depth; int Format; unsigned NumChannels, Flags; } CUDA_ARRAY3D_DESCRIPTOR;

typedef struct {
    unsigned gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes;
    CUstream hStream;
    void *attrs;
    unsigned numAttrs;
} CUlaunchConfig;

/* NVML */
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;

#endif
