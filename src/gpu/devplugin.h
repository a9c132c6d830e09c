/* gpu/devplugin: NVIDIA k8s-device-plugin's config file, read unchanged.
 *
 *   version: v1
 *   flags: {migStrategy: none}
 *   sharing:
 *     timeSlicing:            # or mps: (same shape); mps wins when both replicate
 *       renameByDefault: false               # true: offer nvidia.com/gpu.shared
 *       failRequestsGreaterThanOne: false    # true: a request for more than 1 fails
 *       resources:
 *       - {name: nvidia.com/gpu, replicas: 4, devices: all}   # all | N | [index | "gpu:mig" | uuid]
 *
 * flags.migStrategy as in the plugin: none (MIG devices not offered), single (offered as
 * nvidia.com/gpu; every MIG GPU of the node has one and the same profile), mixed
 * (nvidia.com/mig-<profile>); not set = mixed here (the plugin's own default is none,
 * but a node with MIG and no strategy would then offer nothing, which nobody wants).
 * Owns: parsing and checking the file as the plugin does (replicas >= 2, devices entries
 * that are indices, MIG indices or UUIDs, rename a resource name, MPS never on MIG
 * resources, the plugin's MPS client cap of 48), the GPU Operator's ConfigMap of such
 * files (devplugin_cm.c), and answering "which entry replicates this device".
 * Must not: know nodes or GPUs beyond indices and UUIDs; read files. */
#ifndef GX_GPU_DEVPLUGIN_H
#define GX_GPU_DEVPLUGIN_H
#include <stddef.h>
#include <jansson.h>
#include "lib/err.h"

#define GX_DP_MAX_RES 8
#define GX_DP_MAX_DEVS 16
#define GX_DP_MPS_MAX_CLIENTS 48  /* the plugin's maxClients() for compute capability >= 7.5 */
#define GX_DP_MAX_REPLICAS 1024   /* time-slicing: the plugin has no cap; GX_SHARE_MAX_REPLICAS (docs/gpu-sharing.md) */

enum { GX_DP_DEV_INDEX = 1, GX_DP_DEV_MIG_INDEX, GX_DP_DEV_UUID };

/* One entry of devices: a GPU index ("0"), a MIG index ("0:1": MIG device 1 of GPU 0),
 * or a UUID (GPU-..., MIG-..., MIG-GPU-.../gi/ci). */
typedef struct gx_dp_dev {
    int kind;                 /* GX_DP_DEV_* */
    int gpu, mig;             /* INDEX: gpu; MIG_INDEX: gpu and mig */
    char uuid[96];            /* UUID */
} gx_dp_dev;

enum { GX_DP_NONE = 0, GX_DP_TIMESLICING = 1, GX_DP_MPS = 2 };

typedef struct gx_dp_resource {
    char name[64];            /* nvidia.com/gpu or nvidia.com/mig-<profile> ("gpu" reads as nvidia.com/gpu) */
    char rename[64];          /* "" = name (or name.shared with renameByDefault); nvidia.com/<subdomain> */
    int replicas;
    int all;                  /* devices: all (the default) */
    int first_n;              /* devices: N -> the first N GPUs; 0 = not used */
    int n_devs;
    gx_dp_dev devs[GX_DP_MAX_DEVS];
} gx_dp_resource;

typedef struct gx_dp_config {
    int strategy;             /* GX_DP_NONE / TIMESLICING / MPS */
    int rename_by_default;
    int fail_gt1;             /* failRequestsGreaterThanOne (MPS: true unless set false, as the plugin) */
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
/* The same for MIG device `mig` (its position on the GPU, as nvidia-smi -L lists it) with
 * UUID mig_uuid on GPU index/uuid: matched by "index:mig", its own UUID, or its GPU's
 * index or UUID. */
const gx_dp_resource *gx_gpu_dp_for_mig(const gx_dp_config *c, const char *resource, int index,
                                        const char *uuid, int mig, const char *mig_uuid);

/* The resource name the shared device is offered under (rename, .shared, or name). */
const char *gx_gpu_dp_offered(const gx_dp_config *c, const gx_dp_resource *r, char *out, size_t n);

const char *gx_gpu_dp_strategy_name(int strategy);

/* Every config of `doc`: the GPU Operator's ConfigMap (apiVersion: v1, kind: ConfigMap,
 * data: {KEY: "<config YAML>"}), each entry checked, or one plain config (kept under the
 * key "default"). Returns {KEY: parsed config} (new reference) and in def the key nodes
 * without the nvidia.com/device-plugin.config label use when the file names none, as the
 * plugin's config manager falls back: the entry named "default", else the only entry, else
 * "" (none). NULL with err when something is wrong: an entry's error has the field
 * data.KEY and its own field and line in the message. */
json_t *gx_gpu_dp_configs(const json_t *doc, char *def, size_t n, gx_err *err);
int gx_gpu_dp_is_configmap(const json_t *doc);

#endif
