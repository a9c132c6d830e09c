/* Unit tests of run/sandbox: the bwrap argv (order, refusals), finding bwrap, the start-up
 * probe, and, for real as root, whole sandboxed pods: build/gpuaas-shim (beside the test
 * binary) in outer mode around bwrap and the shim's --as switch, as gx_proc_start_contained
 * runs them. The command reports from inside as key=value lines in the pod's log; the
 * tests check those, and what is seen from outside (file owners, cgroups, environments).
 * Tests that need root or bwrap say so with cr_skip_test (after cleaning up: Criterion
 * runs no .fini after a skip); waits are bounded polls. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
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
#define TMP_BYTES (4 << 20)


/* ---- the argv builder ---- */

static char *cmd2[] = {"python3", "train.py", NULL};
static const char *hide2[] = {"/var/lib/gpuaas", "/root", NULL};
static const gx_sandbox_mount mounts3[] = {
    {"/dev/nvidia0", "/dev/nvidia0", GX_MOUNT_DEV},
    {"/data/set", "/data", GX_MOUNT_RO},
    {"/tmp/nvidia-mps", "/tmp/nvidia-mps", GX_MOUNT_RW},
};

static const char *root3[] = {"bin->usr/bin", "etc", "usr", NULL};

static gx_sandbox_spec full_spec(void)
{
    return (gx_sandbox_spec){.bwrap = "/usr/bin/bwrap", .shim = "/opt/gpuaas/gpuaas-shim", .uid = 200001,
                             .gid = 200002, .work_dir = "/var/lib/gpuaas/run/p0", .cwd = "/var/lib/gpuaas/run/p0/src",
                             .hostname = "train-0", .hide = hide2, .tmp_bytes = 1048576, .mounts = mounts3,
                             .nmounts = 3, .argv = cmd2, .root_entries = root3};
}

Test(sandbox, argv_in_the_documented_order)
{
    gx_sandbox_spec s = full_spec();
    gx_err e;
    char **av = gx_sandbox_argv(&s, &e);
    cr_assert_not_null(av, "%s", e.msg);
    const char *want[] = {"/usr/bin/bwrap", "--symlink", "usr/bin", "/bin", "--ro-bind", "/etc", "/etc",
        "--ro-bind", "/usr", "/usr", "--dev", "/dev",
        "--perms", "1777", "--size", "1048576", "--tmpfs", "/dev/shm", "--proc", "/proc",
        "--perms", "1777", "--size", "1048576", "--tmpfs", "/tmp",
        "--tmpfs", "/var/lib/gpuaas", "--tmpfs", "/root",
        "--perms", "0755", "--dir", "/var", "--perms", "0755", "--dir", "/var/lib",
        "--perms", "0755", "--dir", "/var/lib/gpuaas", "--perms", "0755", "--dir", "/var/lib/gpuaas/run",
        "--bind", "/var/lib/gpuaas/run/p0", "/var/lib/gpuaas/run/p0",
        "--perms", "0755", "--dir", "/dev", "--dev-bind", "/dev/nvidia0", "/dev/nvidia0",
        "--ro-bind", "/data/set", "/data",
        "--perms", "0755", "--dir", "/tmp", "--bind", "/tmp/nvidia-mps", "/tmp/nvidia-mps",
        "--perms", "0755", "--dir", "/opt", "--perms", "0755", "--dir", "/opt/gpuaas",
        "--ro-bind", "/opt/gpuaas/gpuaas-shim", "/opt/gpuaas/gpuaas-shim",
        "--remount-ro", "/", "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "train-0",
        "--new-session", "--die-with-parent",
        "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP",
        "--chdir", "/", "--", "/opt/gpuaas/gpuaas-shim", "--as", "200001", "200002",
        "--cwd", "/var/lib/gpuaas/run/p0/src", "--", "python3", "train.py", NULL};
    size_t i = 0;
    for (; want[i]; i++) {
        cr_assert_not_null(av[i], "argv ends early at %zu (want \"%s\")", i, want[i]);
        cr_assert_str_eq(av[i], want[i], "argv[%zu]", i);
    }
    cr_assert_null(av[i], "argv has more than expected: \"%s\"", av[i]);
    gx_sandbox_free_argv(av);
}

