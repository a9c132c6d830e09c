/* Unit tests of src/maas/scrape.c: keeping a model server's vllm:* families, labelled
 * with the gateway's model and replica, and merging those of several replicas into
 * valid exposition text. Exact expected texts for the forms vLLM writes (gauge with
 * labels, counter named with _total, histogram), label escaping, the bounds, and lines
 * that are not exposition text: hand-written ones, and vLLM-like text mutated at random
 * with a fixed seed, whose output must still be only well-formed vllm: lines. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "maas/scrape.h"
#include "test_mutate.h"

static char *filter(const char *in, const char *model, int replica, int *cut)
{
    return gx_maas_scrape_filter(in, strlen(in), model, replica, cut);
}

#define VLLM_TEXT                                                                                   \
    "# HELP python_gc_objects_collected_total Objects collected during gc\n"                        \
    "# TYPE python_gc_objects_collected_total counter\n"                                            \
    "python_gc_objects_collected_total{generation=\"0\"} 1207.0\n"                                  \
    "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"            \
    "# TYPE vllm:num_requests_running gauge\n"                                                      \
    "vllm:num_requests_running{model_name=\"m\"} 2.0\n"                                             \
    "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"                         \
    "# TYPE vllm:prompt_tokens_total counter\n"                                                     \
    "vllm:prompt_tokens_total{model_name=\"m\"} 42.0\n"                                             \
    "# HELP vllm:e2e_request_latency_seconds Latency.\n"                                            \
    "# TYPE vllm:e2e_request_latency_seconds histogram\n"                                           \
    "vllm:e2e_request_latency_seconds_bucket{le=\"1.0\",model_name=\"m\"} 3.0\n"                    \
    "vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 4.0\n"                   \
    "vllm:e2e_request_latency_seconds_count{model_name=\"m\"} 4.0\n"                                \
    "vllm:e2e_request_latency_seconds_sum{model_name=\"m\"} 2.5\n"                                  \
    "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"           \
    "# TYPE process_cpu_seconds_total counter\n"                                                    \
    "process_cpu_seconds_total 12.5\n"

#define OURS(r) "gpuaas_model=\"llama\",gpuaas_replica=\"" #r "\""

Test(maas_scrape, keeps_only_vllm_families_relabelled)
{
    int cut = -1;
    char *t = filter(VLLM_TEXT, "llama", 0, &cut);
    cr_assert_str_eq(t,
        "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
        "# TYPE vllm:num_requests_running gauge\n"
        "vllm:num_requests_running{model_name=\"m\"," OURS(0) "} 2.0\n"
        "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
        "# TYPE vllm:prompt_tokens_total counter\n"
        "vllm:prompt_tokens_total{model_name=\"m\"," OURS(0) "} 42.0\n"
        "# HELP vllm:e2e_request_latency_seconds Latency.\n"
        "# TYPE vllm:e2e_request_latency_seconds histogram\n"
        "vllm:e2e_request_latency_seconds_bucket{le=\"1.0\",model_name=\"m\"," OURS(0) "} 3.0\n"
        "vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\",model_name=\"m\"," OURS(0) "} 4.0\n"
        "vllm:e2e_request_latency_seconds_count{model_name=\"m\"," OURS(0) "} 4.0\n"
        "vllm:e2e_request_latency_seconds_sum{model_name=\"m\"," OURS(0) "} 2.5\n");
    cr_assert_eq(cut, 0);
    free(t);
}

Test(maas_scrape, labels_added_with_and_without_existing_ones_and_timestamps_kept)
{
    int cut;
    char *t = filter("vllm:a 1\n"                              /* no labels */
                     "vllm:b{} 2 1700000000000\n"              /* empty set, timestamp */
                     "vllm:c{x=\"1\",} -3e-2\r\n"              /* trailing comma, CRLF */
                     "vllm:d{ x = \"a\\\"b\" }\t+Inf   -17\n"  /* blanks, escaped quote, negative stamp */
                     "vllm:e NaN\n",
                     "llama", 3, &cut);
    cr_assert_str_eq(t,
        "# TYPE vllm:a untyped\nvllm:a{" OURS(3) "} 1\n"
        "# TYPE vllm:b untyped\nvllm:b{" OURS(3) "} 2 1700000000000\n"
        "# TYPE vllm:c untyped\nvllm:c{x=\"1\"," OURS(3) "} -3e-2\n"
        "# TYPE vllm:d untyped\nvllm:d{x = \"a\\\"b\"," OURS(3) "} +Inf -17\n"
        "# TYPE vllm:e untyped\nvllm:e{" OURS(3) "} NaN\n");
    free(t);
}

