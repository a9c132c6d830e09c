/* fake_nvml: a stand-in libnvidia-ml.so.1 for tests on machines without a GPU.
 *
 * A real NVML cannot exist here (no GPU, no driver), so the tests build this library
 * and point gpuaas at it, exercising the dlopen path, symbol resolution and error
 * handling. It implements only the symbols gpu/nvml.c calls, with the C ABI of NVML's
 * header (versioned names such as nvmlInit_v2). Behaviour comes from the environment:
 *   FAKE_NVML_GPUS   models, comma-separated (H100-80GB, A100-40GB, A100-80GB,
 *                    H200-141GB, L4, T4); default "H100-80GB,H100-80GB"
 *   FAKE_NVML_MIG    "I=P+P+..": GPU I has MIG on with these profiles (e.g. 1=3g.40gb+1g.10gb)
 *   FAKE_NVML_FAIL   "init": nvmlInit_v2 fails with NVML_ERROR_DRIVER_NOT_LOADED
 *   FAKE_NVML_UTIL   GPU utilisation percent reported for every GPU (default 0)
 *   FAKE_NVML_PROCS  "I:PID:MiB+..." processes running on GPU I
 *   FAKE_NVML_STATE  a directory: the compute mode of GPU I lives in its file
 *                    compute-mode-I (a number, as nvmlComputeMode_t; absent = 0, Default),
 *                    so tests can read and preset it and it outlives the daemon
 *   FAKE_NVML_FAIL   "setcompute": nvmlDeviceSetComputeMode fails with NO_PERMISSION
 *   FAKE_NVML_GPM    percent: GPM is supported and NVML_GPM_METRIC_GRAPHICS_UTIL reads
 *                    this for every GPU and GPU instance; unset or "" = GPM not supported
 * Built with -DFAKE_NVML_OLD it lacks nvmlInit_v2 (a driver too old to use) and GPM.
 * Owns: nothing of gpuaas; must not be linked into the daemon. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))
enum { OK = 0, INVALID = 2, NOT_SUPPORTED = 3, NO_PERMISSION = 4, NOT_FOUND = 6, INSUFFICIENT_SIZE = 7,
       DRIVER_NOT_LOADED = 9, UNINITIALIZED = 1, IN_USE = 19 };

typedef struct { unsigned long long total, free, used; } mem_t;
typedef struct { unsigned gpu, memory; } util_t;
typedef struct { char legacy[16]; unsigned domain, bus, device, pci_device_id, pci_subsystem_id; char bus_id[32]; } pci_t;
typedef struct { unsigned pid; unsigned long long used; unsigned gi, ci; } proc_t;
typedef struct { unsigned start, size; } placement_t;
typedef struct fdev fdev;
typedef struct { fdev *device; unsigned id, profile_id; placement_t placement; } gi_info_t;
typedef struct { unsigned id, p2p, slices, count, mps, ce, dec, enc, jpeg, ofa; unsigned long long mem; } gi_prof_t;
typedef struct { unsigned id, slices, count, mps, ce, dec, enc, jpeg, ofa; } ci_prof_t;

struct fdev {
    int gpu, mig;           /* mig -1: the GPU itself */
};

typedef struct {
    int used, gi_id, prof_idx, start, size, compute, has_ci;
    fdev h;
} fmig;

typedef struct {
    const char *model, *name;
    unsigned long long mib;
    unsigned pci;
    int gb[9];              /* profile GB by memory slices (1, 2, 4, 8); 0 = no MIG */
    int mig_mode;
    fmig mig[7];
    fdev h;
} fgpu;

static const fgpu kinds[] = {
    {"H100-80GB", "NVIDIA H100 80GB HBM3", 81559, 0x233010DE, {0, 10, 20, 0, 40, 0, 0, 0, 80}, 0, {{0}}, {0, 0}},
    {"A100-40GB", "NVIDIA A100-SXM4-40GB", 40960, 0x20B010DE, {0, 5, 10, 0, 20, 0, 0, 0, 40}, 0, {{0}}, {0, 0}},
    {"A100-80GB", "NVIDIA A100-SXM4-80GB", 81920, 0x20B210DE, {0, 10, 20, 0, 40, 0, 0, 0, 80}, 0, {{0}}, {0, 0}},
    {"H200-141GB", "NVIDIA H200", 143771, 0x233510DE, {0, 18, 35, 0, 71, 0, 0, 0, 141}, 0, {{0}}, {0, 0}},
    {"L4", "NVIDIA L4", 23034, 0x27B810DE, {0}, 0, {{0}}, {0, 0}},
    {"T4", "Tesla T4", 15360, 0x1EB810DE, {0}, 0, {{0}}, {0, 0}},
};

