/* Unit tests of src/store/sessions.c on a real SQLite database in a temporary folder:
 * a stored session comes back after the store is closed and opened again, ended ones
 * are deleted when loading, touch moves the end, sign-out and user deletion remove
 * rows (the latter also by the users table's ON DELETE CASCADE), the load limit holds. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/sessions.h"
#include "store/store.h"
#include "test_store_util.h"

static void add_user(gx_store *s, const char *name)
{
    gx_err e;
    gx_err_clear(&e);
    json_t *ns = json_pack("[s]", "team-a");
    cr_assert_eq(gx_store_put_user(s, name, 0, ns, 1, &e), 0, "%s", e.msg);
    json_decref(ns);
}

static gx_store_session sess(unsigned char tag, const char *user, int64_t created, int64_t expires)
{
    gx_store_session ss;
    memset(&ss, 0, sizeof ss);
    memset(ss.id_hash, tag, sizeof ss.id_hash);
    snprintf(ss.user, sizeof ss.user, "%s", user);
    memset(ss.csrf, 'a' + tag % 26, 43);
    ss.created_ms = created;
    ss.expires_ms = expires;
    return ss;
}

/* load() collects into this */
static gx_store_session got[16];
static int ngot;
static void collect(void *arg, const gx_store_session *ss)
{
    (void)arg;
    cr_assert_lt(ngot, 16);
    got[ngot++] = *ss;
}

static int load(gx_store *s, int64_t now, size_t max)
{
    gx_err e;
    gx_err_clear(&e);
    ngot = 0;
    int n = gx_store_sessions_load(s, now, max, collect, NULL, &e);
    cr_assert_geq(n, 0, "load: %s", e.msg);
    cr_assert_eq(n, ngot);
    return n;
}

Test(store_sessions, survive_reopen_and_expire, .init = store_tmp_make, .fini = store_tmp_remove)
{
    gx_store *s = open_store();
    add_user(s, "alice");
    gx_err e;
    gx_err_clear(&e);
    gx_store_session a = sess(1, "alice", 1000, 50000), b = sess(2, "alice", 2000, 9000);
    cr_assert_eq(gx_store_session_put(s, &a, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_store_session_put(s, &b, &e), 0, "%s", e.msg);
    /* a session for a user who does not exist is refused (foreign key) */
    gx_store_session z = sess(9, "nobody", 1000, 50000);
    cr_assert_neq(gx_store_session_put(s, &z, &e), 0);
    gx_store_close(s);

    s = open_store();
    cr_assert_eq(load(s, 5000, 100), 2);
    cr_assert_eq(memcmp(got[0].id_hash, a.id_hash, sizeof a.id_hash), 0, "the one that ends last first");
    cr_assert_str_eq(got[0].user, "alice");
    cr_assert_str_eq(got[0].csrf, a.csrf);
    cr_assert_eq(got[0].created_ms, 1000);
    cr_assert_eq(got[0].expires_ms, 50000);
    /* b ended at 9000: loading at 9000 deletes it for good */
    cr_assert_eq(load(s, 9000, 100), 1);
    cr_assert_eq(load(s, 0, 100), 1, "the ended row was deleted, not only skipped");
    /* touch moves the end; a later load still sees it */
    cr_assert_eq(gx_store_session_touch(s, a.id_hash, 80000, &e), 0, "%s", e.msg);
    cr_assert_eq(load(s, 60000, 100), 1);
    cr_assert_eq(got[0].expires_ms, 80000);
    /* touching or deleting a session that is gone is not an error */
    cr_assert_eq(gx_store_session_touch(s, b.id_hash, 80000, &e), 0);
    cr_assert_eq(gx_store_session_delete(s, b.id_hash, &e), 0);
    /* sign-out */
    cr_assert_eq(gx_store_session_delete(s, a.id_hash, &e), 0, "%s", e.msg);
    cr_assert_eq(load(s, 0, 100), 0);
    gx_store_close(s);
}

Test(store_sessions, user_deletion_and_limit, .init = store_tmp_make, .fini = store_tmp_remove)
{
    gx_store *s = open_store();
    add_user(s, "alice");
    add_user(s, "bob");
    gx_err e;
    gx_err_clear(&e);
    for (unsigned char i = 1; i <= 4; i++) {
        gx_store_session x = sess(i, i % 2 ? "alice" : "bob", i, 100000 + i);
        cr_assert_eq(gx_store_session_put(s, &x, &e), 0, "%s", e.msg);
    }
    /* over the limit, the least recently used (the earliest end) is left out */
    cr_assert_eq(load(s, 0, 3), 3, "at most max are handed over");
    cr_assert_eq(got[0].id_hash[0], 4);
    cr_assert_eq(got[2].id_hash[0], 2);
    cr_assert_eq(gx_store_session_delete_user(s, "alice", &e), 0, "%s", e.msg);
    cr_assert_eq(load(s, 0, 100), 2);
    for (int i = 0; i < ngot; i++) cr_assert_str_eq(got[i].user, "bob");
    /* deleting the user deletes their sessions too (ON DELETE CASCADE) */
    cr_assert_eq(gx_store_delete_user(s, "bob", &e), 0, "%s", e.msg);
    cr_assert_eq(load(s, 0, 100), 0);
    gx_store_close(s);
}
