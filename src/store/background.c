/* store/background: the store's one thread, with its own SQLite connection.
 * Owns: the queue of metering rows waiting to be written (usage records, and the
 * gateway's rate-limit windows), and WAL checkpoints.
 * Why a thread: the gateway meters every request, and at tens of thousands of requests
 * a second a 200 ms batch is thousands of rows, several milliseconds of inserts; on the
 * event loop that time is added to every request in flight (it was most of the
 * gateway's p99). A checkpoint fsyncs the database file, which is worse. Here both
 * happen beside the loop; the loop only copies rows into the queue. The rate-limit
 * windows of every key used in the last second are saved each second: thousands of
 * rows when thousands of keys are busy, so they take the same way, in the same queue
 * (a later save of a window lands after an earlier one).
 * Must not: touch the main connection, or take signals (the loop reads them from a
 * signalfd, and a process-directed signal goes to any thread that does not block it).
 * Rows that fail to be written stay queued and are retried each second; past
 * MAX_QUEUED rows the oldest batch is dropped, with a line on stderr saying so. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>
#include "store/ratelimit.h"
#include "store/store_int.h"

#define MAX_QUEUED (1u << 18)    /* rows, ~200 bytes each with their strings */

typedef struct batch {
    struct batch *next;
    size_t n;
    gx_store_usage *rows;        /* usage rows, or NULL; into the same allocation as the strings */
    gx_store_rate_window *wins;  /* or rate-limit windows */
} batch;

typedef struct gx_store_bg gx_store_bg;
struct gx_store_bg {
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t wake, idle;
    int stop, busy;
    unsigned long started, finished;   /* write passes, for sync to wait on its own */
    size_t writing;              /* rows the running pass took from the queue */
    batch *head, *tail;
    size_t queued;
    gx_store conn;               /* the thread's own connection, with its usage statements */
};

/* Copies the string *f points to (NULL as "") to p, points *f at the copy, returns the
 * byte after it. */
static char *keep_str(char *p, const char **f)
{
    size_t len = strlen(*f ? *f : "") + 1;
    memcpy(p, *f ? *f : "", len);
    *f = p;
    return p + len;
}

/* One allocation holding the batch, its rows and copies of their strings. */
static batch *copy_batch(const gx_store_usage *rows, size_t n)
{
    size_t bytes = sizeof(batch) + n * sizeof(gx_store_usage);
    for (size_t i = 0; i < n; i++) {
        const char *f[] = {rows[i].key_id, rows[i].user, rows[i].ns, rows[i].model, rows[i].tier, rows[i].endpoint};
        for (int k = 0; k < 6; k++) bytes += strlen(f[k] ? f[k] : "") + 1;
    }
    batch *b = malloc(bytes);
    if (!b) return NULL;
    b->next = NULL;
    b->n = n;
    b->wins = NULL;
    b->rows = (gx_store_usage *)(b + 1);
    char *p = (char *)(b->rows + n);
    for (size_t i = 0; i < n; i++) {
        gx_store_usage *r = &b->rows[i];
        *r = rows[i];
        const char **f[] = {&r->key_id, &r->user, &r->ns, &r->model, &r->tier, &r->endpoint};
        for (int k = 0; k < 6; k++) p = keep_str(p, f[k]);
    }
    return b;
}

/* The same for windows: three strings a row. */
static batch *copy_windows(const gx_store_rate_window *rows, size_t n)
{
    size_t bytes = sizeof(batch) + n * sizeof(gx_store_rate_window);
    for (size_t i = 0; i < n; i++)
        bytes += strlen(rows[i].scope) + strlen(rows[i].name) + strlen(rows[i].kind) + 3;
    batch *b = malloc(bytes);
    if (!b) return NULL;
    b->next = NULL;
    b->n = n;
    b->rows = NULL;
    b->wins = (gx_store_rate_window *)(b + 1);
    char *p = (char *)(b->wins + n);
    for (size_t i = 0; i < n; i++) {
        gx_store_rate_window *r = &b->wins[i];
        *r = rows[i];
        p = keep_str(p, &r->scope);
        p = keep_str(p, &r->name);
        p = keep_str(p, &r->kind);
    }
    return b;
}

