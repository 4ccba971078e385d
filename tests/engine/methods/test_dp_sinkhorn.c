#include <jansson.h>

#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/data/dataset.h"
#include "engine/methods/dp_sinkhorn.h"
#include "engine/methods/generator.h"
#include "engine/methods/trainer.h"
#include "engine/ot/sinkhorn.h"
#include "engine/privacy/privacy.h"
#include "support/pg_dps_test.h"
#include "support/pg_method_test.h"
#include "support/pg_test.h"

#define SMALL_MODEL "\"model\": {\"hidden\": [16], \"latent_dim\": 2, \"conditional\": true}"

/* The epsilon reported after every step is the privacy library's accountant
 * for (q, sigma, steps, delta), and the plan charges the same for all steps. */
START_TEST(epsilon_matches_the_accountant)
{
    pg_threads_set(1);
    pg_dataset ds;
    pg_data_desc desc;
    make_central(200, 0, &ds, &desc);
    const pg_method *m = pg_method_find("dp_sinkhorn");
    int row = _i;
    char spec[512];
    snprintf(spec, sizeof spec,
             "{" SMALL_MODEL ", \"train\": {\"steps\": 12, \"batch_size\": 20},"
             " \"dp\": {\"clip\": \"%s\"}, \"privacy\": {\"noise_multiplier\": 1.3}, \"seed\": 4}",
             row ? "row" : "matrix");
    json_t *r = resolve_ok(spec, &desc);
    double q = 20.0 / 200.0, sigma_acc = row ? 1.3 / sqrt(20.0) : 1.3;
    pg_privacy_plan plan;
    ck_assert_int_eq(m->plan(r, &(pg_job_data){.desc = &desc}, &plan, NULL), PG_OK);
    double want;
    ck_assert_int_eq(
        pg_rdp_epsilon(q, sigma_acc, 12, 1e-5, PG_RDP_CONV_IMPROVED, &want, NULL, NULL), PG_OK);
    ck_assert(plan.charges);
    ck_assert_double_eq_tol(plan.noise_multiplier, sigma_acc, 1e-15);
    ck_assert_double_eq_tol(plan.sampling_rate, q, 1e-15);
    ck_assert_double_eq(plan.epsilon, want);
    ck_assert_double_eq(plan.delta, 1e-5);
    pg_trainer *t = make_trainer(r, &desc, &ds);
    pg_step_report rep = {0};
    long k = 0;
    while (!rep.done) {
        ck_assert_int_eq(m->step(t, &rep, NULL), PG_OK);
        k++;
        ck_assert_int_eq(rep.step, k);
        if (k == 1 || k == 5) {
            double e;
            pg_rdp_epsilon(q, sigma_acc, (uint64_t)k, 1e-5, PG_RDP_CONV_IMPROVED, &e, NULL, NULL);
            ck_assert_double_eq(rep.epsilon_spent, e);
        }
    }
    ck_assert_int_eq(k, 12);
    ck_assert_double_eq(rep.epsilon_spent, want);
    /* Stepping past the plan takes no step and spends nothing more. */
    ck_assert_int_eq(m->step(t, &rep, NULL), PG_OK);
    ck_assert(rep.done);
    ck_assert_int_eq(rep.step, 12);
    ck_assert_double_eq(rep.epsilon_spent, want);
    m->destroy(t);
    json_decref(r);
    pg_dataset_free(&ds);
}
END_TEST

static double normal_cdf(double x, void *ctx)
{
    double s = *(double *)ctx;
    return 0.5 * erfc(-x / (s * sqrt(2.0)));
}

/* The released cross term is clip(2 dOT/dX) + N(0, (2 C sigma)^2): with the
 * same inputs the clipped part is deterministic, so output minus the output
 * at negligible noise is the noise itself; its law is checked by KS. */
