/* auth: users, their namespaces, and bearer tokens.
 * Owns: token minting ("gpt_<id>_<secret>"), keyed hashing (BLAKE2b with a pepper
 * kept in <dataDir>/secret.key, never in the database), the in-memory user table
 * that every request is checked against (no SQLite on the request path).
 * Must not: log or store a token in clear. */
#ifndef GX_AUTH_H
#define GX_AUTH_H
#include <stddef.h>
#include <stdint.h>
#include <jansson.h>
#include "lib/err.h"
#include "store/store.h"

#define GX_TOKEN_MAX 96

/* A user. A const gx_user * from this module stays valid until that user is deleted
 * (creating others does not move it). */
typedef struct gx_user {
    char name[64];
    int admin;
    json_t *namespaces;     /* array of strings */
    int64_t created_ms;     /* when the user was created (createdAt of GET /api/v1/users) */
} gx_user;

typedef struct gx_auth gx_auth;

gx_auth *gx_auth_open(gx_store *st, const char *data_dir, gx_err *err);
void gx_auth_free(gx_auth *a);

/* First start: create user "admin" and its token (written to token_out). With rotate,
 * replace the admin's tokens by a new one. Returns 1 when a token was minted, 0 when
 * the admin already existed (token_out empty), -1 on error. */
int gx_auth_bootstrap(gx_auth *a, int rotate, char *token_out, int64_t now_ms, gx_err *err);

/* The user a bearer token belongs to, or NULL. Constant-time comparison of hashes. */
const gx_user *gx_auth_check(const gx_auth *a, const char *authorization_header);

/* Create a user with a fresh token (token_out, shown once). 409 when it exists. */
int gx_auth_create_user(gx_auth *a, const char *name, int admin, const json_t *namespaces,
                        char *token_out, int64_t now_ms, gx_err *err);
int gx_auth_delete_user(gx_auth *a, const char *name, gx_err *err);
json_t *gx_auth_users(const gx_auth *a);

/* ---- portal sign-in (src/portal) ---- */
/* The user of that name, or NULL (valid until that user is deleted, see gx_user). */
const gx_user *gx_auth_find(const gx_auth *a, const char *name);
/* Set (replace) a user's sign-in password: Argon2id via crypto_pwhash_str; only the
 * hash string is stored. 8..256 bytes. */
int gx_auth_set_password(gx_auth *a, const char *name, const char *password, int64_t now_ms, gx_err *err);
/* The user when name and password match, else NULL (same work whether or not the user
 * exists, so timing does not tell which names exist). */
const gx_user *gx_auth_check_password(const gx_auth *a, const char *name, const char *password);
int gx_auth_has_password(const gx_auth *a, const char *name);
/* Create (without a token) or update a user's role and namespaces, e.g. from an
 * identity provider's groups or the admin page. */
int gx_auth_upsert_user(gx_auth *a, const char *name, int admin, const json_t *namespaces,
                        int64_t now_ms, gx_err *err);

/* May this user act in namespace ns? */
int gx_user_in_ns(const gx_user *u, const char *ns);
/* Membership only, not an admin's reach: u lists ns among its namespaces. */
int gx_user_member_of(const gx_user *u, const char *ns);

/* Is s a valid Kubernetes DNS-1123 label (namespaces, user names)? */
int gx_dns_label_ok(const char *s);

#endif
