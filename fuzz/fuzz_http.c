/* fuzz_http: the HTTP request parser (src/net/http_parse.c) under libFuzzer.
 * Properties: the end of a head is found at the same place whether the bytes arrive
 * at once or in pieces; parsing a complete head gives a request within the bounds, or
 * an HTTP status 4xx/5xx with a reason; a chunked body decodes to the same bytes, the
 * same end and the same verdict whether it arrives at once or in pieces (fed the way
 * net/http.c feeds it: what was not consumed comes again with what follows). */
#include "fuzz_util.h"
#include "net/http_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Decode the chunked body b[0..n) in pieces (split) or at once. Returns the decoded
 * bytes in out (*olen), *state: 1 done, -1 refused, 0 wants more; the bytes consumed. */
static size_t unchunk(const char *b, size_t n, uint64_t *seed, int split, char *out, size_t *olen, int *state)
{
    gx_hp_chunked c = {0};
    char *buf = malloc(n + 1);
    size_t have = 0, pos = 0, consumed = 0;
    *olen = 0;
    *state = 0;
    while (pos < n) {
        size_t step = split ? fuzz_step(seed, 9) : n;
        if (step > n - pos) step = n - pos;
        memcpy(buf + have, b + pos, step);
        have += step;
        pos += step;
        size_t o = 0;
        int done = 0;
        const char *why = NULL;
        long used = gx_hp_unchunk(&c, buf, have, &o, &done, &why);
        if (used < 0) {
            FUZZ_CHECK(why && *why, "refused without a reason");
            *state = -1;
            break;
        }
        FUZZ_CHECK((size_t)used <= have && o <= (size_t)used, "used %ld of %zu, out %zu", used, have, o);
        memcpy(out + *olen, buf, o);
        *olen += o;
        consumed += (size_t)used;
        memmove(buf, buf + used, have - (size_t)used);
        have -= (size_t)used;
        if (done) {
            FUZZ_CHECK(gx_hp_unchunk_done(&c), "done but the decoder does not say so");
            *state = 1;
            break;
        }
    }
    free(buf);
    return consumed;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *b = (const char *)data;
    uint64_t seed = fuzz_hash(data, size);
    size_t scan = 0, end = gx_hp_head_end(b, size, &scan);
    size_t scan1 = 0, end1 = 0, k = 0;
    while (k < size && !end1) {
        k += fuzz_step(&seed, 16);
        if (k > size) k = size;
        end1 = gx_hp_head_end(b, k, &scan1);
    }
    FUZZ_CHECK(end1 == end, "head end %zu in pieces, %zu at once", end1, end);
    if (!end) return 0;
    FUZZ_CHECK(end <= size, "head end %zu past %zu", end, size);
    char *copy = fuzz_cstr(data, size);
    gx_hp_req r;
    const char *why = NULL;
    int st = gx_hp_parse_head(copy, end, &r, &why);
    if (st) {
        FUZZ_CHECK(st >= 400 && st < 600 && why && *why, "status %d without a reason", st);
        free(copy);
        return 0;
    }
    FUZZ_CHECK(r.method && r.path && r.nh >= 0 && r.nh <= GX_HP_MAX_HEADERS && r.nq >= 0 && r.nq <= GX_HP_MAX_QUERY,
               "request out of bounds: %d headers, %d query", r.nh, r.nq);
    for (int i = 0; i < r.nh; i++) FUZZ_CHECK(r.h[i].name && r.h[i].value, "header %d", i);
    (void)gx_hp_header(&r, "host");
    (void)gx_hp_query(&r, "x");
    if (r.body == GX_HP_BODY_CHUNKED) {
        size_t n = size - end;
        char *o1 = malloc(n + 1), *o2 = malloc(n + 1);
        size_t l1, l2;
        int s1, s2;
        size_t c1 = unchunk(copy + end, n, &seed, 0, o1, &l1, &s1);
        size_t c2 = unchunk(copy + end, n, &seed, 1, o2, &l2, &s2);
        FUZZ_CHECK(s1 == s2, "verdict %d at once, %d in pieces", s1, s2);
        if (s1 >= 0) {
            FUZZ_CHECK(l1 == l2 && !memcmp(o1, o2, l1), "%zu bytes at once, %zu in pieces", l1, l2);
            if (s1 == 1) FUZZ_CHECK(c1 == c2, "consumed %zu at once, %zu in pieces", c1, c2);
        }
        free(o1);
        free(o2);
    }
    free(copy);
    return 0;
}
