/* strmap: open addressing with linear probing; rehashes at 70 % load, tombstones
 * counted, into a table sized for the live keys only (so deletes and inserts that
 * balance out keep the table's size instead of doubling it on every rehash).
 * Owns: the table and the copied keys. Must not: free values. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lib/alloc.h"
#include "lib/strmap.h"

#define TOMB ((char *)1)

static uint64_t fnv(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

void gx_strmap_init(gx_strmap *m) { memset(m, 0, sizeof *m); }

void gx_strmap_free(gx_strmap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i] && m->keys[i] != TOMB) free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

/* The key's slot when found (*found = 1); else where to insert it: the first tombstone
 * on its probe path, or the empty slot that ends the path. */
static size_t slot(const gx_strmap *m, const char *key, int *found)
{
    size_t mask = m->cap - 1, i = fnv(key) & mask, first_tomb = SIZE_MAX;
    for (;;) {
        char *k = m->keys[i];
        if (!k) { *found = 0; return first_tomb != SIZE_MAX ? first_tomb : i; }
        if (k == TOMB) { if (first_tomb == SIZE_MAX) first_tomb = i; }
        else if (!strcmp(k, key)) { *found = 1; return i; }
        i = (i + 1) & mask;
    }
}

/* Rehash into a table where the live keys fill at most a quarter: doubling when they
 * grew, the same size (or smaller) when tombstones were what filled it. */
static void rehash(gx_strmap *m)
{
    gx_strmap old = *m;
    m->cap = 64;
    while (m->cap < 4 * (old.n + 1)) m->cap *= 2;
    m->keys = gx_xcalloc(m->cap, sizeof *m->keys);
    m->vals = gx_xcalloc(m->cap, sizeof *m->vals);
    m->n = m->tomb = 0;
    for (size_t i = 0; i < old.cap; i++)
        if (old.keys[i] && old.keys[i] != TOMB) {
            int f;
            size_t s = slot(m, old.keys[i], &f);
            m->keys[s] = old.keys[i];
            m->vals[s] = old.vals[i];
            m->n++;
        }
    free(old.keys);
    free(old.vals);
}

int gx_strmap_find(const gx_strmap *m, const char *key, void **val)
{
    *val = NULL;
    if (!m->cap) return 0;
    int f;
    size_t s = slot(m, key, &f);
    if (f) *val = m->vals[s];
    return f;
}

void *gx_strmap_get(const gx_strmap *m, const char *key)
{
    void *v;
    gx_strmap_find(m, key, &v);
    return v;
}

void gx_strmap_put(gx_strmap *m, const char *key, void *val)
{
    if ((m->n + m->tomb + 1) * 10 >= m->cap * 7) rehash(m);
    int f;
    size_t s = slot(m, key, &f);
    if (f) { m->vals[s] = val; return; }
    if (m->keys[s] == TOMB) m->tomb--;
    m->keys[s] = gx_xstrdup(key);
    m->vals[s] = val;
    m->n++;
}

void *gx_strmap_del(gx_strmap *m, const char *key)
{
    if (!m->cap) return NULL;
    int f;
    size_t s = slot(m, key, &f);
    if (!f) return NULL;
    void *v = m->vals[s];
    free(m->keys[s]);
    m->keys[s] = TOMB;
    m->vals[s] = NULL;
    m->n--;
    m->tomb++;
    return v;
}