Test(sandbox, argv_defaults_without_hostname_or_cwd)
{
    gx_sandbox_spec s = full_spec();
    s.hostname = NULL;
    s.cwd = NULL;
    s.hide = NULL;
    s.nmounts = 0;
    gx_err e;
    char **av = gx_sandbox_argv(&s, &e);
    cr_assert_not_null(av, "%s", e.msg);
    int chdir_work = 0;
    for (size_t i = 0; av[i]; i++) {
        cr_assert_str_neq(av[i], "--hostname");
        if (!strcmp(av[i], "--cwd")) chdir_work = !strcmp(av[i + 1], s.work_dir);
    }
    cr_assert(chdir_work, "without a cwd the pod starts in its work folder");
    gx_sandbox_free_argv(av);
}

Test(sandbox, argv_refuses_root_relative_paths_and_no_command)
{
    static char *empty[] = {NULL}, *blank[] = {"", NULL};
    static const char *rel_hide[] = {"/ok", "var/lib", NULL};
    static const gx_sandbox_mount rel_src = {"dev/nvidia0", "/dev/nvidia0", GX_MOUNT_DEV};
    static const gx_sandbox_mount rel_dst = {"/data", "data", GX_MOUNT_RO};
    static const gx_sandbox_mount bad_kind = {"/data", "/data", (gx_mount_kind)7};
    for (int k = 0; k < 17; k++) {
        gx_sandbox_spec s = full_spec();
        switch (k) {
        case 0: s.uid = 0; break;
        case 1: s.gid = 0; break;
        case 2: s.uid = (uid_t)-1; break;
        case 3: s.bwrap = "bwrap"; break;
        case 4: s.shim = "gpuaas-shim"; break;
        case 5: s.work_dir = "run/p0"; break;
        case 6: s.cwd = "src"; break;
        case 7: s.hide = rel_hide; break;
        case 8: s.mounts = &rel_src; s.nmounts = 1; break;
        case 9: s.mounts = &rel_dst; s.nmounts = 1; break;
        case 10: s.argv = NULL; break;
        case 11: s.argv = empty; break;
        case 12: s.argv = blank; break;
        case 13: s.tmp_bytes = 0; break;
        case 14: s.work_dir = NULL; break;
        case 15: s.mounts = &bad_kind; s.nmounts = 1; break;
        case 16: s.gid = (gid_t)-1; break;
        }
        gx_err e;
        gx_err_clear(&e);
        char **av = gx_sandbox_argv(&s, &e);
        cr_assert_null(av, "case %d accepted", k);
        cr_assert_eq(e.status, 500, "case %d", k);
        cr_assert(e.msg[0], "case %d says nothing", k);
    }
}

/* ---- finding bwrap ---- */

static char fake_dir[64];

static void fake_dir_make(void)
{
    fmt(fake_dir, sizeof fake_dir, "/tmp/gpuaas-bw.XXXXXX");
    cr_assert_not_null(mkdtemp(fake_dir));
    cr_assert_eq(chmod(fake_dir, 0755), 0); /* probe_names_what_is_missing runs it as nobody */
}

static void fake_dir_remove(void)
{
    char cmd[128];
    fmt(cmd, sizeof cmd, "/bin/rm -rf %s", fake_dir);
    cr_assert_eq(system(cmd), 0);
}

