/* Unit tests of lib/opts (the option grammar) and cli/table (column layout and -o). */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "lib/opts.h"
#include "cli/table.h"
#include <criterion/redirect.h>

static const gx_opt cmd_opts[] = {
    {"namespace", 'n', "NS", "namespace"},
    {"all-namespaces", 'A', NULL, "all"},
    {"filename", 'f', "FILE", "file"},
    {"state", 0, "S", "state"},
    {0},
};
static const gx_opt common[] = {
    {"server", 0, "URL", "server"},
    {"help", 'h', NULL, "help"},
    {0},
};
static const gx_opt *const sets[] = {cmd_opts, common, NULL};

static int parse(gx_opt_args *a, int argc, char **argv)
{
    return gx_opts_parse(sets, argc, argv, a);
}

#define ARGV(...) ((char *[]){__VA_ARGS__})
#define ARGC(...) ((int)(sizeof((char *[]){__VA_ARGS__}) / sizeof(char *)))
#define PARSE(a, ...) parse(a, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__))

Test(opts, long_short_attached_and_equals)
{
    gx_opt_args a;
    cr_assert_eq(PARSE(&a, "ls", "-n", "team-a", "--state=Pending", "--server", "http://x", "-A"), 0, "%s", a.err);
    cr_assert_str_eq(gx_opt_get(&a, "namespace"), "team-a");
    cr_assert_str_eq(gx_opt_get(&a, "state"), "Pending");
    cr_assert_str_eq(gx_opt_get(&a, "server"), "http://x");
    cr_assert(gx_opt_has(&a, "all-namespaces"));
    cr_assert_not(gx_opt_has(&a, "help"));
    cr_assert_eq(a.npos, 0);
    gx_opts_free(&a);

    cr_assert_eq(PARSE(&a, "ls", "-nteam-b", "--namespace", "team-c"), 0);
    cr_assert_str_eq(gx_opt_get(&a, "namespace"), "team-c", "the last one wins");
    gx_opts_free(&a);
}

Test(opts, positionals_repeats_and_stdin)
{
    gx_opt_args a;
    cr_assert_eq(PARSE(&a, "apply", "x", "-f", "a.yaml", "y", "-f", "-", "--", "-z", "--state"), 0, "%s", a.err);
    cr_assert_eq(gx_opt_count(&a, "filename"), 2);
    cr_assert_str_eq(gx_opt_nth(&a, "filename", 0), "a.yaml");
    cr_assert_str_eq(gx_opt_nth(&a, "filename", 1), "-", "a lone dash is a value (stdin)");
    cr_assert_null(gx_opt_nth(&a, "filename", 2));
    cr_assert_eq(a.npos, 4);
    cr_assert_str_eq(a.pos[0], "x");
    cr_assert_str_eq(a.pos[1], "y");
    cr_assert_str_eq(a.pos[2], "-z", "after -- everything is an argument");
    cr_assert_str_eq(a.pos[3], "--state");
    gx_opts_free(&a);
}

Test(opts, mistakes_are_named)
{
    gx_opt_args a;
    cr_assert_eq(PARSE(&a, "ls", "--bogus"), -1);
    cr_assert(strstr(a.err, "--bogus"), "%s", a.err);
    gx_opts_free(&a);
    cr_assert_eq(PARSE(&a, "ls", "-x"), -1);
    cr_assert(strstr(a.err, "-x"), "%s", a.err);
    gx_opts_free(&a);
    cr_assert_eq(PARSE(&a, "ls", "-n"), -1, "missing value at the end");
    cr_assert(strstr(a.err, "needs a value"), "%s", a.err);
    gx_opts_free(&a);
    cr_assert_eq(PARSE(&a, "ls", "-n", "--state", "Pending"), -1, "an option is not a value");
    gx_opts_free(&a);
    cr_assert_eq(PARSE(&a, "ls", "--namespace=-odd"), 0, "but = forces one");
    cr_assert_str_eq(gx_opt_get(&a, "namespace"), "-odd");
    gx_opts_free(&a);
    cr_assert_eq(PARSE(&a, "ls", "--all-namespaces=yes"), -1, "a flag takes no value");
    gx_opts_free(&a);
    cr_assert_eq(PARSE(&a, "ls", "-Ah"), -1, "no bundling of flags");
    gx_opts_free(&a);
    cr_assert_eq(PARSE(&a, "ls", "--namespac", "x"), -1, "no prefix guessing");
    gx_opts_free(&a);
}

Test(opts, usage_lists_every_option)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    gx_opts_usage(f, sets);
    fclose(f);
    const char *want[] = {"-n, --namespace NS", "-A, --all-namespaces", "-f, --filename FILE", "--state S",
                          "--server URL", "-h, --help"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) cr_assert(strstr(text, want[i]), "missing %s in\n%s", want[i], text);
    free(text);
}

static char *render(const gx_cli_table *t, int indent)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    gx_cli_table_print(t, f, indent);
    fclose(f);
    return text;
}

