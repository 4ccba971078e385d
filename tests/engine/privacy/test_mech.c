#include <string.h>
/* Mechanisms (clipping, secure noise) and Gaussian calibrations. */
#include "engine/core/alloc.h"
#include "engine/privacy/privacy.h"
#include "support/pg_test.h"

static double normal_cdf(double x, void *ctx)
{
    double s = *(double *)ctx;
    return 0.5 * erfc(-x / (s * M_SQRT2));
}

static double laplace_cdf(double x, void *ctx)
{
    double b = *(double *)ctx;
    return x < 0 ? 0.5 * exp(x / b) : 1.0 - 0.5 * exp(-x / b);
}

START_TEST(test_gaussian_noise_ks)
{
    pg_rng r;
    ck_assert_int_eq(pg_rng_secure(&r, NULL), PG_OK);
    enum { N = 200000 }; /* power: see the wrong-scale check */
    float *x = calloc(N, sizeof *x);
    double *xs = malloc(N * sizeof *xs), sigma = 2.5;
    ck_assert_int_eq(pg_privacy_gaussian_noise(&r, x, N, sigma, NULL), PG_OK);
    for (int i = 0; i < N; i++) xs[i] = x[i];
    ck_assert_double_lt(sqrt((double)N) * pg_test_ks(xs, N, normal_cdf, &sigma), PG_TEST_KS_SECURE);
    /* A wrong scale must be detected by the same statistic: N(0, 1.1 sigma)
     * is D = 0.023 from N(0, sigma) in sup distance, sqrt(N) D = 10.3, so the
     * check fails with probability <= 2 exp(-2 (10.3 - 3)^2) (pg_test.h). */
    double wrong = sigma * 1.1;
    for (int i = 0; i < N; i++) xs[i] = x[i];
    ck_assert_double_gt(sqrt((double)N) * pg_test_ks(xs, N, normal_cdf, &wrong), PG_TEST_KS_SECURE);
    free(x);
    free(xs);
}
END_TEST

START_TEST(test_laplace_mech_ks_and_scale)
{
    pg_rng r;
    ck_assert_int_eq(pg_rng_secure(&r, NULL), PG_OK);
    enum { N = 200000 }; /* power: see the wrong-scale check */
    float *x = calloc(N, sizeof *x);
    double *xs = malloc(N * sizeof *xs), b;
    ck_assert_int_eq(pg_privacy_laplace_mech(&r, x, N / 4, 4, 2.0, 0.5, &b, NULL), PG_OK);
    /* b >= Delta/eps, inflated only by dim * 2^-32 / eps and the grid. */
    ck_assert_double_ge(b, 4.0);
    ck_assert_double_le(b, 4.0 * (1 + 1e-8));
    for (int i = 0; i < N; i++) xs[i] = x[i];
    ck_assert_double_lt(sqrt((double)N) * pg_test_ks(xs, N, laplace_cdf, &b), PG_TEST_KS_SECURE);
    /* Laplace(1.1 b) is D = 0.0175 from Laplace(b) (at |x| = b),
     * sqrt(N) D = 7.8. */
    double wrong = b * 1.1;
    for (int i = 0; i < N; i++) xs[i] = x[i];
    ck_assert_double_gt(sqrt((double)N) * pg_test_ks(xs, N, laplace_cdf, &wrong),
                        PG_TEST_KS_SECURE);
    free(x);
    free(xs);
}
END_TEST

START_TEST(test_laplace_outputs_on_grid)
{
    /* Released values are gamma * integer: no low-order bits from the input. */
    pg_rng r;
    ck_assert_int_eq(pg_rng_secure(&r, NULL), PG_OK);
    double b, gamma;
    ck_assert_int_eq(pg_privacy_laplace_scale(1.0, 1.0, 3, &b, &gamma, NULL), PG_OK);
    ck_assert_double_eq(gamma, ldexp(1.0, -32));
    ck_assert_double_ge(b, 1.0);
    ck_assert_double_le(b, 1.0 + 4 * gamma);
    /* Grid inflation: t = ceil((Delta/gamma + dim)/eps) exactly. */
    ck_assert_double_eq(b / gamma, ceil((1.0 / gamma + 3.0) / 1.0));
}
END_TEST

