/* engine/eval/report.h - the quality report: synthetic rows against reference
 * rows, with every figure defined in marginal.h, assoc.h, nearest.h or here.
 *
 * Inputs are float matrices (n x d, row-major) plus an optional description of
 * each column; labels are optional and enable the utility figures. Nothing
 * here reads files or knows about HTTP: a service worker calls
 * pg_eval_report_run with rows it loaded and serializes the result with
 * pg_eval_report_json (jansson, which the engine links).
 *
 * Split (fixes which rows each figure uses; drawn once with the seeded
 * generator (opts.seed, stream 0x5e1f), never the secure one: it is not a
 * privacy mechanism):
 *   the reference rows are shuffled; B = the first h = floor(n_ref / 2) rows,
 *   A = the next m rows, and S = m synthetic rows drawn without replacement,
 *   with m = min(n_syn, n_ref - h). Every figure that has a noise floor or a
 *   real baseline compares S with B and, for the baseline, A with B: both sides
 *   have the same sizes (m against h) and the same B, so finite-sample bias is
 *   the same on both sides and "synthetic as close as real" reads directly.
 *   Needs n_ref >= 2 (h >= 1, m >= 1).
 *
 * Figures:
 *   per column (all rows of both sets): numeric columns get KS, W1, mean and
 *     std of each set; categorical columns the two frequency vectors and TV.
 *   pairwise (all rows of each set): association matrices real and synthetic,
 *     entry (i, j) Pearson for two numeric columns, Cramér's V for two
 *     categorical ones, NaN for mixed pairs or undefined values. The summary
 *     is the mean of |assoc_syn - assoc_real| over off-diagonal pairs i < j
 *     where both are defined, separately for Pearson and Cramér pairs, with
 *     the pair counts.
 *   distribution (S vs B, floor A vs B, rows as given: scale columns before
 *     calling if Euclidean geometry should not be the raw one):
 *     sliced W2 = sqrt(SW2^2) of ot/sliced.h along opts.sw_directions i.i.d.
 *     uniform directions (seeded stream 0x5110). Sinkhorn divergence
 *     S_reg of ot/divergence.h, squared Euclidean cost, on the first
 *     min(m, opts.sinkhorn_rows) rows of S or A against the first
 *     min(h, opts.sinkhorn_rows) of B (rows are already shuffled), with
 *     reg = opts.sinkhorn_reg_rel * 2 * sum_j var_j(reference), i.e. that
 *     fraction of the mean squared distance between two reference rows
 *     (a constant reference gets no Sinkhorn figure: has_sinkhorn false);
 *     eps-scaling 0.8, marginal tolerance 1e-4, opts.sinkhorn_max_iter
 *     (divergence.h reports no convergence flag; at Fashion-MNIST scale,
 *     reg_rel 0.05, the cross term converges in about 150 iterations).
 *   utility (labels given): accuracy on B of logreg.h fitted on S (with the
 *     synthetic labels) and, as the real baseline, fitted on A; beside them
 *     the majority rate, the share of B's most frequent class (the accuracy
 *     of always guessing it).
 *   missing values (decoded columns with units given): a numeric column's
 *     KS, W1, mean and std use its present values only, its missing shares
 *     are reported apart; Pearson r of a pair uses the rows where both are
 *     present (numpy.corrcoef on those rows).
 *   memorisation: DCR of each row of S to B and of each row of A to B
 *     (nearest.h); quantiles 0.05, 0.25, 0.5, 0.75, 0.95 of both, and the
 *     share of S rows whose DCR is strictly below the 0.05 quantile of A's.
 *     About 5 % of A's rows are below it by construction, so a share well
 *     above 0.05 flags synthetic rows closer to B than fresh real rows are.
 *     Copies of training rows are only visible when B holds training rows (a
 *     public holdout cannot show them). Distances are Euclidean on the rows
 *     as given, category codes included.
 *
 * Progress/cancellation (progress.h): opts.progress (may be NULL) receives
 * the stage ("marginals", "pairwise", "distribution", "utility",
 * "memorisation", then "done") and the overall fraction done; a nonzero
 * return stops the run with PG_ECANCELLED. It is checked between columns and
 * stages, after every L-BFGS iteration and every nearest-neighbour block; the
 * longest step it cannot interrupt is one Sinkhorn problem of
 * opts.sinkhorn_rows rows.
 * Memory (besides the inputs): (h + 2 m) d floats for the split, 3 d^2
 * doubles for the matrices, sinkhorn_rows^2 floats (plus small vectors) for
 * Sinkhorn, 256 h floats for the neighbour scan, 2 m k doubles for logreg.
 * Threads: the kernels use the caller's pg_threads_set count (OpenMP and
 * OpenBLAS); the report itself keeps no state between calls.
 * Ownership: the report owns its arrays; release with pg_eval_report_free.
 * Errors: PG_EINVAL (shapes, non-finite values, bad codes or labels),
 * PG_ENOMEM, PG_ENUMERIC (a Sinkhorn or logistic-regression failure),
 * PG_ECANCELLED; on failure *out is zeroed.
 */
