/* Unit tests for the Fleet object (fleet/fleet.c) and the Kueue half of `gpuaas render`
 * (render_kueue.c, render_out.c): every parse rule names its field, defaults and the git
 * overlay, the objects a cluster gets and their order, byte-identical output, Kueue's
 * webhook rules on the MultiKueue objects, and the round trip: the rendered objects
 * applied into a fresh engine give the same queue views as the original ones. The CRD
 * validation of the same output is tests/integration/fleet_render.sh. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "core/engine.h"
#include "fleet/fleet.h"
#include "lib/yaml.h"

static json_t *Y(const char *text)
{
    gx_yaml_docs d;
    gx_err e;
    cr_assert_eq(gx_yaml_parse(text, strlen(text), &d, &e), 0, "bad test YAML: %s", e.msg);
    cr_assert_eq(d.n, 1);
    json_t *v = json_incref(d.docs[0]);
    gx_yaml_docs_free(&d);
    return v;
}

static const char *FLEET =
    "apiVersion: gpuaas.dev/v1alpha1\n"
    "kind: Fleet\n"
    "metadata: {name: fleet}\n"
    "spec:\n"
    "  git: {repo: /srv/gitops.git, branch: prod, author: {name: hub, email: hub@example.org}}\n"
    "  clusters:\n"
    "  - name: hub\n"
    "    labels: {region: eu}\n"
    "    namespaces: [team-a]\n"
    "    clusterQueues: [team-a]\n"
    "    multiKueue: {workers: [gpu-b]}\n"
    "  - name: gpu-b\n"
    "    git: {repo: https://git.example.org/ops.git, folder: b, credentialsFile: /etc/creds}\n"
    "    kubeconfig: /etc/b.kubeconfig\n"
    "    namespaces: [team-a, team-b]\n"
    "    clusterQueues: [team-a, team-b]\n";

/* The applied objects, keyed as the daemon keys them (ops/objects.c). */
static const char *const OBJECTS[] = {
    "{apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: h100}, spec: {nodeLabels: {gpu: h100}}}",
    "{apiVersion: kueue.x-k8s.io/v1beta2, kind: ResourceFlavor, metadata: {name: unused}}",
    "{apiVersion: kueue.x-k8s.io/v1beta2, kind: Cohort, metadata: {name: lab}, spec: {parentName: org}}",
    "{apiVersion: kueue.x-k8s.io/v1beta2, kind: Cohort, metadata: {name: org}}",
    "{apiVersion: kueue.x-k8s.io/v1beta2, kind: ClusterQueue, metadata: {name: team-a, creationTimestamp: \"2026-01-01T00:00:00Z\"},"
    " spec: {cohortName: lab, namespaceSelector: {}, resourceGroups: [{coveredResources: [cpu, nvidia.com/gpu], flavors: [{name: h100,"
    " resources: [{name: cpu, nominalQuota: \"16\"}, {name: nvidia.com/gpu, nominalQuota: \"4\"}]}]}]},"
    " status: {pendingWorkloads: 3}}",
    "{apiVersion: kueue.x-k8s.io/v1beta2, kind: ClusterQueue, metadata: {name: team-b}, spec: {namespaceSelector: {},"
    " queueingStrategy: StrictFIFO, resourceGroups: [{coveredResources: [cpu], flavors: [{name: h100, resources: [{name: cpu,"
    " nominalQuota: \"8\"}]}]}]}}",
    "{apiVersion: kueue.x-k8s.io/v1beta2, kind: LocalQueue, metadata: {name: main, namespace: team-a}, spec: {clusterQueue: team-a}}",
    "{apiVersion: kueue.x-k8s.io/v1beta2, kind: LocalQueue, metadata: {name: main, namespace: team-b}, spec: {clusterQueue: team-b}}",
    "{apiVersion: kueue.x-k8s.io/v1beta2, kind: LocalQueue, metadata: {name: other, namespace: team-c}, spec: {clusterQueue: team-a}}",
    "{apiVersion: kueue.x-k8s.io/v1beta2, kind: WorkloadPriorityClass, metadata: {name: high}, value: 1000}",
    NULL,
};

