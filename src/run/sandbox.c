/* sandbox: the bubblewrap command line around one pod, and the start-up probe (sandbox.h).
 * Owns: gx_sandbox_argv's order and refusals, finding bwrap, and the probe that runs the
 * real thing once (as root, through gpuaas-shim --as) before the daemon accepts pods.
 * Invariants: no argv without a non-root uid and gid; every path in it absolute; the
 * command always goes through "SHIM --as UID GID --cwd DIR --", never straight after
 * bwrap's "--".
 * Must not: start pods (run/proc.c does), choose uids or device nodes (the caller does). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "gpu/cuda_region_ops.h"
#include "lib/alloc.h"
#include "run/proc.h"
#include "run/sandbox.h"

extern char **environ;

/* A growing NULL-terminated vector of malloc'd strings (lib/alloc: out of memory
 * aborts there). */
typedef struct strvec {
    char **v;
    size_t n, cap;
} strvec;

static void push(strvec *a, const char *s)
{
    a->v = gx_xgrow(a->v, &a->cap, a->n + 2, sizeof *a->v);
    a->v[a->n] = gx_xstrdup(s);
    a->v[++a->n] = NULL;
}

static void push2(strvec *a, const char *x, const char *y)
{
    push(a, x);
    push(a, y);
}

static void push3(strvec *a, const char *x, const char *y, const char *z)
{
    push(a, x);
    push2(a, y, z);
}

static void push_num(strvec *a, uint64_t v)
{
    char buf[24];
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    push(a, buf);
}

static int is_abs(const char *p)
{
    return p && p[0] == '/';
}

/* Would a mount at dst cover the CUDA shim's preload file or its /run/gpuaas (dst is
 * one of them, or a folder above them)? */
static int covers_cuda(const char *dst)
{
    static const char *const files[] = {"/etc/ld.so.preload", GX_CUDA_LIB_PATH, NULL};
    size_t n = strlen(dst);
    while (n > 1 && dst[n - 1] == '/') n--;
    for (int i = 0; files[i]; i++)
        if (n == 1 || (!strncmp(files[i], dst, n) && (files[i][n] == '/' || files[i][n] == 0))) return 1;
    return !strncmp(dst, "/run/gpuaas/", 12);
}

/* The refusals of sandbox.h, each naming what is wrong. */
static int check_spec(const gx_sandbox_spec *s, int need_work, gx_err *err)
{
    if (s->uid == 0 || s->gid == 0 || s->uid == (uid_t)-1 || s->gid == (gid_t)-1)
        return gx_errf(err, 500, "", "a sandboxed pod never runs as root or uid -1 (uid %u, gid %u)",
                       (unsigned)s->uid, (unsigned)s->gid);
    if (!s->argv || !s->argv[0] || !s->argv[0][0]) return gx_errf(err, 500, "", "the pod's command is empty");
    if (s->tmp_bytes <= 0) return gx_errf(err, 500, "", "the private /tmp needs a size above 0");
    const char *paths[] = {s->bwrap, s->shim, need_work ? s->work_dir : "/", s->cwd ? s->cwd : "/"};
    const char *names[] = {"bwrap", "gpuaas-shim", "the work folder", "the working directory"};
    for (int i = 0; i < 4; i++)
        if (!is_abs(paths[i]))
            return gx_errf(err, 500, "", "%s: \"%s\" is not an absolute path", names[i], paths[i] ? paths[i] : "");
    int ncuda = !!s->cuda_lib + !!s->cuda_region + !!s->cuda_preload;
    if (ncuda && (ncuda != 3 || !is_abs(s->cuda_lib) || !is_abs(s->cuda_region) || !is_abs(s->cuda_preload)))
        return gx_errf(err, 500, "", "the CUDA shim needs the library, the region and the preload file, each an "
                       "absolute path");
    for (size_t i = 0; s->hide && s->hide[i]; i++)
        if (!is_abs(s->hide[i]))
            return gx_errf(err, 500, "", "hidden folder \"%s\" is not an absolute path", s->hide[i]);
    for (size_t i = 0; i < s->nmounts; i++) {
        const gx_sandbox_mount *m = &s->mounts[i];
        if (!is_abs(m->src) || !is_abs(m->dst))
            return gx_errf(err, 500, "", "mount \"%s\" -> \"%s\": both paths must be absolute", m->src ? m->src : "",
                           m->dst ? m->dst : "");
        if ((unsigned)m->kind > GX_MOUNT_DEV)
            return gx_errf(err, 500, "", "mount \"%s\": unknown kind %d", m->src, (int)m->kind);
        if (ncuda && covers_cuda(m->dst))
            return gx_errf(err, 422, "", "mountPath %s would cover the CUDA shim's files (/etc/ld.so.preload, "
                           "/run/gpuaas) on a shared GPU", m->dst);
    }
    return 0;
}

