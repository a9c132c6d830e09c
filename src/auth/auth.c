/* auth: tokens and users (see auth.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "auth/auth.h"
#include "lib/alloc.h"
#include "lib/gxtime.h"

#define HASH_LEN 32
#define ID_LEN 12

typedef struct token { char id[ID_LEN + 1]; unsigned char hash[HASH_LEN]; int user; } token;
/* A portal password, by user name (names survive the user table's reshuffles). */
typedef struct pwent { char user[64]; char hash[crypto_pwhash_STRBYTES]; } pwent;

struct gx_auth {
    gx_store *st;
    unsigned char pepper[crypto_generichash_KEYBYTES];
    gx_user **users;           /* each allocated on its own: a gx_user * stays valid until
                                * that user is deleted, however the table grows */
    size_t nusers;
    token *tokens;
    size_t ntokens;
    pwent *pws;
    size_t npws;
};

int gx_dns_label_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63) return 0;
    if (!islower((unsigned char)s[0]) && !isdigit((unsigned char)s[0])) return 0;
    if (s[n - 1] == '-') return 0;
    for (size_t i = 0; i < n; i++)
        if (!(islower((unsigned char)s[i]) || isdigit((unsigned char)s[i]) || s[i] == '-')) return 0;
    return 1;
}

/* The pepper lives beside the database, so a copy of gpuaas.db alone does not let
 * anyone test guesses against the hashes. */
static int load_pepper(gx_auth *a, const char *dir, gx_err *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/secret.key", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, a->pepper, sizeof a->pepper);
        close(fd);
        if (n != (ssize_t)sizeof a->pepper)
            return gx_errf(err, 500, "", "%s is damaged (expected %zu bytes)", path, sizeof a->pepper);
        return 0;
    }
    if (errno != ENOENT) return gx_errf(err, 500, "", "cannot read %s: %s", path, strerror(errno));
    randombytes_buf(a->pepper, sizeof a->pepper);
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) return gx_errf(err, 500, "", "cannot create %s: %s", path, strerror(errno));
    ssize_t n = write(fd, a->pepper, sizeof a->pepper);
    fsync(fd);
    close(fd);
    if (n != (ssize_t)sizeof a->pepper) return gx_errf(err, 500, "", "cannot write %s", path);
    return 0;
}

static void hash_secret(const gx_auth *a, const char *secret, unsigned char out[HASH_LEN])
{
    crypto_generichash(out, HASH_LEN, (const unsigned char *)secret, strlen(secret), a->pepper, sizeof a->pepper);
}

static int find_user(const gx_auth *a, const char *name)
{
    for (size_t i = 0; i < a->nusers; i++)
        if (!strcmp(a->users[i]->name, name)) return (int)i;
    return -1;
}

static void add_user_mem(gx_auth *a, const char *name, int admin, const json_t *ns, int64_t created_ms)
{
    a->users = gx_xreallocarray(a->users, a->nusers + 1, sizeof *a->users);
    gx_user *x = a->users[a->nusers++] = gx_xcalloc(1, sizeof *x);
    snprintf(x->name, sizeof x->name, "%s", name);
    x->admin = admin;
    x->namespaces = json_deep_copy(ns ? ns : json_array());
    x->created_ms = created_ms;
}

static void add_token_mem(gx_auth *a, const char *id, const unsigned char *hash, int user)
{
    a->tokens = gx_xreallocarray(a->tokens, a->ntokens + 1, sizeof *a->tokens);
    token *x = &a->tokens[a->ntokens++];
    snprintf(x->id, sizeof x->id, "%s", id);
    memcpy(x->hash, hash, HASH_LEN);
    x->user = user;
}

static pwent *pw_find(const gx_auth *a, const char *user)
{
    for (size_t i = 0; i < a->npws; i++)
        if (!strcmp(a->pws[i].user, user)) return &a->pws[i];
    return NULL;
}

static void pw_put(gx_auth *a, const char *user, const char *hash)
{
    pwent *p = pw_find(a, user);
    if (!p) {
        a->pws = gx_xreallocarray(a->pws, a->npws + 1, sizeof *a->pws);
        p = &a->pws[a->npws++];
        memset(p, 0, sizeof *p);
        snprintf(p->user, sizeof p->user, "%s", user);
    }
    snprintf(p->hash, sizeof p->hash, "%s", hash);
}

