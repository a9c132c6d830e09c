/* bench/usage_write: what the gateway's usage writer spends per record.
 * Writes ROWS records in batches of 300 (a 20 ms batch at 15,000 req/s) through the
 * store's own gx_store_put_usage, and, in the same run, the same records into the
 * reference: one plain SQLite table with the six strings in every row (the layout before
 * migration 6), inserted 16 rows a statement in one transaction a batch, WAL, no fsync.
 * CPU time of the writing thread, without WAL checkpoints on either side.
 * Rounds alternate the two; prints microseconds per record (CPU) for each, medians, and
 * the ratio. Never fails on time.
 * Usage: build/bench-usage-write [ROWS=90000] [ROUNDS=5] */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "store/store.h"

#define BATCH 300

/* CPU of this thread only: the store's WAL checkpoints run on its background thread and
 * the reference's are switched off, so neither side's figure includes checkpointing. */
static double cpu_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* Records as the gateway makes them: a few keys, users and models, increasing times. */
static void fill(gx_store_usage *rows, int64_t *ts)
{
    static const char *keys[] = {"3f9a0c1b2d4e5f60", "77aa00bb11cc22dd", "0123456789abcdef", "fedcba9876543210"};
    static const char *users[] = {"alice", "bob", "carol"};
    static const char *models[] = {"llama-3-8b", "mistral-7b"};
    for (int i = 0; i < BATCH; i++)
        rows[i] = (gx_store_usage){(*ts)++, keys[i % 4], users[i % 3], "team-a", models[i % 2], "standard",
                                   "/v1/chat/completions", 12 + i % 50, 8 + i % 30, 2000 + i, i % 5 ? -1 : 900,
                                   0, i % 2, 200};
}

static void die(const char *what, const char *msg)
{
    fprintf(stderr, "bench/usage_write: %s: %s\n", what, msg);
    exit(1);
}

static void ex(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) die(sql, msg ? msg : "?");
}

/* The reference: the pre-migration-6 table, written the way the store wrote it. */
static sqlite3 *ref_open(const char *dir, sqlite3_stmt **many, sqlite3_stmt **one)
{
    char path[512];
    snprintf(path, sizeof path, "%s/reference.db", dir);
    sqlite3 *db;
    if (sqlite3_open(path, &db) != SQLITE_OK) die(path, sqlite3_errmsg(db));
    ex(db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA wal_autocheckpoint=0;"
           "CREATE TABLE usage (seq INTEGER PRIMARY KEY AUTOINCREMENT, ts_ms INTEGER NOT NULL,"
           " key_id TEXT NOT NULL, user TEXT NOT NULL, namespace TEXT NOT NULL, model TEXT NOT NULL,"
           " tier TEXT NOT NULL, endpoint TEXT NOT NULL, prompt_tokens INTEGER NOT NULL,"
           " completion_tokens INTEGER NOT NULL, estimated INTEGER NOT NULL, latency_us INTEGER NOT NULL,"
           " ttft_us INTEGER, status INTEGER NOT NULL, stream INTEGER NOT NULL);"
           "CREATE INDEX usage_ts ON usage (ts_ms);");
    for (int k = 16; k >= 1; k -= 15) {
        char sql[4096];
        int len = snprintf(sql, sizeof sql, "INSERT INTO usage (ts_ms, key_id, user, namespace, model, tier, "
                           "endpoint, prompt_tokens, completion_tokens, estimated, latency_us, ttft_us, status, "
                           "stream) VALUES ");
        for (int i = 0; i < k; i++)
            len += snprintf(sql + len, sizeof sql - (size_t)len, "%s(?,?,?,?,?,?,?,?,?,?,?,?,?,?)", i ? "," : "");
        if (sqlite3_prepare_v2(db, sql, -1, k > 1 ? many : one, NULL) != SQLITE_OK) die("prepare", sqlite3_errmsg(db));
    }
    return db;
}

