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

/* Two flavors select nodes by label; the shared-GPU node of flavor "mps" is tainted. The
 * pending reason only looks at the nodes each flavor selects and the pod tolerates. */
Test(share_engine, pending_reason_follows_flavor_node_labels_and_taints)
{
    gx_engine *en = gx_engine_new(NULL);
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: mps}\n"
                 "spec:\n  nodeLabels: {pool: mps}\n");
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n"
                 "  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n"
                 "    - name: mps\n      resources:\n      - {name: cpu, nominalQuota: \"64\"}\n"
                 "      - {name: nvidia.com/gpu, nominalQuota: \"16\"}\n");
    apply_ok(en, QUEUES[2]);
    /* pool mps, tainted: a free MPS GPU the pod may only use with the toleration */
    apply_ok(en, "apiVersion: gpuaas.dev/v1alpha1\nkind: Node\nmetadata:\n  name: tainted\n  labels: {pool: mps}\n"
                 "spec:\n  taints: [{key: dedicated, value: infer, effect: NoSchedule}]\n  gpus:\n"
                 "  - {model: H100-80GB, memory: 80Gi, uuid: GPU-t, sharing: {mode: mps, replicas: 2}}\n");
    /* another pool with free GPUs: the flavor does not select it */
    apply_ok(en, "apiVersion: gpuaas.dev/v1alpha1\nkind: Node\nmetadata:\n  name: other\n  labels: {pool: ts}\n"
                 "spec:\n  gpus:\n  - {model: H100-80GB, memory: 80Gi, uuid: GPU-o, sharing: {mode: timeSlicing, replicas: 4}}\n");
    gx_action *acts = NULL;
    submit_ok(en, rjob("p", "{cpu: \"1\", nvidia.com/gpu: \"1\"}"), 0);
    pass(en, 10, &acts);
    free(acts);
    cr_assert_str_eq(state_of(en, "a/p"), "Pending");
    json_t *w = gx_engine_workload(en, "a/p", 10);
    char *s = json_dumps(w, 0);
    cr_assert(strstr(s, "quota fits but no GPU fits: no node matches flavor mps"), "%s", s);
    cr_assert(strstr(s, "tainted: taint dedicated=infer:NoSchedule not tolerated"), "%s", s);
    cr_assert(strstr(s, "other: no label pool=mps"), "%s", s);
    free(s);
    json_decref(w);

    /* tolerating the taint: the node is used; a second pod then finds its replicas taken */
    const char *tol = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: %s\n  namespace: a\n  labels:\n"
                      "    kueue.x-k8s.io/queue-name: q\nspec:\n  template:\n    spec:\n"
                      "      tolerations: [{key: dedicated, operator: Equal, value: infer, effect: NoSchedule}]\n"
                      "      containers:\n      - name: c\n        image: x\n        resources:\n"
                      "          requests: {cpu: \"1\", nvidia.com/gpu: \"1\"}\n";
    char buf[1024];
    for (int i = 0; i < 3; i++) {
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        snprintf(buf, sizeof buf, tol, name);
        submit_ok(en, Y(buf), 1 + i);
    }
    pass(en, 20, &acts);
    free(acts);
    cr_assert_str_eq(state_of(en, "a/t0"), "Admitted");
    cr_assert_str_eq(state_of(en, "a/t1"), "Admitted");
    cr_assert_str_eq(state_of(en, "a/t2"), "Pending");
    w = gx_engine_workload(en, "a/t2", 20);
    s = json_dumps(w, 0);
    cr_assert(strstr(s, "quota fits but no GPU fits: on the 1 node flavor mps selects and the pod tolerates (tainted)"),
              "%s", s);
    cr_assert(strstr(s, "nvidia.com/gpu"), "%s", s);
    cr_assert_null(strstr(s, "other"), "the node of another pool is not counted: %s", s);
    free(s);
    json_decref(w);
    gx_engine_free(en);
}

/* The daemon's policies learn the workload's vGPU shapes online. Pending jobs (held by a
 * ClusterQueue without quota) all ask waiting_cores % of a GPU; one 40 % pod already
 * sits on GPU A. Where does a second 40 % pod go? With 60 % pods waiting, best-fit
 * stacks it on A (fullest), leaving 20 % that none of them can use; the default policy
 * puts it on B, so A and B each keep 60 %. Returns the second pod's GPU. */