static void pw_drop(gx_auth *a, const char *user)
{
    pwent *p = pw_find(a, user);
    if (!p) return;
    *p = a->pws[--a->npws];
}

static int hexval(char c) { return isdigit((unsigned char)c) ? c - '0' : (tolower((unsigned char)c) - 'a' + 10); }

gx_auth *gx_auth_open(gx_store *st, const char *data_dir, gx_err *err)
{
    if (sodium_init() < 0) { gx_errf(err, 500, "", "libsodium failed to initialise"); return NULL; }
    gx_auth *a = calloc(1, sizeof *a);
    if (!a) { gx_errf(err, 500, "", "out of memory"); return NULL; }
    a->st = st;
    if (load_pepper(a, data_dir, err)) { free(a); return NULL; }
    json_t *users = gx_store_users(st, err), *tokens = NULL;
    if (!users) goto fail;
    size_t i;
    json_t *u;
    json_array_foreach(users, i, u)
        add_user_mem(a, json_string_value(json_object_get(u, "name")),
                     json_is_true(json_object_get(u, "admin")), json_object_get(u, "namespaces"),
                     (int64_t)json_integer_value(json_object_get(u, "createdMs")));
    json_decref(users);
    tokens = gx_store_tokens(st, err);
    if (!tokens) goto fail;
    json_array_foreach(tokens, i, u) {
        const char *hex = json_string_value(json_object_get(u, "hash"));
        int ui = find_user(a, json_string_value(json_object_get(u, "user")));
        if (!hex || strlen(hex) != 2 * HASH_LEN || ui < 0) continue;
        unsigned char h[HASH_LEN];
        for (int k = 0; k < HASH_LEN; k++) h[k] = (unsigned char)(hexval(hex[2 * k]) * 16 + hexval(hex[2 * k + 1]));
        add_token_mem(a, json_string_value(json_object_get(u, "id")), h, ui);
    }
    json_decref(tokens);
    json_t *pws = gx_store_passwords(st, err);
    if (!pws) goto fail;
    json_array_foreach(pws, i, u) {
        const char *h = json_string_value(json_object_get(u, "hash"));
        if (h && strlen(h) < crypto_pwhash_STRBYTES) pw_put(a, json_string_value(json_object_get(u, "user")), h);
    }
    json_decref(pws);
    return a;
fail:
    gx_auth_free(a);
    return NULL;
}

void gx_auth_free(gx_auth *a)
{
    if (!a) return;
    for (size_t i = 0; i < a->nusers; i++) {
        json_decref(a->users[i]->namespaces);
        free(a->users[i]);
    }
    free(a->users);
    sodium_memzero(a->tokens, a->ntokens * sizeof *a->tokens);
    free(a->tokens);
    sodium_memzero(a->pepper, sizeof a->pepper);
    free(a->pws);
    free(a);
}

/* Mint "gpt_<id>_<secret>": the id finds the record, the secret is only hashed. */
static int mint(gx_auth *a, const char *user, char *token_out, int64_t now_ms, gx_err *err)
{
    static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    char id[ID_LEN + 1], secret[33];
    for (int i = 0; i < ID_LEN; i++) id[i] = "0123456789abcdef"[randombytes_uniform(16)];
    id[ID_LEN] = 0;
    for (int i = 0; i < 32; i++) secret[i] = alphabet[randombytes_uniform(sizeof alphabet - 1)];
    secret[32] = 0;
    unsigned char h[HASH_LEN];
    hash_secret(a, secret, h);
    if (gx_store_put_token(a->st, id, user, h, HASH_LEN, now_ms, err)) return -1;
    add_token_mem(a, id, h, find_user(a, user));
    snprintf(token_out, GX_TOKEN_MAX, "gpt_%s_%s", id, secret);
    sodium_memzero(secret, sizeof secret);
    return 0;
}

static void drop_tokens_mem(gx_auth *a, int ui)
{
    size_t k = 0;
    for (size_t i = 0; i < a->ntokens; i++)
        if (a->tokens[i].user != ui) a->tokens[k++] = a->tokens[i];
    a->ntokens = k;
}

