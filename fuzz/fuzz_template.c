/* fuzz_template: portal request templates (src/portal/template.c) under libFuzzer.
 * The input is a template (YAML or JSON, its first document), optionally followed by a
 * line "%%" and a submitted form (application/x-www-form-urlencoded, as the portal
 * reads it). A template that gx_portal_template_check accepts has its parameters listed,
 * the form turned into values and, when they pass, the manifest rendered.
 * Properties: nothing crashes or leaks; every refusal names a field and says why; an
 * accepted template lists at most GX_PORTAL_TPL_MAX_PARAMS parameters, each with a name;
 * values are an object; a rendered manifest is an object, and rendering it twice gives
 * the same object (no state kept between renders). */
#include <jansson.h>
#include "fuzz_util.h"
#include "lib/yaml.h"
#include "portal/html.h"
#include "portal/template.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    const char *sep = memmem(p, size, "\n%%\n", 4);
    size_t tlen = sep ? (size_t)(sep - p) + 1 : size;
    gx_yaml_docs docs = {0};
    gx_err e;
    gx_err_clear(&e);
    if (gx_manifest_parse(p, tlen, &docs, &e)) {
        gx_yaml_docs_free(&docs);
        return 0;
    }
    const json_t *t = docs.docs[0];
    gx_err_clear(&e);
    if (gx_portal_template_check(t, &e)) {
        FUZZ_CHECK(e.msg[0], "refused without a message");
        gx_yaml_docs_free(&docs);
        return 0;
    }
    json_t *params = gx_portal_template_params(t);
    FUZZ_CHECK(json_is_array(params) && json_array_size(params) <= GX_PORTAL_TPL_MAX_PARAMS, "%zu parameters",
               json_array_size(params));
    size_t i;
    json_t *pa;
    json_array_foreach(params, i, pa) FUZZ_CHECK(json_string_value(json_object_get(pa, "name")), "parameter %zu", i);
    json_decref(params);
    json_t *form = sep ? gx_portal_form_parse(sep + 4, size - tlen - 3, 64, GX_PORTAL_TPL_MAX_STRING)
                       : json_object();
    if (!form) form = json_object();
    json_t *nss = json_pack("[ss]", "team-a", "default");
    gx_err_clear(&e);
    json_t *v = gx_portal_template_values(t, form, nss, &e);
    if (!v) {
        FUZZ_CHECK(e.field[0] && e.msg[0], "values refused without a field or message (%s: %s)", e.field, e.msg);
    } else {
        FUZZ_CHECK(json_is_object(v), "values are not an object");
        gx_err_clear(&e);
        json_t *m = gx_portal_template_render(t, v, "alice", &e);
        if (!m) {
            FUZZ_CHECK(e.msg[0], "render refused without a message");
        } else {
            FUZZ_CHECK(json_is_object(m), "the manifest is not an object");
            json_t *m2 = gx_portal_template_render(t, v, "alice", &e);
            FUZZ_CHECK(json_equal(m, m2), "two renders differ");
            json_decref(m2);
            json_decref(m);
        }
        json_decref(v);
    }
    json_decref(nss);
    json_decref(form);
    gx_yaml_docs_free(&docs);
    return 0;
}
