/* Unit tests for Kueue's admission checks in the engine (engine_check.c): the
 * AdmissionCheck kind, a ClusterQueue's checks (onFlavors too), the two phases
 * (QuotaReserved, then Admitted only when every check is Ready), Retry, Rejected, and a
 * restart that keeps the check states. Virtual clock only. */
#include "test_engine_util.h"

#define AC(name, ctl) "apiVersion: kueue.x-k8s.io/v1beta1\nkind: AdmissionCheck\nmetadata: {name: " name "}\n" \
                      "spec: {controllerName: " ctl "}\n"

/* One queue of 4 GPUs whose workloads need the checks given (a YAML flow list). */
static gx_engine *setup(const char *checks)
{
    gx_engine *en = gx_engine_new(NULL);
    apply_ok(en, RF("h100"));
    apply_ok(en, AC("approval", "gpuaas.dev/approval"));
    apply_ok(en, AC("prov", "example.com/provisioning"));
    char cq[1024];
    snprintf(cq, sizeof cq,
             "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\n"
             "spec:\n  namespaceSelector: {}\n  admissionChecksStrategy: {admissionChecks: %s}\n  resourceGroups:\n"
             "  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n    - name: h100\n      resources:\n"
             "      - {name: cpu, nominalQuota: \"16\"}\n      - {name: nvidia.com/gpu, nominalQuota: \"4\"}\n", checks);
    apply_ok(en, cq);
    apply_ok(en, LQ("t", "main", "cq"));
    return en;
}

static json_t *cond(json_t *w, const char *type)
{
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(w, "conditions"), i, c)
        if (!strcmp(json_string_value(json_object_get(c, "type")), type)) return c;
    return NULL;
}

static const char *cond_field(gx_engine *en, const char *key, const char *type, const char *field)
{
    static char out[1024];
    json_t *w = gx_engine_workload(en, key, 0);
    json_t *c = cond(w, type);
    snprintf(out, sizeof out, "%s", c ? json_string_value(json_object_get(c, field)) : "(none)");
    json_decref(w);
    return out;
}

static const char *check_state(gx_engine *en, const char *key, int i)
{
    static char out[64];
    json_t *w = gx_engine_workload(en, key, 0);
    json_t *c = json_array_get(json_object_get(w, "admissionChecks"), (size_t)i);
    snprintf(out, sizeof out, "%s", c ? json_string_value(json_object_get(c, "state")) : "(none)");
    json_decref(w);
    return out;
}

static size_t admits(gx_engine *en, int64_t now, const char *key)
{
    gx_action *a;
    size_t n = pass(en, now, &a), k = 0;
    for (size_t i = 0; i < n; i++) k += a[i].kind == GX_ACT_ADMIT && !strcmp(a[i].workload, key);
    free(a);
    return k;
}

Test(engine_check, quota_reserved_but_not_admitted_until_ready)
{
    gx_engine *en = setup("[{name: approval}]");
    submit_ok(en, job("t", "a", "main", NULL, 1, "1", "4"), 0);
    submit_ok(en, job("t", "b", "main", NULL, 1, "1", "4"), 1);
    cr_assert_eq(admits(en, 2, "t/a"), 0, "no ADMIT before the check is Ready");
    cr_assert_str_eq(state_of(en, "t/a"), "Pending");
    cr_assert_eq(gx_engine_wl_phase(en, "t/a"), GX_PHASE_PENDING);
    cr_assert_str_eq(cond_field(en, "t/a", "QuotaReserved", "status"), "True");
    cr_assert_str_eq(cond_field(en, "t/a", "Admitted", "status"), "False");
    cr_assert_str_eq(cond_field(en, "t/a", "Admitted", "reason"), "UnsatisfiedChecks");
    cr_assert(strstr(cond_field(en, "t/a", "Admitted", "message"), "gpuaas approve t/a"));
    cr_assert_str_eq(check_state(en, "t/a", 0), "Pending");
    /* the reservation holds the quota: b waits for it */
    cr_assert_str_eq(cond_field(en, "t/b", "QuotaReserved", "status"), "False");
    cr_assert_eq(gx_engine_count(en, "Admitted"), 0);
    cr_assert_eq(gx_engine_count(en, "Pending"), 2);

    gx_err e;
    cr_assert_eq(gx_engine_set_check(en, "t", "a", NULL, GX_CHECK_READY, "ok by admin", 3, &e), 0, "%s", e.msg);
    cr_assert_str_eq(check_state(en, "t/a", 0), "Ready");
    cr_assert_eq(admits(en, 4, "t/a"), 1);
    cr_assert_str_eq(state_of(en, "t/a"), "Admitted");
    cr_assert_str_eq(cond_field(en, "t/a", "Admitted", "status"), "True");
    /* a check can no longer be set once it is admitted */
    cr_assert_eq(gx_engine_set_check(en, "t", "a", NULL, GX_CHECK_READY, NULL, 5, &e), -1);
    cr_assert_eq(e.status, 409);
    gx_engine_free(en);
}

