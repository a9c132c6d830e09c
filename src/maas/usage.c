/* maas/usage: what the gateway served, for billing and for /metrics.
 * Owns: usage records (key, user, namespace, model, tier, tokens, latency, time to
 * first token, status), their batched writes to SQLite, the usage query, and the
 * gateway's metrics: Limitador's authorized_hits / authorized_calls / limited_calls
 * and OpenTelemetry GenAI's token usage, time to first token and duration histograms,
 * labelled by model and tier.
 * Also owns saving the rate-limit windows (src/store/ratelimit.c): the changed buckets
 * of keys, of users in a tier and of tiers are handed to the store's writer thread from
 * the tick at most once a second and at shutdown, and read back at start, so a restart
 * does not reset budgets.
 * Must not: touch SQLite on the request path: a request appends to memory; every 20 ms
 * the loop's tick copies the records into the store's queue, and the store's background
 * thread writes them (src/store/background.c). */
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include "lib/num.h"
#include "lib/alloc.h"
#include "lib/sbuf.h"
#include "lib/strmap.h"
#include "maas/maas_int.h"
#include "store/ratelimit.h"

#define MAX_PENDING 200000
#define MAX_SERIES 512
#define FLUSH_MS 20       /* small batches: the writer thread then never holds a core for long */
#define WINDOWS_FLUSH_MS 1000  /* rate-limit windows: what a kill -9 may lose at most */

static const double ttft_b[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10};
static const double dur_b[] = {0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92};
static const double tok_b[] = {1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304};
#define NT (sizeof ttft_b / sizeof ttft_b[0])
#define ND (sizeof dur_b / sizeof dur_b[0])
#define NK (sizeof tok_b / sizeof tok_b[0])

typedef struct hist { uint64_t b[20]; uint64_t count; double sum; } hist;

typedef struct series {     /* the histograms, by model, tier and OpenTelemetry operation */
    char model[128], tier[64];
    const char *op;            /* gen_ai.operation.name: chat, text_completion, embeddings */
    hist ttft, dur, tin, tout;
} series;

/* Limitador's counters carry the user as well (as Red Hat MaaS labels them), so that an
 * operator sees who is throttled; the histograms stay by model and tier. Bounded: past
 * MAX_USER_SERIES the rest share one series labelled "_other". */
#define MAX_USER_SERIES 4096
typedef struct useries {
    char model[128], tier[64], user[64];
    uint64_t calls, limited, hits;
} useries;

struct gx_maas_usage {
    gx_store *st;
    gx_maas_record *pend;
    size_t n, cap;
    uint64_t dropped, written;
    uint64_t over_tokens, over_requests;   /* reported past the reservation, not charged */
    int64_t last_flush;
    series *s;
    size_t ns;
    useries *us;
    size_t nus;
    gx_strmap us_by;           /* "model\x1ftier\x1fuser" -> useries * */
    gx_maas *m;                /* for the windows (set by gx_maas_windows_load) */
    int64_t win_last_flush;
    uint64_t win_saved, win_failed;
};

gx_maas_usage *gx_maas_usage_new(gx_store *st)
{
    gx_maas_usage *u = gx_xcalloc(1, sizeof *u);
    u->st = st;
    u->s = gx_xcalloc(MAX_SERIES, sizeof *u->s);
    u->us = gx_xcalloc(MAX_USER_SERIES, sizeof *u->us);
    gx_strmap_init(&u->us_by);
    return u;
}

void gx_maas_usage_free(gx_maas_usage *u)
{
    if (!u) return;
    free(u->pend);
    free(u->s);
    free(u->us);
    gx_strmap_free(&u->us_by);
    free(u);
}

/* OpenTelemetry GenAI's gen_ai.operation.name for an endpoint of the OpenAI API. */
static const char *operation_of(const char *endpoint)
{
    return !strcmp(endpoint, "chat/completions") ? "chat" : !strcmp(endpoint, "embeddings") ? "embeddings" : "text_completion";
}