START_TEST(cross_term_noise_has_the_stated_std)
{
    pg_threads_set(1);
    size_t n = 40, m = 30, d = 100;
    float *x = pg_alloc_f32(n * d), *y = pg_alloc_f32(m * d);
    float *g0 = pg_alloc_f32(n * d), *g1 = pg_alloc_f32(n * d), *g2 = pg_alloc_f32(n * d);
    pg_rng seeded;
    pg_rng_seeded(&seeded, 5, 0);
    for (size_t i = 0; i < n * d; i++) x[i] = (float)pg_rng_normal(&seeded);
    for (size_t i = 0; i < m * d; i++) y[i] = 3.0f + (float)pg_rng_normal(&seeded);
    int32_t xl[40] = {0}, yl[30] = {0};
    pg_ot_ws ws;
    ck_assert_int_eq(pg_ot_ws_init(&ws, n, m, d, NULL), PG_OK);
    pg_ot_cost cost = {.kind = PG_OT_MIXED, .l1_weight = 1.0f, .class_alpha = 0.0f};
    pg_sinkhorn_opts sk = pg_sinkhorn_defaults(0.5f);
    sk.max_iter = 200;
    sk.scaling = 0.7f;
    pg_mat xv = pg_mat_view(x, n, d), yv = pg_mat_view(y, m, d);
    pg_rng sec, sec2;
    ck_assert_int_eq(pg_rng_secure(&sec, NULL), PG_OK);
    ck_assert_int_eq(pg_rng_secure(&sec2, NULL), PG_OK);
    double C = 0.5, sigma = 1.7;
    for (int row = 0; row < 2; row++) {
        /* Almost noiseless: the clipped gradient, norm C (the raw one is far
         * larger: the clouds are 3 apart in 25 dimensions). */
        ck_assert_int_eq(pg_dp_sinkhorn_cross_term(&ws, &cost, &sk, &xv, xl, &yv, yl, C, 1e-12, row,
                                                   &sec, g0, NULL),
                         PG_OK);
        if (!row) {
            double fro = 0;
            for (size_t i = 0; i < n * d; i++) fro += (double)g0[i] * g0[i];
            ck_assert_double_eq_tol(sqrt(fro), C, 1e-5);
        } else {
            for (size_t i = 0; i < n; i++) {
                double s = 0;
                for (size_t k = 0; k < d; k++) s += (double)g0[i * d + k] * g0[i * d + k];
                ck_assert_double_eq_tol(sqrt(s), C, 1e-5);
            }
        }
        ck_assert_int_eq(pg_dp_sinkhorn_cross_term(&ws, &cost, &sk, &xv, xl, &yv, yl, C, sigma, row,
                                                   &sec, g1, NULL),
                         PG_OK);
        ck_assert_int_eq(pg_dp_sinkhorn_cross_term(&ws, &cost, &sk, &xv, xl, &yv, yl, C, sigma, row,
                                                   &sec2, g2, NULL),
                         PG_OK);
        double *noise = malloc(n * d * sizeof(double));
        size_t differ = 0;
        for (size_t i = 0; i < n * d; i++) {
            noise[i] = (double)g1[i] - (double)g0[i];
            differ += g1[i] != g2[i];
        }
        ck_assert_uint_eq(differ, n * d); /* fresh noise every call */
        /* The noise comes from the secure generator: a fresh sample every
         * run, hence the secure-sample threshold (pg_test.h). */
        double std = 2.0 * C * sigma;
        double ks = pg_test_ks(noise, n * d, normal_cdf, &std);
        ck_assert_msg(sqrt((double)(n * d)) * ks < PG_TEST_KS_SECURE, "KS %g",
                      sqrt((double)(n * d)) * ks);
        double var = 0;
        for (size_t i = 0; i < n * d; i++) var += noise[i] * noise[i] / (double)(n * d);
        /* The variance's standard error is sqrt(2 / 4000) = 0.022: 0.1 was
         * 4.5 of them (false alarm 7e-6 per check, two checks a run); 0.14
         * is 6.3 (3e-10) and still rejects a std off by 7 %. */
        ck_assert_double_lt(fabs(var / (std * std) - 1.0), 0.14);
        /* A 50 % wrong std is rejected by the same test (power check): the
         * two CDFs are 0.097 apart, sqrt(4000) * 0.097 = 6.1, so it fails
         * with probability <= 2 exp(-2 * 3.1^2) = 9e-9. */
        double wrong = 1.5 * std;
        ks = pg_test_ks(noise, n * d, normal_cdf, &wrong);
        ck_assert_msg(sqrt((double)(n * d)) * ks > PG_TEST_KS_SECURE, "KS %g",
                      sqrt((double)(n * d)) * ks);
        free(noise);
    }
    /* An empty batch releases pure noise of the same shape and law. */
    pg_mat empty = pg_mat_view(y, 0, d);
    ck_assert_int_eq(pg_dp_sinkhorn_cross_term(&ws, &cost, &sk, &xv, xl, &empty, yl, C, sigma, 0,
                                               &sec, g1, NULL),
                     PG_OK);
    double *noise = malloc(n * d * sizeof(double));
    for (size_t i = 0; i < n * d; i++) noise[i] = g1[i];
    double std = 2.0 * C * sigma;
    ck_assert(sqrt((double)(n * d)) * pg_test_ks(noise, n * d, normal_cdf, &std) <
              PG_TEST_KS_SECURE);
    free(noise);
    /* A seeded generator is refused. */
    ck_assert_int_eq(pg_dp_sinkhorn_cross_term(&ws, &cost, &sk, &xv, xl, &yv, yl, C, sigma, 0,
                                               &seeded, g1, NULL),
                     PG_EPRIVACY);
    pg_ot_ws_free(&ws);
    pg_free(x), pg_free(y), pg_free(g0), pg_free(g1), pg_free(g2);
}
END_TEST

