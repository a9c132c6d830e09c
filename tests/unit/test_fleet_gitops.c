/* Unit tests of gx_git_commit_push (src/fleet/gitops.c) against real git repositories
 * in a temporary folder: a bare repository is the remote (a local path, or served over
 * git:// by git daemon when a hook must run), the git CLI inspects what landed, and
 * another clone made by the CLI plays someone else pushing to the same branch. */
#include <criterion/criterion.h>
#include <sys/stat.h>
#include "fleet/fleet.h"
#include "test_fleet_git_util.h"

static gx_fleet_git hub_git(const char *repo)
{
    return (gx_fleet_git){.repo = (char *)repo, .branch = "main", .author_name = "the hub",
                          .author_email = "hub@example.org"};
}

/* One change, by alice; the error message when it fails. */
static int put(const gx_fleet_git *g, const char *wd, const char *path, const char *content, const char *msg,
               char commit[41], gx_err *e)
{
    gx_git_change c = {path, content};
    char dir[400];
    pathf(dir, sizeof dir, "%s/%s", git_tmp, wd);
    return gx_git_commit_push(g, dir, &c, 1, "alice", "alice@example.org", msg, commit, e);
}

static void bare_remote(char *repo, size_t n)
{
    pathf(repo, n, "%s/remote.git", git_tmp);
    cr_assert_eq(sh("git init -q --bare -b main remote.git"), 0);
}

Test(fleet_gitops, first_publish_creates_the_branch_with_author_and_committer, .init = git_tmp_make,
     .fini = git_tmp_remove)
{
    char repo[300], c1[41];
    gx_err e;
    bare_remote(repo, sizeof repo);
    gx_fleet_git g = hub_git(repo);
    int rc = put(&g, "a/repo", "clusters/a/team/job-x.yaml", "kind: Job\n", "submit job-x for alice", c1, &e);
    cr_assert_eq(rc, 0, "%s", e.msg);
    cr_assert_str_eq(out("git -C remote.git rev-parse main"), c1, "the remote's main is the commit returned");
    cr_assert_str_eq(out("git -C remote.git show main:clusters/a/team/job-x.yaml"), "kind: Job");
    cr_assert_str_eq(out("git -C remote.git log -1 --format='%%an|%%ae|%%cn|%%ce|%%s' main"),
                     "alice|alice@example.org|the hub|hub@example.org|submit job-x for alice");
    cr_assert_str_eq(out("git -C remote.git rev-list --count main"), "1");
    cr_assert_str_eq(out("cat a/repo/clusters/a/team/job-x.yaml"), "kind: Job", "the working clone has the file");
    cr_assert_str_eq(out("git -C a/repo status --porcelain"), "", "the clone's index and tree match its head");
}

Test(fleet_gitops, a_removal_commit_removes_the_file_and_its_empty_folder, .init = git_tmp_make,
     .fini = git_tmp_remove)
{
    char repo[300], c1[41], c2[41], dir[400];
    gx_err e;
    bare_remote(repo, sizeof repo);
    gx_fleet_git g = hub_git(repo);
    cr_assert_eq(put(&g, "a/repo", "clusters/a/keep.yaml", "k: 1\n", "keep", c1, &e), 0, "%s", e.msg);
    cr_assert_eq(put(&g, "a/repo", "clusters/a/team/job-x.yaml", "kind: Job\n", "submit", c1, &e), 0, "%s", e.msg);
    cr_assert_eq(put(&g, "a/repo", "clusters/a/team/job-x.yaml", NULL, "cancel job-x", c2, &e), 0, "%s", e.msg);
    cr_assert_str_neq(c1, c2);
    cr_assert_str_eq(out("git -C remote.git ls-tree -r --name-only main"), "clusters/a/keep.yaml");
    cr_assert_str_eq(out("git -C remote.git log -1 --format=%%s main"), "cancel job-x");
    pathf(dir, sizeof dir, "%s/a/repo/clusters/a/team", git_tmp);
    struct stat st;
    cr_assert_neq(stat(dir, &st), 0, "the emptied folder is gone from the working clone");
    pathf(dir, sizeof dir, "%s/a/repo/clusters/a/keep.yaml", git_tmp);
    cr_assert_eq(stat(dir, &st), 0, "the other file stays");
}