static void put(json_t *objects, json_t *doc)
{
    const json_t *md = json_object_get(doc, "metadata");
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    char key[300];
    snprintf(key, sizeof key, "%s/%s/%s", kind,
             strcmp(kind, "LocalQueue") ? "" : json_string_value(json_object_get(md, "namespace")),
             json_string_value(json_object_get(md, "name")));
    json_object_set_new(objects, key, doc);
}

static json_t *objects_of(const char *const *texts)
{
    json_t *o = json_object();
    for (int i = 0; texts[i]; i++) put(o, Y(texts[i]));
    return o;
}

static void parse_ok(const char *text, gx_fleet *f)
{
    json_t *doc = Y(text);
    gx_err e;
    cr_assert_eq(gx_fleet_parse(doc, f, &e), 0, "parse: %s: %s", e.field, e.msg);
    json_decref(doc);
}

/* Parse FLEET with `from` replaced by `to` and expect the error on `field`. */
static void parse_fails(const char *from, const char *to, const char *field, const char *words)
{
    char text[4096];
    const char *at = strstr(FLEET, from);
    cr_assert(at, "test text has no %s", from);
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - FLEET), FLEET, to, at + strlen(from));
    json_t *doc = Y(text);
    gx_fleet f;
    gx_err e;
    cr_assert_eq(gx_fleet_parse(doc, &f, &e), -1, "accepted: %s", text);
    cr_assert_str_eq(e.field, field, "field %s (%s), expected %s", e.field, e.msg, field);
    cr_assert(strstr(e.msg, words), "message \"%s\" lacks \"%s\"", e.msg, words);
    json_decref(doc);
}

Test(fleet, defaults_and_git_overlay)
{
    gx_fleet f;
    parse_ok(FLEET, &f);
    cr_assert_str_eq(f.name, "fleet");
    cr_assert_eq(f.n, 2);
    const gx_fleet_cluster *hub = gx_fleet_find(&f, "hub"), *b = gx_fleet_find(&f, "gpu-b");
    cr_assert(hub && b && !gx_fleet_find(&f, "nope"));
    cr_assert_str_eq(hub->git.repo, "/srv/gitops.git");
    cr_assert_str_eq(hub->git.branch, "prod");
    cr_assert_str_eq(hub->git.folder, "clusters/hub");
    cr_assert_str_eq(hub->git.author_name, "hub");
    cr_assert_null(hub->git.credentials_file);
    cr_assert_null(hub->kubeconfig);
    cr_assert_str_eq(json_string_value(json_object_get(hub->labels, "region")), "eu");
    cr_assert_eq(hub->nworkers, 1);
    cr_assert_str_eq(hub->workers[0], "gpu-b");
    /* the cluster's own git fields win, the rest comes from spec.git */
    cr_assert_str_eq(b->git.repo, "https://git.example.org/ops.git");
    cr_assert_str_eq(b->git.folder, "b");
    cr_assert_str_eq(b->git.branch, "prod");
    cr_assert_str_eq(b->git.author_email, "hub@example.org");
    cr_assert_str_eq(b->git.credentials_file, "/etc/creds");
    cr_assert_str_eq(b->kubeconfig, "/etc/b.kubeconfig");
    cr_assert(json_is_object(b->labels) && !json_object_size(b->labels));
    cr_assert_eq(b->nnamespaces, 2);
    cr_assert_eq(b->ncluster_queues, 2);
    gx_fleet_free(&f);
    /* without spec.git's branch and author: main, gpuaas, gpuaas@localhost */
    parse_ok("apiVersion: gpuaas.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\n"
             "spec: {clusters: [{name: one, git: {repo: /r}}]}\n", &f);
    cr_assert_str_eq(f.clusters[0].git.branch, "main");
    cr_assert_str_eq(f.clusters[0].git.author_name, "gpuaas");
    cr_assert_str_eq(f.clusters[0].git.author_email, "gpuaas@localhost");
    cr_assert_eq(f.clusters[0].nnamespaces, 0);
    gx_fleet_free(&f);
}

