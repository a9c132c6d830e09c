/* store reads: every list the daemon loads at start (workloads, objects, users, tokens,
 * API keys, passwords, namespace uids, portal sessions, rate-limit windows, usage, meta)
 * fails with an error naming the table when SQLite fails part-way, never answering
 * with a short list; and the start-up callers stop on it. Real SQLite in a throw-away
 * folder: a table's pages are overwritten in the file while the store is closed, so the
 * read meets SQLITE_CORRUPT (what SQLITE_BUSY or SQLITE_IOERR looks like to a loop).
 * Why not a lock: in WAL mode a reader is never blocked by another connection, and
 * locking_mode=EXCLUSIVE cannot be taken while the store has the file open. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "auth/auth.h"
#include "ops/daemon.h"
#include "run/identity.h"
#include "store/identities.h"
#include "store/ratelimit.h"
#include "store/sessions.h"
#include "store/store.h"
#include "test_store_util.h"

/* Overwrite page `page` of the closed store's file (1-based; 0: the file's last page)
 * with 0xff bytes, which no b-tree page can be. */
static void smash_page(long page)
{
    char path[128];
    snprintf(path, sizeof path, "%s/gpuaas.db", dir);
    int fd = open(path, O_RDWR);
    cr_assert_geq(fd, 0);
    long size = lseek(fd, 0, SEEK_END);
    unsigned char junk[65536];
    long psize = 0;
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, "PRAGMA page_size", -1, &st, NULL), SQLITE_OK);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW);
    psize = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    cr_assert(psize > 0 && psize <= (long)sizeof junk);
    if (!page) page = size / psize;
    cr_assert(page > 1 && page <= size / psize, "page %ld of %ld", page, size / psize);
    memset(junk, 0xff, sizeof junk);
    cr_assert_eq(pwrite(fd, junk, (size_t)psize, (page - 1) * psize), psize);
    close(fd);
}

/* The root page of a table (or index), read before the damage. */
static long root_of(const char *table)
{
    char path[128];
    snprintf(path, sizeof path, "%s/gpuaas.db", dir);
    sqlite3 *db;
    cr_assert_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
    sqlite3_stmt *st;
    cr_assert_eq(sqlite3_prepare_v2(db, "SELECT rootpage FROM sqlite_master WHERE name = ?1", -1, &st, NULL), SQLITE_OK);
    sqlite3_bind_text(st, 1, table, -1, SQLITE_STATIC);
    cr_assert_eq(sqlite3_step(st), SQLITE_ROW, "no table %s", table);
    long root = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(db);
    return root;
}

/* Keep a copy of the closed store's file (sound), or put it back, without WAL files. */
static void sound_copy(int restore)
{
    char cmd[600];
    if (restore) snprintf(cmd, sizeof cmd, "cp %s/sound.db %s/gpuaas.db && rm -f %s/gpuaas.db-wal %s/gpuaas.db-shm", dir, dir, dir, dir);
    else snprintf(cmd, sizeof cmd, "cp %s/gpuaas.db %s/sound.db", dir, dir);
    cr_assert_eq(system(cmd), 0);
}

