/* core/share_place: the engine's seam to core/share (see share_place.c).
 * engine_place.c calls these when a Node has shared GPUs; nothing else should.
 * Owns: nothing beyond the prototypes. Must not: do I/O. */
#ifndef GX_SHARE_PLACE_H
#define GX_SHARE_PLACE_H
#include <stddef.h>
#include <jansson.h>
#include "core/engine.h"
#include "lib/err.h"

struct gx_engine;
struct gx_node;
struct gx_wl;

/* May a pod of podset ps of w go on node n (labels, flavors, taints)? engine_place.c's rule. */
typedef int (*gx_share_eligible_fn)(const struct gx_engine *e, const struct gx_node *n, const struct gx_wl *w, int ps);

/* Build n->share from the Node's spec.gpus[].sharing (n->gpus already parsed); leaves it
 * NULL when no GPU is shared. -1 with err naming spec.gpus[i].sharing. */
int gx_share_engine_node(struct gx_node *n, const json_t *obj, gx_err *err);
void gx_share_engine_node_free(struct gx_node *n);
/* Free what the engine keeps for shared placement (its policy context). */
void gx_share_engine_free(struct gx_engine *e);
/* Is any node's GPU shared? (then every placement goes through gx_share_engine_try) */
int gx_share_engine_active(const struct gx_engine *e);
/* gx_engine_place_try for engines with shared nodes: same contract (1 fits, 0 with why). */
int gx_share_engine_try(struct gx_engine *e, struct gx_wl *w, int commit, char *why, size_t why_n,
                        gx_share_eligible_fn ok);
/* Free w's shares (call before engine_place.c drops its users and arrays). */
void gx_share_engine_release(struct gx_engine *e, struct gx_wl *w);
/* Placement devices of a pod on a shared node (MIG devices, replicas, shares): their
 * count, the first max written to out; -1 when its node is not shared. */
int gx_share_engine_devs(const struct gx_engine *e, const struct gx_wl *w, int pod, gx_engine_dev *out, int max);
/* gx_share_gpu_view of GPU g of n with holder names, NULL when n is not shared. */
json_t *gx_share_engine_gpu_view(const struct gx_engine *e, const struct gx_node *n, int g);
/* The pending reason of a workload whose quota fits but whose devices do not (engine_view.c),
 * e.g. "quota fits but no GPU fits: 0 nvidia.com/mig-3g.40gb free on distinct devices, ...".
 * 0 when no node is shared (the engine's own wording applies). */
int gx_share_engine_explain(const struct gx_engine *e, const struct gx_wl *w, char *m, size_t n);
/* Re-take the devices a restored status names; 1 done, 0 not possible (place afresh). */
int gx_share_engine_restore(struct gx_engine *e, struct gx_wl *w, const json_t *placement);

#endif
