/* Unit tests for run/cgroup: the mountinfo parser on canned texts (pure v2, hybrid, pure
 * v1, cpu,cpuacct co-mounted, none), bad parents and limits refused, the v2 file writes on
 * a fake v2 tree in /tmp, and (as root) real groups on this host under a parent of the
 * test's own ("gpuaas-test-PID", purged after each test even when it fails): limits read
 * back, an OOM kill counted, a double fork and a fork loop killed under a pids limit,
 * signals filtered by uid, the v1 devices list. Without root the real-group tests are
 * skipped with a message, never passed. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "run/cgroup.h"

/* ---- helpers: files ---- */

static char tmp[64];   /* the fake tree's folder: canned mount points are "@/..." below it */

static void make_tmp(void)
{
    snprintf(tmp, sizeof tmp, "/tmp/gpuaas-cgtest.XXXXXX");
    cr_assert_not_null(mkdtemp(tmp));
}

static int rm_entry(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    return remove(p);
}

static void rm_tmp(void)
{
    if (tmp[0]) nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* tmp + suffix, in one of four rotating buffers (several may be live in one assert). */
static const char *at(const char *suffix)
{
    static char buf[4][PATH_MAX];
    static int i;
    i = (i + 1) % 4;
    cr_assert_lt(snprintf(buf[i], PATH_MAX, "%s%s", tmp, suffix), PATH_MAX);
    return buf[i];
}

static void put_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fputs(text, f);
    cr_assert_eq(fclose(f), 0);
}

/* The file's text without its trailing newline ("" when unreadable). */
static const char *slurp(const char *path)
{
    static char buf[8192];
    buf[0] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return buf;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    while (n && buf[n - 1] == '\n') buf[--n] = 0;
    return buf;
}

static void mkdirs(const char *path)
{
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') { *s = 0; mkdir(p, 0755); *s = '/'; }
    cr_assert(mkdir(p, 0755) == 0 || errno == EEXIST, "%s: %s", p, strerror(errno));
}

/* ---- the parser on canned mountinfo texts ---- */

/* Detect from `text` ('@' standing for tmp), with the v2 root "@/<v2dir>" holding
 * cgroup.controllers = controllers when v2dir is given. */
static void detect_canned(gx_cgroup_sys *s, const char *text, const char *v2dir, const char *controllers)
{
    char mi[16384];
    size_t w = 0;
    for (const char *c = text; *c; c++) {
        const char *piece = *c == '@' ? tmp : (char[2]){*c, 0};
        size_t len = strlen(piece);
        cr_assert_lt(w + len, sizeof mi);
        memcpy(mi + w, piece, len);
        w += len;
    }
    mi[w] = 0;
    put_file(at("/mountinfo"), mi);
    if (v2dir) {
        char f[PATH_MAX];
        cr_assert_lt(snprintf(f, sizeof f, "%s/%s", tmp, v2dir), (int)sizeof f);
        mkdirs(f);
        cr_assert_lt(snprintf(f, sizeof f, "%s/%s/cgroup.controllers", tmp, v2dir), (int)sizeof f);
        put_file(f, controllers);
    }
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_cgroup_detect(s, "", at("/mountinfo"), &e), 0, "%s", e.msg);
}

#define HEAD "1 0 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n" \
             "22 1 0:20 / /proc rw,nosuid shared:12 - proc proc rw\n" \
             "23 1 0:21 / /sys rw,nosuid shared:2 - sysfs sysfs rw\n"

Test(cgroup, detect_pure_v2_with_controllers, .init = make_tmp, .fini = rm_tmp)
{
    gx_cgroup_sys s;
    detect_canned(&s, HEAD "30 23 0:26 / @/cg rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
                           "rw,nsdelegate,memory_recursiveprot\n",
                  "cg", "cpuset cpu io memory hugetlb pids rdma misc\n");
    cr_assert_str_eq(s.v2_root, at("/cg"));
    cr_assert_eq(s.on_v2, GX_CG_BIT(GX_CG_MEMORY) | GX_CG_BIT(GX_CG_PIDS) | GX_CG_BIT(GX_CG_CPU));
    cr_assert_eq(s.on_v1, 0);
    cr_assert_str_eq(s.parent, "gpuaas");
    char miss[64];
    cr_assert_eq(gx_cgroup_missing(&s, GX_CG_REQUIRED, miss, sizeof miss), 0);
    cr_assert_str_eq(miss, "");
    cr_assert_eq(gx_cgroup_missing(&s, ~0u, miss, sizeof miss), 1);
    cr_assert_str_eq(miss, "devices");
}

/* This machine's layout: v1 controllers one per mount, cgroup2 at .../unified offering
 * only hugetlb, and a name=systemd hierarchy that is no controller. */
