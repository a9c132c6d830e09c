/* Unit tests for gpu/inventory: simulated Nodes with every sharing mode resolved from
 * NVIDIA's device-plugin and mig-parted files, the resolved Node manifests fed back
 * through core/share, NVML through the fake libnvidia-ml.so.1 (no GPU here), the
 * fall-back to the simulated node, MIG re-layout and samples. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "core/share_json.h"
#include "gpu/inventory.h"
#include "lib/yaml.h"

static json_t *Y(const char *y)
{
    gx_yaml_docs d;
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_yaml_parse(y, strlen(y), &d, &e), 0, "%s", e.msg);
    json_t *j = json_incref(d.docs[0]);
    gx_yaml_docs_free(&d);
    return j;
}

static const char *NODE =
    "apiVersion: gpuaas.dev/v1alpha1\nkind: Node\nmetadata:\n  name: n1\n  labels:\n"
    "    nvidia.com/device-plugin.config: ts\n    nvidia.com/mig.config: mixed\n"
    "spec:\n  gpus:\n  - {model: H100-80GB, memory: 80Gi}\n  - {model: H100-80GB, memory: 80Gi}\n"
    "  - {model: H100-80GB, memory: 80Gi}\n  - {model: H100-80GB, memory: 80Gi, sharing: fractional}\n";
static const char *PARTED =
    "version: v1\nmig-configs:\n  mixed:\n  - devices: [1]\n    mig-enabled: true\n"
    "    mig-devices: {\"1g.10gb\": 2, \"2g.20gb\": 1, \"3g.40gb\": 1}\n"
    "  all-1g.10gb:\n  - devices: all\n    mig-enabled: true\n    mig-devices: {\"1g.10gb\": 7}\n"
    "  too-big:\n  - devices: [1]\n    mig-enabled: true\n    mig-devices: {\"4g.40gb\": 1, \"3g.40gb\": 1, \"1g.10gb\": 1}\n";
static const char *TS =
    "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 4, devices: [0]}\n"
    "    - {name: nvidia.com/mig-1g.10gb, replicas: 2}\n";

typedef struct fixture { json_t *nodes, *dp, *mig; gx_gpu_config cfg; } fixture;

static void setup_cfg(fixture *f, const char *node, const char *ts)
{
    f->nodes = json_array();
    json_array_append_new(f->nodes, Y(node));
    f->dp = json_object();
    json_object_set_new(f->dp, "ts", Y(ts));
    f->mig = Y(PARTED);
    f->cfg = (gx_gpu_config){"simulated", NULL, f->nodes, f->dp, "", f->mig, ""};
}

static void teardown_cfg(fixture *f)
{
    json_decref(f->nodes);
    json_decref(f->dp);
    json_decref(f->mig);
}

Test(gpu_inventory, every_mode_on_one_simulated_node)
{
    fixture f;
    setup_cfg(&f, NODE, TS);
    gx_err e;
    gx_err_clear(&e);
    gx_gpu_inv *inv = gx_gpu_inventory_open(&f.cfg, &e);
    cr_assert(inv, "%s", e.msg);
    cr_assert_str_eq(inv->source, "simulated");
    cr_assert_eq(inv->n_devs, 4);
    cr_assert_eq(inv->devs[0].mode, GX_SHARE_TIMESLICING);
    cr_assert_eq(inv->devs[0].replicas, 4);
    cr_assert_eq(inv->devs[1].mode, GX_SHARE_MIG);
    cr_assert_eq(inv->devs[1].n_mig, 4);
    cr_assert_eq(inv->devs[2].mode, GX_SHARE_EXCLUSIVE);
    cr_assert_eq(inv->devs[3].mode, GX_SHARE_FRACTIONAL);
    json_t *nodes = gx_gpu_inventory_nodes(inv);
    json_t *gpus = json_object_get(json_object_get(json_array_get(nodes, 0), "spec"), "gpus");
    cr_assert_eq(json_array_size(gpus), 4);
    json_t *labels = json_object_get(json_object_get(json_array_get(nodes, 0), "metadata"), "labels");
    cr_assert_str_eq(json_string_value(json_object_get(labels, "nvidia.com/gpu.sharing-strategy")), "time-slicing");
    cr_assert_str_eq(json_string_value(json_object_get(labels, "nvidia.com/gpu.replicas")), "4");
    cr_assert_str_eq(json_string_value(json_object_get(labels, "nvidia.com/gpu.product")), "H100-80GB-SHARED");
    cr_assert_str_eq(json_string_value(json_object_get(labels, "nvidia.com/mig.strategy")), "mixed");
    cr_assert_str_eq(json_string_value(json_object_get(labels, "nvidia.com/device-plugin.config")), "ts");
    /* the resolved form goes through core/share as the engine will read it */
    gx_share_node *sn = calloc(1, sizeof *sn);
    for (size_t i = 0; i < 4; i++) {
        const json_t *g = json_array_get(gpus, i);
        cr_assert_eq(gx_share_gpu_from_json(json_object_get(g, "sharing"), json_string_value(json_object_get(g, "uuid")),
                                            81920, &sn->gpu[i], "x", &e), 0, "%s", e.msg);
    }
    sn->n_gpus = 4;
    gx_share_node_reset(sn);
    cr_assert_eq(gx_share_offered(sn, "nvidia.com/mig-1g.10gb", NULL), 4, "2 MIG devices x 2 replicas");
    cr_assert_eq(gx_share_offered(sn, "nvidia.com/mig-3g.40gb", NULL), 1);
    cr_assert_eq(gx_share_offered(sn, "nvidia.com/gpu", NULL), 6, "4 replicas + 1 exclusive + 1 fractional");
    cr_assert(!strncmp(sn->gpu[1].mig[0].uuid, "MIG-", 4));
    cr_assert_eq(sn->gpu[1].mig[3].mem_mib, 40448);
    free(sn);
    /* the same UUIDs every time (a restart finds its devices again) */
    gx_gpu_inv *again = gx_gpu_inventory_open(&f.cfg, &e);
    cr_assert_str_eq(again->devs[1].mig[2].uuid, inv->devs[1].mig[2].uuid);
    cr_assert_str_eq(again->devs[3].uuid, inv->devs[3].uuid);
    gx_gpu_inventory_free(again);
    json_decref(nodes);
    gx_gpu_inventory_free(inv);
    teardown_cfg(&f);
}

