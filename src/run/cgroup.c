/* cgroup: one control group per sandboxed pod, on cgroup v2, v1 or a hybrid of both.
 * Owns: finding each controller's hierarchy in mountinfo, the file names and values of
 * each version, the SIGKILL loop for hierarchies without cgroup.kill.
 * Must not: start processes or name groups (the daemon does); cut a path short: a path
 * that does not fit PATH_MAX is an error, never a write to some shorter, other path.
 *
 * A "hierarchy in use" is the v2 mount when any controller is used there, plus each
 * distinct v1 mount holding a controller in use. The pod's group exists in each of them;
 * the first one (v2, else memory's v1 mount, then pids, cpu, devices) is where its
 * processes are listed. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "lib/alloc.h"
#include "run/cgroup.h"

enum {
    KILL_PASSES = 20,        /* SIGKILL rounds over cgroup.procs: at most ~124 ms of pauses */
    SETTLE_PASSES = 20,      /* rmdir retries while killed tasks finish exiting */
    CPU_PERIOD_US = 100000,  /* the CFS period Kubernetes uses */
    CPU_MIN_QUOTA_US = 1000, /* the kernel refuses a smaller quota (Kubernetes clamps too) */
};

static const char *const ctrl_name[GX_CG_NCTRL] = {"memory", "pids", "cpu", "devices"};

/* Nodes every pod gets on v1 (bwrap's --dev makes the same ones): null, zero, full,
 * random, urandom, tty, ptmx and every pts. */
static const char *const std_devices[] = {
    "c 1:3 rwm", "c 1:5 rwm", "c 1:7 rwm", "c 1:8 rwm", "c 1:9 rwm",
    "c 5:0 rwm", "c 5:2 rwm", "c 136:* rwm",
};

typedef struct cg_hier {
    const char *root;        /* mount point */
    int v2;
    unsigned ctrls;          /* GX_CG_BIT(c) of the controllers used on it */
} cg_hier;

/* ---- small file and path helpers ---- */

/* getline, failing through lib/alloc when memory is exhausted (the house rule) instead
 * of taking the failure for the end of the file. */
static ssize_t xgetline(char **line, size_t *cap, FILE *f)
{
    errno = 0;
    ssize_t k = getline(line, cap, f);
    if (k < 0 && errno == ENOMEM) gx_alloc_fail(*cap);
    return k;
}

static void nap_1ms(void)
{
    struct timespec t = {0, 1000000};
    nanosleep(&t, NULL);
}

/* The pause after kill round `pass`: 1 ms for the first rounds, where forks race the kill,
 * then doubling every 4 rounds up to 16 ms, for what is left then is mostly dying: 30 killed
 * processes took 15-35 ms to leave the list on a 2-core host, longer than 20 x 1 ms. */
static void nap_pass(int pass)
{
    struct timespec t = {0, 1000000L << (pass / 4)};
    nanosleep(&t, NULL);
}

/* A file that must fit buf whole (cgroup.controllers, a counter): EFBIG rather than
 * parsing a cut token. Once buf is full, one more byte read tells "exactly fits" apart. */
static int read_small(const char *path, char *buf, size_t n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t len = 0;
    for (;;) {
        char extra;
        ssize_t k = len < n - 1 ? read(fd, buf + len, n - 1 - len) : read(fd, &extra, 1);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0 || (k > 0 && len == n - 1)) {
            int e = k < 0 ? errno : EFBIG;
            close(fd);
            errno = e;
            return -1;
        }
        if (k == 0) break;
        len += (size_t)k;
    }
    close(fd);
    buf[len] = 0;
    return 0;
}

/* The whole value in one write(2): cgroupfs parses each write on its own, so a value
 * split in two would be read as two (wrong) values. */
static int write_file(const char *path, const char *val)
{
    int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
    if (fd < 0) return -1;
    size_t len = strlen(val);
    ssize_t k = write(fd, val, len);
    int e = errno;
    close(fd);
    if (k < 0) { errno = e; return -1; }
    if ((size_t)k != len) { errno = EIO; return -1; }
    return 0;
}

/* "a/b" into out, or ENAMETOOLONG: never a path cut short. */
static int join(char *out, size_t n, const char *a, const char *b)
{
    int k = snprintf(out, n, "%s/%s", a, b);
    if (k < 0 || (size_t)k >= n) { errno = ENAMETOOLONG; return -1; }
    return 0;
}