/* An executable script at fake_dir/name. */
static void fake_exec(const char *name, const char *body, char *path, size_t n)
{
    fmt(path, n, "%s/%s", fake_dir, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fprintf(f, "#!/bin/sh\n%s\n", body);
    fclose(f);
    cr_assert_eq(chmod(path, 0755), 0);
}

Test(sandbox, find_bwrap_forced_then_path, .init = fake_dir_make, .fini = fake_dir_remove)
{
    char fake[128], out[256];
    fake_exec("bwrap", "exit 0", fake, sizeof fake);
    cr_assert_eq(gx_sandbox_find_bwrap(fake, out, sizeof out), 0);
    cr_assert_str_eq(out, fake);
    cr_assert_eq(gx_sandbox_find_bwrap(fake, out, 8), -1, "a path that does not fit is no path");
    cr_assert_eq(gx_sandbox_find_bwrap("/etc/passwd", out, sizeof out), -1, "not executable, and no fallback");
    cr_assert_eq(gx_sandbox_find_bwrap("bin/bwrap", out, sizeof out), -1, "relative");
    char path[256];
    fmt(path, sizeof path, "relative/dir:/nonexistent-gpuaas:%s:/usr/bin", fake_dir);
    setenv("PATH", path, 1);
    cr_assert_eq(gx_sandbox_find_bwrap("", out, sizeof out), 0);
    cr_assert_str_eq(out, fake, "the first bwrap in PATH");
    setenv("PATH", "/nonexistent-gpuaas", 1);
    int rc = gx_sandbox_find_bwrap(NULL, out, sizeof out);
    if (access("/usr/bin/bwrap", X_OK) == 0) {
        cr_assert_eq(rc, 0);
        cr_assert_str_eq(out, "/usr/bin/bwrap");
    } else {
        cr_assert_eq(rc, -1);
    }
}

/* ---- real sandboxes (root) ---- */

static struct box {
    int made;
    char dir[64];               /* /var/tmp/gpuaas-sbx.XXXXXX, root's 0700, hidden inside */
    char work[96];              /* dir/work/ns/pod, the pod's 0700 */
    char ro[96], rw[96], log[96], exitp[96];
    char cgroup[96], hostmark[64]; /* made by some tests: removed by box_remove */
    char shim[4096], bwrap[4096];
    char out[16384];            /* the pod's log after a run */
} B;

static void box_remove(void);

/* Criterion runs no .fini after a skip: clean up first. */
#define SKIP(...)                  \
    do {                           \
        box_remove();              \
        cr_skip_test(__VA_ARGS__); \
    } while (0)

static void need_root(void)
{
    if (geteuid() != 0) SKIP("needs root: the sandbox switches to uid %d, which only root may", POD_UID);
    if (gx_sandbox_find_bwrap(NULL, B.bwrap, sizeof B.bwrap)) SKIP("needs bwrap (Debian package bubblewrap)");
    cr_assert(B.made, "the fixture was not set up");
}

static void sh(const char *f, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *f, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, f);
    int w = vsnprintf(cmd, sizeof cmd, f, ap);
    va_end(ap);
    cr_assert(w > 0 && (size_t)w < sizeof cmd);
    cr_assert_eq(system(cmd), 0, "%s", cmd);
}

/* D/work and D/rw (the pod's), D/ro with a setuid-root copy of id, a secret in D. */
static void box_make(void)
{
    if (geteuid() != 0) return;
    fmt(B.dir, sizeof B.dir, "/var/tmp/gpuaas-sbx.XXXXXX");
    cr_assert_not_null(mkdtemp(B.dir));
    /* nested like run/podbox's WORK/<ns>/<pod>: bwrap must make the levels between passable */
    fmt(B.work, sizeof B.work, "%s/work/ns/pod", B.dir);
    fmt(B.ro, sizeof B.ro, "%s/ro", B.dir);
    fmt(B.rw, sizeof B.rw, "%s/rw", B.dir);
    fmt(B.log, sizeof B.log, "%s/log", B.dir);
    fmt(B.exitp, sizeof B.exitp, "%s/exit", B.dir);
    /* ro is 1777 on the host: inside, only its read-only mount stops the pod writing */
    sh("mkdir -p -m 700 %s/work/ns && mkdir %s %s %s", B.dir, B.work, B.ro, B.rw);
    sh("chown %d:%d %s %s && chmod 700 %s && chmod 1777 %s", POD_UID, POD_GID, B.work, B.rw, B.work, B.ro);
    sh("echo secret > %s/secret.txt && cp /usr/bin/id %s/id && chown 0:0 %s/id && chmod 4755 %s/id", B.dir, B.ro,
       B.ro, B.ro);
    cr_assert_eq(gx_proc_shim_path(B.shim, sizeof B.shim), 0, "build/gpuaas-shim is not beside the test binary");
    B.made = 1;
}

