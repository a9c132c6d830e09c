/* cudashim/launch: the compute share. Kernel launches (cuLaunchKernel, cuLaunchKernelEx,
 * cuLaunchCooperativeKernel, cuGraphLaunch, each also _ptsz) are counted; where the pod
 * has a target share S of SM time on the device (region sm_share 1..99) they are held to
 * it by a duty cycle:
 *   - a throttled launch is bracketed by two events on its stream and followed by a wait
 *     on the second, so the GPU's own clock gives the kernel's busy time B
 *     (cuEventElapsedTime: the CPU's wake-up latency is not counted as GPU time).
 *     Launches become blocking, as with CUDA_LAUNCH_BLOCKING=1: legal, and the price of
 *     measuring. Without events (a driver refusing them) the CPU clock from launch to
 *     the end of a stream synchronize is used instead;
 *   - each B costs the process B * 100 / S of wall time on that device: a virtual clock V
 *     advances by that much per kernel, and a launch waits until the real clock reaches V.
 *     V never lags the real clock by more than GX_CS_CREDIT_NS, so an idle spell earns a
 *     burst of at most that long, and a sleep that wakes late is made up by the next
 *     launch starting at once (V does not move with the late wake-up).
 * The region records busy_ns, window_ns (the wall time the share was kept over) and
 * throttled_ns (time launches were held back), so the achieved share busy/window can be
 * reported. V lives in the region (next_ok_ns), so every process of the pod advances the
 * same clock: two processes on one device share S between them, they do not get S each.
 * Owns: the throttle state of this process. Must not: drop or reorder launches. */
#include <time.h>
#include "cudashim/shim.h"

#define GX_CS_CREDIT_NS 5000000ull              /* 5 ms */
static uint64_t last_end[GX_CUDA_REGION_DEVICES];  /* end of the last measured launch */

/* This thread's event pair per device (events belong to a context; made on first use). */
static __thread CUevent evs[GX_CUDA_REGION_DEVICES][2];

/* Fork child: no events (they belonged to the parent's contexts); the pod's clock stays. */
void gx_cs_launch_reset(void)
{
    for (int d = 0; d < GX_CUDA_REGION_DEVICES; d++) last_end[d] = 0, evs[d][0] = evs[d][1] = NULL;
}

/* The device's target share, 0 when launches are not throttled; counts the launch. */
static int share_for(int *devp)
{
    gx_cuda_region *r = gx_cs_region();
    if (!r) return 0;
    int dev = gx_cs_current_device();
    if (dev < 0 || dev >= GX_CUDA_REGION_DEVICES) return 0;
    __atomic_fetch_add(&r->launches[dev], 1, __ATOMIC_RELAXED);
    uint32_t s = r->sm_share[dev];
    *devp = dev;
    return s >= 1 && s <= 99 ? (int)s : 0;
}

