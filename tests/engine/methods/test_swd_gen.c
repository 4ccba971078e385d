/* Tests of swd_gen: a generator trained on the DP smoothed SW2 loss learns
 * the 5-Gaussian mixture at small noise, reports the accountant's epsilon for
 * one release per step, resumes exactly, and validates its spec. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/data/dataset.h"
#include "engine/data/synth.h"
#include "engine/data/table.h"
#include "engine/methods/snapshot.h"
#include "engine/methods/spec.h"
#include "engine/methods/method.h"
#include "engine/methods/swd.h"
#include "engine/methods/trainer.h"
#include "engine/ot/sliced.h"
#include "engine/privacy/privacy.h"
#include "support/pg_method_test.h"
#include "support/pg_swd_test.h"
#include "support/pg_test.h"

static void make_central(size_t n, pg_dataset *ds, pg_data_desc *desc)
{
    pg_test_mixture_central(n, ds, desc);
}

static json_t *resolve(const char *text, const pg_data_desc *desc, pg_spec_errors *e)
{
    return pg_test_resolve(pg_method_find("swd_gen"), text, &(pg_job_data){.desc = desc}, e);
}

static double snapshot_sw2(const pg_method *m, pg_trainer *t)
{
    pg_snapshot *s;
    ck_assert_int_eq(m->snapshot(t, &s, NULL), PG_OK);
    float *x = pg_alloc_f32(1000 * 2);
    ck_assert_int_eq(pg_snapshot_sample(s, 1000, 3, -1, x, NULL), PG_OK);
    double v = pg_test_sw2_to_mixture(x, 1000);
    pg_free(x);
    pg_snapshot_release(s);
    return v;
}

START_TEST(learns_the_mixture_and_reports_epsilon)
{
    pg_dataset ds;
    pg_data_desc desc;
    make_central(2000, &ds, &desc);
    const pg_method *m = pg_method_find("swd_gen");
    pg_spec_errors e;
    json_t *r =
        resolve("{\"privacy\": {\"noise_multiplier\": 0.005, \"clip_norm\": 3},"
                " \"model\": {\"hidden\": [64, 64], \"latent_dim\": 4, \"latent\": \"normal\"},"
                " \"projections\": {\"per_step\": 20}, \"train\": {\"steps\": 400,"
                " \"batch_size\": 1000, \"gen_batch\": 256, \"lr\": 0.003}, \"seed\": 2}",
                &desc, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    pg_privacy_plan plan;
    ck_assert_int_eq(m->plan(r, &(pg_job_data){.desc = &desc}, &plan, NULL), PG_OK);
    pg_trainer *t;
    pg_error err = {0};
    ck_assert_msg(m->create(r, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, &t, &err) == PG_OK,
                  "%s", err.msg);
    double before = snapshot_sw2(m, t);
    pg_step_report rep = {0};
    while (!rep.done) ck_assert_msg(m->step(t, &rep, &err) == PG_OK, "%s", err.msg);
    double after = snapshot_sw2(m, t);
    ck_assert_msg(before > 1.0 && after < 0.3, "SW2 %.3f -> %.3f", before, after);
    ck_assert_int_eq(pg_swd_trainer_releases(t), 400);
    /* 1000 of 2000 rows per release: the smaller of WBK and the plain
     * Gaussian per order, composed over 400 releases. */
    double orders[PG_RDP_DEFAULT_ORDERS], rdp[PG_RDP_DEFAULT_ORDERS], eps;
    size_t no = pg_rdp_default_orders(orders, PG_RDP_DEFAULT_ORDERS);
    for (size_t i = 0; i < no; i++) {
        double a, b;
        ck_assert_int_eq(pg_rdp_gaussian(0.005, orders[i], &a, NULL), PG_OK);
        ck_assert_int_eq(pg_rdp_wbk_gaussian(0.5, 0.005, orders[i], &b, NULL), PG_OK);
        rdp[i] = 400.0 * fmin(a, b);
    }
    ck_assert_int_eq(pg_rdp_to_dp(orders, rdp, no, 1e-5, PG_RDP_CONV_IMPROVED, &eps, NULL, NULL),
                     PG_OK);
    ck_assert_double_eq_tol(plan.epsilon, eps, 1e-9 * eps);
    ck_assert_double_eq_tol(rep.epsilon_spent, eps, 1e-9 * eps);
    ck_assert_double_eq_tol(plan.sampling_rate, 0.5, 1e-12);
    m->destroy(t);
    json_decref(r);
    pg_dataset_free(&ds);
}
END_TEST

