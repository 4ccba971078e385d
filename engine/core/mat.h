/* engine/core/mat.h - row-major float32 matrix views and BLAS wrappers.
 *
 * A pg_mat is a view: {data, rows, cols, stride} with element (i, j) at
 * data[i * stride + j]. Views never own memory; pg_mat_alloc/pg_mat_free are
 * the only functions that allocate or release a matrix's buffer. Functions
 * check shapes and return PG_EINVAL (with a message) on a mismatch; they never
 * allocate unless their name says so, except pg_gemm / pg_sgemm /
 * pg_sgemm_packed's packing scratch (freed before they return; without it
 * they take an unblocked path with the same results, so they never fail for
 * lack of memory).
 *
 * Determinism: pg_gemm / pg_sgemm compute every element of C as one fixed
 * chain, acc = fma(op(A)[i][p], op(B)[p][j], acc) for p = 0 .. k-1 from
 * acc = 0, then C = alpha * acc (beta = 0; C is not read) or alpha * acc +
 * beta * C (two roundings). The bits therefore depend only on the operands of
 * that element: not on the thread count, the tiling, the matrix shape, or
 * where the row sits in a batch. (CPUs without FMA use a separate multiply and
 * add: the same order, different bits.) OpenBLAS SGEMM is not used because its
 * Haswell/Zen kernels sum a dot product in an order that depends on the
 * element's place in their blocking, which follows the thread partition and
 * the shape. Any new kernel must keep the same rule: parallelize over
 * independent outputs, never split a sum at a point chosen by thread count.
 *
 * Threads: pg_threads_set sets the OpenMP count, used by pg_sgemm and the
 * engine's loops, and keeps OpenBLAS (no longer called for any product)
 * single-threaded.
 */
#ifndef PG_CORE_MAT_H
#define PG_CORE_MAT_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/core/error.h"

typedef struct pg_mat {
    float *data;
    size_t rows, cols, stride;
} pg_mat;

static inline pg_mat pg_mat_view(float *data, size_t rows, size_t cols)
{
    pg_mat m = {data, rows, cols, cols};
    return m;
}

static inline float *pg_mat_row(const pg_mat *m, size_t i)
{
    return m->data + i * m->stride;
}

/* Rows [r0, r0 + n) of m, sharing its memory. */
static inline pg_mat pg_mat_rows(const pg_mat *m, size_t r0, size_t n)
{
    pg_mat v = {m->data + r0 * m->stride, n, m->cols, m->stride};
    return v;
}

/* Allocates a zeroed rows x cols matrix (stride = cols). On failure m is
 * zeroed and PG_ENOMEM returned. */
int pg_mat_alloc(pg_mat *m, size_t rows, size_t cols, pg_error *err);
void pg_mat_free(pg_mat *m);

/* C = alpha * op(A) op(B) + beta * C, op(X) = X or X^T, in the fixed order
 * above. Parallel (OpenMP) for large products unless called inside a parallel
 * region. */
int pg_gemm(float alpha, const pg_mat *a, bool trans_a, const pg_mat *b, bool trans_b, float beta,
            pg_mat *c, pg_error *err);

/* The same on raw row-major pointers (lda, ldb, ldc: row strides); no shape
 * checks, m = 0 or n = 0 is a no-op, k = 0 scales C by beta. */
void pg_sgemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha, const float *a,
              size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc);

/* A constant right operand packed once for many products (the weights of a
 * served network): pg_sgemm_pack_b writes op(B) (k x n) into `packed`, which
 * holds pg_sgemm_packed_size(n, k) floats (64-byte aligned); pg_sgemm_packed
 * then computes C = alpha op(A) op(B) + beta C from it, skipping the per-call
 * packing. Same chains, so the same bits as pg_sgemm on the unpacked B. */
size_t pg_sgemm_packed_size(size_t n, size_t k);
void pg_sgemm_pack_b(bool trans_b, size_t n, size_t k, const float *b, size_t ldb, float *packed);
void pg_sgemm_packed(bool trans_a, size_t m, size_t n, size_t k, float alpha, const float *a,
                     size_t lda, const float *packed_b, float beta, float *c, size_t ldc);

/* out[i] = sum_j m[i, j]^2 for every row i. */
void pg_mat_row_sqnorms(const pg_mat *m, float *out);

/* True when every entry is finite. */
bool pg_mat_all_finite(const pg_mat *m);

/* Thread control for the calling job: OpenMP uses n threads (n <= 0 means
 * "all cores"), OpenBLAS one. Returns the count actually in effect. */
int pg_threads_set(int n);
int pg_threads_get(void);

#endif