/* One row in every table a loader reads. */
static void fill(gx_store *s)
{
    gx_err e;
    gx_err_clear(&e);
    json_t *m = json_pack("{s:s,s:{s:s}}", "kind", "ResourceFlavor", "metadata", "name", "h100");
    json_t *ns = json_pack("[s]", "team-a"), *st = json_pack("{s:s}", "state", "Pending"), *run = json_object();
    unsigned char hash[32] = {1, 2, 3};
    cr_assert_eq(gx_store_put_object(s, "ResourceFlavor", "", "h100", m, 1, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_store_put_workload(s, "team-a", "w1", m, st, run, 2, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_store_put_user(s, "alice", 0, ns, 3, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_store_put_token(s, "t1", "alice", hash, sizeof hash, 4, &e), 0, "%s", e.msg);
    gx_store_api_key k = {"k1", "key", "alice", "team-a", "free", hash, sizeof hash, 5, 0};
    cr_assert_eq(gx_store_put_api_key(s, &k, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_store_put_password(s, "alice", "$argon2id$x", 6, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_store_identity_put(s, "team-a", 100000, 7, &e), 0, "%s", e.msg);
    gx_store_session ss = {.user = "alice", .csrf = "c", .created_ms = 8, .expires_ms = 1000000};
    cr_assert_eq(gx_store_session_put(s, &ss, &e), 0, "%s", e.msg);
    gx_store_rate_window w = {"key", "k1", "requests", 60000, 9, 1};
    cr_assert_eq(gx_store_put_rate_windows(s, &w, 1, &e), 0, "%s", e.msg);
    gx_store_usage u = {10, "k1", "alice", "team-a", "m", "free", "/v1/chat/completions", 1, 1, 5, -1, 0, 0, 200};
    cr_assert_eq(gx_store_put_usage(s, &u, 1, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_store_meta_put(s, "k", "v", &e), 0, "%s", e.msg);
    json_decref(m);
    json_decref(ns);
    json_decref(st);
    json_decref(run);
}

/* Each loader: 1 when it answered (rows found), 0 when it answered with nothing, -1
 * with e when it failed. */
static int answered(json_t *rows)
{
    int n = rows ? json_is_array(rows) ? (int)json_array_size(rows) : (int)json_object_size(rows) : -1;
    json_decref(rows);
    return n < 0 ? -1 : n > 0;
}
static void one_session(void *arg, const gx_store_session *ss) { (void)arg; (void)ss; }
static int ld_objects(gx_store *s, gx_err *e) { return answered(gx_store_objects(s, e)); }
static int ld_workloads(gx_store *s, gx_err *e) { return answered(gx_store_workloads(s, e)); }
static int ld_users(gx_store *s, gx_err *e) { return answered(gx_store_users(s, e)); }
static int ld_tokens(gx_store *s, gx_err *e) { return answered(gx_store_tokens(s, e)); }
static int ld_keys(gx_store *s, gx_err *e) { return answered(gx_store_api_keys(s, 100, 10, e)); }
static int ld_passwords(gx_store *s, gx_err *e) { return answered(gx_store_passwords(s, e)); }
static int ld_identities(gx_store *s, gx_err *e) { return answered(gx_store_identities(s, e)); }
static int ld_windows(gx_store *s, gx_err *e) { return answered(gx_store_rate_windows(s, 100, e)); }
static int ld_usage(gx_store *s, gx_err *e) { return answered(gx_store_usage_summary(s, "user", 0, NULL, e)); }
static int ld_sessions(gx_store *s, gx_err *e)
{
    int n = gx_store_sessions_load(s, 100, 10, one_session, NULL, e);
    return n < 0 ? -1 : n > 0;
}
static int ld_meta(gx_store *s, gx_err *e)
{
    char v[16];
    int rc = gx_store_meta_get(s, "k", v, sizeof v, e);
    return rc < 0 ? -1 : rc == 0;
}

static const struct {
    const char *table;        /* whose root page is damaged */
    int (*load)(gx_store *, gx_err *);
    const char *says;         /* in the error */
} loaders[] = {
    {"objects", ld_objects, "reading objects"},
    {"workloads", ld_workloads, "reading workloads"},
    {"users", ld_users, "reading users"},
    {"tokens", ld_tokens, "reading tokens"},
    {"api_keys", ld_keys, "reading api_keys"},
    {"passwords", ld_passwords, "reading passwords"},
    {"ns_identities", ld_identities, "ns_identities"},
    {"portal_sessions", ld_sessions, "malformed"},       /* its DELETE of ended rows fails first */
    {"rate_windows", ld_windows, "malformed"},           /* likewise */
    {"usage_rows", ld_usage, "reading usage"},
    {"meta", ld_meta, "reading meta"},
};
#define N_LOADERS (sizeof loaders / sizeof loaders[0])

/* Each loader answers with its row on a sound file, and fails naming its table when
 * that table's root page is damaged, while the others still answer (the damage is
 * where the test says it is). Before: the loop ended at the first failed step and the
 * loader answered "no rows" as a success. */
Test(store_reads, a_failed_step_is_an_error_not_the_end, .init = store_tmp_make, .fini = store_tmp_remove)
{
    gx_store *s = open_store();
    fill(s);
    gx_err e;
    for (size_t i = 0; i < N_LOADERS; i++) {
        gx_err_clear(&e);
        cr_assert_eq(loaders[i].load(s, &e), 1, "%s on a sound file: %s", loaders[i].table, e.msg);
    }
    gx_store_close(s);
    sound_copy(0);
    for (size_t i = 0; i < N_LOADERS; i++) {
        sound_copy(1);
        smash_page(root_of(loaders[i].table));
        s = open_store();
        for (size_t j = 0; j < N_LOADERS; j++) {
            gx_err_clear(&e);
            int rc = loaders[j].load(s, &e);
            if (j != i) {
                cr_assert_eq(rc, 1, "%s with %s damaged: %s", loaders[j].table, loaders[i].table, e.msg);
                continue;
            }
            cr_assert_eq(rc, -1, "%s damaged, yet its loader answered", loaders[i].table);
            cr_assert(strstr(e.msg, loaders[i].says), "%s: %s", loaders[i].table, e.msg);
            cr_assert_eq(e.status, 500);
        }
        gx_store_close(s);
    }
}

/* A failure part-way through a long table: the rows read before it are not an answer
 * (before, recovery went on with the first workloads and forgot the rest). */
Test(store_reads, workloads_fail_part_way_without_a_short_list, .init = store_tmp_make, .fini = store_tmp_remove)
{
    gx_store *s = open_store();
    gx_err e;
    gx_err_clear(&e);
    char pad[1500];
    memset(pad, 'x', sizeof pad - 1);
    pad[sizeof pad - 1] = 0;
    json_t *st = json_pack("{s:s}", "state", "Pending"), *run = json_object();
    for (int i = 0; i < 40; i++) {
        char name[16];
        snprintf(name, sizeof name, "w%d", i);
        json_t *m = json_pack("{s:s,s:{s:s},s:s}", "kind", "Job", "metadata", "name", name, "pad", pad);
        cr_assert_eq(gx_store_put_workload(s, "team-a", name, m, st, run, i, &e), 0, "%s", e.msg);
        json_decref(m);
    }
    json_decref(st);
    json_decref(run);
    json_t *all = gx_store_workloads(s, &e);
    cr_assert_eq(json_array_size(all), 40);
    json_decref(all);
    gx_store_close(s);
    smash_page(0);   /* the last leaf written: the newest workloads */
    s = open_store();
    gx_err_clear(&e);
    cr_assert_null(gx_store_workloads(s, &e), "a short list was the answer");
    cr_assert(strstr(e.msg, "store: reading workloads: "), "%s", e.msg);
    gx_store_close(s);
}

/* The start-up loaders stop the start with the store's message: recovery of workloads
 * (ops/workloads.c), objects (ops/objects.c), users and tokens (auth/auth.c), and the
 * namespaces' uids (run/identity.c). Before, each went on with what it had read. */
Test(store_reads, start_up_stops_on_a_broken_table, .init = store_tmp_make, .fini = store_tmp_remove)
{
    gx_store *s = open_store();
    fill(s);
    gx_store_close(s);
    static const char *const broken[] = {"workloads", "objects", "users", "tokens", "ns_identities"};
    sound_copy(0);
    for (size_t i = 0; i < sizeof broken / sizeof broken[0]; i++) {
        sound_copy(1);
        smash_page(root_of(broken[i]));
        s = open_store();
        gx_err e;
        gx_err_clear(&e);
        int failed;
        if (!strcmp(broken[i], "workloads") || !strcmp(broken[i], "objects")) {
            gx_daemon d;
            memset(&d, 0, sizeof d);
            d.store = s;
            d.objects = json_object();
            failed = broken[i][0] == 'w' ? gx_d_recover(&d, &e) : gx_d_load_objects(&d, &e);
            cr_assert_eq(json_object_size(d.objects), 0);
            json_decref(d.objects);
        } else if (!strcmp(broken[i], "ns_identities")) {
            gx_run_config rc;
            memset(&rc, 0, sizeof rc);
            gx_identity *id = gx_identity_open(&rc, s, &e);
            failed = id ? 0 : -1;
            gx_identity_free(id);
        } else {
            gx_auth *a = gx_auth_open(s, dir, &e);
            failed = a ? 0 : -1;
            gx_auth_free(a);
        }
        cr_assert_eq(failed, -1, "start-up went on with %s unreadable", broken[i]);
        char want[64];
        snprintf(want, sizeof want, "reading %s", broken[i]);
        cr_assert(strstr(e.msg, want), "%s: %s", broken[i], e.msg);
        gx_store_close(s);
    }
}