Test(fleet_gitops, two_clusters_in_two_clones_of_one_remote_interleave, .init = git_tmp_make,
     .fini = git_tmp_remove)
{
    char repo[300], c[41];
    gx_err e;
    bare_remote(repo, sizeof repo);
    gx_fleet_git g = hub_git(repo);
    cr_assert_eq(put(&g, "a/repo", "clusters/a/ns/job-1.yaml", "a: 1\n", "a1", c, &e), 0, "%s", e.msg);
    cr_assert_eq(put(&g, "b/repo", "clusters/b/ns/job-1.yaml", "b: 1\n", "b1", c, &e), 0, "%s", e.msg);
    cr_assert_eq(put(&g, "a/repo", "clusters/a/ns/job-2.yaml", "a: 2\n", "a2", c, &e), 0, "%s", e.msg);
    cr_assert_eq(put(&g, "b/repo", "clusters/b/ns/job-2.yaml", "b: 2\n", "b2", c, &e), 0, "%s", e.msg);
    cr_assert_str_eq(out("git -C remote.git rev-parse main"), c);
    cr_assert_str_eq(out("git -C remote.git log --format=%%s main | tr '\\n' ,"), "b2,a2,b1,a1,");
    cr_assert_str_eq(out("git -C remote.git ls-tree -r --name-only main | tr '\\n' ,"),
                     "clusters/a/ns/job-1.yaml,clusters/a/ns/job-2.yaml,clusters/b/ns/job-1.yaml,"
                     "clusters/b/ns/job-2.yaml,");
    cr_assert_str_eq(out("git -C remote.git rev-list --merges --count main"), "0", "history stays linear");
}

Test(fleet_gitops, another_push_in_between_is_kept_and_ours_lands_on_it, .init = git_tmp_make,
     .fini = git_tmp_remove)
{
    char repo[300], c1[41], c2[41];
    gx_err e;
    bare_remote(repo, sizeof repo);
    gx_fleet_git g = hub_git(repo);
    cr_assert_eq(put(&g, "a/repo", "clusters/a/ns/job-1.yaml", "a: 1\n", "ours 1", c1, &e), 0, "%s", e.msg);
    cr_assert_eq(sh("git clone -q remote.git other && echo hi > other/README && git -C other add README && "
                    "git -C other commit -qm 'theirs' && git -C other push -q origin main"), 0);
    const char *theirs = out("git -C remote.git rev-parse main");
    char their_id[41];
    pathf(their_id, sizeof their_id, "%s", theirs);
    cr_assert_eq(put(&g, "a/repo", "clusters/a/ns/job-2.yaml", "a: 2\n", "ours 2", c2, &e), 0, "%s", e.msg);
    cr_assert_str_eq(out("git -C remote.git log --format=%%s main | tr '\\n' ,"), "ours 2,theirs,ours 1,");
    cr_assert_str_eq(out("git -C remote.git rev-parse main^"), their_id, "ours sits on theirs");
    cr_assert_str_eq(out("git -C remote.git ls-tree -r --name-only main | tr '\\n' ,"),
                     "README,clusters/a/ns/job-1.yaml,clusters/a/ns/job-2.yaml,");
}

