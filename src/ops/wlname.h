/* wlname: the name of a submitted Job or Workload, judged at the edge.
 * Owns: Kubernetes' name rules for workloads (a Job's name is a DNS-1123 label of at most
 * 63 characters, since its pods' names derive from it; a Workload's a subdomain; the
 * namespace a label) and metadata.generateName (prefix cut to 58 characters plus 5
 * random characters, drawn again when the name is taken).
 * Must not: change the daemon's state: it only reads which keys are taken. */
#ifndef GX_WLNAME_H
#define GX_WLNAME_H
#include "ops/daemon.h"

/* A copy of manifest whose metadata.name is the workload's name (generated when only
 * generateName is given), or NULL with err (422 naming metadata.name, .generateName or
 * .namespace, in Kubernetes' words; 409 when no free generated name was found). Every
 * submission (REST, the portal's templates, the gateway's model servers) passes here. */
json_t *gx_d_name_workload(gx_daemon *d, const json_t *manifest, gx_err *err);

#endif
