/* store: the gateway's API keys read back at start, against real SQLite in a throw-away
 * folder: the active keys and only the newest ended ones, so that a daemon whose users
 * made and revoked many keys does not read them all. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <jansson.h>
#include "store/store.h"
#include "test_store_util.h"

static void put(gx_store *s, const char *id, int64_t created, int64_t expires)
{
    static const unsigned char hash[32] = {1, 2, 3};
    gx_store_api_key k = {.id = id, .name = id, .user = "alice", .ns = "team-a", .tier = "free",
                          .hash = hash, .hash_len = sizeof hash, .created_ms = created, .expires_ms = expires};
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_store_put_api_key(s, &k, &e), 0, "%s", e.msg);
}

static char *ids(gx_store *s, int64_t now, int64_t keep)
{
    gx_err e;
    gx_err_clear(&e);
    json_t *rows = gx_store_api_keys(s, now, keep, &e);
    cr_assert_not_null(rows, "%s", e.msg);
    static char out[256];
    out[0] = 0;
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        if (*out) strcat(out, " ");
        strcat(out, json_string_value(json_object_get(r, "id")));
    }
    json_decref(rows);
    return out;
}

Test(store_keys, start_reads_active_keys_and_the_newest_ended, .init = store_tmp_make, .fini = store_tmp_remove)
{
    gx_store *s = open_store();
    gx_err e;
    gx_err_clear(&e);
    put(s, "a-active", 100, 10000);
    put(s, "b-expired", 200, 500);      /* ended at 500 */
    put(s, "c-revoked", 300, 10000);    /* ended at 900 */
    put(s, "d-revoked", 400, 10000);    /* ended at 700 */
    put(s, "e-active", 500, 0);         /* no expiry */
    cr_assert_eq(gx_store_revoke_api_key(s, "c-revoked", 900, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_store_revoke_api_key(s, "d-revoked", 700, &e), 0, "%s", e.msg);
    cr_assert_str_eq(ids(s, 1000, 0), "a-active e-active");
    cr_assert_str_eq(ids(s, 1000, 1), "a-active c-revoked e-active", "the one that ended last");
    cr_assert_str_eq(ids(s, 1000, 2), "a-active c-revoked d-revoked e-active");
    cr_assert_str_eq(ids(s, 1000, 10), "a-active b-expired c-revoked d-revoked e-active");
    cr_assert_str_eq(ids(s, 400, 0), "a-active b-expired e-active", "not expired yet at 400");
    cr_assert_str_eq(ids(s, 20000, 1), "a-active e-active", "a-active expired at 10000, after c's revocation");
    gx_store_close(s);
}
