/* quantity: Kubernetes resource quantities as int64 milli-units.
 * Owns: parsing ("500m", "1.5", "36Gi", "1e3", "100M") and canonical formatting.
 * Must not: allocate, do I/O, or round silently (precision below 1m is an error,
 * unlike Kubernetes, so that a typo like "0.0001" is reported instead of becoming 1m). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "core/quantity.h"

typedef __int128 i128;
#define MILLI_MAX ((i128)INT64_MAX)

/* Multiplier of a suffix as num/den units (den is a power of ten for n, u, m). */
static int suffix_mult(const char *s, i128 *num, i128 *den)
{
    static const struct { const char *s; int64_t num, den; } tab[] = {
        {"", 1, 1}, {"n", 1, 1000000000}, {"u", 1, 1000000}, {"m", 1, 1000},
        {"k", 1000, 1}, {"M", 1000000, 1}, {"G", 1000000000, 1},
        {"T", 1000000000000LL, 1}, {"P", 1000000000000000LL, 1}, {"E", 1000000000000000000LL, 1},
        {"Ki", 1LL << 10, 1}, {"Mi", 1LL << 20, 1}, {"Gi", 1LL << 30, 1},
        {"Ti", 1LL << 40, 1}, {"Pi", 1LL << 50, 1}, {"Ei", 1LL << 60, 1},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcmp(s, tab[i].s)) { *num = tab[i].num; *den = tab[i].den; return 0; }
    if (s[0] == 'e' || s[0] == 'E') {           /* decimal exponent: 1e3, 5E-2 */
        const char *p = s + 1;
        int neg = 0;
        if (*p == '+' || *p == '-') neg = (*p++ == '-');
        if (!*p) return -1;
        int ex = 0;
        for (; *p; p++) {
            if (*p < '0' || *p > '9' || ex > 30) return -1;
            ex = ex * 10 + (*p - '0');
        }
        if (ex > 18) return -1;
        i128 pw = 1;
        for (int i = 0; i < ex; i++) pw *= 10;
        if (neg) { *num = 1; *den = pw; } else { *num = pw; *den = 1; }
        return 0;
    }
    return -1;
}

int gx_quantity_parse(const char *s, int64_t *milli, const char *field, gx_err *err)
{
    if (!s || !*s) return gx_errf(err, 422, field, "empty quantity");
    const char *p = s;
    if (*p == '-') return gx_errf(err, 422, field, "quantity \"%s\" is negative", s);
    if (*p == '+') p++;
    i128 mant = 0, scale = 1;
    int digits = 0, frac = 0;
    for (; (*p >= '0' && *p <= '9') || (*p == '.' && !frac); p++) {
        if (*p == '.') { frac = 1; continue; }
        if (mant > (i128)1 << 100) return gx_errf(err, 422, field, "quantity \"%s\" is too large", s);
        if (scale > (i128)1 << 120) return gx_errf(err, 422, field, "quantity \"%s\" has too many digits after the point", s);
        mant = mant * 10 + (*p - '0');
        if (frac) scale *= 10;
        digits++;
    }
    if (!digits)
        return gx_errf(err, 422, field, "quantity \"%s\" is not a number (expected e.g. \"2\", \"500m\", \"16Gi\")", s);
    i128 num, den;
    if (suffix_mult(p, &num, &den) < 0)
        return gx_errf(err, 422, field, "quantity \"%s\" has an unknown suffix \"%s\" (use m, k, M, G, Ki, Mi, Gi, ...)", s, p);
    /* milli = mant * num * 1000 / (scale * den), exactly. mant * num > MILLI_MAX * 1000 is
     * asked by division: the product itself may not fit even in 128 bits ("9...9Ei"). */
    if (mant > MILLI_MAX * 1000 / num) return gx_errf(err, 422, field, "quantity \"%s\" is too large", s);
    i128 top = mant * num * 1000;
    /* scale * den past 2^120 (it may not fit either) is more than any top (< 2^84): 0, or finer than 1m */
    if (scale > ((i128)1 << 120) / den) {
        if (top) return gx_errf(err, 422, field, "quantity \"%s\" is finer than 1m (one thousandth)", s);
        *milli = 0;
        return 0;
    }
    i128 bot = scale * den;
    if (top % bot) return gx_errf(err, 422, field, "quantity \"%s\" is finer than 1m (one thousandth)", s);
    i128 v = top / bot;
    if (v > MILLI_MAX) return gx_errf(err, 422, field, "quantity \"%s\" is too large", s);
    *milli = (int64_t)v;
    return 0;
}

int gx_quantity_from_json(const json_t *v, int64_t *milli, const char *field, gx_err *err)
{
    if (json_is_string(v)) return gx_quantity_parse(json_string_value(v), milli, field, err);
    if (json_is_integer(v)) {
        json_int_t i = json_integer_value(v);
        if (i < 0) return gx_errf(err, 422, field, "quantity %lld is negative", (long long)i);
        if (i > INT64_MAX / 1000) return gx_errf(err, 422, field, "quantity %lld is too large", (long long)i);
        *milli = (int64_t)i * 1000;
        return 0;
    }
    if (json_is_real(v)) {
        char buf[64];
        snprintf(buf, sizeof buf, "%.6f", json_real_value(v));
        /* trim trailing zeros so 1.5 -> "1.5" and exactness is judged on real digits */
        size_t n = strlen(buf);
        while (n > 0 && buf[n - 1] == '0') buf[--n] = 0;
        if (n > 0 && buf[n - 1] == '.') buf[--n] = 0;
        return gx_quantity_parse(buf, milli, field, err);
    }
    return gx_errf(err, 422, field, "quantity must be a string or a number");
}

const char *gx_quantity_format(int64_t milli, char *buf, size_t n)
{
    if (milli % 1000) {
        snprintf(buf, n, "%" PRId64 "m", milli);
        return buf;
    }
    int64_t u = milli / 1000;
    static const char *bin[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    int k = 0;
    if (u >= (1LL << 20)) {
        while (k < 6 && u % 1024 == 0 && u != 0) { u /= 1024; k++; }
    }
    snprintf(buf, n, "%" PRId64 "%s", u, bin[k]);
    return buf;
}
