/* maas/models: Model objects and their replicas.
 * Owns: validating Models, the served-name index, the replicas of each model and
 * their readiness (a GET of the readiness path, every 5 s when ready and every 0.5 s
 * when not), least-outstanding-requests choice, and, for spec.workload models, the
 * model server's life: a long-running Job per replica in a Kueue queue (so it takes
 * its GPU share through the same quotas as everything else), restarted with
 * exponential back-off when it ends, started on the first request when scaled to
 * zero and stopped again after idleSeconds without requests; a server that ends
 * GX_MAAS_START_TRIES times in a row without ever being ready is given up on (Failed,
 * health.c says why) and its last Job kept while the Model stays as it is. Across a restart of the
 * daemon, a server it started is adopted (same port, no new replica) when the store's
 * record of it (meta "maas-server:<ns/name>": its Job's createdAt, port and a hash of the
 * model's spec) matches the re-adopted Job: a Job of the same name that someone else
 * submitted, or one of an older spec, is replaced, never trusted with traffic.
 * Each ready replica's /metrics is scraped too (every 15 s, GPUAAS_GATEWAY_SCRAPE_MS in
 * tests; one scrape in flight per replica), its vllm:* families kept for the daemon's
 * /metrics while the replica is ready and the scrape fresher than 60 s.
 * Must not: free a replica or a model while the daemon runs (requests in flight point
 * to them); block (probes and scrapes go through proxy.c's curl multi). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "lib/num.h"
#include "lib/alloc.h"
#include "ops/ops.h"
#include "lib/sbuf.h"
#include "maas/maas_int.h"
#include "maas/scrape.h"

#define MAX_GRAVE 4096

static gx_maas_replica *grave[MAX_GRAVE]; /* retired replicas, freed at shutdown */
static size_t ngrave;

static void bury(gx_maas_replica *r)
{
    r->retired = 1;
    r->ready = 0;
    if (ngrave < MAX_GRAVE) grave[ngrave++] = r;
}

static int strings_ok(const json_t *a, size_t min, size_t max, size_t maxlen)
{
    if (!json_is_array(a) || json_array_size(a) < min || json_array_size(a) > max) return 0;
    size_t i;
    json_t *x;
    json_array_foreach(a, i, x)
        if (!json_is_string(x) || json_string_length(x) == 0 || json_string_length(x) > maxlen) return 0;
    return 1;
}

static int url_ok(const char *u)
{
    return u && strlen(u) < 200 && (!strncmp(u, "http://", 7) || !strncmp(u, "https://", 8)) && !strpbrk(u, " \r\n");
}

static int validate_workload(const json_t *w, gx_err *err)
{
    if (!json_is_object(w)) return gx_errf(err, 422, "spec.workload", "must be a mapping");
    if (!strings_ok(json_object_get(w, "command"), 1, 256, 4096))
        return gx_errf(err, 422, "spec.workload.command", "a list of 1 to 256 strings, with {port} (and {model}, {share}, {bindir})");
    const char *q = json_string_value(json_object_get(w, "queue"));
    if (!q || !gx_dns_label_ok(q)) return gx_errf(err, 422, "spec.workload.queue", "the LocalQueue to run in (a name)");
    const char *ns = json_string_value(json_object_get(w, "namespace"));
    if (json_object_get(w, "namespace") && (!ns || !gx_dns_label_ok(ns)))
        return gx_errf(err, 422, "spec.workload.namespace", "must be a namespace name");
    const json_t *r = json_object_get(w, "replicas");
    if (r && (!json_is_integer(r) || json_integer_value(r) < 1 || json_integer_value(r) > GX_MAAS_MAX_REPLICAS))
        return gx_errf(err, 422, "spec.workload.replicas", "must be an integer from 1 to %d", GX_MAAS_MAX_REPLICAS);
    const json_t *mr = json_object_get(w, "minReplicas");
    if (mr && (!json_is_integer(mr) || json_integer_value(mr) < 0))
        return gx_errf(err, 422, "spec.workload.minReplicas", "must be 0 (scale to zero when idle) or the replicas");
    const json_t *res = json_object_get(w, "resources");
    if (res && !json_is_object(res)) return gx_errf(err, 422, "spec.workload.resources", "must be a mapping of quantities");
    const char *rp = json_string_value(json_object_get(w, "readinessPath"));
    if (json_object_get(w, "readinessPath") && (!rp || rp[0] != '/' || strlen(rp) > 100))
        return gx_errf(err, 422, "spec.workload.readinessPath", "must be a path starting with /");
    const json_t *idle = json_object_get(w, "idleSeconds");
    if (idle && (!json_is_integer(idle) || json_integer_value(idle) < 1))
        return gx_errf(err, 422, "spec.workload.idleSeconds", "must be a positive integer");
    return 0;
}

