/* engine_util: interned names for the engine (resources, flavors, fr pairs, reasons).
 * Owns: gx_names (id <-> string, append-only), over lib/strmap's index map.
 * Must not: know about queues or workloads. Allocation goes through lib/alloc. */
#include <stdlib.h>
#include <string.h>
#include "core/engine_int.h"

int gx_engine_util_intern(gx_names *t, const char *s)
{
    int id = gx_strmap_geti(&t->map, s);
    if (id >= 0) return id;
    GX_GROW(t->s, t->n, t->cap);
    t->s[t->n] = gx_xstrdup(s);
    gx_strmap_puti(&t->map, s, t->n);
    return t->n++;
}

int gx_engine_util_lookup(const gx_names *t, const char *s)
{
    return gx_strmap_geti(&t->map, s);
}

void gx_engine_util_names_free(gx_names *t)
{
    for (int i = 0; i < t->n; i++) free(t->s[i]);
    free(t->s);
    gx_strmap_free(&t->map);
    memset(t, 0, sizeof *t);
}
