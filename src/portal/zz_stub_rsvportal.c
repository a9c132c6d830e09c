/* zz_stub: deleted at merge */
/* zz_stub_rsvportal: stand-in bodies of gx_d_reservations / gx_d_reserve / gx_d_unreserve
 * (see zz_stub_rsvportal.h) so the calendar page runs before ops/reservations.c exists:
 * bookings kept in memory, canned capacity (team-a and team-b, one h100 GPU each, as
 * tests/portal/fixtures/queues.yaml), one-off windows only, every phase "Upcoming".
 * Must not: outlive the merge (the lead deletes it; the real ops take over). */
#include <stdio.h>
#include <string.h>
#include "lib/gxtime.h"
#include "portal/zz_stub_rsvportal.h"

static json_t *booked;   /* the stand-in's bookings: the documents as accepted */

static int64_t t_of(const json_t *spec, const char *k)
{
    int64_t ms = 0;
    gx_time_parse(json_string_value(json_object_get(spec, k)) ?: "", &ms);
    return ms;
}

static json_t *capacity(void)
{
    return json_pack("[{s:s,s:s,s:s,s:i},{s:s,s:s,s:s,s:i}]", "clusterQueue", "team-a", "flavor", "h100", "resource",
                     "nvidia.com/gpu", "nominal", 1, "clusterQueue", "team-b", "flavor", "h100", "resource",
                     "nvidia.com/gpu", "nominal", 1);
}

static json_t *view(const json_t *doc, const gx_user *u)
{
    const json_t *md = json_object_get(doc, "metadata"), *spec = json_object_get(doc, "spec");
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    int mine = gx_user_in_ns(u, ns);
    json_t *v = json_pack("{s:o,s:o,s:O,s:O,s:O,s:O}", "namespace", mine ? json_string(ns) : json_null(), "name",
                          mine ? json_copy(json_object_get(md, "name")) : json_null(), "clusterQueue",
                          json_object_get(spec, "clusterQueue"), "resources", json_object_get(spec, "resources"), "start",
                          json_object_get(spec, "start"), "end", json_object_get(spec, "end"));
    json_object_set_new(v, "recurrence", json_copy(json_object_get(spec, "recurrence")) ?: json_null());
    json_object_set_new(v, "leadTime", json_copy(json_object_get(spec, "leadTime")) ?: json_null());
    json_object_set_new(v, "noShowTimeout", json_copy(json_object_get(spec, "noShowTimeout")) ?: json_null());
    json_object_set_new(v, "occurrences", json_pack("[{s:O,s:O,s:s}]", "start", json_object_get(spec, "start"), "end",
                                                    json_object_get(spec, "end"), "phase", "Upcoming"));
    return v;
}

json_t *gx_d_reservations(gx_daemon *d, const gx_user *u, const char *ns, int64_t from_ms, int64_t to_ms)
{
    (void)d;
    json_t *items = json_array();
    size_t i;
    const json_t *doc;
    json_array_foreach(booked, i, doc) {
        const json_t *spec = json_object_get(doc, "spec");
        const char *n = json_string_value(json_object_get(json_object_get(doc, "metadata"), "namespace"));
        if (ns && strcmp(ns, n)) continue;
        if (t_of(spec, "end") <= from_ms || t_of(spec, "start") >= to_ms) continue;
        json_array_append_new(items, view(doc, u));
    }
    return json_pack("{s:o,s:o}", "items", items, "capacity", capacity());
}

