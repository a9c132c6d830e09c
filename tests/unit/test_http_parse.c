/* Unit tests for net/http_parse: the head's end, request line and headers, the
 * framing refusals (400/417/431/501/505), query and path decoding, chunked bodies
 * fed whole and byte by byte. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "net/http_parse.h"

static char buf[40000];
static gx_hp_req R;

/* Parse text as a complete head; returns the status (0 = accepted). */
static int parse(const char *text, const char **why)
{
    size_t n = strlen(text), scan = 0;
    memcpy(buf, text, n + 1);
    size_t end = gx_hp_head_end(buf, n, &scan);
    cr_assert_gt(end, 0, "no head end in %s", text);
    const char *w = "";
    int rc = gx_hp_parse_head(buf, end, &R, &w);
    if (why) *why = w;
    return rc;
}

Test(http_parse, head_end_incremental)
{
    const char *t = "GET / HTTP/1.1\r\nHost: a\r\n\r\nNEXT";
    size_t scan = 0, n = strlen(t);
    for (size_t i = 1; i < n - 4; i++) cr_assert_eq(gx_hp_head_end(t, i, &scan), 0, "early end at %zu", i);
    cr_assert_eq(gx_hp_head_end(t, n, &scan), n - 4);
    scan = 0;
    cr_assert_eq(gx_hp_head_end("GET / HTTP/1.0\n\nX", 17, &scan), 16, "bare LF heads end too");
}

Test(http_parse, request_line_and_headers)
{
    cr_assert_eq(parse("POST /api/v1/x?a=1&b=two+words&c=%2F%41&flag HTTP/1.1\r\nHost: h\r\n"
                       "Content-Type:  application/yaml  \r\nX-Empty:\r\nContent-Length: 12\r\n\r\n", NULL), 0);
    cr_assert_str_eq(R.method, "POST");
    cr_assert_str_eq(R.path, "/api/v1/x");
    cr_assert_eq(R.minor, 1);
    cr_assert_eq(R.keep_alive, 1);
    cr_assert_eq(R.body, GX_HP_BODY_LENGTH);
    cr_assert_eq(R.content_length, 12);
    cr_assert_str_eq(gx_hp_header(&R, "content-type"), "application/yaml");
    cr_assert_str_eq(gx_hp_header(&R, "X-EMPTY"), "");
    cr_assert_null(gx_hp_header(&R, "Cookie"));
    cr_assert_str_eq(gx_hp_query(&R, "a"), "1");
    cr_assert_str_eq(gx_hp_query(&R, "b"), "two words");
    cr_assert_str_eq(gx_hp_query(&R, "c"), "/A");
    cr_assert_str_eq(gx_hp_query(&R, "flag"), "");
    cr_assert_null(gx_hp_query(&R, "d"));
}

Test(http_parse, path_is_decoded_plus_is_not_space)
{
    cr_assert_eq(parse("GET /a%20b+c HTTP/1.1\r\nHost: h\r\n\r\n", NULL), 0);
    cr_assert_str_eq(R.path, "/a b+c");
    cr_assert_eq(R.nq, 0);
}

Test(http_parse, connection_rules)
{
    cr_assert_eq(parse("GET / HTTP/1.0\r\n\r\n", NULL), 0);
    cr_assert_eq(R.keep_alive, 0, "HTTP/1.0 closes by default");
    cr_assert_eq(parse("GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", NULL), 0);
    cr_assert_eq(R.keep_alive, 1);
    cr_assert_eq(parse("GET / HTTP/1.1\r\nHost: h\r\nConnection: keep-alive, close\r\n\r\n", NULL), 0);
    cr_assert_eq(R.keep_alive, 0, "close wins");
    cr_assert_eq(parse("GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-Continue\r\nContent-Length: 3\r\n\r\n", NULL), 0);
    cr_assert_eq(R.expect_continue, 1);
    cr_assert_eq(parse("GET / HTTP/1.1\r\nHost: h\r\nExpect: 100-continue\r\n\r\n", NULL), 0);
    cr_assert_eq(R.expect_continue, 0, "nothing to continue without a body");
    cr_assert_eq(parse("GET / HTTP/1.2\r\nHost: h\r\n\r\n", NULL), 0);
    cr_assert_eq(R.minor, 1, "a higher minor version is served as 1.1");
}

