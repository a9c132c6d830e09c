/* engine_rsv: bookings (kind Reservation) where admission meets them.
 * Owns: reading a Reservation object against the engine's ClusterQueues (the capacity a
 * booking may draw on is its queue's nominal quota), the per-pass look at the book
 * (started / ended / released events, no-show release), the lead-time backfill rule and
 * the question preemption asks (does an active booking cover this?).
 * Must not: expand recurrences or read a clock (the shell hands in occurrences and now);
 * keep booking state of its own: core/reservation holds it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/engine_int.h"
#include "core/quantity.h"
#include "core/reservation.h"
#include "lib/gxtime.h"

void gx_engine_rsv_free(gx_engine *e)
{
    gx_reservation_book_free(e->rsv);
    e->rsv = NULL;
}

static int64_t duration_field(const json_t *spec, const char *k, const char *field, gx_err *err)
{
    const json_t *v = json_object_get(spec, k);
    if (!v || json_is_null(v)) return 0;
    int64_t ms = json_is_string(v) ? gx_duration_parse(json_string_value(v)) : -1;
    if (ms < 0) return gx_errf(err, 422, field, "not a duration (e.g. 10m, 1h30m)"), -2;
    return ms;
}

int gx_engine_reservation_apply(gx_engine *e, const json_t *obj, const gx_rsv_window *occ, size_t n_occ,
                                int64_t now_ms, gx_rsv_refusal *why)
{
    memset(why, 0, sizeof *why);
    gx_err *err = &why->err;
    gx_err_clear(err);
    const char *name, *ns;
    if (gx_engine_obj_check_name(obj, 1, &name, &ns, err) < 0) return -1;
    const json_t *spec = json_object_get(obj, "spec");
    if (!json_is_object(spec)) return gx_errf(err, 422, "spec", "required");
    const char *cqn = gx_engine_obj_str(spec, "clusterQueue");
    if (!cqn) return gx_errf(err, 422, "spec.clusterQueue", "required: the ClusterQueue whose workloads use the booking");
    int cq = gx_strmap_geti(&e->cq_map, cqn);
    if (cq < 0) return gx_errf(err, 422, "spec.clusterQueue", "ClusterQueue %s does not exist", cqn);
    int64_t lead = duration_field(spec, "leadTime", "spec.leadTime", err);
    int64_t noshow = duration_field(spec, "noShowTimeout", "spec.noShowTimeout", err);
    if (lead < -1 || noshow < -1) return -1;
    const json_t *res = json_object_get(spec, "resources");
    if (!json_is_array(res) || !json_array_size(res)) return gx_errf(err, 422, "spec.resources", "a list of {flavor, name, quantity} is required");
    size_t n = json_array_size(res);
    gx_rsv_item *items = gx_xcalloc(n, sizeof *items);
    gx_engine_quota_ensure(e);
    const gx_qnode *qn = &e->nodes_q[e->cqs[cq].node];
    char f[64];
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const json_t *it = json_array_get(res, i);
        items[i].flavor = gx_engine_obj_str(it, "flavor");
        items[i].resource = gx_engine_obj_str(it, "name");
        if (!items[i].flavor) rc = gx_errf(err, 422, gx_err_path(f, sizeof f, "spec.resources", "spec.resources[%zu].flavor", i), "required");
        else if (!items[i].resource) rc = gx_errf(err, 422, gx_err_path(f, sizeof f, "spec.resources", "spec.resources[%zu].name", i), "required");
        else if (gx_quantity_from_json(json_object_get(it, "quantity"), &items[i].qty,
                                       gx_err_path(f, sizeof f, "spec.resources", "spec.resources[%zu].quantity", i), err) < 0)
            rc = -1;
        if (rc) break;
        int fl = gx_engine_util_lookup(&e->flv, items[i].flavor), r = gx_engine_util_lookup(&e->res, items[i].resource);
        int fr = fl >= 0 && r >= 0 ? gx_engine_obj_fr(e, fl, r) : -1;
        int64_t nominal = fr >= 0 && fr < e->n_fr_tree ? qn->nominal[fr] : 0;
        if (nominal <= 0)
            rc = gx_errf(err, 422, gx_err_path(f, sizeof f, "spec.resources", "spec.resources[%zu]", i),
                         "ClusterQueue %s has no nominal quota of %s in flavor %s to book", cqn, items[i].resource, items[i].flavor);
        else {
            if (!e->rsv) { e->rsv = gx_reservation_book_new(); e->rsv_prev = INT64_MIN; }
            gx_reservation_set_capacity(e->rsv, cqn, items[i].flavor, items[i].resource, nominal);
        }
    }
    if (rc == 0) {
        gx_rsv_request r = {ns, name, cqn, cqn, items, n, occ, n_occ, lead, noshow, now_ms};
        rc = gx_reservation_add(e->rsv, &r, why);
    }
    free(items);
    if (rc == 0) { e->qversion++; gx_engine_queue_wake_all(e); }
    return rc;
}

int gx_engine_reservation_delete(gx_engine *e, const char *ns, const char *name, gx_err *err)
{
    if (!e->rsv || gx_reservation_remove(e->rsv, ns, name) < 0)
        return gx_errf(err, 404, "metadata.name", "no Reservation %s/%s", ns, name);
    e->qversion++;
    gx_engine_queue_wake_all(e);
    return 0;
}

/* Limits are the book's, so the book exists from the first limit on. */
void gx_engine_reservation_limit(gx_engine *e, const char *ns, int64_t gpus_at_once, int64_t gpu_ms_per_week)
{
    if (!e->rsv) { e->rsv = gx_reservation_book_new(); e->rsv_prev = INT64_MIN; }
    gx_reservation_set_limit(e->rsv, ns, gpus_at_once, gpu_ms_per_week);
}