Test(fleet, errors_name_the_field)
{
    parse_fails("kind: Fleet", "kind: Fleat", "kind", "Fleet");
    parse_fails("apiVersion: gpuaas.dev/v1alpha1", "apiVersion: gpuaas.dev/v1", "apiVersion", "gpuaas.dev/v1alpha1");
    parse_fails("    labels: {region: eu}\n", "    labels: {region: eu}\n    colour: blue\n", "spec.clusters[0].colour",
                "unknown field");
    parse_fails("spec:\n", "spec:\n  extra: 1\n", "spec.extra", "unknown field");
    parse_fails("author: {name: hub,", "author: {nick: x, name: hub,", "spec.git.author.nick", "unknown field");
    parse_fails("  - name: gpu-b\n", "  - name: hub\n", "spec.clusters[1].name", "Duplicate value");
    parse_fails("  - name: hub\n", "  - name: Hub_1\n", "spec.clusters[0].name", "Invalid value");
    parse_fails("namespaces: [team-a]", "namespaces: [team-a, team-a]", "spec.clusters[0].namespaces[1]", "Duplicate");
    parse_fails("namespaces: [team-a]", "namespaces: [a.b]", "spec.clusters[0].namespaces[0]", "Invalid value");
    parse_fails("clusterQueues: [team-a]\n    multiKueue", "clusterQueues: [Team]\n    multiKueue",
                "spec.clusters[0].clusterQueues[0]", "Invalid value");
    parse_fails("workers: [gpu-b]", "workers: [gpu-z]", "spec.clusters[0].multiKueue.workers[0]", "not a cluster");
    parse_fails("workers: [gpu-b]", "workers: [hub]", "spec.clusters[0].multiKueue.workers[0]", "its own worker");
    /* a chain: gpu-b a manager too, dispatching back to hub */
    parse_fails("    kubeconfig: /etc/b.kubeconfig\n", "    kubeconfig: /etc/b.kubeconfig\n    multiKueue: {workers: [hub]}\n",
                "spec.clusters[0].multiKueue.workers[0]", "no chains");
    parse_fails("  git: {repo: /srv/gitops.git,", "  git: {folder: x, repo: /srv/gitops.git,", "spec.git.folder", "per cluster");
    parse_fails("folder: b,", "folder: ../b,", "spec.clusters[1].git.folder", "relative path");
    parse_fails("folder: b,", "folder: /b,", "spec.clusters[1].git.folder", "relative path");
    parse_fails("repo: https://git.example.org/ops.git, folder: b,", "repo: /srv/gitops.git, folder: clusters/hub,",
                "spec.clusters[1].git.folder", "also cluster hub");
    parse_fails("  git: {repo: /srv/gitops.git, ", "  git: {", "spec.clusters[0].git.repo", "Required value");
    parse_fails("kubeconfig: /etc/b.kubeconfig", "kubeconfig: 7", "spec.clusters[1].kubeconfig", "string");
    parse_fails("  clusters:\n", "  clusters: []\n  x:\n", "spec.x", "unknown field");
}

Test(fleet, limits)
{
    char big[300];
    memset(big, 'a', 254);
    big[254] = 0;
    char to[400];
    snprintf(to, sizeof to, "kubeconfig: %s", big);
    parse_fails("kubeconfig: /etc/b.kubeconfig", to, "spec.clusters[1].kubeconfig", "at most 253");
    char list[1024] = "namespaces: [";
    for (int i = 0; i < 65; i++) snprintf(list + strlen(list), sizeof list - strlen(list), "%sn%d", i ? ", " : "", i);
    strcat(list, "]\n    clusterQueues: [team-a]\n    multiKueue");
    parse_fails("namespaces: [team-a]\n    clusterQueues: [team-a]\n    multiKueue", list, "spec.clusters[0].namespaces",
                "at most 64");
    char many[8192] = "  clusters:\n";
    for (int i = 0; i < GX_FLEET_CLUSTERS_MAX + 1; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "  - {name: c%d}\n", i);
    strcat(many, "  - name: hub\n");
    parse_fails("  clusters:\n  - name: hub\n", many, "spec.clusters", "at most 64");
}

static const char *GPU_FLEET =
    "apiVersion: gpuaas.dev/v1alpha1\nkind: Fleet\nmetadata: {name: f}\n"
    "spec:\n"
    "  git: {repo: /r}\n"
    "  clusters:\n"
    "  - name: one\n"
    "    gpuOperator:\n"
    "      devicePlugin:\n"
    "        default: ts\n"
    "        configs:\n"
    "          ts: {version: v1, sharing: {timeSlicing: {resources: [{name: nvidia.com/gpu, replicas: 4}]}}}\n"
    "          mps: {version: v1, sharing: {mps: {resources: [{name: nvidia.com/gpu, replicas: 2}]}}}\n"
    "      migConfig: {version: v1, mig-configs: {all-disabled: [{devices: all, mig-enabled: false}]}}\n"
    "      nodes: [{name: node-1, devicePluginConfig: mps, migConfig: all-disabled}, {name: node-2}]\n";

