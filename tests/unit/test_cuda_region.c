/* Unit tests of the daemon's side of the CUDA shim: gpu/cuda_region.c (limits per sharing
 * mode, creating a region fresh, reading it back with dead processes' slots left out by
 * the OFD-lock rule of gpu/cuda_region.h), run.cudaShim, and the sandbox's binds for it
 * (run/sandbox.c). A child process stands in for a shim: it opens the region itself,
 * takes its slot's lock, maps the file and counts an allocation, as the library does. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "gpu/cuda_region_ops.h"
#include "lib/yaml.h"
#include "run/run_config.h"
#include "run/sandbox.h"

#define GIB ((uint64_t)1 << 30)
#define MIB ((uint64_t)1 << 20)

static char dir[64], path[128];

static void tmp_make(void)
{
    snprintf(dir, sizeof dir, "/tmp/gx-cuda-XXXXXX");
    cr_assert(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/g1-p0.cuda", dir);
}

static void tmp_remove(void)
{
    unlink(path);
    rmdir(dir);
}

static gx_cuda_limits two_devices(void)
{
    gx_cuda_limits l = {.ndevices = 2};
    l.limit[0] = 20 * GIB;
    l.total[0] = 80 * GIB;
    l.limit[1] = 8 * GIB;
    l.total[1] = 80 * GIB;
    l.sm_share[1] = 30;
    return l;
}

static void create(const gx_cuda_limits *l)
{
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_cuda_region_create(path, l, getuid(), getgid(), &e), 0, "%s", e.msg);
}

/* A shim's start in this process: its own descriptor, the lock byte of `slot`, the
 * mapping. The descriptor stays open (the lock with it) until closed. */
static gx_cuda_region *shim_attach(int slot, int *fd)
{
    *fd = open(path, O_RDWR | O_CLOEXEC);
    cr_assert(*fd >= 0);
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = GX_CUDA_REGION_LOCK_BASE + slot, .l_len = 1};
    cr_assert_eq(fcntl(*fd, F_OFD_SETLK, &fl), 0);
    void *m = mmap(NULL, sizeof(gx_cuda_region), PROT_READ | PROT_WRITE, MAP_SHARED, *fd, 0);
    cr_assert(m != MAP_FAILED);
    return m;
}

static void shim_alloc(gx_cuda_region *r, int slot, int dev, uint64_t bytes)
{
    __atomic_fetch_add(&r->used[dev], bytes, __ATOMIC_SEQ_CST);
    __atomic_fetch_add(&r->slots[slot].used[dev], bytes, __ATOMIC_SEQ_CST);
    __atomic_store_n(&r->slots[slot].in_use, 1, __ATOMIC_SEQ_CST);
    if (r->used[dev] > r->peak[dev]) r->peak[dev] = r->used[dev];
}

Test(cuda_region, create_writes_limits_magic_size_and_mode, .init = tmp_make, .fini = tmp_remove)
{
    gx_cuda_limits l = two_devices();
    create(&l);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_size, (off_t)GX_CUDA_REGION_LOCK_BASE + GX_CUDA_REGION_PROCS);
    cr_assert_eq(st.st_mode & 0777, 0600, "the region is its pod's alone: mode %o", st.st_mode & 0777);
    gx_cuda_region r;
    int fd = open(path, O_RDONLY);
    cr_assert_eq(pread(fd, &r, sizeof r, 0), (ssize_t)sizeof r);
    close(fd);
    cr_assert_eq(r.magic, GX_CUDA_REGION_MAGIC);
    cr_assert_eq(r.version, GX_CUDA_REGION_VERSION);
    cr_assert_eq(r.ndevices, 2);
    cr_assert_eq(r.limit[0], 20 * GIB);
    cr_assert_eq(r.limit[1], 8 * GIB);
    cr_assert_eq(r.total[1], 80 * GIB);
    cr_assert_eq(r.sm_share[1], 30);
    cr_assert_eq(r.used[0], 0);
    cr_assert_eq(r.slots[0].in_use, 0);
    gx_cuda_usage u;
    gx_err e;
    cr_assert_eq(gx_cuda_region_read(path, &u, &e), 0, "%s", e.msg);
    cr_assert_eq(u.ndevices, 2);
    cr_assert_eq(u.dev[0].limit, 20 * GIB);
    cr_assert_eq(u.dev[1].sm_share, 30);
    cr_assert(u.dev[0].achieved < 0, "no window measured yet: unmeasured, not 0 %%");
}

