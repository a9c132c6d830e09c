/* Kueue objects checked against their CRDs (core/kueue_schema): unknown fields refused
 * with their path, the CRD's patterns, enums, lengths and types, warnings for the fields
 * gpuaas ignores, and the generated table compared with the CRD files themselves. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/kueue_schema.h"
#include "test_engine_util.h"

#define CQ_HEAD "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata: {name: team-a}\n"
#define CQ_RG "  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n" \
              "    - name: h100\n      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: 2\n"

/* apply must fail with this status and field, msg containing want; nothing applied */
static void refused(const char *text, int status, const char *field, const char *want)
{
    gx_engine_opts o = {0};
    gx_engine *en = gx_engine_new(&o);
    gx_err e = apply_err(en, text);
    cr_expect_eq(e.status, status, "status %d for %s: %s", e.status, e.field, e.msg);
    cr_expect_str_eq(e.field, field);
    cr_expect(strstr(e.msg, want) != NULL, "message \"%s\" lacks \"%s\"", e.msg, want);
    json_t *all = gx_engine_objects(en, "ClusterQueue");
    cr_expect_eq(json_array_size(all), 0, "nothing is applied");
    json_decref(all);
    gx_engine_free(en);
}

/* the warnings of one manifest, after checking it passes */
static json_t *warnings_of(const char *text)
{
    json_t *j = Y(text), *w = json_array();
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_kueue_schema_check(j, w, &e), 0, "%s: %s", e.field, e.msg);
    json_decref(j);
    return w;
}

Test(kueue_schema, unknown_spec_field_is_refused_by_path)
{
    refused(CQ_HEAD "spec:\n  bogusField: 1\n", 400, "spec.bogusField", "unknown field \"spec.bogusField\"");
    refused(CQ_HEAD "bogus: 1\nspec: {}\n", 400, "bogus", "unknown field \"bogus\"");
}

Test(kueue_schema, unknown_nested_fields_are_refused_with_indices)
{
    refused(CQ_HEAD "spec:\n" CQ_RG "        bogus: x\n", 400, "spec.resourceGroups[0].flavors[0].resources[0].bogus",
            "unknown field");
    refused(CQ_HEAD "spec:\n  preemption: {withinClusterQueue: Never, bogus: 1}\n", 400, "spec.preemption.bogus", "unknown field");
    refused(CQ_HEAD "spec:\n  fairSharing: {weight: 1, enable: true}\n", 400, "spec.fairSharing.enable", "unknown field");
    refused(CQ_HEAD "spec:\n  flavorFungibility: {whenCanBorrow: MayStopSearch, x: 1}\n", 400, "spec.flavorFungibility.x", "unknown field");
    refused(CQ_HEAD "spec:\n  namespaceSelector: {matchLabels: {a: b}, matchFields: []}\n", 400,
            "spec.namespaceSelector.matchFields", "unknown field");
    refused(CQ_HEAD "spec:\n  preemption:\n    borrowWithinCohort: {policy: Never, maxPriority: 1}\n", 400,
            "spec.preemption.borrowWithinCohort.maxPriority", "unknown field");
}

