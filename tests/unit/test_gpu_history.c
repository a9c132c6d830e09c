/* Unit tests for gpu/history: minute summaries of the in-memory samples written to
 * SQLite and read back for long windows (a simulated GPU whose allocation sets its
 * utilisation; no GPU involved). */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpu/history.h"
#include "store/gpu_history.h"
#include "lib/yaml.h"

Test(gpu_history, minutes_are_summarised_and_read_back)
{
    json_t *nodes = json_pack("[{s:s,s:s,s:{s:s},s:{s:[{s:s,s:s,s:s,s:s}]}}]", "apiVersion", "gpuaas.dev/v1alpha1",
                              "kind", "Node", "metadata", "name", "n", "spec", "gpus", "model", "H100-80GB", "memory",
                              "80Gi", "uuid", "GPU-h", "sharing", "fractional");
    gx_gpu_config cfg = {"simulated", NULL, nodes, NULL, "", NULL, ""};
    gx_err e;
    gx_err_clear(&e);
    gx_gpu_inv *inv = gx_gpu_inventory_open(&cfg, &e);
    cr_assert(inv, "%s", e.msg);
    char path[] = "/tmp/gpuaas-hist.XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    gx_gpu_history *h = gx_gpu_history_open(path, &e);
    cr_assert(h, "%s", e.msg);
    int64_t m10 = 10 * GX_GPU_SUMMARY_MS;
    cr_assert_eq(gx_gpu_history_flush(h, inv, m10 + 5), 0, "nothing sampled yet");
    int util[] = {20, 40, 60};
    for (int k = 0; k < 3; k++) {
        json_t *eng = json_pack("[{s:[{s:s,s:{s:i,s:i}}]}]", "gpus", "uuid", "GPU-h", "sharing", "coresAllocated", util[k],
                                "memoryAllocatedMiB", 1024 * (k + 1));
        gx_gpu_inventory_sample(inv, m10 + k * 10000, eng);
        json_decref(eng);
    }
    cr_assert_eq(gx_gpu_history_flush(h, inv, m10 + 30000), 0, "minute 10 is not complete");
    cr_assert_eq(gx_gpu_history_flush(h, inv, m10 + GX_GPU_SUMMARY_MS + 1), 1);
    json_t *rows = gx_gpu_history_read(h, "GPU-h", 0, &e);
    cr_assert_not_null(rows, "%s", e.msg);
    cr_assert_eq(json_array_size(rows), 1);
    json_t *r = json_array_get(rows, 0);
    cr_assert_eq(json_integer_value(json_object_get(r, "t")), m10);
    cr_assert_float_eq(json_real_value(json_object_get(r, "utilization")), 40.0, 1e-9);
    cr_assert_eq(json_integer_value(json_object_get(r, "max")), 60);
    cr_assert_eq(json_integer_value(json_object_get(r, "memoryUsedMiB")), 2048);
    json_decref(rows);
    rows = gx_gpu_history_read(h, "GPU-h", m10 + 1, &e);
    cr_assert_eq(json_array_size(rows), 0, "the window starts after it");
    json_decref(rows);
    /* rows older than the retention go at the next flush */
    cr_assert_eq(gx_gpu_history_flush(h, inv, m10 + GX_GPU_KEEP_MS + 2 * GX_GPU_SUMMARY_MS), 0);
    rows = gx_gpu_history_read(h, "GPU-h", 0, &e);
    cr_assert_eq(json_array_size(rows), 0);
    json_decref(rows);
    gx_gpu_history_close(h);
    gx_err_clear(&e);
    cr_assert_null(gx_gpu_history_open("/nonexistent/dir/h.db", &e));
    cr_assert(strstr(e.msg, "cannot open"), "%s", e.msg);
    unlink(path);
    gx_gpu_inventory_free(inv);
    json_decref(nodes);
}

/* The history's file damaged under it: a long window's read is an error (the API
 * answers 500 with it), not an empty history. Before, the read ended at the failed
 * step and answered []. Without a file (kept in memory only) the answer stays []. */
Test(gpu_history, a_damaged_file_is_an_error_not_an_empty_history)
{
    char path[] = "/tmp/gpuaas-hist.XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    gx_err e;
    gx_err_clear(&e);
    gx_store_gpu_history *st = gx_store_gpu_history_open(path, &e);
    cr_assert(st, "%s", e.msg);
    gx_store_gpu_minute rows[200];
    for (int i = 0; i < 200; i++)
        rows[i] = (gx_store_gpu_minute){"GPU-d", (int64_t)i * GX_GPU_SUMMARY_MS, 50.0, 70, 1024, 6};
    cr_assert_eq(gx_store_gpu_history_put(st, rows, 200, 0, &e), 0, "%s", e.msg);
    json_t *got = gx_store_gpu_history_read(st, "GPU-d", 0, &e);
    cr_assert_eq(json_array_size(got), 200);
    json_decref(got);
    gx_store_gpu_history_close(st);   /* the last connection: the WAL goes into the file */
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT rootpage, (SELECT page_size FROM pragma_page_size) FROM sqlite_master"
                                        " WHERE name = 'gpu_minute'", -1, &q, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
    long root = sqlite3_column_int(q, 0), psize = sqlite3_column_int(q, 1);
    sqlite3_finalize(q);
    sqlite3_close(db);
    cr_assert(root > 1 && psize > 0 && psize <= 65536);
    static unsigned char junk[65536];
    memset(junk, 0xff, sizeof junk);
    fd = open(path, O_RDWR);
    cr_assert_eq(pwrite(fd, junk, (size_t)psize, (root - 1) * psize), psize);
    close(fd);

    gx_gpu_history *h = gx_gpu_history_open(path, &e);
    cr_assert(h, "%s", e.msg);
    gx_err_clear(&e);
    cr_assert_null(gx_gpu_history_read(h, "GPU-d", 0, &e), "a damaged table read as an empty history");
    cr_assert(strstr(e.msg, "reading gpu_minute"), "%s", e.msg);
    gx_gpu_history_close(h);
    json_t *none = gx_gpu_history_read(NULL, "GPU-d", 0, &e);
    cr_assert(json_is_array(none) && json_array_size(none) == 0);
    json_decref(none);
    char wal[64];
    snprintf(wal, sizeof wal, "%s-wal", path);
    unlink(wal);
    snprintf(wal, sizeof wal, "%s-shm", path);
    unlink(wal);
    unlink(path);
}
