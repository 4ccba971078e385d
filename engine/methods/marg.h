/* engine/methods/marg.h - privacy and counting building blocks of the
 * marginal methods (mst, aim; METHODS.md "mst / aim").
 *
 * Neighbouring relation: add/remove one record (the ledger's). A marginal
 * (counts of every combination of values of a set of attributes) then moves
 * by exactly 1 in one cell, so its l2 sensitivity is 1 whatever the set.
 *
 * Accounting in zero-concentrated DP (Bun & Steinke 2016):
 *   Gaussian measurement, noise std sigma per cell     rho = 1 / (2 sigma^2)
 *   exponential mechanism, parameter eps, sensitivity  rho = eps^2 / 8
 *     (Cesar & Rogers 2021, bounded range)
 * rho's add. rho-zCDP is (alpha, alpha rho)-RDP for every alpha > 1, so a job
 * is charged the RDP curve alpha * rho on the privacy library's order grid,
 * and the dataset ledger composes it with every other job. The job's rho is
 * the largest whose curve, converted by the ledger's own rule
 * (pg_rdp_to_dp, PG_RDP_CONV_IMPROVED, on the default grid), stays within
 * the requested epsilon at delta: the ledger never sees more than asked.
 * pg_marg_zcdp_epsilon is the same conversion with alpha free (Canonne,
 * Kamath, Steinke 2020, Prop. 12 form), for reporting how close the grid is.
 *
 * Randomness: every DP draw takes a secure generator (PG_EPRIVACY otherwise).
 */
#ifndef PG_METHODS_MARG_H
#define PG_METHODS_MARG_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/core/rng.h"

/* Largest rho (relative precision 1e-12, rounded down) whose curve
 * alpha * rho converts to at most eps at delta under the ledger's rule. */
int pg_marg_rho_for(double eps, double delta, double *rho, pg_error *err);
/* The ledger's epsilon of rho-zCDP at delta (default grid, improved rule). */
int pg_marg_ledger_epsilon(double rho, double delta, double *eps, pg_error *err);
/* inf over alpha > 1 of alpha rho + log1p(-1/alpha) - (log delta + log alpha)
 * / (alpha - 1), by golden-section search on a bracket (continuous alpha). */
double pg_marg_zcdp_epsilon(double rho, double delta);

/* Exponential mechanism by Gumbel-max: returns i maximizing
 * eps * score[i] / (2 sens) + G_i, G_i iid standard Gumbel from the secure
 * generator, i.e. P(i) proportional to exp(eps score[i] / (2 sens)). Entries
 * with score -INFINITY are never chosen (at least one must be finite). */
int pg_marg_exponential(pg_rng *secure, const double *score, size_t n, double eps, double sens,
                        size_t *pick, pg_error *err);

/* y[i] += N(0, sigma^2) from the secure generator; the result is rounded to
 * float32 (what checkpoints keep, so a resumed fit sees the same values). */
int pg_marg_gaussian(pg_rng *secure, const double *x, size_t n, double sigma, float *y,
                     pg_error *err);

/* Counts of the marginal on attrs[0..k) of n coded rows (row stride `nattr`
 * codes, uint16), into out[cells] (zeroed first), row-major with the last
 * attribute fastest; sizes[a] is attribute a's level count. */
void pg_marg_count(const uint16_t *codes, size_t n, size_t nattr, const size_t *sizes,
                   const size_t *attrs, size_t k, double *out, size_t cells);

#endif