Test(gpu_inventory, unshared_nodes_pass_unchanged)
{
    fixture f;
    setup_cfg(&f, "apiVersion: gpuaas.dev/v1alpha1\nkind: Node\nmetadata: {name: plain}\nspec:\n  gpus: {model: H100-80GB, count: 2}\n", TS);
    gx_err e;
    gx_gpu_inv *inv = gx_gpu_inventory_open(&f.cfg, &e);
    cr_assert(inv, "%s", e.msg);
    json_t *nodes = gx_gpu_inventory_nodes(inv);
    cr_assert(json_equal(json_array_get(nodes, 0), json_array_get(f.nodes, 0)));
    json_decref(nodes);
    gx_gpu_inventory_free(inv);
    teardown_cfg(&f);
}

static void open_fails(const char *node, const char *ts, const char *want)
{
    fixture f;
    setup_cfg(&f, node, ts);
    gx_err e;
    gx_err_clear(&e);
    gx_gpu_inv *inv = gx_gpu_inventory_open(&f.cfg, &e);
    cr_assert_null(inv, "should fail with %s", want);
    cr_assert(strstr(e.msg, want), "'%s' does not say '%s'", e.msg, want);
    teardown_cfg(&f);
}

Test(gpu_inventory, bad_configs_say_why)
{
    open_fails("kind: Node\nmetadata:\n  name: l4\n  labels: {nvidia.com/mig.config: all-1g.10gb}\nspec:\n  gpus: [{model: L4}]\n",
               TS, "L4 has no MIG");
    open_fails("kind: Node\nmetadata:\n  name: x\n  labels: {nvidia.com/device-plugin.config: nope}\nspec:\n  gpus: [{model: L4}]\n",
               TS, "\"nope\"");
    open_fails("kind: Node\nmetadata:\n  name: x\n  labels: {nvidia.com/device-plugin.config: ts}\nspec:\n"
               "  gpus: [{model: L4, sharing: fractional}]\n", TS, "fractional in the Node file and time-slicing");
    open_fails("kind: Node\nmetadata:\n  name: x\n  labels: {nvidia.com/device-plugin.config: ts}\nspec:\n  gpus: [{model: L4}]\n",
               "version: v1\nsharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 0}]\n", "must be >= 2");
    open_fails("kind: Node\nmetadata:\n  name: x\n  labels: {nvidia.com/mig.config: too-big}\nspec:\n  gpus: [{model: H100-80GB}, {model: H100-80GB}]\n",
               TS, "8 compute slices");
    open_fails("kind: Node\nmetadata: {name: x}\nspec:\n  gpus: [{model: L4, sharing: mps}]\n", TS, "not a mode on its own");
}

