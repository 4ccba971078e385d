/* Forward sampling: the sampled joint follows the model's (chi-square on
 * every cell of the full joint), seeds reproduce rows, threads share a
 * model. */
#include <pthread.h>
#include <stdio.h>

#include "pgm_testutil.h"

/* Upper 1e-6 quantile of chi-square with df degrees of freedom
 * (Wilson-Hilferty; z = 4.753 is the standard normal's 1 - 1e-6 quantile).
 * The rows come from a seeded generator, so each outcome is fixed; the bound
 * says how unlikely a false alarm would be for a fresh seed. */
static double chi2_crit(double df)
{
    const double z = 4.753, a = 2 / (9 * df);
    return df * pow(1 - a + z * sqrt(a), 3);
}

/* Chi-square of counts against probabilities (cells with expectation < 5
 * pooled into one); *df receives the degrees of freedom. */
static double chi2(const size_t *count, const double *p, size_t cells, size_t n, double *df)
{
    double x = 0, pool_o = 0, pool_e = 0;
    size_t bins = 0;
    for (size_t c = 0; c < cells; c++) {
        double e = p[c] * (double)n;
        if (e < 5) {
            pool_o += (double)count[c];
            pool_e += e;
            continue;
        }
        x += (count[c] - e) * (count[c] - e) / e;
        bins++;
    }
    if (pool_e > 0) {
        x += (pool_o - pool_e) * (pool_o - pool_e) / pool_e;
        bins++;
    }
    *df = (double)bins - 1;
    return x;
}

static size_t joint_index(const pg_pgm_model *m, const uint32_t *row)
{
    size_t idx = 0;
    for (size_t i = 0; i < m->nattr; i++) idx = idx * m->sizes[i] + row[i];
    return idx;
}

/* Every cell of the full joint, for every structure: the sampled counts
 * pass a chi-square test against the enumerated joint, and fail it against
 * another model's joint (the test has power). */
START_TEST(joint_chi_square)
{
    const tu_struct *s = &TU_STRUCTS[_i];
    pg_pgm_model *m = tu_random_model(s, 500 + (uint64_t)_i, 1.0, 1e6, 1);
    pg_pgm_model *other = tu_random_model(s, 900 + (uint64_t)_i, 1.0, 1e6, 1);
    size_t cells;
    double *joint = tu_joint(m, &cells), *wrong = tu_joint(other, &cells);
    const size_t n = 200000;
    uint32_t *codes = malloc(n * s->nattr * sizeof *codes);
    size_t *count = calloc(cells, sizeof *count);
    pg_rng r;
    pg_rng_seeded(&r, 11, (uint64_t)_i);
    pg_error err = {0};
    ck_assert_int_eq(pg_pgm_sample(m, &r, n, codes, &err), PG_OK);
    /* One assertion after the loop: Check records every ck_assert with a
     * write(2), millions of them made this suite spend its time in the
     * kernel. */
    size_t bad = 0;
    for (size_t row = 0; row < n; row++) {
        const uint32_t *x = codes + row * s->nattr;
        int ok = 1;
        for (size_t a = 0; a < s->nattr; a++) ok &= x[a] < s->sizes[a];
        if (ok)
            count[joint_index(m, x)]++;
        else
            bad++;
    }
    ck_assert_uint_eq(bad, 0);
    double df, x2 = chi2(count, joint, cells, n, &df);
    ck_assert_msg(x2 < chi2_crit(df), "%s: chi2 %g df %g crit %g", s->name, x2, df, chi2_crit(df));
    double dfw, x2w = chi2(count, wrong, cells, n, &dfw);
    ck_assert_msg(x2w > chi2_crit(dfw), "%s: no power (%g)", s->name, x2w);
    free(codes);
    free(count);
    free(joint);
    free(wrong);
    pg_pgm_model_free(m);
    pg_pgm_model_free(other);
}
END_TEST

/* Zero-probability cells are never drawn: a fitted model whose measured
 * pair has (numerically) empty cells. */
