/* core/share: which device, MIG slice, replica or fraction a pod takes (see share.h).
 * Owns: fitting requests on one node, choosing among nodes (fractional ones through
 * core/place's policies), commit/release of allocations with their owners, usage.
 * Must not: do I/O, read a clock or the environment, print. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/share.h"
#include "lib/alloc.h"

static const char *const mode_names[] = {"exclusive", "timeSlicing", "mps", "mig", "fractional"};

const char *gx_share_mode_name(gx_share_mode m)
{
    return (unsigned)m < 5 ? mode_names[m] : "unknown";
}

int gx_share_mode_parse(const char *s, gx_share_mode *m)
{
    for (int i = 0; s && i < 5; i++)
        if (!strcmp(s, mode_names[i])) { *m = (gx_share_mode)i; return 0; }
    return -1;
}

static int bits_count(const gx_share_bits *b)
{
    int c = 0;
    for (size_t i = 0; i < sizeof b->w / sizeof b->w[0]; i++) c += __builtin_popcountll(b->w[i]);
    return c;
}
static int bits_test(const gx_share_bits *b, int r) { return (int)(b->w[r / 64] >> (r % 64)) & 1; }
static void bits_put(gx_share_bits *b, int r, int on)
{
    uint64_t m = UINT64_C(1) << (r % 64);
    if (on) b->w[r / 64] |= m;
    else b->w[r / 64] &= ~m;
}

static int replicated(const gx_share_gpu *g)
{
    return g->mode == GX_SHARE_TIMESLICING || g->mode == GX_SHARE_MPS;
}

void gx_share_node_reset(gx_share_node *n)
{
    if (n->n_gpus > GX_SHARE_MAX_GPUS) n->n_gpus = GX_SHARE_MAX_GPUS;
    n->n_allocs = 0;
    for (int i = 0; i < n->n_gpus; i++) {
        gx_share_gpu *g = &n->gpu[i];
        memset(&g->used, 0, sizeof g->used);
        if (g->replicas < 1) g->replicas = 1;
        if (g->replicas > GX_SHARE_MAX_REPLICAS) g->replicas = GX_SHARE_MAX_REPLICAS;
        if (!g->resource[0]) snprintf(g->resource, sizeof g->resource, "nvidia.com/gpu");
        g->cores_free = g->mode == GX_SHARE_FRACTIONAL ? 100 : 0;
        g->mem_free = g->mode == GX_SHARE_FRACTIONAL ? g->mem_mib : 0;
        if (g->n_mig > GX_SHARE_MAX_MIG) g->n_mig = GX_SHARE_MAX_MIG;
        for (int m = 0; m < g->n_mig; m++) {
            gx_share_mig *d = &g->mig[m];
            memset(&d->used, 0, sizeof d->used);
            if (d->replicas < 1) d->replicas = 1;
            if (d->replicas > GX_SHARE_MAX_REPLICAS) d->replicas = GX_SHARE_MAX_REPLICAS;
            if (!d->resource[0]) snprintf(d->resource, sizeof d->resource, "nvidia.com/mig-%s", d->profile);
        }
    }
}

int gx_share_node_shared(const gx_share_node *n)
{
    for (int i = 0; i < n->n_gpus; i++)
        if (n->gpu[i].mode != GX_SHARE_EXCLUSIVE) return 1;
    return 0;
}

static int is_frac_req(const gx_share_req *r) { return r->gpumem_mib > 0 || r->gpucores > 0; }

int gx_share_offered(const gx_share_node *n, const char *res, int *used)
{
    int total = 0, u = 0;
    for (int i = 0; i < n->n_gpus; i++) {
        const gx_share_gpu *g = &n->gpu[i];
        if (g->mode == GX_SHARE_MIG) {
            for (int m = 0; m < g->n_mig; m++)
                if (!strcmp(g->mig[m].resource, res)) {
                    total += g->mig[m].replicas;
                    u += bits_count(&g->mig[m].used);
                }
        } else if (g->mode == GX_SHARE_FRACTIONAL) {
            if (!strcmp(res, "nvidia.com/gpu")) { total++; u += g->cores_free < 100 || g->mem_free < g->mem_mib; }
        } else if (!strcmp(g->resource, res)) {
            total += g->replicas;
            u += bits_count(&g->used);
        }
    }
    if (used) *used = u;
    return total;
}

/* ---- plain requests: whole devices and replicas -------------------------------------- */

