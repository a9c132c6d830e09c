/* render_main: `gpuaas render --config FILE [--cluster NAME] --out DIR [-f REQUEST.yaml ...]`.
 * Owns: reading the ServerConfig and its manifests as `serve` would (the one Fleet
 * document among them, every other object keyed "Kind/ns/name" as the daemon keys it),
 * resolving the Fleet's paths against the config's folder, asking the renderers for each
 * cluster's objects, and making DIR mirror them: each object in its file
 * (gx_fleet_path, gx_fleet_yaml), a file rewritten only when its bytes change, and every
 * other .yaml file under a rendered cluster's folder removed. Everything is rendered
 * before anything is written, so a mistake leaves DIR as it was.
 * Must not: touch anything outside DIR, or talk to a daemon or git. */
#include <errno.h>
#include <ftw.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "config/config.h"
#include "fleet/fleet.h"
#include "fleet/render_main.h"
#include "lib/alloc.h"
#include "lib/opts.h"
#include "lib/path.h"
#include "lib/yaml.h"

#define FILE_MAX (16u << 20)   /* one manifest or request file */

static const gx_opt render_opts[] = {
    {"config", 'c', "FILE", "the ServerConfig (gpuaas.yaml) whose manifests hold the Fleet"},
    {"cluster", 0, "NAME", "render only this cluster (and send every -f request to it)"},
    {"out", 'o', "DIR", "where the cluster folders go (created when missing)"},
    {"file", 'f', "FILE", "a request (a batch/v1 Job) to render for its cluster; repeatable"},
    {"help", 'h', NULL, "show this help"},
    {NULL, 0, NULL, NULL},
};
static const gx_opt *const render_sets[] = {render_opts, NULL};

static void usage(FILE *f)
{
    fputs("usage: gpuaas render --config FILE [--cluster NAME] --out DIR [-f REQUEST.yaml ...]\n\n"
          "Writes what each cluster of the Fleet in FILE's manifests runs, one Kubernetes object per\n"
          "file under DIR/<folder>/<namespace>/<kind>-<name>.yaml (docs/fleet.md): the Kueue objects,\n"
          "the GPU Operator pieces, InferenceServices for Models with a workload, and the Jobs of the\n"
          "requests given with -f. The same configuration gives the same bytes; .yaml files that are\n"
          "no longer rendered are removed from the cluster's folder.\n\n", f);
    gx_opts_usage(f, render_sets);
}

/* What render works on: the Fleet, the applied objects, the requests. */
typedef struct render {
    gx_config cfg;
    gx_fleet fleet;
    json_t *objects;    /* "Kind/ns/name" -> manifest, as gx_d_objects() */
    json_t *requests;   /* [{file, doc, cluster}] */
    char dir[PATH_MAX]; /* the config file's folder, absolute */
} render;

static void say(const char *where, const gx_err *e)
{
    char buf[1024];
    fprintf(stderr, "gpuaas render: %s\n", gx_err_str(e, where, buf, sizeof buf));
}

static int is_list(const json_t *doc)
{
    return !strcmp(json_string_value(json_object_get(doc, "kind")) ?: "", "List") &&
           !strcmp(json_string_value(json_object_get(doc, "apiVersion")) ?: "", "v1") &&
           json_is_array(json_object_get(doc, "items"));
}

/* The daemon's key of an applied object (ops/objects.c): a LocalQueue without a
 * namespace is in "default", every other kind is keyed without one. */
static void obj_key(const json_t *doc, char *out, size_t n)
{
    const json_t *md = json_object_get(doc, "metadata");
    const char *kind = json_string_value(json_object_get(doc, "kind")) ?: "";
    const char *ns = !strcmp(kind, "LocalQueue") ? json_string_value(json_object_get(md, "namespace")) ?: "default" : "";
    snprintf(out, n, "%s/%s/%s", kind, ns, json_string_value(json_object_get(md, "name")) ?: "");
}

/* One manifest file: its Fleet (at most one in all files: *fleet_file names the file
 * that had it) and its other objects. */
