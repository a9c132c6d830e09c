/* podspec_volumes: the volumes a local-mode pod may have (see podspec.h, docs/jobs.md).
 * Owns: validating `volumes` and the container's `volumeMounts` and listing the
 * hostPath mounts. Local mode offers hostPath volumes only (the sandbox binds them, and
 * the daemon lets a namespace mount only the host folders the admin allowed it:
 * run.namespaces.NS.hostPaths); any other kind is refused with a message, never dropped.
 * Must not: decide whether a namespace may mount a path (the daemon does, at submit and
 * again at start). */
#include <stdio.h>
#include <string.h>
#include "run/podspec.h"
#include "lib/path.h"

static const json_t *find_volume(const json_t *volumes, const char *name, size_t *index)
{
    size_t i;
    json_t *v;
    json_array_foreach(volumes, i, v)
        if (!strcmp(json_string_value(json_object_get(v, "name")) ?: "", name)) {
            *index = i;
            return v;
        }
    return NULL;
}

static int check_volumes(const json_t *volumes, const char *base, gx_err *err)
{
    char f[224];
    snprintf(f, sizeof f, "%s.volumes", base);
    if (!json_is_array(volumes)) return gx_errf(err, 422, f, "must be a list of volumes");
    if (json_array_size(volumes) > GX_POD_MAX_MOUNTS) return gx_errf(err, 422, f, "more than %d volumes", GX_POD_MAX_MOUNTS);
    size_t i;
    json_t *v;
    json_array_foreach(volumes, i, v) {
        char fv[sizeof f + 24], fp[sizeof fv + 24];
        snprintf(fv, sizeof fv, "%s[%zu]", f, i);
        const char *name = json_string_value(json_object_get(v, "name"));
        if (!name || !*name) return gx_errf(err, 422, fv, "a volume needs a name");
        size_t j;
        if (find_volume(volumes, name, &j) && j != i) return gx_errf(err, 422, fv, "volume name %s is used twice", name);
        const json_t *hp = json_object_get(v, "hostPath");
        const char *k;
        json_t *x;
        json_object_foreach((json_t *)v, k, x)
            if (strcmp(k, "name") && strcmp(k, "hostPath"))
                return gx_errf(err, 422, fv, "%s volumes are not supported in local mode: only hostPath "
                               "(see docs/jobs.md)", k);
        if (!json_is_object(hp)) return gx_errf(err, 422, fv, "a volume needs hostPath {path}");
        snprintf(fp, sizeof fp, "%s.hostPath.path", fv);
        if (!gx_path_clean_abs(json_string_value(json_object_get(hp, "path"))))
            return gx_errf(err, 422, fp, "must be an absolute path without \".\" or \"..\" parts");
        const char *type = json_string_value(json_object_get(hp, "type"));
        if (type && strcmp(type, "") && strcmp(type, "Directory") && strcmp(type, "File")) {
            snprintf(fp, sizeof fp, "%s.hostPath.type", fv);
            return gx_errf(err, 422, fp, "local mode mounts existing folders and files: \"\", Directory or File");
        }
    }
    return 0;
}

int gx_podspec_read_volumes(const json_t *podspec, const json_t *container, const char *base, gx_podspec *out,
                            gx_err *err)
{
    const json_t *volumes = json_object_get(podspec, "volumes");
    const json_t *mounts = json_object_get(container, "volumeMounts");
    if (volumes && check_volumes(volumes, base, err)) return -1;
    out->volumes = volumes;
    if (!mounts) return 0;
    char f[224];
    snprintf(f, sizeof f, "%s.containers[0].volumeMounts", base);
    if (!json_is_array(mounts)) return gx_errf(err, 422, f, "must be a list of {name, mountPath}");
    if (json_array_size(mounts) > GX_POD_MAX_MOUNTS) return gx_errf(err, 422, f, "more than %d mounts", GX_POD_MAX_MOUNTS);
    size_t i, vi;
    json_t *m;
    json_array_foreach(mounts, i, m) {
        char fm[sizeof f + 24];
        snprintf(fm, sizeof fm, "%s[%zu]", f, i);
        const char *name = json_string_value(json_object_get(m, "name"));
        const char *path = json_string_value(json_object_get(m, "mountPath"));
        const json_t *ro = json_object_get(m, "readOnly");
        if (!name || !find_volume(volumes, name, &vi))
            return gx_errf(err, 422, fm, "names no volume of the pod (%s)", name ? name : "no name");
        if (!gx_path_clean_abs(path))
            return gx_errf(err, 422, fm, "mountPath must be an absolute path without \".\" or \"..\" parts");
        if (ro && !json_is_boolean(ro)) return gx_errf(err, 422, fm, "readOnly must be true or false");
        if (json_object_get(m, "subPath") || json_object_get(m, "subPathExpr"))
            return gx_errf(err, 422, fm, "subPath is not supported in local mode: mount the folder itself");
        if (!strcmp(path, "/") || !strcmp(path, "/proc") || !strncmp(path, "/proc/", 6) || !strcmp(path, "/dev") ||
            !strncmp(path, "/dev/", 5))
            return gx_errf(err, 422, fm, "mountPath %s is the sandbox's own", path);
    }
    return 0;
}

int gx_podspec_mounts(const gx_podspec *ps, gx_podmount *out)
{
    const json_t *mounts = json_object_get(ps->container, "volumeMounts");
    size_t i, vi;
    json_t *m;
    int n = 0;
    json_array_foreach(mounts, i, m) {
        if (n >= GX_POD_MAX_MOUNTS) break;
        const json_t *v = find_volume(ps->volumes, json_string_value(json_object_get(m, "name")) ?: "", &vi);
        if (!v) continue; /* gx_podspec_read refused it already */
        gx_podmount *o = &out[n++];
        o->host_path = json_string_value(json_object_get(json_object_get(v, "hostPath"), "path"));
        o->mount_path = json_string_value(json_object_get(m, "mountPath"));
        o->read_only = json_is_true(json_object_get(m, "readOnly"));
        snprintf(o->field, sizeof o->field, "%s.volumes[%zu].hostPath.path", ps->base, vi);
    }
    return n;
}
