/* cudashim/table: the process's live GPU allocations (pointer, VMM handle or array ->
 * device and size), so that each free gives back exactly what its allocation took.
 * An open-addressing hash table with linear probing and backward-shift deletion under
 * one mutex, in an anonymous mapping made on first use (bounded: GX_CS_TABLE_CAP
 * entries; a full table refuses the allocation rather than lose track of it).
 * Owns: the table. Must not: allocate with malloc (it runs inside hooks that may be
 * called from any context of the application). */
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include "cudashim/shim.h"

#define GX_CS_TABLE_CAP (1u << 20)   /* live allocations of one process; 24 MiB reserved, touched as used */

typedef struct { uint64_t key; uint64_t size; uint32_t kind; int32_t dev; } entry;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static entry *tab;
static uint32_t count;

static uint32_t slot_of(int kind, uint64_t key)
{
    uint64_t h = (key ^ ((uint64_t)kind << 56)) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 44) & (GX_CS_TABLE_CAP - 1);
}

static int ensure(void)
{
    if (tab) return 0;
    void *m = mmap(NULL, sizeof(entry) * GX_CS_TABLE_CAP, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return -1;
    tab = m;
    return 0;
}

/* Index of (KIND, KEY), or -1. Caller holds mu. */
static int64_t find(int kind, uint64_t key)
{
    if (!tab) return -1;
    for (uint32_t i = slot_of(kind, key), n = 0; n < GX_CS_TABLE_CAP; i = (i + 1) & (GX_CS_TABLE_CAP - 1), n++) {
        if (!tab[i].kind) return -1;
        if (tab[i].kind == (uint32_t)kind && tab[i].key == key) return i;
    }
    return -1;
}

int gx_cs_track(int kind, uint64_t key, int dev, uint64_t size)
{
    pthread_mutex_lock(&mu);
    int rc = -1;
    /* keep a quarter free so probes stay short */
    if (ensure() == 0 && count < GX_CS_TABLE_CAP / 4 * 3) {
        int64_t at = find(kind, key);
        uint32_t i = at >= 0 ? (uint32_t)at : slot_of(kind, key);
        while (at < 0 && tab[i].kind) i = (i + 1) & (GX_CS_TABLE_CAP - 1);
        if (at < 0) count++;
        tab[i] = (entry){key, size, (uint32_t)kind, dev};
        rc = 0;
    }
    pthread_mutex_unlock(&mu);
    return rc;
}

int gx_cs_untrack(int kind, uint64_t key, int *dev, uint64_t *size)
{
    pthread_mutex_lock(&mu);
    int64_t at = find(kind, key);
    if (at < 0) { pthread_mutex_unlock(&mu); return -1; }
    *dev = tab[at].dev;
    *size = tab[at].size;
    /* backward-shift deletion: move later members of the probe run into the hole */
    uint32_t hole = (uint32_t)at, j = hole;
    for (;;) {
        j = (j + 1) & (GX_CS_TABLE_CAP - 1);
        if (!tab[j].kind) break;
        uint32_t home = slot_of((int)tab[j].kind, tab[j].key);
        /* j's entry may fill the hole when its home is not in (hole, j] cyclically */
        int stays = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (stays) continue;
        tab[hole] = tab[j];
        hole = j;
    }
    memset(&tab[hole], 0, sizeof tab[hole]);
    count--;
    pthread_mutex_unlock(&mu);
    return 0;
}

int gx_cs_known(int kind, uint64_t key)
{
    pthread_mutex_lock(&mu);
    int k = find(kind, key) >= 0;
    pthread_mutex_unlock(&mu);
    return k;
}

/* Fork child: the parent's allocations are not the child's. The mutex is re-made too,
 * as another thread of the parent may have held it at the fork. */
void gx_cs_table_reset(void)
{
    pthread_mutex_t fresh = PTHREAD_MUTEX_INITIALIZER;
    mu = fresh;
    if (tab) munmap(tab, sizeof(entry) * GX_CS_TABLE_CAP);   /* MAP_PRIVATE: the parent keeps its own */
    tab = NULL;
    count = 0;
}
