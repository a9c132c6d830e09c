/* fleet/render_model: a Model with spec.workload (docs/gateway.md) as the KServe
 * InferenceService (serving.kserve.io/v1beta1) a cluster of the fleet runs it as: KServe's
 * Hugging Face runtime, whose default backend for text generation is vLLM, with Kueue's
 * queue-name label on the InferenceService and on its predictor's pods.
 * Owns: gx_fleet_render_model (fleet.h): the workload's `vllm serve MODEL [flags]`
 * command read into the runtime's --model_name/--model_id and the vLLM flags that still
 * mean something there; replicas; resources in the cluster's names (render_res.h).
 * Must not: do I/O, or render a Model whose server is somewhere else (url backends). */
#include <stdio.h>
#include <string.h>
#include "fleet/fleet.h"
#include "fleet/render_res.h"
#include "lib/k8sname.h"

#define QUEUE_LABEL "kueue.x-k8s.io/queue-name"

/* {share} of the workload's command, as the gateway fills it locally: the count of
 * nvidia.com/gpu, else of the first other device under nvidia.com/ (a MIG profile). */
static void share_of(const json_t *res, char *out, size_t n)
{
    const char *k;
    json_t *v, *dev = json_object_get(res, "nvidia.com/gpu");
    json_object_foreach((json_t *)res, k, v)
        if (!dev && !strncmp(k, "nvidia.com/", 11) && strcmp(k, "nvidia.com/gpumem") && strcmp(k, "nvidia.com/gpucores"))
            dev = v;
    snprintf(out, n, "%s", "1");
    if (json_is_string(dev)) snprintf(out, n, "%s", json_string_value(dev));
    else if (json_is_integer(dev)) snprintf(out, n, "%lld", (long long)json_integer_value(dev));
}

/* s with {model} and {share} filled in (into out); -1 when it holds a placeholder that
 * means nothing on a cluster ({port}, {bindir}: KServe picks the port, and the hub's
 * binaries are not there). */
static int fill(const char *s, const char *model, const char *share, char *out, size_t n)
{
    size_t o = 0;
    while (*s && o + 1 < n) {
        const char *rep = NULL;
        size_t skip = 0;
        if (!strncmp(s, "{model}", 7)) rep = model, skip = 7;
        else if (!strncmp(s, "{share}", 7)) rep = share, skip = 7;
        else if (!strncmp(s, "{port}", 6) || !strncmp(s, "{bindir}", 8)) return -1;
        if (rep) {
            o += (size_t)snprintf(out + o, n - o, "%s", rep);
            s += skip;
        } else {
            out[o++] = *s++;
        }
    }
    if (*s || o >= n) return -1;
    out[o] = 0;
    return 0;
}

/* A flag the runtime sets itself, with its value as the next word or after '='. */
static int runtime_flag(const char *a, int *takes_next)
{
    static const char *const flags[] = {"--port", "--host", "--served-model-name", "--model", NULL};
    for (int i = 0; flags[i]; i++) {
        size_t n = strlen(flags[i]);
        if (!strncmp(a, flags[i], n) && (!a[n] || a[n] == '=')) {
            *takes_next = !a[n];
            return 1;
        }
    }
    return 0;
}

/* The runtime's args from `vllm serve MODEL [flags]`: --model_name (the first served
 * name), --model_id (MODEL), then the vLLM flags, which the runtime hands to its vLLM
 * engine, less those it sets itself. */
static json_t *args_of(const json_t *cmd, const char *served, const char *share, gx_err *err)
{
    const char *a0 = json_string_value(json_array_get(cmd, 0)), *a1 = json_string_value(json_array_get(cmd, 1));
    const char *id = json_string_value(json_array_get(cmd, 2));
    const char *base = a0 ? strrchr(a0, '/') : NULL;
    base = base ? base + 1 : a0;
    if (!base || strcmp(base, "vllm") || !a1 || strcmp(a1, "serve") || !id || id[0] == '-' || strchr(id, '{'))
        return gx_errf(err, 422, "spec.workload.command", "a cluster runs the model with KServe's Hugging Face runtime "
                       "(vLLM backend): the command must be vllm serve MODEL [vLLM flags]"), NULL;
    char buf[4096 + 64];
    json_t *args = json_array();
    snprintf(buf, sizeof buf, "--model_name=%s", served);
    json_array_append_new(args, json_string(buf));
    snprintf(buf, sizeof buf, "--model_id=%s", id);
    json_array_append_new(args, json_string(buf));
    for (size_t i = 3; i < json_array_size(cmd); i++) {
        const char *a = json_string_value(json_array_get(cmd, i));
        int next = 0;
        if (a && runtime_flag(a, &next)) {
            i += (size_t)next;
            continue;
        }
        if (!a || fill(a, served, share, buf, sizeof buf)) {
            char f[64];
            snprintf(f, sizeof f, "spec.workload.command[%zu]", i);
            json_decref(args);
            return gx_errf(err, 422, f, "%s means nothing on a cluster (KServe sets the port; the hub's programs "
                           "are not there)", a ? a : "a non-string"), NULL;
        }
        json_array_append_new(args, json_string(buf));
    }
    return args;
}

