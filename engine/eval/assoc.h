/* engine/eval/assoc.h - pairwise association within one set of rows: Pearson
 * correlation between numeric columns, Cramér's V between categorical ones.
 *
 * Definitions:
 *   Pearson r_ij = cov_ij / sqrt(cov_ii cov_jj) over the n rows (the ddof
 *     cancels), clipped to [-1, 1] as numpy.corrcoef does. Undefined (NaN)
 *     when column i or j is constant, where numpy.corrcoef gives nan too.
 *     The diagonal is 1 for non-constant columns. Covariances are computed in
 *     double (centred blocks of rows, one DSYRK per block).
 *   Cramér's V of two code columns a (codes 0..ka-1) and b (0..kb-1): build
 *     the contingency table, drop categories that never occur (their expected
 *     counts would be zero), and with r x c the remaining shape,
 *       chi2 = sum (O - E)^2 / E,  E_uv = row_u col_v / n,
 *       V = sqrt(chi2 / (n (min(r, c) - 1))),
 *     with no bias correction (not Bergsma's) and no Yates continuity
 *     correction: scipy.stats.contingency.association(table, method='cramer')
 *     with its default correction=False. Undefined (NaN) when min(r, c) < 2,
 *     i.e. one column is constant in this set.
 *
 * Errors: PG_EINVAL for empty input, non-finite values, bad codes, tables of
 * more than PG_EVAL_MAX_TABLE cells; PG_ENOMEM; outputs untouched on failure.
 */
#ifndef PG_EVAL_ASSOC_H
#define PG_EVAL_ASSOC_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"

#define PG_EVAL_MAX_TABLE ((size_t)1 << 24)

/* corr (d x d, row-major) = Pearson correlations of the columns of x (n rows,
 * d columns, row stride ld >= d), n >= 1. */
int pg_eval_pearson(const float *x, size_t n, size_t d, size_t ld, double *corr, pg_error *err);

/* Cramér's V of columns a and b (n values each, strides sa, sb). */
int pg_eval_cramer_v(const float *a, size_t sa, int32_t ka, const float *b, size_t sb, int32_t kb,
                     size_t n, double *v, pg_error *err);

#endif
