/* scenario: `gpuaas sim scenario FILE...`, a Kueue scenario replayed on a virtual clock
 * through the same engine (src/core) the daemon uses.
 * Owns: reading the scenario (multi-document YAML: Kueue objects, gpuaas Nodes, an
 * optional Kueue Configuration, and batch/v1 Jobs or Kueue Workloads with the
 * annotations gpuaas.dev/submit-at and gpuaas.dev/run-for), the virtual clock and its
 * event queue, and the output: one JSON object per line per event, then a summary.
 * IdlePolicy documents (core/idle) are kept here and fed the simulated signal, the
 * annotation gpuaas.dev/utilization ("0s=90,600s=2": percent from each offset after
 * the workload's latest admission); their warnings and actions are event lines.
 * Must not: carry admission logic of its own; every decision comes from the engine.
 *
 * Reservations (gpuaas.dev/v1alpha1): spec.start/end as RFC 3339 or an offset from the
 * scenario's start ("600s"); a weekly recurrence is expanded by lib/tzwin for RSV_HORIZON
 * from the start. Their events: reservation-started/-ended/-released, and
 * reservation-refused (with the conflicts and the nearest free windows), which does not
 * stop the scenario.
 *
 * Output stability is an interface: other tests diff it byte for byte. Events at the
 * same instant come in this order: objects applied, workloads finished, workloads
 * submitted (file order), then the engine's actions in the order it took them. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/engine.h"
#include "core/idle.h"
#include "core/quantity.h"
#include "lib/alloc.h"
#include "lib/gxtime.h"
#include "lib/opts.h"
#include "lib/strmap.h"
#include "lib/tzwin.h"
#include "lib/yaml.h"
#include "sim/sim.h"

#define A_SUBMIT "gpuaas.dev/submit-at"
#define A_RUNFOR "gpuaas.dev/run-for"
#define A_UTIL "gpuaas.dev/utilization"

/* EV_IDLE last: an idle action at t frees its GPUs before the pass at t */
enum { EV_APPLY = 0, EV_FINISH = 1, EV_SUBMIT = 2, EV_IDLE = 3 };

typedef struct wl_rec {
    char *key;
    gx_wl_spec *spec;          /* until submitted */
    int64_t run_ms;            /* -1 = forever */
    unsigned gen;              /* admission generation: stale finish events are ignored */
    char *cq;                  /* last known ClusterQueue */
    const char *file;
    int line;
    gx_idle_sample *util;      /* gpuaas.dev/utilization, offsets from the admission */
    long n_util;
    gx_idle_sample *abs;       /* the same, in virtual time, for the current admission */
    int warned;                /* idle-warned printed for the current admission */
    char *tmpl;                /* label gpuaas.dev/template (IdlePolicy spec.templates) */
} wl_rec;

typedef struct event {
    int64_t t;
    int kind;
    long seq;
    long idx;                  /* wl_rec index, or object index */
    unsigned gen;
} event;

typedef struct obj_rec { json_t *obj; const char *file; int line, base; char *text; } obj_rec;   /* text, base: for error lines */

typedef struct sim {
    gx_engine *e;
    gx_engine_opts opts;
    wl_rec *w; long nw; size_t capw;
    obj_rec *o; long no; size_t capo;
    event *h; long nh; size_t caph;
    long seq;
    gx_strmap keys;
    long n_admitted, n_preempted, n_finished, n_deactivated;
    gx_idle_policy **pol; size_t npol, cappol;   /* IdlePolicy documents, by name */
    double idle_gpu_hours;     /* reclaimed by idle actions (core/idle's definition) */
    int64_t last_t;
    FILE *out;
} sim;

/* ---- event heap --------------------------------------------------------------------- */

static int ev_less(const event *a, const event *b)
{
    if (a->t != b->t) return a->t < b->t;
    if (a->kind != b->kind) return a->kind < b->kind;
    return a->seq < b->seq;
}

static void ev_push(sim *s, event ev)
{
    s->h = gx_xgrow(s->h, &s->caph, (size_t)s->nh + 1, sizeof *s->h);
    ev.seq = s->seq++;
    long i = s->nh++;
    s->h[i] = ev;
    while (i > 0) {
        long p = (i - 1) / 2;
        if (!ev_less(&s->h[i], &s->h[p])) break;
        event t = s->h[i]; s->h[i] = s->h[p]; s->h[p] = t;
        i = p;
    }
}

