/* reservations: bookings (kind Reservation) as the front doors see them (REST, CLI,
 * portal calendar), the admins' booking limits, the daily re-expansion of recurring
 * bookings and the record of their no-shows.
 * Owns: who may book what (a user for their own namespaces, on a ClusterQueue one of
 * that namespace's LocalQueues points at), who sees which names in the calendar, the
 * booking's view (occurrences with their phases), and reservation_noshows rows.
 * Must not: judge a booking itself (core/reservation, through the engine, is the one
 * judge) nor record objects other than through gx_d_apply / gx_d_delete_object, so a
 * booking made here is the same object `gpuaas apply` makes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ops/daemon.h"
#include "core/quantity.h"
#include "lib/alloc.h"
#include "lib/gxtime.h"
#include "lib/tzwin.h"
#include "lib/yaml.h"

#define DAY_MS 86400000LL

void gx_d_rsv_limits(gx_daemon *d, gx_engine *e)
{
    const char *ns;
    json_t *l;
    json_object_foreach(d->cfg.rsv_limits, ns, l) {
        const json_t *g = json_object_get(l, "gpusAtOnce"), *h = json_object_get(l, "gpuHoursPerWeek");
        /* the model counts milli-GPUs, and GPU-hours as milli-GPU-milliseconds */
        gx_engine_reservation_limit(e, ns, g ? (int64_t)(json_number_value(g) * 1000.0) : -1,
                                    h ? (int64_t)(json_number_value(h) * 3600000.0 * 1000.0) : -1);
    }
}

static const char *str_at(const json_t *o, const char *a, const char *b)
{
    return json_string_value(json_object_get(json_object_get(o, a), b));
}

/* The phase of one occurrence at now, as the calendar shows it. */
static const char *occ_phase(gx_daemon *d, const char *ns, const char *name, const gx_tzwin_occ *o, int64_t lead, int64_t now)
{
    if (o->end <= now) return "Ended";
    if (now < o->start) return now >= o->start - lead ? "Lead" : "Upcoming";
    gx_rsv_window w;
    int p = gx_engine_reservation_phase(d->eng, ns, name, now, &w);
    return p == GX_RSV_ACTIVE && w.start == o->start ? "Active" : "Released";
}

static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

/* One booking as gx_d_reservations shows it; names shows its namespace and name. */
static json_t *rsv_view(gx_daemon *d, const json_t *m, int names, int64_t from, int64_t to)
{
    const char *ns = str_at(m, "metadata", "namespace") ?: "default", *name = str_at(m, "metadata", "name");
    const json_t *spec = json_object_get(m, "spec");
    int64_t now = gx_loop_now(d->loop);
    int64_t lead = 0;
    const char *ls = json_string_value(json_object_get(spec, "leadTime"));
    if (ls && (lead = gx_duration_parse(ls)) < 0) lead = 0;
    json_t *res = json_array();
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(spec, "resources"), i, it) {
        int64_t q = 0;
        gx_err ignore;
        gx_quantity_from_json(json_object_get(it, "quantity"), &q, "quantity", &ignore);
        json_array_append_new(res, json_pack("{s:o, s:o, s:f}", "flavor", str_or_null(json_string_value(json_object_get(it, "flavor"))),
                                             "name", str_or_null(json_string_value(json_object_get(it, "name"))),
                                             "quantity", (double)q / 1000.0));
    }
    json_t *occ = json_array();
    gx_tzwin_occ *o = NULL;
    gx_err ignore;
    long n = gx_tzwin_spec(spec, 0, from, to - from, &o, &ignore);
    char a[GX_TIME_LEN], b[GX_TIME_LEN];
    for (long k = 0; k < n; k++) {
        if (o[k].end <= from || o[k].start >= to) continue;   /* a one-off window comes whatever from is */
        json_array_append_new(occ, json_pack("{s:s, s:s, s:s}", "start", gx_time_fmt(o[k].start, a, sizeof a),
                                             "end", gx_time_fmt(o[k].end, b, sizeof b),
                                             "phase", occ_phase(d, ns, name, &o[k], lead, now)));
    }
    free(o);
    json_t *v = json_pack("{s:o, s:o, s:o, s:o}", "namespace", names ? json_string(ns) : json_null(),
                          "name", names ? str_or_null(name) : json_null(),
                          "clusterQueue", str_or_null(json_string_value(json_object_get(spec, "clusterQueue"))), "resources", res);
    static const char *const keep[] = {"start", "end", "recurrence", "leadTime", "noShowTimeout"};
    for (size_t k = 0; k < sizeof keep / sizeof *keep; k++) {
        json_t *x = json_object_get(spec, keep[k]);
        json_object_set_new(v, keep[k], x ? json_deep_copy(x) : json_null());
    }
    json_object_set_new(v, "occurrences", occ);
    return v;
}

