/* Unit tests for lib/strmap, the one string-keyed map (the daemon's key -> record maps
 * and the engine's name -> index maps): put/get/del, present-but-NULL versus absent,
 * index values, tombstones reused and cleared, growth, and many keys checked against a
 * plain array. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/strmap.h"

Test(strmap, put_get_replace_del)
{
    gx_strmap m;
    gx_strmap_init(&m);
    int a = 1, b = 2;
    cr_assert_null(gx_strmap_get(&m, "x"));               /* empty map: no table yet */
    cr_assert_null(gx_strmap_del(&m, "x"));
    gx_strmap_put(&m, "x", &a);
    gx_strmap_put(&m, "y", &b);
    cr_assert_eq(gx_strmap_get(&m, "x"), &a);
    cr_assert_eq(gx_strmap_get(&m, "y"), &b);
    gx_strmap_put(&m, "x", &b);                           /* replace keeps one entry */
    cr_assert_eq(gx_strmap_get(&m, "x"), &b);
    cr_assert_eq(m.n, 2);
    cr_assert_eq(gx_strmap_del(&m, "x"), &b);
    cr_assert_null(gx_strmap_get(&m, "x"));
    cr_assert_null(gx_strmap_del(&m, "x"));
    cr_assert_eq(m.n, 1);
    gx_strmap_free(&m);
    cr_assert_eq(m.cap, 0);
}

Test(strmap, keys_are_copied)
{
    gx_strmap m;
    gx_strmap_init(&m);
    char key[8] = "ns/a";
    int v = 7;
    gx_strmap_put(&m, key, &v);
    key[3] = 'b';                                         /* the caller's buffer changes */
    cr_assert_eq(gx_strmap_get(&m, "ns/a"), &v);
    cr_assert_null(gx_strmap_get(&m, "ns/b"));
    gx_strmap_free(&m);
}

Test(strmap, find_tells_absent_from_stored_null)
{
    gx_strmap m;
    gx_strmap_init(&m);
    void *v = (void *)1;
    cr_assert_eq(gx_strmap_find(&m, "k", &v), 0);
    cr_assert_null(v);
    gx_strmap_put(&m, "k", NULL);
    v = (void *)1;
    cr_assert_eq(gx_strmap_find(&m, "k", &v), 1);
    cr_assert_null(v);
    cr_assert_eq(gx_strmap_find(&m, "other", &v), 0);
    gx_strmap_free(&m);
}

Test(strmap, index_zero_is_an_index)
{
    gx_strmap m;
    gx_strmap_init(&m);
    cr_assert_eq(gx_strmap_geti(&m, "cq-a"), -1);
    gx_strmap_puti(&m, "cq-a", 0);
    gx_strmap_puti(&m, "cq-b", 41);
    cr_assert_eq(gx_strmap_geti(&m, "cq-a"), 0);
    cr_assert_eq(gx_strmap_geti(&m, "cq-b"), 41);
    gx_strmap_del(&m, "cq-a");
    cr_assert_eq(gx_strmap_geti(&m, "cq-a"), -1);
    cr_assert_eq(gx_strmap_geti(&m, "cq-b"), 41);
    gx_strmap_free(&m);
}

/* Deleting leaves tombstones on probe paths: keys behind them must still be found, a
 * re-insert reuses one, and the table is rehashed (not grown) when they pile up. */
Test(strmap, tombstones_keep_probe_paths_and_do_not_grow_the_table)
{
    gx_strmap m;
    gx_strmap_init(&m);
    char k[32];
    for (int i = 0; i < 40; i++) { snprintf(k, sizeof k, "k%d", i); gx_strmap_puti(&m, k, i); }
    for (int i = 0; i < 40; i += 2) { snprintf(k, sizeof k, "k%d", i); gx_strmap_del(&m, k); }
    cr_assert_eq(m.n, 20);
    cr_assert_eq(m.tomb, 20);
    for (int i = 1; i < 40; i += 2) { snprintf(k, sizeof k, "k%d", i); cr_assert_eq(gx_strmap_geti(&m, k), i, "%s", k); }
    gx_strmap_puti(&m, "k0", 100);                       /* back on its own path: a tombstone reused */
    cr_assert_eq(m.tomb, 19);
    cr_assert_eq(gx_strmap_geti(&m, "k0"), 100);
    gx_strmap_free(&m);

    /* a queue's churn: one key in, one key out, 100k times; the table keeps its size */
    gx_strmap_init(&m);
    for (int i = 0; i < 100000; i++) {
        snprintf(k, sizeof k, "default/job-%d", i);
        gx_strmap_puti(&m, k, i);
        if (i) { snprintf(k, sizeof k, "default/job-%d", i - 1); cr_assert_eq((intptr_t)gx_strmap_del(&m, k), i - 1); }
    }
    cr_assert_eq(m.n, 1);
    cr_assert_leq(m.cap, 64, "cap grew to %zu with one live key", m.cap);
    cr_assert_eq(gx_strmap_geti(&m, "default/job-99999"), 99999);
    gx_strmap_free(&m);
}

Test(strmap, grows_and_keeps_every_key)
{
    gx_strmap m;
    gx_strmap_init(&m);
    char k[32];
    size_t last_cap = 0;
    int grew = 0;
    for (int i = 0; i < 1000; i++) {
        snprintf(k, sizeof k, "node-%d", i);
        gx_strmap_puti(&m, k, i);
        if (m.cap != last_cap) { grew++; last_cap = m.cap; }
        cr_assert_leq(m.n * 10, m.cap * 7, "load above 70 %% at %d", i);
    }
    cr_assert_geq(grew, 4);
    cr_assert_eq(m.cap & (m.cap - 1), 0, "cap %zu is a power of two", m.cap);
    for (int i = 0; i < 1000; i++) { snprintf(k, sizeof k, "node-%d", i); cr_assert_eq(gx_strmap_geti(&m, k), i); }
    gx_strmap_free(&m);
}

/* 50k keys with random puts and deletes, against a plain array of what should be there. */
Test(strmap, many_keys_against_a_model)
{
    enum { N = 50000 };
    gx_strmap m;
    gx_strmap_init(&m);
    int *model = malloc(N * sizeof *model);
    cr_assert_not_null(model);
    for (int i = 0; i < N; i++) model[i] = -1;
    uint64_t x = 88172645463325252ULL;
    char k[32];
    size_t live = 0;
    for (int step = 0; step < 4 * N; step++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;          /* xorshift64 */
        int i = (int)(x % N);
        snprintf(k, sizeof k, "ns-%d/wl-%d", i % 97, i);
        if (x >> 62) {                                    /* 3 in 4: put */
            if (model[i] < 0) live++;
            model[i] = step;
            gx_strmap_puti(&m, k, step);
        } else {
            void *v;
            int had = gx_strmap_find(&m, k, &v);
            cr_assert_eq(had, model[i] >= 0);
            gx_strmap_del(&m, k);
            if (model[i] >= 0) live--;
            model[i] = -1;
        }
    }
    cr_assert_eq(m.n, live);
    for (int i = 0; i < N; i++) {
        snprintf(k, sizeof k, "ns-%d/wl-%d", i % 97, i);
        cr_assert_eq(gx_strmap_geti(&m, k), model[i], "%s", k);
    }
    free(model);
    gx_strmap_free(&m);
}
