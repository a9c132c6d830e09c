/* maas/proxy: forwarding one OpenAI request to a model server, in the daemon's loop:
 * a call's lifecycle. The bytes move in proxy_io.c.
 * Owns: admission (model, tier, what the request asks: prompt, completions, the limit
 * it names), the upstream body (stream_options.include_usage added to streamed
 * requests, the granted completion limit when the body names none or more), retry on
 * another replica while nothing has been received, the outcome of a transfer (errors
 * in OpenAI's envelope), settlement and the usage record, the answer to the client
 * (gx_http_complete), cancellation when the client leaves.
 * Must not: block, or touch SQLite (records go to usage.c's batch); touch curl or
 * sockets (proxy_io.c).
 * Lifetime of a call: referenced by the HTTP request (req->async, released at the
 * request's end) and by its streamed body while one is queued; the transfer is
 * stopped as soon as the HTTP side lets go, so the upstream sees the disconnect. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "maas/proxy_int.h"
#include "lib/alloc.h"
#include "lib/sbuf.h"

typedef gx_maas_call call;

gx_maas_proxy *gx_maas_proxy_new(gx_maas *m)
{
    gx_maas_proxy *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    p->m = m;
    if (gx_maas_proxy_io_init(p)) { free(p); return NULL; }
    return p;
}

int gx_maas_proxy_inflight(const gx_maas_proxy *p) { return p->ncalls; }
uint64_t gx_maas_proxy_pauses(const gx_maas_proxy *p) { return p->pauses; }

/* ---- records and settlement -------------------------------------------------------- */

/* same-size NUL-terminated arrays on both sides: plain copies (no formatting per request) */
#define COPY(dst, src) do { _Static_assert(sizeof(dst) == sizeof(src), #dst); memcpy(dst, src, sizeof dst); } while (0)

/* The part of a usage record that names who asked: the key's id, user and namespace,
 * and the tier, for served and refused requests alike. */
static void record_of(gx_maas_record *r, gx_maas *m, const gx_maas_key *key, const gx_maas_tier *tier)
{
    memset(r, 0, sizeof *r);
    r->ts_ms = gx_maas_now(m);
    COPY(r->key_id, key->id);
    COPY(r->user, key->user);
    COPY(r->ns, key->ns);
    COPY(r->tier, tier->name);
}

static void record(call *c, int status, int64_t prompt, int64_t completion, int estimated)
{
    gx_maas_record r;
    record_of(&r, c->m, c->key, c->tier);
    COPY(r.model, c->model->name);
    COPY(r.endpoint, c->endpoint);
    r.prompt = prompt;
    r.completion = completion;
    r.estimated = estimated;
    r.stream = c->stream;
    r.status = status;
    double now = gx_maas_mono();
    r.latency_s = now - c->t0;
    r.ttft_s = c->t_first > 0 ? c->t_first - c->t0 : -1;
    gx_maas_usage_add(c->m->usage, &r);
}

/* A request its key got in with but that went no further (400, 403, 404, 413, 429,
 * 503 starting or unavailable, 500): it leaves a record too (no tokens), so that usage shows who is
 * refused and why, and a 429 counts in limited_calls. model: the model, or the name
 * the client asked for. */
static void refused(gx_maas *m, const gx_maas_key *key, const gx_maas_tier *tier, const char *model,
                    const char *endpoint, int status, int stream)
{
    gx_maas_record r;
    record_of(&r, m, key, tier);
    gx_strcpy_cut(r.model, sizeof r.model, model ? model : "");   /* maybe the client's, of any length */
    gx_strcpy_cut(r.endpoint, sizeof r.endpoint, endpoint);
    r.stream = stream;
    r.status = status;
    r.ttft_s = -1;
    gx_maas_usage_refused(m->usage, &r);
}
#undef COPY

/* Settle the reservation with what the upstream reported (or an estimate), never more
 * than was reserved: the record says what was charged. */
