/* sessions: the durable copy of the portal's sign-in sessions (table portal_sessions).
 * Owns: the statements on portal_sessions; nothing else.
 * Must not: see a session id: the portal hands over only a keyed hash of it (so a copy
 * of the database does not hand out sessions); decide expiry (the portal passes the
 * instant each session ends, and "now" to drop the ended ones). */
#ifndef GX_STORE_SESSIONS_H
#define GX_STORE_SESSIONS_H
#include <stddef.h>
#include <stdint.h>
#include "store/store.h"

#define GX_STORE_SESSION_HASH 32

typedef struct gx_store_session {
    unsigned char id_hash[GX_STORE_SESSION_HASH];
    char user[64];
    char csrf[64];
    int64_t created_ms;
    int64_t expires_ms;   /* ends then unless touched (idle limit, capped by the absolute one) */
} gx_store_session;

/* Insert (or replace) one session. */
int gx_store_session_put(gx_store *s, const gx_store_session *ss, gx_err *err);
/* Move a session's end (it was used). Not an error when it is gone. */
int gx_store_session_touch(gx_store *s, const unsigned char *id_hash, int64_t expires_ms, gx_err *err);
/* Sign-out: delete one session. Not an error when it is gone. */
int gx_store_session_delete(gx_store *s, const unsigned char *id_hash, gx_err *err);
/* Every session of a user (deleted, or signed out everywhere). */
int gx_store_session_delete_user(gx_store *s, const char *user, gx_err *err);
/* Delete the sessions that ended by now_ms, then call fn for each remaining one, those
 * that end last (the most recently used) first, at most max of them. Returns the number
 * handed to fn, or -1. */
int gx_store_sessions_load(gx_store *s, int64_t now_ms, size_t max, void (*fn)(void *arg, const gx_store_session *ss),
                           void *arg, gx_err *err);

#endif
