/* store: SQLite in WAL mode under the data directory.
 * Owns: the connection, migrations (PRAGMA user_version), and the statements.
 * Must not: be called from src/core; log secrets (only token hashes reach it).
 * Durability: a change is acknowledged only once it would survive a power cut, not
 * only a process crash. Commits write the WAL (synchronous=NORMAL) and a thread of the
 * store's own fsyncs it, many commits at a time (sync.c: group commit); the HTTP server
 * holds the answers that follow a commit until then. Without that thread, every commit
 * fsyncs (synchronous=FULL) on the loop. Metering data (usage, rate windows) is never
 * waited for (store_int.h); usage rows and WAL checkpoints are written by another
 * thread (background.c), so the gateway's event loop never waits on the disk. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include "lib/alloc.h"
#include "store/store_int.h"

/* Each entry moves the schema from version i to i+1. Append only, never edit. */
static const char *const migrations[] = {
    /* 1: the first schema */
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE objects ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,"
    "  manifest TEXT NOT NULL, created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,"
    "  UNIQUE (kind, namespace, name));"
    "CREATE TABLE workloads ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  namespace TEXT NOT NULL, name TEXT NOT NULL,"
    "  manifest TEXT NOT NULL, status TEXT NOT NULL, run TEXT NOT NULL,"
    "  created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,"
    "  UNIQUE (namespace, name));"
    "CREATE TABLE users ("
    "  name TEXT PRIMARY KEY, admin INTEGER NOT NULL, namespaces TEXT NOT NULL,"
    "  created_ms INTEGER NOT NULL);"
    "CREATE TABLE tokens ("
    "  id TEXT PRIMARY KEY, user TEXT NOT NULL REFERENCES users(name) ON DELETE CASCADE,"
    "  hash BLOB NOT NULL, created_ms INTEGER NOT NULL);",
    /* 2: the gateway's API keys and usage records (src/maas) */
    "CREATE TABLE api_keys ("
    "  id TEXT PRIMARY KEY, name TEXT NOT NULL, user TEXT NOT NULL, namespace TEXT NOT NULL,"
    "  tier TEXT NOT NULL, hash BLOB NOT NULL, created_ms INTEGER NOT NULL,"
    "  expires_ms INTEGER NOT NULL, revoked_ms INTEGER);"
    "CREATE TABLE usage ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT, ts_ms INTEGER NOT NULL,"
    "  key_id TEXT NOT NULL, user TEXT NOT NULL, namespace TEXT NOT NULL, model TEXT NOT NULL,"
    "  tier TEXT NOT NULL, endpoint TEXT NOT NULL, prompt_tokens INTEGER NOT NULL,"
    "  completion_tokens INTEGER NOT NULL, estimated INTEGER NOT NULL, latency_us INTEGER NOT NULL,"
    "  ttft_us INTEGER, status INTEGER NOT NULL, stream INTEGER NOT NULL);"
    "CREATE INDEX usage_ts ON usage (ts_ms);",
    /* 3: portal sign-in passwords of local users (Argon2id strings, src/portal) */
    "CREATE TABLE passwords ("
    "  user TEXT PRIMARY KEY REFERENCES users(name) ON DELETE CASCADE,"
    "  hash TEXT NOT NULL, updated_ms INTEGER NOT NULL);",
    /* 4: portal sessions, so a restart does not sign people out (src/store/sessions.c) */
    "CREATE TABLE portal_sessions ("
    "  id_hash BLOB PRIMARY KEY,"
    "  user TEXT NOT NULL REFERENCES users(name) ON DELETE CASCADE,"
    "  csrf TEXT NOT NULL, created_ms INTEGER NOT NULL, expires_ms INTEGER NOT NULL);",
    /* 5: the gateway's rate-limit windows, so a restart keeps what was used (src/store/ratelimit.c) */
    "CREATE TABLE rate_windows ("
    "  scope TEXT NOT NULL, name TEXT NOT NULL, kind TEXT NOT NULL, window_ms INTEGER NOT NULL,"
    "  start_ms INTEGER NOT NULL, used INTEGER NOT NULL,"
    "  PRIMARY KEY (scope, name, kind, window_ms));",
    /* 6: usage rows hold an integer for their six strings (key, user, namespace, model,
     * tier, endpoint), kept once in usage_dims: a row is a third of the bytes and costs
     * the writer a third less CPU (src/store/usage.c). The view keeps the old name and
     * columns for readers. */
    "CREATE TABLE usage_dims ("
    "  id INTEGER PRIMARY KEY, key_id TEXT NOT NULL, user TEXT NOT NULL, namespace TEXT NOT NULL,"
    "  model TEXT NOT NULL, tier TEXT NOT NULL, endpoint TEXT NOT NULL,"
    "  UNIQUE (key_id, user, namespace, model, tier, endpoint));"
    "INSERT INTO usage_dims (key_id, user, namespace, model, tier, endpoint)"
    "  SELECT DISTINCT key_id, user, namespace, model, tier, endpoint FROM usage;"
    "CREATE TABLE usage_rows ("
    "  seq INTEGER PRIMARY KEY, ts_ms INTEGER NOT NULL, dim INTEGER NOT NULL,"
    "  prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, estimated INTEGER NOT NULL,"
    "  latency_us INTEGER NOT NULL, ttft_us INTEGER, status INTEGER NOT NULL, stream INTEGER NOT NULL);"
    "INSERT INTO usage_rows (seq, ts_ms, dim, prompt_tokens, completion_tokens, estimated, latency_us,"
    "  ttft_us, status, stream)"
    "  SELECT u.seq, u.ts_ms, d.id, u.prompt_tokens, u.completion_tokens, u.estimated, u.latency_us,"
    "  u.ttft_us, u.status, u.stream FROM usage u JOIN usage_dims d ON d.key_id = u.key_id"
    "  AND d.user = u.user AND d.namespace = u.namespace AND d.model = u.model AND d.tier = u.tier"
    "  AND d.endpoint = u.endpoint ORDER BY u.seq;"
    "DROP TABLE usage;"
    "CREATE INDEX usage_rows_ts ON usage_rows (ts_ms);"
    "CREATE VIEW usage AS SELECT r.seq, r.ts_ms, d.key_id, d.user, d.namespace, d.model, d.tier,"
    "  d.endpoint, r.prompt_tokens, r.completion_tokens, r.estimated, r.latency_us, r.ttft_us,"
    "  r.status, r.stream FROM usage_rows r JOIN usage_dims d ON d.id = r.dim;",
    /* 7: no index on usage_rows.ts_ms: keeping it was 30 % of the writer's CPU a row.
     * Instead one mark per written batch, its first seq and its latest ts_ms: a query
     * from `since` starts at the first batch with a record at or after it (rows are
     * appended in seq order), exact even when the clock stepped back between batches. */
    "DROP INDEX usage_rows_ts;"
    "CREATE TABLE usage_marks (first_seq INTEGER PRIMARY KEY, max_ts INTEGER NOT NULL);"
    "INSERT INTO usage_marks (first_seq, max_ts) SELECT MIN(seq), MAX(ts_ms) FROM usage_rows GROUP BY seq / 1024;"
    "CREATE INDEX usage_marks_ts ON usage_marks (max_ts);",
    /* 8: the uid each namespace's pods run as, taken from run.uidRange once and kept, so
     * that files a namespace left keep their owner across restarts (src/store/identities.c) */
    "CREATE TABLE ns_identities (namespace TEXT PRIMARY KEY, uid INTEGER NOT NULL UNIQUE, created_ms INTEGER NOT NULL);",
    /* 9: fleet requests (Jobs for a cluster of the fleet) kept until they are published
     * to its git repository and, later, removed from it (src/store/fleet.c) */
    "CREATE TABLE fleet_requests ("
    "  seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    "  namespace TEXT NOT NULL, name TEXT NOT NULL, cluster TEXT NOT NULL, user TEXT NOT NULL,"
    "  manifest TEXT NOT NULL, rendered TEXT NOT NULL, path TEXT NOT NULL, state TEXT NOT NULL,"
    "  commit_id TEXT NOT NULL, attempts INTEGER NOT NULL, last_error TEXT NOT NULL,"
    "  next_attempt_ms INTEGER NOT NULL, published_ms INTEGER NOT NULL, note TEXT NOT NULL,"
    "  created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL,"
    "  UNIQUE (namespace, name));",
    /* 10: GPU time handed back, for the utilisation reports (src/store/reports.c): the
     * idle policy records what it reclaimed, the reservations what a no-show left unused */
    "CREATE TABLE idle_reclaims (ns TEXT NOT NULL, class TEXT NOT NULL, gpu_ms INTEGER NOT NULL, at_ms INTEGER NOT NULL);"
    "CREATE INDEX idle_reclaims_at ON idle_reclaims (at_ms);"
    "CREATE TABLE reservation_noshows (ns TEXT NOT NULL, class TEXT NOT NULL, gpu_ms INTEGER NOT NULL, at_ms INTEGER NOT NULL);"
    "CREATE INDEX reservation_noshows_at ON reservation_noshows (at_ms);",
};
#define N_MIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))

