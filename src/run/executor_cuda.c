/* executor_cuda: a pod's CUDA shim, the executor's side (docs/gpu-sharing.md "Limits
 * inside the pod"; the library is src/cudashim, the layout gpu/cuda_region.h).
 * Owns: whether a pod gets libgpuaas-cuda.so (a time-sliced or fractional GPU, and
 * run.cudaShim), where its region file is and its creation before the pod starts, the
 * preload file the sandbox binds at /etc/ld.so.preload, the pod's environment entries,
 * and reading a pod's use back.
 * Must not: bind anything (run/sandbox does, from the paths given), start processes, or
 * decide limits (gpu/cuda_region.c does, per sharing mode). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "gpu/runtime.h"
#include "lib/alloc.h"
#include "run/executor_int.h"
#include "run/run_config.h"

void gx_exec_cuda_path(const gx_exec *x, const gx_run *w, int gen, int index, char *out, size_t n)
{
    snprintf(out, n, "%s/%s/%s/g%d-p%d.cuda", x->run_dir, w->ns, w->name, gen, index);
}

/* libgpuaas-cuda.so beside the gpuaas binary (as gpuaas-shim is found: run/proc.c), 0
 * when it is a readable regular file; out holds the path either way (for messages). */
static int find_lib(char *out, size_t n)
{
    char self[PATH_MAX];
    out[0] = 0;
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    if (k <= 0) return -1;
    self[k] = 0;
    char *slash = strrchr(self, '/');
    if (!slash) return -1;
    *slash = 0;
    int w = snprintf(out, n, "%s/%s", self, GX_CUDA_LIB_NAME);
    struct stat st;
    if (w < 0 || (size_t)w >= n || stat(out, &st) < 0 || !S_ISREG(st.st_mode)) return -1;
    return access(out, R_OK);
}

/* DATA/run/ld.so.preload, naming the library's path inside the sandbox: written whole
 * to a new file and renamed over the old one, so a running pod's bound copy never
 * changes under it. */
static int write_preload(const gx_exec *x, char *out, size_t n, gx_err *err)
{
    char tmp[PATH_MAX];
    snprintf(out, n, "%s/ld.so.preload", x->run_dir);
    snprintf(tmp, sizeof tmp, "%s/.ld.so.preload.%d", x->run_dir, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) return gx_errf(err, 500, "", "cannot write %s: %s", tmp, strerror(errno));
    static const char line[] = GX_CUDA_LIB_PATH "\n";
    int bad = write(fd, line, sizeof line - 1) != (ssize_t)(sizeof line - 1) || fchmod(fd, 0644);
    int e = errno;
    close(fd);
    if (bad || rename(tmp, out) < 0) {
        e = bad ? e : errno;
        unlink(tmp);
        return gx_errf(err, 500, "", "cannot write %s: %s", out, strerror(e));
    }
    return 0;
}

/* The sandbox's tmpfs at /run/gpuaas needs its mount point in the host's /run, which the
 * sandbox binds read-only (a host without /run gets it in the sandbox's own root). */
static int host_mount_point(gx_err *err)
{
    struct stat st;
    if (stat("/run", &st) < 0) return 0;
    if (mkdir("/run/gpuaas", 0755) < 0 && errno != EEXIST)
        return gx_errf(err, 500, "", "cannot create /run/gpuaas (the CUDA shim's mount point): %s", strerror(errno));
    return 0;
}

int gx_exec_cuda_plan(gx_exec *x, const gx_run *w, gx_run_pod *p, gx_exec_cuda *c, gx_err *err)
{
    memset(c, 0, sizeof *c);
    p->cuda = GX_POD_CUDA_NONE;
    gx_gpu_rt *rt = x->gpu;
    if (x->cuda_shim == GX_CUDA_SHIM_OFF || !rt || !p->devices[0]) return 0;
    gx_engine_dev devs[GX_EXEC_POD_DEVS];
    int n = x->h.slot_devices(x->h.ud, w->key, p->slot, devs, GX_EXEC_POD_DEVS);
    if (n <= 0 || !gx_cuda_limits_for(rt->inv, devs, n < GX_EXEC_POD_DEVS ? n : GX_EXEC_POD_DEVS, &c->lim)) return 0;
    if (find_lib(c->lib, sizeof c->lib)) {
        if (x->cuda_shim == GX_CUDA_SHIM_ON)
            return gx_errf(err, 500, "", "run.cudaShim is on, but %s is missing: the pod's GPU memory limit cannot "
                           "be enforced (build it with make, or set run.cudaShim: auto)", c->lib[0] ? c->lib : GX_CUDA_LIB_NAME);
        if (!x->cuda_warned)
            fprintf(stderr, "gpuaas: %s is missing: pods on time-sliced and fractional GPUs start without it, and "
                            "their GPU memory limits are NOT enforced (docs/gpu-sharing.md)\n",
                    c->lib[0] ? c->lib : GX_CUDA_LIB_NAME);
        x->cuda_warned = 1;
        p->cuda = GX_POD_CUDA_MISSING;
        return 0;
    }
    gx_exec_cuda_path(x, w, p->gen, p->index, c->region, sizeof c->region);
    if ((x->sandbox && host_mount_point(err)) || write_preload(x, c->preload, sizeof c->preload, err)) return -1;
    c->on = 1;
    p->cuda = GX_POD_CUDA_INJECTED;
    return 0;
}

int gx_exec_cuda_create(const gx_exec_cuda *c, uid_t uid, gid_t gid, gx_err *err)
{
    return c->on ? gx_cuda_region_create(c->region, &c->lim, uid, gid, err) : 0;
}

static char **env_add(char **env, const char *name, const char *value)
{
    size_t len = strlen(name) + strlen(value) + 2;
    char *kv = gx_xmalloc(len);
    snprintf(kv, len, "%s=%s", name, value);
    size_t n = 0;
    while (env && env[n]) n++;
    env = gx_xreallocarray(env, n + 2, sizeof *env);
    env[n] = kv;
    env[n + 1] = NULL;
    return env;
}

/* Sandboxed, the loader reads the bound /etc/ld.so.preload, which the pod cannot change;
 * without the sandbox only LD_PRELOAD names the library, which a Job can unset. */
char **gx_exec_cuda_env(const gx_exec_cuda *c, int boxed, char **env)
{
    if (!c->on) return env;
    env = env_add(env, GX_CUDA_REGION_ENV, boxed ? GX_CUDA_REGION_PATH : c->region);
    return boxed ? env : env_add(env, "LD_PRELOAD", c->lib);
}

int gx_exec_pod_cuda_usage(const gx_exec *x, const gx_run *w, const gx_run_pod *p, gx_cuda_usage *out, gx_err *err)
{
    if (p->cuda != GX_POD_CUDA_INJECTED) {
        memset(out, 0, sizeof *out);
        return gx_errf(err, 404, "", "pod %d has no CUDA region", p->index);
    }
    char path[PATH_MAX];
    gx_exec_cuda_path(x, w, p->gen, p->index, path, sizeof path);
    return gx_cuda_region_read(path, out, err);
}

void gx_exec_cuda_forget(const gx_exec *x, const gx_run *w)
{
    for (size_t i = 0; i < w->npods; i++) {
        if (w->pods[i].cuda != GX_POD_CUDA_INJECTED) continue;
        char path[PATH_MAX];
        gx_exec_cuda_path(x, w, w->pods[i].gen, w->pods[i].index, path, sizeof path);
        unlink(path);
    }
}
