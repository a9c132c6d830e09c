/* identity: the uid and gid each namespace's sandboxed pods run as (docs/security.md).
 * Owns: the choice: the admin's mapping (run.namespaces.NS.runAsUser) when there is one,
 * else one uid of run.uidRange given to the namespace the first time it runs a pod and
 * kept in the store forever after (so files it left keep their owner). A uid of the
 * range that belongs to an account of this host, or that the admin mapped to another
 * namespace, is never given. The gid is the uid's number (a group of its own).
 * Must not: switch identities (gpuaas-shim --as does, inside the sandbox).
 *
 * Pods on an MPS-shared GPU all run as one identity, GX_IDENTITY_MPS: NVIDIA's MPS
 * control daemon runs one server per Linux user at a time, so clients of a second uid
 * would wait until the first uid's last client is gone. What separates them there is the
 * mount, PID and IPC namespaces and the cgroups, not the uid (docs/security.md). */
#ifndef GX_IDENTITY_H
#define GX_IDENTITY_H
#include <stdint.h>
#include <sys/types.h>
#include "lib/err.h"
#include "run/run_config.h"
#include "store/store.h"

#define GX_IDENTITY_MPS ":mps"   /* not a namespace name (':' is no DNS-1123 character) */

typedef struct gx_identity gx_identity;

/* Load the recorded uids. rc and st are borrowed for the identity's life. */
gx_identity *gx_identity_open(const gx_run_config *rc, gx_store *st, gx_err *err);
void gx_identity_free(gx_identity *id);

/* The identity of ns (or GX_IDENTITY_MPS), taking and recording a uid from the range the
 * first time. Fails (503) when the range is used up, or with the store's error. */
int gx_identity_of(gx_identity *id, const char *ns, int64_t now_ms, uid_t *uid, gid_t *gid, gx_err *err);

#endif
