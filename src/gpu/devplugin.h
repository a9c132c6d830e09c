/* gpu/devplugin: NVIDIA k8s-device-plugin's config file, read unchanged.
 *
 *   version: v1
 *   flags: {migStrategy: none}
 *   sharing:
 *     timeSlicing:            # or mps: (same shape); mps wins when both replicate
 *       renameByDefault: false               # true: offer nvidia.com/gpu.shared
 *       failRequestsGreaterThanOne: false    # true: a request for more than 1 fails
 *       resources:
 *       - {name: nvidia.com/gpu, replicas: 4, devices: all}   # devices: all | N | [index|uuid]
 *
 * flags.migStrategy as in the plugin: none (MIG devices not offered), single (offered as
 * nvidia.com/gpu; every MIG GPU of the node has one and the same profile), mixed
 * (nvidia.com/mig-<profile>); not set = mixed here (the plugin's own default is none,
 * but a node with MIG and no strategy would then offer nothing, which nobody wants).
 * Owns: parsing and checking the file (replicas >= 1, MPS never on MIG resources, the
 * plugin's MPS client cap of 48), and answering "which entry replicates this GPU".
 * Must not: know nodes or GPUs beyond an index and a UUID. */
#ifndef GX_GPU_DEVPLUGIN_H
#define GX_GPU_DEVPLUGIN_H
#include <stddef.h>
#include <jansson.h>
#include "lib/err.h"

#define GX_DP_MAX_RES 8
#define GX_DP_MAX_DEVS 16
#define GX_DP_MPS_MAX_CLIENTS 48  /* the plugin's maxClients() for compute capability >= 7.5 */

enum { GX_DP_NONE = 0, GX_DP_TIMESLICING = 1, GX_DP_MPS = 2 };

typedef struct gx_dp_resource {
    char name[64];            /* nvidia.com/gpu or nvidia.com/mig-<profile> */
    char rename[64];          /* "" = name, or name.shared with renameByDefault */
    int replicas;
    int all;                  /* devices: all (the default) */
    int first_n;              /* devices: N -> the first N GPUs; 0 = not used */
    int n_devs;
    char devs[GX_DP_MAX_DEVS][96];   /* indices ("0") or UUIDs */
} gx_dp_resource;

typedef struct gx_dp_config {
    int strategy;             /* GX_DP_NONE / TIMESLICING / MPS */
    int rename_by_default;
    int fail_gt1;             /* failRequestsGreaterThanOne (forced on for MPS, as the plugin does) */
    char mig_strategy[16];    /* flags.migStrategy: none, single, mixed; "" not set (= mixed) */
    int n_res;
    gx_dp_resource res[GX_DP_MAX_RES];
} gx_dp_config;

/* Parse and check one config document. Errors name the field ("sharing.mps.resources[0].replicas"). */
int gx_gpu_dp_parse(const json_t *doc, gx_dp_config *out, gx_err *err);

/* The entry replicating `resource` ("nvidia.com/gpu", "nvidia.com/mig-1g.10gb") on the
 * device with this index on its node and this UUID, or NULL when it is not shared. */
const gx_dp_resource *gx_gpu_dp_for(const gx_dp_config *c, const char *resource, int index,
                                    const char *uuid);

/* The resource name the shared device is offered under (rename, .shared, or name). */
const char *gx_gpu_dp_offered(const gx_dp_config *c, const gx_dp_resource *r, char *out, size_t n);

const char *gx_gpu_dp_strategy_name(int strategy);

#endif