static series *series_of(gx_maas_usage *u, const char *model, const char *tier, const char *endpoint)
{
    const char *op = operation_of(endpoint);
    for (size_t i = 0; i < u->ns; i++)
        if (!strcmp(u->s[i].model, model) && !strcmp(u->s[i].tier, tier) && u->s[i].op == op) return &u->s[i];
    if (u->ns == MAX_SERIES) return &u->s[MAX_SERIES - 1]; /* bounded cardinality */
    series *s = &u->s[u->ns++];
    s->op = op;
    snprintf(s->model, sizeof s->model, "%s", model);
    snprintf(s->tier, sizeof s->tier, "%s", tier);
    return s;
}

static useries *useries_of(gx_maas_usage *u, const char *model, const char *tier, const char *user)
{
    char k[128 + 64 + 64 + 2];
    size_t a = strlen(model), b = strlen(tier), c = strlen(user);
    if (a > 127) a = 127;
    if (b > 63) b = 63;
    if (c > 63) c = 63;
    memcpy(k, model, a);
    k[a] = 0x1f;
    memcpy(k + a + 1, tier, b);
    k[a + 1 + b] = 0x1f;
    memcpy(k + a + b + 2, user, c);
    k[a + b + c + 2] = 0;
    useries *s = gx_strmap_get(&u->us_by, k);
    if (s) return s;
    if (u->nus == MAX_USER_SERIES - 1) {   /* the last slot is the overflow series */
        s = &u->us[MAX_USER_SERIES - 1];
        if (!*s->model) { strcpy(s->model, "_other"); strcpy(s->tier, "_other"); strcpy(s->user, "_other"); }
        return s;
    }
    s = &u->us[u->nus++];
    snprintf(s->model, sizeof s->model, "%s", model);
    snprintf(s->tier, sizeof s->tier, "%s", tier);
    snprintf(s->user, sizeof s->user, "%s", user);
    gx_strmap_put(&u->us_by, k, s);
    return s;
}

static void observe(hist *h, const double *bounds, size_t nb, double v)
{
    for (size_t i = 0; i < nb; i++)
        if (v <= bounds[i]) h->b[i]++;
    h->count++;
    h->sum += v;
}

/* Queue a record for the store's writer. */
static void pend(gx_maas_usage *u, const gx_maas_record *r)
{
    if (u->n == MAX_PENDING) { u->dropped++; return; } /* the store is stuck: keep serving */
    u->pend = gx_xgrow(u->pend, &u->cap, u->n + 1, sizeof *u->pend);
    u->pend[u->n++] = *r;
}

void gx_maas_usage_add(gx_maas_usage *u, const gx_maas_record *r)
{
    series *s = series_of(u, r->model, r->tier, r->endpoint);
    if (r->ttft_s >= 0) observe(&s->ttft, ttft_b, NT, r->ttft_s);
    observe(&s->dur, dur_b, ND, r->latency_s);
    if (r->prompt + r->completion > 0) {
        observe(&s->tin, tok_b, NK, (double)r->prompt);
        observe(&s->tout, tok_b, NK, (double)r->completion);
    }
    useries *us = useries_of(u, r->model, r->tier, r->user);
    us->calls++;
    us->hits += (uint64_t)(r->prompt + r->completion);
    pend(u, r);
}

void gx_maas_usage_refused(gx_maas_usage *u, const gx_maas_record *r)
{
    if (r->status == 429) useries_of(u, r->model, r->tier, r->user)->limited++;
    pend(u, r);
}