START_TEST(resume_and_checkpoints)
{
    pg_dataset ds;
    pg_data_desc desc;
    make_central(300, &ds, &desc);
    const pg_method *m = pg_method_find("swd_gen");
    pg_spec_errors e;
    json_t *r = resolve("{\"privacy\": {\"epsilon\": 3}, \"model\": {\"hidden\": [16]},"
                        " \"projections\": {\"per_step\": 8}, \"train\": {\"steps\": 10,"
                        " \"gen_batch\": 32}}",
                        &desc, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    pg_trainer *t, *t2;
    ck_assert_int_eq(m->create(r, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, &t, NULL), PG_OK);
    pg_step_report rep;
    for (int i = 0; i < 4; i++) ck_assert_int_eq(m->step(t, &rep, NULL), PG_OK);
    unsigned char *b1, *b2;
    size_t l1, l2;
    ck_assert_int_eq(m->save(t, &b1, &l1, NULL), PG_OK);
    pg_error err = {0};
    ck_assert_msg(m->restore(r, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, b1, l1, &t2, &err) ==
                      PG_OK,
                  "%s", err.msg);
    ck_assert_int_eq(pg_swd_trainer_releases(t2), 4);
    ck_assert_int_eq(m->save(t2, &b2, &l2, NULL), PG_OK);
    ck_assert_uint_eq(l1, l2);
    ck_assert(memcmp(b1, b2, l1) == 0);
    free(b2);
    rep.done = false;
    while (!rep.done) ck_assert_int_eq(m->step(t2, &rep, NULL), PG_OK);
    ck_assert_int_eq(rep.step, 10);
    ck_assert_int_eq(pg_swd_trainer_releases(t2), 10);
    ck_assert(rep.epsilon_spent <= 3.0 && rep.epsilon_spent > 2.95);
    pg_snapshot *s;
    ck_assert_int_eq(m->load_snapshot(b1, l1, &s, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_step(s), 4);
    pg_snapshot_release(s);
    pg_trainer *t3 = NULL;
    ck_assert_int_ne(
        m->restore(r, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, b1, l1 - 3, &t3, NULL), PG_OK);
    ck_assert_ptr_null(t3);
    b1[l1 / 3] ^= 1;
    ck_assert_int_ne(m->load_snapshot(b1, l1, &s, NULL), PG_OK);
    free(b1);
    m->destroy(t);
    m->destroy(t2);
    json_decref(r);
    pg_dataset_free(&ds);
}
END_TEST

START_TEST(validation_names_the_field)
{
    pg_dataset ds;
    pg_data_desc desc;
    make_central(100, &ds, &desc);
    pg_spec_errors e;
    json_t *r;
    ck_assert_ptr_null(r = resolve("{}", &desc, &e));
    ck_assert(pg_test_has_error(&e, "privacy.epsilon"));
    ck_assert_ptr_null(r = resolve("{\"privacy\": {\"epsilon\": 1}, \"train\": {\"batch_size\":"
                                   " 500}}",
                                   &desc, &e));
    ck_assert(pg_test_has_error(&e, "train.batch_size"));
    ck_assert_ptr_null(
        r = resolve("{\"privacy\": {\"epsilon\": 1}, \"model\": {\"conditional\": true}}", &desc,
                    &e));
    ck_assert(pg_test_has_error(&e, "model.conditional"));
    ck_assert_ptr_null(r = resolve("{\"privacy\": {\"epsilon\": 1}, \"projections\": {\"kind\":"
                                   " \"spiral\"}}",
                                   &desc, &e));
    ck_assert(pg_test_has_error(&e, "projections.kind"));
    pg_data_desc local = desc;
    local.model = PG_PRIVACY_LOCAL;
    ck_assert_ptr_null(r = resolve("{\"privacy\": {\"epsilon\": 1}}", &local, &e));
    ck_assert(pg_test_has_error(&e, "dataset_id"));
    r = resolve("{\"privacy\": {\"epsilon\": 1}}", &desc, &e);
    ck_assert_ptr_nonnull(r);
    char *text = json_dumps(r, 0);
    json_t *r2 = resolve(text, &desc, &e);
    free(text);
    ck_assert_ptr_nonnull(r2);
    ck_assert(json_equal(r, r2));
    json_decref(r2);
    json_decref(r);
    pg_dataset_free(&ds);
}
END_TEST

/* train.steps_per_release: 10 steps on releases made at steps 0, 4 and 8.
 * The plan composes exactly 3 releases of all rows (an independent RDP
 * curve), a checkpoint between releases keeps the releases made so far and
 * a resume neither releases them again nor differs from the saved state
 * (same bytes), and a spec with another release schedule is refused. Fails
 * on the old code: the field did not exist and every step was a release. */
START_TEST(reused_releases_are_accounted_and_resume)
{
    pg_dataset ds;
    pg_data_desc desc;
    make_central(300, &ds, &desc);
    const pg_method *m = pg_method_find("swd_gen");
    pg_job_data in = {.desc = &desc, .rows = &ds};
    pg_spec_errors e;
    json_t *r = resolve("{\"privacy\": {\"noise_multiplier\": 0.8}, \"model\": {\"hidden\": [16]},"
                        " \"projections\": {\"per_step\": 2}, \"train\": {\"steps\": 10,"
                        " \"gen_batch\": 32, \"steps_per_release\": 4}, \"seed\": 5}",
                        &desc, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    pg_privacy_plan plan;
    ck_assert_int_eq(m->plan(r, &in, &plan, NULL), PG_OK);
    double orders[PG_RDP_DEFAULT_ORDERS], rdp[PG_RDP_DEFAULT_ORDERS], eps;
    size_t no = pg_rdp_default_orders(orders, PG_RDP_DEFAULT_ORDERS);
    for (size_t i = 0; i < no; i++) {
        ck_assert_int_eq(pg_rdp_gaussian(0.8, orders[i], &rdp[i], NULL), PG_OK);
        rdp[i] *= 3.0;
    }
    ck_assert_int_eq(
        pg_rdp_to_dp(orders, rdp, no, desc.cap_delta, PG_RDP_CONV_IMPROVED, &eps, NULL, NULL),
        PG_OK);
    ck_assert_double_eq_tol(plan.epsilon, eps, 1e-9 * eps);
    ck_assert_int_eq(plan.steps, 10);
    ck_assert_double_eq(plan.sampling_rate, 1.0);
    pg_trainer *t, *t2;
    pg_error err = {0};
    ck_assert_msg(m->create(r, &in, 1, &t, &err) == PG_OK, "%s", err.msg);
    pg_step_report rep;
    long want[6] = {1, 1, 1, 1, 2, 2};
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(m->step(t, &rep, NULL), PG_OK);
        ck_assert_int_eq(pg_swd_trainer_releases(t), want[i]);
    }
    unsigned char *b1, *b2;
    size_t l1, l2;
    ck_assert_int_eq(m->save(t, &b1, &l1, NULL), PG_OK);
    ck_assert_msg(m->restore(r, &in, 1, b1, l1, &t2, &err) == PG_OK, "%s", err.msg);
    ck_assert_int_eq(pg_swd_trainer_releases(t2), 2);
    ck_assert_int_eq(m->save(t2, &b2, &l2, NULL), PG_OK);
    ck_assert_uint_eq(l1, l2);
    ck_assert(memcmp(b1, b2, l1) == 0);
    free(b2);
    /* the original and the resumed trainer take the same next step */
    pg_step_report r1, r2;
    ck_assert_int_eq(m->step(t, &r1, NULL), PG_OK);
    ck_assert_int_eq(m->step(t2, &r2, NULL), PG_OK);
    ck_assert_double_eq(r1.loss, r2.loss);
    rep.done = false;
    while (!rep.done) ck_assert_int_eq(m->step(t2, &rep, NULL), PG_OK);
    ck_assert_int_eq(rep.step, 10);
    ck_assert_int_eq(pg_swd_trainer_releases(t2), 3);
    ck_assert_double_eq_tol(rep.epsilon_spent, eps, 1e-9 * eps);
    /* another schedule: 6 steps would have made 3 releases, not 2 */
    json_t *r3 = resolve("{\"privacy\": {\"noise_multiplier\": 0.8}, \"model\": {\"hidden\": [16]},"
                         " \"projections\": {\"per_step\": 2}, \"train\": {\"steps\": 10,"
                         " \"gen_batch\": 32, \"steps_per_release\": 2}, \"seed\": 5}",
                         &desc, &e);
    ck_assert_ptr_nonnull(r3);
    pg_trainer *t3 = NULL;
    ck_assert_int_eq(m->restore(r3, &in, 1, b1, l1, &t3, NULL), PG_EFORMAT);
    ck_assert_ptr_null(t3);
    json_decref(r3);
    free(b1);
    m->destroy(t);
    m->destroy(t2);
    json_decref(r);
    pg_dataset_free(&ds);
}
END_TEST

/* A labelled typed table where each class has its own spread: a continuous
 * on [0, 100], class 1 around 70, class 0 around 30 (sd 8 each, tails
 * clipped); b uniform on [0, 100], independent of the class; y 40 % yes. */
static const char *TABLE = "{\"columns\":["
                           "{\"name\":\"a\",\"type\":\"continuous\",\"min\":0,\"max\":100},"
                           "{\"name\":\"b\",\"type\":\"continuous\",\"min\":0,\"max\":100},"
                           "{\"name\":\"y\",\"type\":\"boolean\"}],\"label\":\"y\"}";
enum { TN = 1000, TS = 2000 };

static void make_table(pg_table **t, pg_dataset *ds, pg_data_desc *desc)
{
    json_t *j = json_loads(TABLE, 0, NULL);
    ck_assert_int_eq(pg_table_from_json(j, t, NULL), PG_OK);
    json_decref(j);
    ck_assert_int_eq((*t)->width, 2);
    pg_rng r;
    pg_rng_seeded(&r, 36, 0);
    float *x = pg_alloc_f32(TN * 2);
    int32_t *lab = pg_calloc(TN, sizeof *lab);
    for (size_t i = 0; i < TN; i++) {
        lab[i] = pg_rng_uniform(&r) < 0.4;
        pg_table_value a = {.num = fmin(100, fmax(0, (lab[i] ? 70 : 30) + 8 * pg_rng_normal(&r)))};
        pg_table_value b = {.num = 100 * pg_rng_uniform(&r)};
        ck_assert_int_eq(pg_table_encode_value(*t, 0, &a, PG_TABLE_BOUNDS_REFUSE, x + 2 * i, NULL),
                         PG_OK);
        ck_assert_int_eq(pg_table_encode_value(*t, 1, &b, PG_TABLE_BOUNDS_REFUSE, x + 2 * i, NULL),
                         PG_OK);
    }
    size_t shape[1] = {2};
    ck_assert_int_eq(pg_dataset_adopt(ds, x, lab, TN, shape, 1, 2, -1.0f, 1.0f, NULL), PG_OK);
    *desc = (pg_data_desc){.n = TN,
                           .d = 2,
                           .ndim = 1,
                           .shape = {2},
                           .lo = -1.0f,
                           .hi = 1.0f,
                           .model = PG_PRIVACY_CENTRAL,
                           .cap_epsilon = 1e4,
                           .cap_delta = 1e-5,
                           .num_classes = 2,
                           .table = *t};
}

/* The table defaults follow the table: one orthonormal block of d + C
 * directions, every row per release, as
 * many generated rows (capped at 4096), 10 releases of 100 steps each, the
 * quantile map over the whole range. */
START_TEST(table_defaults_follow_the_table)
{
    pg_table *tab;
    pg_dataset ds;
    pg_data_desc desc;
    make_table(&tab, &ds, &desc);
    pg_spec_errors e;
    json_t *r = resolve("{\"privacy\": {\"epsilon\": 5}}", &desc, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    ck_assert_int_eq(pg_spec_int(r, "projections.per_step", 0), 4);
    ck_assert_int_eq(pg_spec_int(r, "train.batch_size", 0), TN);
    ck_assert_int_eq(pg_spec_int(r, "train.gen_batch", 0), TN);
    ck_assert_int_eq(pg_spec_int(r, "train.steps", 0), 1000);
    ck_assert_int_eq(pg_spec_int(r, "train.steps_per_release", 0), 100);
    ck_assert_double_eq(pg_spec_num(r, "encoding.quantile_spread", 0), 1.0);
    pg_privacy_plan plan;
    ck_assert_int_eq(pg_method_find("swd_gen")->plan(r, &(pg_job_data){.desc = &desc}, &plan, NULL),
                     PG_OK);
    ck_assert_int_eq(plan.steps, 1000);
    json_decref(r);
    /* a user's choice stays */
    r = resolve("{\"privacy\": {\"epsilon\": 5}, \"train\": {\"steps\": 30, \"gen_batch\": 64}}",
                &desc, &e);
    ck_assert_int_eq(pg_spec_int(r, "train.steps", 0), 30);
    ck_assert_int_eq(pg_spec_int(r, "train.gen_batch", 0), 64);
    json_decref(r);
    pg_dataset_free(&ds);
    pg_table_free(tab);
}
END_TEST

/* At epsilon 1000 with the table defaults the samples keep each class's
 * spread and where it sits. The old defaults (2000 releases of all rows on
 * 200 directions, 256 generated rows) add noise of std 8 x the table's
 * diameter... collapsed per-class sd: see the figures below. */
START_TEST(table_defaults_keep_per_class_spread)
{
    pg_threads_set(1);
    pg_table *tab;
    pg_dataset ds;
    pg_data_desc desc;
    make_table(&tab, &ds, &desc);
    const pg_method *m = pg_method_find("swd_gen");
    pg_spec_errors e;
    /* independence 0: the generator's own draws (the table defaults redraw
     * each class's released marginals at every epsilon since issue 28
     * hi39), which this test is about. */
    json_t *r = resolve("{\"seed\": 7, \"privacy\": {\"epsilon\": 1000}, \"calibration\": "
                        "{\"independence\": 0}}",
                        &desc, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    pg_trainer *t;
    pg_error err = {0};
    ck_assert_msg(m->create(r, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, &t, &err) == PG_OK,
                  "%s", err.msg);
    pg_step_report rep = {0};
    while (!rep.done) ck_assert_msg(m->step(t, &rep, &err) == PG_OK, "%s", err.msg);
    pg_snapshot *s;
    ck_assert_int_eq(m->snapshot(t, &s, NULL), PG_OK);
    float *x = pg_alloc_f32(TS * 2);
    int32_t *lab = pg_calloc(TS, sizeof *lab);
    ck_assert_int_eq(pg_snapshot_sample_labelled(s, TS, 9, x, lab, NULL), PG_OK);
    double s1[2][2] = {{0}}, s2[2][2] = {{0}}, cnt[2] = {0};
    for (size_t i = 0; i < TS; i++) {
        cnt[lab[i]]++;
        for (size_t c = 0; c < 2; c++) {
            pg_table_value v;
            pg_table_decode_value(tab, c, x + 2 * i, 1, &v);
            s1[lab[i]][c] += v.num, s2[lab[i]][c] += v.num * v.num;
        }
    }
    double mean[2][2], sd[2][2];
    for (int k = 0; k < 2; k++)
        for (int c = 0; c < 2; c++) {
            mean[k][c] = s1[k][c] / cnt[k];
            sd[k][c] = sqrt(fmax(0, s2[k][c] / cnt[k] - mean[k][c] * mean[k][c]));
        }
    fprintf(stderr,
            "swd_gen table defaults, eps 1000: class 0 a %.1f (sd %.1f) b %.1f (sd %.1f); "
            "class 1 a %.1f (sd %.1f) b %.1f (sd %.1f); yes rate %.3f\n",
            mean[0][0], sd[0][0], mean[0][1], sd[0][1], mean[1][0], sd[1][0], mean[1][1], sd[1][1],
            cnt[1] / TS);
    /* real: a 30 / 70 (sd 8), b 50 (sd 28.9) in both classes */
    ck_assert_msg(mean[1][0] - mean[0][0] > 25, "class means of a %.1f / %.1f", mean[0][0],
                  mean[1][0]);
    for (int k = 0; k < 2; k++) {
        ck_assert_msg(sd[k][0] > 4 && sd[k][0] < 16, "class %d: sd of a %.2f", k, sd[k][0]);
        ck_assert_msg(sd[k][1] > 18 && sd[k][1] < 40, "class %d: sd of b %.2f", k, sd[k][1]);
    }
    ck_assert_msg(fabs(cnt[1] / TS - 0.4) < 0.06, "yes rate %.3f", cnt[1] / TS);
    pg_free(x);
    pg_free(lab);
    pg_snapshot_release(s);
    m->destroy(t);
    json_decref(r);
    pg_dataset_free(&ds);
    pg_table_free(tab);
}
END_TEST

static Suite *gen_suite(void)
{
    Suite *s = suite_create("methods/swd_gen");
    TCase *tc = tcase_create("swd_gen");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, learns_the_mixture_and_reports_epsilon);
    tcase_add_test(tc, resume_and_checkpoints);
    tcase_add_test(tc, validation_names_the_field);
    tcase_add_test(tc, reused_releases_are_accounted_and_resume);
    tcase_add_test(tc, table_defaults_follow_the_table);
    tcase_add_test(tc, table_defaults_keep_per_class_spread);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(gen_suite)
