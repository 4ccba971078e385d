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
 *   entropic_gan: train.batch_size min(256, n); on small untyped vectors
 *   model.hidden [128, 128] and train.ema 0.999 (snapshots serve the
 *   parameter average: README tutorial 1 settles closer to the arc, and
 *   varies less from run to run, than with [64, 64] and the last iterate,
 *   at about the same cost: docs/benchmarks.md).
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
 * Typed tables (desc->table set; applied first, so the rules above never
 * override them):
 *   (defaults_table.c) dp_sinkhorn on a labelled central table:
 *   model.conditional true (samples carry the label, classes from a DP count
 *   of it: label_count.h). dp_sinkhorn on any table: train.batch_size
 *   min(64, n), train.steps 1500, train.lr 0.001, model.hidden [128, 128]
 *   (the table benchmark's spec; the parameter table's lr 1e-4 and batch 50
 *   are sized for 60 000 images).
 *   entropic_gan, dp_sinkhorn, swd_gen: model.out_activation auto (the
 *   per-block heads of generator.h keep every unit in range).
 *   (defaults_table.c) entropic_gan on a local table: model.numeric_head
 *   clip (heads.h; tanh's fading slope collapsed credit_data's skewed
 *   columns, docs/benchmarks.md).
 *   model.logit_gain stays 1 (heads.h). On credit_data at a local epsilon
 *   of 1000 the entropic GAN's rows trained a classifier to 0.72-0.74 with
 *   gain 1 (majority class 0.73) and 0.77-0.78 with 10 (docs/benchmarks.md),
 *   but with 10 its recovery of category frequencies through the
 *   randomized-response channel missed 0.02 in 2 of 5 runs of
 *   test_table_ldp_gan (0.003-0.017 over 8 runs at 1): a choice for the user, not a default.
 *   swd_flow, swd_flow_r, swd_gen on central data (not in latent mode):
 *   privacy.clip_norm R = pg_table_norm_bound's l2 bound nb, so clipping
 *   never changes a valid row; with labels, rows [x; alpha onehot(y)] need
 *   R = sqrt(nb^2 + alpha^2), i.e. R = 2 nb / sqrt(3) with the default
 *   alpha = R / 2 (pg_defaults_table_clip). The release's sensitivity then
 *   uses the schema's diameter (swd_spec.c): min(2R, diameter) sqrt(w).
 *   dp_sinkhorn clips the cross-term gradient, not rows: no schema bound
 *   applies to it, its dp.clip_norm keeps its default.
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

struct pg_table;
/* The typed-table clip radius above for a dataset with num_classes label
 * classes (0: unlabelled) and a spec that may give labels.class_alpha. */
double pg_defaults_table_clip(const struct pg_table *t, int num_classes, const json_t *spec);

/* The table rules of the paper methods (defaults_table.c), applied to
 * `spec` in place on a typed table; called by pg_defaults_fill. */
void pg_defaults_table_fill(json_t *spec, const char *method, const pg_data_desc *desc);

/* True for rows of at most PG_DEFAULTS_SMALL_D values without image shape. */
bool pg_defaults_small(const pg_data_desc *desc);

#endif
