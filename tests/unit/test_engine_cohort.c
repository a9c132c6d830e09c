/* Unit tests for the engine's cohort rules: quota arithmetic with borrowing and lending
 * limits, Cohort objects (hierarchy, shared pool, validation), preemption reasons and
 * minimal victim sets, fair sharing shares, partial admission, pending reasons,
 * orphan queues and the Kueue v1beta1 / generateName inputs. Virtual clock only. */
#include "test_engine_util.h"

#define CQ_COHORT(name, cohort, gpu, extra_q, extra_spec)                                                   \
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: " name "}\nspec:\n"              \
    "  cohortName: " cohort "\n  namespaceSelector: {}\n" extra_spec "  resourceGroups:\n"                      \
    "  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n    - name: h100\n      resources:\n"          \
    "      - {name: cpu, nominalQuota: 100}\n      - {name: nvidia.com/gpu, nominalQuota: " gpu extra_q "}\n"

static gx_engine *two_queues(const char *qa, const char *qb)
{
    gx_engine *en = gx_engine_new(NULL);
    apply_ok(en, RF("h100"));
    apply_ok(en, qa);
    apply_ok(en, qb);
    apply_ok(en, LQ("a", "main", "team-a"));
    apply_ok(en, LQ("b", "main", "team-b"));
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: high}\nvalue: 1000\n");
    return en;
}

static const char *cond_reason(gx_engine *en, const char *key, char *msg, size_t n)
{
    static char reason[64];
    json_t *w = gx_engine_workload(en, key, 0);
    json_t *c = json_array_get(json_object_get(w, "conditions"), 0);
    snprintf(reason, sizeof reason, "%s", json_string_value(json_object_get(c, "reason")));
    if (msg) snprintf(msg, n, "%s", json_string_value(json_object_get(c, "message")));
    json_decref(w);
    return reason;
}

Test(engine_cohort, borrowing_limit_reason_and_usage_view)
{
    gx_engine *en = two_queues(CQ_COHORT("team-a", "lab", "2", ", borrowingLimit: 1", ""), CQ_COHORT("team-b", "lab", "4", "", ""));
    submit_ok(en, job("a", "a1", "main", NULL, 1, "1", "3"), 0);
    submit_ok(en, job("a", "a2", "main", NULL, 1, "1", "1"), 1);
    gx_action *acts;
    cr_assert_eq(pass(en, 1, &acts), 1);
    free(acts);
    char msg[512];
    cr_assert_str_eq(cond_reason(en, "a/a2", msg, sizeof msg), "BorrowingLimitReached");
    cr_assert(strstr(msg, "queue team-a uses 3 of 2, cohort lab can lend"), "%s", msg);
    json_t *cqs = gx_engine_cluster_queues(en);
    json_t *a = json_array_get(cqs, 0);
    cr_assert_str_eq(json_string_value(json_object_get(a, "cohort")), "lab");
    json_t *r = json_array_get(json_object_get(a, "resources"), 1);     /* [0] is cpu */
    cr_assert_str_eq(json_string_value(json_object_get(r, "usage")), "3");
    cr_assert_str_eq(json_string_value(json_object_get(r, "borrowingLimit")), "1");
    json_decref(cqs);
    gx_engine_free(en);
}

Test(engine_cohort, lending_limit_keeps_quota_local)
{
    gx_engine *en = two_queues(CQ_COHORT("team-a", "lab", "2", "", ""), CQ_COHORT("team-b", "lab", "4", ", lendingLimit: 1", ""));
    submit_ok(en, job("a", "huge", "main", NULL, 1, "1", "4"), 0);
    submit_ok(en, job("a", "a3", "main", NULL, 1, "1", "3"), 1);
    submit_ok(en, job("b", "b3", "main", NULL, 1, "1", "3"), 2);
    gx_action *acts;
    cr_assert_eq(pass(en, 2, &acts), 2);
    free(acts);
    cr_assert_str_eq(cond_reason(en, "a/huge", NULL, 0), "ExceedsMaxQuota");
    cr_assert_str_eq(state_of(en, "a/a3"), "Admitted");
    cr_assert_str_eq(state_of(en, "b/b3"), "Admitted");
    gx_engine_free(en);
}