/* The Job of replica i of the workload-backed Model `model`: maas-MODEL-I in namespace
 * ns. The Model's name must make valid Job names (DNS-1123 labels): refused, never cut. */
static int replica_key(gx_wlkey *k, const char *ns, const char *model, int i, gx_err *err)
{
    char job[GX_K8S_LABEL_MAX + 2], why[GX_K8S_PROBLEM_MAX];
    int n = snprintf(job, sizeof job, "maas-%s-%d", model, i);
    const char *p = n < 0 || (size_t)n >= sizeof job ? "must be no more than 63 characters"
                                                    : gx_k8s_label_problem(job, GX_K8S_LABEL_MAX, why, sizeof why);
    if (p)
        return gx_errf(err, 422, "metadata.name", "Invalid value: \"%s\": a Model with spec.workload runs its "
                       "replicas as Jobs named maas-NAME-N, and a Job name %s (maas-%s-%d)", model, p, model, i);
    return gx_wlkey_make(k, ns ? ns : "default", job, err);
}

int gx_maas_model_validate(const json_t *doc, gx_err *err)
{
    const char *name = json_string_value(json_object_get(json_object_get(doc, "metadata"), "name"));
    /* at most 50: what the gateway's tables and usage records hold */
    if (gx_k8s_check_subdomain(name, GX_MAAS_MODEL_NAME_MAX, "metadata.name", err)) return -1;
    const json_t *spec = json_object_get(doc, "spec");
    if (!json_is_object(spec)) return gx_errf(err, 422, "spec", "a Model needs a spec");
    const json_t *sn = json_object_get(spec, "servedNames");
    if (sn && !strings_ok(sn, 1, 16, 128))
        return gx_errf(err, 422, "spec.servedNames", "a list of 1 to 16 names (what clients put in \"model\")");
    if (!strings_ok(json_object_get(spec, "tiers"), 1, 64, 63))
        return gx_errf(err, 422, "spec.tiers", "a list of the tiers that may use this model");
    int n = !!json_object_get(spec, "url") + !!json_object_get(spec, "urls") + !!json_object_get(spec, "workload");
    if (n != 1) return gx_errf(err, 422, "spec", "give exactly one backend: url (or urls) of an OpenAI-compatible server, or workload");
    if (json_object_get(spec, "url") && !url_ok(json_string_value(json_object_get(spec, "url"))))
        return gx_errf(err, 422, "spec.url", "must be an http:// or https:// URL (without /v1)");
    if (json_object_get(spec, "urls")) {
        const json_t *u = json_object_get(spec, "urls");
        if (!strings_ok(u, 1, GX_MAAS_MAX_REPLICAS, 199)) return gx_errf(err, 422, "spec.urls", "a list of 1 to %d URLs", GX_MAAS_MAX_REPLICAS);
        size_t i;
        json_t *x;
        json_array_foreach(u, i, x)
            if (!url_ok(json_string_value(x))) return gx_errf(err, 422, "spec.urls", "entry %zu is not an http(s) URL", i);
    }
    if (json_object_get(spec, "workload")) {
        const json_t *w = json_object_get(spec, "workload");
        if (validate_workload(w, err)) return -1;
        const json_t *r = json_object_get(w, "replicas");
        gx_wlkey k;
        for (int i = 0; i < (json_is_integer(r) ? (int)json_integer_value(r) : 1); i++)
            if (replica_key(&k, json_string_value(json_object_get(w, "namespace")), name, i, err)) return -1;
    }
    const json_t *mb = json_object_get(spec, "maxBodyBytes");
    if (mb && (!json_is_integer(mb) || json_integer_value(mb) < 1024 || json_integer_value(mb) > (1LL << 30)))
        return gx_errf(err, 422, "spec.maxBodyBytes", "must be an integer from 1024 to 1073741824");
    const json_t *to = json_object_get(spec, "timeoutSeconds");
    if (to && (!json_is_integer(to) || json_integer_value(to) < 1 || json_integer_value(to) > 86400))
        return gx_errf(err, 422, "spec.timeoutSeconds", "must be an integer from 1 to 86400");
    const char *rp = json_string_value(json_object_get(spec, "readinessPath"));
    if (json_object_get(spec, "readinessPath") && (!rp || rp[0] != '/' || strlen(rp) > 100))
        return gx_errf(err, 422, "spec.readinessPath", "must be a path starting with /");
    const char *kf = json_string_value(json_object_get(spec, "apiKeyFile"));
    if (json_object_get(spec, "apiKeyFile") && (!kf || kf[0] != '/' || access(kf, R_OK)))
        return gx_errf(err, 422, "spec.apiKeyFile", "must be the absolute path of a file the daemon can read "
                       "(the upstream's API key, e.g. vLLM --api-key)");
    return 0;
}

