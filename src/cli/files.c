/* cli/files: reading -f manifests and joining several into one request body.
 * Owns: the per-file size limit and the line map of a combined body (files.h).
 * Must not: parse or rewrite the documents: the daemon's parser is the only one, so a
 * file means the same thing over curl and over the CLI. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "cli/files.h"

static int count_lines(const char *d, size_t len)
{
    int n = 0;
    for (size_t i = 0; i < len; i++) n += d[i] == '\n';
    if (len && d[len - 1] != '\n') n++;
    return n;
}

/* Read all of f, up to max bytes; more than that is an error (we read one byte past
 * the limit to know). stdin and pipes have no size to stat, so the cap is enforced here. */
static int slurp(FILE *f, char **out, size_t *len, int *too_big)
{
    size_t cap = 64 << 10, n = 0;
    char *buf = malloc(cap + 1);
    *too_big = 0;
    if (!buf) return -1;
    for (;;) {
        if (n == cap) {
            if (cap > GX_CLI_FILE_MAX) break;
            cap *= 2;
            char *nb = realloc(buf, cap + 1);
            if (!nb) { free(buf); return -1; }
            buf = nb;
        }
        size_t r = fread(buf + n, 1, cap - n, f);
        n += r;
        if (n > GX_CLI_FILE_MAX) { *too_big = 1; free(buf); return -1; }
        if (r == 0) break;
    }
    if (ferror(f)) { free(buf); return -1; }
    buf[n] = 0;
    *out = buf;
    *len = n;
    return 0;
}

int gx_cli_body_is_json(const char *d, size_t len)
{
    size_t i = 0;
    while (i < len && (d[i] == ' ' || d[i] == '\t' || d[i] == '\r' || d[i] == '\n')) i++;
    return i < len && (d[i] == '{' || d[i] == '[');
}

static int too_big_msg(const char *name, char *err, size_t errn)
{
    snprintf(err, errn, "%s is larger than 4 MiB; gpuaas accepts manifests of up to 4 MiB per file"
             " (split it into several files)", name);
    return -1;
}

int gx_cli_body_read(const char *path, FILE *in, gx_cli_body *b, char *err, size_t errn)
{
    memset(b, 0, sizeof *b);
    int is_stdin = !strcmp(path, "-");
    const char *name = is_stdin ? "<stdin>" : path;
    FILE *f = is_stdin ? in : fopen(path, "rb");
    if (!f) { snprintf(err, errn, "cannot read %s: %s", path, strerror(errno)); return -1; }
    struct stat st;
    if (!is_stdin && fstat(fileno(f), &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            fclose(f);
            snprintf(err, errn, "%s is a directory; give the files in it with -f each", path);
            return -1;
        }
        if (S_ISREG(st.st_mode) && (unsigned long long)st.st_size > GX_CLI_FILE_MAX) {
            fclose(f);
            return too_big_msg(name, err, errn);
        }
    }
    int too_big, rc = slurp(f, &b->data, &b->len, &too_big);
    int saved = errno;
    if (!is_stdin) fclose(f);
    if (rc) {
        if (too_big) return too_big_msg(name, err, errn);
        snprintf(err, errn, "cannot read %s: %s", name, strerror(saved));
        return -1;
    }
    size_t i = 0;
    while (i < b->len && strchr(" \t\r\n", b->data[i])) i++;
    if (i == b->len) {
        snprintf(err, errn, "%s is empty", name);
        gx_cli_body_free(b);
        return -1;
    }
    b->ctype = gx_cli_body_is_json(b->data, b->len) ? "application/json" : "application/yaml";
    b->parts = calloc(1, sizeof *b->parts);
    if (!b->parts || !(b->parts[0].name = strdup(name))) {
        snprintf(err, errn, "out of memory");
        gx_cli_body_free(b);
        return -1;
    }
    b->nparts = 1;
    b->parts[0].first_line = 1;
    b->parts[0].nlines = count_lines(b->data, b->len);
    return 0;
}

int gx_cli_body_concat(const gx_cli_body *in, size_t n, gx_cli_body *out)
{
    memset(out, 0, sizeof *out);
    size_t total = 1;
    for (size_t i = 0; i < n; i++) total += in[i].len + 5;
    out->data = malloc(total);
    out->parts = calloc(n ? n : 1, sizeof *out->parts);
    if (!out->data || !out->parts) { gx_cli_body_free(out); return -1; }
    int line = 1;
    for (size_t i = 0; i < n; i++) {
        memcpy(out->data + out->len, "---\n", 4);
        out->len += 4;
        line++;
        memcpy(out->data + out->len, in[i].data, in[i].len);
        out->len += in[i].len;
        if (in[i].len && in[i].data[in[i].len - 1] != '\n') out->data[out->len++] = '\n';
        gx_cli_part *p = &out->parts[out->nparts++];
        p->name = strdup(in[i].parts[0].name);
        if (!p->name) { gx_cli_body_free(out); return -1; }
        p->first_line = line;
        p->nlines = count_lines(in[i].data, in[i].len);
        line += p->nlines;
    }
    out->data[out->len] = 0;
    out->ctype = "application/yaml";
    return 0;
}

const char *gx_cli_body_where(const gx_cli_body *b, int line, int *fline)
{
    for (size_t i = 0; i < b->nparts; i++) {
        const gx_cli_part *p = &b->parts[i];
        if (line >= p->first_line && line < p->first_line + p->nlines) {
            *fline = line - p->first_line + 1;
            return p->name;
        }
    }
    /* A single file: lines past its end (a parser pointing at EOF) still belong to it. */
    if (b->nparts == 1 && line >= 1) { *fline = line; return b->parts[0].name; }
    return NULL;
}

void gx_cli_body_free(gx_cli_body *b)
{
    free(b->data);
    for (size_t i = 0; i < b->nparts; i++) free(b->parts[i].name);
    free(b->parts);
    memset(b, 0, sizeof *b);
}
