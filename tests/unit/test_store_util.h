/* test_store_util: a throw-away data folder for the store's unit tests (real SQLite in
 * /tmp), one per test: .init = store_tmp_make, .fini = store_tmp_remove. */
#ifndef TEST_STORE_UTIL_H
#define TEST_STORE_UTIL_H
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include "store/store.h"

static char dir[64];

static inline void store_tmp_make(void)
{
    snprintf(dir, sizeof dir, "/tmp/gpuaas-unit.XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static inline void store_tmp_remove(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_assert_eq(system(cmd), 0);
}

static inline gx_store *open_store(void)
{
    gx_err e;
    gx_err_clear(&e);
    gx_store *s = gx_store_open(dir, &e);
    cr_assert_not_null(s, "open: %s", e.msg);
    return s;
}

#endif