void gx_maas_usage_flush(gx_maas_usage *u, int64_t now, int force)
{
    if (!u->n || (!force && now - u->last_flush < FLUSH_MS)) return;
    u->last_flush = now;
    gx_store_usage *rows = gx_xcalloc(u->n, sizeof *rows);
    for (size_t i = 0; i < u->n; i++) {
        const gx_maas_record *r = &u->pend[i];
        rows[i] = (gx_store_usage){.ts_ms = r->ts_ms, .key_id = r->key_id, .user = r->user, .ns = r->ns,
                                   .model = r->model, .tier = r->tier, .endpoint = r->endpoint,
                                   .prompt = r->prompt, .completion = r->completion,
                                   .latency_us = (int64_t)(r->latency_s * 1e6),
                                   .ttft_us = r->ttft_s >= 0 ? (int64_t)(r->ttft_s * 1e6) : -1,
                                   .estimated = r->estimated, .stream = r->stream, .status = r->status};
    }
    gx_err e;
    gx_err_clear(&e);
    if (gx_store_queue_usage(u->st, rows, u->n, &e)) {
        fprintf(stderr, "gpuaas: gateway: writing %zu usage records failed (will retry): %s\n", u->n, e.msg);
    } else {
        u->written += u->n;
        u->n = 0;
    }
    free(rows);
}

json_t *gx_maas_usage_query(gx_maas_usage *u, const char *group_by, int64_t since_ms, const char *user, gx_err *err)
{
    gx_maas_usage_flush(u, 0, 1); /* the answer includes what was served a moment ago */
    gx_store_sync_usage(u->st);
    return gx_store_usage_summary(u->st, group_by, since_ms, user, err);
}

/* ---- rate-limit windows across restarts ------------------------------------------------ */

#define TIERS_FOREACH(m, t) \
    for (size_t i_ = 0; i_ < (m)->tiers.cap; i_++) \
        if ((m)->tiers.keys[i_] && (m)->tiers.keys[i_] != (char *)1 && ((t) = (m)->tiers.vals[i_]))

/* The key's bucket counts against its tier's dirty flag (admit and settle set both). */
static int key_dirty(gx_maas *m, const gx_maas_key *key)
{
    const gx_maas_tier *t = gx_strmap_get(&m->tiers, key->tier);
    return key->bucket.dirty && (!t || t->dirty);
}

#define USERS_FOREACH(t, ub) \
    for (size_t j_ = 0; j_ < (t)->user_buckets.cap; j_++) \
        if ((t)->user_buckets.keys[j_] && (t)->user_buckets.keys[j_] != (char *)1 && ((ub) = (t)->user_buckets.vals[j_]))

/* The changed user buckets of a tier (admit and settle set the tier's dirty flag too). */
static size_t users_dirty(gx_maas_tier *t)
{
    size_t n = 0;
    gx_maas_user_bucket *ub;
    if (t->dirty) USERS_FOREACH(t, ub) n += ub->b.dirty;
    return n;
}

/* How many buckets wait to be saved; the scan of keys and users only when a tier is dirty. */
static size_t unsaved(gx_maas *m)
{
    if (!m) return 0;
    size_t n = 0;
    int any = 0;
    gx_maas_tier *t;
    TIERS_FOREACH(m, t) { any |= t->dirty; n += t->bucket.dirty + users_dirty(t); }
    if (!any) return 0;
    for (size_t i = 0; i < gx_maas_keys_count(m->keys); i++) n += key_dirty(m, gx_maas_keys_at(m->keys, i));
    return n;
}

typedef struct rows { gx_store_rate_window *r; size_t n, cap; } rows;

static void add_row(rows *w, const char *scope, const char *name, const char *kind, int64_t len, int64_t start,
                    int64_t used, int64_t now)
{
    if (len <= 0 || start + len <= now) return; /* empty slot, or a window already over */
    w->r = gx_xgrow(w->r, &w->cap, w->n + 1, sizeof *w->r);
    w->r[w->n++] = (gx_store_rate_window){scope, name, kind, len, start, used};
}

static void add_bucket(rows *w, const char *scope, const char *name, const gx_maas_bucket *b, int64_t now)
{
    for (int i = 0; i < GX_MAAS_WIN; i++) {
        add_row(w, scope, name, "requests", b->req_len[i], b->req_start[i], b->req_used[i], now);
        add_row(w, scope, name, "tokens", b->tok_len[i], b->tok_start[i], b->tok_used[i], now);
    }
}

