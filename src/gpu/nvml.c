/* gpu/nvml: NVML through dlopen (see nvml.h).
 * Owns: our declarations of NVML's types (only the fields we read, laid out as in
 * nvml.h of NVML_API_VERSION 12/13), symbol resolution, queries, MIG apply, the
 * compute mode, GPM samples.
 * Must not: be linked against libnvidia-ml, or abort when the driver is absent. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu/nvml.h"
#include "lib/alloc.h"

typedef int nvml_ret;                       /* nvmlReturn_t */
typedef struct nvml_dev_st *nvml_dev;       /* nvmlDevice_t */
typedef struct nvml_gi_st *nvml_gi;         /* nvmlGpuInstance_t */
typedef struct nvml_ci_st *nvml_ci;         /* nvmlComputeInstance_t */

enum { NVML_OK = 0, NVML_NOT_SUPPORTED = 3, NVML_NOT_FOUND = 6, NVML_INSUFFICIENT_SIZE = 7 };

typedef struct { unsigned long long total, free, used; } nvml_memory;
typedef struct { unsigned gpu, memory; } nvml_util;
typedef struct {
    char bus_id_legacy[16];
    unsigned domain, bus, device, pci_device_id, pci_subsystem_id;
    char bus_id[32];
} nvml_pci;
typedef struct {
    unsigned pid;
    unsigned long long used_gpu_memory;
    unsigned gpu_instance_id, compute_instance_id;
} nvml_proc;
typedef struct { unsigned start, size; } nvml_placement;
typedef struct {
    nvml_dev device;
    unsigned id, profile_id;
    nvml_placement placement;
} nvml_gi_info;
typedef struct {
    unsigned id, is_p2p, slice_count, instance_count, mp_count, ce_count, dec_count, enc_count,
        jpeg_count, ofa_count;
    unsigned long long memory_mb;
} nvml_gi_profile;
typedef struct {
    unsigned id, slice_count, instance_count, mp_count, ce, dec, enc, jpeg, ofa;
} nvml_ci_profile;

/* GPM (nvml.h "GPM Structs"): a sample is an opaque handle; a metric read takes two. */
typedef struct { struct nvml_gpm_sample_st *handle; } nvml_gpm_sample;
typedef struct { unsigned version, is_supported; } nvml_gpm_support;          /* NVML_GPM_SUPPORT_VERSION 1 */
typedef struct {
    unsigned metric_id;
    nvml_ret ret;
    double value;
    struct { char *short_name, *long_name, *unit; } info;
} nvml_gpm_metric;
#define GPM_METRIC_ROOM 256        /* nvml.h has NVML_GPM_METRIC_MAX entries (98 in 12.x); more room is harmless */
typedef struct {
    unsigned version, num_metrics;                                            /* NVML_GPM_METRICS_GET_VERSION 1 */
    nvml_gpm_sample sample1, sample2;
    nvml_gpm_metric metrics[GPM_METRIC_ROOM];
} nvml_gpm_get;
enum { GPM_VERSION = 1, GPM_GRAPHICS_UTIL = 1 };

/* The functions we call. `req` ones must resolve; the others may be absent (old
 * drivers, the fake library built without MIG). */
