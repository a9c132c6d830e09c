/* Unit tests for the engine: object validation, submission errors, queue order,
 * positions, quota, StrictFIFO/BestEffortFIFO, flavors, maximum execution time,
 * workload transitions and device placement. Virtual clock only. */
#include "test_engine_util.h"

#define CQ_SIMPLE(name, strategy, cpu, gpu)                                                                  \
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: " name "}\n"                    \
    "spec:\n  namespaceSelector: {}\n  queueingStrategy: " strategy "\n  resourceGroups:\n"                    \
    "  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n    - name: h100\n      resources:\n"        \
    "      - {name: cpu, nominalQuota: \"" cpu "\"}\n      - {name: nvidia.com/gpu, nominalQuota: \"" gpu "\"}\n"

static gx_engine *setup(const char *strategy)
{
    gx_engine *en = gx_engine_new(NULL);
    apply_ok(en, RF("h100"));
    char cq[2048];
    snprintf(cq, sizeof cq, CQ_SIMPLE("team-a", "%s", "16", "4"), strategy);
    apply_ok(en, cq);
    apply_ok(en, LQ("team-a", "main", "team-a"));
    apply_ok(en, LQ("team-a", "other", "team-a"));
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: high}\nvalue: 1000\n");
    return en;
}

/* ---- validation ----------------------------------------------------------------------- */

Test(engine_objects, unknown_kind_and_version)
{
    gx_engine *en = gx_engine_new(NULL);
    gx_err e = apply_err(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Frobnicator\nmetadata: {name: x}\n");
    cr_assert_eq(e.status, 400);
    cr_assert_str_eq(e.field, "kind");
    e = apply_err(en, "apiVersion: example.com/v1\nkind: ClusterQueue\nmetadata: {name: x}\n");
    cr_assert_eq(e.status, 400);
    e = apply_err(en, "kind: ClusterQueue\nmetadata: {name: x}\n");
    cr_assert_eq(e.status, 400);
    cr_assert_str_eq(e.field, "apiVersion");
    gx_engine_free(en);
}

Test(engine_objects, flavor_resources_must_match_covered)
{
    gx_engine *en = gx_engine_new(NULL);
    gx_err e = apply_err(en,
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n  resourceGroups:\n"
        "  - coveredResources: [cpu, memory]\n    flavors:\n    - name: f\n      resources:\n      - {name: cpu, nominalQuota: 1}\n");
    cr_assert_eq(e.status, 422);
    cr_assert_str_eq(e.field, "spec.resourceGroups[0].flavors[0].resources");
    e = apply_err(en,
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n  resourceGroups:\n"
        "  - coveredResources: [cpu]\n    flavors:\n    - name: f\n      resources:\n      - {name: memory, nominalQuota: 1}\n");
    cr_assert_str_eq(e.field, "spec.resourceGroups[0].flavors[0].resources[0]");
    gx_engine_free(en);
}

Test(engine_objects, limits_need_cohort_and_lending_le_nominal)
{
    gx_engine *en = gx_engine_new(NULL);
    gx_err e = apply_err(en,
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n  resourceGroups:\n"
        "  - coveredResources: [cpu]\n    flavors:\n    - name: f\n      resources:\n      - {name: cpu, nominalQuota: 1, borrowingLimit: 1}\n");
    cr_assert_eq(e.status, 422);
    cr_assert(strstr(e.msg, "cohort"), "%s", e.msg);
    e = apply_err(en,
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n  cohortName: c\n  resourceGroups:\n"
        "  - coveredResources: [cpu]\n    flavors:\n    - name: f\n      resources:\n      - {name: cpu, nominalQuota: 1, lendingLimit: 2}\n");
    cr_assert(strstr(e.msg, "lendingLimit"), "%s", e.msg);
    e = apply_err(en,
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n  resourceGroups:\n"
        "  - coveredResources: [cpu]\n    flavors:\n    - name: f\n      resources:\n      - {name: cpu, nominalQuota: \"-1\"}\n");
    cr_assert_str_eq(e.field, "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota");
    gx_engine_free(en);
}

Test(engine_objects, at_most_16_groups)
{
    gx_engine *en = gx_engine_new(NULL);
    char buf[16384];
    int n = snprintf(buf, sizeof buf, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n  resourceGroups:\n");
    for (int i = 0; i < 17; i++)
        n += snprintf(buf + n, sizeof buf - (size_t)n,
                      "  - coveredResources: [r%d]\n    flavors:\n    - name: f%d\n      resources:\n      - {name: r%d, nominalQuota: 1}\n", i, i, i);
    gx_err e = apply_err(en, buf);
    cr_assert_eq(e.status, 422);
    cr_assert_str_eq(e.field, "spec.resourceGroups");
    gx_engine_free(en);
}

Test(engine_objects, enums_and_fungibility_preference)
{
    gx_engine *en = gx_engine_new(NULL);
    gx_err e = apply_err(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n  queueingStrategy: Fastest\n");
    cr_assert_str_eq(e.field, "spec.queueingStrategy");
    e = apply_err(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n"
                      "  flavorFungibility: {whenCanBorrow: MayStopSearch, preference: BorrowingOverPreemption}\n");
    cr_assert_str_eq(e.field, "spec.flavorFungibility.preference");
    e = apply_err(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n"
                      "  preemption: {borrowWithinCohort: {policy: LowerPriority}}\n");
    cr_assert_str_eq(e.field, "spec.preemption");
    gx_engine_free(en);
}

Test(engine_objects, listing_sorted_and_localqueue_immutable)
{
    gx_engine *en = setup("BestEffortFIFO");
    json_t *a = gx_engine_objects(en, "LocalQueue");
    cr_assert_eq(json_array_size(a), 2);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_array_get(a, 0), "metadata"), "name")), "main");
    json_decref(a);
    gx_err e = apply_err(en, LQ("team-a", "main", "elsewhere"));
    cr_assert_str_eq(e.field, "spec.clusterQueue");
    gx_engine_free(en);
}

