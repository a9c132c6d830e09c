/* tzwin: weekly windows in a time zone (see tzwin.h).
 * Owns: the one lock around TZ, and the day-by-day walk of local dates.
 * Must not: read a clock; leave TZ changed (the daemon's other threads format times with
 * gxtime, which never looks at TZ, but a log line through localtime must not move). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include "lib/alloc.h"
#include "lib/gxtime.h"
#include "lib/tzwin.h"

static pthread_mutex_t tz_lock = PTHREAD_MUTEX_INITIALIZER;

int gx_tzwin_day(const char *s)
{
    static const char *const names[7] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
    for (int i = 0; s && i < 7; i++) if (!strcasecmp(s, names[i])) return i;
    return -1;
}

int gx_tzwin_zone_ok(const char *tz)
{
    if (!tz || !*tz || tz[0] == '/' || strstr(tz, "..") || strlen(tz) > 200) return 0;
    for (const char *p = tz; *p; p++)
        if (!(*p == '/' || *p == '_' || *p == '-' || *p == '+' || (*p >= '0' && *p <= '9') || (*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z')))
            return 0;
    const char *dir = getenv("TZDIR");
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir && *dir ? dir : "/usr/share/zoneinfo", tz);
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Floor division: instants before 1970 are negative. */
static time_t secs(int64_t ms) { return (time_t)(ms / 1000 - (ms % 1000 < 0)); }

long gx_tzwin_weekly(const char *tz, int64_t first_start, int64_t first_end, unsigned days,
                     int64_t from, int64_t to, size_t max, gx_tzwin_occ **out, gx_err *err)
{
    *out = NULL;
    if (!gx_tzwin_zone_ok(tz))
        return gx_errf(err, 422, "spec.recurrence.timeZone", "unknown time zone \"%s\" (an IANA name such as Europe/Paris)", tz ? tz : "");
    if (!(days & 0x7f)) return gx_errf(err, 422, "spec.recurrence.weekly", "lists no day (Mon..Sun)");
    if (first_end <= first_start) return gx_errf(err, 422, "spec.end", "must be after spec.start");
    pthread_mutex_lock(&tz_lock);
    char *old = getenv("TZ") ? gx_xstrdup(getenv("TZ")) : NULL;
    setenv("TZ", tz, 1);
    tzset();
    time_t s0 = secs(first_start), e0 = secs(first_end);
    struct tm ls, le;
    localtime_r(&s0, &ls);
    localtime_r(&e0, &le);
    /* local days between start and end: compare the dates at noon UTC of each */
    struct tm a = ls, b = le;
    a.tm_hour = b.tm_hour = 12; a.tm_min = b.tm_min = a.tm_sec = b.tm_sec = 0; a.tm_isdst = b.tm_isdst = -1;
    long span = (long)((mktime(&b) - mktime(&a) + 43200) / 86400);
    size_t n = 0, cap = 0;
    gx_tzwin_occ *v = NULL;
    for (long d = 0; n < max; d++) {
        struct tm st = ls, en = le;
        st.tm_mday += (int)d; st.tm_isdst = -1;
        time_t ts = mktime(&st);                 /* normalises the date and sets tm_wday */
        if ((int64_t)ts * 1000 >= to) break;
        if (!(days & (1u << st.tm_wday))) continue;
        en.tm_year = ls.tm_year; en.tm_mon = ls.tm_mon; en.tm_mday = ls.tm_mday + (int)d + (int)span; en.tm_isdst = -1;
        time_t te = mktime(&en);
        if ((int64_t)te * 1000 <= from) continue;
        v = gx_xgrow(v, &cap, n + 1, sizeof *v);
        v[n++] = (gx_tzwin_occ){(int64_t)ts * 1000 + (first_start - (int64_t)s0 * 1000), (int64_t)te * 1000 + (first_end - (int64_t)e0 * 1000)};
    }
    if (old) setenv("TZ", old, 1); else unsetenv("TZ");
    tzset();
    pthread_mutex_unlock(&tz_lock);
    free(old);
    *out = v;
    return (long)n;
}