/* Hold the launch until the virtual clock allows it. */
static void wait_turn(int dev)
{
    uint64_t *next_ok = &gx_cs_region()->next_ok_ns[dev];
    uint64_t now = gx_cs_now_ns(), v = __atomic_load_n(next_ok, __ATOMIC_ACQUIRE);
    while (v + GX_CS_CREDIT_NS < now &&
           !__atomic_compare_exchange_n(next_ok, &v, now - GX_CS_CREDIT_NS, 0, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {}
    if (v <= now) return;
    struct timespec ts = {(time_t)(v / 1000000000u), (long)(v % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0) {}
    __atomic_fetch_add(&gx_cs_region()->throttled_ns[dev], gx_cs_now_ns() - now, __ATOMIC_RELAXED);
}

typedef CUresult (*sync_fn)(CUstream);
typedef CUresult (*evcreate_fn)(CUevent *, unsigned);
typedef CUresult (*evrecord_fn)(CUevent, CUstream);
typedef CUresult (*evsync_fn)(CUevent);
typedef CUresult (*evtime_fn)(float *, CUevent, CUevent);

/* Record the start event of a throttled launch on STREAM: 1 when events are in use. */
static int mark_start(int dev, CUstream stream)
{
    GX_CS_REAL(evcreate_fn, create, "cuEventCreate");
    GX_CS_REAL(evrecord_fn, record, "cuEventRecord");
    if (!create || !record) return 0;
    for (int i = 0; i < 2; i++)
        if (!evs[dev][i] && create(&evs[dev][i], 0) != CUDA_SUCCESS) return 0;
    return record(evs[dev][0], stream) == CUDA_SUCCESS;
}

/* The kernel's GPU time in ns from the event pair, after waiting for the end; 0 on error. */
static uint64_t gpu_busy(int dev, CUstream stream)
{
    GX_CS_REAL(evrecord_fn, record, "cuEventRecord");
    GX_CS_REAL(evsync_fn, esync, "cuEventSynchronize");
    GX_CS_REAL(evtime_fn, elapsed, "cuEventElapsedTime");
    float ms = 0;
    if (!esync || !elapsed || record(evs[dev][1], stream) != CUDA_SUCCESS ||
        esync(evs[dev][1]) != CUDA_SUCCESS || elapsed(&ms, evs[dev][0], evs[dev][1]) != CUDA_SUCCESS || ms < 0)
        return 0;
    return (uint64_t)((double)ms * 1e6);
}

/* After a launch that started at T0: wait for its work, book its busy time and its cost. */
static void measure(int dev, int share, CUstream stream, uint64_t t0, int events)
{
    uint64_t busy = events ? gpu_busy(dev, stream) : 0;
    if (!busy) {
        GX_CS_REAL(sync_fn, sync, "cuStreamSynchronize");
        if (sync) sync(stream);
    }
    uint64_t end = gx_cs_now_ns();
    if (!busy) busy = end - t0;
    __atomic_fetch_add(&gx_cs_region()->next_ok_ns[dev], busy * 100 / (uint64_t)share, __ATOMIC_ACQ_REL);
    uint64_t prev = __atomic_exchange_n(&last_end[dev], end, __ATOMIC_ACQ_REL);
    gx_cuda_region *r = gx_cs_region();
    __atomic_fetch_add(&r->busy_ns[dev], busy, __ATOMIC_RELAXED);
    __atomic_fetch_add(&r->window_ns[dev], prev && prev < end && end - prev > busy ? end - prev : busy,
                       __ATOMIC_RELAXED);
}

#define LAUNCH_HOOK(name, sig_args, call_args, stream_expr)                                  \
    typedef CUresult (*name##_fn) sig_args;                                                  \
    GX_CS_EXPORT CUresult name sig_args                                                      \
    {                                                                                        \
        GX_CS_REAL(name##_fn, real, #name);                                                  \
        if (!real) return CUDA_ERROR_NOT_INITIALIZED;                                        \
        int dev = 0, share = share_for(&dev);                                                \
        if (!share) return real call_args;                                                   \
        wait_turn(dev);                                                                      \
        int events = mark_start(dev, stream_expr);                                           \
        uint64_t t0 = gx_cs_now_ns();                                                        \
        CUresult rc = real call_args;                                                        \
        if (rc == CUDA_SUCCESS) measure(dev, share, stream_expr, t0, events);                \
        return rc;                                                                           \
    }

#define KERNEL_ARGS (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, \
                     unsigned bz, unsigned shmem, CUstream s, void **params, void **extra)
#define KERNEL_CALL (f, gx, gy, gz, bx, by, bz, shmem, s, params, extra)
#define COOP_ARGS (CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, \
                   unsigned bz, unsigned shmem, CUstream s, void **params)
#define COOP_CALL (f, gx, gy, gz, bx, by, bz, shmem, s, params)
#define EX_ARGS (const CUlaunchConfig *cfg, CUfunction f, void **params, void **extra)
#define EX_CALL (cfg, f, params, extra)

LAUNCH_HOOK(cuLaunchKernel, KERNEL_ARGS, KERNEL_CALL, s)
/* a _ptsz launch on stream 0 ran on the per-thread default stream: CU_STREAM_PER_THREAD (0x2) */
#define PTSZ(x) ((x) ? (x) : (CUstream)(uintptr_t)0x2)
LAUNCH_HOOK(cuLaunchKernel_ptsz, KERNEL_ARGS, KERNEL_CALL, PTSZ(s))
LAUNCH_HOOK(cuLaunchCooperativeKernel, COOP_ARGS, COOP_CALL, s)
LAUNCH_HOOK(cuLaunchCooperativeKernel_ptsz, COOP_ARGS, COOP_CALL, PTSZ(s))
LAUNCH_HOOK(cuLaunchKernelEx, EX_ARGS, EX_CALL, cfg ? cfg->hStream : NULL)
LAUNCH_HOOK(cuLaunchKernelEx_ptsz, EX_ARGS, EX_CALL, PTSZ(cfg ? cfg->hStream : NULL))
LAUNCH_HOOK(cuGraphLaunch, (CUgraphExec g, CUstream s), (g, s), s)
LAUNCH_HOOK(cuGraphLaunch_ptsz, (CUgraphExec g, CUstream s), (g, s), PTSZ(s))