static void settle(call *c, int status, int refund)
{
    int64_t prompt = 0, completion = 0, content = 0;
    int est = 0;
    /* An upstream error (a 5xx, streamed or not; a plain answer cut short) charges no
     * tokens: the client got nothing it asked for. A stream cut short charges what was
     * streamed: the client has it. */
    if (refund) {
        /* nothing was served */
    } else if (c->stream && c->status == 200) {
        if (c->sse.have_usage) { prompt = c->sse.prompt; completion = c->sse.completion; }
        else { est = 1; prompt = c->prompt_est; completion = c->sse.content_chunks; }
    } else if (!c->stream && status == 200) {   /* a plain answer, delivered whole */
        if (gx_maas_usage_of(c->out.b.p ? c->out.b.p : "", c->out.b.n, &prompt, &completion, &content)) {
            est = 1;
            prompt = c->prompt_est;
            completion = (content + 3) / 4;
        }
    }
    int64_t over = gx_maas_charge_cap(c->reserved, &prompt, &completion);
    if (over) gx_maas_usage_over(c->m->usage, over);
    gx_maas_settle(c->tier, &c->key->bucket, c->ubucket, c->reserved, prompt + completion, refund,
                        gx_maas_now(c->m));
    record(c, status, prompt, completion, est);
}

/* ---- a call's end ------------------------------------------------------------------ */

static void unlink_call(gx_maas_proxy *p, call *c)
{
    if (c->prev) c->prev->next = c->next;
    else p->calls = c->next;
    if (c->next) c->next->prev = c->prev;
    p->ncalls--;
}

static void free_call(call *c)
{
    unlink_call(c->m->proxy, c);
    if (c->own_body) free(c->body);
    gx_sbuf_free(&c->out.b);
    gx_maas_sse_free(&c->sse);
    free(c);
}

/* The HTTP side let go (answer sent, or the client left). */
void gx_maas_proxy_release(void *ud)
{
    call *c = ud;
    if (!c->gone) {
        c->gone = 1;
        c->req = NULL;
        if (c->active) { /* client left mid-answer: cancel the upstream request */
            gx_maas_proxy_io_stop(c);
            gx_maas_sse_feed(&c->sse, "", 0, &c->out.b, 1);
            settle(c, 499, 0);
            c->state = DONE;
        }
    }
    if (--c->refs == 0) free_call(c);
}

static void fail(call *c, int status, const char *type, const char *code, const char *msg)
{
    c->err_status = status;
    snprintf(c->err_type, sizeof c->err_type, "%s", type);
    snprintf(c->err_code, sizeof c->err_code, "%s", code);
    snprintf(c->err_msg, sizeof c->err_msg, "%s", msg);
}

/* An upstream error body in OpenAI's envelope (older vLLM answers {"object":"error",...}). */
static void wrap_error(call *c)
{
    json_t *j = json_loadb(c->out.b.p ? c->out.b.p : "", c->out.b.n, 0, NULL);
    if (json_is_object(json_object_get(j, "error"))) { json_decref(j); return; }
    const char *msg = json_string_value(json_object_get(j, "message"));
    json_t *code = json_object_get(j, "code");
    char cbuf[32] = "";
    if (json_is_integer(code)) snprintf(cbuf, sizeof cbuf, "%lld", (long long)json_integer_value(code));
    char text[300];
    snprintf(text, sizeof text, "%.*s", (int)(c->out.b.n > 200 ? 200 : c->out.b.n), c->out.b.p ? c->out.b.p : "");
    json_t *env = json_pack("{s:{s:s,s:s,s:n,s:s?}}", "error", "message", msg ? msg : text[0] ? text : "upstream error",
                            "type", json_string_value(json_object_get(j, "type")) ?: "upstream_error", "param",
                            "code", json_is_string(code) ? json_string_value(code) : cbuf[0] ? cbuf : NULL);
    json_decref(j);
    char *s = json_dumps(env, JSON_COMPACT);
    json_decref(env);
    gx_sbuf_reset(&c->out.b);
    gx_sbuf_puts(&c->out.b, s);
    free(s);
    snprintf(c->ctype, sizeof c->ctype, "application/json");
}

