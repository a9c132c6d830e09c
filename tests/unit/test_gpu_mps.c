/* Unit tests for gpu/mps and gpu/podenv: MPS control daemons per GPU and the pod
 * environment for MPS and fractional devices. The real nvidia-cuda-mps-control needs an
 * NVIDIA driver, so a fake of the same name (tests/fakes/nvml/nvidia-cuda-mps-control,
 * a script recording the commands it receives) is put first on PATH. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "gpu/mps.h"
#include "gpu/podenv.h"
#include "lib/yaml.h"

/* The environment of a pod on one whole device (cores 0), or on a share of it. */
static char **podenv1(gx_gpu_inv *inv, gx_gpu_mps *m, const char *uuid, int cores, int64_t mem_mib)
{
    gx_engine_dev d = {.uuid = uuid, .gpu_uuid = uuid, .shared = cores > 0, .cores = cores, .mem_mib = mem_mib,
                       .mig = -1, .replica = -1};
    return gx_gpu_podenv_devs(inv, m, &d, 1);
}

static json_t *Y(const char *y)
{
    gx_yaml_docs d;
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_yaml_parse(y, strlen(y), &d, &e), 0, "%s", e.msg);
    json_t *j = json_incref(d.docs[0]);
    gx_yaml_docs_free(&d);
    return j;
}

static gx_gpu_inv *inventory(void)
{
    json_t *nodes = json_array();
    json_array_append_new(nodes, Y("kind: Node\nmetadata:\n  name: m\n  labels: {nvidia.com/device-plugin.config: mps}\n"
                                   "spec:\n  gpus:\n  - {model: H100-80GB, memory: 80Gi, uuid: GPU-aaaa}\n"
                                   "  - {model: H100-80GB, memory: 80Gi, uuid: GPU-bbbb, sharing: fractional}\n"
                                   "  - {model: L4, memory: 22Gi, uuid: GPU-cccc}\n"));
    json_t *dp = json_object();
    json_object_set_new(dp, "mps", Y("version: v1\nsharing:\n  mps:\n    resources:\n"
                                     "    - {name: nvidia.com/gpu, replicas: 4, devices: [0]}\n"));
    gx_gpu_config cfg = {"simulated", NULL, nodes, dp, "", NULL, ""};
    gx_err e;
    gx_err_clear(&e);
    gx_gpu_inv *inv = gx_gpu_inventory_open(&cfg, &e);
    cr_assert(inv, "%s", e.msg);
    json_decref(nodes);
    json_decref(dp);
    return inv;
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return strdup("");
    static char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    return strdup(buf);
}

static void fake_on_path(void)
{
    char cwd[1024], path[4096];
    cr_assert(getcwd(cwd, sizeof cwd));
    snprintf(path, sizeof path, "%s/tests/fakes/nvml:%s", cwd, getenv("PATH"));
    setenv("PATH", path, 1);
}

static int has(char **v, const char *kv)
{
    for (int i = 0; v && v[i]; i++)
        if (!strcmp(v[i], kv)) return 1;
    return 0;
}

static void free_vec(char **v)
{
    for (int i = 0; v && v[i]; i++) free(v[i]);
    free(v);
}

