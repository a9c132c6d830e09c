/* fleet/status: the read-back's memory and the fleet request's view (status.h).
 * Owns: per (cluster, kind) the last copy of each object ("ns/name" -> object), the
 * names a relist in progress has named, each cluster's health; the view of a Job from
 * its Workload (found by ownerReferences) in the local view's words (ops/workloads.c
 * add_phase, core/engine_view.c why_reason), and queue positions among a cluster's
 * pending Workloads.
 * Must not: do I/O or read a clock; decide anything a cluster's Kueue decides (the view
 * only reports what its objects say). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fleet/status.h"
#include "lib/alloc.h"
#include "lib/gxtime.h"

struct gx_fleet_status {
    json_t *tables;    /* "cluster\nkind" -> {"ns/name" -> object} */
    json_t *seen;      /* "cluster\nkind" -> {"ns/name" -> true} while a relist runs */
    json_t *clusters;  /* cluster -> {connected, lastError, lastEventAt (ms|null), fresh (an event since)} */
};

gx_fleet_status *gx_fleet_status_new(void)
{
    gx_fleet_status *s = gx_xcalloc(1, sizeof *s);
    s->tables = json_object();
    s->seen = json_object();
    s->clusters = json_object();
    if (!s->tables || !s->seen || !s->clusters) abort();   /* jansson out of memory: as gx_xmalloc */
    return s;
}

void gx_fleet_status_free(gx_fleet_status *s)
{
    if (!s) return;
    json_decref(s->tables);
    json_decref(s->seen);
    json_decref(s->clusters);
    free(s);
}

static void table_key(char *buf, size_t n, const char *cluster, const char *kind)
{
    snprintf(buf, n, "%s\n%s", cluster, kind);
}

/* The table of (cluster, kind); made when create is set. */
static json_t *table(const gx_fleet_status *s, const char *cluster, const char *kind, int create)
{
    char k[256];
    table_key(k, sizeof k, cluster, kind);
    json_t *t = json_object_get(s->tables, k);
    if (!t && create) {
        t = json_object();
        json_object_set_new(s->tables, k, t);
    }
    return t;
}

static const char *meta_str(const json_t *o, const char *key)
{
    return json_string_value(json_object_get(json_object_get(o, "metadata"), key));
}

/* "ns/name" of an object (ns empty for cluster-scoped ones); -1 without a name. */
static int obj_key(const json_t *o, char *buf, size_t n)
{
    const char *name = meta_str(o, "name"), *ns = meta_str(o, "namespace");
    if (!name || !*name) return -1;
    int w = snprintf(buf, n, "%s/%s", ns ? ns : "", name);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

static json_t *cluster_rec(gx_fleet_status *s, const char *cluster)
{
    json_t *c = json_object_get(s->clusters, cluster);
    if (!c) {
        c = json_pack("{s:b,s:n,s:n,s:b}", "connected", 0, "lastError", "lastEventAt", "fresh", 0);
        json_object_set_new(s->clusters, cluster, c);
    }
    return c;
}

void gx_fleet_status_event(gx_fleet_status *s, const char *cluster, const char *kind, const char *type, const json_t *obj)
{
    char k[600];
    if (!json_is_object(obj) || obj_key(obj, k, sizeof k)) return;
    json_t *t = table(s, cluster, kind, 1);
    if (!strcmp(type, "DELETED")) json_object_del(t, k);
    else if (!strcmp(type, "ADDED") || !strcmp(type, "MODIFIED")) json_object_set_new(t, k, json_deep_copy(obj));
    else return;
    char tk[256];
    table_key(tk, sizeof tk, cluster, kind);
    json_t *seen = json_object_get(s->seen, tk);
    if (seen) json_object_set_new(seen, k, json_true());
    json_object_set_new(cluster_rec(s, cluster), "fresh", json_true());
}

void gx_fleet_status_relist_begin(gx_fleet_status *s, const char *cluster, const char *kind)
{
    char tk[256];
    table_key(tk, sizeof tk, cluster, kind);
    json_object_set_new(s->seen, tk, json_object());   /* a relist cut short starts over */
}

void gx_fleet_status_relist_end(gx_fleet_status *s, const char *cluster, const char *kind)
{
    char tk[256];
    table_key(tk, sizeof tk, cluster, kind);
    json_t *seen = json_object_get(s->seen, tk);
    json_t *t = table(s, cluster, kind, 1);
    if (!seen) return;
    const char *k;
    json_t *v;
    void *it;
    json_object_foreach_safe(t, it, k, v) {
        (void)v;
        if (!json_object_get(seen, k)) json_object_del(t, k);
    }
    json_object_del(s->seen, tk);
    json_object_set_new(cluster_rec(s, cluster), "fresh", json_true());
}

void gx_fleet_status_connection(gx_fleet_status *s, const char *cluster, int connected, const char *error, int64_t now_ms)
{
    json_t *c = cluster_rec(s, cluster);
    json_object_set_new(c, "connected", json_boolean(connected));
    json_object_set_new(c, "lastError", error ? json_string(error) : json_null());
    if (json_is_true(json_object_get(c, "fresh"))) {
        json_object_set_new(c, "lastEventAt", json_integer(now_ms));
        json_object_set_new(c, "fresh", json_false());
    }
}

json_t *gx_fleet_status_cluster(const gx_fleet_status *s, const char *cluster)
{
    json_t *c = json_object_get(s->clusters, cluster);
    if (!c) return NULL;
    json_t *at = json_object_get(c, "lastEventAt");
    char t[GX_TIME_LEN];
    return json_pack("{s:O,s:O,s:o}", "connected", json_object_get(c, "connected"), "lastError",
                     json_object_get(c, "lastError"),
                     "lastEventAt", json_is_integer(at) ? json_string(gx_time_fmt(json_integer_value(at), t, sizeof t))
                                                        : json_null());
}

/* ---- the view ---------------------------------------------------------------------- */

/* The condition of type among the Workload's, or NULL. */
static json_t *cond(const json_t *o, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(o, "status"), "conditions"), i, c) {
        const char *t = json_string_value(json_object_get(c, "type"));
        if (t && !strcmp(t, type)) return c;
    }
    return NULL;
}

