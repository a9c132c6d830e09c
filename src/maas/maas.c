/* maas: the gateway's front: life cycle, dispatch, and the REST side.
 * Owns: /v1/models and /v1/models/{id}, dispatch of /v1/{chat/completions,completions,embeddings} to
 * proxy.c after authentication, /api/v1/keys (a user's own keys), /api/v1/models and
 * /api/v1/tiers (a user sees what their tiers open to them), /api/v1/usage, Model/Tier
 * apply and delete, OpenAI's error envelope and the x-ratelimit-* headers, the tick
 * (curl timers, models, usage flush).
 * Must not: let /v1/models count against any limit; put SQLite on the /v1 path. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <curl/curl.h>
#include "lib/gxtime.h"
#include "lib/alloc.h"
#include "maas/maas_int.h"
#include "lib/sbuf.h"

#define MAX_KEY_NAME 63

int64_t gx_maas_now(const gx_maas *m) { return gx_loop_now(m->loop); }
int64_t gx_maas_mono_ms(const gx_maas *m) { return gx_loop_mono(m->loop); }

double gx_maas_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

gx_maas *gx_maas_new(const gx_maas_env *env, gx_err *err)
{
    gx_maas *m = gx_xcalloc(1, sizeof *m);
    m->env = *env;
    m->loop = env->loop;
    m->store = env->store;
    m->ops = env->ops;
    m->heartbeat_ms = env->heartbeat_ms > 0 ? env->heartbeat_ms : 15000;
    if (m->env.scrape_ms <= 0) m->env.scrape_ms = 15000;
    m->body_limit = 16u << 20;
    gx_strmap_init(&m->tiers);
    gx_strmap_init(&m->models);
    gx_strmap_init(&m->served);
    if (!(m->keys = gx_maas_keys_open(env->store, env->data_dir, env->key_caps, err))) goto fail;
    if (!(m->proxy = gx_maas_proxy_new(m))) { gx_errf(err, 500, "", "cannot start the gateway's HTTP client"); goto fail; }
    m->usage = gx_maas_usage_new(env->store);
    gx_maas_windows_load(m, gx_maas_now(m)); /* budgets used before a restart */
    return m;
fail:
    gx_maas_free(m);
    return NULL;
}

void gx_maas_attach_http(gx_maas *m, gx_http *h)
{
    m->http = h;
    gx_http_set_prefix_limit(h, "/v1/", m->body_limit);
}

void gx_maas_shutdown(gx_maas *m)
{
    if (m && m->proxy) gx_maas_proxy_shutdown(m->proxy);
}

void gx_maas_free(gx_maas *m)
{
    if (!m) return;
    if (m->usage) gx_maas_usage_flush(m->usage, 0, 1);
    if (m->usage) gx_maas_windows_flush(m, gx_maas_now(m), 1);
    if (m->proxy) gx_maas_models_free(m);
    gx_maas_proxy_free(m->proxy);
    gx_maas_usage_free(m->usage);
    gx_maas_keys_free(m->keys);
    for (size_t i = 0; i < m->tiers.cap; i++) {
        char *k = m->tiers.keys[i];
        if (!k || k == (char *)1) continue;
        gx_maas_tier *t = m->tiers.vals[i];
        json_decref(t->users);
        json_decref(t->namespaces);
        gx_maas_tier_free_users(t);
        free(t);
    }
    gx_strmap_free(&m->tiers);
    gx_strmap_free(&m->models);
    gx_strmap_free(&m->served);
    free(m);
}

int64_t gx_maas_tick(gx_maas *m)
{
    int64_t now = gx_maas_now(m), mono = gx_maas_mono_ms(m);   /* stamps; schedules */
    int64_t a = gx_maas_proxy_tick(m->proxy);
    int64_t b = 250;
    if (mono >= m->next_models_ms) {
        gx_maas_models_tick(m, mono);
        m->next_models_ms = mono + 200;
        a = gx_maas_proxy_tick(m->proxy); /* probes just added */
    }
    b = m->next_models_ms - mono;
    gx_maas_usage_flush(m->usage, mono, 0);
    gx_maas_windows_flush(m, now, 0);
    if (a >= 0 && a < b) b = a;
    return b < 0 ? 0 : b;
}