/* ROOT/PARENT/REL[/FILE] (file may be NULL), or ENAMETOOLONG. */
static int group_path(char *out, size_t n, const char *root, const char *parent,
                      const char *rel, const char *file)
{
    int k = snprintf(out, n, "%s/%s/%s%s%s", root, parent, rel, file ? "/" : "", file ? file : "");
    if (k < 0 || (size_t)k >= n) { errno = ENAMETOOLONG; return -1; }
    return 0;
}

/* A relative cgroup path: non-empty components separated by single '/', none "." or "..",
 * no control characters, shorter than max. */
static int rel_ok(const char *p, size_t max)
{
    size_t n = strnlen(p, max);
    if (n == 0 || n == max || p[0] == '/' || p[n - 1] == '/') return 0;
    const char *c = p;
    while (*c) {
        size_t len = strcspn(c, "/");
        if (len == 0) return 0;
        if ((len == 1 && c[0] == '.') || (len == 2 && c[0] == '.' && c[1] == '.')) return 0;
        for (size_t i = 0; i < len; i++)
            if ((unsigned char)c[i] < 0x20 || c[i] == 0x7f) return 0;
        c += len;
        if (*c == '/') c++;
    }
    return 1;
}

/* ---- detection ---- */

/* Undo mountinfo's octal escapes (\040 space, \011 tab, \012 newline, \134 backslash). */
static void unescape(char *s)
{
    char *w = s;
    for (const char *r = s; *r; w++) {
        if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
            r[3] >= '0' && r[3] <= '7') {
            *w = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
            r += 4;
        } else {
            *w = *r++;
        }
    }
    *w = 0;
}

/* Copy a mount point into a PATH_MAX slot unless one is there already (the first mount
 * of a hierarchy wins; later ones are bind mounts of it). */
static void take_root(char *slot, const char *mnt)
{
    size_t n = strlen(mnt);
    if (slot[0] || n >= PATH_MAX) return;
    memcpy(slot, mnt, n + 1);
}

/* One mountinfo line: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE
 * SOURCE SUPEROPTIONS". The optional fields ("shared:5") vary in number, hence the
 * search for "-". A v1 mount names its controllers in SUPEROPTIONS ("rw,cpu,cpuacct"). */
static void scan_mount(gx_cgroup_sys *s, char *line)
{
    char *save = NULL, *f[6], *t = NULL;
    int i = 0;
    while (i < 6 && (t = strtok_r(i ? NULL : line, " \n", &save))) f[i++] = t;
    if (i < 6) return;
    do t = strtok_r(NULL, " \n", &save); while (t && strcmp(t, "-"));
    if (!t) return;
    char *fstype = strtok_r(NULL, " \n", &save);
    strtok_r(NULL, " \n", &save); /* source */
    char *opts = strtok_r(NULL, " \n", &save);
    if (!fstype) return;
    char *mnt = f[4];
    unescape(mnt);
    if (!strcmp(fstype, "cgroup2")) {
        take_root(s->v2_root, mnt);
        return;
    }
    if (strcmp(fstype, "cgroup") || !opts) return;
    char *osave = NULL;
    for (char *o = strtok_r(opts, ",", &osave); o; o = strtok_r(NULL, ",", &osave))
        for (int c = 0; c < GX_CG_NCTRL; c++)
            if (!strcmp(o, ctrl_name[c])) take_root(s->v1_root[c], mnt);
}

/* Which of memory, pids and cpu the v2 root offers (devices, last in the enum, is no v2
 * controller: the loops below stop before it). */
static unsigned v2_controllers(const char *root)
{
    char path[PATH_MAX], buf[1024], *save = NULL;
    if (!root[0] || join(path, sizeof path, root, "cgroup.controllers") ||
        read_small(path, buf, sizeof buf))
        return 0;
    unsigned bits = 0;
    for (char *t = strtok_r(buf, " \n", &save); t; t = strtok_r(NULL, " \n", &save))
        for (int c = 0; c < GX_CG_DEVICES; c++)
            if (!strcmp(t, ctrl_name[c])) bits |= GX_CG_BIT(c);
    return bits;
}

