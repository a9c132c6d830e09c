/* engine_check: Kueue's AdmissionChecks and the two-phase admission they bring.
 * Owns: the AdmissionCheck kind (spec.controllerName, spec.parameters; status Active),
 * a ClusterQueue's spec.admissionChecks / spec.admissionChecksStrategy (onFlavors), the
 * per-workload check states (Pending, Ready, Retry, Rejected) and what each does: a
 * workload that reserved quota waits until all its checks are Ready, Retry releases its
 * quota and requeues it, Rejected deactivates it. gpuaas runs one controller,
 * gpuaas.dev/approval (an admin's verdict, set through gx_engine_set_check).
 * Must not: do I/O or read a clock; check states come in through gx_engine_set_check and
 * go out in the workload view, which is also what a restart reads back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/engine_int.h"
#include "lib/gxtime.h"

static const char *const STATE[] = {"Pending", "Ready", "Retry", "Rejected"};

int gx_engine_check_state_parse(const char *s)
{
    for (int i = 0; s && i < 4; i++)
        if (!strcmp(s, STATE[i])) return i;
    return -1;
}

static const gx_ac *ac_get(const gx_engine *e, const char *name)
{
    int i = gx_strmap_geti(&e->ac_map, name);
    return i < 0 ? NULL : &e->acs[i];
}

/* ---- the AdmissionCheck kind ------------------------------------------------------- */

static void ac_free(gx_ac *a)
{
    free(a->name);
    free(a->controller);
    json_decref(a->manifest);
}

/* The Active condition Kueue's controllers write: True only for a controller gpuaas runs,
 * so `get` shows at once that a check of another controller will never be answered here. */
static void set_active(json_t *m, const char *controller)
{
    int ours = !strcmp(controller, GX_APPROVAL_CONTROLLER);
    char msg[300];
    if (ours) snprintf(msg, sizeof msg, "gpuaas runs the %s controller", controller);
    else snprintf(msg, sizeof msg, "controller %s is not run by gpuaas: workloads wait until the check is set Ready", controller);
    json_t *cond = json_pack("{s:s, s:s, s:s, s:s}", "type", "Active", "status", ours ? "True" : "False",
                             "reason", ours ? "Active" : "ControllerNotRun", "message", msg);
    json_object_set_new(m, "status", json_pack("{s:[o]}", "conditions", cond));
}

int gx_engine_check_apply(gx_engine *e, const json_t *obj, gx_err *err)
{
    const char *name;
    if (gx_engine_obj_check_name(obj, 0, &name, NULL, err) < 0) return -1;
    const json_t *spec = json_object_get(obj, "spec");
    if (!json_is_object(spec)) return gx_errf(err, 422, "spec", "spec is required (spec.controllerName)");
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)spec, k, v) {
        if (strcmp(k, "controllerName") && strcmp(k, "parameters") && strcmp(k, "retryDelayMinutes"))
            return gx_errf(err, 422, "spec", "unknown field \"spec.%s\"", k);
    }
    const char *ctl = gx_engine_obj_str(spec, "controllerName");
    if (!ctl || !*ctl) return gx_errf(err, 422, "spec.controllerName", "spec.controllerName is required");
    const json_t *par = json_object_get(spec, "parameters");
    if (par && !json_is_null(par)) {
        if (!json_is_object(par)) return gx_errf(err, 422, "spec.parameters", "must be an object {apiGroup, kind, name}");
        static const char *const pk[] = {"apiGroup", "kind", "name"};
        for (int i = 0; i < 3; i++)
            if (!gx_engine_obj_str(par, pk[i]))
                return gx_errf(err, 422, pk[i][0] == 'a' ? "spec.parameters.apiGroup" : pk[i][0] == 'k' ? "spec.parameters.kind"
                                                                                    : "spec.parameters.name",
                               "is required (a string)");
    }
    const json_t *rd = json_object_get(spec, "retryDelayMinutes");
    if (rd && !json_is_integer(rd)) return gx_errf(err, 422, "spec.retryDelayMinutes", "must be an integer");
    int i = gx_strmap_geti(&e->ac_map, name);
    if (i >= 0) {
        /* Kueue: controllerName is immutable */
        if (strcmp(e->acs[i].controller, ctl))
            return gx_errf(err, 422, "spec.controllerName", "is immutable (was %s)", e->acs[i].controller);
        ac_free(&e->acs[i]);
    } else {
        GX_GROW(e->acs, e->n_ac, e->cap_ac);
        i = e->n_ac++;
        gx_strmap_puti(&e->ac_map, name, i);
    }
    gx_ac *a = &e->acs[i];
    a->name = gx_xstrdup(name);
    a->controller = gx_xstrdup(ctl);
    a->manifest = json_deep_copy(obj);
    set_active(a->manifest, ctl);
    return 0;
}