Test(gpu_inventory, nvml_through_the_fake_library)
{
    /* no GPU here: the fake libnvidia-ml.so.1 built by the Makefile plays one */
    setenv("FAKE_NVML_GPUS", "A100-40GB,H100-80GB", 1);
    setenv("FAKE_NVML_MIG", "0=3g.20gb+2g.10gb+1g.5gb", 1);
    fixture f;
    setup_cfg(&f, "kind: Node\nmetadata:\n  name: box\n  labels: {nvidia.com/device-plugin.config: ts}\nspec: {cpu: \"8\"}\n", TS);
    f.cfg.source = "nvml";
    f.cfg.nvml_library = "build/fakes/nvml/libnvidia-ml.so.1";
    gx_err e;
    gx_err_clear(&e);
    gx_gpu_inv *inv = gx_gpu_inventory_open(&f.cfg, &e);
    cr_assert(inv, "%s", e.msg);
    cr_assert_str_eq(inv->source, "nvml");
    cr_assert_eq(inv->n_devs, 2);
    cr_assert_str_eq(inv->devs[0].model, "A100-40GB");
    cr_assert_eq(inv->devs[0].mode, GX_SHARE_MIG, "the layout the GPU has is read");
    cr_assert_eq(inv->devs[0].n_mig, 3);
    cr_assert_eq(inv->devs[1].mode, GX_SHARE_EXCLUSIVE, "devices: [0] of the time-slicing config is the MIG GPU");
    json_t *nodes = gx_gpu_inventory_nodes(inv);
    const json_t *n0 = json_array_get(nodes, 0);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(n0, "metadata"), "name")), "box");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(n0, "spec"), "cpu")), "8");
    json_decref(nodes);
    /* re-layout through NVML */
    json_t *changed = NULL;
    cr_assert_eq(gx_gpu_inventory_mig_apply(inv, "box", "all-1g.10gb", NULL, &changed, &e), -1,
                 "H100 takes 1g.10gb x7 but an A100-40GB has no 1g.10gb x7");
    cr_assert(strstr(e.msg, "at most 4"), "%s", e.msg);
    cr_assert_eq(inv->devs[0].n_mig, 3, "nothing changed");
    gx_gpu_inventory_free(inv);
    /* NVML that cannot be used: the simulated node stands in, and says why */
    f.cfg.nvml_library = "build/fakes/missing/libnvidia-ml.so.1";
    f.cfg.source = "auto";
    inv = gx_gpu_inventory_open(&f.cfg, &e);
    cr_assert(inv, "%s", e.msg);
    cr_assert_str_eq(inv->source, "simulated");
    cr_assert(strstr(inv->note, "NVML not used (cannot load"), "%s", inv->note);
    gx_gpu_inventory_free(inv);
    teardown_cfg(&f);
}

