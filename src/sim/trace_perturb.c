/* sim/trace_perturb: derives variants of a loaded trace in memory (never on disk), to
 * check that a policy generalises beyond the one trace it was measured on: a subset of
 * the nodes, one GPU model removed, CPU requests scaled, more or fewer CPU-only,
 * GPU-sharing, multi-GPU or model-constrained pods (the axes the FGD paper varies).
 * Owns: gx_trace_perturb.
 * Must not: write files or touch the placement code. */
#include <stdlib.h>
#include <string.h>

#include "lib/alloc.h"
#include "sim/trace_internal.h"

static void drop_nodes(gx_trace *t, gx_trace_rng *r, double keep, int model)
{
    int k = 0;
    for (int i = 0; i < t->nnodes; i++) {
        bool stay = model >= 0 ? t->nodes[i].model != model
                               : (double)(gx_trace_rng_next(r) >> 11) / 9007199254740992.0 < keep;
        if (stay) t->nodes[k++] = t->nodes[i];
    }
    t->nnodes = k;
    t->gpus = 0;
    for (int i = 0; i < k; i++) t->gpus += t->nodes[i].num_gpus;
    t->gpu_milli = t->gpus * GX_PLACE_MILLI;
}

static bool is_share(const gx_place_pod *p) { return p->num_gpu == 1 && p->gpu_milli < 1000; }
static bool is_whole1(const gx_place_pod *p) { return p->num_gpu == 1 && p->gpu_milli == 1000; }
static bool is_multi(const gx_place_pod *p) { return p->num_gpu > 1; }
static bool is_gpu(const gx_place_pod *p) { return p->num_gpu > 0; }
static bool is_cpu_only(const gx_place_pod *p) { return p->num_gpu == 0; }

/* Indices of the pods for which pred holds, in a fresh array. */
static size_t pick(const gx_trace *t, bool (*pred)(const gx_place_pod *), int **out)
{
    size_t n = 0;
    *out = gx_xreallocarray(NULL, t->npods + 1, sizeof **out);
    for (size_t i = 0; i < t->npods; i++)
        if (pred(&t->pods[i].req)) (*out)[n++] = (int)i;
    return n;
}

/* Turns pods from `from` into copies of random pods of `like` (or, with share_to_whole,
 * sharing pods into whole-GPU ones) until `want` of the GPU pods satisfy `is`. */
static int convert(gx_trace *t, gx_trace_rng *r, double frac, bool (*is)(const gx_place_pod *),
                   bool (*from)(const gx_place_pod *))
{
    int *gpu = NULL, *src = NULL, *like = NULL;
    size_t ng = pick(t, is_gpu, &gpu), ns = pick(t, from, &src), nl = pick(t, is, &like);
    size_t have = nl, want = (size_t)(frac * (double)ng + 0.5);
    int rc = -1;
    if (!gpu || !src || !like) goto out;
    gx_trace_rng_shuffle(r, src, ns);
    for (size_t k = 0; have < want && k < ns; k++, have++) {
        gx_place_pod *p = &t->pods[src[k]].req;
        if (nl == 0) {                       /* nothing to copy: make a half-GPU share */
            p->num_gpu = 1;
            p->gpu_milli = 500;
            continue;
        }
        const gx_place_pod *m = &t->pods[like[gx_trace_rng_below(r, nl)]].req;
        if (is == is_share) { p->num_gpu = 1; p->gpu_milli = m->gpu_milli; }
        else *p = *m;
    }
    if (have > want) {                       /* fewer: those pods become one whole GPU */
        gx_trace_rng_shuffle(r, like, nl);
        for (size_t k = 0; have > want && k < nl; k++, have--) {
            gx_place_pod *p = &t->pods[like[k]].req;
            if (is == is_share) p->gpu_milli = 1000;
            else if (is == is_multi) { p->cpu_milli /= p->num_gpu; p->mem_mib /= p->num_gpu; p->num_gpu = 1; }
            else p->models = 0;
        }
    }
    rc = 0;
out:
    free(gpu);
    free(src);
    free(like);
    return rc;
}

/* Gives `frac` of the GPU pods a gpu_spec of one model, drawn by the models' GPU count. */
static int constrain(gx_trace *t, gx_trace_rng *r, double frac)
{
    int *gpu = NULL;
    size_t ng = pick(t, is_gpu, &gpu);
    if (!gpu) return -1;
    gx_trace_rng_shuffle(r, gpu, ng);
    size_t want = (size_t)(frac * (double)ng + 0.5);
    for (size_t k = 0; k < want && k < ng && t->gpus > 0; k++) {
        uint64_t x = gx_trace_rng_below(r, (uint64_t)t->gpus);
        int model = -1;
        for (int i = 0; i < t->nnodes && model < 0; i++) {
            if (x < (uint64_t)t->nodes[i].num_gpus) model = t->nodes[i].model;
            else x -= (uint64_t)t->nodes[i].num_gpus;
        }
        if (model >= 0) t->pods[gpu[k]].req.models = UINT64_C(1) << model;
    }
    free(gpu);
    return 0;
}

