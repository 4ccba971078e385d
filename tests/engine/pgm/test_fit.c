/* The fit: exact recovery from noise-free marginals, the least-squares
 * optimum against a direct solve on the full joint, the total, warm starts. */
#include <stdio.h>

#include "pgm_testutil.h"

/* Structures whose measured sets are exactly the junction tree's cliques, so
 * a model on them is identified by its measured marginals. */
static const int RECOVER[] = {0, 1, 3, 5, 6};

/* Noise-free marginals (the measured sets and every one-way marginal, with
 * different sigmas) of a random tree-structured distribution: the fit
 * recovers the distribution, so every marginal of up to three attributes
 * (most spanning cliques) matches to 1e-6 of the total. */
START_TEST(exact_recovery)
{
    const tu_struct *s = &TU_STRUCTS[RECOVER[_i]];
    const double N = 1000;
    pg_pgm_model *truth = tu_random_model(s, 300 + (uint64_t)_i, 1.0, 1e6, N);
    ck_assert_ptr_nonnull(truth);
    size_t n;
    double *joint = tu_joint(truth, &n);
    pg_pgm_measure ms[24];
    double *ys[24];
    size_t nm = 0;
    for (size_t i = 0; i < s->nsets + s->nattr; i++, nm++) {
        pg_pgm_measure *m = &ms[nm];
        memset(m, 0, sizeof *m);
        if (i < s->nsets) {
            m->k = s->k[i];
            memcpy(m->attrs, s->sets[i], m->k * sizeof *m->attrs);
        } else {
            m->k = 1;
            m->attrs[0] = i - s->nsets;
        }
        ys[nm] = malloc(tu_cells(s->sizes, m->attrs, m->k) * sizeof(double));
        tu_marg(s->sizes, s->nattr, joint, m->attrs, m->k, N, ys[nm]);
        m->y = ys[nm];
        m->sigma = 0.5 + (double)(i % 3);
    }
    pg_pgm_fit_opts o = {.max_iters = 20000, .tol = 1e-14};
    pg_pgm_model *fit = NULL;
    pg_error err = {0};
    ck_assert_int_eq(pg_pgm_fit(s->sizes, s->nattr, ms, nm, &o, NULL, &fit, &err), PG_OK);
    ck_assert(fabs(pg_pgm_model_total(fit) - N) < 1e-9);
    size_t q[3];
    double out[64], ref[64], worst = 0;
    for (unsigned mask = 1; mask < (1u << s->nattr); mask++) {
        if (__builtin_popcount(mask) > 3) continue;
        size_t k = 0;
        for (size_t a = 0; a < s->nattr; a++)
            if (mask >> a & 1u) q[k++] = a;
        ck_assert_int_eq(pg_pgm_marginal(fit, q, k, out, &err), PG_OK);
        tu_marg(s->sizes, s->nattr, joint, q, k, N, ref);
        for (size_t c = 0; c < tu_cells(s->sizes, q, k); c++)
            worst = fmax(worst, fabs(out[c] - ref[c]) / N);
    }
    pg_pgm_fit_stats st;
    pg_pgm_model_stats(fit, &st);
    ck_assert_msg(worst < 1e-6, "%s: worst %g after %zu iterations (loss %g)", s->name, worst,
                  st.iters, st.loss);
    for (size_t i = 0; i < nm; i++) free(ys[i]);
    free(joint);
    pg_pgm_model_free(truth);
    pg_pgm_model_free(fit);
}
END_TEST

/* ---- direct solve on the full joint (3 attributes x 3 levels) ---------- */

typedef struct qp {
    size_t nm;
    const pg_pgm_measure *m;
    double N;
} qp;

static const size_t S3[3] = {3, 3, 3};

static void joint_marg(const double *p, const pg_pgm_measure *m, double *out)
{
    tu_marg(S3, 3, p, m->attrs, m->k, 1.0, out);
}

