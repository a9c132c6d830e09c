/* fake_openai: a tiny OpenAI-compatible model server for the gateway's tests and
 * benchmark. It stands in for vLLM (or llama.cpp): this machine has no GPU and no
 * model, so this program answers in vLLM's formats instead, over real HTTP/1.1 on
 * loopback (keep-alive, chunked SSE), in one thread with epoll.
 * Owns: GET /health, GET /v1/models, POST /v1/chat/completions, /v1/completions,
 * /v1/embeddings, GET /stats (what it saw: requests, streams completed and cancelled,
 * whether the last streamed request asked for usage, streams and held answers in
 * progress now, held answers whose client left, answers cut on purpose, POSTs), GET
 * /metrics (Prometheus text as vLLM's: vllm:num_requests_running, the streams and held
 * answers in progress; vllm:prompt_tokens_total; a vllm:e2e_request_latency_seconds
 * histogram; and process_cpu_seconds_total, which is not vLLM's own).
 * Must not: be used for anything but tests (no limits worth the name, no TLS).
 * Behaviour: max_tokens words are generated ("tok0 tok1 ..."; default --tokens), one
 * SSE chunk each, --token-ms apart; prompt_tokens = words of the prompt. Words in the
 * prompt steer it: FAIL500 answers 500, SLOW paces 200 ms a token, WAIT holds the
 * first token 1 s (a long prefill; the headers go out at once, as vLLM's do), FAST
 * sends the tokens with no pause, NOUSAGE reports no
 * usage, USAGEINLAST puts usage on the last content chunk (no usage-only chunk),
 * CRASH exits the process (a model server dying), CUT closes the connection halfway
 * through the answer (after half the chunks of a stream; after half the body of a plain
 * answer, whose Content-Length promised all of it). --no-usage: never report usage.
 * --paced-plain: a non-streamed completion is answered only after as long as its
 * stream would take (max_tokens x the pace), as a real server answers after generating
 * them all, so that a client leaving meanwhile is seen: /stats counts "cancelledPlain".
 * --api-key KEY: /v1/... and /metrics answer 401 without "Authorization: Bearer KEY"
 * (vLLM --api-key; its /metrics behind an authenticating proxy).
 * --drop-reused: a POST arriving on a connection that already carried a request is not
 * answered: the connection is closed (a server whose keep-alive timeout fired just as
 * the client reused the connection); /stats counts them as "dropped".
 * --prompt-tokens-per-byte N: prompt_tokens reported is N times the bytes of the whole
 * request body (JSON syntax and all), more than any tokenizer and template would make of
 * it, so that a test can hold the gateway's budget to usage past every reservation.
 * --byte-tokenizer: prompt_tokens is one per byte of every string in messages, prompt
 * and input, plus ChatML's special tokens (4 a message, 3 to open the answer): the
 * worst an honest byte-level tokenizer does, which the gateway's reservation must bound.
 * usage: fake_openai [--port N] [--port-file F] [--model NAME] [--tokens N]
 *                    [--token-ms MS] [--no-usage] [--ready-after-ms MS] [--api-key KEY] [--drop-reused]
 *                    [--paced-plain] [--prompt-tokens-per-byte N] [--byte-tokenizer] */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAXC 8192

typedef struct conn {
    int fd, used;
    char *in; size_t inlen, incap;
    char *out; size_t outlen, outcap, outoff;
    /* a stream in progress */
    int streaming, chat, sent, total, usage_mode; /* 0 none, 1 separate chunk, 2 in last */
    int cut;                   /* CUT: close after half the answer */
    int closing;               /* close once what is pending is written */
    int64_t prompt, next_at, pace;
    char *held;                /* --paced-plain: the answer, sent at next_at */
    int nreq;                  /* requests seen on this connection */
    char model[128];
} conn;

static conn conns[MAXC];
static int ep;
static const char *model_name = "fake-model";
static int def_tokens = 8, token_ms = 10, no_usage = 0;
static int per_byte = 0, byte_tok = 0;   /* --byte-tokenizer */   /* --prompt-tokens-per-byte N: prompt_tokens = N x the request body's bytes */
static const char *api_key; /* --api-key: /v1/... needs "Authorization: Bearer KEY", as vLLM --api-key */
static int64_t ready_at;
static int live_streams, live_held, maxfd, drop_reused, paced_plain;
static long n_dropped, n_requests, n_streams, n_completed, n_cancelled, last_include_usage = -1;
static long n_cancelled_plain, n_cut, n_posts, n_prompt_tokens;

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void out_add(conn *c, const char *p, size_t n)
{
    if (c->outlen + n > c->outcap) {
        size_t cap = c->outcap ? c->outcap : 4096;
        while (cap < c->outlen + n) cap *= 2;
        c->out = realloc(c->out, cap);
        if (!c->out) abort();
        c->outcap = cap;
    }
    memcpy(c->out + c->outlen, p, n);
    c->outlen += n;
}