/* Kill what a failed test left in its cgroup, then remove it (bounded). */
static void cgroup_remove(void)
{
    char procs[128], buf[4096];
    fmt(procs, sizeof procs, "%s/cgroup.procs", B.cgroup);
    for (int i = 0; i < 500 && rmdir(B.cgroup) && errno == EBUSY; i++) {
        read_file(procs, buf, sizeof buf);
        for (char *l = buf; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0))
            if (atoi(l) > 1) kill(atoi(l), SIGKILL);
        usleep(10000);
    }
    B.cgroup[0] = 0;
}

static void box_remove(void)
{
    if (B.cgroup[0]) cgroup_remove();
    if (B.hostmark[0]) unlink(B.hostmark);
    B.hostmark[0] = 0;
    if (B.made) sh("/bin/rm -rf %s", B.dir);
    B.made = 0;
}

/* The sandbox of a pod running cmd, with mounts beyond the fixture's read-only one. */
static char **box_argv_cmd(char *const *cmd, const gx_sandbox_mount *extra, size_t nextra)
{
    static const char *hide[2];
    static gx_sandbox_mount m[8];
    hide[0] = B.dir;
    m[0] = (gx_sandbox_mount){B.ro, B.ro, GX_MOUNT_RO};
    cr_assert(nextra < 8);
    for (size_t i = 0; i < nextra; i++) m[1 + i] = extra[i];
    gx_sandbox_spec s = {.bwrap = B.bwrap, .shim = B.shim, .uid = POD_UID, .gid = POD_GID, .work_dir = B.work,
                         .cwd = B.work, .hostname = "pod-x", .hide = hide, .tmp_bytes = TMP_BYTES,
                         .mounts = m, .nmounts = 1 + nextra, .argv = cmd};
    gx_err e;
    char **av = gx_sandbox_argv(&s, &e);
    cr_assert_not_null(av, "%s", e.msg);
    return av;
}

/* ... running `sh -c script`. */
static char **box_argv(const char *script, const gx_sandbox_mount *extra, size_t nextra)
{
    char *cmd[] = {"sh", "-c", (char *)script, NULL};
    return box_argv_cmd(cmd, extra, nextra);
}

static char *const plain_env[] = {"PATH=/usr/bin:/bin", "GPUAAS_TEST_SECRET=s3cret", NULL};
static char *const *job_env = plain_env;

/* Start argv (a sandbox's) as the daemon does, joining the given cgroup.procs files. */
static void box_start_argv(char **av, const char *const *cg, int ncg, gx_proc *p)
{
    gx_proc_spec spec = {av, job_env, "", B.log, B.exitp};
    gx_proc_contain c = {cg, ncg, 1};
    gx_err e;
    unlink(B.log);
    cr_assert_eq(gx_proc_start_contained(&spec, &c, p, &e), 0, "%s", e.msg);
}

static void box_start(const char *script, const char *const *cg, int ncg, gx_proc *p)
{
    char **av = box_argv(script, NULL, 0);
    box_start_argv(av, cg, ncg, p);
    gx_sandbox_free_argv(av);
}

/* Bounded poll until the shim has exited; then its reports, and the log into B.out. */
static int box_wait(gx_proc *p, int *up)
{
    int i = 0;
    while (!gx_proc_exited(p) && i++ < 1000) usleep(10000);
    cr_assert(i <= 1000, "the pod did not end within 10 s");
    int e = gx_proc_start_outcome(p, up);
    gx_proc_close(p);
    read_file(B.log, B.out, sizeof B.out);
    return e;
}

/* Run script in the sandbox to its end; its exit code (as recorded), the marker seen. */
static int box_run(const char *script)
{
    gx_proc p;
    box_start(script, NULL, 0, &p);
    int up = 0;
    cr_assert_eq(box_wait(&p, &up), 0, "start error; log:\n%s", B.out);
    cr_assert_eq(up, 1, "no sandbox marker; log:\n%s", B.out);
    int code = -1, sig = -1;
    cr_assert_eq(gx_proc_read_status(B.exitp, &code, &sig), 0, "no exit record; log:\n%s", B.out);
    return code;
}

/* The value of "key=..." in the log (one line), or NULL. */
static const char *val(const char *key)
{
    static char v[512];
    size_t k = strlen(key);
    for (const char *l = B.out; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (strncmp(l, key, k) || l[k] != '=') continue;
        fmt(v, sizeof v, "%.*s", (int)strcspn(l + k + 1, "\n"), l + k + 1);
        return v;
    }
    return NULL;
}

