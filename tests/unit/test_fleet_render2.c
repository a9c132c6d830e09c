/* Unit tests for fleet/render_gpu, render_model and render_job (fleet.h): the GPU
 * Operator pieces (time-slicing renamed, MPS, MIG), the KServe InferenceService of a
 * workload Model, and the Job a request becomes on a cluster (resource names of its
 * sharing mode, refusals naming the field, managedBy only for a MultiKueue manager,
 * ttlSecondsAfterFinished dropped, the same output twice). Clusters are built here
 * directly, not through the Fleet parser. With GPUAAS_RENDER_OUT set, the rendered
 * objects are also written there as YAML files for tests/integration/fleet_models.sh to
 * validate with the @kubernetes-models packages. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fleet/fleet.h"
#include "lib/yaml.h"

static json_t *Y(const char *y)
{
    gx_yaml_docs d;
    gx_err e;
    cr_assert_eq(gx_yaml_parse(y, strlen(y), &d, &e), 0, "%s", e.msg);
    json_t *v = json_incref(d.docs[0]);
    gx_yaml_docs_free(&d);
    return v;
}

static char *NS[] = {"team-a", "team-b"};

/* gpu-a: H100s time-sliced 4 ways, offered as nvidia.com/gpu.shared */
static gx_fleet_node A_NODES[] = {{"node-2", "ts", NULL}, {"node-1", "ts", NULL}, {"node-3", NULL, NULL}};
static gx_fleet_cluster cluster_a(void)
{
    gx_fleet_cluster c = {.name = "gpu-a", .namespaces = NS, .nnamespaces = 2, .nodes = A_NODES, .nnodes = 3};
    c.device_plugin = Y("ts:\n  version: v1\n  sharing:\n    timeSlicing:\n      renameByDefault: true\n"
                        "      resources:\n      - {name: nvidia.com/gpu, replicas: 4}\n");
    c.device_plugin_default = "ts";
    return c;
}

/* gpu-m: MPS, 2 clients per GPU, renamed explicitly */
static gx_fleet_cluster cluster_mps(void)
{
    gx_fleet_cluster c = {.name = "gpu-m", .namespaces = NS, .nnamespaces = 1};
    c.device_plugin = Y("mps:\n  version: v1\n  sharing:\n    mps:\n      resources:\n"
                        "      - {name: nvidia.com/gpu, rename: nvidia.com/gpu-mps, replicas: 2}\n");
    return c;
}

/* gpu-b: A100s partitioned with MIG, mixed strategy */
static gx_fleet_node B_NODES[] = {{"node-b1", NULL, "all-1g.10gb"}, {"node-b2", "mixed", "all-balanced"}};
static gx_fleet_cluster cluster_b(void)
{
    gx_fleet_cluster c = {.name = "gpu-b", .namespaces = NS + 1, .nnamespaces = 1, .nodes = B_NODES, .nnodes = 2};
    c.device_plugin = Y("mixed:\n  version: v1\n  flags: {migStrategy: mixed}\n");
    c.mig_parted = Y("version: v1\nmig-configs:\n  all-1g.10gb:\n  - devices: all\n    mig-enabled: true\n"
                     "    mig-devices: {1g.10gb: 7}\n  all-balanced:\n  - devices: all\n    mig-enabled: true\n"
                     "    mig-devices: {1g.10gb: 2, 2g.20gb: 1, 3g.40gb: 1}\n");
    return c;
}

static void drop(gx_fleet_cluster *c)
{
    json_decref(c->device_plugin);
    json_decref(c->mig_parted);
}

static const char *S(const json_t *o, const char *path)
{
    char buf[256], *save = NULL;
    snprintf(buf, sizeof buf, "%s", path);
    const json_t *v = o;
    for (char *k = strtok_r(buf, "/", &save); k && v; k = strtok_r(NULL, "/", &save))
        v = json_is_array(v) ? json_array_get(v, (size_t)atoi(k)) : json_object_get(v, k);
    return json_string_value(v);
}

