/* run_config: the `run:` section of gpuaas.yaml: how pods are isolated (docs/security.md).
 * Owns: its defaults and validation (field: why), nothing that acts on them.
 *
 *   run:
 *     sandbox: bubblewrap          # default; `none` runs pods as the daemon (a warning at start)
 *     uidRange: 2000000000-2000999999   # uids given to namespaces, one each, kept in the store
 *     cgroupParent: gpuaas         # below each cgroup hierarchy's root
 *     tmpSize: 1Gi                 # each pod's private /tmp
 *     pidsLimit: 4096              # processes per pod
 *     defaultMemory: 0             # memory limit of a pod that names none (0 = none)
 *     deviceDir: /dev              # where the nvidia* device nodes are
 *     workDir: ""                  # pods' working folders, default DATA/work
 *     cudaShim: auto               # libgpuaas-cuda.so in pods on time-sliced and fractional
 *                                  # GPUs: auto (when built), on (required), off
 *     namespaces:
 *       team-a:
 *         runAsUser: 1001          # a real account instead of one from uidRange
 *         runAsGroup: 1001
 *         hostPaths:               # host folders its Jobs may mount (hostPath volumes)
 *         - {path: /datasets, readOnly: true}
 */
#ifndef GX_RUN_CONFIG_H
#define GX_RUN_CONFIG_H
#include <limits.h>
#include <stdint.h>
#include <sys/types.h>
#include <jansson.h>
#include "lib/err.h"

/* run.cudaShim: auto injects the library when it is beside the gpuaas binary (a pod
 * without it starts, and its view says its limits are not enforced); on refuses to start
 * such a pod; off never injects it. */
enum { GX_CUDA_SHIM_AUTO = 0, GX_CUDA_SHIM_ON, GX_CUDA_SHIM_OFF };

typedef struct gx_run_config {
    int sandbox;                     /* 1: bubblewrap (default), 0: none */
    int sandbox_explicit_none;       /* `sandbox: none` was written */
    uid_t uid_lo, uid_hi;            /* inclusive */
    char cgroup_parent[256];
    int64_t tmp_bytes;
    int64_t pids_max;
    int64_t default_memory;          /* bytes, 0 = none */
    char device_dir[PATH_MAX];
    char work_dir[PATH_MAX];         /* "" = DATA/work */
    int cuda_shim;                   /* GX_CUDA_SHIM_*: docs/gpu-sharing.md "Limits inside the pod" */
    char bwrap[PATH_MAX];            /* not in gpuaas.yaml: GPUAAS_BWRAP (tests), set by the
                                      * composition root; "" = search PATH */
    int start_delay_ms;              /* not in gpuaas.yaml: GPUAAS_TEST_START_DELAY_MS (tests
                                      * only): the executor waits this long after starting a
                                      * pod, widening the window a kill -9 must hit */
    /* {ns: {"uid": N, "gid": N, "hostPaths": [{"path": "/abs", "readOnly": bool}]}}; uid and
     * gid present only when mapped by the admin */
    json_t *namespaces;
} gx_run_config;

void gx_run_config_defaults(gx_run_config *r);
void gx_run_config_free(gx_run_config *r);
/* Read the `run` mapping. dir: the config file's folder (relative workDir). daemon_uid:
 * refused as a namespace's runAsUser, like 0. */
int gx_run_config_load(gx_run_config *r, const json_t *run, const char *dir, uid_t daemon_uid, gx_err *err);

/* The admin's mapping for ns: 1 with *uid and *gid, 0 when ns takes one from uidRange. */
int gx_run_config_ns_id(const gx_run_config *r, const char *ns, uid_t *uid, gid_t *gid);
/* Is host path `path` (absolute, already resolved) one that ns may mount? 1 yes (and
 * *read_only says whether the admin allows only read-only), 0 no. A path is allowed when
 * it is an allowed folder or lies below one. */
int gx_run_config_host_path(const gx_run_config *r, const char *ns, const char *path, int *read_only);

#endif
