/* Unit tests of cli/http against a one-shot HTTP responder on a loopback port (a forked
 * child that answers one canned response): headers sent, JSON and error bodies, the
 * server's Date, streaming, and the exact error lines for refused connections and 401s. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>
#include "cli/http.h"

typedef struct responder {
    int port;
    pid_t pid;
    int req_fd;   /* read end: the request the child received */
} responder;

static int listen_any(int *port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof a;
    cr_assert(s >= 0);
    cr_assert_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(listen(s, 1), 0);
    getsockname(s, (struct sockaddr *)&a, &l);
    *port = ntohs(a.sin_port);
    return s;
}

/* Fork a child that accepts one connection, reads the request (headers, and a body of
 * Content-Length bytes), passes it back over a pipe and writes response. */
static responder serve_once(const char *response)
{
    responder r;
    int pfd[2];
    int s = listen_any(&r.port);
    cr_assert_eq(pipe(pfd), 0);
    r.pid = fork();
    cr_assert(r.pid >= 0);
    if (r.pid == 0) {
        close(pfd[0]);
        int c = accept(s, NULL, NULL);
        char req[65536];
        size_t n = 0;
        for (;;) {
            ssize_t k = read(c, req + n, sizeof req - 1 - n);
            if (k <= 0) break;
            n += (size_t)k;
            req[n] = 0;
            char *end = strstr(req, "\r\n\r\n");
            if (!end) continue;
            char *cl = strcasestr(req, "Content-Length:");
            size_t want = (size_t)(end + 4 - req) + (cl && cl < end ? strtoul(cl + 15, NULL, 10) : 0);
            if (n >= want) break;
        }
        if (write(pfd[1], req, n) < 0) _exit(1);
        close(pfd[1]);
        if (write(c, response, strlen(response)) < 0) _exit(1);
        shutdown(c, SHUT_WR);
        char drain[256];
        while (read(c, drain, sizeof drain) > 0) {}
        _exit(0);
    }
    close(s);
    close(pfd[1]);
    r.req_fd = pfd[0];
    return r;
}

static char *request_of(responder *r)
{
    static char buf[65536];
    size_t n = 0;
    ssize_t k;
    while ((k = read(r->req_fd, buf + n, sizeof buf - 1 - n)) > 0) n += (size_t)k;
    buf[n] = 0;
    close(r->req_fd);
    waitpid(r->pid, NULL, 0);
    return buf;
}

