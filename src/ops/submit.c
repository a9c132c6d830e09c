/* submit: several workloads submitted as one (a multi-document file, a template that
 * renders several Jobs): recorded in one SQLite transaction, so that either all of
 * them exist afterwards, even across a crash, or none does. Undoing by compensation
 * (cancel and delete what was created) would leave the first ones behind when the
 * daemon dies in between. */
#include <stdio.h>
#include "ops/daemon.h"

int gx_d_submit_all(gx_daemon *d, json_t *const *manifests, size_t n, json_t **views, gx_err *err)
{
    size_t i = 0;
    for (size_t k = 0; k < n; k++) views[k] = NULL;
    if (gx_store_begin(d->store, err)) return -1;
    for (; i < n; i++)
        if (gx_d_submit(d, manifests[i], NULL, &views[i], err)) { err->doc = (int)i; goto undo; }
    if (gx_store_commit(d->store, err)) goto undo;
    return 0;
undo:
    gx_store_rollback(d->store);
    /* what was taken into memory goes as its records did */
    for (size_t k = 0; k < i; k++) {
        gx_d_unsubmit(d, json_string_value(json_object_get(views[k], "key")));
        json_decref(views[k]);
        views[k] = NULL;
    }
    return -1;
}