#define EXPECT(key, want) \
    cr_assert(val(key) && !strcmp(val(key), want), "%s=%s, want %s; log:\n%s", key, val(key) ?: "(none)", want, B.out)

Test(sandbox, identity_is_the_pods_as_seen_from_outside, .init = box_make, .fini = box_remove)
{
    need_root();
    /* groups for the pod to lose: the daemon may have some (this process is the test's own) */
    cr_assert_eq(setgroups(2, (gid_t[]){4, 27}), 0);
    char script[512];
    fmt(script, sizeof script,
        "echo uid=$(id -u); echo gid=$(id -g); "
        "echo groups=[$(sed -n 's/^Groups:[[:space:]]*//p' /proc/self/status | tr -d ' ')]; "
        "touch %s/made; echo made=$?",
        B.work);
    cr_assert_eq(box_run(script), 0, "log:\n%s", B.out);
    char id[16];
    fmt(id, sizeof id, "%d", POD_UID);
    EXPECT("uid", id);
    fmt(id, sizeof id, "%d", POD_GID);
    EXPECT("gid", id);
    EXPECT("groups", "[]");
    EXPECT("made", "0");
    char made[128];
    fmt(made, sizeof made, "%s/made", B.work);
    struct stat st;
    cr_assert_eq(stat(made, &st), 0);
    cr_assert_eq(st.st_uid, (uid_t)POD_UID, "owner seen from outside: %u", (unsigned)st.st_uid);
    cr_assert_eq(st.st_gid, (gid_t)POD_GID, "group seen from outside: %u", (unsigned)st.st_gid);
}

