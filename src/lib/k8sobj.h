/* k8sobj: what a Kubernetes API server writes into an object and a user never does.
 * Owns: that list, shared by apply (which drops it before comparing, ops/objects.c) and
 * the fleet's renderers (which drop it before writing to git, fleet/render_kueue.c).
 * Must not: judge the rest of the object (its kind's owner does). */
#ifndef GX_K8SOBJ_H
#define GX_K8SOBJ_H
#include <jansson.h>

/* Remove from doc what the server sets: status, and metadata's creationTimestamp,
 * resourceVersion, uid, generation, managedFields, selfLink. Anything else is left. */
void gx_k8s_strip_server_fields(json_t *doc);

#endif