/* ---- submission ------------------------------------------------------------------------ */

Test(engine_submit, errors_name_the_field)
{
    gx_engine *en = setup("BestEffortFIFO");
    gx_err e;
    json_t *j = job("team-a", "x", "nope", NULL, 1, "1", NULL);
    cr_assert_eq(gx_engine_submit(en, j, 0, &e), -1);
    cr_assert_eq(e.status, 422);
    cr_assert_str_eq(e.field, "metadata.labels[\"kueue.x-k8s.io/queue-name\"]");
    json_decref(j);
    j = job("team-a", "x", "main", "ultra", 1, "1", NULL);
    cr_assert_eq(gx_engine_submit(en, j, 0, &e), -1);
    cr_assert_str_eq(e.field, "metadata.labels[\"kueue.x-k8s.io/priority-class\"]");
    json_decref(j);
    j = job("team-a", "x", "main", NULL, 1, "-2", NULL);
    cr_assert_eq(gx_engine_submit(en, j, 0, &e), -1);
    cr_assert_str_eq(e.field, "spec.template.spec.containers[0].resources.requests[\"cpu\"]");
    json_decref(j);
    j = job("team-a", "x", "main", NULL, 1, "lots", NULL);
    cr_assert_eq(gx_engine_submit(en, j, 0, &e), -1);
    cr_assert_eq(e.status, 422);
    json_decref(j);
    j = Y("apiVersion: batch/v1\nkind: Job\nmetadata: {name: m, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: main}}\n"
          "spec:\n  template:\n    spec:\n      containers: [{name: c, resources: {requests: {memory: 1Gi}}}]\n");
    cr_assert_eq(gx_engine_submit(en, j, 0, &e), -1);
    cr_assert(strstr(e.msg, "memory"), "%s", e.msg);
    json_decref(j);
    submit_ok(en, job("team-a", "x", "main", NULL, 1, "1", NULL), 0);
    j = job("team-a", "x", "main", NULL, 1, "1", NULL);
    cr_assert_eq(gx_engine_submit(en, j, 0, &e), -1);
    cr_assert_eq(e.status, 409);
    json_decref(j);
    j = Y("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n");
    cr_assert_eq(gx_engine_submit(en, j, 0, &e), -1);
    cr_assert_eq(e.status, 400);
    json_decref(j);
    gx_engine_free(en);
}

