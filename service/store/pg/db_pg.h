/* service/store/pg/db_pg.h - the PostgreSQL backend of the storage contract.
 *
 * The public side is pg_db_postgres_open (registered for postgresql:// and
 * postgres:// in service/store/db.c); every operation then has exactly the
 * contract of its namesake in service/store/db.h. The rest of this header is
 * shared by the backend's files only (db_pg*.c).
 *
 * Layout: all state lives in the database, so any replica can serve any
 * request. Row blocks and checkpoints are chunked bytea rows of
 * at most PGB_CHUNK bytes, each block and checkpoint carrying the length,
 * CRC-32 and SHA-256 of its whole payload, which every read verifies.
 *
 * Transactions: every operation is one transaction on one pooled
 * connection (pgb_tx), rerun from the start on a serialization failure or
 * deadlock (PG_PGPOOL_RETRY; the statements are written so none is
 * expected). Appends are the exception (db_pg_rows.c): begin and write take
 * no connection, they spool the payload (hashing it as it comes) to an
 * unlinked temporary file, so a slow upload holds neither a pooled
 * connection nor an open transaction. The commit takes a connection and
 * runs one transaction, rerun from the spool like any other on a
 * serialization failure or deadlock (at most 8 attempts, then PG_EUNAVAIL,
 * nothing stored): the chunks go in under a fresh block id,
 * then the block gets its place (k) in the dataset under the dataset's row
 * lock (SELECT ... FOR UPDATE), so blocks are ordered by commit and
 * admissions and deletes wait only for that bookkeeping. An abort, a failed
 * commit or a lost connection leaves nothing stored (the connection's
 * release rolls back; the spool goes with its descriptor).
 * Admission locks the dataset's row (SELECT ... FOR UPDATE) before reading
 * the ledger: see "Admission concurrency" in service/store/db.h.
 *
 * Idempotency reservations: a reservation (status 0) older than
 * PGB_IDEM_STALE_S belongs to a request that died with its replica; the next
 * begin on that key takes it over. Reservations are never swept at open, as
 * other replicas may be serving theirs.
 */
#ifndef PG_SVC_DB_PG_H
#define PG_SVC_DB_PG_H

#include <libpq-fe.h>
#include <stdint.h>

#include "service/store/db_backend.h"
#include "service/store/pg/pgpool.h"

int pg_db_postgres_open(const char *url, const pg_db_options *opt, pg_db **out, pg_error *err);

/* ---- backend internals ------------------------------------------------ */

#define PGB_CHUNK        (1u << 20)
#define PGB_IDEM_STALE_S 900

typedef struct pgb {
    pg_db base;
    pg_pgpool *pool;
} pgb;
#define PGB(db) ((pgb *)(db))

/* Schema (db_pg_schema.c): migrates forward under an advisory lock. */
int pgb_migrate(PGconn *c, pg_error *err);
int pgb_schema_version(PGconn *c, int *version, pg_error *err);
extern const int PGB_SCHEMA_LATEST;
/* The token migration (its SQL in one place, so its number can move): list
 * order, expiry, revocation and last use. IF NOT EXISTS throughout: harmless if
 * it ever runs twice. */
#define PGB_MIGRATION_TOKENS                                                                       \
    "ALTER TABLE tokens ADD COLUMN IF NOT EXISTS seq bigint GENERATED ALWAYS AS IDENTITY;"         \
    "ALTER TABLE tokens ADD COLUMN IF NOT EXISTS expires_at bigint;"                               \
    "ALTER TABLE tokens ADD COLUMN IF NOT EXISTS revoked_at bigint;"                               \
    "ALTER TABLE tokens ADD COLUMN IF NOT EXISTS last_used_at bigint;"                             \
    "UPDATE tokens SET revoked_at = created_at WHERE revoked AND revoked_at IS NULL;"              \
    "CREATE INDEX IF NOT EXISTS tokens_tenant ON tokens(tenant_id, seq);"

/* The token that minted a token (db.h, pg_token.minted_by), and
 * idempotency keys owned by a token (tenant, token, key): a key's response
 * replays only to the token that made it. Keys stored before (token '')
 * never match again: a retry across this upgrade runs afresh. */
#define PGB_MIGRATION_OWNERS                                                                       \
    "ALTER TABLE tokens ADD COLUMN IF NOT EXISTS minted_by text;"                                  \
    "ALTER TABLE idempotency ADD COLUMN IF NOT EXISTS token_id text NOT NULL DEFAULT '';"          \
    "ALTER TABLE idempotency DROP CONSTRAINT idempotency_pkey;"                                    \
    "ALTER TABLE idempotency ADD PRIMARY KEY (tenant_id, token_id, key);"

