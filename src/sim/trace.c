/* sim/trace: `gpuaas sim trace`, the command line of the cluster-trace replay.
 * Owns: flags, running each policy over each seed (trace_replay.c) or the time-driven
 * replay (trace_timed.c), and printing the table or JSON, the SVG plot (trace_svg.c),
 * the comparison with published curves (trace_expected.c), and with --bound the
 * offline upper bound and best-fit-decreasing reference (trace_bound.c).
 * Must not: hold placement logic; every decision is gx_place_choose's. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/alloc.h"
#include "lib/opts.h"
#include "sim/sim.h"
#include "sim/trace_internal.h"

#define MAX_SEEDS 256

typedef struct opts {
    const char *nodes, *pods, *policies, *svg, *expected, *out, *perturb;
    uint64_t perturb_seed;
    uint64_t seeds[MAX_SEEDS];
    int nseeds;
    double tune, coverage, time_scale;
    bool timed, no_sharing, bound;
} opts;

static void usage(FILE *f)
{
    fprintf(f,
        "usage: gpuaas sim trace --nodes NODES.csv --pods PODS.csv [options]\n"
        "\n"
        "Replays a cluster trace (Alibaba openb schema) through the placement engine the\n"
        "daemon uses, with the FGD paper's method: pods shuffled per seed and sampled with\n"
        "replacement up to TUNE x capacity in requested GPUs, placed one by one, a pod that\n"
        "fits nowhere dropped; prints the GPU allocation ratio at each arrived demand.\n"
        "\n"
        "  --nodes FILE      node list: sn,cpu_milli,memory_mib,gpu,model\n"
        "  --pods FILE       pod list: name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,\n"
        "                    ...,creation_time,deletion_time (times only for --timed)\n"
        "  --policy LIST     comma-separated policies, or 'all' (default %s):\n"
        "                    %s\n"
        "  --seeds SPEC      seeds: A-B (range) or A,B,C (default 42-51)\n"
        "  --tune X          sample arrivals up to X times the GPU capacity (default 1.3)\n"
        "  --coverage X      FGD workload: most frequent pod types covering X of the pods\n"
        "                    (default 0.95)\n"
        "  -o, --output FMT  table (default) or json: one object per policy {policy, tune,\n"
        "                    seeds, total_gpus, curve[0..100*tune], alloc_ratio_at_100,\n"
        "                    seconds} (with --bound also bound_at_100, offline_bfd_at_100);\n"
        "                    several policies print a JSON array of them\n"
        "  --svg FILE        write the allocation-ratio curves (80 %% arrived and up) as SVG\n"
        "  --expected FILE   published curves (analysis_allo_discrete.csv): compare column\n"
        "                    by column and draw them dashed in the plot\n"
        "  --perturb SPEC    derive a variant of the trace in memory, to check that a policy\n"
        "                    generalises: comma-separated key=value of\n"
        "                      nodes=F        keep a random fraction F of the nodes\n"
        "                      drop-model=M   remove the nodes with GPU model M\n"
        "                      cpu=X          scale every pod's CPU request by X\n"
        "                      cpuonly=X      X times as many CPU-only pods\n"
        "                      share=F        fraction F of GPU pods share one GPU\n"
        "                      multi=F        fraction F of GPU pods take several GPUs\n"
        "                      spec=F         fraction F of GPU pods need one GPU model\n"
        "  --perturb-seed N  seed of --perturb (default 7)\n"
        "  --timed           time-driven replay instead: creation/deletion times, pods that\n"
        "                    do not fit wait in a queue; reports GPU utilisation (allocated\n"
        "                    GPU-time / capacity-time) and queueing delay, with sharing and\n"
        "                    with every fractional request rounded up to a whole GPU\n"
        "  --no-sharing      with --timed: only the rounded-up (no sharing) replay\n"
        "  --time-scale K    with --timed: divide arrival times by K (K > 1 compresses the\n"
        "                    trace into a busier cluster; durations are kept; default 1)\n"
        "  --bound           also print an upper bound on the allocation ratio at 100 %%\n"
        "                    arrived that any placement could reach on the same arrivals,\n"
        "                    and what offline best-fit decreasing reaches (bin-packing\n"
        "                    relaxation: CPU and nodes ignored); not with --timed\n"
        "  -h, --help        this help\n"
        "\n"
        "Exit status: 0 ok, 2 bad flags or unreadable files, 1 replay failure.\n",
        GX_PLACE_DEFAULT_POLICY, gx_place_policy_names());
}

static int parse_seeds(const char *s, opts *o)
{
    o->nseeds = 0;
    char *end;
    const char *p = s;
    unsigned long long a = strtoull(p, &end, 10);
    if (end != p && *end == '-') {
        const char *q = end + 1;
        unsigned long long b = strtoull(q, &end, 10);
        if (end == q || *end || b < a || b - a >= MAX_SEEDS) return -1;
        for (unsigned long long x = a; x <= b; x++) o->seeds[o->nseeds++] = x;
        return 0;
    }
    while (*p) {
        a = strtoull(p, &end, 10);
        if (end == p || (*end && *end != ',') || o->nseeds == MAX_SEEDS) return -1;
        o->seeds[o->nseeds++] = a;
        p = *end ? end + 1 : end;
    }
    return o->nseeds ? 0 : -1;
}

static int parse_double(const char *s, double lo, double hi, double *out)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo && v <= hi)) return -1;
    *out = v;
    return 0;
}

static const gx_opt trace_opts[] = {
    {"nodes", 0, "FILE", "node list"},
    {"pods", 0, "FILE", "pod list"},
    {"policy", 0, "LIST", "comma-separated policies, or 'all'"},
    {"seeds", 0, "SPEC", "A-B or A,B,C"},
    {"tune", 0, "X", "sample arrivals up to X times the GPU capacity"},
    {"coverage", 0, "X", "most frequent pod types covering X of the pods"},
    {"output", 'o', "FMT", "table or json"},
    {"svg", 0, "FILE", "write the allocation-ratio curves as SVG"},
    {"expected", 0, "FILE", "published curves to compare with"},
    {"perturb", 0, "SPEC", "derive a variant of the trace"},
    {"perturb-seed", 0, "N", "seed of --perturb"},
    {"timed", 0, NULL, "time-driven replay"},
    {"no-sharing", 0, NULL, "with --timed: only the rounded-up replay"},
    {"time-scale", 0, "K", "with --timed: divide arrival times by K"},
    {"bound", 0, NULL, "also print an upper bound"},
    {"help", 'h', NULL, "this help"},
    {0},
};

/* Options into o. The texts of usage() above say what each one means. Returns 0, 1
 * after --help, or 2 (the exit status) after a mistake, named on stderr. */
