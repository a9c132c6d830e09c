/* zz_stub: deleted at merge */
/* Throwaway stand-ins for the fleet layer's functions that other helpers write (the
 * Fleet parser and renderers, the git publisher, the status read-back), so that the
 * daemon's side builds and its state machine can be exercised before the merge. The
 * publisher stand-in writes each file under workdir_root/<cluster>/ instead of git, and
 * fails (as a rejected push would) while the repository has an executable
 * hooks/pre-receive. No real logic: the real ones replace all of this. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "fleet/fleet.h"
#include "lib/alloc.h"
#include "net/loop.h"

static char *dupn(const json_t *v, const char *def) { return json_is_string(v) ? gx_xstrdup(json_string_value(v)) : def ? gx_xstrdup(def) : NULL; }

static char **strs(const json_t *a, size_t *n)
{
    *n = json_array_size(a);
    char **o = gx_xcalloc(*n ? *n : 1, sizeof *o);
    for (size_t i = 0; i < *n; i++) o[i] = gx_xstrdup(json_string_value(json_array_get(a, i)) ?: "");
    return o;
}

int gx_fleet_parse(const json_t *doc, gx_fleet *out, gx_err *err)
{
    memset(out, 0, sizeof *out);
    const json_t *spec = json_object_get(doc, "spec"), *g = json_object_get(spec, "git");
    const json_t *cl = json_object_get(spec, "clusters");
    if (!json_array_size(cl)) return gx_errf(err, 422, "spec.clusters", "a Fleet needs clusters");
    out->name = dupn(json_object_get(json_object_get(doc, "metadata"), "name"), "fleet");
    out->n = json_array_size(cl);
    out->clusters = gx_xcalloc(out->n, sizeof *out->clusters);
    for (size_t i = 0; i < out->n; i++) {
        const json_t *c = json_array_get(cl, i), *cg = json_object_get(c, "git");
        gx_fleet_cluster *x = &out->clusters[i];
        x->name = dupn(json_object_get(c, "name"), "c");
        x->labels = json_object_get(c, "labels") ? json_deep_copy(json_object_get(c, "labels")) : json_object();
        x->git.repo = dupn(json_object_get(cg, "repo") ?: json_object_get(g, "repo"), "");
        x->git.branch = dupn(json_object_get(cg, "branch") ?: json_object_get(g, "branch"), "main");
        char f[300];
        snprintf(f, sizeof f, "clusters/%s", x->name);
        x->git.folder = dupn(json_object_get(cg, "folder"), f);
        x->git.author_name = gx_xstrdup("gpuaas");
        x->git.author_email = gx_xstrdup("gpuaas@localhost");
        x->kubeconfig = dupn(json_object_get(c, "kubeconfig"), NULL);
        x->namespaces = strs(json_object_get(c, "namespaces"), &x->nnamespaces);
        x->cluster_queues = strs(json_object_get(c, "clusterQueues"), &x->ncluster_queues);
        x->workers = strs(json_object_get(json_object_get(c, "multiKueue"), "workers"), &x->nworkers);
    }
    return 0;
}

void gx_fleet_free(gx_fleet *f)
{
    for (size_t i = 0; i < f->n; i++) {
        gx_fleet_cluster *x = &f->clusters[i];
        free(x->name); json_decref(x->labels); free(x->git.repo); free(x->git.branch); free(x->git.folder);
        free(x->git.author_name); free(x->git.author_email); free(x->kubeconfig);
        for (size_t k = 0; k < x->nnamespaces; k++) free(x->namespaces[k]);
        for (size_t k = 0; k < x->ncluster_queues; k++) free(x->cluster_queues[k]);
        for (size_t k = 0; k < x->nworkers; k++) free(x->workers[k]);
        free(x->namespaces); free(x->cluster_queues); free(x->workers);
    }
    free(f->clusters);
    free(f->name);
    memset(f, 0, sizeof *f);
}

const gx_fleet_cluster *gx_fleet_find(const gx_fleet *f, const char *name)
{
    for (size_t i = 0; name && i < f->n; i++)
        if (!strcmp(f->clusters[i].name, name)) return &f->clusters[i];
    return NULL;
}

json_t *gx_fleet_render_job(const gx_fleet *f, const gx_fleet_cluster *c, const json_t *request, const char *user,
                            gx_err *err)
{
    (void)f; (void)c; (void)err;
    json_t *j = json_deep_copy(request);
    json_object_set_new(json_object_get(j, "spec"), "suspend", json_true());
    json_t *md = json_object_get(j, "metadata");
    if (!json_object_get(md, "labels")) json_object_set_new(md, "labels", json_object());
    json_object_set_new(json_object_get(md, "labels"), "gpuaas.dev/requested-by", json_string(user));
    return j;
}

int gx_fleet_path(const gx_fleet_cluster *c, const char *ns, const char *kind, const char *name, char *out, size_t n)
{
    int w = snprintf(out, n, "%s/%s/%s-%s.yaml", c->git.folder, ns ? ns : "cluster", kind, name);
    return w < 0 || (size_t)w >= n ? -1 : 0;
}

char *gx_fleet_yaml(const json_t *obj)
{
    char *s = json_dumps(obj, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    size_t l = strlen(s);
    s = gx_xrealloc(s, l + 2);
    s[l] = '\n';
    s[l + 1] = 0;
    return s;
}

/* ---- publisher ---- */
typedef void (*gx_publish_done_fn)(void *ud, uint64_t id, int ok, const char *commit, const gx_err *err);
typedef struct stub_job { struct gx_publisher *p; uint64_t id; int ok; char msg[256]; } stub_job;
typedef struct gx_publisher {
    gx_loop *l; char root[4096]; gx_publish_done_fn done; void *ud; uint64_t next; size_t pending;
} gx_publisher;

