/* Unit tests for the Kubernetes-object renderers (ops/k8s.h): spec and user metadata go
 * out exactly as applied, server-set fields are what apply strips (so get | apply is
 * "unchanged"), and status takes Kueue's shapes from the engine's views. The same views
 * are validated against Kueue's CRDs by tests/integration/objects_out.sh. */
#include <criterion/criterion.h>
#include <string.h>
#include "ops/k8s.h"

static json_t *J(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    cr_assert(v, "bad test JSON: %s", e.text);
    return v;
}

static const char *S(const json_t *o, const char *a, const char *b, const char *c)
{
    const json_t *v = json_object_get(o, a);
    if (b) v = json_object_get(v, b);
    if (c) v = json_object_get(v, c);
    return json_string_value(v);
}

static const char *CQ_MANIFEST =
    "{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"ClusterQueue\",\"metadata\":{\"name\":\"solo\",\"labels\":{\"a\":\"b\"}},"
    "\"spec\":{\"resourceGroups\":[{\"coveredResources\":[\"nvidia.com/gpu\"],\"flavors\":[{\"name\":\"h100\","
    "\"resources\":[{\"name\":\"nvidia.com/gpu\",\"nominalQuota\":1}]}]}]}}";

Test(k8s, applied_then_stripped_is_the_manifest)
{
    json_t *m = J(CQ_MANIFEST);
    json_t *o = gx_k8s_applied(m, 1764600000000, json_pack("{s:i}", "pendingWorkloads", 0));
    cr_assert_str_eq(S(o, "metadata", "creationTimestamp", NULL), "2025-12-01T14:40:00.000Z");
    cr_assert_str_eq(S(o, "metadata", "labels", "a"), "b");
    cr_assert(json_object_get(o, "status"));
    cr_assert(json_equal(json_object_get(o, "spec"), json_object_get(m, "spec")), "spec changed on the way out");
    cr_assert(!json_equal(o, m));
    /* what kubectl or an API server would add too */
    json_object_set_new(json_object_get(o, "metadata"), "resourceVersion", json_string("42"));
    json_object_set_new(json_object_get(o, "metadata"), "uid", json_string("d3b0"));
    json_object_set_new(json_object_get(o, "metadata"), "managedFields", json_array());
    gx_k8s_strip_server_fields(o);
    cr_assert(json_equal(o, m), "get | apply would not be unchanged");
    json_decref(o);
    json_decref(m);
}

Test(k8s, strip_leaves_user_fields)
{
    json_t *d = J("{\"kind\":\"ResourceFlavor\",\"metadata\":{\"name\":\"x\",\"annotations\":{\"k\":\"v\"},\"generation\":3},"
                  "\"spec\":{\"status\":\"kept\"},\"status\":{}}");
    gx_k8s_strip_server_fields(d);
    cr_assert_null(json_object_get(d, "status"));
    cr_assert_null(json_object_get(json_object_get(d, "metadata"), "generation"));
    cr_assert_str_eq(S(d, "metadata", "annotations", "k"), "v");
    cr_assert_str_eq(S(d, "spec", "status", NULL), "kept", "only the top-level status is the server's");
    gx_k8s_strip_server_fields(NULL);   /* not a mapping: nothing to do */
    json_decref(d);
}

