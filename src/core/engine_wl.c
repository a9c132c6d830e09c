/* engine_wl: workloads: parsing Jobs and Workloads, and the workload state machine.
 * Owns: gx_engine_new/free, prepare/submit/restore/finish/cancel/evict/remove, the
 * workload table, releasing quota and devices, conditions.
 * Must not: decide admission (engine_sched) or format views (engine_view). A
 * workload keeps no manifest: only the parsed fields, so 50k of them stay small. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/engine_int.h"
#include "core/quantity.h"
#include "core/share_place.h"
#include "lib/gxtime.h"

#define L_QUEUE "kueue.x-k8s.io/queue-name"
#define L_PRIO "kueue.x-k8s.io/priority-class"
#define L_MAXEXEC "kueue.x-k8s.io/max-exec-time-seconds"
#define A_MINPAR "kueue.x-k8s.io/job-min-parallelism"

gx_engine *gx_engine_new(const gx_engine_opts *opts)
{
    gx_engine *e = gx_xcalloc(1, sizeof *e);
    if (!e) return NULL;
    if (opts) e->opts = *opts;
    e->dirty = 1;
    return e;
}

static void podsets_free(gx_podset *ps, int n)
{
    for (int i = 0; i < n; i++) {
        free(ps[i].name);
        free(ps[i].res);
        free(ps[i].req);
        gx_engine_obj_labels_free(&ps[i].node_selector);
        gx_engine_obj_tols_free(ps[i].tols, ps[i].n_tols);
        json_decref(ps[i].affinity);
    }
    free(ps);
}

void gx_engine_wl_spec_clear(struct gx_wl_spec *s)
{
    free(s->ns); free(s->name); free(s->kind); free(s->lq_name); free(s->pc_name);
    podsets_free(s->ps, s->nps);
    memset(s, 0, sizeof *s);
}

const char *gx_engine_spec_key(const gx_wl_spec *s, char *buf, size_t n)
{
    snprintf(buf, n, "%s/%s", s->ns, s->name);
    return buf;
}

void gx_engine_spec_free(gx_wl_spec *s)
{
    if (!s) return;
    gx_engine_wl_spec_clear(s);
    free(s);
}

void gx_engine_wl_clear_adm(gx_wl *w)
{
    if (w->adm) for (int i = 0; i < w->s.nps; i++) free(w->adm[i].flv);
    free(w->adm);
    w->adm = NULL;
    free(w->use_fr);
    free(w->use_amt);
    w->use_fr = NULL;
    w->use_amt = NULL;
    w->n_use = 0;
}

static void wl_free(gx_wl *w)
{
    free(w->key);
    gx_engine_wl_clear_adm(w);          /* before the spec: it needs nps */
    gx_engine_wl_spec_clear(&w->s);
    free(w->pl_node);
    free(w->pl_dev);
    free(w->pl_devpod);
    for (int c = 0; c < GX_C_N; c++) free(w->cond[c].msg);
    gx_engine_check_wl_free(w);
    memset(w, 0, sizeof *w);
}

void gx_engine_free(gx_engine *e)
{
    if (!e) return;
    for (int i = 0; i < e->n_wl; i++) if (e->wls[i].live) wl_free(&e->wls[i]);
    free(e->wls);
    free(e->free_wl);
    gx_strmap_free(&e->wl_map);
    gx_engine_quota_free(e);
    gx_share_engine_free(e);
    gx_engine_obj_free_all(e);
    gx_engine_check_free_all(e);
    gx_engine_rsv_free(e);
    gx_engine_util_names_free(&e->res);
    gx_engine_util_names_free(&e->flv);
    gx_engine_util_names_free(&e->reasons);
    gx_engine_util_names_free(&e->fr);
    free(e->fr_flv);
    free(e->fr_res);
    free(e->ready);
    free(e->acts);
    free(e->ents);
    free(e->pcache.t);
    free(e->pcache.v);
    free(e->rsv_node);
    free(e->rsv_fr);
    free(e->rsv_amt);
    free(e);
}

gx_wl *gx_engine_wl_get(const gx_engine *e, const char *key)
{
    int i = gx_strmap_geti(&e->wl_map, key);
    return i < 0 ? NULL : &e->wls[i];
}

int64_t gx_engine_wl_pods(const gx_wl *w)
{
    int64_t n = 0;
    for (int i = 0; i < w->s.nps; i++) n += w->adm ? w->adm[i].count : w->s.ps[i].count;
    return n;
}

void gx_engine_wl_set_cond(gx_wl *w, int c, int status, const char *reason, char *msg, int64_t t)
{
    gx_cond *k = &w->cond[c];
    if (!k->set || k->status != status) k->t = t;
    k->set = 1;
    k->status = (uint8_t)status;
    k->reason = reason;
    free(k->msg);
    k->msg = msg;
}

