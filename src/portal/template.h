/* template: request templates (gpuaas.dev/v1alpha1 Template), modelled on Backstage
 * scaffolder templates: metadata.{name,title,description,tags}, spec.icon, spec.type,
 * spec.parameters as JSON Schema (one object, or a list of pages as Backstage writes
 * them) with ui: hints, and spec.manifest: the Job or Model to create, where
 * "${{ parameters.x }}" (optionally "* N", "| string", "| lower") is substituted.
 * Owns: validating a template when it is applied, turning submitted form strings
 * into typed values checked against the schema, rendering the manifest.
 * Must not: do I/O, know HTTP or the daemon: it is pure and unit-tested
 * (tests/unit/test_portal_template.c). */
#ifndef GX_PORTAL_TEMPLATE_H
#define GX_PORTAL_TEMPLATE_H
#include <jansson.h>
#include "lib/err.h"

#define GX_PORTAL_TPL_MAX_PARAMS 64
#define GX_PORTAL_TPL_MAX_STRING 4096

/* Is this a valid Template? 0, or -1 with err->field the JSON path of the culprit. */
int gx_portal_template_check(const json_t *tpl, gx_err *err);

/* The template's parameters in form order:
 * [{"name","schema","required":bool,"page": title or ""}] (new reference). */
json_t *gx_portal_template_params(const json_t *tpl);

/* Turn a submitted form (an object of strings, see html.h) into typed values and
 * check them against the schema. namespaces: the user's namespaces, the choices of a
 * "ui:field: NamespacePicker" parameter. Returns {"name": value...}, or NULL with
 * err->field = the parameter's name and a message a person can act on. */
json_t *gx_portal_template_values(const json_t *tpl, const json_t *form, const json_t *namespaces, gx_err *err);

/* Render spec.manifest with the values (and ${{ user.name }}). New object or NULL. */
json_t *gx_portal_template_render(const json_t *tpl, const json_t *values, const char *user, gx_err *err);

#endif
