/* Unit tests of gpuaas-shim (build/gpuaas-shim beside the test binary) through run/proc:
 * the outer mode's cgroup joining, its refusal to write through symlinks, the Job's
 * environment kept out of the shim; and the inner mode (--as) run directly, without bwrap:
 * its refusals, the identity switch itself (root), its failure without capabilities, and
 * its reports on fd 3. Tests that need root say so with cr_skip_test; waits are bounded. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "run/proc.h"
#include "run/sandbox.h"
#include "test_proc_util.h"

#define POD_UID 200123
#define POD_GID 200456

static struct {
    char dir[64], log[96], exitp[96], shim[4096];
    char out[8192];
} T;

/* A 0755 folder (the pod's uid must reach into it in the root tests). */
static void dir_make(void)
{
    fmt(T.dir, sizeof T.dir, "/tmp/gpuaas-shim.XXXXXX");
    cr_assert_not_null(mkdtemp(T.dir));
    cr_assert_eq(chmod(T.dir, 0755), 0);
    fmt(T.log, sizeof T.log, "%s/log", T.dir);
    fmt(T.exitp, sizeof T.exitp, "%s/exit", T.dir);
    cr_assert_eq(gx_proc_shim_path(T.shim, sizeof T.shim), 0, "build/gpuaas-shim is not beside the test binary");
}

static void dir_remove(void)
{
    char cmd[128];
    fmt(cmd, sizeof cmd, "/bin/rm -rf %s", T.dir);
    cr_assert_eq(system(cmd), 0);
}

/* Criterion runs no .fini after a skip: clean up first. */
#define SKIP(...)                  \
    do {                           \
        dir_remove();              \
        cr_skip_test(__VA_ARGS__); \
    } while (0)

static char *const job_env[] = {"PATH=/usr/bin:/bin", "GPUAAS_TEST_SECRET=s3cret", "LD_PRELOAD=/nonexistent/x.so",
                                NULL};

static void start(char *const *argv, const gx_proc_contain *c, gx_proc *p)
{
    gx_proc_spec spec = {argv, job_env, c && c->sandboxed ? "" : T.dir, T.log, T.exitp};
    gx_err e;
    cr_assert_eq(gx_proc_start_contained(&spec, c, p, &e), 0, "%s", e.msg);
}

/* Bounded poll until the shim exits; its reports; the log into T.out. */
static int finish(gx_proc *p, int *up)
{
    int i = 0;
    while (!gx_proc_exited(p) && i++ < 1000) usleep(10000);
    cr_assert(i <= 1000, "the shim did not end within 10 s");
    int e = gx_proc_start_outcome(p, up);
    gx_proc_close(p);
    read_file(T.log, T.out, sizeof T.out);
    return e;
}

static int recorded_code(void)
{
    int code = -1, sig = -1;
    cr_assert_eq(gx_proc_read_status(T.exitp, &code, &sig), 0, "no exit record");
    return code;
}

/* ---- outer mode ---- */

Test(shim, a_cgroup_that_cannot_be_joined_is_a_start_error, .init = dir_make, .fini = dir_remove)
{
    char ran[128], script[256];
    fmt(ran, sizeof ran, "%s/ran", T.dir);
    fmt(script, sizeof script, "touch %s", ran);
    char *argv[] = {"sh", "-c", script, NULL};
    const char *cg[] = {"/nonexistent-gpuaas/cgroup.procs"};
    gx_proc_contain c = {cg, 1, 0};
    gx_proc p;
    int up = -1;
    start(argv, &c, &p);
    cr_assert_eq(finish(&p, &up), ENOENT);
    cr_assert_eq(up, 0);
    cr_assert_eq(recorded_code(), 127);
    cr_assert_neq(access(ran, F_OK), 0, "the command ran outside its cgroup");
}

Test(shim, never_writes_through_a_symlink, .init = dir_make, .fini = dir_remove)
{
    char victim[128], tmp[128], buf[64];
    fmt(victim, sizeof victim, "%s/victim", T.dir);
    fmt(tmp, sizeof tmp, "%s.tmp", T.exitp);
    FILE *f = fopen(victim, "w");
    cr_assert_not_null(f);
    fputs("untouched\n", f);
    fclose(f);
    char *argv[] = {"sh", "-c", "echo to-the-log; exit 5", NULL};
    gx_proc p;
    int up;

    /* a log that is a symlink: refused (ELOOP), the command does not run */
    cr_assert_eq(symlink(victim, T.log), 0);
    start(argv, NULL, &p);
    cr_assert_eq(finish(&p, &up), ELOOP);
    read_file(victim, buf, sizeof buf);
    cr_assert_str_eq(buf, "untouched\n");
    unlink(T.log);

    /* a planted EXIT.tmp symlink: removed, not followed; the record is written */
    cr_assert_eq(symlink(victim, tmp), 0);
    start(argv, NULL, &p);
    cr_assert_eq(finish(&p, &up), 0);
    cr_assert_eq(recorded_code(), 5);
    read_file(victim, buf, sizeof buf);
    cr_assert_str_eq(buf, "untouched\n");
    struct stat st;
    cr_assert_eq(lstat(T.exitp, &st), 0);
    cr_assert(S_ISREG(st.st_mode));
    cr_assert_neq(lstat(tmp, &st), 0, "the temporary record was left behind");
}


