/* store/reports: the SQL behind the utilisation reports' reclaimed and unused GPU time
 * (tables idle_reclaims and reservation_noshows, migration 10 in store.c).
 * Owns: those two tables' statements. Must not: compute a report (ops/reports.c
 * does, from the workloads and the GPU history) or decide what is reclaimed (the idle
 * policy and the reservations write here). */
#include <string.h>
#include "store/store_int.h"

/* Both tables have the same shape: one insert, named by the table. */
static int put(gx_store *s, const char *table, const char *ns, const char *gpu_class, int64_t gpu_ms,
               int64_t at_ms, gx_err *err)
{
    if (!ns || !*ns) return gx_errf(err, 400, "namespace", "namespace is required");
    if (!gpu_class || !*gpu_class) return gx_errf(err, 400, "class", "class is required");
    if (gpu_ms < 0) return gx_errf(err, 400, "gpuMs", "gpuMs must not be negative");
    char sql[128];
    snprintf(sql, sizeof sql, "INSERT INTO %s (ns, class, gpu_ms, at_ms) VALUES (?1, ?2, ?3, ?4)", table);
    return gx_store_run(s, err, sql, "ssii", ns, gpu_class, gpu_ms, at_ms);
}

int gx_store_put_idle_reclaim(gx_store *s, const char *ns, const char *gpu_class, int64_t gpu_ms, int64_t at_ms,
                              gx_err *err)
{
    return put(s, "idle_reclaims", ns, gpu_class, gpu_ms, at_ms, err);
}

int gx_store_put_reservation_noshow(gx_store *s, const char *ns, const char *gpu_class, int64_t gpu_ms,
                                    int64_t at_ms, gx_err *err)
{
    return put(s, "reservation_noshows", ns, gpu_class, gpu_ms, at_ms, err);
}

json_t *gx_store_reclaimed(gx_store *s, const char *table, int64_t since_ms, int64_t until_ms, gx_err *err)
{
    /* the name is checked against the two tables, never pasted from a caller */
    if (strcmp(table, "idle_reclaims") && strcmp(table, "reservation_noshows")) {
        gx_errf(err, 500, "table", "store: no such table %s", table);
        return NULL;
    }
    char sql[192];
    snprintf(sql, sizeof sql, "SELECT ns, class, SUM(gpu_ms) FROM %s WHERE at_ms >= ?1 AND at_ms < ?2 "
             "GROUP BY ns, class ORDER BY ns, class", table);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) { gx_store_sqlerr(s, err, "prepare"); return NULL; }
    sqlite3_bind_int64(st, 1, since_ms);
    sqlite3_bind_int64(st, 2, until_ms);
    json_t *out = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        json_array_append_new(out, json_pack("{s:s,s:s,s:I}", "namespace", (const char *)sqlite3_column_text(st, 0),
                                             "class", (const char *)sqlite3_column_text(st, 1),
                                             "gpuMs", (json_int_t)sqlite3_column_int64(st, 2)));
    return gx_store_read_end(s, st, rc, out, table, err);
}
