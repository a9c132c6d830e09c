/* Unit tests for lib/alloc: the wrappers count, grow arrays by doubling, refuse
 * overflowing sizes, and abort (one message, SIGABRT) when memory cannot be had. */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lib/alloc.h"

Test(alloc, counts_calls_and_copies)
{
    uint64_t before = gx_alloc_calls();
    char *s = gx_xstrdup("gpu");
    char *t = gx_xstrndup("gpuaas", 3);
    cr_assert_str_eq(s, "gpu");
    cr_assert_str_eq(t, "gpu");
    cr_assert_geq(gx_alloc_calls() - before, 2);
    free(s);
    free(t);
}

Test(alloc, zero_size_is_not_null)
{
    void *p = gx_xmalloc(0);
    cr_assert_not_null(p);
    p = gx_xrealloc(p, 0);
    cr_assert_not_null(p);
    free(p);
}

Test(alloc, grow_doubles_and_keeps_contents)
{
    int *a = NULL;
    size_t cap = 0;
    for (int i = 0; i < 100; i++) {
        a = gx_xgrow(a, &cap, (size_t)i + 1, sizeof *a);
        a[i] = i;
    }
    cr_assert_eq(cap, 128);
    for (int i = 0; i < 100; i++) cr_assert_eq(a[i], i);
    free(a);
}

Test(alloc, overflowing_array_aborts, .signal = SIGABRT)
{
    void *p = gx_xreallocarray(NULL, SIZE_MAX / 2, 4);
    free(p);
}

/* What every wrapper calls when malloc says no. (A real exhaustion is not provoked:
 * under ASan a huge malloc is the sanitizer's own error, not a NULL.) */
Test(alloc, failure_aborts, .signal = SIGABRT)
{
    gx_alloc_fail(4096);
}