Test(cgroup, detect_hybrid_like_this_machine, .init = make_tmp, .fini = rm_tmp)
{
    gx_cgroup_sys s;
    detect_canned(&s, HEAD
                  "31 30 0:28 / @/cpu rw,relatime - cgroup cgroup rw,cpu\n"
                  "32 30 0:29 / @/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
                  "33 30 0:30 / @/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
                  "34 30 0:31 / @/memory rw,relatime - cgroup cgroup rw,memory\n"
                  "35 30 0:32 / @/devices rw,relatime - cgroup cgroup rw,devices\n"
                  "38 30 0:35 / @/pids rw,relatime - cgroup cgroup rw,pids\n"
                  "39 30 0:36 / @/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
                  "40 30 0:37 / @/unified rw,relatime - cgroup2 cgroup2 rw\n",
                  "unified", "hugetlb\n");
    cr_assert_str_eq(s.v2_root, at("/unified"));
    cr_assert_eq(s.on_v2, 0);
    cr_assert_eq(s.on_v1, GX_CG_BIT(GX_CG_MEMORY) | GX_CG_BIT(GX_CG_PIDS) | GX_CG_BIT(GX_CG_CPU) |
                              GX_CG_BIT(GX_CG_DEVICES));
    cr_assert_str_eq(s.v1_root[GX_CG_MEMORY], at("/memory"));
    cr_assert_str_eq(s.v1_root[GX_CG_PIDS], at("/pids"));
    cr_assert_str_eq(s.v1_root[GX_CG_CPU], at("/cpu"), "cpuacct or cpuset taken for cpu");
    cr_assert_str_eq(s.v1_root[GX_CG_DEVICES], at("/devices"));
    char files[8][PATH_MAX];
    cr_assert_eq(gx_cgroup_procs_files(&s, "ns/pod", files, 8), 4);
    cr_assert_str_eq(files[0], at("/memory/gpuaas/ns/pod/cgroup.procs"), "memory lists the pids");
    cr_assert_str_eq(files[3], at("/devices/gpuaas/ns/pod/cgroup.procs"));
    cr_assert_eq(gx_cgroup_procs_files(&s, "ns/pod", files, 3), -1, "never leave a hierarchy out");
}

/* A controller the v2 root lists goes there even when a v1 mount exists for another. */
Test(cgroup, detect_mixed_takes_v2_first, .init = make_tmp, .fini = rm_tmp)
{
    gx_cgroup_sys s;
    detect_canned(&s, HEAD
                  "34 30 0:31 / @/memory rw,relatime - cgroup cgroup rw,memory\n"
                  "38 30 0:35 / @/pids rw,relatime - cgroup cgroup rw,pids\n"
                  "40 30 0:37 / @/unified rw,relatime - cgroup2 cgroup2 rw\n",
                  "unified", "pids cpu\n");
    cr_assert_eq(s.on_v2, GX_CG_BIT(GX_CG_PIDS) | GX_CG_BIT(GX_CG_CPU));
    cr_assert_eq(s.on_v1, GX_CG_BIT(GX_CG_MEMORY));
    char files[8][PATH_MAX];
    cr_assert_eq(gx_cgroup_procs_files(&s, "p", files, 8), 2);
    cr_assert_str_eq(files[0], at("/unified/gpuaas/p/cgroup.procs"), "v2 first");
    cr_assert_str_eq(files[1], at("/memory/gpuaas/p/cgroup.procs"));
}

Test(cgroup, detect_pure_v1_cpu_cpuacct_comounted, .init = make_tmp, .fini = rm_tmp)
{
    gx_cgroup_sys s;
    detect_canned(&s, HEAD
                  "25 23 0:22 / @/fs rw,nosuid - tmpfs tmpfs ro,mode=755\n"
                  "26 25 0:23 / @/fs/cpuset rw,nosuid shared:7 - cgroup cgroup rw,cpuset\n"
                  "27 25 0:24 / @/fs/cpu,cpuacct rw,nosuid shared:8 master:3 - cgroup cgroup rw,cpu,cpuacct\n"
                  "28 25 0:25 / @/fs/net_cls,net_prio rw shared:9 - cgroup cgroup rw,net_cls,net_prio\n"
                  "29 25 0:26 / @/fs/memory rw,nosuid shared:10 - cgroup cgroup rw,memory\n"
                  "30 25 0:27 / @/fs/pids rw,nosuid shared:11 - cgroup cgroup rw,pids\n"
                  "31 25 0:28 / @/fs/devices rw,nosuid shared:12 - cgroup cgroup rw,devices\n"
                  "32 25 0:26 / @/again/memory rw - cgroup cgroup rw,memory\n",
                  NULL, NULL);
    cr_assert_str_eq(s.v2_root, "");
    cr_assert_eq(s.on_v2, 0);
    cr_assert_str_eq(s.v1_root[GX_CG_CPU], at("/fs/cpu,cpuacct"));
    cr_assert_str_eq(s.v1_root[GX_CG_MEMORY], at("/fs/memory"), "the first mount wins");
    cr_assert_eq(s.on_v1, GX_CG_BIT(GX_CG_MEMORY) | GX_CG_BIT(GX_CG_PIDS) | GX_CG_BIT(GX_CG_CPU) |
                              GX_CG_BIT(GX_CG_DEVICES));
}

