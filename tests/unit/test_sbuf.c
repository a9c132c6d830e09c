/* Unit tests of lib/sbuf: bytes and text append, growth across many doublings, printf
 * that does not fit the first time, reset keeping memory, take leaving it empty. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "lib/sbuf.h"

Test(sbuf, put_puts_and_bytes_with_nul)
{
    gx_sbuf b = {0};
    gx_sbuf_puts(&b, NULL);
    cr_assert_eq(b.n, 0);
    gx_sbuf_put(&b, "a\0b", 3);
    gx_sbuf_puts(&b, "cd");
    cr_assert_eq(b.n, 5);
    cr_assert_eq(memcmp(b.p, "a\0bcd", 6), 0, "terminated after the bytes");
    gx_sbuf_free(&b);
    cr_assert_null(b.p);
    cr_assert_eq(b.n + b.cap, 0);
}

Test(sbuf, printf_grows_and_reset_keeps_memory)
{
    gx_sbuf b;
    gx_sbuf_init(&b);
    for (int i = 0; i < 1000; i++) gx_sbuf_printf(&b, "%04d,", i);
    cr_assert_eq(b.n, 5000);
    cr_assert_eq(strlen(b.p), 5000);
    cr_assert(!strncmp(b.p + 4995, "0999,", 5));
    char big[3000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    gx_sbuf_printf(&b, "[%s]", big);   /* longer than the room left: written in the second try */
    cr_assert_eq(b.n, 5000 + 3001);
    cr_assert_eq(b.p[b.n - 1], ']');
    size_t cap = b.cap;
    gx_sbuf_reset(&b);
    cr_assert_eq(b.n, 0);
    cr_assert_str_eq(b.p, "");
    cr_assert_eq(b.cap, cap);
    gx_sbuf_free(&b);
}

Test(sbuf, take_is_never_null)
{
    gx_sbuf b = {0};
    char *s = gx_sbuf_take(&b);
    cr_assert_str_eq(s, "");
    free(s);
    gx_sbuf_printf(&b, "%s=%d", "gpus", 8);
    s = gx_sbuf_take(&b);
    cr_assert_str_eq(s, "gpus=8");
    cr_assert_null(b.p, "the buffer is left empty");
    free(s);
    gx_sbuf c = {NULL, 0, 8192};   /* {malloc(n), 0, n} whose malloc failed */
    gx_sbuf_printf(&c, "ok");
    cr_assert_str_eq(c.p, "ok");
    gx_sbuf_free(&c);
}