/* When GPUAAS_RENDER_OUT names a folder, the object goes there as NAME.yaml. */
static void out(const json_t *obj, const char *name)
{
    const char *dir = getenv("GPUAAS_RENDER_OUT");
    if (!dir) return;
    char path[512], *y = gx_yaml_emit(obj);
    snprintf(path, sizeof path, "%s/%s.yaml", dir, name);
    FILE *f = fopen(path, "w");
    cr_assert(f, "%s", path);
    fputs(y, f);
    fclose(f);
    free(y);
}

#define JOB "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: train\n  namespace: %s\n  labels:\n" \
            "    kueue.x-k8s.io/queue-name: main\n  annotations:\n    gpuaas.dev/cluster: %s\n    note: kept\n" \
            "spec:\n  ttlSecondsAfterFinished: 60\n  template:\n    spec:\n      containers:\n" \
            "      - name: main\n        image: python:3\n        command: [python, train.py]\n" \
            "        resources:\n          requests: {cpu: \"2\", %s: 1}\n          limits: {%s: 1}\n"

static json_t *job(const char *ns, const char *cluster, const char *res)
{
    char y[2048];
    snprintf(y, sizeof y, JOB, ns, cluster, res, res);
    return Y(y);
}

Test(fleet_render2, gpu_time_slicing_configmap_and_node_labels)
{
    gx_fleet_cluster c = cluster_a();
    gx_err e;
    json_t *a = gx_fleet_render_gpu(&c, &e);
    cr_assert(a, "%s: %s", e.field, e.msg);
    cr_assert_eq(json_array_size(a), 3, "ConfigMap and two labelled Nodes (node-3 has no labels)");
    json_t *cm = json_array_get(a, 0);
    cr_assert_str_eq(S(cm, "kind"), "ConfigMap");
    cr_assert_str_eq(S(cm, "metadata/name"), "gpuaas-device-plugin");
    cr_assert_str_eq(S(cm, "metadata/namespace"), "gpu-operator");
    cr_assert(strstr(S(cm, "data/ts"), "renameByDefault: true"), "%s", S(cm, "data/ts"));
    cr_assert_str_eq(S(a, "1/metadata/name"), "node-1", "Nodes sorted by name");
    cr_assert_str_eq(S(a, "2/metadata/name"), "node-2");
    json_t *labels = json_object_get(json_object_get(json_array_get(a, 1), "metadata"), "labels");
    cr_assert_str_eq(json_string_value(json_object_get(labels, "nvidia.com/device-plugin.config")), "ts");
    cr_assert_null(json_object_get(labels, "nvidia.com/mig.config"), "only the labels set");
    json_t *ann = json_object_get(json_object_get(json_array_get(a, 1), "metadata"), "annotations");
    cr_assert(strstr(json_string_value(json_object_get(ann, "argocd.argoproj.io/sync-options")), "ServerSideApply=true"));
    cr_assert_null(json_object_get(json_array_get(a, 1), "spec"), "a Node is patched, not described");
    out(cm, "cm-gpu-a-device-plugin");
    out(json_array_get(a, 1), "node-gpu-a-node-1");
    json_decref(a);
    drop(&c);
}

