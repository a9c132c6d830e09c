/* users: the one user-deletion path (see users.h). */
#include <stdio.h>
#include <string.h>
#include "ops/users.h"
#include "maas/maas.h"
#include "portal/portal.h"

int gx_d_delete_user(gx_daemon *d, const char *name, gx_err *err)
{
    /* name may point into the user table, which the deletion moves: keep a copy */
    char who[sizeof ((gx_user *)0)->name];
    if (strlen(name) >= sizeof who) return gx_errf(err, 404, "name", "no user %.100s", name);
    memcpy(who, name, strlen(name) + 1);
    if (gx_auth_delete_user(d->auth, who, err)) return -1;
    gx_maas_user_deleted(d->maas, who);      /* their gateway API keys stop working too */
    gx_portal_user_deleted(d->portal, who);  /* their portal sessions end at once */
    return 0;
}
