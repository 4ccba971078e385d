#include "engine/core/alloc.h"
#include "engine/core/rng.h"
#include "engine/eval/nearest.h"
#include "support/pg_test.h"

START_TEST(copied_rows_are_at_zero)
{
    size_t m = 400, d = 30, n = 300;
    float *r = pg_alloc_f32(m * d), *q = pg_alloc_f32(n * d);
    pg_rng g;
    pg_rng_seeded(&g, 1, 0);
    pg_rng_fill_normal(&g, r, m * d, 3.0f, 2.0f); /* offset mean: the GEMM form cancels */
    for (size_t i = 0; i < n; i++) memcpy(q + i * d, r + ((i * 7) % m) * d, d * sizeof(float));
    double *dist = pg_calloc(n, sizeof(double));
    uint32_t *idx = pg_calloc(n, sizeof(uint32_t));
    ck_assert_int_eq(
        pg_eval_nearest(&(pg_mat){q, n, d, d}, &(pg_mat){r, m, d, d}, dist, idx, NULL, NULL, NULL),
        PG_OK);
    for (size_t i = 0; i < n; i++) {
        ck_assert_double_eq(dist[i], 0.0);
        ck_assert_uint_eq(idx[i], (i * 7) % m);
    }
    pg_free(r), pg_free(q), pg_free(dist), pg_free(idx);
}
END_TEST

START_TEST(matches_brute_force)
{
    size_t m = 500, d = 17, n = 600; /* three query blocks, the last partial */
    float *r = pg_alloc_f32(m * d), *q = pg_alloc_f32(n * d);
    pg_rng g;
    pg_rng_seeded(&g, 2, 0);
    pg_rng_fill_normal(&g, r, m * d, 0.0f, 1.0f);
    pg_rng_fill_normal(&g, q, n * d, 0.0f, 1.0f);
    double *dist = pg_calloc(n, sizeof(double));
    ck_assert_int_eq(
        pg_eval_nearest(&(pg_mat){q, n, d, d}, &(pg_mat){r, m, d, d}, dist, NULL, NULL, NULL, NULL),
        PG_OK);
    for (size_t i = 0; i < n; i++) {
        double best = INFINITY;
        for (size_t j = 0; j < m; j++) {
            double s = 0;
            for (size_t k = 0; k < d; k++) {
                double t = (double)q[i * d + k] - r[j * d + k];
                s += t * t;
            }
            best = fmin(best, s);
        }
        /* The float screen may pick a near-tie: never below the minimum, and
         * above it by at most the GEMM rounding (1e-6 of |q|^2 + |r|^2 ~ 70). */
        ck_assert(dist[i] * dist[i] >= best * (1 - 1e-12));
        ck_assert_double_le_tol(dist[i] * dist[i], best, 1e-4);
    }
    pg_free(r), pg_free(q), pg_free(dist);
}
END_TEST

static int stop_after_one(void *ctx, const char *stage, double frac)
{
    int *calls = ctx;
    ck_assert_str_eq(stage, "nearest");
    ck_assert(frac > 0 && frac <= 1);
    return ++*calls >= 1;
}

START_TEST(cancellation_and_hostile)
{
    size_t n = 600, d = 4;
    float *x = pg_alloc_f32(n * d);
    double *dist = pg_calloc(n, sizeof(double));
    int calls = 0;
    pg_mat mx = {x, n, d, d};
    ck_assert_int_eq(pg_eval_nearest(&mx, &mx, dist, NULL, stop_after_one, &calls, NULL),
                     PG_ECANCELLED);
    ck_assert_int_eq(calls, 1);
    pg_mat narrow = {x, n, 3, 3}, empty = {x, 0, d, d};
    ck_assert_int_eq(pg_eval_nearest(&mx, &narrow, dist, NULL, NULL, NULL, NULL), PG_EINVAL);
    ck_assert_int_eq(pg_eval_nearest(&empty, &mx, dist, NULL, NULL, NULL, NULL), PG_EINVAL);
    x[5] = INFINITY;
    ck_assert_int_eq(pg_eval_nearest(&mx, &mx, dist, NULL, NULL, NULL, NULL), PG_EINVAL);
    pg_free(x), pg_free(dist);
}
END_TEST

START_TEST(quantiles_like_numpy)
{
    /* numpy.quantile([1, 2, 3, 4], p): 1.75, 2.5, 3.25, and the ends. */
    double v[] = {1, 2, 3, 4};
    ck_assert_double_eq_tol(pg_eval_quantile(v, 4, 0.25), 1.75, 1e-15);
    ck_assert_double_eq_tol(pg_eval_quantile(v, 4, 0.5), 2.5, 1e-15);
    ck_assert_double_eq_tol(pg_eval_quantile(v, 4, 0.75), 3.25, 1e-15);
    ck_assert_double_eq(pg_eval_quantile(v, 4, 0.0), 1.0);
    ck_assert_double_eq(pg_eval_quantile(v, 4, 1.0), 4.0);
    ck_assert_double_eq(pg_eval_quantile(v, 1, 0.3), 1.0);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("eval_nearest");
    TCase *t = tcase_create("core");
    tcase_add_test(t, copied_rows_are_at_zero);
    tcase_add_test(t, matches_brute_force);
    tcase_add_test(t, cancellation_and_hostile);
    tcase_add_test(t, quantiles_like_numpy);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