typedef struct syms {
    nvml_ret (*init)(void);
    nvml_ret (*shutdown)(void);
    const char *(*error_string)(nvml_ret);
    nvml_ret (*driver)(char *, unsigned);
    nvml_ret (*count)(unsigned *);
    nvml_ret (*by_index)(unsigned, nvml_dev *);
    nvml_ret (*uuid)(nvml_dev, char *, unsigned);
    nvml_ret (*name)(nvml_dev, char *, unsigned);
    nvml_ret (*memory)(nvml_dev, nvml_memory *);
    nvml_ret (*pci)(nvml_dev, nvml_pci *);
    nvml_ret (*util)(nvml_dev, nvml_util *);
    nvml_ret (*procs)(nvml_dev, unsigned *, nvml_proc *);
    nvml_ret (*mig_mode)(nvml_dev, unsigned *, unsigned *);
    nvml_ret (*mig_max)(nvml_dev, unsigned *);
    nvml_ret (*mig_by_index)(nvml_dev, unsigned, nvml_dev *);
    nvml_ret (*gi_id)(nvml_dev, unsigned *);
    nvml_ret (*ci_id)(nvml_dev, unsigned *);
    nvml_ret (*gi_by_id)(nvml_dev, unsigned, nvml_gi *);
    nvml_ret (*gi_info)(nvml_gi, nvml_gi_info *);
    nvml_ret (*set_mig_mode)(nvml_dev, unsigned, nvml_ret *);
    nvml_ret (*gi_profile)(nvml_dev, unsigned, nvml_gi_profile *);
    nvml_ret (*gi_list)(nvml_dev, unsigned, nvml_gi *, unsigned *);
    nvml_ret (*gi_create_at)(nvml_dev, unsigned, const nvml_placement *, nvml_gi *);
    nvml_ret (*gi_destroy)(nvml_gi);
    nvml_ret (*ci_profile)(nvml_gi, unsigned, unsigned, nvml_ci_profile *);
    nvml_ret (*ci_create)(nvml_gi, unsigned, nvml_ci *);
    nvml_ret (*ci_list)(nvml_gi, unsigned, nvml_ci *, unsigned *);
    nvml_ret (*ci_destroy)(nvml_ci);
    nvml_ret (*minor)(nvml_dev, unsigned *);
    nvml_ret (*get_compute_mode)(nvml_dev, int *);
    nvml_ret (*set_compute_mode)(nvml_dev, int);
    nvml_ret (*gpm_support)(nvml_dev, nvml_gpm_support *);
    nvml_ret (*gpm_alloc)(nvml_gpm_sample *);
    nvml_ret (*gpm_free)(nvml_gpm_sample);
    nvml_ret (*gpm_get)(nvml_dev, nvml_gpm_sample);
    nvml_ret (*gpm_mig_get)(nvml_dev, unsigned, nvml_gpm_sample);
    nvml_ret (*gpm_metrics)(nvml_gpm_get *);
} syms;

/* The last GPM sample of one GPU (gi -1) or GPU instance: a metric needs two. */
#define GPM_SLOTS 64
typedef struct gpm_slot {
    int used, index, gi, have;
    nvml_gpm_sample prev, cur;
} gpm_slot;

struct gx_nvml {
    void *lib;
    syms f;
    char driver[80];
    gpm_slot gpm[GPM_SLOTS];
};

static const struct { const char *name; size_t off; int req; } table[] = {
#define S(field, sym, req) {sym, offsetof(syms, field), req}
    S(init, "nvmlInit_v2", 1), S(shutdown, "nvmlShutdown", 1), S(error_string, "nvmlErrorString", 1),
    S(driver, "nvmlSystemGetDriverVersion", 0), S(count, "nvmlDeviceGetCount_v2", 1),
    S(by_index, "nvmlDeviceGetHandleByIndex_v2", 1), S(uuid, "nvmlDeviceGetUUID", 1),
    S(name, "nvmlDeviceGetName", 1), S(memory, "nvmlDeviceGetMemoryInfo", 1),
    S(pci, "nvmlDeviceGetPciInfo_v3", 0), S(util, "nvmlDeviceGetUtilizationRates", 0),
    S(procs, "nvmlDeviceGetComputeRunningProcesses_v3", 0), S(mig_mode, "nvmlDeviceGetMigMode", 0),
    S(mig_max, "nvmlDeviceGetMaxMigDeviceCount", 0), S(mig_by_index, "nvmlDeviceGetMigDeviceHandleByIndex", 0),
    S(gi_id, "nvmlDeviceGetGpuInstanceId", 0), S(ci_id, "nvmlDeviceGetComputeInstanceId", 0),
    S(gi_by_id, "nvmlDeviceGetGpuInstanceById", 0), S(gi_info, "nvmlGpuInstanceGetInfo", 0),
    S(set_mig_mode, "nvmlDeviceSetMigMode", 0), S(gi_profile, "nvmlDeviceGetGpuInstanceProfileInfo", 0),
    S(gi_list, "nvmlDeviceGetGpuInstances", 0),
    S(gi_create_at, "nvmlDeviceCreateGpuInstanceWithPlacement", 0), S(gi_destroy, "nvmlGpuInstanceDestroy", 0),
    S(ci_profile, "nvmlGpuInstanceGetComputeInstanceProfileInfo", 0),
    S(ci_create, "nvmlGpuInstanceCreateComputeInstance", 0),
    S(ci_list, "nvmlGpuInstanceGetComputeInstances", 0), S(ci_destroy, "nvmlComputeInstanceDestroy", 0),
    S(minor, "nvmlDeviceGetMinorNumber", 0), S(get_compute_mode, "nvmlDeviceGetComputeMode", 0), S(set_compute_mode, "nvmlDeviceSetComputeMode", 0),
    S(gpm_support, "nvmlGpmQueryDeviceSupport", 0), S(gpm_alloc, "nvmlGpmSampleAlloc", 0),
    S(gpm_free, "nvmlGpmSampleFree", 0), S(gpm_get, "nvmlGpmSampleGet", 0), S(gpm_mig_get, "nvmlGpmMigSampleGet", 0),
    S(gpm_metrics, "nvmlGpmMetricsGet", 0),
#undef S
};

