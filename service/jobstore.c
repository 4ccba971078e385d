#include "service/jobstore.h"

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "service/ledger.h"

static int db_err(sqlite3 *db, pg_error *err, const char *what)
{
    return pg_error_set(err, PG_EIO, "database error %s: %s", what, sqlite3_errmsg(db));
}

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

int pg_jobstore_insert_db(sqlite3 *db, pg_job_row *r, pg_error *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "INSERT INTO jobs(id, tenant_id, dataset_id, status, spec, created_at, "
                           "updated_at, method, data_n, public_dataset_id, public_n) "
                           "VALUES(?,?,?,'queued',?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
        return db_err(db, err, "preparing a job insert");
    r->created_at = (int64_t)time(NULL);
    sqlite3_bind_text(st, 1, r->id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, r->tenant, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, r->dataset_id, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 4, r->spec, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 5, r->created_at);
    sqlite3_bind_int64(st, 6, r->created_at);
    sqlite3_bind_text(st, 7, r->method, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 8, r->data_n);
    if (r->public_dataset_id[0])
        sqlite3_bind_text(st, 9, r->public_dataset_id, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 9);
    sqlite3_bind_int64(st, 10, r->public_n);
    int ok = sqlite3_step(st) == SQLITE_DONE;
    sqlite3_finalize(st);
    if (!ok) return db_err(db, err, "inserting a job");
    r->seq = sqlite3_last_insert_rowid(db);
    snprintf(r->status, sizeof r->status, "queued");
    return PG_OK;
}

typedef struct load_ctx {
    pg_job_row *rows;
    size_t n;
} load_ctx;

static int load_tx(sqlite3 *db, void *vctx, pg_error *err)
{
    load_ctx *c = vctx;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT seq, id, tenant_id, dataset_id, method, status, spec, error, "
                           "created_at, started_at, finished_at, step, steps_reserved, data_n, "
                           "public_dataset_id, public_n "
                           "FROM jobs ORDER BY seq",
                           -1, &st, NULL) != SQLITE_OK)
        return db_err(db, err, "loading jobs");
    size_t cap = 0;
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (c->n == cap) {
            cap = cap ? 2 * cap : 16;
            pg_job_row *nr = realloc(c->rows, cap * sizeof *nr);
            if (!nr) {
                sqlite3_finalize(st);
                return pg_error_set(err, PG_ENOMEM, "out of memory loading jobs");
            }
            c->rows = nr;
        }
        pg_job_row *r = &c->rows[c->n++];
        memset(r, 0, sizeof *r);
        r->seq = sqlite3_column_int64(st, 0);
        copy_col(r->id, sizeof r->id, st, 1);
        copy_col(r->tenant, sizeof r->tenant, st, 2);
        copy_col(r->dataset_id, sizeof r->dataset_id, st, 3);
        copy_col(r->method, sizeof r->method, st, 4);
        copy_col(r->status, sizeof r->status, st, 5);
        r->spec = dup_col(st, 6);
        r->error = dup_col(st, 7);
        r->created_at = sqlite3_column_int64(st, 8);
        r->started_at = sqlite3_column_int64(st, 9);
        r->finished_at = sqlite3_column_int64(st, 10);
        r->step = sqlite3_column_int64(st, 11);
        r->steps_reserved = sqlite3_column_int64(st, 12);
        r->data_n = sqlite3_column_int64(st, 13);
        copy_col(r->public_dataset_id, sizeof r->public_dataset_id, st, 14);
        r->public_n = sqlite3_column_int64(st, 15);
    }
    sqlite3_finalize(st);
    return s == SQLITE_DONE ? PG_OK : db_err(db, err, "loading jobs");
}

int pg_jobstore_load_all(pg_store *s, pg_job_row **rows, size_t *count, pg_error *err)
{
    load_ctx c = {NULL, 0};
    int rc = pg_store_with_db(s, load_tx, &c, err);
    if (rc) {
        pg_jobstore_rows_free(c.rows, c.n);
        return rc;
    }
    *rows = c.rows;
    *count = c.n;
    return PG_OK;
}

void pg_jobstore_rows_free(pg_job_row *rows, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        free(rows[i].spec);
        free(rows[i].error);
    }
    free(rows);
}

typedef struct upd_ctx {
    const char *id, *status, *error;
    int started, finished;
    int64_t value;
    int which; /* 0 status, 1 step, 2 steps_reserved */
    int *done;
} upd_ctx;

static int upd_tx(sqlite3 *db, void *vctx, pg_error *err)
{
    upd_ctx *u = vctx;
    const char *sql = u->which == 1 ? "UPDATE jobs SET step=?2, updated_at=?3 WHERE id=?1"
                      : u->which == 2
                          ? "UPDATE jobs SET steps_reserved=?2, updated_at=?3 WHERE id=?1"
                          : "UPDATE jobs SET status=?4, updated_at=?3, error=?5, started_at="
                            "CASE WHEN ?6 THEN ?3 ELSE started_at END, finished_at=CASE WHEN ?7 "
                            "THEN ?3 ELSE finished_at END WHERE id=?1";
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
        return db_err(db, err, "updating a job");
    sqlite3_bind_text(st, 1, u->id, -1, SQLITE_STATIC);
    if (u->which) sqlite3_bind_int64(st, 2, u->value);
    sqlite3_bind_int64(st, 3, (sqlite3_int64)time(NULL));
    if (!u->which) {
        sqlite3_bind_text(st, 4, u->status, -1, SQLITE_STATIC);
        if (u->error)
            sqlite3_bind_text(st, 5, u->error, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 5);
        sqlite3_bind_int(st, 6, u->started);
        sqlite3_bind_int(st, 7, u->finished);
    }
    int ok = sqlite3_step(st) == SQLITE_DONE;
    sqlite3_finalize(st);
    return ok ? PG_OK : db_err(db, err, "updating a job");
}

