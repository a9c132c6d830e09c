/* fleet: one gpuaas on a hub serving a fleet of Kubernetes clusters (docs/fleet.md).
 * We build no cluster manager: each cluster runs Kubernetes + Kueue (+ MultiKueue) and
 * the NVIDIA GPU Operator. The hub renders what users ask for as Kubernetes objects,
 * commits them to the cluster's folder of a git repository (Argo CD applies them there),
 * and reads status back from the cluster's API server.
 * Owns: the Fleet object's shape (this header), the pure renderers (render_*.c), the
 * git publisher (gitops.c, publisher.c), the status read-back (kubeconfig.c, kubewatch.c,
 * status.c) and the `gpuaas render` command (render_main.c).
 * Must not: decide admission (the clusters' Kueue does) or reach into the daemon: ops/
 * drives this layer, never the other way round. */
#ifndef GX_FLEET_H
#define GX_FLEET_H
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "lib/err.h"

#define GX_FLEET_CLUSTERS_MAX 64
#define GX_FLEET_API_VERSION "gpuaas.dev/v1alpha1"
/* The annotation a request names its target cluster with (REST, CLI --cluster, portal). */
#define GX_FLEET_CLUSTER_ANNOTATION "gpuaas.dev/cluster"

/* Where a cluster's objects go in git. */
typedef struct gx_fleet_git {
    char *repo;              /* a local path (a repository, bare or not) or a remote URL */
    char *branch;            /* default "main" */
    char *folder;            /* default "clusters/<cluster>" */
    char *credentials_file;  /* remote over HTTPS: one line "username:token"; NULL: none */
    char *author_name;       /* the committer (the hub); default "gpuaas" */
    char *author_email;      /* default "gpuaas@localhost" */
} gx_fleet_git;

/* One GPU node's operator labels: which device-plugin config and mig-parted config the
 * GPU Operator gives it (nvidia.com/device-plugin.config, nvidia.com/mig.config). */
typedef struct gx_fleet_node {
    char *name;
    char *device_plugin_config;   /* a key of gpuOperator.devicePlugin, NULL: the default */
    char *mig_config;             /* a name in mig-parted's mig-configs, NULL: none */
} gx_fleet_node;

typedef struct gx_fleet_cluster {
    char *name;                   /* DNS-1123 label */
    json_t *labels;               /* {k: v}, never NULL (may be empty) */
    gx_fleet_git git;             /* the Fleet's spec.git overlaid by the cluster's own */
    char *kubeconfig;             /* a kubeconfig file for reading status back; NULL: none */
    char *kube_context;           /* its context; NULL: current-context */
    char **namespaces;            /* the namespaces it offers */
    size_t nnamespaces;
    char **cluster_queues;        /* the ClusterQueues it offers (names of applied ones) */
    size_t ncluster_queues;
    /* gpuOperator: the sharing mode its GPUs are run in, NVIDIA's own formats */
    json_t *device_plugin;        /* {configKey: device-plugin config document}, NULL: none */
    char *device_plugin_default;  /* the default key, NULL: the only one */
    json_t *mig_parted;           /* the mig-parted document (version, mig-configs), NULL: none */
    gx_fleet_node *nodes;
    size_t nnodes;
    /* multiKueue.workers: non-empty makes this cluster a MultiKueue manager that
     * dispatches to these clusters (names of other clusters of the fleet) */
    char **workers;
    size_t nworkers;
} gx_fleet_cluster;

typedef struct gx_fleet {
    char *name;                   /* metadata.name of the Fleet object */
    gx_fleet_cluster *clusters;   /* in the order written */
    size_t n;
} gx_fleet;

/* ---- the Fleet object (fleet.c) --------------------------------------------------------- */

/* Read and judge a Fleet document (apiVersion gpuaas.dev/v1alpha1, kind Fleet). Paths
 * (git.repo when local, credentialsFile, kubeconfig) are taken as written: the caller
 * resolves them against the config file's folder first. err names the field
 * ("spec.clusters[1].multiKueue.workers[0]"). */
