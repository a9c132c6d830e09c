/* fuzz_scrape: Prometheus text scraping (src/maas/scrape.c) under libFuzzer.
 * Properties: gx_maas_scrape_filter of any text keeps only vllm: families, every
 * sample labelled with the gateway's model and replica, within the size bound; merging
 * two replicas' results gives at most one # TYPE and one # HELP per family. */
#include "fuzz_util.h"
#include "lib/strmap.h"
#include "maas/scrape.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every line of a filtered text: a # HELP / # TYPE of a vllm: family, or a labelled
 * vllm: sample. */
static void check_filtered(const char *t)
{
    FUZZ_CHECK(strlen(t) <= GX_MAAS_SCRAPE_MAX_KEEP + 4096, "kept %zu bytes", strlen(t));
    for (const char *l = t; *l;) {
        const char *e = strchr(l, '\n');
        FUZZ_CHECK(e, "last line without a newline: %s", l);
        size_t n = (size_t)(e - l);
        if (!strncmp(l, "# HELP vllm:", 12) || !strncmp(l, "# TYPE vllm:", 12)) {
        } else {
            FUZZ_CHECK(n > 5 && !strncmp(l, "vllm:", 5), "a line that is not a vllm: sample: %.*s", (int)n, l);
            FUZZ_CHECK(memmem(l, n, "gpuaas_model=\"m\\\"x\",gpuaas_replica=\"3\"", 38), "sample not labelled: %.*s",
                       (int)n, l);
        }
        l = e + 1;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int cut = 0;
    char *t = gx_maas_scrape_filter((const char *)data, size, "m\"x", 3, &cut);
    FUZZ_CHECK(t, "no result");
    check_filtered(t);
    const char *texts[2] = {t, t};
    gx_sbuf out = {0};
    gx_maas_scrape_merge(texts, 2, &out);
    gx_strmap seen;
    gx_strmap_init(&seen);
    const char *m = out.p ? out.p : "";
    for (const char *l = m; *l;) {
        const char *e = strchr(l, '\n');
        size_t n = e ? (size_t)(e - l) : strlen(l);
        if (n > 7 && (!strncmp(l, "# TYPE ", 7) || !strncmp(l, "# HELP ", 7))) {
            size_t nl = strcspn(l + 7, " \n");
            char key[256];
            int kn = snprintf(key, sizeof key, "%.6s%.*s", l, (int)(nl < 240 ? nl : 240), l + 7);
            FUZZ_CHECK(kn > 0, "key");
            FUZZ_CHECK(!gx_strmap_get(&seen, key), "two \"%s\" lines in the merge", key);
            gx_strmap_put(&seen, key, (void *)1);
        }
        l += n + (e != NULL);
    }
    gx_strmap_free(&seen);
    gx_sbuf_free(&out);
    free(t);
    return 0;
}
