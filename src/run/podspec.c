/* podspec: reading the process side of a batch/v1 Job (see podspec.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/alloc.h"
#include "run/podspec.h"

static const json_t *path_get(const json_t *v, const char *const *keys)
{
    for (; *keys && v; keys++) v = json_object_get(v, *keys);
    return v;
}

static int read_int(const json_t *spec, const char *key, int def, int lo, int hi, const char *field,
                    int *out, gx_err *err)
{
    const json_t *v = json_object_get(spec, key);
    if (!v || json_is_null(v)) { *out = def; return 0; }
    if (!json_is_integer(v)) return gx_errf(err, 422, field, "must be an integer");
    json_int_t x = json_integer_value(v);
    if (x < lo || x > hi) return gx_errf(err, 422, field, "must be between %d and %d (got %lld)", lo, hi, (long long)x);
    *out = (int)x;
    return 0;
}

static int check_strings(const json_t *arr, const char *field, gx_err *err)
{
    if (!arr) return 0;
    if (!json_is_array(arr)) return gx_errf(err, 422, field, "must be a list of strings");
    if (json_array_size(arr) > GX_POD_MAX_ARGS) return gx_errf(err, 422, field, "more than %d entries", GX_POD_MAX_ARGS);
    size_t i;
    json_t *x;
    json_array_foreach(arr, i, x) {
        if (!json_is_string(x)) {
            char f[160];
            snprintf(f, sizeof f, "%s[%zu]", field, i);
            return gx_errf(err, 422, f, "must be a string (quote numbers: \"60\")");
        }
        if (json_string_length(x) > 65536) return gx_errf(err, 422, field, "argument longer than 64 KiB");
    }
    return 0;
}

/* Local mode never grants privileges (docs/security.md): a container that asks for them
 * is refused rather than run without what it asked for. */
static int check_security(const json_t *c, const char *base, gx_err *err)
{
    const json_t *sc = json_object_get(c, "securityContext");
    char f[224];
    if (json_is_true(json_object_get(sc, "privileged"))) {
        snprintf(f, sizeof f, "%s.containers[0].securityContext.privileged", base);
        return gx_errf(err, 422, f, "privileged containers are not run: pods are sandboxed (docs/security.md)");
    }
    const json_t *add = json_object_get(json_object_get(sc, "capabilities"), "add");
    if (json_array_size(add)) {
        snprintf(f, sizeof f, "%s.containers[0].securityContext.capabilities.add", base);
        return gx_errf(err, 422, f, "pods run with no capabilities (docs/security.md)");
    }
    return 0;
}

int gx_podspec_read(const json_t *job, gx_podspec *out, gx_err *err)
{
    memset(out, 0, sizeof *out);
    const char *kind = json_string_value(json_object_get(job, "kind"));
    const json_t *spec = json_object_get(job, "spec");
    const json_t *podspec;
    const char *base;
    if (kind && !strcmp(kind, "Workload")) {
        const json_t *ps = json_array_get(json_object_get(spec, "podSets"), 0);
        podspec = path_get(ps, (const char *[]){"template", "spec", NULL});
        base = "spec.podSets[0].template.spec";
        int count = 1;
        if (read_int(ps, "count", 1, 1, GX_POD_MAX_PODS, "spec.podSets[0].count", &count, err)) return -1;
        out->parallelism = out->completions = count;
        out->backoff_limit = 0;
    } else {
        if (!json_is_object(spec)) return gx_errf(err, 422, "spec", "a Job needs a spec");
        podspec = path_get(spec, (const char *[]){"template", "spec", NULL});
        base = "spec.template.spec";
        if (read_int(spec, "parallelism", 1, 1, GX_POD_MAX_PODS, "spec.parallelism", &out->parallelism, err) ||
            read_int(spec, "completions", out->parallelism, 1, 100000, "spec.completions", &out->completions, err) ||
            read_int(spec, "backoffLimit", 6, 0, 1000, "spec.backoffLimit", &out->backoff_limit, err))
            return -1;
        if (out->parallelism > out->completions) out->parallelism = out->completions;
    }
    char f[192];
    if (!json_is_object(podspec)) return gx_errf(err, 422, base, "missing pod template spec");
    const json_t *containers = json_object_get(podspec, "containers");
    snprintf(f, sizeof f, "%s.containers", base);
    if (!json_is_array(containers) || json_array_size(containers) == 0)
        return gx_errf(err, 422, f, "a pod needs one container");
    if (json_array_size(containers) > 1)
        return gx_errf(err, 422, f, "local mode runs one container per pod (found %zu)", json_array_size(containers));
    const json_t *c = json_array_get(containers, 0);
    out->container = c;
    if (check_security(c, base, err)) return -1;
    out->image = json_string_value(json_object_get(c, "image"));
    snprintf(f, sizeof f, "%s.containers[0].command", base);
    const json_t *cmd = json_object_get(c, "command");
    if (!cmd || !json_is_array(cmd) || json_array_size(cmd) == 0)
        return gx_errf(err, 422, f, "local mode runs processes, so the container needs a command "
                       "(the image's entrypoint is not known here)");
    if (check_strings(cmd, f, err)) return -1;
    snprintf(f, sizeof f, "%s.containers[0].args", base);
    if (check_strings(json_object_get(c, "args"), f, err)) return -1;
    const json_t *env = json_object_get(c, "env");
    snprintf(f, sizeof f, "%s.containers[0].env", base);
    if (env) {
        if (!json_is_array(env) || json_array_size(env) > GX_POD_MAX_ENV)
            return gx_errf(err, 422, f, "must be a list of at most %d {name, value}", GX_POD_MAX_ENV);
        size_t i;
        json_t *e;
        json_array_foreach(env, i, e) {
            const char *name = json_string_value(json_object_get(e, "name"));
            const json_t *val = json_object_get(e, "value");
            char fe[224];
            snprintf(fe, sizeof fe, "%s[%zu]", f, i);
            if (!name || !*name || strchr(name, '='))
                return gx_errf(err, 422, fe, "env entries need a name without '='");
            if (json_object_get(e, "valueFrom"))
                return gx_errf(err, 422, fe, "valueFrom is not supported in local mode; give a value");
            if (val && !json_is_string(val))
                return gx_errf(err, 422, fe, "value must be a string (quote numbers)");
        }
    }
    const json_t *wd = json_object_get(c, "workingDir");
    if (wd && !json_is_string(wd)) {
        snprintf(f, sizeof f, "%s.containers[0].workingDir", base);
        return gx_errf(err, 422, f, "must be a string");
    }
    out->working_dir = json_string_value(wd);
    int grace = 30;
    snprintf(f, sizeof f, "%s.terminationGracePeriodSeconds", base);
    if (read_int(podspec, "terminationGracePeriodSeconds", 30, 0, 3600, f, &grace, err)) return -1;
    out->grace_ms = (int64_t)grace * 1000;
    out->base = base;
    return gx_podspec_read_volumes(podspec, c, base, out, err);
}