/* Statement parameters, passed in text format except bytea (binary). */
#define PGB_MAXARGS 16
typedef struct pgb_args {
    int n;
    const char *v[PGB_MAXARGS];
    int len[PGB_MAXARGS], fmt[PGB_MAXARGS];
    char num[PGB_MAXARGS][32];
} pgb_args;
void pgb_text(pgb_args *a, const char *s); /* NULL: SQL NULL */
void pgb_i64(pgb_args *a, int64_t x);
void pgb_f64(pgb_args *a, double x);
void pgb_bin(pgb_args *a, const void *p, size_t n);
/* A list page's LIMIT: the caller's limit, at most PGB_PAGE_MAX rows (the
 * service asks for far fewer; the cap bounds one result in memory). */
#define PGB_PAGE_MAX 100000
void pgb_limit(pgb_args *a, size_t limit);

/* Runs sql; results are binary (read them with the pgb_*_at helpers).
 * *out (tuples) is the caller's to PQclear; with out NULL the result is
 * checked as a command and cleared. */
int pgb_q(PGconn *c, const char *sql, const pgb_args *a, const char *what, PGresult **out,
          pg_error *err);
int64_t pgb_i64_at(const PGresult *r, int row, int col); /* int2/4/8, bool; NULL: 0 */
double pgb_f64_at(const PGresult *r, int row, int col);  /* float8 */
void pgb_str_at(const PGresult *r, int row, int col, char *dst, size_t cap);
char *pgb_dup_at(const PGresult *r, int row, int col); /* NULL for SQL NULL */

/* fn inside BEGIN ... COMMIT on a pooled connection, rerun on
 * PG_PGPOOL_RETRY. fn returning PGB_ROLLBACK rolls back and yields PG_OK
 * (a decision that writes nothing, e.g. a refused admission). */
#define PGB_ROLLBACK 1001
typedef int (*pgb_fn)(PGconn *c, void *ctx, pg_error *err);
int pgb_tx(pgb *b, pgb_fn fn, void *ctx, pg_error *err);

/* Transactions that lock a job row (the queue's claim, fenced writes,
 * heartbeats, releases, cancels; job updates and the queued cancel). A client that stops between
 * two of its statements (SIGSTOP, a hung VM, a cut network) would leave its session idle in
 * transaction holding that lock, and the claim's SKIP LOCKED would pass the job over until the
 * server noticed the dead peer (TCP keepalive: hours). So the server ends such a session after 1000
 * ms idle in the transaction and rolls it back: an expired lease is then taken over at most that
 * much later, and the stalled writer's statements never land (rolled back before the claim can lock
 * the row; on waking its next statement fails, the worker retries on a new connection and the fence
 * refuses it). A client stopped inside a statement is not idle: the claim ends that one
 * (pgb_job_claim, db_pg_queue.c). A healthy client is idle in these transactions only for a
 * round trip, so 1 s is far above it, and below the shortest lease the
 * flags accept (2 s, service/config.c). A healthy writer that is cut off
 * anyway gets PG_EUNAVAIL and retries like after any lost connection. */
int pgb_tx_row(pgb *b, pgb_fn fn, void *ctx, pg_error *err);
/* fn on a pooled connection without BEGIN/COMMIT, not rerun: for single
 * statements (token verification reads one token on every request, so it
 * saves the round trips) and for fn that runs its own transaction (the
 * migrations, under their advisory lock). A conflict (PG_PGPOOL_RETRY) is
 * PG_EUNAVAIL here. */
int pgb_with_conn(pgb *b, pgb_fn fn, void *ctx, pg_error *err);

int64_t pgb_now(void);
uint32_t pgb_crc32(uint32_t crc, const void *p, size_t n);

/* Areas (db_pg_tokens.c, db_pg_rows.c, db_pg_jobs.c): ops table entries. */
int pgb_token_count(pg_db *db, int64_t *n, pg_error *err);
int pgb_token_insert(pg_db *db, const pg_token *t, int new_tenant, pg_error *err);
int pgb_token_bootstrap(pg_db *db, const pg_token *t, int *created, pg_token *first, int *has_first,
                        pg_error *err);
int pgb_token_get(pg_db *db, const char *id, pg_token *out, int *found, pg_error *err);
int pgb_token_list(pg_db *db, const char *tenant, int64_t after, size_t limit, pg_token **out,
                   size_t *count, pg_error *err);