char *gx_maas_metrics(gx_maas *m, char *text)
{
    text = gx_maas_usage_metrics(m->usage, text);
    size_t n = strlen(text);
    char extra[512];
    snprintf(extra, sizeof extra, "# HELP gpuaas_gateway_requests_in_flight Gateway requests being served\n"
             "# TYPE gpuaas_gateway_requests_in_flight gauge\ngpuaas_gateway_requests_in_flight %d\n"
             "# HELP gpuaas_gateway_upstream_pauses_total Times an upstream was paused for a slow client\n"
             "# TYPE gpuaas_gateway_upstream_pauses_total counter\ngpuaas_gateway_upstream_pauses_total %llu\n",
             gx_maas_proxy_inflight(m->proxy), (unsigned long long)gx_maas_proxy_pauses(m->proxy));
    char *t = gx_xrealloc(text, n + strlen(extra) + 1);
    memcpy(t + n, extra, strlen(extra) + 1);
    return gx_maas_models_metrics(m, t, gx_maas_mono_ms(m)); /* the model servers' vllm:* families last */
}

void gx_maas_user_deleted(gx_maas *m, const char *user)
{
    if (m) gx_maas_keys_revoke_user(m->keys, user, gx_maas_now(m));
}

/* ---- errors and headers ---------------------------------------------------------------- */

static void oai_error(gx_resp *resp, int status, const char *type, const char *param, const char *code,
                      const char *fmt, va_list ap)
{
    char msg[600];
    vsnprintf(msg, sizeof msg, fmt, ap);
    gx_resp_json(resp, status, json_pack("{s:{s:s,s:s,s:s?,s:s?}}", "error", "message", msg, "type", type,
                                         "param", param, "code", code));
}

void gx_maas_oai_error(gx_resp *resp, int status, const char *type, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    oai_error(resp, status, type, NULL, code, fmt, ap);
    va_end(ap);
}

void gx_maas_oai_error_param(gx_resp *resp, int status, const char *param, const char *code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    oai_error(resp, status, "invalid_request_error", param, code, fmt, ap);
    va_end(ap);
}

/* A header whose value is an integer, formatted in place (every answer carries four to
 * six of these: snprintf twice over each showed in the profile). */
static void int_header(gx_resp *resp, const char *name, int64_t v)
{
    if (resp->nh >= 16) return;
    char tmp[24];
    char *q = gx_fmt_u64(tmp, sizeof tmp, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v);
    if (v < 0) *--q = '-';
    resp->hname[resp->nh] = name;
    memcpy(resp->hval[resp->nh], q, (size_t)(tmp + sizeof tmp - q));   /* with the NUL */
    resp->nh++;
}

void gx_maas_limit_headers(gx_resp *resp, const gx_maas_verdict *v)
{
    char b[64];
    if (v->lim_req >= 0) {
        int_header(resp, "x-ratelimit-limit-requests", v->lim_req);
        int_header(resp, "x-ratelimit-remaining-requests", v->rem_req);
        gx_maas_fmt_reset(v->reset_req_ms, b, sizeof b);
        gx_resp_header(resp, "x-ratelimit-reset-requests", b);
    }
    if (v->lim_tok >= 0) {
        int_header(resp, "x-ratelimit-limit-tokens", v->lim_tok);
        int_header(resp, "x-ratelimit-remaining-tokens", v->rem_tok);
        gx_maas_fmt_reset(v->reset_tok_ms, b, sizeof b);
        gx_resp_header(resp, "x-ratelimit-reset-tokens", b);
    }
    if (v->result != GX_MAAS_OK) {
        int_header(resp, "retry-after", (v->retry_ms + 999) / 1000);
        int_header(resp, "retry-after-ms", v->retry_ms);
    }
}

/* ---- objects ---------------------------------------------------------------------------- */


gx_maas_tier *gx_maas_tier_get(gx_maas *m, const char *name)
{
    gx_maas_tier *t = gx_strmap_get(&m->tiers, name);
    return t && t->present ? t : NULL;
}