int gx_cgroup_detect(gx_cgroup_sys *s, const char *parent, const char *mountinfo, gx_err *err)
{
    memset(s, 0, sizeof *s);
    if (!parent || !*parent) parent = "gpuaas";
    if (!rel_ok(parent, sizeof s->parent))
        return gx_errf(err, 422, "run.cgroupParent", "must be a relative cgroup path of at most %zu "
                       "characters, without \"..\", \".\", empty or control characters: \"%.200s\"",
                       sizeof s->parent - 1, parent);
    memcpy(s->parent, parent, strlen(parent) + 1);
    if (!mountinfo) mountinfo = "/proc/self/mountinfo";
    FILE *f = fopen(mountinfo, "re");
    if (!f) return gx_errf(err, 500, NULL, "cgroup: cannot read %s: %s", mountinfo, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    while (xgetline(&line, &cap, f) > 0) scan_mount(s, line);
    int bad = ferror(f);
    free(line);
    fclose(f);
    if (bad) return gx_errf(err, 500, NULL, "cgroup: error reading %s", mountinfo);
    s->on_v2 = v2_controllers(s->v2_root);
    for (int c = 0; c < GX_CG_NCTRL; c++)
        if (!(s->on_v2 & GX_CG_BIT(c)) && s->v1_root[c][0]) s->on_v1 |= GX_CG_BIT(c);
    return 0;
}

int gx_cgroup_missing(const gx_cgroup_sys *s, unsigned need, char *out, size_t n)
{
    int k = 0;
    size_t w = 0;
    if (n) out[0] = 0;
    for (int c = 0; c < GX_CG_NCTRL; c++) {
        if (!(need & GX_CG_BIT(c)) || ((s->on_v1 | s->on_v2) & GX_CG_BIT(c))) continue;
        if (w < n) {
            int r = snprintf(out + w, n - w, "%s%s", k ? ", " : "", ctrl_name[c]);
            w = r < 0 ? n : w + (size_t)r;
        }
        k++;
    }
    return k;
}

/* ---- the hierarchies of a group ---- */

/* The distinct hierarchies in use, v2 first, so that out[0] is where processes are listed.
 * Two v1 controllers co-mounted on one hierarchy share an entry. */
static int hierarchies(const gx_cgroup_sys *s, cg_hier out[GX_CG_NCTRL + 1])
{
    int n = 0;
    if (s->on_v2) out[n++] = (cg_hier){s->v2_root, 1, s->on_v2};
    for (int c = 0; c < GX_CG_NCTRL; c++) {
        if (!(s->on_v1 & GX_CG_BIT(c))) continue;
        int i = 0;
        while (i < n && (out[i].v2 || strcmp(out[i].root, s->v1_root[c]))) i++;
        if (i == n) out[n++] = (cg_hier){s->v1_root[c], 0, 0};
        out[i].ctrls |= GX_CG_BIT(c);
    }
    return n;
}

/* FILE of the group in the first hierarchy in use; -1 when none or the path is bad. */
static int first_path(const gx_cgroup_sys *s, const char *rel, const char *file, char *out)
{
    cg_hier h[GX_CG_NCTRL + 1];
    if (!rel_ok(rel, PATH_MAX) || hierarchies(s, h) == 0) return -1;
    return group_path(out, PATH_MAX, h[0].root, s->parent, rel, file);
}

/* FILE of the group in the hierarchy holding controller c; -1 when c is not in use. */
static int ctrl_path(const gx_cgroup_sys *s, int c, const char *rel, const char *file, char *out)
{
    const char *root = (s->on_v2 & GX_CG_BIT(c)) ? s->v2_root
                     : (s->on_v1 & GX_CG_BIT(c)) ? s->v1_root[c] : NULL;
    if (!root || !rel_ok(rel, PATH_MAX)) return -1;
    return group_path(out, PATH_MAX, root, s->parent, rel, file);
}

/* ---- create ---- */

/* Write val to DIR/file, or fill err naming the file. optional: a missing file is fine
 * (a kernel without swap accounting has no memory.swap.max). */
static int put(const char *dir, const char *file, const char *val, int optional, gx_err *err)
{
    char path[PATH_MAX];
    if (join(path, sizeof path, dir, file) == 0 && write_file(path, val) == 0) return 0;
    if (optional && errno == ENOENT) return 0;
    return gx_errf(err, 500, NULL, "cgroup: cannot write \"%s\" to %s/%s: %s", val, dir, file,
                   strerror(errno));
}

/* On v2 a child has only the controllers its parent lists in cgroup.subtree_control. */
static int enable_v2(const cg_hier *h, const char *dir, gx_err *err)
{
    char val[64] = "";
    size_t w = 0;
    for (int c = 0; c < GX_CG_DEVICES; c++)
        if (h->ctrls & GX_CG_BIT(c)) {
            int r = snprintf(val + w, sizeof val - w, "%s+%s", w ? " " : "", ctrl_name[c]);
            if (r < 0 || (size_t)r >= sizeof val - w) abort(); /* 64 bytes hold all three */
            w += (size_t)r;
        }
    return w ? put(dir, "cgroup.subtree_control", val, 0, err) : 0;
}

/* mkdir every level of PARENT/rel below the root (existing ones are reused), enabling the
 * v2 controllers in each level's parent first. The leaf's own subtree_control is left
 * alone: on v2 a group with enabled children controllers may not hold processes. */
static int make_levels(const gx_cgroup_sys *s, const cg_hier *h, const char *rel, gx_err *err)
{
    char sub[PATH_MAX], above[PATH_MAX], dir[PATH_MAX];
    if (join(sub, sizeof sub, s->parent, rel) || strlen(h->root) >= sizeof above)
        return gx_errf(err, 500, NULL, "cgroup: path too long: %s/%s/%s", h->root, s->parent, rel);
    memcpy(above, h->root, strlen(h->root) + 1);
    for (size_t i = 0;; i++) {
        if (sub[i] != '/' && sub[i] != 0) continue;
        char end = sub[i];
        sub[i] = 0;
        if (h->v2 && enable_v2(h, above, err)) return -1;
        if (join(dir, sizeof dir, h->root, sub))
            return gx_errf(err, 500, NULL, "cgroup: path too long: %s/%s", h->root, sub);
        if (mkdir(dir, 0755) && errno != EEXIST)
            return gx_errf(err, 500, NULL, "cgroup: cannot create %s: %s", dir, strerror(errno));
        memcpy(above, dir, strlen(dir) + 1);
        sub[i] = end;
        if (!end) return 0;
    }
}

/* Decimal value, or `none` when v == 0 (no limit: "max" on v2, "-1" on v1). Writing the
 * no-limit value too makes a reused group lose its old limits. */
static const char *num(char *buf, size_t n, int64_t v, const char *none)
{
    if (v == 0) return none;
    snprintf(buf, n, "%lld", (long long)v); /* 24 bytes hold any int64 */
    return buf;
}

/* v1: memsw (memory + swap) must stay >= the memory limit, so lift it first, set the
 * limit, then hold it to the same value: without swap counted, a pod over its limit
 * would swap instead of being OOM-killed. */
static int memory_v1(const char *dir, int64_t bytes, gx_err *err)
{
    char b[24];
    const char *v = num(b, sizeof b, bytes, "-1");
    if (put(dir, "memory.memsw.limit_in_bytes", "-1", 1, err) ||
        put(dir, "memory.limit_in_bytes", v, 0, err))
        return -1;
    return bytes ? put(dir, "memory.memsw.limit_in_bytes", v, 1, err) : 0;
}

/* v2: memory.oom.group makes an OOM kill the whole pod, as Kubernetes sets it (absent
 * before Linux 4.19); swap is off for pods, as Kubernetes' default NoSwap. */
static int memory_v2(const char *dir, int64_t bytes, gx_err *err)
{
    char b[24];
    return put(dir, "memory.max", num(b, sizeof b, bytes, "max"), 0, err) ||
           put(dir, "memory.swap.max", "0", 1, err) ||
           put(dir, "memory.oom.group", "1", 1, err) ? -1 : 0;
}

/* 1000 millis = one CPU = a quota of one whole period. */
static int cpu_limit(const char *dir, int v2, int64_t millis, gx_err *err)
{
    int64_t q = millis * (CPU_PERIOD_US / 1000);
    if (millis && q < CPU_MIN_QUOTA_US) q = CPU_MIN_QUOTA_US;
    char b[64];
    if (v2) {
        if (millis) snprintf(b, sizeof b, "%lld %d", (long long)q, CPU_PERIOD_US);
        else snprintf(b, sizeof b, "max %d", CPU_PERIOD_US);
        return put(dir, "cpu.max", b, 0, err);
    }
    char p[24];
    snprintf(p, sizeof p, "%d", CPU_PERIOD_US);
    return put(dir, "cpu.cfs_period_us", p, 0, err) ||
           put(dir, "cpu.cfs_quota_us", num(b, sizeof b, q, "-1"), 0, err) ? -1 : 0;
}

/* v1 devices: "a" in devices.deny empties the allow list (of a group without children),
 * then one rule per write. */
static int devices_v1(const char *dir, const gx_cgroup_limits *l, gx_err *err)
{
    if (put(dir, "devices.deny", "a", 0, err)) return -1;
    for (size_t i = 0; i < sizeof std_devices / sizeof *std_devices; i++)
        if (put(dir, "devices.allow", std_devices[i], 0, err)) return -1;
    for (size_t i = 0; i < l->ndevices; i++) {
        char b[64];
        snprintf(b, sizeof b, "%c %u:%u rwm", l->devices[i].type, l->devices[i].major,
                 l->devices[i].minor);
        if (put(dir, "devices.allow", b, 0, err)) return -1;
    }
    return 0;
}

static int write_limits(const cg_hier *h, const char *dir, const gx_cgroup_limits *l, gx_err *err)
{
    char b[24];
    if ((h->ctrls & GX_CG_BIT(GX_CG_MEMORY)) &&
        (h->v2 ? memory_v2(dir, l->memory_bytes, err) : memory_v1(dir, l->memory_bytes, err)))
        return -1;
    if ((h->ctrls & GX_CG_BIT(GX_CG_PIDS)) &&
        put(dir, "pids.max", num(b, sizeof b, l->pids, "max"), 0, err))
        return -1;
    if ((h->ctrls & GX_CG_BIT(GX_CG_CPU)) && cpu_limit(dir, h->v2, l->cpu_millis, err)) return -1;
    if ((h->ctrls & GX_CG_BIT(GX_CG_DEVICES)) && !h->v2 && devices_v1(dir, l, err)) return -1;
    return 0;
}

/* Refuse what the kernel would refuse half-way through, before anything is created. */
static int limits_ok(const gx_cgroup_limits *l, gx_err *err)
{
    if (l->memory_bytes < 0 || l->pids < 0 || l->cpu_millis < 0)
        return gx_errf(err, 500, NULL, "cgroup: negative limit");
    if (l->cpu_millis > INT64_MAX / (CPU_PERIOD_US / 1000))
        return gx_errf(err, 500, NULL, "cgroup: cpu limit %lld millis is too large",
                       (long long)l->cpu_millis);
    if (l->ndevices && !l->devices) return gx_errf(err, 500, NULL, "cgroup: devices missing");
    for (size_t i = 0; i < l->ndevices; i++)
        if (l->devices[i].type != 'c' && l->devices[i].type != 'b')
            return gx_errf(err, 500, NULL, "cgroup: device %zu: type must be 'c' or 'b'", i);
    return 0;
}

int gx_cgroup_create(const gx_cgroup_sys *s, const char *rel, const gx_cgroup_limits *l, gx_err *err)
{
    cg_hier h[GX_CG_NCTRL + 1];
    int n = hierarchies(s, h);
    if (!rel_ok(rel, PATH_MAX))
        return gx_errf(err, 500, NULL, "cgroup: bad group name \"%.200s\"", rel);
    if (n == 0) return gx_errf(err, 500, NULL, "cgroup: no controller is available on this host");
    if (limits_ok(l, err)) return -1;
    for (int i = 0; i < n; i++) {
        char dir[PATH_MAX];
        if (group_path(dir, sizeof dir, h[i].root, s->parent, rel, NULL))
            return gx_errf(err, 500, NULL, "cgroup: path too long: %s/%s/%s", h[i].root, s->parent, rel);
        if (make_levels(s, &h[i], rel, err) || write_limits(&h[i], dir, l, err)) {
            gx_cgroup_remove(s, rel, NULL); /* best effort: only empty groups go */
            return -1;
        }
    }
    return 0;
}

int gx_cgroup_procs_files(const gx_cgroup_sys *s, const char *rel, char out[][PATH_MAX], int max)
{
    cg_hier h[GX_CG_NCTRL + 1];
    int n = hierarchies(s, h);
    /* All or nothing: a process left out of one hierarchy would escape its limit. */
    if (!rel_ok(rel, PATH_MAX) || n > max) return -1;
    for (int i = 0; i < n; i++)
        if (group_path(out[i], PATH_MAX, h[i].root, s->parent, rel, "cgroup.procs")) return -1;
    return n;
}

/* ---- processes ---- */

/* The pids in a cgroup.procs file into *v (grown as needed, *cap its size); -1 when it
 * cannot be read (the group does not exist). Tasks already exiting are not listed. */
static int procs_read(const char *path, pid_t **v, size_t *cap)
{
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    char *line = NULL;
    size_t lcap = 0;
    int n = 0;
    while (xgetline(&line, &lcap, f) > 0) {
        char *end;
        errno = 0;
        long p = strtol(line, &end, 10);
        if (errno || end == line || p <= 0 || p > INT_MAX) continue;
        *v = gx_xgrow(*v, cap, (size_t)n + 1, sizeof **v);
        (*v)[n++] = (pid_t)p;
    }
    int bad = ferror(f);
    free(line);
    fclose(f);
    return bad ? -1 : n;
}

int gx_cgroup_pids(const gx_cgroup_sys *s, const char *rel, pid_t *out, int max)
{
    char path[PATH_MAX];
    if (first_path(s, rel, "cgroup.procs", path)) return -1;
    pid_t *v = NULL;
    size_t cap = 0;
    int n = procs_read(path, &v, &cap);
    for (int i = 0; i < n && i < max; i++) out[i] = v[i];
    free(v);
    return n;
}

/* The real uid of pid (first field of "Uid:" in /proc/PID/status); -1 when it is gone. */
static int real_uid(pid_t pid, uid_t *uid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f) return -1;
    char *line = NULL;
    size_t cap = 0;
    int rc = -1;
    while (rc < 0 && xgetline(&line, &cap, f) > 0) {
        if (strncmp(line, "Uid:", 4)) continue;
        char *end;
        errno = 0;
        unsigned long u = strtoul(line + 4, &end, 10);
        if (errno || end == line + 4 || u >= (uid_t)-1) break;
        *uid = (uid_t)u;
        rc = 0;
    }
    free(line);
    fclose(f);
    return rc;
}