static const char *what(const batch *b) { return b->rows ? "usage records" : "rate-limit windows"; }

/* Writes what is queued, in order; a batch that fails goes back to the front with
 * those after it. Called and returns with mu held. Returns how many rows failed. */
static size_t write_queue(gx_store_bg *bg)
{
    batch *list = bg->head;
    bg->head = bg->tail = NULL;
    bg->writing = 0;
    for (batch *b = list; b; b = b->next) bg->queued -= b->n, bg->writing += b->n;
    bg->busy = 1;
    bg->started++;
    pthread_mutex_unlock(&bg->mu);
    while (list) {
        gx_err e;
        gx_err_clear(&e);
        int rc = list->rows ? gx_store_put_usage(&bg->conn, list->rows, list->n, &e)
                            : gx_store_put_rate_windows(&bg->conn, list->wins, list->n, &e);
        if (rc) {
            fprintf(stderr, "gpuaas: store: writing %zu %s failed (will retry): %s\n", list->n, what(list), e.msg);
            break;
        }
        batch *done = list;
        list = list->next;
        free(done);
    }
    pthread_mutex_lock(&bg->mu);
    size_t failed = 0;
    if (list) {                    /* the rest goes before what arrived meanwhile */
        batch *last = list;
        for (batch *b = list; b; b = b->next) { failed += b->n; last = b; }
        last->next = bg->head;
        if (!bg->head) bg->tail = last;
        bg->head = list;
        bg->queued += failed;
    }
    bg->busy = 0;
    bg->writing = 0;
    bg->finished++;
    pthread_cond_broadcast(&bg->idle);
    return failed;
}

/* Writes queued rows as they come; after a failure, waits a second before retrying.
 * Checkpoints the WAL each quiet second. At stop: writes until the queue is empty or
 * a write fails; what is left then is reported lost. */