Test(maas_scrape, model_name_escaped_as_a_label_value)
{
    int cut;
    char *t = filter("vllm:a 1\n", "we\"ird\\na\nme", 12, &cut);
    cr_assert_str_eq(t, "# TYPE vllm:a untyped\nvllm:a{gpuaas_model=\"we\\\"ird\\\\na\\nme\",gpuaas_replica=\"12\"} 1\n");
    free(t);
}

Test(maas_scrape, merge_groups_families_of_all_replicas)
{
    int cut;
    char *a = filter(VLLM_TEXT, "llama", 0, &cut);
    /* replica 1 reports in another order, without HELP, and a family replica 0 lacks */
    char *b = filter("# TYPE vllm:prompt_tokens_total counter\n"
                     "vllm:prompt_tokens_total{model_name=\"m\"} 7.0\n"
                     "# TYPE vllm:num_requests_running gauge\n"
                     "vllm:num_requests_running{model_name=\"m\"} 0.0\n"
                     "# HELP vllm:gpu_cache_usage_perc KV-cache usage.\n"
                     "# TYPE vllm:gpu_cache_usage_perc gauge\n"
                     "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n",
                     "llama", 1, &cut);
    const char *texts[] = {a, b};
    gx_sbuf out = {0};
    gx_maas_scrape_merge(texts, 2, &out);
    cr_assert_str_eq(out.p,
        "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
        "# TYPE vllm:num_requests_running gauge\n"
        "vllm:num_requests_running{model_name=\"m\"," OURS(0) "} 2.0\n"
        "vllm:num_requests_running{model_name=\"m\"," OURS(1) "} 0.0\n"
        "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
        "# TYPE vllm:prompt_tokens_total counter\n"
        "vllm:prompt_tokens_total{model_name=\"m\"," OURS(0) "} 42.0\n"
        "vllm:prompt_tokens_total{model_name=\"m\"," OURS(1) "} 7.0\n"
        "# HELP vllm:e2e_request_latency_seconds Latency.\n"
        "# TYPE vllm:e2e_request_latency_seconds histogram\n"
        "vllm:e2e_request_latency_seconds_bucket{le=\"1.0\",model_name=\"m\"," OURS(0) "} 3.0\n"
        "vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\",model_name=\"m\"," OURS(0) "} 4.0\n"
        "vllm:e2e_request_latency_seconds_count{model_name=\"m\"," OURS(0) "} 4.0\n"
        "vllm:e2e_request_latency_seconds_sum{model_name=\"m\"," OURS(0) "} 2.5\n"
        "# HELP vllm:gpu_cache_usage_perc KV-cache usage.\n"
        "# TYPE vllm:gpu_cache_usage_perc gauge\n"
        "vllm:gpu_cache_usage_perc{model_name=\"m\"," OURS(1) "} 0.5\n");
    free(out.p);
    free(a);
    free(b);
}

Test(maas_scrape, merge_of_a_family_split_within_one_text)
{
    /* a server that writes a family in two places still gets one TYPE */
    int cut;
    char *a = filter("# TYPE vllm:x gauge\nvllm:x{k=\"1\"} 1\n# TYPE vllm:y gauge\nvllm:y 2\n# TYPE vllm:x gauge\nvllm:x{k=\"2\"} 3\n",
                     "llama", 0, &cut);
    const char *texts[] = {a};
    gx_sbuf out = {0};
    gx_maas_scrape_merge(texts, 1, &out);
    cr_assert_str_eq(out.p, "# TYPE vllm:x gauge\nvllm:x{k=\"1\"," OURS(0) "} 1\nvllm:x{k=\"2\"," OURS(0) "} 3\n"
                            "# TYPE vllm:y gauge\nvllm:y{" OURS(0) "} 2\n");
    free(out.p);
    free(a);
    out = (gx_sbuf){0};
    gx_maas_scrape_merge(NULL, 0, &out); /* nothing to merge: nothing written */
    cr_assert_eq(out.n, 0);
}

