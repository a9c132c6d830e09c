/* maas/sse: reading what the upstream answers, for the meter.
 * Owns: the incremental SSE splitter (events may arrive cut anywhere), finding usage
 * in whichever chunk carries it (the usage-only chunk, or a last chunk that also has
 * choices), hiding that usage from a client that did not ask for it, the usage of a
 * plain JSON answer, and the token estimates used when no usage comes.
 * Must not: change any event other than the one carrying usage the client did not
 * ask for: everything else passes byte for byte, in order. */
#include <stdlib.h>
#include <string.h>
#include "lib/alloc.h"
#include "maas/maas_int.h"

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* The index of the quote that ends the string whose first character is s[st], or n when
 * it does not end. memchr to each quote, then an even run of backslashes before it
 * means the quote is real: answers are mostly string content, and stepping through it a
 * byte at a time was the scan's whole cost. */
static size_t string_end(const char *s, size_t st, size_t n)
{
    for (size_t j = st; j < n; j++) {
        const char *q = memchr(s + j, '"', n - j);
        if (!q) return n;
        j = (size_t)(q - s);
        size_t b = 0;
        while (j - b > st && s[j - b - 1] == '\\') b++;
        if (!(b & 1)) return j;
    }
    return n;
}

/* The value of key at the top level of the JSON object that s[0..n) starts with, NULL
 * when absent (or the text is not such an object). A scan, not a parse: strings (with
 * their escapes) and nesting are stepped over and nothing is allocated, so the meter
 * does not cost a full parse of every answer; a "usage" inside a string or a nested
 * object is not taken for the real one. */
static const char *top_value(const char *s, size_t n, const char *key)
{
    size_t klen = strlen(key), i = 0;
    while (i < n && is_ws(s[i])) i++;
    if (i >= n || s[i] != '{') return NULL;
    int depth = 0, want_key = 0;
    for (; i < n; i++) {
        char ch = s[i];
        if (ch == '"') {
            size_t st = i + 1, j = string_end(s, st, n);
            if (j >= n) return NULL;
            i = j;
            if (depth != 1 || !want_key) continue;
            want_key = 0;
            size_t k = j + 1;
            while (k < n && is_ws(s[k])) k++;
            if (k >= n || s[k] != ':') return NULL;
            if (j - st == klen && !memcmp(s + st, key, klen)) {
                for (k++; k < n && is_ws(s[k]); k++) {}
                return k < n ? s + k : NULL;
            }
            i = k;
        } else if (ch == '{' || ch == '[') {
            if (++depth > 64) return NULL;
            if (depth == 1) want_key = 1;
        } else if (ch == '}' || ch == ']') {
            if (--depth <= 0) return NULL;
        } else if (ch == ',' && depth == 1) {
            want_key = 1;
        }
    }
    return NULL;
}

/* A non-negative JSON integer at v (up to end); -1 when it is not one. */
static int64_t int_at(const char *v, const char *end)
{
    int64_t x = 0;
    const char *q = v;
    for (; q < end && *q >= '0' && *q <= '9'; q++) {
        if (q - v >= 15) return -1;
        x = x * 10 + (*q - '0');
    }
    if (q == v || (q < end && (*q == '.' || *q == 'e' || *q == 'E'))) return -1;
    return x;
}

/* Just past the object or array that starts at s (s < end), NULL when it does not close. */
static const char *close_of(const char *s, const char *end)
{
    int depth = 0;
    for (const char *q = s; q < end; q++) {
        if (*q == '"') {
            size_t j = string_end(q, 1, (size_t)(end - q));
            if (j >= (size_t)(end - q)) return NULL;
            q += j;
        } else if (*q == '{' || *q == '[') {
            depth++;
        } else if ((*q == '}' || *q == ']') && --depth == 0) {
            return q + 1;
        }
    }
    return NULL;
}

/* prompt_tokens and completion_tokens of the usage object at u (a complete one); 0
 * when found. */
