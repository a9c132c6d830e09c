/* proc: fork/exec of workload processes behind a status-recording shim.
 * Owns: everything between "here is argv" and "it exited with N".
 * Must not: allocate or call non-async-signal-safe functions between fork and exec
 * (posix_spawn does the fork/exec); put the Job's environment in the shim's own. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/alloc.h"
#include "run/proc.h"

uint64_t gx_proc_start_time(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    /* comm may hold spaces and ')' : fields resume after the last ')'. */
    char *p = strrchr(buf, ')');
    if (!p) return 0;
    p += 2; /* now at field 3 (state) */
    if (*p == 'Z' || *p == 'X') return 0; /* a zombie is as good as gone */
    for (int field = 3; field < 22 && p; field++) {
        p = strchr(p, ' ');
        if (p) p++;
    }
    return p ? strtoull(p, NULL, 10) : 0;
}

static int pidfd_open_compat(pid_t pid)
{
#ifdef SYS_pidfd_open
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0) fcntl(fd, F_SETFD, FD_CLOEXEC);
    return fd;
#else
    (void)pid;
    return -1;
#endif
}

int gx_proc_shim_path(char *out, size_t n)
{
    char self[4096];
    if (n) out[0] = 0; /* callers print it in their error */
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0) return -1;
    self[k] = 0;
    char *slash = strrchr(self, '/');
    if (!slash) return -1;
    *slash = 0;
    int w = snprintf(out, n, "%s/gpuaas-shim", self);
    if (w < 0 || (size_t)w >= n) return -1;
    return access(out, X_OK);
}

/* Moves fd to a number >= 5 (closing the original), so that the spawn's dup2s onto 3 and 4
 * can never overwrite a source that another dup2 still needs. */
static int fd_above_4(int fd)
{
    if (fd < 0 || fd > 4) return fd;
    int hi = fcntl(fd, F_DUPFD_CLOEXEC, 5);
    close(fd);
    return hi;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* The command's environment as NUL-terminated strings in a sealed memfd (the shim's fd 4),
 * instead of the shim's own environment: the shim and bwrap run as root outside the
 * sandbox, and a Job's LD_PRELOAD or LD_LIBRARY_PATH must reach only its command's loader.
 * The seals let the shim tell this fd from a stray one and keep the contents fixed. */
static int env_memfd(char *const *envp)
{
    int fd = memfd_create("gpuaas-env", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) return -1;
    for (size_t i = 0; envp && envp[i]; i++) {
        if (write_all(fd, envp[i], strlen(envp[i]) + 1) < 0) goto fail;
    }
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) goto fail;
    return fd;
fail:;
    int e = errno;
    close(fd);
    errno = e;
    return -1;
}

/* The shim's argv: gpuaas-shim EXIT LOG CWD [--cgroup F]... [--sandboxed] -- COMMAND...
 * The strings are borrowed from spec and c; free only the array. */
static char **shim_argv(const gx_proc_spec *spec, const gx_proc_contain *c)
{
    size_t n = 0;
    while (spec->argv[n]) n++;
    int ncg = c && c->cgroup_files ? c->ncgroup_files : 0;
    char **av = gx_xcalloc(n + 7 + 2 * (size_t)(ncg > 0 ? ncg : 0), sizeof *av);
    size_t k = 0;
    av[k++] = "gpuaas-shim";
    av[k++] = (char *)spec->exit_path;
    av[k++] = (char *)spec->log_path;
    av[k++] = (char *)(spec->cwd ? spec->cwd : "");
    for (int i = 0; i < ncg; i++) {
        av[k++] = "--cgroup";
        av[k++] = (char *)c->cgroup_files[i];
    }
    if (c && c->sandboxed) av[k++] = "--sandboxed";
    av[k++] = "--";
    for (size_t i = 0; i < n; i++) av[k++] = spec->argv[i];
    return av;
}

/* The shim's own environment: a fixed PATH and nothing of the Job's (see env_memfd). */
static char *const shim_env[] = {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", NULL};

/* posix_spawn of the shim: new session, default signals, errw on fd 3 and envfd on fd 4
 * (dup2 clears their close-on-exec). Returns posix_spawn's error number. */
static int spawn_shim(const char *shim, char **av, int errw, int envfd, pid_t *pid)
{
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, errw, 3);
    posix_spawn_file_actions_adddup2(&fa, envfd, 4);
    posix_spawnattr_init(&at);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    int rc = posix_spawn(pid, shim, &fa, &at, av, shim_env);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    return rc;
}

/* The shim is a separate small program started with posix_spawn (vfork semantics):
 * a fork of the busy daemon would copy-on-write its heap (page faults and TLB
 * shootdowns per start), and an exec of the daemon's own binary would pay for
 * loading a dozen shared libraries each time. */
