/* engine/privacy/rdp.c - Renyi-DP accountant for (subsampled) Gaussian mechanisms. */
#include <math.h>

#include "engine/privacy/privacy.h"

#define RDP_MAX_ORDER 1e4

static double lgam(double x)
{
    int sign; /* lgamma_r: no write to the global signgam */
    return lgamma_r(x, &sign);
}

/* log |binom(a, i)| for real a >= 0 and integer i >= 0. */
static double log_abs_binom(double a, double i)
{
    return lgam(a + 1.0) - lgam(i + 1.0) - lgam(a - i + 1.0);
}

static int check_q_sigma_alpha(double q, double sigma, double alpha, pg_error *err)
{
    if (!(q > 0.0 && q <= 1.0))
        return pg_error_set(err, PG_EINVAL, "sampling rate q must lie in (0, 1], got %g", q);
    if (!(sigma > 0.0) || !isfinite(sigma))
        return pg_error_set(err, PG_EINVAL, "noise multiplier must be finite and > 0, got %g",
                            sigma);
    if (!(alpha > 1.0) || !(alpha <= RDP_MAX_ORDER))
        return pg_error_set(err, PG_EINVAL, "Renyi order must lie in (1, %g], got %g",
                            RDP_MAX_ORDER, alpha);
    return PG_OK;
}

/* Integer alpha: A = sum_k binom(a,k) (1-q)^(a-k) q^k exp((k^2-k)/(2 s^2)). */
static double log_a_int(double q, double sigma, double alpha)
{
    double la = -INFINITY, lq = log(q), l1q = log1p(-q);
    int n = (int)alpha;
    for (int k = 0; k <= n; k++) {
        double t = log_abs_binom(alpha, k) + k * lq + (n - k) * l1q +
                   ((double)k * k - k) / (2.0 * sigma * sigma);
        la = pg_privacy_log_add(la, t);
    }
    return la;
}

/* Fractional alpha: split E_{mu0}[(mu/mu0)^alpha] at z0, where the two
 * components of mu = (1-q) mu0 + q mu1 are equal, and expand each side in the
 * ratio that is < 1 there (generalized binomial series). Each Gaussian moment
 * restricted to a half-line is exp((i^2-i)/(2 s^2)) times a normal tail. The
 * generalized binomial coefficients change sign past alpha, so positive and
 * negative parts are summed separately in log space. */
static int log_a_frac(double q, double sigma, double alpha, double *out)
{
    double pos0 = -INFINITY, neg0 = -INFINITY, pos1 = -INFINITY, neg1 = -INFINITY;
    double s2 = sigma * sigma, z0 = s2 * log(1.0 / q - 1.0) + 0.5;
    double lq = log(q), l1q = log1p(-q), fl = floor(alpha);
    int imax = (int)alpha + 100000;
    for (int i = 0; i <= imax; i++) {
        double j = alpha - i, coef = log_abs_binom(alpha, i);
        int negative = (i > fl + 1.0) && (((int)(i - fl - 1.0)) & 1);
        double s0 = coef + i * lq + j * l1q + ((double)i * i - i) / (2.0 * s2) +
                    (-M_LN2 + pg_privacy_log_erfc((i - z0) / (M_SQRT2 * sigma)));
        double s1 = coef + j * lq + i * l1q + (j * j - j) / (2.0 * s2) +
                    (-M_LN2 + pg_privacy_log_erfc((z0 - j) / (M_SQRT2 * sigma)));
        if (negative) {
            neg0 = pg_privacy_log_add(neg0, s0);
            neg1 = pg_privacy_log_add(neg1, s1);
        } else {
            pos0 = pg_privacy_log_add(pos0, s0);
            pos1 = pg_privacy_log_add(pos1, s1);
        }
        /* Past alpha + 1 both series alternate (the sign of binom(alpha, i))
         * with magnitudes decreasing like i^-(alpha+2), so the limit lies
         * between consecutive partial sums: adding the last magnitude gives an
         * upper bound. RDP ~ (A - 1)/(alpha - 1) when small, so stop once that
         * magnitude is 1e-8 of A - 1. */
        double m = pg_privacy_log_add(s0, s1);
        if (i > alpha + 1.0 && m < -18.0) {
            double a0 = pg_privacy_log_sub(pos0, neg0), a1 = pg_privacy_log_sub(pos1, neg1);
            double la = pg_privacy_log_add(a0, a1);
            double lam1 = la > 30.0 ? la : (la > 0.0 ? log(expm1(la)) : -INFINITY);
            if (m < fmax(lam1, -80.0) - 18.5) {
                *out = pg_privacy_log_add(la, m);
                return isfinite(*out) ? PG_OK : PG_ENUMERIC;
            }
        }
    }
    return PG_ENUMERIC;
}

