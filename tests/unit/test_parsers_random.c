/* Randomised property tests of the two HTTP parsers that face the network (net/http_parse.c
 * for requests, net/upstream.c for model servers' answers). Valid messages are mutated
 * at random (bytes changed, inserted, deleted, cut short) with a fixed seed, so a failure
 * reproduces; under the ASan build any out-of-bounds read is a crash. Properties:
 *  - the end of a request head is found at the same place whether the bytes arrive at
 *    once or one by one, and parsing what was found never fails in a way other than an
 *    HTTP status with a reason;
 *  - an upstream answer yields the same body bytes however it is split across reads. */
#include <criterion/criterion.h>
#include <string.h>
#include "net/http_parse.h"
#include "net/upstream.h"
#include "test_mutate.h"

#define ITERATIONS 20000

Test(parsers_random, request_heads_byte_by_byte)
{
    static const char *seeds[] = {
        "GET /api/v1/workloads?ns=a%20b&x=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
        "POST /v1/chat/completions HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\nhello",
        "POST /x HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\nT: v\r\n\r\n",
        "GET / HTTP/1.0\r\n\r\n",
    };
    gx_rng_seed(rs, 42);
    char buf[2048], copy[2048];
    int parsed = 0, refused = 0;
    for (int it = 0; it < ITERATIONS; it++) {
        const char *s = seeds[pick(4)];
        size_t n = strlen(s);
        memcpy(buf, s, n);
        mutate(buf, &n, sizeof buf, "\r\n :%;0aZ\t?&=");
        size_t scan = 0, end = gx_hp_head_end(buf, n, &scan), scan1 = 0, end1 = 0;
        for (size_t k = 1; k <= n && !end1; k++) end1 = gx_hp_head_end(buf, k, &scan1);
        cr_assert_eq(end1, end, "iteration %d: head end %zu byte by byte, %zu at once", it, end1, end);
        if (!end) continue;
        memcpy(copy, buf, n);
        gx_hp_req r;
        const char *why = NULL;
        int st = gx_hp_parse_head(copy, end, &r, &why);
        if (st) {
            cr_assert(st >= 400 && st < 600 && why && *why, "iteration %d: status %d without a reason", it, st);
            refused++;
            continue;
        }
        parsed++;
        cr_assert(r.method && r.path && r.nh <= GX_HP_MAX_HEADERS && r.nq <= GX_HP_MAX_QUERY);
        if (r.body == GX_HP_BODY_CHUNKED) {
            gx_hp_chunked c = {0};
            size_t out = 0;
            int done = 0;
            long used = gx_hp_unchunk(&c, copy + end, n - end, &out, &done, &why);
            cr_assert(used == -1 || ((size_t)used <= n - end && out <= (size_t)used), "iteration %d", it);
        }
    }
    cr_assert(parsed > 1000 && refused > 1000, "the mutations should give both: %d parsed, %d refused", parsed, refused);
}

/* The body bytes of buf[0..n) fed in pieces of 1..7 bytes (split) or at once. */
static size_t feed(const char *in, size_t n, int split, char *out, int *ended)
{
    gx_up_parser p;
    gx_up_parser_init(&p);
    char buf[8192];
    size_t have = 0, pos = 0, olen = 0;
    *ended = 0;
    for (int guard = 0; guard < 100000; guard++) {
        if (pos < n) {
            size_t step = split ? 1 + pick(7) : n;
            if (step > n - pos) step = n - pos;
            memcpy(buf + have, in + pos, step);
            have += step;
            pos += step;
        }
        for (;;) {
            size_t used = 0, dl = 0;
            const char *d = NULL;
            int ev = gx_up_parse(&p, buf, have, &used, &d, &dl);
            cr_assert(used <= have);
            if (ev == GX_UP_DATA) { memcpy(out + olen, d, dl); olen += dl; }
            memmove(buf, buf + used, have - used);
            have -= used;
            if (ev == GX_UP_END || ev == GX_UP_ERR) { *ended = ev; return olen; }
            if (ev == GX_UP_NEED) break;
        }
        if (pos >= n) { *ended = gx_up_parse_eof(&p); return olen; }
    }
    cr_assert_fail("the parser made no progress");
    return 0;
}

Test(parsers_random, upstream_answers_in_any_split)
{
    static const char *seeds[] = {
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 11\r\n\r\n{\"a\":12345}",
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n6;x=y\r\ndata: \r\n3\r\nabc\r\n0\r\nTrailer: z\r\n\r\n",
        "HTTP/1.0 500 Err\r\n\r\nbody until close",
        "HTTP/1.1 204 No Content\r\n\r\n",
    };
    gx_rng_seed(rs, 7);
    char b[4096], o1[8192], o2[8192];
    int ends = 0, errs = 0;
    for (int it = 0; it < ITERATIONS; it++) {
        const char *s = seeds[pick(4)];
        size_t n = strlen(s);
        memcpy(b, s, n);
        mutate(b, &n, sizeof b, "\r\n 0123456789abcdefXZ;:");
        int e1, e2;
        size_t l1 = feed(b, n, 0, o1, &e1), l2 = feed(b, n, 1, o2, &e2);
        cr_assert(l1 == l2 && !memcmp(o1, o2, l1), "iteration %d: %zu body bytes at once, %zu split", it, l1, l2);
        cr_assert_eq(e1, e2, "iteration %d: the answer ended differently when split", it);
        ends += e1 == GX_UP_END;
        errs += e1 == GX_UP_ERR;
    }
    cr_assert(ends > 1000 && errs > 1000, "the mutations should give both: %d complete, %d refused", ends, errs);
}
