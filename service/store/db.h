/* service/store/db.h - the storage contract: all durable state of privgend.
 *
 * One pg_db per process, opened from a URL whose scheme picks the backend:
 *   sqlite:PATH                    embedded SQLite (WAL, synchronous=FULL) at
 *                                  PATH; row blocks and checkpoints are files
 *                                  next to it (dirname(PATH)/datasets/<id>/,
 *                                  dirname(PATH)/checkpoints/<job>/). The
 *                                  default is sqlite:DATA_DIR/privgen.db.
 *   postgresql://... postgres://   a PostgreSQL server (libpq connection URI;
 *                                  password from the URI or PGPASSFILE). Rows
 *                                  and checkpoints are chunked bytea rows.
 * Nothing above this header knows which one runs: no caller sees a path, a
 * file, a connection or SQL. Every operation below is one call; the atomic
 * ones are single operations (never sequences a caller strings together).
 *
 * Threads: a pg_db is shared by every HTTP and worker thread; every function
 * may be called from any thread at any time (SQLite serializes on one
 * connection, PostgreSQL draws from a pool). An open block iterator may
 * keep one backend connection until it ends; its thread may make other
 * pg_db calls meanwhile (pools are sized for that). An open appender keeps
 * none (see below).
 *
 * Errors (every int-returning function; err may be NULL):
 *   PG_OK        done. Lookups that find nothing return PG_OK, *found = 0.
 *   PG_EUNAVAIL  the backend is unreachable or the connection was lost; try
 *                again later (the API answers 503 with Retry-After). A write
 *                reported so either took full effect or none: transactions
 *                never leave half a state. When the loss hits COMMIT itself
 *                the caller cannot tell which; every such write is keyed (job
 *                id, idempotency key, dataset id), so state read afterwards
 *                is the truth.
 *   PG_EIO       any other backend failure (constraint, disk, corruption).
 *   PG_ENOMEM    allocation failed, or a read would exceed its byte cap.
 *   PG_EFORMAT   stored bytes fail their checks (CRC, length, width).
 *   PG_ERANGE    an append would exceed max_rows (nothing changed).
 *   PG_EINVAL    a malformed URL or id; PG_ENOTSUP at open: the schema is
 *                newer than this binary (refused, nothing touched).
 * Failed calls leave outputs untouched or freed: no cleanup after failure.
 *
 * Memory: strings in returned structs and arrays are malloc'ed and released
 * by the matching *_free; byte buffers are malloc'ed (free()); row payloads
 * (pg_block.x, .labels) are pg_alloc'ed (pg_block_free).
 *
 * Tenancy: every token, dataset and job carries a tenant id; dataset calls
 * that take a tenant treat a foreign id exactly like a missing one. Calls
 * made by the job layer after admission (jobs, ledger, checkpoints, rows)
 * take bare ids: the job row already fixed the tenant.
 *
 * Admission concurrency (pg_db_job_admit): the budget check and the charge
 * are one transaction that cannot interleave with another admission on the
 * same dataset. SQLite takes the database write lock first (BEGIN IMMEDIATE):
 * all writers serialize, which is what one embedded file allows anyway.
 * PostgreSQL locks the dataset's budget row (its datasets row, SELECT ... FOR
 * UPDATE) before reading the reserved ledger rows: admissions on one dataset
 * queue behind that lock (pg_db_dataset_delete takes it too) and each sees
 * every charge committed before it, with no serialization failures to retry
 * (SERIALIZABLE would abort and re-run whole admissions under contention);
 * admissions on other datasets proceed in parallel. Every other write is
 * one short transaction on its own rows.
 *
 * Durability: a call that returns PG_OK has committed (SQLite fsyncs the WAL
 * and every block/checkpoint file and directory before the row refers to it;
 * PostgreSQL commits with synchronous_commit on).
 */
#ifndef PG_SVC_DB_H
#define PG_SVC_DB_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/methods/method.h"
#include "service/block.h"
#include "service/ledger.h"

#define PG_ID_MAX 40
/* Longest node id + 1 (the shared job queue, below). */
#define PG_NODE_MAX 128

typedef struct pg_db pg_db;

/* ---- lifecycle -------------------------------------------------------- */

typedef struct pg_db_options {
    int pool_size;            /* PostgreSQL connections; <= 0: 8. SQLite: ignored */
    int statement_timeout_ms; /* per statement; <= 0: 30000. SQLite: ignored (5 s lock wait) */
    int connect_timeout_s;    /* PostgreSQL connect; <= 0: 5. SQLite: ignored */
    int ledger_cache_slots;   /* parsed ledger rows kept (service/ledger.h); 0: 4096; < 0: off */
} pg_db_options;

