/* fleet: the daemon's side of fleet mode (docs/fleet.md, "Requests"): the Fleet kind,
 * and Jobs submitted for one of its clusters, which are not run here but written to the
 * cluster's folder in git for Argo CD to apply there.
 * Owns: the Fleet kind (one per daemon), the publisher and the status watches it makes,
 * a request's life (recorded with its answer; handed to the publisher only by the tick,
 * so after that record has committed; retried with back-off until it lands; removed from
 * git on cancel or expiry) and its durable record (store/fleet.c).
 * Must not: wait on git or the clusters (the publisher and the watches run beside the
 * loop), decide admission (the clusters' Kueue does), or render objects (fleet/ does). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/alloc.h"
#include "lib/gxtime.h"
#include "ops/fleet_int.h"
#include "ops/wlname.h"

#define BACKOFF_FIRST_MS 1000
#define BACKOFF_MAX_MS (5 * 60 * 1000)
#define MAX_EXEC_LABEL "kueue.x-k8s.io/max-exec-time-seconds"
#define REQUESTED_BY "gpuaas.dev/requested-by"

const char *const gx_fl_state_names[4] = {"Pending", "Published", "Removing", "Removed"};

fl_req *gx_fl_find(const gx_d_fleet *f, const char *key)
{
    for (size_t i = 0; f && key && i < f->n; i++)
        if (!strcmp(f->reqs[i]->k.key, key)) return f->reqs[i];
    return NULL;
}

static void req_free(fl_req *r)
{
    if (!r) return;
    free(r->cluster);
    free(r->user);
    free(r->path);
    free(r->last_error);
    free(r->note);
    json_decref(r->manifest);
    json_decref(r->rendered);
    free(r);
}

static void req_drop(gx_d_fleet *f, fl_req *r)
{
    for (size_t i = 0; i < f->n; i++)
        if (f->reqs[i] == r) {
            memmove(&f->reqs[i], &f->reqs[i + 1], (f->n - i - 1) * sizeof *f->reqs);
            f->n--;
            break;
        }
    req_free(r);
}

static void req_add(gx_d_fleet *f, fl_req *r)
{
    if (f->n == f->cap) f->reqs = gx_xgrow(f->reqs, &f->cap, f->n + 1, sizeof *f->reqs);
    f->reqs[f->n++] = r;
}

static int persist(gx_daemon *d, const fl_req *r, gx_err *err)
{
    gx_store_fleet_req q = {.ns = r->k.ns, .name = r->k.name, .cluster = r->cluster, .user = r->user, .path = r->path,
                            .state = gx_fl_state_names[r->state], .commit = r->commit, .last_error = r->last_error,
                            .note = r->note, .manifest = r->manifest, .rendered = r->rendered, .attempts = r->attempts,
                            .next_attempt_ms = r->next_at, .published_ms = r->published_ms, .created_ms = r->created_ms};
    return gx_store_fleet_put(d->store, &q, gx_loop_now(d->loop), err);
}

/* A change of state the publisher reported: recorded at once; a record that fails is
 * logged and the change stays in memory (the next change records it, and a restart
 * before then only publishes or removes the same file again, which changes nothing). */
static void persist_or_log(gx_daemon *d, const fl_req *r)
{
    gx_err e;
    gx_err_clear(&e);
    if (persist(d, r, &e)) fprintf(stderr, "gpuaas: fleet: cannot record %s: %s\n", r->k.key, e.msg);
}

static const gx_fleet_cluster *cluster_of(const gx_d_fleet *f, const fl_req *r)
{
    return f && f->doc ? gx_fleet_find(&f->fleet, r->cluster) : NULL;
}

/* ---- publishing ------------------------------------------------------------------------ */

static void author_of(const char *user, char *email, size_t n)
{
    if (strchr(user, '@')) snprintf(email, n, "%s", user);
    else snprintf(email, n, "%s@gpuaas.invalid", user);
}

/* "queue: Q\nparallelism: N\ncontainer C: cpu=1, nvidia.com/gpu=1\n": what a reviewer of
 * the repository's history wants to see without opening the file. */