static event ev_pop(sim *s)
{
    event top = s->h[0];
    s->h[0] = s->h[--s->nh];
    long i = 0;
    for (;;) {
        long l = 2 * i + 1, r = l + 1, m = i;
        if (l < s->nh && ev_less(&s->h[l], &s->h[m])) m = l;
        if (r < s->nh && ev_less(&s->h[r], &s->h[m])) m = r;
        if (m == i) break;
        event t = s->h[i]; s->h[i] = s->h[m]; s->h[m] = t;
        i = m;
    }
    return top;
}

/* ---- input ---------------------------------------------------------------------------- */

/* A duration ("90s", "5m", "1h30m", "1.5s", "200ms": lib/gxtime) or plain seconds ("90", "1.5"). */
static int parse_duration(const char *s, int64_t *ms)
{
    if (!s || !*s) return -1;
    char *end;
    double v = strtod(s, &end);
    if (end != s && !*end) { if (v < 0) return -1; *ms = (int64_t)(v * 1000.0 + 0.5); return 0; }
    int64_t d = gx_duration_parse(s);
    if (d < 0) return -1;
    *ms = d;
    return 0;
}

static const char *ann(const json_t *doc, const char *k)
{
    const json_t *v = json_object_get(json_object_get(json_object_get(doc, "metadata"), "annotations"), k);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

static void report(const char *file, int line, const gx_err *err)
{
    char buf[1024];
    gx_err e = *err;
    if (line > 0 && e.line <= 0) e.line = line;
    fprintf(stderr, "gpuaas sim scenario: %s\n", gx_err_str(&e, file, buf, sizeof buf));
}

static int is_workload(const json_t *d)
{
    const json_t *k = json_object_get(d, "kind");
    return json_is_string(k) && (!strcmp(json_string_value(k), "Job") || !strcmp(json_string_value(k), "Workload"));
}

/* Take one parsed document: a workload becomes a submit event (after its spec is
 * parsed, so the JSON can go), anything else an apply event. */
static void annotate(const gx_linemap *lm, int base, gx_err *err)
{
    gx_linemap_annotate(lm, err);
    if (err->line > 0) err->line += base - 1;
}

/* line: where the document starts; base: first line of text (line maps count from it) */
static int take_doc(sim *s, json_t *doc, const gx_linemap *lm, const char *file, int line, int base, const char *text, size_t tlen)
{
    const json_t *kind = json_object_get(doc, "kind");
    const json_t *av = json_object_get(doc, "apiVersion");
    gx_err err;
    gx_err_clear(&err);
    const char *sa = ann(doc, A_SUBMIT), *rf = ann(doc, A_RUNFOR);
    int64_t at = 0, run = -1;
    const char *ut = ann(doc, A_UTIL);
    gx_idle_sample *util = NULL;
    long n_util = 0;
    if (ut && (n_util = gx_idle_samples_parse(ut, "metadata.annotations[\"" A_UTIL "\"]", &util, &err)) < 0) {
        annotate(lm, base, &err);
        report(file, line, &err);
        return -1;
    }
    if (sa && parse_duration(sa, &at) < 0) {
        gx_errf(&err, 422, "metadata.annotations[\"" A_SUBMIT "\"]", "not a duration: \"%s\" (e.g. 0s, 90s, 5m)", sa);
        annotate(lm, base, &err);
        report(file, line, &err);
        return -1;
    }
    if (rf && parse_duration(rf, &run) < 0) {
        gx_errf(&err, 422, "metadata.annotations[\"" A_RUNFOR "\"]", "not a duration: \"%s\" (e.g. 30s, 5m)", rf);
        annotate(lm, base, &err);
        report(file, line, &err);
        return -1;
    }
    if (json_is_string(kind) && !strcmp(json_string_value(kind), "Configuration") && json_is_string(av)
        && !strncmp(json_string_value(av), "config.kueue.x-k8s.io/", 22)) {
        /* v1beta1: fairSharing.enable; v1beta2 has no enable: the block itself turns it on */
        const json_t *fs = json_object_get(doc, "fairSharing");
        if (!strcmp(json_string_value(av), "config.kueue.x-k8s.io/v1beta1")) {
            s->opts.fair_sharing = json_is_true(json_object_get(fs, "enable"));
            return 0;
        }
        if (fs && !json_is_null(fs) && !json_is_object(fs)) {
            gx_errf(&err, 422, "fairSharing", "must be a mapping (its presence turns fair sharing on)");
        } else if (json_object_get(fs, "enable")) {
            gx_errf(&err, 400, "fairSharing.enable", "unknown field \"fairSharing.enable\" (%s has no enable: "
                    "the fairSharing block itself turns fair sharing on)", json_string_value(av));
        } else {
            s->opts.fair_sharing = json_is_object(fs);
            return 0;
        }
        annotate(lm, base, &err);
        report(file, line, &err);
        return -1;
    }
    if (is_workload(doc)) {
        gx_wl_spec *spec;
        if (gx_engine_prepare(s->e, doc, &spec, &err) < 0) {
            free(util);
            annotate(lm, base, &err);
            report(file, line, &err);
            return -1;
        }
        char key[600];
        gx_engine_spec_key(spec, key, sizeof key);
        s->w = gx_xgrow(s->w, &s->capw, (size_t)s->nw + 1, sizeof *s->w);
        wl_rec *w = &s->w[s->nw];
        memset(w, 0, sizeof *w);
        w->key = gx_xstrdup(key);
        w->spec = spec;
        w->run_ms = run;
        w->util = util;
        w->n_util = n_util;
        const char *tl = json_string_value(json_object_get(json_object_get(json_object_get(doc, "metadata"), "labels"),
                                                           "gpuaas.dev/template"));
        w->tmpl = tl ? gx_xstrdup(tl) : NULL;
        w->file = file;
        w->line = line;
        event ev = {at, EV_SUBMIT, 0, s->nw, 0};
        s->nw++;
        ev_push(s, ev);
        return 0;
    }
    free(util);
    s->o = gx_xgrow(s->o, &s->capo, (size_t)s->no + 1, sizeof *s->o);
    s->o[s->no] = (obj_rec){json_incref(doc), file, line, base, gx_xstrndup(text, tlen)};
    event ev = {at, EV_APPLY, 0, s->no, 0};
    s->no++;
    ev_push(s, ev);
    return 0;
}

/* Split a file into documents at "---" lines and parse them one at a time, so a
 * 50,000-job scenario never holds more than one document's JSON. */
static int load_file(sim *s, const char *file)
{
    FILE *f = fopen(file, "rb");
    if (!f) { fprintf(stderr, "gpuaas sim scenario: %s: cannot open\n", file); return -1; }
    size_t cap = 1 << 16, n = 0;
    char *buf = gx_xmalloc(cap);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) buf = gx_xgrow(buf, &cap, cap + 1, 1);
    }
    fclose(f);
    size_t start = 0;
    int line = 1, start_line = 1;
    int rc = 0;
    for (size_t i = 0; i <= n && rc == 0; ) {
        int sep = 0;
        size_t eol = i;
        while (eol < n && buf[eol] != '\n') eol++;
        if (i < n && eol - i >= 3 && !strncmp(buf + i, "---", 3) && (eol - i == 3 || buf[i + 3] == ' ' || buf[i + 3] == '\t' || buf[i + 3] == '\r'))
            sep = 1;
        if (sep || i >= n) {
            size_t len = i - start;
            int blank = 1;
            for (size_t k = start; k < i && blank; k++)
                if (buf[k] == '#') { while (k < i && buf[k] != '\n') k++; }
                else if (buf[k] != ' ' && buf[k] != '\n' && buf[k] != '\t' && buf[k] != '\r') blank = 0;
            json_t *fast = NULL;
            if (!blank) {
                /* a document written as one JSON object (valid YAML) skips the YAML
                 * parser: generated scenarios (bench/) use this for speed */
                size_t k = start;
                while (k < i && (buf[k] == ' ' || buf[k] == '\n' || buf[k] == '\r' || buf[k] == '\t')) k++;
                if (k < i && buf[k] == '{') fast = json_loadb(buf + k, i - k, 0, NULL);
            }
            if (fast) {
                rc = take_doc(s, fast, NULL, file, start_line, start_line, buf + start, len);
                json_decref(fast);
            } else if (!blank) {
                gx_yaml_docs docs;
                gx_err err;
                gx_err_clear(&err);
                if (gx_yaml_parse(buf + start, len, &docs, &err) < 0) {
                    if (err.line > 0) err.line += start_line - 1;
                    report(file, 0, &err);
                    rc = -1;
                } else {
                    for (size_t d = 0; d < docs.n && rc == 0; d++)
                        rc = take_doc(s, docs.docs[d], docs.lines[d], file, start_line + (docs.first_line ? docs.first_line[d] - 1 : 0),
                                      start_line, buf + start, len);
                    gx_yaml_docs_free(&docs);
                }
            }
            start = eol < n ? eol + 1 : n;
            start_line = line + 1;
        }
        if (i >= n) break;
        i = eol + 1;
        line++;
    }
    free(buf);
    return rc;
}