/* Every ClusterQueue's nominal quota per flavor/resource: what a calendar books against. */
static json_t *capacity(gx_daemon *d)
{
    json_t *cqs = gx_engine_cluster_queues(d->eng), *out = json_array();
    size_t i, k;
    json_t *cq, *r;
    json_array_foreach(cqs, i, cq) json_array_foreach(json_object_get(cq, "resources"), k, r) {
        int64_t q = 0;
        gx_err ignore;
        if (gx_quantity_from_json(json_object_get(r, "nominalQuota"), &q, "nominalQuota", &ignore) < 0) continue;
        json_array_append_new(out, json_pack("{s:O, s:O, s:O, s:f}", "clusterQueue", json_object_get(cq, "name"),
                                             "flavor", json_object_get(r, "flavor"), "resource", json_object_get(r, "resource"),
                                             "nominal", (double)q / 1000.0));
    }
    json_decref(cqs);
    return out;
}

static int is_rsv(const json_t *m) { return !strcmp(json_string_value(json_object_get(m, "kind")) ?: "", "Reservation"); }

json_t *gx_d_reservations(gx_daemon *d, const gx_user *u, const char *ns, int64_t from_ms, int64_t to_ms)
{
    json_t *items = json_array();
    const char *key;
    json_t *m;
    json_object_foreach(d->objects, key, m) {
        if (!is_rsv(m)) continue;
        const char *owner = str_at(m, "metadata", "namespace") ?: "default";
        if (ns && strcmp(ns, owner)) continue;
        json_array_append_new(items, rsv_view(d, m, !u || gx_user_in_ns(u, owner), from_ms, to_ms));
    }
    return json_pack("{s:o, s:o}", "items", items, "capacity", capacity(d));
}

/* A refusal's conflicts and free windows; a conflict's namespace and name only where u
 * may see them (as in the calendar). *hidden: some were left out. */
static json_t *refusal_json(const gx_user *u, const gx_rsv_refusal *why, int *hidden)
{
    json_t *conf = json_array(), *alt = json_array();
    char a[GX_TIME_LEN], b[GX_TIME_LEN];
    *hidden = 0;
    for (size_t i = 0; i < why->n_conf; i++) {
        json_t *c = json_pack("{s:s, s:s, s:s}", "flavor", why->conf[i].flavor, "start", gx_time_fmt(why->conf[i].w.start, a, sizeof a),
                              "end", gx_time_fmt(why->conf[i].w.end, b, sizeof b));
        if (!u || gx_user_in_ns(u, why->conf[i].ns)) {
            json_object_set_new(c, "namespace", json_string(why->conf[i].ns));
            json_object_set_new(c, "name", json_string(why->conf[i].name));
        } else
            *hidden = 1;
        json_array_append_new(conf, c);
    }
    if (why->has_before)
        json_array_append_new(alt, json_pack("{s:s, s:s}", "start", gx_time_fmt(why->alt_before.start, a, sizeof a),
                                             "end", gx_time_fmt(why->alt_before.end, b, sizeof b)));
    if (why->has_after)
        json_array_append_new(alt, json_pack("{s:s, s:s}", "start", gx_time_fmt(why->alt_after.start, a, sizeof a),
                                             "end", gx_time_fmt(why->alt_after.end, b, sizeof b)));
    return json_pack("{s:o, s:o}", "conflicts", conf, "alternatives", alt);
}