/* Opens the backend named by url (opt may be NULL for defaults), creating
 * and migrating its schema forward (PostgreSQL: under an advisory lock, so
 * replicas starting together do not race). A schema newer than this binary
 * is PG_ENOTSUP. SQLite drops idempotency reservations left by a crash once
 * they are stale (15 min: another process may share the file and still run
 * a younger one); the next begin on a stale key takes it over (both
 * backends). */
int pg_db_open(const char *url, const pg_db_options *opt, pg_db **out, pg_error *err);
void pg_db_close(pg_db *db);

/* "sqlite" or "postgres" (static string). */
const char *pg_db_backend(const pg_db *db);

/* Copy of url safe to log or show: a password (user:PASSWORD@ in the
 * authority, password=... in the query or as a libpq key=value word,
 * quoted or not) becomes "***". Always
 * NUL-terminates (truncating); returns 0, or -1 when truncated. */
int pg_db_url_redact(const char *url, char *out, size_t cap);

/* Migrations applied (the schema version this backend's data is at). */
int pg_db_schema_version(pg_db *db, int *version, pg_error *err);

/* Readiness: the backend answers a write transaction (SQLite: and its data
 * directory accepts a created, fsynced and removed file). PG_EUNAVAIL when
 * the server cannot be reached. */
int pg_db_probe(pg_db *db, pg_error *err);

typedef struct pg_db_gauges {
    int64_t datasets, rows, bytes;
} pg_db_gauges;
/* Storage gauges for /metrics (all datasets of all tenants). */
int pg_db_gauges_get(pg_db *db, pg_db_gauges *g, pg_error *err);

/* ---- tokens ----------------------------------------------------------- */

enum pg_scope { PG_SCOPE_READ = 1, PG_SCOPE_ADMIN = 2 };

typedef struct pg_token {
    int64_t seq; /* creation order, the pagination key (assigned at insert) */
    char id[PG_ID_MAX];
    char tenant[PG_ID_MAX];
    int scope; /* enum pg_scope */
    unsigned char hash[32];
    int64_t created_at;
    int64_t expires_at;   /* unix seconds; 0: never */
    int64_t revoked_at;   /* unix seconds; 0: not revoked */
    int64_t last_used_at; /* unix seconds, to the minute (pg_db_token_touch); 0: never */
    /* The token of the same tenant whose request minted this one ("":
     * none: the first start's token, one starting a new tenant (its minter
     * is checked, not recorded), or one inserted directly). */
    char minted_by[PG_ID_MAX];
} pg_token;

int pg_db_token_count(pg_db *db, int64_t *n, pg_error *err);
/* One transaction: creates tenant t->tenant when new_tenant, then the token
 * (t->seq and t->revoked_at are ignored; a token is born unrevoked). When
 * t->minted_by names a token, that token is read in the same transaction,
 * locked against a concurrent revoke (PostgreSQL: FOR SHARE, which a
 * revoke's UPDATE waits for; SQLite: BEGIN IMMEDIATE), and the insert is
 * refused with PG_ESTATE when it is unknown, revoked, or expired at
 * t->created_at: a revoke that has committed, through whatever replica,
 * stops its token minting at once, and a mint either commits before the
 * revoke or not at all. */
int pg_db_token_insert(pg_db *db, const pg_token *t, int new_tenant, pg_error *err);
/* The first start's token, race-free: one transaction serialized against
 * every other bootstrap on the same storage (PostgreSQL: a transaction
 * advisory lock; SQLite: BEGIN IMMEDIATE) stores t in a new tenant t->tenant
 * when no token exists at all (*created = 1, *first = *t). Otherwise, or
 * when t is NULL, it stores nothing (*created = 0) and *first is the oldest
 * admin token (*has_first = 0 when there is none). However many replicas
 * bootstrap at once on one empty database, exactly one creates. */
int pg_db_token_bootstrap(pg_db *db, const pg_token *t, int *created, pg_token *first,
                          int *has_first, pg_error *err);
/* Token by id, revoked or expired ones included (revoked_at, expires_at say
 * so: the caller decides, with its own clock). */
int pg_db_token_get(pg_db *db, const char *id, pg_token *out, int *found, pg_error *err);
/* Up to `limit` tokens of tenant with seq > after, oldest first, revoked
 * ones included; *out is a malloc'ed array (free()), NULL when count is 0. */
int pg_db_token_list(pg_db *db, const char *tenant, int64_t after, size_t limit, pg_token **out,
                     size_t *count, pg_error *err);
/* One transaction: marks token id of tenant revoked at `now` (a foreign or
 * unknown id: *found = 0). Revoking a revoked token changes nothing (PG_OK,
 * *found = 1). *last_admin = 1 (nothing changed) when id is the tenant's
 * last usable admin token: no other admin token of the tenant is unrevoked
 * and unexpired at `now`, so revoking it would lock the tenant out. The
 * check and the write cannot interleave with another revoke of the tenant
 * (two admins revoking each other at once: one of them is refused). */
