/* core/share_place: the engine's placement when some node's GPUs are shared.
 *
 * engine_place.c hands over here when any Node carries a `sharing` GPU (core/share_json):
 * every pod's device request (nvidia.com/gpu[.shared], nvidia.com/mig-<profile>, HAMi's
 * nvidia.com/gpumem + nvidia.com/gpucores) goes through core/share on the shared nodes,
 * and takes whole free GPUs on the others (as engine_place.c would). Each allocation is
 * recorded under owner (workload index, pod) in its node's gx_share_node, and as a user
 * of the physical GPU (gx_gpu users), so the engine's views, release and the 409 on
 * replacing a busy node keep working unchanged.
 * Owns: that glue, the placement view of shared devices, restore after a restart.
 * Must not: look at quota, do I/O. Fractional choices use core/place's policy named by
 * the Node's spec.placementPolicy (default GX_PLACE_DEFAULT_POLICY, with the target
 * workload learnt online from the engine's workloads). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/engine_int.h"
#include "core/quantity.h"
#include "core/share.h"
#include "core/share_json.h"
#include "core/share_place.h"

#define OWNER(wi, pod) ((int64_t)(wi) << 20 | (int64_t)(pod))
#define MIB (1024LL * 1024LL)

int gx_share_engine_node(gx_node *n, const json_t *obj, gx_err *err)
{
    n->share = NULL;
    const json_t *gpus = json_object_get(json_object_get(obj, "spec"), "gpus");
    int shared = 0;
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g) shared |= json_object_get(g, "sharing") != NULL;
    if (!shared) return 0;
    if (n->n_gpus > GX_SHARE_MAX_GPUS)
        return gx_errf(err, 422, "spec.gpus", "a node with shared GPUs may have at most %d GPUs", GX_SHARE_MAX_GPUS);
    gx_share_node *s = gx_xcalloc(1, sizeof *s);
    for (int k = 0; k < n->n_gpus; k++) {
        char f[64];
        snprintf(f, sizeof f, "spec.gpus[%d].sharing", k);
        const json_t *sh = json_object_get(json_array_get(gpus, (size_t)k), "sharing");
        if (gx_share_gpu_from_json(sh, n->gpus[k].uuid, n->gpus[k].memory / MIB, &s->gpu[k], f, err)) {
            free(s);
            return -1;
        }
    }
    s->n_gpus = n->n_gpus;
    gx_share_node_reset(s);
    const char *pol = json_string_value(json_object_get(json_object_get(obj, "spec"), "placementPolicy"));
    if (pol && !gx_place_policy_by_name(pol)) {
        free(s);
        return gx_errf(err, 422, "spec.placementPolicy", "must be one of %s", gx_place_policy_names());
    }
    n->share = s;
    return 0;
}

void gx_share_engine_node_free(gx_node *n)
{
    free(n->share);
    n->share = NULL;
}

int gx_share_engine_active(const gx_engine *e)
{
    for (int i = 0; i < e->n_nodes; i++)
        if (e->nodes[i].share) return 1;
    return 0;
}

/* A device resource: nvidia.com/gpu[.shared], nvidia.com/mig-<profile>, or a name some
 * shared GPU is offered under (a device-plugin `rename`). */
static int is_device(const gx_engine *e, const char *name)
{
    if (!strcmp(name, "nvidia.com/gpu") || !strncmp(name, "nvidia.com/gpu.", 15) || !strncmp(name, "nvidia.com/mig-", 15))
        return 1;
    for (int i = 0; i < e->n_nodes; i++)
        if (e->nodes[i].share && gx_share_offered(e->nodes[i].share, name, NULL) > 0) return 1;
    return 0;
}

/* The pod's device request from its podset's resources. -1 with why when it mixes kinds. */
static int pod_req(const gx_engine *e, const gx_podset *p, gx_share_req *r, char *why, size_t why_n)
{
    memset(r, 0, sizeof *r);
    int kinds = 0;
    for (int k = 0; k < p->nreq; k++) {
        const char *name = e->res.s[p->res[k]];
        int64_t v = p->req[k];
        if (!strcmp(name, "nvidia.com/gpumem")) r->gpumem_mib = (v + 999) / 1000;
        else if (!strcmp(name, "nvidia.com/gpucores")) r->gpucores = (int)((v + 999) / 1000);
        else if (is_device(e, name)) {
            if (v <= 0) continue;
            kinds++;
            snprintf(r->resource, sizeof r->resource, "%s", name);
            r->count = (int)((v + 999) / 1000);
        }
    }
    if (kinds > 1) {
        snprintf(why, why_n, "a pod may ask for one kind of GPU device (nvidia.com/gpu or one MIG profile)");
        return -1;
    }
    if ((r->gpumem_mib || r->gpucores) && !r->resource[0]) {
        snprintf(r->resource, sizeof r->resource, "nvidia.com/gpu");
        r->count = 1;
    }
    return 0;
}