/* Retry on another replica while nothing came back; else settle what was served. */
void gx_maas_proxy_end(call *c, int ok, int got_bytes, const char *why)
{
    gx_maas_replica *failed = c->rep;
    gx_maas_proxy_io_stop(c);
    if (!ok && !got_bytes && !c->status) {
        /* nothing came back: this replica is not serving; try another one */
        failed->ready = 0;
        failed->next_probe_ms = gx_maas_mono_ms(c->m);
        snprintf(failed->why, sizeof failed->why, "%s", why);
        gx_maas_replica *r = gx_maas_models_pick(c->model, failed);
        if (r && c->attempts < GX_MAAS_MAX_REPLICAS) {
            c->rep = r;
            if (!gx_maas_proxy_io_start(c)) return;
        }
        char msg[256];
        snprintf(msg, sizeof msg, "the model server of %s did not answer (%s); retry shortly", c->model->name, why);
        fail(c, 502, "api_error", "upstream_unavailable", msg);
        settle(c, 502, 1);
    } else if (c->stream && c->status == 200) {
        gx_maas_sse_feed(&c->sse, "", 0, &c->out.b, 1);
        if (!ok) {
            static const char ev[] = "data: {\"error\":{\"message\":\"the model server stopped in the middle of the "
                                     "answer\",\"type\":\"api_error\",\"param\":null,\"code\":\"upstream_error\"}}\n\n";
            gx_sbuf_put(&c->out.b, ev, sizeof ev - 1);
        }
        settle(c, ok ? 200 : 502, 0);
    } else {
        if (!ok) {
            fail(c, 502, "api_error", "upstream_error", "the model server's answer was cut or too large");
            settle(c, 502, 0);
        } else {
            if (c->status >= 400) wrap_error(c);
            settle(c, (int)c->status, 0);
        }
    }
    int was = c->state;
    c->state = DONE;
    if (was == WAITING) gx_maas_proxy_complete(c);
    else gx_maas_proxy_io_wake(c);
}

/* The client is waiting (the request was deferred): its answer now, in one
 * gx_http_complete. A stream's body holds a reference of its own, let go by the
 * stream's free (gx_maas_proxy_release). */
void gx_maas_proxy_complete(call *c)
{
    if (!c->req) return;
    gx_resp r;
    memset(&r, 0, sizeof r);
    gx_maas_limit_headers(&r, &c->v);
    if (c->err_status) {
        gx_maas_oai_error(&r, c->err_status, c->err_type, c->err_code, "%s", c->err_msg);
    } else if (c->stream && c->status == 200) {
        r.status = 200;
        r.ctype = "text/event-stream";
        r.stream = gx_maas_proxy_io_stream(c);
        c->refs++;
    } else {
        r.status = (int)c->status;
        r.ctype = c->ctype;
        r.text_len = c->out.b.n;
        r.text = gx_sbuf_take(&c->out.b);   /* the answer's bytes, not a copy */
        c->out.off = 0;
    }
    if (gx_http_complete(c->req, &r) && r.stream.read) c->refs--;   /* not taken */
}

/* ---- admission ------------------------------------------------------------------------ */

/* The body sent upstream: the client's bytes, except that a stream must report usage
 * (stream_options.include_usage), which the meter needs and the client may not have
 * asked for, and that a completion must be told the limit it was granted when the body
 * names none or a larger one (else the upstream may generate past the reservation: vLLM
 * without max_tokens runs to the context length). body.c changes as little as it can;
 * a body that already says both is sent as it came. */
static int upstream_body(call *c, gx_req *req, const gx_maas_body *bi, json_t **b)
{
    c->body = req->body;
    c->body_len = req->body_len;
    if (c->stream && bi->stream_opts != 1) c->sse.strip_usage = 1;
    int fields = !strcmp(c->endpoint, "chat/completions") ? GX_MAAS_FIELD_MT | GX_MAAS_FIELD_MCT : GX_MAAS_FIELD_MT;
    char *out;
    size_t n;
    if (gx_maas_body_upstream(req->body, req->body_len, bi, b, c->stream, fields, c->v.grant, &out, &n)) return -1;
    if (out) {
        c->body = out;
        c->body_len = n;
        c->own_body = 1;
    }
    return 0;
}

