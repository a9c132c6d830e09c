/* Unit tests for gpu/mig: the profile tables, fitting layouts into 8 memory / 7
 * compute slices, and mig-parted's mig-configs format. No GPU involved: the tables
 * are data, and layouts are checked against NVIDIA's published valid combinations. */
#include <criterion/criterion.h>
#include <string.h>
#include "gpu/mig.h"
#include "lib/yaml.h"

static int fit(const char *model, const char *const *names, const int *counts, int n, gx_mig_slot *out, gx_err *e)
{
    gx_err_clear(e);
    const gx_gpu_model *m = gx_gpu_mig_model(model);
    cr_assert(m, "model %s", model);
    return gx_gpu_mig_fit(m, names, counts, n, out, "mig-devices", e);
}

Test(gpu_mig, tables)
{
    const gx_gpu_model *a = gx_gpu_mig_model("a100-40gb");
    cr_assert(a);
    cr_assert_eq(a->n_mig, 7);
    const gx_mig_profile *p = gx_gpu_mig_profile(a, "3g.20gb");
    cr_assert(p);
    cr_assert_eq(p->nvml_id, 9);
    cr_assert_eq(p->max, 2);
    cr_assert_eq(gx_gpu_mig_profile(gx_gpu_mig_model("H100-80GB"), "7g.80gb")->sms, 132);
    cr_assert(gx_gpu_mig_profile(gx_gpu_mig_model("H200-141GB"), "1g.18gb"));
    cr_assert_null(gx_gpu_mig_profile(gx_gpu_mig_model("H200-141GB"), "1g.10gb"));
    cr_assert_eq(gx_gpu_mig_model("L4")->n_mig, 0);
    cr_assert_str_eq(gx_gpu_mig_model_from_nvml("NVIDIA A100-SXM4-80GB", 81920)->name, "A100-80GB");
    cr_assert_str_eq(gx_gpu_mig_model_from_nvml("NVIDIA A100-SXM4-40GB", 40960)->name, "A100-40GB");
    cr_assert_str_eq(gx_gpu_mig_model_from_nvml("NVIDIA H100 80GB HBM3", 81559)->name, "H100-80GB");
    cr_assert_str_eq(gx_gpu_mig_model_from_nvml("NVIDIA H200", 143771)->name, "H200-141GB");
    cr_assert_str_eq(gx_gpu_mig_model_from_nvml("Tesla T4", 15360)->name, "T4");
    cr_assert_null(gx_gpu_mig_model_from_nvml("NVIDIA GeForce RTX 4090", 24564));
}

Test(gpu_mig, valid_layouts_fit)
{
    gx_mig_slot s[7];
    gx_err e;
    const char *seven[] = {"1g.10gb"};
    int c7[] = {7};
    cr_assert_eq(fit("H100-80GB", seven, c7, 1, s, &e), 7, "%s", e.msg);
    for (int i = 0; i < 7; i++) cr_assert_eq(s[i].start, i);
    /* all-balanced on A100-80GB: 2x1g.10gb + 2g.20gb + 3g.40gb */
    const char *bal[] = {"1g.10gb", "2g.20gb", "3g.40gb"};
    int cb[] = {2, 1, 1};
    cr_assert_eq(fit("A100-80GB", bal, cb, 3, s, &e), 4, "%s", e.msg);
    /* 4g + 3g: the 3g must start at 4 */
    const char *big[] = {"3g.40gb", "4g.40gb"};
    int cg[] = {1, 1};
    cr_assert_eq(fit("H100-80GB", big, cg, 2, s, &e), 2, "%s", e.msg);
    cr_assert_eq(s[0].start, 0);
    cr_assert_str_eq(s[0].p->name, "4g.40gb");
    cr_assert_eq(s[1].start, 4);
    /* 3g + 2g + 1g + 1g fits only with the 3g at 4 */
    const char *mix[] = {"3g.20gb", "2g.10gb", "1g.5gb"};
    int cm[] = {1, 1, 2};
    cr_assert_eq(fit("A100-40GB", mix, cm, 3, s, &e), 4, "%s", e.msg);
    /* A100-40GB 1g.10gb x4 takes double memory slices */
    const char *dm[] = {"1g.10gb"};
    int cd[] = {4};
    cr_assert_eq(fit("A100-40GB", dm, cd, 1, s, &e), 4, "%s", e.msg);
    cr_assert_eq(s[3].start, 6);
}