Test(cgroup, detect_none_names_what_is_missing, .init = make_tmp, .fini = rm_tmp)
{
    gx_cgroup_sys s;
    detect_canned(&s, HEAD "24 23 0:22 / /sys/fs/cgroup rw - tmpfs tmpfs rw\n", NULL, NULL);
    cr_assert_eq(s.on_v1 | s.on_v2, 0);
    char miss[64];
    cr_assert_eq(gx_cgroup_missing(&s, GX_CG_REQUIRED, miss, sizeof miss), 2);
    cr_assert_str_eq(miss, "memory, pids");
    char small[8];
    cr_assert_eq(gx_cgroup_missing(&s, GX_CG_REQUIRED, small, sizeof small), 2);
    cr_assert_str_eq(small, "memory,", "cut, but terminated");
    gx_err e;
    gx_err_clear(&e);
    gx_cgroup_limits l = {0};
    cr_assert_eq(gx_cgroup_create(&s, "p", &l, &e), -1);
    cr_assert(strstr(e.msg, "no controller"), "%s", e.msg);
}

/* Escaped mount points (\040 is a space) and a v2 root without cgroup.controllers. */
Test(cgroup, detect_escapes_and_unreadable_controllers, .init = make_tmp, .fini = rm_tmp)
{
    gx_cgroup_sys s;
    detect_canned(&s, HEAD
                  "34 30 0:31 / @/my\\040cg/mem\\134ory rw - cgroup cgroup rw,memory\n"
                  "40 30 0:37 / @/nowhere rw - cgroup2 cgroup2 rw\n"
                  "41 30 0:38 / @/short rw - cgroup\n",
                  NULL, NULL);
    cr_assert_str_eq(s.v1_root[GX_CG_MEMORY], at("/my cg/mem\\ory"));
    cr_assert_str_eq(s.v2_root, at("/nowhere"));
    cr_assert_eq(s.on_v2, 0);
    cr_assert_eq(s.on_v1, GX_CG_BIT(GX_CG_MEMORY));
}

Test(cgroup, bad_parents_and_mountinfo_refused, .init = make_tmp, .fini = rm_tmp)
{
    put_file(at("/mi"), HEAD);
    gx_cgroup_sys s;
    gx_err e;
    char longp[300];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = 0;
    const char *bad[] = {"/gpuaas", "..", "a/../b", "a/..", "./a", "a//b", "a/", "x\ny", longp};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gx_err_clear(&e);
        cr_assert_eq(gx_cgroup_detect(&s, bad[i], at("/mi"), &e), -1, "accepted \"%s\"", bad[i]);
        cr_assert_str_eq(e.field, "run.cgroupParent");
    }
    const char *good[] = {"gpuaas", "system.slice/gpuaas.service", "a..b", longp + 45};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        gx_err_clear(&e);
        cr_assert_eq(gx_cgroup_detect(&s, good[i], at("/mi"), &e), 0, "%s: %s", good[i], e.msg);
        cr_assert_str_eq(s.parent, good[i]);
    }
    gx_err_clear(&e);
    cr_assert_eq(gx_cgroup_detect(&s, NULL, at("/missing"), &e), -1);
    cr_assert(strstr(e.msg, "missing"), "%s", e.msg);
}

/* ---- the v2 files, on a fake v2 tree (this host has no v2 controllers) ---- */

#define FAKE_V2 HEAD "40 30 0:37 / @/v2 rw - cgroup2 cgroup2 rw\n"

static const char *const leaf_files[] = {
    "memory.max", "memory.swap.max", "memory.oom.group", "cpu.max", "pids.max", "cgroup.procs",
    "cgroup.kill", "cgroup.subtree_control",
};

/* Folders and files as the kernel would show them, since a plain folder has none. */
static void fake_v2_tree(void)
{
    mkdirs(at("/v2/gpuaas/team/pod"));
    put_file(at("/v2/cgroup.subtree_control"), "");
    put_file(at("/v2/gpuaas/cgroup.subtree_control"), "");
    put_file(at("/v2/gpuaas/team/cgroup.subtree_control"), "");
    for (size_t i = 0; i < sizeof leaf_files / sizeof *leaf_files; i++) {
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%s/v2/gpuaas/team/pod/%s", tmp, leaf_files[i]);
        put_file(p, "");
    }
    put_file(at("/v2/gpuaas/team/pod/memory.events"),
             "low 0\nhigh 0\nmax 9\noom 3\noom_kill 2\noom_group_kill 1\n");
    put_file(at("/v2/gpuaas/team/pod/memory.current"), "1234567\n");
}