static int cond_true(const json_t *o, const char *type)
{
    const char *st = json_string_value(json_object_get(cond(o, type), "status"));
    return st && !strcmp(st, "True");
}

static const char *cstr(const json_t *c, const char *key) { return json_string_value(json_object_get(c, key)); }

/* Kueue's state of a Workload, in our engine's words. */
static const char *wl_state(const json_t *wl)
{
    if (cond_true(wl, "Finished")) return "Finished";
    json_t *active = json_object_get(json_object_get(wl, "spec"), "active");
    if (json_is_false(active) || cond_true(wl, "Deactivated")) return "Deactivated";
    if (cond_true(wl, "Admitted")) return "Admitted";
    return "Pending";
}

/* A pending Workload's reason word from Kueue's "why it waits" message, as our engine
 * names the same causes (core/engine_view.c why_reason), so that the portal and CLI
 * read a fleet request as they read local work. */
static const char *pending_reason(const char *reason, const char *msg)
{
    if (reason && !strcmp(reason, "Inadmissible")) return "Inadmissible";
    if (!msg) return reason && *reason ? reason : "Pending";
    if (strstr(msg, "insufficient unused quota")) return "WaitingForQuota";
    if (strstr(msg, "maximum capacity") || strstr(msg, "insufficient quota")) return "ExceedsMaxQuota";
    if (strstr(msg, "borrowing limit")) return "BorrowingLimitReached";
    if (strstr(msg, "preemption")) return "WaitingForPreemption";
    if (strstr(msg, "doesn't exist") || strstr(msg, "is inactive") || strstr(msg, "is stopped") ||
        strstr(msg, "namespaceSelector"))
        return "Inadmissible";
    if (strstr(msg, "doesn't match") || strstr(msg, "untolerated taint") || strstr(msg, "flavor")) return "NoMatchingFlavor";
    return reason && *reason ? reason : "Pending";
}

/* Is the Workload owned by Job ns/name (Kueue's job integration)? */
static int owned_by(const json_t *wl, const char *ns, const char *name)
{
    const char *wns = meta_str(wl, "namespace");
    if (!wns || strcmp(wns, ns)) return 0;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(json_object_get(wl, "metadata"), "ownerReferences"), i, r) {
        const char *k = cstr(r, "kind"), *n = cstr(r, "name");
        if (k && n && !strcmp(k, "Job") && !strcmp(n, name)) return 1;
    }
    return 0;
}

