/* engine/methods/defaults.h - data-derived defaults: what a job runs when its
 * spec leaves a field out, chosen from the dataset's size, width and declared
 * range so that a first job on a small table learns something.
 *
 * The parameter tables (spec.h) hold fixed defaults, sized for the papers'
 * image experiments. On small vector data (rows of at most
 * PG_DEFAULTS_SMALL_D values, no image shape) those settings do not learn, so
 * each method's validate() calls pg_defaults_fill first and resolves the
 * result. Only ABSENT fields are filled; a resolved spec has every field, so
 * it re-validates to itself, and the privacy plan follows whatever the
 * resolved spec says (batch, steps, noise), exactly as when a user wrote it.
 *
 * The rules (n rows, d values per row, declared range [lo, hi]):
 *   MLP generators (entropic_gan, dp_sinkhorn, swd_gen; model.arch absent or
 *   mlp) on small vector data: model.hidden [64, 64], model.latent_dim d.
 *   On central small vector data with a finite range, model.out_activation
 *   tanh, which generator.h maps onto [lo, hi]: samples never leave the range.
 *   entropic_gan: train.batch_size min(256, n).
 *   dp_sinkhorn on small vector data: train.batch_size
 *   clamp(round(sqrt(n) / 4), 8, 32) (the sampling rate 1 / (4 sqrt n) falls
 *   with n, so amplification lowers the noise a target needs, while a step's
 *   cost stays small; the clipped b x d matrix carries noise on every entry,
 *   so fewer generated rows per step means less noise per row; above 32 rows
 *   the half circle gains nothing measurable at twice the time),
 *   train.steps 2000, train.lr 0.001.
 *   Sliced-Wasserstein methods on small unlabelled central data with a
 *   finite range: privacy.clip_norm R = max(|lo|, |hi|) (rows inside the
 *   range keep their norm unless they sit in a corner; every release's noise
 *   std is 2 R S sqrt(w), so R is what the data costs in noise).
 *   swd_gen on small vector data: projections.per_step d (one orthonormal
 *   block, sensitivity 2R), train.batch_size min(n, 500) (subsampled without
 *   replacement, amplified), train.steps 200: every step is a release, and
 *   on 2-D data fewer, less noisy releases beat many noisier ones.
 *   swd_flow, swd_flow_r on small unlabelled vector data (label coordinates
 *   change the released dimension, so labelled data keeps the table's
 *   defaults): projections.per_step d (one orthonormal block, sensitivity 2R,
 *   the least noise a release can have). swd_flow: projections.pool
 *   max(2d, per_step) (two blocks released once), flow.steps 100 (steps after
 *   the release are free). swd_flow_r: flow.steps 10 with flow.h d (each step
 *   a release; 10 of them need sqrt(10), not 10, times one release's noise
 *   multiplier, and h = d moves particles the whole one-dimensional transport
 *   along each block).
 *   What these rules reach, and the epsilon below which the sliced methods
 *   learn nothing on 2-D toys: docs/benchmarks.md, "Defaults".
 *
 * Ownership: returns a new reference; the caller's spec is never modified.
 */
#ifndef PG_METHODS_DEFAULTS_H
#define PG_METHODS_DEFAULTS_H

#include <jansson.h>
#include <stdbool.h>

#include "engine/methods/method.h"

#define PG_DEFAULTS_SMALL_D 16

/* A copy of `spec` with `method`'s data-derived defaults filled into absent
 * fields (a new reference; a non-object spec is returned as is, for the
 * resolver to refuse). NULL only when out of memory. */
json_t *pg_defaults_fill(const char *method, const json_t *spec, const pg_data_desc *desc);

/* True for rows of at most PG_DEFAULTS_SMALL_D values without image shape. */
bool pg_defaults_small(const pg_data_desc *desc);

#endif