int pg_db_token_revoke(pg_db *db, const char *tenant, const char *id, int64_t now, int *found,
                       int *last_admin, pg_error *err);
/* Records that token id was used at `now`, unless its last_used_at is less
 * than PG_TOKEN_TOUCH_S older (so a busy token costs one write a minute,
 * and replicas racing on it write once). */
#define PG_TOKEN_TOUCH_S 60
int pg_db_token_touch(pg_db *db, const char *id, int64_t now, pg_error *err);

/* ---- datasets --------------------------------------------------------- */

typedef struct pg_db_dataset {
    int64_t seq; /* creation order, the pagination key */
    char id[PG_ID_MAX];
    char tenant[PG_ID_MAX];
    char *name;
    char *meta; /* normalized JSON: shape, range, num_classes, privacy */
    int64_t d, n, blocks, bytes, created_at;
} pg_db_dataset;

/* Inserts d with n = blocks = bytes = 0; d->seq and d->created_at are
 * assigned and written back. Ids are [a-z0-9_]+, shorter than PG_ID_MAX
 * (PG_EINVAL otherwise); lookups and deletes treat a malformed id as not
 * found, appends and block reads refuse it (PG_EINVAL). */
int pg_db_dataset_insert(pg_db *db, pg_db_dataset *d, pg_error *err);
int pg_db_dataset_get(pg_db *db, const char *tenant, const char *id, pg_db_dataset *out, int *found,
                      pg_error *err);
/* Up to `limit` datasets of tenant with seq > after, oldest first; *out is a
 * malloc'ed array (pg_db_dataset_list_free), NULL when count is 0. */
int pg_db_dataset_list(pg_db *db, const char *tenant, int64_t after, size_t limit,
                       pg_db_dataset **out, size_t *count, pg_error *err);
void pg_db_dataset_free(pg_db_dataset *d);
void pg_db_dataset_list_free(pg_db_dataset *list, size_t count);
/* One transaction: deletes the dataset and its rows (blocks). Its ledger
 * rows and its jobs stay: they are the history of what was spent and run.
 * *conflict = 1 (nothing deleted) when a queued or running job reads it (as
 * its dataset or its public dataset). */
int pg_db_dataset_delete(pg_db *db, const char *tenant, const char *id, int *found, int *conflict,
                         pg_error *err);

/* ---- appending rows: a streaming, all-or-nothing append --------------- */

/* begin -> write ... -> commit | abort. Memory stays constant whatever the
 * size (values are spooled to a local file as they arrive: SQLite's block
 * file, PostgreSQL's unlinked temporary file in $TMPDIR). Nothing is visible
 * to any reader until commit returns PG_OK; commit and abort always end the
 * appender (it is freed, also on failure), and a failed commit or an abort
 * leaves the dataset exactly as before (no rows, n unchanged, no files).
 * Between begin and commit an appender holds no lock on the dataset, no
 * backend connection and no transaction (uploads may be slow or hostile:
 * they must not hold up admissions, deletes or the pool); the dataset's
 * existence, tenant and max_rows are checked, and n updated, inside
 * commit's transaction, the only time it uses a connection. */
typedef struct pg_db_append pg_db_append;

/* Starts an append of rows of width d (> 0) to dataset id of tenant. */
int pg_db_append_begin(pg_db *db, const char *tenant, const char *id, size_t d, pg_db_append **out,
                       pg_error *err);
/* Appends `count` float32 values, split across calls in any way. */
int pg_db_append_write(pg_db_append *a, const float *x, size_t count, pg_error *err);
/* Ends the values (their count must be a whole number of rows, else
 * PG_EINVAL), stores labels (one per row, or NULL for none) and, in one
 * transaction, records the block and adds its rows to the dataset's n.
 * PG_ERANGE when n would exceed max_rows; *found = 0 (PG_OK, nothing
 * stored) when the dataset vanished meanwhile. On success *rows is the
 * rows appended and *new_n the dataset's count after them; zero rows store
 * nothing (no empty block) and report the current count. */
int pg_db_append_commit(pg_db_append *a, const int32_t *labels, int64_t max_rows, int *found,
                        int64_t *rows, int64_t *new_n, pg_error *err);
void pg_db_append_abort(pg_db_append *a);

/* ---- reading rows ----------------------------------------------------- */

/* A snapshot of a dataset's committed blocks in append order: the block
 * list is fixed at open (blocks appended later are not seen). Each block is
 * verified (CRC, length, width) as it is read. */
typedef struct pg_db_blocks pg_db_blocks;

/* *count: blocks in the snapshot (0 for an unknown or empty dataset). */
int pg_db_blocks_open(pg_db *db, const char *dataset_id, pg_db_blocks **it, size_t *count,
                      pg_error *err);
