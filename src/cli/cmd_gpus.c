/* cli/cmd_gpus: `gpuaas gpus` (every GPU with its mode, slices or replicas and who holds
 * them, utilisation and memory used) and `gpuaas gpus mig apply` (admin).
 * Owns: the GPU table's cells. Must not: compute allocations itself; the daemon's
 * /api/v1/gpus answer says everything shown. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cmd.h"
#include "cli/cmd_gpus.h"
#include "cli/fmt.h"
#include "lib/alloc.h"
#include "lib/yaml.h"

#define WANT_JSON(c) ((c)->out == GX_CLI_OUT_JSON || (c)->out == GX_CLI_OUT_YAML)

static void cat(char *buf, size_t n, size_t *o, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void cat(char *buf, size_t n, size_t *o, const char *fmt, ...)
{
    if (*o >= n) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *o, n - *o, fmt, ap);
    va_end(ap);
    if (w > 0) *o += (size_t)w;
    if (*o > n) *o = n;
}

/* "2/4 replicas", "1g.10gb x2 (1 used), 3g.40gb", "30% cores, 8192Mi", "1/1" */
static const char *slices_cell(const json_t *g, char *buf, size_t n)
{
    const char *mode = gx_cli_jstr_or(g, "mode", "exclusive");
    const json_t *sh = json_object_get(g, "sharing");
    size_t o = 0;
    buf[0] = 0;
    if (!strcmp(mode, "mig")) {
        size_t i;
        json_t *m;
        const json_t *slices = json_object_get(sh, "slices");
        json_array_foreach(json_object_get(g, "migDevices"), i, m) {
            const json_t *sl = json_array_get(slices, i);
            size_t held = json_array_size(json_object_get(sl, "holders"));
            cat(buf, n, &o, "%s%s%s", o ? ", " : "", gx_cli_jstr_or(m, "profile", "?"), held ? "*" : "");
        }
        if (!o) cat(buf, n, &o, "no MIG devices");
    } else if (!strcmp(mode, "fractional")) {
        cat(buf, n, &o, "%lld%% cores, %lldMi allocated", (long long)json_integer_value(json_object_get(sh, "coresAllocated")),
            (long long)json_integer_value(json_object_get(sh, "memoryAllocatedMiB")));
    } else {
        char u[32], t[32];
        cat(buf, n, &o, "%s/%s%s", gx_cli_jnum(g, "slotsUsed", u, sizeof u), gx_cli_jnum(g, "slotsTotal", t, sizeof t),
            strcmp(mode, "exclusive") ? " replicas" : "");
    }
    return buf;
}

static const char *workloads_cell(const json_t *g, char *buf, size_t n)
{
    size_t o = 0, j;
    const json_t *u;
    char pod[32];
    buf[0] = 0;
    json_array_foreach(json_object_get(g, "workloads"), j, u)
        cat(buf, n, &o, "%s%s (pod %s)", o ? ", " : "", gx_cli_jstr_or(u, "workload", "?"),
            gx_cli_jnum(u, "pod", pod, sizeof pod));
    return buf;
}

