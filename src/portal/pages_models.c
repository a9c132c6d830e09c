/* pages_models: the Models page: the catalog of the models the user's tiers open, their
 * API keys (create: shown once, with a copy button; revoke), their usage as a chart, and
 * a playground that sends a chat through the gateway.
 * Owns: which tiers a user may use (the gateway's own rule, asked through gx_portal_env.tier_open, for one
 * of their namespaces) and so which models and tiers the page offers; the catalog, the
 * key form's tiers and the playground's models are rendered here, on the server.
 * Must not: show a model or offer a tier the user may not use (the gateway refuses them
 * anyway: this page must not suggest otherwise); change state (portal.js calls
 * /api/v1/keys with the session's CSRF token, the gateway decides). */
#include <stdio.h>
#include <string.h>
#include "lib/gxtime.h"
#include "portal/portal_int.h"

static int has_str(const json_t *arr, const char *s)
{
    size_t i;
    const json_t *x;
    json_array_foreach(arr, i, x)
        if (json_is_string(x) && !strcmp(json_string_value(x), s)) return 1;
    return 0;
}

json_t *gx_portal_models_for(const json_t *models, const json_t *tiers)
{
    json_t *out = json_array();
    size_t i, j;
    const json_t *md, *t;
    json_array_foreach(models, i, md) {
        json_t *mine = json_array();
        json_array_foreach(json_object_get(md, "tiers"), j, t)
            if (json_is_string(t) && has_str(tiers, json_string_value(t))) json_array_append(mine, (json_t *)t);
        if (!json_array_size(mine)) { json_decref(mine); continue; }
        json_t *v = json_copy((json_t *)md);
        json_object_set_new(v, "tiers", mine);
        json_array_append_new(out, v);
    }
    return out;
}

/* The tiers u may create keys in: {tier: namespace the key is for}, the first namespace
 * of theirs the tier is open to (an admin's keys are for "default", as the API does). */
static json_t *user_tiers(gx_portal_ctx *c)
{
    json_t *out = json_object();
    const char *k;
    const json_t *m;
    json_object_foreach((json_t *)gx_d_objects(c->d), k, m) {
        if (strncmp(k, "Tier/", 5)) continue;
        const char *name = json_string_value(json_object_get(json_object_get(m, "metadata"), "name"));
        if (!name) continue;
        if (c->user->admin) {
            if (c->p->env.tier_open(c->p->env.models_ud, name, c->user, "default")) json_object_set_new(out, name, json_string("default"));
            continue;
        }
        size_t i;
        const json_t *ns;
        json_array_foreach(c->user->namespaces, i, ns)
            if (c->p->env.tier_open(c->p->env.models_ud, name, c->user, json_string_value(ns))) {
                json_object_set(out, name, (json_t *)ns);
                break;
            }
    }
    return out;
}

/* Every Model the gateway knows, as its API shows them. */
static json_t *all_models(gx_portal_ctx *c)
{
    json_t *out = json_array();
    const char *k;
    const json_t *m;
    json_object_foreach((json_t *)gx_d_objects(c->d), k, m) {
        if (strncmp(k, "Model/", 6)) continue;
        json_t *v = c->p->env.model_status(c->p->env.models_ud, json_string_value(json_object_get(json_object_get(m, "metadata"), "name")) ?: "");
        if (v) json_array_append_new(out, v);
    }
    return out;
}

