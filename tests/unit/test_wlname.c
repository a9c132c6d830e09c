/* Unit tests for the workload key (lib/wlkey) and the naming of submitted workloads
 * (ops/wlname): Kubernetes' rules per kind, generateName, and keys that are refused,
 * never cut. */
#include <criterion/criterion.h>
#include <string.h>
#include "ops/wlname.h"
#include "lib/wlkey.h"
#include "test_repeat.h"

Test(wlkey, bounds_and_traversal)
{
    gx_wlkey k;
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_wlkey_make(&k, repeat('n', 63), repeat('a', 253), &e), 0, "%s", e.msg);
    cr_assert_eq(strlen(k.key), 317);
    cr_assert_eq(gx_wlkey_make(&k, repeat('n', 64), "a", &e), -1);
    cr_assert_str_eq(e.field, "metadata.namespace");
    cr_assert(strstr(e.msg, "must be no more than 63 characters"), "%s", e.msg);
    cr_assert_eq(gx_wlkey_make(&k, "default", repeat('a', 254), &e), -1);
    cr_assert(strstr(e.msg, "must be no more than 253 characters"), "%s", e.msg);
    static const char *bad[] = {"../team-b/victim", "../../..", "a/b", "..", ".", "", NULL};
    for (int i = 0; bad[i]; i++) {
        cr_assert_eq(gx_wlkey_make(&k, "team-a", bad[i], &e), -1, "%s was taken", bad[i]);
        cr_assert_str_eq(e.field, "metadata.name");
    }
    cr_assert_eq(gx_wlkey_parse(&k, "team-a/job-1", &e), 0);
    cr_assert_str_eq(k.ns, "team-a");
    cr_assert_str_eq(k.name, "job-1");
    cr_assert_eq(gx_wlkey_parse(&k, "team-a/a/b", &e), -1);
    cr_assert_eq(gx_wlkey_parse(&k, "nokey", &e), -1);
    char longns[400];
    snprintf(longns, sizeof longns, "%s/x", repeat('n', 300));
    cr_assert_eq(gx_wlkey_parse(&k, longns, &e), -1);
    cr_assert(strstr(e.msg, "must be no more than 63 characters"), "%s", e.msg);
}

static gx_daemon d;

static void setup(void)
{
    memset(&d, 0, sizeof d);
    gx_exec_config xc = {.log_dir = "", .run_dir = ""};
    d.exec = gx_exec_new(&xc);
}

static void teardown(void) { gx_d_free_all(&d); }

/* A manifest of kind with metadata {name|generateName: value, namespace: ns}. */
static json_t *wl(const char *kind, const char *field, const char *value, const char *ns)
{
    json_t *md = json_object();
    if (field) json_object_set_new(md, field, json_string(value));
    if (ns) json_object_set_new(md, "namespace", json_string(ns));
    return json_pack("{s:s,s:s,s:o}", "apiVersion", !strcmp(kind, "Job") ? "batch/v1" : "kueue.x-k8s.io/v1beta2",
                     "kind", kind, "metadata", md);
}

static const char *named(json_t *m) { return json_string_value(json_object_get(json_object_get(m, "metadata"), "name")); }

TestSuite(wlname, .init = setup, .fini = teardown);

Test(wlname, job_names_are_labels_of_63)
{
    gx_err e;
    gx_err_clear(&e);
    json_t *m = wl("Job", "name", repeat('j', 63), NULL), *out = gx_d_name_workload(&d, m, &e);
    cr_assert(out, "%s", e.msg);
    json_decref(out);
    json_decref(m);
    m = wl("Job", "name", repeat('j', 64), NULL);
    cr_assert_null(gx_d_name_workload(&d, m, &e));
    cr_assert_eq(e.status, 422);
    cr_assert_str_eq(e.field, "metadata.name");
    cr_assert(strstr(e.msg, "must be no more than 63 characters"), "%s", e.msg);
    json_decref(m);
    m = wl("Job", "name", "my.job", NULL);
    cr_assert_null(gx_d_name_workload(&d, m, &e));
    cr_assert_str_eq(e.msg, "Invalid value: \"my.job\": must not contain dots");
    json_decref(m);
    m = wl("Job", "name", "../team-b/victim", "team-a");
    cr_assert_null(gx_d_name_workload(&d, m, &e));
    const char *want = "Invalid value: \"../team-b/victim\": a lowercase RFC 1123 label";
    cr_assert(!strncmp(e.msg, want, strlen(want)), "%s", e.msg);
    json_decref(m);
}

Test(wlname, workload_names_are_subdomains_and_namespaces_labels)
{
    gx_err e;
    gx_err_clear(&e);
    json_t *m = wl("Workload", "name", "my.workload", NULL), *out = gx_d_name_workload(&d, m, &e);
    cr_assert(out, "%s", e.msg);
    json_decref(out);
    json_decref(m);
    m = wl("Workload", "name", repeat('w', 254), NULL);
    cr_assert_null(gx_d_name_workload(&d, m, &e));
    cr_assert(strstr(e.msg, "must be no more than 253 characters"), "%s", e.msg);
    json_decref(m);
    m = wl("Workload", "name", "w", repeat('n', 237));   /* a 239-byte key with a bad namespace */
    cr_assert_null(gx_d_name_workload(&d, m, &e));
    cr_assert_str_eq(e.field, "metadata.namespace");
    json_decref(m);
    m = wl("Job", NULL, NULL, NULL);
    cr_assert_null(gx_d_name_workload(&d, m, &e));
    cr_assert_str_eq(e.field, "metadata.name");
    cr_assert_str_eq(e.msg, "Required value: name or generateName is required");
    json_decref(m);
}

Test(wlname, generate_name)
{
    gx_err e;
    gx_err_clear(&e);
    json_t *m = wl("Job", "generateName", "sample-job-", NULL);
    json_t *a = gx_d_name_workload(&d, m, &e), *b = gx_d_name_workload(&d, m, &e);
    cr_assert(a && b, "%s", e.msg);
    const char *na = named(a), *nb = named(b);
    cr_assert_eq(strlen(na), strlen("sample-job-") + 5);
    cr_assert(!strncmp(na, "sample-job-", 11));
    for (int i = 11; i < 16; i++) cr_assert(strchr(GX_K8S_GEN_ALPHABET, na[i]), "%s", na);
    cr_assert_str_neq(na, nb, "two submits, two names");
    cr_assert_null(json_object_get(json_object_get(m, "metadata"), "name"), "the caller's manifest is untouched");
    json_decref(a);
    json_decref(b);
    json_decref(m);
    /* a long prefix is cut to 58, so the name is a 63-character label */
    m = wl("Job", "generateName", repeat('g', 80), NULL);
    a = gx_d_name_workload(&d, m, &e);
    cr_assert(a, "%s", e.msg);
    cr_assert_eq(strlen(named(a)), 63);
    json_decref(a);
    json_decref(m);
    /* a bad prefix is named as such */
    m = wl("Job", "generateName", "Sample-", NULL);
    cr_assert_null(gx_d_name_workload(&d, m, &e));
    cr_assert_str_eq(e.field, "metadata.generateName");
    cr_assert(!strncmp(e.msg, "Invalid value: \"Sample-\": ", 26), "%s", e.msg);
    json_decref(m);
}
