/* Class-mean calibration (engine/methods/calib.h) and its use by dp_sinkhorn:
 * the release's noise law, clipping, the composed accounting, the shifted
 * samples and checkpoints. */
#include <jansson.h>
#include <math.h>

#include "engine/core/alloc.h"
#include "engine/data/dataset.h"
#include "engine/methods/calib.h"
#include "engine/methods/dp_sinkhorn.h"
#include "engine/methods/spec.h"
#include "engine/privacy/privacy.h"
#include "support/pg_dps_test.h"
#include "support/pg_method_test.h"
#include "support/pg_test.h"

static double normal_cdf(double x, void *ctx)
{
    double s = *(double *)ctx;
    return 0.5 * erfc(-x / (s * sqrt(2.0)));
}

/* Rows at the range's midpoint have centred sums S = 0, so a released mean is
 * mid + R xi / n^ with xi ~ N(0, 2 s^2) and n^ = n + O(s): mean * n / R is
 * the sum noise itself up to a relative 1e-3, checked by KS and variance. */
START_TEST(sum_noise_has_the_stated_std)
{
    size_t K = 2, d = 50, n = 4000;
    pg_dataset ds;
    size_t shape[1] = {d};
    ck_assert_int_eq(pg_dataset_alloc(&ds, n, shape, 1, (int)K, -1.0f, 1.0f, NULL), PG_OK);
    for (size_t i = 0; i < n; i++) ds.labels[i] = (int32_t)(i % K); /* x stays 0 = mid */
    pg_rng sec;
    ck_assert_int_eq(pg_rng_secure(&sec, NULL), PG_OK);
    double s = 0.5, R = sqrt((double)d), per = (double)(n / K);
    /* m = 20 000: the 30 %-wrong power check below sits at sqrt(m) D = 8.9
     * (D = 0.063) against PG_TEST_KS_SECURE (pg_test.h). */
    size_t reps = 200, m = reps * K * d;
    double *xi = malloc(m * sizeof *xi);
    float *means = pg_alloc_f32(K * d), *prev = pg_alloc_f32(K * d);
    size_t same = 0;
    for (size_t r = 0; r < reps; r++) {
        ck_assert_int_eq(pg_calib_release_means(&sec, &ds, (int)K, -1.0f, 1.0f, s, means, NULL),
                         PG_OK);
        for (size_t j = 0; j < K * d; j++) {
            xi[r * K * d + j] = (double)means[j] * per / R;
            same += r > 0 && means[j] == prev[j];
        }
        memcpy(prev, means, K * d * sizeof *means);
    }
    ck_assert_uint_eq(same, 0); /* fresh noise every release */
    double std = M_SQRT2 * s, var = 0;
    for (size_t i = 0; i < m; i++) var += xi[i] * xi[i] / (double)m;
    ck_assert_double_lt(fabs(var / (std * std) - 1.0), 0.1); /* 10 standard errors */
    double ks = pg_test_ks(xi, m, normal_cdf, &std);
    ck_assert_msg(sqrt((double)m) * ks < PG_TEST_KS_SECURE, "KS %g", sqrt((double)m) * ks);
    double wrong = 1.3 * std; /* power: a 30 % wrong std is rejected */
    ck_assert(sqrt((double)m) * pg_test_ks(xi, m, normal_cdf, &wrong) > PG_TEST_KS_SECURE);
    /* A seeded generator is refused before anything is written. */
    pg_rng seeded;
    pg_rng_seeded(&seeded, 1, 0);
    ck_assert_int_eq(pg_calib_release_means(&seeded, &ds, (int)K, -1.0f, 1.0f, s, means, NULL),
                     PG_EPRIVACY);
    ck_assert_int_eq(pg_calib_release_means(&sec, &ds, (int)K, 1.0f, 1.0f, s, means, NULL),
                     PG_EINVAL);
    ck_assert_int_eq(pg_calib_release_means(&sec, &ds, (int)K, -1.0f, 1.0f, 0.0, means, NULL),
                     PG_EINVAL);
    free(xi);
    pg_free(means), pg_free(prev);
    pg_dataset_free(&ds);
}
END_TEST

/* A row far outside the declared range is scaled back to norm R before it is
 * summed (the sensitivity the accountant assumes), and released means are
 * clamped into the range. Range [-1, 1], d = 4: mid 0, R = 2. */
