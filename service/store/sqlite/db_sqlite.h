/* service/store/sqlite/db_sqlite.h - internals shared by the SQLite backend's files
 * (db_sqlite.c: open, schema, idempotency; db_sqlite_tokens.c: tokens;
 * db_sqlite_rows.c: datasets, appends, blocks; db_sqlite_jobs.c: jobs, ledger,
 * checkpoints; db_sqlite_hist.c: job history documents, job and checkpoint
 * deletion).
 *
 * One connection guarded by one mutex: every op locks, runs its statements
 * (multi-statement writes inside sq_tx_begin ... sq_tx_end) and unlocks, so
 * an op never sees another's half-done transaction. Row blocks and
 * checkpoints are files under the database's directory; a file is always
 * complete and fsynced before a committed row refers to it, and removed when
 * its transaction does not commit.
 */
#ifndef PG_SVC_DB_SQLITE_H
#define PG_SVC_DB_SQLITE_H

#include <limits.h>
#include <pthread.h>
#include <sqlite3.h>

#include "service/store/db_backend.h"

typedef struct sq_db {
    pg_db base;
    pthread_mutex_t mu;
    sqlite3 *db;
    char dir[PATH_MAX / 2]; /* directory holding the database file */
} sq_db;

#define SQ(p) ((sq_db *)(void *)(p))

int64_t sq_now(void);
/* PG_EIO with "database error <what>: <sqlite message>". */
int sq_fail(sq_db *s, pg_error *err, const char *what);
int sq_exec(sq_db *s, const char *sql, pg_error *err);
int sq_prep(sq_db *s, const char *sql, sqlite3_stmt **st, pg_error *err);
/* Runs one statement that returns no rows (mu held), with text a bound to
 * ?1, text b to ?2 unless NULL, and n to ?3 when the statement has one;
 * the rows it changed into *changed (may be NULL; 0 on failure). */
int sq_run(sq_db *s, const char *sql, const char *a, const char *b, int64_t n, const char *what,
           int64_t *changed, pg_error *err);
/* Runs a statement that selects one integer (mu held), with n1 bound to
 * ?1 and n2 to ?2 where the statement has them: the first row's value into
 * *v. With found, no row sets *found to 0 and leaves *v; without, no row is
 * an error like any other. */
int sq_int(sq_db *s, const char *sql, int64_t n1, int64_t n2, const char *what, int64_t *v,
           int *found, pg_error *err);
/* Doubles the array whose pointer is at pv (*cap elements of size bytes;
 * 16 when *cap is 0) for a list read row by row. PG_ENOMEM ("out of memory
 * <what>") leaves the array and *cap as they were, still the caller's. */
int sq_grow(void *pv, size_t *cap, size_t size, const char *what, pg_error *err);

/* Reads one selected row into out; returns a status (err filled). */
typedef int (*sq_row_fn)(sqlite3_stmt *st, void *out, pg_error *err);
/* A tenant's row by id, under the lock: runs sql (parameters ?1 id, ?2
 * tenant); when it yields a row, read fills out and *found becomes 1; no
 * row leaves *found as it is. Returns read's status, or PG_EIO with
 * "database error <what>". */
int sq_get_by_id(sq_db *s, const char *sql, const char *id, const char *tenant, sq_row_fn read,
                 void *out, int *found, const char *what, pg_error *err);

/* Fills j (zeroed first) from a row selected with PG_DB_JOB_COLS; spec and
 * error are malloc'ed. Returns PG_ENOMEM (j's strings freed) when a copy
 * fails. */
int sq_job_row_read(sqlite3_stmt *st, pg_job_row *j, pg_error *err);
/* Transactions, s->mu held: sq_tx_begin opens BEGIN IMMEDIATE (the
 * database's write lock, so the statements that follow see no other
 * writer). sq_tx_end closes it with the op's status rc: COMMIT when rc is
 * PG_OK, ROLLBACK otherwise and when COMMIT fails; it returns rc, or
 * COMMIT's failure. rc = SQ_ROLLBACK rolls back a decision that writes
 * nothing (a refused admission, a write the fence refused) and returns
 * PG_OK, like pgb_tx's PGB_ROLLBACK. */
#define SQ_ROLLBACK 1001
int sq_tx_begin(sq_db *s, pg_error *err);
int sq_tx_end(sq_db *s, int rc, pg_error *err);

/* DIR/datasets/<id> and DIR/checkpoints/<job>/<step>.pgc. */
int sq_dataset_dir(const sq_db *s, const char *id, char *buf, size_t cap, pg_error *err);
int sq_ckpt_path(const sq_db *s, const char *job, int64_t step, char *buf, size_t cap,
                 pg_error *err);
