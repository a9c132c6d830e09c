/* idle: the daemon side of IdlePolicy (gpuaas.dev/v1alpha1; core/idle decides).
 * Owns: the IdlePolicy kind (validated by core/idle, errors naming the field), the
 * policies in effect, the tick that feeds each running covered workload's utilisation
 * samples to core/idle and takes the action (warn: condition IdleWarning on the view;
 * requeue / stop through gx_d_idle_reclaim), the reclaimed GPU-hours per namespace
 * (kept in the store's meta table, key GX_IDLE_META) and their /metrics counter
 * gpuaas_idle_reclaimed_gpu_hours_total{namespace}.
 * Samples: per device of the workload (its MIG instance's GPM activity when measured,
 * else its GPU's ring of 10 s samples; NVML here gives no per-process utilisation, so a
 * shared GPU is judged by the whole device). A simulated GPU's utilisation is only its
 * allocated share (never idle), so for a workload on simulated GPUs the annotation
 * gpuaas.dev/utilization (as in `sim scenario`: percent from offsets after admission)
 * is the signal, the test knob of tests/integration/idle_policy.sh.
 * A workload on several devices is idle only when every device is: the mildest
 * verdict of its devices counts.
 * Must not: decide idleness itself (core/idle), or write SQL (store/). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/idle.h"
#include "core/quantity.h"
#include "gpu/runtime.h"
#include "lib/alloc.h"
#include "lib/sbuf.h"
#include "ops/daemon.h"
#include "ops/idle.h"

#define A_UTIL "gpuaas.dev/utilization"
#define IDLE_EVERY_MS 10000    /* as often as the GPUs are sampled (GX_GPU_SAMPLE_MS) */
#define MAX_DEVS 16

struct gx_d_idle {
    gx_idle_policy **pol; size_t n, cap;   /* by name: the first covering one judges */
    json_t *warned;      /* key -> {"reason","since","at","policy","admittedAt"} while warned */
    json_t *totals;      /* namespace -> GPU-hours reclaimed (persisted) */
    int64_t next_ms;
};

static gx_d_idle *state(gx_daemon *d)
{
    if (!d->idle) {
        d->idle = gx_xcalloc(1, sizeof *d->idle);
        d->idle->warned = json_object();
        d->idle->totals = json_object();
    }
    return d->idle;
}

/* ---- the kind ------------------------------------------------------------------------ */

static int v_validate(void *ud, const json_t *doc, json_t *const *others, size_t nothers, gx_err *err)
{
    (void)ud; (void)others; (void)nothers;
    gx_idle_policy *p;
    if (gx_idle_policy_parse(doc, &p, err) < 0) return -1;
    gx_idle_policy_free(p);
    return 0;
}

static int v_apply(void *ud, const json_t *doc, gx_err *err)
{
    gx_d_idle *s = state(ud);
    gx_idle_policy *p;
    if (gx_idle_policy_parse(doc, &p, err) < 0) return -1;
    size_t i = 0;
    while (i < s->n && strcmp(s->pol[i]->name, p->name) < 0) i++;
    if (i < s->n && !strcmp(s->pol[i]->name, p->name)) {
        gx_idle_policy_free(s->pol[i]);
    } else {
        s->pol = gx_xgrow(s->pol, &s->cap, s->n + 1, sizeof *s->pol);
        memmove(s->pol + i + 1, s->pol + i, (s->n - i) * sizeof *s->pol);
        s->n++;
    }
    s->pol[i] = p;
    s->next_ms = 0;   /* judge at the next tick */
    return 0;
}

static int v_remove(void *ud, const char *kind, const char *ns, const char *name, gx_err *err)
{
    (void)kind; (void)ns; (void)err;
    gx_d_idle *s = state(ud);
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->pol[i]->name, name)) {
            gx_idle_policy_free(s->pol[i]);
            memmove(s->pol + i, s->pol + i + 1, (s->n - i - 1) * sizeof *s->pol);
            s->n--;
            break;
        }
    return 0;
}

/* ---- /metrics ---------------------------------------------------------------------------- */

