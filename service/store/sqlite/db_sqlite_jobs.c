/* service/store/sqlite/db_sqlite_jobs.c - the SQLite backend's jobs, ledger rows and
 * checkpoints (files DIR/checkpoints/<job>/<step>.pgc indexed by rows). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "engine/data/file.h"
#include "service/store/sqlite/db_sqlite.h"
#include "service/ledger.h"

static void copy_col(char *dst, size_t cap, sqlite3_stmt *st, int col)
{
    const char *v = (const char *)sqlite3_column_text(st, col);
    snprintf(dst, cap, "%s", v ? v : "");
}

static char *dup_col(sqlite3_stmt *st, int col)
{
    const char *v = (const char *)sqlite3_column_text(st, col);
    return v ? strdup(v) : NULL;
}

int sq_job_row_read(sqlite3_stmt *st, pg_job_row *j, pg_error *err)
{
    memset(j, 0, sizeof *j);
    j->seq = sqlite3_column_int64(st, 0);
    copy_col(j->id, sizeof j->id, st, 1);
    copy_col(j->tenant, sizeof j->tenant, st, 2);
    copy_col(j->dataset_id, sizeof j->dataset_id, st, 3);
    copy_col(j->method, sizeof j->method, st, 4);
    copy_col(j->status, sizeof j->status, st, 5);
    j->spec = dup_col(st, 6);
    j->error = dup_col(st, 7);
    j->created_at = sqlite3_column_int64(st, 8);
    j->started_at = sqlite3_column_int64(st, 9);
    j->finished_at = sqlite3_column_int64(st, 10);
    j->step = sqlite3_column_int64(st, 11);
    j->steps_reserved = sqlite3_column_int64(st, 12);
    j->data_n = sqlite3_column_int64(st, 13);
    copy_col(j->public_dataset_id, sizeof j->public_dataset_id, st, 14);
    j->public_n = sqlite3_column_int64(st, 15);
    copy_col(j->owner, sizeof j->owner, st, 16);
    if ((sqlite3_column_type(st, 6) != SQLITE_NULL && !j->spec) ||
        (sqlite3_column_type(st, 7) != SQLITE_NULL && !j->error)) {
        free(j->spec);
        free(j->error);
        j->spec = j->error = NULL;
        return pg_error_set(err, PG_ENOMEM, "out of memory reading a job row");
    }
    return PG_OK;
}

/* ---- admission -------------------------------------------------------- */

/* Composed curve of the reserved rows (inside the caller's transaction),
 * oldest first as pg_db_ledger_entries (the same rounded sums as a dry
 * run's quote). */
static int spent_curve(sq_db *s, const char *dataset_id, pg_ledger_curve *c, pg_error *err)
{
    pg_ledger_curve_init(c);
    sqlite3_stmt *st;
    if (sq_prep(s,
                "SELECT seq, rdp FROM ledger WHERE dataset_id=? AND state='reserved' ORDER BY seq",
                &st, err))
        return PG_EIO;
    sqlite3_bind_text(st, 1, dataset_id, -1, SQLITE_STATIC);
    pg_ledger_cache *lc = pg_db_ledger_cache(&s->base);
    int r;
    while ((r = sqlite3_step(st)) == SQLITE_ROW) {
        const char *txt = (const char *)sqlite3_column_text(st, 1);
        size_t len = txt ? (size_t)sqlite3_column_bytes(st, 1) : 0;
        pg_ledger_curve_add_row(c, lc, sqlite3_column_int64(st, 0), txt, len);
    }
    sqlite3_finalize(st);
    return r == SQLITE_DONE ? PG_OK : sq_fail(s, err, "reading the ledger");
}

static int insert_ledger(sq_db *s, const pg_job_row *job, const pg_privacy_plan *p, pg_error *err)
{
    char *txt = pg_ledger_plan_encode(p);
    if (!txt) return pg_error_set(err, PG_ENOMEM, "out of memory encoding a ledger entry");
    sqlite3_stmt *st;
    int rc = sq_prep(s,
                     "INSERT INTO ledger(dataset_id, job_id, state, rdp, epsilon, delta, "
                     "created_at) VALUES(?,?,'reserved',?,?,?,?)",
                     &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, job->dataset_id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, job->id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, txt, -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 4, p->epsilon);
        sqlite3_bind_double(st, 5, p->delta);
        sqlite3_bind_int64(st, 6, sq_now());
        if (sqlite3_step(st) != SQLITE_DONE) rc = sq_fail(s, err, "writing the ledger");
        sqlite3_finalize(st);
    }
    free(txt);
    return rc;
}