/* NVML GPU instance profile index -> id, compute slices, memory slices */
static const struct { int idx, id, compute, size; } profs[] = {
    {0, 19, 1, 1}, {1, 14, 2, 2}, {2, 9, 3, 4}, {3, 5, 4, 4}, {4, 0, 7, 8}, {7, 20, 1, 1}, {9, 15, 1, 2},
};
#define NPROFS ((int)(sizeof profs / sizeof profs[0]))

static fgpu gpus[8];
static int ngpus, inited, next_gi = 1;

static int prof_by_id(int id)
{
    for (int i = 0; i < NPROFS; i++) if (profs[i].id == id) return i;
    return -1;
}

static int mig_capable(const fgpu *g) { return g->gb[1] > 0; }

/* first start allowed for this size that is free (1g: any, 2g: even, 4: 0/4, 8: 0) */
static int find_start(fgpu *g, int size, int compute)
{
    unsigned used = 0;
    for (int m = 0; m < 7; m++)
        if (g->mig[m].used) used |= ((1u << g->mig[m].size) - 1) << g->mig[m].start;
    for (int s = 0; s + size <= 8; s++) {
        if (size == 2 && s % 2) continue;
        if (size == 4 && s % 4) continue;
        if (size == 8 && s) continue;
        if (size == 1 && s == 7) continue;
        if (compute == 2 && s == 6) continue;
        if (compute == 4 && s) continue;
        if (!(used & (((1u << size) - 1) << s))) return s;
    }
    return -1;
}

static int add_mig(fgpu *g, int pi, int start)
{
    for (int m = 0; m < 7; m++) {
        if (g->mig[m].used) continue;
        g->mig[m] = (fmig){1, next_gi++, pi, start, profs[pi].size, profs[pi].compute, 1, {(int)(g - gpus), m}};
        return m;
    }
    return -1;
}

static void setup_mig(const char *spec)
{
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    int gi = atoi(buf);
    char *eq = strchr(buf, '=');
    if (!eq || gi < 0 || gi >= ngpus) return;
    fgpu *g = &gpus[gi];
    g->mig_mode = 1;
    for (char *save = NULL, *p = strtok_r(eq + 1, "+", &save); p; p = strtok_r(NULL, "+", &save)) {
        int c = atoi(p), gb = atoi(strchr(p, '.') ? strchr(p, '.') + 1 : "0");
        for (int i = 0; i < NPROFS; i++) {
            if (profs[i].compute != c || g->gb[profs[i].size] != gb || profs[i].idx == 7) continue;
            int s = find_start(g, profs[i].size, c);
            if (s >= 0) add_mig(g, i, s);
            break;
        }
    }
}

static int init_common(void)
{
    const char *fail = getenv("FAKE_NVML_FAIL");
    if (fail && !strcmp(fail, "init")) return DRIVER_NOT_LOADED;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", getenv("FAKE_NVML_GPUS") ? getenv("FAKE_NVML_GPUS") : "H100-80GB,H100-80GB");
    ngpus = 0;
    for (char *save = NULL, *p = strtok_r(buf, ",", &save); p && ngpus < 8; p = strtok_r(NULL, ",", &save))
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
            if (!strcmp(kinds[k].model, p)) {
                gpus[ngpus] = kinds[k];
                gpus[ngpus].h = (fdev){ngpus, -1};
                ngpus++;
            }
    if (getenv("FAKE_NVML_MIG")) setup_mig(getenv("FAKE_NVML_MIG"));
    inited = 1;
    return OK;
}

