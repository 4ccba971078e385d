/* engine/data/qmap.h - a DP quantile map of a typed table's numeric columns.
 *
 * A generator whose numeric head is tanh onto [lo, hi] serves skewed columns
 * (most rows at one end of the declared range) narrow: the head saturates
 * where the mass is. The map sends every numeric unit through the column's
 * CDF, estimated from a noisy histogram, so the generator learns spread-out
 * values (uniform on [lo, hi] for the data's own rows) and samples go back
 * through the inverse CDF.
 *
 * Release (one per job, before training reads a row): per numeric column
 * (continuous or integer, label excluded) a histogram of its present values
 * over bins fixed by the schema alone - one bin per integer value when an
 * integer column has at most `bins` values (edges at the half-integers), else
 * `bins` equal bins over [min, max] - each count plus N(0, sigma^2).
 *
 * Sensitivity (the vector H of all c columns' counts):
 *   add/remove one row: in each column the row's value falls in one bin (or
 *     in none when missing), so H moves by 1 in at most one coordinate per
 *     column: ||H(D) - H(D')||_2 <= sqrt(c).
 *   replace one row: per column one count goes down by 1 and one goes up
 *     by 1 (or they are the same bin, or one side is missing): at most 2 per
 *     column in squared l2, ||H(D) - H(D')||_2 <= sqrt(2c).
 * Both are attained (rows with values in different bins of every column).
 * With sigma = s * Delta (s the noise multiplier, Delta the sensitivity of
 * the method's neighbouring relation) the Gaussian mechanism's RDP is
 * alpha Delta^2 / (2 sigma^2) = alpha / (2 s^2) at every order alpha
 * (Mironov 2017, Prop. 7), whatever c and the relation: pg_qmap_rdp.
 *
 * Post-processing (no privacy cost): each noisy count minus the threshold
 * sigma, clipped at 0 (so an empty bin keeps E[max(N - sigma, 0)] = 0.083
 * sigma instead of 0.40 sigma, and the clipping bias stays small); every bin
 * then gets a floor of 1e-4 of the column's mass over its bins, so the CDF is
 * strictly increasing and the map invertible; a column left with no mass is
 * uniform over its bins. The CDF is piecewise linear inside the bins.
 *
 * Maps, in place on encoded rows (table.h's layout):
 *   encode  u -> c + k h (2 F(u) - 1), c and h the centre and half-width of
 *           [lo, hi], k the spread in (0, 1] (1: uniform on the whole range;
 *           smaller keeps the numbers' share of a distance-based loss nearer
 *           the categories'): the value unit of a present value; a
 *           missing value's unit stays 0 (so rows stay valid encodings and
 *           the schema's diameter still bounds their distance).
 *   decode  v -> F^-1((1 + (v - c) / (k h)) / 2), clamped to the column's encoded
 *           range; integers to their nearest value (integral after decoding).
 * decode(encode(u)) = u up to float rounding for every u in range.
 *
 * Ownership: pg_qmap_release / _from_counts / _from_json / _copy allocate;
 * pg_qmap_free releases (NULL is fine). Errors: PG_EINVAL on bad arguments,
 * PG_EPRIVACY without the secure generator, PG_EFORMAT on a malformed JSON
 * map, PG_ENOMEM.
 */
#ifndef PG_DATA_QMAP_H
#define PG_DATA_QMAP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/core/rng.h"
#include "engine/data/table.h"

#define PG_QMAP_VERSION      1
#define PG_QMAP_DEFAULT_BINS 32
#define PG_QMAP_MAX_BINS     4096
/* Default noise multiplier s: RDP alpha / 200, that of the label count. */
#define PG_QMAP_DEFAULT_NOISE 10.0

typedef struct pg_qmap_col {
    size_t unit;    /* encoded value unit */
    size_t missing; /* indicator unit, PG_TABLE_NONE when not nullable */
    int integer;    /* 1: integer column (decode snaps to its values) */
    double step;    /* integer: encoded distance of consecutive values */
    size_t bins;
    double *edge; /* bins + 1 increasing edges (encoded units) */
    double *cdf;  /* bins + 1: 0, strictly increasing, 1 */
} pg_qmap_col;

