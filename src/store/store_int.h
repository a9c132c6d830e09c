/* store_int: what the store's own files share (store.c, sessions.c, ratelimit.c).
 * Owns: the connection struct and the two statement helpers.
 * Must not: be included outside src/store. */
#ifndef GX_STORE_INT_H
#define GX_STORE_INT_H
#include <sqlite3.h>
#include "store/store.h"

struct gx_store {
    sqlite3 *db;
};

/* Fill err with "store: WHAT: sqlite's message"; returns -1. */
int gx_store_sqlerr(gx_store *s, gx_err *err, const char *what);
/* Prepare, bind text/int64/blob arguments described by fmt ('s', 'i', 'b' = ptr+len), step
 * once, finalize. For writes: returns 0 or -1. */
int gx_store_run(gx_store *s, gx_err *err, const char *sql, const char *fmt, ...);

#endif