static void summary(const json_t *m, char *out, size_t n)
{
    const json_t *spec = json_object_get(m, "spec");
    const char *q = json_string_value(json_object_get(json_object_get(json_object_get(m, "metadata"), "labels"),
                                                      "kueue.x-k8s.io/queue-name"));
    size_t at = 0;
    int w = snprintf(out, n, "queue: %s\n", q ? q : "(none)");
    at = w > 0 ? (size_t)w : 0;
    if (json_is_integer(json_object_get(spec, "parallelism")) && at < n) {
        w = snprintf(out + at, n - at, "parallelism: %lld\n", (long long)json_integer_value(json_object_get(spec, "parallelism")));
        at += w > 0 ? (size_t)w : 0;
    }
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(json_object_get(spec, "template"), "spec"), "containers"), i, c) {
        if (at >= n) break;
        w = snprintf(out + at, n - at, "container %s:", json_string_value(json_object_get(c, "name")) ?: "?");
        at += w > 0 ? (size_t)w : 0;
        const char *rk;
        json_t *rv;
        int first = 1;
        json_object_foreach(json_object_get(json_object_get(c, "resources"), "requests"), rk, rv) {
            if (at >= n) break;
            char num[32] = "";
            if (json_is_integer(rv)) snprintf(num, sizeof num, "%lld", (long long)json_integer_value(rv));
            w = snprintf(out + at, n - at, "%s %s=%s", first ? "" : ",", rk, json_is_string(rv) ? json_string_value(rv) : num);
            at += w > 0 ? (size_t)w : 0;
            first = 0;
        }
        if (at < n) {
            w = snprintf(out + at, n - at, "%s\n", first ? " no requests" : "");
            at += w > 0 ? (size_t)w : 0;
        }
    }
}

/* Hand r's current change to the publisher: its file added (Pending) or removed
 * (Removing). Only from the tick: the request's record has committed by then. */
static void publish(gx_daemon *d, fl_req *r)
{
    gx_d_fleet *f = d->fleet;
    const gx_fleet_cluster *c = cluster_of(f, r);
    if (!c || !f->pub) return;
    char email[160], msg[2048], sum[1536];
    author_of(r->user, email, sizeof email);
    gx_git_change ch = {.path = r->path, .content = NULL};
    char *yaml = NULL;
    if (r->state == FL_PENDING) {
        yaml = gx_fleet_yaml(r->rendered);
        ch.content = yaml;
        summary(r->manifest, sum, sizeof sum);
        snprintf(msg, sizeof msg, "Request Job %s for cluster %s by %s\n\n%s", r->k.key, r->cluster, r->user, sum);
    } else if (r->note && !strncmp(r->note, "expired", 7)) {
        snprintf(msg, sizeof msg, "Remove expired Job %s on cluster %s\n\n%s", r->k.key, r->cluster, r->note);
    } else {
        snprintf(msg, sizeof msg, "Cancel Job %s on cluster %s by %s", r->k.key, r->cluster,
                 r->note && !strncmp(r->note, "cancelled by ", 13) ? r->note + 13 : r->user);
    }
    r->inflight = gx_publisher_submit(f->pub, r->cluster, &c->git, &ch, 1, r->user, email, msg);
    free(yaml);
}

static int64_t backoff_ms(int64_t attempts)
{
    int64_t ms = BACKOFF_FIRST_MS;
    for (int64_t i = 1; i < attempts && ms < BACKOFF_MAX_MS; i++) ms *= 2;
    return ms < BACKOFF_MAX_MS ? ms : BACKOFF_MAX_MS;
}

