/* sim/trace_csv: reads a cluster trace in the Alibaba openb CSV schema.
 * Owns: gx_trace_load/gx_trace_free: nodes (sn, cpu_milli, memory_mib, gpu, model) and
 * pods (cpu_milli, memory_mib, num_gpu, gpu_milli, gpu_spec, creation_time,
 * deletion_time), columns found by header name; every bad line is reported with file,
 * line and field.
 * Must not: place anything or keep the trace anywhere but in memory. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "lib/alloc.h"
#include "sim/trace_internal.h"

#define MAX_FIELDS 32

typedef struct csv {
    const char *path;
    char *buf;
    char *cur;
    int line;
    int nf;
    char *f[MAX_FIELDS];
} csv;

static int csv_open(csv *c, const char *path, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    c->path = path;
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 20, len = 0;
    c->buf = gx_xmalloc(cap + 1);
    for (;;) {
        size_t r = fread(c->buf + len, 1, cap - len, fp);
        len += r;
        if (len < cap) break;
        c->buf = gx_xrealloc(c->buf, 2 * cap + 1);
        cap *= 2;
    }
    int bad = ferror(fp);
    fclose(fp);
    if (!c->buf || bad) {
        snprintf(err, errlen, "%s: cannot read", path);
        free(c->buf);
        c->buf = NULL;
        return -1;
    }
    c->buf[len] = 0;
    c->cur = c->buf;
    return 0;
}

/* Splits the next non-empty line into c->f; returns false at the end. */
static bool csv_next(csv *c)
{
    while (*c->cur) {
        char *line = c->cur;
        char *nl = strchr(line, '\n');
        c->cur = nl ? nl + 1 : line + strlen(line);
        if (nl) *nl = 0;
        c->line++;
        size_t L = strlen(line);
        if (L && line[L - 1] == '\r') line[--L] = 0;
        if (!L) continue;
        c->nf = 0;
        char *s = line;
        for (;;) {
            if (c->nf < MAX_FIELDS) c->f[c->nf++] = s;
            char *comma = strchr(s, ',');
            if (!comma) break;
            *comma = 0;
            s = comma + 1;
        }
        return true;
    }
    return false;
}

static int col(const csv *c, const char *name)
{
    for (int i = 0; i < c->nf; i++)
        if (!strcmp(c->f[i], name)) return i;
    return -1;
}

/* Reads field `i` as a non-negative integer; -1 column means "absent, use dflt". */
static int num(const csv *c, int i, const char *name, int64_t dflt, int64_t *out, char *err,
               size_t errlen)
{
    if (i < 0) { *out = dflt; return 0; }
    if (i >= c->nf) {
        snprintf(err, errlen, "%s:%d: missing field '%s'", c->path, c->line, name);
        return -1;
    }
    const char *s = c->f[i];
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || v < 0 || v > 9e15) {
        snprintf(err, errlen, "%s:%d: field '%s' is '%s', not a non-negative number", c->path,
                 c->line, name, s);
        return -1;
    }
    *out = (int64_t)v;
    return 0;
}

static int need_cols(const csv *c, const char *const *names, int *idx, int n, char *err,
                     size_t errlen)
{
    for (int i = 0; i < n; i++) {
        idx[i] = col(c, names[i]);
        if (idx[i] < 0) {
            snprintf(err, errlen, "%s:%d: header has no column '%s'", c->path, c->line,
                     names[i]);
            return -1;
        }
    }
    return 0;
}

static int load_nodes(const char *path, gx_trace *t, char *err, size_t errlen)
{
    csv c;
    if (csv_open(&c, path, err, errlen)) return -1;
    int rc = -1, ix[4];
    size_t cap = 0;
    static const char *const names[] = { "cpu_milli", "memory_mib", "gpu", "model" };
    if (!csv_next(&c)) { snprintf(err, errlen, "%s: empty file", path); goto out; }
    if (need_cols(&c, names, ix, 4, err, errlen)) goto out;
    while (csv_next(&c)) {
        int64_t cpu, mem, gpu;
        if (num(&c, ix[0], names[0], 0, &cpu, err, errlen) ||
            num(&c, ix[1], names[1], 0, &mem, err, errlen) ||
            num(&c, ix[2], names[2], 0, &gpu, err, errlen))
            goto out;
        if (gpu > GX_PLACE_MAX_GPUS) {
            snprintf(err, errlen, "%s:%d: %lld GPUs on one node (at most %d)", path, c.line,
                     (long long)gpu, GX_PLACE_MAX_GPUS);
            goto out;
        }
        const char *model = ix[3] < c.nf ? c.f[ix[3]] : "";
        int mid = *model ? gx_place_model_id(&t->models, model) : -1;
        if (*model && mid < 0) {
            snprintf(err, errlen, "%s:%d: too many GPU models (at most %d)", path, c.line,
                     GX_PLACE_MAX_MODELS);
            goto out;
        }
        t->nodes = gx_xgrow(t->nodes, &cap, (size_t)t->nnodes + 1, sizeof *t->nodes);
        gx_place_node_init(&t->nodes[t->nnodes++], cpu, mem, mid, (int)gpu, 0);
        t->gpus += gpu;
    }
    if (t->nnodes == 0) { snprintf(err, errlen, "%s: no nodes", path); goto out; }
    t->gpu_milli = t->gpus * GX_PLACE_MILLI;
    rc = 0;
out:
    free(c.buf);
    return rc;
}

