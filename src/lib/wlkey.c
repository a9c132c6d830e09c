/* wlkey: building a workload's key (see wlkey.h). Pure. */
#include <stdio.h>
#include <string.h>
#include "lib/wlkey.h"

int gx_wlkey_make(gx_wlkey *k, const char *ns, const char *name, gx_err *err)
{
    if (gx_k8s_check_label(ns, GX_WLKEY_NS_MAX, "metadata.namespace", err)) return -1;
    if (!name || !*name) return gx_errf(err, 422, "metadata.name", "Required value: name or generateName is required");
    if (gx_k8s_check_subdomain(name, GX_WLKEY_NAME_MAX, "metadata.name", err)) return -1;
    /* the checks bound both parts, so these copies are whole */
    memcpy(k->ns, ns, strlen(ns) + 1);
    memcpy(k->name, name, strlen(name) + 1);
    snprintf(k->key, sizeof k->key, "%s/%s", k->ns, k->name);
    return 0;
}

int gx_wlkey_parse(gx_wlkey *k, const char *key, gx_err *err)
{
    const char *slash = strchr(key, '/');
    if (!slash) return gx_errf(err, 422, "", "a workload key is NAMESPACE/NAME, not \"%.100s\"", key);
    /* the namespace part, or enough of a too long one for its message (which echoes
     * at most 120 characters of it) */
    char ns[128];
    size_t nl = (size_t)(slash - key);
    if (nl >= sizeof ns) nl = sizeof ns - 1;
    memcpy(ns, key, nl);
    ns[nl] = 0;
    return gx_wlkey_make(k, ns, slash + 1, err);
}
