/* engine/pgm/pgm.h - discrete graphical models fitted to noisy marginals
 * (Private-PGM semantics: McKenna, Sheldon, Miklau 2019), the inference core
 * of the marginal-based synthesizers (mst, aim).
 *
 * Domain: `nattr` discrete attributes; attribute i has sizes[i] >= 1 levels,
 * coded 0..sizes[i]-1. A *set* (of a measurement, clique or query) is a
 * strictly increasing list of attribute indices, at most PG_PGM_MAX_CLIQUE of
 * them. Every table over a set is row-major with the first (lowest-index)
 * attribute slowest: cell index = ((x_a0 * n_a1) + x_a1) * n_a2 + x_a2 ...
 *
 * Model: the measured sets are the edges of a graph over attributes (each set
 * a complete subgraph); it is triangulated by greedy elimination (at each
 * step the attribute whose clique would have the fewest cells, ties by fewest
 * fill edges then lowest index: deterministic), its maximal cliques joined
 * into a junction tree (maximum spanning tree on separator size; components
 * joined by empty separators). An attribute never measured is a clique of its
 * own with a uniform factor. The distribution is
 *     p(x) = exp(sum_C theta_C(x_C)) / Z
 * with one log-potential table theta_C per clique; its clique marginals come
 * from sum-product belief propagation in log space (stable log-sum-exp).
 * Model size = sum of the clique tables' cells.
 *
 * Fit: the total count N is estimated as Private-PGM does, the
 * inverse-variance weighted mean of each measurement's sum (variance of a sum
 * of c cells with noise sigma is c * sigma^2), unless opts->total > 0 gives it.
 * Then the model minimizes the Gaussian negative log-likelihood
 *     L(mu) = sum_i ||M_i(mu) - y_i||^2 / (2 sigma_i^2),   mu = N * p,
 * (each cell's square weighted by its w when a measurement gives them),
 * i.e. least squares with residuals weighted by 1/sigma_i: the maximum-
 * likelihood estimate under the Gaussian noise the mechanism added, and the
 * weighting that lets measurements of different precision (AIM's annealed
 * rounds) count by their precision. L depends on p only through marginals of
 * the junction tree's cliques, so its minimum over tree models equals its
 * minimum over all joint distributions. Method: accelerated entropic mirror
 * descent on theta with a backtracked step and restarts (pgm.c explains),
 * stopped when the Frank-Wolfe duality gap (a certified bound on
 * L - min L) is <= tol * (1 + L), or when less than tol * (1 + L) was gained
 * per iteration over the last 8, or after max_iters. The returned model is
 * the last iterate x (its clique marginals factor over the tree).
 *
 * Memory: a fit holds about 6 tables of the model's cells (doubles) plus 6
 * copies of the measurements; a fitted model 3 (potentials, marginals,
 * sampling tables).
 *
 * Errors: PG_EINVAL for malformed arguments (unsorted set, attribute out of
 * range, sigma <= 0 or non-finite, non-finite y), PG_ERANGE when a model or
 * table would exceed its cell bound (the message gives the cells needed),
 * PG_ENOMEM, PG_ENUMERIC, PG_EFORMAT for a bad blob. Outputs are untouched on
 * failure.
 *
 * Ownership and threads: pg_pgm_fit and pg_pgm_load return a model the caller
 * frees with pg_pgm_model_free. A model is immutable once returned: marginals
 * and sampling may run from many threads at once (each sampler with its own
 * rng). Nothing is allocated in proportion to the product of all domain sizes:
 * every table is bounded by the model's cell bound.
 */
#ifndef PG_PGM_H
#define PG_PGM_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/core/rng.h"

#define PG_PGM_MAX_CLIQUE 8
/* Largest number of attributes and of levels of one attribute a model holds. */
#define PG_PGM_MAX_ATTRS  4096
#define PG_PGM_MAX_LEVELS ((size_t)1 << 24)
/* Default model-size bound: 2^24 cells. A fit peaks near 6 double tables of
 * the model's cells (about 800 MB at this bound), so callers that run
 * several fits at once should pass a lower one. */
#define PG_PGM_DEFAULT_MAX_CELLS 16777216.0

/* One noisy marginal: y has prod(sizes[attrs[j]]) cells laid out as above;
 * sigma is the std of the Gaussian noise added to each cell. w (NULL: all 1)
 * gives per-cell precisions relative to sigma: cell j's noise has variance
 * sigma^2 / w[j] (w[j] finite and > 0), as when a cell is the sum of m cells
 * measured at sigma (w = 1/m: MST's merged rare levels). The loss weighs
 * cell j by w[j] / sigma^2 and the total's estimate uses the sum's variance
 * sigma^2 * sum_j 1/w[j]. Borrowed. */
