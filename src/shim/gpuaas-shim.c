/* gpuaas-shim: the small parent of every workload process, and the identity switch inside
 * its sandbox.
 * Usage (by the daemon only):
 *   gpuaas-shim EXIT_FILE LOG_FILE CWD [--cgroup PROCS_FILE]... [--sandboxed] -- COMMAND...
 *   gpuaas-shim --as UID GID [--cwd DIR] -- COMMAND...   (inside bwrap: src/run/sandbox.h)
 * fd 3: the write end of the daemon's report pipe (ints: an errno, or GX_SHIM_SANDBOX_UP).
 * fd 4: the command's environment, NUL-terminated strings in a sealed memfd (src/run/proc.c).
 * Owns, outer mode: starting the command (stdin /dev/null, stdout+stderr appended to
 * LOG_FILE, default signals, in the pod's cgroups), waiting for it, and writing "exit N" /
 * "signal N" to EXIT_FILE before exiting with the same status, so the status outlives a
 * daemon restart. It ignores SIGTERM/SIGINT/SIGHUP (a stop of the process group must leave
 * it alive to record the command's end); only SIGKILL ends it early. With --sandboxed the
 * command is bwrap: it gets the shim's own (clean) environment and fds 3 and 4, which it
 * passes on to the inner shim.
 * Owns, inner mode (--as): becoming UID/GID for good (no groups, no capabilities, bounding
 * and ambient sets empty, no_new_privs), checking that it did, entering DIR as that uid
 * (bwrap's own --chdir runs as a root without CAP_DAC_OVERRIDE, which a pod's 0700 folder
 * keeps out), then the exec.
 * Must not: link anything but libc (started once per pod, must be cheap); run the command
 * when any step of the switch failed; follow a symlink where it writes as root. */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Same value as GX_SHIM_SANDBOX_UP in src/run/proc.h (this file links only libc). */
#define SHIM_SANDBOX_UP 0x53424f58
#define ERR_FD 3
#define ENV_FD 4

extern char **environ;

/* Send one int to the daemon, if fd 3 is there. SIGPIPE is ignored first: a daemon that
 * restarted has closed its end, and that must not turn an exit 127 into a signal. */
static void report(int v)
{
    if (fcntl(ERR_FD, F_GETFD) < 0) return;
    signal(SIGPIPE, SIG_IGN);
    ssize_t w = write(ERR_FD, &v, sizeof v);
    (void)w;
}

static void reset_signals(void)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
}

/* Is fd 4 the daemon's environment? Only a memfd carries seals, and the daemon sets all
 * four: a stray inherited fd 4 is never mistaken for it. */
static int is_env_fd(void)
{
    int seals = fcntl(ENV_FD, F_GET_SEALS);
    int want = F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL;
    return seals >= 0 && (seals & want) == want;
}

/* The environment in fd 4 as an envp (malloc'd, never freed: we exec or exit), or NULL
 * with *e set. pread: the outer and the inner shim share the file offset. */
static char **read_env(int *e)
{
    struct stat st;
    if (fstat(ENV_FD, &st) < 0) { *e = errno; return NULL; }
    if (st.st_size > (1 << 26)) { *e = E2BIG; return NULL; }
    size_t n = (size_t)st.st_size, got = 0, count = 0;
    char *buf = malloc(n + 1);
    if (!buf) { *e = ENOMEM; return NULL; }
    while (got < n) {
        ssize_t r = pread(ENV_FD, buf + got, n - got, (off_t)got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) { *e = r < 0 ? errno : EIO; return NULL; }
        got += (size_t)r;
    }
    buf[n] = 0;
    for (size_t i = 0; i < n; i++) count += buf[i] == 0;
    char **env = calloc(count + 1, sizeof *env);
    if (!env) { *e = ENOMEM; return NULL; }
    for (size_t i = 0, k = 0; i < n && k < count; i += strlen(buf + i) + 1) env[k++] = buf + i;
    return env;
}

