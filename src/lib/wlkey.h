/* wlkey: the key of a workload, "namespace/name", from the API to the store.
 * Owns: gx_wlkey and the one function that builds it. It refuses (never cuts) a
 * namespace that is not a DNS-1123 label or a name that is not a DNS-1123 subdomain, with
 * Kubernetes' message (lib/k8sname), so a key held anywhere (the daemon's workloads, the
 * gateway's model servers, a pod's watch, a log stream) names exactly one workload, fits
 * its buffers, and is safe as two path components (no '/', never "." or ".."). */
#ifndef GX_WLKEY_H
#define GX_WLKEY_H
#include "lib/err.h"
#include "lib/k8sname.h"

#define GX_WLKEY_NS_MAX GX_K8S_LABEL_MAX          /* 63 */
#define GX_WLKEY_NAME_MAX GX_K8S_SUBDOMAIN_MAX    /* 253 */
#define GX_WLKEY_MAX (GX_WLKEY_NS_MAX + 1 + GX_WLKEY_NAME_MAX)   /* "ns/name": 317 */

typedef struct gx_wlkey {
    char ns[GX_WLKEY_NS_MAX + 1];
    char name[GX_WLKEY_NAME_MAX + 1];
    char key[GX_WLKEY_MAX + 1];    /* "ns/name" */
} gx_wlkey;

/* Build k from a namespace and a name; -1 with err (422, field metadata.namespace or
 * metadata.name) when either breaks the rules above. k is untouched on failure. */
int gx_wlkey_make(gx_wlkey *k, const char *ns, const char *name, gx_err *err);
/* The same from "ns/name". */
int gx_wlkey_parse(gx_wlkey *k, const char *key, gx_err *err);

#endif
