/* Unit tests of src/maas/body.c: the scan of a request body against jansson, its
 * reference. The property that matters: whenever the scan answers, jansson (with
 * JSON_REJECT_DUPLICATES, as the gateway parses) accepts the same bytes and reads the
 * same fields from them. Checked on hand-written bodies (typical requests must take the
 * scan, tricky ones must be left to jansson) and on bodies generated at random and then
 * mutated byte by byte, with a fixed seed. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "maas/body.h"
#include "test_mutate.h"

/* Scan s; when the scan answers, jansson must accept s and agree on every field.
 * Returns the scan's result (0: it answered). */
static int agree(const char *s, size_t n)
{
    gx_maas_body a, b;
    int rc = gx_maas_body_scan(s, n, &a);
    if (rc) return rc;
    json_error_t je;
    json_t *j = json_loadb(s, n, JSON_REJECT_DUPLICATES, &je);
    cr_assert(json_is_object(j), "the scan accepted what jansson rejects (%s): %.*s", j ? "not an object" : je.text,
              (int)n, s);
    gx_maas_body_of_json(j, &b);
    json_decref(j);
    cr_assert_eq(a.has_model, b.has_model, "has_model: %.*s", (int)n, s);
    cr_assert_eq(a.model_long, b.model_long, "model_long: %.*s", (int)n, s);
    cr_assert_str_eq(a.model, b.model, "model: %.*s", (int)n, s);
    cr_assert_eq(a.stream, b.stream, "stream: %.*s", (int)n, s);
    cr_assert_eq(a.stream_opts, b.stream_opts, "stream_opts: %.*s", (int)n, s);
    cr_assert_eq(a.has_max, b.has_max, "has_max: %.*s", (int)n, s);
    cr_assert_eq(a.max_tokens, b.max_tokens, "max_tokens: %.*s", (int)n, s);
    cr_assert_eq(a.has_n, b.has_n, "has_n: %.*s", (int)n, s);
    cr_assert_eq(a.n, b.n, "n: %.*s", (int)n, s);
    cr_assert_eq(a.text_bytes, b.text_bytes, "text_bytes %lld against %lld: %.*s", (long long)a.text_bytes,
                 (long long)b.text_bytes, (int)n, s);
    cr_assert_eq(a.messages, b.messages, "messages: %.*s", (int)n, s);
    return 0;
}

static int agree_s(const char *s) { return agree(s, strlen(s)); }

Test(maas_body, typical_requests_take_the_scan)
{
    const char *ok[] = {
        "{\"model\":\"fake-model\",\"messages\":[{\"role\":\"user\",\"content\":\"hello there\"}],\"max_tokens\":8}",
        " {\n \"model\" : \"m\" ,\t\"stream\" : true , \"messages\" : [ ] }\r\n",
        "{\"model\":\"m\",\"prompt\":\"once upon\",\"max_tokens\":-3,\"n\":2,\"temperature\":0.7,\"stop\":null}",
        "{\"model\":\"m\",\"prompt\":[[1,2,3],[4]],\"logit_bias\":{\"50256\":-100}}",
        "{\"model\":\"m\",\"input\":[\"a\",\"bb\"],\"encoding_format\":\"float\"}",
        "{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true}}",
        "{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":false}}",
        "{\"model\":\"m\",\"stream_options\":null,\"stream\":false}",
        "{\"model\":\"m\",\"max_tokens\":5,\"max_completion_tokens\":7}",
        "{\"model\":\"m\",\"max_completion_tokens\":1.5,\"max_tokens\":7}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"caf\xc3\xa9 \xe4\xb8\xad \xf0\x9f\x98\x80\"}]}]}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"tab\\t nl\\n q\\\" bs\\\\ sl\\/ \\u00e9 \\u4e2d \\ud83d\\ude00 \\u0041\"}]}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"tool_call_id\":\"x\",\"content\":\"-0\"}],\"seed\":-0,\"top_p\":-0.25}",
        "{\"model\":\"m\",\"n\":999999999999999999,\"max_tokens\":-999999999999999999}",
        "{\"model\":\"" "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
        "0123456789012345678901234567890123456789012345678901234567890123456789012345678901234567890123456789"
        "0123456789012345678901234567890123456789012345678901234567890123456789\"}",
        "{\"model\":7,\"messages\":\"not a list\"}",
        "{}",
        NULL};
    for (int i = 0; ok[i]; i++) cr_assert_eq(agree_s(ok[i]), 0, "left to jansson: %s", ok[i]);

    gx_maas_body b;
    const char *s = ok[0];
    cr_assert_eq(gx_maas_body_scan(s, strlen(s), &b), 0);
    cr_assert_str_eq(b.model, "fake-model");
    cr_assert(b.has_max && b.max_tokens == 8 && !b.stream && !b.stream_opts);
    cr_assert_eq(b.text_bytes, 4 + 11);   /* "user" and "hello there" */
    cr_assert_eq(b.messages, 1);
    s = ok[8];
    cr_assert_eq(gx_maas_body_scan(s, strlen(s), &b), 0);
    cr_assert_eq(b.max_tokens, 7, "max_completion_tokens wins");
    s = ok[11];
    cr_assert_eq(gx_maas_body_scan(s, strlen(s), &b), 0);
    /* "user", then tab(3) \t(1) " nl"(3) \n(1) " q"(2) "(1) " bs"(3) \(1) " sl"(3) /(1), and " é 中 😀 A" (14) */
    cr_assert_eq(b.text_bytes, 4 + 33, "unescaped UTF-8 bytes");
    s = ok[14];
    cr_assert_eq(gx_maas_body_scan(s, strlen(s), &b), 0);
    cr_assert(b.has_model && b.model_long && strlen(b.model) == GX_MAAS_BODY_MODEL - 1);
}