Test(fleet_render2, gpu_mig_configmaps_sorted)
{
    gx_fleet_cluster c = cluster_b();
    gx_err e;
    json_t *a = gx_fleet_render_gpu(&c, &e);
    cr_assert(a, "%s: %s", e.field, e.msg);
    cr_assert_eq(json_array_size(a), 4);
    cr_assert_str_eq(S(a, "0/metadata/name"), "custom-mig-config");
    cr_assert(strstr(S(a, "0/data/config.yaml"), "mig-configs:"));
    cr_assert(strstr(S(a, "0/data/config.yaml"), "3g.40gb: 1"), "%s", S(a, "0/data/config.yaml"));
    cr_assert_str_eq(S(a, "1/metadata/name"), "gpuaas-device-plugin");
    json_t *l1 = json_object_get(json_object_get(json_array_get(a, 2), "metadata"), "labels");
    cr_assert_str_eq(json_string_value(json_object_get(l1, "nvidia.com/mig.config")), "all-1g.10gb");
    cr_assert_null(json_object_get(l1, "nvidia.com/device-plugin.config"));
    json_t *l2 = json_object_get(json_object_get(json_array_get(a, 3), "metadata"), "labels");
    cr_assert_str_eq(json_string_value(json_object_get(l2, "nvidia.com/device-plugin.config")), "mixed");
    cr_assert_str_eq(json_string_value(json_object_get(l2, "nvidia.com/mig.config")), "all-balanced");
    out(json_array_get(a, 0), "cm-gpu-b-mig");
    out(json_array_get(a, 3), "node-gpu-b-node-b2");
    json_decref(a);
    drop(&c);
}

