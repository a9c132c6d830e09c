/* gpu/cuda_region: creating and reading pods' CUDA regions (see cuda_region_ops.h).
 * Owns: the limits per sharing mode, the file's creation order (old one removed, body
 * written with magic 0, size set, owner set, magic last) and the reader's checks.
 * Must not: map a region (the pod may truncate it: SIGBUS), trust anything read back
 * beyond display (the pod can write every byte), or write a region once its pod runs. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "gpu/cuda_region_ops.h"
#include "lib/alloc.h"

#define MIB ((uint64_t)1 << 20)
#define REGION_BYTES ((off_t)GX_CUDA_REGION_LOCK_BASE + GX_CUDA_REGION_PROCS)

/* Time-slicing promises no memory share of its own: the shim's is the GPU's memory split
 * evenly between its replicas, the most each of them can count on. A fractional GPU's
 * vGPU has its memory and cores from the engine (gpu/podenv gives them the same way). */
int gx_cuda_limits_for(gx_gpu_inv *inv, const gx_engine_dev *devs, int n, gx_cuda_limits *out)
{
    memset(out, 0, sizeof *out);
    if (!inv || n <= 0) return 0;
    if (n > GX_CUDA_REGION_DEVICES) n = GX_CUDA_REGION_DEVICES;
    int any = 0;
    for (int i = 0; i < n; i++) {
        int mig = -1;
        gx_gpu_dev *d = gx_gpu_inventory_owner(inv, devs[i].uuid, &mig);
        if (!d || mig >= 0) continue;
        out->total[i] = d->mem_mib > 0 ? (uint64_t)d->mem_mib * MIB : 0;
        if (d->mode == GX_SHARE_TIMESLICING) {
            int r = d->replicas > 0 ? d->replicas : 1;
            out->limit[i] = out->total[i] / (uint64_t)r;
            any = 1;
        } else if (d->mode == GX_SHARE_FRACTIONAL) {
            int64_t mem = devs[i].shared && devs[i].mem_mib > 0 ? devs[i].mem_mib : d->mem_mib;
            int cores = devs[i].shared ? devs[i].cores : 100;
            out->limit[i] = mem > 0 ? (uint64_t)mem * MIB : 0;
            out->sm_share[i] = cores > 0 && cores < 100 ? (uint32_t)cores : 0;
            any = 1;
        }
    }
    out->ndevices = n;
    if (!any) memset(out, 0, sizeof *out);
    return any;
}

static int write_at(int fd, const void *buf, size_t n, off_t off)
{
    const char *p = buf;
    while (n) {
        ssize_t w = pwrite(fd, p, n, off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
        off += w;
    }
    return 0;
}

int gx_cuda_region_create(const char *path, const gx_cuda_limits *l, uid_t uid, gid_t gid, gx_err *err)
{
    if (unlink(path) < 0 && errno != ENOENT) return gx_errf(err, 500, "", "cannot remove %s: %s", path, strerror(errno));
    int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return gx_errf(err, 500, "", "cannot create %s: %s", path, strerror(errno));
    gx_cuda_region *r = gx_xcalloc(1, sizeof *r);
    r->version = GX_CUDA_REGION_VERSION;
    r->ndevices = (uint32_t)(l->ndevices < 0 ? 0 : l->ndevices > GX_CUDA_REGION_DEVICES ? GX_CUDA_REGION_DEVICES
                                                                                          : l->ndevices);
    memcpy(r->limit, l->limit, sizeof r->limit);
    memcpy(r->total, l->total, sizeof r->total);
    memcpy(r->sm_share, l->sm_share, sizeof r->sm_share);
    uint32_t magic = GX_CUDA_REGION_MAGIC;
    /* the body with magic 0, the size, the owner, then the magic: a shim never sees a
     * region with its magic whose limits are not all there */
    int rc = write_at(fd, r, sizeof *r, 0) || ftruncate(fd, REGION_BYTES) || fchown(fd, uid, gid) ||
             write_at(fd, &magic, sizeof magic, offsetof(gx_cuda_region, magic));
    int e = errno;
    free(r);
    close(fd);
    if (!rc) return 0;
    unlink(path);
    return gx_errf(err, 500, "", "cannot write %s: %s", path, strerror(e));
}

/* Is the lock byte of slot i held (a live process owns the slot)? A failed query counts
 * as held: never leave out the use of a process that may be alive. */
static int slot_held(int fd, int i)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = GX_CUDA_REGION_LOCK_BASE + i, .l_len = 1};
    if (fcntl(fd, F_OFD_GETLK, &fl) < 0) return 1;
    return fl.l_type != F_UNLCK;
}

static int read_all(int fd, void *buf, size_t n)
{
    char *p = buf;
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, p + got, n - got, (off_t)got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        got += (size_t)k;
    }
    return 0;
}

/* The checks a region must pass before any figure of it is shown. */
static int region_ok(int fd, const gx_cuda_region *r, const char *path, gx_err *err)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size < REGION_BYTES)
        return gx_errf(err, 422, "", "%s is not a CUDA region (its size changed)", path);
    if (r->magic != GX_CUDA_REGION_MAGIC || r->version != GX_CUDA_REGION_VERSION)
        return gx_errf(err, 422, "", "%s is not a CUDA region of version %u", path, GX_CUDA_REGION_VERSION);
    if (r->ndevices > GX_CUDA_REGION_DEVICES)
        return gx_errf(err, 422, "", "%s names %u devices (at most %d)", path, r->ndevices, GX_CUDA_REGION_DEVICES);
    return 0;
}

/* Fill out's figures from the snapshot r, leaving out the slots of dead processes. */
static void usage_of(int fd, const gx_cuda_region *r, gx_cuda_usage *out)
{
    int nd = (int)r->ndevices;
    out->ndevices = nd;
    uint64_t dead_use[GX_CUDA_REGION_DEVICES] = {0};
    for (int i = 0; i < GX_CUDA_REGION_PROCS; i++) {
        const gx_cuda_slot *s = &r->slots[i];
        if (!s->in_use) continue;
        if (slot_held(fd, i)) { out->procs++; continue; }
        out->dead++;
        for (int d = 0; d < nd; d++) dead_use[d] += s->used[d];
    }
    for (int d = 0; d < nd; d++) {
        gx_cuda_dev_usage *u = &out->dev[d];
        u->used = r->used[d] > dead_use[d] ? r->used[d] - dead_use[d] : 0;
        u->peak = r->peak[d];
        u->limit = r->limit[d];
        u->total = r->total[d];
        u->refused = r->refused[d];
        u->launches = r->launches[d];
        u->sm_share = r->sm_share[d];
        u->achieved = r->window_ns[d] ? 100.0 * (double)r->busy_ns[d] / (double)r->window_ns[d] : -1;
        if (u->achieved > 100) u->achieved = 100;
    }
}

int gx_cuda_region_read(const char *path, gx_cuda_usage *out, gx_err *err)
{
    memset(out, 0, sizeof *out);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return gx_errf(err, errno == ENOENT ? 404 : 500, "", "cannot open %s: %s", path, strerror(errno));
    gx_cuda_region *r = gx_xmalloc(sizeof *r);
    int rc = read_all(fd, r, sizeof *r) ? gx_errf(err, 422, "", "%s is shorter than a CUDA region", path)
                                        : region_ok(fd, r, path, err);
    if (!rc) usage_of(fd, r, out);
    free(r);
    close(fd);
    return rc;
}
