/* pages_calendar: "Bookings" (GET /ui/reservations?week=YYYY-MM-DD&class=FLAVOR&tz=ZONE): a
 * week of GPU bookings of one GPU class, Monday to Sunday in the viewer's time zone,
 * drawn as SVG (no script), with the free GPUs per hour, the list of the week's bookings
 * (cancel on one's own), and the booking form (POST /ui/reservations; a refusal shows
 * the conflicts and the free windows the daemon offers, as links that fill the form).
 * Owns: turning form fields (local wall-clock times in a zone) into a Reservation
 * document, and the daemon's answers into this page.
 * Must not: decide whether a booking fits (gx_d_reserve does), or show the owner of a
 * booking the daemon did not name (other teams' bookings come without one). */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/alloc.h"
#include "lib/gxtime.h"
#include "lib/tzwin.h"
#include "portal/portal_int.h"

#define DAY_MS (24LL * 3600 * 1000)
#define GUT 44      /* the hour labels' gutter */
#define COLW 120    /* one day */
#define FREEW 16    /* the free-GPU strip at a day's left */
#define HEADH 34
#define HOURH 18

static const char *const DAYS[7] = {"Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"};

/* One request's view: the zone, the week's days (their starts in UTC, 8 bounds) and
 * the class shown. */
typedef struct cal {
    char tz[128];
    int64_t day[8];
    char monday[16], today[16];
    char cls[128];
} cal;

/* A form value: the POSTed form's, else the query's (links that prefill the form). */
static const char *val(gx_portal_ctx *c, const char *k)
{
    if (c->form) return gx_portal_form_get(c->form, k);
    const char *v = gx_req_query(c->req, k);
    return v ? v : "";
}

static const char *local_fmt(const char *tz, int64_t ms, const char *fmt, char *buf, size_t n)
{
    struct tm t;
    buf[0] = 0;
    if (!gx_tzwin_to_local(tz, ms, &t)) strftime(buf, n, fmt, &t);
    return buf;
}

/* The zone: ?tz= (a posted form's tz), else the gx_tz cookie, else UTC; a valid ?tz= is remembered in the cookie. */
static void pick_tz(gx_portal_ctx *c, char *tz, size_t n)
{
    /* a posted form is answered in its own zone: its times and the free windows offered */
    const char *q = c->form ? gx_portal_form_get(c->form, "tz") : gx_req_query(c->req, "tz");
    char ck[128];
    if (q && gx_tzwin_zone_ok(q) && strlen(q) < n) {
        snprintf(tz, n, "%s", q);
        char h[200];
        snprintf(h, sizeof h, "gx_tz=%s; Path=/ui; SameSite=Lax", q);
        gx_resp_header(c->resp, "Set-Cookie", h);
    } else if (gx_portal_cookie(c->req, "gx_tz", ck, sizeof ck) && gx_tzwin_zone_ok(ck)) {
        snprintf(tz, n, "%s", ck);
    } else {
        snprintf(tz, n, "UTC");
    }
}

/* Monday 00:00 of the week holding ?week= (a local date; today when absent or not a date),
 * and the next 7 midnights: days of 23 or 25 hours across a daylight-saving change. */
static void pick_week(gx_portal_ctx *c, cal *w)
{
    struct tm t;
    int y, m, d;
    /* a posted form shows the week of the start it asked for (else of the page it came from) */
    const char *q = c->form ? gx_portal_form_get(c->form, *gx_portal_form_get(c->form, "start") ? "start" : "week")
                            : gx_req_query(c->req, "week");
    gx_tzwin_to_local(w->tz, c->now, &t);
    strftime(w->today, sizeof w->today, "%Y-%m-%d", &t);
    if (q && sscanf(q, "%4d-%2d-%2d", &y, &m, &d) == 3 && y > 1970 && y < 3000 && m >= 1 && m <= 12 && d >= 1 && d <= 31) {
        memset(&t, 0, sizeof t);
        t.tm_year = y - 1900; t.tm_mon = m - 1; t.tm_mday = d;
    }
    t.tm_hour = 12; t.tm_min = t.tm_sec = 0;
    int64_t ms;
    gx_tzwin_from_local(w->tz, &t, &ms);   /* normalises t and sets tm_wday */
    int back = (t.tm_wday + 6) % 7;
    for (int i = 0; i < 8; i++) {
        struct tm x = t;
        x.tm_mday += i - back; x.tm_hour = 0;
        gx_tzwin_from_local(w->tz, &x, &w->day[i]);
        if (!i) strftime(w->monday, sizeof w->monday, "%Y-%m-%d", &x);
    }
}

