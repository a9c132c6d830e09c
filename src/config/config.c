/* config: gpuaas.yaml (see config.h and docs/configuration.md). */
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "config/config.h"
#include "core/place.h"
#include "gpu/devplugin.h"
#include "gpu/mig.h"
#include "lib/alloc.h"
#include "lib/yaml.h"

void gx_config_defaults(gx_config *c)
{
    memset(c, 0, sizeof *c);
    snprintf(c->listen_host, sizeof c->listen_host, "127.0.0.1");
    c->listen_port = 8080;
    snprintf(c->data_dir, sizeof c->data_dir, "data");
    snprintf(c->inventory, sizeof c->inventory, "simulated");
    snprintf(c->placement_policy, sizeof c->placement_policy, GX_PLACE_DEFAULT_POLICY);
    c->nodes = json_array();
    c->manifests = json_array();
    c->max_body_bytes = 1 << 20;
    c->max_workloads = 10000;
    c->max_log_followers = 256;
    /* the HTTP server's connections (docs/configuration.md says why these numbers) */
    c->max_conns = 4096;
    c->max_conns_per_addr = 256;
    gx_run_config_defaults(&c->run);
}

void gx_config_free(gx_config *c)
{
    json_decref(c->nodes);
    json_decref(c->manifests);
    json_decref(c->device_plugin);
    json_decref(c->mig_parted);
    json_decref(c->rsv_limits);
    c->rsv_limits = NULL;
    gx_run_config_free(&c->run);
    c->nodes = c->manifests = c->device_plugin = c->mig_parted = NULL;
}

