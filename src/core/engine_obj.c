/* engine_obj: the configuration objects (ResourceFlavor, ClusterQueue, Cohort, LocalQueue,
 * WorkloadPriorityClass, and gpuaas Node through engine_place) and their validation.
 * Owns: parsing JSON manifests into structs, Kueue's schema/CEL/webhook rules, apply,
 * delete and the object listings. The fields several kinds share (labels, taints,
 * tolerations, affinity, names) are parsed in engine_obj_fields.c.
 * Must not: change anything when an object is invalid (parse completely into a fresh
 * struct first, then swap); touch queues beyond marking the quota tree dirty and waking
 * inadmissible workloads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/engine_int.h"
#include "core/quantity.h"
#include "core/kueue_schema.h"

#define KUEUE_V1B2 "kueue.x-k8s.io/v1beta2"
#define KUEUE_V1B1 "kueue.x-k8s.io/v1beta1"
#define GPUAAS_V1 "gpuaas.dev/v1alpha1"

/* ---- quota specs (ClusterQueue and Cohort resourceGroups) ----------------------------- */

static void qs_free(gx_quota_spec *q)
{
    for (int i = 0; i < q->n_rg; i++) { free(q->rg[i].q); free(q->rg[i].fr); }
    q->n_rg = 0;
}

int gx_engine_obj_fr(gx_engine *e, int flv, int res)
{
    char key[160];
    snprintf(key, sizeof key, "%d/%d", flv, res);
    int id = gx_engine_util_intern(&e->fr, key);
    if (id >= e->fr_cap) {
        int nc = e->fr_cap ? e->fr_cap * 2 : 64;
        while (nc <= id) nc *= 2;
        e->fr_flv = gx_xreallocarray(e->fr_flv, (size_t)nc, sizeof(int));
        e->fr_res = gx_xreallocarray(e->fr_res, (size_t)nc, sizeof(int));
        e->fr_cap = nc;
    }
    e->fr_flv[id] = flv;
    e->fr_res[id] = res;
    return id;
}

static int parse_limit(const json_t *r, const char *k, int64_t *out, const char *field, gx_err *err)
{
    const json_t *v = json_object_get(r, k);
    *out = GX_NIL;
    if (!v || json_is_null(v)) return 0;
    char f[256];
    snprintf(f, sizeof f, "%s.%s", field, k);
    return gx_quantity_from_json(v, out, f, err);
}

/* Parse one flavor's quotas of a resource group; rg->res is already filled. */
static int parse_flavor_quota(gx_engine *e, gx_rg *rg, int fi, const json_t *fl, int has_parent,
                              const char *who, const char *f, gx_err *err)
{
    const json_t *rs = json_object_get(fl, "resources");
    char g[232];
    snprintf(g, sizeof g, "%s.resources", f);
    if (!json_is_array(rs) || json_array_size(rs) != (size_t)rg->nres)
        return gx_errf(err, 422, g, "flavor must list exactly the %d coveredResources of its group, in order", rg->nres);
    for (int j = 0; j < rg->nres; j++) {
        const json_t *r = json_array_get(rs, (size_t)j);
        snprintf(g, sizeof g, "%s.resources[%d]", f, j);
        const char *rn = gx_engine_obj_str(r, "name");
        if (!rn || strcmp(rn, e->res.s[rg->res[j]]))
            return gx_errf(err, 422, g, "resource name \"%s\" must be \"%s\" (coveredResources[%d])",
                           rn ? rn : "", e->res.s[rg->res[j]], j);
        gx_fq *q = &rg->q[fi * rg->nres + j];
        const json_t *nq = json_object_get(r, "nominalQuota");
        char h[272];
        snprintf(h, sizeof h, "%s.nominalQuota", g);
        if (!nq) return gx_errf(err, 422, h, "nominalQuota is required");
        if (gx_quantity_from_json(nq, &q->nominal, h, err) < 0) return -1;
        if (parse_limit(r, "borrowingLimit", &q->borrow, g, err) < 0) return -1;
        if (parse_limit(r, "lendingLimit", &q->lend, g, err) < 0) return -1;
        if (q->borrow != GX_NIL && !has_parent)
            return gx_errf(err, 422, g, "borrowingLimit needs a %s (nothing to borrow from)", who);
        if (q->lend != GX_NIL && !has_parent)
            return gx_errf(err, 422, g, "lendingLimit needs a %s (nobody to lend to)", who);
        if (q->lend != GX_NIL && q->lend > q->nominal)
            return gx_errf(err, 422, g, "lendingLimit must be less than or equal to nominalQuota");
        rg->fr[fi * rg->nres + j] = gx_engine_obj_fr(e, rg->flv[fi], rg->res[j]);
    }
    return 0;
}