Test(engine_check, every_check_must_be_ready)
{
    gx_engine *en = setup("[{name: approval}, {name: prov}]");
    submit_ok(en, job("t", "a", "main", NULL, 1, "1", "1"), 0);
    cr_assert_eq(admits(en, 1, "t/a"), 0);
    /* the check of a controller gpuaas does not run says so */
    const char *m = cond_field(en, "t/a", "Admitted", "message");
    cr_assert(strstr(m, "admission check prov: controller example.com/provisioning is not run by gpuaas; "
                        "the workload waits until the check is set Ready"), "%s", m);
    gx_err e;
    cr_assert_eq(gx_engine_set_check(en, "t", "a", NULL, GX_CHECK_READY, NULL, 2, &e), 0, "%s", e.msg);
    cr_assert_eq(admits(en, 3, "t/a"), 0, "prov is still Pending");
    cr_assert_eq(gx_engine_set_check(en, "t", "a", "nope", GX_CHECK_READY, NULL, 4, &e), -1);
    cr_assert_eq(e.status, 404);
    cr_assert_str_eq(e.field, "check");
    cr_assert_eq(gx_engine_set_check(en, "t", "a", "prov", GX_CHECK_READY, NULL, 5, &e), 0, "%s", e.msg);
    cr_assert_eq(admits(en, 6, "t/a"), 1);
    gx_engine_free(en);
}

Test(engine_check, retry_releases_quota_and_requeues)
{
    gx_engine *en = setup("[{name: approval}]");
    submit_ok(en, job("t", "a", "main", NULL, 1, "1", "4"), 0);
    submit_ok(en, job("t", "b", "main", NULL, 1, "1", "4"), 1);
    admits(en, 2, "t/a");
    gx_err e;
    cr_assert_eq(gx_engine_set_check(en, "t", "a", "approval", GX_CHECK_RETRY, "later", 3, &e), 0, "%s", e.msg);
    cr_assert_str_eq(cond_field(en, "t/a", "QuotaReserved", "status"), "False");
    cr_assert_str_eq(cond_field(en, "t/a", "Evicted", "reason"), "AdmissionCheck");
    cr_assert_str_eq(check_state(en, "t/a", 0), "Pending");
    json_t *w = gx_engine_workload(en, "t/a", 0);
    cr_assert_null(json_object_get(w, "admission"));
    json_decref(w);
    /* the freed quota goes to b at the next pass; a waits behind it */
    admits(en, 4, "t/b");
    cr_assert_str_eq(cond_field(en, "t/b", "QuotaReserved", "status"), "True");
    cr_assert_str_eq(cond_field(en, "t/a", "QuotaReserved", "status"), "False");
    gx_engine_free(en);
}

