/* html: HTML escaping into the portal's output buffer (a lib/sbuf), and form decoding.
 * Owns: escaping of every value that reaches a
 * page (text and attribute contexts are escaped the same, strictly), decoding of
 * application/x-www-form-urlencoded bodies and query strings.
 * Must not: know pages, sessions or the daemon. Every byte of user or manifest data
 * goes through gx_portal_esc()/gx_portal_putf's %H: there is no other way into a page. */
#ifndef GX_PORTAL_HTML_H
#define GX_PORTAL_HTML_H
#include <stdarg.h>
#include <stddef.h>
#include <jansson.h>
#include "lib/sbuf.h"

/* Escaped text: & < > " ' ` = become entities; NULL is written as "". */
void gx_portal_esc(gx_sbuf *b, const char *s);
/* printf with one extra conversion: %H writes its char * argument escaped.
 * Everything else is passed to vsnprintf as is (%s, %d, %zu, %lld, %.1f ...). */
void gx_portal_putf(gx_sbuf *b, const char *fmt, ...);
/* Percent-encode for a URL path segment or query value. */
void gx_portal_urlenc(gx_sbuf *b, const char *s);

/* Decode a form body or a query string "a=1&b=x+y" into a JSON object of strings.
 * A key given several times becomes an array of strings. At most max_fields fields
 * and max_value bytes per value; returns NULL when over a limit or malformed. */
json_t *gx_portal_form_parse(const char *body, size_t len, size_t max_fields, size_t max_value);
/* A template's pattern (POSIX extended, as the server checks it with regcomp) as an HTML
 * pattern attribute: browsers compile that with the `v` flag, where a '-' or '(' that is
 * plain in a POSIX bracket must be escaped, and an invalid pattern is silently ignored (so
 * nothing was checked). Writes the translation into out; -1 when it has no faithful one
 * (POSIX collating elements, an unknown class, a stray backslash): then emit no attribute
 * and let the server's check speak. */
int gx_portal_html_pattern(const char *posix, char *out, size_t n);
/* One string field of a parsed form ("" when absent; the first when several). */
const char *gx_portal_form_get(const json_t *form, const char *key);

#endif
