/* engine/privacy/mech.c - clipping and noise mechanisms (secure RNG only). */
#include <math.h>
#include <stdlib.h>

#include "engine/privacy/privacy.h"

static int rows_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i])) return 0;
    return 1;
}

static double row_norm(const float *x, size_t dim, int l1)
{
    double s = 0.0;
    if (l1) {
        for (size_t j = 0; j < dim; j++) s += fabs((double)x[j]);
        return s;
    }
    for (size_t j = 0; j < dim; j++) s += (double)x[j] * (double)x[j];
    return sqrt(s);
}

/* float32 rounding of a scaled row can land a hair outside the ball; the
 * sensitivity promise is about the stored values, so shrink until it holds. */
static void enforce_radius(float *x, size_t dim, double R, int l1)
{
    while (row_norm(x, dim, l1) > R)
        for (size_t j = 0; j < dim; j++) x[j] = (float)((double)x[j] * (1.0 - 0x1p-20));
}

static int check_clip_args(const float *x, size_t rows, size_t dim, double R, pg_error *err)
{
    if (!x || rows == 0 || dim == 0)
        return pg_error_set(err, PG_EINVAL, "clipping needs a non-empty matrix");
    if (!(R > 0.0) || !isfinite(R))
        return pg_error_set(err, PG_EINVAL, "clip radius must be finite and > 0, got %g", R);
    size_t n;
    if (pg_size_mul(rows, dim, &n)) return pg_error_set(err, PG_EINVAL, "matrix size overflows");
    if (!rows_finite(x, n))
        return pg_error_set(err, PG_EINVAL, "input contains NaN or infinite values");
    return PG_OK;
}

int pg_privacy_clip_l2(float *x, size_t rows, size_t dim, double R, pg_error *err)
{
    int rc = check_clip_args(x, rows, dim, R, err);
    if (rc) return rc;
    for (size_t i = 0; i < rows; i++) {
        float *row = x + i * dim;
        double nrm = row_norm(row, dim, 0);
        if (nrm > R) {
            double s = R / nrm;
            for (size_t j = 0; j < dim; j++) row[j] = (float)((double)row[j] * s);
        }
        enforce_radius(row, dim, R, 0);
    }
    return PG_OK;
}

static int cmp_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

int pg_privacy_clip_l1(float *x, size_t rows, size_t dim, double R, double *scratch, pg_error *err)
{
    int rc = check_clip_args(x, rows, dim, R, err);
    if (rc) return rc;
    if (!scratch) return pg_error_set(err, PG_EINVAL, "l1 projection needs a scratch buffer");
    for (size_t i = 0; i < rows; i++) {
        float *row = x + i * dim;
        if (row_norm(row, dim, 1) > R) {
            /* Euclidean projection onto the l1 ball: soft-threshold at the
             * theta that makes the l1 norm exactly R (Duchi et al. 2008). */
            for (size_t j = 0; j < dim; j++) scratch[j] = fabs((double)row[j]);
            qsort(scratch, dim, sizeof *scratch, cmp_desc);
            double cum = 0.0, theta = 0.0;
            for (size_t j = 0; j < dim; j++) {
                cum += scratch[j];
                double t = (cum - R) / (double)(j + 1);
                if (scratch[j] - t > 0.0) theta = t;
            }
            for (size_t j = 0; j < dim; j++) {
                double v = fabs((double)row[j]) - theta;
                v = v > 0.0 ? v : 0.0;
                row[j] = (float)(row[j] < 0.0f ? -v : v);
            }
        }
        enforce_radius(row, dim, R, 1);
    }
    return PG_OK;
}

static int require_secure(const pg_rng *rng, pg_error *err)
{
    if (!pg_rng_is_secure(rng))
        return pg_error_set(err, PG_EPRIVACY,
                            "DP noise must come from the secure generator, not a seeded one");
    return PG_OK;
}

int pg_privacy_gaussian_noise(pg_rng *rng, float *x, size_t n, double sigma, pg_error *err)
{
    int rc = require_secure(rng, err);
    if (rc) return rc;
    if (!(sigma > 0.0) || !isfinite(sigma))
        return pg_error_set(err, PG_EINVAL, "Gaussian noise std must be finite and > 0, got %g",
                            sigma);
    /* Bulk ChaCha20 path; bit-identical to a loop of pg_rng_normal (rng.h). */
    pg_rng_add_normal(rng, x, n, sigma);
    return PG_OK;
}

int pg_privacy_poisson_sample(pg_rng *rng, size_t m, double q, size_t *idx, size_t cap,
                              size_t *count, pg_error *err)
{
    int rc = require_secure(rng, err);
    if (rc) return rc;
    if (!(q >= 0.0 && q <= 1.0))
        return pg_error_set(err, PG_EINVAL, "sampling rate must lie in [0, 1], got %g", q);
    size_t c = 0;
    if (q > 0.0) {
        double lq = log1p(-q); /* -inf when q == 1: every gap is 0 */
        for (size_t i = 0;; i++) {
            if (q < 1.0) {
                double u = 1.0 - pg_rng_uniform(rng); /* (0, 1] */
                double gap = floor(log(u) / lq);
                if (!(gap < (double)(m - i))) break; /* also catches +inf */
                i += (size_t)gap;
            }
            if (i >= m) break;
            c++;
            if (c <= cap) {
                idx[c - 1] = i;
            } else {
                uint64_t j = pg_rng_below(rng, c);
                if (j < cap) idx[j] = i;
            }
        }
    }
    *count = c;
    return PG_OK;
}