Test(cuda_region, create_is_fresh_every_time, .init = tmp_make, .fini = tmp_remove)
{
    gx_cuda_limits l = two_devices();
    create(&l);
    int fd;
    gx_cuda_region *r = shim_attach(0, &fd);
    shim_alloc(r, 0, 0, 5 * GIB);
    munmap(r, sizeof *r);
    struct stat before, after;
    cr_assert_eq(fstat(fd, &before), 0);
    close(fd);
    /* the next run of the pod: its region starts from nothing, in a new file */
    create(&l);
    cr_assert_eq(stat(path, &after), 0);
    gx_cuda_usage u;
    gx_err e;
    cr_assert_eq(gx_cuda_region_read(path, &u, &e), 0, "%s", e.msg);
    cr_assert_eq(u.dev[0].used, 0);
    cr_assert_eq(u.dev[0].peak, 0);
    cr_assert_eq(u.procs + u.dead, 0);
}

Test(cuda_region, read_counts_a_live_process, .init = tmp_make, .fini = tmp_remove)
{
    gx_cuda_limits l = two_devices();
    create(&l);
    int fd;
    gx_cuda_region *r = shim_attach(7, &fd);
    shim_alloc(r, 7, 1, 3 * GIB);
    r->refused[1] = 2;
    r->busy_ns[1] = 300;
    r->window_ns[1] = 1000;
    gx_cuda_usage u;
    gx_err e;
    cr_assert_eq(gx_cuda_region_read(path, &u, &e), 0, "%s", e.msg);
    cr_assert_eq(u.procs, 1);
    cr_assert_eq(u.dead, 0);
    cr_assert_eq(u.dev[1].used, 3 * GIB, "a live process's use counts (lock held)");
    cr_assert_eq(u.dev[1].peak, 3 * GIB);
    cr_assert_eq(u.dev[1].refused, 2);
    cr_assert_float_eq(u.dev[1].achieved, 30.0, 0.01);
    munmap(r, sizeof *r);
    close(fd);
}

/* The OFD-lock rule: a process that held a slot and died (its lock gone with it, its
 * use still in the totals) is left out of what the daemon reads. */
