/* maas/health: why a model cannot serve, in the words its status and its 503 use.
 * Owns: a model's state (Ready, Starting, ScaledToZero, Failed, Unavailable) and its
 * view for GET /api/v1/models (the CLI and the portal read it); the 503 a request gets
 * when no replica is ready: a workload model whose server can never start is
 * model_failed (it names the reason and where its log is), a url model whose upstream
 * is down is upstream_unavailable (with the reason its probe failed), and only a
 * workload model whose server is on its way is model_starting; what a given-up
 * replica keeps to be read (how its server ended, its log's tail).
 * Must not: decide when to give up or restart (models.c), or keep a log open. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "maas/maas_int.h"
#include "ops/ops.h"

/* The replica that gave up, when every replica did (the model is Failed); else NULL. */
static const gx_maas_replica *failed_replica(const gx_maas_model *md)
{
    if (!md->workload || !md->nrep) return NULL;
    for (int i = 0; i < md->nrep; i++)
        if (!md->rep[i]->failed) return NULL;
    return md->rep[0];
}

/* A url model whose every upstream has failed its readiness probe since it was applied. */
static int all_unavailable(const gx_maas_model *md)
{
    if (md->workload || !md->nrep) return 0;
    for (int i = 0; i < md->nrep; i++)
        if (md->rep[i]->ready || !md->rep[i]->probed || !md->rep[i]->why[0]) return 0;
    return 1;
}

static void failed_message(const gx_maas_model *md, const char *name, char *out, size_t n)
{
    const gx_maas_replica *f = failed_replica(md);
    if (snprintf(out, n, "model %.128s failed: %s; see gpuaas logs %s", name, f->fail_reason, f->wl.key) >= (int)n) {
        /* cut: the reason is the part that ran long, and the 503 says the rest */
    }
}

/* "upstream URL is unavailable (why)", or every upstream's when it has several. */
static void upstream_message(const gx_maas_model *md, const char *name, char *out, size_t n)
{
    if (md->nrep == 1) {
        const gx_maas_replica *r = md->rep[0];
        int k = r->probed && r->why[0] ? snprintf(out, n, "model %s: upstream %s is unavailable (%s)", name, r->url, r->why)
                                       : snprintf(out, n, "model %s: upstream %s has not answered its readiness probe yet",
                                                  name, r->url);
        if (k >= (int)n) { /* cut at the end of the buffer: the URL and the start of the reason stay */ }
        return;
    }
    size_t k = (size_t)snprintf(out, n, "model %s: no upstream is available (", name);
    for (int i = 0; i < md->nrep && k < n; i++)
        k += (size_t)snprintf(out + k, n - k, "%s%s: %s", i ? "; " : "", md->rep[i]->url,
                              md->rep[i]->why[0] ? md->rep[i]->why : "not probed yet");
    if (k < n) snprintf(out + k, n - k, ")");
}

void gx_maas_unavailable(gx_resp *resp, const gx_maas_model *md, const char *name, int cold)
{
    char msg[800];
    if (failed_replica(md)) {
        /* retrying cannot help until someone fixes the Model: the openai clients obey this */
        failed_message(md, md->name, msg, sizeof msg);
        gx_maas_oai_error(resp, 503, "service_unavailable", "model_failed", "%s", msg);
        gx_resp_header(resp, "x-should-retry", "false");
        return;
    }
    if (!md->workload) {
        upstream_message(md, md->name, msg, sizeof msg);
        gx_maas_oai_error(resp, 503, "service_unavailable", "upstream_unavailable", "%s", msg);
    } else {
        gx_maas_oai_error(resp, 503, "service_unavailable", "model_starting",
                          "The model `%.128s` is starting%s; retry in a few seconds", name,
                          cold ? " (it was scaled to zero and starts now)" : " (no replica is ready yet)");
    }
    gx_resp_header(resp, "retry-after", "5");
}

