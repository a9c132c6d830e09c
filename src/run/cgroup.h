/* cgroup: one control group per sandboxed pod, on cgroup v2, v1 or a hybrid of both.
 * Owns: finding which hierarchy holds each controller (memory, pids, cpu, devices),
 * creating a pod's group with its limits, the files a process writes to join it,
 * signalling and killing everything in it, its OOM-kill count, removing it.
 * Must not: start processes or know workloads; the daemon names the groups.
 *
 * Why per controller: many hosts are hybrid (cgroup2 mounted at /sys/fs/cgroup/unified
 * with no controllers, the controllers on v1 mounts). A controller is used on v2 when the
 * unified hierarchy lists it in cgroup.controllers, else on its v1 mount. v1 adds the
 * devices controller (deny all, allow the pod's nodes); v2 has no device control without
 * eBPF, so there the sandbox relies on absent nodes and dropped capabilities.
 *
 * A pod's group is PARENT/REL where PARENT is run.cgroupParent (default "gpuaas") below
 * each hierarchy's root and REL is chosen by the caller ("team-a/train/g1-p0"). Every
 * path component is created as needed; on v2 each level below the root gets the
 * controllers enabled in its parent's cgroup.subtree_control. */
#ifndef GX_CGROUP_H
#define GX_CGROUP_H
#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "lib/err.h"

enum { GX_CG_MEMORY, GX_CG_PIDS, GX_CG_CPU, GX_CG_DEVICES, GX_CG_NCTRL };
#define GX_CG_BIT(c) (1u << (c))
/* What a pod sandbox cannot do without. cpu and devices are used when present. */
#define GX_CG_REQUIRED (GX_CG_BIT(GX_CG_MEMORY) | GX_CG_BIT(GX_CG_PIDS))

typedef struct gx_cgroup_sys {
    char v2_root[PATH_MAX];          /* mount point of cgroup2, "" when none */
    char v1_root[GX_CG_NCTRL][PATH_MAX];  /* v1 mount point holding each controller, "" none */
    unsigned on_v2;                  /* GX_CG_BIT(c): controller c is used on v2 */
    unsigned on_v1;                  /* GX_CG_BIT(c): controller c is used on v1 */
    char parent[256];                /* relative to each root, no leading or trailing '/' */
} gx_cgroup_sys;

/* Read /proc/self/mountinfo (mountinfo == NULL) or the given file, and the v2 root's
 * cgroup.controllers, and fill s. parent: run.cgroupParent ("" = "gpuaas"). Fails only
 * on an unreadable mountinfo or a bad parent ("..", absolute, too long). */
int gx_cgroup_detect(gx_cgroup_sys *s, const char *parent, const char *mountinfo, gx_err *err);

/* Controllers of `need` that neither hierarchy offers, as "memory, pids" into out ("" when
 * none). Returns the number missing. */
int gx_cgroup_missing(const gx_cgroup_sys *s, unsigned need, char *out, size_t n);

/* One device node a pod may use (devices controller, v1): 'c' or 'b', major, minor. */
typedef struct gx_cgroup_dev { char type; unsigned major, minor; } gx_cgroup_dev;

typedef struct gx_cgroup_limits {
    int64_t memory_bytes;            /* 0: no limit */
    int64_t cpu_millis;              /* 0: no limit; 1500 = 1.5 CPUs (quota over a 100 ms period) */
    int64_t pids;                    /* 0: no limit */
    const gx_cgroup_dev *devices;    /* allowed nodes besides the standard ones (null, zero,
                                        full, random, urandom, tty, ptmx, pts); devices==NULL
                                        and ndevices==0 still denies every other node */
    size_t ndevices;
} gx_cgroup_limits;

/* Create PARENT/rel in every hierarchy in use and write the limits. An existing group
 * is reused (its limits rewritten). Errors name the file that could not be written. */
int gx_cgroup_create(const gx_cgroup_sys *s, const char *rel, const gx_cgroup_limits *l, gx_err *err);

/* The cgroup.procs files a process writes its pid to, to join the group in every
 * hierarchy in use: up to max paths into out[], returns how many. gpuaas-shim joins them
 * (--cgroup FILE) in its child before that child execs the sandbox, so that the shim
 * itself stays outside: killing the group never kills the one who records the end. */
int gx_cgroup_procs_files(const gx_cgroup_sys *s, const char *rel, char out[][PATH_MAX], int max);

/* Pids in the group (cgroup.procs of the first hierarchy in use), at most max into out;
 * returns the count (which may exceed max), or -1 when the group does not exist. */
int gx_cgroup_pids(const gx_cgroup_sys *s, const char *rel, pid_t *out, int max);

/* Send sig to every process of the group whose real uid is `uid` (the tenant's: the
 * sandbox's own helpers run as root and are left alone), or to every process when
 * uid == (uid_t)-1. Returns how many were signalled, -1 when the group does not exist. */
int gx_cgroup_signal(const gx_cgroup_sys *s, const char *rel, int sig, uid_t uid);

/* Kill everything in the group: cgroup.kill on v2, else SIGKILL to every pid listed, a
 * few passes while new ones appear (forks racing the kill). Returns the number still
 * listed after the last pass (0: empty), -1 when the group does not exist. */
int gx_cgroup_kill(const gx_cgroup_sys *s, const char *rel);

/* Times the kernel's OOM killer killed a process of the group (memory.events or
 * memory.oom_control "oom_kill N"), 0 when unknown. */
int64_t gx_cgroup_oom_kills(const gx_cgroup_sys *s, const char *rel);

/* Bytes of memory the group uses now (memory.current / memory.usage_in_bytes), -1 unknown. */
int64_t gx_cgroup_memory_bytes(const gx_cgroup_sys *s, const char *rel);

/* Remove the group (it must be empty), then the empty parents up to PARENT (exclusive).
 * 0 when gone or never there. */
int gx_cgroup_remove(const gx_cgroup_sys *s, const char *rel, gx_err *err);

#endif
