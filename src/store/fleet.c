/* store/fleet: statements on fleet_requests (migration 9; see store.h).
 * Owns: the SQL of the fleet's requests, nothing more.
 * Must not: decide a request's state (ops/fleet.c does) or know git. */
#include <stdlib.h>
#include <sqlite3.h>
#include "lib/alloc.h"
#include "store/store_int.h"

static char *dump(const json_t *v)
{
    char *p = json_dumps(v ? v : json_null(), JSON_COMPACT | JSON_ENCODE_ANY);
    if (!p) gx_alloc_fail(0);   /* JSON_ENCODE_ANY encodes anything: only memory can fail */
    return p;
}

int gx_store_fleet_put(gx_store *s, const gx_store_fleet_req *r, int64_t now_ms, gx_err *err)
{
    char *m = dump(r->manifest), *rd = dump(r->rendered);
    int rc = gx_store_run(s, err,
                          "INSERT INTO fleet_requests (namespace, name, cluster, user, manifest, rendered, path, state,"
                          " commit_id, attempts, last_error, next_attempt_ms, published_ms, note, created_ms, updated_ms)"
                          " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"
                          " ON CONFLICT (namespace, name) DO UPDATE SET state = excluded.state,"
                          " commit_id = excluded.commit_id, attempts = excluded.attempts,"
                          " last_error = excluded.last_error, next_attempt_ms = excluded.next_attempt_ms,"
                          " published_ms = excluded.published_ms, note = excluded.note,"
                          " updated_ms = excluded.updated_ms",
                          "sssssssssisiisii", r->ns, r->name, r->cluster, r->user ? r->user : "", m, rd,
                          r->path ? r->path : "", r->state ? r->state : "Pending", r->commit ? r->commit : "",
                          (int64_t)r->attempts, r->last_error ? r->last_error : "", (int64_t)r->next_attempt_ms,
                          (int64_t)r->published_ms, r->note ? r->note : "", (int64_t)r->created_ms, now_ms);
    free(m);
    free(rd);
    return rc;
}

int gx_store_fleet_delete(gx_store *s, const char *ns, const char *name, gx_err *err)
{
    return gx_store_run(s, err, "DELETE FROM fleet_requests WHERE namespace = ?1 AND name = ?2", "ss", ns, name);
}

static json_t *col_json(sqlite3_stmt *st, int col)
{
    const char *t = (const char *)sqlite3_column_text(st, col);
    json_t *v = t ? json_loads(t, JSON_DECODE_ANY, NULL) : NULL;
    return v ? v : json_null();
}

static json_t *col_str(sqlite3_stmt *st, int col)
{
    const char *t = (const char *)sqlite3_column_text(st, col);
    return json_string(t ? t : "");
}

json_t *gx_store_fleet_requests(gx_store *s, gx_err *err)
{
    static const char *const names[] = {"namespace", "name", "cluster", "user", "path", "state", "commit",
                                        "lastError", "note"};
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT namespace, name, cluster, user, path, state, commit_id, last_error, note,"
                           " manifest, rendered, attempts, next_attempt_ms, published_ms, created_ms"
                           " FROM fleet_requests ORDER BY seq",
                           -1, &st, NULL) != SQLITE_OK) {
        gx_store_sqlerr(s, err, "reading fleet_requests");
        return NULL;
    }
    json_t *out = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_t *r = json_object();
        for (int i = 0; i < 9; i++) json_object_set_new(r, names[i], col_str(st, i));
        json_object_set_new(r, "manifest", col_json(st, 9));
        json_object_set_new(r, "rendered", col_json(st, 10));
        json_object_set_new(r, "attempts", json_integer(sqlite3_column_int64(st, 11)));
        json_object_set_new(r, "nextAttemptMs", json_integer(sqlite3_column_int64(st, 12)));
        json_object_set_new(r, "publishedMs", json_integer(sqlite3_column_int64(st, 13)));
        json_object_set_new(r, "createdMs", json_integer(sqlite3_column_int64(st, 14)));
        json_array_append_new(out, r);
    }
    return gx_store_read_end(s, st, rc, out, "fleet_requests", err);
}