/* The Monday a week away from w's (delta -1 or +1) as YYYY-MM-DD. */
static const char *week_from(const cal *w, int delta, char *buf, size_t n)
{
    return local_fmt(w->tz, w->day[0] + delta * 7 * DAY_MS + 12 * 3600 * 1000, "%Y-%m-%d", buf, n);
}

static int64_t ms_of(const json_t *v)
{
    int64_t ms = 0;
    gx_time_parse(json_string_value(v) ?: "", &ms);
    return ms;
}

/* GPUs of class a booking holds (0: none of this class). */
static long gpus_of(const json_t *item, const char *cls)
{
    long q = 0;
    size_t i;
    const json_t *r;
    json_array_foreach(json_object_get(item, "resources"), i, r)
        if (!strcmp(json_string_value(json_object_get(r, "flavor")) ?: "", cls) &&
            !strcmp(json_string_value(json_object_get(r, "name")) ?: "", "nvidia.com/gpu"))
            q += (long)(json_number_value(json_object_get(r, "quantity")) + 0.5);   /* a number: 1 or 1.0 */
    return q;
}

/* A Released or Ended occurrence no longer holds its GPUs. */
static int holds(const char *phase) { return strcmp(phase, "Released") && strcmp(phase, "Ended"); }

static const char *owner(const json_t *item, char *buf, size_t n)
{
    const char *ns = json_string_value(json_object_get(item, "namespace"));
    const char *nm = json_string_value(json_object_get(item, "name"));
    if (!ns || !nm) return "";
    snprintf(buf, n, "%s/%s", ns, nm);
    return buf;
}

/* The class's capacity: the nominal GPUs of every ClusterQueue that has it, summed; "(team-a 1,
 * team-b 1)" into per. */
static long nominal(const json_t *res, const char *cls, gx_sbuf *per)
{
    long n = 0;
    size_t i;
    const json_t *x;
    json_array_foreach(json_object_get(res, "capacity"), i, x)
        if (!strcmp(json_string_value(json_object_get(x, "flavor")) ?: "", cls) &&
            !strcmp(json_string_value(json_object_get(x, "resource")) ?: "", "nvidia.com/gpu"))
        {
            n += (long)(json_number_value(json_object_get(x, "nominal")) + 0.5);
            gx_portal_putf(per, "%s%H %lld", per->n ? ", " : "(", json_string_value(json_object_get(x, "clusterQueue")),
                           (long long)(json_number_value(json_object_get(x, "nominal")) + 0.5));
        }
    if (per->n) gx_sbuf_puts(per, ")");
    return n;
}

/* The GPU classes to switch between: the capacity's flavors of GPUs, in its order. */
static json_t *classes(const json_t *res)
{
    json_t *out = json_array();
    size_t i, k;
    const json_t *x, *y;
    json_array_foreach(json_object_get(res, "capacity"), i, x) {
        const json_t *f = json_object_get(x, "flavor");
        if (strcmp(json_string_value(json_object_get(x, "resource")) ?: "", "nvidia.com/gpu")) continue;
        int dup = 0;
        json_array_foreach(out, k, y) dup |= json_equal(y, f);
        if (!dup) json_array_append(out, (json_t *)f);
    }
    return out;
}

/* The week as SVG: hour lines, per day a strip with the GPUs still free in each hour (a
 * number, and its title in words), and the bookings as blocks that say their GPUs, owner
 * (when shown) and phase in text; the phase also styles the block. */