static void catalog(gx_sbuf *b, const json_t *models, const json_t *tiers)
{
    gx_sbuf_puts(b, "<section id=\"catalog\" data-refresh=\"5\"><h2>Models you may use</h2><ul id=\"model-list\" class=\"cards\">");
    size_t i, j;
    const json_t *md, *x;
    json_array_foreach(models, i, md) {
        const json_t *served = json_object_get(md, "servedNames");
        const char *name = json_string_value(json_array_get(served, 0)) ?: json_string_value(json_object_get(md, "name"));
        gx_portal_putf(b, "<li class=\"card\" data-model=\"%H\"><h3>%H</h3><p class=\"sub\">%H · %lld/%lld replicas ready · your tiers: ",
                       name, name, json_string_value(json_object_get(md, "state")),
                       (long long)json_integer_value(json_object_get(md, "readyReplicas")),
                       (long long)json_integer_value(json_object_get(md, "replicas")));
        json_array_foreach(json_object_get(md, "tiers"), j, x) gx_portal_putf(b, "%s%H", j ? ", " : "", json_string_value(x));
        gx_sbuf_puts(b, "</p>");
        if (json_array_size(served) > 1) {
            gx_sbuf_puts(b, "<p class=\"sub\">also called ");
            json_array_foreach(served, j, x)
                if (j) gx_portal_putf(b, "%s<code>%H</code>", j > 1 ? ", " : "", json_string_value(x));
            gx_sbuf_puts(b, "</p>");
        }
        /* a model that cannot serve says why (its server failed to start, its upstream is down) */
        const char *why = json_string_value(json_object_get(md, "message")), *log = json_string_value(json_object_get(md, "log"));
        if (why && *why) gx_portal_putf(b, "<p class=\"error\" data-model-failure>%H</p>", why);
        if (log && *log) gx_portal_putf(b, "<details><summary>The end of its log</summary><pre>%H</pre></details>", log);
        gx_sbuf_puts(b, "</li>");
    }
    if (!json_array_size(models)) {
        gx_sbuf_puts(b, "<li class=\"empty\">No model is open to your tiers (");
        const char *t;
        const json_t *v;
        i = 0;
        json_object_foreach((json_t *)tiers, t, v) gx_portal_putf(b, "%s%H", i++ ? ", " : "", t);
        gx_sbuf_puts(b, ") yet.</li>");
    }
    gx_sbuf_puts(b, "</ul></section>");
}

int gx_portal_tier_key_days(const json_t *tier)
{
    const json_t *spec = json_object_get(tier, "spec");
    const json_t *ml = json_object_get(spec, "maxKeyLifetime");
    if (!ml) ml = json_object_get(json_object_get(spec, "limits"), "maxKeyLifetime");
    int64_t ms = ml ? gx_duration_parse(json_string_value(ml)) : 90LL * 86400000; /* the gateway's default (maas/limits.c) */
    int64_t d = ms / 86400000;
    return d < 1 ? 1 : d > 36500 ? 36500 : (int)d;
}

/* The key form: each tier's option carries the longest lifetime it allows, and the days
 * field's max= is the selected tier's (portal.js follows a change of tier), so the
 * browser refuses what the gateway would (POST /api/v1/keys checks it again). */
static void keys(gx_portal_ctx *c, gx_sbuf *b, const json_t *tiers)
{
    gx_sbuf_puts(b, "<section id=\"keys\" hidden><h2>Your API keys</h2>");
    if (json_object_size(tiers)) {
        gx_sbuf_puts(b, "<form id=\"key-form\" class=\"inline-form\"><label for=\"key-name\">Name</label>"
                         "<input id=\"key-name\" name=\"name\" required maxlength=\"63\" pattern=\"[a-z0-9]([\\-a-z0-9]*[a-z0-9])?\" placeholder=\"laptop\">"
                         "<label for=\"key-tier\">Tier</label><select id=\"key-tier\" name=\"tier\">");
        const char *t;
        const json_t *ns;
        int first = 0;
        json_object_foreach((json_t *)tiers, t, ns) {
            char key[200];
            snprintf(key, sizeof key, "Tier//%s", t);
            int days = gx_portal_tier_key_days(json_object_get(gx_d_objects(c->d), key));
            if (!first) first = days;
            gx_portal_putf(b, "<option value=\"%H\" data-ns=\"%H\" data-max-days=\"%d\">%H</option>", t, json_string_value(ns), days, t);
        }
        gx_portal_putf(b, "</select><label for=\"key-days\">Expires in (days)</label>"
                          "<input id=\"key-days\" name=\"days\" type=\"number\" min=\"1\" max=\"%d\" value=\"%d\" step=\"1\" "
                          "aria-describedby=\"key-days-h\"><span class=\"help\" id=\"key-days-h\">at most %d for this tier</span>",
                       first, first < 30 ? first : 30, first);
        gx_sbuf_puts(b, "<button type=\"submit\" class=\"primary\">Create key</button></form>"
                         "<div id=\"new-key\" class=\"secret\" hidden role=\"status\"><p>Your new key, shown <b>only once</b>:</p>"
                         "<code id=\"new-key-value\"></code> <button type=\"button\" id=\"copy-key\">Copy</button></div>");
    }
    gx_sbuf_puts(b, "<table class=\"list\"><thead><tr><th scope=\"col\">Name</th><th scope=\"col\">Key</th><th scope=\"col\">Tier</th>"
                     "<th scope=\"col\">Expires</th><th scope=\"col\"></th></tr></thead><tbody id=\"key-rows\"></tbody></table></section>");
}

