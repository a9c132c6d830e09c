/* fleet/render_res: what render_job.c and render_model.c share (fleet-internal, not part
 * of the fleet.h contract): the resource names a request takes on a cluster.
 * Owns: mapping a {resource: quantity} map to the names cluster c's GPU sharing mode
 * offers (nvidia.com/gpu -> its renamed resource, MIG profiles checked against its
 * mig-parted configs, fractional shares refused).
 * Must not: be called from outside src/fleet, or do I/O. */
#ifndef GX_FLEET_RENDER_RES_H
#define GX_FLEET_RENDER_RES_H
#include <jansson.h>
#include "fleet/fleet.h"
#include "lib/err.h"

/* res ({name: quantity}, may be NULL: an empty map) as c offers it, in a new map (same
 * order, quantities copied). field names res in errors ("spec.workload.resources"): a
 * refused name is field.NAME ("cluster gpu-a offers no nvidia.com/gpumem: its GPUs are
 * time-sliced"). NULL with err. */
json_t *gx_fleet_map_resources(const gx_fleet_cluster *c, const json_t *res, const char *field, gx_err *err);
/* Whether c offers namespace ns. */
int gx_fleet_offers_ns(const gx_fleet_cluster *c, const char *ns);

#endif