static int parse_rgs(gx_engine *e, const json_t *spec, gx_quota_spec *qs, int has_parent, const char *who, gx_err *err)
{
    const json_t *rgs = json_object_get(spec, "resourceGroups");
    memset(qs, 0, sizeof *qs);
    qs->fs_weight = 1000;
    const json_t *fs = json_object_get(spec, "fairSharing");
    if (fs && json_object_get(fs, "weight")
        && gx_quantity_from_json(json_object_get(fs, "weight"), &qs->fs_weight, "spec.fairSharing.weight", err) < 0)
        return -1;
    if (!rgs || json_is_null(rgs)) return 0;
    if (!json_is_array(rgs)) return gx_errf(err, 422, "spec.resourceGroups", "must be a list");
    if (json_array_size(rgs) > GX_MAX_RG)
        return gx_errf(err, 422, "spec.resourceGroups", "at most %d resource groups are allowed, got %zu",
                       GX_MAX_RG, json_array_size(rgs));
    int total_flv = 0, total_res = 0;
    for (size_t i = 0; i < json_array_size(rgs); i++) {
        const json_t *g = json_array_get(rgs, i);
        gx_rg *rg = &qs->rg[qs->n_rg++];
        char f[192];
        snprintf(f, sizeof f, "spec.resourceGroups[%zu].coveredResources", i);
        const json_t *cr = json_object_get(g, "coveredResources");
        if (!json_is_array(cr) || json_array_size(cr) < 1 || json_array_size(cr) > GX_MAX_COVERED)
            return gx_errf(err, 422, f, "coveredResources must list 1 to %d resource names", GX_MAX_COVERED);
        for (size_t j = 0; j < json_array_size(cr); j++) {
            const json_t *rn = json_array_get(cr, j);
            if (!json_is_string(rn) || !*json_string_value(rn))
                return gx_errf(err, 422, f, "coveredResources[%zu] must be a resource name", j);
            int id = gx_engine_util_intern(&e->res, json_string_value(rn));
            for (int k = 0; k < qs->n_rg; k++)
                for (int m = 0; m < (k == qs->n_rg - 1 ? rg->nres : qs->rg[k].nres); m++)
                    if (qs->rg[k].res[m] == id)
                        return gx_errf(err, 422, f, "resource \"%s\" appears more than once (a resource belongs to one group)",
                                       json_string_value(rn));
            rg->res[rg->nres++] = id;
        }
        snprintf(f, sizeof f, "spec.resourceGroups[%zu].flavors", i);
        const json_t *fls = json_object_get(g, "flavors");
        if (!json_is_array(fls) || json_array_size(fls) < 1 || json_array_size(fls) > GX_MAX_FLAVORS)
            return gx_errf(err, 422, f, "flavors must list 1 to %d flavors", GX_MAX_FLAVORS);
        rg->nflv = (int)json_array_size(fls);
        rg->q = gx_xcalloc((size_t)(rg->nflv * rg->nres), sizeof *rg->q);
        rg->fr = gx_xcalloc((size_t)(rg->nflv * rg->nres), sizeof *rg->fr);
        for (int k = 0; k < rg->nflv; k++) {
            const json_t *fl = json_array_get(fls, (size_t)k);
            char h[192];
            snprintf(h, sizeof h, "spec.resourceGroups[%zu].flavors[%d]", i, k);
            const char *fn = gx_engine_obj_str(fl, "name");
            if (!fn || !*fn) return gx_errf(err, 422, h, "flavor name is required");
            rg->flv[k] = gx_engine_util_intern(&e->flv, fn);
            for (int a = 0; a < qs->n_rg; a++)
                for (int b = 0; b < (a == qs->n_rg - 1 ? k : qs->rg[a].nflv); b++)
                    if (qs->rg[a].flv[b] == rg->flv[k])
                        return gx_errf(err, 422, h, "flavor \"%s\" appears more than once (a flavor belongs to one group)", fn);
            if (parse_flavor_quota(e, rg, k, fl, has_parent, who, h, err) < 0) return -1;
        }
        total_flv += rg->nflv;
        total_res += rg->nres;
    }
    if (total_flv > 256) return gx_errf(err, 422, "spec.resourceGroups", "at most 256 flavors in total");
    if (total_res > 256) return gx_errf(err, 422, "spec.resourceGroups", "at most 256 resources in total");
    return 0;
}

static int parse_enum(const json_t *o, const char *k, const char *const *names, int n, int def,
                      int *out, const char *field, gx_err *err)
{
    const json_t *v = json_object_get(o, k);
    *out = def;
    if (!v || json_is_null(v)) return 0;
    if (json_is_string(v))
        for (int i = 0; i < n; i++)
            if (names[i] && !strcmp(names[i], json_string_value(v))) { *out = i; return 0; }
    char list[256] = "";
    for (int i = 0; i < n; i++)
        if (names[i]) { strcat(list, list[0] ? ", " : ""); strcat(list, names[i]); }
    return gx_errf(err, 422, field, "must be one of %s", list);
}

