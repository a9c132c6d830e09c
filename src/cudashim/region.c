/* cudashim/region: the pod's shared accounting region (gpu/cuda_region.h) as one process
 * of the pod sees it: mapping it, owning a slot, reserving and releasing bytes, reaping
 * the slots of dead processes, and starting over in the child of a fork.
 * Owns: the process's region mapping, descriptor and slot index.
 * Must not: kill or stop anything (over the limit is CUDA_ERROR_OUT_OF_MEMORY, never a
 * signal); account without a region whose magic and version it knows. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cudashim/shim.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static gx_cuda_region *reg;   /* NULL: pass through */
static int reg_fd = -1;
static int my_slot = -1;      /* -1: accounting in the totals only (no free slot) */
static char reg_path[4096];

uint64_t gx_cs_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* An OFD write lock on slot I's byte through FD: 0 taken, -1 held by someone else. */
static int lock_byte(int fd, int i, short type)
{
    struct flock fl = {.l_type = type, .l_whence = SEEK_SET,
                       .l_start = GX_CUDA_REGION_LOCK_BASE + (off_t)i, .l_len = 1};
    return fcntl(fd, F_OFD_SETLK, &fl) == 0 ? 0 : -1;
}

/* Give slot I's use back to the totals. Called only while holding its lock byte, with
 * the owner gone, so nobody else adds to it meanwhile. */
static void drain_slot(gx_cuda_slot *s)
{
    for (int d = 0; d < GX_CUDA_REGION_DEVICES; d++) {
        uint64_t x = __atomic_exchange_n(&s->used[d], 0, __ATOMIC_ACQ_REL);
        if (x) __atomic_fetch_sub(&reg->used[d], x, __ATOMIC_ACQ_REL);
    }
    __atomic_store_n(&s->pid, 0, __ATOMIC_RELEASE);
    __atomic_store_n(&s->in_use, 0, __ATOMIC_RELEASE);
}

static int slot_dirty(const gx_cuda_slot *s)
{
    if (__atomic_load_n(&s->in_use, __ATOMIC_ACQUIRE)) return 1;
    for (int d = 0; d < GX_CUDA_REGION_DEVICES; d++)
        if (__atomic_load_n(&s->used[d], __ATOMIC_ACQUIRE)) return 1;
    return 0;
}

/* Reap every slot whose owner died (its lock byte is free but it still shows use):
 * returns how many. The kernel dropped the dead owner's OFD lock, however it died. */
static int reap_dead(void)
{
    int n = 0;
    for (int i = 0; i < GX_CUDA_REGION_PROCS; i++) {
        if (i == my_slot || !slot_dirty(&reg->slots[i])) continue;
        if (lock_byte(reg_fd, i, F_WRLCK) != 0) continue;   /* alive */
        drain_slot(&reg->slots[i]);
        lock_byte(reg_fd, i, F_UNLCK);
        n++;
    }
    return n;
}

/* Take the first slot whose byte we can lock (a stale one is drained first). */
static void take_slot(void)
{
    my_slot = -1;
    for (int i = 0; i < GX_CUDA_REGION_PROCS; i++) {
        if (lock_byte(reg_fd, i, F_WRLCK) != 0) continue;
        gx_cuda_slot *s = &reg->slots[i];
        if (slot_dirty(s)) drain_slot(s);
        __atomic_store_n(&s->pid, (uint32_t)getpid(), __ATOMIC_RELEASE);
        __atomic_store_n(&s->in_use, 1, __ATOMIC_RELEASE);
        my_slot = i;
        return;
    }
    fprintf(stderr, "gpuaas-cuda: all %d process slots of %s are taken: this process's memory is "
            "counted against the limit but not given back if it crashes\n", GX_CUDA_REGION_PROCS, reg_path);
}

static int open_region_fd(void)
{
    return open(reg_path, O_RDWR | O_CLOEXEC);
}

static void child_after_fork(void);

