/* Unit tests of the HTTP server's deferred answers (src/net/http.c) over real loopback
 * sockets, driven by the real loop (src/net/loop.c): the handler is entered once per
 * request, whether it answers at once, defers and completes later with
 * gx_http_complete, completes before it returned, or defers a streamed body; the
 * caller's cleanup (async_free, a stream's free) runs once, at the request's end, and
 * never from inside gx_http_complete; a client that leaves while its answer is
 * deferred gets its cleanup too; a second completion is refused. Also the loop's two
 * clocks: timers run on the monotonic one. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "net/http.h"
#include "net/loop.h"

enum { ANSWER, DEFER, EARLY, DEFER_STREAM, DEFER_TWICE };

typedef struct srv {
    gx_loop *loop;
    gx_http *h;
    int mode;
    int calls;                /* handler entries */
    gx_req *held;             /* the deferred request */
    uint64_t timer;
    int freed, freed_inside;  /* async_free calls, and those inside gx_http_complete */
    int sfreed, sfreed_inside;
    int in_complete;
    int second_rc;            /* DEFER_TWICE: what the second gx_http_complete returned */
    int chunks;               /* the stream's reads that returned bytes */
    int client;
    int close_client;         /* the client leaves once the handler deferred */
    int client_gone;
    char got[8192];
    size_t glen;
    int eof, timed_out;
    const char *until;        /* stop once the answer holds this */
} srv;

static void on_async_free(void *ud)
{
    srv *s = ud;
    s->freed++;
    if (s->in_complete) s->freed_inside++;
    if (s->timer) gx_loop_cancel(s->loop, s->timer);
    s->timer = 0;
    s->held = NULL;
}

static ssize_t stream_read(void *ud, char *buf, size_t max)
{
    srv *s = ud;
    if (s->chunks == 2) return -1;
    cr_assert_geq(max, 1);
    buf[0] = (char)('a' + s->chunks++);
    return 1;
}

static void stream_free(void *ud)
{
    srv *s = ud;
    s->sfreed++;
    if (s->in_complete) s->sfreed_inside++;
}

/* The deferred answer, as the gateway gives one: from a loop callback of its own. */
static void complete(srv *s)
{
    gx_resp r;
    memset(&r, 0, sizeof r);
    if (s->mode == DEFER_STREAM) {
        r.status = 200;
        r.stream = (gx_stream){.read = stream_read, .free = stream_free, .ud = s};
    } else {
        gx_resp_text(&r, 200, "text/plain", "later\n");
        gx_resp_header(&r, "X-Deferred", "1");
    }
    s->in_complete = 1;
    int rc = gx_http_complete(s->held, &r);
    cr_assert_eq(rc, 0);
    if (s->mode == DEFER_TWICE) {
        gx_resp again;
        memset(&again, 0, sizeof again);
        gx_resp_text(&again, 200, "text/plain", "twice\n");   /* freed by the refusal */
        s->second_rc = gx_http_complete(s->held, &again);
    }
    s->in_complete = 0;
}

static void on_timer(gx_loop *l, void *ud)
{
    (void)l;
    srv *s = ud;
    s->timer = 0;
    complete(s);
}

static void handler(gx_req *req, gx_resp *resp, void *ud)
{
    srv *s = ud;
    s->calls++;
    if (s->mode == ANSWER) {
        gx_resp_text(resp, 200, "text/plain", "now\n");
        return;
    }
    s->held = req;
    req->async = s;
    req->async_free = on_async_free;
    resp->defer = 1;
    if (s->mode == EARLY) complete(s);   /* the answer was ready before returning */
    else if (!s->close_client) s->timer = gx_loop_at(s->loop, gx_loop_mono(s->loop) + 20, on_timer, s);
}

static void give_up(gx_loop *l, void *ud)
{
    ((srv *)ud)->timed_out = 1;
    gx_loop_stop(l);
}

/* Before each sleep: the server's pending work, then what the client has received. */
static int64_t prepare(gx_loop *l, void *ud)
{
    srv *s = ud;
    gx_http_run(s->h);
    if (s->close_client && s->calls && !s->client_gone) {
        close(s->client);
        s->client_gone = 1;
    }
    if (s->client_gone) {
        if (s->freed) gx_loop_stop(l);
        return 5;
    }
    for (;;) {
        ssize_t n = recv(s->client, s->got + s->glen, sizeof s->got - 1 - s->glen, MSG_DONTWAIT);
        if (n > 0) { s->glen += (size_t)n; s->got[s->glen] = 0; continue; }
        if (n == 0) s->eof = 1;
        break;
    }
    if (s->eof || (s->until && strstr(s->got, s->until))) gx_loop_stop(l);
    return 5;
}

