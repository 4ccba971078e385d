/* The entropic GAN on a locally privatized typed table:
 * one categorical column with clean frequencies (0.7, 0.2, 0.1), privatized
 * by 3-ary randomized response at epsilon 2 (keep 0.787: privatized
 * frequencies about (0.583, 0.243, 0.174), total variation 0.117 from the
 * clean ones). Trained through the channel, the decoded samples recover the
 * clean frequencies (about 0.01 off, held within 0.06); trained without it
 * (ot.channel false) they land on the privatized ones, about 0.11 away (held
 * beyond 0.06).
 *
 * Sampling error budget. The clean rows have exact counts, so the only data
 * noise is the randomized response (from the secure generator: it differs
 * every run): the inverse-channel estimate of a frequency has standard
 * deviation sqrt(q (1 - q) / N) / (keep - other) <= sqrt(0.25 / 160000) /
 * 0.680 = 0.0018 at N = 160000; 200000 decoded samples add sqrt(0.25 /
 * 2e5) = 0.0011. The test also checks the inverse-channel estimate of the
 * same rows (pg_rr_estimate) is within 0.01 (5.4 standard deviations): the
 * data carry the answer. At N = 40000 that check sat at 2.7 standard
 * deviations and the suite failed about once in twenty runs; the training
 * cost does not depend on N (steps x batch).
 *
 * Fitting error budget. With the training seed fixed, the fit still moves
 * with the data draw: the run without the channel lands 0.005-0.015 from
 * its own target (the privatized frequencies), and the run through it
 * 0.007-0.015 from the clean ones over ten runs (2026-11-25), with one
 * 0.022 in CI-loaded runs. The bound of 0.03 is twice the largest fit error
 * seen plus the data and sampling noise above; it stays a quarter of the
 * error without the channel, which the second assertion pins above 0.08.
 * (At 0.02 it failed in two of the full runs of 2026-11-25, at 0.0222.)
 *
 * Both bounds at 0.06 (2026-11-28). Eleven more runs put the error through
 * the channel at 0.005-0.020 (mean 0.012, sd 0.006: 0.03 sat 3.3 sd above
 * the mean, about 1e-3 per run, and these errors are maxima over three
 * frequencies, skewed to the right) and without it at 0.10-0.13 (mean
 * 0.117, sd 0.01: 0.08 sat 3.9 sd under, about 5e-5). A cut at 0.06 is 8 sd
 * above the first and 6 sd under the second, and still fails a channel that
 * is ignored (the first run lands near 0.117) or applied when switched off
 * (the second lands near 0.012). */
#include <jansson.h>
#include <math.h>

#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/data/dataset.h"
#include "engine/data/table.h"
#include "engine/data/table_ldp.h"
#include "engine/methods/method.h"
#include "engine/methods/spec.h"
#include "engine/privacy/privacy.h"
#include "support/pg_method_test.h"
#include "support/pg_test.h"

enum { N = 160000, SAMPLES = 200000 };
static const double CLEAN[3] = {0.7, 0.2, 0.1};
#define EPS 2.0

typedef struct fixture {
    pg_table *t;
    pg_ldp_plan plan;
    pg_dataset ds;
    pg_data_desc desc;
    double priv[3];
} fixture;

static void make(fixture *f)
{
    memset(f, 0, sizeof *f);
    json_t *schema = json_loads("{\"columns\":[{\"name\":\"c\",\"type\":\"categorical\","
                                "\"categories\":[\"a\",\"b\",\"c\"]}]}",
                                0, NULL);
    pg_error err = {0};
    ck_assert_msg(pg_table_from_json(schema, &f->t, &err) == PG_OK, "%s", err.msg);
    json_decref(schema);
    ck_assert_int_eq(pg_ldp_plan_make(f->t, PG_LDP_LAPLACE, EPS, 0, &f->plan, &err), PG_OK);
    float *x = pg_alloc_f32((size_t)N * 3);
    size_t cut0 = (size_t)(CLEAN[0] * N), cut1 = cut0 + (size_t)(CLEAN[1] * N);
    for (size_t i = 0; i < N; i++) {
        size_t c = i < cut0 ? 0 : i < cut1 ? 1 : 2;
        for (size_t k = 0; k < 3; k++) x[i * 3 + k] = k == c ? 1.0f : 0.0f;
    }
    pg_rng sec;
    ck_assert_int_eq(pg_rng_secure(&sec, &err), PG_OK);
    ck_assert_msg(pg_ldp_apply(&sec, f->t, &f->plan, x, NULL, N, &err) == PG_OK, "%s", err.msg);
    double cnt[3] = {0};
    for (size_t i = 0; i < N; i++)
        for (size_t k = 0; k < 3; k++) cnt[k] += x[i * 3 + k];
    for (size_t k = 0; k < 3; k++) f->priv[k] = cnt[k] / N;
    size_t shape[1] = {3};
    ck_assert_int_eq(pg_dataset_adopt(&f->ds, x, NULL, N, shape, 1, 0, -1.0f, 1.0f, NULL), PG_OK);
    pg_data_desc d = {.n = N,
                      .d = 3,
                      .ndim = 1,
                      .shape = {3},
                      .lo = -1.0f,
                      .hi = 1.0f,
                      .model = PG_PRIVACY_LOCAL,
                      .epsilon = f->plan.epsilon,
                      .table = f->t,
                      .ldp = &f->plan};
    f->desc = d;
}