/* The upstream's API key: read at apply, kept in memory, never logged or stored. */
static void load_api_key(gx_maas_model *md, const char *path)
{
    md->auth[0] = 0;
    if (!path) return;
    FILE *f = fopen(path, "r");
    char key[512] = "";
    if (!f || !fgets(key, sizeof key, f)) {
        fprintf(stderr, "gpuaas: gateway: model %s: cannot read spec.apiKeyFile %s\n", md->name, path);
    } else {
        key[strcspn(key, "\r\n")] = 0;
        if (key[0]) snprintf(md->auth, sizeof md->auth, "Authorization: Bearer %s", key);
    }
    if (f) fclose(f);
    memset(key, 0, sizeof key);
}

static void rebuild_served(gx_maas *m)
{
    gx_strmap_free(&m->served);
    gx_strmap_init(&m->served);
    size_t max = 16u << 20;
    for (size_t i = 0; i < m->models.cap; i++) {
        char *k = m->models.keys[i];
        if (!k || k == (char *)1) continue;
        gx_maas_model *md = m->models.vals[i];
        if (!md->present) continue;
        size_t j;
        json_t *x;
        json_array_foreach(md->served, j, x) gx_strmap_put(&m->served, json_string_value(x), md);
        if (md->max_body > max) max = md->max_body;
    }
    m->body_limit = max;
    if (m->http) gx_http_set_prefix_limit(m->http, "/v1/", max);
}

static gx_maas_replica *new_replica(const char *url)
{
    gx_maas_replica *r = gx_xcalloc(1, sizeof *r);
    snprintf(r->url, sizeof r->url, "%s", url);
    size_t n = strlen(r->url);
    while (n && r->url[n - 1] == '/') r->url[--n] = 0;
    if (n >= 3 && !strcmp(r->url + n - 3, "/v1")) r->url[n - 3] = 0; /* we add /v1/... ourselves */
    return r;
}

/* FNV-1a of the spec's canonical text: a server started for another spec is not adopted. */
static unsigned long long spec_hash(const json_t *spec)
{
    char *t = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
    unsigned long long h = 1469598103934665603ULL;
    for (const char *p = t ? t : ""; *p; p++) h = (h ^ (unsigned char)*p) * 1099511628211ULL;
    free(t);
    return h;
}

#define RECORD_KEY_MAX (sizeof "maas-server:" + GX_WLKEY_MAX)   /* room for any workload key */
static void record_key(const gx_maas_replica *r, char *out, size_t n) { snprintf(out, n, "maas-server:%s", r->wl.key); }

/* Remember (value "createdAt port hash") or forget ("", md may be NULL) the server a
 * replica started. */
static void record_server(gx_maas *m, const gx_maas_model *md, const gx_maas_replica *r, int keep)
{
    char k[RECORD_KEY_MAX], v[128] = "";
    record_key(r, k, sizeof k);
    if (keep && md) snprintf(v, sizeof v, "%s %d %016llx", r->created[0] ? r->created : "-", r->port, spec_hash(md->spec));
    gx_err e;
    gx_err_clear(&e);
    if (gx_store_meta_put(m->store, k, v, &e))
        fprintf(stderr, "gpuaas: gateway: recording model server %s: %s (it is replaced after a restart)\n", r->wl.key, e.msg);
}

/* A Job of this replica's name found when the replica has none: the server this
 * daemon started before a restart? Then take it over as it is: its port from the
 * record, ready at once when its process runs (the probe confirms within 5 s), so
 * that requests right after the restart are served. 1 when adopted. */
