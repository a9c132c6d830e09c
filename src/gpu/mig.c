/* gpu/mig: the MIG profile tables of A100-40GB, A100-80GB, H100-80GB and H200-141GB,
 * fitting a layout into 8 memory / 7 compute slices, and mig-parted's mig-configs.
 * Owns: the static tables (from NVIDIA's MIG user guide and `nvidia-smi mig -lgip`
 * output; H200 SM counts assumed equal to H100's, same GH100 die) and their checks.
 * Must not: keep state or call NVML. See mig.h for the placement rules. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include "gpu/mig.h"

/* Allowed starts (memory slice indices) per kind of profile, as bit masks. */
#define S_1G   0x7F   /* 0..6 */
#define S_1G2  0x55   /* 0,2,4,6: 1g with double memory */
#define S_2G   0x15   /* 0,2,4 */
#define S_3G   0x11   /* 0,4 */
#define S_4G   0x01
#define S_7G   0x01

/* name, nvml id, nvml index, compute, size, MiB, SMs, max, starts */
static const gx_mig_profile a100_40[] = {
    {"1g.5gb", 19, 0, 1, 1, 4864, 14, 7, S_1G},    {"1g.5gb+me", 20, 7, 1, 1, 4864, 14, 1, S_1G},
    {"1g.10gb", 15, 9, 1, 2, 9856, 14, 4, S_1G2},  {"2g.10gb", 14, 1, 2, 2, 9856, 28, 3, S_2G},
    {"3g.20gb", 9, 2, 3, 4, 19968, 42, 2, S_3G},   {"4g.20gb", 5, 3, 4, 4, 19968, 56, 1, S_4G},
    {"7g.40gb", 0, 4, 7, 8, 40192, 98, 1, S_7G},
};
static const gx_mig_profile a100_80[] = {
    {"1g.10gb", 19, 0, 1, 1, 9728, 14, 7, S_1G},   {"1g.10gb+me", 20, 7, 1, 1, 9728, 14, 1, S_1G},
    {"1g.20gb", 15, 9, 1, 2, 19968, 14, 4, S_1G2}, {"2g.20gb", 14, 1, 2, 2, 19968, 28, 3, S_2G},
    {"3g.40gb", 9, 2, 3, 4, 40192, 42, 2, S_3G},   {"4g.40gb", 5, 3, 4, 4, 40192, 56, 1, S_4G},
    {"7g.80gb", 0, 4, 7, 8, 80896, 98, 1, S_7G},
};
static const gx_mig_profile h100_80[] = {
    {"1g.10gb", 19, 0, 1, 1, 9984, 16, 7, S_1G},   {"1g.10gb+me", 20, 7, 1, 1, 9984, 16, 1, S_1G},
    {"1g.20gb", 15, 9, 1, 2, 20096, 26, 4, S_1G2}, {"2g.20gb", 14, 1, 2, 2, 20096, 32, 3, S_2G},
    {"3g.40gb", 9, 2, 3, 4, 40448, 60, 2, S_3G},   {"4g.40gb", 5, 3, 4, 4, 40448, 64, 1, S_4G},
    {"7g.80gb", 0, 4, 7, 8, 81152, 132, 1, S_7G},
};
static const gx_mig_profile h200_141[] = {
    {"1g.18gb", 19, 0, 1, 1, 18432, 16, 7, S_1G},  {"1g.18gb+me", 20, 7, 1, 1, 18432, 16, 1, S_1G},
    {"1g.35gb", 15, 9, 1, 2, 35840, 26, 4, S_1G2}, {"2g.35gb", 14, 1, 2, 2, 35840, 32, 3, S_2G},
    {"3g.71gb", 9, 2, 3, 4, 72704, 60, 2, S_3G},   {"4g.71gb", 5, 3, 4, 4, 72704, 64, 1, S_4G},
    {"7g.141gb", 0, 4, 7, 8, 144384, 132, 1, S_7G},
};

