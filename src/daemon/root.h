/* root: the composition root. It alone builds every subsystem, reads the environment,
 * sets process limits and wires the front doors to the daemon: the gateway and the
 * portal register their kinds and hooks with ops, mount their paths on the HTTP
 * dispatcher, and meet each other only through callbacks set here.
 * Owns: the order of construction and destruction, the test knobs read from the
 * environment (GPUAAS_GATEWAY_*, GPUAAS_BWRAP; docs/development.md lists them),
 * RLIMIT_NOFILE, the loop's per-iteration work. PATH stays where executables are
 * looked for (run/sandbox.c, gpu/mps.c) and what pods inherit (run/podspec.c).
 * Must not: hold request or workload logic (that is ops/, api/, maas/, portal/). */
#ifndef GX_ROOT_H
#define GX_ROOT_H
#include <stdint.h>
#include "api/api.h"
#include "maas/maas.h"
#include "net/mux.h"
#include "ops/daemon.h"
#include "portal/portal.h"

typedef struct gx_root {
    gx_daemon d;
    gx_maas *maas;
    gx_portal *portal;
    gx_api *api;
    gx_mux mux;
    int64_t streams_polled_at;   /* last wake of log followers (prepare) */
} gx_root;

/* The knobs that settle the configuration (GPUAAS_BWRAP into cfg->run), once, after
 * gpuaas.yaml and the flags are read and before anything is built from them. */
void gx_root_env(gx_config *cfg);
/* The front doors, with their kinds and hooks registered (before objects load). */
int gx_root_front_doors(gx_root *r, gx_err *err);
/* Mount the front doors' paths and start listening. */
int gx_root_listen(gx_root *r, gx_err *err);
/* The loop's work before each wait; returns the longest it may sleep (ms, -1 none). */
int64_t gx_root_prepare(gx_loop *l, void *ud);
/* Before the HTTP server stops, and after it. */
void gx_root_shutdown(gx_root *r);
void gx_root_free(gx_root *r);

#endif