int gx_d_reserve(gx_daemon *d, const gx_user *u, const json_t *doc, json_t **out, json_t **refusal, gx_err *err)
{
    (void)d;
    *out = NULL;
    if (refusal) *refusal = NULL;
    const json_t *md = json_object_get(doc, "metadata"), *spec = json_object_get(doc, "spec");
    const char *ns = json_string_value(json_object_get(md, "namespace")) ?: "";
    const char *name = json_string_value(json_object_get(md, "name")) ?: "";
    const char *cq = json_string_value(json_object_get(spec, "clusterQueue")) ?: "";
    if (!gx_user_in_ns(u, ns)) return gx_errf(err, 403, "metadata.namespace", "you may not book for namespace %s", ns);
    if (!gx_dns_label_ok(name)) return gx_errf(err, 422, "metadata.name", "a name is a DNS label");
    if (strcmp(cq, "team-a") && strcmp(cq, "team-b")) return gx_errf(err, 422, "spec.clusterQueue", "no ClusterQueue %s", cq);
    const json_t *r0 = json_array_get(json_object_get(spec, "resources"), 0);
    json_int_t q = json_integer_value(json_object_get(r0, "quantity"));
    if (q < 1) return gx_errf(err, 422, "spec.resources[0].quantity", "must be at least 1");
    int64_t s = 0, e = 0;
    if (gx_time_parse(json_string_value(json_object_get(spec, "start")) ?: "", &s))
        return gx_errf(err, 422, "spec.start", "is not an RFC 3339 time");
    if (gx_time_parse(json_string_value(json_object_get(spec, "end")) ?: "", &e))
        return gx_errf(err, 422, "spec.end", "is not an RFC 3339 time");
    if (e <= s) return gx_errf(err, 422, "spec.end", "must be after spec.start");
    if (q > 1) return gx_errf(err, 422, "spec.resources[0].quantity", "more than the ClusterQueue's 1 GPU");
    if (!booked) booked = json_array();
    json_t *conf = json_array();
    int64_t last = e;
    size_t i;
    const json_t *x;
    json_array_foreach(booked, i, x) {
        const json_t *xs = json_object_get(x, "spec");
        const char *xns = json_string_value(json_object_get(json_object_get(x, "metadata"), "namespace"));
        if (!strcmp(xns, ns) && !strcmp(json_string_value(json_object_get(json_object_get(x, "metadata"), "name")), name))
            { json_decref(conf); return gx_errf(err, 409, "metadata.name", "%s/%s exists", ns, name); }
        if (strcmp(json_string_value(json_object_get(xs, "clusterQueue")), cq)) continue;
        if (t_of(xs, "end") <= s || t_of(xs, "start") >= e) continue;
        json_t *c = json_pack("{s:O,s:O}", "start", json_object_get(xs, "start"), "end", json_object_get(xs, "end"));
        if (gx_user_in_ns(u, xns))
            json_object_set_new(c, "namespace", json_string(xns)),
            json_object_set(c, "name", json_object_get(json_object_get(x, "metadata"), "name"));
        json_array_append_new(conf, c);
        if (t_of(xs, "end") > last) last = t_of(xs, "end");
    }
    if (json_array_size(conf)) {
        char a[40], b[40];
        gx_time_fmt(last, a, sizeof a);
        gx_time_fmt(last + (e - s), b, sizeof b);
        if (refusal) *refusal = json_pack("{s:o,s:[{s:s,s:s}]}", "conflicts", conf, "alternatives", "start", a, "end", b);
        else json_decref(conf);
        return gx_errf(err, 409, "spec", "the booking does not fit: %s is booked then", cq);
    }
    json_decref(conf);
    json_array_append(booked, (json_t *)doc);
    *out = view(doc, u);
    return 0;
}

int gx_d_unreserve(gx_daemon *d, const gx_user *u, const char *ns, const char *name, gx_err *err)
{
    (void)d;
    if (!gx_user_in_ns(u, ns)) return gx_errf(err, 403, "", "you may not cancel bookings of namespace %s", ns);
    size_t i;
    const json_t *x;
    json_array_foreach(booked, i, x) {
        const json_t *md = json_object_get(x, "metadata");
        if (!strcmp(json_string_value(json_object_get(md, "namespace")), ns) &&
            !strcmp(json_string_value(json_object_get(md, "name")), name)) {
            json_array_remove(booked, i);
            return 0;
        }
    }
    return gx_errf(err, 404, "", "no booking %s/%s", ns, name);
}