Test(sandbox, no_capabilities_no_new_privileges, .init = box_make, .fini = box_remove)
{
    need_root();
    struct stat st;
    char id[128], script[512];
    fmt(id, sizeof id, "%s/id", B.ro);
    cr_assert_eq(stat(id, &st), 0);
    cr_assert(st.st_uid == 0 && (st.st_mode & S_ISUID), "the copy of id is not setuid-root");
    fmt(script, sizeof script,
        "grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):' /proc/self/status | tr -d ' \\t' | tr : =; "
        "echo suid_euid=$(%s -u); echo suid_ruid=$(%s -ru)",
        id, id);
    cr_assert_eq(box_run(script), 0, "log:\n%s", B.out);
    const char *caps[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
    for (int i = 0; i < 5; i++) EXPECT(caps[i], "0000000000000000");
    EXPECT("NoNewPrivs", "1");
    char uid[16];
    fmt(uid, sizeof uid, "%d", POD_UID);
    EXPECT("suid_euid", uid); /* a setuid-root binary gives nothing: nosuid and no_new_privs */
    EXPECT("suid_ruid", uid);
}

Test(sandbox, own_pids_and_hostname, .init = box_make, .fini = box_remove)
{
    need_root();
    cr_assert_eq(box_run("echo pid=$$; echo procs=$(ls /proc | grep -c '^[0-9]'); "
                         "echo host=$(cat /proc/sys/kernel/hostname); "
                         "echo init=$(tr '\\0' '\\n' < /proc/1/cmdline | head -1)"),
                 0, "log:\n%s", B.out);
    cr_assert(val("pid") && atoi(val("pid")) > 1, "the command is pid %s: it must not be the reaper", val("pid"));
    cr_assert(val("procs") && atoi(val("procs")) >= 2 && atoi(val("procs")) <= 6,
              "sees %s processes: only its own (bwrap's init, sh, ls, grep) expected", val("procs"));
    EXPECT("host", "pod-x");
    EXPECT("init", B.bwrap); /* pid 1 is bwrap's reaper, whose end ends everything */
}

Test(sandbox, file_system_is_read_only_but_its_own, .init = box_make, .fini = box_remove)
{
    need_root();
    char script[2048];
    fmt(B.hostmark, sizeof B.hostmark, "/tmp/gpuaas-sbx-host-%d", (int)getpid());
    sh("touch %s", B.hostmark);
    gx_sandbox_mount extra[] = {{B.rw, B.rw, GX_MOUNT_RW}, {"/dev/full", "/dev/gpuaas/full", GX_MOUNT_DEV}};
    fmt(script, sizeof script,
        "echo hidden=[$(ls -A %s | tr '\\n' ' ')]; test -e %s/secret.txt; echo secret=$?; "
        "test -e %s; echo hostmark=$?; echo x > /tmp/inside-%d; echo tmpw=$?; "
        "echo tmpsize=$(( $(stat -f -c %%b /tmp) * $(stat -f -c %%S /tmp) )); "
        "echo x > /dev/shm/x; echo shmw=$?; "
        "echo x > %s/w; echo workw=$?; echo x > %s/w; echo rww=$?; "
        "for d in %s / /etc /var/tmp; do echo \"ro$d=$(touch $d/gpuaas-probe-$$ 2>&1 | grep -o Read-only)\"; done; "
        "echo rootmnt=$(awk '$5 == \"/\" {print $6}' /proc/self/mountinfo | cut -d, -f1); "
        "echo full=$(dd if=/dev/zero of=/dev/gpuaas/full bs=1 count=1 2>&1 | grep -o 'No space left')",
        B.dir, B.dir, B.hostmark, (int)getpid(), B.work, B.rw, B.ro);
    char **av = box_argv(script, extra, 2);
    gx_proc p;
    box_start_argv(av, NULL, 0, &p);
    gx_sandbox_free_argv(av);
    int up;
    cr_assert_eq(box_wait(&p, &up), 0, "log:\n%s", B.out);
    EXPECT("hidden", "[ro rw work ]"); /* only the mount points bound over the empty tmpfs */
    EXPECT("secret", "1");
    EXPECT("hostmark", "1");           /* the host's /tmp is not the pod's */
    EXPECT("tmpw", "0");
    char size[32];
    fmt(size, sizeof size, "%d", TMP_BYTES);
    EXPECT("tmpsize", size);
    EXPECT("shmw", "0");
    EXPECT("workw", "0");
    EXPECT("rww", "0");
    /* EROFS, not EACCES: ro (the fixture's) and /var/tmp are 1777 on the host */
    char ro[128];
    fmt(ro, sizeof ro, "ro%s", B.ro);
    const char *ros[] = {ro, "ro/", "ro/etc", "ro/var/tmp"};
    for (int i = 0; i < 4; i++) EXPECT(ros[i], "Read-only");
    EXPECT("rootmnt", "ro");
    EXPECT("full", "No space left");   /* the device node works (ENOSPC, not nodev's EACCES) */
    char inside[64];
    fmt(inside, sizeof inside, "/tmp/inside-%d", (int)getpid());
    cr_assert_neq(access(inside, F_OK), 0, "the pod's /tmp leaked to the host");
}

Test(sandbox, exit_status_through_bwrap, .init = box_make, .fini = box_remove)
{
    need_root();
    char rec[32];
    cr_assert_eq(box_run("exit 3"), 3);
    read_file(B.exitp, rec, sizeof rec);
    cr_assert_str_eq(rec, "exit 3\n");
    /* bwrap's init turns the command's SIGKILL into exit 128+9: the shim sees an exit */
    cr_assert_eq(box_run("kill -9 $$"), 137);
    read_file(B.exitp, rec, sizeof rec);
    cr_assert_str_eq(rec, "exit 137\n");
}

Test(sandbox, marker_and_start_errors, .init = box_make, .fini = box_remove)
{
    need_root();
    gx_proc p;
    int up = -1;
    char *cmd_true[] = {"true", NULL}, *cmd_none[] = {"no-such-command-gpuaas", NULL};
    char **av = box_argv_cmd(cmd_true, NULL, 0);
    box_start_argv(av, NULL, 0, &p);
    gx_sandbox_free_argv(av);
    cr_assert_eq(box_wait(&p, &up), 0, "log:\n%s", B.out);
    cr_assert_eq(up, 1, "log:\n%s", B.out);

    /* the shim inside execs the command itself: a missing one is ENOENT on fd 3 */
    av = box_argv_cmd(cmd_none, NULL, 0);
    box_start_argv(av, NULL, 0, &p);
    gx_sandbox_free_argv(av);
    cr_assert_eq(box_wait(&p, &up), ENOENT, "log:\n%s", B.out);
    cr_assert_eq(up, 1);

    /* bwrap itself fails: no marker, no errno, bwrap's words in the log */
    char missing[128];
    fmt(missing, sizeof missing, "%s/missing", B.dir);
    gx_sandbox_mount bad = {missing, missing, GX_MOUNT_RO};
    av = box_argv("true", &bad, 1);
    box_start_argv(av, NULL, 0, &p);
    gx_sandbox_free_argv(av);
    cr_assert_eq(box_wait(&p, &up), 0);
    cr_assert_eq(up, 0);
    cr_assert_not_null(strstr(B.out, "bwrap: "), "log:\n%s", B.out);
    int code, sig;
    cr_assert_eq(gx_proc_read_status(B.exitp, &code, &sig), 0);
    cr_assert_eq(code, 1, "bwrap's own exit code");
}



/* Does a cgroup.procs text (one pid a line) list pid? */
static int lists(const char *procs, pid_t pid)
{
    for (const char *l = procs; *l; l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0))
        if (atoi(l) == (int)pid) return 1;
    return 0;
}