static void drop_user(gx_gpu *g, int wi, int pod)
{
    for (int u = g->n_users - 1; u >= 0; u--)
        if (g->user_wl[u] == wi && g->user_pod[u] == pod) {
            g->user_wl[u] = g->user_wl[--g->n_users];
            g->user_pod[u] = g->user_pod[g->n_users];
            return;
        }
}

typedef struct trial {
    int *pl_node;
    int n_dev, cap_dev;
    int *dev;                    /* (node, gpu) pairs */
    int *devpod;
} trial;

static void record(trial *t, int node, int gpu, int pod)
{
    if (t->n_dev == t->cap_dev) {
        t->cap_dev = t->cap_dev ? t->cap_dev * 2 : 8;
        t->dev = gx_xreallocarray(t->dev, (size_t)t->cap_dev * 2, sizeof(int));
        t->devpod = gx_xreallocarray(t->devpod, (size_t)t->cap_dev, sizeof(int));
    }
    t->dev[2 * t->n_dev] = node;
    t->dev[2 * t->n_dev + 1] = gpu;
    t->devpod[t->n_dev++] = pod;
}

/* Whole free GPUs on an unshared node, as engine_place.c counts them. */
static int free_whole(const gx_node *n)
{
    int c = 0;
    for (int g = 0; g < n->n_gpus; g++) c += n->gpus[g].n_users == 0;
    return c;
}

/* Place one pod: shared nodes through core/share, else whole GPUs of unshared nodes. */
static int place_pod(gx_engine *e, gx_wl *w, int ps, int pod, gx_share_eligible_fn ok, gx_place_ctx *cx,
                     gx_share_node **cand, trial *t, char *why, size_t why_n)
{
    int wi = (int)(w - e->wls);
    gx_share_req r;
    if (pod_req(e, &w->s.ps[ps], &r, why, why_n)) return 0;
    int plain = !strcmp(r.resource, "nvidia.com/gpu") && !r.gpumem_mib && !r.gpucores;
    for (int i = 0; i < e->n_nodes; i++) cand[i] = e->nodes[i].share && ok(e, &e->nodes[i], w, ps) ? e->nodes[i].share : NULL;
    gx_share_pick p;
    char w1[256] = "";
    int ni = r.count > 0 || r.gpumem_mib || r.gpucores ? gx_share_choose(cx, cand, e->n_nodes, &r, &p, w1, sizeof w1) : -1;
    if (ni >= 0) {
        if (gx_share_commit(e->nodes[ni].share, OWNER(wi, pod), &p)) return 0;
        t->pl_node[pod] = ni;
        for (int k = 0; k < p.n; k++) {
            gx_engine_gpu_add_user(&e->nodes[ni].gpus[p.dev[k].gpu], wi, pod);
            record(t, ni, p.dev[k].gpu, pod);
        }
        return 1;
    }
    /* unshared nodes: plain nvidia.com/gpu as whole GPUs, fewest free first; a pod
     * without devices goes to any matching node, shared or not, the same way */
    int best = -1, none = r.count == 0 && !r.gpumem_mib && !r.gpucores;
    if (plain || none)
        for (int i = 0; i < e->n_nodes; i++) {
            const gx_node *n = &e->nodes[i];
            if ((n->share && !none) || free_whole(n) < r.count || !ok(e, n, w, ps)) continue;
            if (best < 0 || free_whole(n) < free_whole(&e->nodes[best])) best = i;
        }
    if (best < 0) {
        if (none)
            snprintf(why, why_n, "quota fits but no node matches the pod's flavor, node selector and tolerations");
        else
            snprintf(why, why_n, "quota fits but no GPU fits: %s", w1[0] ? w1 : "no matching node offers it");
        return 0;
    }
    t->pl_node[pod] = best;
    gx_node *n = &e->nodes[best];
    for (int g = 0, left = r.count; g < n->n_gpus && left > 0; g++) {
        if (n->gpus[g].n_users) continue;
        gx_engine_gpu_add_user(&n->gpus[g], wi, pod);
        record(t, best, g, pod);
        left--;
    }
    return 1;
}