Test(maas_scrape, too_many_samples_cut_at_the_limit)
{
    size_t cap = 64u << 10 << 1, n = 0;
    char *in = malloc(cap);
    n += (size_t)sprintf(in, "# TYPE vllm:s gauge\n");
    for (int i = 0; i < GX_MAAS_SCRAPE_MAX_SAMPLES + 500; i++) n += (size_t)sprintf(in + n, "vllm:s{i=\"%d\"} %d\n", i, i);
    int cut;
    char *t = gx_maas_scrape_filter(in, n, "llama", 0, &cut);
    cr_assert_eq(cut, 1);
    int lines = 0;
    for (const char *p = t; (p = strchr(p, '\n')); p++) lines++;
    cr_assert_eq(lines, 1 + GX_MAAS_SCRAPE_MAX_SAMPLES, "the TYPE line and exactly the first %d samples", GX_MAAS_SCRAPE_MAX_SAMPLES);
    char last[128];
    snprintf(last, sizeof last, "vllm:s{i=\"%d\"," OURS(0) "} %d\n", GX_MAAS_SCRAPE_MAX_SAMPLES - 1, GX_MAAS_SCRAPE_MAX_SAMPLES - 1);
    cr_assert(strlen(t) > strlen(last) && !strcmp(t + strlen(t) - strlen(last), last), "ends with the last sample kept");
    free(t);
    free(in);
}

Test(maas_scrape, too_much_text_cut_on_a_line)
{
    /* 600 samples of 1 KiB each: more than the 256 KiB kept, fewer than the sample limit */
    size_t cap = 1u << 20, n = 0;
    char *in = malloc(cap), pad[1001];
    memset(pad, 'x', 1000);
    pad[1000] = 0;
    for (int i = 0; i < 600; i++) n += (size_t)snprintf(in + n, cap - n, "vllm:big{i=\"%d\",pad=\"%s\"} 1\n", i, pad);
    int cut;
    char *t = gx_maas_scrape_filter(in, n, "llama", 0, &cut);
    size_t len = strlen(t);
    cr_assert_eq(cut, 1);
    cr_assert(len <= GX_MAAS_SCRAPE_MAX_KEEP && len > GX_MAAS_SCRAPE_MAX_KEEP - 1200, "kept %zu bytes", len);
    cr_assert_eq(t[len - 1], '\n', "whole lines only");
    cr_assert(strstr(t, "vllm:big{i=\"0\","), "the first samples are kept");
    cr_assert_null(strstr(t, "vllm:big{i=\"599\","), "the last ones are not");
    free(t);
    free(in);
    /* under the bounds nothing is cut */
    t = filter("vllm:small 1\n", "llama", 0, &cut);
    cr_assert_eq(cut, 0);
    free(t);
}

Test(maas_scrape, garbage_lines_are_skipped)
{
    int cut;
    char *t = filter("vllm:ok 1\n"
                     "vllm:novalue\n"
                     "vllm:badvalue 1x\n"
                     "vllm:two values 1 2 3\n"
                     "vllm:badstamp 1 12.5\n"
                     "vllm:unclosed{a=\"1\" 1\n"
                     "vllm:unquoted{a=1} 1\n"
                     "vllm:badesc{a=\"\\q\"} 1\n"
                     "vllm:ours{gpuaas_model=\"x\"} 1\n"     /* would duplicate our label */
                     "vllm:ours2{gpuaas_replica=\"0\"} 1\n"
                     "vllm:nospace{a=\"1\"}1\n"
                     "1vllm:digitfirst 1\n"
                     "  vllm:indented 1\n"
                     "\n\n\r\n"
                     "# just a comment\n"
                     "# HELP\n"
                     "# TYPE vllm:t\n"
                     "{a=\"1\"} 1\n"
                     "vllm:okay_too 2\n"
                     "vllm:last_no_newline 3",
                     "llama", 0, &cut);
    cr_assert_str_eq(t, "# TYPE vllm:ok untyped\nvllm:ok{" OURS(0) "} 1\n"
                        "# TYPE vllm:okay_too untyped\nvllm:okay_too{" OURS(0) "} 2\n"
                        "# TYPE vllm:last_no_newline untyped\nvllm:last_no_newline{" OURS(0) "} 3\n");
    free(t);
}

