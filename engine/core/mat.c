#include "engine/core/mat.h"

#include <cblas.h>
#include <math.h>
#include <omp.h>
#include <string.h>
#include <unistd.h>

#include "engine/core/alloc.h"

int pg_mat_alloc(pg_mat *m, size_t rows, size_t cols, pg_error *err)
{
    size_t n;
    memset(m, 0, sizeof *m);
    if (pg_size_mul(rows, cols, &n))
        return pg_error_set(err, PG_ENOMEM, "matrix %zu x %zu overflows", rows, cols);
    float *p = pg_alloc_f32(n);
    if (!p) return pg_error_set(err, PG_ENOMEM, "cannot allocate a %zu x %zu matrix", rows, cols);
    m->data = p;
    m->rows = rows;
    m->cols = cols;
    m->stride = cols;
    return PG_OK;
}

void pg_mat_free(pg_mat *m)
{
    if (!m) return;
    pg_free(m->data);
    memset(m, 0, sizeof *m);
}

int pg_gemm(float alpha, const pg_mat *a, bool trans_a, const pg_mat *b, bool trans_b, float beta,
            pg_mat *c, pg_error *err)
{
    size_t m = trans_a ? a->cols : a->rows;
    size_t k = trans_a ? a->rows : a->cols;
    size_t kb = trans_b ? b->cols : b->rows;
    size_t n = trans_b ? b->rows : b->cols;
    if (k != kb || c->rows != m || c->cols != n)
        return pg_error_set(err, PG_EINVAL,
                            "gemm shape mismatch: (%zu x %zu) * (%zu x %zu) into %zu x %zu", m, k,
                            kb, n, c->rows, c->cols);
    pg_sgemm(trans_a, trans_b, m, n, k, alpha, a->data, a->stride, b->data, b->stride, beta,
             c->data, c->stride);
    return PG_OK;
}

void pg_mat_row_sqnorms(const pg_mat *m, float *out)
{
    for (size_t i = 0; i < m->rows; i++) {
        const float *r = pg_mat_row(m, i);
        float s = 0.0f;
        for (size_t j = 0; j < m->cols; j++) s += r[j] * r[j];
        out[i] = s;
    }
}

bool pg_mat_all_finite(const pg_mat *m)
{
    for (size_t i = 0; i < m->rows; i++) {
        const float *r = pg_mat_row(m, i);
        for (size_t j = 0; j < m->cols; j++)
            if (!isfinite(r[j])) return false;
    }
    return true;
}

int pg_threads_set(int n)
{
    if (n <= 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n = cores > 0 ? (int)cores : 1;
    }
    /* OpenBLAS's own threads would only compete with ours (and its threaded
     * SGEMM is not reproducible across thread counts; see mat.h). The OpenMP
     * build of OpenBLAS sets the OpenMP count too, so it goes first. */
    openblas_set_num_threads(1);
    omp_set_num_threads(n);
    return n;
}

int pg_threads_get(void)
{
    return omp_get_max_threads();
}
