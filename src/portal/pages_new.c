/* pages_new: "New request": the template catalog, the form a template's JSON Schema
 * generates, the review of exactly what will be submitted, and the submission.
 * Owns: drawing fields from schemas (labels, help, HTML validation attributes that
 * mirror the server's checks), carrying values from form to review to submit.
 * Must not: trust the browser's validation: every submit is re-validated and
 * re-rendered on the server (template.c) before gx_d_submit / gx_d_apply. */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/num.h"
#include "lib/k8sname.h"
#include "lib/yaml.h"
#include "portal/portal_int.h"
#include "portal/template.h"

static const char *meta_str(const json_t *t, const char *k) { return json_string_value(json_object_get(json_object_get(t, "metadata"), k)); }

static const json_t *find_template(gx_portal_ctx *c, const char *name)
{
    char key[200];
    snprintf(key, sizeof key, "Template//%s", name);
    return json_object_get(gx_d_objects(c->d), key);
}

/* May this user submit what t renders? A Job (in their namespace: checked on submit)
 * anyone; other kinds (a gateway Model) only admins, as submit() says: a template that
 * would end in "deploying a Model is for admins" is not offered at all. */
static int usable(const gx_portal_ctx *c, const json_t *t)
{
    const char *kind = json_string_value(json_object_get(json_object_get(json_object_get(t, "spec"), "manifest"), "kind"));
    return c->user->admin || (kind && !strcmp(kind, "Job"));
}

void gx_portal_catalog(gx_portal_ctx *c)
{
    gx_sbuf b;
    gx_sbuf_init(&b);
    gx_portal_page_begin(c, &b, "New request", "new");
    json_t *all = gx_portal_templates(c->d);
    if (!json_array_size(all))
        gx_sbuf_puts(&b, "<p class=\"empty\">No templates yet. An admin applies them with "
                          "<code>gpuaas apply -f examples/templates/batch-training.yaml</code> (one <code>-f</code> per file), "
                          "or on the Admin page.</p>");
    gx_sbuf_puts(&b, "<ul class=\"cards\">");
    size_t i;
    const json_t *t;
    json_array_foreach(all, i, t) {
        if (!usable(c, t)) continue;
        const json_t *spec = json_object_get(t, "spec");
        const char *icon = json_string_value(json_object_get(spec, "icon")) ?: "gpu";
        const char *name = meta_str(t, "name");
        gx_portal_putf(&b, "<li class=\"card\"><h2><svg class=\"icon\" aria-hidden=\"true\"><use href=\"/assets/icons.svg#%H\"></use></svg> "
                           "<a href=\"/ui/new/%U\">%H</a></h2><p>%H</p><p>",
                       icon, name, meta_str(t, "title") ?: name, meta_str(t, "description"));
        size_t k;
        const json_t *tag;
        json_array_foreach(json_object_get(json_object_get(t, "metadata"), "tags"), k, tag)
            gx_portal_putf(&b, "<span class=\"tag\">%H</span> ", json_string_value(tag));
        gx_portal_putf(&b, "</p><p class=\"sub\">creates a %H</p></li>",
                       json_string_value(json_object_get(json_object_get(spec, "manifest"), "kind")));
    }
    gx_sbuf_puts(&b, "</ul>");
    json_decref(all);
    gx_portal_page_end(c, &b, 200);
}

/* The namespaces this user may pick: their own, or every LocalQueue's for an admin. */
static json_t *pickable_namespaces(gx_portal_ctx *c)
{
    if (!c->user->admin) return json_incref(c->user->namespaces);
    json_t *lqs = gx_engine_local_queues(gx_d_engine(c->d), NULL, 0), *out = json_array();
    size_t i, k;
    const json_t *q, *x;
    json_array_foreach(lqs, i, q) {
        const json_t *ns = json_object_get(q, "namespace");
        int dup = 0;
        json_array_foreach(out, k, x) dup |= json_equal(x, ns);
        if (!dup) json_array_append(out, (json_t *)ns);
    }
    json_decref(lqs);
    return out;
}

static void value_str(const json_t *v, char *out, size_t n)
{
    if (json_is_string(v)) snprintf(out, n, "%s", json_string_value(v));
    else if (json_is_integer(v)) snprintf(out, n, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v)) gx_num_fmt(json_real_value(v), out, n);
    else if (json_is_boolean(v)) snprintf(out, n, "%s", json_is_true(v) ? "on" : "");
    else out[0] = 0;
}

