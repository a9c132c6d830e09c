/* Helpers for the engine unit tests: build objects from YAML text, drive passes. */
#ifndef TEST_ENGINE_UTIL_H
#define TEST_ENGINE_UTIL_H
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/engine.h"
#include "lib/yaml.h"

static inline json_t *Y(const char *text)
{
    gx_yaml_docs d;
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_yaml_parse(text, strlen(text), &d, &e), 0, "yaml: %s", e.msg);
    cr_assert_eq(d.n, 1);
    json_t *j = json_incref(d.docs[0]);
    gx_yaml_docs_free(&d);
    return j;
}

static inline void apply_ok(gx_engine *en, const char *text)
{
    json_t *j = Y(text);
    gx_err e;
    gx_err_clear(&e);
    int rc = gx_engine_apply(en, j, &e);
    cr_assert_eq(rc, 0, "apply failed: %s: %s", e.field, e.msg);
    json_decref(j);
}

static inline gx_err apply_err(gx_engine *en, const char *text)
{
    json_t *j = Y(text);
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_engine_apply(en, j, &e), -1, "apply should fail");
    json_decref(j);
    return e;
}

/* A Job with one container; extra = more labels lines (YAML, indented 4). */
static inline json_t *job(const char *ns, const char *name, const char *queue, const char *prio, int pods,
                          const char *cpu, const char *gpu)
{
    char buf[2048];
    snprintf(buf, sizeof buf,
             "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: %s\n  namespace: %s\n  labels:\n"
             "    kueue.x-k8s.io/queue-name: %s\n%s%s%s"
             "spec:\n  parallelism: %d\n  template:\n    spec:\n      containers:\n      - name: c\n        image: x\n"
             "        resources:\n          requests:\n            cpu: \"%s\"\n%s%s%s",
             name, ns, queue, prio ? "    kueue.x-k8s.io/priority-class: " : "", prio ? prio : "", prio ? "\n" : "",
             pods, cpu, gpu ? "            nvidia.com/gpu: \"" : "", gpu ? gpu : "", gpu ? "\"\n" : "");
    return Y(buf);
}

static inline void submit_ok(gx_engine *en, json_t *j, int64_t now)
{
    gx_err e;
    gx_err_clear(&e);
    int rc = gx_engine_submit(en, j, now, &e);
    cr_assert_eq(rc, 0, "submit failed: %s: %s", e.field, e.msg);
    json_decref(j);
}

static inline size_t pass(gx_engine *en, int64_t now, gx_action **acts)
{
    return gx_engine_schedule(en, now, acts);
}

static inline const char *state_of(gx_engine *en, const char *key)
{
    static char st[32];
    json_t *w = gx_engine_workload(en, key, 0);
    cr_assert(w, "no workload %s", key);
    snprintf(st, sizeof st, "%s", json_string_value(json_object_get(w, "state")));
    json_decref(w);
    return st;
}

#define RF(name) "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata: {name: " name "}\n"
#define LQ(ns, name, cq) "apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: " name ", namespace: " ns "}\nspec: {clusterQueue: " cq "}\n"

#endif
