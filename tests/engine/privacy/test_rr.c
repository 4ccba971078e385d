#include <stdio.h>

#include "engine/privacy/privacy.h"
#include "support/pg_test.h"

/* Upper chi-square quantile with `dof` degrees of freedom at tail
 * probability `tail`, by the Wilson-Hilferty cube approximation (accurate to
 * well under 1 % there; the thresholds below have orders of magnitude of
 * slack). */
static double chi2_upper(double dof, double tail)
{
    double z = pg_privacy_ndtri_upper(tail), a = 2.0 / (9.0 * dof);
    double c = 1.0 - a + z * sqrt(a);
    return dof * c * c * c;
}

START_TEST(channel_is_exactly_epsilon_ldp)
{
    const size_t ks[] = {2, 3, 5, 50};
    const double eps[] = {0.01, 0.5, 1.0, 5.0, 30.0};
    for (size_t a = 0; a < 4; a++)
        for (size_t b = 0; b < 5; b++) {
            size_t k = ks[a];
            double *P = malloc(k * k * sizeof *P), p;
            ck_assert_int_eq(pg_rr_channel(k, eps[b], P, NULL), PG_OK);
            ck_assert_int_eq(pg_rr_keep_probability(k, eps[b], &p, NULL), PG_OK);
            /* The stated closed form (direct, for moderate eps). */
            if (eps[b] < 10)
                ck_assert_double_le(pg_test_reldiff(p, exp(eps[b]) / (exp(eps[b]) + k - 1)), 1e-14);
            /* Rows are distributions; the epsilon is the largest log ratio of
             * two entries in one column, over all pairs. */
            double worst = 0;
            for (size_t t = 0; t < k; t++) {
                double s = 0;
                for (size_t r = 0; r < k; r++) s += P[t * k + r];
                ck_assert_double_le(fabs(s - 1.0), 1e-12);
            }
            for (size_t r = 0; r < k; r++)
                for (size_t t = 0; t < k; t++)
                    for (size_t u = 0; u < k; u++)
                        worst = fmax(worst, log(P[t * k + r]) - log(P[u * k + r]));
            ck_assert_msg(pg_test_reldiff(worst, eps[b]) < 1e-9, "k %zu eps %g: channel eps %.17g",
                          k, eps[b], worst);
            double back;
            ck_assert_int_eq(pg_rr_epsilon(k, p, &back, NULL), PG_OK);
            /* p is a double: near 1 its rounding moves log(1 - p) by up to
             * 2^-53 / (1 - p). */
            ck_assert_double_le(fabs(back - eps[b]), 1e-9 * eps[b] + 0x1p-52 / (1 - p));
            free(P);
        }
    /* A keep probability above the one for eps reports more than eps. */
    double p, e;
    pg_rr_keep_probability(4, 1.0, &p, NULL);
    pg_rr_epsilon(4, p + 0.01, &e, NULL);
    ck_assert_double_gt(e, 1.0);
}
END_TEST

START_TEST(refuses_bad_arguments)
{
    pg_error err = {0};
    pg_rng seeded, secure;
    pg_rng_seeded(&seeded, 1, 0);
    ck_assert_int_eq(pg_rng_secure(&secure, &err), PG_OK);
    size_t in[3] = {0, 1, 2}, out[3];
    ck_assert_int_eq(pg_rr_randomize(&seeded, 3, 1.0, in, out, 3, &err), PG_EPRIVACY);
    ck_assert_int_eq(pg_rr_randomize(&secure, 2, 1.0, in, out, 3, &err), PG_EINVAL);
    ck_assert_ptr_nonnull(strstr(err.msg, "index 2"));
    ck_assert_int_eq(pg_rr_randomize(&secure, 1, 1.0, in, out, 1, &err), PG_EINVAL);
    ck_assert_int_eq(pg_rr_randomize(&secure, 3, 0.0, in, out, 3, &err), PG_EINVAL);
    ck_assert_int_eq(pg_rr_randomize(&secure, 3, NAN, in, out, 3, &err), PG_EINVAL);
    ck_assert_int_eq(pg_rr_randomize(&secure, 3, INFINITY, in, out, 3, &err), PG_EINVAL);
    double e;
    ck_assert_int_eq(pg_rr_epsilon(3, 0.2, &e, &err), PG_EINVAL);
    ck_assert_int_eq(pg_rr_epsilon(3, 1.0, &e, &err), PG_EINVAL);
}
END_TEST

/* The empirical channel of the secure sampler matches the matrix: one
 * chi-square test per true value (tail 1e-7 each). */
