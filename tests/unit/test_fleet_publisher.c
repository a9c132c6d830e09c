/* Unit tests of the publisher (src/fleet/publisher.c): jobs submitted from the loop run
 * on its thread one at a time, in order, against a real bare repository, and each
 * result comes back on the loop's thread through its eventfd. */
#include <criterion/criterion.h>
#include <pthread.h>
#include "fleet/publisher.h"
#include "net/loop.h"
#include "test_fleet_git_util.h"

#define JOBS 20

typedef struct seen {
    gx_loop *loop;
    gx_publisher *p;
    pthread_t loop_thread;
    uint64_t ids[JOBS + 4];
    int ok[JOBS + 4];
    char commits[JOBS + 4][41];
    char errs[JOBS + 4][800];
    int n, off_loop, pending_seen;
} seen;

static void on_published(void *ud, uint64_t id, int ok, const char *commit, const gx_err *err)
{
    seen *s = ud;
    if (!pthread_equal(pthread_self(), s->loop_thread)) s->off_loop++;
    if (s->n < JOBS + 4) {
        s->ids[s->n] = id;
        s->ok[s->n] = ok;
        snprintf(s->commits[s->n], 41, "%s", ok && commit ? commit : "");
        snprintf(s->errs[s->n], sizeof s->errs[0], "%s", !ok && err ? err->msg : "");
    }
    s->n++;
    if (s->n == JOBS) gx_loop_stop(s->loop);
}

static void give_up(gx_loop *l, void *ud)
{
    (void)ud;
    gx_loop_stop(l);
}

/* On the loop's first turn: submit every job from the loop, as the daemon does. */
static void submit_all(gx_loop *l, void *ud)
{
    (void)l;
    seen *s = ud;
    char repo[300], root[300];
    pathf(repo, sizeof repo, "%s/remote.git", git_tmp);
    pathf(root, sizeof root, "%s/fleet", git_tmp);
    gx_fleet_git g = {.repo = repo, .branch = "main"};
    uint64_t last = 0;
    for (int i = 0; i < JOBS; i++) {
        char path[64], content[32], msg[32];
        snprintf(path, sizeof path, "clusters/%s/ns/job-%02d.yaml", i % 2 ? "b" : "a", i);
        snprintf(content, sizeof content, "n: %d\n", i);
        snprintf(msg, sizeof msg, "job %02d", i);
        gx_git_change c = {path, content};
        uint64_t id = gx_publisher_submit(s->p, i % 2 ? "b" : "a", &g, &c, 1, "alice", "alice@example.org", msg);
        cr_assert_gt(id, last, "ids increase");
        last = id;
    }
    s->pending_seen = (int)gx_publisher_pending(s->p);
}

Test(fleet_publisher, twenty_jobs_complete_in_order_on_the_loop, .init = git_tmp_make, .fini = git_tmp_remove,
     .timeout = 120)
{
    cr_assert_eq(sh("git init -q --bare -b main remote.git"), 0);
    char root[300];
    pathf(root, sizeof root, "%s/fleet", git_tmp);
    seen s = {.loop = gx_loop_new(), .loop_thread = pthread_self()};
    gx_err e;
    s.p = gx_publisher_new(s.loop, root, on_published, &s, &e);
    cr_assert_not_null(s.p, "%s", e.msg);
    gx_loop_at(s.loop, gx_loop_mono(s.loop), submit_all, &s);
    gx_loop_at(s.loop, gx_loop_mono(s.loop) + 100000, give_up, &s);
    gx_loop_run(s.loop);
    cr_assert_eq(s.n, JOBS, "every job came back (%d)", s.n);
    cr_assert_eq(s.off_loop, 0, "every callback ran on the loop's thread");
    cr_assert_gt(s.pending_seen, 0, "submitted jobs count as pending");
    cr_assert_eq(gx_publisher_pending(s.p), 0);
    for (int i = 0; i < JOBS; i++) {
        cr_assert(s.ok[i], "job %d: %s", i, s.errs[i]);
        cr_assert_eq(s.ids[i], s.ids[0] + (uint64_t)i, "results come back in submission order");
        cr_assert_eq(strlen(s.commits[i]), 40);
    }
    cr_assert_str_eq(out("git -C remote.git rev-parse main"), s.commits[JOBS - 1]);
    cr_assert_str_eq(out("git -C remote.git rev-list --count main"), "20");
    cr_assert_str_eq(out("git -C remote.git log -1 --format=%%s main"), "job 19");
    cr_assert_str_eq(out("git -C remote.git log --reverse --format=%%s main | head -2 | tr '\\n' ,"),
                     "job 00,job 01,");
    cr_assert_str_eq(out("ls fleet/a/repo/clusters/a/ns | wc -l"), "10", "cluster a's clone is <root>/a/repo");
    gx_publisher_free(s.p);
    gx_loop_free(s.loop);
}

static void count_only(void *ud, uint64_t id, int ok, const char *commit, const gx_err *err)
{
    (void)id; (void)commit;
    seen *s = ud;
    if (s->n < JOBS) {
        s->ok[s->n] = ok;
        snprintf(s->errs[s->n], sizeof s->errs[0], "%s|%s", err ? err->field : "", err ? err->msg : "");
    }
    s->n++;
    gx_loop_stop(s->loop);
}

Test(fleet_publisher, a_failed_job_reports_its_error_and_free_drops_the_queue, .init = git_tmp_make,
     .fini = git_tmp_remove, .timeout = 60)
{
    char root[300];
    pathf(root, sizeof root, "%s/fleet", git_tmp);
    seen s = {.loop = gx_loop_new()};
    gx_err e;
    s.p = gx_publisher_new(s.loop, root, count_only, &s, &e);
    cr_assert_not_null(s.p, "%s", e.msg);
    gx_fleet_git g = {.repo = "git@example.org:x.git"};
    gx_git_change c = {"x.yaml", "x\n"};
    gx_publisher_submit(s.p, "..", &g, &c, 1, "alice", "a@example.org", "m");
    gx_loop_at(s.loop, gx_loop_mono(s.loop) + 30000, give_up, &s);
    gx_loop_run(s.loop);
    cr_assert_eq(s.n, 1);
    cr_assert_eq(s.ok[0], 0);
    cr_assert_str_eq(s.errs[0], "cluster|..: not a cluster name");

    gx_publisher_submit(s.p, "a", &g, &c, 1, "alice", "a@example.org", "m");
    gx_loop_run(s.loop);
    cr_assert_eq(s.n, 2);
    cr_assert(strstr(s.errs[1], "git.repo|") && strstr(s.errs[1], "ssh remotes are not supported"), "%s", s.errs[1]);

    /* jobs still queued at free are dropped without a callback */
    for (int i = 0; i < 5; i++) gx_publisher_submit(s.p, "a", &g, &c, 1, "alice", "a@example.org", "m");
    cr_assert_gt(gx_publisher_pending(s.p), 0);
    gx_publisher_free(s.p);
    cr_assert_eq(s.n, 2, "no callback after free");
    gx_loop_free(s.loop);
}