static void gpu_fails(const char *from, const char *to, const char *field, const char *words)
{
    char text[4096];
    const char *at = strstr(GPU_FLEET, from);
    cr_assert(at, "test text has no %s", from);
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - GPU_FLEET), GPU_FLEET, to, at + strlen(from));
    json_t *doc = Y(text);
    gx_fleet f;
    gx_err e;
    cr_assert_eq(gx_fleet_parse(doc, &f, &e), -1, "accepted: %s", text);
    cr_assert_str_eq(e.field, field, "field %s (%s), expected %s", e.field, e.msg, field);
    cr_assert(strstr(e.msg, words), "message \"%s\" lacks \"%s\"", e.msg, words);
    json_decref(doc);
}

Test(fleet, gpu_operator)
{
    gx_fleet f;
    parse_ok(GPU_FLEET, &f);
    const gx_fleet_cluster *c = &f.clusters[0];
    cr_assert_str_eq(c->device_plugin_default, "ts");
    cr_assert_eq(json_object_size(c->device_plugin), 2);
    cr_assert(json_object_get(json_object_get(c->mig_parted, "mig-configs"), "all-disabled"));
    cr_assert_eq(c->nnodes, 2);
    cr_assert_str_eq(c->nodes[0].device_plugin_config, "mps");
    cr_assert_str_eq(c->nodes[0].mig_config, "all-disabled");
    cr_assert_null(c->nodes[1].device_plugin_config);
    gx_fleet_free(&f);
    /* the device plugin's own checks, with the config's path in front */
    gpu_fails("replicas: 4", "replicas: 1", "spec.clusters[0].gpuOperator.devicePlugin.configs.ts.sharing.timeSlicing.resources[0].replicas",
              "");
    gpu_fails("devicePluginConfig: mps", "devicePluginConfig: nope", "spec.clusters[0].gpuOperator.nodes[0].devicePluginConfig",
              "not a key");
    gpu_fails("migConfig: all-disabled}", "migConfig: all-1g}", "spec.clusters[0].gpuOperator.nodes[0].migConfig", "not a config");
    gpu_fails("default: ts", "default: xx", "spec.clusters[0].gpuOperator.devicePlugin.default", "not one of");
    gpu_fails("        default: ts\n", "", "spec.clusters[0].gpuOperator.devicePlugin.default", "Required value");
    gpu_fails("{name: node-2}", "{name: node-1}", "spec.clusters[0].gpuOperator.nodes[1].name", "Duplicate");
    gpu_fails("{name: node-2}", "{name: node-2, gpus: 8}", "spec.clusters[0].gpuOperator.nodes[1].gpus", "unknown field");
}

/* "Kind/ns/name" of each rendered object, in order, joined by spaces. */
static char *keys(const json_t *arr)
{
    static char buf[4096];
    buf[0] = 0;
    size_t i;
    const json_t *o;
    json_array_foreach(arr, i, o) {
        const json_t *md = json_object_get(o, "metadata");
        const char *ns = json_string_value(json_object_get(md, "namespace"));
        snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s/%s/%s", i ? " " : "",
                 json_string_value(json_object_get(o, "kind")), ns ? ns : "", json_string_value(json_object_get(md, "name")));
    }
    return buf;
}

static const json_t *find(const json_t *arr, const char *kind, const char *name)
{
    size_t i;
    const json_t *o;
    json_array_foreach(arr, i, o)
        if (!strcmp(json_string_value(json_object_get(o, "kind")), kind) &&
            !strcmp(json_string_value(json_object_get(json_object_get(o, "metadata"), "name")), name))
            return o;
    return NULL;
}