static int parse_args(int argc, char **argv, opts *o)
{
    static const gx_opt *const sets[] = {trace_opts, NULL};
    memset(o, 0, sizeof *o);
    o->policies = GX_PLACE_DEFAULT_POLICY;
    o->tune = 1.3;
    o->coverage = 0.95;
    o->time_scale = 1.0;
    o->out = "table";
    o->perturb_seed = 7;
    parse_seeds("42-51", o);
    gx_opt_args a;
    int rc = 2;
    const char *v;
    if (gx_opts_parse(sets, argc, argv, &a)) {
        fprintf(stderr, "gpuaas sim trace: %s (see --help)\n", a.err);
        goto out;
    }
    if (gx_opt_has(&a, "help")) { usage(stdout); rc = 1; goto out; }
    if (a.npos) {
        fprintf(stderr, "gpuaas sim trace: unknown argument '%s' (see --help)\n", a.pos[0]);
        goto out;
    }
    /* argv outlives a: the values point into it. */
    o->timed = gx_opt_has(&a, "timed");
    o->bound = gx_opt_has(&a, "bound");
    o->no_sharing = gx_opt_has(&a, "no-sharing");
    o->nodes = gx_opt_get(&a, "nodes");
    o->pods = gx_opt_get(&a, "pods");
    if ((v = gx_opt_get(&a, "policy"))) o->policies = v;
    o->svg = gx_opt_get(&a, "svg");
    o->expected = gx_opt_get(&a, "expected");
    o->perturb = gx_opt_get(&a, "perturb");
    if ((v = gx_opt_get(&a, "perturb-seed"))) {
        char *end;
        o->perturb_seed = strtoull(v, &end, 10);
        if (end == v || *end) {
            fprintf(stderr, "gpuaas sim trace: --perturb-seed %s: an integer\n", v);
            goto out;
        }
    }
    if ((v = gx_opt_get(&a, "output"))) {
        if (strcmp(v, "json") && strcmp(v, "table")) {
            fprintf(stderr, "gpuaas sim trace: -o %s: use table or json\n", v);
            goto out;
        }
        o->out = v;
    }
    if ((v = gx_opt_get(&a, "seeds")) && parse_seeds(v, o)) {
        fprintf(stderr, "gpuaas sim trace: --seeds %s: use A-B or A,B,C (at most %d)\n", v, MAX_SEEDS);
        goto out;
    }
    if ((v = gx_opt_get(&a, "tune")) && parse_double(v, 0.01, 4.0, &o->tune)) {
        fprintf(stderr, "gpuaas sim trace: --tune %s: a number in (0, 4]\n", v);
        goto out;
    }
    if ((v = gx_opt_get(&a, "coverage")) && parse_double(v, 0.01, 1.0, &o->coverage)) {
        fprintf(stderr, "gpuaas sim trace: --coverage %s: a number in (0, 1]\n", v);
        goto out;
    }
    if ((v = gx_opt_get(&a, "time-scale")) && parse_double(v, 1e-3, 1e6, &o->time_scale)) {
        fprintf(stderr, "gpuaas sim trace: --time-scale %s: a positive number\n", v);
        goto out;
    }
    if (!o->nodes || !o->pods) {
        fprintf(stderr, "gpuaas sim trace: --nodes and --pods are required (see --help)\n");
        goto out;
    }
    rc = 0;
out:
    gx_opts_free(&a);
    return rc;
}

