/* run_config: the `run:` section of gpuaas.yaml (see run_config.h). */
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "run/run_config.h"
#include "core/quantity.h"
#include "lib/k8sname.h"
#include "lib/path.h"

#define DEFAULT_UID_LO 2000000000u
#define DEFAULT_UID_HI 2000999999u

void gx_run_config_defaults(gx_run_config *r)
{
    memset(r, 0, sizeof *r);
    r->sandbox = 1;
    r->uid_lo = DEFAULT_UID_LO;
    r->uid_hi = DEFAULT_UID_HI;
    snprintf(r->cgroup_parent, sizeof r->cgroup_parent, "gpuaas");
    r->tmp_bytes = (int64_t)1 << 30;
    r->pids_max = 4096;
    snprintf(r->device_dir, sizeof r->device_dir, "/dev");
    r->namespaces = json_object();
}

void gx_run_config_free(gx_run_config *r)
{
    json_decref(r->namespaces);
    r->namespaces = NULL;
}

/* A byte quantity ("1Gi", "512Mi", 1048576) into *out, within [lo, hi]. */
static int get_bytes(const json_t *v, const char *field, int64_t lo, int64_t hi, int64_t *out, gx_err *err)
{
    int64_t milli;
    if (gx_quantity_from_json(v, &milli, field, err)) return -1;
    int64_t b = milli / 1000;
    if (milli % 1000 || b < lo || b > hi)
        return gx_errf(err, 422, field, "must be a whole number of bytes between %lld and %lld (e.g. 1Gi)",
                       (long long)lo, (long long)hi);
    *out = b;
    return 0;
}

/* An absolute path into out (at most n bytes, never cut), without "." or ".." parts, so
 * that a prefix test on it means what it says. */
static int get_abs_path(const json_t *v, const char *field, char *out, size_t n, gx_err *err)
{
    const char *s = json_string_value(v);
    if (!s || s[0] != '/') return gx_errf(err, 422, field, "must be an absolute path");
    if (strlen(s) >= n) return gx_errf(err, 422, field, "is longer than %zu bytes", n - 1);
    if (!gx_path_clean_abs(s)) return gx_errf(err, 422, field, "must not contain \".\" or \"..\" parts");
    size_t l = strlen(s);
    while (l > 1 && s[l - 1] == '/') l--; /* "/data/" and "/data" are the same folder */
    memcpy(out, s, l);
    out[l] = 0;
    return 0;
}

/* "LO-HI" with 0 < LO <= HI < 2^31 (uids above are read as negative by too many tools). */
static int get_uid_range(const json_t *v, gx_run_config *r, gx_err *err)
{
    const char *s = json_string_value(v);
    char *end;
    errno = 0;
    unsigned long lo = s ? strtoul(s, &end, 10) : 0, hi = 0;
    if (s && *end == '-') hi = strtoul(end + 1, &end, 10);
    if (!s || *end || errno || lo == 0 || hi < lo || hi > INT32_MAX - 1)
        return gx_errf(err, 422, "run.uidRange", "must be \"LOW-HIGH\" with 0 < LOW <= HIGH < 2147483647 "
                       "(e.g. \"2000000000-2000999999\")");
    r->uid_lo = (uid_t)lo;
    r->uid_hi = (uid_t)hi;
    return 0;
}

/* A uid or gid given as a number, or (runAsUser only) as an account name. */
static int get_id(const json_t *v, const char *field, int is_user, uid_t daemon_uid, int64_t *out, gx_err *err)
{
    int64_t id = -1;
    if (json_is_integer(v)) id = json_integer_value(v);
    else if (is_user && json_is_string(v)) {
        struct passwd *pw = getpwnam(json_string_value(v));
        if (!pw) return gx_errf(err, 422, field, "no account named \"%s\" on this host", json_string_value(v));
        id = pw->pw_uid;
    } else return gx_errf(err, 422, field, is_user ? "must be a uid or an account name" : "must be a gid");
    if (id <= 0 || id > INT32_MAX - 1)
        return gx_errf(err, 422, field, "must be between 1 and 2147483646: pods never run as root");
    if (is_user && (uid_t)id == daemon_uid)
        return gx_errf(err, 422, field, "is the daemon's own uid (%lld): a pod running as the daemon could read its "
                       "secrets", (long long)id);
    *out = id;
    return 0;
}

