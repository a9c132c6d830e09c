/* users: deleting a user, the one path the REST API and the portal's Admin page share.
 * Owns: what a deletion takes away, in order: the user and their API tokens (auth,
 * committed), then their gateway API keys (revoked, committed), then their portal
 * sessions (ended in memory and in the store). Any of them left behind would let a
 * deleted person keep acting. */
#ifndef GX_USERS_H
#define GX_USERS_H
#include "ops/daemon.h"

/* 404 when there is no such user, 409 for "admin"; 0 once all of the above is done. */
int gx_d_delete_user(gx_daemon *d, const char *name, gx_err *err);

#endif
