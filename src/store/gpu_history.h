/* store/gpu_history: the SQL of the GPU utilisation history (DATA/gpu-history.db, table
 * gpu_minute), one row per GPU and minute.
 * Its own database file, not gpuaas.db: this is monitoring data, not the durable record,
 * so it runs with synchronous=NORMAL (a crash may lose the last minute, never corrupt it)
 * and a broken file never stops the daemon (gpu/runtime keeps the history in memory only).
 * Owns: that file's schema and statements.
 * Must not: summarise samples or decide what is kept (gpu/history.c does both). */
#ifndef GX_STORE_GPU_HISTORY_H
#define GX_STORE_GPU_HISTORY_H
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "lib/err.h"

typedef struct gx_store_gpu_history gx_store_gpu_history;

/* One GPU's summary of one minute. */
typedef struct gx_store_gpu_minute {
    const char *uuid;
    int64_t t_ms;             /* the minute's start */
    double util_mean;         /* < 0: no utilisation sampled */
    int util_max;             /* < 0: none */
    int64_t mem_used_mib;
    int samples;
} gx_store_gpu_minute;

/* Open (creating) the file at path with its table; NULL with err. */
gx_store_gpu_history *gx_store_gpu_history_open(const char *path, gx_err *err);
void gx_store_gpu_history_close(gx_store_gpu_history *h);
/* In one transaction: insert (or replace) n minutes, then delete the rows of minutes
 * before prune_before_ms. 0, or -1 with err (nothing written). */
int gx_store_gpu_history_put(gx_store_gpu_history *h, const gx_store_gpu_minute *rows, size_t n,
                             int64_t prune_before_ms, gx_err *err);
/* One GPU's minutes from since_ms on, oldest first:
 * [{"t","utilization","max","memoryUsedMiB"}] (null where none was sampled), or NULL
 * with err: never a partial list. */
json_t *gx_store_gpu_history_read(gx_store_gpu_history *h, const char *uuid, int64_t since_ms, gx_err *err);

#endif