/* One request on a fresh connection; the loop runs until the answer holds `until`. */
static void run(srv *s, int mode, const char *request, const char *until)
{
    memset(s, 0, sizeof *s);
    s->mode = mode;
    s->until = until;
    s->loop = gx_loop_new();
    cr_assert_not_null(s->loop);
    gx_err e;
    s->h = gx_http_start(s->loop, "127.0.0.1", 0, &(gx_http_limits){.body_bytes = 1 << 20}, handler, s, &e);
    cr_assert_not_null(s->h, "%s", e.msg);
    gx_loop_set_prepare(s->loop, prepare, s);
    s->client = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)gx_http_port(s->h)),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(connect(s->client, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(send(s->client, request, strlen(request), 0), (ssize_t)strlen(request));
    gx_loop_at(s->loop, gx_loop_mono(s->loop) + 5000, give_up, s);
}

static void run_loop(srv *s)
{
    gx_loop_run(s->loop);
    cr_assert(!s->timed_out, "no answer within 5 s; got: %s", s->got);
    gx_http_run(s->h);   /* the cleanup that follows an answer */
}

static void finish(srv *s)
{
    if (!s->client_gone) close(s->client);
    gx_http_stop(s->h);
    gx_loop_free(s->loop);
}

static const char GET[] = "GET /v1/x HTTP/1.1\r\nHost: t\r\n\r\n";

Test(http_server, plain_answer_enters_handler_once)
{
    srv s;
    run(&s, ANSWER, GET, "now\n");
    run_loop(&s);
    cr_assert(strstr(s.got, "HTTP/1.1 200 OK\r\n"), "%s", s.got);
    cr_assert_eq(s.calls, 1);
    finish(&s);
}

Test(http_server, deferred_answer_enters_handler_once)
{
    srv s;
    run(&s, DEFER, GET, "later\n");
    run_loop(&s);
    cr_assert(strstr(s.got, "HTTP/1.1 200 OK\r\n"), "%s", s.got);
    cr_assert(strstr(s.got, "X-Deferred: 1\r\n"), "%s", s.got);
    cr_assert(strstr(s.got, "Content-Length: 6\r\n"), "%s", s.got);
    cr_assert_eq(s.calls, 1, "the handler ran %d times", s.calls);
    cr_assert_eq(s.freed, 1, "async_free ran %d times", s.freed);
    cr_assert_eq(s.freed_inside, 0, "async_free ran inside gx_http_complete");
    finish(&s);
}

Test(http_server, completion_before_the_handler_returned)
{
    srv s;
    run(&s, EARLY, GET, "later\n");
    run_loop(&s);
    cr_assert(strstr(s.got, "HTTP/1.1 200 OK\r\n"), "%s", s.got);
    cr_assert_eq(s.calls, 1);
    cr_assert_eq(s.freed, 1);
    cr_assert_eq(s.freed_inside, 0);
    finish(&s);
}

Test(http_server, deferred_stream)
{
    srv s;
    run(&s, DEFER_STREAM, GET, "0\r\n\r\n");
    run_loop(&s);
    cr_assert(strstr(s.got, "Transfer-Encoding: chunked\r\n"), "%s", s.got);
    cr_assert(strstr(s.got, "\r\n\r\n0001\r\na\r\n0001\r\nb\r\n0\r\n\r\n"), "%s", s.got);
    cr_assert_eq(s.calls, 1);
    cr_assert_eq(s.sfreed, 1, "the stream's free ran %d times", s.sfreed);
    cr_assert_eq(s.sfreed_inside, 0);
    cr_assert_eq(s.freed, 1);
    cr_assert_eq(s.freed_inside, 0);
    finish(&s);
}

Test(http_server, second_completion_is_refused)
{
    srv s;
    run(&s, DEFER_TWICE, GET, "later\n");
    run_loop(&s);
    cr_assert_eq(s.second_rc, -1);
    cr_assert_null(strstr(s.got, "twice"), "%s", s.got);
    cr_assert_eq(s.calls, 1);
    finish(&s);
}

Test(http_server, client_gone_while_deferred)
{
    srv s;
    run(&s, DEFER, GET, NULL);
    s.close_client = 1;
    run_loop(&s);
    cr_assert_eq(s.calls, 1);
    cr_assert_eq(s.freed, 1, "async_free ran %d times for a client that left", s.freed);
    finish(&s);
}

Test(http_server, pipelined_request_after_a_deferred_one)
{
    srv s;
    run(&s, DEFER, "GET /a HTTP/1.1\r\nHost: t\r\n\r\nGET /b HTTP/1.1\r\nHost: t\r\n\r\n", NULL);
    /* both answers, in order: the second request waits for the first one's answer */
    s.until = "later\nHTTP/1.1 200 OK";
    run_loop(&s);
    s.until = NULL;
    cr_assert_eq(s.calls, 2, "%s", s.got);
    finish(&s);
}

/* ---- the loop's clocks ------------------------------------------------------------- */

static int64_t ms_of(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fired(gx_loop *l, void *ud)
{
    *(int64_t *)ud = ms_of(CLOCK_MONOTONIC);
    gx_loop_stop(l);
}

Test(loop, two_clocks)
{
    gx_loop *l = gx_loop_new();
    cr_assert_lt(llabs(gx_loop_mono(l) - ms_of(CLOCK_MONOTONIC)), 1000);
    cr_assert_lt(llabs(gx_loop_now(l) - ms_of(CLOCK_REALTIME)), 1000);
    gx_loop_free(l);
}

/* A timer set on the monotonic clock fires when that clock gets there: not at once (as
 * it did when timers compared against the wall clock, far ahead of the monotonic one). */
Test(loop, timers_run_on_the_monotonic_clock)
{
    gx_loop *l = gx_loop_new();
    int64_t t0 = ms_of(CLOCK_MONOTONIC), at = 0;
    gx_loop_at(l, t0 + 150, fired, &at);
    gx_loop_run(l);
    cr_assert_geq(at - t0, 140, "fired after %lld ms, not 150", (long long)(at - t0));
    cr_assert_lt(at - t0, 3000);
    gx_loop_free(l);
}
