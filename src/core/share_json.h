/* core/share_json: the Node `sharing` object of one GPU <-> core/share's model.
 * Owns: the JSON form (see share_json.c). Must not: do I/O. */
#ifndef GX_SHARE_JSON_H
#define GX_SHARE_JSON_H
#include <stdint.h>
#include <jansson.h>
#include "core/share.h"
#include "lib/err.h"

/* Fill *out from spec.gpus[i].sharing (NULL/absent = exclusive). uuid and mem_mib are the
 * GPU's. Errors name `field`. Call gx_share_node_reset() on the node afterwards. */
int gx_share_gpu_from_json(const json_t *sharing, const char *uuid, int64_t mem_mib, gx_share_gpu *out,
                           const char *field, gx_err *err);

/* {"mode","resource","replicas","slotsUsed","slotsTotal","memoryAllocatedMiB","coresAllocated",
 *  "slices":[{MIG: index,uuid,profile,resource,start,size,memoryMiB,replicas | replica}, "holders":
 *  [{"owner","workload"?,"memoryMiB","cores"}]]}. owner_names[i] (may be NULL) names the
 * holder of n->alloc[i]. */
json_t *gx_share_gpu_view(const gx_share_node *n, int g, const char *const *owner_names);

#endif
