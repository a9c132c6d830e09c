/* yaml: the one bridge between YAML and the JSON data model (jansson).
 * Owns: parsing (multi-document) YAML into json_t with a line map, and emitting
 * json_t as block YAML. Kubernetes treats YAML as JSON; so do we: every manifest
 * is a json_t after this point.
 * Rules: YAML 1.2 core schema scalars (null/true/false/ints/floats; everything else a
 * string; quoted scalars are always strings), anchors/aliases and tags rejected,
 * duplicate keys rejected, depth and size limited. */
#ifndef GX_YAML_H
#define GX_YAML_H
#include <stddef.h>
#include <jansson.h>
#include "lib/err.h"

/* Where each value came from: JSON path ("spec.flavors[0].name") -> 1-based line. */
typedef struct gx_linemap gx_linemap;

typedef struct gx_yaml_docs {
    size_t n;
    json_t **docs;        /* n parsed documents (empty documents are skipped) */
    gx_linemap **lines;   /* n line maps, same order */
    int *first_line;      /* line where each document starts */
} gx_yaml_docs;

/* Parse all documents of buf[0..len). Returns 0, or -1 with err (line set). */
int gx_yaml_parse(const char *buf, size_t len, gx_yaml_docs *out, gx_err *err);
void gx_yaml_docs_free(gx_yaml_docs *d);

/* Line of a JSON path in a document, or of its nearest ancestor that has one; 0 if none. */
int gx_linemap_line(const gx_linemap *m, const char *path);
/* Set err->line from the map using err->field (no-op when m is NULL). */
void gx_linemap_annotate(const gx_linemap *m, gx_err *err);

/* Parse a body that may be JSON or YAML (one or more documents). JSON is tried first
 * when the first non-space byte is '{' or '['; a top-level JSON array or a
 * {"kind":"List","items":[...]} becomes several documents. */
int gx_manifest_parse(const char *buf, size_t len, gx_yaml_docs *out, gx_err *err);

/* Emit v as block-style YAML (strings quoted when they would read back as another type).
 * Returns a malloc'd NUL-terminated string. */
char *gx_yaml_emit(const json_t *v);

#endif
