/* pages_reports: the Reports page (GET /ui/reports?since=7d): a bar chart of GPU-hours
 * allocated and busy per namespace, and the table per namespace and GPU class, from
 * the daemon's utilisation report (ops.h, gx_d_report_utilization).
 * Owns: this page. Must not: compute figures (ops/reports.c does) or show a non-admin
 * another team's namespaces (they are not asked for). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/alloc.h"
#include "lib/gxtime.h"
#include "portal/portal_int.h"

#define CHART_W 600
#define ROW_H 34

/* The chart, drawn here as SVG (no script): per namespace a bar for allocated and, under
 * it, one for busy, scaled to the largest allocation; each bar carries its figure (in
 * its title and after it). */
static void chart(gx_sbuf *b, const json_t *rows)
{
    double max = 0;
    size_t i, n = json_array_size(rows);
    const json_t *r;
    json_array_foreach(rows, i, r) {
        double a = (double)json_integer_value(json_object_get(r, "allocatedGpuMs"));
        if (a > max) max = a;
    }
    gx_portal_putf(b, "<figure id=\"report-chart\"><figcaption>GPU-hours allocated and busy per namespace"
                      "</figcaption><svg class=\"chart\" viewBox=\"0 0 %d %zu\" role=\"img\" "
                      "aria-label=\"GPU-hours allocated and busy per namespace\">",
                   CHART_W, n * ROW_H + 4);
    json_array_foreach(rows, i, r) {
        const char *ns = json_string_value(json_object_get(r, "namespace")) ?: "";
        double y = (double)i * ROW_H, span = CHART_W - 140 - 100;   /* label | bars | figures */
        double wa = max > 0 ? span * (double)json_integer_value(json_object_get(r, "allocatedGpuMs")) / max : 0;
        double wb = max > 0 ? span * (double)json_integer_value(json_object_get(r, "busyGpuMs")) / max : 0;
        const char *ha = json_string_value(json_object_get(r, "allocatedGpuHours"));
        const char *hb = json_string_value(json_object_get(r, "busyGpuHours"));
        gx_portal_putf(b, "<g data-namespace=\"%H\"><text x=\"0\" y=\"%.0f\" class=\"label\">%H</text>"
                          "<rect class=\"bar-fg\" x=\"140\" y=\"%.0f\" width=\"%.1f\" height=\"12\" data-hours=\"%H\">"
                          "<title>%H: %H GPU-hours allocated</title></rect>"
                          "<text x=\"%.1f\" y=\"%.0f\" class=\"value\">%H h</text>"
                          "<rect class=\"bar-busy\" x=\"140\" y=\"%.0f\" width=\"%.1f\" height=\"12\" data-hours=\"%H\">"
                          "<title>%H: %H GPU-hours busy</title></rect>"
                          "<text x=\"%.1f\" y=\"%.0f\" class=\"value\">%H h busy</text></g>",
                       ns, y + 18, ns, y + 4, wa, ha, ns, ha, 146 + wa, y + 14, ha, y + 18, wb, hb, ns, hb, 146 + wb, y + 28, hb);
    }
    gx_sbuf_puts(b, "</svg></figure>");
}

/* A wait in words ("15 min"), under a second in milliseconds. */
static const char *wait_words(const json_t *row, const char *k, char *buf, size_t n)
{
    int64_t ms = json_integer_value(json_object_get(row, k));
    if (ms < 1000) { snprintf(buf, n, "%lld ms", (long long)ms); return buf; }
    return gx_duration_words(ms, buf, n);
}

