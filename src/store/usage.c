/* store/usage: the gateway's usage records (tables usage_rows and usage_dims, migration
 * 6; the view `usage` joins them back for readers; usage_marks, migration 7, says where
 * in usage_rows a time range starts).
 * Owns: the usage statements of a connection and its cache of dimension ids.
 * Why dimensions: a record's six strings (key, user, namespace, model, tier, endpoint)
 * repeat from one request to the next; stored once and referred to by an integer, a row
 * is a third of the bytes, and the background writer, whose CPU shows in the gateway's
 * p99 on a small machine, spends a third less per row (measured in docs/gateway.md).
 * Must not: be called on the gateway's request path (rows go through the background
 * thread's queue; gx_store_queue_usage). */
#include <stdlib.h>
#include <string.h>
#include "store/store_int.h"

#define ROWS_PER_INSERT 16      /* measured: 2.5x cheaper per row than one at a time */
#define ROW_PARAMS 9
#define DIMS_CAP 1024           /* cached dimension ids per connection (a power of two) */

typedef struct dim_entry {
    uint64_t hash;
    int64_t id;
    char *strs;                  /* the six strings, each ended by a NUL; NULL: free slot */
} dim_entry;

struct gx_store_usage_cx {
    sqlite3_stmt *ins_many, *ins_one, *dim_get, *dim_put, *mark;
    dim_entry dims[DIMS_CAP];
    size_t ndims;
};

/* A record's six dimension strings, NULL read as "". */
static void fields_of(const gx_store_usage *r, const char *f[6])
{
    const char *src[] = {r->key_id, r->user, r->ns, r->model, r->tier, r->endpoint};
    for (int k = 0; k < 6; k++) f[k] = src[k] ? src[k] : "";
}

/* FNV-1a over the six strings, each with its NUL so that ("ab","c") != ("a","bc"). */
static uint64_t dims_hash(const char *const f[6])
{
    uint64_t h = 1469598103934665603ull;
    for (int k = 0; k < 6; k++)
        for (const unsigned char *p = (const unsigned char *)f[k];; p++) {
            h = (h ^ *p) * 1099511628211ull;
            if (!*p) break;
        }
    return h;
}

static int dims_equal(const char *strs, const char *const f[6])
{
    for (int k = 0; k < 6; k++) {
        if (strcmp(strs, f[k])) return 0;
        strs += strlen(strs) + 1;
    }
    return 1;
}

/* Forgets every cached id: when full (a bounded cache), and after a rollback, which
 * takes back ids inserted in that transaction. */
static void dims_clear(struct gx_store_usage_cx *u)
{
    for (size_t i = 0; i < DIMS_CAP; i++) {
        free(u->dims[i].strs);
        u->dims[i].strs = NULL;
    }
    u->ndims = 0;
}

static void dims_remember(struct gx_store_usage_cx *u, uint64_t h, const char *const f[6], int64_t id)
{
    if (u->ndims >= DIMS_CAP * 3 / 4) dims_clear(u);
    size_t lens[6], len = 0;
    for (int k = 0; k < 6; k++) len += (lens[k] = strlen(f[k]) + 1);
    char *strs = malloc(len), *p = strs;
    if (!strs) return;             /* only a cache: the next lookup asks SQLite again */
    for (int k = 0; k < 6; k++) {
        memcpy(p, f[k], lens[k]);
        p += lens[k];
    }
    size_t i = h & (DIMS_CAP - 1);
    while (u->dims[i].strs) i = (i + 1) & (DIMS_CAP - 1);
    u->dims[i] = (dim_entry){h, id, strs};
    u->ndims++;
}

/* The id of r's six strings: from the cache, else looked up, else inserted (inside the
 * caller's transaction). -1 on a SQLite error. */
static int64_t dim_id(gx_store *s, const gx_store_usage *r)
{
    struct gx_store_usage_cx *u = s->usage;
    const char *f[6];
    fields_of(r, f);
    uint64_t h = dims_hash(f);
    for (size_t i = h & (DIMS_CAP - 1); u->dims[i].strs; i = (i + 1) & (DIMS_CAP - 1))
        if (u->dims[i].hash == h && dims_equal(u->dims[i].strs, f)) return u->dims[i].id;
    int64_t id = -1;
    for (int k = 0; k < 6; k++) sqlite3_bind_text(u->dim_get, k + 1, f[k], -1, SQLITE_STATIC);
    int rc = sqlite3_step(u->dim_get);
    if (rc == SQLITE_ROW) id = sqlite3_column_int64(u->dim_get, 0);
    sqlite3_reset(u->dim_get);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return -1;
    if (id < 0) {
        for (int k = 0; k < 6; k++) sqlite3_bind_text(u->dim_put, k + 1, f[k], -1, SQLITE_STATIC);
        rc = sqlite3_step(u->dim_put);
        sqlite3_reset(u->dim_put);
        if (rc != SQLITE_DONE) return -1;
        id = sqlite3_last_insert_rowid(s->db);
    }
    dims_remember(u, h, f, id);
    return id;
}

