#include "engine/data/dataset.h"

#include <math.h>
#include <string.h>

#include "engine/core/alloc.h"

int pg_dataset_shape_width(const size_t *shape, int ndim, size_t *d, pg_error *err)
{
    if (!shape || (ndim != 1 && ndim != 3))
        return pg_error_set(err, PG_EINVAL, "dataset shape must be [d] or [c, h, w], not rank %d",
                            ndim);
    size_t w = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0)
            return pg_error_set(err, PG_EINVAL, "dataset shape has a zero size at position %d", i);
        if (pg_size_mul(w, shape[i], &w))
            return pg_error_set(err, PG_ERANGE, "dataset shape overflows");
    }
    *d = w;
    return PG_OK;
}

/* Checks everything but the buffers; fills the descriptive fields of *ds. */
static int describe(pg_dataset *ds, size_t n, const size_t *shape, int ndim, int num_classes,
                    float lo, float hi, size_t *count, pg_error *err)
{
    size_t d = 0;
    int rc = pg_dataset_shape_width(shape, ndim, &d, err);
    if (rc) return rc;
    if (!isfinite(lo) || !isfinite(hi) || !(lo < hi))
        return pg_error_set(err, PG_EINVAL, "dataset range [%g, %g] must be finite with lo < hi",
                            (double)lo, (double)hi);
    if (num_classes < 0)
        return pg_error_set(err, PG_EINVAL, "dataset num_classes %d is negative", num_classes);
    if (pg_size_mul(n, d, count) || pg_size_mul(*count, sizeof(float), &(size_t){0}))
        return pg_error_set(err, PG_ERANGE, "dataset of %zu rows x %zu overflows", n, d);
    memset(ds, 0, sizeof *ds);
    ds->n = n;
    ds->d = d;
    ds->ndim = ndim;
    for (int i = 0; i < ndim; i++) ds->shape[i] = shape[i];
    ds->num_classes = num_classes;
    ds->lo = lo;
    ds->hi = hi;
    return PG_OK;
}

int pg_dataset_alloc(pg_dataset *ds, size_t n, const size_t *shape, int ndim, int num_classes,
                     float lo, float hi, pg_error *err)
{
    size_t count = 0;
    pg_dataset t;
    memset(ds, 0, sizeof *ds);
    int rc = describe(&t, n, shape, ndim, num_classes, lo, hi, &count, err);
    if (rc) return rc;
    t.x = pg_alloc_f32(count ? count : 1);
    t.labels = num_classes > 0 ? pg_calloc(n ? n : 1, sizeof(int32_t)) : NULL;
    if (!t.x || (num_classes > 0 && !t.labels)) {
        pg_free(t.x);
        pg_free(t.labels);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate a dataset of %zu rows x %zu", n, t.d);
    }
    *ds = t;
    return PG_OK;
}

int pg_dataset_adopt(pg_dataset *ds, float *x, int32_t *labels, size_t n, const size_t *shape,
                     int ndim, int num_classes, float lo, float hi, pg_error *err)
{
    size_t count = 0;
    pg_dataset t;
    memset(ds, 0, sizeof *ds);
    int rc = describe(&t, n, shape, ndim, num_classes, lo, hi, &count, err);
    if (rc) return rc;
    if (!x) return pg_error_set(err, PG_EINVAL, "dataset buffer is NULL");
    if ((num_classes > 0) != (labels != NULL))
        return pg_error_set(err, PG_EINVAL,
                            num_classes > 0 ? "a dataset with classes needs labels"
                                            : "labels given for a dataset without classes");
    t.x = x;
    t.labels = labels;
    *ds = t;
    return PG_OK;
}

void pg_dataset_free(pg_dataset *ds)
{
    if (!ds) return;
    pg_free(ds->x);
    pg_free(ds->labels);
    memset(ds, 0, sizeof *ds);
}

static void set_bad(size_t *bad_row, size_t i)
{
    if (bad_row) *bad_row = i;
}

int pg_dataset_check_width(size_t got, size_t want, pg_error *err)
{
    if (got != want)
        return pg_error_set(err, PG_EINVAL, "rows have %zu values, the dataset's shape needs %zu",
                            got, want);
    return PG_OK;
}

int pg_dataset_check_finite(const float *x, size_t n, size_t d, size_t *bad_row, pg_error *err)
{
    for (size_t i = 0; i < n; i++) {
        const float *r = x + i * d;
        /* x - x is 0 for finite x and NaN otherwise: one test per row in the
         * common all-good case, vectorizable. */
        float acc = 0.0f;
        for (size_t j = 0; j < d; j++) acc += r[j] - r[j];
        if (acc == 0.0f) continue;
        for (size_t j = 0; j < d; j++)
            if (!isfinite(r[j])) {
                set_bad(bad_row, i);
                return pg_error_set(err, PG_EINVAL, "row %zu, column %zu: value is %s", i + 1,
                                    j + 1, isnan(r[j]) ? "NaN" : "infinite");
            }
    }
    return PG_OK;
}

