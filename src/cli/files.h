/* cli/files: the manifests given with -f, read and bundled into request bodies.
 * Owns: the 4 MiB per-file limit, "-" for stdin, and the map from a line of a combined
 * body back to the file and line it came from (so errors name the user's file).
 * Must not: parse YAML (the daemon does) or talk to the network. */
#ifndef GX_CLI_FILES_H
#define GX_CLI_FILES_H
#include <stddef.h>
#include <stdio.h>

#define GX_CLI_FILE_MAX (4u << 20)

typedef struct gx_cli_part {
    char *name;      /* as given ("<stdin>" for -) */
    int first_line;  /* 1-based line of the body where this file's first line is */
    int nlines;
} gx_cli_part;

/* One request body and the files it was made of. */
typedef struct gx_cli_body {
    char *data;
    size_t len;
    const char *ctype;  /* "application/json" or "application/yaml" */
    gx_cli_part *parts;
    size_t nparts;
} gx_cli_body;

/* Read one file (or stdin for "-") into a body of its own. Refuses files over
 * GX_CLI_FILE_MAX and empty ones. Returns 0, or -1 with a message in err. */
int gx_cli_body_read(const char *path, FILE *in, gx_cli_body *b, char *err, size_t errn);

/* Whether a body is JSON to the daemon: its first non-blank byte is '{' or '['. */
int gx_cli_body_is_json(const char *data, size_t len);

/* Concatenate YAML bodies as documents of one body ("---" before each), so that the
 * daemon applies them all or none. Takes ownership of nothing; out is new. */
int gx_cli_body_concat(const gx_cli_body *in, size_t n, gx_cli_body *out);

/* Map a 1-based line of b back to (file, line). Returns the file name, or NULL when
 * the line falls outside every file (a separator), leaving *fline untouched. */
const char *gx_cli_body_where(const gx_cli_body *b, int line, int *fline);

void gx_cli_body_free(gx_cli_body *b);

#endif