/* ---- output ----------------------------------------------------------------------------- */

static void put_str(FILE *o, const char *s)
{
    fputc('"', o);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') { fputc('\\', o); fputc(c, o); }
        else if (c < 0x20) fprintf(o, "\\u%04x", c);
        else fputc(c, o);
    }
    fputc('"', o);
}

static void put_time(FILE *o, int64_t ms)
{
    if (ms % 1000 == 0) { fprintf(o, "%lld.0", (long long)(ms / 1000)); return; }
    char b[32];
    snprintf(b, sizeof b, "%lld.%03lld", (long long)(ms / 1000), (long long)(ms % 1000));
    size_t n = strlen(b);
    while (b[n - 1] == '0') b[--n] = 0;
    fputs(b, o);
}

static void line_out(sim *s, int64_t t, const char *what, const char *wl, const char *cq, const json_t *flavors,
                     const char *by, const char *reason)
{
    FILE *o = s->out;
    fputs("{\"t\": ", o);
    put_time(o, t);
    fputs(", \"event\": ", o); put_str(o, what);
    fputs(", \"workload\": ", o); put_str(o, wl);
    if (cq && *cq) { fputs(", \"clusterQueue\": ", o); put_str(o, cq); }
    if (flavors && json_object_size(flavors)) {
        /* resources in name order, for a stable byte-for-byte output */
        const char *keys[64];
        size_t n = 0;
        const char *k;
        json_t *v;
        json_object_foreach((json_t *)flavors, k, v) if (n < 64) keys[n++] = k;
        for (size_t i = 1; i < n; i++)
            for (size_t j = i; j > 0 && strcmp(keys[j - 1], keys[j]) > 0; j--) { const char *x = keys[j]; keys[j] = keys[j - 1]; keys[j - 1] = x; }
        fputs(", \"flavors\": {", o);
        for (size_t i = 0; i < n; i++) {
            if (i) fputs(", ", o);
            put_str(o, keys[i]);
            fputs(": ", o);
            put_str(o, json_string_value(json_object_get(flavors, keys[i])));
        }
        fputc('}', o);
    }
    if (by && *by) { fputs(", \"by\": ", o); put_str(o, by); }
    if (reason && *reason) { fputs(", \"reason\": ", o); put_str(o, reason); }
    fputs("}\n", o);
    s->last_t = t;
}