static void playground(gx_sbuf *b, const json_t *models)
{
    if (!json_array_size(models)) return;
    gx_sbuf_puts(b, "<section id=\"playground\" hidden><h2>Playground</h2><form id=\"chat-form\" class=\"stack\">"
                     "<label for=\"chat-model\">Model</label><select id=\"chat-model\" required>");
    size_t i;
    const json_t *md;
    json_array_foreach(models, i, md) {
        const char *name = json_string_value(json_array_get(json_object_get(md, "servedNames"), 0))
                               ?: json_string_value(json_object_get(md, "name"));
        gx_portal_putf(b, "<option value=\"%H\">%H</option>", name, name);
    }
    gx_sbuf_puts(b, "</select><label for=\"chat-key\">API key</label><input id=\"chat-key\" type=\"password\" autocomplete=\"off\" required "
                     "placeholder=\"gpa_… (a key you just created is filled in)\">"
                     "<label for=\"chat-msg\">Message</label><textarea id=\"chat-msg\" rows=\"3\" required maxlength=\"8000\">Say hello.</textarea>"
                     "<button type=\"submit\" class=\"primary\">Send</button></form>"
                     "<pre id=\"chat-out\" class=\"logs\" aria-live=\"polite\"></pre></section>");
}

void gx_portal_models(gx_portal_ctx *c)
{
    gx_sbuf b;
    gx_sbuf_init(&b);
    gx_portal_page_begin(c, &b, "Models", "models");
    if (!c->p->env.tier_open || !c->p->env.model_status) {
        gx_sbuf_puts(&b, "<p id=\"gw-status\" class=\"note\" role=\"status\" data-gateway=\"absent\">The model gateway is not part of "
                          "this server: models, API keys, usage and the playground appear here once it is.</p>");
        gx_portal_page_end(c, &b, 200);
        return;
    }
    json_t *tiers = user_tiers(c), *names = json_array(), *every = all_models(c);
    const char *t;
    const json_t *v;
    json_object_foreach(tiers, t, v) json_array_append_new(names, json_string(t));
    json_t *models = gx_portal_models_for(every, names);
    /* the keys, usage and playground are wired by portal.js (data-models-app) */
    gx_sbuf_puts(&b, "<div id=\"models-app\" data-models-app>");
    if (!json_object_size(tiers)) {
        gx_portal_putf(&b, "<p id=\"gw-status\" class=\"note\" role=\"status\" data-gateway=\"present\" data-tiers=\"0\">"
                           "No model tier is open to you yet, so there is no model you may call and no key to create. "
                           "Tiers say which users and namespaces may use them: ask an admin to open one to you "
                           "(user <b>%H</b>) or to one of your namespaces.</p>", c->user->name);
    } else {
        gx_portal_putf(&b, "<p id=\"gw-status\" class=\"note\" role=\"status\" data-gateway=\"present\" data-tiers=\"%zu\">"
                           "Create a key, then call the OpenAI API at <code class=\"origin\">/v1</code> with it "
                           "(any OpenAI client works).</p>", json_object_size(tiers));
        catalog(&b, models, tiers);
    }
    keys(c, &b, tiers);
    gx_sbuf_puts(&b, "<section id=\"usage\" hidden><h2>Your usage (last 7 days)</h2><svg id=\"usage-chart\" class=\"chart\" "
                      "viewBox=\"0 0 600 200\" role=\"img\" aria-label=\"tokens per model\"></svg></section>");
    playground(&b, models);
    gx_sbuf_puts(&b, "</div>");
    json_decref(models);
    json_decref(every);
    json_decref(names);
    json_decref(tiers);
    gx_portal_page_end(c, &b, 200);
}
