/* test_fleet_kubeconfig: fleet/kubeconfig.c against kubeconfig files written to a temp
 * folder: token, tokenFile (re-read), client certificate data, a CA file relative to the
 * kubeconfig, context choice, and errors that name the file and the field. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fleet/kubeconfig.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/gx-kcfg-XXXXXX");
    cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

TestSuite(fleet_kubeconfig, .init = setup, .fini = teardown);

static void put(const char *name, const char *text)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "w");
    cr_assert(f);
    fputs(text, f);
    fclose(f);
}

static int load(const char *ctx, gx_kubeconfig *k, gx_err *e)
{
    char p[256];
    snprintf(p, sizeof p, "%s/kube.yaml", dir);
    return gx_kubeconfig_load(p, ctx, k, e);
}

#define CLUSTERS                                                                 \
    "clusters:\n"                                                                \
    "- name: a\n  cluster:\n    server: https://127.0.0.1:6443/\n"                 \
    "    certificate-authority: certs/ca.pem\n"                                  \
    "- name: b\n  cluster:\n    server: https://b.example:443\n"                  \
    "    insecure-skip-tls-verify: true\n"

Test(fleet_kubeconfig, token_current_context_and_relative_ca)
{
    put("kube.yaml", "apiVersion: v1\nkind: Config\ncurrent-context: ca\n" CLUSTERS
                     "users:\n- name: u\n  user:\n    token: tok-123\n"
                     "contexts:\n- name: ca\n  context: {cluster: a, user: u, namespace: team-a}\n"
                     "- name: cb\n  context: {cluster: b, user: u}\n");
    gx_kubeconfig k;
    gx_err e;
    cr_assert_eq(load(NULL, &k, &e), 0, "%s: %s", e.field, e.msg);
    cr_assert_str_eq(k.context, "ca");
    cr_assert_str_eq(k.server, "https://127.0.0.1:6443");   /* the trailing '/' dropped */
    cr_assert_str_eq(k.ns, "team-a");
    char want[256];
    snprintf(want, sizeof want, "%s/certs/ca.pem", dir);
    cr_assert_str_eq(k.ca_file, want);
    cr_assert_eq(k.insecure, 0);
    char *t = gx_kubeconfig_bearer(&k, &e);
    cr_assert_str_eq(t, "tok-123");
    free(t);
    gx_kubeconfig_free(&k);

    cr_assert_eq(load("cb", &k, &e), 0, "%s", e.msg);
    cr_assert_str_eq(k.server, "https://b.example:443");
    cr_assert_eq(k.insecure, 1);
    cr_assert_null(k.ca_file);
    gx_kubeconfig_free(&k);
}

Test(fleet_kubeconfig, token_file_is_read_again_each_time)
{
    put("tok", "first\n");
    put("kube.yaml", "current-context: c\n" CLUSTERS "users:\n- name: u\n  user:\n    tokenFile: tok\n"
                     "contexts:\n- name: c\n  context: {cluster: a, user: u}\n");
    gx_kubeconfig k;
    gx_err e;
    cr_assert_eq(load(NULL, &k, &e), 0, "%s", e.msg);
    cr_assert_null(k.token);
    char *t = gx_kubeconfig_bearer(&k, &e);
    cr_assert_str_eq(t, "first");
    free(t);
    put("tok", "rotated");
    t = gx_kubeconfig_bearer(&k, &e);
    cr_assert_str_eq(t, "rotated");
    free(t);
    char p[256];
    snprintf(p, sizeof p, "%s/tok", dir);
    unlink(p);
    cr_assert_null(gx_kubeconfig_bearer(&k, &e));
    cr_assert(strstr(e.msg, "tok"), "%s", e.msg);
    gx_kubeconfig_free(&k);
}

Test(fleet_kubeconfig, client_certificate_data_is_decoded)
{
    /* "CERT-PEM" and "KEY-PEM" and "CA-PEM" in base64 */
    put("kube.yaml", "current-context: c\nclusters:\n- name: a\n  cluster:\n    server: https://h:1\n"
                     "    certificate-authority-data: Q0EtUEVN\n"
                     "users:\n- name: u\n  user:\n    client-certificate-data: Q0VSVC1QRU0=\n"
                     "    client-key-data: S0VZLVBFTQ==\n"
                     "contexts:\n- name: c\n  context: {cluster: a, user: u}\n");
    gx_kubeconfig k;
    gx_err e;
    cr_assert_eq(load(NULL, &k, &e), 0, "%s: %s", e.field, e.msg);
    cr_assert_eq(k.cert.n, 8);
    cr_assert_eq(memcmp(k.cert.p, "CERT-PEM", 8), 0);
    cr_assert_eq(k.key.n, 7);
    cr_assert_eq(memcmp(k.key.p, "KEY-PEM", 7), 0);
    cr_assert_eq(k.ca.n, 6);
    cr_assert_eq(memcmp(k.ca.p, "CA-PEM", 6), 0);
    cr_assert_null(gx_kubeconfig_bearer(&k, &e));   /* no token: none, and no error */
    cr_assert_str_eq(e.msg, "");
    gx_kubeconfig_free(&k);
}