/* ---- reservations ------------------------------------------------------------------ */

#define RSV_HORIZON (8LL * 7 * 86400000LL)   /* a weekly recurrence: its first 8 weeks */

static int is_reservation(const json_t *d)
{
    const char *k = json_string_value(json_object_get(d, "kind")), *av = json_string_value(json_object_get(d, "apiVersion"));
    return k && av && !strcmp(k, "Reservation") && !strcmp(av, "gpuaas.dev/v1alpha1");
}

/* The booking's occurrences: one window, or a weekly recurrence for RSV_HORIZON from its start. */
static long rsv_occurrences(const json_t *spec, gx_rsv_window **out, gx_err *err)
{
    gx_tzwin_occ *o;
    int64_t st = 0;
    const char *sv = json_string_value(json_object_get(spec, "start"));
    if (sv && gx_time_parse(sv, &st) < 0 && parse_duration(sv, &st) < 0) st = 0;
    long n = gx_tzwin_spec(spec, 1, st, RSV_HORIZON, &o, err);
    if (n < 0) return -1;
    *out = gx_xmalloc((size_t)(n ? n : 1) * sizeof **out);
    for (long k = 0; k < n; k++) (*out)[k] = (gx_rsv_window){o[k].start, o[k].end};
    free(o);
    return n;
}

static void put_window(FILE *o, gx_rsv_window w)
{
    fputs("{\"start\": ", o); put_time(o, w.start);
    fputs(", \"end\": ", o); put_time(o, w.end);
    fputc('}', o);
}

static void refused_out(sim *s, int64_t t, const char *key, const char *cq, const gx_rsv_refusal *why)
{
    FILE *o = s->out;
    fputs("{\"t\": ", o); put_time(o, t);
    fputs(", \"event\": \"reservation-refused\", \"reservation\": ", o); put_str(o, key);
    if (cq) { fputs(", \"clusterQueue\": ", o); put_str(o, cq); }
    fputs(", \"reason\": ", o); put_str(o, why->err.msg);
    fputs(", \"conflicts\": [", o);
    for (size_t i = 0; i < why->n_conf; i++) {
        char k[300];
        snprintf(k, sizeof k, "%s/%s", why->conf[i].ns, why->conf[i].name);
        fputs(i ? ", {\"reservation\": " : "{\"reservation\": ", o); put_str(o, k);
        fputs(", \"window\": ", o); put_window(o, why->conf[i].w);
        fputc('}', o);
    }
    fputs("], \"alternatives\": [", o);
    if (why->has_before) put_window(o, why->alt_before);
    if (why->has_after) { if (why->has_before) fputs(", ", o); put_window(o, why->alt_after); }
    fputs("]}\n", o);
    s->last_t = t;
}

