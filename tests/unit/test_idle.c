/* Unit tests for core/idle: IdlePolicy validation (errors name the field) and the
 * verdict on a step signal of utilisation samples. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/idle.h"

static gx_idle_policy *P(const char *spec_json)
{
    char doc[1024];
    snprintf(doc, sizeof doc, "{\"apiVersion\":\"gpuaas.dev/v1alpha1\",\"kind\":\"IdlePolicy\","
             "\"metadata\":{\"name\":\"p\"},\"spec\":%s}", spec_json);
    json_t *j = json_loads(doc, 0, NULL);
    cr_assert(j, "bad json %s", doc);
    gx_idle_policy *p = NULL;
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_idle_policy_parse(j, &p, &e), 0, "parse %s: %s: %s", spec_json, e.field, e.msg);
    json_decref(j);
    return p;
}

static gx_err F(const char *spec_json)
{
    char doc[1024];
    snprintf(doc, sizeof doc, "{\"apiVersion\":\"gpuaas.dev/v1alpha1\",\"kind\":\"IdlePolicy\","
             "\"metadata\":{\"name\":\"p\"},\"spec\":%s}", spec_json);
    json_t *j = json_loads(doc, 0, NULL);
    gx_idle_policy *p = NULL;
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_idle_policy_parse(j, &p, &e), -1, "%s should fail", spec_json);
    cr_assert_null(p);
    json_decref(j);
    return e;
}

#define BASE "\"clusterQueues\":[\"interactive\"],\"threshold\":5,\"idleFor\":\"30m\""

Test(idle, parse_full_policy)
{
    gx_idle_policy *p = P("{" BASE ",\"grace\":\"10m\",\"action\":\"requeue\",\"maxAge\":\"8h\","
                          "\"exemptPriorityClasses\":[\"critical\"],\"localQueues\":[\"ns/lq\"]}");
    cr_assert_eq(p->n_cq, 1);
    cr_assert_str_eq(p->cluster_queues[0], "interactive");
    cr_assert_eq(p->threshold, 5.0);
    cr_assert_eq(p->idle_for_ms, 30 * 60000);
    cr_assert_eq(p->grace_ms, 10 * 60000);
    cr_assert_eq(p->max_age_ms, 8LL * 3600000);
    cr_assert_eq(p->action, GX_IDLE_REQUEUE);
    cr_assert_str_eq(gx_idle_action_name(p->action), "requeue");
    cr_assert(gx_idle_policy_covers(p, "interactive", NULL, NULL, NULL));
    cr_assert(gx_idle_policy_covers(p, "other", "ns/lq", NULL, ""));
    cr_assert_not(gx_idle_policy_covers(p, "other", "ns/x", NULL, NULL));
    cr_assert_not(gx_idle_policy_covers(p, "interactive", NULL, NULL, "critical"), "exempt class is not covered");
    gx_idle_policy_free(p);
    p = P("{\"templates\":[\"interactive-session\"],\"threshold\":5,\"idleFor\":\"30m\"}");
    cr_assert(gx_idle_policy_covers(p, "any", "ns/any", "interactive-session", NULL), "covered by its template");
    cr_assert_not(gx_idle_policy_covers(p, "any", "ns/any", "batch-training", NULL));
    gx_idle_policy_free(p);
    p = P("{" BASE "}");
    cr_assert_eq(p->action, GX_IDLE_NOTIFY, "action defaults to notify");
    cr_assert_eq(p->grace_ms, 0);
    cr_assert_eq(p->max_age_ms, 0);
    gx_idle_policy_free(p);
}

Test(idle, errors_name_the_field)
{
    cr_assert_str_eq(F("{\"threshold\":5,\"idleFor\":\"30m\"}").field, "spec.clusterQueues");
    cr_assert_str_eq(F("{\"clusterQueues\":[\"a\"],\"idleFor\":\"30m\"}").field, "spec.threshold");
    cr_assert_str_eq(F("{\"clusterQueues\":[\"a\"],\"threshold\":101,\"idleFor\":\"30m\"}").field, "spec.threshold");
    cr_assert_str_eq(F("{\"clusterQueues\":[\"a\"],\"threshold\":5}").field, "spec.idleFor");
    cr_assert_str_eq(F("{" BASE ",\"grace\":\"soon\"}").field, "spec.grace");
    cr_assert_str_eq(F("{" BASE ",\"maxAge\":\"0s\"}").field, "spec.maxAge");
    cr_assert_str_eq(F("{" BASE ",\"action\":\"kill\"}").field, "spec.action");
    cr_assert_str_eq(F("{" BASE ",\"localQueues\":[\"nons\"]}").field, "spec.localQueues[0]");
    cr_assert_str_eq(F("{" BASE ",\"exemptPriorityClasses\":[\"\"]}").field, "spec.exemptPriorityClasses[0]");
    gx_err e = F("{" BASE ",\"idelFor\":\"1m\"}");
    cr_assert_eq(e.status, 400);
    cr_assert_str_eq(e.field, "spec.idelFor");
}

Test(idle, warn_then_act_on_step_signal)
{
    gx_idle_policy *p = P("{" BASE ",\"grace\":\"10m\",\"action\":\"requeue\"}");
    const int64_t M = 60000, S0 = 1000 * M;
    gx_idle_sample s[] = {{S0, 90}, {S0 + 10 * M, 2}};
    gx_idle_verdict v;
    gx_idle_decide(p, S0, s, 2, S0 + 5 * M, &v);
    cr_assert_eq(v.kind, GX_IDLE_NONE);
    cr_assert_eq(v.next_ms, S0 + 10 * M, "next: the next sample");
    gx_idle_decide(p, S0, s, 2, S0 + 20 * M, &v);
    cr_assert_eq(v.kind, GX_IDLE_NONE);
    cr_assert_eq(v.next_ms, S0 + 40 * M, "next: idleFor runs out");
    gx_idle_decide(p, S0, s, 2, S0 + 40 * M, &v);
    cr_assert_eq(v.kind, GX_IDLE_WARN);
    cr_assert_eq(v.idle_since_ms, S0 + 10 * M);
    cr_assert_eq(v.next_ms, S0 + 50 * M);
    gx_idle_decide(p, S0, s, 2, S0 + 50 * M, &v);
    cr_assert_eq(v.kind, GX_IDLE_ACT);
    cr_assert_str_eq(v.reason, "Idle");
    cr_assert_eq(v.idle_since_ms, S0 + 10 * M);
    gx_idle_policy_free(p);
}

Test(idle, busy_again_resets_and_no_samples_is_not_idle)
{
    gx_idle_policy *p = P("{" BASE ",\"grace\":\"1m\"}");
    const int64_t M = 60000;
    gx_idle_sample s[] = {{0, 1}, {20 * M, 50}, {25 * M, 4}, {30 * M, 4.9}};
    gx_idle_verdict v;
    gx_idle_decide(p, 0, s, 4, 40 * M, &v);
    cr_assert_eq(v.kind, GX_IDLE_NONE, "idle run began at 25m, not 0");
    cr_assert_eq(v.next_ms, 55 * M);
    gx_idle_decide(p, 0, s, 4, 55 * M, &v);
    cr_assert_eq(v.kind, GX_IDLE_WARN);
    cr_assert_eq(v.idle_since_ms, 25 * M);
    gx_idle_decide(p, 0, NULL, 0, 999 * M, &v);
    cr_assert_eq(v.kind, GX_IDLE_NONE);
    cr_assert_eq(v.next_ms, INT64_MAX);
    /* samples from before this start (an earlier admission) do not count before it */
    gx_idle_sample old[] = {{0, 0}};
    gx_idle_decide(p, 100 * M, old, 1, 110 * M, &v);
    cr_assert_eq(v.kind, GX_IDLE_NONE);
    cr_assert_eq(v.next_ms, 130 * M);
    gx_idle_policy_free(p);
}

