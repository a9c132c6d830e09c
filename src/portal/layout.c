/* layout: the frame every portal page shares, and small widgets.
 * Owns: <head> (CSS, JS, the CSRF meta tag for scripts), the navigation, the
 * security headers of every page (CSP without inline scripts or styles, no framing,
 * no caching), redirects, error pages, state badges, SVG usage bars (durations: lib/gxtime).
 * Must not: write a value into a page without escaping it (%H). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "portal/portal_int.h"

static const struct { const char *id, *href, *label; int admin; } NAV[] = {
    {"home", "/", "My work", 0},        {"new", "/ui/new", "New request", 0}, {"models", "/ui/models", "Models", 0},
    {"queues", "/ui/queues", "Queues", 0}, {"gpus", "/ui/gpus", "GPUs", 0},   {"reports", "/ui/reports", "Reports", 0},
    {"reservations", "/ui/reservations", "Bookings", 0},
    {"admin", "/ui/admin", "Admin", 1},
    {NULL, NULL, NULL, 0},
};

static const char *brand(const gx_portal_ctx *c)
{
    const char *t = json_string_value(json_object_get(json_object_get(gx_portal_config(c->d), "spec"), "title"));
    return t ? t : "gpuaas";
}

void gx_portal_csrf_field(gx_portal_ctx *c, gx_sbuf *b)
{
    gx_portal_putf(b, "<input type=\"hidden\" name=\"_csrf\" value=\"%H\">", c->s ? c->s->csrf : "");
}

void gx_portal_page_begin(gx_portal_ctx *c, gx_sbuf *b, const char *title, const char *nav)
{
    gx_portal_putf(b, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                      "<title>%H · %H</title><link rel=\"stylesheet\" href=\"/assets/portal.css\">"
                      "<link rel=\"icon\" href=\"/assets/favicon.svg\" type=\"image/svg+xml\">"
                      "<script src=\"/assets/portal.js\" defer></script>",
                   title, brand(c));
    if (c->s) gx_portal_putf(b, "<meta name=\"csrf-token\" content=\"%H\">", c->s->csrf);
    gx_sbuf_puts(b, "</head><body><a class=\"skip\" href=\"#main\">Skip to content</a>");
    gx_portal_putf(b, "<header class=\"top\"><a class=\"brand\" href=\"/\"><svg class=\"icon\" aria-hidden=\"true\">"
                      "<use href=\"/assets/icons.svg#gpu\"></use></svg> %H</a>", brand(c));
    if (c->user) {
        gx_sbuf_puts(b, "<nav aria-label=\"Main\"><ul>");
        for (int i = 0; NAV[i].id; i++) {
            if (NAV[i].admin && !c->user->admin) continue;
            int cur = nav && !strcmp(nav, NAV[i].id);
            gx_portal_putf(b, "<li><a href=\"%s\"%s>%s</a></li>", NAV[i].href, cur ? " aria-current=\"page\"" : "",
                           NAV[i].label);
        }
        gx_portal_putf(b, "</ul></nav><div class=\"who\"><a href=\"/ui/account\" title=\"Your account\">%H</a>%s"
                          "<form method=\"post\" action=\"/logout\" class=\"inline\">",
                       c->user->name, c->user->admin ? " <span class=\"tag\">admin</span>" : "");
        gx_portal_csrf_field(c, b);
        gx_sbuf_puts(b, "<button type=\"submit\" class=\"link\">Sign out</button></form></div>");
    }
    gx_portal_putf(b, "</header><main id=\"main\" tabindex=\"-1\"><h1>%H</h1>", title);
}

static void security_headers(gx_portal_ctx *c)
{
    gx_resp_header(c->resp, "Content-Security-Policy",
                   "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'; base-uri 'none'");
    gx_resp_header(c->resp, "X-Frame-Options", "DENY");
    gx_resp_header(c->resp, "Referrer-Policy", "same-origin");
    gx_resp_header(c->resp, "Cache-Control", "no-store");
    gx_resp_header(c->resp, "X-Content-Type-Options", "nosniff");
}

void gx_portal_page_end(gx_portal_ctx *c, gx_sbuf *b, int status)
{
    gx_sbuf_puts(b, "</main><footer><p>gpuaas · queues with Kueue's semantics · "
                     "<a href=\"/metrics\">metrics</a> · <a href=\"/api/v1/whoami\">REST API</a></p></footer>"
                     "</body></html>\n");
    security_headers(c);
    c->resp->status = status;
    free(c->resp->text);
    c->resp->text_len = b->n;
    c->resp->text = gx_sbuf_take(b);
    c->resp->ctype = "text/html; charset=utf-8";
}

void gx_portal_error_page(gx_portal_ctx *c, int status, const char *title, const char *msg)
{
    gx_sbuf b;
    gx_sbuf_init(&b);
    gx_portal_page_begin(c, &b, title, NULL);
    gx_portal_putf(&b, "<p class=\"error\" role=\"alert\">%H</p><p><a href=\"/\">Back to your work</a></p>", msg);
    gx_portal_page_end(c, &b, status);
}

void gx_portal_redirect(gx_portal_ctx *c, const char *to)
{
    /* POST/redirect/GET: a reload never repeats the action */
    gx_resp_text(c->resp, 303, "text/plain; charset=utf-8", "see other\n");
    gx_resp_header(c->resp, "Location", to);
    security_headers(c);
}

void gx_portal_badge(gx_sbuf *b, const char *phase)
{
    const char *p = phase ? phase : "Unknown";
    gx_portal_putf(b, "<span class=\"badge st-%H\">%H</span>", p, p);
}

/* A horizontal bar as SVG: used of total, with a text label for screen readers. */
void gx_portal_bar(gx_sbuf *b, double used, double total, const char *label)
{
    double f = total > 0 ? used / total : (used > 0 ? 1 : 0);
    if (f < 0) f = 0;
    int over = f > 1;
    double w = (f > 1 ? 1 : f) * 200;
    gx_portal_putf(b, "<svg class=\"bar\" viewBox=\"0 0 200 12\" width=\"200\" height=\"12\" role=\"img\" aria-label=\"%H\">"
                      "<rect width=\"200\" height=\"12\" rx=\"3\" class=\"bar-bg\"></rect>"
                      "<rect width=\"%.1f\" height=\"12\" rx=\"3\" class=\"%s\"></rect></svg>",
                   label, w, over ? "bar-over" : "bar-fg");
}

static int by_name(const void *a, const void *b)
{
    const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
    return strcmp(json_string_value(json_object_get(json_object_get(x, "metadata"), "name")) ?: "",
                  json_string_value(json_object_get(json_object_get(y, "metadata"), "name")) ?: "");
}

json_t *gx_portal_templates(const gx_daemon *d)
{
    json_t *v[512];
    size_t n = 0;
    const char *k;
    json_t *m;
    json_object_foreach((json_t *)gx_d_objects(d), k, m)
        if (n < 512 && !strncmp(k, "Template/", 9)) v[n++] = m;
    qsort(v, n, sizeof v[0], by_name);
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) json_array_append(arr, v[i]);
    return arr;
}