/* Make the daemon's environment (fd 4) ours, for execvp's PATH search and the command.
 * Without fd 4 (a shim started by hand) the environment is left as it is. */
static int adopt_env(void)
{
    if (!is_env_fd()) return 0;
    int e = 0;
    char **env = read_env(&e);
    if (!env) return e;
    environ = env;
    return 0;
}

/* ---- outer mode ---- */

/* Write text to path through path.tmp and a rename, so a reader never sees half a record.
 * The folder is root's, but a symlink planted at path.tmp must not make us write elsewhere:
 * O_CREAT|O_EXCL never follows one, and a stale entry is unlinked (the link itself, not its
 * target) before one retry. rename() replaces a link at path, never its target. */
static void write_status(const char *path, const char *text)
{
    size_t n = strlen(path);
    char *tmp = malloc(n + sizeof ".tmp");
    if (!tmp) return;
    memcpy(tmp, path, n);
    memcpy(tmp + n, ".tmp", sizeof ".tmp");
    int flags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
    int fd = open(tmp, flags, 0644);
    if (fd < 0 && errno == EEXIST && unlink(tmp) == 0) fd = open(tmp, flags, 0644);
    if (fd >= 0) {
        ssize_t w = write(fd, text, strlen(text));
        int ok = w == (ssize_t)strlen(text) && fsync(fd) == 0;
        if (close(fd) == 0 && ok) rename(tmp, path);
        else unlink(tmp);
    }
    free(tmp);
}

/* Join the pod's cgroups: our own pid into each PROCS_FILE after a --cgroup in opts. The
 * child joins, not the shim, so killing the group never kills the one who records the end.
 * Returns 0 or the errno of the first that failed. */
static int join_cgroups(char **opts)
{
    char pid[24];
    int len = snprintf(pid, sizeof pid, "%d\n", (int)getpid());
    for (char **o = opts; *o && strcmp(*o, "--"); o++) {
        if (strcmp(*o, "--cgroup")) continue;
        int fd = open(*++o, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) return errno;
        ssize_t w = write(fd, pid, (size_t)len);
        int e = w == len ? 0 : w < 0 ? errno : EIO;
        close(fd);
        if (e) return e;
    }
    return 0;
}

/* stdin from /dev/null, stdout and stderr appended to the log (never through a symlink:
 * the shim is root, the log folder is the daemon's), then the working folder. */