Test(fleet_gitops, a_change_that_changes_nothing_makes_no_commit, .init = git_tmp_make, .fini = git_tmp_remove)
{
    char repo[300], c1[41], c2[41], c3[41];
    gx_err e;
    bare_remote(repo, sizeof repo);
    gx_fleet_git g = hub_git(repo);
    cr_assert_eq(put(&g, "a/repo", "clusters/a/ns/job-1.yaml", "a: 1\n", "one", c1, &e), 0, "%s", e.msg);
    cr_assert_eq(put(&g, "a/repo", "clusters/a/ns/job-1.yaml", "a: 1\n", "same again", c2, &e), 0, "%s", e.msg);
    cr_assert_eq(put(&g, "a/repo", "clusters/a/ns/never.yaml", NULL, "remove what is not there", c3, &e), 0, "%s",
                 e.msg);
    cr_assert_str_eq(c2, c1, "the head is returned");
    cr_assert_str_eq(c3, c1);
    cr_assert_str_eq(out("git -C remote.git rev-list --count main"), "1");
}

Test(fleet_gitops, a_missing_remote_fails_naming_the_fetch, .init = git_tmp_make, .fini = git_tmp_remove)
{
    char repo[300], c[41];
    gx_err e;
    pathf(repo, sizeof repo, "%s/nowhere.git", git_tmp);
    gx_fleet_git g = hub_git(repo);
    cr_assert_eq(put(&g, "a/repo", "clusters/a/x.yaml", "x: 1\n", "x", c, &e), -1);
    cr_assert(strstr(e.msg, "fetch from ") && strstr(e.msg, "nowhere.git"), "%s", e.msg);
    /* the remote appears: the next publish works */
    cr_assert_eq(sh("git init -q --bare -b main nowhere.git"), 0);
    cr_assert_eq(put(&g, "a/repo", "clusters/a/x.yaml", "x: 1\n", "x", c, &e), 0, "%s", e.msg);
    cr_assert_str_eq(out("git -C nowhere.git rev-parse main"), c);
}

Test(fleet_gitops, a_refusing_hook_fails_the_push_and_the_next_publish_pushes_both, .init = git_tmp_make,
     .fini = git_tmp_remove, .timeout = 60)
{
    char repo[300], url[300], c[41];
    gx_err e;
    bare_remote(repo, sizeof repo);
    int port = git_daemon_start();
    pathf(url, sizeof url, "git://127.0.0.1:%d/remote.git", port);
    gx_fleet_git g = hub_git(url);
    cr_assert_eq(put(&g, "a/repo", "clusters/a/ns/job-1.yaml", "a: 1\n", "one", c, &e), 0, "%s", e.msg);
    cr_assert_eq(sh("printf '#!/bin/sh\\necho frozen for the audit >&2\\nexit 1\\n' > remote.git/hooks/pre-receive"
                    " && chmod +x remote.git/hooks/pre-receive"), 0);
    cr_assert_eq(put(&g, "a/repo", "clusters/a/ns/job-2.yaml", "a: 2\n", "two", c, &e), -1);
    char want[400];
    pathf(want, sizeof want, "push to %s", url);
    cr_assert(strstr(e.msg, want), "the push is named: %s", e.msg);
    cr_assert(strstr(e.msg, "refs/heads/main"), "the refused ref is named: %s", e.msg);
    cr_assert(strstr(e.msg, "frozen for the audit"), "the hook's word is passed on: %s", e.msg);
    cr_assert_str_eq(out("git -C remote.git rev-list --count main"), "1");

    /* the hook goes, someone else pushes first: the earlier change is replayed on theirs */
    cr_assert_eq(sh("rm remote.git/hooks/pre-receive && git clone -q remote.git other && echo hi > other/README &&"
                    " git -C other add README && git -C other commit -qm theirs && git -C other push -q"), 0);
    cr_assert_eq(put(&g, "a/repo", "clusters/a/ns/job-3.yaml", "a: 3\n", "three", c, &e), 0, "%s", e.msg);
    cr_assert_str_eq(out("git -C remote.git log --format='%%s %%an' main | tr '\\n' ,"),
                     "three alice,two alice,theirs other,one alice,");
    cr_assert_str_eq(out("git -C remote.git ls-tree -r --name-only main | tr '\\n' ,"),
                     "README,clusters/a/ns/job-1.yaml,clusters/a/ns/job-2.yaml,clusters/a/ns/job-3.yaml,");
    cr_assert_str_eq(out("git -C remote.git rev-parse main"), c);
}

