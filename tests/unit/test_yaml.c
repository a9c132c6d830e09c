/* Unit tests for the YAML<->JSON bridge: scalars, line numbers, rejections, round trip. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "lib/yaml.h"

static json_t *one(const char *y)
{
    gx_yaml_docs d;
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_yaml_parse(y, strlen(y), &d, &e), 0, "parse failed: %s", e.msg);
    cr_assert_eq(d.n, 1);
    json_t *v = json_incref(d.docs[0]);
    gx_yaml_docs_free(&d);
    return v;
}

Test(yaml, core_schema_scalars)
{
    json_t *v = one("a: 1\nb: \"1\"\nc: true\nd: ~\ne: 1.5\nf: 500m\ng: on\nh: ''\ni: 36Gi\n");
    cr_assert(json_is_integer(json_object_get(v, "a")));
    cr_assert(json_is_string(json_object_get(v, "b")));
    cr_assert(json_is_true(json_object_get(v, "c")));
    cr_assert(json_is_null(json_object_get(v, "d")));
    cr_assert(json_is_real(json_object_get(v, "e")));
    cr_assert_str_eq(json_string_value(json_object_get(v, "f")), "500m");
    cr_assert_str_eq(json_string_value(json_object_get(v, "g")), "on"); /* YAML 1.2: a string */
    cr_assert_str_eq(json_string_value(json_object_get(v, "h")), "");
    cr_assert_str_eq(json_string_value(json_object_get(v, "i")), "36Gi");
    json_decref(v);
}

Test(yaml, multi_document_and_lines)
{
    const char *y = "kind: A\n---\n# comment\nkind: B\nspec:\n  items:\n  - name: x\n    value: 3\n---\n";
    gx_yaml_docs d;
    gx_err e;
    cr_assert_eq(gx_yaml_parse(y, strlen(y), &d, &e), 0);
    cr_assert_eq(d.n, 2);
    cr_assert_str_eq(json_string_value(json_object_get(d.docs[1], "kind")), "B");
    cr_assert_eq(gx_linemap_line(d.lines[1], "spec.items[0].value"), 8);
    cr_assert_eq(gx_linemap_line(d.lines[1], "spec.items[0].missing"), 7); /* nearest ancestor */
    gx_yaml_docs_free(&d);
}

Test(yaml, rejects_aliases_duplicates_and_syntax)
{
    gx_yaml_docs d;
    gx_err e;
    const char *alias = "a: &x [1]\nb: *x\n";
    cr_assert_eq(gx_yaml_parse(alias, strlen(alias), &d, &e), -1);
    cr_assert(strstr(e.msg, "anchor") || strstr(e.msg, "alias"));
    const char *dup = "a: 1\nb: 2\na: 3\n";
    cr_assert_eq(gx_yaml_parse(dup, strlen(dup), &d, &e), -1);
    cr_assert(strstr(e.msg, "duplicate key"));
    cr_assert_eq(e.line, 3);
    const char *bad = "a: [1, 2\nb: 3\n";
    cr_assert_eq(gx_yaml_parse(bad, strlen(bad), &d, &e), -1);
    cr_assert(e.line > 0);
    cr_assert(strstr(e.msg, "YAML syntax error"));
}

Test(yaml, depth_limit)
{
    char buf[1000] = "";
    for (int i = 0; i < 80; i++) strcat(buf, "[");
    for (int i = 0; i < 80; i++) strcat(buf, "]");
    gx_yaml_docs d;
    gx_err e;
    cr_assert_eq(gx_yaml_parse(buf, strlen(buf), &d, &e), -1);
    cr_assert(strstr(e.msg, "deeper"));
}

Test(yaml, emit_round_trip)
{
    const char *y =
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\nmetadata:\n  name: team-a\n"
        "spec:\n  namespaceSelector: {}\n  resourceGroups:\n  - coveredResources: [cpu, \"nvidia.com/gpu\"]\n"
        "    flavors:\n    - name: h100\n      resources:\n      - name: cpu\n        nominalQuota: \"16\"\n"
        "      - {name: nvidia.com/gpu, nominalQuota: 2}\n  note: \"on\"\n  tricky: \"a: b\"\n  empty: \"\"\n  list: []\n";
    json_t *a = one(y);
    char *out = gx_yaml_emit(a);
    json_t *b = one(out);
    cr_assert(json_equal(a, b), "round trip differs:\n%s", out);
    cr_assert(strstr(out, "\"16\"") != NULL, "numeric-looking string must be quoted:\n%s", out);
    free(out);
    json_decref(a);
    json_decref(b);
}

/* Found by fuzz/fuzz_yaml.c: a key of 256 bytes or more was taken from JSON but refused
 * in YAML, so a manifest read one way and not the other (and the emitter wrote YAML the
 * parser refused). A Kubernetes annotation key may be 253 + 1 + 63 bytes. */
