#include <jansson.h>
#include <math.h>

#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/data/dataset.h"
#include "engine/data/synth.h"
#include "engine/methods/defaults.h"
#include "engine/methods/method.h"
#include "engine/methods/spec.h"
#include "support/pg_method_test.h"
#include "support/pg_test.h"

static pg_data_desc central(size_t n, size_t d)
{
    return (pg_data_desc){.n = n,
                          .d = d,
                          .ndim = 1,
                          .shape = {d},
                          .lo = -1.5f,
                          .hi = 1.5f,
                          .model = PG_PRIVACY_CENTRAL,
                          .cap_epsilon = 10,
                          .cap_delta = 1e-5};
}

static json_t *ok(const char *method, const char *text, const pg_data_desc *desc)
{
    pg_spec_errors e;
    json_t *r = pg_test_resolve(pg_method_find(method), text, &(pg_job_data){.desc = desc}, &e);
    ck_assert_msg(r != NULL, "%s: %s: %s", method, e.items[0].field, e.items[0].message);
    return r;
}

#define TARGET     "{\"privacy\": {\"epsilon\": 1, \"delta\": 1e-6}"
#define GIVEN_R(r) "{\"privacy\": {\"epsilon\": 1, \"delta\": 1e-6, \"clip_norm\": " #r "}}"

/* dp_sinkhorn: batch clamp(round(sqrt(n) / 4), 8, 32) (never above n), 2000 steps, lr 1e-3, a
 * [64, 64] generator with a d-dimensional latent and a tanh output that
 * generator.h maps onto the declared range; and the plan follows the
 * resolved batch. */
START_TEST(dp_sinkhorn_rule)
{
    const size_t ns[] = {5, 1000, 5000, 12000, 20000, 40000};
    const long want[] = {5, 8, 18, 27, 32, 32};
    for (int i = 0; i < 6; i++) {
        pg_data_desc desc = central(ns[i], 3);
        json_t *r = ok("dp_sinkhorn", TARGET "}", &desc);
        ck_assert_int_eq(pg_spec_int(r, "train.batch_size", 0), want[i]);
        ck_assert_int_eq(pg_spec_int(r, "train.steps", 0), 2000);
        ck_assert_double_eq(pg_spec_num(r, "train.lr", 0), 0.001);
        ck_assert_int_eq(pg_spec_int(r, "model.latent_dim", 0), 3);
        const json_t *h = pg_spec_get(r, "model.hidden");
        ck_assert_int_eq((int)json_array_size(h), 2);
        ck_assert_int_eq((int)json_integer_value(json_array_get(h, 0)), 64);
        ck_assert_str_eq(pg_spec_str(r, "model.out_activation", ""), "tanh");
        pg_privacy_plan plan;
        ck_assert_int_eq(
            pg_method_find("dp_sinkhorn")->plan(r, &(pg_job_data){.desc = &desc}, &plan, NULL),
            PG_OK);
        ck_assert_double_eq_tol(plan.sampling_rate, (double)want[i] / (double)ns[i], 1e-15);
        ck_assert_int_eq(plan.steps, 2000);
        ck_assert(plan.epsilon <= 1.0 && plan.epsilon > 0.99);
        /* A resolved spec re-validates to itself. */
        char *text = json_dumps(r, JSON_COMPACT);
        json_t *again = ok("dp_sinkhorn", text, &desc);
        ck_assert(json_equal(r, again));
        free(text);
        json_decref(again);
        json_decref(r);
    }
}
END_TEST

