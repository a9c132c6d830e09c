/* num: exact number printing (see num.h). Pure: libc's snprintf and strtod only. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "lib/num.h"

char *gx_num_fmt(double v, char *buf, size_t n)
{
    if (isnan(v)) { snprintf(buf, n, "NaN"); return buf; }
    if (isinf(v)) { snprintf(buf, n, v > 0 ? "+Inf" : "-Inf"); return buf; }
    if (v == 0) { snprintf(buf, n, "0"); return buf; }          /* -0 too: no "-0" */
    /* Below 1e17 an integral double prints in at most 17 digits, each of them exact;
     * above, %.0f would print up to 309 digits of which only 17 carry meaning. */
    if (fabs(v) < 1e17 && v == trunc(v)) { snprintf(buf, n, "%.0f", v); return buf; }
    /* 17 significant digits always read back; try fewer first so 0.1 is "0.1". */
    for (int p = 1; p < 17; p++) {
        snprintf(buf, n, "%.*g", p, v);
        if (strtod(buf, NULL) == v) return buf;
    }
    snprintf(buf, n, "%.17g", v);
    return buf;
}
