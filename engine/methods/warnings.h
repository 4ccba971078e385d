/* engine/methods/warnings.h - plain-sentence warnings about a training run
 * that went wrong, for the job view: the loss rising over the last quarter of
 * its history, or a model whose samples mostly fall outside the dataset's
 * declared range.
 *
 * Trend rule: take the history points (finite losses) whose step lies in
 * the last quarter of the steps run so far; fewer than PG_TREND_MIN_POINTS
 * give no trend and no warning (a short job cannot tell a rise from the
 * wandering of its loss). Split them in order into PG_TREND_BATCHES runs of
 * near-equal length, fit mean loss = a + b mean step by least squares over
 * the batch means, and call the trend rising when b is significantly
 * positive, t = b / se(b) > PG_TREND_T (the one-sided 0.5 % point of
 * Student's t with PG_TREND_BATCHES - 2 = 3 degrees of freedom), and the
 * fitted rise over the span exceeds PG_TREND_REL of the mean |loss| there.
 * Batch means, not the raw points, because successive losses are strongly
 * autocorrelated and noisy under DP: a t over raw points treats them as
 * independent and fired on 7-26 % of the stationary histories below.
 * False alarms, measured over 10 000 simulated stationary histories a case
 * (AR(1) losses of mean 1, lag-1 autocorrelation 0.9, stationary sd 0.1,
 * plus white DP-like noise of sd 0.1; 20, 40 and 125 points in the
 * quarter): 0.8-1.6 % of histories; 0.8-3.4 % without the white noise (the
 * most at the 20-point floor); 1.4-2.4 % at autocorrelation 0.95. The test
 * (tests/engine/methods/test_warnings.c) asserts < 4 % and < 6 %. Detection
 * on the same noise: a rise by the mean loss (1.0) over the quarter is
 * flagged in 91-94 % of histories, by 1.5 times it in > 99.6 %.
 *
 * Range rule: a fixed-seed draw of PG_RANGE_DRAW samples; the model warns
 * when more than half of the rows have a value outside [lo, hi]. Skipped for
 * rows wider than PG_RANGE_MAX_D (images: cost) and for unbounded ranges.
 *
 * Collapse rules (typed tables): a fixed-seed draw of
 * PG_COLLAPSE_DRAW rows (fewer on tables wider than 2097 units, none below
 * 100 rows) from the model alone (no data, no privacy cost),
 * decoded as a user downloads them. A model collapsed when
 *   - a categorical or boolean column (missing counted as one more state)
 *     puts at least PG_COLLAPSE_CONST of its rows on one state ("almost
 *     constant"), or, with 3 or more states, is within total variation
 *     PG_COLLAPSE_UNIFORM of uniform ("almost uniform": the heads learned
 *     nothing about the column);
 *   - a numeric column puts at least PG_COLLAPSE_PILE of its present rows on
 *     one value (inside one window of 1e-3 of its span: a bound, or any
 *     point) or within 1 % of the span around the midpoint of its range; an
 *     integer column spanning fewer than PG_COLLAPSE_FEW_INTS values has real
 *     atoms (half of a count column can be 0), so there the bar is
 *     PG_COLLAPSE_CONST, as for a categorical column;
 *   - a conditional model's sampled class rate differs from the proportions
 *     it released (a DP count of the label) by more than 6 binomial standard
 *     errors (a false alarm has probability < 2e-9 per class).
 * These can be right for a real column (a column that is truly constant, or
 * uniform); the sentences say "looks", not "is".
 *
 * Pure functions of their arguments; nothing kept. Errors: PG_EINVAL with a
 * sentence for bad arguments; a snapshot that fails to sample is an error.
 */
#ifndef PG_METHODS_WARNINGS_H
#define PG_METHODS_WARNINGS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "engine/methods/method.h"

#define PG_TREND_MIN_POINTS  20
#define PG_TREND_BATCHES     5
#define PG_TREND_T           5.841 /* t(3) one-sided 0.005 */
#define PG_TREND_REL         0.05
#define PG_RANGE_DRAW        256
#define PG_RANGE_MAX_D       64
#define PG_RANGE_SEED        0x5eed0fa11ull
#define PG_COLLAPSE_DRAW     2000
#define PG_COLLAPSE_SEED     0xc011a95eull
#define PG_COLLAPSE_CONST    0.99
#define PG_COLLAPSE_UNIFORM  0.02
#define PG_COLLAPSE_PILE     0.5
#define PG_COLLAPSE_FEW_INTS 100.0
#define PG_COLLAPSE_MAX_UNITS                                                                      \
    ((size_t)4 << 20) /* floats of one draw: wide tables draw fewer rows */

