/* podspec: what a Job's pods run in local mode, read from its manifest.
 * Owns: validation of the process side of a batch/v1 Job (command, args, env,
 * workingDir, grace period, parallelism/completions, backoffLimit) and building
 * argv/envp for one pod. The image is recorded but not used: local mode runs the
 * command as a process on this machine (docs/jobs.md).
 * Must not: start anything. */
#ifndef GX_PODSPEC_H
#define GX_PODSPEC_H
#include <stdint.h>
#include <jansson.h>
#include "lib/err.h"

#define GX_POD_MAX_ARGS 256
#define GX_POD_MAX_ENV  256
#define GX_POD_MAX_PODS 64   /* parallelism / completions of one local Job */

typedef struct gx_podspec {
    const json_t *container;   /* borrowed from the manifest */
    const char *image;
    const char *working_dir;   /* NULL: the pod's own directory under the data dir */
    int parallelism;           /* pods running at once */
    int completions;           /* successful pods needed */
    int backoff_limit;         /* failed pods tolerated before the Job fails */
    int64_t grace_ms;          /* terminationGracePeriodSeconds */
    const json_t *volumes;     /* the pod's volumes (hostPath only), borrowed; NULL none */
    const char *base;          /* "spec.template.spec" or "spec.podSets[0].template.spec" */
} gx_podspec;

/* A hostPath volume mounted into the container (volumes[] + volumeMounts[]). */
typedef struct gx_podmount {
    const char *host_path;     /* volumes[v].hostPath.path, absolute, no "." or ".." parts */
    const char *mount_path;    /* volumeMounts[m].mountPath, absolute, no "." or ".." parts */
    int read_only;             /* volumeMounts[m].readOnly */
    char field[160];           /* "spec.template.spec.volumes[0].hostPath.path", for errors */
} gx_podmount;
#define GX_POD_MAX_MOUNTS 32

/* Validate and read. Errors name the field (422). */
int gx_podspec_read(const json_t *job, gx_podspec *out, gx_err *err);

/* Part of gx_podspec_read: volumes and volumeMounts (podspec_volumes.c). */
int gx_podspec_read_volumes(const json_t *podspec, const json_t *container, const char *base, gx_podspec *out,
                            gx_err *err);

/* The container's hostPath mounts, in volumeMounts order, into out (at most
 * GX_POD_MAX_MOUNTS, which gx_podspec_read enforces). Returns the count. */
int gx_podspec_mounts(const gx_podspec *ps, gx_podmount *out);

/* argv (NULL-terminated, malloc'd strings) and envp for pod `index`; free with
 * gx_podspec_free_vec(). gpu_uuids: comma-separated device UUIDs ("" for none).
 * extra_env (NULL or NULL-terminated "K=V", copied): the environment of the pod's
 * devices (GPU sharing: MPS pipe and limits, vGPU limits, from gpu/podenv); it comes
 * before the Job's own env, so a Job cannot raise its limits by setting them again.
 * home: a sandboxed pod's HOME (its working folder; it then gets no USER or TMPDIR of the
 * daemon's), NULL for the daemon's own. */
char **gx_podspec_argv(const gx_podspec *ps);
char **gx_podspec_envp(const gx_podspec *ps, const char *key, int index, const char *gpu_uuids,
                       const char *const *extra_env, const char *home);
void gx_podspec_free_vec(char **v);

#endif
