/* fuzz_sse: the gateway's SSE splitter and usage reader (src/maas/sse.c) under libFuzzer.
 * Properties: fed at once or in pieces of 1..17 bytes, the stream gives the same output
 * and the same meter (usage, content chunks and bytes); a client that asked for usage
 * gets every byte as sent; gx_maas_usage_of of the input as one JSON answer agrees
 * with jansson where jansson reads it. (Usage read from events by the scan and by
 * jansson may differ on events that are not valid JSON, e.g. invalid UTF-8 in a key:
 * the model server's fault, and counted either way, so that is not checked.) */
#include <jansson.h>
#include "fuzz_util.h"
#include "maas/maas_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void run(const char *p, size_t n, int strip, uint64_t *seed, int split, gx_sbuf *out, gx_maas_sse *s)
{
    memset(s, 0, sizeof *s);
    s->strip_usage = strip;
    size_t pos = 0;
    while (pos < n) {
        size_t step = split ? fuzz_step(seed, 17) : n;
        if (step > n - pos) step = n - pos;
        gx_maas_sse_feed(s, p + pos, step, out, 0);
        pos += step;
    }
    gx_maas_sse_feed(s, "", 0, out, 1);
    gx_maas_sse_free(s);
}

static void same_meter(const gx_maas_sse *a, const gx_maas_sse *b, const char *what)
{
    FUZZ_CHECK(a->have_usage == b->have_usage && a->prompt == b->prompt && a->completion == b->completion,
               "%s: usage %d %lld/%lld against %d %lld/%lld", what, a->have_usage, (long long)a->prompt,
               (long long)a->completion, b->have_usage, (long long)b->prompt, (long long)b->completion);
    FUZZ_CHECK(a->content_chunks == b->content_chunks && a->content_bytes == b->content_bytes,
               "%s: content %lld/%lld against %lld/%lld", what, (long long)a->content_chunks,
               (long long)a->content_bytes, (long long)b->content_chunks, (long long)b->content_bytes);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *p = (const char *)data;
    uint64_t seed = fuzz_hash(data, size);
    for (int strip = 0; strip <= 1; strip++) {
        gx_sbuf o1 = {0}, o2 = {0};
        gx_maas_sse s1, s2;
        run(p, size, strip, &seed, 0, &o1, &s1);
        run(p, size, strip, &seed, 1, &o2, &s2);
        FUZZ_CHECK(o1.n == o2.n && (!o1.n || !memcmp(o1.p, o2.p, o1.n)), "strip %d: %zu bytes at once, %zu in pieces",
                   strip, o1.n, o2.n);
        same_meter(&s1, &s2, strip ? "stripped, at once/in pieces" : "at once/in pieces");
        if (!strip) FUZZ_CHECK(o1.n == size && (!size || !memcmp(o1.p, p, size)), "the stream changed (%zu of %zu bytes)",
                               o1.n, size);
        gx_sbuf_free(&o1);
        gx_sbuf_free(&o2);
    }
    int64_t pr = -1, co = -1, cb = -1;
    int rc = gx_maas_usage_of(p, size, &pr, &co, &cb);
    json_t *j = json_loadb(p, size, JSON_REJECT_DUPLICATES, NULL);
    json_t *u = json_object_get(j, "usage");
    if (json_is_object(u)) {
        json_int_t jp = json_integer_value(json_object_get(u, "prompt_tokens"));
        json_int_t jc = json_integer_value(json_object_get(u, "completion_tokens"));
        FUZZ_CHECK(rc == 0 && pr == jp && co == jc, "usage_of %d %lld/%lld, jansson %lld/%lld", rc, (long long)pr,
                   (long long)co, (long long)jp, (long long)jc);
    }
    json_decref(j);
    return 0;
}
