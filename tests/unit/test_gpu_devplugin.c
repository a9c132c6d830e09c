/* Unit tests for gpu/devplugin: NVIDIA device-plugin sharing configs, read unchanged
 * (time-slicing, MPS, renameByDefault, failRequestsGreaterThanOne, devices) and the
 * bad ones (replicas 0, MPS on a MIG resource) refused with the field named. */
#include <criterion/criterion.h>
#include <string.h>
#include "gpu/devplugin.h"
#include "lib/yaml.h"

static int parse(const char *y, gx_dp_config *c, gx_err *e)
{
    gx_yaml_docs d;
    gx_err_clear(e);
    cr_assert_eq(gx_yaml_parse(y, strlen(y), &d, e), 0, "%s", e->msg);
    int rc = gx_gpu_dp_parse(d.docs[0], c, e);
    gx_yaml_docs_free(&d);
    return rc;
}

Test(gpu_devplugin, time_slicing_as_the_readme_writes_it)
{
    gx_dp_config c;
    gx_err e;
    cr_assert_eq(parse("version: v1\nflags:\n  migStrategy: none\nsharing:\n  timeSlicing:\n    resources:\n"
                       "    - name: nvidia.com/gpu\n      replicas: 10\n", &c, &e), 0, "%s", e.msg);
    cr_assert_eq(c.strategy, GX_DP_TIMESLICING);
    cr_assert_eq(c.n_res, 1);
    cr_assert_eq(c.res[0].replicas, 10);
    cr_assert_not(c.fail_gt1);
    const gx_dp_resource *r = gx_gpu_dp_for(&c, "nvidia.com/gpu", 3, "GPU-x");
    cr_assert(r);
    char buf[80];
    cr_assert_str_eq(gx_gpu_dp_offered(&c, r, buf, sizeof buf), "nvidia.com/gpu");
    cr_assert_null(gx_gpu_dp_for(&c, "nvidia.com/mig-1g.10gb", 0, "GPU-x"));
}

Test(gpu_devplugin, mps_rename_and_devices)
{
    gx_dp_config c;
    gx_err e;
    cr_assert_eq(parse("version: v1\nsharing:\n  mps:\n    renameByDefault: true\n    resources:\n"
                       "    - name: nvidia.com/gpu\n      replicas: 4\n      devices: [1, GPU-abc]\n", &c, &e), 0, "%s", e.msg);
    cr_assert_eq(c.strategy, GX_DP_MPS);
    cr_assert(c.fail_gt1, "MPS forces failRequestsGreaterThanOne");
    cr_assert_null(gx_gpu_dp_for(&c, "nvidia.com/gpu", 0, "GPU-zzz"));
    cr_assert(gx_gpu_dp_for(&c, "nvidia.com/gpu", 1, "GPU-zzz"));
    const gx_dp_resource *r = gx_gpu_dp_for(&c, "nvidia.com/gpu", 5, "GPU-abc");
    cr_assert(r);
    char buf[80];
    cr_assert_str_eq(gx_gpu_dp_offered(&c, r, buf, sizeof buf), "nvidia.com/gpu.shared");
    /* both sections: mps wins, as in the plugin */
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 2}]\n"
                       "  mps:\n    resources: [{name: nvidia.com/gpu, replicas: 3}]\n", &c, &e), 0, "%s", e.msg);
    cr_assert_eq(c.strategy, GX_DP_MPS);
    cr_assert_eq(c.res[0].replicas, 3);
    /* replicas 1 everywhere: no sharing */
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 1}]\n", &c, &e), 0);
    cr_assert_eq(c.strategy, GX_DP_NONE);
    /* time-slicing of MIG devices is allowed */
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    failRequestsGreaterThanOne: true\n    resources:\n"
                       "    - {name: nvidia.com/mig-1g.10gb, replicas: 2}\n", &c, &e), 0, "%s", e.msg);
    cr_assert(c.fail_gt1);
    cr_assert(gx_gpu_dp_for(&c, "nvidia.com/mig-1g.10gb", 0, NULL));
}

Test(gpu_devplugin, bad_configs)
{
    gx_dp_config c;
    gx_err e;
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 0}]\n", &c, &e), -1);
    cr_assert_str_eq(e.field, "sharing.timeSlicing.resources[0].replicas");
    cr_assert(strstr(e.msg, "at least 1 (got 0)"), "%s", e.msg);
    cr_assert_eq(parse("version: v1\nsharing:\n  mps:\n    resources: [{name: nvidia.com/mig-1g.10gb, replicas: 2}]\n", &c, &e), -1);
    cr_assert(strstr(e.msg, "MPS cannot share a MIG device"), "%s", e.msg);
    cr_assert_eq(parse("version: v1\nsharing:\n  mps:\n    resources: [{name: nvidia.com/gpu, replicas: 49}]\n", &c, &e), -1);
    cr_assert(strstr(e.msg, "at most 48"), "%s", e.msg);
    cr_assert_eq(parse("version: v2\n", &c, &e), -1);
    cr_assert_str_eq(e.field, "version");
    cr_assert_eq(parse("version: v1\nsharing:\n  timeslicing: {}\n", &c, &e), -1);
    cr_assert_str_eq(e.field, "sharing.timeslicing");
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources: [{name: cpu, replicas: 2}]\n", &c, &e), -1);
    cr_assert(strstr(e.msg, "cannot be shared"), "%s", e.msg);
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources: []\n", &c, &e), -1);
    cr_assert_eq(parse("version: v1\nsharing:\n  timeSlicing:\n    resources: [{name: nvidia.com/gpu, replicas: 2, devices: [x, -1]}]\n", &c, &e), -1);
}
