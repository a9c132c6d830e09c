/* fleet_view: how fleet requests and clusters look from outside (docs/api.md): a
 * request as a workload with its cluster and publish state, the remote status merged in
 * once its cluster reports one; the clusters a user may target; the /metrics lines.
 * Must not: change a request (ops/fleet.c does) or wait on anything. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/alloc.h"
#include "lib/gxtime.h"
#include "lib/sbuf.h"
#include "ops/fleet_int.h"

static json_t *publish_of(const fl_req *r)
{
    json_t *p = json_pack("{s:s,s:s,s:I}", "state", gx_fl_state_names[r->state], "path", r->path, "attempts",
                          (json_int_t)r->attempts);
    if (r->commit[0]) json_object_set_new(p, "commit", json_string(r->commit));
    if (r->last_error) json_object_set_new(p, "lastError", json_string(r->last_error));
    if (r->next_at && (r->state == FL_PENDING || r->state == FL_REMOVING)) {
        char t[40];
        json_object_set_new(p, "nextAttemptAt", json_string(gx_time_fmt(r->next_at, t, sizeof t)));
    }
    if (r->published_ms) {
        char t[40];
        json_object_set_new(p, "publishedAt", json_string(gx_time_fmt(r->published_ms, t, sizeof t)));
    }
    if (r->note) json_object_set_new(p, "note", json_string(r->note));
    return p;
}

/* The remote status's fields a local workload's view has too (docs/api.md, workload). */
static const char *const REMOTE[] = {"state", "phase", "reason", "message", "conditions", "admission", "clusterQueue",
                                     "positionInClusterQueue", "positionInLocalQueue", "pods", "admittedAt",
                                     "finishedAt"};

json_t *gx_fl_view(gx_daemon *d, const fl_req *r)
{
    gx_d_fleet *f = d->fleet;
    int64_t now = gx_loop_now(d->loop);
    char t[40], msg[1024];
    const json_t *md = json_object_get(r->manifest, "metadata");
    json_t *v = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:o,s:[],s:[]}", "key", r->k.key, "namespace", r->k.ns, "name",
                          r->k.name, "kind", "Job", "cluster", r->cluster, "createdAt",
                          gx_time_fmt(r->created_ms, t, sizeof t), "publish", publish_of(r), "conditions", "pods");
    const char *q = json_string_value(json_object_get(json_object_get(md, "labels"), "kueue.x-k8s.io/queue-name"));
    if (q) json_object_set_new(v, "queueName", json_string(q));
    json_object_set_new(v, "requestedBy", json_string(r->user));
    const char *state = "Pending", *phase = "Pending", *reason = "NotYetPublished";
    msg[0] = 0;
    if (r->state == FL_PENDING) {
        if (r->last_error) {
            int64_t in = r->next_at > now ? (r->next_at - now + 999) / 1000 : 0;
            snprintf(msg, sizeof msg, "not yet published to cluster %s: %s; next try in %llds", r->cluster,
                     r->last_error, (long long)in);
        } else {
            snprintf(msg, sizeof msg, "not yet published to cluster %s", r->cluster);
        }
    } else {
        const gx_fleet_cluster *c = f->doc ? gx_fleet_find(&f->fleet, r->cluster) : NULL;
        json_t *st = f->status ? gx_fleet_status_job(f->status, r->cluster, r->k.ns, r->k.name) : NULL;
        const char *rph = json_string_value(json_object_get(st, "phase"));
        int ended = rph && (!strcmp(rph, "Succeeded") || !strcmp(rph, "Failed"));
        if (st) {
            for (size_t i = 0; i < sizeof REMOTE / sizeof *REMOTE; i++) {
                json_t *x = json_object_get(st, REMOTE[i]);
                if (x) json_object_set(v, REMOTE[i], x);
            }
            json_decref(st);
        } else {
            reason = "Published";
            char short_commit[8];
            memcpy(short_commit, r->commit, 7);
            short_commit[7] = 0;
            if (c && c->kubeconfig)
                snprintf(msg, sizeof msg, "published to cluster %s as commit %s; waiting for its status", r->cluster,
                         short_commit);
            else
                snprintf(msg, sizeof msg, "published to cluster %s as commit %s; no status read-back configured for "
                         "cluster %s", r->cluster, short_commit, r->cluster);
        }
        if (r->state != FL_PUBLISHED && ended) {
            /* it ran to its end and then expired: the end is what a person wants to see; that
             * its file left git is housekeeping, in publish.state and the message */
            const char *said = json_string_value(json_object_get(v, "message")) ?: "";
            json_object_set_new(v, "message", json_sprintf("%s%s%s; %s cluster %s's folder", said, *said ? " " : "",
                                                           r->note ? r->note : "expired",
                                                           r->state == FL_REMOVED ? "removed from" : "being removed from",
                                                           r->cluster));
            return v;
        }
        if (r->state != FL_PUBLISHED) {
            /* its file leaves git (or has left): say so above whatever the cluster said */
            state = "Deactivated";
            phase = "Deactivated";
            reason = r->state == FL_REMOVED ? "Removed" : "Removing";
            if (r->state == FL_REMOVING && r->last_error)
                snprintf(msg, sizeof msg, "%s; not yet removed from cluster %s: %s; next try in %llds",
                         r->note ? r->note : "removing", r->cluster, r->last_error,
                         (long long)(r->next_at > now ? (r->next_at - now + 999) / 1000 : 0));
            else
                snprintf(msg, sizeof msg, "%s; %s cluster %s's folder", r->note ? r->note : "removed",
                         r->state == FL_REMOVED ? "removed from" : "being removed from", r->cluster);
        } else if (!st) {
            state = "Pending";
        } else {
            return v;   /* the cluster's words, as local work shows its own */
        }
    }
    json_object_set_new(v, "state", json_string(state));
    json_object_set_new(v, "phase", json_string(phase));
    json_object_set_new(v, "reason", json_string(reason));
    json_object_set_new(v, "message", json_string(msg));
    return v;
}