Test(cgroup, v2_files_written_on_a_fake_tree, .init = make_tmp, .fini = rm_tmp)
{
    gx_cgroup_sys s;
    detect_canned(&s, FAKE_V2, "v2", "cpuset cpu io memory pids\n");
    fake_v2_tree();
    gx_cgroup_limits l = {.memory_bytes = 32 << 20, .cpu_millis = 1500, .pids = 32};
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_cgroup_create(&s, "team/pod", &l, &e), 0, "%s", e.msg);
    cr_assert_str_eq(slurp(at("/v2/cgroup.subtree_control")), "+memory +pids +cpu");
    cr_assert_str_eq(slurp(at("/v2/gpuaas/cgroup.subtree_control")), "+memory +pids +cpu");
    cr_assert_str_eq(slurp(at("/v2/gpuaas/team/cgroup.subtree_control")), "+memory +pids +cpu");
    cr_assert_str_eq(slurp(at("/v2/gpuaas/team/pod/cgroup.subtree_control")), "", "a leaf holds processes");
    cr_assert_str_eq(slurp(at("/v2/gpuaas/team/pod/memory.max")), "33554432");
    cr_assert_str_eq(slurp(at("/v2/gpuaas/team/pod/memory.swap.max")), "0");
    cr_assert_str_eq(slurp(at("/v2/gpuaas/team/pod/memory.oom.group")), "1");
    cr_assert_str_eq(slurp(at("/v2/gpuaas/team/pod/cpu.max")), "150000 100000");
    cr_assert_str_eq(slurp(at("/v2/gpuaas/team/pod/pids.max")), "32");
    cr_assert_eq(gx_cgroup_oom_kills(&s, "team/pod"), 2, "oom_kill, not oom or oom_group_kill");
    cr_assert_eq(gx_cgroup_memory_bytes(&s, "team/pod"), 1234567);
    cr_assert_eq(gx_cgroup_kill(&s, "team/pod"), 0);
    cr_assert_str_eq(slurp(at("/v2/gpuaas/team/pod/cgroup.kill")), "", "nothing to kill, nothing written");

    /* reused without limits: every limit lifted; a tiny cpu share clamped to 1 ms */
    gx_cgroup_limits none = {.cpu_millis = 3};
    cr_assert_eq(gx_cgroup_create(&s, "team/pod", &none, &e), 0, "%s", e.msg);
    cr_assert_str_eq(slurp(at("/v2/gpuaas/team/pod/memory.max")), "max");
    cr_assert_str_eq(slurp(at("/v2/gpuaas/team/pod/pids.max")), "max");
    cr_assert_str_eq(slurp(at("/v2/gpuaas/team/pod/cpu.max")), "1000 100000");
}

/* cgroup.kill is written when something is listed; the SIGKILL rounds follow it. */
Test(cgroup, v2_kill_writes_cgroup_kill, .init = make_tmp, .fini = rm_tmp)
{
    gx_cgroup_sys s;
    detect_canned(&s, FAKE_V2, "v2", "memory pids\n");
    fake_v2_tree();
    pid_t child = fork();
    cr_assert_neq(child, -1);
    if (child == 0) for (;;) pause();
    char me[32];
    snprintf(me, sizeof me, "%d\n", (int)child);
    put_file(at("/v2/gpuaas/team/pod/cgroup.procs"), me);
    pid_t got[4];
    cr_assert_eq(gx_cgroup_pids(&s, "team/pod", got, 4), 1);
    cr_assert_eq(got[0], child);
    /* The fake file keeps listing the dead child: every round is used, one is left. */
    cr_assert_eq(gx_cgroup_kill(&s, "team/pod"), 1);
    cr_assert_str_eq(slurp(at("/v2/gpuaas/team/pod/cgroup.kill")), "1");
    int st;
    cr_assert_eq(waitpid(child, &st, 0), child);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
}