int gx_cgroup_signal(const gx_cgroup_sys *s, const char *rel, int sig, uid_t uid)
{
    char path[PATH_MAX];
    if (first_path(s, rel, "cgroup.procs", path)) return -1;
    pid_t *v = NULL;
    size_t cap = 0;
    int n = procs_read(path, &v, &cap), hit = 0;
    for (int i = 0; i < n; i++) {
        uid_t u;
        if (uid != (uid_t)-1 && (real_uid(v[i], &u) || u != uid)) continue;
        if (kill(v[i], sig) == 0) hit++;
    }
    free(v);
    return n < 0 ? -1 : hit;
}

/* Without cgroup.kill (v1, Linux < 5.14) a process may fork between our reading the list
 * and our signal reaching it, so kill in rounds until a reading finds the group empty.
 * A pause only follows a round that found someone; it lets the killed finish exiting. */
int gx_cgroup_kill(const gx_cgroup_sys *s, const char *rel)
{
    char path[PATH_MAX], kill_file[PATH_MAX];
    if (first_path(s, rel, "cgroup.procs", path)) return -1;
    pid_t *v = NULL;
    size_t cap = 0;
    int n = procs_read(path, &v, &cap);
    if (n > 0 && s->on_v2 && first_path(s, rel, "cgroup.kill", kill_file) == 0)
        write_file(kill_file, "1"); /* ENOENT before 5.14: the rounds below do it */
    for (int pass = 0; n > 0 && pass < KILL_PASSES; pass++) {
        for (int i = 0; i < n; i++) kill(v[i], SIGKILL);
        nap_pass(pass);
        n = procs_read(path, &v, &cap);
        if (n < 0) n = 0; /* removed meanwhile: nothing is left in it */
    }
    free(v);
    return n;
}

