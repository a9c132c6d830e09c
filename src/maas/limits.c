/* maas/limits: tiers and their budgets; admission by reservation.
 * Owns: parsing Tier objects, the fixed windows of requests and tokens (independent
 * of each other), reservation at admission and settlement afterwards.
 * Must not: do I/O or read a clock: "now" is passed in, so the unit tests drive it.
 * Exactness: an admission checks used + reserved + cost <= limit for every window of
 * the key, of its user in the tier (spec.userLimits) and of the tier, then takes all of
 * them at once (one thread: no race), and a request is never charged more than it
 * reserved, so however many requests race, the tokens charged in a window never pass its
 * limit (the reservation is the worst case: the prompt's bound, gx_maas_prompt_bound,
 * plus the grant, which proxy.c writes into the body it forwards; what an upstream
 * reports past the reservation is not charged, gx_maas_charge_cap).
 * Grants: a request that names a completion limit reserves its prompt plus min(limit,
 * cap) per completion or is refused; one that names none is granted what every window
 * has left, up to the cap, computed and reserved in the same call.
 * Restarts: admission and settlement mark the buckets dirty; usage.c saves them from
 * the tick (never here, on the request path) and gx_maas_bucket_restore puts them back. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/alloc.h"
#include "maas/maas_int.h"
#include "lib/gxtime.h"
#include "lib/sbuf.h"

/* Appends v and unit at p, within end; returns the new end (stays put when full). */
static char *put_part(char *p, char *end, int64_t v, const char *unit)
{
    char tmp[24];
    const char *d = gx_fmt_u64(tmp, sizeof tmp, (uint64_t)v);
    size_t dn = strlen(d), un = strlen(unit);
    if ((size_t)(end - p) <= dn + un) return p;
    memcpy(p, d, dn);
    memcpy(p + dn, unit, un + 1);
    return p + dn + un;
}

/* OpenAI's reset format (12ms, 7s, 1m12s, 2h3m4s). Every answer carries two, so no
 * snprintf (it showed in the gateway's profile). */
void gx_maas_fmt_reset(int64_t ms, char *out, size_t n)
{
    char *p = out, *end = out + n;
    if (!n) return;
    *p = 0;
    if (ms < 0) ms = 0;
    if (ms < 1000) { put_part(p, end, ms, "ms"); return; }
    if (ms < 60000) { put_part(p, end, (ms + 999) / 1000, "s"); return; }
    if (ms >= 3600000) p = put_part(p, end, ms / 3600000, "h");
    p = put_part(p, end, ms % 3600000 / 60000, "m");
    put_part(p, end, (ms % 60000 + 999) / 1000, "s");
}

/* requestsPerMinute / tokensPerDay ... and the general form [{limit, window}]. */
static const struct { const char *suffix; int64_t ms; } per[] = {
    {"PerSecond", 1000}, {"PerMinute", 60000}, {"PerHour", 3600000}, {"PerDay", 86400000}, {NULL, 0}};

static int add_window(gx_maas_wspec *w, int *n, int64_t limit, int64_t len, const char *field, gx_err *err)
{
    if (*n >= GX_MAAS_WIN) return gx_errf(err, 422, field, "at most %d windows per kind", GX_MAAS_WIN);
    if (limit < 0 || limit > 1000000000000LL) return gx_errf(err, 422, field, "limit must be between 0 and 1e12");
    w[*n].limit = limit;
    w[*n].len_ms = len;
    (*n)++;
    return 0;
}