void gx_maas_windows_flush(gx_maas *m, int64_t now, int force)
{
    gx_maas_usage *u = m->usage;
    if (!u || (!force && now - u->win_last_flush < WINDOWS_FLUSH_MS)) return;
    int any = 0;
    gx_maas_tier *t;
    TIERS_FOREACH(m, t) any |= t->dirty;
    if (!any) return;
    u->win_last_flush = now;
    rows w = {0};
    /* a user's bucket is saved as "<tier>/<user>": neither name can hold a '/' (both are
     * DNS labels); the names live until the store has copied the rows */
    size_t nu = 0, k = 0;
    TIERS_FOREACH(m, t) nu += users_dirty(t);
    typedef char user_name[sizeof t->name + sizeof ((gx_maas_user_bucket *)0)->user];
    user_name *names = nu ? gx_xcalloc(nu, sizeof *names) : NULL;
    TIERS_FOREACH(m, t) {
        if (!t->dirty) continue;
        if (t->bucket.dirty) add_bucket(&w, "tier", t->name, &t->bucket, now);
        gx_maas_user_bucket *ub;
        USERS_FOREACH(t, ub) {
            if (!ub->b.dirty || k == nu) continue;
            snprintf(names[k], sizeof names[k], "%s/%s", t->name, ub->user);
            add_bucket(&w, "user", names[k++], &ub->b, now);
        }
    }
    for (size_t i = 0; i < gx_maas_keys_count(m->keys); i++) {
        gx_maas_key *key = gx_maas_keys_at(m->keys, i);
        if (key_dirty(m, key)) add_bucket(&w, "key", key->id, &key->bucket, now);
    }
    gx_err e;
    gx_err_clear(&e);
    if (gx_store_queue_rate_windows(u->st, w.r, w.n, &e)) {
        u->win_failed++;
        fprintf(stderr, "gpuaas: gateway: saving %zu rate-limit windows failed (will retry): %s\n", w.n, e.msg);
    } else {
        u->win_saved += w.n;
        for (size_t i = 0; i < gx_maas_keys_count(m->keys); i++) gx_maas_keys_at(m->keys, i)->bucket.dirty = 0;
        TIERS_FOREACH(m, t) {
            gx_maas_user_bucket *ub;
            USERS_FOREACH(t, ub) ub->b.dirty = 0;
            t->dirty = t->bucket.dirty = 0;
        }
    }
    free(w.r);
    free(names);
}

/* The bucket a saved "<tier>/<user>" names, made in the tier's placeholder as for
 * "tier" (the Tier's apply keeps it); NULL when the name is not of that form. */
static gx_maas_bucket *user_bucket_of(gx_maas *m, const char *name)
{
    const char *slash = strchr(name, '/');
    char tier[sizeof ((gx_maas_tier *)0)->name];
    if (!slash || slash == name || (size_t)(slash - name) >= sizeof tier || !slash[1] ||
        strlen(slash + 1) >= sizeof ((gx_maas_user_bucket *)0)->user)
        return NULL;
    memcpy(tier, name, (size_t)(slash - name));
    tier[slash - name] = 0;
    return &gx_maas_tier_user_ensure(gx_maas_tier_ensure(m, tier), slash + 1)->b;
}

