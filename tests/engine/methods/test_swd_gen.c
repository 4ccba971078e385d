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

static Suite *gen_suite(void)
{
    Suite *s = suite_create("methods/swd_gen");
    TCase *tc = tcase_create("swd_gen");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, learns_the_mixture_and_reports_epsilon);
    tcase_add_test(tc, resume_and_checkpoints);
    tcase_add_test(tc, validation_names_the_field);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(gen_suite)