/* A user books only on a ClusterQueue that a LocalQueue of the owner namespace points at. */
static int queue_of_ns(gx_daemon *d, const char *ns, const char *cq)
{
    const char *nss[1] = {ns};
    json_t *lqs = gx_engine_local_queues(d->eng, nss, 1);
    size_t i;
    json_t *lq;
    int ok = 0;
    json_array_foreach(lqs, i, lq) ok |= !strcmp(json_string_value(json_object_get(lq, "clusterQueue")) ?: "", cq);
    json_decref(lqs);
    return ok;
}

int gx_d_reserve(gx_daemon *d, const gx_user *u, const json_t *doc, json_t **out, json_t **refusal, gx_err *err)
{
    *out = NULL;
    if (refusal) *refusal = NULL;
    if (!json_is_object(doc)) return gx_errf(err, 422, "", "a Reservation must be a mapping");
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (kind && strcmp(kind, "Reservation")) return gx_errf(err, 422, "kind", "expected Reservation, got %s", kind);
    const char *ns = str_at(doc, "metadata", "namespace"), *name = str_at(doc, "metadata", "name");
    if (!ns || !*ns) return gx_errf(err, 422, "metadata.namespace", "required: the namespace that owns the booking");
    if (!name || !*name) return gx_errf(err, 422, "metadata.name", "required");
    if (u && !gx_user_in_ns(u, ns)) return gx_errf(err, 403, "metadata.namespace", "you may book for your own namespaces only, not %s", ns);
    const char *cq = str_at(doc, "spec", "clusterQueue");
    if (!cq) return gx_errf(err, 422, "spec.clusterQueue", "required: the ClusterQueue whose workloads use the booking");
    if (u && !u->admin && !queue_of_ns(d, ns, cq))
        return gx_errf(err, 403, "spec.clusterQueue", "no LocalQueue of namespace %s points at ClusterQueue %s", ns, cq);
    json_t *m = json_deep_copy(doc);
    if (!json_object_get(m, "apiVersion")) json_object_set_new(m, "apiVersion", json_string("gpuaas.dev/v1alpha1"));
    if (!kind) json_object_set_new(m, "kind", json_string("Reservation"));
    gx_rsv_refusal why;
    if (gx_d_reservation_judge(d, m, &why, err)) {
        if (why.conflict && err->status == 409) {
            int hidden;
            json_t *r = refusal_json(u, &why, &hidden);
            /* apply's message lists every conflict by name: not for a stranger's bookings */
            if (hidden) snprintf(err->msg, sizeof err->msg, "%.400s (see conflicts and alternatives)", why.err.msg);
            if (refusal) *refusal = r;
            else json_decref(r);
        }
        gx_reservation_refusal_free(&why);
        json_decref(m);
        return -1;
    }
    gx_reservation_refusal_free(&why);
    gx_yaml_docs one = {.n = 1, .docs = &m};
    json_t *res = NULL;
    int rc = gx_d_apply(d, &one, &res, err);
    json_decref(res);
    if (rc == 0) {
        int64_t now = gx_loop_now(d->loop);
        *out = rsv_view(d, m, 1, now, now + 7 * DAY_MS);
    }
    json_decref(m);
    return rc;
}

int gx_d_unreserve(gx_daemon *d, const gx_user *u, const char *ns, const char *name, gx_err *err)
{
    char key[512];
    snprintf(key, sizeof key, "Reservation/%s/%s", ns, name);
    /* membership first: a stranger learns nothing of which names exist */
    if (u && !gx_user_in_ns(u, ns)) return gx_errf(err, 403, "namespace", "only members of %s (or an admin) may cancel its bookings", ns);
    if (!json_object_get(d->objects, key)) return gx_errf(err, 404, "", "no Reservation %s/%s", ns, name);
    return gx_d_delete_object(d, "Reservation", ns, name, err);
}

