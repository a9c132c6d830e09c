/* objects: applying and deleting configuration objects (Kueue kinds, Nodes).
 * Owns: the all-or-nothing apply (every document is first validated on a scratch
 * engine holding the current objects, so a bad third document leaves the first two
 * unapplied), the created/configured/unchanged verdict, and their durable record.
 * Must not: validate fields itself beyond the names every kind shares: the engine (or the
 * gateway, the portal) is the one judge of a manifest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ops/daemon.h"
#include "core/kueue_schema.h"
#include "ops/k8s.h"
#include "lib/gxtime.h"
#include "lib/k8sname.h"
#include "lib/tzwin.h"
#include "lib/yaml.h"
#include "lib/alloc.h"

/* The table's index of kind, or -1. The table's order is the order of application. */
static int kind_rank(const gx_daemon *d, const char *kind)
{
    for (int i = 0; i < d->nkinds; i++)
        if (kind && !strcmp(kind, d->kinds[i].kind)) return i;
    return -1;
}

static const gx_kind *kind_of(const gx_daemon *d, const json_t *doc)
{
    int r = kind_rank(d, json_string_value(json_object_get(doc, "kind")));
    return r < 0 ? NULL : &d->kinds[r];
}

int gx_d_register_kind(gx_daemon *d, const gx_kind *k)
{
    if (d->nkinds == GX_KINDS_MAX || kind_rank(d, k->kind) >= 0) return -1;
    d->kinds[d->nkinds++] = *k;
    return 0;
}

/* ---- the engine's kinds: judged on a scratch engine, applied to the live one -------- */

/* A Reservation's occurrences are expanded here, in the shell (the engine reads no
 * clock and no tz database), for RSV_HORIZON from now: again whenever it is applied,
 * at every start included. */
#define RSV_HORIZON (26LL * 7 * 86400000LL)

static int is_reservation(const json_t *doc)
{
    return !strcmp(json_string_value(json_object_get(doc, "kind")) ?: "", "Reservation");
}

/* A refused booking's message: the engine's reason, the conflicts, the free windows. */
static void refusal_msg(const gx_rsv_refusal *why, gx_err *err)
{
    char m[sizeof err->msg], a[GX_TIME_LEN], b[GX_TIME_LEN];
    size_t at = (size_t)snprintf(m, sizeof m, "%s", why->err.msg);
    for (size_t i = 0; i < why->n_conf && at < sizeof m; i++)
        at += (size_t)snprintf(m + at, sizeof m - at, "%s%s/%s [%s, %s)", i ? ", " : "; conflicts with ", why->conf[i].ns,
                               why->conf[i].name, gx_time_fmt(why->conf[i].w.start, a, sizeof a), gx_time_fmt(why->conf[i].w.end, b, sizeof b));
    if (at < sizeof m && why->has_before)
        at += (size_t)snprintf(m + at, sizeof m - at, "; free before: [%s, %s)", gx_time_fmt(why->alt_before.start, a, sizeof a),
                               gx_time_fmt(why->alt_before.end, b, sizeof b));
    if (at < sizeof m && why->has_after)
        snprintf(m + at, sizeof m - at, "; free after: [%s, %s)", gx_time_fmt(why->alt_after.start, a, sizeof a),
                 gx_time_fmt(why->alt_after.end, b, sizeof b));
    *err = why->err;
    snprintf(err->msg, sizeof err->msg, "%s", m);
}

/* Put doc into e; a Reservation's occurrences expanded from now. A refused booking's
 * refusal is kept in *keep when keep is not NULL (the caller frees it). */
static int engine_put_why(gx_daemon *d, gx_engine *e, const json_t *doc, gx_rsv_refusal *keep, gx_err *err)
{
    if (!is_reservation(doc)) return gx_engine_apply(e, doc, err);
    int64_t now = gx_loop_now(d->loop);
    gx_tzwin_occ *o;
    long n = gx_tzwin_spec(json_object_get(doc, "spec"), 0, now, RSV_HORIZON, &o, err);
    if (n < 0) return -1;
    gx_rsv_window *w = gx_xmalloc((size_t)(n ? n : 1) * sizeof *w);
    for (long k = 0; k < n; k++) w[k] = (gx_rsv_window){o[k].start, o[k].end};
    free(o);
    gx_rsv_refusal why;
    int rc = gx_engine_reservation_apply(e, doc, w, (size_t)n, now, &why);
    free(w);
    if (rc) refusal_msg(&why, err);
    if (keep) *keep = why;
    else gx_reservation_refusal_free(&why);
    return rc;
}