gx_publisher *gx_publisher_new(gx_loop *l, const char *workdir_root, gx_publish_done_fn done, void *ud, gx_err *err)
{
    (void)err;
    gx_publisher *p = gx_xcalloc(1, sizeof *p);
    p->l = l; p->done = done; p->ud = ud;
    snprintf(p->root, sizeof p->root, "%s", workdir_root);
    return p;
}

static void stub_done(gx_loop *l, void *ud)
{
    (void)l;
    stub_job *j = ud;
    gx_err e;
    gx_err_clear(&e);
    if (!j->ok) gx_errf(&e, 500, "", "%s", j->msg);
    j->p->pending--;
    j->p->done(j->p->ud, j->id, j->ok, j->ok ? "0123456789abcdef0123456789abcdef01234567" : NULL, &e);
    free(j);
}

static void mkdirs(char *path)
{
    for (char *s = path + 1; *s; s++)
        if (*s == '/') { *s = 0; mkdir(path, 0755); *s = '/'; }
}

uint64_t gx_publisher_submit(gx_publisher *p, const char *cluster, const gx_fleet_git *g, const gx_git_change *changes,
                             size_t n, const char *author_name, const char *author_email, const char *message)
{
    (void)author_name; (void)author_email; (void)message;
    stub_job *j = gx_xcalloc(1, sizeof *j);
    j->p = p; j->id = ++p->next; j->ok = 1;
    char hook[4096];
    snprintf(hook, sizeof hook, "%s/hooks/pre-receive", g->repo);
    if (!access(hook, X_OK)) { j->ok = 0; snprintf(j->msg, sizeof j->msg, "push rejected (pre-receive hook declined)"); }
    for (size_t i = 0; j->ok && i < n; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s/%s", p->root, cluster, changes[i].path);
        mkdirs(path);
        if (!changes[i].content) { unlink(path); continue; }
        FILE *fp = fopen(path, "w");
        if (fp) { fputs(changes[i].content, fp); fclose(fp); }
    }
    p->pending++;
    gx_loop_at(p->l, gx_loop_mono(p->l) + 20, stub_done, j);
    return j->id;
}

size_t gx_publisher_pending(const gx_publisher *p) { return p->pending; }
void gx_publisher_free(gx_publisher *p) { free(p); }   /* (a job in flight leaks: stand-in only) */

/* ---- status read-back ---- */
typedef struct gx_fleet_status { int unused; } gx_fleet_status;
gx_fleet_status *gx_fleet_status_new(void) { return gx_xcalloc(1, sizeof(gx_fleet_status)); }
void gx_fleet_status_free(gx_fleet_status *s) { free(s); }
json_t *gx_fleet_status_job(const gx_fleet_status *s, const char *cluster, const char *ns, const char *name)
{
    (void)s; (void)cluster; (void)ns; (void)name;
    return NULL;
}
json_t *gx_fleet_status_cluster(const gx_fleet_status *s, const char *cluster) { (void)s; (void)cluster; return NULL; }
typedef struct gx_kube_watch { int unused; } gx_kube_watch;
gx_kube_watch *gx_kube_watch_new(gx_loop *l, const char *cluster, const char *kubeconfig, const char *context,
                                 gx_fleet_status *st, gx_err *err)
{
    (void)l; (void)cluster; (void)kubeconfig; (void)context; (void)st; (void)err;
    return gx_xcalloc(1, sizeof(gx_kube_watch));
}
void gx_kube_watch_free(gx_kube_watch *w) { free(w); }