/* The next block into *out (pg_block_free), or *end = 1 after the last.
 * PG_ENOMEM when the block's payload exceeds max_bytes. */
int pg_db_blocks_next(pg_db_blocks *it, size_t max_bytes, pg_block *out, int *end, pg_error *err);
void pg_db_blocks_close(pg_db_blocks *it);

/* Every committed row of a dataset in one contiguous pg_block (for the
 * trainers), each block checked to have width d. max_bytes caps the float
 * plus label payload loaded (PG_ENOMEM beyond). Labels are returned only
 * when every block carries them (else out->labels is NULL and
 * *all_labeled = 0). Backend-neutral: built on the block iterator. */
int pg_db_rows_load(pg_db *db, const char *dataset_id, size_t d, size_t max_bytes, pg_block *out,
                    int *all_labeled, pg_error *err);

/* One pass over the first n committed rows of a dataset (width d) in append
 * order, in chunks of at most `chunk` rows given to fn (engine/data/rowsrc.h)
 * with their labels when `labelled` (PG_EINVAL when a block has none; NULL
 * labels otherwise), for trainers that only accumulate (mst, aim). Memory is
 * one window of rows where the backend reads blocks in windows (SQLite),
 * else one block of at most max_bytes (PG_ENOMEM beyond). Blocks are
 * verified as they are read, so a corrupt one fails the pass (PG_EFORMAT)
 * after some of its rows were delivered: the caller discards the pass.
 * PG_ESTATE when the dataset holds fewer than n rows. */
int pg_db_rows_pass(pg_db *db, const char *dataset_id, size_t d, uint64_t n, int labelled,
                    size_t chunk, size_t max_bytes, pg_rowsrc_fn fn, void *ctx, pg_error *err);

/* ---- idempotency keys ------------------------------------------------- */

typedef struct pg_idem_response {
    int status;
    char *location; /* may be NULL */
    char *body;     /* NUL-terminated after body_len bytes */
    size_t body_len;
} pg_idem_response;

/* Keys belong to a token: (tenant, token id, key) names one key, so a
 * response replays only to the token whose request made it (another token
 * of the tenant, whatever its scope, reusing the key starts afresh and is
 * authorized as if it sent none).
 * One transaction classifies (tenant, token, key) and reserves it when new:
 * PG_IDEM_NEW (a placeholder is now reserved: call finish), PG_IDEM_REPLAY
 * (same fingerprint, *prev holds the stored response: pg_idem_free),
 * PG_IDEM_BUSY (same fingerprint, the first request is still running),
 * PG_IDEM_MISMATCH (the key was used with a different request). Two
 * concurrent begins on one key: exactly one sees PG_IDEM_NEW. */
enum pg_idem_state { PG_IDEM_NEW = 1, PG_IDEM_REPLAY, PG_IDEM_BUSY, PG_IDEM_MISMATCH };
int pg_db_idem_begin(pg_db *db, const char *tenant, const char *token, const char *key,
                     const unsigned char fp[32], int *state, pg_idem_response *prev, pg_error *err);
/* Stores the response of a reserved key (only a reservation is ever
 * overwritten), or releases the reservation when r is NULL. */
int pg_db_idem_finish(pg_db *db, const char *tenant, const char *token, const char *key,
                      const pg_idem_response *r, pg_error *err);
void pg_idem_free(pg_idem_response *r);

/* ---- jobs and the ledger ---------------------------------------------- */

/* The jobs rows are the durable truth of a job's state (service/jobs/jobs.c
 * mirrors them in memory). Every change that matters for privacy (queued ->
 * running: the data is about to be read; steps_reserved: the mechanism is
 * about to run that many times) is committed before the action it guards. */
typedef struct pg_job_row {
    int64_t seq;
    char id[PG_ID_MAX], tenant[PG_ID_MAX], dataset_id[PG_ID_MAX];
    char method[64];
    char status[16];                             /* queued running succeeded failed cancelled */
    char *spec;                                  /* resolved spec JSON */
    char *error;                                 /* NULL when none */
    int64_t created_at, started_at, finished_at; /* 0 when unset */
    int64_t step, steps_reserved, data_n;
    char public_dataset_id[PG_ID_MAX]; /* "" when the job reads no public data */
    int64_t public_n;                  /* its rows at submission */
    char owner[PG_NODE_MAX];           /* node holding or last holding its lease; "" none */
} pg_job_row;

/* Admission, one transaction (see "Admission concurrency" above): when
 * plan->charges, quotes plan against the reserved ledger rows of
 * job->dataset_id (pg_ledger_quote_plan, at cap_epsilon / cap_delta) and,
 * when it fits, inserts the job's ledger row (state reserved) and the job
 * row (status queued; job->seq, ->created_at and ->status written back).
 * A plan that does not charge skips the ledger: q->admit = 1 and only the
 * job row is inserted. A refusal (q->admit = 0) is PG_OK and writes
 * nothing; any error writes nothing either. job->dataset_id must name an
 * existing dataset (the row PostgreSQL locks): PG_ESTATE otherwise, e.g.
 * when it was deleted since the caller looked it up. */
