/* Unit tests of src/store/ratelimit.c on a real SQLite database in a temporary folder:
 * saved windows come back after the store is closed and opened again, a second save of
 * the same window replaces it, windows already over are dropped (and deleted) at load,
 * an empty batch is a no-op, windows queued to the store's writer land in order. Also limits.c's side: a window put back into a bucket
 * counts at the next admission, whatever order the tier lists its windows in, and a
 * window that is over by then starts afresh. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "maas/maas_int.h"
#include "store/ratelimit.h"
#include "store/store.h"
#include "test_store_util.h"

static json_t *load(gx_store *s, int64_t now)
{
    gx_err e;
    gx_err_clear(&e);
    json_t *a = gx_store_rate_windows(s, now, &e);
    cr_assert_not_null(a, "load: %s", e.msg);
    return a;
}

/* The row of (scope, name, kind, window) in a load, or NULL. */
static json_t *find(json_t *a, const char *scope, const char *name, const char *kind, int64_t len)
{
    size_t i;
    json_t *r;
    json_array_foreach(a, i, r)
        if (!strcmp(json_string_value(json_object_get(r, "scope")), scope) &&
            !strcmp(json_string_value(json_object_get(r, "name")), name) &&
            !strcmp(json_string_value(json_object_get(r, "kind")), kind) &&
            json_integer_value(json_object_get(r, "windowMs")) == len)
            return r;
    return NULL;
}

static int64_t used_of(json_t *r) { return json_integer_value(json_object_get(r, "used")); }

#define MIN 60000
#define DAY 86400000LL

Test(store_ratelimit, survive_reopen_replace_and_expire, .init = store_tmp_make, .fini = store_tmp_remove)
{
    int64_t now = 1700000000000LL, m0 = now - now % MIN, d0 = now - now % DAY;
    gx_store *s = open_store();
    gx_err e;
    gx_err_clear(&e);
    gx_store_rate_window rows[] = {
        {"key", "abc123", "tokens", MIN, m0, 700},
        {"key", "abc123", "tokens", DAY, d0, 5000},
        {"key", "abc123", "requests", MIN, m0, 3},
        {"tier", "team", "tokens", MIN, m0, 900},
        {"tier", "old", "tokens", MIN, m0 - MIN, 50},   /* the previous minute: already over */
    };
    cr_assert_eq(gx_store_put_rate_windows(s, rows, 5, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_store_put_rate_windows(s, NULL, 0, &e), 0);
    gx_store_close(s);

    s = open_store();
    json_t *a = load(s, now);
    cr_assert_eq(json_array_size(a), 4, "the window already over is dropped: %zu rows", json_array_size(a));
    cr_assert_null(find(a, "tier", "old", "tokens", MIN));
    cr_assert_eq(used_of(find(a, "key", "abc123", "tokens", MIN)), 700);
    cr_assert_eq(used_of(find(a, "key", "abc123", "tokens", DAY)), 5000);
    cr_assert_eq(used_of(find(a, "key", "abc123", "requests", MIN)), 3);
    cr_assert_eq(used_of(find(a, "tier", "team", "tokens", MIN)), 900);
    cr_assert_eq(json_integer_value(json_object_get(find(a, "tier", "team", "tokens", MIN), "startMs")), m0);
    json_decref(a);

    /* a later save of the same window replaces it (also its start, when it rolled) */
    gx_store_rate_window again[] = {{"key", "abc123", "tokens", MIN, m0, 950}, {"tier", "team", "tokens", MIN, m0 + MIN, 10}};
    cr_assert_eq(gx_store_put_rate_windows(s, again, 2, &e), 0, "%s", e.msg);
    a = load(s, now);
    cr_assert_eq(json_array_size(a), 4);
    cr_assert_eq(used_of(find(a, "key", "abc123", "tokens", MIN)), 950);
    cr_assert_eq(used_of(find(a, "tier", "team", "tokens", MIN)), 10);
    json_decref(a);

    /* a minute later, the minute windows of m0 are over; the day and the tier's new minute stay */
    a = load(s, m0 + MIN);
    cr_assert_eq(json_array_size(a), 2, "%zu rows", json_array_size(a));
    cr_assert_not_null(find(a, "key", "abc123", "tokens", DAY));
    cr_assert_not_null(find(a, "tier", "team", "tokens", MIN));
    json_decref(a);
    /* ...and deleted: even an earlier clock does not bring them back */
    a = load(s, now);
    cr_assert_eq(json_array_size(a), 2);
    json_decref(a);
    gx_store_close(s);
}

/* Queued saves go through the store's writer thread: in order with each other and with
 * usage rows, from copies of the strings, written by a sync and, for the rest, by close. */
Test(store_ratelimit, queued_windows_are_written_in_order, .init = store_tmp_make, .fini = store_tmp_remove)
{
    int64_t now = 1700000000000LL, m0 = now - now % MIN;
    gx_store *s = open_store();
    gx_err e;
    gx_err_clear(&e);
    char name[16] = "k1";
    gx_store_rate_window w = {"key", name, "tokens", MIN, m0, 0};
    gx_store_usage u = {now, "k1", "alice", "team-a", "m", "t", "/v1/chat/completions", 3, 4, 900, -1, 0, 0, 200};
    for (int i = 1; i <= 50; i++) {
        w.used = i * 10;
        cr_assert_eq(gx_store_queue_rate_windows(s, &w, 1, &e), 0, "%s", e.msg);
        cr_assert_eq(gx_store_queue_usage(s, &u, 1, &e), 0, "%s", e.msg);
    }
    name[0] = 'X';   /* the queue holds its own copy */
    gx_store_sync_usage(s);
    json_t *a = load(s, now);
    cr_assert_eq(json_array_size(a), 1, "%zu rows", json_array_size(a));
    cr_assert_eq(used_of(find(a, "key", "k1", "tokens", MIN)), 500, "the last save wins");
    json_decref(a);
    w.used = 777;
    cr_assert_eq(gx_store_queue_rate_windows(s, &w, 1, &e), 0, "%s", e.msg);
    gx_store_close(s);
    s = open_store();
    a = load(s, now);
    cr_assert_eq(used_of(find(a, "key", "X1", "tokens", MIN)), 777, "close wrote what was queued");
    json_decref(a);
    json_t *sum = gx_store_usage_summary(s, "key", 0, NULL, &e);
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(sum, 0), "requests")), 50);
    json_decref(sum);
    gx_store_close(s);
}

