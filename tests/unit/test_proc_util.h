/* test_proc_util: what the shim's and the sandbox's tests both need to look at a process:
 * a path built without cutting, a small file read whole, a process's first child, and
 * whether its environment holds a variable. */
#ifndef TEST_PROC_UTIL_H
#define TEST_PROC_UTIL_H
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* snprintf that fails the test instead of cutting a path. */
static inline void __attribute__((format(printf, 3, 4))) fmt(char *buf, size_t n, const char *f, ...)
{
    va_list ap;
    va_start(ap, f);
    int w = vsnprintf(buf, n, f, ap);
    va_end(ap);
    cr_assert(w >= 0 && (size_t)w < n, "does not fit in %zu bytes: %s", n, f);
}

/* The start of a file ("" when it cannot be read). */
static inline void read_file(const char *path, char *out, size_t n)
{
    out[0] = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    ssize_t k = read(fd, out, n - 1);
    close(fd);
    out[k > 0 ? k : 0] = 0;
}

/* The pid of the first child of pid, or 0. */
static inline pid_t child_of(pid_t pid)
{
    char path[64], buf[64];
    fmt(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
    read_file(path, buf, sizeof buf);
    return (pid_t)atoi(buf);
}

/* Does /proc/pid/environ hold a variable starting with needle? */
static inline int environ_has(pid_t pid, const char *needle)
{
    char path[64], buf[8192];
    fmt(path, sizeof path, "/proc/%d/environ", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    for (ssize_t i = 0; i < n; i += (ssize_t)strnlen(buf + i, (size_t)(n - i)) + 1)
        if (!strncmp(buf + i, needle, strlen(needle))) return 1;
    return 0;
}

#endif