Test(kueue_schema, other_kinds_refuse_unknown_fields)
{
    const char *cases[][2] = {
        {"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\nspec: {nodeLable: {a: b}}\n", "spec.nodeLable"},
        {"apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\nspec:\n  nodeTaints: [{key: a, effect: NoSchedule, when: x}]\n",
         "spec.nodeTaints[0].when"},
        {"apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q, namespace: n}\nspec: {clusterQueue: c, cq: c}\n", "spec.cq"},
        {"apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: c}\nspec: {parent: x}\n", "spec.parent"},
        {"apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\nmetadata: {name: w}\nvalue: 1\nspec: {value: 1}\n", "spec"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        gx_engine_opts o = {0};
        gx_engine *en = gx_engine_new(&o);
        gx_err e = apply_err(en, cases[i][0]);
        cr_expect_eq(e.status, 400);
        cr_expect_str_eq(e.field, cases[i][1]);
        char want[256];
        snprintf(want, sizeof want, "unknown field \"%s\"", cases[i][1]);
        cr_expect_str_eq(e.msg, want);
        gx_engine_free(en);
    }
}

Test(kueue_schema, crd_patterns_are_enforced)
{
    refused(CQ_HEAD "spec: {cohortName: Lab_1}\n", 422, "spec.cohortName", "Invalid value: \"Lab_1\"");
    refused(CQ_HEAD "spec:\n  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n    - name: H100\n"
            "      resources: [{name: cpu, nominalQuota: 1}]\n", 422, "spec.resourceGroups[0].flavors[0].name", "Invalid value");
    gx_engine_opts o = {0};
    gx_engine *en = gx_engine_new(&o);
    gx_err e = apply_err(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q, namespace: n}\n"
                             "spec: {clusterQueue: Team_A}\n");
    cr_expect_str_eq(e.field, "spec.clusterQueue");
    e = apply_err(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: Cohort\nmetadata: {name: c}\nspec: {parentName: -lab}\n");
    cr_expect_str_eq(e.field, "spec.parentName");
    e = apply_err(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\nspec: {topologyName: A B}\n");
    cr_expect_str_eq(e.field, "spec.topologyName");
    e = apply_err(en, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q, namespace: n}\n"
                      "spec: {clusterQueue: c, fairSharing: {weight: lots}}\n");
    cr_expect_str_eq(e.field, "spec.fairSharing.weight");
    gx_engine_free(en);
}

Test(kueue_schema, enums_lengths_items_and_types)
{
    refused(CQ_HEAD "spec: {queueingStrategy: FIFO}\n", 422, "spec.queueingStrategy",
            "Unsupported value: \"FIFO\": supported values: \"StrictFIFO\", \"BestEffortFIFO\"");
    refused(CQ_HEAD "spec: {admissionScope: {admissionMode: Fair}}\n", 422, "spec.admissionScope.admissionMode", "Unsupported value");
    refused(CQ_HEAD "spec: {admissionScope: {}}\n", 422, "spec.admissionScope.admissionMode", "Required value");
    refused(CQ_HEAD "spec: {resourceGroups: gpus}\n", 422, "spec.resourceGroups", "must be of type array");
    refused(CQ_HEAD "spec:\n  resourceGroups:\n  - coveredResources: []\n    flavors: []\n", 422,
            "spec.resourceGroups[0].coveredResources", "must have at least 1 items");
    refused(CQ_HEAD "spec: {preemption: {borrowWithinCohort: {policy: Never, maxPriorityThreshold: high}}}\n", 422,
            "spec.preemption.borrowWithinCohort.maxPriorityThreshold", "must be of type integer");
    char big[4096];
    int n = snprintf(big, sizeof big, "apiVersion: kueue.x-k8s.io/v1beta2\nkind: WorkloadPriorityClass\n"
                                      "metadata: {name: w}\nvalue: 1\ndescription: ");
    memset(big + n, 'x', 2049);
    big[n + 2049] = 0;
    gx_engine_opts o = {0};
    gx_engine *en = gx_engine_new(&o);
    gx_err e = apply_err(en, big);
    cr_expect_str_eq(e.field, "description");
    cr_expect(strstr(e.msg, "Too long: may not be more than 2048") != NULL, "%s", e.msg);
    gx_engine_free(en);
}

Test(kueue_schema, unimplemented_fields_are_accepted_with_a_warning)
{
    json_t *w = warnings_of(CQ_HEAD "spec:\n  admissionScope: {admissionMode: UsageBasedAdmissionFairSharing}\n"
                                    "  concurrentAdmissionPolicy: {migration: {mode: TryPreferredFlavors}}\n" CQ_RG);
    cr_assert_eq(json_array_size(w), 2);
    cr_expect_str_eq(json_string_value(json_array_get(w, 0)),
                     "ClusterQueue team-a: spec.admissionScope is not implemented by gpuaas and has no effect");
    cr_expect_str_eq(json_string_value(json_array_get(w, 1)),
                     "ClusterQueue team-a: spec.concurrentAdmissionPolicy is not implemented by gpuaas and has no effect");
    json_decref(w);
    w = warnings_of("apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: main, namespace: lab}\n"
                    "spec: {clusterQueue: c, fairSharing: {weight: 2}}\n");
    cr_assert_eq(json_array_size(w), 1);
    cr_expect_str_eq(json_string_value(json_array_get(w, 0)),
                     "LocalQueue lab/main: spec.fairSharing is not implemented by gpuaas and has no effect");
    json_decref(w);
    w = warnings_of("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: f}\nspec: {topologyName: default}\n");
    cr_assert_eq(json_array_size(w), 1);
    cr_expect(strstr(json_string_value(json_array_get(w, 0)), "ResourceFlavor f: spec.topologyName") != NULL);
    json_decref(w);
    /* accepted by the engine too */
    gx_engine_opts o = {0};
    gx_engine *en = gx_engine_new(&o);
    apply_ok(en, CQ_HEAD "spec:\n  admissionScope: {admissionMode: NoAdmissionFairSharing}\n" CQ_RG);
    gx_engine_free(en);
}

Test(kueue_schema, admission_checks_are_known_and_not_warned)
{
    json_t *w = warnings_of(CQ_HEAD "spec:\n  admissionChecksStrategy:\n    admissionChecks: [{name: approval}]\n");
    cr_expect_eq(json_array_size(w), 0);
    json_decref(w);
}

Test(kueue_schema, status_and_metadata_are_not_judged)
{
    json_t *w = warnings_of(CQ_HEAD "spec: {}\nstatus: {anything: [1, 2]}\n");
    cr_expect_eq(json_array_size(w), 0);
    json_decref(w);
}

Test(kueue_schema, unimplemented_list_names_crd_fields)
{
    for (int i = 0; gx_ks_unimplemented[i]; i++) {
        char kind[64];
        const char *sp = strchr(gx_ks_unimplemented[i], ' ');
        cr_assert(sp);
        snprintf(kind, sizeof kind, "%.*s", (int)(sp - gx_ks_unimplemented[i]), gx_ks_unimplemented[i]);
        int found = 0;
        for (int k = 0; k < gx_ks_nfields; k++)
            found |= !strcmp(gx_ks_fields[k].kind, kind) && !strcmp(gx_ks_fields[k].version, "v1beta2")
                     && !strcmp(gx_ks_fields[k].path, sp + 1);
        cr_expect(found, "%s is not a field of the CRD", gx_ks_unimplemented[i]);
    }
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)len + 1);
    cr_assert(b);
    *n = fread(b, 1, (size_t)len, f);
    b[*n] = 0;
    fclose(f);
    return b;
}