/* Bernoulli(num / den) exactly, 0 <= num <= den, den >= 1. */
static int bern_frac(pg_rng *rng, uint64_t num, uint64_t den)
{
    return pg_rng_below(rng, den) < num;
}

/* Bernoulli(exp(-num/den)) for 0 <= num <= den (Canonne-Kamath-Steinke Alg. 1):
 * the parity of the first k with a failed Bernoulli(gamma/k). Bernoulli(gamma/k)
 * is drawn as Bernoulli(gamma) AND Bernoulli(1/k), so den*k never overflows. */
static int bern_exp_frac(pg_rng *rng, uint64_t num, uint64_t den)
{
    uint64_t k = 1;
    for (;;) {
        int a = bern_frac(rng, num, den) && bern_frac(rng, 1, k);
        if (!a) break;
        k++;
    }
    return (int)(k & 1u);
}

int64_t pg_privacy_discrete_laplace(pg_rng *rng, uint64_t t)
{
    if (t == 0) t = 1;
    for (;;) {
        uint64_t u = pg_rng_below(rng, t);
        if (!bern_exp_frac(rng, u, t)) continue;
        uint64_t v = 0;
        while (bern_exp_frac(rng, 1, 1)) v++;
        uint64_t y = u + t * v;
        int neg = (int)(pg_rng_u32(rng) & 1u);
        if (neg && y == 0) continue;
        return neg ? -(int64_t)y : (int64_t)y;
    }
}

int pg_privacy_laplace_b(double epsilon, double sensitivity, double *b, pg_error *err)
{
    if (!(epsilon > 0.0) || !isfinite(epsilon))
        return pg_error_set(err, PG_EINVAL, "epsilon must be finite and > 0, got %g", epsilon);
    if (!(sensitivity > 0.0) || !isfinite(sensitivity))
        return pg_error_set(err, PG_EINVAL, "sensitivity must be finite and > 0, got %g",
                            sensitivity);
    *b = sensitivity / epsilon;
    return PG_OK;
}

int pg_privacy_laplace_scale(double l1_sensitivity, double epsilon, size_t dim, double *scale,
                             double *grid, pg_error *err)
{
    double b0 = 0.0;
    int rc = pg_privacy_laplace_b(epsilon, l1_sensitivity, &b0, err);
    if (rc) return rc;
    if (dim == 0) return pg_error_set(err, PG_EINVAL, "rows must have at least one column");
    /* The grid is fine relative to the noise (2^-32 b) but never finer than
     * 2^-40 Delta, so inputs within 2^12 Delta of 0 (any row clipped for this
     * sensitivity) fit the exact integer range of a double. */
    int e, f;
    frexp(b0, &e); /* b0 in [2^(e-1), 2^e) */
    frexp(l1_sensitivity, &f);
    double gamma = ldexp(1.0, (e - 33 > f - 40) ? e - 33 : f - 40);
    double t = ceil((l1_sensitivity / gamma + (double)dim) / epsilon);
    if (!(t >= 1.0) || t > 0x1p52)
        return pg_error_set(err, PG_ERANGE, "Laplace grid scale out of range (epsilon %g, dim %zu)",
                            epsilon, dim);
    *scale = t * gamma;
    if (grid) *grid = gamma;
    return PG_OK;
}

int pg_privacy_laplace_mech(pg_rng *rng, float *x, size_t rows, size_t dim, double l1_sensitivity,
                            double epsilon, double *noise_scale, pg_error *err)
{
    int rc = require_secure(rng, err);
    if (rc) return rc;
    double b = 0.0, gamma = 0.0;
    rc = pg_privacy_laplace_scale(l1_sensitivity, epsilon, dim, &b, &gamma, err);
    if (rc) return rc;
    size_t n;
    if (pg_size_mul(rows, dim, &n)) return pg_error_set(err, PG_EINVAL, "matrix size overflows");
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]) || fabs((double)x[i] / gamma) >= 0x1p52)
            return pg_error_set(err, PG_ERANGE,
                                "input value %g is not finite or too large for the noise grid",
                                (double)x[i]);
    uint64_t t = (uint64_t)(b / gamma);
    for (size_t i = 0; i < n; i++) {
        int64_t k = (int64_t)nearbyint((double)x[i] / gamma) + pg_privacy_discrete_laplace(rng, t);
        x[i] = (float)((double)k * gamma);
    }
    if (noise_scale) *noise_scale = b;
    return PG_OK;
}
