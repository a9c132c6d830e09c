/* fuzz_kueue: Kueue object and Job validation in the engine (src/core) under libFuzzer.
 * The input is a manifest (JSON or YAML, one or more documents, read by
 * gx_manifest_parse as the API reads a body). Every document goes to one fresh engine:
 * Jobs and Workloads through gx_engine_submit, the rest through gx_engine_apply; then
 * one scheduling pass and the views of what was kept.
 * Properties: nothing crashes or leaks; a refusal carries a client status (400, 404, 409,
 * 422) and a message; what was applied is listed back as an array. */
#include <jansson.h>
#include "core/engine.h"
#include "fuzz_util.h"
#include "lib/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void refused(const gx_err *err, const char *what)
{
    FUZZ_CHECK(err->status == 400 || err->status == 404 || err->status == 409 || err->status == 422,
               "%s refused with status %d (%s: %s)", what, err->status, err->field, err->msg);
    FUZZ_CHECK(err->msg[0], "%s refused without a message", what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gx_yaml_docs docs = {0};
    gx_err err;
    gx_err_clear(&err);
    if (gx_manifest_parse((const char *)data, size, &docs, &err)) {
        gx_yaml_docs_free(&docs);
        return 0;
    }
    gx_engine_opts opts = {.fair_sharing = size & 1};
    gx_engine *en = gx_engine_new(&opts);
    int64_t now = 1700000000000;
    for (size_t i = 0; i < docs.n && i < 64; i++) {
        const json_t *d = docs.docs[i];
        const char *kind = json_string_value(json_object_get(d, "kind"));
        gx_err_clear(&err);
        int job = kind && (!strcmp(kind, "Job") || !strcmp(kind, "Workload"));
        int rc = job ? gx_engine_submit(en, d, now + (int64_t)i, &err) : gx_engine_apply(en, d, &err);
        if (rc) refused(&err, job ? "submit" : "apply");
    }
    gx_action *acts = NULL;
    size_t na = gx_engine_schedule(en, now + 1000, &acts);
    for (size_t k = 0; k < na; k++) {
        json_t *w = gx_engine_workload(en, acts[k].workload, now + 1000);
        FUZZ_CHECK(w, "an action names workload %s the engine does not know", acts[k].workload);
        json_decref(w);
    }
    free(acts);
    static const char *const kinds[] = {"ResourceFlavor", "ClusterQueue", "Cohort", "LocalQueue",
                                        "WorkloadPriorityClass", "Node"};
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        json_t *a = gx_engine_objects(en, kinds[k]);
        FUZZ_CHECK(json_is_array(a), "objects(%s) is not an array", kinds[k]);
        json_decref(a);
    }
    gx_engine_free(en);
    gx_yaml_docs_free(&docs);
    return 0;
}
