/* strmap: string -> pointer hash map (open addressing, FNV-1a), for lookups by
 * workload key and the like. Keys are copied; values are borrowed. */
#ifndef GX_STRMAP_H
#define GX_STRMAP_H
#include <stddef.h>

typedef struct gx_strmap {
    size_t cap, n, tomb;
    char **keys;      /* NULL empty, (char *)1 deleted */
    void **vals;
} gx_strmap;

void gx_strmap_init(gx_strmap *m);
void gx_strmap_free(gx_strmap *m);
void *gx_strmap_get(const gx_strmap *m, const char *key);
/* Insert or replace. */
void gx_strmap_put(gx_strmap *m, const char *key, void *val);
/* Returns the removed value or NULL. */
void *gx_strmap_del(gx_strmap *m, const char *key);

#endif
