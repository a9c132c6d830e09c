/* Unit tests for core/share_place: the engine places pods on shared GPUs (MPS replicas,
 * MIG devices, fractional vGPUs), keeps a pod pending with a reason when quota fits but
 * no device does, releases on finish, restores after a restart, and shows holders in
 * its views. The Nodes are descriptions; no GPU is involved. */
#include "test_engine_util.h"

static const char *QUEUES[] = {
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: any}\n",
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n  namespaceSelector: {}\n"
    "  resourceGroups:\n  - coveredResources: [cpu, nvidia.com/gpu, nvidia.com/gpumem, nvidia.com/gpucores, "
    "nvidia.com/mig-1g.10gb, nvidia.com/mig-3g.40gb]\n    flavors:\n    - name: any\n      resources:\n"
    "      - {name: cpu, nominalQuota: \"64\"}\n      - {name: nvidia.com/gpu, nominalQuota: \"16\"}\n"
    "      - {name: nvidia.com/gpumem, nominalQuota: \"400000\"}\n      - {name: nvidia.com/gpucores, nominalQuota: \"800\"}\n"
    "      - {name: nvidia.com/mig-1g.10gb, nominalQuota: \"8\"}\n      - {name: nvidia.com/mig-3g.40gb, nominalQuota: \"8\"}\n",
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q, namespace: a}\nspec: {clusterQueue: cq}\n",
};

static const char *NODE =
    "apiVersion: gpuaas.dev/v1alpha1\nkind: Node\nmetadata: {name: n1}\nspec:\n  cpu: \"64\"\n  memory: 256Gi\n  gpus:\n"
    "  - {model: H100-80GB, memory: 80Gi, uuid: GPU-mps, sharing: {mode: mps, replicas: 2, failRequestsGreaterThanOne: true}}\n"
    "  - model: H100-80GB\n    memory: 80Gi\n    uuid: GPU-mig\n    sharing:\n      mode: mig\n      migDevices:\n"
    "      - {profile: 1g.10gb, uuid: MIG-a, start: 0, size: 1, memory: 9984Mi}\n"
    "      - {profile: 3g.40gb, uuid: MIG-b, start: 4, size: 4, memory: 40448Mi}\n"
    "  - {model: H100-80GB, memory: 80Gi, uuid: GPU-frac, sharing: fractional}\n";

static gx_engine *setup(void)
{
    gx_engine *en = gx_engine_new(NULL);
    for (int i = 0; i < 3; i++) apply_ok(en, QUEUES[i]);
    apply_ok(en, NODE);
    return en;
}

/* A Job asking for `req` (YAML flow map of requests). */
static json_t *rjob(const char *name, const char *req)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: %s\n  namespace: a\n  labels:\n"
             "    kueue.x-k8s.io/queue-name: q\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n"
             "        image: x\n        resources:\n          requests: %s\n", name, req);
    return Y(buf);
}

static json_t *devices_of(gx_engine *en, const char *key)
{
    json_t *w = gx_engine_workload(en, key, 0);
    cr_assert(w);
    json_t *d = json_incref(json_object_get(json_array_get(json_object_get(w, "placement"), 0), "devices"));
    json_decref(w);
    return d;
}

Test(share_engine, replicas_mig_and_vgpus)
{
    gx_engine *en = setup();
    gx_action *acts = NULL;
    submit_ok(en, rjob("m1", "{cpu: \"1\", nvidia.com/gpu: \"1\"}"), 0);
    submit_ok(en, rjob("m2", "{cpu: \"1\", nvidia.com/gpu: \"1\"}"), 1);
    submit_ok(en, rjob("m3", "{cpu: \"1\", nvidia.com/gpu: \"1\"}"), 2);
    submit_ok(en, rjob("g", "{cpu: \"1\", nvidia.com/mig-3g.40gb: \"1\"}"), 3);
    submit_ok(en, rjob("v", "{cpu: \"1\", nvidia.com/gpu: \"1\", nvidia.com/gpumem: \"20480\", nvidia.com/gpucores: \"30\"}"), 4);
    size_t n = pass(en, 10, &acts);
    free(acts);
    /* m1, m2: the two MPS replicas; m3: none left, so the wholly free fractional GPU;
     * g: the 3g.40gb MIG device; v: its vGPU finds the fractional GPU taken whole */
    cr_assert_eq(n, 4);
    json_t *d = devices_of(en, "a/m1");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(d, 0), "uuid")), "GPU-mps");
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(d, 0), "cores")), 50);
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(d, 0), "memoryMiB")), 40960);
    json_decref(d);
    d = devices_of(en, "a/m3");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(d, 0), "uuid")), "GPU-frac");
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(d, 0), "cores")), 100);
    json_decref(d);
    d = devices_of(en, "a/g");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(d, 0), "uuid")), "MIG-b");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(d, 0), "profile")), "3g.40gb");
    json_decref(d);
    cr_assert_str_eq(state_of(en, "a/v"), "Pending");
    json_t *w = gx_engine_workload(en, "a/v", 10);
    char *s = json_dumps(w, 0);
    cr_assert(strstr(s, "no fractional GPU has 20480 MiB and 30% cores free"), "%s", s);
    free(s);
    json_decref(w);
    gx_err e;
    cr_assert_eq(gx_engine_finish(en, "a/m3", 1, "done", 20, &e), 0);
    pass(en, 30, &acts);
    free(acts);
    cr_assert_str_eq(state_of(en, "a/v"), "Admitted");
    d = devices_of(en, "a/v");
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(d, 0), "memoryMiB")), 20480);
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(d, 0), "cores")), 30);
    json_decref(d);
    json_t *nodes = gx_engine_nodes(en);
    json_t *gpus = json_object_get(json_array_get(nodes, 0), "gpus");
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(json_array_get(gpus, 0), "sharing"), "slotsUsed")), 2);
    cr_assert(json_object_get(json_array_get(gpus, 1), "sharing"));
    json_decref(nodes);
    gx_engine_free(en);
}