void gx_maas_windows_load(gx_maas *m, int64_t now)
{
    m->usage->m = m;
    gx_err e;
    gx_err_clear(&e);
    json_t *all = gx_store_rate_windows(m->usage->st, now, &e);
    if (!all) {
        fprintf(stderr, "gpuaas: gateway: reading saved rate-limit windows failed (budgets start afresh): %s\n", e.msg);
        return;
    }
    size_t i, n = 0;
    json_t *r;
    json_array_foreach(all, i, r) {
        const char *scope = json_string_value(json_object_get(r, "scope"));
        const char *name = json_string_value(json_object_get(r, "name"));
        const char *kind = json_string_value(json_object_get(r, "kind"));
        gx_maas_bucket *b = NULL;
        if (!strcmp(scope, "key")) {
            gx_maas_key *key = gx_maas_keys_get(m->keys, name);
            if (key) b = &key->bucket;
        } else if (!strcmp(scope, "tier") && strlen(name) < sizeof ((gx_maas_tier *)0)->name) {
            /* Tiers are applied after this; a placeholder (not present) holds the counters
             * and the Tier's apply fills in the rest (gx_maas_apply reuses it). */
            b = &gx_maas_tier_ensure(m, name)->bucket;
        } else if (!strcmp(scope, "user")) {
            b = user_bucket_of(m, name);
        }
        if (b && !gx_maas_bucket_restore(b, !strcmp(kind, "tokens"), json_integer_value(json_object_get(r, "windowMs")),
                                         json_integer_value(json_object_get(r, "startMs")),
                                         json_integer_value(json_object_get(r, "used"))))
            n++;
    }
    json_decref(all);
    if (n) fprintf(stderr, "gpuaas: gateway: %zu rate-limit windows restored\n", n);
}

void gx_maas_usage_over(gx_maas_usage *u, int64_t tokens)
{
    u->over_tokens += (uint64_t)tokens;
    u->over_requests++;
}

/* ---- /metrics ------------------------------------------------------------------------ */

static void hist_put(gx_sbuf *o, const char *name, const char *labels, const hist *h, const double *b, size_t nb)
{
    char x[GX_NUM_MAX];
    for (size_t i = 0; i < nb; i++)
        gx_sbuf_printf(o, "%s_bucket{%s,le=\"%s\"} %llu\n", name, labels, gx_num_fmt(b[i], x, sizeof x), (unsigned long long)h->b[i]);
    gx_sbuf_printf(o, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels, (unsigned long long)h->count);
    gx_sbuf_printf(o, "%s_sum{%s} %s\n%s_count{%s} %llu\n", name, labels, gx_num_fmt(h->sum, x, sizeof x), name, labels,
                   (unsigned long long)h->count);
}

