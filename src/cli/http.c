/* cli/http: requests to the daemon over libcurl's easy API, and their failures in words.
 * Owns: the curl handle (one per command, reused so calls share a connection), the
 * token, the 64 MiB cap on an answer held in memory, and every "error: ..." line that
 * comes from the transport or from an error body.
 * Must not: interpret successful answers, or print anything on success. */
#include <ctype.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <strings.h>
#include <curl/curl.h>
#include "cli/fmt.h"
#include "cli/http.h"
#include "lib/alloc.h"

#define ANSWER_MAX ((size_t)64 << 20)

static void trim(char *s)
{
    size_t n = strlen(s), i = 0;
    while (n && isspace((unsigned char)s[n - 1])) s[--n] = 0;
    while (isspace((unsigned char)s[i])) i++;
    memmove(s, s + i, n - i + 1);
}

/* A token goes into a header line: CR/LF or other control bytes would split it. */
static int token_ok(const char *t)
{
    if (!*t) return 0;
    for (; *t; t++)
        if ((unsigned char)*t < 0x21 || *t == 0x7f) return 0;
    return 1;
}

static int read_token_file(const char *path, char **out, char *err, size_t errn)
{
    FILE *f = fopen(path, "r");
    if (!f) { snprintf(err, errn, "cannot read token file %s: %s", path, strerror(errno)); return -1; }
    char buf[1024];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *nl = strchr(buf, '\n');
    if (nl) *nl = 0;
    trim(buf);
    if (!*buf) { snprintf(err, errn, "token file %s is empty", path); return -1; }
    *out = gx_xstrdup(buf);
    return 0;
}

static int resolve_server(gx_cli_http *h, const char *server, char *err, size_t errn)
{
    const char *s = server && *server ? server : getenv("GPUAAS_SERVER");
    if (!s || !*s) s = GX_CLI_DEFAULT_SERVER;
    int bare = !strstr(s, "://");
    if (!bare && strncmp(s, "http://", 7) && strncmp(s, "https://", 8)) {
        snprintf(err, errn, "server %s: only http:// and https:// URLs are supported", s);
        return -1;
    }
    if ((size_t)snprintf(h->server, sizeof h->server, "%s%s", bare ? "http://" : "", s) >= sizeof h->server) {
        snprintf(err, errn, "server URL is too long");
        return -1;
    }
    size_t n = strlen(h->server);
    while (n && h->server[n - 1] == '/') h->server[--n] = 0;
    return 0;
}

int gx_cli_http_init(gx_cli_http *h, const char *server, const char *token,
                     const char *token_file, char *err, size_t errn)
{
    memset(h, 0, sizeof *h);
    if (resolve_server(h, server, err, errn)) return -1;
    if (token && token_file) { snprintf(err, errn, "give --token or --token-file, not both"); return -1; }
    if (token) {
        h->token = gx_xstrdup(token);
        h->token_src = "--token";
    } else if (token_file) {
        if (read_token_file(token_file, &h->token, err, errn)) return -1;
        h->token_src = "--token-file";
    } else if (getenv("GPUAAS_TOKEN") && *getenv("GPUAAS_TOKEN")) {
        h->token = gx_xstrdup(getenv("GPUAAS_TOKEN"));
        h->token_src = "GPUAAS_TOKEN";
    }
    if (h->token) {
        trim(h->token);
        if (!token_ok(h->token)) {
            snprintf(err, errn, "the token from %s is empty or contains spaces or control characters", h->token_src);
            gx_cli_http_free(h);
            return -1;
        }
    }
    h->curl = curl_easy_init();
    if (!h->curl) { snprintf(err, errn, "cannot start libcurl"); gx_cli_http_free(h); return -1; }
    return 0;
}

void gx_cli_http_free(gx_cli_http *h)
{
    if (h->curl) curl_easy_cleanup(h->curl);
    if (h->token) {
        /* Do not leave the secret lying in freed memory longer than needed. */
        memset(h->token, 0, strlen(h->token));
        free(h->token);
    }
    h->curl = NULL;
    h->token = NULL;
}

void gx_cli_resp_free(gx_cli_resp *r)
{
    free(r->body);
    json_decref(r->json);
    memset(r, 0, sizeof *r);
}

/* Per-transfer state shared with curl's callbacks. */
typedef struct xfer {
    gx_cli_http *h;
    gx_cli_resp *r;
    FILE *stream;                    /* logs: 2xx bodies go here instead of r->body */
    volatile sig_atomic_t *stop;
    int too_big;
} xfer;