/* Everything a workload holds on shared nodes, whatever its pod count is now. */
static void release_wl(gx_engine *e, int wi)
{
    for (int i = 0; i < e->n_nodes; i++) {
        gx_share_node *s = e->nodes[i].share;
        for (int a = 0; s && a < s->n_allocs;) {
            if (s->alloc[a].owner >> 20 == wi) gx_share_release(s, s->alloc[a].owner);   /* compacts */
            else a++;
        }
    }
}

static void undo(gx_engine *e, gx_wl *w, trial *t)
{
    int wi = (int)(w - e->wls);
    for (int d = 0; d < t->n_dev; d++) drop_user(&e->nodes[t->dev[2 * d]].gpus[t->dev[2 * d + 1]], wi, t->devpod[d]);
    release_wl(e, wi);
}

/* The target workload FGD-style policies score against, learnt online: the vGPU shapes
 * of the workloads the engine knows now (running and waiting), each pod counted once, at
 * most WL_SAMPLE pods. Returns how many types went into out[]. */
#define WL_SAMPLE 4096
#define WL_TYPES 64
static int online_workload(const gx_engine *e, gx_place_type *out)
{
    gx_share_node **nodes = gx_xcalloc((size_t)(e->n_nodes ? e->n_nodes : 1), sizeof *nodes);
    gx_place_pod *pods = gx_xcalloc(WL_SAMPLE, sizeof *pods);
    for (int i = 0; i < e->n_nodes; i++) nodes[i] = e->nodes[i].share;
    size_t n = 0;
    char why[8];
    for (int wi = e->n_wl - 1; wi >= 0 && n < WL_SAMPLE; wi--) {   /* newest first */
        const gx_wl *w = &e->wls[wi];
        if (!w->live) continue;
        for (int ps = 0; ps < w->s.nps && n < WL_SAMPLE; ps++) {
            gx_share_req r;
            gx_place_pod pod;
            if (pod_req(e, &w->s.ps[ps], &r, why, sizeof why)) continue;
            if (gx_share_place_pod(nodes, e->n_nodes, &r, &pod)) continue;
            for (int k = 0; k < w->s.ps[ps].count && n < WL_SAMPLE; k++) pods[n++] = pod;
        }
    }
    int nt = n ? gx_place_workload_from_pods(pods, n, out, WL_TYPES) : 0;
    free(pods);
    free(nodes);
    return nt;
}

/* The Node's spec.placementPolicy (the first shared node that names one), else the
 * daemon's default, with the workload's shapes learnt online. Kept in the engine until
 * a workload is submitted or the policy changes: rebuilding it (and our policy's value
 * tables) for every placement try would cost O(workloads) per pending workload. */
static gx_place_ctx *policy_ctx(gx_engine *e)
{
    const char *pol = NULL;
    for (int i = 0; i < e->n_nodes && !pol; i++)
        if (e->nodes[i].share)
            pol = json_string_value(json_object_get(json_object_get(e->nodes[i].manifest, "spec"), "placementPolicy"));
    const gx_place_policy *p = gx_place_policy_by_name(pol ? pol : GX_PLACE_DEFAULT_POLICY);
    if (e->share_cx && e->share_cx_seq == e->seq && gx_place_ctx_policy(e->share_cx) == p) return e->share_cx;
    gx_place_ctx_free(e->share_cx);
    gx_place_type types[WL_TYPES];
    gx_place_workload wl = {p && p->needs_workload ? online_workload(e, types) : 0, types, 0};
    e->share_cx = gx_place_ctx_new(p, &wl, 1);
    e->share_cx_seq = e->seq;
    return e->share_cx;
}

void gx_share_engine_free(gx_engine *e)
{
    gx_place_ctx_free(e->share_cx);
    e->share_cx = NULL;
}