static int parse_limits(const json_t *lim, gx_maas_limits *l, const char *where, gx_err *err)
{
    memset(l, 0, sizeof *l);
    if (!lim) return 0;
    if (!json_is_object(lim)) return gx_errf(err, 422, where, "must be a mapping");
    const char *k;
    json_t *v;
    char field[160];
    json_object_foreach((json_t *)lim, k, v) {
        snprintf(field, sizeof field, "%s.%s", where, k);
        int done = 0;
        for (int i = 0; per[i].suffix && !done; i++) {
            char rq[64], tk[64];
            snprintf(rq, sizeof rq, "requests%s", per[i].suffix);
            snprintf(tk, sizeof tk, "tokens%s", per[i].suffix);
            int isr = !strcmp(k, rq), ist = !strcmp(k, tk);
            if (!isr && !ist) continue;
            if (!json_is_integer(v)) return gx_errf(err, 422, field, "must be an integer");
            if (add_window(isr ? l->req : l->tok, isr ? &l->nreq : &l->ntok, json_integer_value(v), per[i].ms, field, err))
                return -1;
            done = 1;
        }
        if (done) continue;
        if (!strcmp(k, "maxConcurrentRequests")) {
            if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1000000)
                return gx_errf(err, 422, field, "must be an integer between 0 and 1000000");
            l->max_concurrent = (int)json_integer_value(v);
        } else if (!strcmp(k, "requests") || !strcmp(k, "tokens")) {
            int isr = !strcmp(k, "requests");
            if (!json_is_array(v)) return gx_errf(err, 422, field, "must be a list of {limit, window}");
            size_t i;
            json_t *x;
            json_array_foreach(v, i, x) {
                json_t *li = json_object_get(x, "limit");
                int64_t len = gx_duration_parse(json_string_value(json_object_get(x, "window")));
                snprintf(field, sizeof field, "%s.%s[%zu]", where, k, i);
                if (!json_is_integer(li) || len <= 0)
                    return gx_errf(err, 422, field, "needs limit (integer) and window (30s, 1m, 1h, 1d)");
                if (add_window(isr ? l->req : l->tok, isr ? &l->nreq : &l->ntok, json_integer_value(li), len, field, err))
                    return -1;
            }
        } else {
            return gx_errf(err, 422, field, "unknown limit %s (requestsPerMinute, tokensPerMinute, ...PerSecond/Hour/Day, "
                           "requests/tokens: [{limit, window}], maxConcurrentRequests)", k);
        }
    }
    return 0;
}

int gx_maas_tier_parse(const json_t *doc, gx_maas_tier *t, gx_err *err)
{
    const json_t *spec = json_object_get(doc, "spec");
    if (spec && !json_is_object(spec)) return gx_errf(err, 422, "spec", "must be a mapping");
    gx_maas_limits a, b, u;
    if (parse_limits(json_object_get(spec, "limits"), &a, "spec.limits", err)) return -1;
    if (parse_limits(json_object_get(spec, "userLimits"), &u, "spec.userLimits", err)) return -1;
    if (parse_limits(json_object_get(spec, "sharedLimits"), &b, "spec.sharedLimits", err)) return -1;
    int64_t life = 90LL * 86400000;
    const json_t *ml = json_object_get(spec, "maxKeyLifetime");
    if (!ml) ml = json_object_get(json_object_get(spec, "limits"), "maxKeyLifetime");
    if (ml && (life = gx_duration_parse(json_string_value(ml))) <= 0)
        return gx_errf(err, 422, "spec.maxKeyLifetime", "must be a duration such as 30d, 12h");
    int64_t mt = 4096;
    const json_t *x = json_object_get(spec, "maxTokensPerRequest");
    if (x) {
        if (!json_is_integer(x) || json_integer_value(x) < 1 || json_integer_value(x) > 10000000)
            return gx_errf(err, 422, "spec.maxTokensPerRequest", "must be an integer between 1 and 10000000");
        mt = json_integer_value(x);
    }
    const json_t *us = json_object_get(spec, "users"), *ns = json_object_get(spec, "namespaces");
    if ((us && !json_is_array(us)) || (ns && !json_is_array(ns)))
        return gx_errf(err, 422, us && !json_is_array(us) ? "spec.users" : "spec.namespaces", "must be a list of names");
    if (!t) return 0;
    t->per_key = a;
    t->per_user = u;
    t->shared = b;
    t->max_key_life_ms = life;
    t->max_tokens = mt;
    json_decref(t->users);
    json_decref(t->namespaces);
    t->users = us ? json_deep_copy(us) : NULL;
    t->namespaces = ns ? json_deep_copy(ns) : NULL;
    return 0;
}

/* Line a bucket's slots up with the limit's windows, matched by length: a bucket read
 * back at start, or one of a tier whose windows were changed, keeps the counts of the
 * windows that still exist, whatever their order; the others start empty. */
