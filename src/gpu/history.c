/* gpu/history: minute summaries of GPU samples in DATA/gpu-history.db (see history.h).
 * Owns: the schema (table gpu_minute) and its statements. Must not: hold the samples
 * themselves (the inventory's rings do). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include "gpu/history.h"

struct gx_gpu_history {
    sqlite3 *db;
    int64_t done_ms;          /* minutes before this are summarised */
    int warned;
};

gx_gpu_history *gx_gpu_history_open(const char *path, gx_err *err)
{
    gx_gpu_history *h = calloc(1, sizeof *h);
    if (!h) abort();
    if (sqlite3_open_v2(path, &h->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
        sqlite3_exec(h->db,
                     "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
                     "CREATE TABLE IF NOT EXISTS gpu_minute(uuid TEXT NOT NULL, t_ms INTEGER NOT NULL,"
                     " util_mean REAL, util_max INTEGER, mem_used_mib INTEGER, samples INTEGER NOT NULL,"
                     " PRIMARY KEY(uuid, t_ms)) WITHOUT ROWID;",
                     NULL, NULL, NULL) != SQLITE_OK) {
        gx_errf(err, 500, "", "cannot open %s: %s", path, h->db ? sqlite3_errmsg(h->db) : "out of memory");
        gx_gpu_history_close(h);
        return NULL;
    }
    return h;
}

void gx_gpu_history_close(gx_gpu_history *h)
{
    if (!h) return;
    sqlite3_close(h->db);
    free(h);
}

/* Summary of one GPU's samples in [from, to). */
static int summarise(const gx_gpu_dev *d, int64_t from, int64_t to, double *mean, int *max, int64_t *mem)
{
    int n = 0, nu = 0;
    long long su = 0, sm = 0;
    *max = -1;
    for (int k = 0; k < d->hist_n; k++) {
        const gx_gpu_sample *x = &d->hist[(d->hist_pos - d->hist_n + k + GX_GPU_HIST) % GX_GPU_HIST];
        if (x->t_ms < from || x->t_ms >= to) continue;
        n++;
        sm += x->mem_used_mib;
        if (x->util < 0) continue;
        nu++;
        su += x->util;
        if (x->util > *max) *max = x->util;
    }
    *mean = nu ? (double)su / nu : -1;
    *mem = n ? sm / n : 0;
    return n;
}

int gx_gpu_history_flush(gx_gpu_history *h, const gx_gpu_inv *inv, int64_t now_ms)
{
    if (!h || !inv) return 0;
    int64_t upto = now_ms - now_ms % GX_GPU_SUMMARY_MS;   /* complete minutes only */
    if (!h->done_ms) h->done_ms = upto - GX_GPU_SUMMARY_MS;
    if (upto <= h->done_ms) return 0;
    if (upto - h->done_ms > 3600 * 1000LL) h->done_ms = upto - 3600 * 1000LL;   /* the ring's hour */
    sqlite3_stmt *ins = NULL, *del = NULL;
    int rows = 0, rc = sqlite3_exec(h->db, "BEGIN", NULL, NULL, NULL);
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(h->db, "INSERT OR REPLACE INTO gpu_minute VALUES (?,?,?,?,?,?)", -1, &ins, NULL);
    for (int64_t t = h->done_ms; rc == SQLITE_OK && t < upto; t += GX_GPU_SUMMARY_MS)
        for (int i = 0; rc == SQLITE_OK && i < inv->n_devs; i++) {
            double mean;
            int max;
            int64_t mem;
            int n = summarise(&inv->devs[i], t, t + GX_GPU_SUMMARY_MS, &mean, &max, &mem);
            if (!n) continue;
            sqlite3_bind_text(ins, 1, inv->devs[i].uuid, -1, SQLITE_STATIC);
            sqlite3_bind_int64(ins, 2, t);
            if (mean >= 0) sqlite3_bind_double(ins, 3, mean);
            else sqlite3_bind_null(ins, 3);
            if (max >= 0) sqlite3_bind_int(ins, 4, max);
            else sqlite3_bind_null(ins, 4);
            sqlite3_bind_int64(ins, 5, mem);
            sqlite3_bind_int(ins, 6, n);
            rc = sqlite3_step(ins) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
            sqlite3_reset(ins);
            rows += rc == SQLITE_OK;
        }
    if (rc == SQLITE_OK) rc = sqlite3_prepare_v2(h->db, "DELETE FROM gpu_minute WHERE t_ms < ?", -1, &del, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(del, 1, now_ms - GX_GPU_KEEP_MS);
        rc = sqlite3_step(del) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
    }
    sqlite3_finalize(ins);
    sqlite3_finalize(del);
    if (rc == SQLITE_OK) rc = sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL);
    if (rc != SQLITE_OK) {
        if (!h->warned++) fprintf(stderr, "gpuaas: GPU history not written: %s\n", sqlite3_errmsg(h->db));
        sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
        return -1;
    }
    h->done_ms = upto;
    return rows;
}

json_t *gx_gpu_history_read(gx_gpu_history *h, const char *uuid, int64_t since_ms)
{
    json_t *a = json_array();
    sqlite3_stmt *q = NULL;
    if (!h || sqlite3_prepare_v2(h->db, "SELECT t_ms, util_mean, util_max, mem_used_mib FROM gpu_minute"
                                        " WHERE uuid = ? AND t_ms >= ? ORDER BY t_ms", -1, &q, NULL) != SQLITE_OK)
        return a;
    sqlite3_bind_text(q, 1, uuid, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, since_ms);
    while (sqlite3_step(q) == SQLITE_ROW) {
        json_t *r = json_pack("{s:I,s:I}", "t", (json_int_t)sqlite3_column_int64(q, 0), "memoryUsedMiB",
                              (json_int_t)sqlite3_column_int64(q, 3));
        json_object_set_new(r, "utilization", sqlite3_column_type(q, 1) == SQLITE_NULL ? json_null()
                                                                                       : json_real(sqlite3_column_double(q, 1)));
        json_object_set_new(r, "max", sqlite3_column_type(q, 2) == SQLITE_NULL ? json_null()
                                                                               : json_integer(sqlite3_column_int(q, 2)));
        json_array_append_new(a, r);
    }
    sqlite3_finalize(q);
    return a;
}
