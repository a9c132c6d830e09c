/* wlname: naming a submitted workload as Kubernetes would (see wlname.h). */
#include <sodium.h>
#include <string.h>
#include "ops/wlname.h"
#include "lib/k8sname.h"

#define GEN_TRIES 8   /* 27^5 names per prefix: a collision twice running means a flood */

/* Is name, with kind's rule, a valid workload name? Fills err for `field`, echoing `shown`
 * (the value the person wrote: the name, or the generateName it came from). */
static int check_name(const char *kind, const char *name, const char *field, const char *shown, gx_err *err)
{
    char buf[GX_K8S_PROBLEM_MAX];
    const char *p = kind && !strcmp(kind, "Workload")
                        ? gx_k8s_subdomain_problem(name, GX_K8S_SUBDOMAIN_MAX, buf, sizeof buf)
                        : gx_k8s_label_problem(name, GX_K8S_LABEL_MAX, buf, sizeof buf);
    return p ? gx_k8s_invalid(err, field, shown, p) : 0;
}

static uint32_t draw(uint32_t upper) { return randombytes_uniform(upper); }

json_t *gx_d_name_workload(gx_daemon *d, const json_t *manifest, gx_err *err)
{
    const char *kind = json_string_value(json_object_get(manifest, "kind"));
    const json_t *md = json_object_get(manifest, "metadata");
    const char *ns = json_string_value(json_object_get(md, "namespace")) ?: "default";
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *gen = json_string_value(json_object_get(md, "generateName"));
    gx_wlkey k;
    if (gx_k8s_check_label(ns, GX_K8S_LABEL_MAX, "metadata.namespace", err)) return NULL;
    if (name && *name) {
        if (check_name(kind, name, "metadata.name", name, err) || gx_wlkey_make(&k, ns, name, err)) return NULL;
        return json_deep_copy(manifest);
    }
    if (!gen || !*gen) {
        gx_errf(err, 422, "metadata.name", "Required value: name or generateName is required");
        return NULL;
    }
    char made[GX_K8S_LABEL_MAX + 1];
    for (int i = 0; i < GEN_TRIES; i++) {
        gx_k8s_generate_name(gen, draw, made, sizeof made);
        if (check_name(kind, made, "metadata.generateName", gen, err) || gx_wlkey_make(&k, ns, made, err)) return NULL;
        if (gx_exec_get(d->exec, k.key)) continue;   /* taken: draw again, as Kubernetes retries */
        json_t *m = json_deep_copy(manifest);
        json_object_set_new(json_object_get(m, "metadata"), "name", json_string(made));
        return m;
    }
    gx_errf(err, 409, "metadata.generateName", "no free name for generateName \"%.100s\" in namespace %s after %d tries",
            gen, ns, GEN_TRIES);
    return NULL;
}