static const char *estr(const gx_nvml *n, nvml_ret r)
{
    const char *s = n->f.error_string ? n->f.error_string(r) : NULL;
    return s ? s : "unknown NVML error";
}

gx_nvml *gx_gpu_nvml_open(const char *path, gx_err *err)
{
    const char *p = path && *path ? path : GX_NVML_LIBRARY;
    void *lib = dlopen(p, RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        gx_errf(err, 500, "inventory.source", "cannot load %s: %s", p, dlerror());
        return NULL;
    }
    gx_nvml *n = gx_xcalloc(1, sizeof *n);
    n->lib = lib;
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        void *s = dlsym(lib, table[i].name);
        if (!s && table[i].req) {
            gx_errf(err, 500, "inventory.source", "%s has no %s: not a usable NVML (driver too old?)", p, table[i].name);
            dlclose(lib);
            free(n);
            return NULL;
        }
        memcpy((char *)&n->f + table[i].off, &s, sizeof s);
    }
    nvml_ret r = n->f.init();
    if (r != NVML_OK) {
        gx_errf(err, 500, "inventory.source", "nvmlInit_v2 failed: %s (%d)", estr(n, r), r);
        dlclose(lib);
        free(n);
        return NULL;
    }
    if (!n->f.driver || n->f.driver(n->driver, sizeof n->driver) != NVML_OK) n->driver[0] = 0;
    return n;
}

void gx_gpu_nvml_close(gx_nvml *n)
{
    if (!n) return;
    for (int i = 0; i < GPM_SLOTS; i++)
        if (n->gpm[i].used && n->f.gpm_free) {
            n->f.gpm_free(n->gpm[i].prev);
            n->f.gpm_free(n->gpm[i].cur);
        }
    n->f.shutdown();
    dlclose(n->lib);
    free(n);
}

const char *gx_gpu_nvml_driver(const gx_nvml *n) { return n ? n->driver : ""; }

int gx_gpu_nvml_count(gx_nvml *n, gx_err *err)
{
    unsigned c = 0;
    nvml_ret r = n->f.count(&c);
    if (r != NVML_OK) return gx_errf(err, 500, "", "nvmlDeviceGetCount_v2: %s", estr(n, r));
    return (int)c;
}

static int64_t mib(unsigned long long b) { return (int64_t)(b >> 20); }

/* "NVIDIA A100-SXM4-40GB MIG 3g.20gb" -> "3g.20gb" */
static void mig_profile_of(const char *name, char *out, size_t n)
{
    const char *p = strstr(name, "MIG ");
    snprintf(out, n, "%s", p ? p + 4 : "");
}

static void read_procs(gx_nvml *n, nvml_dev h, gx_nvml_dev *d)
{
    d->n_procs = 0;
    if (!n->f.procs) return;
    nvml_proc pr[GX_NVML_MAX_PROCS];
    unsigned c = GX_NVML_MAX_PROCS;
    /* INSUFFICIENT_SIZE: more processes than we show; keep none rather than a partial list */
    if (n->f.procs(h, &c, pr) != NVML_OK) return;
    for (unsigned i = 0; i < c && i < GX_NVML_MAX_PROCS; i++)
        d->procs[d->n_procs++] = (gx_nvml_proc){pr[i].pid, mib(pr[i].used_gpu_memory), pr[i].gpu_instance_id};
}

