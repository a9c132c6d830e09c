/* loop: the daemon's one event loop (epoll), like Redis's ae or nginx's event core.
 * Owns: file-descriptor watches, timers, the cached clocks, the before-sleep hook.
 * Must not: know what the descriptors are for.
 * Time: two clocks, each in ms and read once per iteration, so that everything handled
 * in one iteration sees the same "now":
 *  - gx_loop_mono(): CLOCK_MONOTONIC, for timers, timeouts, deadlines and intervals (a
 *    step of the wall clock, by NTP or an operator, moves none of them);
 *  - gx_loop_now(): CLOCK_REALTIME, for timestamps shown to users or stored
 *    (createdAt, admittedAt, usage rows, expiry times that outlive the process). */
#ifndef GX_LOOP_H
#define GX_LOOP_H
#include <stdint.h>

typedef struct gx_loop gx_loop;
typedef void (*gx_fd_fn)(gx_loop *l, int fd, uint32_t events, void *ud);
typedef void (*gx_timer_fn)(gx_loop *l, void *ud);
/* Runs before the loop sleeps; returns the longest sleep it allows in ms (-1: no limit). */
typedef int64_t (*gx_prepare_fn)(gx_loop *l, void *ud);

gx_loop *gx_loop_new(void);
void gx_loop_free(gx_loop *l);
int gx_loop_watch(gx_loop *l, int fd, uint32_t events, gx_fd_fn fn, void *ud);
void gx_loop_unwatch(gx_loop *l, int fd);
/* One-shot timer at monotonic time at_ms (gx_loop_mono() + delay). Returns an id
 * (> 0) for gx_loop_cancel. */
uint64_t gx_loop_at(gx_loop *l, int64_t at_ms, gx_timer_fn fn, void *ud);
void gx_loop_cancel(gx_loop *l, uint64_t id);
void gx_loop_set_prepare(gx_loop *l, gx_prepare_fn fn, void *ud);
/* The wall clock (ms since the epoch): for stamps, never for measuring time. */
int64_t gx_loop_now(const gx_loop *l);
/* The monotonic clock (ms, arbitrary origin): for timers and timeouts. */
int64_t gx_loop_mono(const gx_loop *l);
/* Re-read both clocks (after something slow, such as a commit); returns the wall one. */
int64_t gx_loop_update_time(gx_loop *l);
void gx_loop_stop(gx_loop *l);
/* Run until gx_loop_stop() (then it may be run again). */
int gx_loop_run(gx_loop *l);

#endif
