/* cli/cmd_drain: "gpuaas drain" (cancel every workload, or a namespace's, and wait until
 * none runs) and "gpuaas delete" (remove finished workloads from the record).
 * Owns: drain's loop (cancel what is active, look again, until nothing is or the
 * timeout passes) and the lines both commands print.
 * Must not: stop anything but through the documented endpoints (cancel, DELETE): the
 * daemon's grace periods and records apply to a drain as to any cancel. */
#include <errno.h>
#include <string.h>
#include <time.h>
#include "cli/cmd.h"
#include "cli/fmt.h"
#include "lib/gxtime.h"

/* Still holding (or about to hold) resources: waiting, admitted, running or stopping. */
static int is_active(const json_t *w)
{
    const char *state = gx_cli_jstr_or(w, "state", ""), *phase = gx_cli_jstr_or(w, "phase", "");
    return !strcmp(state, "Pending") || !strcmp(state, "Admitted") || !strcmp(phase, "Running") ||
           !strcmp(phase, "Terminating");
}

/* Cancellable: not already cancelled or ended (a Terminating one is on its way out). */
static int is_cancellable(const json_t *w)
{
    const char *state = gx_cli_jstr_or(w, "state", "");
    return !strcmp(state, "Pending") || !strcmp(state, "Admitted");
}

static int64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {}
}

/* One pass: cancel every cancellable workload of the list. Returns how many are still
 * active (cancelled ones count until they have stopped), or -1 when the list failed. */
static int drain_pass(gx_cli_ctx *c, const char *list_path, int *cancelled, int *failed, json_t **last)
{
    json_t *ans = gx_cli_get(&c->http, list_path);
    if (!ans) return -1;
    int active = 0;
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(ans, "items"), i, w) {
        if (!is_active(w)) continue;
        active++;
        if (!is_cancellable(w)) continue;
        const char *ns = gx_cli_jstr_or(w, "namespace", ""), *name = gx_cli_jstr_or(w, "name", "");
        char ens[800], ename[800], path[2048], what[520];
        snprintf(path, sizeof path, "/api/v1/workloads/%s/%s/cancel", gx_cli_pct(ns, ens, sizeof ens),
                 gx_cli_pct(name, ename, sizeof ename));
        snprintf(what, sizeof what, "%s/%s", ns, name);
        gx_cli_resp r;
        if (gx_cli_http_call(&c->http, "POST", path, NULL, 0, NULL, &r)) {
            gx_cli_http_report_about(&c->http, &r, what);
            (*failed)++;
        } else {
            printf("cancelled %s\n", what);
            (*cancelled)++;
        }
        gx_cli_resp_free(&r);
    }
    json_decref(*last);
    *last = ans;
    return active;
}

int gx_cli_run_drain(gx_cli_ctx *c)
{
    const char *ns = gx_opt_get(&c->args, "namespace"), *tmo = gx_opt_get(&c->args, "timeout");
    int64_t timeout_ms = tmo ? gx_duration_parse(tmo) : 5 * 60 * 1000;
    if (timeout_ms < 0) return gx_cli_usage_error(c, "--timeout wants a duration such as 30s, 5m, not '%s'", tmo);
    if (ns && !*ns) return gx_cli_usage_error(c, "-n wants a namespace");
    /* Every namespace is an admin's to drain: a user would otherwise drain only what they
     * see and could take it for the whole server. */
    if (!ns) {
        if (!c->whoami && !(c->whoami = gx_cli_get(&c->http, "/api/v1/whoami"))) return 1;
        if (!json_is_true(json_object_get(c->whoami, "admin")))
            return gx_cli_usage_error(c, "draining every namespace is an admin's; pass -n NS for one of yours");
    }
    char path[1024] = "/api/v1/workloads", ens[800];
    if (ns) snprintf(path, sizeof path, "/api/v1/workloads?namespace=%s", gx_cli_pct(ns, ens, sizeof ens));
    int cancelled = 0, failed = 0, active;
    json_t *last = NULL;
    int64_t deadline = mono_ms() + timeout_ms;
    /* Cancel, then look again: what was cancelled must stop, and what was submitted
     * meanwhile is cancelled too, until nothing is active or the time is up. */
    while ((active = drain_pass(c, path, &cancelled, &failed, &last)) > 0 && !failed && mono_ms() < deadline)
        sleep_ms(200);
    int rc = 0;
    if (active < 0 || failed) {
        rc = 1;
    } else if (active > 0) {
        char d[32];
        fprintf(stderr, "error: drain: still active after %s:", gx_duration_exact(timeout_ms, d, sizeof d));
        size_t i;
        json_t *w;
        json_array_foreach(json_object_get(last, "items"), i, w)
            if (is_active(w))
                fprintf(stderr, " %s/%s (%s)", gx_cli_jstr_or(w, "namespace", "?"), gx_cli_jstr_or(w, "name", "?"),
                        gx_cli_jstr_or(w, "phase", gx_cli_jstr_or(w, "state", "?")));
        fputs("\n", stderr);
        rc = 1;
    } else {
        printf("drained%s%s: %d cancelled, none running\n", ns ? " namespace " : "", ns ? ns : "", cancelled);
    }
    json_decref(last);
    return rc;
}

int gx_cli_run_delete(gx_cli_ctx *c)
{
    int n = c->args.npos, rc = 0, done = 0;
    for (int i = 0; i < n; i++) {
        char ns[256], name[256], ens[800], ename[800], path[2048], what[520];
        if ((rc = gx_cli_ref(c, c->args.pos[i], ns, sizeof ns, name, sizeof name))) return rc;
        snprintf(path, sizeof path, "/api/v1/workloads/%s/%s", gx_cli_pct(ns, ens, sizeof ens),
                 gx_cli_pct(name, ename, sizeof ename));
        snprintf(what, sizeof what, "%s/%s", ns, name);
        gx_cli_resp r;
        /* each is tried; the exit status says whether any failed */
        if (gx_cli_http_call(&c->http, "DELETE", path, NULL, 0, NULL, &r)) {
            gx_cli_http_report_about(&c->http, &r, what);
        } else {
            printf("workload %s deleted\n", what);
            done++;
        }
        gx_cli_resp_free(&r);
    }
    return done < n ? 1 : 0;
}