START_TEST(rows_are_clipped_and_means_clamped)
{
    size_t d = 4;
    pg_dataset ds;
    size_t shape[1] = {d};
    ck_assert_int_eq(pg_dataset_alloc(&ds, 8, shape, 1, 2, -1.0f, 1.0f, NULL), PG_OK);
    /* Class 0: three rows at 0 and one at (1e6, 0, 0, 0): clipped to
     * (2, 0, 0, 0), so the mean's first value is 2 / 4 = 0.5 (unclipped it
     * would be 2.5e5, clamped to 1). Class 1: four rows at 0.9 except one
     * at -0.3 in the last column. */
    for (size_t i = 0; i < 8; i++) ds.labels[i] = i < 4 ? 0 : 1;
    pg_dataset_row(&ds, 3)[0] = 1e6f;
    for (size_t i = 4; i < 8; i++)
        for (size_t j = 0; j < d; j++) pg_dataset_row(&ds, i)[j] = 0.9f;
    pg_dataset_row(&ds, 7)[3] = -0.3f;
    pg_rng sec;
    ck_assert_int_eq(pg_rng_secure(&sec, NULL), PG_OK);
    float means[8];
    /* s = 1e-6: noise of order 1e-6 in sums of order 1. */
    ck_assert_int_eq(pg_calib_release_means(&sec, &ds, 2, -1.0f, 1.0f, 1e-6, means, NULL), PG_OK);
    const float want[8] = {0.5f, 0, 0, 0, 0.9f, 0.9f, 0.9f, 0.6f};
    for (int j = 0; j < 8; j++)
        ck_assert_msg(fabsf(means[j] - want[j]) < 1e-4f, "mean %d: %g, want %g", j, means[j],
                      want[j]);
    /* Unlabelled use (classes = 0) pools every row into one mean. */
    ck_assert_int_eq(pg_calib_release_means(&sec, &ds, 0, -1.0f, 1.0f, 1e-6, means, NULL), PG_OK);
    ck_assert(fabsf(means[0] - (0.5f + 0.9f) / 2) < 1e-4f);
    ck_assert(fabsf(means[3] - (0.0f + 0.6f) / 2) < 1e-4f);
    pg_dataset_free(&ds);
}
END_TEST

/* ---- dp_sinkhorn with calibration ---------------------------------------- */

#define MODEL    "\"model\": {\"hidden\": [16], \"latent_dim\": 2, \"conditional\": true}"
#define CALIB(s) "\"calibration\": {\"class_means\": true, \"noise_multiplier\": " s "}"

static double class_mean_distance(pg_snapshot *s, int c, const double want[2])
{
    float pts[4000];
    ck_assert_int_eq(pg_snapshot_sample(s, 2000, 99, c, pts, NULL), PG_OK);
    double mx = 0, my = 0;
    for (int i = 0; i < 2000; i++) mx += pts[2 * i] / 2000.0, my += pts[2 * i + 1] / 2000.0;
    return hypot(mx - want[0], my - want[1]);
}

/* An untrained generator's classes sit far from the blobs; the calibrated
 * snapshot of the same trainer puts each class's sample mean on its blob's
 * mean (release noise: R sqrt 2 s / 300 = 0.005 per value at s = 0.05). */
START_TEST(calibrated_samples_have_the_class_means)
{
    pg_threads_set(1);
    pg_dataset ds;
    pg_data_desc desc;
    make_central(600, 0, &ds, &desc);
    const pg_method *m = pg_method_find("dp_sinkhorn");
    const char *fmt = "{" MODEL ", \"train\": {\"steps\": 5, \"batch_size\": 10},"
                      " \"privacy\": {\"noise_multiplier\": 1.0}, \"seed\": 3%s}";
    char text[512];
    snprintf(text, sizeof text, fmt, ", " CALIB("0.05"));
    json_t *rc = resolve_ok(text, &desc);
    snprintf(text, sizeof text, fmt, "");
    json_t *rp = resolve_ok(text, &desc);
    pg_trainer *tc = make_trainer(rc, &desc, &ds), *tp = make_trainer(rp, &desc, &ds);
    double want[2][2] = {{0, 0}, {0, 0}};
    for (size_t i = 0; i < ds.n; i++)
        for (int j = 0; j < 2; j++) want[ds.labels[i]][j] += pg_dataset_row(&ds, i)[j] / 300.0;
    pg_snapshot *sc, *sp;
    ck_assert_int_eq(m->snapshot(tc, &sc, NULL), PG_OK);
    ck_assert_int_eq(m->snapshot(tp, &sp, NULL), PG_OK);
    for (int c = 0; c < 2; c++) {
        double dc = class_mean_distance(sc, c, want[c]), dp = class_mean_distance(sp, c, want[c]);
        ck_assert_msg(dc < 0.05, "calibrated class %d mean is %.3f from the data's", c, dc);
        ck_assert_msg(dp > 1.0, "uncalibrated class %d mean is only %.3f away", c, dp);
    }
    pg_dp_sinkhorn_info info;
    ck_assert_int_eq(pg_dp_sinkhorn_info_get(tc, &info, NULL), PG_OK);
    ck_assert_double_eq(info.calibration_noise_multiplier, 0.05);
    pg_snapshot_release(sc), pg_snapshot_release(sp);
    m->destroy(tc), m->destroy(tp);
    json_decref(rc), json_decref(rp);
    pg_dataset_free(&ds);
}
END_TEST