int pgb_token_revoke(pg_db *db, const char *tenant, const char *id, int64_t now, int *found,
                     int *last_admin, pg_error *err);
int pgb_token_touch(pg_db *db, const char *id, int64_t now, pg_error *err);
int pgb_dataset_insert(pg_db *db, pg_db_dataset *d, pg_error *err);
int pgb_dataset_get(pg_db *db, const char *tenant, const char *id, pg_db_dataset *out, int *found,
                    pg_error *err);
int pgb_dataset_list(pg_db *db, const char *tenant, int64_t after, size_t limit,
                     pg_db_dataset **out, size_t *count, pg_error *err);
int pgb_dataset_delete(pg_db *db, const char *tenant, const char *id, int *found, int *conflict,
                       pg_error *err);
int pgb_gauges(pg_db *db, pg_db_gauges *g, pg_error *err);
int pgb_append_begin(pg_db *db, const char *tenant, const char *id, size_t d, pg_db_append **out,
                     pg_error *err);
int pgb_append_write(pg_db_append *a, const float *x, size_t count, pg_error *err);
int pgb_append_commit(pg_db_append *a, const int32_t *labels, int64_t max_rows, int *found,
                      int64_t *rows, int64_t *new_n, pg_error *err);
void pgb_append_abort(pg_db_append *a);
int pgb_blocks_open(pg_db *db, const char *dataset_id, pg_db_blocks **it, size_t *count,
                    pg_error *err);
int pgb_blocks_next(pg_db_blocks *it, size_t max_bytes, pg_block *out, int *end, pg_error *err);
int pgb_rows_pass(pg_db *db, const char *dataset_id, size_t d, uint64_t n, int labelled,
                  size_t chunk, pg_rowsrc_fn fn, void *ctx, pg_error *err);
void pgb_blocks_close(pg_db_blocks *it);

int pgb_job_admit(pg_db *db, pg_job_row *job, const pg_privacy_plan *plan, double cap_epsilon,
                  double cap_delta, struct pg_ledger_quote *q, pg_error *err);
int pgb_job_cancel_queued(pg_db *db, const char *id, int *done, pg_error *err);
int pgb_job_load_all(pg_db *db, pg_job_row **rows, size_t *count, pg_error *err);
/* PG_DB_JOB_COLS (db_backend.h) qualified by the alias j. */
#define PGB_JOB_COLS_J                                                                             \
    "j.seq, j.id, j.tenant_id, j.dataset_id, j.method, j.status, j.spec, j.error, "                \
    "j.created_at, j.started_at, j.finished_at, j.step, j.steps_reserved, j.data_n, "              \
    "j.public_dataset_id, j.public_n, j.owner"
/* Row i of a result selected with PG_DB_JOB_COLS into *j (zeroed first; its
 * strings malloc'ed, released by pg_job_rows_free). PG_ENOMEM leaves no
 * allocation behind. The one reader of a job row: load-all, claim and the
 * replica reads share it. */
int pgb_job_row_at(const PGresult *r, int i, pg_job_row *j, pg_error *err);
int pgb_ledger_entries(pg_db *db, const char *dataset_id, pg_ledger_entry **out, size_t *count,
                       pg_error *err);
int pgb_ckpt_list(pg_db *db, const char *job, pg_ckpt_row **rows, size_t *count, pg_error *err);
int pgb_ckpt_get(pg_db *db, const char *job, int64_t step, size_t max_bytes, unsigned char **bytes,
                 size_t *len, int *found, pg_error *err);
int pgb_job_history_get(pg_db *db, const char *id, char **doc, int *found, pg_error *err);
int pgb_job_delete(pg_db *db, const char *id, int *found, int *conflict, pg_error *err);
/* A checkpoint's rows inside the caller's transaction (db_pg_jobs.c). */
int pgb_ckpt_write(PGconn *c, const char *job, int64_t step, const unsigned char *bytes, size_t len,
                   uint32_t crc, pg_error *err);

/* db_pg_queue.c: the shared job queue. */
int pgb_job_claim(pg_db *db, const char *node, int64_t now, int64_t lease_s, pg_job_row **out,
                  int *found, pg_error *err);
int pgb_job_renew(pg_db *db, const char *node, const char (*ids)[PG_ID_MAX], size_t n, int64_t now,
                  int64_t lease_s, int *state, pg_error *err);
