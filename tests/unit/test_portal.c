/* Unit tests for the portal's pure parts: HTML escaping and the formatter, form
 * decoding with its limits, CSRF token checks, Template validation (every shipped
 * example must pass; broken ones must say why), typed values and manifest rendering. */
#include <criterion/criterion.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include "lib/yaml.h"
#include "portal/html.h"
#include "portal/portal_int.h"
#include "portal/template.h"

static json_t *yaml1(const char *y)
{
    gx_yaml_docs d;
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_yaml_parse(y, strlen(y), &d, &e), 0, "yaml: %s", e.msg);
    json_t *v = json_incref(d.docs[0]);
    gx_yaml_docs_free(&d);
    return v;
}

static json_t *file1(const char *path)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    return yaml1(buf);
}

Test(portal_html, escapes_every_dangerous_character)
{
    gx_sbuf b;
    gx_sbuf_init(&b);
    gx_portal_esc(&b, "<script>alert('x')</script> & \"q\" `t` a=b");
    cr_assert_str_eq(b.p, "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot; &#96;t&#96; a&#61;b");
    gx_sbuf_free(&b);
}

Test(portal_html, formatter_escapes_H_and_encodes_U)
{
    gx_sbuf b;
    gx_sbuf_init(&b);
    gx_portal_putf(&b, "<a href=\"/x/%U\" title=\"%H\">%s %d %zu %lld %.1f %%</a>", "a b/c", "\"><img>", "raw", -3, (size_t)7,
                   (long long)1 << 40, 2.25);
    cr_assert_str_eq(b.p, "<a href=\"/x/a%20b%2Fc\" title=\"&quot;&gt;&lt;img&gt;\">raw -3 7 1099511627776 2.2 %</a>");
    char *s = gx_sbuf_take(&b);
    cr_assert_eq(b.p, NULL);
    free(s);
    gx_portal_putf(&b, "%H", (const char *)NULL);
    s = gx_sbuf_take(&b);
    cr_assert_str_eq(s, "");
    free(s);
}

Test(portal_html, form_decoding_and_limits)
{
    const char *body = "a=1&b=x+y%21&b=second&empty=&flag";
    json_t *f = gx_portal_form_parse(body, strlen(body), 10, 100);
    cr_assert(f);
    cr_assert_str_eq(gx_portal_form_get(f, "a"), "1");
    cr_assert_str_eq(gx_portal_form_get(f, "b"), "x y!");
    cr_assert(json_is_array(json_object_get(f, "b")));
    cr_assert_str_eq(gx_portal_form_get(f, "empty"), "");
    cr_assert_str_eq(gx_portal_form_get(f, "flag"), "");
    cr_assert_str_eq(gx_portal_form_get(f, "missing"), "");
    json_decref(f);
    cr_assert_null(gx_portal_form_parse("a=%zz", 5, 10, 100), "bad escape accepted");
    cr_assert_null(gx_portal_form_parse("a=%00", 5, 10, 100), "NUL accepted");
    cr_assert_null(gx_portal_form_parse("a=%", 3, 10, 100), "truncated escape accepted");
    cr_assert_null(gx_portal_form_parse("a=%ff%fe", 8, 10, 100), "invalid UTF-8 accepted");
    cr_assert_null(gx_portal_form_parse("a=1&b=2&c=3", 11, 2, 100), "too many fields accepted");
    cr_assert_null(gx_portal_form_parse("a=123456", 8, 10, 5), "too long a value accepted");
}

Test(portal_csrf, tokens_are_random_and_checked_exactly)
{
    cr_assert(sodium_init() >= 0);
    gx_portal_session s;
    memset(&s, 0, sizeof s);
    gx_portal_random_token(s.csrf, sizeof s.csrf);
    cr_assert_eq(strlen(s.csrf), GX_PORTAL_CSRF_LEN);
    char other[64];
    gx_portal_random_token(other, sizeof other);
    cr_assert_str_neq(s.csrf, other);
    cr_assert(gx_portal_csrf_ok(&s, s.csrf));
    char wrong[64];
    snprintf(wrong, sizeof wrong, "%s", s.csrf);
    wrong[5] ^= 1;
    cr_assert_not(gx_portal_csrf_ok(&s, wrong));
    cr_assert_not(gx_portal_csrf_ok(&s, ""));
    cr_assert_not(gx_portal_csrf_ok(&s, NULL));
    cr_assert_not(gx_portal_csrf_ok(NULL, s.csrf));
    wrong[GX_PORTAL_CSRF_LEN - 1] = 0; /* a prefix is not the token */
    snprintf(wrong, sizeof wrong, "%.*s", GX_PORTAL_CSRF_LEN - 1, s.csrf);
    cr_assert_not(gx_portal_csrf_ok(&s, wrong));
}