int gx_proc_start_contained(const gx_proc_spec *spec, const gx_proc_contain *c, gx_proc *out,
                            gx_err *err)
{
    memset(out, 0, sizeof *out);
    out->pidfd = -1;
    out->errfd = -1;
    unlink(spec->exit_path);
    char shim[4200];
    if (gx_proc_shim_path(shim, sizeof shim))
        return gx_errf(err, 500, "", "gpuaas-shim is missing beside the gpuaas binary (%s): rebuild with make", shim);
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0) return gx_errf(err, 500, "", "pipe: %s", strerror(errno));
    pfd[1] = fd_above_4(pfd[1]);
    int envfd = fd_above_4(env_memfd(spec->envp));
    if (pfd[1] < 0 || envfd < 0) {
        int e = errno;
        close(pfd[0]);
        if (pfd[1] >= 0) close(pfd[1]);
        if (envfd >= 0) close(envfd);
        return gx_errf(err, 500, "", "cannot pass the environment to the shim: %s", strerror(e));
    }
    /* a sandbox process may hold the write end after the shim is gone: never block on it */
    fcntl(pfd[0], F_SETFL, O_NONBLOCK);
    char **av = shim_argv(spec, c);
    pid_t pid;
    int rc = spawn_shim(shim, av, pfd[1], envfd, &pid);
    free(av);
    close(pfd[1]);
    close(envfd);
    if (rc) {
        close(pfd[0]);
        return gx_errf(err, 500, "", "cannot start the process shim: %s", strerror(rc));
    }
    /* Do not wait for the command's exec here (that would stall the daemon's loop for
     * the shim's start-up): the pipe is read once the shim has exited. */
    out->pid = pid;
    out->is_child = 1;
    out->errfd = pfd[0];
    out->start_time = gx_proc_start_time(pid);
    out->pidfd = pidfd_open_compat(pid);
    return 0;
}

int gx_proc_start(const gx_proc_spec *spec, gx_proc *out, gx_err *err)
{
    return gx_proc_start_contained(spec, NULL, out, err);
}

/* Every int on the pipe: the sandbox marker, and at most one errno (from the shim outside
 * when bwrap or a cgroup failed, or from the shim inside when the switch or the exec did). */
int gx_proc_start_outcome(gx_proc *p, int *sandbox_up)
{
    if (p->errfd < 0) {
        if (sandbox_up) *sandbox_up = -1;
        return 0;
    }
    int up = 0, e = 0, v;
    for (;;) {
        ssize_t r = read(p->errfd, &v, sizeof v);
        if (r < 0 && errno == EINTR) continue;
        if (r != (ssize_t)sizeof v) break; /* EOF, EAGAIN: writes of 4 bytes are atomic */
        if (v == GX_SHIM_SANDBOX_UP) up = 1;
        else if (!e) e = v;
    }
    close(p->errfd);
    p->errfd = -1;
    if (sandbox_up) *sandbox_up = up;
    return e;
}

int gx_proc_start_error(gx_proc *p)
{
    return gx_proc_start_outcome(p, NULL);
}

int gx_proc_adopt(pid_t pid, uint64_t start_time, gx_proc *out)
{
    memset(out, 0, sizeof *out);
    out->pidfd = -1;
    out->errfd = -1;
    if (pid <= 0) return -1;
    uint64_t st = gx_proc_start_time(pid);
    if (!st || st != start_time) return -1;
    out->pid = pid;
    out->start_time = st;
    out->pidfd = pidfd_open_compat(pid);
    return 0;
}

/* Is /proc/<pid>/cmdline "gpuaas-shim\0EXIT_PATH\0..."? A command line longer than the
 * buffer is cut, which never matters: the two words sought come first. */
/* A shim is the daemon's own child: it runs as the daemon's user. A pod's process (its
 * namespace's uid when sandboxed) may name itself gpuaas-shim and another pod's exit file,
 * but cannot take that uid, so it is never adopted as that pod. */
static int is_shim_for(const char *pid, const char *exit_path)
{
    char path[64], buf[4200 + 16];
    struct stat st;
    snprintf(path, sizeof path, "/proc/%s", pid);
    if (stat(path, &st) || st.st_uid != geteuid()) return 0;
    snprintf(path, sizeof path, "/proc/%s/cmdline", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) return 0;
    buf[n] = 0;
    size_t l0 = strlen(buf);
    if ((size_t)n <= l0 + 1) return 0;
    const char *base = strrchr(buf, '/');
    base = base ? base + 1 : buf;
    return !strcmp(base, "gpuaas-shim") && !strcmp(buf + l0 + 1, exit_path);
}

int gx_proc_find_shim(const char *exit_path, gx_proc *out)
{
    memset(out, 0, sizeof *out);
    out->pidfd = -1;
    out->errfd = -1;
    DIR *d = opendir("/proc");
    if (!d) return -1;
    int rc = -1;
    for (struct dirent *e; rc && (e = readdir(d));) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9' || !is_shim_for(e->d_name, exit_path)) continue;
        pid_t pid = (pid_t)atoi(e->d_name);
        rc = gx_proc_adopt(pid, gx_proc_start_time(pid), out);
    }
    closedir(d);
    return rc;
}

int gx_proc_signal(const gx_proc *p, int sig)
{
    if (p->pid <= 0) return -1;
    return kill(-p->pid, sig);
}

int gx_proc_exited(gx_proc *p)
{
    if (p->pid <= 0) return 1;
    if (p->is_child) {
        int st;
        pid_t r = waitpid(p->pid, &st, WNOHANG);
        if (r == p->pid || (r < 0 && errno == ECHILD)) return 1;
        return 0;
    }
    return gx_proc_start_time(p->pid) != p->start_time;
}

int gx_proc_read_status(const char *exit_path, int *code, int *signal_no)
{
    FILE *f = fopen(exit_path, "re");
    if (!f) return -1;
    char word[16];
    int v = 0;
    int ok = fscanf(f, "%15s %d", word, &v) == 2;
    fclose(f);
    if (!ok) return -1;
    if (!strcmp(word, "signal")) {
        *signal_no = v;
        *code = 128 + v;
    } else {
        *signal_no = 0;
        *code = v;
    }
    return 0;
}

void gx_proc_close(gx_proc *p)
{
    if (p->pidfd >= 0) close(p->pidfd);
    if (p->errfd >= 0) close(p->errfd);
    p->pidfd = p->errfd = -1;
}
