/* sim/trace_expected: reads the FGD authors' published per-seed curves
 * (analysis_allo_discrete.csv: workload,sc_policy,tune,seed,total_gpus,0..130) so a
 * replay can be compared with them column by column.
 * Owns: gx_trace_expected and the mapping of our policy names to theirs.
 * Must not: be needed for a replay; a missing file only skips the comparison. */
#include <stdlib.h>
#include <string.h>

#include "sim/trace_internal.h"

static const char *their_name(const char *ours)
{
    static const char *const map[][2] = {
        { "random", "01-Random" },           { "dot-product", "02-DotProd" },
        { "gpu-clustering", "03-GpuClustering" }, { "gpu-packing", "04-GpuPacking" },
        { "best-fit", "05-BestFit" },        { "fgd", "06-FGD" },
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(map[i][0], ours)) return map[i][1];
    return NULL;
}

int gx_trace_expected(const char *csv, const char *policy, double *mean, int ncols,
                      double *per_seed_at_100, int *nseeds)
{
    const char *theirs = their_name(policy);
    *nseeds = 0;
    if (!theirs) return -1;
    FILE *f = fopen(csv, "r");
    if (!f) return -1;
    char line[8192];
    for (int k = 0; k < ncols; k++) mean[k] = 0;
    bool header = true;
    while (fgets(line, sizeof line, f)) {
        if (header) { header = false; continue; }
        char *save = NULL, *tok = strtok_r(line, ",\n", &save);
        int field = 0;
        bool match = false;
        for (; tok; tok = strtok_r(NULL, ",\n", &save), field++) {
            if (field == 1) match = !strcmp(tok, theirs);
            if (!match && field >= 1) break;
            int k = field - 5;
            if (k >= 0 && k < ncols) {
                double v = atof(tok);
                mean[k] += v;
                if (k == 100 && *nseeds < 64) per_seed_at_100[*nseeds] = v;
            }
        }
        if (match) (*nseeds)++;
    }
    fclose(f);
    if (*nseeds == 0) return -1;
    for (int k = 0; k < ncols; k++) mean[k] /= *nseeds;
    return 0;
}
