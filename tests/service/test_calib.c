/* Noise calibration: Laplace closed form; analytic Gaussian checked against
 * an independent numerical integration of the hockey-stick divergence
 * δ(ε) = ∫ max(0, p(x) − e^ε q(x)) dx between N(0,σ²) and N(Δ,σ²). */
#include <math.h>

#include "service/calib.h"
#include "service/datasets/spec.h"
#include "support/pg_test.h"

static double hockey_stick(double sigma, double eps, double sens)
{
    /* Simpson on [-40σ, Δ+40σ]; the integrand is smooth except at its single
     * kink, which a fine grid makes negligible. */
    double a = -40 * sigma, b = sens + 40 * sigma;
    int n = 400000;
    double h = (b - a) / n, sum = 0;
    for (int i = 0; i <= n; i++) {
        double x = a + i * h;
        double p = exp(-x * x / (2 * sigma * sigma)),
               q = exp(-(x - sens) * (x - sens) / (2 * sigma * sigma));
        double f = fmax(0.0, p - exp(eps) * q) / (sigma * sqrt(2 * M_PI));
        sum += f * (i == 0 || i == n ? 1 : (i % 2 ? 4 : 2));
    }
    return sum * h / 3;
}

START_TEST(laplace_closed_form)
{
    double b;
    ck_assert_int_eq(pg_svc_min_noise_scale(PG_MECH_LAPLACE, 0.5, 0.0, 2.0, &b, NULL), PG_OK);
    ck_assert_double_eq_tol(b, 4.0, 1e-15);
    ck_assert_int_eq(pg_svc_min_noise_scale(PG_MECH_LAPLACE, 1.0, 1e-5, 1.0, &b, NULL), PG_EINVAL);
    ck_assert_int_eq(pg_svc_min_noise_scale(PG_MECH_LAPLACE, 0.0, 0.0, 1.0, &b, NULL), PG_EINVAL);
    ck_assert_int_eq(pg_svc_min_noise_scale(PG_MECH_LAPLACE, 1.0, 0.0, -1.0, &b, NULL), PG_EINVAL);
}
END_TEST

START_TEST(gaussian_condition_matches_integral)
{
    const double sig[] = {0.3, 1.0, 2.5};
    const double eps[] = {0.1, 1.0, 3.0};
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 3; j++) {
            double closed = pg_svc_gaussian_delta(sig[i], eps[j], 1.0);
            double num = hockey_stick(sig[i], eps[j], 1.0);
            ck_assert_msg(fabs(closed - num) < 1e-9 + 1e-6 * num, "sigma %g eps %g: %g vs %g",
                          sig[i], eps[j], closed, num);
        }
}
END_TEST

START_TEST(gaussian_minimal_and_sufficient)
{
    const double eps[] = {0.05, 0.5, 1.0, 4.0, 20.0};
    const double del[] = {1e-3, 1e-5, 1e-10};
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 3; j++) {
            double s;
            ck_assert_int_eq(
                pg_svc_min_noise_scale(PG_MECH_GAUSSIAN, eps[i], del[j], 1.5, &s, NULL), PG_OK);
            ck_assert(pg_svc_gaussian_delta(s, eps[i], 1.5) <= del[j]);
            ck_assert(pg_svc_gaussian_delta(s * (1 - 1e-9), eps[i], 1.5) > del[j]);
            /* Never above the classical bound where that bound is valid (ε < 1). */
            if (eps[i] < 1) ck_assert(s <= 1.5 * sqrt(2 * log(1.25 / del[j])) / eps[i]);
        }
}
END_TEST

/* Scaling: σ_min is linear in the sensitivity. */
START_TEST(gaussian_scales_with_sensitivity)
{
    double a, b;
    pg_svc_min_noise_scale(PG_MECH_GAUSSIAN, 1.0, 1e-5, 1.0, &a, NULL);
    pg_svc_min_noise_scale(PG_MECH_GAUSSIAN, 1.0, 1e-5, 3.0, &b, NULL);
    ck_assert(pg_test_reldiff(b, 3 * a) < 1e-12);
}
END_TEST

static pg_datasets_spec local_spec(int mech, double eps, double delta, double noise)
{
    pg_datasets_spec s = {.name = "x",
                          .ndim = 1,
                          .shape = {4},
                          .lo = -1,
                          .hi = 1,
                          .model = PG_PRIV_LOCAL,
                          .mechanism = mech,
                          .epsilon = eps,
                          .delta = delta,
                          .sensitivity = 2.0,
                          .noise_scale = noise};
    return s;
}