int pgb_job_heartbeat(pg_db *db, const char *id, const char *node, int64_t now, int64_t lease_s,
                      int *held, pg_error *err);
int pgb_job_patch_owned(pg_db *db, const char *id, const char *node, const pg_job_patch *p,
                        int *held, pg_error *err);
int pgb_ckpt_put_owned(pg_db *db, const char *job, const char *node, int64_t step,
                       const unsigned char *bytes, size_t len, uint32_t crc, int *held,
                       pg_error *err);
int pgb_job_history_put_owned(pg_db *db, const char *id, const char *node, const char *doc,
                              int *held, pg_error *err);
int pgb_job_release_node(pg_db *db, const char *node, int64_t now, int64_t *released,
                         pg_error *err);
int pgb_job_cancel_running(pg_db *db, const char *id, int64_t now, int *done, pg_error *err);
int pgb_job_watch(pg_db *db, const char *id, const char *node, int *held, int *cancel,
                  pg_error *err);
int pgb_job_queue_depth(pg_db *db, int64_t *queued, pg_error *err);
int pgb_ckpt_delete_owned(pg_db *db, const char *job, const char *node, int64_t step, int *held,
                          pg_error *err);

/* db_pg_jobread.c: reading jobs from any replica. */
int pgb_job_get(pg_db *db, const char *tenant, const char *id, pg_job_row **row, char **doc,
                int *found, pg_error *err);
int pgb_job_list(pg_db *db, const char *tenant, const char *status, const char *dataset_id,
                 int64_t after, size_t limit, pg_job_row **out, size_t *count, pg_error *err);

/* db_pg_reports.c: quality reports. The migration's SQL in one place (its
 * number moves at merges). */
#define PGB_MIGRATION_REPORTS                                                                      \
    "CREATE TABLE IF NOT EXISTS reports(seq bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,"      \
    " id text NOT NULL UNIQUE, tenant_id text NOT NULL, job_id text NOT NULL,"                     \
    " against_id text NOT NULL, against_model integer NOT NULL, against_n bigint NOT NULL,"        \
    " job_step bigint NOT NULL, n bigint NOT NULL, seed bigint NOT NULL, status text NOT NULL,"    \
    " stage text, progress double precision NOT NULL DEFAULT 0, error text, result text,"          \
    " figures text, created_at bigint NOT NULL, started_at bigint, finished_at bigint,"            \
    " updated_at bigint, job_model integer NOT NULL DEFAULT 0, job_epsilon double precision, "     \
    "utility integer NOT NULL DEFAULT 1);"                                                         \
    "CREATE INDEX IF NOT EXISTS reports_job ON reports(tenant_id, job_id, seq);"                   \
    "CREATE INDEX IF NOT EXISTS reports_active ON reports(seq)"                                    \
    " WHERE status IN ('queued','running');"                                                       \
    "CREATE TABLE IF NOT EXISTS report_figures(report_id text NOT NULL, name text NOT NULL,"       \
    " png bytea NOT NULL, PRIMARY KEY (report_id, name));"                                         \
    "ALTER TABLE report_figures ALTER COLUMN png SET STORAGE EXTERNAL;"
int pgb_report_insert(pg_db *db, pg_report_row *r, int64_t max_queued, int *full, pg_error *err);
int pgb_report_get(pg_db *db, const char *tenant, const char *id, pg_report_row *out, int *found,
                   pg_error *err);
int pgb_report_list(pg_db *db, const char *tenant, const char *job_id, int public_only,
                    int64_t after, size_t limit, pg_report_row **out, size_t *count, pg_error *err);
int pgb_report_claim(pg_db *db, int64_t now, int64_t stale_s, pg_report_row **out, int *found,
                     pg_error *err);
int pgb_report_progress(pg_db *db, const char *id, const char *stage, double progress, int64_t now,
                        int *held, pg_error *err);
int pgb_report_finish(pg_db *db, const char *id, const char *status, const char *error,
                      const char *result, const pg_report_figure *figs, size_t nfig, int64_t now,
                      int *held, pg_error *err);
int pgb_report_cancel(pg_db *db, const char *tenant, const char *id, int64_t now, int *found,
                      int *done, pg_error *err);
int pgb_report_delete(pg_db *db, const char *tenant, const char *id, int *found, int *conflict,
                      pg_error *err);
int pgb_report_figure_get(pg_db *db, const char *id, const char *name, size_t max_bytes,
                          unsigned char **bytes, size_t *len, int *found, pg_error *err);

#endif
