/* Unit tests of lib/tzwin: weekly windows in Europe/Paris across both daylight-saving
 * changes (2026-10-25 and 2027-03-28): a Monday 09:00-17:00 booking stays 09:00-17:00
 * local, so its UTC instants move by an hour; an overnight window across the change is
 * an hour longer or shorter; unknown zones and empty day lists are refused naming the
 * field; TZ is left as it was. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "lib/gxtime.h"
#include "lib/tzwin.h"

static int64_t T(const char *s)
{
    int64_t ms = 0;
    cr_assert_eq(gx_time_parse(s, &ms), 0, "%s", s);
    return ms;
}

#define MON (1u << 1)

Test(tzwin, monday_nine_to_five_across_the_autumn_change)
{
    gx_tzwin_occ *o;
    gx_err err;
    long n = gx_tzwin_weekly("Europe/Paris", T("2026-10-19T09:00:00+02:00"), T("2026-10-19T17:00:00+02:00"), MON,
                             T("2026-10-01T00:00:00Z"), T("2026-11-03T00:00:00Z"), 100, &o, &err);
    cr_assert_eq(n, 3);
    cr_assert_eq(o[0].start, T("2026-10-19T07:00:00Z"), "CEST: UTC+2");
    cr_assert_eq(o[0].end, T("2026-10-19T15:00:00Z"));
    cr_assert_eq(o[1].start, T("2026-10-26T08:00:00Z"), "CET after 2026-10-25: UTC+1");
    cr_assert_eq(o[1].end, T("2026-10-26T16:00:00Z"));
    cr_assert_eq(o[2].start, T("2026-11-02T08:00:00Z"));
    free(o);
}

Test(tzwin, monday_nine_to_five_across_the_spring_change)
{
    gx_tzwin_occ *o;
    gx_err err;
    long n = gx_tzwin_weekly("Europe/Paris", T("2027-03-22T09:00:00+01:00"), T("2027-03-22T17:00:00+01:00"), MON,
                             T("2027-03-22T00:00:00Z"), T("2027-03-30T00:00:00Z"), 100, &o, &err);
    cr_assert_eq(n, 2);
    cr_assert_eq(o[0].start, T("2027-03-22T08:00:00Z"));
    cr_assert_eq(o[1].start, T("2027-03-29T07:00:00Z"), "CEST after 2027-03-28");
    cr_assert_eq(o[1].end, T("2027-03-29T15:00:00Z"));
    free(o);
}

Test(tzwin, overnight_window_over_the_change_keeps_its_local_hours)
{
    gx_tzwin_occ *o;
    gx_err err;
    unsigned sat = 1u << 6;
    long n = gx_tzwin_weekly("Europe/Paris", T("2026-10-17T22:00:00+02:00"), T("2026-10-18T06:00:00+02:00"), sat,
                             T("2026-10-17T00:00:00Z"), T("2026-10-25T00:00:00Z"), 100, &o, &err);
    cr_assert_eq(n, 2);
    cr_assert_eq(o[0].end - o[0].start, 8 * 3600000LL);
    cr_assert_eq(o[1].start, T("2026-10-24T20:00:00Z"), "Saturday 22:00 CEST");
    cr_assert_eq(o[1].end, T("2026-10-25T05:00:00Z"), "Sunday 06:00 CET: nine hours");
    free(o);
}

Test(tzwin, days_horizon_and_max)
{
    gx_tzwin_occ *o;
    gx_err err;
    unsigned mon_wed = (1u << gx_tzwin_day("Mon")) | (1u << gx_tzwin_day("wed"));
    cr_assert_eq(gx_tzwin_day("Sun"), 0);
    cr_assert_eq(gx_tzwin_day("Funday"), -1);
    /* first start on a Tuesday: only Mondays and Wednesdays from then on */
    long n = gx_tzwin_weekly("UTC", T("2026-12-01T10:00:00Z"), T("2026-12-01T11:00:00Z"), mon_wed,
                             T("2026-12-01T00:00:00Z"), T("2026-12-15T00:00:00Z"), 100, &o, &err);
    cr_assert_eq(n, 4, "Wed 2, Mon 7, Wed 9, Mon 14");
    cr_assert_eq(o[0].start, T("2026-12-02T10:00:00Z"));
    cr_assert_eq(o[3].start, T("2026-12-14T10:00:00Z"));
    free(o);
    n = gx_tzwin_weekly("UTC", T("2026-12-01T10:00:00Z"), T("2026-12-01T11:00:00Z"), mon_wed,
                        T("2026-12-07T10:30:00Z"), T("2026-12-15T00:00:00Z"), 2, &o, &err);
    cr_assert_eq(n, 2, "max");
    cr_assert_eq(o[0].start, T("2026-12-07T10:00:00Z"), "one still running at `from` counts");
    free(o);
}