static void read_mig(gx_nvml *n, nvml_dev h, gx_nvml_dev *d)
{
    unsigned cur = 0, pend = 0, max = 0;
    d->mig_mode = d->mig_pending = -1;
    d->n_mig = 0;
    if (!n->f.mig_mode || n->f.mig_mode(h, &cur, &pend) != NVML_OK) return;
    d->mig_mode = (int)cur;
    d->mig_pending = (int)pend;
    if (!cur || !n->f.mig_max || !n->f.mig_by_index || n->f.mig_max(h, &max) != NVML_OK) return;
    for (unsigned i = 0; i < max && d->n_mig < GX_MIG_MAX_DEVICES; i++) {
        nvml_dev m;
        if (n->f.mig_by_index(h, i, &m) != NVML_OK) continue;   /* NOT_FOUND: an empty slot */
        gx_nvml_mig *o = &d->mig[d->n_mig];
        memset(o, 0, sizeof *o);
        char name[96] = "";
        if (n->f.uuid(m, o->uuid, sizeof o->uuid) != NVML_OK) continue;
        n->f.name(m, name, sizeof name);
        mig_profile_of(name, o->profile, sizeof o->profile);
        nvml_memory mem;
        if (n->f.memory(m, &mem) == NVML_OK) {
            o->mem_total_mib = mib(mem.total);
            o->mem_used_mib = mib(mem.used);
        }
        o->start = o->size = -1;
        if (n->f.gi_id) n->f.gi_id(m, &o->gi_id);
        if (n->f.ci_id) n->f.ci_id(m, &o->ci_id);
        nvml_gi gi;
        nvml_gi_info info;
        if (n->f.gi_by_id && n->f.gi_info && n->f.gi_by_id(h, o->gi_id, &gi) == NVML_OK &&
            n->f.gi_info(gi, &info) == NVML_OK) {
            o->start = (int)info.placement.start;
            o->size = (int)info.placement.size;
        }
        d->n_mig++;
    }
}

int gx_gpu_nvml_query(gx_nvml *n, int index, gx_nvml_dev *d, gx_err *err)
{
    memset(d, 0, sizeof *d);
    d->index = index;
    nvml_dev h;
    nvml_ret r = n->f.by_index((unsigned)index, &h);
    if (r != NVML_OK) return gx_errf(err, 500, "", "GPU %d: nvmlDeviceGetHandleByIndex_v2: %s", index, estr(n, r));
    if ((r = n->f.uuid(h, d->uuid, sizeof d->uuid)) != NVML_OK)
        return gx_errf(err, 500, "", "GPU %d: nvmlDeviceGetUUID: %s", index, estr(n, r));
    if ((r = n->f.name(h, d->name, sizeof d->name)) != NVML_OK)
        return gx_errf(err, 500, "", "GPU %d: nvmlDeviceGetName: %s", index, estr(n, r));
    nvml_pci pci;
    if (n->f.pci && n->f.pci(h, &pci) == NVML_OK) {
        snprintf(d->pci_bus_id, sizeof d->pci_bus_id, "%s", pci.bus_id);
        d->pci_id = pci.pci_device_id;
    }
    unsigned minor;
    d->minor = n->f.minor && n->f.minor(h, &minor) == NVML_OK ? (int)minor : -1;
    read_mig(n, h, d);
    return gx_gpu_nvml_sample(n, d, err);
}

int gx_gpu_nvml_sample(gx_nvml *n, gx_nvml_dev *d, gx_err *err)
{
    nvml_dev h;
    nvml_ret r = n->f.by_index((unsigned)d->index, &h);
    if (r != NVML_OK) return gx_errf(err, 500, "", "GPU %d: %s", d->index, estr(n, r));
    nvml_memory mem;
    if ((r = n->f.memory(h, &mem)) != NVML_OK)
        return gx_errf(err, 500, "", "GPU %d: nvmlDeviceGetMemoryInfo: %s", d->index, estr(n, r));
    d->mem_total_mib = mib(mem.total);
    d->mem_used_mib = mib(mem.used);
    nvml_util u;
    /* NOT_SUPPORTED in MIG mode: DCGM's answer is GR_ENGINE_ACTIVE, which we do not have */
    if (n->f.util && n->f.util(h, &u) == NVML_OK) {
        d->util_gpu = (int)u.gpu;
        d->util_mem = (int)u.memory;
    } else {
        d->util_gpu = d->util_mem = -1;
    }
    read_procs(n, h, d);
    return 0;
}

/* ---- MIG apply ---------------------------------------------------------------------- */