static void table(gx_sbuf *b, const json_t *rows, const json_t *total)
{
    gx_sbuf_puts(b, "<table id=\"report-table\" class=\"list\"><thead><tr><th scope=\"col\">Namespace</th><th scope=\"col\">GPU class</th>"
                     "<th scope=\"col\">Allocated GPU-h</th><th scope=\"col\">Busy GPU-h</th>"
                     "<th scope=\"col\">Reclaimed (idle) GPU-h</th><th scope=\"col\">Booked, unused GPU-h</th>"
                     "<th scope=\"col\">Admitted</th><th scope=\"col\">Queue wait p50</th><th scope=\"col\">p90</th>"
                     "</tr></thead><tbody>");
    size_t i;
    const json_t *r;
    json_array_foreach(rows, i, r) {
        char w1[48], w2[48];
        const char *ns = json_string_value(json_object_get(r, "namespace"));
        gx_portal_putf(b, "<tr data-namespace=\"%H\" data-class=\"%H\"><td>%H</td><td>%H</td><td>%H</td><td>%H</td>"
                          "<td>%H</td><td>%H</td><td>%lld</td><td>%H</td><td>%H</td></tr>",
                       ns ?: "", json_string_value(json_object_get(r, "class")) ?: "", ns ?: "TOTAL",
                       json_string_value(json_object_get(r, "class")) ?: "",
                       json_string_value(json_object_get(r, "allocatedGpuHours")),
                       json_string_value(json_object_get(r, "busyGpuHours")),
                       json_string_value(json_object_get(r, "idleReclaimedGpuHours")),
                       json_string_value(json_object_get(r, "noShowGpuHours")),
                       (long long)json_integer_value(json_object_get(r, "admitted")),
                       wait_words(r, "queueWaitP50Ms", w1, sizeof w1), wait_words(r, "queueWaitP90Ms", w2, sizeof w2));
    }
    char w1[48], w2[48];
    gx_portal_putf(b, "</tbody><tfoot><tr data-namespace=\"\"><th scope=\"row\">Total</th><td></td><td>%H</td><td>%H</td>"
                      "<td>%H</td><td>%H</td><td>%lld</td><td>%H</td><td>%H</td></tr></tfoot></table>",
                   json_string_value(json_object_get(total, "allocatedGpuHours")),
                   json_string_value(json_object_get(total, "busyGpuHours")),
                   json_string_value(json_object_get(total, "idleReclaimedGpuHours")),
                   json_string_value(json_object_get(total, "noShowGpuHours")),
                   (long long)json_integer_value(json_object_get(total, "admitted")),
                   wait_words(total, "queueWaitP50Ms", w1, sizeof w1), wait_words(total, "queueWaitP90Ms", w2, sizeof w2));
}

void gx_portal_reports(gx_portal_ctx *c)
{
    static const char *const windows[] = {"1d", "7d", "30d"};
    const char *since = gx_req_query(c->req, "since");
    if (!since || !*since) since = "7d";
    gx_sbuf b;
    gx_sbuf_init(&b);
    gx_portal_page_begin(c, &b, "Reports", "reports");
    gx_portal_putf(&b, "<p class=\"sub\">GPU time over the last %H%s. Allocated: GPUs held by running pods; busy: that "
                       "time weighted by the GPUs' measured utilisation. How each figure is counted: "
                       "docs/operations.md, “Utilisation reports”.</p><form method=\"get\" action=\"/ui/reports\" "
                       "class=\"inline\"><label>Window <select name=\"since\">",
                   since, c->user->admin ? ", every namespace" : ", your namespaces");
    for (size_t i = 0; i < 3; i++)
        gx_portal_putf(&b, "<option%s>%H</option>", strcmp(since, windows[i]) ? "" : " selected", windows[i]);
    gx_sbuf_puts(&b, "</select></label> <button type=\"submit\">Show</button></form>");
    size_t nn = json_array_size(c->user->namespaces);
    const char **ns = gx_xcalloc(nn + 1, sizeof *ns);
    for (size_t i = 0; i < nn; i++) ns[i] = json_string_value(json_array_get(c->user->namespaces, i)) ?: "";
    int status = 200;
    if (!c->user->admin && !nn) {
        gx_sbuf_puts(&b, "<p>You are in no namespace yet, so there is nothing to report.</p>");
    } else {
        gx_err e;
        gx_err_clear(&e);
        json_t *by_ns = NULL, *both = NULL;
        size_t n = c->user->admin ? 0 : nn;
        if (gx_d_report_utilization(c->d, since, "namespace", ns, n, &by_ns, &e) ||
            gx_d_report_utilization(c->d, since, NULL, ns, n, &both, &e)) {
            status = e.status == 400 ? 400 : 500;
            gx_portal_putf(&b, "<p class=\"error\" role=\"alert\">%H</p>", e.msg);
        } else if (!json_array_size(json_object_get(both, "rows"))) {
            gx_sbuf_puts(&b, "<p>No GPU was allocated in this window.</p>");
        } else {
            chart(&b, json_object_get(by_ns, "rows"));
            table(&b, json_object_get(both, "rows"), json_object_get(both, "total"));
        }
        json_decref(by_ns);
        json_decref(both);
    }
    free(ns);
    gx_portal_page_end(c, &b, status);
}
