/* gpu/history: minute summaries of GPU samples (see history.h).
 * Owns: summarising the inventory's rings into minutes, and which minutes are due.
 * Must not: hold SQL (store/gpu_history.c does) or the samples themselves (the
 * inventory's rings do). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu/history.h"
#include "lib/alloc.h"
#include "store/gpu_history.h"

struct gx_gpu_history {
    gx_store_gpu_history *st;
    int64_t done_ms;          /* minutes before this are summarised */
    int warned;
};

gx_gpu_history *gx_gpu_history_open(const char *path, gx_err *err)
{
    gx_store_gpu_history *st = gx_store_gpu_history_open(path, err);
    if (!st) return NULL;
    gx_gpu_history *h = gx_xcalloc(1, sizeof *h);
    h->st = st;
    return h;
}

void gx_gpu_history_close(gx_gpu_history *h)
{
    if (!h) return;
    gx_store_gpu_history_close(h->st);
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
    gx_store_gpu_minute *rows = NULL;
    size_t n = 0, cap = 0;
    for (int64_t t = h->done_ms; t < upto; t += GX_GPU_SUMMARY_MS)
        for (int i = 0; i < inv->n_devs; i++) {
            gx_store_gpu_minute m = {.uuid = inv->devs[i].uuid, .t_ms = t};
            m.samples = summarise(&inv->devs[i], t, t + GX_GPU_SUMMARY_MS, &m.util_mean, &m.util_max, &m.mem_used_mib);
            if (!m.samples) continue;
            rows = gx_xgrow(rows, &cap, n + 1, sizeof *rows);
            rows[n++] = m;
        }
    gx_err e;
    gx_err_clear(&e);
    int rc = gx_store_gpu_history_put(h->st, rows, n, now_ms - GX_GPU_KEEP_MS, &e);
    free(rows);
    if (rc) {
        if (!h->warned++) fprintf(stderr, "gpuaas: GPU history not written: %s\n", e.msg);
        return -1;
    }
    h->done_ms = upto;
    return (int)n;
}

json_t *gx_gpu_history_read(gx_gpu_history *h, const char *uuid, int64_t since_ms, gx_err *err)
{
    if (!h) return json_array();   /* kept in memory only: no minutes beyond the ring */
    return gx_store_gpu_history_read(h->st, uuid, since_ms, err);
}