/* A Reservation document at t: a refusal (conflicts, a limit) is an event; a malformed
 * one is an error in the file, as for any object. */
static int apply_reservation(sim *s, obj_rec *o, int64_t t, gx_err *err)
{
    const json_t *spec = json_object_get(o->obj, "spec");
    gx_rsv_window *occ = NULL;
    long n = rsv_occurrences(spec, &occ, err);
    if (n < 0) return -1;
    gx_rsv_refusal why;
    int rc = gx_engine_reservation_apply(s->e, o->obj, occ, (size_t)n, t, &why);
    free(occ);
    if (rc == 0) return 0;
    if (!why.conflict) { *err = why.err; gx_reservation_refusal_free(&why); return -1; }
    const json_t *md = json_object_get(o->obj, "metadata");
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    char key[300];
    snprintf(key, sizeof key, "%s/%s", ns ? ns : "default", json_string_value(json_object_get(md, "name")));
    refused_out(s, t, key, json_string_value(json_object_get(spec, "clusterQueue")), &why);
    gx_reservation_refusal_free(&why);
    return 0;
}

static long rec_of(sim *s, const char *key)
{
    void *v = gx_strmap_get(&s->keys, key);
    return v ? (long)(intptr_t)v - 1 : -1;
}

static void set_cq(wl_rec *w, const char *cq)
{
    if (!cq || (w->cq && !strcmp(w->cq, cq))) return;
    free(w->cq);
    w->cq = gx_xstrdup(cq);
}

/* ---- idle policies (core/idle decides; this feeds the signal and takes the action) ---- */

static int is_idle_policy(const json_t *o)
{
    const char *k = json_string_value(json_object_get(o, "kind"));
    const char *av = json_string_value(json_object_get(o, "apiVersion"));
    return k && av && !strcmp(k, "IdlePolicy") && !strncmp(av, "gpuaas.dev/", 11);
}

/* The first policy (by name) that covers workload key, with the view's facts. */
static const gx_idle_policy *policy_of(sim *s, const char *key, const char *tmpl, int *gpus)
{
    json_t *v = gx_engine_workload(s->e, key, 0);
    const gx_idle_policy *found = NULL;
    char lq[600];
    snprintf(lq, sizeof lq, "%s/%s", json_string_value(json_object_get(v, "namespace")),
             json_string_value(json_object_get(v, "queueName")) ? json_string_value(json_object_get(v, "queueName")) : "");
    for (size_t i = 0; i < s->npol && !found; i++)
        if (gx_idle_policy_covers(s->pol[i], json_string_value(json_object_get(v, "clusterQueue")), lq, tmpl,
                                  json_string_value(json_object_get(v, "priorityClass"))))
            found = s->pol[i];
    /* GPUs it holds: the admission's nvidia.com/gpu usage over its pod sets */
    int64_t milli = 0;
    size_t i;
    json_t *psa;
    json_array_foreach(json_object_get(json_object_get(v, "admission"), "podSetAssignments"), i, psa) {
        const char *q = json_string_value(json_object_get(json_object_get(psa, "resourceUsage"), "nvidia.com/gpu"));
        int64_t m = 0;
        gx_err ignore;
        if (q && gx_quantity_parse(q, &m, "q", &ignore) == 0) milli += m;
    }
    *gpus = (int)(milli / 1000);
    json_decref(v);
    return found;
}

static void idle_line(sim *s, int64_t t, const wl_rec *w, const char *reason, int64_t since)
{
    FILE *o = s->out;
    fputs("{\"t\": ", o);
    put_time(o, t);
    fputs(", \"event\": \"idle-warned\", \"workload\": ", o);
    put_str(o, w->key);
    if (w->cq && *w->cq) { fputs(", \"clusterQueue\": ", o); put_str(o, w->cq); }
    fputs(", \"reason\": ", o);
    put_str(o, reason);
    if (since >= 0) { fputs(", \"idleSince\": ", o); put_time(o, since); }
    fputs("}\n", o);
    s->last_t = t;
}

/* Judge one admitted workload at t: warn once per admission, act per the policy, and
 * come back when the verdict may change. */
