/* zz_stub: deleted at merge */
/* zz_stub_render: throwaway stand-ins for what the render helper of part 2 writes
 * (render_gpu.c, render_model.c, render_job.c), so that `gpuaas render` links and its
 * plumbing can be tested before the merge. Owns: nothing real. Must not: hold logic. */
#include "fleet/fleet.h"

json_t *gx_fleet_render_gpu(const gx_fleet_cluster *c, gx_err *err)
{
    (void)c; (void)err;
    return json_array();
}

json_t *gx_fleet_render_model(const gx_fleet_cluster *c, const json_t *model, gx_err *err)
{
    (void)c; (void)err;
    return json_deep_copy(model);
}

json_t *gx_fleet_render_job(const gx_fleet *f, const gx_fleet_cluster *c, const json_t *request, const char *user,
                            gx_err *err)
{
    (void)f; (void)c; (void)user; (void)err;
    return json_deep_copy(request);
}