static char *msgf(const char *fmt, const char *a, const char *b)
{
    char buf[512];
    snprintf(buf, sizeof buf, fmt, a ? a : "", b ? b : "");
    return gx_xstrdup(buf);
}

/* ---- parsing ---------------------------------------------------------------------------- */

static const char *jstr(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static int add_req(gx_engine *e, gx_podset *ps, const char *res, int64_t v, int mode)
{
    int id = gx_engine_util_intern(&e->res, res);
    for (int i = 0; i < ps->nreq; i++)
        if (ps->res[i] == id) {
            if (mode == 0) ps->req[i] += v;                 /* containers: sum */
            else if (v > ps->req[i]) ps->req[i] = v;        /* init containers: max */
            return 0;
        }
    ps->res = gx_xreallocarray(ps->res, (size_t)(ps->nreq + 1), sizeof(int));
    ps->req = gx_xreallocarray(ps->req, (size_t)(ps->nreq + 1), sizeof(int64_t));
    ps->res[ps->nreq] = id;
    ps->req[ps->nreq++] = v;
    return 0;
}

/* Sum a container list's requests (limits when a request is absent, as Kubernetes
 * defaults them). */
static int container_reqs(gx_engine *e, const json_t *cs, const char *field, gx_podset *ps, int mode, gx_err *err)
{
    gx_podset tmp;
    memset(&tmp, 0, sizeof tmp);
    gx_podset *dst = mode == 0 ? ps : &tmp;
    if (cs && !json_is_array(cs)) return gx_errf(err, 422, field, "must be a list of containers");
    for (size_t i = 0; i < json_array_size(cs); i++) {
        const json_t *c = json_array_get(cs, i);
        const json_t *rs = json_object_get(c, "resources");
        const json_t *req = json_object_get(rs, "requests"), *lim = json_object_get(rs, "limits");
        const char *k;
        json_t *v;
        char f[192];
        json_object_foreach((json_t *)req, k, v) {
            int64_t q;
            snprintf(f, sizeof f, "%s[%zu].resources.requests[\"%s\"]", field, i, k);
            if (gx_quantity_from_json(v, &q, f, err) < 0) goto bad;
            add_req(e, dst, k, q, 0);
        }
        json_object_foreach((json_t *)lim, k, v) {
            int64_t q;
            snprintf(f, sizeof f, "%s[%zu].resources.limits[\"%s\"]", field, i, k);
            if (gx_quantity_from_json(v, &q, f, err) < 0) goto bad;
            if (!json_object_get(req, k)) add_req(e, dst, k, q, 0);
        }
    }
    if (mode == 1) {
        for (int i = 0; i < tmp.nreq; i++) add_req(e, ps, e->res.s[tmp.res[i]], tmp.req[i], 1);
        free(tmp.res);
        free(tmp.req);
    }
    return 0;
bad:
    if (mode == 1) { free(tmp.res); free(tmp.req); }
    return -1;
}

static int parse_template(gx_engine *e, const json_t *tpl, const char *field, gx_podset *ps, gx_err *err)
{
    const json_t *spec = json_object_get(tpl, "spec");
    char f[192];
    snprintf(f, sizeof f, "%s.spec.containers", field);
    const json_t *cs = json_object_get(spec, "containers");
    if (!json_is_array(cs) || !json_array_size(cs)) return gx_errf(err, 422, f, "the pod template needs at least one container");
    if (container_reqs(e, cs, f, ps, 0, err) < 0) return -1;
    snprintf(f, sizeof f, "%s.spec.initContainers", field);
    if (container_reqs(e, json_object_get(spec, "initContainers"), f, ps, 1, err) < 0) return -1;
    snprintf(f, sizeof f, "%s.spec.nodeSelector", field);
    if (gx_engine_obj_parse_labels(json_object_get(spec, "nodeSelector"), &ps->node_selector, f, err) < 0) return -1;
    snprintf(f, sizeof f, "%s.spec.tolerations", field);
    if (gx_engine_obj_parse_tols(json_object_get(spec, "tolerations"), &ps->tols, &ps->n_tols, f, err) < 0) return -1;
    snprintf(f, sizeof f, "%s.spec", field);
    if (gx_engine_obj_parse_affinity(spec, &ps->affinity, f, err) < 0) return -1;
    if (ps->nreq > GX_MAX_REQ - 1)
        return gx_errf(err, 422, field, "a pod requests %d different resources; at most %d are supported", ps->nreq, GX_MAX_REQ - 1);
    /* drop zero requests: they need no quota */
    int j = 0;
    for (int i = 0; i < ps->nreq; i++)
        if (ps->req[i] > 0) { ps->res[j] = ps->res[i]; ps->req[j++] = ps->req[i]; }
    ps->nreq = j;
    return 0;
}

static int parse_int_label(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    if (!s || !*s) return -1;
    char *end;
    long long v = strtoll(s, &end, 10);
    if (*end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static int parse_job(gx_engine *e, const json_t *job, gx_wl_spec *s, gx_err *err)
{
    const json_t *md = json_object_get(job, "metadata");
    const json_t *labels = json_object_get(md, "labels"), *ann = json_object_get(md, "annotations");
    const json_t *spec = json_object_get(job, "spec");
    const char *q = jstr(labels, L_QUEUE);
    if (q) s->lq_name = gx_xstrdup(q);
    const char *pc = jstr(labels, L_PRIO);
    if (pc) s->pc_name = gx_xstrdup(pc);
    const char *mx = jstr(labels, L_MAXEXEC);
    if (mx && parse_int_label(mx, 1, INT32_MAX, &s->max_exec_s) < 0)
        return gx_errf(err, 422, "metadata.labels[\"" L_MAXEXEC "\"]", "must be a positive whole number of seconds, got \"%s\"", mx);
    int64_t par = 1, comp = -1, minp = 0;
    const json_t *pj = json_object_get(spec, "parallelism"), *cj = json_object_get(spec, "completions");
    if (pj && !json_is_null(pj)) {
        if (!json_is_integer(pj) || json_integer_value(pj) < 0)
            return gx_errf(err, 422, "spec.parallelism", "parallelism must be a whole number >= 0");
        par = json_integer_value(pj);
    }
    if (cj && !json_is_null(cj)) {
        if (!json_is_integer(cj) || json_integer_value(cj) < 0)
            return gx_errf(err, 422, "spec.completions", "completions must be a whole number >= 0");
        comp = json_integer_value(cj);
    }
    int64_t count = comp >= 0 && comp < par ? comp : par;
    const char *mp = jstr(ann, A_MINPAR);
    if (mp && (parse_int_label(mp, 1, count, &minp) < 0))
        return gx_errf(err, 422, "metadata.annotations[\"" A_MINPAR "\"]", "must be a whole number between 1 and the job's pod count (%lld), got \"%s\"", (long long)count, mp);
    if (count > INT32_MAX) return gx_errf(err, 422, "spec.parallelism", "too many pods");
    s->nps = 1;
    s->ps = gx_xcalloc(1, sizeof *s->ps);
    s->ps[0].name = gx_xstrdup("main");
    s->ps[0].count = (int32_t)count;
    s->ps[0].min_count = minp ? (int32_t)minp : (int32_t)count;
    return parse_template(e, json_object_get(spec, "template"), "spec.template", &s->ps[0], err);
}

static int parse_workload(gx_engine *e, const json_t *wl, gx_wl_spec *s, gx_err *err)
{
    const json_t *spec = json_object_get(wl, "spec");
    const char *q = jstr(spec, "queueName");
    if (!q) q = jstr(json_object_get(json_object_get(wl, "metadata"), "labels"), L_QUEUE);
    if (q) s->lq_name = gx_xstrdup(q);
    const json_t *pref = json_object_get(spec, "priorityClassRef");
    const char *pc = pref ? jstr(pref, "name") : jstr(spec, "priorityClassName");
    if (pc) s->pc_name = gx_xstrdup(pc);
    const json_t *pr = json_object_get(spec, "priority");
    if (pr && json_is_integer(pr)) { s->has_priority = 1; s->priority = (int32_t)json_integer_value(pr); }
    const json_t *mx = json_object_get(spec, "maximumExecutionTimeSeconds");
    if (mx && !json_is_null(mx)) {
        if (!json_is_integer(mx) || json_integer_value(mx) < 1)
            return gx_errf(err, 422, "spec.maximumExecutionTimeSeconds", "must be a positive whole number");
        s->max_exec_s = json_integer_value(mx);
    }
    const json_t *pss = json_object_get(spec, "podSets");
    if (!json_is_array(pss) || json_array_size(pss) < 1 || json_array_size(pss) > GX_MAX_PODSETS)
        return gx_errf(err, 422, "spec.podSets", "podSets must list 1 to %d pod sets", GX_MAX_PODSETS);
    s->nps = (int)json_array_size(pss);
    s->ps = gx_xcalloc((size_t)s->nps, sizeof *s->ps);
    for (int i = 0; i < s->nps; i++) {
        const json_t *p = json_array_get(pss, (size_t)i);
        char f[128];
        snprintf(f, sizeof f, "spec.podSets[%d]", i);
        const char *nm = jstr(p, "name");
        s->ps[i].name = gx_xstrdup(nm ? nm : "main");
        const json_t *c = json_object_get(p, "count"), *mc = json_object_get(p, "minCount");
        int64_t cnt = 1;
        if (c && (!json_is_integer(c) || json_integer_value(c) < 0 || json_integer_value(c) > INT32_MAX))
            return gx_errf(err, 422, f, "count must be a whole number >= 0");
        if (c) cnt = json_integer_value(c);
        s->ps[i].count = (int32_t)cnt;
        s->ps[i].min_count = (int32_t)cnt;
        if (mc && !json_is_null(mc)) {
            if (!json_is_integer(mc) || json_integer_value(mc) < 1 || json_integer_value(mc) > cnt)
                return gx_errf(err, 422, f, "minCount must be between 1 and count");
            s->ps[i].min_count = (int32_t)json_integer_value(mc);
        }
        char t[160];
        snprintf(t, sizeof t, "%s.template", f);
        if (parse_template(e, json_object_get(p, "template"), t, &s->ps[i], err) < 0) return -1;
    }
    return 0;
}

int gx_engine_prepare(gx_engine *e, const json_t *job, gx_wl_spec **out, gx_err *err)
{
    gx_err_clear(err);
    *out = NULL;
    if (!json_is_object(job)) return gx_errf(err, 400, "", "a workload must be a JSON/YAML map");
    const char *av = jstr(job, "apiVersion"), *kind = jstr(job, "kind");
    int is_job = av && kind && !strcmp(av, "batch/v1") && !strcmp(kind, "Job");
    int is_wl = av && kind && (!strcmp(av, "kueue.x-k8s.io/v1beta2") || !strcmp(av, "kueue.x-k8s.io/v1beta1"))
                && !strcmp(kind, "Workload");
    if (!is_job && !is_wl)
        return gx_errf(err, 400, kind ? "kind" : "apiVersion", "expected a batch/v1 Job or a kueue.x-k8s.io/v1beta2 Workload, got %s %s",
                       av ? av : "(no apiVersion)", kind ? kind : "(no kind)");
    const json_t *md = json_object_get(job, "metadata");
    const char *name = jstr(md, "name"), *ns = jstr(md, "namespace");
    char gen[300];
    if ((!name || !*name) && jstr(md, "generateName") && *jstr(md, "generateName")) {
        /* Kubernetes appends 5 random characters; ours are deterministic (a counter) */
        static const char digits[] = "0123456789bcdfghjklmnpqrstvwxz";
        uint64_t n = ++e->gen_seq;
        char suf[6];
        for (int i = 4; i >= 0; i--) { suf[i] = digits[n % 30]; n /= 30; }
        suf[5] = 0;
        snprintf(gen, sizeof gen, "%s%s", jstr(md, "generateName"), suf);
        name = gen;
    }
    if (!name || !*name) return gx_errf(err, 422, "metadata.name", "metadata.name (or metadata.generateName) is required");
    if (strlen(name) > 253 || (ns && strlen(ns) > 63)) return gx_errf(err, 422, "metadata.name", "name too long");
    gx_wl_spec *s = gx_xcalloc(1, sizeof *s);
    const char *boost = jstr(json_object_get(md, "annotations"), "kueue.x-k8s.io/priority-boost");
    int64_t b = 0;
    if (boost && parse_int_label(boost[0] == '-' ? boost + 1 : boost, 0, INT32_MAX, &b) < 0) {
        free(s);
        return gx_errf(err, 422, "metadata.annotations[\"kueue.x-k8s.io/priority-boost\"]", "must be a whole number, got \"%s\"", boost);
    }
    s->boost = (int32_t)(boost && boost[0] == '-' ? -b : b);
    s->name = gx_xstrdup(name);
    s->ns = gx_xstrdup(ns && *ns ? ns : "default");
    s->kind = gx_xstrdup(kind);
    if ((is_job ? parse_job(e, job, s, err) : parse_workload(e, job, s, err)) < 0) {
        gx_engine_spec_free(s);
        return -1;
    }
    *out = s;
    return 0;
}

/* ---- queue membership ------------------------------------------------------------------ */

static int alloc_wl(gx_engine *e)
{
    if (e->n_free_wl) return e->free_wl[--e->n_free_wl];
    GX_GROW(e->wls, e->n_wl, e->cap_wl);
    memset(&e->wls[e->n_wl], 0, sizeof e->wls[0]);
    return e->n_wl++;
}

/* Resolve the spec's LocalQueue, ClusterQueue and priority; 422 on what Kueue would
 * leave stuck forever (unknown queue or class, resources no flavor covers). */
static int resolve(gx_engine *e, const gx_wl_spec *s, int *lq, int *cq, int32_t *prio, gx_err *err)
{
    const char *qfield = !strcmp(s->kind, "Job") ? "metadata.labels[\"" L_QUEUE "\"]" : "spec.queueName";
    char key[512];
    const char *qn = s->lq_name ? s->lq_name : "default";
    snprintf(key, sizeof key, "%s/%s", s->ns, qn);
    *lq = gx_strmap_geti(&e->lq_map, key);
    if (*lq < 0) {
        if (!s->lq_name) return gx_errf(err, 422, qfield, "no queue given: set the label %s to a LocalQueue of namespace %s", L_QUEUE, s->ns);
        return gx_errf(err, 422, qfield, "LocalQueue \"%s\" does not exist in namespace %s", s->lq_name, s->ns);
    }
    *prio = 0;
    if (s->pc_name) {
        int p = gx_strmap_geti(&e->wpc_map, s->pc_name);
        const char *pf = !strcmp(s->kind, "Job") ? "metadata.labels[\"" L_PRIO "\"]" : "spec.priorityClassRef.name";
        if (p < 0) return gx_errf(err, 422, pf, "WorkloadPriorityClass \"%s\" does not exist", s->pc_name);
        *prio = e->wpcs[p].value;
    }
    if (s->has_priority) *prio = s->priority;
    *prio += s->boost;               /* Kueue's effective priority */
    *cq = gx_engine_obj_lq_cq(e, *lq);
    if (*cq >= 0) {
        gx_engine_quota_ensure(e);
        const gx_cq *c = &e->cqs[*cq];
        for (int i = 0; i < s->nps; i++)
            for (int r = 0; r < s->ps[i].nreq; r++) {
                int res = s->ps[i].res[r];
                if (res >= c->n_res_map || c->res_rg[res] < 0) {
                    char f[192];
                    snprintf(f, sizeof f, "%s.containers", !strcmp(s->kind, "Job") ? "spec.template.spec" : "spec.podSets");
                    return gx_errf(err, 422, f, "resource %s is not covered by any flavor of ClusterQueue %s",
                                   e->res.s[res], c->name);
                }
            }
    }
    return 0;
}

int gx_engine_submit_spec(gx_engine *e, gx_wl_spec *s, int64_t now_ms, gx_err *err)
{
    gx_err_clear(err);
    char key[600];
    snprintf(key, sizeof key, "%s/%s", s->ns, s->name);
    if (gx_strmap_geti(&e->wl_map, key) >= 0) {
        gx_errf(err, 409, "metadata.name", "workload %s already exists", key);
        gx_engine_spec_free(s);
        return -1;
    }
    int lq = -1, cq = -1;
    int32_t prio = 0;
    if (resolve(e, s, &lq, &cq, &prio, err) < 0) { gx_engine_spec_free(s); return -1; }
    if (cq >= 0) {
        /* Kueue counts pods as a resource when the ClusterQueue covers "pods" */
        int pods = gx_engine_util_lookup(&e->res, "pods");
        const gx_cq *c = &e->cqs[cq];
        if (pods >= 0 && pods < c->n_res_map && c->res_rg[pods] >= 0)
            for (int i = 0; i < s->nps; i++) {
                int has = 0;
                for (int r = 0; r < s->ps[i].nreq; r++) has |= s->ps[i].res[r] == pods;
                if (!has && s->ps[i].nreq < GX_MAX_REQ) add_req(e, &s->ps[i], "pods", 1000, 0);
            }
    }
    int wi = alloc_wl(e);
    gx_wl *w = &e->wls[wi];
    memset(w, 0, sizeof *w);
    w->live = 1;
    w->key = gx_xstrdup(key);
    w->s = *s;
    free(s);
    w->lq = lq;
    w->cq = cq;
    w->priority = prio;
    w->seq = ++e->seq;
    w->created = w->queue_ts = now_ms;
    w->acc_ms = w->s.acc_ms;
    w->heap_pos = w->qgroup = w->adm_pos = -1;
    w->hash = gx_engine_queue_hash(w);
    w->state = GX_WL_PENDING;
    w->why.kind = cq < 0 ? GX_WHY_NO_CQ : GX_WHY_QUEUED;
    gx_engine_wl_set_cond(w, GX_C_QUOTA, 0, "Pending", NULL, now_ms);
    gx_strmap_puti(&e->wl_map, key, wi);
    if (cq >= 0) gx_engine_queue_push(e, cq, wi);
    else e->orphans = 1;
    return 0;
}

int gx_engine_submit(gx_engine *e, const json_t *job, int64_t now_ms, gx_err *err)
{
    gx_wl_spec *s;
    if (gx_engine_prepare(e, job, &s, err) < 0) return -1;
    return gx_engine_submit_spec(e, s, now_ms, err);
}

/* Attach pending workloads whose ClusterQueue did not exist when they arrived. */
void gx_engine_wl_attach_orphans(gx_engine *e)
{
    for (int i = 0; i < e->n_wl; i++) {
        gx_wl *w = &e->wls[i];
        if (!w->live || w->state != GX_WL_PENDING || w->cq >= 0) continue;
        int cq = gx_engine_obj_lq_cq(e, w->lq);
        if (cq < 0) continue;
        w->cq = cq;
        w->why.kind = GX_WHY_QUEUED;
        gx_engine_queue_push(e, cq, i);
    }
}

/* ---- transitions ---------------------------------------------------------------------- */

void gx_engine_wl_release(gx_engine *e, gx_wl *w)
{
    gx_engine_quota_ensure(e);
    e->qversion++;
    if (w->cq >= 0) {
        int node = e->cqs[w->cq].node;
        for (int u = 0; u < w->n_use; u++) gx_engine_quota_sub(e, node, w->use_fr[u], w->use_amt[u]);
        gx_cq *c = &e->cqs[w->cq];
        c->admitted_now--;
        if (w->adm_pos >= 0 && w->adm_pos < c->adm_n && c->adm[w->adm_pos] == (int)(w - e->wls)) {
            c->adm[w->adm_pos] = c->adm[--c->adm_n];
            if (w->adm_pos < c->adm_n) e->wls[c->adm[w->adm_pos]].adm_pos = w->adm_pos;
        }
        w->adm_pos = -1;
    }
    if (w->lq >= 0 && w->lq < e->n_lq) e->lqs[w->lq].admitted_now--;
    gx_engine_place_release(e, w);
    gx_engine_wl_clear_adm(w);
    if (w->max_exec_tracked) { w->max_exec_tracked = 0; e->n_max_exec--; }
}

static int lookup(gx_engine *e, const char *key, gx_wl **w, gx_err *err)
{
    gx_err_clear(err);
    *w = key ? gx_engine_wl_get(e, key) : NULL;
    if (!*w) return gx_errf(err, 404, "", "workload %s not found", key ? key : "(null)");
    return 0;
}

int gx_engine_finish(gx_engine *e, const char *key, int succeeded, const char *message, int64_t now_ms, gx_err *err)
{
    gx_wl *w;
    if (lookup(e, key, &w, err) < 0) return -1;
    if (w->state != GX_WL_ADMITTED || w->chk_wait) return gx_errf(err, 409, "", "workload %s is not admitted", key);
    gx_engine_wl_release(e, w);
    w->state = GX_WL_FINISHED;
    w->succeeded = succeeded ? 1 : 0;
    w->finished_at = now_ms;
    gx_engine_wl_set_cond(w, GX_C_FINISHED, 1, succeeded ? "Succeeded" : "Failed",
                          gx_xstrdup(message && *message ? message : succeeded ? "Job finished successfully" : "Job failed"), now_ms);
    gx_engine_queue_wake_tree(e, w->cq);
    return 0;
}

/* Shared by cancel and the maximum-execution-time expiry. */
void gx_engine_wl_deactivate(gx_engine *e, gx_wl *w, const char *reason, char *msg, int64_t now)
{
    if (w->state == GX_WL_ADMITTED) {
        gx_engine_wl_release(e, w);
        gx_engine_wl_set_cond(w, GX_C_QUOTA, 0, reason, NULL, now);
        gx_engine_wl_set_cond(w, GX_C_ADMITTED, 0, reason, NULL, now);
        gx_engine_wl_set_cond(w, GX_C_EVICTED, 1, reason, msg ? gx_xstrdup(msg) : NULL, now);
        if (w->cq >= 0) { e->cqs[w->cq].evicted_total++; gx_engine_count_evict(&e->cqs[w->cq], w, reason, 1); }
        gx_engine_queue_wake_tree(e, w->cq);
    } else {
        gx_engine_queue_remove(e, w);
    }
    gx_engine_wl_set_cond(w, GX_C_REQUEUED, 0, reason, msg, now);
    w->state = GX_WL_DEACTIVATED;
    w->finished_at = now;
}

int gx_engine_cancel(gx_engine *e, const char *key, const char *message, int64_t now_ms, gx_err *err)
{
    gx_wl *w;
    if (lookup(e, key, &w, err) < 0) return -1;
    if (w->state != GX_WL_PENDING && w->state != GX_WL_ADMITTED)
        return gx_errf(err, 409, "", "workload %s has already ended", key);
    int was = w->state == GX_WL_ADMITTED && !w->chk_wait;   /* waiting for checks: nothing runs */
    gx_engine_wl_deactivate(e, w, "Deactivated",
                            gx_xstrdup(message && *message ? message : "The workload was cancelled"), now_ms);
    return was;
}

void gx_engine_wl_evict(gx_engine *e, gx_wl *w, const char *reason, char *msg, int64_t now)
{
    if (!w->chk_wait) w->acc_ms += now - w->admitted_at;   /* a reservation did not run */
    gx_engine_check_reset(e, w, now);
    gx_engine_wl_release(e, w);
    w->state = GX_WL_PENDING;
    gx_engine_wl_set_cond(w, GX_C_EVICTED, 1, reason, msg, now);
    gx_engine_wl_set_cond(w, GX_C_QUOTA, 0, "Pending", NULL, now);
    gx_engine_wl_set_cond(w, GX_C_ADMITTED, 0, "NoReservation", gx_xstrdup("The workload has no reservation"), now);
    gx_engine_wl_set_cond(w, GX_C_REQUEUED, 1, reason, NULL, now);
    w->why.kind = GX_WHY_QUEUED;
    if (w->cq >= 0) {
        e->cqs[w->cq].evicted_total++;
        gx_engine_count_evict(&e->cqs[w->cq], w, reason, 0);
        gx_engine_queue_push(e, w->cq, (int)(w - e->wls));
    }
}

int gx_engine_evict(gx_engine *e, const char *key, const char *reason, const char *message, int64_t now_ms, gx_err *err)
{
    gx_wl *w;
    if (lookup(e, key, &w, err) < 0) return -1;
    if (w->state != GX_WL_ADMITTED) return gx_errf(err, 409, "", "workload %s is not admitted", key);
    gx_engine_wl_evict(e, w, reason && *reason ? reason : "Evicted",
                       msgf("%s%s", message && *message ? message : "The workload was evicted", ""), now_ms);
    gx_engine_queue_wake_tree(e, w->cq);
    return 0;
}

/* An idle reclamation (core/idle) must let waiting work in: ordering the evicted
 * workload by its creation, as a preemption does, would readmit it first. */
int gx_engine_requeue_back(gx_engine *e, const char *key, const char *reason, const char *message,
                           int64_t now_ms, gx_err *err)
{
    gx_wl *w;
    if (lookup(e, key, &w, err) < 0) return -1;
    if (w->state != GX_WL_ADMITTED) return gx_errf(err, 409, "", "workload %s is not admitted", key);
    w->queue_ts = now_ms;
    return gx_engine_evict(e, key, reason, message, now_ms, err);
}

/* A cancellation that says why (an idle policy's stop: reason Idle), not "Deactivated". */
int gx_engine_deactivate_for(gx_engine *e, const char *key, const char *reason, const char *message,
                             int64_t now_ms, gx_err *err)
{
    gx_wl *w;
    if (lookup(e, key, &w, err) < 0) return -1;
    if (w->state != GX_WL_PENDING && w->state != GX_WL_ADMITTED)
        return gx_errf(err, 409, "", "workload %s has already ended", key);
    int was = w->state == GX_WL_ADMITTED && !w->chk_wait;
    gx_engine_wl_deactivate(e, w, reason && *reason ? reason : "Deactivated",
                            gx_xstrdup(message && *message ? message : "The workload was deactivated"), now_ms);
    return was;
}

int gx_engine_remove(gx_engine *e, const char *key, gx_err *err)
{
    gx_wl *w;
    if (lookup(e, key, &w, err) < 0) return -1;
    if (w->state != GX_WL_FINISHED && w->state != GX_WL_DEACTIVATED)
        return gx_errf(err, 409, "", "workload %s has not ended: cancel it first", key);
    int wi = (int)(w - e->wls);
    gx_strmap_del(&e->wl_map, key);
    wl_free(w);
    GX_GROW(e->free_wl, e->n_free_wl, e->cap_free_wl);
    e->free_wl[e->n_free_wl++] = wi;
    return 0;
}

/* Re-create a workload from its manifest and the status gx_engine_workload() gave. */
/* Put back the conditions a status recorded (types, reasons, messages and times), so a
 * restart loses none of a workload's history. Derived conditions of a pending workload
 * (why it waits) are recomputed by the view anyway. */
static void restore_conditions(gx_engine *e, gx_wl *w, const json_t *status)
{
    static const char *const types[GX_C_N] = {"QuotaReserved", "Admitted", "Evicted", "Preempted", "Requeued",
                                              "Finished", "Deactivated"};
    size_t i;
    const json_t *c;
    json_array_foreach(json_object_get(status, "conditions"), i, c) {
        const char *type = jstr(c, "type"), *reason = jstr(c, "reason"), *msg = jstr(c, "message");
        int k = -1;
        for (int x = 0; x < GX_C_N && type; x++)
            if (!strcmp(types[x], type)) k = x;
        if (k < 0) continue;
        const char *st = jstr(c, "status");
        int64_t t = 0;
        gx_time_parse(jstr(c, "lastTransitionTime"), &t);
        const char *r = NULL;
        if (reason && *reason) {
            int id = gx_engine_util_intern(&e->reasons, reason); /* may grow the table: index after */
            r = e->reasons.s[id];
        }
        gx_engine_wl_set_cond(w, k, st && !strcmp(st, "True"), r, msg && *msg ? gx_xstrdup(msg) : NULL, t);
        w->cond[k].t = t;
    }
}

int gx_engine_restore(gx_engine *e, const json_t *job, const json_t *status, gx_err *err)
{
    gx_wl_spec *s;
    if (gx_engine_prepare(e, job, &s, err) < 0) return -1;
    int64_t created = 0, t;
    if (gx_time_parse(jstr(status, "createdAt"), &t) == 0) created = t;
    const json_t *acc = json_object_get(status, "accumulatedPastExecutionTimeSeconds");
    if (json_is_integer(acc)) s->acc_ms = json_integer_value(acc) * 1000;
    if (gx_engine_submit_spec(e, s, created, err) < 0) return -1;
    char key[600];
    const json_t *md = json_object_get(job, "metadata");
    const char *ns = jstr(md, "namespace");
    snprintf(key, sizeof key, "%s/%s", ns && *ns ? ns : "default", jstr(md, "name"));
    gx_wl *w = gx_engine_wl_get(e, key);
    const char *st = jstr(status, "state");
    int reserved = gx_engine_check_restoring(status);   /* quota held, waiting for checks */
    if (!st || (!strcmp(st, "Pending") && !reserved)) return 0;
    gx_engine_queue_remove(e, w);
    if (!strcmp(st, "Admitted") || reserved) {
        gx_assign a;
        memset(&a, 0, sizeof a);
        a.mode = GX_M_FIT;
        const json_t *psa = json_object_get(json_object_get(status, "admission"), "podSetAssignments");
        gx_engine_quota_ensure(e);
        for (int ps = 0; ps < w->s.nps; ps++) {
            const json_t *pa = json_array_get(psa, (size_t)ps);
            const json_t *cnt = json_object_get(pa, "count");
            a.count[ps] = json_is_integer(cnt) ? (int32_t)json_integer_value(cnt) : w->s.ps[ps].count;
            for (int r = 0; r < w->s.ps[ps].nreq; r++) {
                const char *fl = jstr(json_object_get(pa, "flavors"), e->res.s[w->s.ps[ps].res[r]]);
                int f = fl ? gx_engine_util_intern(&e->flv, fl) : 0;
                a.flv[ps][r] = f;
                int fr = gx_engine_obj_fr(e, f, w->s.ps[ps].res[r]);
                int64_t v = w->s.ps[ps].req[r] * a.count[ps];
                int found = 0;
                for (int u = 0; u < a.n_use; u++) if (a.use_fr[u] == fr) { a.use_amt[u] += v; found = 1; }
                if (!found && a.n_use < GX_MAX_USE) { a.use_fr[a.n_use] = fr; a.use_amt[a.n_use++] = v; }
            }
        }
        if (w->cq < 0) return gx_errf(err, 409, "status.admission", "ClusterQueue of admitted workload %s is gone", key);
        if (e->fr.n > e->n_fr_tree) e->dirty = 1, gx_engine_quota_ensure(e);
        int64_t adm = created;
        if (gx_time_parse(jstr(status, "admittedAt"), &t) == 0) adm = t;
        gx_engine_sched_admit(e, w, &a, adm, 0);
        gx_engine_place_restore(e, w, json_object_get(status, "placement"));
        gx_engine_check_restore(e, w, status, adm);
        restore_conditions(e, w, status);
        return 0;
    }
    w->state = !strcmp(st, "Finished") ? GX_WL_FINISHED : GX_WL_DEACTIVATED;
    const json_t *sc = json_object_get(status, "succeeded");
    w->succeeded = json_is_true(sc);
    w->finished_at = created;
    if (gx_time_parse(jstr(status, "finishedAt"), &t) == 0) w->finished_at = t;
    /* An ended workload still shows when it was last admitted (the view's admittedAt):
     * without this it would read 0 (1970) and be written back to the store so. */
    w->admitted_at = created;
    if (gx_time_parse(jstr(status, "admittedAt"), &t) == 0) w->admitted_at = t;
    if (w->state == GX_WL_FINISHED)
        gx_engine_wl_set_cond(w, GX_C_FINISHED, 1, w->succeeded ? "Succeeded" : "Failed", NULL, w->finished_at);
    else
        gx_engine_wl_set_cond(w, GX_C_REQUEUED, 0, "Deactivated", NULL, w->finished_at);
    gx_engine_check_restore(e, w, status, w->admitted_at);
    restore_conditions(e, w, status);
    return 0;
}

size_t gx_engine_count(const gx_engine *e, const char *state)
{
    if (!state) return gx_engine_count_phase(e, GX_PHASE_ABSENT);
    gx_wl_phase p = gx_engine_phase_parse(state);
    return p == GX_PHASE_ABSENT ? 0 : gx_engine_count_phase(e, p);
}

void gx_engine_set_fair_sharing(gx_engine *e, int on)
{
    e->opts.fair_sharing = on ? 1 : 0;
    gx_engine_queue_wake_all(e);
}
