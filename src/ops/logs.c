/* logs: GET .../logs, optionally following the output as it is written.
 * Owns: reading pod log files from saved offsets, prefixing lines with the pod when
 * a workload has several, and ending the stream when the workload can write no more.
 * Must not: hold files open between reads (a follower may wait for hours), or send
 * a half line from one pod in the middle of another's. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/alloc.h"
#include "ops/daemon.h"

#define MAX_PODS 1024

typedef struct logstream {
    gx_daemon *d;
    gx_wlkey key;
    int pod;           /* -1: every pod */
    int follow;
    off_t off[MAX_PODS];
} logstream;

/* Copy what pod i has written since last time into buf. With a prefix, only whole
 * lines are taken (unless final), so lines of different pods never mix. */
static size_t read_pod(logstream *ls, int i, int prefix, int final, char *buf, size_t max)
{
    char path[PATH_MAX];
    gx_d_log_path(ls->d, ls->key.key, i, path, sizeof path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    char chunk[8192];
    size_t want = sizeof chunk;
    if (!prefix && want > max) want = max;
    ssize_t n = pread(fd, chunk, want, ls->off[i]);
    close(fd);
    if (n <= 0) return 0;
    if (!prefix) {
        memcpy(buf, chunk, (size_t)n);
        ls->off[i] += n;
        return (size_t)n;
    }
    size_t used = 0, start = 0;
    char pfx[32];
    int pl = snprintf(pfx, sizeof pfx, "[pod %d] ", i);
    for (size_t k = 0; k < (size_t)n; k++) {
        int last = k + 1 == (size_t)n;
        if (chunk[k] != '\n' && !(last && final)) continue;
        size_t len = k + 1 - start;
        int add_nl = chunk[k] != '\n';
        if (used + (size_t)pl + len + (size_t)add_nl > max) break;
        memcpy(buf + used, pfx, (size_t)pl);
        memcpy(buf + used + pl, chunk + start, len);
        used += (size_t)pl + len;
        if (add_nl) buf[used++] = '\n';
        start = k + 1;
    }
    /* one line longer than the whole chunk: pass it through rather than stall */
    if (start == 0 && (size_t)n == sizeof chunk && max > (size_t)pl) {
        size_t len = (size_t)n < max - (size_t)pl ? (size_t)n : max - (size_t)pl;
        memcpy(buf, pfx, (size_t)pl);
        memcpy(buf + pl, chunk, len);
        ls->off[i] += (off_t)len;
        return (size_t)pl + len;
    }
    ls->off[i] += (off_t)start;
    return used;
}

static ssize_t log_read(void *ud, char *buf, size_t max)
{
    logstream *ls = ud;
    int active = ls->follow && gx_d_active(ls->d, ls->key.key);
    int first = ls->pod >= 0 ? ls->pod : 0;
    int last = ls->pod >= 0 ? ls->pod + 1 : gx_d_pod_count(ls->d, ls->key.key);
    if (last > MAX_PODS) last = MAX_PODS;
    int prefix = ls->pod < 0 && last > 1;
    size_t used = 0;
    for (int i = first; i < last && used < max; i++)
        used += read_pod(ls, i, prefix, !active, buf + used, max - used);
    if (used) return (ssize_t)used;
    return active ? 0 : -1;
}

static void log_free(void *ud) { free(ud); }

int gx_d_logs(gx_daemon *d, const char *key, int pod, int follow, gx_resp *resp, gx_err *err)
{
    if (follow && (size_t)gx_http_stream_count(d->http) >= d->cfg.max_log_followers)
        return gx_errf(err, 503, "", "too many log followers (limits.maxLogFollowers = %zu)", d->cfg.max_log_followers);
    int n = gx_d_pod_count(d, key);
    if (pod >= MAX_PODS || pod >= n)
        return gx_errf(err, 404, "pod", "workload %s has no pod %d (pods 0..%d)", key, pod, n - 1);
    logstream *ls = calloc(1, sizeof *ls);
    if (!ls) return gx_errf(err, 503, "", "out of memory starting the log stream of %s; retry shortly", key);
    ls->d = d;
    if (gx_wlkey_parse(&ls->key, key, err)) { free(ls); return -1; }
    ls->pod = pod;
    ls->follow = follow;
    resp->status = 200;
    resp->stream = (gx_stream){.read = log_read, .free = log_free, .ud = ls};
    resp->ctype = "text/plain; charset=utf-8";
    return 0;
}
