/* engine/data/table_ldp.h - local differential privacy for typed tables.
 *
 * The data owner privatizes each row column by column before it leaves the
 * machine; the neighbouring relation is "any two rows" (local DP), and the
 * columns compose by basic composition: the row is (sum eps_j, sum delta_j)-
 * LDP. Per column, on the encoded block of table.h:
 *   categorical, boolean, label   k-ary randomized response over the column's
 *                                 values (categories, or false/true), plus
 *                                 "missing" as one more value when nullable
 *                                 (missingness is private too); exactly
 *                                 eps_j-LDP (privacy.h, pg_rr_*).
 *   continuous, integer           Laplace (grid-exact discrete Laplace,
 *                                 privacy.h) or Gaussian (analytic
 *                                 calibration) on the value unit, sensitivity
 *                                 hi - lo (in either norm), which holds because
 *                                 every input row is first checked to be a
 *                                 valid encoding inside [lo, hi].
 *   nullable numeric              half the column's epsilon goes to binary
 *                                 randomized response on the missing
 *                                 indicator, half to the noise on the value
 *                                 unit (which holds 0, inside [lo, hi], for
 *                                 a missing value: the same sensitivity).
 *                                 Noising the indicator instead would leave
 *                                 a threshold decode with no unbiased
 *                                 estimator of the missing rate.
 * Budget split (pg_ldp_plan_make_split), of the owner's own per-row total
 * (basic composition: the columns' epsilons sum to it; under the label split
 * never above it by rounding, and the plan states the total itself):
 *   label (the default for a table with a label): the label gets the share
 *     eL that maximises the mean squared signal-to-noise ratio of the
 *     debiased class differences of the features (the objective is stated
 *     in table_ldp.c; it reads only epsilon, the label's K, the schema's
 *     column kinds and the mechanism, never the data), and the features
 *     split the rest evenly. For credit_data (K = 2, 13 features) at a total
 *     of 5: eL = 1.86 and 0.24 per feature, against 0.36 everywhere evenly:
 *     the label's randomized response keeps the class with probability 0.86
 *     instead of 0.59, ~2.8x the class-difference SNR of the even split.
 *   even (the default without a label): the total split evenly over every
 *     column including the label.
 *   or the per-column "epsilon" of the schema (then every column must have
 *     one; no total, no split).
 * A nullable numeric column halves its epsilon between its indicator and its
 * value in every case. Gaussian deltas: a total split evenly over the
 * numeric columns. The server checks the declaration per column, so a
 * dataset privatized under either split is accepted.
 *
 * The declaration (pg_ldp_declaration) states everything per column; the
 * server recomputes it with pg_ldp_check_declaration, which refuses a column
 * whose noise is below the minimum for its epsilon (or whose keep probability
 * exceeds the one for its epsilon) and totals below the sums.
 * Noise comes only from the secure generator (PG_EPRIVACY otherwise).
 */
#ifndef PG_DATA_TABLE_LDP_H
#define PG_DATA_TABLE_LDP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/core/rng.h"
#include "engine/data/table.h"

enum pg_ldp_mech { PG_LDP_RR = 1, PG_LDP_LAPLACE = 2, PG_LDP_GAUSSIAN = 3 };

typedef struct pg_ldp_column {
    int mechanism; /* enum pg_ldp_mech */
    double epsilon, delta;
    size_t k;                             /* RR: values (categories or 2, + 1 when nullable) */
    double keep;                          /* RR: keep probability */
    size_t units;                         /* numeric: units noised (1) */
    double sensitivity;                   /* numeric: hi - lo */
    double noise_scale;                   /* Laplace b (grid-inflated) or Gaussian sigma */
    double missing_epsilon, missing_keep; /* nullable numeric: indicator RR (k = 2) */
} pg_ldp_column;

typedef struct pg_ldp_plan {
    size_t ncols; /* == table ncols, same order */
    pg_ldp_column *cols;
    double epsilon, delta; /* totals (basic composition) */
    int numeric;           /* PG_LDP_LAPLACE or PG_LDP_GAUSSIAN */
} pg_ldp_plan;

enum pg_ldp_split {
    PG_LDP_SPLIT_DEFAULT = 0, /* label when the table has one, else even */
    PG_LDP_SPLIT_EVEN = 1,
    PG_LDP_SPLIT_LABEL = 2 /* PG_EINVAL without a label */
};

/* epsilon_total > 0: split as `split` says (top); epsilon_total == 0: the
 * schema's per-column epsilons (split must be PG_LDP_SPLIT_DEFAULT).
 * delta_total in (0, 1) is required for Gaussian when the table has a
 * numeric column, and must be 0 for Laplace. pg_ldp_plan_make is the
 * default split. */
int pg_ldp_plan_make_split(const pg_table *t, int numeric, double epsilon_total, double delta_total,
                           int split, pg_ldp_plan *plan, pg_error *err);
int pg_ldp_plan_make(const pg_table *t, int numeric, double epsilon_total, double delta_total,
                     pg_ldp_plan *plan, pg_error *err);

/* The label's epsilon under the label split of a total (the maximiser of the
 * objective in table_ldp.c, to ~1e-13 relative). PG_EINVAL without a label
 * or a total. */
int pg_ldp_label_epsilon(const pg_table *t, int numeric, double epsilon_total, double delta_total,
                         double *eps_label, pg_error *err);
void pg_ldp_plan_free(pg_ldp_plan *plan);

/* Privatizes n encoded rows (and their labels) in place. Every row must be a
 * valid encoding inside [lo, hi] (PG_EINVAL naming the row and column
 * otherwise, nothing changed). Randomized-response columns come back as
 * clean encodings of the reported values; numeric blocks carry their noise. */
int pg_ldp_apply(pg_rng *rng, const pg_table *t, const pg_ldp_plan *plan, float *x, int64_t *labels,
                 size_t n, pg_error *err);

/* PG_OK when every one of n encoded rows is a valid encoding inside the
 * schema's bounds (what the row bounds of table.h assume; the label column,
 * which has no units, is not checked); PG_EINVAL naming the first bad row
 * and column otherwise. */
int pg_table_check_encoded(const pg_table *t, const float *x, size_t n, pg_error *err);

/* {"model": "local", "mechanism": "per_column", "neighbouring":
 * "any_two_rows", "composition": "basic", "epsilon", "delta" (null when 0),
 * "rows", "columns": [{"name", "mechanism", "epsilon", ...}]}; NULL on
 * allocation failure. */
json_t *pg_ldp_declaration(const pg_table *t, const pg_ldp_plan *plan, uint64_t rows);

/* Verifies a declaration against the schema. On success *epsilon and *delta
 * (may be NULL) get the declared totals. PG_EINVAL for a malformed one,
 * PG_EPRIVACY when a column is noised less than its epsilon requires; field
 * (PG_LDP_FIELD_MAX bytes, may be NULL) names the offending JSON path. */
#define PG_LDP_FIELD_MAX 64
int pg_ldp_check_declaration(const pg_table *t, const json_t *decl, double *epsilon, double *delta,
                             char *field, pg_error *err);

#endif
