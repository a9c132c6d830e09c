/* engine_place: whole-GPU placement of admitted workloads on gpuaas Nodes.
 * Owns: parsing gpuaas.dev/v1alpha1 Node objects, choosing a node and concrete GPUs
 * for each pod (nvidia.com/gpu count) among nodes whose labels match the assigned
 * flavors' nodeLabels and the pod's nodeSelector, and whose NoSchedule/NoExecute taints
 * the pod (plus the flavor's tolerations) tolerates; releasing them.
 * Must not: look at quota. This is the narrow seam where GPU sharing and smarter
 * placement (src/core/place*, gx_place_) plug in: gx_engine_place_try() and
 * gx_engine_place_release() are the only entry points the scheduler uses.
 * With no Node at all, every workload "fits" (admission by quota alone). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/engine_int.h"
#include "core/quantity.h"
#include "core/share_place.h"

#define GPU_RES "nvidia.com/gpu"

void gx_engine_place_node_free(gx_node *n)
{
    free(n->name);
    json_decref(n->manifest);
    gx_engine_obj_labels_free(&n->labels);
    gx_engine_obj_taints_free(n->taints, n->n_taints);
    for (int i = 0; i < n->n_gpus; i++) {
        free(n->gpus[i].uuid);
        free(n->gpus[i].model);
        free(n->gpus[i].user_wl);
        free(n->gpus[i].user_pod);
    }
    free(n->gpus);
    gx_share_engine_node_free(n);
    memset(n, 0, sizeof *n);
}

void gx_engine_gpu_uuid(const char *node, int idx, char *out, size_t n)
{
    uint64_t h1 = 1469598103934665603ULL, h2 = 0x9e3779b97f4a7c15ULL;
    for (const char *p = node; *p; p++) {
        h1 = (h1 ^ (unsigned char)*p) * 1099511628211ULL;
        h2 = (h2 ^ (unsigned char)*p) * 0x100000001b3ULL + 0x7f4a7c15;
    }
    h1 = (h1 ^ (uint64_t)idx) * 1099511628211ULL;
    h2 = (h2 ^ (uint64_t)(idx * 31 + 7)) * 0x100000001b3ULL;
    snprintf(out, n, "GPU-%08x-%04x-%04x-%04x-%012llx", (unsigned)(h1 >> 32), (unsigned)(h1 >> 16) & 0xffff,
             (unsigned)h1 & 0xffff, (unsigned)(h2 >> 48), (unsigned long long)(h2 & 0xffffffffffffULL));
}

static char *derive_uuid(const char *node, int idx)
{
    char buf[64];
    gx_engine_gpu_uuid(node, idx, buf, sizeof buf);
    return gx_xstrdup(buf);
}

static int parse_gpu(gx_gpu *g, const json_t *j, const char *f, gx_err *err)
{
    const json_t *m = json_object_get(j, "model"), *mem = json_object_get(j, "memory");
    g->model = gx_xstrdup(json_is_string(m) ? json_string_value(m) : "GPU");
    char h[160];
    snprintf(h, sizeof h, "%s.memory", f);
    if (mem && gx_quantity_from_json(mem, &g->memory, h, err) < 0) return -1;
    g->memory /= 1000;
    return 0;
}

int gx_engine_place_parse_node(const json_t *obj, gx_node *n, gx_err *err)
{
    memset(n, 0, sizeof *n);
    const json_t *md = json_object_get(obj, "metadata"), *spec = json_object_get(obj, "spec");
    const json_t *nm = json_object_get(md, "name");
    if (!json_is_string(nm) || !*json_string_value(nm)) return gx_errf(err, 422, "metadata.name", "metadata.name is required");
    n->name = gx_xstrdup(json_string_value(nm));
    if (gx_engine_obj_parse_labels(json_object_get(md, "labels"), &n->labels, "metadata.labels", err) < 0) goto bad;
    const json_t *cpu = json_object_get(spec, "cpu"), *mem = json_object_get(spec, "memory");
    if (cpu && gx_quantity_from_json(cpu, &n->cpu, "spec.cpu", err) < 0) goto bad;
    if (mem && gx_quantity_from_json(mem, &n->memory, "spec.memory", err) < 0) goto bad;
    const json_t *taints = json_object_get(spec, "taints");
    if (taints && !json_is_array(taints)) { gx_errf(err, 422, "spec.taints", "must be a list of {key, value, effect}"); goto bad; }
    n->taints = gx_xcalloc(json_array_size(taints) + 1, sizeof *n->taints);
    for (size_t i = 0; i < json_array_size(taints); i++) {
        const json_t *t = json_array_get(taints, i);
        const json_t *k = json_object_get(t, "key"), *v = json_object_get(t, "value"), *ef = json_object_get(t, "effect");
        const char *eff = json_is_string(ef) ? json_string_value(ef) : "";
        if (!json_is_string(k) || (strcmp(eff, "NoSchedule") && strcmp(eff, "PreferNoSchedule") && strcmp(eff, "NoExecute"))) {
            char f[64];
            snprintf(f, sizeof f, "spec.taints[%zu]", i);
            gx_errf(err, 422, f, "a taint needs a key and an effect NoSchedule, PreferNoSchedule or NoExecute");
            goto bad;
        }
        gx_taint *o = &n->taints[n->n_taints++];
        o->key = gx_xstrdup(json_string_value(k));
        o->value = gx_xstrdup(json_is_string(v) ? json_string_value(v) : "");
        o->effect = gx_xstrdup(eff);
    }
    const json_t *gpus = json_object_get(spec, "gpus");
    if (json_is_array(gpus)) {
        n->gpus = gx_xcalloc(json_array_size(gpus) + 1, sizeof *n->gpus);
        for (size_t i = 0; i < json_array_size(gpus); i++) {
            const json_t *g = json_array_get(gpus, i);
            char f[64];
            snprintf(f, sizeof f, "spec.gpus[%zu]", i);
            if (!json_is_object(g)) { gx_errf(err, 422, f, "a GPU is {model, memory, uuid}"); goto bad; }
            gx_gpu *o = &n->gpus[n->n_gpus++];
            if (parse_gpu(o, g, f, err) < 0) goto bad;
            const json_t *u = json_object_get(g, "uuid");
            o->uuid = json_is_string(u) ? gx_xstrdup(json_string_value(u)) : derive_uuid(n->name, (int)i);
        }
    } else if (json_is_object(gpus)) {
        const json_t *c = json_object_get(gpus, "count");
        if (!json_is_integer(c) || json_integer_value(c) < 0 || json_integer_value(c) > 4096) {
            gx_errf(err, 422, "spec.gpus.count", "count must be a whole number from 0 to 4096");
            goto bad;
        }
        int cnt = (int)json_integer_value(c);
        n->gpus = gx_xcalloc((size_t)cnt + 1, sizeof *n->gpus);
        for (int i = 0; i < cnt; i++) {
            gx_gpu *o = &n->gpus[n->n_gpus++];
            if (parse_gpu(o, gpus, "spec.gpus", err) < 0) goto bad;
            o->uuid = derive_uuid(n->name, i);
        }
    } else if (gpus && !json_is_null(gpus)) {
        gx_errf(err, 422, "spec.gpus", "gpus must be a list of {model, memory, uuid} or {model, memory, count}");
        goto bad;
    }
    if (gx_share_engine_node(n, obj, err) < 0) goto bad;   /* shared GPUs: core/share_place.c */
    n->manifest = json_deep_copy(obj);
    return 0;