/* A row INSERT of k rows (VALUES (...), (...), ...). */
static sqlite3_stmt *row_insert(gx_store *s, int k)
{
    char sql[2048];
    int len = snprintf(sql, sizeof sql, "INSERT INTO usage_rows (ts_ms, dim, prompt_tokens, completion_tokens, "
                       "estimated, latency_us, ttft_us, status, stream) VALUES ");
    for (int i = 0; i < k; i++) len += snprintf(sql + len, sizeof sql - (size_t)len, "%s(?,?,?,?,?,?,?,?,?)", i ? "," : "");
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v3(s->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK) return NULL;
    return st;
}

/* The connection's statements, prepared once: a batch every 20 ms would otherwise
 * parse them every 20 ms. */
static struct gx_store_usage_cx *usage_cx(gx_store *s)
{
    if (s->usage) return s->usage;
    struct gx_store_usage_cx *u = calloc(1, sizeof *u);
    if (!u) return NULL;
    s->usage = u;
    u->ins_many = row_insert(s, ROWS_PER_INSERT);
    u->ins_one = row_insert(s, 1);
    sqlite3_prepare_v3(s->db, "SELECT id FROM usage_dims WHERE key_id = ?1 AND user = ?2 AND namespace = ?3 "
                       "AND model = ?4 AND tier = ?5 AND endpoint = ?6", -1, SQLITE_PREPARE_PERSISTENT, &u->dim_get, NULL);
    sqlite3_prepare_v3(s->db, "INSERT INTO usage_dims (key_id, user, namespace, model, tier, endpoint) "
                       "VALUES (?1, ?2, ?3, ?4, ?5, ?6)", -1, SQLITE_PREPARE_PERSISTENT, &u->dim_put, NULL);
    sqlite3_prepare_v3(s->db, "INSERT OR REPLACE INTO usage_marks (first_seq, max_ts) VALUES (?1, ?2)", -1,
                       SQLITE_PREPARE_PERSISTENT, &u->mark, NULL);
    if (!u->ins_many || !u->ins_one || !u->dim_get || !u->dim_put || !u->mark) {
        gx_store_usage_close(s);
        return NULL;
    }
    return u;
}

void gx_store_usage_close(gx_store *s)
{
    struct gx_store_usage_cx *u = s->usage;
    if (!u) return;
    sqlite3_finalize(u->ins_many);
    sqlite3_finalize(u->ins_one);
    sqlite3_finalize(u->dim_get);
    sqlite3_finalize(u->dim_put);
    sqlite3_finalize(u->mark);
    dims_clear(u);
    free(u);
    s->usage = NULL;
}

/* Binds row r, whose dimensions are dim, at parameter p (ROW_PARAMS of them). */
static void bind_row(sqlite3_stmt *st, int p, const gx_store_usage *r, int64_t dim)
{
    sqlite3_bind_int64(st, p, r->ts_ms);
    sqlite3_bind_int64(st, p + 1, dim);
    sqlite3_bind_int64(st, p + 2, r->prompt);
    sqlite3_bind_int64(st, p + 3, r->completion);
    sqlite3_bind_int(st, p + 4, r->estimated);
    sqlite3_bind_int64(st, p + 5, r->latency_us);
    if (r->ttft_us >= 0) sqlite3_bind_int64(st, p + 6, r->ttft_us);
    else sqlite3_bind_null(st, p + 6);
    sqlite3_bind_int(st, p + 7, r->status);
    sqlite3_bind_int(st, p + 8, r->stream);
}

