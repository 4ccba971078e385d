/* Trainer warnings (engine/methods/method.h): the bounded list's rules
 * (codes, replacement, the bound, truncation at a UTF-8 boundary, bad
 * arguments), lists of two trainers on two threads kept apart, the
 * sentences of the DP label count and quantile map checks, and the first
 * emitter: entropic_gan on a local table records no_class_signal
 * exactly when its calibration pools the classes (no class difference in
 * the privatized rows), keeps it through a checkpoint restore, and stays
 * silent when the label is a function of a feature.
 *
 * Privatization uses the secure generator (local DP refuses a seeded one),
 * so the rows differ per run; the signal check has its own 5 % false-alarm
 * rate (calib_ldp.h: Bonferroni over its tests). Hence no assertion here
 * depends on that rate: with a label independent of the features the test
 * asserts that the warning is there exactly when the statistic says pool
 * (both from the same rows: deterministic given them); on "paired" rows,
 * where every privatized feature row appears once with each label, the
 * class differences are exactly 0 (z = 0 up to rounding), so the classes
 * are pooled whatever the noise drew; with the label a function of x at a
 * large epsilon, z exceeds 2 thresholds except with a probability far below
 * 1e-12 (z grows like sqrt(n) times the class gap over the noise: the
 * engine's credit runs see z in the tens at this size). */
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/data/dataset.h"
#include "engine/data/qmap.h"
#include "engine/data/table.h"
#include "engine/data/table_ldp.h"
#include "engine/methods/calib_ldp.h"
#include "engine/methods/method.h"
#include "engine/methods/trainer.h"
#include "engine/methods/warnings.h"
#include "support/pg_method_test.h"
#include "support/pg_table_test.h"
#include "support/pg_test.h"

START_TEST(list_rules_and_bounds)
{
    pg_trainer_warnings w;
    memset(&w, 0, sizeof w);
    ck_assert_int_eq(pg_trainer_warnings_add(&w, "no_class_signal", "first %d", 1), PG_OK);
    ck_assert_int_eq(w.count, 1);
    unsigned v = w.version;
    ck_assert_uint_gt(v, 0);
    /* the same sentence again changes nothing; a new one replaces it */
    ck_assert_int_eq(pg_trainer_warnings_add(&w, "no_class_signal", "first %d", 1), PG_OK);
    ck_assert_uint_eq(w.version, v);
    ck_assert_int_eq(pg_trainer_warnings_add(&w, "no_class_signal", "second"), PG_OK);
    ck_assert_int_eq(w.count, 1);
    ck_assert_uint_gt(w.version, v);
    ck_assert_str_eq(w.items[0].message, "second");
    /* bad codes and empty sentences record nothing */
    v = w.version;
    ck_assert_int_eq(pg_trainer_warnings_add(&w, "", "x"), PG_EINVAL);
    ck_assert_int_eq(pg_trainer_warnings_add(&w, "Upper", "x"), PG_EINVAL);
    ck_assert_int_eq(pg_trainer_warnings_add(&w, "a b", "x"), PG_EINVAL);
    ck_assert_int_eq(pg_trainer_warnings_add(&w, "a-b", "x"), PG_EINVAL);
    char longcode[PG_TRAINER_WARN_CODE + 1];
    memset(longcode, 'a', PG_TRAINER_WARN_CODE);
    longcode[PG_TRAINER_WARN_CODE] = '\0';
    ck_assert_int_eq(pg_trainer_warnings_add(&w, longcode, "x"), PG_EINVAL);
    longcode[PG_TRAINER_WARN_CODE - 1] = '\0'; /* the longest that fits */
    ck_assert_int_eq(pg_trainer_warnings_add(&w, "ok", "%s", ""), PG_EINVAL);
    ck_assert_int_eq(pg_trainer_warnings_add(NULL, "ok", "x"), PG_EINVAL);
    ck_assert_int_eq(pg_trainer_warnings_add(&w, NULL, "x"), PG_EINVAL);
    ck_assert_int_eq(w.count, 1);
    ck_assert_uint_eq(w.version, v);
    ck_assert_int_eq(pg_trainer_warnings_add(&w, longcode, "x"), PG_OK);
    /* the bound: new codes beyond it are dropped and counted, known ones
     * still replace */
    char code[16];
    for (int i = 2; i < PG_TRAINER_WARN_MAX; i++) {
        snprintf(code, sizeof code, "c%d", i);
        ck_assert_int_eq(pg_trainer_warnings_add(&w, code, "w %d", i), PG_OK);
    }
    ck_assert_int_eq(w.count, PG_TRAINER_WARN_MAX);
    ck_assert_int_eq(pg_trainer_warnings_add(&w, "one_more", "x"), PG_ERANGE);
    ck_assert_int_eq(pg_trainer_warnings_add(&w, "and_more", "x"), PG_ERANGE);
    ck_assert_int_eq(w.count, PG_TRAINER_WARN_MAX);
    ck_assert_uint_eq(w.dropped, 2);
    ck_assert_int_eq(pg_trainer_warnings_add(&w, "no_class_signal", "third"), PG_OK);
    ck_assert_str_eq(w.items[0].message, "third");
    for (int i = 0; i < w.count; i++) ck_assert_str_ne(w.items[i].code, "one_more");
}
END_TEST

