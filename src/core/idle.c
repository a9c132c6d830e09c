/* idle: IdlePolicy validation and the idle verdict (see idle.h for the rules).
 * Owns: the policy document's fields and their errors; the verdict arithmetic.
 * Must not: do I/O, read a clock, or touch the engine (callers act on the verdict). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/idle.h"
#include "lib/alloc.h"
#include "lib/gxtime.h"

const char *gx_idle_action_name(gx_idle_action a)
{
    return a == GX_IDLE_REQUEUE ? "requeue" : a == GX_IDLE_STOP ? "stop" : "notify";
}

void gx_idle_policy_free(gx_idle_policy *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->n_cq; i++) free(p->cluster_queues[i]);
    for (size_t i = 0; i < p->n_lq; i++) free(p->local_queues[i]);
    for (size_t i = 0; i < p->n_exempt; i++) free(p->exempt[i]);
    for (size_t i = 0; i < p->n_tmpl; i++) free(p->templates[i]);
    free(p->templates);
    free(p->cluster_queues);
    free(p->local_queues);
    free(p->exempt);
    free(p->name);
    free(p);
}

/* A list of non-empty strings at spec.<field>; lq: each must be "namespace/name". */
static int str_list(const json_t *spec, const char *field, int lq, char ***out, size_t *n, gx_err *err)
{
    const json_t *v = json_object_get(spec, field);
    char path[96];
    if (!v) return 0;
    snprintf(path, sizeof path, "spec.%s", field);
    if (!json_is_array(v)) return gx_errf(err, 422, path, "must be a list of names");
    size_t i;
    const json_t *it;
    *out = gx_xcalloc(json_array_size(v) + 1, sizeof **out);
    json_array_foreach(v, i, it) {
        snprintf(path, sizeof path, "spec.%s[%zu]", field, i);
        const char *s = json_string_value(it);
        if (!s || !*s) return gx_errf(err, 422, path, "must be a non-empty name");
        const char *slash = strchr(s, '/');
        if (lq && (!slash || slash == s || !slash[1] || strchr(slash + 1, '/')))
            return gx_errf(err, 422, path, "\"%s\" is not namespace/name", s);
        (*out)[(*n)++] = gx_xstrdup(s);
    }
    return 0;
}

/* A duration field ("30m", "1h30m"); absent leaves *ms as it is. */
static int dur_field(const json_t *spec, const char *field, int required, int64_t *ms, gx_err *err)
{
    const json_t *v = json_object_get(spec, field);
    char path[64];
    snprintf(path, sizeof path, "spec.%s", field);
    if (!v) return required ? gx_errf(err, 422, path, "required (a duration such as 30m)") : 0;
    int64_t d = json_is_string(v) ? gx_duration_parse(json_string_value(v)) : -1;
    if (d < 0) return gx_errf(err, 422, path, "not a duration (e.g. 30s, 10m, 8h)");
    *ms = d;
    return 0;
}

static int parse_spec(const json_t *spec, gx_idle_policy *p, gx_err *err)
{
    static const char *const known[] = {"clusterQueues", "localQueues", "templates", "threshold", "idleFor", "grace",
                                        "action", "maxAge", "exemptPriorityClasses", NULL};
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)spec, k, v) {
        int ok = 0;
        for (int i = 0; known[i] && !ok; i++) ok = !strcmp(k, known[i]);
        if (!ok) {
            char path[160];
            return gx_errf(err, 400, gx_err_path(path, sizeof path, "spec", "spec.%s", k), "unknown field \"%s\"", k);
        }
    }
    if (str_list(spec, "clusterQueues", 0, &p->cluster_queues, &p->n_cq, err) < 0
        || str_list(spec, "localQueues", 1, &p->local_queues, &p->n_lq, err) < 0
        || str_list(spec, "templates", 0, &p->templates, &p->n_tmpl, err) < 0
        || str_list(spec, "exemptPriorityClasses", 0, &p->exempt, &p->n_exempt, err) < 0)
        return -1;
    if (!p->n_cq && !p->n_lq && !p->n_tmpl)
        return gx_errf(err, 422, "spec.clusterQueues", "name at least one ClusterQueue (or spec.localQueues, spec.templates)");
    v = json_object_get(spec, "threshold");
    if (!v) return gx_errf(err, 422, "spec.threshold", "required (percent GPU utilisation, 0-100)");
    if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 100)
        return gx_errf(err, 422, "spec.threshold", "must be a number from 0 to 100 (percent)");
    p->threshold = json_number_value(v);
    if (dur_field(spec, "idleFor", 1, &p->idle_for_ms, err) < 0 || dur_field(spec, "grace", 0, &p->grace_ms, err) < 0
        || dur_field(spec, "maxAge", 0, &p->max_age_ms, err) < 0)
        return -1;
    if (json_object_get(spec, "maxAge") && p->max_age_ms <= 0)
        return gx_errf(err, 422, "spec.maxAge", "must be longer than 0 (leave it out for no maximum)");
    v = json_object_get(spec, "action");
    const char *a = v ? json_string_value(v) : "notify";
    if (a && !strcmp(a, "notify")) p->action = GX_IDLE_NOTIFY;
    else if (a && !strcmp(a, "requeue")) p->action = GX_IDLE_REQUEUE;
    else if (a && !strcmp(a, "stop")) p->action = GX_IDLE_STOP;
    else return gx_errf(err, 422, "spec.action", "must be notify, requeue or stop");
    return 0;
}