Test(cgroup, v1_counters_on_a_fake_tree, .init = make_tmp, .fini = rm_tmp)
{
    gx_cgroup_sys s;
    detect_canned(&s, HEAD "34 30 0:31 / @/memory rw - cgroup cgroup rw,memory\n", NULL, NULL);
    mkdirs(at("/memory/gpuaas/pod"));
    cr_assert_eq(gx_cgroup_oom_kills(&s, "pod"), 0, "unknown is 0");
    cr_assert_eq(gx_cgroup_memory_bytes(&s, "pod"), -1, "unknown is -1");
    put_file(at("/memory/gpuaas/pod/memory.oom_control"), "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
    put_file(at("/memory/gpuaas/pod/memory.usage_in_bytes"), "4096\n");
    cr_assert_eq(gx_cgroup_oom_kills(&s, "pod"), 3);
    cr_assert_eq(gx_cgroup_memory_bytes(&s, "pod"), 4096);
    /* counters files are read whole into 4 KiB: exactly full is read, one byte more is not */
    static char big[4097];
    memset(big, ' ', sizeof big - 1);
    memcpy(big, "oom_kill 7\n", 11);
    big[4095] = 0;
    put_file(at("/memory/gpuaas/pod/memory.oom_control"), big);
    cr_assert_eq(gx_cgroup_oom_kills(&s, "pod"), 7, "a file that exactly fits");
    big[4095] = ' ';
    put_file(at("/memory/gpuaas/pod/memory.oom_control"), big);
    cr_assert_eq(gx_cgroup_oom_kills(&s, "pod"), 0, "a file too big to read whole is unknown");
    cr_assert_eq(gx_cgroup_pids(&s, "nope", NULL, 0), -1, "no such group");
    cr_assert_eq(gx_cgroup_kill(&s, "nope"), -1);
    cr_assert_eq(gx_cgroup_signal(&s, "nope", SIGTERM, (uid_t)-1), -1);
    cr_assert_eq(gx_cgroup_pids(&s, "../pod", NULL, 0), -1, "a bad name is no group");
}

Test(cgroup, bad_names_and_limits_refused_before_anything_is_made, .init = make_tmp, .fini = rm_tmp)
{
    gx_cgroup_sys s;
    detect_canned(&s, HEAD "34 30 0:31 / @/memory rw - cgroup cgroup rw,memory\n", NULL, NULL);
    mkdirs(at("/memory"));
    gx_err e;
    gx_cgroup_limits ok = {0};
    const char *names[] = {"", "/abs", "../up", "a/../../b", "a//b", "a/"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        gx_err_clear(&e);
        cr_assert_eq(gx_cgroup_create(&s, names[i], &ok, &e), -1, "accepted \"%s\"", names[i]);
        cr_assert_eq(gx_cgroup_remove(&s, names[i], &e), -1);
    }
    gx_cgroup_dev bad_dev = {'x', 1, 3};
    gx_cgroup_limits bad[] = {{.memory_bytes = -1}, {.pids = -5}, {.cpu_millis = INT64_MAX},
                              {.devices = &bad_dev, .ndevices = 1}, {.ndevices = 2}};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        gx_err_clear(&e);
        cr_assert_eq(gx_cgroup_create(&s, "p", &bad[i], &e), -1, "limits %zu accepted", i);
        cr_assert_neq(e.msg[0], 0);
    }
    struct stat st;
    cr_assert_eq(stat(at("/memory/gpuaas"), &st), -1, "nothing created");
    char longrel[PATH_MAX];
    memset(longrel, 'a', sizeof longrel - 10);
    longrel[sizeof longrel - 10] = 0;
    gx_err_clear(&e);
    cr_assert_eq(gx_cgroup_create(&s, longrel, &ok, &e), -1);
    cr_assert(strstr(e.msg, "too long"), "%s", e.msg);
    char files[4][PATH_MAX];
    cr_assert_eq(gx_cgroup_procs_files(&s, longrel, files, 4), -1, "never a cut path");
}

/* ---- real groups on this host (root) ---- */

static gx_cgroup_sys sys;
static char parent[64];

static void real_init(void)
{
    if (geteuid() != 0) cr_skip_test("needs root: creates real cgroups on this host (CI runs as root)");
    snprintf(parent, sizeof parent, "gpuaas-test-%d", (int)getpid());
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_cgroup_detect(&sys, parent, NULL, &e), 0, "%s", e.msg);
    char miss[64];
    cr_assert_eq(gx_cgroup_missing(&sys, GX_CG_REQUIRED, miss, sizeof miss), 0, "this host lacks %s", miss);
}

/* Kill what is left in dir and below, then rmdir depth first (bounded: a test must end). */
static void purge(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *de; (de = readdir(d));) {
        char sub[PATH_MAX];
        if (de->d_type == DT_DIR && strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
            snprintf(sub, sizeof sub, "%s/%s", dir, de->d_name) < (int)sizeof sub)
            purge(sub);
    }
    closedir(d);
    char procs[PATH_MAX];
    snprintf(procs, sizeof procs, "%s/cgroup.procs", dir);
    for (int i = 0; i < 2000 && rmdir(dir) && errno == EBUSY; i++) {
        FILE *f = fopen(procs, "r");
        for (int p; f && fscanf(f, "%d", &p) == 1;) kill(p, SIGKILL);
        if (f) fclose(f);
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
}

static void real_fini(void)
{
    if (!parent[0]) return;
    for (int c = 0; c < GX_CG_NCTRL; c++) {
        const char *root = (sys.on_v2 & GX_CG_BIT(c)) ? sys.v2_root
                         : (sys.on_v1 & GX_CG_BIT(c)) ? sys.v1_root[c] : NULL;
        char dir[PATH_MAX];
        if (root && snprintf(dir, sizeof dir, "%s/%s", root, parent) < (int)sizeof dir) purge(dir);
    }
    while (waitpid(-1, NULL, WNOHANG) > 0) {}
}

/* FILE of the group rel in controller c's hierarchy. */
static const char *gfile(int c, const char *rel, const char *file)
{
    static char p[PATH_MAX];
    const char *root = (sys.on_v2 & GX_CG_BIT(c)) ? sys.v2_root : sys.v1_root[c];
    cr_assert_lt(snprintf(p, sizeof p, "%s/%s/%s%s%s", root, parent, rel, file ? "/" : "", file ? file : ""),
                 (int)sizeof p);
    return p;
}

