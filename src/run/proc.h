/* proc: start, watch, signal and re-adopt workload processes.
 * Owns: the fork/exec dance, the per-pod shim that records the exit status, and
 * process identity checks after a daemon restart.
 * Must not: know workloads, queues or HTTP.
 *
 * Each pod runs as:  daemon -> gpuaas-shim (src/shim, spawned in a new session and
 * process group) -> command, or, sandboxed (run/sandbox.h):
 *   daemon -> gpuaas-shim -> [joins the pod's cgroups] bwrap -> gpuaas-shim --as UID GID -> command.
 * The command's environment travels to the last shim in a sealed memfd (fd 4), never as
 * the environment of the shim or bwrap: those run as root outside the sandbox, and a Job's
 * LD_PRELOAD must reach only its own command's loader.
 * The shim ignores SIGTERM/SIGINT/SIGHUP, waits for the command and writes its exit
 * status to a file before it exits with the same status. So the status survives
 * a daemon crash or restart (the shim is re-adopted by pid + start time, and its
 * file read once it is gone), and a signal sent to the process group reaches the
 * command and everything it started. */
#ifndef GX_PROC_H
#define GX_PROC_H
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "lib/err.h"

typedef struct gx_proc_spec {
    char *const *argv;      /* argv[0] is searched in PATH */
    char *const *envp;      /* the complete environment of the command */
    const char *cwd;        /* working directory (must exist) */
    const char *log_path;   /* stdout and stderr are appended here */
    const char *exit_path;  /* the shim writes "exit N" or "signal N" here */
} gx_proc_spec;

/* How a pod is contained (gx_proc_start_contained). A separate struct, not more fields of
 * gx_proc_spec: positional initializers of gx_proc_spec must keep compiling under
 * -Wmissing-field-initializers. */
typedef struct gx_proc_contain {
    const char *const *cgroup_files; /* cgroup.procs files (gx_cgroup_procs_files) the shim's
                                        child joins before its exec; the shim stays outside,
                                        so killing the group never kills the one who records
                                        the end */
    int ncgroup_files;
    int sandboxed;          /* spec->argv is gx_sandbox_argv's: fds 3 (reports) and 4 (the
                               environment) stay open across bwrap's exec for the shim
                               inside; spec->cwd should be "" (that shim enters the
                               pod's own, as the pod: gx_sandbox_argv's --cwd) */
} gx_proc_contain;

/* The 4 bytes gpuaas-shim --as writes to fd 3 once the pod's identity is switched and
 * verified, just before it execs the command ("SBOX"; src/shim/gpuaas-shim.c has a copy). */
#define GX_SHIM_SANDBOX_UP 0x53424f58

typedef struct gx_proc {
    pid_t pid;              /* the shim; also the process group id */
    uint64_t start_time;    /* /proc/<pid>/stat starttime: tells a reused pid apart */
    int pidfd;              /* readable once the shim has exited; -1 when unavailable */
    int is_child;           /* started by this daemon process (so it must be reaped) */
    int errfd;              /* the shim reports a failed exec here; -1 when settled */
} gx_proc;

/* Start the command without waiting for its exec. Returns -1 with err only when the
 * shim itself cannot be started; a command that cannot be run shows up when the shim
 * exits, through gx_proc_start_error(). */
int gx_proc_start(const gx_proc_spec *spec, gx_proc *out, gx_err *err);

/* gx_proc_start, with the command's side joining cgroups and/or being a sandbox
 * (c == NULL: neither). A cgroup that cannot be joined is a failed exec (its errno). */
int gx_proc_start_contained(const gx_proc_spec *spec, const gx_proc_contain *c, gx_proc *out,
                            gx_err *err);

/* After the shim exited: the errno of a failed exec of the command (e.g. ENOENT), or 0
 * when the command did start. */
int gx_proc_start_error(gx_proc *p);

/* After the shim exited, for a sandboxed start: gx_proc_start_error's errno, and in
 * *sandbox_up (may be NULL) 1 when the shim inside reported the identity switch done, 0
 * when it did not (bwrap failed: its message is in the log; or the switch failed: then the
 * errno says why), -1 when unknown (a re-adopted process: the pipe died with the daemon
 * that started it). Reads every report without blocking (a straggler of the sandbox may
 * still hold the pipe), then closes it. */
int gx_proc_start_outcome(gx_proc *p, int *sandbox_up);

/* gpuaas-shim's path: beside the running binary (the daemon's, or the unit tests'). 0, or -1
 * when it is missing, not executable or the path does not fit in n. */
int gx_proc_shim_path(char *out, size_t n);

/* Re-attach to a shim started by an earlier daemon. 0 when that very process is
 * still alive, -1 when it is gone (or the pid now belongs to someone else). */
int gx_proc_adopt(pid_t pid, uint64_t start_time, gx_proc *out);

/* Find the shim started for exit_path (its argv is "gpuaas-shim EXIT_PATH ...", and an exit
 * path names one pod of one admission) among the live processes, and attach to it as
 * gx_proc_adopt does. 0 when found, -1 when no such shim runs. This is how a pod started
 * by a daemon that died before recording its pid is recognised (run/executor.h). */
int gx_proc_find_shim(const char *exit_path, gx_proc *out);

/* Send sig to the whole process group. */
int gx_proc_signal(const gx_proc *p, int sig);

/* Non-blocking: 1 when the shim has exited (reaping it if it is our child), 0 when it
 * is still running. */
int gx_proc_exited(gx_proc *p);

/* After exit: read the recorded status. *code is the exit code, or 128+N for signal N;
 * returns -1 when the shim left no record (it was killed itself). */
int gx_proc_read_status(const char *exit_path, int *code, int *signal_no);

void gx_proc_close(gx_proc *p);

/* /proc/<pid>/stat start time, or 0 when the process does not exist. */
uint64_t gx_proc_start_time(pid_t pid);

#endif