Test(portal_template, shipped_examples_are_valid)
{
    const char *files[] = {"examples/templates/interactive-session.yaml", "examples/templates/batch-training.yaml",
                           "examples/templates/fine-tuning.yaml", "examples/templates/deploy-model.yaml"};
    for (size_t i = 0; i < 4; i++) {
        json_t *t = file1(files[i]);
        gx_err e;
        gx_err_clear(&e);
        cr_assert_eq(gx_portal_template_check(t, &e), 0, "%s: %s: %s", files[i], e.field, e.msg);
        json_decref(t);
    }
}

static const char *GOOD =
    "apiVersion: gpuaas.dev/v1alpha1\nkind: Template\nmetadata: {name: t1, title: T}\n"
    "spec:\n  parameters:\n    required: [ns, gpus]\n    properties:\n"
    "      ns: {type: string, ui:field: NamespacePicker}\n"
    "      gpus: {type: integer, title: GPUs, minimum: 1, maximum: 4, default: 1}\n"
    "      hours: {type: integer, minimum: 1, maximum: 8, default: 2}\n"
    "      name: {type: string, pattern: '^[a-z]+$', maxLength: 10}\n"
    "      debug: {type: boolean}\n"
    "      mode: {type: string, enum: [a, b], default: a}\n"
    "  manifest:\n    apiVersion: batch/v1\n    kind: Job\n"
    "    metadata:\n      name: 'job-${{ parameters.name }}'\n      namespace: '${{ parameters.ns }}'\n"
    "      labels: {max: '${{ parameters.hours * 3600 | string }}', who: '${{ user.name }}', opt: '${{ parameters.name }}'}\n"
    "    spec: {gpus: '${{ parameters.gpus }}', debug: '${{ parameters.debug }}', mode: 'M-${{ parameters.mode | lower }}'}\n";

static gx_err check_of(const char *yaml)
{
    json_t *t = yaml1(yaml);
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_portal_template_check(t, &e), -1, "accepted:\n%s", yaml);
    json_decref(t);
    return e;
}

static char *replace(const char *s, const char *from, const char *to)
{
    const char *p = strstr(s, from);
    cr_assert(p, "no %s", from);
    char *out = malloc(strlen(s) + strlen(to) + 1);
    sprintf(out, "%.*s%s%s", (int)(p - s), s, to, p + strlen(from));
    return out;
}

Test(portal_template, bad_templates_are_refused_with_the_reason)
{
    json_t *t = yaml1(GOOD);
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_portal_template_check(t, &e), 0, "%s: %s", e.field, e.msg);
    json_decref(t);
    struct { const char *from, *to, *msg; } cases[] = {
        {"minimum: 1, maximum: 4", "minimum: 5, maximum: 4", "minimum is larger"},
        {"default: 1}", "default: 9}", "default does not satisfy"},
        {"type: boolean", "type: object", "type must be"},
        {"pattern: '^[a-z]+$'", "pattern: '[a-'", "valid regular expression"},
        {"enum: [a, b], default: a", "enum: [a, 2], default: a", "enum[1]"},
        {"${{ parameters.ns }}", "${{ parameters.nope }}", "no parameter nope"},
        {"${{ user.name }}", "${{ secrets.x }}", "cannot evaluate"},
        {"kind: Job", "kind: Pod", "renders a batch/v1 Job"},
        {"ui:field: NamespacePicker", "ui:widget: fancy", "ui:widget must be"},
        {"debug: {type: boolean}", "debug: {type: boolean, format2: x}", "unknown keyword"},
        {"required: [ns, gpus]", "required: [ns, nothere]", "names no property"},
        {"name: t1", "name: T_1", "lowercase"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *y = replace(GOOD, cases[i].from, cases[i].to);
        gx_err x = check_of(y);
        cr_assert(strstr(x.msg, cases[i].msg), "case %zu: got \"%s: %s\", want \"%s\"", i, x.field, x.msg, cases[i].msg);
        free(y);
    }
    gx_err x = check_of("apiVersion: gpuaas.dev/v1alpha1\nkind: Template\nmetadata: {name: t}\nspec: {parameters: {properties: {}}}\n");
    cr_assert(strstr(x.msg, "missing"), "%s", x.msg);
    cr_assert_str_eq(x.field, "spec.manifest");
}

