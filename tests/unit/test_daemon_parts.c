/* Unit tests of the daemon's building blocks that need no HTTP: the string map, the
 * SQLite store (a real database in a temporary folder), token minting and checking,
 * reading a Job's process side, and the process shim (real processes). */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "auth/auth.h"
#include "lib/strmap.h"
#include "lib/yaml.h"
#include "run/podspec.h"
#include "run/proc.h"
#include "store/store.h"

static char dir[64];

static void mkdir_tmp(void)
{
    snprintf(dir, sizeof dir, "/tmp/gpuaas-unit.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void rm_tmp(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(strmap, put_get_delete_grow)
{
    gx_strmap m;
    gx_strmap_init(&m);
    static int vals[5000];
    char k[32];
    for (int i = 0; i < 5000; i++) {
        snprintf(k, sizeof k, "ns/w-%d", i);
        gx_strmap_put(&m, k, &vals[i]);
    }
    cr_assert_eq(m.n, 5000);
    for (int i = 0; i < 5000; i += 2) {
        snprintf(k, sizeof k, "ns/w-%d", i);
        cr_assert_eq(gx_strmap_del(&m, k), &vals[i]);
    }
    cr_assert_eq(m.n, 2500);
    for (int i = 0; i < 5000; i++) {
        snprintf(k, sizeof k, "ns/w-%d", i);
        cr_assert_eq(gx_strmap_get(&m, k), i % 2 ? &vals[i] : NULL);
    }
    gx_strmap_put(&m, "ns/w-1", &vals[0]); /* replace */
    cr_assert_eq(gx_strmap_get(&m, "ns/w-1"), &vals[0]);
    cr_assert_eq(m.n, 2500);
    gx_strmap_free(&m);
}

Test(store, migrations_objects_workloads_survive_reopen, .init = mkdir_tmp, .fini = rm_tmp)
{
    gx_err e;
    gx_store *s = gx_store_open(dir, &e);
    cr_assert_not_null(s, "%s", e.msg);
    cr_assert_geq(gx_store_schema_version(s), 2); /* 2: the gateway's keys and usage */
    json_t *m = json_pack("{s:s,s:{s:s}}", "kind", "ResourceFlavor", "metadata", "name", "h100");
    cr_assert_eq(gx_store_put_object(s, "ResourceFlavor", "", "h100", m, 1, &e), 0);
    json_t *st = json_pack("{s:s}", "state", "Pending"), *run = json_object();
    cr_assert_eq(gx_store_put_workload(s, "team-a", "w1", m, st, run, 2, &e), 0);
    cr_assert_eq(gx_store_put_workload(s, "team-a", "w1", m, st, run, 3, &e), -1);
    cr_assert_eq(e.status, 409, "a duplicate is a conflict, got %d", e.status);
    /* a rolled back transaction leaves nothing */
    cr_assert_eq(gx_store_begin(s, &e), 0);
    cr_assert_eq(gx_store_put_workload(s, "team-a", "w2", m, st, run, 4, &e), 0);
    gx_store_rollback(s);
    gx_store_close(s);
    s = gx_store_open(dir, &e);
    cr_assert_not_null(s);
    json_t *objs = gx_store_objects(s, &e), *wls = gx_store_workloads(s, &e);
    cr_assert_eq(json_array_size(objs), 1);
    cr_assert_eq(json_array_size(wls), 1);
    cr_assert_str_eq(json_string_value(json_object_get(json_object_get(json_array_get(wls, 0), "status"), "state")), "Pending");
    cr_assert_eq(gx_store_delete_workload(s, "team-a", "w1", &e), 0);
    json_decref(wls);
    wls = gx_store_workloads(s, &e);
    cr_assert_eq(json_array_size(wls), 0);
    json_decref(objs);
    json_decref(wls);
    json_decref(m);
    json_decref(st);
    json_decref(run);
    gx_store_close(s);
}

Test(auth, tokens_are_hashed_checked_and_revoked, .init = mkdir_tmp, .fini = rm_tmp)
{
    gx_err e;
    gx_store *s = gx_store_open(dir, &e);
    gx_auth *a = gx_auth_open(s, dir, &e);
    cr_assert_not_null(a, "%s", e.msg);
    char admin[GX_TOKEN_MAX], alice[GX_TOKEN_MAX], hdr[GX_TOKEN_MAX + 16];
    cr_assert_eq(gx_auth_bootstrap(a, 0, admin, 1, &e), 1);
    cr_assert_eq(gx_auth_bootstrap(a, 0, hdr, 1, &e), 0, "second start mints nothing");
    json_t *ns = json_pack("[s]", "team-a");
    cr_assert_eq(gx_auth_create_user(a, "alice", 0, ns, alice, 2, &e), 0, "%s", e.msg);
    snprintf(hdr, sizeof hdr, "Bearer %s", alice);
    const gx_user *u = gx_auth_check(a, hdr);
    cr_assert_not_null(u);
    cr_assert_str_eq(u->name, "alice");
    cr_assert(gx_user_in_ns(u, "team-a"));
    cr_assert_not(gx_user_in_ns(u, "team-b"));
    /* one changed character of the secret is refused */
    hdr[strlen(hdr) - 1] ^= 1;
    cr_assert_null(gx_auth_check(a, hdr));
    cr_assert_null(gx_auth_check(a, "Bearer nonsense"));
    cr_assert_null(gx_auth_check(a, NULL));
    /* the secret is nowhere in the store's token table */
    json_t *toks = gx_store_tokens(s, &e);
    char *dump = json_dumps(toks, 0);
    cr_assert_null(strstr(dump, strrchr(alice, '_') + 1));
    free(dump);
    json_decref(toks);
    /* reopen: the same token works (hash + pepper on disk) */
    gx_auth_free(a);
    a = gx_auth_open(s, dir, &e);
    snprintf(hdr, sizeof hdr, "Bearer %s", alice);
    cr_assert_not_null(gx_auth_check(a, hdr));
    cr_assert_eq(gx_auth_delete_user(a, "alice", &e), 0);
    cr_assert_null(gx_auth_check(a, hdr), "a deleted user's token stops at once");
    snprintf(hdr, sizeof hdr, "Bearer %s", admin);
    cr_assert_not_null(gx_auth_check(a, hdr), "other users' tokens keep working");
    cr_assert_eq(gx_auth_delete_user(a, "admin", &e), -1);
    cr_assert_eq(gx_auth_create_user(a, "Not A Label", 0, ns, alice, 3, &e), -1);
    cr_assert_eq(e.status, 422);
    json_decref(ns);
    gx_auth_free(a);
    gx_store_close(s);
}

static json_t *job_from(const char *yaml)
{
    gx_yaml_docs d;
    gx_err e;
    cr_assert_eq(gx_yaml_parse(yaml, strlen(yaml), &d, &e), 0, "%s", e.msg);
    json_t *j = json_incref(d.docs[0]);
    gx_yaml_docs_free(&d);
    return j;
}

Test(podspec, reads_a_job_and_builds_argv_env)
{
    json_t *j = job_from(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: a, namespace: n}\n"
        "spec:\n  parallelism: 3\n  completions: 2\n  template:\n    spec:\n      terminationGracePeriodSeconds: 5\n"
        "      containers:\n      - name: c\n        image: img\n        command: [python3, train.py]\n"
        "        args: [--epochs, \"3\"]\n        env: [{name: EPOCHS, value: \"3\"}, {name: PATH, value: /opt/bin}]\n");
    gx_podspec ps;
    gx_err e;
    cr_assert_eq(gx_podspec_read(j, &ps, &e), 0, "%s", e.msg);
    cr_assert_eq(ps.parallelism, 2, "parallelism is capped by completions");
    cr_assert_eq(ps.completions, 2);
    cr_assert_eq(ps.backoff_limit, 6, "Kubernetes' default");
    cr_assert_eq(ps.grace_ms, 5000);
    cr_assert_str_eq(ps.image, "img");
    char **argv = gx_podspec_argv(&ps);
    cr_assert_str_eq(argv[0], "python3");
    cr_assert_str_eq(argv[3], "3");
    cr_assert_null(argv[4]);
    char **env = gx_podspec_envp(&ps, "n/a", 1, "GPU-x,GPU-y", NULL, NULL);
    int cuda = 0, path = 0, idx = 0;
    for (char **p = env; *p; p++) {
        cuda |= !strcmp(*p, "CUDA_VISIBLE_DEVICES=GPU-x,GPU-y");
        idx |= !strcmp(*p, "JOB_COMPLETION_INDEX=1");
        if (!strncmp(*p, "PATH=", 5)) { path++; cr_assert_str_eq(*p, "PATH=/opt/bin", "the Job's PATH wins"); }
    }
    cr_assert(cuda && idx);
    cr_assert_eq(path, 1);
    gx_podspec_free_vec(argv);
    gx_podspec_free_vec(env);
    json_decref(j);
}

Test(podspec, refuses_what_local_mode_cannot_run)
{
    const char *bad[][2] = {
        {"spec: {template: {spec: {containers: [{name: c, image: i}]}}}", "needs a command"},
        {"spec: {template: {spec: {containers: [{name: c, command: [a]}, {name: d, command: [b]}]}}}", "one container"},
        {"spec: {template: {spec: {containers: [{name: c, command: [sleep, 60]}]}}}", "must be a string"},
        {"spec: {parallelism: 0, template: {spec: {containers: [{name: c, command: [a]}]}}}", "between"},
        {"spec: {template: {spec: {containers: [{name: c, command: [a], env: [{name: X, valueFrom: {}}]}]}}}", "valueFrom"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char y[512];
        snprintf(y, sizeof y, "apiVersion: batch/v1\nkind: Job\nmetadata: {name: a}\n%s\n", bad[i][0]);
        json_t *j = job_from(y);
        gx_podspec ps;
        gx_err e;
        gx_err_clear(&e);
        cr_assert_eq(gx_podspec_read(j, &ps, &e), -1, "case %zu accepted", i);
        cr_assert_eq(e.status, 422);
        cr_assert_not_null(strstr(e.msg, bad[i][1]), "case %zu: '%s' lacks '%s'", i, e.msg, bad[i][1]);
        cr_assert(e.field[0], "case %zu names no field", i);
        json_decref(j);
    }
}

/* Real processes through the real shim (build/gpuaas-shim beside the test binary). */
static int wait_exit(gx_proc *p)
{
    for (int i = 0; i < 500; i++) {
        if (gx_proc_exited(p)) return 1;
        usleep(10000);
    }
    return 0;
}

Test(proc, shim_records_exit_code_and_signal, .init = mkdir_tmp, .fini = rm_tmp)
{
    char logp[128], exitp[128];
    snprintf(logp, sizeof logp, "%s/log", dir);
    snprintf(exitp, sizeof exitp, "%s/exit", dir);
    char *argv[] = {"sh", "-c", "echo hello-$X; exit 7", NULL};
    char *envp[] = {"PATH=/usr/bin:/bin", "X=world", NULL};
    gx_proc_spec spec = {argv, envp, dir, logp, exitp};
    gx_proc p;
    gx_err e;
    cr_assert_eq(gx_proc_start(&spec, &p, &e), 0, "%s", e.msg);
    cr_assert(p.pid > 0 && p.start_time > 0);
    cr_assert(wait_exit(&p));
    cr_assert_eq(gx_proc_start_error(&p), 0);
    int code = 0, sig = 0;
    cr_assert_eq(gx_proc_read_status(exitp, &code, &sig), 0);
    cr_assert_eq(code, 7);
    cr_assert_eq(sig, 0);
    FILE *f = fopen(logp, "r");
    char line[64] = "";
    cr_assert_not_null(fgets(line, sizeof line, f));
    fclose(f);
    cr_assert_str_eq(line, "hello-world\n");
    gx_proc_close(&p);

    /* SIGTERM to the group reaches the command; the shim survives to record it */
    char *argv2[] = {"sleep", "30", NULL};
    spec.argv = argv2;
    cr_assert_eq(gx_proc_start(&spec, &p, &e), 0);
    usleep(100000);
    cr_assert_eq(gx_proc_signal(&p, SIGTERM), 0);
    cr_assert(wait_exit(&p));
    cr_assert_eq(gx_proc_read_status(exitp, &code, &sig), 0);
    cr_assert_eq(sig, SIGTERM);
    cr_assert_eq(code, 128 + SIGTERM);
    gx_proc_close(&p);

    /* a command that does not exist is reported as such */
    char *argv3[] = {"no-such-command-gpuaas", NULL};
    spec.argv = argv3;
    cr_assert_eq(gx_proc_start(&spec, &p, &e), 0);
    cr_assert(wait_exit(&p));
    cr_assert_eq(gx_proc_start_error(&p), ENOENT);
    gx_proc_close(&p);
}

Test(proc, adopt_checks_identity)
{
    gx_proc p;
    cr_assert_eq(gx_proc_adopt(getpid(), gx_proc_start_time(getpid()), &p), 0);
    gx_proc_close(&p);
    cr_assert_eq(gx_proc_adopt(getpid(), gx_proc_start_time(getpid()) + 1, &p), -1, "a reused pid is not adopted");
    cr_assert_eq(gx_proc_adopt(0, 0, &p), -1);
}
