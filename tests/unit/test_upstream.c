/* Unit tests of the gateway's upstream response parser (src/net/upstream.c): answers
 * cut at every byte boundary (the result must not depend on how reads split them),
 * Content-Length, chunked (extensions, trailers, bare LF), until-close bodies, 1xx
 * before the real head, bodiless statuses, keep-alive decisions, and bad inputs with
 * the limits on head size, header count and chunk-size lines. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "net/upstream.h"

typedef struct result {
    int heads, ended, err, status, keepalive;
    char ctype[128];
    char body[8192];
    size_t blen;
    const char *why;
} result;

/* Feed `in` as the pieces given by cuts (ascending offsets), the way a connection does:
 * unconsumed bytes stay at the front of the buffer and new ones are appended. eof: the
 * peer closes after the last byte. */
static result run(const char *in, size_t n, const size_t *cuts, int ncuts, int eof)
{
    result r;
    memset(&r, 0, sizeof r);
    gx_up_parser p;
    gx_up_parser_init(&p);
    char *buf = malloc(n + 1);
    size_t have = 0, fed = 0;
    for (int piece = 0; piece <= ncuts && !r.ended && !r.err; piece++) {
        size_t to = piece < ncuts ? cuts[piece] : n;
        memcpy(buf + have, in + fed, to - fed);
        have += to - fed;
        fed = to;
        for (;;) {
            size_t used;
            const char *d = NULL;
            size_t dn = 0;
            int ev = gx_up_parse(&p, buf, have, &used, &d, &dn);
            cr_assert_leq(used, have);
            if (ev == GX_UP_DATA) {
                cr_assert(d >= buf && d + dn <= buf + have);
                cr_assert_lt(r.blen + dn, sizeof r.body);
                memcpy(r.body + r.blen, d, dn);
                r.blen += dn;
            }
            memmove(buf, buf + used, have - used);
            have -= used;
            if (ev == GX_UP_HEAD) {
                r.heads++;
                r.status = p.status;
                snprintf(r.ctype, sizeof r.ctype, "%s", p.ctype);
            } else if (ev == GX_UP_END) {
                r.ended = 1;
                break;
            } else if (ev == GX_UP_ERR) {
                r.err = 1;
                r.why = p.err;
                break;
            } else if (ev == GX_UP_NEED) {
                break;
            }
        }
    }
    if (!r.ended && !r.err && eof) {
        if (gx_up_parse_eof(&p) == GX_UP_END) r.ended = 1;
        else { r.err = 1; r.why = p.err; }
    }
    r.keepalive = p.keepalive;
    free(buf);
    return r;
}

static result whole(const char *in, int eof) { return run(in, strlen(in), NULL, 0, eof); }

/* The same answer must come out whatever one cut (and every pair of cuts near the
 * head's end) splits it. */
static void every_split(const char *in, int status, const char *body, int keepalive)
{
    size_t n = strlen(in);
    result ref = whole(in, 0);
    cr_assert(ref.ended, "whole: not ended (%s)", ref.why ? ref.why : "");
    cr_assert_eq(ref.status, status);
    cr_assert_eq(ref.blen, strlen(body));
    cr_assert(!memcmp(ref.body, body, ref.blen));
    cr_assert_eq(ref.keepalive, keepalive);
    for (size_t i = 1; i < n; i++) {
        size_t cut[1] = {i};
        result r = run(in, n, cut, 1, 0);
        cr_assert(r.ended && !r.err, "cut at %zu: ended %d err %s", i, r.ended, r.why ? r.why : "");
        cr_assert_eq(r.heads, 1, "cut at %zu", i);
        cr_assert_eq(r.blen, ref.blen, "cut at %zu", i);
        cr_assert(!memcmp(r.body, body, r.blen), "cut at %zu: body differs", i);
        cr_assert_str_eq(r.ctype, ref.ctype);
    }
    for (size_t i = 1; i + 1 < n && i < 200; i++) /* byte by byte over the head */
        for (size_t j = i + 1; j < n && j < i + 3; j++) {
            size_t cut[2] = {i, j};
            result r = run(in, n, cut, 2, 0);
            cr_assert(r.ended && r.blen == ref.blen, "cuts at %zu,%zu", i, j);
        }
}

Test(upstream_parse, content_length)
{
    every_split("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 13\r\n\r\n{\"usage\":{}}\n",
                200, "{\"usage\":{}}\n", 1);
    result r = whole("HTTP/1.1 200 OK\r\ncontent-type:  text/plain \r\ncontent-length: 2\r\n\r\nhi", 0);
    cr_assert_str_eq(r.ctype, "text/plain");
}

Test(upstream_parse, chunked_with_extensions_and_trailers)
{
    every_split("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                "6;name=value\r\ndata: \r\n"
                "00009 ; x=\"y\"\r\n{\"a\":1}\n\n\r\n"
                "0\r\nX-Trailer: 1\r\n\r\n",
                200, "data: {\"a\":1}\n\n", 1);
    every_split("HTTP/1.1 200 OK\nTransfer-Encoding: Chunked\n\n3\nabc\n0\n\n", 200, "abc", 1); /* bare LF */
}