START_TEST(test_discrete_laplace_exact_pmf)
{
    pg_rng r;
    ck_assert_int_eq(pg_rng_secure(&r, NULL), PG_OK);
    const uint64_t t = 3;
    enum { N = 200000, K = 8 };
    long counts[2 * K + 1] = {0};
    for (int i = 0; i < N; i++) {
        int64_t k = pg_privacy_discrete_laplace(&r, t);
        if (k >= -K && k <= K) counts[k + K]++;
    }
    double z = exp(-1.0 / (double)t), norm = (1 - z) / (1 + z);
    for (int k = -K; k <= K; k++) {
        /* 6 sd per count: 17 counts at 2e-9 each (5 sd was 17 x 5.7e-7 =
         * 1e-5 per run); a pmf with t off by one moves the central count by
         * 25 sd. */
        double p = norm * pow(z, abs(k)), mean = N * p, sd = sqrt(N * p * (1 - p));
        ck_assert_double_lt(fabs((double)counts[k + K] - mean), 6.0 * sd);
    }
}
END_TEST

START_TEST(test_noise_refuses_seeded_and_differs)
{
    pg_rng seeded, a, b;
    pg_error e;
    pg_rng_seeded(&seeded, 42, 0);
    float x[8] = {0};
    ck_assert_int_eq(pg_privacy_gaussian_noise(&seeded, x, 8, 1.0, &e), PG_EPRIVACY);
    ck_assert_int_eq(pg_privacy_laplace_mech(&seeded, x, 2, 4, 1.0, 1.0, NULL, &e), PG_EPRIVACY);
    for (int i = 0; i < 8; i++) ck_assert_float_eq(x[i], 0.0f);
    /* The same job seed twice: the DP noise must still differ (keyed by the OS). */
    float y1[16] = {0}, y2[16] = {0};
    ck_assert_int_eq(pg_rng_secure(&a, NULL), PG_OK);
    ck_assert_int_eq(pg_rng_secure(&b, NULL), PG_OK);
    ck_assert_int_eq(pg_privacy_gaussian_noise(&a, y1, 16, 1.0, NULL), PG_OK);
    ck_assert_int_eq(pg_privacy_gaussian_noise(&b, y2, 16, 1.0, NULL), PG_OK);
    ck_assert_int_ne(memcmp(y1, y2, sizeof y1), 0);
    ck_assert_int_eq(pg_privacy_gaussian_noise(&a, y1, 16, 0.0, &e), PG_EINVAL);
}
END_TEST

/* Poisson subsampling by geometric gaps: the count is Binomial(m, q), every
 * record is included with probability q, neighbours independently (an
 * off-by-one in the gaps would make adjacent picks impossible or forced), and
 * the reservoir keeps a uniform subset when the batch overflows. The
 * generator is unseeded by design, so every bound is set for a false alarm
 * below 2e-8 (5 standard errors and M + 5 sd were 5.7e-7 each, 1.3e-6 for
 * the 999-dof chi-square and 3e-5 for the 39-dof one: 3e-5 per run). */
