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
} gx_podspec;

/* Validate and read. Errors name the field (422). */
int gx_podspec_read(const json_t *job, gx_podspec *out, gx_err *err);

/* argv (NULL-terminated, malloc'd strings) and envp for pod `index`; free with
 * gx_podspec_free_vec(). gpu_uuids: comma-separated device UUIDs ("" for none).
 * extra_env (NULL or NULL-terminated "K=V", copied): the environment of the pod's
 * devices (GPU sharing: MPS pipe and limits, vGPU limits, from gpu/podenv); it comes
 * before the Job's own env, so a Job cannot raise its limits by setting them again. */
char **gx_podspec_argv(const gx_podspec *ps);
char **gx_podspec_envp(const gx_podspec *ps, const char *key, int index, const char *gpu_uuids,
                       const char *const *extra_env);
void gx_podspec_free_vec(char **v);

#endif