Test(render, objects_and_order)
{
    gx_fleet f;
    parse_ok(FLEET, &f);
    json_t *objects = objects_of(OBJECTS);
    gx_err e;
    json_t *b = gx_fleet_render_kueue(&f, gx_fleet_find(&f, "gpu-b"), objects, &e);
    cr_assert(b, "%s: %s", e.field, e.msg);
    cr_assert_str_eq(keys(b), "ClusterQueue//team-a ClusterQueue//team-b Cohort//lab Cohort//org LocalQueue/team-a/main "
                              "LocalQueue/team-b/main Namespace//team-a Namespace//team-b ResourceFlavor//h100 "
                              "WorkloadPriorityClass//high");
    const json_t *cq = find(b, "ClusterQueue", "team-a");
    cr_assert_str_eq(json_string_value(json_object_get(cq, "apiVersion")), "kueue.x-k8s.io/v1beta2");
    cr_assert_null(json_object_get(cq, "status"), "server fields go");
    cr_assert_null(json_object_get(json_object_get(cq, "metadata"), "creationTimestamp"));
    cr_assert_null(json_object_get(json_object_get(cq, "spec"), "admissionChecksStrategy"), "a worker has no MultiKueue check");
    cr_assert_str_eq(json_string_value(json_object_get(find(b, "Namespace", "team-a"), "apiVersion")), "v1");
    /* tenants' pods on the cluster: Kubernetes' baseline Pod Security Standard, enforced */
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(find(b, "Namespace", "team-a"), "metadata"),
                                                                       "labels"), "pod-security.kubernetes.io/enforce")),
                     "baseline");
    json_decref(b);

    json_t *hub = gx_fleet_render_kueue(&f, gx_fleet_find(&f, "hub"), objects, &e);
    cr_assert(hub, "%s: %s", e.field, e.msg);
    cr_assert_str_eq(keys(hub), "AdmissionCheck//multikueue ClusterQueue//team-a Cohort//lab Cohort//org "
                                "LocalQueue/team-a/main MultiKueueCluster//gpu-b MultiKueueConfig//hub Namespace//team-a "
                                "ResourceFlavor//h100 WorkloadPriorityClass//high");
    const json_t *ac = find(hub, "AdmissionCheck", "multikueue");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(ac, "spec"), "controllerName")), "kueue.x-k8s.io/multikueue");
    const json_t *par = json_object_get(json_object_get(ac, "spec"), "parameters");
    cr_assert_str_eq(json_string_value(json_object_get(par, "kind")), "MultiKueueConfig");
    cr_assert_str_eq(json_string_value(json_object_get(par, "name")), "hub");
    const json_t *mkc = find(hub, "MultiKueueConfig", "hub");
    cr_assert_str_eq(json_string_value(json_array_get(json_object_get(json_object_get(mkc, "spec"), "clusters"), 0)), "gpu-b");
    const json_t *kc = json_object_get(json_object_get(json_object_get(find(hub, "MultiKueueCluster", "gpu-b"), "spec"),
                                                       "clusterSource"), "kubeConfig");
    cr_assert_str_eq(json_string_value(json_object_get(kc, "location")), "gpu-b-kubeconfig");
    cr_assert_str_eq(json_string_value(json_object_get(kc, "locationType")), "Secret");
    const json_t *chk = json_object_get(json_object_get(json_object_get(find(hub, "ClusterQueue", "team-a"), "spec"),
                                                        "admissionChecksStrategy"), "admissionChecks");
    cr_assert_eq(json_array_size(chk), 1);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(chk, 0), "name")), "multikueue");
    /* the applied object itself is left as it was */
    cr_assert_null(json_object_get(json_object_get(json_object_get(objects, "ClusterQueue//team-a"), "spec"),
                                   "admissionChecksStrategy"));
    json_decref(hub);
    json_decref(objects);
    gx_fleet_free(&f);
}

static char *all_yaml(const json_t *arr)
{
    char *all = calloc(1, 1);
    size_t n = 0, i;
    const json_t *o;
    json_array_foreach(arr, i, o) {
        char *y = gx_fleet_yaml(o);
        cr_assert(y);
        size_t k = strlen(y);
        cr_assert(k && y[k - 1] == '\n', "a file ends with a newline");
        all = realloc(all, n + k + 1);
        memcpy(all + n, y, k + 1);
        n += k;
        free(y);
    }
    return all;
}