static void chart(gx_sbuf *b, const cal *w, const json_t *items, long nom)
{
    int H = HEADH + 24 * HOURH, W = GUT + 7 * COLW;
    gx_portal_putf(b, "<figure id=\"cal-chart\"><svg class=\"cal\" viewBox=\"0 0 %d %d\" role=\"img\" "
                      "aria-label=\"Bookings of the week, by day and hour\">", W, H + 2);
    for (int h = 0; h <= 24; h += 3)
        gx_portal_putf(b, "<text class=\"hour\" x=\"2\" y=\"%d\">%02d:00</text><line class=\"hl\" x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\"/>",
                       HEADH + h * HOURH + 4, h % 24, GUT, W, HEADH + h * HOURH, HEADH + h * HOURH);
    for (int d = 0; d < 7; d++) {
        char date[16], lbl[32];
        local_fmt(w->tz, w->day[d] + 12 * 3600 * 1000, "%Y-%m-%d", date, sizeof date);
        local_fmt(w->tz, w->day[d] + 12 * 3600 * 1000, "%d %b", lbl, sizeof lbl);
        int today = !strcmp(date, w->today), x0 = GUT + d * COLW;
        gx_portal_putf(b, "<g class=\"day%s\" data-date=\"%H\"><rect class=\"dayb\" x=\"%d\" y=\"0\" width=\"%d\" height=\"%d\"/>"
                          "<text class=\"dayh\" x=\"%d\" y=\"14\">%s %H</text><text class=\"dayh\" x=\"%d\" y=\"28\">%s</text>",
                       today ? " today" : "", date, x0, COLW, H, x0 + 4, DAYS[d], lbl, x0 + 4, today ? "today" : "");
        double span = (double)(w->day[d + 1] - w->day[d]);
        for (int h = 0; h < 24; h++) {
            int64_t a = w->day[d] + (int64_t)(span * h / 24), z = w->day[d] + (int64_t)(span * (h + 1) / 24);
            long used = 0;
            size_t i, k;
            const json_t *it, *o;
            json_array_foreach(items, i, it) json_array_foreach(json_object_get(it, "occurrences"), k, o)
                if (holds(json_string_value(json_object_get(o, "phase")) ?: "") && ms_of(json_object_get(o, "start")) < z &&
                    ms_of(json_object_get(o, "end")) > a)
                    used += gpus_of(it, w->cls);
            long fr = nom - used < 0 ? 0 : nom - used;
            gx_portal_putf(b, "<g class=\"free %s\"><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"><title>%s %02d:00: %ld of %ld "
                              "GPUs free</title></rect><text x=\"%d\" y=\"%d\">%ld</text></g>",
                           fr == 0 ? "free-none" : fr < nom ? "free-some" : "free-all", x0, HEADH + h * HOURH, FREEW, HOURH, DAYS[d],
                           h, fr, nom, x0 + 4, HEADH + h * HOURH + 13, fr);
        }
        gx_sbuf_puts(b, "</g>");
    }
    /* blocks: each occurrence cut to each day it touches, side by side in lanes */
    for (int d = 0; d < 7; d++) {
        int64_t lane_end[4] = {0, 0, 0, 0};
        double span = (double)(w->day[d + 1] - w->day[d]);
        size_t i, k;
        const json_t *it, *o;
        json_array_foreach(items, i, it) json_array_foreach(json_object_get(it, "occurrences"), k, o) {
            int64_t s = ms_of(json_object_get(o, "start")), e = ms_of(json_object_get(o, "end"));
            if (e <= w->day[d] || s >= w->day[d + 1]) continue;
            int64_t cs = s < w->day[d] ? w->day[d] : s, ce = e > w->day[d + 1] ? w->day[d + 1] : e;
            int lane = 0;
            while (lane < 3 && lane_end[lane] > cs) lane++;
            lane_end[lane] = ce;
            double y = HEADH + 24.0 * HOURH * (double)(cs - w->day[d]) / span;
            double hgt = 24.0 * HOURH * (double)(ce - cs) / span;
            double lw = (COLW - FREEW - 4) / 2.0, x = GUT + d * COLW + FREEW + 2 + (lane % 2) * lw;
            const char *ph = json_string_value(json_object_get(o, "phase")) ?: "Upcoming";
            char who[300];
            const char *ow = owner(it, who, sizeof who);
            long q = gpus_of(it, w->cls);
            gx_portal_putf(b, "<g class=\"blk ph-%H\" data-name=\"%H\" data-phase=\"%H\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                              "height=\"%.1f\" rx=\"2\"><title>%ld GPU%s · %H · %H</title></rect>"
                              "<text x=\"%.1f\" y=\"%.1f\">%ld · %H</text><text x=\"%.1f\" y=\"%.1f\">%H</text></g>",
                           ph, ow, ph, x, y, lw - 1, hgt < 3 ? 3 : hgt, q, q == 1 ? "" : "s", *ow ? ow : "another team's booking", ph,
                           x + 2, y + 11, q, ph, x + 2, y + 22, *ow ? ow : "booked");
        }
    }
    gx_sbuf_puts(b, "</svg><figcaption>Each day's left strip: GPUs of this class still free in that hour. Blocks: bookings "
                    "(GPUs · phase, owner where it is one of your namespaces).</figcaption></figure>");
}

