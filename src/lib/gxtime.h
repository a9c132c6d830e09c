/* gxtime: the one home of RFC 3339 timestamps and durations in text.
 * Owns: formatting and parsing "2026-12-01T15:56:48.123Z" (milliseconds since the Unix
 * epoch, UTC, proleptic Gregorian calendar), parsing "1h30m" durations, and the three
 * ways a duration is written for people (kubectl's age, the exact one, the portal's words).
 * Must not: do I/O, read a clock, or depend on the TZ environment or timegm(): src/core
 * uses it, and every machine must give the same answer. Named gxtime, not time, so that
 * it never shadows libc's <time.h>. */
#ifndef GX_GXTIME_H
#define GX_GXTIME_H
#include <stddef.h>
#include <stdint.h>

/* Enough for any int64 millisecond time ("-292278994-08-17T07:12:55.808Z" and NUL). */
#define GX_TIME_LEN 40

/* ms as "YYYY-MM-DDTHH:MM:SS.mmmZ" in buf (cut to n). Times before 1970 round down, so
 * -1 is "1969-12-31T23:59:59.999Z". Returns buf. */
const char *gx_time_fmt(int64_t ms, char *buf, size_t n);

/* RFC 3339: "YYYY-MM-DD" "T" "HH:MM:SS" [".fraction"] ("Z" | "+hh:mm" | "-hh:mm"); 't',
 * 'z' and a space for 'T' are accepted as RFC 3339 allows. Digits past milliseconds are
 * dropped. Returns 0 with *ms set, or -1 (and *ms untouched) on anything else, a date
 * that does not exist included (2026-02-29). */
int gx_time_parse(const char *s, int64_t *ms);

/* A duration as one or more number-unit parts: "30s", "5m", "2h", "7d", "1h30m", "200ms",
 * "1.5s" (units ms, s, m, h, d). Returns milliseconds (rounded to the nearest), or -1 when
 * s is not a duration: NULL, empty, a bare number, a sign, an unknown unit, over 1000 years. */
int64_t gx_duration_parse(const char *s);

/* kubectl's AGE column (k8s.io/apimachinery duration.HumanDuration): "45s", "3m12s",
 * "2h5m", "3d", "2y10d"; "0s" for up to 2 s in the future (clock skew), "<invalid>"
 * beyond. Returns buf. */
const char *gx_duration_age(int64_t ms, char *buf, size_t n);

/* Exact, to the second, for limits: 5400000 -> "1h30m", 90000 -> "1m30s", "1d2h3s";
 * "0s" for zero or less. Returns buf. */
const char *gx_duration_exact(int64_t ms, char *buf, size_t n);

/* In words for a page, two units at most: "45 s", "3 min", "2 h 5 min", "3 d 4 h";
 * "0 s" for zero or less. Returns buf. */
const char *gx_duration_words(int64_t ms, char *buf, size_t n);

#endif