int gx_store_sqlerr(gx_store *s, gx_err *err, const char *what)
{
    return gx_errf(err, 500, "", "store: %s: %s", what, sqlite3_errmsg(s->db));
}

/* The message is taken before st is finalized: finalize may reset it. */
int gx_store_step_end(gx_store *s, sqlite3_stmt *st, int rc, const char *table, gx_err *err)
{
    if (rc != SQLITE_DONE) {
        char what[96];
        snprintf(what, sizeof what, "reading %s", table);
        gx_store_sqlerr(s, err, what);
        sqlite3_finalize(st);
        return -1;
    }
    sqlite3_finalize(st);
    return 0;
}

json_t *gx_store_read_end(gx_store *s, sqlite3_stmt *st, int rc, json_t *out, const char *table, gx_err *err)
{
    if (gx_store_step_end(s, st, rc, table, err)) {
        json_decref(out);
        return NULL;
    }
    return out;
}

static int exec(gx_store *s, const char *sql, gx_err *err)
{
    char *msg = NULL;
    if (sqlite3_exec(s->db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        gx_errf(err, 500, "", "store: %s", msg ? msg : "error");
        sqlite3_free(msg);
        return -1;
    }
    return 0;
}

int gx_store_schema_version(gx_store *s)
{
    sqlite3_stmt *st;
    int v = -1;
    if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) == SQLITE_OK) {
        if (sqlite3_step(st) == SQLITE_ROW) v = sqlite3_column_int(st, 0);   /* DONE or an error: -1 */
        sqlite3_finalize(st);
    }
    return v;
}