json_t *gx_d_fleet_view(gx_daemon *d, const char *key)
{
    fl_req *r = gx_fl_find(d->fleet, key);
    return r ? gx_fl_view(d, r) : NULL;
}

static int queue_matches(const json_t *v, const char *want)
{
    const char *q = json_string_value(json_object_get(v, "queueName"));
    if (!q) return 0;
    const char *slash = strchr(want, '/');
    if (!slash) return !strcmp(q, want);
    const char *ns = json_string_value(json_object_get(v, "namespace")) ?: "";
    return strlen(ns) == (size_t)(slash - want) && !strncmp(ns, want, (size_t)(slash - want)) && !strcmp(q, slash + 1);
}

static int cmp_key(const void *a, const void *b)
{
    const char *x = json_string_value(json_object_get(*(json_t *const *)a, "key")) ?: "";
    const char *y = json_string_value(json_object_get(*(json_t *const *)b, "key")) ?: "";
    const char *sx = strchr(x, '/'), *sy = strchr(y, '/');
    size_t lx = sx ? (size_t)(sx - x) : strlen(x), ly = sy ? (size_t)(sy - y) : strlen(y);
    int c = strncmp(x, y, lx < ly ? lx : ly);
    if (c || lx != ly) return c ? c : (lx < ly ? -1 : 1);
    return strcmp(x, y);
}

void gx_d_fleet_list(gx_daemon *d, const gx_wl_filter *flt, json_t *arr)
{
    gx_d_fleet *f = d->fleet;
    if (!f || !f->n) return;
    for (size_t i = 0; i < f->n; i++) {
        const fl_req *r = f->reqs[i];
        int ok = !flt->n_namespaces;
        for (size_t k = 0; k < flt->n_namespaces && !ok; k++) ok = !strcmp(flt->namespaces[k], r->k.ns);
        if (!ok) continue;
        json_t *v = gx_fl_view(d, r);
        if ((flt->state && strcmp(json_string_value(json_object_get(v, "state")) ?: "", flt->state) &&
             strcmp(json_string_value(json_object_get(v, "phase")) ?: "", flt->state)) ||
            (flt->local_queue && !queue_matches(v, flt->local_queue)) ||
            (flt->cluster_queue && strcmp(json_string_value(json_object_get(v, "clusterQueue")) ?: "", flt->cluster_queue))) {
            json_decref(v);
            continue;
        }
        json_array_append_new(arr, v);
    }
    /* one list sorted by (namespace, name), as the engine sorts local work */
    size_t n = json_array_size(arr);
    json_t **all = gx_xcalloc(n ? n : 1, sizeof *all);
    for (size_t i = 0; i < n; i++) all[i] = json_incref(json_array_get(arr, i));
    qsort(all, n, sizeof *all, cmp_key);
    json_array_clear(arr);
    for (size_t i = 0; i < n; i++) json_array_append_new(arr, all[i]);
    free(all);
}