Test(cuda_region, read_leaves_out_a_dead_process, .init = tmp_make, .fini = tmp_remove)
{
    gx_cuda_limits l = two_devices();
    create(&l);
    int fd;
    gx_cuda_region *live = shim_attach(0, &fd);
    shim_alloc(live, 0, 0, 1 * GIB);
    int go[2], done[2];
    cr_assert_eq(pipe(go), 0);
    cr_assert_eq(pipe(done), 0);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        int cfd = open(path, O_RDWR | O_CLOEXEC);
        struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = GX_CUDA_REGION_LOCK_BASE + 5, .l_len = 1};
        if (cfd < 0 || fcntl(cfd, F_OFD_SETLK, &fl)) _exit(2);
        gx_cuda_region *r = mmap(NULL, sizeof *r, PROT_READ | PROT_WRITE, MAP_SHARED, cfd, 0);
        if (r == MAP_FAILED) _exit(3);
        __atomic_fetch_add(&r->used[0], 4 * GIB, __ATOMIC_SEQ_CST);
        __atomic_fetch_add(&r->slots[5].used[0], 4 * GIB, __ATOMIC_SEQ_CST);
        __atomic_store_n(&r->slots[5].in_use, 1, __ATOMIC_SEQ_CST);
        char c = 1;
        if (write(done[1], &c, 1) != 1 || read(go[0], &c, 1) != 1) _exit(4);
        _exit(0);   /* crashes, as far as the region knows: its slot is never freed */
    }
    char c;
    cr_assert_eq(read(done[0], &c, 1), 1);
    gx_cuda_usage u;
    gx_err e;
    cr_assert_eq(gx_cuda_region_read(path, &u, &e), 0, "%s", e.msg);
    cr_assert_eq(u.procs, 2);
    cr_assert_eq(u.dev[0].used, 5 * GIB, "both processes alive: both count");
    cr_assert_eq(write(go[1], &c, 1), 1);
    int st;
    cr_assert_eq(waitpid(pid, &st, 0), pid);
    cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the child stand-in failed: %d", st);
    cr_assert_eq(gx_cuda_region_read(path, &u, &e), 0, "%s", e.msg);
    cr_assert_eq(u.procs, 1);
    cr_assert_eq(u.dead, 1);
    cr_assert_eq(u.dev[0].used, 1 * GIB, "the dead process's 4 GiB are left out");
    cr_assert_eq(live->used[0], 5 * GIB, "the daemon writes nothing: the next shim frees the slot");
    munmap(live, sizeof *live);
    close(fd);
    close(go[0]); close(go[1]); close(done[0]); close(done[1]);
}

/* The pod owns its region and can write every byte or truncate it: the daemon says so
 * instead of showing it (and never maps it: a truncated mapping is SIGBUS). */
Test(cuda_region, read_refuses_a_damaged_region, .init = tmp_make, .fini = tmp_remove)
{
    gx_cuda_limits l = two_devices();
    gx_cuda_usage u;
    gx_err e;
    cr_assert_eq(gx_cuda_region_read(path, &u, &e), -1);
    cr_assert_eq(e.status, 404);
    create(&l);
    cr_assert_eq(truncate(path, 4096), 0);
    cr_assert_eq(gx_cuda_region_read(path, &u, &e), -1);
    cr_assert_eq(e.status, 422);
    create(&l);
    cr_assert_eq(truncate(path, GX_CUDA_REGION_LOCK_BASE), 0);
    cr_assert_eq(gx_cuda_region_read(path, &u, &e), -1, "the lock bytes are part of the region");
    create(&l);
    int fd = open(path, O_WRONLY);
    uint32_t bad = 1000;
    cr_assert_eq(pwrite(fd, &bad, sizeof bad, offsetof(gx_cuda_region, ndevices)), (ssize_t)sizeof bad);
    cr_assert_eq(gx_cuda_region_read(path, &u, &e), -1);
    cr_assert(strstr(e.msg, "1000 devices"), "%s", e.msg);
    uint32_t magic = 0;
    cr_assert_eq(pwrite(fd, &magic, sizeof magic, 0), (ssize_t)sizeof magic);
    close(fd);
    cr_assert_eq(gx_cuda_region_read(path, &u, &e), -1);
    cr_assert_eq(e.status, 422);
}

Test(cuda_region, create_gives_the_file_to_the_pod, .init = tmp_make, .fini = tmp_remove)
{
    if (geteuid() != 0) cr_skip_test("chown needs root");
    gx_cuda_limits l = two_devices();
    gx_err e;
    cr_assert_eq(gx_cuda_region_create(path, &l, 2000123, 2000456, &e), 0, "%s", e.msg);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_uid, 2000123);
    cr_assert_eq(st.st_gid, 2000456);
    /* a link planted where the region goes is replaced, never followed */
    unlink(path);
    char target[160];
    snprintf(target, sizeof target, "%s/target", dir);
    int fd = open(target, O_CREAT | O_WRONLY, 0644);
    close(fd);
    cr_assert_eq(symlink(target, path), 0);
    cr_assert_eq(gx_cuda_region_create(path, &l, 2000123, 2000456, &e), 0, "%s", e.msg);
    cr_assert_eq(stat(target, &st), 0);
    cr_assert_eq(st.st_size, 0, "the link's target was written");
    cr_assert_eq(st.st_uid, 0);
    cr_assert_eq(lstat(path, &st), 0);
    cr_assert(S_ISREG(st.st_mode));
    unlink(target);
}

