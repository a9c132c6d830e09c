/* cudashim/mem: the driver's allocation and free entry points. Each allocation reserves
 * its bytes in the pod's region before the real call (refused: CUDA_ERROR_OUT_OF_MEMORY,
 * the process goes on), gives them back when the real call fails, and is remembered in
 * the process's table so its free subtracts exactly what it added.
 * Devices: cuMemAlloc*, cuMemAllocManaged and the pool/async allocators count on the
 * current context's device; cuMemCreate on prop->location.id, and only for a DEVICE
 * location (host and NUMA locations are not GPU memory, and reading a device from them
 * is HAMi-core #187's crash). Arrays are sized from their descriptor (an estimate: the
 * driver's padding and tiling are not known here; block-compressed and video formats
 * count 4 bytes an element).
 * Owns: the memory hooks. Must not: kill, stop or block the caller. */
#include "cudashim/shim.h"

/* After the real allocation: keep the reservation and remember it, or give it back. */
static CUresult settle(CUresult rc, int kind, uint64_t key, int dev, uint64_t size)
{
    if (rc != CUDA_SUCCESS) { gx_cs_release(dev, size); return rc; }
    /* a full table keeps the bytes counted until the process ends: too much, never too little */
    gx_cs_track(kind, key, dev, size);
    return rc;
}

/* Before the real free: forget it and give its bytes back (done first, so that an address
 * the driver reuses at once for another thread's allocation is not forgotten instead). */
static int forget(int kind, uint64_t key, int *dev, uint64_t *size)
{
    if (!gx_cs_region() || gx_cs_untrack(kind, key, dev, size) != 0) return 0;
    gx_cs_release(*dev, *size);
    return 1;
}
/* ... and when the real free failed after all, count it again. */
static void unforget(int kind, uint64_t key, int dev, uint64_t size)
{
    if (gx_cs_reserve(dev, size) == 0) gx_cs_track(kind, key, dev, size);
}