static int parse_nssel(const json_t *sel, gx_nssel *out, gx_err *err)
{
    out->nil = !sel || json_is_null(sel);
    out->sel = NULL;
    if (out->nil) return 0;
    if (!json_is_object(sel)) return gx_errf(err, 422, "spec.namespaceSelector", "must be a label selector");
    const json_t *ml = json_object_get(sel, "matchLabels");
    if (ml && !json_is_object(ml)) return gx_errf(err, 422, "spec.namespaceSelector.matchLabels", "must be a map");
    const json_t *me = json_object_get(sel, "matchExpressions");
    if (me && !json_is_array(me)) return gx_errf(err, 422, "spec.namespaceSelector.matchExpressions", "must be a list");
    for (size_t i = 0; me && i < json_array_size(me); i++) {
        const char *op = gx_engine_obj_str(json_array_get(me, i), "operator");
        char f[128];
        snprintf(f, sizeof f, "spec.namespaceSelector.matchExpressions[%zu].operator", i);
        if (!op || (strcmp(op, "In") && strcmp(op, "NotIn") && strcmp(op, "Exists") && strcmp(op, "DoesNotExist")))
            return gx_errf(err, 422, f, "must be In, NotIn, Exists or DoesNotExist");
    }
    out->sel = json_deep_copy(sel);
    return 0;
}

/* A namespace here has exactly one label, kubernetes.io/metadata.name = its name (what
 * Kubernetes sets on every namespace). */
int gx_engine_obj_ns_matches(const gx_cq *cq, const char *ns)
{
    if (cq->nssel.nil) return 0;
    const json_t *ml = json_object_get(cq->nssel.sel, "matchLabels");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)ml, k, v) {
        if (strcmp(k, "kubernetes.io/metadata.name") || !json_is_string(v) || strcmp(json_string_value(v), ns))
            return 0;
    }
    const json_t *me = json_object_get(cq->nssel.sel, "matchExpressions");
    for (size_t i = 0; i < json_array_size(me); i++) {
        const json_t *x = json_array_get(me, i);
        const char *key = gx_engine_obj_str(x, "key"), *op = gx_engine_obj_str(x, "operator");
        int has = key && !strcmp(key, "kubernetes.io/metadata.name");
        int in = 0;
        const json_t *vals = json_object_get(x, "values");
        for (size_t j = 0; has && j < json_array_size(vals); j++)
            if (json_is_string(json_array_get(vals, j)) && !strcmp(json_string_value(json_array_get(vals, j)), ns)) in = 1;
        if (!strcmp(op, "In") && !in) return 0;
        if (!strcmp(op, "NotIn") && in) return 0;
        if (!strcmp(op, "Exists") && !has) return 0;
        if (!strcmp(op, "DoesNotExist") && has) return 0;
    }
    return 1;
}

static const char *const PW_WITHIN[] = {"Never", "LowerPriority", "LowerOrNewerEqualPriority", NULL};
static const char *const PW_RECLAIM[] = {"Never", "LowerPriority", NULL, "Any"};
static const char *const PW_BORROW[] = {"Never", "LowerPriority"};
static const char *const STRATEGY[] = {"StrictFIFO", "BestEffortFIFO"};
static const char *const STOP[] = {"None", "Hold", "HoldAndDrain"};
static const char *const FUNG[] = {"MayStopSearch", "TryNextFlavor"};
static const char *const PREF[] = {NULL, "BorrowingOverPreemption", "PreemptionOverBorrowing"};

static void cq_free_spec(gx_cq *c)
{
    free(c->name);
    free(c->cohort_name);
    json_decref(c->manifest);
    json_decref(c->nssel.sel);
    json_decref(c->counts);
    qs_free(&c->qs);
    free(c->res_rg);
    gx_engine_check_cq_free(c);
}

