/* The pieces a sandboxed pod is made of that need no process: the run: section of the
 * server configuration, the uid each namespace gets (real SQLite), the device nodes of a
 * pod's GPUs (real nodes made with mknod, so as root; CI is) and the hostPath volumes of
 * a Job. The sandbox itself is tested in test_sandbox.c and tests/integration/isolation.sh. */
#include <criterion/criterion.h>
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "lib/yaml.h"
#include "run/devnodes.h"
#include "run/identity.h"
#include "run/podbox.h"
#include "run/podspec.h"
#include "run/run_config.h"
#include "test_store_util.h"

static json_t *yaml(const char *text)
{
    gx_yaml_docs d;
    gx_err e;
    cr_assert_eq(gx_yaml_parse(text, strlen(text), &d, &e), 0, "%s", e.msg);
    json_t *doc = json_incref(d.docs[0]);
    gx_yaml_docs_free(&d);
    return doc;
}

/* Load `run:` text; returns 0 or -1 with e. */
static int load_run(gx_run_config *r, const char *text, gx_err *e)
{
    gx_run_config_defaults(r);
    json_t *doc = yaml(text);
    gx_err_clear(e);
    int rc = gx_run_config_load(r, doc, "/etc/gpuaas", 4242, e);
    json_decref(doc);
    return rc;
}

Test(run_config, defaults_and_settings)
{
    gx_run_config r;
    gx_err e;
    cr_assert_eq(load_run(&r, "{}", &e), 0, "%s", e.msg);
    cr_assert_eq(r.sandbox, 1, "the sandbox is on by default");
    cr_assert_eq(r.uid_lo, 2000000000u);
    cr_assert_eq(r.tmp_bytes, (int64_t)1 << 30);
    cr_assert_str_eq(r.cgroup_parent, "gpuaas");
    gx_run_config_free(&r);
    cr_assert_eq(load_run(&r, "{sandbox: none, uidRange: 300000-300009, tmpSize: 64Mi, pidsLimit: 100, "
                              "defaultMemory: 1Gi, workDir: work, deviceDir: /srv/dev/}", &e), 0, "%s", e.msg);
    cr_assert_eq(r.sandbox, 0);
    cr_assert_eq(r.sandbox_explicit_none, 1);
    cr_assert_eq(r.uid_lo, 300000u);
    cr_assert_eq(r.uid_hi, 300009u);
    cr_assert_eq(r.tmp_bytes, 64 << 20);
    cr_assert_eq(r.pids_max, 100);
    cr_assert_eq(r.default_memory, (int64_t)1 << 30);
    cr_assert_str_eq(r.work_dir, "/etc/gpuaas/work", "relative to the configuration's folder");
    cr_assert_str_eq(r.device_dir, "/srv/dev", "a trailing / is the same folder");
    gx_run_config_free(&r);
}