static int load_manifests(render *r, const char *file, char **fleet_file, gx_err *err)
{
    size_t len;
    char *buf = gx_read_file(file, FILE_MAX, &len, err);
    if (!buf) return -1;
    gx_yaml_docs d;
    int rc = gx_manifest_parse(buf, len, &d, err);
    free(buf);
    if (rc) return -1;
    for (size_t i = 0; i < d.n && !rc; i++) {
        json_t *one[1] = {d.docs[i]}, *const *items = one;
        size_t n = 1;
        if (is_list(d.docs[i])) {
            n = json_array_size(json_object_get(d.docs[i], "items"));
            items = NULL;
        }
        for (size_t k = 0; k < n && !rc; k++) {
            json_t *doc = items ? items[k] : json_array_get(json_object_get(d.docs[i], "items"), k);
            if (!json_is_object(doc)) continue;
            if (strcmp(json_string_value(json_object_get(doc, "kind")) ?: "", "Fleet")) {
                char key[600];
                obj_key(doc, key, sizeof key);
                json_object_set(r->objects, key, doc);
                continue;
            }
            if (*fleet_file) {
                rc = gx_errf(err, 422, "kind", "a second Fleet object (the first is in %s): one Fleet per configuration",
                             *fleet_file);
                err->line = d.first_line ? d.first_line[i] : 0;
                break;
            }
            gx_err fe;
            gx_fleet fl;
            if (gx_fleet_parse(doc, &fl, &fe)) {
                *err = fe;
                if (!items) err->line = d.first_line ? d.first_line[i] : 0;
                else gx_linemap_annotate(d.lines[i], err);
                rc = -1;
                break;
            }
            r->fleet = fl;
            *fleet_file = gx_xstrdup(file);
        }
    }
    gx_yaml_docs_free(&d);
    return rc;
}

/* A Fleet path as written, made absolute against the config's folder. A remote URL
 * (scheme://... or scp's user@host:path) stays as it is. */
static int resolve(const render *r, char **p, int maybe_url, gx_err *err)
{
    if (!*p || (*p)[0] == '/') return 0;
    if (maybe_url && (strstr(*p, "://") || (strchr(*p, '@') && strchr(*p, ':')))) return 0;
    char out[PATH_MAX];
    int w = snprintf(out, sizeof out, "%s/%s", r->dir, *p);
    if (w < 0 || (size_t)w >= sizeof out) return gx_errf(err, 422, "", "the path %s is too long", *p);
    free(*p);
    *p = gx_xstrdup(out);
    return 0;
}

/* Requests of -f: each document a request for --cluster or its gpuaas.dev/cluster. */
static int load_requests(render *r, const gx_opt_args *a, const char *only, gx_err *err, const char **where)
{
    for (int i = 0; i < gx_opt_count(a, "file"); i++) {
        const char *file = gx_opt_nth(a, "file", i);
        *where = file;
        size_t len;
        char *buf = gx_read_file(file, FILE_MAX, &len, err);
        if (!buf) return -1;
        gx_yaml_docs d;
        int rc = gx_manifest_parse(buf, len, &d, err);
        free(buf);
        if (rc) return -1;
        for (size_t k = 0; k < d.n && !rc; k++) {
            const json_t *doc = d.docs[k];
            const char *cl = only ? only : json_string_value(json_object_get(
                json_object_get(json_object_get(doc, "metadata"), "annotations"), GX_FLEET_CLUSTER_ANNOTATION));
            if (!cl)
                rc = gx_errf(err, 422, "metadata.annotations." GX_FLEET_CLUSTER_ANNOTATION,
                             "Required value: the cluster the request is for (or render --cluster NAME)");
            else if (!gx_fleet_find(&r->fleet, cl))
                rc = gx_errf(err, 422, only ? "" : "metadata.annotations." GX_FLEET_CLUSTER_ANNOTATION,
                             "no cluster \"%s\" in Fleet %s", cl, r->fleet.name);
            if (rc) {
                err->doc = (int)k;
                gx_linemap_annotate(d.lines[k], err);
                break;
            }
            json_array_append_new(r->requests, json_pack("{s:s, s:O, s:s}", "file", file, "doc", doc, "cluster", cl));
        }
        gx_yaml_docs_free(&d);
        if (rc) return -1;
    }
    return 0;
}

