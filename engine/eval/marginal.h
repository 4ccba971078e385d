/* engine/eval/marginal.h - one column of synthetic rows against the same column
 * of reference rows: two-sample Kolmogorov-Smirnov statistic, Wasserstein-1,
 * total variation between categorical marginals, mean and standard deviation.
 *
 * Definitions (F_x(t) = #{i : x_i <= t} / n, the right-continuous empirical CDF):
 *   KS(x, y) = max over t in the merged sample of |F_x(t) - F_y(t)|. Tied
 *     values are counted together on both sides before the difference is
 *     taken, which is scipy.stats.ks_2samp's statistic (any alternative of
 *     'two-sided'; method does not change the statistic).
 *   W1(x, y) = integral over R of |F_x(t) - F_y(t)| dt, computed exactly as the
 *     sum over consecutive distinct merged values v_k < v_{k+1} of
 *     |F_x(v_k) - F_y(v_k)| (v_{k+1} - v_k): scipy.stats.wasserstein_distance
 *     with unit weights. For n == m it equals mean_i |x_(i) - y_(i)|.
 *   TV(p, q) = 1/2 sum_c |p_c - q_c| between the category frequencies of two
 *     columns of integer codes in [0, k).
 *   mean = sum x_i / n; std = sqrt(sum (x_i - mean)^2 / n), the population
 *     standard deviation (ddof = 0, numpy.std's default).
 * Everything is accumulated in double from float32 inputs.
 *
 * Columns are read with a stride (elements between consecutive rows) so that a
 * column of a row-major n x d matrix is (data + j, n, d). Errors: PG_EINVAL for
 * empty columns, non-finite values, or category codes that are not integers in
 * [0, k); outputs are untouched on failure. Nothing here keeps state.
 */
#ifndef PG_EVAL_MARGINAL_H
#define PG_EVAL_MARGINAL_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"

/* Largest number of categories a categorical column may declare. */
#define PG_EVAL_MAX_CATEGORIES 65536

/* KS and W1 of two ascending arrays (a: n values, b: m values, n, m >= 1). */
double pg_eval_ks_sorted(const float *a, size_t n, const float *b, size_t m);
double pg_eval_w1_sorted(const float *a, size_t n, const float *b, size_t m);

/* KS and W1 of column x (n values, stride sx) against column y (m values,
 * stride sy). scratch holds n + m + max(n, m) floats (copies to sort). Either
 * output may be NULL. */
int pg_eval_ks_w1(const float *x, size_t n, size_t sx, const float *y, size_t m, size_t sy,
                  float *scratch, double *ks, double *w1, pg_error *err);

/* Mean and population std of a column (n >= 1, finite). */
int pg_eval_moments(const float *x, size_t n, size_t sx, double *mean, double *std, pg_error *err);

/* Frequencies of the codes 0..k-1 in a column: freq[c] = #{x_i = c} / n. */
int pg_eval_frequencies(const float *x, size_t n, size_t sx, int32_t k, double *freq,
                        pg_error *err);

/* TV between two frequency vectors of length k. */
double pg_eval_tv(const double *p, const double *q, int32_t k);

#endif