static int engine_put(gx_daemon *d, gx_engine *e, const json_t *doc, gx_err *err)
{
    return engine_put_why(d, e, doc, NULL, err);
}

static int engine_validate(void *ud, const json_t *doc, json_t *const *others, size_t n, gx_err *err)
{
    (void)others; (void)n;
    gx_daemon *d = ud;
    return engine_put(d, d->scratch, doc, err);
}

static int engine_apply(void *ud, const json_t *doc, gx_err *err)
{
    gx_daemon *d = ud;
    if (engine_put(d, d->eng, doc, err)) return -1;
    d->dirty = 1;
    return 0;
}

static int engine_remove(void *ud, const char *kind, const char *ns, const char *name, gx_err *err)
{
    gx_daemon *d = ud;
    if (!strcmp(kind, "Reservation") ? gx_engine_reservation_delete(d->eng, ns ? ns : "default", name, err)
                                     : gx_engine_delete(d->eng, kind, ns, name, err)) return -1;
    d->dirty = 1;
    return 0;
}

void gx_d_register_engine_kinds(gx_daemon *d)
{
    static const char *const names[] = {"ResourceFlavor", "AdmissionCheck", "Cohort", "ClusterQueue", "LocalQueue",
                                        "WorkloadPriorityClass", "Node", "Reservation"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        int ours = !strcmp(names[i], "Node") || !strcmp(names[i], "Reservation");
        gx_kind k = {.kind = names[i],
                     .api_version = ours ? "gpuaas.dev/v1alpha1" : "kueue.x-k8s.io/v1beta2",
                     .validate = engine_validate, .apply = engine_apply, .remove = engine_remove, .ud = d};
        gx_d_register_kind(d, &k);
    }
}

static int check_kind(const gx_daemon *d, const json_t *doc, gx_err *err)
{
    if (!json_is_object(doc)) return gx_errf(err, 400, "", "a manifest must be a mapping");
    const char *av = json_string_value(json_object_get(doc, "apiVersion"));
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (!kind) return gx_errf(err, 400, "kind", "missing kind");
    if (!av) return gx_errf(err, 400, "apiVersion", "missing apiVersion");
    if (!strcmp(kind, "Job") || !strcmp(kind, "Workload"))
        return gx_errf(err, 422, "kind", "a %s is submitted, not applied: gpuaas submit -f FILE "
                       "(POST /api/v1/workloads)", kind);
    const gx_kind *k = kind_of(d, doc);
    if (!k) {
        char known[512] = "";
        size_t at = 0;
        for (int i = 0; i < d->nkinds && at < sizeof known; i++) {
            int w = snprintf(known + at, sizeof known - at, "%s%s", i ? ", " : "", d->kinds[i].kind);
            if (w < 0) break;
            at += (size_t)w;
        }
        return gx_errf(err, 400, "kind", "unknown kind %s (known: %s)", kind, known);
    }
    const char *want = k->api_version;
    /* Kueue serves AdmissionCheck in both versions, unchanged between them */
    if (!strcmp(kind, "AdmissionCheck") && !strcmp(av, "kueue.x-k8s.io/v1beta1")) return 0;
    if (strcmp(av, want)) {
        if (!strcmp(av, "kueue.x-k8s.io/v1beta1"))
            return gx_errf(err, 400, "apiVersion", "kueue.x-k8s.io/v1beta1 is deprecated; write %s "
                           "(ClusterQueue spec.cohort became spec.cohortName)", want);
        return gx_errf(err, 400, "apiVersion", "%s %s is unknown; %s is %s", av, kind, kind, want);
    }
    return 0;
}

/* Kubernetes' name rules for applied objects: every name a DNS-1123 subdomain, a
 * LocalQueue's namespace a label. Checked here for every kind (Kueue's, Node, the
 * gateway's and the portal's), before any kind's own checks. */
static int check_names(const json_t *doc, gx_err *err)
{
    const json_t *md = json_object_get(doc, "metadata");
    const char *name = json_string_value(json_object_get(md, "name"));
    if (!name || !*name) {
        if (json_object_get(md, "generateName"))
            return gx_errf(err, 422, "metadata.generateName", "apply needs a fixed metadata.name "
                           "(generateName is for what is submitted)");
        return gx_errf(err, 422, "metadata.name", "Required value: name or generateName is required");
    }
    if (gx_k8s_check_subdomain(name, GX_K8S_SUBDOMAIN_MAX, "metadata.name", err)) return -1;
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if ((!strcmp(kind, "LocalQueue") || !strcmp(kind, "Reservation")) && ns &&
        gx_k8s_check_label(ns, GX_K8S_LABEL_MAX, "metadata.namespace", err))
        return -1;
    return 0;
}