Test(engine_check, rejected_deactivates_with_the_reason)
{
    gx_engine *en = setup("[{name: approval}]");
    submit_ok(en, job("t", "a", "main", NULL, 1, "1", "4"), 0);
    submit_ok(en, job("t", "b", "main", NULL, 1, "1", "4"), 1);
    admits(en, 2, "t/a");
    gx_err e;
    cr_assert_eq(gx_engine_set_check(en, "t", "a", NULL, GX_CHECK_REJECTED, "no budget this month", 3, &e), 0, "%s", e.msg);
    cr_assert_str_eq(state_of(en, "t/a"), "Deactivated");
    cr_assert_str_eq(cond_field(en, "t/a", "Evicted", "reason"), "Deactivated");
    cr_assert(strstr(cond_field(en, "t/a", "Evicted", "message"), "no budget this month"));
    cr_assert_str_eq(check_state(en, "t/a", 0), "Rejected");
    cr_assert_eq(admits(en, 4, "t/a"), 0, "a rejected workload is not restarted");
    cr_assert_str_eq(cond_field(en, "t/b", "QuotaReserved", "status"), "True");
    gx_engine_free(en);
}

Test(engine_check, on_flavors_limits_a_check)
{
    gx_engine *en = gx_engine_new(NULL);
    apply_ok(en, RF("h100"));
    apply_ok(en, RF("a100"));
    apply_ok(en, AC("approval", "gpuaas.dev/approval"));
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\n"
                 "spec:\n  namespaceSelector: {}\n  admissionChecksStrategy:\n    admissionChecks:\n"
                 "    - {name: approval, onFlavors: [h100]}\n  resourceGroups:\n"
                 "  - coveredResources: [cpu, nvidia.com/gpu]\n    flavors:\n"
                 "    - name: a100\n      resources:\n      - {name: cpu, nominalQuota: \"16\"}\n      - {name: nvidia.com/gpu, nominalQuota: \"2\"}\n"
                 "    - name: h100\n      resources:\n      - {name: cpu, nominalQuota: \"16\"}\n      - {name: nvidia.com/gpu, nominalQuota: \"4\"}\n");
    apply_ok(en, LQ("t", "main", "cq"));
    submit_ok(en, job("t", "small", "main", NULL, 1, "1", "2"), 0);   /* fits a100: no check */
    submit_ok(en, job("t", "big", "main", NULL, 1, "1", "4"), 1);     /* only h100: checked */
    gx_action *a;
    size_t n = pass(en, 2, &a);
    int small = 0, big = 0;
    for (size_t i = 0; i < n; i++) {
        small += a[i].kind == GX_ACT_ADMIT && !strcmp(a[i].workload, "t/small");
        big += a[i].kind == GX_ACT_ADMIT && !strcmp(a[i].workload, "t/big");
    }
    free(a);
    cr_assert_eq(small, 1);
    cr_assert_eq(big, 0);
    cr_assert_str_eq(check_state(en, "t/big", 0), "Pending");
    cr_assert_str_eq(check_state(en, "t/small", 0), "(none)");
    gx_engine_free(en);
}

/* The daemon stores the view and restores it into a fresh engine after a restart. */
static gx_engine *restart(gx_engine *old, const char *checks, const char *key, json_t *manifest)
{
    json_t *st = gx_engine_workload(old, key, 0);
    gx_engine_free(old);
    gx_engine *en = setup(checks);
    gx_err e;
    cr_assert_eq(gx_engine_restore(en, manifest, st, &e), 0, "%s", e.msg);
    json_decref(st);
    return en;
}

Test(engine_check, restart_keeps_check_states)
{
    gx_engine *en = setup("[{name: approval}, {name: prov}]");
    json_t *m = job("t", "a", "main", NULL, 1, "1", "4");
    json_incref(m);
    submit_ok(en, m, 0);
    admits(en, 1, "t/a");
    gx_err e;
    cr_assert_eq(gx_engine_set_check(en, "t", "a", "approval", GX_CHECK_READY, "fine", 2, &e), 0, "%s", e.msg);
    en = restart(en, "[{name: approval}, {name: prov}]", "t/a", m);
    cr_assert_str_eq(state_of(en, "t/a"), "Pending");
    cr_assert_str_eq(cond_field(en, "t/a", "QuotaReserved", "status"), "True");
    cr_assert_str_eq(check_state(en, "t/a", 0), "Ready");
    cr_assert_str_eq(check_state(en, "t/a", 1), "Pending");
    /* the quota is still held after the restart */
    submit_ok(en, job("t", "b", "main", NULL, 1, "1", "4"), 3);
    cr_assert_eq(admits(en, 4, "t/a"), 0);
    cr_assert_str_eq(cond_field(en, "t/b", "QuotaReserved", "status"), "False");
    cr_assert_eq(gx_engine_set_check(en, "t", "a", "prov", GX_CHECK_READY, NULL, 5, &e), 0, "%s", e.msg);
    cr_assert_eq(admits(en, 6, "t/a"), 1);
    /* and an admitted workload stays admitted, its checks Ready */
    en = restart(en, "[{name: approval}, {name: prov}]", "t/a", m);
    cr_assert_str_eq(state_of(en, "t/a"), "Admitted");
    cr_assert_str_eq(check_state(en, "t/a", 1), "Ready");
    cr_assert_eq(admits(en, 7, "t/a"), 0, "no second ADMIT after a restart");
    json_decref(m);
    gx_engine_free(en);
}