/* The week's bookings in words, with Cancel on the viewer's own. */
static void list(gx_portal_ctx *c, gx_sbuf *b, const cal *w, const json_t *items)
{
    gx_sbuf_puts(b, "<h2>Bookings this week</h2>");
    if (!json_array_size(items)) { gx_sbuf_puts(b, "<p class=\"empty\" id=\"cal-empty\">No booking of this class this week.</p>"); return; }
    gx_sbuf_puts(b, "<ul class=\"cal-list\" id=\"cal-list\">");
    size_t i, k;
    const json_t *it, *o;
    json_array_foreach(items, i, it) {
        char who[300], s1[40], s2[40];
        const char *ow = owner(it, who, sizeof who);
        json_array_foreach(json_object_get(it, "occurrences"), k, o) {
            if (ms_of(json_object_get(o, "end")) <= w->day[0] || ms_of(json_object_get(o, "start")) >= w->day[7]) continue;
            const char *ph = json_string_value(json_object_get(o, "phase")) ?: "Upcoming";
            long q = gpus_of(it, w->cls);
            gx_portal_putf(b, "<li data-name=\"%H\" data-phase=\"%H\"><span class=\"ph ph-%H\">%H</span> %H – %H · %ld GPU%s · %H · "
                              "queue %H",
                           ow, ph, ph, ph, local_fmt(w->tz, ms_of(json_object_get(o, "start")), "%a %d %b %H:%M", s1, sizeof s1),
                           local_fmt(w->tz, ms_of(json_object_get(o, "end")), "%a %d %b %H:%M", s2, sizeof s2), q, q == 1 ? "" : "s",
                           *ow ? ow : "another team's booking", json_string_value(json_object_get(it, "clusterQueue")));
            if (json_is_object(json_object_get(it, "recurrence"))) gx_sbuf_puts(b, " · weekly");
            if (*ow && gx_user_in_ns(c->user, json_string_value(json_object_get(it, "namespace")))) {
                gx_portal_putf(b, " <form method=\"post\" action=\"/ui/reservations/%U/%U/cancel\" class=\"inline\">",
                               json_string_value(json_object_get(it, "namespace")), json_string_value(json_object_get(it, "name")));
                gx_portal_csrf_field(c, b);
                gx_portal_putf(b, "<input type=\"hidden\" name=\"week\" value=\"%H\">", w->monday);
                gx_portal_putf(b, "<button type=\"submit\" class=\"link\" aria-label=\"Cancel booking %H\">Cancel</button></form>", ow);
            }
            gx_sbuf_puts(b, "</li>");
            break;   /* one line per booking; the chart shows each occurrence */
        }
    }
    gx_sbuf_puts(b, "</ul>");
}

/* A link that fills the form with a window the daemon offered (and the rest as sent). */
static void alt_link(gx_portal_ctx *c, gx_sbuf *b, const cal *w, const json_t *alt)
{
    char s[24], e[24], wk[16], s1[40], s2[40];
    int64_t a = ms_of(json_object_get(alt, "start")), z = ms_of(json_object_get(alt, "end"));
    local_fmt(w->tz, a, "%Y-%m-%dT%H:%M", s, sizeof s);
    local_fmt(w->tz, z, "%Y-%m-%dT%H:%M", e, sizeof e);
    gx_portal_putf(b, "<li><a class=\"button alt\" href=\"/ui/reservations?week=%U&amp;class=%U&amp;tz=%U&amp;namespace=%U&amp;"
                      "clusterQueue=%U&amp;gpus=%U&amp;start=%U&amp;end=%U&amp;leadTime=%U&amp;noShowTimeout=%U#book\">"
                      "Use %H – %H</a></li>",
                   local_fmt(w->tz, a, "%Y-%m-%d", wk, sizeof wk), val(c, "class"), w->tz, val(c, "namespace"),
                   val(c, "clusterQueue"), val(c, "gpus"), s, e, val(c, "leadTime"), val(c, "noShowTimeout"),
                   local_fmt(w->tz, a, "%a %d %b %H:%M", s1, sizeof s1), local_fmt(w->tz, z, "%a %d %b %H:%M", s2, sizeof s2));
}