Test(maas_scrape, lines_must_be_utf8_without_control_bytes)
{
    int cut;
    char *t = filter("vllm:a{x=\"caf\xc3\xa9\"} 1\n"          /* UTF-8: kept as it is */
                     "vllm:b{x=\"\xff\"} 1\n"                 /* not UTF-8 */
                     "vllm:c{x=\"\xc0\xaf\"} 1\n"             /* overlong */
                     "vllm:d{x=\"\xed\xa0\x80\"} 1\n"         /* a surrogate */
                     "vllm:e{x=\"a\x01" "b\"} 1\n"               /* a control byte */
                     "# HELP vllm:f bell\x07\n# TYPE vllm:f gauge\nvllm:f 1\n",
                     "llama", 0, &cut);
    cr_assert_str_eq(t, "# TYPE vllm:a untyped\nvllm:a{x=\"caf\xc3\xa9\"," OURS(0) "} 1\n"
                        "# TYPE vllm:f gauge\nvllm:f{" OURS(0) "} 1\n");
    free(t);
}

Test(maas_scrape, metadata_checked)
{
    int cut;
    char *t = filter("# HELP vllm:h bad \\x escape\n"      /* HELP dropped, family kept */
                     "# TYPE vllm:h gauge\n"
                     "vllm:h 1\n"
                     "# TYPE vllm:u weird\n"               /* unknown type: untyped */
                     "vllm:u 1\n"
                     "# TYPE vllm:late gauge\n"
                     "vllm:late 1\n"
                     "# TYPE vllm:late counter\n"          /* a TYPE after samples is ignored */
                     "vllm:late{a=\"b\"} 2\n"
                     "# TYPE vllm:c counter\n"              /* a counter named without _total */
                     "vllm:c_total 5\n"
                     "vllm:c_created 1.7e9\n",
                     "llama", 0, &cut);
    cr_assert_str_eq(t, "# TYPE vllm:h gauge\nvllm:h{" OURS(0) "} 1\n"
                        "# TYPE vllm:u untyped\nvllm:u{" OURS(0) "} 1\n"
                        "# TYPE vllm:late gauge\nvllm:late{" OURS(0) "} 1\nvllm:late{a=\"b\"," OURS(0) "} 2\n"
                        "# TYPE vllm:c counter\nvllm:c_total{" OURS(0) "} 5\nvllm:c_created{" OURS(0) "} 1.7e9\n");
    free(t);
}

/* Every line the filter writes is a HELP or TYPE of a vllm: family or a vllm: sample
 * carrying our two labels last. */
static void check_lines(const char *t)
{
    for (const char *p = t; *p;) {
        const char *e = strchr(p, '\n');
        cr_assert_not_null(e, "unterminated line: %s", p);
        size_t n = (size_t)(e - p);
        int meta = !strncmp(p, "# HELP vllm:", 12) || !strncmp(p, "# TYPE vllm:", 12);
        cr_assert(meta || !strncmp(p, "vllm:", 5), "line kept: %.*s", (int)n, p);
        if (!meta) cr_assert_not_null(memmem(p, n, OURS(0) "} ", sizeof OURS(0) + 1), "our labels: %.*s", (int)n, p);
        for (size_t i = 0; i < n; i++) cr_assert(p[i] != '\r' && p[i] != 0, "control byte in: %.*s", (int)n, p);
        p = e + 1;
    }
}

Test(maas_scrape, random_mutations_never_pass_on_a_malformed_line)
{
    gx_rng_seed(rs, 11);
    static const char alphabet[] = "{}\",=\\ \n#:_0123456789.eE+-vlmIfNa";
    char buf[sizeof VLLM_TEXT + 64];
    for (int round = 0; round < 20000; round++) {
        size_t n = sizeof VLLM_TEXT - 1;
        memcpy(buf, VLLM_TEXT, n);
        mutate(buf, &n, sizeof buf, alphabet);
        int cut;
        char *t = gx_maas_scrape_filter(buf, n, "llama", 0, &cut);
        check_lines(t);
        const char *texts[] = {t, t};
        gx_sbuf out = {0};
        gx_maas_scrape_merge(texts, 2, &out);
        if (out.p) check_lines(out.p);
        free(out.p);
        free(t);
    }
}
