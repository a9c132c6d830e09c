/* users: the one user-deletion path (see users.h), and the daemon's registry of the
 * front doors' hooks that a deletion and /metrics call. */
#include <stdio.h>
#include <string.h>
#include "ops/users.h"

int gx_d_register_hooks(gx_daemon *d, const gx_hooks *h)
{
    if (d->nhooks == (int)(sizeof d->hooks / sizeof *d->hooks)) return -1;
    d->hooks[d->nhooks++] = *h;
    return 0;
}

int gx_d_ready(const gx_daemon *d) { return d->ready; }

int gx_d_delete_user(gx_daemon *d, const char *name, gx_err *err)
{
    /* name may point into the user table, which the deletion moves: keep a copy */
    char who[sizeof ((gx_user *)0)->name];
    if (strlen(name) >= sizeof who) return gx_errf(err, 404, "name", "no user %.100s", name);
    memcpy(who, name, strlen(name) + 1);
    if (gx_auth_delete_user(d->auth, who, err)) return -1;
    /* then what the front doors hold for them: gateway keys stop working, portal
     * sessions end, at once */
    for (int i = 0; i < d->nhooks; i++)
        if (d->hooks[i].user_deleted) d->hooks[i].user_deleted(d->hooks[i].ud, who);
    return 0;
}
