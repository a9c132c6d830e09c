/* fleet/publisher: gx_git_commit_push on one worker thread (publisher.h).
 * The loop submits jobs (copied whole, so the caller's memory may go at once); the
 * thread runs them one at a time in submission order, each in the cluster's own clone
 * (<root>/<cluster>/repo), and appends the result to a done list, then writes the
 * eventfd; the loop's watch on it takes the done list and runs the callbacks. The same
 * hand-back as store/sync.c: one mutex guards the lists, the eventfd only wakes.
 * Owns: the jobs (their copies) until their callback has run or the publisher is freed.
 * Must not: take signals (the daemon's signalfd wants them on the loop); call back
 * anywhere but the loop; keep a job it dropped (the caller's store still has it). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>
#include "fleet/publisher.h"
#include "lib/alloc.h"
#include "net/loop.h"

typedef struct job {
    struct job *next;
    uint64_t id;
    char *cluster;
    gx_fleet_git g;
    gx_git_change *changes;
    size_t n;
    char *author_name, *author_email, *message;
    int ok;
    char commit[41];
    gx_err err;
} job;

struct gx_publisher {
    gx_loop *loop;
    char *root;
    gx_publish_done_fn done;
    void *ud;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    int stop;
    int efd;                    /* readable when the done list has something */
    job *queue, *queue_tail;    /* waiting, oldest first */
    job *fin, *fin_tail;        /* run, callback not yet called */
    uint64_t next_id;
    _Atomic size_t pending;     /* submitted, callback not yet called */
};

static char *dup_or_null(const char *s) { return s ? gx_xstrdup(s) : NULL; }

static void job_free(job *j)
{
    free(j->cluster);
    free(j->g.repo);
    free(j->g.branch);
    free(j->g.folder);
    free(j->g.credentials_file);
    free(j->g.author_name);
    free(j->g.author_email);
    for (size_t i = 0; i < j->n; i++) {
        free((char *)j->changes[i].path);
        free((char *)j->changes[i].content);
    }
    free(j->changes);
    free(j->author_name);
    free(j->author_email);
    free(j->message);
    free(j);
}

/* The clone a cluster's jobs run in: a cluster name is one path component (the Fleet's
 * names are DNS-1123 labels; this is the guard should one reach here unchecked). */
static void run_job(gx_publisher *p, job *j)
{
    gx_err_clear(&j->err);
    const char *c = j->cluster;
    char workdir[PATH_MAX];
    if (!c || !*c || strchr(c, '/') || !strcmp(c, ".") || !strcmp(c, "..")) {
        gx_errf(&j->err, 400, "cluster", "%s: not a cluster name", c ? c : "(none)");
        return;
    }
    if (snprintf(workdir, sizeof workdir, "%s/%s/repo", p->root, c) >= (int)sizeof workdir) {
        gx_errf(&j->err, 400, "cluster", "%s: the clone's path is too long", c);
        return;
    }
    j->ok = gx_git_commit_push(&j->g, workdir, j->changes, j->n, j->author_name, j->author_email, j->message,
                               j->commit, &j->err) == 0;
}

static void *publisher_main(void *ud)
{
    gx_publisher *p = ud;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && !p->queue) pthread_cond_wait(&p->wake, &p->mu);
        if (p->stop) break;
        job *j = p->queue;
        p->queue = j->next;
        if (!p->queue) p->queue_tail = NULL;
        j->next = NULL;
        pthread_mutex_unlock(&p->mu);
        run_job(p, j);
        pthread_mutex_lock(&p->mu);
        if (p->fin_tail) p->fin_tail->next = j; else p->fin = j;
        p->fin_tail = j;
        uint64_t one = 1;
        if (write(p->efd, &one, sizeof one) < 0) { /* a full counter still wakes the loop */ }
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* On the loop: the finished jobs' callbacks, oldest first. */
static void on_done(gx_loop *l, int fd, uint32_t events, void *ud)
{
    (void)l; (void)events;
    gx_publisher *p = ud;
    uint64_t n;
    if (read(fd, &n, sizeof n) < 0) { /* nothing new */ }
    pthread_mutex_lock(&p->mu);
    job *j = p->fin;
    p->fin = p->fin_tail = NULL;
    pthread_mutex_unlock(&p->mu);
    while (j) {
        job *next = j->next;
        atomic_fetch_sub(&p->pending, 1);
        p->done(p->ud, j->id, j->ok, j->ok ? j->commit : NULL, j->ok ? NULL : &j->err);
        job_free(j);
        j = next;
    }
}

