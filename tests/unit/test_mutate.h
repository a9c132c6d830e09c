/* Random edits for the property tests (test_parsers_random.c, test_maas_body.c): the
 * project's PRNG (lib/rng) with a seed each test sets, so a failure reproduces. */
#ifndef GX_TEST_MUTATE_H
#define GX_TEST_MUTATE_H
#include <string.h>
#include "lib/rng.h"

static uint64_t rs[4];
static inline unsigned pick(unsigned n) { return (unsigned)(gx_rng_next(rs) % n); }

/* Up to 5 random edits of buf[0..*n) (capacity cap): a byte changed to one of alphabet,
 * a random byte inserted, a byte deleted, or the text cut short now and then. */
static inline void mutate(char *buf, size_t *n, size_t cap, const char *alphabet)
{
    int edits = (int)pick(6);
    for (int m = 0; m < edits; m++) {
        size_t len = *n, pos = len ? pick((unsigned)len) : 0;
        switch (pick(4)) {
        case 0: if (len) buf[pos] = alphabet[pick((unsigned)strlen(alphabet))]; break;
        case 1:
            if (len + 1 < cap) {
                memmove(buf + pos + 1, buf + pos, len - pos);
                buf[pos] = (char)pick(256);
                (*n)++;
            }
            break;
        case 2: if (len > 1) { memmove(buf + pos, buf + pos + 1, len - pos - 1); (*n)--; } break;
        default: if (pick(4) == 0) *n = pos; break;   /* cut short, now and then */
        }
    }
}

#endif