static int v2(int c) { return (sys.on_v2 & GX_CG_BIT(c)) != 0; }

static void create(const char *rel, const gx_cgroup_limits *l)
{
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_cgroup_create(&sys, rel, l, &e), 0, "%s", e.msg);
}

/* In a forked child: join every hierarchy of rel, or exit 90. */
static void join_or_die(const char *rel)
{
    char files[GX_CG_NCTRL + 1][PATH_MAX], me[32];
    int n = gx_cgroup_procs_files(&sys, rel, files, GX_CG_NCTRL + 1);
    int len = snprintf(me, sizeof me, "%d", (int)getpid());
    if (n <= 0) _exit(90);
    for (int i = 0; i < n; i++) {
        int fd = open(files[i], O_WRONLY | O_CLOEXEC);
        if (fd < 0 || write(fd, me, (size_t)len) != len) _exit(90);
        close(fd);
    }
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

Test(cgroup, real_create_reads_back_reuses_and_removes, .init = real_init, .fini = real_fini)
{
    const char *rel = "team-a/train/g1-p0";
    gx_cgroup_limits l = {.memory_bytes = 64 << 20, .cpu_millis = 1500, .pids = 32};
    create(rel, &l);
    int m2 = v2(GX_CG_MEMORY), c2 = v2(GX_CG_CPU);
    cr_assert_str_eq(slurp(gfile(GX_CG_MEMORY, rel, m2 ? "memory.max" : "memory.limit_in_bytes")), "67108864");
    cr_assert_str_eq(slurp(gfile(GX_CG_PIDS, rel, "pids.max")), "32");
    if (c2) cr_assert_str_eq(slurp(gfile(GX_CG_CPU, rel, "cpu.max")), "150000 100000");
    if (!c2 && (sys.on_v1 & GX_CG_BIT(GX_CG_CPU))) {
        cr_assert_str_eq(slurp(gfile(GX_CG_CPU, rel, "cpu.cfs_quota_us")), "150000");
        cr_assert_str_eq(slurp(gfile(GX_CG_CPU, rel, "cpu.cfs_period_us")), "100000");
    }
    if (m2) cr_assert_str_eq(slurp(gfile(GX_CG_MEMORY, rel, "memory.oom.group")), "1");
    char files[GX_CG_NCTRL + 1][PATH_MAX];
    int n = gx_cgroup_procs_files(&sys, rel, files, GX_CG_NCTRL + 1);
    cr_assert_gt(n, 0);
    for (int i = 0; i < n; i++) cr_assert(exists(files[i]), "%s", files[i]);
    cr_assert_eq(gx_cgroup_pids(&sys, rel, NULL, 0), 0);
    cr_assert_eq(gx_cgroup_kill(&sys, rel), 0);
    cr_assert_eq(gx_cgroup_oom_kills(&sys, rel), 0);
    cr_assert_geq(gx_cgroup_memory_bytes(&sys, rel), 0);

    gx_cgroup_limits none = {0};
    create(rel, &none);
    const char *mem = slurp(gfile(GX_CG_MEMORY, rel, m2 ? "memory.max" : "memory.limit_in_bytes"));
    cr_assert(m2 ? !strcmp(mem, "max") : strtoll(mem, NULL, 10) > (1ll << 62), "memory limit left: %s", mem);
    cr_assert_str_eq(slurp(gfile(GX_CG_PIDS, rel, "pids.max")), "max");
    if (!c2 && (sys.on_v1 & GX_CG_BIT(GX_CG_CPU)))
        cr_assert_str_eq(slurp(gfile(GX_CG_CPU, rel, "cpu.cfs_quota_us")), "-1");

    create("team-a/other", &none);
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_cgroup_remove(&sys, rel, &e), 0, "%s", e.msg);
    cr_assert(!exists(gfile(GX_CG_MEMORY, rel, NULL)));
    cr_assert(!exists(gfile(GX_CG_MEMORY, "team-a/train", NULL)), "empty parent removed");
    cr_assert(exists(gfile(GX_CG_MEMORY, "team-a", NULL)), "a parent with another pod stays");
    cr_assert_eq(gx_cgroup_remove(&sys, "team-a/other", &e), 0, "%s", e.msg);
    cr_assert(!exists(gfile(GX_CG_MEMORY, "team-a", NULL)));
    cr_assert(exists(gfile(GX_CG_MEMORY, "", NULL)), "PARENT itself stays");
    cr_assert_eq(gx_cgroup_remove(&sys, rel, &e), 0, "gone already is success");
    cr_assert_eq(gx_cgroup_pids(&sys, rel, NULL, 0), -1);
}