static int insert_job(sq_db *s, pg_job_row *r, pg_error *err)
{
    sqlite3_stmt *st;
    if (sq_prep(s,
                "INSERT INTO jobs(id, tenant_id, dataset_id, status, spec, created_at, "
                "updated_at, method, data_n, public_dataset_id, public_n) "
                "VALUES(?,?,?,'queued',?,?,?,?,?,?,?)",
                &st, err))
        return PG_EIO;
    int64_t now = sq_now();
    sqlite3_bind_text(st, 1, r->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, r->tenant, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, r->dataset_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, r->spec ? r->spec : "{}", -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, now);
    sqlite3_bind_int64(st, 6, now);
    sqlite3_bind_text(st, 7, r->method, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 8, r->data_n);
    if (r->public_dataset_id[0])
        sqlite3_bind_text(st, 9, r->public_dataset_id, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 9);
    sqlite3_bind_int64(st, 10, r->public_n);
    int ok = sqlite3_step(st) == SQLITE_DONE;
    sqlite3_finalize(st);
    if (!ok) return sq_fail(s, err, "inserting a job");
    r->seq = sqlite3_last_insert_rowid(s->db);
    r->created_at = now;
    snprintf(r->status, sizeof r->status, "queued");
    return PG_OK;
}

int sq_job_admit(pg_db *db, pg_job_row *job, const pg_privacy_plan *plan, double cap_epsilon,
                 double cap_delta, struct pg_ledger_quote *q, pg_error *err)
{
    sq_db *s = SQ(db);
    pg_job_row row = *job;
    pthread_mutex_lock(&s->mu);
    /* IMMEDIATE takes the write lock before reading the ledger: no other
     * connection can reserve between our read and our insert. */
    int rc = sq_tx_begin(s, err);
    sqlite3_stmt *st;
    if (!rc && !(rc = sq_prep(s, "SELECT 1 FROM datasets WHERE id=?", &st, err))) {
        sqlite3_bind_text(st, 1, job->dataset_id, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (r == SQLITE_DONE)
            rc = pg_error_set(err, PG_ESTATE, "dataset %s no longer exists", job->dataset_id);
        else if (r != SQLITE_ROW)
            rc = sq_fail(s, err, "reading a dataset");
        sqlite3_finalize(st);
    }
    if (!rc && plan->charges) {
        pg_ledger_curve spent;
        rc = spent_curve(s, job->dataset_id, &spent, err);
        if (!rc) rc = pg_ledger_quote_plan(&spent, plan, cap_epsilon, cap_delta, q, err);
        if (!rc && q->admit) rc = insert_ledger(s, job, plan, err);
    } else if (!rc) {
        memset(q, 0, sizeof *q);
        q->admit = 1;
    }
    if (!rc && q->admit) rc = insert_job(s, &row, err);
    rc = sq_tx_end(s, !rc && !q->admit ? SQ_ROLLBACK : rc, err);
    pthread_mutex_unlock(&s->mu);
    if (!rc && q->admit) *job = row;
    return rc;
}

int sq_job_cancel_queued(pg_db *db, const char *id, int *done, pg_error *err)
{
    sq_db *s = SQ(db);
    pthread_mutex_lock(&s->mu);
    int64_t n = 0;
    int rc = sq_tx_begin(s, err);
    if (!rc)
        rc = sq_run(s,
                    "UPDATE jobs SET status='cancelled', finished_at=?3, updated_at=?3 "
                    "WHERE id=?1 AND status='queued'",
                    id, NULL, sq_now(), "cancelling a job", &n, err);
    int changed = !rc && n == 1;
    /* Only a job that never left the queue never read the data. */
    if (changed)
        rc = sq_run(s, "UPDATE ledger SET state='refunded' WHERE job_id=?1", id, NULL, 0,
                    "refunding", NULL, err);
    rc = sq_tx_end(s, rc, err);
    pthread_mutex_unlock(&s->mu);
    *done = !rc && changed;
    return rc;
}

/* ---- job rows --------------------------------------------------------- */

int sq_job_load_all(pg_db *db, pg_job_row **out, size_t *count, pg_error *err)
{
    sq_db *s = SQ(db);
    pg_job_row *rows = NULL;
    size_t n = 0, cap = 0;
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = sq_prep(s, "SELECT " PG_DB_JOB_COLS " FROM jobs ORDER BY seq", &st, err);
    if (!rc) {
        int r;
        while ((r = sqlite3_step(st)) == SQLITE_ROW) {
            if (n == cap && (rc = sq_grow(&rows, &cap, sizeof *rows, "loading jobs", err))) break;
            if ((rc = sq_job_row_read(st, &rows[n], err))) break;
            n++;
        }
        if (!rc && r != SQLITE_DONE) rc = sq_fail(s, err, "loading jobs");
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc) {
        pg_job_rows_free(rows, n);
        return rc;
    }
    *out = rows;
    *count = n;
    return PG_OK;
}

int sq_ledger_entries(pg_db *db, const char *dataset_id, pg_ledger_entry **out, size_t *count,
                      pg_error *err)
{
    sq_db *s = SQ(db);
    pg_ledger_entry *e = NULL;
    size_t n = 0, cap = 0;
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = sq_prep(s,
                     "SELECT job_id, state, rdp, epsilon, delta, seq FROM ledger "
                     "WHERE dataset_id=? ORDER BY seq",
                     &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, dataset_id, -1, SQLITE_STATIC);
        int r;
        while ((r = sqlite3_step(st)) == SQLITE_ROW) {
            if (n == cap && (rc = sq_grow(&e, &cap, sizeof *e, "reading the ledger", err))) break;
            pg_ledger_entry *x = &e[n++];
            memset(x, 0, sizeof *x);
            copy_col(x->job_id, sizeof x->job_id, st, 0);
            const char *state = (const char *)sqlite3_column_text(st, 1);
            x->refunded = state && !strcmp(state, "refunded");
            /* A NULL curve stays NULL: it counts as an infinite spend. */
            x->plan = dup_col(st, 2);
            x->epsilon = sqlite3_column_double(st, 3);
            x->delta = sqlite3_column_double(st, 4);
            x->seq = sqlite3_column_int64(st, 5);
        }
        if (!rc && r != SQLITE_DONE) rc = sq_fail(s, err, "reading the ledger");
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc) {
        pg_ledger_entries_free(e, n);
        return rc;
    }
    *out = e;
    *count = n;
    return PG_OK;
}

