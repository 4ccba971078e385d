/* engine/methods/calib_ldp.h - class-conditional calibration of a generator
 * trained on a locally privatized typed table (entropic_gan), from the
 * privatized rows alone.
 *
 * Why: on credit_data at a local epsilon of 1000 the entropic GAN matched
 * every marginal (a classifier trained on real rows scores 0.82 on its rows)
 * but lost the class-conditional structure (one trained on its rows: 0.74,
 * against 0.785 for one fitted on the privatized rows themselves).
 *
 * Estimate (pg_calib_ldp_estimate): local rows are already private, so
 * anything computed from them is post-processing and costs nothing. Per
 * coordinate g of a row (a numeric value unit; the indicator of each state
 * of a randomized-response block) and class c, E[g(x~) | x, y] = h(x) is
 * known in closed form (Laplace and Gaussian noise have mean 0; k-ary
 * randomized response with keep p and other q reports state s with
 * probability q + (p - q) 1{x = s}), and the label went through its own
 * k-ary channel (keep P, other Q) independently of the columns, so
 *   E[g 1{y~ = j}] = (P - Q) A_j + Q sum_c A_c,  A_c = E[h 1{y = c}],
 * which inverts to A_c = E[g (1{y~ = c} - Q)] / (P - Q) (the rows of the
 * channel sum to 1); the class share is the same with g = 1, and the class
 * mean is A_c / pi_c. Every estimate is an average of per-row terms, hence
 * unbiased for A_c and pi_c (the ratio is consistent); its standard error
 * comes from the same terms (delta method). Per class the targets are:
 *   numeric unit            the mean of the value over rows where it is
 *                           present (the encoding holds 0 when missing, so
 *                           this is E[u | c] / P(present | c), the latter
 *                           floored at 0.05), clamped to the model range;
 *                           and the standard deviation of present values,
 *                           from E[u~^2 | c] minus the noise's variance
 *                           (Laplace 2 b^2, Gaussian sigma^2), capped at
 *                           sqrt((hi - m)(m - lo)) (no law on the range
 *                           with mean m spreads more)
 *   randomized-response     state frequencies (E - q) / (p - q), negatives
 *   block (category,        clipped to 0, renormalized
 *   boolean, indicator)
 * Without a label (or classes == 0) there is one class and no label channel.
 *
 * Signal (pg_calib_ldp_signal): for each pair of classes and coordinate the
 * debiased class-mean difference over its standard error; the largest |z|
 * against the Bonferroni threshold for a two-sided 5 % test over all
 * coordinates and pairs. Below it the reports carry no class difference
 * distinguishable from the channel's noise: a generator (or any model) can
 * only guess, and the calibrated snapshot gives the classes one law (below),
 * so a classifier trained on its rows falls back on the class shares
 * instead of on differences fitted to noise. The job view says so (the
 * trainer warning no_class_signal, warnings.h); privgen-bench credit prints
 * the statistic.
 *
 * Calibrated snapshot (pg_calib_ldp_wrap): per class, `per_class` rows drawn
 * from the inner snapshot with fixed seeds measure its statistics G_c.
 * Effective targets, per statistic and class: the generator's value G_c
 * moves toward the debiased t_c by the factor max(0, 1 - se_c^2 / d^2) (d
 * the gap): a value the reports pin down is met, one inside their noise
 * stays the generator's. When the signal check finds no class difference at all (max_z below its
 * threshold) the snapshot is pooled: every row, whatever its label, is drawn
 * from the generator's mixture over classes (its class proportions) and
 * goes through one set of maps onto the pooled targets (the mixture's value
 * moved toward the debiased sum pi_c t_c, pi the snapshot's class
 * proportions, by the same factor with the pooled error), so the features are
 * independent of the label rather than carrying whatever difference the
 * generator fitted to the noise.
 * States: a row of state s keeps it with probability min(1, t_s / f_s) and
 * otherwise moves to a state with a deficit (t_b > f_b) in proportion to the
 * deficit, which takes f exactly onto t; every block is then written as a
 * clean one-hot. Numbers: each unit of the class maps to clamp(m + a (v - m)
 * + s) with m the measured mean, a and s solved so the clamped present
 * values get the target mean and spread (bisection on s, a corrected for
 * the clamp in a few rounds); missing values hold 0 as the encoding says. The draws that move
 * states come from a stream seeded by the request's seed, one per row and block in order, so a
 * request for more rows begins with the rows of a request for fewer. The same network always gets
 * the same moves and shifts (a checkpoint reload reproduces them).
 *
 * Quantile maps (numeric units whose noise leaves the shape recoverable):
 * means and spreads do not fix a shape, and the generator's were wrong in
 * ways a classifier pays for (credit_data at a local epsilon of 1000: Amount
 * skewed left where the real one is skewed right; every class spread about
 * half the real one before the affine map; logistic regression 0.774 over
 * 5 runs, 0.782 with the real per-class quantiles put in). Where a unit's
 * noise standard deviation (Laplace sqrt(2) b, Gaussian sigma) is at most
 * twice every class's debiased spread, estimate also finds, by EM, the
 * maximum-likelihood law of (class, present value or missing) on a grid
 * under the label's, the indicator's and the value's channels together (a
 * nonparametric deconvolution; grid: 64 points over the range and 128
 * quantiles of the reported values, merged where closer than a quarter of
 * the noise's scale, which keeps a mass on a bound on the bound), and keeps
 * 101 quantiles (probabilities 0.001 .. 0.999) of each class's present
 * values and of the classes' mixture. The snapshot then maps each class's
 * present values through the monotone map that takes the generator's
 * quantiles (its measuring draw) onto those, before the affine map, which
 * then only moves the mapped moments toward the debiased ones as above.
 * The map keeps the generator's ranks, so the dependence it learned stays.
 * Elsewhere (at local epsilons of tens or less on credit_data's columns)
 * nothing changes: the reports do not fix a shape there.
 *
 * Storage (pg_calib_ldp_to_json / _from_json): {"version": 2, "classes",
 * "per_class", "targets": [classes x stats], "stderr": [classes x stats],
 * "signal": {"max_z", "threshold", "tests"}, "quantiles": [(classes + 1) x
 * blocks: null or 101 nondecreasing knots inside the range]} (version 1,
 * without quantiles, still loads: no maps)
 * beside the generator in
 * entropic_gan's checkpoints; the layout follows from the table map, so a
 * map that does not match is refused (PG_EFORMAT).
 *
 * Ownership: make allocates, free releases (NULL is fine); wrap takes the
 * inner snapshot's reference (even on failure) and copies what it needs.
 */