gx_maas_tier *gx_maas_tier_ensure(gx_maas *m, const char *name)
{
    gx_maas_tier *t = gx_strmap_get(&m->tiers, name);
    if (!t) {
        t = gx_xcalloc(1, sizeof *t);
        snprintf(t->name, sizeof t->name, "%s", name);
        gx_strmap_put(&m->tiers, name, t);
    }
    return t;
}

static int tier_in(json_t *const *docs, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++) {
        const char *k = json_string_value(json_object_get(docs[i], "kind"));
        const char *nm = json_string_value(json_object_get(json_object_get(docs[i], "metadata"), "name"));
        if (k && nm && !strcmp(k, "Tier") && !strcmp(nm, name)) return 1;
    }
    return 0;
}

int gx_maas_validate(gx_maas *m, const json_t *doc, json_t *const *others, size_t nothers, gx_err *err)
{
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (!strcmp(kind, "Tier")) {
        const char *name = json_string_value(json_object_get(json_object_get(doc, "metadata"), "name"));
        /* a label, not any subdomain: keys and usage records hold a tier's name in 64 bytes */
        if (gx_k8s_check_label(name, GX_K8S_LABEL_MAX, "metadata.name", err)) return -1;
        return gx_maas_tier_parse(doc, NULL, err);
    }
    if (gx_maas_model_validate(doc, err)) return -1;
    /* a tier named by a model must exist (now, or in the same apply): a typo here would
     * silently lock everyone out */
    size_t i;
    json_t *t;
    json_array_foreach(json_object_get(json_object_get(doc, "spec"), "tiers"), i, t) {
        const char *tn = json_string_value(t);
        if (!gx_maas_tier_get(m, tn) && !tier_in(others, nothers, tn)) {
            char f[64];
            snprintf(f, sizeof f, "spec.tiers[%zu]", i);
            return gx_errf(err, 422, f, "unknown Tier %s (apply it first, or in the same file)", tn);
        }
    }
    /* a served name belongs to one model */
    json_array_foreach(json_object_get(json_object_get(doc, "spec"), "servedNames"), i, t) {
        gx_maas_model *o = gx_maas_models_find(m, json_string_value(t));
        const char *name = json_string_value(json_object_get(json_object_get(doc, "metadata"), "name"));
        if (o && strcmp(o->name, name)) {
            char f[64];
            snprintf(f, sizeof f, "spec.servedNames[%zu]", i);
            return gx_errf(err, 409, f, "%s is already served by Model %s", json_string_value(t), o->name);
        }
    }
    return 0;
}

void gx_maas_apply(gx_maas *m, const json_t *doc)
{
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    const char *name = json_string_value(json_object_get(json_object_get(doc, "metadata"), "name"));
    if (!strcmp(kind, "Model")) { gx_maas_models_apply(m, doc); return; }
    gx_maas_tier *t = gx_maas_tier_ensure(m, name);
    gx_err e;
    if (gx_maas_tier_parse(doc, t, &e)) fprintf(stderr, "gpuaas: gateway: Tier %s: %s\n", name, e.msg);
    t->present = 1;
}

int gx_maas_delete(gx_maas *m, const char *kind, const char *name, gx_err *err)
{
    if (!strcmp(kind, "Model")) return gx_maas_models_delete(m, name, err);
    gx_maas_tier *t = gx_maas_tier_get(m, name);
    if (!t) return gx_errf(err, 404, "", "no Tier %s", name);
    t->present = 0; /* its keys are refused from the next request on */
    return 0;
}

/* The daemon's kinds table (ops/kinds.h) calls these. */
static int kind_validate(void *ud, const json_t *doc, json_t *const *others, size_t n, gx_err *err)
{
    return gx_maas_validate(ud, doc, others, n, err);
}

static int kind_apply(void *ud, const json_t *doc, gx_err *err)
{
    (void)err;
    gx_maas_apply(ud, doc);
    return 0;
}

static int kind_remove(void *ud, const char *kind, const char *ns, const char *name, gx_err *err)
{
    (void)ns;
    return gx_maas_delete(ud, kind, name, err);
}