static int migrate(gx_store *s, gx_err *err)
{
    int v = gx_store_schema_version(s);
    if (v < 0) return gx_store_sqlerr(s, err, "reading schema version");
    if (v > N_MIGRATIONS)
        return gx_errf(err, 500, "", "store: database schema version %d is newer than this gpuaas (%d); "
                       "use a newer binary", v, N_MIGRATIONS);
    for (; v < N_MIGRATIONS; v++) {
        char pragma[64];
        snprintf(pragma, sizeof pragma, "PRAGMA user_version = %d;", v + 1);
        if (exec(s, "BEGIN IMMEDIATE", err)) return -1;
        if (exec(s, migrations[v], err) || exec(s, pragma, err)) {
            exec(s, "ROLLBACK", NULL);
            return -1;
        }
        if (exec(s, "COMMIT", err)) return -1;
    }
    return 0;
}

gx_store *gx_store_open(const char *dir, gx_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/gpuaas.db", dir);
    gx_store *s = calloc(1, sizeof *s);
    if (!s) { gx_errf(err, 500, "", "out of memory"); return NULL; }
    if (sqlite3_open_v2(path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        gx_errf(err, 500, "", "cannot open %s: %s", path, s->db ? sqlite3_errmsg(s->db) : "out of memory");
        gx_store_close(s);
        return NULL;
    }
    sqlite3_busy_timeout(s->db, 5000);
    if (exec(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON;", err) ||
        migrate(s, err)) {
        gx_store_close(s);
        return NULL;
    }
    /* without the thread (it could not start), SQLite's own auto-checkpoints stay on;
     * they use the WAL hook, so group commit needs the thread too */
    s->sync_pragma = "PRAGMA synchronous=FULL;";
    if ((s->bg = gx_store_bg_start(path))) {
        exec(s, "PRAGMA wal_autocheckpoint=0;", NULL);
        if ((s->sync = gx_store_sync_start(path)) && !exec(s, "PRAGMA synchronous=NORMAL;", NULL)) {
            s->sync_pragma = "PRAGMA synchronous=NORMAL;";
            sqlite3_wal_hook(s->db, gx_store_sync_hook, s->sync);
        }
    }
    return s;
}

void gx_store_close(gx_store *s)
{
    if (!s) return;
    gx_store_bg_stop(s->bg);
    if (s->db) sqlite3_wal_hook(s->db, NULL, NULL);
    gx_store_sync_stop(s->sync);
    gx_store_usage_close(s);
    if (s->db) sqlite3_wal_checkpoint_v2(s->db, "main", SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    sqlite3_close(s->db);
    free(s);
}

int gx_store_begin(gx_store *s, gx_err *err) { return exec(s, "BEGIN IMMEDIATE", err); }
int gx_store_commit(gx_store *s, gx_err *err) { return exec(s, "COMMIT", err); }
void gx_store_rollback(gx_store *s) { exec(s, "ROLLBACK", NULL); }

int gx_store_begin_relaxed(gx_store *s, gx_err *err)
{
    if (exec(s, "PRAGMA synchronous=NORMAL;", err)) return -1;
    if (exec(s, "BEGIN IMMEDIATE", err)) { exec(s, s->sync_pragma, NULL); return -1; }
    return 0;
}

int gx_store_commit_relaxed(gx_store *s, gx_err *err)
{
    int rc = exec(s, "COMMIT", err);
    exec(s, s->sync_pragma, NULL);
    return rc;
}

void gx_store_rollback_relaxed(gx_store *s)
{
    exec(s, "ROLLBACK", NULL);
    exec(s, s->sync_pragma, NULL);
}

/* Prepare, bind text/int64/blob arguments described by fmt ('s', 'i', 'b' = ptr+len), step
 * once, finalize. For writes: returns 0 or -1. */
int gx_store_run(gx_store *s, gx_err *err, const char *sql, const char *fmt, ...)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) return gx_store_sqlerr(s, err, "prepare");
    va_list ap;
    va_start(ap, fmt);
    int idx = 1;
    for (const char *f = fmt; *f; f++, idx++) {
        if (*f == 's') sqlite3_bind_text(st, idx, va_arg(ap, const char *), -1, SQLITE_TRANSIENT);
        else if (*f == 'i') sqlite3_bind_int64(st, idx, va_arg(ap, int64_t));
        else if (*f == 'b') {
            const void *p = va_arg(ap, const void *);
            int n = (int)va_arg(ap, size_t);
            sqlite3_bind_blob(st, idx, p, n, SQLITE_TRANSIENT);
        }
    }
    va_end(ap);
    int rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return gx_store_sqlerr(s, err, "write");
    return 0;
}

static char *dump(const json_t *v)
{
    char *p = json_dumps(v ? v : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
    if (!p) gx_alloc_fail(0);   /* JSON_ENCODE_ANY encodes anything: only memory can fail */
    return p;
}

static json_t *load_col(sqlite3_stmt *st, int col)
{
    const char *t = (const char *)sqlite3_column_text(st, col);
    json_t *v = t ? json_loads(t, JSON_DECODE_ANY, NULL) : NULL;
    return v ? v : json_null();
}

int gx_store_put_object(gx_store *s, const char *kind, const char *ns, const char *name,
                        const json_t *manifest, int64_t now_ms, gx_err *err)
{
    char *m = dump(manifest);
    int rc = gx_store_run(s, err,
                 "INSERT INTO objects (kind, namespace, name, manifest, created_ms, updated_ms) "
                 "VALUES (?1, ?2, ?3, ?4, ?5, ?5) ON CONFLICT (kind, namespace, name) "
                 "DO UPDATE SET manifest = excluded.manifest, updated_ms = excluded.updated_ms",
                 "ssssi", kind, ns ? ns : "", name, m, now_ms);
    free(m);
    return rc;
}

int gx_store_delete_object(gx_store *s, const char *kind, const char *ns, const char *name, gx_err *err)
{
    return gx_store_run(s, err, "DELETE FROM objects WHERE kind = ?1 AND namespace = ?2 AND name = ?3",
               "sss", kind, ns ? ns : "", name);
}

json_t *gx_store_objects(gx_store *s, gx_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT kind, namespace, name, manifest, created_ms FROM objects ORDER BY seq",
                           -1, &st, NULL) != SQLITE_OK) { gx_store_sqlerr(s, err, "prepare"); return NULL; }
    json_t *out = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:o,s:I}",
            "kind", sqlite3_column_text(st, 0), "namespace", sqlite3_column_text(st, 1),
            "name", sqlite3_column_text(st, 2), "manifest", load_col(st, 3),
            "createdMs", (json_int_t)sqlite3_column_int64(st, 4)));
    return gx_store_read_end(s, st, rc, out, "objects", err);
}