/* "--perms 0755 --dir A" for every ancestor A of dst below "/", then the bind itself (a
 * tmpfs when src is NULL).
 * bwrap makes the missing parents of a bind destination root's 0700 (inside a hidden
 * folder's tmpfs, or /dev), which the pod's uid could not pass; --dir leaves a directory
 * that already exists as it is. */
static void push_bind(strvec *a, const char *how, const char *src, const char *dst)
{
    size_t n = strlen(dst);
    char *anc = gx_xstrdup(dst);
    for (size_t i = 1; i < n; i++) {
        if (dst[i] != '/' || dst[i - 1] == '/') continue;
        anc[i] = 0;
        push2(a, "--perms", "0755");
        push2(a, "--dir", anc);
        anc[i] = '/';
    }
    free(anc);
    if (src) push3(a, how, src, dst);
    else push2(a, how, dst);   /* --tmpfs DST */
}

/* One entry of folder `dir` ("" the root): "name" bound read-only, "name->target" a
 * link made again. */
static void push_entry(strvec *a, const char *dir, const char *e)
{
    const char *arrow = strstr(e, "->");
    char path[600];
    int w = snprintf(path, sizeof path, "%s/%.*s", dir, arrow ? (int)(arrow - e) : (int)strlen(e), e);
    if (w < 0 || (size_t)w >= sizeof path) return;
    if (arrow) push3(a, "--symlink", arrow + 2, path);
    else push3(a, "--ro-bind", path, path);
}

/* The entries of host folder `dir` ("" the root) but ".", ".." and the names in skip[]:
 * folders and files bound read-only, links made again. Read once per pod: cheap, and a
 * folder an admin adds at / (a new mount of shared storage) is seen by the next pod. */
static void push_host_dir(strvec *a, const char *dir, const char *const *skip)
{
    DIR *d = opendir(dir[0] ? dir : "/");
    if (!d) { if (!dir[0]) push3(a, "--ro-bind", "/", "/"); return; } /* cannot happen; the old way */
    struct dirent *de;
    while ((de = readdir(d))) {
        const char *n = de->d_name;
        int skipped = !strcmp(n, ".") || !strcmp(n, "..") || strlen(n) > 255;
        for (size_t i = 0; skip[i] && !skipped; i++) skipped = !strcmp(n, skip[i]);
        if (skipped) continue;
        char path[600], target[4096];
        snprintf(path, sizeof path, "%s/%s", dir, n);
        struct stat st;
        if (lstat(path, &st) < 0) continue;
        if (S_ISLNK(st.st_mode)) {
            ssize_t k = readlink(path, target, sizeof target - 1);
            if (k <= 0) continue;
            target[k] = 0;
            push3(a, "--symlink", target, path);
        } else if (S_ISDIR(st.st_mode) || S_ISREG(st.st_mode)) {
            push3(a, "--ro-bind", path, path);
        }
    }
    closedir(d);
}

/* The root: the host's entries but dev, proc and tmp (the sandbox makes its own), and
 * with the CUDA shim but etc, which push_etc makes. */
