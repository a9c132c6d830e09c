/* fuzz_podspec: a Job's process side (src/run/podspec.c, podspec_volumes.c) under libFuzzer.
 * The input is a manifest (JSON or YAML via gx_manifest_parse); each document is read
 * with gx_podspec_read, and when accepted its mounts, argv and envp are built.
 * Properties: nothing crashes or leaks; a refusal is 422 naming a field; an accepted
 * Job runs 1..GX_POD_MAX_PODS pods at once, no more than it needs, argv[0] a string, and envp entries of the form K=V. */
#include <jansson.h>
#include "fuzz_util.h"
#include "lib/yaml.h"
#include "run/podspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    gx_yaml_docs docs = {0};
    gx_err err;
    gx_err_clear(&err);
    if (gx_manifest_parse((const char *)data, size, &docs, &err)) {
        gx_yaml_docs_free(&docs);
        return 0;
    }
    for (size_t i = 0; i < docs.n && i < 16; i++) {
        gx_podspec ps;
        gx_err_clear(&err);
        if (gx_podspec_read(docs.docs[i], &ps, &err)) {
            FUZZ_CHECK(err.status == 422 || err.status == 400, "status %d (%s)", err.status, err.msg);
            FUZZ_CHECK(err.msg[0], "refused without a message");
            continue;
        }
        FUZZ_CHECK(ps.parallelism >= 1 && ps.parallelism <= GX_POD_MAX_PODS, "parallelism %d", ps.parallelism);
        FUZZ_CHECK(ps.completions >= ps.parallelism, "completions %d", ps.completions);
        gx_podmount mounts[GX_POD_MAX_MOUNTS];
        int nm = gx_podspec_mounts(&ps, mounts);
        FUZZ_CHECK(nm >= 0 && nm <= GX_POD_MAX_MOUNTS, "%d mounts", nm);
        for (int k = 0; k < nm; k++)
            FUZZ_CHECK(mounts[k].host_path[0] == '/' && mounts[k].mount_path[0] == '/', "mount %d not absolute", k);
        char **argv = gx_podspec_argv(&ps);
        FUZZ_CHECK(argv && argv[0], "no argv for an accepted Job");
        gx_podspec_free_vec(argv);
        const char *extra[] = {"CUDA_MPS_PIPE_DIRECTORY=/x", NULL};
        char **envp = gx_podspec_envp(&ps, "ns/name", 0, "GPU-a,GPU-b", extra, (size & 1) ? "/home/pod" : NULL);
        FUZZ_CHECK(envp, "no envp for an accepted Job");
        for (char **e = envp; *e; e++) FUZZ_CHECK(strchr(*e, '='), "env entry without '=': %s", *e);
        gx_podspec_free_vec(envp);
    }
    gx_yaml_docs_free(&docs);
    return 0;
}