static char *idle_metrics(void *ud, char *text)
{
    gx_daemon *d = ud;
    gx_sbuf o;
    gx_sbuf_init(&o);
    gx_sbuf_puts(&o, text);
    free(text);
    gx_sbuf_puts(&o, "# HELP gpuaas_idle_reclaimed_gpu_hours_total GPU-hours taken back by IdlePolicy actions "
                     "(devices x time from the action to the workload's maxAge or maximum execution time; 0 when unbounded)\n"
                     "# TYPE gpuaas_idle_reclaimed_gpu_hours_total counter\n");
    const char *ns;
    json_t *v;
    char b[256];
    json_object_foreach(state(d)->totals, ns, v)
        gx_sbuf_printf(&o, "gpuaas_idle_reclaimed_gpu_hours_total{namespace=\"%s\"} %.6f\n",
                       gx_prom_label(ns, b, sizeof b), json_number_value(v));
    gx_sbuf_puts(&o, "# HELP gpuaas_idle_warned_workloads Running workloads an IdlePolicy warned as idle\n"
                     "# TYPE gpuaas_idle_warned_workloads gauge\n");
    gx_sbuf_printf(&o, "gpuaas_idle_warned_workloads %zu\n", json_object_size(state(d)->warned));
    return gx_sbuf_take(&o);
}

void gx_d_idle_register(gx_daemon *d)
{
    gx_d_idle *s = state(d);
    gx_kind k = {.kind = "IdlePolicy", .api_version = "gpuaas.dev/v1alpha1",
                 .validate = v_validate, .apply = v_apply, .remove = v_remove, .ud = d};
    gx_d_register_kind(d, &k);
    gx_hooks h = {.metrics = idle_metrics, .ud = d};
    gx_d_register_hooks(d, &h);
    /* the totals survive restarts (the store's meta table) */
    char buf[65536];
    gx_err e;
    if (d->store && gx_store_meta_get(d->store, GX_IDLE_META, buf, sizeof buf, &e) == 0) {
        json_t *t = json_loads(buf, 0, NULL);
        if (json_is_object(t)) { json_decref(s->totals); s->totals = t; }
        else json_decref(t);
    }
}

void gx_d_idle_free(gx_daemon *d)
{
    gx_d_idle *s = d->idle;
    if (!s) return;
    for (size_t i = 0; i < s->n; i++) gx_idle_policy_free(s->pol[i]);
    free(s->pol);
    json_decref(s->warned);
    json_decref(s->totals);
    free(s);
    d->idle = NULL;
}

/* ---- the tick ------------------------------------------------------------------------------- */

/* One device's samples (GPU ring, or its MIG instance's current GPM figure). */
static size_t dev_samples(const gx_gpu_dev *g, int mig, int64_t now, gx_idle_sample *out)
{
    if (mig >= 0 && mig < g->n_mig && g->mig[mig].gr_active >= 0) {
        out[0] = (gx_idle_sample){now, g->mig[mig].gr_active};
        return 1;
    }
    size_t n = 0;
    for (int k = 0; k < g->hist_n; k++) {
        const gx_gpu_sample *x = &g->hist[(g->hist_pos - g->hist_n + k + GX_GPU_HIST) % GX_GPU_HIST];
        if (x->util >= 0) out[n++] = (gx_idle_sample){x->t_ms, x->util};
    }
    return n;
}

static int milder(const gx_idle_verdict *a, const gx_idle_verdict *b)
{
    return a->kind < b->kind || (a->kind == b->kind && a->idle_since_ms > b->idle_since_ms);
}

/* The workload's verdict: the mildest over its devices' signals. *gpus: its devices. */
static void judge(gx_daemon *d, const gx_idle_policy *p, const char *key, const gx_wl_info *info, int64_t now,
                  gx_idle_verdict *out, int *gpus)
{
    gx_run *run = gx_exec_get(d->exec, key);
    const char *ann = run ? json_string_value(json_object_get(json_object_get(json_object_get(run->manifest, "metadata"),
                                                                              "annotations"), A_UTIL)) : NULL;
    gx_idle_sample *sim = NULL, *buf = gx_xreallocarray(NULL, GX_GPU_HIST, sizeof *buf);
    long nsim = -1;
    if (ann) {
        gx_err e;
        nsim = gx_idle_samples_parse(ann, "", &sim, &e);
        for (long i = 0; i < nsim; i++) sim[i].t_ms += info->admitted_ms;
    }
    int first = 1;
    *gpus = 0;
    out->kind = GX_IDLE_NONE;
    out->idle_since_ms = -1;
    out->reason = NULL;
    for (int pod = 0; pod < info->admitted_pods; pod++) {
        gx_engine_dev devs[MAX_DEVS];
        int nd = gx_engine_wl_devices(d->eng, key, pod, devs, MAX_DEVS);
        for (int j = 0; j < nd && j < MAX_DEVS; j++) {
            int mig = -1;
            gx_gpu_dev *g = d->gpu ? gx_gpu_inventory_owner(d->gpu->inv, devs[j].uuid, &mig) : NULL;
            gx_idle_verdict v;
            if (g && g->nvml_index >= 0) {
                size_t n = dev_samples(g, mig, now, buf);
                gx_idle_decide(p, info->admitted_ms, buf, n, now, &v);
            } else {
                gx_idle_decide(p, info->admitted_ms, sim, nsim > 0 ? (size_t)nsim : 0, now, &v);
            }
            (*gpus)++;
            if (first || milder(&v, out)) *out = v;
            first = 0;
        }
    }
    if (first) gx_idle_decide(p, info->admitted_ms, sim, nsim > 0 ? (size_t)nsim : 0, now, out);   /* no devices: quota only */
    free(sim);
    free(buf);
}