Test(shim, the_jobs_environment_is_the_commands_not_the_shims, .init = dir_make, .fini = dir_remove)
{
    char ready[128], go[128], script[512];
    fmt(ready, sizeof ready, "%s/ready", T.dir);
    fmt(go, sizeof go, "%s/go", T.dir);
    fmt(script, sizeof script,
        "echo secret=$GPUAAS_TEST_SECRET; touch %s; i=0; "
        "while [ ! -e %s ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done",
        ready, go);
    char *argv[] = {"sh", "-c", script, NULL};
    gx_proc p;
    start(argv, NULL, &p);
    int i = 0;
    while (access(ready, F_OK) && i++ < 1000) usleep(10000);
    cr_assert(i <= 1000, "the command did not start within 10 s");
    pid_t cmd = child_of(p.pid);
    cr_assert(cmd > 0);
    cr_assert_not(environ_has(p.pid, "GPUAAS_TEST_SECRET="), "the Job's env is the shim's");
    cr_assert_not(environ_has(p.pid, "LD_PRELOAD="), "a Job's LD_PRELOAD reaches the shim's loader");
    cr_assert(environ_has(cmd, "GPUAAS_TEST_SECRET="), "the command lost the Job's env");
    cr_assert_eq(close(open(go, O_CREAT | O_WRONLY | O_CLOEXEC, 0644)), 0);
    int up;
    cr_assert_eq(finish(&p, &up), 0);
    cr_assert_not_null(strstr(T.out, "secret=s3cret\n"), "log:\n%s", T.out);
}

Test(shim, outer_usage_errors_exit_2, .init = dir_make, .fini = dir_remove)
{
    const char *bad[] = {"", "a b c", "a b c -- ", "a b c --cgroup -- true", "a b c --what -- true"};
    for (int i = 0; i < 5; i++) {
        char cmd[4400];
        fmt(cmd, sizeof cmd, "%s %s 2>/dev/null", T.shim, bad[i]);
        int st = system(cmd);
        cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 2, "\"%s\" gave %d", bad[i], st);
    }
}

/* ---- inner mode, run straight from the outer shim (no bwrap) ---- */

/* gx_proc_start_contained of: SHIM --as uid gid [--cwd cwd] -- cmd... (sandboxed, so fd 3
 * and the environment reach the inner shim as they would through bwrap). */
static int run_as(const char *uid, const char *gid, const char *cwd, char *const *cmd, int *up)
{
    char *argv[16];
    int k = 0;
    argv[k++] = T.shim;
    argv[k++] = "--as";
    argv[k++] = (char *)uid;
    argv[k++] = (char *)gid;
    if (cwd) {
        argv[k++] = "--cwd";
        argv[k++] = (char *)cwd;
    }
    argv[k++] = "--";
    for (int i = 0; cmd[i]; i++) argv[k++] = cmd[i];
    argv[k] = NULL;
    cr_assert(k < 16);
    gx_proc_contain c = {NULL, 0, 1};
    gx_proc p;
    start(argv, &c, &p);
    return finish(&p, up);
}

Test(shim, as_refuses_root_and_bad_ids, .init = dir_make, .fini = dir_remove)
{
    char ran[128], script[256];
    fmt(ran, sizeof ran, "%s/ran", T.dir);
    fmt(script, sizeof script, "touch %s", ran);
    char *cmd[] = {"sh", "-c", script, NULL};
    const char *ids[][2] = {{"0", "200456"}, {"200123", "0"}, {"4294967295", "5"}, {"-1", "5"}, {"abc", "5"},
                            {"", "5"}, {"5", "12x"}, {"+5", "5"}};
    for (int i = 0; i < 8; i++) {
        int up = -1;
        cr_assert_eq(run_as(ids[i][0], ids[i][1], NULL, cmd, &up), EINVAL, "case %d", i);
        cr_assert_eq(up, 0, "case %d", i);
        cr_assert_not_null(strstr(T.out, "gpuaas-shim: cannot switch to uid "), "case %d: log:\n%s", i, T.out);
        cr_assert_eq(recorded_code(), 127);
        cr_assert_neq(access(ran, F_OK), 0, "case %d: the command ran", i);
    }
}

