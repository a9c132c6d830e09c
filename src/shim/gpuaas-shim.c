/* gpuaas-shim: the small parent of every workload process.
 * Usage (by the daemon only): gpuaas-shim EXIT_FILE LOG_FILE CWD -- COMMAND [ARGS...]
 * with fd 3 the write end of the daemon's error pipe.
 * Owns: starting the command (stdin /dev/null, stdout+stderr appended to LOG_FILE,
 * default signals), waiting for it, and writing "exit N" / "signal N" to EXIT_FILE
 * before exiting with the same status, so the status outlives a daemon restart.
 * It ignores SIGTERM/SIGINT/SIGHUP (a stop of the process group must leave it alive
 * to record the command's end); only SIGKILL ends it early.
 * Must not: link anything but libc: it is started once per pod and must be cheap. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

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

/* The grandchild: becomes the command. Reports a failure to start through errfd. */
static void __attribute__((noreturn)) exec_command(char **argv, const char *log_path, const char *cwd, int errfd)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    for (int s = 1; s < NSIG; s++) signal(s, SIG_DFL);
    int null = open("/dev/null", O_RDONLY);
    int log = open(log_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
    int e = 0;
    if (null < 0 || log < 0) e = errno;
    else if (dup2(null, 0) < 0 || dup2(log, 1) < 0 || dup2(log, 2) < 0) e = errno;
    else if (cwd[0] && chdir(cwd) < 0) e = errno;
    if (!e) {
        if (null > 2) close(null);
        if (log > 2) close(log);
        execvp(argv[0], argv);
        e = errno;
    }
    ssize_t w = write(errfd, &e, sizeof e);
    (void)w;
    _exit(127);
}

int main(int argc, char **argv)
{
    if (argc < 6 || strcmp(argv[4], "--")) {
        fputs("gpuaas-shim is started by gpuaas serve, not by hand\n", stderr);
        return 2;
    }
    const char *exit_p = argv[1], *log_p = argv[2], *cwd = argv[3];
    int errfd = 3;
    fcntl(errfd, F_SETFD, FD_CLOEXEC);
    close_range(4, ~0U, 0);
    signal(SIGTERM, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    pid_t child = fork();
    if (child < 0) {
        int e = errno;
        ssize_t w = write(errfd, &e, sizeof e);
        (void)w;
        return 127;
    }
    if (child == 0) exec_command(argv + 5, log_p, cwd, errfd);
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
    write_status(exit_p, text);
    return code;
}

