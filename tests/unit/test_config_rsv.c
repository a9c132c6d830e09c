/* Unit tests of ServerConfig's reservations block (config.c): booking limits per
 * namespace are read as given, and a mistake is refused naming its field and line. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "config/config.h"

/* Load text as a gpuaas.yaml from a scratch folder. */
static int load(const char *text, gx_config *c, gx_err *e)
{
    char dir[] = "/tmp/gx-cfg-rsv-XXXXXX", p[64];
    cr_assert(mkdtemp(dir));
    snprintf(p, sizeof p, "%s/gpuaas.yaml", dir);
    FILE *f = fopen(p, "w");
    cr_assert(f);
    fprintf(f, "apiVersion: gpuaas.dev/v1alpha1\nkind: ServerConfig\n%s", text);
    fclose(f);
    gx_config_defaults(c);
    gx_err_clear(e);
    int rc = gx_config_load(c, p, e);
    unlink(p);
    rmdir(dir);
    return rc;
}

Test(config_rsv, limits_are_read)
{
    gx_config c;
    gx_err e;
    cr_assert_eq(load("reservations:\n  limits:\n    team-a: {gpusAtOnce: 4, gpuHoursPerWeek: 100}\n    team-b: {gpusAtOnce: 2}\n",
                      &c, &e), 0, "%s", e.msg);
    cr_assert_eq(json_number_value(json_object_get(json_object_get(c.rsv_limits, "team-a"), "gpuHoursPerWeek")), 100.0);
    cr_assert_eq(json_number_value(json_object_get(json_object_get(c.rsv_limits, "team-b"), "gpusAtOnce")), 2.0);
    cr_assert_null(json_object_get(json_object_get(c.rsv_limits, "team-b"), "gpuHoursPerWeek"), "absent: unlimited");
    gx_config_free(&c);
    cr_assert_eq(load("listen: 127.0.0.1:0\n", &c, &e), 0, "%s", e.msg);
    cr_assert_null(c.rsv_limits, "no block: no limits");
    gx_config_free(&c);
}

Test(config_rsv, mistakes_name_the_field_and_line)
{
    gx_config c;
    gx_err e;
    cr_assert_eq(load("reservations:\n  limits:\n    team-a:\n      gpusAtOnce: -1\n", &c, &e), -1);
    cr_assert_str_eq(e.field, "reservations.limits.team-a.gpusAtOnce");
    cr_assert_eq(e.line, 6, "line %d", e.line);
    gx_config_free(&c);
    cr_assert_eq(load("reservations:\n  limits:\n    team-a: {gpuHours: 3}\n", &c, &e), -1);
    cr_assert_str_eq(e.field, "reservations.limits.team-a");
    cr_assert(strstr(e.msg, "gpuHours"), "%s", e.msg);
    gx_config_free(&c);
    cr_assert_eq(load("reservations: {limit: {}}\n", &c, &e), -1);
    cr_assert_str_eq(e.field, "reservations");
    gx_config_free(&c);
}