#define N(a) ((int)(sizeof a / sizeof a[0]))
static const gx_gpu_model models[] = {
    {"A100-40GB", 0x20B010DEu, 40960, 80, a100_40, N(a100_40)},
    {"A100-80GB", 0x20B210DEu, 81920, 80, a100_80, N(a100_80)},
    {"H100-80GB", 0x233010DEu, 81920, 90, h100_80, N(h100_80)},
    {"H200-141GB", 0x233510DEu, 144384, 90, h200_141, N(h200_141)},
    {"L4", 0x27B810DEu, 23034, 89, NULL, 0},
    {"T4", 0x1EB810DEu, 15360, 75, NULL, 0},
};

const gx_gpu_model *gx_gpu_mig_model(const char *name)
{
    for (int i = 0; name && i < N(models); i++)
        if (!strcasecmp(models[i].name, name)) return &models[i];
    return NULL;
}

const gx_gpu_model *gx_gpu_mig_model_at(int i)
{
    return i >= 0 && i < N(models) ? &models[i] : NULL;
}

/* NVML names vary by form factor ("A100-SXM4-40GB", "A100 80GB PCIe", "H100 80GB HBM3",
 * "H200 NVL"); the family plus the memory size decides. */
const gx_gpu_model *gx_gpu_mig_model_from_nvml(const char *product, int64_t memory_mib)
{
    if (!product) return NULL;
    char up[128];
    size_t k = 0;
    for (; product[k] && k + 1 < sizeof up; k++) up[k] = (char)toupper((unsigned char)product[k]);
    up[k] = 0;
    int big = memory_mib > 60 * 1024;
    if (strstr(up, "A100")) return gx_gpu_mig_model(big ? "A100-80GB" : "A100-40GB");
    if (strstr(up, "H200")) return gx_gpu_mig_model("H200-141GB");
    if (strstr(up, "H100") || strstr(up, "H800")) return gx_gpu_mig_model("H100-80GB");
    if (strstr(up, " L4") || !strncmp(up, "L4", 2)) return gx_gpu_mig_model("L4");
    if (strstr(up, "T4")) return gx_gpu_mig_model("T4");
    return NULL;
}

const gx_mig_profile *gx_gpu_mig_profile(const gx_gpu_model *m, const char *profile)
{
    for (int i = 0; m && profile && i < m->n_mig; i++)
        if (!strcmp(m->mig[i].name, profile)) return &m->mig[i];
    return NULL;
}

static void known_profiles(const gx_gpu_model *m, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < m->n_mig && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? ", " : "", m->mig[i].name);
}

/* Backtracking over starts, largest instances first (they have the fewest starts). */
static int place(const gx_mig_profile **inst, int n, int k, unsigned used, int *start)
{
    if (k == n) return 1;
    const gx_mig_profile *p = inst[k];
    unsigned span = (1u << p->size) - 1;
    for (int s = 0; s < GX_MIG_MEM_SLICES; s++) {
        if (!(p->starts & (1u << s)) || s + p->size > GX_MIG_MEM_SLICES) continue;
        if (used & (span << s)) continue;
        start[k] = s;
        if (place(inst, n, k + 1, used | (span << s), start)) return 1;
    }
    return 0;
}

static int by_size_desc(const void *a, const void *b)
{
    const gx_mig_profile *x = *(const gx_mig_profile *const *)a, *y = *(const gx_mig_profile *const *)b;
    if (x->size != y->size) return y->size - x->size;
    return y->compute - x->compute;
}

static int by_start(const void *a, const void *b)
{
    return ((const gx_mig_slot *)a)->start - ((const gx_mig_slot *)b)->start;
}