int gx_store_put_workload(gx_store *s, const char *ns, const char *name, const json_t *manifest,
                          const json_t *status, const json_t *run_rec, int64_t now_ms, gx_err *err)
{
    char *m = dump(manifest), *st = dump(status), *r = dump(run_rec);
    int rc = gx_store_run(s, err,
                 "INSERT INTO workloads (namespace, name, manifest, status, run, created_ms, updated_ms) "
                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6)",
                 "sssssi", ns, name, m, st, r, now_ms);
    if (rc && sqlite3_extended_errcode(s->db) == SQLITE_CONSTRAINT_UNIQUE)
        gx_errf(err, 409, "metadata.name", "workload %s/%s already exists", ns, name);
    free(m);
    free(st);
    free(r);
    return rc;
}

int gx_store_update_workload(gx_store *s, const char *ns, const char *name,
                             const json_t *status, const json_t *run_rec, int64_t now_ms, gx_err *err)
{
    char *st = dump(status), *r = dump(run_rec);
    int rc = gx_store_run(s, err, "UPDATE workloads SET status = ?3, run = ?4, updated_ms = ?5 "
                         "WHERE namespace = ?1 AND name = ?2",
                 "ssssi", ns, name, st, r, now_ms);
    free(st);
    free(r);
    return rc;
}