/* What a request asks of the budgets. The prompt is its bound (gx_maas_prompt_bound).
 * The completion limit it names is max_tokens (or max_completion_tokens, which wins, on
 * chat: /v1/completions has only max_tokens and defaults to 16 when it is absent);
 * completions are n per prompt of a batch. Returns
 * -1 with the 400 answered when a limit or n is out of range (the upstream would
 * refuse it, or worse: some servers take -1 as "no limit"), or when a stream's
 * stream_options is not an object (the body could not carry include_usage). */
static int ask_of(const gx_maas_body *b, const char *endpoint, int64_t prompt, gx_maas_ask *a, gx_resp *resp)
{
    memset(a, 0, sizeof *a);
    a->prompt = prompt;
    if (!strcmp(endpoint, "embeddings")) return 0;
    if (b->stream && b->stream_opts_bad) {   /* the gateway sets include_usage inside it */
        gx_maas_oai_error_param(resp, 400, "stream_options", "invalid_type",
                                "stream_options must be an object (such as {\"include_usage\": true}) or null");
        return -1;
    }
    int chat = !strcmp(endpoint, "chat/completions");
    if (b->mt_kind == GX_MAAS_F_INT && b->mt < 1) {
        gx_maas_oai_error_param(resp, 400, "max_tokens", "integer_below_min_value",
                                "max_tokens must be at least 1 (got %lld)", (long long)b->mt);
        return -1;
    }
    if (chat && b->mct_kind == GX_MAAS_F_INT && b->mct < 1) {
        gx_maas_oai_error_param(resp, 400, "max_completion_tokens", "integer_below_min_value",
                                "max_completion_tokens must be at least 1 (got %lld)", (long long)b->mct);
        return -1;
    }
    if (b->n_kind == GX_MAAS_F_OTHER || (b->n_kind == GX_MAAS_F_INT && (b->n < 1 || b->n > 128))) {
        gx_maas_oai_error_param(resp, 400, "n", "invalid_value", "n must be an integer between 1 and 128");
        return -1;
    }
    if (chat) a->want = b->has_max ? b->max_tokens : 0;
    else a->want = b->mt_kind == GX_MAAS_F_INT ? b->mt : 0;
    if (!chat && !a->want) a->dflt = 16;   /* OpenAI's default for /v1/completions */
    a->choices = (b->has_n ? b->n : 1) * (chat || b->prompts < 1 ? 1 : b->prompts);
    return 0;
}