/* Scales the number of CPU-only pods by x: removes random ones or adds copies. */
static int scale_cpu_only(gx_trace *t, gx_trace_rng *r, double x)
{
    int *c = NULL;
    size_t nc = pick(t, is_cpu_only, &c);
    if (!c) return -1;
    size_t want = (size_t)(x * (double)nc + 0.5);
    if (want < nc) {
        gx_trace_rng_shuffle(r, c, nc);
        for (size_t k = want; k < nc; k++) t->pods[c[k]].created = -1;   /* mark */
        size_t j = 0;
        for (size_t i = 0; i < t->npods; i++)
            if (t->pods[i].created >= 0) t->pods[j++] = t->pods[i];
        t->npods = j;
    } else if (want > nc && nc > 0) {
        t->pods = gx_xreallocarray(t->pods, t->npods + want - nc, sizeof *t->pods);
        for (size_t k = nc; k < want; k++) t->pods[t->npods++] = t->pods[c[gx_trace_rng_below(r, nc)]];
    }
    free(c);
    return 0;
}

static int parse_frac(const char *v, double lo, double hi, double *out)
{
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !(x >= lo && x <= hi)) return -1;
    *out = x;
    return 0;
}

static int apply_one(gx_trace *t, gx_trace_rng *r, const char *k, const char *v, char *err,
                     size_t errlen)
{
    double x;
    if (!strcmp(k, "drop-model")) {
        int m = -1;
        for (int i = 0; i < t->models.n; i++) if (!strcmp(t->models.name[i], v)) m = i;
        if (m < 0) { snprintf(err, errlen, "--perturb drop-model=%s: no such model", v); return -1; }
        drop_nodes(t, r, 1.0, m);
    } else if (!strcmp(k, "nodes")) {
        if (parse_frac(v, 0.01, 1.0, &x)) goto bad;
        drop_nodes(t, r, x, -1);
    } else if (!strcmp(k, "cpu")) {
        if (parse_frac(v, 0.0, 10.0, &x)) goto bad;
        for (size_t i = 0; i < t->npods; i++)
            t->pods[i].req.cpu_milli = (int64_t)((double)t->pods[i].req.cpu_milli * x);
    } else if (!strcmp(k, "cpuonly")) {
        if (parse_frac(v, 0.0, 10.0, &x) || scale_cpu_only(t, r, x)) goto bad;
    } else if (!strcmp(k, "share")) {
        if (parse_frac(v, 0.0, 1.0, &x) || convert(t, r, x, is_share, is_whole1)) goto bad;
    } else if (!strcmp(k, "multi")) {
        if (parse_frac(v, 0.0, 1.0, &x) || convert(t, r, x, is_multi, is_whole1)) goto bad;
    } else if (!strcmp(k, "spec")) {
        if (parse_frac(v, 0.0, 1.0, &x) || constrain(t, r, x)) goto bad;
    } else {
        snprintf(err, errlen, "--perturb: unknown key '%s' (nodes, drop-model, cpu, cpuonly, "
                              "share, multi, spec)", k);
        return -1;
    }
    if (t->nnodes == 0 || t->npods == 0) {
        snprintf(err, errlen, "--perturb %s=%s leaves no %s", k, v, t->nnodes ? "pods" : "nodes");
        return -1;
    }
    return 0;
bad:
    snprintf(err, errlen, "--perturb %s=%s: bad value (see --help)", k, v);
    return -1;
}

int gx_trace_perturb(gx_trace *t, const char *spec, uint64_t seed, char *err, size_t errlen)
{
    gx_trace_rng r;
    gx_trace_rng_seed(&r, seed ^ UINT64_C(0x7e47));
    char buf[512];
    if (strlen(spec) >= sizeof buf) { snprintf(err, errlen, "--perturb: too long"); return -1; }
    strcpy(buf, spec);
    char *save = NULL;
    for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(kv, '=');
        if (!eq) { snprintf(err, errlen, "--perturb: '%s' is not key=value", kv); return -1; }
        *eq = 0;
        if (apply_one(t, &r, kv, eq + 1, err, errlen)) return -1;
    }
    return 0;
}