int gx_store_delete_workload(gx_store *s, const char *ns, const char *name, gx_err *err)
{
    return gx_store_run(s, err, "DELETE FROM workloads WHERE namespace = ?1 AND name = ?2", "ss", ns, name);
}

json_t *gx_store_workloads(gx_store *s, gx_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT namespace, name, manifest, status, run FROM workloads ORDER BY seq",
                           -1, &st, NULL) != SQLITE_OK) { gx_store_sqlerr(s, err, "prepare"); return NULL; }
    json_t *out = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        json_array_append_new(out, json_pack("{s:s,s:s,s:o,s:o,s:o}",
            "namespace", sqlite3_column_text(st, 0), "name", sqlite3_column_text(st, 1),
            "manifest", load_col(st, 2), "status", load_col(st, 3), "run", load_col(st, 4)));
    return gx_store_read_end(s, st, rc, out, "workloads", err);
}

int gx_store_put_user(gx_store *s, const char *name, int admin, const json_t *namespaces,
                      int64_t now_ms, gx_err *err)
{
    char *n = dump(namespaces);
    int rc = gx_store_run(s, err, "INSERT INTO users (name, admin, namespaces, created_ms) VALUES (?1, ?2, ?3, ?4)",
                 "sisi", name, (int64_t)admin, n, now_ms);
    if (rc && sqlite3_extended_errcode(s->db) == SQLITE_CONSTRAINT_PRIMARYKEY)
        gx_errf(err, 409, "name", "user %s already exists", name);
    free(n);
    return rc;
}