Test(k8s, cluster_queue_status)
{
    json_t *v = J("{\"name\":\"solo\",\"active\":true,\"pendingWorkloads\":2,\"admittedWorkloads\":1,\"weightedShare\":0,"
                  "\"resources\":[{\"flavor\":\"h100\",\"resource\":\"cpu\",\"nominalQuota\":\"8\",\"usage\":\"1\"},"
                  "{\"flavor\":\"h100\",\"resource\":\"nvidia.com/gpu\",\"nominalQuota\":\"1\",\"usage\":\"3\"},"
                  "{\"flavor\":\"a100\",\"resource\":\"cpu\",\"nominalQuota\":\"500m\",\"usage\":\"0\"}]}");
    json_t *st = gx_k8s_cq_status(v, 1000);
    cr_assert_eq(json_integer_value(json_object_get(st, "pendingWorkloads")), 2);
    cr_assert_eq(json_integer_value(json_object_get(st, "reservingWorkloads")), 1);
    cr_assert_eq(json_integer_value(json_object_get(st, "admittedWorkloads")), 1);
    const json_t *fu = json_object_get(st, "flavorsUsage");
    cr_assert_eq(json_array_size(fu), 2, "one entry per flavor");
    const json_t *h = json_array_get(fu, 0);
    cr_assert_str_eq(S(h, "name", NULL, NULL), "h100");
    const json_t *gpu = json_array_get(json_object_get(h, "resources"), 1);
    cr_assert_str_eq(S(gpu, "name", NULL, NULL), "nvidia.com/gpu");
    cr_assert_str_eq(S(gpu, "total", NULL, NULL), "3");
    cr_assert_str_eq(S(gpu, "borrowed", NULL, NULL), "2", "usage beyond the nominal quota is borrowed");
    cr_assert_str_eq(S(json_array_get(json_object_get(h, "resources"), 0), "borrowed", NULL, NULL), "0");
    cr_assert(json_equal(fu, json_object_get(st, "flavorsReservation")));
    cr_assert_eq(json_integer_value(json_object_get(json_object_get(st, "fairSharing"), "weightedShare")), 0);
    const json_t *c = json_array_get(json_object_get(st, "conditions"), 0);
    cr_assert_str_eq(S(c, "type", NULL, NULL), "Active");
    cr_assert_str_eq(S(c, "status", NULL, NULL), "True");
    cr_assert_str_eq(S(c, "reason", NULL, NULL), "Ready");
    cr_assert_str_eq(S(c, "lastTransitionTime", NULL, NULL), "1970-01-01T00:00:01.000Z");
    json_decref(st);
    json_object_set_new(v, "active", json_false());
    json_object_set_new(v, "inactiveReason", json_string("Stopped"));
    st = gx_k8s_cq_status(v, 1000);
    c = json_array_get(json_object_get(st, "conditions"), 0);
    cr_assert_str_eq(S(c, "status", NULL, NULL), "False");
    cr_assert_str_eq(S(c, "reason", NULL, NULL), "Stopped");
    json_decref(st);
    json_decref(v);
}