static void out_fmt(conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out_fmt(conn *c, const char *fmt, ...)
{
    char buf[4096];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    out_add(c, buf, (size_t)n);
}

static void close_conn(conn *c)
{
    if (c->streaming) { n_cancelled++; c->streaming = 0; live_streams--; }
    if (c->held) { n_cancelled_plain++; live_held--; free(c->held); }
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->in);
    free(c->out);
    memset(c, 0, sizeof *c);
}

/* Write what is pending; returns -1 when the peer is gone. */
static int flush_out(conn *c)
{
    while (c->outoff < c->outlen) {
        ssize_t w = send(c->fd, c->out + c->outoff, c->outlen - c->outoff, MSG_NOSIGNAL);
        if (w < 0) {
            if (errno == EAGAIN) break;
            return -1;
        }
        c->outoff += (size_t)w;
    }
    if (c->outoff == c->outlen) c->outoff = c->outlen = 0;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP | (c->outlen ? EPOLLOUT : 0), .data.ptr = c};
    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
    return 0;
}

/* Write what is pending, then close when the peer is gone or when the answer was
 * meant to end with a close (CUT) and all of it is out. */
static void flush_or_close(conn *c)
{
    if (flush_out(c) || (c->closing && !c->outlen)) close_conn(c);
}

static void respond(conn *c, int status, const char *body)
{
    out_fmt(c, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n", status,
            status == 200 ? "OK" : status == 503 ? "Service Unavailable" : status == 404 ? "Not Found" : "Error",
            strlen(body));
    out_add(c, body, strlen(body));
}

/* GET /metrics: a few families in vLLM's names and form (model_name label, a histogram's
 * _bucket/_sum/_count), and one that is not vLLM's, which the gateway must not pass on. */
static void metrics(conn *c)
{
    char b[3072];
    const char *m = model_name;
    snprintf(b, sizeof b,
             "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
             "# TYPE vllm:num_requests_running gauge\n"
             "vllm:num_requests_running{model_name=\"%s\"} %d.0\n"
             "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.\n"
             "# TYPE vllm:prompt_tokens_total counter\n"
             "vllm:prompt_tokens_total{model_name=\"%s\"} %ld.0\n"
             "# HELP vllm:e2e_request_latency_seconds Histogram of end to end request latency in seconds.\n"
             "# TYPE vllm:e2e_request_latency_seconds histogram\n"
             "vllm:e2e_request_latency_seconds_bucket{le=\"1.0\",model_name=\"%s\"} %ld.0\n"
             "vllm:e2e_request_latency_seconds_bucket{le=\"+Inf\",model_name=\"%s\"} %ld.0\n"
             "vllm:e2e_request_latency_seconds_count{model_name=\"%s\"} %ld.0\n"
             "vllm:e2e_request_latency_seconds_sum{model_name=\"%s\"} %.3f\n"
             "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
             "# TYPE process_cpu_seconds_total counter\n"
             "process_cpu_seconds_total %.2f\n",
             m, live_streams + live_held, m, n_prompt_tokens, m, n_posts, m, n_posts, m, n_posts, m, (double)n_posts * 0.01,
             (double)clock() / CLOCKS_PER_SEC);
    out_fmt(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\nContent-Length: %zu\r\n\r\n",
            strlen(b));
    out_add(c, b, strlen(b));
}

static void chunk(conn *c, const char *data)
{
    out_fmt(c, "%zx\r\n", strlen(data));
    out_add(c, data, strlen(data));
    out_add(c, "\r\n", 2);
}

/* Bytes of every string under v: what a tokenizer of one token per byte makes of it. */
static int64_t text_bytes(const json_t *v)
{
    if (json_is_string(v)) return (int64_t)json_string_length(v);
    int64_t n = 0;
    size_t i;
    const char *k;
    json_t *x;
    if (json_is_array(v)) json_array_foreach((json_t *)v, i, x) n += text_bytes(x);
    else if (json_is_object(v)) json_object_foreach((json_t *)v, k, x) n += text_bytes(x);
    return n;
}

