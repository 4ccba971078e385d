/* service/store/pg/db_pg_jobread.c - the PostgreSQL backend's reads of jobs for a
 * replica that does not run them: one job with its history document, and a
 * filtered page of a tenant's jobs (service/store/db.h, "reading jobs"). */
#include <stdlib.h>
#include <string.h>

#include "service/store/pg/db_pg.h"

typedef struct read_ctx {
    const char *id, *tenant;
    pg_job_row *rows;
    size_t n;
    char *doc;
    pgb_args a;
} read_ctx;

static int get_fn(PGconn *c, void *ctx, pg_error *err)
{
    read_ctx *x = ctx;
    pg_job_rows_free(x->rows, x->n);
    free(x->doc);
    x->rows = NULL;
    x->doc = NULL;
    x->n = 0;
    pgb_args a = {0};
    pgb_text(&a, x->id);
    pgb_text(&a, x->tenant);
    PGresult *r;
    /* One statement, one snapshot: the row and the document agree. */
    int rc = pgb_q(c,
                   "SELECT " PGB_JOB_COLS_J
                   ", h.doc FROM jobs j LEFT JOIN job_history h ON h.job_id = j.id "
                   "WHERE j.id = $1 AND ($2::text IS NULL OR j.tenant_id = $2)",
                   &a, "reading a job", &r, err);
    if (rc) return rc;
    if (PQntuples(r) == 1) {
        if (!(x->rows = calloc(1, sizeof *x->rows)))
            rc = pg_error_set(err, PG_ENOMEM, "out of memory reading a job");
        if (!rc && !(rc = pgb_job_row_at(r, 0, x->rows, err))) x->n = 1;
        if (!rc && !PQgetisnull(r, 0, 17) && !(x->doc = pgb_dup_at(r, 0, 17)))
            rc = pg_error_set(err, PG_ENOMEM, "out of memory reading a job's history");
    }
    PQclear(r);
    return rc;
}

int pgb_job_get(pg_db *db, const char *tenant, const char *id, pg_job_row **row, char **doc,
                int *found, pg_error *err)
{
    read_ctx x = {.id = id, .tenant = tenant};
    int rc = pgb_tx(PGB(db), get_fn, &x, err);
    if (rc || !x.n) {
        pg_job_rows_free(x.rows, x.n);
        free(x.doc);
        return rc;
    }
    *row = x.rows;
    *doc = x.doc;
    *found = 1;
    return PG_OK;
}

static int list_fn(PGconn *c, void *ctx, pg_error *err)
{
    read_ctx *x = ctx;
    pg_job_rows_free(x->rows, x->n);
    x->rows = NULL;
    x->n = 0;
    PGresult *r;
    int rc = pgb_q(c,
                   "SELECT " PGB_JOB_COLS_J " FROM jobs j WHERE j.tenant_id = $1 AND j.seq > $2 "
                   "AND ($3::text IS NULL OR j.status = $3) "
                   "AND ($4::text IS NULL OR j.dataset_id = $4) ORDER BY j.seq LIMIT $5",
                   &x->a, "listing jobs", &r, err);
    if (rc) return rc;
    int n = PQntuples(r);
    x->rows = n ? calloc((size_t)n, sizeof *x->rows) : NULL;
    if (n && !x->rows) rc = pg_error_set(err, PG_ENOMEM, "out of memory listing jobs");
    for (int i = 0; !rc && i < n; i++)
        if (!(rc = pgb_job_row_at(r, i, &x->rows[i], err))) x->n++;
    PQclear(r);
    return rc;
}

int pgb_job_list(pg_db *db, const char *tenant, const char *status, const char *dataset_id,
                 int64_t after, size_t limit, pg_job_row **out, size_t *count, pg_error *err)
{
    read_ctx x = {0};
    pgb_text(&x.a, tenant);
    pgb_i64(&x.a, after);
    pgb_text(&x.a, status);
    pgb_text(&x.a, dataset_id);
    pgb_i64(&x.a, limit > INT64_MAX ? INT64_MAX : (int64_t)limit);
    int rc = pgb_tx(PGB(db), list_fn, &x, err);
    if (rc) {
        pg_job_rows_free(x.rows, x.n);
        return rc;
    }
    *out = x.rows;
    *count = x.n;
    return PG_OK;
}