Test(tzwin, refusals_name_the_field_and_tz_is_restored)
{
    gx_tzwin_occ *o;
    gx_err err;
    setenv("TZ", "Asia/Tokyo", 1);
    cr_assert_eq(gx_tzwin_weekly("Europe/Pariss", 0, 3600000, MON, 0, 86400000LL * 30, 10, &o, &err), -1);
    cr_assert_str_eq(err.field, "spec.recurrence.timeZone");
    cr_assert_eq(gx_tzwin_weekly("../etc/passwd", 0, 3600000, MON, 0, 86400000LL * 30, 10, &o, &err), -1);
    cr_assert_eq(gx_tzwin_weekly("UTC", 0, 3600000, 0, 0, 86400000LL * 30, 10, &o, &err), -1);
    cr_assert_str_eq(err.field, "spec.recurrence.weekly");
    cr_assert_eq(gx_tzwin_weekly("UTC", 3600000, 3600000, MON, 0, 86400000LL * 30, 10, &o, &err), -1);
    cr_assert_str_eq(err.field, "spec.end");
    cr_assert_gt(gx_tzwin_weekly("Europe/Paris", 0, 3600000, MON, 0, 86400000LL * 30, 10, &o, &err), 0);
    free(o);
    cr_assert_str_eq(getenv("TZ"), "Asia/Tokyo");
    unsetenv("TZ");
}

static json_t *J(const char *s)
{
    json_t *j = json_loads(s, 0, NULL);
    cr_assert(j, "%s", s);
    return j;
}

Test(tzwin, reservation_spec_windows_offsets_and_errors)
{
    gx_tzwin_occ *o;
    gx_err err;
    json_t *s = J("{\"start\": \"600s\", \"end\": \"1800\"}");
    cr_assert_eq(gx_tzwin_spec(s, 1, 0, 1000, &o, &err), 1, "offsets in the scenario runner");
    cr_assert_eq(o[0].start, 600000);
    cr_assert_eq(o[0].end, 1800000);
    free(o);
    cr_assert_eq(gx_tzwin_spec(s, 0, 0, 1000, &o, &err), -1, "the daemon wants RFC 3339");
    cr_assert_str_eq(err.field, "spec.start");
    json_decref(s);
    s = J("{\"start\": \"2026-10-19T09:00:00+02:00\", \"end\": \"2026-10-19T17:00:00+02:00\","
          " \"recurrence\": {\"weekly\": [\"Mon\"], \"timeZone\": \"Europe/Paris\"}}");
    cr_assert_eq(gx_tzwin_spec(s, 0, T("2026-10-20T00:00:00Z"), 7 * 86400000LL, &o, &err), 1, "the horizon starts at from");
    cr_assert_eq(o[0].start, T("2026-10-26T08:00:00Z"));
    free(o);
    json_decref(s);
    s = J("{\"start\": \"0s\", \"end\": \"60s\", \"recurrence\": {\"weekly\": [\"Monday\"]}}");
    cr_assert_eq(gx_tzwin_spec(s, 1, 0, 1000, &o, &err), -1);
    cr_assert_str_eq(err.field, "spec.recurrence.weekly");
    json_decref(s);
    s = J("{\"start\": \"0s\"}");
    cr_assert_eq(gx_tzwin_spec(s, 1, 0, 1000, &o, &err), -1);
    cr_assert_str_eq(err.field, "spec.end");
    json_decref(s);
}

/* The portal's calendar: an instant as Paris wall-clock time and back, on both sides of
 * the autumn change; a day's midnight found by normalising "day 32"; unknown zones refused;
 * TZ left as it was. */
Test(tzwin, local_time_both_ways_across_the_autumn_change)
{
    setenv("TZ", "America/New_York", 1);
    struct tm t;
    cr_assert_eq(gx_tzwin_to_local("Europe/Paris", T("2026-10-24T07:00:00Z"), &t), 0);
    cr_assert_eq(t.tm_hour, 9, "CEST: UTC+2");
    cr_assert_eq(t.tm_wday, 6, "a Saturday");
    cr_assert_eq(gx_tzwin_to_local("Europe/Paris", T("2026-10-26T07:00:00Z"), &t), 0);
    cr_assert_eq(t.tm_hour, 8, "CET: UTC+1");
    memset(&t, 0, sizeof t);
    t.tm_year = 126; t.tm_mon = 9; t.tm_mday = 32; t.tm_hour = 0;   /* 32 October: 1 November */
    int64_t ms;
    cr_assert_eq(gx_tzwin_from_local("Europe/Paris", &t, &ms), 0);
    cr_assert_eq(ms, T("2026-10-31T23:00:00Z"));
    cr_assert_eq(t.tm_mon, 10, "normalised in place");
    cr_assert_eq(t.tm_mday, 1);
    cr_assert_eq(gx_tzwin_from_local("Mars/Olympus", &t, &ms), -1);
    cr_assert_eq(gx_tzwin_to_local("../etc/passwd", 0, &t), -1);
    cr_assert_str_eq(getenv("TZ"), "America/New_York", "TZ restored");
    unsetenv("TZ");
}
