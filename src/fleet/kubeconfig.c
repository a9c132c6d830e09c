/* fleet/kubeconfig: a kubeconfig file read into the few things the status read-back uses
 * (kubeconfig.h): server, CA, insecure-skip-tls-verify, token / tokenFile, client
 * certificate and key (files or base64 data), the context's namespace.
 * Owns: the YAML walk, the choice of context, paths made absolute against the file's
 * folder, base64 decoding (libsodium), wiping secrets on free.
 * Must not: log a secret (errors name fields, never values), run a plugin (exec,
 * auth-provider: refused), or keep a file open. */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <jansson.h>
#include "fleet/kubeconfig.h"
#include "lib/alloc.h"
#include "lib/yaml.h"

#define KUBECONFIG_MAX (4u << 20)   /* a kubeconfig, a CA bundle, a certificate: at most this */

/* The whole of a small file (NUL-terminated), or NULL with errno. */
static unsigned char *slurp(const char *path, size_t max, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return NULL;
    size_t cap = 4096, n = 0;
    unsigned char *b = gx_xmalloc(cap + 1);
    for (;;) {
        if (n == cap) {
            if (cap >= max) { free(b); close(fd); errno = EFBIG; return NULL; }
            cap *= 2;
            b = gx_xrealloc(b, cap + 1);
        }
        ssize_t r = read(fd, b + n, cap - n);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) { int e = errno; free(b); close(fd); errno = e; return NULL; }
        if (r == 0) break;
        n += (size_t)r;
    }
    close(fd);
    b[n] = 0;
    *len = n;
    return b;
}

static void blob_free(gx_kube_blob *b)
{
    if (b->p) sodium_memzero(b->p, b->n);
    free(b->p);
    b->p = NULL;
    b->n = 0;
}

static void secret_free(char **s)
{
    if (*s) sodium_memzero(*s, strlen(*s));
    free(*s);
    *s = NULL;
}

void gx_kubeconfig_free(gx_kubeconfig *k)
{
    if (!k) return;
    free(k->path); free(k->context); free(k->server); free(k->ns); free(k->ca_file);
    free(k->token_file); free(k->cert_file); free(k->key_file);
    secret_free(&k->token);
    blob_free(&k->ca); blob_free(&k->cert); blob_free(&k->key);
    memset(k, 0, sizeof *k);
}

/* The entry of list (clusters, users, contexts) named name, and its index. */
static json_t *named(const json_t *list, const char *name, size_t *at)
{
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        const char *n = json_string_value(json_object_get(e, "name"));
        if (n && !strcmp(n, name)) { *at = i; return e; }
    }
    return NULL;
}

/* A string field of o, or NULL; -1 when present but not a string. */
static int opt_str(const json_t *o, const char *key, const char **out, const char *where, gx_err *err)
{
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v || json_is_null(v)) return 0;
    char f[192];
    if (!json_is_string(v))
        return gx_errf(err, 422, gx_err_path(f, sizeof f, where, "%s.%s", where, key), "must be a string");
    *out = json_string_value(v);
    return 0;
}

/* path made absolute against dir (the kubeconfig's folder). */
static char *abs_path(const char *dir, const char *p)
{
    if (p[0] == '/') return gx_xstrdup(p);
    size_t n = strlen(dir) + strlen(p) + 2;
    char *s = gx_xmalloc(n);
    snprintf(s, n, "%s/%s", dir, p);
    return s;
}

/* base64 (standard alphabet, whitespace ignored) into b. */
static int decode(const char *s, gx_kube_blob *b, const char *field, gx_err *err)
{
    size_t len = strlen(s), n = 0;
    b->p = gx_xmalloc(len / 4 * 3 + 4);
    if (sodium_base642bin(b->p, len / 4 * 3 + 4, s, len, " \t\r\n", &n, NULL, sodium_base64_VARIANT_ORIGINAL)) {
        blob_free(b);
        return gx_errf(err, 422, field, "is not valid base64");
    }
    b->n = n;
    return 0;
}