int pg_dataset_check_range(const float *x, size_t n, size_t d, float lo, float hi, size_t *bad_row,
                           pg_error *err)
{
    for (size_t i = 0; i < n; i++) {
        const float *r = x + i * d;
        int ok = 1;
        for (size_t j = 0; j < d; j++) ok &= (r[j] >= lo) & (r[j] <= hi);
        if (ok) continue;
        for (size_t j = 0; j < d; j++)
            if (!(r[j] >= lo && r[j] <= hi)) {
                set_bad(bad_row, i);
                return pg_error_set(err, PG_ERANGE,
                                    "row %zu, column %zu: value %g is outside the range [%g, %g]",
                                    i + 1, j + 1, (double)r[j], (double)lo, (double)hi);
            }
    }
    return PG_OK;
}

int pg_dataset_check_labels(const int32_t *labels, size_t n, int num_classes, size_t *bad_row,
                            pg_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (labels[i] < 0 || labels[i] >= num_classes) {
            set_bad(bad_row, i);
            return pg_error_set(err, PG_ERANGE, "row %zu: label %d is outside [0, %d)", i + 1,
                                (int)labels[i], num_classes);
        }
    return PG_OK;
}

int pg_dataset_check_labels_i64(const int64_t *labels, size_t n, int num_classes, size_t *bad_row,
                                pg_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (labels[i] < 0 || labels[i] >= num_classes) {
            set_bad(bad_row, i);
            return pg_error_set(err, PG_ERANGE, "row %zu: label %lld is outside [0, %d)", i + 1,
                                (long long)labels[i], num_classes);
        }
    return PG_OK;
}

int pg_dataset_put_rows(pg_dataset *ds, size_t row0, const float *x, size_t count, size_t d,
                        const int64_t *labels, int flags, size_t *bad_row, pg_error *err)
{
    size_t end;
    if (pg_size_add(row0, count, &end) || end > ds->n)
        return pg_error_set(err, PG_ERANGE, "rows %zu..%zu do not fit a dataset of %zu rows", row0,
                            row0 + count, ds->n);
    int rc = pg_dataset_check_width(d, ds->d, err);
    if (rc) return rc;
    if (ds->num_classes > 0 && !labels)
        return pg_error_set(err, PG_EINVAL, "the dataset has %d classes: every row needs a label",
                            ds->num_classes);
    if (ds->num_classes == 0 && labels)
        return pg_error_set(err, PG_EINVAL, "labels given for a dataset without classes");
    if (count > 0 && !x) return pg_error_set(err, PG_EINVAL, "rows are NULL");
    if ((rc = pg_dataset_check_finite(x, count, d, bad_row, err))) return rc;
    if ((flags & PG_DATASET_CHECK_RANGE) &&
        (rc = pg_dataset_check_range(x, count, d, ds->lo, ds->hi, bad_row, err)))
        return rc;
    if (labels && (rc = pg_dataset_check_labels_i64(labels, count, ds->num_classes, bad_row, err)))
        return rc;
    if (count) memcpy(pg_dataset_row(ds, row0), x, count * d * sizeof(float));
    if (labels)
        for (size_t i = 0; i < count; i++) ds->labels[row0 + i] = (int32_t)labels[i];
    return PG_OK;
}

int pg_dataset_validate(const pg_dataset *ds, int flags, size_t *bad_row, pg_error *err)
{
    size_t d = 0;
    int rc = pg_dataset_shape_width(ds->shape, ds->ndim, &d, err);
    if (rc) return rc;
    if ((rc = pg_dataset_check_width(ds->d, d, err))) return rc;
    if (!ds->x) return pg_error_set(err, PG_EINVAL, "dataset has no data buffer");
    if ((ds->num_classes > 0) != (ds->labels != NULL))
        return pg_error_set(err, PG_EINVAL, "dataset labels do not match its class count");
    if ((rc = pg_dataset_check_finite(ds->x, ds->n, ds->d, bad_row, err))) return rc;
    if ((flags & PG_DATASET_CHECK_RANGE) &&
        (rc = pg_dataset_check_range(ds->x, ds->n, ds->d, ds->lo, ds->hi, bad_row, err)))
        return rc;
    if (ds->labels &&
        (rc = pg_dataset_check_labels(ds->labels, ds->n, ds->num_classes, bad_row, err)))
        return rc;
    return PG_OK;
}