Test(idle, max_age_and_reclaimed_hours)
{
    gx_idle_policy *p = P("{" BASE ",\"maxAge\":\"2h\"}");
    const int64_t H = 3600000;
    gx_idle_sample s[] = {{0, 80}};
    gx_idle_verdict v;
    gx_idle_decide(p, 0, s, 1, H, &v);
    cr_assert_eq(v.kind, GX_IDLE_NONE);
    cr_assert_eq(v.next_ms, 2 * H);
    gx_idle_decide(p, 0, s, 1, 2 * H, &v);
    cr_assert_eq(v.kind, GX_IDLE_ACT);
    cr_assert_str_eq(v.reason, "MaxAgeExceeded");
    /* 2 devices, action at 30m, maxAge ends at 2h: 2 x 1.5 h */
    cr_assert_float_eq(gx_idle_reclaimed_gpu_hours(p, 0, 0, 2, H / 2), 3.0, 1e-9);
    /* the max execution time ends first (1h) */
    cr_assert_float_eq(gx_idle_reclaimed_gpu_hours(p, 0, H, 2, H / 2), 1.0, 1e-9);
    gx_idle_policy_free(p);
    p = P("{" BASE "}");
    cr_assert_float_eq(gx_idle_reclaimed_gpu_hours(p, 0, 0, 4, H), 0.0, 1e-9, "unbounded: 0");
    gx_idle_policy_free(p);
}