static int load_host_paths(const json_t *list, const char *ns, json_t *out, gx_err *err)
{
    char f[160];
    snprintf(f, sizeof f, "run.namespaces.%s.hostPaths", ns);
    if (!json_is_array(list)) return gx_errf(err, 422, f, "must be a list of {path, readOnly}");
    if (json_array_size(list) > 64) return gx_errf(err, 422, f, "more than 64 entries");
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x) {
        char fi[200], fp[220];
        snprintf(fi, sizeof fi, "%s[%zu]", f, i);
        snprintf(fp, sizeof fp, "%s.path", fi);
        const json_t *path = json_is_string(x) ? x : json_object_get(x, "path");
        const json_t *ro = json_is_object(x) ? json_object_get(x, "readOnly") : NULL;
        const char *k;
        json_t *v;
        if (json_is_object(x))
            json_object_foreach((json_t *)x, k, v)
                if (strcmp(k, "path") && strcmp(k, "readOnly"))
                    return gx_errf(err, 422, fi, "unknown field %s (known: path, readOnly)", k);
        if (!json_is_string(path) && !json_is_object(x)) return gx_errf(err, 422, fi, "must be a path or {path, readOnly}");
        char p[PATH_MAX];
        if (get_abs_path(path, fp, p, sizeof p, err)) return -1;
        if (!strcmp(p, "/")) return gx_errf(err, 422, fp, "the whole host cannot be a host path");
        if (ro && !json_is_boolean(ro)) {
            snprintf(fp, sizeof fp, "%s.readOnly", fi);
            return gx_errf(err, 422, fp, "must be true or false");
        }
        json_array_append_new(out, json_pack("{s:s,s:b}", "path", p, "readOnly", ro && json_is_true(ro)));
    }
    return 0;
}

static int load_namespace(gx_run_config *r, const char *ns, const json_t *v, uid_t daemon_uid, gx_err *err)
{
    char f[128];
    snprintf(f, sizeof f, "run.namespaces.%.63s", ns);
    if (gx_k8s_check_label(ns, GX_K8S_LABEL_MAX, "run.namespaces", err)) return -1;
    if (!json_is_object(v)) return gx_errf(err, 422, f, "must be a mapping {runAsUser, runAsGroup, hostPaths}");
    json_t *o = json_object();
    json_object_set_new(r->namespaces, ns, o);
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x) {
        char fk[200];
        snprintf(fk, sizeof fk, "%s.%.60s", f, k);
        int64_t id;
        if (!strcmp(k, "runAsUser")) {
            if (get_id(x, fk, 1, daemon_uid, &id, err)) return -1;
            json_object_set_new(o, "uid", json_integer(id));
        } else if (!strcmp(k, "runAsGroup")) {
            if (get_id(x, fk, 0, daemon_uid, &id, err)) return -1;
            json_object_set_new(o, "gid", json_integer(id));
        } else if (!strcmp(k, "hostPaths")) {
            json_t *hp = json_array();
            json_object_set_new(o, "hostPaths", hp);
            if (load_host_paths(x, ns, hp, err)) return -1;
        } else {
            return gx_errf(err, 422, fk, "unknown setting (known: runAsUser, runAsGroup, hostPaths)");
        }
    }
    if (json_object_get(o, "gid") && !json_object_get(o, "uid"))
        return gx_errf(err, 422, f, "runAsGroup needs runAsUser");
    if (json_object_get(o, "uid") && !json_object_get(o, "gid")) {
        /* the account's own group, or a group of the uid's number */
        struct passwd *pw = getpwuid((uid_t)json_integer_value(json_object_get(o, "uid")));
        json_object_set_new(o, "gid", json_integer(pw ? (json_int_t)pw->pw_gid : json_integer_value(json_object_get(o, "uid"))));
        if (!json_integer_value(json_object_get(o, "gid")))
            return gx_errf(err, 422, f, "the account's group is gid 0: set runAsGroup");
    }
    return 0;
}