Test(run_config, refuses_with_the_field_named)
{
    static const struct { const char *text, *field, *words; } bad[] = {
        {"{sandbox: gvisor}", "run.sandbox", "bubblewrap"},
        {"{uidRange: 5-1}", "run.uidRange", "LOW-HIGH"},
        {"{uidRange: 0-10}", "run.uidRange", "LOW-HIGH"},
        {"{uidRange: 1-4294967295}", "run.uidRange", "LOW-HIGH"},
        {"{cgroupParent: /abs}", "run.cgroupParent", "relative"},
        {"{cgroupParent: a/../../b}", "run.cgroupParent", ".."},
        {"{tmpSize: 10}", "run.tmpSize", "between"},
        {"{pidsLimit: 2}", "run.pidsLimit", "between"},
        {"{deviceDir: dev}", "run.deviceDir", "absolute"},
        {"{bogus: 1}", "run.bogus", "unknown setting"},
        {"{namespaces: {team-a: {runAsUser: 0}}}", "run.namespaces.team-a.runAsUser", "never run as root"},
        {"{namespaces: {team-a: {runAsUser: 4242}}}", "run.namespaces.team-a.runAsUser", "daemon's own uid"},
        {"{namespaces: {team-a: {runAsUser: no-such-account-xyz}}}", "run.namespaces.team-a.runAsUser", "no account"},
        {"{namespaces: {team-a: {runAsGroup: 5}}}", "run.namespaces.team-a", "needs runAsUser"},
        {"{namespaces: {team-a: {hostPaths: [data]}}}", "run.namespaces.team-a.hostPaths[0].path", "absolute"},
        {"{namespaces: {team-a: {hostPaths: [/data/../etc]}}}", "run.namespaces.team-a.hostPaths[0].path", ".."},
        {"{namespaces: {team-a: {hostPaths: [/]}}}", "run.namespaces.team-a.hostPaths[0].path", "whole host"},
        {"{namespaces: {team-a: {hostPaths: [{path: /d, mode: rw}]}}}", "run.namespaces.team-a.hostPaths[0]", "unknown field"},
        {"{namespaces: {Team_A: {}}}", "run.namespaces", "RFC 1123"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        gx_run_config r;
        gx_err e;
        cr_assert_eq(load_run(&r, bad[i].text, &e), -1, "accepted: %s", bad[i].text);
        cr_assert_str_eq(e.field, bad[i].field, "%s: field", bad[i].text);
        cr_assert(strstr(e.msg, bad[i].words), "%s: \"%s\" lacks \"%s\"", bad[i].text, e.msg, bad[i].words);
        gx_run_config_free(&r);
    }
}

Test(run_config, host_paths_are_folders_not_prefixes)
{
    gx_run_config r;
    gx_err e;
    cr_assert_eq(load_run(&r, "{namespaces: {team-a: {hostPaths: [{path: /data/, readOnly: true}, /scratch/a]}}}", &e),
                 0, "%s", e.msg);
    int ro = -1;
    cr_assert_eq(gx_run_config_host_path(&r, "team-a", "/data", &ro), 1);
    cr_assert_eq(ro, 1);
    cr_assert_eq(gx_run_config_host_path(&r, "team-a", "/data/imagenet/train", &ro), 1);
    cr_assert_eq(gx_run_config_host_path(&r, "team-a", "/database", &ro), 0, "/database is not below /data");
    cr_assert_eq(gx_run_config_host_path(&r, "team-a", "/scratch/a/x", &ro), 1);
    cr_assert_eq(ro, 0);
    cr_assert_eq(gx_run_config_host_path(&r, "team-a", "/scratch", &ro), 0, "above an allowed folder");
    cr_assert_eq(gx_run_config_host_path(&r, "team-b", "/data", &ro), 0, "team-a's folders are not team-b's");
    gx_run_config_free(&r);
}

/* ---- identities, in a real store ---- */

Test(identity, one_uid_per_namespace_kept_across_restarts, .init = store_tmp_make, .fini = store_tmp_remove)
{
    gx_run_config r;
    gx_err e;
    /* 300001 is mapped by the admin to team-m: never given to another namespace */
    cr_assert_eq(load_run(&r, "{uidRange: 300000-300003, namespaces: {team-m: {runAsUser: 300001, runAsGroup: 77}}}",
                          &e), 0, "%s", e.msg);
    gx_store *s = open_store();
    gx_identity *id = gx_identity_open(&r, s, &e);
    cr_assert_not_null(id, "%s", e.msg);
    uid_t u;
    gid_t g;
    cr_assert_eq(gx_identity_of(id, "team-a", 1, &u, &g, &e), 0, "%s", e.msg);
    cr_assert_eq(u, 300000u);
    cr_assert_eq(g, 300000u, "a group of its own, the uid's number");
    cr_assert_eq(gx_identity_of(id, "team-b", 2, &u, &g, &e), 0, "%s", e.msg);
    cr_assert_eq(u, 300002u, "300001 is team-m's");
    cr_assert_eq(gx_identity_of(id, "team-m", 3, &u, &g, &e), 0, "%s", e.msg);
    cr_assert_eq(u, 300001u);
    cr_assert_eq(g, 77u);
    cr_assert_eq(gx_identity_of(id, GX_IDENTITY_MPS, 4, &u, &g, &e), 0, "%s", e.msg);
    cr_assert_eq(u, 300003u);
    cr_assert_eq(gx_identity_of(id, "team-c", 5, &u, &g, &e), -1, "the range is used up");
    cr_assert_eq(e.status, 503);
    cr_assert(strstr(e.msg, "widen the range"), "%s", e.msg);
    gx_identity_free(id);
    gx_store_close(s);
    /* a restart: the same namespaces get the same uids */
    s = open_store();
    id = gx_identity_open(&r, s, &e);
    cr_assert_not_null(id, "%s", e.msg);
    cr_assert_eq(gx_identity_of(id, "team-b", 6, &u, &g, &e), 0, "%s", e.msg);
    cr_assert_eq(u, 300002u, "kept in the store");
    cr_assert_eq(gx_identity_of(id, "team-a", 7, &u, &g, &e), 0, "%s", e.msg);
    cr_assert_eq(u, 300000u);
    gx_identity_free(id);
    gx_store_close(s);
    gx_run_config_free(&r);
}

Test(identity, never_an_account_of_the_host, .init = store_tmp_make, .fini = store_tmp_remove)
{
    gx_run_config r;
    gx_err e;
    /* uid 0 is root's account and 1 daemon's on Debian: a range over them skips both */
    cr_assert_eq(load_run(&r, "{}", &e), 0, "%s", e.msg);
    r.uid_lo = 1;
    r.uid_hi = 70000;
    gx_store *s = open_store();
    gx_identity *id = gx_identity_open(&r, s, &e);
    cr_assert_not_null(id, "%s", e.msg);
    uid_t u;
    gid_t g;
    cr_assert_eq(gx_identity_of(id, "team-a", 1, &u, &g, &e), 0, "%s", e.msg);
    cr_assert_null(getpwuid(u), "uid %u belongs to an account", (unsigned)u);
    cr_assert_neq(u, 0u);
    gx_identity_free(id);
    gx_store_close(s);
    gx_run_config_free(&r);
}

/* ---- device nodes (made in the test's throw-away folder) ---- */

static void mknod_c(const char *rel, unsigned maj, unsigned min)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, rel);
    cr_assert_eq(mknod(p, S_IFCHR | 0666, makedev(maj, min)), 0, "mknod %s: %s", p, strerror(errno));
}

