/* cli/cmd_approve: `gpuaas approve` and `gpuaas reject`, the admin's side of the
 * gpuaas.dev/approval admission-check controller (a workload of a ClusterQueue with such
 * a check holds its quota and waits until an admin approves it; a rejection deactivates
 * it with the reason given).
 * Owns: turning the command line into POST /api/v1/workloads/NS/NAME/approve|reject.
 * Must not: judge who may approve (the daemon answers 403 to a non-admin). */
#include <stdio.h>
#include <string.h>
#include "cli/cmd.h"
#include "cli/fmt.h"
#include "lib/alloc.h"

/* Both commands: one workload, an optional --check and --message (reject requires it). */
static int verdict(gx_cli_ctx *c, int yes)
{
    char ns[256], name[256];
    int rc = gx_cli_ref(c, c->args.pos[0], ns, sizeof ns, name, sizeof name);
    if (rc) return rc;
    const char *msg = gx_opt_get(&c->args, "message"), *check = gx_opt_get(&c->args, "check");
    if (!yes && (!msg || !*msg)) return gx_cli_usage_error(c, "--message TEXT is required: the reason the user will see");
    json_t *body = json_object();
    if (msg) json_object_set_new(body, "message", json_string(msg));
    if (check) json_object_set_new(body, "check", json_string(check));
    char *text = json_dumps(body, JSON_COMPACT);
    json_decref(body);
    if (!text) { fputs("error: out of memory\n", stderr); return 1; }
    char ens[800], ename[800], path[2048];
    snprintf(path, sizeof path, "/api/v1/workloads/%s/%s/%s", gx_cli_pct(ns, ens, sizeof ens),
             gx_cli_pct(name, ename, sizeof ename), yes ? "approve" : "reject");
    gx_cli_resp r;
    rc = 0;
    if (gx_cli_http_call(&c->http, "POST", path, text, strlen(text), "application/json", &r)) {
        char what[520];
        snprintf(what, sizeof what, "%s/%s", ns, name);
        gx_cli_http_report_about(&c->http, &r, what);
        rc = 1;
    } else if (c->out == GX_CLI_OUT_JSON || c->out == GX_CLI_OUT_YAML) {
        rc = gx_cli_print_json(c, r.json);
    } else {
        printf("workload %s/%s %s: %s", ns, name, yes ? "approved" : "rejected",
               gx_cli_jstr_or(r.json, "phase", gx_cli_jstr_or(r.json, "state", "unknown")));
        const char *m = gx_cli_jstr(r.json, "message");
        if (m && *m) printf(" (%s)", m);
        putchar('\n');
    }
    gx_cli_resp_free(&r);
    free(text);
    return rc;
}

int gx_cli_run_approve(gx_cli_ctx *c) { return verdict(c, 1); }
int gx_cli_run_reject(gx_cli_ctx *c) { return verdict(c, 0); }
