/* reservation: the pure booking model (see reservation.h for the rules).
 * Owns: the book's arrays (capacities, limits, bookings with their occurrences) and the
 * checks run on a booking before it is accepted.
 * Must not: read a clock, the environment or files; allocate other than through
 * lib/alloc. Sizes are small (bookings of one site over a few weeks), so the checks are
 * plain loops over every occurrence, not an interval tree. */
#include <stdlib.h>
#include <string.h>
#include "core/reservation.h"
#include "lib/alloc.h"
#include "core/quantity.h"
#include "lib/gxtime.h"

#define WEEK_MS (7LL * 86400000LL)
#define MONDAY0_MS (4LL * 86400000LL)   /* 1970-01-05, the first Monday after the epoch */

typedef struct item { char *flavor, *resource; int64_t qty; } item;

typedef struct booking {
    char *ns, *name, *cq, *pool;
    item *items; size_t n_items;
    gx_rsv_window *occ; size_t n_occ;      /* sorted, disjoint */
    int64_t *released;                     /* per occurrence: released from, INT64_MAX = not */
    int64_t lead_ms, no_show_ms;
} booking;

typedef struct cap { char *pool, *flavor, *resource; int64_t qty; } cap;
typedef struct limit { char *ns; int64_t at_once, week_ms; } limit;

struct gx_rsv_book {
    booking *bk; size_t n_bk, cap_bk;
    cap *caps; size_t n_caps, cap_caps;
    limit *lims; size_t n_lims, cap_lims;
};

/* What failed in a check: kind 0 capacity, 1 gpusAtOnce, 2 gpuHoursPerWeek. */
typedef struct fail { int kind; size_t item, occ; int64_t at, load, max; } fail;

gx_rsv_book *gx_reservation_book_new(void)
{
    return gx_xcalloc(1, sizeof(gx_rsv_book));
}

static void booking_free(booking *k)
{
    free(k->ns); free(k->name); free(k->cq); free(k->pool);
    for (size_t i = 0; i < k->n_items; i++) { free(k->items[i].flavor); free(k->items[i].resource); }
    free(k->items); free(k->occ); free(k->released);
}

void gx_reservation_book_free(gx_rsv_book *b)
{
    if (!b) return;
    for (size_t i = 0; i < b->n_bk; i++) booking_free(&b->bk[i]);
    for (size_t i = 0; i < b->n_caps; i++) { free(b->caps[i].pool); free(b->caps[i].flavor); free(b->caps[i].resource); }
    for (size_t i = 0; i < b->n_lims; i++) free(b->lims[i].ns);
    free(b->bk); free(b->caps); free(b->lims); free(b);
}

void gx_reservation_set_capacity(gx_rsv_book *b, const char *pool, const char *flavor, const char *resource, int64_t qty)
{
    for (size_t i = 0; i < b->n_caps; i++)
        if (!strcmp(b->caps[i].pool, pool) && !strcmp(b->caps[i].flavor, flavor) && !strcmp(b->caps[i].resource, resource)) {
            b->caps[i].qty = qty;
            return;
        }
    b->caps = gx_xgrow(b->caps, &b->cap_caps, b->n_caps + 1, sizeof *b->caps);
    b->caps[b->n_caps++] = (cap){gx_xstrdup(pool), gx_xstrdup(flavor), gx_xstrdup(resource), qty};
}

void gx_reservation_set_limit(gx_rsv_book *b, const char *ns, int64_t gpus_at_once, int64_t gpu_ms_per_week)
{
    for (size_t i = 0; i < b->n_lims; i++)
        if (!strcmp(b->lims[i].ns, ns)) { b->lims[i].at_once = gpus_at_once; b->lims[i].week_ms = gpu_ms_per_week; return; }
    b->lims = gx_xgrow(b->lims, &b->cap_lims, b->n_lims + 1, sizeof *b->lims);
    b->lims[b->n_lims++] = (limit){gx_xstrdup(ns), gpus_at_once, gpu_ms_per_week};
}

static int64_t capacity(const gx_rsv_book *b, const char *pool, const char *flavor, const char *resource)
{
    for (size_t i = 0; i < b->n_caps; i++)
        if (!strcmp(b->caps[i].pool, pool) && !strcmp(b->caps[i].flavor, flavor) && !strcmp(b->caps[i].resource, resource))
            return b->caps[i].qty;
    return 0;
}

static const limit *limit_of(const gx_rsv_book *b, const char *ns)
{
    for (size_t i = 0; i < b->n_lims; i++) if (!strcmp(b->lims[i].ns, ns)) return &b->lims[i];
    return NULL;
}