static void options(gx_sbuf *b, const char *name, const json_t *en, const json_t *names, const char *cur, int radio)
{
    size_t i;
    const json_t *x;
    json_array_foreach(en, i, x) {
        char v[256];
        value_str(x, v, sizeof v);
        const char *label = json_string_value(json_array_get(names, i)) ?: v;
        int sel = !strcmp(v, cur);
        if (radio)
            gx_portal_putf(b, "<label class=\"radio\"><input type=\"radio\" name=\"%H\" value=\"%H\"%s> %H</label>", name, v,
                           sel ? " checked" : "", label);
        else gx_portal_putf(b, "<option value=\"%H\"%s>%H</option>", v, sel ? " selected" : "", label);
    }
}

static void attrs(gx_sbuf *b, const json_t *s, const char *type, int required)
{
    const json_t *mn = json_object_get(s, "minimum"), *mx = json_object_get(s, "maximum");
    char nb[GX_NUM_MAX];
    if (mn) gx_portal_putf(b, " min=\"%s\"", gx_num_fmt(json_number_value(mn), nb, sizeof nb));
    if (mx) gx_portal_putf(b, " max=\"%s\"", gx_num_fmt(json_number_value(mx), nb, sizeof nb));
    if (!strcmp(type, "integer")) gx_sbuf_puts(b, " step=\"1\"");
    if (!strcmp(type, "number")) gx_sbuf_puts(b, " step=\"any\"");
    const json_t *a = json_object_get(s, "minLength"), *z = json_object_get(s, "maxLength");
    if (a) gx_portal_putf(b, " minlength=\"%lld\"", (long long)json_integer_value(a));
    gx_portal_putf(b, " maxlength=\"%lld\"", z ? (long long)json_integer_value(z) : (long long)GX_PORTAL_TPL_MAX_STRING);
    const char *pat = json_string_value(json_object_get(s, "pattern"));
    /* HTML's pattern must match the whole value; ours is anchored by the author. It is
     * translated to the browser's `v`-flag syntax (or left out: the server checks anyway) */
    char hp[2 * GX_PORTAL_TPL_MAX_STRING + 64];
    if (pat && !gx_portal_html_pattern(pat, hp, sizeof hp)) gx_portal_putf(b, " pattern=\"%H\"", hp);
    const char *ph = json_string_value(json_object_get(s, "ui:placeholder"));
    if (ph) gx_portal_putf(b, " placeholder=\"%H\"", ph);
    if (required) gx_sbuf_puts(b, " required");
    if (json_is_true(json_object_get(s, "ui:autofocus"))) gx_sbuf_puts(b, " autofocus");
}

static void field(gx_portal_ctx *c, gx_sbuf *b, const json_t *p, const json_t *form, const gx_err *err)
{
    const char *name = json_string_value(json_object_get(p, "name"));
    const json_t *s = json_object_get(p, "schema");
    int req = json_is_true(json_object_get(p, "required"));
    const char *type = json_string_value(json_object_get(s, "type"));
    const char *widget = json_string_value(json_object_get(s, "ui:widget")) ?: "";
    const char *title = json_string_value(json_object_get(s, "title")) ?: name;
    const char *desc = json_string_value(json_object_get(s, "description"));
    const char *help = json_string_value(json_object_get(s, "ui:help"));
    char cur[GX_PORTAL_TPL_MAX_STRING + 1];
    if (form) snprintf(cur, sizeof cur, "%s", gx_portal_form_get(form, name));
    else value_str(json_object_get(s, "default"), cur, sizeof cur);
    int bad = err && !strcmp(err->field, name);
    if (!strcmp(widget, "hidden")) { gx_portal_putf(b, "<input type=\"hidden\" name=\"%H\" value=\"%H\">", name, cur); return; }
    gx_portal_putf(b, "<div class=\"field%s\">", bad ? " invalid" : "");
    const json_t *en = json_object_get(s, "enum");
    const char *fieldk = json_string_value(json_object_get(s, "ui:field"));
    json_t *nss = fieldk ? pickable_namespaces(c) : NULL;
    if (nss) en = nss;
    if (!strcmp(type, "boolean")) {
        gx_portal_putf(b, "<label><input type=\"checkbox\" id=\"f-%H\" name=\"%H\" aria-describedby=\"h-%H\"%s> %H</label>", name,
                       name, name, !strcmp(cur, "on") || !strcmp(cur, "true") ? " checked" : "", title);
    } else {
        gx_portal_putf(b, "<label for=\"f-%H\" id=\"l-%H\">%H%s</label>", name, name, title,
                       req ? " <span class=\"req\" aria-hidden=\"true\">(required)</span>" : "");
        if (en && !strcmp(widget, "radio")) {
            gx_portal_putf(b, "<div role=\"radiogroup\" id=\"f-%H\" aria-labelledby=\"l-%H\" aria-describedby=\"h-%H\">",
                           name, name, name);
            options(b, name, en, json_object_get(s, "enumNames"), cur, 1);
            gx_sbuf_puts(b, "</div>");
        } else if (en) {
            gx_portal_putf(b, "<select id=\"f-%H\" name=\"%H\" aria-describedby=\"h-%H\"%s>", name, name, name, req ? " required" : "");
            options(b, name, en, nss ? NULL : json_object_get(s, "enumNames"), cur, 0);
            gx_sbuf_puts(b, "</select>");
        } else if (!strcmp(widget, "textarea")) {
            gx_portal_putf(b, "<textarea id=\"f-%H\" name=\"%H\" rows=\"6\" aria-describedby=\"h-%H\"", name, name, name);
            attrs(b, s, type, req);
            gx_portal_putf(b, ">%H</textarea>", cur);
        } else {
            const char *it = !strcmp(type, "string") ? (!strcmp(widget, "password") ? "password" : "text")
                                                     : !strcmp(widget, "range") ? "range" : "number";
            gx_portal_putf(b, "<input type=\"%s\" id=\"f-%H\" name=\"%H\" value=\"%H\" aria-describedby=\"h-%H\"", it, name, name,
                           cur, name);
            attrs(b, s, type, req);
            gx_sbuf_puts(b, ">");
        }
    }
    json_decref(nss);
    gx_portal_putf(b, "<p class=\"help\" id=\"h-%H\">%H%s%H</p>", name, desc ? desc : "", desc && help ? " " : "", help ? help : "");
    if (bad) gx_portal_putf(b, "<p class=\"field-error\" role=\"alert\">%H</p>", err->msg);
    gx_sbuf_puts(b, "</div>");
}