static const char *place_second(const char *policy_line, const char *waiting_cores)
{
    static char uuid[32];
    gx_engine *en = setup();
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: held}\nspec:\n"
             "  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [cpu, nvidia.com/gpu, nvidia.com/gpucores]\n"
             "    flavors:\n    - name: any\n      resources:\n      - {name: cpu, nominalQuota: \"0\"}\n"
             "      - {name: nvidia.com/gpu, nominalQuota: \"0\"}\n      - {name: nvidia.com/gpucores, nominalQuota: \"0\"}\n");
    apply_ok(en, LQ("a", "h", "held"));
    char node[1024];
    snprintf(node, sizeof node, "apiVersion: gpuaas.dev/v1alpha1\nkind: Node\nmetadata: {name: n2}\nspec:\n  cpu: \"64\"\n"
             "  memory: 256Gi\n%s  gpus:\n  - {model: H100-80GB, memory: 80Gi, uuid: GPU-A, sharing: fractional}\n"
             "  - {model: H100-80GB, memory: 80Gi, uuid: GPU-B, sharing: fractional}\n", policy_line);
    apply_ok(en, "apiVersion: gpuaas.dev/v1alpha1\nkind: Node\nmetadata: {name: n1}\nspec: {cpu: \"1\", memory: 1Gi}\n");
    apply_ok(en, node);
    for (int i = 0; i < 6; i++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", i);
        char req[128];
        snprintf(req, sizeof req, "{cpu: \"1\", nvidia.com/gpu: \"1\", nvidia.com/gpucores: \"%s\"}", waiting_cores);
        json_t *j = rjob(name, req);
        json_object_set_new(json_object_get(json_object_get(j, "metadata"), "labels"), "kueue.x-k8s.io/queue-name", json_string("h"));
        submit_ok(en, j, i);
    }
    gx_action *acts = NULL;
    submit_ok(en, rjob("p1", "{cpu: \"1\", nvidia.com/gpu: \"1\", nvidia.com/gpucores: \"40\"}"), 10);
    pass(en, 11, &acts);
    free(acts);
    json_t *d = devices_of(en, "a/p1");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(d, 0), "uuid")), "GPU-A", "the first pod takes the first GPU");
    json_decref(d);
    submit_ok(en, rjob("p2", "{cpu: \"1\", nvidia.com/gpu: \"1\", nvidia.com/gpucores: \"40\"}"), 12);
    pass(en, 13, &acts);
    free(acts);
    cr_assert_str_eq(state_of(en, "a/w0"), "Pending");
    d = devices_of(en, "a/p2");
    snprintf(uuid, sizeof uuid, "%s", json_string_value(json_object_get(json_array_get(d, 0), "uuid")));
    json_decref(d);
    gx_engine_free(en);
    return uuid;
}

Test(share_engine, default_policy_learns_the_workload_online)
{
    cr_assert_str_eq(place_second("  placementPolicy: best-fit\n", "60"), "GPU-A", "best-fit stacks on the fullest GPU");
    cr_assert_str_eq(place_second("", "60"), "GPU-B", "the default keeps room for the 60 %% pods that wait");
    /* the same policy, other waiting shapes: with whole-GPU vGPUs waiting, stacking on A
     * keeps B whole for them; with 60 % pods it would strand 20 % */
    cr_assert_str_eq(place_second("  placementPolicy: fgd\n", "100"), "GPU-A", "fgd: keeps B whole for the 100 %% pods");
    cr_assert_str_eq(place_second("  placementPolicy: fgd\n", "60"), "GPU-B", "fgd: 60 %% pods could not");
}

/* The typed devices (gx_engine_wl_devices) say what the placement view says: the
 * share's cores and memory, the MIG device and its GPU, the replica. */
Test(share_engine, typed_devices_match_the_view)
{
    gx_engine *en = setup();
    gx_action *acts = NULL;
    submit_ok(en, rjob("m1", "{cpu: \"1\", nvidia.com/gpu: \"1\"}"), 0);
    submit_ok(en, rjob("g", "{cpu: \"1\", nvidia.com/mig-3g.40gb: \"1\"}"), 1);
    pass(en, 10, &acts);
    free(acts);
    const char *keys[] = {"a/m1", "a/g"};
    for (int i = 0; i < 2; i++) {
        gx_engine_dev d[4];
        json_t *v = devices_of(en, keys[i]);
        int n = gx_engine_wl_devices(en, keys[i], 0, d, 4);
        cr_assert_eq(n, 1, "%s", keys[i]);
        cr_assert_eq(json_array_size(v), 1);
        json_t *x = json_array_get(v, 0);
        cr_assert_eq(d[0].shared, 1);
        cr_assert_str_eq(d[0].uuid, json_string_value(json_object_get(x, "uuid")));
        cr_assert_str_eq(d[0].mode, json_string_value(json_object_get(x, "mode")));
        cr_assert_eq(d[0].cores, json_integer_value(json_object_get(x, "cores")));
        cr_assert_eq(d[0].mem_mib, json_integer_value(json_object_get(x, "memoryMiB")));
        cr_assert_eq(d[0].index, json_integer_value(json_object_get(x, "index")));
        cr_assert_eq(d[0].replica, json_object_get(x, "replica") ? json_integer_value(json_object_get(x, "replica")) : -1);
        json_decref(v);
    }
    gx_engine_dev d[4];
    gx_engine_wl_devices(en, "a/m1", 0, d, 4);
    cr_assert_str_eq(d[0].uuid, "GPU-mps");
    cr_assert_eq(d[0].cores, 50);
    cr_assert_geq(d[0].replica, 0);
    cr_assert_eq(d[0].mig, -1);
    gx_engine_wl_devices(en, "a/g", 0, d, 4);
    cr_assert_str_eq(d[0].uuid, "MIG-b");
    cr_assert_str_eq(d[0].gpu_uuid, "GPU-mig");
    cr_assert_str_eq(d[0].profile, "3g.40gb");
    cr_assert_eq(d[0].mig, 1);
    /* the GPU list counts shared holders as users of the physical GPU */
    gx_engine_gpu g[3];
    cr_assert_eq(gx_engine_gpus(en, "n1", g, 3), 3);
    cr_assert_str_eq(g[0].user, "a/m1");
    cr_assert_str_eq(g[1].user, "a/g");
    cr_assert_null(g[2].user);
    gx_engine_free(en);
}
