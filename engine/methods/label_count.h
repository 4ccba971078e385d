/* engine/methods/label_count.h - the DP count of a dataset's label that sets
 * the class proportions of a conditional generator's samples.
 *
 * Paper 001 conditions the generator on the class; the classes it then
 * generates must follow the data's class proportions, which are private. One
 * Gaussian release per job: c_k + N(0, s^2) for every class k, s the noise
 * multiplier (labels.count_noise). Under add/remove adjacency one row changes
 * exactly one count by 1, so the l2 sensitivity is 1 and the release's RDP is
 * alpha / (2 s^2) at every order alpha (pg_rdp_gaussian). The job composes it
 * into its plan before it reads a row. The proportions are the released
 * counts clipped at 1 (post-processing), normalized: no class is ever
 * dropped, and none is forced uniform.
 *
 * Stateless; the caller owns every buffer. Errors: PG_EINVAL for bad
 * arguments, PG_EPRIVACY for a non-secure generator.
 */
#ifndef PG_METHODS_LABEL_COUNT_H
#define PG_METHODS_LABEL_COUNT_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/core/rng.h"

/* Default noise multiplier s: on 3563 rows (credit_data's 80 %) a class's
 * proportion is off by about 10 / 3563 = 0.003, at an RDP cost of
 * alpha / 200 (about 0.05 of epsilon at delta 1e-5). */
#define PG_LABEL_COUNT_NOISE 10.0

/* The release's RDP at orders[0 .. n): alpha / (2 s^2). */
int pg_label_count_rdp(double s, const double *orders, size_t n, double *rdp, pg_error *err);

/* noisy[k] = #{i: labels[i] = k} + N(0, s^2) for k < classes, noise from the
 * secure generator. */
int pg_label_count_release(pg_rng *secure, const int32_t *labels, size_t n, int classes, double s,
                           double *noisy, pg_error *err);

/* Proportions from released counts: max(noisy[k], 1) normalized. */
void pg_label_count_weights(const double *noisy, int classes, double *w);

#endif