Test(cgroup, real_busy_group_is_not_removed, .init = real_init, .fini = real_fini)
{
    gx_cgroup_limits none = {0};
    create("busy/pod", &none);
    pid_t c = fork();
    cr_assert_neq(c, -1);
    if (c == 0) { join_or_die("busy/pod"); for (;;) pause(); }
    pid_t got[2];
    for (int i = 0; i < 5000 && gx_cgroup_pids(&sys, "busy/pod", got, 2) < 1; i++)
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    cr_assert_eq(gx_cgroup_pids(&sys, "busy/pod", got, 2), 1);
    cr_assert_eq(got[0], c);
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_cgroup_remove(&sys, "busy/pod", &e), -1);
    cr_assert(strstr(e.msg, "busy/pod") && strstr(e.msg, parent), "%s", e.msg);
    cr_assert_eq(gx_cgroup_kill(&sys, "busy/pod"), 0);
    cr_assert_eq(waitpid(c, NULL, 0), c);
    cr_assert_eq(gx_cgroup_remove(&sys, "busy/pod", &e), 0, "%s", e.msg);
}

Test(cgroup, real_oom_kill_is_counted, .init = real_init, .fini = real_fini)
{
    gx_cgroup_limits l = {.memory_bytes = 32 << 20, .pids = 16};
    create("oom/pod", &l);
    pid_t c = fork();
    cr_assert_neq(c, -1);
    if (c == 0) {
        join_or_die("oom/pod");
        size_t n = (size_t)200 << 20;
        char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) _exit(91);
        for (size_t i = 0; i < n; i += 4096) p[i] = 1;
        _exit(0);
    }
    int st;
    cr_assert_eq(waitpid(c, &st, 0), c);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "child not OOM-killed: status %#x", st);
    cr_assert_geq(gx_cgroup_oom_kills(&sys, "oom/pod"), 1);
}

/* Reads a pid_t from fd, or fails the test when the writer died first. */
static pid_t read_pid(int fd)
{
    pid_t p = 0;
    cr_assert_eq(read(fd, &p, sizeof p), (ssize_t)sizeof p, "the child died before reporting");
    return p;
}

/* Inside the group: a double fork leaves a sleeper orphaned, then this process forks in
 * a loop (its children sleep) and reports the first EAGAIN on `full`. The loop stops
 * forking after 500 children so that a missing pids limit cannot exhaust the host. */
static void double_fork_then_fork_loop(int sleeper_fd, int full)
{
    pid_t a = fork();
    if (a == 0) {
        pid_t s = fork();
        if (s == 0) {
            pid_t me = getpid();
            if (write(sleeper_fd, &me, sizeof me) != sizeof me) _exit(92);
            for (;;) pause();
        }
        _exit(s > 0 ? 0 : 93);
    }
    if (a < 0 || waitpid(a, NULL, 0) != a) _exit(94);
    int made = 0, told = 0;
    for (;;) {
        pid_t p = made < 500 ? fork() : (pause(), -1);
        if (p == 0) for (;;) pause();
        if (p > 0) made++;
        if (p < 0 && errno == EAGAIN && !told) told = write(full, "E", 1) == 1;
    }
}

Test(cgroup, real_kill_ends_double_fork_and_fork_loop, .init = real_init, .fini = real_fini)
{
    gx_cgroup_limits l = {.memory_bytes = 256 << 20, .pids = 32};
    create("forks/pod", &l);
    int sp[2], fp[2];
    cr_assert_eq(pipe2(sp, O_CLOEXEC), 0);
    cr_assert_eq(pipe2(fp, O_CLOEXEC), 0);
    pid_t c = fork();
    cr_assert_neq(c, -1);
    if (c == 0) {
        close(sp[0]);
        close(fp[0]);
        join_or_die("forks/pod");
        double_fork_then_fork_loop(sp[1], fp[1]);
    }
    close(sp[1]);
    close(fp[1]);
    pid_t sleeper = read_pid(sp[0]);
    struct pollfd pfd = {fp[0], POLLIN, 0};
    int ready = 0;
    for (int i = 0; i < 300 && !ready; i++) ready = poll(&pfd, 1, 100) == 1;
    char ch;
    cr_assert(ready && read(fp[0], &ch, 1) == 1, "fork never failed with EAGAIN: no pids limit");

    pid_t got[64];
    int n = gx_cgroup_pids(&sys, "forks/pod", got, 64);
    cr_assert(n > 2 && n <= 32, "%d processes under pids.max 32", n);
    int seen = 0;
    for (int i = 0; i < n && i < 64; i++) seen |= got[i] == sleeper;
    cr_assert(seen, "the double-forked sleeper %d is not listed", (int)sleeper);

    /* One call, then no more signals: whatever is still listed must be on its way out
     * (killed processes take a while to exit on a busy host), never a fork that slipped
     * past the kill. The poll is bounded; its bound is no claim on speed. */
    int left = gx_cgroup_kill(&sys, "forks/pod");
    cr_assert(left >= 0 && left <= 32, "kill returned %d", left);
    int listed = left;
    for (int i = 0; i < 10000 && listed > 0; i++) {
        nanosleep(&(struct timespec){0, 1000000}, NULL);
        listed = gx_cgroup_pids(&sys, "forks/pod", got, 64);
    }
    cr_assert_eq(listed, 0, "%d processes outlived gx_cgroup_kill (first %d)", listed, (int)got[0]);
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_cgroup_remove(&sys, "forks/pod", &e), 0, "%s", e.msg);
    int st;
    cr_assert_eq(waitpid(c, &st, 0), c);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "status %#x", st);
    close(sp[0]);
    close(fp[0]);
}

