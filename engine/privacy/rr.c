/* engine/privacy/rr.c - k-ary randomized response (contract in privacy.h). */
#include <math.h>

#include "engine/core/fmt.h"
#include "engine/privacy/privacy.h"

#define RR_MAX_K ((size_t)1 << 32)

static int check(size_t k, double epsilon, pg_error *err)
{
    if (k < 2 || k > RR_MAX_K)
        return pg_error_set(err, PG_EINVAL, "randomized response needs 2 <= k <= 2^32, got %zu", k);
    if (!(epsilon > 0.0) || !isfinite(epsilon))
        return pg_error_set(err, PG_EINVAL, "randomized response epsilon must be finite and > 0");
    return PG_OK;
}

/* p and q from e^-eps, so neither loses precision when eps is large. */
static void keep_other(size_t k, double epsilon, double *p, double *q)
{
    double r = exp(-epsilon), denom = 1.0 + (double)(k - 1) * r;
    *p = 1.0 / denom;
    *q = r / denom;
}

int pg_rr_keep_probability(size_t k, double epsilon, double *p, pg_error *err)
{
    int rc = check(k, epsilon, err);
    if (rc) return rc;
    double q;
    keep_other(k, epsilon, p, &q);
    return PG_OK;
}

int pg_rr_channel(size_t k, double epsilon, double *P, pg_error *err)
{
    int rc = check(k, epsilon, err);
    if (rc) return rc;
    size_t kk;
    if (pg_size_mul(k, k, &kk) || kk > ((size_t)1 << 28))
        return pg_error_set(err, PG_EINVAL, "channel matrix of %zu values is too large", k);
    double p, q;
    keep_other(k, epsilon, &p, &q);
    for (size_t t = 0; t < k; t++)
        for (size_t r = 0; r < k; r++) P[t * k + r] = t == r ? p : q;
    return PG_OK;
}

int pg_rr_epsilon(size_t k, double p, double *epsilon, pg_error *err)
{
    if (k < 2 || k > RR_MAX_K)
        return pg_error_set(err, PG_EINVAL, "randomized response needs 2 <= k <= 2^32, got %zu", k);
    char fp[PG_FMT_F64_MAX];
    if (!(p >= 1.0 / (double)k && p < 1.0))
        return pg_error_set(err, PG_EINVAL, "keep probability must lie in [1/k, 1), got %s",
                            pg_fmt_f64(p, fp));
    /* log(p / q) with q = (1 - p) / (k - 1). */
    *epsilon = log(p) - log1p(-p) + log((double)(k - 1));
    return PG_OK;
}

int pg_rr_randomize(pg_rng *rng, size_t k, double epsilon, const size_t *in, size_t *out, size_t n,
                    pg_error *err)
{
    if (!pg_rng_is_secure(rng))
        return pg_error_set(err, PG_EPRIVACY,
                            "randomized response needs the secure generator, not a seeded one");
    int rc = check(k, epsilon, err);
    if (rc) return rc;
    for (size_t i = 0; i < n; i++)
        if (in[i] >= k)
            return pg_error_set(err, PG_EINVAL, "value %zu at index %zu is not below k = %zu",
                                in[i], i, k);
    double p, q;
    keep_other(k, epsilon, &p, &q);
    for (size_t i = 0; i < n; i++) {
        size_t t = in[i];
        if (pg_rng_uniform(rng) < p) {
            out[i] = t;
        } else {
            size_t j = (size_t)pg_rng_below(rng, (uint64_t)(k - 1));
            out[i] = j < t ? j : j + 1;
        }
    }
    return PG_OK;
}

int pg_rr_estimate(size_t k, double epsilon, const double *freq, double *est, pg_error *err)
{
    int rc = check(k, epsilon, err);
    if (rc) return rc;
    for (size_t i = 0; i < k; i++)
        if (!isfinite(freq[i]))
            return pg_error_set(err, PG_EINVAL, "frequency %zu is not finite", i);
    double p, q;
    keep_other(k, epsilon, &p, &q);
    /* P^T pi = (p - q) pi + q 1 when the pi sum to 1. */
    for (size_t i = 0; i < k; i++) est[i] = (freq[i] - q) / (p - q);
    return PG_OK;
}

int pg_rr_channel_apply(size_t k, double epsilon, const float *probs, float *out, size_t n,
                        pg_error *err)
{
    int rc = check(k, epsilon, err);
    if (rc) return rc;
    size_t count;
    if (pg_size_mul(k, n, &count)) return pg_error_set(err, PG_EINVAL, "size overflows");
    double p, q;
    keep_other(k, epsilon, &p, &q);
    for (size_t i = 0; i < count; i++) out[i] = (float)(q + (p - q) * (double)probs[i]);
    return PG_OK;
}