/* The publisher's answer (on the loop): the change landed, or it is kept and retried. */
static void on_published(void *ud, uint64_t id, int ok, const char *commit, const gx_err *err)
{
    gx_daemon *d = ud;
    gx_d_fleet *f = d->fleet;
    fl_req *r = NULL;
    for (size_t i = 0; f && i < f->n && !r; i++)
        if (f->reqs[i]->inflight == id) r = f->reqs[i];
    if (!r) return;   /* deleted meanwhile, or the publisher was replaced */
    r->inflight = 0;
    int64_t now = gx_loop_now(d->loop);
    int was = r->state;
    if (ok) {
        snprintf(r->commit, sizeof r->commit, "%s", commit ? commit : "");
        r->attempts = 0;
        r->next_at = 0;
        free(r->last_error);
        r->last_error = NULL;
        if (was == FL_PENDING) {
            r->state = FL_PUBLISHED;
            r->published_ms = now;
        } else if (was == FL_REMOVING) {
            r->state = FL_REMOVED;
        }
        /* Published with a removal asked for meanwhile: Removing stays, the tick removes it */
    } else {
        r->attempts++;
        free(r->last_error);
        r->last_error = gx_xstrdup(err && err->msg[0] ? err->msg : "the publisher failed");
        r->next_at = now + backoff_ms(r->attempts);
        json_int_t n = json_integer_value(json_object_get(f->failures, r->cluster));
        json_object_set_new(f->failures, r->cluster, json_integer(n + 1));
        fprintf(stderr, "gpuaas: fleet: %s for cluster %s not yet %s (try %lld): %s\n", r->k.key, r->cluster,
                was == FL_PENDING ? "published" : "removed", (long long)r->attempts, r->last_error);
    }
    persist_or_log(d, r);
    gx_http_wake_streams(d->http);
}

/* The finishing time of r's Job as its cluster reports it, 0: not finished or unknown. */
static int64_t finished_at(const gx_d_fleet *f, const fl_req *r)
{
    json_t *st = f->status ? gx_fleet_status_job(f->status, r->cluster, r->k.ns, r->k.name) : NULL;
    int64_t ms = 0;
    const char *t = json_string_value(json_object_get(st, "finishedAt"));
    if (t && gx_time_parse(t, &ms)) ms = 0;
    int seen = st != NULL;
    json_decref(st);
    return seen ? (ms ? ms : 0) : -1;
}

/* When r's file leaves git on its own (docs/fleet.md, "Expiry"): retain_ms after its Job
 * finished on the cluster; with no status read back, after its maximum execution time
 * (Kueue's label) from its publication; never (0) otherwise. */
static int64_t expires_at(const gx_d_fleet *f, const fl_req *r)
{
    int64_t fin = finished_at(f, r);
    if (fin > 0) return fin + f->retain_ms;
    if (fin == 0) return 0;   /* seen, not finished */
    const char *s = json_string_value(json_object_get(json_object_get(json_object_get(r->manifest, "metadata"), "labels"),
                                                      MAX_EXEC_LABEL));
    char *end = NULL;
    long long secs = s ? strtoll(s, &end, 10) : 0;
    if (!s || *end || secs <= 0 || !r->published_ms) return 0;
    return r->published_ms + secs * 1000 + f->retain_ms;
}

int64_t gx_d_fleet_tick(gx_daemon *d)
{
    gx_d_fleet *f = d->fleet;
    if (!f || !f->doc) return -1;
    int64_t now = gx_loop_now(d->loop), sleep = -1;
    for (size_t i = 0; i < f->n; i++) {
        fl_req *r = f->reqs[i];
        if (r->state == FL_PUBLISHED) {
            int64_t exp = expires_at(f, r);
            if (!exp) continue;
            if (exp > now) {
                if (sleep < 0 || exp - now < sleep) sleep = exp - now;
                continue;
            }
            r->state = FL_REMOVING;
            free(r->note);
            r->note = gx_xstrdup("expired: its Job finished (or ran out its maximum execution time) and was kept "
                                 "for retainFinished");
            persist_or_log(d, r);
        }
        if ((r->state != FL_PENDING && r->state != FL_REMOVING) || r->inflight) continue;
        if (r->next_at > now) {
            if (sleep < 0 || r->next_at - now < sleep) sleep = r->next_at - now;
            continue;
        }
        publish(d, r);
    }
    return sleep;
}

/* ---- requests ------------------------------------------------------------------------- */