static int parse_cq(gx_engine *e, const json_t *obj, gx_cq *c, gx_err *err)
{
    const char *name;
    memset(c, 0, sizeof *c);
    if (gx_engine_obj_check_name(obj, 0, &name, NULL, err) < 0) return -1;
    const json_t *spec = json_object_get(obj, "spec");
    if (spec && !json_is_object(spec)) return gx_errf(err, 422, "spec", "spec must be an object");
    const char *co = gx_engine_obj_str(spec, "cohortName");
    if (!co) co = gx_engine_obj_str(spec, "cohort");                   /* v1beta1 */
    if (co && !*co) co = NULL;
    c->name = gx_xstrdup(name);
    c->cohort_name = co ? gx_xstrdup(co) : NULL;
    c->manifest = json_deep_copy(obj);
    if (parse_rgs(e, spec, &c->qs, co != NULL, "cohort", err) < 0) goto bad;
    if (parse_enum(spec, "queueingStrategy", STRATEGY, 2, GX_BESTEFFORT, &c->strategy, "spec.queueingStrategy", err) < 0) goto bad;
    if (parse_enum(spec, "stopPolicy", STOP, 3, GX_STOP_NONE, &c->stop, "spec.stopPolicy", err) < 0) goto bad;
    if (parse_nssel(json_object_get(spec, "namespaceSelector"), &c->nssel, err) < 0) goto bad;
    if (gx_engine_check_parse_cq(e, spec, c, err) < 0) goto bad;
    const json_t *p = json_object_get(spec, "preemption");
    if (parse_enum(p, "withinClusterQueue", PW_WITHIN, 3, GX_PW_NEVER, &c->p_within, "spec.preemption.withinClusterQueue", err) < 0) goto bad;
    if (parse_enum(p, "reclaimWithinCohort", PW_RECLAIM, 4, GX_PW_NEVER, &c->p_reclaim, "spec.preemption.reclaimWithinCohort", err) < 0) goto bad;
    const json_t *bw = json_object_get(p, "borrowWithinCohort");
    if (parse_enum(bw, "policy", PW_BORROW, 2, GX_PW_NEVER, &c->p_borrow, "spec.preemption.borrowWithinCohort.policy", err) < 0) goto bad;
    if (bw && c->p_reclaim == GX_PW_NEVER && c->p_borrow != GX_PW_NEVER) {
        gx_errf(err, 422, "spec.preemption", "borrowWithinCohort needs reclaimWithinCohort other than Never");
        goto bad;
    }
    const json_t *th = json_object_get(bw, "maxPriorityThreshold");
    if (th && !json_is_null(th)) {
        if (!json_is_integer(th)) { gx_errf(err, 422, "spec.preemption.borrowWithinCohort.maxPriorityThreshold", "must be an integer"); goto bad; }
        c->has_borrow_threshold = 1;
        c->borrow_threshold = (int32_t)json_integer_value(th);
    }
    const json_t *fg = json_object_get(spec, "flavorFungibility");
    if (parse_enum(fg, "whenCanBorrow", FUNG, 2, GX_FUNG_STOP, &c->fung_borrow, "spec.flavorFungibility.whenCanBorrow", err) < 0) goto bad;
    if (parse_enum(fg, "whenCanPreempt", FUNG, 2, GX_FUNG_NEXT, &c->fung_preempt, "spec.flavorFungibility.whenCanPreempt", err) < 0) goto bad;
    /* v1beta1 spellings */
    const char *wb = gx_engine_obj_str(fg, "whenCanBorrow"), *wp = gx_engine_obj_str(fg, "whenCanPreempt");
    (void)wb; (void)wp;
    if (parse_enum(fg, "preference", PREF, 3, GX_PREF_NONE, &c->fung_pref, "spec.flavorFungibility.preference", err) < 0) goto bad;
    if (c->fung_pref != GX_PREF_NONE && !(c->fung_borrow == GX_FUNG_NEXT && c->fung_preempt == GX_FUNG_NEXT)) {
        gx_errf(err, 422, "spec.flavorFungibility.preference", "preference is allowed only when whenCanBorrow and whenCanPreempt are both TryNextFlavor");
        goto bad;
    }
    return 0;
bad:
    cq_free_spec(c);
    memset(c, 0, sizeof *c);
    return -1;
}

/* Accept the v1beta1 fungibility names Borrow/Preempt as MayStopSearch. */
static void v1beta1_fixups(json_t *obj)
{
    json_t *fg = json_object_get(json_object_get(obj, "spec"), "flavorFungibility");
    const char *keys[] = {"whenCanBorrow", "whenCanPreempt"};
    for (int i = 0; i < 2 && fg; i++) {
        const char *v = gx_engine_obj_str(fg, keys[i]);
        if (v && (!strcmp(v, "Borrow") || !strcmp(v, "Preempt")))
            json_object_set_new(fg, keys[i], json_string("MayStopSearch"));
    }
}

static int apply_cq(gx_engine *e, const json_t *obj, gx_err *err)
{
    gx_cq c;
    if (parse_cq(e, obj, &c, err) < 0) return -1;
    int i = gx_strmap_geti(&e->cq_map, c.name);
    if (i < 0) {
        GX_GROW(e->cqs, e->n_cq, e->cap_cq);
        i = e->n_cq++;
        memset(&e->cqs[i], 0, sizeof e->cqs[i]);
        gx_strmap_puti(&e->cq_map, c.name, i);
    } else {
        gx_cq *o = &e->cqs[i];
        c.q = o->q;
        c.ready = o->ready;
        c.adm = o->adm; c.adm_n = o->adm_n; c.adm_cap = o->adm_cap;
        c.admitted_now = o->admitted_now;
        c.admitted_total = o->admitted_total;
        c.evicted_total = o->evicted_total;
        c.preempting_total = o->preempting_total;
        c.counts = o->counts;
        o->counts = NULL;
        cq_free_spec(o);
    }
    c.node = -1;
    e->cqs[i] = c;
    return 0;
}

static void cohort_free(gx_cohort *c)
{
    free(c->name);
    free(c->parent_name);
    json_decref(c->manifest);
    qs_free(&c->qs);
}