static void add_total(gx_daemon *d, const char *ns, double h)
{
    gx_d_idle *s = state(d);
    json_t *v = json_object_get(s->totals, ns);
    json_object_set_new(s->totals, ns, json_real((v ? json_number_value(v) : 0) + h));
    char *text = json_dumps(s->totals, JSON_COMPACT | JSON_SORT_KEYS);
    gx_err e;
    if (text && gx_store_meta_put(d->store, GX_IDLE_META, text, &e))
        fprintf(stderr, "gpuaas: cannot record the idle GPU-hours: %s\n", e.msg);
    free(text);
}

static void act(gx_daemon *d, const gx_idle_policy *p, const char *key, const gx_wl_info *info,
                const gx_idle_verdict *v, int gpus, int64_t now)
{
    int64_t exec_end = info->max_exec_s > 0 ? info->admitted_ms + info->max_exec_s * 1000 - info->acc_ms : 0;
    double h = gx_idle_reclaimed_gpu_hours(p, info->admitted_ms, exec_end, gpus, now);
    char msg[256], since[40] = "";
    if (v->idle_since_ms >= 0) gx_time_fmt(v->idle_since_ms, since, sizeof since);
    if (v->idle_since_ms >= 0)
        snprintf(msg, sizeof msg, "IdlePolicy %s: GPU utilisation below %g%% since %s; %s (%.3f GPU-hours reclaimed)",
                 p->name, p->threshold, since, gx_idle_action_name(p->action), h);
    else
        snprintf(msg, sizeof msg, "IdlePolicy %s: older than its maxAge; %s (%.3f GPU-hours reclaimed)", p->name,
                 gx_idle_action_name(p->action), h);
    gx_err e;
    if (gx_d_idle_reclaim(d, key, p->action == GX_IDLE_REQUEUE, v->reason, msg, &e)) {
        fprintf(stderr, "gpuaas: %s: %s: %s\n", key, msg, e.msg);
        return;
    }
    fprintf(stderr, "gpuaas: %s: %s\n", key, msg);
    char ns[256];
    snprintf(ns, sizeof ns, "%.*s", (int)strcspn(key, "/"), key);
    add_total(d, ns, h);
    /* one row per reclamation, for the utilisation report's window (ops/reports.c); the
     * class is the GPU model of the workload's first device, as the report groups by */
    gx_engine_dev dev[1];
    const char *cls = gx_engine_wl_devices(d->eng, key, 0, dev, 1) > 0 && dev[0].model ? dev[0].model : "unknown";
    if (gx_store_put_idle_reclaim(d->store, ns, cls, (int64_t)(h * 3600000.0 + 0.5), now, &e))
        fprintf(stderr, "gpuaas: cannot record the reclamation of %s: %s\n", key, e.msg);
}

