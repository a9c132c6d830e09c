/* devnodes: which /dev nodes a pod's GPUs need (see devnodes.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include "run/devnodes.h"

/* Add DEVDIR/rel as /dev/rel when it is a device node; 1 added, 0 absent, -1 full. */
static int add(const char *dev_dir, const char *rel, gx_devnode *out, int *n, int max, gx_err *err)
{
    for (int i = 0; i < *n; i++)
        if (!strcmp(out[i].dst + 5, rel)) return 1; /* two MIG devices of one GPU */
    gx_devnode d;
    memset(&d, 0, sizeof d);
    int a = snprintf(d.src, sizeof d.src, "%s/%s", dev_dir, rel);
    int b = snprintf(d.dst, sizeof d.dst, "/dev/%s", rel);
    if (a < 0 || (size_t)a >= sizeof d.src || b < 0 || (size_t)b >= sizeof d.dst)
        return gx_errf(err, 500, "run.deviceDir", "device path %s/%s is too long", dev_dir, rel);
    struct stat st;
    if (stat(d.src, &st) < 0 || !(S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) return 0;
    if (*n >= max) return gx_errf(err, 500, "", "more than %d device nodes for one pod", max);
    d.type = S_ISCHR(st.st_mode) ? 'c' : 'b';
    d.major = major(st.st_rdev);
    d.minor = minor(st.st_rdev);
    out[(*n)++] = d;
    return 1;
}

/* "DeviceFileMinor: N" of a driver capability file, -1 when absent or unreadable. */
static int cap_minor(const char *path)
{
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    char line[128];
    int m = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "DeviceFileMinor: %d", &m) == 1) break;
    fclose(f);
    return m;
}

/* The two nvidia-caps nodes of a MIG device: its GPU instance's and compute instance's. */
static int add_mig_caps(const char *dev_dir, const char *caps_dir, const gx_devsel *s, gx_devnode *out, int *n,
                        int max, gx_err *err)
{
    char p[PATH_MAX], rel[64];
    int k = snprintf(p, sizeof p, "%s/gpu%d/mig/gi%d/access", caps_dir, s->minor, s->mig_gi);
    if (k < 0 || (size_t)k >= sizeof p) return gx_errf(err, 500, "", "capability path too long");
    int a = cap_minor(p);
    k = snprintf(p, sizeof p, "%s/gpu%d/mig/gi%d/ci%d/access", caps_dir, s->minor, s->mig_gi, s->mig_ci);
    if (k < 0 || (size_t)k >= sizeof p) return gx_errf(err, 500, "", "capability path too long");
    int b = cap_minor(p);
    int caps[2] = {a, b};
    for (int i = 0; i < 2; i++) {
        if (caps[i] < 0) continue;
        snprintf(rel, sizeof rel, "nvidia-caps/nvidia-cap%d", caps[i]);
        if (add(dev_dir, rel, out, n, max, err) < 0) return -1;
    }
    return 0;
}

int gx_devnodes_for(const char *dev_dir, const char *caps_dir, const gx_devsel *sel, size_t nsel,
                    gx_devnode *out, int max, gx_err *err)
{
    int n = 0;
    if (!nsel) return 0;
    static const char *common[] = {"nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset", NULL};
    int ctl = 0;
    for (int i = 0; common[i]; i++) {
        int r = add(dev_dir, common[i], out, &n, max, err);
        if (r < 0) return -1;
        if (i == 0) ctl = r;
    }
    for (size_t i = 0; i < nsel; i++) {
        char rel[32];
        snprintf(rel, sizeof rel, "nvidia%d", sel[i].minor);
        int r = add(dev_dir, rel, out, &n, max, err);
        if (r < 0) return -1;
        if (!r && ctl)
            return gx_errf(err, 500, "run.deviceDir", "%s/%s is missing although %s/nvidiactl exists: the pod would "
                           "start without its GPU", dev_dir, rel, dev_dir);
        if (sel[i].mig_gi >= 0 && add_mig_caps(dev_dir, caps_dir, &sel[i], out, &n, max, err)) return -1;
    }
    return n;
}
