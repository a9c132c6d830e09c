/* Unit tests of cli/files (reading -f manifests, the 4 MiB limit, combined bodies and
 * their line map) and of the error line built from a server error body. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/files.h"
#include "cli/http.h"

static int read_str(const char *s, size_t len, gx_cli_body *b, char *err)
{
    FILE *in = fmemopen((void *)s, len, "r");
    int rc = gx_cli_body_read("-", in, b, err, 256);
    fclose(in);
    return rc;
}

Test(cli_files, stdin_yaml_and_json)
{
    gx_cli_body b;
    char err[256];
    const char *y = "kind: ClusterQueue\nmetadata:\n  name: a\n";
    cr_assert_eq(read_str(y, strlen(y), &b, err), 0, "%s", err);
    cr_assert_str_eq(b.ctype, "application/yaml");
    cr_assert_eq(b.len, strlen(y));
    cr_assert_str_eq(b.parts[0].name, "<stdin>");
    cr_assert_eq(b.parts[0].nlines, 3);
    gx_cli_body_free(&b);
    const char *j = "  \n{\"kind\":\"Job\"}";
    cr_assert_eq(read_str(j, strlen(j), &b, err), 0, "%s", err);
    cr_assert_str_eq(b.ctype, "application/json");
    cr_assert_eq(b.parts[0].nlines, 2, "a last line without newline still counts");
    gx_cli_body_free(&b);
}

Test(cli_files, refuses_empty_big_missing_and_directories)
{
    gx_cli_body b;
    char err[256];
    cr_assert_eq(read_str(" \n\n", 3, &b, err), -1);
    cr_assert(strstr(err, "empty"), "%s", err);
    size_t big = GX_CLI_FILE_MAX + 1;
    char *data = malloc(big);
    memset(data, 'a', big);
    cr_assert_eq(read_str(data, big, &b, err), -1);
    cr_assert(strstr(err, "4 MiB"), "%s", err);
    cr_assert_eq(read_str(data, GX_CLI_FILE_MAX, &b, err), 0, "exactly 4 MiB is allowed");
    gx_cli_body_free(&b);
    free(data);
    cr_assert_eq(gx_cli_body_read("/nonexistent/q.yaml", stdin, &b, err, sizeof err), -1);
    cr_assert(strstr(err, "/nonexistent/q.yaml"), "%s", err);
    cr_assert_eq(gx_cli_body_read("/tmp", stdin, &b, err, sizeof err), -1);
    cr_assert(strstr(err, "directory"), "%s", err);
}

Test(cli_files, big_regular_file_refused_before_reading)
{
    char path[] = "/tmp/gx_cli_big_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    cr_assert_eq(ftruncate(fd, GX_CLI_FILE_MAX + 10), 0);
    close(fd);
    gx_cli_body b;
    char err[256];
    cr_assert_eq(gx_cli_body_read(path, stdin, &b, err, sizeof err), -1);
    cr_assert(strstr(err, path) && strstr(err, "4 MiB"), "%s", err);
    unlink(path);
}

static gx_cli_body part(const char *name, const char *data)
{
    gx_cli_body b;
    char err[256];
    cr_assert_eq(read_str(data, strlen(data), &b, err), 0);
    free(b.parts[0].name);
    b.parts[0].name = strdup(name);
    return b;
}

Test(cli_files, concat_maps_lines_back)
{
    gx_cli_body in[2] = {part("a.yaml", "x: 1\ny: 2\n"), part("b.yaml", "z: 3\nw: 4\nv: 5")};
    gx_cli_body all;
    cr_assert_eq(gx_cli_body_concat(in, 2, &all), 0);
    cr_assert_str_eq(all.data, "---\nx: 1\ny: 2\n---\nz: 3\nw: 4\nv: 5\n");
    cr_assert_str_eq(all.ctype, "application/yaml");
    int fl = 0;
    cr_assert_null(gx_cli_body_where(&all, 1, &fl), "the first separator is nobody's");
    cr_assert_str_eq(gx_cli_body_where(&all, 2, &fl), "a.yaml");
    cr_assert_eq(fl, 1);
    cr_assert_str_eq(gx_cli_body_where(&all, 3, &fl), "a.yaml");
    cr_assert_eq(fl, 2);
    cr_assert_null(gx_cli_body_where(&all, 4, &fl));
    cr_assert_str_eq(gx_cli_body_where(&all, 7, &fl), "b.yaml");
    cr_assert_eq(fl, 3);
    cr_assert_null(gx_cli_body_where(&all, 8, &fl));
    cr_assert_eq(gx_cli_body_where(&in[0], 9, &fl), in[0].parts[0].name, "a single file owns lines past its end");
    cr_assert_eq(fl, 9);
    gx_cli_body_free(&all);
    gx_cli_body_free(&in[0]);
    gx_cli_body_free(&in[1]);
}

Test(cli_files, is_json)
{
    cr_assert(gx_cli_body_is_json(" \n[1]", 5));
    cr_assert(gx_cli_body_is_json("{}", 2));
    cr_assert_not(gx_cli_body_is_json("---\n{}", 6));
    cr_assert_not(gx_cli_body_is_json("", 0));
}

static const char *err_of(const char *body, const gx_cli_body *src, char *buf, size_t n)
{
    json_t *j = json_loads(body, 0, NULL);
    cr_assert_not_null(j);
    gx_cli_err_text(j, src, buf, n);
    json_decref(j);
    return buf;
}

Test(cli_errors, file_line_field_message)
{
    char buf[600];
    gx_cli_body f = part("examples/demo/bad.yaml", "a: 1\n");
    cr_assert_str_eq(err_of("{\"error\":{\"code\":422,\"reason\":\"Invalid\",\"message\":\"quantity \\\"-1\\\" is negative\","
                            "\"field\":\"spec.resourceGroups[0].flavors[0].nominalQuota\",\"line\":12,\"document\":0}}",
                            &f, buf, sizeof buf),
                     "examples/demo/bad.yaml:12: spec.resourceGroups[0].flavors[0].nominalQuota: quantity \"-1\" is negative");
    cr_assert_str_eq(err_of("{\"error\":{\"code\":422,\"message\":\"m\",\"document\":1}}", &f, buf, sizeof buf),
                     "examples/demo/bad.yaml: document 2: m", "documents count from 1 for people");
    cr_assert_str_eq(err_of("{\"error\":{\"code\":400,\"message\":\"not YAML\"}}", &f, buf, sizeof buf),
                     "examples/demo/bad.yaml: not YAML");
    gx_cli_body_free(&f);
}

Test(cli_errors, without_a_file)
{
    char buf[600];
    cr_assert_str_eq(err_of("{\"error\":{\"code\":404,\"reason\":\"NotFound\",\"message\":\"workload team-a/x not found\"}}",
                            NULL, buf, sizeof buf), "workload team-a/x not found");
    cr_assert_str_eq(err_of("{\"error\":{\"code\":422,\"message\":\"bad\",\"field\":\"spec.x\",\"line\":3}}", NULL, buf, sizeof buf),
                     "line 3: spec.x: bad");
    cr_assert_str_eq(err_of("{\"error\":{\"code\":403,\"reason\":\"Forbidden\"}}", NULL, buf, sizeof buf), "Forbidden",
                     "the reason stands in for a missing message");
    cr_assert_str_eq(err_of("{\"error\":{}}", NULL, buf, sizeof buf), "the server gave no reason");
}

Test(cli_errors, combined_files_name_the_right_one)
{
    char buf[600];
    gx_cli_body in[2] = {part("q.yaml", "a: 1\nb: 2\n"), part("f.yaml", "c: 3\nd: -1\n")};
    gx_cli_body all;
    cr_assert_eq(gx_cli_body_concat(in, 2, &all), 0);
    cr_assert_str_eq(err_of("{\"error\":{\"message\":\"negative\",\"field\":\"d\",\"line\":6}}", &all, buf, sizeof buf),
                     "f.yaml:2: d: negative");
    cr_assert_str_eq(err_of("{\"error\":{\"message\":\"m\",\"document\":1}}", &all, buf, sizeof buf), "document 2: m");
    gx_cli_body_free(&all);
    gx_cli_body_free(&in[0]);
    gx_cli_body_free(&in[1]);
}

Test(cli_errors, only_body_errors_name_the_file)
{
    char buf[600];
    gx_cli_body f = part("queues.yaml", "a: 1\n");
    cr_assert_str_eq(err_of("{\"error\":{\"code\":403,\"reason\":\"Forbidden\",\"message\":\"only an admin may do this\"}}",
                            &f, buf, sizeof buf), "only an admin may do this");
    cr_assert_str_eq(err_of("{\"error\":{\"code\":413,\"message\":\"too large\"}}", &f, buf, sizeof buf), "queues.yaml: too large");
    gx_cli_body_free(&f);
}

/* A 403 or 409 the server pins on a document's line (submit to a namespace one may not
 * use, a name that exists) is about that document: the file and its line say which. */
Test(cli_errors, refusals_with_a_line_name_the_file)
{
    char buf[600];
    gx_cli_body in[2] = {part("a.yaml", "a: 1\nb: 2\n"), part("b.yaml", "c: 3\nd: 4\n")};
    gx_cli_body all;
    cr_assert_eq(gx_cli_body_concat(in, 2, &all), 0);
    cr_assert_str_eq(err_of("{\"error\":{\"code\":403,\"message\":\"user bob may not submit to namespace team-b\","
                            "\"field\":\"metadata.namespace\",\"line\":5,\"document\":1}}", &all, buf, sizeof buf),
                     "b.yaml:1: metadata.namespace: user bob may not submit to namespace team-b");
    cr_assert_str_eq(err_of("{\"error\":{\"code\":409,\"message\":\"workload team-a/x already exists\","
                            "\"field\":\"metadata.name\",\"line\":3,\"document\":0}}", &all, buf, sizeof buf),
                     "a.yaml:2: metadata.name: workload team-a/x already exists");
    gx_cli_body_free(&all);
    gx_cli_body_free(&in[0]);
    gx_cli_body_free(&in[1]);
}