Test(portal_template, values_are_typed_and_checked)
{
    json_t *t = yaml1(GOOD), *nss = json_pack("[s]", "team-a");
    gx_err e;
    struct { const char *body, *field, *msg; } bad[] = {
        {"ns=team-b&gpus=1", "ns", "one of your namespaces"},
        {"ns=team-a&gpus=9", "gpus", "GPUs must be at most 4"},
        {"ns=team-a&gpus=0", "gpus", "at least 1"},
        {"ns=team-a&gpus=1.5", "gpus", "whole number"},
        {"ns=team-a&gpus=x", "gpus", "whole number"},
        {"ns=team-a&gpus=1&name=ABC", "name", "expected form"},
        {"ns=team-a&gpus=1&name=abcdefghijkl", "name", "at most 10"},
        {"ns=team-a&gpus=1&mode=c", "mode", "listed choices"},
        {"gpus=1", "ns", "required"},
        {"ns=team-a&ns=team-a&gpus=1", "ns", "more than once"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *f = gx_portal_form_parse(bad[i].body, strlen(bad[i].body), 50, 1000);
        gx_err_clear(&e);
        json_t *v = gx_portal_template_values(t, f, nss, &e);
        cr_assert_null(v, "case %zu accepted", i);
        cr_assert_str_eq(e.field, bad[i].field, "case %zu: field %s", i, e.field);
        cr_assert(strstr(e.msg, bad[i].msg), "case %zu: %s", i, e.msg);
        json_decref(f);
    }
    const char *ok = "ns=team-a&gpus=2&debug=on&mode=b";
    json_t *f = gx_portal_form_parse(ok, strlen(ok), 50, 1000);
    json_t *v = gx_portal_template_values(t, f, nss, &e);
    cr_assert(v, "%s", e.msg);
    cr_assert_eq(json_integer_value(json_object_get(v, "gpus")), 2);
    cr_assert_eq(json_integer_value(json_object_get(v, "hours")), 2, "default not used");
    cr_assert(json_is_true(json_object_get(v, "debug")));
    cr_assert_null(json_object_get(v, "name"), "an empty optional parameter has no value");
    json_t *m = gx_portal_template_render(t, v, "alice", &e);
    cr_assert(m, "%s", e.msg);
    json_t *md = json_object_get(m, "metadata"), *lb = json_object_get(md, "labels"), *spec = json_object_get(m, "spec");
    cr_assert_str_eq(json_string_value(json_object_get(md, "name")), "job-");
    cr_assert_str_eq(json_string_value(json_object_get(md, "namespace")), "team-a");
    cr_assert_str_eq(json_string_value(json_object_get(lb, "max")), "7200", "* and | string");
    cr_assert_str_eq(json_string_value(json_object_get(lb, "who")), "alice");
    cr_assert_null(json_object_get(lb, "opt"), "a lone empty parameter drops its key");
    cr_assert(json_is_integer(json_object_get(spec, "gpus")), "a lone expression keeps its type");
    cr_assert(json_is_true(json_object_get(spec, "debug")));
    cr_assert_str_eq(json_string_value(json_object_get(spec, "mode")), "M-b");
    json_decref(m);
    json_decref(v);
    json_decref(f);
    json_decref(nss);
    json_decref(t);
}

Test(portal_template, injected_values_stay_data)
{
    /* a value that looks like an expression is not evaluated again */
    json_t *t = yaml1(GOOD), *nss = json_pack("[s]", "team-a");
    json_t *f = json_pack("{s:s,s:s,s:s}", "ns", "team-a", "gpus", "1", "mode", "a");
    gx_err e;
    json_t *v = gx_portal_template_values(t, f, nss, &e);
    json_object_set_new(v, "name", json_string("${{ user.name }}"));
    json_t *m = gx_portal_template_render(t, v, "alice", &e);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(m, "metadata"), "name")), "job-${{ user.name }}");
    json_decref(m);
    json_decref(v);
    json_decref(f);
    json_decref(nss);
    json_decref(t);
}

/* Issue 16: a number printed with %g lost digits (1234567.125 became "1.23457e+06"), in
 * the rendered manifest and in the message naming a bound. */
