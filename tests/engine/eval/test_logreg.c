#include "engine/core/alloc.h"
#include "engine/core/rng.h"
#include "engine/eval/logreg.h"
#include "support/pg_test.h"

/* Gaussian blobs: class c has mean mu_c = 1.5 * e_c (in d >= k dims), identity
 * covariance, equal priors. The Bayes classifier is argmax_c x_c (equal-norm
 * means), so its accuracy is known by Monte Carlo on the same draw. */
static void blobs(pg_rng *r, float *x, int32_t *y, size_t n, size_t d, int k)
{
    for (size_t i = 0; i < n; i++) {
        y[i] = (int32_t)pg_rng_below(r, (uint64_t)k);
        for (size_t j = 0; j < d; j++) x[i * d + j] = (float)pg_rng_normal(r);
        x[i * d + (size_t)y[i]] += 1.5f;
    }
}

START_TEST(gradient_matches_finite_differences)
{
    size_t n = 40, d = 5;
    int k = 3;
    float x[200];
    int32_t y[40];
    pg_rng r;
    pg_rng_seeded(&r, 1, 0);
    blobs(&r, x, y, n, d, k);
    size_t p = (d + 1) * (size_t)k;
    double theta[18], grad[18], g2[18], f;
    for (size_t i = 0; i < p; i++) theta[i] = 0.3 * pg_rng_normal(&r);
    /* theta is rounded to float inside: use values exactly representable. */
    for (size_t i = 0; i < p; i++) theta[i] = (double)(float)theta[i];
    ck_assert_int_eq(pg_logreg_objective(x, y, n, d, k, 0.1, theta, &f, grad, NULL), PG_OK);
    for (size_t i = 0; i < p; i++) {
        double h = 1.0 / 256.0, fp, fm; /* power of two: theta +- h stays exact in float */
        double t = theta[i];
        theta[i] = t + h;
        pg_logreg_objective(x, y, n, d, k, 0.1, theta, &fp, g2, NULL);
        theta[i] = t - h;
        pg_logreg_objective(x, y, n, d, k, 0.1, theta, &fm, g2, NULL);
        theta[i] = t;
        double fd = (fp - fm) / (2 * h);
        /* O(h^2) truncation with h = 2^-8 plus float32 logits: 2e-4 absolute. */
        ck_assert_msg(fabs(fd - grad[i]) < 2e-4, "param %zu: fd %g vs %g", i, fd, grad[i]);
    }
}
END_TEST

START_TEST(fit_reaches_bayes_accuracy)
{
    size_t n = 6000, nt = 6000, d = 8;
    int k = 4;
    float *x = pg_alloc_f32(n * d), *xt = pg_alloc_f32(nt * d);
    int32_t *y = pg_calloc(n, 4), *yt = pg_calloc(nt, 4);
    pg_rng r;
    pg_rng_seeded(&r, 2, 0);
    blobs(&r, x, y, n, d, k);
    blobs(&r, xt, yt, nt, d, k);
    size_t bayes_hits = 0;
    for (size_t i = 0; i < nt; i++) {
        int best = 0;
        for (int c = 1; c < k; c++)
            if (xt[i * d + (size_t)c] > xt[i * d + (size_t)best]) best = c;
        bayes_hits += best == yt[i];
    }
    double bayes = (double)bayes_hits / (double)nt;
    pg_logreg m;
    pg_logreg_opts o;
    pg_logreg_defaults(&o);
    pg_logreg_report rep;
    ck_assert_int_eq(pg_logreg_fit(&m, x, y, n, d, k, &o, &rep, NULL), PG_OK);
    /* First-order optimality up to the float32 resolution of the logits. */
    ck_assert_msg(rep.grad_norm < 1e-4, "gradient %g after %d iterations (%s)", rep.grad_norm,
                  rep.iters, rep.stop);
    double acc;
    ck_assert_int_eq(pg_logreg_accuracy(&m, xt, yt, nt, &acc, NULL), PG_OK);
    /* The fitted linear model is within 1.5 points of the Bayes rule (with
     * 6000 test rows the standard error of an accuracy is about 0.6 points). */
    ck_assert_msg(acc > bayes - 0.015, "accuracy %.4f vs Bayes %.4f", acc, bayes);
    ck_assert_double_gt(bayes, 0.6);
    pg_logreg_free(&m);
    pg_free(x), pg_free(xt), pg_free(y), pg_free(yt);
}
END_TEST

typedef struct seen {
    int calls, stop_at;
    double last;
} seen;

static int count_iters(void *ctx, const char *stage, double frac)
{
    seen *s = ctx;
    ck_assert_str_eq(stage, "logreg");
    ck_assert(frac > s->last && frac <= 1.0);
    s->last = frac;
    return ++s->calls == s->stop_at;
}

START_TEST(progress_and_cancellation)
{
    size_t n = 500, d = 6;
    int k = 3;
    float *x = pg_alloc_f32(n * d);
    int32_t *y = pg_calloc(n, 4);
    pg_rng r;
    pg_rng_seeded(&r, 4, 0);
    blobs(&r, x, y, n, d, k);
    pg_logreg m;
    pg_logreg_opts o;
    pg_logreg_defaults(&o);
    ck_assert_ptr_null(o.progress);
    seen s = {0, -1, 0.0};
    o.progress = count_iters;
    o.progress_ctx = &s;
    pg_logreg_report rep;
    ck_assert_int_eq(pg_logreg_fit(&m, x, y, n, d, k, &o, &rep, NULL), PG_OK);
    /* One call per completed iteration that did not end the fit. */
    ck_assert_int_ge(s.calls, rep.iters - 1);
    ck_assert_int_le(s.calls, rep.iters);
    pg_logreg_free(&m);
    s = (seen){0, 3, 0.0};
    pg_error e = {0};
    ck_assert_int_eq(pg_logreg_fit(&m, x, y, n, d, k, &o, &rep, &e), PG_ECANCELLED);
    ck_assert_int_eq(s.calls, 3);
    ck_assert_ptr_null(m.w);
    pg_free(x), pg_free(y);
}
END_TEST

START_TEST(rejects_bad_input)
{
    float x[4] = {0, 1, NAN, 2};
    int32_t y[2] = {0, 1};
    pg_logreg m;
    pg_error err;
    ck_assert_int_eq(pg_logreg_fit(&m, x, y, 2, 2, 2, NULL, NULL, &err), PG_EINVAL);
    x[2] = 0;
    y[1] = 5;
    ck_assert_int_eq(pg_logreg_fit(&m, x, y, 2, 2, 2, NULL, NULL, &err), PG_EINVAL);
    ck_assert(strstr(err.msg, "label") != NULL);
    ck_assert_int_eq(pg_logreg_fit(&m, x, y, 0, 2, 2, NULL, NULL, &err), PG_EINVAL);
    ck_assert_int_eq(pg_logreg_fit(&m, x, y, 2, 2, 1, NULL, NULL, &err), PG_EINVAL);
}
END_TEST

static Suite *logreg_suite(void)
{
    Suite *s = suite_create("eval/logreg");
    TCase *tc = tcase_create("logreg");
    tcase_add_test(tc, gradient_matches_finite_differences);
    tcase_add_test(tc, fit_reaches_bayes_accuracy);
    tcase_add_test(tc, rejects_bad_input);
    tcase_add_test(tc, progress_and_cancellation);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(logreg_suite)
