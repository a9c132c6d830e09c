/* opts: the option parser and the "Options:" part of every usage text.
 * Owns: the grammar described in opts.h. Values are never copied: they point into argv.
 * Must not: print (except gx_opts_usage), exit, or know any command. */
#include <stdlib.h>
#include <string.h>
#include "lib/alloc.h"
#include "lib/opts.h"

static const gx_opt *find_long(const gx_opt *const *sets, const char *name, size_t len)
{
    for (; *sets; sets++)
        for (const gx_opt *o = *sets; o->lng; o++)
            if (strlen(o->lng) == len && !strncmp(o->lng, name, len)) return o;
    return NULL;
}

static const gx_opt *find_short(const gx_opt *const *sets, char c)
{
    for (; *sets; sets++)
        for (const gx_opt *o = *sets; o->lng; o++)
            if (o->shrt && o->shrt == c) return o;
    return NULL;
}

static void add(gx_opt_args *a, const gx_opt *o, const char *val)
{
    a->seen[a->nseen].opt = o;
    a->seen[a->nseen].val = val;
    a->nseen++;
}

/* A separate value may not look like an option: see opts.h. */
static int takes(const char *v)
{
    return v && (v[0] != '-' || v[1] == 0);
}

/* "--name", "--name=value", "--name value". Returns how many argv entries it used, or -1. */
static int parse_long(const gx_opt *const *sets, char **argv, int i, int argc, gx_opt_args *a)
{
    const char *name = argv[i] + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    const gx_opt *o = find_long(sets, name, len);
    if (!o) {
        snprintf(a->err, sizeof a->err, "unknown option --%.*s", (int)(len > 64 ? 64 : len), name);
        return -1;
    }
    if (!o->meta) {
        if (eq) { snprintf(a->err, sizeof a->err, "option --%s takes no value", o->lng); return -1; }
        add(a, o, "");
        return 1;
    }
    if (eq) { add(a, o, eq + 1); return 1; }
    if (i + 1 >= argc || !takes(argv[i + 1])) {
        snprintf(a->err, sizeof a->err, "option --%s needs a value (%s)", o->lng, o->meta);
        return -1;
    }
    add(a, o, argv[i + 1]);
    return 2;
}

/* "-A", "-n value", "-nvalue". Flags cannot be bundled ("-Ax"): too easy to misread. */
static int parse_short(const gx_opt *const *sets, char **argv, int i, int argc, gx_opt_args *a)
{
    const char *s = argv[i];
    const gx_opt *o = find_short(sets, s[1]);
    if (!o) { snprintf(a->err, sizeof a->err, "unknown option -%c", s[1]); return -1; }
    if (!o->meta) {
        if (s[2]) { snprintf(a->err, sizeof a->err, "unknown option %s (-%c takes no value)", s, s[1]); return -1; }
        add(a, o, "");
        return 1;
    }
    if (s[2]) { add(a, o, s + 2); return 1; }
    if (i + 1 >= argc || !takes(argv[i + 1])) {
        snprintf(a->err, sizeof a->err, "option -%c needs a value (%s)", s[1], o->meta);
        return -1;
    }
    add(a, o, argv[i + 1]);
    return 2;
}

int gx_opts_parse(const gx_opt *const *sets, int argc, char **argv, gx_opt_args *a)
{
    memset(a, 0, sizeof *a);
    size_t cap = argc > 0 ? (size_t)argc : 1;
    a->seen = gx_xcalloc(cap, sizeof *a->seen);
    a->pos = gx_xcalloc(cap, sizeof *a->pos);
    int only_pos = 0;
    for (int i = 1; i < argc;) {
        const char *s = argv[i];
        int used;
        if (only_pos || s[0] != '-' || s[1] == 0) {
            a->pos[a->npos++] = argv[i];
            used = 1;
        } else if (!strcmp(s, "--")) {
            only_pos = 1;
            used = 1;
        } else if (s[1] == '-') {
            used = parse_long(sets, argv, i, argc, a);
        } else {
            used = parse_short(sets, argv, i, argc, a);
        }
        if (used < 0) return -1;
        i += used;
    }
    return 0;
}

void gx_opts_free(gx_opt_args *a)
{
    free(a->seen);
    free(a->pos);
    a->seen = NULL;
    a->pos = NULL;
    a->nseen = a->npos = 0;
}

const char *gx_opt_get(const gx_opt_args *a, const char *lng)
{
    for (int i = a->nseen - 1; i >= 0; i--)
        if (!strcmp(a->seen[i].opt->lng, lng)) return a->seen[i].val;
    return NULL;
}

int gx_opt_has(const gx_opt_args *a, const char *lng)
{
    return gx_opt_get(a, lng) != NULL;
}

const char *gx_opt_nth(const gx_opt_args *a, const char *lng, int n)
{
    for (int i = 0; i < a->nseen; i++)
        if (!strcmp(a->seen[i].opt->lng, lng) && n-- == 0) return a->seen[i].val;
    return NULL;
}

int gx_opt_count(const gx_opt_args *a, const char *lng)
{
    int c = 0;
    for (int i = 0; i < a->nseen; i++) c += !strcmp(a->seen[i].opt->lng, lng);
    return c;
}

static void opt_label(const gx_opt *o, char *buf, size_t n)
{
    if (o->shrt)
        snprintf(buf, n, "-%c, --%s%s%s", o->shrt, o->lng, o->meta ? " " : "", o->meta ? o->meta : "");
    else
        snprintf(buf, n, "    --%s%s%s", o->lng, o->meta ? " " : "", o->meta ? o->meta : "");
}

void gx_opts_usage(FILE *f, const gx_opt *const *sets)
{
    size_t w = 0;
    char lab[96];
    for (const gx_opt *const *s = sets; *s; s++)
        for (const gx_opt *o = *s; o->lng; o++) {
            opt_label(o, lab, sizeof lab);
            if (strlen(lab) > w) w = strlen(lab);
        }
    fputs("Options:\n", f);
    for (const gx_opt *const *s = sets; *s; s++)
        for (const gx_opt *o = *s; o->lng; o++) {
            opt_label(o, lab, sizeof lab);
            fprintf(f, "  %-*s  %s\n", (int)w, lab, o->help);
        }
}
