/* RDP accountant: published values (TF-Privacy) and an independent reference
 * by direct numerical integration of the Renyi divergence. */
#include "engine/privacy/privacy.h"
#include "support/pg_test.h"

#include <float.h>
#include <string.h>

/* Independent reference: A_alpha = int N(x; 0, s^2) ((1-q) + q e^{(2x-1)/(2s^2)})^alpha dx
 * by the trapezoid rule in log space over [-40s, alpha + 40s] (the integrand
 * is smooth with width ~s, so h = s/64 is spectrally accurate). */
static double rdp_by_integration(double q, double s, double alpha)
{
    double lo = -40.0 * s, hi = alpha + 40.0 * s, h = s / 64.0;
    size_t n = (size_t)ceil((hi - lo) / h) + 1;
    double m = -INFINITY;
    for (int pass = 0; pass < 2; pass++) {
        double acc = 0.0;
        for (size_t i = 0; i < n; i++) {
            double x = lo + h * (double)i;
            double u = (2.0 * x - 1.0) / (2.0 * s * s);
            double lmix =
                u < 30.0 ? log1p(q * expm1(u)) : log(q) + u + log1p((1.0 - q) * exp(-u) / q);
            double lf = -x * x / (2.0 * s * s) - log(s * sqrt(2.0 * M_PI)) + alpha * lmix;
            if (pass == 0)
                m = fmax(m, lf);
            else
                acc += ((i == 0 || i == n - 1) ? 0.5 : 1.0) * exp(lf - m);
        }
        if (pass == 1) return (m + log(acc * h)) / (alpha - 1.0);
    }
    return NAN;
}

static double rdp1(double q, double s, double a)
{
    double r = NAN;
    pg_error e;
    ck_assert_int_eq(pg_rdp_sampled_gaussian(q, s, a, &r, &e), PG_OK);
    return r;
}

START_TEST(test_tf_privacy_unit_values)
{
    /* tensorflow/privacy rdp_accountant_test.py: compute_rdp(0.1, 2, 10, 5). */
    ck_assert_double_le(fabs(10 * rdp1(0.1, 2.0, 5.0) - 0.07737), 5e-6);
    const double orders[] = {1.5, 2.5, 5, 50, 100};
    const double want[] = {0.00065, 0.001085, 0.00218075, 0.023846, 167.416307};
    double got[5];
    ck_assert_int_eq(pg_rdp_compute(0.01, 2.5, 50, orders, 5, got, NULL), PG_OK);
    for (int i = 0; i < 5; i++) ck_assert_double_le(fabs(got[i] - want[i]), 1e-5);
}
END_TEST

START_TEST(test_tf_privacy_get_privacy_spent)
{
    /* get_privacy_spent(orders 2..32, q .01, sigma 4, 10000 steps, delta 1e-5)
     * = 1.258575 at order 20 (classic conversion). */
    double orders[31], rdp[31], eps, ord;
    for (int i = 0; i < 31; i++) orders[i] = 2 + i;
    ck_assert_int_eq(pg_rdp_compute(0.01, 4.0, 10000, orders, 31, rdp, NULL), PG_OK);
    ck_assert_int_eq(pg_rdp_to_dp(orders, rdp, 31, 1e-5, PG_RDP_CONV_CLASSIC, &eps, &ord, NULL),
                     PG_OK);
    ck_assert_double_le(fabs(eps - 1.258575), 5e-6);
    ck_assert_double_eq(ord, 20.0);

    /* test_check_composition: two jobs composed per order, 8.509656 at 2.5. */
    const double o2[] = {1.25, 1.5, 1.75, 2.,  2.5, 3.,  4.,  5.,  6.,  7.,  8.,
                         10.,  12., 14.,  16., 20., 24., 28., 32., 64., 256.};
    double a[21], b[21];
    ck_assert_int_eq(pg_rdp_compute(1e-4, 0.4, 40000, o2, 21, a, NULL), PG_OK);
    ck_assert_int_eq(pg_rdp_compute(0.1, 2.0, 100, o2, 21, b, NULL), PG_OK);
    ck_assert_int_eq(pg_rdp_compose(a, b, 21, NULL), PG_OK);
    ck_assert_int_eq(pg_rdp_to_dp(o2, a, 21, 1e-5, PG_RDP_CONV_CLASSIC, &eps, &ord, NULL), PG_OK);
    ck_assert_double_le(fabs(eps - 8.509656), 5e-6);
    ck_assert_double_eq(ord, 2.5);
}
END_TEST