static void unmake(fixture *f)
{
    pg_dataset_free(&f->ds);
    pg_ldp_plan_free(&f->plan);
    pg_table_free(f->t);
}

static double tv(const double *a, const double *b)
{
    return 0.5 * (fabs(a[0] - b[0]) + fabs(a[1] - b[1]) + fabs(a[2] - b[2]));
}

/* Trains and returns the decoded frequencies of SAMPLES samples. */
static void train(fixture *f, const char *spec, double *freq)
{
    const pg_method *m = pg_method_find("entropic_gan");
    pg_job_data in = {.desc = &f->desc, .rows = &f->ds};
    pg_spec_errors e;
    json_t *r = pg_test_resolve(m, spec, &in, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    ck_assert(fabs(pg_spec_num(r, "ot.reg", 0) - 1.0) < 1e-12);
    pg_trainer *t = pg_test_train(m, r, &in, NULL);
    pg_snapshot *s;
    ck_assert_int_eq(m->snapshot(t, &s, NULL), PG_OK);
    float *y = pg_alloc_f32((size_t)SAMPLES * 3);
    ck_assert_int_eq(pg_snapshot_sample(s, SAMPLES, 11, -1, y, NULL), PG_OK);
    double cnt[3] = {0};
    for (size_t i = 0; i < SAMPLES; i++) {
        pg_table_value v;
        pg_table_decode_value(f->t, 0, y + i * 3, 1, &v);
        ck_assert(!v.missing && v.cat < 3);
        cnt[v.cat] += 1;
        float sum = y[i * 3] + y[i * 3 + 1] + y[i * 3 + 2];
        ck_assert(fabsf(sum - 1.0f) < 1e-4f); /* a softmax head */
    }
    for (size_t k = 0; k < 3; k++) freq[k] = cnt[k] / SAMPLES;
    pg_free(y);
    pg_snapshot_release(s);
    m->destroy(t);
    json_decref(r);
}

#define SPEC(ch)                                                                                   \
    "{\"seed\": 3, \"train\": {\"steps\": 300, \"batch_size\": 512}, \"ot\": {\"channel\": " ch "}}"

START_TEST(recovers_clean_frequencies_through_the_channel)
{
    pg_threads_set(1);
    fixture f;
    make(&f);
    /* The privatized frequencies are far off, the inverse channel is not. */
    ck_assert_msg(tv(f.priv, CLEAN) > 0.1, "privatized TV %.3f", tv(f.priv, CLEAN));
    double est[3];
    ck_assert_int_eq(pg_rr_estimate(3, EPS, f.priv, est, NULL), PG_OK);
    for (int k = 0; k < 3; k++) ck_assert_msg(fabs(est[k] - CLEAN[k]) < 0.01, "estimate %d", k);
    fprintf(stderr, "inverse-channel estimate (%.4f, %.4f, %.4f)\n", est[0], est[1], est[2]);

    double with[3], without[3];
    train(&f, SPEC("true"), with);
    train(&f, SPEC("false"), without);
    fprintf(stderr,
            "clean (0.7, 0.2, 0.1) privatized (%.4f, %.4f, %.4f)\n"
            "through the channel (%.4f, %.4f, %.4f)  without (%.4f, %.4f, %.4f)\n",
            f.priv[0], f.priv[1], f.priv[2], with[0], with[1], with[2], without[0], without[1],
            without[2]);
    double worst_with = 0, worst_without = 0;
    for (int k = 0; k < 3; k++) {
        worst_with = fmax(worst_with, fabs(with[k] - CLEAN[k]));
        worst_without = fmax(worst_without, fabs(without[k] - CLEAN[k]));
    }
    ck_assert_msg(worst_with < 0.06, "through the channel: max error %.4f", worst_with);
    ck_assert_msg(worst_without > 0.06, "without the channel: max error %.4f", worst_without);
    unmake(&f);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("methods/table_ldp_gan");
    TCase *tc = tcase_create("table_ldp_gan");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, recovers_clean_frequencies_through_the_channel);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