START_TEST(respects_near_zero_cells)
{
    size_t sizes[2] = {2, 2};
    double y[4] = {500, 0, 0, 500};
    pg_pgm_measure ms = {2, {0, 1}, y, 0.01, NULL};
    pg_pgm_model *m = NULL;
    pg_error err = {0};
    pg_pgm_fit_opts o = {.max_iters = 5000};
    ck_assert_int_eq(pg_pgm_fit(sizes, 2, &ms, 1, &o, NULL, &m, &err), PG_OK);
    double mar[4];
    size_t q[2] = {0, 1};
    ck_assert_int_eq(pg_pgm_marginal(m, q, 2, mar, &err), PG_OK);
    ck_assert_msg(mar[1] < 1e-3 && mar[2] < 1e-3, "%g %g", mar[1], mar[2]);
    uint32_t codes[2 * 10000];
    pg_rng r;
    pg_rng_seeded(&r, 3, 0);
    ck_assert_int_eq(pg_pgm_sample(m, &r, 10000, codes, &err), PG_OK);
    size_t off = 0, ones = 0;
    for (size_t i = 0; i < 10000; i++) {
        off += codes[2 * i] != codes[2 * i + 1];
        ones += codes[2 * i];
    }
    /* P(any off-diagonal draw) <= 10000 * 2e-6 = 0.02 at most; here far less. */
    ck_assert_uint_le(off, 1);
    ck_assert(ones > 4700 && ones < 5300);
    pg_pgm_model_free(m);
}
END_TEST

START_TEST(same_seed_same_rows)
{
    pg_pgm_model *m = tu_random_model(&TU_STRUCTS[4], 1, 1.0, 1e6, 1);
    const size_t n = 5000, d = m->nattr;
    uint32_t *a = malloc(n * d * 4), *b = malloc(n * d * 4), *c = malloc(n * d * 4);
    pg_rng r1, r2, r3;
    pg_rng_seeded(&r1, 99, 4);
    pg_rng_seeded(&r2, 99, 4);
    pg_rng_seeded(&r3, 99, 5);
    ck_assert_int_eq(pg_pgm_sample(m, &r1, n, a, NULL), PG_OK);
    ck_assert_int_eq(pg_pgm_sample(m, &r2, n, b, NULL), PG_OK);
    ck_assert_int_eq(pg_pgm_sample(m, &r3, n, c, NULL), PG_OK);
    ck_assert(memcmp(a, b, n * d * 4) == 0);
    ck_assert(memcmp(a, c, n * d * 4) != 0);
    /* Two half-size calls continue the same stream. */
    pg_rng_seeded(&r2, 99, 4);
    ck_assert_int_eq(pg_pgm_sample(m, &r2, n / 2, b, NULL), PG_OK);
    ck_assert_int_eq(pg_pgm_sample(m, &r2, n - n / 2, b + (n / 2) * d, NULL), PG_OK);
    ck_assert(memcmp(a, b, n * d * 4) == 0);
    free(a), free(b), free(c);
    pg_pgm_model_free(m);
}
END_TEST

typedef struct job {
    const pg_pgm_model *m;
    uint64_t stream;
    uint32_t *out;
    size_t n;
    double *mar;
} job;

static void *worker(void *arg)
{
    job *j = arg;
    pg_rng r;
    pg_rng_seeded(&r, 1234, j->stream);
    pg_pgm_sample(j->m, &r, j->n, j->out, NULL);
    size_t q[2] = {0, 5};
    pg_pgm_marginal(j->m, q, 2, j->mar, NULL);
    return NULL;
}

/* A model is shared by threads: concurrent samples and marginals equal the
 * sequential ones. */
START_TEST(threads_share_a_model)
{
    pg_pgm_model *m = tu_random_model(&TU_STRUCTS[4], 2, 1.0, 1e6, 10);
    const size_t n = 20000, d = m->nattr;
    job jobs[4];
    pthread_t th[4];
    for (size_t t = 0; t < 4; t++) {
        jobs[t] = (job){m, t, malloc(n * d * 4), n, malloc(8 * sizeof(double))};
        ck_assert_int_eq(pthread_create(&th[t], NULL, worker, &jobs[t]), 0);
    }
    for (size_t t = 0; t < 4; t++) pthread_join(th[t], NULL);
    for (size_t t = 0; t < 4; t++) {
        uint32_t *ref = malloc(n * d * 4);
        double mar[8];
        pg_rng r;
        pg_rng_seeded(&r, 1234, t);
        ck_assert_int_eq(pg_pgm_sample(m, &r, n, ref, NULL), PG_OK);
        size_t q[2] = {0, 5};
        ck_assert_int_eq(pg_pgm_marginal(m, q, 2, mar, NULL), PG_OK);
        ck_assert(memcmp(ref, jobs[t].out, n * d * 4) == 0);
        ck_assert(memcmp(mar, jobs[t].mar, 6 * sizeof(double)) == 0);
        free(ref);
        free(jobs[t].out);
        free(jobs[t].mar);
    }
    pg_pgm_model_free(m);
}
END_TEST

static Suite *sample_suite(void)
{
    Suite *s = suite_create("pgm/sample");
    TCase *tc = tcase_create("sample");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, joint_chi_square, 0, (int)TU_NSTRUCTS);
    tcase_add_test(tc, respects_near_zero_cells);
    tcase_add_test(tc, same_seed_same_rows);
    tcase_add_test(tc, threads_share_a_model);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(sample_suite)