/* The ClusterQueue a Workload is in: its admission's, else its LocalQueue's. */
static const char *wl_cq(const gx_fleet_status *s, const char *cluster, const json_t *wl)
{
    const char *cq = cstr(json_object_get(json_object_get(wl, "status"), "admission"), "clusterQueue");
    if (cq) return cq;
    const char *lq = cstr(json_object_get(wl, "spec"), "queueName"), *ns = meta_str(wl, "namespace");
    if (!lq || !ns) return NULL;
    char k[600];
    snprintf(k, sizeof k, "%s/%s", ns, lq);
    return cstr(json_object_get(json_object_get(table(s, cluster, "LocalQueue", 0), k), "spec"), "clusterQueue");
}

/* Waiting in its queue: not finished, active, no quota reserved. */
static int queued(const json_t *wl)
{
    return !strcmp(wl_state(wl), "Pending") && !cond_true(wl, "QuotaReserved");
}

static int64_t created(const json_t *wl)
{
    int64_t ms = 0;
    const char *t = meta_str(wl, "creationTimestamp");
    if (t) gx_time_parse(t, &ms);
    return ms;
}

/* Does a go before b in its queue? By priority, then creation, then name (stable). */
static int before(const json_t *a, const json_t *b)
{
    json_int_t pa = json_integer_value(json_object_get(json_object_get(a, "spec"), "priority"));
    json_int_t pb = json_integer_value(json_object_get(json_object_get(b, "spec"), "priority"));
    if (pa != pb) return pa > pb;
    int64_t ca = created(a), cb = created(b);
    if (ca != cb) return ca < cb;
    char ka[600], kb[600];
    if (obj_key(a, ka, sizeof ka) || obj_key(b, kb, sizeof kb)) return 0;
    return strcmp(ka, kb) < 0;
}

/* 0-based positions of wl among cluster's queued Workloads of its ClusterQueue and of
 * its LocalQueue. */
static void positions(const gx_fleet_status *s, const char *cluster, const json_t *wl, json_t *v)
{
    const char *cq = wl_cq(s, cluster, wl), *lq = cstr(json_object_get(wl, "spec"), "queueName"),
               *ns = meta_str(wl, "namespace");
    json_int_t pcq = 0, plq = 0;
    const char *k;
    json_t *o;
    json_object_foreach(table(s, cluster, "Workload", 0), k, o) {
        if (o == wl || !queued(o) || !before(o, wl)) continue;
        const char *ocq = wl_cq(s, cluster, o), *olq = cstr(json_object_get(o, "spec"), "queueName"),
                   *ons = meta_str(o, "namespace");
        if (cq && ocq && !strcmp(cq, ocq)) pcq++;
        if (lq && olq && ns && ons && !strcmp(lq, olq) && !strcmp(ns, ons)) plq++;
    }
    if (cq) json_object_set_new(v, "positionInClusterQueue", json_integer(pcq));
    if (lq) json_object_set_new(v, "positionInLocalQueue", json_integer(plq));
}

/* pods: [{index, state}] from the Job's counts: the succeeded, the failed, the running. */
static json_t *pods(const json_t *job)
{
    json_t *a = json_array(), *st = json_object_get(job, "status");
    static const char *const keys[] = {"succeeded", "failed", "active"};
    static const char *const words[] = {"Succeeded", "Failed", "Running"};
    json_int_t idx = 0;
    for (size_t i = 0; i < 3; i++) {
        json_int_t n = json_integer_value(json_object_get(st, keys[i]));
        for (json_int_t j = 0; j < n && idx < 1024; j++)
            json_array_append_new(a, json_pack("{s:I,s:s}", "index", idx++, "state", words[i]));
    }
    return a;
}

/* The Job's own ending (Complete / Failed condition), or NULL. */
static const char *job_end(const json_t *job)
{
    if (!job) return NULL;
    if (cond_true(job, "Complete")) return "Succeeded";
    if (cond_true(job, "Failed")) return "Failed";
    return NULL;
}

static void set_str(json_t *v, const char *key, const char *s) { json_object_set_new(v, key, json_string(s ? s : "")); }