int gx_engine_check_delete(gx_engine *e, const char *name, gx_err *err)
{
    int i = gx_strmap_geti(&e->ac_map, name);
    if (i < 0) return gx_errf(err, 404, "", "AdmissionCheck %s not found", name);
    for (int c = 0; c < e->n_cq; c++)
        for (int k = 0; k < e->cqs[c].n_chk; k++)
            if (!strcmp(e->cqs[c].chk[k].name, name))
                return gx_errf(err, 409, "", "AdmissionCheck %s is used by ClusterQueue %s", name, e->cqs[c].name);
    gx_strmap_del(&e->ac_map, name);
    ac_free(&e->acs[i]);
    if (i != e->n_ac - 1) {
        e->acs[i] = e->acs[e->n_ac - 1];
        gx_strmap_puti(&e->ac_map, e->acs[i].name, i);
    }
    e->n_ac--;
    return 0;
}

void gx_engine_check_add_objects(const gx_engine *e, json_t ***v, int *n, int *cap)
{
    for (int i = 0; i < e->n_ac; i++) {
        GX_GROW(*v, *n, *cap);
        (*v)[(*n)++] = e->acs[i].manifest;
    }
}

void gx_engine_check_free_all(gx_engine *e)
{
    for (int i = 0; i < e->n_ac; i++) ac_free(&e->acs[i]);
    free(e->acs);
    gx_strmap_free(&e->ac_map);
}

/* ---- a ClusterQueue's checks ---------------------------------------------------------- */

void gx_engine_check_cq_free(gx_cq *c)
{
    for (int i = 0; i < c->n_chk; i++) { free(c->chk[i].name); free(c->chk[i].on); }
    free(c->chk);
    c->chk = NULL;
    c->n_chk = 0;
}

static int add_cq_check(gx_engine *e, gx_cq *c, const json_t *name, const json_t *on, const char *field, gx_err *err)
{
    if (!json_is_string(name) || !*json_string_value(name)) return gx_errf(err, 422, field, "must be the name of an AdmissionCheck");
    for (int i = 0; i < c->n_chk; i++)
        if (!strcmp(c->chk[i].name, json_string_value(name))) return gx_errf(err, 422, field, "duplicate admission check %s", json_string_value(name));
    if (c->n_chk >= 64) return gx_errf(err, 422, field, "at most 64 admission checks");
    c->chk = gx_xreallocarray(c->chk, (size_t)c->n_chk + 1, sizeof *c->chk);
    gx_cq_chk *k = &c->chk[c->n_chk++];
    memset(k, 0, sizeof *k);
    k->name = gx_xstrdup(json_string_value(name));
    if (on && !json_is_null(on)) {
        if (!json_is_array(on)) return gx_errf(err, 422, field, "onFlavors must be a list of ResourceFlavor names");
        k->on = gx_xcalloc(json_array_size(on) + 1, sizeof *k->on);
        size_t i;
        const json_t *f;
        json_array_foreach(on, i, f) {
            if (!json_is_string(f)) return gx_errf(err, 422, field, "onFlavors must be a list of ResourceFlavor names");
            k->on[k->n_on++] = gx_engine_util_intern(&e->flv, json_string_value(f));
        }
    }
    return 0;
}

/* spec.admissionChecks (v1beta1: a list of names) or spec.admissionChecksStrategy
 * (v1beta2: [{name, onFlavors}]); Kueue refuses both at once. */
