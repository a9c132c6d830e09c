/* Unit tests for the engine's typed questions (engine_query.c): a workload's phase and
 * facts, the devices of each pod slot and who uses each GPU, answered without JSON and
 * agreeing with the JSON views they replace for callers. Virtual clock only. */
#include "test_engine_util.h"

static gx_engine *setup(void)
{
    gx_engine *en = gx_engine_new(NULL);
    apply_ok(en, RF("h100"));
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: team-a}\n"
                 "spec:\n  namespaceSelector: {}\n  resourceGroups:\n"
                 "  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n    - name: h100\n      resources:\n"
                 "      - {name: cpu, nominalQuota: \"16\"}\n      - {name: nvidia.com/gpu, nominalQuota: \"4\"}\n");
    apply_ok(en, LQ("team-a", "main", "team-a"));
    return en;
}

static void add_node(gx_engine *en)
{
    apply_ok(en, "apiVersion: gpuaas.dev/v1alpha1\nkind: Node\nmetadata: {name: n1}\nspec:\n  cpu: \"32\"\n  memory: 256Gi\n"
                 "  gpus: {model: H100-80GB, memory: 80Gi, count: 4}\n");
}

/* The view's "state" must be the typed phase's name, whatever the phase. */
static void agrees(gx_engine *en, const char *key, gx_wl_phase want)
{
    cr_assert_eq(gx_engine_wl_phase(en, key), want, "%s", key);
    json_t *w = gx_engine_workload(en, key, 0);
    if (want == GX_PHASE_ABSENT) { cr_assert_null(w); return; }
    cr_assert_str_eq(json_string_value(json_object_get(w, "state")), gx_engine_phase_name(want));
    json_decref(w);
}

Test(engine_query, phase_names_round_trip)
{
    for (int p = 0; p < GX_PHASE_N; p++)
        cr_assert_eq(gx_engine_phase_parse(gx_engine_phase_name((gx_wl_phase)p)), p);
    cr_assert_str_eq(gx_engine_phase_name(GX_PHASE_ADMITTED), "Admitted");
    cr_assert_null(gx_engine_phase_name(GX_PHASE_ABSENT));
    cr_assert_eq(gx_engine_phase_parse("Running"), GX_PHASE_ABSENT);
    cr_assert_eq(gx_engine_phase_parse(NULL), GX_PHASE_ABSENT);
}

Test(engine_query, phase_follows_the_state_machine)
{
    gx_engine *en = setup();
    gx_action *acts;
    gx_err e;
    agrees(en, "team-a/a", GX_PHASE_ABSENT);
    submit_ok(en, job("team-a", "a", "main", NULL, 1, "1", "4"), 0);
    submit_ok(en, job("team-a", "b", "main", NULL, 1, "1", "4"), 1);
    agrees(en, "team-a/a", GX_PHASE_PENDING);
    pass(en, 2, &acts);
    free(acts);
    agrees(en, "team-a/a", GX_PHASE_ADMITTED);
    agrees(en, "team-a/b", GX_PHASE_PENDING);
    cr_assert_eq(gx_engine_count_phase(en, GX_PHASE_PENDING), 1);
    cr_assert_eq(gx_engine_count_phase(en, GX_PHASE_ADMITTED), 1);
    cr_assert_eq(gx_engine_count_phase(en, GX_PHASE_ABSENT), 2);
    cr_assert_eq(gx_engine_count(en, "Pending"), 1);
    cr_assert_eq(gx_engine_count(en, "Bogus"), 0);
    cr_assert_eq(gx_engine_evict(en, "team-a/a", "NodeRestarted", "gone", 3, &e), 0);
    agrees(en, "team-a/a", GX_PHASE_PENDING);
    pass(en, 4, &acts);
    free(acts);
    cr_assert_eq(gx_engine_finish(en, "team-a/a", 0, "boom", 5, &e), 0);
    agrees(en, "team-a/a", GX_PHASE_FINISHED);
    cr_assert_eq(gx_engine_cancel(en, "team-a/b", "stop", 6, &e), 0);
    agrees(en, "team-a/b", GX_PHASE_DEACTIVATED);
    cr_assert_eq(gx_engine_remove(en, "team-a/a", &e), 0);
    agrees(en, "team-a/a", GX_PHASE_ABSENT);
    cr_assert_eq(gx_engine_count_phase(en, GX_PHASE_FINISHED), 0);
    gx_engine_free(en);
}

Test(engine_query, info_matches_the_view)
{
    gx_engine *en = setup();
    gx_action *acts;
    gx_err e;
    gx_wl_info in;
    cr_assert_eq(gx_engine_wl_info(en, "team-a/a", &in), -1);
    cr_assert_eq(in.phase, GX_PHASE_ABSENT);
    submit_ok(en, job("team-a", "a", "main", NULL, 3, "1", "1"), 1000);
    cr_assert_eq(gx_engine_wl_info(en, "team-a/a", &in), 0);
    cr_assert_eq(in.phase, GX_PHASE_PENDING);
    cr_assert_eq(in.created_ms, 1000);
    cr_assert_eq(in.admitted_ms, -1);
    cr_assert_eq(in.admitted_pods, 0);
    cr_assert_eq(gx_engine_wl_admitted_count(en, "team-a/a", 0), -1);
    pass(en, 2000, &acts);
    free(acts);
    cr_assert_eq(gx_engine_wl_info(en, "team-a/a", &in), 0);
    cr_assert_eq(in.phase, GX_PHASE_ADMITTED);
    cr_assert_str_eq(in.cluster_queue, "team-a");
    cr_assert_eq(in.admitted_ms, 2000);
    cr_assert_eq(in.finished_ms, -1);
    cr_assert_eq(in.n_podsets, 1);
    cr_assert_eq(in.admitted_pods, 3);
    cr_assert_eq(gx_engine_wl_admitted_count(en, "team-a/a", 0), 3);
    cr_assert_eq(gx_engine_wl_admitted_count(en, "team-a/a", 1), -1);
    json_t *w = gx_engine_workload(en, "team-a/a", 0);
    json_t *psa = json_array_get(json_object_get(json_object_get(w, "admission"), "podSetAssignments"), 0);
    cr_assert_eq(json_integer_value(json_object_get(psa, "count")), 3);
    json_decref(w);
    cr_assert_eq(gx_engine_finish(en, "team-a/a", 1, NULL, 3000, &e), 0);
    cr_assert_eq(gx_engine_wl_info(en, "team-a/a", &in), 0);
    cr_assert_eq(in.phase, GX_PHASE_FINISHED);
    cr_assert_eq(in.succeeded, 1);
    cr_assert_eq(in.admitted_ms, 2000, "an ended workload keeps when it started");
    cr_assert_eq(in.finished_ms, 3000);
    cr_assert_eq(in.admitted_pods, 0);
    gx_engine_free(en);
}

