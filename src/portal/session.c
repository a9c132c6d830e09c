/* session: portal sign-in sessions and their CSRF tokens.
 * Owns: the session table (in memory, the fast path of every request) and its durable
 * copy (src/store/sessions.c: written at sign-in, sign-out and expiry, and at most every
 * GX_PORTAL_TOUCH_MS while used, so a restart signs nobody out), the key of the id
 * hashes (meta "portal.session_key"), the cookie (gx_session: HttpOnly, SameSite=Lax,
 * Path=/, Secure behind TLS), idle and absolute expiry, the per-session CSRF token that
 * every form and every JS call must echo.
 * Must not: keep or store a cookie value (only its keyed hash, so neither a memory dump
 * nor a copy of the database hands out sessions), compare secrets other than in
 * constant time, fail a sign-in because the store did (memory keeps the session). */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/alloc.h"
#include "portal/portal_int.h"
#include "store/sessions.h"

#define KEY_META "portal.session_key"

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

/* The store failed: say so once (never with a row: it holds a CSRF token), then keep
 * sessions in memory only, as before there was a store. */
static void store_failed(gx_portal *p, const gx_err *e)
{
    if (p->store_ok) fprintf(stderr, "gpuaas: portal: sessions are kept in memory only from now on: %s\n", e->msg);
    p->store_ok = 0;
}

/* When s ends unless used again: the idle limit, capped by the absolute one. */
static int64_t end_of(const gx_portal_session *s, int64_t now)
{
    int64_t idle = now + GX_PORTAL_IDLE_MS, abs_end = s->created_ms + GX_PORTAL_ABS_MS;
    return idle < abs_end ? idle : abs_end;
}

static void drop(gx_portal *p, size_t i)
{
    gx_err e;
    gx_err_clear(&e);
    if (p->sess[i].stored_exp_ms && p->store_ok && gx_store_session_delete(p->store, p->sess[i].id_hash, &e))
        store_failed(p, &e);
    sodium_memzero(&p->sess[i], sizeof p->sess[i]);
    p->sess[i] = p->sess[--p->nsess];
}

static gx_portal_session *slot(gx_portal *p)
{
    p->sess = gx_xgrow(p->sess, &p->capsess, p->nsess + 1, sizeof *p->sess);
    gx_portal_session *s = &p->sess[p->nsess++];
    memset(s, 0, sizeof *s);
    return s;
}

static void load_one(void *arg, const gx_store_session *ss)
{
    gx_portal *p = arg;
    if (strlen(ss->csrf) != GX_PORTAL_CSRF_LEN) return;
    gx_portal_session *s = slot(p);
    memcpy(s->id_hash, ss->id_hash, sizeof s->id_hash);
    snprintf(s->user, sizeof s->user, "%s", ss->user);
    memcpy(s->csrf, ss->csrf, GX_PORTAL_CSRF_LEN + 1);
    s->created_ms = ss->created_ms;
    /* the last use is known only to within GX_PORTAL_TOUCH_MS: take the earliest it
     * could have been, so the idle limit is never extended by a restart */
    s->seen_ms = ss->expires_ms - GX_PORTAL_IDLE_MS;
    s->stored_exp_ms = ss->expires_ms;
}

