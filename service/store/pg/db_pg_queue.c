/* service/store/pg/db_pg_queue.c - the PostgreSQL backend's shared job queue:
 * claims, heartbeats and fenced writes (service/store/db.h). The jobs_active
 * partial index (seq of queued and running jobs) keeps the claim's scan
 * short however long the job history grows. */
#include <stdlib.h>
#include <string.h>

#include "service/store/pg/db_pg.h"

typedef struct q_ctx {
    const char *sql, *what;
    pgb_args a;
    int hit;         /* the statement matched a row */
    pg_job_row *row; /* claim: the claimed row */
    const char *job; /* ckpt: */
    int64_t step;
    const unsigned char *bytes;
    size_t len;
    uint32_t crc;
} q_ctx;

/* Every transaction here locks a job row: pgb_tx_row (db_pg.h) bounds how
 * long a stalled client can hold it. */

/* The oldest runnable row, locked, skipping rows other claimers (or fenced
 * writers) hold: concurrent claims each get a different row, none waits. */
static const char CLAIM_SQL[] =
    "UPDATE jobs SET owner = $2, lease_until = $1::bigint + $3::bigint, updated_at = $1::bigint, "
    "started_at = CASE WHEN status = 'queued' THEN $1::bigint ELSE started_at END, "
    "status = 'running' "
    "WHERE seq = (SELECT seq FROM jobs WHERE status = 'queued' OR (status = 'running' AND "
    "(lease_until IS NULL OR lease_until <= $1::bigint)) ORDER BY seq LIMIT 1 FOR UPDATE SKIP "
    "LOCKED) "
    "RETURNING " PG_DB_JOB_COLS;

static int claim_fn(PGconn *c, void *ctx, pg_error *err)
{
    q_ctx *x = ctx;
    PGresult *r;
    int rc = pgb_q(c, CLAIM_SQL, &x->a, "claiming a job", &r, err);
    if (rc) return rc;
    pg_job_rows_free(x->row, x->row ? 1 : 0);
    x->row = NULL;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return PG_OK;
    }
    pg_job_row *j = x->row = calloc(1, sizeof *j);
    if (!j) {
        PQclear(r);
        return pg_error_set(err, PG_ENOMEM, "out of memory claiming a job");
    }
    rc = pgb_job_row_at(r, 0, j, err);
    PQclear(r);
    /* Failing here rolls the claim back: the job stays runnable. */
    return rc;
}

/* A job whose lease ran out while a session still holds its row: the
 * claim's SKIP LOCKED passes it over for as long as that session lives.
 * The idle-in-transaction bound (pgb_tx_row) ends a holder stopped between
 * two statements, but not one stopped *inside* a statement: a client frozen
 * in the middle of sending a message (libpq writes a long one in pieces, and
 * a SIGSTOP, a hung VM or a cut network can fall between two of them; the
 * checkpoint chunks no longer go in under the row lock, see put_owned_fn,
 * but the job history document does) leaves its backend reading the rest
 * of the message, which neither idle_in_transaction_session_timeout nor
 * statement_timeout interrupts (PostgreSQL holds query cancels while it
 * reads a message), and one waiting on a lock is released only by the
 * 30 s statement_timeout. So a claimer that found nothing ends such
 * holders itself: the sessions whose transaction holds (xmax) the row of a
 * running job whose lease ran out by the claimer's clock, and began more
 * than PGB_ROW_STUCK_S ago (a healthy holder of a job row commits in
 * milliseconds; one that outlives its lease that long has lost it by the
 * queue's rules). pg_terminate_backend rolls its transaction back, so
 * nothing it sent lands; its replica, if it wakes, finds its connection
 * gone, retries and is refused by the fence. The holder is named by its
 * xid (backend_xid = the row's xmax: every job-row locker here takes the
 * row alone, so xmax is a plain xid, never a multixact). Ending another
 * session of the same role needs no privilege beyond it (a different role
 * needs pg_signal_backend: then this fails with SQLSTATE 42501 and the
 * claim reports it). */
#define PGB_ROW_STUCK_S "2"
static const char REAP_SQL[] =
    "SELECT count(pg_terminate_backend(a.pid)) FROM jobs j JOIN pg_stat_activity a ON "
    "a.backend_xid = j.xmax WHERE j.status = 'running' AND j.lease_until <= $1::bigint AND "
    "a.datname = current_database() AND a.pid <> pg_backend_pid() AND "
    "a.xact_start < now() - interval '" PGB_ROW_STUCK_S " s'";

