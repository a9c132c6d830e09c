/* Unit tests for the GPU settings of gpuaas.yaml (config/config.c: inventory.source,
 * devicePlugin, migConfig, mpsRoot, placementPolicy): files are read and checked at
 * load, and every mistake names the file, line and field. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/place.h"
#include "config/config.h"

static char dir[] = "/tmp/gpuaas-cfg.XXXXXX";

static void put(const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
}

static int load(const char *inventory, gx_config *c, gx_err *e)
{
    char text[2048], p[256];
    snprintf(text, sizeof text, "apiVersion: gpuaas.dev/v1alpha1\nkind: ServerConfig\ninventory:\n%s", inventory);
    put("gpuaas.yaml", text);
    snprintf(p, sizeof p, "%s/gpuaas.yaml", dir);
    gx_config_defaults(c);
    gx_err_clear(e);
    return gx_config_load(c, p, e);
}

static void setup(void)
{
    cr_assert(mkdtemp(dir));
    put("node.yaml", "apiVersion: gpuaas.dev/v1alpha1\nkind: Node\nmetadata: {name: n}\nspec:\n  gpus: [{model: L4}]\n");
    put("ts.yaml", "version: v1\nsharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 4}]\n");
    put("bad.yaml", "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 0\n");
    put("parted.yaml", "version: v1\nmig-configs:\n  all-disabled:\n  - {devices: all, mig-enabled: false}\n");
}

static void teardown(void)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(gpu_config, .init = setup, .fini = teardown);

Test(gpu_config, sharing_files_are_read)
{
    gx_config c;
    gx_err e;
    cr_assert_eq(load("  source: auto\n  nodes: node.yaml\n  nvmlLibrary: lib/libnvidia-ml.so.1\n"
                      "  devicePlugin: {default: ts, configs: {ts: ts.yaml}}\n"
                      "  migConfig: {file: parted.yaml, default: all-disabled}\n  placementPolicy: fgd\n"
                      "  mpsRoot: /run/mps\n", &c, &e), 0, "%s", e.msg);
    cr_assert_str_eq(c.inventory, "auto");
    cr_assert(strstr(c.nvml_library, "/lib/libnvidia-ml.so.1"), "relative to the file: %s", c.nvml_library);
    cr_assert(json_object_get(c.device_plugin, "ts"));
    cr_assert_str_eq(c.device_plugin_default, "ts");
    cr_assert(json_object_get(c.mig_parted, "mig-configs"));
    cr_assert_str_eq(c.mig_default, "all-disabled");
    cr_assert_str_eq(c.placement_policy, "fgd");
    cr_assert_str_eq(c.mps_root, "/run/mps");
    gx_config_free(&c);
    cr_assert_eq(load("  nodes: node.yaml\n  devicePlugin: ts.yaml\n", &c, &e), 0, "%s", e.msg);
    cr_assert_str_eq(c.device_plugin_default, "default", "a single file is every node's default");
    cr_assert_str_eq(c.placement_policy, GX_PLACE_DEFAULT_POLICY, "the default is the policy that measured best");
    gx_config_free(&c);
}

Test(gpu_config, mistakes_are_named)
{
    gx_config c;
    gx_err e;
    cr_assert_eq(load("  source: gpu\n", &c, &e), -1);
    cr_assert(strstr(e.msg, "simulated, nvml or auto"), "%s", e.msg);
    gx_config_free(&c);
    cr_assert_eq(load("  devicePlugin: bad.yaml\n", &c, &e), -1);
    cr_assert(strstr(e.msg, "bad.yaml:6: sharing.timeSlicing.resources[0].replicas: replicas must be >= 2 (got 0)"),
              "%s", e.msg);
    gx_config_free(&c);
    cr_assert_eq(load("  devicePlugin: {default: nope, configs: {ts: ts.yaml}}\n", &c, &e), -1);
    cr_assert_str_eq(e.field, "inventory.devicePlugin.default");
    gx_config_free(&c);
    cr_assert_eq(load("  migConfig: {file: parted.yaml, default: all-7g}\n", &c, &e), -1);
    cr_assert(strstr(e.msg, "no config named all-7g"), "%s", e.msg);
    gx_config_free(&c);
    cr_assert_eq(load("  placementPolicy: magic\n", &c, &e), -1);
    cr_assert(strstr(e.msg, "best-fit"), "%s", e.msg);
    gx_config_free(&c);
    cr_assert_eq(load("  migconfig: parted.yaml\n", &c, &e), -1);
    cr_assert_str_eq(e.field, "inventory.migconfig");
    gx_config_free(&c);
    cr_assert_eq(load("  devicePlugin: missing.yaml\n", &c, &e), -1);
    cr_assert(strstr(e.msg, "missing.yaml"), "%s", e.msg);
    gx_config_free(&c);
}

/* Nothing is cut silently: a path too long is refused naming its field; a long file name
 * in an error gives way before the message does; a long unknown key is named by its
 * parent's path, not by a cut one. */