int pg_rdp_gaussian(double sigma, double alpha, double *rdp, pg_error *err)
{
    int rc = check_q_sigma_alpha(1.0, sigma, alpha, err);
    if (rc) return rc;
    *rdp = alpha / (2.0 * sigma * sigma);
    return PG_OK;
}

int pg_rdp_sampled_gaussian(double q, double sigma, double alpha, double *rdp, pg_error *err)
{
    int rc = check_q_sigma_alpha(q, sigma, alpha, err);
    if (rc) return rc;
    if (q == 1.0) return pg_rdp_gaussian(sigma, alpha, rdp, err);
    double la;
    if (alpha == floor(alpha)) {
        la = log_a_int(q, sigma, alpha);
    } else if (log_a_frac(q, sigma, alpha, &la) != PG_OK) {
        /* The series converges only polynomially when z0 is near 0 (q near
         * 1/2, large sigma). log A_alpha is convex in alpha (Hoelder), so the
         * chord between the neighbouring integer orders bounds it from above
         * (log A_1 = 0): a sound, slightly looser value. */
        double fl = floor(alpha), th = alpha - fl;
        double lo = fl >= 2.0 ? log_a_int(q, sigma, fl) : 0.0;
        la = (1.0 - th) * lo + th * log_a_int(q, sigma, fl + 1.0);
    }
    double v = la / (alpha - 1.0);
    if (!(v == v)) return pg_error_set(err, PG_ENUMERIC, "RDP evaluated to NaN");
    *rdp = v > 0.0 ? v : 0.0; /* Renyi divergences are >= 0; clamp rounding */
    return PG_OK;
}

int pg_rdp_compute(double q, double sigma, uint64_t steps, const double *orders, size_t n,
                   double *rdp, pg_error *err)
{
    if (steps == 0) return pg_error_set(err, PG_EINVAL, "steps must be >= 1");
    if (!orders || !rdp || n == 0) return pg_error_set(err, PG_EINVAL, "no Renyi orders given");
    for (size_t i = 0; i < n; i++) {
        double r;
        int rc = pg_rdp_sampled_gaussian(q, sigma, orders[i], &r, err);
        if (rc) return rc;
        rdp[i] = (double)steps * r;
    }
    return PG_OK;
}

int pg_rdp_compose(double *acc, const double *rdp, size_t n, pg_error *err)
{
    if (!acc || !rdp) return pg_error_set(err, PG_EINVAL, "RDP curves must not be NULL");
    for (size_t i = 0; i < n; i++)
        if (!(rdp[i] >= 0.0)) return pg_error_set(err, PG_EINVAL, "RDP values must be >= 0");
    for (size_t i = 0; i < n; i++) acc[i] += rdp[i];
    return PG_OK;
}

size_t pg_rdp_default_orders(double *out, size_t cap)
{
    if (!out || cap < PG_RDP_DEFAULT_ORDERS) return 0;
    size_t n = 0;
    for (int i = 11; i <= 109; i++) out[n++] = i / 10.0;
    for (int i = 11; i <= 63; i++) out[n++] = i;
    out[n++] = 128;
    out[n++] = 256;
    out[n++] = 512;
    out[n++] = 1024;
    return n;
}