int pg_db_job_admit(pg_db *db, pg_job_row *job, const pg_privacy_plan *plan, double cap_epsilon,
                    double cap_delta, struct pg_ledger_quote *q, pg_error *err);

/* One transaction: queued -> cancelled (finished now) and the job's ledger
 * row -> refunded (a job that never left the queue never read the data).
 * *done = 0 (nothing changed) when the job was not queued any more. */
int pg_db_job_cancel_queued(pg_db *db, const char *id, int *done, pg_error *err);

/* Every job of every tenant, oldest first (pg_job_rows_free). */
int pg_db_job_load_all(pg_db *db, pg_job_row **rows, size_t *count, pg_error *err);
void pg_job_rows_free(pg_job_row *rows, size_t count);
/* A running job's status, step (that of its latest checkpoint) and
 * steps_reserved (the write-ahead bound on mechanism invocations,
 * service/jobs/jobs.h) change only through its owner's fenced writes
 * (pg_db_job_patch_owned, "the shared job queue" below). */

/* One ledger row (all states), in admission order. plan is the stored
 * curve text of pg_ledger_plan_encode (decoded by pg_ledger_curve_add_encoded
 * and pg_ledger_budget_json). */
typedef struct pg_ledger_entry {
    int64_t seq; /* the row's identity (never reused) */
    char job_id[PG_ID_MAX];
    int refunded; /* 0: reserved (counts towards the spend) */
    char *plan;
    double epsilon, delta; /* the job alone, at the cap's delta */
} pg_ledger_entry;

/* Every ledger row of a dataset, oldest first (pg_ledger_entries_free). */
int pg_db_ledger_entries(pg_db *db, const char *dataset_id, pg_ledger_entry **out, size_t *count,
                         pg_error *err);
void pg_ledger_entries_free(pg_ledger_entry *e, size_t count);
/* The handle's ledger parse cache (service/ledger.h; NULL when
 * pg_db_options.ledger_cache_slots < 0). Owned by the handle. */
struct pg_ledger_cache *pg_db_ledger_cache(pg_db *db);

/* ---- checkpoints ------------------------------------------------------ */

typedef struct pg_ckpt_row {
    int64_t step, bytes, created_at;
} pg_ckpt_row;

/* A job's checkpoints are written and deleted by its owner only
 * (pg_db_ckpt_put_owned, pg_db_ckpt_delete_owned), and go with the job
 * (pg_db_job_delete). */
/* A job's checkpoints in step order; *rows malloc'ed (free()). */
int pg_db_ckpt_list(pg_db *db, const char *job, pg_ckpt_row **rows, size_t *count, pg_error *err);
/* One checkpoint's bytes (malloc'ed), verified against the stored length and
 * CRC (PG_EFORMAT on a mismatch). *found = 0 when there is none; PG_ENOMEM
 * when it is larger than max_bytes. */
int pg_db_ckpt_get(pg_db *db, const char *job, int64_t step, size_t max_bytes,
                   unsigned char **bytes, size_t *len, int *found, pg_error *err);

/* ---- job history and lifecycle ---------------------------------------- */

/* A job's durable view (progress, downsampled loss history, warnings,
 * privacy report, data geometry): one JSON document owned by the job layer
 * (service/jobs/jobs_hist.c), opaque to storage. The job layer's worker writes
 * it, fenced (pg_db_job_history_put_owned), at each checkpoint, every few
 * seconds between them and at the end, never per step. */
/* *doc malloc'ed (free()); *found = 0 when none was ever written. */
int pg_db_job_history_get(pg_db *db, const char *id, char **doc, int *found, pg_error *err);
/* One transaction: deletes a finished job's row, history, checkpoints and
 * quality reports (rows and figures). Its ledger row stays (privacy spent
 * is never given back once the data was read). *found = 0 for an unknown
 * job; *conflict = 1 (nothing deleted) while it is queued or running. SQLite removes the checkpoint
 * files after the commit (a crash in between leaves unreferenced files, never a row without its
 * file). */
int pg_db_job_delete(pg_db *db, const char *id, int *found, int *conflict, pg_error *err);
/* ---- the shared job queue: claims, leases, fenced writes -------------- */