static void refused(gx_portal_ctx *c, gx_sbuf *b, const cal *w, const json_t *ref)
{
    gx_sbuf_puts(b, "<section id=\"conflicts\" class=\"notice-box\" role=\"alert\"><h2>That window is taken</h2><ul>");
    size_t i;
    const json_t *x;
    json_array_foreach(json_object_get(ref, "conflicts"), i, x) {
        char s1[40], s2[40], who[300];
        const char *ow = owner(x, who, sizeof who);
        gx_portal_putf(b, "<li>%H – %H: %H</li>", local_fmt(w->tz, ms_of(json_object_get(x, "start")), "%a %d %b %H:%M", s1, sizeof s1),
                       local_fmt(w->tz, ms_of(json_object_get(x, "end")), "%a %d %b %H:%M", s2, sizeof s2),
                       *ow ? ow : "another team's booking");
    }
    gx_sbuf_puts(b, "</ul>");
    if (json_array_size(json_object_get(ref, "alternatives"))) {
        gx_sbuf_puts(b, "<p>Free windows of the same length:</p><ul class=\"alts\" id=\"alternatives\">");
        json_array_foreach(json_object_get(ref, "alternatives"), i, x) alt_link(c, b, w, x);
        gx_sbuf_puts(b, "</ul>");
    }
    gx_sbuf_puts(b, "</section>");
}

/* One field of the form, its error (when err names it) next to it. */
static void input(gx_sbuf *b, const char *name, const char *label, const char *type, const char *cur, const char *help,
                  const gx_err *err, const char *extra)
{
    int bad = err && !strcmp(err->field, name);
    gx_portal_putf(b, "<div class=\"field%s\"><label for=\"f-%H\">%H</label><input type=\"%s\" id=\"f-%H\" name=\"%H\" value=\"%H\" "
                      "aria-describedby=\"h-%H\"%s><p class=\"help\" id=\"h-%H\">%H</p>",
                   bad ? " invalid" : "", name, label, type, name, name, cur, name, extra, name, help);
    if (bad) gx_portal_putf(b, "<p class=\"field-error\" role=\"alert\">%H</p>", err->msg);
    gx_sbuf_puts(b, "</div>");
}

static void select_of(gx_sbuf *b, const char *name, const char *label, const json_t *opts, const char *cur, const gx_err *err)
{
    int bad = err && !strcmp(err->field, name);
    gx_portal_putf(b, "<div class=\"field%s\"><label for=\"f-%H\">%H</label><select id=\"f-%H\" name=\"%H\">", bad ? " invalid" : "",
                   name, label, name, name);
    size_t i;
    const json_t *x;
    json_array_foreach(opts, i, x) {
        const char *v = json_string_value(x);
        gx_portal_putf(b, "<option%s>%H</option>", v && !strcmp(v, cur) ? " selected" : "", v);
    }
    gx_sbuf_puts(b, "</select>");
    if (bad) gx_portal_putf(b, "<p class=\"field-error\" role=\"alert\">%H</p>", err->msg);
    gx_sbuf_puts(b, "</div>");
}

/* Is f one of the form's fields (its error is then shown next to it)? */
static int is_field(const char *f)
{
    static const char *const F[] = {"namespace", "name", "clusterQueue", "class", "gpus", "start", "end", "tz", "weekly",
                                    "leadTime", "noShowTimeout", NULL};
    for (int i = 0; F[i]; i++) if (!strcmp(f, F[i])) return 1;
    return 0;
}

