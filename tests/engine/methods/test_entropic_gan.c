#include <jansson.h>

#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/data/dataset.h"
#include "engine/data/synth.h"
#include "engine/eval/arc.h"
#include "engine/methods/method.h"
#include "support/pg_method_test.h"
#include "support/pg_test.h"

/* A Laplace-privatized half circle: epsilon = 5 with l1 sensitivity 2, as in
 * paper 000 section IV-A, so s = 0.4 per coordinate. */
static void make_local(size_t n, pg_dataset *ds, pg_data_desc *desc, int gaussian)
{
    pg_synth_params sp;
    pg_synth_defaults(PG_SYNTH_HALFCIRCLE, &sp, NULL);
    pg_rng r;
    pg_rng_seeded(&r, 77, 0);
    float *x = pg_alloc_f32(n * 2);
    pg_synth_sample(&sp, &r, n, x, NULL, NULL);
    double s = gaussian ? 1.28 : 0.4;
    for (size_t i = 0; i < n * 2; i++)
        x[i] += (float)(gaussian ? s * pg_rng_normal(&r) : pg_rng_laplace(&r, s));
    pg_test_local_laplace_2d(x, n, -1e30f, 1e30f, ds, desc);
    if (gaussian) { /* the same epsilon 5 through the Gaussian mechanism */
        desc->mechanism = PG_LOCAL_GAUSSIAN;
        desc->delta = 1e-4;
        desc->sensitivity = 1.4142135623730951;
        desc->noise_scale = s;
    }
}

static json_t *resolve(const pg_method *m, const char *text, const pg_data_desc *desc,
                       pg_spec_errors *e)
{
    return pg_test_resolve(m, text, &(pg_job_data){.desc = desc}, e);
}