Test(engine_submit, requests_summed_limits_used_and_parallelism)
{
    gx_engine *en = setup("BestEffortFIFO");
    submit_ok(en, Y("apiVersion: batch/v1\nkind: Job\nmetadata: {name: m, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: main}}\n"
                    "spec:\n  parallelism: 3\n  completions: 2\n  template:\n    spec:\n      containers:\n"
                    "      - {name: a, resources: {requests: {cpu: 500m}}}\n      - {name: b, resources: {limits: {cpu: \"1\", nvidia.com/gpu: 1}}}\n"), 0);
    json_t *w = gx_engine_workload(en, "team-a/m", 0);
    json_t *ps = json_array_get(json_object_get(w, "podSets"), 0);
    cr_assert_eq(json_integer_value(json_object_get(ps, "count")), 2);     /* min(parallelism, completions) */
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(ps, "requests"), "cpu")), "1500m");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(ps, "requests"), "nvidia.com/gpu")), "1");
    json_decref(w);
    gx_engine_free(en);
}

/* ---- ordering and quota ------------------------------------------------------------------ */

Test(engine_order, priority_then_creation_and_positions)
{
    gx_engine *en = setup("BestEffortFIFO");
    submit_ok(en, job("team-a", "fill", "main", NULL, 1, "1", "4"), 0);
    gx_action *acts;
    size_t n = pass(en, 0, &acts);
    cr_assert_eq(n, 1);
    cr_assert_eq(acts[0].kind, GX_ACT_ADMIT);
    free(acts);
    submit_ok(en, job("team-a", "low1", "main", NULL, 1, "1", "1"), 1000);
    submit_ok(en, job("team-a", "low2", "other", NULL, 1, "1", "1"), 2000);
    submit_ok(en, job("team-a", "high", "other", "high", 1, "1", "1"), 3000);
    n = pass(en, 3000, &acts);
    cr_assert_eq(n, 0);
    free(acts);
    json_t *w = gx_engine_workload(en, "team-a/high", 3000);
    cr_assert_eq(json_integer_value(json_object_get(w, "positionInClusterQueue")), 0);
    cr_assert_eq(json_integer_value(json_object_get(w, "positionInLocalQueue")), 0);
    json_t *c = json_array_get(json_object_get(w, "conditions"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(c, "type")), "QuotaReserved");
    cr_assert_str_eq(json_string_value(json_object_get(c, "status")), "False");
    json_decref(w);
    w = gx_engine_workload(en, "team-a/low2", 3000);
    cr_assert_eq(json_integer_value(json_object_get(w, "positionInClusterQueue")), 2);
    cr_assert_eq(json_integer_value(json_object_get(w, "positionInLocalQueue")), 1);
    json_decref(w);
    /* the list view computes the same positions */
    json_t *all = gx_engine_workloads(en, &(gx_wl_filter){.state = "Pending"}, 3000);
    cr_assert_eq(json_array_size(all), 3);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(all, 0), "name")), "high");
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(all, 1), "positionInClusterQueue")), 1);
    json_decref(all);
    gx_err e;
    cr_assert_eq(gx_engine_finish(en, "team-a/fill", 1, NULL, 5000, &e), 0);
    n = pass(en, 5000, &acts);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(acts[0].workload, "team-a/high");
    cr_assert_str_eq(acts[1].workload, "team-a/low1");
    cr_assert_str_eq(acts[2].workload, "team-a/low2");
    free(acts);
    gx_engine_free(en);
}

Test(engine_quota, waiting_reason_names_the_quota)
{
    gx_engine *en = setup("BestEffortFIFO");
    submit_ok(en, job("team-a", "a", "main", NULL, 1, "1", "3"), 0);
    submit_ok(en, job("team-a", "b", "main", NULL, 1, "1", "2"), 0);
    gx_action *acts;
    cr_assert_eq(pass(en, 0, &acts), 1);
    free(acts);
    json_t *w = gx_engine_workload(en, "team-a/b", 0);
    json_t *c = json_array_get(json_object_get(w, "conditions"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(c, "reason")), "WaitingForQuota");
    const char *m = json_string_value(json_object_get(c, "message"));
    cr_assert(strstr(m, "waiting for 2 nvidia.com/gpu in flavor h100: queue team-a uses 3 of 4"), "%s", m);
    json_decref(w);
    /* a request above what the queue can ever get */
    submit_ok(en, job("team-a", "huge", "main", NULL, 1, "1", "8"), 0);
    cr_assert_eq(pass(en, 0, &acts), 0);
    free(acts);
    w = gx_engine_workload(en, "team-a/huge", 0);
    c = json_array_get(json_object_get(w, "conditions"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(c, "reason")), "ExceedsMaxQuota");
    json_decref(w);
    json_t *cqs = gx_engine_cluster_queues(en);
    json_t *q = json_array_get(cqs, 0);
    cr_assert_eq(json_integer_value(json_object_get(q, "pendingWorkloads")), 2);
    cr_assert_eq(json_integer_value(json_object_get(q, "admittedWorkloads")), 1);
    json_decref(cqs);
    gx_engine_free(en);
}