static int reap_fn(PGconn *c, void *ctx, pg_error *err)
{
    q_ctx *x = ctx;
    PGresult *r;
    int rc =
        pgb_q(c, REAP_SQL, &x->a, "ending a stalled session that holds an expired job", &r, err);
    if (rc) return rc;
    x->hit = PQntuples(r) == 1 && pgb_i64_at(r, 0, 0) > 0;
    PQclear(r);
    return PG_OK;
}

int pgb_job_claim(pg_db *db, const char *node, int64_t now, int64_t lease_s, pg_job_row **out,
                  int *found, pg_error *err)
{
    q_ctx x = {0};
    pgb_i64(&x.a, now);
    pgb_text(&x.a, node);
    pgb_i64(&x.a, lease_s);
    int rc = pgb_tx_row(PGB(db), claim_fn, &x, err);
    if (rc) {
        pg_job_rows_free(x.row, x.row ? 1 : 0);
        return rc;
    }
    *out = x.row;
    *found = x.row != NULL;
    if (x.row) return PG_OK;
    /* Nothing claimable: end the stalled holders of expired jobs; the next
     * claim (the worker's next poll) takes their jobs once their backends
     * are gone. */
    q_ctx y = {0};
    pgb_i64(&y.a, now);
    return pgb_with_conn(PGB(db), reap_fn, &y, err);
}

/* A fenced UPDATE ... RETURNING 1: x->hit says whether the fence held. */
static int fenced_fn(PGconn *c, void *ctx, pg_error *err)
{
    q_ctx *x = ctx;
    PGresult *r;
    int rc = pgb_q(c, x->sql, &x->a, x->what, &r, err);
    if (rc) return rc;
    x->hit = PQntuples(r) == 1;
    PQclear(r);
    return PG_OK;
}

int pgb_job_heartbeat(pg_db *db, const char *id, const char *node, int64_t now, int64_t lease_s,
                      int *held, pg_error *err)
{
    q_ctx x = {
        .sql = "UPDATE jobs SET lease_until = $3::bigint + $4::bigint WHERE id = $1 AND owner = $2 "
               "AND status = 'running' AND lease_until IS NOT NULL RETURNING 1",
        .what = "renewing a lease"};
    pgb_text(&x.a, id);
    pgb_text(&x.a, node);
    pgb_i64(&x.a, now);
    pgb_i64(&x.a, lease_s);
    int rc = pgb_tx_row(PGB(db), fenced_fn, &x, err);
    *held = !rc && x.hit;
    return rc;
}

/* The replica's heartbeat, one transaction for all its jobs. Renewing a
 * lease locks the job's row, and a row another transaction holds (above
 * all this replica's own checkpoint write, which holds its job's row from
 * the fence to the commit) would make a plain UPDATE wait, and with it
 * every lease renewed after it. So the renewal locks only the rows it can
 * take now (FOR UPDATE SKIP LOCKED) and renews those, under their lock and
 * behind the same fence as pgb_job_heartbeat (owner, running, leased). The
 * rows it skipped are then read without locking (their last committed
 * state): still ours, they were busy (undecided, nothing changed: the
 * caller retries soon); not ours any more (taken over, ended, released),
 * the lease is lost. A row whose holder commits between the two statements
 * is read as it is after that commit, which is the verdict the next
 * attempt would give. */
typedef struct renew_ctx {
    pgb_args a, b; /* the renewal's, the read's */
    const char (*ids)[PG_ID_MAX];
    size_t n;
    int *state;
} renew_ctx;

/* The ids named by r's first column, still PG_LEASE_LOST, become mark. */
static void mark_ids(const PGresult *r, const renew_ctx *x, int mark)
{
    for (int t = 0; t < PQntuples(r); t++) {
        const char *id = PQgetvalue(r, t, 0);
        for (size_t i = 0; i < x->n; i++)
            if (x->state[i] == PG_LEASE_LOST && !strcmp(x->ids[i], id)) x->state[i] = mark;
    }
}

