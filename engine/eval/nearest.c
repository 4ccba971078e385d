#include "engine/eval/nearest.h"

#include <float.h>
#include <math.h>

#include "engine/core/alloc.h"

int pg_eval_nearest(const pg_mat *q, const pg_mat *r, double *dist, uint32_t *idx,
                    pg_eval_progress_fn progress, void *ctx, pg_error *err)
{
    if (!q || !r || !dist || q->rows == 0 || r->rows == 0 || q->cols != r->cols || q->cols == 0)
        return pg_error_set(err, PG_EINVAL,
                            "nearest neighbours need non-empty query and reference rows of one "
                            "width");
    if (r->rows > UINT32_MAX)
        return pg_error_set(err, PG_EINVAL, "at most 2^32 - 1 reference rows");
    if (!pg_mat_all_finite(q) || !pg_mat_all_finite(r))
        return pg_error_set(err, PG_EINVAL, "nearest neighbours need finite rows");
    size_t n = q->rows, m = r->rows, d = q->cols;
    size_t nb = n < PG_EVAL_NN_BLOCK ? n : PG_EVAL_NN_BLOCK;
    float *rn = pg_alloc_f32(m), *dot = pg_alloc_f32(nb * m);
    if (!rn || !dot) {
        pg_free(rn);
        pg_free(dot);
        return pg_error_set(err, PG_ENOMEM, "no memory for a %zu x %zu distance block", nb, m);
    }
    pg_mat_row_sqnorms(r, rn);
    int rc = PG_OK;
    for (size_t b0 = 0; b0 < n && rc == PG_OK; b0 += nb) {
        size_t bn = n - b0 < nb ? n - b0 : nb;
        pg_mat qb = pg_mat_rows(q, b0, bn), dm = pg_mat_view(dot, bn, m);
        if ((rc = pg_gemm(1.0f, &qb, false, r, true, 0.0f, &dm, err))) break;
#pragma omp parallel for schedule(static)
        for (size_t i = 0; i < bn; i++) {
            const float *row = dot + i * m;
            size_t best = 0;
            float bv = FLT_MAX;
            for (size_t j = 0; j < m; j++) {
                float v = rn[j] - 2.0f * row[j];
                if (v < bv) {
                    bv = v;
                    best = j;
                }
            }
            const float *a = pg_mat_row(q, b0 + i), *c = pg_mat_row(r, best);
            double s = 0.0;
            for (size_t k = 0; k < d; k++) {
                double t = (double)a[k] - (double)c[k];
                s += t * t;
            }
            dist[b0 + i] = sqrt(s);
            if (idx) idx[b0 + i] = (uint32_t)best;
        }
        if (progress && progress(ctx, "nearest", (double)(b0 + bn) / (double)n))
            rc = pg_error_set(err, PG_ECANCELLED, "nearest-neighbour search cancelled");
    }
    pg_free(rn);
    pg_free(dot);
    return rc;
}

double pg_eval_quantile(const double *sorted, size_t n, double p)
{
    if (n == 0) return NAN;
    if (p <= 0.0) return sorted[0];
    if (p >= 1.0) return sorted[n - 1];
    double pos = p * (double)(n - 1);
    size_t lo = (size_t)pos;
    if (lo >= n - 1) return sorted[n - 1];
    double frac = pos - (double)lo;
    return sorted[lo] + frac * (sorted[lo + 1] - sorted[lo]);
}