/* Three sleepers: root; the tenant (65534 in every uid); root's real uid with 65534 as
 * effective uid (a setuid helper: "real uid" means the first field of Uid:). */
Test(cgroup, real_signal_filters_by_real_uid, .init = real_init, .fini = real_fini)
{
    gx_cgroup_limits none = {0};
    create("sig/pod", &none);
    int rp[2];
    cr_assert_eq(pipe2(rp, O_CLOEXEC), 0);
    static const uid_t ruid[3] = {0, 65534, 0}, euid[3] = {0, 65534, 65534};
    pid_t kid[3];
    for (int k = 0; k < 3; k++) {
        kid[k] = fork();
        cr_assert_neq(kid[k], -1);
        if (kid[k] == 0) {
            signal(SIGTERM, SIG_DFL);
            join_or_die("sig/pod");
            if (setresuid(ruid[k], euid[k], euid[k])) _exit(95);
            pid_t me = getpid();
            if (write(rp[1], &me, sizeof me) != sizeof me) _exit(96);
            for (;;) pause();
        }
    }
    close(rp[1]);
    for (int k = 0; k < 3; k++) read_pid(rp[0]);
    cr_assert_eq(gx_cgroup_signal(&sys, "sig/pod", SIGTERM, 12345), 0);
    cr_assert_eq(gx_cgroup_signal(&sys, "sig/pod", SIGTERM, 65534), 1);
    int st;
    cr_assert_eq(waitpid(kid[1], &st, 0), kid[1]);
    cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM, "status %#x", st);
    cr_assert_eq(waitpid(kid[0], &st, WNOHANG), 0, "root's process was signalled too");
    cr_assert_eq(waitpid(kid[2], &st, WNOHANG), 0, "a real-root process was signalled");
    cr_assert_eq(gx_cgroup_signal(&sys, "sig/pod", SIGTERM, (uid_t)-1), 2);
    for (int k = 0; k < 3; k += 2) {
        cr_assert_eq(waitpid(kid[k], &st, 0), kid[k]);
        cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
    }
    close(rp[0]);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* devices.list as sorted lines joined by '|' (the kernel keeps them in write order). */
static const char *sorted_lines(const char *text)
{
    static char out[4096];
    char buf[4096], *v[64], *save = NULL;
    int n = 0;
    snprintf(buf, sizeof buf, "%s", text);
    for (char *l = strtok_r(buf, "\n", &save); l && n < 64; l = strtok_r(NULL, "\n", &save)) v[n++] = l;
    qsort(v, (size_t)n, sizeof *v, cmp_str);
    size_t w = 0;
    out[0] = 0;
    for (int i = 0; i < n && w < sizeof out; i++)
        w += (size_t)snprintf(out + w, sizeof out - w, "%s%s", i ? "|" : "", v[i]);
    return out;
}

Test(cgroup, real_devices_list_is_exact, .init = real_init, .fini = real_fini)
{
    if (!(sys.on_v1 & GX_CG_BIT(GX_CG_DEVICES)))
        cr_skip_test("no v1 devices controller on this host (v2 has none without eBPF)");
    gx_cgroup_dev tun = {'c', 10, 200};
    gx_cgroup_limits l = {.devices = &tun, .ndevices = 1};
    create("dev/pod", &l);
    char want[1024];
    snprintf(want, sizeof want, "%s",
             sorted_lines("c 1:3 rwm\nc 1:5 rwm\nc 1:7 rwm\nc 1:8 rwm\nc 1:9 rwm\n"
                          "c 5:0 rwm\nc 5:2 rwm\nc 136:* rwm\nc 10:200 rwm\n"));
    char got[1024];
    snprintf(got, sizeof got, "%s", sorted_lines(slurp(gfile(GX_CG_DEVICES, "dev/pod", "devices.list"))));
    cr_assert_str_eq(got, want);
    gx_cgroup_limits none = {0};
    create("dev/pod", &none);
    snprintf(want, sizeof want, "%s",
             sorted_lines("c 1:3 rwm\nc 1:5 rwm\nc 1:7 rwm\nc 1:8 rwm\nc 1:9 rwm\n"
                          "c 5:0 rwm\nc 5:2 rwm\nc 136:* rwm\n"));
    cr_assert_str_eq(sorted_lines(slurp(gfile(GX_CG_DEVICES, "dev/pod", "devices.list"))), want,
                     "a reused group keeps only what it is given now");
}