Test(render, byte_identical_twice)
{
    gx_fleet f;
    parse_ok(FLEET, &f);
    json_t *o1 = objects_of(OBJECTS), *o2 = objects_of(OBJECTS);
    gx_err e;
    json_t *a = gx_fleet_render_kueue(&f, &f.clusters[0], o1, &e), *b = gx_fleet_render_kueue(&f, &f.clusters[0], o2, &e);
    cr_assert(a && b);
    char *ya = all_yaml(a), *yb = all_yaml(b);
    cr_assert_str_eq(ya, yb);
    cr_assert(strstr(ya, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: team-a\n"), "%s", ya);
    free(ya);
    free(yb);
    json_decref(a);
    json_decref(b);
    json_decref(o1);
    json_decref(o2);
    gx_fleet_free(&f);
}

/* Render FLEET's cluster `name` over OBJECTS with one object replaced or added. */
static json_t *render_with(const char *name, const char *extra, const char *extra2, gx_err *e)
{
    gx_fleet f;
    parse_ok(FLEET, &f);
    json_t *objects = objects_of(OBJECTS);
    if (extra) put(objects, Y(extra));
    if (extra2) put(objects, Y(extra2));
    json_t *r = gx_fleet_render_kueue(&f, gx_fleet_find(&f, name), objects, e);
    json_decref(objects);
    gx_fleet_free(&f);
    return r;
}

Test(render, references_resolve)
{
    gx_err e;
    /* a queue the Fleet offers that is not applied */
    gx_fleet f;
    parse_ok(FLEET, &f);
    json_t *objects = objects_of(OBJECTS);
    json_object_del(objects, "ClusterQueue//team-b");
    cr_assert_null(gx_fleet_render_kueue(&f, gx_fleet_find(&f, "gpu-b"), objects, &e));
    cr_assert_str_eq(e.field, "spec.clusters[1].clusterQueues[1]");
    cr_assert(strstr(e.msg, "team-b"), "%s", e.msg);
    /* a flavor a queue names that is not applied */
    json_object_del(objects, "ResourceFlavor//h100");
    cr_assert_null(gx_fleet_render_kueue(&f, gx_fleet_find(&f, "hub"), objects, &e));
    cr_assert_str_eq(e.field, "spec.clusters[0].clusterQueues[0]");
    cr_assert(strstr(e.msg, "ResourceFlavor h100"), "%s", e.msg);
    json_decref(objects);
    gx_fleet_free(&f);
    /* an AdmissionCheck a queue names that is not applied */
    const char *cq = "{apiVersion: kueue.x-k8s.io/v1beta2, kind: ClusterQueue, metadata: {name: team-b}, spec: {"
                     "admissionChecksStrategy: {admissionChecks: [{name: approval}]}, resourceGroups: []}}";
    cr_assert_null(render_with("gpu-b", cq, NULL, &e));
    cr_assert(strstr(e.msg, "AdmissionCheck approval"), "%s", e.msg);
    /* ... and when applied it goes along */
    json_t *r = render_with("gpu-b", cq, "{apiVersion: kueue.x-k8s.io/v1beta1, kind: AdmissionCheck, metadata: {name: approval},"
                                         " spec: {controllerName: gpuaas.dev/approval}}", &e);
    cr_assert(r, "%s", e.msg);
    cr_assert_str_eq(json_string_value(json_object_get(find(r, "AdmissionCheck", "approval"), "apiVersion")),
                     "kueue.x-k8s.io/v1beta2");
    json_decref(r);
    /* an implicit cohort (no Cohort object) is Kueue's own: no error, no object */
    r = render_with("gpu-b", "{apiVersion: kueue.x-k8s.io/v1beta2, kind: ClusterQueue, metadata: {name: team-b}, spec: {"
                             "cohortName: loose, resourceGroups: []}}", NULL, &e);
    cr_assert(r, "%s", e.msg);
    cr_assert_null(find(r, "Cohort", "loose"));
    json_decref(r);
}

/* Kueue's rules on MultiKueue that the CRDs cannot express, each checked. */
Test(render, multikueue_rules)
{
    gx_err e;
    /* one MultiKueue check per queue: the manager's plus one already named */
    const char *cq = "{apiVersion: kueue.x-k8s.io/v1beta2, kind: ClusterQueue, metadata: {name: team-a}, spec: {"
                     "admissionChecksStrategy: {admissionChecks: [{name: mk2}]}, resourceGroups: []}}";
    const char *mk2 = "{apiVersion: kueue.x-k8s.io/v1beta2, kind: AdmissionCheck, metadata: {name: mk2}, spec: {"
                      "controllerName: kueue.x-k8s.io/multikueue}}";
    cr_assert_null(render_with("hub", cq, mk2, &e));
    cr_assert(strstr(e.msg, "more than one MultiKueue"), "%s", e.msg);
    cr_assert_str_eq(e.field, "spec.clusters[0].clusterQueues[0]");
    /* never per flavor */
    const char *cqf = "{apiVersion: kueue.x-k8s.io/v1beta2, kind: ClusterQueue, metadata: {name: team-b}, spec: {"
                      "admissionChecksStrategy: {admissionChecks: [{name: mk2, onFlavors: [h100]}]}, resourceGroups: []}}";
    cr_assert_null(render_with("gpu-b", cqf, mk2, &e));
    cr_assert(strstr(e.msg, "per flavor"), "%s", e.msg);
    /* the name "multikueue" taken by another controller's check the queue uses */
    const char *cqn = "{apiVersion: kueue.x-k8s.io/v1beta2, kind: ClusterQueue, metadata: {name: team-a}, spec: {"
                      "admissionChecksStrategy: {admissionChecks: [{name: multikueue}]}, resourceGroups: []}}";
    cr_assert_null(render_with("hub", cqn, "{apiVersion: kueue.x-k8s.io/v1beta2, kind: AdmissionCheck, metadata: {name: multikueue},"
                                           " spec: {controllerName: gpuaas.dev/approval}}", &e));
    cr_assert(strstr(e.msg, "another controller"), "%s", e.msg);
    /* a MultiKueueConfig's clusters exist (a Fleet changed after parsing) and stay within maxItems */
    gx_fleet f;
    parse_ok(FLEET, &f);
    json_t *objects = objects_of(OBJECTS);
    gx_fleet_cluster *hub = &f.clusters[0];
    free(hub->workers[0]);
    hub->workers[0] = strdup("gone");
    cr_assert_null(gx_fleet_render_kueue(&f, hub, objects, &e));
    cr_assert_str_eq(e.field, "spec.clusters[0].multiKueue.workers[0]");
    char **many = calloc(21, sizeof *many);
    for (int i = 0; i < 21; i++) many[i] = strdup("gpu-b");
    free(hub->workers[0]);
    free(hub->workers);
    hub->workers = many;
    hub->nworkers = 21;
    cr_assert_null(gx_fleet_render_kueue(&f, hub, objects, &e));
    cr_assert(strstr(e.msg, "at most 20"), "%s", e.msg);
    json_decref(objects);
    gx_fleet_free(&f);
}

Test(render, v1beta1_fields_become_v1beta2)
{
    gx_err e;
    json_t *r = render_with("gpu-b", "{apiVersion: kueue.x-k8s.io/v1beta1, kind: ClusterQueue, metadata: {name: team-b}, spec: {"
                                     "cohort: lab, admissionChecks: [approval], flavorFungibility: {whenCanBorrow: Borrow},"
                                     " resourceGroups: []}}",
                            "{apiVersion: kueue.x-k8s.io/v1beta2, kind: AdmissionCheck, metadata: {name: approval},"
                            " spec: {controllerName: gpuaas.dev/approval}}", &e);
    cr_assert(r, "%s", e.msg);
    const json_t *spec = json_object_get(find(r, "ClusterQueue", "team-b"), "spec");
    cr_assert_str_eq(json_string_value(json_object_get(find(r, "ClusterQueue", "team-b"), "apiVersion")), "kueue.x-k8s.io/v1beta2");
    cr_assert_null(json_object_get(spec, "cohort"));
    cr_assert_str_eq(json_string_value(json_object_get(spec, "cohortName")), "lab");
    cr_assert_null(json_object_get(spec, "admissionChecks"));
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(json_object_get(spec,
                         "admissionChecksStrategy"), "admissionChecks"), 0), "name")), "approval");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(spec, "flavorFungibility"), "whenCanBorrow")),
                     "MayStopSearch");
    json_decref(r);
}

