/* store/usage: usage records with their strings kept once (migration 6) and time
 * ranges found by batch marks (migration 7), against real SQLite in a throw-away folder. */
#include <criterion/criterion.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>
#include "store/store.h"
#include "test_store_util.h"

static json_t *group(gx_store *s, const char *by, const char *name)
{
    gx_err e;
    json_t *sum = gx_store_usage_summary(s, by, 0, NULL, &e);
    cr_assert_not_null(sum, "%s", e.msg);
    size_t i;
    json_t *g;
    json_array_foreach(sum, i, g)
        if (!strcmp(json_string_value(json_object_get(g, "group")), name)) {
            json_incref(g);
            json_decref(sum);
            return g;
        }
    json_decref(sum);
    return NULL;
}

static json_int_t requests(gx_store *s, const char *by, const char *name)
{
    json_t *g = group(s, by, name);
    json_int_t n = g ? json_integer_value(json_object_get(g, "requests")) : 0;
    json_decref(g);
    return n;
}

static long long count(const char *sql)
{
    char path[128];
    snprintf(path, sizeof path, "%s/gpuaas.db", dir);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    long long n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return n;
}

/* Strings that differ only in where one ends and the next begins are different
 * dimensions; equal ones share one; every field reads back through the view. */
Test(store_usage, dimensions_are_shared_and_kept_apart, .init = store_tmp_make, .fini = store_tmp_remove)
{
    gx_store *s = open_store();
    gx_err e;
    gx_store_usage rows[] = {
        {1000, "ab", "c", "ns", "m", "t", "/v1/chat/completions", 10, 5, 900, 100, 0, 0, 200},
        {1001, "a", "bc", "ns", "m", "t", "/v1/chat/completions", 20, 6, 900, -1, 1, 1, 200},
        {1002, "ab", "c", "ns", "m", "t", "/v1/chat/completions", 30, 7, 900, 100, 0, 0, 429},
    };
    cr_assert_eq(gx_store_put_usage(s, rows, 3, &e), 0, "%s", e.msg);
    cr_assert_eq(requests(s, "key", "ab"), 2);
    cr_assert_eq(requests(s, "key", "a"), 1);
    cr_assert_eq(requests(s, "user", "bc"), 1);
    json_t *g = group(s, "key", "ab");
    cr_assert_eq(json_integer_value(json_object_get(g, "promptTokens")), 40);
    cr_assert_eq(json_integer_value(json_object_get(g, "errors")), 1);
    cr_assert_eq(json_integer_value(json_object_get(g, "limited")), 1, "the 429 counts as limited");
    json_decref(g);
    gx_store_close(s);
    cr_assert_eq(count("SELECT COUNT(*) FROM usage_dims"), 2);
    cr_assert_eq(count("SELECT COUNT(*) FROM usage WHERE ttft_us IS NULL AND estimated = 1 AND stream = 1 "
                       "AND user = 'bc' AND endpoint = '/v1/chat/completions'"), 1);
}

/* More distinct dimensions than the id cache holds, over several batches and a reopen:
 * each is stored once and every row is counted under its own key. */
Test(store_usage, more_dimensions_than_the_cache_holds, .init = store_tmp_make, .fini = store_tmp_remove)
{
    gx_store *s = open_store();
    gx_err e;
    enum { KEYS = 3000, ROUNDS = 3 };
    static char names[KEYS][16];
    static gx_store_usage rows[KEYS];
    for (int i = 0; i < KEYS; i++) {
        snprintf(names[i], sizeof names[i], "k-%d", i);
        rows[i] = (gx_store_usage){2000 + i, names[i], "alice", "team-a", "m", "t", "/v1/embeddings", 1, 0, 10, -1, 0, 0, 200};
    }
    for (int r = 0; r < ROUNDS; r++) {
        if (r == 2) { gx_store_close(s); s = open_store(); }
        cr_assert_eq(gx_store_queue_usage(s, rows, KEYS, &e), 0, "%s", e.msg);
        gx_store_sync_usage(s);
    }
    cr_assert_eq(requests(s, "user", "alice"), KEYS * ROUNDS);
    cr_assert_eq(requests(s, "key", "k-0"), ROUNDS);
    cr_assert_eq(requests(s, "key", "k-2999"), ROUNDS);
    gx_store_close(s);
    cr_assert_eq(count("SELECT COUNT(*) FROM usage_dims"), KEYS);
    cr_assert_eq(count("SELECT COUNT(DISTINCT dim) FROM usage_rows"), KEYS);
}

/* A database written before migration 6 (usage with its strings in every row) keeps
 * its records: they read back the same after the upgrade. */
