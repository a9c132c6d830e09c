/* render_out: where a rendered object goes in git and the bytes of its file.
 * Owns: gx_fleet_path (the repository layout "<folder>/<namespace>/<kind>-<name>.yaml",
 * cluster-scoped objects under "<folder>/cluster/") and gx_fleet_yaml (one object as
 * block YAML with a trailing newline, byte for byte the same for the same object, so
 * that re-rendering an unchanged configuration changes no file and no git diff).
 * Must not: write files (render_main.c and the publisher do). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fleet/fleet.h"
#include "lib/alloc.h"
#include "lib/yaml.h"

/* One path component from a name read from a manifest: never empty, ".", "..", or with
 * a '/' in it, so that a path built from it stays inside the cluster's folder. */
static int part_ok(const char *s)
{
    return s && *s && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

int gx_fleet_path(const gx_fleet_cluster *c, const char *ns, const char *kind, const char *name, char *out, size_t n)
{
    if (!c || !c->git.folder || !part_ok(kind) || !part_ok(name) || (ns && *ns && !part_ok(ns))) return -1;
    char lower[64];
    size_t k = strlen(kind);
    if (k >= sizeof lower) return -1;
    for (size_t i = 0; i <= k; i++) lower[i] = (char)tolower((unsigned char)kind[i]);
    int w = snprintf(out, n, "%s/%s/%s-%s.yaml", c->git.folder, ns && *ns ? ns : "cluster", lower, name);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

char *gx_fleet_yaml(const json_t *obj)
{
    /* gx_yaml_emit writes keys in the object's own order and scalars one way each, so
     * the same object gives the same bytes; NULL only past the emitter's depth limit */
    char *s = gx_yaml_emit(obj);
    if (!s) return NULL;
    size_t n = strlen(s);
    if (n && s[n - 1] == '\n') return s;
    s = gx_xrealloc(s, n + 2);
    s[n] = '\n';
    s[n + 1] = 0;
    return s;
}