static size_t on_body(char *p, size_t sz, size_t nm, void *ud)
{
    xfer *x = ud;
    size_t n = sz * nm;
    long code = 0;
    curl_easy_getinfo(x->h->curl, CURLINFO_RESPONSE_CODE, &code);
    if (x->stream && code >= 200 && code < 300) {
        if (fwrite(p, 1, n, x->stream) != n) return 0;
        fflush(x->stream); /* follow mode: show each chunk as soon as it arrives */
        return n;
    }
    if (x->r->len + n > ANSWER_MAX) { x->too_big = 1; return 0; }
    char *nb = realloc(x->r->body, x->r->len + n + 1);
    if (!nb) return 0;
    memcpy(nb + x->r->len, p, n);
    x->r->body = nb;
    x->r->len += n;
    nb[x->r->len] = 0;
    return n;
}

/* The Date header gives the server's "now", so ages are right even when this
 * machine's clock is off from the daemon's. */
static size_t on_header(char *p, size_t sz, size_t nm, void *ud)
{
    xfer *x = ud;
    size_t n = sz * nm;
    if (n > 5 && n < 128 && !strncasecmp(p, "date:", 5)) {
        char v[128];
        memcpy(v, p + 5, n - 5);
        v[n - 5] = 0;
        trim(v);
        time_t t = curl_getdate(v, NULL);
        if (t > 0) x->h->date_ms = (int64_t)t * 1000;
    }
    return n;
}

static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    (void)a; (void)b; (void)c; (void)d;
    xfer *x = ud;
    return x->stop && *x->stop ? 1 : 0;
}

static struct curl_slist *headers(const gx_cli_http *h, const char *ctype)
{
    struct curl_slist *l = NULL, *t;
    char line[1200];
    const char *fixed[] = {"Accept: application/json", "Expect:", NULL};
    for (int i = 0; fixed[i]; i++)
        if ((t = curl_slist_append(l, fixed[i]))) l = t;
    if (h->token) {
        snprintf(line, sizeof line, "Authorization: Bearer %s", h->token);
        if ((t = curl_slist_append(l, line))) l = t;
        memset(line, 0, sizeof line);
    }
    if (ctype) {
        snprintf(line, sizeof line, "Content-Type: %s", ctype);
        if ((t = curl_slist_append(l, line))) l = t;
    }
    return l;
}

static int perform(gx_cli_http *h, const char *method, const char *path, const char *body,
                   size_t len, const char *ctype, gx_cli_resp *r, FILE *stream,
                   volatile sig_atomic_t *stop)
{
    CURL *c = h->curl;
    memset(r, 0, sizeof *r);
    xfer x = {h, r, stream, stop, 0};
    char url[4096];
    if ((size_t)snprintf(url, sizeof url, "%s%s", h->server, path) >= sizeof url) {
        r->curl_code = CURLE_URL_MALFORMAT;
        snprintf(r->curl_err, sizeof r->curl_err, "URL too long");
        return -1;
    }
    curl_easy_reset(c);
    struct curl_slist *hl = headers(h, body || !strcmp(method, "POST") ? ctype : NULL);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "gpuaas-cli/0.1.0");
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
    curl_easy_setopt(c, CURLOPT_ERRORBUFFER, r->curl_err);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 5L);
    /* A streamed log may stay open for hours; everything else must answer promptly. */
    curl_easy_setopt(c, CURLOPT_TIMEOUT, stream ? 0L : 120L);
    if (stop) {
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(c, CURLOPT_XFERINFODATA, &x);
    }
    if (!strcmp(method, "POST")) {
        curl_easy_setopt(c, CURLOPT_POST, 1L);
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body ? body : "");
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? len : 0));
    } else if (strcmp(method, "GET")) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    }
    CURLcode cc = curl_easy_perform(c);
    curl_slist_free_all(hl);
    r->curl_code = cc;
    if (x.too_big) snprintf(r->curl_err, sizeof r->curl_err, "the answer is larger than 64 MiB");
    if (!r->curl_err[0]) snprintf(r->curl_err, sizeof r->curl_err, "%s", curl_easy_strerror(cc));
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
    if (r->body && gx_cli_body_is_json(r->body, r->len))
        r->json = json_loadb(r->body, r->len, 0, NULL);
    if (cc != CURLE_OK) return -1;
    return r->status >= 200 && r->status < 300 ? 0 : -1;
}

int gx_cli_http_call(gx_cli_http *h, const char *method, const char *path,
                     const char *body, size_t len, const char *ctype, gx_cli_resp *r)
{
    return perform(h, method, path, body, len, ctype ? ctype : "application/json", r, NULL, NULL);
}

int gx_cli_http_stream(gx_cli_http *h, const char *path, FILE *out, volatile sig_atomic_t *stop)
{
    gx_cli_resp r;
    int rc = perform(h, "GET", path, NULL, 0, NULL, &r, out, stop);
    if (rc && r.curl_code == CURLE_ABORTED_BY_CALLBACK && stop && *stop) rc = 130;
    else if (rc) rc = gx_cli_http_report(h, &r, NULL);
    gx_cli_resp_free(&r);
    return rc;
}