static int adopt(gx_maas *m, gx_maas_model *md, gx_maas_replica *r, const json_t *v, int64_t now)
{
    const char *phase = json_string_value(json_object_get(v, "phase"));
    const char *created = json_string_value(json_object_get(v, "createdAt"));
    if (!phase || !created || (strcmp(phase, "Running") && strcmp(phase, "Pending") && strcmp(phase, "Admitted")))
        return 0;
    char k[RECORD_KEY_MAX], rec[128], c[40];
    int port;
    unsigned long long h;
    record_key(r, k, sizeof k);
    if (gx_store_meta_get(m->store, k, rec, sizeof rec, NULL) || sscanf(rec, "%39s %d %llx", c, &port, &h) != 3) return 0;
    if (strcmp(c, created) || h != spec_hash(md->spec) || port <= 0 || port > 65535) return 0;
    r->port = port;
    snprintf(r->url, sizeof r->url, "http://127.0.0.1:%d", port);
    snprintf(r->created, sizeof r->created, "%s", created);
    r->wl_state = 1;
    r->start_at = now;
    r->ready = !strcmp(phase, "Running");
    r->ever_ready = r->ready;
    r->next_probe_ms = now;
    fprintf(stderr, "gpuaas: gateway: model %s: adopted its server %s (%s, port %d)\n", md->name, r->wl.key, phase, port);
    return 1;
}

/* Stop a workload replica's Job (it is deleted once its processes are gone). */
static void stop_replica(gx_maas *m, gx_maas_replica *r)
{
    r->ready = 0;
    if (r->wl_state == 1) {
        gx_err e;
        gx_d_cancel(m->ops, r->wl.key, "the gateway (model changed, deleted or idle)", &e);
        r->wl_state = 2;
    }
}

/* ---- scrapes of the replicas' /metrics ------------------------------------------------- */

#define SCRAPE_MAX_AGE_MS 60000


static void scrape_in_free(gx_maas_replica *r)
{
    if (r->scrape_in) gx_sbuf_free(&r->scrape_in->body);
    free(r->scrape_in);
    r->scrape_in = NULL;
}

/* A replica leaves (its model changed): its scrape in flight ends now, and what it
 * reported goes. */
static void scrape_stop(gx_maas *m, gx_maas_replica *r)
{
    if (r->scrape) gx_maas_proxy_probe_cancel(m->proxy, r->scrape);
    r->scrape = NULL;
    gx_maas_proxy_free_headers(r->scrape_hdrs);
    r->scrape_hdrs = NULL;
    scrape_in_free(r);
    free(r->scraped);
    r->scraped = NULL;
}

static void scrape_start(gx_maas *m, gx_maas_model *md, gx_maas_replica *r, int64_t now)
{
    char url[300];
    snprintf(url, sizeof url, "%s/metrics", r->url);
    r->scrape_in = gx_xcalloc(1, sizeof *r->scrape_in);
    r->scrape = gx_maas_proxy_scrape(m->proxy, url, md->auth, &r->scrape_hdrs, r->scrape_in);
    if (!r->scrape) {
        scrape_in_free(r);
        md->scrapes_failed++;
    }
    /* every 15 s by default: vLLM's gauges move slowly, and Prometheus scrapes the
     * daemon at about that rate (tests shorten it: gx_maas_env.scrape_ms) */
    r->next_scrape_ms = now + m->env.scrape_ms;
}

/* Scrape the ready replicas that are due; forget what a replica reported once it is
 * not ready or the report is too old to describe it. */
static void scrape_tick(gx_maas *m, gx_maas_model *md, gx_maas_replica *r, int64_t now)
{
    if (r->ready && md->present && !r->scrape && now >= r->next_scrape_ms) scrape_start(m, md, r, now);
    if (r->scraped && (!r->ready || !md->present || now - r->scraped_at > SCRAPE_MAX_AGE_MS)) {
        free(r->scraped);
        r->scraped = NULL;
    }
}

void gx_maas_models_scrape_done(gx_maas *m, void *easy, int ok)
{
    for (size_t i = 0; i < m->models.cap; i++) {
        char *k = m->models.keys[i];
        if (!k || k == (char *)1) continue;
        gx_maas_model *md = m->models.vals[i];
        for (int j = 0; j < md->nrep; j++) {
            gx_maas_replica *r = md->rep[j];
            if (r->scrape != easy) continue;
            r->scrape = NULL;
            gx_maas_proxy_free_headers(r->scrape_hdrs);
            r->scrape_hdrs = NULL;
            gx_maas_scrape_in *in = r->scrape_in;
            if (ok && !in->cut) {
                int cut;
                free(r->scraped);
                r->scraped = gx_maas_scrape_filter(in->body.p, in->body.n, md->name, j, &cut);
                r->scraped_at = gx_maas_mono_ms(m);
                md->scrapes_ok++;
            } else {
                md->scrapes_failed++;
            }
            scrape_in_free(r);
            return;
        }
    }
}