static void obj_key(const json_t *doc, char *out, size_t n, const char **kind, const char **ns, const char **name)
{
    const json_t *md = json_object_get(doc, "metadata");
    *kind = json_string_value(json_object_get(doc, "kind"));
    *name = json_string_value(json_object_get(md, "name")) ?: "";
    *ns = "";
    if (*kind && (!strcmp(*kind, "LocalQueue") || !strcmp(*kind, "Reservation")))   /* the namespaced kinds */
        *ns = json_string_value(json_object_get(md, "namespace")) ?: "default";
    snprintf(out, n, "%s/%s/%s", *kind ? *kind : "", *ns, *name);
}

/* Replay every applied object of the engine's kinds onto e (a scratch engine), in
 * table order, so the new documents are judged against what is there. */
static int apply_current(gx_daemon *d, gx_engine *e, gx_err *err)
{
    for (int r = 0; r < d->nkinds; r++) {
        if (d->kinds[r].validate != engine_validate) continue;
        const char *k;
        json_t *m;
        json_object_foreach(d->objects, k, m) {
            if (kind_rank(d, json_string_value(json_object_get(m, "kind"))) != r) continue;
            if (engine_put(d, e, m, err)) return -1;
        }
    }
    return 0;
}

/* Indices of docs sorted by kind rank, stable. */
static void order_docs(const gx_daemon *d, const gx_yaml_docs *docs, size_t *idx)
{
    size_t k = 0;
    for (int r = 0; r < d->nkinds; r++)
        for (size_t i = 0; i < docs->n; i++)
            if (kind_rank(d, json_string_value(json_object_get(docs->docs[i], "kind"))) == r) idx[k++] = i;
}

static void annotate(const gx_yaml_docs *docs, size_t i, gx_err *err)
{
    err->doc = (int)i;
    if (docs->lines && docs->lines[i]) gx_linemap_annotate(docs->lines[i], err);
}

/* A scratch engine holding the booking limits, the current objects and the configured
 * nodes: what a new document is judged against. */
static gx_engine *scratch_new(gx_daemon *d)
{
    gx_engine_opts o = {.fair_sharing = d->cfg.fair_sharing};
    gx_engine *e = gx_engine_new(&o);
    gx_d_rsv_limits(d, e);
    gx_err ignore;
    if (apply_current(d, e, &ignore)) {
        /* cannot happen unless the store holds something the engine now refuses */
        fprintf(stderr, "gpuaas: warning: stored objects no longer validate: %s\n", ignore.msg);
    }
    size_t ni;
    json_t *node;
    json_array_foreach(d->cfg.nodes, ni, node) gx_engine_apply(e, node, &ignore);
    return e;
}

/* ops/reservations.c wants a refusal whole (conflicts, free windows), not as apply's one
 * message: the booking judged alone on a scratch engine, as apply would judge it. */
int gx_d_reservation_judge(gx_daemon *d, const json_t *doc, gx_rsv_refusal *why, gx_err *err)
{
    gx_engine *e = scratch_new(d);
    memset(why, 0, sizeof *why);
    int rc = engine_put_why(d, e, doc, why, err);
    gx_engine_free(e);
    return rc;
}

/* A recurring booking's occurrences expanded again from now on the live engine
 * (ops/reservations.c's daily refresh); nothing is recorded: the object is unchanged. */
int gx_d_reservation_reput(gx_daemon *d, const json_t *doc, gx_err *err)
{
    if (engine_put(d, d->eng, doc, err)) return -1;
    d->dirty = 1;
    return 0;
}

/* Every document judged by its owner, the engine's on a scratch engine holding the
 * current objects and the configured nodes: nothing is recorded unless all pass. */
static int validate_all(gx_daemon *d, const gx_yaml_docs *docs, const size_t *idx, gx_err *err)
{
    d->scratch = scratch_new(d);
    int rc = 0;
    for (size_t k = 0; k < docs->n && !rc; k++) {
        const json_t *doc = docs->docs[idx[k]];
        const gx_kind *kd = kind_of(d, doc);
        if (kd->validate && kd->validate(kd->ud, doc, docs->docs, docs->n, err)) {
            annotate(docs, idx[k], err);
            rc = -1;
        }
    }
    gx_engine_free(d->scratch);
    d->scratch = NULL;
    return rc;
}

/* Put the live state back as it was before docs[idx[0..n)] were taken into effect:
 * in reverse, an object that existed gets its old manifest again, a new one goes. */
