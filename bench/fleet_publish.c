/* bench/fleet_publish: commits per second of gx_git_commit_push (src/fleet/gitops.c),
 * one single-file publish at a time to a local bare repository: each one fetches,
 * commits and pushes, as a request for a cluster does. bench/fleet_publish.sh runs it
 * beside the git CLI doing the same loop (the reference).
 * Usage: bench-fleet-publish DIR N   (DIR: an empty folder, kept by the caller) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "fleet/fleet.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc != 3) { fprintf(stderr, "usage: %s DIR N\n", argv[0]); return 2; }
    int n = atoi(argv[2]);
    char remote[4096], work[4096];
    snprintf(remote, sizeof remote, "%s/remote.git", argv[1]);
    snprintf(work, sizeof work, "%s/repo", argv[1]);
    gx_fleet_git g = {.repo = remote, .branch = "main", .author_name = "gpuaas", .author_email = "gpuaas@localhost"};
    double t0 = now_s();
    for (int i = 0; i < n; i++) {
        char path[128], content[64], msg[64], commit[41];
        snprintf(path, sizeof path, "clusters/a/team/job-%04d.yaml", i);
        snprintf(content, sizeof content, "kind: Job\nn: %d\n", i);
        snprintf(msg, sizeof msg, "submit job-%04d for alice", i);
        gx_git_change c = {path, content};
        gx_err e;
        if (gx_git_commit_push(&g, work, &c, 1, "alice", "alice@example.org", msg, commit, &e) != 0) {
            fprintf(stderr, "publish %d: %s\n", i, e.msg);
            return 1;
        }
    }
    double dt = now_s() - t0;
    printf("libgit2 (gx_git_commit_push): %d publishes in %.2f s: %.1f commits/s\n", n, dt, n / dt);
    return 0;
}