int gx_engine_check_parse_cq(gx_engine *e, const json_t *spec, gx_cq *c, gx_err *err)
{
    const json_t *names = json_object_get(spec, "admissionChecks");
    const json_t *strat = json_object_get(spec, "admissionChecksStrategy");
    if (names && !json_is_null(names) && strat && !json_is_null(strat))
        return gx_errf(err, 422, "spec.admissionChecksStrategy", "either admissionChecks or admissionChecksStrategy can be set, not both");
    char field[96];
    size_t i;
    const json_t *x;
    if (names && !json_is_null(names)) {
        if (!json_is_array(names)) return gx_errf(err, 422, "spec.admissionChecks", "must be a list of AdmissionCheck names");
        json_array_foreach(names, i, x) {
            snprintf(field, sizeof field, "spec.admissionChecks[%zu]", i);
            if (add_cq_check(e, c, x, NULL, field, err) < 0) return -1;
        }
    }
    if (strat && !json_is_null(strat)) {
        const json_t *l = json_object_get(strat, "admissionChecks");
        if (!json_is_object(strat) || (l && !json_is_array(l)))
            return gx_errf(err, 422, "spec.admissionChecksStrategy.admissionChecks", "must be a list of {name, onFlavors}");
        json_array_foreach(l, i, x) {
            snprintf(field, sizeof field, "spec.admissionChecksStrategy.admissionChecks[%zu].name", i);
            if (!json_is_object(x)) return gx_errf(err, 422, field, "must be an object {name, onFlavors}");
            if (add_cq_check(e, c, json_object_get(x, "name"), json_object_get(x, "onFlavors"), field, err) < 0) return -1;
        }
    }
    return 0;
}

/* ---- a workload's checks --------------------------------------------------------------- */

void gx_engine_check_wl_free(gx_wl *w)
{
    for (int i = 0; i < w->n_chk; i++) { free(w->chk[i].name); free(w->chk[i].msg); }
    free(w->chk);
    w->chk = NULL;
    w->n_chk = 0;
}


/* Does a check with onFlavors apply to the flavors this workload was given? */
static int applies(const gx_cq_chk *k, const gx_wl *w)
{
    if (!k->n_on) return 1;
    for (int ps = 0; w->adm && ps < w->s.nps; ps++)
        for (int r = 0; r < w->s.ps[ps].nreq; r++)
            for (int f = 0; f < k->n_on; f++)
                if (w->adm[ps].flv[r] == k->on[f]) return 1;
    return 0;
}

/* What a Pending check says while the workload waits for it. */
static char *pending_msg(const gx_engine *e, const gx_wl *w, const char *check)
{
    char m[512];
    const gx_ac *a = ac_get(e, check);
    if (!a)
        snprintf(m, sizeof m, "admission check %s: no AdmissionCheck of that name exists; the workload waits until the check is set Ready", check);
    else if (strcmp(a->controller, GX_APPROVAL_CONTROLLER))
        snprintf(m, sizeof m, "admission check %s: controller %s is not run by gpuaas; the workload waits until the check is set Ready",
                 check, a->controller);
    else
        snprintf(m, sizeof m, "admission check %s: waiting for an admin to approve it (gpuaas approve %s)", check, w->key);
    return gx_xstrdup(m);
}

/* The Admitted condition of a workload that holds quota: False while a check is not
 * Ready, naming the checks it waits for (what `describe` and the portal show). */
static void waiting_cond(gx_wl *w, int64_t now)
{
    char m[1024];
    size_t off = 0;
    m[0] = 0;
    for (int i = 0; i < w->n_chk && off < sizeof m; i++) {
        if (w->chk[i].state == GX_CHECK_READY) continue;
        off += (size_t)snprintf(m + off, sizeof m - off, "%s%s", off ? "; " : "", w->chk[i].msg ? w->chk[i].msg : w->chk[i].name);
    }
    gx_engine_wl_set_cond(w, GX_C_ADMITTED, 0, "UnsatisfiedChecks", gx_xstrdup(m), now);
}

static void set_state(gx_wl_chk *k, int st, char *msg, int64_t now)
{
    if (k->state != st) k->t = now;
    k->state = st;
    free(k->msg);
    k->msg = msg;
}

/* An eviction gives the quota back: Kueue sets every check back to Pending, and they
 * are decided again after the next reservation. */
void gx_engine_check_reset(gx_engine *e, gx_wl *w, int64_t now)
{
    for (int i = 0; i < w->n_chk; i++) set_state(&w->chk[i], GX_CHECK_PENDING, pending_msg(e, w, w->chk[i].name), now);
    w->chk_wait = 0;
}

