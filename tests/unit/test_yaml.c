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
