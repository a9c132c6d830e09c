/* k8sname: Kubernetes' name rules and messages (see k8sname.h). Pure. */
#include <stdio.h>
#include <string.h>
#include "lib/k8sname.h"

#define LABEL_FMT "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
/* Kubernetes' RegexError sentences, byte for byte (the double space is theirs). */
static const char label_msg[] =
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
    "and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '"
    LABEL_FMT "')";
static const char subdomain_msg[] =
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must "
    "start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '"
    LABEL_FMT "(\\." LABEL_FMT ")*')";

/* The most of a value echoed in a message: the longest sentence above plus the field and
 * this still fit gx_err.msg (512). */
#define ECHO_MAX 120
_Static_assert(sizeof "Invalid value: \"...\": " + ECHO_MAX + sizeof subdomain_msg <= sizeof ((gx_err *)0)->msg &&
               sizeof label_msg <= sizeof subdomain_msg, "a name's message must fit gx_err.msg whole");

static int alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

/* Does [s, s+n) match the label regex (any length)? */
static int label_form(const char *s, size_t n)
{
    if (n == 0 || !alnum(s[0]) || !alnum(s[n - 1])) return 0;
    for (size_t i = 1; i + 1 < n; i++)
        if (!alnum(s[i]) && s[i] != '-') return 0;
    return 1;
}

/* Does s match the subdomain regex (any length): labels joined by single dots? */
static int subdomain_form(const char *s)
{
    for (;;) {
        const char *dot = strchr(s, '.');
        size_t n = dot ? (size_t)(dot - s) : strlen(s);
        if (!label_form(s, n)) return 0;
        if (!dot) return 1;
        s = dot + 1;
    }
}

int gx_k8s_is_label(const char *s)
{
    size_t n = strlen(s);
    return n <= GX_K8S_LABEL_MAX && label_form(s, n);
}

int gx_k8s_is_subdomain(const char *s) { return strlen(s) <= GX_K8S_SUBDOMAIN_MAX && subdomain_form(s); }

static const char *too_long(size_t max, char *buf, size_t n)
{
    snprintf(buf, n, "must be no more than %zu characters", max);
    return buf;
}

const char *gx_k8s_label_problem(const char *s, size_t max, char *buf, size_t n)
{
    size_t len = strlen(s);
    if (len > max) return too_long(max, buf, n);
    if (label_form(s, len)) return NULL;
    /* Kubernetes: a valid subdomain that is not a label can only be wrong by its dots */
    return subdomain_form(s) ? "must not contain dots" : label_msg;
}

const char *gx_k8s_subdomain_problem(const char *s, size_t max, char *buf, size_t n)
{
    if (strlen(s) > max) return too_long(max, buf, n);
    return subdomain_form(s) ? NULL : subdomain_msg;
}

/* Go's %q of the value, as Kubernetes prints it: quotes, backslashes and control
 * characters escaped. Past ECHO_MAX bytes of output it is cut at a character boundary
 * and ends in "...". out holds ECHO_MAX + 8 bytes. */
static void quote(const char *v, char *out)
{
    size_t o = 0, i = 0;
    out[o++] = '"';
    for (; v[i]; i++) {
        unsigned char c = (unsigned char)v[i];
        char esc[8];
        size_t k = 2;
        esc[0] = '\\';
        if (c == '"' || c == '\\') esc[1] = (char)c;
        else if (c == '\n') esc[1] = 'n';
        else if (c == '\t') esc[1] = 't';
        else if (c == '\r') esc[1] = 'r';
        else if (c < 0x20 || c == 0x7f) k = (size_t)snprintf(esc, sizeof esc, "\\x%02x", c);
        else { esc[0] = (char)c; k = 1; }
        if (o - 1 + k > ECHO_MAX) break;
        memcpy(out + o, esc, k);
        o += k;
    }
    if (v[i]) {
        /* bytes of 0x80 and up were copied one for one: do not end inside a character */
        while (i > 0 && ((unsigned char)v[i] & 0xC0) == 0x80) { i--; o--; }
        memcpy(out + o, "...", 3);
        o += 3;
    }
    out[o++] = '"';
    out[o] = 0;
}

int gx_k8s_invalid(gx_err *err, const char *field, const char *value, const char *detail)
{
    char q[ECHO_MAX + 8];
    quote(value, q);
    return gx_errf(err, 422, field, "Invalid value: %s: %s", q, detail);
}

int gx_k8s_check_label(const char *s, size_t max, const char *field, gx_err *err)
{
    if (!s) return gx_errf(err, 422, field, "Required value");
    char buf[GX_K8S_PROBLEM_MAX];
    const char *p = gx_k8s_label_problem(s, max, buf, sizeof buf);
    return p ? gx_k8s_invalid(err, field, s, p) : 0;
}

int gx_k8s_check_subdomain(const char *s, size_t max, const char *field, gx_err *err)
{
    if (!s) return gx_errf(err, 422, field, "Required value");
    char buf[GX_K8S_PROBLEM_MAX];
    const char *p = gx_k8s_subdomain_problem(s, max, buf, sizeof buf);
    return p ? gx_k8s_invalid(err, field, s, p) : 0;
}

int gx_k8s_generate_name(const char *prefix, uint32_t (*uniform)(uint32_t upper), char *out, size_t n)
{
    static const char alphabet[] = GX_K8S_GEN_ALPHABET;
    if (n < GX_K8S_LABEL_MAX + 1) return -1;
    size_t p = strlen(prefix);
    if (p > GX_K8S_GEN_PREFIX_MAX) p = GX_K8S_GEN_PREFIX_MAX;   /* Kubernetes cuts the prefix, not the suffix */
    memcpy(out, prefix, p);
    for (int i = 0; i < GX_K8S_GEN_SUFFIX; i++) out[p++] = alphabet[uniform(sizeof alphabet - 1) % (sizeof alphabet - 1)];
    out[p] = 0;
    return 0;
}