static int apply_cohort(gx_engine *e, const json_t *obj, gx_err *err)
{
    const char *name;
    if (gx_engine_obj_check_name(obj, 0, &name, NULL, err) < 0) return -1;
    const json_t *spec = json_object_get(obj, "spec");
    const char *parent = gx_engine_obj_str(spec, "parentName");
    if (parent && !*parent) parent = NULL;
    if (parent && !strcmp(parent, name)) return gx_errf(err, 422, "spec.parentName", "a cohort cannot be its own parent");
    gx_cohort c;
    memset(&c, 0, sizeof c);
    if (parse_rgs(e, spec, &c.qs, parent != NULL, "parent cohort", err) < 0) { qs_free(&c.qs); return -1; }
    c.name = gx_xstrdup(name);
    c.parent_name = parent ? gx_xstrdup(parent) : NULL;
    c.manifest = json_deep_copy(obj);
    c.node = -1;
    int i = gx_strmap_geti(&e->co_map, name);
    if (i < 0) {
        GX_GROW(e->cohorts, e->n_co, e->cap_co);
        i = e->n_co++;
        gx_strmap_puti(&e->co_map, name, i);
    } else {
        cohort_free(&e->cohorts[i]);
    }
    e->cohorts[i] = c;
    return 0;
}

static int apply_rf(gx_engine *e, const json_t *obj, gx_err *err)
{
    const char *name;
    if (gx_engine_obj_check_name(obj, 0, &name, NULL, err) < 0) return -1;
    const json_t *spec = json_object_get(obj, "spec");
    gx_rf r;
    memset(&r, 0, sizeof r);
    if (gx_engine_obj_parse_labels(json_object_get(spec, "nodeLabels"), &r.node_labels, "spec.nodeLabels", err) < 0) return -1;
    if (gx_engine_obj_parse_taints(json_object_get(spec, "nodeTaints"), &r.taints, &r.n_taints, "spec.nodeTaints", err) < 0) goto bad;
    if (gx_engine_obj_parse_tols(json_object_get(spec, "tolerations"), &r.tols, &r.n_tols, "spec.tolerations", err) < 0) goto bad;
    if (r.n_taints > 8 || r.n_tols > 8) { gx_errf(err, 422, r.n_taints > 8 ? "spec.nodeTaints" : "spec.tolerations", "at most 8 allowed"); goto bad; }
    int id = gx_engine_util_intern(&e->flv, name);
    if (id >= e->rf_cap) {
        int nc = e->rf_cap ? e->rf_cap * 2 : 16;
        while (nc <= id) nc *= 2;
        e->rfs = gx_xreallocarray(e->rfs, (size_t)nc, sizeof *e->rfs);
        memset(e->rfs + e->rf_cap, 0, (size_t)(nc - e->rf_cap) * sizeof *e->rfs);
        e->rf_cap = nc;
    }
    gx_rf *o = &e->rfs[id];
    if (o->present) {
        json_decref(o->manifest);
        gx_engine_obj_labels_free(&o->node_labels);
        gx_engine_obj_taints_free(o->taints, o->n_taints);
        gx_engine_obj_tols_free(o->tols, o->n_tols);
    }
    r.present = 1;
    r.manifest = json_deep_copy(obj);
    *o = r;
    return 0;
bad:
    gx_engine_obj_labels_free(&r.node_labels);
    gx_engine_obj_taints_free(r.taints, r.n_taints);
    gx_engine_obj_tols_free(r.tols, r.n_tols);
    return -1;
}

static int apply_lq(gx_engine *e, const json_t *obj, gx_err *err)
{
    const char *name, *ns;
    if (gx_engine_obj_check_name(obj, 1, &name, &ns, err) < 0) return -1;
    const json_t *spec = json_object_get(obj, "spec");
    const char *cq = gx_engine_obj_str(spec, "clusterQueue");
    if (!cq || !*cq) return gx_errf(err, 422, "spec.clusterQueue", "spec.clusterQueue is required");
    int stop;
    if (parse_enum(spec, "stopPolicy", STOP, 3, GX_STOP_NONE, &stop, "spec.stopPolicy", err) < 0) return -1;
    char key[512];
    snprintf(key, sizeof key, "%s/%s", ns, name);
    int i = gx_strmap_geti(&e->lq_map, key);
    if (i >= 0) {
        gx_lq *o = &e->lqs[i];
        if (strcmp(o->cq_name, cq))
            return gx_errf(err, 422, "spec.clusterQueue", "spec.clusterQueue is immutable (was \"%s\")", o->cq_name);
        json_decref(o->manifest);
        o->manifest = json_deep_copy(obj);
        o->stop = stop;
        return 0;
    }
    GX_GROW(e->lqs, e->n_lq, e->cap_lq);
    i = e->n_lq++;
    gx_lq *l = &e->lqs[i];
    memset(l, 0, sizeof *l);
    l->ns = gx_xstrdup(ns);
    l->name = gx_xstrdup(name);
    l->key = gx_xstrdup(key);
    l->cq_name = gx_xstrdup(cq);
    l->manifest = json_deep_copy(obj);
    json_object_set_new(json_object_get(l->manifest, "metadata"), "namespace", json_string(ns));
    l->stop = stop;
    gx_strmap_puti(&e->lq_map, key, i);
    return 0;
}

