/* engine/methods/calib_table.h - class-conditional calibration of a
 * generator on a typed table (engine/data/table.h, heads.h).
 *
 * Why: a logistic regression trained on synthetic rows depends mostly on
 * each class's mean of the encoded row, and the categorical TV on each
 * column's category frequencies. A generator trained with noisy minibatch
 * gradients misses both (credit_data at epsilon 5: TV 0.24-0.28), while one
 * Gaussian release of per-class sums estimates them from all rows at once.
 * calib.h does this for untyped rows by shifting samples; on a table a shift
 * would break the one-hot blocks, so this module works per head (heads.h).
 *
 * The release (pg_calib_table_release) reads the rows in the space the
 * generator trains in: numbers through the quantile map when there is one
 * (qmap.h, itself a DP release charged before this one). Each row of class
 * k contributes one vector v with one block per head:
 *   numeric head      t = (u - c) / h clamped to [-1, 1], c and h the centre
 *                     and half width of the model range [lo, hi]
 *   softmax head(s)   the head's units, negatives set to 0 and the block
 *                     scaled down to l2 norm <= 1 (a valid one-hot row or an
 *                     all-zero reference state is unchanged)
 * so |v|_2^2 <= B2 = H, the number of heads (pg_calib_table_bound2),
 * whatever the row holds: the clamps are there so a hostile row cannot
 * exceed it. The released vector (S_1 / sqrt(B2), ..., S_K / sqrt(B2), n_1,
 * ..., n_K) of per-class sums and counts moves by at most sqrt(1 + 1) =
 * sqrt(2) in l2 when one row is added or removed (one S_k by |v| <=
 * sqrt(B2), one n_k by 1; attained by a row with every numeric unit at a
 * bound and a one-hot in every softmax head). Adding N(0, 2 s^2) to every
 * coordinate is the Gaussian mechanism with noise multiplier s: RDP
 * alpha / (2 s^2) at every order, exactly calib.h's curve. The noise comes
 * from the secure generator only.
 *
 * Post-processing into targets (K x 2d floats, the checkpoint tensor): with
 * n^_k = max(n_k + noise, 1), a numeric unit's target mean is c + h m, m =
 * sqrt(B2) S / n^_k clamped to [-1, 1]; a softmax head's target frequencies
 * are sqrt(B2) S_j / n^_k clipped at 0 and normalized (a reference state,
 * heads.h SOFTMAX_REF, gets 1 - sum of its units before clipping; only the
 * units are stored). A class with no mass left gets uniform frequencies.
 * The second d columns hold a numeric unit's target within-class sd, -1
 * when not asked for (calibration.numeric "shift", the default), without a
 * quantile map and on softmax units. With a map it can be guessed without
 * another release: a mapped column is about uniform on
 * [c - k h, c + k h] (k the map's spread), variance (k h)^2 / 3 over all
 * rows, of which the released class means explain sum_k pi_k (m_k - m)^2
 * (pi from the released counts); the classes share the rest (floored at a
 * hundredth of the total).
 *
 * The rule (pg_calib_table_fit, pg_calib_table_apply): measured on a
 * fixed-seed draw of the generator for each class, in the same encoding, so
 * every replica and a reload serve the same rule. Categorical: a sample in a
 * state a with measured frequency q_a above the target p_a moves with
 * probability (q_a - p_a) / q_a to a state b drawn with probability
 * proportional to (p_b - q_b)+: the fewest samples move, and the expected
 * frequencies after the move are exactly p (for the measured q). Numeric,
 * by default a shift (below); with a target sd s ("rank"): x -> m + sqrt(3) s (2 G(x) - 1), G the
 * class's measured CDF of the unit (65 quantiles, linear between them), so the class comes out
 * uniform with the target mean and sd, as a mapped column is over all rows (an affine map would
 * keep the generator's tails, which the map's decoding sends to the column's min and max). The
 * pooled sd is a guess: a class narrower than the others comes out too wide (a skewed column's
 * median moved, test_qmap_methods), which is why it is not the default; without a target sd, a
 * shift x -> x + b fitted by a few fixed-point passes so that the draw, clamped to [lo, hi], has
 * the target mean. Moves draw two uniforms per softmax head per row from the caller's generator
 * whatever the outcome, so row i gets the same draws however a request is chunked.
 *
 * Quantile rule (calibration.numeric "quantile", the default for dp_sinkhorn
 * on labelled central tables): the quantile map is released per class
 * instead of pooled (qmap.h, pg_qmap_release_classes: one histogram per
 * (class, column); a row lies in one class, so the concatenation has the
 * pooled release's l2 sensitivity, sqrt(c) add/remove and sqrt(2c)
 * replace-one, and the same noise gives the same RDP: nothing is added to
 * the plan). A sample of class k is sent to F_k^-1(G_k(x)) (below,
 * pg_calib_table_set_quantiles), F_k the class's released CDF, G_k the
 * generator's measured on the fixed-seed draw: each class's bin masses are
 * the released ones whatever the generator learned, a collapse included.
 *
 * Errors: PG_EPRIVACY for a seeded generator in the release; PG_EINVAL for
 * bad arguments (no heads, widths not covering d, s <= 0, a label outside
 * [0, classes)); PG_ENOMEM. Outputs are written only on success. Callers own
 * every buffer; a pg_calib_table owns its arrays and a copy of the heads.
 */
