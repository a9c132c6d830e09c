/* gpus: the GPU operations a front door may ask for (ops.h), over gpu/api.c with the
 * daemon's engine: a MIG change is applied to the engine's nodes, so it is an
 * operation of the daemon, not a query of the inventory. */
#include "gpu/api.h"
#include "ops/daemon.h"

int gx_d_gpus(gx_daemon *d, const char *method, const char *const *segs, int n, const char *body, size_t body_len,
              int admin, const char *window, json_t **out, gx_err *err)
{
    return gx_gpu_api(d->gpu, d->eng, method, segs, n, body, body_len, admin, window, gx_loop_now(d->loop), out, err);
}
