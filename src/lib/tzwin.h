/* tzwin: a weekly booking window in an IANA time zone, expanded into UTC instants.
 * Owns: turning "Mondays and Wednesdays, 09:00-17:00 Europe/Paris, from this first
 * occurrence" into [start, end) milliseconds since the Unix epoch for a horizon, so that
 * a 09:00-17:00 booking stays 09:00-17:00 local across a daylight-saving change.
 * Must not: read a clock (the horizon comes in); it reads the tz database through libc
 * (TZ + tzset + mktime/localtime_r, serialised by one lock, TZ restored afterwards), so
 * src/core never has to: core gets the instants. */
#ifndef GX_TZWIN_H
#define GX_TZWIN_H
#include <stddef.h>
#include <stdint.h>
#include "lib/err.h"

typedef struct gx_tzwin_occ { int64_t start, end; } gx_tzwin_occ;   /* [start, end) ms UTC */

/* "Sun".."Sat" (also "Mon" etc. in any case) -> 0..6 as struct tm's tm_wday; -1 otherwise. */
int gx_tzwin_day(const char *s);

/* Is tz a zone in the tz database ("Europe/Paris", "UTC")? glibc quietly treats an unknown
 * TZ as UTC, so a typo would move every booking: this looks the name up first. */
int gx_tzwin_zone_ok(const char *tz);

/* Occurrences of a weekly window. first_start/first_end: the first occurrence (UTC ms);
 * their local times of day in tz, and the number of local days between them, are the
 * window's shape. days: bit d set for tm_wday d. Occurrences fall on the listed days on
 * or after the local date of first_start; those overlapping [from, to) are returned in
 * *out (malloc'd, free() it), in time order, at most max. A local time that does not
 * exist (skipped by a spring-forward change) is read as mktime does (moved forward by
 * the gap). Returns their count, or -1 with err naming the field ("spec.recurrence.timeZone",
 * "spec.recurrence.weekly", "spec.end"). */
long gx_tzwin_weekly(const char *tz, int64_t first_start, int64_t first_end, unsigned days,
                     int64_t from, int64_t to, size_t max, gx_tzwin_occ **out, gx_err *err);

/* The occurrences of a Reservation's spec (start, end: RFC 3339, or with allow_offsets
 * also an offset from 0 such as "600s" for the scenario runner; recurrence {weekly: [Mon..],
 * timeZone}, UTC when absent) that overlap [from, from + horizon): one window without a
 * recurrence (returned whatever from is). *out malloc'd; count, or -1 with err naming the
 * field. */
#include <jansson.h>
long gx_tzwin_spec(const json_t *spec, int allow_offsets, int64_t from, int64_t horizon, gx_tzwin_occ **out, gx_err *err);

/* An instant as the local broken-down time in tz (tm_wday set): 0, or -1 for an unknown zone. */
#include <time.h>
int gx_tzwin_to_local(const char *tz, int64_t ms, struct tm *out);
/* A local wall-clock time in tz (normalised in place, as mktime does: a day 32 is the next
 * month's first; a time skipped by a spring-forward change moves forward) as ms UTC in *ms:
 * 0, or -1 for an unknown zone. */
int gx_tzwin_from_local(const char *tz, struct tm *local, int64_t *ms);

#endif