Test(upstream_parse, until_close_and_bodiless)
{
    result r = whole("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nall of it", 1);
    cr_assert(r.ended && r.blen == 9 && !r.keepalive);
    r = whole("HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n", 0);
    cr_assert(r.ended && r.blen == 0 && r.keepalive, "204 has no body");
    r = whole("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n", 0);
    cr_assert(r.ended && r.blen == 0);
    every_split("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 500 Internal Server Error\r\nContent-Length: 3\r\n\r\nbad", 500,
                "bad", 1);
}

Test(upstream_parse, keepalive_decisions)
{
    cr_assert(!whole("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx", 0).keepalive);
    cr_assert(!whole("HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", 0).keepalive);
    cr_assert(whole("HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1\r\n\r\nx", 0).keepalive);
    cr_assert(whole("HTTP/1.1 200 OK\r\nConnection: keep-alive, Upgrade\r\nContent-Length: 1\r\n\r\nx", 0).keepalive);
    /* both framings: chunked wins, and the connection is not trusted again */
    result r = whole("HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nz\r\n0\r\n\r\n", 0);
    cr_assert(r.ended && r.blen == 1 && !r.keepalive);
}

Test(upstream_parse, cut_short)
{
    result r = whole("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", 1);
    cr_assert(r.err && !r.ended, "a body shorter than Content-Length is an error");
    r = whole("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", 1);
    cr_assert(r.err);
    r = whole("HTTP/1.1 200 OK\r\nContent-Le", 1);
    cr_assert(r.err && strstr(r.why, "head"), "%s", r.why);
}

static void bad(const char *in, const char *why)
{
    result r = whole(in, 0);
    cr_assert(r.err, "accepted: %s", in);
    cr_assert(strstr(r.why, why), "%s: said %s, not %s", in, r.why, why);
}

Test(upstream_parse, bad_inputs)
{
    bad("HTTP/2 200 OK\r\n\r\n", "status line");
    bad("HTTP/1.1 20 OK\r\n\r\n", "status line");
    bad("HTTP/1.1 2000 OK\r\n\r\n", "status line");
    bad("HTTP/1.1 600 Nope\r\n\r\n", "status line");
    bad("ICY 200 OK\r\n\r\n", "status line");
    bad("\r\n\r\n", "empty");
    bad("HTTP/1.1 200 OK\r\nContent-Length: 12x\r\n\r\n", "Content-Length");
    bad("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "Content-Length");
    bad("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", "Content-Length");
    bad("HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n", "conflicting");
    bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", "Transfer-Encoding");
    bad("HTTP/1.1 200 OK\r\nX: 1\r\n folded\r\n\r\n", "folded");
    bad("HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "without a name");
    bad("HTTP/1.1 200 OK\r\nBad Name: 1\r\n\r\n", "header name");
    bad("HTTP/1.1 101 Switching Protocols\r\n\r\n", "protocol switch");
    bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "chunk size");
    bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1 x\r\n", "chunk size");
    bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1234567890abcdef0\r\n", "too large");
    bad("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n", "CRLF");
}

Test(upstream_parse, limits)
{
    /* a head larger than the limit, whether or not it would end */
    size_t n = GX_UP_MAX_HEAD + 100;
    char *h = malloc(n + 1);
    memset(h, 'a', n);
    memcpy(h, "HTTP/1.1 200 OK\r\nX: ", 20);
    h[n] = 0;
    result r = whole(h, 0);
    cr_assert(r.err && strstr(r.why, "too large"), "%s", r.why ? r.why : "accepted");
    free(h);
    /* more headers than allowed */
    char *many = malloc(GX_UP_MAX_HEADERS * 8 + 64);
    size_t k = (size_t)sprintf(many, "HTTP/1.1 200 OK\r\n");
    for (int i = 0; i <= GX_UP_MAX_HEADERS; i++) k += (size_t)sprintf(many + k, "X%d: 1\r\n", i % 10);
    sprintf(many + k, "\r\n");
    r = whole(many, 0);
    cr_assert(r.err && strstr(r.why, "too many"), "%s", r.why ? r.why : "accepted");
    free(many);
    /* a chunk-size line longer than allowed (extensions without end) */
    char *ext = malloc(GX_UP_MAX_CHUNK_LINE + 200);
    k = (size_t)sprintf(ext, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;");
    memset(ext + k, 'e', GX_UP_MAX_CHUNK_LINE + 10);
    ext[k + GX_UP_MAX_CHUNK_LINE + 10] = 0;
    r = whole(ext, 0);
    cr_assert(r.err && strstr(r.why, "too long"), "%s", r.why ? r.why : "accepted");
    free(ext);
}

Test(upstream_parse, which_urls)
{
    cr_assert(gx_up_handles("http://127.0.0.1:8000"));
    cr_assert(gx_up_handles("http://localhost:8000/prefix"));
    cr_assert(gx_up_handles("http://[::1]:8000"));
    cr_assert(gx_up_handles("http://10.0.0.1"));
    cr_assert(!gx_up_handles("https://127.0.0.1:8000"), "TLS goes through libcurl");
    cr_assert(!gx_up_handles("http://vllm.internal:8000"), "names go through libcurl (resolving blocks)");
    cr_assert(!gx_up_handles("http://127.0.0.1:0"));
    cr_assert(!gx_up_handles("http://127.0.0.1:99999"));
    cr_assert(!gx_up_handles("http://127.0.0.1:80x"));
}
