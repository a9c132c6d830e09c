/* fuzz_util.h: what the libFuzzer targets in fuzz/ share: a check that stops the run
 * with a message (libFuzzer then saves the input as a crash), a NUL-terminated copy of
 * the input, and a small deterministic generator of split points derived from the input
 * itself (so a saved input reproduces the same splits).
 * Must not: keep state between inputs (each run of LLVMFuzzerTestOneInput stands alone). */
#ifndef GX_FUZZ_UTIL_H
#define GX_FUZZ_UTIL_H
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A property that does not hold is a finding: print why, then abort so that libFuzzer
 * records the input (a plain assert would vanish under -DNDEBUG). */
#define FUZZ_CHECK(cond, ...)                                                          \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: property failed: %s: ", __FILE__, __LINE__, #cond); \
            fprintf(stderr, __VA_ARGS__);                                              \
            fputc('\n', stderr);                                                       \
            abort();                                                                   \
        }                                                                              \
    } while (0)

/* The input as a NUL-terminated string (bytes after an embedded NUL are kept in n). */
static inline char *fuzz_cstr(const uint8_t *d, size_t n)
{
    char *s = malloc(n + 1);
    if (!s) abort();
    memcpy(s, d, n);
    s[n] = 0;
    return s;
}

/* FNV-1a of the input: the seed of the split generator below. */
static inline uint64_t fuzz_hash(const uint8_t *d, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ d[i]) * 1099511628211ull;
    return h;
}

/* Next piece length in 1..max (xorshift64). */
static inline size_t fuzz_step(uint64_t *st, size_t max)
{
    uint64_t x = *st ? *st : 88172645463325252ull;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    *st = x;
    return 1 + (size_t)(x % max);
}
#endif