typedef struct pg_qmap {
    size_t ncols;
    pg_qmap_col *cols;
    double lo, hi; /* the table's model range */
    double spread; /* k in (0, 1]: mapped values fill [c - k h, c + k h] */
    /* Sub-bins of the per-class release (below; 0: none, the maps of
     * jobs resolved before them) and their noise multiplier. */
    size_t sub;
    double sub_noise;
} pg_qmap;

/* Numeric columns of t (label excluded): the c of the sensitivity. */
size_t pg_qmap_columns(const pg_table *t);
/* Per-count noise std: s sqrt(c) (add/remove) or s sqrt(2c) (replace_one). */
double pg_qmap_count_sigma(double s, size_t c, int replace_one);
/* The release's RDP at orders[0 .. n): alpha / (2 s^2). */
int pg_qmap_rdp(double s, const double *orders, size_t n, double *rdp, pg_error *err);

/* Releases the noisy histograms of the n rows x (stride apart, encoded) and
 * builds the map. bins in [2, PG_QMAP_MAX_BINS], s > 0. */
int pg_qmap_release(pg_rng *secure, const pg_table *t, const float *x, size_t n, size_t stride,
                    size_t bins, double s, int replace_one, pg_qmap **out, pg_error *err);
/* Per-class release (labelled tables, dp_sinkhorn's calibration.numeric
 * "quantile"): one histogram per (class, numeric column) over the same bins,
 * each count plus N(0, sigma^2), sigma = s Delta with Delta as above:
 *   add/remove one row: the row lies in one class, so it moves at most one
 *     count per column, all in its class's histograms: sqrt(c).
 *   replace one row: per column, one count of the old row's (class, bin)
 *     down by 1 and one of the new row's (class', bin') up by 1 (different
 *     classes or not, they are two cells of the concatenated vector, or the
 *     same one): at most 2 per column in squared l2, sqrt(2c).
 * So the concatenation of the K classes' histograms has the sensitivity of
 * the pooled release and the same sigma gives the same RDP alpha / (2 s^2):
 * it replaces the pooled release in the plan, at no extra cost. per_class[k]
 * is built from class k's noisy counts (threshold sigma, as above); *pooled,
 * the map the generator's encoding uses, from their sum (post-processing;
 * noise variance K sigma^2, so its threshold is sqrt(K) sigma and it is a
 * noisier map than the pooled release's when K > 1). classes 0: one class,
 * labels unused. raw (optional): K x pg_qmap_total_bins noisy counts, class
 * by class, column by column. per_class has max(classes, 1) slots. */
int pg_qmap_release_classes(pg_rng *secure, const pg_table *t, const float *x,
                            const int32_t *labels, size_t n, size_t stride, int classes,
                            size_t bins, double s, int replace_one, pg_qmap **pooled,
                            pg_qmap **per_class, double *raw, pg_error *err);
/* Sub-bins (encoding.quantile_sub = S > 0, the per-class quantile rule of
 * calib_table.h). A bin's mass says nothing of where inside the bin the
 * values lie, and the bins are equal cuts of the schema's bounds, so on a
 * wide range one bin can hold most of a column (credit_data: Assets on
 * [0, 500000], 36 % of it exactly 0, 90 % in the first of 32 bins; Time's
 * 11 values at 12, 24, ..., 60 inside bins 3.75 wide). A second release
 * splits every bin into sub-bins fixed by the schema and S alone:
 *   integer column, bin holding v values: v <= S: one sub-bin per value (a
 *     point: its samples are that value); v > S: S equal cuts, except that
 *     the column's first bin starts with the point {min} (a mass at the
 *     lower bound, e.g. zero assets) and S - 1 cuts of the rest;
 *   continuous column: S equal cuts;
 *   a bin with a single sub-bin (an integer map with one bin per value, a
 *     bin holding one value) releases nothing.
 * Per class k, per column with at least one released bin (c2 columns, label
 * excluded), per released bin: the count of the class's present values in
 * each of its sub-bins, plus N(0, sigma2^2), sigma2 = s2 Delta2.
 * Sensitivity of the concatenation over classes, columns and bins: a row
 * lies in one class and in one bin of each column, so it moves at most one
 * cell per column: add/remove sqrt(c2), replace-one sqrt(2 c2) (the old
 * cell down, the new one up), attained. RDP alpha / (2 s2^2) at every
 * order, composed with the bins' release in the plan (qmap_spec.h).
 * Post-processing: each cell minus sigma2 clipped at 0; a bin's cells then
 * normalized into its within-bin CDF (m + 1 values from 0 to 1 over its m
 * sub-bins), or -1 throughout when nothing is left (the rule falls back to
 * its old within-bin shape). Only the per-class CDF uses them; the pooled
 * map the generator trains in is unchanged. */