/* Apply objects of the engine's kinds into e in the daemon's order (ops/objects.c). */
static void apply_all(gx_engine *eng, const json_t *arr)
{
    static const char *const order[] = {"ResourceFlavor", "AdmissionCheck", "Cohort", "ClusterQueue", "LocalQueue",
                                        "WorkloadPriorityClass"};
    for (size_t k = 0; k < sizeof order / sizeof *order; k++) {
        size_t i;
        const json_t *o;
        json_array_foreach(arr, i, o) {
            if (strcmp(json_string_value(json_object_get(o, "kind")), order[k])) continue;
            gx_err e;
            cr_assert_eq(gx_engine_apply(eng, o, &e), 0, "%s: %s: %s", order[k], e.field, e.msg);
        }
    }
}

/* The engine's view of the queues named in c, by name. */
static json_t *views(const gx_engine *eng, const gx_fleet_cluster *c)
{
    json_t *cqs = gx_engine_cluster_queues(eng), *out = json_object();
    size_t i;
    json_t *v;
    json_array_foreach(cqs, i, v)
        for (size_t k = 0; k < c->ncluster_queues; k++)
            if (!strcmp(json_string_value(json_object_get(v, "name")), c->cluster_queues[k]))
                json_object_set(out, c->cluster_queues[k], v);
    json_decref(cqs);
    json_object_set_new(out, "localQueues", gx_engine_local_queues(eng, (const char *const *)c->namespaces, c->nnamespaces));
    return out;
}