int sq_fsync_dir(const char *dir);

/* The token migration (its SQL in one place, so its number can move): list
 * order (seq, from rowid for old rows), expiry, revocation and last use. */
#define SQ_MIGRATION_TOKENS                                                                        \
    "ALTER TABLE tokens ADD COLUMN seq INTEGER;"                                                   \
    "UPDATE tokens SET seq = rowid;"                                                               \
    "ALTER TABLE tokens ADD COLUMN expires_at INTEGER;"                                            \
    "ALTER TABLE tokens ADD COLUMN revoked_at INTEGER;"                                            \
    "ALTER TABLE tokens ADD COLUMN last_used_at INTEGER;"                                          \
    "UPDATE tokens SET revoked_at = created_at WHERE revoked <> 0 AND revoked_at IS NULL;"         \
    "CREATE UNIQUE INDEX IF NOT EXISTS tokens_seq ON tokens(seq);"                                 \
    "CREATE INDEX IF NOT EXISTS tokens_tenant ON tokens(tenant_id, seq);"

/* Ops of the other files. */
int sq_token_count(pg_db *db, int64_t *n, pg_error *err);
int sq_token_insert(pg_db *db, const pg_token *t, int new_tenant, pg_error *err);
int sq_token_bootstrap(pg_db *db, const pg_token *t, int *created, pg_token *first, int *has_first,
                       pg_error *err);
int sq_token_get(pg_db *db, const char *id, pg_token *out, int *found, pg_error *err);
int sq_token_list(pg_db *db, const char *tenant, int64_t after, size_t limit, pg_token **out,
                  size_t *count, pg_error *err);
int sq_token_revoke(pg_db *db, const char *tenant, const char *id, int64_t now, int *found,
                    int *last_admin, pg_error *err);
int sq_token_touch(pg_db *db, const char *id, int64_t now, pg_error *err);
int sq_dataset_insert(pg_db *db, pg_db_dataset *d, pg_error *err);
int sq_dataset_get(pg_db *db, const char *tenant, const char *id, pg_db_dataset *out, int *found,
                   pg_error *err);
int sq_dataset_list(pg_db *db, const char *tenant, int64_t after, size_t limit, pg_db_dataset **out,
                    size_t *count, pg_error *err);
int sq_dataset_delete(pg_db *db, const char *tenant, const char *id, int *found, int *conflict,
                      pg_error *err);
int sq_append_begin(pg_db *db, const char *tenant, const char *id, size_t d, pg_db_append **out,
                    pg_error *err);
int sq_append_write(pg_db_append *a, const float *x, size_t count, pg_error *err);
int sq_append_commit(pg_db_append *a, const int32_t *labels, int64_t max_rows, int *found,
                     int64_t *rows, int64_t *new_n, pg_error *err);
void sq_append_abort(pg_db_append *a);
int sq_blocks_open(pg_db *db, const char *dataset_id, pg_db_blocks **it, size_t *count,
                   pg_error *err);
int sq_blocks_next(pg_db_blocks *it, size_t max_bytes, pg_block *out, int *end, pg_error *err);
int sq_rows_pass(pg_db *db, const char *dataset_id, size_t d, uint64_t n, int labelled,
                 size_t chunk, pg_rowsrc_fn fn, void *ctx, pg_error *err);
void sq_blocks_close(pg_db_blocks *it);
int sq_gauges(pg_db *db, pg_db_gauges *g, pg_error *err);

int sq_job_admit(pg_db *db, pg_job_row *job, const pg_privacy_plan *plan, double cap_epsilon,
                 double cap_delta, struct pg_ledger_quote *q, pg_error *err);
int sq_job_cancel_queued(pg_db *db, const char *id, int *done, pg_error *err);
int sq_job_load_all(pg_db *db, pg_job_row **rows, size_t *count, pg_error *err);
int sq_ledger_entries(pg_db *db, const char *dataset_id, pg_ledger_entry **out, size_t *count,
                      pg_error *err);
int sq_ckpt_list(pg_db *db, const char *job, pg_ckpt_row **rows, size_t *count, pg_error *err);
int sq_ckpt_get(pg_db *db, const char *job, int64_t step, size_t max_bytes, unsigned char **bytes,
                size_t *len, int *found, pg_error *err);
int sq_job_history_get(pg_db *db, const char *id, char **doc, int *found, pg_error *err);
int sq_job_delete(pg_db *db, const char *id, int *found, int *conflict, pg_error *err);