/* "oom_kill N" from memory.events (v2) or memory.oom_control (v1); other keys such as
 * "oom" and "oom_group_kill" are different counters. */
int64_t gx_cgroup_oom_kills(const gx_cgroup_sys *s, const char *rel)
{
    int v2 = (s->on_v2 & GX_CG_BIT(GX_CG_MEMORY)) != 0;
    char path[PATH_MAX], buf[4096], *save = NULL;
    if (ctrl_path(s, GX_CG_MEMORY, rel, v2 ? "memory.events" : "memory.oom_control", path) ||
        read_small(path, buf, sizeof buf))
        return 0;
    for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (strncmp(l, "oom_kill ", 9)) continue;
        char *end;
        errno = 0;
        long long k = strtoll(l + 9, &end, 10);
        return errno || end == l + 9 || k < 0 ? 0 : (int64_t)k;
    }
    return 0;
}

int64_t gx_cgroup_memory_bytes(const gx_cgroup_sys *s, const char *rel)
{
    int v2 = (s->on_v2 & GX_CG_BIT(GX_CG_MEMORY)) != 0;
    char path[PATH_MAX], buf[64];
    if (ctrl_path(s, GX_CG_MEMORY, rel, v2 ? "memory.current" : "memory.usage_in_bytes", path) ||
        read_small(path, buf, sizeof buf))
        return -1;
    char *end;
    errno = 0;
    long long b = strtoll(buf, &end, 10);
    return errno || end == buf || b < 0 ? -1 : (int64_t)b;
}

