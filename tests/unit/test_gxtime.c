/* Unit tests of lib/gxtime: RFC 3339 round trips, offsets, leap years, refusals, and the
 * duration parser and formats (kubectl's age, exact, words). No clock is read. */
#include <criterion/criterion.h>
#include <string.h>
#include "lib/gxtime.h"

Test(gxtime, parses_utc_with_millis)
{
    int64_t ms = 0;
    cr_assert_eq(gx_time_parse("2026-11-29T18:00:00.123Z", &ms), 0);
    cr_assert_eq(ms, 1795975200123LL);
    cr_assert_eq(gx_time_parse("1970-01-01T00:00:00Z", &ms), 0);
    cr_assert_eq(ms, 0);
    cr_assert_eq(gx_time_parse("1969-12-31T23:59:59Z", &ms), 0);
    cr_assert_eq(ms, -1000);
}

Test(gxtime, fractions_offsets_and_leap_days)
{
    int64_t ms = 0;
    cr_assert_eq(gx_time_parse("2026-11-29T18:00:00.1Z", &ms), 0);
    cr_assert_eq(ms, 1795975200100LL, "one digit is tenths");
    cr_assert_eq(gx_time_parse("2026-11-29T18:00:00.123456789Z", &ms), 0);
    cr_assert_eq(ms, 1795975200123LL, "digits past milliseconds are dropped");
    cr_assert_eq(gx_time_parse("2026-11-29T20:30:00+02:30", &ms), 0);
    cr_assert_eq(ms, 1795975200000LL);
    cr_assert_eq(gx_time_parse("2026-11-29T13:00:00-05:00", &ms), 0);
    cr_assert_eq(ms, 1795975200000LL);
    cr_assert_eq(gx_time_parse("2026-11-29t18:00:00z", &ms), 0);
    cr_assert_eq(ms, 1795975200000LL);
    cr_assert_eq(gx_time_parse("2024-02-29T23:59:59Z", &ms), 0);
    cr_assert_eq(ms, 1709251199000LL);
    cr_assert_eq(gx_time_parse("2000-02-29T00:00:00Z", &ms), 0, "2000 is a leap year (divisible by 400)");
    cr_assert_eq(ms, 951782400000LL);
    cr_assert_eq(gx_time_parse("2016-12-31T23:59:60Z", &ms), 0, "a leap second");
    cr_assert_eq(ms, 1483228800000LL);
}

