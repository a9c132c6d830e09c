/* Unit tests for lib/k8sname: Kubernetes' label and subdomain rules, their exact
 * messages, the 63/64 and 253/254 boundaries, and generateName's shape. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include "lib/k8sname.h"
#include "test_repeat.h"

#define LABEL_MSG "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must " \
                  "start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for "     \
                  "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
#define SUBDOMAIN_MSG "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', " \
                      "and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "    \
                      "validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"

Test(k8sname, label_table)
{
    static const char *ok[] = {"a", "0", "my-name", "123-abc", "a-b-c", "a--b", "sample-job-x7k2p", NULL};
    static const char *bad[] = {"", "-a", "a-", "A", "my_name", "a/b", "../team-b/victim", "../../..", "..",
                                ".", "a b", "a.b", "é", "a\nb", NULL};
    for (int i = 0; ok[i]; i++) cr_expect(gx_k8s_is_label(ok[i]), "%s should be a label", ok[i]);
    for (int i = 0; bad[i]; i++) cr_expect(!gx_k8s_is_label(bad[i]), "%s should not be a label", bad[i]);
}

Test(k8sname, subdomain_table)
{
    static const char *ok[] = {"a", "example.com", "a.b.c", "my-name.v1", "0.0", "llama-3.1-8b", NULL};
    static const char *bad[] = {"", ".a", "a.", "a..b", "-a.b", "a-.b", "a.-b", "A.b", "a/b", "../team-b/victim",
                                "../../..", "a_b.c", NULL};
    for (int i = 0; ok[i]; i++) cr_expect(gx_k8s_is_subdomain(ok[i]), "%s should be a subdomain", ok[i]);
    for (int i = 0; bad[i]; i++) cr_expect(!gx_k8s_is_subdomain(bad[i]), "%s should not be a subdomain", bad[i]);
}

Test(k8sname, label_boundary_63_64)
{
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_k8s_check_label(repeat('a', 63), GX_K8S_LABEL_MAX, "metadata.name", &e), 0, "%s", e.msg);
    cr_assert_eq(gx_k8s_check_label(repeat('a', 64), GX_K8S_LABEL_MAX, "metadata.name", &e), -1);
    cr_assert_eq(e.status, 422);
    cr_assert_str_eq(e.field, "metadata.name");
    cr_assert(strstr(e.msg, ": must be no more than 63 characters"), "%s", e.msg);
    cr_assert(!strncmp(e.msg, "Invalid value: \"aaaa", 20), "%s", e.msg);
}

Test(k8sname, subdomain_boundary_253_254)
{
    gx_err e;
    gx_err_clear(&e);
    /* 253 characters of valid labels joined by dots */
    char name[300];
    snprintf(name, sizeof name, "%s.%s.%s.%s", repeat('a', 63), repeat('b', 63), repeat('c', 63), repeat('d', 61));
    cr_assert_eq(strlen(name), 253);
    cr_assert_eq(gx_k8s_check_subdomain(name, GX_K8S_SUBDOMAIN_MAX, "metadata.name", &e), 0, "%s", e.msg);
    strcat(name, "d");
    cr_assert_eq(gx_k8s_check_subdomain(name, GX_K8S_SUBDOMAIN_MAX, "metadata.name", &e), -1);
    cr_assert(strstr(e.msg, "\": must be no more than 253 characters"), "%s", e.msg);
    /* the long value is echoed cut, visibly, and the message is whole */
    cr_assert(strstr(e.msg, "...\": "), "%s", e.msg);
}

