/* service/store/pg/db_pg_jobs.c - the PostgreSQL backend's jobs, ledger and
 * checkpoints (chunked bytea with length, CRC-32 and SHA-256). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "service/store/pg/db_pg.h"
#include "service/ledger.h"
#include "service/sha256.h"

/* ---- admission -------------------------------------------------------- */

typedef struct admit_ctx {
    pg_db *db;
    pg_job_row *job;
    const pg_privacy_plan *plan;
    double cap_epsilon, cap_delta;
    pg_ledger_quote *q;
} admit_ctx;

static int insert_job(PGconn *c, pg_job_row *j, pg_error *err)
{
    pgb_args a = {0};
    int64_t now = pgb_now();
    pgb_text(&a, j->id);
    pgb_text(&a, j->tenant);
    pgb_text(&a, j->dataset_id);
    pgb_text(&a, j->spec ? j->spec : "{}");
    pgb_i64(&a, now);
    pgb_text(&a, j->method);
    pgb_i64(&a, j->data_n);
    pgb_text(&a, j->public_dataset_id[0] ? j->public_dataset_id : NULL);
    pgb_i64(&a, j->public_n);
    PGresult *r;
    int rc = pgb_q(c,
                   "INSERT INTO jobs(id, tenant_id, dataset_id, status, spec, created_at, "
                   "updated_at, method, data_n, public_dataset_id, public_n) "
                   "VALUES ($1, $2, $3, 'queued', $4, $5, $5, $6, $7, $8, $9) RETURNING seq",
                   &a, "inserting a job", &r, err);
    if (rc) return rc;
    j->seq = pgb_i64_at(r, 0, 0);
    j->created_at = now;
    snprintf(j->status, sizeof j->status, "queued");
    PQclear(r);
    return PG_OK;
}

static int admit_fn(PGconn *c, void *ctx, pg_error *err)
{
    admit_ctx *x = ctx;
    int rc;
    pgb_args a = {0};
    pgb_text(&a, x->job->dataset_id);
    PGresult *r;
    /* The budget row lock: a second admission on this dataset waits here
     * until we commit or roll back, then reads the ledger with our row in
     * it (READ COMMITTED takes a fresh snapshot per statement). A plan that
     * does not charge only needs the dataset to stay (FOR SHARE blocks a
     * delete, not other admissions). */
    if ((rc = pgb_q(c,
                    x->plan->charges ? "SELECT 1 FROM datasets WHERE id = $1 FOR UPDATE"
                                     : "SELECT 1 FROM datasets WHERE id = $1 FOR SHARE",
                    &a, "locking the dataset's budget", &r, err)))
        return rc;
    int exists = PQntuples(r) == 1;
    PQclear(r);
    if (!exists)
        return pg_error_set(err, PG_ESTATE, "dataset %s does not exist (deleted meanwhile?)",
                            x->job->dataset_id);
    if (!x->plan->charges) {
        memset(x->q, 0, sizeof *x->q);
        x->q->admit = 1;
        return insert_job(c, x->job, err);
    }
    /* Oldest first, as pg_db_ledger_entries: the per-order sums (rounded
     * doubles) then do not depend on the plan PostgreSQL picks, and a dry
     * run's quote is the admission's to the bit. */
    if ((rc = pgb_q(c,
                    "SELECT seq, rdp FROM ledger WHERE dataset_id = $1 AND state = 'reserved' "
                    "ORDER BY seq",
                    &a, "reading the ledger", &r, err)))
        return rc;
    pg_ledger_cache *lc = pg_db_ledger_cache(x->db);
    pg_ledger_curve spent;
    pg_ledger_curve_init(&spent);
    for (int i = 0; i < PQntuples(r); i++) {
        int null = PQgetisnull(r, i, 1);
        pg_ledger_curve_add_row(&spent, lc, pgb_i64_at(r, i, 0), null ? NULL : PQgetvalue(r, i, 1),
                                null ? 0 : (size_t)PQgetlength(r, i, 1));
    }
    PQclear(r);
    if ((rc = pg_ledger_quote_plan(&spent, x->plan, x->cap_epsilon, x->cap_delta, x->q, err)))
        return rc;
    if (!x->q->admit) return PGB_ROLLBACK;
    char *txt = pg_ledger_plan_encode(x->plan);
    if (!txt) return pg_error_set(err, PG_ENOMEM, "out of memory encoding a ledger entry");
    a = (pgb_args){0};
    pgb_text(&a, x->job->dataset_id);
    pgb_text(&a, x->job->id);
    pgb_text(&a, txt);
    pgb_f64(&a, x->plan->epsilon);
    pgb_f64(&a, x->plan->delta);
    pgb_i64(&a, pgb_now());
    rc = pgb_q(c,
               "INSERT INTO ledger(dataset_id, job_id, state, rdp, epsilon, delta, created_at) "
               "VALUES ($1, $2, 'reserved', $3, $4, $5, $6)",
               &a, "writing the ledger", NULL, err);
    free(txt);
    return rc ? rc : insert_job(c, x->job, err);
}

