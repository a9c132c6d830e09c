/* fuzz_yaml: the YAML bridge (src/lib/yaml.c) under libFuzzer.
 * Properties: gx_manifest_parse never crashes or leaks on any bytes, fails only with an
 * error status; every document it returns, emitted by gx_yaml_emit and parsed again
 * with gx_yaml_parse, is exactly one document equal (json_equal) to the first (a null
 * document reads back as none: YAML's empty document). */
#include <jansson.h>
#include "fuzz_util.h"
#include "lib/yaml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gx_yaml_docs docs = {0};
    gx_err err;
    gx_err_clear(&err);
    if (gx_manifest_parse((const char *)data, size, &docs, &err)) {
        FUZZ_CHECK(err.status >= 400 && err.status < 600, "status %d", err.status);
        gx_yaml_docs_free(&docs);
        return 0;
    }
    for (size_t i = 0; i < docs.n; i++) {
        char *y = gx_yaml_emit(docs.docs[i]);
        if (!y) continue; /* deeper than the emitter writes: it says so, and that is allowed */
        gx_yaml_docs back = {0};
        gx_err e2;
        gx_err_clear(&e2);
        int rc = gx_yaml_parse(y, strlen(y), &back, &e2);
        FUZZ_CHECK(rc == 0, "emitted YAML does not parse (line %d: %s: %s):\n%s", e2.line, e2.field, e2.msg, y);
        /* a null document ("[null]" as JSON) is written "null", which YAML reads as an
         * empty document: skipped, as documented in yaml.h */
        size_t want = json_is_null(docs.docs[i]) ? 0 : 1;
        FUZZ_CHECK(back.n == want, "emitted YAML reads as %zu documents:\n%s", back.n, y);
        if (!want) {
            gx_yaml_docs_free(&back);
            free(y);
            continue;
        }
        if (!json_equal(docs.docs[i], back.docs[0])) {
            char *a = json_dumps(docs.docs[i], JSON_ENCODE_ANY), *b = json_dumps(back.docs[0], JSON_ENCODE_ANY);
            FUZZ_CHECK(0, "round trip changed the document:\n  in   %s\n  out  %s\n  yaml %s", a, b, y);
        }
        gx_yaml_docs_free(&back);
        free(y);
    }
    gx_yaml_docs_free(&docs);
    return 0;
}