static void align(int n, const gx_maas_wspec *w, int64_t *len, int64_t *start, int64_t *used)
{
    int64_t ol[GX_MAAS_WIN], os[GX_MAAS_WIN], ou[GX_MAAS_WIN];
    memcpy(ol, len, sizeof ol);
    memcpy(os, start, sizeof os);
    memcpy(ou, used, sizeof ou);
    for (int i = 0; i < GX_MAAS_WIN; i++) {
        len[i] = i < n ? w[i].len_ms : 0;
        start[i] = used[i] = 0;
        for (int j = 0; i < n && j < GX_MAAS_WIN; j++)
            if (ol[j] == w[i].len_ms) { start[i] = os[j]; used[i] = ou[j]; ol[j] = -1; break; }
    }
}

static int aligned(int n, const gx_maas_wspec *w, const int64_t *len)
{
    for (int i = 0; i < n; i++)
        if (len[i] != w[i].len_ms) return 0;
    return 1;
}

/* Start a new window when now has moved past the current one. */
static void roll(const gx_maas_limits *l, gx_maas_bucket *b, int64_t now)
{
    if (!aligned(l->nreq, l->req, b->req_len)) align(l->nreq, l->req, b->req_len, b->req_start, b->req_used);
    if (!aligned(l->ntok, l->tok, b->tok_len)) align(l->ntok, l->tok, b->tok_len, b->tok_start, b->tok_used);
    for (int i = 0; i < l->nreq; i++) {
        int64_t start = now - now % l->req[i].len_ms;
        if (b->req_start[i] != start) { b->req_start[i] = start; b->req_used[i] = 0; }
    }
    for (int i = 0; i < l->ntok; i++) {
        int64_t start = now - now % l->tok[i].len_ms;
        if (b->tok_start[i] != start) { b->tok_start[i] = start; b->tok_used[i] = 0; }
    }
}

int gx_maas_bucket_restore(gx_maas_bucket *b, int tokens, int64_t len_ms, int64_t start_ms, int64_t used)
{
    int64_t *len = tokens ? b->tok_len : b->req_len;
    if (len_ms <= 0 || used < 0) return -1;
    for (int i = 0; i < GX_MAAS_WIN; i++) {
        if (len[i] && len[i] != len_ms) continue;
        len[i] = len_ms;
        (tokens ? b->tok_start : b->req_start)[i] = start_ms;
        (tokens ? b->tok_used : b->req_used)[i] = used;
        return 0;
    }
    return -1;
}

/* One budget an admission checks: the key's (spec.limits), the user's across their keys
 * of the tier (spec.userLimits) or the whole tier's (spec.sharedLimits). An admission
 * walks them in that order; who names the subject of a refusal. */
enum { WHO_KEY, WHO_USER, WHO_TIER };
typedef struct subject {
    const gx_maas_limits *l;
    gx_maas_bucket *b;
    int who;
    const char *tier, *user;
} subject;

/* The budgets of a request: the user's only when the tier has userLimits and a bucket
 * was found for them (proxy.c passes NULL otherwise). Returns how many. */
static int subjects_of(gx_maas_tier *t, gx_maas_bucket *kb, gx_maas_user_bucket *ub, subject *s)
{
    int n = 0;
    s[n++] = (subject){&t->per_key, kb, WHO_KEY, t->name, NULL};
    if (ub) s[n++] = (subject){&t->per_user, &ub->b, WHO_USER, t->name, ub->user};
    s[n++] = (subject){&t->shared, &t->bucket, WHO_TIER, t->name, NULL};
    return n;
}

/* Whose limit a refusal names. Formatted only when a request is refused (an admission
 * runs on every request). */
static const char *who_of(char *out, size_t n, const subject *s)
{
    if (s->who == WHO_USER) snprintf(out, n, "user %s (tier %s, all their keys)", s->user, s->tier);
    else snprintf(out, n, s->who == WHO_TIER ? "tier %s (all its keys)" : "this key (tier %s)", s->tier);
    return out;
}

/* The window a refusal names: its headers are that window's, not the tightest one's. */
typedef struct refusal { int kind; int64_t lim, rem, reset_ms; } refusal;   /* kind: 0 none, 1 requests, 2 tokens */