/* One more object for files: its path under DIR and its bytes; two objects in one file
 * is an error (two requests with the same name, say). */
static int add_file(json_t *files, const gx_fleet_cluster *c, const json_t *obj, const char *what, gx_err *err)
{
    const json_t *md = json_object_get(obj, "metadata");
    const char *kind = json_string_value(json_object_get(obj, "kind"));
    const char *name = json_string_value(json_object_get(md, "name"));
    const char *ns = json_string_value(json_object_get(md, "namespace"));
    char path[PATH_MAX];
    if (gx_fleet_path(c, ns, kind, name, path, sizeof path))
        return gx_errf(err, 422, "", "cluster %s: %s: %s %s has no name, namespace or kind a file can be named by", c->name, what,
                       kind ? kind : "(no kind)", name ? name : "(no name)");
    if (json_object_get(files, path))
        return gx_errf(err, 409, "", "cluster %s: %s: two objects for %s (%s %s)", c->name, what, path, kind, name);
    char *y = gx_fleet_yaml(obj);
    if (!y) return gx_errf(err, 422, "", "cluster %s: %s: %s %s is nested too deeply to write", c->name, what, kind, name);
    json_object_set_new(files, path, json_string(y));
    free(y);
    return 0;
}

static int add_all(json_t *files, const gx_fleet_cluster *c, json_t *arr, const char *what, gx_err *err)
{
    if (!arr) return -1;
    size_t i;
    json_t *o;
    int rc = 0;
    json_array_foreach(arr, i, o) if (!rc) rc = add_file(files, c, o, what, err);
    json_decref(arr);
    return rc;
}

static int offers_ns(const gx_fleet_cluster *c, const char *ns)
{
    for (size_t i = 0; ns && i < c->nnamespaces; i++)
        if (!strcmp(c->namespaces[i], ns)) return 1;
    return 0;
}

/* Every file of cluster c: {path under DIR: content}. */
static json_t *render_cluster(render *r, const gx_fleet_cluster *c, const char *user, gx_err *err)
{
    json_t *files = json_object();
    if (add_all(files, c, gx_fleet_render_kueue(&r->fleet, c, r->objects, err), "Kueue objects", err) ||
        add_all(files, c, gx_fleet_render_gpu(c, err), "GPU Operator", err))
        goto fail;
    const char *key;
    json_t *m;
    json_object_foreach(r->objects, key, m) {
        const json_t *w = json_object_get(json_object_get(m, "spec"), "workload");
        if (strncmp(key, "Model/", 6) || !w || !offers_ns(c, json_string_value(json_object_get(w, "namespace")))) continue;
        json_t *is = gx_fleet_render_model(c, m, err);
        if (!is || add_file(files, c, is, "Model", err)) { json_decref(is); goto fail; }
        json_decref(is);
    }
    size_t i;
    json_t *q;
    json_array_foreach(r->requests, i, q) {
        if (strcmp(json_string_value(json_object_get(q, "cluster")), c->name)) continue;
        json_t *job = gx_fleet_render_job(&r->fleet, c, json_object_get(q, "doc"), user, err);
        if (!job || add_file(files, c, job, json_string_value(json_object_get(q, "file")), err)) { json_decref(job); goto fail; }
        json_decref(job);
    }
    return files;
fail:
    json_decref(files);
    return NULL;
}

/* ---- making DIR mirror the rendered files ------------------------------------------- */

static int write_if_changed(const char *path, const char *content, int *written)
{
    size_t n = strlen(content), have = 0;
    gx_err ignore;
    char *old = access(path, F_OK) ? NULL : gx_read_file(path, FILE_MAX, &have, &ignore);
    int same = old && have == n && !memcmp(old, content, n);
    free(old);
    if (same) return 0;
    char dirbuf[PATH_MAX], tmp[PATH_MAX + 16];
    snprintf(dirbuf, sizeof dirbuf, "%s", path);
    if (gx_mkdirs(dirname(dirbuf), 0755)) return -1;
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    int ok = fwrite(content, 1, n, f) == n;
    ok = !fclose(f) && ok;
    if (!ok || rename(tmp, path)) { unlink(tmp); return -1; }
    (*written)++;
    return 0;
}