/* Fleet mode (docs/fleet.md): where a Job goes, this server or a cluster of the Fleet the
 * user may use; nothing is drawn without a Fleet. The choice travels as _cluster. */
static void cluster_choice(gx_portal_ctx *c, gx_sbuf *b, const char *cur)
{
    json_t *cl = gx_d_clusters(c->d, c->user);
    if (json_array_size(cl)) {
        gx_sbuf_puts(b, "<fieldset><legend>Where</legend><div class=\"field\"><label for=\"f-_cluster\">Cluster</label>"
                        "<select id=\"f-_cluster\" name=\"_cluster\" aria-describedby=\"h-_cluster\">"
                        "<option value=\"\">This server</option>");
        size_t i;
        const json_t *x;
        json_array_foreach(cl, i, x) {
            const char *n = json_string_value(json_object_get(x, "name"));
            gx_portal_putf(b, "<option value=\"%H\"%s>%H</option>", n, cur && !strcmp(cur, n) ? " selected" : "", n);
        }
        gx_sbuf_puts(b, "</select><p class=\"help\" id=\"h-_cluster\">A cluster of the fleet gets the Job through git: "
                        "it is published to the cluster's folder, and its queue there decides when it runs.</p></div></fieldset>");
    }
    json_decref(cl);
}

static void form_page(gx_portal_ctx *c, const json_t *t, const json_t *form, const gx_err *err)
{
    gx_sbuf b;
    gx_sbuf_init(&b);
    const char *name = meta_str(t, "name");
    gx_portal_page_begin(c, &b, meta_str(t, "title") ?: name, "new");
    gx_portal_putf(&b, "<p class=\"lead\">%H</p>", meta_str(t, "description"));
    if (err && err->msg[0] && !err->field[0]) gx_portal_putf(&b, "<p class=\"error\" role=\"alert\">%H</p>", err->msg);
    else if (err && err->msg[0]) gx_sbuf_puts(&b, "<p class=\"error\" role=\"alert\">Please correct the marked field.</p>");
    gx_portal_putf(&b, "<form method=\"post\" action=\"/ui/new/%U\" class=\"stack tform\" novalidate data-validate>", name);
    gx_portal_csrf_field(c, &b);
    json_t *params = gx_portal_template_params(t);
    size_t i;
    const json_t *p;
    const char *page = NULL;
    json_array_foreach(params, i, p) {
        const char *pg = json_string_value(json_object_get(p, "page"));
        if (!page || strcmp(page, pg)) {
            if (page) gx_sbuf_puts(&b, "</fieldset>");
            gx_portal_putf(&b, "<fieldset><legend>%H</legend>", *pg ? pg : "Parameters");
            page = pg;
        }
        field(c, &b, p, form, err);
    }
    if (page) gx_sbuf_puts(&b, "</fieldset>");
    json_decref(params);
    cluster_choice(c, &b, form ? gx_portal_form_get(form, "_cluster") : NULL);
    gx_sbuf_puts(&b, "<div class=\"actions\"><button type=\"submit\" name=\"action\" value=\"review\" class=\"primary\">Review</button>"
                      " <a href=\"/ui/new\">Back to the catalog</a></div></form>");
    gx_portal_page_end(c, &b, err ? 422 : 200);
}