static void refuse_req(const subject *s, int i, int64_t now, gx_maas_verdict *v, refusal *r)
{
    const gx_maas_limits *l = s->l;
    const gx_maas_bucket *b = s->b;
    char who[160];
    v->result = GX_MAAS_LIM_REQUESTS;
    v->never = l->req[i].limit < 1;
    v->retry_ms = b->req_start[i] + l->req[i].len_ms - now;
    *r = (refusal){1, l->req[i].limit, l->req[i].limit - b->req_used[i], v->retry_ms};
    snprintf(v->msg, sizeof v->msg, "Rate limit reached for %s on requests per %llds: Limit %lld, Used %lld. %s",
             who_of(who, sizeof who, s), (long long)(l->req[i].len_ms / 1000), (long long)l->req[i].limit,
             (long long)b->req_used[i], v->never ? "No request is allowed." : "");
    if (!v->never) {
        size_t k = strlen(v->msg);
        snprintf(v->msg + k, sizeof v->msg - k, "Please try again in %.3fs.", (double)v->retry_ms / 1000);
    }
}

/* Why a request is larger than a window's whole limit, and what to change. */
static void too_big_hint(const gx_maas_ask *a, int64_t limit, char *out, size_t n)
{
    if (!a->choices)
        snprintf(out, n, "shorten the input");
    else if (a->prompt + a->choices > limit)
        snprintf(out, n, "shorten the prompt (up to %lld tokens)%s", (long long)a->prompt, a->choices > 1 ? " or lower n" : "");
    else
        snprintf(out, n, "lower max_tokens to at most %lld", (long long)((limit - a->prompt) / a->choices));
}

static void refuse_tok(const subject *s, int i, const gx_maas_ask *a, int64_t cost, int never, int64_t now,
                       gx_maas_verdict *v, refusal *r)
{
    const gx_maas_limits *l = s->l;
    const gx_maas_bucket *b = s->b;
    char who[160], hint[96] = "";
    int64_t used = b->tok_used[i] + b->tok_reserved;
    v->result = never ? GX_MAAS_LIM_TOO_BIG : GX_MAAS_LIM_TOKENS;
    v->never = never;
    v->retry_ms = b->tok_start[i] + l->tok[i].len_ms - now;
    *r = (refusal){2, l->tok[i].limit, l->tok[i].limit - used, v->retry_ms};
    if (!never && b->tok_reserved && v->retry_ms > 1000) v->retry_ms = 1000; /* in-flight requests may give tokens back */
    if (never) too_big_hint(a, l->tok[i].limit, hint, sizeof hint);
    snprintf(v->msg, sizeof v->msg, "Rate limit reached for %s on tokens per %llds: Limit %lld, Used %lld, "
             "Requested %lld.%s%s%s", who_of(who, sizeof who, s), (long long)(l->tok[i].len_ms / 1000),
             (long long)l->tok[i].limit, (long long)used, (long long)cost,
             never ? " The request alone is larger than the limit: " : " Please try again later.", hint, never ? "." : "");
}

/* Refused for good: a request window that allows none, or a token window whose whole
 * limit is less than the least this request can cost (least: what a request that names
 * no limit costs with one token per completion). Checked on every window of every
 * budget before anything else, so that a client is never told to retry what cannot
 * succeed because a shorter window happened to refuse first. */
static int never_fits(const subject *s, const gx_maas_ask *a, int64_t least, int64_t now, gx_maas_verdict *v,
                      refusal *r)
{
    for (int i = 0; i < s->l->nreq; i++)
        if (s->l->req[i].limit < 1) { refuse_req(s, i, now, v, r); return -1; }
    for (int i = 0; i < s->l->ntok; i++)
        if (least > s->l->tok[i].limit) { refuse_tok(s, i, a, least, 1, now, v, r); return -1; }
    return 0;
}

/* Would this request fit now? On a refusal, fills the verdict and *r. */
static int check(const subject *s, const gx_maas_ask *a, int64_t cost, int64_t now, gx_maas_verdict *v, refusal *r)
{
    const gx_maas_limits *l = s->l;
    const gx_maas_bucket *b = s->b;
    char who[160];
    if (l->max_concurrent && b->inflight >= l->max_concurrent) {
        v->result = GX_MAAS_LIM_CONCURRENCY;
        v->retry_ms = 1000;
        snprintf(v->msg, sizeof v->msg, "Rate limit reached for %s on concurrent requests: limit %d, in flight %d. "
                 "Please retry when one ends.", who_of(who, sizeof who, s), l->max_concurrent, b->inflight);
        return -1;
    }
    for (int i = 0; i < l->nreq; i++)
        if (b->req_used[i] + 1 > l->req[i].limit) { refuse_req(s, i, now, v, r); return -1; }
    for (int i = 0; i < l->ntok; i++)
        if (b->tok_used[i] + b->tok_reserved + cost > l->tok[i].limit) {
            refuse_tok(s, i, a, cost, 0, now, v, r);
            return -1;
        }
    return 0;
}

