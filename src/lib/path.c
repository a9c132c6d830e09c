/* path: mkdir -p and the clean-absolute-path test (see path.h). */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include "lib/path.h"

int gx_mkdirs(const char *path, mode_t mode)
{
    char tmp[PATH_MAX];
    size_t n = strlen(path);
    if (n >= sizeof tmp) { errno = ENAMETOOLONG; return -1; }
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) < 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    return mkdir(tmp, mode) < 0 && errno != EEXIST ? -1 : 0;
}

int gx_path_clean_abs(const char *s)
{
    if (!s || s[0] != '/' || strlen(s) >= PATH_MAX) return 0;
    for (const char *p = s; *p;) {
        const char *e = strchr(p, '/');
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if ((l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.')) return 0;
        p = e ? e + 1 : p + l;
    }
    return 1;
}