#ifdef FAKE_NVML_OLD
EXPORT int nvmlInit(void) { return init_common(); }
#else
EXPORT int nvmlInit_v2(void) { return init_common(); }
#endif
EXPORT int nvmlShutdown(void) { inited = 0; return OK; }

EXPORT const char *nvmlErrorString(int r)
{
    switch (r) {
    case OK: return "Success";
    case UNINITIALIZED: return "Uninitialized";
    case INVALID: return "Invalid Argument";
    case NOT_SUPPORTED: return "Not Supported";
    case NO_PERMISSION: return "Insufficient Permissions";
    case NOT_FOUND: return "Not Found";
    case DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case IN_USE: return "In use by another client";
    default: return "Unknown Error";
    }
}

EXPORT int nvmlSystemGetDriverVersion(char *v, unsigned n) { snprintf(v, n, "550.54.15-fake"); return OK; }

EXPORT int nvmlDeviceGetCount_v2(unsigned *n)
{
    if (!inited) return UNINITIALIZED;
    *n = (unsigned)ngpus;
    return OK;
}

EXPORT int nvmlDeviceGetHandleByIndex_v2(unsigned i, fdev **h)
{
    if (!inited) return UNINITIALIZED;
    if (i >= (unsigned)ngpus) return INVALID;
    *h = &gpus[i].h;
    return OK;
}

static const char *mig_name(const fgpu *g, const fmig *m, char *buf, size_t n)
{
    snprintf(buf, n, "%s MIG %dg.%dgb", g->name, m->compute, g->gb[m->size]);
    return buf;
}

EXPORT int nvmlDeviceGetUUID(fdev *h, char *u, unsigned n)
{
    if (h->mig < 0) snprintf(u, n, "GPU-fa4e0000-0000-4000-8000-%012d", h->gpu);
    else snprintf(u, n, "MIG-fa4e0000-0000-4000-8%03d-%012d", h->mig, h->gpu);
    return OK;
}

/* Real drivers number /dev/nvidiaN by PCI order, not always by NVML index: the fake
 * counts down (GPU 0 is the highest minor), so a test catches code that takes one for
 * the other. */
EXPORT int nvmlDeviceGetMinorNumber(fdev *h, unsigned *minor)
{
    if (h->mig >= 0) return NOT_SUPPORTED;
    *minor = (unsigned)(ngpus - 1 - h->gpu);
    return OK;
}

EXPORT int nvmlDeviceGetName(fdev *h, char *s, unsigned n)
{
    const fgpu *g = &gpus[h->gpu];
    if (h->mig < 0) snprintf(s, n, "%s", g->name);
    else mig_name(g, &g->mig[h->mig], s, n);
    return OK;
}

static unsigned long long procs_mib(int gpu)
{
    const char *p = getenv("FAKE_NVML_PROCS");
    unsigned long long sum = 0;
    while (p && *p) {
        int gi = atoi(p);
        const char *a = strchr(p, ':'), *b = a ? strchr(a + 1, ':') : NULL;
        if (!b) break;
        if (gi == gpu) sum += strtoull(b + 1, NULL, 10);
        p = strchr(b, '+');
        if (p) p++;
    }
    return sum;
}

EXPORT int nvmlDeviceGetMemoryInfo(fdev *h, mem_t *m)
{
    const fgpu *g = &gpus[h->gpu];
    unsigned long long total = h->mig < 0 ? g->mib : g->mib * (unsigned long long)g->mig[h->mig].size / 8;
    m->total = total << 20;
    m->used = (h->mig < 0 ? procs_mib(h->gpu) : 0) << 20;
    m->free = m->total - m->used;
    return OK;
}

/* nvmlMemory_v2_t {version, total, reserved, free, used}: what libgpuaas-cuda.so clamps
 * too (tests/integration/cuda_shim.sh) */
typedef struct { unsigned version; unsigned long long total, reserved, free, used; } mem2_t;
EXPORT int nvmlDeviceGetMemoryInfo_v2(fdev *h, mem2_t *m)
{
    mem_t v1;
    nvmlDeviceGetMemoryInfo(h, &v1);
    m->total = v1.total, m->reserved = 0, m->free = v1.free, m->used = v1.used;
    return OK;
}

