/* Unit tests for gpu/devplugin: NVIDIA device-plugin sharing configs, read unchanged
 * (time-slicing, MPS, renameByDefault, failRequestsGreaterThanOne, devices as indices,
 * MIG indices and UUIDs, rename) and the bad ones (replicas under 2, MPS on a MIG
 * resource, devices that are not devices, rename that is not a resource name) refused
 * with the field named, as the plugin refuses them. */
#include <criterion/criterion.h>
#include <string.h>
#include "gpu/devplugin.h"
#include "lib/yaml.h"

#define UUID_A "GPU-b1028956-cfa2-0990-bf4a-5da9abb51763"
#define UUID_M "MIG-4b7a6a4c-55c6-5f2e-9c4c-0d2b7a4e8f11"

static int parse(const char *y, gx_dp_config *c, gx_err *e)
{
    gx_yaml_docs d;
    gx_err_clear(e);
    cr_assert_eq(gx_yaml_parse(y, strlen(y), &d, e), 0, "%s", e->msg);
    int rc = gx_gpu_dp_parse(d.docs[0], c, e);
    gx_yaml_docs_free(&d);
    return rc;
}

Test(gpu_devplugin, time_slicing_as_the_readme_writes_it)
{
    gx_dp_config c;
    gx_err e;
    cr_assert_eq(parse("version: v1\nflags:\n  migStrategy: none\nsharing:\n  timeSlicing:\n    resources:\n"
                       "    - name: nvidia.com/gpu\n      replicas: 10\n", &c, &e), 0, "%s", e.msg);
    cr_assert_eq(c.strategy, GX_DP_TIMESLICING);
    cr_assert_eq(c.n_res, 1);
    cr_assert_eq(c.res[0].replicas, 10);
    cr_assert_not(c.fail_gt1);
    const gx_dp_resource *r = gx_gpu_dp_for(&c, "nvidia.com/gpu", 3, "GPU-x");
    cr_assert(r);
    char buf[80];
    cr_assert_str_eq(gx_gpu_dp_offered(&c, r, buf, sizeof buf), "nvidia.com/gpu");
    cr_assert_null(gx_gpu_dp_for(&c, "nvidia.com/mig-1g.10gb", 0, "GPU-x"));
}

Test(gpu_devplugin, mps_rename_and_devices)
{
    gx_dp_config c;
    gx_err e;
    cr_assert_eq(parse("version: v1\nsharing:\n  mps:\n    renameByDefault: true\n    resources:\n"
                       "    - name: nvidia.com/gpu\n      replicas: 4\n      devices: [1, " UUID_A "]\n", &c, &e), 0, "%s", e.msg);
    cr_assert_eq(c.strategy, GX_DP_MPS);
    cr_assert(c.fail_gt1, "MPS forces failRequestsGreaterThanOne");
    cr_assert_null(gx_gpu_dp_for(&c, "nvidia.com/gpu", 0, "GPU-zzz"));
    cr_assert(gx_gpu_dp_for(&c, "nvidia.com/gpu", 1, "GPU-zzz"));
    const gx_dp_resource *r = gx_gpu_dp_for(&c, "nvidia.com/gpu", 5, UUID_A);
    cr_assert(r);
    char buf[80];
    cr_assert_str_eq(gx_gpu_dp_offered(&c, r, buf, sizeof buf), "nvidia.com/gpu.shared");
    /* both sections: mps wins, as in the plugin */
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 2}]\n"
                       "  mps:\n    resources: [{name: nvidia.com/gpu, replicas: 3}]\n", &c, &e), 0, "%s", e.msg);
    cr_assert_eq(c.strategy, GX_DP_MPS);
    cr_assert_eq(c.res[0].replicas, 3);
    /* time-slicing of MIG devices is allowed */
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: true\n    resources:\n"
                       "    - {name: nvidia.com/mig-1g.10gb, replicas: 2}\n", &c, &e), 0, "%s", e.msg);
    cr_assert(c.fail_gt1);
    cr_assert(gx_gpu_dp_for(&c, "nvidia.com/mig-1g.10gb", 0, NULL));
}