bad:
    gx_engine_place_node_free(n);
    return -1;
}

static int node_fits_pod(const gx_engine *e, const gx_node *n, const gx_wl *w, int ps)
{
    const gx_podset *p = &w->s.ps[ps];
    for (int i = 0; i < p->node_selector.n; i++) {
        const char *v = gx_engine_obj_label(&n->labels, p->node_selector.k[i]);
        if (!v || strcmp(v, p->node_selector.v[i])) return 0;
    }
    if (!gx_engine_obj_affinity_match(p->affinity, &n->labels, NULL)) return 0;
    for (int r = 0; r < p->nreq; r++) {
        const gx_rf *rf = &e->rfs[w->adm[ps].flv[r]];
        for (int i = 0; i < rf->node_labels.n; i++) {
            const char *v = gx_engine_obj_label(&n->labels, rf->node_labels.k[i]);
            if (!v || strcmp(v, rf->node_labels.v[i])) return 0;
        }
    }
    for (int t = 0; t < n->n_taints; t++) {
        if (gx_engine_obj_tolerates(&n->taints[t], p->tols, p->n_tols)) continue;
        int ok = 0;
        for (int r = 0; r < p->nreq && !ok; r++) {
            const gx_rf *rf = &e->rfs[w->adm[ps].flv[r]];
            ok = gx_engine_obj_tolerates(&n->taints[t], rf->tols, rf->n_tols);
        }
        if (!ok) return 0;
    }
    return 1;
}

