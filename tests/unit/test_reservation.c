/* Unit tests of core/reservation: the pure booking model. Never overbooked (refused with
 * the conflicting bookings and the nearest free windows before and after), the
 * per-namespace limits named in the refusal, replacing a booking, and what admission
 * asks at an instant (phase with lead time, booked quantity, no-show release, next
 * change). Times are plain milliseconds: the model reads no clock. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include "core/reservation.h"

#define H (3600000LL)
#define G 1000      /* quantities are milli-units: one GPU */

static gx_rsv_request req(const char *ns, const char *name, const char *pool, gx_rsv_item *it, size_t ni,
                          gx_rsv_window *w, size_t nw)
{
    return (gx_rsv_request){ns, name, ns, pool, it, ni, w, nw, 0, 0, 0};
}

static int add1(gx_rsv_book *b, const char *ns, const char *name, int64_t qty, int64_t s, int64_t e, gx_rsv_refusal *why)
{
    gx_rsv_item it = {"h100", "nvidia.com/gpu", qty * G};
    gx_rsv_window w = {s, e};
    gx_rsv_request r = req(ns, name, "lab", &it, 1, &w, 1);
    return gx_reservation_add(b, &r, why);
}

Test(reservation, fits_until_the_capacity_then_refuses_with_conflicts_and_alternatives)
{
    gx_rsv_book *b = gx_reservation_book_new();
    gx_reservation_set_capacity(b, "lab", "h100", "nvidia.com/gpu", 4 * G);
    cr_assert_eq(add1(b, "team-a", "morning", 2, 9 * H, 12 * H, NULL), 0);
    cr_assert_eq(add1(b, "team-b", "noon", 2, 11 * H, 14 * H, NULL), 0, "2 + 2 fit in 4");
    gx_rsv_refusal why;
    cr_assert_eq(add1(b, "team-c", "late", 2, 10 * H, 13 * H, &why), -1, "11:00-12:00 would hold 6");
    cr_assert_eq(why.err.status, 409);
    cr_assert_str_eq(why.err.field, "spec.resources[0]");
    cr_assert_str_eq(why.err.msg, "overbooked: h100 nvidia.com/gpu in lab has 4, 4 already booked at 1970-01-01T11:00:00.000Z, 2 asked");
    cr_assert_eq(why.n_conf, 2);
    cr_assert_str_eq(why.conf[0].name, "morning");
    cr_assert_eq(why.conf[0].w.start, 9 * H);
    cr_assert_str_eq(why.conf[1].name, "noon");
    cr_assert_eq(why.conf[1].w.end, 14 * H);
    /* 3 hours with 2 GPUs: free up to 11:00 (morning alone) and again from 12:00 (noon alone) */
    cr_assert(why.has_before);
    cr_assert_eq(why.alt_before.start, 8 * H, "before: ends as noon starts (%lld)", (long long)why.alt_before.start);
    cr_assert_eq(why.alt_before.end, 11 * H);
    cr_assert(why.has_after);
    cr_assert_eq(why.alt_after.start, 12 * H, "after: starts as morning ends (%lld)", (long long)why.alt_after.start);
    gx_reservation_refusal_free(&why);
    cr_assert_eq(add1(b, "team-c", "late", 2, 12 * H, 15 * H, NULL), 0, "the suggested window is accepted");
    gx_reservation_book_free(b);
}

Test(reservation, alternatives_respect_not_before_and_may_not_exist)
{
    gx_rsv_book *b = gx_reservation_book_new();
    gx_reservation_set_capacity(b, "lab", "h100", "nvidia.com/gpu", 2 * G);
    cr_assert_eq(add1(b, "team-a", "x", 2, 10 * H, 12 * H, NULL), 0);
    gx_rsv_item it = {"h100", "nvidia.com/gpu", 1 * G};
    gx_rsv_window w = {11 * H, 13 * H};
    gx_rsv_request r = req("team-b", "y", "lab", &it, 1, &w, 1);
    r.not_before = 9 * H;
    gx_rsv_refusal why;
    cr_assert_eq(gx_reservation_add(b, &r, &why), -1);
    cr_assert_not(why.has_before, "08:00-10:00 would start before now (09:00)");
    cr_assert(why.has_after);
    cr_assert_eq(why.alt_after.start, 12 * H);
    gx_reservation_refusal_free(&why);
    it.qty = 3 * G;
    cr_assert_eq(gx_reservation_add(b, &r, &why), -1, "3 never fit in 2");
    cr_assert_not(why.has_before);
    cr_assert_not(why.has_after);
    gx_reservation_refusal_free(&why);
    cr_assert_eq(add1(b, "team-b", "z", 1, 1 * H, 2 * H, NULL), 0);
    gx_rsv_item other = {"a100", "nvidia.com/gpu", 1 * G};
    r.items = &other;
    cr_assert_eq(gx_reservation_add(b, &r, &why), -1, "a flavor without capacity in the pool has none");
    cr_assert_str_eq(why.err.field, "spec.resources[0]");
    gx_reservation_book_free(b);
}