char *gx_maas_models_metrics(gx_maas *m, char *text, int64_t now)
{
    gx_sbuf b = {0};
    gx_sbuf_printf(&b, "%s# HELP gpuaas_gateway_scrapes_total Scrapes of the model servers' /metrics, by model and result\n"
                   "# TYPE gpuaas_gateway_scrapes_total counter\n", text);
    free(text);
    size_t n = 0, cap = 0;
    const char **texts = NULL;
    char esc[300];
    for (size_t i = 0; i < m->models.cap; i++) {
        char *k = m->models.keys[i];
        if (!k || k == (char *)1) continue;
        gx_maas_model *md = m->models.vals[i];
        if (!md->present) continue;
        gx_prom_label(md->name, esc, sizeof esc);
        gx_sbuf_printf(&b, "gpuaas_gateway_scrapes_total{model=\"%s\",result=\"ok\"} %llu\n"
                       "gpuaas_gateway_scrapes_total{model=\"%s\",result=\"failed\"} %llu\n",
                       esc, (unsigned long long)md->scrapes_ok, esc, (unsigned long long)md->scrapes_failed);
        for (int j = 0; j < md->nrep; j++) {
            const gx_maas_replica *r = md->rep[j];
            if (!r->scraped || !r->ready || now - r->scraped_at > SCRAPE_MAX_AGE_MS) continue;
            texts = gx_xgrow(texts, &cap, n + 1, sizeof *texts);
            texts[n++] = r->scraped;
        }
    }
    gx_maas_scrape_merge(texts, n, &b);
    free(texts);
    return b.p;
}

void gx_maas_models_apply(gx_maas *m, const json_t *doc)
{
    const char *name = json_string_value(json_object_get(json_object_get(doc, "metadata"), "name"));
    const json_t *spec = json_object_get(doc, "spec");
    gx_maas_model *md = gx_strmap_get(&m->models, name);
    if (md && md->present && json_equal(md->spec, (json_t *)spec)) return;
    if (!md) {
        md = gx_xcalloc(1, sizeof *md);
        snprintf(md->name, sizeof md->name, "%s", name);
        gx_strmap_put(&m->models, name, md);
    }
    /* a changed model starts from new replicas; the old ones finish their requests */
    for (int i = 0; i < md->nrep; i++) {
        if (md->rep[i]->wl_state) stop_replica(m, md->rep[i]);
        scrape_stop(m, md->rep[i]);
        bury(md->rep[i]);
    }
    md->nrep = 0;
    json_decref(md->spec);
    md->spec = json_deep_copy(spec);
    md->present = 1;
    md->served = json_object_get(md->spec, "servedNames");
    if (!md->served) {
        json_object_set_new(md->spec, "servedNames", json_pack("[s]", name));
        md->served = json_object_get(md->spec, "servedNames");
    }
    md->tiers = json_object_get(md->spec, "tiers");
    load_api_key(md, json_string_value(json_object_get(spec, "apiKeyFile")));
    const json_t *mb = json_object_get(spec, "maxBodyBytes");
    md->max_body = json_is_integer(mb) ? (size_t)json_integer_value(mb) : 16u << 20;
    const json_t *w = json_object_get(spec, "workload");
    md->workload = w != NULL;
    const char *rp = json_string_value(json_object_get(w ? w : spec, "readinessPath"));
    snprintf(md->ready_path, sizeof md->ready_path, "%s", rp ? rp : w ? "/health" : "/v1/models");
    if (w) {
        const json_t *r = json_object_get(w, "replicas"), *mr = json_object_get(w, "minReplicas");
        int n = json_is_integer(r) ? (int)json_integer_value(r) : 1;
        md->min_replicas = json_is_integer(mr) ? (int)json_integer_value(mr) : n;
        const json_t *idle = json_object_get(w, "idleSeconds");
        md->idle_ms = (json_is_integer(idle) ? json_integer_value(idle) : 300) * 1000;
        md->wanted = md->min_replicas > 0;
        for (int i = 0; i < n; i++) {
            gx_err e;
            gx_maas_replica *x = new_replica("");
            if (replica_key(&x->wl, json_string_value(json_object_get(w, "namespace")), name, i, &e)) {
                /* validated at apply: only a Model stored before the rule gets here, and runs no server */
                fprintf(stderr, "gpuaas: gateway: model %s: %s: %s\n", name, e.field, e.msg);
                free(x);
                continue;
            }
            md->rep[md->nrep++] = x;
        }
    } else if (json_object_get(spec, "url")) {
        md->rep[md->nrep++] = new_replica(json_string_value(json_object_get(spec, "url")));
    } else {
        size_t i;
        json_t *x;
        json_array_foreach(json_object_get(spec, "urls"), i, x) md->rep[md->nrep++] = new_replica(json_string_value(x));
    }
    rebuild_served(m);
}

