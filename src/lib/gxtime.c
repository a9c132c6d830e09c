/* gxtime: RFC 3339 and durations (see gxtime.h).
 * Owns: the calendar arithmetic (Howard Hinnant's days_from_civil / civil_from_days,
 * exact for every proleptic Gregorian date, no tables, no timegm()).
 * Must not: do I/O, read a clock or the environment. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "lib/gxtime.h"

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t days_from_civil(int64_t y, int m, int d)
{
    y -= m <= 2;
    int64_t era = (y >= 0 ? y : y - 399) / 400;
    int64_t yoe = y - era * 400;
    int64_t doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
    int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + doe - 719468;
}

/* The inverse: days since 1970-01-01 to year, month, day. */
static void civil_from_days(int64_t z, int64_t *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = yoe + era * 400 + (*m <= 2);
}

/* Floor division: -1 ms is the last millisecond of the previous second, not this one. */
static int64_t floordiv(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

const char *gx_time_fmt(int64_t ms, char *buf, size_t n)
{
    int64_t s = floordiv(ms, 1000), days = floordiv(s, 86400), rem = s - days * 86400, y;
    int mo, d;
    civil_from_days(days, &y, &mo, &d);
    snprintf(buf, n, "%04" PRId64 "-%02d-%02dT%02d:%02d:%02d.%03dZ", y, mo, d, (int)(rem / 3600),
             (int)(rem / 60 % 60), (int)(rem % 60), (int)(ms - s * 1000));
    return buf;
}

/* Exactly n decimal digits at *p into *out; advances *p. */
static int digits(const char **p, int n, int *out)
{
    int v = 0;
    for (int i = 0; i < n; i++) {
        char c = (*p)[i];
        if (c < '0' || c > '9') return -1;
        v = v * 10 + (c - '0');
    }
    *p += n;
    *out = v;
    return 0;
}

/* One character of set at *p (never the NUL); advances *p. */
static int expect(const char **p, const char *set)
{
    if (!**p || !strchr(set, **p)) return -1;
    (*p)++;
    return 0;
}

static int days_in_month(int y, int m)
{
    static const int dm[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    int leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    return m == 2 ? 28 + leap : dm[m - 1];
}

int gx_time_parse(const char *s, int64_t *ms)
{
    if (!s) return -1;
    const char *p = s;
    int Y, M, D, h, m, sec, frac = 0;
    if (digits(&p, 4, &Y) || expect(&p, "-") || digits(&p, 2, &M) || expect(&p, "-") ||
        digits(&p, 2, &D) || expect(&p, "Tt ") || digits(&p, 2, &h) || expect(&p, ":") ||
        digits(&p, 2, &m) || expect(&p, ":") || digits(&p, 2, &sec))
        return -1;
    /* 60 is a leap second: RFC 3339 allows it, and it reads as the next second. */
    if (M < 1 || M > 12 || D < 1 || D > days_in_month(Y, M) || h > 23 || m > 59 || sec > 60)
        return -1;
    if (*p == '.') {
        p++;
        if (*p < '0' || *p > '9') return -1;
        int nd = 0;
        for (; *p >= '0' && *p <= '9'; p++, nd++)
            if (nd < 3) frac = frac * 10 + (*p - '0');
        for (; nd < 3; nd++) frac *= 10;
    }
    int off = 0;
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if (*p == '+' || *p == '-') {
        int sign = *p++ == '-' ? -1 : 1, oh, om;
        if (digits(&p, 2, &oh) || expect(&p, ":") || digits(&p, 2, &om) || oh > 23 || om > 59)
            return -1;
        off = sign * (oh * 60 + om);
    } else {
        return -1;
    }
    if (*p) return -1;
    int64_t secs = days_from_civil(Y, M, D) * 86400 + h * 3600 + m * 60 + sec - (int64_t)off * 60;
    *ms = secs * 1000 + frac;
    return 0;
}

#define DURATION_MAX_MS (1000LL * 365 * 86400000)

int64_t gx_duration_parse(const char *s)
{
    if (!s || !*s) return -1;
    int64_t total = 0;
    for (const char *p = s; *p;) {
        int64_t whole = 0, frac = 0, scale = 1;
        const char *start = p;
        for (; *p >= '0' && *p <= '9'; p++) {
            whole = whole * 10 + (*p - '0');
            if (whole > DURATION_MAX_MS) return -1;
        }
        if (*p == '.') {
            /* Up to nine fraction digits count; more would overflow nothing but mean nothing. */
            for (p++; *p >= '0' && *p <= '9'; p++)
                if (scale < 1000000000) { frac = frac * 10 + (*p - '0'); scale *= 10; }
        }
        if (p == start || (p - start == 1 && *start == '.')) return -1;
        int64_t mult;
        if (p[0] == 'm' && p[1] == 's') { mult = 1; p += 2; }
        else if (*p == 's') { mult = 1000; p++; }
        else if (*p == 'm') { mult = 60000; p++; }
        else if (*p == 'h') { mult = 3600000; p++; }
        else if (*p == 'd') { mult = 86400000; p++; }
        else return -1;
        if (whole > DURATION_MAX_MS / mult) return -1;
        total += whole * mult + (frac * mult * 2 + scale) / (2 * scale);
        if (total > DURATION_MAX_MS) return -1;
    }
    return total;
}

/* The same cut-offs as k8s.io/apimachinery's duration.HumanDuration, which is what
 * kubectl's AGE column shows: people compare our output with theirs. */
const char *gx_duration_age(int64_t ms, char *buf, size_t n)
{
    int64_t s = ms / 1000;
    if (s < -1) { snprintf(buf, n, "<invalid>"); return buf; }
    if (s < 0) s = 0;
    int64_t mi = s / 60, h = s / 3600, d = h / 24;
    if (s < 120) snprintf(buf, n, "%" PRId64 "s", s);
    else if (mi < 10 && s % 60) snprintf(buf, n, "%" PRId64 "m%" PRId64 "s", mi, s % 60);
    else if (mi < 180) snprintf(buf, n, "%" PRId64 "m", mi);
    else if (h < 8 && mi % 60) snprintf(buf, n, "%" PRId64 "h%" PRId64 "m", h, mi % 60);
    else if (h < 48) snprintf(buf, n, "%" PRId64 "h", h);
    else if (h < 24 * 8 && h % 24) snprintf(buf, n, "%" PRId64 "d%" PRId64 "h", d, h % 24);
    else if (h < 24 * 365 * 2) snprintf(buf, n, "%" PRId64 "d", d);
    else if (h < 24 * 365 * 8 && d % 365) snprintf(buf, n, "%" PRId64 "y%" PRId64 "d", d / 365, d % 365);
    else snprintf(buf, n, "%" PRId64 "y", d / 365);
    return buf;
}

const char *gx_duration_exact(int64_t ms, char *buf, size_t n)
{
    static const struct { int64_t secs; char unit; } parts[] = {{86400, 'd'}, {3600, 'h'}, {60, 'm'}, {1, 's'}};
    int64_t s = ms > 0 ? ms / 1000 : 0;
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < 4; i++) {
        int64_t v = s / parts[i].secs;
        s %= parts[i].secs;
        if (v && o < n) {
            int w = snprintf(buf + o, n - o, "%" PRId64 "%c", v, parts[i].unit);
            if (w > 0) o += (size_t)w;
        }
    }
    if (!o) snprintf(buf, n, "0s");
    return buf;
}

const char *gx_duration_words(int64_t ms, char *buf, size_t n)
{
    int64_t s = ms > 0 ? ms / 1000 : 0;
    if (s < 60) snprintf(buf, n, "%" PRId64 " s", s);
    else if (s < 3600) snprintf(buf, n, "%" PRId64 " min", s / 60);
    else if (s < 86400) snprintf(buf, n, "%" PRId64 " h %" PRId64 " min", s / 3600, s % 3600 / 60);
    else snprintf(buf, n, "%" PRId64 " d %" PRId64 " h", s / 86400, s % 86400 / 3600);
    return buf;
}