static double qp_loss(const qp *q, const double *p, double *grad)
{
    double L = 0;
    if (grad) memset(grad, 0, 27 * sizeof *grad);
    for (size_t i = 0; i < q->nm; i++) {
        const pg_pgm_measure *m = &q->m[i];
        double mu[27];
        joint_marg(p, m, mu);
        size_t cells = tu_cells(S3, m->attrs, m->k);
        double r[27], w = 1 / (m->sigma * m->sigma);
        for (size_t c = 0; c < cells; c++) {
            r[c] = q->N * mu[c] - m->y[c];
            L += 0.5 * w * r[c] * r[c];
        }
        if (grad)
            for (size_t x = 0; x < 27; x++) {
                size_t xs[3] = {x / 9, (x / 3) % 3, x % 3}, idx = 0;
                for (size_t a = 0; a < m->k; a++) idx = idx * 3 + xs[m->attrs[a]];
                grad[x] += w * q->N * r[idx];
            }
    }
    return L;
}

/* Euclidean projection onto the probability simplex (sort-based). */
static void simplex_project(double *v, size_t n)
{
    double u[27];
    memcpy(u, v, n * sizeof *u);
    qsort(u, n, sizeof *u, pg_test_cmp_double);
    double cum = 0, tau = 0;
    for (size_t j = n; j-- > 0;) {
        cum += u[j];
        double t = (cum - 1) / (double)(n - j);
        if (j == 0 || u[j - 1] <= t) {
            tau = t;
            break;
        }
    }
    for (size_t i = 0; i < n; i++) v[i] = fmax(v[i] - tau, 0);
}

/* FISTA with restarts on the 27-cell joint: a reference optimum. */
static double qp_solve(const qp *q, double *p)
{
    double Lip = 0;
    for (size_t i = 0; i < q->nm; i++) Lip += 27 * q->N * q->N / (q->m[i].sigma * q->m[i].sigma);
    double x[27], y[27], g[27], xo[27], t = 1, f = INFINITY;
    for (size_t i = 0; i < 27; i++) x[i] = y[i] = 1.0 / 27;
    for (int it = 0; it < 400000; it++) {
        qp_loss(q, y, g);
        memcpy(xo, x, sizeof x);
        for (size_t i = 0; i < 27; i++) x[i] = y[i] - g[i] / Lip;
        simplex_project(x, 27);
        double fx = qp_loss(q, x, NULL), tn = 0.5 * (1 + sqrt(1 + 4 * t * t));
        if (fx > f) {
            t = 1, tn = 1;
            memcpy(y, x, sizeof x);
        } else {
            for (size_t i = 0; i < 27; i++) y[i] = x[i] + (t - 1) / tn * (x[i] - xo[i]);
        }
        f = fx;
        t = tn;
    }
    memcpy(p, x, sizeof x);
    return qp_loss(q, x, NULL);
}

/* Noisy measurements on 3 x 3 x 3: a chain ({0,1},{1,2},{0}) and a
 * triangle (adds {0,2}: one clique of 27 cells). The fit's loss equals the
 * direct optimum and its measured marginals (unique at the optimum: the loss
 * is strictly convex in them) match; the total is the inverse-variance
 * weighted mean of the measurement sums. */
