/* engine/methods/marg.h: the zCDP budget against an independent conversion,
 * the exponential mechanism's law (chi-square), the Gaussian measurement's
 * noise law (KS), marginal counts against brute force. */
#include <math.h>
#include <stdlib.h>

#include "engine/methods/marg.h"
#include "engine/privacy/privacy.h"
#include "support/pg_test.h"

/* The ledger's grid written out independently of pg_rdp_default_orders:
 * 1.1 .. 10.9 by 0.1, 11 .. 63, 128, 256, 512, 1024. */
static size_t grid(double *a)
{
    size_t n = 0;
    for (int i = 11; i <= 109; i++) a[n++] = i / 10.0;
    for (int i = 11; i <= 63; i++) a[n++] = i;
    a[n++] = 128, a[n++] = 256, a[n++] = 512, a[n++] = 1024;
    return n;
}

/* rho-zCDP is (alpha, alpha rho)-RDP; the improved conversion (Balle et al.
 * 2020; Canonne, Kamath, Steinke 2020 Prop. 12 at free alpha). */
static double conv(double a, double rho, double delta)
{
    return a * rho + log1p(-1.0 / a) - (log(delta) + log(a)) / (a - 1.0);
}

static double eps_on_grid(double rho, double delta)
{
    double a[200], best = INFINITY;
    size_t n = grid(a);
    for (size_t i = 0; i < n; i++) best = fmin(best, conv(a[i], rho, delta));
    return fmax(best, 0);
}

static double eps_free(double rho, double delta)
{
    /* a fine log scan of alpha in (1, 1e5], then local refinement */
    double best = INFINITY, ba = 2;
    for (int i = 1; i <= 200000; i++) {
        double a = 1 + pow(10, -6 + 11.0 * i / 200000.0);
        double v = conv(a, rho, delta);
        if (v < best) best = v, ba = a;
    }
    for (double h = (ba - 1) * 1e-3; h > 1e-15 * ba; h /= 2)
        for (int s = -1; s <= 1; s += 2)
            while (ba + s * h > 1 && conv(ba + s * h, rho, delta) < best)
                ba += s * h, best = conv(ba, rho, delta);
    return fmax(best, 0);
}

START_TEST(rho_is_the_largest_the_ledger_converts_within_epsilon)
{
    double eps[] = {0.1, 0.5, 1, 2, 5, 10, 50};
    double del[] = {1e-5, 1e-9, 1e-3};
    for (size_t i = 0; i < sizeof eps / sizeof *eps; i++)
        for (size_t j = 0; j < 3; j++) {
            double rho;
            ck_assert_int_eq(pg_marg_rho_for(eps[i], del[j], &rho, NULL), PG_OK);
            double e = eps_on_grid(rho, del[j]);
            ck_assert_msg(e <= eps[i] && e >= eps[i] * (1 - 1e-9),
                          "eps %g delta %g: rho %g converts to %.12g", eps[i], del[j], rho, e);
            /* and a hair more is over: rho is the largest */
            ck_assert_double_gt(eps_on_grid(rho * (1 + 1e-9), del[j]), eps[i]);
            double lib;
            ck_assert_int_eq(pg_marg_ledger_epsilon(rho, del[j], &lib, NULL), PG_OK);
            ck_assert_double_eq_tol(lib, e, 1e-12 * e);
            /* the free-alpha conversion is never looser than the grid, and
             * close to it */
            double f = eps_free(rho, del[j]), g = pg_marg_zcdp_epsilon(rho, del[j]);
            ck_assert_msg(pg_test_reldiff(f, g) < 1e-7, "free alpha: %.12g vs %.12g", f, g);
            ck_assert_double_le(g, e * (1 + 1e-12));
            ck_assert_double_ge(g, e * 0.97);
        }
    /* A published anchor: rho = 0.5 (e.g. one Gaussian measurement at
     * sigma = 1) at delta 1e-5 is about 5.2 under the classic bound
     * rho + 2 sqrt(rho log(1/delta)) = 5.30; the improved one is below. */
    double e = pg_marg_zcdp_epsilon(0.5, 1e-5);
    ck_assert_double_lt(e, 0.5 + 2 * sqrt(0.5 * log(1e5)));
    ck_assert_double_gt(e, 4.0);
    double rho;
    ck_assert_int_eq(pg_marg_rho_for(-1, 1e-5, &rho, NULL), PG_EINVAL);
    ck_assert_int_eq(pg_marg_rho_for(1, 1.5, &rho, NULL), PG_EINVAL);
}
END_TEST

/* Selection law: P(i) = exp(eps s_i / 2 sens) / Z. 200 000 draws, chi-square
 * with 4 degrees of freedom: the threshold 33.4 has false-alarm probability
 * 1e-6 (exp(-x/2)(1 + x/2) at x = 33.4). A -inf score is never chosen. */