size_t gx_maas_kinds(gx_maas *m, gx_kind out[2])
{
    static const char *const names[] = {"Tier", "Model"};   /* a Model names Tiers: Tiers first */
    for (size_t i = 0; i < 2; i++)
        out[i] = (gx_kind){.kind = names[i], .api_version = "gpuaas.dev/v1alpha1", .validate = kind_validate,
                           .apply = kind_apply, .remove = kind_remove, .ud = m};
    return 2;
}

static void hook_user_deleted(void *ud, const char *user) { gx_maas_user_deleted(ud, user); }
static char *hook_metrics(void *ud, char *text) { return gx_maas_metrics(ud, text); }

gx_hooks gx_maas_hooks(gx_maas *m)
{
    return (gx_hooks){.user_deleted = hook_user_deleted, .metrics = hook_metrics, .ud = m};
}

/* ---- /v1 ------------------------------------------------------------------------------- */

/* OpenAI's Model object: what models.list lists and models.retrieve answers. */
static json_t *model_object(json_t *id)
{
    return json_pack("{s:O,s:s,s:i,s:s}", "id", id, "object", "model", "created", 0, "owned_by", "gpuaas");
}

/* GET /v1/models/{id} (the clients' models.retrieve): id is a served name, whole (it
 * may hold '/', as Hugging Face names do; the path arrives percent-decoded). A model
 * the key's tier does not open is answered as one that does not exist: a key learns
 * nothing about what it cannot call. */
static void retrieve_model(gx_maas *m, gx_maas_tier *t, const char *id, gx_resp *resp)
{
    gx_maas_model *md = *id ? gx_maas_models_find(m, id) : NULL;
    if (!md || !gx_maas_model_allows(md, t->name)) {
        gx_maas_oai_error_param(resp, 404, "model", "model_not_found",
                                "The model `%.128s` does not exist or you do not have access to it.", id);
        return;
    }
    json_t *s = json_string(id);
    gx_resp_json(resp, 200, model_object(s));
    json_decref(s);
}

static void list_models(gx_maas *m, gx_maas_tier *t, gx_resp *resp)
{
    json_t *data = json_array();
    for (size_t i = 0; i < m->models.cap; i++) {
        char *k = m->models.keys[i];
        if (!k || k == (char *)1) continue;
        gx_maas_model *md = m->models.vals[i];
        if (!md->present || !gx_maas_model_allows(md, t->name)) continue;
        size_t j;
        json_t *x;
        json_array_foreach(md->served, j, x) json_array_append_new(data, model_object(x));
    }
    gx_resp_json(resp, 200, json_pack("{s:s,s:o}", "object", "list", "data", data));
}

void gx_maas_v1(gx_maas *m, gx_req *req, gx_resp *resp)
{
    const char *p = req->path + 4; /* after "/v1/" */
    const char *endpoint = !strcmp(p, "chat/completions") ? "chat/completions" : !strcmp(p, "completions") ? "completions"
                         : !strcmp(p, "embeddings") ? "embeddings" : !strcmp(p, "models") ? "models"
                         : !strncmp(p, "models/", 7) ? "models/" : NULL;
    if (!endpoint) {
        gx_maas_oai_error(resp, 404, "invalid_request_error", "unknown_url", "Unknown request URL: %s %.200s",
                          req->method, req->path);
        return;
    }
    int get = !strncmp(endpoint, "models", 6);
    if (strcmp(req->method, get ? "GET" : "POST")) {
        gx_maas_oai_error(resp, 405, "invalid_request_error", "method_not_allowed", "use %s on %.200s",
                          get ? "GET" : "POST", req->path);
        gx_resp_header(resp, "Allow", get ? "GET" : "POST");
        return;
    }
    const char *why;
    gx_maas_key *key = gx_maas_keys_check(m->keys, gx_req_header(req, "Authorization"), gx_maas_now(m), &why);
    if (!key) {
        gx_maas_oai_error(resp, 401, "invalid_request_error", "invalid_api_key", "%s", why);
        gx_resp_header(resp, "WWW-Authenticate", "Bearer");
        return;
    }
    gx_maas_tier *t = gx_maas_tier_get(m, key->tier);
    if (!t) {
        gx_maas_oai_error(resp, 403, "permission_error", "tier_not_found",
                          "this key's tier %s no longer exists; create a new key", key->tier);
        return;
    }
    if (req->body_too_large) {
        gx_maas_oai_error(resp, 413, "invalid_request_error", "request_too_large",
                          "the request body is larger than %zu bytes, the gateway's limit", m->body_limit);
        return;
    }
    if (!strcmp(endpoint, "models/")) retrieve_model(m, t, p + 7, resp);
    else if (get) list_models(m, t, resp);
    else gx_maas_proxy_call(m, req, resp, key, t, endpoint);
}

