/* proc: fork/exec of workload processes behind a status-recording shim.
 * Owns: everything between "here is argv" and "it exited with N".
 * Must not: allocate or call non-async-signal-safe functions between fork and exec
 * except in the shim, which is a plain single-threaded copy of the daemon. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
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

static void write_status(const char *path, const char *text)
{
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    ssize_t w = write(fd, text, strlen(text));
    (void)w;
    fsync(fd);
    close(fd);
    rename(tmp, path);
}

/* The grandchild: becomes the command. Reports exec failure through errfd. */
static void __attribute__((noreturn)) exec_command(const gx_proc_spec *spec, int errfd)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
    int null = open("/dev/null", O_RDONLY);
    int log = open(spec->log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    int e = 0;
    if (null < 0 || log < 0) e = errno;
    else if (dup2(null, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0) e = errno;
    else if (spec->cwd && chdir(spec->cwd) < 0) e = errno;
    if (!e) {
        execvpe(spec->argv[0], spec->argv, spec->envp);
        e = errno;
    }
    ssize_t w = write(errfd, &e, sizeof e);
    (void)w;
    _exit(127);
}

/* The shim: own session, immune to the polite signals, records the exit status. */
static void __attribute__((noreturn)) run_shim(const gx_proc_spec *spec, int errfd)
{
    setsid();
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGCHLD, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    /* Drop every inherited descriptor (listening sockets, the database, epoll). */
    if (errfd > 3) close_range(3, (unsigned)errfd - 1, 0);
    close_range((unsigned)errfd + 1, ~0U, 0);
    pid_t child = fork();
    if (child < 0) {
        int e = errno;
        ssize_t w = write(errfd, &e, sizeof e);
        (void)w;
        _exit(127);
    }
    if (child == 0) exec_command(spec, errfd);
    close(errfd);
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
    write_status(spec->exit_path, text);
    _exit(code);
}

int gx_proc_start(const gx_proc_spec *spec, gx_proc *out, gx_err *err)
{
    memset(out, 0, sizeof *out);
    out->pidfd = -1;
    unlink(spec->exit_path);
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0) return gx_errf(err, 500, "", "pipe: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return gx_errf(err, 500, "", "fork: %s", strerror(errno));
    }
    if (pid == 0) {
        close(pfd[0]);
        run_shim(spec, pfd[1]);
    }
    close(pfd[1]);
    int e = 0;
    ssize_t n;
    while ((n = read(pfd[0], &e, sizeof e)) < 0 && errno == EINTR) {}
    close(pfd[0]);
    out->pid = pid;
    out->is_child = 1;
    if (n == (ssize_t)sizeof e) {
        /* exec failed: the shim exits on its own; reap it now. */
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
        out->pid = 0;
        return gx_errf(err, 422, "spec.template.spec.containers[0].command", "cannot run \"%s\": %s",
                       spec->argv[0], strerror(e));
    }
    out->start_time = gx_proc_start_time(pid);
    out->pidfd = pidfd_open_compat(pid);
    return 0;
}

int gx_proc_adopt(pid_t pid, uint64_t start_time, gx_proc *out)
{
    memset(out, 0, sizeof *out);
    out->pidfd = -1;
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
    p->pidfd = -1;
}