gx_publisher *gx_publisher_new(struct gx_loop *l, const char *workdir_root, gx_publish_done_fn done, void *ud,
                               gx_err *err)
{
    if (!l || !done) { gx_errf(err, 500, "", "publisher: a loop and a callback are required"); return NULL; }
    if (!workdir_root || !*workdir_root) { gx_errf(err, 500, "", "publisher: no folder for the clones"); return NULL; }
    gx_publisher *p = gx_xcalloc(1, sizeof *p);
    p->loop = l;
    p->root = gx_xstrdup(workdir_root);
    p->done = done;
    p->ud = ud;
    p->next_id = 1;
    if ((p->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        gx_errf(err, 500, "", "publisher: eventfd: %s", strerror(errno));
        goto fail;
    }
    if (gx_loop_watch(l, p->efd, EPOLLIN, on_done, p) != 0) {
        gx_errf(err, 500, "", "publisher: cannot watch its eventfd");
        close(p->efd);
        goto fail;
    }
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->wake, NULL);
    int rc = pthread_create(&p->th, NULL, publisher_main, p);
    if (rc != 0) {
        gx_errf(err, 500, "", "publisher: cannot start its thread: %s", strerror(rc));
        gx_loop_unwatch(l, p->efd);
        close(p->efd);
        pthread_mutex_destroy(&p->mu);
        pthread_cond_destroy(&p->wake);
        goto fail;
    }
    return p;
fail:
    free(p->root);
    free(p);
    return NULL;
}

uint64_t gx_publisher_submit(gx_publisher *p, const char *cluster, const gx_fleet_git *g,
                             const gx_git_change *changes, size_t n, const char *author_name,
                             const char *author_email, const char *message)
{
    job *j = gx_xcalloc(1, sizeof *j);
    j->cluster = dup_or_null(cluster);
    if (g) {
        j->g.repo = dup_or_null(g->repo);
        j->g.branch = dup_or_null(g->branch);
        j->g.folder = dup_or_null(g->folder);
        j->g.credentials_file = dup_or_null(g->credentials_file);
        j->g.author_name = dup_or_null(g->author_name);
        j->g.author_email = dup_or_null(g->author_email);
    }
    j->changes = gx_xcalloc(n ? n : 1, sizeof *j->changes);
    j->n = n;
    for (size_t i = 0; i < n; i++) {
        j->changes[i].path = dup_or_null(changes[i].path);
        j->changes[i].content = dup_or_null(changes[i].content);
    }
    j->author_name = dup_or_null(author_name);
    j->author_email = dup_or_null(author_email);
    j->message = dup_or_null(message);
    atomic_fetch_add(&p->pending, 1);
    pthread_mutex_lock(&p->mu);
    j->id = p->next_id++;
    if (p->queue_tail) p->queue_tail->next = j; else p->queue = j;
    p->queue_tail = j;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->mu);
    return j->id;
}

size_t gx_publisher_pending(const gx_publisher *p) { return p ? atomic_load(&p->pending) : 0; }

void gx_publisher_free(gx_publisher *p)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    job *q = p->queue;
    p->queue = p->queue_tail = NULL;
    pthread_cond_signal(&p->wake);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->th, NULL);
    for (job *next; q; q = next) {
        next = q->next;
        job_free(q);
    }
    for (job *j = p->fin, *next; j; j = next) {
        next = j->next;
        job_free(j);
    }
    gx_loop_unwatch(p->loop, p->efd);
    close(p->efd);
    pthread_mutex_destroy(&p->mu);
    pthread_cond_destroy(&p->wake);
    free(p->root);
    free(p);
}