static void idle_check(sim *s, long wi, int64_t t)
{
    wl_rec *w = &s->w[wi];
    gx_wl_info info;
    if (!s->npol || gx_engine_wl_info(s->e, w->key, &info) < 0 || info.phase != GX_PHASE_ADMITTED) return;
    int gpus = 0;
    const gx_idle_policy *p = policy_of(s, w->key, w->tmpl, &gpus);
    if (!p) return;
    gx_idle_verdict v;
    gx_idle_decide(p, info.admitted_ms, w->abs, w->abs ? (size_t)w->n_util : 0, t, &v);
    if (v.kind == GX_IDLE_WARN || (v.kind == GX_IDLE_ACT && p->action == GX_IDLE_NOTIFY)) {
        if (!w->warned) idle_line(s, t, w, v.reason ? v.reason : "Idle", v.idle_since_ms);
        w->warned = 1;
    } else if (v.kind == GX_IDLE_ACT) {
        gx_err err;
        int64_t exec_end = info.max_exec_s > 0 ? info.admitted_ms + info.max_exec_s * 1000 - info.acc_ms : 0;
        double h = gx_idle_reclaimed_gpu_hours(p, info.admitted_ms, exec_end, gpus, t);
        char msg[160];
        snprintf(msg, sizeof msg, "IdlePolicy %s: %s", p->name, v.reason);
        int rc = p->action == GX_IDLE_REQUEUE ? gx_engine_requeue_back(s->e, w->key, v.reason, msg, t, &err)
                                               : gx_engine_deactivate_for(s->e, w->key, v.reason, msg, t, &err);
        if (rc < 0) return;
        w->gen++;
        s->idle_gpu_hours += h;
        if (p->action == GX_IDLE_REQUEUE) line_out(s, t, "requeued", w->key, w->cq, NULL, NULL, v.reason);
        else { line_out(s, t, "deactivated", w->key, w->cq, NULL, NULL, v.reason); s->n_deactivated++; }
        return;
    }
    if (v.next_ms != INT64_MAX) { event ev = {v.next_ms, EV_IDLE, 0, wi, w->gen}; ev_push(s, ev); }
}

/* A new admission: the signal restarts at its start. */
static void idle_admitted(sim *s, long wi, int64_t t)
{
    wl_rec *w = &s->w[wi];
    w->warned = 0;
    if (w->n_util) {
        free(w->abs);
        w->abs = gx_xreallocarray(NULL, (size_t)w->n_util, sizeof *w->abs);
        for (long i = 0; i < w->n_util; i++) w->abs[i] = (gx_idle_sample){t + w->util[i].t_ms, w->util[i].pct};
    }
    idle_check(s, wi, t);
}

/* Take an IdlePolicy (replacing one of the same name) and judge what already runs. */
static int apply_policy(sim *s, const json_t *doc, int64_t t, gx_err *err)
{
    gx_idle_policy *p;
    if (gx_idle_policy_parse(doc, &p, err) < 0) return -1;
    size_t i = 0;   /* kept by name, as the daemon keeps them: the first covering one judges */
    while (i < s->npol && strcmp(s->pol[i]->name, p->name) < 0) i++;
    if (i < s->npol && !strcmp(s->pol[i]->name, p->name)) {
        gx_idle_policy_free(s->pol[i]);
    } else {
        s->pol = gx_xgrow(s->pol, &s->cappol, s->npol + 1, sizeof *s->pol);
        memmove(s->pol + i + 1, s->pol + i, (s->npol - i) * sizeof *s->pol);
        s->npol++;
    }
    s->pol[i] = p;
    for (long k = 0; k < s->nw; k++) if (gx_strmap_get(&s->keys, s->w[k].key)) idle_check(s, k, t);
    return 0;
}

static void handle_actions(sim *s, int64_t t, gx_action *acts, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const gx_action *a = &acts[i];
        long wi = rec_of(s, a->workload);
        wl_rec *w = wi >= 0 ? &s->w[wi] : NULL;
        if (a->kind == GX_ACT_ADMIT) {
            json_t *fl = json_object();
            char buf[sizeof a->flavors];
            snprintf(buf, sizeof buf, "%s", a->flavors);
            for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
                char *eq = strchr(tok, '=');
                if (!eq) continue;
                *eq = 0;
                json_object_set_new(fl, tok, json_string(eq + 1));
            }
            if (w) set_cq(w, a->cluster_queue);
            line_out(s, t, "admitted", a->workload, a->cluster_queue, fl, NULL, NULL);
            json_decref(fl);
            s->n_admitted++;
            if (w) {
                w->gen++;
                if (w->run_ms >= 0) { event ev = {t + w->run_ms, EV_FINISH, 0, wi, w->gen}; ev_push(s, ev); }
                idle_admitted(s, wi, t);
            }
        } else if (a->kind == GX_ACT_PREEMPT) {
            if (w) w->gen++;
            if (a->by[0]) { line_out(s, t, "preempted", a->workload, a->cluster_queue, NULL, a->by, a->reason); s->n_preempted++; }
            else line_out(s, t, "requeued", a->workload, a->cluster_queue, NULL, NULL, a->reason);
        } else if (a->kind == GX_ACT_DEACTIVATE) {
            if (w) w->gen++;
            line_out(s, t, "deactivated", a->workload, a->cluster_queue, NULL, NULL, a->reason);
            s->n_deactivated++;
        } else if (a->kind == GX_ACT_RESERVATION) {
            const char *what = !strcmp(a->reason, "ReservationStarted") ? "reservation-started"
                             : !strcmp(a->reason, "ReservationEnded") ? "reservation-ended" : "reservation-released";
            FILE *o = s->out;
            fputs("{\"t\": ", o); put_time(o, t);
            fputs(", \"event\": ", o); put_str(o, what);
            fputs(", \"reservation\": ", o); put_str(o, a->workload);
            fputs(", \"clusterQueue\": ", o); put_str(o, a->cluster_queue);
            fputs("}\n", o);
            s->last_t = t;
        }
    }
}

