/* service/store/sqlite/db_sqlite_jobread.c - the SQLite backend's reads of jobs for a
 * replica that does not run them: one job with its history document, and a
 * filtered page of a tenant's jobs (service/store/db.h, "reading jobs"). */
#include <stdlib.h>
#include <string.h>

#include "service/store/sqlite/db_sqlite.h"

int sq_job_get(pg_db *db, const char *tenant, const char *id, pg_job_row **row, char **doc,
               int *found, pg_error *err)
{
    sq_db *s = SQ(db);
    pg_job_row *r = calloc(1, sizeof *r);
    if (!r) return pg_error_set(err, PG_ENOMEM, "out of memory reading a job");
    char *d = NULL;
    int hit = 0;
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    /* One statement, one snapshot: the row and the document agree. */
    int rc =
        sq_prep(s,
                "SELECT " PG_DB_JOB_COLS ", (SELECT doc FROM job_history WHERE job_id = jobs.id) "
                "FROM jobs WHERE id = ?1 AND (?2 IS NULL OR tenant_id = ?2)",
                &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        if (tenant)
            sqlite3_bind_text(st, 2, tenant, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 2);
        int k = sqlite3_step(st);
        if (k == SQLITE_ROW) {
            rc = sq_job_row_read(st, r, err);
            const char *v = (const char *)sqlite3_column_text(st, 17);
            if (!rc && v && !(d = strdup(v)))
                rc = pg_error_set(err, PG_ENOMEM, "out of memory reading a job's history");
            hit = !rc;
        } else if (k != SQLITE_DONE) {
            rc = sq_fail(s, err, "reading a job");
        }
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc || !hit) {
        pg_job_rows_free(r, 1);
        free(d);
        return rc;
    }
    *row = r;
    *doc = d;
    *found = 1;
    return PG_OK;
}

int sq_job_list(pg_db *db, const char *tenant, const char *status, const char *dataset_id,
                int64_t after, size_t limit, pg_job_row **out, size_t *count, pg_error *err)
{
    sq_db *s = SQ(db);
    pg_job_row *rows = limit ? calloc(limit, sizeof *rows) : NULL;
    if (limit && !rows) return pg_error_set(err, PG_ENOMEM, "out of memory listing jobs");
    size_t n = 0;
    pthread_mutex_lock(&s->mu);
    sqlite3_stmt *st;
    int rc = sq_prep(s,
                     "SELECT " PG_DB_JOB_COLS " FROM jobs WHERE tenant_id = ?1 AND seq > ?2 "
                     "AND (?3 IS NULL OR status = ?3) AND (?4 IS NULL OR dataset_id = ?4) "
                     "ORDER BY seq LIMIT ?5",
                     &st, err);
    if (!rc) {
        sqlite3_bind_text(st, 1, tenant, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, after);
        if (status)
            sqlite3_bind_text(st, 3, status, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 3);
        if (dataset_id)
            sqlite3_bind_text(st, 4, dataset_id, -1, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 4);
        sqlite3_bind_int64(st, 5, (int64_t)limit);
        int k = SQLITE_DONE;
        while (n < limit && (k = sqlite3_step(st)) == SQLITE_ROW) {
            if ((rc = sq_job_row_read(st, &rows[n], err))) break;
            n++;
        }
        if (!rc && n < limit && k != SQLITE_DONE) rc = sq_fail(s, err, "listing jobs");
        sqlite3_finalize(st);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc) {
        pg_job_rows_free(rows, n);
        return rc;
    }
    if (!n) {
        free(rows);
        rows = NULL;
    }
    *out = rows;
    *count = n;
    return PG_OK;
}