static int64_t words(const json_t *v)
{
    if (json_is_string(v)) {
        int64_t n = 0, in = 0;
        for (const char *p = json_string_value(v); *p; p++) {
            int sp = *p == ' ' || *p == '\n' || *p == '\t';
            if (!sp && !in) n++;
            in = !sp;
        }
        return n;
    }
    int64_t n = 0;
    size_t i;
    const char *k;
    json_t *x;
    if (json_is_array(v)) json_array_foreach((json_t *)v, i, x) n += words(x);
    else if (json_is_object(v)) json_object_foreach((json_t *)v, k, x) if (strcmp(k, "role")) n += words(x);
    return n;
}

/* A 200 plain answer; with CUT, the head promises all of the body and half of it comes
 * before the connection closes. */
static void answer_plain(conn *c, const char *body)
{
    if (!c->cut) { respond(c, 200, body); return; }
    size_t n = strlen(body);
    out_fmt(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n", n);
    out_add(c, body, n / 2);
    c->closing = 1;
    n_cut++;
}

/* Emit the next chunk of a stream (or its end). */
static void stream_step(conn *c)
{
    char buf[1024];
    int last = c->sent == c->total - 1;
    if (c->cut && c->sent >= (c->total + 1) / 2) { /* CUT: stop halfway, no usage, no end */
        c->streaming = 0;
        live_streams--;
        c->closing = 1;
        n_cut++;
        return;
    }
    if (c->sent < c->total) {
        const char *u = c->usage_mode == 1 ? ",\"usage\":null" : "";
        char usage[200] = "";
        if (last && c->usage_mode == 2)
            snprintf(usage, sizeof usage, ",\"usage\":{\"prompt_tokens\":%lld,\"completion_tokens\":%d,\"total_tokens\":%lld}",
                     (long long)c->prompt, c->total, (long long)c->prompt + c->total);
        if (c->chat)
            snprintf(buf, sizeof buf, "data: {\"id\":\"chatcmpl-fake\",\"object\":\"chat.completion.chunk\",\"created\":0,"
                     "\"model\":\"%s\",\"choices\":[{\"index\":0,\"delta\":{%s\"content\":\"tok%d \"},\"finish_reason\":%s}]%s}\n\n",
                     c->model, c->sent == 0 ? "\"role\":\"assistant\"," : "", c->sent, last ? "\"length\"" : "null",
                     usage[0] ? usage : u);
        else
            snprintf(buf, sizeof buf, "data: {\"id\":\"cmpl-fake\",\"object\":\"text_completion\",\"created\":0,\"model\":\"%s\","
                     "\"choices\":[{\"index\":0,\"text\":\"tok%d \",\"finish_reason\":%s}]%s}\n\n", c->model, c->sent,
                     last ? "\"length\"" : "null", usage[0] ? usage : u);
        chunk(c, buf);
        c->sent++;
        c->next_at = now_ms() + c->pace;
        if (c->sent < c->total || c->usage_mode == 1) return;
    }
    if (c->usage_mode == 1) {
        snprintf(buf, sizeof buf, "data: {\"id\":\"chatcmpl-fake\",\"object\":\"%s\",\"created\":0,\"model\":\"%s\",\"choices\":[],"
                 "\"usage\":{\"prompt_tokens\":%lld,\"completion_tokens\":%d,\"total_tokens\":%lld}}\n\n",
                 c->chat ? "chat.completion.chunk" : "text_completion", c->model, (long long)c->prompt, c->total,
                 (long long)c->prompt + c->total);
        chunk(c, buf);
    }
    chunk(c, "data: [DONE]\n\n");
    out_add(c, "0\r\n\r\n", 5);
    c->streaming = 0;
    live_streams--;
    n_completed++;
}

static void handle_post(conn *c, const char *path, const char *body, size_t len)
{
    json_t *j = json_loadb(body, len, 0, NULL);
    if (!json_is_object(j)) { respond(c, 400, "{\"error\":{\"message\":\"bad json\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":null}}"); json_decref(j); return; }
    const char *m = json_string_value(json_object_get(j, "model"));
    snprintf(c->model, sizeof c->model, "%s", m ? m : model_name);
    const json_t *msgs = json_object_get(j, "messages");
    int64_t prompt = words(msgs) + words(json_object_get(j, "prompt")) + words(json_object_get(j, "input"));
    if (byte_tok) /* one token per byte of text, and ChatML's special tokens: 4 a message, 3 to open the answer */
        prompt = text_bytes(msgs) + text_bytes(json_object_get(j, "prompt")) + text_bytes(json_object_get(j, "input")) +
                 4 * (int64_t)json_array_size(msgs) + 3;
    if (per_byte) prompt = (int64_t)per_byte * (int64_t)len;   /* more than any tokenizer: past every bound */
    n_prompt_tokens += prompt;
    char *text = json_dumps(msgs ? msgs : json_object_get(j, "prompt") ? json_object_get(j, "prompt") : json_object_get(j, "input"),
                            JSON_ENCODE_ANY);
    int fail = text && strstr(text, "FAIL500"), slow = text && strstr(text, "SLOW"), crash = text && strstr(text, "CRASH");
    int wait = text && strstr(text, "WAIT"), fast = text && strstr(text, "FAST");
    c->cut = text && strstr(text, "CUT");
    int nouse = no_usage || (text && strstr(text, "NOUSAGE")), inlast = text && strstr(text, "USAGEINLAST");
    free(text);
    if (crash) { fprintf(stderr, "fake_openai: CRASH requested, exiting\n"); exit(3); }
    if (fail) { respond(c, 500, "{\"object\":\"error\",\"message\":\"fake failure\",\"type\":\"InternalServerError\",\"param\":null,\"code\":500}"); json_decref(j); return; }
    int total = json_is_integer(json_object_get(j, "max_tokens")) ? (int)json_integer_value(json_object_get(j, "max_tokens")) : def_tokens;
    if (total < 1) total = 1;
    if (total > 100000) total = 100000;
    char buf[2048];
    if (!strcmp(path, "/v1/embeddings")) {
        snprintf(buf, sizeof buf, "{\"object\":\"list\",\"data\":[{\"object\":\"embedding\",\"index\":0,\"embedding\":[0.1,0.2,0.3]}],"
                 "\"model\":\"%s\",\"usage\":{\"prompt_tokens\":%lld,\"total_tokens\":%lld}}", c->model, (long long)prompt, (long long)prompt);
        respond(c, 200, buf);
        json_decref(j);
        return;
    }
    int chat = !strcmp(path, "/v1/chat/completions");
    if (json_is_true(json_object_get(j, "stream"))) {
        int inc = json_is_true(json_object_get(json_object_get(j, "stream_options"), "include_usage"));
        last_include_usage = inc;
        n_streams++;
        out_fmt(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n");
        c->streaming = 1;
        live_streams++;
        c->chat = chat;
        c->sent = 0;
        c->total = total;
        c->prompt = prompt;
        c->usage_mode = nouse || !inc ? 0 : inlast ? 2 : 1;
        c->pace = slow ? 200 : fast ? 0 : token_ms;
        c->next_at = now_ms() + (wait ? 1000 : c->pace);
        json_decref(j);
        return;
    }
    int64_t hold = paced_plain ? (int64_t)total * (slow ? 200 : fast ? 0 : token_ms) + (wait ? 1000 : 0) : 0;
    char content[1024] = "";
    size_t k = 0;
    for (int i = 0; i < total && k < sizeof content - 16; i++) k += (size_t)snprintf(content + k, sizeof content - k, "tok%d ", i);
    char usage[200] = "";
    if (!nouse) snprintf(usage, sizeof usage, ",\"usage\":{\"prompt_tokens\":%lld,\"completion_tokens\":%d,\"total_tokens\":%lld}",
                         (long long)prompt, total, (long long)prompt + total);
    if (chat)
        snprintf(buf, sizeof buf, "{\"id\":\"chatcmpl-fake\",\"object\":\"chat.completion\",\"created\":0,\"model\":\"%s\","
                 "\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"%s\"},\"finish_reason\":\"length\"}]%s}",
                 c->model, content, usage);
    else
        snprintf(buf, sizeof buf, "{\"id\":\"cmpl-fake\",\"object\":\"text_completion\",\"created\":0,\"model\":\"%s\","
                 "\"choices\":[{\"index\":0,\"text\":\"%s\",\"finish_reason\":\"length\"}]%s}", c->model, content, usage);
    json_decref(j);
    if (hold > 0) { /* --paced-plain: answered when its tokens would all be generated */
        c->held = strdup(buf);
        if (!c->held) abort();
        c->next_at = now_ms() + hold;
        live_held++;
        return;
    }
    answer_plain(c, buf);
}

/* Parse and answer every complete request in c->in; -1 when the connection was closed. */
static int process(conn *c)
{
    while (!c->streaming && !c->held && !c->closing) {
        char *end = c->inlen ? memmem(c->in, c->inlen, "\r\n\r\n", 4) : NULL;
        if (!end) return 0;
        size_t hlen = (size_t)(end - c->in) + 4, clen = 0;
        char method[8] = "", path[256] = "";
        sscanf(c->in, "%7s %255s", method, path);
        for (char *p = c->in; p < end; p++)
            if ((p == c->in || p[-1] == '\n') && !strncasecmp(p, "content-length:", 15)) clen = strtoul(p + 15, NULL, 10);
        if (c->inlen < hlen + clen) return 0;
        if (drop_reused && c->nreq++ > 0 && !strcmp(method, "POST")) {
            n_dropped++;
            close_conn(c);
            return -1;
        }
        n_requests++;
        char buf[512];
        int authorized = 1;
        if (api_key && (!strncmp(path, "/v1/", 4) || !strcmp(path, "/metrics"))) {
            char want[300];
            snprintf(want, sizeof want, "\r\nAuthorization: Bearer %s\r\n", api_key);
            authorized = memmem(c->in, hlen, want, strlen(want)) != NULL;
        }
        if (!authorized) {
            respond(c, 401, "{\"error\":{\"message\":\"Unauthorized\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":null}}");
        } else if (!strcmp(method, "GET") && !strcmp(path, "/health")) {
            if (now_ms() < ready_at) respond(c, 503, "{\"status\":\"loading\"}");
            else respond(c, 200, "{\"status\":\"ok\"}");
        } else if (!strcmp(method, "GET") && !strcmp(path, "/v1/models")) {
            snprintf(buf, sizeof buf, "{\"object\":\"list\",\"data\":[{\"id\":\"%s\",\"object\":\"model\",\"created\":0,\"owned_by\":\"fake\"}]}", model_name);
            respond(c, 200, buf);
        } else if (!strcmp(method, "GET") && !strcmp(path, "/metrics")) {
            metrics(c);
        } else if (!strcmp(method, "GET") && !strcmp(path, "/stats")) {
            snprintf(buf, sizeof buf, "{\"requests\":%ld,\"streams\":%ld,\"completed\":%ld,\"cancelled\":%ld,\"lastIncludeUsage\":%ld,"
                     "\"dropped\":%ld,\"liveStreams\":%d,\"held\":%d,\"cancelledPlain\":%ld,\"cut\":%ld,"
                     "\"posts\":%ld}", n_requests, n_streams, n_completed, n_cancelled, last_include_usage, n_dropped,
                     live_streams, live_held, n_cancelled_plain, n_cut, n_posts);
            respond(c, 200, buf);
        } else if (!strcmp(method, "POST")) {
            n_posts++;
            handle_post(c, path, c->in + hlen, clen);
        } else {
            respond(c, 404, "{\"error\":{\"message\":\"no such path\",\"type\":\"invalid_request_error\",\"param\":null,\"code\":null}}");
        }
        memmove(c->in, c->in + hlen + clen, c->inlen - hlen - clen);
        c->inlen -= hlen + clen;
    }
    return 0;
}

static void on_read(conn *c)
{
    for (;;) {
        if (c->inlen + 65536 > c->incap) {
            c->incap = c->incap ? c->incap * 2 : 131072;
            c->in = realloc(c->in, c->incap);
            if (!c->in) abort();
        }
        ssize_t r = recv(c->fd, c->in + c->inlen, c->incap - c->inlen, 0);
        if (r == 0) { close_conn(c); return; }
        if (r < 0) {
            if (errno == EAGAIN) break;
            close_conn(c);
            return;
        }
        c->inlen += (size_t)r;
    }
    if (process(c)) return;
    flush_or_close(c);
}

int main(int argc, char **argv)
{
    int port = 0, model_name_set = 0;
    const char *port_file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        /* vLLM's command line too (`vllm serve MODEL --served-model-name NAME --port P`),
         * so that one Model command runs either: the demo's deploy-model template */
        if (i == 1 && !strcmp(a, "serve") && i + 1 < argc) { if (!model_name_set) model_name = v; i++; }
        else if (!strcmp(a, "--served-model-name")) { model_name = v; model_name_set = 1; i++; }
        else if (!strcmp(a, "--port")) { port = atoi(v); i++; }
        else if (!strcmp(a, "--port-file")) { port_file = v; i++; }
        else if (!strcmp(a, "--model")) { model_name = v; model_name_set = 1; i++; }
        else if (!strcmp(a, "--tokens")) { def_tokens = atoi(v); i++; }
        else if (!strcmp(a, "--token-ms")) { token_ms = atoi(v); i++; }
        else if (!strcmp(a, "--ready-after-ms")) { ready_at = now_ms() + atoi(v); i++; }
        else if (!strcmp(a, "--no-usage")) no_usage = 1;
        else if (!strcmp(a, "--api-key")) { api_key = v; i++; }
        else if (!strcmp(a, "--drop-reused")) drop_reused = 1;
        else if (!strcmp(a, "--paced-plain")) paced_plain = 1;
        else if (!strcmp(a, "--prompt-tokens-per-byte")) { per_byte = atoi(v); i++; }
        else if (!strcmp(a, "--byte-tokenizer")) byte_tok = 1;
        else { fprintf(stderr, "usage: fake_openai [serve MODEL] [--served-model-name NAME] [--port N] [--port-file F] [--model NAME] [--tokens N] [--token-ms MS] "
                       "[--no-usage] [--ready-after-ms MS] [--api-key KEY] [--drop-reused] [--paced-plain] "
                       "[--prompt-tokens-per-byte N] [--byte-tokenizer]\n"); return 2; }
    }
    signal(SIGPIPE, SIG_IGN);
    struct rlimit rl; /* the benchmark holds 1,000 streams */
    if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < MAXC && rl.rlim_max >= MAXC) {
        rl.rlim_cur = MAXC;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    int ls = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
    setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port), .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(ls, (struct sockaddr *)&a, sizeof a) || listen(ls, 4096)) { perror("fake_openai: bind"); return 1; }
    socklen_t al = sizeof a;
    getsockname(ls, (struct sockaddr *)&a, &al);
    if (port_file) {
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp", port_file);
        FILE *f = fopen(tmp, "w");
        if (!f) { perror(port_file); return 1; }
        fprintf(f, "%d\n", ntohs(a.sin_port));
        fclose(f);
        rename(tmp, port_file);
    }
    fprintf(stderr, "fake_openai: listening on 127.0.0.1:%d (model %s)\n", ntohs(a.sin_port), model_name);
    ep = epoll_create1(EPOLL_CLOEXEC);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    struct epoll_event evs[256];
    for (;;) {
        int64_t now = now_ms(), wait = -1;
        for (int i = 0; (live_streams || live_held) && i <= maxfd; i++)
            if (conns[i].used && (conns[i].streaming || conns[i].held)) {
                int64_t d = conns[i].next_at - now;
                if (d < 0) d = 0;
                if (wait < 0 || d < wait) wait = d;
            }
        int n = epoll_wait(ep, evs, 256, (int)wait);
        for (int i = 0; i < n; i++) {
            conn *c = evs[i].data.ptr;
            if (!c) {
                int fd;
                while ((fd = accept4(ls, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    if (fd >= MAXC) { close(fd); continue; }
                    conn *x = &conns[fd];
                    memset(x, 0, sizeof *x);
                    x->fd = fd;
                    x->used = 1;
                    if (fd > maxfd) maxfd = fd;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
                    struct epoll_event e2 = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = x};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &e2);
                }
                continue;
            }
            if (evs[i].events & (EPOLLERR | EPOLLHUP)) { close_conn(c); continue; }
            if (evs[i].events & EPOLLIN) { on_read(c); if (!c->used) continue; }
            else if (evs[i].events & EPOLLRDHUP) { close_conn(c); continue; }
            if (evs[i].events & EPOLLOUT) flush_or_close(c);
        }
        now = now_ms();
        for (int i = 0; (live_streams || live_held) && i <= maxfd; i++) {
            conn *c = &conns[i];
            if (!c->used || !(c->streaming || c->held) || c->next_at > now) continue;
            if (c->held) { /* a paced plain answer is due */
                char *b = c->held;
                c->held = NULL;
                live_held--;
                answer_plain(c, b);
                free(b);
            } else {
                stream_step(c);
            }
            if (flush_out(c) || (c->closing && !c->outlen)) { close_conn(c); continue; }
            if (!c->streaming && !c->held && !process(c)) flush_or_close(c);
        }
    }
}