typedef struct cand {
    int gpu, mig, replica;
    int rank;                    /* 0 used shared, 1 fresh shared / MIG, 2 exclusive, 3 whole fractional */
    int left;                    /* replicas left on the device after taking one */
} cand;

static int first_free(const gx_share_bits *used, int replicas)
{
    for (int r = 0; r < replicas; r++)
        if (!bits_test(used, r)) return r;
    return -1;
}

static int cand_cmp(const void *a, const void *b)
{
    const cand *x = a, *y = b;
    if (x->rank != y->rank) return x->rank - y->rank;
    if (x->left != y->left) return x->left - y->left;
    if (x->gpu != y->gpu) return x->gpu - y->gpu;
    return x->mig - y->mig;
}

static void dev_of(const gx_share_gpu *g, const cand *c, gx_share_dev *d)
{
    d->gpu = c->gpu;
    d->mig = c->mig;
    d->replica = c->replica;
    if (c->mig >= 0) {
        const gx_share_mig *m = &g->mig[c->mig];
        d->mem_mib = m->mem_mib / m->replicas;
        d->cores = m->size * 100 / 8 / m->replicas;
        if (d->cores < 1) d->cores = 1;
    } else if (c->replica >= 0) {
        d->mem_mib = g->mem_mib / g->replicas;
        d->cores = 100 / g->replicas;
    } else {
        d->mem_mib = g->mem_mib;
        d->cores = 100;
    }
}

/* Candidate devices for a plain request, one per physical device. *blocked counts
 * devices skipped only because of failRequestsGreaterThanOne. */
static int plain_cands(const gx_share_node *n, const gx_share_req *req, cand *out, int *blocked)
{
    int nc = 0;
    *blocked = 0;
    for (int i = 0; i < n->n_gpus; i++) {
        const gx_share_gpu *g = &n->gpu[i];
        if (g->mode == GX_SHARE_MIG) {
            for (int m = 0; m < g->n_mig; m++) {
                const gx_share_mig *d = &g->mig[m];
                if (strcmp(d->resource, req->resource)) continue;
                int r = first_free(&d->used, d->replicas);
                if (r < 0) continue;
                if (d->replicas > 1 && g->fail_gt1 && req->count > 1) { (*blocked)++; continue; }
                int taken = bits_count(&d->used), left = d->replicas - taken - 1;
                out[nc++] = (cand){i, m, d->replicas > 1 ? r : -1, taken ? 0 : 1, left};
            }
        } else if (g->mode == GX_SHARE_FRACTIONAL) {
            if (strcmp(req->resource, "nvidia.com/gpu")) continue;
            if (g->cores_free == 100 && g->mem_free == g->mem_mib) out[nc++] = (cand){i, -1, -1, 3, 0};
        } else if (!strcmp(g->resource, req->resource)) {
            if (g->mode == GX_SHARE_EXCLUSIVE || g->replicas == 1) {
                if (!bits_count(&g->used)) out[nc++] = (cand){i, -1, replicated(g) ? 0 : -1, 2, 0};
                continue;
            }
            int r = first_free(&g->used, g->replicas);
            if (r < 0) continue;
            if (g->fail_gt1 && req->count > 1) { (*blocked)++; continue; }
            int taken = bits_count(&g->used);
            out[nc++] = (cand){i, -1, r, taken ? 0 : 1, g->replicas - taken - 1};
        }
    }
    return nc;
}

static int plain_fit(const gx_share_node *n, const gx_share_req *req, gx_share_pick *out,
                     int *score, char *why, size_t why_n)
{
    cand c[GX_SHARE_MAX_GPUS * (GX_SHARE_MAX_MIG + 1)];
    int blocked, nc = plain_cands(n, req, c, &blocked);
    if (nc >= req->count) {
        qsort(c, (size_t)nc, sizeof c[0], cand_cmp);
        out->n = req->count;
        int s = 0;
        for (int k = 0; k < req->count; k++) {
            dev_of(&n->gpu[c[k].gpu], &c[k], &out->dev[k]);
            s += c[k].rank * 1000 + c[k].left;
        }
        if (score) *score = s;
        return 1;
    }
    int used, total = gx_share_offered(n, req->resource, &used);
    if (!total)
        snprintf(why, why_n, "no GPU offers %s", req->resource);
    else if (blocked)
        snprintf(why, why_n, "%s is shared with failRequestsGreaterThanOne: a pod may ask for 1 (asked %d)",
                 req->resource, req->count);
    else
        snprintf(why, why_n, "%d %s free on distinct devices, the pod needs %d (%d of %d in use)", nc,
                 req->resource, req->count, used, total);
    return 0;
}