Test(gpu_devplugin, bad_configs)
{
    gx_dp_config c;
    gx_err e;
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 0}]\n", &c, &e), -1);
    cr_assert_str_eq(e.field, "sharing.timeSlicing.resources[0].replicas");
    cr_assert(strstr(e.msg, "replicas must be >= 2 (got 0)"), "%s", e.msg);
    cr_assert_eq(parse("version: v1\nsharing:\n  mps:\n    resources: [{name: nvidia.com/mig-1g.10gb, replicas: 2}]\n", &c, &e), -1);
    cr_assert(strstr(e.msg, "MPS cannot share a MIG device"), "%s", e.msg);
    cr_assert_eq(parse("version: v1\nsharing:\n  mps:\n    resources: [{name: nvidia.com/gpu, replicas: 49}]\n", &c, &e), -1);
    cr_assert(strstr(e.msg, "at most 48"), "%s", e.msg);
    cr_assert_eq(parse("version: v2\n", &c, &e), -1);
    cr_assert_str_eq(e.field, "version");
    cr_assert_eq(parse("version: v1\nsharing:\n  timeslicing: {}\n", &c, &e), -1);
    cr_assert_str_eq(e.field, "sharing.timeslicing");
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources: [{name: cpu, replicas: 2}]\n", &c, &e), -1);
    cr_assert(strstr(e.msg, "cannot be shared"), "%s", e.msg);
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources: []\n", &c, &e), -1);
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 2, devices: [x, -1]}]\n", &c, &e), -1);
}

/* The plugin refuses replicas: 1 ("must be >= 2"); gpuaas read it as "not shared". */
Test(gpu_devplugin, replicas_one_is_refused_as_upstream)
{
    gx_dp_config c;
    gx_err e;
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 1}]\n", &c, &e), -1);
    cr_assert_str_eq(e.field, "sharing.timeSlicing.resources[0].replicas");
    cr_assert(strstr(e.msg, "replicas must be >= 2 (got 1)"), "%s", e.msg);
    cr_assert_eq(parse("version: v1\nsharing:\n  mps:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 4}\n"
                       "    - {name: nvidia.com/gpu, replicas: 1, devices: [0]}\n", &c, &e), -1);
    cr_assert_str_eq(e.field, "sharing.mps.resources[1].replicas");
}

/* MPS: failRequestsGreaterThanOne is true when not set, and an explicit false is kept
 * (the plugin since PR #1762); gpuaas forced true. Booleans are booleans. */
Test(gpu_devplugin, mps_fail_requests_false_is_false)
{
    gx_dp_config c;
    gx_err e;
    cr_assert_eq(parse("version: v1\nsharing:\n  mps:\n    failRequestsGreaterThanOne: false\n    resources:\n"
                       "    - {name: nvidia.com/gpu, replicas: 4}\n", &c, &e), 0, "%s", e.msg);
    cr_assert_eq(c.strategy, GX_DP_MPS);
    cr_assert_not(c.fail_gt1, "an explicit false is honoured");
    cr_assert_eq(parse("version: v1\nsharing:\n  mps:\n    resources: [{name: nvidia.com/gpu, replicas: 4}]\n", &c, &e), 0);
    cr_assert(c.fail_gt1, "not set: true for MPS");
    cr_assert_eq(parse("version: v1\nsharing:\n  mps:\n    failRequestsGreaterThanOne: \"false\"\n    resources:\n"
                       "    - {name: nvidia.com/gpu, replicas: 4}\n", &c, &e), -1);
    cr_assert_str_eq(e.field, "sharing.mps.failRequestsGreaterThanOne");
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    renameByDefault: yes\n    resources:\n"
                       "    - {name: nvidia.com/gpu, replicas: 4}\n", &c, &e), -1);
    cr_assert_str_eq(e.field, "sharing.timeSlicing.renameByDefault");
    cr_assert(strstr(e.msg, "true or false"), "%s", e.msg);
}

/* devices: entries are GPU indices, MIG indices or UUIDs; anything else is refused
 * naming the entry (gpuaas accepted it and matched nothing). */