Test(k8s, local_queue_status)
{
    json_t *lq = J("{\"namespace\":\"lab\",\"name\":\"q\",\"clusterQueue\":\"solo\",\"pendingWorkloads\":1,\"admittedWorkloads\":2}");
    json_t *cq = J("{\"name\":\"solo\",\"active\":true,\"resources\":[{\"flavor\":\"h100\",\"resource\":\"nvidia.com/gpu\","
                   "\"nominalQuota\":\"4\",\"usage\":\"4\"},{\"flavor\":\"a100\",\"resource\":\"nvidia.com/gpu\","
                   "\"nominalQuota\":\"4\",\"usage\":\"1\"}]}");
    json_t *adm = J("[{\"admission\":{\"podSetAssignments\":[{\"flavors\":{\"nvidia.com/gpu\":\"h100\"},\"resourceUsage\":{\"nvidia.com/gpu\":\"2\"}}]}},"
                    "{\"admission\":{\"podSetAssignments\":[{\"flavors\":{\"nvidia.com/gpu\":\"h100\"},\"resourceUsage\":{\"nvidia.com/gpu\":\"500m\"}}]}}]");
    json_t *m = J("{\"spec\":{\"clusterQueue\":\"solo\"}}");
    json_t *st = gx_k8s_lq_status(lq, adm, cq, m, 0);
    cr_assert_eq(json_integer_value(json_object_get(st, "pendingWorkloads")), 1);
    cr_assert_eq(json_integer_value(json_object_get(st, "admittedWorkloads")), 2);
    const json_t *fu = json_object_get(st, "flavorsUsage");
    cr_assert_eq(json_array_size(fu), 2, "every flavor of the ClusterQueue, as Kueue lists them");
    const json_t *h = json_array_get(json_object_get(json_array_get(fu, 0), "resources"), 0);
    cr_assert_str_eq(S(h, "total", NULL, NULL), "2500m", "only this queue's workloads count");
    cr_assert_null(json_object_get(h, "borrowed"), "a LocalQueue's usage has no borrowed field in Kueue's schema");
    cr_assert_str_eq(S(json_array_get(json_object_get(json_array_get(fu, 1), "resources"), 0), "total", NULL, NULL), "0");
    cr_assert_str_eq(S(json_array_get(json_object_get(st, "conditions"), 0), "reason", NULL, NULL), "Ready");
    json_decref(st);
    st = gx_k8s_lq_status(lq, adm, NULL, m, 0);
    cr_assert_str_eq(S(json_array_get(json_object_get(st, "conditions"), 0), "reason", NULL, NULL), "ClusterQueueDoesNotExist");
    cr_assert_eq(json_array_size(json_object_get(st, "flavorsUsage")), 0);
    json_decref(st);
    json_object_set_new(json_object_get(m, "spec"), "stopPolicy", json_string("Hold"));
    st = gx_k8s_lq_status(lq, adm, cq, m, 0);
    cr_assert_str_eq(S(json_array_get(json_object_get(st, "conditions"), 0), "status", NULL, NULL), "False");
    cr_assert_str_eq(S(json_array_get(json_object_get(st, "conditions"), 0), "reason", NULL, NULL), "Stopped");
    json_decref(st);
    json_decref(lq); json_decref(cq); json_decref(adm); json_decref(m);
}

static const char *VIEW =
    "{\"key\":\"lab/train\",\"namespace\":\"lab\",\"name\":\"train\",\"queueName\":\"q\",\"priority\":1000,"
    "\"priorityClass\":\"urgent\",\"state\":\"Admitted\",\"phase\":\"Running\",\"createdAt\":\"2026-12-01T10:00:00.000Z\","
    "\"admittedAt\":\"2026-12-01T10:00:01.000Z\",\"maxExecutionTimeSeconds\":600,"
    "\"podSets\":[{\"name\":\"main\",\"count\":4,\"minCount\":2,\"requests\":{\"nvidia.com/gpu\":\"1\"}}],"
    "\"admission\":{\"clusterQueue\":\"solo\",\"podSetAssignments\":[{\"name\":\"main\",\"count\":4,"
    "\"flavors\":{\"nvidia.com/gpu\":\"h100\"},\"resourceUsage\":{\"nvidia.com/gpu\":\"4\"}}]},"
    "\"conditions\":[{\"type\":\"QuotaReserved\",\"status\":\"True\",\"reason\":\"\",\"message\":\"m\","
    "\"lastTransitionTime\":\"2026-12-01T10:00:01.000Z\"}],"
    "\"pods\":[{\"startedAt\":\"2026-12-01T10:00:02.000Z\"},{\"startedAt\":\"2026-12-01T10:00:03.000Z\"}]}";