Test(fleet_render2, gpu_refusals_name_the_field)
{
    gx_err e;
    gx_fleet_cluster c = cluster_a();
    gx_fleet_node bad[] = {{"node-1", "nope", NULL}};
    c.nodes = bad;
    c.nnodes = 1;
    cr_assert_null(gx_fleet_render_gpu(&c, &e));
    cr_assert_str_eq(e.field, "gpuOperator.nodes.devicePluginConfig");
    cr_assert(strstr(e.msg, "nope"), "%s", e.msg);
    drop(&c);

    c = cluster_a();
    json_object_set_new(c.device_plugin, "one", Y("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                                                  "    - {name: nvidia.com/gpu, replicas: 1}\n"));
    cr_assert_null(gx_fleet_render_gpu(&c, &e), "the server's own reader refuses replicas: 1");
    cr_assert(strstr(e.field, "gpuOperator.devicePlugin.configs.one") == e.field, "%s", e.field);
    cr_assert(strstr(e.msg, "gpu-a"), "%s", e.msg);
    drop(&c);

    c = cluster_b();
    gx_fleet_node badmig[] = {{"node-b1", NULL, "all-7g"}};
    c.nodes = badmig;
    c.nnodes = 1;
    cr_assert_null(gx_fleet_render_gpu(&c, &e));
    cr_assert_str_eq(e.field, "gpuOperator.nodes.migConfig");
    drop(&c);
}

Test(fleet_render2, job_time_sliced_gpu_renamed_ttl_dropped)
{
    gx_fleet_cluster c = cluster_a();
    gx_fleet f = {.name = "fleet", .clusters = &c, .n = 1};
    gx_err e;
    json_t *req = job("team-a", "gpu-a", "nvidia.com/gpu");
    json_t *j = gx_fleet_render_job(&f, &c, req, "alice", &e);
    cr_assert(j, "%s: %s", e.field, e.msg);
    cr_assert_str_eq(S(j, "apiVersion"), "batch/v1");
    json_t *md = json_object_get(j, "metadata"), *spec = json_object_get(j, "spec");
    json_t *labels = json_object_get(md, "labels");
    cr_assert_str_eq(json_string_value(json_object_get(labels, "kueue.x-k8s.io/queue-name")), "main");
    cr_assert_str_eq(json_string_value(json_object_get(labels, "gpuaas.dev/requested-by")), "alice");
    cr_assert_str_eq(json_string_value(json_object_get(labels, "gpuaas.dev/cluster")), "gpu-a");
    json_t *ann = json_object_get(md, "annotations");
    cr_assert_null(json_object_get(ann, "gpuaas.dev/cluster"), "the folder says the cluster");
    cr_assert_str_eq(json_string_value(json_object_get(ann, "note")), "kept");
    cr_assert(json_is_true(json_object_get(spec, "suspend")));
    cr_assert_null(json_object_get(spec, "ttlSecondsAfterFinished"), "Argo CD would re-run it (argo-cd #8586)");
    cr_assert_null(json_object_get(spec, "managedBy"), "not a MultiKueue manager");
    cr_assert_str_eq(S(spec, "template/spec/restartPolicy"), "Never");
    json_t *r = json_object_get(json_object_get(json_array_get(json_object_get(json_object_get(json_object_get(spec,
                                "template"), "spec"), "containers"), 0), "resources"), "requests");
    cr_assert_eq(json_integer_value(json_object_get(r, "nvidia.com/gpu.shared")), 1, "renameByDefault: .shared");
    cr_assert_null(json_object_get(r, "nvidia.com/gpu"));
    cr_assert_str_eq(S(spec, "template/spec/containers/0/resources/requests/cpu"), "2");
    cr_assert(json_object_get(json_object_get(json_object_get(json_array_get(json_object_get(json_object_get(
              json_object_get(spec, "template"), "spec"), "containers"), 0), "resources"), "limits"), "nvidia.com/gpu.shared"));
    out(j, "job-gpu-a-train");
    json_decref(j);
    json_decref(req);
    drop(&c);
}

Test(fleet_render2, job_mps_rename_and_mig_names)
{
    gx_err e;
    gx_fleet_cluster m = cluster_mps();
    json_t *req = job("team-a", "gpu-m", "nvidia.com/gpu");
    json_t *j = gx_fleet_render_job(NULL, &m, req, "bob", &e);
    cr_assert(j, "%s: %s", e.field, e.msg);
    cr_assert_str_eq(S(j, "spec/template/spec/containers/0/resources/requests/cpu"), "2");
    json_t *lim = json_object_get(json_object_get(json_array_get(json_object_get(json_object_get(json_object_get(
                  json_object_get(j, "spec"), "template"), "spec"), "containers"), 0), "resources"), "limits");
    cr_assert(json_object_get(lim, "nvidia.com/gpu-mps"), "an explicit rename");
    json_decref(j);
    json_decref(req);
    drop(&m);

    gx_fleet_cluster b = cluster_b();
    req = job("team-b", "gpu-b", "nvidia.com/mig-1g.10gb");
    j = gx_fleet_render_job(NULL, &b, req, "bob", &e);
    cr_assert(j, "%s: %s", e.field, e.msg);
    lim = json_object_get(json_object_get(json_array_get(json_object_get(json_object_get(json_object_get(
          json_object_get(j, "spec"), "template"), "spec"), "containers"), 0), "resources"), "limits");
    cr_assert(json_object_get(lim, "nvidia.com/mig-1g.10gb"), "mixed strategy: MIG names kept");
    out(j, "job-gpu-b-mig");
    json_decref(j);
    json_decref(req);

    req = job("team-b", "gpu-b", "nvidia.com/mig-4g.40gb");
    cr_assert_null(gx_fleet_render_job(NULL, &b, req, "bob", &e), "no mig-parted config makes 4g.40gb");
    cr_assert_str_eq(e.field, "spec.template.spec.containers[0].resources.requests.nvidia.com/mig-4g.40gb");
    json_decref(req);
    drop(&b);
}

Test(fleet_render2, job_fractional_refused_naming_the_field)
{
    gx_err e;
    gx_fleet_cluster c = cluster_a();
    json_t *req = job("team-a", "gpu-a", "nvidia.com/gpumem");
    cr_assert_null(gx_fleet_render_job(NULL, &c, req, "alice", &e));
    cr_assert_str_eq(e.field, "spec.template.spec.containers[0].resources.requests.nvidia.com/gpumem");
    cr_assert(strstr(e.msg, "cluster gpu-a offers no nvidia.com/gpumem: its GPUs are time-sliced"), "%s", e.msg);
    json_decref(req);
    req = job("team-a", "gpu-a", "nvidia.com/mig-1g.10gb");
    cr_assert_null(gx_fleet_render_job(NULL, &c, req, "alice", &e), "gpu-a has no MIG");
    cr_assert(strstr(e.msg, "offers no nvidia.com/mig-1g.10gb"), "%s", e.msg);
    json_decref(req);
    drop(&c);
    gx_fleet_cluster m = cluster_mps();
    req = job("team-a", "gpu-m", "nvidia.com/gpucores");
    cr_assert_null(gx_fleet_render_job(NULL, &m, req, "alice", &e));
    cr_assert(strstr(e.msg, "shared with MPS"), "%s", e.msg);
    json_decref(req);
    drop(&m);
}

Test(fleet_render2, job_refusals_name_the_field)
{
    gx_err e;
    gx_fleet_cluster c = cluster_b();
    json_t *req = job("team-a", "gpu-b", "memory");
    cr_assert_null(gx_fleet_render_job(NULL, &c, req, "alice", &e), "gpu-b offers team-b only");
    cr_assert_str_eq(e.field, "metadata.namespace");
    cr_assert(strstr(e.msg, "team-b"), "%s", e.msg);
    json_decref(req);
    req = job("team-b", "gpu-b", "memory");
    json_object_del(json_object_get(json_object_get(req, "metadata"), "labels"), "kueue.x-k8s.io/queue-name");
    cr_assert_null(gx_fleet_render_job(NULL, &c, req, "alice", &e));
    cr_assert_str_eq(e.field, "metadata.labels.kueue.x-k8s.io/queue-name");
    json_decref(req);
    req = job("team-b", "gpu-b", "memory");
    cr_assert_null(gx_fleet_render_job(NULL, &c, req, "al ice", &e));
    cr_assert_str_eq(e.field, "metadata.labels.gpuaas.dev/requested-by");
    json_object_set_new(req, "kind", json_string("Pod"));
    cr_assert_null(gx_fleet_render_job(NULL, &c, req, "alice", &e));
    cr_assert_str_eq(e.field, "kind");
    json_decref(req);
    drop(&c);
}

Test(fleet_render2, job_managed_by_multikueue_only_on_a_manager)
{
    gx_err e;
    char *workers[] = {"gpu-b"};
    gx_fleet_cluster hub = {.name = "hub", .namespaces = NS, .nnamespaces = 2, .workers = workers, .nworkers = 1};
    json_t *req = job("team-a", "hub", "nvidia.com/gpu");
    json_object_set_new(json_object_get(req, "spec"), "managedBy", json_string("someone/else"));
    json_t *j = gx_fleet_render_job(NULL, &hub, req, "alice", &e);
    cr_assert(j, "%s: %s", e.field, e.msg);
    cr_assert_str_eq(S(j, "spec/managedBy"), "kueue.x-k8s.io/multikueue");
    cr_assert(json_object_get(json_object_get(json_object_get(json_array_get(json_object_get(json_object_get(
              json_object_get(json_object_get(j, "spec"), "template"), "spec"), "containers"), 0), "resources"),
              "requests"), "nvidia.com/gpu"), "no device plugin config: the name as asked");
    out(j, "job-hub-train");
    json_decref(j);
    gx_fleet_cluster plain = hub;
    plain.nworkers = 0;
    j = gx_fleet_render_job(NULL, &plain, req, "alice", &e);
    cr_assert(j);
    cr_assert_null(json_object_get(json_object_get(j, "spec"), "managedBy"), "the user's own managedBy is not carried");
    json_decref(j);
    json_decref(req);
}

#define MODEL "kind: Model\napiVersion: gpuaas.dev/v1alpha1\nmetadata: {name: qwen}\nspec:\n" \
              "  servedNames: [Qwen/Qwen3-0.6B]\n  workload:\n    namespace: team-a\n    queue: main\n" \
              "    command: [vllm, serve, Qwen/Qwen3-0.6B, --port, \"{port}\", --served-model-name, \"{model}\"," \
              " --max-model-len, \"4096\"]\n    resources: {cpu: \"4\", nvidia.com/gpu: 1}\n" \
              "    replicas: 2\n    minReplicas: 1\n"

Test(fleet_render2, model_becomes_an_inference_service)
{
    gx_err e;
    gx_fleet_cluster c = cluster_a();
    json_t *m = Y(MODEL);
    json_t *s = gx_fleet_render_model(&c, m, &e);
    cr_assert(s, "%s: %s", e.field, e.msg);
    cr_assert_str_eq(S(s, "apiVersion"), "serving.kserve.io/v1beta1");
    cr_assert_str_eq(S(s, "kind"), "InferenceService");
    cr_assert_str_eq(S(s, "metadata/namespace"), "team-a");
    json_t *pred = json_object_get(json_object_get(s, "spec"), "predictor");
    cr_assert_eq(json_integer_value(json_object_get(pred, "minReplicas")), 1);
    cr_assert_eq(json_integer_value(json_object_get(pred, "maxReplicas")), 2);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(pred, "labels"), "kueue.x-k8s.io/queue-name")),
                     "main");
    cr_assert_str_eq(S(pred, "model/modelFormat/name"), "huggingface");
    json_t *args = json_object_get(json_object_get(pred, "model"), "args");
    cr_assert_eq(json_array_size(args), 4, "model_name, model_id, --max-model-len 4096 (port and name dropped)");
    cr_assert_str_eq(S(args, "0"), "--model_name=Qwen/Qwen3-0.6B");
    cr_assert_str_eq(S(args, "1"), "--model_id=Qwen/Qwen3-0.6B");
    cr_assert_str_eq(S(args, "2"), "--max-model-len");
    json_t *lim = json_object_get(json_object_get(json_object_get(pred, "model"), "resources"), "limits");
    cr_assert_str_eq(json_string_value(json_object_get(lim, "nvidia.com/gpu.shared")), "1", "the cluster's name, a string");
    out(s, "isvc-gpu-a-qwen");
    json_decref(s);

    json_object_del(json_object_get(m, "spec"), "workload");
    json_object_set_new(json_object_get(m, "spec"), "url", json_string("http://x:8000"));
    cr_assert_null(gx_fleet_render_model(&c, m, &e));
    cr_assert_str_eq(e.field, "spec.workload");
    json_decref(m);

    m = Y(MODEL);
    json_array_set_new(json_object_get(json_object_get(json_object_get(m, "spec"), "workload"), "command"), 0,
                       json_string("{bindir}/fake-openai"));
    cr_assert_null(gx_fleet_render_model(&c, m, &e));
    cr_assert_str_eq(e.field, "spec.workload.command");
    json_decref(m);
    m = Y(MODEL);
    json_object_set_new(json_object_get(json_object_get(m, "spec"), "workload"), "namespace", json_string("team-z"));
    cr_assert_null(gx_fleet_render_model(&c, m, &e));
    cr_assert_str_eq(e.field, "spec.workload.namespace");
    json_decref(m);
    drop(&c);
}

