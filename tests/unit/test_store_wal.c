/* Unit tests of the store's handling of metering data on a real SQLite database:
 * usage rows committed without an fsync are there after the store is closed and opened
 * again; the WAL is checkpointed into the database file by the store's own thread (the
 * main connection never checkpoints by itself, so only that thread can grow the file
 * while it stays open); rows queued for that thread are in after a sync or a close. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include "store/store.h"
#include "test_store_util.h"

static long long db_size(void)
{
    char p[128];
    struct stat st;
    snprintf(p, sizeof p, "%s/gpuaas.db", dir);
    return stat(p, &st) ? -1 : (long long)st.st_size;
}

static void put_rows(gx_store *s, int n)
{
    gx_store_usage rows[100];
    for (int i = 0; i < 100; i++)
        rows[i] = (gx_store_usage){1000 + i, "k1", "alice", "team-a", "m", "t", "/v1/chat/completions",
                                   10, 20, 5000, -1, 0, 0, 200};
    gx_err e;
    for (int done = 0; done < n; done += 100) cr_assert_eq(gx_store_put_usage(s, rows, 100, &e), 0, "%s", e.msg);
}

Test(store_wal, usage_rows_survive_a_reopen_and_the_wal_is_checkpointed, .init = store_tmp_make, .fini = store_tmp_remove)
{
    gx_err e;
    gx_store *s = open_store();
    long long before = db_size();
    put_rows(s, 5000);                      /* ~1 MB of WAL frames */
    int grown = 0;
    for (int i = 0; i < 100 && !grown; i++) {   /* the thread runs once a second */
        grown = db_size() > before + 100000;
        if (!grown) nanosleep(&(struct timespec){0, 50 * 1000 * 1000}, NULL);
    }
    cr_assert(grown, "the database file did not grow from the WAL (%lld -> %lld bytes)", before, db_size());
    gx_store_close(s);
    s = gx_store_open(dir, &e);
    cr_assert_not_null(s, "%s", e.msg);
    json_t *sum = gx_store_usage_summary(s, "user", 0, NULL, &e);
    cr_assert_not_null(sum, "%s", e.msg);
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(sum, 0), "requests")), 5000);
    json_decref(sum);
    gx_store_close(s);
}

/* Rows queued for the background thread: sync waits until they are in; rows queued
 * just before close are written by the close, not lost. */
Test(store_wal, queued_usage_is_written_by_sync_and_by_close, .init = store_tmp_make, .fini = store_tmp_remove)
{
    gx_err e;
    gx_store *s = gx_store_open(dir, &e);
    cr_assert_not_null(s, "%s", e.msg);
    char key[16];
    snprintf(key, sizeof key, "k-%d", 7);
    gx_store_usage row = {1000, key, "alice", "team-a", "m", "t", "/v1/embeddings", 3, 0, 900, -1, 1, 0, 200};
    for (int i = 0; i < 300; i++) cr_assert_eq(gx_store_queue_usage(s, &row, 1, &e), 0, "%s", e.msg);
    key[0] = 'X';                           /* the queue holds its own copy of the strings */
    gx_store_sync_usage(s);
    json_t *sum = gx_store_usage_summary(s, "key", 0, NULL, &e);
    cr_assert_not_null(sum, "%s", e.msg);
    cr_assert_str_eq(json_string_value(json_object_get(json_array_get(sum, 0), "group")), "k-7");
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(sum, 0), "requests")), 300);
    json_decref(sum);
    for (int i = 0; i < 200; i++) cr_assert_eq(gx_store_queue_usage(s, &row, 1, &e), 0, "%s", e.msg);
    gx_store_close(s);
    s = gx_store_open(dir, &e);
    sum = gx_store_usage_summary(s, "user", 0, NULL, &e);
    cr_assert_eq(json_integer_value(json_object_get(json_array_get(sum, 0), "requests")), 500, "close wrote the rest");
    json_decref(sum);
    gx_store_close(s);
}