Test(gpu_devplugin, devices_entries_are_checked)
{
    gx_dp_config c;
    gx_err e;
    static const char *const bad[] = {"x", "GPU-abc", "-1", "0:", ":1", "0:1:2", "MIG-GPU-" "b1028956-cfa2-0990-bf4a-5da9abb51763/x/0",
                                      "gpu-b1028956-cfa2-0990-bf4a-5da9abb51763", "GPU-b1028956-cfa2-0990-bf4a-5da9abb5176g", NULL};
    for (int i = 0; bad[i]; i++) {
        char y[512];
        snprintf(y, sizeof y, "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                 "    - {name: nvidia.com/gpu, replicas: 2, devices: [0, \"%s\"]}\n", bad[i]);
        cr_assert_eq(parse(y, &c, &e), -1, "%s accepted", bad[i]);
        cr_assert_str_eq(e.field, "sharing.timeSlicing.resources[0].devices[1]", "%s: %s", bad[i], e.field);
        cr_assert(strstr(e.msg, bad[i]) && strstr(e.msg, "is not a device"), "%s", e.msg);
    }
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                       "    - {name: nvidia.com/gpu, replicas: 2, devices: some}\n", &c, &e), -1);
    cr_assert_str_eq(e.field, "sharing.timeSlicing.resources[0].devices");
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                       "    - {name: nvidia.com/gpu, replicas: 2, devices: 0}\n", &c, &e), -1);
    cr_assert(strstr(e.msg, "from 1"), "%s", e.msg);
    /* what the plugin accepts: all, a count, indices as numbers or strings, UUIDs of both forms */
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                       "    - {name: nvidia.com/gpu, replicas: 2, devices: [0, \"2\", " UUID_A ", " UUID_M ", "
                       "\"MIG-" UUID_A "/3/0\", \"1:0\"]}\n", &c, &e), 0, "%s", e.msg);
    cr_assert_eq(c.res[0].n_devs, 6);
    cr_assert(gx_gpu_dp_for(&c, "nvidia.com/gpu", 2, "GPU-other"), "\"2\" is GPU 2");
    cr_assert_null(gx_gpu_dp_for(&c, "nvidia.com/gpu", 1, "GPU-other"), "1:0 is a MIG device, not GPU 1");
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                       "    - {name: nvidia.com/gpu, replicas: 2, devices: 2}\n", &c, &e), 0, "%s", e.msg);
    cr_assert(gx_gpu_dp_for(&c, "nvidia.com/gpu", 1, NULL));
    cr_assert_null(gx_gpu_dp_for(&c, "nvidia.com/gpu", 2, NULL), "a count is the first N GPUs");
}

/* MIG indices ("0:1") select that MIG device only (gpuaas ignored them); a MIG UUID selects
 * that MIG device; a GPU index still selects every MIG device of the GPU. */
Test(gpu_devplugin, mig_indices_are_honoured)
{
    gx_dp_config c;
    gx_err e;
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                       "    - {name: nvidia.com/mig-1g.10gb, replicas: 3, devices: [\"0:1\", " UUID_M "]}\n", &c, &e), 0,
                 "%s", e.msg);
    const char *res = "nvidia.com/mig-1g.10gb";
    cr_assert(gx_gpu_dp_for_mig(&c, res, 0, UUID_A, 1, "MIG-x"), "0:1");
    cr_assert_null(gx_gpu_dp_for_mig(&c, res, 0, UUID_A, 0, "MIG-x"), "0:0 is not listed");
    cr_assert_null(gx_gpu_dp_for_mig(&c, res, 1, UUID_A, 1, "MIG-x"), "1:1 is not listed");
    cr_assert(gx_gpu_dp_for_mig(&c, res, 3, "GPU-y", 2, UUID_M), "by the MIG device's UUID");
    cr_assert_null(gx_gpu_dp_for(&c, res, 0, UUID_A), "a MIG index never names a whole GPU");
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                       "    - {name: nvidia.com/mig-1g.10gb, replicas: 3, devices: [1]}\n", &c, &e), 0, "%s", e.msg);
    cr_assert(gx_gpu_dp_for_mig(&c, res, 1, UUID_A, 4, "MIG-x"));
    cr_assert_null(gx_gpu_dp_for_mig(&c, res, 0, UUID_A, 4, "MIG-x"));
}

