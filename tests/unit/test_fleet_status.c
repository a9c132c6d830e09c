/* test_fleet_status: fleet/status.c, pure: Kueue Workloads and Jobs as a cluster's API
 * server shows them, fed as events and relists, read back as the workload view (state,
 * phase, reason, positions, pods) and as the cluster's health. */
#include <criterion/criterion.h>
#include <string.h>
#include "fleet/status.h"

static json_t *jparse(const char *s)
{
    json_error_t je;
    json_t *j = json_loads(s, 0, &je);
    cr_assert(j, "bad test JSON: %s: %s", je.text, s);
    return j;
}

static void ev(gx_fleet_status *s, const char *kind, const char *type, const char *json)
{
    json_t *o = jparse(json);
    gx_fleet_status_event(s, "c1", kind, type, o);
    json_decref(o);
}

/* A Workload owned by Job `job` in team-a, queue lq, with priority, creation and conditions. */
static void wl(gx_fleet_status *s, const char *type, const char *name, const char *job, const char *lq, int prio,
               const char *created, const char *conds)
{
    char b[2048];
    snprintf(b, sizeof b,
             "{\"metadata\":{\"name\":\"%s\",\"namespace\":\"team-a\",\"creationTimestamp\":\"%s\","
             "\"ownerReferences\":[{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"name\":\"%s\"}]},"
             "\"spec\":{\"queueName\":\"%s\",\"priority\":%d},\"status\":{\"conditions\":%s}}",
             name, created, job, lq, prio, conds);
    ev(s, "Workload", type, b);
}

static const char *str(const json_t *v, const char *k) { return json_string_value(json_object_get(v, k)); }

static gx_fleet_status *with_queues(void)
{
    gx_fleet_status *s = gx_fleet_status_new();
    ev(s, "LocalQueue", "ADDED", "{\"metadata\":{\"name\":\"main\",\"namespace\":\"team-a\"},\"spec\":{\"clusterQueue\":\"cq\"}}");
    ev(s, "LocalQueue", "ADDED", "{\"metadata\":{\"name\":\"other\",\"namespace\":\"team-a\"},\"spec\":{\"clusterQueue\":\"cq\"}}");
    ev(s, "ClusterQueue", "ADDED", "{\"metadata\":{\"name\":\"cq\"},\"spec\":{}}");
    return s;
}

#define WAITING "[{\"type\":\"QuotaReserved\",\"status\":\"False\",\"reason\":\"Pending\",\"message\":" \
                "\"couldn't assign flavors to pod set main: insufficient unused quota for nvidia.com/gpu in flavor h100, 1 more needed\"}]"

Test(fleet_status, pending_with_kueues_reason)
{
    gx_fleet_status *s = with_queues();
    cr_assert_null(gx_fleet_status_job(s, "c1", "team-a", "train"));
    ev(s, "Job", "ADDED", "{\"metadata\":{\"name\":\"train\",\"namespace\":\"team-a\"},\"spec\":{\"suspend\":true},\"status\":{}}");
    json_t *v = gx_fleet_status_job(s, "c1", "team-a", "train");
    cr_assert_str_eq(str(v, "state"), "Pending");   /* no Workload yet */
    cr_assert_str_eq(str(v, "cluster"), "c1");
    json_decref(v);
    wl(s, "ADDED", "job-train-1", "train", "main", 0, "2026-01-01T00:00:00Z", WAITING);
    v = gx_fleet_status_job(s, "c1", "team-a", "train");
    cr_assert_str_eq(str(v, "state"), "Pending");
    cr_assert_str_eq(str(v, "phase"), "Pending");
    cr_assert_str_eq(str(v, "reason"), "WaitingForQuota");
    cr_assert(strstr(str(v, "message"), "insufficient unused quota"), "%s", str(v, "message"));
    cr_assert_str_eq(str(v, "clusterQueue"), "cq");
    cr_assert_str_eq(str(v, "remoteWorkload"), "job-train-1");
    cr_assert_eq(json_integer_value(json_object_get(v, "positionInClusterQueue")), 0);
    cr_assert_eq(json_array_size(json_object_get(v, "conditions")), 1);
    cr_assert_eq(json_array_size(json_object_get(v, "pods")), 0);
    json_decref(v);
    gx_fleet_status_free(s);
}