int gx_idle_policy_parse(const json_t *doc, gx_idle_policy **out, gx_err *err)
{
    *out = NULL;
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    const char *av = json_string_value(json_object_get(doc, "apiVersion"));
    if (!kind || strcmp(kind, "IdlePolicy")) return gx_errf(err, 400, "kind", "must be IdlePolicy");
    if (!av || strcmp(av, "gpuaas.dev/v1alpha1")) return gx_errf(err, 400, "apiVersion", "must be gpuaas.dev/v1alpha1");
    const char *name = json_string_value(json_object_get(json_object_get(doc, "metadata"), "name"));
    if (!name || !*name) return gx_errf(err, 422, "metadata.name", "required");
    const json_t *spec = json_object_get(doc, "spec");
    if (!json_is_object(spec)) return gx_errf(err, 422, "spec", "required (a mapping)");
    gx_idle_policy *p = gx_xcalloc(1, sizeof *p);
    p->name = gx_xstrdup(name);
    if (parse_spec(spec, p, err) < 0) { gx_idle_policy_free(p); return -1; }
    *out = p;
    return 0;
}

static int in_list(char *const *l, size_t n, const char *s)
{
    for (size_t i = 0; s && i < n; i++) if (!strcmp(l[i], s)) return 1;
    return 0;
}

int gx_idle_policy_covers(const gx_idle_policy *p, const char *cq, const char *lq, const char *tmpl, const char *pc)
{
    if (pc && *pc && in_list(p->exempt, p->n_exempt, pc)) return 0;
    return in_list(p->cluster_queues, p->n_cq, cq) || in_list(p->local_queues, p->n_lq, lq)
           || in_list(p->templates, p->n_tmpl, tmpl);
}

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

void gx_idle_decide(const gx_idle_policy *p, int64_t start_ms, const gx_idle_sample *s, size_t n,
                    int64_t now_ms, gx_idle_verdict *out)
{
    out->kind = GX_IDLE_NONE;
    out->idle_since_ms = -1;
    out->reason = NULL;
    out->next_ms = INT64_MAX;
    size_t seen = 0;                       /* samples at or before now */
    while (seen < n && s[seen].t_ms <= now_ms) seen++;
    if (seen < n) out->next_ms = s[seen].t_ms;
    if (p->max_age_ms > 0) {
        int64_t end = start_ms + p->max_age_ms;
        if (now_ms >= end) {
            out->kind = GX_IDLE_ACT;
            out->reason = "MaxAgeExceeded";
            out->next_ms = INT64_MAX;
            return;
        }
        out->next_ms = min64(out->next_ms, end);
    }
    if (!seen || !(s[seen - 1].pct < p->threshold)) return;
    size_t first = seen - 1;               /* the trailing run below the threshold */
    while (first > 0 && s[first - 1].pct < p->threshold) first--;
    int64_t since = s[first].t_ms > start_ms ? s[first].t_ms : start_ms;
    int64_t warn_at = since + p->idle_for_ms, act_at = warn_at + p->grace_ms;
    if (now_ms >= act_at) {
        out->kind = GX_IDLE_ACT;
        out->reason = "Idle";
        out->idle_since_ms = since;
        out->next_ms = INT64_MAX;
        return;
    }
    if (now_ms >= warn_at) {
        out->kind = GX_IDLE_WARN;
        out->idle_since_ms = since;
        out->next_ms = min64(out->next_ms, act_at);
        return;
    }
    out->next_ms = min64(out->next_ms, warn_at);
}

double gx_idle_reclaimed_gpu_hours(const gx_idle_policy *p, int64_t start_ms, int64_t max_exec_end_ms,
                                   int devices, int64_t now_ms)
{
    int64_t end = INT64_MAX;
    if (p && p->max_age_ms > 0) end = start_ms + p->max_age_ms;
    if (max_exec_end_ms > 0) end = min64(end, max_exec_end_ms);
    if (end == INT64_MAX || end <= now_ms || devices <= 0) return 0;
    return (double)devices * (double)(end - now_ms) / 3600000.0;
}

long gx_idle_samples_parse(const char *text, const char *field, gx_idle_sample **out, gx_err *err)
{
    *out = NULL;
    size_t cap = 0;
    long n = 0;
    const char *p = text;
    while (p && *p) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        char part[64];
        if (len >= sizeof part) goto bad;
        memcpy(part, p, len);
        part[len] = 0;
        char *eq = strchr(part, '=');
        if (!eq) goto bad;
        *eq = 0;
        char *end;
        double off = strtod(part, &end);
        int64_t ms = (end != part && !*end && off >= 0) ? (int64_t)llround(off * 1000.0) : gx_duration_parse(part);
        double pct = strtod(eq + 1, &end);
        if (ms < 0 || end == eq + 1 || *end || pct < 0 || pct > 100) goto bad;
        if (n && ms <= (*out)[n - 1].t_ms) {
            free(*out);
            *out = NULL;
            return gx_errf(err, 422, field, "offsets must increase (\"%s\")", text);
        }
        *out = gx_xgrow(*out, &cap, (size_t)n + 1, sizeof **out);
        (*out)[n++] = (gx_idle_sample){ms, pct};
        p = comma ? comma + 1 : NULL;
    }
    return n;
bad:
    free(*out);
    *out = NULL;
    return gx_errf(err, 422, field, "not OFFSET=PERCENT[,...]: \"%s\" (e.g. \"0s=90,600s=2\")", text);
}