Test(reservation, recurring_bookings_move_together_and_pools_are_separate)
{
    gx_rsv_book *b = gx_reservation_book_new();
    gx_reservation_set_capacity(b, "lab", "h100", "nvidia.com/gpu", 1 * G);
    gx_reservation_set_capacity(b, "other", "h100", "nvidia.com/gpu", 1 * G);
    gx_rsv_item it = {"h100", "nvidia.com/gpu", 1 * G};
    int64_t D = 24 * H;
    gx_rsv_window weekly[2] = {{7 * D + 9 * H, 7 * D + 17 * H}, {9 * H, 17 * H}};   /* any order */
    gx_rsv_request r = req("team-a", "weekly", "lab", &it, 1, weekly, 2);
    cr_assert_eq(gx_reservation_add(b, &r, NULL), 0);
    cr_assert_eq(add1(b, "team-b", "tue", 1, D + 9 * H, D + 10 * H, NULL), 0, "between the occurrences");
    gx_rsv_refusal why;
    cr_assert_eq(add1(b, "team-b", "next", 1, 7 * D + 16 * H, 7 * D + 18 * H, &why), -1, "overlaps the second occurrence");
    cr_assert_eq(why.n_conf, 1);
    cr_assert_eq(why.conf[0].w.start, 7 * D + 9 * H);
    gx_reservation_refusal_free(&why);
    gx_rsv_window w = {9 * H, 17 * H};
    gx_rsv_request o = req("team-c", "o", "other", &it, 1, &w, 1);
    cr_assert_eq(gx_reservation_add(b, &o, NULL), 0, "another pool has its own capacity");
    gx_reservation_book_free(b);
}

Test(reservation, limits_are_named_in_the_refusal)
{
    gx_rsv_book *b = gx_reservation_book_new();
    gx_reservation_set_capacity(b, "lab", "h100", "nvidia.com/gpu", 16 * G);
    gx_reservation_set_limit(b, "team-a", 3 * G, 10 * G * H);
    cr_assert_eq(add1(b, "team-a", "one", 2, 0, 2 * H, NULL), 0);
    gx_rsv_refusal why;
    cr_assert_eq(add1(b, "team-a", "two", 2, 1 * H, 3 * H, &why), -1, "4 at once > 3");
    cr_assert_eq(why.err.status, 422);
    cr_assert_str_eq(why.err.field, "spec.resources[0].quantity");
    cr_assert(strstr(why.err.msg, "gpusAtOnce"), "%s", why.err.msg);
    cr_assert_eq(why.n_conf, 1);
    cr_assert_str_eq(why.conf[0].name, "one");
    cr_assert(why.has_after);
    cr_assert_eq(why.alt_after.start, 2 * H);
    gx_reservation_refusal_free(&why);
    cr_assert_eq(add1(b, "team-b", "free", 4, 1 * H, 3 * H, NULL), 0, "other namespaces have no limit");
    /* 2 GPUs x 2 h = 4 GPU-hours booked; 4 more (2 x 2 h, same week, no overlap) = 8 <= 10 */
    cr_assert_eq(add1(b, "team-a", "three", 2, 10 * H, 12 * H, NULL), 0);
    cr_assert_eq(add1(b, "team-a", "four", 1, 20 * H, 23 * H, &why), -1, "8 + 3 GPU-hours > 10 in the week");
    cr_assert(strstr(why.err.msg, "gpuHoursPerWeek is 10.00: 8.00 GPU-hours"), "%s", why.err.msg);
    gx_reservation_refusal_free(&why);
    /* 1970-01-05 (day 4) is a Monday: a booking the next week starts a new count */
    cr_assert_eq(add1(b, "team-a", "four", 1, 4 * 24 * H, 4 * 24 * H + 3 * H, NULL), 0);
    cr_assert_eq(add1(b, "team-a", "five", 1, 4 * 24 * H - 2 * H, 4 * 24 * H - 1 * H, NULL), 0, "9 in the first week");
    gx_reservation_book_free(b);
}