static int spec_time(const json_t *spec, const char *k, int allow_offsets, int64_t *ms, gx_err *err)
{
    const char *v = json_string_value(json_object_get(spec, k));
    if (v && gx_time_parse(v, ms) == 0) return 0;
    if (v && allow_offsets) {
        char *end;
        double x = strtod(v, &end);
        if (end != v && !*end && x >= 0) { *ms = (int64_t)(x * 1000.0 + 0.5); return 0; }
        if ((*ms = gx_duration_parse(v)) >= 0) return 0;
    }
    char f[32];
    snprintf(f, sizeof f, "spec.%s", k);
    return gx_errf(err, 422, f, allow_offsets ? "required: RFC 3339 (2026-12-07T09:00:00+01:00) or an offset from the start (600s)"
                                              : "required: RFC 3339 with an offset, e.g. 2026-12-07T09:00:00+01:00");
}

long gx_tzwin_spec(const json_t *spec, int allow_offsets, int64_t from, int64_t horizon, gx_tzwin_occ **out, gx_err *err)
{
    int64_t st, en;
    *out = NULL;
    if (spec_time(spec, "start", allow_offsets, &st, err) < 0 || spec_time(spec, "end", allow_offsets, &en, err) < 0) return -1;
    const json_t *rec = json_object_get(spec, "recurrence");
    if (!rec || json_is_null(rec)) {
        *out = gx_xmalloc(sizeof **out);
        (*out)[0] = (gx_tzwin_occ){st, en};
        return 1;
    }
    const json_t *days = json_object_get(rec, "weekly"), *d;
    unsigned mask = 0;
    size_t i;
    if (!json_is_array(days)) return gx_errf(err, 422, "spec.recurrence.weekly", "a list of days (Mon..Sun) is required");
    json_array_foreach(days, i, d) {
        int wd = gx_tzwin_day(json_string_value(d));
        if (wd < 0) return gx_errf(err, 422, "spec.recurrence.weekly", "not a day: use Mon, Tue, Wed, Thu, Fri, Sat, Sun");
        mask |= 1u << wd;
    }
    const char *tz = json_string_value(json_object_get(rec, "timeZone"));
    return gx_tzwin_weekly(tz ? tz : "UTC", st, en, mask, from, from + horizon, 10000, out, err);
}

/* The portal's week calendar draws days in the viewer's zone, and its booking form reads
 * local wall-clock times: both need the zone's rules under the same lock as above. */
int gx_tzwin_to_local(const char *tz, int64_t ms, struct tm *out)
{
    if (!gx_tzwin_zone_ok(tz)) return -1;
    pthread_mutex_lock(&tz_lock);
    char *old = getenv("TZ") ? gx_xstrdup(getenv("TZ")) : NULL;
    setenv("TZ", tz, 1);
    tzset();
    time_t t = secs(ms);
    localtime_r(&t, out);
    if (old) setenv("TZ", old, 1); else unsetenv("TZ");
    tzset();
    pthread_mutex_unlock(&tz_lock);
    free(old);
    return 0;
}

int gx_tzwin_from_local(const char *tz, struct tm *local, int64_t *ms)
{
    if (!gx_tzwin_zone_ok(tz)) return -1;
    pthread_mutex_lock(&tz_lock);
    char *old = getenv("TZ") ? gx_xstrdup(getenv("TZ")) : NULL;
    setenv("TZ", tz, 1);
    tzset();
    local->tm_isdst = -1;
    time_t t = mktime(local);
    if (old) setenv("TZ", old, 1); else unsetenv("TZ");
    tzset();
    pthread_mutex_unlock(&tz_lock);
    free(old);
    *ms = (int64_t)t * 1000;
    return 0;
}
