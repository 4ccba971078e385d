/* engine/privacy/privacy.h - differential-privacy mechanisms and accounting.
 *
 * Contract:
 *  - Every function checks its domain and returns PG_EINVAL (with a sentence
 *    naming the bad argument) for anything outside it: q outside (0, 1],
 *    sigma <= 0, alpha <= 1, delta outside (0, 1), epsilon <= 0, NaN/Inf
 *    anywhere. Outputs are written only on success.
 *  - All arithmetic is double precision; probabilities that can underflow are
 *    handled as logarithms (log-sum-exp, lgamma, log1p/expm1, erfc tails).
 *    This module must never be compiled with -ffast-math.
 *  - Mechanisms draw noise only from a secure generator (pg_rng_secure); a
 *    seeded generator is refused with PG_EPRIVACY, so a user-chosen seed can
 *    never reproduce DP noise.
 *  - Noise multipliers are sigma / sensitivity (the accountants never see the
 *    sensitivity itself). Orders are Renyi orders alpha > 1.
 *  - A bound that is not a rigorous upper bound (the CLT sensitivity) is only
 *    returned with *approximate = 1; callers must surface that flag.
 * Nothing here allocates except pg_privacy_report_json (jansson object owned
 * by the caller).
 */
#ifndef PG_PRIVACY_PRIVACY_H
#define PG_PRIVACY_PRIVACY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/core/rng.h"

/* ---- numerical helpers (exposed for tests and other modules) ------------ */

double pg_privacy_log_add(double a, double b); /* log(e^a + e^b) */
double pg_privacy_log_sub(double a, double b); /* log(e^a - e^b); -inf if b >= a */
double pg_privacy_log_erfc(double x);          /* log erfc(x), accurate for large x */
double pg_privacy_ndtr(double x);              /* standard normal CDF Phi(x) */
double pg_privacy_log_ndtr(double x);          /* log Phi(x), accurate in the lower tail */
/* z with Phi(-z) = p, i.e. the upper (1 - p) quantile, for p in (0, 1); NaN
 * otherwise. */
double pg_privacy_ndtri_upper(double p);

/* ---- mechanisms ---------------------------------------------------------- */

/* Clips each of `rows` rows (length `dim`, stride `dim`) into the l2 ball of
 * radius R by scaling, or onto the l1 ball by Euclidean projection (Duchi et
 * al. 2008). Afterwards the norm of every stored float32 row, computed in
 * double, is <= R exactly (rounding is corrected by shrinking). The l1
 * projection needs `scratch` of dim doubles. Rows must be finite (PG_EINVAL
 * otherwise); R > 0. */
int pg_privacy_clip_l2(float *x, size_t rows, size_t dim, double R, pg_error *err);
int pg_privacy_clip_l1(float *x, size_t rows, size_t dim, double R, double *scratch, pg_error *err);

/* Adds N(0, sigma^2) to every entry (sigma > 0) with the secure generator.
 * Samples are Marsaglia polar deviates from 53-bit ChaCha20 uniforms computed
 * in double and rounded to float32. Unlike the Laplace mechanism below this is
 * not hardened against floating-point attacks on the low-order bits (a
 * discrete Gaussian would be); the float32 rounding of the output removes
 * most of them but no proof is claimed. */
int pg_privacy_gaussian_noise(pg_rng *rng, float *x, size_t n, double sigma, pg_error *err);

/* Poisson subsampling with the secure generator: every one of m records is
 * selected independently with probability q. Draws the gaps between selected
 * records from Geometric(q) by inversion, floor(log U / log(1 - q)) with U
 * uniform on (0, 1] at 53-bit resolution, so a step costs O(q m) draws instead
 * of m; P(gap >= k) = (1 - q)^k holds up to the 2^-53 resolution of U, the
 * same resolution a per-record comparison u < q has. Returns the number of
 * selected records in *count; idx (cap entries) receives all of them in
 * increasing order when *count <= cap, else a uniformly random subset of cap
 * of them (reservoir sampling, also from the secure generator). */
int pg_privacy_poisson_sample(pg_rng *rng, size_t m, double q, size_t *idx, size_t cap,
                              size_t *count, pg_error *err);