static int renew_fn(PGconn *c, void *ctx, pg_error *err)
{
    renew_ctx *x = ctx;
    for (size_t i = 0; i < x->n; i++) x->state[i] = PG_LEASE_LOST;
    PGresult *r;
    int rc = pgb_q(c,
                   "UPDATE jobs SET lease_until = $3::bigint + $4::bigint WHERE seq IN "
                   "(SELECT seq FROM jobs WHERE id = ANY($1::text[]) AND owner = $2 AND "
                   "status = 'running' AND lease_until IS NOT NULL FOR UPDATE SKIP LOCKED) "
                   "AND owner = $2 AND status = 'running' AND lease_until IS NOT NULL "
                   "RETURNING id",
                   &x->a, "renewing leases", &r, err);
    if (rc) return rc;
    size_t renewed = (size_t)PQntuples(r);
    mark_ids(r, x, PG_LEASE_RENEWED);
    PQclear(r);
    if (renewed == x->n) return PG_OK;
    rc = pgb_q(c,
               "SELECT id FROM jobs WHERE id = ANY($1::text[]) AND owner = $2 AND "
               "status = 'running' AND lease_until IS NOT NULL",
               &x->b, "reading leases held elsewhere", &r, err);
    if (rc) return rc;
    /* Ours by the committed state yet not renewed: another transaction
     * holds the row right now. */
    mark_ids(r, x, PG_LEASE_BUSY);
    PQclear(r);
    return PG_OK;
}

int pgb_job_renew(pg_db *db, const char *node, const char (*ids)[PG_ID_MAX], size_t n, int64_t now,
                  int64_t lease_s, int *state, pg_error *err)
{
    /* ids are [a-z0-9_] (checked by the caller): a plain array literal. */
    char *list = malloc(n * (PG_ID_MAX + 1) + 3);
    if (!list) return pg_error_set(err, PG_ENOMEM, "out of memory renewing leases");
    size_t k = 0;
    list[k++] = '{';
    for (size_t i = 0; i < n; i++) {
        if (i) list[k++] = ',';
        size_t l = strlen(ids[i]);
        memcpy(list + k, ids[i], l);
        k += l;
    }
    list[k++] = '}';
    list[k] = '\0';
    renew_ctx x = {.ids = ids, .n = n, .state = state};
    pgb_text(&x.a, list);
    pgb_text(&x.a, node);
    pgb_i64(&x.a, now);
    pgb_i64(&x.a, lease_s);
    pgb_text(&x.b, list);
    pgb_text(&x.b, node);
    int rc = pgb_tx_row(PGB(db), renew_fn, &x, err);
    free(list);
    return rc;
}

static int terminal(const char *status)
{
    return status && (!strcmp(status, "succeeded") || !strcmp(status, "failed") ||
                      !strcmp(status, "cancelled"));
}

int pgb_job_patch_owned(pg_db *db, const char *id, const char *node, const pg_job_patch *p,
                        int *held, pg_error *err)
{
    q_ctx x = {
        .sql = "UPDATE jobs SET updated_at = $3, status = coalesce($4::text, status), "
               "error = CASE WHEN $4::text IS NULL THEN error ELSE $5::text END, "
               "started_at = CASE WHEN $4::text IS NOT NULL AND $6 THEN $3 ELSE started_at END, "
               "finished_at = CASE WHEN $4::text IS NOT NULL AND $7 THEN $3 "
               "ELSE finished_at END, "
               "step = CASE WHEN $8::bigint >= 0 THEN $8::bigint ELSE step END, "
               "steps_reserved = CASE WHEN $9::bigint >= 0 THEN $9::bigint "
               "ELSE steps_reserved END, "
               "lease_until = CASE WHEN $10 THEN NULL ELSE lease_until END "
               "WHERE id = $1 AND owner = $2 AND status = 'running' RETURNING 1",
        .what = "updating an owned job"};
    pgb_text(&x.a, id);
    pgb_text(&x.a, node);
    pgb_i64(&x.a, p->now);
    pgb_text(&x.a, p->status);
    pgb_text(&x.a, p->error);
    pgb_text(&x.a, p->started ? "true" : "false");
    pgb_text(&x.a, p->finished ? "true" : "false");
    pgb_i64(&x.a, p->step);
    pgb_i64(&x.a, p->steps_reserved);
    pgb_text(&x.a, p->release || terminal(p->status) ? "true" : "false");
    int rc = pgb_tx_row(PGB(db), fenced_fn, &x, err);
    *held = !rc && x.hit;
    return rc;
}

