/* engine/methods/calib_copula.h - a DP per-class Gaussian copula for table
 * calibration (calib_table.h, calibration.copula_noise).
 *
 * Why: served with calibration.independence 1, each class's released
 * marginals are sampled independently, and the dependence between columns
 * inside a class is lost. A Gaussian copula per class keeps it at the cost of
 * one release of m(m - 1) / 2 numbers per class, and a logistic regression
 * trained on its samples barely notices noise of sd 0.2 on each correlation
 * (issue 28, credit_data: 0.785 independent, 0.799 copula, 0.798 noised).
 *
 * Coordinates (pg_copula_dim): every softmax head (categorical, boolean,
 * missing indicator) and every numeric head whose unit the pooled quantile
 * map covers, in head order. Other numeric units keep calib_table's rule.
 *
 * Normal scores, from already-released quantities only, per row of class k:
 *   softmax head   the states ordered by the class's released frequency p
 *                  (targets, descending, ties by index): state s owns the
 *                  interval [C_s - p_s, C_s) of cumulative mass; u = C_s -
 *                  p_s + V p_s, V uniform from the secure generator;
 *   mapped number  u = F_k(y), F_k the class's released CDF over the pooled
 *                  map's bins (linear inside a bin); an integer column is
 *                  jittered first, y + (V - 1/2) step, so u is uniform over
 *                  the value's CDF interval (the decoder snaps back to it);
 *                  a missing value (its indicator set) gets u = V;
 * u clamped to [1e-9, 1 - 1e-9], z_j = Phi^-1(u_j), then the row's z scaled
 * down to l2 norm <= B, B^2 = m + 2 sqrt(2 m) (pg_copula_clip2: |z|^2 is
 * about chi-square with m degrees of freedom, mean m and sd sqrt(2 m); 2-5 %
 * of rows are scaled). The post-processing divides by the released
 * diagonal, which the scaling shrinks too, so a clipped correlation stays
 * close: 0.70 comes out 0.69 at m = 3 and 16 (simulated), where dividing by
 * the count alone, as a first version did, gave 0.57 with a clip at 2 m.
 * The noise grows with B^2: a looser clip (mean + 4 sd + 10) doubled it at
 * m = 16 and scored lower on credit_data.
 * Release (pg_copula_release): per class the upper triangle, diagonal
 * included, of sum_i z_i z_i^T, P = m(m + 1) / 2 numbers. One row's vector
 * p_jl = z_j z_l (j <= l) has |p|_2^2 = (|z|^4 + sum z_j^4) / 2 <= |z|^4 <=
 * B^4, so adding or removing a row moves the K P released numbers by at
 * most D = B^2 in l2 (a row is in one class; approached by a row whose
 * score is all in one coordinate); replacing one moves them by at most 2 D
 * (|p - p'| <= |p| + |p'|; a bound, not attained). Every coordinate gets
 * N(0, (s D)^2) from the secure generator: RDP alpha / (2 s^2) add/remove
 * (dp_sinkhorn), 2 alpha / s^2 replace-one (swd_gen) (pg_copula_rdp).
 * Post-processing: R_jl = S_jl / sqrt(S_jj S_ll) (each S_jj floored at half
 * the class count released with the class statistics), clamped to [-1, 1],
 * eigenvalues floored at PG_COPULA_EIG_FLOOR (Jacobi), rescaled to unit
 * diagonal: a correlation matrix whose Cholesky factor exists. The diagonal
 * is released because the scores' variance is not 1 where the released
 * marginal is coarse (linear inside a bin of a skewed column): dividing by
 * the count alone turned a correlation of 0.70 into 0.79 on a test table.
 *
 * Sampling (calib_table.h, pg_calib_table_set_copula): a row of class k
 * draws z = L_k g (g: m normals from the caller's generator, drawn for every
 * row), u = Phi(z), and each coordinate's redrawn value takes u_j instead of
 * an independent uniform (softmax: the state whose interval holds u_j;
 * number: F_k^-1(u_j) as the quantile rule inverts it).
 *
 * Errors: PG_EPRIVACY for a seeded generator in the release; PG_EINVAL for
 * bad arguments; PG_EFORMAT from pg_copula_check; PG_ENOMEM. Callers own
 * every buffer; outputs are written only on success.
 */
#ifndef PG_METHODS_CALIB_COPULA_H
#define PG_METHODS_CALIB_COPULA_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/core/rng.h"
#include "engine/data/qmap.h"
#include "engine/methods/heads.h"

#define PG_COPULA_EIG_FLOOR 0.02 /* smallest eigenvalue of a released R */

/* B^2 for m coordinates. */
double pg_copula_clip2(size_t m);

/* m, the copula's coordinates; coord (optional, m entries) gets each one's
 * head index. pooled may be NULL (then only softmax heads). */
size_t pg_copula_dim(const pg_heads *h, const pg_qmap *pooled, size_t *coord);

/* D (add/remove) or 2 D (replace_one) for m coordinates. */
double pg_copula_sensitivity(size_t m, int replace_one);

/* The release's RDP at orders[0 .. n): alpha / (2 s^2) add/remove,
 * 2 alpha / s^2 replace-one. */
int pg_copula_rdp(double s, int replace_one, const double *orders, size_t n, double *rdp,
                  pg_error *err);

/* Per softmax head of class k, its states in the copula's order and their
 * cumulative masses: order (states(head) entries) and cum (same length,
 * cum[i] = mass of the first i + 1 ordered states, the last exactly 1).
 * targets_k: the class's 2d calibration targets (calib_table.h). */
void pg_copula_head_order(const pg_head *hd, const float *targets_k, size_t *order, double *cum);

/* One row's clipped normal scores (m values) into z; row: the table's
 * encoded row (before the quantile map); class_cdf_k: the class's CDF
 * values (calib_table.h layout, pg_calib_table_cdf_len); rng: where the
 * jitter comes from (the release passes the secure generator). */
int pg_copula_scores(const pg_heads *h, const pg_qmap *pooled, const float *class_cdf_k,
                     const float *targets_k, const float *row, pg_rng *rng, double *z,
                     pg_error *err);

/* The noise-free statistic: out gets K x P sums (P = m(m + 1) / 2, row-major
 * upper triangle with the diagonal). class_cdf: K x cdf_len; targets: K x 2d. */
int pg_copula_stats(const pg_heads *h, const pg_qmap *pooled, const float *class_cdf,
                    const float *targets, const float *x, const int32_t *labels, size_t n,
                    int classes, pg_rng *rng, double *out, pg_error *err);

/* One release into R (K x m x m floats, correlation matrices). counts: the
 * K released class counts (the diagonal's floor). raw (optional, K x P):
 * the noisy sums. */
int pg_copula_release(pg_rng *secure, const pg_heads *h, const pg_qmap *pooled,
                      const float *class_cdf, const float *targets, const double *counts,
                      const float *x, const int32_t *labels, size_t n, int classes, double s,
                      float *R, double *raw, pg_error *err);

/* Post-processing of one class's noisy sums: R (m x m). */
void pg_copula_project(const double *sums, double count, size_t m, float *R);

/* PG_OK when each of the K m x m matrices is finite, symmetric, with unit
 * diagonal and a Cholesky factor whose pivots are >= 1e-6 (1e-4
 * tolerance on the rest). Checkpoints are checked with it. */
int pg_copula_check(const float *R, size_t K, size_t m, pg_error *err);

/* Lower Cholesky factor of each class's R (K x m x m doubles). */
int pg_copula_cholesky(const float *R, size_t K, size_t m, double *L, pg_error *err);

#endif