Test(store_usage, records_of_the_old_schema_survive_the_upgrade, .init = store_tmp_make, .fini = store_tmp_remove)
{
    gx_store *s = open_store();
    gx_store_close(s);
    char path[128];
    snprintf(path, sizeof path, "%s/gpuaas.db", dir);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open(path, &db), SQLITE_OK);
    /* back to version 5: the usage table as migration 2 made it, with two old rows */
    const char *v5 =
        "DROP VIEW usage; DROP TABLE usage_rows; DROP TABLE usage_dims; DROP TABLE usage_marks;"
        "DROP TABLE ns_identities; DROP TABLE fleet_requests;"
        "DROP TABLE idle_reclaims; DROP TABLE reservation_noshows;"
        "CREATE TABLE usage ("
        "  seq INTEGER PRIMARY KEY AUTOINCREMENT, ts_ms INTEGER NOT NULL,"
        "  key_id TEXT NOT NULL, user TEXT NOT NULL, namespace TEXT NOT NULL, model TEXT NOT NULL,"
        "  tier TEXT NOT NULL, endpoint TEXT NOT NULL, prompt_tokens INTEGER NOT NULL,"
        "  completion_tokens INTEGER NOT NULL, estimated INTEGER NOT NULL, latency_us INTEGER NOT NULL,"
        "  ttft_us INTEGER, status INTEGER NOT NULL, stream INTEGER NOT NULL);"
        "CREATE INDEX usage_ts ON usage (ts_ms);"
        "INSERT INTO usage VALUES (NULL, 5000, 'k1', 'bob', 'team-b', 'm', 't', '/v1/completions', 7, 3, 0, 10, 4, 200, 1);"
        "INSERT INTO usage VALUES (NULL, 5001, 'k1', 'bob', 'team-b', 'm', 't', '/v1/completions', 8, 2, 1, 10, NULL, 500, 0);"
        "PRAGMA user_version = 5;";
    char *msg = NULL;
    cr_assert_eq(sqlite3_exec(db, v5, NULL, NULL, &msg), SQLITE_OK, "%s", msg ? msg : "");
    sqlite3_close(db);
    s = open_store();
    json_t *g = group(s, "namespace", "team-b");
    cr_assert_not_null(g, "the old rows are gone");
    cr_assert_eq(json_integer_value(json_object_get(g, "requests")), 2);
    cr_assert_eq(json_integer_value(json_object_get(g, "promptTokens")), 15);
    cr_assert_eq(json_integer_value(json_object_get(g, "completionTokens")), 5);
    cr_assert_eq(json_integer_value(json_object_get(g, "estimatedRequests")), 1);
    cr_assert_eq(json_integer_value(json_object_get(g, "errors")), 1);
    json_decref(g);
    gx_err e;
    gx_store_usage row = {6000, "k1", "bob", "team-b", "m", "t", "/v1/completions", 1, 1, 10, -1, 0, 0, 200};
    cr_assert_eq(gx_store_put_usage(s, &row, 1, &e), 0, "%s", e.msg);
    cr_assert_eq(requests(s, "key", "k1"), 3);
    gx_store_close(s);
    cr_assert_eq(count("SELECT COUNT(*) FROM usage_dims"), 1, "the new row reuses the migrated dimension");
    cr_assert_eq(count("SELECT COUNT(*) FROM usage WHERE ttft_us = 4 AND stream = 1 AND seq < 3"), 1);
}

/* Requests (every group) at or after since, through the summary. */
static json_int_t since_count(gx_store *s, int64_t since)
{
    gx_err e;
    json_t *sum = gx_store_usage_summary(s, "user", since, NULL, &e);
    cr_assert_not_null(sum, "%s", e.msg);
    json_int_t n = 0;
    size_t i;
    json_t *g;
    json_array_foreach(sum, i, g) n += json_integer_value(json_object_get(g, "requests"));
    json_decref(sum);
    return n;
}

/* since= starts at the first batch with a record at or after it (usage_marks, migration
 * 7): exact for every cut, also when the clock stepped back between batches and within
 * one, and for batches longer than one INSERT statement. Checked against a count of the
 * same rows by ts_ms alone. */
Test(store_usage, since_is_exact_when_time_goes_back, .init = store_tmp_make, .fini = store_tmp_remove)
{
    gx_store *s = open_store();
    gx_err e;
    static const int64_t batches[][3] = {   /* first ts, step, rows */
        {1000, 1, 40}, {500, 2, 37}, {2000, -3, 5}, {1500, 0, 1}, {3000, 1, 100}};
    gx_store_usage rows[100];
    for (size_t b = 0; b < sizeof batches / sizeof *batches; b++) {
        for (int i = 0; i < batches[b][2]; i++)
            rows[i] = (gx_store_usage){batches[b][0] + batches[b][1] * i, "k", "u", "ns", "m", "t",
                                       "/v1/chat/completions", 1, 1, 10, -1, 0, 0, 200};
        cr_assert_eq(gx_store_put_usage(s, rows, (size_t)batches[b][2], &e), 0, "%s", e.msg);
    }
    cr_assert_eq(count("SELECT COUNT(*) FROM usage_marks"), 5, "one mark a batch");
    for (int64_t since = 0; since <= 3200; since += 7) {
        char sql[96];
        snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM usage_rows WHERE ts_ms >= %lld", (long long)since);
        cr_assert_eq(since_count(s, since), count(sql), "since %lld", (long long)since);
    }
    cr_assert_eq(since_count(s, 99999), 0);
    cr_assert_eq(count("SELECT COUNT(*) FROM sqlite_master WHERE name = 'usage_rows_ts'"), 0, "no ts index");
    gx_store_close(s);
}