static void form(gx_portal_ctx *c, gx_sbuf *b, const cal *w, const json_t *res, const json_t *cls, const gx_err *err)
{
    gx_sbuf_puts(b, "<h2 id=\"book-h\">Book GPUs</h2>");
    if (err && err->msg[0] && is_field(err->field)) gx_sbuf_puts(b, "<p class=\"error\" role=\"alert\">Please correct the marked field.</p>");
    else if (err && err->msg[0]) gx_portal_putf(b, "<p class=\"error\" role=\"alert\" id=\"book-error\">%H</p>", err->msg);
    gx_sbuf_puts(b, "<form method=\"post\" action=\"/ui/reservations\" class=\"stack\" id=\"book\" aria-labelledby=\"book-h\">");
    gx_portal_csrf_field(c, b);
    gx_portal_putf(b, "<input type=\"hidden\" name=\"week\" value=\"%H\">", w->monday);
    json_t *cqs = json_array();
    size_t i, k;
    const json_t *x, *y;
    json_array_foreach(json_object_get(res, "capacity"), i, x) {
        int dup = 0;
        json_array_foreach(cqs, k, y) dup |= json_equal(y, json_object_get(x, "clusterQueue"));
        if (!dup) json_array_append(cqs, json_object_get(x, "clusterQueue"));
    }
    select_of(b, "namespace", "Namespace (the owner)", c->user->namespaces, val(c, "namespace"), err);
    input(b, "name", "Name", "text", val(c, "name"), "Optional: a name is made up when left empty.", err, " maxlength=\"63\"");
    select_of(b, "clusterQueue", "ClusterQueue (whose workloads use it)", cqs, val(c, "clusterQueue"), err);
    select_of(b, "class", "GPU class", cls, *val(c, "class") ? val(c, "class") : w->cls, err);
    input(b, "gpus", "GPUs", "number", *val(c, "gpus") ? val(c, "gpus") : "1", "", err, " min=\"1\" step=\"1\" required");
    input(b, "start", "Start", "datetime-local", val(c, "start"), "In the time zone below.", err, " required");
    input(b, "end", "End", "datetime-local", val(c, "end"), "", err, " required");
    input(b, "tz", "Time zone", "text", *val(c, "tz") && c->form ? val(c, "tz") : w->tz, "An IANA name: UTC, Europe/Paris...", err, "");
    gx_portal_putf(b, "<fieldset class=\"field%s\"><legend>Repeat weekly on (optional)</legend>",
                   err && !strcmp(err->field, "weekly") ? " invalid" : "");
    char days[64] = "";
    const json_t *wk = c->form ? json_object_get(c->form, "weekly") : NULL;
    if (json_is_array(wk)) {   /* a crafted form may repeat the field: only what fits is kept */
        json_array_foreach(wk, i, x) {
            if (strlen(days) + 10 < sizeof days) { strncat(days, json_string_value(x) ?: "", 8); strcat(days, ","); }
        }
    } else snprintf(days, sizeof days, "%s", c->form ? val(c, "weekly") : (gx_req_query(c->req, "weekly") ?: ""));
    for (int d = 0; d < 7; d++)
        gx_portal_putf(b, "<label class=\"radio\"><input type=\"checkbox\" name=\"weekly\" value=\"%s\"%s> %s</label> ", DAYS[d],
                       strstr(days, DAYS[d]) ? " checked" : "", DAYS[d]);
    if (err && !strcmp(err->field, "weekly")) gx_portal_putf(b, "<p class=\"field-error\" role=\"alert\">%H</p>", err->msg);
    gx_sbuf_puts(b, "</fieldset>");
    input(b, "leadTime", "Lead time", "text", val(c, "leadTime"), "Optional, such as 10m: before the start, others may only "
          "use these GPUs for work that ends in time.", err, "");
    input(b, "noShowTimeout", "No-show timeout", "text", val(c, "noShowTimeout"), "Optional, such as 15m: unused this long "
          "after the start, the booking is released.", err, "");
    gx_sbuf_puts(b, "<div class=\"actions\"><button type=\"submit\" class=\"primary\">Book</button></div></form>");
    json_decref(cqs);
}