int gx_maas_models_delete(gx_maas *m, const char *name, gx_err *err)
{
    gx_maas_model *md = gx_strmap_get(&m->models, name);
    if (!md || !md->present) return gx_errf(err, 404, "", "no Model %s", name);
    md->present = 0;
    md->wanted = 0;
    for (int i = 0; i < md->nrep; i++) stop_replica(m, md->rep[i]);
    rebuild_served(m);
    return 0;
}

gx_maas_model *gx_maas_models_find(gx_maas *m, const char *served)
{
    gx_maas_model *md = gx_strmap_get(&m->served, served);
    return md && md->present ? md : NULL;
}

int gx_maas_model_allows(const gx_maas_model *md, const char *tier)
{
    size_t i;
    json_t *x;
    json_array_foreach(md->tiers, i, x)
        if (!strcmp(json_string_value(x), tier)) return 1;
    return 0;
}

gx_maas_replica *gx_maas_models_pick(gx_maas_model *md, const gx_maas_replica *not)
{
    gx_maas_replica *best = NULL;
    int n = md->nrep;
    int first = n ? (int)(md->requests % (uint64_t)n) : 0; /* ties go round the replicas */
    for (int k = 0; k < n; k++) {
        gx_maas_replica *r = md->rep[(first + k) % n];
        if (!r->ready || r->retired || r == not) continue;
        if (!best || r->outstanding < best->outstanding) best = r;
    }
    return best;
}

/* ---- workload-backed replicas ------------------------------------------------------------ */

static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0) return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    int port = -1;
    if (!bind(s, (struct sockaddr *)&a, sizeof a) && !getsockname(s, (struct sockaddr *)&a, &l)) port = ntohs(a.sin_port);
    close(s);
    return port;
}

/* "{port}" -> 8001 and so on, in one argument. {bindir}: the daemon binary's folder
 * (where the demo's stand-in for vLLM, fake-openai, is built). */
static json_t *render(const char *arg, int port, const char *model, const char *share, const char *bindir)
{
    char out[8192], num[16];
    snprintf(num, sizeof num, "%d", port);
    size_t k = 0;
    for (const char *p = arg; *p && k < sizeof out - 1;) {
        const char *rep = NULL;
        size_t skip = 0;
        if (!strncmp(p, "{port}", 6)) { rep = num; skip = 6; }
        else if (!strncmp(p, "{model}", 7)) { rep = model; skip = 7; }
        else if (!strncmp(p, "{share}", 7)) { rep = share; skip = 7; }
        else if (!strncmp(p, "{bindir}", 8)) { rep = bindir ? bindir : ""; skip = 8; }
        if (rep) {
            size_t l = strlen(rep);
            if (k + l >= sizeof out) break;
            memcpy(out + k, rep, l);
            k += l;
            p += skip;
        } else {
            out[k++] = *p++;
        }
    }
    out[k] = 0;
    return json_string(out);
}

