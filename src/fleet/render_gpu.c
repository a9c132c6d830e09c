/* fleet/render_gpu: the GPU Operator pieces of a cluster of the fleet (docs/fleet.md, "What
 * a cluster gets"): the device-plugin ConfigMap (time-slicing, MPS), the mig-parted
 * ConfigMap, and the Node labels that pick a config per node.
 * Owns: gx_fleet_render_gpu (fleet.h). The ConfigMap is read back with the server's own
 * reader (gpu/devplugin.h gx_gpu_dp_configs) before it is handed out, so a cluster never
 * gets a config the server itself would refuse.
 * Must not: do I/O, read a clock, or own the Nodes it labels (they are patched with
 * server-side apply, never created or pruned). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fleet/fleet.h"
#include "gpu/devplugin.h"
#include "gpu/mig.h"
#include "lib/alloc.h"
#include "lib/yaml.h"

/* The ClusterPolicy names these (spec.devicePlugin.config.name and
 * spec.migManager.config.name): docs/fleet.md says how. */
#define OPERATOR_NS "gpu-operator"
#define DP_CONFIGMAP "gpuaas-device-plugin"
#define MIG_CONFIGMAP "custom-mig-config"
/* Argo CD patches the existing Node (server-side apply), and neither prunes nor deletes
 * it when the file goes away: a Node is the cluster's, not the repository's. */
#define NODE_SYNC "ServerSideApply=true,Prune=false,Delete=false"

static int by_key(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A YAML text value for a ConfigMap's data. */
static json_t *yaml_text(const json_t *doc)
{
    char *y = gx_yaml_emit(doc);
    json_t *s = json_string(y);
    free(y);
    return s;
}

static json_t *configmap(const char *name, json_t *data)
{
    return json_pack("{s:s,s:s,s:{s:s,s:s},s:o}", "apiVersion", "v1", "kind", "ConfigMap", "metadata", "name", name,
                     "namespace", OPERATOR_NS, "data", data);
}

/* The device-plugin ConfigMap: one key per config, sorted, each the config as YAML. */
static json_t *device_plugin(const gx_fleet_cluster *c, gx_err *err)
{
    size_t n = json_object_size(c->device_plugin), i = 0;
    const char **keys = gx_xcalloc(n, sizeof *keys);
    const char *k;
    json_t *v;
    json_object_foreach(c->device_plugin, k, v) keys[i++] = k;
    qsort(keys, n, sizeof *keys, by_key);
    json_t *data = json_object();
    for (i = 0; i < n; i++) json_object_set_new(data, keys[i], yaml_text(json_object_get(c->device_plugin, keys[i])));
    free(keys);
    json_t *cm = configmap(DP_CONFIGMAP, data);
    /* read back as the server reads such a ConfigMap: the same checks, the same errors */
    char def[80];
    json_t *back = gx_gpu_dp_configs(cm, def, sizeof def, err);
    if (!back) {
        char f[sizeof err->field];
        if (!strncmp(err->field, "data.", 5)) gx_err_path(f, sizeof f, "gpuOperator.devicePlugin.configs",
                                                          "gpuOperator.devicePlugin.configs.%s", err->field + 5);
        else snprintf(f, sizeof f, "gpuOperator.devicePlugin");
        snprintf(err->field, sizeof err->field, "%s", f);
        gx_err_wrap(err, "cluster %s", c->name);
        json_decref(cm);
        return NULL;
    }
    json_decref(back);
    if (c->device_plugin_default && !json_object_get(c->device_plugin, c->device_plugin_default)) {
        json_decref(cm);
        return gx_errf(err, 422, "gpuOperator.devicePlugin.default", "cluster %s has no device-plugin config %s",
                       c->name, c->device_plugin_default), NULL;
    }
    return cm;
}

/* One Node's labels, NULL when the fleet sets none for it. */
static json_t *node(const gx_fleet_cluster *c, const gx_fleet_node *nd, gx_err *err)
{
    json_t *labels = json_object();
    if (nd->device_plugin_config) {
        if (!c->device_plugin || !json_object_get(c->device_plugin, nd->device_plugin_config)) {
            json_decref(labels);
            return gx_errf(err, 422, "gpuOperator.nodes.devicePluginConfig", "cluster %s, node %s: no device-plugin config %s",
                           c->name, nd->name, nd->device_plugin_config), NULL;
        }
        json_object_set_new(labels, "nvidia.com/device-plugin.config", json_string(nd->device_plugin_config));
    }
    if (nd->mig_config) {
        if (!json_object_get(json_object_get(c->mig_parted, "mig-configs"), nd->mig_config)) {
            json_decref(labels);
            return gx_errf(err, 422, "gpuOperator.nodes.migConfig", "cluster %s, node %s: no mig-parted config %s",
                           c->name, nd->name, nd->mig_config), NULL;
        }
        json_object_set_new(labels, "nvidia.com/mig.config", json_string(nd->mig_config));
    }
    if (!json_object_size(labels)) {
        json_decref(labels);
        return json_null();
    }
    return json_pack("{s:s,s:s,s:{s:s,s:o,s:{s:s}}}", "apiVersion", "v1", "kind", "Node", "metadata", "name", nd->name,
                     "labels", labels, "annotations", "argocd.argoproj.io/sync-options", NODE_SYNC);
}

static int by_node_name(const void *a, const void *b)
{
    return strcmp((*(const gx_fleet_node *const *)a)->name, (*(const gx_fleet_node *const *)b)->name);
}

json_t *gx_fleet_render_gpu(const gx_fleet_cluster *c, gx_err *err)
{
    json_t *out = json_array();
    /* sorted by kind, namespace, name: ConfigMap custom-mig-config, ConfigMap
     * gpuaas-device-plugin, then the Nodes by name */
    if (c->mig_parted) {
        if (gx_gpu_mig_config_check(c->mig_parted, err)) {
            gx_err_prefix(err, "gpuOperator.migConfig");
            gx_err_wrap(err, "cluster %s", c->name);
            json_decref(out);
            return NULL;
        }
        json_array_append_new(out, configmap(MIG_CONFIGMAP, json_pack("{s:o}", "config.yaml", yaml_text(c->mig_parted))));
    }
    if (c->device_plugin && json_object_size(c->device_plugin)) {
        json_t *cm = device_plugin(c, err);
        if (!cm) {
            json_decref(out);
            return NULL;
        }
        json_array_append_new(out, cm);
    }
    const gx_fleet_node **nodes = gx_xcalloc(c->nnodes ? c->nnodes : 1, sizeof *nodes);
    for (size_t i = 0; i < c->nnodes; i++) nodes[i] = &c->nodes[i];
    qsort(nodes, c->nnodes, sizeof *nodes, by_node_name);
    for (size_t i = 0; i < c->nnodes; i++) {
        json_t *n = node(c, nodes[i], err);
        if (!n) {
            free(nodes);
            json_decref(out);
            return NULL;
        }
        if (json_is_null(n)) json_decref(n);
        else json_array_append_new(out, n);
    }
    free(nodes);
    return out;
}