/* A checkpoint write takes its job's row only at its end. The bytes (up to
 * CKPT_MAX_BYTES, in PGB_CHUNK pieces) can take longer than a lease to go
 * in, and a write that held the row from its start kept the heartbeat off
 * it (the renewal skips held rows) for all that time: the lease ran out
 * under a healthy write, another replica's claim ended the writer's session
 * as a stalled holder and took the job over, so the write was lost, and a
 * job whose every checkpoint outlasts a lease never got past one. So the
 * chunks and the checkpoint row go in first, with no lock on the job row
 * (the heartbeat keeps renewing the lease meanwhile; a plain read of the
 * fence first spares the work when the job is no longer ours), and the
 * fence is taken (FOR UPDATE) right before the commit: the row lock orders
 * the commit against any claim, so a job taken over meanwhile rolls the
 * whole write back (held = 0: nothing landed, the worker stops). Only the
 * job's own (job, step) keys are locked during the write; a new owner that
 * writes the same step waits for this transaction, which ends at its fence
 * (refused, rolled back). */
static int put_owned_fn(PGconn *c, void *ctx, pg_error *err)
{
    q_ctx *x = ctx;
    x->sql = "SELECT 1 FROM jobs WHERE id = $1 AND owner = $2 AND status = 'running'";
    x->what = "checking a job's owner";
    int rc = fenced_fn(c, ctx, err);
    if (rc) return rc;
    if (!x->hit) return PGB_ROLLBACK;
    rc = pgb_ckpt_write(c, x->job, x->step, x->bytes, x->len, x->crc, err);
    if (rc) return rc;
    x->sql = "SELECT 1 FROM jobs WHERE id = $1 AND owner = $2 AND status = 'running' FOR UPDATE";
    rc = fenced_fn(c, ctx, err);
    if (rc) return rc;
    return x->hit ? PG_OK : PGB_ROLLBACK;
}

int pgb_ckpt_put_owned(pg_db *db, const char *job, const char *node, int64_t step,
                       const unsigned char *bytes, size_t len, uint32_t crc, int *held,
                       pg_error *err)
{
    q_ctx x = {.job = job, .step = step, .bytes = bytes, .len = len, .crc = crc};
    pgb_text(&x.a, job);
    pgb_text(&x.a, node);
    int rc = pgb_tx_row(PGB(db), put_owned_fn, &x, err);
    *held = !rc && x.hit;
    return rc;
}

/* The fence: locks job id's row when node owns it running (*hit = 1);
 * the row lock orders the write that follows against any claim of the job.
 * PGB_ROLLBACK (nothing written) when it is not ours any more. */
static int lock_owned(PGconn *c, const char *id, const char *node, int *hit, pg_error *err)
{
    pgb_args a = {0};
    pgb_text(&a, id);
    pgb_text(&a, node);
    PGresult *r;
    int rc = pgb_q(c,
                   "SELECT 1 FROM jobs WHERE id = $1 AND owner = $2 AND status = 'running' "
                   "FOR UPDATE",
                   &a, "checking a job's owner", &r, err);
    if (rc) return rc;
    *hit = PQntuples(r) == 1;
    PQclear(r);
    return *hit ? PG_OK : PGB_ROLLBACK;
}

typedef struct h_ctx {
    const char *id, *node, *doc;
    int hit;
} h_ctx;

static int hist_owned_fn(PGconn *c, void *ctx, pg_error *err)
{
    h_ctx *x = ctx;
    int rc = lock_owned(c, x->id, x->node, &x->hit, err);
    if (rc) return rc;
    pgb_args b = {0};
    pgb_text(&b, x->id);
    pgb_text(&b, x->doc);
    pgb_i64(&b, pgb_now());
    return pgb_q(c,
                 "INSERT INTO job_history(job_id, doc, updated_at) VALUES ($1, $2, $3) "
                 "ON CONFLICT (job_id) DO UPDATE SET doc = EXCLUDED.doc, "
                 "updated_at = EXCLUDED.updated_at",
                 &b, "storing an owned job's history", NULL, err);
}

int pgb_job_history_put_owned(pg_db *db, const char *id, const char *node, const char *doc,
                              int *held, pg_error *err)
{
    h_ctx x = {.id = id, .node = node, .doc = doc};
    int rc = pgb_tx_row(PGB(db), hist_owned_fn, &x, err);
    *held = !rc && x.hit;
    return rc;
}

