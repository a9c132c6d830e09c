/* cudashim/hooktab: the table of hooks by exported name that dlsym and cuGetProcAddress
 * answer from (the names come from hooks.h). Kept apart from the hooks' definitions:
 * here each is only an address, declared without its real signature.
 * Owns: the table. Must not: call through these declarations. */
#include "cudashim/hooks.h"
#include "cudashim/shim.h"

#define DECL(n) extern void n(void);
GX_CS_CUDA_HOOKS(DECL)
GX_CS_NVML_HOOKS(DECL)
#undef DECL

#define ENTRY(n) {#n, (void *)n, NULL},
gx_cs_hook_entry gx_cs_cuda_hooks[] = {GX_CS_CUDA_HOOKS(ENTRY)};
gx_cs_hook_entry gx_cs_nvml_hooks[] = {GX_CS_NVML_HOOKS(ENTRY)};
#undef ENTRY
const size_t gx_cs_ncuda = sizeof gx_cs_cuda_hooks / sizeof gx_cs_cuda_hooks[0];
const size_t gx_cs_nnvml = sizeof gx_cs_nvml_hooks / sizeof gx_cs_nvml_hooks[0];
