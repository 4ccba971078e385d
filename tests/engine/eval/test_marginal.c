#include "engine/core/alloc.h"
#include "engine/core/rng.h"
#include "engine/eval/marginal.h"
#include "support/pg_test.h"

static double ks_of(const float *a, size_t n, const float *b, size_t m)
{
    float *s = pg_alloc_f32(2 * (n + m));
    double ks = -1;
    ck_assert_int_eq(pg_eval_ks_w1(a, n, 1, b, m, 1, s, &ks, NULL, NULL), PG_OK);
    pg_free(s);
    return ks;
}

static double w1_of(const float *a, size_t n, const float *b, size_t m)
{
    float *s = pg_alloc_f32(2 * (n + m));
    double w1 = -1;
    ck_assert_int_eq(pg_eval_ks_w1(a, n, 1, b, m, 1, s, NULL, &w1, NULL), PG_OK);
    pg_free(s);
    return w1;
}

START_TEST(ks_hand_made)
{
    /* F_a - F_b at 1..5: 1/3, 2/3 - 1/4, 1 - 1/2, 1 - 3/4, 0: the sup is 1/2 (at 3). */
    float a[] = {3, 1, 2}, b[] = {5, 2, 4, 3};
    ck_assert_double_eq_tol(ks_of(a, 3, b, 4), 0.5, 1e-15);
    ck_assert_double_eq_tol(ks_of(b, 4, a, 3), 0.5, 1e-15);
    /* Ties across samples: at 0 the CDFs are 1/2 and 1/4, at 1 both 1. A walk
     * that stepped through a's zeros before b's would see 1/2 - 0. */
    float c[] = {0, 0, 1, 1}, e[] = {1, 0, 1, 1};
    ck_assert_double_eq_tol(ks_of(c, 4, e, 4), 0.25, 1e-15);
    ck_assert_double_eq(ks_of(c, 4, c, 4), 0.0);
    /* Disjoint supports: 1. */
    float lo[] = {-2, -1}, hi[] = {1, 2, 3};
    ck_assert_double_eq(ks_of(lo, 2, hi, 3), 1.0);
}
END_TEST

START_TEST(w1_hand_made)
{
    /* Equal sizes: a shift by 5 costs 5. */
    float a[] = {0, 1, 3}, b[] = {8, 5, 6};
    ck_assert_double_eq_tol(w1_of(a, 3, b, 3), 5.0, 1e-12);
    /* {0} vs {0, 2}: |F_a - F_b| = 1/2 on [0, 2). */
    float c[] = {0}, e[] = {0, 2};
    ck_assert_double_eq_tol(w1_of(c, 1, e, 2), 1.0, 1e-15);
    ck_assert_double_eq(w1_of(e, 2, e, 2), 0.0);
}
END_TEST

/* Brute force on random small samples with ties: KS by counting at every
 * merged value, W1 by replicating each sample to a common size (each a value
 * m times, each b value n times), where W1 is the mean gap of sorted values. */
static int cmpf(const void *x, const void *y)
{
    float a = *(const float *)x, b = *(const float *)y;
    return (a > b) - (a < b);
}

START_TEST(ks_w1_brute_force)
{
    pg_rng r;
    pg_rng_seeded(&r, 7, 0);
    for (int trial = 0; trial < 200; trial++) {
        size_t n = 1 + pg_rng_below(&r, 9), m = 1 + pg_rng_below(&r, 9);
        float a[10], b[10];
        for (size_t i = 0; i < n; i++) a[i] = (float)pg_rng_below(&r, 6) * 0.5f - 1.0f;
        for (size_t i = 0; i < m; i++) b[i] = (float)pg_rng_below(&r, 6) * 0.5f - 0.5f;
        double ks = 0;
        for (int s = 0; s < 2; s++)
            for (size_t t = 0; t < (s ? m : n); t++) {
                float v = s ? b[t] : a[t];
                size_t ca = 0, cb = 0;
                for (size_t i = 0; i < n; i++) ca += a[i] <= v;
                for (size_t i = 0; i < m; i++) cb += b[i] <= v;
                ks = fmax(ks, fabs((double)ca / n - (double)cb / m));
            }
        float ra[100], rb[100];
        for (size_t i = 0; i < n * m; i++) {
            ra[i] = a[i / m];
            rb[i] = b[i / n];
        }
        qsort(ra, n * m, sizeof(float), cmpf);
        qsort(rb, n * m, sizeof(float), cmpf);
        double w1 = 0;
        for (size_t i = 0; i < n * m; i++) w1 += fabs((double)ra[i] - rb[i]);
        w1 /= (double)(n * m);
        ck_assert_double_eq_tol(ks_of(a, n, b, m), ks, 1e-15);
        ck_assert_double_eq_tol(w1_of(a, n, b, m), w1, 1e-12);
    }
}
END_TEST

