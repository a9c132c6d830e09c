/* store/fleet: fleet requests against real SQLite in a throw-away folder: a request
 * round-trips whole, an update keeps its place in the order and its first fields, and
 * after closing and reopening the store (a restart) the unpublished ones are still
 * there with their attempts and last error, so the daemon can submit them again. */
#include <criterion/criterion.h>
#include <string.h>
#include <jansson.h>
#include "store/store.h"
#include "test_store_util.h"

static void put(gx_store *s, const char *name, const char *state, int64_t attempts, const char *last_error)
{
    json_t *m = json_pack("{s:s,s:s,s:{s:s,s:s}}", "apiVersion", "batch/v1", "kind", "Job", "metadata", "name", name,
                          "namespace", "lab");
    json_t *r = json_pack("{s:s,s:{s:b}}", "kind", "Job", "spec", "suspend", 1);
    char path[128];
    snprintf(path, sizeof path, "clusters/gpu-a/lab/job-%s.yaml", name);
    gx_store_fleet_req q = {.ns = "lab", .name = name, .cluster = "gpu-a", .user = "alice", .path = path,
                            .state = state, .commit = attempts ? "" : "abc1234", .last_error = last_error,
                            .note = "", .manifest = m, .rendered = r, .attempts = attempts,
                            .next_attempt_ms = 5000, .published_ms = 0, .created_ms = 1000};
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_store_fleet_put(s, &q, 2000, &e), 0, "%s", e.msg);
    json_decref(m);
    json_decref(r);
}

static const char *field(json_t *rows, size_t i, const char *k)
{
    return json_string_value(json_object_get(json_array_get(rows, i), k));
}

Test(store_fleet, a_request_round_trips_and_an_update_keeps_its_place, .init = store_tmp_make, .fini = store_tmp_remove)
{
    gx_store *s = open_store();
    put(s, "one", "Pending", 0, "");
    put(s, "two", "Pending", 0, "");
    put(s, "one", "Published", 0, "");   /* an update of the first */
    gx_err e;
    gx_err_clear(&e);
    json_t *rows = gx_store_fleet_requests(s, &e);
    cr_assert_not_null(rows, "%s", e.msg);
    cr_assert_eq(json_array_size(rows), 2);
    cr_assert_str_eq(field(rows, 0, "name"), "one");
    cr_assert_str_eq(field(rows, 0, "state"), "Published");
    cr_assert_str_eq(field(rows, 0, "cluster"), "gpu-a");
    cr_assert_str_eq(field(rows, 0, "user"), "alice");
    cr_assert_str_eq(field(rows, 0, "path"), "clusters/gpu-a/lab/job-one.yaml");
    cr_assert_str_eq(field(rows, 0, "commit"), "abc1234");
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(json_array_get(rows, 0), "manifest"),
                                                                       "metadata"), "name")), "one");
    cr_assert(json_is_true(json_object_get(json_object_get(json_object_get(json_array_get(rows, 0), "rendered"), "spec"),
                                           "suspend")));
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(rows, 0), "createdMs")), 1000);
    cr_assert_str_eq(field(rows, 1, "name"), "two");
    json_decref(rows);
    cr_assert_eq(gx_store_fleet_delete(s, "lab", "one", &e), 0, "%s", e.msg);
    rows = gx_store_fleet_requests(s, &e);
    cr_assert_eq(json_array_size(rows), 1);
    cr_assert_str_eq(field(rows, 0, "name"), "two");
    json_decref(rows);
    gx_store_close(s);
}

Test(store_fleet, a_restart_reads_back_the_unpublished_with_their_error, .init = store_tmp_make, .fini = store_tmp_remove)
{
    gx_store *s = open_store();
    put(s, "failing", "Pending", 3, "push rejected: pre-receive hook declined");
    put(s, "done", "Removed", 0, "");
    gx_store_close(s);
    s = open_store();
    gx_err e;
    gx_err_clear(&e);
    json_t *rows = gx_store_fleet_requests(s, &e);
    cr_assert_not_null(rows, "%s", e.msg);
    cr_assert_eq(json_array_size(rows), 2);
    cr_assert_str_eq(field(rows, 0, "state"), "Pending");
    cr_assert_str_eq(field(rows, 0, "lastError"), "push rejected: pre-receive hook declined");
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(rows, 0), "attempts")), 3);
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(rows, 0), "nextAttemptMs")), 5000);
    cr_assert_str_eq(field(rows, 1, "state"), "Removed");
    json_decref(rows);
    gx_store_close(s);
}
