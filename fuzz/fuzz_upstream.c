/* fuzz_upstream: the gateway's response parser (src/net/upstream.c, gx_up_parse) under
 * libFuzzer, driven as tests/unit/test_parsers_random.c drives it: the caller keeps
 * what was not consumed and calls again with it first, plus what arrives.
 * Properties: it never consumes more than it was given and always makes progress; the
 * answer yields the same body bytes and ends the same way (complete or refused, with a
 * reason) whether the bytes arrive at once or in pieces of 1..13 bytes. */
#include "fuzz_util.h"
#include "net/upstream.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The body bytes of in[0..n) into out; *ended: GX_UP_END / GX_UP_ERR, or what the
 * end of input makes of it (gx_up_parse_eof). */
static size_t feed(const char *in, size_t n, uint64_t *seed, int split, char *out, int *ended)
{
    gx_up_parser p;
    gx_up_parser_init(&p);
    char *buf = malloc(n + 1);
    size_t have = 0, pos = 0, olen = 0;
    *ended = 0;
    /* each round either takes new bytes or returns, and each parse consumes or asks for more */
    for (size_t guard = 0; guard < 4 * n + 16; guard++) {
        if (pos < n) {
            size_t step = split ? fuzz_step(seed, 13) : n;
            if (step > n - pos) step = n - pos;
            memcpy(buf + have, in + pos, step);
            have += step;
            pos += step;
        }
        for (size_t spins = 0;; spins++) {
            FUZZ_CHECK(spins < 2 * n + 16, "the parser made no progress");
            size_t used = 0, dl = 0;
            const char *d = NULL;
            int ev = gx_up_parse(&p, buf, have, &used, &d, &dl);
            FUZZ_CHECK(used <= have, "used %zu of %zu", used, have);
            if (ev == GX_UP_DATA) {
                FUZZ_CHECK(d >= buf && d + dl <= buf + have, "data outside the buffer");
                memcpy(out + olen, d, dl);
                olen += dl;
            }
            if (ev == GX_UP_HEAD) FUZZ_CHECK(p.status >= 100 && p.status <= 999, "status %d", p.status);
            memmove(buf, buf + used, have - used);
            have -= used;
            if (ev == GX_UP_ERR) FUZZ_CHECK(p.err && *p.err, "refused without a reason");
            if (ev == GX_UP_END || ev == GX_UP_ERR) { *ended = ev; free(buf); return olen; }
            if (ev == GX_UP_NEED) break;
        }
        if (pos >= n) {
            *ended = gx_up_parse_eof(&p);
            FUZZ_CHECK(*ended == GX_UP_END || *ended == GX_UP_ERR, "eof gives %d", *ended);
            free(buf);
            return olen;
        }
    }
    FUZZ_CHECK(0, "the parser made no progress");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t seed = fuzz_hash(data, size);
    char *o1 = malloc(size + 1), *o2 = malloc(size + 1);
    int e1, e2;
    size_t l1 = feed((const char *)data, size, &seed, 0, o1, &e1);
    size_t l2 = feed((const char *)data, size, &seed, 1, o2, &e2);
    FUZZ_CHECK(e1 == e2, "ended %d at once, %d in pieces", e1, e2);
    FUZZ_CHECK(l1 == l2 && !memcmp(o1, o2, l1), "%zu body bytes at once, %zu in pieces", l1, l2);
    free(o1);
    free(o2);
    return 0;
}