int gx_engine_reservation_phase(const gx_engine *e, const char *ns, const char *name, int64_t t, gx_rsv_window *occ)
{
    return e->rsv ? gx_reservation_phase(e->rsv, ns, name, t, occ) : GX_RSV_NONE;
}

/* fr id of a booking's item, -1 when the engine does not know it (then nothing uses it). */
static int item_fr(const gx_engine *e, const gx_rsv_item *it)
{
    int fl = gx_engine_util_lookup(&e->flv, it->flavor), r = gx_engine_util_lookup(&e->res, it->resource);
    return fl >= 0 && r >= 0 ? gx_engine_obj_fr((gx_engine *)e, fl, r) : -1;
}

static int64_t cq_usage(const gx_engine *e, int cq, int fr)
{
    return fr >= 0 && fr < e->n_fr_tree ? e->nodes_q[e->cqs[cq].node].usage[fr] : 0;
}

static void act(gx_engine *e, const gx_rsv_info *in, const char *reason, const char *msg)
{
    GX_GROW(e->acts, e->n_acts, e->cap_acts);
    gx_action *a = &e->acts[e->n_acts++];
    memset(a, 0, sizeof *a);
    a->kind = GX_ACT_RESERVATION;
    snprintf(a->workload, sizeof a->workload, "%.120s/%.120s", in->ns, in->name);
    snprintf(a->reason, sizeof a->reason, "%s", reason);
    snprintf(a->message, sizeof a->message, "%s", msg);
    snprintf(a->cluster_queue, sizeof a->cluster_queue, "%s", in->cluster_queue);
}

/* Compare each booking's phase at the previous pass with now: an occurrence that began or
 * ended in between is an event; a no-show deadline passed in between with the queue using
 * none of the booked flavor/resources releases the rest of the occurrence. */