static void push_root(strvec *a, const gx_sandbox_spec *s)
{
    static const char *const skip[] = {"dev", "proc", "tmp", NULL};
    static const char *const skip_etc[] = {"dev", "proc", "tmp", "etc", NULL};
    if (!s->root_entries) { push_host_dir(a, "", s->cuda_lib ? skip_etc : skip); return; }
    for (size_t i = 0; s->root_entries[i]; i++)
        if (!s->cuda_lib || strncmp(s->root_entries[i], "etc", 3) || (s->root_entries[i][3] && s->root_entries[i][3] != '-'))
            push_entry(a, "", s->root_entries[i]);
}

/* The CUDA shim's /etc (sandbox.h): a tmpfs, the host's entries bound back and the
 * preload file. Before the pod's mounts, so that a volume below /etc still finds its
 * mount point; check_spec refuses one at /etc itself, which would cover the preload file. */
static void push_cuda_etc(strvec *a, const gx_sandbox_spec *s)
{
    static const char *const skip[] = {"ld.so.preload", NULL};
    push2(a, "--tmpfs", "/etc");
    if (s->etc_entries) {
        for (size_t i = 0; s->etc_entries[i]; i++)
            if (strcmp(s->etc_entries[i], "ld.so.preload")) push_entry(a, "/etc", s->etc_entries[i]);
    } else {
        push_host_dir(a, "/etc", skip);
    }
    push3(a, "--ro-bind", s->cuda_preload, "/etc/ld.so.preload");
}

/* The library and the region in a tmpfs at /run/gpuaas, after the pod's mounts; then
 * both tmpfs read-only. */
static void push_cuda_run(strvec *a, const gx_sandbox_spec *s)
{
    push_bind(a, "--tmpfs", NULL, "/run/gpuaas");
    push3(a, "--ro-bind", s->cuda_lib, GX_CUDA_LIB_PATH);
    push3(a, "--bind", s->cuda_region, GX_CUDA_REGION_PATH);
    push2(a, "--remount-ro", "/run/gpuaas");
    push2(a, "--remount-ro", "/etc");
}

/* The file system, in sandbox.h's order. /tmp and /dev/shm get mode 1777: bwrap makes a
 * tmpfs root's 0755, which the pod's uid could not write. */
static void push_mounts(strvec *a, const gx_sandbox_spec *s, int bind_work)
{
    push_root(a, s);
    push2(a, "--dev", "/dev");
    push2(a, "--perms", "1777");
    push(a, "--size");
    push_num(a, (uint64_t)s->tmp_bytes);
    push2(a, "--tmpfs", "/dev/shm");
    push2(a, "--proc", "/proc");
    push2(a, "--perms", "1777");
    push(a, "--size");
    push_num(a, (uint64_t)s->tmp_bytes);
    push2(a, "--tmpfs", "/tmp");
    for (size_t i = 0; s->hide && s->hide[i]; i++) push2(a, "--tmpfs", s->hide[i]);
    if (bind_work) push_bind(a, "--bind", s->work_dir, s->work_dir);
    if (s->cuda_lib) push_cuda_etc(a, s);
    static const char *const kind[] = {[GX_MOUNT_RO] = "--ro-bind", [GX_MOUNT_RW] = "--bind",
                                       [GX_MOUNT_DEV] = "--dev-bind"};
    for (size_t i = 0; i < s->nmounts; i++) {
        const gx_sandbox_mount *m = &s->mounts[i];
        push_bind(a, kind[m->kind], m->src, m->dst);
    }
    if (s->cuda_lib) push_cuda_run(a, s);
    /* the shim runs inside at its own path: bound there, it is found even where the host's
     * copy is out of the pod's sight (gpuaas built under /tmp, or inside a hidden folder) */
    push_bind(a, "--ro-bind", s->shim, s->shim);
    push2(a, "--remount-ro", "/");
}

/* Namespaces, session, capabilities, then the shim that switches identity inside and
 * enters the working directory as the pod. */
