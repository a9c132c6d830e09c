/* store: the durable record of every object, workload, user and token (SQLite, WAL).
 * Owns: the schema and its migrations, and every SQL statement of the daemon.
 * Must not: know HTTP or the engine; it stores JSON documents and small records.
 * Every write function commits before it returns (or is inside gx_store_begin/commit),
 * so an answer sent after it returns describes durable state. */
#ifndef GX_STORE_H
#define GX_STORE_H
#include <stdint.h>
#include <jansson.h>
#include "lib/err.h"

typedef struct gx_store gx_store;

/* Open (creating) <dir>/gpuaas.db, WAL mode, migrate to the current schema. */
gx_store *gx_store_open(const char *dir, gx_err *err);
void gx_store_close(gx_store *s);

/* Group commit (store/sync.c). Each commit on this connection counts one; a thread
 * fsyncs the WAL beside the loop and moves `synced` up to the commits it covered.
 * What follows a commit is acknowledged only once synced >= the count after it (the
 * daemon wires this to the HTTP server's barrier). Without the thread (it could not
 * start) commits fsync themselves, both counts stay 0 and nothing waits. */
uint64_t gx_store_committed(const gx_store *s);
uint64_t gx_store_synced(const gx_store *s);
/* Readable when synced moved on (-1 without the thread); drain it before reading
 * gx_store_synced, so that a move after the read wakes the loop again. */
int gx_store_sync_fd(const gx_store *s);
void gx_store_sync_drain(gx_store *s);
int gx_store_schema_version(gx_store *s);

/* Explicit transactions around several writes; nesting is not supported. */
int gx_store_begin(gx_store *s, gx_err *err);
int gx_store_commit(gx_store *s, gx_err *err);
void gx_store_rollback(gx_store *s);

/* Every list read here returns the whole list, or NULL with err (SQLite's message and
 * the table) when a step failed, even part-way: never a partial list. */

/* Configuration objects (Kueue kinds, Nodes), keyed by (kind, namespace, name). */
int gx_store_put_object(gx_store *s, const char *kind, const char *ns, const char *name,
                        const json_t *manifest, int64_t now_ms, gx_err *err);
int gx_store_delete_object(gx_store *s, const char *kind, const char *ns, const char *name, gx_err *err);
/* All objects as [{"kind","namespace","name","manifest","createdMs"}] in insertion order
 * (createdMs: when it was first applied; a later apply keeps it). */
json_t *gx_store_objects(gx_store *s, gx_err *err);

/* Workloads: the manifest as submitted, the engine's status, the daemon's run record. */
int gx_store_put_workload(gx_store *s, const char *ns, const char *name, const json_t *manifest,
                          const json_t *status, const json_t *run, int64_t now_ms, gx_err *err);
int gx_store_update_workload(gx_store *s, const char *ns, const char *name,
                             const json_t *status, const json_t *run, int64_t now_ms, gx_err *err);
int gx_store_delete_workload(gx_store *s, const char *ns, const char *name, gx_err *err);
/* [{"namespace","name","manifest","status","run"}] in submission order. */
json_t *gx_store_workloads(gx_store *s, gx_err *err);

/* Users and their API tokens (hashes only). */
int gx_store_put_user(gx_store *s, const char *name, int admin, const json_t *namespaces,
                      int64_t now_ms, gx_err *err);
int gx_store_delete_user(gx_store *s, const char *name, gx_err *err);
/* [{"name","admin","namespaces","createdAt"}] */
json_t *gx_store_users(gx_store *s, gx_err *err);
int gx_store_put_token(gx_store *s, const char *id, const char *user, const unsigned char *hash,
                       size_t hash_len, int64_t now_ms, gx_err *err);
int gx_store_delete_tokens_of(gx_store *s, const char *user, gx_err *err);
/* [{"id","user","hash": hex}] */
json_t *gx_store_tokens(gx_store *s, gx_err *err);