Test(yaml, long_keys_read_as_in_json)
{
    char key[318], j[400];
    memset(key, 'a', 253);
    key[253] = '/';
    memset(key + 254, 'b', 63);
    key[317] = 0;
    snprintf(j, sizeof j, "{\"metadata\":{\"annotations\":{\"%s\":\"v\"}}}", key);
    gx_yaml_docs d;
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_manifest_parse(j, strlen(j), &d, &e), 0, "%s", e.msg);
    char *y = gx_yaml_emit(d.docs[0]);
    json_t *b = one(y);
    cr_assert(json_equal(d.docs[0], b), "round trip differs:\n%s", y);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_object_get(b, "metadata"), "annotations"), key)), "v");
    json_decref(b);
    free(y);
    gx_yaml_docs_free(&d);
}

Test(yaml, manifest_json_list)
{
    const char *j = "{\"kind\":\"List\",\"items\":[{\"kind\":\"A\"},{\"kind\":\"B\"}]}";
    gx_yaml_docs d;
    gx_err e;
    cr_assert_eq(gx_manifest_parse(j, strlen(j), &d, &e), 0);
    cr_assert_eq(d.n, 2);
    gx_yaml_docs_free(&d);
    const char *bad = "{\"a\": 1, \"a\": 2}";
    cr_assert_eq(gx_manifest_parse(bad, strlen(bad), &d, &e), -1);
    const char *empty = "  \n";
    cr_assert_eq(gx_manifest_parse(empty, strlen(empty), &d, &e), -1);
}

/* The bug: `-o yaml` printed `pciBusId: 00000000:17:00.0`, which a YAML 1.1 reader
 * (kubectl, PyYAML) takes for the sexagesimal float 1020.0. Every string that a 1.1 or
 * 1.2 reader would read as a number, boolean, null or timestamp must come out quoted. */
Test(yaml, emit_quotes_what_yaml11_reads_as_another_type)
{
    const char *typed[] = {"00000000:17:00.0", "1:20", "190:20:30", "0x1F", "0o17", "0b101", "017", "1_000",
                           ".inf", "-.Inf", ".NaN", "1e3", "6.02E+23", "1.", "yes", "No", "ON", "off", "y", "N",
                           "TRUE", "false", "~", "null", "NULL", "Null", "2026-12-01", "2026-12-01T15:56:48.123Z",
                           "2001-12-14 21:59:43.10 -5", "<<", "=", "+12", "-0"};
    for (size_t i = 0; i < sizeof typed / sizeof typed[0]; i++) {
        json_t *o = json_pack("{s:s}", "v", typed[i]);
        char *out = gx_yaml_emit(o);
        char want[128];
        snprintf(want, sizeof want, "v: \"%s\"\n", typed[i]);
        cr_assert_str_eq(out, want, "'%s' must be quoted", typed[i]);
        json_t *back = one(out);
        cr_assert(json_equal(o, back), "'%s' does not read back", typed[i]);
        free(out);
        json_decref(back);
        json_decref(o);
    }
}

Test(yaml, emit_leaves_plain_what_reads_back_as_itself)
{
    const char *plain[] = {"nginx:1.2.3", "500m", "1.2.3", "-foo", "nvidia.com/gpu", "team-a", "10.0.0.1",
                           "a:b", "yesterday", "nope", "0x", "12ab", "café", "H100-80GB", "2026-12-01x"};
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++) {
        json_t *o = json_pack("{s:s}", "v", plain[i]);
        char *out = gx_yaml_emit(o);
        char want[128];
        snprintf(want, sizeof want, "v: %s\n", plain[i]);
        cr_assert_str_eq(out, want, "'%s' need not be quoted", plain[i]);
        free(out);
        json_decref(o);
    }
}

Test(yaml, emit_block_style_two_spaces_in_key_order)
{
    json_t *v = json_pack("{s:s, s:{s:[{s:s, s:i}, [i, i], []], s:{}, s:b, s:n, s:f}}", "kind", "Workload", "status",
                          "pods", "name", "p-0", "index", 0, 1, 2, "empty", "ok", 1, "none", "ratio", 0.5);
    char *out = gx_yaml_emit(v);
    cr_assert_str_eq(out, "kind: Workload\nstatus:\n  pods:\n  - name: p-0\n    index: 0\n  - - 1\n    - 2\n  - []\n"
                          "  empty: {}\n  ok: true\n  none: null\n  ratio: 0.5\n");
    json_t *back = one(out);
    cr_assert(json_equal(v, back));
    free(out);
    json_decref(back);
    json_decref(v);
}

/* A string of several lines (a ConfigMap holding a document) goes out as a literal block,
 * line by line, and reads back byte for byte; one that a block cannot hold exactly
 * (trailing spaces on a line) still round-trips. */
Test(yaml, emit_lines_as_literal_block)
{
    const char *texts[] = {"version: v1\nsharing:\n  timeSlicing:\n    resources: []\n", "no newline at end\nsecond",
                           "trailing space \nhere\n", "\n\nleading blank lines\n"};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        json_t *a = json_pack("{s:{s:s}}", "data", "config.yaml", texts[i]);
        char *out = gx_yaml_emit(a);
        json_t *b = one(out);
        cr_assert(json_equal(a, b), "round trip differs for text %zu:\n%s", i, out);
        if (i == 0) cr_assert(strstr(out, "config.yaml: |\n    version: v1\n    sharing:\n") != NULL, "not a literal block:\n%s", out);
        json_decref(a);
        json_decref(b);
        free(out);
    }
}