static char *all_yaml(const gx_fleet_cluster *c, const json_t *req, const json_t *model)
{
    gx_err e;
    json_t *a = gx_fleet_render_gpu(c, &e);
    cr_assert(a, "%s", e.msg);
    json_array_append_new(a, gx_fleet_render_job(NULL, c, req, "alice", &e));
    json_array_append_new(a, gx_fleet_render_model(c, model, &e));
    char *y = gx_yaml_emit(a);
    json_decref(a);
    return y;
}

Test(fleet_render2, deterministic_twice)
{
    gx_fleet_cluster c = cluster_a();
    json_t *req = job("team-a", "gpu-a", "nvidia.com/gpu"), *m = Y(MODEL);
    char *one = all_yaml(&c, req, m), *two = all_yaml(&c, req, m);
    cr_assert(strstr(one, "InferenceService") && strstr(one, "kind: Job"), "%s", one);
    cr_assert_str_eq(one, two);
    /* the same configs written in another order give the same ConfigMap */
    gx_fleet_cluster d = cluster_a();
    json_t *rev = json_object();
    json_object_set_new(rev, "z", Y("version: v1\n"));
    json_object_update(rev, d.device_plugin);
    json_t *fwd = json_deep_copy(d.device_plugin);
    json_object_set_new(fwd, "z", Y("version: v1\n"));
    json_decref(d.device_plugin);
    d.device_plugin = rev;
    char *three = all_yaml(&d, req, m);
    json_decref(d.device_plugin);
    d.device_plugin = fwd;
    char *four = all_yaml(&d, req, m);
    cr_assert_str_eq(three, four, "data keys sorted");
    free(one);
    free(two);
    free(three);
    free(four);
    json_decref(req);
    json_decref(m);
    drop(&c);
    drop(&d);
}