/* Append s (already malloc'd, owned by the vector) and keep the NULL at the end. */
static void vec_push(char ***v, size_t *n, char *s)
{
    char **nv = gx_xreallocarray(*v, *n + 2, sizeof *nv);
    nv[(*n)++] = s;
    nv[*n] = NULL;
    *v = nv;
}

char **gx_podspec_argv(const gx_podspec *ps)
{
    char **v = NULL;
    size_t n = 0;
    const char *lists[] = {"command", "args"};
    for (int l = 0; l < 2; l++) {
        const json_t *arr = json_object_get(ps->container, lists[l]);
        size_t i;
        json_t *x;
        json_array_foreach(arr, i, x) vec_push(&v, &n, gx_xstrdup(json_string_value(x)));
    }
    return v;
}

static char *kv(const char *k, const char *val)
{
    size_t n = strlen(k) + strlen(val) + 2;
    char *s = gx_xmalloc(n);
    snprintf(s, n, "%s=%s", k, val);
    return s;
}

static int env_defines(const json_t *env, const char *name)
{
    size_t i;
    json_t *e;
    json_array_foreach(env, i, e) {
        const char *k = json_string_value(json_object_get(e, "name"));
        if (k && !strcmp(k, name)) return 1;
    }
    return 0;
}

char **gx_podspec_envp(const gx_podspec *ps, const char *key, int index, const char *gpu_uuids,
                       const char *const *extra_env, const char *home)
{
    char **v = NULL;
    size_t n = 0;
    /* A small, predictable base: what a shell needs, nothing of the daemon's secrets. A
     * sandboxed pod is not the daemon's user: its HOME is its own folder, its /tmp its own,
     * and it gets no USER of the daemon's. */
    const char *keep[] = {"PATH", "HOME", "LANG", "LC_ALL", "TZ", "USER", "TMPDIR", NULL};
    const json_t *env = json_object_get(ps->container, "env");
    for (int i = 0; keep[i]; i++) {
        if (env_defines(env, keep[i])) continue; /* the Job's own value wins */
        if (home && (!strcmp(keep[i], "USER") || !strcmp(keep[i], "TMPDIR"))) continue;
        const char *val = home && !strcmp(keep[i], "HOME") ? home : getenv(keep[i]);
        if (val) vec_push(&v, &n, kv(keep[i], val));
    }
    if (!getenv("PATH")) vec_push(&v, &n, kv("PATH", "/usr/local/bin:/usr/bin:/bin"));
    char idx[16];
    snprintf(idx, sizeof idx, "%d", index);
    vec_push(&v, &n, kv("GPUAAS_WORKLOAD", key));
    vec_push(&v, &n, kv("GPUAAS_POD_INDEX", idx));
    vec_push(&v, &n, kv("JOB_COMPLETION_INDEX", idx));
    /* No GPU asked means no GPU visible, as the device plugin does. */
    vec_push(&v, &n, kv("CUDA_VISIBLE_DEVICES", gpu_uuids));
    vec_push(&v, &n, kv("NVIDIA_VISIBLE_DEVICES", *gpu_uuids ? gpu_uuids : "void"));
    /* before the Job's own env: getenv() takes the first, so a Job cannot override them */
    for (int i = 0; extra_env && extra_env[i]; i++) vec_push(&v, &n, gx_xstrdup(extra_env[i]));
    size_t i;
    json_t *e;
    json_array_foreach(env, i, e) {
        const char *val = json_string_value(json_object_get(e, "value"));
        vec_push(&v, &n, kv(json_string_value(json_object_get(e, "name")), val ? val : ""));
    }
    return v;
}

void gx_podspec_free_vec(char **v)
{
    if (!v) return;
    for (char **p = v; *p; p++) free(*p);
    free(v);
}
