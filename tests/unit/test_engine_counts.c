/* Unit tests for engine_counts: the label sets of Kueue's admitted and evicted counters
 * (priority class; reason, underlying cause, priority class) in the ClusterQueue view, and
 * the LocalQueues' inadmissible pending workloads. Virtual clock only. */
#include <stdarg.h>
#include "test_engine_util.h"

static const char *const CQ =
    "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: solo}\n"
    "spec:\n  namespaceSelector: {}\n  queueingStrategy: BestEffortFIFO\n"
    "  preemption: {withinClusterQueue: LowerPriority}\n  resourceGroups:\n"
    "  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n    - name: h100\n      resources:\n"
    "      - {name: cpu, nominalQuota: \"%s\"}\n      - {name: nvidia.com/gpu, nominalQuota: \"1\"}\n";

static void apply_cq(gx_engine *en, const char *cpu)
{
    char b[1024];
    snprintf(b, sizeof b, CQ, cpu);
    apply_ok(en, b);
}

static void run_pass(gx_engine *en, int64_t now)
{
    gx_action *acts = NULL;
    pass(en, now, &acts);
    free(acts);
}

/* The ClusterQueue view's entry of `field` whose string fields match (NULL ends the
 * pairs); its count, or -1 when there is none. */
static long long count_of(gx_engine *en, const char *field, ...)
{
    json_t *cqs = gx_engine_cluster_queues(en);
    const json_t *arr = json_object_get(json_array_get(cqs, 0), field);
    long long n = -1;
    size_t i;
    const json_t *o;
    json_array_foreach(arr, i, o) {
        va_list ap;
        va_start(ap, field);
        int same = 1;
        for (const char *k; same && (k = va_arg(ap, const char *));) {
            const char *v = va_arg(ap, const char *);
            same = !strcmp(json_string_value(json_object_get(o, k)), v);
        }
        va_end(ap);
        if (same) { n = (long long)json_integer_value(json_object_get(o, "count")); break; }
    }
    json_decref(cqs);
    return n;
}

static long long lq_inadmissible(gx_engine *en)
{
    json_t *lqs = gx_engine_local_queues(en, NULL, 0);
    long long n = (long long)json_integer_value(json_object_get(json_array_get(lqs, 0), "pendingInadmissible"));
    json_decref(lqs);
    return n;
}

static gx_engine *setup(void)
{
    gx_engine *en = gx_engine_new(NULL);
    apply_ok(en, RF("h100"));
    apply_cq(en, "8");
    apply_ok(en, LQ("lab", "q", "solo"));
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: low}\nvalue: 100\n");
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: high}\nvalue: 1000\n");
    return en;
}

Test(engine_counts, admitted_by_priority_class_and_preempted_with_its_cause)
{
    gx_engine *en = setup();
    cr_assert_eq(count_of(en, "admittedByPriorityClass", "priorityClass", "low", NULL), -1, "nothing counted yet");
    submit_ok(en, job("lab", "low", "q", "low", 1, "1", "1"), 0);
    run_pass(en, 0);
    cr_assert_str_eq(state_of(en, "lab/low"), "Admitted");
    submit_ok(en, job("lab", "high", "q", "high", 1, "1", "1"), 1000);
    run_pass(en, 1000);
    run_pass(en, 2000);
    cr_assert_str_eq(state_of(en, "lab/high"), "Admitted");
    cr_assert_eq(count_of(en, "admittedByPriorityClass", "priorityClass", "low", NULL), 1);
    cr_assert_eq(count_of(en, "admittedByPriorityClass", "priorityClass", "high", NULL), 1);
    cr_assert_eq(count_of(en, "evictedByReason", "reason", "Preempted", "underlyingCause", "InClusterQueue",
                          "priorityClass", "low", NULL), 1);
    /* one without a class: priority class "" */
    submit_ok(en, job("lab", "plain", "q", NULL, 1, "1", "1"), 3000);
    run_pass(en, 3000);
    cr_assert_eq(lq_inadmissible(en), 2, "low (preempted) and plain wait, set aside by BestEffortFIFO");
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_engine_cancel(en, "lab/high", NULL, 4000, &e), 1);
    run_pass(en, 4000);
    cr_assert_eq(count_of(en, "evictedByReason", "reason", "Deactivated", "underlyingCause", "", "priorityClass", "high", NULL), 1,
                 "a cancel of an admitted workload is Kueue's Deactivated");
    cr_assert_eq(count_of(en, "admittedByPriorityClass", "priorityClass", "low", NULL), 2, "low is admitted again");
    /* the counts survive a change of the queue's spec, as the totals do */
    apply_cq(en, "16");
    cr_assert_eq(count_of(en, "admittedByPriorityClass", "priorityClass", "high", NULL), 1);
    cr_assert_eq(count_of(en, "evictedByReason", "reason", "Preempted", "underlyingCause", "InClusterQueue",
                          "priorityClass", "low", NULL), 1);
    gx_engine_free(en);
}

Test(engine_counts, maximum_execution_time_is_deactivated_with_its_cause)
{
    gx_engine *en = setup();
    json_t *j = job("lab", "short", "q", NULL, 1, "1", "1");
    json_object_set_new(json_object_get(json_object_get(j, "metadata"), "labels"),
                        "kueue.x-k8s.io/max-exec-time-seconds", json_string("5"));
    submit_ok(en, j, 0);
    run_pass(en, 0);
    cr_assert_str_eq(state_of(en, "lab/short"), "Admitted");
    run_pass(en, 6000);
    cr_assert_eq(count_of(en, "evictedByReason", "reason", "Deactivated", "underlyingCause", "MaximumExecutionTimeExceeded",
                          "priorityClass", "", NULL), 1);
    gx_engine_free(en);
}