/* Splits the policy list; "all" means every policy. Returns the count, -1 if unknown. */
static int parse_policies(const char *list, const gx_place_policy **out)
{
    if (!strcmp(list, "all")) {
        for (int i = 0; i < GX_PLACE_NPOLICIES; i++) out[i] = gx_place_policy_at(i);
        return GX_PLACE_NPOLICIES;
    }
    int n = 0;
    const char *s = list;
    while (*s) {
        const char *e = strchr(s, ',');
        size_t len = e ? (size_t)(e - s) : strlen(s);
        char name[64];
        if (len == 0 || len >= sizeof name || n == GX_PLACE_NPOLICIES) goto bad;
        memcpy(name, s, len);
        name[len] = 0;
        if (!(out[n++] = gx_place_policy_by_name(name))) {
            fprintf(stderr, "gpuaas sim trace: unknown policy '%s' (%s)\n", name,
                    gx_place_policy_names());
            return -1;
        }
        s += len;
        if (*s == ',') s++;
    }
    if (n) return n;
bad:
    fprintf(stderr, "gpuaas sim trace: --policy '%s': a comma-separated list of %s\n", list,
            gx_place_policy_names());
    return -1;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

typedef struct result {
    const gx_place_policy *pol;
    double curve[GX_TRACE_MAX_COLS];
    double pub[GX_TRACE_MAX_COLS];
    double pub_seed100[64];
    int npub_seeds;
    bool has_pub;
    int ncols;
    double seconds;
    size_t dropped, arrived;
    double bound;             /* --bound: mean upper bound at 100 % arrived, NAN if not */
    double bfd;               /* --bound: mean offline best-fit decreasing, the same */
} result;

static double at100(const result *r) { return r->ncols > 100 ? r->curve[100] : NAN; }

static void print_json(const opts *o, const gx_trace *t, const result *r, int nr)
{
    if (nr > 1) printf("[\n");
    for (int i = 0; i < nr; i++) {
        printf("{\"policy\": \"%s\", \"tune\": %g, \"seeds\": [", r[i].pol->name, o->tune);
        for (int s = 0; s < o->nseeds; s++)
            printf("%s%llu", s ? ", " : "", (unsigned long long)o->seeds[s]);
        printf("], \"total_gpus\": %lld, \"curve\": [", (long long)t->gpus);
        for (int k = 0; k < r[i].ncols; k++) printf("%s%.4f", k ? ", " : "", r[i].curve[k]);
        printf("], \"alloc_ratio_at_100\": ");
        if (r[i].ncols > 100) printf("%.4f", at100(&r[i])); else printf("null");
        printf(", \"seconds\": %.3f", r[i].seconds);
        if (o->bound && !isnan(r[i].bound))
            printf(", \"bound_at_100\": %.4f, \"offline_bfd_at_100\": %.4f", r[i].bound,
                   r[i].bfd);
        if (r[i].has_pub && r[i].ncols > 100) {
            double mx = 0;
            for (int k = 0; k < r[i].ncols && k <= 130; k++)
                mx = fmax(mx, fabs(r[i].curve[k] - r[i].pub[k]));
            printf(", \"published_at_100\": %.4f, \"max_abs_diff\": %.4f", r[i].pub[100], mx);
        }
        printf("}%s\n", nr > 1 && i + 1 < nr ? "," : "");
    }
    if (nr > 1) printf("]\n");
}

static void print_table(const opts *o, const gx_trace *t, const result *r, int nr)
{
    printf("trace: %d nodes, %lld GPUs, %zu pods; tune %.2f; %d seed(s) %llu..%llu%s%s\n\n",
           t->nnodes, (long long)t->gpus, t->npods, o->tune, o->nseeds,
           (unsigned long long)o->seeds[0], (unsigned long long)o->seeds[o->nseeds - 1],
           o->perturb ? "; perturbed: " : "", o->perturb ? o->perturb : "");
    static const int cols[] = { 50, 80, 90, 95, 100, 110, 120, 130 };
    printf("%-15s", "policy");
    for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) printf(" %6d%%", cols[c]);
    printf(" %8s %8s\n", "dropped", "seconds");
    for (int i = 0; i < nr; i++) {
        printf("%-15s", r[i].pol->name);
        for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
            if (cols[c] < r[i].ncols) printf(" %7.2f", r[i].curve[cols[c]]);
            else printf(" %7s", "-");
        }
        printf(" %8.0f %8.2f\n", (double)r[i].dropped / o->nseeds, r[i].seconds);
        if (r[i].has_pub) {
            printf("%-15s", "  published");
            for (size_t c = 0; c < sizeof cols / sizeof cols[0]; c++) {
                if (cols[c] < r[i].ncols && cols[c] <= 130) printf(" %7.2f", r[i].pub[cols[c]]);
                else printf(" %7s", "-");
            }
            double mx = 0, sum = 0;
            int n = 0;
            for (int k = 0; k < r[i].ncols && k <= 130; k++, n++) {
                double d = fabs(r[i].curve[k] - r[i].pub[k]);
                mx = fmax(mx, d);
                sum += d;
            }
            printf("   |diff| mean %.2f max %.2f\n", n ? sum / n : 0, mx);
        }
    }
    printf("\ncolumns: mean GPU allocation ratio (%%) at arrived GPU demand (%% of capacity)\n");
    if (o->bound && nr > 0 && !isnan(r[0].bound))
        printf("at 100 %% arrived, with CPU and nodes ignored (every GPU a bin of 1000):\n"
               "  upper bound for any placement of the same arrivals: %.2f %%\n"
               "  offline best-fit decreasing of the same arrivals:   %.2f %%\n",
               r[0].bound, r[0].bfd);
}