START_TEST(noisy_matches_direct_optimum)
{
    pg_rng r;
    pg_rng_seeded(&r, 42, (uint64_t)_i);
    double truth[27], s = 0;
    for (size_t x = 0; x < 27; x++) s += (truth[x] = exp(0.7 * pg_rng_normal(&r)));
    for (size_t x = 0; x < 27; x++) truth[x] /= s;
    const double Ntrue = 300;
    pg_pgm_measure ms[4] = {{2, {0, 1}, NULL, 1.0, NULL},
                            {2, {1, 2}, NULL, 2.0, NULL},
                            {1, {0}, NULL, 0.5, NULL},
                            {2, {0, 2}, NULL, 3.0, NULL}};
    size_t nm = _i == 0 ? 3 : 4;
    double ys[4][9], num = 0, den = 0;
    for (size_t i = 0; i < nm; i++) {
        double mu[27];
        joint_marg(truth, &ms[i], mu);
        size_t cells = tu_cells(S3, ms[i].attrs, ms[i].k);
        double sum = 0;
        for (size_t c = 0; c < cells; c++) {
            ys[i][c] = Ntrue * mu[c] + ms[i].sigma * 4 * pg_rng_normal(&r);
            sum += ys[i][c];
        }
        ms[i].y = ys[i];
        double var = ms[i].sigma * ms[i].sigma * (double)cells;
        num += sum / var;
        den += 1 / var;
    }
    const double N = num / den;
    pg_pgm_fit_opts o = {.max_iters = 50000, .tol = 1e-15};
    pg_pgm_model *fit = NULL;
    pg_error err = {0};
    ck_assert_int_eq(pg_pgm_fit(S3, 3, ms, nm, &o, NULL, &fit, &err), PG_OK);
    ck_assert(fabs(pg_pgm_model_total(fit) - N) < 1e-9 * N);
    ck_assert(pg_pgm_model_cells(fit) == (_i == 0 ? 18 : 27));

    qp q = {nm, ms, N};
    double p[27];
    double Lref = qp_solve(&q, p);
    pg_pgm_fit_stats st;
    pg_pgm_model_stats(fit, &st);
    ck_assert_msg(fabs(st.loss - Lref) <= 1e-7 * (1 + Lref), "loss %.12g vs direct %.12g (%zu it)",
                  st.loss, Lref, st.iters);
    for (size_t i = 0; i < nm; i++) {
        double a[9], b[27];
        ck_assert_int_eq(pg_pgm_marginal(fit, ms[i].attrs, ms[i].k, a, &err), PG_OK);
        joint_marg(p, &ms[i], b);
        for (size_t c = 0; c < tu_cells(S3, ms[i].attrs, ms[i].k); c++)
            ck_assert_msg(fabs(a[c] - N * b[c]) < 1e-4 * N,
                          "measurement %zu cell %zu: %.9g vs %.9g", i, c, a[c], N * b[c]);
    }
    /* A known total overrides the estimate. */
    pg_pgm_model *fixed = NULL;
    o.total = 123;
    o.max_iters = 10;
    ck_assert_int_eq(pg_pgm_fit(S3, 3, ms, nm, &o, NULL, &fixed, &err), PG_OK);
    ck_assert(pg_pgm_model_total(fixed) == 123);
    pg_pgm_model_free(fixed);
    pg_pgm_model_free(fit);
}
END_TEST

/* A warm start from the previous round's model reaches the same optimum as
 * a cold fit (AIM refits after each round). */
