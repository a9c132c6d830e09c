/* sim/trace_rng: the replay's PRNG (lib/rng: xoshiro256**, seeded through splitmix64), so a
 * seed gives the same arrivals and node order on every machine and libc.
 * Owns: gx_trace_rng_*.
 * Must not: read any entropy source or clock. */
#include "sim/trace_internal.h"
#include "lib/rng.h"

void gx_trace_rng_seed(gx_trace_rng *r, uint64_t seed) { gx_rng_seed(r->s, seed); }

uint64_t gx_trace_rng_next(gx_trace_rng *r) { return gx_rng_next(r->s); }

/* Lemire's nearly-divisionless bounded draw, without modulo bias. */
uint64_t gx_trace_rng_below(gx_trace_rng *r, uint64_t n)
{
    if (n <= 1) return 0;
    __uint128_t m = (__uint128_t)gx_trace_rng_next(r) * n;
    uint64_t lo = (uint64_t)m;
    if (lo < n) {
        uint64_t thresh = -n % n;
        while (lo < thresh) {
            m = (__uint128_t)gx_trace_rng_next(r) * n;
            lo = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

/* Fisher-Yates. */
void gx_trace_rng_shuffle(gx_trace_rng *r, int *a, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)gx_trace_rng_below(r, i);
        int x = a[i - 1];
        a[i - 1] = a[j];
        a[j] = x;
    }
}
