/* core/place_lp: what a GPU's free share is worth to the workload's mix of sharing pods.
 * Owns: gx_place_lp_values (the cutting-stock LP's dual prices and the best priced fill
 * of every free share).
 * Must not: do I/O, read a clock, or allocate outside the call (it runs in
 * gx_place_ctx_new).
 *
 * Packing sharing pods onto GPUs is bin packing. Its LP relaxation (Gilmore and Gomory's
 * cutting-stock LP: how many GPUs of each packing pattern, so that every size is covered
 * in proportion to how often it occurs) has a dual that prices each size: y[i] is the
 * fraction of a GPU a pod of size i costs when the whole mix is packed as well as
 * possible, and no pattern that fits one GPU is worth more than 1. On Alibaba's trace a
 * 0.47 costs 1/2 (two share a GPU), a 0.32 costs 1/3, a 0.81 a whole GPU, a 0.16
 * nothing (there are enough 0.81s whose leftovers take it). value[r] is then the most a
 * GPU with r milli free can still earn at those prices (an unbounded knapsack), and
 * value[r] - value[r - s] - price(s) >= 0 is what putting a pod of size s there gives
 * up against the best packing: zero exactly when the placement is part of an optimal
 * pattern. */
#include <stdlib.h>
#include <string.h>

#include "core/place.h"
#include "lib/alloc.h"

#define MAX_ITEMS 64     /* distinct share sizes priced; rarer ones price at 0 */
#define MAX_ROWS 256     /* patterns the cutting-plane loop may add */
#define EPS 1e-9

/* max c.x subject to A x <= 1, x >= 0, on a dense tableau of m rows and n + m + 1
 * columns (x, slacks, right-hand side) plus the objective row. Dantzig's rule (the most
 * negative reduced cost) for few pivots; after 2(n + m) degenerate pivots in a row,
 * Bland's rule, which cannot cycle: the cutting-stock dual is highly degenerate.
 * Writes the optimal x (or the last feasible one if the pivot budget runs out). */
static void simplex(double *t, int *basis, int m, int n, const double *c, double *x)
{
    int w = n + m + 1;
    double *obj = t + (size_t)m * w;
    for (int j = 0; j < w; j++) obj[j] = j < n ? -c[j] : 0;
    for (int i = 0; i < m; i++) basis[i] = n + i;
    int stalled = 0;
    for (int pivots = 0; pivots < 20000; pivots++) {
        int e = -1;
        for (int j = 0; j < n + m; j++) {
            if (obj[j] >= -EPS) continue;
            if (stalled > 2 * (n + m)) { e = j; break; }         /* Bland: cannot cycle */
            if (e < 0 || obj[j] < obj[e]) e = j;                 /* Dantzig: fewer pivots */
        }
        if (e < 0) break;
        int r = -1;
        double best = 0;
        for (int i = 0; i < m; i++) {
            double a = t[(size_t)i * w + e];
            if (a <= EPS) continue;
            double ratio = t[(size_t)i * w + w - 1] / a;
            if (r < 0 || ratio < best - EPS || (ratio <= best + EPS && basis[i] < basis[r])) {
                r = i;
                best = ratio;
            }
        }
        if (r < 0) break;                      /* unbounded: cannot happen, A >= 0 rows */
        stalled = best > EPS ? 0 : stalled + 1;
        double *pr = t + (size_t)r * w;
        double p = pr[e];
        for (int j = 0; j < w; j++) pr[j] /= p;
        for (int i = 0; i <= m; i++) {
            if (i == r) continue;
            double *ri = t + (size_t)i * w;
            double f = ri[e];
            if (f == 0) continue;
            for (int j = 0; j < w; j++) ri[j] -= f * pr[j];
        }
        basis[r] = e;
    }
    for (int j = 0; j < n; j++) x[j] = 0;
    for (int i = 0; i < m; i++)
        if (basis[i] < n) x[basis[i]] = t[(size_t)i * w + w - 1];
}

/* best[r]: the most that r milli can hold at prices y (any number of each size);
 * take[r]: the size index that achieves it, -1 when best[r] = best[r - 1]. */
static void knapsack(const int *size, const double *y, int n, double *best, int *take)
{
    best[0] = 0;
    take[0] = -1;
    for (int r = 1; r <= GX_PLACE_MILLI; r++) {
        best[r] = best[r - 1];
        take[r] = -1;
        for (int i = 0; i < n; i++)
            if (size[i] <= r && best[r - size[i]] + y[i] > best[r] + EPS) {
                best[r] = best[r - size[i]] + y[i];
                take[r] = i;
            }
    }
}

