/* cli/table: kubectl-style aligned tables, and the json/yaml printers behind -o.
 * Owns: the table's memory (every cell is a copy) and its layout rules (table.h).
 * Must not: truncate cells (callers shorten what they want short) or fetch data. */
#include <stdlib.h>
#include <string.h>
#include "cli/fmt.h"
#include "cli/table.h"
#include "lib/alloc.h"
#include "lib/yaml.h"

const char gx_cli_table_blank[] = "";

struct gx_cli_table {
    int ncols;
    int nrows, cap;      /* rows after the header */
    char **cells;        /* (nrows + 1) * ncols, row 0 is the header */
    size_t *width;       /* per column, in code points */
};

/* Copy a cell, showing a missing value as "-" and control characters as spaces
 * (a newline inside a message would otherwise break the table). */
static char *cell_dup(const char *s)
{
    if (s == gx_cli_table_blank) s = "";
    else if (!s || !*s) s = "-";
    char *d = gx_xstrdup(s);
    for (char *p = d; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f) *p = ' ';
    return d;
}

static void put_row(gx_cli_table *t, const char *const *cells)
{
    if (t->nrows + 1 >= t->cap) {
        int ncap = t->cap ? t->cap * 2 : 16;
        t->cells = gx_xreallocarray(t->cells, (size_t)ncap * (size_t)t->ncols, sizeof *t->cells);
        t->cap = ncap;
    }
    char **row = t->cells + (size_t)(t->nrows + 1) * (size_t)t->ncols;
    for (int c = 0; c < t->ncols; c++) {
        row[c] = cell_dup(cells[c]);
        size_t w = gx_cli_width(row[c]);
        if (w > t->width[c]) t->width[c] = w;
    }
}

gx_cli_table *gx_cli_table_new(int ncols, const char *const *headers)
{
    gx_cli_table *t = gx_xcalloc(1, sizeof *t);
    t->ncols = ncols;
    t->width = gx_xcalloc((size_t)ncols, sizeof *t->width);
    t->cap = 16;
    t->cells = gx_xcalloc((size_t)t->cap * (size_t)ncols, sizeof *t->cells);
    t->nrows = -1; /* the header goes into row 0 through the same path */
    put_row(t, headers);
    t->nrows = 0;
    return t;
}

void gx_cli_table_add(gx_cli_table *t, const char *const *cells)
{
    put_row(t, cells);
    t->nrows++;
}

int gx_cli_table_rows(const gx_cli_table *t)
{
    return t->nrows;
}

size_t gx_cli_table_width(const gx_cli_table *t, int c)
{
    return c >= 0 && c < t->ncols ? t->width[c] : 0;
}

/* Whether cells [c, n) are all blank, so that a line does not end in spaces. */
static int last_blank(char *const *row, int c, int n)
{
    for (; c < n; c++)
        if (*row[c]) return 0;
    return 1;
}

void gx_cli_table_print(const gx_cli_table *t, FILE *f, int indent)
{
    for (int r = 0; r <= t->nrows; r++) {
        char **row = t->cells + (size_t)r * (size_t)t->ncols;
        fprintf(f, "%*s", indent, "");
        for (int c = 0; c < t->ncols; c++) {
            fputs(row[c], f);
            if (c + 1 < t->ncols && !last_blank(row, c + 1, t->ncols)) {
                size_t pad = t->width[c] - gx_cli_width(row[c]) + 3;
                fprintf(f, "%*s", (int)pad, "");
            }
        }
        fputc('\n', f);
    }
}

void gx_cli_table_free(gx_cli_table *t)
{
    if (!t) return;
    for (int i = 0; i < (t->nrows + 1) * t->ncols; i++) free(t->cells[i]);
    free(t->cells);
    free(t->width);
    free(t);
}

int gx_cli_out_parse(const char *s, gx_cli_out *out)
{
    if (!s || !strcmp(s, "table")) *out = GX_CLI_OUT_TABLE;
    else if (!strcmp(s, "wide")) *out = GX_CLI_OUT_WIDE;
    else if (!strcmp(s, "json")) *out = GX_CLI_OUT_JSON;
    else if (!strcmp(s, "yaml")) *out = GX_CLI_OUT_YAML;
    else return -1;
    return 0;
}

int gx_cli_out_print(FILE *f, gx_cli_out out, const json_t *v)
{
    char *s = out == GX_CLI_OUT_YAML ? gx_yaml_emit(v)
                                     : json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY);
    if (!s) return -1;
    size_t n = strlen(s);
    fputs(s, f);
    if (!n || s[n - 1] != '\n') fputc('\n', f);
    free(s);
    return 0;
}