static int pod_from_fields(csv *c, const int *ix, gx_trace *t, gx_trace_pod *p, char *err,
                           size_t errlen)
{
    int64_t cpu, mem, ng, milli;
    if (num(c, ix[0], "cpu_milli", 0, &cpu, err, errlen) ||
        num(c, ix[1], "memory_mib", 0, &mem, err, errlen) ||
        num(c, ix[2], "num_gpu", 0, &ng, err, errlen) ||
        num(c, ix[3], "gpu_milli", 0, &milli, err, errlen) ||
        num(c, ix[5], "creation_time", 0, &p->created, err, errlen) ||
        num(c, ix[6], "deletion_time", 0, &p->deleted, err, errlen))
        return -1;
    if (ng > GX_PLACE_MAX_GPUS || milli > GX_PLACE_MILLI || (ng > 1 && milli && milli < 1000)) {
        snprintf(err, errlen,
                 "%s:%d: num_gpu %lld with gpu_milli %lld (a share below 1000 needs "
                 "num_gpu 1; at most %d GPUs)", c->path, c->line, (long long)ng,
                 (long long)milli, GX_PLACE_MAX_GPUS);
        return -1;
    }
    memset(&p->req, 0, sizeof p->req);
    p->req.cpu_milli = cpu;
    p->req.mem_mib = mem;
    p->req.num_gpu = (int)ng;
    p->req.gpu_milli = ng > 0 ? (milli > 0 ? (int)milli : GX_PLACE_MILLI) : 0;
    const char *spec = ix[4] >= 0 && ix[4] < c->nf ? c->f[ix[4]] : "";
    if (gx_place_models_mask(&t->models, spec, &p->req.models)) {
        snprintf(err, errlen, "%s:%d: gpu_spec '%s' names too many models", c->path, c->line,
                 spec);
        return -1;
    }
    if (p->deleted < p->created) p->deleted = p->created;
    return 0;
}

static int load_pods(const char *path, gx_trace *t, char *err, size_t errlen)
{
    csv c;
    if (csv_open(&c, path, err, errlen)) return -1;
    int rc = -1, ix[7];
    size_t cap = 0;
    static const char *const names[] = { "cpu_milli", "memory_mib", "num_gpu", "gpu_milli" };
    if (!csv_next(&c)) { snprintf(err, errlen, "%s: empty file", path); goto out; }
    if (need_cols(&c, names, ix, 4, err, errlen)) goto out;
    ix[4] = col(&c, "gpu_spec");
    ix[5] = col(&c, "creation_time");
    ix[6] = col(&c, "deletion_time");
    t->has_times = ix[5] >= 0 && ix[6] >= 0;
    while (csv_next(&c)) {
        t->pods = gx_xgrow(t->pods, &cap, t->npods + 1, sizeof *t->pods);
        if (pod_from_fields(&c, ix, t, &t->pods[t->npods], err, errlen)) goto out;
        t->npods++;
    }
    if (t->npods == 0) { snprintf(err, errlen, "%s: no pods", path); goto out; }
    rc = 0;
out:
    free(c.buf);
    return rc;
}

int gx_trace_load(const char *nodes_csv, const char *pods_csv, gx_trace *t, char *err,
                  size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (load_nodes(nodes_csv, t, err, errlen) || load_pods(pods_csv, t, err, errlen)) {
        gx_trace_free(t);
        return -1;
    }
    return 0;
}

void gx_trace_free(gx_trace *t)
{
    free(t->nodes);
    free(t->pods);
    t->nodes = NULL;
    t->pods = NULL;
    t->nnodes = 0;
    t->npods = 0;
}
