/* engine/methods/dp_sinkhorn.h - internals of the dp_sinkhorn trainer that
 * tests (and benchmarks) may call directly. The service uses the method only
 * through method.h (pg_method_find("dp_sinkhorn")).
 *
 * Typed tables (desc->table): the generator has per-block output heads
 * (generator.h, heads.h) and its checkpoint carries the table map. The
 * clip bound dp.clip_norm C applies to the cross-term gradient matrix, not
 * to rows, so the schema's row bounds (pg_table_norm_bound) give no C: a
 * record's influence on the plan, hence on the gradient, is global. C keeps
 * its default; sensitivity stays 2C and the accountant is unchanged.
 *
 * Ownership: callers own every buffer. Errors: PG_EINVAL for bad shapes or
 * parameters, PG_EPRIVACY when the generator is not secure; on failure `out`
 * is unspecified.
 */
#ifndef PG_METHODS_DP_SINKHORN_H
#define PG_METHODS_DP_SINKHORN_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/core/rng.h"
#include "engine/methods/method.h"
#include "engine/ot/sinkhorn.h"

/* One sanitized cross term, exactly as a training step releases it:
 *   out (n x d) = clip(2 * dOT_reg(X, Y)/dX, C) + N(0, (2 C sigma)^2) per entry,
 * where clip scales the whole matrix to Frobenius norm <= C (row_clip false)
 * or each row to l2 norm <= C (row_clip true). An empty Y (m == 0) gives a
 * zero gradient before clipping, so the output is pure noise of the same
 * shape. ws must be sized for (n, m, d); rng must be secure; sigma > 0. */
int pg_dp_sinkhorn_cross_term(pg_ot_ws *ws, const pg_ot_cost *cost, const pg_sinkhorn_opts *sk,
                              const pg_mat *x, const int32_t *xlabels, const pg_mat *y,
                              const int32_t *ylabels, double clip, double sigma, bool row_clip,
                              pg_rng *rng, float *out, pg_error *err);

/* What the last step did, for tests of the fixed-shape release. */
typedef struct pg_dp_sinkhorn_info {
    size_t real_rows;        /* Poisson batch size of the last step (never released) */
    size_t generated_rows;   /* n + n' */
    size_t released_rows;    /* rows of the noisy tensor (n) */
    size_t released_cols;    /* its columns (d) */
    double noise_std;        /* per-entry standard deviation, 2 C sigma */
    double noise_multiplier; /* what the accountant uses */
    double sampling_rate;
    long steps_done;
    double lr; /* learning rate of the last step taken (0 before the first) */
    double calibration_noise_multiplier; /* class-mean release (0: no calibration) */
} pg_dp_sinkhorn_info;

/* The learning rate of 0-based step `step` of `steps` planned under the
 * schedule train.lr_decay (0 none, 1 cosine, 2 linear): lr, lr (1 + cos(pi
 * step / steps)) / 2, or lr (1 - step / steps); 0 from step >= steps on. */
double pg_dp_sinkhorn_lr(double lr, int decay, long step, long steps);

/* Labels of one step's n + np generated rows (train.generated_labels), from
 * the seeded latent stream `rng`, never from data. Uniform: independent
 * draws. Balanced: rows [0, n) take classes off, off + 1, ... mod classes and
 * rows [n, n + np) the same from a second random offset, so within each block
 * class counts differ by at most one. classes <= 0 gives all zeros. */
void pg_dp_sinkhorn_draw_labels(pg_rng *rng, bool balanced, size_t n, size_t np, int classes,
                                int32_t *out);

/* t must be a dp_sinkhorn trainer (PG_EINVAL otherwise). */
int pg_dp_sinkhorn_info_get(const pg_trainer *t, pg_dp_sinkhorn_info *info, pg_error *err);

#endif