#define SIMPLE_ALLOC(name, sig_args, call_args, ptrvar)                                       \
    typedef CUresult (*name##_fn) sig_args;                                                   \
    GX_CS_EXPORT CUresult name sig_args                                                       \
    {                                                                                         \
        GX_CS_REAL(name##_fn, real, #name);                                                   \
        if (!real) return CUDA_ERROR_NOT_INITIALIZED;                                         \
        if (!gx_cs_region()) return real call_args;                                           \
        int dev = gx_cs_current_device();                                                     \
        if (gx_cs_reserve(dev, bytesize) != 0) return CUDA_ERROR_OUT_OF_MEMORY;               \
        CUresult rc = real call_args;                                                         \
        return settle(rc, GX_CS_PTR, rc == CUDA_SUCCESS ? *(ptrvar) : 0, dev, bytesize);     \
    }

SIMPLE_ALLOC(cuMemAlloc_v2, (CUdeviceptr *dptr, size_t bytesize), (dptr, bytesize), dptr)
SIMPLE_ALLOC(cuMemAllocManaged, (CUdeviceptr *dptr, size_t bytesize, unsigned flags), (dptr, bytesize, flags), dptr)
SIMPLE_ALLOC(cuMemAllocAsync, (CUdeviceptr *dptr, size_t bytesize, CUstream s), (dptr, bytesize, s), dptr)
SIMPLE_ALLOC(cuMemAllocAsync_ptsz, (CUdeviceptr *dptr, size_t bytesize, CUstream s), (dptr, bytesize, s), dptr)
SIMPLE_ALLOC(cuMemAllocFromPoolAsync, (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool p, CUstream s),
             (dptr, bytesize, p, s), dptr)
SIMPLE_ALLOC(cuMemAllocFromPoolAsync_ptsz, (CUdeviceptr *dptr, size_t bytesize, CUmemoryPool p, CUstream s),
             (dptr, bytesize, p, s), dptr)

/* The pitch is the driver's choice: reserve the row rounded up to 512 bytes, then settle
 * on what it actually took. */
typedef CUresult (*pitch_fn)(CUdeviceptr *, size_t *, size_t, size_t, unsigned);
GX_CS_EXPORT CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                                         unsigned elem)
{
    GX_CS_REAL(pitch_fn, real, "cuMemAllocPitch_v2");
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (!gx_cs_region()) return real(dptr, pitch, width, height, elem);
    int dev = gx_cs_current_device();
    uint64_t guess = ((uint64_t)width + 511) / 512 * 512 * height;
    if (gx_cs_reserve(dev, guess) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = real(dptr, pitch, width, height, elem);
    if (rc != CUDA_SUCCESS) { gx_cs_release(dev, guess); return rc; }
    uint64_t got = (uint64_t)*pitch * height;
    typedef CUresult (*free_fn)(CUdeviceptr);
    if (got > guess && gx_cs_reserve(dev, got - guess) != 0) {
        GX_CS_REAL(free_fn, rfree, "cuMemFree_v2");
        if (rfree) rfree(*dptr);
        gx_cs_release(dev, guess);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (got < guess) gx_cs_release(dev, guess - got);
    gx_cs_track(GX_CS_PTR, *dptr, dev, got);
    return rc;
}

typedef CUresult (*create_fn)(CUmemGenericAllocationHandle *, size_t, const CUmemAllocationProp *, unsigned long long);
GX_CS_EXPORT CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                                  unsigned long long flags)
{
    GX_CS_REAL(create_fn, real, "cuMemCreate");
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (!gx_cs_region() || !prop || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return real(handle, size, prop, flags);
    int dev = prop->location.id;
    if (gx_cs_reserve(dev, size) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = real(handle, size, prop, flags);
    return settle(rc, GX_CS_HANDLE, rc == CUDA_SUCCESS ? *handle : 0, dev, size);
}

typedef CUresult (*release_fn)(CUmemGenericAllocationHandle);
GX_CS_EXPORT CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    GX_CS_REAL(release_fn, real, "cuMemRelease");
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    int dev;
    uint64_t size;
    int had = forget(GX_CS_HANDLE, handle, &dev, &size);
    CUresult rc = real(handle);
    if (rc != CUDA_SUCCESS && had) unforget(GX_CS_HANDLE, handle, dev, size);
    return rc;
}

/* Mapping takes no memory: the bytes were counted when the handle was created (by this
 * process, or by the one that exported it). Hooked so that no lookup of it escapes the
 * shim, and passed on unchanged; the driver itself refuses a handle that is not live. */
typedef CUresult (*map_fn)(CUdeviceptr, size_t, size_t, CUmemGenericAllocationHandle, unsigned long long);
GX_CS_EXPORT CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle h,
                               unsigned long long flags)
{
    GX_CS_REAL(map_fn, real, "cuMemMap");
    return real ? real(ptr, size, offset, h, flags) : CUDA_ERROR_NOT_INITIALIZED;
}

static uint64_t elem_bytes(int format)
{
    switch (format) {
    case 0x01: case 0x08: return 1;
    case 0x02: case 0x09: case 0x10: return 2;
    case 0x03: case 0x0a: case 0x20: return 4;
    default: return 4;
    }
}

static uint64_t array_bytes(size_t w, size_t h, size_t d, int format, unsigned ch)
{
    return (uint64_t)w * (h ? h : 1) * (d ? d : 1) * (ch ? ch : 1) * elem_bytes(format);
}

typedef CUresult (*arr_fn)(CUarray *, const CUDA_ARRAY_DESCRIPTOR *);
GX_CS_EXPORT CUresult cuArrayCreate_v2(CUarray *arr, const CUDA_ARRAY_DESCRIPTOR *desc)
{
    GX_CS_REAL(arr_fn, real, "cuArrayCreate_v2");
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (!gx_cs_region() || !desc) return real(arr, desc);
    int dev = gx_cs_current_device();
    uint64_t size = array_bytes(desc->Width, desc->Height, 1, desc->Format, desc->NumChannels);
    if (gx_cs_reserve(dev, size) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = real(arr, desc);
    return settle(rc, GX_CS_ARRAY, rc == CUDA_SUCCESS ? (uint64_t)(uintptr_t)*arr : 0, dev, size);
}

typedef CUresult (*arr3_fn)(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *);
GX_CS_EXPORT CUresult cuArray3DCreate_v2(CUarray *arr, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    GX_CS_REAL(arr3_fn, real, "cuArray3DCreate_v2");
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (!gx_cs_region() || !desc) return real(arr, desc);
    int dev = gx_cs_current_device();
    uint64_t size = array_bytes(desc->Width, desc->Height, desc->Depth, desc->Format, desc->NumChannels);
    if (gx_cs_reserve(dev, size) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = real(arr, desc);
    return settle(rc, GX_CS_ARRAY, rc == CUDA_SUCCESS ? (uint64_t)(uintptr_t)*arr : 0, dev, size);
}

/* Every level, each half the one before in every dimension the array has. */
typedef CUresult (*mip_fn)(CUmipmappedArray *, const CUDA_ARRAY3D_DESCRIPTOR *, unsigned);
GX_CS_EXPORT CUresult cuMipmappedArrayCreate(CUmipmappedArray *arr, const CUDA_ARRAY3D_DESCRIPTOR *desc,
                                             unsigned levels)
{
    GX_CS_REAL(mip_fn, real, "cuMipmappedArrayCreate");
    if (!real) return CUDA_ERROR_NOT_INITIALIZED;
    if (!gx_cs_region() || !desc) return real(arr, desc, levels);
    int dev = gx_cs_current_device();
    uint64_t size = 0;
    size_t w = desc->Width, h = desc->Height, d = desc->Depth;
    for (unsigned l = 0; l < (levels ? levels : 1); l++) {
        size += array_bytes(w, h, d, desc->Format, desc->NumChannels);
        w = w > 1 ? w / 2 : 1;
        h = h > 1 ? h / 2 : h;
        d = d > 1 ? d / 2 : d;
    }
    if (gx_cs_reserve(dev, size) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = real(arr, desc, levels);
    return settle(rc, GX_CS_MIPMAP, rc == CUDA_SUCCESS ? (uint64_t)(uintptr_t)*arr : 0, dev, size);
}

#define SIMPLE_FREE(name, type, kind, sig_args, call_args, keyexpr)                            \
    typedef CUresult (*name##_fn) sig_args;                                                    \
    GX_CS_EXPORT CUresult name sig_args                                                        \
    {                                                                                          \
        GX_CS_REAL(name##_fn, real, #name);                                                    \
        if (!real) return CUDA_ERROR_NOT_INITIALIZED;                                          \
        int dev;                                                                               \
        uint64_t size;                                                                         \
        int had = forget(kind, keyexpr, &dev, &size);                                          \
        CUresult rc = real call_args;                                                          \
        if (rc != CUDA_SUCCESS && had) unforget(kind, keyexpr, dev, size);                     \
        return rc;                                                                             \
    }

SIMPLE_FREE(cuMemFree_v2, CUdeviceptr, GX_CS_PTR, (CUdeviceptr p), (p), p)
SIMPLE_FREE(cuMemFreeAsync, CUdeviceptr, GX_CS_PTR, (CUdeviceptr p, CUstream s), (p, s), p)
SIMPLE_FREE(cuMemFreeAsync_ptsz, CUdeviceptr, GX_CS_PTR, (CUdeviceptr p, CUstream s), (p, s), p)
SIMPLE_FREE(cuArrayDestroy, CUarray, GX_CS_ARRAY, (CUarray a), (a), (uint64_t)(uintptr_t)a)
SIMPLE_FREE(cuMipmappedArrayDestroy, CUmipmappedArray, GX_CS_MIPMAP, (CUmipmappedArray a), (a),
            (uint64_t)(uintptr_t)a)