START_TEST(test_poisson_sample)
{
    pg_rng r, seeded;
    ck_assert_int_eq(pg_rng_secure(&r, NULL), PG_OK);
    pg_rng_seeded(&seeded, 1, 0);
    enum { M = 1000, T = 4000, CAP = 200 };
    size_t idx[CAP], count;
    ck_assert_int_eq(pg_privacy_poisson_sample(&seeded, M, 0.1, idx, CAP, &count, NULL),
                     PG_EPRIVACY);
    ck_assert_int_eq(pg_privacy_poisson_sample(&r, M, 1.5, idx, CAP, &count, NULL), PG_EINVAL);
    ck_assert_int_eq(pg_privacy_poisson_sample(&r, M, NAN, idx, CAP, &count, NULL), PG_EINVAL);
    ck_assert_int_eq(pg_privacy_poisson_sample(&r, M, 0.0, idx, CAP, &count, NULL), PG_OK);
    ck_assert_uint_eq(count, 0);
    ck_assert_int_eq(pg_privacy_poisson_sample(&r, 150, 1.0, idx, CAP, &count, NULL), PG_OK);
    ck_assert_uint_eq(count, 150);
    for (size_t i = 0; i < 150; i++) ck_assert_uint_eq(idx[i], i);

    const double q = 0.03;
    static unsigned hits[M], pairs;
    memset(hits, 0, sizeof hits);
    pairs = 0;
    double sum = 0, sum2 = 0;
    for (int t = 0; t < T; t++) {
        ck_assert_int_eq(pg_privacy_poisson_sample(&r, M, q, idx, CAP, &count, NULL), PG_OK);
        ck_assert_uint_le(count, CAP);
        sum += (double)count, sum2 += (double)count * (double)count;
        for (size_t k = 0; k < count; k++) {
            ck_assert_uint_lt(idx[k], M);
            if (k) ck_assert_uint_gt(idx[k], idx[k - 1]);
            if (k && idx[k] == idx[k - 1] + 1) pairs++;
            hits[idx[k]]++;
        }
    }
    double mean = sum / T, var = sum2 / T - mean * mean;
    double mu = M * q, v = M * q * (1 - q);
    ck_assert_msg(fabs(mean - mu) < 6 * sqrt(v / T), "mean count %g, want %g", mean, mu);
    /* Var of the sample variance of a near-normal count: 2 v^2 / T. */
    ck_assert_msg(fabs(var - v) < 6 * sqrt(2 * v * v / T), "count variance %g, want %g", var, v);
    double chi = 0, e = T * q;
    for (int i = 0; i < M; i++) chi += (hits[i] - e) * (hits[i] - e) / (e * (1 - q));
    /* P(chi2_999 > M + 6 sd) = 1.3e-8 */
    ck_assert_msg(chi < M + 6 * sqrt(2.0 * M), "inclusion chi-square %g over %d records", chi, M);
    double ep = (double)T * (M - 1) * q * q;
    ck_assert_msg(fabs(pairs - ep) < 6 * sqrt(ep), "adjacent pairs %u, want %g", pairs, ep);

    /* Overflow: m = 40, q = 0.5, cap 5: each record ends in the reservoir
     * with probability E[min(1, 5 / N) | i in sample] * q, the same for all. */
    enum { M2 = 40, C2 = 5, T2 = 20000 };
    static unsigned kept[M2];
    memset(kept, 0, sizeof kept);
    for (int t = 0; t < T2; t++) {
        ck_assert_int_eq(pg_privacy_poisson_sample(&r, M2, 0.5, idx, C2, &count, NULL), PG_OK);
        size_t n = count < C2 ? count : C2;
        for (size_t k = 0; k < n; k++) {
            for (size_t j = 0; j < k; j++) ck_assert_uint_ne(idx[j], idx[k]);
            kept[idx[k]]++;
        }
    }
    double tot = 0;
    for (int i = 0; i < M2; i++) tot += kept[i];
    double chi2 = 0, e2 = tot / M2;
    for (int i = 0; i < M2; i++) chi2 += (kept[i] - e2) * (kept[i] - e2) / e2;
    /* 39 degrees of freedom: P(chi2_39 > M2 + 8 sd = 112) = 6.5e-9 (at
     * M2 + 5 sd it was 3.1e-5) */
    ck_assert_msg(chi2 < M2 + 8 * sqrt(2.0 * M2), "reservoir chi-square %g", chi2);
}
END_TEST