void gx_portal_sessions_load(gx_portal *p, int64_t now)
{
    gx_store *st = p->store;
    randombytes_buf(p->key, sizeof p->key);
    if (!st) return;
    gx_err e;
    gx_err_clear(&e);
    char hex[2 * sizeof p->key + 1];
    size_t got = 0;
    int got_key = gx_store_meta_get(st, KEY_META, hex, sizeof hex, &e);
    if (got_key < 0) {   /* unreadable is not absent: a fresh key would sign everyone out */
        fprintf(stderr, "gpuaas: portal: sessions are kept in memory only: %s\n", e.msg);
        return;
    }
    if (got_key == 0) {
        if (sodium_hex2bin(p->key, sizeof p->key, hex, strlen(hex), NULL, &got, NULL) || got != sizeof p->key) {
            fprintf(stderr, "gpuaas: portal: meta %s is damaged; sessions are kept in memory only\n", KEY_META);
            randombytes_buf(p->key, sizeof p->key);
            sodium_memzero(hex, sizeof hex);
            return;
        }
    } else {
        sodium_bin2hex(hex, sizeof hex, p->key, sizeof p->key);
        if (gx_store_meta_put(st, KEY_META, hex, &e)) {
            fprintf(stderr, "gpuaas: portal: sessions are kept in memory only: %s\n", e.msg);
            sodium_memzero(hex, sizeof hex);
            return;
        }
    }
    sodium_memzero(hex, sizeof hex);
    p->store_ok = 1;
    int n = gx_store_sessions_load(st, now, GX_PORTAL_MAX_SESSIONS, load_one, p, &e);
    if (n < 0) store_failed(p, &e);
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
        int64_t end = end_of(s, now);
        if (s->stored_exp_ms && p->store_ok && end - s->stored_exp_ms >= GX_PORTAL_TOUCH_MS) {
            gx_err e;
            gx_err_clear(&e);
            if (gx_store_session_touch(p->store, s->id_hash, end, &e)) store_failed(p, &e);
            else s->stored_exp_ms = end;
        }
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
    gx_portal_session *s = slot(p);
    char id[64];
    gx_portal_random_token(id, sizeof id);
    hash_id(p, id, s->id_hash);
    gx_portal_random_token(s->csrf, sizeof s->csrf);
    snprintf(s->user, sizeof s->user, "%s", user);
    s->created_ms = s->seen_ms = c->now;
    s->proxy = proxy;
    if (!proxy && p->store_ok) {
        gx_store_session ss;
        memset(&ss, 0, sizeof ss);
        memcpy(ss.id_hash, s->id_hash, sizeof ss.id_hash);
        snprintf(ss.user, sizeof ss.user, "%s", s->user);
        snprintf(ss.csrf, sizeof ss.csrf, "%s", s->csrf);
        ss.created_ms = s->created_ms;
        ss.expires_ms = end_of(s, c->now);
        gx_err e;
        gx_err_clear(&e);
        if (gx_store_session_put(p->store, &ss, &e)) store_failed(p, &e);
        else s->stored_exp_ms = ss.expires_ms;
        sodium_memzero(&ss, sizeof ss);
    }
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
    gx_err e;
    gx_err_clear(&e);
    if (p->store_ok && p->store && gx_store_session_delete_user(p->store, user, &e)) store_failed(p, &e);
    for (size_t i = 0; i < p->nsess;)
        if (!strcmp(p->sess[i].user, user)) {
            p->sess[i].stored_exp_ms = 0; /* deleted from the store above, all at once */
            drop(p, i);
        } else i++;
}

void gx_portal_session_drop_others(gx_portal_ctx *c, const char *user)
{
    gx_portal *p = c->p;
    unsigned char keep[32];
    char who[sizeof p->sess[0].user];
    snprintf(who, sizeof who, "%s", user); /* user may point into the table */
    int have = c->s != NULL;
    if (have) memcpy(keep, c->s->id_hash, sizeof keep);
    for (size_t i = 0; i < p->nsess;)
        if (!strcmp(p->sess[i].user, who) && !(have && !sodium_memcmp(p->sess[i].id_hash, keep, sizeof keep))) drop(p, i);
        else i++;
    /* dropping moves entries: find ours again */
    c->s = NULL;
    for (size_t i = 0; have && i < p->nsess; i++)
        if (!sodium_memcmp(p->sess[i].id_hash, keep, sizeof keep)) c->s = &p->sess[i];
    sodium_memzero(keep, sizeof keep);
}

void gx_portal_user_deleted(gx_portal *p, const char *user)
{
    if (p && user) gx_portal_session_drop_user(p, user);
}

int gx_portal_csrf_ok(const gx_portal_session *s, const char *token)
{
    if (!s || !token || strlen(token) != GX_PORTAL_CSRF_LEN) return 0;
    return sodium_memcmp(s->csrf, token, GX_PORTAL_CSRF_LEN) == 0;
}
