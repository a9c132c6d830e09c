/* Unit tests of the engine's bookings (engine_rsv.c) through its public API: a
 * Reservation's errors name the field, a booking beyond the ClusterQueue's nominal quota
 * is refused as a conflict, a workload held by a booking's lead time says why
 * (WaitingForReservation), and deleting the booking lets it in. The scenario files
 * tests/scenarios/reservation-*.yaml cover preemption, no-show and events. */
#include "test_engine_util.h"

static const char *objs[] = {
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: h100}\n",
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: team-a}\nspec:\n  cohortName: lab\n"
    "  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n    - name: h100\n"
    "      resources: [{name: cpu, nominalQuota: 8}, {name: nvidia.com/gpu, nominalQuota: 2}]\n",
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: team-b}\nspec:\n  cohortName: lab\n"
    "  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n    - name: h100\n"
    "      resources: [{name: cpu, nominalQuota: 8}, {name: nvidia.com/gpu, nominalQuota: 0}]\n",
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: main, namespace: team-b}\nspec: {clusterQueue: team-b}\n",
};

static gx_engine *setup(void)
{
    gx_engine_opts o = {0};
    gx_engine *en = gx_engine_new(&o);
    for (size_t i = 0; i < sizeof objs / sizeof objs[0]; i++) apply_ok(en, objs[i]);
    return en;
}

/* Apply a Reservation (spec body given) for [s, e) seconds; returns rc, *why filled. */
static int book(gx_engine *en, const char *name, const char *spec, int64_t s, int64_t e, gx_rsv_refusal *why)
{
    char buf[1024];
    snprintf(buf, sizeof buf, "apiVersion: gpuaas.dev/v1alpha1\nkind: Reservation\nmetadata: {name: %s, namespace: team-a}\nspec:\n%s", name, spec);
    json_t *j = Y(buf);
    gx_rsv_window w = {s * 1000, e * 1000};
    int rc = gx_engine_reservation_apply(en, j, &w, 1, 0, why);
    json_decref(j);
    return rc;
}

#define GPU2 "  clusterQueue: team-a\n  resources: [{flavor: h100, name: nvidia.com/gpu, quantity: 2}]\n"

Test(engine_rsv, errors_name_the_field)
{
    gx_engine *en = setup();
    gx_rsv_refusal why;
    cr_assert_eq(book(en, "x", "  resources: []\n", 0, 60, &why), -1);
    cr_assert_str_eq(why.err.field, "spec.clusterQueue");
    cr_assert_eq(book(en, "x", "  clusterQueue: nope\n", 0, 60, &why), -1);
    cr_assert_str_eq(why.err.field, "spec.clusterQueue");
    cr_assert_eq(book(en, "x", "  clusterQueue: team-a\n  resources: [{flavor: a100, name: nvidia.com/gpu, quantity: 1}]\n", 0, 60, &why), -1);
    cr_assert_str_eq(why.err.field, "spec.resources[0]");
    cr_assert_eq(book(en, "x", "  clusterQueue: team-a\n  resources: [{flavor: h100, name: nvidia.com/gpu, quantity: lots}]\n", 0, 60, &why), -1);
    cr_assert_str_eq(why.err.field, "spec.resources[0].quantity");
    cr_assert_eq(book(en, "x", GPU2 "  leadTime: soon\n", 0, 60, &why), -1);
    cr_assert_str_eq(why.err.field, "spec.leadTime");
    cr_assert_not(why.conflict, "a malformed booking is not a conflict");
    cr_assert_eq(book(en, "x", "  clusterQueue: team-a\n  resources: [{flavor: h100, name: nvidia.com/gpu, quantity: 3}]\n", 0, 60, &why), -1,
                 "3 GPUs of a queue whose nominal quota is 2");
    cr_assert(why.conflict);
    cr_assert_str_eq(why.err.field, "spec.resources[0]");
    gx_reservation_refusal_free(&why);
    gx_err err;
    cr_assert_eq(gx_engine_reservation_delete(en, "team-a", "x", &err), -1);
    cr_assert_eq(err.status, 404);
    gx_engine_free(en);
}

