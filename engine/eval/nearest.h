/* engine/eval/nearest.h - distance from each query row to its nearest
 * reference row (Euclidean), the "distance to closest record" (DCR) of the
 * memorisation check, and the quantiles reported on it.
 *
 * Kernel: queries are taken in blocks of PG_EVAL_NN_BLOCK rows; one SGEMM per
 * block gives q.r for every reference row, and the candidate minimizes
 * |r|^2 - 2 q.r (|q|^2 is constant per row). The winner's distance is then
 * recomputed exactly in double from the two rows, so a copied row reports 0
 * exactly. The float32 screen can pick a candidate whose squared distance
 * exceeds the true minimum by at most the rounding of the GEMM form (about
 * 1e-6 (|q|^2 + |r|^2)); the reported distance is exact for the row chosen.
 * Ties go to the lowest reference index.
 *
 * Quantiles use numpy.quantile's default (linear, "type 7"): the value at
 * position p (n - 1) of the ascending array, interpolated between neighbours.
 *
 * Cancellation (progress.h): `progress` (may be NULL) is called after every
 * block with stage "nearest" and the fraction of queries done. Errors: PG_EINVAL (shapes, empty
 * sets, non-finite values), PG_ENOMEM; outputs are untouched on failure except after a
 * cancellation, when `dist` holds the finished blocks.
 */
#ifndef PG_EVAL_NEAREST_H
#define PG_EVAL_NEAREST_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/core/mat.h"
#include "engine/eval/progress.h"

#define PG_EVAL_NN_BLOCK 256

/* dist[i] = min_j |q_i - r_j|; idx (optional) the argmin j. Threads: OpenBLAS
 * for the GEMM, OpenMP over the block's rows for the scan. */
int pg_eval_nearest(const pg_mat *q, const pg_mat *r, double *dist, uint32_t *idx,
                    pg_eval_progress_fn progress, void *ctx, pg_error *err);

/* numpy-default quantile of an ascending array (n >= 1, p in [0, 1]). */
double pg_eval_quantile(const double *sorted, size_t n, double p);

#endif