/* What the user gives wins; wide or image rows keep the table's defaults. */
START_TEST(given_fields_and_big_data_untouched)
{
    pg_data_desc desc = central(5000, 2);
    json_t *r = ok("dp_sinkhorn",
                   TARGET ", \"train\": {\"batch_size\": 50, \"steps\": 300, \"lr\": 0.0001},"
                          " \"model\": {\"hidden\": [32], \"latent_dim\": 7, "
                          "\"out_activation\": \"none\"}}",
                   &desc);
    ck_assert_int_eq(pg_spec_int(r, "train.batch_size", 0), 50);
    ck_assert_int_eq(pg_spec_int(r, "train.steps", 0), 300);
    ck_assert_double_eq(pg_spec_num(r, "train.lr", 0), 0.0001);
    ck_assert_int_eq(pg_spec_int(r, "model.latent_dim", 0), 7);
    ck_assert_str_eq(pg_spec_str(r, "model.out_activation", ""), "none");
    json_decref(r);
    pg_data_desc wide = central(5000, PG_DEFAULTS_SMALL_D + 1);
    r = ok("dp_sinkhorn", TARGET "}", &wide);
    ck_assert_int_eq(pg_spec_int(r, "train.batch_size", 0), 50);
    ck_assert_int_eq(pg_spec_int(r, "train.steps", 0), 1000);
    ck_assert_int_eq(pg_spec_int(r, "model.latent_dim", 0), 32);
    ck_assert_str_eq(pg_spec_str(r, "model.out_activation", ""), "auto");
    json_decref(r);
    pg_data_desc img = central(5000, 784);
    img.ndim = 3, img.shape[0] = 1, img.shape[1] = 28, img.shape[2] = 28;
    ck_assert(!pg_defaults_small(&img));
    img.d = 4, img.shape[1] = 2, img.shape[2] = 2; /* tiny, but still an image */
    ck_assert(!pg_defaults_small(&img));
}
END_TEST

/* entropic_gan on local rows: batch min(256, n); no range scaling (the
 * declared range bounds the noisy rows, not the clean law). */
START_TEST(entropic_gan_rule)
{
    pg_data_desc desc = {.n = 100,
                         .d = 2,
                         .ndim = 1,
                         .shape = {2},
                         .lo = -4,
                         .hi = 4,
                         .model = PG_PRIVACY_LOCAL,
                         .mechanism = PG_LOCAL_LAPLACE,
                         .epsilon = 5,
                         .sensitivity = 2.84,
                         .noise_scale = 0.568};
    json_t *r = ok("entropic_gan", "{}", &desc);
    ck_assert_int_eq(pg_spec_int(r, "train.batch_size", 0), 100);
    ck_assert_int_eq(pg_spec_int(r, "model.latent_dim", 0), 2);
    ck_assert_str_eq(pg_spec_str(r, "model.out_activation", ""), "auto");
    /* [128, 128] on small untyped vectors (README tutorial 1) */
    const json_t *h = pg_spec_get(r, "model.hidden");
    ck_assert_int_eq((int)json_array_size(h), 2);
    ck_assert_int_eq((int)json_integer_value(json_array_get(h, 0)), 128);
    ck_assert_int_eq((int)json_integer_value(json_array_get(h, 1)), 128);
    ck_assert_double_eq(pg_spec_num(r, "train.ema", 0), 0.999);
    json_decref(r);
    r = ok("entropic_gan", "{\"model\": {\"hidden\": [32]}}", &desc); /* given wins */
    ck_assert_int_eq((int)json_array_size(pg_spec_get(r, "model.hidden")), 1);
    json_decref(r);
    desc.n = 5000;
    r = ok("entropic_gan", "{}", &desc);
    ck_assert_int_eq(pg_spec_int(r, "train.batch_size", 0), 256);
    json_decref(r);
}
END_TEST

/* Sliced-Wasserstein methods: one orthonormal block per release (w = 1), clip
 * norm max(|lo|, |hi|) on unlabelled central data, and the plan reaches the
 * target with the sensitivity 2 R sqrt(w) of that R. */