Test(engine_cohort, cohort_object_pool_and_validation)
{
    gx_engine *en = gx_engine_new(NULL);
    apply_ok(en, RF("h100"));
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: org}\nspec:\n  resourceGroups:\n"
                 "  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n    - name: h100\n      resources: [{name: cpu, nominalQuota: 10}, {name: nvidia.com/gpu, nominalQuota: 4}]\n");
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: lab}\nspec: {parentName: org}\n");
    apply_ok(en, CQ_COHORT("team-a", "lab", "0", "", ""));
    apply_ok(en, LQ("a", "main", "team-a"));
    submit_ok(en, job("a", "x", "main", NULL, 1, "1", "4"), 0);
    gx_action *acts;
    cr_assert_eq(pass(en, 0, &acts), 1);
    free(acts);
    gx_err e = apply_err(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: c}\nspec: {parentName: c}\n");
    cr_assert_str_eq(e.field, "spec.parentName");
    e = apply_err(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: c}\nspec:\n  resourceGroups:\n"
                      "  - coveredResources: [cpu]\n    flavors:\n    - name: h100\n      resources: [{name: cpu, nominalQuota: 1, lendingLimit: 1}]\n");
    cr_assert(strstr(e.msg, "parent"), "%s", e.msg);
    json_t *co = gx_engine_objects(en, "Cohort");
    cr_assert_eq(json_array_size(co), 2);
    json_decref(co);
    gx_engine_free(en);
}

Test(engine_cohort, reclaim_preempts_borrower_with_reason)
{
    gx_engine *en = two_queues(CQ_COHORT("team-a", "lab", "2", "", ""),
                               CQ_COHORT("team-b", "lab", "2", "", "  preemption: {reclaimWithinCohort: Any}\n"));
    submit_ok(en, job("a", "a1", "main", NULL, 1, "1", "3"), 0);
    gx_action *acts;
    cr_assert_eq(pass(en, 0, &acts), 1);
    free(acts);
    submit_ok(en, job("b", "b1", "main", NULL, 1, "1", "2"), 5000);
    size_t n = pass(en, 5000, &acts);
    cr_assert_eq(n, 2);
    cr_assert_eq(acts[0].kind, GX_ACT_PREEMPT);
    cr_assert_str_eq(acts[0].workload, "a/a1");
    cr_assert_str_eq(acts[0].by, "b/b1");
    cr_assert_str_eq(acts[0].reason, "InCohortReclamation");
    cr_assert_str_eq(acts[0].cluster_queue, "team-a");
    cr_assert_eq(acts[1].kind, GX_ACT_ADMIT);
    cr_assert_str_eq(acts[1].flavors, "cpu=h100,nvidia.com/gpu=h100");
    free(acts);
    json_t *w = gx_engine_workload(en, "a/a1", 5000);
    cr_assert_str_eq(json_string_value(json_object_get(w, "state")), "Pending");
    json_t *conds = json_object_get(w, "conditions");
    int preempted = 0;
    for (size_t i = 0; i < json_array_size(conds); i++)
        if (!strcmp(json_string_value(json_object_get(json_array_get(conds, i), "type")), "Preempted")) preempted = 1;
    cr_assert(preempted);
    json_decref(w);
    json_t *cqs = gx_engine_cluster_queues(en);
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(cqs, 0), "evictedTotal")), 1);
    json_decref(cqs);
    gx_engine_free(en);
}

Test(engine_cohort, never_policy_does_not_preempt)
{
    gx_engine *en = two_queues(CQ_COHORT("team-a", "lab", "2", "", ""), CQ_COHORT("team-b", "lab", "2", "", ""));
    submit_ok(en, job("a", "a1", "main", NULL, 1, "1", "3"), 0);
    gx_action *acts;
    cr_assert_eq(pass(en, 0, &acts), 1);
    cr_assert_str_eq(acts[0].workload, "a/a1");
    free(acts);
    submit_ok(en, job("b", "b1", "main", "high", 1, "1", "2"), 1);
    cr_assert_eq(pass(en, 1, &acts), 0);     /* reclaimWithinCohort Never: no preemption */
    free(acts);
    char msg[512];
    cr_assert_str_eq(cond_reason(en, "b/b1", msg, sizeof msg), "WaitingForQuota");
    cr_assert(strstr(msg, "waiting for 2 nvidia.com/gpu in flavor h100: queue team-b uses 0 of 2, only 1 free: other queues of cohort lab borrow the rest"), "%s", msg);
    gx_engine_free(en);
}

Test(engine_cohort, fair_share_view)
{
    gx_engine_opts o = {.fair_sharing = 1};
    gx_engine *en = gx_engine_new(&o);
    apply_ok(en, RF("h100"));
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: lab}\nspec:\n  resourceGroups:\n"
                 "  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n    - name: h100\n      resources: [{name: cpu, nominalQuota: 0}, {name: nvidia.com/gpu, nominalQuota: 4}]\n");
    apply_ok(en, CQ_COHORT("team-a", "lab", "0", "", "  fairSharing: {weight: \"2\"}\n"));
    apply_ok(en, LQ("a", "main", "team-a"));
    submit_ok(en, job("a", "x", "main", NULL, 1, "1", "2"), 0);
    gx_action *acts;
    cr_assert_eq(pass(en, 0, &acts), 1);
    free(acts);
    json_t *cqs = gx_engine_cluster_queues(en);
    /* borrowed 2 of a lendable 4 -> 500, weight 2 -> 250 */
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(cqs, 0), "weightedShare")), 250);
    json_decref(cqs);
    gx_engine_free(en);
}