int gx_gpu_mig_fit(const gx_gpu_model *m, const char *const *names, const int *counts, int n,
                   gx_mig_slot *out, const char *field, gx_err *err)
{
    if (!m->n_mig)
        return gx_errf(err, 422, field, "%s has no MIG: MIG needs an A100, H100 or H200", m->name);
    const gx_mig_profile *inst[GX_MIG_MAX_DEVICES];
    int total = 0, compute = 0, mem = 0;
    char known[256], f[256];
    for (int i = 0; i < n; i++) {
        snprintf(f, sizeof f, "%s.%s", field, names[i]);
        const gx_mig_profile *p = gx_gpu_mig_profile(m, names[i]);
        if (!p) {
            known_profiles(m, known, sizeof known);
            return gx_errf(err, 422, f, "unknown MIG profile %s for %s (known: %s)", names[i], m->name, known);
        }
        if (counts[i] < 0) return gx_errf(err, 422, f, "count must not be negative");
        if (counts[i] > p->max)
            return gx_errf(err, 422, f, "%d x %s asked, but a %s holds at most %d", counts[i], p->name, m->name, p->max);
        for (int c = 0; c < counts[i]; c++) {
            if (total == GX_MIG_MAX_DEVICES)
                return gx_errf(err, 422, field, "more than %d MIG devices on one GPU", GX_MIG_MAX_DEVICES);
            inst[total++] = p;
            compute += p->compute;
            mem += p->size;
        }
    }
    if (compute > GX_MIG_COMPUTE_SLICES)
        return gx_errf(err, 422, field, "the layout needs %d compute slices; a %s has %d", compute, m->name,
                       GX_MIG_COMPUTE_SLICES);
    if (mem > GX_MIG_MEM_SLICES)
        return gx_errf(err, 422, field, "the layout needs %d memory slices; a %s has %d", mem, m->name,
                       GX_MIG_MEM_SLICES);
    qsort(inst, (size_t)total, sizeof inst[0], by_size_desc);
    int start[GX_MIG_MAX_DEVICES];
    if (!place(inst, total, 0, 0, start))
        return gx_errf(err, 422, field,
                       "no placement: these profiles fit the slice counts (%d/7 compute, %d/8 memory) but not "
                       "the allowed start positions (1g any of 0-6, 2g 0/2/4, 3g 0/4, 4g and 7g 0)",
                       compute, mem);
    for (int i = 0; i < total; i++) out[i] = (gx_mig_slot){inst[i], start[i]};
    qsort(out, (size_t)total, sizeof out[0], by_start);
    return total;
}

/* ---- mig-parted ------------------------------------------------------------------- */

static int pci_match(const json_t *v, uint32_t pci)
{
    char want[16];
    snprintf(want, sizeof want, "0x%08X", pci);
    if (json_is_string(v)) return !strcasecmp(json_string_value(v), want);
    if (json_is_integer(v)) return (uint32_t)json_integer_value(v) == pci;
    return 0;
}

static int filter_match(const json_t *f, uint32_t pci)
{
    if (!f) return 1;
    if (!json_is_array(f)) return pci_match(f, pci);
    size_t i;
    json_t *x;
    json_array_foreach(f, i, x) if (pci_match(x, pci)) return 1;
    return 0;
}

static int devices_match(const json_t *d, int index)
{
    if (json_is_string(d)) return !strcmp(json_string_value(d), "all");
    size_t i;
    json_t *x;
    json_array_foreach(d, i, x) if (json_is_integer(x) && json_integer_value(x) == index) return 1;
    return 0;
}