typedef struct n_ctx {
    const char *sql, *what;
    pgb_args a;
    int64_t n;
    int c0, c1; /* first row's first two columns */
} n_ctx;

/* Runs x->sql: n = rows returned, c0/c1 = the first row's columns. */
static int rows_fn(PGconn *c, void *ctx, pg_error *err)
{
    n_ctx *x = ctx;
    PGresult *r;
    int rc = pgb_q(c, x->sql, &x->a, x->what, &r, err);
    if (rc) return rc;
    x->n = PQntuples(r);
    x->c0 = x->n > 0 && PQnfields(r) > 0 ? (int)pgb_i64_at(r, 0, 0) : 0;
    x->c1 = x->n > 0 && PQnfields(r) > 1 ? (int)pgb_i64_at(r, 0, 1) : 0;
    PQclear(r);
    return PG_OK;
}

int pgb_job_release_node(pg_db *db, const char *node, int64_t now, int64_t *released, pg_error *err)
{
    n_ctx x = {.sql = "UPDATE jobs SET lease_until = NULL, updated_at = $2 WHERE owner = $1 AND "
                      "status = 'running' AND lease_until IS NOT NULL RETURNING 1",
               .what = "releasing a node's leases"};
    pgb_text(&x.a, node);
    pgb_i64(&x.a, now);
    int rc = pgb_tx_row(PGB(db), rows_fn, &x, err);
    *released = rc ? 0 : x.n;
    return rc;
}

int pgb_job_cancel_running(pg_db *db, const char *id, int64_t now, int *done, pg_error *err)
{
    n_ctx x = {.sql = "UPDATE jobs SET cancel_requested = true, updated_at = $2 WHERE id = $1 "
                      "AND status = 'running' RETURNING 1",
               .what = "asking a running job to stop"};
    pgb_text(&x.a, id);
    pgb_i64(&x.a, now);
    int rc = pgb_tx_row(PGB(db), rows_fn, &x, err);
    *done = !rc && x.n == 1;
    return rc;
}

int pgb_job_watch(pg_db *db, const char *id, const char *node, int *held, int *cancel,
                  pg_error *err)
{
    n_ctx x = {.sql = "SELECT owner IS NOT DISTINCT FROM $2, cancel_requested FROM jobs "
                      "WHERE id = $1 AND status = 'running'",
               .what = "reading a job's lease"};
    pgb_text(&x.a, id);
    pgb_text(&x.a, node);
    int rc = pgb_tx(PGB(db), rows_fn, &x, err);
    if (!rc && x.n == 1) {
        *held = x.c0 != 0;
        *cancel = x.c1 != 0;
    }
    return rc;
}

static int depth_fn(PGconn *c, void *ctx, pg_error *err)
{
    int64_t *q = ctx;
    PGresult *r;
    int rc = pgb_q(c, "SELECT count(*) FROM jobs WHERE status = 'queued'", NULL,
                   "counting queued jobs", &r, err);
    if (rc) return rc;
    *q = PQntuples(r) == 1 ? pgb_i64_at(r, 0, 0) : 0;
    PQclear(r);
    return PG_OK;
}

int pgb_job_queue_depth(pg_db *db, int64_t *queued, pg_error *err)
{
    int64_t q = 0;
    int rc = pgb_tx(PGB(db), depth_fn, &q, err);
    if (!rc) *queued = q;
    return rc;
}

typedef struct d_ctx {
    const char *job, *node;
    int64_t step;
    int hit;
} d_ctx;

static int delete_owned_fn(PGconn *c, void *ctx, pg_error *err)
{
    d_ctx *x = ctx;
    int rc = lock_owned(c, x->job, x->node, &x->hit, err);
    if (rc) return rc;
    pgb_args b = {0};
    pgb_text(&b, x->job);
    pgb_i64(&b, x->step);
    return pgb_q(c, "DELETE FROM checkpoints WHERE job_id = $1 AND step = $2", &b,
                 "deleting a checkpoint", NULL, err);
}

int pgb_ckpt_delete_owned(pg_db *db, const char *job, const char *node, int64_t step, int *held,
                          pg_error *err)
{
    d_ctx x = {.job = job, .node = node, .step = step};
    int rc = pgb_tx_row(PGB(db), delete_owned_fn, &x, err);
    *held = !rc && x.hit;
    return rc;
}
