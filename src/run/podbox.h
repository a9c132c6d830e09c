/* podbox: everything a sandboxed pod needs before gpuaas-shim starts it (docs/security.md).
 * Owns: for one pod, its identity (run/identity), its working folder (created, owned by
 * that uid, mode 0700), its cgroup with the limits of its container (run/cgroup), the
 * device nodes of its GPUs (run/devnodes), its hostPath mounts checked against what the
 * admin allows its namespace, and the bubblewrap command line (run/sandbox). Also, once
 * at start, whether this host can sandbox at all, and why not.
 * Must not: start or watch processes (run/proc, the daemon do), know HTTP or the engine.
 *
 * Folders: DATA/run and DATA/logs stay root's (exit records and logs are written by the
 * shim, outside the sandbox); working folders live under WORK (run.workDir, default
 * DATA/work) as WORK/<namespace>/<name>, owned by the namespace's uid. Inside a pod the
 * data directory and WORK are empty tmpfs; only its own folder is bound back, read-write,
 * at the same path. */
#ifndef GX_PODBOX_H
#define GX_PODBOX_H
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "lib/err.h"
#include "run/cgroup.h"
#include "run/devnodes.h"
#include "run/identity.h"
#include "run/podspec.h"
#include "run/run_config.h"
#include "store/store.h"

#define GX_PODBOX_CG_MAX 384          /* "<ns>/<name>/g<gen>-p<index>": 63 + 253 + slack */

typedef struct gx_podbox gx_podbox;

/* Check the host once (root, bwrap, namespaces, cgroup controllers). A host that cannot
 * sandbox still gives a podbox: gx_podbox_unavailable then says why, and every pod start
 * fails with it (the daemon serves everything else). data_dir is absolute. NULL only on a
 * store error. */
gx_podbox *gx_podbox_open(const gx_run_config *rc, const char *data_dir, gx_store *st, gx_err *err);
/* One line (two when unavailable) for the start-up banner: what pods get, or why not. */
void gx_podbox_describe(const gx_podbox *b, FILE *log);
void gx_podbox_free(gx_podbox *b);
/* Why pods cannot start sandboxed, or NULL when they can. */
const char *gx_podbox_unavailable(const gx_podbox *b);
const gx_cgroup_sys *gx_podbox_cgroups(const gx_podbox *b);

/* One pod to prepare. */
typedef struct gx_podbox_pod {
    const char *ns, *name;
    int gen, index;
    const gx_podspec *ps;
    const gx_devsel *gpus;            /* its devices (may be none) */
    size_t ngpus;
    const char *mps_pipe;             /* MPS pipe directory to bind, NULL none; the pod then
                                         runs as GX_IDENTITY_MPS */
    char *const *argv;                /* the command */
    int64_t now_ms;
    /* the CUDA shim's host files (run/sandbox.h), all or none: the library, the pod's
     * region, the preload file */
    const char *cuda_lib, *cuda_region, *cuda_preload;
} gx_podbox_pod;

/* What the daemon starts and remembers. */
typedef struct gx_podbox_run {
    char **argv;                      /* bwrap ..., free with gx_sandbox_free_argv */
    char cgroup[GX_PODBOX_CG_MAX];    /* relative to run.cgroupParent */
    char procs[GX_CG_NCTRL + 1][PATH_MAX];   /* cgroup.procs files the shim's child joins */
    int nprocs;
    char work_dir[PATH_MAX];          /* HOME and the default working directory */
    uid_t uid;
    gid_t gid;
    int64_t memory_bytes;             /* the limit set, 0 none (for messages) */
} gx_podbox_run;

/* Prepare (identity, folder, cgroup, command line). On error nothing is left behind and
 * err says what (a hostPath the namespace may not mount: 403 naming the field). */
int gx_podbox_prepare(gx_podbox *b, const gx_podbox_pod *p, gx_podbox_run *out, gx_err *err);

/* Is every hostPath mount of the Job one its namespace may use? At submit (422/403 with
 * the field named); the start checks again after resolving symbolic links. */
int gx_podbox_check_mounts(const gx_run_config *rc, const char *ns, const gx_podspec *ps, gx_err *err);

/* A pod has ended: kill whatever is left in its cgroup and remove it; a group that cannot
 * go yet (a process still exiting) is kept and retried by gx_podbox_tick, never leaked. */
void gx_podbox_release(gx_podbox *b, const char *cgroup);
/* Retry, once a second, the groups release could not remove; returns ms until the next
 * try, -1 when none is waiting. */
int64_t gx_podbox_tick(gx_podbox *b, int64_t now_ms);

/* Remove the working folder of workload ns/name (its pods are gone): when the workload is
 * deleted. 0 when gone or never there. */
int gx_podbox_remove_work(gx_podbox *b, const char *ns, const char *name, gx_err *err);

/* The cgroup name of a pod. */
int gx_podbox_cgroup_name(const char *ns, const char *name, int gen, int index, char *out, size_t n);

#endif