/* The plan, every step report and a target all charge the composed curve
 * steps * RDP_sampled(q, sigma) + alpha / (2 s^2), computed here by hand. */
START_TEST(calibration_is_charged)
{
    pg_threads_set(1);
    pg_dataset ds;
    pg_data_desc desc;
    make_central(200, 0, &ds, &desc);
    const pg_method *m = pg_method_find("dp_sinkhorn");
    json_t *r = resolve_ok("{" MODEL ", \"train\": {\"steps\": 6, \"batch_size\": 10},"
                           " \"privacy\": {\"noise_multiplier\": 1.3}, " CALIB("4") "}",
                           &desc);
    double orders[PG_RDP_DEFAULT_ORDERS], rdp[PG_RDP_DEFAULT_ORDERS];
    size_t n = pg_rdp_default_orders(orders, PG_RDP_DEFAULT_ORDERS);
    double q = 10.0 / 200.0;
#define BY_HAND(k, out)                                                                            \
    do {                                                                                           \
        ck_assert_int_eq(pg_rdp_compute(q, 1.3, (k), orders, n, rdp, NULL), PG_OK);                \
        for (size_t i_ = 0; i_ < n; i_++) rdp[i_] += orders[i_] / (2.0 * 16.0);                    \
        ck_assert_int_eq(                                                                          \
            pg_rdp_to_dp(orders, rdp, n, 1e-5, PG_RDP_CONV_IMPROVED, &(out), NULL, NULL), PG_OK);  \
    } while (0)
    pg_privacy_plan plan;
    ck_assert_int_eq(m->plan(r, &(pg_job_data){.desc = &desc}, &plan, NULL), PG_OK);
    double want, plain;
    BY_HAND(6, want);
    ck_assert_double_eq_tol(plan.epsilon, want, 1e-12 * want);
    ck_assert_ptr_nonnull(strstr(plan.mechanism, "class_means"));
    ck_assert_int_eq(pg_rdp_epsilon(q, 1.3, 6, 1e-5, PG_RDP_CONV_IMPROVED, &plain, NULL, NULL),
                     PG_OK);
    ck_assert_double_gt(plan.epsilon, plain);
    pg_trainer *t = make_trainer(r, &desc, &ds);
    pg_step_report rep;
    for (long k = 1; k <= 6; k++) {
        ck_assert_int_eq(m->step(t, &rep, NULL), PG_OK);
        BY_HAND((uint64_t)k, want);
        ck_assert_double_eq_tol(rep.epsilon_spent, want, 1e-12 * want);
    }
    ck_assert(rep.done);
    m->destroy(t);
    json_decref(r);
    /* A target covers both: sigma grows, and the job stops at or below it. */
    json_t *a = resolve_ok("{" MODEL ", \"train\": {\"steps\": 40, \"batch_size\": 10},"
                           " \"privacy\": {\"epsilon\": 3, \"delta\": 1e-5}, " CALIB("4") "}",
                           &desc);
    json_t *b = resolve_ok("{" MODEL ", \"train\": {\"steps\": 40, \"batch_size\": 10},"
                           " \"privacy\": {\"epsilon\": 3, \"delta\": 1e-5}}",
                           &desc);
    double sa = pg_spec_num(a, "privacy.noise_multiplier", 0);
    double sb = pg_spec_num(b, "privacy.noise_multiplier", 0);
    ck_assert_double_gt(sa, sb);
    t = make_trainer(a, &desc, &ds);
    do ck_assert_int_eq(m->step(t, &rep, NULL), PG_OK);
    while (!rep.done);
    ck_assert_int_eq(rep.step, 40);
    ck_assert_double_le(rep.epsilon_spent, 3.0);
    ck_assert_double_gt(rep.epsilon_spent, 2.99);
    m->destroy(t);
    json_decref(a), json_decref(b);
    /* A release with too little noise for the target is a field error. */
    pg_spec_errors e;
    json_t *bad =
        pg_test_resolve(m,
                        "{" MODEL ", \"train\": {\"steps\": 40, \"batch_size\": 10},"
                        " \"privacy\": {\"epsilon\": 3, \"delta\": 1e-5}, " CALIB("0.2") "}",
                        &(pg_job_data){.desc = &desc}, &e);
    ck_assert_ptr_null(bad);
    ck_assert(pg_test_has_error(&e, "privacy.epsilon"));
#undef BY_HAND
    pg_dataset_free(&ds);
}
END_TEST