static uint32_t draw(uint32_t upper) { return randombytes_uniform(upper); }

/* Fill metadata.generateName ("notebook-") into a name, as Kubernetes would, now: the
 * review page shows the name that will be submitted. */
static void generate_name(json_t *m)
{
    json_t *md = json_object_get(m, "metadata");
    const char *gen = json_string_value(json_object_get(md, "generateName"));
    if (!gen || json_string_length(json_object_get(md, "name"))) return;
    char name[GX_K8S_LABEL_MAX + 1];
    gx_k8s_generate_name(gen, draw, name, sizeof name);
    /* a prefix that is not even text is left for gx_d_submit to refuse in Kubernetes' words */
    if (json_object_set_new(md, "name", json_string(name)) == 0) json_object_del(md, "generateName");
}

static void review_page(gx_portal_ctx *c, const json_t *t, const json_t *values, const json_t *m)
{
    gx_sbuf b;
    gx_sbuf_init(&b);
    const char *name = meta_str(t, "name");
    gx_portal_page_begin(c, &b, "Review your request", "new");
    gx_portal_putf(&b, "<p class=\"lead\">%H: check what will be submitted.</p><dl class=\"facts\">", meta_str(t, "title") ?: name);
    json_t *params = gx_portal_template_params(t);
    size_t i;
    const json_t *p;
    json_array_foreach(params, i, p) {
        const char *pn = json_string_value(json_object_get(p, "name"));
        const json_t *s = json_object_get(p, "schema");
        char v[GX_PORTAL_TPL_MAX_STRING + 1];
        value_str(json_object_get(values, pn), v, sizeof v);
        if (json_is_boolean(json_object_get(values, pn))) snprintf(v, sizeof v, "%s", json_is_true(json_object_get(values, pn)) ? "yes" : "no");
        gx_portal_putf(&b, "<dt>%H</dt><dd>%H</dd>", json_string_value(json_object_get(s, "title")) ?: pn,
                       !strcmp(json_string_value(json_object_get(s, "ui:widget")) ?: "", "password") ? "••••••" : v);
    }
    const char *cluster = json_string_value(json_object_get(json_object_get(json_object_get(m, "metadata"), "annotations"),
                                                            "gpuaas.dev/cluster"));
    if (cluster) gx_portal_putf(&b, "<dt>Cluster</dt><dd>%H (published to its git folder)</dd>", cluster);
    gx_sbuf_puts(&b, "</dl>");
    char *yaml = gx_yaml_emit(m);
    gx_portal_putf(&b, "<details open><summary>The %H that will be submitted</summary><pre class=\"manifest\">%H</pre></details>",
                   json_string_value(json_object_get(m, "kind")), yaml);
    free(yaml);
    gx_portal_putf(&b, "<form method=\"post\" action=\"/ui/new/%U\" class=\"actions\" data-progress=\"Submitting…\">", name);
    gx_portal_csrf_field(c, &b);
    json_array_foreach(params, i, p) {
        const char *pn = json_string_value(json_object_get(p, "name"));
        char v[GX_PORTAL_TPL_MAX_STRING + 1];
        value_str(json_object_get(values, pn), v, sizeof v);
        gx_portal_putf(&b, "<input type=\"hidden\" name=\"%H\" value=\"%H\">", pn, v);
    }
    if (cluster) gx_portal_putf(&b, "<input type=\"hidden\" name=\"_cluster\" value=\"%H\">", cluster);
    gx_portal_putf(&b, "<input type=\"hidden\" name=\"_name\" value=\"%H\">",
                   json_string_value(json_object_get(json_object_get(m, "metadata"), "name")));
    json_decref(params);
    gx_sbuf_puts(&b, "<button type=\"submit\" name=\"action\" value=\"submit\" class=\"primary\">Submit</button> "
                      "<button type=\"submit\" name=\"action\" value=\"edit\">Change</button></form>");
    gx_portal_page_end(c, &b, 200);
}

/* What the portal adds to a rendered manifest, done before the review so that the review
 * shows every line that will be submitted: who asked and from which template (shown
 * later, and useful to admins), and a Job's namespace when the template names none. */