Test(fleet_gitops, credentials_readable_by_others_are_refused_and_the_token_never_shows, .init = git_tmp_make,
     .fini = git_tmp_remove)
{
    char cred[300], c[41];
    gx_err e;
    pathf(cred, sizeof cred, "%s/cred", git_tmp);
    cr_assert_eq(sh("echo 'bot:tok-SECRET-123' > cred && chmod 644 cred"), 0);
    gx_fleet_git g = hub_git("https://127.0.0.1:1/fleet.git");
    g.credentials_file = cred;
    cr_assert_eq(put(&g, "a/repo", "clusters/a/x.yaml", "x\n", "x", c, &e), -1);
    cr_assert_str_eq(e.field, "git.credentialsFile");
    cr_assert(strstr(e.msg, cred) && strstr(e.msg, "0644"), "%s", e.msg);
    cr_assert_null(strstr(e.msg, "tok-SECRET-123"));

    /* readable by its owner only: accepted; the connection fails; no token in the text */
    cr_assert_eq(sh("chmod 600 cred"), 0);
    cr_assert_eq(put(&g, "a/repo", "clusters/a/x.yaml", "x\n", "x", c, &e), -1);
    cr_assert(strstr(e.msg, "fetch from https://127.0.0.1:1/fleet.git"), "%s", e.msg);
    cr_assert_null(strstr(e.msg, "tok-SECRET-123"), "%s", e.msg);

    /* a password in the URL is shown neither */
    gx_fleet_git u = hub_git("https://bot:pw-SECRET-456@127.0.0.1:1/fleet.git");
    cr_assert_eq(put(&u, "b/repo", "clusters/b/x.yaml", "x\n", "x", c, &e), -1);
    cr_assert(strstr(e.msg, "https://127.0.0.1:1/fleet.git"), "%s", e.msg);
    cr_assert_null(strstr(e.msg, "pw-SECRET-456"), "%s", e.msg);

    /* the token is never sent in clear */
    gx_fleet_git h = hub_git("http://127.0.0.1:1/fleet.git");
    h.credentials_file = cred;
    cr_assert_eq(put(&h, "c/repo", "clusters/c/x.yaml", "x\n", "x", c, &e), -1);
    cr_assert_str_eq(e.field, "git.credentialsFile", "%s", e.msg);
}

Test(fleet_gitops, ssh_remotes_and_bad_paths_are_refused_by_name, .init = git_tmp_make, .fini = git_tmp_remove)
{
    char repo[300], c[41];
    gx_err e;
    gx_fleet_git s = hub_git("git@example.org:fleet/config.git");
    cr_assert_eq(put(&s, "a/repo", "clusters/a/x.yaml", "x\n", "x", c, &e), -1);
    cr_assert_str_eq(e.field, "git.repo");
    cr_assert(strstr(e.msg, "ssh remotes are not supported: use https or a local path"), "%s", e.msg);
    s.repo = "ssh://git@example.org/fleet/config.git";
    cr_assert_eq(put(&s, "a/repo", "clusters/a/x.yaml", "x\n", "x", c, &e), -1);
    cr_assert(strstr(e.msg, "ssh remotes are not supported"), "%s", e.msg);

    bare_remote(repo, sizeof repo);
    gx_fleet_git g = hub_git(repo);
    const char *bad[] = {"../x.yaml", "/etc/x", "a//b", "a/./b", ".git/config", "a/.GIT/x", "a/", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(put(&g, "a/repo", bad[i], "x\n", "x", c, &e), -1, "%s is refused", bad[i]);
        cr_assert_str_eq(e.field, "changes[0].path", "%s", bad[i]);
    }
    g.branch = "no..good";
    cr_assert_eq(put(&g, "a/repo", "x.yaml", "x\n", "x", c, &e), -1);
    cr_assert_str_eq(e.field, "git.branch");
    cr_assert_str_eq(out("git -C remote.git rev-list --all --count"), "0", "nothing was pushed");
}