Test(fleet_status, reasons_in_the_local_views_words)
{
    static const struct { const char *reason, *msg, *want; } C[] = {
        {"Pending", "couldn't assign flavors to pod set main: insufficient quota for nvidia.com/gpu in flavor h100, request > maximum capacity (8 > 4)", "ExceedsMaxQuota"},
        {"Inadmissible", "ClusterQueue cq is inactive", "Inadmissible"},
        {"Pending", "LocalQueue nope doesn't exist", "Inadmissible"},
        {"Pending", "couldn't assign flavors to pod set main: flavor h100 doesn't match node affinity", "NoMatchingFlavor"},
        {"Pending", "Pending the preemption of 1 workload(s)", "WaitingForPreemption"},
        {"Pending", "something new", "Pending"},
    };
    for (size_t i = 0; i < sizeof C / sizeof *C; i++) {
        gx_fleet_status *s = with_queues();
        char c[600];
        snprintf(c, sizeof c, "[{\"type\":\"QuotaReserved\",\"status\":\"False\",\"reason\":\"%s\",\"message\":\"%s\"}]",
                 C[i].reason, C[i].msg);
        wl(s, "ADDED", "w", "j", "main", 0, "2026-01-01T00:00:00Z", c);
        json_t *v = gx_fleet_status_job(s, "c1", "team-a", "j");
        cr_assert_str_eq(str(v, "reason"), C[i].want, "%s -> %s", C[i].msg, str(v, "reason"));
        json_decref(v);
        gx_fleet_status_free(s);
    }
}

Test(fleet_status, positions_by_priority_then_creation)
{
    gx_fleet_status *s = with_queues();
    wl(s, "ADDED", "w-old-low", "old-low", "main", 0, "2026-01-01T00:00:00Z", WAITING);
    wl(s, "ADDED", "w-new-high", "new-high", "other", 100, "2026-01-01T00:05:00Z", WAITING);
    wl(s, "ADDED", "w-new-low", "new-low", "main", 0, "2026-01-01T00:03:00Z", WAITING);
    /* admitted ones are not in the queue */
    wl(s, "ADDED", "w-run", "run", "main", 500, "2025-01-01T00:00:00Z",
       "[{\"type\":\"QuotaReserved\",\"status\":\"True\"},{\"type\":\"Admitted\",\"status\":\"True\"}]");
    static const struct { const char *job; int cq, lq; } W[] = {{"new-high", 0, 0}, {"old-low", 1, 0}, {"new-low", 2, 1}};
    for (size_t i = 0; i < 3; i++) {
        json_t *v = gx_fleet_status_job(s, "c1", "team-a", W[i].job);
        cr_assert_eq(json_integer_value(json_object_get(v, "positionInClusterQueue")), W[i].cq, "%s", W[i].job);
        cr_assert_eq(json_integer_value(json_object_get(v, "positionInLocalQueue")), W[i].lq, "%s", W[i].job);
        json_decref(v);
    }
    json_t *v = gx_fleet_status_job(s, "c1", "team-a", "run");
    cr_assert_null(json_object_get(v, "positionInClusterQueue"));
    json_decref(v);
    gx_fleet_status_free(s);
}