static int write_svg(const opts *o, const result *r, int nr)
{
    gx_trace_series s[2 * GX_PLACE_NPOLICIES];
    char labels[GX_PLACE_NPOLICIES][64];
    int ns = 0, ncols = r[0].ncols;
    for (int i = 0; i < nr; i++) {
        s[ns++] = (gx_trace_series){ r[i].pol->name, r[i].curve, r[i].ncols, false };
        if (r[i].has_pub) {
            snprintf(labels[i], sizeof labels[i], "%s (published)", r[i].pol->name);
            s[ns++] = (gx_trace_series){ labels[i], r[i].pub, r[i].ncols > 131 ? 131 : r[i].ncols,
                                         true };
        }
    }
    char err[256];
    char title[128];
    snprintf(title, sizeof title, "GPU allocation ratio vs arrived demand (%d seeds)",
             o->nseeds);
    if (gx_trace_svg(o->svg, title, s, ns, ncols > 91 ? 80 : 0, ncols - 1, err, sizeof err)) {
        fprintf(stderr, "gpuaas sim trace: %s\n", err);
        return 2;
    }
    return 0;
}

static int run_arrivals(const opts *o, const gx_trace *t, const gx_place_workload *wl,
                        const gx_place_policy **pols, int np)
{
    result *r = gx_xcalloc((size_t)np, sizeof *r);
    gx_trace_replay_opts ro = { o->tune, wl };
    double bound = NAN, bfd = NAN;
    if (o->bound) {                      /* the same for every policy: one per seed */
        bound = bfd = 0;
        for (int s = 0; s < o->nseeds && !isnan(bound); s++) {
            size_t na = 0;
            int *arr = gx_trace_arrivals(t, o->seeds[s], o->tune, &na);
            double b = arr ? gx_trace_bound(t, arr, na, 1.0) : -1;
            double f = arr ? gx_trace_offline_bfd(t, arr, na, 1.0) : -1;
            free(arr);
            bound = b < 0 || f < 0 ? NAN : bound + b / o->nseeds;
            bfd += f / o->nseeds;
        }
        if (isnan(bound)) bfd = NAN;
    }
    for (int p = 0; p < np; p++) {
        r[p].pol = pols[p];
        r[p].bound = bound;
        r[p].bfd = bfd;
        double t0 = now_s();
        for (int s = 0; s < o->nseeds; s++) {
            gx_trace_run run;
            if (gx_trace_replay(t, pols[p], o->seeds[s], &ro, &run)) {
                fprintf(stderr, "gpuaas sim trace: replay failed (out of memory)\n");
                free(r);
                return 1;
            }
            r[p].ncols = run.ncols;
            for (int k = 0; k < run.ncols; k++) r[p].curve[k] += run.curve[k] / o->nseeds;
            r[p].dropped += run.dropped;
            r[p].arrived += run.arrived;
        }
        r[p].seconds = now_s() - t0;
        if (o->expected) {
            int n = 0;
            r[p].has_pub = gx_trace_expected(o->expected, pols[p]->name, r[p].pub, 131,
                                             r[p].pub_seed100, &n) == 0;
            r[p].npub_seeds = n;
        }
    }
    if (!strcmp(o->out, "json")) print_json(o, t, r, np);
    else print_table(o, t, r, np);
    int rc = o->svg ? write_svg(o, r, np) : 0;
    free(r);
    return rc;
}

