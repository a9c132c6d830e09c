/* Unit tests of cli/fmt: ages of RFC 3339 times (lib/gxtime has the rest), NS/NAME references,
 * URL escaping, shortening, JSON cells and the GPUS column. No network, no clock. */
#include <criterion/criterion.h>
#include <string.h>
#include "cli/cmd.h"
#include "cli/fmt.h"
#include "lib/gxtime.h"

Test(cli_age, since_and_durations)
{
    char buf[32];
    int64_t t0;
    gx_time_parse("2026-11-29T18:00:00.000Z", &t0);
    cr_assert_str_eq(gx_cli_fmt_since("2026-11-29T17:56:48.000Z", t0, buf, sizeof buf), "3m12s");
    cr_assert_str_eq(gx_cli_fmt_since(NULL, t0, buf, sizeof buf), "-");
    cr_assert_str_eq(gx_cli_fmt_since("yesterday", t0, buf, sizeof buf), "-");
}

static int ref(const char *arg, const char *flag, const char *def, char *ns, char *name, char *err)
{
    return gx_cli_parse_ref(arg, flag, def, ns, 64, name, 64, err, 128);
}

Test(cli_ref, forms)
{
    char ns[64], name[64], err[128];
    cr_assert_eq(ref("team-a/train-1", NULL, NULL, ns, name, err), 0);
    cr_assert_str_eq(ns, "team-a");
    cr_assert_str_eq(name, "train-1");
    cr_assert_eq(ref("train-1", "team-b", "env-ns", ns, name, err), 0);
    cr_assert_str_eq(ns, "team-b", "-n wins over the default");
    cr_assert_eq(ref("train-1", NULL, "env-ns", ns, name, err), 0);
    cr_assert_str_eq(ns, "env-ns");
    cr_assert_eq(ref("train-1", "", "", ns, name, err), 0);
    cr_assert_str_eq(ns, "", "left for the caller to resolve");
    cr_assert_str_eq(name, "train-1");
    cr_assert_eq(ref("team-a/x", "team-a", NULL, ns, name, err), 0, "agreeing -n is fine");
}

Test(cli_ref, mistakes)
{
    char ns[64], name[64], err[128];
    const char *bad[] = {"a/b/c", "/x", "x/", "", "a b", "team-a/"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        cr_assert_eq(ref(bad[i], NULL, NULL, ns, name, err), -1, "accepted '%s'", bad[i]);
        cr_assert(err[0], "no message for '%s'", bad[i]);
    }
    cr_assert_eq(ref("team-a/x", "team-b", NULL, ns, name, err), -1);
    cr_assert(strstr(err, "team-b"), "%s", err);
    char longname[200];
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = 0;
    cr_assert_eq(ref(longname, NULL, NULL, ns, name, err), -1, "too long for the buffer");
}

Test(cli_pct, escapes_path_segments)
{
    char buf[64];
    cr_assert_str_eq(gx_cli_pct("team-a_1.x~", buf, sizeof buf), "team-a_1.x~");
    cr_assert_str_eq(gx_cli_pct("a b/c?d&e", buf, sizeof buf), "a%20b%2Fc%3Fd%26e");
    cr_assert_str_eq(gx_cli_pct("\xc3\xa4", buf, sizeof buf), "%C3%A4");
    cr_assert_null(gx_cli_pct("abcdef", buf, 6), "does not fit");
    cr_assert_null(gx_cli_pct(" ", buf, 3));
    cr_assert_not_null(gx_cli_pct(" ", buf, 4));
}

Test(cli_text, width_and_shorten)
{
    char buf[64];
    cr_assert_eq(gx_cli_width("abc"), 3);
    cr_assert_eq(gx_cli_width("\xc3\xa4lpha"), 5, "a UTF-8 letter is one column");
    cr_assert_str_eq(gx_cli_shorten("short", 10, buf, sizeof buf), "short");
    cr_assert_str_eq(gx_cli_shorten("0123456789abc", 10, buf, sizeof buf), "0123456...");
    cr_assert_str_eq(gx_cli_shorten("line1\nline2", 20, buf, sizeof buf), "line1 line2");
    cr_assert_str_eq(gx_cli_shorten("\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4\xc3\xa4", 4, buf, sizeof buf), "\xc3\xa4...",
                     "never cuts inside a character");
    cr_assert_str_eq(gx_cli_shorten("0123456789", 100, buf, 6), "01...", "the buffer bounds the copy");
}