int gx_auth_bootstrap(gx_auth *a, int rotate, char *token_out, int64_t now_ms, gx_err *err)
{
    token_out[0] = 0;
    int ui = find_user(a, "admin");
    if (ui >= 0 && !rotate) return 0;
    if (gx_store_begin(a->st, err)) return -1;
    if (ui < 0) {
        json_t *ns = json_array();
        int rc = gx_store_put_user(a->st, "admin", 1, ns, now_ms, err);
        if (!rc) add_user_mem(a, "admin", 1, ns, now_ms);
        json_decref(ns);
        if (rc) goto fail;
    } else {
        if (gx_store_delete_tokens_of(a->st, "admin", err)) goto fail;
        drop_tokens_mem(a, ui);
    }
    if (mint(a, "admin", token_out, now_ms, err)) goto fail;
    if (gx_store_commit(a->st, err)) goto fail;
    return 1;
fail:
    gx_store_rollback(a->st);
    return -1;
}

const gx_user *gx_auth_check(const gx_auth *a, const char *hdr)
{
    if (!hdr || strncasecmp(hdr, "Bearer ", 7)) return NULL;
    const char *t = hdr + 7;
    while (*t == ' ') t++;
    if (strncmp(t, "gpt_", 4) || strlen(t) > GX_TOKEN_MAX) return NULL;
    const char *id = t + 4;
    const char *us = strchr(id, '_');
    if (!us || us - id != ID_LEN) return NULL;
    unsigned char h[HASH_LEN];
    hash_secret(a, us + 1, h);
    for (size_t i = 0; i < a->ntokens; i++)
        if (!strncmp(a->tokens[i].id, id, ID_LEN) && sodium_memcmp(a->tokens[i].hash, h, HASH_LEN) == 0)
            return a->users[a->tokens[i].user];
    return NULL;
}

int gx_auth_create_user(gx_auth *a, const char *name, int admin, const json_t *namespaces,
                        char *token_out, int64_t now_ms, gx_err *err)
{
    if (!name || !gx_dns_label_ok(name))
        return gx_errf(err, 422, "name", "user name must be a DNS label (lowercase letters, digits, '-', at most 63)");
    if (!json_is_array(namespaces)) return gx_errf(err, 422, "namespaces", "must be a list of namespace names");
    if (json_array_size(namespaces) > 64) return gx_errf(err, 422, "namespaces", "at most 64 namespaces");
    size_t i;
    json_t *n;
    json_array_foreach(namespaces, i, n)
        if (!json_is_string(n) || !gx_dns_label_ok(json_string_value(n))) {
            char f[64];
            snprintf(f, sizeof f, "namespaces[%zu]", i);
            return gx_errf(err, 422, f, "namespace must be a DNS label");
        }
    if (find_user(a, name) >= 0) return gx_errf(err, 409, "name", "user %s already exists", name);
    if (gx_store_begin(a->st, err)) return -1;
    if (gx_store_put_user(a->st, name, admin, namespaces, now_ms, err)) goto fail;
    add_user_mem(a, name, admin, namespaces, now_ms);
    if (mint(a, name, token_out, now_ms, err) || gx_store_commit(a->st, err)) {
        /* keep memory and disk in step: drop what we added */
        a->nusers--;
        json_decref(a->users[a->nusers]->namespaces);
        free(a->users[a->nusers]);
        drop_tokens_mem(a, (int)a->nusers);
        goto fail;
    }
    return 0;
fail:
    gx_store_rollback(a->st);
    return -1;
}

int gx_auth_delete_user(gx_auth *a, const char *name, gx_err *err)
{
    int ui = find_user(a, name);
    if (ui < 0) return gx_errf(err, 404, "name", "no user %s", name);
    if (!strcmp(name, "admin")) return gx_errf(err, 409, "name", "the admin user cannot be deleted");
    if (gx_store_begin(a->st, err)) return -1;
    if (gx_store_delete_tokens_of(a->st, name, err) || gx_store_delete_user(a->st, name, err) ||
        gx_store_commit(a->st, err)) {
        gx_store_rollback(a->st);
        return -1;
    }
    drop_tokens_mem(a, ui);
    pw_drop(a, name);
    json_decref(a->users[ui]->namespaces);
    free(a->users[ui]);
    /* keep indices of the other users stable for their tokens */
    for (size_t i = 0; i < a->ntokens; i++)
        if (a->tokens[i].user > ui) a->tokens[i].user--;
    memmove(&a->users[ui], &a->users[ui + 1], (a->nusers - (size_t)ui - 1) * sizeof *a->users);
    a->nusers--;
    return 0;
}