Test(engine_cohort, partial_admission_count)
{
    gx_engine *en = two_queues(CQ_COHORT("team-a", "lab", "4", "", ""), CQ_COHORT("team-b", "other", "0", "", ""));
    submit_ok(en, job("a", "filler", "main", NULL, 1, "1", "1"), 0);
    json_t *j = job("a", "par", "main", NULL, 5, "1", "1");
    json_object_set_new(json_object_get(j, "metadata"), "annotations", json_pack("{s:s}", "kueue.x-k8s.io/job-min-parallelism", "2"));
    submit_ok(en, j, 1);
    gx_action *acts;
    cr_assert_eq(pass(en, 1, &acts), 2);
    free(acts);
    json_t *w = gx_engine_workload(en, "a/par", 1);
    json_t *psa = json_array_get(json_object_get(json_object_get(w, "admission"), "podSetAssignments"), 0);
    cr_assert_eq(json_integer_value(json_object_get(psa, "count")), 3);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(psa, "resourceUsage"), "nvidia.com/gpu")), "3");
    json_decref(w);
    gx_engine_free(en);
}

Test(engine_cohort, orphan_queue_waits_for_its_cluster_queue)
{
    gx_engine *en = gx_engine_new(NULL);
    apply_ok(en, RF("h100"));
    apply_ok(en, LQ("a", "main", "later"));
    submit_ok(en, job("a", "x", "main", NULL, 1, "1", "1"), 0);
    gx_action *acts;
    cr_assert_eq(pass(en, 0, &acts), 0);
    free(acts);
    char msg[512];
    cr_assert_str_eq(cond_reason(en, "a/x", msg, sizeof msg), "Inadmissible");
    cr_assert(strstr(msg, "ClusterQueue later"), "%s", msg);
    apply_ok(en, CQ_COHORT("later", "lab", "2", "", ""));
    cr_assert_eq(pass(en, 1, &acts), 1);
    free(acts);
    gx_err e;
    cr_assert_eq(gx_engine_delete(en, "ClusterQueue", NULL, "later", &e), -1);
    cr_assert_eq(e.status, 409);
    cr_assert_eq(gx_engine_delete(en, "ResourceFlavor", NULL, "h100", &e), -1);
    cr_assert_eq(e.status, 409);
    cr_assert_eq(gx_engine_delete(en, "ClusterQueue", NULL, "nope", &e), -1);
    cr_assert_eq(e.status, 404);
    gx_engine_free(en);
}

Test(engine_cohort, v1beta1_and_generate_name)
{
    gx_engine *en = gx_engine_new(NULL);
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\n");
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n  cohort: lab\n"
                 "  namespaceSelector: {}\n  flavorFungibility: {whenCanBorrow: Borrow}\n  resourceGroups:\n"
                 "  - coveredResources: [cpu]\n    flavors:\n    - name: f\n      resources: [{name: cpu, nominalQuota: 2, borrowingLimit: 0}]\n");
    apply_ok(en, LQ("default", "main", "q"));
    submit_ok(en, Y("apiVersion: batch/v1\nkind: Job\nmetadata: {generateName: job-, labels: {kueue.x-k8s.io/queue-name: main}}\n"
                    "spec:\n  template:\n    spec:\n      containers: [{name: c, resources: {requests: {cpu: 1}}}]\n"), 0);
    json_t *all = gx_engine_workloads(en, NULL, 0);
    cr_assert_eq(json_array_size(all), 1);
    cr_assert(!strncmp(json_string_value(json_object_get(json_array_get(all, 0), "name")), "job-", 4));
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(all, 0), "namespace")), "default");
    json_decref(all);
    json_t *cqs = gx_engine_cluster_queues(en);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(cqs, 0), "cohort")), "lab");
    json_decref(cqs);
    gx_engine_free(en);
}

Test(engine_cohort, pods_quota_counts_pods)
{
    gx_engine *en = gx_engine_new(NULL);
    apply_ok(en, RF("f"));
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n  namespaceSelector: {}\n"
                 "  resourceGroups:\n  - coveredResources: [cpu, pods]\n    flavors:\n    - name: f\n"
                 "      resources: [{name: cpu, nominalQuota: 100}, {name: pods, nominalQuota: 3}]\n");
    apply_ok(en, LQ("a", "main", "q"));
    submit_ok(en, job("a", "two", "main", NULL, 2, "1", NULL), 0);
    submit_ok(en, job("a", "two-more", "main", NULL, 2, "1", NULL), 1);
    gx_action *acts;
    cr_assert_eq(pass(en, 1, &acts), 1);     /* 2 + 2 pods > 3 */
    cr_assert_str_eq(acts[0].workload, "a/two");
    cr_assert_str_eq(acts[0].flavors, "cpu=f,pods=f");
    free(acts);
    gx_engine_free(en);
}
