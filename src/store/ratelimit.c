/* store/ratelimit: statements on rate_windows (see ratelimit.h).
 * Owns: the upsert of a batch of windows and the read at start.
 * Must not: know how windows roll or what a tier is (src/maas/limits.c does). */
#include <stdio.h>
#include <stdlib.h>
#include "store/ratelimit.h"
#include "store/store_int.h"

#define MAX_ROWS 1000000   /* a read stops here: 100,000 keys x a few windows */

int gx_store_put_rate_windows(gx_store *s, const gx_store_rate_window *rows, size_t n, gx_err *err)
{
    if (!n) return 0;
    if (gx_store_begin_relaxed(s, err)) return -1;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
            "INSERT INTO rate_windows (scope, name, kind, window_ms, start_ms, used) VALUES (?1, ?2, ?3, ?4, ?5, ?6) "
            "ON CONFLICT (scope, name, kind, window_ms) DO UPDATE SET start_ms = excluded.start_ms, used = excluded.used",
            -1, &st, NULL) != SQLITE_OK) {
        gx_store_sqlerr(s, err, "prepare");
        gx_store_rollback_relaxed(s);
        return -1;
    }
    /* one statement, rebound per row: a batch of thousands stays a few milliseconds */
    for (size_t i = 0; i < n; i++) {
        const gx_store_rate_window *r = &rows[i];
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, r->scope, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, r->name, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, r->kind, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 4, r->window_ms);
        sqlite3_bind_int64(st, 5, r->start_ms);
        sqlite3_bind_int64(st, 6, r->used);
        if (sqlite3_step(st) != SQLITE_DONE) {
            gx_store_sqlerr(s, err, "writing rate-limit windows");
            sqlite3_finalize(st);
            gx_store_rollback_relaxed(s);
            return -1;
        }
    }
    sqlite3_finalize(st);
    if (gx_store_commit_relaxed(s, err)) { gx_store_rollback_relaxed(s); return -1; }
    return 0;
}

int gx_store_queue_rate_windows(gx_store *s, const gx_store_rate_window *rows, size_t n, gx_err *err)
{
    if (gx_store_bg_windows(s->bg, rows, n) == 0) return 0;
    return gx_store_put_rate_windows(s, rows, n, err);
}

json_t *gx_store_rate_windows(gx_store *s, int64_t now_ms, gx_err *err)
{
    if (gx_store_run(s, err, "DELETE FROM rate_windows WHERE start_ms + window_ms <= ?1", "i", now_ms)) return NULL;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT scope, name, kind, window_ms, start_ms, used FROM rate_windows "
                           "ORDER BY scope, name, kind, window_ms", -1, &st, NULL) != SQLITE_OK) {
        gx_store_sqlerr(s, err, "prepare");
        return NULL;
    }
    json_t *out = json_array();
    int rc;
    size_t n = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW && n++ < MAX_ROWS) {
        const char *scope = (const char *)sqlite3_column_text(st, 0);
        const char *name = (const char *)sqlite3_column_text(st, 1);
        const char *kind = (const char *)sqlite3_column_text(st, 2);
        if (!scope || !name || !kind) continue;
        json_array_append_new(out, json_pack("{s:s,s:s,s:s,s:I,s:I,s:I}", "scope", scope, "name", name, "kind", kind,
                                             "windowMs", (json_int_t)sqlite3_column_int64(st, 3),
                                             "startMs", (json_int_t)sqlite3_column_int64(st, 4),
                                             "used", (json_int_t)sqlite3_column_int64(st, 5)));
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        json_decref(out);
        gx_store_sqlerr(s, err, "reading rate-limit windows");
        return NULL;
    }
    return out;
}