static void page(gx_portal_ctx *c, int status, const gx_err *err, const json_t *refusal)
{
    cal w;
    memset(&w, 0, sizeof w);
    pick_tz(c, w.tz, sizeof w.tz);
    pick_week(c, &w);
    json_t *res = gx_d_reservations(c->d, c->user, NULL, w.day[0], w.day[7]);
    json_t *cls = classes(res);
    const char *want = gx_req_query(c->req, "class");
    if (c->form) want = gx_portal_form_get(c->form, "class");
    snprintf(w.cls, sizeof w.cls, "%s", want && *want ? want : json_string_value(json_array_get(cls, 0)) ?: "");
    json_t *items = json_array();
    size_t i;
    const json_t *it;
    json_array_foreach(json_object_get(res, "items"), i, it) if (gpus_of(it, w.cls) > 0) json_array_append(items, (json_t *)it);
    gx_sbuf per;
    gx_sbuf_init(&per);
    long nom = nominal(res, w.cls, &per);
    gx_sbuf b;
    gx_sbuf_init(&b);
    gx_portal_page_begin(c, &b, "Bookings", "reservations");
    const char *note = gx_req_query(c->req, "booked"), *gone = gx_req_query(c->req, "cancelled");
    if (!c->form && note) gx_portal_putf(&b, "<p class=\"notice\" role=\"status\" id=\"notice\">Booked %H.</p>", note);
    if (!c->form && gone) gx_portal_putf(&b, "<p class=\"notice\" role=\"status\" id=\"notice\">Cancelled %H.</p>", gone);
    char prev[16], next[16], e1[40];
    gx_portal_putf(&b, "<p class=\"sub\">Week of %H, in time zone <strong id=\"cal-tz\">%H</strong> (<a href=\"/ui/reservations?week=%U"
                       "&amp;class=%U&amp;tz=UTC\">UTC</a>). Class <strong id=\"cal-class\">%H</strong>: %ld GPU%s of capacity %H.</p>",
                   local_fmt(w.tz, w.day[0] + 1, "%A %d %B %Y", e1, sizeof e1), w.tz, w.monday, w.cls, w.cls, nom, nom == 1 ? "" : "s",
                   per.n ? per.p : "");
    gx_sbuf_free(&per);
    gx_portal_putf(&b, "<nav class=\"cal-nav\" aria-label=\"Weeks and classes\"><a id=\"prev-week\" href=\"/ui/reservations?week=%U&amp;"
                       "class=%U&amp;tz=%U\">← Previous week</a> <a href=\"/ui/reservations?class=%U&amp;tz=%U\">This week</a> "
                       "<a id=\"next-week\" href=\"/ui/reservations?week=%U&amp;class=%U&amp;tz=%U\">Next week →</a>",
                   week_from(&w, -1, prev, sizeof prev), w.cls, w.tz, w.cls, w.tz, week_from(&w, 1, next, sizeof next), w.cls, w.tz);
    const json_t *x;
    json_array_foreach(cls, i, x)
        gx_portal_putf(&b, " <a class=\"tag\" href=\"/ui/reservations?week=%U&amp;class=%U&amp;tz=%U\"%s>%H</a>", w.monday,
                       json_string_value(x), w.tz, strcmp(json_string_value(x), w.cls) ? "" : " aria-current=\"true\"",
                       json_string_value(x));
    gx_sbuf_puts(&b, "</nav>");
    if (refusal) refused(c, &b, &w, refusal);
    chart(&b, &w, items, nom);
    list(c, &b, &w, items);
    form(c, &b, &w, res, cls, err);
    json_decref(items);
    json_decref(cls);
    json_decref(res);
    gx_portal_page_end(c, &b, status);
}

void gx_portal_reservations(gx_portal_ctx *c) { page(c, 200, NULL, NULL); }

/* A local "YYYY-MM-DDTHH:MM" in tz as an RFC 3339 UTC string. */
static int local_time(const char *tz, const char *s, char *out, size_t n, int64_t *ms)
{
    struct tm t;
    memset(&t, 0, sizeof t);
    int y, m, d, hh, mm;
    char sep;
    if (sscanf(s, "%4d-%2d-%2d%c%2d:%2d", &y, &m, &d, &sep, &hh, &mm) != 6 || (sep != 'T' && sep != ' ') || m < 1 || m > 12 ||
        d < 1 || d > 31 || hh > 23 || mm > 59 || hh < 0 || mm < 0)
        return -1;
    t.tm_year = y - 1900; t.tm_mon = m - 1; t.tm_mday = d; t.tm_hour = hh; t.tm_min = mm;
    if (gx_tzwin_from_local(tz, &t, ms)) return -1;
    gx_time_fmt(*ms, out, n);
    return 0;
}

/* The daemon's field paths as the form's fields, so its errors land next to them. */
static void form_field(gx_err *e)
{
    static const struct { const char *from, *to; } M[] = {
        {"metadata.namespace", "namespace"}, {"metadata.name", "name"}, {"spec.clusterQueue", "clusterQueue"},
        {"spec.resources", "gpus"}, {"spec.start", "start"}, {"spec.end", "end"}, {"spec.recurrence.timeZone", "tz"},
        {"spec.recurrence.weekly", "weekly"}, {"spec.recurrence", "weekly"}, {"spec.leadTime", "leadTime"},
        {"spec.noShowTimeout", "noShowTimeout"}, {NULL, NULL}};
    for (int i = 0; M[i].from; i++)
        if (!strncmp(e->field, M[i].from, strlen(M[i].from))) { snprintf(e->field, sizeof e->field, "%s", M[i].to); return; }
}

