/* The DP label count of conditional generators on labelled typed tables
 * (engine/methods/label_count.h): its cost appears in the
 * plan and equals a closed form computed here, the sampled classes follow
 * the released counts (not uniform), and a checkpoint carries the counts. */
#include <jansson.h>
#include <math.h>

#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/data/dataset.h"
#include "engine/data/table.h"
#include "engine/methods/label_count.h"
#include "engine/methods/method.h"
#include "engine/methods/snapshot.h"
#include "engine/methods/spec.h"
#include "support/pg_method_test.h"
#include "support/pg_table_test.h"
#include "support/pg_test.h"

static const char *SCHEMA =
    "{\"columns\":["
    "{\"name\":\"x\",\"type\":\"continuous\",\"min\":-5,\"max\":5},"
    "{\"name\":\"c\",\"type\":\"categorical\",\"categories\":[\"a\",\"b\",\"c\"]},"
    "{\"name\":\"y\",\"type\":\"categorical\",\"categories\":[\"no\",\"yes\"]}],"
    "\"label\":\"y\"}";

enum { ROWS = 500, YES = 150 }; /* class 1 is 30 % of the rows */

static pg_table *table(bool labelled)
{
    json_t *j = json_loads(SCHEMA, 0, NULL);
    ck_assert_ptr_nonnull(j);
    if (!labelled) json_object_del(j, "label");
    pg_table *t = NULL;
    pg_error err = {0};
    ck_assert_msg(pg_table_from_json(j, &t, &err) == PG_OK, "%s", err.msg);
    json_decref(j);
    return t;
}

/* ROWS valid rows; with labels, the first YES rows are class 1. */
static void rows(const pg_table *t, pg_dataset *ds)
{
    bool labelled = t->label != PG_TABLE_NONE;
    pg_rng r;
    pg_rng_seeded(&r, 28, 0);
    float *x = pg_alloc_f32((size_t)ROWS * t->width);
    int32_t *lab = labelled ? pg_calloc(ROWS, sizeof(int32_t)) : NULL;
    for (size_t i = 0; i < ROWS; i++) {
        if (lab) lab[i] = i < YES;
        pg_table_value v = {.num = -5 + 10 * pg_rng_uniform(&r)};
        ck_assert_int_eq(
            pg_table_encode_value(t, 0, &v, PG_TABLE_BOUNDS_REFUSE, x + i * t->width, NULL), PG_OK);
        v.cat = (i < YES ? 0 : 1) + pg_rng_below(&r, 2);
        ck_assert_int_eq(
            pg_table_encode_value(t, 1, &v, PG_TABLE_BOUNDS_REFUSE, x + i * t->width, NULL), PG_OK);
    }
    size_t shape[1] = {t->width};
    ck_assert_int_eq(pg_dataset_adopt(ds, x, lab, ROWS, shape, 1, labelled ? 2 : 0, (float)t->lo,
                                      (float)t->hi, NULL),
                     PG_OK);
}

static pg_data_desc desc_of(const pg_table *t)
{
    return pg_test_table_desc(t, ROWS, t->label != PG_TABLE_NONE ? 2 : 0, 1e4, 1e-5);
}

static const char *const METHODS[] = {"dp_sinkhorn", "swd_gen", "swd_flow", "swd_flow_r"};
/* A fixed noise multiplier: the plan is not recalibrated, so the count's
 * curve is exactly what it adds. */
static const char *const SPECS[] = {
    /* the class statistics (calib_table.h, on by default on labelled
     * tables) off, so the labelled and unlabelled plans differ by the count */
    "{\"seed\": 1, \"privacy\": {\"noise_multiplier\": 1.5}, \"train\": "
    "{\"steps\": 3, \"batch_size\": 32}, \"model\": {\"hidden\": [16]}, \"labels\": "
    "{\"count_noise\": %g}, \"calibration\": {\"class_means\": false}}",
    "{\"seed\": 1, \"privacy\": {\"noise_multiplier\": 1.5, \"delta\": 1e-5}, \"train\": "
    "{\"steps\": 3, \"batch_size\": 100}, \"model\": {\"hidden\": [16]}, \"labels\": "
    "{\"count_noise\": %g}}",
    "{\"seed\": 1, \"privacy\": {\"noise_multiplier\": 1.5, \"delta\": 1e-5}, \"flow\": "
    "{\"steps\": 3, \"particles\": 200}, \"projections\": {\"per_step\": 6}, \"labels\": "
    "{\"count_noise\": %g}}",
    "{\"seed\": 1, \"privacy\": {\"noise_multiplier\": 1.5, \"delta\": 1e-5}, \"flow\": "
    "{\"steps\": 3, \"particles\": 200}, \"projections\": {\"per_step\": 6}, \"labels\": "
    "{\"count_noise\": %g}}",
};
/* RDP of the count at order alpha, written out: add/remove changes one count
 * by 1 (dp_sinkhorn), replace-one two counts by 1 (swd_gen): alpha Delta^2 /
 * (2 s^2) with Delta^2 = 1 or 2. */
