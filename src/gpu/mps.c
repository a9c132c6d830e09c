/* gpu/mps: MPS control daemons per GPU (see mps.h).
 * Owns: spawning nvidia-cuda-mps-control (posix_spawn: the daemon never forks itself),
 * feeding it commands on stdin, the per-GPU directories.
 * Must not: run on the event loop's hot path, or touch GPUs that are not MPS/fractional. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "gpu/mps.h"
#include "lib/alloc.h"
#include "lib/path.h"

#define CMD_TIMEOUT_MS 5000

typedef struct mps_gpu {
    char uuid[96];
    char pipe[PATH_MAX], log[PATH_MAX];
    char state[PATH_MAX + 128];  /* what happened, naming the log when it failed */
    int running;
    int nvml_index;              /* -1: simulated, the compute mode is not ours to touch */
    char mode_file[PATH_MAX + 16];   /* "" when we did not change the compute mode; DIR/compute-mode */
} mps_gpu;

struct gx_gpu_mps {
    int n;
    mps_gpu *g;
    gx_nvml *nvml;               /* borrowed from the inventory */
};

static int find_binary(void)
{
    const char *path = getenv("PATH");
    char buf[PATH_MAX];
    while (path && *path) {
        const char *e = strchr(path, ':');
        size_t l = e ? (size_t)(e - path) : strlen(path);
        snprintf(buf, sizeof buf, "%.*s/%s", (int)l, path, GX_MPS_CONTROL);
        if (l && access(buf, X_OK) == 0) return 1;
        path = e ? e + 1 : NULL;
    }
    return 0;
}

