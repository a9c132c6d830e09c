/* addrs: how many connections each client IPv4 address holds, for the HTTP server's
 * per-address limit (http.c). An open-addressing table sized at creation for the most
 * addresses it can hold at once (one per connection), so it never grows or fills.
 * Owns: the counts. Must not: decide anything (http.c compares the counts with its
 * limits); do I/O beyond seeding its hash. */
#ifndef GX_ADDRS_H
#define GX_ADDRS_H
#include <stddef.h>
#include <stdint.h>

typedef struct gx_addrs {
    uint64_t *slot;     /* (address << 32) | count; count 0: empty */
    size_t mask;        /* slots - 1 (a power of two) */
    uint64_t seed;      /* keys the hash, so chosen addresses cannot pile into one run */
} gx_addrs;

/* A table for up to max_keys addresses at once (at most half full). */
void gx_addrs_init(gx_addrs *t, size_t max_keys);
void gx_addrs_free(gx_addrs *t);
/* Connections of addr (network byte order, as in sockaddr_in), 0 when none. */
uint32_t gx_addrs_get(const gx_addrs *t, uint32_t addr);
/* One more connection of addr; the new count. The caller keeps distinct addresses
 * under max_keys (it holds at most that many connections). */
uint32_t gx_addrs_inc(gx_addrs *t, uint32_t addr);
/* One connection of addr fewer (an address at 0 leaves the table). */
void gx_addrs_dec(gx_addrs *t, uint32_t addr);

#endif