static int same(const booking *k, const char *ns, const char *name)
{
    return !strcmp(k->ns, ns) && !strcmp(k->name, name);
}

/* The part of an occurrence that still holds capacity: a released one ends early. */
static int64_t occ_end(const booking *k, size_t j)
{
    return k->released[j] < k->occ[j].end ? k->released[j] : k->occ[j].end;
}

static int64_t gpus_of(const booking *k)
{
    int64_t g = 0;
    for (size_t i = 0; i < k->n_items; i++) if (!strcmp(k->items[i].resource, GX_RSV_GPU)) g += k->items[i].qty;
    return g;
}

/* Does booking k count toward the load we are checking? by_pool: same pool, flavor and
 * resource (the quantity of that item); else the GPUs of namespace ns. */
static int64_t weight(const booking *k, int by_pool, const char *pool, const char *flavor, const char *resource, const char *ns)
{
    if (!by_pool) return strcmp(k->ns, ns) ? 0 : gpus_of(k);
    if (strcmp(k->pool, pool)) return 0;
    int64_t q = 0;
    for (size_t i = 0; i < k->n_items; i++)
        if (!strcmp(k->items[i].flavor, flavor) && !strcmp(k->items[i].resource, resource)) q += k->items[i].qty;
    return q;
}

/* Highest load of the other bookings over [s, e); *at gets an instant where it is reached.
 * The load only rises at an occurrence's start, so those (and s) are the instants to try. */
static int64_t max_load(const gx_rsv_book *b, const gx_rsv_request *r, int by_pool, const char *flavor,
                        const char *resource, int64_t s, int64_t e, int64_t *at)
{
    int64_t best = -1;
    *at = s;
    for (size_t pi = 0; pi <= b->n_bk; pi++) {
        for (size_t pj = 0; pi == b->n_bk ? pj < 1 : pj < b->bk[pi].n_occ; pj++) {
            int64_t t = pi == b->n_bk ? s : b->bk[pi].occ[pj].start;
            if (t < s || t >= e) continue;
            int64_t load = 0;
            for (size_t i = 0; i < b->n_bk; i++) {
                const booking *k = &b->bk[i];
                if (same(k, r->ns, r->name)) continue;
                int64_t w = weight(k, by_pool, r->pool, flavor, resource, r->ns);
                if (!w) continue;
                for (size_t j = 0; j < k->n_occ; j++)
                    if (k->occ[j].start <= t && t < occ_end(k, j)) load += w;
            }
            if (load > best) { best = load; *at = t; }
        }
    }
    return best < 0 ? 0 : best;
}

static int64_t req_gpus(const gx_rsv_request *r)
{
    int64_t g = 0;
    for (size_t i = 0; i < r->n_items; i++) if (!strcmp(r->items[i].resource, GX_RSV_GPU)) g += r->items[i].qty;
    return g;
}

static int64_t overlap(int64_t s1, int64_t e1, int64_t s2, int64_t e2)
{
    int64_t s = s1 > s2 ? s1 : s2, e = e1 < e2 ? e1 : e2;
    return e > s ? e - s : 0;
}

/* Booked GPU-milliseconds of the other bookings of ns in the week starting at w0. */
static int64_t week_load(const gx_rsv_book *b, const gx_rsv_request *r, int64_t w0)
{
    int64_t ms = 0;
    for (size_t i = 0; i < b->n_bk; i++) {
        const booking *k = &b->bk[i];
        if (same(k, r->ns, r->name) || strcmp(k->ns, r->ns)) continue;
        int64_t g = gpus_of(k);
        for (size_t j = 0; g && j < k->n_occ; j++) ms += g * overlap(k->occ[j].start, occ_end(k, j), w0, w0 + WEEK_MS);
    }
    return ms;
}

static int64_t week_start(int64_t t)
{
    int64_t d = t - MONDAY0_MS;
    int64_t q = d / WEEK_MS - (d % WEEK_MS < 0);
    return MONDAY0_MS + q * WEEK_MS;
}