json_t *gx_maas_model_view(const gx_maas_model *md)
{
    json_t *reps = json_array();
    int ready = 0;
    for (int i = 0; i < md->nrep; i++) {
        const gx_maas_replica *r = md->rep[i];
        ready += r->ready;
        json_t *x = json_pack("{s:s,s:b,s:i}", "url", r->url, "ready", r->ready, "outstanding", r->outstanding);
        if (md->workload) {
            json_object_set_new(x, "workload", json_string(r->wl.key));
            json_object_set_new(x, "restarts", json_integer(r->restarts));
        }
        if (r->failed) {
            json_object_set_new(x, "failed", json_true());
            json_object_set_new(x, "reason", json_string(r->fail_reason));
            json_object_set_new(x, "log", json_string(r->fail_log));
        } else if (!r->ready && r->why[0]) {
            json_object_set_new(x, "reason", json_string(r->why));
        }
        json_array_append_new(reps, x);
    }
    const gx_maas_replica *f = ready ? NULL : failed_replica(md);
    int down = !ready && all_unavailable(md);
    const char *state = ready ? "Ready" : f ? "Failed" : down ? "Unavailable"
                      : md->workload && !md->wanted ? "ScaledToZero" : "Starting";
    json_t *v = json_pack("{s:s,s:O,s:O,s:s,s:s,s:i,s:i,s:I,s:o}", "name", md->name, "servedNames", md->served,
                          "tiers", md->tiers, "backend", md->workload ? "workload" : "url", "state", state,
                          "readyReplicas", ready, "replicas", md->nrep, "requests", (json_int_t)md->requests,
                          "replicaStatus", reps);
    char msg[800];
    if (f || down) {
        if (f) failed_message(md, md->name, msg, sizeof msg);
        else upstream_message(md, md->name, msg, sizeof msg);
        json_object_set_new(v, "message", json_string(msg));
    }
    if (f) json_object_set_new(v, "log", json_string(f->fail_log));
    return v;
}

/* The last bytes of pod 0's log, from its first whole line: read through the daemon's
 * own log reader (a file read, once, when a replica is given up on). */
static void log_tail(gx_maas *m, const char *key, char *out, size_t n)
{
    out[0] = 0;
    gx_resp lr;
    memset(&lr, 0, sizeof lr);
    gx_err e;
    gx_err_clear(&e);
    if (gx_d_logs(m->ops, key, 0, 0, &lr, &e) || !lr.stream.read) return;
    static char buf[65536];
    size_t have = 0, total = 0;
    ssize_t got;
    /* keep the last n-1 bytes: read in chunks, sliding the window; a runaway log is
     * read at most 64 MiB deep (what is past that is not its tail anyway) */
    while (total < ((size_t)64 << 20) && (got = lr.stream.read(lr.stream.ud, buf, sizeof buf)) > 0) {
        total += (size_t)got;
        size_t g = (size_t)got, keep = n - 1;
        if (g >= keep) { memcpy(out, buf + g - keep, keep); have = keep; continue; }
        if (have + g > keep) { memmove(out, out + (have + g - keep), keep - g); have = keep - g; }
        memcpy(out + have, buf, g);
        have += g;
    }
    if (lr.stream.free) lr.stream.free(lr.stream.ud);
    out[have] = 0;
    if (total > have) {   /* cut: start at a line */
        char *nl = strchr(out, '\n');
        if (nl && nl[1]) memmove(out, nl + 1, strlen(nl + 1) + 1);
    }
}

void gx_maas_replica_fail(gx_maas *m, const gx_maas_model *md, gx_maas_replica *r, const json_t *view)
{
    r->failed = 1;
    const json_t *pod = json_array_get(json_object_get(view, "pods"), 0);
    const json_t *code = json_object_get(pod, "exitCode");
    const char *msg = json_string_value(json_object_get(view, "message"));
    const char *phase = json_string_value(json_object_get(view, "phase"));
    char how[160];
    if (json_is_integer(code)) snprintf(how, sizeof how, "its server exited with code %lld", (long long)json_integer_value(code));
    else snprintf(how, sizeof how, "its server ended (%s)", phase ? phase : "gone");
    snprintf(r->fail_reason, sizeof r->fail_reason, "%s%s%s, %d times in a row without becoming ready", how,
             msg && *msg ? ": " : "", msg && *msg ? msg : "", r->starts_failed);
    log_tail(m, r->wl.key, r->fail_log, sizeof r->fail_log);
    fprintf(stderr, "gpuaas: gateway: model %s: server %s failed and is not restarted: %s (change the Model, or "
            "delete and apply it, to try again)\n", md->name, r->wl.key, r->fail_reason);
}