static int check_delta(double delta, pg_error *err)
{
    if (!(delta > 0.0 && delta < 1.0))
        return pg_error_set(err, PG_EINVAL, "delta must lie in (0, 1), got %g", delta);
    return PG_OK;
}

int pg_rdp_to_dp(const double *orders, const double *rdp, size_t n, double delta, int conversion,
                 double *epsilon, double *order, pg_error *err)
{
    int rc = check_delta(delta, err);
    if (rc) return rc;
    if (conversion != PG_RDP_CONV_CLASSIC && conversion != PG_RDP_CONV_IMPROVED)
        return pg_error_set(err, PG_EINVAL, "unknown RDP conversion %d", conversion);
    if (!orders || !rdp || n == 0) return pg_error_set(err, PG_EINVAL, "no Renyi orders given");
    double best = INFINITY, best_order = NAN, ld = log(delta);
    for (size_t i = 0; i < n; i++) {
        double a = orders[i];
        if (!(a > 1.0) || !isfinite(a))
            return pg_error_set(err, PG_EINVAL, "Renyi order must be finite and > 1, got %g", a);
        if (!(rdp[i] >= 0.0)) return pg_error_set(err, PG_EINVAL, "RDP values must be >= 0");
        if (!isfinite(rdp[i])) continue;
        double e;
        if (conversion == PG_RDP_CONV_CLASSIC)
            e = rdp[i] - ld / (a - 1.0);
        else
            e = rdp[i] + log1p(-1.0 / a) - (ld + log(a)) / (a - 1.0);
        if (e < best) {
            best = e;
            best_order = a;
        }
    }
    if (!isfinite(best)) return pg_error_set(err, PG_ENUMERIC, "RDP is infinite at every order");
    *epsilon = best > 0.0 ? best : 0.0;
    if (order) *order = best_order;
    return PG_OK;
}

int pg_rdp_epsilon(double q, double sigma, uint64_t steps, double delta, int conversion,
                   double *epsilon, double *order, pg_error *err)
{
    return pg_rdp_epsilon_plus(q, sigma, steps, NULL, delta, conversion, epsilon, order, err);
}

int pg_rdp_epsilon_plus(double q, double sigma, uint64_t steps, const double *extra, double delta,
                        int conversion, double *epsilon, double *order, pg_error *err)
{
    double orders[PG_RDP_DEFAULT_ORDERS], rdp[PG_RDP_DEFAULT_ORDERS];
    size_t n = pg_rdp_default_orders(orders, PG_RDP_DEFAULT_ORDERS);
    int rc = pg_rdp_compute(q, sigma, steps, orders, n, rdp, err);
    if (rc == PG_OK && extra) rc = pg_rdp_compose(rdp, extra, n, err);
    if (rc) return rc;
    return pg_rdp_to_dp(orders, rdp, n, delta, conversion, epsilon, order, err);
}

int pg_rdp_calibrate_sigma(double epsilon, double delta, double q, uint64_t steps, int conversion,
                           double *sigma, pg_error *err)
{
    return pg_rdp_calibrate_sigma_plus(epsilon, delta, q, steps, NULL, conversion, sigma, err);
}

int pg_rdp_calibrate_sigma_plus(double epsilon, double delta, double q, uint64_t steps,
                                const double *extra, int conversion, double *sigma, pg_error *err)
{
    if (!(epsilon > 0.0) || !isfinite(epsilon))
        return pg_error_set(err, PG_EINVAL, "epsilon must be finite and > 0, got %g", epsilon);
    double e, lo = 1e-2, hi = 1e4;
    int rc = pg_rdp_epsilon_plus(q, hi, steps, extra, delta, conversion, &e, NULL, err);
    if (rc) return rc;
    if (e > epsilon)
        return pg_error_set(
            err, PG_ERANGE, "no noise multiplier up to %g reaches epsilon %g in %llu steps%s", hi,
            epsilon, (unsigned long long)steps, extra ? " next to the job's other releases" : "");
    rc = pg_rdp_epsilon_plus(q, lo, steps, extra, delta, conversion, &e, NULL, err);
    if (rc) return rc;
    if (e <= epsilon) {
        *sigma = lo;
        return PG_OK;
    }
    /* epsilon(sigma) is decreasing: bisect in log(sigma), keep the feasible end. */
    while (hi / lo - 1.0 > 1e-7) {
        double mid = sqrt(lo * hi);
        rc = pg_rdp_epsilon_plus(q, mid, steps, extra, delta, conversion, &e, NULL, err);
        if (rc) return rc;
        if (e <= epsilon)
            hi = mid;
        else
            lo = mid;
    }
    *sigma = hi;
    return PG_OK;
}