Test(engine_quota, strict_fifo_blocks_best_effort_does_not)
{
    for (int strict = 0; strict < 2; strict++) {
        gx_engine *en = setup(strict ? "StrictFIFO" : "BestEffortFIFO");
        submit_ok(en, job("team-a", "a", "main", NULL, 1, "1", "3"), 0);
        submit_ok(en, job("team-a", "big", "main", NULL, 1, "1", "2"), 1000);
        submit_ok(en, job("team-a", "small", "main", NULL, 1, "1", "1"), 2000);
        gx_action *acts;
        size_t n = pass(en, 2000, &acts);
        free(acts);
        cr_assert_eq(n, strict ? 1 : 2, "strict=%d n=%zu", strict, n);
        cr_assert_str_eq(state_of(en, "team-a/small"), strict ? "Pending" : "Admitted");
        cr_assert_str_eq(state_of(en, "team-a/big"), "Pending");
        gx_engine_free(en);
    }
}

Test(engine_quota, first_flavor_that_fits)
{
    gx_engine *en = gx_engine_new(NULL);
    apply_ok(en, RF("a100"));
    apply_ok(en, RF("h100"));
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: team-a}\nspec:\n  namespaceSelector: {}\n"
                 "  resourceGroups:\n  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n"
                 "    - name: a100\n      resources: [{name: cpu, nominalQuota: 8}, {name: nvidia.com/gpu, nominalQuota: 1}]\n"
                 "    - name: h100\n      resources: [{name: cpu, nominalQuota: 8}, {name: nvidia.com/gpu, nominalQuota: 2}]\n");
    apply_ok(en, LQ("team-a", "main", "team-a"));
    submit_ok(en, job("team-a", "a", "main", NULL, 1, "1", "1"), 0);
    submit_ok(en, job("team-a", "b", "main", NULL, 1, "1", "1"), 1);
    gx_action *acts;
    cr_assert_eq(pass(en, 1, &acts), 2);
    free(acts);
    json_t *adm = gx_engine_admission(en, "team-a/a");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(adm, "flavors"), "nvidia.com/gpu")), "a100");
    json_decref(adm);
    adm = gx_engine_admission(en, "team-a/b");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(adm, "flavors"), "nvidia.com/gpu")), "h100");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(adm, "flavors"), "cpu")), "h100");
    json_decref(adm);
    gx_engine_free(en);
}

Test(engine_quota, namespace_selector_nil_matches_nothing)
{
    gx_engine *en = gx_engine_new(NULL);
    apply_ok(en, RF("h100"));
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n"
                 "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n    - name: h100\n      resources: [{name: cpu, nominalQuota: 8}]\n");
    apply_ok(en, LQ("ns1", "main", "q"));
    submit_ok(en, job("ns1", "a", "main", NULL, 1, "1", NULL), 0);
    gx_action *acts;
    cr_assert_eq(pass(en, 0, &acts), 0);
    free(acts);
    json_t *w = gx_engine_workload(en, "ns1/a", 0);
    const char *m = json_string_value(json_object_get(json_array_get(json_object_get(w, "conditions"), 0), "message"));
    cr_assert(strstr(m, "namespaceSelector"), "%s", m);
    json_decref(w);
    gx_engine_free(en);
}

/* ---- time and transitions ---------------------------------------------------------------- */