Test(maas_body, doubtful_bodies_are_left_to_jansson)
{
    /* not a JSON object to jansson: the scan must not answer */
    const char *bad[] = {
        "", "   ", "[1]", "\"x\"", "{", "{\"model\":\"m\"", "{\"model\":\"m\"}x", "{\"model\":\"m\",}",
        "{\"model\":\"a\",\"model\":\"b\"}",                               /* duplicate keys */
        "{\"messages\":[{\"role\":\"user\",\"role\":\"system\"}]}",        /* nested duplicate */
        "{\"n\":01}", "{\"n\":-}", "{\"n\":1.}", "{\"n\":.5}", "{\"n\":+1}", "{\"n\":1.5.2}",
        "{\"s\":\"\\u0000\"}", "{\"s\":\"\\ud800\"}", "{\"s\":\"\\udc00x\"}", "{\"s\":\"\\x\"}", "{\"s\":\"\\u12g4\"}",
        "{\"s\":\"\xc0\x80\"}", "{\"s\":\"\xe0\x80\xaf\"}", "{\"s\":\"\xf0\x80\x80\xaf\"}", "{\"s\":\"\xf4\x90\x80\x80\"}",
        "{\"s\":\"\xed\xa0\x80\"}", "{\"s\":\"\xf5\x80\x80\x80\"}", "{\"s\":\"\xc3\"}",
        "{\"s\":\"a\nb\"}", "{\"s\":tru}", "{\"s\":nul}", "{\"s\":truex}", "{'s':1}", "{\"s\" 1}", "{\"s\":[1 2]}",
        "\xef\xbb\xbf{}",
        NULL};
    for (int i = 0; bad[i]; i++) {
        cr_assert_eq(agree_s(bad[i]), 1, "the scan answered: %s", bad[i]);
        json_t *j = json_loads(bad[i], JSON_REJECT_DUPLICATES, NULL);
        cr_assert(!json_is_object(j), "jansson accepts %s: fix the test", bad[i]);
        json_decref(j);
    }
    /* valid, but beyond what the scan checks itself: jansson reads them */
    const char *hard[] = {"{\"n\":1e3}", "{\"n\":1E-2}", "{\"mod\\u0065l\":\"m\"}", "{\"model\":\"m\\u0031\"}",
                          "{\"n\":1234567890123456789}", NULL};
    for (int i = 0; hard[i]; i++) {
        cr_assert_eq(agree_s(hard[i]), 1, "the scan answered: %s", hard[i]);
        json_t *j = json_loads(hard[i], JSON_REJECT_DUPLICATES, NULL);
        cr_assert(j, "jansson rejects %s: fix the test", hard[i]);
        json_decref(j);
    }
    char deep[300];
    size_t n = 0;
    n += (size_t)snprintf(deep, sizeof deep, "{\"messages\":");
    for (int i = 0; i < 100; i++) deep[n++] = '[';
    for (int i = 0; i < 100; i++) deep[n++] = ']';
    deep[n++] = '}';
    cr_assert_eq(agree(deep, n), 1, "nesting past the scan's depth goes to jansson");
}