EXPORT int nvmlDeviceGetPciInfo_v3(fdev *h, pci_t *p)
{
    memset(p, 0, sizeof *p);
    p->bus = (unsigned)(0x17 + h->gpu);
    p->pci_device_id = gpus[h->gpu].pci;
    snprintf(p->bus_id, sizeof p->bus_id, "00000000:%02X:00.0", p->bus);
    return OK;
}

EXPORT int nvmlDeviceGetUtilizationRates(fdev *h, util_t *u)
{
    if (gpus[h->gpu].mig_mode) return NOT_SUPPORTED;   /* as on real MIG GPUs */
    u->gpu = (unsigned)(getenv("FAKE_NVML_UTIL") ? atoi(getenv("FAKE_NVML_UTIL")) : 0);
    u->memory = u->gpu / 2;
    return OK;
}

EXPORT int nvmlDeviceGetComputeRunningProcesses_v3(fdev *h, unsigned *count, proc_t *out)
{
    const char *p = getenv("FAKE_NVML_PROCS");
    unsigned n = 0;
    while (p && *p) {
        int gi = atoi(p);
        const char *a = strchr(p, ':'), *b = a ? strchr(a + 1, ':') : NULL;
        if (!b) break;
        if (gi == h->gpu) {
            if (n >= *count) { *count = n + 1; return INSUFFICIENT_SIZE; }
            out[n++] = (proc_t){(unsigned)atoi(a + 1), strtoull(b + 1, NULL, 10) << 20, 0xFFFFFFFFu, 0xFFFFFFFFu};
        }
        p = strchr(b, '+');
        if (p) p++;
    }
    *count = n;
    return OK;
}

EXPORT int nvmlDeviceGetMigMode(fdev *h, unsigned *cur, unsigned *pend)
{
    const fgpu *g = &gpus[h->gpu];
    if (!mig_capable(g)) return NOT_SUPPORTED;
    *cur = *pend = (unsigned)g->mig_mode;
    return OK;
}

EXPORT int nvmlDeviceSetMigMode(fdev *h, unsigned mode, int *activation)
{
    fgpu *g = &gpus[h->gpu];
    if (!mig_capable(g)) return NOT_SUPPORTED;
    for (int m = 0; m < 7; m++) if (g->mig[m].used) return IN_USE;
    g->mig_mode = (int)mode;
    *activation = OK;
    return OK;
}

EXPORT int nvmlDeviceGetMaxMigDeviceCount(fdev *h, unsigned *n)
{
    *n = mig_capable(&gpus[h->gpu]) ? 7 : 0;
    return OK;
}

EXPORT int nvmlDeviceGetMigDeviceHandleByIndex(fdev *h, unsigned i, fdev **out)
{
    fgpu *g = &gpus[h->gpu];
    unsigned k = 0;
    for (int m = 0; m < 7; m++)
        if (g->mig[m].used && g->mig[m].has_ci && k++ == i) { *out = &g->mig[m].h; return OK; }
    return NOT_FOUND;
}

EXPORT int nvmlDeviceGetGpuInstanceId(fdev *h, unsigned *id)
{
    if (h->mig < 0) return INVALID;
    *id = (unsigned)gpus[h->gpu].mig[h->mig].gi_id;
    return OK;
}

EXPORT int nvmlDeviceGetComputeInstanceId(fdev *h, unsigned *id)
{
    if (h->mig < 0) return INVALID;
    *id = 0;
    return OK;
}

/* A GPU instance handle is the fdev of its MIG slot. */
EXPORT int nvmlDeviceGetGpuInstanceById(fdev *h, unsigned id, fdev **gi)
{
    fgpu *g = &gpus[h->gpu];
    for (int m = 0; m < 7; m++)
        if (g->mig[m].used && (unsigned)g->mig[m].gi_id == id) { *gi = &g->mig[m].h; return OK; }
    return NOT_FOUND;
}

EXPORT int nvmlGpuInstanceGetInfo(fdev *gi, gi_info_t *info)
{
    const fmig *m = &gpus[gi->gpu].mig[gi->mig];
    info->device = &gpus[gi->gpu].h;
    info->id = (unsigned)m->gi_id;
    info->profile_id = (unsigned)profs[m->prof_idx].id;
    info->placement = (placement_t){(unsigned)m->start, (unsigned)m->size};
    return OK;
}