static int apply_wpc(gx_engine *e, const json_t *obj, gx_err *err)
{
    const char *name;
    if (gx_engine_obj_check_name(obj, 0, &name, NULL, err) < 0) return -1;
    const json_t *v = json_object_get(obj, "value");
    if (!json_is_integer(v)) return gx_errf(err, 422, "value", "value (an integer priority) is required");
    json_int_t x = json_integer_value(v);
    if (x < INT32_MIN || x > 1000000000) return gx_errf(err, 422, "value", "value must be at most 1000000000");
    int i = gx_strmap_geti(&e->wpc_map, name);
    if (i < 0) {
        GX_GROW(e->wpcs, e->n_wpc, e->cap_wpc);
        i = e->n_wpc++;
        e->wpcs[i].name = gx_xstrdup(name);
        e->wpcs[i].manifest = NULL;
        gx_strmap_puti(&e->wpc_map, name, i);
    }
    json_decref(e->wpcs[i].manifest);
    e->wpcs[i].manifest = json_deep_copy(obj);
    e->wpcs[i].value = (int32_t)x;   /* existing workloads keep their priority, as in Kueue */
    return 0;
}

static int apply_node(gx_engine *e, const json_t *obj, gx_err *err)
{
    gx_node n;
    if (gx_engine_place_parse_node(obj, &n, err) < 0) return -1;
    int i = gx_strmap_geti(&e->node_map, n.name);
    if (i >= 0) {
        gx_node *o = &e->nodes[i];
        for (int g = 0; g < o->n_gpus; g++)
            if (o->gpus[g].n_users) {
                gx_engine_place_node_free(&n);
                return gx_errf(err, 409, "spec.gpus", "node %s has workloads placed on its GPUs; evict them before replacing it", o->name);
            }
        gx_engine_place_node_free(o);
        *o = n;
        return 0;
    }
    GX_GROW(e->nodes, e->n_nodes, e->cap_nodes);
    e->nodes[e->n_nodes] = n;
    gx_strmap_puti(&e->node_map, n.name, e->n_nodes++);
    return 0;
}

int gx_engine_apply(gx_engine *e, const json_t *obj, gx_err *err)
{
    gx_err_clear(err);
    if (!json_is_object(obj)) return gx_errf(err, 400, "", "an object must be a JSON/YAML map");
    const char *av = gx_engine_obj_str(obj, "apiVersion"), *kind = gx_engine_obj_str(obj, "kind");
    if (!av) return gx_errf(err, 400, "apiVersion", "apiVersion is required");
    if (!kind) return gx_errf(err, 400, "kind", "kind is required");
    int kueue = !strcmp(av, KUEUE_V1B2) || !strcmp(av, KUEUE_V1B1);
    int rc;
    if (!strcmp(av, GPUAAS_V1) && !strcmp(kind, "Node")) return apply_node(e, obj, err);
    if (!kueue) {
        if (!strcmp(kind, "Job") || !strcmp(kind, "Workload"))
            return gx_errf(err, 400, "kind", "%s is a workload: submit it instead of applying it", kind);
        return gx_errf(err, 400, "apiVersion", "unknown apiVersion/kind %s %s (expected %s or %s Node)", av, kind, KUEUE_V1B2, GPUAAS_V1);
    }
    /* the CRD's own checks first: an unknown field is refused before anything is read */
    if (gx_kueue_schema_check(obj, NULL, err)) return -1;
    json_t *copy = NULL;
    if (!strcmp(av, KUEUE_V1B1)) { copy = json_deep_copy(obj); v1beta1_fixups(copy); obj = copy; }
    if (!strcmp(kind, "ClusterQueue")) rc = apply_cq(e, obj, err);
    else if (!strcmp(kind, "Cohort")) rc = apply_cohort(e, obj, err);
    else if (!strcmp(kind, "ResourceFlavor")) rc = apply_rf(e, obj, err);
    else if (!strcmp(kind, "LocalQueue")) rc = apply_lq(e, obj, err);
    else if (!strcmp(kind, "WorkloadPriorityClass")) rc = apply_wpc(e, obj, err);
    else if (!strcmp(kind, "Workload"))
        rc = gx_errf(err, 400, "kind", "Workload is a workload: submit it instead of applying it");
    else if (!strcmp(kind, "AdmissionCheck")) rc = gx_engine_check_apply(e, obj, err);
    else if (!strcmp(kind, "Topology") || !strcmp(kind, "ProvisioningRequestConfig")
             || !strcmp(kind, "MultiKueueConfig") || !strcmp(kind, "MultiKueueCluster"))
        rc = gx_errf(err, 400, "kind", "kind %s is not supported by gpuaas", kind);
    else rc = gx_errf(err, 400, "kind", "unknown kind \"%s\" for %s", kind, av);
    json_decref(copy);
    if (rc == 0) { e->dirty = 1; e->orphans = 1; gx_engine_queue_wake_all(e); }
    return rc;
}