Test(engine_time, maximum_execution_time_deactivates)
{
    gx_engine *en = setup("BestEffortFIFO");
    json_t *j = job("team-a", "t", "main", NULL, 1, "1", "1");
    json_object_set_new(json_object_get(json_object_get(j, "metadata"), "labels"), "kueue.x-k8s.io/max-exec-time-seconds", json_string("10"));
    submit_ok(en, j, 0);
    gx_action *acts;
    cr_assert_eq(pass(en, 0, &acts), 1);
    free(acts);
    cr_assert_eq(gx_engine_next_wakeup(en, 0), 10000);
    /* evicted after 4 s, readmitted at 5 s: 6 s left, so it runs out at 11 s */
    gx_err e;
    cr_assert_eq(gx_engine_evict(en, "team-a/t", "NodeRestarted", "node restarted", 4000, &e), 0);
    cr_assert_eq(pass(en, 5000, &acts), 1);
    free(acts);
    cr_assert_eq(gx_engine_next_wakeup(en, 5000), 11000);
    cr_assert_eq(pass(en, 10999, &acts), 0);
    free(acts);
    cr_assert_eq(pass(en, 11000, &acts), 1);
    cr_assert_eq(acts[0].kind, GX_ACT_DEACTIVATE);
    cr_assert_str_eq(acts[0].reason, "MaximumExecutionTimeExceeded");
    free(acts);
    cr_assert_str_eq(state_of(en, "team-a/t"), "Deactivated");
    cr_assert_eq(gx_engine_next_wakeup(en, 11000), INT64_MAX);
    gx_engine_free(en);
}

Test(engine_time, transitions_and_errors)
{
    gx_engine *en = setup("BestEffortFIFO");
    submit_ok(en, job("team-a", "a", "main", NULL, 1, "1", "1"), 0);
    submit_ok(en, job("team-a", "b", "main", NULL, 1, "1", "1"), 0);
    gx_err e;
    cr_assert_eq(gx_engine_finish(en, "team-a/a", 1, NULL, 0, &e), -1);
    cr_assert_eq(e.status, 409);
    cr_assert_eq(gx_engine_finish(en, "team-a/zz", 1, NULL, 0, &e), -1);
    cr_assert_eq(e.status, 404);
    cr_assert_eq(gx_engine_cancel(en, "team-a/b", "no longer needed", 0, &e), 0);
    gx_action *acts;
    cr_assert_eq(pass(en, 0, &acts), 1);
    free(acts);
    cr_assert_eq(gx_engine_cancel(en, "team-a/a", NULL, 10, &e), 1);
    cr_assert_str_eq(state_of(en, "team-a/a"), "Deactivated");
    cr_assert_eq(gx_engine_cancel(en, "team-a/a", NULL, 10, &e), -1);
    cr_assert_eq(e.status, 409);
    cr_assert_eq(gx_engine_remove(en, "team-a/a", &e), 0);
    cr_assert_null(gx_engine_workload(en, "team-a/a", 0));
    submit_ok(en, job("team-a", "c", "main", NULL, 1, "1", "1"), 20);
    cr_assert_eq(gx_engine_remove(en, "team-a/c", &e), -1);
    cr_assert_eq(e.status, 409);
    gx_engine_free(en);
}

Test(engine_time, restore_keeps_admission)
{
    gx_engine *en = setup("BestEffortFIFO");
    json_t *j = job("team-a", "a", "main", NULL, 2, "1", "1");
    json_t *manifest = json_deep_copy(j);
    submit_ok(en, j, 1000);
    gx_action *acts;
    cr_assert_eq(pass(en, 2000, &acts), 1);
    free(acts);
    json_t *st = gx_engine_workload(en, "team-a/a", 2000);
    gx_engine *en2 = setup("BestEffortFIFO");
    gx_err e;
    cr_assert_eq(gx_engine_restore(en2, manifest, st, &e), 0, "%s", e.msg);
    cr_assert_str_eq(state_of(en2, "team-a/a"), "Admitted");
    json_t *cqs = gx_engine_cluster_queues(en2);
    json_t *res = json_object_get(json_array_get(cqs, 0), "resources");
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(res, 1), "usage")), "2");
    json_decref(cqs);
    json_decref(st);
    json_decref(manifest);
    gx_engine_free(en);
    gx_engine_free(en2);
}