/* Two trainers with the same job seed draw different DP noise (and batches):
 * after one step their generators differ, although they started equal. */
START_TEST(noise_differs_between_runs_with_one_seed)
{
    pg_threads_set(1);
    pg_dataset ds;
    pg_data_desc desc;
    make_central(100, 0, &ds, &desc);
    const pg_method *m = pg_method_find("dp_sinkhorn");
    json_t *r = resolve_ok("{" SMALL_MODEL ", \"train\": {\"steps\": 5, \"batch_size\": 10},"
                           " \"privacy\": {\"noise_multiplier\": 1.0}, \"seed\": 8}",
                           &desc);
    pg_trainer *a = make_trainer(r, &desc, &ds), *b = make_trainer(r, &desc, &ds);
    float sa[20], sb[20];
    pg_snapshot *pa, *pb;
    ck_assert_int_eq(m->snapshot(a, &pa, NULL), PG_OK);
    ck_assert_int_eq(m->snapshot(b, &pb, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_sample(pa, 10, 1, -1, sa, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_sample(pb, 10, 1, -1, sb, NULL), PG_OK);
    ck_assert_int_eq(memcmp(sa, sb, sizeof sa), 0); /* same initialization */
    pg_snapshot_release(pa), pg_snapshot_release(pb);
    pg_step_report rep;
    ck_assert_int_eq(m->step(a, &rep, NULL), PG_OK);
    ck_assert_int_eq(m->step(b, &rep, NULL), PG_OK);
    ck_assert_int_eq(m->snapshot(a, &pa, NULL), PG_OK);
    ck_assert_int_eq(m->snapshot(b, &pb, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_sample(pa, 10, 1, -1, sa, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_sample(pb, 10, 1, -1, sb, NULL), PG_OK);
    ck_assert_int_ne(memcmp(sa, sb, sizeof sa), 0);
    pg_snapshot_release(pa), pg_snapshot_release(pb);
    m->destroy(a), m->destroy(b);
    json_decref(r);
    pg_dataset_free(&ds);
}
END_TEST

/* The Poisson batch size varies (including empty batches); the generated
 * count and the released tensor's shape never do, and every step is charged. */
START_TEST(release_shape_is_independent_of_the_batch)
{
    pg_threads_set(1);
    pg_dataset ds;
    pg_data_desc desc;
    make_central(4, 0, &ds, &desc); /* q = 1/4: P(empty batch) = 0.32 */
    const pg_method *m = pg_method_find("dp_sinkhorn");
    json_t *r = resolve_ok("{" SMALL_MODEL ", \"train\": {\"steps\": 60, \"batch_size\": 1},"
                           " \"ot\": {\"debias_fraction\": 1}, "
                           " \"privacy\": {\"noise_multiplier\": 2.0}, \"seed\": 2}",
                           &desc);
    pg_trainer *t = make_trainer(r, &desc, &ds);
    int seen[5] = {0};
    pg_step_report rep = {0};
    for (long k = 1; k <= 60; k++) {
        ck_assert_int_eq(m->step(t, &rep, NULL), PG_OK);
        pg_dp_sinkhorn_info info;
        ck_assert_int_eq(pg_dp_sinkhorn_info_get(t, &info, NULL), PG_OK);
        ck_assert_uint_le(info.real_rows, 4);
        seen[info.real_rows]++;
        ck_assert_uint_eq(info.generated_rows, 2);
        ck_assert_uint_eq(info.released_rows, 1);
        ck_assert_uint_eq(info.released_cols, 2);
        ck_assert_int_eq(info.steps_done, k);
    }
    double e; /* every step was charged, empty batches included */
    pg_rdp_epsilon(0.25, 2.0, 60, 1e-5, PG_RDP_CONV_IMPROVED, &e, NULL, NULL);
    ck_assert_double_eq(rep.epsilon_spent, e);
    ck_assert_int_gt(seen[0], 0);
    ck_assert_int_gt(seen[1], 0);
    ck_assert_int_gt(seen[2] + seen[3] + seen[4], 0);
    pg_trainer other = {.method = pg_method_find("entropic_gan")};
    pg_dp_sinkhorn_info none;
    ck_assert_int_eq(pg_dp_sinkhorn_info_get(&other, &none, NULL), PG_EINVAL);
    m->destroy(t);
    json_decref(r);
    pg_dataset_free(&ds);
}
END_TEST

/* A target (epsilon, delta) calibrates sigma for the planned steps; the job
 * ends at or below the target. If the step count is raised behind the
 * validator's back, the trainer still stops before exceeding the target. */
START_TEST(target_epsilon_is_never_exceeded)
{
    pg_threads_set(1);
    pg_dataset ds;
    pg_data_desc desc;
    make_central(200, 0, &ds, &desc);
    const pg_method *m = pg_method_find("dp_sinkhorn");
    json_t *r = resolve_ok("{" SMALL_MODEL ", \"train\": {\"steps\": 30, \"batch_size\": 20},"
                           " \"privacy\": {\"epsilon\": 2, \"delta\": 1e-6}, \"seed\": 1}",
                           &desc);
    double sigma =
        json_real_value(json_object_get(json_object_get(r, "privacy"), "noise_multiplier"));
    double want_sigma;
    pg_rdp_calibrate_sigma(2, 1e-6, 0.1, 30, PG_RDP_CONV_IMPROVED, &want_sigma, NULL);
    ck_assert_double_eq(sigma, want_sigma);
    pg_privacy_plan plan;
    ck_assert_int_eq(m->plan(r, &(pg_job_data){.desc = &desc}, &plan, NULL), PG_OK);
    ck_assert_double_le(plan.epsilon, 2.0);
    ck_assert_double_eq(plan.delta, 1e-6);
    /* The resolved spec re-validates to itself. */
    char *text = json_dumps(r, 0);
    json_t *r2 = resolve_ok(text, &desc);
    free(text);
    ck_assert(json_equal(r, r2));
    json_decref(r2);

    json_object_set_new(json_object_get(r, "train"), "steps", json_integer(90));
    pg_trainer *t = make_trainer(r, &desc, &ds);
    pg_step_report rep = {0};
    long k = 0;
    while (!rep.done && k < 200) {
        ck_assert_int_eq(m->step(t, &rep, NULL), PG_OK);
        k++;
    }
    ck_assert_double_le(rep.epsilon_spent, 2.0);
    ck_assert_int_ge(rep.step, 30);
    ck_assert_int_lt(rep.step, 90);
    double next;
    pg_rdp_epsilon(0.1, sigma, (uint64_t)rep.step + 1, 1e-6, PG_RDP_CONV_IMPROVED, &next, NULL,
                   NULL);
    ck_assert_double_gt(next, 2.0); /* it stopped exactly at the last allowed step */
    long stopped = rep.step;
    ck_assert_int_eq(m->step(t, &rep, NULL), PG_OK);
    ck_assert(rep.done);
    ck_assert_int_eq(rep.step, stopped);
    m->destroy(t);
    json_decref(r);
    pg_dataset_free(&ds);
}
END_TEST

START_TEST(validation_names_the_field)
{
    pg_dataset ds;
    pg_data_desc desc;
    make_central(100, 0, &ds, &desc);
    pg_spec_errors e;
    json_t *r;
    /* No target: the error names privacy.epsilon (one vocabulary). */
    ck_assert_ptr_null(r = resolve("{}", &desc, &e));
    ck_assert(pg_test_has_error(&e, "privacy.epsilon"));
    ck_assert_ptr_null(r = resolve("{\"privacy\": {}}", &desc, &e));
    ck_assert(pg_test_has_error(&e, "privacy.epsilon"));
    ck_assert_ptr_null(r = resolve("{\"privacy\": {\"delta\": 1e-6}}", &desc, &e));
    ck_assert(pg_test_has_error(&e, "privacy.epsilon"));
    /* epsilon alone: delta is the dataset's cap delta, written into the spec */
    r = resolve("{\"privacy\": {\"epsilon\": 1}}", &desc, &e);
    ck_assert_ptr_nonnull(r);
    ck_assert_double_eq(pg_spec_num(r, "privacy.delta", 0), desc.cap_delta);
    json_decref(r);
    ck_assert_ptr_null(r = resolve("{\"privacy\": {\"epsilon\": 0, \"delta\": 1e-6}}", &desc, &e));
    ck_assert(pg_test_has_error(&e, "privacy.epsilon"));
    ck_assert_ptr_null(r = resolve("{\"privacy\": {\"epsilon\": 1, \"delta\": 1e-3}}", &desc, &e));
    ck_assert(pg_test_has_error(&e, "privacy.delta")); /* above the cap delta */
    ck_assert_ptr_null(
        r = resolve("{\"privacy\": {\"epsilon\": 1, \"delta\": 1e-6, \"noise_multiplier\": 0.3},"
                    " \"train\": {\"batch_size\": 10}}",
                    &desc, &e));
    ck_assert(pg_test_has_error(&e, "privacy.noise_multiplier"));
    ck_assert_ptr_null(
        r = resolve("{\"privacy\": {\"noise_multiplier\": 1, \"sigma\": 2}}", &desc, &e));
    ck_assert(pg_test_has_error(&e, "privacy.sigma"));
    ck_assert_ptr_null(r = resolve("{\"privacy\": {\"noise_multiplier\": 1},"
                                   " \"train\": {\"batch_size\": 101}}",
                                   &desc, &e));
    ck_assert(pg_test_has_error(&e, "train.batch_size"));
    ck_assert_ptr_null(
        r = resolve("{\"privacy\": {\"noise_multiplier\": 1}, \"dp\": {\"clip_norm\": 0}}", &desc,
                    &e));
    ck_assert(pg_test_has_error(&e, "dp.clip_norm"));
    ck_assert_ptr_null(
        r = resolve("{\"privacy\": {\"noise_multiplier\": 1}, \"ot\": {\"cost\": \"l1\"}}", &desc,
                    &e));
    ck_assert(pg_test_has_error(&e, "ot.cost"));
    /* A job that alone exceeds the dataset's cap epsilon is refused. */
    pg_data_desc capped = desc;
    capped.cap_epsilon = 1.0;
    ck_assert_ptr_null(r = resolve("{\"privacy\": {\"noise_multiplier\": 0.5}}", &capped, &e));
    ck_assert(pg_test_has_error(&e, "privacy.noise_multiplier"));
    ck_assert_ptr_null(
        r = resolve("{\"privacy\": {\"epsilon\": 3, \"delta\": 1e-6}}", &capped, &e));
    ck_assert(pg_test_has_error(&e, "privacy.epsilon"));
    /* Local (already privatized) data is entropic_gan's, not ours. */
    pg_data_desc local = desc;
    local.model = PG_PRIVACY_LOCAL;
    ck_assert_ptr_null(r = resolve("{\"privacy\": {\"noise_multiplier\": 1}}", &local, &e));
    ck_assert(pg_test_has_error(&e, "dataset_id"));
    pg_data_desc pub = desc;
    pub.model = PG_PRIVACY_PUBLIC;
    ck_assert_ptr_null(r = resolve("{\"privacy\": {\"noise_multiplier\": 1}}", &pub, &e));
    ck_assert(pg_test_has_error(&e, "dataset_id"));
    /* No delta anywhere: sigma alone needs the dataset's cap delta. */
    pg_data_desc nodelta = desc;
    nodelta.cap_delta = 0;
    ck_assert_ptr_null(r = resolve("{\"privacy\": {\"noise_multiplier\": 1}}", &nodelta, &e));
    ck_assert(pg_test_has_error(&e, "privacy.delta"));
    ck_assert_ptr_null(r = resolve("{\"privacy\": {\"epsilon\": 1}}", &nodelta, &e));
    ck_assert(pg_test_has_error(&e, "privacy.delta"));
    /* An image generator for 2-D rows. */
    ck_assert_ptr_null(r = resolve("{\"privacy\": {\"noise_multiplier\": 1},"
                                   " \"model\": {\"arch\": \"dcgan28\"}}",
                                   &desc, &e));
    ck_assert(pg_test_has_error(&e, "model.arch"));
    /* The resolved spec records the defaults actually run. */
    r = resolve_ok("{\"privacy\": {\"noise_multiplier\": 1}}", &desc);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(r, "dp"), "clip")),
                     "matrix");
    ck_assert_double_eq(json_real_value(json_object_get(json_object_get(r, "dp"), "clip_norm")),
                        0.5);
    json_decref(r);
    pg_dataset_free(&ds);
}
END_TEST

/* Restore keeps the step count, the privacy state and the parameters (DP
 * noise is never reproducible, so continuation is not bitwise). */
START_TEST(restore_keeps_steps_accounting_and_parameters)
{
    pg_threads_set(1);
    pg_dataset ds;
    pg_data_desc desc;
    make_central(100, 0, &ds, &desc);
    const pg_method *m = pg_method_find("dp_sinkhorn");
    json_t *r = resolve_ok("{" SMALL_MODEL ", \"train\": {\"steps\": 20, \"batch_size\": 10,"
                           " \"optimizer\": \"adamw\"},"
                           " \"privacy\": {\"noise_multiplier\": 1.2}, \"seed\": 6}",
                           &desc);
    pg_trainer *a = make_trainer(r, &desc, &ds);
    pg_step_report rep;
    for (int k = 0; k < 7; k++) ck_assert_int_eq(m->step(a, &rep, NULL), PG_OK);
    unsigned char *bytes;
    size_t len;
    ck_assert_int_eq(m->save(a, &bytes, &len, NULL), PG_OK);
    pg_trainer *b;
    pg_error err = {0};
    ck_assert_msg(
        m->restore(r, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, bytes, len, &b, &err) == PG_OK,
        "%s", err.msg);
    pg_dp_sinkhorn_info ia, ib;
    pg_dp_sinkhorn_info_get(a, &ia, NULL);
    pg_dp_sinkhorn_info_get(b, &ib, NULL);
    ck_assert_int_eq(ib.steps_done, 7);
    ck_assert_double_eq(ib.noise_multiplier, ia.noise_multiplier);
    pg_snapshot *sa, *sb, *sl;
    float xa[40], xb[40], xl[40];
    ck_assert_int_eq(m->snapshot(a, &sa, NULL), PG_OK);
    ck_assert_int_eq(m->snapshot(b, &sb, NULL), PG_OK);
    ck_assert_int_eq(m->load_snapshot(bytes, len, &sl, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_step(sl), 7);
    pg_snapshot_sample(sa, 20, 3, 1, xa, NULL);
    pg_snapshot_sample(sb, 20, 3, 1, xb, NULL);
    pg_snapshot_sample(sl, 20, 3, 1, xl, NULL);
    ck_assert_int_eq(memcmp(xa, xb, sizeof xa), 0);
    ck_assert_int_eq(memcmp(xa, xl, sizeof xa), 0);
    pg_snapshot_release(sa), pg_snapshot_release(sb), pg_snapshot_release(sl);
    /* The resumed job charges from step 8 on, up to its plan. */
    ck_assert_int_eq(m->step(b, &rep, NULL), PG_OK);
    ck_assert_int_eq(rep.step, 8);
    double e;
    pg_rdp_epsilon(0.1, 1.2, 8, 1e-5, PG_RDP_CONV_IMPROVED, &e, NULL, NULL);
    ck_assert_double_eq(rep.epsilon_spent, e);
    long k = 8;
    while (!rep.done) {
        ck_assert_int_eq(m->step(b, &rep, NULL), PG_OK);
        k++;
    }
    ck_assert_int_eq(k, 20);
    /* A spec that would account differently cannot adopt this checkpoint. */
    json_t *r2 = resolve_ok("{" SMALL_MODEL ", \"train\": {\"steps\": 20, \"batch_size\": 10,"
                            " \"optimizer\": \"adamw\"},"
                            " \"privacy\": {\"noise_multiplier\": 2.5}, \"seed\": 6}",
                            &desc);
    pg_trainer *c = NULL;
    ck_assert_int_eq(
        m->restore(r2, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, bytes, len, &c, NULL),
        PG_EPRIVACY);
    ck_assert_ptr_null(c);
    bytes[len / 2] ^= 0x10;
    ck_assert_int_ne(
        m->restore(r, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, bytes, len, &c, NULL), PG_OK);
    free(bytes);
    m->destroy(a), m->destroy(b);
    json_decref(r), json_decref(r2);
    pg_dataset_free(&ds);
}
END_TEST

/* The served average is the stated recurrence (brute force in double), the
 * training network is left untouched by a snapshot, and the average, not the
 * last iterate, is what an averaged snapshot samples. */
START_TEST(parameter_average_is_the_recurrence)
{
    pg_nn *net = NULL;
    ck_assert_int_eq(pg_nn_create_preset("mlp", "{\"latent\": 2, \"hidden\": [8], \"out\": 2}", 4,
                                         3, &net, NULL),
                     PG_OK);
    size_t n = pg_nn_param_count(net);
    float *p = pg_nn_params(net);
    double *want = malloc(n * sizeof(double));
    for (size_t i = 0; i < n; i++) want[i] = p[i];
    pg_generator_ema e;
    const double decay = 0.95;
    ck_assert_int_eq(pg_generator_ema_init(&e, 1.5, net, NULL), PG_EINVAL);
    ck_assert_int_eq(pg_generator_ema_init(&e, decay, net, NULL), PG_OK);
    for (int t = 1; t <= 200; t++) {
        for (size_t i = 0; i < n; i++) p[i] = (float)sin(0.01 * (double)(t * (int)(i + 1)));
        pg_generator_ema_update(&e, net);
        double b = fmin(decay, (1.0 + t) / (10.0 + t));
        for (size_t i = 0; i < n; i++) want[i] = b * want[i] + (1 - b) * p[i];
    }
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(fabs(e.avg[i] - want[i]) < 1e-5, "param %zu: %g vs %g", i, e.avg[i], want[i]);
    pg_generator g = {.arch = "mlp",
                      .latent = {.kind = PG_NN_LATENT_UNIFORM, .a = -1, .b = 1},
                      .latent_dim = 2,
                      .d = 2,
                      .out_scale = 1.0f};
    float before[256], avg_out[40], last_out[40], ref_out[40];
    ck_assert_uint_le(n, 256);
    memcpy(before, p, n * sizeof(float));
    pg_snapshot *sa, *sl, *sr;
    ck_assert_int_eq(pg_generator_ema_snapshot(&e, &g, net, 200, &sa, NULL), PG_OK);
    ck_assert_int_eq(memcmp(before, p, n * sizeof(float)), 0);
    ck_assert_int_eq(pg_generator_snapshot(&g, net, 200, &sl, NULL), PG_OK);
    memcpy(p, e.avg, n * sizeof(float));
    ck_assert_int_eq(pg_generator_snapshot(&g, net, 200, &sr, NULL), PG_OK);
    pg_snapshot_sample(sa, 20, 5, -1, avg_out, NULL);
    pg_snapshot_sample(sl, 20, 5, -1, last_out, NULL);
    pg_snapshot_sample(sr, 20, 5, -1, ref_out, NULL);
    ck_assert_int_eq(memcmp(avg_out, ref_out, sizeof avg_out), 0);
    ck_assert_int_ne(memcmp(avg_out, last_out, sizeof avg_out), 0);
    pg_snapshot_release(sa), pg_snapshot_release(sl), pg_snapshot_release(sr);
    pg_generator_ema_free(&e);
    free(want);
    pg_nn_free(net);
}
END_TEST

/* With averaging on, a checkpoint carries the average: the restored trainer
 * and the snapshot rebuilt without data both serve it, and a hostile average
 * is refused. */
START_TEST(parameter_average_survives_checkpoints)
{
    pg_threads_set(1);
    pg_dataset ds;
    pg_data_desc desc;
    make_central(100, 0, &ds, &desc);
    const pg_method *m = pg_method_find("dp_sinkhorn");
    const char *common = SMALL_MODEL ", \"privacy\": {\"noise_multiplier\": 1.2}, \"seed\": 6";
    char text[512];
    snprintf(text, sizeof text,
             "{%s, \"train\": {\"steps\": 20, \"batch_size\": 10, "
             "\"ema\": 0.9}}",
             common);
    json_t *r = resolve_ok(text, &desc);
    snprintf(text, sizeof text, "{%s, \"train\": {\"steps\": 20, \"batch_size\": 10, \"ema\": 0}}",
             common);
    json_t *r0 = resolve_ok(text, &desc);
    pg_trainer *a = make_trainer(r, &desc, &ds), *a0 = make_trainer(r0, &desc, &ds);
    pg_step_report rep;
    for (int k = 0; k < 9; k++) ck_assert_int_eq(m->step(a, &rep, NULL), PG_OK);
    unsigned char *bytes;
    size_t len;
    ck_assert_int_eq(m->save(a, &bytes, &len, NULL), PG_OK);
    pg_trainer *b = NULL;
    pg_error err = {0};
    ck_assert_msg(
        m->restore(r, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, bytes, len, &b, &err) == PG_OK,
        "%s", err.msg);
    pg_snapshot *sa, *sb, *sl;
    float xa[40], xb[40], xl[40];
    ck_assert_int_eq(m->snapshot(a, &sa, NULL), PG_OK);
    ck_assert_int_eq(m->snapshot(b, &sb, NULL), PG_OK);
    ck_assert_int_eq(m->load_snapshot(bytes, len, &sl, NULL), PG_OK);
    pg_snapshot_sample(sa, 20, 3, 1, xa, NULL);
    pg_snapshot_sample(sb, 20, 3, 1, xb, NULL);
    pg_snapshot_sample(sl, 20, 3, 1, xl, NULL);
    ck_assert_int_eq(memcmp(xa, xb, sizeof xa), 0);
    ck_assert_int_eq(memcmp(xa, xl, sizeof xa), 0);
    pg_snapshot_release(sa), pg_snapshot_release(sb), pg_snapshot_release(sl);
    /* The restored average keeps its update count: one more identical
     * update on both sides keeps them equal. */
    pg_dp_sinkhorn_info ib;
    pg_dp_sinkhorn_info_get(b, &ib, NULL);
    ck_assert_int_eq(ib.steps_done, 9);
    /* A checkpoint of a job without averaging restores into an averaged one
     * with the average restarted at the parameters (same samples). */
    unsigned char *bytes0;
    size_t len0;
    for (int k = 0; k < 3; k++) ck_assert_int_eq(m->step(a0, &rep, NULL), PG_OK);
    ck_assert_int_eq(m->save(a0, &bytes0, &len0, NULL), PG_OK);
    pg_trainer *c = NULL;
    ck_assert_int_eq(
        m->restore(r, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, bytes0, len0, &c, &err),
        PG_OK);
    ck_assert_int_eq(m->snapshot(a0, &sa, NULL), PG_OK);
    ck_assert_int_eq(m->snapshot(c, &sb, NULL), PG_OK);
    pg_snapshot_sample(sa, 20, 3, 0, xa, NULL);
    pg_snapshot_sample(sb, 20, 3, 0, xb, NULL);
    ck_assert_int_eq(memcmp(xa, xb, sizeof xa), 0);
    pg_snapshot_release(sa), pg_snapshot_release(sb);
    /* A non-finite average is refused by restore and by load_snapshot. */
    pg_ckpt ck;
    ck_assert_int_eq(pg_ckpt_decode(bytes, len, &ck, NULL), PG_OK);
    pg_ckpt_tensor *t = NULL;
    for (size_t i = 0; i < ck.n; i++)
        if (strcmp(ck.tensors[i].name, PG_GENERATOR_EMA_TENSOR) == 0) t = &ck.tensors[i];
    ck_assert_ptr_nonnull(t);
    ((float *)t->data)[0] = NAN;
    unsigned char *bad;
    size_t badlen;
    ck_assert_int_eq(pg_ckpt_encode(ck.header, ck.tensors, ck.n, &bad, &badlen, NULL), PG_OK);
    pg_trainer *d = NULL;
    ck_assert_int_eq(
        m->restore(r, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, bad, badlen, &d, NULL),
        PG_EFORMAT);
    ck_assert_ptr_null(d);
    ck_assert_int_eq(m->load_snapshot(bad, badlen, &sl, NULL), PG_EFORMAT);
    free(bad);
    pg_ckpt_free(&ck);
    free(bytes), free(bytes0);
    m->destroy(a), m->destroy(a0), m->destroy(b), m->destroy(c);
    json_decref(r), json_decref(r0);
    pg_dataset_free(&ds);
}
END_TEST

/* The method learns at small scale with a generous budget: a conditional
 * generator starting near the origin moves each class onto its blob, with
 * uniform (loop 0) and balanced (loop 1) generated labels. */
START_TEST(learns_class_conditional_blobs)
{
    pg_threads_set(1);
    pg_dataset ds;
    pg_data_desc desc;
    make_central(2000, 2.0f, &ds, &desc); /* blobs at (0, 2) and (4, 4) */
    const pg_method *m = pg_method_find("dp_sinkhorn");
    char text[600];
    snprintf(text, sizeof text,
             "{\"model\": {\"hidden\": [32, 32], \"latent_dim\": 2, \"conditional\": true},"
             " \"train\": {\"steps\": 400, \"batch_size\": 100, \"lr\": 0.01,"
             " \"generated_labels\": \"%s\"},"
             " \"ot\": {\"reg\": 0.1, \"class_alpha\": 5}, \"dp\": {\"clip_norm\": 1},"
             " \"privacy\": {\"noise_multiplier\": 0.05}, \"seed\": 12}",
             _i ? "balanced" : "uniform");
    json_t *r = resolve_ok(text, &desc);
    pg_trainer *t = make_trainer(r, &desc, &ds);
    pg_step_report rep = {0};
    pg_error err = {0};
    while (!rep.done) ck_assert_msg(m->step(t, &rep, &err) == PG_OK, "%s", err.msg);
    pg_snapshot *s;
    ck_assert_int_eq(m->snapshot(t, &s, NULL), PG_OK);
    const float want[2][2] = {{0.0f, 2.0f}, {4.0f, 4.0f}};
    for (int c = 0; c < 2; c++) {
        float pts[400];
        ck_assert_int_eq(pg_snapshot_sample(s, 200, 7, c, pts, NULL), PG_OK);
        double mx = 0, my = 0;
        for (int i = 0; i < 200; i++) mx += pts[2 * i] / 200.0, my += pts[2 * i + 1] / 200.0;
        double dist = hypot(mx - want[c][0], my - want[c][1]);
        ck_assert_msg(dist < 0.7, "class %d mean (%.2f, %.2f), %.2f from its blob", c, mx, my,
                      dist);
    }
    pg_snapshot_release(s);
    m->destroy(t);
    json_decref(r);
    pg_dataset_free(&ds);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("dp_sinkhorn");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, epsilon_matches_the_accountant, 0, 2);
    tcase_add_test(tc, cross_term_noise_has_the_stated_std);
    tcase_add_test(tc, noise_differs_between_runs_with_one_seed);
    tcase_add_test(tc, release_shape_is_independent_of_the_batch);
    tcase_add_test(tc, target_epsilon_is_never_exceeded);
    tcase_add_test(tc, validation_names_the_field);
    tcase_add_test(tc, restore_keeps_steps_accounting_and_parameters);
    tcase_add_test(tc, parameter_average_is_the_recurrence);
    tcase_add_test(tc, parameter_average_survives_checkpoints);
    suite_add_tcase(s, tc);
    /* 400 steps each: about 1 s on an idle machine. With 8 busy loops on
     * the 2 cores (load 13) the whole suite took 15-78 s (median 41 s, 30
     * runs), nearly all of it here, so the former 60 s per test was within
     * reach of a busy CI host. 150 s is 4 times the worst seen. */
    TCase *learn = tcase_create("learn");
    tcase_set_timeout(learn, 150);
    tcase_add_loop_test(learn, learns_class_conditional_blobs, 0, 2);
    suite_add_tcase(s, learn);
    return s;
}

PG_TEST_MAIN(suite)
