/* store/sync: group commit. The loop's connection commits with synchronous=NORMAL (the
 * WAL frames are written, not fsynced: a crash of the process loses nothing, a power
 * cut could lose them), and this thread fsyncs the WAL beside the loop, covering every
 * commit made before the fsync began. The HTTP server holds each answer that follows a
 * commit until the fsync covering that commit has finished (net/http.h, the barrier),
 * so what a client is told is saved survives a power cut, as with synchronous=FULL.
 * Why: with FULL, each commit's fsync ran on the event loop, and on a slow disk one
 * team's submits stalled everyone's gateway calls (bench/soak.sh: the gateway beside
 * REST writes served 1 % of what it served alone). Here many commits share one fsync
 * and the loop never waits for the disk.
 * Owns: the commit counters, the thread, and the eventfd it signals the loop through.
 * Must not: touch the SQLite connection (it fsyncs the WAL file through a descriptor
 * of its own: fsync on Linux flushes the file, whichever descriptor names it), or take
 * signals (see background.c). A failed fsync is retried each second; the answers it
 * holds are never released by it, so their clients time out instead of being told a
 * change is saved that may not be. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>
#include "lib/alloc.h"
#include "store/store_int.h"

struct gx_store_sync {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    int stop;
    int efd;                     /* readable when synced moved on */
    int wal;                     /* the -wal file, opened once it exists; -1 before */
    char wal_path[4096];
    _Atomic uint64_t committed;  /* commits on the loop's connection */
    _Atomic uint64_t synced;     /* every commit up to this one is on the disk */
    int failing;                 /* the last fsync failed (said once on stderr) */
};

static void *sync_main(void *ud)
{
    struct gx_store_sync *y = ud;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    pthread_mutex_lock(&y->mu);
    for (;;) {
        while (!y->stop && atomic_load(&y->synced) >= atomic_load(&y->committed))
            pthread_cond_wait(&y->wake, &y->mu);
        if (y->stop && atomic_load(&y->synced) >= atomic_load(&y->committed)) break;
        /* every commit counted so far has written its frames: one fsync covers them */
        uint64_t target = atomic_load(&y->committed);
        pthread_mutex_unlock(&y->mu);
        if (y->wal < 0) y->wal = open(y->wal_path, O_RDONLY | O_CLOEXEC);
        int rc = y->wal >= 0 ? fdatasync(y->wal) : -1;
        if (rc == 0) {
            if (y->failing) fprintf(stderr, "store: fsync of %s works again\n", y->wal_path);
            y->failing = 0;
            atomic_store(&y->synced, target);
            uint64_t one = 1;
            if (write(y->efd, &one, sizeof one) < 0) { /* a full counter still wakes the loop */ }
        } else {
            if (!y->failing)
                fprintf(stderr, "store: cannot fsync %s: %s; answers that follow a change wait until it works\n",
                        y->wal_path, strerror(errno));
            y->failing = 1;
            struct timespec ts = {1, 0};
            nanosleep(&ts, NULL);
        }
        pthread_mutex_lock(&y->mu);
        if (y->stop && rc != 0) break;   /* stopping, and the disk fails: do not spin */
    }
    pthread_mutex_unlock(&y->mu);
    return NULL;
}

struct gx_store_sync *gx_store_sync_start(const char *db_path)
{
    struct gx_store_sync *y = gx_xcalloc(1, sizeof *y);
    y->wal = -1;
    if (snprintf(y->wal_path, sizeof y->wal_path, "%s-wal", db_path) >= (int)sizeof y->wal_path) goto fail;
    if ((y->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) goto fail;
    pthread_mutex_init(&y->mu, NULL);
    pthread_cond_init(&y->wake, NULL);
    if (pthread_create(&y->th, NULL, sync_main, y)) {
        pthread_mutex_destroy(&y->mu);
        pthread_cond_destroy(&y->wake);
        close(y->efd);
        goto fail;
    }
    return y;
fail:
    free(y);
    return NULL;
}

/* Syncs what is committed, then ends the thread. */
void gx_store_sync_stop(struct gx_store_sync *y)
{
    if (!y) return;
    pthread_mutex_lock(&y->mu);
    y->stop = 1;
    pthread_cond_signal(&y->wake);
    pthread_mutex_unlock(&y->mu);
    pthread_join(y->th, NULL);
    pthread_mutex_destroy(&y->mu);
    pthread_cond_destroy(&y->wake);
    if (y->wal >= 0) close(y->wal);
    close(y->efd);
    free(y);
}

/* SQLite's WAL hook: called on the loop's connection after each commit has written
 * its frames to the WAL. */
int gx_store_sync_hook(void *ud, sqlite3 *db, const char *name, int pages)
{
    (void)db; (void)name; (void)pages;
    struct gx_store_sync *y = ud;
    pthread_mutex_lock(&y->mu);
    atomic_fetch_add(&y->committed, 1);
    pthread_cond_signal(&y->wake);
    pthread_mutex_unlock(&y->mu);
    return SQLITE_OK;
}

uint64_t gx_store_committed(const gx_store *s)
{
    return s && s->sync ? atomic_load(&s->sync->committed) : 0;
}

uint64_t gx_store_synced(const gx_store *s)
{
    return s && s->sync ? atomic_load(&s->sync->synced) : 0;
}

int gx_store_sync_fd(const gx_store *s) { return s && s->sync ? s->sync->efd : -1; }

void gx_store_sync_drain(gx_store *s)
{
    uint64_t n;
    if (s && s->sync && read(s->sync->efd, &n, sizeof n) < 0) { /* nothing new */ }
}
