/* The label of a typed table in the generator methods:
 *  - model.conditional false on a labelled table is refused by every
 *    generator (an unconditional model would serve rows without the label);
 *    left out, dp_sinkhorn and entropic_gan are conditional;
 *  - entropic_gan on a locally privatized labelled table models the label's
 *    randomized-response channel: its class proportions are the channel's
 *    inverse of the privatized label frequencies (checked against a closed
 *    form computed here), its samples' classes follow them, a checkpoint's
 *    snapshot keeps them, and the class-conditional law is learnt (the
 *    feature's mean differs between the classes as in the clean data).
 *
 * Data: N rows, x continuous on [-5, 5], label y (no / yes), 30 % yes;
 * x | no uniform on [-5, -1], x | yes uniform on [1, 5]. Privatized with
 * pg_ldp_plan_make_split at a total epsilon of 6 split evenly (PG_LDP_SPLIT_EVEN): the label by
 * binary randomized response at epsilon 3 (keep e^3 / (e^3 + 1) = 0.953), x by Laplace noise of
 * scale 10 / 3. */
#include <jansson.h>
#include <math.h>

#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/data/dataset.h"
#include "engine/data/table.h"
#include "engine/data/table_ldp.h"
#include "engine/methods/method.h"
#include "engine/methods/snapshot.h"
#include "engine/methods/spec.h"
#include "engine/privacy/privacy.h"
#include "support/pg_method_test.h"
#include "support/pg_table_test.h"
#include "support/pg_test.h"

static const char *SCHEMA =
    "{\"columns\":["
    "{\"name\":\"x\",\"type\":\"continuous\",\"min\":-5,\"max\":5},"
    "{\"name\":\"y\",\"type\":\"categorical\",\"categories\":[\"no\",\"yes\"]}],"
    "\"label\":\"y\"}";

enum { N = 20000, YES = 6000, SAMPLES = 20000 };
#define EPS_TOTAL 6.0

typedef struct fixture {
    pg_table *t;
    pg_ldp_plan plan;
    pg_dataset ds;
    pg_data_desc desc;
    double priv_yes; /* privatized share of "yes" */
} fixture;

static void make(fixture *f, bool local, double eps)
{
    memset(f, 0, sizeof *f);
    f->t = pg_test_table(SCHEMA);
    pg_error err = {0};
    ck_assert_int_eq(f->t->width, 1);
    pg_rng r, sec;
    pg_rng_seeded(&r, 28, 0);
    ck_assert_int_eq(pg_rng_secure(&sec, &err), PG_OK);
    float *x = pg_alloc_f32(N);
    int64_t *lab = pg_calloc(N, sizeof *lab);
    for (size_t i = 0; i < N; i++) {
        lab[i] = i < YES;
        pg_table_value v = {.num = (i < YES ? 1.0 : -5.0) + 4.0 * pg_rng_uniform(&r)};
        ck_assert_int_eq(pg_table_encode_value(f->t, 0, &v, PG_TABLE_BOUNDS_REFUSE, x + i, NULL),
                         PG_OK);
    }
    if (local) {
        ck_assert_int_eq(
            pg_ldp_plan_make_split(f->t, PG_LDP_LAPLACE, eps, 0, PG_LDP_SPLIT_EVEN, &f->plan, &err),
            PG_OK);
        ck_assert_msg(pg_ldp_apply(&sec, f->t, &f->plan, x, lab, N, &err) == PG_OK, "%s", err.msg);
    }
    size_t yes = 0;
    for (size_t i = 0; i < N; i++) yes += (size_t)lab[i];
    f->priv_yes = (double)yes / N;
    pg_test_table_rows(f->t, local ? &f->plan : NULL, x, lab, N, 2, local ? -1e30f : -5.0f,
                       local ? 1e30f : 5.0f, &f->ds, &f->desc);
}

static void unmake(fixture *f)
{
    pg_dataset_free(&f->ds);
    pg_ldp_plan_free(&f->plan);
    pg_table_free(f->t);
}

