/* test_fleet_git_util: what the publisher's tests need around real git repositories:
 * a temporary folder, shell commands (the git CLI inspects what libgit2 wrote, so the
 * two are checked against each other), a command's output, and a git daemon serving
 * the folder over git:// (the one way a bare repository's hooks run on a push: a
 * local-path push by libgit2 writes the objects and refs itself, without hooks). */
#ifndef TEST_FLEET_GIT_UTIL_H
#define TEST_FLEET_GIT_UTIL_H
#include <criterion/criterion.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static char git_tmp[256];
static pid_t git_daemon_pid;

static inline void git_tmp_make(void)
{
    snprintf(git_tmp, sizeof git_tmp, "/tmp/gpuaas-gitops.XXXXXX");
    cr_assert_not_null(mkdtemp(git_tmp));
    /* the git CLI's identity for the "other clone" commits; no user config leaks in */
    setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    setenv("GIT_AUTHOR_NAME", "other", 1);
    setenv("GIT_AUTHOR_EMAIL", "other@example.org", 1);
    setenv("GIT_COMMITTER_NAME", "other", 1);
    setenv("GIT_COMMITTER_EMAIL", "other@example.org", 1);
}

static inline void git_tmp_remove(void)
{
    if (git_daemon_pid > 0) {
        kill(git_daemon_pid, SIGTERM);
        waitpid(git_daemon_pid, NULL, 0);
        git_daemon_pid = 0;
    }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", git_tmp);
    if (system(cmd) != 0) { /* left for the OS's tmp cleaning */ }
}

static inline void __attribute__((format(printf, 3, 4))) pathf(char *buf, size_t n, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    int w = vsnprintf(buf, n, f, ap);
    va_end(ap);
    cr_assert(w >= 0 && (size_t)w < n, "does not fit: %s", f);
}

/* Run a shell command in git_tmp; its exit status. */
static inline int __attribute__((format(printf, 1, 2))) sh(const char *f, ...)
{
    char cmd[2048], full[2400];
    va_list ap;
    va_start(ap, f);
    int w = vsnprintf(cmd, sizeof cmd, f, ap);
    va_end(ap);
    cr_assert(w >= 0 && (size_t)w < sizeof cmd);
    pathf(full, sizeof full, "cd '%s' && { %s; } >/dev/null 2>&1", git_tmp, cmd);
    int st = system(full);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A shell command's output (run in git_tmp), trailing newline dropped. */
static inline const char *__attribute__((format(printf, 1, 2))) out(const char *f, ...)
{
    static char buf[8192];
    char cmd[2048], full[2400];
    va_list ap;
    va_start(ap, f);
    int w = vsnprintf(cmd, sizeof cmd, f, ap);
    va_end(ap);
    cr_assert(w >= 0 && (size_t)w < sizeof cmd);
    pathf(full, sizeof full, "cd '%s' && { %s; } 2>/dev/null", git_tmp, cmd);
    FILE *p = popen(full, "r");
    cr_assert_not_null(p);
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    pclose(p);
    buf[n] = 0;
    while (n > 0 && buf[n - 1] == '\n') buf[--n] = 0;
    return buf;
}

/* Serve git_tmp over git:// with pushes allowed; its port. */
static inline int git_daemon_start(void)
{
    for (int attempt = 0; attempt < 20; attempt++) {
        int port = 20000 + (int)((getpid() * 7 + attempt * 131) % 30000);
        char portarg[32], base[300];
        pathf(portarg, sizeof portarg, "--port=%d", port);
        pathf(base, sizeof base, "--base-path=%s", git_tmp);
        pid_t pid = fork();
        cr_assert_geq(pid, 0);
        if (pid == 0) {
            if (!freopen("/dev/null", "w", stderr)) _exit(127);
            execlp("git", "git", "daemon", "--reuseaddr", "--export-all", "--enable=receive-pack",
                   "--listen=127.0.0.1", portarg, base, git_tmp, (char *)NULL);
            _exit(127);
        }
        for (int i = 0; i < 50; i++) {
            if (waitpid(pid, NULL, WNOHANG) == pid) break;   /* the port was taken */
            if (sh("git ls-remote git://127.0.0.1:%d/remote.git", port) == 0) {
                git_daemon_pid = pid;
                return port;
            }
            struct timespec ts = {0, 100 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
    }
    cr_assert_fail("git daemon did not start");
    return -1;
}

#endif