static json_t *strings(char *const *s, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_string(s[i]));
    return a;
}

json_t *gx_d_clusters(gx_daemon *d, const gx_user *u)
{
    gx_d_fleet *f = d->fleet;
    json_t *out = json_array();
    if (!f || !f->doc) return out;
    for (size_t i = 0; i < f->fleet.n; i++) {
        const gx_fleet_cluster *c = &f->fleet.clusters[i];
        int visible = !u || u->admin;
        for (size_t k = 0; k < c->nnamespaces && !visible; k++) visible = gx_user_in_ns(u, c->namespaces[k]);
        if (!visible) continue;
        json_t *counts = json_pack("{s:i,s:i,s:i,s:i}", "Pending", 0, "Published", 0, "Removing", 0, "Removed", 0);
        for (size_t k = 0; k < f->n; k++) {
            if (strcmp(f->reqs[k]->cluster, c->name)) continue;
            const char *s = gx_fl_state_names[f->reqs[k]->state];
            json_object_set_new(counts, s, json_integer(json_integer_value(json_object_get(counts, s)) + 1));
        }
        json_t *rb = f->status ? gx_fleet_status_cluster(f->status, c->name) : NULL;
        json_t *o = json_pack("{s:s,s:O,s:o,s:o,s:o,s:o}", "name", c->name, "labels", c->labels, "namespaces",
                              strings(c->namespaces, c->nnamespaces), "clusterQueues",
                              strings(c->cluster_queues, c->ncluster_queues), "requests", counts, "readBack",
                              rb ? rb : json_null());
        if (c->nworkers) json_object_set_new(o, "workers", strings(c->workers, c->nworkers));
        for (size_t k = 0; k < f->fleet.n; k++)
            for (size_t w = 0; w < f->fleet.clusters[k].nworkers; w++)
                if (!strcmp(f->fleet.clusters[k].workers[w], c->name))
                    json_object_set_new(o, "manager", json_string(f->fleet.clusters[k].name));
        json_array_append_new(out, o);
    }
    return out;
}

char *gx_d_fleet_metrics(void *ud, char *text)
{
    gx_daemon *d = ud;
    gx_d_fleet *f = d->fleet;
    if (!f || !f->doc) return text;
    gx_sbuf b;
    gx_sbuf_init(&b);
    gx_sbuf_puts(&b, text ? text : "");
    free(text);
    gx_sbuf_puts(&b, "# HELP gpuaas_fleet_requests Fleet requests by cluster and publish state.\n"
                     "# TYPE gpuaas_fleet_requests gauge\n");
    for (size_t i = 0; i < f->fleet.n; i++)
        for (int s = 0; s < 4; s++) {
            size_t n = 0;
            for (size_t k = 0; k < f->n; k++)
                n += !strcmp(f->reqs[k]->cluster, f->fleet.clusters[i].name) && (int)f->reqs[k]->state == s;
            gx_sbuf_printf(&b, "gpuaas_fleet_requests{cluster=\"%s\",state=\"%s\"} %zu\n", f->fleet.clusters[i].name,
                           gx_fl_state_names[s], n);
        }
    gx_sbuf_puts(&b, "# HELP gpuaas_fleet_publish_failures_total Failed tries to publish to or remove from a "
                     "cluster's git folder.\n"
                     "# TYPE gpuaas_fleet_publish_failures_total counter\n");
    for (size_t i = 0; i < f->fleet.n; i++)
        gx_sbuf_printf(&b, "gpuaas_fleet_publish_failures_total{cluster=\"%s\"} %lld\n", f->fleet.clusters[i].name,
                       (long long)json_integer_value(json_object_get(f->failures, f->fleet.clusters[i].name)));
    return gx_sbuf_take(&b);
}