START_TEST(swd_rules)
{
    pg_data_desc desc = central(5000, 3);
    json_t *r = ok("swd_flow", TARGET "}", &desc);
    ck_assert_double_eq(pg_spec_num(r, "privacy.clip_norm", 0), 1.5);
    ck_assert_int_eq(pg_spec_int(r, "projections.per_step", 0), 3);
    ck_assert_int_eq(pg_spec_int(r, "projections.pool", 0), 6);
    ck_assert_int_eq(pg_spec_int(r, "flow.steps", 0), 100);
    json_decref(r);
    r = ok("swd_flow", TARGET ", \"projections\": {\"per_step\": 10}}", &desc);
    ck_assert_int_eq(pg_spec_int(r, "projections.pool", 0), 10);
    json_decref(r);
    r = ok("swd_flow_r", TARGET "}", &desc);
    ck_assert_double_eq(pg_spec_num(r, "privacy.clip_norm", 0), 1.5);
    ck_assert_int_eq(pg_spec_int(r, "projections.per_step", 0), 3);
    ck_assert_int_eq(pg_spec_int(r, "flow.steps", 0), 10);
    ck_assert_double_eq(pg_spec_num(r, "flow.h", 0), 3.0);
    ck_assert_ptr_null(pg_spec_get(r, "train.batch_size"));
    pg_privacy_plan plan_r;
    ck_assert_int_eq(
        pg_method_find("swd_flow_r")->plan(r, &(pg_job_data){.desc = &desc}, &plan_r, NULL), PG_OK);
    ck_assert(plan_r.epsilon <= 1.0 && plan_r.epsilon > 0.999);
    ck_assert_int_eq(plan_r.steps, 10);
    json_decref(r);
    r = ok("swd_gen", TARGET "}", &desc);
    ck_assert_int_eq(pg_spec_int(r, "projections.per_step", 0), 3);
    ck_assert_int_eq(pg_spec_int(r, "train.batch_size", 0), 500);
    ck_assert_int_eq(pg_spec_int(r, "train.steps", 0), 200);
    ck_assert_str_eq(pg_spec_str(r, "model.out_activation", ""), "tanh");
    pg_privacy_plan plan;
    ck_assert_int_eq(pg_method_find("swd_gen")->plan(r, &(pg_job_data){.desc = &desc}, &plan, NULL),
                     PG_OK);
    ck_assert_double_eq_tol(plan.sampling_rate, 0.1, 1e-15);
    ck_assert_double_eq(pg_spec_num(r, "privacy.clip_norm", 0), 1.5);
    json_decref(r);
    /* An off-centre range: R is the largest absolute bound; a given R wins. */
    pg_data_desc off = central(5000, 2);
    off.lo = -0.5f, off.hi = 4.0f;
    const char *const ms[] = {"swd_flow", "swd_flow_r", "swd_gen"};
    for (int i = 0; i < 3; i++) {
        r = ok(ms[i], TARGET "}", &off);
        ck_assert_double_eq(pg_spec_num(r, "privacy.clip_norm", 0), 4.0);
        json_decref(r);
        r = ok(ms[i], GIVEN_R(0.25), &off);
        ck_assert_double_eq(pg_spec_num(r, "privacy.clip_norm", 0), 0.25);
        json_decref(r);
    }
    /* Labelled data keeps the table's R = 1 (its label part is clipped too). */
    pg_data_desc lab = central(5000, 2);
    lab.num_classes = 3;
    r = ok("swd_flow", TARGET "}", &lab);
    ck_assert_double_eq(pg_spec_num(r, "privacy.clip_norm", 0), 1.0);
    json_decref(r);
}
END_TEST

/* The noise of one swd_flow release is S * 2R (one orthonormal block): with
 * the range-derived R the plan still charges exactly the target, and S is
 * the Gaussian mechanism's multiplier for that epsilon, whatever R is. */
START_TEST(swd_clip_rule_keeps_accounting)
{
    pg_data_desc a = central(5000, 2), b = central(5000, 2);
    b.lo = -3.5f, b.hi = 3.5f;
    json_t *ra = ok("swd_flow", TARGET "}", &a), *rb = ok("swd_flow", TARGET "}", &b);
    ck_assert_double_eq(pg_spec_num(rb, "privacy.clip_norm", 0), 3.5);
    pg_privacy_plan pa, pb;
    const pg_method *m = pg_method_find("swd_flow");
    ck_assert_int_eq(m->plan(ra, &(pg_job_data){.desc = &a}, &pa, NULL), PG_OK);
    ck_assert_int_eq(m->plan(rb, &(pg_job_data){.desc = &b}, &pb, NULL), PG_OK);
    ck_assert(pa.epsilon <= 1.0 && pa.epsilon > 0.999);
    ck_assert_double_eq(pa.epsilon, pb.epsilon);
    ck_assert_double_eq(pa.noise_multiplier, pb.noise_multiplier);
    /* the same multiplier as a given-R spec on the table's clip norm */
    json_t *rc = ok("swd_flow", GIVEN_R(1), &b);
    ck_assert_double_eq(pg_spec_num(rc, "privacy.noise_multiplier", 0),
                        pg_spec_num(rb, "privacy.noise_multiplier", 0));
    json_decref(ra);
    json_decref(rb);
    json_decref(rc);
}
END_TEST

