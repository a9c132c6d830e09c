/* gpu/history: per-minute summaries of every GPU's utilisation and memory, in SQLite.
 *
 * The last hour stays in memory (gx_gpu_dev's ring of 10 s samples); once a minute the
 * samples of the minute past are summarised (mean and max utilisation, mean memory
 * used) into DATA/gpu-history.db, kept 7 days, for windows longer than the ring holds.
 * Its own database file: this is monitoring data, not the durable record of store/, so
 * it runs with synchronous=NORMAL (a crash may lose the last minute, never corrupt it).
 * Owns: what a minute's summary is and when it is written. Must not: hold SQL (the
 * file's schema and statements are store/gpu_history.c's); be on a request's path
 * except the history read; the write is one small transaction per minute. */
#ifndef GX_GPU_HISTORY_H
#define GX_GPU_HISTORY_H
#include <stdint.h>
#include <jansson.h>
#include "gpu/inventory.h"
#include "lib/err.h"

#define GX_GPU_SUMMARY_MS 60000
#define GX_GPU_KEEP_MS (7LL * 24 * 3600 * 1000)

typedef struct gx_gpu_history gx_gpu_history;

/* NULL with err when the file cannot be opened or created. */
gx_gpu_history *gx_gpu_history_open(const char *path, gx_err *err);
void gx_gpu_history_close(gx_gpu_history *h);
/* Summarise every complete minute since the last call (from the rings), prune old rows.
 * Returns rows written, -1 on a database error (reported once on stderr). */
int gx_gpu_history_flush(gx_gpu_history *h, const gx_gpu_inv *inv, int64_t now_ms);
/* Minute summaries of one GPU since `since_ms`: [{"t","utilization","max","memoryUsedMiB"}]
 * ([] when h is NULL), or NULL with err when the file could not be read. */
json_t *gx_gpu_history_read(gx_gpu_history *h, const char *uuid, int64_t since_ms, gx_err *err);

#endif