static int check_entry(const json_t *e, const char *f, gx_err *err)
{
    char g[256];
    if (!json_is_object(e)) return gx_errf(err, 422, f, "must be {devices, mig-enabled, mig-devices, device-filter}");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)e, k, v) {
        const char *gf = gx_err_path(g, sizeof g, f, "%s.%s", f, k);
        if (!strcmp(k, "devices")) {
            if (json_is_string(v) && !strcmp(json_string_value(v), "all")) continue;
            if (!json_is_array(v)) return gx_errf(err, 422, gf, "must be \"all\" or a list of GPU indices");
            size_t i;
            json_t *x;
            json_array_foreach(v, i, x) if (!json_is_integer(x) || json_integer_value(x) < 0)
                return gx_errf(err, 422, gf, "must be \"all\" or a list of GPU indices");
        } else if (!strcmp(k, "mig-enabled")) {
            if (!json_is_boolean(v)) return gx_errf(err, 422, gf, "must be true or false");
        } else if (!strcmp(k, "mig-devices")) {
            if (!json_is_object(v)) return gx_errf(err, 422, gf, "must map profile names to counts, e.g. {\"1g.10gb\": 7}");
            const char *pk;
            json_t *pv;
            json_object_foreach(v, pk, pv) if (!json_is_integer(pv) || json_integer_value(pv) < 0) {
                char h[256];
                return gx_errf(err, 422, gx_err_path(h, sizeof h, gf, "%s.mig-devices.%s", f, pk), "must be a count (0 or more)");
            }
        } else if (strcmp(k, "device-filter")) {
            return gx_errf(err, 422, gf, "unknown field (known: device-filter, devices, mig-enabled, mig-devices)");
        }
    }
    if (!json_object_get(e, "devices")) return gx_errf(err, 422, f, "devices is required (\"all\" or indices)");
    if (!json_object_get(e, "mig-enabled")) return gx_errf(err, 422, f, "mig-enabled is required");
    return 0;
}

int gx_gpu_mig_config_check(const json_t *doc, gx_err *err)
{
    const char *ver = json_string_value(json_object_get(doc, "version"));
    if (!ver || strcmp(ver, "v1")) return gx_errf(err, 422, "version", "mig-parted files are version: v1");
    const json_t *cfgs = json_object_get(doc, "mig-configs");
    if (!json_is_object(cfgs)) return gx_errf(err, 422, "mig-configs", "must map config names to lists of entries");
    const char *name;
    json_t *list;
    char f[256];
    json_object_foreach((json_t *)cfgs, name, list) {
        /* a config's name is a key of the admin's, of any length: refused past 128, never cut */
        if (strlen(name) > 128) return gx_errf(err, 422, "mig-configs", "a config name is longer than 128 characters");
        snprintf(f, sizeof f, "mig-configs.%s", name);
        if (!json_is_array(list)) return gx_errf(err, 422, f, "must be a list of {devices, mig-enabled, mig-devices}");
        size_t i;
        json_t *e;
        json_array_foreach(list, i, e) {
            snprintf(f, sizeof f, "mig-configs.%s[%zu]", name, i);
            if (check_entry(e, f, err)) return -1;
        }
    }
    return 0;
}

int gx_gpu_mig_config_for(const json_t *doc, const char *name, int gpu_index,
                          const gx_gpu_model *m, int *enabled, const char **names, int *counts,
                          gx_err *err)
{
    *enabled = 0;
    if (gx_gpu_mig_config_check(doc, err)) return -1;
    const json_t *list = json_object_get(json_object_get(doc, "mig-configs"), name);
    if (!list) return gx_errf(err, 422, "mig-configs", "no config named %s in the mig-parted file", name);
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        if (!filter_match(json_object_get(e, "device-filter"), m ? m->pci_id : 0)) continue;
        if (!devices_match(json_object_get(e, "devices"), gpu_index)) continue;
        *enabled = json_is_true(json_object_get(e, "mig-enabled"));
        if (!*enabled) return 0;
        int n = 0;
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(e, "mig-devices"), k, v) {
            if (!json_integer_value(v)) continue;
            if (n == GX_MIG_MAX_PROFILES) {
                char f[256];
                snprintf(f, sizeof f, "mig-configs.%s[%zu].mig-devices", name, i);
                return gx_errf(err, 422, f, "more than %d profiles", GX_MIG_MAX_PROFILES);
            }
            names[n] = k;
            counts[n++] = (int)json_integer_value(v);
        }
        return n;
    }
    return 0;
}