json_t *gx_auth_users(const gx_auth *a)
{
    json_t *out = json_array();
    for (size_t i = 0; i < a->nusers; i++) {
        char t[GX_TIME_LEN];
        json_array_append_new(out, json_pack("{s:s,s:b,s:O,s:s}", "name", a->users[i]->name, "admin", a->users[i]->admin,
                                             "namespaces", a->users[i]->namespaces, "createdAt",
                                             gx_time_fmt(a->users[i]->created_ms, t, sizeof t)));
    }
    return out;
}

int gx_user_member_of(const gx_user *u, const char *ns)
{
    size_t i;
    json_t *n;
    json_array_foreach(u->namespaces, i, n)
        if (!strcmp(json_string_value(n), ns)) return 1;
    return 0;
}

int gx_user_in_ns(const gx_user *u, const char *ns) { return u->admin || gx_user_member_of(u, ns); }

/* ---- portal sign-in ------------------------------------------------------------------ */

const gx_user *gx_auth_find(const gx_auth *a, const char *name)
{
    int ui = name ? find_user(a, name) : -1;
    return ui < 0 ? NULL : a->users[ui];
}

/* Argon2id with OWASP's minimum (19 MiB, 2 passes): the daemon has one thread, so a
 * sign-in must cost milliseconds, not the half second of crypto_pwhash's MODERATE. */
#define PW_OPS 2
#define PW_MEM (19u << 20)

int gx_auth_set_password(gx_auth *a, const char *name, const char *password, int64_t now_ms, gx_err *err)
{
    if (find_user(a, name) < 0) return gx_errf(err, 404, "name", "no user %s", name);
    size_t n = password ? strlen(password) : 0;
    if (n < 8 || n > 256) return gx_errf(err, 422, "password", "a password has 8 to 256 characters");
    char hash[crypto_pwhash_STRBYTES];
    if (crypto_pwhash_str_alg(hash, password, n, PW_OPS, PW_MEM, crypto_pwhash_ALG_ARGON2ID13))
        return gx_errf(err, 500, "password", "out of memory while hashing the password");
    if (gx_store_put_password(a->st, name, hash, now_ms, err)) return -1;
    pw_put(a, name, hash);
    return 0;
}

const gx_user *gx_auth_check_password(const gx_auth *a, const char *name, const char *password)
{
    /* a fixed hash for unknown users keeps the work (and the time) the same */
    static char dummy[crypto_pwhash_STRBYTES];
    if (!dummy[0] && crypto_pwhash_str_alg(dummy, "not a password", 14, PW_OPS, PW_MEM, crypto_pwhash_ALG_ARGON2ID13))
        return NULL;
    if (!name || !password || strlen(password) > 256) return NULL;
    const pwent *p = pw_find(a, name);
    int ok = crypto_pwhash_str_verify(p ? p->hash : dummy, password, strlen(password)) == 0;
    return ok && p ? gx_auth_find(a, name) : NULL;
}

int gx_auth_has_password(const gx_auth *a, const char *name) { return pw_find(a, name) != NULL; }

int gx_auth_upsert_user(gx_auth *a, const char *name, int admin, const json_t *namespaces,
                        int64_t now_ms, gx_err *err)
{
    if (!name || !gx_dns_label_ok(name))
        return gx_errf(err, 422, "name", "user name must be a DNS label (lowercase letters, digits, '-', at most 63)");
    if (!json_is_array(namespaces) || json_array_size(namespaces) > 64)
        return gx_errf(err, 422, "namespaces", "must be a list of at most 64 namespace names");
    size_t i;
    json_t *n;
    json_array_foreach(namespaces, i, n)
        if (!json_is_string(n) || !gx_dns_label_ok(json_string_value(n)))
            return gx_errf(err, 422, "namespaces", "namespace %zu must be a DNS label", i);
    int ui = find_user(a, name);
    if (ui >= 0) {
        gx_user *u = a->users[ui];
        if (u->admin == admin && json_equal(u->namespaces, (json_t *)namespaces)) return 0;
        if (!strcmp(name, "admin") && !admin) return gx_errf(err, 409, "admin", "the admin user stays an admin");
        if (gx_store_update_user(a->st, name, admin, namespaces, err)) return -1;
        u->admin = admin;
        json_decref(u->namespaces);
        u->namespaces = json_deep_copy(namespaces);
        return 0;
    }
    if (gx_store_put_user(a->st, name, admin, namespaces, now_ms, err)) return -1;
    add_user_mem(a, name, admin, namespaces, now_ms);
    return 0;
}
