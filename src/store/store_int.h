/* store_int: what the store's own files share (store.c, usage.c, sessions.c, ratelimit.c,
 * background.c).
 * Owns: the connection struct and the two statement helpers.
 * Must not: be included outside src/store. */
#ifndef GX_STORE_INT_H
#define GX_STORE_INT_H
#include <sqlite3.h>
#include "store/store.h"

struct gx_store {
    sqlite3 *db;
    struct gx_store_bg *bg;      /* the background writer thread (background.c), or NULL */
    struct gx_store_usage_cx *usage; /* usage statements and dimension ids (usage.c), or NULL */
    struct gx_store_sync *sync;  /* the group-commit thread (sync.c), or NULL: then FULL */
    const char *sync_pragma;     /* the connection's synchronous setting, restored after relaxed */
};

/* usage.c: finalizes the connection's usage statements; before sqlite3_close. */
void gx_store_usage_close(gx_store *s);

/* Metering data (usage records, rate-limit windows) is committed without an fsync
 * (synchronous=NORMAL for that transaction): a power cut may lose the last batches,
 * a crash of the process loses nothing, and the event loop never waits on the disk
 * for it. Workload and object changes are fsynced before they are acknowledged: by
 * the group-commit thread (sync.c), or, without it, by synchronous=FULL. */
int gx_store_begin_relaxed(gx_store *s, gx_err *err);
int gx_store_commit_relaxed(gx_store *s, gx_err *err);
void gx_store_rollback_relaxed(gx_store *s);

/* Fill err with "store: WHAT: sqlite's message"; returns -1. */
int gx_store_sqlerr(gx_store *s, gx_err *err, const char *what);
/* The end of a read loop (`while ((rc = sqlite3_step(st)) == SQLITE_ROW)`): finalizes st
 * and returns out, or, when rc is anything but SQLITE_DONE (SQLITE_BUSY or SQLITE_IOERR
 * part-way looks like the end to such a loop), frees out and returns NULL with err saying
 * "store: reading TABLE: sqlite's message". A short list is never an answer. */
json_t *gx_store_read_end(gx_store *s, sqlite3_stmt *st, int rc, json_t *out, const char *table, gx_err *err);
/* The same for a loop with no list: 0, or -1 with err. */
int gx_store_step_end(gx_store *s, sqlite3_stmt *st, int rc, const char *table, gx_err *err);

/* Prepare, bind text/int64/blob arguments described by fmt ('s', 'i', 'b' = ptr+len), step
 * once, finalize. For writes: returns 0 or -1. */
int gx_store_run(gx_store *s, gx_err *err, const char *sql, const char *fmt, ...);

/* sync.c: the group-commit thread, fsyncing DB_PATH-wal; NULL when it cannot start. */
struct gx_store_sync *gx_store_sync_start(const char *db_path);
void gx_store_sync_stop(struct gx_store_sync *y);
/* sqlite3_wal_hook's callback on the loop's connection (ud: the sync). */
int gx_store_sync_hook(void *ud, sqlite3 *db, const char *name, int pages);

/* background.c: a thread with its own connection that writes queued usage rows and
 * checkpoints the WAL every second. NULL when it cannot start (then the store writes
 * usage inline and SQLite checkpoints by itself). Stop drains the queue first. */
struct gx_store_bg *gx_store_bg_start(const char *path);
void gx_store_bg_stop(struct gx_store_bg *bg);
/* Queue a copy of rows; 0, or -1 when there is no thread (write them inline). */
int gx_store_bg_usage(struct gx_store_bg *bg, const gx_store_usage *rows, size_t n);
/* The same for rate-limit windows (store/ratelimit.h), in the same queue. */
struct gx_store_rate_window;
int gx_store_bg_windows(struct gx_store_bg *bg, const struct gx_store_rate_window *rows, size_t n);
/* Wait until every queued row is committed (or has failed and been reported). */
void gx_store_bg_sync(struct gx_store_bg *bg);
/* Rows queued or being written, not yet committed. */
size_t gx_store_bg_pending(struct gx_store_bg *bg);

#endif
