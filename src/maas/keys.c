/* maas/keys: API keys of the gateway ("gpa_<id>_<secret>").
 * Owns: minting (libsodium randomness), the keyed hash (BLAKE2b with the pepper in
 * <dataDir>/secret.key, as auth.c does for tokens), the in-memory table every request
 * is checked against (no SQLite on the request path), revocation and expiry, and the
 * caps on keys.
 * Must not: log, store or return a key in clear except once, to its creator.
 * A revocation is committed, then applied to the table before the answer, so the
 * very next request with that key is refused; expiry is checked on every request.
 * Each key carries its rate-limit bucket; usage.c saves and restores those.
 * Caps: only active keys (neither revoked nor expired) count, server-wide and per
 * user, so that old keys never block new ones and one user cannot take every slot.
 * Memory: every active key is held, and of the ended ones (revoked or expired) only
 * the MAX_ENDED_HELD that ended last (listings still show recent revocations). Older
 * ended keys are forgotten from memory when a key is created, and at start they are
 * not loaded: they stay in SQLite (usage records name them; a forgotten key is still
 * refused, as an unknown one). So the table holds at most MAX_ACTIVE_KEYS +
 * MAX_ENDED_HELD keys (about 600 bytes each: ~65 MB at the defaults), plus ended keys
 * that still have an answer in flight (its bucket's inflight; at most one per
 * connection): those are never forgotten, since that answer settles into them. */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "lib/alloc.h"
#include "lib/gxtime.h"
#include "ops/ops.h"
#include "maas/maas_int.h"

#define ID_LEN 12
#define SECRET_LEN 32
#define MAX_ACTIVE_KEYS 100000      /* active keys on the server */
#define MAX_USER_KEYS 100           /* active keys of one user */
#define MAX_ENDED_HELD 10000        /* revoked or expired keys kept in memory */

struct gx_maas_keys {
    gx_store *st;
    unsigned char pepper[crypto_generichash_KEYBYTES];
    gx_strmap by_id;           /* id -> gx_maas_key * */
    gx_maas_key **all;           /* in creation order */
    size_t n, cap;
    size_t max_active, max_user, max_ended;
};

static void hash_secret(const gx_maas_keys *k, const char *secret, size_t n, unsigned char out[GX_MAAS_HASH])
{
    crypto_generichash(out, GX_MAAS_HASH, (const unsigned char *)secret, n, k->pepper, sizeof k->pepper);
}