/* db_sqlite_queue.c: the shared job queue. */
int sq_job_claim(pg_db *db, const char *node, int64_t now, int64_t lease_s, pg_job_row **out,
                 int *found, pg_error *err);
int sq_job_heartbeat(pg_db *db, const char *id, const char *node, int64_t now, int64_t lease_s,
                     int *held, pg_error *err);
int sq_job_patch_owned(pg_db *db, const char *id, const char *node, const pg_job_patch *p,
                       int *held, pg_error *err);
int sq_ckpt_put_owned(pg_db *db, const char *job, const char *node, int64_t step,
                      const unsigned char *bytes, size_t len, uint32_t crc, int *held,
                      pg_error *err);
int sq_job_history_put_owned(pg_db *db, const char *id, const char *node, const char *doc,
                             int *held, pg_error *err);
int sq_job_release_node(pg_db *db, const char *node, int64_t now, int64_t *released, pg_error *err);
int sq_job_cancel_running(pg_db *db, const char *id, int64_t now, int *done, pg_error *err);
int sq_job_watch(pg_db *db, const char *id, const char *node, int *held, int *cancel,
                 pg_error *err);
int sq_job_queue_depth(pg_db *db, int64_t *queued, pg_error *err);
int sq_ckpt_delete_owned(pg_db *db, const char *job, const char *node, int64_t step, int *held,
                         pg_error *err);

/* db_sqlite_jobread.c: reading jobs from any replica. */
int sq_job_get(pg_db *db, const char *tenant, const char *id, pg_job_row **row, char **doc,
               int *found, pg_error *err);
int sq_job_list(pg_db *db, const char *tenant, const char *status, const char *dataset_id,
                int64_t after, size_t limit, pg_job_row **out, size_t *count, pg_error *err);

/* db_sqlite_reports.c: quality reports. The migration's SQL in one place
 * (its number moves at merges). */
#define SQ_MIGRATION_REPORTS                                                                       \
    "CREATE TABLE reports(seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE,"         \
    " tenant_id TEXT NOT NULL, job_id TEXT NOT NULL, against_id TEXT NOT NULL,"                    \
    " against_model INTEGER NOT NULL, against_n INTEGER NOT NULL, job_step INTEGER NOT NULL,"      \
    " n INTEGER NOT NULL, seed INTEGER NOT NULL, status TEXT NOT NULL, stage TEXT,"                \
    " progress REAL NOT NULL DEFAULT 0, error TEXT, result TEXT, figures TEXT,"                    \
    " created_at INTEGER NOT NULL, started_at INTEGER, finished_at INTEGER,"                       \
    " updated_at INTEGER, job_model INTEGER NOT NULL DEFAULT 0, job_epsilon REAL, utility "        \
    "INTEGER NOT NULL DEFAULT 1);"                                                                 \
    "CREATE INDEX reports_job ON reports(tenant_id, job_id, seq);"                                 \
    "CREATE INDEX reports_active ON reports(seq) WHERE status IN ('queued','running');"            \
    "CREATE TABLE report_figures(report_id TEXT NOT NULL, name TEXT NOT NULL, png BLOB NOT NULL,"  \
    " PRIMARY KEY(report_id, name));"
int sq_report_insert(pg_db *db, pg_report_row *r, int64_t max_queued, int *full, pg_error *err);
int sq_report_get(pg_db *db, const char *tenant, const char *id, pg_report_row *out, int *found,
                  pg_error *err);
int sq_report_list(pg_db *db, const char *tenant, const char *job_id, int public_only,
                   int64_t after, size_t limit, pg_report_row **out, size_t *count, pg_error *err);
int sq_report_claim(pg_db *db, int64_t now, int64_t stale_s, pg_report_row **out, int *found,
                    pg_error *err);
int sq_report_progress(pg_db *db, const char *id, const char *stage, double progress, int64_t now,
                       int *held, pg_error *err);
int sq_report_finish(pg_db *db, const char *id, const char *status, const char *error,
                     const char *result, const pg_report_figure *figs, size_t nfig, int64_t now,
                     int *held, pg_error *err);
int sq_report_cancel(pg_db *db, const char *tenant, const char *id, int64_t now, int *found,
                     int *done, pg_error *err);
int sq_report_delete(pg_db *db, const char *tenant, const char *id, int *found, int *conflict,
                     pg_error *err);
int sq_report_figure_get(pg_db *db, const char *id, const char *name, size_t max_bytes,
                         unsigned char **bytes, size_t *len, int *found, pg_error *err);

#endif
