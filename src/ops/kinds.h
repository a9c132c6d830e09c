/* kinds: how a subsystem owns the object kinds it defines. Every kind that
 * `gpuaas apply` accepts is one entry here: the engine's (Kueue's kinds and Node, in
 * ops/objects.c), the gateway's (Tier, Model) and the portal's (Template,
 * PortalConfig), registered by the composition root in that order, which is also the
 * order objects are applied in, so references resolve whatever the order of documents
 * in a file. Adding a kind is adding one entry.
 * Owns: the shape of an entry and of the daemon's event hooks.
 * Must not: hold state; the daemon keeps the table (ops/objects.c). */
#ifndef GX_KINDS_H
#define GX_KINDS_H
#include <stddef.h>
#include <jansson.h>
#include "lib/err.h"

#define GX_KINDS_MAX 16

typedef struct gx_kind {
    const char *kind;          /* "Model" */
    const char *api_version;   /* "gpuaas.dev/v1alpha1" */
    /* Judge one document; others are every document of the same apply (references
     * between them). 0, or -1 with err naming the field. Runs before anything is
     * recorded, so a refusal leaves nothing half-applied. */
    int (*validate)(void *ud, const json_t *doc, json_t *const *others, size_t nothers, gx_err *err);
    /* Take a validated document into effect (also at start-up, for every stored
     * object). Called before the record commits: -1 undoes the whole apply, so it
     * should not fail once validate passed. NULL: the owner reads gx_d_objects(). */
    int (*apply)(void *ud, const json_t *doc, gx_err *err);
    /* Take an object out of effect before its record is deleted; -1 refuses the
     * deletion (the object is in use) and nothing changes. NULL as for apply. */
    int (*remove)(void *ud, const char *kind, const char *ns, const char *name, gx_err *err);
    void *ud;
} gx_kind;

/* What a front door wants to hear about. Any member may be NULL. */
typedef struct gx_hooks {
    /* A user was deleted: end what they could still use (keys, sessions). */
    void (*user_deleted)(void *ud, const char *user);
    /* Append Prometheus lines to text (malloc'd); return the new text. */
    char *(*metrics)(void *ud, char *text);
    void *ud;
} gx_hooks;

#endif