Test(devnodes, only_the_pods_gpus_and_the_common_nodes, .init = store_tmp_make, .fini = store_tmp_remove)
{
    if (geteuid() != 0) cr_skip_test("needs root (mknod of device nodes); CI runs the unit tests as root");
    mknod_c("nvidia0", 195, 0);
    mknod_c("nvidia1", 195, 1);
    mknod_c("nvidiactl", 195, 255);
    mknod_c("nvidia-uvm", 509, 0);
    gx_devnode out[GX_DEVNODES_MAX];
    gx_err e;
    cr_assert_eq(gx_devnodes_for(dir, "/nonexistent", NULL, 0, out, GX_DEVNODES_MAX, &e), 0,
                 "no GPU: no nvidia node at all");
    gx_devsel one = {1, -1, -1};
    int n = gx_devnodes_for(dir, "/nonexistent", &one, 1, out, GX_DEVNODES_MAX, &e);
    cr_assert_eq(n, 3, "nvidiactl, nvidia-uvm and nvidia1 (%s)", e.msg);
    cr_assert_str_eq(out[0].dst, "/dev/nvidiactl");
    cr_assert_str_eq(out[1].dst, "/dev/nvidia-uvm");
    cr_assert_eq(out[1].major, 509u);
    cr_assert_str_eq(out[2].dst, "/dev/nvidia1");
    cr_assert_eq(out[2].type, 'c');
    cr_assert_eq(out[2].major, 195u);
    cr_assert_eq(out[2].minor, 1u);
    for (int i = 0; i < n; i++) cr_assert_str_neq(out[i].dst, "/dev/nvidia0", "another pod's GPU");
    gx_devsel missing = {5, -1, -1};
    cr_assert_eq(gx_devnodes_for(dir, "/nonexistent", &missing, 1, out, GX_DEVNODES_MAX, &e), -1,
                 "a GPU whose node is missing where the driver's are present");
    cr_assert(strstr(e.msg, "nvidia5 is missing"), "%s", e.msg);
}