typedef struct pg_pgm_measure {
    size_t k;
    size_t attrs[PG_PGM_MAX_CLIQUE];
    const double *y;
    double sigma;
    const double *w;
} pg_pgm_measure;

typedef struct pg_pgm_fit_opts {
    size_t max_iters; /* iterations (one BP each, more when backtracking); 0: 2000 */
    double tol;       /* relative duality-gap target; 0: 1e-6 */
    double max_cells; /* model-size bound; 0: PG_PGM_DEFAULT_MAX_CELLS */
    int threads;      /* reserved: the fit runs on the caller's thread today */
    double total;     /* > 0: known total count; otherwise estimated */
} pg_pgm_fit_opts;

typedef struct pg_pgm_model pg_pgm_model;

/* What a fit did (zeros for a loaded model). */
typedef struct pg_pgm_fit_stats {
    size_t iters;  /* iterations run */
    double loss;   /* L(mu) at the returned model */
    double gap;    /* duality gap there: L - min L <= gap */
    int converged; /* 1 when gap <= tol * (1 + loss) */
} pg_pgm_fit_stats;

/* Cells of the junction tree over the given sets (the sum of its maximal
 * cliques' table sizes, after the triangulation described above), as a
 * double so nothing overflows: exactly the size pg_pgm_fit would build from
 * measurements on these sets. cliques[j] has clique_k[j] strictly increasing
 * attributes. Used by AIM to refuse candidates and by plan validation. */
int pg_pgm_plan_cells(const size_t *sizes, size_t nattr, const size_t *const *cliques,
                      const size_t *clique_k, size_t ncliques, double *cells, pg_error *err);

/* Fits a model to nm measurements (nm may be 0: the uniform model of total
 * opts->total, or 1). `warm` (may be NULL; same domain) starts the fit from
 * the distribution of a previous model as far as the new tree can express it
 * (its marginals on the new cliques), which is how AIM refits after a round;
 * a warm model of another domain, or one whose marginal on a new clique
 * would exceed its own cell bound, is ignored (cold start). It changes where
 * the fit starts, not the optimum. opts may be NULL for defaults. A fit that stops at max_iters
 * without reaching tol still returns its model (stats.converged == 0). */
int pg_pgm_fit(const size_t *sizes, size_t nattr, const pg_pgm_measure *m, size_t nm,
               const pg_pgm_fit_opts *opts, const pg_pgm_model *warm, pg_pgm_model **out,
               pg_error *err);

/* Exact marginal on any set of k <= PG_PGM_MAX_CLIQUE attributes (strictly
 * increasing, k may be 0: the total), as counts summing to the model's total, written to out
 * (prod of their sizes cells). Sets spanning several cliques are computed by
 * variable elimination over the smallest subtree covering them; PG_ERANGE if
 * an intermediate table would exceed max(model's cell bound, out's cells). */
int pg_pgm_marginal(const pg_pgm_model *m, const size_t *attrs, size_t k, double *out,
                    pg_error *err);

/* n i.i.d. rows from the model into codes[n * nattr] (row-major), by forward
 * sampling along the junction tree: the root clique from its marginal, every
 * other clique from its conditional given the separator. Deterministic in the
 * rng's state: the same seeded rng gives the same rows. O(n * cliques * log)
 * (the conditional tables are built when the model is). */
int pg_pgm_sample(const pg_pgm_model *m, pg_rng *rng, size_t n, uint32_t *codes, pg_error *err);

double pg_pgm_model_total(const pg_pgm_model *m);
double pg_pgm_model_cells(const pg_pgm_model *m);
size_t pg_pgm_model_nattr(const pg_pgm_model *m);
const size_t *pg_pgm_model_sizes(const pg_pgm_model *m);
/* Cliques of the junction tree: count, and clique j's attributes (borrowed,
 * valid while the model lives). */
size_t pg_pgm_model_ncliques(const pg_pgm_model *m);
const size_t *pg_pgm_model_clique(const pg_pgm_model *m, size_t j, size_t *k);
void pg_pgm_model_stats(const pg_pgm_model *m, pg_pgm_fit_stats *stats);
void pg_pgm_model_free(pg_pgm_model *m);

/* Serialization: a versioned, length-checked, crc32-protected blob holding
 * the domain, the cliques, the tree and the potentials (enough to take
 * marginals and sample without the data). *bytes is malloc'ed (free()).
 * pg_pgm_load validates every count, size and value; a truncated, corrupt or
 * hostile blob gives PG_EFORMAT (or PG_ERANGE/PG_ENOMEM), never a crash, and
 * never allocates beyond what the blob's length justifies. */
#define PG_PGM_BLOB_VERSION 1
int pg_pgm_save(const pg_pgm_model *m, unsigned char **bytes, size_t *len, pg_error *err);
int pg_pgm_load(const unsigned char *bytes, size_t len, pg_pgm_model **out, pg_error *err);

#endif