int64_t gx_d_idle_tick(gx_daemon *d, int64_t now)
{
    gx_d_idle *s = state(d);
    if (!s->n) { json_object_clear(s->warned); return -1; }
    if (now < s->next_ms) return s->next_ms - now;
    int64_t soonest = now + IDLE_EVERY_MS;   /* new samples; sooner when a verdict may change */
    gx_wl_filter f = {.state = "Admitted"};
    json_t *wls = gx_engine_workloads(d->eng, &f, now);
    json_t *still = json_object();
    size_t i;
    json_t *w;
    json_array_foreach(wls, i, w) {
        const char *key = json_string_value(json_object_get(w, "key"));
        char lq[600];
        snprintf(lq, sizeof lq, "%s/%s", json_string_value(json_object_get(w, "namespace")),
                 json_string_value(json_object_get(w, "queueName")) ? json_string_value(json_object_get(w, "queueName")) : "");
        const gx_idle_policy *p = NULL;
        gx_run *run = key ? gx_exec_get(d->exec, key) : NULL;
        const char *tmpl = run ? json_string_value(json_object_get(json_object_get(json_object_get(run->manifest, "metadata"),
                                                                                   "labels"), "gpuaas.dev/template")) : NULL;
        for (size_t k = 0; k < s->n && !p; k++)
            if (gx_idle_policy_covers(s->pol[k], json_string_value(json_object_get(w, "clusterQueue")), lq, tmpl,
                                      json_string_value(json_object_get(w, "priorityClass"))))
                p = s->pol[k];
        gx_wl_info info;
        if (!p || !key || gx_engine_wl_info(d->eng, key, &info) < 0) continue;
        gx_idle_verdict v;
        int gpus = 0;
        judge(d, p, key, &info, now, &v, &gpus);
        if (v.next_ms > now && v.next_ms < soonest) soonest = v.next_ms;
        if (v.kind == GX_IDLE_NONE) continue;
        json_t *old = json_object_get(s->warned, key);
        if (old && json_integer_value(json_object_get(old, "admittedAt")) != info.admitted_ms) old = NULL;
        /* the grace is the user's, from the warning they saw: a verdict that jumped past
         * it (samples every 10 s, a daemon restarted) warns first */
        int64_t due = old ? json_integer_value(json_object_get(old, "at")) + p->grace_ms : now + p->grace_ms;
        if (v.kind == GX_IDLE_ACT && p->action != GX_IDLE_NOTIFY && (now >= due || !strcmp(v.reason, "MaxAgeExceeded"))) {
            act(d, p, key, &info, &v, gpus, now);
            continue;
        }
        if (v.kind == GX_IDLE_ACT && p->action != GX_IDLE_NOTIFY && due < soonest) soonest = due;
        if (old) {
            json_object_set(still, key, old);
            continue;
        }
        fprintf(stderr, "gpuaas: %s: IdlePolicy %s warns: %s\n", key, p->name, v.reason ? v.reason : "Idle");
        json_object_set_new(still, key, json_pack("{s:s,s:I,s:I,s:s,s:I,s:s}", "reason", v.reason ? v.reason : "Idle",
                                                  "since", (json_int_t)v.idle_since_ms, "at", (json_int_t)now,
                                                  "policy", p->name, "admittedAt", (json_int_t)info.admitted_ms,
                                                  "action", gx_idle_action_name(p->action)));
    }
    json_decref(wls);
    json_decref(s->warned);
    s->warned = still;
    s->next_ms = soonest;
    return soonest - now;
}

int64_t gx_d_idle_poke(gx_daemon *d)
{
    gx_d_idle *s = state(d);
    if (!s->n) return -1;
    s->next_ms = 0;
    return 0;
}

void gx_d_idle_decorate(gx_daemon *d, json_t *view)
{
    const json_t *wn = d->idle ? json_object_get(d->idle->warned, json_string_value(json_object_get(view, "key"))) : NULL;
    json_t *conds = json_object_get(view, "conditions");
    if (!wn || !json_is_array(conds)) return;
    char at[40], since[40] = "", msg[320];
    gx_time_fmt(json_integer_value(json_object_get(wn, "at")), at, sizeof at);
    json_int_t s = json_integer_value(json_object_get(wn, "since"));
    if (s >= 0) {
        gx_time_fmt(s, since, sizeof since);
        snprintf(msg, sizeof msg, "IdlePolicy %s: GPU utilisation below its threshold since %s; action %s after its grace",
                 json_string_value(json_object_get(wn, "policy")), since, json_string_value(json_object_get(wn, "action")));
    } else {
        snprintf(msg, sizeof msg, "IdlePolicy %s: older than its maxAge",
                 json_string_value(json_object_get(wn, "policy")));
    }
    json_array_append_new(conds, json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", "IdleWarning", "status", "True",
                                           "reason", json_string_value(json_object_get(wn, "reason")),
                                           "message", msg, "lastTransitionTime", at));
}