int pg_jobstore_set_status(pg_store *s, const char *id, const char *status, int started,
                           int finished, const char *error, pg_error *err)
{
    upd_ctx u = {id, status, error, started, finished, 0, 0, NULL};
    return pg_store_with_db(s, upd_tx, &u, err);
}

int pg_jobstore_set_step(pg_store *s, const char *id, int64_t step, pg_error *err)
{
    upd_ctx u = {id, NULL, NULL, 0, 0, step, 1, NULL};
    return pg_store_with_db(s, upd_tx, &u, err);
}

int pg_jobstore_reserve_steps(pg_store *s, const char *id, int64_t steps, pg_error *err)
{
    upd_ctx u = {id, NULL, NULL, 0, 0, steps, 2, NULL};
    return pg_store_with_db(s, upd_tx, &u, err);
}

static int cancel_tx(sqlite3 *db, void *vctx, pg_error *err)
{
    upd_ctx *u = vctx;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        return db_err(db, err, "starting a transaction");
    sqlite3_stmt *st;
    int rc = PG_OK;
    if (sqlite3_prepare_v2(db,
                           "UPDATE jobs SET status='cancelled', finished_at=?2, updated_at=?2 "
                           "WHERE id=?1 AND status='queued'",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = db_err(db, err, "cancelling a job");
    } else {
        sqlite3_bind_text(st, 1, u->id, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)time(NULL));
        if (sqlite3_step(st) != SQLITE_DONE) rc = db_err(db, err, "cancelling a job");
        sqlite3_finalize(st);
    }
    *u->done = rc == PG_OK && sqlite3_changes(db) == 1;
    /* Only a job that never left the queue never read the data. */
    if (!rc && *u->done) rc = pg_ledger_refund_db(db, u->id, err);
    if (!rc && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = db_err(db, err, "committing a cancel");
    if (rc) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        *u->done = 0;
    }
    return rc;
}

int pg_jobstore_cancel_queued(pg_store *s, const char *id, int *done, pg_error *err)
{
    upd_ctx u = {id, NULL, NULL, 0, 0, 0, 0, done};
    *done = 0;
    return pg_store_with_db(s, cancel_tx, &u, err);
}

typedef struct ck_ctx {
    const char *job, *path;
    int64_t step, bytes;
    uint32_t crc;
    pg_ckpt_row *rows;
    size_t n;
} ck_ctx;

static int ck_add_tx(sqlite3 *db, void *vctx, pg_error *err)
{
    ck_ctx *c = vctx;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "INSERT OR REPLACE INTO checkpoints(job_id, step, path, bytes, crc32, "
                           "created_at) VALUES(?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK)
        return db_err(db, err, "recording a checkpoint");
    sqlite3_bind_text(st, 1, c->job, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, c->step);
    sqlite3_bind_text(st, 3, c->path, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, c->bytes);
    sqlite3_bind_int64(st, 5, c->crc);
    sqlite3_bind_int64(st, 6, (sqlite3_int64)time(NULL));
    int ok = sqlite3_step(st) == SQLITE_DONE;
    sqlite3_finalize(st);
    return ok ? PG_OK : db_err(db, err, "recording a checkpoint");
}

int pg_jobstore_checkpoint_add(pg_store *s, const char *job, int64_t step, const char *path,
                               int64_t bytes, uint32_t crc, pg_error *err)
{
    ck_ctx c = {job, path, step, bytes, crc, NULL, 0};
    return pg_store_with_db(s, ck_add_tx, &c, err);
}

static int ck_list_tx(sqlite3 *db, void *vctx, pg_error *err)
{
    ck_ctx *c = vctx;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(db,
                           "SELECT step, bytes, created_at FROM checkpoints WHERE job_id=? ORDER "
                           "BY step",
                           -1, &st, NULL) != SQLITE_OK)
        return db_err(db, err, "listing checkpoints");
    sqlite3_bind_text(st, 1, c->job, -1, SQLITE_STATIC);
    size_t cap = 0;
    int s;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        if (c->n == cap) {
            cap = cap ? cap * 2 : 8;
            pg_ckpt_row *nr = realloc(c->rows, cap * sizeof *nr);
            if (!nr) {
                sqlite3_finalize(st);
                return pg_error_set(err, PG_ENOMEM, "out of memory listing checkpoints");
            }
            c->rows = nr;
        }
        c->rows[c->n++] = (pg_ckpt_row){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                                        sqlite3_column_int64(st, 2)};
    }
    sqlite3_finalize(st);
    return s == SQLITE_DONE ? PG_OK : db_err(db, err, "listing checkpoints");
}

int pg_jobstore_checkpoints(pg_store *s, const char *job, pg_ckpt_row **rows, size_t *count,
                            pg_error *err)
{
    ck_ctx c = {job, NULL, 0, 0, 0, NULL, 0};
    int rc = pg_store_with_db(s, ck_list_tx, &c, err);
    if (rc) {
        free(c.rows);
        return rc;
    }
    *rows = c.rows;
    *count = c.n;
    return PG_OK;
}