START_TEST(test_clip_l2)
{
    pg_rng r;
    pg_rng_seeded(&r, 7, 1);
    enum { ROWS = 500, D = 13 };
    float *x = malloc(ROWS * D * sizeof *x), *orig = malloc(ROWS * D * sizeof *x);
    for (int i = 0; i < ROWS * D; i++) x[i] = orig[i] = (float)(3.0 * pg_rng_normal(&r));
    const double R = 4.0;
    ck_assert_int_eq(pg_privacy_clip_l2(x, ROWS, D, R, NULL), PG_OK);
    for (int i = 0; i < ROWS; i++) {
        double n0 = 0, n1 = 0, dot = 0;
        for (int j = 0; j < D; j++) {
            n0 += (double)orig[i * D + j] * orig[i * D + j];
            n1 += (double)x[i * D + j] * x[i * D + j];
            dot += (double)x[i * D + j] * orig[i * D + j];
        }
        n0 = sqrt(n0), n1 = sqrt(n1);
        ck_assert_double_le(n1, R);
        if (n0 <= R) {
            ck_assert_int_eq(memcmp(x + i * D, orig + i * D, D * sizeof *x), 0);
        } else {
            ck_assert_double_ge(n1, R * (1 - 1e-5));
            ck_assert_double_ge(dot / (n0 * n1), 1 - 1e-6); /* same direction */
        }
    }
    x[3] = NAN;
    pg_error e;
    ck_assert_int_eq(pg_privacy_clip_l2(x, ROWS, D, R, &e), PG_EINVAL);
    ck_assert_int_eq(pg_privacy_clip_l2(orig, ROWS, D, 0.0, &e), PG_EINVAL);
    free(x);
    free(orig);
}
END_TEST

START_TEST(test_clip_l1_projection)
{
    pg_rng r;
    pg_rng_seeded(&r, 9, 1);
    enum { ROWS = 300, D = 9 };
    float *x = malloc(ROWS * D * sizeof *x), *orig = malloc(ROWS * D * sizeof *x);
    double scratch[D];
    for (int i = 0; i < ROWS * D; i++) x[i] = orig[i] = (float)(2.0 * pg_rng_normal(&r));
    const double R = 5.0;
    ck_assert_int_eq(pg_privacy_clip_l1(x, ROWS, D, R, scratch, NULL), PG_OK);
    for (int i = 0; i < ROWS; i++) {
        double n0 = 0, n1 = 0, theta = -1;
        for (int j = 0; j < D; j++) n0 += fabs(orig[i * D + j]), n1 += fabs(x[i * D + j]);
        ck_assert_double_le(n1, R);
        if (n0 <= R) continue;
        ck_assert_double_ge(n1, R * (1 - 1e-5));
        /* KKT of the Euclidean projection: one threshold for every kept entry,
         * dropped entries below it, signs preserved. */
        for (int j = 0; j < D; j++) {
            double o = orig[i * D + j], p = x[i * D + j];
            if (p != 0.0) {
                ck_assert(o * p > 0);
                double t = fabs(o) - fabs(p);
                if (theta < 0) theta = t;
                ck_assert_double_le(fabs(t - theta), 1e-5 * (1 + theta));
            }
        }
        for (int j = 0; j < D; j++)
            if (x[i * D + j] == 0.0f) ck_assert_double_le(fabs(orig[i * D + j]), theta + 1e-5);
    }
    free(x);
    free(orig);
}
END_TEST

/* Independent hockey-stick divergence of N(D, s^2) vs N(0, s^2) by quadrature. */
static double delta_by_integration(double eps, double s, double D)
{
    double lo = -40 * s, hi = D + 40 * s, h = s / 2000.0, acc = 0;
    for (double x = lo; x <= hi; x += h) {
        double p = exp(-(x - D) * (x - D) / (2 * s * s)), q = exp(-x * x / (2 * s * s));
        double v = p - exp(eps) * q;
        if (v > 0) acc += v;
    }
    return acc * h / (s * sqrt(2 * M_PI));
}