Test(http_parse, framing_refusals)
{
    const char *why;
    struct { const char *head; int status; const char *why; } cases[] = {
        {"GET / HTTP/1.1\r\n\r\n", 400, "Host"},
        {"GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400, "Host"},
        {"GET  / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "target"},
        {"GET / HTTP/1.1 \r\nHost: h\r\n\r\n", 400, "version"},
        {"GET http://x/ HTTP/1.1\r\nHost: h\r\n\r\n", 400, "path"},
        {"G(T / HTTP/1.1\r\nHost: h\r\n\r\n", 400, "method"},
        {"GET / HTTP/2.0\r\nHost: h\r\n\r\n", 505, "HTTP/1"},
        {"GET / HTTP/1.1\r\nHost: h\r\nX: a\r\n b\r\n\r\n", 400, "obs-fold"},
        {"GET / HTTP/1.1\r\nHost: h\r\nX : a\r\n\r\n", 400, "header"},
        {"GET / HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n", 400, "CR"},
        {"GET / HTTP/1.1\r\nHost: h\r\nX: a\x01\r\n\r\n", 400, "control"},
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "both"},
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", 400, "conflicting"},
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 3, 3\r\n\r\n", 400, "number"},
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400, "number"},
        {"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 1234567890123456789012\r\n\r\n", 400, "number"},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501, "Transfer-Encoding"},
        {"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 501, "Transfer-Encoding"},
        {"POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400, "HTTP/1.0"},
        {"GET / HTTP/1.1\r\nHost: h\r\nExpect: later\r\n\r\n", 417, "Expect"},
        {"GET /%zz HTTP/1.1\r\nHost: h\r\n\r\n", 400, "percent"},
        {"GET /a%00b HTTP/1.1\r\nHost: h\r\n\r\n", 400, "percent"},
        {"GET /?a=%4 HTTP/1.1\r\nHost: h\r\n\r\n", 400, "query"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        cr_assert_eq(parse(cases[i].head, &why), cases[i].status, "case %zu: got %d (%s)", i, parse(cases[i].head, &why), why);
        cr_assert(strstr(why, cases[i].why), "case %zu: '%s' should mention '%s'", i, why, cases[i].why);
    }
    cr_assert_eq(parse("POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 7\r\ncontent-length: 7\r\n\r\n", NULL), 0,
                 "the same Content-Length twice is fine");
}

Test(http_parse, header_limits)
{
    const char *why;
    char *p = buf + 4000;
    int n = sprintf(p, "GET / HTTP/1.1\r\nHost: h\r\n");
    for (int i = 0; i < GX_HP_MAX_HEADERS - 1; i++) n += sprintf(p + n, "X-%d: v\r\n", i);
    sprintf(p + n, "\r\n");
    char copy[8000];
    cr_assert_lt((size_t)snprintf(copy, sizeof copy, "%s", p), sizeof copy, "the request fits the copy");
    cr_assert_eq(parse(copy, NULL), 0, "100 headers are fine");
    cr_assert_eq(R.nh, 100);
    cr_assert_lt((size_t)snprintf(copy, sizeof copy, "%s", p), sizeof copy);
    char *end = strstr(copy, "\r\n\r\n");
    strcpy(end, "\r\nX-last: v\r\n\r\n");
    cr_assert_eq(parse(copy, &why), 431, "101 headers: %s", why);
    /* a head over 16 KiB */
    char *big = malloc(GX_HP_MAX_HEAD + 100);
    int m = sprintf(big, "GET / HTTP/1.1\r\nHost: h\r\nX: ");
    memset(big + m, 'a', GX_HP_MAX_HEAD);
    strcpy(big + m + GX_HP_MAX_HEAD, "\r\n\r\n");
    cr_assert_eq(parse(big, &why), 431);
    free(big);
}

/* Decode text fed in pieces of step bytes; returns the data, sets *used. */
static int unchunk(const char *text, size_t step, char *data, size_t *dlen, size_t *used, const char **why)
{
    gx_hp_chunked st;
    memset(&st, 0, sizeof st);
    size_t n = strlen(text), off = 0;
    *dlen = 0;
    char piece[4096];
    while (off < n) {
        size_t k = n - off < step ? n - off : step;
        memcpy(piece, text + off, k);
        size_t out;
        int done;
        long c = gx_hp_unchunk(&st, piece, k, &out, &done, why);
        if (c < 0) return -1;
        memcpy(data + *dlen, piece, out);
        *dlen += out;
        off += (size_t)c;
        if (done) {
            *used = off;
            return 1;
        }
    }
    *used = off;
    return 0;
}

Test(http_parse, chunked_whole_and_bytewise)
{
    const char *t = "5\r\nhello\r\n7;ext=1\r\n, world\r\n000\r\nTrailer: x\r\n\r\nGET /next";
    for (size_t step = 1; step <= 64; step += 63) {
        char data[64];
        size_t dlen, used;
        const char *why = "";
        cr_assert_eq(unchunk(t, step, data, &dlen, &used, &why), 1, "step %zu: %s", step, why);
        cr_assert_eq(dlen, 12);
        cr_assert_eq(memcmp(data, "hello, world", 12), 0);
        cr_assert_str_eq(t + used, "GET /next", "step %zu: the next request is left", step);
    }
    char data[64];
    size_t dlen, used;
    const char *why = "";
    cr_assert_eq(unchunk("3\r\nabc\r\n", 64, data, &dlen, &used, &why), 0, "incomplete body");
    cr_assert_eq(unchunk("0\n\n", 64, data, &dlen, &used, &why), 1, "bare LF accepted");
}

Test(http_parse, chunked_refusals)
{
    const char *bad[] = {"zz\r\n", "\r\n", "3\r\nabcd\r\n", "3\r\nabc\rx", "1234567890abcdef0\r\n", "3\rx"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char data[64];
        size_t dlen, used;
        const char *why = "";
        cr_assert_eq(unchunk(bad[i], 64, data, &dlen, &used, &why), -1, "case %zu accepted", i);
        cr_assert_neq(why[0], 0);
    }
    /* trailers are bounded */
    char *big = malloc(10000);
    strcpy(big, "0\r\nX: ");
    memset(big + 6, 'a', 9000);
    strcpy(big + 9006, "\r\n\r\n");
    char *data = malloc(10000);
    size_t dlen, used;
    const char *why = "";
    cr_assert_eq(unchunk(big, 4096, data, &dlen, &used, &why), -1);
    free(big);
    free(data);
}
