/* cli/http: the client's one connection to the daemon (libcurl easy).
 * Owns: --server/--token resolution, the Authorization header, request and response
 * buffers, and turning every failure (connection refused, timeouts, error bodies,
 * a missing token) into one plain line on stderr.
 * Must not: know what any endpoint means; commands do. */
#ifndef GX_CLI_HTTP_H
#define GX_CLI_HTTP_H
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <jansson.h>
#include "cli/files.h"

#define GX_CLI_DEFAULT_SERVER "http://127.0.0.1:8080"

typedef struct gx_cli_http {
    char server[512];      /* base URL, no trailing slash */
    char *token;           /* NULL when none was configured */
    const char *token_src; /* where it came from, for error messages */
    void *curl;            /* CURL *, reused for keep-alive */
    int64_t date_ms;       /* the server's clock (Date header) at the last answer, 0 if none */
} gx_cli_http;

typedef struct gx_cli_resp {
    long status;           /* HTTP status, 0 when no answer came */
    int curl_code;         /* CURLcode of the transfer */
    char curl_err[256];
    char *body;
    size_t len;
    json_t *json;          /* the body parsed, when it is JSON */
} gx_cli_resp;

/* Resolve server (flag, else $GPUAAS_SERVER, else the default) and token (--token, else
 * --token-file, else $GPUAAS_TOKEN). Returns 0, or -1 with a message in err. */
int gx_cli_http_init(gx_cli_http *h, const char *server, const char *token,
                     const char *token_file, char *err, size_t errn);
void gx_cli_http_free(gx_cli_http *h);

/* One request. path starts with "/" (query included). body may be NULL. Returns 0 for
 * a 2xx answer; -1 otherwise (no answer, or status >= 300), with r filled either way. */
int gx_cli_http_call(gx_cli_http *h, const char *method, const char *path,
                     const char *body, size_t len, const char *ctype, gx_cli_resp *r);
void gx_cli_resp_free(gx_cli_resp *r);

/* Print why a call failed, on one line to stderr ("error: ..."). When src is given, a
 * line number in the error body is mapped to its file. Returns 1 (the exit status). */
int gx_cli_http_report(const gx_cli_http *h, const gx_cli_resp *r, const gx_cli_body *src);

/* The same, naming the object the request was about ("error: team-a/x: not found"). */
int gx_cli_http_report_about(const gx_cli_http *h, const gx_cli_resp *r, const char *what);

/* Format a server error body ({"error":{...}}) as "file:line: field: message" into buf
 * (pure; used by report and the tests). Returns buf. */
const char *gx_cli_err_text(const json_t *body, const gx_cli_body *src, char *buf, size_t n);

/* GET path and return its JSON (a new reference), or NULL after reporting the error. */
json_t *gx_cli_get(gx_cli_http *h, const char *path);

/* GET path and copy the body to out as it arrives, until the server closes or *stop
 * becomes non-zero. Returns 0, 130 when stopped, or 1 after reporting an error. */
int gx_cli_http_stream(gx_cli_http *h, const char *path, FILE *out, volatile sig_atomic_t *stop);

#endif