/* Gateway API keys (hashes only) and usage records (src/maas). */
typedef struct gx_store_api_key {
    const char *id, *name, *user, *ns, *tier;
    const unsigned char *hash;
    size_t hash_len;
    int64_t created_ms, expires_ms;
} gx_store_api_key;
int gx_store_put_api_key(gx_store *s, const gx_store_api_key *k, gx_err *err);
int gx_store_revoke_api_key(gx_store *s, const char *id, int64_t now_ms, gx_err *err);
/* [{"id","name","user","namespace","tier","hash": hex,"createdMs","expiresMs","revokedMs"}] */
/* The active keys at now_ms and the ended_keep that ended last (revoked or expired). */
json_t *gx_store_api_keys(gx_store *s, int64_t now_ms, int64_t ended_keep, gx_err *err);
typedef struct gx_store_usage {
    int64_t ts_ms;
    const char *key_id, *user, *ns, *model, *tier, *endpoint;
    int64_t prompt, completion, latency_us, ttft_us;   /* ttft_us < 0: none */
    int estimated, stream, status;
} gx_store_usage;
/* n rows in one transaction. */
int gx_store_put_usage(gx_store *s, const gx_store_usage *rows, size_t n, gx_err *err);
/* The same, from the store's background thread: rows are copied and queued, and this
 * returns at once (the gateway's loop never waits for the disk). Written inline when
 * the thread could not start. gx_store_sync_usage waits until the queue is written. */
int gx_store_queue_usage(gx_store *s, const gx_store_usage *rows, size_t n, gx_err *err);
void gx_store_sync_usage(gx_store *s);
/* Rows (usage records, rate-limit windows) handed to the writer thread and not yet
 * committed: what a kill -9 now would lose. */
size_t gx_store_pending(gx_store *s);
/* Totals per group_by (key, user, namespace, model, tier) since since_ms, of one user
 * (NULL: everyone): [{"group","requests","promptTokens","completionTokens","totalTokens",
 * "estimatedRequests","errors"}]. */
json_t *gx_store_usage_summary(gx_store *s, const char *group_by, int64_t since_ms, const char *user, gx_err *err);

/* Portal sign-in passwords: Argon2id strings (crypto_pwhash_str), never the password. */
int gx_store_put_password(gx_store *s, const char *user, const char *hash, int64_t now_ms, gx_err *err);
/* [{"user","hash"}] */
json_t *gx_store_passwords(gx_store *s, gx_err *err);
/* Change a user's role and namespaces (the admin page, or a trusted proxy's groups). */
int gx_store_update_user(gx_store *s, const char *name, int admin, const json_t *namespaces, gx_err *err);

/* Fleet requests (src/store/fleet.c, ops/fleet.c): a Job for a cluster of the fleet,
 * kept from its submission until its file has left git again. state: Pending, Published,
 * Removing, Removed; note: why it is (being) removed ("cancelled by alice", "expired"). */
typedef struct gx_store_fleet_req {
    const char *ns, *name, *cluster, *user, *path, *state, *commit, *last_error, *note;
    const json_t *manifest, *rendered;
    int64_t attempts, next_attempt_ms, published_ms, created_ms;
} gx_store_fleet_req;
/* Insert or update (by namespace and name; the row keeps its place in the order). */
int gx_store_fleet_put(gx_store *s, const gx_store_fleet_req *r, int64_t now_ms, gx_err *err);
int gx_store_fleet_delete(gx_store *s, const char *ns, const char *name, gx_err *err);
/* [{"namespace","name","cluster","user","path","state","commit","lastError","note",
 * "manifest","rendered","attempts","nextAttemptMs","publishedMs","createdMs"}] in
 * submission order. */
json_t *gx_store_fleet_requests(gx_store *s, gx_err *err);

/* Utilisation reports (src/store/reports.c): GPU time handed back. The idle policy
 * records each reclamation (GPU-milliseconds it freed ahead of the workload's end), a
 * reservation each no-show (booked GPU-milliseconds left unused); ns is the owner's
 * namespace, gpu_class the flavor or GPU model. */
int gx_store_put_idle_reclaim(gx_store *s, const char *ns, const char *gpu_class, int64_t gpu_ms, int64_t at_ms,
                              gx_err *err);
int gx_store_put_reservation_noshow(gx_store *s, const char *ns, const char *gpu_class, int64_t gpu_ms,
                                    int64_t at_ms, gx_err *err);
/* Sums of one of those tables ("idle_reclaims" or "reservation_noshows") over records
 * at_ms in [since_ms, until_ms): [{"namespace","class","gpuMs"}] ordered by both. */
json_t *gx_store_reclaimed(gx_store *s, const char *table, int64_t since_ms, int64_t until_ms, gx_err *err);

/* Small key/value settings (e.g. the schema's own bookkeeping). meta_get: 0 with the
 * value in out, 1 when the key is absent, -1 with err when it could not be read. */
int gx_store_meta_get(gx_store *s, const char *key, char *out, size_t n, gx_err *err);
int gx_store_meta_put(gx_store *s, const char *key, const char *value, gx_err *err);

#endif
