/* podbox: preparing one sandboxed pod (see podbox.h). */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "core/quantity.h"
#include "lib/alloc.h"
#include "run/podbox.h"
#include "run/proc.h"
#include "run/sandbox.h"
#include "lib/path.h"

#define CAPS_DIR "/proc/driver/nvidia/capabilities"

struct gx_podbox {
    const gx_run_config *rc;
    char **leftover;                  /* cgroups of ended pods not yet removable */
    size_t nleftover;
    int64_t next_retry_ms;            /* when gx_podbox_tick tries them again */
    gx_cgroup_sys cg;
    gx_identity *ids;
    char bwrap[PATH_MAX], shim[PATH_MAX];
    char data_dir[PATH_MAX], work_root[PATH_MAX];
    char unavailable[PATH_MAX + 512]; /* "" when pods can start; holds a path and a reason */
};

/* Everything the host must offer; the first thing missing goes into b->unavailable. */
static void check_host(gx_podbox *b)
{
    gx_err e;
    gx_err_clear(&e);
    char missing[128];
    if (gx_sandbox_find_bwrap(b->rc->bwrap, b->bwrap, sizeof b->bwrap))
        snprintf(b->unavailable, sizeof b->unavailable, "bwrap not found: install the Debian package bubblewrap");
    else if (gx_proc_shim_path(b->shim, sizeof b->shim))
        snprintf(b->unavailable, sizeof b->unavailable, "gpuaas-shim is missing beside the gpuaas binary: rebuild");
    else if (gx_cgroup_detect(&b->cg, b->rc->cgroup_parent, NULL, &e))
        snprintf(b->unavailable, sizeof b->unavailable, "cgroups: %s", e.msg);
    else if (gx_cgroup_missing(&b->cg, GX_CG_REQUIRED, missing, sizeof missing))
        snprintf(b->unavailable, sizeof b->unavailable, "no cgroup controller for %s (neither cgroup v2 nor v1 "
                 "offers it)", missing);
    else if (gx_sandbox_probe(b->bwrap, b->shim, b->rc->uid_lo, &e))
        snprintf(b->unavailable, sizeof b->unavailable, "%s", e.msg);
}

gx_podbox *gx_podbox_open(const gx_run_config *rc, const char *data_dir, gx_store *st, gx_err *err)
{
    gx_identity *ids = gx_identity_open(rc, st, err);
    if (!ids) return NULL;
    gx_podbox *b = gx_xcalloc(1, sizeof *b);
    b->rc = rc;
    b->ids = ids;
    snprintf(b->data_dir, sizeof b->data_dir, "%s", data_dir);
    int w = rc->work_dir[0] ? snprintf(b->work_root, sizeof b->work_root, "%s", rc->work_dir)
                            : snprintf(b->work_root, sizeof b->work_root, "%s/work", data_dir);
    if (!rc->sandbox) {
        /* none: pods run as the daemon; the cgroups are still found, for sandboxed pods an
         * earlier start left running (stopped and cleaned up through them) */
        gx_err e;
        if (gx_cgroup_detect(&b->cg, rc->cgroup_parent, NULL, &e)) memset(&b->cg, 0, sizeof b->cg);
    } else if (w < 0 || (size_t)w >= sizeof b->work_root)
        snprintf(b->unavailable, sizeof b->unavailable, "run.workDir: path too long");
    else if (gx_mkdirs(b->work_root, 0711) || chmod(b->work_root, 0711))
        snprintf(b->unavailable, sizeof b->unavailable, "cannot create %s: %s", b->work_root, strerror(errno));
    else
        check_host(b);
    return b;
}

