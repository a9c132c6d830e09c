/* identities: which uid each namespace's sandboxed pods run as (docs/security.md).
 * Owns: the SQL of the ns_identities table. Must not: choose uids (run/identity.c does). */
#ifndef GX_STORE_IDENTITIES_H
#define GX_STORE_IDENTITIES_H
#include <stdint.h>
#include <jansson.h>
#include "store/store.h"

/* Record ns -> uid; fails (409) when either is already taken. */
int gx_store_identity_put(gx_store *s, const char *ns, int64_t uid, int64_t now_ms, gx_err *err);
/* Every recorded {"namespace": uid} as one object, or NULL with err. */
json_t *gx_store_identities(gx_store *s, gx_err *err);

#endif
