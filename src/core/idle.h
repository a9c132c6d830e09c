/* idle: what an IdlePolicy (gpuaas.dev/v1alpha1) decides about one running workload.
 *
 * Owns: the policy's shape and validation (errors name the field), which workloads a
 * policy covers, and the verdict: given a workload's start (its latest admission), its
 * utilisation samples and now, nothing | warn (idle since when) | act (reason Idle or
 * MaxAgeExceeded). A sample holds from its time until the next sample (a step
 * signal); a workload with no sample yet is never idle. Idle since = the start of the
 * trailing run of samples below the threshold (never before the start): warn once it
 * lasted idleFor, act once it lasted idleFor + grace. maxAge counts from the start.
 * Must not: do I/O, read a clock, know where samples come from (NVML in the daemon,
 * an annotation in `sim scenario`), or change the engine: callers take the action. */
#ifndef GX_IDLE_H
#define GX_IDLE_H
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "lib/err.h"

typedef enum gx_idle_action {
    GX_IDLE_NOTIFY = 0,   /* condition and event only */
    GX_IDLE_REQUEUE,      /* evict (reason Idle), back to its queue */
    GX_IDLE_STOP,         /* deactivate (reason Idle) */
} gx_idle_action;

typedef struct gx_idle_policy {
    char *name;
    char **cluster_queues; size_t n_cq;
    char **local_queues; size_t n_lq;     /* "namespace/name" */
    char **templates; size_t n_tmpl;      /* portal Templates: label gpuaas.dev/template */
    char **exempt; size_t n_exempt;       /* priority class names */
    double threshold;                     /* percent; idle = below it */
    int64_t idle_for_ms, grace_ms;
    int64_t max_age_ms;                   /* 0 = none */
    gx_idle_action action;
} gx_idle_policy;

/* Validate and read one IdlePolicy document. 0 and *out (free with gx_idle_policy_free),
 * or -1 with err naming the field (400 unknown field or kind, 422 bad value). */
int gx_idle_policy_parse(const json_t *doc, gx_idle_policy **out, gx_err *err);
void gx_idle_policy_free(gx_idle_policy *p);
/* "notify", "requeue", "stop". */
const char *gx_idle_action_name(gx_idle_action a);

/* 1 when p covers a workload in ClusterQueue cq via LocalQueue lq ("ns/name"), made
 * from portal Template tmpl (its label gpuaas.dev/template), with priority class pc; any
 * may be NULL. 0 otherwise (an exempt priority class included). */
int gx_idle_policy_covers(const gx_idle_policy *p, const char *cq, const char *lq, const char *tmpl, const char *pc);

typedef struct gx_idle_sample {
    int64_t t_ms;       /* from this time ... */
    double pct;         /* ... until the next sample, utilisation in percent */
} gx_idle_sample;

typedef enum gx_idle_kind { GX_IDLE_NONE = 0, GX_IDLE_WARN, GX_IDLE_ACT } gx_idle_kind;

typedef struct gx_idle_verdict {
    gx_idle_kind kind;
    int64_t idle_since_ms;   /* WARN, or ACT for Idle: when the idle run began; else -1 */
    const char *reason;      /* ACT: "Idle" or "MaxAgeExceeded"; else NULL */
    int64_t next_ms;         /* the earliest time > now the verdict may change with no new
                              * sample (a later sample, idleFor or grace or maxAge
                              * running out); INT64_MAX when none */
} gx_idle_verdict;

/* The verdict at now_ms for a workload started at start_ms with samples s[0..n) in time
 * order (samples after now_ms are ignored but count for next_ms). */
void gx_idle_decide(const gx_idle_policy *p, int64_t start_ms, const gx_idle_sample *s, size_t n,
                    int64_t now_ms, gx_idle_verdict *out);

/* GPU-hours a reclamation at now_ms frees: devices x the hours from now to the earliest
 * bound on the workload's run (its start + maxAge, or max_exec_end_ms when > 0), or 0
 * when neither bounds it. */
double gx_idle_reclaimed_gpu_hours(const gx_idle_policy *p, int64_t start_ms, int64_t max_exec_end_ms,
                                   int devices, int64_t now_ms);

/* Parse "0s=90,600s=2" (offset=percent, offsets in increasing order) into *out
 * (gx_xmalloc'd; free()); returns the count, or -1 with err on field `field`. */
long gx_idle_samples_parse(const char *text, const char *field, gx_idle_sample **out, gx_err *err);

#endif