int gx_share_engine_try(gx_engine *e, gx_wl *w, int commit, char *why, size_t why_n, gx_share_eligible_fn ok)
{
    int64_t pods = gx_engine_wl_pods(w);
    trial t = {0};
    t.pl_node = gx_xcalloc((size_t)(pods ? pods : 1), sizeof(int));
    gx_share_node **cand = gx_xcalloc((size_t)(e->n_nodes ? e->n_nodes : 1), sizeof *cand);
    gx_place_ctx *cx = policy_ctx(e);
    int pod = 0, fits = 1;
    /* commit as we go (a later pod must see the earlier ones), undo unless asked to keep */
    for (int ps = 0; ps < w->s.nps && fits; ps++)
        for (int k = 0; k < w->adm[ps].count && fits; k++, pod++)
            fits = place_pod(e, w, ps, pod, ok, cx, cand, &t, why, why_n);
    if (!fits || !commit) {
        undo(e, w, &t);
        free(t.pl_node);
        free(t.dev);
        free(t.devpod);
    } else {
        free(w->pl_node);
        free(w->pl_dev);
        free(w->pl_devpod);
        w->pl_node = t.pl_node;
        w->pl_dev = t.dev;
        w->pl_devpod = t.devpod;
        w->n_pl_dev = t.n_dev;
    }
    free(cand);
    return fits;
}

void gx_share_engine_release(gx_engine *e, gx_wl *w)
{
    release_wl(e, (int)(w - e->wls));
}

int gx_share_engine_devs(const gx_engine *e, const gx_wl *w, int pod, gx_engine_dev *out, int max)
{
    if (!w->pl_node) return -1;
    const gx_node *n = &e->nodes[w->pl_node[pod]];
    if (!n->share) return -1;
    gx_share_dev d[GX_SHARE_MAX_GPUS];
    int c = gx_share_owned(n->share, OWNER((int)(w - e->wls), pod), d, GX_SHARE_MAX_GPUS);
    if (c > GX_SHARE_MAX_GPUS) c = GX_SHARE_MAX_GPUS;
    for (int k = 0; k < c && k < max; k++) {
        const gx_share_gpu *g = &n->share->gpu[d[k].gpu];
        out[k] = (gx_engine_dev){
            .uuid = d[k].mig >= 0 ? g->mig[d[k].mig].uuid : g->uuid, .gpu_uuid = g->uuid,
            .model = n->gpus[d[k].gpu].model, .node = n->name, .index = d[k].gpu, .shared = 1,
            .mode = gx_share_mode_name(g->mode), .cores = d[k].cores, .mem_mib = d[k].mem_mib,
            .mig = d[k].mig, .profile = d[k].mig >= 0 ? g->mig[d[k].mig].profile : NULL, .replica = d[k].replica,
        };
    }
    return c;
}

json_t *gx_share_engine_gpu_view(const gx_engine *e, const gx_node *n, int g)
{
    if (!n->share || g >= n->share->n_gpus) return NULL;
    const char **names = gx_xcalloc((size_t)n->share->n_allocs + 1, sizeof *names);
    for (int i = 0; i < n->share->n_allocs; i++) {
        int64_t wi = n->share->alloc[i].owner >> 20;
        if (wi >= 0 && wi < e->n_wl) names[i] = e->wls[wi].key;
    }
    json_t *v = gx_share_gpu_view(n->share, g, names);
    free(names);
    return v;
}

/* Why node nd is not one the pod of podset p can use under flavor rf (NULL: no flavor
 * known): NULL when it is, else a short reason in buf ("label zone is b, not a",
 * "taint gpu=mps:NoSchedule not tolerated"). The same rule as engine_place.c's. */
static const char *node_excluded(const gx_node *nd, const gx_podset *p, const gx_rf *rf, char *buf, size_t n)
{
    for (int k = 0; rf && k < rf->node_labels.n; k++) {
        const char *v = gx_engine_obj_label(&nd->labels, rf->node_labels.k[k]);
        if (!v || strcmp(v, rf->node_labels.v[k])) {
            snprintf(buf, n, "no label %s=%s", rf->node_labels.k[k], rf->node_labels.v[k]);
            return buf;
        }
    }
    for (int k = 0; k < p->node_selector.n; k++) {
        const char *v = gx_engine_obj_label(&nd->labels, p->node_selector.k[k]);
        if (!v || strcmp(v, p->node_selector.v[k])) {
            snprintf(buf, n, "nodeSelector %s=%s not matched", p->node_selector.k[k], p->node_selector.v[k]);
            return buf;
        }
    }
    if (!gx_engine_obj_affinity_match(p->affinity, &nd->labels, NULL)) return snprintf(buf, n, "node affinity not matched"), buf;
    for (int t = 0; t < nd->n_taints; t++) {
        const gx_taint *tt = &nd->taints[t];
        if (gx_engine_obj_tolerates(tt, p->tols, p->n_tols) || (rf && gx_engine_obj_tolerates(tt, rf->tols, rf->n_tols)))
            continue;
        snprintf(buf, n, "taint %s%s%s:%s not tolerated", tt->key, *tt->value ? "=" : "", tt->value, tt->effect);
        return buf;
    }
    return NULL;
}