typedef struct pg_trend {
    size_t n;        /* points fitted */
    double slope;    /* per step */
    double t;        /* slope / its batch-means standard error (inf: noiseless rise) */
    double rise;     /* fitted change over the fitted span */
    double mean_abs; /* mean |loss| over the span */
} pg_trend;

/* Fits the trend (batch means, as above) over the points whose step lies in
 * the last quarter of [steps[0], steps[n-1]]. Non-finite losses are skipped. PG_EINVAL when fewer
 * than PG_TREND_MIN_POINTS points remain or the steps do not increase. */
int pg_trend_last_quarter(const long *steps, const double *loss, size_t n, pg_trend *out,
                          pg_error *err);

/* The rule above on a fitted trend. */
bool pg_trend_rising(const pg_trend *t);

/* Fraction of rows of a fixed-seed draw with a value outside [lo, hi];
 * *skipped is set (and *frac 0) when the rule does not apply. */
int pg_range_outside(const pg_snapshot *snap, const pg_data_desc *desc, double *frac, bool *skipped,
                     pg_error *err);

/* Appends the collapse warnings above (JSON strings) for a model of table t
 * (pg_snapshot_dim(snap) == t->width) to `out`; returns how many, or a
 * negative pg_status. */
int pg_collapse_warnings(const pg_snapshot *snap, const struct pg_table *t, json_t *out,
                         pg_error *err);

/* Appends the warnings (JSON strings) that apply to `out`: the trend over
 * the history (steps, loss: n points, may be 0) and, when snap is not NULL,
 * the range draw and, on a typed table, the collapse rules. Returns the number appended, or a
 * negative pg_status. */
int pg_warnings_append(const long *steps, const double *loss, size_t n, const pg_snapshot *snap,
                       const pg_data_desc *desc, json_t *out, pg_error *err);

/* ---- trainer warnings (method.h): the sentences of trainer decisions ----
 * Each records its warning on t when the decision it describes was taken,
 * from already-private quantities only, and does nothing otherwise. */

struct pg_calib_ldp; /* engine/methods/calib_ldp.h */
struct pg_trainer;

#define PG_WARN_NO_CLASS_SIGNAL "no_class_signal"
/* entropic_gan on local tables: the signal check of the calibration (c, from
 * the privatized rows: post-processing) found no class difference, so the
 * calibrated snapshot pools the classes (calib_ldp.h); c may be NULL. */
void pg_warn_ldp_signal(struct pg_trainer *t, const struct pg_calib_ldp *c);

#define PG_WARN_CLASS_IN_NOISE "class_count_in_noise"
#define PG_WARN_NOISE_SDS      3.0
/* A conditional generator's DP count of the label (label_count.h: noisy[k]
 * = count + N(0, sd^2), already released): classes whose released count is
 * below PG_WARN_NOISE_SDS noise standard deviations are named (by their
 * category in table, when given): their share of the samples is set mostly
 * by the noise and their rows are too few to learn them from. */
void pg_warn_class_counts(struct pg_trainer *t, const struct pg_table *table, const double *noisy,
                          int classes, double sd);

struct pg_qmap; /* engine/data/qmap.h */
#define PG_WARN_QMAP_EMPTY "quantile_map_empty"
/* A released quantile map (qmap.h, already private) whose column kept no
 * mass above the threshold in any bin: qmap.h then makes it uniform over its
 * bins, the one case where every CDF step is exactly 1 / bins (a column with
 * mass gets floors of 1e-4 of it, never equal steps up to 1e-12 unless its
 * noisy counts are exactly equal). Names such columns (from table); m may
 * be NULL. */
void pg_warn_qmap_empty(struct pg_trainer *t, const struct pg_qmap *m,
                        const struct pg_table *table);

#define PG_WARN_CLASS_QMAP_EMPTY "class_quantile_map_empty"
/* The per-class quantile rule (calib_table.h, calibration.numeric
 * "quantile"): class_cdf, the classes' released CDFs over the pooled map's
 * bins (max(classes, 1) x pg_calib_table_cdf_len(pooled), already private).
 * A class whose histogram of a column kept nothing above its noise got a map
 * uniform over the bins (qmap.h): every step 1 / bins within float
 * rounding, its values in that column spread evenly over the range. Names
 * those classes and columns (from table); NULL arguments and a single class
 * do nothing. */
void pg_warn_class_qmap_empty(struct pg_trainer *t, const struct pg_qmap *pooled, int classes,
                              const float *class_cdf, const struct pg_table *table);

#endif