/* The orders compute_dp_sgd_privacy used for the MNIST tutorial. */
static size_t tf_orders(double *o)
{
    size_t n = 0;
    for (int x = 1; x < 100; x++) o[n++] = 1.0 + x / 10.0;
    for (int x = 12; x < 64; x++) o[n++] = x;
    return n;
}

static void check_tutorial(double sigma, uint64_t steps, double published)
{
    double o[160], rdp[160], ref[160], eps, eps_ref, ord, ord_ref;
    size_t n = tf_orders(o);
    double q = 256.0 / 60000.0;
    ck_assert_int_eq(pg_rdp_compute(q, sigma, steps, o, n, rdp, NULL), PG_OK);
    for (size_t i = 0; i < n; i++) ref[i] = (double)steps * rdp_by_integration(q, sigma, o[i]);
    ck_assert_int_eq(pg_rdp_to_dp(o, rdp, n, 1e-5, PG_RDP_CONV_CLASSIC, &eps, &ord, NULL), PG_OK);
    ck_assert_int_eq(pg_rdp_to_dp(o, ref, n, 1e-5, PG_RDP_CONV_CLASSIC, &eps_ref, &ord_ref, NULL),
                     PG_OK);
    /* The published figure has two decimals; the independent value pins it to 1e-4. */
    ck_assert_double_le(fabs(eps - published), 0.005);
    ck_assert_double_le(pg_test_reldiff(eps, eps_ref), 1e-4);
    ck_assert_double_eq(ord, ord_ref);
}

START_TEST(test_tf_mnist_tutorial)
{
    /* tensorflow/privacy tutorials/README.md: sigma 1.1, batch 256 of 60000,
     * 60 epochs = ceil(60*60000/256) = 14063 steps, delta 1e-5: eps = 3.01;
     * sigma 1.3, 15 epochs: 1.19; sigma 0.7, 45 epochs: 7.10. */
    check_tutorial(1.1, 14063, 3.01);
    check_tutorial(1.3, 3516, 1.19);
    check_tutorial(0.7, 10547, 7.10);
}
END_TEST

START_TEST(test_table_vs_integration)
{
    const double qs[] = {1e-3, 0.01, 0.1, 0.5, 0.9};
    const double ss[] = {0.7, 1.0, 2.0, 5.0};
    const double as[] = {1.1, 1.5, 2.0, 2.5, 3.0, 3.7, 8.0, 12.5, 20.0, 32.0};
    for (size_t i = 0; i < 5; i++)
        for (size_t j = 0; j < 4; j++)
            for (size_t k = 0; k < 10; k++) {
                double got = rdp1(qs[i], ss[j], as[k]);
                double ref = rdp_by_integration(qs[i], ss[j], as[k]);
                if (pg_test_reldiff(got, ref) > 1e-6)
                    ck_abort_msg("q %g sigma %g alpha %g: series %.12g integral %.12g", qs[i],
                                 ss[j], as[k], got, ref);
            }
}
END_TEST

START_TEST(test_slow_series_fallback_is_upper_bound)
{
    /* q = 1/2 with a large sigma: the fractional series is replaced by the
     * chord between integer orders, which must stay above the true value. */
    const double as[] = {1.5, 2.5, 7.3};
    for (int i = 0; i < 3; i++) {
        double got = rdp1(0.5, 300.0, as[i]), ref = rdp_by_integration(0.5, 300.0, as[i]);
        ck_assert_double_ge(got, ref * (1 - 1e-7));
        ck_assert_double_le(got, rdp1(0.5, 300.0, ceil(as[i])));
        ck_assert_double_le(got, 2.0 * ref);
    }
}
END_TEST