/* Quantities as strings, as the API server writes them back (git diffs stay quiet). */
static json_t *quantities(json_t *m)
{
    const char *k;
    json_t *v;
    json_object_foreach(m, k, v) {
        char q[64];
        if (json_is_integer(v)) {
            snprintf(q, sizeof q, "%lld", (long long)json_integer_value(v));
            json_object_set_new(m, k, json_string(q));
        } else if (json_is_real(v)) {
            snprintf(q, sizeof q, "%g", json_real_value(v));
            json_object_set_new(m, k, json_string(q));
        }
    }
    return m;
}

json_t *gx_fleet_render_model(const gx_fleet_cluster *c, const json_t *model, gx_err *err)
{
    const char *name = json_string_value(json_object_get(json_object_get(model, "metadata"), "name"));
    if (!name || !gx_k8s_is_label(name) || name[0] < 'a' || name[0] > 'z')
        return gx_errf(err, 422, "metadata.name", "an InferenceService's name (the Model's) starts with a letter and "
                       "is a DNS-1123 label: lower case letters, digits and '-', at most 63"), NULL;
    const json_t *spec = json_object_get(model, "spec");
    const json_t *w = json_object_get(spec, "workload");
    if (!json_is_object(w))
        return gx_errf(err, 422, "spec.workload", "model %s has no spec.workload: only a server gpuaas runs can run "
                       "on cluster %s (a url backend is served where it is)", name, c->name), NULL;
    const char *ns = json_object_get(w, "namespace") ? json_string_value(json_object_get(w, "namespace")) : "default";
    if (!gx_fleet_offers_ns(c, ns))
        return gx_errf(err, 422, "spec.workload.namespace", "cluster %s offers no namespace %s", c->name,
                       ns ? ns : "(not a string)"), NULL;
    const char *q = json_string_value(json_object_get(w, "queue"));
    if (!q || !gx_k8s_is_label(q)) return gx_errf(err, 422, "spec.workload.queue", "the LocalQueue to run in (a name)"), NULL;
    const json_t *rep = json_object_get(w, "replicas"), *minr = json_object_get(w, "minReplicas");
    json_int_t replicas = rep ? json_integer_value(rep) : 1;
    json_int_t min = minr ? json_integer_value(minr) : replicas;
    if (replicas < 1 || min < 0 || min > replicas)
        return gx_errf(err, 422, rep ? "spec.workload.replicas" : "spec.workload.minReplicas",
                       "replicas from 1, minReplicas from 0 to replicas"), NULL;
    const char *served = json_string_value(json_array_get(json_object_get(spec, "servedNames"), 0));
    char share[64];
    const json_t *res = json_object_get(w, "resources");
    share_of(res, share, sizeof share);
    json_t *args = args_of(json_object_get(w, "command"), served ? served : name, share, err);
    if (!args) return NULL;
    json_t *mapped = gx_fleet_map_resources(c, res, "spec.workload.resources", err);
    if (!mapped) {
        json_decref(args);
        return NULL;
    }
    quantities(mapped);
    /* a GPU (an extended resource) is asked for in limits, and requests must equal them */
    json_t *resources = json_pack("{s:o,s:o}", "requests", json_deep_copy(mapped), "limits", mapped);
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s}},s:{s:{s:I,s:I,s:{s:s},s:{s:{s:s},s:o,s:o}}}}",
        "apiVersion", "serving.kserve.io/v1beta1", "kind", "InferenceService",
        "metadata", "name", name, "namespace", ns, "labels", QUEUE_LABEL, q, "gpuaas.dev/model", name,
        "spec", "predictor", "minReplicas", min, "maxReplicas", replicas, "labels", QUEUE_LABEL, q,
        "model", "modelFormat", "name", "huggingface", "args", args, "resources", resources);
}