/* The flavors the ClusterQueue could give podset p's device request, in order. */
static int device_flavors(const gx_engine *e, const gx_wl *w, const gx_share_req *r, int *flv, int cap)
{
    if (w->cq < 0 || w->cq >= e->n_cq) return 0;
    const gx_cq *c = &e->cqs[w->cq];
    /* a vGPU's quota may be on gpumem/gpucores only, without nvidia.com/gpu */
    const char *names[] = {r->resource, "nvidia.com/gpumem", "nvidia.com/gpucores"};
    int g = -1;
    for (int i = 0; i < 3 && g < 0; i++) {
        int res = gx_engine_util_lookup(&e->res, names[i]);
        g = res >= 0 && res < c->n_res_map ? c->res_rg[res] : -1;
    }
    if (g < 0) return 0;
    int k = 0;
    for (int i = 0; i < c->qs.rg[g].nflv && k < cap; i++) flv[k++] = c->qs.rg[g].flv[i];
    return k;
}

/* Explain one flavor (f < 0: none known) for podset p: 1 with the reason appended to m
 * when no node it selects has the device, 0 when one has (its quota is what is short). */
static int explain_flavor(const gx_engine *e, const gx_podset *p, const gx_share_req *r, int f,
                          gx_share_node **cand, char *m, size_t n, size_t *len)
{
    const gx_rf *rf = f >= 0 ? &e->rfs[f] : NULL;
    char names[160] = "", excl[256] = "", one[128];
    size_t nl = 0, el = 0;
    int selected = 0, shown = 0;
    for (int i = 0; i < e->n_nodes; i++) {
        const gx_node *nd = &e->nodes[i];
        const char *why = node_excluded(nd, p, rf, one, sizeof one);
        cand[i] = !why ? nd->share : NULL;
        if (!why) {
            selected++;
            if (nl < sizeof names) nl += (size_t)snprintf(names + nl, sizeof names - nl, "%s%s", nl ? ", " : "", nd->name);
        } else if (nd->n_gpus && shown++ < 3 && el < sizeof excl) {
            el += (size_t)snprintf(excl + el, sizeof excl - el, "%s%s: %s", el ? "; " : "", nd->name, why);
        }
    }
    char fl[200];
    if (f >= 0) snprintf(fl, sizeof fl, "flavor %s", e->flv.s[f]);
    else snprintf(fl, sizeof fl, "the pod's nodeSelector and tolerations");
    if (!selected) {
        *len += (size_t)snprintf(m + *len, *len < n ? n - *len : 0, "%sno node matches %s (nodeLabels, taints and "
                                 "the pod's nodeSelector and tolerations)%s%s%s", *len ? "; " : "", fl, el ? ": " : "",
                                 excl, shown > 3 ? "; ..." : "");
        return 1;
    }
    gx_share_pick pick;
    char why[256] = "";
    if (gx_share_choose(NULL, cand, e->n_nodes, r, &pick, why, sizeof why) >= 0) return 0;
    *len += (size_t)snprintf(m + *len, *len < n ? n - *len : 0, "%son the %d node%s %s selects and the pod tolerates "
                             "(%s): %s", *len ? "; " : "", selected, selected == 1 ? "" : "s", fl, names,
                             why[0] ? why : "no shared GPU there offers it");
    return 1;
}