Test(engine_check, restart_keeps_a_rejection)
{
    gx_engine *en = setup("[{name: approval}]");
    json_t *m = job("t", "a", "main", NULL, 1, "1", "4");
    json_incref(m);
    submit_ok(en, m, 0);
    admits(en, 1, "t/a");
    gx_err e;
    cr_assert_eq(gx_engine_set_check(en, "t", "a", NULL, GX_CHECK_REJECTED, "too big", 2, &e), 0, "%s", e.msg);
    en = restart(en, "[{name: approval}]", "t/a", m);
    cr_assert_str_eq(state_of(en, "t/a"), "Deactivated");
    cr_assert_str_eq(check_state(en, "t/a", 0), "Rejected");
    json_t *w = gx_engine_workload(en, "t/a", 0);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(json_object_get(w, "admissionChecks"), 0), "message")), "too big");
    json_decref(w);
    json_decref(m);
    gx_engine_free(en);
}

Test(engine_check, admission_check_kind)
{
    gx_engine *en = gx_engine_new(NULL);
    gx_err e = apply_err(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: AdmissionCheck\nmetadata: {name: x}\nspec: {}\n");
    cr_assert_str_eq(e.field, "spec.controllerName");
    apply_ok(en, AC("approval", "gpuaas.dev/approval"));
    apply_ok(en, AC("prov", "example.com/provisioning"));
    e = apply_err(en, AC("prov", "example.com/other"));
    cr_assert_str_eq(e.field, "spec.controllerName");
    json_t *l = gx_engine_objects(en, "AdmissionCheck");
    cr_assert_eq(json_array_size(l), 2);
    json_t *c0 = json_array_get(json_object_get(json_object_get(json_array_get(l, 0), "status"), "conditions"), 0);
    json_t *c1 = json_array_get(json_object_get(json_object_get(json_array_get(l, 1), "status"), "conditions"), 0);
    cr_assert_str_eq(json_string_value(json_object_get(c0, "status")), "True");
    cr_assert_str_eq(json_string_value(json_object_get(c1, "status")), "False");
    cr_assert(strstr(json_string_value(json_object_get(c1, "message")), "not run by gpuaas"));
    json_decref(l);
    /* v1beta1's list and its strategy exclude each other; v1beta2 has only the strategy */
    e = apply_err(en, "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\n"
                      "spec:\n  admissionChecks: [prov]\n  admissionChecksStrategy: {admissionChecks: [{name: prov}]}\n");
    cr_assert_str_eq(e.field, "spec.admissionChecksStrategy");
    e = apply_err(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n  admissionChecks: [prov]\n");
    cr_assert_str_eq(e.field, "spec.admissionChecks");
    apply_ok(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: cq}\n"
                 "spec:\n  admissionChecksStrategy: {admissionChecks: [{name: prov}]}\n");
    gx_err_clear(&e);
    cr_assert_eq(gx_engine_delete(en, "AdmissionCheck", NULL, "prov", &e), -1);
    cr_assert_eq(e.status, 409);
    cr_assert_eq(gx_engine_delete(en, "AdmissionCheck", NULL, "approval", &e), 0);
    gx_engine_free(en);
}