Test(gpu_mig, bad_layouts_say_why)
{
    gx_mig_slot s[7];
    gx_err e;
    const char *a[] = {"3g.20gb", "1g.5gb"};
    int ca[] = {2, 1};
    cr_assert_eq(fit("A100-40GB", a, ca, 2, s, &e), -1);
    cr_assert(strstr(e.msg, "memory slices") || strstr(e.msg, "no placement"), "%s", e.msg);
    const char *b[] = {"4g.40gb", "3g.40gb", "1g.10gb"};
    int cb[] = {1, 1, 1};
    cr_assert_eq(fit("H100-80GB", b, cb, 3, s, &e), -1);
    cr_assert(strstr(e.msg, "8 compute slices"), "%s", e.msg);
    const char *c[] = {"1g.5gb"};
    int cc[] = {1};
    cr_assert_eq(fit("H100-80GB", c, cc, 1, s, &e), -1);
    cr_assert(strstr(e.msg, "unknown MIG profile 1g.5gb for H100-80GB"), "%s", e.msg);
    cr_assert_str_eq(e.field, "mig-devices.1g.5gb");
    const char *d[] = {"2g.20gb"};
    int cdd[] = {4};
    cr_assert_eq(fit("A100-80GB", d, cdd, 1, s, &e), -1);
    cr_assert(strstr(e.msg, "at most 3"), "%s", e.msg);
    cr_assert_eq(fit("T4", c, cc, 1, s, &e), -1);
    cr_assert(strstr(e.msg, "T4 has no MIG"), "%s", e.msg);
    /* 2g at 0,2,4 plus a 1g.20gb (double memory, starts 0/2/4/6) fits; two do not */
    const char *f[] = {"2g.20gb", "1g.20gb"};
    int cf[] = {3, 1};
    cr_assert_eq(fit("A100-80GB", f, cf, 2, s, &e), 4, "%s", e.msg);
    cf[1] = 2;
    cr_assert_eq(fit("A100-80GB", f, cf, 2, s, &e), -1);
}

static json_t *yaml1(const char *y)
{
    gx_yaml_docs d;
    gx_err e;
    gx_err_clear(&e);
    cr_assert_eq(gx_yaml_parse(y, strlen(y), &d, &e), 0, "%s", e.msg);
    json_t *j = json_incref(d.docs[0]);
    gx_yaml_docs_free(&d);
    return j;
}

static const char *PARTED =
    "version: v1\n"
    "mig-configs:\n"
    "  all-disabled:\n"
    "  - devices: all\n"
    "    mig-enabled: false\n"
    "  all-1g.10gb:\n"
    "  - device-filter: [\"0x233010DE\", \"0x20B210DE\"]\n"
    "    devices: all\n"
    "    mig-enabled: true\n"
    "    mig-devices: {\"1g.10gb\": 7}\n"
    "  - device-filter: \"0x20B010DE\"\n"
    "    devices: all\n"
    "    mig-enabled: true\n"
    "    mig-devices: {\"1g.10gb\": 4}\n"
    "  custom:\n"
    "  - devices: [0, 1]\n"
    "    mig-enabled: false\n"
    "  - devices: [2]\n"
    "    mig-enabled: true\n"
    "    mig-devices: {\"3g.40gb\": 2}\n";

Test(gpu_mig, mig_parted_configs)
{
    json_t *doc = yaml1(PARTED);
    gx_err e;
    gx_err_clear(&e);
    const char *names[GX_MIG_MAX_PROFILES];
    int counts[GX_MIG_MAX_PROFILES], en;
    cr_assert_eq(gx_gpu_mig_config_check(doc, &e), 0, "%s", e.msg);
    cr_assert_eq(gx_gpu_mig_config_for(doc, "all-1g.10gb", 0, gx_gpu_mig_model("H100-80GB"), &en, names, counts, &e), 1);
    cr_assert(en);
    cr_assert_str_eq(names[0], "1g.10gb");
    cr_assert_eq(counts[0], 7);
    cr_assert_eq(gx_gpu_mig_config_for(doc, "all-1g.10gb", 3, gx_gpu_mig_model("A100-40GB"), &en, names, counts, &e), 1);
    cr_assert_eq(counts[0], 4);
    /* no entry selects an L4: MIG stays off */
    cr_assert_eq(gx_gpu_mig_config_for(doc, "all-1g.10gb", 0, gx_gpu_mig_model("L4"), &en, names, counts, &e), 0);
    cr_assert_not(en);
    cr_assert_eq(gx_gpu_mig_config_for(doc, "custom", 1, gx_gpu_mig_model("A100-80GB"), &en, names, counts, &e), 0);
    cr_assert_eq(gx_gpu_mig_config_for(doc, "custom", 2, gx_gpu_mig_model("A100-80GB"), &en, names, counts, &e), 1);
    cr_assert_eq(gx_gpu_mig_config_for(doc, "nope", 2, gx_gpu_mig_model("A100-80GB"), &en, names, counts, &e), -1);
    cr_assert(strstr(e.msg, "no config named nope"), "%s", e.msg);
    json_decref(doc);

    doc = yaml1("version: v1\nmig-configs:\n  x:\n  - devices: all\n    mig-enabled: maybe\n");
    cr_assert_eq(gx_gpu_mig_config_check(doc, &e), -1);
    cr_assert_str_eq(e.field, "mig-configs.x[0].mig-enabled");
    json_decref(doc);
    doc = yaml1("version: v1\nmig-configs:\n  x:\n  - devices: all\n    mig-enabled: true\n    mig-devices: {\"1g.10gb\": -1}\n");
    cr_assert_eq(gx_gpu_mig_config_check(doc, &e), -1);
    cr_assert_str_eq(e.field, "mig-configs.x[0].mig-devices.1g.10gb");
    json_decref(doc);
    doc = yaml1("version: v2\nmig-configs: {}\n");
    cr_assert_eq(gx_gpu_mig_config_check(doc, &e), -1);
    cr_assert_str_eq(e.field, "version");
    json_decref(doc);
}