/* state, phase, reason, message and times from the Workload (and the Job's counts). */
static void from_workload(const gx_fleet_status *s, const char *cluster, const json_t *wl, const json_t *job, json_t *v)
{
    const char *state = wl_state(wl), *phase = state, *reason = state, *msg = "";
    json_t *st = json_object_get(wl, "status");
    if (!strcmp(state, "Pending")) {
        json_t *qr = cond(wl, "QuotaReserved"), *ad = cond(wl, "Admitted");
        if (cond_true(wl, "QuotaReserved")) {   /* quota held: waits for its admission checks */
            reason = ad && cstr(ad, "reason") ? cstr(ad, "reason") : "QuotaReserved";
            msg = ad && cstr(ad, "message") ? cstr(ad, "message") : "";
        } else {
            reason = pending_reason(cstr(qr, "reason"), cstr(qr, "message"));
            msg = qr && cstr(qr, "message") ? cstr(qr, "message") : "";
        }
        positions(s, cluster, wl, v);
    } else if (!strcmp(state, "Admitted")) {
        json_int_t active = json_integer_value(json_object_get(json_object_get(job, "status"), "active"));
        phase = reason = active > 0 ? "Running" : "Admitted";
        msg = cstr(cond(wl, "Admitted"), "message");
    } else if (!strcmp(state, "Finished")) {
        json_t *f = cond(wl, "Finished");
        const char *fr = cstr(f, "reason");
        phase = job_end(job);
        if (!phase) phase = fr && (!strcmp(fr, "Failed") || strstr(cstr(f, "message") ?: "", "failed")) ? "Failed" : "Succeeded";
        reason = phase;
        msg = cstr(f, "message");
    } else {
        json_t *c = cond(wl, "Deactivated");
        if (!c || !cond_true(wl, "Deactivated")) c = cond(wl, "Evicted");
        reason = c && cstr(c, "reason") ? cstr(c, "reason") : "Deactivated";
        msg = cstr(c, "message");
    }
    set_str(v, "state", state);
    set_str(v, "phase", phase);
    set_str(v, "reason", reason);
    set_str(v, "message", msg);
    json_object_set(v, "conditions", json_object_get(st, "conditions") ?: json_array());
    json_t *adm = json_object_get(st, "admission");
    if (adm) json_object_set_new(v, "admission", json_deep_copy(adm));
    const char *cq = wl_cq(s, cluster, wl);
    if (cq) set_str(v, "clusterQueue", cq);
    if (cstr(json_object_get(wl, "spec"), "queueName")) set_str(v, "queueName", cstr(json_object_get(wl, "spec"), "queueName"));
    if (cond_true(wl, "Admitted") && cstr(cond(wl, "Admitted"), "lastTransitionTime"))
        set_str(v, "admittedAt", cstr(cond(wl, "Admitted"), "lastTransitionTime"));
    if (cond_true(wl, "Finished") && cstr(cond(wl, "Finished"), "lastTransitionTime"))
        set_str(v, "finishedAt", cstr(cond(wl, "Finished"), "lastTransitionTime"));
    set_str(v, "remoteWorkload", meta_str(wl, "name"));
}

/* Only the Job is known (Kueue has not made its Workload yet, or it is gone). */
static void from_job(const json_t *job, json_t *v)
{
    const char *end = job_end(job);
    set_str(v, "state", end ? "Finished" : "Pending");
    set_str(v, "phase", end ? end : "Pending");
    set_str(v, "reason", end ? end : "Pending");
    set_str(v, "message", end ? "" : "waiting for Kueue to create the Job's Workload");
    json_object_set_new(v, "conditions", json_array());
    const char *done = cstr(json_object_get(job, "status"), "completionTime");
    if (end && done) set_str(v, "finishedAt", done);
}

json_t *gx_fleet_status_job(const gx_fleet_status *s, const char *cluster, const char *ns, const char *name)
{
    char k[600];
    snprintf(k, sizeof k, "%s/%s", ns, name);
    json_t *job = json_object_get(table(s, cluster, "Job", 0), k), *wl = NULL;
    const char *wk;
    json_t *o;
    json_object_foreach(table(s, cluster, "Workload", 0), wk, o) {
        if (owned_by(o, ns, name)) { wl = o; break; }
    }
    if (!job && !wl) return NULL;
    json_t *v = json_pack("{s:s}", "cluster", cluster);
    if (wl) from_workload(s, cluster, wl, job, v);
    else from_job(job, v);
    json_object_set_new(v, "pods", pods(job));
    return v;
}