static int mig_clear(gx_nvml *n, nvml_dev h, gx_err *err)
{
    for (unsigned idx = 0; idx < 16; idx++) {
        nvml_gi_profile prof;
        if (n->f.gi_profile(h, idx, &prof) != NVML_OK) continue;
        nvml_gi gis[GX_MIG_MAX_DEVICES];
        unsigned ng = 0;
        if (n->f.gi_list(h, prof.id, gis, &ng) != NVML_OK) continue;
        for (unsigned g = 0; g < ng; g++) {
            /* compute instances first: a GPU instance with one cannot be destroyed */
            for (unsigned cidx = 0; cidx < 8; cidx++) {
                nvml_ci_profile cp;
                if (n->f.ci_profile(gis[g], cidx, 0, &cp) != NVML_OK) continue;
                nvml_ci cis[8];
                unsigned nc = 0;
                if (n->f.ci_list(gis[g], cp.id, cis, &nc) != NVML_OK) continue;
                for (unsigned c = 0; c < nc; c++) n->f.ci_destroy(cis[c]);
            }
            nvml_ret r = n->f.gi_destroy(gis[g]);
            if (r != NVML_OK) return gx_errf(err, 409, "", "cannot destroy a GPU instance: %s (is the GPU busy?)", estr(n, r));
        }
    }
    return 0;
}

int gx_gpu_nvml_mig_apply(gx_nvml *n, int index, int enable, const gx_mig_slot *slots, int count,
                          gx_err *err)
{
    if (!n->f.set_mig_mode || !n->f.gi_profile || !n->f.gi_list || !n->f.gi_create_at || !n->f.gi_destroy ||
        !n->f.ci_profile || !n->f.ci_create || !n->f.ci_list || !n->f.ci_destroy)
        return gx_errf(err, 501, "", "this NVML cannot configure MIG (driver too old)");
    nvml_dev h;
    nvml_ret r = n->f.by_index((unsigned)index, &h), act = NVML_OK;
    if (r != NVML_OK) return gx_errf(err, 500, "", "GPU %d: %s", index, estr(n, r));
    unsigned cur = 0, pend = 0;
    if (n->f.mig_mode(h, &cur, &pend) != NVML_OK) return gx_errf(err, 422, "", "GPU %d has no MIG", index);
    if (cur && mig_clear(n, h, err)) return -1;
    if ((unsigned)enable != cur) {
        if ((r = n->f.set_mig_mode(h, (unsigned)enable, &act)) != NVML_OK)
            return gx_errf(err, 500, "", "GPU %d: nvmlDeviceSetMigMode: %s (needs root and an idle GPU)", index, estr(n, r));
        n->f.mig_mode(h, &cur, &pend);
        if (cur != (unsigned)enable)
            return gx_errf(err, 409, "", "GPU %d: MIG mode is pending: reset the GPU (nvidia-smi -r) and apply again", index);
    }
    for (int i = 0; i < count; i++) {
        nvml_gi_profile prof;
        nvml_gi gi;
        nvml_ci_profile cp;
        nvml_ci ci;
        nvml_placement pl = {(unsigned)slots[i].start, (unsigned)slots[i].p->size};
        if ((r = n->f.gi_profile(h, (unsigned)slots[i].p->nvml_index, &prof)) != NVML_OK ||
            (r = n->f.gi_create_at(h, prof.id, &pl, &gi)) != NVML_OK) {
            gx_errf(err, 500, "", "GPU %d: cannot create %s at slice %d: %s", index, slots[i].p->name, slots[i].start,
                    estr(n, r));
            goto undo;
        }
        /* the full-size compute instance: NVML_COMPUTE_INSTANCE_PROFILE_{1,2,3,4,7}_SLICE = 0..4 */
        unsigned cidx = slots[i].p->compute >= 7 ? 4 : (unsigned)slots[i].p->compute - 1;
        if ((r = n->f.ci_profile(gi, cidx, 0, &cp)) != NVML_OK || (r = n->f.ci_create(gi, cp.id, &ci)) != NVML_OK) {
            gx_errf(err, 500, "", "GPU %d: cannot create the compute instance of %s: %s", index, slots[i].p->name,
                    estr(n, r));
            goto undo;
        }
    }
    return 0;
undo: {
        gx_err ignore;
        mig_clear(n, h, &ignore);
    }
    return -1;
}

/* ---- compute mode -------------------------------------------------------------------- */

int gx_gpu_nvml_compute_mode(gx_nvml *n, int index, gx_err *err)
{
    if (!n->f.get_compute_mode) return gx_errf(err, 501, "", "this NVML has no nvmlDeviceGetComputeMode");
    nvml_dev h;
    int mode = 0;
    nvml_ret r = n->f.by_index((unsigned)index, &h);
    if (r == NVML_OK) r = n->f.get_compute_mode(h, &mode);
    if (r != NVML_OK) return gx_errf(err, 500, "", "GPU %d: nvmlDeviceGetComputeMode: %s", index, estr(n, r));
    return mode;
}