/* ---- /api/v1/keys, models, tiers, usage ------------------------------------------------------ */

static int allowed_tier(const gx_maas_tier *t, const gx_user *u, const char *ns)
{
    if (u->admin) return 1;
    size_t i;
    json_t *x;
    int ok_u = !t->users, ok_n = !t->namespaces;
    json_array_foreach(t->users, i, x) if (!strcmp(json_string_value(x), u->name)) ok_u = 1;
    json_array_foreach(t->namespaces, i, x) if (!strcmp(json_string_value(x), ns)) ok_n = 1;
    return ok_u && ok_n;
}

static void create_key(gx_maas *m, const gx_user *u, gx_req *req, gx_resp *resp)
{
    json_error_t je;
    json_t *b = json_loadb(req->body, req->body_len, JSON_REJECT_DUPLICATES, &je);
    const char *name = json_string_value(json_object_get(b, "name"));
    const char *tier = json_string_value(json_object_get(b, "tier"));
    const char *exp = json_string_value(json_object_get(b, "expires"));
    const char *ns = json_string_value(json_object_get(b, "namespace"));
    if (!json_is_object(b) || !name || !tier) {
        gx_resp_errorf(resp, 400, "body must be {\"name\",\"tier\",\"expires\"?:\"30d\",\"namespace\"?}");
        goto out;
    }
    if (!*name || strlen(name) > MAX_KEY_NAME || strpbrk(name, "\r\n\t")) {
        gx_resp_errorf(resp, 422, "name must be 1 to %d characters on one line", MAX_KEY_NAME);
        goto out;
    }
    if (!ns) ns = u->admin || !json_array_size(u->namespaces) ? "default" : json_string_value(json_array_get(u->namespaces, 0));
    if (!gx_user_in_ns(u, ns)) { gx_resp_errorf(resp, 403, "user %s has no access to namespace %s", u->name, ns); goto out; }
    gx_maas_tier *t = gx_maas_tier_get(m, tier);
    if (!t) { gx_resp_errorf(resp, 422, "unknown tier %.64s", tier); goto out; }
    if (!allowed_tier(t, u, ns)) { gx_resp_errorf(resp, 403, "tier %s is not open to user %s in namespace %s", tier, u->name, ns); goto out; }
    int64_t life = exp ? gx_duration_parse(exp) : t->max_key_life_ms;
    if (life <= 0) { gx_resp_errorf(resp, 422, "expires must be a duration such as 30d, 12h, 90m"); goto out; }
    if (life > t->max_key_life_ms) {
        gx_resp_errorf(resp, 422, "expires %s is longer than tier %s allows (%lld days at most)", exp, tier,
                       (long long)(t->max_key_life_ms / 86400000));
        goto out;
    }
    char full[128];
    gx_err e;
    gx_err_clear(&e);
    int64_t now = gx_maas_now(m);
    gx_maas_key *k = gx_maas_keys_create(m->keys, name, u->name, ns, tier, now, now + life, full, sizeof full, &e);
    if (!k) { gx_resp_error(resp, &e); goto out; }
    json_t *v = gx_maas_key_view(k, now);
    json_object_set_new(v, "key", json_string(full));
    gx_resp_json(resp, 201, v);
out:
    json_decref(b);
}