int pgb_job_admit(pg_db *db, pg_job_row *job, const pg_privacy_plan *plan, double cap_epsilon,
                  double cap_delta, struct pg_ledger_quote *q, pg_error *err)
{
    pg_job_row row = *job;
    admit_ctx x = {.db = db,
                   .job = &row,
                   .plan = plan,
                   .cap_epsilon = cap_epsilon,
                   .cap_delta = cap_delta,
                   .q = q};
    int rc = pgb_tx(PGB(db), admit_fn, &x, err);
    if (!rc && q->admit) *job = row;
    return rc;
}

static int cancel_fn(PGconn *c, void *ctx, pg_error *err)
{
    const char **x = ctx;
    pgb_args a = {0};
    pgb_text(&a, x[0]);
    pgb_i64(&a, pgb_now());
    PGresult *r;
    int rc = pgb_q(c,
                   "UPDATE jobs SET status = 'cancelled', finished_at = $2, updated_at = $2 "
                   "WHERE id = $1 AND status = 'queued' RETURNING 1",
                   &a, "cancelling a job", &r, err);
    if (rc) return rc;
    int changed = PQntuples(r) == 1;
    PQclear(r);
    x[1] = changed ? "1" : NULL;
    if (!changed) return PG_OK;
    /* Only a job that never left the queue never read the data. */
    a = (pgb_args){0};
    pgb_text(&a, x[0]);
    return pgb_q(c, "UPDATE ledger SET state = 'refunded' WHERE job_id = $1", &a, "refunding", NULL,
                 err);
}

int pgb_job_cancel_queued(pg_db *db, const char *id, int *done, pg_error *err)
{
    const char *x[2] = {id, NULL};
    int rc = pgb_tx_row(PGB(db), cancel_fn, (void *)x, err);
    *done = !rc && x[1];
    return rc;
}

/* ---- job rows --------------------------------------------------------- */

typedef struct rows_ctx {
    pg_job_row *rows;
    size_t n;
} rows_ctx;