/* examples/fleet/fleet.yaml's GPU Operator parts render as they are written (the
 * clusters are filled from the document here by hand, not by the Fleet parser). */
Test(fleet_render2, example_fleet_renders)
{
    FILE *fp = fopen("examples/fleet/fleet.yaml", "r");
    cr_assert(fp);
    char buf[16384];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = 0;
    json_t *doc = Y(buf), *cl;
    size_t i, total = 0;
    json_array_foreach(json_object_get(json_object_get(doc, "spec"), "clusters"), i, cl) {
        json_t *op = json_object_get(cl, "gpuOperator"), *nd;
        gx_fleet_node nodes[8];
        char *ns[8];
        size_t k;
        gx_fleet_cluster c = {.name = (char *)json_string_value(json_object_get(cl, "name")), .namespaces = ns,
                              .nodes = nodes};
        json_array_foreach(json_object_get(cl, "namespaces"), k, nd) ns[c.nnamespaces++] = (char *)json_string_value(nd);
        c.device_plugin = json_object_get(json_object_get(op, "devicePlugin"), "configs");
        c.device_plugin_default = (char *)json_string_value(json_object_get(json_object_get(op, "devicePlugin"), "default"));
        c.mig_parted = json_object_get(op, "migConfig");
        json_array_foreach(json_object_get(op, "nodes"), k, nd) {
            nodes[c.nnodes++] = (gx_fleet_node){(char *)json_string_value(json_object_get(nd, "name")),
                                                (char *)json_string_value(json_object_get(nd, "devicePluginConfig")),
                                                (char *)json_string_value(json_object_get(nd, "migConfig"))};
        }
        gx_err e;
        json_t *a = gx_fleet_render_gpu(&c, &e), *o;
        cr_assert(a, "%s: %s: %s", c.name, e.field, e.msg);
        json_array_foreach(a, k, o) {
            char name[128];
            snprintf(name, sizeof name, "example-%s-%s-%s", c.name, json_string_value(json_object_get(o, "kind")),
                     json_string_value(json_object_get(json_object_get(o, "metadata"), "name")));
            out(o, name);
        }
        total += json_array_size(a);
        json_decref(a);
        /* a Job asking for nvidia.com/gpu gets each cluster's own name for it */
        json_t *req = job("team-a", c.name, i == 0 ? "nvidia.com/gpu" : "nvidia.com/mig-3g.40gb");
        json_t *j = gx_fleet_render_job(NULL, &c, req, "alice", &e);
        cr_assert(j, "%s: %s: %s", c.name, e.field, e.msg);
        json_t *r = json_object_get(json_object_get(json_array_get(json_object_get(json_object_get(json_object_get(
                    json_object_get(j, "spec"), "template"), "spec"), "containers"), 0), "resources"), "requests");
        cr_assert(json_object_get(r, i == 0 ? "nvidia.com/gpu.shared" : "nvidia.com/mig-3g.40gb"), "%s", c.name);
        json_decref(j);
        json_decref(req);
    }
    cr_assert_eq(total, 1 + 2 + 2 + 2, "gpu-a: a ConfigMap and 2 Nodes; gpu-b: 2 ConfigMaps and 2 Nodes");
    json_decref(doc);
}