Test(portal_template, numbers_render_exactly)
{
    json_t *t = yaml1("apiVersion: gpuaas.dev/v1alpha1\nkind: Template\nmetadata: {name: n, title: N}\n"
                      "spec:\n  parameters:\n    properties:\n"
                      "      mem: {type: number, title: Memory, minimum: 0.5, maximum: 2097152.25}\n"
                      "  manifest:\n    apiVersion: batch/v1\n    kind: Job\n    metadata: {name: n}\n"
                      "    spec: {s: '${{ parameters.mem | string }}', t: 'm-${{ parameters.mem }}', v: '${{ parameters.mem }}'}\n");
    json_t *nss = json_pack("[s]", "team-a");
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_portal_template_check(t, &e), 0, "%s: %s", e.field, e.msg);
    json_t *f = json_pack("{s:s}", "mem", "1234567.125");
    json_t *v = gx_portal_template_values(t, f, nss, &e);
    cr_assert(v, "%s", e.msg);
    json_t *m = gx_portal_template_render(t, v, "alice", &e);
    cr_assert(m, "%s", e.msg);
    json_t *spec = json_object_get(m, "spec");
    cr_assert_str_eq(json_string_value(json_object_get(spec, "s")), "1234567.125");
    cr_assert_str_eq(json_string_value(json_object_get(spec, "t")), "m-1234567.125");
    cr_assert(json_real_value(json_object_get(spec, "v")) == 1234567.125, "a lone expression keeps its value");
    json_decref(m);
    json_decref(v);
    json_decref(f);
    f = json_pack("{s:s}", "mem", "3000000");
    gx_err_clear(&e);
    cr_assert_null(gx_portal_template_values(t, f, nss, &e));
    cr_assert_str_eq(e.field, "mem");
    cr_assert(strstr(e.msg, "at most 2097152.25"), "%s", e.msg);
    json_decref(f);
    json_decref(nss);
    json_decref(t);
}

Test(portal_config, portal_config_is_checked)
{
    gx_err e;
    json_t *ok = yaml1("apiVersion: gpuaas.dev/v1alpha1\nkind: PortalConfig\nmetadata: {name: portal}\n"
                       "spec:\n  title: ACME\n  passwordLogin: false\n  authProxy:\n    enabled: true\n"
                       "    userHeader: X-Forwarded-User\n    trustedAddresses: [127.0.0.1]\n    adminGroups: [admins]\n"
                       "    groupNamespaces: {ml: [team-a]}\n");
    gx_err_clear(&e);
    cr_assert_eq(gx_portal_check_object(ok, &e), 0, "%s: %s", e.field, e.msg);
    json_decref(ok);
    struct { const char *spec, *field; } bad[] = {
        {"{authProxy: {enabled: yes}}", "spec.authProxy.enabled"},
        {"{authProxy: {enabled: true, trustedAddresses: [example.com]}}", "spec.authProxy.trustedAddresses"},
        {"{authProxy: {enabled: true, groupNamespaces: {ml: [Team_A]}}}", "spec.authProxy.groupNamespaces"},
        {"{authProxy: {enabled: true, userHedaer: X}}", "spec.authProxy"},
        {"{passwordLogin: 1}", "spec.passwordLogin"},
        {"{colour: red}", "spec"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char y[512];
        snprintf(y, sizeof y, "apiVersion: gpuaas.dev/v1alpha1\nkind: PortalConfig\nmetadata: {name: portal}\nspec: %s\n", bad[i].spec);
        json_t *d = yaml1(y);
        gx_err_clear(&e);
        cr_assert_eq(gx_portal_check_object(d, &e), -1, "case %zu accepted", i);
        cr_assert_str_eq(e.field, bad[i].field, "case %zu: %s: %s", i, e.field, e.msg);
        json_decref(d);
    }
    json_t *v1 = yaml1("apiVersion: gpuaas.dev/v1\nkind: Template\nmetadata: {name: t}\nspec: {}\n");
    cr_assert_eq(gx_portal_check_object(v1, &e), -1);
    cr_assert_str_eq(e.field, "apiVersion");
    json_decref(v1);
    gx_kind k[2];
    cr_assert_eq(gx_portal_kinds(NULL, k), 2);
    cr_assert_str_eq(k[0].kind, "Template");
    cr_assert_str_eq(k[1].kind, "PortalConfig");
    cr_assert_null(k[0].apply, "the portal reads its objects; nothing to apply");
}

Test(portal_models, only_models_of_the_users_tiers)
{
    json_t *models = json_pack("[{s:s,s:[s],s:[s,s]},{s:s,s:[s],s:[s]},{s:s,s:[s],s:[]}]",
                               "name", "open", "servedNames", "open-llm", "tiers", "free", "premium",
                               "name", "secret", "servedNames", "secret-llm", "tiers", "restricted",
                               "name", "none", "servedNames", "none-llm", "tiers");
    json_t *tiers = json_pack("[s,s]", "premium", "other");
    json_t *got = gx_portal_models_for(models, tiers);
    cr_assert_eq(json_array_size(got), 1);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(got, 0), "name")), "open");
    /* only the user's own tiers are named */
    json_t *t = json_object_get(json_array_get(got, 0), "tiers");
    cr_assert_eq(json_array_size(t), 1);
    cr_assert_str_eq(json_string_value(json_array_get(t, 0)), "premium");
    /* the input is left as it was */
    cr_assert_eq(json_array_size(json_object_get(json_array_get(models, 0), "tiers")), 2);
    json_decref(got);
    /* no tier: no model */
    json_t *none = json_array();
    got = gx_portal_models_for(models, none);
    cr_assert_eq(json_array_size(got), 0);
    json_decref(got);
    json_decref(none);
    json_decref(tiers);
    json_decref(models);
}