/* ---- fractional requests ----------------------------------------------------------------- */

/* HAMi names: memory alone takes the same share of cores, cores alone the same share of
 * memory, so neither dimension is handed out for free. */
static void frac_need(const gx_share_gpu *g, const gx_share_req *r, int64_t *mem, int *cores)
{
    *mem = r->gpumem_mib;
    *cores = r->gpucores;
    if (*cores <= 0) {
        *cores = g->mem_mib > 0 ? (int)((*mem * 100 + g->mem_mib - 1) / g->mem_mib) : 100;
        if (*cores < 1) *cores = 1;
        if (*cores > 100) *cores = 100;
    }
    if (*mem <= 0) *mem = g->mem_mib * *cores / 100;
}

static int frac_ok(const gx_share_gpu *g, const gx_share_req *r)
{
    int64_t mem;
    int cores;
    frac_need(g, r, &mem, &cores);
    return g->mode == GX_SHARE_FRACTIONAL && g->cores_free >= cores && g->mem_free >= mem;
}

static int frac_fit(const gx_share_node *n, const gx_share_req *req, gx_share_pick *out,
                    int64_t *left, char *why, size_t why_n)
{
    int k = req->count > 0 ? req->count : 1, taken[GX_SHARE_MAX_GPUS] = {0};
    int64_t total_left = 0;
    if (strcmp(req->resource, "nvidia.com/gpu") && req->resource[0]) {
        snprintf(why, why_n, "nvidia.com/gpumem and nvidia.com/gpucores go with nvidia.com/gpu, not %s", req->resource);
        return 0;
    }
    out->n = 0;
    for (int got = 0; got < k; got++) {
        int best = -1;
        int64_t best_left = 0;
        for (int i = 0; i < n->n_gpus; i++) {
            const gx_share_gpu *g = &n->gpu[i];
            if (taken[i] || !frac_ok(g, req)) continue;
            int64_t mem;
            int cores;
            frac_need(g, req, &mem, &cores);
            /* best fit: least room left, cores first (they are the scarcer unit) */
            int64_t l = (int64_t)(g->cores_free - cores) * 1000000 + (g->mem_free - mem);
            if (best < 0 || l < best_left) { best = i; best_left = l; }
        }
        if (best < 0) {
            int nf = 0, cmax = 0;
            int64_t mmax = 0;
            for (int i = 0; i < n->n_gpus; i++) {
                if (n->gpu[i].mode != GX_SHARE_FRACTIONAL) continue;
                nf++;
                if (n->gpu[i].cores_free > cmax) cmax = n->gpu[i].cores_free;
                if (n->gpu[i].mem_free > mmax) mmax = n->gpu[i].mem_free;
            }
            if (!nf) snprintf(why, why_n, "no GPU is in fractional mode (nvidia.com/gpumem, nvidia.com/gpucores)");
            else
                snprintf(why, why_n, "no fractional GPU has %lld MiB and %d%% cores free for vGPU %d of %d "
                         "(most free: %lld MiB, %d%%)", (long long)req->gpumem_mib, req->gpucores, got + 1, k,
                         (long long)mmax, cmax);
            return 0;
        }
        taken[best] = 1;
        gx_share_dev *d = &out->dev[out->n++];
        d->gpu = best;
        d->mig = -1;
        d->replica = -1;
        frac_need(&n->gpu[best], req, &d->mem_mib, &d->cores);
        total_left += best_left;
    }
    if (left) *left = total_left;
    return 1;
}

int gx_share_fit(const gx_share_node *n, const gx_share_req *req, gx_share_pick *out,
                 char *why, size_t why_n)
{
    memset(out, 0, sizeof *out);
    if (req->count > GX_SHARE_MAX_GPUS) {
        snprintf(why, why_n, "a pod may hold at most %d devices", GX_SHARE_MAX_GPUS);
        return 0;
    }
    if (is_frac_req(req)) return frac_fit(n, req, out, NULL, why, why_n);
    if (req->count <= 0) return 1;
    return plain_fit(n, req, out, NULL, why, why_n);
}

/* One vGPU through the placement engine: each candidate node becomes a gx_place_node
 * whose GPUs are its fractional GPUs (milli = cores x 10, memory in MiB). */