/* nftw has no user pointer: the one walk at a time keeps its state here. */
static struct {
    const json_t *keep;   /* absolute paths written */
    int removed, failed;
} walk;

static int prune_file(const char *p, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st; (void)ftw;
    size_t n = strlen(p);
    if (type == FTW_F && n > 5 && !strcmp(p + n - 5, ".yaml") && !json_object_get(walk.keep, p)) {
        if (unlink(p)) walk.failed++;
        else walk.removed++;
    } else if (type == FTW_DP && ftw->level > 0) {
        rmdir(p);   /* emptied folders go; a folder with other files stays (ENOTEMPTY) */
    }
    return 0;
}

/* Write cluster c's files under out and remove its folder's .yaml files that are not
 * among them. */
static int mirror(const gx_fleet_cluster *c, const char *out, const json_t *files, int *written, int *removed)
{
    json_t *keep = json_object();
    const char *rel;
    json_t *content;
    int rc = 0;
    json_object_foreach((json_t *)files, rel, content) {
        char p[PATH_MAX];
        int w = snprintf(p, sizeof p, "%s/%s", out, rel);
        if (w < 0 || (size_t)w >= sizeof p || write_if_changed(p, json_string_value(content), written)) {
            fprintf(stderr, "gpuaas render: cannot write %s/%s: %s\n", out, rel, strerror(errno));
            rc = -1;
            break;
        }
        json_object_set_new(keep, p, json_true());
    }
    char folder[2 * PATH_MAX];   /* out (PATH_MAX) and a folder of 253: never cut */
    int w = snprintf(folder, sizeof folder, "%s/%s", out, c->git.folder);
    walk.keep = keep;
    walk.removed = walk.failed = 0;
    if (!rc && w > 0 && w < PATH_MAX && !access(folder, F_OK)) nftw(folder, prune_file, 16, FTW_PHYS | FTW_DEPTH);
    *removed = walk.removed;
    if (walk.failed) {
        fprintf(stderr, "gpuaas render: could not remove %d stale file(s) under %s\n", walk.failed, folder);
        rc = -1;
    }
    json_decref(keep);
    return rc;
}

/* Two clusters whose folders nest would prune each other's files. */
static int folders_apart(const gx_fleet *f, gx_err *err)
{
    for (size_t i = 0; i < f->n; i++)
        for (size_t k = 0; k < f->n; k++) {
            const char *a = f->clusters[i].git.folder, *b = f->clusters[k].git.folder;
            size_t n = strlen(a);
            if (i != k && !strncmp(a, b, n) && (b[n] == '/' || !b[n]))
                return gx_errf(err, 422, "", "clusters %s and %s: folder %s is inside folder %s (or the same): render "
                               "writes each cluster's folder as a whole", f->clusters[k].name, f->clusters[i].name, b, a);
        }
    return 0;
}

