/* sim/trace_internal: what the trace*.c files of `gpuaas sim trace` share.
 * Owns: the loaded trace, the replay's PRNG, the replay and report entry points.
 * Must not: hold placement logic (that is src/core/place*.c). */
#ifndef GX_SIM_TRACE_INTERNAL_H
#define GX_SIM_TRACE_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "core/place.h"

#define GX_TRACE_MAX_COLS 401     /* arrived demand 0..400 % */

typedef struct gx_trace_pod {
    gx_place_pod req;
    int64_t created, deleted;     /* seconds from trace start */
} gx_trace_pod;

typedef struct gx_trace {
    gx_place_models models;
    int nnodes;
    gx_place_node *nodes;         /* as loaded: all free */
    size_t npods;
    gx_trace_pod *pods;
    int64_t gpu_milli;            /* cluster GPU capacity in milli-GPU */
    int64_t gpus;
    bool has_times;               /* creation_time and deletion_time columns present */
} gx_trace;

/* trace_csv.c: reads both files; on failure writes a message into err and returns -1. */
int gx_trace_load(const char *nodes_csv, const char *pods_csv, gx_trace *t, char *err,
                  size_t errlen);
void gx_trace_free(gx_trace *t);

/* trace_perturb.c: applies "key=value,..." (see --help) to a loaded trace in memory. */
int gx_trace_perturb(gx_trace *t, const char *spec, uint64_t seed, char *err, size_t errlen);

/* trace_rng.c: xoshiro256** seeded through splitmix64. */
typedef struct gx_trace_rng { uint64_t s[4]; } gx_trace_rng;
void gx_trace_rng_seed(gx_trace_rng *r, uint64_t seed);
uint64_t gx_trace_rng_next(gx_trace_rng *r);
uint64_t gx_trace_rng_below(gx_trace_rng *r, uint64_t n);   /* uniform in [0, n) */
void gx_trace_rng_shuffle(gx_trace_rng *r, int *a, size_t n);

/* trace_replay.c: the FGD paper's arrival replay for one policy and one seed. curve[k]
 * is the mean allocation ratio (%) while arrived demand rounds to k % (k < ncols). */
typedef struct gx_trace_run {
    double curve[GX_TRACE_MAX_COLS];
    int ncols;
    size_t arrived, placed, dropped;
} gx_trace_run;

typedef struct gx_trace_replay_opts {
    double tune;                  /* arrived demand stops at tune x capacity */
    const gx_place_workload *wl;  /* FGD's target workload (from the trace) */
} gx_trace_replay_opts;

int gx_trace_replay(const gx_trace *t, const gx_place_policy *pol, uint64_t seed,
                    const gx_trace_replay_opts *o, gx_trace_run *out);

/* The replay's arrival sequence for `seed` (pod indices, *count of them; malloc'd, never
 * NULL); the replay of the same seed sees exactly this sequence. */
int *gx_trace_arrivals(const gx_trace *t, uint64_t seed, double tune, size_t *count);

/* trace_bound.c: an upper bound (%) on the allocation ratio any placement reaches once
 * the arrived demand of arr[0..na) first comes to `at` x capacity (1.0 = 100 %). */
double gx_trace_bound(const gx_trace *t, const int *arr, size_t na, double at);
/* The allocation (%) an offline best-fit decreasing packing of the same pods reaches on
 * the same relaxation: a reference, not a bound. */
double gx_trace_offline_bfd(const gx_trace *t, const int *arr, size_t na, double at);

/* trace_timed.c: creation/deletion-time replay with a queue. */
typedef struct gx_trace_timed_result {
    double util;                  /* allocated GPU-time / capacity-time over the arrival
                                     window (first to last arrival), in % */
    double util_req;              /* the same for the requested (unrounded) GPU-time */
    double delay_mean, delay_p50, delay_p90, delay_p99;   /* seconds */
    size_t pods, queued, never_started;
    double makespan;              /* seconds, first arrival to last finish */
} gx_trace_timed_result;

int gx_trace_timed(const gx_trace *t, const gx_place_policy *pol, uint64_t seed,
                   const gx_place_workload *wl, bool no_sharing, double time_scale,
                   gx_trace_timed_result *out);

/* trace_svg.c: allocation-ratio curves, one line per series, as an SVG file. */
typedef struct gx_trace_series {
    const char *label;
    const double *y;              /* y[k] at x = k %, k < n */
    int n;
    bool dashed;
} gx_trace_series;

int gx_trace_svg(const char *path, const char *title, const gx_trace_series *s, int ns,
                 int xmin, int xmax, char *err, size_t errlen);

/* trace_expected.c: reads the published analysis_allo_discrete.csv; fills mean[131] for
 * the given policy name (ours: random, best-fit, ...). Returns -1 if absent. */
int gx_trace_expected(const char *csv, const char *policy, double *mean, int ncols,
                      double *per_seed_at_100, int *nseeds);

#endif