static void keys_api(gx_maas *m, const gx_user *u, gx_req *req, gx_resp *resp, char **seg, int nseg)
{
    int64_t now = gx_maas_now(m);
    if (nseg == 3 && !strcmp(req->method, "GET")) {
        const char *all = gx_req_query(req, "all");
        const char *who = u->admin && all && !strcmp(all, "1") ? NULL : u->name;
        gx_resp_json(resp, 200, json_pack("{s:o}", "items", gx_maas_keys_list(m->keys, who, now)));
    } else if (nseg == 3 && !strcmp(req->method, "POST")) {
        create_key(m, u, req, resp);
    } else if (nseg == 4 && (!strcmp(req->method, "DELETE") || !strcmp(req->method, "GET"))) {
        gx_maas_key *k = gx_maas_keys_get(m->keys, seg[3]);
        if (!k || (!u->admin && strcmp(k->user, u->name))) { gx_resp_errorf(resp, 404, "no key %.40s", seg[3]); return; }
        if (!strcmp(req->method, "GET")) { gx_resp_json(resp, 200, gx_maas_key_view(k, now)); return; }
        gx_err e;
        gx_err_clear(&e);
        if (gx_maas_keys_revoke(m->keys, k, now, &e)) gx_resp_error(resp, &e);
        else gx_resp_json(resp, 200, json_pack("{s:o}", "revoked", gx_maas_key_view(k, now)));
    } else {
        gx_resp_errorf(resp, 405, "%s is not allowed on %s", req->method, req->path);
        gx_resp_header(resp, "Allow", nseg == 3 ? "GET, POST" : "GET, DELETE");
    }
}

/* Does the tier let user u create a key in any namespace of theirs? (A user with no
 * namespace gets keys in "default", as create_key decides.) */
static int tier_open_to(const gx_maas_tier *t, const gx_user *u)
{
    if (u->admin || !json_array_size(u->namespaces)) return allowed_tier(t, u, "default");
    size_t i;
    json_t *x;
    json_array_foreach(u->namespaces, i, x) if (allowed_tier(t, u, json_string_value(x))) return 1;
    return 0;
}

/* May user u use the model: is one of its tiers open to them? An admin sees every model;
 * a user is shown only what a key of theirs could call (issue 16), as with tiers. */
static int model_open_to(gx_maas *m, const gx_maas_model *md, const gx_user *u)
{
    if (u->admin) return 1;
    size_t i;
    json_t *x;
    json_array_foreach(md->tiers, i, x) {
        const gx_maas_tier *t = gx_maas_tier_get(m, json_string_value(x));
        if (t && tier_open_to(t, u)) return 1;
    }
    return 0;
}

static json_t *limits_view(const gx_maas_limits *l)
{
    json_t *req = json_array(), *tok = json_array();
    for (int i = 0; i < l->nreq; i++)
        json_array_append_new(req, json_pack("{s:I,s:I}", "limit", (json_int_t)l->req[i].limit,
                                             "windowSeconds", (json_int_t)(l->req[i].len_ms / 1000)));
    for (int i = 0; i < l->ntok; i++)
        json_array_append_new(tok, json_pack("{s:I,s:I}", "limit", (json_int_t)l->tok[i].limit,
                                             "windowSeconds", (json_int_t)(l->tok[i].len_ms / 1000)));
    return json_pack("{s:o,s:o,s:i}", "requests", req, "tokens", tok, "maxConcurrentRequests", l->max_concurrent);
}

static json_t *tier_view(const gx_maas_tier *t)
{
    return json_pack("{s:s,s:o,s:o,s:o,s:I,s:I,s:i}", "name", t->name, "limits", limits_view(&t->per_key),
                     "userLimits", limits_view(&t->per_user), "sharedLimits", limits_view(&t->shared),
                     "maxKeyLifetimeSeconds", (json_int_t)(t->max_key_life_ms / 1000),
                     "maxTokensPerRequest", (json_int_t)t->max_tokens, "inFlight", t->bucket.inflight);
}

