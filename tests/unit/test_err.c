/* Unit tests for lib/err: field prefixes and locations never cut a message or a path
 * silently (a cut shows as "..."), and gx_err_path falls back to the parent. */
#include <criterion/criterion.h>
#include <string.h>
#include "lib/err.h"

Test(err, wrap_keeps_the_message_whole)
{
    gx_err e;
    gx_errf(&e, 422, "spec.x", "%s", "the message a person needs");
    gx_err_wrap(&e, "%s:%d", "file.yaml", 12);
    cr_assert_str_eq(e.msg, "file.yaml:12: the message a person needs");
    /* a location longer than the room left: its start gives way, marked */
    char path[3000];
    memset(path, 'p', sizeof path - 1);
    path[sizeof path - 1] = 0;
    path[sizeof path - 2] = 'Z';
    gx_errf(&e, 422, "", "%0400d", 7);
    gx_err_wrap(&e, "%s", path);
    cr_assert_lt(strlen(e.msg), sizeof e.msg);
    cr_assert(!strncmp(e.msg, "...", 3), "%s", e.msg);
    cr_assert(strstr(e.msg, "Z: 000"), "the end of the location stays: %s", e.msg);
    size_t ml = strlen(e.msg);
    cr_assert_eq(e.msg[ml - 1], '7', "the message stays whole");
}

Test(err, prefix_never_cuts_silently)
{
    gx_err e;
    gx_errf(&e, 422, "flavors[0]", "x");
    gx_err_prefix(&e, "spec");
    cr_assert_str_eq(e.field, "spec.flavors[0]");
    gx_err_prefix(&e, "");
    cr_assert_str_eq(e.field, "spec.flavors[0]");
    char longp[300];
    memset(longp, 'a', sizeof longp - 1);
    longp[sizeof longp - 1] = 0;
    gx_err_prefix(&e, longp);
    cr_assert_lt(strlen(e.field), sizeof e.field);
    cr_assert(!strncmp(e.field, "...", 3), "%s", e.field);
    size_t l = strlen(e.field);
    cr_assert_str_eq(e.field + l - strlen(".spec.flavors[0]"), ".spec.flavors[0]");
}

Test(err, path_falls_back_to_the_parent)
{
    char b[32];
    cr_assert_str_eq(gx_err_path(b, sizeof b, "parent", "%s.%s", "parent", "child"), "parent.child");
    cr_assert_str_eq(gx_err_path(b, sizeof b, "parent", "%s.%s", "parent", "a-child-with-a-very-long-name"), "parent");
}