#ifndef PG_METHODS_CALIB_LDP_H
#define PG_METHODS_CALIB_LDP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/data/table.h"
#include "engine/data/table_ldp.h"
#include "engine/methods/snapshot.h"

typedef struct pg_calib_ldp pg_calib_ldp;

/* Layout for table t (label excluded) and `classes` classes (0: one). */
int pg_calib_ldp_make(const pg_table *t, int classes, pg_calib_ldp **out, pg_error *err);
void pg_calib_ldp_free(pg_calib_ldp *c);

/* Targets from n privatized encoded rows x (n x width) and their privatized
 * labels (NULL when classes == 0) under `plan` (the table's local plan; the
 * label column's randomized response when classes > 0). PG_EINVAL for a
 * label out of range or a plan that does not fit the table. */
int pg_calib_ldp_estimate(pg_calib_ldp *c, const pg_ldp_plan *plan, const float *x,
                          const int32_t *labels, size_t n, pg_error *err);

typedef struct pg_calib_ldp_signal {
    double max_z;     /* largest |difference| / standard error; 0 with one class */
    double threshold; /* Bonferroni two-sided 5 % over `tests` */
    size_t tests;     /* coordinates x class pairs */
} pg_calib_ldp_signal;
/* Filled by the last estimate. */
void pg_calib_ldp_signal_get(const pg_calib_ldp *c, pg_calib_ldp_signal *s);
/* The pooling rule (below): two classes or more and no |z| at the threshold.
 * The calibrated snapshot and the trainer's no_class_signal warning both
 * follow it. */
bool pg_calib_ldp_pooled(const pg_calib_ldp *c);

/* Number of per-class statistics, and class k's targets (see the top; order:
 * per column, a numeric unit's present mean and standard deviation, then
 * each block's states, a reference state first where the block has one). */
size_t pg_calib_ldp_stats(const pg_calib_ldp *c);
const double *pg_calib_ldp_targets(const pg_calib_ldp *c, int k);
/* Standard error of each class-k estimate (a numeric unit's mean: of E[u |
 * c] over the present share). */
const double *pg_calib_ldp_stderr(const pg_calib_ldp *c, int k);

/* The statistics of rows x (n x width) of one class, as the targets are laid
 * out (states from the largest unit, means and spreads over present rows):
 * what tests compare the calibrated samples with. out: stats doubles. */
void pg_calib_ldp_measure(const pg_calib_ldp *c, const float *x, size_t n, double *out);

#define PG_CALIB_LDP_VERSION 2
json_t *pg_calib_ldp_to_json(const pg_calib_ldp *c, size_t per_class);
/* Layout from t and classes, targets and per_class from j. */
int pg_calib_ldp_from_json(const json_t *j, const pg_table *t, int classes, pg_calib_ldp **out,
                           size_t *per_class, pg_error *err);

int pg_calib_ldp_wrap(const pg_calib_ldp *c, pg_snapshot *inner, size_t per_class,
                      pg_snapshot **out, pg_error *err);

#endif
