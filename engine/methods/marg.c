#include "engine/methods/marg.h"

#include <math.h>
#include <string.h>

#include "engine/privacy/privacy.h"

int pg_marg_ledger_epsilon(double rho, double delta, double *eps, pg_error *err)
{
    if (!(rho > 0) || !isfinite(rho))
        return pg_error_set(err, PG_EINVAL, "rho must be finite and > 0");
    double orders[PG_RDP_DEFAULT_ORDERS], rdp[PG_RDP_DEFAULT_ORDERS];
    size_t n = pg_rdp_default_orders(orders, PG_RDP_DEFAULT_ORDERS);
    for (size_t i = 0; i < n; i++) rdp[i] = orders[i] * rho;
    return pg_rdp_to_dp(orders, rdp, n, delta, PG_RDP_CONV_IMPROVED, eps, NULL, err);
}

int pg_marg_rho_for(double eps, double delta, double *rho, pg_error *err)
{
    if (!(eps > 0) || !isfinite(eps) || !(delta > 0 && delta < 1))
        return pg_error_set(err, PG_EINVAL, "need epsilon > 0 and delta in (0, 1)");
    /* epsilon(rho) is continuous and increasing: bisect, keeping the
     * feasible end. rho <= eps always suffices for the upper bracket since
     * epsilon(rho) >= rho + ... > rho near alpha = 1 is not guaranteed; grow
     * it until infeasible instead. */
    double lo = 0, hi = eps, e;
    int rc;
    for (int i = 0; i < 200; i++) {
        if ((rc = pg_marg_ledger_epsilon(hi, delta, &e, err))) return rc;
        if (e > eps) break;
        lo = hi;
        hi *= 2;
    }
    for (int i = 0; i < 200 && hi - lo > 1e-13 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if ((rc = pg_marg_ledger_epsilon(mid, delta, &e, err))) return rc;
        if (e <= eps)
            lo = mid;
        else
            hi = mid;
    }
    if (!(lo > 0))
        return pg_error_set(err, PG_ERANGE, "epsilon %g is too small at delta %g", eps, delta);
    *rho = lo;
    return PG_OK;
}

static double conv(double a, double rho, double ldelta)
{
    return a * rho + log1p(-1.0 / a) - (ldelta + log(a)) / (a - 1.0);
}

double pg_marg_zcdp_epsilon(double rho, double delta)
{
    double ld = log(delta);
    /* The objective is convex in alpha on (1, inf) for these terms; bracket
     * on a log grid, then golden section. */
    double best = INFINITY, ba = 2;
    for (double a = 1.0 + 1e-6; a < 1e7; a *= 1.05) {
        double v = conv(a, rho, ld);
        if (v < best) best = v, ba = a;
    }
    double lo = ba / 1.05, hi = ba * 1.05;
    if (lo <= 1) lo = 1 + 1e-9;
    const double g = 0.5 * (sqrt(5.0) - 1.0);
    for (int i = 0; i < 200; i++) {
        double x1 = hi - g * (hi - lo), x2 = lo + g * (hi - lo);
        if (conv(x1, rho, ld) < conv(x2, rho, ld))
            hi = x2;
        else
            lo = x1;
    }
    double v = conv(0.5 * (lo + hi), rho, ld);
    if (v < best) best = v;
    return best > 0 ? best : 0;
}

int pg_marg_exponential(pg_rng *secure, const double *score, size_t n, double eps, double sens,
                        size_t *pick, pg_error *err)
{
    if (!pg_rng_is_secure(secure))
        return pg_error_set(err, PG_EPRIVACY, "selection needs the secure generator");
    if (!(eps > 0) || !(sens > 0) || !isfinite(eps) || !isfinite(sens) || n == 0)
        return pg_error_set(err, PG_EINVAL, "exponential mechanism needs eps, sens > 0, n >= 1");
    double best = -INFINITY;
    size_t bi = n;
    for (size_t i = 0; i < n; i++) {
        /* Draw for every candidate, chosen or not, so the number of draws
         * never depends on the scores. */
        double g = -log(-log(pg_rng_uniform(secure)));
        if (!(score[i] > -INFINITY)) continue;
        double v = eps * score[i] / (2.0 * sens) + g;
        if (bi == n || v > best) best = v, bi = i;
    }
    if (bi == n) return pg_error_set(err, PG_EINVAL, "no candidate has a finite score");
    *pick = bi;
    return PG_OK;
}

int pg_marg_gaussian(pg_rng *secure, const double *x, size_t n, double sigma, float *y,
                     pg_error *err)
{
    if (!pg_rng_is_secure(secure))
        return pg_error_set(err, PG_EPRIVACY, "DP noise needs the secure generator");
    if (!(sigma > 0) || !isfinite(sigma))
        return pg_error_set(err, PG_EINVAL, "sigma must be finite and > 0");
    for (size_t i = 0; i < n; i++) y[i] = (float)(x[i] + sigma * pg_rng_normal(secure));
    return PG_OK;
}

void pg_marg_count(const uint16_t *codes, size_t n, size_t nattr, const size_t *sizes,
                   const size_t *attrs, size_t k, double *out, size_t cells)
{
    memset(out, 0, cells * sizeof *out);
    size_t stride[16];
    size_t s = 1;
    for (size_t j = k; j-- > 0;) {
        stride[j] = s;
        s *= sizes[attrs[j]];
    }
    for (size_t i = 0; i < n; i++) {
        const uint16_t *r = codes + i * nattr;
        size_t c = 0;
        for (size_t j = 0; j < k; j++) c += r[attrs[j]] * stride[j];
        out[c] += 1.0;
    }
}