/* A sentence longer than the bound is cut, never inside a UTF-8 sequence,
 * and says so with "...". Every offset of a 2-byte character against the
 * cut is tried (a leading ASCII prefix of 0 or 1 byte). */
START_TEST(long_sentences_are_cut_at_a_character)
{
    for (int pre = 0; pre < 3; pre++) {
        char big[4 * PG_TRAINER_WARN_TEXT];
        size_t k = 0;
        for (int i = 0; i < pre; i++) big[k++] = 'x';
        while (k + 3 < sizeof big) big[k++] = (char)0xC3, big[k++] = (char)0xA9; /* é */
        big[k] = '\0';
        pg_trainer_warnings w;
        memset(&w, 0, sizeof w);
        ck_assert_int_eq(pg_trainer_warnings_add(&w, "long", "%s", big), PG_OK);
        const char *m = w.items[0].message;
        size_t n = strlen(m);
        ck_assert_uint_lt(n, PG_TRAINER_WARN_TEXT);
        ck_assert_uint_ge(n, PG_TRAINER_WARN_TEXT - 5);
        ck_assert_str_eq(m + n - 3, "...");
        /* the text before "..." is whole characters: the prefix, then é's */
        size_t body = n - 3;
        ck_assert_uint_ge(body, (size_t)pre);
        ck_assert_uint_eq((body - (size_t)pre) % 2, 0);
        ck_assert_int_eq(memcmp(m + pre, big + pre, body - (size_t)pre), 0);
    }
    /* a sentence that fits is kept whole */
    pg_trainer_warnings w;
    memset(&w, 0, sizeof w);
    char fit[PG_TRAINER_WARN_TEXT];
    memset(fit, 'y', sizeof fit - 1);
    fit[sizeof fit - 1] = '\0';
    ck_assert_int_eq(pg_trainer_warnings_add(&w, "fits", "%s", fit), PG_OK);
    ck_assert_str_eq(w.items[0].message, fit);
}
END_TEST

/* Each trainer owns its list: two threads writing their own never see the
 * other's codes (nothing shared, no global state). */
typedef struct writer {
    pg_trainer_warnings w;
    const char *code;
    int rounds;
} writer;

static void *write_many(void *arg)
{
    writer *wr = arg;
    for (int i = 0; i < wr->rounds; i++)
        pg_trainer_warnings_add(&wr->w, wr->code, "%s round %d", wr->code, i);
    return NULL;
}