Test(devnodes, a_mig_device_gets_its_capability_nodes, .init = store_tmp_make, .fini = store_tmp_remove)
{
    if (geteuid() != 0) cr_skip_test("needs root (mknod of device nodes); CI runs the unit tests as root");
    char p[256];
    snprintf(p, sizeof p, "%s/nvidia-caps", dir);
    cr_assert_eq(mkdir(p, 0755), 0);
    mknod_c("nvidia0", 195, 0);
    mknod_c("nvidiactl", 195, 255);
    mknod_c("nvidia-caps/nvidia-cap21", 234, 21);
    mknod_c("nvidia-caps/nvidia-cap22", 234, 22);
    mknod_c("nvidia-caps/nvidia-cap30", 234, 30);
    /* the driver's capability files, as /proc/driver/nvidia/capabilities has them */
    char caps[300];
    snprintf(caps, sizeof caps, "%s/caps", dir);
    const char *files[][2] = {{"gpu0/mig/gi2/access", "DeviceFileMinor: 21\nDeviceFileMode: 292\n"},
                              {"gpu0/mig/gi2/ci0/access", "DeviceFileMinor: 22\nDeviceFileMode: 292\n"},
                              {"gpu0/mig/gi3/access", "DeviceFileMinor: 30\n"}};
    for (int i = 0; i < 3; i++) {
        char f[400], cmd[1024];
        snprintf(f, sizeof f, "%s/%s", caps, files[i][0]);
        snprintf(cmd, sizeof cmd, "mkdir -p $(dirname %s) && printf '%s' > %s", f, files[i][1], f);
        cr_assert_eq(system(cmd), 0);
    }
    gx_devsel mig = {0, 2, 0};
    gx_devnode out[GX_DEVNODES_MAX];
    gx_err e;
    int n = gx_devnodes_for(dir, caps, &mig, 1, out, GX_DEVNODES_MAX, &e);
    cr_assert_eq(n, 4, "nvidiactl, nvidia0 and two caps (%s)", e.msg);
    cr_assert_str_eq(out[2].dst, "/dev/nvidia-caps/nvidia-cap21");
    cr_assert_str_eq(out[3].dst, "/dev/nvidia-caps/nvidia-cap22");
    for (int i = 0; i < n; i++) cr_assert_str_neq(out[i].dst, "/dev/nvidia-caps/nvidia-cap30", "another instance's");
}

/* ---- hostPath volumes of a Job ---- */

static int read_job(const char *pod_extra, const char *container_extra, gx_podspec *ps, json_t **keep, gx_err *e)
{
    char text[2048];
    snprintf(text, sizeof text,
             "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: team-a}\nspec:\n  template:\n    spec:\n"
             "%s      containers:\n      - name: c\n        command: [\"true\"]\n%s",
             pod_extra, container_extra);
    *keep = yaml(text);
    gx_err_clear(e);
    return gx_podspec_read(*keep, ps, e);
}

