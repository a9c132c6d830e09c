/* zz_stub: deleted at merge */
/* zz_stub_rsvportal: the reservation operations of ops/ops.h as pages_calendar.c codes
 * against them, until the REST helper's ops/reservations.c lands (the lead then deletes
 * this header and pages_calendar.c includes ops/ops.h alone).
 * Must not: be included anywhere but pages_calendar.c and the stub itself. */
#ifndef GX_ZZ_STUB_RSVPORTAL_H
#define GX_ZZ_STUB_RSVPORTAL_H
#include "portal/portal_int.h"

json_t *gx_d_reservations(gx_daemon *d, const gx_user *u, const char *ns, int64_t from_ms, int64_t to_ms);
int gx_d_reserve(gx_daemon *d, const gx_user *u, const json_t *doc, json_t **out, json_t **refusal, gx_err *err);
int gx_d_unreserve(gx_daemon *d, const gx_user *u, const char *ns, const char *name, gx_err *err);

#endif