static void print_timed(const opts *o, const gx_place_policy *pol, bool nosh,
                        const gx_trace_timed_result *x, bool first, bool last)
{
    if (!strcmp(o->out, "json")) {
        printf("%s{\"policy\": \"%s\", \"mode\": \"%s\", \"time_scale\": %g, "
               "\"gpu_utilisation\": %.4f, \"gpu_used\": %.4f, \"pods\": %zu, "
               "\"queued\": %zu, \"never_started\": %zu, \"makespan_s\": %.0f, "
               "\"delay_s\": {\"mean\": %.1f, \"p50\": %.1f, \"p90\": %.1f, \"p99\": %.1f}}%s\n",
               first ? "[\n" : "", pol->name, nosh ? "no-sharing" : "sharing", o->time_scale,
               x->util, x->util_req, x->pods, x->queued, x->never_started, x->makespan,
               x->delay_mean, x->delay_p50, x->delay_p90, x->delay_p99, last ? "\n]" : ",");
        return;
    }
    if (first)
        printf("%-15s %-11s %7s %7s %7s %6s %10s %9s %9s %9s\n", "policy", "mode", "alloc%",
               "used%", "queued", "never", "delay-mean", "p50", "p90", "p99");
    printf("%-15s %-11s %7.2f %7.2f %7zu %6zu %10.1f %9.1f %9.1f %9.1f\n", pol->name,
           nosh ? "no-sharing" : "sharing", x->util, x->util_req, x->queued, x->never_started,
           x->delay_mean, x->delay_p50, x->delay_p90, x->delay_p99);
    if (last)
        printf("\nalloc%%: allocated GPU-time / (GPUs x time from first to last arrival); "
               "used%%: the same for the\nGPU the pods asked for (a 0.3-GPU pod rounded up "
               "to a whole GPU is alloc 1, used 0.3);\nqueued: pods that waited; never: "
               "pods that fit no node; delay: seconds from arrival to start\n"
               "(time-scale %g)\n", o->time_scale);
}

