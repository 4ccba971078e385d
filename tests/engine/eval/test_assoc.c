#include "engine/core/alloc.h"
#include "engine/core/rng.h"
#include "engine/eval/assoc.h"
#include "support/pg_test.h"

START_TEST(pearson_of_linear_data)
{
    /* Columns: x, 3x + 1, -2x + 5, a constant, and noise. */
    size_t n = 500, d = 5;
    float *x = pg_alloc_f32(n * d);
    pg_rng r;
    pg_rng_seeded(&r, 3, 0);
    for (size_t i = 0; i < n; i++) {
        float v = (float)(int)pg_rng_below(&r, 200) - 100.0f; /* integers: 3x+1 stays exact */
        x[i * d + 0] = v;
        x[i * d + 1] = 3.0f * v + 1.0f;
        x[i * d + 2] = -2.0f * v + 5.0f;
        x[i * d + 3] = 7.0f;
        x[i * d + 4] = (float)pg_rng_normal(&r);
    }
    double c[25];
    ck_assert_int_eq(pg_eval_pearson(x, n, d, d, c, NULL), PG_OK);
    ck_assert_double_eq_tol(c[0 * d + 1], 1.0, 1e-12);
    ck_assert_double_eq_tol(c[0 * d + 2], -1.0, 1e-12);
    ck_assert_double_eq_tol(c[1 * d + 2], -1.0, 1e-12);
    ck_assert(isnan(c[0 * d + 3]) && isnan(c[3 * d + 3]) && isnan(c[3 * d + 4]));
    ck_assert_double_eq(c[4 * d + 4], 1.0);
    /* Brute force for the noise column against x, in double. */
    double mx = 0, my = 0;
    for (size_t i = 0; i < n; i++) mx += x[i * d], my += x[i * d + 4];
    mx /= n, my /= n;
    double sxy = 0, sxx = 0, syy = 0;
    for (size_t i = 0; i < n; i++) {
        double a = x[i * d] - mx, b = x[i * d + 4] - my;
        sxy += a * b, sxx += a * a, syy += b * b;
    }
    ck_assert_double_eq_tol(c[0 * d + 4], sxy / sqrt(sxx * syy), 1e-12);
    ck_assert_double_eq(c[4 * d + 0], c[0 * d + 4]);
    pg_free(x);
}
END_TEST

START_TEST(pearson_row_stride_and_blocks)
{
    /* 700 rows cross the 256-row blocks; ld 3 with d 2 skips a garbage column. */
    size_t n = 700;
    float *x = pg_alloc_f32(n * 3);
    for (size_t i = 0; i < n; i++) {
        x[i * 3] = (float)(i % 17);
        x[i * 3 + 1] = (float)(i % 17) * 0.5f - 2.0f;
        x[i * 3 + 2] = NAN;
    }
    double c[4];
    ck_assert_int_eq(pg_eval_pearson(x, n, 2, 3, c, NULL), PG_OK);
    ck_assert_double_eq_tol(c[1], 1.0, 1e-12);
    ck_assert_int_eq(pg_eval_pearson(x, n, 3, 3, c, NULL), PG_EINVAL);
    pg_free(x);
}
END_TEST

static double cramer(const float *a, int32_t ka, const float *b, int32_t kb, size_t n)
{
    double v = -1;
    ck_assert_int_eq(pg_eval_cramer_v(a, 1, ka, b, 1, kb, n, &v, NULL), PG_OK);
    return v;
}

START_TEST(cramer_closed_forms)
{
    /* 2 x 2 table [[10, 20], [30, 40]]: V = |ad - bc| / sqrt(r1 r2 c1 c2). */
    float a[100], b[100];
    size_t i = 0;
    int counts[2][2] = {{10, 20}, {30, 40}};
    for (int u = 0; u < 2; u++)
        for (int w = 0; w < 2; w++)
            for (int k = 0; k < counts[u][w]; k++) a[i] = (float)u, b[i++] = (float)w;
    double want = 200.0 / sqrt(30.0 * 70.0 * 40.0 * 60.0);
    ck_assert_double_eq_tol(cramer(a, 2, b, 2, 100), want, 1e-14);
    /* Declared but unused categories are dropped: same V with k = 5 and 7. */
    ck_assert_double_eq_tol(cramer(a, 5, b, 7, 100), want, 1e-14);
    /* A column against itself (3 categories): V = 1. */
    float c[9] = {0, 1, 2, 0, 1, 2, 2, 2, 0};
    ck_assert_double_eq_tol(cramer(c, 3, c, 3, 9), 1.0, 1e-14);
    /* Every pair of a 3 x 2 grid equally often: independent, V = 0. */
    float g1[12], g2[12];
    for (size_t k = 0; k < 12; k++) g1[k] = (float)(k % 3), g2[k] = (float)((k / 3) % 2);
    ck_assert_double_eq_tol(cramer(g1, 3, g2, 2, 12), 0.0, 1e-14);
    /* A constant column leaves a 1 x c table: undefined. */
    float k0[4] = {1, 1, 1, 1};
    ck_assert(isnan(cramer(k0, 2, c, 3, 4)));
}
END_TEST

START_TEST(cramer_hostile)
{
    float a[] = {0, 1, 2}, b[] = {0, 1, 0.5f};
    double v = 9;
    ck_assert_int_eq(pg_eval_cramer_v(a, 1, 3, b, 1, 2, 3, &v, NULL), PG_EINVAL);
    ck_assert_int_eq(pg_eval_cramer_v(a, 1, 2, a, 1, 3, 3, &v, NULL), PG_EINVAL);
    ck_assert_int_eq(pg_eval_cramer_v(a, 1, 65536, a, 1, 65536, 3, &v, NULL), PG_EINVAL);
    ck_assert_int_eq(pg_eval_cramer_v(a, 1, 3, a, 1, 3, 0, &v, NULL), PG_EINVAL);
    ck_assert_double_eq(v, 9);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("eval_assoc");
    TCase *t = tcase_create("core");
    tcase_add_test(t, pearson_of_linear_data);
    tcase_add_test(t, pearson_row_stride_and_blocks);
    tcase_add_test(t, cramer_closed_forms);
    tcase_add_test(t, cramer_hostile);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