Test(fleet_status, admitted_then_running_then_finished)
{
    gx_fleet_status *s = with_queues();
    ev(s, "Job", "ADDED", "{\"metadata\":{\"name\":\"j\",\"namespace\":\"team-a\"},\"status\":{}}");
    wl(s, "ADDED", "w", "j", "main", 0, "2026-01-01T00:00:00Z",
       "[{\"type\":\"QuotaReserved\",\"status\":\"True\",\"reason\":\"QuotaReserved\"},"
       "{\"type\":\"Admitted\",\"status\":\"True\",\"reason\":\"Admitted\",\"message\":\"The workload is admitted\","
       "\"lastTransitionTime\":\"2026-01-01T00:01:00Z\"}]");
    json_t *v = gx_fleet_status_job(s, "c1", "team-a", "j");
    cr_assert_str_eq(str(v, "state"), "Admitted");
    cr_assert_str_eq(str(v, "phase"), "Admitted");
    cr_assert_str_eq(str(v, "admittedAt"), "2026-01-01T00:01:00Z");
    json_decref(v);
    ev(s, "Job", "MODIFIED", "{\"metadata\":{\"name\":\"j\",\"namespace\":\"team-a\"},\"status\":{\"active\":2}}");
    v = gx_fleet_status_job(s, "c1", "team-a", "j");
    cr_assert_str_eq(str(v, "phase"), "Running");
    json_t *pods = json_object_get(v, "pods");
    cr_assert_eq(json_array_size(pods), 2);
    cr_assert_str_eq(str(json_array_get(pods, 1), "state"), "Running");
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(pods, 1), "index")), 1);
    json_decref(v);
    /* succeeded */
    ev(s, "Job", "MODIFIED", "{\"metadata\":{\"name\":\"j\",\"namespace\":\"team-a\"},\"status\":{\"succeeded\":1,\"failed\":1,"
                             "\"conditions\":[{\"type\":\"Complete\",\"status\":\"True\"}]}}");
    wl(s, "MODIFIED", "w", "j", "main", 0, "2026-01-01T00:00:00Z",
       "[{\"type\":\"Admitted\",\"status\":\"True\",\"lastTransitionTime\":\"2026-01-01T00:01:00Z\"},"
       "{\"type\":\"Finished\",\"status\":\"True\",\"reason\":\"Succeeded\",\"message\":\"Job finished successfully\","
       "\"lastTransitionTime\":\"2026-01-01T00:09:00Z\"}]");
    v = gx_fleet_status_job(s, "c1", "team-a", "j");
    cr_assert_str_eq(str(v, "state"), "Finished");
    cr_assert_str_eq(str(v, "phase"), "Succeeded");
    cr_assert_str_eq(str(v, "finishedAt"), "2026-01-01T00:09:00Z");
    pods = json_object_get(v, "pods");
    cr_assert_str_eq(str(json_array_get(pods, 0), "state"), "Succeeded");
    cr_assert_str_eq(str(json_array_get(pods, 1), "state"), "Failed");
    json_decref(v);
    gx_fleet_status_free(s);
}

Test(fleet_status, finished_failed_without_the_job)
{
    gx_fleet_status *s = with_queues();
    wl(s, "ADDED", "w", "j", "main", 0, "2026-01-01T00:00:00Z",
       "[{\"type\":\"Finished\",\"status\":\"True\",\"reason\":\"Failed\",\"message\":\"Job has reached the specified backoff limit\"}]");
    json_t *v = gx_fleet_status_job(s, "c1", "team-a", "j");
    cr_assert_str_eq(str(v, "phase"), "Failed");
    cr_assert_str_eq(str(v, "reason"), "Failed");
    json_decref(v);
    gx_fleet_status_free(s);
}

