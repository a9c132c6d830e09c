/* Unit tests for gpu/runtime and gpu/api: the GPU layer is a handle the caller owns
 * (no process-wide instance), so two daemons' layers live side by side and each answer
 * comes from the handle it is given; and a damaged history file is a 500 on a long
 * window, not an empty history. Simulated GPUs, a real engine, real SQLite. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "gpu/api.h"
#include "gpu/runtime.h"

typedef struct side {
    json_t *nodes;
    gx_engine *eng;
    gx_gpu_rt *rt;
} side;

/* A simulated node with one whole GPU, its runtime, and an engine that knows it. */
static side open_side(const char *node, const char *uuid)
{
    side s;
    s.nodes = json_pack("[{s:s,s:s,s:{s:s},s:{s:[{s:s,s:s,s:s}]}}]", "apiVersion", "gpuaas.dev/v1alpha1", "kind", "Node",
                        "metadata", "name", node, "spec", "gpus", "model", "H100-80GB", "memory", "80Gi", "uuid", uuid);
    gx_gpu_config cfg = {"simulated", NULL, s.nodes, NULL, "", NULL, ""};
    gx_engine_opts eo = {0};
    s.eng = gx_engine_new(&eo);
    gx_err e;
    gx_err_clear(&e);
    FILE *log = fopen("/dev/null", "w");
    s.rt = gx_gpu_rt_open(&cfg, "best-fit", s.eng, log, &e);
    fclose(log);
    cr_assert_not_null(s.rt, "%s", e.msg);
    json_t *ns = gx_gpu_rt_nodes(s.rt), *n;
    size_t i;
    json_array_foreach(ns, i, n) cr_assert_eq(gx_engine_apply(s.eng, n, &e), 0, "%s", e.msg);
    json_decref(ns);
    return s;
}

static void close_side(side *s)
{
    gx_gpu_rt_close(s->rt, stderr);
    gx_engine_free(s->eng);
    json_decref(s->nodes);
}

/* GET /api/v1/gpus through rt on eng's nodes: the one item. */
static json_t *only_item(gx_gpu_rt *rt, gx_engine *eng)
{
    json_t *out = NULL;
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_gpu_api(rt, eng, "GET", NULL, 0, NULL, 0, 0, NULL, 1000, &out, &e), 0, "%s", e.msg);
    json_t *items = json_object_get(out, "items");
    cr_assert_eq(json_array_size(items), 1);
    json_t *it = json_incref(json_array_get(items, 0));
    json_decref(out);
    return it;
}

Test(gpu_runtime, two_handles_side_by_side)
{
    side a = open_side("na", "GPU-aaaa"), b = open_side("nb", "GPU-bbbb");
    json_t *it = only_item(a.rt, a.eng);
    cr_assert_str_eq(json_string_value(json_object_get(it, "uuid")), "GPU-aaaa");
    cr_assert_str_eq(json_string_value(json_object_get(it, "source")), "simulated", "a's runtime knows its GPU");
    json_decref(it);
    /* b's runtime does not know a's GPU: the engine's view only, as with no runtime */
    it = only_item(b.rt, a.eng);
    cr_assert_null(json_object_get(it, "source"));
    cr_assert_str_eq(json_string_value(json_object_get(it, "mode")), "exclusive");
    json_decref(it);
    it = only_item(NULL, b.eng);
    cr_assert_null(json_object_get(it, "source"));
    json_decref(it);

    char *m = gx_gpu_metrics(a.rt, a.eng);
    cr_assert(strstr(m, "UUID=\"GPU-aaaa\""), "%s", m);
    cr_assert_null(strstr(m, "GPU-bbbb"));
    free(m);
    m = gx_gpu_metrics(b.rt, b.eng);
    cr_assert(strstr(m, "UUID=\"GPU-bbbb\"") && !strstr(m, "GPU-aaaa"), "%s", m);
    free(m);
    m = gx_gpu_metrics(NULL, a.eng);
    cr_assert_str_eq(m, "");
    free(m);

    /* each samples on its own clock */
    cr_assert_eq(gx_gpu_rt_tick(a.rt, 5000), GX_GPU_SAMPLE_MS);
    cr_assert_eq(gx_gpu_rt_tick(b.rt, 9000), GX_GPU_SAMPLE_MS);
    cr_assert_eq(gx_gpu_rt_tick(a.rt, 6000), GX_GPU_SAMPLE_MS - 1000);
    cr_assert_eq(gx_gpu_rt_tick(NULL, 6000), -1);
    gx_err e;
    gx_err_clear(&e);
    json_t *out = NULL;
    cr_assert_eq(gx_gpu_api(NULL, a.eng, "POST", (const char *const[]){"mig"}, 1, "{}", 2, 1, NULL, 0, &out, &e), -1);
    cr_assert_eq(e.status, 503, "MIG without a runtime");
    close_side(&a);
    close_side(&b);
    gx_gpu_rt_close(NULL, stderr);
}

/* A long window reads DATA/gpu-history.db: damaged, the answer is a 500 saying so. */
Test(gpu_runtime, damaged_history_is_a_500)
{
    char dir[] = "/tmp/gpuaas-rt.XXXXXX", mps[64], path[96];
    cr_assert_not_null(mkdtemp(dir));
    snprintf(mps, sizeof mps, "%s/mps", dir);
    snprintf(path, sizeof path, "%s/gpu-history.db", dir);
    side a = open_side("na", "GPU-aaaa");
    gx_gpu_rt_start(a.rt, dir, mps, stderr);
    const char *const segs[] = {"GPU-aaaa", "utilization"};
    json_t *out = NULL;
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_gpu_api(a.rt, a.eng, "GET", segs, 2, NULL, 0, 0, "2h", 10 * 3600 * 1000LL, &out, &e), 0, "%s", e.msg);
    cr_assert_eq(json_array_size(json_object_get(out, "samples")), 0);
    json_decref(out);
    close_side(&a);   /* the history file's last connection: its WAL goes into the file */

    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *q;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT rootpage, (SELECT page_size FROM pragma_page_size) FROM sqlite_master"
                                        " WHERE name = 'gpu_minute'", -1, &q, NULL), SQLITE_OK, "%s", sqlite3_errmsg(db));
    cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
    long root = sqlite3_column_int(q, 0), psize = sqlite3_column_int(q, 1);
    sqlite3_finalize(q);
    sqlite3_close(db);
    static unsigned char junk[65536];
    memset(junk, 0xff, sizeof junk);
    cr_assert(root > 1 && psize > 0 && psize <= (long)sizeof junk);
    int fd = open(path, O_RDWR);
    cr_assert_eq(pwrite(fd, junk, (size_t)psize, (root - 1) * psize), psize);
    close(fd);

    a = open_side("na", "GPU-aaaa");
    gx_gpu_rt_start(a.rt, dir, mps, stderr);
    out = NULL;
    gx_err_clear(&e);
    cr_assert_eq(gx_gpu_api(a.rt, a.eng, "GET", segs, 2, NULL, 0, 0, "2h", 10 * 3600 * 1000LL, &out, &e), -1,
                 "a damaged history answered as an empty one");
    cr_assert_null(out);
    cr_assert_eq(e.status, 500);
    cr_assert(strstr(e.msg, "reading gpu_minute"), "%s", e.msg);
    /* the ring's hour does not touch the file */
    cr_assert_eq(gx_gpu_api(a.rt, a.eng, "GET", segs, 2, NULL, 0, 0, "1h", 10 * 3600 * 1000LL, &out, &e), 0, "%s", e.msg);
    json_decref(out);
    close_side(&a);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}
