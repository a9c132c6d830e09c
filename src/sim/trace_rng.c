/* sim/trace_rng: the replay's own PRNG (xoshiro256**, seeded through splitmix64), so a
 * seed gives the same arrivals and node order on every machine and libc.
 * Owns: gx_trace_rng_*.
 * Must not: read any entropy source or clock. */
#include "sim/trace_internal.h"

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

void gx_trace_rng_seed(gx_trace_rng *r, uint64_t seed)
{
    uint64_t x = seed;
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

uint64_t gx_trace_rng_next(gx_trace_rng *r)
{
    uint64_t *s = r->s;
    uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return out;
}

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