static int frac_choose_place(gx_place_ctx *cx, gx_share_node *const *nodes, int count,
                             const gx_share_req *req, gx_share_pick *out)
{
    gx_place_node *pn = gx_xcalloc((size_t)count, sizeof *pn);
    int (*map)[GX_PLACE_MAX_GPUS] = gx_xcalloc((size_t)count, sizeof *map);
    int chosen = -1;
    const gx_share_gpu *ref = NULL;
    for (int i = 0; i < count; i++) {
        gx_place_node_init(&pn[i], 0, 0, -1, 0, 0);
        if (!nodes[i]) continue;
        for (int g = 0; g < nodes[i]->n_gpus; g++) {
            const gx_share_gpu *sg = &nodes[i]->gpu[g];
            if (sg->mode != GX_SHARE_FRACTIONAL) continue;
            if (!ref) ref = sg;
            int k = pn[i].num_gpus++;
            map[i][k] = g;
            pn[i].gpu_free[k] = sg->cores_free * 10;
            pn[i].gpu_mem_free[k] = sg->mem_free;
            pn[i].pods += sg->cores_free < 100;
        }
    }
    if (!ref) goto out;
    int64_t mem;
    int cores;
    frac_need(ref, req, &mem, &cores);
    gx_place_pod pod = {0, 0, 1, cores * 10, mem, 0};
    gx_place_assign a;
    int i = gx_place_choose(cx, pn, count, NULL, &pod, &a);
    if (i < 0 || a.num != 1) goto out;
    const gx_share_gpu *g = &nodes[i]->gpu[map[i][a.gpu[0]]];
    if (!frac_ok(g, req)) goto out;   /* GPUs of another size than ref: let the caller fall back */
    out->n = 1;
    out->dev[0] = (gx_share_dev){map[i][a.gpu[0]], -1, -1, 0, 0};
    frac_need(g, req, &out->dev[0].mem_mib, &out->dev[0].cores);
    chosen = i;
out:
    free(pn);
    free(map);
    return chosen;
}

int gx_share_place_pod(gx_share_node *const *nodes, int count, const gx_share_req *req,
                       gx_place_pod *out)
{
    if (!is_frac_req(req) || req->count > 1) return -1;
    for (int i = 0; i < count; i++)
        for (int g = 0; nodes[i] && g < nodes[i]->n_gpus; g++)
            if (nodes[i]->gpu[g].mode == GX_SHARE_FRACTIONAL) {
                int64_t mem;
                int cores;
                frac_need(&nodes[i]->gpu[g], req, &mem, &cores);
                *out = (gx_place_pod){0, 0, 1, cores * 10, mem, 0};
                return 0;
            }
    return -1;
}

int gx_share_choose(gx_place_ctx *cx, gx_share_node *const *nodes, int count,
                    const gx_share_req *req, gx_share_pick *out, char *why, size_t why_n)
{
    memset(out, 0, sizeof *out);
    if (why_n) why[0] = 0;
    int frac = is_frac_req(req);
    if (frac && cx && (req->count <= 1)) {
        int i = frac_choose_place(cx, nodes, count, req, out);
        if (i >= 0) return i;
    }
    int best = -1;
    int64_t best_score = 0;
    gx_share_pick p;
    char w[256];
    for (int i = 0; i < count; i++) {
        if (!nodes[i]) continue;
        int64_t s = 0;
        int ok;
        memset(&p, 0, sizeof p);
        if (frac) ok = frac_fit(nodes[i], req, &p, &s, w, sizeof w);
        else {
            int si = 0;
            ok = req->count <= 0 || plain_fit(nodes[i], req, &p, &si, w, sizeof w);
            s = si;
        }
        if (!ok) {
            if (why_n && !why[0]) snprintf(why, why_n, "%s", w);
            continue;
        }
        if (best < 0 || s < best_score) { best = i; best_score = s; *out = p; }
    }
    if (best < 0 && why_n && !why[0]) snprintf(why, why_n, "no node matches the pod");
    return best;
}

/* ---- commit and release --------------------------------------------------------------- */

static gx_share_bits *replica_bits(gx_share_node *n, const gx_share_dev *d, int *replicas)
{
    gx_share_gpu *g = &n->gpu[d->gpu];
    if (d->mig >= 0) { *replicas = g->mig[d->mig].replicas; return &g->mig[d->mig].used; }
    *replicas = g->replicas;
    return &g->used;
}