int gx_d_fleet_has(const gx_daemon *d, const char *key) { return gx_fl_find(d->fleet, key) != NULL; }

int gx_d_fleet_submit(gx_daemon *d, const json_t *manifest, json_t **view, gx_err *err)
{
    gx_d_fleet *f = d->fleet;
    const json_t *md = json_object_get(manifest, "metadata");
    const json_t *ann = json_object_get(md, "annotations");
    const char *cname = json_string_value(json_object_get(ann, GX_FLEET_CLUSTER_ANNOTATION));
    if (!f || !f->doc)
        return gx_errf(err, 422, "metadata.annotations", "annotation %s names cluster %s, but no Fleet is applied",
                       GX_FLEET_CLUSTER_ANNOTATION, cname ? cname : "");
    const gx_fleet_cluster *c = gx_fleet_find(&f->fleet, cname);
    if (!c) {
        char known[512] = "";
        size_t at = 0;
        for (size_t i = 0; i < f->fleet.n && at < sizeof known; i++) {
            int w = snprintf(known + at, sizeof known - at, "%s%s", i ? ", " : "", f->fleet.clusters[i].name);
            at += w > 0 ? (size_t)w : 0;
        }
        return gx_errf(err, 422, "metadata.annotations", "annotation %s: no cluster %s in Fleet %s (clusters: %s)",
                       GX_FLEET_CLUSTER_ANNOTATION, cname ? cname : "", f->fleet.name, known);
    }
    if (strcmp(json_string_value(json_object_get(manifest, "kind")) ?: "", "Job"))
        return gx_errf(err, 422, "kind", "a request for cluster %s must be a batch/v1 Job", c->name);
    json_t *named = gx_d_name_workload(d, manifest, err);
    if (!named) return -1;
    md = json_object_get(named, "metadata");
    gx_wlkey k;
    if (gx_wlkey_make(&k, json_string_value(json_object_get(md, "namespace")) ?: "default",
                      json_string_value(json_object_get(md, "name")) ?: "", err)) {
        json_decref(named);
        return -1;
    }
    int offered = 0;
    for (size_t i = 0; i < c->nnamespaces && !offered; i++) offered = !strcmp(c->namespaces[i], k.ns);
    if (!offered) {
        json_decref(named);
        return gx_errf(err, 422, "metadata.namespace", "cluster %s does not offer namespace %s", c->name, k.ns);
    }
    if (gx_fl_find(f, k.key) || gx_exec_get(d->exec, k.key)) {
        json_decref(named);
        return gx_errf(err, 409, "metadata.name", "workload %s already exists", k.key);
    }
    const char *user = json_string_value(json_object_get(json_object_get(md, "annotations"), REQUESTED_BY));
    if (!user || !*user) user = "gpuaas";
    json_t *rendered = gx_fleet_render_job(&f->fleet, c, named, user, err);
    char path[1024];
    if (!rendered) { json_decref(named); return -1; }
    if (gx_fleet_path(c, k.ns, "job", k.name, path, sizeof path)) {
        json_decref(named);
        json_decref(rendered);
        return gx_errf(err, 422, "metadata.name", "the path of %s in cluster %s's folder is too long", k.key, c->name);
    }
    fl_req *r = gx_xcalloc(1, sizeof *r);
    r->k = k;
    r->cluster = gx_xstrdup(c->name);
    r->user = gx_xstrdup(user);
    r->path = gx_xstrdup(path);
    r->manifest = named;
    r->rendered = rendered;
    r->state = FL_PENDING;
    r->created_ms = gx_loop_now(d->loop);
    if (persist(d, r, err)) { req_free(r); return -1; }
    req_add(f, r);
    if (view) *view = gx_fl_view(d, r);
    return 0;
}

void gx_d_fleet_unsubmit(gx_daemon *d, const char *key)
{
    fl_req *r = gx_fl_find(d->fleet, key);
    if (r) req_drop(d->fleet, r);
}

