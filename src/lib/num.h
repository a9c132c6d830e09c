/* num: printing a number so that nothing is lost. printf's %g keeps 6 significant
 * digits (600Mi became 6.29146e+08 on /metrics); every place that prints a double for
 * a person or a scraper goes through gx_num_fmt instead.
 * Owns: the one rule: an integral value prints as an integer, any other value with the
 * fewest significant digits that read back (strtod) as the same double.
 * Must not: allocate, or depend on anything but libc. */
#ifndef GX_NUM_H
#define GX_NUM_H
#include <stddef.h>

/* Room for any value gx_num_fmt prints ("-1.2345678901234567e-308" plus the NUL). */
#define GX_NUM_MAX 32

/* v into buf (n >= GX_NUM_MAX), returns buf. Integral values below 1e17 in magnitude
 * print every digit ("629145600", never "6.29146e+08"); others the shortest %g that
 * round-trips ("0.1", "1.5", "1e+300"). Not-a-number and the infinities print as the
 * Prometheus exposition format spells them: "NaN", "+Inf", "-Inf". */
char *gx_num_fmt(double v, char *buf, size_t n);

#endif