static int run_timed(const opts *o, const gx_trace *t, const gx_place_workload *wl,
                     const gx_place_policy **pols, int np)
{
    if (!t->has_times) {
        fprintf(stderr, "gpuaas sim trace: --timed needs creation_time and deletion_time "
                        "columns in %s\n", o->pods);
        return 2;
    }
    int modes = o->no_sharing ? 1 : 2, n = 0;
    if (strcmp(o->out, "json"))
        printf("trace: %d nodes, %lld GPUs, %zu pods%s%s; time-driven\n\n", t->nnodes,
               (long long)t->gpus, t->npods, o->perturb ? "; perturbed: " : "",
               o->perturb ? o->perturb : "");
    for (int p = 0; p < np; p++) {
        for (int m = 0; m < modes; m++) {
            bool nosh = o->no_sharing || m == 1;
            gx_trace_timed_result x;
            if (gx_trace_timed(t, pols[p], o->seeds[0], wl, nosh, o->time_scale, &x)) {
                fprintf(stderr, "gpuaas sim trace: timed replay failed (out of memory)\n");
                return 1;
            }
            print_timed(o, pols[p], nosh, &x, n == 0, n == np * modes - 1);
            n++;
        }
    }
    return 0;
}

int gx_sim_trace_main(int argc, char **argv)
{
    opts o;
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc == 1 ? 0 : rc;
    const gx_place_policy *pols[GX_PLACE_NPOLICIES];
    int np = parse_policies(o.policies, pols);
    if (np < 0) return 2;
    gx_trace t;
    char err[512];
    if (gx_trace_load(o.nodes, o.pods, &t, err, sizeof err)) {
        fprintf(stderr, "gpuaas sim trace: %s\n", err);
        return 2;
    }
    if (o.perturb && gx_trace_perturb(&t, o.perturb, o.perturb_seed, err, sizeof err)) {
        fprintf(stderr, "gpuaas sim trace: %s\n", err);
        gx_trace_free(&t);
        return 2;
    }
    /* FGD's target workload: the trace's pod types before sampling */
    gx_place_pod *reqs = gx_xreallocarray(NULL, t.npods, sizeof *reqs);
    gx_place_type types[256];
    gx_place_workload wl = { 0, types, 0.95 };
    for (size_t i = 0; i < t.npods; i++) reqs[i] = t.pods[i].req;
    wl.n = gx_place_workload_from_pods(reqs, t.npods, types, 256);
    wl.coverage = o.coverage;
    free(reqs);
    rc = o.timed ? run_timed(&o, &t, &wl, pols, np) : run_arrivals(&o, &t, &wl, pols, np);
    gx_trace_free(&t);
    return rc;
}