static int hexv(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

static void add_mem(gx_maas_keys *k, gx_maas_key *key)
{
    k->all = gx_xgrow(k->all, &k->cap, k->n + 1, sizeof *k->all);
    k->all[k->n++] = key;
    gx_strmap_put(&k->by_id, key->id, key);
}

/* Usable now: neither revoked nor expired (as gx_maas_keys_check decides). */
static int key_active(const gx_maas_key *key, int64_t now)
{
    return !key->revoked_ms && (!key->expires_ms || now < key->expires_ms);
}

/* When an ended key stopped working: its revocation, else its expiry. */
static int64_t ended_ms(const gx_maas_key *key)
{
    return key->revoked_ms ? key->revoked_ms : key->expires_ms;
}

static int by_ended(const void *a, const void *b)
{
    const gx_maas_key *x = *(gx_maas_key *const *)a, *y = *(gx_maas_key *const *)b;
    int64_t ex = ended_ms(x), ey = ended_ms(y);
    if (ex != ey) return (ex > ey) - (ex < ey);
    return (x->created_ms > y->created_ms) - (x->created_ms < y->created_ms);
}

/* Forget (from memory only: SQLite keeps them) the ended keys beyond the keep that
 * ended last, oldest first, skipping any with an answer in flight. The table keeps
 * its creation order. Returns how many were forgotten. */
static size_t forget_ended(gx_maas_keys *k, int64_t now, size_t keep)
{
    size_t nend = 0;
    for (size_t i = 0; i < k->n; i++) nend += !key_active(k->all[i], now);
    if (nend <= keep) return 0;
    gx_maas_key **v = gx_xreallocarray(NULL, nend, sizeof *v);
    size_t j = 0;
    for (size_t i = 0; i < k->n; i++)
        if (!key_active(k->all[i], now)) v[j++] = k->all[i];
    qsort(v, nend, sizeof *v, by_ended);
    size_t gone = 0;
    for (j = 0; j < nend && gone < nend - keep; j++) {
        if (v[j]->bucket.inflight > 0) continue;
        gx_strmap_del(&k->by_id, v[j]->id);
        v[j]->id[0] = 0;                  /* marks it for the compaction below */
        gone++;
    }
    free(v);
    size_t o = 0;
    for (size_t i = 0; i < k->n; i++) {
        gx_maas_key *key = k->all[i];
        if (key->id[0]) { k->all[o++] = key; continue; }
        sodium_memzero(key->hash, sizeof key->hash);
        free(key);
    }
    k->n = o;
    return gone;
}

/* Lower caps (GPUAAS_GATEWAY_KEY_CAPS, read by the composition root) let tests reach
 * them with a few keys; 0, or a value above the default, keeps the default. */
static void set_caps(gx_maas_keys *k, const long caps[3])
{
    k->max_active = MAX_ACTIVE_KEYS;
    k->max_user = MAX_USER_KEYS;
    k->max_ended = MAX_ENDED_HELD;
    if (caps[0] > 0 && caps[0] < MAX_ACTIVE_KEYS) k->max_active = (size_t)caps[0];
    if (caps[1] > 0 && caps[1] < MAX_USER_KEYS) k->max_user = (size_t)caps[1];
    if (caps[2] > 0 && caps[2] < MAX_ENDED_HELD) k->max_ended = (size_t)caps[2];
}

gx_maas_keys *gx_maas_keys_open(gx_store *st, const char *data_dir, const long caps[3], gx_err *err)
{
    gx_maas_keys *k = calloc(1, sizeof *k);
    if (!k) { gx_errf(err, 500, "", "out of memory"); return NULL; }
    k->st = st;
    gx_strmap_init(&k->by_id);
    set_caps(k, caps);
    /* auth.c created the pepper before us; one pepper for tokens and keys */
    char path[4096];
    snprintf(path, sizeof path, "%s/secret.key", data_dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, k->pepper, sizeof k->pepper) : -1;
    if (fd >= 0) close(fd);
    if (n != (ssize_t)sizeof k->pepper) {
        gx_errf(err, 500, "", "cannot read %s: %s", path, n < 0 ? strerror(errno) : "short file");
        gx_maas_keys_free(k);
        return NULL;
    }
    /* the loop's clock is not ours here; expiry at start needs only the wall clock */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    json_t *rows = gx_store_api_keys(st, now, (int64_t)k->max_ended, err);
    if (!rows) { gx_maas_keys_free(k); return NULL; }
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r) {
        const char *hex = json_string_value(json_object_get(r, "hash"));
        if (!hex || strlen(hex) != 2 * GX_MAAS_HASH) continue;
        gx_maas_key *key = gx_xcalloc(1, sizeof *key);
        snprintf(key->id, sizeof key->id, "%s", json_string_value(json_object_get(r, "id")));
        snprintf(key->name, sizeof key->name, "%s", json_string_value(json_object_get(r, "name")));
        snprintf(key->user, sizeof key->user, "%s", json_string_value(json_object_get(r, "user")));
        snprintf(key->ns, sizeof key->ns, "%s", json_string_value(json_object_get(r, "namespace")));
        snprintf(key->tier, sizeof key->tier, "%s", json_string_value(json_object_get(r, "tier")));
        for (int b = 0; b < GX_MAAS_HASH; b++) key->hash[b] = (unsigned char)(hexv(hex[2 * b]) * 16 + hexv(hex[2 * b + 1]));
        key->created_ms = json_integer_value(json_object_get(r, "createdMs"));
        key->expires_ms = json_integer_value(json_object_get(r, "expiresMs"));
        key->revoked_ms = json_integer_value(json_object_get(r, "revokedMs"));
        add_mem(k, key);
    }
    json_decref(rows);
    forget_ended(k, now, k->max_ended);   /* a no-op unless the query kept more */
    return k;
}