#ifndef PG_EVAL_REPORT_H
#define PG_EVAL_REPORT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/eval/logreg.h"
#include "engine/eval/progress.h"

typedef enum pg_eval_kind { PG_EVAL_NUMERIC = 0, PG_EVAL_CATEGORICAL = 1 } pg_eval_kind;

typedef struct pg_eval_column {
    pg_eval_kind kind;
    int32_t categories; /* categorical: codes 0..categories-1 */
    const char *name;   /* optional, copied into JSON only */
    /* categorical, optional: the name of each code (`categories` entries),
     * for figures only (they label the bars; NULL: the codes do) */
    const char *const *category_names;
} pg_eval_column;

typedef struct pg_eval_input {
    const float *syn, *ref; /* n_syn x d and n_ref x d, row-major */
    size_t n_syn, n_ref, d;
    const pg_eval_column *columns;          /* d entries; NULL = all numeric */
    const int32_t *syn_labels, *ref_labels; /* both or neither */
    int num_classes;                        /* >= 2 when labels are given */
    /* Optional: the same rows as the model encodes them (n_syn x units and
     * n_ref x units; both or neither). When given, syn/ref are the table's
     * decoded columns (numbers in their own units, categories as codes),
     * which the marginals and pairwise figures read, and a numeric column
     * may hold NaN for a missing value; distribution, utility and
     * memorisation read the units. Without them every figure reads syn/ref
     * and every value must be finite. */
    const float *syn_units, *ref_units;
    size_t units;
} pg_eval_input;

typedef struct pg_eval_opts {
    uint64_t seed;
    bool marginals, pairwise, distribution, utility, memorisation;
    size_t sw_directions;    /* default 500; 1..PG_EVAL_MAX_DIRECTIONS */
    size_t sinkhorn_rows;    /* default 2000; <= PG_EVAL_MAX_SINKHORN_ROWS, 0 skips it */
    double sinkhorn_reg_rel; /* default 0.05; > 0 */
    int sinkhorn_max_iter;   /* default 1000; >= 1 */
    pg_logreg_opts logreg;   /* pg_logreg_defaults; its progress hook is the report's */
    pg_eval_progress_fn progress;
    void *progress_ctx;
} pg_eval_opts;

#define PG_EVAL_MAX_DIRECTIONS    100000
#define PG_EVAL_MAX_SINKHORN_ROWS 10000

void pg_eval_defaults(pg_eval_opts *opts);

typedef struct pg_eval_column_stats {
    pg_eval_kind kind;
    int32_t categories;
    double mean_real, mean_syn, std_real, std_syn; /* numeric */
    double ks, w1;                                 /* numeric, present values */
    double missing_real, missing_syn;              /* numeric: share of NaN (missing) */
    double tv;                                     /* categorical */
    double *freq_real, *freq_syn;                  /* categorical: `categories` each */
} pg_eval_column_stats;

#define PG_EVAL_NQ 5
extern const double pg_eval_quantile_levels[PG_EVAL_NQ];

typedef struct pg_eval_report {
    size_t n_syn, n_ref, d, h, m; /* the split above */
    uint64_t seed;

    bool has_marginals;
    pg_eval_column_stats *columns; /* d */

    bool has_pairwise;
    double *assoc_real, *assoc_syn; /* d x d */
    double pearson_mad, cramer_mad; /* NaN when no pair counts */
    size_t pearson_pairs, cramer_pairs;

    bool has_distribution;
    size_t sw_directions;
    double sw2_syn, sw2_floor;
    bool has_sinkhorn;
    size_t sinkhorn_rows_x, sinkhorn_rows_b;
    double sinkhorn_reg, sinkhorn_syn, sinkhorn_floor;

    bool has_utility;
    int num_classes;
    double acc_syn, acc_real; /* on B: trained on S, trained on A */
    double majority;          /* share of B's most frequent class: always guessing it */
    int majority_class;
    pg_logreg_report fit_syn, fit_real;

    bool has_memorisation;
    double dcr_syn_q[PG_EVAL_NQ], dcr_real_q[PG_EVAL_NQ];
    double dcr_threshold;   /* dcr_real_q at 0.05 */
    double dcr_share_below; /* share of S rows with DCR < threshold */

    /* Wall seconds per stage (monotonic clock), for the operator only: split,
     * marginals, pairwise, distribution, utility, memorisation. */
    double seconds[6];
} pg_eval_report;

int pg_eval_report_run(const pg_eval_input *in, const pg_eval_opts *opts, pg_eval_report *out,
                       pg_error *err);
void pg_eval_report_free(pg_eval_report *r);

/* JSON of the report: every figure above (NaN as null), with the matrices
 * (real, synthetic, difference = synthetic - real) only when d <=
 * matrix_max_d (else "matrices": "omitted"). columns as given to run
 * (names), may be NULL. *out is a new reference. */
int pg_eval_report_json(const pg_eval_report *r, const pg_eval_column *columns, size_t matrix_max_d,
                        json_t **out, pg_error *err);

#endif
