#include "engine/data/rowsrc.h"

#include "engine/data/dataset.h"

typedef struct counted {
    pg_rowsrc_fn fn;
    void *ctx;
    size_t seen, n, chunk;
} counted;

/* Counts the rows and refuses chunks over the bound or past n, so a faulty
 * source cannot make a method count rows that were never planned. */
static int count_fn(void *ctx, const float *x, const int32_t *labels, size_t rows, pg_error *err)
{
    counted *c = ctx;
    if (rows > c->chunk || rows > c->n - c->seen)
        return pg_error_set(err, PG_EIO, "the row source gave %zu rows after %zu of %zu", rows,
                            c->seen, c->n);
    c->seen += rows;
    return rows ? c->fn(c->ctx, x, labels, rows, err) : PG_OK;
}

int pg_rowsrc_pass(const pg_rowsrc *src, pg_rowsrc_fn fn, void *ctx, pg_error *err)
{
    if (!src || !src->pass || src->chunk == 0) return pg_error_set(err, PG_EINVAL, "no row source");
    counted c = {.fn = fn, .ctx = ctx, .n = src->n, .chunk = src->chunk};
    int rc = src->pass(src->impl, src, count_fn, &c, err);
    if (rc) return rc;
    if (c.seen != src->n)
        return pg_error_set(err, PG_EIO, "the row source gave %zu rows, not the %zu planned",
                            c.seen, src->n);
    return PG_OK;
}

static int dataset_pass(void *impl, const pg_rowsrc *src, pg_rowsrc_fn fn, void *ctx, pg_error *err)
{
    const pg_dataset *ds = impl;
    for (size_t i = 0; i < src->n; i += src->chunk) {
        size_t m = src->n - i < src->chunk ? src->n - i : src->chunk;
        int rc = fn(ctx, pg_dataset_row(ds, i), ds->labels ? ds->labels + i : NULL, m, err);
        if (rc) return rc;
    }
    return PG_OK;
}

void pg_rowsrc_dataset(pg_rowsrc *src, const pg_dataset *ds, size_t chunk)
{
    src->n = ds->n;
    src->d = ds->d;
    src->labelled = ds->labels != NULL;
    src->chunk = chunk ? chunk : 4096;
    src->pass = dataset_pass;
    src->impl = (void *)ds;
}