/* Many replicas on one database share the jobs rows as their queue. A
 * replica (a node id: 1..PG_NODE_MAX-1 printable ASCII characters, e.g.
 * "host:port"; PG_EINVAL otherwise) claims a job and holds it under a lease
 * (jobs.owner, jobs.lease_until, seconds since the epoch) that heartbeats
 * renew. Every time is an argument: the backends read no clock for leases,
 * so callers (and tests) decide what "now" is.
 *
 * Runnable: status queued, or status running with no lease (released, or
 * run by a privgend older than the queue) or with lease_until <= now (its
 * owner died, hung or was cut off). A claim takes the oldest runnable job
 * (seq order) atomically: two concurrent claims never get the same job
 * (PostgreSQL: one UPDATE over SELECT ... FOR UPDATE SKIP LOCKED, so
 * claimers skip each other's rows instead of queueing on them; SQLite: the
 * whole claim inside BEGIN IMMEDIATE). It sets owner = node, lease_until =
 * now + lease_s, status running (started_at = now when it was queued: the
 * data is about to be read). A job claimed while running is a resume: its
 * row keeps step (the latest checkpoint) and steps_reserved.
 *
 * The fence: a write by a job's worker (pg_db_job_patch_owned,
 * pg_db_ckpt_put_owned, heartbeat, release) checks owner = node and status
 * running in the same transaction as the write, holding the job row's lock
 * (PostgreSQL: the UPDATE itself, or SELECT ... FOR UPDATE before a
 * checkpoint's rows; SQLite: BEGIN IMMEDIATE). A claim changes owner under
 * that same lock, so every worker write is ordered against the claim that
 * took the job away: before it (the new owner resumes from what it wrote)
 * or after it (refused, *held = 0, nothing changed). The fence compares
 * owners, not clocks: a replica whose lease ran out but that nobody has
 * claimed from yet may still write, and one whose clock is wrong cannot
 * write over its successor. A refused write means "stop this job now".
 * PostgreSQL bounds how long these transactions (and claims) may sit idle
 * holding the row (1 s): a replica stopped between two statements of one is
 * rolled back by the server; and a claim that finds nothing ends the
 * sessions that have held an expired job's row for over 2 s (a replica
 * stopped inside a statement), so the claim's SKIP LOCKED cannot pass its
 * job over for long after the lease ran out (service/store/pg/db_pg_queue.c).
 *
 * Privacy of a takeover: the ledger is charged once, by pg_db_job_admit; a
 * claim never touches the ledger, so a job resumed by another replica is
 * never charged again. It is never released more than its plan either,
 * provided the job layer keeps two rules: (1) it reserves steps only with
 * the fenced patch (steps_reserved), committed before it runs them, so the
 * mechanism invocations of all owners together stay within steps_reserved,
 * and a new owner runs at most plan steps - steps_reserved more; (2) what
 * leaves the service (snapshots, samples) only ever comes from a stored
 * checkpoint, and checkpoints are fenced too. A stale owner's work after
 * its last accepted write is computed but never released: it is as if it
 * had not happened, except for its invocations, which rule (1) already
 * counted. */
/* Claims the oldest runnable job for node; *out (pg_job_rows_free(*out, 1))
 * is its row after the claim. *found = 0 (PG_OK) when nothing is runnable.
 * lease_s > 0. */
int pg_db_job_claim(pg_db *db, const char *node, int64_t now, int64_t lease_s, pg_job_row **out,
                    int *found, pg_error *err);
/* lease_until = now + lease_s when node still owns the running job under a
 * lease; else *held = 0 and nothing changes (the lease was lost: stop the
 * job). A released job is not renewed: a late heartbeat never undoes a
 * release (nor a pg_db_job_release_node). */
int pg_db_job_heartbeat(pg_db *db, const char *id, const char *node, int64_t now, int64_t lease_s,
                        int *held, pg_error *err);
/* What pg_db_job_renew found for one job. */
enum {
    PG_LEASE_RENEWED = 0, /* lease_until = now + lease_s */
    PG_LEASE_LOST = 1,    /* not node's running leased job (as pg_db_job_heartbeat's *held = 0) */
    PG_LEASE_BUSY = 2     /* another transaction holds its row now: nothing changed, undecided */
};
/* A replica's heartbeat: renews the leases of ids[0..n-1] (as
 * pg_db_job_heartbeat, same fence) in one transaction, without waiting on a
 * row another transaction holds (PostgreSQL: the job's own checkpoint write
 * holds its row until it commits; a renewal that waited on it would delay
 * every other lease behind it). state[i] says what became of ids[i]; a
 * BUSY one is to be retried soon (its lease runs on meanwhile). SQLite
 * (one writer at a time) waits for the write lock and never answers BUSY.
 * An invalid id is LOST. On failure state is unspecified. */
int pg_db_job_renew(pg_db *db, const char *node, const char (*ids)[PG_ID_MAX], size_t n,
                    int64_t now, int64_t lease_s, int *state, pg_error *err);