static void push_process(strvec *a, const gx_sandbox_spec *s)
{
    push3(a, "--unshare-pid", "--unshare-ipc", "--unshare-uts");
    if (s->hostname && s->hostname[0]) push2(a, "--hostname", s->hostname);
    push2(a, "--new-session", "--die-with-parent");
    push2(a, "--cap-drop", "ALL");
    push2(a, "--cap-add", "CAP_SETUID");
    push2(a, "--cap-add", "CAP_SETGID");
    push2(a, "--cap-add", "CAP_SETPCAP");
    /* bwrap's chdir runs as root without CAP_DAC_OVERRIDE, kept out of the pod's 0700
     * folder: the shim enters it after the switch, as the pod */
    push2(a, "--chdir", "/");
    push3(a, "--", s->shim, "--as");
    push_num(a, s->uid);
    push_num(a, s->gid);
    push2(a, "--cwd", s->cwd ? s->cwd : s->work_dir);
    push(a, "--");
    for (size_t i = 0; s->argv[i]; i++) push(a, s->argv[i]);
}

/* gx_sandbox_argv, and the probe's variant without a work folder (bind_work 0). */
static char **build_argv(const gx_sandbox_spec *s, int bind_work, gx_err *err)
{
    if (check_spec(s, bind_work, err)) return NULL;
    strvec a = {0};
    push(&a, s->bwrap);
    push_mounts(&a, s, bind_work);
    push_process(&a, s);
    return a.v;
}

char **gx_sandbox_argv(const gx_sandbox_spec *s, gx_err *err)
{
    return build_argv(s, 1, err);
}

void gx_sandbox_free_argv(char **argv)
{
    if (!argv) return;
    for (char **p = argv; *p; p++) free(*p);
    free(argv);
}

/* An absolute path to an executable regular file, copied into out when it fits. */
static int take_if_exec(const char *path, char *out, size_t n)
{
    struct stat st;
    if (!is_abs(path) || strlen(path) >= n) return -1;
    if (stat(path, &st) < 0 || !S_ISREG(st.st_mode) || access(path, X_OK) < 0) return -1;
    memcpy(out, path, strlen(path) + 1);
    return 0;
}

int gx_sandbox_find_bwrap(const char *forced, char *out, size_t n)
{
    if (forced && forced[0]) return take_if_exec(forced, out, n); /* tests rely on no fallback */
    /* PATH is read here, where the search is: it is the process's, not a knob */
    const char *path = getenv("PATH");
    for (const char *p = path; p && *p;) {
        size_t len = strcspn(p, ":");
        char cand[4096];
        int w = snprintf(cand, sizeof cand, "%.*s/bwrap", (int)len, p);
        /* relative PATH entries are skipped: the daemon's cwd must not choose bwrap */
        if (w > 0 && (size_t)w < sizeof cand && take_if_exec(cand, out, n) == 0) return 0;
        p += len;
        if (*p == ':') p++;
    }
    return take_if_exec("/usr/bin/bwrap", out, n);
}

/* Moves fd to min or above (closing the original), so that the spawn's dup2s onto 0..3
 * can never overwrite a source another dup2 still needs. */
static int fd_above(int fd, int min)
{
    if (fd < 0 || fd >= min) return fd;
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, min);
    close(fd);
    return hi;
}

typedef struct probe_run {
    char out[400];   /* the start of what bwrap and the shim wrote to stderr */
    size_t nout;
    int status;      /* waitpid status */
    int up, err;     /* the shim's reports: the marker seen, an errno */
} probe_run;

/* Read the probe's stderr until every writer is gone (bwrap and all it started), keeping
 * the start. A probe silent for 10 s is killed: the daemon must not hang at start. */
static void drain(int fd, pid_t pid, probe_run *r)
{
    char buf[512];
    for (;;) {
        struct pollfd pf = {fd, POLLIN, 0};
        int k = poll(&pf, 1, 10000);
        if (k < 0 && errno == EINTR) continue;
        if (k == 0) {
            kill(pid, SIGKILL);
            snprintf(r->out, sizeof r->out, "the sandbox probe did not finish within 10 s");
            r->nout = strlen(r->out);
            return;
        }
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) return;
        size_t room = sizeof r->out - 1 - r->nout, take = (size_t)n < room ? (size_t)n : room;
        memcpy(r->out + r->nout, buf, take);
        r->nout += take;
        r->out[r->nout] = 0;
    }
}