/* The form as a Reservation document; NULL with e naming the form's field. */
static json_t *doc_of(gx_portal_ctx *c, gx_err *e, int64_t *start)
{
    const char *tz = val(c, "tz"), *ns = val(c, "namespace"), *cls = val(c, "class"), *g = val(c, "gpus");
    char name[64], s[40], en[40];
    int64_t endms;
    snprintf(name, sizeof name, "%s", val(c, "name"));
    if (!*name) {
        static const char abc[] = "abcdefghijklmnopqrstuvwxyz0123456789";
        snprintf(name, sizeof name, "booking-");
        for (int i = 0; i < 5; i++) name[8 + i] = abc[randombytes_uniform(36)];
        name[13] = 0;
    }
    if (!*tz) tz = "UTC";
    char *endp;
    long q = strtol(g, &endp, 10);
    if (!gx_tzwin_zone_ok(tz)) { gx_errf(e, 422, "tz", "unknown time zone \"%s\" (an IANA name such as Europe/Paris)", tz); return NULL; }
    if (!*g || *endp || q < 1 || q > 100000) { gx_errf(e, 422, "gpus", "a whole number of GPUs, at least 1"); return NULL; }
    if (!*cls) { gx_errf(e, 422, "class", "pick a GPU class"); return NULL; }
    if (local_time(tz, val(c, "start"), s, sizeof s, start)) { gx_errf(e, 422, "start", "a date and time such as 2026-12-07T09:00"); return NULL; }
    if (local_time(tz, val(c, "end"), en, sizeof en, &endms)) { gx_errf(e, 422, "end", "a date and time such as 2026-12-07T17:00"); return NULL; }
    json_t *spec = json_pack("{s:s,s:[{s:s,s:s,s:I}],s:s,s:s}", "clusterQueue", val(c, "clusterQueue"), "resources", "flavor", cls,
                             "name", "nvidia.com/gpu", "quantity", (json_int_t)q, "start", s, "end", en);
    if (*val(c, "leadTime")) json_object_set_new(spec, "leadTime", json_string(val(c, "leadTime")));
    if (*val(c, "noShowTimeout")) json_object_set_new(spec, "noShowTimeout", json_string(val(c, "noShowTimeout")));
    json_t *wk = json_object_get(c->form, "weekly");
    if (wk) {
        json_t *days = json_is_array(wk) ? json_copy(wk) : json_pack("[O]", wk);
        json_object_set_new(spec, "recurrence", json_pack("{s:o,s:s}", "weekly", days, "timeZone", tz));
    }
    return json_pack("{s:s,s:s,s:{s:s,s:s},s:o}", "apiVersion", "gpuaas.dev/v1alpha1", "kind", "Reservation", "metadata", "name", name,
                     "namespace", ns, "spec", spec);
}

void gx_portal_reservations_post(gx_portal_ctx *c)
{
    gx_err e;
    gx_err_clear(&e);
    int64_t start = 0;
    json_t *doc = doc_of(c, &e, &start), *out = NULL, *ref = NULL;
    if (!doc) { page(c, 422, &e, NULL); return; }
    if (gx_d_reserve(c->d, c->user, doc, &out, &ref, &e)) {
        form_field(&e);
        page(c, e.status == 409 || e.status == 403 || e.status == 422 ? e.status : 400, &e, ref);
    } else {
        char wk[16];
        const char *tz = val(c, "tz");
        gx_sbuf u;
        gx_sbuf_init(&u);
        gx_portal_putf(&u, "/ui/reservations?week=%U&class=%U&tz=%U&booked=%U%%2F%U",
                       local_fmt(*tz ? tz : "UTC", start, "%Y-%m-%d", wk, sizeof wk), val(c, "class"), *tz ? tz : "UTC",
                       val(c, "namespace"), json_string_value(json_object_get(json_object_get(doc, "metadata"), "name")));
        gx_portal_redirect(c, u.p);
        gx_sbuf_free(&u);
    }
    json_decref(out);
    json_decref(ref);
    json_decref(doc);
}

void gx_portal_reservation_cancel(gx_portal_ctx *c, const char *ns, const char *name)
{
    gx_err e;
    gx_err_clear(&e);
    if (gx_d_unreserve(c->d, c->user, ns, name, &e)) {
        gx_portal_error_page(c, e.status == 403 || e.status == 404 ? e.status : 400, "Not cancelled", e.msg);
        return;
    }
    gx_sbuf u;
    gx_sbuf_init(&u);
    gx_portal_putf(&u, "/ui/reservations?week=%U&cancelled=%U%%2F%U", gx_portal_form_get(c->form, "week"), ns, name);
    gx_portal_redirect(c, u.p);
    gx_sbuf_free(&u);
}