static void *bg_main(void *arg)
{
    gx_store_bg *bg = arg;
    int backoff = 0;
    /* lowest priority: on a busy machine the writer waits, not the requests (at nice 10
     * its inserts still showed in the gateway's p99 on 2 cores; at 19 with 20 ms
     * batches they hardly do) */
    setpriority(PRIO_PROCESS, (id_t)gettid(), 19);
    pthread_mutex_lock(&bg->mu);
    for (;;) {
        struct timespec t;
        clock_gettime(CLOCK_REALTIME, &t);
        t.tv_sec += 1;
        int timed_out = 0;
        while (!bg->stop && (!bg->head || backoff) && !timed_out)
            timed_out = pthread_cond_timedwait(&bg->wake, &bg->mu, &t) == ETIMEDOUT;
        backoff = bg->head && write_queue(bg) > 0;
        if (bg->stop) {
            /* rows queued while the last write ran (the mutex is free then) are
             * written too; only a failing write leaves rows behind */
            while (bg->head && !backoff) backoff = write_queue(bg) > 0;
            break;
        }
        if (timed_out) {
            pthread_mutex_unlock(&bg->mu);
            sqlite3_wal_checkpoint_v2(bg->conn.db, "main", SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
            pthread_mutex_lock(&bg->mu);
        }
    }
    for (batch *b = bg->head; b;) {
        batch *next = b->next;
        fprintf(stderr, "gpuaas: store: %zu %s not written at shutdown\n", b->n, what(b));
        free(b);
        b = next;
    }
    bg->head = bg->tail = NULL;
    bg->queued = 0;
    pthread_cond_broadcast(&bg->idle);
    pthread_mutex_unlock(&bg->mu);
    return NULL;
}

gx_store_bg *gx_store_bg_start(const char *path)
{
    gx_store_bg *bg = calloc(1, sizeof *bg);
    if (!bg) return NULL;
    if (sqlite3_open_v2(path, &bg->conn.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
        goto fail;
    sqlite3_busy_timeout(bg->conn.db, 5000);
    /* a connection learns the journal mode when it first reads the file; until then a
     * checkpoint is a no-op ("not in WAL mode") */
    if (sqlite3_exec(bg->conn.db, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", NULL, NULL, NULL) != SQLITE_OK)
        goto fail;
    pthread_mutex_init(&bg->mu, NULL);
    pthread_cond_init(&bg->wake, NULL);
    pthread_cond_init(&bg->idle, NULL);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&bg->th, NULL, bg_main, bg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc) {
        pthread_mutex_destroy(&bg->mu);
        pthread_cond_destroy(&bg->wake);
        pthread_cond_destroy(&bg->idle);
        goto fail;
    }
    return bg;
fail:
    sqlite3_close(bg->conn.db);
    free(bg);
    return NULL;
}

void gx_store_bg_stop(gx_store_bg *bg)
{
    if (!bg) return;
    pthread_mutex_lock(&bg->mu);
    bg->stop = 1;
    pthread_cond_signal(&bg->wake);
    pthread_mutex_unlock(&bg->mu);
    pthread_join(bg->th, NULL);
    gx_store_usage_close(&bg->conn);
    sqlite3_close(bg->conn.db);
    pthread_mutex_destroy(&bg->mu);
    pthread_cond_destroy(&bg->wake);
    pthread_cond_destroy(&bg->idle);
    free(bg);
}

/* Appends a batch (NULL: out of memory), dropping the oldest batches while the queue
 * is over its bound. */
static int enqueue(gx_store_bg *bg, batch *b)
{
    if (!b) return -1;
    pthread_mutex_lock(&bg->mu);
    while (bg->queued + b->n > MAX_QUEUED && bg->head) {   /* the disk is stuck: keep serving */
        batch *old = bg->head;
        bg->head = old->next;
        if (!bg->head) bg->tail = NULL;
        bg->queued -= old->n;
        fprintf(stderr, "gpuaas: store: %zu %s dropped (the queue is full)\n", old->n, what(old));
        free(old);
    }
    if (bg->tail) bg->tail->next = b;
    else bg->head = b;
    bg->tail = b;
    bg->queued += b->n;
    pthread_cond_signal(&bg->wake);
    pthread_mutex_unlock(&bg->mu);
    return 0;
}

int gx_store_bg_usage(gx_store_bg *bg, const gx_store_usage *rows, size_t n)
{
    if (!bg) return -1;
    return n ? enqueue(bg, copy_batch(rows, n)) : 0;
}

int gx_store_bg_windows(gx_store_bg *bg, const gx_store_rate_window *rows, size_t n)
{
    if (!bg) return -1;
    return n ? enqueue(bg, copy_windows(rows, n)) : 0;
}

size_t gx_store_bg_pending(gx_store_bg *bg)
{
    if (!bg) return 0;
    pthread_mutex_lock(&bg->mu);
    size_t n = bg->queued + bg->writing;
    pthread_mutex_unlock(&bg->mu);
    return n;
}

/* Waits for one write pass that takes every row queued now: the running pass if the
 * queue is empty, else the next one. One pass, not until success: a batch that fails
 * stays queued, and waiting for it could be forever. */
void gx_store_bg_sync(gx_store_bg *bg)
{
    if (!bg) return;
    pthread_mutex_lock(&bg->mu);
    unsigned long want = bg->started + (bg->head ? 1 : 0);
    if (bg->head) pthread_cond_signal(&bg->wake);
    while (bg->finished < want && !bg->stop) pthread_cond_wait(&bg->idle, &bg->mu);
    pthread_mutex_unlock(&bg->mu);
}