void gx_engine_gpu_add_user(gx_gpu *g, int wi, int pod)
{
    if (g->n_users == g->cap_users) {
        g->cap_users = g->cap_users ? g->cap_users * 2 : 2;
        g->user_wl = gx_xreallocarray(g->user_wl, (size_t)g->cap_users, sizeof(int));
        g->user_pod = gx_xreallocarray(g->user_pod, (size_t)g->cap_users, sizeof(int));
    }
    g->user_wl[g->n_users] = wi;
    g->user_pod[g->n_users++] = pod;
}

/* Place every pod of w (w->adm set). Best fit: the matching node with the fewest free
 * GPUs that still holds the pod, ties to the earlier node. Returns 1 when all pods fit
 * (and, with commit, records the placement), 0 with a reason in why. */
int gx_engine_place_try(gx_engine *e, gx_wl *w, int commit, char *why, size_t why_n)
{
    if (!e->n_nodes) return 1;
    if (gx_share_engine_active(e)) return gx_share_engine_try(e, w, commit, why, why_n, node_fits_pod);
    int gpu_res = gx_engine_util_lookup(&e->res, GPU_RES);
    int *freec = gx_xcalloc((size_t)e->n_nodes, sizeof(int));
    for (int n = 0; n < e->n_nodes; n++)
        for (int g = 0; g < e->nodes[n].n_gpus; g++) freec[n] += e->nodes[n].gpus[g].n_users == 0;
    int64_t pods = gx_engine_wl_pods(w);
    int *pl = gx_xmalloc((size_t)(pods ? pods : 1) * sizeof(int));
    int pod = 0, ok = 1;
    for (int ps = 0; ps < w->s.nps && ok; ps++) {
        int64_t need = 0;
        for (int r = 0; r < w->s.ps[ps].nreq; r++)
            if (w->s.ps[ps].res[r] == gpu_res) need = (w->s.ps[ps].req[r] + 999) / 1000;
        for (int k = 0; k < w->adm[ps].count; k++, pod++) {
            int best = -1;
            for (int n = 0; n < e->n_nodes; n++) {
                if (freec[n] < need || !node_fits_pod(e, &e->nodes[n], w, ps)) continue;
                if (best < 0 || freec[n] < freec[best]) best = n;
            }
            if (best < 0) {
                snprintf(why, why_n, "quota fits but no node has %lld free %s%s", (long long)need, GPU_RES,
                         need == 0 ? " that matches the pod's flavor, node selector and tolerations" : "");
                ok = 0;
                break;
            }
            freec[best] -= (int)need;
            pl[pod] = best;
        }
    }
    if (ok && commit) {
        int wi = (int)(w - e->wls);
        free(w->pl_node); free(w->pl_dev); free(w->pl_devpod);
        w->pl_node = pl;
        pl = NULL;
        w->n_pl_dev = 0;
        w->pl_dev = NULL;
        w->pl_devpod = NULL;
        pod = 0;
        for (int ps = 0; ps < w->s.nps; ps++) {
            int64_t need = 0;
            for (int r = 0; r < w->s.ps[ps].nreq; r++)
                if (w->s.ps[ps].res[r] == gpu_res) need = (w->s.ps[ps].req[r] + 999) / 1000;
            for (int k = 0; k < w->adm[ps].count; k++, pod++) {
                gx_node *nd = &e->nodes[w->pl_node[pod]];
                int64_t left = need;
                for (int g = 0; g < nd->n_gpus && left > 0; g++) {
                    if (nd->gpus[g].n_users) continue;
                    gx_engine_gpu_add_user(&nd->gpus[g], wi, pod);
                    w->pl_dev = gx_xreallocarray(w->pl_dev, (size_t)(w->n_pl_dev + 1) * 2, sizeof(int));
                    w->pl_devpod = gx_xreallocarray(w->pl_devpod, (size_t)(w->n_pl_dev + 1), sizeof(int));
                    w->pl_dev[2 * w->n_pl_dev] = w->pl_node[pod];
                    w->pl_dev[2 * w->n_pl_dev + 1] = g;
                    w->pl_devpod[w->n_pl_dev++] = pod;
                    left--;
                }
            }
        }
    }
    free(pl);
    free(freec);
    return ok;
}