int pg_rdp_max_steps(double sigma, double q, double epsilon, double delta, int conversion,
                     uint64_t *steps, pg_error *err)
{
    if (!(epsilon > 0.0) || !isfinite(epsilon))
        return pg_error_set(err, PG_EINVAL, "epsilon must be finite and > 0, got %g", epsilon);
    double orders[PG_RDP_DEFAULT_ORDERS], one[PG_RDP_DEFAULT_ORDERS], tot[PG_RDP_DEFAULT_ORDERS];
    size_t n = pg_rdp_default_orders(orders, PG_RDP_DEFAULT_ORDERS);
    int rc = pg_rdp_compute(q, sigma, 1, orders, n, one, err);
    if (rc) return rc;
    rc = check_delta(delta, err);
    if (rc) return rc;
#define EPS_AT(T, out)                                                                             \
    do {                                                                                           \
        for (size_t i_ = 0; i_ < n; i_++) tot[i_] = (double)(T)*one[i_];                           \
        rc = pg_rdp_to_dp(orders, tot, n, delta, conversion, &(out), NULL, err);                   \
        if (rc) return rc;                                                                         \
    } while (0)
    double e;
    EPS_AT(1, e);
    if (e > epsilon) {
        *steps = 0;
        return PG_OK;
    }
    uint64_t lo = 1, hi = 2;
    for (;;) {
        EPS_AT(hi, e);
        if (e > epsilon) break;
        lo = hi;
        if (hi >= (UINT64_C(1) << 52)) {
            *steps = hi;
            return PG_OK;
        }
        hi *= 2;
    }
    while (hi - lo > 1) {
        uint64_t mid = lo + (hi - lo) / 2;
        EPS_AT(mid, e);
        if (e <= epsilon)
            lo = mid;
        else
            hi = mid;
    }
#undef EPS_AT
    *steps = lo;
    return PG_OK;
}

int pg_rdp_wbk_gaussian(double gamma, double sigma, double alpha, double *rdp, pg_error *err)
{
    int rc = check_q_sigma_alpha(gamma, sigma, alpha, err);
    if (rc) return rc;
    double a = ceil(alpha);
    if (a < 2.0) a = 2.0;
    double s2 = sigma * sigma, lg = log(gamma);
    /* j = 2 term: gamma^2 binom(a,2) min{4 (e^{eps(2)} - 1), 2 e^{eps(2)}},
     * eps(j) = j / (2 s^2) for the Gaussian; eps(inf) = inf makes every
     * min{2, (e^{eps(inf)} - 1)^j} equal to 2. */
    double e2 = 1.0 / s2;
    double m2 = fmin(log(4.0) + log(expm1(e2)), M_LN2 + e2);
    double total = pg_privacy_log_add(0.0, 2.0 * lg + log_abs_binom(a, 2.0) + m2);
    for (int j = 3; j <= (int)a; j++) {
        double t = M_LN2 + j * lg + log_abs_binom(a, j) + (j - 1.0) * j / (2.0 * s2);
        total = pg_privacy_log_add(total, t);
    }
    double v = total / (a - 1.0);
    if (!isfinite(v)) return pg_error_set(err, PG_ENUMERIC, "WBK bound is not finite");
    *rdp = v;
    return PG_OK;
}
