/* http_parse: request heads and chunked bodies, parsed in place (see http_parse.h).
 * Owns: the grammar of RFC 9112 as far as a small origin server needs it.
 * Must not: do I/O or allocate; accept anything ambiguous. Where senders and
 * intermediaries could disagree on framing (obs-fold, both Content-Length and
 * Transfer-Encoding, differing Content-Lengths, bare CR) the request is refused,
 * since those disagreements are what request smuggling is made of. Bare LF line
 * ends are accepted, as nginx does (RFC 9112 2.2 allows it). */
#include <string.h>
#include <strings.h>
#include "net/http_parse.h"

#define MAX_METHOD 32
#define MAX_CHUNK_EXTRA 4096     /* chunk extensions + trailers, bytes */

/* tchar of RFC 9110 5.6.2 */
static int is_tchar(unsigned char c)
{
    if (c >= '0' && c <= '9') return 1;
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return 1;
    return c && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static int hexval(unsigned char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    c |= 0x20;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

size_t gx_hp_head_end(const char *b, size_t len, size_t *scan)
{
    size_t i = *scan;
    for (; i < len; i++) {
        if (b[i] != '\n') continue;
        if ((i >= 1 && b[i - 1] == '\n') || (i >= 2 && b[i - 1] == '\r' && b[i - 2] == '\n')) {
            *scan = 0;
            return i + 1;
        }
    }
    *scan = len;
    return 0;
}

/* Percent-decode s in place; plus: '+' means a space (query strings). -1 on a bad
 * escape or an encoded NUL (it would cut the string short for every caller). */
static int pct_decode(char *s, int plus)
{
    char *o = s;
    for (; *s; s++) {
        if (*s == '%') {
            int a = hexval((unsigned char)s[1]), b = a < 0 ? -1 : hexval((unsigned char)s[2]);
            if (b < 0 || (a == 0 && b == 0)) return -1;
            *o++ = (char)(a * 16 + b);
            s += 2;
        } else if (plus && *s == '+') {
            *o++ = ' ';
        } else {
            *o++ = *s;
        }
    }
    *o = 0;
    return 0;
}

/* key=value&key2=value2: split and decode in place. A key without '=' has "" as value. */
static int parse_query(char *q, gx_hp_req *r, const char **why)
{
    while (*q) {
        char *amp = strchr(q, '&');
        if (amp) *amp = 0;
        if (*q) {
            if (r->nq == GX_HP_MAX_QUERY) { *why = "more than 64 query parameters"; return 400; }
            char *eq = strchr(q, '=');
            char *v = "";
            if (eq) { *eq = 0; v = eq + 1; }
            if (pct_decode(q, 1) || (eq && pct_decode(v, 1))) { *why = "bad percent-escape in the query string"; return 400; }
            r->q[r->nq++] = (gx_hp_pair){q, v};
        }
        if (!amp) break;
        q = amp + 1;
    }
    return 0;
}

/* The next line of b[*pos..end): NUL-terminated in place without its CR LF. -1 on a
 * bare CR or a missing LF (the head end was found, so that means a stray CR). */
static int next_line(char *b, size_t end, size_t *pos, char **line)
{
    size_t i = *pos;
    char *nl = memchr(b + i, '\n', end - i);
    if (!nl) return -1;
    size_t e = (size_t)(nl - b);
    size_t le = e > i && b[e - 1] == '\r' ? e - 1 : e;
    if (memchr(b + i, '\r', le - i)) return -1;
    b[le] = 0;
    *line = b + i;
    *pos = e + 1;
    return 0;
}

static int parse_request_line(char *l, gx_hp_req *r, const char **why)
{
    char *p = l;
    while (is_tchar((unsigned char)*p)) p++;
    if (p == l || *p != ' ') { *why = "malformed request line (method)"; return 400; }
    if (p - l > MAX_METHOD) { *why = "method longer than 32 characters"; return 400; }
    *p++ = 0;
    r->method = l;
    char *t = p;
    while ((unsigned char)*p > 0x20 && (unsigned char)*p < 0x7f) p++;
    if (p == t || *p != ' ') { *why = "malformed request line (target)"; return 400; }
    *p++ = 0;
    if (strncmp(p, "HTTP/", 5) || !(p[5] >= '0' && p[5] <= '9') || p[6] != '.' || !(p[7] >= '0' && p[7] <= '9') || p[8]) {
        *why = "malformed request line (version)";
        return 400;
    }
    if (p[5] != '1') { *why = "only HTTP/1.0 and HTTP/1.1 are supported"; return 505; }
    r->minor = p[7] == '0' ? 0 : 1;
    r->keep_alive = r->minor == 1;
    if (*t != '/') { *why = "the request target must be a path starting with /"; return 400; }
    char *qm = strchr(t, '?');
    if (qm) *qm = 0;
    if (pct_decode(t, 0)) { *why = "bad percent-escape in the path"; return 400; }
    r->path = t;
    return qm ? parse_query(qm + 1, r, why) : 0;
}

/* Comma-separated tokens of a Connection header. */
static void connection_tokens(const char *v, gx_hp_req *r)
{
    while (*v) {
        while (*v == ' ' || *v == '\t' || *v == ',') v++;
        const char *s = v;
        while (*v && *v != ',' && *v != ' ' && *v != '\t') v++;
        size_t n = (size_t)(v - s);
        if (n == 5 && !strncasecmp(s, "close", 5)) r->keep_alive = 0;
        else if (n == 10 && !strncasecmp(s, "keep-alive", 10) && r->minor == 0) r->keep_alive = 1;
    }
}

/* Framing and connection headers, checked once all headers are known. */
static int framing(gx_hp_req *r, const char **why)
{
    int ncl = 0, nte = 0, nhost = 0, close = 0;
    for (int i = 0; i < r->nh; i++) {
        const char *n = r->h[i].name, *v = r->h[i].value;
        if (!strcasecmp(n, "content-length")) {
            uint64_t x = 0;
            const char *p = v;
            if (!*p) { *why = "empty Content-Length"; return 400; }
            for (; *p; p++) {
                if (*p < '0' || *p > '9' || p - v >= 18) { *why = "Content-Length is not a number"; return 400; }
                x = x * 10 + (uint64_t)(*p - '0');
            }
            if (ncl++ && x != r->content_length) { *why = "conflicting Content-Length headers"; return 400; }
            r->content_length = x;
        } else if (!strcasecmp(n, "transfer-encoding")) {
            if (nte++ || strcasecmp(v, "chunked")) { *why = "unsupported Transfer-Encoding (only chunked)"; return 501; }
        } else if (!strcasecmp(n, "host")) {
            nhost++;
        } else if (!strcasecmp(n, "connection")) {
            connection_tokens(v, r);
            if (!r->keep_alive) close = 1;
        } else if (!strcasecmp(n, "expect")) {
            if (strcasecmp(v, "100-continue")) { *why = "unsupported Expect (only 100-continue)"; return 417; }
            r->expect_continue = r->minor >= 1;
        }
    }
    if (close) r->keep_alive = 0;
    if (ncl && nte) { *why = "both Content-Length and Transfer-Encoding"; return 400; }
    if (nhost > 1 || (r->minor >= 1 && nhost == 0)) { *why = "an HTTP/1.1 request needs exactly one Host header"; return 400; }
    if (nte && r->minor == 0) { *why = "Transfer-Encoding in an HTTP/1.0 request"; return 400; }
    r->body = nte ? GX_HP_BODY_CHUNKED : ncl && r->content_length ? GX_HP_BODY_LENGTH : GX_HP_BODY_NONE;
    if (r->body == GX_HP_BODY_NONE) r->expect_continue = 0;
    return 0;
}

int gx_hp_parse_head(char *b, size_t len, gx_hp_req *r, const char **why)
{
    memset(r, 0, sizeof *r);
    size_t pos = 0;
    char *line;
    if (len > GX_HP_MAX_HEAD) { *why = "request line and headers larger than 16 KiB"; return 431; }
    if (next_line(b, len, &pos, &line)) { *why = "stray CR in the request line"; return 400; }
    int rc = parse_request_line(line, r, why);
    if (rc) return rc;
    for (;;) {
        if (next_line(b, len, &pos, &line)) { *why = "stray CR in a header line"; return 400; }
        if (!*line) break;
        if (*line == ' ' || *line == '\t') { *why = "folded header line (obs-fold)"; return 400; }
        if (r->nh == GX_HP_MAX_HEADERS) { *why = "more than 100 header fields"; return 431; }
        char *p = line;
        while (is_tchar((unsigned char)*p)) p++;
        if (p == line || *p != ':') { *why = "malformed header line"; return 400; }
        *p++ = 0;
        while (*p == ' ' || *p == '\t') p++;
        char *v = p, *e = p;
        for (; *p; p++) {
            unsigned char c = (unsigned char)*p;
            if ((c < 0x20 && c != '\t') || c == 0x7f) { *why = "control character in a header value"; return 400; }
            if (c != ' ' && c != '\t') e = p + 1;
        }
        *e = 0;
        r->h[r->nh++] = (gx_hp_pair){line, v};
    }
    return framing(r, why);
}

const char *gx_hp_header(const gx_hp_req *r, const char *name)
{
    for (int i = 0; i < r->nh; i++)
        if (!strcasecmp(r->h[i].name, name)) return r->h[i].value;
    return NULL;
}

const char *gx_hp_query(const gx_hp_req *r, const char *key)
{
    for (int i = 0; i < r->nq; i++)
        if (!strcmp(r->q[i].name, key)) return r->q[i].value;
    return NULL;
}

/* ---- chunked bodies ------------------------------------------------------------- */

enum { CH_SIZE, CH_EXT, CH_SIZE_LF, CH_DATA, CH_DATA_CR, CH_DATA_LF, CH_TRAILER_BOL, CH_TRAILER, CH_END_LF, CH_DONE };

long gx_hp_unchunk(gx_hp_chunked *st, char *b, size_t len, size_t *out, int *done, const char **why)
{
    size_t i = 0, o = 0;
    *done = 0;
    while (i < len && st->state != CH_DONE) {
        unsigned char c = (unsigned char)b[i];
        switch (st->state) {
        case CH_SIZE: {
            int v = hexval(c);
            if (v >= 0) {
                if (++st->digits > 15) { *why = "chunk size too large"; return -1; }
                st->left = st->left * 16 + (uint64_t)v;
            } else if (st->digits && (c == ';' || c == ' ' || c == '\t')) {
                st->state = CH_EXT;
            } else if (st->digits && c == '\r') {
                st->state = CH_SIZE_LF;
            } else if (st->digits && c == '\n') {
                st->state = st->left ? CH_DATA : CH_TRAILER_BOL;
            } else {
                *why = "malformed chunk size";
                return -1;
            }
            i++;
            break;
        }
        case CH_EXT:
            if (++st->extra > MAX_CHUNK_EXTRA) { *why = "chunk extensions too long"; return -1; }
            if (c == '\r') st->state = CH_SIZE_LF;
            else if (c == '\n') st->state = st->left ? CH_DATA : CH_TRAILER_BOL;
            else if ((c < 0x20 && c != '\t') || c == 0x7f) { *why = "control character in a chunk extension"; return -1; }
            i++;
            break;
        case CH_SIZE_LF:
            if (c != '\n') { *why = "chunk size line not ended by CRLF"; return -1; }
            st->state = st->left ? CH_DATA : CH_TRAILER_BOL;
            i++;
            break;
        case CH_DATA: {
            size_t n = len - i;
            if (n > st->left) n = (size_t)st->left;
            memmove(b + o, b + i, n);
            o += n;
            i += n;
            st->left -= n;
            if (!st->left) st->state = CH_DATA_CR;
            break;
        }
        case CH_DATA_CR:
            if (c == '\r') st->state = CH_DATA_LF;
            else if (c == '\n') st->state = CH_SIZE, st->digits = 0;
            else { *why = "chunk data longer than its size"; return -1; }
            i++;
            break;
        case CH_DATA_LF:
            if (c != '\n') { *why = "chunk data longer than its size"; return -1; }
            st->state = CH_SIZE;
            st->digits = 0;
            i++;
            break;
        case CH_TRAILER_BOL:
            if (c == '\r') st->state = CH_END_LF;
            else if (c == '\n') st->state = CH_DONE;
            else st->state = CH_TRAILER, st->extra++;
            i++;
            break;
        case CH_TRAILER:
            if (++st->extra > MAX_CHUNK_EXTRA) { *why = "chunked trailers too long"; return -1; }
            if (c == '\n') st->state = CH_TRAILER_BOL;
            i++;
            break;
        case CH_END_LF:
            if (c != '\n') { *why = "chunked body not ended by CRLF"; return -1; }
            st->state = CH_DONE;
            i++;
            break;
        }
    }
    *out = o;
    *done = st->state == CH_DONE;
    return (long)i;
}

int gx_hp_unchunk_done(const gx_hp_chunked *st) { return st->state == CH_DONE; }
