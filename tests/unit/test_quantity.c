/* Unit tests for core/quantity: Kubernetes quantities as int64 milli-units. */
#include <criterion/criterion.h>
#include <string.h>
#include "core/quantity.h"

static int64_t P(const char *s)
{
    int64_t v = -1;
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_quantity_parse(s, &v, "f", &e), 0, "parse %s: %s", s, e.msg);
    return v;
}

static gx_err F(const char *s)
{
    int64_t v;
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_quantity_parse(s, &v, "spec.x", &e), -1, "%s should fail", s);
    cr_assert_eq(e.status, 422);
    cr_assert_str_eq(e.field, "spec.x");
    return e;
}

Test(quantity, plain_and_milli)
{
    cr_assert_eq(P("500m"), 500);
    cr_assert_eq(P("2"), 2000);
    cr_assert_eq(P("0"), 0);
    cr_assert_eq(P("1.5"), 1500);
    cr_assert_eq(P("+3"), 3000);
    cr_assert_eq(P(".5"), 500);
}

Test(quantity, suffixes)
{
    cr_assert_eq(P("1Ki"), 1024000);
    cr_assert_eq(P("36Gi"), 36LL * 1024 * 1024 * 1024 * 1000);
    cr_assert_eq(P("100M"), 100000000000LL);
    cr_assert_eq(P("1k"), 1000000);
    cr_assert_eq(P("1e3"), 1000000);
    cr_assert_eq(P("5E-1"), 500);
    cr_assert_eq(P("1000u"), 1);
    cr_assert_eq(P("0.5Gi"), 512LL * 1024 * 1024 * 1000);
}

Test(quantity, errors)
{
    gx_err e = F("-1");
    cr_assert(strstr(e.msg, "negative"));
    F("");
    F("abc");
    F("1x");
    F("2 Gi");
    e = F("0.0001");
    cr_assert(strstr(e.msg, "finer"));
    F("1n");
    F("99999999999999999999");
    F("1e40");
    F("9Ei");
}

/* Found by fuzz/fuzz_quantity.c: long mantissas with large suffixes, and long fractions
 * with small ones, overflowed the 128-bit arithmetic (undefined behaviour; UBSan stops). */
Test(quantity, long_numbers_do_not_overflow)
{
    gx_err e = F(".03101000000006000000060Ei");
    cr_assert(strstr(e.msg, "too large"), "%s", e.msg);
    F("99999999999999999999999999999Ei");
    e = F("0.000000000000000000001e-18");
    cr_assert(strstr(e.msg, "finer"), "%s", e.msg);
    e = F("0.00000000000000000000000000000000000000000000001");
    cr_assert(strstr(e.msg, "digits"), "%s", e.msg);
    cr_assert_eq(P("0.000000000000000000000e-18"), 0);
    cr_assert_eq(P("0.001Ei"), 1LL << 60);
    cr_assert_eq(P("0.000000000000000000000000000000000000"), 0);
}

Test(quantity, json)
{
    int64_t v;
    gx_err e;
    json_t *j = json_integer(3);
    cr_assert_eq(gx_quantity_from_json(j, &v, "f", &e), 0);
    cr_assert_eq(v, 3000);
    json_decref(j);
    j = json_real(0.25);
    cr_assert_eq(gx_quantity_from_json(j, &v, "f", &e), 0);
    cr_assert_eq(v, 250);
    json_decref(j);
    j = json_integer(-2);
    cr_assert_eq(gx_quantity_from_json(j, &v, "f", &e), -1);
    json_decref(j);
    j = json_true();
    cr_assert_eq(gx_quantity_from_json(j, &v, "f", &e), -1);
    cr_assert_eq(e.status, 422);
}

Test(quantity, format)
{
    char b[48];
    cr_assert_str_eq(gx_quantity_format(500, b, sizeof b), "500m");
    cr_assert_str_eq(gx_quantity_format(2000, b, sizeof b), "2");
    cr_assert_str_eq(gx_quantity_format(0, b, sizeof b), "0");
    cr_assert_str_eq(gx_quantity_format(36LL * 1024 * 1024 * 1024 * 1000, b, sizeof b), "36Gi");
    cr_assert_str_eq(gx_quantity_format(1024000, b, sizeof b), "1024");
    cr_assert_str_eq(gx_quantity_format(1500, b, sizeof b), "1500m");
    /* round trip */
    int64_t v;
    gx_err e;
    cr_assert_eq(gx_quantity_parse(gx_quantity_format(3LL << 40, b, sizeof b), &v, "f", &e), 0);
    cr_assert_eq(v, 3LL << 40);
}
