/* Unit tests for what the HTTP server's connection limits stand on: the per-address
 * counts (net/addrs.c, against a plain list, in a table small enough that runs collide
 * and wrap around) and the loop's rule that a descriptor closed and reused within one
 * batch of events never gets the old watch's events (net/loop.c). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>
#include "net/addrs.h"
#include "net/loop.h"

Test(net_addrs, counts_match_a_plain_list_through_inserts_and_removals)
{
    enum { KEYS = 40, STEPS = 200000 };
    gx_addrs t;
    gx_addrs_init(&t, KEYS);   /* 128 slots: long runs, wrapping at the end */
    uint32_t key[KEYS];
    uint32_t want[KEYS] = {0};
    srand(7);
    for (int i = 0; i < KEYS; i++) key[i] = (uint32_t)rand() << 1 ^ (uint32_t)i;
    for (int s = 0; s < STEPS; s++) {
        int i = rand() % KEYS;
        if (rand() % 2) {
            cr_assert_eq(gx_addrs_inc(&t, key[i]), ++want[i]);
        } else {
            gx_addrs_dec(&t, key[i]);
            if (want[i]) want[i]--;
        }
        if (s % 97 == 0)
            for (int j = 0; j < KEYS; j++)
                cr_assert_eq(gx_addrs_get(&t, key[j]), want[j], "step %d, key %d: %u, want %u", s, j,
                             gx_addrs_get(&t, key[j]), want[j]);
    }
    for (int j = 0; j < KEYS; j++) {
        while (want[j]--) gx_addrs_dec(&t, key[j]);
        cr_assert_eq(gx_addrs_get(&t, key[j]), 0);
    }
    for (size_t i = 0; i <= t.mask; i++) cr_assert_eq(t.slot[i], 0, "slot %zu left behind", i);
    gx_addrs_free(&t);
}

typedef struct swap {
    int p[2][2];        /* two pipes, both readable */
    int fresh[2];       /* the pipe made in place of the other one */
    int fired, stale;
} swap;

static void on_fresh(gx_loop *l, int fd, uint32_t ev, void *ud)
{
    (void)l; (void)fd; (void)ev;
    ((swap *)ud)->stale++;   /* the fresh pipe is empty: only the old watch's event */
}

/* The first of the two readable pipes to be handled closes the other and makes a new
 * pipe, whose read end takes the closed descriptor's number. */
static void on_pipe(gx_loop *l, int fd, uint32_t ev, void *ud)
{
    (void)ev;
    swap *s = ud;
    char b;
    cr_assert_eq(read(fd, &b, 1), 1);   /* level-triggered: else it fires again */
    if (s->fired++) return;
    int other = fd == s->p[0][0] ? 1 : 0;
    int old = s->p[other][0];
    gx_loop_unwatch(l, old);
    close(old);
    close(s->p[other][1]);
    s->p[other][0] = s->p[other][1] = -1;
    cr_assert_eq(pipe(s->fresh), 0);
    cr_assert_eq(s->fresh[0], old, "the new pipe did not reuse the number");
    cr_assert_eq(gx_loop_watch(l, s->fresh[0], EPOLLIN, on_fresh, s), 0);
}

static void stop(gx_loop *l, void *ud) { (void)ud; gx_loop_stop(l); }

Test(net_loop, a_descriptor_reused_within_a_batch_does_not_get_the_old_event)
{
    gx_loop *l = gx_loop_new();
    swap s = {.fresh = {-1, -1}};
    for (int i = 0; i < 2; i++) {
        cr_assert_eq(pipe(s.p[i]), 0);
        cr_assert_eq(write(s.p[i][1], "x", 1), 1);
    }
    for (int i = 0; i < 2; i++) cr_assert_eq(gx_loop_watch(l, s.p[i][0], EPOLLIN, on_pipe, &s), 0);
    gx_loop_at(l, gx_loop_mono(l) + 100, stop, NULL);
    gx_loop_run(l);
    cr_assert_eq(s.fired, 1, "the closed pipe's watch ran");
    cr_assert_eq(s.stale, 0, "the new watch got the closed descriptor's event");
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            if (s.p[i][j] >= 0) close(s.p[i][j]);
    close(s.fresh[0]);
    close(s.fresh[1]);
    gx_loop_free(l);
}