int gx_d_fleet_cancel(gx_daemon *d, const char *key, const char *who, gx_err *err)
{
    fl_req *r = gx_fl_find(d->fleet, key);
    if (!r) return gx_errf(err, 404, "", "no workload %s", key);
    if (r->state == FL_REMOVING || r->state == FL_REMOVED) return 0;
    fl_state was = r->state;
    char *note = r->note;
    int64_t attempts = r->attempts, next = r->next_at;
    char buf[128];
    snprintf(buf, sizeof buf, "cancelled by %s", who);
    r->state = FL_REMOVING;
    r->note = gx_xstrdup(buf);
    r->attempts = 0;
    r->next_at = 0;
    if (persist(d, r, err)) {
        free(r->note);
        r->note = note;
        r->state = was;
        r->attempts = attempts;
        r->next_at = next;
        return -1;
    }
    free(note);
    return 0;
}

int gx_d_fleet_delete(gx_daemon *d, const char *key, gx_err *err)
{
    fl_req *r = gx_fl_find(d->fleet, key);
    if (!r) return gx_errf(err, 404, "", "no workload %s", key);
    if (r->state != FL_REMOVED)
        return gx_errf(err, 409, "", "workload %s is still in cluster %s's git folder (%s); cancel it and wait until "
                       "it is Removed", key, r->cluster, gx_fl_state_names[r->state]);
    if (gx_store_fleet_delete(d->store, r->k.ns, r->k.name, err)) return -1;
    req_drop(d->fleet, r);
    return 0;
}

/* ---- the Fleet kind --------------------------------------------------------------------- */

static int is_remote(const char *s) { return strstr(s, "://") || (strchr(s, '@') && strchr(s, ':')); }

/* A copy of doc with its relative paths (git.repo when local, git.credentialsFile,
 * kubeconfig) made absolute against the config file's folder; over REST there is no
 * folder: a relative path is refused naming its field. */
static json_t *resolved(const gx_daemon *d, const json_t *doc, gx_err *err)
{
    json_t *c = json_deep_copy(doc);
    char dir[PATH_MAX] = "";
    snprintf(dir, sizeof dir, "%s", d->cfg.path);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = 0;
    else snprintf(dir, sizeof dir, ".");
    json_t *spec = json_object_get(c, "spec");
    struct { json_t *obj; const char *key; char field[128]; } at[3 * GX_FLEET_CLUSTERS_MAX + 2];
    size_t n = 0;
    at[n].obj = json_object_get(spec, "git"); at[n].key = "repo"; snprintf(at[n++].field, 128, "spec.git.repo");
    at[n].obj = json_object_get(spec, "git"); at[n].key = "credentialsFile"; snprintf(at[n++].field, 128, "spec.git.credentialsFile");
    size_t i;
    json_t *cl;
    json_array_foreach(json_object_get(spec, "clusters"), i, cl) {
        if (i >= GX_FLEET_CLUSTERS_MAX) break;
        at[n].obj = json_object_get(cl, "git"); at[n].key = "repo"; snprintf(at[n++].field, 128, "spec.clusters[%zu].git.repo", i);
        at[n].obj = json_object_get(cl, "git"); at[n].key = "credentialsFile";
        snprintf(at[n++].field, 128, "spec.clusters[%zu].git.credentialsFile", i);
        at[n].obj = cl; at[n].key = "kubeconfig"; snprintf(at[n++].field, 128, "spec.clusters[%zu].kubeconfig", i);
    }
    for (size_t k = 0; k < n; k++) {
        const char *v = json_string_value(json_object_get(at[k].obj, at[k].key));
        if (!v || !*v || v[0] == '/' || (!strcmp(at[k].key, "repo") && is_remote(v))) continue;
        if (!d->cfg.path[0]) {
            json_decref(c);
            gx_errf(err, 422, at[k].field, "%s is a relative path; a Fleet applied over REST needs absolute paths "
                    "(relative ones are resolved against the config file's folder)", v);
            return NULL;
        }
        char abs[PATH_MAX * 2];
        snprintf(abs, sizeof abs, "%s/%s", dir, v);
        json_object_set_new(at[k].obj, at[k].key, json_string(abs));
    }
    return c;
}