/* Trains `method` with its defaults on a central half circle declared on
 * [-1.5, 1.5] at epsilon 1 and checks that a draw stays in the range, from the
 * trainer's snapshot and from one rebuilt from the checkpoint alike. */
static void samples_in_range(const char *method, const char *extra)
{
    size_t n = 1000;
    pg_synth_params sp;
    pg_synth_defaults(PG_SYNTH_HALFCIRCLE, &sp, NULL);
    pg_rng rng;
    pg_rng_seeded(&rng, 5, 0);
    float *x = pg_alloc_f32(n * 2);
    pg_synth_sample(&sp, &rng, n, x, NULL, NULL);
    pg_dataset ds;
    size_t shape[1] = {2};
    ck_assert_int_eq(pg_dataset_adopt(&ds, x, NULL, n, shape, 1, 0, -1.5f, 1.5f, NULL), PG_OK);
    pg_data_desc desc = central(n, 2);
    char text[256];
    snprintf(text, sizeof text, TARGET "%s}", extra);
    json_t *r = ok(method, text, &desc);
    const pg_method *m = pg_method_find(method);
    pg_trainer *t = pg_test_train(m, r, &(pg_job_data){.desc = &desc, .rows = &ds}, NULL);
    pg_error err = {0};
    pg_snapshot *s, *s2;
    unsigned char *bytes;
    size_t len;
    ck_assert_int_eq(m->snapshot(t, &s, NULL), PG_OK);
    ck_assert_int_eq(m->save(t, &bytes, &len, NULL), PG_OK);
    ck_assert_int_eq(m->load_snapshot(bytes, len, &s2, &err), PG_OK);
    size_t k = 3000; /* more than swd_flow's 1000 particles: replayed ones too */
    float *a = pg_alloc_f32(k * 2), *b = pg_alloc_f32(k * 2);
    ck_assert_int_eq(pg_snapshot_sample(s, k, 9, -1, a, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_sample(s2, k, 9, -1, b, NULL), PG_OK);
    for (size_t i = 0; i < k * 2; i++) {
        ck_assert_msg(a[i] >= -1.5f && a[i] <= 1.5f, "%s sample %g outside the range", method,
                      (double)a[i]);
        ck_assert(a[i] == b[i]);
    }
    pg_free(a);
    pg_free(b);
    free(bytes);
    pg_snapshot_release(s);
    pg_snapshot_release(s2);
    m->destroy(t);
    json_decref(r);
    pg_dataset_free(&ds);
}

START_TEST(central_samples_stay_in_range)
{
    pg_threads_set(1);
    samples_in_range("swd_flow", "");
    samples_in_range("swd_flow_r", "");
    samples_in_range("dp_sinkhorn", ", \"train\": {\"steps\": 100}");
    samples_in_range("swd_gen", ", \"train\": {\"steps\": 50}");
}
END_TEST

static Suite *defaults_suite(void)
{
    Suite *s = suite_create("methods/defaults");
    TCase *tc = tcase_create("defaults");
    tcase_add_test(tc, dp_sinkhorn_rule);
    tcase_add_test(tc, given_fields_and_big_data_untouched);
    tcase_add_test(tc, entropic_gan_rule);
    tcase_add_test(tc, swd_rules);
    tcase_add_test(tc, swd_clip_rule_keeps_accounting);
    tcase_add_test(tc, central_samples_stay_in_range);
    tcase_set_timeout(tc, 120);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(defaults_suite)