/* Every pod slot's devices, typed, are the placement view's, in the same order. */
Test(engine_query, devices_per_pod_slot_match_the_placement_view)
{
    gx_engine *en = setup();
    add_node(en);
    gx_action *acts;
    submit_ok(en, job("team-a", "a", "main", NULL, 2, "1", "2"), 0);
    submit_ok(en, job("team-a", "b", "main", NULL, 1, "1", "1"), 1);
    pass(en, 2, &acts);
    free(acts);
    gx_engine_dev d[8];
    cr_assert_eq(gx_engine_wl_devices(en, "team-a/b", 0, d, 8), -1, "pending: no devices");
    cr_assert_eq(gx_engine_wl_devices(en, "team-a/x", 0, d, 8), -1);
    json_t *w = gx_engine_workload(en, "team-a/a", 0);
    for (int pod = 0; pod < 2; pod++) {
        json_t *vd = json_object_get(json_array_get(json_object_get(w, "placement"), (size_t)pod), "devices");
        int n = gx_engine_wl_devices(en, "team-a/a", pod, d, 8);
        cr_assert_eq(n, 2);
        cr_assert_eq((size_t)n, json_array_size(vd));
        for (int k = 0; k < n; k++) {
            json_t *x = json_array_get(vd, (size_t)k);
            cr_assert_str_eq(d[k].uuid, json_string_value(json_object_get(x, "uuid")));
            cr_assert_str_eq(d[k].gpu_uuid, d[k].uuid);
            cr_assert_eq(d[k].index, json_integer_value(json_object_get(x, "index")));
            cr_assert_str_eq(d[k].model, "H100-80GB");
            cr_assert_str_eq(d[k].node, "n1");
            cr_assert_eq(d[k].shared, 0);
            cr_assert_eq(d[k].mig, -1);
        }
    }
    json_decref(w);
    cr_assert_eq(gx_engine_wl_devices(en, "team-a/a", 2, d, 8), -1, "only two pod slots");
    cr_assert_eq(gx_engine_wl_devices(en, "team-a/a", 0, d, 1), 2, "the count, even when out is short");
    cr_assert_eq(gx_engine_wl_devices(en, "team-a/a", 0, NULL, 0), 2);
    gx_engine_free(en);
}

Test(engine_query, no_nodes_means_no_devices)
{
    gx_engine *en = setup();
    gx_action *acts;
    submit_ok(en, job("team-a", "a", "main", NULL, 1, "1", "1"), 0);
    pass(en, 1, &acts);
    free(acts);
    gx_engine_dev d[2];
    cr_assert_eq(gx_engine_wl_devices(en, "team-a/a", 0, d, 2), 0);
    cr_assert_eq(gx_engine_wl_devices(en, "team-a/a", 1, d, 2), -1);
    cr_assert_eq(gx_engine_gpus(en, NULL, NULL, 0), 0);
    gx_engine_free(en);
}

Test(engine_query, gpus_say_who_uses_them)
{
    gx_engine *en = setup();
    add_node(en);
    gx_action *acts;
    submit_ok(en, job("team-a", "a", "main", NULL, 1, "1", "3"), 0);
    pass(en, 1, &acts);
    free(acts);
    gx_engine_gpu g[8];
    cr_assert_eq(gx_engine_gpus(en, "nope", g, 8), 0);
    cr_assert_eq(gx_engine_gpus(en, NULL, NULL, 0), 4);
    cr_assert_eq(gx_engine_gpus(en, "n1", g, 8), 4);
    gx_engine_dev d[4];
    cr_assert_eq(gx_engine_wl_devices(en, "team-a/a", 0, d, 4), 3);
    int busy = 0;
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(g[i].index, i);
        cr_assert_str_eq(g[i].node, "n1");
        int held = 0;
        for (int k = 0; k < 3; k++) held |= !strcmp(d[k].uuid, g[i].uuid);
        cr_assert_eq(g[i].n_users, held);
        if (held) { busy++; cr_assert_str_eq(g[i].user, "team-a/a"); cr_assert_eq(g[i].user_pod, 0); }
        else { cr_assert_null(g[i].user); cr_assert_eq(g[i].user_pod, -1); }
    }
    cr_assert_eq(busy, 3);
    gx_err e;
    cr_assert_eq(gx_engine_finish(en, "team-a/a", 1, NULL, 2, &e), 0);
    cr_assert_eq(gx_engine_gpus(en, NULL, g, 2), 4, "the count, even when out is short");
    for (int i = 0; i < 2; i++) cr_assert_null(g[i].user);
    gx_engine_free(en);
}
