/* fuzz_body: the gateway's request-body scanner (src/maas/body.c) against jansson.
 * Properties: when gx_maas_body_scan answers, jansson (JSON_REJECT_DUPLICATES) accepts
 * the body as an object and gx_maas_body_of_json reads every field the same; the body
 * sent upstream (gx_maas_body_upstream, for a few grants and fields) is one JSON
 * object without duplicate keys whose limits are what was granted. */
#include <jansson.h>
#include "fuzz_util.h"
#include "maas/body.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SAME(f) FUZZ_CHECK(a.f == b.f, #f ": scan %lld, jansson %lld", (long long)a.f, (long long)b.f)

static void upstream(const char *p, size_t n, const gx_maas_body *b, int add_usage, int fields, int64_t grant)
{
    json_t *tree = NULL;
    char *out = NULL;
    size_t olen = 0;
    int rc = gx_maas_body_upstream(p, n, b, &tree, add_usage, fields, grant, &out, &olen);
    json_decref(tree);
    if (rc) {
        FUZZ_CHECK(rc == -1 && !out, "rc %d", rc);
        return;
    }
    if (!out) return; /* sent as it is */
    /* jansson takes a raw NUL byte between tokens, so one may ride along, as sent */
    FUZZ_CHECK(strlen(out) == olen || memchr(p, 0, n), "length %zu, said %zu", strlen(out), olen);
    json_error_t je;
    json_t *j = json_loadb(out, olen, JSON_REJECT_DUPLICATES, &je);
    FUZZ_CHECK(json_is_object(j), "upstream body is not one object without duplicates (%s): %s", je.text, out);
    if (grant > 0) {
        const char *names[] = {"max_tokens", "max_completion_tokens"};
        for (int k = 0; k < 2; k++) {
            if (!(fields & (1 << k))) continue;
            json_t *v = json_object_get(j, names[k]);
            if (v) FUZZ_CHECK(json_is_integer(v) && json_integer_value(v) >= 1 && json_integer_value(v) <= grant,
                              "%s not within the grant %lld: %s", names[k], (long long)grant, out);
        }
    }
    if (add_usage) {
        json_t *so = json_object_get(j, "stream_options");
        FUZZ_CHECK(json_is_true(json_object_get(so, "include_usage")), "usage not asked for: %s", out);
    }
    json_decref(j);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    gx_maas_body a, b;
    memset(&a, 0, sizeof a);
    json_error_t je;
    json_t *j = json_loadb(p, size, JSON_REJECT_DUPLICATES, &je);
    if (gx_maas_body_scan(p, size, &a) == 0) {
        FUZZ_CHECK(json_is_object(j), "the scan accepted what jansson rejects (%s)", j ? "not an object" : je.text);
        gx_maas_body_of_json(j, &b);
        SAME(has_model);
        SAME(model_long);
        FUZZ_CHECK(!strcmp(a.model, b.model), "model: scan \"%s\", jansson \"%s\"", a.model, b.model);
        SAME(stream);
        SAME(stream_opts);
        SAME(has_max);
        SAME(max_tokens);
        SAME(mt_kind);
        SAME(mct_kind);
        SAME(mt);
        SAME(mct);
        SAME(has_n);
        SAME(n);
        SAME(n_kind);
        SAME(prompts);
        SAME(text_bytes);
        SAME(messages);
    } else if (json_is_object(j)) {
        gx_maas_body_of_json(j, &a);
    } else {
        json_decref(j);
        return 0;
    }
    json_decref(j);
    upstream(p, size, &a, 0, 0, 0);
    upstream(p, size, &a, 1, 0, 0);
    upstream(p, size, &a, 1, GX_MAAS_FIELD_MT | GX_MAAS_FIELD_MCT, 7);
    upstream(p, size, &a, 0, GX_MAAS_FIELD_MT, 1);
    return 0;
}