void gx_maas_keys_free(gx_maas_keys *k)
{
    if (!k) return;
    for (size_t i = 0; i < k->n; i++) {
        sodium_memzero(k->all[i]->hash, sizeof k->all[i]->hash);
        free(k->all[i]);
    }
    free(k->all);
    gx_strmap_free(&k->by_id);
    sodium_memzero(k->pepper, sizeof k->pepper);
    free(k);
}

gx_maas_key *gx_maas_keys_check(gx_maas_keys *k, const char *bearer, int64_t now, const char **why)
{
    *why = "missing API key: send Authorization: Bearer gpa_... (create one with gpuaas keys create)";
    if (!bearer) return NULL;
    if (!strncasecmp(bearer, "Bearer ", 7)) bearer += 7;
    while (*bearer == ' ') bearer++;
    *why = "invalid API key";
    if (strncmp(bearer, "gpa_", 4) || strlen(bearer) != 4 + ID_LEN + 1 + SECRET_LEN || bearer[4 + ID_LEN] != '_')
        return NULL;
    char id[ID_LEN + 1];
    memcpy(id, bearer + 4, ID_LEN);
    id[ID_LEN] = 0;
    gx_maas_key *key = gx_strmap_get(&k->by_id, id);
    unsigned char h[GX_MAAS_HASH];
    hash_secret(k, bearer + 4 + ID_LEN + 1, SECRET_LEN, h);
    if (!key || sodium_memcmp(h, key->hash, GX_MAAS_HASH) != 0) return NULL;
    if (key->revoked_ms) { *why = "this API key has been revoked"; return NULL; }
    if (key->expires_ms && now >= key->expires_ms) { *why = "this API key has expired"; return NULL; }
    return key;
}

gx_maas_key *gx_maas_keys_get(gx_maas_keys *k, const char *id) { return gx_strmap_get(&k->by_id, id); }

/* Refuse a new key of user when a cap on active keys is reached (422, the API's
 * answer to every "at its limit"), saying which cap and what to do. */
static int check_caps(const gx_maas_keys *k, const char *user, int64_t now, gx_err *err)
{
    size_t active = 0, mine = 0;
    for (size_t i = 0; i < k->n; i++) {
        const gx_maas_key *key = k->all[i];
        if (!key_active(key, now)) continue;
        active++;
        mine += !strcmp(key->user, user);
    }
    if (mine >= k->max_user)
        return gx_errf(err, 422, "", "user %s already has %zu active API keys, the most one user may have; "
                       "revoke one first (gpuaas keys ls lists them, gpuaas keys revoke ID)", user, mine);
    if (active >= k->max_active)
        return gx_errf(err, 422, "", "the server holds %zu active API keys, its limit; revoked and expired "
                       "keys do not count, so revoking unused keys makes room", active);
    return 0;
}