/* ---- limits per sharing mode ---- */

static json_t *Y(const char *y)
{
    gx_yaml_docs d;
    gx_err e;
    cr_assert_eq(gx_yaml_parse(y, strlen(y), &d, &e), 0, "%s", e.msg);
    json_t *j = json_incref(d.docs[0]);
    gx_yaml_docs_free(&d);
    return j;
}

/* GPU 0 time-sliced x4, 1 exclusive, 2 fractional, 3 MIG, each of 80 GiB. */
static gx_gpu_inv *inventory(json_t **keep)
{
    json_t *nodes = json_array();
    json_array_append_new(nodes, Y("apiVersion: gpuaas.dev/v1alpha1\nkind: Node\nmetadata:\n  name: n1\n  labels:\n"
        "    nvidia.com/device-plugin.config: ts\n    nvidia.com/mig.config: one\n"
        "spec:\n  gpus:\n  - {model: H100-80GB, memory: 80Gi}\n  - {model: H100-80GB, memory: 80Gi}\n"
        "  - {model: H100-80GB, memory: 80Gi, sharing: fractional}\n  - {model: H100-80GB, memory: 80Gi}\n"));
    json_t *dp = json_object();
    json_object_set_new(dp, "ts", Y("version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                                    "    - {name: nvidia.com/gpu, replicas: 4, devices: [0]}\n"));
    json_t *mig = Y("version: v1\nmig-configs:\n  one:\n  - devices: [3]\n    mig-enabled: true\n"
                    "    mig-devices: {\"3g.40gb\": 2}\n");
    gx_gpu_config cfg = {"simulated", NULL, nodes, dp, "", mig, ""};
    gx_err e;
    gx_gpu_inv *inv = gx_gpu_inventory_open(&cfg, &e);
    cr_assert(inv, "%s", e.msg);
    keep[0] = nodes; keep[1] = dp; keep[2] = mig;
    return inv;
}

Test(cuda_region, limits_per_sharing_mode)
{
    json_t *keep[3];
    gx_gpu_inv *inv = inventory(keep);
    cr_assert_eq(inv->n_devs, 4);
    cr_assert_eq(inv->devs[0].mode, GX_SHARE_TIMESLICING);
    cr_assert_eq(inv->devs[2].mode, GX_SHARE_FRACTIONAL);
    gx_cuda_limits l;
    /* time-sliced x4: a quarter of the memory each, no compute share */
    gx_engine_dev ts = {.uuid = inv->devs[0].uuid, .shared = 1, .cores = 100, .mem_mib = 81920};
    cr_assert_eq(gx_cuda_limits_for(inv, &ts, 1, &l), 1);
    cr_assert_eq(l.ndevices, 1);
    cr_assert_eq(l.limit[0], 20 * GIB);
    cr_assert_eq(l.total[0], 80 * GIB);
    cr_assert_eq(l.sm_share[0], 0);
    /* fractional: the vGPU's memory and cores, as the engine placed it */
    gx_engine_dev fr = {.uuid = inv->devs[2].uuid, .shared = 1, .cores = 30, .mem_mib = 10240};
    cr_assert_eq(gx_cuda_limits_for(inv, &fr, 1, &l), 1);
    cr_assert_eq(l.limit[0], 10 * GIB);
    cr_assert_eq(l.sm_share[0], 30);
    fr.cores = 100;
    cr_assert_eq(gx_cuda_limits_for(inv, &fr, 1, &l), 1);
    cr_assert_eq(l.sm_share[0], 0, "100 %% is no share to keep");
    /* exclusive and MIG: nothing to keep */
    gx_engine_dev ex = {.uuid = inv->devs[1].uuid};
    cr_assert_eq(gx_cuda_limits_for(inv, &ex, 1, &l), 0);
    cr_assert_eq(l.ndevices, 0);
    cr_assert_eq(inv->devs[3].n_mig, 2);
    gx_engine_dev mg = {.uuid = inv->devs[3].mig[0].uuid, .mig = 0};
    cr_assert_eq(gx_cuda_limits_for(inv, &mg, 1, &l), 0);
    /* a pod on an exclusive GPU and a time-sliced one: limits in CUDA_VISIBLE_DEVICES order */
    gx_engine_dev two[2] = {ex, ts};
    cr_assert_eq(gx_cuda_limits_for(inv, two, 2, &l), 1);
    cr_assert_eq(l.ndevices, 2);
    cr_assert_eq(l.limit[0], 0);
    cr_assert_eq(l.total[0], 80 * GIB);
    cr_assert_eq(l.limit[1], 20 * GIB);
    gx_gpu_inventory_free(inv);
    for (int i = 0; i < 3; i++) json_decref(keep[i]);
}

/* ---- run.cudaShim ---- */

static int load_run(const char *yaml, gx_run_config *rc, gx_err *e)
{
    json_t *j = Y(yaml);
    gx_run_config_defaults(rc);
    int r = gx_run_config_load(rc, j, "/", 1000, e);
    json_decref(j);
    return r;
}

Test(cuda_region, run_cuda_shim_setting)
{
    gx_run_config rc;
    gx_err e;
    cr_assert_eq(load_run("{sandbox: none}", &rc, &e), 0, "%s", e.msg);
    cr_assert_eq(rc.cuda_shim, GX_CUDA_SHIM_AUTO, "auto by default");
    gx_run_config_free(&rc);
    cr_assert_eq(load_run("{cudaShim: \"on\"}", &rc, &e), 0, "%s", e.msg);
    cr_assert_eq(rc.cuda_shim, GX_CUDA_SHIM_ON);
    gx_run_config_free(&rc);
    cr_assert_eq(load_run("{cudaShim: false}", &rc, &e), 0, "%s", e.msg);
    cr_assert_eq(rc.cuda_shim, GX_CUDA_SHIM_OFF);
    gx_run_config_free(&rc);
    cr_assert_eq(load_run("{cudaShim: sometimes}", &rc, &e), -1);
    cr_assert_str_eq(e.field, "run.cudaShim");
    gx_run_config_free(&rc);
}

/* ---- the sandbox's binds ---- */

static char *cmd[] = {"python3", "train.py", NULL};
static const char *root[] = {"bin->usr/bin", "etc", "run", "usr", NULL};
static const char *etc[] = {"passwd", "ld.so.preload", "mtab->../proc/self/mounts", NULL};

static int find(char **av, const char *a, const char *b, const char *c)
{
    for (int i = 0; av[i]; i++)
        if (!strcmp(av[i], a) && (!b || (av[i + 1] && !strcmp(av[i + 1], b))) &&
            (!c || (av[i + 1] && av[i + 2] && !strcmp(av[i + 2], c))))
            return i;
    return -1;
}

static gx_sandbox_spec spec(void)
{
    return (gx_sandbox_spec){.bwrap = "/usr/bin/bwrap", .shim = "/opt/gpuaas/gpuaas-shim", .uid = 2000, .gid = 2000,
                             .work_dir = "/w/team-a/j", .cwd = "/w/team-a/j", .hostname = "j-0", .tmp_bytes = 1 << 20,
                             .argv = cmd, .root_entries = root, .etc_entries = etc};
}

Test(cuda_region, sandbox_binds_the_shim)
{
    gx_sandbox_spec s = spec();
    gx_err e;
    char **plain = gx_sandbox_argv(&s, &e);
    cr_assert(plain, "%s", e.msg);
    cr_assert(find(plain, "--ro-bind", "/etc", "/etc") >= 0, "without the shim /etc is the host's");
    cr_assert(find(plain, "--tmpfs", "/etc", NULL) < 0);
    cr_assert(find(plain, "/etc/ld.so.preload", NULL, NULL) < 0);
    gx_sandbox_free_argv(plain);

    s.cuda_lib = "/opt/gpuaas/libgpuaas-cuda.so";
    s.cuda_region = "/var/lib/gpuaas/run/team-a/j/g1-p0.cuda";
    s.cuda_preload = "/var/lib/gpuaas/run/ld.so.preload";
    gx_sandbox_mount vol = {"/data", "/etc/ssl/private", GX_MOUNT_RO};
    s.mounts = &vol;
    s.nmounts = 1;
    char **av = gx_sandbox_argv(&s, &e);
    cr_assert(av, "%s", e.msg);
    cr_assert(find(av, "--ro-bind", "/etc", "/etc") < 0, "the host's /etc is not bound whole");
    int t = find(av, "--tmpfs", "/etc", NULL);
    int pw = find(av, "--ro-bind", "/etc/passwd", "/etc/passwd");
    int mt = find(av, "--symlink", "../proc/self/mounts", "/etc/mtab");
    int pre = find(av, "--ro-bind", s.cuda_preload, "/etc/ld.so.preload");
    int v = find(av, "--ro-bind", "/data", "/etc/ssl/private");
    int run_t = find(av, "--tmpfs", "/run/gpuaas", NULL);
    int lib = find(av, "--ro-bind", s.cuda_lib, GX_CUDA_LIB_PATH);
    int reg = find(av, "--bind", s.cuda_region, GX_CUDA_REGION_PATH);
    int ro_run = find(av, "--remount-ro", "/run/gpuaas", NULL);
    int ro_etc = find(av, "--remount-ro", "/etc", NULL);
    int run_host = find(av, "--ro-bind", "/run", "/run");
    cr_assert(t > 0 && pw > t && mt > t && pre > t, "/etc: a tmpfs, its entries, the preload file");
    cr_assert(find(av, "--ro-bind", "/etc/ld.so.preload", "/etc/ld.so.preload") < 0, "the host's own preload is not bound");
    cr_assert(v > pre && v > t, "a volume below /etc finds its mount point in the tmpfs");
    cr_assert(run_host > 0 && run_t > run_host && run_t > v, "/run/gpuaas over the host's /run, after the volumes");
    cr_assert(lib > run_t && reg > run_t && ro_run > reg && ro_run > lib);
    cr_assert(ro_etc > v, "/etc read-only once every mount point in it is made");
    cr_assert(strcmp(GX_CUDA_LIB_PATH, "/run/gpuaas/libgpuaas-cuda.so") == 0);
    gx_sandbox_free_argv(av);
}

Test(cuda_region, sandbox_refuses_a_volume_over_the_shim)
{
    gx_sandbox_spec s = spec();
    s.cuda_lib = "/opt/gpuaas/libgpuaas-cuda.so";
    s.cuda_region = "/r/g1-p0.cuda";
    s.cuda_preload = "/r/ld.so.preload";
    const char *bad[] = {"/etc", "/etc/", "/etc/ld.so.preload", "/run", "/run/gpuaas", "/run/gpuaas/x", "/"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gx_sandbox_mount vol = {"/data", bad[i], GX_MOUNT_RO};
        s.mounts = &vol;
        s.nmounts = 1;
        gx_err e;
        char **av = gx_sandbox_argv(&s, &e);
        cr_assert_null(av, "a volume at %s covers the shim", bad[i]);
        cr_assert(strstr(e.msg, bad[i]), "%s", e.msg);
    }
    s.cuda_preload = NULL;
    gx_err e;
    cr_assert_null(gx_sandbox_argv(&s, &e), "the shim's three files or none");
}
