/* identity: namespace -> uid/gid (see identity.h). */
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include "lib/alloc.h"
#include "run/identity.h"
#include "store/identities.h"

struct gx_identity {
    const gx_run_config *rc;
    gx_store *st;
    json_t *given;                 /* {"ns": uid} as recorded */
};

gx_identity *gx_identity_open(const gx_run_config *rc, gx_store *st, gx_err *err)
{
    json_t *given = gx_store_identities(st, err);
    if (!given) return NULL;
    gx_identity *id = gx_xcalloc(1, sizeof *id);
    id->rc = rc;
    id->st = st;
    id->given = given;
    return id;
}

void gx_identity_free(gx_identity *id)
{
    if (!id) return;
    json_decref(id->given);
    free(id);
}

/* Is uid already someone's: recorded for a namespace, mapped by the admin, or an account
 * of this host (a pod with that uid could read the account's files)? */
static int uid_taken(const gx_identity *id, uid_t uid)
{
    const char *k;
    json_t *v;
    json_object_foreach(id->given, k, v)
        if ((uid_t)json_integer_value(v) == uid) return 1;
    json_object_foreach(id->rc->namespaces, k, v) {
        const json_t *u = json_object_get(v, "uid");
        if (json_is_integer(u) && (uid_t)json_integer_value(u) == uid) return 1;
    }
    return getpwuid(uid) != NULL;
}

int gx_identity_of(gx_identity *id, const char *ns, int64_t now_ms, uid_t *uid, gid_t *gid, gx_err *err)
{
    if (gx_run_config_ns_id(id->rc, ns, uid, gid)) return 0;
    const json_t *v = json_object_get(id->given, ns);
    if (json_is_integer(v)) {
        *uid = (uid_t)json_integer_value(v);
        *gid = (gid_t)*uid;
        return 0;
    }
    for (uint64_t u = id->rc->uid_lo; u <= id->rc->uid_hi; u++) {
        if (uid_taken(id, (uid_t)u)) continue;
        if (gx_store_identity_put(id->st, ns, (int64_t)u, now_ms, err)) return -1;
        json_object_set_new(id->given, ns, json_integer((json_int_t)u));
        *uid = (uid_t)u;
        *gid = (gid_t)u;
        return 0;
    }
    return gx_errf(err, 503, "", "no uid left in run.uidRange %u-%u for namespace %s: widen the range",
                   (unsigned)id->rc->uid_lo, (unsigned)id->rc->uid_hi, ns);
}