int gx_store_put_usage(gx_store *s, const gx_store_usage *rows, size_t n, gx_err *err)
{
    struct gx_store_usage_cx *u = usage_cx(s);
    if (!u) return gx_store_sqlerr(s, err, "prepare");
    if (!n) return 0;
    if (gx_store_begin_relaxed(s, err)) return -1;
    int64_t first = -1, max_ts = rows[0].ts_ms;
    for (size_t i = 0; i < n;) {
        int k = n - i >= ROWS_PER_INSERT ? ROWS_PER_INSERT : 1;
        sqlite3_stmt *st = k > 1 ? u->ins_many : u->ins_one;
        for (int j = 0; j < k; j++) {
            int64_t dim = dim_id(s, &rows[i + (size_t)j]);
            if (dim < 0) {
                gx_store_sqlerr(s, err, "usage dimensions");
                sqlite3_reset(st);
                goto fail;
            }
            bind_row(st, 1 + ROW_PARAMS * j, &rows[i + (size_t)j], dim);
        }
        int rc = sqlite3_step(st);
        sqlite3_reset(st);
        if (rc != SQLITE_DONE) {
            gx_store_sqlerr(s, err, "write");
            goto fail;
        }
        /* the rows of one INSERT take consecutive rowids, one above the table's largest */
        if (first < 0) first = sqlite3_last_insert_rowid(s->db) - (k - 1);
        for (int j = 0; j < k; j++)
            if (rows[i + (size_t)j].ts_ms > max_ts) max_ts = rows[i + (size_t)j].ts_ms;
        i += (size_t)k;
    }
    sqlite3_bind_int64(u->mark, 1, first);
    sqlite3_bind_int64(u->mark, 2, max_ts);
    int mrc = sqlite3_step(u->mark);
    sqlite3_reset(u->mark);
    if (mrc != SQLITE_DONE) {
        gx_store_sqlerr(s, err, "write");
        goto fail;
    }
    if (gx_store_commit_relaxed(s, err)) goto fail;
    return 0;
fail:
    gx_store_rollback_relaxed(s);
    dims_clear(u);
    return -1;
}

int gx_store_queue_usage(gx_store *s, const gx_store_usage *rows, size_t n, gx_err *err)
{
    if (gx_store_bg_usage(s->bg, rows, n) == 0) return 0;
    return gx_store_put_usage(s, rows, n, err);
}

void gx_store_sync_usage(gx_store *s) { gx_store_bg_sync(s->bg); }

size_t gx_store_pending(gx_store *s) { return gx_store_bg_pending(s->bg); }

json_t *gx_store_usage_summary(gx_store *s, const char *group_by, int64_t since_ms, const char *user, gx_err *err)
{
    static const struct { const char *name, *col; } groups[] = {
        {"key", "key_id"}, {"user", "user"}, {"namespace", "namespace"}, {"model", "model"}, {"tier", "tier"}, {NULL, NULL}};
    const char *col = NULL;
    for (int i = 0; groups[i].name; i++)
        if (!strcmp(group_by, groups[i].name)) col = groups[i].col;
    if (!col) { gx_errf(err, 400, "group_by", "group_by must be key, user, namespace, model or tier"); return NULL; }
    char sql[768];
    /* seq from the first batch that has a record at or after since (usage_marks): a
     * range of the table's rowids instead of an index on ts_ms that every write pays */
    snprintf(sql, sizeof sql, "SELECT %s, COUNT(*), SUM(prompt_tokens), SUM(completion_tokens), SUM(estimated), "
             "SUM(status >= 400), SUM(status = 429) FROM usage WHERE seq >= (SELECT COALESCE(MIN(first_seq), 9223372036854775807) "
             "FROM usage_marks WHERE max_ts >= ?1) AND ts_ms >= ?1 AND (?2 IS NULL OR user = ?2) "
             "GROUP BY %s ORDER BY %s", col, col, col);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK) { gx_store_sqlerr(s, err, "prepare"); return NULL; }
    sqlite3_bind_int64(st, 1, since_ms);
    if (user) sqlite3_bind_text(st, 2, user, -1, SQLITE_TRANSIENT);
    else sqlite3_bind_null(st, 2);
    json_t *out = json_array();
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        json_int_t p = sqlite3_column_int64(st, 2), c = sqlite3_column_int64(st, 3);
        json_array_append_new(out, json_pack("{s:s,s:I,s:I,s:I,s:I,s:I,s:I,s:I}", "group", sqlite3_column_text(st, 0),
            "requests", (json_int_t)sqlite3_column_int64(st, 1), "promptTokens", p, "completionTokens", c,
            "totalTokens", p + c, "estimatedRequests", (json_int_t)sqlite3_column_int64(st, 4),
            "errors", (json_int_t)sqlite3_column_int64(st, 5), "limited", (json_int_t)sqlite3_column_int64(st, 6)));
    }
    return gx_store_read_end(s, st, rc, out, "usage", err);
}