char *gx_read_file(const char *path, size_t max, size_t *len, gx_err *err)
{
    FILE *f = fopen(path, "rb");
    if (!f) { gx_errf(err, 400, "", "cannot read %s: %s", path, strerror(errno)); return NULL; }
    size_t cap = 65536, n = 0;
    char *buf = gx_xmalloc(cap);
    size_t r;
    while ((r = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += r;
        if (n > max) {
            fclose(f);
            free(buf);
            gx_errf(err, 413, "", "%s is larger than %zu bytes", path, max);
            return NULL;
        }
        if (cap - n - 1 == 0) {
            cap *= 2;
            buf = gx_xrealloc(buf, cap);
        }
    }
    fclose(f);
    buf[n] = 0;
    if (len) *len = n;
    return buf;
}

int gx_config_set_listen(gx_config *c, const char *s, gx_err *err)
{
    const char *colon = strrchr(s, ':');
    if (!colon || colon == s || !colon[1])
        return gx_errf(err, 400, "listen", "\"%s\" is not host:port (e.g. 127.0.0.1:8080)", s);
    char *end;
    long port = strtol(colon + 1, &end, 10);
    if (*end || port < 0 || port > 65535) return gx_errf(err, 400, "listen", "port in \"%s\" is not 0..65535", s);
    size_t hl = (size_t)(colon - s);
    if (hl >= sizeof c->listen_host) return gx_errf(err, 400, "listen", "host too long");
    memcpy(c->listen_host, s, hl);
    c->listen_host[hl] = 0;
    if (!strcmp(c->listen_host, "localhost")) snprintf(c->listen_host, sizeof c->listen_host, "127.0.0.1");
    c->listen_port = (int)port;
    return 0;
}

/* p, relative to dir (the config file's folder) unless absolute, into out; a path that
 * does not fit is refused, naming field, never cut. */
static int resolve(char *out, size_t n, const char *dir, const char *p, const char *field, gx_err *err)
{
    int w = p[0] == '/' || !dir[0] ? snprintf(out, n, "%s", p) : snprintf(out, n, "%s/%s", dir, p);
    if (w < 0 || (size_t)w >= n) return gx_errf(err, 422, field, "the path is longer than %zu bytes", n - 1);
    return 0;
}

static int get_size(const json_t *lim, const char *key, size_t lo, size_t hi, size_t *out, gx_err *err)
{
    const json_t *v = json_object_get(lim, key);
    if (!v) return 0;
    char f[64];
    snprintf(f, sizeof f, "limits.%s", key);
    if (!json_is_integer(v) || json_integer_value(v) < (json_int_t)lo || json_integer_value(v) > (json_int_t)hi)
        return gx_errf(err, 422, f, "must be an integer between %zu and %zu", lo, hi);
    *out = (size_t)json_integer_value(v);
    return 0;
}

/* Load the Node manifests of one inventory file into c->nodes. */
static int load_nodes(gx_config *c, const char *path, gx_err *err)
{
    size_t len;
    char *buf = gx_read_file(path, 4 << 20, &len, err);
    if (!buf) return -1;
    gx_yaml_docs d;
    int rc = gx_yaml_parse(buf, len, &d, err);
    free(buf);
    if (rc) {
        gx_err_wrap(err, "%s:%d", path, err->line);
        err->line = -1; /* the line is in the message; not a line of the config file */
        return -1;
    }
    for (size_t i = 0; i < d.n; i++) {
        const char *kind = json_string_value(json_object_get(d.docs[i], "kind"));
        if (!kind || strcmp(kind, "Node")) {
            gx_errf(err, 422, "kind", "%s:%d: holds a %s; inventory files hold gpuaas.dev/v1alpha1 Node objects",
                    path, d.first_line[i], kind ? kind : "document without kind");
            err->line = -1;
            gx_yaml_docs_free(&d);
            return -1;
        }
        json_array_append(c->nodes, d.docs[i]);
    }
    gx_yaml_docs_free(&d);
    return 0;
}

static int str_list(const json_t *v, const char *field, json_t *out, const char *dir, gx_err *err)
{
    if (!v) return 0;
    if (json_is_string(v)) {
        char p[PATH_MAX];
        if (resolve(p, sizeof p, dir, json_string_value(v), field, err)) return -1;
        json_array_append_new(out, json_string(p));
        return 0;
    }
    if (!json_is_array(v)) return gx_errf(err, 422, field, "must be a file name or a list of file names");
    size_t i;
    json_t *x;
    json_array_foreach(v, i, x) {
        char p[PATH_MAX], f[96];
        snprintf(f, sizeof f, "%s[%zu]", field, i);
        if (!json_is_string(x)) return gx_errf(err, 422, f, "must be a file name");
        if (resolve(p, sizeof p, dir, json_string_value(x), f, err)) return -1;
        json_array_append_new(out, json_string(p));
    }
    return 0;
}

/* One YAML document of a sharing file, checked by `check`; errors carry file:line. */
static json_t *load_doc(const char *path, int (*check)(const json_t *, gx_err *), gx_err *err)
{
    size_t len;
    char *buf = gx_read_file(path, 1 << 20, &len, err);
    if (!buf) return NULL;
    gx_yaml_docs d;
    int rc = gx_yaml_parse(buf, len, &d, err);
    free(buf);
    if (!rc && d.n != 1) {
        gx_yaml_docs_free(&d);
        gx_errf(err, 422, "", "must hold one document");
        rc = -1;
    } else if (!rc && check(d.docs[0], err)) {
        gx_linemap_annotate(d.lines[0], err);
        gx_yaml_docs_free(&d);
        rc = -1;
    }
    if (rc) {
        if (err->field[0]) gx_err_wrap(err, "%s:%d: %s", path, err->line, err->field);
        else gx_err_wrap(err, "%s:%d", path, err->line);
        err->line = -1;
        err->field[0] = 0;   /* the message has it, with the sharing file's line */
        return NULL;
    }
    json_t *doc = json_incref(d.docs[0]);
    gx_yaml_docs_free(&d);
    return doc;
}

/* A device-plugin file: one config, or the GPU Operator's ConfigMap of them. */
static int dp_check(const json_t *doc, gx_err *err)
{
    char def[64];
    json_t *all = gx_gpu_dp_configs(doc, def, sizeof def, err);
    json_decref(all);
    return all ? 0 : -1;
}

/* A file under devicePlugin.configs: one config (a ConfigMap already names its configs). */
static int dp_check_one(const json_t *doc, gx_err *err)
{
    gx_dp_config c;
    if (gx_gpu_dp_is_configmap(doc))
        return gx_errf(err, 422, "kind", "a ConfigMap of configs goes in inventory.devicePlugin as FILE or "
                       "{file: FILE, default: KEY}, not under configs");
    return gx_gpu_dp_parse(doc, &c, err);
}

/* inventory.devicePlugin: FILE | {file: FILE, default: KEY} | {default: KEY, configs: {KEY: FILE}}.
 * FILE is one device-plugin config (its key is "default") or the GPU Operator's ConfigMap;
 * without a default the ConfigMap's is picked as the plugin's config manager picks it. */
static int device_plugin(gx_config *c, const json_t *v, const char *dir, gx_err *err)
{
    const json_t *cfgs = json_is_object(v) ? json_object_get(v, "configs") : NULL;
    const char *file = json_is_string(v) ? json_string_value(v) : json_string_value(json_object_get(v, "file"));
    const json_t *dj = json_is_object(v) ? json_object_get(v, "default") : NULL;
    char p[PATH_MAX], def[64] = "";
    if ((!file && !json_is_object(cfgs)) || (file && cfgs))
        return gx_errf(err, 422, "inventory.devicePlugin", "must be a file, {file: FILE, default: KEY}, or "
                       "{default: KEY, configs: {KEY: file}}");
    if (dj && (!json_is_string(dj) || json_string_length(dj) >= sizeof def))
        return gx_errf(err, 422, "inventory.devicePlugin.default", "must be the name of a config (at most %zu characters)",
                       sizeof def - 1);
    if (file) {
        if (resolve(p, sizeof p, dir, file, "inventory.devicePlugin", err)) return -1;
        json_t *doc = load_doc(p, dp_check, err);
        if (!doc) return -1;
        c->device_plugin = gx_gpu_dp_configs(doc, def, sizeof def, err);   /* checked by load_doc */
        json_decref(doc);
        if (!c->device_plugin) return -1;
    } else {
        const char *k;
        json_t *x;
        c->device_plugin = json_object();
        json_object_foreach((json_t *)cfgs, k, x) {
            if (!json_is_string(x)) return gx_errf(err, 422, "inventory.devicePlugin.configs", "%s: must be a file", k);
            if (resolve(p, sizeof p, dir, json_string_value(x), "inventory.devicePlugin.configs", err)) return -1;
            json_t *doc = load_doc(p, dp_check_one, err);
            if (!doc) return -1;
            json_object_set_new(c->device_plugin, k, doc);
        }
    }
    if (dj) {
        const char *want = json_string_value(dj);
        if (*want && !json_object_get(c->device_plugin, want))
            return gx_errf(err, 422, "inventory.devicePlugin.default", "\"%s\" is not one of the configs", want);
        snprintf(def, sizeof def, "%s", want);
    }
    snprintf(c->device_plugin_default, sizeof c->device_plugin_default, "%s", def);
    return 0;
}

/* inventory.{nvmlLibrary, devicePlugin, migConfig, mpsRoot, placementPolicy} (docs/gpu-sharing.md).
 * devicePlugin: see device_plugin(); migConfig: FILE | {file, default}. */
static int gpu_settings(gx_config *c, const json_t *inv, const char *dir, gx_err *err)
{
    static const char *known[] = {"source", "nodes", "nvmlLibrary", "devicePlugin", "migConfig", "mpsRoot",
                                  "placementPolicy", NULL};
    const char *k;
    json_t *v;
    char p[PATH_MAX];
    json_object_foreach((json_t *)inv, k, v) {
        int ok = 0;
        for (int i = 0; known[i]; i++) ok |= !strcmp(k, known[i]);
        char f[96];
        snprintf(f, sizeof f, "inventory.%s", k);
        if (!ok) return gx_errf(err, 422, f, "unknown setting (known: source, nodes, nvmlLibrary, devicePlugin, "
                                "migConfig, mpsRoot, placementPolicy)");
    }
    if ((v = json_object_get(inv, "nvmlLibrary"))) {
        if (!json_is_string(v)) return gx_errf(err, 422, "inventory.nvmlLibrary", "must be a file name");
        /* a bare soname goes through the library search; a path is taken relative to the file */
        if (strchr(json_string_value(v), '/')) {
            if (resolve(c->nvml_library, sizeof c->nvml_library, dir, json_string_value(v), "inventory.nvmlLibrary", err))
                return -1;
        } else if (resolve(c->nvml_library, sizeof c->nvml_library, "", json_string_value(v), "inventory.nvmlLibrary", err)) {
            return -1;
        }
    }
    if ((v = json_object_get(inv, "mpsRoot"))) {
        if (!json_is_string(v)) return gx_errf(err, 422, "inventory.mpsRoot", "must be a folder name");
        if (resolve(c->mps_root, sizeof c->mps_root, dir, json_string_value(v), "inventory.mpsRoot", err)) return -1;
    }
    if ((v = json_object_get(inv, "placementPolicy"))) {
        if (!json_is_string(v) || !gx_place_policy_by_name(json_string_value(v)))
            return gx_errf(err, 422, "inventory.placementPolicy", "must be one of %s", gx_place_policy_names());
        snprintf(c->placement_policy, sizeof c->placement_policy, "%s", json_string_value(v));
    }
    if ((v = json_object_get(inv, "devicePlugin")) && device_plugin(c, v, dir, err)) return -1;
    if ((v = json_object_get(inv, "migConfig"))) {
        const char *file = json_is_string(v) ? json_string_value(v) : json_string_value(json_object_get(v, "file"));
        const char *def = json_is_object(v) ? json_string_value(json_object_get(v, "default")) : NULL;
        if (!file) return gx_errf(err, 422, "inventory.migConfig", "must be a mig-parted file, or {file, default}");
        if (resolve(p, sizeof p, dir, file, "inventory.migConfig", err)) return -1;
        if (!(c->mig_parted = load_doc(p, gx_gpu_mig_config_check, err))) return -1;
        if (def && !json_object_get(json_object_get(c->mig_parted, "mig-configs"), def))
            return gx_errf(err, 422, "inventory.migConfig.default", "%s has no config named %s", p, def);
        snprintf(c->mig_default, sizeof c->mig_default, "%s", def ? def : "");
    }
    return 0;
}

/* One number of reservations.limits.NS: a positive number, kept as given. */
static int rsv_limit_num(const json_t *lim, const char *ns, const char *key, json_t *out, gx_err *err)
{
    const json_t *v = json_object_get(lim, key);
    if (!v) return 0;
    char f[160];
    snprintf(f, sizeof f, "reservations.limits.%.63s.%s", ns, key);
    if (!json_is_number(v) || json_number_value(v) <= 0 || json_number_value(v) > 1e9)
        return gx_errf(err, 422, f, "must be a positive number");
    json_object_set_new(out, key, json_real(json_number_value(v)));
    return 0;
}

/* reservations: {limits: {NS: {gpusAtOnce, gpuHoursPerWeek}}}: the admins' per-namespace
 * booking limits (docs/configuration.md), checked here so a typo names its line. */
static int rsv_limits(gx_config *c, const json_t *v, gx_err *err)
{
    if (!json_is_object(v)) return gx_errf(err, 422, "reservations", "must be a mapping {limits}");
    const char *k;
    const json_t *x;
    json_object_foreach((json_t *)v, k, x)
        if (strcmp(k, "limits")) return gx_errf(err, 422, "reservations", "unknown setting %s (known: limits)", k);
    const json_t *lims = json_object_get(v, "limits");
    if (!lims) return 0;
    if (!json_is_object(lims)) return gx_errf(err, 422, "reservations.limits", "must be a mapping {NAMESPACE: {gpusAtOnce, gpuHoursPerWeek}}");
    json_t *out = json_object();
    json_object_foreach((json_t *)lims, k, x) {
        char f[160];
        snprintf(f, sizeof f, "reservations.limits.%.63s", k);
        int bad = !json_is_object(x) ? gx_errf(err, 422, f, "must be a mapping {gpusAtOnce, gpuHoursPerWeek}") : 0;
        const char *kk;
        const json_t *y;
        if (!bad)
            json_object_foreach((json_t *)x, kk, y)
                if (!bad && strcmp(kk, "gpusAtOnce") && strcmp(kk, "gpuHoursPerWeek"))
                    bad = gx_errf(err, 422, f, "unknown limit %s (known: gpusAtOnce, gpuHoursPerWeek)", kk);
        json_t *one = json_object();
        if (!bad) bad = rsv_limit_num(x, k, "gpusAtOnce", one, err) || rsv_limit_num(x, k, "gpuHoursPerWeek", one, err);
        if (bad) { json_decref(one); json_decref(out); return -1; }
        json_object_set_new(out, k, one);
    }
    json_decref(c->rsv_limits);
    c->rsv_limits = out;
    return 0;
}

static int apply_doc(gx_config *c, const json_t *doc, const char *dir, gx_err *err)
{
    static const char *known[] = {"apiVersion", "kind", "listen", "dataDir", "inventory", "manifests",
                                  "fairSharing", "limits", "run", "reservations", NULL};
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)doc, k, v) {
        int ok = 0;
        for (int i = 0; known[i]; i++) ok |= !strcmp(k, known[i]);
        if (!ok) return gx_errf(err, 422, k, "unknown setting (known: listen, dataDir, inventory, manifests, fairSharing, limits, run, reservations)");
    }
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    if (kind && strcmp(kind, "ServerConfig")) return gx_errf(err, 422, "kind", "expected ServerConfig, got %s", kind);
    if ((v = json_object_get(doc, "listen"))) {
        if (!json_is_string(v)) return gx_errf(err, 422, "listen", "must be \"host:port\"");
        if (gx_config_set_listen(c, json_string_value(v), err)) return -1;
    }
    if ((v = json_object_get(doc, "dataDir"))) {
        if (!json_is_string(v) || !json_string_length(v)) return gx_errf(err, 422, "dataDir", "must be a folder name");
        if (resolve(c->data_dir, sizeof c->data_dir, dir, json_string_value(v), "dataDir", err)) return -1;
    }
    if ((v = json_object_get(doc, "fairSharing"))) {
        const json_t *en = json_is_object(v) ? json_object_get(v, "enable") : v;
        if (!json_is_boolean(en)) return gx_errf(err, 422, "fairSharing", "must be true/false or {enable: bool}");
        c->fair_sharing = json_is_true(en);
    }
    if ((v = json_object_get(doc, "inventory"))) {
        if (!json_is_object(v)) return gx_errf(err, 422, "inventory", "must be a mapping {source, nodes}");
        const char *src = json_string_value(json_object_get(v, "source"));
        if (src) {
            if (strcmp(src, "simulated") && strcmp(src, "nvml") && strcmp(src, "auto"))
                return gx_errf(err, 422, "inventory.source", "\"%s\" is not a source: simulated, nvml or auto", src);
            snprintf(c->inventory, sizeof c->inventory, "%s", src);
        }
        if (gpu_settings(c, v, dir, err)) return -1;
        json_t *files = json_array();
        if (str_list(json_object_get(v, "nodes"), "inventory.nodes", files, dir, err)) { json_decref(files); return -1; }
        size_t i;
        json_t *f;
        json_array_foreach(files, i, f) {
            if (load_nodes(c, json_string_value(f), err)) {
                json_decref(files);
                return -1;
            }
        }
        json_decref(files);
    }
    if (str_list(json_object_get(doc, "manifests"), "manifests", c->manifests, dir, err)) return -1;
    if ((v = json_object_get(doc, "run")) && gx_run_config_load(&c->run, v, dir, geteuid(), err)) return -1;
    if ((v = json_object_get(doc, "reservations")) && rsv_limits(c, v, err)) return -1;
    if ((v = json_object_get(doc, "limits"))) {
        if (!json_is_object(v)) return gx_errf(err, 422, "limits", "must be a mapping");
        if (get_size(v, "maxBodyBytes", 1024, (size_t)64 << 20, &c->max_body_bytes, err) ||
            get_size(v, "maxWorkloads", 1, 1000000, &c->max_workloads, err) ||
            get_size(v, "maxLogFollowers", 1, 10000, &c->max_log_followers, err) ||
            get_size(v, "maxConnections", 1, 65536, &c->max_conns, err) ||
            get_size(v, "maxConnectionsPerAddress", 1, 65536, &c->max_conns_per_addr, err))
            return -1;
        static const char *limit_keys[] = {"maxBodyBytes", "maxWorkloads", "maxLogFollowers", "maxConnections",
                                           "maxConnectionsPerAddress", NULL};
        json_t *x;   /* not v: the loop reads its object again after each value */
        json_object_foreach(v, k, x) {
            int ok = 0;
            for (int i = 0; limit_keys[i]; i++) ok |= !strcmp(k, limit_keys[i]);
            if (!ok) {
                char f[96];
                snprintf(f, sizeof f, "limits.%s", k);
                return gx_errf(err, 422, f, "unknown limit (known: maxBodyBytes, maxWorkloads, maxLogFollowers, "
                               "maxConnections, maxConnectionsPerAddress)");
            }
        }
    }
    return 0;
}

int gx_config_load(gx_config *c, const char *path, gx_err *err)
{
    if (strlen(path) >= sizeof c->path) return gx_errf(err, 400, "", "the config file's path is longer than %zu bytes",
                                                       sizeof c->path - 1);
    snprintf(c->path, sizeof c->path, "%s", path);
    char dirbuf[PATH_MAX];
    snprintf(dirbuf, sizeof dirbuf, "%s", path);
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", dirname(dirbuf));
    size_t len;
    char *buf = gx_read_file(path, 1 << 20, &len, err);
    if (!buf) return -1;
    gx_yaml_docs d;
    int rc = gx_yaml_parse(buf, len, &d, err);
    free(buf);
    if (rc) return -1;
    if (d.n != 1 || !json_is_object(d.docs[0])) {
        gx_yaml_docs_free(&d);
        return gx_errf(err, 422, "", "%s must hold one ServerConfig mapping", path);
    }
    rc = apply_doc(c, d.docs[0], dir, err);
    if (rc) {
        if (err->line < 0) err->line = 0;
        else gx_linemap_annotate(d.lines[0], err);
    }
    gx_yaml_docs_free(&d);
    return rc;
}