static double train_and_score(const char *spec_text, const pg_dataset *ds, const pg_data_desc *desc)
{
    const pg_method *m = pg_method_find("entropic_gan");
    pg_spec_errors e;
    json_t *r = resolve(m, spec_text, desc, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    pg_trainer *t = pg_test_train(m, r, &(pg_job_data){.desc = desc, .rows = ds}, NULL);
    pg_snapshot *snap;
    ck_assert_int_eq(m->snapshot(t, &snap, NULL), PG_OK);
    float *pts = pg_alloc_f32(2000 * 2);
    ck_assert_int_eq(pg_snapshot_sample(snap, 2000, 5, -1, pts, NULL), PG_OK);
    pg_arc_stats st;
    ck_assert_int_eq(pg_arc_stats_compute(pts, 2000, 0.1, &st, NULL), PG_OK);
    pg_free(pts);
    pg_snapshot_release(snap);
    m->destroy(t);
    json_decref(r);
    return st.mean_distance;
}

/* The method's central claim at small scale: trained on Laplace-privatized
 * points, the entropic model lands much closer to the clean arc than the
 * privatized data, and than the nearly unregularized baseline trained on the
 * same data with the same seed (which learns the noisy law). */
START_TEST(recovers_the_arc_from_laplace_data)
{
    pg_threads_set(1);
    pg_dataset ds;
    pg_data_desc desc;
    make_local(3000, &ds, &desc, 0);
    pg_arc_stats data;
    pg_arc_stats_compute(ds.x, ds.n, 0.1, &data, NULL);
    const char *base = "{\"model\": {\"latent_dim\": 2, \"hidden\": [64, 64]},"
                       " \"train\": {\"steps\": 1000, \"batch_size\": 128},"
                       " \"ot\": {\"reg\": %s, \"max_iter\": 60}, \"seed\": 3}";
    char spec[512];
    snprintf(spec, sizeof spec, base, "\"auto\"");
    double entropic = train_and_score(spec, &ds, &desc);
    snprintf(spec, sizeof spec, base, "\"tiny\"");
    double tiny = train_and_score(spec, &ds, &desc);
    /* Observed: data 0.43, entropic about 0.09, tiny about 0.37. */
    ck_assert_msg(entropic < 0.4 * data.mean_distance, "entropic %.3f vs data %.3f", entropic,
                  data.mean_distance);
    ck_assert_msg(entropic < 0.5 * tiny, "entropic %.3f vs tiny %.3f", entropic, tiny);
    pg_dataset_free(&ds);
}
END_TEST

static unsigned char *run_steps(const pg_method *m, pg_trainer *t, long k, size_t *len)
{
    pg_step_report rep;
    for (long i = 0; i < k; i++) ck_assert_int_eq(m->step(t, &rep, NULL), PG_OK);
    unsigned char *bytes;
    ck_assert_int_eq(m->save(t, &bytes, len, NULL), PG_OK);
    return bytes;
}

/* Checkpoint -> restore -> continue reproduces the uninterrupted run exactly:
 * the state saved after 2 x 15 steps is byte-identical either way (under a
 * cosine learning-rate decay too: the rate follows the step; and the
 * parameter average the snapshots serve is saved and restored with it). */
START_TEST(resume_continues_exactly)
{
    pg_threads_set(2);
    pg_dataset ds;
    pg_data_desc desc;
    make_local(500, &ds, &desc, _i);
    const pg_method *m = pg_method_find("entropic_gan");
    pg_spec_errors e;
    json_t *r =
        resolve(m,
                "{\"model\": {\"hidden\": [32, 32], \"batchnorm\": true},"
                " \"train\": {\"steps\": 100, \"batch_size\": 64, \"optimizer\": \"rmsprop\","
                " \"lr_decay\": \"cosine\", \"ema\": 0.99},"
                " \"seed\": 11}",
                &desc, &e);
    ck_assert_ptr_nonnull(r);
    pg_trainer *a, *b;
    ck_assert_int_eq(m->create(r, &(pg_job_data){.desc = &desc, .rows = &ds}, 2, &a, NULL), PG_OK);
    size_t len_mid, len_a, len_b;
    unsigned char *mid = run_steps(m, a, 15, &len_mid);
    unsigned char *end_a = run_steps(m, a, 15, &len_a);
    pg_error err = {0};
    ck_assert_msg(m->restore(r, &(pg_job_data){.desc = &desc, .rows = &ds}, 2, mid, len_mid, &b,
                             &err) == PG_OK,
                  "%s", err.msg);
    unsigned char *end_b = run_steps(m, b, 15, &len_b);
    ck_assert_uint_eq(len_a, len_b);
    ck_assert_int_eq(memcmp(end_a, end_b, len_a), 0);
    /* A served snapshot rebuilt from the checkpoint samples like the live one. */
    pg_snapshot *live, *loaded;
    ck_assert_int_eq(m->snapshot(b, &live, NULL), PG_OK);
    ck_assert_int_eq(m->load_snapshot(end_b, len_b, &loaded, &err), PG_OK);
    ck_assert_int_eq(pg_snapshot_step(loaded), 30);
    float s1[64], s2[64];
    ck_assert_int_eq(pg_snapshot_sample(live, 32, 9, -1, s1, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_sample(loaded, 32, 9, -1, s2, NULL), PG_OK);
    ck_assert_int_eq(memcmp(s1, s2, sizeof s1), 0);
    /* Corrupt checkpoints are refused. */
    end_b[len_b / 2] ^= 0x40;
    pg_trainer *c;
    ck_assert_int_ne(
        m->restore(r, &(pg_job_data){.desc = &desc, .rows = &ds}, 2, end_b, len_b, &c, NULL),
        PG_OK);
    pg_snapshot_release(live);
    pg_snapshot_release(loaded);
    free(mid), free(end_a), free(end_b);
    m->destroy(a);
    m->destroy(b);
    json_decref(r);
    pg_dataset_free(&ds);
}
END_TEST

START_TEST(validation_names_the_field)
{
    pg_dataset ds;
    pg_data_desc desc;
    make_local(100, &ds, &desc, 1); /* Gaussian-privatized */
    const pg_method *m = pg_method_find("entropic_gan");
    pg_spec_errors e;
    json_t *r;
    ck_assert_ptr_null(r = resolve(m, "{\"ot\": {\"p\": 1}}", &desc, &e));
    ck_assert(pg_test_has_error(&e, "ot.p"));
    ck_assert_ptr_null(r = resolve(m, "{\"ot\": {\"reg\": 0}}", &desc, &e));
    ck_assert(pg_test_has_error(&e, "ot.reg"));
    ck_assert_ptr_null(r = resolve(m, "{\"ot\": {\"reg\": -1}}", &desc, &e));
    ck_assert(pg_test_has_error(&e, "ot.reg"));
    ck_assert_ptr_null(r = resolve(m, "{\"train\": {\"batch_size\": 101}}", &desc, &e));
    ck_assert(pg_test_has_error(&e, "train.batch_size"));
    ck_assert_ptr_null(r = resolve(m, "{\"model\": {\"conditional\": true}}", &desc, &e));
    ck_assert(pg_test_has_error(&e, "model.conditional"));
    ck_assert_ptr_null(r = resolve(m, "{\"privacy\": {\"epsilon\": 1}}", &desc, &e));
    ck_assert(pg_test_has_error(&e, "privacy"));
    ck_assert_ptr_null(r = resolve(m, "{\"model\": {\"arch\": \"dcgan28\"}}", &desc, &e));
    ck_assert(pg_test_has_error(&e, "model.arch"));
    ck_assert_ptr_null(r = resolve(m, "{\"train\": {\"lr_decay\": \"step\"}}", &desc, &e));
    ck_assert(pg_test_has_error(&e, "train.lr_decay"));
    pg_data_desc central = desc;
    central.model = PG_PRIVACY_CENTRAL;
    ck_assert_ptr_null(r = resolve(m, "{}", &central, &e));
    ck_assert(pg_test_has_error(&e, "dataset_id"));
    /* The resolved spec states what runs: p and reg derived from the data. */
    r = resolve(m, "{\"train\": {\"batch_size\": 50}}", &desc, &e);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(r, "ot"), "p")), 2);
    ck_assert_double_eq_tol(json_number_value(json_object_get(json_object_get(r, "ot"), "reg")),
                            2 * 1.28 * 1.28, 1e-9);
    pg_privacy_plan plan;
    ck_assert_int_eq(m->plan(r, &(pg_job_data){.desc = &desc}, &plan, NULL), PG_OK);
    ck_assert(!plan.charges);
    json_decref(r);
    pg_dataset_free(&ds);
}
END_TEST

static Suite *egan_suite(void)
{
    Suite *s = suite_create("methods/entropic_gan");
    TCase *tc = tcase_create("entropic_gan");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, recovers_the_arc_from_laplace_data);
    tcase_add_loop_test(tc, resume_continues_exactly, 0, 2);
    tcase_add_test(tc, validation_names_the_field);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(egan_suite)
