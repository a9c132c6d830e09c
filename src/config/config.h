/* config: the server configuration, gpuaas.yaml, plus command-line overrides.
 * Owns: defaults, validation (file:line: field: why), resolving relative paths
 * against the config file's folder. */
#ifndef GX_CONFIG_H
#define GX_CONFIG_H
#include <limits.h>
#include <stddef.h>
#include <jansson.h>
#include "run/run_config.h"
#include "lib/err.h"

/* The longest data directory: every path under it (DATA/run/NAMESPACE/NAME/gN-pN.exit with
 * a 317-byte workload key, the MPS pipes, the database) must fit PATH_MAX whole. */
#define GX_DATA_DIR_MAX 3072

typedef struct gx_config {
    char path[PATH_MAX];          /* the config file, "" when none */
    char listen_host[64];
    int listen_port;
    char data_dir[PATH_MAX];
    char inventory[16];           /* "simulated", "nvml" or "auto" (NVML, else the simulated nodes) */
    json_t *nodes;                /* gpuaas Node manifests read from inventory.nodes */
    /* GPU sharing (src/gpu, docs/gpu-sharing.md) */
    char nvml_library[PATH_MAX];  /* inventory.nvmlLibrary, "" = libnvidia-ml.so.1 */
    json_t *device_plugin;        /* inventory.devicePlugin: {key: NVIDIA device-plugin config}, NULL none */
    char device_plugin_default[64];
    json_t *mig_parted;           /* inventory.migConfig: the mig-parted document, NULL none */
    char mig_default[64];
    char mps_root[PATH_MAX];      /* inventory.mpsRoot, "" = DATA/mps */
    char placement_policy[32];    /* inventory.placementPolicy for fractional GPUs (core/place) */
    json_t *manifests;            /* file paths (resolved) applied at start */
    int fair_sharing;
    size_t max_body_bytes;
    size_t max_workloads;
    size_t max_log_followers;
    size_t max_conns;             /* limits.maxConnections: the HTTP server's, all clients */
    size_t max_conns_per_addr;    /* limits.maxConnectionsPerAddress: from one client address */
    gx_run_config run;            /* run: how pods are isolated (run/run_config.h) */
    /* reservations.limits: {NS: {"gpusAtOnce": GPUs, "gpuHoursPerWeek": hours}} (either key
     * may be absent: unlimited), NULL when none; handed to the booking model at start */
    json_t *rsv_limits;
} gx_config;

void gx_config_defaults(gx_config *c);
/* Read a gpuaas.yaml (kind ServerConfig). err->field/line name the culprit. */
int gx_config_load(gx_config *c, const char *path, gx_err *err);
/* "host:port" into the config. */
int gx_config_set_listen(gx_config *c, const char *s, gx_err *err);
void gx_config_free(gx_config *c);

/* Read a whole file (at most max bytes) into a NUL-terminated buffer. */
char *gx_read_file(const char *path, size_t max, size_t *len, gx_err *err);

#endif