int gx_share_engine_explain(const gx_engine *e, const gx_wl *w, char *m, size_t n)
{
    if (!gx_share_engine_active(e)) return 0;
    gx_share_node **cand = gx_xcalloc((size_t)e->n_nodes, sizeof *cand);
    int said = 0;
    for (int ps = 0; ps < w->s.nps && !said; ps++) {
        const gx_podset *p = &w->s.ps[ps];
        gx_share_req r;
        char why[256] = "";
        if (pod_req(e, p, &r, why, sizeof why)) {
            snprintf(m, n, "%s", why);
            said = 1;
            break;
        }
        if (r.count <= 0 && !r.gpumem_mib && !r.gpucores) continue;
        /* flavors are not kept while pending: every flavor the ClusterQueue has for the
         * device is explained, each on the nodes it selects (nodeLabels, taints) */
        int flv[GX_MAX_FLAVORS], nf = device_flavors(e, w, &r, flv, GX_MAX_FLAVORS);
        char body[768] = "";
        size_t len = 0;
        /* a flavor whose nodes have the device is left out: its quota is what is short */
        if (!nf) explain_flavor(e, p, &r, -1, cand, body, sizeof body, &len);
        for (int k = 0; k < nf; k++) explain_flavor(e, p, &r, flv[k], cand, body, sizeof body, &len);
        if (len) {
            snprintf(m, n, "quota fits but no GPU fits: %s", body);
            said = 1;
        }
    }
    if (!said) snprintf(m, n, "quota fits but the pods do not all fit on the GPUs (shared or whole) that match them");
    free(cand);
    return 1;
}

/* Back on the devices the status names: pods of a shared node carry mig/replica/cores/
 * memoryMiB per device. 1 when restored; 0 when a device is gone or taken. */
int gx_share_engine_restore(gx_engine *e, gx_wl *w, const json_t *placement)
{
    int wi = (int)(w - e->wls);
    int64_t pods = gx_engine_wl_pods(w);
    trial t = {0};
    t.pl_node = gx_xcalloc((size_t)(pods ? pods : 1), sizeof(int));
    int ok = json_is_array(placement) && (int64_t)json_array_size(placement) == pods;
    for (int64_t p = 0; p < pods && ok; p++) {
        const json_t *pp = json_array_get(placement, (size_t)p);
        int ni = gx_strmap_geti(&e->node_map, json_string_value(json_object_get(pp, "node")) ?: "");
        if (ni < 0) { ok = 0; break; }
        gx_node *n = &e->nodes[ni];
        t.pl_node[p] = ni;
        gx_share_pick pick = {0};
        size_t k;
        json_t *d;
        json_array_foreach(json_object_get(pp, "devices"), k, d) {
            int g = (int)json_integer_value(json_object_get(d, "index"));
            const char *u = json_string_value(json_object_get(d, "uuid"));
            const json_t *mig = json_object_get(d, "mig"), *rep = json_object_get(d, "replica");
            if (g < 0 || g >= n->n_gpus || pick.n == GX_SHARE_MAX_GPUS) { ok = 0; break; }
            if (!n->share) {   /* a whole GPU on an unshared node */
                if (!u || strcmp(u, n->gpus[g].uuid) || n->gpus[g].n_users) { ok = 0; break; }
                gx_engine_gpu_add_user(&n->gpus[g], wi, (int)p);
                record(&t, ni, g, (int)p);
                continue;
            }
            gx_share_dev *sd = &pick.dev[pick.n++];
            *sd = (gx_share_dev){g, mig ? (int)json_integer_value(mig) : -1, rep ? (int)json_integer_value(rep) : -1,
                                 json_integer_value(json_object_get(d, "memoryMiB")),
                                 (int)json_integer_value(json_object_get(d, "cores"))};
            const gx_share_gpu *sg = &n->share->gpu[g];
            const char *want = sd->mig >= 0 && sd->mig < sg->n_mig ? sg->mig[sd->mig].uuid : sg->uuid;
            if (!u || strcmp(u, want)) { ok = 0; break; }
        }
        if (ok && n->share) {
            if (gx_share_commit(n->share, OWNER(wi, p), &pick)) { ok = 0; break; }
            for (int k2 = 0; k2 < pick.n; k2++) {
                gx_engine_gpu_add_user(&n->gpus[pick.dev[k2].gpu], wi, (int)p);
                record(&t, ni, pick.dev[k2].gpu, (int)p);
            }
        }
    }
    if (!ok) {
        undo(e, w, &t);
        free(t.pl_node);
        free(t.dev);
        free(t.devpod);
        return 0;
    }
    w->pl_node = t.pl_node;
    w->pl_dev = t.dev;
    w->pl_devpod = t.devpod;
    w->n_pl_dev = t.n_dev;
    return 1;
}