int gx_engine_check_reserve(gx_engine *e, gx_wl *w, int64_t now)
{
    gx_engine_check_wl_free(w);
    w->chk_wait = 0;
    if (w->cq < 0) return 0;
    const gx_cq *c = &e->cqs[w->cq];
    for (int i = 0; i < c->n_chk; i++) {
        if (!applies(&c->chk[i], w)) continue;
        w->chk = gx_xreallocarray(w->chk, (size_t)w->n_chk + 1, sizeof *w->chk);
        gx_wl_chk *k = &w->chk[w->n_chk++];
        k->name = gx_xstrdup(c->chk[i].name);
        k->state = GX_CHECK_PENDING;
        k->msg = pending_msg(e, w, k->name);
        k->t = now;
    }
    if (!w->n_chk) return 0;
    w->chk_wait = 1;
    waiting_cond(w, now);
    return 1;
}

void gx_engine_check_admit(gx_engine *e, gx_wl *w, int64_t now, int emit)
{
    w->chk_wait = 0;
    w->admitted_at = now;
    gx_engine_wl_set_cond(w, GX_C_ADMITTED, 1, "Admitted", NULL, now);
    if (w->s.max_exec_s > 0 && !w->max_exec_tracked) { w->max_exec_tracked = 1; e->n_max_exec++; }
    if (emit) {
        char msg[300];
        snprintf(msg, sizeof msg, "Admitted by ClusterQueue %s: every admission check is Ready", e->cqs[w->cq].name);
        gx_engine_sched_act(e, GX_ACT_ADMIT, w, NULL, "Admitted", msg);
    }
}

void gx_engine_check_pass(gx_engine *e, int64_t now)
{
    if (!e->n_chk_go) return;
    e->n_chk_go = 0;
    for (int i = 0; i < e->n_wl; i++) {
        gx_wl *w = &e->wls[i];
        if (w->live && w->state == GX_WL_ADMITTED && w->chk_wait == 2) gx_engine_check_admit(e, w, now, 1);
    }
}

static int by_approval(const gx_engine *e, const gx_wl_chk *k)
{
    const gx_ac *a = ac_get(e, k->name);
    return a && !strcmp(a->controller, GX_APPROVAL_CONTROLLER);
}

int gx_engine_set_check(gx_engine *e, const char *ns, const char *name, const char *check,
                        gx_check_state st, const char *message, int64_t now_ms, gx_err *err)
{
    gx_err_clear(err);
    char key[600];
    snprintf(key, sizeof key, "%s/%s", ns && *ns ? ns : "default", name ? name : "");
    gx_wl *w = gx_engine_wl_get(e, key);
    if (!w || !w->live) return gx_errf(err, 404, "", "workload %s not found", key);
    if ((int)st < GX_CHECK_PENDING || (int)st > GX_CHECK_REJECTED) return gx_errf(err, 422, "state", "unknown check state");
    if (w->state != GX_WL_ADMITTED || !w->chk_wait)
        return gx_errf(err, 409, "", "workload %s is not waiting for admission checks (it is %s)", key,
                       w->state == GX_WL_ADMITTED ? "admitted" : gx_engine_phase_name((gx_wl_phase)w->state));
    int hit = 0;
    for (int i = 0; i < w->n_chk; i++) {
        gx_wl_chk *k = &w->chk[i];
        if (check ? strcmp(k->name, check) != 0 : !by_approval(e, k)) continue;
        hit++;
        char m[600];
        if (st == GX_CHECK_PENDING) { set_state(k, st, pending_msg(e, w, k->name), now_ms); continue; }
        snprintf(m, sizeof m, "%s", message && *message ? message : st == GX_CHECK_READY ? "approved" : STATE[st]);
        set_state(k, st, gx_xstrdup(m), now_ms);
    }
    if (!hit) {
        if (check) return gx_errf(err, 404, "check", "workload %s has no admission check %s", key, check);
        return gx_errf(err, 409, "check", "no admission check of workload %s is run by %s: name the check to set", key, GX_APPROVAL_CONTROLLER);
    }
    const char *bad = NULL, *bad_msg = NULL;
    int all_ready = 1;
    for (int i = 0; i < w->n_chk; i++) {
        if (w->chk[i].state != GX_CHECK_READY) all_ready = 0;
        if (!bad && (w->chk[i].state == GX_CHECK_REJECTED || w->chk[i].state == GX_CHECK_RETRY)) {
            bad = w->chk[i].name;
            bad_msg = w->chk[i].msg;
        }
    }
    char m[900];
    if (bad && st == GX_CHECK_REJECTED) {
        /* Kueue: a Rejected check deactivates the workload; it is not restarted */
        snprintf(m, sizeof m, "admission check %s rejected the workload: %s", bad, bad_msg ? bad_msg : "");
        w->chk_wait = 0;
        gx_engine_wl_deactivate(e, w, "Deactivated", gx_xstrdup(m), now_ms);
        return 0;
    }
    if (bad) {
        /* Retry: give the quota back and queue again; the checks start over */
        snprintf(m, sizeof m, "admission check %s asked for a retry: %s", bad, bad_msg ? bad_msg : "");
        w->queue_ts = now_ms;      /* Kueue orders an admission-check eviction by its time */
        gx_engine_wl_evict(e, w, "AdmissionCheck", gx_xstrdup(m), now_ms);
        gx_engine_queue_wake_tree(e, w->cq);
        return 0;
    }
    if (all_ready) {
        w->chk_wait = 2;
        e->n_chk_go++;
        gx_engine_wl_set_cond(w, GX_C_ADMITTED, 0, "UnsatisfiedChecks",
                              gx_xstrdup("every admission check is Ready: admitted at the next scheduling pass"), now_ms);
    } else {
        waiting_cond(w, now_ms);
    }
    return 0;
}