Test(reservation, refuses_malformed_requests_naming_the_field)
{
    gx_rsv_book *b = gx_reservation_book_new();
    gx_reservation_set_capacity(b, "lab", "h100", "nvidia.com/gpu", 4 * G);
    gx_rsv_refusal why;
    cr_assert_eq(add1(b, "a", "x", 0, 0, H, &why), -1);
    cr_assert_str_eq(why.err.field, "spec.resources[0].quantity");
    cr_assert_eq(add1(b, "a", "x", 1, H, H, &why), -1);
    cr_assert_str_eq(why.err.field, "spec.end");
    gx_rsv_item it = {"h100", "nvidia.com/gpu", 1 * G};
    gx_rsv_window w[2] = {{0, 2 * H}, {H, 3 * H}};
    gx_rsv_request r = req("a", "x", "lab", &it, 1, w, 2);
    cr_assert_eq(gx_reservation_add(b, &r, &why), -1);
    cr_assert_str_eq(why.err.field, "spec.recurrence");
    gx_reservation_book_free(b);
}

Test(reservation, replacing_a_booking_does_not_conflict_with_itself)
{
    gx_rsv_book *b = gx_reservation_book_new();
    gx_reservation_set_capacity(b, "lab", "h100", "nvidia.com/gpu", 2 * G);
    cr_assert_eq(add1(b, "a", "x", 2, 0, 2 * H, NULL), 0);
    cr_assert_eq(add1(b, "a", "x", 2, H, 3 * H, NULL), 0, "moved: the old one no longer counts");
    cr_assert_eq(gx_reservation_booked(b, "a", "h100", "nvidia.com/gpu", 0), 0);
    cr_assert_eq(gx_reservation_booked(b, "a", "h100", "nvidia.com/gpu", 2 * H), 2 * G);
    cr_assert_eq(gx_reservation_remove(b, "a", "x"), 0);
    cr_assert_eq(gx_reservation_remove(b, "a", "x"), -1);
    cr_assert_eq(add1(b, "b", "y", 2, H, 3 * H, NULL), 0, "the removed one's capacity is free");
    gx_reservation_book_free(b);
}

Test(reservation, phases_lead_time_no_show_and_next_change)
{
    gx_rsv_book *b = gx_reservation_book_new();
    gx_reservation_set_capacity(b, "lab", "h100", "nvidia.com/gpu", 2 * G);
    gx_rsv_item it = {"h100", "nvidia.com/gpu", 2 * G};
    gx_rsv_window w = {10 * H, 12 * H};
    gx_rsv_request r = req("team-a", "x", "lab", &it, 1, &w, 1);
    r.lead_ms = H / 6;        /* 10 minutes */
    r.no_show_ms = H / 4;     /* 15 minutes */
    cr_assert_eq(gx_reservation_add(b, &r, NULL), 0);
    gx_rsv_window occ;
    cr_assert_eq(gx_reservation_phase(b, "team-a", "x", 9 * H, &occ), GX_RSV_NONE);
    cr_assert_eq(gx_reservation_phase(b, "team-a", "x", 10 * H - H / 6, &occ), GX_RSV_LEAD);
    cr_assert_eq(occ.start, 10 * H);
    cr_assert_eq(gx_reservation_phase(b, "team-a", "x", 10 * H, &occ), GX_RSV_ACTIVE);
    cr_assert_eq(gx_reservation_phase(b, "team-a", "x", 12 * H, &occ), GX_RSV_NONE, "end is exclusive");
    cr_assert_eq(gx_reservation_next_change(b, 0), 10 * H - H / 6);
    cr_assert_eq(gx_reservation_next_change(b, 10 * H - H / 6), 10 * H);
    cr_assert_eq(gx_reservation_next_change(b, 10 * H), 10 * H + H / 4, "the no-show deadline");
    cr_assert_eq(gx_reservation_next_change(b, 10 * H + H / 4), 12 * H);
    cr_assert_eq(gx_reservation_next_change(b, 12 * H), INT64_MAX);
    cr_assert_eq(gx_reservation_booked(b, "team-a", "h100", "nvidia.com/gpu", 11 * H), 2 * G);
    cr_assert_eq(gx_reservation_booked(b, "team-b", "h100", "nvidia.com/gpu", 11 * H), 0);
    cr_assert_eq(gx_reservation_release(b, "team-a", "x", 9 * H), -1, "not active");
    cr_assert_eq(gx_reservation_release(b, "team-a", "x", 10 * H + H / 4), 0);
    cr_assert_eq(gx_reservation_phase(b, "team-a", "x", 11 * H, &occ), GX_RSV_NONE, "released for the rest");
    cr_assert_eq(gx_reservation_booked(b, "team-a", "h100", "nvidia.com/gpu", 11 * H), 0);
    cr_assert_eq(add1(b, "team-b", "y", 2, 11 * H, 12 * H, NULL), 0, "a released occurrence frees its capacity");
    gx_reservation_book_free(b);
}
