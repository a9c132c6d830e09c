/* fleet/publisher: runs gx_git_commit_push on one worker thread, so that the loop never
 * waits on git or the network, and hands each result back on the loop.
 * Owns: the thread, its job queue, and the eventfd results come back through.
 * Must not: retry or persist anything (the daemon keeps unpublished requests in SQLite
 * and submits them again); call back on any thread but the loop's. */
#ifndef GX_FLEET_PUBLISHER_H
#define GX_FLEET_PUBLISHER_H
#include <stddef.h>
#include <stdint.h>
#include "fleet/fleet.h"

struct gx_loop;
typedef struct gx_publisher gx_publisher;
/* Runs on the loop (after the job ran on the thread): ok 1 with commit (40 hex), or 0 with err. */
typedef void (*gx_publish_done_fn)(void *ud, uint64_t id, int ok, const char *commit, const gx_err *err);
/* One worker thread; workdir_root: DATA/fleet (each cluster's clone in <root>/<cluster>/repo).
 * Results come back through an eventfd watched on loop l. NULL with err on failure. */
gx_publisher *gx_publisher_new(struct gx_loop *l, const char *workdir_root, gx_publish_done_fn done, void *ud,
                               gx_err *err);
/* Queue one commit (everything copied). Jobs run one at a time in submission order.
 * Returns the job's id (> 0). */
uint64_t gx_publisher_submit(gx_publisher *p, const char *cluster, const gx_fleet_git *g,
                             const gx_git_change *changes, size_t n, const char *author_name,
                             const char *author_email, const char *message);
/* Jobs queued or running, or done with their callback not yet run. */
size_t gx_publisher_pending(const gx_publisher *p);
/* Finish the running job, drop the queue (the caller's store still has them), join.
 * No callback runs after (nor during) this call. */
void gx_publisher_free(gx_publisher *p);

#endif