static void undo_applied(gx_daemon *d, const gx_yaml_docs *docs, const size_t *idx, size_t n, json_t *const *old)
{
    while (n-- > 0) {
        const json_t *doc = docs->docs[idx[n]];
        const gx_kind *kd = kind_of(d, doc);
        char key[512];
        const char *kind, *ns, *name;
        obj_key(doc, key, sizeof key, &kind, &ns, &name);
        gx_err e;
        gx_err_clear(&e);
        if (old[n] ? kd->apply && kd->apply(kd->ud, old[n], &e)
                   : kd->remove && kd->remove(kd->ud, kind, ns, name, &e))
            fprintf(stderr, "gpuaas: error: cannot undo %s after a failed apply: %s\n", key, e.msg);
    }
}

/* The fields of the applied Kueue objects that gpuaas accepts but ignores: the answer's
 * "warnings" (only when there are some), one sentence each naming the object and field,
 * so that nothing the user wrote is dropped without a word. */
static void add_warnings(const gx_yaml_docs *docs, json_t *result)
{
    json_t *w = json_array();
    for (size_t i = 0; i < docs->n; i++) {
        gx_err ignore;
        gx_err_clear(&ignore);
        gx_kueue_schema_check(docs->docs[i], w, &ignore);
    }
    if (json_array_size(w)) json_object_set_new(result, "warnings", w);
    else json_decref(w);
}

static int is_list(const json_t *doc)
{
    return json_is_object(doc) && !strcmp(json_string_value(json_object_get(doc, "kind")) ?: "", "List") &&
           !strcmp(json_string_value(json_object_get(doc, "apiVersion")) ?: "", "v1");
}

/* A v1 List (what `get KIND -o yaml` prints) is applied as its items, as kubectl does:
 * the documents with every List replaced by its items, one level deep. */
static int apply_lists(gx_daemon *d, const gx_yaml_docs *docs, json_t **result, gx_err *err)
{
    size_t n = 0;
    for (size_t i = 0; i < docs->n; i++) n += is_list(docs->docs[i]) ? json_array_size(json_object_get(docs->docs[i], "items")) : 1;
    if (n > 1000) return gx_errf(err, 413, "", "more than 1000 objects in one apply");
    gx_yaml_docs flat = {.n = 0, .docs = gx_xcalloc(n ? n : 1, sizeof(json_t *))};
    for (size_t i = 0; i < docs->n; i++) {
        if (!is_list(docs->docs[i])) { flat.docs[flat.n++] = docs->docs[i]; continue; }
        size_t k;
        json_t *it;
        json_array_foreach(json_object_get(docs->docs[i], "items"), k, it) flat.docs[flat.n++] = it;
    }
    int rc = gx_d_apply(d, &flat, result, err);
    free(flat.docs);
    return rc;
}

