/* reservation: the pure booking model behind kind Reservation (gpuaas.dev/v1alpha1).
 *
 * Owns: the book of accepted bookings (owner namespace/name, the owner ClusterQueue, the
 * capacity pool it draws on, the booked flavor/resource quantities and its occurrences as
 * UTC [start, end) instants), the "never overbooked" rule, the per-namespace booking
 * limits, and the answer to a refused booking (the conflicting bookings and the nearest
 * free windows of the same length before and after).
 * Must not: read a clock, the TZ database or files. A weekly recurrence in a time zone is
 * expanded into instants by the shell (lib/tzwin) and handed in as occurrences; "now"
 * comes in as an argument.
 *
 * The capacity rule: a booking draws on a pool whose capacity the caller names and sets
 * per (flavor, resource); the engine's pool is the owner ClusterQueue and its capacity that
 * queue's nominal quota (what its cohort lends it cannot be guaranteed). At every instant
 * the bookings of one pool, flavor and resource add up to at most that capacity. A pool
 * with no capacity set for a flavor/resource has none: every booking of it is refused.
 *
 * Limits (per namespace, optional): gpusAtOnce, the booked GPUs of the namespace at any
 * instant; gpuHoursPerWeek, booked GPU-hours in each calendar week (Monday 00:00 UTC to
 * the next). GPUs are the resource named GX_RSV_GPU.
 *
 * Quantities are milli-units (core/quantity, as everywhere in the engine): 2 GPUs are
 * 2000; gpusAtOnce likewise; gpuHoursPerWeek is given in milli-GPU-milliseconds. */
#ifndef GX_RESERVATION_H
#define GX_RESERVATION_H
#include <stddef.h>
#include <stdint.h>
#include "lib/err.h"

#define GX_RSV_GPU "nvidia.com/gpu"
#define GX_RSV_MAX_CONFLICTS 16

typedef struct gx_rsv_window { int64_t start, end; } gx_rsv_window;   /* [start, end) ms */

typedef struct gx_rsv_item { const char *flavor, *resource; int64_t qty; } gx_rsv_item;

/* A booking to add. Strings and arrays are copied. */
typedef struct gx_rsv_request {
    const char *ns, *name;              /* the owner */
    const char *cluster_queue;          /* whose workloads use it */
    const char *pool;                   /* capacity pool (see above) */
    const gx_rsv_item *items; size_t n_items;
    const gx_rsv_window *occ; size_t n_occ;   /* any order; each start < end */
    int64_t lead_ms, no_show_ms;        /* 0 = none */
    int64_t not_before;                 /* alternatives start no earlier (the caller's now) */
} gx_rsv_request;

typedef struct gx_rsv_conflict {
    char *ns, *name, *flavor, *resource;
    gx_rsv_window w;                    /* the conflicting booking's occurrence */
} gx_rsv_conflict;

/* Why a booking was refused. err: status 409 for capacity (field "spec.resources[i]"),
 * 422 for a limit (field "spec.resources[i].quantity", the message names the limit),
 * 422 for a malformed request. alt_before/alt_after: the earliest occurrence moved to the
 * nearest window of the same length that fits (every occurrence moved by the same
 * amount), has_before/has_after 0 when none (weekly-hours refusals give none: moving
 * within a week changes nothing). */
typedef struct gx_rsv_refusal {
    gx_err err;
    int conflict;                       /* 1: valid but does not fit (capacity or a limit); 0: malformed */
    gx_rsv_conflict conf[GX_RSV_MAX_CONFLICTS]; size_t n_conf;
    int has_before, has_after;
    gx_rsv_window alt_before, alt_after;
} gx_rsv_refusal;

typedef struct gx_rsv_book gx_rsv_book;

gx_rsv_book *gx_reservation_book_new(void);
void gx_reservation_book_free(gx_rsv_book *b);

/* Set (replace) the capacity of pool/flavor/resource. */
void gx_reservation_set_capacity(gx_rsv_book *b, const char *pool, const char *flavor,
                                 const char *resource, int64_t qty);
/* Per-namespace limits; -1 = unlimited. gpu_ms_per_week: GPU-milliseconds. */
void gx_reservation_set_limit(gx_rsv_book *b, const char *ns, int64_t gpus_at_once,
                              int64_t gpu_ms_per_week);

/* Add a booking (replacing one with the same ns/name, which does not count against the
 * new one). 0 when accepted; -1 with *why filled (why may be NULL) when refused. Free
 * the refusal with gx_reservation_refusal_free. */
int gx_reservation_add(gx_rsv_book *b, const gx_rsv_request *r, gx_rsv_refusal *why);
void gx_reservation_refusal_free(gx_rsv_refusal *why);
/* Remove a booking; -1 when there is none. */
int gx_reservation_remove(gx_rsv_book *b, const char *ns, const char *name);

/* Bookings by index (0 .. count-1, in the order added; an index changes when an earlier
 * booking is removed). */
typedef struct gx_rsv_info {
    const char *ns, *name, *cluster_queue;
    size_t n_items;
    int64_t lead_ms, no_show_ms;
} gx_rsv_info;
size_t gx_reservation_count(const gx_rsv_book *b);
void gx_reservation_get(const gx_rsv_book *b, size_t i, gx_rsv_info *out);
/* Item k of booking i. */
gx_rsv_item gx_reservation_item(const gx_rsv_book *b, size_t i, size_t k);

/* ---- what admission asks at an instant ------------------------------------------------ */

/* The phase of a booking at t: none (outside its occurrences and lead time), lead (in
 * [start - leadTime, start)), active (in [start, end), not released). */
enum { GX_RSV_NONE = 0, GX_RSV_LEAD, GX_RSV_ACTIVE };
int gx_reservation_phase(const gx_rsv_book *b, const char *ns, const char *name, int64_t t,
                         gx_rsv_window *occ);
/* Quantity of flavor/resource booked for cluster_queue and active at t. */
int64_t gx_reservation_booked(const gx_rsv_book *b, const char *cluster_queue,
                              const char *flavor, const char *resource, int64_t t);
/* Release the occurrence of ns/name that contains t (a no-show) for the rest of it.
 * -1 when the booking is not active at t. */
int gx_reservation_release(gx_rsv_book *b, const char *ns, const char *name, int64_t t);
/* The earliest instant > now at which some booking changes phase (lead start, start,
 * start + noShowTimeout, end), or INT64_MAX. */
int64_t gx_reservation_next_change(const gx_rsv_book *b, int64_t now);

#endif