static int in_table(const char *kind, const char *ver, const char *path)
{
    for (int k = 0; k < gx_ks_nfields; k++)
        if (!strcmp(gx_ks_fields[k].kind, kind) && !strcmp(gx_ks_fields[k].version, ver) && !strcmp(gx_ks_fields[k].path, path))
            return 1;
    return 0;
}

/* every field of the CRD's schema (outside status/metadata) must be in the table */
static int crd_walk(const char *kind, const char *ver, const json_t *s, const char *path)
{
    int n = 0;
    if (!strcmp(path, "status") || !strcmp(path, "metadata")) return 0;
    cr_expect(in_table(kind, ver, path), "%s %s: field \"%s\" of the CRD is missing from kueue_schema_table.c "
              "(run scripts/gen-kueue-schema.py)", kind, ver, path);
    n++;
    const char *k;
    json_t *c;
    json_object_foreach(json_object_get(s, "properties"), k, c) {
        char p[512];
        snprintf(p, sizeof p, "%s%s%s", path, *path ? "." : "", k);
        n += crd_walk(kind, ver, c, p);
    }
    if (json_object_get(s, "items")) {
        char p[512];
        snprintf(p, sizeof p, "%s[]", path);
        n += crd_walk(kind, ver, json_object_get(s, "items"), p);
    }
    return n;
}

Test(kueue_schema, table_holds_every_field_of_the_crds)
{
    const char *files[] = {"clusterqueues", "cohorts", "localqueues", "resourceflavors", "workloadpriorityclasses"};
    int total = 0;
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        char path[256];
        size_t len;
        /* the CRDs as test data in the repository (tests/k8s/crds/README.md): never skipped */
        snprintf(path, sizeof path, "tests/k8s/crds/kueue.x-k8s.io_%s.yaml", files[i]);
        char *buf = slurp(path, &len);
        cr_assert_not_null(buf, "%s not found (run from the repository root)", path);
        gx_yaml_docs d;
        gx_err e;
        gx_err_clear(&e);
        cr_assert_eq(gx_yaml_parse(buf, len, &d, &e), 0, "%s: %s", path, e.msg);
        const json_t *spec = json_object_get(d.docs[0], "spec");
        const char *kind = json_string_value(json_object_get(json_object_get(spec, "names"), "kind"));
        size_t vi;
        json_t *v;
        json_array_foreach(json_object_get(spec, "versions"), vi, v)
            total += crd_walk(kind, json_string_value(json_object_get(v, "name")),
                              json_object_get(json_object_get(v, "schema"), "openAPIV3Schema"), "");
        gx_yaml_docs_free(&d);
        free(buf);
    }
    int judged = 0;
    for (int k = 0; k < gx_ks_nfields; k++)
        judged += strcmp(gx_ks_fields[k].path, "status") && strcmp(gx_ks_fields[k].path, "metadata");
    cr_expect_eq(total, judged, "the table has fields the CRDs do not (%d in the CRDs, %d in the table)", total, judged);
}

/* Kueue's own sample manifests and gpuaas's examples: accepted, and without a warning */
Test(kueue_schema, sample_manifests_pass_without_warnings)
{
    const char *files[] = {"tests/scenarios/kueue-examples/quick-start-setup.yaml",
                           "tests/scenarios/kueue-examples/single-clusterqueue-setup.yaml",
                           "tests/scenarios/kueue-examples/resource-flavor-taints.yaml",
                           "tests/scenarios/kueue-examples/resource-flavor-tolerations.yaml",
                           "examples/demo/queues.yaml", "examples/sharing/queues.yaml"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        size_t len;
        char *buf = slurp(files[i], &len);
        if (!buf) cr_skip_test("%s not found (run from the repository root)", files[i]);
        gx_yaml_docs d;
        gx_err e;
        gx_err_clear(&e);
        cr_assert_eq(gx_yaml_parse(buf, len, &d, &e), 0, "%s: %s", files[i], e.msg);
        json_t *w = json_array();
        for (size_t k = 0; k < d.n; k++)
            cr_expect_eq(gx_kueue_schema_check(d.docs[k], w, &e), 0, "%s document %zu: %s: %s", files[i], k, e.field, e.msg);
        cr_expect_eq(json_array_size(w), 0, "%s warns", files[i]);
        json_decref(w);
        gx_yaml_docs_free(&d);
        free(buf);
    }
}