static void init_for(gx_cli_http *h, int port, const char *token)
{
    char url[64], err[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/", port);
    unsetenv("GPUAAS_TOKEN");
    cr_assert_eq(gx_cli_http_init(h, url, token, NULL, err, sizeof err), 0, "%s", err);
}

Test(cli_http, get_json_with_token_and_date)
{
    responder rs = serve_once("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                              "Date: Sun, 29 Nov 2026 18:00:00 GMT\r\nContent-Length: 15\r\nConnection: close\r\n\r\n"
                              "{\"name\":\"bob\"}\n");
    gx_cli_http h;
    init_for(&h, rs.port, "gpt_x_y");
    gx_cli_resp r;
    cr_assert_eq(gx_cli_http_call(&h, "GET", "/api/v1/whoami", NULL, 0, NULL, &r), 0, "%s", r.curl_err);
    cr_assert_eq(r.status, 200);
    cr_assert_str_eq(json_string_value(json_object_get(r.json, "name")), "bob");
    cr_assert_eq(h.date_ms, 1795975200000LL, "the server's clock comes from Date");
    char *req = request_of(&rs);
    cr_assert(strstr(req, "GET /api/v1/whoami HTTP/1.1\r\n"), "%s", req);
    cr_assert(strstr(req, "Authorization: Bearer gpt_x_y\r\n"), "%s", req);
    cr_assert(strstr(req, "Accept: application/json\r\n"), "%s", req);
    gx_cli_resp_free(&r);
    gx_cli_http_free(&h);
}

Test(cli_http, post_body_and_content_type)
{
    responder rs = serve_once("HTTP/1.1 201 Created\r\nContent-Length: 12\r\nConnection: close\r\n\r\n{\"items\":[]}");
    gx_cli_http h;
    init_for(&h, rs.port, "t");
    gx_cli_resp r;
    const char *body = "kind: Job\n";
    cr_assert_eq(gx_cli_http_call(&h, "POST", "/api/v1/workloads", body, strlen(body), "application/yaml", &r), 0);
    cr_assert_eq(r.status, 201);
    char *req = request_of(&rs);
    cr_assert(strstr(req, "POST /api/v1/workloads HTTP/1.1\r\n"), "%s", req);
    cr_assert(strstr(req, "Content-Type: application/yaml\r\n"), "%s", req);
    cr_assert(strstr(req, "\r\n\r\nkind: Job\n"), "%s", req);
    gx_cli_resp_free(&r);
    gx_cli_http_free(&h);
}

Test(cli_http, error_body_is_reported_with_the_file, .init = cr_redirect_stderr)
{
    responder rs = serve_once("HTTP/1.1 422 Unprocessable Entity\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
                              "{\"error\":{\"code\":422,\"reason\":\"Invalid\",\"message\":\"quantity \\\"-1\\\" is negative\","
                              "\"field\":\"spec.x\",\"line\":2}}");
    gx_cli_http h;
    init_for(&h, rs.port, "t");
    gx_cli_body src = {0};
    gx_cli_part part = {"bad.yaml", 1, 3};
    src.parts = &part;
    src.nparts = 1;
    gx_cli_resp r;
    cr_assert_eq(gx_cli_http_call(&h, "POST", "/api/v1/apply", "a: 1\n", 5, "application/yaml", &r), -1);
    cr_assert_eq(r.status, 422);
    cr_assert_eq(gx_cli_http_report(&h, &r, &src), 1);
    request_of(&rs);
    gx_cli_resp_free(&r);
    gx_cli_http_free(&h);
    fflush(stderr);
    cr_assert_stderr_eq_str("error: bad.yaml:2: spec.x: quantity \"-1\" is negative\n");
}

Test(cli_http, connection_refused_is_friendly, .init = cr_redirect_stderr)
{
    int port, s = listen_any(&port);
    close(s); /* nothing listens there now */
    gx_cli_http h;
    init_for(&h, port, "t");
    gx_cli_resp r;
    cr_assert_eq(gx_cli_http_call(&h, "GET", "/api/v1/workloads", NULL, 0, NULL, &r), -1);
    cr_assert_eq(r.status, 0);
    cr_assert_eq(gx_cli_http_report(&h, &r, NULL), 1);
    gx_cli_resp_free(&r);
    char want[200];
    snprintf(want, sizeof want, "error: cannot reach gpuaas at http://127.0.0.1:%d: is the daemon running? (start it with: make run)\n", port);
    gx_cli_http_free(&h);
    fflush(stderr);
    cr_assert_stderr_eq_str(want);
}

Test(cli_http, unauthorized_without_token_says_how, .init = cr_redirect_stderr)
{
    responder rs = serve_once("HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
                              "{\"error\":{\"code\":401,\"reason\":\"Unauthorized\",\"message\":\"missing token\"}}");
    gx_cli_http h;
    init_for(&h, rs.port, NULL);
    cr_assert_null(h.token);
    gx_cli_resp r;
    cr_assert_eq(gx_cli_http_call(&h, "GET", "/api/v1/whoami", NULL, 0, NULL, &r), -1);
    gx_cli_http_report(&h, &r, NULL);
    char *req = request_of(&rs);
    cr_assert_null(strstr(req, "Authorization"), "no header without a token");
    gx_cli_resp_free(&r);
    gx_cli_http_free(&h);
    fflush(stderr);
    FILE *f = cr_get_redirected_stderr();
    char line[512] = "";
    cr_assert_not_null(fgets(line, sizeof line, f));
    cr_assert(strstr(line, "export GPUAAS_TOKEN="), "%s", line);
}

Test(cli_http, stream_copies_the_body)
{
    responder rs = serve_once("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                              "6\r\nstep 1\r\n7\r\n\nstep 2\r\n1\r\n\n\r\n0\r\n\r\n");
    gx_cli_http h;
    init_for(&h, rs.port, "t");
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    volatile sig_atomic_t stop = 0;
    cr_assert_eq(gx_cli_http_stream(&h, "/api/v1/workloads/a/b/logs?follow=1", out, &stop), 0);
    fclose(out);
    cr_assert_str_eq(text, "step 1\nstep 2\n");
    char *req = request_of(&rs);
    cr_assert(strstr(req, "GET /api/v1/workloads/a/b/logs?follow=1 "), "%s", req);
    free(text);
    gx_cli_http_free(&h);
}

Test(cli_http, server_and_token_resolution)
{
    gx_cli_http h;
    char err[256];
    setenv("GPUAAS_SERVER", "gpu-box:9000/", 1);
    setenv("GPUAAS_TOKEN", "  gpt_env\n", 1);
    cr_assert_eq(gx_cli_http_init(&h, NULL, NULL, NULL, err, sizeof err), 0, "%s", err);
    cr_assert_str_eq(h.server, "http://gpu-box:9000", "scheme added, trailing slash dropped");
    cr_assert_str_eq(h.token, "gpt_env", "whitespace trimmed");
    cr_assert_str_eq(h.token_src, "GPUAAS_TOKEN");
    gx_cli_http_free(&h);
    cr_assert_eq(gx_cli_http_init(&h, "https://x", "gpt_flag", NULL, err, sizeof err), 0);
    cr_assert_str_eq(h.server, "https://x", "the flag wins");
    cr_assert_str_eq(h.token, "gpt_flag");
    gx_cli_http_free(&h);
    unsetenv("GPUAAS_SERVER");
    unsetenv("GPUAAS_TOKEN");
    cr_assert_eq(gx_cli_http_init(&h, NULL, NULL, NULL, err, sizeof err), 0);
    cr_assert_str_eq(h.server, GX_CLI_DEFAULT_SERVER);
    cr_assert_null(h.token);
    gx_cli_http_free(&h);
    cr_assert_eq(gx_cli_http_init(&h, "ftp://x", NULL, NULL, err, sizeof err), -1);
    cr_assert_eq(gx_cli_http_init(&h, NULL, "a\r\nX-Evil: 1", NULL, err, sizeof err), -1, "no header injection");
    cr_assert_eq(gx_cli_http_init(&h, NULL, NULL, "/nonexistent/token", err, sizeof err), -1);
    cr_assert(strstr(err, "/nonexistent/token"), "%s", err);
}