START_TEST(warm_start_same_optimum)
{
    const tu_struct *s = &TU_STRUCTS[6]; /* tree7 */
    pg_pgm_model *truth = tu_random_model(s, 77, 1.0, 1e6, 500);
    size_t n;
    double *joint = tu_joint(truth, &n);
    pg_pgm_measure ms[8];
    double ys[8][16];
    pg_rng r;
    pg_rng_seeded(&r, 5, 0);
    for (size_t i = 0; i < 7; i++) {
        memset(&ms[i], 0, sizeof ms[i]);
        ms[i].k = 2;
        if (i < 6) {
            memcpy(ms[i].attrs, s->sets[i], 2 * sizeof(size_t));
        } else {
            ms[i].attrs[0] = 2, ms[i].attrs[1] = 6; /* the next round's pair */
        }
        tu_marg(s->sizes, s->nattr, joint, ms[i].attrs, 2, 500, ys[i]);
        for (size_t c = 0; c < tu_cells(s->sizes, ms[i].attrs, 2); c++)
            ys[i][c] += 2 * pg_rng_normal(&r);
        ms[i].y = ys[i];
        ms[i].sigma = 2;
    }
    pg_pgm_fit_opts o = {.max_iters = 30000, .tol = 1e-13};
    pg_pgm_model *a = NULL, *warm = NULL, *cold = NULL;
    pg_error err = {0};
    ck_assert_int_eq(pg_pgm_fit(s->sizes, s->nattr, ms, 6, &o, NULL, &a, &err), PG_OK);
    ck_assert_int_eq(pg_pgm_fit(s->sizes, s->nattr, ms, 7, &o, a, &warm, &err), PG_OK);
    ck_assert_int_eq(pg_pgm_fit(s->sizes, s->nattr, ms, 7, &o, NULL, &cold, &err), PG_OK);
    pg_pgm_fit_stats sw, sc;
    pg_pgm_model_stats(warm, &sw);
    pg_pgm_model_stats(cold, &sc);
    ck_assert_msg(fabs(sw.loss - sc.loss) < 1e-6 * (1 + sc.loss), "warm %.10g cold %.10g", sw.loss,
                  sc.loss);
    for (size_t i = 0; i < 7; i++) {
        double x[16], y[16];
        ck_assert_int_eq(pg_pgm_marginal(warm, ms[i].attrs, 2, x, &err), PG_OK);
        ck_assert_int_eq(pg_pgm_marginal(cold, ms[i].attrs, 2, y, &err), PG_OK);
        for (size_t c = 0; c < tu_cells(s->sizes, ms[i].attrs, 2); c++)
            ck_assert_msg(fabs(x[c] - y[c]) < 1e-3, "pair %zu cell %zu: %g vs %g", i, c, x[c],
                          y[c]);
    }
    /* A warm model of another domain is ignored (cold start), not an error. */
    size_t other[7] = {2, 2, 2, 2, 2, 2, 2};
    pg_pgm_model *odd = NULL, *b = NULL;
    ck_assert_int_eq(pg_pgm_fit(other, 7, NULL, 0, NULL, NULL, &odd, &err), PG_OK);
    ck_assert_int_eq(pg_pgm_fit(s->sizes, s->nattr, ms, 7, &o, odd, &b, &err), PG_OK);
    pg_pgm_model_free(odd);
    pg_pgm_model_free(b);
    free(joint);
    pg_pgm_model_free(truth);
    pg_pgm_model_free(a);
    pg_pgm_model_free(warm);
    pg_pgm_model_free(cold);
}
END_TEST

/* No measurements: the uniform model of the given total; an attribute never
 * measured keeps a uniform marginal next to measured ones. */
/* Per-cell precisions (pg_pgm_measure.w): two noisy one-way measurements of
 * one attribute, the first with its last cell the sum of 4 cells (w = 1/4).
 * The optimum is the weighted least-squares projection onto sum = N with N
 * the inverse-variance mean of the sums (var = sigma^2 sum_j 1/w_j):
 *   mu_c = (sum_i a_ic y_ic - nu) / sum_i a_ic,  a_ic = w_ic / sigma_i^2,
 * nu solving sum_c mu_c = N (no cell is near 0, so positivity is inactive).
 * A fit that ignores w puts N at 596.0 instead of 593.3. */
