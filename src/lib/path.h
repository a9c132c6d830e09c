/* path: the few file-system path helpers several modules need, written once.
 * Owns: mkdir -p, and the test that a user's path is absolute and free of "." and ".."
 * parts (so that a prefix test against allowed folders means what it says). */
#ifndef GX_PATH_H
#define GX_PATH_H
#include <sys/types.h>

/* Create path and its missing parents: parents mode 0755, path itself `mode` (existing
 * ones keep theirs). 0, or -1 with errno (ENAMETOOLONG for a path over PATH_MAX: never
 * cut). */
int gx_mkdirs(const char *path, mode_t mode);

/* 1 when s is absolute, shorter than PATH_MAX and has no "." or ".." part; 0 otherwise. */
int gx_path_clean_abs(const char *s);

#endif
