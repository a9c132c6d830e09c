/* mux: the HTTP server's one dispatcher. Each front door mounts a path prefix with its
 * own handler; the first mount whose prefix matches and which takes the request
 * answers it. What nobody takes is a 404 in the daemon's envelope.
 * Owns: prefix matching in mount order, the request counter (each request is counted
 * once, when it is dispatched: a deferred answer completes without coming back here).
 * Must not: know any route, user or JSON shape beyond the 404. */
#ifndef GX_MUX_H
#define GX_MUX_H
#include <stdint.h>
#include "net/http.h"

#define GX_MUX_MAX 16

/* Returns 1 when it answered (or deferred) the request, 0 to let later mounts try. */
typedef int (*gx_mount_fn)(void *ud, gx_req *req, gx_resp *resp);

typedef struct gx_mux {
    struct { const char *prefix; int exact; gx_mount_fn fn; void *ud; } m[GX_MUX_MAX];
    int n;
    uint64_t requests;
} gx_mux;

/* Mount fn at prefix ("/v1/"); "=/path" mounts one exact path. Returns -1 when full. */
int gx_mux_mount(gx_mux *x, const char *prefix, gx_mount_fn fn, void *ud);
/* The gx_http_fn to give gx_http_start, with the mux as its ud. */
void gx_mux_route(gx_req *req, gx_resp *resp, void *mux);

#endif
