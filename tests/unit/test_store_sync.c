/* Unit tests of group commit (src/store/sync.c) on a real SQLite database: every
 * commit on the store's connection counts one; the thread's fsync moves `synced` up to
 * the commits made before it and signals the eventfd; a change made while a sync runs
 * is covered by the next one; closing the store syncs what is left. The fsync itself
 * cannot be observed from here (only a power cut shows it); what these pin is the
 * accounting the HTTP server's barrier trusts. */
#include <criterion/criterion.h>
#include <poll.h>
#include <stdio.h>
#include "store/store.h"
#include "test_store_util.h"

/* Wait (at most 5 s) until synced reaches want, through the eventfd as the loop does. */
static uint64_t wait_synced(gx_store *s, uint64_t want)
{
    for (int i = 0; i < 50 && gx_store_synced(s) < want; i++) {
        struct pollfd p = {.fd = gx_store_sync_fd(s), .events = POLLIN};
        poll(&p, 1, 100);
        gx_store_sync_drain(s);
    }
    return gx_store_synced(s);
}

Test(store_sync, each_commit_counts_and_a_sync_covers_it, .init = store_tmp_make, .fini = store_tmp_remove)
{
    gx_err e;
    gx_store *s = open_store();
    cr_assert_geq(gx_store_sync_fd(s), 0, "the group-commit thread runs");
    uint64_t c0 = gx_store_committed(s);
    cr_assert_eq(gx_store_meta_put(s, "a", "1", &e), 0, "%s", e.msg);
    uint64_t c1 = gx_store_committed(s);
    cr_assert_eq(c1, c0 + 1, "one commit counts one (%llu -> %llu)", (unsigned long long)c0, (unsigned long long)c1);
    cr_assert_geq(wait_synced(s, c1), c1, "the fsync covers the commit");

    /* a transaction of several writes is one commit */
    cr_assert_eq(gx_store_begin(s, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_store_meta_put(s, "b", "2", &e), 0, "%s", e.msg);
    cr_assert_eq(gx_store_meta_put(s, "c", "3", &e), 0, "%s", e.msg);
    cr_assert_eq(gx_store_committed(s), c1, "nothing counts before the commit");
    cr_assert_eq(gx_store_commit(s, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_store_committed(s), c1 + 1);
    cr_assert_geq(wait_synced(s, c1 + 1), c1 + 1);
    gx_store_close(s);
}

Test(store_sync, many_commits_share_fsyncs_and_all_are_covered, .init = store_tmp_make, .fini = store_tmp_remove)
{
    gx_err e;
    gx_store *s = open_store();
    char v[16];
    for (int i = 0; i < 200; i++) {
        snprintf(v, sizeof v, "%d", i);
        cr_assert_eq(gx_store_meta_put(s, "k", v, &e), 0, "%s", e.msg);
    }
    uint64_t c = gx_store_committed(s);
    cr_assert_geq(c, 200);
    cr_assert_eq(wait_synced(s, c), c, "synced stops at what was committed, not past it");
    gx_store_close(s);
    /* and the last value is what a reopen reads */
    s = open_store();
    cr_assert_eq(gx_store_meta_get(s, "k", v, sizeof v, &e), 0, "%s", e.msg);
    cr_assert_str_eq(v, "199");
    gx_store_close(s);
}