static int fleet_validate(void *ud, const json_t *doc, json_t *const *others, size_t nothers, gx_err *err)
{
    gx_daemon *d = ud;
    gx_d_fleet *f = d->fleet;
    const char *name = json_string_value(json_object_get(json_object_get(doc, "metadata"), "name")) ?: "";
    for (size_t i = 0; i < nothers; i++) {
        const char *on = json_string_value(json_object_get(json_object_get(others[i], "metadata"), "name")) ?: "";
        if (others[i] != doc && !strcmp(json_string_value(json_object_get(others[i], "kind")) ?: "", "Fleet") &&
            strcmp(on, name))
            return gx_errf(err, 422, "metadata.name", "one Fleet per daemon: this apply has Fleets %s and %s", name, on);
    }
    if (f->doc && strcmp(f->fleet.name ? f->fleet.name : "", name))
        return gx_errf(err, 409, "metadata.name", "one Fleet per daemon: Fleet %s is applied (delete it first, or "
                       "apply it under that name)", f->fleet.name);
    json_t *c = resolved(d, doc, err);
    if (!c) return -1;
    gx_fleet nf;
    int rc = gx_fleet_parse(c, &nf, err);
    json_decref(c);
    if (rc) return -1;
    /* a cluster may not go while requests of it are still in its folder */
    for (size_t i = 0; i < f->n && !rc; i++)
        if (f->reqs[i]->state != FL_REMOVED && !gx_fleet_find(&nf, f->reqs[i]->cluster))
            rc = gx_errf(err, 422, "spec.clusters", "cluster %s is still used by request %s (%s); cancel its requests "
                         "first", f->reqs[i]->cluster, f->reqs[i]->k.key, gx_fl_state_names[f->reqs[i]->state]);
    gx_fleet_free(&nf);
    return rc;
}

static void stop_parts(gx_d_fleet *f)
{
    for (size_t i = 0; i < GX_FLEET_CLUSTERS_MAX; i++) {
        gx_kube_watch_free(f->watches[i]);
        f->watches[i] = NULL;
    }
    if (f->pub) gx_publisher_free(f->pub);
    f->pub = NULL;
    for (size_t i = 0; i < f->n; i++) f->reqs[i]->inflight = 0;   /* the new publisher does them again */
    if (f->doc) gx_fleet_free(&f->fleet);
    json_decref(f->doc);
    f->doc = NULL;
}

/* Applying (at start-up or by apply) makes the publisher and a watch per cluster with a
 * kubeconfig; a re-apply replaces them. A watch that cannot start is logged and the
 * cluster shows no read-back: the requests still publish. */
static int fleet_apply(void *ud, const json_t *doc, gx_err *err)
{
    gx_daemon *d = ud;
    gx_d_fleet *f = d->fleet;
    json_t *c = resolved(d, doc, err);
    if (!c) return -1;
    gx_fleet nf;
    if (gx_fleet_parse(c, &nf, err)) { json_decref(c); return -1; }
    gx_publisher *p = gx_publisher_new(d->loop, f->workdir, on_published, d, err);
    if (!p) { gx_fleet_free(&nf); json_decref(c); return -1; }
    stop_parts(f);
    f->doc = c;
    f->fleet = nf;
    f->pub = p;
    for (size_t i = 0; i < nf.n && i < GX_FLEET_CLUSTERS_MAX; i++) {
        const gx_fleet_cluster *cl = &nf.clusters[i];
        if (!cl->kubeconfig) continue;
        gx_err e;
        gx_err_clear(&e);
        f->watches[i] = gx_kube_watch_new(d->loop, cl->name, cl->kubeconfig, cl->kube_context, f->status, &e);
        if (!f->watches[i]) fprintf(stderr, "gpuaas: fleet: no status read-back for cluster %s: %s\n", cl->name, e.msg);
    }
    d->dirty = 1;
    return 0;
}