static void stamp(gx_portal_ctx *c, const json_t *t, json_t *m)
{
    json_t *md = json_object_get(m, "metadata");
    if (!json_is_object(md)) return; /* submit() refuses it */
    json_t *labels = json_object_get(md, "labels");
    if (!json_is_object(labels)) json_object_set_new(md, "labels", labels = json_object());
    json_object_set_new(labels, "gpuaas.dev/template", json_string(meta_str(t, "name")));
    json_t *ann = json_object_get(md, "annotations");
    if (!json_is_object(ann)) json_object_set_new(md, "annotations", ann = json_object());
    json_object_set_new(ann, "gpuaas.dev/requested-by", json_string(c->user->name));
    const char *kind = json_string_value(json_object_get(m, "kind"));
    if (kind && !strcmp(kind, "Job") && !json_object_get(md, "namespace"))
        json_object_set_new(md, "namespace", json_string(json_string_value(json_array_get(c->user->namespaces, 0)) ?: "default"));
    /* the Cluster choice (fleet mode): the Job goes to that cluster's git folder */
    const char *cluster = c->form ? gx_portal_form_get(c->form, "_cluster") : "";
    if (kind && !strcmp(kind, "Job") && cluster && *cluster)
        json_object_set_new(ann, "gpuaas.dev/cluster", json_string(cluster));
}

static int submit(gx_portal_ctx *c, json_t *m, gx_err *e, char *to, size_t ton)
{
    const char *kind = json_string_value(json_object_get(m, "kind"));
    json_t *md = json_object_get(m, "metadata");
    if (!json_is_object(md) || !kind) return gx_errf(e, 422, "", "the template renders no metadata");
    if (!strcmp(kind, "Job")) {
        const char *ns = json_string_value(json_object_get(md, "namespace")) ?: "";
        if (!gx_user_in_ns(c->user, ns)) return gx_errf(e, 403, "", "you may not submit to namespace %s", ns);
        json_t *view = NULL;
        if (gx_d_submit(c->d, m, NULL, &view, e)) return -1;
        json_decref(view);
        gx_sbuf u;
        gx_sbuf_init(&u);
        gx_portal_putf(&u, "/ui/workloads/%U/%U", ns, json_string_value(json_object_get(md, "name")));
        snprintf(to, ton, "%s", u.p);
        gx_sbuf_free(&u);
        return 0;
    }
    if (!c->user->admin) return gx_errf(e, 403, "", "deploying a %s is for admins for now; ask one to use this template", kind);
    json_t *docs1[1] = {m};
    gx_yaml_docs docs = {.n = 1, .docs = docs1};
    json_t *res = NULL;
    if (gx_d_apply(c->d, &docs, &res, e)) return -1;
    json_decref(res);
    snprintf(to, ton, "/ui/models");
    return 0;
}

void gx_portal_request(gx_portal_ctx *c, const char *name)
{
    const json_t *t = find_template(c, name);
    if (!t || !usable(c, t)) { gx_portal_error_page(c, 404, "Not found", "No such template (or not one you may use)."); return; }
    if (!c->form) { form_page(c, t, NULL, NULL); return; }
    const char *action = gx_portal_form_get(c->form, "action");
    if (!strcmp(action, "edit")) { form_page(c, t, c->form, NULL); return; }
    gx_err e;
    gx_err_clear(&e);
    json_t *nss = pickable_namespaces(c);
    json_t *values = gx_portal_template_values(t, c->form, nss, &e);
    json_decref(nss);
    if (!values) { form_page(c, t, c->form, &e); return; }
    json_t *m = gx_portal_template_render(t, values, c->user->name, &e);
    if (!m) { json_decref(values); form_page(c, t, c->form, &e); return; }
    stamp(c, t, m);
    if (!strcmp(action, "submit")) {
        /* keep the name the review showed, so a generated name does not change under the user */
        const char *shown = gx_portal_form_get(c->form, "_name");
        json_t *md = json_object_get(m, "metadata");
        if (*shown && json_is_object(md) && json_object_get(md, "generateName") && gx_dns_label_ok(shown)) {
            json_object_set_new(md, "name", json_string(shown));
            json_object_del(md, "generateName");
        }
        generate_name(m);
        char to[600];
        if (submit(c, m, &e, to, sizeof to)) {
            e.field[0] = 0; /* errors from the server are about the whole request */
            form_page(c, t, c->form, &e);
        } else {
            gx_portal_redirect(c, to);
        }
    } else {
        generate_name(m);
        review_page(c, t, values, m);
    }
    json_decref(m);
    json_decref(values);
}
