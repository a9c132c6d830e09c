/* quantity: Kubernetes resource quantities ("500m", "2", "36Gi", "1.5", "1e3", "100M")
 * as int64 milli-units, so "500m" == 500, "2" == 2000, "1Ki" == 1024000.
 * Pure; no allocation. */
#ifndef GX_QUANTITY_H
#define GX_QUANTITY_H
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "lib/err.h"

/* Parse s. Negative values, empty strings, unknown suffixes, overflow, and precision
 * below a milli-unit are errors (-1, err 422 with field). */
int gx_quantity_parse(const char *s, int64_t *milli, const char *field, gx_err *err);
/* A JSON string or integer/real quantity. */
int gx_quantity_from_json(const json_t *v, int64_t *milli, const char *field, gx_err *err);
/* Canonical text: "500m", "2", "36Gi" (binary suffix when exact and the value is large). */
const char *gx_quantity_format(int64_t milli, char *buf, size_t n);

#endif