EXPORT int nvmlDeviceGetGpuInstanceProfileInfo(fdev *h, unsigned idx, gi_prof_t *p)
{
    const fgpu *g = &gpus[h->gpu];
    if (!mig_capable(g)) return NOT_SUPPORTED;
    for (int i = 0; i < NPROFS; i++)
        if (profs[i].idx == (int)idx) {
            memset(p, 0, sizeof *p);
            p->id = (unsigned)profs[i].id;
            p->slices = (unsigned)profs[i].compute;
            p->mem = g->mib * (unsigned long long)profs[i].size / 8;
            return OK;
        }
    return NOT_SUPPORTED;
}

EXPORT int nvmlDeviceGetGpuInstances(fdev *h, unsigned profile_id, fdev **out, unsigned *count)
{
    fgpu *g = &gpus[h->gpu];
    unsigned n = 0;
    for (int m = 0; m < 7; m++)
        if (g->mig[m].used && profs[g->mig[m].prof_idx].id == (int)profile_id) out[n++] = &g->mig[m].h;
    *count = n;
    return OK;
}

EXPORT int nvmlDeviceCreateGpuInstanceWithPlacement(fdev *h, unsigned profile_id, const placement_t *pl, fdev **gi)
{
    fgpu *g = &gpus[h->gpu];
    int pi = prof_by_id((int)profile_id);
    if (!g->mig_mode || pi < 0) return INVALID;
    unsigned used = 0;
    for (int m = 0; m < 7; m++)
        if (g->mig[m].used) used |= ((1u << g->mig[m].size) - 1) << g->mig[m].start;
    if (pl->size != (unsigned)profs[pi].size || pl->start + pl->size > 8 || (used & (((1u << pl->size) - 1) << pl->start)))
        return INSUFFICIENT_SIZE;
    int m = add_mig(g, pi, (int)pl->start);
    if (m < 0) return INSUFFICIENT_SIZE;
    g->mig[m].has_ci = 0;
    *gi = &g->mig[m].h;
    return OK;
}

EXPORT int nvmlGpuInstanceDestroy(fdev *gi)
{
    fmig *m = &gpus[gi->gpu].mig[gi->mig];
    if (m->has_ci) return IN_USE;
    m->used = 0;
    return OK;
}

EXPORT int nvmlGpuInstanceGetComputeInstanceProfileInfo(fdev *gi, unsigned idx, unsigned eng, ci_prof_t *p)
{
    (void)eng;
    memset(p, 0, sizeof *p);
    p->id = idx;
    p->slices = (unsigned)gpus[gi->gpu].mig[gi->mig].compute;
    return idx == 0 || (int)idx == gpus[gi->gpu].mig[gi->mig].compute - 1 ||
           (idx == 4 && gpus[gi->gpu].mig[gi->mig].compute == 7) ? OK : NOT_SUPPORTED;
}

EXPORT int nvmlGpuInstanceCreateComputeInstance(fdev *gi, unsigned profile_id, fdev **ci)
{
    (void)profile_id;
    gpus[gi->gpu].mig[gi->mig].has_ci = 1;
    *ci = gi;
    return OK;
}

EXPORT int nvmlGpuInstanceGetComputeInstances(fdev *gi, unsigned profile_id, fdev **out, unsigned *count)
{
    (void)profile_id;
    *count = 0;
    if (gpus[gi->gpu].mig[gi->mig].has_ci) out[(*count)++] = gi;
    return OK;
}

EXPORT int nvmlComputeInstanceDestroy(fdev *ci)
{
    gpus[ci->gpu].mig[ci->mig].has_ci = 0;
    return OK;
}

/* ---- compute mode: kept in FAKE_NVML_STATE/compute-mode-I ----------------------------- */

static int mem_mode[8];

static int mode_path(int gpu, char *buf, size_t n)
{
    const char *dir = getenv("FAKE_NVML_STATE");
    if (!dir || !*dir) return 0;
    snprintf(buf, n, "%s/compute-mode-%d", dir, gpu);
    return 1;
}