/* The shim's reports on fd 3: as gx_proc_start_outcome reads them. */
static void read_reports(int fd, probe_run *r)
{
    int v;
    while (read(fd, &v, sizeof v) == (ssize_t)sizeof v) {
        if (v == GX_SHIM_SANDBOX_UP) r->up = 1;
        else if (!r->err) r->err = v;
    }
}

/* Spawn argv with stdin /dev/null, stdout+stderr into errw, the report pipe on fd 3. */
static int spawn_probe(char **argv, int errw, int repw, pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, errw, 1);
    posix_spawn_file_actions_adddup2(&fa, errw, 2);
    posix_spawn_file_actions_adddup2(&fa, repw, 3);
    int rc = posix_spawn(pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

/* Run argv (bwrap) once, to the end: its stderr, status and the shim's reports into r. */
static int run_probe(char **argv, probe_run *r, gx_err *err)
{
    int ep[2], rp[2];
    if (pipe2(ep, O_CLOEXEC) < 0) return gx_errf(err, 500, "", "pipe: %s", strerror(errno));
    if (pipe2(rp, O_CLOEXEC | O_NONBLOCK) < 0) {
        close(ep[0]);
        close(ep[1]);
        return gx_errf(err, 500, "", "pipe: %s", strerror(errno));
    }
    ep[1] = fd_above(ep[1], 4);
    rp[1] = fd_above(rp[1], 4);
    pid_t pid;
    int rc = ep[1] < 0 || rp[1] < 0 ? EMFILE : spawn_probe(argv, ep[1], rp[1], &pid);
    if (ep[1] >= 0) close(ep[1]);
    if (rp[1] >= 0) close(rp[1]);
    if (!rc) {
        drain(ep[0], pid, r);
        while (waitpid(pid, &r->status, 0) < 0 && errno == EINTR) {}
        read_reports(rp[0], r);
    }
    close(ep[0]);
    close(rp[0]);
    if (rc) return gx_errf(err, 500, "", "cannot run %s: %s", argv[0], strerror(rc));
    return 0;
}

/* The probe's verdict: bwrap's own words when it failed, else what the shim reported. */
static int judge(const probe_run *r, const char *shim, gx_err *err)
{
    char first[sizeof r->out];
    snprintf(first, sizeof first, "%.*s", (int)strcspn(r->out, "\n"), r->out);
    if (r->up && !r->err && WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0) return 0;
    if (r->up && r->err)
        return gx_errf(err, 500, "", "the sandbox probe cannot run `true` inside: %s", strerror(r->err));
    if (first[0]) return gx_errf(err, 500, "", "%s", first);
    if (!r->up)
        return gx_errf(err, 500, "", "the sandbox probe ran, but %s inside did not report the identity switch", shim);
    return gx_errf(err, 500, "", "the sandbox probe failed (wait status %d)", r->status);
}

int gx_sandbox_probe(const char *bwrap, const char *shim, uid_t probe_uid, gx_err *err)
{
    char found[4096];
    if (!bwrap || take_if_exec(bwrap, found, sizeof found))
        return gx_errf(err, 500, "", "bwrap not found: install the Debian package bubblewrap");
    if (geteuid() != 0)
        return gx_errf(err, 500, "", "the daemon runs as uid %u: %s", (unsigned)geteuid(),
                       "the sandbox switches each pod to its namespace's uid, which needs root");
    if (!shim || take_if_exec(shim, found, sizeof found))
        return gx_errf(err, 500, "", "gpuaas-shim not found at \"%s\": rebuild with make", shim ? shim : "");
    char *cmd[] = {"true", NULL};
    gx_sandbox_spec s = {.bwrap = bwrap, .shim = shim, .uid = probe_uid, .gid = probe_uid, .work_dir = "/",
                         .cwd = "/", .hostname = "gpuaas-probe", .tmp_bytes = 1 << 20, .argv = cmd};
    char **argv = build_argv(&s, 0, err);
    if (!argv) return -1;
    probe_run r = {0};
    int rc = run_probe(argv, &r, err);
    gx_sandbox_free_argv(argv);
    return rc ? rc : judge(&r, shim, err);
}
