/* cuda_link: an application linked against libcuda.so.1 (as one built with -lcuda is),
 * calling the driver by its exported names: under LD_PRELOAD the shim's definitions of
 * those names must win. Allocates argv[1] MiB with cuMemAlloc_v2 and prints the rc.
 * Owns: nothing of gpuaas. */
#include <stdio.h>
#include <stdlib.h>
#include "cudashim/cuda_api.h"

CUresult cuInit(unsigned flags);
CUresult cuCtxCreate_v2(CUcontext *c, unsigned flags, CUdevice d);
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n);
CUresult cuMemFree_v2(CUdeviceptr p);

int main(int argc, char **argv)
{
    CUcontext c;
    CUdeviceptr p;
    if (argc != 2 || cuInit(0) || cuCtxCreate_v2(&c, 0, 0)) return 2;
    CUresult rc = cuMemAlloc_v2(&p, strtoull(argv[1], NULL, 10) << 20);
    printf("linked rc=%d\n", rc);
    if (rc == CUDA_SUCCESS) cuMemFree_v2(p);
    return 0;
}