/* The request with every occurrence moved by delta fits? 1 yes; 0 with *f filled. */
static int fits(const gx_rsv_book *b, const gx_rsv_request *r, const gx_rsv_window *occ, int64_t delta, fail *f)
{
    for (size_t i = 0; i < r->n_items; i++) {
        int64_t c = capacity(b, r->pool, r->items[i].flavor, r->items[i].resource);
        for (size_t j = 0; j < r->n_occ; j++) {
            int64_t at, l = max_load(b, r, 1, r->items[i].flavor, r->items[i].resource, occ[j].start + delta, occ[j].end + delta, &at);
            if (l + r->items[i].qty > c) { *f = (fail){0, i, j, at, l, c}; return 0; }
        }
    }
    const limit *lim = limit_of(b, r->ns);
    int64_t g = req_gpus(r);
    if (!lim || !g) return 1;
    size_t gi = 0;
    while (gi < r->n_items && strcmp(r->items[gi].resource, GX_RSV_GPU)) gi++;
    if (lim->at_once >= 0)
        for (size_t j = 0; j < r->n_occ; j++) {
            int64_t at, l = max_load(b, r, 0, NULL, NULL, occ[j].start + delta, occ[j].end + delta, &at);
            if (l + g > lim->at_once) { *f = (fail){1, gi, j, at, l, lim->at_once}; return 0; }
        }
    if (lim->week_ms >= 0)
        for (size_t j = 0; j < r->n_occ; j++) {
            for (int64_t w0 = week_start(occ[j].start + delta); w0 < occ[j].end + delta; w0 += WEEK_MS) {
                int64_t mine = 0;
                for (size_t m = 0; m < r->n_occ; m++) mine += g * overlap(occ[m].start + delta, occ[m].end + delta, w0, w0 + WEEK_MS);
                int64_t l = week_load(b, r, w0);
                if (l + mine > lim->week_ms) { *f = (fail){2, gi, j, w0, l, lim->week_ms}; return 0; }
            }
        }
    return 1;
}