Test(cli_table, widths_and_alignment)
{
    static const char *const h[] = {"NAME", "STATE", "REASON"};
    gx_cli_table *t = gx_cli_table_new(3, h);
    cr_assert_not_null(t);
    gx_cli_table_add(t, (const char *const[]){"train-1", "Running", NULL});
    gx_cli_table_add(t, (const char *const[]){"\xc3\xa4", "Pending", "no quota\nleft"});
    cr_assert_eq(gx_cli_table_rows(t), 2);
    cr_assert_eq(gx_cli_table_width(t, 0), 7);
    cr_assert_eq(gx_cli_table_width(t, 1), 7);
    cr_assert_eq(gx_cli_table_width(t, 2), 13);
    cr_assert_eq(gx_cli_table_width(t, 3), 0);
    char *out = render(t, 0);
    cr_assert_str_eq(out,
                     "NAME      STATE     REASON\n"
                     "train-1   Running   -\n"
                     "\xc3\xa4         Pending   no quota left\n");
    free(out);
    out = render(t, 2);
    cr_assert(!strncmp(out, "  NAME", 6), "indent: %s", out);
    free(out);
    gx_cli_table_free(t);
}

Test(cli_table, blank_continuation_cells_leave_no_trailing_spaces)
{
    static const char *const h[] = {"A", "B", "C"};
    gx_cli_table *t = gx_cli_table_new(3, h);
    gx_cli_table_add(t, (const char *const[]){"x", "yy", "z"});
    gx_cli_table_add(t, (const char *const[]){gx_cli_table_blank, "b", gx_cli_table_blank});
    gx_cli_table_add(t, (const char *const[]){"", "b2", "c"});
    char *out = render(t, 0);
    cr_assert_str_eq(out, "A   B    C\nx   yy   z\n    b\n-   b2   c\n");
    free(out);
    gx_cli_table_free(t);
}

Test(cli_table, many_rows_grow)
{
    static const char *const h[] = {"N"};
    gx_cli_table *t = gx_cli_table_new(1, h);
    char buf[16];
    for (int i = 0; i < 1000; i++) {
        snprintf(buf, sizeof buf, "%d", i);
        gx_cli_table_add(t, (const char *const[]){buf});
    }
    cr_assert_eq(gx_cli_table_rows(t), 1000);
    cr_assert_eq(gx_cli_table_width(t, 0), 3);
    gx_cli_table_free(t);
}

Test(cli_output, formats)
{
    gx_cli_out o;
    cr_assert_eq(gx_cli_out_parse(NULL, &o), 0);
    cr_assert_eq(o, GX_CLI_OUT_TABLE);
    cr_assert_eq(gx_cli_out_parse("wide", &o), 0);
    cr_assert_eq(o, GX_CLI_OUT_WIDE);
    cr_assert_eq(gx_cli_out_parse("json", &o), 0);
    cr_assert_eq(o, GX_CLI_OUT_JSON);
    cr_assert_eq(gx_cli_out_parse("yaml", &o), 0);
    cr_assert_eq(o, GX_CLI_OUT_YAML);
    cr_assert_eq(gx_cli_out_parse("xml", &o), -1);

    json_t *v = json_pack("{sss[ss]}", "name", "a", "ns", "x", "y");
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    cr_assert_eq(gx_cli_out_print(f, GX_CLI_OUT_JSON, v), 0);
    fclose(f);
    cr_assert_str_eq(text, "{\n  \"name\": \"a\",\n  \"ns\": [\n    \"x\",\n    \"y\"\n  ]\n}\n");
    free(text);
    f = open_memstream(&text, &len);
    cr_assert_eq(gx_cli_out_print(f, GX_CLI_OUT_YAML, v), 0);
    fclose(f);
    cr_assert(strstr(text, "name: a\n"), "%s", text);
    cr_assert(text[strlen(text) - 1] == '\n');
    free(text);
    json_decref(v);
}

/* The dispatcher: unknown commands are main.c's to report; help and mistakes exit 0 / 2
 * before any network use. */
#include "cli/cli.h"

Test(cli_main, unknown_command_is_minus_one)
{
    cr_assert_eq(gx_cli_main(1, ARGV("frobnicate")), -1);
}

Test(cli_main, help_and_usage_mistakes, .init = cr_redirect_stdout)
{
    cr_redirect_stderr();
    cr_assert_eq(gx_cli_main(2, ARGV("ls", "--help")), 0);
    cr_assert_eq(gx_cli_main(3, ARGV("users", "create", "-h")), 0);
    cr_assert_eq(gx_cli_main(2, ARGV("ls", "--nope")), 2);
    cr_assert_eq(gx_cli_main(1, ARGV("show")), 2);
    cr_assert_eq(gx_cli_main(3, ARGV("ls", "-o", "xml")), 2);
    cr_assert_eq(gx_cli_main(1, ARGV("users")), 2);
    cr_assert_eq(gx_cli_main(2, ARGV("users", "nope")), 2);
}

Test(cli_main, command_list_has_one_line_each)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    gx_cli_usage(f);
    fclose(f);
    const char *cmds[] = {"apply", "submit", "ls", "show", "logs", "cancel", "approve", "reject", "delete", "drain", "queues", "gpus", "get",
                          "users", "keys", "models", "usage", "whoami", "clusters", "report",
                          "reserve", "reservations", "unreserve"};
    int lines = 0;
    for (char *p = text; *p; p++) lines += *p == '\n';
    cr_assert_eq(lines, 24, "%s", text); /* the above and "gpus mig apply" */
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        char pat[32];
        snprintf(pat, sizeof pat, "  %s ", cmds[i]);
        cr_assert(strstr(text, pat), "no line for %s", cmds[i]);
    }
    free(text);
}