/* The tightest window of each kind (least remaining) in one bucket, folded into what v
 * already holds from the others: x-ratelimit-* must show the budget that binds first,
 * the key's, the user's or the tier's. */
static void tightest(const gx_maas_limits *l, const gx_maas_bucket *b, int64_t now, gx_maas_verdict *v)
{
    for (int i = 0; i < l->nreq; i++) {
        int64_t rem = l->req[i].limit - b->req_used[i];
        if (rem < 0) rem = 0;
        if (v->lim_req < 0 || rem < v->rem_req) {
            v->lim_req = l->req[i].limit;
            v->rem_req = rem;
            v->reset_req_ms = b->req_start[i] + l->req[i].len_ms - now;
        }
    }
    for (int i = 0; i < l->ntok; i++) {
        int64_t rem = l->tok[i].limit - b->tok_used[i] - b->tok_reserved;
        if (rem < 0) rem = 0;
        if (v->lim_tok < 0 || rem < v->rem_tok) {
            v->lim_tok = l->tok[i].limit;
            v->rem_tok = rem;
            v->reset_tok_ms = b->tok_start[i] + l->tok[i].len_ms - now;
        }
    }
}

/* Tokens every window of the bucket has left (limit - used - reserved), at most *left. */
static void room(const gx_maas_limits *l, const gx_maas_bucket *b, int64_t *left)
{
    for (int i = 0; i < l->ntok; i++) {
        int64_t r = l->tok[i].limit - b->tok_used[i] - b->tok_reserved;
        if (r < *left) *left = r;
    }
}

/* The completion tokens granted per completion, and the reservation. A request that
 * names no limit gets what is left in every budget (up to the cap) rather than the cap,
 * which would refuse it whenever less than the cap is left, however little it would
 * use; 0 when not even one token per completion is left. */
static int64_t grant_of(const gx_maas_tier *t, const subject *s, int n, const gx_maas_ask *a, int64_t *grant)
{
    int64_t cap = t->max_tokens;
    *grant = 0;
    if (!a->choices) return a->prompt;
    if (a->want > 0) {
        *grant = a->want < cap ? a->want : cap;
        return a->prompt + *grant * a->choices;
    }
    if (a->dflt > 0 && a->dflt < cap) cap = a->dflt;
    int64_t left = INT64_MAX;
    for (int k = 0; k < n; k++) room(s[k].l, s[k].b, &left);
    int64_t g = left == INT64_MAX ? cap : left - a->prompt < a->choices ? 0 : (left - a->prompt) / a->choices;
    *grant = g < cap ? g : cap;
    return a->prompt + (*grant ? *grant : 1) * a->choices;   /* refused when 0: say what the least was */
}

int gx_maas_admit_ask(gx_maas_tier *t, gx_maas_bucket *kb, gx_maas_user_bucket *ub, const gx_maas_ask *a, int64_t now,
                      gx_maas_verdict *v)
{
    memset(v, 0, sizeof *v);
    subject s[3];
    int n = subjects_of(t, kb, ub, s);
    for (int k = 0; k < n; k++) roll(s[k].l, s[k].b, now);
    int64_t grant, cost = grant_of(t, s, n, a, &grant);
    int64_t least = a->choices && a->want <= 0 ? a->prompt + a->choices : cost;
    refusal r = {0, 0, 0, 0};
    int rc = 0;
    for (int k = 0; k < n && !rc; k++) rc = never_fits(&s[k], a, least, now, v, &r);
    for (int k = 0; k < n && !rc; k++) rc = check(&s[k], a, cost, now, v, &r);
    if (!rc) {
        for (int k = 0; k < n; k++) {
            for (int i = 0; i < s[k].l->nreq; i++) s[k].b->req_used[i]++;
            s[k].b->tok_reserved += cost;
            s[k].b->inflight++;
            s[k].b->dirty = 1;
        }
        t->dirty = 1;
        v->grant = grant;
        v->cost = cost;
    }
    v->lim_req = v->lim_tok = -1;
    for (int k = 0; k < n; k++) tightest(s[k].l, s[k].b, now, v);
    if (r.kind == 1) v->lim_req = r.lim, v->rem_req = r.rem < 0 ? 0 : r.rem, v->reset_req_ms = r.reset_ms;
    if (r.kind == 2) v->lim_tok = r.lim, v->rem_tok = r.rem < 0 ? 0 : r.rem, v->reset_tok_ms = r.reset_ms;
    if (v->retry_ms < 0) v->retry_ms = 0;
    return rc;
}

