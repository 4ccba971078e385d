/* engine/methods/calib.h - class-mean calibration of a trained generator.
 *
 * Why: a generator trained with minibatch Sinkhorn losses leaves each class's
 * mean a few units (l2, Fashion-MNIST in [-1, 1]) away from the data's, with
 * or without DP noise and however long it trains (docs/benchmarks.md). A
 * class mean estimated from all M rows in one Gaussian release is far more
 * accurate for a small share of the budget, and shifting each class's
 * samples onto it is post-processing of that release and of the generator.
 *
 * The release (pg_calib_release_means): every row is centred at the midpoint
 * m of the declared range [lo, hi] and clipped to l2 norm R = sqrt(d) (hi -
 * lo) / 2, which leaves rows inside the range unchanged. The vector
 * (S_1 / R, ..., S_K / R, n_1, ..., n_K) of per-class sums of centred rows
 * and per-class counts moves by at most sqrt(2) in l2 when one record is
 * added or removed (one S_k by at most R, one n_k by 1), so adding
 * N(0, 2 s^2) to every coordinate is the Gaussian mechanism with noise
 * multiplier s: RDP alpha / (2 s^2) at every order (pg_rdp_gaussian). The noise
 * comes from the secure generator only. Released means are
 * m + R S_k / max(n_k, 1), clamped to [lo, hi] (post-processing).
 * An unlabelled dataset, or classes = 0, is one class.
 *
 * Errors: PG_EPRIVACY for a seeded generator, PG_EINVAL for bad arguments
 * (lo >= hi, s <= 0, a label outside [0, classes)); outputs are written only
 * on success. Callers own every buffer.
 */
#ifndef PG_METHODS_CALIB_H
#define PG_METHODS_CALIB_H

#include <stddef.h>

#include "engine/core/error.h"
#include "engine/core/rng.h"
#include "engine/data/dataset.h"

/* means: max(classes, 1) x data->d floats. */
int pg_calib_release_means(pg_rng *secure, const pg_dataset *data, int classes, float lo, float hi,
                           double noise_multiplier, float *means, pg_error *err);

#endif
