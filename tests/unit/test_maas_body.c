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
    cr_assert_eq(a.n_kind, b.n_kind, "n_kind: %.*s", (int)n, s);
    cr_assert_eq(a.mt_kind, b.mt_kind, "mt_kind: %.*s", (int)n, s);
    cr_assert_eq(a.mt, b.mt, "mt: %.*s", (int)n, s);
    cr_assert_eq(a.mct_kind, b.mct_kind, "mct_kind: %.*s", (int)n, s);
    cr_assert_eq(a.mct, b.mct, "mct: %.*s", (int)n, s);
    cr_assert_eq(a.prompts, b.prompts, "prompts: %.*s", (int)n, s);
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
    s = ok[9];   /* a limit that is not an integer is still seen, so that it can be replaced */
    cr_assert_eq(gx_maas_body_scan(s, strlen(s), &b), 0);
    cr_assert(b.mct_kind == GX_MAAS_F_OTHER && b.mt_kind == GX_MAAS_F_INT && b.mt == 7 && b.max_tokens == 7);
    s = ok[2];
    cr_assert_eq(gx_maas_body_scan(s, strlen(s), &b), 0);
    cr_assert(b.mt_kind == GX_MAAS_F_INT && b.mt == -3 && b.n_kind == GX_MAAS_F_INT && b.prompts == 1);
    s = ok[3];   /* a batch of two prompts (token lists) */
    cr_assert_eq(gx_maas_body_scan(s, strlen(s), &b), 0);
    cr_assert_eq(b.prompts, 2);
    const char *more[] = {"{\"model\":\"m\",\"prompt\":[\"a\",\"b\",\"c\"],\"max_tokens\":null,\"n\":null}",
                          "{\"model\":\"m\",\"prompt\":[1,2,3],\"n\":\"2\"}", "{\"prompt\":[]}", NULL};
    for (int i = 0; more[i]; i++) cr_assert_eq(agree_s(more[i]), 0, "left to jansson: %s", more[i]);
    cr_assert_eq(gx_maas_body_scan(more[0], strlen(more[0]), &b), 0);
    cr_assert(b.prompts == 3 && b.mt_kind == GX_MAAS_F_NULL && !b.has_max && b.n_kind == GX_MAAS_F_NULL && !b.has_n);
    cr_assert_eq(gx_maas_body_scan(more[1], strlen(more[1]), &b), 0);
    cr_assert(b.prompts == 1 && b.n_kind == GX_MAAS_F_OTHER, "one prompt of token ids; n a string");
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

/* ---- the body sent upstream -------------------------------------------------------------- */

#define BOTH (GX_MAAS_FIELD_MT | GX_MAAS_FIELD_MCT)

/* What the gateway would send upstream for s (read by the scan, or by jansson when the
 * scan leaves it, as proxy.c does). It must be one JSON object with no duplicate key.
 * Returns the bytes (to free); *changed: they differ from s. */
static char *upstream(const char *s, int add_usage, int fields, int64_t grant, int *changed)
{
    gx_maas_body b;
    json_t *tree = NULL;
    if (gx_maas_body_scan(s, strlen(s), &b)) {
        tree = json_loads(s, JSON_REJECT_DUPLICATES, NULL);
        cr_assert(json_is_object(tree), "bad test body %s", s);
        gx_maas_body_of_json(tree, &b);
    }
    char *out;
    size_t n;
    cr_assert_eq(gx_maas_body_upstream(s, strlen(s), &b, &tree, add_usage, fields, grant, &out, &n), 0, "%s", s);
    json_decref(tree);
    *changed = out != NULL;
    if (out) cr_assert_eq(strlen(out), n, "length of %s", out);
    char *r = out ? out : strdup(s);
    json_t *j = json_loads(r, JSON_REJECT_DUPLICATES, NULL);
    cr_assert(json_is_object(j), "not one JSON object without duplicate keys: %s", r);
    json_decref(j);
    return r;
}

/* The upstream body of s equals want, as JSON (key order aside). */
static void upstream_is(const char *s, int add_usage, int fields, int64_t grant, const char *want)
{
    int changed;
    char *r = upstream(s, add_usage, fields, grant, &changed);
    json_t *a = json_loads(r, JSON_REJECT_DUPLICATES, NULL), *b = json_loads(want, 0, NULL);
    cr_assert(b, "bad expected JSON %s", want);
    cr_assert(json_equal(a, b), "%s\n  sent  %s\n  want  %s", s, r, want);
    json_decref(a);
    json_decref(b);
    free(r);
}