static void init_region(void)
{
    const char *p = getenv(GX_CUDA_REGION_ENV);
    if (!p || !*p) return;                       /* a pod on a whole GPU: pass through */
    if (strlen(p) >= sizeof reg_path) {
        fprintf(stderr, "gpuaas-cuda: %s is too long: no limits kept\n", GX_CUDA_REGION_ENV);
        return;
    }
    strcpy(reg_path, p);
    int fd = open_region_fd();
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || (size_t)st.st_size < sizeof(gx_cuda_region)) {
        fprintf(stderr, "gpuaas-cuda: %s=%s cannot be used (%s): no limits kept\n", GX_CUDA_REGION_ENV, p,
                fd < 0 ? strerror(errno) : "too small");
        if (fd >= 0) close(fd);
        return;
    }
    void *m = mmap(NULL, sizeof(gx_cuda_region), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (m == MAP_FAILED) {
        fprintf(stderr, "gpuaas-cuda: cannot map %s (%s): no limits kept\n", p, strerror(errno));
        close(fd);
        return;
    }
    gx_cuda_region *r = m;
    uint32_t magic = __atomic_load_n(&r->magic, __ATOMIC_ACQUIRE);
    if (magic != GX_CUDA_REGION_MAGIC || r->version != GX_CUDA_REGION_VERSION) {
        fprintf(stderr, "gpuaas-cuda: %s is not a region this library knows (magic %#x version %u, "
                "want %#x version %u): no limits kept\n", p, magic, r->version,
                GX_CUDA_REGION_MAGIC, GX_CUDA_REGION_VERSION);
        munmap(m, sizeof(gx_cuda_region));
        close(fd);
        return;
    }
    reg = r;
    reg_fd = fd;
    take_slot();
    pthread_atfork(NULL, NULL, child_after_fork);
}

/* The child of a fork shares the parent's open file description, hence its lock: it
 * opens the file anew, drops the inherited descriptor and takes a slot of its own with
 * zero use (CUDA forbids using the parent's context after fork, so nothing the parent
 * allocated is the child's). Only async-signal-safe calls here. */
static void child_after_fork(void)
{
    if (!reg) return;
    int fd = open_region_fd();
    if (reg_fd >= 0) close(reg_fd);
    reg_fd = fd;
    gx_cs_table_reset();
    gx_cs_launch_reset();
    if (fd < 0) { my_slot = -1; return; }
    take_slot();
}

/* A process that exits normally gives its use back at once (one that crashes is reaped by
 * the next process refused, or by the daemon). */
__attribute__((destructor)) static void leave_region(void)
{
    if (!reg || my_slot < 0) return;
    drain_slot(&reg->slots[my_slot]);
    lock_byte(reg_fd, my_slot, F_UNLCK);
    my_slot = -1;
}

gx_cuda_region *gx_cs_region(void)
{
    pthread_once(&once, init_region);
    return reg;
}

static void add_mine(int dev, uint64_t size, int sub)
{
    if (my_slot < 0) return;
    uint64_t *u = &reg->slots[my_slot].used[dev];
    if (sub) __atomic_fetch_sub(u, size, __ATOMIC_ACQ_REL);
    else __atomic_fetch_add(u, size, __ATOMIC_ACQ_REL);
}

/* Reserve before the real allocation: the compare-and-swap makes "fits under the limit"
 * and "counted" one step, so two processes can never both pass with the last bytes. */
int gx_cs_reserve(int dev, uint64_t size)
{
    gx_cuda_region *r = gx_cs_region();
    if (!r || dev < 0 || dev >= GX_CUDA_REGION_DEVICES) return 0;
    uint64_t limit = r->limit[dev];
    int reaped = 0;
    for (;;) {
        uint64_t cur = __atomic_load_n(&r->used[dev], __ATOMIC_ACQUIRE);
        int over = limit && (size > limit || cur > limit - size);
        if (!over) {
            if (!__atomic_compare_exchange_n(&r->used[dev], &cur, cur + size, 0, __ATOMIC_ACQ_REL,
                                             __ATOMIC_ACQUIRE))
                continue;
            add_mine(dev, size, 0);
            uint64_t pk = __atomic_load_n(&r->peak[dev], __ATOMIC_ACQUIRE);
            while (pk < cur + size &&
                   !__atomic_compare_exchange_n(&r->peak[dev], &pk, cur + size, 0, __ATOMIC_ACQ_REL,
                                                __ATOMIC_ACQUIRE)) {}
            return 0;
        }
        if (!reaped) {
            reaped = 1;
            if (reap_dead() > 0) continue;   /* a dead process's bytes came back */
        }
        __atomic_fetch_add(&r->refused[dev], 1, __ATOMIC_ACQ_REL);
        return -1;
    }
}

void gx_cs_release(int dev, uint64_t size)
{
    gx_cuda_region *r = gx_cs_region();
    if (!r || dev < 0 || dev >= GX_CUDA_REGION_DEVICES || !size) return;
    add_mine(dev, size, 1);
    __atomic_fetch_sub(&r->used[dev], size, __ATOMIC_ACQ_REL);
}