int pgb_job_row_at(const PGresult *r, int i, pg_job_row *j, pg_error *err)
{
    memset(j, 0, sizeof *j);
    j->seq = pgb_i64_at(r, i, 0);
    pgb_str_at(r, i, 1, j->id, sizeof j->id);
    pgb_str_at(r, i, 2, j->tenant, sizeof j->tenant);
    pgb_str_at(r, i, 3, j->dataset_id, sizeof j->dataset_id);
    pgb_str_at(r, i, 4, j->method, sizeof j->method);
    pgb_str_at(r, i, 5, j->status, sizeof j->status);
    j->spec = pgb_dup_at(r, i, 6);
    j->error = pgb_dup_at(r, i, 7);
    j->created_at = pgb_i64_at(r, i, 8);
    j->started_at = pgb_i64_at(r, i, 9);
    j->finished_at = pgb_i64_at(r, i, 10);
    j->step = pgb_i64_at(r, i, 11);
    j->steps_reserved = pgb_i64_at(r, i, 12);
    j->data_n = pgb_i64_at(r, i, 13);
    pgb_str_at(r, i, 14, j->public_dataset_id, sizeof j->public_dataset_id);
    j->public_n = pgb_i64_at(r, i, 15);
    pgb_str_at(r, i, 16, j->owner, sizeof j->owner);
    if ((!PQgetisnull(r, i, 6) && !j->spec) || (!PQgetisnull(r, i, 7) && !j->error)) {
        free(j->spec);
        free(j->error);
        j->spec = j->error = NULL;
        return pg_error_set(err, PG_ENOMEM, "out of memory reading a job row");
    }
    return PG_OK;
}

static int load_fn(PGconn *c, void *ctx, pg_error *err)
{
    rows_ctx *x = ctx;
    PGresult *r;
    int rc =
        pgb_q(c, "SELECT " PG_DB_JOB_COLS " FROM jobs ORDER BY seq", NULL, "loading jobs", &r, err);
    if (rc) return rc;
    int n = PQntuples(r);
    pg_job_rows_free(x->rows, x->n);
    x->rows = n ? calloc((size_t)n, sizeof *x->rows) : NULL;
    x->n = 0;
    if (n && !x->rows) rc = pg_error_set(err, PG_ENOMEM, "out of memory loading jobs");
    for (int i = 0; !rc && i < n; i++) {
        rc = pgb_job_row_at(r, i, &x->rows[i], err);
        if (!rc) x->n++;
    }
    PQclear(r);
    return rc;
}

int pgb_job_load_all(pg_db *db, pg_job_row **rows, size_t *count, pg_error *err)
{
    rows_ctx x = {0};
    int rc = pgb_tx(PGB(db), load_fn, &x, err);
    if (rc) {
        pg_job_rows_free(x.rows, x.n);
        return rc;
    }
    *rows = x.rows;
    *count = x.n;
    return PG_OK;
}

/* ---- ledger rows ------------------------------------------------------ */

typedef struct ledger_ctx {
    const char *dataset_id;
    pg_ledger_entry *e;
    size_t n;
} ledger_ctx;

static int ledger_fn(PGconn *c, void *ctx, pg_error *err)
{
    ledger_ctx *x = ctx;
    pgb_args a = {0};
    pgb_text(&a, x->dataset_id);
    PGresult *r;
    int rc = pgb_q(c,
                   "SELECT job_id, state, rdp, epsilon, delta, seq FROM ledger "
                   "WHERE dataset_id = $1 ORDER BY seq",
                   &a, "reading the ledger", &r, err);
    if (rc) return rc;
    int n = PQntuples(r);
    pg_ledger_entries_free(x->e, x->n);
    x->e = n ? calloc((size_t)n, sizeof *x->e) : NULL;
    x->n = 0;
    if (n && !x->e) rc = pg_error_set(err, PG_ENOMEM, "out of memory reading the ledger");
    for (int i = 0; !rc && i < n; i++) {
        pg_ledger_entry *e = &x->e[i];
        pgb_str_at(r, i, 0, e->job_id, sizeof e->job_id);
        e->refunded = !strcmp(PQgetvalue(r, i, 1), "refunded");
        /* A NULL curve stays NULL: it counts as an infinite spend. */
        e->plan = pgb_dup_at(r, i, 2);
        e->epsilon = pgb_f64_at(r, i, 3);
        e->delta = pgb_f64_at(r, i, 4);
        e->seq = pgb_i64_at(r, i, 5);
        x->n++;
        if (!PQgetisnull(r, i, 2) && !e->plan)
            rc = pg_error_set(err, PG_ENOMEM, "out of memory reading the ledger");
    }
    PQclear(r);
    return rc;
}