START_TEST(declared_noise_checked)
{
    char field[PG_FIELD_MAX];
    pg_error err;
    pg_datasets_spec s = local_spec(PG_MECH_LAPLACE, 1.0, 0.0, 2.0);
    ck_assert_int_eq(pg_datasets_spec_check(&s, 1024, field, &err), PG_OK);
    s = local_spec(PG_MECH_LAPLACE, 1.0, 0.0, 1.9);
    ck_assert_int_eq(pg_datasets_spec_check(&s, 1024, field, &err), PG_EPRIVACY);
    ck_assert_str_eq(field, "privacy.noise_scale");
    double g;
    pg_svc_min_noise_scale(PG_MECH_GAUSSIAN, 1.0, 1e-5, 2.0, &g, NULL);
    s = local_spec(PG_MECH_GAUSSIAN, 1.0, 1e-5, g);
    ck_assert_int_eq(pg_datasets_spec_check(&s, 1024, field, &err), PG_OK);
    s = local_spec(PG_MECH_GAUSSIAN, 1.0, 1e-5, g * 0.999);
    ck_assert_int_eq(pg_datasets_spec_check(&s, 1024, field, &err), PG_EPRIVACY);
    s = local_spec(PG_MECH_GAUSSIAN, 1.0, 0.0, 100);
    ck_assert_int_eq(pg_datasets_spec_check(&s, 1024, field, &err), PG_EINVAL);
    ck_assert_str_eq(field, "privacy.delta");
}
END_TEST

START_TEST(value_and_label_checks)
{
    pg_datasets_spec s = {.name = "c",
                          .ndim = 1,
                          .shape = {3},
                          .lo = 0,
                          .hi = 1,
                          .num_classes = 2,
                          .model = PG_PRIV_CENTRAL,
                          .budget_epsilon = 1,
                          .budget_delta = 1e-5};
    char field[PG_FIELD_MAX];
    ck_assert_int_eq(pg_datasets_spec_check(&s, 1024, field, NULL), PG_OK);
    float x[9] = {0, 0.5f, 1, 0.2f, 0.3f, 0.4f, 0.1f, 1.5f, 0};
    uint64_t bad;
    ck_assert_int_eq(pg_datasets_check_values(&s, x, 6, 0, &bad, NULL), PG_OK);
    ck_assert_int_eq(pg_datasets_check_values(&s, x, 9, 0, &bad, NULL), PG_EINVAL);
    ck_assert_int_eq((int)bad, 2);
    /* With a flat offset the row is counted from the start of the upload. */
    ck_assert_int_eq(pg_datasets_check_values(&s, x + 6, 3, 30, &bad, NULL), PG_EINVAL);
    ck_assert_int_eq((int)bad, 10);
    x[7] = NAN;
    s.model = PG_PRIV_PUBLIC;
    ck_assert_int_eq(pg_datasets_check_values(&s, x, 9, 0, &bad, NULL), PG_EINVAL);
    x[7] = 7.0f; /* out of range is fine for non-central data */
    ck_assert_int_eq(pg_datasets_check_values(&s, x, 9, 0, &bad, NULL), PG_OK);
    int64_t lab[3] = {0, 1, 2};
    ck_assert_int_eq(pg_datasets_check_labels(&s, lab, 2, &bad, NULL), PG_OK);
    ck_assert_int_eq(pg_datasets_check_labels(&s, lab, 3, &bad, NULL), PG_EINVAL);
    ck_assert_int_eq((int)bad, 2);
}
END_TEST

START_TEST(spec_json_round_trip)
{
    double g;
    pg_svc_min_noise_scale(PG_MECH_GAUSSIAN, 0.7, 1e-6, 2.0, &g, NULL);
    pg_datasets_spec s = local_spec(PG_MECH_GAUSSIAN, 0.7, 1e-6, g * 1.5);
    s.ndim = 3, s.shape[0] = 1, s.shape[1] = 28, s.shape[2] = 28, s.num_classes = 10;
    char field[PG_FIELD_MAX];
    ck_assert_int_eq(pg_datasets_spec_check(&s, 1 << 20, field, NULL), PG_OK);
    char *js;
    ck_assert_int_eq(pg_datasets_spec_to_json(&s, &js, NULL), PG_OK);
    pg_datasets_spec t;
    ck_assert_int_eq(pg_datasets_spec_from_json(js, &t, NULL), PG_OK);
    free(js);
    ck_assert_int_eq((int)t.d, 784);
    ck_assert(t.epsilon == s.epsilon && t.delta == s.delta && t.noise_scale == s.noise_scale);
    ck_assert(t.min_noise_scale == s.min_noise_scale && t.num_classes == 10);
    ck_assert_int_eq(t.mechanism, PG_MECH_GAUSSIAN);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("calib");
    TCase *t = tcase_create("core");
    tcase_add_test(t, laplace_closed_form);
    tcase_add_test(t, gaussian_condition_matches_integral);
    tcase_add_test(t, gaussian_minimal_and_sufficient);
    tcase_add_test(t, gaussian_scales_with_sensitivity);
    tcase_add_test(t, declared_noise_checked);
    tcase_add_test(t, value_and_label_checks);
    tcase_add_test(t, spec_json_round_trip);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