Test(cli_json, field_access)
{
    json_t *o = json_loads("{\"a\":{\"b\":\"x\",\"n\":7,\"e\":\"\",\"t\":true,\"r\":629145600.0,\"f\":1234567.125},\"l\":[\"p\",\"q\"],\"m\":{\"k\":\"v\",\"i\":2}}", 0, NULL);
    char buf[64];
    cr_assert_str_eq(gx_cli_jstr(o, "a.b"), "x");
    cr_assert_null(gx_cli_jstr(o, "a.n"), "not a string");
    cr_assert_null(gx_cli_jstr(o, "a.b.c"));
    cr_assert_null(gx_cli_jstr(o, "zz"));
    cr_assert_str_eq(gx_cli_jstr_or(o, "a.e", "dflt"), "dflt", "empty counts as absent");
    cr_assert_str_eq(gx_cli_jnum(o, "a.n", buf, sizeof buf), "7");
    cr_assert_str_eq(gx_cli_jnum(o, "a.r", buf, sizeof buf), "629145600", "a whole real prints whole");
    cr_assert_str_eq(gx_cli_jnum(o, "a.f", buf, sizeof buf), "1234567.125", "every digit");
    cr_assert_str_eq(gx_cli_jnum(o, "a.t", buf, sizeof buf), "true");
    cr_assert_str_eq(gx_cli_jnum(o, "nope", buf, sizeof buf), "-");
    cr_assert_str_eq(gx_cli_join(json_object_get(o, "l"), ", ", buf, sizeof buf), "p, q");
    cr_assert_str_eq(gx_cli_join(json_object_get(o, "nope"), ", ", buf, sizeof buf), "-");
    cr_assert_str_eq(gx_cli_kv(json_object_get(o, "m"), buf, sizeof buf), "k=v, i=2");
    cr_assert_str_eq(gx_cli_kv(NULL, buf, sizeof buf), "-");
    json_decref(o);
}

static const char *gpus_of(const char *js, char *buf, size_t n)
{
    json_t *w = json_loads(js, 0, NULL);
    cr_assert_not_null(w, "bad test JSON: %s", js);
    gx_cli_gpus(w, buf, n);
    json_decref(w);
    return buf;
}

Test(cli_gpus, sums_over_pod_sets)
{
    char buf[128];
    cr_assert_str_eq(gpus_of("{\"podSets\":[{\"count\":2,\"requests\":{\"cpu\":\"2\",\"nvidia.com/gpu\":\"1\"}},"
                             "{\"count\":1,\"requests\":{\"nvidia.com/gpu\":\"2\"}}]}", buf, sizeof buf), "4");
    cr_assert_str_eq(gpus_of("{\"podSets\":[{\"count\":1,\"requests\":{\"nvidia.com/mig-1g.10gb\":\"2\"}}]}", buf, sizeof buf),
                     "2 mig-1g.10gb");
    cr_assert_str_eq(gpus_of("{\"podSets\":[{\"count\":3,\"requests\":{\"nvidia.com/gpu.shared\":\"1\"}}]}", buf, sizeof buf),
                     "3 shared");
    cr_assert_str_eq(gpus_of("{\"podSets\":[{\"count\":1,\"requests\":{\"nvidia.com/gpumem\":\"4000\",\"nvidia.com/gpucores\":\"30\"}}]}",
                             buf, sizeof buf), "4000Mi mem 30% cores");
    cr_assert_str_eq(gpus_of("{\"podSets\":[{\"count\":1,\"requests\":{\"cpu\":\"8\"}}]}", buf, sizeof buf), "0");
    cr_assert_str_eq(gpus_of("{}", buf, sizeof buf), "0");
    cr_assert_str_eq(gpus_of("{\"podSets\":[{\"requests\":{\"nvidia.com/gpu\":\"500m\"}}]}", buf, sizeof buf), "? gpu",
                     "a quantity that cannot be summed is flagged, not invented");
}

Test(cli_state, states_and_phases)
{
    const char *c = NULL;
    cr_assert_eq(gx_cli_state_kind("pending", &c), 1);
    cr_assert_str_eq(c, "Pending");
    cr_assert_eq(gx_cli_state_kind("Deactivated", &c), 1);
    cr_assert_eq(gx_cli_state_kind("RUNNING", &c), 2);
    cr_assert_str_eq(c, "Running");
    cr_assert_eq(gx_cli_state_kind("Failed", &c), 2);
    cr_assert_eq(gx_cli_state_kind("sleeping", &c), 0);
}