EXPORT int nvmlDeviceGetComputeMode(fdev *h, int *mode)
{
    char p[512];
    if (h->mig >= 0) return NOT_SUPPORTED;
    *mode = mem_mode[h->gpu];
    FILE *f = mode_path(h->gpu, p, sizeof p) ? fopen(p, "r") : NULL;
    if (f) {
        if (fscanf(f, "%d", mode) != 1) *mode = 0;
        fclose(f);
    } else if (mode_path(h->gpu, p, sizeof p)) {
        *mode = 0;
    }
    return OK;
}

EXPORT int nvmlDeviceSetComputeMode(fdev *h, int mode)
{
    char p[512];
    const char *fail = getenv("FAKE_NVML_FAIL");
    if (fail && !strcmp(fail, "setcompute")) return NO_PERMISSION;
    if (h->mig >= 0 || mode < 0 || mode > 3) return INVALID;
    mem_mode[h->gpu] = mode;
    FILE *f = mode_path(h->gpu, p, sizeof p) ? fopen(p, "w") : NULL;
    if (f) {
        fprintf(f, "%d\n", mode);
        fclose(f);
    }
    return OK;
}

#ifndef FAKE_NVML_OLD
/* ---- GPM: samples are (gpu, gi, count); GRAPHICS_UTIL is FAKE_NVML_GPM ------------------- */

typedef struct { int gpu, gi, taken; } gpm_sample_st;
static int gpm_on(void) { return getenv("FAKE_NVML_GPM") && *getenv("FAKE_NVML_GPM"); }
typedef struct { gpm_sample_st *h; } gpm_sample_t;
typedef struct { unsigned version, supported; } gpm_support_t;
typedef struct { unsigned id; int ret; double value; struct { char *s, *l, *u; } info; } gpm_metric_t;
typedef struct { unsigned version, n; gpm_sample_t s1, s2; gpm_metric_t m[98]; } gpm_get_t;

EXPORT int nvmlGpmQueryDeviceSupport(fdev *h, gpm_support_t *s)
{
    (void)h;
    if (!s || s->version != 1) return INVALID;
    s->supported = (unsigned)gpm_on();
    return OK;
}

EXPORT int nvmlGpmSampleAlloc(gpm_sample_t *s)
{
    s->h = calloc(1, sizeof *s->h);
    return s->h ? OK : INVALID;
}

EXPORT int nvmlGpmSampleFree(gpm_sample_t s)
{
    free(s.h);
    return OK;
}

EXPORT int nvmlGpmSampleGet(fdev *h, gpm_sample_t s)
{
    if (!gpm_on()) return NOT_SUPPORTED;
    if (!s.h || h->mig >= 0) return INVALID;
    *s.h = (gpm_sample_st){h->gpu, -1, 1};
    return OK;
}

EXPORT int nvmlGpmMigSampleGet(fdev *h, unsigned gi, gpm_sample_t s)
{
    if (!gpm_on()) return NOT_SUPPORTED;
    fgpu *g = &gpus[h->gpu];
    int found = 0;
    for (int m = 0; m < 7; m++) found |= g->mig[m].used && (unsigned)g->mig[m].gi_id == gi;
    if (!s.h || !found) return NOT_FOUND;
    *s.h = (gpm_sample_st){h->gpu, (int)gi, 1};
    return OK;
}

EXPORT int nvmlGpmMetricsGet(gpm_get_t *q)
{
    if (!q || q->version != 1 || q->n > 98) return INVALID;
    /* two samples taken, of the same GPU / instance, as the real one insists */
    if (!q->s1.h || !q->s2.h || !q->s1.h->taken || !q->s2.h->taken || q->s1.h == q->s2.h ||
        q->s1.h->gpu != q->s2.h->gpu || q->s1.h->gi != q->s2.h->gi)
        return INVALID;
    for (unsigned i = 0; i < q->n; i++) {
        q->m[i].ret = q->m[i].id == 1 ? OK : NOT_SUPPORTED;
        q->m[i].value = q->m[i].id == 1 && gpm_on() ? atof(getenv("FAKE_NVML_GPM")) : 0;
    }
    return OK;
}
#endif
