/* engine/methods/warnings.h - plain-sentence warnings about a training run
 * that went wrong, for the job view: the loss rising over the last quarter of
 * its history, or a model whose samples mostly fall outside the dataset's
 * declared range.
 *
 * Trend rule: fit loss = a + b step by least squares over the history points
 * in the last quarter of the steps run so far (at least PG_TREND_MIN_POINTS
 * points). The trend rises when b is significantly positive (t = b / se(b) >
 * PG_TREND_T, so the noise of a DP loss does not trip it) and the fitted rise
 * over that span exceeds PG_TREND_REL of the mean |loss| there.
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
 *     one value (to 1e-3 of its span: a bound, or any point) or within 1 %
 *     of the span around the midpoint of its range;
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

#define PG_TREND_MIN_POINTS 8
#define PG_TREND_T          3.0
#define PG_TREND_REL        0.05
#define PG_RANGE_DRAW       256
#define PG_RANGE_MAX_D      64
#define PG_RANGE_SEED       0x5eed0fa11ull
#define PG_COLLAPSE_DRAW    2000
#define PG_COLLAPSE_SEED    0xc011a95eull
#define PG_COLLAPSE_CONST   0.99
#define PG_COLLAPSE_UNIFORM 0.02
#define PG_COLLAPSE_PILE    0.5
#define PG_COLLAPSE_MAX_UNITS                                                                      \
    ((size_t)4 << 20) /* floats of one draw: wide tables draw fewer rows */

typedef struct pg_trend {
    size_t n;        /* points fitted */
    double slope;    /* per step */
    double t;        /* slope / its standard error (inf for a noiseless rise) */
    double rise;     /* fitted change over the fitted span */
    double mean_abs; /* mean |loss| over the span */
} pg_trend;

/* Fits the trend over the points whose step lies in the last quarter of
 * [steps[0], steps[n-1]]. Non-finite losses are skipped. PG_EINVAL when fewer
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

#endif
