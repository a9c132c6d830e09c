/* sessions: statements on portal_sessions (see sessions.h).
 * Owns: the SQL of the portal's durable sessions, nothing more.
 * Must not: receive a session id (only its keyed hash), log a row (the CSRF token is a
 * secret of its session). */
#include <stdio.h>
#include <string.h>
#include <sqlite3.h>
#include "store/sessions.h"
#include "store/store_int.h"

int gx_store_session_put(gx_store *s, const gx_store_session *ss, gx_err *err)
{
    return gx_store_run(s, err,
                        "INSERT OR REPLACE INTO portal_sessions (id_hash, user, csrf, created_ms, expires_ms) "
                        "VALUES (?1, ?2, ?3, ?4, ?5)",
                        "bssii", (const void *)ss->id_hash, (size_t)GX_STORE_SESSION_HASH, ss->user, ss->csrf,
                        (int64_t)ss->created_ms, (int64_t)ss->expires_ms);
}

int gx_store_session_touch(gx_store *s, const unsigned char *id_hash, int64_t expires_ms, gx_err *err)
{
    return gx_store_run(s, err, "UPDATE portal_sessions SET expires_ms = ?2 WHERE id_hash = ?1", "bi",
                        (const void *)id_hash, (size_t)GX_STORE_SESSION_HASH, (int64_t)expires_ms);
}

int gx_store_session_delete(gx_store *s, const unsigned char *id_hash, gx_err *err)
{
    return gx_store_run(s, err, "DELETE FROM portal_sessions WHERE id_hash = ?1", "b", (const void *)id_hash,
                        (size_t)GX_STORE_SESSION_HASH);
}

int gx_store_session_delete_user(gx_store *s, const char *user, gx_err *err)
{
    return gx_store_run(s, err, "DELETE FROM portal_sessions WHERE user = ?1", "s", user);
}

int gx_store_sessions_load(gx_store *s, int64_t now_ms, size_t max, void (*fn)(void *arg, const gx_store_session *ss),
                           void *arg, gx_err *err)
{
    if (gx_store_run(s, err, "DELETE FROM portal_sessions WHERE expires_ms <= ?1", "i", (int64_t)now_ms)) return -1;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db,
                           "SELECT id_hash, user, csrf, created_ms, expires_ms FROM portal_sessions "
                           "ORDER BY expires_ms DESC, created_ms DESC LIMIT ?1",
                           -1, &st, NULL) != SQLITE_OK)
        return gx_store_sqlerr(s, err, "prepare");
    sqlite3_bind_int64(st, 1, (sqlite3_int64)max);
    int n = 0, rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        gx_store_session ss;
        memset(&ss, 0, sizeof ss);
        const void *h = sqlite3_column_blob(st, 0);
        const char *user = (const char *)sqlite3_column_text(st, 1), *csrf = (const char *)sqlite3_column_text(st, 2);
        /* a row this daemon did not write (wrong sizes) is skipped, never half-loaded */
        if (!h || sqlite3_column_bytes(st, 0) != GX_STORE_SESSION_HASH || !user || !csrf ||
            strlen(user) >= sizeof ss.user || strlen(csrf) >= sizeof ss.csrf)
            continue;
        memcpy(ss.id_hash, h, GX_STORE_SESSION_HASH);
        snprintf(ss.user, sizeof ss.user, "%s", user);
        snprintf(ss.csrf, sizeof ss.csrf, "%s", csrf);
        ss.created_ms = sqlite3_column_int64(st, 3);
        ss.expires_ms = sqlite3_column_int64(st, 4);
        fn(arg, &ss);
        memset(&ss, 0, sizeof ss);
        n++;
    }
    /* rows handed to fn before a failure stay the caller's: it hears -1 */
    return gx_store_step_end(s, st, rc, "portal_sessions", err) ? -1 : n;
}
