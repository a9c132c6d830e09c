/* opts: the one command-line option parser (the client's commands, gpuaas sim).
 * Owns: the option grammar (--long, --long=v, --long v, -s v, -sv, flags, "--" ends
 * options, options and arguments in any order) and the usage text built from the
 * same tables, so help can never drift from what is parsed.
 * Must not: print anything except in gx_opts_usage, or exit. */
#ifndef GX_OPTS_H
#define GX_OPTS_H
#include <stdio.h>

typedef struct gx_opt {
    const char *lng;   /* long name without "--"; NULL ends a table */
    char shrt;         /* short letter, or 0 */
    const char *meta;  /* value placeholder ("NS"); NULL for a flag */
    const char *help;  /* one line */
} gx_opt;

typedef struct gx_opt_seen {
    const gx_opt *opt;
    const char *val;   /* "" for a flag; otherwise points into argv */
} gx_opt_seen;

typedef struct gx_opt_args {
    gx_opt_seen *seen; /* options in command-line order (malloc'd) */
    int nseen;
    char **pos;        /* positional arguments (malloc'd array of argv pointers) */
    int npos;
    char err[256];     /* the usage mistake, when parsing fails */
} gx_opt_args;

/* Parse argv[1..argc) (argv[0] is the command) against the option tables in sets
 * (a NULL-terminated list of tables, each ended by an entry with lng == NULL).
 * A value that starts with '-' (other than "-" alone) is refused, so that
 * "-n --state X" is a mistake rather than a namespace called "--state"; write
 * --namespace=-odd to force one. Returns 0, or -1 with a.err set. Free with _free. */
int gx_opts_parse(const gx_opt *const *sets, int argc, char **argv, gx_opt_args *a);
void gx_opts_free(gx_opt_args *a);

/* Last value of an option (by long name), or NULL when absent. */
const char *gx_opt_get(const gx_opt_args *a, const char *lng);
/* Whether an option was given at all. */
int gx_opt_has(const gx_opt_args *a, const char *lng);
/* The i-th value (0-based) of an option that may repeat, or NULL. */
const char *gx_opt_nth(const gx_opt_args *a, const char *lng, int i);
/* How many times an option was given. */
int gx_opt_count(const gx_opt_args *a, const char *lng);

/* Print "Options:" lines for every table in sets, aligned. */
void gx_opts_usage(FILE *f, const gx_opt *const *sets);

#endif