static void ref_put(sqlite3 *db, sqlite3_stmt *many, sqlite3_stmt *one, const gx_store_usage *rows)
{
    ex(db, "BEGIN IMMEDIATE");
    for (int i = 0; i < BATCH;) {
        int k = BATCH - i >= 16 ? 16 : 1;
        sqlite3_stmt *st = k > 1 ? many : one;
        for (int j = 0; j < k; j++) {
            const gx_store_usage *r = &rows[i + j];
            int p = 1 + 14 * j;
            const char *f[] = {r->key_id, r->user, r->ns, r->model, r->tier, r->endpoint};
            sqlite3_bind_int64(st, p, r->ts_ms);
            for (int s = 0; s < 6; s++) sqlite3_bind_text(st, p + 1 + s, f[s], -1, SQLITE_STATIC);
            sqlite3_bind_int64(st, p + 7, r->prompt);
            sqlite3_bind_int64(st, p + 8, r->completion);
            sqlite3_bind_int(st, p + 9, r->estimated);
            sqlite3_bind_int64(st, p + 10, r->latency_us);
            if (r->ttft_us >= 0) sqlite3_bind_int64(st, p + 11, r->ttft_us);
            else sqlite3_bind_null(st, p + 11);
            sqlite3_bind_int(st, p + 12, r->status);
            sqlite3_bind_int(st, p + 13, r->stream);
        }
        if (sqlite3_step(st) != SQLITE_DONE) die("insert", sqlite3_errmsg(db));
        sqlite3_reset(st);
        i += k;
    }
    ex(db, "COMMIT");
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    int total = argc > 1 ? atoi(argv[1]) : 90000, rounds = argc > 2 ? atoi(argv[2]) : 5;
    if (total < BATCH || rounds < 1 || rounds > 99) die("usage", "bench-usage-write [ROWS >= 300] [ROUNDS 1-99]");
    int batches = total / BATCH;
    char dir[] = "/tmp/gpuaas-bench-usage.XXXXXX";
    if (!mkdtemp(dir)) die("mkdtemp", "failed");
    gx_err e;
    gx_err_clear(&e);
    gx_store *s = gx_store_open(dir, &e);
    if (!s) die("gx_store_open", e.msg);
    sqlite3_stmt *many, *one;
    sqlite3 *ref = ref_open(dir, &many, &one);
    gx_store_usage rows[BATCH];
    int64_t ts_store = 1700000000000, ts_ref = ts_store;
    double us_store[99], us_ref[99];
    printf("usage writer: %d records a round in batches of %d, %d rounds (CPU microseconds a record)\n",
           batches * BATCH, BATCH, rounds);
    for (int r = 0; r < rounds; r++) {
        double t0 = cpu_s();
        for (int b = 0; b < batches; b++) {
            fill(rows, &ts_store);
            if (gx_store_put_usage(s, rows, BATCH, &e)) die("gx_store_put_usage", e.msg);
        }
        double t1 = cpu_s();
        for (int b = 0; b < batches; b++) {
            fill(rows, &ts_ref);
            ref_put(ref, many, one, rows);
        }
        double t2 = cpu_s();
        sqlite3_wal_checkpoint_v2(ref, "main", SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);  /* untimed */
        us_store[r] = (t1 - t0) * 1e6 / (batches * BATCH);
        us_ref[r] = (t2 - t1) * 1e6 / (batches * BATCH);
        printf("  round %d   gpuaas store %6.2f us   reference (one table) %6.2f us\n", r + 1, us_store[r], us_ref[r]);
    }
    qsort(us_store, (size_t)rounds, sizeof us_store[0], cmp);
    qsort(us_ref, (size_t)rounds, sizeof us_ref[0], cmp);
    double ms = us_store[rounds / 2], mr = us_ref[rounds / 2];
    printf("  medians    gpuaas store %6.2f us   reference %6.2f us   ratio store/reference %.2f\n", ms, mr, ms / mr);
    sqlite3_finalize(many);
    sqlite3_finalize(one);
    sqlite3_close(ref);
    gx_store_close(s);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "bench/usage_write: could not remove %s\n", dir);
    return 0;
}