/* The round trip the issue asks for: what a cluster is rendered, read back by the
 * engine, is the same queues as the original objects. */
Test(render, round_trip_through_the_engine)
{
    gx_fleet f;
    parse_ok(FLEET, &f);
    json_t *objects = objects_of(OBJECTS);
    gx_engine_opts eo = {0};
    gx_engine *orig = gx_engine_new(&eo);
    json_t *arr = json_array();
    const char *k;
    json_t *m;
    json_object_foreach(objects, k, m) {
        json_t *c = json_deep_copy(m);
        json_object_del(c, "status");
        json_object_del(json_object_get(c, "metadata"), "creationTimestamp");
        json_array_append_new(arr, c);
    }
    apply_all(orig, arr);
    json_decref(arr);
    for (size_t i = 0; i < f.n; i++) {
        const gx_fleet_cluster *c = &f.clusters[i];
        gx_err e;
        json_t *r = gx_fleet_render_kueue(&f, c, objects, &e);
        cr_assert(r, "%s", e.msg);
        gx_engine *back = gx_engine_new(&eo);
        apply_all(back, r);
        json_t *want = views(orig, c), *got = views(back, c);
        char *ws = json_dumps(want, JSON_SORT_KEYS), *gs = json_dumps(got, JSON_SORT_KEYS);
        cr_assert_str_eq(gs, ws, "cluster %s", c->name);
        cr_assert_eq(json_object_size(got), c->ncluster_queues + 1);
        free(ws);
        free(gs);
        json_decref(want);
        json_decref(got);
        gx_engine_free(back);
        json_decref(r);
    }
    gx_engine_free(orig);
    json_decref(objects);
    gx_fleet_free(&f);
}

Test(render, paths)
{
    gx_fleet f;
    parse_ok(FLEET, &f);
    char p[256];
    cr_assert_eq(gx_fleet_path(&f.clusters[0], "team-a", "LocalQueue", "main", p, sizeof p), 0);
    cr_assert_str_eq(p, "clusters/hub/team-a/localqueue-main.yaml");
    cr_assert_eq(gx_fleet_path(&f.clusters[1], NULL, "ClusterQueue", "team-a", p, sizeof p), 0);
    cr_assert_str_eq(p, "b/cluster/clusterqueue-team-a.yaml");
    cr_assert_eq(gx_fleet_path(&f.clusters[1], "", "Namespace", "x", p, sizeof p), 0);
    cr_assert_str_eq(p, "b/cluster/namespace-x.yaml");
    cr_assert_eq(gx_fleet_path(&f.clusters[0], "team-a", "Job", "a-very-long-name", p, 20), -1, "does not fit");
    cr_assert_eq(gx_fleet_path(&f.clusters[0], "..", "Job", "x", p, sizeof p), -1, "never outside the folder");
    cr_assert_eq(gx_fleet_path(&f.clusters[0], "ns", "Job", "a/b", p, sizeof p), -1);
    cr_assert_eq(gx_fleet_path(&f.clusters[0], "ns", "Job", NULL, p, sizeof p), -1);
    gx_fleet_free(&f);
}
