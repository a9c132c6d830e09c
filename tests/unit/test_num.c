/* Unit tests of lib/num: integers print whole (the /metrics quota that %g printed as
 * 6.29146e+08), fractions print the fewest digits that read back as the same double,
 * and the special values print as the exposition format spells them. */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "lib/num.h"
#include "lib/rng.h"

static const char *fmt(double v)
{
    static char b[GX_NUM_MAX];
    return gx_num_fmt(v, b, sizeof b);
}

Test(num, integers_print_whole)
{
    cr_assert_str_eq(fmt(629145600.0), "629145600");           /* 600Mi */
    cr_assert_str_eq(fmt(1048576.0), "1048576");
    cr_assert_str_eq(fmt(-3.0), "-3");
    cr_assert_str_eq(fmt(0.0), "0");
    cr_assert_str_eq(fmt(-0.0), "0");
    cr_assert_str_eq(fmt(9007199254740993.0), "9007199254740992"); /* 2^53 + 1 is not a double */
    cr_assert_str_eq(fmt(99999999999999984.0), "99999999999999984");
    cr_assert_str_eq(fmt(1e17), "1e+17");
    cr_assert_str_eq(fmt(1e300), "1e+300");
}

Test(num, fractions_shortest_that_round_trips)
{
    cr_assert_str_eq(fmt(0.1), "0.1");
    cr_assert_str_eq(fmt(1.5), "1.5");
    cr_assert_str_eq(fmt(0.25), "0.25");
    cr_assert_str_eq(fmt(1234567.125), "1234567.125");         /* %g said 1.23457e+06 */
    cr_assert_str_eq(fmt(0.1 + 0.2), "0.30000000000000004");
    cr_assert_str_eq(fmt(1.0 / 3), "0.3333333333333333");
    cr_assert_str_eq(fmt(5e-324), "5e-324");
    cr_assert_str_eq(fmt(-DBL_MAX), "-1.7976931348623157e+308");
}

Test(num, special_values)
{
    cr_assert_str_eq(fmt(NAN), "NaN");
    cr_assert_str_eq(fmt(INFINITY), "+Inf");
    cr_assert_str_eq(fmt(-INFINITY), "-Inf");
}

/* Any finite double, drawn from its bits: prints within GX_NUM_MAX and reads back exact. */
Test(num, random_doubles_round_trip)
{
    uint64_t r[4];
    gx_rng_seed(r, 16);
    for (int i = 0; i < 200000; i++) {
        uint64_t bits = gx_rng_next(r);
        double v;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v)) continue;
        char b[GX_NUM_MAX];
        gx_num_fmt(v, b, sizeof b);
        cr_assert_lt(strlen(b), GX_NUM_MAX - 1, "%s", b);
        cr_assert(strtod(b, NULL) == v || v == 0, "%s does not read back as %a", b, v);
    }
}