void gx_engine_place_release(gx_engine *e, gx_wl *w)
{
    gx_share_engine_release(e, w);
    int wi = (int)(w - e->wls);
    for (int d = 0; d < w->n_pl_dev; d++) {
        int n = w->pl_dev[2 * d], g = w->pl_dev[2 * d + 1];
        if (n >= e->n_nodes || g >= e->nodes[n].n_gpus) continue;
        gx_gpu *gp = &e->nodes[n].gpus[g];
        for (int u = 0; u < gp->n_users; u++)
            if (gp->user_wl[u] == wi) {
                gp->user_wl[u] = gp->user_wl[--gp->n_users];
                gp->user_pod[u] = gp->user_pod[gp->n_users];
                u--;
            }
    }
    free(w->pl_node); free(w->pl_dev); free(w->pl_devpod);
    w->pl_node = NULL;
    w->pl_dev = NULL;
    w->pl_devpod = NULL;
    w->n_pl_dev = 0;
}

int gx_engine_place_devs(const gx_engine *e, const gx_wl *w, int pod, gx_engine_dev *out, int max)
{
    if (!w->pl_node || pod < 0 || pod >= gx_engine_wl_pods(w)) return -1;
    int c = gx_share_engine_devs(e, w, pod, out, max);   /* shared node: MIG UUIDs, replicas, shares */
    if (c >= 0) return c;
    const gx_node *n = &e->nodes[w->pl_node[pod]];
    c = 0;
    for (int d = 0; d < w->n_pl_dev; d++) {
        if (w->pl_devpod[d] != pod) continue;
        const gx_gpu *g = &e->nodes[w->pl_dev[2 * d]].gpus[w->pl_dev[2 * d + 1]];
        if (c < max)
            out[c] = (gx_engine_dev){ .uuid = g->uuid, .gpu_uuid = g->uuid, .model = g->model, .node = n->name,
                                      .index = w->pl_dev[2 * d + 1], .mig = -1, .replica = -1 };
        c++;
    }
    return c;
}

/* The view is built from gx_engine_place_devs, so the typed answer and the JSON agree. */
json_t *gx_engine_place_view(const gx_engine *e, const gx_wl *w)
{
    json_t *a = json_array();
    if (!w->pl_node) return a;
    int64_t pods = gx_engine_wl_pods(w);
    for (int p = 0; p < pods; p++) {
        int c = gx_engine_place_devs(e, w, p, NULL, 0);
        gx_engine_dev *dv = gx_xcalloc((size_t)(c > 0 ? c : 0), sizeof *dv);
        c = gx_engine_place_devs(e, w, p, dv, c);
        json_t *devs = json_array();
        for (int k = 0; k < c; k++) {
            const gx_engine_dev *d = &dv[k];
            json_t *x = json_pack("{s:s, s:i, s:s}", "uuid", d->uuid, "index", d->index, "model", d->model);
            if (d->shared) {
                json_object_set_new(x, "mode", json_string(d->mode));
                json_object_set_new(x, "cores", json_integer(d->cores));
                json_object_set_new(x, "memoryMiB", json_integer(d->mem_mib));
            }
            if (d->mig >= 0) {
                json_object_set_new(x, "gpuUUID", json_string(d->gpu_uuid));
                json_object_set_new(x, "mig", json_integer(d->mig));
                json_object_set_new(x, "profile", json_string(d->profile));
            }
            if (d->replica >= 0) json_object_set_new(x, "replica", json_integer(d->replica));
            json_array_append_new(devs, x);
        }
        free(dv);
        json_array_append_new(a, json_pack("{s:i, s:s, s:o}", "pod", p, "node", e->nodes[w->pl_node[p]].name, "devices", devs));
    }
    return a;
}