static gx_maas_tier tier_of(const char *js)
{
    gx_maas_tier t;
    memset(&t, 0, sizeof t);
    snprintf(t.name, sizeof t.name, "t");
    json_t *doc = json_loads(js, 0, NULL);
    cr_assert_not_null(doc);
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_maas_tier_parse(doc, &t, &e), 0, "%s", e.msg);
    json_decref(doc);
    return t;
}

Test(maas_restore, restored_windows_count_by_length)
{
    gx_maas_tier t = tier_of("{\"spec\":{\"limits\":{\"tokensPerDay\":10000,\"tokensPerMinute\":1000,"
                             "\"requestsPerMinute\":100}}}");
    int64_t now = 1700000000000LL, m0 = now - now % MIN, d0 = now - now % DAY;
    gx_maas_key k;
    memset(&k, 0, sizeof k);
    /* saved in another order than the tier lists them */
    cr_assert_eq(gx_maas_bucket_restore(&k.bucket, 1, MIN, m0, 600), 0);
    cr_assert_eq(gx_maas_bucket_restore(&k.bucket, 1, DAY, d0, 9000), 0);
    cr_assert_eq(gx_maas_bucket_restore(&k.bucket, 0, MIN, m0, 7), 0);
    cr_assert_eq(gx_maas_bucket_restore(&k.bucket, 1, 0, m0, 1), -1);
    gx_maas_verdict v;
    cr_assert_eq(gx_maas_admit(&t, &k.bucket, 100, now, &v), 0);
    cr_assert_eq(v.rem_tok, 300, "the minute has 1000 - 600 - 100 left: %lld", (long long)v.rem_tok);
    cr_assert_eq(v.rem_req, 100 - 7 - 1);
    cr_assert(k.bucket.dirty && t.dirty, "an admission marks the key and the tier for saving");
    gx_maas_settle(&t, &k.bucket, NULL, 100, 50, 0, now);
    /* the day window was restored too: 9000 + 50 used, so 1000 more tokens do not fit */
    cr_assert_neq(gx_maas_admit(&t, &k.bucket, 951, now, &v), 0);
    cr_assert_eq(v.result, GX_MAAS_LIM_TOKENS);
    /* a window over by the next admission starts afresh (the next minute) */
    cr_assert_eq(gx_maas_admit(&t, &k.bucket, 100, m0 + MIN, &v), 0);
    cr_assert_eq(v.rem_tok, 10000 - 9050 - 100, "the day is the tightest now: %lld", (long long)v.rem_tok);
}

Test(maas_restore, tier_windows_changed_keep_matching_counts)
{
    int64_t now = 1700000000000LL;
    gx_maas_tier t = tier_of("{\"spec\":{\"limits\":{\"tokensPerMinute\":1000,\"tokensPerHour\":5000}}}");
    gx_maas_key k;
    memset(&k, 0, sizeof k);
    gx_maas_verdict v;
    cr_assert_eq(gx_maas_admit(&t, &k.bucket, 10, now, &v), 0);
    gx_maas_settle(&t, &k.bucket, NULL, 10, 400, 0, now);
    /* the tier drops its minute window: the hour keeps its 400 */
    gx_maas_tier t2 = tier_of("{\"spec\":{\"limits\":{\"tokensPerHour\":5000}}}");
    cr_assert_eq(gx_maas_admit(&t2, &k.bucket, 100, now, &v), 0);
    cr_assert_eq(v.rem_tok, 5000 - 400 - 100);
}
