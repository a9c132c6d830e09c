/* Unit tests for gpu/nvml: the dlopen path, symbol resolution and error handling.
 * There is no GPU here: every test loads the fake libnvidia-ml.so.1 that the Makefile
 * builds from tests/fakes/nvml (FAKE_NVML_* variables shape what it reports). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "gpu/nvml.h"

#define FAKE "build/fakes/nvml/libnvidia-ml.so.1"
#define FAKE_OLD "build/fakes/nvml-old/libnvidia-ml.so.1"

static gx_nvml *open_fake(gx_err *e)
{
    gx_err_clear(e);
    gx_nvml *n = gx_gpu_nvml_open(FAKE, e);
    cr_assert(n, "fake NVML (run make fakes): %s", e->msg);
    return n;
}

Test(gpu_nvml, devices_through_dlopen)
{
    setenv("FAKE_NVML_GPUS", "H100-80GB,A100-40GB,L4", 1);
    setenv("FAKE_NVML_UTIL", "37", 1);
    setenv("FAKE_NVML_PROCS", "0:4242:2048+0:4343:1024", 1);
    gx_err e;
    gx_nvml *n = open_fake(&e);
    cr_assert_str_eq(gx_gpu_nvml_driver(n), "550.54.15-fake");
    cr_assert_eq(gx_gpu_nvml_count(n, &e), 3);
    gx_nvml_dev d;
    cr_assert_eq(gx_gpu_nvml_query(n, 0, &d, &e), 0, "%s", e.msg);
    cr_assert_str_eq(d.name, "NVIDIA H100 80GB HBM3");
    cr_assert(!strncmp(d.uuid, "GPU-", 4));
    cr_assert_eq(d.pci_id, 0x233010DEu);
    cr_assert_str_eq(d.pci_bus_id, "00000000:17:00.0");
    cr_assert_eq(d.mem_total_mib, 81559);
    cr_assert_eq(d.mem_used_mib, 3072);
    cr_assert_eq(d.util_gpu, 37);
    cr_assert_eq(d.n_procs, 2);
    cr_assert_eq(d.procs[1].pid, 4343u);
    cr_assert_eq(d.procs[1].mem_mib, 1024);
    cr_assert_eq(d.mig_mode, 0);
    cr_assert_eq(gx_gpu_nvml_query(n, 2, &d, &e), 0);
    cr_assert_eq(d.mig_mode, -1, "an L4 has no MIG");
    cr_assert_eq(gx_gpu_nvml_query(n, 7, &d, &e), -1);
    cr_assert(strstr(e.msg, "Invalid Argument"), "%s", e.msg);
    gx_gpu_nvml_close(n);
}

Test(gpu_nvml, mig_devices_are_read)
{
    setenv("FAKE_NVML_GPUS", "A100-40GB", 1);
    setenv("FAKE_NVML_MIG", "0=3g.20gb+2g.10gb+1g.5gb", 1);
    gx_err e;
    gx_nvml *n = open_fake(&e);
    gx_nvml_dev d;
    cr_assert_eq(gx_gpu_nvml_query(n, 0, &d, &e), 0, "%s", e.msg);
    cr_assert_eq(d.mig_mode, 1);
    cr_assert_eq(d.util_gpu, -1, "utilisation is not reported in MIG mode");
    cr_assert_eq(d.n_mig, 3);
    cr_assert_str_eq(d.mig[0].profile, "3g.20gb");
    cr_assert_eq(d.mig[0].start, 0);
    cr_assert_eq(d.mig[0].size, 4);
    cr_assert_str_eq(d.mig[1].profile, "2g.10gb");
    cr_assert_eq(d.mig[1].start, 4);
    cr_assert(!strncmp(d.mig[2].uuid, "MIG-", 4));
    cr_assert_eq(d.mig[2].mem_total_mib, 5120);
    gx_gpu_nvml_close(n);
}

Test(gpu_nvml, mig_apply_replaces_the_layout)
{
    setenv("FAKE_NVML_GPUS", "H100-80GB", 1);
    setenv("FAKE_NVML_MIG", "0=7g.80gb", 1);
    gx_err e;
    gx_nvml *n = open_fake(&e);
    const char *names[] = {"1g.10gb", "3g.40gb"};
    int counts[] = {2, 1};
    gx_mig_slot s[7];
    int k = gx_gpu_mig_fit(gx_gpu_mig_model("H100-80GB"), names, counts, 2, s, "x", &e);
    cr_assert_eq(k, 3, "%s", e.msg);
    cr_assert_eq(gx_gpu_nvml_mig_apply(n, 0, 1, s, k, &e), 0, "%s", e.msg);
    gx_nvml_dev d;
    cr_assert_eq(gx_gpu_nvml_query(n, 0, &d, &e), 0);
    cr_assert_eq(d.n_mig, 3);
    int ones = 0, threes = 0;
    for (int i = 0; i < 3; i++) {
        ones += !strcmp(d.mig[i].profile, "1g.10gb");
        threes += !strcmp(d.mig[i].profile, "3g.40gb");
    }
    cr_assert_eq(ones, 2);
    cr_assert_eq(threes, 1);
    cr_assert_eq(gx_gpu_nvml_mig_apply(n, 0, 0, NULL, 0, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_gpu_nvml_query(n, 0, &d, &e), 0);
    cr_assert_eq(d.mig_mode, 0);
    cr_assert_eq(d.n_mig, 0);
    gx_gpu_nvml_close(n);
}

Test(gpu_nvml, errors_name_the_cause)
{
    gx_err e;
    gx_err_clear(&e);
    cr_assert_null(gx_gpu_nvml_open("build/fakes/none/libnvidia-ml.so.1", &e));
    cr_assert(strstr(e.msg, "cannot load"), "%s", e.msg);
    gx_err_clear(&e);
    cr_assert_null(gx_gpu_nvml_open(FAKE_OLD, &e));
    cr_assert(strstr(e.msg, "nvmlInit_v2"), "%s", e.msg);
    setenv("FAKE_NVML_FAIL", "init", 1);
    gx_err_clear(&e);
    cr_assert_null(gx_gpu_nvml_open(FAKE, &e));
    cr_assert(strstr(e.msg, "Driver Not Loaded"), "%s", e.msg);
    unsetenv("FAKE_NVML_FAIL");
}

Test(gpu_nvml, compute_mode_read_and_set)
{
    char dir[] = "/tmp/gpuaas-fakestate.XXXXXX";
    cr_assert(mkdtemp(dir));
    setenv("FAKE_NVML_GPUS", "H100-80GB", 1);
    setenv("FAKE_NVML_STATE", dir, 1);
    gx_err e;
    gx_nvml *n = open_fake(&e);
    cr_assert_eq(gx_gpu_nvml_compute_mode(n, 0, &e), GX_NVML_COMPUTE_DEFAULT, "%s", e.msg);
    cr_assert_eq(gx_gpu_nvml_set_compute_mode(n, 0, GX_NVML_COMPUTE_EXCLUSIVE_PROCESS, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_gpu_nvml_compute_mode(n, 0, &e), GX_NVML_COMPUTE_EXCLUSIVE_PROCESS);
    cr_assert_str_eq(gx_gpu_nvml_compute_mode_name(GX_NVML_COMPUTE_EXCLUSIVE_PROCESS), "Exclusive_Process");
    setenv("FAKE_NVML_FAIL", "setcompute", 1);
    cr_assert_eq(gx_gpu_nvml_set_compute_mode(n, 0, GX_NVML_COMPUTE_DEFAULT, &e), -1);
    cr_assert(strstr(e.msg, "nvmlDeviceSetComputeMode(Default): Insufficient Permissions"), "%s", e.msg);
    unsetenv("FAKE_NVML_FAIL");
    cr_assert_eq(gx_gpu_nvml_set_compute_mode(n, 0, GX_NVML_COMPUTE_DEFAULT, &e), 0);
    gx_gpu_nvml_close(n);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

Test(gpu_nvml, gpm_graphics_util_per_gpu_and_gpu_instance)
{
    setenv("FAKE_NVML_GPUS", "H100-80GB,L4", 1);
    setenv("FAKE_NVML_MIG", "0=3g.40gb+1g.10gb", 1);
    setenv("FAKE_NVML_GPM", "42.5", 1);
    gx_err e;
    gx_nvml *n = open_fake(&e);
    gx_nvml_dev d;
    cr_assert_eq(gx_gpu_nvml_query(n, 0, &d, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_gpu_nvml_gpm_supported(n, 0), 1);
    double pct = -1;
    int gi = (int)d.mig[1].gi_id;
    cr_assert_eq(gx_gpu_nvml_gr_active(n, 0, gi, &pct), 0, "the first sample has nothing to compare with");
    cr_assert_eq(gx_gpu_nvml_gr_active(n, 0, gi, &pct), 1);
    cr_assert_float_eq(pct, 42.5, 1e-9);
    cr_assert_eq(gx_gpu_nvml_gr_active(n, 1, -1, &pct), 0);
    cr_assert_eq(gx_gpu_nvml_gr_active(n, 1, -1, &pct), 1, "whole GPUs too");
    cr_assert_eq(gx_gpu_nvml_gr_active(n, 0, 99, &pct), -1, "no such GPU instance");
    gx_gpu_nvml_close(n);
}

Test(gpu_nvml, gpm_absent_falls_back)
{
    setenv("FAKE_NVML_GPUS", "H100-80GB", 1);
    unsetenv("FAKE_NVML_GPM");
    gx_err e;
    gx_nvml *n = open_fake(&e);
    double pct = -1;
    cr_assert_eq(gx_gpu_nvml_gpm_supported(n, 0), 0, "the GPU says it has no GPM");
    cr_assert_eq(gx_gpu_nvml_gr_active(n, 0, -1, &pct), -1);
    gx_gpu_nvml_close(n);
    gx_err_clear(&e);
    n = gx_gpu_nvml_open(FAKE_OLD, &e);
    cr_assert_null(n, "the old fake has no nvmlInit_v2 either");
}
