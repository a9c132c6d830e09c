/* store/gpu_history: statements on gpu_minute in DATA/gpu-history.db (see gpu_history.h).
 * Owns: the connection to that file, its schema, the write and the read.
 * Must not: touch gpuaas.db, or know how a minute is summarised (gpu/history.c). */
#include <stdio.h>
#include <stdlib.h>
#include <sqlite3.h>
#include "lib/alloc.h"
#include "store/gpu_history.h"

struct gx_store_gpu_history {
    sqlite3 *db;
};

/* "store: gpu history: WHAT: sqlite's message"; returns -1. */
static int sqlerr(gx_store_gpu_history *h, gx_err *err, const char *what)
{
    return gx_errf(err, 500, "", "store: gpu history: %s: %s", what, sqlite3_errmsg(h->db));
}

gx_store_gpu_history *gx_store_gpu_history_open(const char *path, gx_err *err)
{
    gx_store_gpu_history *h = gx_xcalloc(1, sizeof *h);
    if (sqlite3_open_v2(path, &h->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
        sqlite3_exec(h->db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                     "CREATE TABLE IF NOT EXISTS gpu_minute(uuid TEXT NOT NULL, t_ms INTEGER NOT NULL,"
                     " util_mean REAL, util_max INTEGER, mem_used_mib INTEGER, samples INTEGER NOT NULL,"
                     " PRIMARY KEY(uuid, t_ms)) WITHOUT ROWID;",
                     NULL, NULL, NULL) != SQLITE_OK) {
        gx_errf(err, 500, "", "cannot open %s: %s", path, h->db ? sqlite3_errmsg(h->db) : "out of memory");
        gx_store_gpu_history_close(h);
        return NULL;
    }
    return h;
}

void gx_store_gpu_history_close(gx_store_gpu_history *h)
{
    if (!h) return;
    sqlite3_close(h->db);
    free(h);
}

int gx_store_gpu_history_put(gx_store_gpu_history *h, const gx_store_gpu_minute *rows, size_t n,
                             int64_t prune_before_ms, gx_err *err)
{
    sqlite3_stmt *ins = NULL, *del = NULL;
    int rc = -1;
    if (sqlite3_exec(h->db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) return sqlerr(h, err, "begin");
    if (sqlite3_prepare_v2(h->db, "INSERT OR REPLACE INTO gpu_minute VALUES (?,?,?,?,?,?)", -1, &ins, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(h->db, "DELETE FROM gpu_minute WHERE t_ms < ?", -1, &del, NULL) != SQLITE_OK) {
        sqlerr(h, err, "prepare");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const gx_store_gpu_minute *r = &rows[i];
        sqlite3_reset(ins);
        sqlite3_bind_text(ins, 1, r->uuid, -1, SQLITE_STATIC);
        sqlite3_bind_int64(ins, 2, r->t_ms);
        if (r->util_mean >= 0) sqlite3_bind_double(ins, 3, r->util_mean);
        else sqlite3_bind_null(ins, 3);
        if (r->util_max >= 0) sqlite3_bind_int(ins, 4, r->util_max);
        else sqlite3_bind_null(ins, 4);
        sqlite3_bind_int64(ins, 5, r->mem_used_mib);
        sqlite3_bind_int(ins, 6, r->samples);
        if (sqlite3_step(ins) != SQLITE_DONE) {
            sqlerr(h, err, "writing gpu_minute");
            goto out;
        }
    }
    sqlite3_bind_int64(del, 1, prune_before_ms);
    if (sqlite3_step(del) != SQLITE_DONE) {
        sqlerr(h, err, "pruning gpu_minute");
        goto out;
    }
    if (sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
        sqlerr(h, err, "commit");
        goto out;
    }
    rc = 0;
out:
    sqlite3_finalize(ins);
    sqlite3_finalize(del);
    if (rc) sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

json_t *gx_store_gpu_history_read(gx_store_gpu_history *h, const char *uuid, int64_t since_ms, gx_err *err)
{
    sqlite3_stmt *q = NULL;
    if (sqlite3_prepare_v2(h->db, "SELECT t_ms, util_mean, util_max, mem_used_mib FROM gpu_minute"
                                  " WHERE uuid = ? AND t_ms >= ? ORDER BY t_ms", -1, &q, NULL) != SQLITE_OK) {
        sqlerr(h, err, "prepare");
        return NULL;
    }
    sqlite3_bind_text(q, 1, uuid, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, since_ms);
    json_t *a = json_array();
    int rc;
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        json_t *r = json_pack("{s:I,s:I}", "t", (json_int_t)sqlite3_column_int64(q, 0), "memoryUsedMiB",
                              (json_int_t)sqlite3_column_int64(q, 3));
        json_object_set_new(r, "utilization", sqlite3_column_type(q, 1) == SQLITE_NULL ? json_null()
                                                                                       : json_real(sqlite3_column_double(q, 1)));
        json_object_set_new(r, "max", sqlite3_column_type(q, 2) == SQLITE_NULL ? json_null()
                                                                               : json_integer(sqlite3_column_int(q, 2)));
        json_array_append_new(a, r);
    }
    if (rc != SQLITE_DONE) {   /* BUSY or IOERR part-way is an error, never a short history */
        sqlerr(h, err, "reading gpu_minute");
        json_decref(a);
        a = NULL;
    }
    sqlite3_finalize(q);
    return a;
}