Test(engine_rsv, lead_time_holds_a_workload_that_would_run_into_the_window)
{
    gx_engine *en = setup();
    gx_rsv_refusal why;
    cr_assert_eq(book(en, "b", GPU2 "  leadTime: 10m\n", 1000, 2000, &why), 0, "%s", why.err.msg);
    submit_ok(en, job("team-b", "long", "main", NULL, 1, "1", "1"), 500 * 1000);
    gx_action *acts;
    size_t n = pass(en, 500 * 1000, &acts);
    free(acts);
    cr_assert_eq(n, 0, "held: no maximum execution time, in the lead time of the booking");
    json_t *w = gx_engine_workload(en, "team-b/long", 500 * 1000);
    json_t *c = json_array_get(json_object_get(w, "conditions"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(c, "reason")), "WaitingForReservation");
    cr_assert(strstr(json_string_value(json_object_get(c, "message")), "is booked from 1970-01-01T00:16:40.000Z"),
              "%s", json_string_value(json_object_get(c, "message")));
    json_decref(w);
    cr_assert_eq(gx_engine_next_wakeup(en, 500 * 1000), 1000 * 1000, "the booking's start wakes the engine");
    gx_err err;
    cr_assert_eq(gx_engine_reservation_delete(en, "team-a", "b", &err), 0);
    n = pass(en, 501 * 1000, &acts);
    cr_assert_eq(n, 1);
    cr_assert_eq(acts[0].kind, GX_ACT_ADMIT, "the booking gone, it borrows team-a's idle GPU");
    free(acts);
    gx_engine_free(en);
}

Test(engine_rsv, window_events_in_order)
{
    gx_engine *en = setup();
    gx_rsv_refusal why;
    cr_assert_eq(book(en, "w", GPU2, 10, 20, &why), 0);
    gx_action *acts;
    cr_assert_eq(pass(en, 0, &acts), 0);
    free(acts);
    cr_assert_eq(pass(en, 10 * 1000, &acts), 1);
    cr_assert_eq(acts[0].kind, GX_ACT_RESERVATION);
    cr_assert_str_eq(acts[0].workload, "team-a/w");
    cr_assert_str_eq(acts[0].reason, "ReservationStarted");
    cr_assert_str_eq(acts[0].cluster_queue, "team-a");
    free(acts);
    cr_assert_eq(pass(en, 15 * 1000, &acts), 0);
    free(acts);
    cr_assert_eq(pass(en, 20 * 1000, &acts), 1);
    cr_assert_str_eq(acts[0].reason, "ReservationEnded");
    free(acts);
    cr_assert_eq(gx_engine_next_wakeup(en, 20 * 1000), INT64_MAX);
    gx_engine_free(en);
}

Test(engine_rsv, limits_and_phase_through_the_engine)
{
    gx_engine *en = setup();
    gx_rsv_refusal why;
    /* 1 GPU at once for team-a, set before any booking (as the daemon does at start) */
    gx_engine_reservation_limit(en, "team-a", 1000, -1);
    cr_assert_eq(book(en, "two", GPU2, 10, 20, &why), -1, "2 GPUs over a limit of 1");
    cr_assert_eq(why.err.status, 422);
    cr_assert(strstr(why.err.msg, "gpusAtOnce"), "%s", why.err.msg);
    gx_reservation_refusal_free(&why);
    cr_assert_eq(gx_engine_reservation_phase(en, "team-a", "two", 15 * 1000, NULL), GX_RSV_NONE, "refused: no booking");
    cr_assert_eq(book(en, "one", "  clusterQueue: team-a\n  resources: [{flavor: h100, name: nvidia.com/gpu, quantity: 1}]\n",
                      10, 20, &why), 0, "%s", why.err.msg);
    gx_rsv_window w;
    cr_assert_eq(gx_engine_reservation_phase(en, "team-a", "one", 15 * 1000, &w), GX_RSV_ACTIVE);
    cr_assert_eq(w.start, 10 * 1000);
    cr_assert_eq(gx_engine_reservation_phase(en, "team-a", "one", 25 * 1000, NULL), GX_RSV_NONE);
    gx_engine_free(en);
}