Test(gpu_inventory, simulated_mig_apply_and_samples)
{
    fixture f;
    setup_cfg(&f, NODE, TS);
    gx_err e;
    gx_gpu_inv *inv = gx_gpu_inventory_open(&f.cfg, &e);
    cr_assert(inv);
    json_t *changed = NULL;
    cr_assert_eq(gx_gpu_inventory_mig_apply(inv, "n1", "too-big", NULL, &changed, &e), -1);
    cr_assert_eq(inv->devs[1].n_mig, 4);
    cr_assert_eq(gx_gpu_inventory_mig_apply(inv, "nope", "mixed", NULL, &changed, &e), -1);
    cr_assert_eq(e.status, 404);
    /* all-1g.10gb applies to every GPU, including the fractional one: refused */
    cr_assert_eq(gx_gpu_inventory_mig_apply(inv, "n1", "all-1g.10gb", NULL, &changed, &e), -1);
    cr_assert(strstr(e.msg, "MIG mode and cannot also be fractional"), "%s", e.msg);
    cr_assert_eq(inv->devs[0].mode, GX_SHARE_TIMESLICING, "a refused layout changes nothing");
    cr_assert_str_eq(inv->nodes[0].mig_config, "mixed");
    json_t *engine = Y("- name: n1\n  gpus:\n  - {uuid: X}\n");
    json_object_set_new(json_array_get(json_object_get(json_array_get(engine, 0), "gpus"), 0), "uuid",
                        json_string(inv->devs[3].uuid));
    json_object_set_new(json_array_get(json_object_get(json_array_get(engine, 0), "gpus"), 0), "sharing",
                        json_pack("{s:i,s:i}", "coresAllocated", 30, "memoryAllocatedMiB", 4096));
    gx_gpu_inventory_sample(inv, 1000, engine);
    gx_gpu_inventory_sample(inv, 2000, engine);
    cr_assert_eq(inv->devs[3].util, 30);
    cr_assert_eq(inv->devs[3].mem_used_mib, 4096);
    cr_assert_eq(inv->devs[3].hist_n, 2);
    cr_assert_eq(inv->devs[0].util, 0);
    json_decref(engine);
    gx_gpu_inventory_free(inv);
    teardown_cfg(&f);
}

/* A node whose GPUs 0 and 1 are MIG by mig-parted config `mig`, with flags.migStrategy. */
static gx_gpu_inv *mig_strategy_inv(const char *strategy, const char *mig, gx_err *e)
{
    char node[512], dp[256];
    snprintf(node, sizeof node, "apiVersion: gpuaas.dev/v1alpha1\nkind: Node\nmetadata:\n  name: n1\n  labels:\n"
             "    nvidia.com/device-plugin.config: ms\n    nvidia.com/mig.config: %s\n"
             "spec:\n  gpus:\n  - {model: H100-80GB, memory: 80Gi}\n  - {model: H100-80GB, memory: 80Gi}\n"
             "  - {model: H100-80GB, memory: 80Gi}\n", mig);
    snprintf(dp, sizeof dp, "version: v1\nflags: {migStrategy: %s}\n", strategy);
    json_t *nodes = json_array(), *dps = json_object(), *parted;
    json_array_append_new(nodes, Y(node));
    json_object_set_new(dps, "ms", Y(dp));
    parted = Y("version: v1\nmig-configs:\n"
               "  two-3g:\n  - devices: [0, 1]\n    mig-enabled: true\n    mig-devices: {\"3g.40gb\": 2}\n"
               "  mixed01:\n  - devices: [0, 1]\n    mig-enabled: true\n    mig-devices: {\"3g.40gb\": 1, \"1g.10gb\": 2}\n"
               "  differ:\n  - devices: [0]\n    mig-enabled: true\n    mig-devices: {\"3g.40gb\": 2}\n"
               "  - devices: [1]\n    mig-enabled: true\n    mig-devices: {\"1g.10gb\": 7}\n");
    gx_gpu_config cfg = {"simulated", NULL, nodes, dps, "", parted, ""};
    gx_err_clear(e);
    gx_gpu_inv *inv = gx_gpu_inventory_open(&cfg, e);
    json_decref(nodes);
    json_decref(dps);
    json_decref(parted);
    return inv;
}

/* The engine's view of the resolved node: devices offered under `res`. */
static int offered(gx_gpu_inv *inv, const char *res)
{
    json_t *nodes = gx_gpu_inventory_nodes(inv);
    json_t *gpus = json_object_get(json_object_get(json_array_get(nodes, 0), "spec"), "gpus");
    gx_share_node *n = calloc(1, sizeof *n);
    size_t i;
    json_t *g;
    gx_err e;
    json_array_foreach(gpus, i, g) {
        gx_err_clear(&e);
        cr_assert_eq(gx_share_gpu_from_json(json_object_get(g, "sharing"), json_string_value(json_object_get(g, "uuid")),
                                            81920, &n->gpu[n->n_gpus++], "sharing", &e), 0, "%s", e.msg);
    }
    gx_share_node_reset(n);
    int c = gx_share_offered(n, res, NULL);
    free(n);
    json_decref(nodes);
    return c;
}