START_TEST(empirical_channel_matches_matrix)
{
    const size_t k = 5, n = 200000;
    const double eps = 0.8;
    double P[25];
    pg_rr_channel(k, eps, P, NULL);
    pg_rng rng;
    ck_assert_int_eq(pg_rng_secure(&rng, NULL), PG_OK);
    size_t *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out);
    double crit = chi2_upper((double)(k - 1), 1e-7);
    for (size_t t = 0; t < k; t++) {
        for (size_t i = 0; i < n; i++) in[i] = t;
        ck_assert_int_eq(pg_rr_randomize(&rng, k, eps, in, out, n, NULL), PG_OK);
        double cnt[5] = {0}, chi2 = 0;
        for (size_t i = 0; i < n; i++) cnt[out[i]]++;
        for (size_t r = 0; r < k; r++) {
            double e = P[t * k + r] * (double)n;
            chi2 += (cnt[r] - e) * (cnt[r] - e) / e;
        }
        ck_assert_msg(chi2 < crit, "true value %zu: chi2 %g >= %g", t, chi2, crit);
    }
    /* In place works too and keeps values in range. */
    for (size_t i = 0; i < n; i++) in[i] = i % k;
    ck_assert_int_eq(pg_rr_randomize(&rng, k, eps, in, in, n, NULL), PG_OK);
    for (size_t i = 0; i < n; i++) ck_assert_uint_lt(in[i], k);
    free(in);
    free(out);
}
END_TEST

/* The inverse channel recovers the true frequencies: within 6 standard
 * deviations of the estimator (its variance is f_i (1 - f_i) / (n (p - q)^2);
 * the reports are secure draws, new every run: 4 classes x 2e-9, where 5 sd
 * was 4 x 5.7e-7), while the reported frequencies are far off. */
START_TEST(estimator_is_unbiased)
{
    const size_t k = 4, n = 1000000;
    const double eps = 1.0, pi[4] = {0.5, 0.3, 0.15, 0.05};
    size_t *v = malloc(n * sizeof *v), at = 0;
    for (size_t c = 0; c < k; c++)
        for (size_t i = 0; i < (size_t)(pi[c] * n); i++) v[at++] = c;
    ck_assert_uint_eq(at, n);
    pg_rng rng;
    ck_assert_int_eq(pg_rng_secure(&rng, NULL), PG_OK);
    ck_assert_int_eq(pg_rr_randomize(&rng, k, eps, v, v, n, NULL), PG_OK);
    double f[4] = {0}, est[4], p;
    for (size_t i = 0; i < n; i++) f[v[i]] += 1.0 / (double)n;
    ck_assert_int_eq(pg_rr_estimate(k, eps, f, est, NULL), PG_OK);
    pg_rr_keep_probability(k, eps, &p, NULL);
    double q = (1 - p) / (double)(k - 1), sum = 0;
    ck_assert_double_gt(fabs(f[0] - pi[0]), 0.1); /* the reports are biased */
    for (size_t c = 0; c < k; c++) {
        double fc = q + (p - q) * pi[c];
        double sd = sqrt(fc * (1 - fc) / (double)n) / (p - q);
        ck_assert_msg(fabs(est[c] - pi[c]) < 6 * sd, "class %zu: %g vs %g (sd %g)", c, est[c],
                      pi[c], sd);
        sum += est[c];
    }
    ck_assert_double_le(fabs(sum - 1.0), 1e-9);
    free(v);
}
END_TEST

/* The forward channel on soft probabilities is the matrix product P^T pi. */
START_TEST(channel_apply_is_the_matrix_product)
{
    const size_t k = 4;
    const double eps = 1.3;
    double P[16];
    pg_rr_channel(k, eps, P, NULL);
    float probs[2 * 4] = {0.1f, 0.2f, 0.3f, 0.4f, 1.0f, 0.0f, 0.0f, 0.0f}, out[8];
    ck_assert_int_eq(pg_rr_channel_apply(k, eps, probs, out, 2, NULL), PG_OK);
    for (size_t row = 0; row < 2; row++) {
        double sum = 0;
        for (size_t r = 0; r < k; r++) {
            double want = 0;
            for (size_t t = 0; t < k; t++) want += P[t * k + r] * (double)probs[row * k + t];
            ck_assert_double_le(fabs((double)out[row * k + r] - want), 1e-7);
            sum += out[row * k + r];
        }
        ck_assert_double_le(fabs(sum - 1.0), 1e-6);
    }
    ck_assert_int_eq(pg_rr_channel_apply(k, eps, probs, probs, 2, NULL), PG_OK);
    ck_assert_int_eq(memcmp(probs, out, sizeof out), 0);
    ck_assert_int_eq(pg_rr_channel_apply(1, eps, probs, out, 2, NULL), PG_EINVAL);
}
END_TEST

static Suite *rr_suite(void)
{
    Suite *s = suite_create("privacy/rr");
    TCase *tc = tcase_create("rr");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, channel_is_exactly_epsilon_ldp);
    tcase_add_test(tc, refuses_bad_arguments);
    tcase_add_test(tc, empirical_channel_matches_matrix);
    tcase_add_test(tc, estimator_is_unbiased);
    tcase_add_test(tc, channel_apply_is_the_matrix_product);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(rr_suite)