static int cmp_win(const void *a, const void *b)
{
    const gx_rsv_window *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The bookings that share the failing instant's load: the other occurrences that count
 * toward it and overlap the failing occurrence. */
static void conflicts(const gx_rsv_book *b, const gx_rsv_request *r, const fail *f, gx_rsv_window w, gx_rsv_refusal *why)
{
    const char *fl = r->items[f->item].flavor, *res = r->items[f->item].resource;
    for (size_t i = 0; i < b->n_bk && why->n_conf < GX_RSV_MAX_CONFLICTS; i++) {
        const booking *k = &b->bk[i];
        if (same(k, r->ns, r->name) || !weight(k, f->kind == 0, r->pool, fl, res, r->ns)) continue;
        for (size_t j = 0; j < k->n_occ && why->n_conf < GX_RSV_MAX_CONFLICTS; j++) {
            if (!overlap(k->occ[j].start, occ_end(k, j), w.start, w.end)) continue;
            gx_rsv_conflict *c = &why->conf[why->n_conf++];
            c->ns = gx_xstrdup(k->ns); c->name = gx_xstrdup(k->name);
            c->flavor = gx_xstrdup(f->kind == 0 ? fl : "*"); c->resource = gx_xstrdup(res);
            c->w = (gx_rsv_window){k->occ[j].start, occ_end(k, j)};
        }
    }
}

/* Nearest shifts of the whole request that fit. A fitting range of shifts begins or ends
 * where one of the request's occurrences touches another booking's start or end, so those
 * shifts are the only candidates to try, nearest first. */
static void alternatives(const gx_rsv_book *b, const gx_rsv_request *r, const gx_rsv_window *occ, gx_rsv_refusal *why)
{
    size_t n = 0, capn = 0;
    int64_t *d = NULL;
    for (size_t i = 0; i < b->n_bk; i++) {
        const booking *k = &b->bk[i];
        if (same(k, r->ns, r->name)) continue;
        for (size_t j = 0; j < k->n_occ; j++) {
            int64_t pts[2] = {k->occ[j].start, occ_end(k, j)};
            for (size_t m = 0; m < r->n_occ; m++)
                for (int p = 0; p < 2; p++) {
                    d = gx_xgrow(d, &capn, n + 2, sizeof *d);
                    d[n++] = pts[p] - occ[m].start;
                    d[n++] = pts[p] - occ[m].end;
                }
        }
    }
    if (n) qsort(d, n, sizeof *d, cmp_i64);
    fail f;
    for (size_t i = 0; i < n && !why->has_after; i++)
        if (d[i] > 0 && (i == 0 || d[i] != d[i - 1]) && fits(b, r, occ, d[i], &f)) {
            why->has_after = 1;
            why->alt_after = (gx_rsv_window){occ[0].start + d[i], occ[0].end + d[i]};
        }
    for (size_t i = n; i-- > 0 && !why->has_before;)
        if (d[i] < 0 && occ[0].start + d[i] >= r->not_before && (i + 1 == n || d[i] != d[i + 1]) && fits(b, r, occ, d[i], &f)) {
            why->has_before = 1;
            why->alt_before = (gx_rsv_window){occ[0].start + d[i], occ[0].end + d[i]};
        }
    free(d);
}

static int validate(const gx_rsv_request *r, const gx_rsv_window *occ, gx_err *err)
{
    char p[64];
    if (!r->n_items) return gx_errf(err, 422, "spec.resources", "at least one resource is required");
    for (size_t i = 0; i < r->n_items; i++)
        if (r->items[i].qty <= 0)
            return gx_errf(err, 422, gx_err_path(p, sizeof p, "spec.resources", "spec.resources[%zu].quantity", i),
                           "must be positive, not %lld", (long long)r->items[i].qty);
    if (!r->n_occ) return gx_errf(err, 422, "spec.start", "the booking has no occurrence");
    for (size_t j = 0; j < r->n_occ; j++) {
        if (occ[j].end <= occ[j].start) return gx_errf(err, 422, "spec.end", "must be after spec.start");
        if (j && occ[j].start < occ[j - 1].end) return gx_errf(err, 422, "spec.recurrence", "occurrences overlap");
    }
    if (r->lead_ms < 0) return gx_errf(err, 422, "spec.leadTime", "must not be negative");
    if (r->no_show_ms < 0) return gx_errf(err, 422, "spec.noShowTimeout", "must not be negative");
    return 0;
}

static void describe(const gx_rsv_request *r, const fail *f, gx_err *err)
{
    char t[GX_TIME_LEN], p[64], q1[48], q2[48], q3[48];
    const gx_rsv_item *it = &r->items[f->item];
    gx_time_fmt(f->at, t, sizeof t);
    if (f->kind == 0)
        gx_errf(err, 409, gx_err_path(p, sizeof p, "spec.resources", "spec.resources[%zu]", f->item),
                "overbooked: %s %s in %s has %s, %s already booked at %s, %s asked", it->flavor, it->resource, r->pool,
                gx_quantity_format(f->max, q1, sizeof q1), gx_quantity_format(f->load, q2, sizeof q2), t,
                gx_quantity_format(it->qty, q3, sizeof q3));
    else if (f->kind == 1)
        gx_errf(err, 422, gx_err_path(p, sizeof p, "spec.resources", "spec.resources[%zu].quantity", f->item),
                "namespace %s booking limit gpusAtOnce is %s: %s GPUs already booked at %s, %s asked", r->ns,
                gx_quantity_format(f->max, q1, sizeof q1), gx_quantity_format(f->load, q2, sizeof q2), t,
                gx_quantity_format(req_gpus(r), q3, sizeof q3));
    else
        gx_errf(err, 422, gx_err_path(p, sizeof p, "spec.resources", "spec.resources[%zu].quantity", f->item),
                "namespace %s booking limit gpuHoursPerWeek is %.2f: %.2f GPU-hours already booked in the week of %s",
                r->ns, (double)f->max / 3600000000.0, (double)f->load / 3600000000.0, t);
}

int gx_reservation_add(gx_rsv_book *b, const gx_rsv_request *r, gx_rsv_refusal *why)
{
    gx_rsv_refusal tmp;
    if (!why) why = &tmp;
    memset(why, 0, sizeof *why);
    gx_err_clear(&why->err);
    gx_rsv_window *occ = gx_xmalloc((r->n_occ ? r->n_occ : 1) * sizeof *occ);
    if (r->n_occ) memcpy(occ, r->occ, r->n_occ * sizeof *occ);
    qsort(occ, r->n_occ, sizeof *occ, cmp_win);
    fail f;
    if (validate(r, occ, &why->err) < 0) goto refused;
    if (!fits(b, r, occ, 0, &f)) {
        describe(r, &f, &why->err);
        why->conflict = 1;
        if (f.kind != 2) {
            conflicts(b, r, &f, occ[f.occ], why);
            alternatives(b, r, occ, why);
        }
        goto refused;
    }
    booking k = {gx_xstrdup(r->ns), gx_xstrdup(r->name), gx_xstrdup(r->cluster_queue), gx_xstrdup(r->pool),
                 gx_xcalloc(r->n_items, sizeof(item)), r->n_items, occ, r->n_occ,
                 gx_xmalloc(r->n_occ * sizeof(int64_t)), r->lead_ms, r->no_show_ms};
    for (size_t i = 0; i < r->n_items; i++)
        k.items[i] = (item){gx_xstrdup(r->items[i].flavor), gx_xstrdup(r->items[i].resource), r->items[i].qty};
    for (size_t j = 0; j < r->n_occ; j++) k.released[j] = INT64_MAX;
    gx_reservation_remove(b, r->ns, r->name);
    b->bk = gx_xgrow(b->bk, &b->cap_bk, b->n_bk + 1, sizeof *b->bk);
    b->bk[b->n_bk++] = k;
    return 0;
refused:
    free(occ);
    if (why == &tmp) gx_reservation_refusal_free(why);
    return -1;
}

void gx_reservation_refusal_free(gx_rsv_refusal *why)
{
    for (size_t i = 0; i < why->n_conf; i++) {
        free(why->conf[i].ns); free(why->conf[i].name); free(why->conf[i].flavor); free(why->conf[i].resource);
    }
    why->n_conf = 0;
}

int gx_reservation_remove(gx_rsv_book *b, const char *ns, const char *name)
{
    for (size_t i = 0; i < b->n_bk; i++)
        if (same(&b->bk[i], ns, name)) {
            booking_free(&b->bk[i]);
            memmove(&b->bk[i], &b->bk[i + 1], (b->n_bk - i - 1) * sizeof *b->bk);
            b->n_bk--;
            return 0;
        }
    return -1;
}

size_t gx_reservation_count(const gx_rsv_book *b) { return b->n_bk; }

void gx_reservation_get(const gx_rsv_book *b, size_t i, gx_rsv_info *out)
{
    const booking *k = &b->bk[i];
    *out = (gx_rsv_info){k->ns, k->name, k->cq, k->n_items, k->lead_ms, k->no_show_ms};
}

gx_rsv_item gx_reservation_item(const gx_rsv_book *b, size_t i, size_t k)
{
    const item *it = &b->bk[i].items[k];
    return (gx_rsv_item){it->flavor, it->resource, it->qty};
}

static const booking *find(const gx_rsv_book *b, const char *ns, const char *name)
{
    for (size_t i = 0; i < b->n_bk; i++) if (same(&b->bk[i], ns, name)) return &b->bk[i];
    return NULL;
}

int gx_reservation_phase(const gx_rsv_book *b, const char *ns, const char *name, int64_t t, gx_rsv_window *occ)
{
    const booking *k = find(b, ns, name);
    if (!k) return GX_RSV_NONE;
    for (size_t j = 0; j < k->n_occ; j++) {
        if (occ) *occ = k->occ[j];
        if (k->occ[j].start <= t && t < occ_end(k, j)) return GX_RSV_ACTIVE;
        if (k->occ[j].start - k->lead_ms <= t && t < k->occ[j].start) return GX_RSV_LEAD;
    }
    return GX_RSV_NONE;
}

int64_t gx_reservation_booked(const gx_rsv_book *b, const char *cluster_queue, const char *flavor, const char *resource, int64_t t)
{
    int64_t q = 0;
    for (size_t i = 0; i < b->n_bk; i++) {
        const booking *k = &b->bk[i];
        if (strcmp(k->cq, cluster_queue)) continue;
        for (size_t j = 0; j < k->n_occ; j++)
            if (k->occ[j].start <= t && t < occ_end(k, j))
                for (size_t m = 0; m < k->n_items; m++)
                    if (!strcmp(k->items[m].flavor, flavor) && !strcmp(k->items[m].resource, resource)) q += k->items[m].qty;
    }
    return q;
}

int gx_reservation_release(gx_rsv_book *b, const char *ns, const char *name, int64_t t)
{
    for (size_t i = 0; i < b->n_bk; i++) {
        booking *k = &b->bk[i];
        if (!same(k, ns, name)) continue;
        for (size_t j = 0; j < k->n_occ; j++)
            if (k->occ[j].start <= t && t < occ_end(k, j)) { k->released[j] = t; return 0; }
    }
    return -1;
}

int64_t gx_reservation_next_change(const gx_rsv_book *b, int64_t now)
{
    int64_t best = INT64_MAX;
    for (size_t i = 0; i < b->n_bk; i++) {
        const booking *k = &b->bk[i];
        for (size_t j = 0; j < k->n_occ; j++) {
            int64_t pts[4] = {k->occ[j].start - k->lead_ms, k->occ[j].start,
                              k->no_show_ms ? k->occ[j].start + k->no_show_ms : INT64_MAX, occ_end(k, j)};
            for (int p = 0; p < 4; p++) if (pts[p] > now && pts[p] < best) best = pts[p];
        }
    }
    return best;
}
