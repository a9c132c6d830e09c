/* cli/table: aligned text tables and the json/yaml renderings of -o.
 * Owns: column layout (width = widest cell in code points, three spaces between
 * columns, no trailing blanks, control characters shown as spaces).
 * Must not: fetch anything or decide what goes in a cell. */
#ifndef GX_CLI_TABLE_H
#define GX_CLI_TABLE_H
#include <stdio.h>
#include <jansson.h>

typedef struct gx_cli_table gx_cli_table;

/* A cell that prints as nothing (compared by address). */
extern const char gx_cli_table_blank[];

/* A table with ncols columns named by headers[0..ncols). Never NULL (lib/alloc). */
gx_cli_table *gx_cli_table_new(int ncols, const char *const *headers);
/* Append a row of ncols cells (copied; NULL or "" shows as "-",
 * gx_cli_table_blank as nothing, for continuation rows). */
void gx_cli_table_add(gx_cli_table *t, const char *const *cells);
/* Rows added so far (the header not counted). */
int gx_cli_table_rows(const gx_cli_table *t);
/* Width of column c after the rows added so far (header included). */
size_t gx_cli_table_width(const gx_cli_table *t, int c);
/* Print header and rows, each line prefixed by indent spaces. */
void gx_cli_table_print(const gx_cli_table *t, FILE *f, int indent);
void gx_cli_table_free(gx_cli_table *t);

/* Output formats of -o. */
typedef enum { GX_CLI_OUT_TABLE, GX_CLI_OUT_WIDE, GX_CLI_OUT_JSON, GX_CLI_OUT_YAML } gx_cli_out;
/* Parse an -o value (NULL means table). Returns 0, or -1 when unknown. */
int gx_cli_out_parse(const char *s, gx_cli_out *out);
/* Print v as pretty JSON or YAML (per out) to f, ending with a newline. Returns 0 or -1. */
int gx_cli_out_print(FILE *f, gx_cli_out out, const json_t *v);

#endif
