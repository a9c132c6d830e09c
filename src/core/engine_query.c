/* engine_query: typed questions about workloads and devices, for callers that need a
 * fact (is it admitted? which GPUs has pod 2?) and not a JSON document to dig it from.
 * Owns: gx_engine_phase_name/parse (the one spelling of a phase, which the views use
 * too), gx_engine_wl_phase/info/admitted_count/devices, gx_engine_gpus, counts.
 * Must not: change engine state or allocate: answers point into the engine. */
#include <string.h>
#include "core/engine_int.h"

static const char *const PHASE[GX_PHASE_N] = {"Pending", "Admitted", "Finished", "Deactivated"};

const char *gx_engine_phase_name(gx_wl_phase p)
{
    return p >= 0 && p < GX_PHASE_N ? PHASE[p] : NULL;
}

gx_wl_phase gx_engine_phase_parse(const char *s)
{
    for (int p = 0; s && p < GX_PHASE_N; p++)
        if (!strcmp(s, PHASE[p])) return (gx_wl_phase)p;
    return GX_PHASE_ABSENT;
}

/* A live workload by key: removed ones keep their slot (free list) but not their key. */
static const gx_wl *live(const gx_engine *e, const char *key)
{
    const gx_wl *w = key ? gx_engine_wl_get(e, key) : NULL;
    return w && w->live ? w : NULL;
}

gx_wl_phase gx_engine_wl_phase(const gx_engine *e, const char *key)
{
    const gx_wl *w = live(e, key);
    return w ? (gx_wl_phase)gx_engine_wl_pub(w) : GX_PHASE_ABSENT;
}

int gx_engine_wl_info(const gx_engine *e, const char *key, gx_wl_info *out)
{
    memset(out, 0, sizeof *out);
    out->phase = GX_PHASE_ABSENT;
    const gx_wl *w = live(e, key);
    if (!w) return -1;
    int ended = w->state == GX_WL_FINISHED || w->state == GX_WL_DEACTIVATED;
    out->phase = (gx_wl_phase)gx_engine_wl_pub(w);
    out->succeeded = w->state == GX_WL_FINISHED && w->succeeded;
    out->cluster_queue = w->cq >= 0 && w->cq < e->n_cq ? e->cqs[w->cq].name : NULL;
    out->created_ms = w->created;
    /* the view's rule for admittedAt: admitted now, or ended after an admission */
    out->admitted_ms = (w->state == GX_WL_ADMITTED && !w->chk_wait) || (ended && w->cond[GX_C_ADMITTED].set) ? w->admitted_at : -1;
    out->finished_ms = ended ? w->finished_at : -1;
    out->max_exec_s = w->s.max_exec_s > 0 ? w->s.max_exec_s : 0;
    out->acc_ms = w->acc_ms;
    out->n_podsets = w->s.nps;
    out->admitted_pods = w->state == GX_WL_ADMITTED && !w->chk_wait && w->adm ? (int)gx_engine_wl_pods(w) : 0;
    return 0;
}

int gx_engine_wl_admitted_count(const gx_engine *e, const char *key, int podset)
{
    const gx_wl *w = live(e, key);
    if (!w || w->state != GX_WL_ADMITTED || !w->adm || podset < 0 || podset >= w->s.nps) return -1;
    return (int)w->adm[podset].count;
}

int gx_engine_wl_devices(const gx_engine *e, const char *key, int pod, gx_engine_dev *out, int max)
{
    const gx_wl *w = live(e, key);
    if (!w || w->state != GX_WL_ADMITTED || !w->adm) return -1;
    if (!w->pl_node) return pod >= 0 && pod < gx_engine_wl_pods(w) ? 0 : -1;   /* no Nodes: quota only */
    return gx_engine_place_devs(e, w, pod, out, max > 0 ? max : 0);
}

size_t gx_engine_gpus(const gx_engine *e, const char *node, gx_engine_gpu *out, size_t max)
{
    size_t c = 0;
    for (int i = 0; i < e->n_nodes; i++) {
        const gx_node *n = &e->nodes[i];
        if (node && strcmp(node, n->name)) continue;
        for (int g = 0; g < n->n_gpus; g++, c++) {
            if (c >= max) continue;
            const gx_gpu *gp = &n->gpus[g];
            out[c] = (gx_engine_gpu){ .node = n->name, .uuid = gp->uuid, .model = gp->model, .index = g,
                                      .n_users = gp->n_users, .user = gp->n_users ? e->wls[gp->user_wl[0]].key : NULL,
                                      .user_pod = gp->n_users ? gp->user_pod[0] : -1 };
        }
    }
    return c;
}

size_t gx_engine_count_phase(const gx_engine *e, gx_wl_phase p)
{
    size_t n = 0;
    for (int i = 0; i < e->n_wl; i++)
        if (e->wls[i].live && (p == GX_PHASE_ABSENT || gx_engine_wl_pub(&e->wls[i]) == (int)p)) n++;
    return n;
}