static const double SENS2[] = {1.0, 2.0, 2.0, 2.0};

static int plan_for(int method, const pg_table *t, double s, pg_privacy_plan *plan)
{
    const pg_method *m = pg_method_find(METHODS[method]);
    pg_dataset ds;
    rows(t, &ds);
    pg_data_desc desc = desc_of(t);
    pg_job_data in = {.desc = &desc, .rows = &ds};
    char text[512];
    snprintf(text, sizeof text, SPECS[method], s);
    pg_spec_errors e;
    json_t *r = pg_test_resolve(m, text, &in, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    if (method == 0)
        ck_assert(pg_spec_bool(r, "model.conditional", false) == (desc.num_classes > 0));
    pg_error err = {0};
    int rc = m->plan(r, &in, plan, &err);
    ck_assert_msg(rc == PG_OK, "%s", err.msg);
    json_decref(r);
    pg_dataset_free(&ds);
    return rc;
}

START_TEST(label_count_cost_is_in_the_plan)
{
    pg_table *t = table(true), *u = table(false);
    pg_privacy_plan a, b, c;
    plan_for(_i, t, 2.0, &a);
    plan_for(_i, t, 7.0, &b);
    plan_for(_i, u, 2.0, &c);
    ck_assert_msg(strstr(a.mechanism, "+label_counts") != NULL, "%s", a.mechanism);
    ck_assert_msg(strstr(c.mechanism, "label_counts") == NULL, "%s", c.mechanism);
    ck_assert_int_eq(a.norders, b.norders);
    for (int i = 0; i < a.norders; i++) {
        double al = a.orders[i];
        double want = al * SENS2[_i] / 2.0 * (1.0 / (2.0 * 2.0) - 1.0 / (7.0 * 7.0));
        ck_assert_msg(fabs((a.rdp[i] - b.rdp[i]) - want) <= 1e-9 * (1.0 + want),
                      "order %g: %.12g vs %.12g", al, a.rdp[i] - b.rdp[i], want);
        /* and it is charged on top of the training (the unlabelled plan of
         * dp_sinkhorn has the same steps and noise) */
        ck_assert(a.rdp[i] > b.rdp[i]);
        if (_i == 0)
            ck_assert_msg(fabs(a.rdp[i] - c.rdp[i] - al / 8.0) <= 1e-9 * a.rdp[i], "order %g", al);
    }
    ck_assert(a.epsilon > b.epsilon);
    pg_table_free(t);
    pg_table_free(u);
}
END_TEST

/* z statistic of k successes in n trials of probability p. */
static double zstat(size_t k, size_t n, double p)
{
    return ((double)k - (double)n * p) / sqrt((double)n * p * (1 - p));
}

START_TEST(sampled_classes_follow_the_released_counts)
{
    pg_threads_set(1);
    const pg_method *m = pg_method_find(METHODS[_i]);
    pg_table *t = table(true);
    pg_dataset ds;
    rows(t, &ds);
    pg_data_desc desc = desc_of(t);
    pg_job_data in = {.desc = &desc, .rows = &ds};
    char text[512];
    /* s = 2: a released proportion is off by about 2 sqrt(2) / 500 < 0.006 */
    snprintf(text, sizeof text, SPECS[_i], 2.0);
    pg_spec_errors e;
    json_t *r = pg_test_resolve(m, text, &in, &e);
    ck_assert_ptr_nonnull(r);
    pg_trainer *tr = pg_test_train(m, r, &in, NULL);
    pg_snapshot *s;
    ck_assert_int_eq(m->snapshot(tr, &s, NULL), PG_OK);
    const double *w = pg_snapshot_class_weights(s);
    ck_assert_ptr_nonnull(w);
    ck_assert(fabs(w[0] + w[1] - 1.0) < 1e-12);
    /* The released share of class 1 is 150 / 500 up to the noise: each
     * count is off by N(0, 4), so |w1 - 0.3| > 0.05 needs a count off by
     * more than 12 standard deviations (probability < 1e-30). Uniform
     * classes (the old behaviour) fail it. */
    ck_assert_msg(fabs(w[1] - 0.3) < 0.05, "released share %g", w[1]);
    /* The drawn classes follow w: N i.i.d. Bernoulli(w1) draws (w1 comes
     * from secure noise, so the outcome is new every run), |z| < 6 fails by
     * chance with probability 2e-9 (|z| < 5: 5.7e-7, four loops a run). */
    enum { N = 20000 };
    float *x = pg_alloc_f32((size_t)N * t->width);
    int32_t *lab = pg_calloc(N, sizeof *lab);
    ck_assert_int_eq(pg_snapshot_sample_labelled(s, N, 77, x, lab, NULL), PG_OK);
    size_t ones = 0;
    for (size_t i = 0; i < N; i++) {
        ck_assert(lab[i] == 0 || lab[i] == 1);
        ones += lab[i] == 1;
    }
    ck_assert_msg(fabs(zstat(ones, N, w[1])) < 6, "%zu of %d vs %g", ones, N, w[1]);
    /* unlabelled draws follow the same proportions: the first rows of a
     * labelled draw are the unlabelled draw of the same seed */
    float *y = pg_alloc_f32((size_t)100 * t->width);
    ck_assert_int_eq(pg_snapshot_sample(s, 100, 77, -1, y, NULL), PG_OK);
    ck_assert(!memcmp(x, y, 100 * t->width * sizeof *y));
    /* the checkpoint carries the counts: the snapshot rebuilt from it has
     * the same proportions, and a restore neither releases again nor
     * changes them */
    unsigned char *bytes;
    size_t len;
    ck_assert_int_eq(m->save(tr, &bytes, &len, NULL), PG_OK);
    pg_snapshot *s2;
    ck_assert_int_eq(m->load_snapshot(bytes, len, &s2, NULL), PG_OK);
    ck_assert_ptr_nonnull(pg_snapshot_class_weights(s2));
    ck_assert(pg_snapshot_class_weights(s2)[1] == w[1]);
    pg_test_checkpoint_round_trip(m, r, &in, bytes, len, 64, t->width, -1);
    /* a restore under another count noise is refused (another plan) */
    snprintf(text, sizeof text, SPECS[_i], 3.0);
    json_t *r3 = pg_test_resolve(m, text, &in, &e);
    pg_trainer *t3 = NULL;
    ck_assert_int_ne(m->restore(r3, &in, 1, bytes, len, &t3, NULL), PG_OK);
    json_decref(r3);
    free(bytes);
    pg_snapshot_release(s2);
    pg_free(x), pg_free(y), pg_free(lab);
    pg_snapshot_release(s);
    m->destroy(tr);
    json_decref(r);
    pg_dataset_free(&ds);
    pg_table_free(t);
}
END_TEST

START_TEST(release_is_the_count_plus_noise)
{
    pg_rng sec;
    ck_assert_int_eq(pg_rng_secure(&sec, NULL), PG_OK);
    int32_t lab[ROWS];
    for (size_t i = 0; i < ROWS; i++) lab[i] = i < YES;
    /* mean of 2000 releases at s = 3: within 6 standard errors (3 / sqrt
     * 2000 = 0.067) of the true counts; false alarm 2e-9 per class */
    double sum[2] = {0, 0}, noisy[2];
    for (int rep = 0; rep < 2000; rep++) {
        ck_assert_int_eq(pg_label_count_release(&sec, lab, ROWS, 2, 3.0, noisy, NULL), PG_OK);
        sum[0] += noisy[0], sum[1] += noisy[1];
    }
    ck_assert(fabs(sum[0] / 2000 - (ROWS - YES)) < 6 * 3.0 / sqrt(2000.0));
    ck_assert(fabs(sum[1] / 2000 - YES) < 6 * 3.0 / sqrt(2000.0));
    /* a seeded generator is refused, and labels out of range */
    pg_rng seeded;
    pg_rng_seeded(&seeded, 1, 0);
    ck_assert_int_eq(pg_label_count_release(&seeded, lab, ROWS, 2, 3.0, noisy, NULL), PG_EPRIVACY);
    lab[3] = 2;
    ck_assert_int_eq(pg_label_count_release(&sec, lab, ROWS, 2, 3.0, noisy, NULL), PG_EINVAL);
    /* weights: clipped at 1, normalized */
    double c[3] = {-5, 1, 8}, w[3];
    pg_label_count_weights(c, 3, w);
    ck_assert(fabs(w[0] - 0.1) < 1e-12 && fabs(w[1] - 0.1) < 1e-12 && fabs(w[2] - 0.8) < 1e-12);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("methods/label_count");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, label_count_cost_is_in_the_plan, 0, 4);
    tcase_add_loop_test(tc, sampled_classes_follow_the_released_counts, 0, 4);
    tcase_add_test(tc, release_is_the_count_plus_noise);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