int gx_maas_admit(gx_maas_tier *t, gx_maas_bucket *kb, int64_t cost, int64_t now, gx_maas_verdict *v)
{
    gx_maas_ask a = {.prompt = cost};
    return gx_maas_admit_ask(t, kb, NULL, &a, now, v);
}

static void settle_one(const gx_maas_limits *l, gx_maas_bucket *b, int64_t reserved, int64_t actual, int refund, int64_t now)
{
    roll(l, b, now);
    b->tok_reserved -= reserved;
    if (b->tok_reserved < 0) b->tok_reserved = 0;
    if (b->inflight > 0) b->inflight--;
    for (int i = 0; i < l->ntok; i++) b->tok_used[i] += actual;
    if (refund)
        for (int i = 0; i < l->nreq; i++)
            if (b->req_used[i] > 0) b->req_used[i]--;
    b->dirty = 1;
}

void gx_maas_settle(gx_maas_tier *t, gx_maas_bucket *kb, gx_maas_user_bucket *ub, int64_t reserved, int64_t actual,
                    int refund_request, int64_t now)
{
    subject s[3];
    int n = subjects_of(t, kb, ub, s);
    for (int k = 0; k < n; k++) settle_one(s[k].l, s[k].b, reserved, actual, refund_request, now);
    t->dirty = 1;
}

/* The reservation is an upper bound for any upstream that keeps to its grant and
 * tokenizes as gx_maas_prompt_bound assumes; one that reports more (a template that adds
 * text, a miscounting server) is charged the reservation and no more: it was admitted
 * against that figure alone, and charging past it would let racing requests pass the
 * limit that admission promised. The tokens cut are counted for the operator
 * (gpuaas_gateway_tokens_over_reservation_total). */
int64_t gx_maas_charge_cap(int64_t reserved, int64_t *prompt, int64_t *completion)
{
    if (*prompt < 0) *prompt = 0;
    if (*completion < 0) *completion = 0;
    int64_t over = *prompt + *completion - reserved;
    if (over <= 0) return 0;
    if (*prompt > reserved) *prompt = reserved;
    *completion = reserved - *prompt;
    return over;
}

/* ---- per-user buckets (spec.userLimits) ---------------------------------------------- */

int gx_maas_limits_any(const gx_maas_limits *l) { return l->nreq || l->ntok || l->max_concurrent; }

gx_maas_user_bucket *gx_maas_tier_user_ensure(gx_maas_tier *t, const char *user)
{
    gx_maas_user_bucket *ub = gx_strmap_get(&t->user_buckets, user);
    if (ub) return ub;
    /* Bounded without a cap of its own: a bucket is made for a user who holds a key of
     * the tier (users are registered accounts, each with at most 100 active keys), or
     * read back at start from what such users left; never for a name a client sends. */
    ub = gx_xcalloc(1, sizeof *ub);
    snprintf(ub->user, sizeof ub->user, "%s", user);
    gx_strmap_put(&t->user_buckets, user, ub);
    return ub;
}

gx_maas_user_bucket *gx_maas_tier_user(gx_maas_tier *t, const char *user)
{
    return gx_maas_limits_any(&t->per_user) ? gx_maas_tier_user_ensure(t, user) : NULL;
}

void gx_maas_tier_free_users(gx_maas_tier *t)
{
    for (size_t i = 0; i < t->user_buckets.cap; i++)
        if (t->user_buckets.keys[i] && t->user_buckets.keys[i] != (char *)1) free(t->user_buckets.vals[i]);
    gx_strmap_free(&t->user_buckets);
}