/* ---- random bodies ------------------------------------------------------------------ */

typedef struct { char p[4096]; size_t n; } buf;
static void put(buf *b, const char *s)
{
    size_t k = strlen(s);
    if (b->n + k < sizeof b->p) memcpy(b->p + b->n, s, k), b->n += k;
}

static void gen_string(buf *b)
{
    static const char *parts[] = {"a", "hello", " ", "\\n", "\\\"", "\\\\", "\\/", "\\u00e9", "\\u4e2d",
                                  "\\ud83d\\ude00", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80", "{", "]", ":", ",", "0"};
    put(b, "\"");
    for (unsigned i = pick(6); i; i--) put(b, parts[pick(sizeof parts / sizeof *parts)]);
    put(b, "\"");
}

static void gen_value(buf *b, int depth)
{
    static const char *nums[] = {"0", "-0", "7", "-12", "3.25", "-0.5", "100000", "999999999999999999", "1e3", "2E-1"};
    unsigned k = pick(depth > 3 ? 6 : 8);
    if (k == 0) gen_string(b);
    else if (k == 1 || k == 2) put(b, nums[pick(sizeof nums / sizeof *nums)]);
    else if (k == 3) put(b, "true");
    else if (k == 4) put(b, "false");
    else if (k == 5) put(b, "null");
    else if (k == 6) {
        put(b, "[");
        for (unsigned i = pick(4); i; i--) { gen_value(b, depth + 1); if (i > 1) put(b, ","); }
        put(b, "]");
    } else {
        static const char *keys[] = {"role", "content", "type", "text", "include_usage", "x"};
        put(b, "{");
        for (unsigned i = pick(4); i; i--) {
            put(b, "\""), put(b, keys[pick(6)]), put(b, "\":");
            gen_value(b, depth + 1);
            if (i > 1) put(b, ",");
        }
        put(b, "}");
    }
}

static void gen_body(buf *b)
{
    static const char *keys[] = {"model", "stream", "stream_options", "max_tokens", "max_completion_tokens", "n",
                                 "messages", "prompt", "input", "temperature", "user", "include_usage"};
    b->n = 0;
    put(b, pick(4) ? "{" : " {\n");
    for (unsigned i = pick(7); i; i--) {
        put(b, "\""), put(b, keys[pick(sizeof keys / sizeof *keys)]), put(b, pick(5) ? "\":" : "\" : ");
        gen_value(b, 1);
        if (i > 1) put(b, ",");
    }
    put(b, "}");
}

Test(maas_body, random_and_mutated_bodies_agree_with_jansson)
{
    static buf b;
    static char before[sizeof b.p];
    gx_rng_seed(rs, 42);
    int answered = 0, left = 0, mutated_answered = 0;
    for (int i = 0; i < 40000; i++) {
        gen_body(&b);
        int mutations = 0;
        if (i % 3 == 0) {   /* counted as mutated only when the edits changed the body */
            size_t n0 = b.n;
            memcpy(before, b.p, n0);
            mutate(b.p, &b.n, sizeof b.p, "\"\\{}[],:0-e.\x80\xc3\xed tu9");
            mutations = b.n != n0 || memcmp(before, b.p, n0);
        }
        if (agree(b.p, b.n) == 0) {
            answered++;
            if (mutations) mutated_answered++;
        } else {
            left++;
        }
    }
    /* the generator must reach both outcomes, or the property above proves little */
    cr_assert_gt(answered, 10000, "the scan answered only %d bodies", answered);
    cr_assert_gt(left, 5000, "only %d bodies were left to jansson", left);
    cr_assert_gt(mutated_answered, 500, "mutations never kept a body valid (%d)", mutated_answered);
}
