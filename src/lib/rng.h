/* rng: xoshiro256** (Blackman & Vigna) seeded through splitmix64: a small, fast PRNG
 * whose sequence is the same on every machine and libc, so a seed reproduces a replay.
 * Pure: the state is the caller's; no entropy source, no clock. */
#ifndef GX_RNG_H
#define GX_RNG_H
#include <stdint.h>

void gx_rng_seed(uint64_t s[4], uint64_t seed);
uint64_t gx_rng_next(uint64_t s[4]);

#endif