Test(gxtime, rejects_what_is_not_rfc3339)
{
    int64_t ms = 42;
    const char *bad[] = {"", "2026-11-29", "2026-11-29T18:00:00", "2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z",
                         "1900-02-29T00:00:00Z", "2026-11-29T24:00:00Z", "2026-11-29T18:60:00Z",
                         "2026-11-29T18:00:00.Z", "2026-11-29T18:00:00Zjunk", "2026-11-29T18:00:00+0200",
                         "2026-11-29T18:00:00+24:00", "26-11-29T18:00:00Z", "2026-11-00T18:00:00Z",
                         "2026-04-31T00:00:00Z", " 2026-11-29T18:00:00Z", "2026/11/29T18:00:00Z", "now"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(gx_time_parse(bad[i], &ms), -1, "accepted '%s'", bad[i]);
    cr_assert_eq(gx_time_parse(NULL, &ms), -1);
    cr_assert_eq(ms, 42, "untouched on error");
}

Test(gxtime, format_round_trips)
{
    char b[GX_TIME_LEN];
    cr_assert_str_eq(gx_time_fmt(0, b, sizeof b), "1970-01-01T00:00:00.000Z");
    cr_assert_str_eq(gx_time_fmt(1795975200123LL, b, sizeof b), "2026-11-29T18:00:00.123Z");
    cr_assert_str_eq(gx_time_fmt(-1, b, sizeof b), "1969-12-31T23:59:59.999Z", "before 1970 rounds down");
    cr_assert_str_eq(gx_time_fmt(951782400000LL + 86399999, b, sizeof b), "2000-02-29T23:59:59.999Z");
    cr_assert_str_eq(gx_time_fmt(253402300799999LL, b, sizeof b), "9999-12-31T23:59:59.999Z");
    /* Every step of a walk across leap years and the epoch comes back exactly. */
    for (int64_t ms = -5000LL * 86400000; ms < 40000LL * 86400000; ms += 86400000LL * 7 + 3600007) {
        int64_t back = 0;
        gx_time_fmt(ms, b, sizeof b);
        cr_assert_eq(gx_time_parse(b, &back), 0, "%s", b);
        cr_assert_eq(back, ms, "%s: %lld != %lld", b, (long long)back, (long long)ms);
    }
}

Test(gxtime, durations_parse)
{
    cr_assert_eq(gx_duration_parse("30s"), 30000);
    cr_assert_eq(gx_duration_parse("5m"), 300000);
    cr_assert_eq(gx_duration_parse("2h"), 7200000);
    cr_assert_eq(gx_duration_parse("7d"), 604800000);
    cr_assert_eq(gx_duration_parse("1h30m"), 5400000);
    cr_assert_eq(gx_duration_parse("90s"), 90000);
    cr_assert_eq(gx_duration_parse("200ms"), 200);
    cr_assert_eq(gx_duration_parse("1m30s200ms"), 90200);
    cr_assert_eq(gx_duration_parse("1.5s"), 1500);
    cr_assert_eq(gx_duration_parse("0.5h"), 1800000);
    cr_assert_eq(gx_duration_parse("0.0005s"), 1, "rounded to the nearest millisecond");
    cr_assert_eq(gx_duration_parse("0s"), 0);
    const char *bad[] = {"", "7", "-1d", "+1d", "1w", "1 h", "h", "1h30", ".s", "1.5", "1hh", "1e3s",
                         "99999999999999999999s", "400000d", "1.2.3s"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        cr_assert_eq(gx_duration_parse(bad[i]), -1, "accepted '%s'", bad[i]);
    cr_assert_eq(gx_duration_parse(NULL), -1);
}

Test(gxtime, age_matches_kubectl)
{
    struct { int64_t s; const char *want; } cases[] = {
        {0, "0s"}, {45, "45s"}, {119, "119s"}, {120, "2m"}, {192, "3m12s"}, {599, "9m59s"}, {600, "10m"},
        {179 * 60 + 59, "179m"}, {3 * 3600, "3h"}, {2 * 3600 + 5 * 60, "125m"}, {3 * 3600 + 5 * 60, "3h5m"},
        {7 * 3600 + 59 * 60, "7h59m"}, {8 * 3600 + 60, "8h"}, {47 * 3600, "47h"}, {48 * 3600, "2d"},
        {3 * 86400, "3d"}, {3 * 86400 + 5 * 3600, "3d5h"}, {8 * 86400 + 3600, "8d"}, {400 * 86400, "400d"},
        {(2 * 365 + 10) * 86400LL, "2y10d"}, {10 * 365 * 86400LL, "10y"},
    };
    char buf[32];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        cr_assert_str_eq(gx_duration_age(cases[i].s * 1000, buf, sizeof buf), cases[i].want, "for %lld s", (long long)cases[i].s);
    cr_assert_str_eq(gx_duration_age(-1500, buf, sizeof buf), "0s", "small clock skew reads as now");
    cr_assert_str_eq(gx_duration_age(-5000, buf, sizeof buf), "<invalid>");
}

Test(gxtime, exact_and_words)
{
    char buf[32];
    cr_assert_str_eq(gx_duration_exact(7200000, buf, sizeof buf), "2h");
    cr_assert_str_eq(gx_duration_exact(5400000, buf, sizeof buf), "1h30m");
    cr_assert_str_eq(gx_duration_exact(90000, buf, sizeof buf), "1m30s");
    cr_assert_str_eq(gx_duration_exact((86400 + 7200 + 3) * 1000LL, buf, sizeof buf), "1d2h3s");
    cr_assert_str_eq(gx_duration_exact(0, buf, sizeof buf), "0s");
    cr_assert_str_eq(gx_duration_exact(-5000, buf, sizeof buf), "0s");
    /* exact and parse agree both ways */
    cr_assert_eq(gx_duration_parse(gx_duration_exact(93784000, buf, sizeof buf)), 93784000);
    cr_assert_str_eq(gx_duration_words(45000, buf, sizeof buf), "45 s");
    cr_assert_str_eq(gx_duration_words(192000, buf, sizeof buf), "3 min");
    cr_assert_str_eq(gx_duration_words((2 * 3600 + 5 * 60) * 1000LL, buf, sizeof buf), "2 h 5 min");
    cr_assert_str_eq(gx_duration_words((3 * 86400 + 4 * 3600 + 59) * 1000LL, buf, sizeof buf), "3 d 4 h");
    cr_assert_str_eq(gx_duration_words(-1, buf, sizeof buf), "0 s");
}