static json_t *job_of(gx_maas_model *md, gx_maas_replica *r, const char *bindir)
{
    const json_t *w = json_object_get(md->spec, "workload");
    const char *model = json_string_value(json_array_get(md->served, 0));
    const json_t *res = json_object_get(w, "resources");
    /* {share}: the count of nvidia.com/gpu, else of the first other device under
     * nvidia.com (a MIG profile); never gpumem or gpucores, whatever the manifest's order
     * (a fractional slot's limits reach the server in its environment, as for any Job) */
    char share[64] = "";
    const char *k;
    json_t *v, *dev = json_object_get(res, "nvidia.com/gpu");
    json_object_foreach((json_t *)res, k, v)
        if (!dev && !strncmp(k, "nvidia.com/", 11) && strcmp(k, "nvidia.com/gpumem") && strcmp(k, "nvidia.com/gpucores"))
            dev = v;
    v = dev;
    if (json_is_string(v)) snprintf(share, sizeof share, "%s", json_string_value(v));
    else if (json_is_integer(v)) snprintf(share, sizeof share, "%lld", (long long)json_integer_value(v));
    else if (json_is_number(v)) gx_num_fmt(json_number_value(v), share, sizeof share);
    json_t *cmd = json_array();
    size_t i;
    json_array_foreach(json_object_get(w, "command"), i, v)
        json_array_append_new(cmd, render(json_string_value(v), r->port, model, share, bindir));
    char port[16];
    snprintf(port, sizeof port, "%d", r->port);
    return json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s,s:s}},s:{s:i,s:{s:{s:s,s:i,s:[{s:s,s:s,s:o,s:[{s:s,s:s}],s:{s:O}}]}}}}",
        "apiVersion", "batch/v1", "kind", "Job",
        "metadata", "name", r->wl.name, "namespace", r->wl.ns, "labels",
        "kueue.x-k8s.io/queue-name", json_string_value(json_object_get(w, "queue")), "gpuaas.dev/model", md->name,
        "spec", "backoffLimit", 0, "template", "spec", "restartPolicy", "Never", "terminationGracePeriodSeconds", 5,
        "containers", "name", "model-server", "image", "local", "command", cmd,
        "env", "name", "GPUAAS_MODEL_PORT", "value", port,
        "resources", "requests", res ? res : json_object());
}

static int ended(const char *phase)
{
    return phase && (!strcmp(phase, "Succeeded") || !strcmp(phase, "Failed") || !strcmp(phase, "Deactivated"));
}

static void manage(gx_maas *m, gx_maas_model *md, gx_maas_replica *r, int desired, int64_t now)
{
    gx_err e;
    gx_err_clear(&e);
    if (r->wl_state == 2) { /* stopping: delete the Job once its processes are gone */
        if (!gx_d_active(m->ops, r->wl.key)) {
            json_t *v = gx_d_view(m->ops, r->wl.key);
            /* forget it first: a crash between the two leaves a Job that is not adopted */
            if (v) record_server(m, md, r, 0);
            if (v) gx_d_delete(m->ops, r->wl.key, &e);
            json_decref(v);
            r->wl_state = 0;
        }
        return;
    }
    if (r->wl_state == 1) {
        json_t *v = gx_d_view(m->ops, r->wl.key);
        const char *phase = v ? json_string_value(json_object_get(v, "phase")) : NULL;
        if (v && r->failed && md && md->present && !r->retired) { json_decref(v); return; }   /* kept to be read */
        if (!v || ended(phase) || !desired) {
            if (v && ended(phase) && desired && !r->ever_ready && ++r->starts_failed >= GX_MAAS_START_TRIES) {
                gx_maas_replica_fail(m, md, r, v);   /* it can never start: stop trying, keep its Job */
                r->ready = 0;
                json_decref(v);
                return;
            }
            if (v && ended(phase) && desired) {
                r->backoff_ms = r->backoff_ms ? (r->backoff_ms * 2 > 60000 ? 60000 : r->backoff_ms * 2) : 1000;
                r->start_at = now + r->backoff_ms;
                r->restarts++;
                fprintf(stderr, "gpuaas: gateway: model %s: server %s ended (%s); restart in %llds\n", md->name,
                        r->wl.key, phase, (long long)(r->backoff_ms / 1000));
            }
            r->ready = 0;
            if (!v) r->wl_state = 0;
            else if (ended(phase)) { r->wl_state = 2; manage(m, md, r, desired, now); }
            else stop_replica(m, r);
        } else if (r->ready && now - r->start_at > 60000) {
            r->backoff_ms = 0; /* it has run for a minute: a later crash restarts at once */
        }
        json_decref(v);
        return;
    }
    if (r->retired || !md->present || r->failed) return;
    json_t *old = gx_d_view(m->ops, r->wl.key);
    if (old && adopt(m, md, r, old, now)) {
        json_decref(old);
        if (!desired) { /* a scaled-to-zero model whose server ran: it idles out from now */
            md->wanted = 1;
            md->last_request_ms = now;
        }
        return;
    }
    if (!desired || now < r->start_at) { json_decref(old); return; }
    if (old) { /* not one this daemon started for this spec: replace it */
        json_decref(old);
        r->wl_state = 1;
        stop_replica(m, r);
        return;
    }
    r->port = free_port();
    snprintf(r->url, sizeof r->url, "http://127.0.0.1:%d", r->port);
    json_t *job = job_of(md, r, m->env.bin_dir);
    json_t *view = NULL;
    if (r->port < 0 || gx_d_submit(m->ops, job, NULL, &view, &e)) {
        fprintf(stderr, "gpuaas: gateway: model %s: cannot start %s: %s\n", md->name, r->wl.key, e.msg);
        r->start_at = now + 5000;
    } else {
        r->wl_state = 1;
        r->start_at = now;
        r->ever_ready = 0;
        r->next_probe_ms = now + 100;
        snprintf(r->created, sizeof r->created, "%s", json_string_value(json_object_get(view, "createdAt")) ?: "");
        record_server(m, md, r, 1);
    }
    json_decref(view);
    json_decref(job);
}