int gx_run_config_load(gx_run_config *r, const json_t *run, const char *dir, uid_t daemon_uid, gx_err *err)
{
    static const char *known[] = {"sandbox", "uidRange", "cgroupParent", "tmpSize", "pidsLimit", "defaultMemory",
                                  "deviceDir", "workDir", "namespaces", "cudaShim", NULL};
    if (!json_is_object(run)) return gx_errf(err, 422, "run", "must be a mapping (see docs/security.md)");
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)run, k, v) {
        int ok = 0;
        for (int i = 0; known[i]; i++) ok |= !strcmp(k, known[i]);
        char f[96];
        snprintf(f, sizeof f, "run.%.80s", k);
        if (!ok)
            return gx_errf(err, 422, f, "unknown setting (known: sandbox, uidRange, cgroupParent, tmpSize, pidsLimit, "
                           "defaultMemory, deviceDir, workDir, namespaces, cudaShim)");
    }
    if ((v = json_object_get(run, "sandbox"))) {
        const char *s = json_string_value(v);
        if (!s || (strcmp(s, "bubblewrap") && strcmp(s, "none")))
            return gx_errf(err, 422, "run.sandbox", "must be bubblewrap (the default) or none");
        r->sandbox = !strcmp(s, "bubblewrap");
        r->sandbox_explicit_none = !r->sandbox;
    }
    if ((v = json_object_get(run, "cudaShim"))) {
        /* true and false too: a YAML 1.1 habit writes on and off unquoted */
        const char *s = json_is_true(v) ? "on" : json_is_false(v) ? "off" : json_string_value(v);
        if (!s || (strcmp(s, "auto") && strcmp(s, "on") && strcmp(s, "off")))
            return gx_errf(err, 422, "run.cudaShim", "must be auto (the default), on or off");
        r->cuda_shim = !strcmp(s, "on") ? GX_CUDA_SHIM_ON : !strcmp(s, "off") ? GX_CUDA_SHIM_OFF : GX_CUDA_SHIM_AUTO;
    }
    if ((v = json_object_get(run, "uidRange")) && get_uid_range(v, r, err)) return -1;
    if ((v = json_object_get(run, "cgroupParent"))) {
        const char *s = json_string_value(v);
        if (!s || !*s || s[0] == '/' || strstr(s, "..") || strlen(s) >= sizeof r->cgroup_parent)
            return gx_errf(err, 422, "run.cgroupParent", "must be a relative cgroup path without \"..\" "
                           "(e.g. gpuaas or system.slice/gpuaas-pods)");
        snprintf(r->cgroup_parent, sizeof r->cgroup_parent, "%s", s);
    }
    if ((v = json_object_get(run, "tmpSize")) &&
        get_bytes(v, "run.tmpSize", (int64_t)1 << 20, (int64_t)1 << 40, &r->tmp_bytes, err))
        return -1;
    if ((v = json_object_get(run, "defaultMemory")) &&
        !(json_is_integer(v) && json_integer_value(v) == 0) &&
        get_bytes(v, "run.defaultMemory", (int64_t)4 << 20, (int64_t)1 << 50, &r->default_memory, err))
        return -1;
    if ((v = json_object_get(run, "pidsLimit"))) {
        if (!json_is_integer(v) || json_integer_value(v) < 8 || json_integer_value(v) > 4194304)
            return gx_errf(err, 422, "run.pidsLimit", "must be an integer between 8 and 4194304");
        r->pids_max = json_integer_value(v);
    }
    if ((v = json_object_get(run, "deviceDir")) &&
        get_abs_path(v, "run.deviceDir", r->device_dir, sizeof r->device_dir, err))
        return -1;
    if ((v = json_object_get(run, "workDir"))) {
        const char *s = json_string_value(v);
        if (!s || !*s) return gx_errf(err, 422, "run.workDir", "must be a folder name");
        int n = s[0] == '/' || !dir[0] ? snprintf(r->work_dir, sizeof r->work_dir, "%s", s)
                                       : snprintf(r->work_dir, sizeof r->work_dir, "%s/%s", dir, s);
        if (n < 0 || (size_t)n >= sizeof r->work_dir) return gx_errf(err, 422, "run.workDir", "path too long");
    }
    if ((v = json_object_get(run, "namespaces"))) {
        if (!json_is_object(v)) return gx_errf(err, 422, "run.namespaces", "must be a mapping {NAMESPACE: {...}}");
        json_t *x;
        json_object_foreach(v, k, x)
            if (load_namespace(r, k, x, daemon_uid, err)) return -1;
    }
    return 0;
}

int gx_run_config_ns_id(const gx_run_config *r, const char *ns, uid_t *uid, gid_t *gid)
{
    const json_t *o = json_object_get(r->namespaces, ns);
    const json_t *u = json_object_get(o, "uid");
    if (!json_is_integer(u)) return 0;
    *uid = (uid_t)json_integer_value(u);
    *gid = (gid_t)json_integer_value(json_object_get(o, "gid"));
    return 1;
}

int gx_run_config_host_path(const gx_run_config *r, const char *ns, const char *path, int *read_only)
{
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(json_object_get(r->namespaces, ns), "hostPaths"), i, x) {
        const char *p = json_string_value(json_object_get(x, "path"));
        size_t l = strlen(p);
        if (!strncmp(path, p, l) && (path[l] == 0 || path[l] == '/')) {
            *read_only = json_is_true(json_object_get(x, "readOnly"));
            return 1;
        }
    }
    return 0;
}