Test(gpu_config, long_input_is_refused_not_cut)
{
    gx_config c;
    gx_err e;
    static char text[6000], big[5000];
    memset(big, 'a', sizeof big - 1);
    snprintf(text, sizeof text, "apiVersion: gpuaas.dev/v1alpha1\nkind: ServerConfig\ninventory:\n  mpsRoot: /%s\n", big);
    put("long.yaml", text);
    char p[256];
    snprintf(p, sizeof p, "%s/long.yaml", dir);
    gx_config_defaults(&c);
    cr_assert_eq(gx_config_load(&c, p, &e), -1, "a 5000-byte mpsRoot was taken (cut?): %.60s...", c.mps_root);
    cr_assert_str_eq(e.field, "inventory.mpsRoot");
    cr_assert(strstr(e.msg, "longer than 4095 bytes"), "%s", e.msg);
    gx_config_free(&c);

    /* bad.yaml's own message, whole, behind a 450-byte path */
    char sub[600], cmd[sizeof sub * 2 + sizeof dir + 64];
    snprintf(sub, sizeof sub, "%s/%0100d/%0100d/%0100d/%0100d", dir, 1, 2, 3, 4);
    snprintf(cmd, sizeof cmd, "mkdir -p %s && cp %s/bad.yaml %s/", sub, dir, sub);
    cr_assert_eq(system(cmd), 0);
    snprintf(text, sizeof text, "  devicePlugin: %s/bad.yaml\n", sub);
    cr_assert_eq(load(text, &c, &e), -1);
    const char *want = "sharing.timeSlicing.resources[0].replicas: replicas must be >= 2 (got 0)";
    size_t ml = strlen(e.msg), wl = strlen(want);
    cr_assert(ml >= wl && !strcmp(e.msg + ml - wl, want), "the message was cut: %s", e.msg);
    cr_assert(strstr(e.msg, "bad.yaml:6: "), "%s", e.msg);
    gx_config_free(&c);

    char key[400];
    memset(key, 'k', 250);   /* the YAML reader takes keys up to 255 bytes */
    key[250] = 0;
    snprintf(text, sizeof text, "version: v1\nsharing:\n  timeSlicing:\n    %s: 1\n"
             "    resources: [{name: nvidia.com/gpu, replicas: 2}]\n", key);
    put("longkey.yaml", text);
    cr_assert_eq(load("  devicePlugin: longkey.yaml\n", &c, &e), -1);
    cr_assert(strstr(e.msg, "longkey.yaml:4: sharing.timeSlicing: unknown field"), "%s", e.msg);
    gx_config_free(&c);
}

/* The GPU Operator's ConfigMap of device-plugin configs, as its docs write it, is read as
 * is: its entries are the configs, the default as the Operator's devicePlugin.config.default
 * ({file, default}) or, without one, as the plugin's config manager falls back. */
Test(gpu_config, gpu_operator_configmap)
{
    gx_config c;
    gx_err e;
    put("cm-all.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: time-slicing-config-all\ndata:\n  any: |-\n"
        "    version: v1\n    flags:\n      migStrategy: none\n    sharing:\n      timeSlicing:\n        resources:\n"
        "        - name: nvidia.com/gpu\n          replicas: 4\n");
    put("cm-fine.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: time-slicing-config-fine\ndata:\n"
        "  a100-40gb: |-\n    version: v1\n    sharing:\n      timeSlicing:\n        resources:\n"
        "        - name: nvidia.com/gpu\n          replicas: 8\n"
        "  tesla-t4: |-\n    version: v1\n    sharing:\n      timeSlicing:\n        resources:\n"
        "        - name: nvidia.com/gpu\n          replicas: 4\n");
    cr_assert_eq(load("  devicePlugin: cm-all.yaml\n", &c, &e), 0, "%s", e.msg);
    cr_assert(json_object_get(c.device_plugin, "any"));
    cr_assert_str_eq(c.device_plugin_default, "any", "one entry: every node's default");
    gx_config_free(&c);
    cr_assert_eq(load("  devicePlugin: {file: cm-fine.yaml, default: tesla-t4}\n", &c, &e), 0, "%s", e.msg);
    cr_assert_eq(json_object_size(c.device_plugin), 2);
    cr_assert_str_eq(c.device_plugin_default, "tesla-t4");
    gx_config_free(&c);
    cr_assert_eq(load("  devicePlugin: cm-fine.yaml\n", &c, &e), 0, "%s", e.msg);
    cr_assert_str_eq(c.device_plugin_default, "", "two entries, none named default: only labelled nodes share");
    gx_config_free(&c);
    cr_assert_eq(load("  devicePlugin: {file: ts.yaml, default: default}\n", &c, &e), 0, "%s", e.msg);
    cr_assert_str_eq(c.device_plugin_default, "default");
    gx_config_free(&c);

    cr_assert_eq(load("  devicePlugin: {file: cm-fine.yaml, default: h100}\n", &c, &e), -1);
    cr_assert_str_eq(e.field, "inventory.devicePlugin.default");
    cr_assert(strstr(e.msg, "\"h100\" is not one of the configs"), "%s", e.msg);
    gx_config_free(&c);
    cr_assert_eq(load("  devicePlugin: {file: cm-fine.yaml, configs: {ts: ts.yaml}}\n", &c, &e), -1);
    cr_assert_str_eq(e.field, "inventory.devicePlugin");
    gx_config_free(&c);
    cr_assert_eq(load("  devicePlugin: {configs: {all: cm-all.yaml}}\n", &c, &e), -1);
    cr_assert(strstr(e.msg, "cm-all.yaml:2: kind: a ConfigMap of configs goes in inventory.devicePlugin"), "%s", e.msg);
    gx_config_free(&c);
    put("cm-bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\ndata:\n  any: |-\n"
        "    version: v1\n    sharing:\n      timeSlicing:\n        resources:\n        - name: nvidia.com/gpu\n"
        "          replicas: 1\n");
    cr_assert_eq(load("  devicePlugin: cm-bad.yaml\n", &c, &e), -1);
    cr_assert(strstr(e.msg, "cm-bad.yaml:6: data.any: sharing.timeSlicing.resources[0].replicas (line 6 of the entry): "
                     "replicas must be >= 2 (got 1)"), "%s", e.msg);
    gx_config_free(&c);
}