Test(share_engine, pending_with_a_reason_then_admitted_after_release)
{
    gx_engine *en = setup();
    gx_action *acts = NULL;
    gx_err e;
    submit_ok(en, rjob("g1", "{cpu: \"1\", nvidia.com/mig-3g.40gb: \"1\"}"), 0);
    submit_ok(en, rjob("g2", "{cpu: \"1\", nvidia.com/mig-3g.40gb: \"1\"}"), 1);
    pass(en, 10, &acts);
    free(acts);
    cr_assert_str_eq(state_of(en, "a/g1"), "Admitted");
    cr_assert_str_eq(state_of(en, "a/g2"), "Pending");
    json_t *w = gx_engine_workload(en, "a/g2", 10);
    char *s = json_dumps(w, 0);
    cr_assert(strstr(s, "quota fits but no GPU fits") && strstr(s, "nvidia.com/mig-3g.40gb"), "%s", s);
    free(s);
    json_decref(w);
    /* two MPS replicas per pod: refused by failRequestsGreaterThanOne, with the reason */
    submit_ok(en, rjob("two", "{cpu: \"1\", nvidia.com/gpu: \"2\"}"), 2);
    pass(en, 20, &acts);
    free(acts);
    cr_assert_str_eq(state_of(en, "a/two"), "Pending");
    w = gx_engine_workload(en, "a/two", 20);
    s = json_dumps(w, 0);
    cr_assert(strstr(s, "failRequestsGreaterThanOne: a pod may ask for 1 (asked 2)"), "%s", s);
    free(s);
    json_decref(w);
    cr_assert_eq(gx_engine_finish(en, "a/g1", 1, "done", 30, &e), 0);
    pass(en, 40, &acts);
    free(acts);
    cr_assert_str_eq(state_of(en, "a/g2"), "Admitted");
    gx_engine_free(en);
}

Test(share_engine, restore_takes_the_same_devices)
{
    gx_engine *en = setup();
    gx_action *acts = NULL;
    json_t *job = rjob("v", "{cpu: \"1\", nvidia.com/gpu: \"1\", nvidia.com/gpumem: \"8192\", nvidia.com/gpucores: \"20\"}");
    json_t *copy = json_deep_copy(job);
    submit_ok(en, job, 0);
    pass(en, 10, &acts);
    free(acts);
    json_t *status = gx_engine_workload(en, "a/v", 10);
    gx_engine_free(en);
    en = setup();
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_engine_restore(en, copy, status, &e), 0, "%s", e.msg);
    json_t *nodes = gx_engine_nodes(en);
    json_t *g = json_array_get(json_object_get(json_array_get(nodes, 0), "gpus"), 2);
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(g, "sharing"), "coresAllocated")), 20);
    json_decref(nodes);
    json_decref(copy);
    json_decref(status);
    gx_engine_free(en);
}

Test(share_engine, bad_sharing_objects)
{
    gx_engine *en = gx_engine_new(NULL);
    gx_err e = apply_err(en, "apiVersion: gpuaas.dev/v1alpha1\nkind: Node\nmetadata: {name: x}\nspec:\n  gpus:\n"
                             "  - {model: L4, memory: 22Gi, sharing: {mode: mps}}\n");
    cr_assert(strstr(e.msg, "needs replicas"), "%s", e.msg);
    e = apply_err(en, "apiVersion: gpuaas.dev/v1alpha1\nkind: Node\nmetadata: {name: x}\nspec:\n  gpus:\n"
                      "  - {model: L4, memory: 22Gi, sharing: {mode: bogus}}\n");
    cr_assert(strstr(e.field, "spec.gpus[0].sharing"), "%s", e.field);
    gx_engine_free(en);
}

Test(share_engine, cpu_only_pods_still_place)
{
    gx_engine *en = setup();
    gx_action *acts = NULL;
    submit_ok(en, rjob("cpu", "{cpu: \"2\"}"), 0);
    pass(en, 10, &acts);
    free(acts);
    cr_assert_str_eq(state_of(en, "a/cpu"), "Admitted", "a pod without devices still goes on a (shared) node");
    json_t *w = gx_engine_workload(en, "a/cpu", 10);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(w, "placement"), 0), "node")), "n1");
    json_decref(w);
    gx_engine_free(en);
}