START_TEST(lists_of_two_trainers_stay_apart)
{
    writer a = {.code = "alpha", .rounds = 20000}, b = {.code = "beta", .rounds = 20000};
    pthread_t ta, tb;
    ck_assert_int_eq(pthread_create(&ta, NULL, write_many, &a), 0);
    ck_assert_int_eq(pthread_create(&tb, NULL, write_many, &b), 0);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    ck_assert_int_eq(a.w.count, 1);
    ck_assert_int_eq(b.w.count, 1);
    ck_assert_str_eq(a.w.items[0].message, "alpha round 19999");
    ck_assert_str_eq(b.w.items[0].message, "beta round 19999");
    ck_assert_uint_eq(a.w.version, 20000);
}
END_TEST

/* ---- entropic_gan on a local table: no_class_signal -------------------- */

static const char *SCHEMA = "{\"columns\":["
                            "{\"name\":\"x\",\"type\":\"continuous\",\"min\":0,\"max\":10},"
                            "{\"name\":\"c\",\"type\":\"categorical\",\"categories\":[\"a\",\"b\","
                            "\"c\"]},"
                            "{\"name\":\"y\",\"type\":\"categorical\",\"categories\":[\"no\","
                            "\"yes\"]}],"
                            "\"label\":\"y\"}";
enum { N = 3000 };

typedef struct fixture {
    pg_table *t;
    pg_ldp_plan plan;
    pg_dataset ds;
    pg_data_desc desc;
} fixture;

enum { INDEPENDENT, SIGNAL, PAIRED };

/* Seeded clean rows (seed) privatized at a total epsilon: the label
 * independent of the features (INDEPENDENT), yes exactly when x > 5 with c
 * following the label (SIGNAL), or N / 2 independent rows privatized, then
 * each written twice, reported once as "no" and once as "yes" (PAIRED:
 * labels that carry nothing, exactly). */
static void make(fixture *f, double eps, int mode, uint64_t seed)
{
    bool signal = mode == SIGNAL;
    size_t priv = mode == PAIRED ? N / 2 : N;
    memset(f, 0, sizeof *f);
    f->t = pg_test_table(SCHEMA);
    size_t d = f->t->width;
    pg_rng r, noise;
    pg_rng_seeded(&r, seed, 0);
    ck_assert_int_eq(pg_rng_secure(&noise, NULL), PG_OK);
    float *x = pg_alloc_f32((size_t)N * d);
    int64_t *lab = pg_calloc(N, sizeof *lab);
    for (size_t i = 0; i < N; i++) {
        double xv = 10.0 * pg_rng_uniform(&r);
        int yes = signal ? xv > 5.0 : pg_rng_uniform(&r) < 0.5;
        lab[i] = yes;
        pg_table_value v = {.num = xv};
        ck_assert_int_eq(
            pg_table_encode_value(f->t, 0, &v, PG_TABLE_BOUNDS_REFUSE, x + i * d, NULL), PG_OK);
        v = (pg_table_value){.cat = signal ? (size_t)(yes ? 2 : 0) : pg_rng_below(&r, 3)};
        ck_assert_int_eq(
            pg_table_encode_value(f->t, 1, &v, PG_TABLE_BOUNDS_REFUSE, x + i * d, NULL), PG_OK);
    }
    pg_error err = {0};
    ck_assert_int_eq(pg_ldp_plan_make(f->t, PG_LDP_LAPLACE, eps, 0, &f->plan, &err), PG_OK);
    ck_assert_msg(pg_ldp_apply(&noise, f->t, &f->plan, x, lab, priv, &err) == PG_OK, "%s", err.msg);
    if (mode == PAIRED)
        for (size_t i = 0; i < priv; i++) {
            memcpy(x + (priv + i) * d, x + i * d, d * sizeof *x);
            lab[i] = 0;
            lab[priv + i] = 1;
        }
    pg_test_table_rows(f->t, &f->plan, x, lab, N, 2, -1e30f, 1e30f, &f->ds, &f->desc);
}

static void unmake(fixture *f)
{
    pg_dataset_free(&f->ds);
    pg_ldp_plan_free(&f->plan);
    pg_table_free(f->t);
}

/* The signal statistic of the fixture's privatized rows, as the trainer
 * computes it (calib_ldp.h). */