/* Bounded poll for a file the pod writes when it is ready. */
static void wait_for(const char *path)
{
    int i = 0;
    while (access(path, F_OK) && i++ < 1000) usleep(10000);
    cr_assert(i <= 1000, "%s did not appear within 10 s; log:\n%s", path, B.out);
}

/* The pod writes `ready` then waits (at most 30 s) for the test to create `go`. */
static const char *handshake(char *buf, size_t n, const char *before)
{
    fmt(buf, n,
        "%s; touch %s/ready; i=0; while [ ! -e %s/go ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done",
        before, B.work, B.work);
    return buf;
}

Test(sandbox, job_environment_reaches_only_the_command, .init = box_make, .fini = box_remove)
{
    need_root();
    static char *const env[] = {"PATH=/usr/bin:/bin", "GPUAAS_TEST_SECRET=s3cret", "LD_PRELOAD=/nonexistent/x.so",
                                NULL};
    job_env = env;
    char script[512], ready[128], go[128];
    fmt(ready, sizeof ready, "%s/ready", B.work);
    fmt(go, sizeof go, "%s/go", B.work);
    gx_proc p;
    box_start(handshake(script, sizeof script, "echo secret=$GPUAAS_TEST_SECRET"), NULL, 0, &p);
    pid_t shim = p.pid;
    wait_for(ready);
    pid_t bwrap = child_of(shim);
    cr_assert(bwrap > 0);
    cr_assert_not(environ_has(shim, "GPUAAS_TEST_SECRET="), "the Job's env is in the root shim's");
    cr_assert_not(environ_has(shim, "LD_PRELOAD="), "a Job's LD_PRELOAD reaches the root shim");
    cr_assert_not(environ_has(bwrap, "LD_PRELOAD="), "a Job's LD_PRELOAD reaches bwrap (root)");
    cr_assert_not(environ_has(bwrap, "GPUAAS_TEST_SECRET="));
    sh("touch %s", go);
    int up;
    cr_assert_eq(box_wait(&p, &up), 0);
    EXPECT("secret", "s3cret");
}