#define EXPECT(key, want)                                                                       \
    do {                                                                                        \
        char k_[64];                                                                            \
        fmt(k_, sizeof k_, "\n%s=%s\n", key, want);                                             \
        cr_assert(strstr(T.out, k_) || !strncmp(T.out, k_ + 1, strlen(k_ + 1)), "want %s=%s; log:\n%s", key, \
                  want, T.out);                                                                 \
    } while (0)

Test(shim, as_switches_for_good, .init = dir_make, .fini = dir_remove)
{
    if (geteuid() != 0) SKIP("needs root: the shim switches to uid %d", POD_UID);
    cr_assert_eq(setgroups(2, (gid_t[]){4, 27}), 0); /* groups for the pod to lose */
    char home[128];
    fmt(home, sizeof home, "%s/home", T.dir);
    cr_assert_eq(mkdir(home, 0700), 0);
    cr_assert_eq(chown(home, POD_UID, POD_GID), 0);
    char *cmd[] = {"sh", "-c",
                   "echo uid=$(id -u); echo gid=$(id -g); echo pwd=$(pwd); echo secret=$GPUAAS_TEST_SECRET; "
                   "echo groups=[$(sed -n 's/^Groups:[[:space:]]*//p' /proc/self/status | tr -d ' ')]; "
                   "grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status | tr -d ' \\t' | tr : =",
                   NULL};
    int up = -1;
    cr_assert_eq(run_as("200123", "200456", home, cmd, &up), 0, "log:\n%s", T.out);
    cr_assert_eq(up, 1, "no marker; log:\n%s", T.out);
    cr_assert_eq(recorded_code(), 0, "log:\n%s", T.out);
    EXPECT("uid", "200123");
    EXPECT("gid", "200456");
    EXPECT("pwd", home);
    EXPECT("secret", "s3cret");
    EXPECT("groups", "[]");
    const char *caps[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
    for (int i = 0; i < 5; i++) EXPECT(caps[i], "0000000000000000");
    EXPECT("NoNewPrivs", "1");
}

Test(shim, as_reports_exec_and_cwd_failures_after_the_marker, .init = dir_make, .fini = dir_remove)
{
    if (geteuid() != 0) SKIP("needs root: the shim switches to uid %d", POD_UID);
    char *none[] = {"no-such-command-gpuaas", NULL}, *ok[] = {"true", NULL};
    int up = -1;
    cr_assert_eq(run_as("200123", "200456", NULL, none, &up), ENOENT, "log:\n%s", T.out);
    cr_assert_eq(up, 1);
    cr_assert_not_null(strstr(T.out, "gpuaas-shim: cannot run no-such-command-gpuaas"), "log:\n%s", T.out);
    /* T.dir/secret is root's 0700: the pod's uid may not enter it, root could */
    char secret[128];
    fmt(secret, sizeof secret, "%s/secret", T.dir);
    cr_assert_eq(mkdir(secret, 0700), 0);
    cr_assert_eq(run_as("200123", "200456", secret, ok, &up), EACCES, "log:\n%s", T.out);
    cr_assert_eq(up, 1);
    cr_assert_not_null(strstr(T.out, "cannot enter the working directory"), "log:\n%s", T.out);
}

Test(shim, as_without_capabilities_runs_nothing, .init = dir_make, .fini = dir_remove)
{
    char ran[128], script[256], bwrap[4096];
    fmt(ran, sizeof ran, "%s/ran", T.dir);
    fmt(script, sizeof script, "touch %s", ran);
    gx_proc_contain c = {NULL, 0, 1};
    gx_proc p;
    int up = -1;
    if (geteuid() == 0) {
        /* root, but with no capability at all: what a broken bwrap command line would give */
        if (gx_sandbox_find_bwrap(NULL, bwrap, sizeof bwrap)) SKIP("needs bwrap (Debian package bubblewrap)");
        char *argv[] = {bwrap, "--ro-bind", "/", "/", "--cap-drop", "ALL", "--", T.shim, "--as", "200123", "200456",
                        "--", "sh", "-c", script, NULL};
        start(argv, &c, &p);
    } else {
        char *argv[] = {T.shim, "--as", "200123", "200456", "--", "sh", "-c", script, NULL};
        start(argv, &c, &p);
    }
    cr_assert_eq(finish(&p, &up), EPERM, "log:\n%s", T.out);
    cr_assert_eq(up, 0);
    cr_assert_not_null(strstr(T.out, "gpuaas-shim: cannot switch to uid 200123: "), "log:\n%s", T.out);
    cr_assert_eq(recorded_code(), 127);
    cr_assert_neq(access(ran, F_OK), 0, "the command ran");
}
