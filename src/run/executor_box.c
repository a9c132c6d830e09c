/* executor_box: the executor's side of the pod sandbox (run/podbox.h, docs/security.md).
 * Owns: preparing a pod's sandbox from its placement (device nodes, MPS pipe), signalling
 * and killing a sandboxed pod through its cgroup, settling its end in Kubernetes' words
 * (OOMKilled, Completed, Error), releasing its cgroup, and the log line that says why a
 * sandbox did not come up. Must not: decide when pods start or stop (executor.c does). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "gpu/runtime.h"
#include "run/executor_int.h"

/* SIGTERM reaches a sandboxed pod's own processes (the tenant's uid: bwrap's helpers are
 * root's and would take the whole pod down with them); SIGKILL ends its whole cgroup, so
 * nothing escapes by double-forking. An unsandboxed pod is its shim's process group. */
void gx_exec_pod_signal(gx_exec *x, gx_run_pod *p, int sig)
{
    if (!p->sandboxed) { gx_proc_signal(&p->proc, sig); return; }
    const gx_cgroup_sys *cg = gx_podbox_cgroups(x->box);
    if (sig == SIGKILL) gx_cgroup_kill(cg, p->cgroup);
    else gx_cgroup_signal(cg, p->cgroup, sig, p->uid);
}

/* A sandboxed pod has ended: nothing of it may run on, and its cgroup goes. */
void gx_exec_pod_release(gx_exec *x, gx_run_pod *p)
{
    if (p->sandboxed && p->cgroup[0]) gx_podbox_release(x->box, p->cgroup);
}

/* The device nodes a sandboxed pod gets for `devices` ("uuid,uuid"), and the MPS pipe
 * directory it must reach when it is an MPS client (as gpu/podenv decides: one device
 * whose GPU has a running MPS daemon). Without the GPU runtime there are none. */
static size_t pod_devsel(gx_exec *x, const char *devices, gx_devsel *out, size_t max, const char **mps_pipe)
{
    gx_gpu_rt *rt = x->gpu;
    *mps_pipe = NULL;
    if (!rt || !*devices) return 0;
    size_t n = 0;
    gx_gpu_dev *last = NULL;
    for (const char *p = devices; p && *p && n < max;) {
        const char *e = strchr(p, ',');
        char uuid[128];
        snprintf(uuid, sizeof uuid, "%.*s", (int)(e ? (size_t)(e - p) : strlen(p)), p);
        int mig = -1;
        gx_gpu_dev *g = gx_gpu_inventory_owner(rt->inv, uuid, &mig);
        if (g) {
            out[n++] = (gx_devsel){g->minor, mig >= 0 ? (int)g->mig[mig].gi_id : -1,
                                   mig >= 0 ? (int)g->mig[mig].ci_id : -1};
            last = g;
        }
        p = e ? e + 1 : NULL;
    }
    const char *pipe, *logdir;
    if (n == 1 && rt->mps && gx_gpu_mps_dirs(rt->mps, last->uuid, &pipe, &logdir)) *mps_pipe = pipe;
    return n;
}

/* Prepare the sandbox of pod `index` (run/podbox.h): its command becomes bwrap's, it
 * starts in its own folder with its own HOME, and the shim's child joins its cgroup; its
 * CUDA shim's files are bound in when cu->on. */
int gx_exec_pod_box(gx_exec *x, gx_run *w, int index, const char *devices, const struct gx_exec_cuda *cu,
                    char **argv, gx_podbox_run *br, gx_err *err)
{
    gx_devsel sel[16];
    const char *mps_pipe;
    size_t nsel = pod_devsel(x, devices, sel, 16, &mps_pipe);
    gx_podbox_pod bp = {w->ns, w->name, w->gen, index, &w->ps, sel, nsel, mps_pipe, argv, gx_loop_now(x->loop),
                        cu->on ? cu->lib : NULL, cu->on ? cu->region : NULL, cu->on ? cu->preload : NULL};
    return gx_podbox_prepare(x->box, &bp, br, err);
}

/* A pod's end, in Kubernetes' words: OOMKilled when the memory cgroup's OOM killer
 * struck (and the pod did not succeed), else Completed or Error. In the sandbox a signal
 * reaches the shim as bwrap's exit code 128+N, the way a shell reports it; it is read
 * back as the signal. The cgroup is emptied and removed. */
void gx_exec_pod_settle(gx_exec *x, gx_run_pod *p)
{
    if (p->sandboxed) {
        if (p->exit_code > 128 && p->exit_code <= 128 + 64 && !p->signal_no) p->signal_no = p->exit_code - 128;
        if (p->exit_code && gx_cgroup_oom_kills(gx_podbox_cgroups(x->box), p->cgroup) > 0) {
            snprintf(p->reason, sizeof p->reason, "OOMKilled");
            p->exit_code = 137;
            p->signal_no = SIGKILL;
        }
        gx_exec_pod_release(x, p);
    }
    if (!p->reason[0]) snprintf(p->reason, sizeof p->reason, "%s", p->exit_code == 0 ? "Completed" : "Error");
}

/* The last non-empty line of pod `index`'s log (at most n-1 bytes of it). */
void gx_exec_pod_log_tail(gx_exec *x, const gx_run *w, int index, char *out, size_t n)
{
    char path[PATH_MAX];
    snprintf(out, n, "see the pod's log");
    gx_run_log_path(x->log_dir, w->key, index, path, sizeof path);
    FILE *f = fopen(path, "re");
    if (!f) return;
    char buf[4096];
    if (fseek(f, -(long)(sizeof buf - 1), SEEK_END)) rewind(f);
    size_t k = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[k] = 0;
    while (k && (buf[k - 1] == '\n' || buf[k - 1] == ' ')) buf[--k] = 0;
    char *line = strrchr(buf, '\n');
    line = line ? line + 1 : buf;
    if (*line) snprintf(out, n, "%.*s", (int)(n - 1), line);
}