/* Laplace mechanism that is safe against floating-point attacks (Mironov 2012):
 * the input is rounded to a power-of-two grid gamma and the noise is an exact
 * discrete Laplace variable on that grid, sampled with integer arithmetic only
 * (Canonne, Kamath, Steinke 2020), so the released values are gamma * integer
 * (stored as float32, a function of that integer) and carry no low-order bits
 * that depend on the input. Rounding can move each coordinate of the
 * difference of two rows by gamma, so the grid scale t is calibrated for l1
 * sensitivity Delta + dim*gamma:
 *     t = ceil((Delta/gamma + dim) / epsilon),   b = t * gamma >= Delta/epsilon.
 * gamma = max(2^(floor(log2(Delta/epsilon)) - 32), 2^(floor(log2 Delta) - 39)),
 * so the inflation is at most dim*2^-32/eps in relative terms. Inputs must
 * satisfy |x| < 2^52 gamma (>= 2^12 Delta; PG_ERANGE otherwise). Rows of `dim`
 * entries; noise_scale receives b. */
int pg_privacy_laplace_scale(double l1_sensitivity, double epsilon, size_t dim, double *scale,
                             double *grid, pg_error *err);
int pg_privacy_laplace_mech(pg_rng *rng, float *x, size_t rows, size_t dim, double l1_sensitivity,
                            double epsilon, double *noise_scale, pg_error *err);
/* One exact discrete Laplace draw: P(k) proportional to exp(-|k|/t), t >= 1
 * (0 is treated as 1). A raw sampler: it does not check the generator, so DP
 * code must go through pg_privacy_laplace_mech. */
int64_t pg_privacy_discrete_laplace(pg_rng *rng, uint64_t t);

/* ---- Gaussian / Laplace calibration ------------------------------------- */

/* b = Delta1 / epsilon. */
int pg_privacy_laplace_b(double epsilon, double sensitivity, double *b, pg_error *err);
/* Classic sqrt(2 ln(1.25/delta)) Delta / epsilon (Dwork & Roth Thm A.1): only
 * proven for epsilon <= 1, so epsilon > 1 is refused (PG_EINVAL). */
int pg_privacy_gaussian_classic(double epsilon, double delta, double sensitivity, double *sigma,
                                pg_error *err);
/* Formula (5) of the entropic-GAN paper (000_...): sigma = (c + sqrt(c^2 + eps))
 * Delta / (eps sqrt 2), c^2 = ln(2 / (sqrt(16 delta + 1) - 1)). */
int pg_privacy_gaussian_paper(double epsilon, double delta, double sensitivity, double *sigma,
                              pg_error *err);
/* Analytic Gaussian mechanism (Balle & Wang 2018, Thm 8): the smallest sigma
 * with delta(sigma) = Phi(D/2s - e s/D) - e^e Phi(-D/2s - e s/D) <= delta,
 * by bisection to relative width 1e-13 (returns the feasible end).
 * pg_privacy_gaussian_delta is that delta(sigma); NaN if epsilon < 0,
 * sigma <= 0 or sensitivity <= 0. */
double pg_privacy_gaussian_delta(double epsilon, double sigma, double sensitivity);
int pg_privacy_gaussian_analytic(double epsilon, double delta, double sensitivity, double *sigma,
                                 pg_error *err);
/* Inverse: the smallest epsilon with delta(sigma) <= delta for a given sigma. */
int pg_privacy_gaussian_epsilon(double sigma, double delta, double sensitivity, double *epsilon,
                                pg_error *err);

/* ---- RDP accountant ------------------------------------------------------ */

enum pg_rdp_conversion {
    PG_RDP_CONV_CLASSIC = 1,  /* eps = rdp - log(delta)/(a-1) (Mironov 2017) */
    PG_RDP_CONV_IMPROVED = 2, /* eps = rdp + log1p(-1/a) - (log delta + log a)/(a-1)
                                 (Balle et al. 2020 / Canonne et al.; TF-Privacy, Opacus) */
};

#define PG_RDP_DEFAULT_ORDERS 156
/* Fills 1.1, 1.2, ..., 10.9, 11, 12, ..., 63, 128, 256, 512, 1024 (156 orders)
 * into out (cap >= PG_RDP_DEFAULT_ORDERS); returns the count, 0 if cap is short. */
size_t pg_rdp_default_orders(double *out, size_t cap);

/* RDP at order alpha > 1 of one step of the Poisson-subsampled Gaussian
 * mechanism with rate q in (0, 1] and noise multiplier sigma > 0 under
 * add/remove-one adjacency (Mironov, Talwar, Zhang 2019, Sec. 3.3): the exact
 * binomial expansion for integer alpha, the two erfc series for fractional
 * alpha. Where that series would need more than 1e5 terms (q near 1/2 with a
 * large sigma) the value is the chord of the convex log-moment between the
 * neighbouring integer orders: an upper bound, never an underestimate.
 * q = 1 gives the plain Gaussian alpha / (2 sigma^2). */