/* Everything at instant t, then one scheduling pass. Returns -1 on a bad input. */
static int step(sim *s, int64_t t)
{
    gx_err err;
    while (s->nh && s->h[0].t == t) {
        event ev = ev_pop(s);
        if (ev.kind == EV_APPLY) {
            obj_rec *o = &s->o[ev.idx];
            if ((is_reservation(o->obj)   ? apply_reservation(s, o, t, &err)
                 : is_idle_policy(o->obj) ? apply_policy(s, o->obj, t, &err)
                                          : gx_engine_apply(s->e, o->obj, &err)) < 0) {
                /* objects are applied long after their JSON lost its line map: re-read
                 * the document's text to point at the offending line */
                gx_yaml_docs d;
                gx_err ignore;
                if (o->text && gx_yaml_parse(o->text, strlen(o->text), &d, &ignore) == 0) {
                    if (d.n == 1) gx_linemap_annotate(d.lines[0], &err);
                    gx_yaml_docs_free(&d);
                }
                if (err.line > 0) err.line += o->base - 1;
                report(o->file, o->line, &err);
                return -1;
            }
            json_decref(o->obj);
            o->obj = NULL;
            free(o->text);
            o->text = NULL;
        } else if (ev.kind == EV_IDLE) {
            if (ev.gen == s->w[ev.idx].gen) idle_check(s, ev.idx, t);
        } else if (ev.kind == EV_FINISH) {
            wl_rec *w = &s->w[ev.idx];
            if (ev.gen != w->gen) continue;
            if (gx_engine_finish(s->e, w->key, 1, NULL, t, &err) < 0) continue;
            line_out(s, t, "finished", w->key, w->cq, NULL, NULL, NULL);
            s->n_finished++;
        } else {
            wl_rec *w = &s->w[ev.idx];
            if (gx_strmap_get(&s->keys, w->key)) {
                gx_errf(&err, 409, "metadata.name", "workload %s appears twice", w->key);
                report(w->file, w->line, &err);
                return -1;
            }
            gx_wl_spec *spec = w->spec;
            w->spec = NULL;
            if (gx_engine_submit_spec(s->e, spec, t, &err) < 0) { report(w->file, w->line, &err); return -1; }
            gx_strmap_put(&s->keys, w->key, (void *)(intptr_t)(ev.idx + 1));
            set_cq(w, gx_engine_workload_cq(s->e, w->key));
            line_out(s, t, "submitted", w->key, w->cq, NULL, NULL, NULL);
        }
    }
    gx_action *acts;
    size_t n = gx_engine_schedule(s->e, t, &acts);
    handle_actions(s, t, acts, n);
    free(acts);
    return 0;
}

static const gx_opt scenario_opts[] = {
    {"fair-sharing", 0, NULL, "enable fair sharing whatever the Configuration says"},
    {"output", 'o', "FORMAT", "json (the only format: one JSON object per line)"},
    {"out", 0, "FILE", "write the events to FILE instead of stdout"},
    {"help", 'h', NULL, "this help"},
    {0},
};
static const gx_opt *const scenario_sets[] = {scenario_opts, NULL};

static void usage(FILE *f)
{
    fputs("usage: gpuaas sim scenario [--fair-sharing] [-o json] [--out FILE] FILE...\n"
          "Replay a Kueue scenario on a virtual clock through the gpuaas engine.\n"
          "FILE: multi-document YAML with Kueue objects (ResourceFlavor, ClusterQueue, Cohort,\n"
          "LocalQueue, WorkloadPriorityClass), gpuaas.dev/v1alpha1 Nodes, an optional\n"
          "config.kueue.x-k8s.io Configuration (v1beta2: a fairSharing block; v1beta1: fairSharing.enable),\n"
          "gpuaas.dev/v1alpha1 Reservations (start/end RFC 3339 or an offset such as 600s), and batch/v1 Jobs or\n"
          "Kueue Workloads annotated with gpuaas.dev/submit-at (e.g. 90s) and\n"
          "gpuaas.dev/run-for (absent = runs forever). Several files form one scenario.\n"
          "gpuaas.dev/v1alpha1 IdlePolicy documents act on the simulated utilisation signal,\n"
          "annotation gpuaas.dev/utilization (\"0s=90,600s=2\": percent from each offset after admission).\n"
          "Prints one JSON object per event, then {\"summary\": {...}}.\n", f);
    gx_opts_usage(f, scenario_sets);
}