void gx_engine_rsv_pass(gx_engine *e, int64_t now)
{
    e->rsv_now = now;
    if (!e->rsv) return;
    int64_t prev = e->rsv_prev;
    int changed = 0;
    for (size_t i = 0; i < gx_reservation_count(e->rsv); i++) {
        gx_rsv_info in;
        gx_reservation_get(e->rsv, i, &in);
        gx_rsv_window wp = {0, 0}, wn = {0, 0};
        int pp = prev == INT64_MIN ? GX_RSV_NONE : gx_reservation_phase(e->rsv, in.ns, in.name, prev, &wp);
        int pn = gx_reservation_phase(e->rsv, in.ns, in.name, now, &wn);
        if (pp == GX_RSV_ACTIVE && (pn != GX_RSV_ACTIVE || wp.start != wn.start)) act(e, &in, "ReservationEnded", "the booking's window ended");
        if (pn == GX_RSV_ACTIVE && (pp != GX_RSV_ACTIVE || wp.start != wn.start)) act(e, &in, "ReservationStarted", "the booking's window started");
        changed |= pp != pn || wp.start != wn.start;
        int cq = gx_strmap_geti(&e->cq_map, in.cluster_queue);
        int64_t due = wn.start + in.no_show_ms;
        if (pn != GX_RSV_ACTIVE || !in.no_show_ms || cq < 0 || due > now || (prev != INT64_MIN && prev >= due)) continue;
        int used = 0;
        for (size_t k = 0; k < in.n_items && !used; k++) {
            gx_rsv_item it = gx_reservation_item(e->rsv, i, k);
            used = cq_usage(e, cq, item_fr(e, &it)) > 0;
        }
        if (used) continue;
        gx_reservation_release(e->rsv, in.ns, in.name, now);
        act(e, &in, "ReservationReleased", "no workload of the ClusterQueue used the booking within its noShowTimeout");
        changed = 1;
    }
    e->rsv_prev = now;
    if (changed) { e->qversion++; gx_engine_queue_wake_all(e); }
}

static int root_of(const gx_engine *e, int node)
{
    while (e->nodes_q[node].parent >= 0) node = e->nodes_q[node].parent;
    return node;
}

/* Lead time: another queue of the owner's cohort tree may take the booked capacity the
 * owner does not use only if w's maximum execution time ends by the start, so that the
 * capacity is free at the start without preempting anyone. What w takes beyond the free
 * capacity that is not booked is what it would take of the booking. */
int gx_engine_rsv_hold(gx_engine *e, int cq, gx_wl *w, const gx_assign *a, int64_t now)
{
    if (!e->rsv) return 0;
    int node = e->cqs[cq].node, root = root_of(e, node);
    for (size_t i = 0; i < gx_reservation_count(e->rsv); i++) {
        gx_rsv_info in;
        gx_reservation_get(e->rsv, i, &in);
        gx_rsv_window win;
        int owner = gx_strmap_geti(&e->cq_map, in.cluster_queue);
        if (owner < 0 || owner == cq || root_of(e, e->cqs[owner].node) != root) continue;
        if (gx_reservation_phase(e->rsv, in.ns, in.name, now, &win) != GX_RSV_LEAD) continue;
        if (w->s.max_exec_s > 0 && now + w->s.max_exec_s * 1000 - w->acc_ms <= win.start) continue;
        for (size_t k = 0; k < in.n_items; k++) {
            gx_rsv_item it = gx_reservation_item(e->rsv, i, k);
            int fr = item_fr(e, &it);
            int64_t reserve = it.qty - cq_usage(e, owner, fr);
            if (fr < 0 || reserve <= 0) continue;
            for (int u = 0; u < a->n_use; u++) {
                if (a->use_fr[u] != fr || a->use_amt[u] <= gx_engine_quota_available(e, node, fr) - reserve) continue;
                memset(&w->why, 0, sizeof w->why);
                w->why.kind = GX_WHY_BOOKED;
                w->why.flavor = e->fr_flv[fr];
                w->why.res = e->fr_res[fr];
                w->why.need = a->use_amt[u];
                w->why.nominal = win.start;
                return 1;
            }
        }
    }
    return 0;
}

int gx_engine_rsv_covers(const gx_engine *e, int cq, const int *fr, const int64_t *amt, int n)
{
    if (!e->rsv || !n) return 0;
    const char *cqn = e->cqs[cq].name;
    for (int k = 0; k < n; k++) {
        if (fr[k] < 0 || fr[k] >= e->fr.n) return 0;
        int64_t booked = gx_reservation_booked(e->rsv, cqn, e->flv.s[e->fr_flv[fr[k]]], e->res.s[e->fr_res[fr[k]]], e->rsv_now);
        if (!booked || cq_usage(e, cq, fr[k]) + amt[k] > booked) return 0;
    }
    return 1;
}

int64_t gx_engine_rsv_wakeup(const gx_engine *e, int64_t now)
{
    return e->rsv ? gx_reservation_next_change(e->rsv, now) : INT64_MAX;
}
