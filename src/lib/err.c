/* err: filling and printing gx_err. No allocation, never fails. */
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

void gx_err_prefix(gx_err *e, const char *prefix)
{
    if (!e || !prefix || !*prefix) return;
    char tmp[sizeof e->field];
    if (!e->field[0])
        snprintf(tmp, sizeof tmp, "%s", prefix);
    else if (e->field[0] == '[')
        snprintf(tmp, sizeof tmp, "%s%s", prefix, e->field);
    else
        snprintf(tmp, sizeof tmp, "%s.%s", prefix, e->field);
    memcpy(e->field, tmp, sizeof tmp);
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