/* Fenced changes of a running job, all in one statement. */
typedef struct pg_job_patch {
    int64_t now;            /* stamps updated_at, and started_at / finished_at */
    const char *status;     /* NULL: unchanged; a terminal one also ends the lease */
    int started, finished;  /* with status: stamp now */
    const char *error;      /* with status: the error text (NULL clears it) */
    int64_t step;           /* < 0: unchanged */
    int64_t steps_reserved; /* < 0: unchanged */
    int release;            /* end the lease (the job stays running, claimable at once) */
} pg_job_patch;
/* p applied when node owns the running job; else *held = 0, nothing changed. */
int pg_db_job_patch_owned(pg_db *db, const char *id, const char *node, const pg_job_patch *p,
                          int *held, pg_error *err);
/* The owner gives the job back (draining): its lease ends and another
 * replica claims it at once; owner stays, naming the node that last ran it. */
int pg_db_job_release(pg_db *db, const char *id, const char *node, int64_t now, int *held,
                      pg_error *err);
/* Stores a job's checkpoint at step (replacing one at the same step), with
 * crc = CRC-32 (zlib) of the bytes, durable when it returns; fenced: stored
 * only when node owns the running job (*held = 0 and no checkpoint, row or
 * file, written otherwise). */
int pg_db_ckpt_put_owned(pg_db *db, const char *job, const char *node, int64_t step,
                         const unsigned char *bytes, size_t len, uint32_t crc, int *held,
                         pg_error *err);

/* A job's history document (replacing the previous one), fenced: stored
 * only when node owns the running job (*held = 0, the previous document
 * untouched, otherwise). */
int pg_db_job_history_put_owned(pg_db *db, const char *id, const char *node, const char *doc,
                                int *held, pg_error *err);
/* A replica starting again under its node id (after a crash) gives back the
 * leases it still holds: those running jobs become claimable at once (by
 * itself or another replica) instead of when their leases run out.
 * *released: how many. Only for a node id no live process uses. */
int pg_db_job_release_node(pg_db *db, const char *node, int64_t now, int64_t *released,
                           pg_error *err);
/* Cancel of a running job, from any replica: marks the row (jobs.
 * cancel_requested); its owner sees it through pg_db_job_watch and ends the
 * job as cancelled with a fenced patch. *done = 0 (nothing changed) when the
 * job is not running. A running job is never refunded. A queued one is
 * cancelled (and refunded) with pg_db_job_cancel_queued instead. */
int pg_db_job_cancel_running(pg_db *db, const char *id, int64_t now, int *done, pg_error *err);
/* Read-only look at a job by its worker: *held = node owns the running job
 * (the fence's condition, no clock); *cancel = a cancel was requested. */
int pg_db_job_watch(pg_db *db, const char *id, const char *node, int *held, int *cancel,
                    pg_error *err);
/* Deletes one checkpoint of a job (retention by the job's worker), fenced:
 * deleted only when node owns the running job; *held = 0 and nothing
 * deleted otherwise. PG_OK with *held = 1 when there was no checkpoint at
 * step. */
int pg_db_ckpt_delete_owned(pg_db *db, const char *job, const char *node, int64_t step, int *held,
                            pg_error *err);
/* Queued rows of every tenant: the depth of the shared queue. */
int pg_db_job_queue_depth(pg_db *db, int64_t *queued, pg_error *err);
/* ---- reading jobs from any replica ------------------------------------ */

/* What a replica that does not run a job reads to show it (service/
 * jobs_sync.c). Plain reads: no lock is taken, nothing is written. */
/* A job's row (*row: pg_job_rows_free(*row, 1)) and its history document
 * (*doc malloc'ed, NULL when none was written yet), read in one statement
 * so the two agree. *found = 0 (outputs untouched) for an unknown id, and
 * for another tenant's when tenant is not NULL: the statement filters by
 * tenant, so both read nothing. */
int pg_db_job_get(pg_db *db, const char *tenant, const char *id, pg_job_row **row, char **doc,
                  int *found, pg_error *err);
/* Up to `limit` jobs of tenant with seq > after, oldest first; status and
 * dataset_id filter when non-NULL. *out: pg_job_rows_free(*out, *count),
 * NULL when count is 0. */
int pg_db_job_list(pg_db *db, const char *tenant, const char *status, const char *dataset_id,
                   int64_t after, size_t limit, pg_job_row **out, size_t *count, pg_error *err);
/* ---- quality reports (service/reports/reports.h) ------------------------------ */

/* A report row: the request as stored at creation (so it reproduces the
 * report), its state, and once it succeeded the JSON and the figure names.
 * The figures' PNG bytes are stored with it (report_figures): they are drawn
 * from the synthetic and reference rows, which the stored JSON does not hold,
 * so they cannot be re-rendered from it. Status: queued running succeeded
 * failed cancelled. A worker claims a report like a job (oldest runnable
 * first, one claimer wins) and every later write of the worker is
 * conditional on the report still being running, which is how a cancel
 * (any replica) reaches it. */
