/* store/ratelimit: the gateway's rate-limit windows, saved so that a restart does not
 * hand every key and tier a fresh budget (table rate_windows, migration 5).
 * Owns: the statements on rate_windows.
 * Must not: be called on the gateway's request path: src/maas queues changed windows
 * each second and at shutdown (the store's background thread writes them), and reads
 * them once at start. */
#ifndef GX_STORE_RATELIMIT_H
#define GX_STORE_RATELIMIT_H
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "lib/err.h"
#include "store/store.h"

/* One fixed window of one subject: scope "key" (name: the key's id), "tier" (the tier's
 * name, for its shared limits) or "user" ("<tier>/<user>": the user's budget in that
 * tier, its userLimits); kind "requests" or "tokens". */
typedef struct gx_store_rate_window {
    const char *scope, *name, *kind;
    int64_t window_ms, start_ms, used;
} gx_store_rate_window;

/* Insert or replace n windows in one transaction (all or nothing). */
int gx_store_put_rate_windows(gx_store *s, const gx_store_rate_window *rows, size_t n, gx_err *err);
/* Hand n windows to the store's background writer (they are copied), which writes them
 * in order with the usage rows; written here and now when the store has no writer. */
int gx_store_queue_rate_windows(gx_store *s, const gx_store_rate_window *rows, size_t n, gx_err *err);
/* Windows still open at now_ms (start_ms + window_ms > now_ms), as
 * [{"scope","name","kind","windowMs","startMs","used"}]; the ended ones are deleted. */
json_t *gx_store_rate_windows(gx_store *s, int64_t now_ms, gx_err *err);

#endif