Test(gpu_mps, daemons_limits_env_and_stop)
{
    fake_on_path();
    char root[] = "/tmp/gpuaas-mps.XXXXXX";
    cr_assert(mkdtemp(root));
    gx_gpu_inv *inv = inventory();
    char *msgs = NULL;
    size_t ml = 0;
    FILE *log = open_memstream(&msgs, &ml);
    gx_gpu_mps *m = gx_gpu_mps_start(inv, root, log);
    fflush(log);
    cr_assert_str_eq(gx_gpu_mps_state(m, "GPU-aaaa"), "running", "%s", msgs);
    cr_assert_str_eq(gx_gpu_mps_state(m, "GPU-bbbb"), "running", "%s", msgs);
    cr_assert_null(gx_gpu_mps_state(m, "GPU-cccc"), "an exclusive GPU gets no MPS daemon");
    char p[1200];
    snprintf(p, sizeof p, "%s/GPU-aaaa/log/control.log", root);
    char *cl = slurp(p);
    cr_assert(strstr(cl, "started CUDA_VISIBLE_DEVICES=GPU-aaaa"), "%s", cl);
    cr_assert(strstr(cl, "set_default_active_thread_percentage 25"), "%s", cl);
    cr_assert(strstr(cl, "set_default_device_pinned_mem_limit 0 20480M"), "%s", cl);
    free(cl);

    char **v = podenv1(inv, m, "GPU-aaaa", 0, 0);
    char want[1200];
    snprintf(want, sizeof want, "CUDA_MPS_PIPE_DIRECTORY=%s/GPU-aaaa/pipe", root);
    cr_assert(has(v, want), "%s", want);
    cr_assert(has(v, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"));
    cr_assert(has(v, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=20480M"));
    cr_assert(has(v, "GPUAAS_GPU_SHARING=mps"));
    free_vec(v);
    v = podenv1(inv, m, "GPU-bbbb", 30, 8192);
    cr_assert(has(v, "CUDA_DEVICE_MEMORY_LIMIT_0=8192m"));
    cr_assert(has(v, "CUDA_DEVICE_SM_LIMIT=30"));
    cr_assert(has(v, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30"));
    cr_assert(has(v, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=8192M"));
    free_vec(v);
    v = podenv1(inv, m, "GPU-cccc", 0, 0);
    cr_assert(has(v, "GPUAAS_GPU_SHARING=exclusive"));
    cr_assert_not(has(v, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100"));
    free_vec(v);

    /* a second start finds the daemons running and adopts them */
    gx_gpu_mps *again = gx_gpu_mps_start(inv, root, log);
    cr_assert_str_eq(gx_gpu_mps_state(again, "GPU-aaaa"), "adopted");
    const char *busy[] = {"GPU-bbbb"};
    gx_gpu_mps_stop(again, busy, 1, log);
    fclose(log);
    cr_assert(strstr(msgs, "GPU-bbbb left running"), "%s", msgs);
    cl = slurp(p);
    cr_assert(strstr(cl, "quit"), "%s", cl);
    free(cl);
    snprintf(p, sizeof p, "%s/GPU-bbbb/pipe/control", root);
    cr_assert_eq(access(p, F_OK), 0, "the busy GPU keeps its daemon");
    FILE *quiet = fopen("/dev/null", "w");   /* `again` already quit GPU-aaaa's daemon */
    gx_gpu_mps_stop(m, NULL, 0, quiet);
    fclose(quiet);
    cr_assert_neq(access(p, F_OK), 0);
    free(msgs);
    gx_gpu_inventory_free(inv);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    cr_assert_eq(system(cmd), 0);
}

/* Issue 16: a command for a daemon that is gone makes the control binary exit without
 * reading its stdin; writing the command into that pipe raised SIGPIPE and killed the
 * process (about one run in four under ASan). It must be an error that is reported. Each
 * round races the write against the binary's exit, twice (two GPUs): it fails only when
 * the race is lost, as under load. */
Test(gpu_mps, command_to_a_gone_daemon_is_an_error_not_sigpipe)
{
    fake_on_path();
    char root[] = "/tmp/gpuaas-mps.XXXXXX";
    cr_assert(mkdtemp(root));
    gx_gpu_inv *inv = inventory();
    char p[1200];
    for (int round = 0; round < 10; round++) {
        FILE *quiet = fopen("/dev/null", "w");
        gx_gpu_mps *m = gx_gpu_mps_start(inv, root, quiet);
        fclose(quiet);
        cr_assert_str_eq(gx_gpu_mps_state(m, "GPU-aaaa"), "running");
        const char *gpus[] = {"GPU-aaaa", "GPU-bbbb"};
        for (int i = 0; i < 2; i++) {       /* the daemons died behind our back */
            snprintf(p, sizeof p, "%s/%s/pipe/control", root, gpus[i]);
            cr_assert_eq(unlink(p), 0);
        }
        char *msgs = NULL;
        size_t ml = 0;
        FILE *log = open_memstream(&msgs, &ml);
        gx_gpu_mps_stop(m, NULL, 0, log);
        fclose(log);
        cr_assert(strstr(msgs, "MPS daemon of GPU-aaaa did not quit cleanly"), "%s", msgs);
        cr_assert(strstr(msgs, "MPS daemon of GPU-bbbb did not quit cleanly"), "%s", msgs);
        free(msgs);
    }
    gx_gpu_inventory_free(inv);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    cr_assert_eq(system(cmd), 0);
}

Test(gpu_mps, missing_binary_is_said_at_start)
{
    setenv("PATH", "/nonexistent", 1);
    gx_gpu_inv *inv = inventory();
    char *msgs = NULL;
    size_t ml = 0;
    FILE *log = open_memstream(&msgs, &ml);
    gx_gpu_mps *m = gx_gpu_mps_start(inv, "/tmp/gpuaas-mps-never", log);
    fclose(log);
    cr_assert(strstr(msgs, "GPU 0 (GPU-aaaa) is mps but nvidia-cuda-mps-control is not on PATH"), "%s", msgs);
    cr_assert(strstr(msgs, "GPU 1 (GPU-bbbb) is fractional"), "%s", msgs);
    cr_assert_str_eq(gx_gpu_mps_state(m, "GPU-aaaa"), "no nvidia-cuda-mps-control");
    char **v = podenv1(inv, m, "GPU-aaaa", 0, 0);
    cr_assert_not(has(v, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"), "no daemon, no MPS variables");
    free_vec(v);
    gx_gpu_mps_stop(m, NULL, 0, stderr);
    free(msgs);
    gx_gpu_inventory_free(inv);
}

/* An NVML inventory (the fake library) whose GPU 0 is MPS x4, with the fake's compute
 * mode kept in state/compute-mode-I. */
static gx_gpu_inv *nvml_inventory(const char *state)
{
    setenv("FAKE_NVML_GPUS", "H100-80GB,L4", 1);
    setenv("FAKE_NVML_STATE", state, 1);
    json_t *nodes = json_array();
    json_array_append_new(nodes, Y("kind: Node\nmetadata:\n  name: m\n  labels: {nvidia.com/device-plugin.config: mps}\n"));
    json_t *dp = json_object();
    json_object_set_new(dp, "mps", Y("version: v1\nsharing:\n  mps:\n    resources:\n"
                                     "    - {name: nvidia.com/gpu, replicas: 4, devices: [0]}\n"));
    gx_gpu_config cfg = {"nvml", "build/fakes/nvml/libnvidia-ml.so.1", nodes, dp, "", NULL, ""};
    gx_err e;
    gx_err_clear(&e);
    gx_gpu_inv *inv = gx_gpu_inventory_open(&cfg, &e);
    cr_assert(inv, "%s", e.msg);
    cr_assert_str_eq(inv->source, "nvml", "%s (run make fakes)", inv->note);
    json_decref(nodes);
    json_decref(dp);
    return inv;
}

static int read_int_file(const char *dir, const char *name)
{
    char p[1200];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "r");
    int v = -1;
    if (!f) return -1;
    if (fscanf(f, "%d", &v) != 1) v = -2;
    fclose(f);
    return v;
}

Test(gpu_mps, compute_mode_exclusive_process_while_mps_runs)
{
    fake_on_path();
    char root[] = "/tmp/gpuaas-mpscm.XXXXXX";
    cr_assert(mkdtemp(root));
    char state[1100], rec[1100];
    snprintf(state, sizeof state, "%s/state", root);
    cr_assert_eq(mkdir(state, 0755), 0);
    gx_gpu_inv *inv = nvml_inventory(state);
    const char *uuid = inv->devs[0].uuid;
    snprintf(rec, sizeof rec, "%s/%s", root, uuid);
    char *msgs = NULL;
    size_t ml = 0;
    FILE *log = open_memstream(&msgs, &ml);
    gx_gpu_mps *m = gx_gpu_mps_start(inv, root, log);
    fflush(log);
    cr_assert_str_eq(gx_gpu_mps_state(m, uuid), "running", "%s", msgs);
    cr_assert_eq(read_int_file(state, "compute-mode-0"), 3, "EXCLUSIVE_PROCESS while MPS serves GPU 0: %s", msgs);
    cr_assert_eq(read_int_file(rec, "compute-mode"), 0, "the original (Default) is recorded under the data dir");
    cr_assert_eq(read_int_file(state, "compute-mode-1"), -1, "the exclusive L4 is not touched");
    cr_assert(strstr(msgs, "compute mode Default -> Exclusive_Process"), "%s", msgs);

    /* a crash: the next start finds EXCLUSIVE_PROCESS, yet the record keeps Default */
    gx_gpu_mps *again = gx_gpu_mps_start(inv, root, log);
    cr_assert_str_eq(gx_gpu_mps_state(again, uuid), "adopted");
    cr_assert_eq(read_int_file(rec, "compute-mode"), 0, "the record of the first start is kept");
    gx_gpu_mps_stop(again, NULL, 0, log);
    fflush(log);
    cr_assert_eq(read_int_file(state, "compute-mode-0"), 0, "stop restores the original: %s", msgs);
    cr_assert_eq(read_int_file(rec, "compute-mode"), -1, "and removes the record");
    cr_assert(strstr(msgs, "compute mode restored to Default"), "%s", msgs);
    FILE *quiet = fopen("/dev/null", "w");
    gx_gpu_mps_stop(m, NULL, 0, quiet);
    fclose(quiet);
    fclose(log);
    free(msgs);
    gx_gpu_inventory_free(inv);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    cr_assert_eq(system(cmd), 0);
}

Test(gpu_mps, compute_mode_not_settable_warns_and_mps_still_runs)
{
    fake_on_path();
    setenv("FAKE_NVML_FAIL", "setcompute", 1);
    char root[] = "/tmp/gpuaas-mpscm.XXXXXX";
    cr_assert(mkdtemp(root));
    char state[1100], rec[1100];
    snprintf(state, sizeof state, "%s/state", root);
    cr_assert_eq(mkdir(state, 0755), 0);
    gx_gpu_inv *inv = nvml_inventory(state);
    snprintf(rec, sizeof rec, "%s/%s", root, inv->devs[0].uuid);
    char *msgs = NULL;
    size_t ml = 0;
    FILE *log = open_memstream(&msgs, &ml);
    gx_gpu_mps *m = gx_gpu_mps_start(inv, root, log);
    fflush(log);
    cr_assert_str_eq(gx_gpu_mps_state(m, inv->devs[0].uuid), "running", "%s", msgs);
    cr_assert(strstr(msgs, "WARNING: cannot set compute mode EXCLUSIVE_PROCESS"), "%s", msgs);
    cr_assert(strstr(msgs, "Insufficient Permissions"), "%s", msgs);
    cr_assert_eq(read_int_file(rec, "compute-mode"), -1, "nothing changed, nothing to restore");
    gx_gpu_mps_stop(m, NULL, 0, log);
    fclose(log);
    cr_assert_null(strstr(msgs, "restored"), "%s", msgs);
    free(msgs);
    gx_gpu_inventory_free(inv);
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    cr_assert_eq(system(cmd), 0);
}