START_TEST(cell_weights_give_the_weighted_optimum)
{
    size_t sizes[1] = {3};
    double y1[3] = {100, 200, 300}, y2[3] = {110, 190, 280}, w1[3] = {1, 1, 0.25};
    pg_pgm_measure ms[2] = {{1, {0}, y1, 1.0, w1}, {1, {0}, y2, 2.0, NULL}};
    double v1 = 1.0 * (1 + 1 + 4), v2 = 4.0 * 3;
    double N = (600 / v1 + 580 / v2) / (1 / v1 + 1 / v2);
    double num = 0, inv = 0, mu[3];
    for (int c = 0; c < 3; c++) {
        double a = w1[c] / 1.0 + 1.0 / 4.0;
        num += (w1[c] * y1[c] + y2[c] / 4.0) / a;
        inv += 1.0 / a;
    }
    double nu = (num - N) / inv;
    for (int c = 0; c < 3; c++) {
        double a = w1[c] + 0.25;
        mu[c] = (w1[c] * y1[c] + y2[c] / 4.0 - nu) / a;
    }
    pg_pgm_fit_opts o = {.max_iters = 20000, .tol = 1e-12};
    pg_pgm_model *m = NULL;
    pg_error err = {0};
    ck_assert_msg(pg_pgm_fit(sizes, 1, ms, 2, &o, NULL, &m, &err) == PG_OK, "%s", err.msg);
    ck_assert_msg(fabs(pg_pgm_model_total(m) - N) < 1e-9 * N, "total %.9g, want %.9g",
                  pg_pgm_model_total(m), N);
    double got[3];
    size_t a0 = 0;
    ck_assert_int_eq(pg_pgm_marginal(m, &a0, 1, got, NULL), PG_OK);
    for (int c = 0; c < 3; c++)
        ck_assert_msg(fabs(got[c] - mu[c]) < 1e-6 * N, "cell %d: %.9g, want %.9g", c, got[c],
                      mu[c]);
    pg_pgm_model_free(m);
    m = NULL;
    /* a weight that is not finite and > 0 is refused */
    double bad[3][3] = {{1, 0, 1}, {1, -1, 1}, {1, NAN, 1}};
    for (int b = 0; b < 3; b++) {
        ms[0].w = bad[b];
        ck_assert_int_eq(pg_pgm_fit(sizes, 1, ms, 2, NULL, NULL, &m, &err), PG_EINVAL);
        ck_assert_ptr_null(m);
    }
}
END_TEST

START_TEST(uniform_where_unmeasured)
{
    size_t sizes[3] = {2, 3, 5};
    pg_pgm_fit_opts o = {.total = 60};
    pg_pgm_model *m = NULL;
    pg_error err = {0};
    ck_assert_int_eq(pg_pgm_fit(sizes, 3, NULL, 0, &o, NULL, &m, &err), PG_OK);
    /* Stats a caller can print as JSON: nothing to fit, converged, gap 0. */
    pg_pgm_fit_stats st;
    pg_pgm_model_stats(m, &st);
    ck_assert(st.converged == 1 && st.iters == 0 && st.gap == 0 && st.loss == 0);
    size_t q[2] = {1, 2};
    double out[15];
    ck_assert_int_eq(pg_pgm_marginal(m, q, 2, out, &err), PG_OK);
    for (size_t c = 0; c < 15; c++) ck_assert(fabs(out[c] - 4) < 1e-12);
    pg_pgm_model_free(m);
    double y[6] = {10, 20, 30, 5, 5, 30};
    pg_pgm_measure ms = {2, {0, 1}, y, 1.0, NULL};
    ck_assert_int_eq(pg_pgm_fit(sizes, 3, &ms, 1, NULL, NULL, &m, &err), PG_OK);
    ck_assert(fabs(pg_pgm_model_total(m) - 100) < 1e-9);
    size_t a2 = 2;
    ck_assert_int_eq(pg_pgm_marginal(m, &a2, 1, out, &err), PG_OK);
    for (size_t c = 0; c < 5; c++) ck_assert(fabs(out[c] - 20) < 1e-9);
    size_t q01[2] = {0, 1};
    ck_assert_int_eq(pg_pgm_marginal(m, q01, 2, out, &err), PG_OK);
    for (size_t c = 0; c < 6; c++) ck_assert_msg(fabs(out[c] - y[c]) < 1e-3, "%g", out[c]);
    pg_pgm_model_free(m);
}
END_TEST

static Suite *fit_suite(void)
{
    Suite *s = suite_create("pgm/fit");
    TCase *tc = tcase_create("fit");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, exact_recovery, 0, (int)(sizeof RECOVER / sizeof *RECOVER));
    tcase_add_loop_test(tc, noisy_matches_direct_optimum, 0, 2);
    tcase_add_test(tc, warm_start_same_optimum);
    tcase_add_test(tc, uniform_where_unmeasured);
    tcase_add_test(tc, cell_weights_give_the_weighted_optimum);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(fit_suite)