/* rename is a resource name as the plugin checks it: nvidia.com/<DNS-1123 subdomain>, 63
 * characters in all; a bare name gets the nvidia.com/ prefix, as in the plugin. */
Test(gpu_devplugin, rename_is_a_resource_name)
{
    gx_dp_config c;
    gx_err e;
    char buf[80];
    static const char *const bad[] = {"nvidia.com/GPU_Shared", "example.com/gpu", "nvidia.com/-gpu", "nvidia.com/",
                                      "nvidia.com/a/b", "nvidia.com/gpu.", "Shared GPU",
                                      "nvidia.com/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", NULL};
    for (int i = 0; bad[i]; i++) {
        char y[512];
        snprintf(y, sizeof y, "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                 "    - {name: nvidia.com/gpu, replicas: 2, rename: \"%s\"}\n", bad[i]);
        cr_assert_eq(parse(y, &c, &e), -1, "%s accepted", bad[i]);
        cr_assert_str_eq(e.field, "sharing.timeSlicing.resources[0].rename", "%s: %s", bad[i], e.field);
    }
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                       "    - {name: gpu, replicas: 2, rename: gpu-shared}\n", &c, &e), 0, "%s", e.msg);
    cr_assert_str_eq(c.res[0].name, "nvidia.com/gpu");
    cr_assert_str_eq(gx_gpu_dp_offered(&c, &c.res[0], buf, sizeof buf), "nvidia.com/gpu-shared");
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                       "    - {name: nvidia.com/gpu, replicas: 2, rename: nvidia.com/gpu.small}\n", &c, &e), 0, "%s", e.msg);
    cr_assert_str_eq(gx_gpu_dp_offered(&c, &c.res[0], buf, sizeof buf), "nvidia.com/gpu.small");
}

/* The GPU Operator's ConfigMaps, as its time-slicing docs write them. */
#define CM_ALL "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: time-slicing-config-all\ndata:\n  any: |-\n" \
    "    version: v1\n    flags:\n      migStrategy: none\n    sharing:\n      timeSlicing:\n        resources:\n" \
    "        - name: nvidia.com/gpu\n          replicas: 4\n"
#define CM_FINE "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: time-slicing-config-fine\n  namespace: gpu-operator\n" \
    "data:\n  a100-40gb: |-\n    version: v1\n    flags:\n      migStrategy: mixed\n    sharing:\n      timeSlicing:\n" \
    "        resources:\n        - name: nvidia.com/gpu\n          replicas: 8\n        - name: nvidia.com/mig-1g.5gb\n" \
    "          replicas: 2\n        - name: nvidia.com/mig-2g.10gb\n          replicas: 2\n" \
    "  tesla-t4: |-\n    version: v1\n    flags:\n      migStrategy: none\n    sharing:\n      timeSlicing:\n" \
    "        resources:\n        - name: nvidia.com/gpu\n          replicas: 4\n"

static json_t *configs(const char *y, char *def, gx_err *e)
{
    gx_yaml_docs d;
    gx_err_clear(e);
    cr_assert_eq(gx_yaml_parse(y, strlen(y), &d, e), 0, "%s", e->msg);
    json_t *all = gx_gpu_dp_configs(d.docs[0], def, 64, e);
    gx_yaml_docs_free(&d);
    return all;
}