static int setup_stdio(const char *log_path, const char *cwd)
{
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (null < 0) return errno;
    int log = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (log < 0) {
        int e = errno;
        close(null);
        return e;
    }
    int e = 0;
    if (dup2(null, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0) e = errno;
    if (null > 2) close(null);
    if (log > 2) close(log);
    if (!e && cwd[0] && chdir(cwd) < 0) e = errno;
    return e;
}

/* The child: becomes the command (or bwrap, with --sandboxed). Reports a failure to start
 * through fd 3 and exits 127. The cgroups are joined last, so the log is opened before
 * the pod's device rules apply. */
static void __attribute__((noreturn)) exec_command(char **cmd, char **opts, int sandboxed, const char *log_path,
                                                   const char *cwd)
{
    int e = setup_stdio(log_path, cwd);
    if (!e && !sandboxed) e = adopt_env();
    if (!e) e = join_cgroups(opts);
    /* bwrap passes fds 3 and 4 on to the shim inside; a plain command gets neither */
    if (!e && sandboxed && fcntl(ERR_FD, F_SETFD, 0) < 0) e = errno;
    if (!e && sandboxed && is_env_fd() && fcntl(ENV_FD, F_SETFD, 0) < 0) e = errno;
    if (!e) {
        reset_signals();
        execvp(cmd[0], cmd);
        e = errno;
    }
    report(e);
    _exit(127);
}

/* Outer usage: EXIT LOG CWD [--cgroup F]... [--sandboxed] -- COMMAND... Returns the index
 * of COMMAND, or 0 when argv is not that. */
static int parse_outer(int argc, char **argv, int *sandboxed)
{
    *sandboxed = 0;
    int i = 4;
    while (i < argc && strcmp(argv[i], "--")) {
        if (!strcmp(argv[i], "--cgroup") && i + 1 < argc) i += 2;
        else if (!strcmp(argv[i], "--sandboxed")) *sandboxed = 1, i++;
        else return 0;
    }
    return i + 1 < argc ? i + 1 : 0;
}

static int outer_main(int argc, char **argv)
{
    int sandboxed, cmd = argc >= 6 ? parse_outer(argc, argv, &sandboxed) : 0;
    if (!cmd) {
        fputs("gpuaas-shim is started by gpuaas serve, not by hand\n", stderr);
        return 2;
    }
    const char *exit_p = argv[1], *log_p = argv[2], *cwd = argv[3];
    fcntl(ERR_FD, F_SETFD, FD_CLOEXEC);
    if (!is_env_fd()) close(ENV_FD);
    fcntl(ENV_FD, F_SETFD, FD_CLOEXEC);
    close_range(ENV_FD + 1, ~0U, 0);
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    pid_t child = fork();
    if (child < 0) {
        report(errno);
        return 127;
    }
    if (child == 0) exec_command(argv + cmd, argv + 4, sandboxed, log_p, cwd);
    close(ERR_FD);
    close(ENV_FD);
    int status;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    char text[64];
    int code;
    if (WIFSIGNALED(status)) {
        snprintf(text, sizeof text, "signal %d\n", WTERMSIG(status));
        code = 128 + WTERMSIG(status);
    } else {
        code = WEXITSTATUS(status);
        snprintf(text, sizeof text, "exit %d\n", code);
    }
    write_status(exit_p, text);
    return code;
}

/* ---- inner mode (--as) ---- */

/* A uid or gid: decimal, not 0 (root) and not -1 (which set*id reads as "unchanged"). */
static int parse_id(const char *s, unsigned *out)
{
    if (!*s || *s < '0' || *s > '9') return -1;
    char *end;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (errno || *end || v == 0 || v >= 0xffffffffUL) return -1;
    *out = (unsigned)v;
    return 0;
}

/* The highest capability number this kernel knows (inside bwrap, /proc is the pod's). */
static int cap_last(void)
{
    char buf[16];
    int fd = open("/proc/sys/kernel/cap_last_cap", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return -1;
    buf[n] = 0;
    int v = atoi(buf);
    return v > 0 && v < 64 ? v : -1;
}

static int capget_all(struct __user_cap_data_struct d[2])
{
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    return (int)syscall(SYS_capget, &h, d);
}

/* Every step of the switch, in the only order that works: the bounding set needs
 * CAP_SETPCAP, setgroups/setresgid need CAP_SETGID, and setresuid (needing CAP_SETUID)
 * clears the effective and permitted sets, so it comes last of those; the inheritable set
 * survives setresuid and is cleared after it. Returns 0 or an errno, naming the step. */
static int switch_identity(uid_t uid, gid_t gid, int last, const char **step)
{
    for (int c = 0; c <= last; c++) {
        *step = "dropping the capability bounding set";
        if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) return errno;
    }
    *step = "setgroups";
    if (setgroups(0, NULL) < 0) return errno;
    *step = "setresgid";
    if (setresgid(gid, gid, gid) < 0) return errno;
    *step = "setresuid";
    if (setresuid(uid, uid, uid) < 0) return errno;
    struct __user_cap_header_struct h = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct none[2];
    memset(none, 0, sizeof none);
    *step = "clearing the capability sets";
    if (syscall(SYS_capset, &h, none) < 0) return errno;
    *step = "clearing the ambient capabilities";
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0) return errno;
    *step = "setting no_new_privs";
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) return errno;
    return 0;
}

