/* err: filling and printing gx_err. No allocation, never fails. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "lib/err.h"

void gx_err_clear(gx_err *e)
{
    if (!e) return;
    e->status = 0;
    e->line = 0;
    e->doc = -1;
    e->field[0] = 0;
    e->msg[0] = 0;
}

int gx_errf(gx_err *e, int status, const char *field, const char *fmt, ...)
{
    if (!e) return -1;
    e->status = status;
    e->line = 0;
    e->doc = -1;
    snprintf(e->field, sizeof e->field, "%s", field ? field : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    return -1;
}

/* Copy s into out (n bytes); when it does not fit, its start gives way to "..." (the end
 * of a field path or a location says most), so a cut always shows. */
static void put_tail(char *out, size_t n, const char *s)
{
    size_t l = strlen(s);
    if (l < n) { memcpy(out, s, l + 1); return; }
    size_t keep = n - 4;
    memcpy(out, "...", 3);
    memcpy(out + 3, s + l - keep, keep + 1);
}

void gx_err_prefix(gx_err *e, const char *prefix)
{
    if (!e || !prefix || !*prefix) return;
    char tmp[sizeof e->field * 2];
    const char *sep = !e->field[0] || e->field[0] == '[' ? "" : ".";
    int w = snprintf(tmp, sizeof tmp, "%s%s%s", prefix, sep, e->field);
    if (w < 0) return;
    if ((size_t)w >= sizeof tmp) {   /* an absurd prefix: keep the field as it was */
        put_tail(tmp, sizeof tmp, e->field);
    }
    put_tail(e->field, sizeof e->field, tmp);
}

void gx_err_wrap(gx_err *e, const char *fmt, ...)
{
    if (!e) return;
    char where[sizeof e->msg + 4096];   /* a whole path and then some */
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(where, sizeof where, fmt, ap);
    va_end(ap);
    if (w < 0) return;
    if ((size_t)w >= sizeof where) memcpy(where + sizeof where - 4, "...", 3);   /* its end was cut: say so */
    size_t ml = strlen(e->msg), room = sizeof e->msg - 1 - ml;
    if (room < 8) return;   /* the message fills it: it goes alone */
    char cut[sizeof e->msg];
    put_tail(cut, room - 1, where);   /* at most room - 2 characters, then ": " */
    size_t wl = strlen(cut);
    memmove(e->msg + wl + 2, e->msg, ml + 1);
    memcpy(e->msg, cut, wl);
    memcpy(e->msg + wl, ": ", 2);
}

const char *gx_err_path(char *buf, size_t n, const char *parent, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf, n, fmt, ap);
    va_end(ap);
    return w >= 0 && (size_t)w < n ? buf : parent;
}

const char *gx_err_str(const gx_err *e, const char *file, char *buf, unsigned n)
{
    char where[256] = "";
    size_t w = 0;
    if (file && *file) w += (size_t)snprintf(where + w, sizeof where - w, "%s:", file);
    if (e->line > 0 && w < sizeof where) w += (size_t)snprintf(where + w, sizeof where - w, "%d:", e->line);
    if (e->field[0] && w < sizeof where) w += (size_t)snprintf(where + w, sizeof where - w, " %s:", e->field);
    snprintf(buf, n, "%s%s%s", where, w ? " " : "", e->msg);
    return buf;
}