START_TEST(test_plain_gaussian_and_monotone)
{
    double r;
    ck_assert_int_eq(pg_rdp_gaussian(2.0, 8.0, &r, NULL), PG_OK);
    ck_assert_double_eq_tol(r, 1.0, 1e-15);
    ck_assert_double_eq_tol(rdp1(1.0, 2.0, 8.0), 1.0, 1e-15);
    ck_assert_double_eq_tol(rdp1(1.0, 2.0, 7.5), 7.5 / 8.0, 1e-15);
    /* Subsampling only helps, and RDP grows with the order. */
    double prev = 0.0;
    double orders[PG_RDP_DEFAULT_ORDERS];
    size_t n = pg_rdp_default_orders(orders, PG_RDP_DEFAULT_ORDERS);
    ck_assert_uint_eq(n, 156);
    ck_assert_double_eq(orders[0], 1.1);
    ck_assert_double_eq(orders[98], 10.9);
    ck_assert_double_eq(orders[99], 11.0);
    ck_assert_double_eq(orders[155], 1024.0);
    for (size_t i = 0; i < n; i++) {
        double v = rdp1(0.02, 1.0, orders[i]);
        ck_assert_double_ge(v, prev * (1 - 1e-12));
        ck_assert_double_le(v, orders[i] / 2.0);
        prev = v;
    }
}
END_TEST

START_TEST(test_conversions)
{
    double o[PG_RDP_DEFAULT_ORDERS], r[PG_RDP_DEFAULT_ORDERS], ec, ei;
    size_t n = pg_rdp_default_orders(o, PG_RDP_DEFAULT_ORDERS);
    ck_assert_int_eq(pg_rdp_compute(0.01, 1.0, 1000, o, n, r, NULL), PG_OK);
    ck_assert_int_eq(pg_rdp_to_dp(o, r, n, 1e-5, PG_RDP_CONV_CLASSIC, &ec, NULL, NULL), PG_OK);
    ck_assert_int_eq(pg_rdp_to_dp(o, r, n, 1e-5, PG_RDP_CONV_IMPROVED, &ei, NULL, NULL), PG_OK);
    ck_assert_double_lt(ei, ec);
    /* Hand check of both formulas at a single order. */
    double a = 4.0, rv = 0.5, e;
    ck_assert_int_eq(pg_rdp_to_dp(&a, &rv, 1, 1e-6, PG_RDP_CONV_CLASSIC, &e, NULL, NULL), PG_OK);
    ck_assert_double_eq_tol(e, 0.5 + log(1e6) / 3.0, 1e-12);
    ck_assert_int_eq(pg_rdp_to_dp(&a, &rv, 1, 1e-6, PG_RDP_CONV_IMPROVED, &e, NULL, NULL), PG_OK);
    ck_assert_double_eq_tol(e, 0.5 + log(0.75) - (log(1e-6) + log(4.0)) / 3.0, 1e-12);
    /* An infinite order is skipped, all-infinite is an error. */
    double o2[2] = {2.0, 3.0}, r2[2] = {INFINITY, 0.1};
    ck_assert_int_eq(pg_rdp_to_dp(o2, r2, 2, 1e-5, PG_RDP_CONV_CLASSIC, &e, NULL, NULL), PG_OK);
    r2[1] = INFINITY;
    ck_assert_int_eq(pg_rdp_to_dp(o2, r2, 2, 1e-5, PG_RDP_CONV_CLASSIC, &e, NULL, NULL),
                     PG_ENUMERIC);
}
END_TEST

/* With an extra curve (a one-off plain Gaussian release next to the steps)
 * the calibrated sigma meets the target for the composed curve, tightly,
 * and is larger than without; NULL is the plain calibration. */