void gx_maas_proxy_call(gx_maas *m, gx_req *req, gx_resp *resp, gx_maas_key *key, gx_maas_tier *tier,
                        const char *endpoint)
{
    gx_maas_body bi;
    json_t *b = NULL;
    if (gx_maas_body_scan(req->body, req->body_len, &bi)) { /* not sure: jansson reads it, or words the error */
        json_error_t je;
        b = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &je);
        if (!json_is_object(b)) {
            gx_maas_oai_error(resp, 400, "invalid_request_error", NULL, "the body must be a JSON object (%s)",
                              b ? "it is not an object" : je.text);
            json_decref(b);
            refused(m, key, tier, NULL, endpoint, 400, 0);
            return;
        }
        gx_maas_body_of_json(b, &bi);
    }
    const char *name = bi.has_model ? bi.model : NULL;
    gx_maas_model *md = name && !bi.model_long ? gx_maas_models_find(m, name) : NULL;
    if (!name) {
        gx_maas_oai_error_param(resp, 400, "model", NULL, "you must provide a model parameter");
        goto out;
    }
    if (!md || !gx_maas_model_allows(md, tier->name)) {
        if (md) gx_maas_oai_error(resp, 403, "permission_error", "model_not_allowed",
                                  "The model `%.128s` is not available to tier %s", name, tier->name);
        else gx_maas_oai_error(resp, 404, "invalid_request_error", "model_not_found",
                               "The model `%.128s` does not exist or you do not have access to it.", name);
        goto out;
    }
    if (req->body_len > md->max_body) {
        gx_maas_oai_error(resp, 413, "invalid_request_error", "request_too_large",
                          "the request body is larger than %zu bytes, the limit of model %s", md->max_body, md->name);
        goto out;
    }
    gx_maas_ask ask;
    if (ask_of(&bi, endpoint, gx_maas_prompt_bound(&bi), &ask, resp)) goto out;
    int64_t now = gx_maas_now(m);
    md->last_request_ms = gx_maas_mono_ms(m);   /* scale-to-zero idles on the monotonic clock */
    gx_maas_replica *rep = gx_maas_models_pick(md, NULL);
    if (!rep) {
        int cold = md->workload && !md->wanted;
        md->wanted = 1;
        gx_maas_unavailable(resp, md, name, cold);   /* starting, failed, or its upstream down */
        goto out;
    }
    call *c = gx_xcalloc(1, sizeof *c);
    c->m = m;
    c->key = key;
    c->tier = tier;
    c->model = md;
    c->rep = rep;
    c->t0 = gx_maas_mono();
    gx_strcpy_cut(c->endpoint, sizeof c->endpoint, endpoint);
    c->stream = bi.stream && strcmp(endpoint, "embeddings");
    c->prompt_est = gx_maas_prompt_estimate(&bi);
    c->ubucket = gx_maas_tier_user(tier, key->user);
    if (gx_maas_admit_ask(tier, &key->bucket, c->ubucket, &ask, now, &c->v)) {
        gx_maas_oai_error(resp, 429, c->v.result == GX_MAAS_LIM_TOKENS || c->v.result == GX_MAAS_LIM_TOO_BIG
                          ? "tokens" : "requests", "rate_limit_exceeded", "%s", c->v.msg);
        gx_maas_limit_headers(resp, &c->v);
        if (c->v.never) gx_resp_header(resp, "x-should-retry", "false");   /* the openai clients obey it */
        free(c);
        goto out;
    }
    c->reserved = c->v.cost;
    md->requests++;
    c->refs = 1;
    c->next = m->proxy->calls;
    if (c->next) c->next->prev = c;
    m->proxy->calls = c;
    m->proxy->ncalls++;
    if (upstream_body(c, req, &bi, &b) || gx_maas_proxy_io_start(c)) {
        gx_maas_settle(tier, &key->bucket, c->ubucket, c->reserved, 0, 1, now);
        gx_maas_oai_error(resp, 500, "api_error", NULL, "cannot forward the request");
        free_call(c);
        goto out;
    }
    c->req = req;
    req->async = c;
    req->async_free = gx_maas_proxy_release;
    resp->defer = 1;
out:
    if (resp->status >= 400) refused(m, key, tier, md ? md->name : name, endpoint, resp->status, bi.stream);
    json_decref(b);
}

/* Daemon stop: end every transfer and let waiting requests answer. */
static void shutdown_calls(gx_maas_proxy *p)
{
    for (call *c = p->calls; c; c = c->next) {
        if (!c->active) continue;
        gx_maas_proxy_io_stop(c);
        if (c->state == WAITING) {
            fail(c, 503, "service_unavailable", "shutting_down", "the gateway is stopping");
            settle(c, 503, 1);
            c->state = DONE;
            gx_maas_proxy_complete(c);
        } else {
            settle(c, 503, 0);
            c->state = DONE;
        }
    }
}

void gx_maas_proxy_shutdown(gx_maas_proxy *p) { shutdown_calls(p); }

void gx_maas_proxy_free(gx_maas_proxy *p)
{
    if (!p) return;
    while (p->calls) { /* only when the HTTP server did not release them */
        call *c = p->calls;
        gx_maas_proxy_io_stop(c);
        free_call(c);
    }
    gx_maas_proxy_io_close(p);
    free(p);
}