int gx_sim_scenario_main(int argc, char **argv)
{
    gx_opt_args a;
    if (gx_opts_parse(scenario_sets, argc, argv, &a)) {
        fprintf(stderr, "gpuaas sim scenario: %s\nusage: gpuaas sim scenario [--fair-sharing] [-o json] [--out FILE] FILE...\n"
                "see gpuaas sim scenario --help\n", a.err);
        gx_opts_free(&a);
        return 2;
    }
    if (gx_opt_has(&a, "help")) {
        usage(stdout);
        gx_opts_free(&a);
        return 0;
    }
    if (!a.npos) {
        fputs("gpuaas sim scenario: no scenario FILE given\nusage: gpuaas sim scenario [--fair-sharing] [-o json] [--out FILE] FILE...\n"
              "see gpuaas sim scenario --help\n", stderr);
        gx_opts_free(&a);
        return 2;
    }
    sim s;
    memset(&s, 0, sizeof s);
    s.out = stdout;
    int rc = 0;
    /* -o is the output format everywhere in gpuaas; a file is --out. */
    const char *fmt = gx_opt_get(&a, "output");
    if (fmt && strcmp(fmt, "json")) {
        fprintf(stderr, "gpuaas sim scenario: -o: unknown output format '%s' (json; a file is --out FILE)\n", fmt);
        gx_opts_free(&a);
        return 2;
    }
    const char *outpath = gx_opt_get(&a, "out");
    if (outpath && !(s.out = fopen(outpath, "w"))) {
        fprintf(stderr, "gpuaas sim scenario: cannot write %s\n", outpath);
        gx_opts_free(&a);
        return 2;
    }
    gx_strmap_init(&s.keys);
    static char obuf[1 << 16];
    setvbuf(s.out, obuf, _IOFBF, sizeof obuf);
    /* The engine exists before the files are read (specs are parsed with it); the
     * Configuration's fair sharing flag is applied by re-creating it when needed. */
    gx_engine_opts o0 = {0};
    s.e = gx_engine_new(&o0);
    for (int i = 0; i < a.npos && rc == 0; i++) rc = load_file(&s, a.pos[i]) < 0 ? 1 : 0;
    if (rc == 0 && (s.opts.fair_sharing || gx_opt_has(&a, "fair-sharing"))) {
        s.opts.fair_sharing = 1;
        gx_engine_set_fair_sharing(s.e, 1);
    }
    int64_t now = 0;
    while (rc == 0) {
        int64_t t = INT64_MAX;
        if (s.nh) t = s.h[0].t;
        int64_t wake = gx_engine_next_wakeup(s.e, now);
        if (wake < t) t = wake;
        if (t == INT64_MAX) break;
        if (step(&s, t) < 0) rc = 1;
        now = t;
    }
    if (rc == 0) {
        fprintf(s.out, "{\"summary\": {\"admitted\": %ld, \"preempted\": %ld, \"finished\": %ld, \"pending\": %zu, \"deactivated\": %ld, \"makespan\": ",
                s.n_admitted, s.n_preempted, s.n_finished, gx_engine_count_phase(s.e, GX_PHASE_PENDING), s.n_deactivated);
        put_time(s.out, s.last_t);
        if (s.npol) fprintf(s.out, ", \"idleReclaimedGpuHours\": %.3f", s.idle_gpu_hours);
        fputs("}}\n", s.out);
    }
    fflush(s.out);
    if (s.out != stdout) fclose(s.out);
    for (long i = 0; i < s.nw; i++) {
        free(s.w[i].key); free(s.w[i].cq); free(s.w[i].util); free(s.w[i].abs); free(s.w[i].tmpl); gx_engine_spec_free(s.w[i].spec);
    }
    for (size_t i = 0; i < s.npol; i++) gx_idle_policy_free(s.pol[i]);
    free(s.pol);
    for (long i = 0; i < s.no; i++) { json_decref(s.o[i].obj); free(s.o[i].text); }
    free(s.w);
    free(s.o);
    free(s.h);
    gx_strmap_free(&s.keys);
    gx_engine_free(s.e);
    gx_opts_free(&a);
    return rc;
}
