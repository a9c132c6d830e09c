/* addrs: the per-address connection counts (see addrs.h). Linear probing; a removal
 * shifts the entries after it back (no tombstones), so lookups stay short however
 * many addresses come and go. */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>
#include <time.h>
#include "net/addrs.h"
#include "lib/alloc.h"

#define ADDR(e) ((uint32_t)((e) >> 32))
#define COUNT(e) ((uint32_t)(e))

static size_t home(const gx_addrs *t, uint32_t addr)
{
    uint64_t x = (addr ^ t->seed) * 0x9E3779B97F4A7C15ull;
    x ^= x >> 29;
    return (size_t)x & t->mask;
}

void gx_addrs_init(gx_addrs *t, size_t max_keys)
{
    size_t n = 16;
    while (n < 2 * max_keys) n *= 2;
    t->slot = gx_xcalloc(n, sizeof *t->slot);
    t->mask = n - 1;
    /* a keyed hash: without the key, one client could pick addresses that share a run */
    if (getrandom(&t->seed, sizeof t->seed, GRND_NONBLOCK) != (ssize_t)sizeof t->seed)
        t->seed = (uint64_t)time(NULL) * 0x2545F4914F6CDD1Dull ^ (uint64_t)(uintptr_t)t;
}

void gx_addrs_free(gx_addrs *t)
{
    free(t->slot);
    memset(t, 0, sizeof *t);
}

/* The slot holding addr, or the empty slot where it would go. */
static size_t find(const gx_addrs *t, uint32_t addr)
{
    size_t i = home(t, addr);
    while (COUNT(t->slot[i]) && ADDR(t->slot[i]) != addr) i = (i + 1) & t->mask;
    return i;
}

uint32_t gx_addrs_get(const gx_addrs *t, uint32_t addr) { return COUNT(t->slot[find(t, addr)]); }

uint32_t gx_addrs_inc(gx_addrs *t, uint32_t addr)
{
    size_t i = find(t, addr);
    uint32_t n = COUNT(t->slot[i]) + 1;
    t->slot[i] = (uint64_t)addr << 32 | n;
    return n;
}

void gx_addrs_dec(gx_addrs *t, uint32_t addr)
{
    size_t i = find(t, addr);
    uint32_t n = COUNT(t->slot[i]);
    if (!n) return;
    if (n > 1) { t->slot[i] = (uint64_t)addr << 32 | (n - 1); return; }
    /* empty the slot, then move back every later entry of the run that may sit there */
    t->slot[i] = 0;
    for (size_t j = (i + 1) & t->mask; COUNT(t->slot[j]); j = (j + 1) & t->mask) {
        size_t h = home(t, ADDR(t->slot[j]));
        /* j's entry may move to i when its home is not in (i, j] (cyclically) */
        int stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
        if (stays) continue;
        t->slot[i] = t->slot[j];
        t->slot[j] = 0;
        i = j;
    }
}