/* ---- checkpoints ------------------------------------------------------ */

int sq_ckpt_list(pg_db *db, const char *job, pg_ckpt_row **out, size_t *count, pg_error *err)
{
    sq_db *s = SQ(db);
    pg_ckpt_row *rows = NULL;
    size_t n = 0, cap = 0;
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc =
        sq_prep(s, "SELECT step, bytes, created_at FROM checkpoints WHERE job_id=? ORDER BY step",
                &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, job, -1, SQLITE_STATIC);
        int r;
        while ((r = sqlite3_step(st)) == SQLITE_ROW) {
            if (n == cap && (rc = sq_grow(&rows, &cap, sizeof *rows, "listing checkpoints", err)))
                break;
            rows[n++] = (pg_ckpt_row){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                                      sqlite3_column_int64(st, 2)};
        }
        if (!rc && r != SQLITE_DONE) rc = sq_fail(s, err, "listing checkpoints");
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc) {
        free(rows);
        return rc;
    }
    *out = rows;
    *count = n;
    return PG_OK;
}

int sq_ckpt_get(pg_db *db, const char *job, int64_t step, size_t max_bytes, unsigned char **bytes,
                size_t *len, int *found, pg_error *err)
{
    sq_db *s = SQ(db);
    char path[PATH_MAX];
    if (sq_ckpt_path(s, job, step, path, sizeof path, err)) return PG_EINVAL;
    int64_t want_len = -1;
    uint32_t want_crc = 0;
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = sq_prep(s, "SELECT bytes, crc32 FROM checkpoints WHERE job_id=? AND step=?", &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, job, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, step);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
            want_len = sqlite3_column_int64(st, 0);
            want_crc = (uint32_t)sqlite3_column_int64(st, 1);
        } else if (r != SQLITE_DONE) {
            rc = sq_fail(s, err, "reading a checkpoint row");
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc || want_len < 0) return rc;
    if ((uint64_t)want_len > max_bytes)
        return pg_error_set(err, PG_ENOMEM, "checkpoint %lld of %s is %lld bytes, above the limit",
                            (long long)step, job, (long long)want_len);
    unsigned char *buf;
    size_t n;
    rc = pg_file_read(path, max_bytes, &buf, &n, err);
    if (rc) return rc;
    uLong c = crc32(0L, Z_NULL, 0);
    for (size_t at = 0; at < n;) {
        uInt take = n - at > (1u << 30) ? (1u << 30) : (uInt)(n - at);
        c = crc32(c, buf + at, take);
        at += take;
    }
    if ((int64_t)n != want_len || (uint32_t)c != want_crc) {
        free(buf);
        return pg_error_set(err, PG_EFORMAT, "checkpoint %lld of %s fails its length or CRC check",
                            (long long)step, job);
    }
    *bytes = buf;
    *len = n;
    *found = 1;
    return PG_OK;
}