int64_t gx_maas_models_tick(gx_maas *m, int64_t now)
{
    for (size_t i = 0; i < m->models.cap; i++) {
        char *k = m->models.keys[i];
        if (!k || k == (char *)1) continue;
        gx_maas_model *md = m->models.vals[i];
        if (md->workload && md->present && md->min_replicas == 0 && md->wanted && now - md->last_request_ms > md->idle_ms) {
            int busy = 0;
            for (int j = 0; j < md->nrep; j++) busy += md->rep[j]->outstanding;
            if (!busy) md->wanted = 0; /* idle: scale to zero */
        }
        int desired = md->present && md->wanted;
        for (int j = 0; j < md->nrep; j++) {
            gx_maas_replica *r = md->rep[j];
            if (md->workload) manage(m, md, r, desired, now);
            int probe_ok = md->present && (!md->workload || (r->wl_state == 1 && !r->failed));
            if (probe_ok && !r->probe && now >= r->next_probe_ms) {
                char url[400];
                snprintf(url, sizeof url, "%s%s", r->url, md->ready_path);
                r->probe = gx_maas_proxy_probe(m->proxy, url, md->auth, &r->probe_hdrs);
                r->next_probe_ms = now + (r->ready ? 5000 : 250);
            }
            if (!probe_ok) r->ready = 0;
            scrape_tick(m, md, r, now);
        }
    }
    for (size_t g = 0; g < ngrave; g++)
        if (grave[g]->wl_state) manage(m, NULL, grave[g], 0, now);
    return 250;
}

void gx_maas_models_probe_done(gx_maas *m, void *easy, int ok, const char *why)
{
    for (size_t i = 0; i < m->models.cap; i++) {
        char *k = m->models.keys[i];
        if (!k || k == (char *)1) continue;
        gx_maas_model *md = m->models.vals[i];
        for (int j = 0; j < md->nrep; j++)
            if (md->rep[j]->probe == easy) {
                gx_maas_replica *r = md->rep[j];
                r->probe = NULL;
                gx_maas_proxy_free_headers(r->probe_hdrs);
                r->probe_hdrs = NULL;
                r->ready = ok && md->present && (!md->workload || r->wl_state == 1);
                r->probed = 1;
                if (r->ready) { r->why[0] = 0; r->ever_ready = 1; r->starts_failed = 0; }
                else if (!ok) snprintf(r->why, sizeof r->why, "%s", why && *why ? why : "its readiness probe failed");
                r->next_probe_ms = gx_maas_mono_ms(m) + (r->ready ? 5000 : 250);
                return;
            }
    }
    for (size_t g = 0; g < ngrave; g++)
        if (grave[g]->probe == easy) {
            grave[g]->probe = NULL;
            gx_maas_proxy_free_headers(grave[g]->probe_hdrs);
            grave[g]->probe_hdrs = NULL;
        }
}

void gx_maas_models_free(gx_maas *m)
{
    for (size_t i = 0; i < m->models.cap; i++) {
        char *k = m->models.keys[i];
        if (!k || k == (char *)1) continue;
        gx_maas_model *md = m->models.vals[i];
        for (int j = 0; j < md->nrep; j++) {
            if (md->rep[j]->probe) gx_maas_proxy_probe_cancel(m->proxy, md->rep[j]->probe);
            gx_maas_proxy_free_headers(md->rep[j]->probe_hdrs);
            scrape_stop(m, md->rep[j]);
            free(md->rep[j]);
        }
        json_decref(md->spec);
        free(md);
    }
    for (size_t g = 0; g < ngrave; g++) {
        if (grave[g]->probe) gx_maas_proxy_probe_cancel(m->proxy, grave[g]->probe);
        gx_maas_proxy_free_headers(grave[g]->probe_hdrs);
        free(grave[g]);
    }
    ngrave = 0;
    gx_strmap_free(&m->models);
    gx_strmap_free(&m->served);
}