char *gx_maas_usage_metrics(gx_maas_usage *u, char *text)
{
    gx_sbuf o = {text, text ? strlen(text) : 0, text ? strlen(text) + 1 : 0};
    if (!o.p) { o.cap = 4096; o.p = gx_xcalloc(1, o.cap); }
    char l[600];
    static const struct { const char *name, *help; size_t off; } lim[] = {
        {"authorized_calls", "Gateway requests admitted (Limitador's name)", offsetof(useries, calls)},
        {"limited_calls", "Gateway requests refused by a rate limit (429)", offsetof(useries, limited)},
        {"authorized_hits", "Tokens charged (prompt + completion)", offsetof(useries, hits)}};
    for (size_t k = 0; k < sizeof lim / sizeof lim[0]; k++) {
        gx_sbuf_printf(&o, "# HELP %s %s\n# TYPE %s counter\n", lim[k].name, lim[k].help, lim[k].name);
        for (size_t i = 0; i < u->nus + (u->us[MAX_USER_SERIES - 1].model[0] ? 1 : 0); i++) {
            const useries *s = i < u->nus ? &u->us[i] : &u->us[MAX_USER_SERIES - 1];
            gx_sbuf_printf(&o, "%s{model=\"%s\",tier=\"%s\",user=\"%s\"} %llu\n", lim[k].name, s->model, s->tier, s->user,
                           (unsigned long long)*(const uint64_t *)((const char *)s + lim[k].off));
        }
    }
    /* OpenTelemetry GenAI's attributes in their Prometheus form (dots as underscores);
     * model and tier stay for the dashboards written before them. The provider is
     * "openai": the gateway speaks the OpenAI API to every upstream. */
    static const struct { const char *name, *help; } fam[] = {
        {"gen_ai_client_token_usage", "Tokens per request by type (OpenTelemetry GenAI gen_ai.client.token.usage)"},
        {"gen_ai_server_time_to_first_token_seconds", "Time to the first byte of the answer (gen_ai.server.time_to_first_token)"},
        {"gen_ai_server_request_duration_seconds", "Request duration through the gateway (gen_ai.server.request.duration)"}};
    for (size_t f = 0; f < sizeof fam / sizeof fam[0]; f++) {
        gx_sbuf_printf(&o, "# HELP %s %s\n# TYPE %s histogram\n", fam[f].name, fam[f].help, fam[f].name);
        for (size_t i = 0; i < u->ns; i++) {
            const series *s = &u->s[i];
            int n = snprintf(l, sizeof l, "gen_ai_operation_name=\"%s\",gen_ai_provider_name=\"openai\",gen_ai_request_model=\"%s\","
                             "model=\"%s\",tier=\"%s\"", s->op ? s->op : "chat", s->model, s->model, s->tier);
            if (f == 1) hist_put(&o, fam[f].name, l, &s->ttft, ttft_b, NT);
            if (f == 2) hist_put(&o, fam[f].name, l, &s->dur, dur_b, ND);
            if (f) continue;
            snprintf(l + n, sizeof l - (size_t)n, ",gen_ai_token_type=\"input\"");
            hist_put(&o, fam[f].name, l, &s->tin, tok_b, NK);
            snprintf(l + n, sizeof l - (size_t)n, ",gen_ai_token_type=\"output\"");
            hist_put(&o, fam[f].name, l, &s->tout, tok_b, NK);
        }
    }
    gx_sbuf_printf(&o, "# HELP gpuaas_gateway_usage_records_pending Usage records not yet written\n# TYPE gpuaas_gateway_usage_records_pending gauge\n"
            "gpuaas_gateway_usage_records_pending %zu\n", u->n);
    gx_sbuf_printf(&o, "# HELP gpuaas_gateway_rate_limit_buckets_unsaved Keys, users and tiers whose rate-limit windows "
            "changed since the last save (saved each second)\n# TYPE gpuaas_gateway_rate_limit_buckets_unsaved gauge\n"
            "gpuaas_gateway_rate_limit_buckets_unsaved %zu\n", unsaved(u->m));
    gx_sbuf_printf(&o, "# HELP gpuaas_gateway_rate_limit_windows_saved_total Rate-limit windows handed to the store's writer\n"
            "# TYPE gpuaas_gateway_rate_limit_windows_saved_total counter\ngpuaas_gateway_rate_limit_windows_saved_total %llu\n"
            "# HELP gpuaas_gateway_rate_limit_save_failures_total Failed saves of rate-limit windows (retried)\n"
            "# TYPE gpuaas_gateway_rate_limit_save_failures_total counter\ngpuaas_gateway_rate_limit_save_failures_total %llu\n",
            (unsigned long long)u->win_saved, (unsigned long long)u->win_failed);
    gx_sbuf_printf(&o, "# HELP gpuaas_store_rows_pending Usage records and rate-limit windows queued for the store's "
            "writer thread, not yet committed\n# TYPE gpuaas_store_rows_pending gauge\ngpuaas_store_rows_pending %zu\n",
            gx_store_pending(u->st));
    gx_sbuf_printf(&o, "# HELP gpuaas_gateway_tokens_over_reservation_total Tokens an upstream reported past what "
            "its request reserved, not charged (the charge stops at the reservation)\n"
            "# TYPE gpuaas_gateway_tokens_over_reservation_total counter\ngpuaas_gateway_tokens_over_reservation_total %llu\n"
            "# HELP gpuaas_gateway_requests_over_reservation_total Requests whose reported usage passed their reservation\n"
            "# TYPE gpuaas_gateway_requests_over_reservation_total counter\ngpuaas_gateway_requests_over_reservation_total %llu\n",
            (unsigned long long)u->over_tokens, (unsigned long long)u->over_requests);
    gx_sbuf_printf(&o, "# HELP gpuaas_gateway_usage_records_dropped_total Usage records dropped (store unavailable)\n"
            "# TYPE gpuaas_gateway_usage_records_dropped_total counter\ngpuaas_gateway_usage_records_dropped_total %llu\n",
        (unsigned long long)u->dropped);
    return o.p;
}