int pg_rdp_sampled_gaussian(double q, double sigma, double alpha, double *rdp, pg_error *err);
/* Plain Gaussian mechanism: alpha / (2 sigma^2). */
int pg_rdp_gaussian(double sigma, double alpha, double *rdp, pg_error *err);
/* rdp[i] = steps * RDP(q, sigma, orders[i]) for n orders (steps >= 1). */
int pg_rdp_compute(double q, double sigma, uint64_t steps, const double *orders, size_t n,
                   double *rdp, pg_error *err);
/* Composition: acc[i] += rdp[i] (curves of independent jobs add per order). */
int pg_rdp_compose(double *acc, const double *rdp, size_t n, pg_error *err);
/* Best epsilon over the orders at this delta; *order gets the minimizing
 * order (may be NULL). Infinite RDP values are skipped; all infinite gives
 * PG_ENUMERIC. Epsilon is clamped at 0 from below. */
int pg_rdp_to_dp(const double *orders, const double *rdp, size_t n, double delta, int conversion,
                 double *epsilon, double *order, pg_error *err);
/* Convenience on the default grid. */
int pg_rdp_epsilon(double q, double sigma, uint64_t steps, double delta, int conversion,
                   double *epsilon, double *order, pg_error *err);
/* Smallest noise multiplier (relative precision 1e-6, rounded up) such that
 * `steps` steps at rate q reach at most epsilon at delta. PG_ERANGE if even
 * sigma = 1e4 is not enough. */
int pg_rdp_calibrate_sigma(double epsilon, double delta, double q, uint64_t steps, int conversion,
                           double *sigma, pg_error *err);
/* epsilon of `steps` steps composed with a job's other releases, whose RDP
 * curve `extra` is on the default grid (NULL: none, i.e. pg_rdp_epsilon). */
int pg_rdp_epsilon_plus(double q, double sigma, uint64_t steps, const double *extra, double delta,
                        int conversion, double *epsilon, double *order, pg_error *err);
/* The same when the job also makes other releases whose RDP curve `extra`
 * (on the default grid, PG_RDP_DEFAULT_ORDERS values; NULL for none) composes
 * with the steps. PG_ERANGE also when the extra curve alone exceeds epsilon. */
int pg_rdp_calibrate_sigma_plus(double epsilon, double delta, double q, uint64_t steps,
                                const double *extra, int conversion, double *sigma, pg_error *err);
/* Largest number of steps whose epsilon stays <= the target (0 if none). */
int pg_rdp_max_steps(double sigma, double q, double epsilon, double delta, int conversion,
                     uint64_t *steps, pg_error *err);
/* Wang, Balle, Kasiviswanathan 2019 (Thm 9) upper bound on the RDP of the
 * Gaussian mechanism (noise multiplier sigma w.r.t. the replace-one
 * sensitivity) on a subsample of m out of n drawn without replacement,
 * gamma = m/n in (0, 1]. The bound is stated for integer alpha >= 2; since
 * RDP is nondecreasing in alpha, a fractional alpha is charged at ceil(alpha). */
int pg_rdp_wbk_gaussian(double gamma, double sigma, double alpha, double *rdp, pg_error *err);

/* ---- DP-SWD sensitivity ------------------------------------------------- */

enum pg_swd_bound {
    PG_SWD_BERNSTEIN = 1,  /* 002 Lemma 2, rigorous, loose */
    PG_SWD_CHERNOFF = 2,   /* exact Beta MGF, rigorous, tight (default) */
    PG_SWD_CLT = 3,        /* 002 CLT value: NOT a bound for large d (approximate) */
    PG_SWD_ORTHOGONAL = 4, /* ceil(k/d), deterministic, for orthonormal blocks */
};
/* w such that ||z Theta||_2^2 <= w with probability >= 1 - delta for a unit z
 * and k independent uniform unit directions in dimension d >= 2 (the
 * orthogonal bound ignores delta). *approximate is set to 1 for the CLT value. */
int pg_swd_sensitivity(int bound, size_t d, size_t k, double delta, double *w, int *approximate,
                       pg_error *err);
/* log 1F1(a; b; x) for a, b > 0, x >= 0 (positive series, rescaled sums):
 * log of the MGF of Beta(a, b - a) at x. NaN outside that domain. */
