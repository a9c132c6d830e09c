/* gpu/devplugin_cm: the GPU Operator's ConfigMap of device-plugin configs (see devplugin.h).
 * Owns: reading a ConfigMap (apiVersion: v1, kind: ConfigMap, data: {KEY: "<YAML>"}) into
 * its checked configs, and picking the default entry as the plugin's config manager does.
 * Must not: read files (the caller hands in the parsed document) or keep state. */
#include <stdio.h>
#include <string.h>
#include "gpu/devplugin.h"
#include "lib/yaml.h"

int gx_gpu_dp_is_configmap(const json_t *doc)
{
    const char *kind = json_string_value(json_object_get(doc, "kind"));
    return kind && !strcmp(kind, "ConfigMap");
}

/* A ConfigMap key as the API server allows it ([-._a-zA-Z0-9]+), and short enough for a
 * node label value to name it (63). */
static int key_ok(const char *k)
{
    size_t n = strlen(k);
    if (!n || n > 63 || !strcmp(k, ".") || !strcmp(k, "..")) return 0;
    for (size_t i = 0; i < n; i++) {
        char ch = k[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
              ch == '_' || ch == '.'))
            return 0;
    }
    return 1;
}

/* One data entry: YAML text holding one config. On error the entry's own field and line
 * go into the message and the field becomes data.KEY, so the caller's line map finds the
 * line of the key in the ConfigMap. */
static json_t *entry(const char *key, const char *text, gx_err *err)
{
    char f[96], where[256];
    gx_err_path(f, sizeof f, "data", "data.%s", key);
    gx_yaml_docs d;
    gx_err_clear(err);
    if (gx_yaml_parse(text, strlen(text), &d, err)) {
        gx_err_wrap(err, "line %d of the entry", err->line);
    } else if (d.n != 1) {
        gx_yaml_docs_free(&d);
        gx_errf(err, 422, f, "must hold one device-plugin config (it holds %zu documents)", d.n);
        return NULL;
    } else {
        gx_dp_config c;
        if (!gx_gpu_dp_parse(d.docs[0], &c, err)) {
            json_t *doc = json_incref(d.docs[0]);
            gx_yaml_docs_free(&d);
            return doc;
        }
        gx_linemap_annotate(d.lines[0], err);
        gx_yaml_docs_free(&d);
        if (err->field[0]) snprintf(where, sizeof where, "%s (line %d of the entry)", err->field, err->line);
        else snprintf(where, sizeof where, "line %d of the entry", err->line);
        gx_err_wrap(err, "%s", where);
    }
    snprintf(err->field, sizeof err->field, "%s", f);
    err->line = 0;
    return NULL;
}

static json_t *configmap(const json_t *doc, gx_err *err)
{
    static const char *const known[] = {"apiVersion", "kind", "metadata", "data", "binaryData", "immutable", NULL};
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)doc, k, v) {
        int ok = 0;
        for (int i = 0; known[i]; i++) ok |= !strcmp(k, known[i]);
        if (!ok) return gx_errf(err, 422, k, "unknown field of a ConfigMap (known: apiVersion, kind, metadata, data)"), NULL;
    }
    const char *api = json_string_value(json_object_get(doc, "apiVersion"));
    if (!api || strcmp(api, "v1")) return gx_errf(err, 422, "apiVersion", "a ConfigMap is apiVersion: v1"), NULL;
    if (json_object_get(doc, "binaryData"))
        return gx_errf(err, 422, "binaryData", "device-plugin configs are text: put them under data"), NULL;
    const json_t *data = json_object_get(doc, "data");
    if (!json_is_object(data) || !json_object_size(data))
        return gx_errf(err, 422, "data", "must map names to device-plugin configs (data: {any: \"version: v1 ...\"})"), NULL;
    json_t *out = json_object();
    json_object_foreach((json_t *)data, k, v) {
        char f[96];
        gx_err_path(f, sizeof f, "data", "data.%s", k);
        if (!key_ok(k)) {
            json_decref(out);
            return gx_errf(err, 422, f, "a config's name is letters, digits, '-', '_' and '.', at most 63 "
                           "(a node's nvidia.com/device-plugin.config label names it)"), NULL;
        }
        if (!json_is_string(v)) {
            json_decref(out);
            return gx_errf(err, 422, f, "must be the device-plugin config as text (key: |, then the YAML)"), NULL;
        }
        json_t *c = entry(k, json_string_value(v), err);
        if (!c) {
            json_decref(out);
            return NULL;
        }
        json_object_set_new(out, k, c);
    }
    return out;
}

json_t *gx_gpu_dp_configs(const json_t *doc, char *def, size_t n, gx_err *err)
{
    json_t *out;
    if (gx_gpu_dp_is_configmap(doc)) {
        if (!(out = configmap(doc, err))) return NULL;
    } else {
        gx_dp_config c;
        if (gx_gpu_dp_parse(doc, &c, err)) return NULL;
        out = json_object();
        json_object_set(out, "default", (json_t *)doc);
    }
    /* the config manager's fallbacks, in its default order: "named" then "single" */
    if (json_object_get(out, "default")) snprintf(def, n, "default");
    else if (json_object_size(out) == 1) snprintf(def, n, "%s", json_object_iter_key(json_object_iter(out)));
    else snprintf(def, n, "%s", "");
    return out;
}
