/* fleet/kubeconfig: what the status read-back needs from a kubeconfig file: the API
 * server's URL, how to trust it (CA file or data, or not at all) and how to prove who we
 * are (a bearer token, a token file, or a client certificate and key).
 * Owns: reading a kubeconfig (YAML) and choosing its context; base64 *-data decoded into
 * memory (handed to libcurl as blobs: no temporary files).
 * Must not: log a token or a key, or run anything: exec and auth-provider plugins are
 * refused (the hub runs no cluster's helper programs). */
#ifndef GX_FLEET_KUBECONFIG_H
#define GX_FLEET_KUBECONFIG_H
#include <stddef.h>
#include "lib/err.h"

/* A blob of bytes (PEM) read from a file or decoded from base64. */
typedef struct gx_kube_blob {
    unsigned char *p;
    size_t n;
} gx_kube_blob;

typedef struct gx_kubeconfig {
    char *path;            /* the file it was read from */
    char *context;         /* the context chosen */
    char *server;          /* https://host:port[/prefix], no trailing '/' */
    char *ns;              /* the context's namespace, NULL: none */
    int insecure;          /* insecure-skip-tls-verify: true */
    char *ca_file;         /* certificate-authority (absolute), NULL: none */
    gx_kube_blob ca;       /* certificate-authority-data, decoded; p NULL: none */
    char *token;           /* token, NULL: none (secret: never log it) */
    char *token_file;      /* tokenFile (absolute): re-read for each request, as it rotates */
    char *cert_file;       /* client-certificate (absolute) */
    gx_kube_blob cert;     /* client-certificate-data */
    char *key_file;        /* client-key (absolute) */
    gx_kube_blob key;      /* client-key-data (secret) */
} gx_kubeconfig;

/* Read the kubeconfig at path and pick context (NULL: its current-context). Relative
 * file paths in it are taken from the kubeconfig's folder. err names the file and the
 * field ("kube.yaml: users[0].user.exec: ..."). */
int gx_kubeconfig_load(const char *path, const char *context, gx_kubeconfig *out, gx_err *err);
/* The same from a buffer already read; path names it in errors and gives the folder. */
int gx_kubeconfig_parse(const char *buf, size_t len, const char *path, const char *context, gx_kubeconfig *out,
                        gx_err *err);
/* Free what it holds (secrets wiped first); all zero again. */
void gx_kubeconfig_free(gx_kubeconfig *k);
/* The bearer token to send now: token, or the first line of tokenFile read afresh.
 * malloc'd (the caller wipes and frees it), NULL with err when the file cannot be read,
 * NULL without an error (err->msg empty) when the user has no token. */
char *gx_kubeconfig_bearer(const gx_kubeconfig *k, gx_err *err);

#endif