void gx_podbox_describe(const gx_podbox *b, FILE *log)
{
    if (!b->rc->sandbox) {
        fprintf(log, "  sandbox:   NONE (run.sandbox: none): pods run as the daemon's uid %u with no isolation; "
                     "any pod can read the daemon's secrets (docs/security.md)\n", (unsigned)geteuid());
        return;
    }
    if (b->unavailable[0]) {
        fprintf(log, "  sandbox:   UNAVAILABLE: %s\n"
                     "             pods will not start; fix the host, or set run.sandbox: none in the server "
                     "configuration to run them unsandboxed (docs/security.md)\n", b->unavailable);
        return;
    }
    char v1[128] = "", v2[128] = "";
    static const char *names[GX_CG_NCTRL] = {"memory", "pids", "cpu", "devices"};
    for (int c = 0; c < GX_CG_NCTRL; c++) {
        char *o = b->cg.on_v2 & GX_CG_BIT(c) ? v2 : b->cg.on_v1 & GX_CG_BIT(c) ? v1 : NULL;
        if (o) snprintf(o + strlen(o), 128 - strlen(o), "%s%s", *o ? "," : "", names[c]);
    }
    fprintf(log, "  sandbox:   bubblewrap, uids %u-%u, cgroups %s%s%s%s%s under %s, work %s\n",
            (unsigned)b->rc->uid_lo, (unsigned)b->rc->uid_hi, *v2 ? "v2 " : "", v2, *v2 && *v1 ? ", " : "",
            *v1 ? "v1 " : "", v1, b->rc->cgroup_parent, b->work_root);
}

void gx_podbox_release(gx_podbox *b, const char *cgroup)
{
    gx_cgroup_kill(&b->cg, cgroup);
    gx_err e;
    if (!gx_cgroup_remove(&b->cg, cgroup, &e)) return;
    b->leftover = gx_xreallocarray(b->leftover, b->nleftover + 1, sizeof *b->leftover);
    b->leftover[b->nleftover++] = gx_xstrdup(cgroup);
}

int64_t gx_podbox_tick(gx_podbox *b, int64_t now_ms)
{
    if (!b->nleftover) return -1;
    if (now_ms < b->next_retry_ms) return b->next_retry_ms - now_ms;
    b->next_retry_ms = now_ms + 1000;
    size_t k = 0;
    for (size_t i = 0; i < b->nleftover; i++) {
        gx_err e;
        gx_cgroup_kill(&b->cg, b->leftover[i]);
        if (!gx_cgroup_remove(&b->cg, b->leftover[i], &e)) free(b->leftover[i]);
        else b->leftover[k++] = b->leftover[i];
    }
    b->nleftover = k;
    return k ? 1000 : -1;
}

void gx_podbox_free(gx_podbox *b)
{
    if (!b) return;
    for (size_t i = 0; i < b->nleftover; i++) free(b->leftover[i]);
    free(b->leftover);
    gx_identity_free(b->ids);
    free(b);
}

const char *gx_podbox_unavailable(const gx_podbox *b) { return b->unavailable[0] ? b->unavailable : NULL; }
const gx_cgroup_sys *gx_podbox_cgroups(const gx_podbox *b) { return &b->cg; }