Test(k8sname, exact_messages)
{
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_k8s_check_label("../team-b/victim", 63, "metadata.name", &e), -1);
    cr_assert_str_eq(e.field, "metadata.name");
    cr_assert_str_eq(e.msg, "Invalid value: \"../team-b/victim\": " LABEL_MSG);
    cr_assert_eq(gx_k8s_check_subdomain("a/b", 253, "metadata.name", &e), -1);
    cr_assert_str_eq(e.msg, "Invalid value: \"a/b\": " SUBDOMAIN_MSG);
    cr_assert_eq(gx_k8s_check_label("a.b", 63, "metadata.namespace", &e), -1);
    cr_assert_str_eq(e.field, "metadata.namespace");
    cr_assert_str_eq(e.msg, "Invalid value: \"a.b\": must not contain dots");
    cr_assert_eq(gx_k8s_check_label(NULL, 63, "metadata.namespace", &e), -1);
    cr_assert_str_eq(e.msg, "Required value");
    /* both wrong: the length first, as Kubernetes lists it */
    cr_assert_eq(gx_k8s_check_label(repeat('A', 64), 63, "metadata.name", &e), -1);
    cr_assert(strstr(e.msg, "must be no more than 63 characters"), "%s", e.msg);
    /* a tighter limit of the caller's */
    cr_assert_eq(gx_k8s_check_label(repeat('a', 51), 50, "metadata.name", &e), -1);
    cr_assert(strstr(e.msg, "must be no more than 50 characters"), "%s", e.msg);
}

Test(k8sname, echo_is_quoted_like_go)
{
    gx_err e;
    gx_err_clear(&e);
    gx_k8s_check_label("a\"b\\c\nd\x01", 63, "metadata.name", &e);
    const char *want = "Invalid value: \"a\\\"b\\\\c\\nd\\x01\": ";
    cr_assert(!strncmp(e.msg, want, strlen(want)), "%s", e.msg);
    /* a long name of 2-byte characters is never cut inside one */
    char s[400] = "";
    for (int i = 0; i < 150; i++) strcat(s, "\xc3\xa9");
    gx_k8s_check_label(s, 63, "metadata.name", &e);
    const char *dots = strstr(e.msg, "...\"");
    cr_assert(dots);
    cr_assert_eq((unsigned char)dots[-1], 0xa9, "cut inside a character: %s", e.msg);
}

static uint32_t seq;
static uint32_t counter(uint32_t upper) { return seq++ % upper; }
static uint32_t too_big(uint32_t upper) { return upper + 3; }

Test(k8sname, generate_name_shape_and_alphabet)
{
    char out[64];
    seq = 0;
    cr_assert_eq(gx_k8s_generate_name("sample-job-", counter, out, sizeof out), 0);
    cr_assert_str_eq(out, "sample-job-bcdfg");
    for (int round = 0; round < 40; round++) {
        gx_k8s_generate_name("x-", counter, out, sizeof out);
        cr_assert_eq(strlen(out), 7);
        for (int i = 2; i < 7; i++) cr_assert(strchr(GX_K8S_GEN_ALPHABET, out[i]), "%c not in the alphabet", out[i]);
    }
    /* every letter of the alphabet comes out, and nothing else */
    seq = 0;
    char seen[32] = "";
    for (int i = 0; i < 6; i++) {
        gx_k8s_generate_name("", counter, out, sizeof out);
        strcat(seen, out);
    }
    for (const char *a = GX_K8S_GEN_ALPHABET; *a; a++) cr_assert(strchr(seen, *a), "%c never drawn", *a);
    cr_assert_eq(strlen(GX_K8S_GEN_ALPHABET), 27);
    /* a generator out of range still yields the alphabet */
    gx_k8s_generate_name("y-", too_big, out, sizeof out);
    cr_assert(strchr(GX_K8S_GEN_ALPHABET, out[2]));
}

Test(k8sname, generate_name_cuts_the_prefix_to_58)
{
    char out[64];
    seq = 0;
    cr_assert_eq(gx_k8s_generate_name(repeat('p', 100), counter, out, sizeof out), 0);
    cr_assert_eq(strlen(out), 63);
    cr_assert(!strncmp(out, repeat('p', 58), 58));
    cr_assert_eq(out[58], 'b');
    cr_assert(gx_k8s_is_label(out));
    char small[32];
    cr_assert_eq(gx_k8s_generate_name("a-", counter, small, sizeof small), -1);
}
