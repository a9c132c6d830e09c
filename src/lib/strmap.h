/* strmap: the one string-keyed hash map (open addressing, FNV-1a), string -> pointer,
 * or string -> index through the typed pair gx_strmap_geti/gx_strmap_puti.
 * Owns: the keys (copied on insert, freed on delete and free).
 * Must not: own the values (they are borrowed pointers or plain indexes). */
#ifndef GX_STRMAP_H
#define GX_STRMAP_H
#include <stddef.h>
#include <stdint.h>

typedef struct gx_strmap {
    size_t cap, n, tomb;
    char **keys;      /* NULL empty, (char *)1 deleted */
    void **vals;
} gx_strmap;

void gx_strmap_init(gx_strmap *m);
void gx_strmap_free(gx_strmap *m);
/* The value, or NULL when absent (a stored NULL reads the same: see gx_strmap_find). */
void *gx_strmap_get(const gx_strmap *m, const char *key);
/* 1 with *val set when the key is present (whatever its value), 0 when absent. */
int gx_strmap_find(const gx_strmap *m, const char *key, void **val);
/* Insert or replace. */
void gx_strmap_put(gx_strmap *m, const char *key, void *val);
/* Returns the removed value or NULL. */
void *gx_strmap_del(gx_strmap *m, const char *key);

/* The map as string -> index (>= 0), stored as an intptr_t in the value: the engine's
 * name -> array index maps. geti is -1 when the key is absent, so index 0 is an index. */
static inline int gx_strmap_geti(const gx_strmap *m, const char *key)
{
    void *v;
    return gx_strmap_find(m, key, &v) ? (int)(intptr_t)v : -1;
}
static inline void gx_strmap_puti(gx_strmap *m, const char *key, int idx)
{
    gx_strmap_put(m, key, (void *)(intptr_t)idx);
}

#endif