START_TEST(test_analytic_gaussian)
{
    const double eps[] = {0.05, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0};
    const double dl[] = {1e-2, 1e-5, 1e-8, 1e-12};
    for (int i = 0; i < 7; i++)
        for (int j = 0; j < 4; j++) {
            double s, sc, sp, e_back;
            ck_assert_int_eq(pg_privacy_gaussian_analytic(eps[i], dl[j], 1.5, &s, NULL), PG_OK);
            double d = pg_privacy_gaussian_delta(eps[i], s, 1.5);
            ck_assert_double_le(d, dl[j]);
            /* tight: a sigma 1e-9 smaller violates the condition */
            ck_assert_double_gt(pg_privacy_gaussian_delta(eps[i], s * (1 - 1e-9), 1.5), dl[j]);
            if (eps[i] <= 1.0) {
                ck_assert_int_eq(pg_privacy_gaussian_classic(eps[i], dl[j], 1.5, &sc, NULL), PG_OK);
                ck_assert_double_lt(s, sc);
            }
            /* formula (5) of the entropic-GAN paper is conservative here */
            ck_assert_int_eq(pg_privacy_gaussian_paper(eps[i], dl[j], 1.5, &sp, NULL), PG_OK);
            ck_assert_double_le(pg_privacy_gaussian_delta(eps[i], sp, 1.5), dl[j]);
            ck_assert_double_ge(sp, s);
            ck_assert_int_eq(pg_privacy_gaussian_epsilon(s, dl[j], 1.5, &e_back, NULL), PG_OK);
            ck_assert_double_le(pg_test_reldiff(e_back, eps[i]), 1e-6);
        }
    /* The closed-form condition agrees with direct integration. */
    const double cases[][2] = {{0.5, 2.0}, {1.0, 1.0}, {3.0, 0.7}};
    for (int c = 0; c < 3; c++) {
        double a = pg_privacy_gaussian_delta(cases[c][0], cases[c][1], 1.0);
        double b = delta_by_integration(cases[c][0], cases[c][1], 1.0);
        ck_assert_double_le(pg_test_reldiff(a, b), 1e-6);
    }
}
END_TEST

START_TEST(test_calibration_domain)
{
    double s;
    pg_error e;
    ck_assert_int_eq(pg_privacy_gaussian_classic(1.5, 1e-5, 1.0, &s, &e), PG_EINVAL);
    ck_assert_int_eq(pg_privacy_gaussian_classic(0.5, 0.0, 1.0, &s, &e), PG_EINVAL);
    ck_assert_int_eq(pg_privacy_gaussian_analytic(0.0, 1e-5, 1.0, &s, &e), PG_EINVAL);
    ck_assert_int_eq(pg_privacy_gaussian_analytic(1.0, 1.0, 1.0, &s, &e), PG_EINVAL);
    ck_assert_int_eq(pg_privacy_gaussian_analytic(1.0, 1e-5, -1.0, &s, &e), PG_EINVAL);
    ck_assert_int_eq(pg_privacy_gaussian_paper(1.0, 0.6, 1.0, &s, &e), PG_EINVAL);
    ck_assert_int_eq(pg_privacy_laplace_b(-1.0, 1.0, &s, &e), PG_EINVAL);
    ck_assert_int_eq(pg_privacy_laplace_b(2.0, 1.0, &s, &e), PG_OK);
    ck_assert_double_eq(s, 0.5);
    ck_assert_double_eq_tol(pg_privacy_ndtri_upper(1e-3), 3.090232306167813, 1e-12);
    ck_assert_double_eq_tol(pg_privacy_log_ndtr(-40.0), -804.6084420137538, 1e-9);
}
END_TEST

static Suite *mech_suite(void)
{
    Suite *s = suite_create("privacy_mech");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_gaussian_noise_ks);
    tcase_add_test(tc, test_laplace_mech_ks_and_scale);
    tcase_add_test(tc, test_laplace_outputs_on_grid);
    tcase_add_test(tc, test_discrete_laplace_exact_pmf);
    tcase_add_test(tc, test_noise_refuses_seeded_and_differs);
    tcase_add_test(tc, test_poisson_sample);
    tcase_add_test(tc, test_clip_l2);
    tcase_add_test(tc, test_clip_l1_projection);
    tcase_add_test(tc, test_analytic_gaussian);
    tcase_add_test(tc, test_calibration_domain);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(mech_suite)