Test(sandbox, command_joins_the_cgroup_the_shim_does_not, .init = box_make, .fini = box_remove)
{
    need_root();
    if (access("/sys/fs/cgroup/pids/cgroup.procs", W_OK))
        SKIP("needs a cgroup v1 pids hierarchy at /sys/fs/cgroup/pids");
    fmt(B.cgroup, sizeof B.cgroup, "/sys/fs/cgroup/pids/gpuaas-test-%d", (int)getpid());
    cr_assert_eq(mkdir(B.cgroup, 0755), 0, "%s: %s", B.cgroup, strerror(errno));
    char procs[128], script[512], ready[128], go[128], name[64], buf[4096];
    fmt(procs, sizeof procs, "%s/cgroup.procs", B.cgroup);
    fmt(ready, sizeof ready, "%s/ready", B.work);
    fmt(go, sizeof go, "%s/go", B.work);
    fmt(name, sizeof name, "/gpuaas-test-%d", (int)getpid());
    const char *cg[] = {procs};
    gx_proc p;
    box_start(handshake(script, sizeof script, "echo cg=$(grep :pids: /proc/self/cgroup | cut -d: -f3)"), cg, 1,
              &p);
    pid_t shim = p.pid;
    wait_for(ready);
    char path[64], mine[4096];
    fmt(path, sizeof path, "/proc/%d/cgroup", (int)shim);
    read_file(path, mine, sizeof mine);
    cr_assert_null(strstr(mine, name), "the shim joined the pod's group:\n%s", mine);
    read_file(procs, buf, sizeof buf);
    cr_assert(buf[0], "the pod's group is empty");
    cr_assert_not(lists(buf, shim), "the shim %d is listed in the group:\n%s", (int)shim, buf);
    pid_t bwrap = child_of(shim);
    cr_assert(bwrap > 0);
    cr_assert(lists(buf, bwrap), "bwrap (%d) is not in the group:\n%s", (int)bwrap, buf);
    sh("touch %s", go);
    int up;
    cr_assert_eq(box_wait(&p, &up), 0);
    EXPECT("cg", name);
    int i = 0;
    while (rmdir(B.cgroup) && errno == EBUSY && i++ < 500) usleep(10000);
    cr_assert(i <= 500, "the group still holds processes after the pod ended");
    B.cgroup[0] = 0;
}

/* ---- the probe ---- */

Test(sandbox, probe_runs_the_real_thing, .init = box_make, .fini = box_remove)
{
    need_root();
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_sandbox_probe(B.bwrap, B.shim, POD_UID, &e), 0, "%s", e.msg);
}

Test(sandbox, probe_names_what_is_missing, .init = fake_dir_make, .fini = fake_dir_remove)
{
    char shim[4096];
    cr_assert_eq(gx_proc_shim_path(shim, sizeof shim), 0);
    gx_err e;
    cr_assert_eq(gx_sandbox_probe("/nonexistent/bwrap", shim, POD_UID, &e), -1);
    cr_assert_str_eq(e.msg, "bwrap not found: install the Debian package bubblewrap");
    cr_assert_eq(gx_sandbox_probe(NULL, shim, POD_UID, &e), -1);
    cr_assert_str_eq(e.msg, "bwrap not found: install the Debian package bubblewrap");
    char fake[128];
    fake_exec("bwrap", "echo 'bwrap: creating new namespace failed: Operation not permitted' >&2; exit 1", fake,
              sizeof fake);
    if (geteuid() == 0) {
        /* not root: only in a child, the test process must stay root for the rest */
        cr_assert_eq(gx_sandbox_probe(fake, shim, POD_UID, &e), -1);
        cr_assert_str_eq(e.msg, "bwrap: creating new namespace failed: Operation not permitted");
        cr_assert_eq(gx_sandbox_probe(fake, "/nonexistent/gpuaas-shim", POD_UID, &e), -1);
        cr_assert_not_null(strstr(e.msg, "gpuaas-shim not found"), "%s", e.msg);
        /* a bwrap that runs fine, but whose inner command is not our shim: no marker */
        char real[4096];
        if (gx_sandbox_find_bwrap(NULL, real, sizeof real) == 0) {
            cr_assert_eq(gx_sandbox_probe(real, "/bin/true", POD_UID, &e), -1);
            cr_assert_not_null(strstr(e.msg, "did not report the identity switch"), "%s", e.msg);
        }
    }
    /* as someone else than root (a child: this process must stay root for .fini) */
    uid_t as = geteuid() ? geteuid() : 65534;
    pid_t child = fork();
    cr_assert(child >= 0);
    if (child == 0) {
        char want[160];
        if (setresuid(as, as, as)) _exit(2);
        snprintf(want, sizeof want,
                 "the daemon runs as uid %u: the sandbox switches each pod to its namespace's uid, which needs root",
                 (unsigned)as);
        _exit(gx_sandbox_probe(fake, shim, POD_UID, &e) == -1 && !strcmp(e.msg, want) ? 0 : 1);
    }
    int st;
    cr_assert_eq(waitpid(child, &st, 0), child);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the probe did not refuse a non-root daemon (%d)", st);
}