Test(k8s, workload_from_a_job)
{
    json_t *job = J("{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"train\",\"labels\":"
                    "{\"kueue.x-k8s.io/queue-name\":\"q\"}},\"spec\":{\"parallelism\":4,\"template\":{\"spec\":"
                    "{\"containers\":[{\"name\":\"main\",\"image\":\"busybox\"}]}}}}");
    json_t *v = J(VIEW);
    json_t *w = gx_k8s_workload(job, v);
    cr_assert_str_eq(S(w, "apiVersion", NULL, NULL), "kueue.x-k8s.io/v1beta2");
    cr_assert_str_eq(S(w, "kind", NULL, NULL), "Workload");
    cr_assert_str_eq(S(w, "metadata", "namespace", NULL), "lab");
    cr_assert_str_eq(S(w, "metadata", "creationTimestamp", NULL), "2026-12-01T10:00:00.000Z");
    cr_assert_str_eq(S(w, "metadata", "labels", "kueue.x-k8s.io/queue-name"), "q");
    const json_t *spec = json_object_get(w, "spec"), *ps = json_array_get(json_object_get(spec, "podSets"), 0);
    cr_assert_str_eq(S(ps, "name", NULL, NULL), "main");
    cr_assert_eq(json_integer_value(json_object_get(ps, "count")), 4);
    cr_assert_eq(json_integer_value(json_object_get(ps, "minCount")), 2);
    cr_assert(json_equal(json_object_get(ps, "template"), json_object_get(json_object_get(job, "spec"), "template")));
    cr_assert_str_eq(S(spec, "queueName", NULL, NULL), "q");
    cr_assert_str_eq(S(spec, "priorityClassName", NULL, NULL), "urgent");
    cr_assert_eq(json_integer_value(json_object_get(spec, "priority")), 1000);
    cr_assert(json_is_true(json_object_get(spec, "active")));
    cr_assert_eq(json_integer_value(json_object_get(spec, "maximumExecutionTimeSeconds")), 600);
    const json_t *st = json_object_get(w, "status");
    cr_assert_str_eq(S(st, "admission", "clusterQueue", NULL), "solo");
    const json_t *conds = json_object_get(st, "conditions");
    cr_assert_eq(json_array_size(conds), 2);
    cr_assert_str_eq(S(json_array_get(conds, 0), "reason", NULL, NULL), "QuotaReserved", "an empty reason is filled");
    cr_assert_str_eq(S(json_array_get(conds, 1), "type", NULL, NULL), "PodsReady");
    cr_assert_str_eq(S(json_array_get(conds, 1), "lastTransitionTime", NULL, NULL), "2026-12-01T10:00:03.000Z",
                     "ready when the last pod started");
    json_decref(w);
    /* ended: not running, deactivated means spec.active false */
    json_object_set_new(v, "state", json_string("Deactivated"));
    json_object_set_new(v, "phase", json_string("Deactivated"));
    json_object_del(v, "admission");
    w = gx_k8s_workload(job, v);
    cr_assert(json_is_false(json_object_get(json_object_get(w, "spec"), "active")));
    cr_assert_eq(json_array_size(json_object_get(json_object_get(w, "status"), "conditions")), 1);
    cr_assert_null(json_object_get(json_object_get(w, "status"), "admission"));
    json_decref(w);
    json_decref(v);
    json_decref(job);
}

Test(k8s, workload_as_submitted_keeps_its_spec)
{
    json_t *m = J("{\"apiVersion\":\"kueue.x-k8s.io/v1beta2\",\"kind\":\"Workload\",\"metadata\":{\"name\":\"train\"},"
                  "\"spec\":{\"queueName\":\"other\",\"podSets\":[{\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}}]}}");
    json_t *v = J(VIEW);
    json_t *w = gx_k8s_workload(m, v);
    const json_t *spec = json_object_get(w, "spec"), *ps = json_array_get(json_object_get(spec, "podSets"), 0);
    cr_assert_str_eq(S(spec, "queueName", NULL, NULL), "other", "what was submitted wins");
    cr_assert_str_eq(S(ps, "name", NULL, NULL), "main", "defaults filled as the API server would");
    cr_assert_eq(json_integer_value(json_object_get(ps, "count")), 4);
    cr_assert_null(json_object_get(ps, "minCount"), "a Workload's own podSets are not rewritten");
    cr_assert_eq(json_array_size(json_object_get(json_object_get(json_object_get(ps, "template"), "spec"), "containers")), 1);
    json_decref(w);
    /* no manifest at all (a run that is gone): still a valid shape */
    w = gx_k8s_workload(NULL, v);
    cr_assert_eq(json_array_size(json_object_get(json_object_get(w, "spec"), "podSets")), 1);
    json_decref(w);
    json_decref(v);
    json_decref(m);
}
