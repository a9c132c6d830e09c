/* Unit tests of the HTTP server's durability barrier (gx_http_set_barrier in
 * src/net/http.c) over real loopback sockets and the real loop: an answer whose
 * request made a change (the ticket moved while it was handled) is held until
 * gx_http_release covers that change, and only then sent; a release short of it
 * sends nothing; a request that changed nothing is answered at once even while
 * another is held; a request pipelined behind a held one is answered after it. The
 * ticket is a counter here; in the daemon it is the store's commit count. */
#include <criterion/criterion.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "net/http.h"
#include "net/loop.h"

typedef struct bsrv {
    gx_loop *loop;
    gx_http *h;
    uint64_t commits;
} bsrv;

static uint64_t ticket(void *ud) { return ((bsrv *)ud)->commits; }

/* /write makes a change; anything else reads. */
static void handler(gx_req *req, gx_resp *resp, void *ud)
{
    bsrv *s = ud;
    if (!strcmp(req->path, "/write")) {
        s->commits++;
        gx_resp_text(resp, 201, "text/plain", "saved\n");
    } else {
        gx_resp_text(resp, 200, "text/plain", "read\n");
    }
}

static int64_t prepare(gx_loop *l, void *ud)
{
    (void)l;
    gx_http_run(((bsrv *)ud)->h);
    return 5;
}

static void stop(gx_loop *l, void *ud) { (void)ud; gx_loop_stop(l); }

/* Run the loop for ms milliseconds. */
static void spin(bsrv *s, int ms)
{
    gx_loop_at(s->loop, gx_loop_mono(s->loop) + ms, stop, s);
    gx_loop_run(s->loop);
}

static int client(bsrv *s, const char *request)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)gx_http_port(s->h)),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    cr_assert_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    cr_assert_eq(send(fd, request, strlen(request), 0), (ssize_t)strlen(request));
    return fd;
}

/* What the client has received so far, appended to buf. */
static void take(int fd, char *buf, size_t cap)
{
    size_t len = strlen(buf);
    ssize_t n;
    while (len + 1 < cap && (n = recv(fd, buf + len, cap - 1 - len, MSG_DONTWAIT)) > 0) len += (size_t)n;
    buf[len] = 0;
}

static void start(bsrv *s)
{
    memset(s, 0, sizeof *s);
    s->loop = gx_loop_new();
    gx_err e;
    s->h = gx_http_start(s->loop, "127.0.0.1", 0, NULL, handler, s, &e);
    cr_assert_not_null(s->h, "%s", e.msg);
    gx_http_set_barrier(s->h, ticket, s);
    gx_loop_set_prepare(s->loop, prepare, s);
}

static void end(bsrv *s)
{
    gx_http_stop(s->h);
    gx_loop_free(s->loop);
}

static const char WRITE[] = "POST /write HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n";
static const char READ[] = "GET /read HTTP/1.1\r\nHost: t\r\n\r\n";

Test(http_barrier, a_change_is_answered_only_once_it_is_synced)
{
    bsrv s;
    start(&s);
    char got[4096] = "";
    int w = client(&s, WRITE);
    spin(&s, 150);
    take(w, got, sizeof got);
    cr_assert_str_eq(got, "", "nothing before the sync; got: %s", got);
    cr_assert_eq(gx_http_held(s.h), 1);

    /* a release short of the change sends nothing */
    gx_http_release(s.h, s.commits - 1);
    spin(&s, 50);
    take(w, got, sizeof got);
    cr_assert_str_eq(got, "", "released too early; got: %s", got);

    /* a read meanwhile is answered at once */
    char rgot[4096] = "";
    int r = client(&s, READ);
    spin(&s, 100);
    take(r, rgot, sizeof rgot);
    cr_assert(strstr(rgot, "200 OK") && strstr(rgot, "read"), "the read waits for nothing; got: %s", rgot);

    gx_http_release(s.h, s.commits);
    spin(&s, 100);
    take(w, got, sizeof got);
    cr_assert(strstr(got, "201") && strstr(got, "saved"), "the change is answered once synced; got: %s", got);
    cr_assert_eq(gx_http_held(s.h), 0);
    close(w);
    close(r);
    end(&s);
}

Test(http_barrier, a_request_pipelined_behind_a_held_answer_waits_its_turn)
{
    bsrv s;
    start(&s);
    char both[sizeof WRITE + sizeof READ];
    snprintf(both, sizeof both, "%s%s", WRITE, READ);
    char got[8192] = "";
    int c = client(&s, both);
    spin(&s, 150);
    take(c, got, sizeof got);
    cr_assert_str_eq(got, "", "neither answer before the sync; got: %s", got);
    gx_http_release(s.h, s.commits);
    spin(&s, 150);
    take(c, got, sizeof got);
    char *saved = strstr(got, "saved"), *read = strstr(got, "read");
    cr_assert(saved && read && saved < read, "both, in order; got: %s", got);
    close(c);
    end(&s);
}

Test(http_barrier, without_a_barrier_nothing_is_held)
{
    bsrv s;
    start(&s);
    gx_http_set_barrier(s.h, NULL, NULL);
    char got[4096] = "";
    int w = client(&s, WRITE);
    spin(&s, 150);
    take(w, got, sizeof got);
    cr_assert(strstr(got, "saved"), "got: %s", got);
    close(w);
    end(&s);
}