Test(engine_place, devices_and_no_device_reason)
{
    gx_engine *en = setup("BestEffortFIFO");
    apply_ok(en, "apiVersion: gpuaas.dev/v1alpha1\nkind: Node\nmetadata: {name: n1}\nspec:\n  cpu: \"32\"\n  memory: 256Gi\n"
                 "  gpus: {model: H100-80GB, memory: 80Gi, count: 2}\n");
    submit_ok(en, job("team-a", "a", "main", NULL, 1, "1", "2"), 0);
    submit_ok(en, job("team-a", "b", "main", NULL, 1, "1", "1"), 1);
    gx_action *acts;
    cr_assert_eq(pass(en, 1, &acts), 1);
    free(acts);
    json_t *w = gx_engine_workload(en, "team-a/a", 1);
    json_t *pl = json_array_get(json_object_get(w, "placement"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(pl, "node")), "n1");
    cr_assert_eq(json_array_size(json_object_get(pl, "devices")), 2);
    json_decref(w);
    w = gx_engine_workload(en, "team-a/b", 1);
    json_t *c = json_array_get(json_object_get(w, "conditions"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(c, "reason")), "NoDeviceFits");
    cr_assert(strstr(json_string_value(json_object_get(c, "message")), "no node has 1 free nvidia.com/gpu"));
    json_decref(w);
    json_t *nodes = gx_engine_nodes(en);
    json_t *g0 = json_array_get(json_object_get(json_array_get(nodes, 0), "gpus"), 0);
    cr_assert(!strncmp(json_string_value(json_object_get(g0, "uuid")), "GPU-", 4));
    cr_assert_eq(json_array_size(json_object_get(g0, "workloads")), 1);
    json_decref(nodes);
    gx_err e;
    cr_assert_eq(gx_engine_finish(en, "team-a/a", 1, NULL, 5, &e), 0);
    cr_assert_eq(pass(en, 5, &acts), 1);
    free(acts);
    cr_assert_str_eq(state_of(en, "team-a/b"), "Admitted");
    gx_engine_free(en);
}

Test(engine_order, parked_groups_keep_queue_order)
{
    gx_engine *en = setup("BestEffortFIFO");
    submit_ok(en, job("team-a", "a", "main", NULL, 1, "1", "4"), 0);
    gx_action *acts;
    cr_assert_eq(pass(en, 0, &acts), 1);
    free(acts);
    const char *names[] = {"big1", "small1", "big2", "small2", "big3"};
    for (int i = 0; i < 5; i++) submit_ok(en, job("team-a", names[i], "main", NULL, 1, "1", i % 2 ? "1" : "2"), 10 + i);
    cr_assert_eq(pass(en, 20, &acts), 0);
    free(acts);
    /* positions follow creation order whatever group each workload is parked in */
    json_t *all = gx_engine_workloads(en, &(gx_wl_filter){.state = "Pending"}, 20);
    for (size_t i = 0; i < json_array_size(all); i++) {
        json_t *w = json_array_get(all, i);
        const char *nm = json_string_value(json_object_get(w, "name"));
        int want = -1;
        for (int k = 0; k < 5; k++) if (!strcmp(nm, names[k])) want = k;
        cr_assert_eq(json_integer_value(json_object_get(w, "positionInClusterQueue")), want, "%s", nm);
    }
    json_decref(all);
    gx_err e;
    cr_assert_eq(gx_engine_finish(en, "team-a/a", 1, NULL, 30, &e), 0);
    /* one head per cycle: big1 (2 left), small1 (1 left), big2 set aside with big3,
     * small2 takes the last GPU */
    size_t n = pass(en, 30, &acts);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(acts[0].workload, "team-a/big1");
    cr_assert_str_eq(acts[1].workload, "team-a/small1");
    cr_assert_str_eq(acts[2].workload, "team-a/small2");
    free(acts);
    /* big2 and big3 are parked together; a finish wakes them and big2 goes first */
    cr_assert_eq(gx_engine_finish(en, "team-a/big1", 1, NULL, 40, &e), 0);
    n = pass(en, 40, &acts);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(acts[0].workload, "team-a/big2");
    free(acts);
    gx_engine_free(en);
}