/* Appends, as row `rows`, size i plus the knapsack's best fill of what i leaves; 0 when
 * that pattern is already a row (the solve would not move) or there is no room. */
static int add_pattern(int *pat, int rows, int n, const int *size, const int *take, int i)
{
    if (rows >= MAX_ROWS) return 0;
    int *row = pat + (size_t)rows * MAX_ITEMS;
    memset(row, 0, MAX_ITEMS * sizeof *row);
    row[i] = 1;
    for (int r = GX_PLACE_MILLI - size[i]; r > 0;) {
        if (take[r] < 0) { r--; continue; }
        row[take[r]]++;
        r -= size[take[r]];
    }
    for (int k = 0; k < rows; k++)
        if (!memcmp(pat + (size_t)k * MAX_ITEMS, row, (size_t)n * sizeof *row)) return 0;
    return 1;
}

int gx_place_lp_values(const gx_place_type *types, int ntypes, double *value,
                       double *gpus_per_pod)
{
    int size[MAX_ITEMS], n = 0;
    double d[MAX_ITEMS], y[MAX_ITEMS];
    for (int k = 0; k < ntypes; k++) {
        const gx_place_type *t = &types[k];
        if (t->num_gpu != 1 || t->gpu_milli <= 0 || t->gpu_milli >= GX_PLACE_MILLI) continue;
        int i = 0;
        while (i < n && size[i] != t->gpu_milli) i++;
        if (i == n) {
            if (n == MAX_ITEMS) continue;
            size[n] = t->gpu_milli;
            d[n++] = 0;
        }
        d[i] += t->p;
    }
    int rows = n, w = n + MAX_ROWS + 1;
    int *pat = gx_xcalloc((size_t)MAX_ROWS * MAX_ITEMS, sizeof *pat);
    double *t = gx_xmalloc((size_t)(MAX_ROWS + 1) * (size_t)w * sizeof *t);
    double *best = gx_xmalloc((GX_PLACE_MILLI + 1) * sizeof *best);
    int *take = gx_xmalloc((GX_PLACE_MILLI + 1) * sizeof *take);
    int *basis = gx_xmalloc(MAX_ROWS * sizeof *basis);
    for (int i = 0; i < n; i++) pat[i * MAX_ITEMS + i] = GX_PLACE_MILLI / size[i];
    for (int i = 0; i < n; i++) y[i] = 0;
    /* Cutting planes: solve over the patterns known so far, then ask the knapsack for a
     * pattern the prices overvalue; none left means the prices are optimal. */
    while (n > 0) {
        int cw = n + rows + 1;
        memset(t, 0, (size_t)(rows + 1) * (size_t)cw * sizeof *t);
        for (int r = 0; r < rows; r++) {
            for (int i = 0; i < n; i++) t[(size_t)r * cw + i] = pat[r * MAX_ITEMS + i];
            t[(size_t)r * cw + n + r] = 1;
            t[(size_t)r * cw + cw - 1] = 1;
        }
        simplex(t, basis, rows, n, d, y);
        knapsack(size, y, n, best, take);
        /* one cut per size: the best pattern holding it, when the prices overvalue it;
         * many cuts a round keep the number of rounds (each a fresh solve) small */
        int added = 0;
        for (int i = 0; i < n && rows + added < MAX_ROWS; i++)
            if (y[i] + best[GX_PLACE_MILLI - size[i]] > 1 + 1e-7)
                added += add_pattern(pat, rows + added, n, size, take, i);
        if (added == 0) break;
        rows += added;
    }
    knapsack(size, y, n, best, take);
    /* out of pattern room before the optimum: scale the prices back to feasible */
    double scale = best[GX_PLACE_MILLI] > 1 ? 1 / best[GX_PLACE_MILLI] : 1;
    for (int r = 0; r <= GX_PLACE_MILLI; r++) value[r] = GX_PLACE_MILLI * best[r] * scale;
    if (gpus_per_pod) {                 /* the LP's optimum: GPUs a pod of the mix needs */
        double obj = 0, pods = 0;
        for (int i = 0; i < n; i++) {
            obj += d[i] * y[i] * scale;
            pods += d[i];
        }
        *gpus_per_pod = pods > 0 ? obj / pods : 0;
    }
    free(pat);
    free(t);
    free(best);
    free(take);
    free(basis);
    return 0;
}