Test(gpu_inventory, mig_strategy_single_offers_mig_devices_as_gpus)
{
    gx_err e;
    gx_gpu_inv *inv = mig_strategy_inv("single", "two-3g", &e);
    cr_assert(inv, "%s", e.msg);
    cr_assert_str_eq(inv->devs[0].mig[0].resource, "nvidia.com/gpu");
    cr_assert_eq(offered(inv, "nvidia.com/gpu"), 5, "4 MIG devices and the whole GPU 2");
    cr_assert_eq(offered(inv, "nvidia.com/mig-3g.40gb"), 0);
    json_t *nodes = gx_gpu_inventory_nodes(inv);
    json_t *labels = json_object_get(json_object_get(json_array_get(nodes, 0), "metadata"), "labels");
    cr_assert_str_eq(json_string_value(json_object_get(labels, "nvidia.com/mig.strategy")), "single");
    json_decref(nodes);
    gx_gpu_inventory_free(inv);
}

Test(gpu_inventory, mig_strategy_single_refuses_mixed_layouts_naming_the_gpu)
{
    gx_err e;
    cr_assert_null(mig_strategy_inv("single", "mixed01", &e));
    cr_assert(strstr(e.msg, "single needs one MIG profile per GPU: GPU 0"), "%s", e.msg);
    cr_assert(strstr(e.msg, "has 3g.40gb and 1g.10gb"), "%s", e.msg);
    cr_assert_str_eq(e.field, "flags.migStrategy");
    cr_assert_null(mig_strategy_inv("single", "differ", &e));
    cr_assert(strstr(e.msg, "same MIG profile on every MIG GPU of the node: GPU 1"), "%s", e.msg);
    cr_assert(strstr(e.msg, "has 1g.10gb, GPU 0 has 3g.40gb"), "%s", e.msg);
}

Test(gpu_inventory, mig_strategy_mixed_and_none)
{
    gx_err e;
    gx_gpu_inv *inv = mig_strategy_inv("mixed", "mixed01", &e);
    cr_assert(inv, "%s", e.msg);
    cr_assert_eq(offered(inv, "nvidia.com/mig-1g.10gb"), 4);
    cr_assert_eq(offered(inv, "nvidia.com/mig-3g.40gb"), 2);
    cr_assert_eq(offered(inv, "nvidia.com/gpu"), 1, "only the whole GPU 2");
    gx_gpu_inventory_free(inv);
    inv = mig_strategy_inv("none", "mixed01", &e);
    cr_assert(inv, "%s", e.msg);
    cr_assert_eq(inv->devs[0].n_mig, 3, "the MIG devices are still known (gpuaas gpus shows them)");
    cr_assert_eq(offered(inv, "nvidia.com/mig-1g.10gb"), 0, "none: MIG devices are not offered");
    cr_assert_eq(offered(inv, "nvidia.com/mig-3g.40gb"), 0);
    cr_assert_eq(offered(inv, "nvidia.com/gpu"), 1);
    gx_gpu_inventory_free(inv);
}

/* A MIG index ("1:M") in devices replicates MIG device M of GPU 1 only (it was ignored:
 * no MIG device was replicated); the other 1g.10gb device of that GPU stays whole. */
Test(gpu_inventory, mig_index_selects_one_mig_device)
{
    fixture f;
    setup_cfg(&f, NODE, TS);
    gx_err e;
    gx_gpu_inv *inv = gx_gpu_inventory_open(&f.cfg, &e);
    cr_assert(inv, "%s", e.msg);
    int small[2], ns = 0;
    for (int m = 0; m < inv->devs[1].n_mig && ns < 2; m++)
        if (!strcmp(inv->devs[1].mig[m].profile, "1g.10gb")) small[ns++] = m;
    cr_assert_eq(ns, 2);
    gx_gpu_inventory_free(inv);
    teardown_cfg(&f);
    char ts[512];
    snprintf(ts, sizeof ts, "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
             "    - {name: nvidia.com/mig-1g.10gb, replicas: 3, devices: [\"1:%d\"]}\n", small[1]);
    setup_cfg(&f, NODE, ts);
    inv = gx_gpu_inventory_open(&f.cfg, &e);
    cr_assert(inv, "%s", e.msg);
    cr_assert_eq(inv->devs[1].mig[small[1]].replicas, 3, "1:%d is replicated", small[1]);
    cr_assert_eq(inv->devs[1].mig[small[0]].replicas, 1, "1:%d is not listed", small[0]);
    gx_gpu_inventory_free(inv);
    teardown_cfg(&f);
}