const char *gx_cli_err_text(const json_t *body, const gx_cli_body *src, char *buf, size_t n)
{
    const json_t *e = json_object_get(body, "error");
    const char *msg = gx_cli_jstr(e, "message"), *field = gx_cli_jstr(e, "field");
    const json_t *jl = json_object_get(e, "line"), *jd = json_object_get(e, "document");
    int line = json_is_integer(jl) ? (int)json_integer_value(jl) : 0;
    int doc = json_is_integer(jd) ? (int)json_integer_value(jd) : -1;
    /* Errors about the body (400, 413, 422) are about the file; other refusals are only
     * when the server pins them on a document (a 403 for a namespace one may not submit
     * to, a 409 for a name that exists): a bare 403 on apply is about who asked, and
     * "queues.yaml: forbidden" would send people looking. */
    const json_t *jc = json_object_get(e, "code");
    int code = json_is_integer(jc) ? (int)json_integer_value(jc) : 0;
    if (code && code != 400 && code != 413 && code != 422 && line <= 0 && doc < 0) src = NULL;
    char loc[600] = "";
    const char *file = NULL;
    int fline = line;
    if (line > 0 && src) file = gx_cli_body_where(src, line, &fline);
    if (line > 0 && file) snprintf(loc, sizeof loc, "%s:%d: ", file, fline);
    else if (line > 0) snprintf(loc, sizeof loc, "line %d: ", line);
    else if (src && src->nparts == 1 && doc >= 0) snprintf(loc, sizeof loc, "%s: document %d: ", src->parts[0].name, doc + 1);
    else if (doc >= 0) snprintf(loc, sizeof loc, "document %d: ", doc + 1);
    else if (src && src->nparts == 1) snprintf(loc, sizeof loc, "%s: ", src->parts[0].name);
    if (!msg || !*msg) msg = gx_cli_jstr_or(e, "reason", "the server gave no reason");
    if (field && *field) snprintf(buf, n, "%s%s: %s", loc, field, msg);
    else snprintf(buf, n, "%s%s", loc, msg);
    return buf;
}

static int report_transport(const gx_cli_http *h, const gx_cli_resp *r)
{
    switch (r->curl_code) {
    case CURLE_COULDNT_CONNECT:
        fprintf(stderr, "error: cannot reach gpuaas at %s: is the daemon running? (start it with: make run)\n", h->server);
        break;
    case CURLE_COULDNT_RESOLVE_HOST:
        fprintf(stderr, "error: cannot reach gpuaas at %s: unknown host (check --server or GPUAAS_SERVER)\n", h->server);
        break;
    case CURLE_OPERATION_TIMEDOUT:
        fprintf(stderr, "error: gpuaas at %s did not answer in time (%s)\n", h->server, r->curl_err);
        break;
    default:
        fprintf(stderr, "error: request to gpuaas at %s failed: %s\n", h->server, r->curl_err);
    }
    return 1;
}

static int report(const gx_cli_http *h, const gx_cli_resp *r, const gx_cli_body *src, const char *what)
{
    char msg[1200];
    if (r->curl_code != CURLE_OK && (r->status == 0 || r->curl_code != CURLE_WRITE_ERROR))
        return report_transport(h, r);
    if (r->status == 401 && !h->token) {
        fprintf(stderr, "error: gpuaas at %s needs a token: set GPUAAS_TOKEN (export GPUAAS_TOKEN=gpt_...;"
                " the daemon prints the admin token on its first start), or pass --token or --token-file\n",
                h->server);
        return 1;
    }
    if (json_is_object(json_object_get(r->json, "error"))) {
        gx_cli_err_text(r->json, src, msg, sizeof msg);
        if (r->status == 401)
            fprintf(stderr, "error: gpuaas at %s did not accept the token from %s: %s\n", h->server, h->token_src, msg);
        else
            fprintf(stderr, "error: %s%s%s\n", what ? what : "", what ? ": " : "", msg);
        return 1;
    }
    if (r->curl_code != CURLE_OK) return report_transport(h, r);
    char head[200] = "";
    if (r->body) gx_cli_shorten(r->body, 120, head, sizeof head);
    fprintf(stderr, "error: gpuaas at %s answered HTTP %ld%s%s\n", h->server, r->status, *head ? ": " : "", head);
    return 1;
}

int gx_cli_http_report(const gx_cli_http *h, const gx_cli_resp *r, const gx_cli_body *src)
{
    return report(h, r, src, NULL);
}

int gx_cli_http_report_about(const gx_cli_http *h, const gx_cli_resp *r, const char *what)
{
    return report(h, r, NULL, what);
}

json_t *gx_cli_get(gx_cli_http *h, const char *path)
{
    gx_cli_resp r;
    json_t *out = NULL;
    if (gx_cli_http_call(h, "GET", path, NULL, 0, NULL, &r)) {
        gx_cli_http_report(h, &r, NULL);
    } else if (!r.json) {
        fprintf(stderr, "error: gpuaas at %s answered %s with something that is not JSON\n", h->server, path);
    } else {
        out = json_incref(r.json);
    }
    gx_cli_resp_free(&r);
    return out;
}