/* The cluster entry's fields. */
static int read_cluster(const json_t *c, const char *where, const char *dir, gx_kubeconfig *k, gx_err *err)
{
    char f[192];
    const char *server, *ca, *cadata;
    if (!json_is_object(c)) return gx_errf(err, 422, where, "must be an object");
    if (opt_str(c, "server", &server, where, err) || opt_str(c, "certificate-authority", &ca, where, err) ||
        opt_str(c, "certificate-authority-data", &cadata, where, err))
        return -1;
    if (!server || !*server) return gx_errf(err, 422, gx_err_path(f, sizeof f, where, "%s.server", where), "is required");
    if (strncmp(server, "https://", 8) && strncmp(server, "http://", 7))
        return gx_errf(err, 422, gx_err_path(f, sizeof f, where, "%s.server", where),
                       "must be an https:// (or http://) URL");
    k->server = gx_xstrdup(server);
    size_t n = strlen(k->server);
    while (n > 8 && k->server[n - 1] == '/') k->server[--n] = 0;
    json_t *ins = json_object_get(c, "insecure-skip-tls-verify");
    if (ins && !json_is_boolean(ins))
        return gx_errf(err, 422, gx_err_path(f, sizeof f, where, "%s.insecure-skip-tls-verify", where), "must be true or false");
    k->insecure = json_is_true(ins);
    if (cadata) {
        if (decode(cadata, &k->ca, gx_err_path(f, sizeof f, where, "%s.certificate-authority-data", where), err)) return -1;
    } else if (ca) {
        k->ca_file = abs_path(dir, ca);
    }
    return 0;
}

/* A file the user entry names, read now so that a wrong path is an error at start. */
static int read_file_blob(const char *path, gx_kube_blob *b, const char *field, gx_err *err)
{
    unsigned char *p = slurp(path, KUBECONFIG_MAX, &b->n);
    if (!p) return gx_errf(err, 422, field, "cannot read %s: %s", path, strerror(errno));
    b->p = p;
    return 0;
}

static int read_user(const json_t *u, const char *where, const char *dir, gx_kubeconfig *k, gx_err *err)
{
    char f[192];
    if (!json_is_object(u)) return gx_errf(err, 422, where, "must be an object");
    static const char *const plugins[] = {"exec", "auth-provider"};
    for (size_t i = 0; i < 2; i++)
        if (json_object_get(u, plugins[i]))
            return gx_errf(err, 422, gx_err_path(f, sizeof f, where, "%s.%s", where, plugins[i]),
                           "credential plugins are not supported (gpuaas runs no helper program): give the user a token, "
                           "tokenFile or client certificate");
    if (json_object_get(u, "username") || json_object_get(u, "password"))
        return gx_errf(err, 422, gx_err_path(f, sizeof f, where, "%s.username", where),
                       "basic authentication is not supported: give the user a token, tokenFile or client certificate");
    const char *tok, *tokf, *cert, *certd, *key, *keyd;
    if (opt_str(u, "token", &tok, where, err) || opt_str(u, "tokenFile", &tokf, where, err) ||
        opt_str(u, "client-certificate", &cert, where, err) || opt_str(u, "client-certificate-data", &certd, where, err) ||
        opt_str(u, "client-key", &key, where, err) || opt_str(u, "client-key-data", &keyd, where, err))
        return -1;
    if (tok) k->token = gx_xstrdup(tok);
    else if (tokf) k->token_file = abs_path(dir, tokf);
    if (certd) {
        if (decode(certd, &k->cert, gx_err_path(f, sizeof f, where, "%s.client-certificate-data", where), err)) return -1;
    } else if (cert) {
        k->cert_file = abs_path(dir, cert);
        if (read_file_blob(k->cert_file, &k->cert, gx_err_path(f, sizeof f, where, "%s.client-certificate", where), err))
            return -1;
    }
    if (keyd) {
        if (decode(keyd, &k->key, gx_err_path(f, sizeof f, where, "%s.client-key-data", where), err)) return -1;
    } else if (key) {
        k->key_file = abs_path(dir, key);
        if (read_file_blob(k->key_file, &k->key, gx_err_path(f, sizeof f, where, "%s.client-key", where), err)) return -1;
    }
    if (!k->cert.p != !k->key.p)
        return gx_errf(err, 422, gx_err_path(f, sizeof f, where, "%s.%s", where, k->cert.p ? "client-key" : "client-certificate"),
                       "is required with %s", k->cert.p ? "a client certificate" : "a client key");
    return 0;
}

