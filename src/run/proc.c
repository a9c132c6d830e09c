/* proc: fork/exec of workload processes behind a status-recording shim.
 * Owns: everything between "here is argv" and "it exited with N".
 * Must not: allocate or call non-async-signal-safe functions between fork and exec
 * except in the shim, which is a plain single-threaded copy of the daemon. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
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

/* Where the shim lives: beside our own binary. */
static int shim_path(char *out, size_t n)
{
    char self[4096];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0) return -1;
    self[k] = 0;
    char *slash = strrchr(self, '/');
    if (!slash) return -1;
    *slash = 0;
    snprintf(out, n, "%s/gpuaas-shim", self);
    return access(out, X_OK);
}

/* The shim is a separate small program started with posix_spawn (vfork semantics):
 * a fork of the busy daemon would copy-on-write its heap (page faults and TLB
 * shootdowns per start), and an exec of the daemon's own binary would pay for
 * loading a dozen shared libraries each time. */
int gx_proc_start(const gx_proc_spec *spec, gx_proc *out, gx_err *err)
{
    memset(out, 0, sizeof *out);
    out->pidfd = -1;
    out->errfd = -1;
    unlink(spec->exit_path);
    size_t n = 0;
    while (spec->argv[n]) n++;
    char **av = calloc(n + 7, sizeof *av);
    if (!av) abort();
    char shim[4200];
    if (shim_path(shim, sizeof shim)) {
        free(av);
        return gx_errf(err, 500, "", "gpuaas-shim is missing beside the gpuaas binary (%s): rebuild with make", shim);
    }
    av[0] = "gpuaas-shim";
    av[1] = (char *)spec->exit_path;
    av[2] = (char *)spec->log_path;
    av[3] = (char *)(spec->cwd ? spec->cwd : "");
    av[4] = "--";
    for (size_t i = 0; i < n; i++) av[5 + i] = spec->argv[i];
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0) { free(av); return gx_errf(err, 500, "", "pipe: %s", strerror(errno)); }
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pfd[1], 3); /* dup2 clears close-on-exec */
    posix_spawnattr_init(&at);
    sigset_t none, all;
    sigemptyset(&none);
    sigfillset(&all);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &all);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int rc = posix_spawn(&pid, shim, &fa, &at, av, spec->envp);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&at);
    free(av);
    close(pfd[1]);
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

int gx_proc_start_error(gx_proc *p)
{
    if (p->errfd < 0) return 0;
    int e = 0;
    ssize_t r;
    while ((r = read(p->errfd, &e, sizeof e)) < 0 && errno == EINTR) {}
    close(p->errfd);
    p->errfd = -1;
    return r == (ssize_t)sizeof e ? e : 0;
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