int gx_cli_run_gpus(gx_cli_ctx *c)
{
    json_t *ans = gx_cli_get(&c->http, "/api/v1/gpus");
    if (!ans) return 1;
    int rc = 0, wide = c->out == GX_CLI_OUT_WIDE;
    const json_t *items = json_object_get(ans, "items"), *g;
    if (WANT_JSON(c)) {
        rc = gx_cli_print_json(c, ans);
    } else if (!json_array_size(items)) {
        fputs("No GPUs found (is a node configured? see gpuaas get nodes).\n", stderr);
    } else {
        static const char *const h[] = {"NODE", "INDEX", "MODEL", "MEMORY", "MODE", "SLICES", "UTIL", "MEM-USED",
                                        "WORKLOADS", "UUID"};
        gx_cli_table *t = gx_cli_table_new(wide ? 10 : 9, h);
        size_t i;
        json_array_foreach(items, i, g) {
            char idx[32], sl[512], util[32], used[48], wl[1024];
            const json_t *u = json_object_get(g, "utilization");
            if (json_is_integer(u)) snprintf(util, sizeof util, "%lld%%", (long long)json_integer_value(u));
            else snprintf(util, sizeof util, "-");
            if (json_is_integer(json_object_get(g, "memoryUsedMiB")))
                snprintf(used, sizeof used, "%lldMi", (long long)json_integer_value(json_object_get(g, "memoryUsedMiB")));
            else snprintf(used, sizeof used, "-");
            const char *cells[] = {gx_cli_jstr_or(g, "node", NULL), gx_cli_jnum(g, "index", idx, sizeof idx),
                                   gx_cli_jstr_or(g, "model", NULL), gx_cli_jstr_or(g, "memory", NULL),
                                   gx_cli_jstr_or(g, "mode", "exclusive"), slices_cell(g, sl, sizeof sl), util, used,
                                   workloads_cell(g, wl, sizeof wl), gx_cli_jstr_or(g, "uuid", NULL)};
            if (t) gx_cli_table_add(t, cells);
        }
        if (t) gx_cli_table_print(t, stdout, 0);
        gx_cli_table_free(t);
        if (!wide) {
            int mig = 0;
            json_array_foreach(items, i, g) mig |= !strcmp(gx_cli_jstr_or(g, "mode", ""), "mig");
            if (mig) puts("(* = MIG device in use; -o wide adds UUIDs, -o json the MIG UUIDs and holders)");
        }
    }
    json_decref(ans);
    return rc;
}

/* The -f file as JSON: a mig-parted document (YAML or JSON). */
static json_t *read_parted(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) { fprintf(stderr, "error: cannot read %s\n", path); return NULL; }
    char *buf = gx_xmalloc(1 << 20);
    size_t n = fread(buf, 1, (1 << 20) - 1, f);
    fclose(f);
    buf[n] = 0;
    gx_yaml_docs d;
    gx_err e;
    gx_err_clear(&e);
    json_t *doc = NULL;
    if (gx_yaml_parse(buf, n, &d, &e)) fprintf(stderr, "error: %s:%d: %s\n", path, e.line, e.msg);
    else {
        if (d.n == 1) doc = json_incref(d.docs[0]);
        else fprintf(stderr, "error: %s must hold one mig-parted document\n", path);
        gx_yaml_docs_free(&d);
    }
    free(buf);
    return doc;
}

int gx_cli_run_gpus_mig_apply(gx_cli_ctx *c)
{
    const char *config = c->args.pos[0], *node = gx_opt_get(&c->args, "node");
    const char *file = gx_opt_get(&c->args, "filename");
    json_t *req = json_pack("{s:s}", "config", config);
    if (node) json_object_set_new(req, "node", json_string(node));
    if (file) {
        json_t *doc = read_parted(file);
        if (!doc) { json_decref(req); return 1; }
        json_object_set_new(req, "migConfig", doc);
    }
    char *body = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    if (!body) return 1;
    gx_cli_resp r;
    int rc = 0;
    if (gx_cli_http_call(&c->http, "POST", "/api/v1/gpus/mig", body, strlen(body), "application/json", &r)) {
        rc = gx_cli_http_report(&c->http, &r, NULL);
    } else if (WANT_JSON(c)) {
        rc = gx_cli_print_json(c, r.json);
    } else {
        size_t i;
        json_t *g;
        printf("node %s: MIG config %s applied\n", gx_cli_jstr_or(r.json, "node", "?"), config);
        json_array_foreach(json_object_get(r.json, "gpus"), i, g) {
            char idx[32], devs[32];
            printf("  GPU %s: %s\n", gx_cli_jnum(g, "index", idx, sizeof idx),
                   json_is_true(json_object_get(g, "migEnabled")) ? (snprintf(devs, sizeof devs, "MIG, %lld devices",
                   (long long)json_integer_value(json_object_get(g, "devices"))), devs) : "MIG off");
        }
    }
    free(body);
    gx_cli_resp_free(&r);
    return rc;
}