static int parse_doc(const json_t *doc, const char *dir, const char *context, gx_kubeconfig *k, gx_err *err)
{
    char f[192];
    if (!json_is_object(doc)) return gx_errf(err, 422, "", "a kubeconfig is a mapping (apiVersion: v1, kind: Config)");
    const char *cur;
    if (opt_str(doc, "current-context", &cur, "", err)) return -1;
    if (!context) context = cur;
    if (!context || !*context) return gx_errf(err, 422, "current-context", "is not set and no context was given");
    json_t *contexts = json_object_get(doc, "contexts"), *clusters = json_object_get(doc, "clusters"),
           *users = json_object_get(doc, "users");
    size_t ci = 0, cl = 0, ui = 0;
    json_t *ctx = named(contexts, context, &ci);
    if (!ctx) return gx_errf(err, 422, "contexts", "no context named \"%s\"", context);
    k->context = gx_xstrdup(context);
    json_t *cv = json_object_get(ctx, "context");
    char where[96];
    snprintf(where, sizeof where, "contexts[%zu].context", ci);
    const char *cname, *uname, *ns;
    if (opt_str(cv, "cluster", &cname, where, err) || opt_str(cv, "user", &uname, where, err) ||
        opt_str(cv, "namespace", &ns, where, err))
        return -1;
    if (!cname) return gx_errf(err, 422, gx_err_path(f, sizeof f, where, "%s.cluster", where), "is required");
    if (ns) k->ns = gx_xstrdup(ns);
    json_t *c = named(clusters, cname, &cl);
    if (!c) return gx_errf(err, 422, gx_err_path(f, sizeof f, where, "%s.cluster", where), "no cluster named \"%s\"", cname);
    snprintf(where, sizeof where, "clusters[%zu].cluster", cl);
    if (read_cluster(json_object_get(c, "cluster"), where, dir, k, err)) return -1;
    if (!uname) return 0;   /* anonymous: the server may still allow reads */
    json_t *u = named(users, uname, &ui);
    snprintf(where, sizeof where, "contexts[%zu].context", ci);
    if (!u) return gx_errf(err, 422, gx_err_path(f, sizeof f, where, "%s.user", where), "no user named \"%s\"", uname);
    snprintf(where, sizeof where, "users[%zu].user", ui);
    return read_user(json_object_get(u, "user"), where, dir, k, err);
}

int gx_kubeconfig_parse(const char *buf, size_t len, const char *path, const char *context, gx_kubeconfig *out,
                        gx_err *err)
{
    memset(out, 0, sizeof *out);
    gx_yaml_docs d = {0};
    if (gx_yaml_parse(buf, len, &d, err)) { gx_err_wrap(err, "%s", path); return -1; }
    char *dir = gx_xstrdup(path);
    char *slash = strrchr(dir, '/');
    if (slash == dir) dir[1] = 0;
    else if (slash) *slash = 0;
    else { free(dir); dir = gx_xstrdup("."); }
    int rc = d.n != 1 ? gx_errf(err, 422, "", "a kubeconfig is one YAML document (found %zu)", d.n)
                      : parse_doc(d.docs[0], dir, context, out, err);
    if (rc) {
        if (d.n == 1) gx_linemap_annotate(d.lines[0], err);
        gx_err_wrap(err, "%s", path);
        gx_kubeconfig_free(out);
    } else {
        out->path = gx_xstrdup(path);
    }
    free(dir);
    gx_yaml_docs_free(&d);
    return rc;
}

int gx_kubeconfig_load(const char *path, const char *context, gx_kubeconfig *out, gx_err *err)
{
    memset(out, 0, sizeof *out);
    size_t n;
    char *buf = (char *)slurp(path, KUBECONFIG_MAX, &n);
    if (!buf) return gx_errf(err, 422, "kubeconfig", "cannot read %s: %s", path, strerror(errno));
    int rc = gx_kubeconfig_parse(buf, n, path, context, out, err);
    sodium_memzero(buf, n);   /* it held tokens and keys */
    free(buf);
    return rc;
}

char *gx_kubeconfig_bearer(const gx_kubeconfig *k, gx_err *err)
{
    gx_err_clear(err);
    if (k->token) return gx_xstrdup(k->token);
    if (!k->token_file) return NULL;
    size_t n;
    char *b = (char *)slurp(k->token_file, 64 * 1024, &n);
    if (!b) {
        gx_errf(err, 422, "tokenFile", "%s: cannot read %s: %s", k->path ? k->path : "kubeconfig", k->token_file,
                strerror(errno));
        return NULL;
    }
    b[strcspn(b, "\r\n")] = 0;
    return b;
}