Test(maas_body, upstream_is_told_the_grant)
{
    int changed;
    char *r;
    /* no limit named: inserted as text, every byte the client sent kept */
    r = upstream("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}", 0, BOTH, 7, &changed);
    cr_assert_str_eq(r, "{\"max_tokens\":7,\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    free(r);
    r = upstream(" {\"model\":\"m\",\"stream\":true}", 1, BOTH, 7, &changed);   /* with the usage insertion */
    cr_assert_str_eq(r, " {\"stream_options\":{\"include_usage\":true},\"max_tokens\":7,\"model\":\"m\",\"stream\":true}");
    free(r);
    r = upstream("{\"model\":\"m\",\"stream\":true,\"max_tokens\":7}", 1, BOTH, 7, &changed);   /* usage alone */
    cr_assert_str_eq(r, "{\"stream_options\":{\"include_usage\":true},\"model\":\"m\",\"stream\":true,\"max_tokens\":7}");
    free(r);
    r = upstream("{ }", 1, BOTH, 3, &changed);   /* no trailing comma in an empty object */
    cr_assert_str_eq(r, "{\"stream_options\":{\"include_usage\":true},\"max_tokens\":3 }");
    free(r);
    /* /v1/completions has only max_tokens: a max_completion_tokens there limits nothing */
    r = upstream("{\"model\":\"m\",\"prompt\":\"p\",\"max_completion_tokens\":500}", 0, GX_MAAS_FIELD_MT, 16, &changed);
    cr_assert_str_eq(r, "{\"max_tokens\":16,\"model\":\"m\",\"prompt\":\"p\",\"max_completion_tokens\":500}");
    free(r);

    /* within the grant: the client's bytes as they are */
    const char *same[] = {"{\"model\":\"m\",\"max_tokens\":8}", "{\"model\":\"m\",\"max_completion_tokens\":3}",
                          "{\"model\":\"m\", \"max_tokens\" : 1 ,\"max_completion_tokens\":8}",
                          "{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true},\"max_tokens\":8}", NULL};
    for (int i = 0; same[i]; i++) {
        r = upstream(same[i], strstr(same[i], "stream") != NULL, BOTH, 8, &changed);
        cr_assert(!changed, "changed %s into %s", same[i], r);
        free(r);
    }
    r = upstream("{\"model\":\"m\",\"input\":\"x\"}", 0, BOTH, 0, &changed);   /* embeddings: no completion */
    cr_assert(!changed);
    free(r);

    /* a limit above the grant, null or not an integer: replaced in the client's field */
    upstream_is("{\"model\":\"m\",\"max_tokens\":500,\"temperature\":0.5}", 0, BOTH, 7,
                "{\"model\":\"m\",\"max_tokens\":7,\"temperature\":0.5}");
    upstream_is("{\"model\":\"m\",\"max_tokens\":null}", 0, BOTH, 7, "{\"model\":\"m\",\"max_tokens\":7}");
    upstream_is("{\"model\":\"m\",\"max_tokens\":5.5}", 0, BOTH, 7, "{\"model\":\"m\",\"max_tokens\":7}");
    upstream_is("{\"model\":\"m\",\"max_tokens\":\"9\"}", 0, BOTH, 7, "{\"model\":\"m\",\"max_tokens\":7}");
    upstream_is("{\"model\":\"m\",\"max_completion_tokens\":500}", 0, BOTH, 7, "{\"model\":\"m\",\"max_completion_tokens\":7}");
    upstream_is("{\"model\":\"m\",\"max_completion_tokens\":null,\"max_tokens\":50}", 0, BOTH, 7,
                "{\"model\":\"m\",\"max_completion_tokens\":7,\"max_tokens\":7}");
    upstream_is("{\"model\":\"m\",\"max_completion_tokens\":500,\"max_tokens\":3}", 0, BOTH, 7,
                "{\"model\":\"m\",\"max_completion_tokens\":7,\"max_tokens\":3}");
    /* both changes through the tree at once */
    upstream_is("{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":false,\"x\":1},\"max_tokens\":900}", 1,
                BOTH, 7, "{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true,\"x\":1},\"max_tokens\":7}");
    upstream_is("{\"model\":\"m\",\"stream\":true,\"stream_options\":null}", 1, BOTH, 7,
                "{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true},\"max_tokens\":7}");
    /* an escaped key the scan leaves to jansson is still the field it names: no second one */
    upstream_is("{\"model\":\"m\",\"max\\u005ftokens\":500}", 0, BOTH, 7, "{\"model\":\"m\",\"max_tokens\":7}");
    upstream_is("{\"model\":\"m\",\"max\\u005ftokens\":5}", 0, BOTH, 7, "{\"model\":\"m\",\"max_tokens\":5}");
}

/* Random bodies: whatever the client sent, the upstream body is one object without
 * duplicate keys, says include_usage when asked, binds every limit field to 1..grant,
 * and leaves every other member as it was. */
Test(maas_body, upstream_body_of_random_bodies)
{
    static buf b;
    gx_rng_seed(rs, 7);
    int checked = 0, unchanged = 0;
    for (int i = 0; i < 20000; i++) {
        gen_body(&b);
        json_t *orig = json_loadb(b.p, b.n, JSON_REJECT_DUPLICATES, NULL);
        if (!json_is_object(orig)) { json_decref(orig); continue; }
        gx_maas_body bi;
        json_t *tree = NULL;
        if (gx_maas_body_scan(b.p, b.n, &bi)) {
            tree = json_loadb(b.p, b.n, JSON_REJECT_DUPLICATES, NULL);
            gx_maas_body_of_json(tree, &bi);
        }
        int usage = (int)pick(2), fields = pick(2) ? BOTH : GX_MAAS_FIELD_MT;
        int64_t grant = (int64_t)pick(10);
        char *out;
        size_t n;
        int rc = gx_maas_body_upstream(b.p, b.n, &bi, &tree, usage, fields, grant, &out, &n);
        json_decref(tree);
        json_t *so0 = json_object_get(orig, "stream_options");
        int so_bad = so0 && !json_is_object(so0) && !json_is_null(so0);
        if (rc) {
            cr_assert(usage && so_bad, "refused %.*s", (int)b.n, b.p);
            json_decref(orig);
            continue;
        }
        unchanged += !out;
        json_t *j = out ? json_loadb(out, n, JSON_REJECT_DUPLICATES, NULL) : json_incref(orig);
        cr_assert(json_is_object(j), "%.*s became %s", (int)b.n, b.p, out);
        const char *k;
        json_t *v;
        json_object_foreach(orig, k, v) {
            int lim = (!strcmp(k, "max_tokens") && (fields & GX_MAAS_FIELD_MT)) ||
                      (!strcmp(k, "max_completion_tokens") && (fields & GX_MAAS_FIELD_MCT));
            if ((grant && lim) || (usage && !strcmp(k, "stream_options"))) continue;
            cr_assert(json_equal(v, json_object_get(j, k)), "%s changed: %.*s -> %s", k, (int)b.n, b.p, out);
        }
        if (usage) cr_assert(json_is_true(json_object_get(json_object_get(j, "stream_options"), "include_usage")),
                             "%.*s -> %s", (int)b.n, b.p, out);
        if (grant) {
            int present = 0;
            const char *names[] = {"max_tokens", "max_completion_tokens"};
            for (int f = 0; f < 2; f++) {
                json_t *x = json_object_get(j, names[f]);
                if (!x || !(fields & (f ? GX_MAAS_FIELD_MCT : GX_MAAS_FIELD_MT))) continue;
                present = 1;
                cr_assert(json_is_integer(x) && json_integer_value(x) >= 1 && json_integer_value(x) <= grant,
                          "%s not within 1..%lld: %.*s -> %s", names[f], (long long)grant, (int)b.n, b.p, out);
            }
            cr_assert(present, "no limit: %.*s -> %s", (int)b.n, b.p, out);
        }
        checked++;
        json_decref(j);
        json_decref(orig);
        free(out);
    }
    cr_assert_gt(checked, 3000, "only %d bodies checked", checked);
    cr_assert_gt(unchanged, 100, "the unchanged path was never taken (%d)", unchanged);
}

/* issue 16: a streamed request with stream_options 5, "x" or [] answered 500 (the body
 * could not be changed to carry include_usage); the scan and the tree now both mark a
 * stream_options that is neither an object nor null, which the gateway refuses (400). */
Test(maas_body, stream_options_not_an_object_is_marked)
{
    static const struct { const char *so; int bad; } cases[] = {
        {"5", 1}, {"\"x\"", 1}, {"[]", 1}, {"true", 1}, {"1.5", 1}, {"{}", 0}, {"null", 0}, {"{\"include_usage\":true}", 0},
        {NULL, 0}};
    char body[200];
    for (int i = 0; cases[i].so; i++) {
        snprintf(body, sizeof body, "{\"model\":\"m\",\"stream\":true,\"stream_options\":%s}", cases[i].so);
        cr_assert_eq(agree_s(body), 0, "left to jansson: %s", body);
        gx_maas_body b;
        cr_assert_eq(gx_maas_body_scan(body, strlen(body), &b), 0);
        cr_assert_eq(b.stream_opts_bad, cases[i].bad, "%s", body);
    }
    gx_maas_body b;
    cr_assert_eq(gx_maas_body_scan("{\"model\":\"m\"}", 13, &b), 0);
    cr_assert_eq(b.stream_opts_bad, 0, "absent is not bad");
}