/* Trust nothing: read back what the switch should have left. Returns 0, or EPERM naming
 * what is still there. */
static int verify_identity(uid_t uid, gid_t gid, int last, const char **what)
{
    uid_t r, e, s;
    gid_t rg, eg, sg;
    struct __user_cap_data_struct d[2];
    *what = "uids differ after the switch";
    if (getresuid(&r, &e, &s) || r != uid || e != uid || s != uid) return EPERM;
    *what = "gids differ after the switch";
    if (getresgid(&rg, &eg, &sg) || rg != gid || eg != gid || sg != gid) return EPERM;
    *what = "supplementary groups remain after the switch";
    if (getgroups(0, NULL) != 0) return EPERM;
    *what = "capabilities remain after the switch";
    if (capget_all(d) < 0) return errno;
    for (int i = 0; i < 2; i++)
        if (d[i].effective || d[i].permitted || d[i].inheritable) return EPERM;
    for (int c = 0; c <= last; c++) {
        *what = "the ambient or bounding capability set is not empty after the switch";
        if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, c, 0, 0) != 0) return EPERM;
        if (prctl(PR_CAPBSET_READ, c, 0, 0, 0) != 0) return EPERM;
    }
    *what = "no_new_privs is not set after the switch";
    if (prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0) != 1) return EPERM;
    return 0;
}

static void __attribute__((noreturn)) refuse(const char *uid, const char *why, int e)
{
    report(e);
    fprintf(stderr, "gpuaas-shim: cannot switch to uid %s: %s%s%s\n", uid, why, e ? ": " : "",
            e ? strerror(e) : "");
    _exit(127);
}

/* gpuaas-shim --as UID GID [--cwd DIR] -- COMMAND...: run by bwrap as root holding only
 * CAP_SETUID, CAP_SETGID and CAP_SETPCAP; becomes UID/GID for good, or runs nothing. A
 * failed chdir or exec comes after the marker: the sandbox was fine, the command was not. */
static int as_main(int argc, char **argv)
{
    unsigned uid, gid;
    const char *cwd = argc > 5 && !strcmp(argv[4], "--cwd") ? argv[5] : NULL;
    int cmd = cwd ? 7 : 5;
    if (argc <= cmd || strcmp(argv[cmd - 1], "--"))
        refuse(argc > 2 ? argv[2] : "?", "usage: --as UID GID [--cwd DIR] -- COMMAND...", EINVAL);
    if (parse_id(argv[2], &uid) || parse_id(argv[3], &gid))
        refuse(argv[2], "uid and gid must be numbers other than 0 (root)", EINVAL);
    const char *step = "reading /proc/sys/kernel/cap_last_cap";
    errno = 0;
    int last = cap_last();
    if (last < 0) refuse(argv[2], step, errno ? errno : EINVAL);
    int e = switch_identity(uid, gid, last, &step);
    if (!e) e = verify_identity(uid, gid, last, &step);
    if (e) refuse(argv[2], step, e);
    if ((e = adopt_env())) refuse(argv[2], "reading the environment (fd 4)", e);
    close_range(ENV_FD, ~0U, 0);
    report(SHIM_SANDBOX_UP);
    if (cwd && chdir(cwd) < 0) {
        e = errno;
        report(e);
        fprintf(stderr, "gpuaas-shim: cannot enter the working directory %s: %s\n", cwd, strerror(e));
        _exit(127);
    }
    fcntl(ERR_FD, F_SETFD, FD_CLOEXEC);
    reset_signals();
    execvp(argv[cmd], argv + cmd);
    e = errno;
    report(e);
    fprintf(stderr, "gpuaas-shim: cannot run %s: %s\n", argv[cmd], strerror(e));
    _exit(127);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--as")) return as_main(argc, argv);
    return outer_main(argc, argv);
}