int gx_engine_obj_lq_cq(const gx_engine *e, int lq)
{
    if (lq < 0 || lq >= e->n_lq || !e->lqs[lq].key) return -1;
    return gx_strmap_geti(&e->cq_map, e->lqs[lq].cq_name);
}

/* ---- delete and listing --------------------------------------------------------------- */

static int cq_in_use(const gx_engine *e, int ci)
{
    const gx_cq *c = &e->cqs[ci];
    return gx_engine_queue_pending(c) || c->admitted_now;
}

int gx_engine_delete(gx_engine *e, const char *kind, const char *ns, const char *name, gx_err *err)
{
    gx_err_clear(err);
    int i;
    if (!strcmp(kind, "ClusterQueue")) {
        if ((i = gx_strmap_geti(&e->cq_map, name)) < 0) goto nf;
        if (cq_in_use(e, i)) return gx_errf(err, 409, "", "ClusterQueue %s still has pending or admitted workloads", name);
        gx_cq *c = &e->cqs[i];
        gx_strmap_del(&e->cq_map, name);
        cq_free_spec(c);
        gx_engine_queue_free(c);
        int last = e->n_cq - 1;
        for (int w = 0; w < e->n_wl; w++) {
            if (!e->wls[w].live) continue;
            if (e->wls[w].cq == i) e->wls[w].cq = -1;
            else if (e->wls[w].cq == last) e->wls[w].cq = i;
        }
        for (int r = 0; r < e->n_ready; r++) {
            if (e->ready[r] == i) e->ready[r--] = e->ready[--e->n_ready];
            else if (e->ready[r] == last) e->ready[r] = i;
        }
        if (i != last) {
            e->cqs[i] = e->cqs[last];
            gx_strmap_puti(&e->cq_map, e->cqs[i].name, i);
        }
        e->n_cq--;
    } else if (!strcmp(kind, "Cohort")) {
        if ((i = gx_strmap_geti(&e->co_map, name)) < 0) goto nf;
        gx_strmap_del(&e->co_map, name);
        cohort_free(&e->cohorts[i]);
        if (i != e->n_co - 1) {
            e->cohorts[i] = e->cohorts[e->n_co - 1];
            gx_strmap_puti(&e->co_map, e->cohorts[i].name, i);
        }
        e->n_co--;
    } else if (!strcmp(kind, "ResourceFlavor")) {
        i = gx_engine_util_lookup(&e->flv, name);
        if (i < 0 || i >= e->rf_cap || !e->rfs[i].present) goto nf;
        for (int c = 0; c < e->n_cq; c++)
            for (int g = 0; g < e->cqs[c].qs.n_rg; g++)
                for (int f = 0; f < e->cqs[c].qs.rg[g].nflv; f++)
                    if (e->cqs[c].qs.rg[g].flv[f] == i)
                        return gx_errf(err, 409, "", "ResourceFlavor %s is used by ClusterQueue %s", name, e->cqs[c].name);
        gx_rf *r = &e->rfs[i];
        json_decref(r->manifest);
        gx_engine_obj_labels_free(&r->node_labels);
        gx_engine_obj_taints_free(r->taints, r->n_taints);
        gx_engine_obj_tols_free(r->tols, r->n_tols);
        memset(r, 0, sizeof *r);
    } else if (!strcmp(kind, "LocalQueue")) {
        char key[512];
        snprintf(key, sizeof key, "%s/%s", ns && *ns ? ns : "default", name);
        if ((i = gx_strmap_geti(&e->lq_map, key)) < 0) goto nf;
        for (int w = 0; w < e->n_wl; w++)
            if (e->wls[w].live && e->wls[w].lq == i
                && (e->wls[w].state == GX_WL_PENDING || e->wls[w].state == GX_WL_ADMITTED))
                return gx_errf(err, 409, "", "LocalQueue %s still has pending or admitted workloads", key);
        gx_lq *l = &e->lqs[i];
        gx_strmap_del(&e->lq_map, key);
        free(l->ns); free(l->name); free(l->key); free(l->cq_name);
        json_decref(l->manifest);
        memset(l, 0, sizeof *l);      /* slot stays (workloads keep their lq index) */
    } else if (!strcmp(kind, "WorkloadPriorityClass")) {
        if ((i = gx_strmap_geti(&e->wpc_map, name)) < 0) goto nf;
        gx_strmap_del(&e->wpc_map, name);
        free(e->wpcs[i].name);
        json_decref(e->wpcs[i].manifest);
        if (i != e->n_wpc - 1) {
            e->wpcs[i] = e->wpcs[e->n_wpc - 1];
            gx_strmap_puti(&e->wpc_map, e->wpcs[i].name, i);
        }
        e->n_wpc--;
    } else if (!strcmp(kind, "AdmissionCheck")) {
        if (gx_engine_check_delete(e, name, err) < 0) return -1;
    } else if (!strcmp(kind, "Node")) {
        if ((i = gx_strmap_geti(&e->node_map, name)) < 0) goto nf;
        for (int g = 0; g < e->nodes[i].n_gpus; g++)
            if (e->nodes[i].gpus[g].n_users) return gx_errf(err, 409, "", "node %s has workloads placed on it", name);
        gx_strmap_del(&e->node_map, name);
        gx_engine_place_node_free(&e->nodes[i]);
        if (i != e->n_nodes - 1) {
            e->nodes[i] = e->nodes[e->n_nodes - 1];
            gx_strmap_puti(&e->node_map, e->nodes[i].name, i);
            /* placements refer to node indices: renumber the moved node */
            for (int w = 0; w < e->n_wl; w++) {
                gx_wl *wl = &e->wls[w];
                if (!wl->live || wl->state != GX_WL_ADMITTED) continue;
                int pods = (int)gx_engine_wl_pods(wl);
                for (int p = 0; wl->pl_node && p < pods; p++) if (wl->pl_node[p] == e->n_nodes - 1) wl->pl_node[p] = i;
                for (int d = 0; d < wl->n_pl_dev; d++) if (wl->pl_dev[2 * d] == e->n_nodes - 1) wl->pl_dev[2 * d] = i;
            }
        }
        e->n_nodes--;
    } else {
        return gx_errf(err, 400, "kind", "unknown kind \"%s\"", kind);
    }
    e->dirty = 1;
    gx_engine_queue_wake_all(e);
    return 0;
nf:
    return gx_errf(err, 404, "", "%s %s not found", kind, name);
}