Test(idle, samples_annotation)
{
    gx_idle_sample *s;
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_idle_samples_parse("0s=90,600s=2,1h=0.5", "a", &s, &e), 3);
    cr_assert_eq(s[1].t_ms, 600000);
    cr_assert_eq(s[1].pct, 2.0);
    cr_assert_eq(s[2].t_ms, 3600000);
    free(s);
    cr_assert_eq(gx_idle_samples_parse("0s=90,10s=2", "a", &s, &e), 2);
    free(s);
    cr_assert_eq(gx_idle_samples_parse("10s=90,5s=2", "ann", &s, &e), -1);
    cr_assert_str_eq(e.field, "ann");
    cr_assert_null(s);
    cr_assert_eq(gx_idle_samples_parse("0s=190", "ann", &s, &e), -1);
    cr_assert_eq(gx_idle_samples_parse("0s", "ann", &s, &e), -1);
}

/* ---- the engine's two idle entry points ---------------------------------------------- */
#include "core/engine.h"
#include "test_engine_util.h"

static gx_engine *one_gpu_queue(void)
{
    gx_engine_opts o = {0};
    gx_engine *en = gx_engine_new(&o);
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: h100}\n");
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n"
                 "  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [cpu, nvidia.com/gpu]\n"
                 "    flavors:\n    - name: h100\n      resources: [{name: cpu, nominalQuota: 8}, {name: nvidia.com/gpu, nominalQuota: 1}]\n");
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q, namespace: ns}\nspec: {clusterQueue: cq}\n");
    return en;
}

/* Fails with gx_engine_evict (creation order readmits the idle one first). */
Test(idle, requeue_back_lets_the_waiting_in)
{
    gx_engine *en = one_gpu_queue();
    gx_action *a;
    submit_ok(en, job("ns", "idle", "q", NULL, 1, "1", "1"), 0);
    pass(en, 0, &a), free(a);
    submit_ok(en, job("ns", "waiting", "q", NULL, 1, "1", "1"), 1000);
    pass(en, 1000, &a), free(a);
    cr_assert_str_eq(state_of(en, "ns/idle"), "Admitted");
    gx_err e;
    cr_assert_eq(gx_engine_requeue_back(en, "ns/idle", "Idle", "idle", 5000, &e), 0);
    size_t n = pass(en, 5000, &a);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(a[0].workload, "ns/waiting", "the one waiting goes first, not the older idle one");
    free(a);
    cr_assert_str_eq(state_of(en, "ns/idle"), "Pending");
    cr_assert_eq(gx_engine_requeue_back(en, "ns/idle", "Idle", "idle", 6000, &e), -1, "not admitted: 409");
    cr_assert_eq(e.status, 409);
    gx_engine_free(en);
}

Test(idle, deactivate_for_keeps_the_reason)
{
    gx_engine *en = one_gpu_queue();
    gx_action *a;
    submit_ok(en, job("ns", "s", "q", NULL, 1, "1", "1"), 0);
    pass(en, 0, &a), free(a);
    gx_err e;
    cr_assert_eq(gx_engine_deactivate_for(en, "ns/s", "Idle", "IdlePolicy p: Idle", 10, &e), 1, "it was admitted");
    json_t *w = gx_engine_workload(en, "ns/s", 10);
    cr_assert_str_eq(json_string_value(json_object_get(w, "state")), "Deactivated");
    int found = 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(w, "conditions"), i, c)
        if (!strcmp(json_string_value(json_object_get(c, "reason")), "Idle")) found = 1;
    cr_assert(found, "a condition says Idle");
    json_decref(w);
    cr_assert_eq(gx_engine_deactivate_for(en, "ns/s", "Idle", "", 20, &e), -1);
    cr_assert_eq(e.status, 409);
    gx_engine_free(en);
}