static int scan_usage(const char *u, const char *end, int64_t *prompt, int64_t *completion)
{
    if (u >= end || *u != '{' || !(end = close_of(u, end))) return -1;
    const char *pt = top_value(u, (size_t)(end - u), "prompt_tokens");
    const char *ct = top_value(u, (size_t)(end - u), "completion_tokens");
    int64_t p = pt ? int_at(pt, end) : -1, c = ct ? int_at(ct, end) : 0;
    if (p < 0 || c < 0) return -1;
    *prompt = p;
    *completion = c;
    return 0;
}

static void read_usage(const json_t *u, int64_t *prompt, int64_t *completion)
{
    *prompt = json_integer_value(json_object_get(u, "prompt_tokens"));
    *completion = json_integer_value(json_object_get(u, "completion_tokens"));
}

/* One complete event (with its terminator). */
static void event(gx_maas_sse *s, const char *ev, size_t n, gx_sbuf *out)
{
    /* The common case: no usage in it, pass it on untouched. memmem, not strstr:
     * the event is not NUL-terminated. */
    int has_choice = memmem(ev, n, "\"delta\"", 7) || memmem(ev, n, "\"text\"", 6);
    if (has_choice && !memmem(ev, n, "\"choices\":[]", 12)) {
        s->content_chunks++;
        s->content_bytes += (int64_t)n;
    }
    const char *u = memmem(ev, n, "\"usage\"", 7);
    if (!u || n < 6 || memcmp(ev, "data:", 5)) { gx_sbuf_put(out, ev, n); return; }
    size_t skip = ev[5] == ' ' ? 6 : 5;
    /* "usage": null rides on every chunk of some servers: only an object matters */
    const char *uv = top_value(ev + skip, n - skip, "usage");
    if (!uv || *uv != '{') { gx_sbuf_put(out, ev, n); return; }
    if (!s->strip_usage && !scan_usage(uv, ev + n, &s->prompt, &s->completion)) {
        s->have_usage = 1; /* the client asked for it: pass it on untouched, no parse */
        gx_sbuf_put(out, ev, n);
        return;
    }
    json_error_t je;
    json_t *j = json_loadb(ev + skip, n - skip, JSON_DISABLE_EOF_CHECK, &je);
    json_t *usage = json_object_get(j, "usage");
    if (!json_is_object(usage)) { json_decref(j); gx_sbuf_put(out, ev, n); return; }
    s->have_usage = 1;
    read_usage(usage, &s->prompt, &s->completion);
    if (!s->strip_usage) { json_decref(j); gx_sbuf_put(out, ev, n); return; }
    json_t *ch = json_object_get(j, "choices");
    if (json_is_array(ch) && json_array_size(ch) == 0) { json_decref(j); return; } /* usage-only chunk: drop */
    /* usage riding on a chunk that also has choices: keep the chunk, hide the usage */
    json_object_del(j, "usage");
    char *txt = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(j);
    if (!txt) return;
    gx_sbuf_put(out, "data: ", 6);
    gx_sbuf_put(out, txt, strlen(txt));
    gx_sbuf_put(out, "\n\n", 2);
    free(txt);
}

/* Index just past the end of the first event in p[from..n), or 0. */
static size_t event_end(const char *p, size_t from, size_t n)
{
    for (size_t i = from; i + 1 < n; i++) {
        if (p[i] != '\n') continue;
        if (p[i + 1] == '\n') return i + 2;
        if (p[i + 1] == '\r' && i + 2 < n && p[i + 2] == '\n') return i + 3;
    }
    return 0;
}