int pgb_ledger_entries(pg_db *db, const char *dataset_id, pg_ledger_entry **out, size_t *count,
                       pg_error *err)
{
    ledger_ctx x = {.dataset_id = dataset_id};
    int rc = pgb_tx(PGB(db), ledger_fn, &x, err);
    if (rc) {
        pg_ledger_entries_free(x.e, x.n);
        return rc;
    }
    *out = x.e;
    *count = x.n;
    return PG_OK;
}

/* ---- checkpoints ------------------------------------------------------ */

typedef struct ckpt_ctx {
    const char *job;
    int64_t step;
    const unsigned char *bytes;
    size_t len, max_bytes;
    uint32_t crc;
    unsigned char *out;
    size_t out_len;
    int found;
    pg_ckpt_row *rows;
    size_t n;
} ckpt_ctx;

static int put_fn(PGconn *c, void *ctx, pg_error *err)
{
    ckpt_ctx *x = ctx;
    pgb_args a = {0};
    pgb_text(&a, x->job);
    pgb_i64(&a, x->step);
    int rc = pgb_q(c, "DELETE FROM checkpoints WHERE job_id = $1 AND step = $2", &a,
                   "replacing a checkpoint", NULL, err);
    if (rc) return rc;
    int chunks = 0;
    for (size_t at = 0; at < x->len; at += PGB_CHUNK, chunks++) {
        size_t take = x->len - at < PGB_CHUNK ? x->len - at : PGB_CHUNK;
        pgb_args p = {0};
        pgb_text(&p, x->job);
        pgb_i64(&p, x->step);
        pgb_i64(&p, chunks);
        pgb_bin(&p, x->bytes + at, take);
        if ((rc = pgb_q(c,
                        "INSERT INTO checkpoint_chunks(job_id, step, i, data) "
                        "VALUES ($1, $2, $3, $4)",
                        &p, "writing a checkpoint", NULL, err)))
            return rc;
    }
    unsigned char digest[32];
    pg_sha256_digest(x->bytes, x->len, digest);
    pgb_i64(&a, (int64_t)x->len);
    pgb_i64(&a, chunks);
    pgb_i64(&a, x->crc);
    pgb_bin(&a, digest, 32);
    pgb_i64(&a, pgb_now());
    return pgb_q(c,
                 "INSERT INTO checkpoints(job_id, step, bytes, chunks, crc32, sha256, created_at) "
                 "VALUES ($1, $2, $3, $4, $5, $6, $7)",
                 &a, "recording a checkpoint", NULL, err);
}

int pgb_ckpt_write(PGconn *c, const char *job, int64_t step, const unsigned char *bytes, size_t len,
                   uint32_t crc, pg_error *err)
{
    ckpt_ctx x = {.job = job, .step = step, .bytes = bytes, .len = len, .crc = crc};
    return put_fn(c, &x, err);
}

static int list_fn(PGconn *c, void *ctx, pg_error *err)
{
    ckpt_ctx *x = ctx;
    pgb_args a = {0};
    pgb_text(&a, x->job);
    PGresult *r;
    int rc = pgb_q(c,
                   "SELECT step, bytes, created_at FROM checkpoints WHERE job_id = $1 "
                   "ORDER BY step",
                   &a, "listing checkpoints", &r, err);
    if (rc) return rc;
    int n = PQntuples(r);
    free(x->rows);
    x->rows = n ? calloc((size_t)n, sizeof *x->rows) : NULL;
    x->n = 0;
    if (n && !x->rows) rc = pg_error_set(err, PG_ENOMEM, "out of memory listing checkpoints");
    for (int i = 0; !rc && i < n; i++) {
        x->rows[i].step = pgb_i64_at(r, i, 0);
        x->rows[i].bytes = pgb_i64_at(r, i, 1);
        x->rows[i].created_at = pgb_i64_at(r, i, 2);
        x->n++;
    }
    PQclear(r);
    return rc;
}