#ifndef PG_METHODS_CALIB_TABLE_H
#define PG_METHODS_CALIB_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/core/rng.h"
#include "engine/data/qmap.h"
#include "engine/methods/heads.h"

/* B2, the squared l2 bound of one row's vector (above). */
double pg_calib_table_bound2(const pg_heads *h);

/* The noise-free released vector: out gets K x d scaled sums (S_k /
 * sqrt(B2), the encoded layout) then the K counts; K = max(classes, 1).
 * Rows are n x h->d, passed through qmap (NULL: none) before they are read. */
int pg_calib_table_stats(const pg_heads *h, const pg_qmap *qmap, const float *x,
                         const int32_t *labels, size_t n, int classes, double *out, pg_error *err);

/* One release: stats + N(0, 2 s^2) per coordinate, post-processed into
 * targets (K x 2d); spread: fill the within-class sds from the map (else,
 * and without a map, they stay -1 and numbers are shifted). raw (optional,
 * K d + K): the noisy vector itself. */
int pg_calib_table_release(pg_rng *secure, const pg_heads *h, const pg_qmap *qmap, const float *x,
                           const int32_t *labels, size_t n, int classes, double s, bool spread,
                           float *targets, double *raw, pg_error *err);

/* PG_OK when targets (K x 2d) are what a release can produce: numeric means
 * inside [lo, hi] and sds in [0, (hi - lo) / 2] or -1, each softmax head's
 * frequencies in [0, 1] summing to at most 1 (plain softmax: to 1) within
 * 1e-3. Checkpoints are checked with it. */
int pg_calib_table_check_targets(const pg_heads *h, int classes, const float *targets,
                                 pg_error *err);

typedef struct pg_calib_table pg_calib_table;

/* Empty rule for K = max(classes, 1) classes (no moves, no shifts). */
int pg_calib_table_new(const pg_heads *h, int classes, pg_calib_table **out, pg_error *err);
void pg_calib_table_free(pg_calib_table *c);

/* Fits class k's rule (targets_k: that class's 2d targets) from rows
 * (n x d, the table's encoding) drawn from the generator for class k. */
int pg_calib_table_fit(pg_calib_table *c, int k, const float *targets_k, const float *rows,
                       size_t n, pg_error *err);

/* Every class at once: rows are K blocks of n rows (block k drawn for class
 * k), targets K x 2d. */
int pg_calib_table_fit_all(pg_calib_table *c, const float *targets, const float *rows, size_t n,
                           pg_error *err);