static int fleet_remove(void *ud, const char *kind, const char *ns, const char *name, gx_err *err)
{
    (void)kind; (void)ns; (void)name;
    gx_daemon *d = ud;
    gx_d_fleet *f = d->fleet;
    for (size_t i = 0; i < f->n; i++)
        if (f->reqs[i]->state != FL_REMOVED)
            return gx_errf(err, 409, "", "Fleet %s still has request %s for cluster %s (%s); cancel its requests first",
                           f->fleet.name, f->reqs[i]->k.key, f->reqs[i]->cluster, gx_fl_state_names[f->reqs[i]->state]);
    stop_parts(f);
    return 0;
}

char *gx_d_fleet_metrics(void *ud, char *text);

void gx_d_fleet_register(gx_daemon *d, int64_t retain_ms)
{
    gx_d_fleet *f = gx_xcalloc(1, sizeof *f);
    f->failures = json_object();
    f->status = gx_fleet_status_new();
    f->retain_ms = retain_ms > 0 ? retain_ms : GX_FLEET_RETAIN_MS;
    snprintf(f->workdir, sizeof f->workdir, "%.*s/fleet", GX_DATA_DIR_MAX, d->cfg.data_dir);
    d->fleet = f;
    gx_kind k = {.kind = "Fleet", .api_version = GX_FLEET_API_VERSION, .validate = fleet_validate,
                 .apply = fleet_apply, .remove = fleet_remove, .ud = d};
    gx_d_register_kind(d, &k);
    gx_hooks h = {.metrics = gx_d_fleet_metrics, .ud = d};
    gx_d_register_hooks(d, &h);
}

int gx_d_fleet_recover(gx_daemon *d, gx_err *err)
{
    gx_d_fleet *f = d->fleet;
    if (!f) return 0;
    json_t *rows = gx_store_fleet_requests(d->store, err);
    if (!rows) return -1;
    size_t i;
    json_t *row;
    json_array_foreach(rows, i, row) {
        fl_req *r = gx_xcalloc(1, sizeof *r);
        gx_err e;
        if (gx_wlkey_make(&r->k, json_string_value(json_object_get(row, "namespace")),
                          json_string_value(json_object_get(row, "name")), &e)) {
            fprintf(stderr, "gpuaas: fleet: a stored request is unusable: %s (kept in the store)\n", e.msg);
            free(r);
            continue;
        }
        const char *st = json_string_value(json_object_get(row, "state")) ?: "";
        for (int s = 0; s < 4; s++)
            if (!strcmp(st, gx_fl_state_names[s])) r->state = (fl_state)s;
        r->cluster = gx_xstrdup(json_string_value(json_object_get(row, "cluster")) ?: "");
        r->user = gx_xstrdup(json_string_value(json_object_get(row, "user")) ?: "");
        r->path = gx_xstrdup(json_string_value(json_object_get(row, "path")) ?: "");
        snprintf(r->commit, sizeof r->commit, "%s", json_string_value(json_object_get(row, "commit")) ?: "");
        const char *le = json_string_value(json_object_get(row, "lastError"));
        const char *note = json_string_value(json_object_get(row, "note"));
        r->last_error = le && *le ? gx_xstrdup(le) : NULL;
        r->note = note && *note ? gx_xstrdup(note) : NULL;
        r->manifest = json_incref(json_object_get(row, "manifest"));
        r->rendered = json_incref(json_object_get(row, "rendered"));
        r->attempts = json_integer_value(json_object_get(row, "attempts"));
        r->published_ms = json_integer_value(json_object_get(row, "publishedMs"));
        r->created_ms = json_integer_value(json_object_get(row, "createdMs"));
        r->next_at = 0;   /* unpublished ones are tried again at once after a restart */
        req_add(f, r);
    }
    json_decref(rows);
    return 0;
}

void gx_d_fleet_free(gx_daemon *d)
{
    gx_d_fleet *f = d->fleet;
    if (!f) return;
    stop_parts(f);
    for (size_t i = 0; i < f->n; i++) req_free(f->reqs[i]);
    free(f->reqs);
    gx_fleet_status_free(f->status);
    json_decref(f->failures);
    free(f);
    d->fleet = NULL;
}