Test(engine_time, hold_and_drain_evicts_without_preemptor)
{
    gx_engine *en = setup("BestEffortFIFO");
    submit_ok(en, job("team-a", "a", "main", NULL, 1, "1", "1"), 0);
    gx_action *acts;
    cr_assert_eq(pass(en, 0, &acts), 1);
    free(acts);
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: main, namespace: team-a}\n"
                 "spec: {clusterQueue: team-a, stopPolicy: HoldAndDrain}\n");
    size_t n = pass(en, 10, &acts);
    cr_assert_eq(n, 1);
    cr_assert_eq(acts[0].kind, GX_ACT_PREEMPT);
    cr_assert_str_eq(acts[0].by, "");
    cr_assert_str_eq(acts[0].reason, "LocalQueueStopped");
    free(acts);
    cr_assert_str_eq(state_of(en, "team-a/a"), "Pending");
    json_t *w = gx_engine_workload(en, "team-a/a", 10);
    cr_assert_eq(json_integer_value(json_object_get(w, "accumulatedPastExecutionTimeSeconds")), 0);
    json_decref(w);
    apply_ok(en, LQ("team-a", "main", "team-a"));
    cr_assert_eq(pass(en, 20, &acts), 1);
    free(acts);
    gx_engine_free(en);
}