START_TEST(exponential_mechanism_follows_its_law)
{
    pg_rng sec;
    ck_assert_int_eq(pg_rng_secure(&sec, NULL), PG_OK);
    double score[6] = {0, 1, 2.5, -INFINITY, 3, 5};
    double eps = 0.8, sens = 2.0, p[6], z = 0;
    for (int i = 0; i < 6; i++)
        z += p[i] = isfinite(score[i]) ? exp(eps * score[i] / (2 * sens)) : 0;
    size_t N = 200000, cnt[6] = {0};
    for (size_t t = 0; t < N; t++) {
        size_t k;
        ck_assert_int_eq(pg_marg_exponential(&sec, score, 6, eps, sens, &k, NULL), PG_OK);
        cnt[k]++;
    }
    ck_assert_uint_eq(cnt[3], 0);
    double chi = 0;
    for (int i = 0; i < 6; i++) {
        if (i == 3) continue;
        double e = (double)N * p[i] / z;
        chi += (cnt[i] - e) * (cnt[i] - e) / e;
    }
    ck_assert_msg(chi < 33.4, "chi-square %g", chi);
    /* power: the law with sens halved (a wrong temperature) is far off */
    double chi_wrong = 0, zw = 0, pw[6];
    for (int i = 0; i < 6; i++) zw += pw[i] = isfinite(score[i]) ? exp(eps * score[i] / sens) : 0;
    for (int i = 0; i < 6; i++) {
        if (i == 3) continue;
        double e = (double)N * pw[i] / zw;
        chi_wrong += (cnt[i] - e) * (cnt[i] - e) / e;
    }
    ck_assert_double_gt(chi_wrong, 1000);
    pg_rng seeded;
    pg_rng_seeded(&seeded, 1, 1);
    size_t k;
    ck_assert_int_eq(pg_marg_exponential(&seeded, score, 6, eps, sens, &k, NULL), PG_EPRIVACY);
    double none[2] = {-INFINITY, -INFINITY};
    ck_assert_int_eq(pg_marg_exponential(&sec, none, 2, eps, sens, &k, NULL), PG_EINVAL);
}
END_TEST

static double ncdf(double x, void *ctx)
{
    double s = *(double *)ctx;
    return 0.5 * erfc(-x / (s * sqrt(2.0)));
}

/* Measurement noise: y - x ~ N(0, sigma^2). KS at PG_TEST_KS_SECURE; the
 * same sample against sigma * 1.1 must fail (power: D = 0.037 at n = 40 000,
 * sqrt(n) D = 7.4). */
START_TEST(gaussian_measurement_has_its_scale)
{
    pg_rng sec;
    ck_assert_int_eq(pg_rng_secure(&sec, NULL), PG_OK);
    size_t n = 40000;
    double sigma = 7.3;
    double *x = malloc(n * sizeof *x), *r = malloc(n * sizeof *r);
    float *y = malloc(n * sizeof *y);
    for (size_t i = 0; i < n; i++) x[i] = (double)(i % 17);
    ck_assert_int_eq(pg_marg_gaussian(&sec, x, n, sigma, y, NULL), PG_OK);
    for (size_t i = 0; i < n; i++) r[i] = (double)y[i] - x[i];
    double d = pg_test_ks(r, n, ncdf, &sigma);
    ck_assert_msg(sqrt((double)n) * d < PG_TEST_KS_SECURE, "KS %g", sqrt((double)n) * d);
    double wrong = sigma * 1.1;
    ck_assert_double_gt(sqrt((double)n) * pg_test_ks(r, n, ncdf, &wrong), PG_TEST_KS_SECURE);
    pg_rng seeded;
    pg_rng_seeded(&seeded, 1, 1);
    ck_assert_int_eq(pg_marg_gaussian(&seeded, x, n, sigma, y, NULL), PG_EPRIVACY);
    free(x), free(r), free(y);
}
END_TEST

START_TEST(counts_match_brute_force)
{
    size_t n = 500, A = 4, sizes[4] = {3, 2, 5, 4};
    uint16_t *codes = malloc(n * A * sizeof *codes);
    pg_rng rng;
    pg_rng_seeded(&rng, 9, 1);
    for (size_t i = 0; i < n; i++)
        for (size_t a = 0; a < A; a++) codes[i * A + a] = (uint16_t)pg_rng_below(&rng, sizes[a]);
    size_t set[3] = {0, 2, 3};
    double out[60], want[60] = {0};
    pg_marg_count(codes, n, A, sizes, set, 3, out, 60);
    for (size_t i = 0; i < n; i++) {
        const uint16_t *c = codes + i * A;
        want[(c[0] * 5 + c[2]) * 4 + c[3]] += 1; /* first attribute slowest */
    }
    double tot = 0;
    for (int i = 0; i < 60; i++) {
        ck_assert_double_eq(out[i], want[i]);
        tot += out[i];
    }
    ck_assert_double_eq(tot, n);
    free(codes);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("marg");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, rho_is_the_largest_the_ledger_converts_within_epsilon);
    tcase_add_test(tc, exponential_mechanism_follows_its_law);
    tcase_add_test(tc, gaussian_measurement_has_its_scale);
    tcase_add_test(tc, counts_match_brute_force);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