/* ---- restart --------------------------------------------------------------------------- */

int gx_engine_check_restoring(const json_t *status)
{
    const char *st = gx_engine_obj_str(status, "state");
    return st && !strcmp(st, "Pending") && json_is_object(json_object_get(status, "admission"))
           && json_array_size(json_object_get(status, "admissionChecks")) > 0;
}

/* After the workload's quota was re-reserved from its status: put back each check's
 * state as recorded, and whether it was already Admitted. */
void gx_engine_check_restore(gx_engine *e, gx_wl *w, const json_t *status, int64_t admitted_at)
{
    const char *st = gx_engine_obj_str(status, "state");
    size_t i;
    const json_t *c;
    int ended = st && (!strcmp(st, "Finished") || !strcmp(st, "Deactivated"));
    json_array_foreach(json_object_get(status, "admissionChecks"), i, c) {
        /* an ended workload holds no quota: its checks are only history, kept as recorded */
        const char *cn = gx_engine_obj_str(c, "name");
        if (ended && cn) {
            w->chk = gx_xreallocarray(w->chk, (size_t)w->n_chk + 1, sizeof *w->chk);
            memset(&w->chk[w->n_chk], 0, sizeof *w->chk);
            w->chk[w->n_chk++].name = gx_xstrdup(cn);
        }
        const char *n = gx_engine_obj_str(c, "name"), *msg = gx_engine_obj_str(c, "message");
        int s = gx_engine_check_state_parse(gx_engine_obj_str(c, "state"));
        for (int k = 0; n && s >= 0 && k < w->n_chk; k++) {
            if (strcmp(w->chk[k].name, n)) continue;
            int64_t t = 0;
            gx_time_parse(gx_engine_obj_str(c, "lastTransitionTime"), &t);
            set_state(&w->chk[k], s, msg ? gx_xstrdup(msg) : NULL, t);
            w->chk[k].t = t;
        }
    }
    if (ended) return;
    if (st && !strcmp(st, "Admitted")) {
        /* admitted before its queue had checks: it has none to show */
        if (!json_array_size(json_object_get(status, "admissionChecks"))) gx_engine_check_wl_free(w);
        if (w->chk_wait) gx_engine_check_admit(e, w, admitted_at, 0);
        return;
    }
    int all = 1;
    for (int k = 0; k < w->n_chk; k++) all &= w->chk[k].state == GX_CHECK_READY;
    if (all && w->chk_wait) { w->chk_wait = 2; e->n_chk_go++; }
}

json_t *gx_engine_check_view(const gx_wl *w)
{
    if (!w->n_chk) return NULL;
    json_t *a = json_array();
    char t[40];
    for (int i = 0; i < w->n_chk; i++) {
        gx_time_fmt(w->chk[i].t, t, sizeof t);
        json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:s}", "name", w->chk[i].name, "state", STATE[w->chk[i].state],
                                           "message", w->chk[i].msg ? w->chk[i].msg : "", "lastTransitionTime", t));
    }
    return a;
}