int pgb_ckpt_list(pg_db *db, const char *job, pg_ckpt_row **rows, size_t *count, pg_error *err)
{
    ckpt_ctx x = {.job = job};
    int rc = pgb_tx(PGB(db), list_fn, &x, err);
    if (rc) {
        free(x.rows);
        return rc;
    }
    *rows = x.rows;
    *count = x.n;
    return PG_OK;
}

static int get_fn(PGconn *c, void *ctx, pg_error *err)
{
    ckpt_ctx *x = ctx;
    free(x->out);
    x->out = NULL;
    x->found = 0;
    pgb_args a = {0};
    pgb_text(&a, x->job);
    pgb_i64(&a, x->step);
    PGresult *r;
    int rc = pgb_q(c,
                   "SELECT bytes, chunks, crc32, sha256 FROM checkpoints "
                   "WHERE job_id = $1 AND step = $2",
                   &a, "reading a checkpoint row", &r, err);
    if (rc) return rc;
    if (PQntuples(r) != 1) {
        PQclear(r);
        return PG_OK;
    }
    int64_t len = pgb_i64_at(r, 0, 0), chunks = pgb_i64_at(r, 0, 1);
    uint32_t crc = (uint32_t)pgb_i64_at(r, 0, 2);
    unsigned char sha[32] = {0};
    if (PQgetlength(r, 0, 3) == 32) memcpy(sha, PQgetvalue(r, 0, 3), 32);
    PQclear(r);
    if (len < 0) return pg_error_set(err, PG_EFORMAT, "checkpoint row with a negative length");
    if ((uint64_t)len > x->max_bytes)
        return pg_error_set(err, PG_ENOMEM, "checkpoint %lld of %s is %lld bytes, above the limit",
                            (long long)x->step, x->job, (long long)len);
    if (!(x->out = malloc(len ? (size_t)len : 1)))
        return pg_error_set(err, PG_ENOMEM, "out of memory reading a checkpoint");
    if ((rc = pgb_q(c,
                    "SELECT i, data FROM checkpoint_chunks WHERE job_id = $1 AND step = $2 "
                    "ORDER BY i",
                    &a, "reading a checkpoint", &r, err)))
        return rc;
    size_t at = 0;
    int ok = PQntuples(r) == chunks;
    for (int i = 0; ok && i < PQntuples(r); i++) {
        size_t l = (size_t)PQgetlength(r, i, 1);
        ok = pgb_i64_at(r, i, 0) == i && at + l <= (size_t)len;
        if (ok) memcpy(x->out + at, PQgetvalue(r, i, 1), l);
        at += l;
    }
    PQclear(r);
    unsigned char digest[32];
    if (ok) pg_sha256_digest(x->out, (size_t)len, digest);
    if (!ok || at != (size_t)len || pgb_crc32(pgb_crc32(0, NULL, 0), x->out, at) != crc ||
        memcmp(digest, sha, 32))
        return pg_error_set(err, PG_EFORMAT,
                            "checkpoint %lld of %s fails its length, CRC or SHA-256 check",
                            (long long)x->step, x->job);
    x->out_len = (size_t)len;
    x->found = 1;
    return PG_OK;
}

int pgb_ckpt_get(pg_db *db, const char *job, int64_t step, size_t max_bytes, unsigned char **bytes,
                 size_t *len, int *found, pg_error *err)
{
    ckpt_ctx x = {.job = job, .step = step, .max_bytes = max_bytes};
    int rc = pgb_tx(PGB(db), get_fn, &x, err);
    if (rc || !x.found) {
        free(x.out);
        if (!rc) *found = 0;
        return rc;
    }
    *bytes = x.out;
    *len = x.out_len;
    *found = 1;
    return PG_OK;
}
