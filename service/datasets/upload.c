/* Row uploads (service/datasets/datasets.h): a dataset's declaration, held
 * against the rows, in front of the storage appender. */
#include <stdio.h>
#include <stdlib.h>

#include "service/datasets/datasets.h"
#include "service/typed.h"

struct pg_datasets_upload {
    pg_db *db;
    char tenant[PG_ID_MAX], id[PG_ID_MAX];
    size_t max_rows;
    int64_t n_before;
    pg_datasets_spec spec;
    char *meta;         /* the stored metadata (typed datasets' declarations read it) */
    pg_table *t;        /* typed datasets: the schema */
    size_t width;       /* values per row */
    uint64_t written;   /* values written so far */
    int declared;       /* a matching declaration came with the rows */
    uint64_t decl_rows; /* the row count it states, 0: none */
    pg_db_append *app;  /* open appender, NULL when none */
};

int pg_datasets_upload_open(pg_db *db, const char *tenant, const char *id, size_t max_rows,
                            pg_datasets_upload **out, int *found, pg_error *err)
{
    pg_db_dataset d;
    int rc = pg_db_dataset_get(db, tenant, id, &d, found, err);
    if (rc || !*found) return rc;
    pg_datasets_upload *u = calloc(1, sizeof *u);
    if (!u) {
        pg_db_dataset_free(&d);
        return pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    u->db = db;
    snprintf(u->tenant, sizeof u->tenant, "%s", tenant);
    snprintf(u->id, sizeof u->id, "%s", id);
    u->max_rows = max_rows;
    u->n_before = d.n;
    u->meta = d.meta; /* taken */
    d.meta = NULL;
    pg_db_dataset_free(&d);
    rc = pg_datasets_spec_from_json(u->meta, &u->spec, err);
    if (!rc && u->spec.typed) {
        rc = pg_typed_table_from_meta(u->meta, &u->t, err);
        if (!rc && !u->t) rc = pg_error_set(err, PG_EFORMAT, "stored dataset schema is missing");
    }
    if (rc) {
        pg_datasets_upload_free(u);
        return rc;
    }
    u->width = u->t ? u->t->width : u->spec.d;
    *out = u;
    return PG_OK;
}

const pg_datasets_spec *pg_datasets_upload_spec(const pg_datasets_upload *u)
{
    return &u->spec;
}

const pg_table *pg_datasets_upload_table(const pg_datasets_upload *u)
{
    return u->t;
}

int64_t pg_datasets_upload_rows_before(const pg_datasets_upload *u)
{
    return u->n_before;
}

int pg_datasets_upload_declare(pg_datasets_upload *u, const char *decl,
                               pg_datasets_diff diffs[PG_DATASETS_DIFF_MAX], int *ndiff,
                               char field[PG_FIELD_MAX], pg_error *err)
{
    uint64_t rows = 0;
    int rc = u->t ? pg_typed_decl_match(u->meta, u->t, decl, diffs, ndiff, &rows, field, err)
                  : pg_datasets_decl_match(&u->spec, decl, diffs, ndiff, &rows, field, err);
    if (rc || *ndiff) return rc;
    u->declared = 1;
    u->decl_rows = rows;
    return PG_OK;
}

int pg_datasets_upload_count(const pg_datasets_upload *u, uint64_t rows, char field[PG_FIELD_MAX],
                             pg_error *err)
{
    field[0] = '\0';
    if (u->decl_rows && u->decl_rows != rows) {
        snprintf(field, PG_FIELD_MAX, "declaration.rows");
        return pg_error_set(err, PG_EINVAL, "declared %llu rows, the upload holds %llu",
                            (unsigned long long)u->decl_rows, (unsigned long long)rows);
    }
    if (rows > u->max_rows || (uint64_t)u->n_before + rows > u->max_rows)
        return pg_error_set(err, PG_ERANGE, "the dataset would exceed --max-rows (%zu rows)",
                            u->max_rows);
    return PG_OK;
}

int pg_datasets_upload_begin(pg_datasets_upload *u, pg_error *err)
{
    if (u->app) return pg_error_set(err, PG_ESTATE, "the upload has already begun");
    return pg_db_append_begin(u->db, u->tenant, u->id, u->width, &u->app, err);
}

int pg_datasets_upload_write(pg_datasets_upload *u, const float *x, size_t count, uint64_t *bad_row,
                             pg_error *err)
{
    *bad_row = UINT64_MAX;
    if (!u->app) return pg_error_set(err, PG_ESTATE, "the upload has not begun");
    int rc = u->t ? PG_OK : pg_datasets_check_values(&u->spec, x, count, u->written, bad_row, err);
    if (!rc) rc = pg_db_append_write(u->app, x, count, err);
    if (!rc) u->written += count;
    return rc;
}

int pg_datasets_upload_commit(pg_datasets_upload *u, const int32_t *labels, int *found,
                              pg_datasets_appended *out, pg_error *err)
{
    if (!u->app) return pg_error_set(err, PG_ESTATE, "the upload has not begun");
    int64_t rows = 0, n = 0;
    int rc = pg_db_append_commit(u->app, labels, (int64_t)u->max_rows, found, &rows, &n, err);
    u->app = NULL; /* commit always ends the appender */
    if (rc || !*found) return rc;
    out->rows = rows;
    out->n = n;
    out->declaration = u->declared                      ? "matched"
                       : u->spec.model == PG_PRIV_LOCAL ? "not checked"
                                                        : "not applicable";
    return PG_OK;
}

void pg_datasets_upload_abort(pg_datasets_upload *u)
{
    pg_db_append_abort(u->app);
    u->app = NULL;
}

void pg_datasets_upload_free(pg_datasets_upload *u)
{
    if (!u) return;
    pg_db_append_abort(u->app);
    pg_table_free(u->t);
    free(u->meta);
    free(u);
}