int gx_d_apply(gx_daemon *d, const gx_yaml_docs *docs, json_t **result, gx_err *err)
{
    if (docs->n > 1000) return gx_errf(err, 413, "", "more than 1000 objects in one apply");
    for (size_t i = 0; i < docs->n; i++)
        if (is_list(docs->docs[i]) && json_is_array(json_object_get(docs->docs[i], "items"))) return apply_lists(d, docs, result, err);
    /* what `get -o yaml` adds (status, creationTimestamp...) is the server's, not the
     * user's: dropped, so that its output applies back as "unchanged" */
    for (size_t i = 0; i < docs->n; i++) gx_k8s_strip_server_fields(docs->docs[i]);
    for (size_t i = 0; i < docs->n; i++)
        if (check_kind(d, docs->docs[i], err) || check_names(docs->docs[i], err)) { annotate(docs, i, err); return -1; }
    size_t *idx = gx_xcalloc(docs->n, sizeof *idx);
    json_t **old = gx_xcalloc(docs->n, sizeof *old);
    order_docs(d, docs, idx);
    json_t *items = json_array();
    size_t applied = 0;
    /* 1. every owner judges its documents */
    if (validate_all(d, docs, idx, err)) goto fail;
    /* 2. record, take into effect, and only then commit: a document that does not take
     * effect (or a commit that fails) rolls the record back and the live state too */
    int64_t now = gx_loop_now(d->loop);
    if (gx_store_begin(d->store, err)) goto fail;
    for (size_t k = 0; k < docs->n; k++) {
        const json_t *doc = docs->docs[idx[k]];
        char key[512];
        const char *kind, *ns, *name;
        obj_key(doc, key, sizeof key, &kind, &ns, &name);
        json_t *cur = json_object_get(d->objects, key);
        const char *action = !cur ? "created" : json_equal(cur, (json_t *)doc) ? "unchanged" : "configured";
        json_t *item = json_pack("{s:s,s:s,s:s}", "kind", kind, "name", name, "action", action);
        if (*ns) json_object_set_new(item, "namespace", json_string(ns));
        json_array_append_new(items, item);
        if (!strcmp(action, "unchanged")) continue;
        if (gx_store_put_object(d->store, kind, ns, name, doc, now, err)) goto rollback;
    }
    for (; applied < docs->n; applied++) {
        const json_t *doc = docs->docs[idx[applied]];
        const gx_kind *kd = kind_of(d, doc);
        char key[512];
        const char *kind, *ns, *name;
        obj_key(doc, key, sizeof key, &kind, &ns, &name);
        old[applied] = json_incref(json_object_get(d->objects, key));
        if (kd->apply && kd->apply(kd->ud, doc, err)) {
            gx_err why = *err;
            gx_errf(err, why.status ? why.status : 500, why.field, "%s: %s", key, why.msg);
            annotate(docs, idx[applied], err);
            undo_applied(d, docs, idx, applied, old);
            goto rollback;
        }
    }
    if (gx_store_commit(d->store, err)) {
        undo_applied(d, docs, idx, applied, old);
        goto rollback;
    }
    for (size_t k = 0; k < docs->n; k++) {
        char key[512];
        const char *kind, *ns, *name;
        obj_key(docs->docs[idx[k]], key, sizeof key, &kind, &ns, &name);
        json_object_set_new(d->objects, key, json_deep_copy(docs->docs[idx[k]]));
        if (d->created && !json_object_get(d->created, key)) json_object_set_new(d->created, key, json_integer(now));
    }
    for (size_t k = 0; k < applied; k++) json_decref(old[k]);
    free(old);
    free(idx);
    *result = json_pack("{s:o}", "items", items);
    add_warnings(docs, *result);
    return 0;
rollback:
    gx_store_rollback(d->store);
fail:
    for (size_t k = 0; k < applied; k++) json_decref(old[k]);
    json_decref(items);
    free(old);
    free(idx);
    return -1;
}

int gx_d_load_objects(gx_daemon *d, gx_err *err)
{
    gx_d_rsv_limits(d, d->eng);   /* before the stored bookings, which they bound */
    json_t *rows = gx_store_objects(d->store, err);
    if (!rows) return -1;
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        char key[512];
        snprintf(key, sizeof key, "%s/%s/%s", json_string_value(json_object_get(r, "kind")),
                 json_string_value(json_object_get(r, "namespace")), json_string_value(json_object_get(r, "name")));
        json_object_set(d->objects, key, json_object_get(r, "manifest"));
        if (d->created) json_object_set(d->created, key, json_object_get(r, "createdMs"));
    }
    json_decref(rows);
    for (int k = 0; k < d->nkinds; k++) {
        const char *key;
        json_t *m;
        json_object_foreach(d->objects, key, m) {
            if (kind_rank(d, json_string_value(json_object_get(m, "kind"))) != k || !d->kinds[k].apply) continue;
            gx_err e;
            gx_err_clear(&e);
            if (d->kinds[k].apply(d->kinds[k].ud, m, &e))
                fprintf(stderr, "gpuaas: warning: stored %s no longer applies: %s\n", key, e.msg);
        }
    }
    return 0;
}

int gx_d_delete_object(gx_daemon *d, const char *kind, const char *ns, const char *name, gx_err *err)
{
    char key[512];
    snprintf(key, sizeof key, "%s/%s/%s", kind, ns ? ns : "", name);
    const json_t *cur = json_object_get(d->objects, key);
    int r = kind_rank(d, kind);
    if (!cur || r < 0) return gx_errf(err, 404, "", "no %s %s%s%s", kind, ns && *ns ? ns : "", ns && *ns ? "/" : "", name);
    const gx_kind *kd = &d->kinds[r];
    /* the owner may refuse (a queue still in use); then nothing changes */
    if (kd->remove && kd->remove(kd->ud, kind, ns, name, err)) return -1;
    if (gx_store_delete_object(d->store, kind, ns, name, err)) {
        gx_err e;
        if (kd->apply && kd->apply(kd->ud, cur, &e)) /* put it back */
            fprintf(stderr, "gpuaas: error: %s is deleted in memory but not in the store: %s\n", key, e.msg);
        return -1;
    }
    json_object_del(d->objects, key);
    if (d->created) json_object_del(d->created, key);
    return 0;
}

const json_t *gx_d_objects(const gx_daemon *d) { return d->objects; }
const gx_engine *gx_d_engine(const gx_daemon *d) { return d->eng; }