START_TEST(test_calibration_with_extra_curve)
{
    double orders[PG_RDP_DEFAULT_ORDERS], extra[PG_RDP_DEFAULT_ORDERS];
    double rdp[PG_RDP_DEFAULT_ORDERS];
    size_t n = pg_rdp_default_orders(orders, PG_RDP_DEFAULT_ORDERS);
    for (size_t i = 0; i < n; i++) extra[i] = orders[i] / (2.0 * 5.0 * 5.0);
    double s0, s1, s2, e_hi, e_lo;
    ck_assert_int_eq(pg_rdp_calibrate_sigma(4.0, 1e-5, 0.01, 3000, PG_RDP_CONV_IMPROVED, &s0, NULL),
                     PG_OK);
    ck_assert_int_eq(
        pg_rdp_calibrate_sigma_plus(4.0, 1e-5, 0.01, 3000, NULL, PG_RDP_CONV_IMPROVED, &s1, NULL),
        PG_OK);
    ck_assert_double_eq(s0, s1);
    ck_assert_int_eq(
        pg_rdp_calibrate_sigma_plus(4.0, 1e-5, 0.01, 3000, extra, PG_RDP_CONV_IMPROVED, &s2, NULL),
        PG_OK);
    ck_assert_double_gt(s2, s1);
    /* Brute force: compose by hand at s2 and just below it. */
    const double at[2] = {s2, s2 * (1 - 1e-5)};
    double *out[2] = {&e_hi, &e_lo};
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(pg_rdp_compute(0.01, at[k], 3000, orders, n, rdp, NULL), PG_OK);
        for (size_t i = 0; i < n; i++) rdp[i] += extra[i];
        ck_assert_int_eq(
            pg_rdp_to_dp(orders, rdp, n, 1e-5, PG_RDP_CONV_IMPROVED, out[k], NULL, NULL), PG_OK);
    }
    ck_assert_double_le(e_hi, 4.0);
    ck_assert_double_gt(e_lo, 4.0);
    /* An extra release that alone exceeds the target cannot be calibrated. */
    for (size_t i = 0; i < n; i++) extra[i] = orders[i] / (2.0 * 0.1 * 0.1);
    pg_error e = {0};
    ck_assert_int_eq(
        pg_rdp_calibrate_sigma_plus(4.0, 1e-5, 0.01, 3000, extra, PG_RDP_CONV_IMPROVED, &s2, &e),
        PG_ERANGE);
    ck_assert_ptr_nonnull(strstr(e.msg, "other releases"));
}
END_TEST

START_TEST(test_calibration_round_trip)
{
    double sigma, e1, e2;
    const double targets[] = {0.5, 1.0, 3.0, 8.0};
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(pg_rdp_calibrate_sigma(targets[i], 1e-5, 0.01, 2000, PG_RDP_CONV_IMPROVED,
                                                &sigma, NULL),
                         PG_OK);
        ck_assert_int_eq(
            pg_rdp_epsilon(0.01, sigma, 2000, 1e-5, PG_RDP_CONV_IMPROVED, &e1, NULL, NULL), PG_OK);
        ck_assert_int_eq(pg_rdp_epsilon(0.01, sigma * (1 - 1e-5), 2000, 1e-5, PG_RDP_CONV_IMPROVED,
                                        &e2, NULL, NULL),
                         PG_OK);
        ck_assert_double_le(e1, targets[i]);
        ck_assert_double_gt(e2, targets[i]);
    }
    uint64_t steps;
    ck_assert_int_eq(
        pg_rdp_max_steps(1.1, 256.0 / 60000.0, 3.0, 1e-5, PG_RDP_CONV_CLASSIC, &steps, NULL),
        PG_OK);
    ck_assert_int_eq(
        pg_rdp_epsilon(256.0 / 60000.0, 1.1, steps, 1e-5, PG_RDP_CONV_CLASSIC, &e1, NULL, NULL),
        PG_OK);
    ck_assert_int_eq(
        pg_rdp_epsilon(256.0 / 60000.0, 1.1, steps + 1, 1e-5, PG_RDP_CONV_CLASSIC, &e2, NULL, NULL),
        PG_OK);
    ck_assert_double_le(e1, 3.0);
    ck_assert_double_gt(e2, 3.0);
    ck_assert_int_eq(pg_rdp_max_steps(0.1, 1.0, 0.01, 1e-5, PG_RDP_CONV_CLASSIC, &steps, NULL),
                     PG_OK);
    ck_assert_uint_eq(steps, 0);
}
END_TEST