START_TEST(strided_columns)
{
    /* Column 1 of a 3-column matrix is {10, 20}; column 1 of the other {20, 30}. */
    float x[] = {0, 10, 0, 5, 20, 5}, y[] = {1, 20, 1, 1, 30, 1};
    float s[8];
    double ks, w1;
    ck_assert_int_eq(pg_eval_ks_w1(x + 1, 2, 3, y + 1, 2, 3, s, &ks, &w1, NULL), PG_OK);
    ck_assert_double_eq_tol(ks, 0.5, 1e-15);
    ck_assert_double_eq_tol(w1, 10.0, 1e-12);
}
END_TEST

START_TEST(moments_and_tv)
{
    float x[] = {1, 2, 3, 4};
    double mean, sd;
    ck_assert_int_eq(pg_eval_moments(x, 4, 1, &mean, &sd, NULL), PG_OK);
    ck_assert_double_eq_tol(mean, 2.5, 1e-15);
    ck_assert_double_eq_tol(sd, sqrt(1.25), 1e-15);
    /* p = (1/2, 1/2, 0), q = (3/4, 0, 1/4): TV = (1/4 + 1/2 + 1/4) / 2. */
    float a[] = {0, 1, 0, 1}, b[] = {0, 0, 2, 0};
    double p[3], q[3];
    ck_assert_int_eq(pg_eval_frequencies(a, 4, 1, 3, p, NULL), PG_OK);
    ck_assert_int_eq(pg_eval_frequencies(b, 4, 1, 3, q, NULL), PG_OK);
    ck_assert_double_eq(p[2], 0.0);
    ck_assert_double_eq(q[0], 0.75);
    ck_assert_double_eq_tol(pg_eval_tv(p, q, 3), 0.5, 1e-15);
    ck_assert_double_eq(pg_eval_tv(p, p, 3), 0.0);
    /* Disjoint supports: 1. */
    float c[] = {2, 2};
    double r[3];
    pg_eval_frequencies(c, 2, 1, 3, r, NULL);
    ck_assert_double_eq(pg_eval_tv(p, r, 3), 1.0);
}
END_TEST

START_TEST(hostile_inputs)
{
    float s[16], ok[] = {0, 1}, bad[] = {0, NAN};
    double v = 42, f[4] = {7, 7, 7, 7};
    pg_error e = {0};
    ck_assert_int_eq(pg_eval_ks_w1(ok, 2, 1, bad, 2, 1, s, &v, &v, &e), PG_EINVAL);
    ck_assert_double_eq(v, 42);
    ck_assert_int_eq(pg_eval_ks_w1(ok, 0, 1, ok, 2, 1, s, &v, NULL, NULL), PG_EINVAL);
    ck_assert_int_eq(pg_eval_moments(bad, 2, 1, &v, &v, NULL), PG_EINVAL);
    float frac[] = {0, 1.5f}, big[] = {0, 4}, neg[] = {-1, 0};
    ck_assert_int_eq(pg_eval_frequencies(frac, 2, 1, 4, f, &e), PG_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "category"));
    ck_assert_int_eq(pg_eval_frequencies(big, 2, 1, 4, f, NULL), PG_EINVAL);
    ck_assert_int_eq(pg_eval_frequencies(neg, 2, 1, 4, f, NULL), PG_EINVAL);
    ck_assert_int_eq(pg_eval_frequencies(bad, 2, 1, 4, f, NULL), PG_EINVAL);
    ck_assert_int_eq(pg_eval_frequencies(ok, 2, 1, 0, f, NULL), PG_EINVAL);
    ck_assert_double_eq(f[0], 7);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("eval_marginal");
    TCase *t = tcase_create("core");
    tcase_add_test(t, ks_hand_made);
    tcase_add_test(t, w1_hand_made);
    tcase_add_test(t, ks_w1_brute_force);
    tcase_add_test(t, strided_columns);
    tcase_add_test(t, moments_and_tv);
    tcase_add_test(t, hostile_inputs);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