double pg_privacy_log_hyp1f1(double a, double b, double x);

/* ---- amplification by shuffling ----------------------------------------- */

/* Feldman, McMillan, Talwar 2021 ("Hiding among the clones"): central
 * (epsilon, delta) of shuffling 2 <= n <= 1e9 reports of an eps0-LDP
 * randomizer.
 * Closed form: the form implemented by the authors' reference code (a slightly
 * looser variant of Thm 3.1), valid for eps0 <= ln(n / (16 ln(4/delta)));
 * PG_ERANGE outside. Numerical: exact hockey-stick divergence of their
 * clone-based binomial mixture (Sec. 4 / App. E), bisected on epsilon; valid for
 * every eps0-LDP randomizer, never above eps0. */
int pg_shuffle_closed_form(double eps0, uint64_t n, double delta, double *epsilon, pg_error *err);
int pg_shuffle_numerical(double eps0, uint64_t n, double delta, double *epsilon, pg_error *err);
/* The delta of the numerical analysis at a given central epsilon (for tests). */
int pg_shuffle_delta(double eps0, uint64_t n, double epsilon, double *delta, pg_error *err);

/* ---- k-ary randomized response (local DP for a categorical value) ------- */

/* The channel on k >= 2 values: report the true value with probability
 * p = e^eps / (e^eps + k - 1), else one of the other k - 1 uniformly. Every
 * entry of a column of the channel matrix is p or q = (1 - p) / (k - 1), so
 * the mechanism is exactly eps-LDP (p / q = e^eps). A boolean is k = 2; a
 * nullable column adds "missing" as one more value. */
int pg_rr_keep_probability(size_t k, double epsilon, double *p, pg_error *err);
/* The k x k channel, row-major: P[t * k + r] = P(report r | true t). */
int pg_rr_channel(size_t k, double epsilon, double *P, pg_error *err);
/* Exact epsilon of the channel with keep probability p in [1/k, 1): the
 * largest log ratio of two entries of one column, log(p (k - 1) / (1 - p)). */
int pg_rr_epsilon(size_t k, double p, double *epsilon, pg_error *err);
/* Randomizes n values in [0, k) (out may alias in); PG_EPRIVACY unless rng is
 * the secure generator, PG_EINVAL for a value outside [0, k). The keep draw
 * is a 53-bit uniform against p, so the realized p is within 2^-53 of it. */
int pg_rr_randomize(pg_rng *rng, size_t k, double epsilon, const size_t *in, size_t *out, size_t n,
                    pg_error *err);
/* Unbiased estimate of the true frequencies from the reported ones (the
 * inverse channel): est_i = (f_i - q) / (p - q) for frequencies f summing to
 * 1; estimates may fall outside [0, 1]. */
int pg_rr_estimate(size_t k, double epsilon, const double *freq, double *est, pg_error *err);
/* The forward channel on n rows of k probabilities (e.g. a generator's
 * softmax over a categorical block): out = P^T probs = q + (p - q) probs per
 * row, the distribution of the reported value. Its derivative is the constant
 * (p - q), so a loss against randomized data can be backpropagated through
 * it. out may alias probs. */
int pg_rr_channel_apply(size_t k, double epsilon, const float *probs, float *out, size_t n,
                        pg_error *err);

/* ---- report -------------------------------------------------------------- */

#define PG_PRIVACY_NAME_MAX 48
typedef struct pg_privacy_report {
    char mechanism[PG_PRIVACY_NAME_MAX];    /* "sampled_gaussian", "laplace", ... */
    char neighbouring[PG_PRIVACY_NAME_MAX]; /* "add_remove_one", "replace_one" */
    char accountant[PG_PRIVACY_NAME_MAX];   /* "rdp_improved", "analytic_gaussian", ... */
    double epsilon, delta;
    double noise_multiplier; /* 0 when not applicable */
    double sampling_rate;    /* 0 when not applicable */
    uint64_t steps;          /* 0 when not applicable */
    int approximate;         /* 1 if any bound used is not rigorous */
} pg_privacy_report;

/* Fills the name fields (truncating is refused: PG_EINVAL). */
int pg_privacy_report_init(pg_privacy_report *r, const char *mechanism, const char *neighbouring,
                           const char *accountant, pg_error *err);
/* Renders the report as a new jansson object the caller owns (json_decref);
 * NULL on allocation failure. Not-applicable numbers (0) render as null. */
json_t *pg_privacy_report_json(const pg_privacy_report *r);

#endif