gx_maas_key *gx_maas_keys_create(gx_maas_keys *k, const char *name, const char *user, const char *ns,
                                 const char *tier, int64_t now, int64_t expires_ms, char *out, size_t outn,
                                 gx_err *err)
{
    if (check_caps(k, user, now, err)) return NULL;
    forget_ended(k, now, k->max_ended);   /* the table's bound: see the top of the file */
    static const char alnum[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    gx_maas_key *key = gx_xcalloc(1, sizeof *key);
    snprintf(key->name, sizeof key->name, "%s", name);
    snprintf(key->user, sizeof key->user, "%s", user);
    snprintf(key->ns, sizeof key->ns, "%s", ns);
    snprintf(key->tier, sizeof key->tier, "%s", tier);
    key->created_ms = now;
    key->expires_ms = expires_ms;
    char secret[SECRET_LEN + 1];
    for (int i = 0; i < SECRET_LEN; i++) secret[i] = alnum[randombytes_uniform(sizeof alnum - 1)];
    secret[SECRET_LEN] = 0;
    hash_secret(k, secret, SECRET_LEN, key->hash);
    /* unique among the keys in memory; a forgotten key's id (48 random bits) could
     * still clash in SQLite, whose primary key then refuses the insert: an error the
     * user retries, never two keys with one id */
    do {
        unsigned char r[ID_LEN / 2];
        randombytes_buf(r, sizeof r);
        for (size_t i = 0; i < sizeof r; i++) snprintf(key->id + 2 * i, 3, "%02x", r[i]);
    } while (gx_strmap_get(&k->by_id, key->id));
    gx_store_api_key row = {.id = key->id, .name = key->name, .user = key->user, .ns = key->ns, .tier = key->tier,
                            .hash = key->hash, .hash_len = GX_MAAS_HASH, .created_ms = now, .expires_ms = expires_ms};
    if (gx_store_put_api_key(k->st, &row, err)) {
        sodium_memzero(secret, sizeof secret);
        sodium_memzero(key->hash, sizeof key->hash);
        free(key);
        return NULL;
    }
    snprintf(out, outn, "gpa_%s_%s", key->id, secret);
    sodium_memzero(secret, sizeof secret);
    add_mem(k, key);
    return key;
}

int gx_maas_keys_revoke(gx_maas_keys *k, gx_maas_key *key, int64_t now, gx_err *err)
{
    if (key->revoked_ms) return 0;
    if (gx_store_revoke_api_key(k->st, key->id, now, err)) return -1;
    key->revoked_ms = now;
    return 0;
}

int gx_maas_keys_revoke_user(gx_maas_keys *k, const char *user, int64_t now)
{
    int n = 0;
    for (size_t i = 0; i < k->n; i++) {
        gx_maas_key *key = k->all[i];
        if (key->revoked_ms || strcmp(key->user, user)) continue;
        gx_err e;
        gx_err_clear(&e);
        if (gx_maas_keys_revoke(k, key, now, &e)) {
            /* the store failed: refuse the key in memory anyway; it stays refused until a restart */
            fprintf(stderr, "gpuaas: gateway: revoking key %s of deleted user %s: %s\n", key->id, user, e.msg);
            key->revoked_ms = now;
        }
        n++;
    }
    return n;
}

json_t *gx_maas_key_view(const gx_maas_key *key, int64_t now)
{
    char c[40], e[40], r[40];
    gx_time_fmt(key->created_ms, c, sizeof c);
    gx_time_fmt(key->expires_ms, e, sizeof e);
    const char *state = key->revoked_ms ? "Revoked" : now >= key->expires_ms ? "Expired" : "Active";
    json_t *v = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "id", key->id, "name", key->name, "user", key->user,
                          "namespace", key->ns, "tier", key->tier, "createdAt", c, "expiresAt", e, "state", state);
    if (key->revoked_ms) {
        gx_time_fmt(key->revoked_ms, r, sizeof r);
        json_object_set_new(v, "revokedAt", json_string(r));
    }
    return v;
}

json_t *gx_maas_keys_list(gx_maas_keys *k, const char *user, int64_t now)
{
    json_t *out = json_array();
    for (size_t i = 0; i < k->n; i++)
        if (!user || !strcmp(user, k->all[i]->user)) json_array_append_new(out, gx_maas_key_view(k->all[i], now));
    return out;
}

size_t gx_maas_keys_count(const gx_maas_keys *k) { return k->n; }

gx_maas_key *gx_maas_keys_at(gx_maas_keys *k, size_t i) { return i < k->n ? k->all[i] : NULL; }