/* Wait for pid at most CMD_TIMEOUT_MS; kill it past that. Returns the exit status or -1. */
static int wait_bounded(pid_t pid)
{
    for (int waited = 0; waited < CMD_TIMEOUT_MS; waited += 10) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        if (r < 0 && errno != EINTR) return -1;
        nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

/* Write all of s into the pipe fd, whose reader may be gone: the control binary exits at
 * once, unread, when no daemon answers. That must be an error (-1, EPIPE), not a SIGPIPE
 * that kills the process (the unit tests have no SIG_IGN the way `gpuaas serve` does).
 * SIGPIPE is blocked for this thread around the write and one the write raised is taken
 * back before unblocking, so the process's disposition, and a SIGPIPE already pending
 * for another reason, are left as they were. */
static int write_nosigpipe(int fd, const char *s, size_t len)
{
    sigset_t pipe_set, old, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    if (pthread_sigmask(SIG_BLOCK, &pipe_set, &old) != 0) return -1;
    int was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
    int rc = 0, err = 0;
    while (len > 0) {
        ssize_t n = write(fd, s, len);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) { rc = -1; err = n < 0 ? errno : EIO; break; }
        s += n;
        len -= (size_t)n;
    }
    if (err == EPIPE && !was_pending) {
        struct timespec zero = {0, 0};
        while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {}
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    errno = err;
    return rc;
}

/* Run the control binary for one GPU: with "-d" (start the daemon) or with `input`
 * written to its stdin (commands). Output goes to LOG/gpuaas-control.log. */
static int control(const mps_gpu *g, const char *arg, const char *input)
{
    char e_vis[160], e_pipe[PATH_MAX + 32], e_log[PATH_MAX + 32], e_path[PATH_MAX + 8], out[PATH_MAX + 32];
    snprintf(e_vis, sizeof e_vis, "CUDA_VISIBLE_DEVICES=%s", g->uuid);
    snprintf(e_pipe, sizeof e_pipe, "CUDA_MPS_PIPE_DIRECTORY=%s", g->pipe);
    snprintf(e_log, sizeof e_log, "CUDA_MPS_LOG_DIRECTORY=%s", g->log);
    snprintf(e_path, sizeof e_path, "PATH=%s", getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin");
    snprintf(out, sizeof out, "%s/gpuaas-control.log", g->log);
    char *envp[] = {e_vis, e_pipe, e_log, e_path, NULL};
    char *argv[] = {(char *)GX_MPS_CONTROL, (char *)arg, NULL};
    int fds[2] = {-1, -1};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (input) {
        if (pipe2(fds, O_CLOEXEC) < 0) { posix_spawn_file_actions_destroy(&fa); return -1; }
        posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
    } else {
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    }
    posix_spawn_file_actions_addopen(&fa, 1, out, O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    pid_t pid;
    int rc = posix_spawnp(&pid, GX_MPS_CONTROL, &fa, NULL, arg ? argv : (char *[]){(char *)GX_MPS_CONTROL, NULL}, envp);
    posix_spawn_file_actions_destroy(&fa);
    if (input) {
        close(fds[0]);
        if (rc == 0) {
            /* a binary that did not read its commands fails below by its exit status
             * (the fake and the real one exit 1 when no daemon answers); wait for it */
            if (write_nosigpipe(fds[1], input, strlen(input)) != 0) rc = -1;
        }
        close(fds[1]);
    }
    if (rc) return -1;
    int st = wait_bounded(pid);
    return rc ? -1 : st;
}

/* The compute mode recorded in `path` before we changed it, or -1 when none is. */
static int read_mode_file(const char *path)
{
    FILE *f = fopen(path, "r");
    int mode = -1;
    if (!f) return -1;
    if (fscanf(f, "%d", &mode) != 1 || mode < 0 || mode > 3) mode = -1;
    fclose(f);
    return mode;
}

/* Put back the compute mode recorded in `path` and remove the record. */
static void restore_mode(gx_nvml *nv, int index, const char *uuid, const char *path, FILE *log)
{
    int orig = read_mode_file(path);
    if (orig < 0) {
        unlink(path);
        return;
    }
    gx_err e;
    gx_err_clear(&e);
    /* a server that was just told to quit may hold the GPU a little longer: retry ~2 s */
    int rc = -1;
    for (int t = 0; t < 20 && rc; t++) {
        if (t) nanosleep(&(struct timespec){0, 100 * 1000 * 1000}, NULL);
        gx_err_clear(&e);
        rc = gx_gpu_nvml_set_compute_mode(nv, index, orig, &e);
    }
    if (rc) {
        fprintf(log, "gpuaas: GPU %d (%s): cannot restore compute mode %s: %s (kept in %s; set it with "
                "nvidia-smi -i %d -c %s)\n", index, uuid, gx_gpu_nvml_compute_mode_name(orig), e.msg, path, index,
                gx_gpu_nvml_compute_mode_name(orig));
        return;
    }
    unlink(path);
    fprintf(log, "gpuaas: GPU %d (%s): compute mode restored to %s\n", index, uuid, gx_gpu_nvml_compute_mode_name(orig));
}

/* Before the daemon starts on a real MPS GPU: record the mode (unless a record from a
 * run that did not stop cleanly is there: that one is the original) and set
 * EXCLUSIVE_PROCESS. A failure (not root) is a warning; MPS still runs. */
static void exclusive_mode(gx_nvml *nv, mps_gpu *g, const gx_gpu_dev *d, const char *dir, FILE *log)
{
    char path[PATH_MAX + 16];
    snprintf(path, sizeof path, "%s/compute-mode", dir);
    gx_err e;
    gx_err_clear(&e);
    int cur = gx_gpu_nvml_compute_mode(nv, d->nvml_index, &e);
    if (cur < 0) {
        fprintf(log, "  mps: GPU %d (%s): compute mode unknown (%s): left as it is\n", d->index, d->uuid, e.msg);
        return;
    }
    int recorded = read_mode_file(path) >= 0;
    if (!recorded) {
        FILE *f = fopen(path, "w");
        int bad = !f;
        if (f) {
            bad = fprintf(f, "%d\n", cur) < 0;
            bad |= fclose(f) != 0;
        }
        if (bad) {
            unlink(path);
            fprintf(log, "  mps: GPU %d (%s): cannot record the compute mode in %s: left as it is\n", d->index, d->uuid, path);
            return;
        }
    }
    snprintf(g->mode_file, sizeof g->mode_file, "%s", path);
    if (cur == GX_NVML_COMPUTE_EXCLUSIVE_PROCESS) return;
    if (gx_gpu_nvml_set_compute_mode(nv, d->nvml_index, GX_NVML_COMPUTE_EXCLUSIVE_PROCESS, &e)) {
        fprintf(log, "  mps: GPU %d (%s): WARNING: cannot set compute mode EXCLUSIVE_PROCESS (%s; needs root): "
                "MPS runs with compute mode %s, so processes outside MPS may still share the GPU\n", d->index,
                d->uuid, e.msg, gx_gpu_nvml_compute_mode_name(cur));
        if (!recorded) unlink(path);
        g->mode_file[0] = 0;
        return;
    }
    fprintf(log, "  mps: GPU %d (%s): compute mode %s -> Exclusive_Process (restored at stop)\n", d->index, d->uuid,
            gx_gpu_nvml_compute_mode_name(cur));
}

static void start_one(gx_gpu_mps *m, mps_gpu *g, const gx_gpu_dev *d, const char *dir, FILE *log)
{
    gx_mkdirs(g->pipe, 0755);
    gx_mkdirs(g->log, 0755);
    if (m->nvml && d->nvml_index >= 0 && d->mode == GX_SHARE_MPS) exclusive_mode(m->nvml, g, d, dir, log);
    /* A daemon answering on this pipe directory already (gpuaas restarted): keep it. */
    char cpath[PATH_MAX + 16];
    snprintf(cpath, sizeof cpath, "%s/control", g->pipe);
    int adopted = access(cpath, F_OK) == 0 && control(g, NULL, "get_default_active_thread_percentage\n") == 0;
    if (!adopted && control(g, "-d", NULL) != 0) {
        snprintf(g->state, sizeof g->state, "failed: %s -d did not start (see %s)", GX_MPS_CONTROL, g->log);
        fprintf(log, "  mps: GPU %d (%s): %s\n", d->index, d->uuid, g->state);
        if (g->mode_file[0]) restore_mode(m->nvml, d->nvml_index, d->uuid, g->mode_file, log);
        g->mode_file[0] = 0;
        return;
    }
    if (d->mode == GX_SHARE_MPS) {
        int n = d->replicas > 0 ? d->replicas : 1;
        char cmds[256];
        snprintf(cmds, sizeof cmds, "set_default_active_thread_percentage %d\nset_default_device_pinned_mem_limit 0 %lldM\n",
                 100 / n, (long long)(d->mem_mib / n));
        if (control(g, NULL, cmds) != 0) {
            snprintf(g->state, sizeof g->state, "failed: the daemon refused the default limits (see %s)", g->log);
            fprintf(log, "  mps: GPU %d (%s): %s\n", d->index, d->uuid, g->state);
            return;
        }
    }
    g->running = 1;
    snprintf(g->state, sizeof g->state, "%s", adopted ? "adopted" : "running");
    fprintf(log, "  mps: GPU %d (%s): control daemon %s, pipe %s\n", d->index, d->uuid, g->state, g->pipe);
}

gx_gpu_mps *gx_gpu_mps_start(const gx_gpu_inv *inv, const char *root, FILE *log)
{
    gx_gpu_mps *m = gx_xcalloc(1, sizeof *m);
    m->nvml = inv ? inv->nvml : NULL;
    /* a compute mode left changed by a run that crashed, on a GPU that is no longer MPS */
    for (int i = 0; m->nvml && i < inv->n_devs; i++) {
        const gx_gpu_dev *d = &inv->devs[i];
        char path[PATH_MAX + 112];
        snprintf(path, sizeof path, "%s/%s/compute-mode", root, d->uuid);
        /* ... or whose MPS tools are gone: no daemon will run, the mode must not stay */
        if (d->nvml_index >= 0 && (d->mode != GX_SHARE_MPS || !find_binary()) && access(path, F_OK) == 0)
            restore_mode(m->nvml, d->nvml_index, d->uuid, path, log);
    }
    int need = 0;
    for (int i = 0; inv && i < inv->n_devs; i++)
        need += inv->devs[i].mode == GX_SHARE_MPS || inv->devs[i].mode == GX_SHARE_FRACTIONAL;
    if (!need) return m;
    m->g = gx_xcalloc((size_t)need, sizeof *m->g);
    int have = find_binary();
    for (int i = 0; i < inv->n_devs; i++) {
        const gx_gpu_dev *d = &inv->devs[i];
        if (d->mode != GX_SHARE_MPS && d->mode != GX_SHARE_FRACTIONAL) continue;
        mps_gpu *g = &m->g[m->n++];
        char dir[PATH_MAX];
        snprintf(g->uuid, sizeof g->uuid, "%s", d->uuid);
        snprintf(dir, sizeof dir, "%s/%s", root, d->uuid);
        g->nvml_index = d->nvml_index;
        snprintf(g->pipe, sizeof g->pipe, "%s/%s/pipe", root, d->uuid);
        snprintf(g->log, sizeof g->log, "%s/%s/log", root, d->uuid);
        if (!have) {
            snprintf(g->state, sizeof g->state, "no %s", GX_MPS_CONTROL);
            fprintf(log, "  mps: GPU %d (%s) is %s but %s is not on PATH: its workloads run without MPS limits "
                    "(install the CUDA MPS tools)\n", d->index, d->uuid, gx_share_mode_name(d->mode), GX_MPS_CONTROL);
            continue;
        }
        start_one(m, g, d, dir, log);
    }
    return m;
}

void gx_gpu_mps_stop(gx_gpu_mps *m, const char *const *busy, int n_busy, FILE *log)
{
    if (!m) return;
    for (int i = 0; i < m->n; i++) {
        mps_gpu *g = &m->g[i];
        if (!g->running) continue;
        int keep = 0;
        for (int b = 0; b < n_busy && !keep; b++) keep = busy[b] && !strcmp(busy[b], g->uuid);
        if (keep) {
            fprintf(log, "gpuaas: MPS daemon of %s left running for its workloads (the next start adopts it)\n", g->uuid);
            continue;
        }
        if (control(g, NULL, "quit\n") != 0)
            fprintf(log, "gpuaas: MPS daemon of %s did not quit cleanly (see %s)\n", g->uuid, g->log);
        /* after quit: the mode change refuses while the server holds the GPU */
        if (g->mode_file[0] && m->nvml) restore_mode(m->nvml, g->nvml_index, g->uuid, g->mode_file, log);
    }
    free(m->g);
    free(m);
}

int gx_gpu_mps_dirs(const gx_gpu_mps *m, const char *uuid, const char **pipe_dir, const char **logdir)
{
    for (int i = 0; m && i < m->n; i++)
        if (m->g[i].running && !strcmp(m->g[i].uuid, uuid)) {
            *pipe_dir = m->g[i].pipe;
            *logdir = m->g[i].log;
            return 1;
        }
    return 0;
}

const char *gx_gpu_mps_state(const gx_gpu_mps *m, const char *uuid)
{
    for (int i = 0; m && i < m->n; i++)
        if (!strcmp(m->g[i].uuid, uuid)) return m->g[i].state;
    return NULL;
}