static pg_calib_ldp_signal signal_of(fixture *f)
{
    pg_calib_ldp *c;
    ck_assert_int_eq(pg_calib_ldp_make(f->t, 2, &c, NULL), PG_OK);
    ck_assert_int_eq(pg_calib_ldp_estimate(c, &f->plan, f->ds.x, f->ds.labels, N, NULL), PG_OK);
    pg_calib_ldp_signal s;
    pg_calib_ldp_signal_get(c, &s);
    pg_calib_ldp_free(c);
    return s;
}

static const pg_trainer_warning *find(const pg_trainer *t, const char *code)
{
    const pg_trainer_warnings *w = pg_trainer_warnings_of(t);
    for (int i = 0; w && i < w->count; i++)
        if (!strcmp(w->items[i].code, code)) return &w->items[i];
    return NULL;
}

#define GAN_SPEC                                                                                   \
    "{\"seed\": 5, \"model\": {\"hidden\": [16]}, \"train\": {\"steps\": 2, \"batch_size\": 64}, " \
    "\"ot\": {\"max_iter\": 20}}"

/* spec resolved by entropic_gan (m) on in; fails the test with the first
 * field error. */
static json_t *gan_resolved(const pg_method *m, const char *spec, const pg_job_data *in)
{
    pg_spec_errors e;
    json_t *r = pg_test_resolve(m, spec, in, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    return r;
}

/* Independent label, small epsilon: the warning follows the statistic
 * exactly (pooled in about 95 % of runs, by the check's design). */
START_TEST(entropic_gan_warning_follows_the_pooling_rule)
{
    fixture f;
    make(&f, 1.0, INDEPENDENT, 40);
    pg_calib_ldp_signal s = signal_of(&f);
    const pg_method *m = pg_method_find("entropic_gan");
    pg_job_data in = {.desc = &f.desc, .rows = &f.ds};
    json_t *r = gan_resolved(m, GAN_SPEC, &in);
    pg_trainer *t = NULL;
    ck_assert_int_eq(m->create(r, &in, 1, &t, NULL), PG_OK);
    bool pooled = s.threshold > 0 && s.max_z < s.threshold;
    ck_assert_msg((find(t, PG_WARN_NO_CLASS_SIGNAL) != NULL) == pooled, "z %g threshold %g",
                  s.max_z, s.threshold);
    m->destroy(t);
    json_decref(r);
    unmake(&f);
}
END_TEST

START_TEST(entropic_gan_warns_when_it_pools_the_classes)
{
    fixture f;
    make(&f, 1.0, PAIRED, 41);
    pg_calib_ldp_signal s = signal_of(&f);
    /* paired rows: no class difference at all, the pooling rule holds */
    ck_assert_msg(s.threshold > 0 && s.max_z < 1e-6, "z %g threshold %g", s.max_z, s.threshold);
    const pg_method *m = pg_method_find("entropic_gan");
    pg_job_data in = {.desc = &f.desc, .rows = &f.ds};
    json_t *r = gan_resolved(m, GAN_SPEC, &in);
    pg_trainer *t = pg_test_train(m, r, &in, NULL);
    const pg_trainer_warning *w = find(t, PG_WARN_NO_CLASS_SIGNAL);
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(pg_trainer_warnings_of(t)->count, 1);
    /* the sentence carries the statistic that decided */
    char z[32], th[32], tests[64];
    snprintf(z, sizeof z, "|z| %.3g ", s.max_z);
    snprintf(th, sizeof th, "threshold %.3g ", s.threshold);
    snprintf(tests, sizeof tests, "over %zu tests", s.tests);
    ck_assert_msg(strstr(w->message, z) && strstr(w->message, th) && strstr(w->message, tests),
                  "%s", w->message);
    ck_assert_ptr_nonnull(strstr(w->message, "majority rate"));
    /* a restored trainer (a resume) says it again */
    unsigned char *bytes;
    size_t len;
    ck_assert_int_eq(m->save(t, &bytes, &len, NULL), PG_OK);
    m->destroy(t);
    pg_error err = {0};
    ck_assert_msg(m->restore(r, &in, 1, bytes, len, &t, &err) == PG_OK, "%s", err.msg);
    ck_assert_ptr_nonnull(find(t, PG_WARN_NO_CLASS_SIGNAL));
    m->destroy(t);
    free(bytes);
    /* calibration off: nothing is pooled, nothing said */
    json_t *spec = json_loads(GAN_SPEC, 0, NULL);
    json_object_set_new(spec, "calibration", json_pack("{s:b}", "class_means", 0));
    char *txt = json_dumps(spec, JSON_COMPACT);
    json_t *r2 = gan_resolved(m, txt, &in);
    t = pg_test_train(m, r2, &in, NULL);
    ck_assert_ptr_null(find(t, PG_WARN_NO_CLASS_SIGNAL));
    m->destroy(t);
    free(txt);
    json_decref(spec);
    json_decref(r2);
    json_decref(r);
    unmake(&f);
}
END_TEST

START_TEST(entropic_gan_is_silent_with_a_class_signal)
{
    fixture f;
    make(&f, 20.0, SIGNAL, 42);
    pg_calib_ldp_signal s = signal_of(&f);
    ck_assert_msg(s.max_z > 2 * s.threshold, "z %g threshold %g", s.max_z, s.threshold);
    const pg_method *m = pg_method_find("entropic_gan");
    pg_job_data in = {.desc = &f.desc, .rows = &f.ds};
    json_t *r = gan_resolved(m, GAN_SPEC, &in);
    pg_trainer *t = pg_test_train(m, r, &in, NULL);
    ck_assert_int_eq(pg_trainer_warnings_of(t)->count, 0);
    m->destroy(t);
    json_decref(r);
    unmake(&f);
}
END_TEST

/* The DP label count's warning (dp_sinkhorn, swd_gen): classes whose
 * released count is below 3 noise sds are named by category, the others
 * not; none below, nothing said; one class or no noise, nothing. */
START_TEST(class_counts_in_the_noise_are_named)
{
    pg_table *t = pg_test_table("{\"columns\":[{\"name\":\"x\",\"type\":\"continuous\","
                                "\"min\":0,\"max\":1},{\"name\":\"y\",\"type\":"
                                "\"categorical\",\"categories\":[\"good\",\"bad\",\"ugly\"]}],"
                                "\"label\":\"y\"}");
    pg_trainer tr = {0};
    const double fine[3] = {500, 31, 900};
    pg_warn_class_counts(&tr, t, fine, 3, 10.0);
    ck_assert_int_eq(tr.warnings.count, 0);
    const double rare[3] = {500, 29.9, -4};
    pg_warn_class_counts(&tr, t, rare, 3, 10.0);
    ck_assert_int_eq(tr.warnings.count, 1);
    const char *m = tr.warnings.items[0].message;
    ck_assert_str_eq(tr.warnings.items[0].code, PG_WARN_CLASS_IN_NOISE);
    ck_assert_msg(strstr(m, "classes \"bad\" (29.9), \"ugly\" (-4) below 3 times") != NULL, "%s",
                  m);
    ck_assert_ptr_null(strstr(m, "good"));
    /* without a table the classes are numbered */
    pg_trainer tr2 = {0};
    pg_warn_class_counts(&tr2, NULL, rare, 3, 10.0);
    ck_assert_msg(strstr(tr2.warnings.items[0].message, "classes 1 (29.9), 2 (-4)") != NULL, "%s",
                  tr2.warnings.items[0].message);
    pg_trainer tr3 = {0};
    pg_warn_class_counts(&tr3, t, rare, 1, 10.0);
    pg_warn_class_counts(&tr3, t, rare, 3, 0.0);
    pg_warn_class_counts(&tr3, t, NULL, 3, 10.0);
    ck_assert_int_eq(tr3.warnings.count, 0);
    pg_table_free(t);
}
END_TEST

/* A released quantile map with a column whose noisy counts all fell below
 * the threshold (qmap.h makes it uniform): that column is named, the one
 * with mass is not; a map where every column has mass (even exactly uniform
 * data, with noise) says nothing. */
START_TEST(empty_quantile_map_columns_are_named)
{
    pg_table *t = pg_test_table("{\"columns\":[{\"name\":\"age\",\"type\":\"continuous\","
                                "\"min\":0,\"max\":100},{\"name\":\"income\",\"type\":"
                                "\"continuous\",\"min\":0,\"max\":1000}]}");
    pg_qmap *m = NULL;
    ck_assert_int_eq(pg_qmap_layout(t, 8, &m, NULL), PG_OK);
    ck_assert_uint_eq(m->ncols, 2);
    double c0[8] = {3, -2, 4.9, 0, 1, -7, 2, 4}; /* all below the threshold 5 */
    double c1[8] = {40, 55, 60.5, 52, 47, 49.25, 51, 58};
    double *counts[2] = {c0, c1};
    pg_qmap_set_counts(m, counts, 5.0);
    pg_trainer tr = {0};
    pg_warn_qmap_empty(&tr, m, t);
    ck_assert_int_eq(tr.warnings.count, 1);
    ck_assert_str_eq(tr.warnings.items[0].code, PG_WARN_QMAP_EMPTY);
    const char *msg = tr.warnings.items[0].message;
    ck_assert_msg(strstr(msg, "for column \"age\", so its map") != NULL, "%s", msg);
    ck_assert_ptr_null(strstr(msg, "income"));
    /* noisy counts of uniform data: not flat, nothing said */
    double u0[8] = {50.3, 49.1, 50.8, 49.7, 50.05, 50.6, 49.4, 50.2};
    counts[0] = u0;
    pg_qmap_set_counts(m, counts, 5.0);
    pg_trainer tr2 = {0};
    pg_warn_qmap_empty(&tr2, m, t);
    pg_warn_qmap_empty(&tr2, NULL, t);
    ck_assert_int_eq(tr2.warnings.count, 0);
    /* both empty: both named */
    counts[0] = c0;
    counts[1] = c0;
    pg_qmap_set_counts(m, counts, 5.0);
    pg_warn_qmap_empty(&tr2, m, t);
    ck_assert_msg(strstr(tr2.warnings.items[0].message, "columns \"age\", \"income\"") != NULL,
                  "%s", tr2.warnings.items[0].message);
    pg_qmap_free(m);
    pg_table_free(t);
}
END_TEST

/* Every method's trainer starts with an empty list. */
START_TEST(trainers_start_without_warnings)
{
    fixture f;
    make(&f, 20.0, SIGNAL, 43);
    const pg_method *m = pg_method_find("entropic_gan");
    pg_job_data in = {.desc = &f.desc, .rows = &f.ds};
    pg_spec_errors e;
    json_t *r = pg_test_resolve(m, GAN_SPEC, &in, &e);
    ck_assert_ptr_nonnull(r);
    pg_trainer *t = NULL;
    ck_assert_int_eq(m->create(r, &in, 1, &t, NULL), PG_OK);
    const pg_trainer_warnings *w = pg_trainer_warnings_of(t);
    ck_assert_int_eq(w->count, 0);
    ck_assert_uint_eq(w->dropped, 0);
    ck_assert_ptr_null(pg_trainer_warnings_of(NULL));
    m->destroy(t);
    json_decref(r);
    unmake(&f);
}
END_TEST

static Suite *make_suite(void)
{
    Suite *s = suite_create("methods/trainer_warn");
    TCase *tc = tcase_create("trainer_warn");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, list_rules_and_bounds);
    tcase_add_test(tc, long_sentences_are_cut_at_a_character);
    tcase_add_test(tc, lists_of_two_trainers_stay_apart);
    tcase_add_test(tc, entropic_gan_warning_follows_the_pooling_rule);
    tcase_add_test(tc, entropic_gan_warns_when_it_pools_the_classes);
    tcase_add_test(tc, entropic_gan_is_silent_with_a_class_signal);
    tcase_add_test(tc, trainers_start_without_warnings);
    tcase_add_test(tc, class_counts_in_the_noise_are_named);
    tcase_add_test(tc, empty_quantile_map_columns_are_named);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(make_suite)