static void objects_api(gx_maas *m, const gx_user *u, gx_req *req, gx_resp *resp, char **seg, int nseg, int models)
{
    const char *kind = models ? "Model" : "Tier";
    if (nseg == 4 && !strcmp(req->method, "DELETE")) {
        if (!u->admin) { gx_resp_errorf(resp, 403, "only an admin may do this (you are %s)", u->name); return; }
        gx_err e;
        gx_err_clear(&e);
        if (gx_d_delete_object(m->ops, kind, NULL, seg[3], &e)) gx_resp_error(resp, &e);
        else gx_resp_json(resp, 200, json_pack("{s:{s:s,s:s}}", "deleted", "kind", kind, "name", seg[3]));
        return;
    }
    if (strcmp(req->method, "GET") || nseg > 4) {
        gx_resp_errorf(resp, 405, "%s is not allowed on %s", req->method, req->path);
        if (nseg <= 4) gx_resp_header(resp, "Allow", nseg == 4 ? "GET, DELETE" : "GET");
        return;
    }
    json_t *items = json_array();
    gx_strmap *map = models ? &m->models : &m->tiers;
    for (size_t i = 0; i < map->cap; i++) {
        char *k = map->keys[i];
        if (!k || k == (char *)1) continue;
        if (nseg == 4 && strcmp(k, seg[3])) continue;
        if (models) {
            gx_maas_model *md = map->vals[i];
            if (md->present && model_open_to(m, md, u)) json_array_append_new(items, gx_maas_model_view(md));
        } else {
            gx_maas_tier *t = map->vals[i];   /* a user sees the tiers they may use */
            if (t->present && tier_open_to(t, u)) json_array_append_new(items, tier_view(t));
        }
    }
    if (nseg == 3) { gx_resp_json(resp, 200, json_pack("{s:o}", "items", items)); return; }
    if (!json_array_size(items)) gx_resp_errorf(resp, 404, "no %s %.64s", kind, seg[3]);
    else gx_resp_json(resp, 200, json_incref(json_array_get(items, 0)));
    json_decref(items);
}

static void usage_api(gx_maas *m, const gx_user *u, gx_req *req, gx_resp *resp)
{
    const char *g = gx_req_query(req, "group_by");
    const char *since = gx_req_query(req, "since");
    const char *who = gx_req_query(req, "user");
    int64_t now = gx_maas_now(m), from = now - 86400000;
    if (since) {
        int64_t d = gx_duration_parse(since);
        if (d > 0) from = now - d;
        else if (strspn(since, "0123456789") == strlen(since) && *since) from = strtoll(since, NULL, 10);
        else { gx_resp_errorf(resp, 400, "since must be a duration (24h, 7d) or epoch milliseconds"); return; }
    }
    if (!u->admin && who && strcmp(who, u->name)) {   /* a user sees their own usage only */
        gx_resp_errorf(resp, 403, "only an admin may see another user's usage (you are %s)", u->name);
        return;
    }
    if (!u->admin) who = u->name;
    gx_err e;
    gx_err_clear(&e);
    json_t *items = gx_maas_usage_query(m->usage, g ? g : "key", from, who, &e);
    if (!items) { gx_resp_error(resp, &e); return; }
    char s[40];
    gx_time_fmt(from, s, sizeof s);
    gx_resp_json(resp, 200, json_pack("{s:s,s:s,s:o}", "groupBy", g ? g : "key", "since", s, "items", items));
}

void gx_maas_api(gx_maas *m, const gx_user *u, gx_req *req, gx_resp *resp, char **seg, int nseg)
{
    const char *what = seg[2];
    if (!strcmp(what, "keys") && nseg <= 4) keys_api(m, u, req, resp, seg, nseg);
    else if (!strcmp(what, "models")) objects_api(m, u, req, resp, seg, nseg, 1);
    else if (!strcmp(what, "tiers")) objects_api(m, u, req, resp, seg, nseg, 0);
    else if (!strcmp(what, "usage") && nseg == 3 && !strcmp(req->method, "GET")) usage_api(m, u, req, resp);
    else gx_resp_errorf(resp, 404, "no such path %s", req->path);
}

/* ---- for the portal (src/portal): its Models page shows only what a user may use ---- */

int gx_maas_tier_open(gx_maas *m, const char *tier, const gx_user *u, const char *ns)
{
    const gx_maas_tier *t = gx_maas_tier_get(m, tier);
    return t && allowed_tier(t, u, ns);
}

json_t *gx_maas_model_status(gx_maas *m, const char *name)
{
    const gx_maas_model *md = gx_strmap_get(&m->models, name);
    return md && md->present ? gx_maas_model_view(md) : NULL;
}