static json_t *resolve(const char *method, const char *spec, fixture *f, pg_spec_errors *e)
{
    pg_job_data in = {.desc = &f->desc, .rows = &f->ds};
    return pg_test_resolve(pg_method_find(method), spec, &in, e);
}

START_TEST(conditional_false_is_refused_on_a_labelled_table)
{
    fixture c, l;
    make(&c, false, 0);
    make(&l, true, EPS_TOTAL);
    pg_spec_errors e;
    json_t *r;
    /* Old code: accepted, and the samples lacked the label column. */
    r = resolve("dp_sinkhorn",
                "{\"privacy\": {\"epsilon\": 1}, \"model\": {\"conditional\": false}}", &c, &e);
    ck_assert_ptr_null(r);
    ck_assert(pg_test_has_error(&e, "model.conditional"));
    r = resolve("swd_gen",
                "{\"privacy\": {\"epsilon\": 1}, \"labels\": {\"class_alpha\": 0}, \"model\": "
                "{\"conditional\": false}}",
                &c, &e);
    ck_assert_ptr_null(r);
    ck_assert(pg_test_has_error(&e, "model.conditional"));
    r = resolve("entropic_gan", "{\"model\": {\"conditional\": false}}", &l, &e);
    ck_assert_ptr_null(r);
    ck_assert(pg_test_has_error(&e, "model.conditional"));
    /* Left out: conditional (entropic_gan on local rows is new). */
    r = resolve("dp_sinkhorn", "{\"privacy\": {\"epsilon\": 1}}", &c, &e);
    ck_assert_ptr_nonnull(r);
    ck_assert(json_is_true(pg_spec_get(r, "model.conditional")));
    json_decref(r);
    r = resolve("entropic_gan", "{}", &l, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    ck_assert(json_is_true(pg_spec_get(r, "model.conditional")));
    json_decref(r);
    unmake(&c);
    unmake(&l);
}
END_TEST

START_TEST(entropic_gan_models_the_label_channel)
{
    pg_threads_set(1);
    fixture f;
    make(&f, true, EPS_TOTAL);
    const pg_ldp_column *lc = &f.plan.cols[f.t->label];
    ck_assert_int_eq(lc->mechanism, PG_LDP_RR);
    ck_assert_int_eq(lc->k, 2);
    double keep = exp(lc->epsilon) / (exp(lc->epsilon) + 1.0);
    ck_assert(fabs(lc->keep - keep) < 1e-12);
    /* The inverse channel, written out: E[f] = (1 - keep) + (2 keep - 1) w. */
    double w1 = (f.priv_yes - (1.0 - keep)) / (2.0 * keep - 1.0);
    /* standard error sqrt(f (1 - f) / N) / (2 keep - 1) = 0.0036: 0.02 is 5.5
     * of them (false alarm < 1e-7) */
    ck_assert_msg(fabs(w1 - 0.3) < 0.02, "inverse-channel share %g", w1);
    ck_assert_msg(fabs(f.priv_yes - 0.3) > 0.01, "privatized share %g", f.priv_yes);

    const pg_method *m = pg_method_find("entropic_gan");
    pg_job_data in = {.desc = &f.desc, .rows = &f.ds};
    pg_spec_errors e;
    json_t *r = pg_test_resolve(
        m,
        "{\"seed\": 5, \"train\": {\"steps\": 300, \"batch_size\": 256}, \"model\": "
        "{\"hidden\": [32, 32]}}",
        &in, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    pg_privacy_plan pp;
    pg_error err = {0};
    ck_assert_int_eq(m->plan(r, &in, &pp, &err), PG_OK);
    ck_assert(!pp.charges); /* post-processing of the local reports */
    pg_trainer *tr = pg_test_train(m, r, &in, NULL);
    pg_snapshot *s;
    ck_assert_int_eq(m->snapshot(tr, &s, NULL), PG_OK);
    const double *w = pg_snapshot_class_weights(s);
    ck_assert_ptr_nonnull(w);
    ck_assert_msg(fabs(w[1] - w1) < 1e-9 && fabs(w[0] - (1.0 - w1)) < 1e-9, "weights %g %g vs %g",
                  w[0], w[1], w1);
    /* Samples: classes follow w (|z| < 6: false alarm 2e-9), and x
     * depends on the class as in the clean data (class means -3 and 3;
     * a model that ignored the label would give equal means). */
    float *x = pg_alloc_f32(SAMPLES);
    int32_t *lab = pg_calloc(SAMPLES, sizeof *lab);
    ck_assert_int_eq(pg_snapshot_sample_labelled(s, SAMPLES, 9, x, lab, NULL), PG_OK);
    double sum[2] = {0, 0}, cnt[2] = {0, 0};
    for (size_t i = 0; i < SAMPLES; i++) {
        ck_assert(lab[i] == 0 || lab[i] == 1);
        pg_table_value v;
        pg_table_decode_value(f.t, 0, x + i, 1, &v);
        sum[lab[i]] += v.num, cnt[lab[i]] += 1;
    }
    double z = (cnt[1] - SAMPLES * w1) / sqrt(SAMPLES * w1 * (1 - w1));
    ck_assert_msg(fabs(z) < 6, "%g of %d vs %g", cnt[1], SAMPLES, w1);
    double m0 = sum[0] / cnt[0], m1 = sum[1] / cnt[1];
    fprintf(stderr, "entropic_gan, local label: class means %.3f / %.3f (clean -3 / 3), w1 %.4f\n",
            m0, m1, w1);
    ck_assert_msg(m1 - m0 > 3.0, "class means %g, %g", m0, m1);
    /* A checkpoint's snapshot draws its classes from the same weights. */
    unsigned char *bytes;
    size_t len;
    ck_assert_int_eq(m->save(tr, &bytes, &len, NULL), PG_OK);
    pg_snapshot *s2;
    ck_assert_int_eq(m->load_snapshot(bytes, len, &s2, NULL), PG_OK);
    ck_assert_ptr_nonnull(pg_snapshot_class_weights(s2));
    ck_assert(fabs(pg_snapshot_class_weights(s2)[1] - w[1]) < 1e-12);
    pg_test_checkpoint_round_trip(m, r, &in, bytes, len, 64, 1, -1);
    free(bytes);
    pg_snapshot_release(s2);
    pg_free(x), pg_free(lab);
    pg_snapshot_release(s);
    m->destroy(tr);
    json_decref(r);
    unmake(&f);
}
END_TEST

/* At a large local epsilon 1 - keep rounds to 0 in double: the label's
 * cost stays finite (as the columns' do) and training runs. */
START_TEST(entropic_gan_label_at_a_large_epsilon)
{
    pg_threads_set(1);
    fixture f;
    make(&f, true, 2000);
    ck_assert(1.0 - f.plan.cols[f.t->label].keep == 0.0);
    const pg_method *m = pg_method_find("entropic_gan");
    pg_job_data in = {.desc = &f.desc, .rows = &f.ds};
    pg_spec_errors e;
    json_t *r =
        pg_test_resolve(m,
                        "{\"seed\": 5, \"train\": {\"steps\": 5, \"batch_size\": 64}, \"model\": "
                        "{\"hidden\": [8]}}",
                        &in, &e);
    ck_assert_ptr_nonnull(r);
    pg_step_report rep;
    pg_trainer *tr = pg_test_train(m, r, &in, &rep);
    ck_assert(isfinite(rep.loss));
    m->destroy(tr);
    json_decref(r);
    unmake(&f);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("methods/table_label");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, conditional_false_is_refused_on_a_labelled_table);
    tcase_add_test(tc, entropic_gan_models_the_label_channel);
    tcase_add_test(tc, entropic_gan_label_at_a_large_epsilon);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
