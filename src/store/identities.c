/* identities: statements on ns_identities (see identities.h). */
#include <sqlite3.h>
#include "store/identities.h"
#include "store/store_int.h"

int gx_store_identity_put(gx_store *s, const char *ns, int64_t uid, int64_t now_ms, gx_err *err)
{
    if (gx_store_run(s, err, "INSERT INTO ns_identities (namespace, uid, created_ms) VALUES (?1, ?2, ?3)", "sii", ns,
                     uid, now_ms) == 0)
        return 0;
    if (sqlite3_extended_errcode(s->db) == SQLITE_CONSTRAINT_UNIQUE ||
        sqlite3_extended_errcode(s->db) == SQLITE_CONSTRAINT_PRIMARYKEY)
        err->status = 409;
    return -1;
}

json_t *gx_store_identities(gx_store *s, gx_err *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, "SELECT namespace, uid FROM ns_identities", -1, &st, NULL) != SQLITE_OK) {
        gx_store_sqlerr(s, err, "reading ns_identities");
        return NULL;
    }
    json_t *out = json_object();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *ns = (const char *)sqlite3_column_text(st, 0);
        if (ns) json_object_set_new(out, ns, json_integer(sqlite3_column_int64(st, 1)));
    }
    return gx_store_read_end(s, st, rc, out, "ns_identities", err);
}