int gx_fleet_parse(const json_t *doc, gx_fleet *out, gx_err *err);
void gx_fleet_free(gx_fleet *f);
const gx_fleet_cluster *gx_fleet_find(const gx_fleet *f, const char *name);

/* ---- rendering (render_*.c): pure, JSON in, JSON out, deterministic ------------------ */

/* The Kueue objects (kueue.x-k8s.io/v1beta2) cluster c needs, from the applied objects
 * ("Kind/ns/name" -> manifest, as gx_d_objects()): its ClusterQueues, the
 * ResourceFlavors, Cohorts and WorkloadPriorityClasses they use, the LocalQueues of its
 * namespaces that point at them; plus, for a MultiKueue manager, the AdmissionCheck
 * (controllerName kueue.x-k8s.io/multikueue), MultiKueueConfig and one MultiKueueCluster
 * per worker, the manager's ClusterQueues naming the check. A new array, sorted by
 * kind, namespace and name; NULL with err on a reference that does not resolve. */
json_t *gx_fleet_render_kueue(const gx_fleet *f, const gx_fleet_cluster *c, const json_t *objects, gx_err *err);
/* The GPU Operator pieces of c: the device-plugin ConfigMap (time-slicing, MPS), the
 * mig-parted ConfigMap, and the node labels selecting them (Node objects with only
 * metadata.name and labels, for server-side apply). A new array, sorted. */
json_t *gx_fleet_render_gpu(const gx_fleet_cluster *c, gx_err *err);
/* A KServe InferenceService (serving.kserve.io/v1beta1, vLLM runtime) for a Model with
 * spec.workload, with Kueue's queue-name label; NULL with err when it has no workload. */
json_t *gx_fleet_render_model(const gx_fleet_cluster *c, const json_t *model, gx_err *err);
/* The batch/v1 Job a request (a Job manifest as submitted, its target annotation
 * included) becomes on cluster c: Kueue's queue-name label, suspend: true, resource
 * names of c's sharing mode (nvidia.com/gpu -> what c's device plugin offers), and
 * spec.managedBy: kueue.x-k8s.io/multikueue when c is a MultiKueue manager; labels
 * gpuaas.dev/requested-by: user. Never ttlSecondsAfterFinished (docs/fleet.md: Argo
 * CD's self-heal would run it again). NULL with err naming the field. */
json_t *gx_fleet_render_job(const gx_fleet *f, const gx_fleet_cluster *c, const json_t *request, const char *user,
                            gx_err *err);
/* Where an object of c goes in its repository: "<folder>/<namespace>/<kind>-<name>.yaml"
 * (kind lower-case; a cluster-scoped object: "<folder>/cluster/<kind>-<name>.yaml").
 * -1 when it does not fit n. */
int gx_fleet_path(const gx_fleet_cluster *c, const char *ns, const char *kind, const char *name, char *out, size_t n);
/* An object as the file git holds: YAML, keys in the order built, a trailing newline,
 * byte for byte the same for the same object (malloc'd). */
char *gx_fleet_yaml(const json_t *obj);

/* ---- the git publisher (gitops.c: libgit2, blocking) ----------------------------------- */

typedef struct gx_git_change {
    const char *path;       /* relative to the repository's root */
    const char *content;    /* NULL: remove the file */
} gx_git_change;

/* Make one commit of changes on g->branch in the working clone at workdir (cloned or
 * created from g->repo on first use, fetched and fast-forwarded before each commit), by
 * author (name, email) with message, and push it when g->repo is a remote or a
 * repository other than workdir. A change that changes nothing is no commit (commit_out
 * gets the current head). A rejected push (someone else pushed) is fetched, rebased by
 * replaying these changes, and pushed again, up to 3 times. Blocking: never on the
 * loop (publisher.c runs it on its thread). commit_out: 40 hex + NUL. */
int gx_git_commit_push(const gx_fleet_git *g, const char *workdir, const gx_git_change *changes, size_t n,
                       const char *author_name, const char *author_email, const char *message, char commit_out[41],
                       gx_err *err);

#endif