#define PG_QMAP_MAX_SUB 256
/* Sub-bins of bin b of column j (1: none released). */
size_t pg_qmap_sub_bins(const pg_qmap *m, size_t j, size_t b, size_t sub);
/* Sub-bin i's range [*a, *z] in encoded units (a == z: a point). */
void pg_qmap_sub_range(const pg_qmap *m, size_t j, size_t b, size_t sub, size_t i, double *a,
                       double *z);
/* The sub-bin of encoded u in bin b. */
size_t pg_qmap_sub_of(const pg_qmap *m, size_t j, size_t b, size_t sub, double u);
/* Values per class of the within-bin CDFs: sum over released bins of m + 1. */
size_t pg_qmap_sub_len(const pg_qmap *m, size_t sub);
/* Columns with a released bin: the c2 of the sensitivity. */
size_t pg_qmap_sub_columns(const pg_qmap *m, size_t sub);
/* Releases the sub-bin counts of the n rows x (labels in [0, classes);
 * classes 0: one class) over m's bins (a layout: its CDFs are not read) and
 * writes the within-bin CDFs, class by class, into out (max(classes, 1) x
 * pg_qmap_sub_len). sub in [2, PG_QMAP_MAX_SUB], s2 > 0. raw (optional):
 * the noisy cells, class by class, column by column, bin by bin. */
int pg_qmap_release_sub(pg_rng *secure, const pg_qmap *m, const float *x, const int32_t *labels,
                        size_t n, size_t stride, int classes, size_t sub, double s2,
                        int replace_one, float *out, double *raw, pg_error *err);

/* Bins over all columns of m (0 for NULL). */
size_t pg_qmap_total_bins(const pg_qmap *m);
/* The histograms only (no noise): counts[j] gets column j's bins (layout of
 * pg_qmap_layout). Exposed for tests. */
int pg_qmap_layout(const pg_table *t, size_t bins, pg_qmap **out, pg_error *err);
/* spread (default 1 in a layout; k of the maps above): (0, 1]. */
int pg_qmap_set_spread(pg_qmap *m, double spread, pg_error *err);
void pg_qmap_histogram(const pg_qmap *m, const float *x, size_t n, size_t stride, double **counts);
/* Fills the CDFs of a layout from (noisy) counts with the threshold above. */
void pg_qmap_set_counts(pg_qmap *m, double *const *counts, double threshold);

void pg_qmap_encode(const pg_qmap *m, float *x, size_t stride, size_t rows);
void pg_qmap_decode(const pg_qmap *m, float *x, size_t stride, size_t rows);
/* One value of column j: CDF at encoded u, and encoded value at p in [0, 1]. */
double pg_qmap_cdf(const pg_qmap_col *c, double u);
double pg_qmap_inverse(const pg_qmap_col *c, double p);

/* {"version": 1, "lo", "hi", "spread", ["sub", "sub_noise",] "columns":
 * [{"unit", "missing" (or null), "integer", "step", "edges": [...], "cdf":
 * [...]}]}; back with every field checked (monotone, finite, units below
 * width). "sub" and "sub_noise" are written when sub > 0 and read as 0 when
 * absent (maps saved before them). */
json_t *pg_qmap_to_json(const pg_qmap *m);
int pg_qmap_from_json(const json_t *j, size_t width, pg_qmap **out, pg_error *err);
int pg_qmap_copy(const pg_qmap *m, pg_qmap **out, pg_error *err);
void pg_qmap_free(pg_qmap *m);

#endif