/* GPUs of a booking's spec (milli-units), for the no-show's unused GPU time. */
static int64_t spec_gpus(const json_t *spec, const char **flavor)
{
    int64_t total = 0;
    size_t i;
    json_t *it;
    json_array_foreach(json_object_get(spec, "resources"), i, it) {
        if (strcmp(json_string_value(json_object_get(it, "name")) ?: "", GX_RSV_GPU)) continue;
        int64_t q = 0;
        gx_err ignore;
        if (gx_quantity_from_json(json_object_get(it, "quantity"), &q, "quantity", &ignore) < 0) continue;
        total += q;
        *flavor = json_string_value(json_object_get(it, "flavor"));
    }
    return total;
}

void gx_d_rsv_noshow(gx_daemon *d, const gx_action *a, int64_t now)
{
    if (a->kind != GX_ACT_RESERVATION || strcmp(a->reason, "ReservationReleased")) return;
    char ns[128];
    const char *slash = strchr(a->workload, '/');
    if (!slash || (size_t)(slash - a->workload) >= sizeof ns) return;
    snprintf(ns, sizeof ns, "%.*s", (int)(slash - a->workload), a->workload);
    char key[512];
    snprintf(key, sizeof key, "Reservation/%s/%s", ns, slash + 1);
    const json_t *m = json_object_get(gx_d_objects(d), key);
    gx_rsv_window w;
    /* released at now: the occurrence still holds at now - 1, with its booked end */
    if (!m || gx_engine_reservation_phase(d->eng, ns, slash + 1, now - 1, &w) != GX_RSV_ACTIVE || w.end <= now) return;
    const char *flavor = NULL;
    int64_t gpus = spec_gpus(json_object_get(m, "spec"), &flavor);
    if (gpus <= 0) return;
    gx_err e;
    gx_err_clear(&e);
    if (gx_store_put_reservation_noshow(d->store, ns, flavor ? flavor : "", gpus / 1000 * (w.end - now) + gpus % 1000 * (w.end - now) / 1000,
                                        now, &e))
        fprintf(stderr, "gpuaas: cannot record the no-show of %s: %s\n", a->workload, e.msg);
}

/* Occurrences are expanded for 26 weeks when a booking is applied; a weekly booking that
 * lives longer is re-expanded from the tick once a day, between its occurrences (a
 * replaced booking forgets a no-show release, so not while one is in progress). */
int64_t gx_d_rsv_tick(gx_daemon *d, int64_t now)
{
    if (d->rsv_refresh_at > now) return d->rsv_refresh_at - now;
    if (!d->rsv_refresh_at) {   /* at start every booking was just expanded */
        d->rsv_refresh_at = now + DAY_MS;
        return DAY_MS;
    }
    int64_t next = now + DAY_MS;
    const char *key;
    json_t *m;
    json_object_foreach(d->objects, key, m) {
        const json_t *spec = json_object_get(m, "spec");
        if (!is_rsv(m) || !json_object_get(spec, "recurrence")) continue;
        const char *ns = str_at(m, "metadata", "namespace") ?: "default", *name = str_at(m, "metadata", "name");
        gx_tzwin_occ *o = NULL;
        gx_err e;
        gx_err_clear(&e);
        long n = gx_tzwin_spec(spec, 0, now, 1, &o, &e);
        free(o);
        if (n != 0 || gx_engine_reservation_phase(d->eng, ns, name, now, NULL) != GX_RSV_NONE) {
            if (now + 3600000 < next) next = now + 3600000;   /* in progress: look again in an hour */
            continue;
        }
        if (gx_d_reservation_reput(d, m, &e))
            fprintf(stderr, "gpuaas: warning: %s could not be re-expanded: %s\n", key, e.msg);
    }
    d->rsv_refresh_at = next;
    return next - now;
}