Test(podspec, host_path_volumes_and_their_mounts)
{
    gx_podspec ps;
    json_t *j;
    gx_err e;
    cr_assert_eq(read_job("      volumes: [{name: d, hostPath: {path: /data/set, type: Directory}}]\n",
                          "        volumeMounts: [{name: d, mountPath: /data, readOnly: true}]\n", &ps, &j, &e), 0,
                 "%s", e.msg);
    gx_podmount m[GX_POD_MAX_MOUNTS];
    cr_assert_eq(gx_podspec_mounts(&ps, m), 1);
    cr_assert_str_eq(m[0].host_path, "/data/set");
    cr_assert_str_eq(m[0].mount_path, "/data");
    cr_assert_eq(m[0].read_only, 1);
    cr_assert_str_eq(m[0].field, "spec.template.spec.volumes[0].hostPath.path");
    gx_run_config r;
    cr_assert_eq(load_run(&r, "{namespaces: {team-a: {hostPaths: [/data]}}}", &e), 0, "%s", e.msg);
    cr_assert_eq(gx_podbox_check_mounts(&r, "team-a", &ps, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_podbox_check_mounts(&r, "team-b", &ps, &e), -1, "team-b may not mount /data");
    cr_assert_eq(e.status, 403);
    cr_assert_str_eq(e.field, "spec.template.spec.volumes[0].hostPath.path");
    gx_run_config_free(&r);
    json_decref(j);
    static const struct { const char *pod, *cont, *field, *words; } bad[] = {
        {"      volumes: [{name: d, emptyDir: {}}]\n", "", "spec.template.spec.volumes[0]", "only hostPath"},
        {"      volumes: [{name: d, hostPath: {path: data}}]\n", "", "spec.template.spec.volumes[0].hostPath.path", "absolute"},
        {"      volumes: [{name: d, hostPath: {path: /a/../etc}}]\n", "", "spec.template.spec.volumes[0].hostPath.path", ".."},
        {"      volumes: [{name: d, hostPath: {path: /a}}, {name: d, hostPath: {path: /b}}]\n", "",
         "spec.template.spec.volumes[1]", "used twice"},
        {"", "        volumeMounts: [{name: nope, mountPath: /x}]\n", "spec.template.spec.containers[0].volumeMounts[0]",
         "names no volume"},
        {"      volumes: [{name: d, hostPath: {path: /a}}]\n", "        volumeMounts: [{name: d, mountPath: x}]\n",
         "spec.template.spec.containers[0].volumeMounts[0]", "absolute"},
        {"      volumes: [{name: d, hostPath: {path: /a}}]\n", "        volumeMounts: [{name: d, mountPath: /proc/x}]\n",
         "spec.template.spec.containers[0].volumeMounts[0]", "sandbox's own"},
        {"      volumes: [{name: d, hostPath: {path: /a}}]\n",
         "        volumeMounts: [{name: d, mountPath: /x, subPath: y}]\n",
         "spec.template.spec.containers[0].volumeMounts[0]", "subPath"},
        {"", "        securityContext: {privileged: true}\n", "spec.template.spec.containers[0].securityContext.privileged",
         "sandboxed"},
        {"", "        securityContext: {capabilities: {add: [SYS_ADMIN]}}\n",
         "spec.template.spec.containers[0].securityContext.capabilities.add", "no capabilities"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        cr_assert_eq(read_job(bad[i].pod, bad[i].cont, &ps, &j, &e), -1, "accepted case %zu", i);
        cr_assert_str_eq(e.field, bad[i].field, "case %zu", i);
        cr_assert(strstr(e.msg, bad[i].words), "case %zu: \"%s\" lacks \"%s\"", i, e.msg, bad[i].words);
        json_decref(j);
    }
}

Test(podbox, unsandboxed_mounts_only_at_their_own_path)
{
    gx_podspec ps;
    json_t *j;
    gx_err e;
    cr_assert_eq(read_job("      volumes: [{name: d, hostPath: {path: /data}}]\n",
                          "        volumeMounts: [{name: d, mountPath: /mnt/d}]\n", &ps, &j, &e), 0, "%s", e.msg);
    gx_run_config r;
    cr_assert_eq(load_run(&r, "{sandbox: none, namespaces: {team-a: {hostPaths: [/data]}}}", &e), 0, "%s", e.msg);
    cr_assert_eq(gx_podbox_check_mounts(&r, "team-a", &ps, &e), -1, "no mount namespace, no other path");
    cr_assert(strstr(e.msg, "set mountPath to /data"), "%s", e.msg);
    gx_run_config_free(&r);
    json_decref(j);
}

Test(podbox, cgroup_names_are_per_pod_and_never_cut)
{
    char out[GX_PODBOX_CG_MAX];
    cr_assert_eq(gx_podbox_cgroup_name("team-a", "train", 3, 1, out, sizeof out), 0);
    cr_assert_str_eq(out, "team-a/train/g3-p1");
    char longname[254];
    memset(longname, 'a', 253);
    longname[253] = 0;
    cr_assert_eq(gx_podbox_cgroup_name("team-a", longname, 1, 0, out, sizeof out), 0, "the longest key fits");
    char small[16];
    cr_assert_eq(gx_podbox_cgroup_name("team-a", "train", 3, 1, small, sizeof small), -1, "refused, not cut");
}
