/* session: portal sign-in sessions and their CSRF tokens.
 * Owns: the session table (memory only: a restart signs everyone out), the cookie
 * (gx_session: HttpOnly, SameSite=Lax, Path=/, Secure behind TLS), idle and absolute
 * expiry, the per-session CSRF token that every form and every JS call must echo.
 * Must not: keep a cookie value (only its keyed hash, so a memory dump does not
 * hand out sessions), compare secrets other than in constant time. */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "portal/portal_int.h"

void gx_portal_random_token(char *out, size_t n)
{
    unsigned char raw[32];
    randombytes_buf(raw, sizeof raw);
    sodium_bin2base64(out, n, raw, sizeof raw, sodium_base64_VARIANT_URLSAFE_NO_PADDING);
    sodium_memzero(raw, sizeof raw);
}

const char *gx_portal_cookie(const gx_req *req, const char *name, char *out, size_t n)
{
    const char *h = gx_req_header(req, "Cookie");
    size_t nl = strlen(name);
    while (h && *h) {
        while (*h == ' ' || *h == ';') h++;
        const char *end = strchr(h, ';');
        size_t len = end ? (size_t)(end - h) : strlen(h);
        if (len > nl && !strncmp(h, name, nl) && h[nl] == '=') {
            size_t vl = len - nl - 1;
            if (vl >= n) return NULL;
            memcpy(out, h + nl + 1, vl);
            out[vl] = 0;
            return out;
        }
        h = end;
    }
    return NULL;
}

static void hash_id(const gx_portal *p, const char *id, unsigned char out[32])
{
    crypto_generichash(out, 32, (const unsigned char *)id, strlen(id), p->key, sizeof p->key);
}

static void drop(gx_portal *p, size_t i)
{
    sodium_memzero(&p->sess[i], sizeof p->sess[i]);
    p->sess[i] = p->sess[--p->nsess];
}

gx_portal_session *gx_portal_session_find(gx_portal *p, const gx_req *req, int64_t now)
{
    char id[64];
    if (!gx_portal_cookie(req, "gx_session", id, sizeof id) || strlen(id) != GX_PORTAL_CSRF_LEN) return NULL;
    unsigned char h[32];
    hash_id(p, id, h);
    for (size_t i = 0; i < p->nsess; i++) {
        gx_portal_session *s = &p->sess[i];
        if (sodium_memcmp(s->id_hash, h, sizeof h)) continue;
        if (now - s->seen_ms > GX_PORTAL_IDLE_MS || now - s->created_ms > GX_PORTAL_ABS_MS) {
            drop(p, i);
            return NULL;
        }
        s->seen_ms = now;
        return s;
    }
    return NULL;
}

static void set_cookie(gx_portal_ctx *c, const char *value, int max_age)
{
    char v[160];
    snprintf(v, sizeof v, "gx_session=%s; Path=/; Max-Age=%d; HttpOnly; SameSite=Lax%s", value, max_age,
             c->secure ? "; Secure" : "");
    gx_resp_header(c->resp, "Set-Cookie", v);
}

gx_portal_session *gx_portal_session_new(gx_portal_ctx *c, const char *user, int proxy)
{
    gx_portal *p = c->p;
    /* the table is bounded: the least recently seen session makes room */
    if (p->nsess >= GX_PORTAL_MAX_SESSIONS) {
        size_t old = 0;
        for (size_t i = 1; i < p->nsess; i++)
            if (p->sess[i].seen_ms < p->sess[old].seen_ms) old = i;
        drop(p, old);
    }
    if (p->nsess == p->capsess) {
        size_t cap = p->capsess ? p->capsess * 2 : 16;
        gx_portal_session *n = realloc(p->sess, cap * sizeof *n);
        if (!n) abort();
        p->sess = n;
        p->capsess = cap;
    }
    gx_portal_session *s = &p->sess[p->nsess++];
    memset(s, 0, sizeof *s);
    char id[64];
    gx_portal_random_token(id, sizeof id);
    hash_id(p, id, s->id_hash);
    gx_portal_random_token(s->csrf, sizeof s->csrf);
    snprintf(s->user, sizeof s->user, "%s", user);
    s->created_ms = s->seen_ms = c->now;
    s->proxy = proxy;
    set_cookie(c, id, (int)(GX_PORTAL_ABS_MS / 1000));
    sodium_memzero(id, sizeof id);
    c->s = s;
    return s;
}

void gx_portal_session_end(gx_portal_ctx *c)
{
    if (c->s) {
        size_t i = (size_t)(c->s - c->p->sess);
        drop(c->p, i);
        c->s = NULL;
    }
    set_cookie(c, "", 0);
}

void gx_portal_session_drop_user(gx_portal *p, const char *user)
{
    for (size_t i = 0; i < p->nsess;)
        if (!strcmp(p->sess[i].user, user)) drop(p, i);
        else i++;
}

int gx_portal_csrf_ok(const gx_portal_session *s, const char *token)
{
    if (!s || !token || strlen(token) != GX_PORTAL_CSRF_LEN) return 0;
    return sodium_memcmp(s->csrf, token, GX_PORTAL_CSRF_LEN) == 0;
}