/* The released means travel in the checkpoint: a restore reuses them (no
 * second release), the reloaded snapshot draws the same shifted samples, and
 * a spec that calibrates differently cannot adopt the checkpoint. */
START_TEST(calibration_survives_checkpoints)
{
    pg_threads_set(1);
    pg_dataset ds;
    pg_data_desc desc;
    make_central(200, 0, &ds, &desc);
    const pg_method *m = pg_method_find("dp_sinkhorn");
    const char *fmt = "{" MODEL ", \"train\": {\"steps\": 20, \"batch_size\": 10},"
                      " \"privacy\": {\"noise_multiplier\": 1.2}, \"seed\": 8%s}";
    char text[512];
    snprintf(text, sizeof text, fmt, ", " CALIB("3"));
    json_t *r = resolve_ok(text, &desc);
    pg_trainer *a = make_trainer(r, &desc, &ds);
    pg_step_report rep;
    for (int k = 0; k < 4; k++) ck_assert_int_eq(m->step(a, &rep, NULL), PG_OK);
    unsigned char *bytes;
    size_t len;
    ck_assert_int_eq(m->save(a, &bytes, &len, NULL), PG_OK);
    pg_job_data in = {.desc = &desc, .rows = &ds};
    pg_test_checkpoint_round_trip(m, r, &in, bytes, len, 30, 2, 1);
    pg_snapshot *sa, *sl;
    float xa[60], xl[60];
    ck_assert_int_eq(m->snapshot(a, &sa, NULL), PG_OK);
    ck_assert_int_eq(m->load_snapshot(bytes, len, &sl, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_sample(sa, 30, 5, 0, xa, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_sample(sl, 30, 5, 0, xl, NULL), PG_OK);
    ck_assert_int_eq(memcmp(xa, xl, sizeof xa), 0);
    pg_snapshot_release(sa), pg_snapshot_release(sl);
    /* Without calibration, or with another noise multiplier: refused. */
    const char *others[2] = {"", ", " CALIB("3.5")};
    for (int k = 0; k < 2; k++) {
        snprintf(text, sizeof text, fmt, others[k]);
        json_t *r2 = resolve_ok(text, &desc);
        pg_trainer *c = NULL;
        ck_assert_int_eq(m->restore(r2, &in, 1, bytes, len, &c, NULL), PG_EPRIVACY);
        ck_assert_ptr_null(c);
        json_decref(r2);
    }
    free(bytes);
    /* And a plain checkpoint cannot become a calibrated job. */
    snprintf(text, sizeof text, fmt, "");
    json_t *rp = resolve_ok(text, &desc);
    pg_trainer *p = make_trainer(rp, &desc, &ds), *c = NULL;
    ck_assert_int_eq(m->save(p, &bytes, &len, NULL), PG_OK);
    ck_assert_int_eq(m->restore(r, &in, 1, bytes, len, &c, NULL), PG_EPRIVACY);
    free(bytes);
    m->destroy(a), m->destroy(p);
    json_decref(r), json_decref(rp);
    pg_dataset_free(&ds);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("calib");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, sum_noise_has_the_stated_std);
    tcase_add_test(tc, rows_are_clipped_and_means_clamped);
    tcase_add_test(tc, calibrated_samples_have_the_class_means);
    tcase_add_test(tc, calibration_is_charged);
    tcase_add_test(tc, calibration_survives_checkpoints);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
