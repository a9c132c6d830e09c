/* fuzz_quantity: Kubernetes quantities (src/core/quantity.c) under libFuzzer.
 * Properties: gx_quantity_parse of any string succeeds with a value >= 0 or fails with
 * 422 naming the field; a parsed value formatted by gx_quantity_format parses back to
 * the same value; and the first 8 bytes, read as a non-negative int64, format to text
 * that parses back to them. */
#include <jansson.h>
#include "core/quantity.h"
#include "fuzz_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* format(v) parses back to v. */
static void round_trip(int64_t v)
{
    char buf[64];
    const char *t = gx_quantity_format(v, buf, sizeof buf);
    int64_t back = -1;
    gx_err err;
    gx_err_clear(&err);
    FUZZ_CHECK(gx_quantity_parse(t, &back, "q", &err) == 0, "format(%lld) = \"%s\" does not parse: %s", (long long)v,
               t, err.msg);
    FUZZ_CHECK(back == v, "format(%lld) = \"%s\" parses as %lld", (long long)v, t, (long long)back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = fuzz_cstr(data, size);
    int64_t m = -1;
    gx_err err;
    gx_err_clear(&err);
    int prc = gx_quantity_parse(s, &m, "spec.q", &err);
    if (prc == 0) {
        FUZZ_CHECK(m >= 0, "\"%s\" parsed as %lld", s, (long long)m);
        round_trip(m);
    } else {
        FUZZ_CHECK(err.status == 422 && !strcmp(err.field, "spec.q"), "\"%s\": status %d field %s", s, err.status,
                   err.field);
    }
    /* the same text as a JSON string goes the same way */
    json_t *j = json_stringn(s, size);
    if (j) {
        int64_t m2 = -1;
        int rc = gx_quantity_from_json(j, &m2, "spec.q", &err);
        if (!memchr(s, 0, size))
            FUZZ_CHECK(rc == prc && (rc || m2 == m), "\"%s\": from_json %d (%lld), parse %d (%lld)", s, rc,
                       (long long)m2, prc, (long long)m);
        json_decref(j);
    }
    if (size >= 8) {
        uint64_t u;
        memcpy(&u, data, 8);
        round_trip((int64_t)(u >> 1));
    }
    free(s);
    return 0;
}
