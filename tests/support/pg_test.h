/* tests/support/pg_test.h - shared helpers for Check suites.
 *
 * PG_TEST_MAIN(make_suite) defines main(): it runs the suite built by
 * make_suite() and exits nonzero on any failure. pg_test_source_dir() is
 * the source tree. Statistical helpers live here so every module tests
 * distributions the same way.
 */
#ifndef PG_TEST_H
#define PG_TEST_H

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PG_TEST_MAIN(make_suite)                                                                   \
    int main(void)                                                                                 \
    {                                                                                              \
        SRunner *sr = srunner_create(make_suite());                                                \
        srunner_run_all(sr, CK_NORMAL);                                                            \
        int failed = srunner_ntests_failed(sr);                                                    \
        srunner_free(sr);                                                                          \
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;                                          \
    }

#ifndef PRIVGEN_SOURCE_DIR_DEFAULT /* compiled in by privgen_test_executable */
#define PRIVGEN_SOURCE_DIR_DEFAULT "."
#endif

/* The source tree (openapi.yaml, scripts/, fixtures): PRIVGEN_SOURCE_DIR
 * when set (ctest sets it), else the one the binary was built from, so a
 * suite run by hand from any directory finds its files. */
static inline const char *pg_test_source_dir(void)
{
    const char *src = getenv("PRIVGEN_SOURCE_DIR");
    return src && *src ? src : PRIVGEN_SOURCE_DIR_DEFAULT;
}

static int pg_test_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One-sample Kolmogorov-Smirnov statistic D_n of xs (sorted in place) against
 * the continuous CDF `cdf`. Under H0, sqrt(n) * D_n < 1.95 with probability
 * 0.999 (Kolmogorov distribution), which tests use as their threshold for
 * samples of a seeded generator: the outcome is then fixed, so the test
 * cannot flake. Samples of the secure generator (DP noise, never
 * reproducible) are new on every run, and a 0.1 % false alarm per check is
 * a CI failure every few hundred runs: they use PG_TEST_KS_SECURE, where
 * P(sqrt(n) D_n > 3) <= 2 exp(-2 * 3^2) = 3.1e-8 for every n (the
 * Dvoretzky-Kiefer-Wolfowitz inequality with Massart's constant). A power
 * check against a wrong CDF at distance D from the true one fails with
 * probability <= 2 exp(-2 (sqrt(n) D - 3)^2) by the same inequality. */
#define PG_TEST_KS_SECURE 3.0

static inline double pg_test_ks(double *xs, size_t n, double (*cdf)(double, void *), void *ctx)
{
    qsort(xs, n, sizeof *xs, pg_test_cmp_double);
    double d = 0.0;
    for (size_t i = 0; i < n; i++) {
        double f = cdf(xs[i], ctx);
        double lo = f - (double)i / (double)n, hi = (double)(i + 1) / (double)n - f;
        if (lo > d) d = lo;
        if (hi > d) d = hi;
    }
    return d;
}

/* Relative difference |a - b| / max(|a|, |b|, tiny). */
static inline double pg_test_reldiff(double a, double b)
{
    double s = fmax(fabs(a), fabs(b));
    return s < 1e-300 ? 0.0 : fabs(a - b) / s;
}

#endif