/* Chromium compiles pattern= with the `v` flag: a plain '-' in a class is an error there,
 * and an invalid pattern checks nothing (Bad_Key was accepted). */
Test(portal_html, patterns_translate_to_the_v_flag)
{
    char out[256];
    cr_assert_eq(gx_portal_html_pattern("^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", out, sizeof out), 0);
    cr_assert_str_eq(out, "^[a-z0-9]([\\-a-z0-9]*[a-z0-9])?$");
    cr_assert_eq(gx_portal_html_pattern("^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$", out, sizeof out), 0);
    cr_assert_str_eq(out, "^[a-z0-9]([\\-a-z0-9\\.]*[a-z0-9])?$");
    cr_assert_eq(gx_portal_html_pattern("^(/|s3://|https://)[^ ]+$", out, sizeof out), 0);
    cr_assert_str_eq(out, "^(/|s3://|https://)[^ ]+$");
    cr_assert_eq(gx_portal_html_pattern("[]a(-]x{2,3}\\-y}", out, sizeof out), 0);
    cr_assert_str_eq(out, "[\\]a\\(\\-]x{2,3}-y\\}");
    cr_assert_eq(gx_portal_html_pattern("[[:digit:]_]+", out, sizeof out), 0);
    cr_assert_str_eq(out, "[0-9_]+");
    cr_assert_eq(gx_portal_html_pattern("[[:punct:]]", out, sizeof out), -1, "an unknown class has no translation");
    cr_assert_eq(gx_portal_html_pattern("[[.a.]]", out, sizeof out), -1);
    cr_assert_eq(gx_portal_html_pattern("a\\", out, sizeof out), -1);
    cr_assert_eq(gx_portal_html_pattern("[abc", out, sizeof out), -1);
    cr_assert_eq(gx_portal_html_pattern("^[a-z]+$", out, 4), -1, "too long for out");
}

/* "queue team-a uses 2 of 1" and "QuotaReserved (not yet)" were the pages' words. */
Test(portal_words, scheduler_messages_in_plain_words)
{
    char out[600];
    cr_assert_eq(gx_portal_plain_message("waiting for 2 nvidia.com/gpu in flavor h100: queue team-a uses 1 of 2", out, sizeof out), 1);
    cr_assert_str_eq(out, "Waiting for quota: needs 2 GPUs, team-a has 1 free (of 2)");
    cr_assert_eq(gx_portal_plain_message("waiting for 1 nvidia.com/gpu in flavor h100: queue team-a uses 2 of 1, "
                                         "cohort lab can lend 3 (borrowingLimit reached)", out, sizeof out), 1);
    cr_assert_str_eq(out, "Waiting for quota: needs 1 GPU, team-a has 0 free (of 1); teams sharing with it (cohort lab) can "
                          "lend 3; it already borrows as much as it may");
    cr_assert_eq(gx_portal_plain_message("pod set main needs 4 nvidia.com/gpu in flavor h100, more than ClusterQueue team-a "
                                         "can ever get (2)", out, sizeof out), 1);
    cr_assert_str_eq(out, "Too big to ever start: needs 4 GPUs, team-a can never have more than 2");
    cr_assert_eq(gx_portal_plain_message("quota fits but no node has 2 free nvidia.com/gpu", out, sizeof out), 1);
    cr_assert_str_eq(out, "The quota is there, but no node has 2 GPUs free right now");
    cr_assert_eq(gx_portal_plain_message("cancelled by alice", out, sizeof out), 0);
    cr_assert_str_eq(out, "cancelled by alice");
    cr_assert_str_eq(gx_portal_plain_condition("QuotaReserved", 0), "Waiting for quota");
    cr_assert_str_eq(gx_portal_plain_condition("Admitted", 1), "Admitted: it may start");
    cr_assert_str_eq(gx_portal_plain_condition("SomethingNew", 1), "SomethingNew");
}