int gx_store_delete_user(gx_store *s, const char *name, gx_err *err)
{
    return gx_store_run(s, err, "DELETE FROM users WHERE name = ?1", "s", name);
}

json_t *gx_store_users(gx_store *s, gx_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT name, admin, namespaces, created_ms FROM users ORDER BY name",
                           -1, &st, NULL) != SQLITE_OK) { gx_store_sqlerr(s, err, "prepare"); return NULL; }
    json_t *out = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        json_array_append_new(out, json_pack("{s:s,s:b,s:o,s:I}",
            "name", sqlite3_column_text(st, 0), "admin", sqlite3_column_int(st, 1),
            "namespaces", load_col(st, 2), "createdMs", (json_int_t)sqlite3_column_int64(st, 3)));
    return gx_store_read_end(s, st, rc, out, "users", err);
}

int gx_store_put_token(gx_store *s, const char *id, const char *user, const unsigned char *hash,
                       size_t hash_len, int64_t now_ms, gx_err *err)
{
    return gx_store_run(s, err, "INSERT INTO tokens (id, user, hash, created_ms) VALUES (?1, ?2, ?3, ?4)",
               "ssbi", id, user, (const void *)hash, hash_len, now_ms);
}

int gx_store_delete_tokens_of(gx_store *s, const char *user, gx_err *err)
{
    return gx_store_run(s, err, "DELETE FROM tokens WHERE user = ?1", "s", user);
}

json_t *gx_store_tokens(gx_store *s, gx_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT id, user, hash FROM tokens", -1, &st, NULL) != SQLITE_OK) {
        gx_store_sqlerr(s, err, "prepare");
        return NULL;
    }
    json_t *out = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *h = sqlite3_column_blob(st, 2);
        int n = sqlite3_column_bytes(st, 2);
        char hex[129] = "";
        for (int i = 0; i < n && i < 64; i++) snprintf(hex + 2 * i, 3, "%02x", h[i]);
        json_array_append_new(out, json_pack("{s:s,s:s,s:s}", "id", sqlite3_column_text(st, 0),
                                             "user", sqlite3_column_text(st, 1), "hash", hex));
    }
    return gx_store_read_end(s, st, rc, out, "tokens", err);
}

/* Three answers, not two: a caller that took an error for "absent" would write a fresh
 * value over the one it could not read (the portal's session key, say). */
int gx_store_meta_get(gx_store *s, const char *key, char *out, size_t n, gx_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL) != SQLITE_OK)
        return gx_store_sqlerr(s, err, "reading meta");
    sqlite3_bind_text(st, 1, key, -1, SQLITE_TRANSIENT);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        const char *v = (const char *)sqlite3_column_text(st, 0);
        if (!v) {   /* a NOT NULL column: SQLite ran out of memory */
            sqlite3_finalize(st);
            return gx_errf(err, 500, "", "store: reading meta %s: out of memory", key);
        }
        snprintf(out, n, "%s", v);
        sqlite3_finalize(st);
        return 0;
    }
    return gx_store_step_end(s, st, rc, "meta", err) ? -1 : 1;
}

int gx_store_meta_put(gx_store *s, const char *key, const char *value, gx_err *err)
{
    return gx_store_run(s, err, "INSERT INTO meta (key, value) VALUES (?1, ?2) "
                       "ON CONFLICT (key) DO UPDATE SET value = excluded.value", "ss", key, value);
}

/* ---- gateway: API keys (usage records: usage.c) --------------------------------------- */