/* In place on rows (n x d) whose classes are labels (NULL: class 0). */
/* Quantile rule (calibration.numeric "quantile"). class_cdf: per class
 * (max(classes, 1)), per column of the pooled map, bins + 1 CDF values over
 * its bins (pg_qmap_release_classes' per-class maps, pg_calib_table_class_cdf;
 * pg_calib_table_cdf_len values per class): nondecreasing from 0 to 1
 * (pg_calib_table_check_cdf, PG_EFORMAT otherwise). Set before fitting: the
 * fit then keeps each class's sorted draw of every mapped unit (its measured
 * CDF G_k; level (i + 1/2) / m at the i-th of m, linear between) and apply
 * sends a sample x of class k to pooled_encode(F_k^-1(G_k(x))), F_k the
 * class's released CDF (piecewise linear, clamped to the bins; the decoder
 * snaps integers). Ties in the draw (a collapsed generator) are spread by a
 * uniform from the caller's generator: one draw per mapped unit per row,
 * used or not, so chunking keeps row i's draws. The class's mean is then
 * that of F_k; the class_stats release still moves categories. A unit with
 * no present value in the draw keeps the shift. Inside a bin the release
 * says nothing (qmap.h spreads a bin's mass uniformly): where the draw has at
 * least 20 values in the bin's mapped interval and no tie run above a tenth
 * of them, the sample takes the draw's quantile at its place within the bin's
 * mass (the generator's own within-bin shape, learned from the rows: a skewed
 * column piled at the bottom of its first bin, test_qmap_methods), else the
 * linear inverse. So F_k is met exactly at the bins' edges. With sub-bins
 * (pooled->sub > 0, qmap.h) each class's vector continues, after its bins'
 * CDFs, with the within-bin CDFs of the released bins (pg_qmap_sub_len
 * values: per column, per bin with more than one sub-bin, its m + 1 values
 * from 0 to 1, or -1 throughout when nothing was released there); where
 * present they take the place of the draw's shape: p's place in the bin's
 * mass picks a sub-bin by that CDF, linear inside it, a point sub-bin (one
 * integer value, a column's minimum) giving its value. */
size_t pg_calib_table_cdf_len(const pg_qmap *pooled);
int pg_calib_table_check_cdf(const pg_qmap *pooled, int classes, const float *class_cdf,
                             pg_error *err);
int pg_calib_table_class_cdf(const pg_qmap *const *per_class, int classes, float *out);
int pg_calib_table_set_quantiles(pg_calib_table *c, const pg_qmap *pooled, const float *class_cdf,
                                 pg_error *err);

/* Independence (calibration.independence): with probability lambda, each
 * softmax head and each quantile-mapped unit of a row (the quantile rule) is
 * redrawn from its class's target marginal alone (a state from the target
 * frequencies; F_k^-1 of a fresh uniform) instead of moved from the
 * generator's value. Every other unit keeps its rule. Each unit's law is the
 * same either way (the targets), so only the within-class dependence
 * between units changes: lambda = 1 serves each class's released marginals
 * sampled independently, 0 (the default) the generator's dependence. Pure
 * post-processing of released quantities and of the generator. With lambda
 * > 0 apply draws two more uniforms per such unit per row, used or not (so
 * chunking keeps row i's draws); at 0 the draws are the old ones. */
int pg_calib_table_set_independence(pg_calib_table *c, double lambda, pg_error *err);
double pg_calib_table_independence(const pg_calib_table *c);

/* Copula (calibration.copula_noise, calib_copula.h): the redrawn units of
 * a row (independence above) take their levels from class k's released
 * Gaussian copula R_k (K x m x m, m = pg_calib_table_copula_dim, at most
 * PG_CALIB_COPULA_MAX) instead of independent uniforms: a number F_k^-1 of
 * its level, a softmax head the state whose copula interval holds it
 * (states ordered by the class's target frequencies, the order the release
 * used). Set after pg_calib_table_set_quantiles, with the targets (K x 2d)
 * the release read; PG_EFORMAT when an R_k is not a correlation matrix
 * (pg_copula_check). Apply then draws m normals per row first, used or not;
 * without it the draws are the old ones. */
#define PG_CALIB_COPULA_MAX 256
size_t pg_calib_table_copula_dim(const pg_calib_table *c);
int pg_calib_table_set_copula(pg_calib_table *c, const float *targets, const float *R,
                              pg_error *err);

void pg_calib_table_apply(const pg_calib_table *c, pg_rng *rng, float *rows, const int32_t *labels,
                          size_t n);

#endif