static int dev_valid(const gx_share_node *n, const gx_share_dev *d)
{
    if (d->gpu < 0 || d->gpu >= n->n_gpus) return 0;
    const gx_share_gpu *g = &n->gpu[d->gpu];
    if (d->mig >= 0) return g->mode == GX_SHARE_MIG && d->mig < g->n_mig && d->replica < g->mig[d->mig].replicas;
    if (g->mode == GX_SHARE_MIG) return 0;
    return d->replica < g->replicas;
}

/* Is d free right now (ignoring the other devices of the same pick)? */
static int dev_free(gx_share_node *n, const gx_share_dev *d)
{
    if (!dev_valid(n, d)) return 0;
    gx_share_gpu *g = &n->gpu[d->gpu];
    if (g->mode == GX_SHARE_FRACTIONAL && d->mig < 0)
        return d->cores > 0 && d->mem_mib >= 0 && g->cores_free >= d->cores && g->mem_free >= d->mem_mib;
    int reps;
    return !bits_test(replica_bits(n, d, &reps), d->replica >= 0 ? d->replica : 0);
}

static void dev_apply(gx_share_node *n, const gx_share_dev *d, int sign)
{
    gx_share_gpu *g = &n->gpu[d->gpu];
    if (g->mode == GX_SHARE_FRACTIONAL && d->mig < 0) {
        g->cores_free -= sign * d->cores;
        g->mem_free -= sign * d->mem_mib;
        return;
    }
    int reps;
    bits_put(replica_bits(n, d, &reps), d->replica >= 0 ? d->replica : 0, sign > 0);
}

int gx_share_commit(gx_share_node *n, int64_t owner, const gx_share_pick *p)
{
    if (p->n < 0 || p->n > GX_SHARE_MAX_GPUS || n->n_allocs + p->n > GX_SHARE_MAX_ALLOCS) return -1;
    for (int k = 0; k < p->n; k++) {
        if (!dev_free(n, &p->dev[k])) return -1;
        for (int j = 0; j < k; j++)   /* distinct devices within one pod */
            if (p->dev[j].gpu == p->dev[k].gpu && p->dev[j].mig == p->dev[k].mig) return -1;
    }
    for (int k = 0; k < p->n; k++) {
        dev_apply(n, &p->dev[k], 1);
        n->alloc[n->n_allocs++] = (gx_share_alloc){owner, p->dev[k]};
    }
    return 0;
}

int gx_share_release(gx_share_node *n, int64_t owner)
{
    int w = 0, freed = 0;
    for (int i = 0; i < n->n_allocs; i++) {
        if (n->alloc[i].owner == owner) {
            dev_apply(n, &n->alloc[i].dev, -1);
            freed++;
            continue;
        }
        n->alloc[w++] = n->alloc[i];
    }
    n->n_allocs = w;
    return freed;
}

int gx_share_owned(const gx_share_node *n, int64_t owner, gx_share_dev *out, int cap)
{
    int c = 0;
    for (int i = 0; i < n->n_allocs; i++)
        if (n->alloc[i].owner == owner) {
            if (c < cap) out[c] = n->alloc[i].dev;
            c++;
        }
    return c;
}

void gx_share_gpu_usage(const gx_share_node *n, int gi, gx_share_usage *u)
{
    memset(u, 0, sizeof *u);
    if (gi < 0 || gi >= n->n_gpus) return;
    const gx_share_gpu *g = &n->gpu[gi];
    switch (g->mode) {
    case GX_SHARE_FRACTIONAL:
        for (int i = 0; i < n->n_allocs; i++) u->slots_used += n->alloc[i].dev.gpu == gi;
        u->mem_alloc_mib = g->mem_mib - g->mem_free;
        u->cores_alloc = 100 - g->cores_free;
        break;
    case GX_SHARE_MIG:
        for (int m = 0; m < g->n_mig; m++) {
            const gx_share_mig *d = &g->mig[m];
            int used = bits_count(&d->used);
            u->slots_used += used;
            u->slots_total += d->replicas;
            u->mem_alloc_mib += d->mem_mib * used / d->replicas;
            u->cores_alloc += d->size * 100 / 8 * used / d->replicas;
        }
        break;
    default:
        u->slots_used = bits_count(&g->used);
        u->slots_total = g->replicas;
        u->mem_alloc_mib = g->mem_mib * u->slots_used / g->replicas;
        u->cores_alloc = 100 * u->slots_used / g->replicas;
    }
}
