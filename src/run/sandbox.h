/* sandbox: the bubblewrap command line that wraps one pod (docs/security.md).
 * Owns: turning "this pod, as this uid, with these folders and device nodes" into the
 * argv that gpuaas-shim execs: bwrap (namespaces and mounts) -> gpuaas-shim --as UID GID
 * (the identity switch, inside) -> the command. Also the start-up probe that says what
 * this host cannot do.
 * Must not: start the pod (run/proc.c does), pick uids or device nodes (the caller does).
 *
 * The sandbox, in bwrap's order:
 *   --ro-bind /E /E  (each entry E of the host's /, but dev, proc and tmp; a symbolic
 *                                 link such as /bin -> usr/bin is made again) the host,
 *                                 read-only. Entries, not / itself: the root stays a tmpfs
 *                                 in which bwrap can still make mount points (mountPath
 *                                 /data), and is made read-only at the end
 *   --dev /dev                    a minimal /dev (null, zero, random, tty, pts...)
 *   --perms 1777 --size N --tmpfs /dev/shm   shared memory (NCCL, DataLoader); bwrap's own
 *                                 /dev/shm is root's 0755, which the pod could not write
 *   --proc /proc                  a procfs of the pod's own PID namespace
 *   --perms 1777 --size N --tmpfs /tmp   a private /tmp of at most N bytes the pod can write
 *   --tmpfs H  (each hide[])      empty over the data directory and other private places
 *   --bind W W                    its own working folder, read-write, at the same path
 *   the CUDA shim's /etc, when cuda_lib is set (docs/gpu-sharing.md "How a pod gets the
 *     library"): --tmpfs /etc, each host entry of /etc but ld.so.preload bound back
 *     read-only (links made again), cuda_preload --ro-bind at /etc/ld.so.preload. The
 *     host's /etc is a read-only bind in which bwrap could not make the file it binds over
 *   mounts[]                      device nodes (--dev-bind), hostPath volumes, MPS pipes;
 *                                 with the shim, none may be at or above /etc/ld.so.preload
 *                                 or /run/gpuaas (it would cover them: refused, 422)
 *   the CUDA shim's files: --tmpfs /run/gpuaas, the library --ro-bind at GX_CUDA_LIB_PATH,
 *     the pod's region --bind at GX_CUDA_REGION_PATH, --remount-ro /run/gpuaas and /etc:
 *     both tmpfs are root's 0755, so the pod can neither replace the preload file nor add
 *     one. /run/gpuaas must exist on the host when /run does (the caller makes it)
 *   --ro-bind SHIM SHIM           the shim, at its own path, wherever it is on the host
 *   --remount-ro /                the root tmpfs, read-only
 *       each bind preceded by "--perms 0755 --dir A" for every ancestor A of its
 *       destination: bwrap would make missing ones root's 0700, closed to the pod; the
 *       destination must not pass through a symlink (bwrap cannot follow one there)
 *   --unshare-pid --unshare-ipc --unshare-uts --hostname HOST
 *   --new-session --die-with-parent
 *   --cap-drop ALL --cap-add CAP_SETUID CAP_SETGID CAP_SETPCAP   (only for the switch)
 *   --chdir / -- SHIM --as UID GID --cwd CWD -- COMMAND...
 *                                 the shim enters CWD after the switch, as the pod: bwrap's
 *                                 own chdir runs as a root without CAP_DAC_OVERRIDE, which
 *                                 the pod's 0700 folder keeps out
 * The network is the host's (pods serve models on loopback ports the gateway reaches).
 * No user namespace: bwrap runs as root in its privileged mode, so the uid the pod has is
 * the uid the host sees (a user namespace mapping to root would make root's files the
 * pod's: ../shared/reference/isolation.md). */
#ifndef GX_SANDBOX_H
#define GX_SANDBOX_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "lib/err.h"

typedef enum { GX_MOUNT_RO, GX_MOUNT_RW, GX_MOUNT_DEV } gx_mount_kind;

typedef struct gx_sandbox_mount {
    const char *src;                 /* host path (absolute) */
    const char *dst;                 /* path inside (absolute) */
    gx_mount_kind kind;              /* GX_MOUNT_DEV: a device node, --dev-bind */
} gx_sandbox_mount;

typedef struct gx_sandbox_spec {
    const char *bwrap;               /* bwrap's path */
    const char *shim;                /* gpuaas-shim's path (runs inside for the switch) */
    uid_t uid;                       /* never 0 */
    gid_t gid;                       /* never 0 */
    const char *work_dir;            /* bound read-write at the same path */
    const char *cwd;                 /* chdir inside: work_dir, or the Job's workingDir */
    const char *hostname;            /* the pod's name (UTS namespace) */
    const char *const *hide;         /* NULL-terminated: covered by an empty tmpfs */
    int64_t tmp_bytes;               /* size of the private /tmp (and of /dev/shm), > 0 */
    const gx_sandbox_mount *mounts;
    size_t nmounts;
    char *const *argv;               /* the command, NULL-terminated */
    /* The host's root as entries: "usr" (bound read-only) or "bin->usr/bin" (a link made
     * again), NULL-terminated; NULL reads the host's / (tests give a fixed list). */
    const char *const *root_entries;
    /* The CUDA shim (above), all three or none: host paths of the library, the pod's
     * region file and the preload file naming GX_CUDA_LIB_PATH. */
    const char *cuda_lib, *cuda_region, *cuda_preload;
    /* The host's /etc as entries, like root_entries (tests); NULL reads the host's. */
    const char *const *etc_entries;
} gx_sandbox_spec;

/* The full argv (argv[0] is bwrap's path), NULL-terminated, every string malloc'd: free
 * with gx_sandbox_free_argv. Refuses (NULL, err 500) a uid or gid of 0, a relative path,
 * an empty command. */
char **gx_sandbox_argv(const gx_sandbox_spec *s, gx_err *err);
void gx_sandbox_free_argv(char **argv);

/* Can this host run sandboxed pods? Runs bwrap once with the namespaces and mounts the
 * pods get (and `true` inside, as an unprivileged uid through the shim) and checks that
 * the daemon is root. Returns 0, or -1 with err naming what is missing ("bwrap not
 * found: install the Debian package bubblewrap", "the daemon runs as uid 1000: the
 * sandbox switches each pod to its namespace's uid, which needs root", "bwrap: creating
 * new namespace failed: ..."). Blocks for the probe's few milliseconds; called once at
 * start. */
int gx_sandbox_probe(const char *bwrap, const char *shim, uid_t probe_uid, gx_err *err);

/* Where bwrap is: `forced` when not NULL or "" (GPUAAS_BWRAP, read by the composition
 * root: tests name a fake or a missing one, and get no fallback), else the first bwrap
 * in PATH (absolute entries only), else /usr/bin/bwrap. Returns 0 with the path in out,
 * -1 when none is executable. */
int gx_sandbox_find_bwrap(const char *forced, char *out, size_t n);

#endif
