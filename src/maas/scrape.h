/* maas/scrape: the model servers' vllm:* metrics, as the gateway's /metrics shows them.
 * Pure text work (no I/O, no clock): models.c fetches each ready replica's /metrics
 * and keeps what gx_maas_scrape_filter returns; gx_maas_scrape_merge turns the kept
 * texts of every replica into valid exposition text, one # HELP and # TYPE per family. */
#ifndef GX_MAAS_SCRAPE_H
#define GX_MAAS_SCRAPE_H
#include <stddef.h>
#include "lib/sbuf.h"

#define GX_MAAS_SCRAPE_MAX_BODY (1u << 20)      /* a larger answer is cut: the scrape failed */
#define GX_MAAS_SCRAPE_MAX_KEEP (256u << 10)    /* text kept per replica */
#define GX_MAAS_SCRAPE_MAX_SAMPLES 2000         /* samples kept per replica */

/* The "vllm:" families of one replica's exposition text in[0..len), each sample labelled
 * gpuaas_model="<model>",gpuaas_replica="<replica>" (values escaped). The result (malloc'd,
 * NUL-terminated, maybe "") holds blocks of an optional "# HELP", one "# TYPE" (untyped
 * when the server named none) and the family's samples: the form the merge reads.
 * Lines that are not valid exposition text are skipped; *cut is set when the bounds
 * above dropped the rest. */
char *gx_maas_scrape_filter(const char *in, size_t len, const char *model, int replica, int *cut);

/* Append to out the families of texts[0..n) (each a gx_maas_scrape_filter result),
 * grouped: one # HELP (the first seen) and one # TYPE per family, then the samples of
 * every text for it, families in the order first seen. */
void gx_maas_scrape_merge(const char *const *texts, size_t n, gx_sbuf *out);

#endif