int gx_gpu_nvml_set_compute_mode(gx_nvml *n, int index, int mode, gx_err *err)
{
    if (!n->f.set_compute_mode) return gx_errf(err, 501, "", "this NVML has no nvmlDeviceSetComputeMode");
    nvml_dev h;
    nvml_ret r = n->f.by_index((unsigned)index, &h);
    if (r == NVML_OK) r = n->f.set_compute_mode(h, mode);
    if (r != NVML_OK) return gx_errf(err, 500, "", "GPU %d: nvmlDeviceSetComputeMode(%s): %s", index,
                                     gx_gpu_nvml_compute_mode_name(mode), estr(n, r));
    return 0;
}

const char *gx_gpu_nvml_compute_mode_name(int mode)
{
    switch (mode) {
    case GX_NVML_COMPUTE_DEFAULT: return "Default";
    case 1: return "Exclusive_Thread";
    case GX_NVML_COMPUTE_PROHIBITED: return "Prohibited";
    case GX_NVML_COMPUTE_EXCLUSIVE_PROCESS: return "Exclusive_Process";
    default: return "unknown";
    }
}

/* ---- GPM ----------------------------------------------------------------------------- */

static int gpm_syms(const gx_nvml *n)
{
    return n->f.gpm_support && n->f.gpm_alloc && n->f.gpm_free && n->f.gpm_get && n->f.gpm_metrics;
}

int gx_gpu_nvml_gpm_supported(gx_nvml *n, int index)
{
    nvml_dev h;
    nvml_gpm_support sup = {GPM_VERSION, 0};
    if (!n || !gpm_syms(n) || n->f.by_index((unsigned)index, &h) != NVML_OK) return 0;
    return n->f.gpm_support(h, &sup) == NVML_OK && sup.is_supported;
}

/* The slot of (index, gi), created with two samples on first use; NULL when full. */
static gpm_slot *gpm_slot_for(gx_nvml *n, int index, int gi)
{
    gpm_slot *free_slot = NULL;
    for (int i = 0; i < GPM_SLOTS; i++) {
        gpm_slot *s = &n->gpm[i];
        if (s->used && s->index == index && s->gi == gi) return s;
        if (!s->used && !free_slot) free_slot = s;
    }
    if (!free_slot) return NULL;
    if (n->f.gpm_alloc(&free_slot->prev) != NVML_OK) return NULL;
    if (n->f.gpm_alloc(&free_slot->cur) != NVML_OK) {
        n->f.gpm_free(free_slot->prev);
        return NULL;
    }
    free_slot->used = 1;
    free_slot->index = index;
    free_slot->gi = gi;
    free_slot->have = 0;
    return free_slot;
}

int gx_gpu_nvml_gr_active(gx_nvml *n, int index, int gi_id, double *pct)
{
    if (!gx_gpu_nvml_gpm_supported(n, index) || (gi_id >= 0 && !n->f.gpm_mig_get)) return -1;
    nvml_dev h;
    if (n->f.by_index((unsigned)index, &h) != NVML_OK) return -1;
    gpm_slot *s = gpm_slot_for(n, index, gi_id);
    if (!s) return -1;
    nvml_ret r = gi_id < 0 ? n->f.gpm_get(h, s->cur) : n->f.gpm_mig_get(h, (unsigned)gi_id, s->cur);
    if (r != NVML_OK) {
        s->have = 0;
        return -1;
    }
    nvml_gpm_sample t = s->prev;
    s->prev = s->cur;
    s->cur = t;
    if (!s->have) {
        s->have = 1;
        return 0;
    }
    /* prev now holds the new sample, cur the older one */
    static nvml_gpm_get q;     /* 10 KB: not on the stack; the daemon samples from one thread */
    memset(&q, 0, sizeof q);
    q.version = GPM_VERSION;
    q.num_metrics = 1;
    q.sample1 = s->cur;
    q.sample2 = s->prev;
    q.metrics[0].metric_id = GPM_GRAPHICS_UTIL;
    if (n->f.gpm_metrics(&q) != NVML_OK || q.metrics[0].ret != NVML_OK) return -1;
    double v = q.metrics[0].value;
    *pct = v < 0 ? 0 : v > 100 ? 100 : v;
    return 1;
}
