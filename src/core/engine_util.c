/* engine_util: small containers for the engine (string map, interned names, allocation).
 * Owns: gx_smap, gx_names, the aborting allocators.
 * Must not: know about queues or workloads. Allocation failure aborts: the engine has
 * no meaningful way to continue half-updated. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/engine_int.h"

static char tomb_key;
#define TOMB (&tomb_key)

void *gx_engine_util_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) abort();
    return q;
}

char *gx_engine_util_xstrdup(const char *s)
{
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *d = gx_engine_util_xrealloc(NULL, n);
    memcpy(d, s, n);
    return d;
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ULL;             /* FNV-1a */
    for (; *s; s++) { h ^= (unsigned char)*s; h *= 1099511628211ULL; }
    return h;
}

static void smap_grow(gx_smap *m)
{
    size_t ocap = m->cap;
    char **ok = m->keys;
    int *ov = m->vals;
    m->cap = ocap ? ocap * 2 : 16;
    while (m->n * 2 >= m->cap) m->cap *= 2;
    m->keys = calloc(m->cap, sizeof *m->keys);
    m->vals = calloc(m->cap, sizeof *m->vals);
    if (!m->keys || !m->vals) abort();
    m->used = 0;
    for (size_t i = 0; i < ocap; i++) {
        if (!ok[i] || ok[i] == TOMB) continue;
        size_t j = hash_str(ok[i]) & (m->cap - 1);
        while (m->keys[j]) j = (j + 1) & (m->cap - 1);
        m->keys[j] = ok[i];
        m->vals[j] = ov[i];
        m->used++;
    }
    free(ok);
    free(ov);
}

int gx_engine_util_smap_get(const gx_smap *m, const char *k)
{
    if (!m->cap) return -1;
    size_t j = hash_str(k) & (m->cap - 1);
    while (m->keys[j]) {
        if (m->keys[j] != TOMB && !strcmp(m->keys[j], k)) return m->vals[j];
        j = (j + 1) & (m->cap - 1);
    }
    return -1;
}

void gx_engine_util_smap_put(gx_smap *m, const char *k, int v)
{
    if ((m->used + 1) * 2 >= m->cap) smap_grow(m);
    size_t j = hash_str(k) & (m->cap - 1);
    size_t tomb = (size_t)-1;
    while (m->keys[j]) {
        if (m->keys[j] == TOMB) { if (tomb == (size_t)-1) tomb = j; }
        else if (!strcmp(m->keys[j], k)) { m->vals[j] = v; return; }
        j = (j + 1) & (m->cap - 1);
    }
    if (tomb != (size_t)-1) j = tomb; else m->used++;
    m->keys[j] = gx_engine_util_xstrdup(k);
    m->vals[j] = v;
    m->n++;
}

void gx_engine_util_smap_del(gx_smap *m, const char *k)
{
    if (!m->cap) return;
    size_t j = hash_str(k) & (m->cap - 1);
    while (m->keys[j]) {
        if (m->keys[j] != TOMB && !strcmp(m->keys[j], k)) {
            free(m->keys[j]);
            m->keys[j] = TOMB;
            m->n--;
            return;
        }
        j = (j + 1) & (m->cap - 1);
    }
}

void gx_engine_util_smap_free(gx_smap *m)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i] && m->keys[i] != TOMB) free(m->keys[i]);
    free(m->keys);
    free(m->vals);
    memset(m, 0, sizeof *m);
}

int gx_engine_util_intern(gx_names *t, const char *s)
{
    int id = gx_engine_util_smap_get(&t->map, s);
    if (id >= 0) return id;
    GX_GROW(t->s, t->n, t->cap);
    t->s[t->n] = gx_engine_util_xstrdup(s);
    gx_engine_util_smap_put(&t->map, s, t->n);
    return t->n++;
}

int gx_engine_util_lookup(const gx_names *t, const char *s)
{
    return gx_engine_util_smap_get(&t->map, s);
}

void gx_engine_util_names_free(gx_names *t)
{
    for (int i = 0; i < t->n; i++) free(t->s[i]);
    free(t->s);
    gx_engine_util_smap_free(&t->map);
    memset(t, 0, sizeof *t);
}
