/* kueue_schema: Kueue's objects checked against their CRDs as the API server does.
 * Owns: strict field validation (a field the CRD does not know is refused, naming its
 * path, in kubectl's words: `unknown field "spec.bogusField"`), the CRD's types, enums,
 * patterns, lengths, item counts and required fields, and the warnings for the fields
 * the CRD knows but gpuaas does not implement.
 * Must not: do I/O, read a clock, or judge what the CRDs leave to Kueue's webhooks and
 * CEL rules (engine_obj.c does those). The field table is generated: kueue_schema_table.c. */
#ifndef GX_KUEUE_SCHEMA_H
#define GX_KUEUE_SCHEMA_H
#include <jansson.h>
#include "lib/err.h"

typedef enum {
    GX_KS_OBJECT, GX_KS_ARRAY, GX_KS_STRING, GX_KS_INTEGER, GX_KS_BOOLEAN, GX_KS_NUMBER,
    GX_KS_INT_OR_STRING, GX_KS_STRING_MAP, GX_KS_OPAQUE,
} gx_ks_type;

typedef enum { GX_KS_PAT_NONE, GX_KS_PAT_SUBDOMAIN, GX_KS_PAT_QUANTITY } gx_ks_pattern;

typedef struct {
    const char *kind, *version;
    const char *path;        /* "spec.resourceGroups[].flavors[].name"; "" is the object */
    gx_ks_type type;
    gx_ks_pattern pattern;
    int max_len;             /* 0: none */
    int min_items, max_items; /* -1: none */
    const char *enums;       /* "A|B|C" or NULL */
    const char *required;    /* "name,nominalQuota" or NULL */
} gx_ks_field;

extern const gx_ks_field gx_ks_fields[];
extern const int gx_ks_nfields;

/* Check obj (a Kueue object of apiVersion kueue.x-k8s.io/v1beta1 or v1beta2) against
 * its kind's CRD. 0, or -1 with err naming the field (400 for an unknown field, as the
 * API server's strict decoding; 422 for a value the schema refuses). When warnings is
 * not NULL, one string is appended to it for each field gpuaas accepts but ignores
 * ("ClusterQueue team-a: spec.admissionScope is not implemented by gpuaas and has no
 * effect"). A kind or version without a CRD here passes unchecked. */
int gx_kueue_schema_check(const json_t *obj, json_t *warnings, gx_err *err);

/* The fields gpuaas accepts but does not implement, as "Kind path" strings, NULL-ended
 * (for the docs and the tests). */
extern const char *const gx_ks_unimplemented[];

#endif