static int run(render *r, const gx_opt_args *a, const char *cfg_path, const char *out)
{
    gx_err err;
    gx_err_clear(&err);
    if (gx_config_load(&r->cfg, cfg_path, &err)) { say(cfg_path, &err); return 1; }
    char dirbuf[PATH_MAX];
    snprintf(dirbuf, sizeof dirbuf, "%s", cfg_path);
    if (!realpath(dirname(dirbuf), r->dir)) { fprintf(stderr, "gpuaas render: %s: %s\n", cfg_path, strerror(errno)); return 1; }
    char *fleet_file = NULL;
    size_t i;
    json_t *x;
    json_array_foreach(r->cfg.manifests, i, x)
        if (load_manifests(r, json_string_value(x), &fleet_file, &err)) {
            say(json_string_value(x), &err);
            free(fleet_file);
            return 1;
        }
    int have_fleet = fleet_file != NULL;
    free(fleet_file);
    if (!have_fleet) { fprintf(stderr, "gpuaas render: %s: no Fleet object in manifests\n", cfg_path); return 1; }
    for (i = 0; i < r->fleet.n; i++) {
        gx_fleet_cluster *c = &r->fleet.clusters[i];
        if (resolve(r, &c->git.repo, 1, &err) || resolve(r, &c->git.credentials_file, 0, &err) ||
            resolve(r, &c->kubeconfig, 0, &err)) { say(cfg_path, &err); return 1; }
    }
    if (folders_apart(&r->fleet, &err)) { say(cfg_path, &err); return 1; }
    const char *only = gx_opt_get(a, "cluster");
    if (only && !gx_fleet_find(&r->fleet, only)) {
        fprintf(stderr, "gpuaas render: --cluster: no cluster \"%s\" in Fleet %s (clusters:", only, r->fleet.name);
        for (i = 0; i < r->fleet.n; i++) fprintf(stderr, " %s", r->fleet.clusters[i].name);
        fputs(")\n", stderr);
        return 2;
    }
    const char *where = "";
    if (load_requests(r, a, only, &err, &where)) { say(where, &err); return 1; }
    const char *user = getenv("USER");
    if (!user || !*user) user = "render";
    /* everything rendered first: a mistake in the last cluster leaves DIR untouched */
    json_t *all = json_array();
    int rc = 0;
    for (i = 0; i < r->fleet.n && !rc; i++) {
        const gx_fleet_cluster *c = &r->fleet.clusters[i];
        if (only && strcmp(c->name, only)) { json_array_append_new(all, json_null()); continue; }
        json_t *files = render_cluster(r, c, user, &err);
        if (!files) { say(cfg_path, &err); rc = 1; break; }
        json_array_append_new(all, files);
    }
    if (!rc && gx_mkdirs(out, 0755)) { fprintf(stderr, "gpuaas render: --out %s: %s\n", out, strerror(errno)); rc = 1; }
    char outabs[PATH_MAX];
    if (!rc && !realpath(out, outabs)) { fprintf(stderr, "gpuaas render: --out %s: %s\n", out, strerror(errno)); rc = 1; }
    json_array_foreach(all, i, x) {
        if (rc || json_is_null(x)) continue;
        const gx_fleet_cluster *c = &r->fleet.clusters[i];
        int written = 0, removed = 0;
        if (mirror(c, outabs, x, &written, &removed)) { rc = 1; continue; }
        printf("%s: %zu objects in %s/%s (%d written, %d removed)\n", c->name, json_object_size(x), out, c->git.folder,
               written, removed);
    }
    json_decref(all);
    return rc;
}

int gx_fleet_render_main(int argc, char **argv)
{
    gx_opt_args a;
    const char *hint = "usage: gpuaas render --config FILE [--cluster NAME] --out DIR [-f REQUEST.yaml ...]\n"
                       "see gpuaas render --help\n";
    if (gx_opts_parse(render_sets, argc, argv, &a)) {
        fprintf(stderr, "gpuaas render: %s\n%s", a.err, hint);
        gx_opts_free(&a);
        return 2;
    }
    if (gx_opt_has(&a, "help")) {
        usage(stdout);
        gx_opts_free(&a);
        return 0;
    }
    const char *cfg = gx_opt_get(&a, "config"), *out = gx_opt_get(&a, "out");
    const char *missing = !cfg ? "--config FILE" : !out ? "--out DIR" : NULL;
    if (missing || a.npos) {
        if (missing) fprintf(stderr, "gpuaas render: %s is required\n%s", missing, hint);
        else fprintf(stderr, "gpuaas render: unexpected argument '%s' (requests are given with -f FILE)\n%s", a.pos[0], hint);
        gx_opts_free(&a);
        return 2;
    }
    render r;
    memset(&r, 0, sizeof r);
    gx_config_defaults(&r.cfg);
    r.objects = json_object();
    r.requests = json_array();
    int rc = run(&r, &a, cfg, out);
    gx_fleet_free(&r.fleet);
    gx_config_free(&r.cfg);
    json_decref(r.objects);
    json_decref(r.requests);
    gx_opts_free(&a);
    return rc;
}