static int by_ns_name(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    const json_t *mx = json_object_get(x, "metadata"), *my = json_object_get(y, "metadata");
    const char *nx = gx_engine_obj_str(mx, "namespace"), *ny = gx_engine_obj_str(my, "namespace");
    int c = strcmp(nx ? nx : "", ny ? ny : "");
    if (c) return c;
    nx = gx_engine_obj_str(mx, "name");
    ny = gx_engine_obj_str(my, "name");
    return strcmp(nx ? nx : "", ny ? ny : "");
}

json_t *gx_engine_objects(const gx_engine *e, const char *kind)
{
    json_t **v = NULL;
    int n = 0, cap = 0;
#define ADD(m) do { if (m) { GX_GROW(v, n, cap); v[n++] = (m); } } while (0)
    if (!strcmp(kind, "ClusterQueue")) for (int i = 0; i < e->n_cq; i++) ADD(e->cqs[i].manifest);
    else if (!strcmp(kind, "Cohort")) for (int i = 0; i < e->n_co; i++) ADD(e->cohorts[i].manifest);
    else if (!strcmp(kind, "LocalQueue")) for (int i = 0; i < e->n_lq; i++) ADD(e->lqs[i].manifest);
    else if (!strcmp(kind, "WorkloadPriorityClass")) for (int i = 0; i < e->n_wpc; i++) ADD(e->wpcs[i].manifest);
    else if (!strcmp(kind, "Node")) for (int i = 0; i < e->n_nodes; i++) ADD(e->nodes[i].manifest);
    else if (!strcmp(kind, "AdmissionCheck")) gx_engine_check_add_objects(e, &v, &n, &cap);
    else if (!strcmp(kind, "ResourceFlavor"))
        for (int i = 0; i < e->rf_cap; i++) if (e->rfs[i].present) ADD(e->rfs[i].manifest);
#undef ADD
    if (n) qsort(v, (size_t)n, sizeof *v, by_ns_name);
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_deep_copy(v[i]));
    free(v);
    return a;
}

void gx_engine_obj_free_all(gx_engine *e)
{
    for (int i = 0; i < e->n_cq; i++) { cq_free_spec(&e->cqs[i]); gx_engine_queue_free(&e->cqs[i]); }
    free(e->cqs);
    for (int i = 0; i < e->n_co; i++) cohort_free(&e->cohorts[i]);
    free(e->cohorts);
    for (int i = 0; i < e->n_lq; i++) {
        gx_lq *l = &e->lqs[i];
        free(l->ns); free(l->name); free(l->key); free(l->cq_name);
        json_decref(l->manifest);
    }
    free(e->lqs);
    for (int i = 0; i < e->n_wpc; i++) { free(e->wpcs[i].name); json_decref(e->wpcs[i].manifest); }
    free(e->wpcs);
    for (int i = 0; i < e->n_nodes; i++) gx_engine_place_node_free(&e->nodes[i]);
    free(e->nodes);
    for (int i = 0; i < e->rf_cap; i++) {
        gx_rf *r = &e->rfs[i];
        if (!r->present) continue;
        json_decref(r->manifest);
        gx_engine_obj_labels_free(&r->node_labels);
        gx_engine_obj_taints_free(r->taints, r->n_taints);
        gx_engine_obj_tols_free(r->tols, r->n_tols);
    }
    free(e->rfs);
    gx_strmap_free(&e->cq_map);
    gx_strmap_free(&e->co_map);
    gx_strmap_free(&e->lq_map);
    gx_strmap_free(&e->wpc_map);
    gx_strmap_free(&e->node_map);
}