int gx_store_put_api_key(gx_store *s, const gx_store_api_key *k, gx_err *err)
{
    return gx_store_run(s, err,
               "INSERT INTO api_keys (id, name, user, namespace, tier, hash, created_ms, expires_ms) "
               "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
               "sssssbii", k->id, k->name, k->user, k->ns, k->tier, (const void *)k->hash, k->hash_len,
               k->created_ms, k->expires_ms);
}

int gx_store_revoke_api_key(gx_store *s, const char *id, int64_t now_ms, gx_err *err)
{
    return gx_store_run(s, err, "UPDATE api_keys SET revoked_ms = ?2 WHERE id = ?1 AND revoked_ms IS NULL", "si", id, now_ms);
}

/* Only what the gateway holds in memory (see maas/keys.c): the active keys and the
 * ended_keep that ended last, so that start-up never reads every key ever made. */
json_t *gx_store_api_keys(gx_store *s, int64_t now_ms, int64_t ended_keep, gx_err *err)
{
    sqlite3_stmt *st;
#define ACTIVE "(revoked_ms IS NULL AND (expires_ms = 0 OR expires_ms > ?1))"
    if (sqlite3_prepare_v2(s->db, "SELECT id, name, user, namespace, tier, hash, created_ms, expires_ms, "
                           "COALESCE(revoked_ms, 0) FROM api_keys WHERE " ACTIVE " OR id IN (SELECT id FROM api_keys "
                           "WHERE NOT " ACTIVE " ORDER BY COALESCE(revoked_ms, expires_ms) DESC LIMIT ?2) "
                           "ORDER BY created_ms", -1, &st, NULL) != SQLITE_OK) {
#undef ACTIVE
        gx_store_sqlerr(s, err, "prepare");
        return NULL;
    }
    sqlite3_bind_int64(st, 1, now_ms);
    sqlite3_bind_int64(st, 2, ended_keep);
    json_t *out = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const unsigned char *h = sqlite3_column_blob(st, 5);
        int n = sqlite3_column_bytes(st, 5);
        char hex[129] = "";
        for (int i = 0; i < n && i < 64; i++) snprintf(hex + 2 * i, 3, "%02x", h[i]);
        json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:I,s:I,s:I}",
            "id", sqlite3_column_text(st, 0), "name", sqlite3_column_text(st, 1), "user", sqlite3_column_text(st, 2),
            "namespace", sqlite3_column_text(st, 3), "tier", sqlite3_column_text(st, 4), "hash", hex,
            "createdMs", (json_int_t)sqlite3_column_int64(st, 6), "expiresMs", (json_int_t)sqlite3_column_int64(st, 7),
            "revokedMs", (json_int_t)sqlite3_column_int64(st, 8)));
    }
    return gx_store_read_end(s, st, rc, out, "api_keys", err);
}

/* ---- portal: passwords, user updates ---------------------------------------------- */

int gx_store_put_password(gx_store *s, const char *user, const char *hash, int64_t now_ms, gx_err *err)
{
    return gx_store_run(s, err, "INSERT INTO passwords (user, hash, updated_ms) VALUES (?1, ?2, ?3) "
                       "ON CONFLICT (user) DO UPDATE SET hash = excluded.hash, updated_ms = excluded.updated_ms",
               "ssi", user, hash, now_ms);
}

json_t *gx_store_passwords(gx_store *s, gx_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT user, hash FROM passwords", -1, &st, NULL) != SQLITE_OK) {
        gx_store_sqlerr(s, err, "prepare");
        return NULL;
    }
    json_t *out = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        json_array_append_new(out, json_pack("{s:s,s:s}", "user", sqlite3_column_text(st, 0),
                                             "hash", sqlite3_column_text(st, 1)));
    return gx_store_read_end(s, st, rc, out, "passwords", err);
}

int gx_store_update_user(gx_store *s, const char *name, int admin, const json_t *namespaces, gx_err *err)
{
    char *n = dump(namespaces);
    int rc = gx_store_run(s, err, "UPDATE users SET admin = ?2, namespaces = ?3 WHERE name = ?1", "sis", name, (int64_t)admin, n);
    free(n);
    return rc;
}