Test(fleet_kubeconfig, client_certificate_files_relative_to_the_kubeconfig)
{
    put("c.pem", "CERT");
    put("k.pem", "KEY");
    put("kube.yaml", "current-context: c\n" CLUSTERS
                     "users:\n- name: u\n  user:\n    client-certificate: c.pem\n    client-key: k.pem\n"
                     "contexts:\n- name: c\n  context: {cluster: a, user: u}\n");
    gx_kubeconfig k;
    gx_err e;
    cr_assert_eq(load(NULL, &k, &e), 0, "%s", e.msg);
    cr_assert_eq(k.cert.n, 4);
    cr_assert_eq(k.key.n, 3);
    gx_kubeconfig_free(&k);
}

/* The error for kubeconfig text, whose message must name the file, field and words. */
static void bad(const char *text, const char *ctx, const char *field, const char *words)
{
    put("kube.yaml", text);
    gx_kubeconfig k;
    gx_err e;
    cr_assert_eq(load(ctx, &k, &e), -1, "accepted: %s", text);
    cr_assert_str_eq(e.field, field, "field %s, want %s (%s)", e.field, field, e.msg);
    cr_assert(strstr(e.msg, "kube.yaml"), "the file is not named: %s", e.msg);
    cr_assert(strstr(e.msg, words), "%s: want \"%s\"", e.msg, words);
}

Test(fleet_kubeconfig, errors_name_the_file_and_field)
{
    bad("current-context: c\n" CLUSTERS "users:\n- name: u\n  user:\n    exec: {command: aws}\n"
        "contexts:\n- name: c\n  context: {cluster: a, user: u}\n",
        NULL, "users[0].user.exec", "plugins are not supported");
    bad("current-context: c\n" CLUSTERS "users:\n- name: x\n  user: {}\n- name: u\n  user:\n    auth-provider: {name: gcp}\n"
        "contexts:\n- name: c\n  context: {cluster: a, user: u}\n",
        NULL, "users[1].user.auth-provider", "plugins are not supported");
    bad(CLUSTERS "contexts:\n- name: c\n  context: {cluster: a}\n", NULL, "current-context", "is not set");
    bad("current-context: c\n" CLUSTERS "contexts:\n- name: c\n  context: {cluster: a}\n", "nope", "contexts",
        "no context named \"nope\"");
    bad("current-context: c\n" CLUSTERS "contexts:\n- name: c\n  context: {cluster: zz}\n", NULL,
        "contexts[0].context.cluster", "no cluster named \"zz\"");
    bad("current-context: c\n" CLUSTERS "contexts:\n- name: c\n  context: {cluster: a, user: who}\n", NULL,
        "contexts[0].context.user", "no user named \"who\"");
    bad("current-context: c\nclusters:\n- name: a\n  cluster:\n    server: ftp://x\n"
        "contexts:\n- name: c\n  context: {cluster: a}\n",
        NULL, "clusters[0].cluster.server", "https://");
    bad("current-context: c\nclusters:\n- name: a\n  cluster:\n    server: https://x\n    certificate-authority-data: '%%%'\n"
        "contexts:\n- name: c\n  context: {cluster: a}\n",
        NULL, "clusters[0].cluster.certificate-authority-data", "base64");
    bad("current-context: c\n" CLUSTERS "users:\n- name: u\n  user:\n    client-certificate-data: Q0VSVC1QRU0=\n"
        "contexts:\n- name: c\n  context: {cluster: a, user: u}\n",
        NULL, "users[0].user.client-key", "is required");
    bad("current-context: c\n" CLUSTERS "users:\n- name: u\n  user:\n    client-certificate: missing.pem\n    client-key: k\n"
        "contexts:\n- name: c\n  context: {cluster: a, user: u}\n",
        NULL, "users[0].user.client-certificate", "missing.pem");
    bad("current-context: c\n" CLUSTERS "users:\n- name: u\n  user:\n    token: 5\n"
        "contexts:\n- name: c\n  context: {cluster: a, user: u}\n",
        NULL, "users[0].user.token", "must be a string");
}

Test(fleet_kubeconfig, a_missing_file_is_named)
{
    gx_kubeconfig k;
    gx_err e;
    cr_assert_eq(gx_kubeconfig_load("/nonexistent/kube.yaml", NULL, &k, &e), -1);
    cr_assert(strstr(e.msg, "/nonexistent/kube.yaml"), "%s", e.msg);
}

Test(fleet_kubeconfig, the_token_is_never_in_an_error)
{
    bad("current-context: c\n" CLUSTERS "users:\n- name: u\n  user:\n    token: SECRET-TOKEN\n    exec: {}\n"
        "contexts:\n- name: c\n  context: {cluster: a, user: u}\n",
        NULL, "users[0].user.exec", "plugins");
    gx_kubeconfig k;
    gx_err e;
    cr_assert_eq(load(NULL, &k, &e), -1);
    cr_assert_null(strstr(e.msg, "SECRET"), "%s", e.msg);
}