typedef struct pg_report_row {
    int64_t seq;
    char id[PG_ID_MAX], tenant[PG_ID_MAX], job_id[PG_ID_MAX], against_id[PG_ID_MAX];
    int against_model;  /* enum pg_svc_privacy_model of `against` at creation */
    int job_model;      /* the job dataset's, at creation (0: unknown) */
    double job_epsilon; /* the job's planned epsilon at creation (NaN: none) */
    int utility;        /* 1: utility figures when both sides have labels */
    int64_t against_n;  /* reference rows read: its count at creation */
    int64_t job_step;   /* snapshot step sampled */
    int64_t n, seed;    /* synthetic rows; seed 0..2^53-1 */
    char status[16];
    char stage[24];  /* engine stage while running; "" none */
    double progress; /* 0..1 */
    char *error;     /* NULL when none */
    char *result;    /* report JSON with its privacy marks; NULL until succeeded */
    char *figures;   /* JSON array of figure names; NULL until succeeded */
    int64_t created_at, started_at, finished_at, updated_at; /* 0 when unset */
} pg_report_row;

/* A figure: name ([a-z0-9_.-]+, < 64 characters) and PNG bytes. */
typedef struct pg_report_figure {
    char name[64];
    unsigned char *png;
    size_t len;
} pg_report_figure;

/* Inserts r as queued (r->seq written back; created_at as given) when fewer
 * than max_queued reports of all tenants are queued; else *full = 1 and
 * nothing is written. Check and insert are one transaction. */
int pg_db_report_insert(pg_db *db, pg_report_row *r, int64_t max_queued, int *full, pg_error *err);
/* Report id of tenant (a foreign id: *found = 0). Strings malloc'ed
 * (pg_report_rows_free(out, 1) releases them, not the struct). */
int pg_db_report_get(pg_db *db, const char *tenant, const char *id, pg_report_row *out, int *found,
                     pg_error *err);
/* Up to limit reports of tenant's job with seq > after, oldest first; only
 * those against public data when public_only (filtered in the query, so a
 * page is full). Without result and figures (NULL): a list stays small. */
int pg_db_report_list(pg_db *db, const char *tenant, const char *job_id, int public_only,
                      int64_t after, size_t limit, pg_report_row **out, size_t *count,
                      pg_error *err);
/* Claims the oldest queued report, or a running one not updated since
 * now - stale_s (its worker died): status running, stage "", progress 0,
 * started_at and updated_at now. Two claims never get the same report.
 * *found = 0 when none is runnable; *out (pg_report_rows_free(*out, 1) and
 * free) the claimed row. */
int pg_db_report_claim(pg_db *db, int64_t now, int64_t stale_s, pg_report_row **out, int *found,
                       pg_error *err);
/* Stage, progress and updated_at of a running report; *held = 0 (nothing
 * written) when it is not running any more (cancelled): stop. */
int pg_db_report_progress(pg_db *db, const char *id, const char *stage, double progress,
                          int64_t now, int *held, pg_error *err);
/* Ends a running report in one transaction: status (succeeded, failed, or
 * queued to give it back at shutdown), error, result, figures (names as
 * JSON array, bytes in figs[0..nfig-1]), finished_at = now unless queued.
 * *held = 0 and nothing written when it is not running any more. */
int pg_db_report_finish(pg_db *db, const char *id, const char *status, const char *error,
                        const char *result, const pg_report_figure *figs, size_t nfig, int64_t now,
                        int *held, pg_error *err);
/* queued or running -> cancelled (finished_at now). *found = 0 for a
 * foreign or unknown id; *done = 0 when it had already ended. */
int pg_db_report_cancel(pg_db *db, const char *tenant, const char *id, int64_t now, int *found,
                        int *done, pg_error *err);
/* One transaction: deletes report id of tenant with its figures. *found = 0
 * for a foreign or unknown id; *conflict = 1 (nothing deleted) while it is
 * running: cancel it first. A queued one is deleted before any worker can
 * claim it (the claim takes the same row lock, or on SQLite the same write
 * lock), so no worker ever starts on a deleted report. */
int pg_db_report_delete(pg_db *db, const char *tenant, const char *id, int *found, int *conflict,
                        pg_error *err);
/* One figure's bytes (malloc'ed); *found = 0 when there is none. PG_ENOMEM
 * beyond max_bytes. */
int pg_db_report_figure_get(pg_db *db, const char *id, const char *name, size_t max_bytes,
                            unsigned char **bytes, size_t *len, int *found, pg_error *err);
/* Frees the strings of count rows (and, for lists, the caller frees the
 * array). */
void pg_report_rows_free(pg_report_row *rows, size_t count);

#endif