Test(engine_time, restore_pending_finished_and_devices)
{
    const char *node = "apiVersion: gpuaas.dev/v1alpha1\nkind: Node\nmetadata: {name: n1}\nspec:\n  gpus: {model: H100, memory: 80Gi, count: 4}\n";
    gx_engine *en = setup("BestEffortFIFO");
    apply_ok(en, node);
    json_t *ja = job("team-a", "a", "main", NULL, 1, "1", "2"), *jb = job("team-a", "b", "main", NULL, 1, "1", "4"),
           *jc = job("team-a", "c", "main", NULL, 1, "1", "1");
    json_t *ma = json_deep_copy(ja), *mb = json_deep_copy(jb), *mc = json_deep_copy(jc);
    submit_ok(en, ja, 0);
    submit_ok(en, jb, 1);
    submit_ok(en, jc, 2);
    gx_action *acts;
    cr_assert_eq(pass(en, 2, &acts), 2);          /* a and c; b waits */
    free(acts);
    gx_err e;
    cr_assert_eq(gx_engine_finish(en, "team-a/c", 0, "exit 1", 5, &e), 0);
    json_t *sa = gx_engine_workload(en, "team-a/a", 5), *sb = gx_engine_workload(en, "team-a/b", 5), *sc = gx_engine_workload(en, "team-a/c", 5);
    gx_engine *en2 = setup("BestEffortFIFO");
    apply_ok(en2, node);
    cr_assert_eq(gx_engine_restore(en2, ma, sa, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_engine_restore(en2, mb, sb, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_engine_restore(en2, mc, sc, &e), 0, "%s", e.msg);
    cr_assert_str_eq(state_of(en2, "team-a/a"), "Admitted");
    cr_assert_str_eq(state_of(en2, "team-a/b"), "Pending");
    cr_assert_str_eq(state_of(en2, "team-a/c"), "Finished");
    /* a keeps the very GPUs it had */
    json_t *ra = gx_engine_workload(en2, "team-a/a", 5);
    json_t *d1 = json_object_get(json_array_get(json_object_get(sa, "placement"), 0), "devices");
    json_t *d2 = json_object_get(json_array_get(json_object_get(ra, "placement"), 0), "devices");
    cr_assert(json_equal(d1, d2));
    json_decref(ra);
    cr_assert_eq(pass(en2, 6, &acts), 0);        /* 2 of 4 GPUs taken: b (4) still waits */
    free(acts);
    json_decref(sa); json_decref(sb); json_decref(sc);
    json_decref(ma); json_decref(mb); json_decref(mc);
    gx_engine_free(en);
    gx_engine_free(en2);
}

/* Issue 16: an ended workload restored after a restart lost its admittedAt (1970). */
Test(engine_time, restore_keeps_admitted_at_of_ended)
{
    const int64_t t0 = 1767225600000;             /* 2026-01-01T00:00:00Z */
    gx_engine *en = setup("BestEffortFIFO");
    json_t *ja = job("team-a", "a", "main", NULL, 1, "1", "1"), *jb = job("team-a", "b", "main", NULL, 1, "1", "1");
    json_t *ma = json_deep_copy(ja), *mb = json_deep_copy(jb);
    submit_ok(en, ja, t0);
    submit_ok(en, jb, t0 + 1);
    gx_action *acts;
    cr_assert_eq(pass(en, t0 + 2500, &acts), 2);
    free(acts);
    gx_err e;
    cr_assert_eq(gx_engine_finish(en, "team-a/a", 1, NULL, t0 + 9000, &e), 0);
    cr_assert_eq(gx_engine_cancel(en, "team-a/b", "stop", t0 + 9500, &e), 1);
    json_t *sa = gx_engine_workload(en, "team-a/a", t0 + 10000), *sb = gx_engine_workload(en, "team-a/b", t0 + 10000);
    cr_assert_str_eq(json_string_value(json_object_get(sa, "admittedAt")), "2026-01-01T00:00:02.500Z");
    gx_engine *en2 = setup("BestEffortFIFO");
    cr_assert_eq(gx_engine_restore(en2, ma, sa, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_engine_restore(en2, mb, sb, &e), 0, "%s", e.msg);
    const char *keys[] = {"team-a/a", "team-a/b"};
    json_t *before[] = {sa, sb};
    for (int i = 0; i < 2; i++) {
        json_t *r = gx_engine_workload(en2, keys[i], t0 + 20000);
        cr_assert_str_eq(json_string_value(json_object_get(r, "admittedAt")), "2026-01-01T00:00:02.500Z", "%s", keys[i]);
        cr_assert_str_eq(json_string_value(json_object_get(r, "finishedAt")),
                         json_string_value(json_object_get(before[i], "finishedAt")), "%s", keys[i]);
        json_decref(r);
        gx_wl_info info;
        cr_assert_eq(gx_engine_wl_info(en2, keys[i], &info), 0);
        cr_assert_eq(info.admitted_ms, t0 + 2500, "%s: %lld", keys[i], (long long)info.admitted_ms);
    }
    json_decref(sa); json_decref(sb);
    json_decref(ma); json_decref(mb);
    gx_engine_free(en);
    gx_engine_free(en2);
}

Test(engine_order, priority_boost_annotation)
{
    gx_engine *en = setup("BestEffortFIFO");
    submit_ok(en, job("team-a", "fill", "main", NULL, 1, "1", "4"), 0);
    gx_action *acts;
    cr_assert_eq(pass(en, 0, &acts), 1);
    free(acts);
    submit_ok(en, job("team-a", "plain", "main", NULL, 1, "1", "1"), 1);
    json_t *j = job("team-a", "boosted", "main", NULL, 1, "1", "1");
    json_object_set_new(json_object_get(j, "metadata"), "annotations", json_pack("{s:s}", "kueue.x-k8s.io/priority-boost", "5"));
    submit_ok(en, j, 2);
    json_t *w = gx_engine_workload(en, "team-a/boosted", 2);
    cr_assert_eq(json_integer_value(json_object_get(w, "priority")), 5);
    cr_assert_eq(json_integer_value(json_object_get(w, "positionInClusterQueue")), 0);
    json_decref(w);
    gx_engine_free(en);
}

Test(engine_quota, pending_active_inadmissible_split)
{
    gx_engine *en = setup("BestEffortFIFO");
    submit_ok(en, job("team-a", "a", "main", NULL, 1, "1", "4"), 0);
    submit_ok(en, job("team-a", "b", "main", NULL, 1, "1", "1"), 1);
    gx_action *acts;
    cr_assert_eq(pass(en, 1, &acts), 1);
    free(acts);
    submit_ok(en, job("team-a", "c", "main", NULL, 1, "1", "2"), 2);
    json_t *cqs = gx_engine_cluster_queues(en);
    json_t *q = json_array_get(cqs, 0);
    cr_assert_eq(json_integer_value(json_object_get(q, "pendingWorkloads")), 2);
    cr_assert_eq(json_integer_value(json_object_get(q, "pendingInadmissible")), 1);   /* b was tried */
    cr_assert_eq(json_integer_value(json_object_get(q, "pendingActive")), 1);         /* c not yet */
    json_decref(cqs);
    gx_engine_free(en);
}
