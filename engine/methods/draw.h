/* engine/methods/draw.h - the one rule that turns (snapshot, seed, label, n)
 * into rows, shared by GET /samples (render/samples_stream.h,
 * render/samples_typed.h) and the quality report (service/reports/reports.c), so a
 * report's synthetic rows are the rows /samples serves for the same job,
 * step and seed.
 *
 * Blocks: rows are drawn in blocks of pg_draw_block_rows(d) rows; block 0
 * with the request's seed, block b > 0 with pg_draw_block_seed(seed, b)
 * (splitmix64 of seed + b * golden ratio). A given (snapshot, seed, label,
 * n) therefore names the same rows whether drawn at once or streamed.
 *
 * Untyped rows (pg_draw_rows): each block is one pg_snapshot_sample call
 * with the block's seed and `label` (-1: the model's own draw).
 *
 * Typed rows (pg_draw_table_rows, t as pg_draw_table_for gives it): with
 * label >= 0, or when t has no label column, as untyped. A model that draws
 * classes jointly with rows (pg_snapshot_has_joint_labels: mst, aim) draws
 * each block with one pg_snapshot_sample_labeled call (the block's seed), so
 * the classes follow the model. A conditional model that carries class
 * weights (pg_snapshot_class_weights: a DP count of the label released by
 * its job) draws each block with one pg_snapshot_sample_labelled call, the
 * classes following those weights. Otherwise (a conditional model of a
 * labelled table without weights) row i of a block has class
 * i mod C (C the label's classes), each class's rows of the block being one
 * pg_snapshot_sample call with seed pg_draw_block_seed(block_seed ^
 * 0x5851F42D4C957F2D, k + 1): classes are balanced, as the models' own
 * "uniform over classes" draw is.
 *
 * Ownership: nothing is kept; pg_draw_table_for allocates *out (free with
 * pg_table_free). Errors: the snapshot's sampling error, PG_ENOMEM.
 */
#ifndef PG_METHODS_DRAW_H
#define PG_METHODS_DRAW_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/data/table.h"
#include "engine/methods/method.h"

size_t pg_draw_block_rows(size_t d);
uint64_t pg_draw_block_seed(uint64_t seed, size_t block);

/* Rows [0, n) of width d into x (n * d floats). */
int pg_draw_rows(const pg_snapshot *s, size_t n, size_t d, uint64_t seed, int label, float *x,
                 pg_error *err);

/* The table a snapshot's rows decode with: a copy of t, without its label
 * column when the snapshot is unconditional (the label has no units, so the
 * layout is unchanged). */
int pg_draw_table_for(const pg_table *t, const pg_snapshot *snap, pg_table **out, pg_error *err);

/* One block of m rows drawn with block_seed: x (m * width) and, when t has a
 * label column, labels (m); tmp holds m * width floats (only used then). */
int pg_draw_table_block(const pg_table *t, const pg_snapshot *snap, size_t m, uint64_t block_seed,
                        int label, float *x, int64_t *labels, float *tmp, pg_error *err);

/* Rows [0, n) by the typed rule: x (n * width), labels (n) when t has a
 * label column (may be NULL otherwise). */
int pg_draw_table_rows(const pg_table *t, const pg_snapshot *snap, size_t n, uint64_t seed,
                       int label, float *x, int64_t *labels, pg_error *err);

#endif