START_TEST(test_domain_refused)
{
    double r, o = 2.0, v = 0.1;
    pg_error e;
    ck_assert_int_eq(pg_rdp_sampled_gaussian(0.0, 1.0, 2.0, &r, &e), PG_EINVAL);
    ck_assert_int_eq(pg_rdp_sampled_gaussian(1.5, 1.0, 2.0, &r, &e), PG_EINVAL);
    ck_assert_int_eq(pg_rdp_sampled_gaussian(NAN, 1.0, 2.0, &r, &e), PG_EINVAL);
    ck_assert_int_eq(pg_rdp_sampled_gaussian(0.1, 0.0, 2.0, &r, &e), PG_EINVAL);
    ck_assert_int_eq(pg_rdp_sampled_gaussian(0.1, -1.0, 2.0, &r, &e), PG_EINVAL);
    ck_assert_int_eq(pg_rdp_sampled_gaussian(0.1, INFINITY, 2.0, &r, &e), PG_EINVAL);
    ck_assert_int_eq(pg_rdp_sampled_gaussian(0.1, 1.0, 1.0, &r, &e), PG_EINVAL);
    ck_assert_int_eq(pg_rdp_sampled_gaussian(0.1, 1.0, 0.5, &r, &e), PG_EINVAL);
    ck_assert_int_eq(pg_rdp_sampled_gaussian(0.1, 1.0, NAN, &r, &e), PG_EINVAL);
    ck_assert_int_eq(pg_rdp_gaussian(0.0, 2.0, &r, &e), PG_EINVAL);
    ck_assert_int_eq(pg_rdp_to_dp(&o, &v, 1, 0.0, PG_RDP_CONV_CLASSIC, &r, NULL, &e), PG_EINVAL);
    ck_assert_int_eq(pg_rdp_to_dp(&o, &v, 1, 1.0, PG_RDP_CONV_CLASSIC, &r, NULL, &e), PG_EINVAL);
    ck_assert_int_eq(pg_rdp_to_dp(&o, &v, 1, 1e-5, 7, &r, NULL, &e), PG_EINVAL);
    o = 1.0;
    ck_assert_int_eq(pg_rdp_to_dp(&o, &v, 1, 1e-5, PG_RDP_CONV_CLASSIC, &r, NULL, &e), PG_EINVAL);
    ck_assert_int_eq(pg_rdp_compute(0.1, 1.0, 0, &v, 1, &r, &e), PG_EINVAL);
    ck_assert_int_eq(pg_rdp_calibrate_sigma(0.0, 1e-5, 0.1, 10, PG_RDP_CONV_IMPROVED, &r, &e),
                     PG_EINVAL);
    ck_assert_int_eq(pg_rdp_calibrate_sigma(1.0, 1e-5, 0.0, 10, PG_RDP_CONV_IMPROVED, &r, &e),
                     PG_EINVAL);
    ck_assert_int_eq(pg_rdp_wbk_gaussian(0.0, 1.0, 2.0, &r, &e), PG_EINVAL);
    ck_assert_int_eq(pg_rdp_wbk_gaussian(0.1, 1.0, 1.0, &r, &e), PG_EINVAL);
}
END_TEST

static Suite *rdp_suite(void)
{
    Suite *s = suite_create("privacy_rdp");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, test_tf_privacy_unit_values);
    tcase_add_test(tc, test_tf_privacy_get_privacy_spent);
    tcase_add_test(tc, test_tf_mnist_tutorial);
    tcase_add_test(tc, test_table_vs_integration);
    tcase_add_test(tc, test_slow_series_fallback_is_upper_bound);
    tcase_add_test(tc, test_plain_gaussian_and_monotone);
    tcase_add_test(tc, test_conversions);
    tcase_add_test(tc, test_calibration_round_trip);
    tcase_add_test(tc, test_calibration_with_extra_curve);
    tcase_add_test(tc, test_domain_refused);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(rdp_suite)