int gx_podbox_cgroup_name(const char *ns, const char *name, int gen, int index, char *out, size_t n)
{
    int w = snprintf(out, n, "%s/%s/g%d-p%d", ns, name, gen, index);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

/* A quantity of the container's limits (else requests), in whole units of `div` milli. */
static int64_t container_quantity(const gx_podspec *ps, const char *res, int64_t div)
{
    const json_t *r = json_object_get(ps->container, "resources");
    const json_t *v = json_object_get(json_object_get(r, "limits"), res);
    if (!v) v = json_object_get(json_object_get(r, "requests"), res);
    int64_t milli;
    if (!v || gx_quantity_from_json(v, &milli, "", NULL)) return 0;
    return (milli + div - 1) / div;
}

int gx_podbox_check_mounts(const gx_run_config *rc, const char *ns, const gx_podspec *ps, gx_err *err)
{
    gx_podmount m[GX_POD_MAX_MOUNTS];
    int n = gx_podspec_mounts(ps, m);
    for (int i = 0; i < n; i++) {
        int ro_only;
        if (!gx_run_config_host_path(rc, ns, m[i].host_path, &ro_only))
            return gx_errf(err, 403, m[i].field, "namespace %s may not mount %s: the admin allows host folders per "
                           "namespace (run.namespaces.%s.hostPaths)", ns, m[i].host_path, ns);
        if (!rc->sandbox && strcmp(m[i].host_path, m[i].mount_path))
            return gx_errf(err, 422, m[i].field, "without the sandbox (run.sandbox: none) a host folder can only be "
                           "seen at its own path: set mountPath to %s", m[i].host_path);
    }
    return 0;
}

/* The hostPath mounts, each resolved (symbolic links followed) and checked again: a link
 * planted in an allowed folder must not lead out of it. */
static int host_mounts(gx_podbox *b, const gx_podbox_pod *p, char real[][PATH_MAX], gx_sandbox_mount *out, int *n,
                       gx_err *err)
{
    gx_podmount m[GX_POD_MAX_MOUNTS];
    int k = gx_podspec_mounts(p->ps, m);
    for (int i = 0; i < k; i++) {
        int ro_only;
        if (!realpath(m[i].host_path, real[i]))
            return gx_errf(err, 422, m[i].field, "%s: %s", m[i].host_path, strerror(errno));
        if (!gx_run_config_host_path(b->rc, p->ns, real[i], &ro_only))
            return gx_errf(err, 403, m[i].field, "%s leads to %s, which namespace %s may not mount", m[i].host_path,
                           real[i], p->ns);
        out[*n].src = real[i];
        out[*n].dst = m[i].mount_path;
        out[*n].kind = m[i].read_only || ro_only ? GX_MOUNT_RO : GX_MOUNT_RW;
        (*n)++;
    }
    return 0;
}

/* WORK/<ns>/<name>: the namespace level root's (0711: its pods reach their own folders by
 * name only), the pod's folder the uid's (0700). */
static int work_dir(gx_podbox *b, const gx_podbox_pod *p, const gx_podbox_run *r, char *out, size_t n, gx_err *err)
{
    char nsdir[PATH_MAX];
    int w1 = snprintf(nsdir, sizeof nsdir, "%s/%s", b->work_root, p->ns);
    int w2 = snprintf(out, n, "%s/%s", nsdir, p->name);
    if (w1 < 0 || (size_t)w1 >= sizeof nsdir || w2 < 0 || (size_t)w2 >= n)
        return gx_errf(err, 500, "", "working folder path too long under %s", b->work_root);
    if (gx_mkdirs(nsdir, 0711) || (mkdir(out, 0700) < 0 && errno != EEXIST))
        return gx_errf(err, 500, "", "cannot create %s: %s", out, strerror(errno));
    /* never chown through a link: the folder may have been a tenant's for an earlier run */
    int fd = open(out, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return gx_errf(err, 500, "", "cannot open %s: %s", out, strerror(errno));
    int rc = fchown(fd, r->uid, r->gid) || fchmod(fd, 0700);
    int e = errno;
    close(fd);
    return rc ? gx_errf(err, 500, "", "cannot give %s to uid %u: %s", out, (unsigned)r->uid, strerror(e)) : 0;
}

static int make_cgroup(gx_podbox *b, const gx_podbox_pod *p, const gx_devnode *nodes, int nn, gx_podbox_run *r,
                       gx_err *err)
{
    if (gx_podbox_cgroup_name(p->ns, p->name, p->gen, p->index, r->cgroup, sizeof r->cgroup))
        return gx_errf(err, 500, "", "cgroup name too long for %s/%s", p->ns, p->name);
    gx_cgroup_dev devs[GX_DEVNODES_MAX];
    for (int i = 0; i < nn; i++) devs[i] = (gx_cgroup_dev){nodes[i].type, nodes[i].major, nodes[i].minor};
    gx_cgroup_limits lim = {0};
    lim.memory_bytes = container_quantity(p->ps, "memory", 1000);
    if (!lim.memory_bytes) lim.memory_bytes = b->rc->default_memory;
    lim.cpu_millis = 0;
    const json_t *cpu = json_object_get(json_object_get(json_object_get(p->ps->container, "resources"), "limits"), "cpu");
    int64_t milli;
    if (cpu && !gx_quantity_from_json(cpu, &milli, "", NULL)) lim.cpu_millis = milli;
    lim.pids = b->rc->pids_max;
    lim.devices = devs;
    lim.ndevices = (size_t)nn;
    r->memory_bytes = lim.memory_bytes;
    if (gx_cgroup_create(&b->cg, r->cgroup, &lim, err)) return -1;
    r->nprocs = gx_cgroup_procs_files(&b->cg, r->cgroup, r->procs, GX_CG_NCTRL + 1);
    if (r->nprocs <= 0) {
        gx_err e2;
        gx_cgroup_remove(&b->cg, r->cgroup, &e2);
        return gx_errf(err, 500, "", "no cgroup.procs file for %s", r->cgroup);
    }
    return 0;
}

int gx_podbox_prepare(gx_podbox *b, const gx_podbox_pod *p, gx_podbox_run *out, gx_err *err)
{
    memset(out, 0, sizeof *out);
    if (!b->rc->sandbox) return gx_errf(err, 500, "", "run.sandbox is none");
    if (b->unavailable[0]) return gx_errf(err, 503, "", "the pod sandbox is unavailable: %s", b->unavailable);
    if (gx_identity_of(b->ids, p->mps_pipe ? GX_IDENTITY_MPS : p->ns, p->now_ms, &out->uid, &out->gid, err)) return -1;
    if (work_dir(b, p, out, out->work_dir, sizeof out->work_dir, err)) return -1;
    gx_devnode nodes[GX_DEVNODES_MAX];
    int nn = gx_devnodes_for(b->rc->device_dir, CAPS_DIR, p->gpus, p->ngpus, nodes, GX_DEVNODES_MAX, err);
    if (nn < 0) return -1;
    gx_sandbox_mount mounts[GX_DEVNODES_MAX + GX_POD_MAX_MOUNTS + 1];
    char real[GX_POD_MAX_MOUNTS][PATH_MAX];
    int nm = 0;
    for (int i = 0; i < nn; i++) mounts[nm++] = (gx_sandbox_mount){nodes[i].src, nodes[i].dst, GX_MOUNT_DEV};
    if (host_mounts(b, p, real, mounts, &nm, err)) return -1;
    if (p->mps_pipe) mounts[nm++] = (gx_sandbox_mount){p->mps_pipe, p->mps_pipe, GX_MOUNT_RW};
    if (make_cgroup(b, p, nodes, nn, out, err)) return -1;
    /* the data directory and every working folder are empty inside: only its own is bound */
    const char *hide[3] = {b->data_dir, NULL, NULL};
    size_t dl = strlen(b->data_dir);
    if (strncmp(b->work_root, b->data_dir, dl) || (b->work_root[dl] && b->work_root[dl] != '/')) hide[1] = b->work_root;
    char host[80];
    snprintf(host, sizeof host, "%.60s-%d", p->name, p->index);
    const char *wd = p->ps->working_dir ? p->ps->working_dir : out->work_dir;
    gx_sandbox_spec s = {.bwrap = b->bwrap, .shim = b->shim, .uid = out->uid, .gid = out->gid,
                         .work_dir = out->work_dir, .cwd = wd, .hostname = host, .hide = hide,
                         .tmp_bytes = b->rc->tmp_bytes, .mounts = mounts, .nmounts = (size_t)nm, .argv = p->argv,
                         .cuda_lib = p->cuda_lib, .cuda_region = p->cuda_region, .cuda_preload = p->cuda_preload};
    if (!(out->argv = gx_sandbox_argv(&s, err))) {
        gx_err e2;
        gx_cgroup_remove(&b->cg, out->cgroup, &e2);
        return -1;
    }
    return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st; (void)ftw;
    return (flag == FTW_DP ? rmdir(path) : unlink(path)) < 0 && errno != ENOENT ? -1 : 0;
}

/* Depth first, never following a link (FTW_PHYS) nor crossing into another file system
 * (FTW_MOUNT): the folder was a tenant's, and a link it left there must not make root
 * delete what it points to. */
int gx_podbox_remove_work(gx_podbox *b, const char *ns, const char *name, gx_err *err)
{
    if (!b->rc->sandbox) return 0;
    char dir[PATH_MAX];
    int w = snprintf(dir, sizeof dir, "%s/%s/%s", b->work_root, ns, name);
    if (w < 0 || (size_t)w >= sizeof dir) return gx_errf(err, 500, "", "working folder path too long");
    struct stat st;
    if (lstat(dir, &st) < 0) return errno == ENOENT ? 0 : gx_errf(err, 500, "", "%s: %s", dir, strerror(errno));
    if (nftw(dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT) < 0)
        return gx_errf(err, 500, "", "cannot remove %s: %s", dir, strerror(errno));
    return 0;
}