json_t *gx_engine_nodes(const gx_engine *e)
{
    json_t *a = json_array();
    char b1[48], b2[48], b3[48];
    for (int i = 0; i < e->n_nodes; i++) {
        const gx_node *n = &e->nodes[i];
        json_t *labels = json_object();
        for (int l = 0; l < n->labels.n; l++) json_object_set_new(labels, n->labels.k[l], json_string(n->labels.v[l]));
        json_t *gpus = json_array();
        for (int g = 0; g < n->n_gpus; g++) {
            const gx_gpu *gp = &n->gpus[g];
            json_t *users = json_array();
            for (int u = 0; u < gp->n_users; u++)
                json_array_append_new(users, json_pack("{s:s, s:i}", "workload", e->wls[gp->user_wl[u]].key, "pod", gp->user_pod[u]));
            json_t *gv = json_pack("{s:i, s:s, s:s, s:s, s:o}", "index", g, "uuid", gp->uuid, "model", gp->model,
                                   "memory", gx_quantity_format(gp->memory * 1000, b3, sizeof b3), "workloads", users);
            json_t *sv = gx_share_engine_gpu_view(e, n, g);
            if (sv) json_object_set_new(gv, "sharing", sv);
            json_array_append_new(gpus, gv);
        }
        json_array_append_new(a, json_pack("{s:s, s:o, s:s, s:s, s:o}", "name", n->name, "labels", labels,
                                           "cpu", gx_quantity_format(n->cpu, b1, sizeof b1),
                                           "memory", gx_quantity_format(n->memory, b2, sizeof b2), "gpus", gpus));
    }
    return a;
}

/* Put a restored workload back on the GPUs its status names (by node name and UUID);
 * falls back to a fresh placement when one of them is gone or taken. */
int gx_engine_place_restore(gx_engine *e, gx_wl *w, const json_t *placement)
{
    char why[160];
    if (!e->n_nodes) return 1;
    if (gx_share_engine_active(e))
        return gx_share_engine_restore(e, w, placement) ? 1 : gx_engine_place_try(e, w, 1, why, sizeof why);
    int64_t pods = gx_engine_wl_pods(w);
    if (!json_is_array(placement) || (int64_t)json_array_size(placement) != pods) return gx_engine_place_try(e, w, 1, why, sizeof why);
    int wi = (int)(w - e->wls);
    /* check everything first */
    for (size_t p = 0; p < json_array_size(placement); p++) {
        const json_t *pp = json_array_get(placement, p);
        int n = gx_strmap_geti(&e->node_map, json_string_value(json_object_get(pp, "node")) ? json_string_value(json_object_get(pp, "node")) : "");
        if (n < 0) return gx_engine_place_try(e, w, 1, why, sizeof why);
        const json_t *devs = json_object_get(pp, "devices");
        for (size_t d = 0; d < json_array_size(devs); d++) {
            const char *u = json_string_value(json_object_get(json_array_get(devs, d), "uuid"));
            int found = 0;
            for (int g = 0; g < e->nodes[n].n_gpus && !found; g++)
                found = u && !strcmp(e->nodes[n].gpus[g].uuid, u) && !e->nodes[n].gpus[g].n_users;
            if (!found) return gx_engine_place_try(e, w, 1, why, sizeof why);
        }
    }
    w->pl_node = gx_xmalloc((size_t)(pods ? pods : 1) * sizeof(int));
    for (size_t p = 0; p < json_array_size(placement); p++) {
        const json_t *pp = json_array_get(placement, p);
        int n = gx_strmap_geti(&e->node_map, json_string_value(json_object_get(pp, "node")));
        w->pl_node[p] = n;
        const json_t *devs = json_object_get(pp, "devices");
        for (size_t d = 0; d < json_array_size(devs); d++) {
            const char *u = json_string_value(json_object_get(json_array_get(devs, d), "uuid"));
            for (int g = 0; g < e->nodes[n].n_gpus; g++) {
                if (strcmp(e->nodes[n].gpus[g].uuid, u)) continue;
                gx_engine_gpu_add_user(&e->nodes[n].gpus[g], wi, (int)p);
                w->pl_dev = gx_xreallocarray(w->pl_dev, (size_t)(w->n_pl_dev + 1) * 2, sizeof(int));
                w->pl_devpod = gx_xreallocarray(w->pl_devpod, (size_t)(w->n_pl_dev + 1), sizeof(int));
                w->pl_dev[2 * w->n_pl_dev] = n;
                w->pl_dev[2 * w->n_pl_dev + 1] = g;
                w->pl_devpod[w->n_pl_dev++] = (int)p;
                break;
            }
        }
    }
    return 1;
}