/* ---- remove ---- */

/* rmdir, retrying a little while the group lists no process: a killed task may leave
 * cgroup.procs before it leaves the group, and rmdir says EBUSY until it has (runc retries
 * its rmdir for the same reason; Linux 6.18 here never showed the gap). */
static int rmdir_settled(const char *dir)
{
    char procs[PATH_MAX];
    for (int pass = 0;; pass++) {
        if (rmdir(dir) == 0) return 0;
        int e = errno;
        pid_t *v = NULL;
        size_t cap = 0;
        int n = e == EBUSY && pass < SETTLE_PASSES && join(procs, sizeof procs, dir, "cgroup.procs") == 0
                    ? procs_read(procs, &v, &cap) : -1;
        free(v);
        if (n != 0) { errno = e; return -1; }
        nap_1ms();
    }
}

/* The leaf, then rel's own parents while they are empty; PARENT itself stays. A parent
 * still holding another pod's group says EBUSY: that ends the climb, not in error. */
static int remove_in(const gx_cgroup_sys *s, const cg_hier *h, const char *rel, gx_err *err)
{
    char dir[PATH_MAX], sub[PATH_MAX];
    if (group_path(dir, sizeof dir, h->root, s->parent, rel, NULL) || strlen(rel) >= sizeof sub)
        return gx_errf(err, 500, NULL, "cgroup: path too long: %s/%s/%s", h->root, s->parent, rel);
    if (rmdir_settled(dir) && errno != ENOENT)
        return gx_errf(err, errno == EBUSY ? 409 : 500, NULL, "cgroup %s: cannot remove it: %s", dir,
                       errno == EBUSY ? "it still holds processes or groups" : strerror(errno));
    memcpy(sub, rel, strlen(rel) + 1);
    for (char *slash = strrchr(sub, '/'); slash; slash = strrchr(sub, '/')) {
        *slash = 0;
        if (group_path(dir, sizeof dir, h->root, s->parent, sub, NULL)) return 0;
        if (rmdir(dir) == 0 || errno == ENOENT) continue;
        if (errno == EBUSY || errno == ENOTEMPTY) return 0;
        return gx_errf(err, 500, NULL, "cgroup %s: cannot remove it: %s", dir, strerror(errno));
    }
    return 0;
}

int gx_cgroup_remove(const gx_cgroup_sys *s, const char *rel, gx_err *err)
{
    if (!rel_ok(rel, PATH_MAX)) return gx_errf(err, 500, NULL, "cgroup: bad group name \"%.200s\"", rel);
    cg_hier h[GX_CG_NCTRL + 1];
    int n = hierarchies(s, h), rc = 0;
    /* Every hierarchy is tried, so that one busy group does not strand the others. */
    for (int i = 0; i < n; i++)
        if (remove_in(s, &h[i], rel, rc ? NULL : err)) rc = -1;
    return rc;
}