Test(gpu_devplugin, gpu_operator_configmap_is_read_as_is)
{
    gx_err e;
    char def[64];
    gx_dp_config c;
    json_t *all = configs(CM_ALL, def, &e);
    cr_assert(all, "%s: %s", e.field, e.msg);
    cr_assert_eq(json_object_size(all), 1);
    cr_assert_str_eq(def, "any", "the only entry is the default");
    cr_assert_eq(gx_gpu_dp_parse(json_object_get(all, "any"), &c, &e), 0, "%s", e.msg);
    cr_assert_eq(c.strategy, GX_DP_TIMESLICING);
    cr_assert_eq(c.res[0].replicas, 4);
    json_decref(all);

    all = configs(CM_FINE, def, &e);
    cr_assert(all, "%s: %s", e.field, e.msg);
    cr_assert_eq(json_object_size(all), 2);
    cr_assert_str_eq(def, "", "two entries, none named default: no default");
    cr_assert_eq(gx_gpu_dp_parse(json_object_get(all, "a100-40gb"), &c, &e), 0, "%s", e.msg);
    cr_assert_eq(c.n_res, 3);
    cr_assert_str_eq(c.mig_strategy, "mixed");
    json_decref(all);

    /* an entry named default is the default, as the plugin's config manager falls back */
    all = configs("apiVersion: v1\nkind: ConfigMap\ndata:\n  default: 'version: v1'\n"
                  "  mps-4: |\n    version: v1\n    sharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}\n",
                  def, &e);
    cr_assert(all, "%s: %s", e.field, e.msg);
    cr_assert_str_eq(def, "default");
    json_decref(all);

    /* a plain config is one entry named default, as before */
    all = configs("version: v1\nsharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 2}]\n", def, &e);
    cr_assert(all && json_object_get(all, "default"));
    cr_assert_str_eq(def, "default");
    json_decref(all);
}

Test(gpu_devplugin, bad_configmaps_name_the_entry)
{
    gx_err e;
    char def[64];
    cr_assert_null(configs("apiVersion: v1\nkind: ConfigMap\ndata:\n  any: |-\n    version: v1\n    sharing:\n"
                           "      timeSlicing:\n        resources:\n        - {name: nvidia.com/gpu, replicas: 1}\n", def, &e));
    cr_assert_str_eq(e.field, "data.any");
    cr_assert(strstr(e.msg, "sharing.timeSlicing.resources[0].replicas (line 5 of the entry): replicas must be >= 2"),
              "%s", e.msg);
    cr_assert_null(configs("apiVersion: v1\nkind: ConfigMap\ndata: {}\n", def, &e));
    cr_assert_str_eq(e.field, "data");
    cr_assert_null(configs("apiVersion: v1\nkind: ConfigMap\ndata:\n  any: {version: v1}\n", def, &e));
    cr_assert_str_eq(e.field, "data.any");
    cr_assert(strstr(e.msg, "as text"), "%s", e.msg);
    cr_assert_null(configs("apiVersion: v1\nkind: ConfigMap\ndata:\n  a b: 'version: v1'\n", def, &e));
    cr_assert_str_eq(e.field, "data.a b");
    cr_assert_null(configs("apiVersion: v2\nkind: ConfigMap\ndata:\n  any: 'version: v1'\n", def, &e));
    cr_assert_str_eq(e.field, "apiVersion");
    cr_assert_null(configs("apiVersion: v1\nkind: ConfigMap\ndata:\n  any: 'version: v1'\nspec: {}\n", def, &e));
    cr_assert_str_eq(e.field, "spec");
    cr_assert_null(configs("apiVersion: v1\nkind: ConfigMap\ndata:\n  any: \"version: v1\\n---\\nversion: v1\\n\"\n", def, &e));
    cr_assert(strstr(e.msg, "one device-plugin config"), "%s", e.msg);
    cr_assert_null(configs("apiVersion: v1\nkind: ConfigMap\ndata:\n  any: \"a: [\"\n", def, &e));
    cr_assert_str_eq(e.field, "data.any");
    cr_assert(strstr(e.msg, "of the entry"), "%s", e.msg);
}

/* Time-slicing has no cap in the plugin; gpuaas capped it at 64. Now up to 1024
 * (GX_DP_MAX_REPLICAS, docs/gpu-sharing.md), refused above with the field named. */
Test(gpu_devplugin, time_slicing_past_64_replicas)
{
    gx_dp_config c;
    gx_err e;
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 300}]\n", &c, &e), 0,
                 "%s", e.msg);
    cr_assert_eq(c.res[0].replicas, 300);
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 1024}]\n", &c, &e), 0,
                 "%s", e.msg);
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 1025}]\n", &c, &e), -1);
    cr_assert_str_eq(e.field, "sharing.timeSlicing.resources[0].replicas");
    cr_assert(strstr(e.msg, "time-slicing allows at most 1024 replicas per device (got 1025)"), "%s", e.msg);
}