Test(fleet_status, deactivated)
{
    gx_fleet_status *s = with_queues();
    ev(s, "Workload", "ADDED",
       "{\"metadata\":{\"name\":\"w\",\"namespace\":\"team-a\",\"ownerReferences\":[{\"kind\":\"Job\",\"name\":\"j\"}]},"
       "\"spec\":{\"active\":false,\"queueName\":\"main\"},\"status\":{\"conditions\":[{\"type\":\"Evicted\",\"status\":\"True\","
       "\"reason\":\"Deactivated\",\"message\":\"The workload is deactivated\"}]}}");
    json_t *v = gx_fleet_status_job(s, "c1", "team-a", "j");
    cr_assert_str_eq(str(v, "state"), "Deactivated");
    cr_assert_str_eq(str(v, "phase"), "Deactivated");
    cr_assert_str_eq(str(v, "message"), "The workload is deactivated");
    json_decref(v);
    gx_fleet_status_free(s);
}

Test(fleet_status, deleted_and_relist_drops)
{
    gx_fleet_status *s = with_queues();
    wl(s, "ADDED", "w1", "j1", "main", 0, "2026-01-01T00:00:00Z", WAITING);
    wl(s, "ADDED", "w2", "j2", "main", 0, "2026-01-01T00:00:01Z", WAITING);
    wl(s, "ADDED", "w3", "j3", "main", 0, "2026-01-01T00:00:02Z", WAITING);
    wl(s, "DELETED", "w1", "j1", "main", 0, "2026-01-01T00:00:00Z", WAITING);
    cr_assert_null(gx_fleet_status_job(s, "c1", "team-a", "j1"));
    json_t *v = gx_fleet_status_job(s, "c1", "team-a", "j3");
    cr_assert_eq(json_integer_value(json_object_get(v, "positionInClusterQueue")), 1);
    json_decref(v);
    /* a relist that names w3 only: w2 is gone, w3 stays (and another kind is untouched) */
    gx_fleet_status_relist_begin(s, "c1", "Workload");
    wl(s, "ADDED", "w3", "j3", "main", 0, "2026-01-01T00:00:02Z", WAITING);
    gx_fleet_status_relist_end(s, "c1", "Workload");
    cr_assert_null(gx_fleet_status_job(s, "c1", "team-a", "j2"));
    v = gx_fleet_status_job(s, "c1", "team-a", "j3");
    cr_assert_not_null(v);
    cr_assert_eq(json_integer_value(json_object_get(v, "positionInClusterQueue")), 0);
    cr_assert_str_eq(str(v, "clusterQueue"), "cq");   /* LocalQueues were not relisted away */
    json_decref(v);
    /* another cluster's objects are its own */
    cr_assert_null(gx_fleet_status_job(s, "c2", "team-a", "j3"));
    gx_fleet_status_free(s);
}

Test(fleet_status, cluster_health)
{
    gx_fleet_status *s = gx_fleet_status_new();
    cr_assert_null(gx_fleet_status_cluster(s, "c1"));
    gx_fleet_status_connection(s, "c1", 0, "HTTP 401 from https://x: Unauthorized", 1000);
    json_t *c = gx_fleet_status_cluster(s, "c1");
    cr_assert(json_is_false(json_object_get(c, "connected")));
    cr_assert(strstr(str(c, "lastError"), "401"));
    cr_assert(json_is_null(json_object_get(c, "lastEventAt")));
    json_decref(c);
    ev(s, "Job", "ADDED", "{\"metadata\":{\"name\":\"j\",\"namespace\":\"n\"}}");
    gx_fleet_status_connection(s, "c1", 1, NULL, 1764547200000);
    c = gx_fleet_status_cluster(s, "c1");
    cr_assert(json_is_true(json_object_get(c, "connected")));
    cr_assert(json_is_null(json_object_get(c, "lastError")));
    cr_assert_str_eq(str(c, "lastEventAt"), "2025-12-01T00:00:00.000Z");
    json_decref(c);
    /* no event since: the time stays */
    gx_fleet_status_connection(s, "c1", 1, NULL, 1764547300000);
    c = gx_fleet_status_cluster(s, "c1");
    cr_assert_str_eq(str(c, "lastEventAt"), "2025-12-01T00:00:00.000Z");
    json_decref(c);
    gx_fleet_status_free(s);
}
