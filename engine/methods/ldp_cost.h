/* engine/methods/ldp_cost.h - the entropic GAN's ground cost on a locally
 * privatized typed table: the negative log-likelihood of a privatized row y
 * given a generated row x under the per-column channel the rows went through
 * (engine/data/table_ldp.h), summed over columns (the columns were
 * privatized independently, so their likelihoods multiply).
 *
 * Per block of the encoding (x: outputs of the generator's heads, heads.h):
 *   randomized response    (categorical, boolean, the missing indicator of a
 *                          nullable numeric column) the generated state
 *                          probabilities p (softmax units; for booleans and
 *                          indicators the implicit "false"/"present" state is
 *                          1 - sum of the units) pass through the k-ary
 *                          channel, q = keep p + other (1 - p) (privacy.h's
 *                          pg_rr_channel_apply, written out here), and the
 *                          cost is -log q[s] for y's reported state s
 *                          (other = pg_ldp_rr_other below)
 *   Laplace (scale b)      |x - y| / b on the value unit
 *   Gaussian (sigma)       (x - y)^2 / (2 sigma^2) on the value unit
 * The label column has no units and is not modelled (a conditional generator
 * sees the privatized labels as they are).
 * With this cost and entropic regularization 1, the raw OT between the
 * generator's law and the privatized rows is minimized by the clean law whose
 * privatized image matches the data (paper 000, Theorem 1: the cost is the
 * channel's negative log-likelihood and the regularization its scale).
 * channel = false replaces every randomized-response channel by the identity
 * (the cost is then the cross-entropy against the reported state): the
 * baseline that fits the privatized frequencies.
 *
 * Ownership: pg_ldp_cost_make allocates; pg_ldp_cost_free releases (NULL is
 * fine). Functions allocate their scratch per call.
 */
#ifndef PG_METHODS_LDP_COST_H
#define PG_METHODS_LDP_COST_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/core/error.h"
#include "engine/data/table.h"
#include "engine/data/table_ldp.h"

typedef struct pg_ldp_cost pg_ldp_cost;

int pg_ldp_cost_make(const pg_table *t, const pg_ldp_plan *plan, bool channel, pg_ldp_cost **out,
                     pg_error *err);
void pg_ldp_cost_free(pg_ldp_cost *c);

/* Multiplies the cost of every numeric block by w > 0 (1 after make: the
 * likelihood). w > 1 is the likelihood of noise w times smaller (Laplace) or
 * sqrt(w) times smaller (Gaussian): the fit then removes less noise than the
 * rows carry. For experiments (entropic_gan's ot.numeric_weight). */
void pg_ldp_cost_set_numeric_weight(pg_ldp_cost *c, double w);

/* The probability that k-ary randomized response with keep probability
 * `keep`, declared for `epsilon`, reports one given other state: (1 - keep) /
 * (k - 1), without the cancellation that zeroes it once keep rounds to 1.
 * The cost of a reported state is -log of this channel's probability,
 * floored only at 1e-30 (exact up to a column epsilon of about 69). */
double pg_ldp_rr_other(size_t k, double keep, double epsilon);

/* C (n x m at row stride ld) = cost(x_i, y_j); x and y are n and m rows of
 * the table's width. */
int pg_ldp_cost_matrix(const pg_ldp_cost *c, const float *x, size_t n, const float *y, size_t m,
                       float *C, size_t ld, pg_error *err);

/* grad (n x width) = sum_j P_ij d cost(x_i, y_j) / d x_i for a plan P (n x m
 * at stride ld): the envelope gradient of the OT value. */
int pg_ldp_cost_grad(const pg_ldp_cost *c, const float *x, size_t n, const float *y, size_t m,
                     const float *P, size_t ld, float *grad, pg_error *err);

#endif
