/* test_repeat: a string of n copies of one character (n < 600), for length boundaries;
 * four calls' results stay valid at once. */
#ifndef TEST_REPEAT_H
#define TEST_REPEAT_H
#include <string.h>

static inline char *repeat(char c, size_t n)
{
    static char buf[4][600];
    static int k;
    char *b = buf[k++ % 4];
    memset(b, c, n);
    b[n] = 0;
    return b;
}

#endif