void gx_maas_sse_feed(gx_maas_sse *s, const char *p, size_t n, gx_sbuf *out, int flush)
{
    /* Fast path: nothing pending and the data is whole events: no copy into pend. */
    size_t start = 0, end;
    if (!s->plen) {
        while ((end = event_end(p, start, n))) {
            event(s, p + start, end - start, out);
            start = end;
        }
        p += start;
        n -= start;
        start = 0;
    }
    if (n) {
        if (s->plen + n > s->pcap)   /* from 4 KiB: most cut events fit the first block */
            s->pend = gx_xgrow(s->pend, &s->pcap, s->plen + n > 4096 ? s->plen + n : 4096, 1);
        size_t from = s->plen > 2 ? s->plen - 2 : 0; /* a terminator may straddle the cut */
        memcpy(s->pend + s->plen, p, n);
        s->plen += n;
        while ((end = event_end(s->pend, from, s->plen))) {
            event(s, s->pend + start, end - start, out);
            start = from = end;
        }
        if (start) {
            memmove(s->pend, s->pend + start, s->plen - start);
            s->plen -= start;
        }
    }
    if (flush && s->plen) {
        event(s, s->pend, s->plen, out);
        s->plen = 0;
    }
}

void gx_maas_sse_free(gx_maas_sse *s)
{
    free(s->pend);
    s->pend = NULL;
    s->plen = s->pcap = 0;
}

int gx_maas_usage_of(const char *body, size_t len, int64_t *prompt, int64_t *completion, int64_t *content_bytes)
{
    /* Fast path: find the top-level usage object by a scan and read its two numbers;
     * the whole answer is parsed only when there is none (to estimate from content). */
    const char *uv = top_value(body, len, "usage");
    if (uv && !scan_usage(uv, body + len, prompt, completion)) {
        *content_bytes = 0;
        return 0;
    }
    json_error_t je;
    json_t *j = json_loadb(body, len, 0, &je);
    *content_bytes = 0;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(j, "choices"), i, c) {
        const char *t = json_string_value(json_object_get(json_object_get(c, "message"), "content"));
        if (!t) t = json_string_value(json_object_get(c, "text"));
        if (t) *content_bytes += (int64_t)strlen(t);
    }
    json_t *u = json_object_get(j, "usage");
    int rc = -1;
    if (json_is_object(u)) {
        read_usage(u, prompt, completion);
        rc = 0;
    }
    json_decref(j);
    return rc;
}

int64_t gx_maas_prompt_estimate(const gx_maas_body *b)
{
    /* ~4 bytes per token in English BPE vocabularies: what an upstream that reports no
     * usage is charged for the prompt. Never the reservation: see gx_maas_prompt_bound. */
    return b->text_bytes / 3 + 4 * b->messages + 1;
}

/* Why this bounds the prompt: a tokenizer splits the text it is given into tokens that
 * each stand for at least one byte of it (byte-level BPE, as GPT's, Llama 3's and Qwen's;
 * SentencePiece with byte fallback, whose pieces are at least one byte too, plus one
 * dummy-prefix space per segment), so a text of B bytes is at most B tokens, and a token
 * id given as an integer is one token (counted 3 in text_bytes). text_bytes counts every
 * string in messages, prompt and input once unescaped (the bytes the tokenizer sees),
 * roles and names included. What the chat template adds around them is special tokens:
 * at most GX_MAAS_TPL_PER_MESSAGE a message (ChatML's <|im_start|>, newline, <|im_end|>,
 * newline; Llama 3's header pair, blank line and <|eot_id|>) and GX_MAAS_TPL_PER_PROMPT a
 * prompt (BOS, and the generation prompt "<|im_start|>assistant\n" or its kind). A
 * template that writes text of its own (a default system prompt, tool definitions) can
 * pass this; the charge is then capped at the reservation (gx_maas_charge_cap), so the
 * budget holds either way. */
int64_t gx_maas_prompt_bound(const gx_maas_body *b)
{
    return b->text_bytes + GX_MAAS_TPL_PER_MESSAGE * b->messages + GX_MAAS_TPL_PER_PROMPT * (b->prompts > 0 ? b->prompts : 1);
}
