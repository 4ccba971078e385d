#include <jansson.h>
#include <math.h>

#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/core/rng.h"
#include "engine/data/dataset.h"
#include "engine/data/synth.h"
#include "engine/data/table.h"
#include "engine/methods/method.h"
#include "engine/methods/snapshot.h"
#include "engine/methods/warnings.h"
#include "support/pg_method_test.h"
#include "support/pg_table_test.h"
#include "support/pg_test.h"

#define N 101

/* Deterministic "noise": a fixed zig-zag of amplitude a. */
static double wiggle(int i, double a)
{
    static const double z[7] = {0.9, -0.4, 0.1, -1.0, 0.6, -0.2, 0.0};
    return a * z[i % 7];
}

static void series(long *steps, double *loss, double (*f)(double step), double noise)
{
    for (int i = 0; i < N; i++) {
        steps[i] = 10L * i;
        loss[i] = f((double)steps[i]) + wiggle(i, noise);
    }
}

static double rising(double s)
{
    return 1.0 + 0.001 * s;
}
static double falling(double s)
{
    return 2.0 * exp(-s / 300.0) + 0.5;
}
static double flat(double s)
{
    (void)s;
    return 0.4;
}
/* Rises for three quarters, then flat: the rule looks at the last quarter. */
static double rise_then_flat(double s)
{
    return s < 750 ? 0.4 + 0.001 * s : 1.15;
}

START_TEST(trend_fit_matches_closed_form)
{
    long st[N];
    double l[N];
    series(st, l, rising, 0.0);
    pg_trend t;
    ck_assert_int_eq(pg_trend_last_quarter(st, l, N, &t, NULL), PG_OK);
    /* Last quarter of [0, 1000]: steps 750..1000, 26 points on the exact line. */
    ck_assert_int_eq((int)t.n, 26);
    ck_assert_double_eq_tol(t.slope, 0.001, 1e-12);
    ck_assert_double_eq_tol(t.rise, 0.25, 1e-9);
    ck_assert_double_eq_tol(t.mean_abs, 1.0 + 0.001 * 875, 1e-9);
    ck_assert(isinf(t.t) || t.t > 1e6);
    ck_assert(pg_trend_rising(&t));
}
END_TEST

START_TEST(trend_rule_on_series)
{
    long st[N];
    double l[N];
    pg_trend t;
    series(st, l, rising, 0.02);
    ck_assert_int_eq(pg_trend_last_quarter(st, l, N, &t, NULL), PG_OK);
    ck_assert_msg(pg_trend_rising(&t), "a rising series: t %g rise %g", t.t, t.rise);
    series(st, l, falling, 0.02);
    ck_assert_int_eq(pg_trend_last_quarter(st, l, N, &t, NULL), PG_OK);
    ck_assert(!pg_trend_rising(&t));
    ck_assert(t.slope < 0);
    /* Noise much larger than any trend (a DP loss) is not a rise. */
    series(st, l, flat, 0.3);
    ck_assert_int_eq(pg_trend_last_quarter(st, l, N, &t, NULL), PG_OK);
    ck_assert(!pg_trend_rising(&t));
    series(st, l, rise_then_flat, 0.0);
    ck_assert_int_eq(pg_trend_last_quarter(st, l, N, &t, NULL), PG_OK);
    ck_assert(!pg_trend_rising(&t));
    /* A significant but tiny rise (under 5 % of the loss) is not flagged. */
    for (int i = 0; i < N; i++) l[i] = 100.0 + 1e-5 * (double)st[i];
    ck_assert_int_eq(pg_trend_last_quarter(st, l, N, &t, NULL), PG_OK);
    ck_assert(!pg_trend_rising(&t));
    /* Too short a history: no trend, and no warning from the appender. */
    ck_assert_int_eq(pg_trend_last_quarter(st, l, 5, &t, NULL), PG_EINVAL);
    json_t *w = json_array();
    series(st, l, rising, 0.0);
    ck_assert_int_eq(pg_warnings_append(st, l, 5, NULL, &(pg_data_desc){0}, w, NULL), 0);
    ck_assert_int_eq(pg_warnings_append(st, l, N, NULL, &(pg_data_desc){0}, w, NULL), 1);
    ck_assert_ptr_nonnull(strstr(json_string_value(json_array_get(w, 0)), "loss rose"));
    json_decref(w);
}
END_TEST

/* A loss history of n points at steps 0..n-1 around a mean of 1: a
 * stationary AR(1) wander (lag-1 autocorrelation phi, stationary sd sdx)
 * plus white DP-like noise (sd sde), and over the last quarter a linear rise
 * of `rise` (in units of the mean loss). */
static void ar1_history(pg_rng *r, size_t n, double phi, double sdx, double sde, double rise,
                        long *steps, double *loss)
{
    double x = sdx * pg_rng_normal(r), from = 0.75 * (double)(n - 1);
    for (size_t i = 0; i < n; i++) {
        if (i) x = phi * x + sdx * sqrt(1 - phi * phi) * pg_rng_normal(r);
        steps[i] = (long)i;
        double up = (double)i >= from ? rise * ((double)i - from) / ((double)(n - 1) - from) : 0;
        loss[i] = 1.0 + x + sde * pg_rng_normal(r) + up;
    }
}

/* Fraction of `reps` seeded histories on which the appender warns. */
static double warn_rate(uint64_t seed, int reps, size_t n, double phi, double sdx, double sde,
                        double rise)
{
    static long steps[500];
    static double loss[500];
    ck_assert(n <= 500);
    pg_rng r;
    pg_rng_seeded(&r, seed, 0);
    int hits = 0;
    for (int k = 0; k < reps; k++) {
        ar1_history(&r, n, phi, sdx, sde, rise, steps, loss);
        json_t *w = json_array();
        int a = pg_warnings_append(steps, loss, n, NULL, &(pg_data_desc){0}, w, NULL);
        ck_assert_int_ge(a, 0);
        hits += a > 0;
        json_decref(w);
    }
    return (double)hits / reps;
}

/* The false-alarm bound of warnings.h on stationary, strongly autocorrelated
 * losses: 20, 40 and 125 points in the last quarter (a history of 80, 160 and
 * the full 500 a job keeps). The rule's rate there is about 1-2 % with DP
 * noise and at most ~3.5 % without it; 2000 histories a case put the
 * binomial sd near 0.4 %, so the bounds hold with room. The raw-point t the
 * rule replaced (t > 3 on raw points) warned on 7-26 % of these. */
START_TEST(trend_false_alarms_on_autocorrelated_losses)
{
    static const size_t ns[] = {80, 160, 500};
    for (size_t c = 0; c < 3; c++) {
        double dp = warn_rate(100 + c, 2000, ns[c], 0.9, 0.1, 0.1, 0);
        ck_assert_msg(dp < 0.04, "phi 0.9 with DP noise, %zu points: warned on %.1f %%", ns[c],
                      100 * dp);
        double pure = warn_rate(200 + c, 2000, ns[c], 0.9, 0.1, 0.0, 0);
        ck_assert_msg(pure < 0.06, "phi 0.9 without DP noise, %zu points: warned on %.1f %%", ns[c],
                      100 * pure);
    }
}
END_TEST

/* A real rise is still caught: the mean loss rising by 1.5 times itself over
 * the last quarter, on the same noise, is flagged in > 99 % of histories
 * (measured); 400 histories a case, asserted >= 95 %. */
START_TEST(trend_detects_a_real_rise)
{
    static const size_t ns[] = {80, 160, 500};
    for (size_t c = 0; c < 3; c++) {
        double hit = warn_rate(300 + c, 400, ns[c], 0.9, 0.1, 0.1, 1.5);
        ck_assert_msg(hit >= 0.95, "a rise of 1.5, %zu points: flagged on %.1f %%", ns[c],
                      100 * hit);
    }
}
END_TEST

/* Fewer than PG_TREND_MIN_POINTS points in the last quarter never warn, not
 * even on a noiseless tenfold rise (a 40-step job keeps 40 points: 10 in its
 * last quarter); at the floor the same rise does. */
START_TEST(trend_short_histories_never_warn)
{
    long st[80];
    double l[80];
    for (size_t n = 2; n <= 80; n++) {
        for (size_t i = 0; i < n; i++) st[i] = (long)i, l[i] = 1.0 + 9.0 * (double)i / (double)n;
        size_t quarter = 0;
        for (size_t i = 0; i < n; i++) quarter += (double)i >= 0.75 * (double)(n - 1);
        json_t *w = json_array();
        int a = pg_warnings_append(st, l, n, NULL, &(pg_data_desc){0}, w, NULL);
        if (quarter < PG_TREND_MIN_POINTS)
            ck_assert_msg(a == 0, "%zu points (%zu in the quarter) warned", n, quarter);
        else
            ck_assert_msg(a == 1, "%zu points (%zu in the quarter) did not warn", n, quarter);
        json_decref(w);
    }
    /* The 40-step job above, named: 10 points in its quarter, no warning. */
    for (size_t i = 0; i < 40; i++) st[i] = (long)i, l[i] = 1.0 + 9.0 * (double)i / 40.0;
    json_t *w40 = json_array();
    ck_assert_int_eq(pg_warnings_append(st, l, 40, NULL, &(pg_data_desc){0}, w40, NULL), 0);
    json_decref(w40);
    /* And short noisy histories: none of 2000 warns. */
    pg_rng r;
    pg_rng_seeded(&r, 400, 0);
    for (int k = 0; k < 2000; k++) {
        size_t n = 8 + pg_rng_below(&r, 69); /* 8..76: at most 19 in the quarter */
        ar1_history(&r, n, 0.9, 0.1, 0.1, 3.0, st, l);
        json_t *w = json_array();
        ck_assert_int_eq(pg_warnings_append(st, l, n, NULL, &(pg_data_desc){0}, w, NULL), 0);
        json_decref(w);
    }
}
END_TEST

/* A Laplace-privatized half circle declared on [-4, 4], as in tutorial 1. */
static void make_local(size_t n, pg_dataset *ds, pg_data_desc *desc)
{
    pg_synth_params sp;
    pg_synth_defaults(PG_SYNTH_HALFCIRCLE, &sp, NULL);
    pg_rng r;
    pg_rng_seeded(&r, 78, 0);
    float *x = pg_alloc_f32(n * 2);
    pg_synth_sample(&sp, &r, n, x, NULL, NULL);
    for (size_t i = 0; i < n * 2; i++) x[i] += (float)pg_rng_laplace(&r, 0.4);
    pg_test_local_laplace_2d(x, n, -4.0f, 4.0f, ds, desc);
}

/* Trains to the end, records every step's loss, and returns the warnings. */
static json_t *train_warnings(const char *spec_text, const pg_dataset *ds, const pg_data_desc *desc)
{
    const pg_method *m = pg_method_find("entropic_gan");
    pg_spec_errors e;
    json_t *r = pg_test_resolve(m, spec_text, &(pg_job_data){.desc = desc}, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    pg_trainer *t;
    pg_error err = {0};
    ck_assert_msg(m->create(r, &(pg_job_data){.desc = desc, .rows = ds}, 1, &t, &err) == PG_OK,
                  "%s", err.msg);
    long steps[400];
    double loss[400];
    size_t n = 0;
    pg_step_report rep = {0};
    while (!rep.done) {
        ck_assert_msg(m->step(t, &rep, &err) == PG_OK, "%s", err.msg);
        ck_assert(n < 400);
        steps[n] = rep.step, loss[n++] = rep.loss;
    }
    pg_snapshot *snap;
    ck_assert_int_eq(m->snapshot(t, &snap, NULL), PG_OK);
    json_t *w = json_array();
    ck_assert_int_ge(pg_warnings_append(steps, loss, n, snap, desc, w, &err), 0);
    pg_snapshot_release(snap);
    m->destroy(t);
    json_decref(r);
    return w;
}

START_TEST(bad_job_warns_good_job_does_not)
{
    pg_threads_set(1);
    pg_dataset ds;
    pg_data_desc desc;
    make_local(2000, &ds, &desc);
    json_t *good = train_warnings("{\"train\": {\"steps\": 300, \"batch_size\": 128}, \"seed\": 3}",
                                  &ds, &desc);
    ck_assert_msg(json_array_size(good) == 0, "a good job warned: %s",
                  json_string_value(json_array_get(good, 0)));
    /* Plain SGD at the largest learning rate the spec allows (10 000 times
     * the default) throws the generator's outputs outside the declared range
     * (the last iterate's: this case turns off the parameter average that
     * the small-vector defaults serve). */
    json_t *bad = train_warnings("{\"train\": {\"steps\": 300, \"batch_size\": 128, \"lr\": 10, "
                                 "\"optimizer\": \"sgd\", \"ema\": 0}, \"seed\": 3}",
                                 &ds, &desc);
    ck_assert_msg(json_array_size(bad) >= 1, "a job with sgd at lr 10 did not warn");
    int range = 0;
    for (size_t i = 0; i < json_array_size(bad); i++)
        range += strstr(json_string_value(json_array_get(bad, i)), "outside the dataset") != NULL;
    ck_assert_int_eq(range, 1);
    json_decref(good);
    json_decref(bad);
    pg_dataset_free(&ds);
}
END_TEST

/* ---- collapse rules on typed tables ------------------------------------- */

static const char *TABLE =
    "{\"columns\":["
    "{\"name\":\"x\",\"type\":\"continuous\",\"min\":-5,\"max\":5},"
    "{\"name\":\"n\",\"type\":\"integer\",\"min\":0,\"max\":100,\"nullable\":true},"
    "{\"name\":\"c\",\"type\":\"categorical\",\"categories\":[\"a\",\"b\",\"c\"]},"
    "{\"name\":\"b\",\"type\":\"boolean\"},"
    "{\"name\":\"y\",\"type\":\"boolean\"}],\"label\":\"y\"}";

/* Fake models: mode 0 draws plausible rows (x uniform, n spread with 10 %
 * missing, c 60/30/10, b 30 % true); mode 1 outputs all-zero units (every
 * category the first, numbers at the midpoint: a dead generator); mode 2
 * c uniform and n piled on its maximum. */
typedef struct fake {
    const pg_table *t;
    int mode;
} fake;

static int fake_sample(const void *impl, size_t n, uint64_t seed, int label, float *out,
                       pg_error *err)
{
    (void)label, (void)err;
    const fake *f = impl;
    const pg_table *t = f->t;
    pg_rng r;
    pg_rng_seeded(&r, seed, 9);
    memset(out, 0, n * t->width * sizeof *out);
    for (size_t i = 0; i < n && f->mode != 1; i++) {
        float *row = out + i * t->width;
        double u = pg_rng_uniform(&r);
        pg_table_value v[4] = {{.num = -5 + 10 * pg_rng_uniform(&r)},
                               {.missing = pg_rng_uniform(&r) < 0.1,
                                .num = f->mode == 2 ? 100 : (double)pg_rng_below(&r, 101)},
                               {.cat = f->mode == 2 ? pg_rng_below(&r, 3)
                                       : u < 0.6    ? 0
                                       : u < 0.9    ? 1
                                                    : 2},
                               {.cat = pg_rng_uniform(&r) < 0.3}};
        for (size_t c = 0; c < 4; c++)
            ck_assert_int_eq(pg_table_encode_value(t, c, &v[c], PG_TABLE_BOUNDS_REFUSE, row, NULL),
                             PG_OK);
    }
    return PG_OK;
}

static void fake_destroy(void *impl)
{
    free(impl);
}

static const pg_snapshot_ops FAKE_OPS = {fake_sample, fake_destroy, NULL};

/* The collapse warnings of a fake model (ops over table t in `mode`). */
static json_t *collapse_with(const pg_snapshot_ops *ops, const pg_table *t, int mode)
{
    fake *f = malloc(sizeof *f);
    f->t = t, f->mode = mode;
    pg_snapshot *s;
    ck_assert_int_eq(pg_snapshot_new(ops, f, 1, t->width, 2, &s, NULL), PG_OK);
    const double w[2] = {0.7, 0.3};
    ck_assert_int_eq(pg_snapshot_set_class_weights(s, w, NULL), PG_OK);
    pg_data_desc desc = pg_test_table_desc(t, 100, 2, 0, 0);
    json_t *out = json_array();
    pg_error err = {0};
    ck_assert_msg(pg_warnings_append(NULL, NULL, 0, s, &desc, out, &err) >= 0, "%s", err.msg);
    pg_snapshot_release(s);
    return out;
}

static json_t *collapse_of(const pg_table *t, int mode)
{
    return collapse_with(&FAKE_OPS, t, mode);
}

static int count_with(const json_t *w, const char *a, const char *b)
{
    int k = 0;
    for (size_t i = 0; i < json_array_size(w); i++) {
        const char *m = json_string_value(json_array_get(w, i));
        k += strstr(m, a) && strstr(m, b);
    }
    return k;
}

START_TEST(collapse_warns_on_a_dead_model_not_on_a_good_one)
{
    pg_table *t = pg_test_table(TABLE);
    json_t *good = collapse_of(t, 0);
    ck_assert_msg(json_array_size(good) == 0, "a good model warned: %s",
                  json_string_value(json_array_get(good, 0)));
    json_t *dead = collapse_of(t, 1);
    ck_assert_int_eq(count_with(dead, "'x'", "midpoint"), 1);
    ck_assert_int_eq(count_with(dead, "'n'", "midpoint"), 1);
    ck_assert_int_eq(count_with(dead, "'c'", "one value"), 1);
    ck_assert_int_eq(count_with(dead, "'b'", "one value"), 1);
    ck_assert_int_eq(json_array_size(dead), 4);
    json_t *flat = collapse_of(t, 2);
    ck_assert_int_eq(count_with(flat, "'c'", "almost uniform"), 1);
    ck_assert_int_eq(count_with(flat, "'n'", "pile on one value (100)"), 1);
    ck_assert_int_eq(json_array_size(flat), 2);
    json_decref(good), json_decref(dead), json_decref(flat);
    pg_table_free(t);
}
END_TEST

/* Counts and money columns as a marginal model serves them: m (0..20000)
 * has 57 % of its rows spread uniformly over one bin [2500, 5000), k (0..20)
 * has 51 % on the value 1 (attrition's YearsSinceLastPromotion has 40 % on
 * 0 in the data). Mode 4 puts 99.5 % of k on 1: collapsed. */
static const char *TABLE_COUNTS = "{\"columns\":["
                                  "{\"name\":\"m\",\"type\":\"integer\",\"min\":0,\"max\":20000},"
                                  "{\"name\":\"k\",\"type\":\"integer\",\"min\":0,\"max\":20},"
                                  "{\"name\":\"y\",\"type\":\"boolean\"}],\"label\":\"y\"}";

static int counts_sample(const void *impl, size_t n, uint64_t seed, int label, float *out,
                         pg_error *err)
{
    (void)label, (void)err;
    const fake *f = impl;
    const pg_table *t = f->t;
    pg_rng r;
    pg_rng_seeded(&r, seed, 10);
    memset(out, 0, n * t->width * sizeof *out);
    double on_one = f->mode == 4 ? 0.995 : 0.51;
    for (size_t i = 0; i < n; i++) {
        float *row = out + i * t->width;
        pg_table_value v[2] = {
            {.num = pg_rng_uniform(&r) < 0.57 ? (double)(2500 + pg_rng_below(&r, 2500))
                                              : (double)pg_rng_below(&r, 20001)},
            {.num = pg_rng_uniform(&r) < on_one ? 1.0 : (double)pg_rng_below(&r, 21)}};
        for (size_t c = 0; c < 2; c++)
            ck_assert_int_eq(pg_table_encode_value(t, c, &v[c], PG_TABLE_BOUNDS_REFUSE, row, NULL),
                             PG_OK);
    }
    return PG_OK;
}

static const pg_snapshot_ops COUNTS_OPS = {counts_sample, fake_destroy, NULL};

/* A dense bin is not one value, and a count's mode is not a collapse: the
 * old rule chained gaps below 1e-3 of the span (m's 1140 draws in one bin
 * are 2.2 apart, under its 20) and held every integer column to 50 %, so it
 * warned on both columns here (README tutorial 3 saw both on aim's output). */
START_TEST(collapse_spares_dense_bins_and_count_modes)
{
    pg_table *t = pg_test_table(TABLE_COUNTS);
    json_t *fine = collapse_with(&COUNTS_OPS, t, 3);
    ck_assert_msg(json_array_size(fine) == 0, "a plausible model warned: %s",
                  json_string_value(json_array_get(fine, 0)));
    json_t *dead = collapse_with(&COUNTS_OPS, t, 4);
    ck_assert_int_eq(count_with(dead, "'k'", "pile on one value (1)"), 1);
    ck_assert_int_eq(json_array_size(dead), 1);
    json_decref(fine), json_decref(dead);
    pg_table_free(t);
}
END_TEST

static Suite *warnings_suite(void)
{
    Suite *s = suite_create("methods/warnings");
    TCase *tc = tcase_create("warnings");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, trend_fit_matches_closed_form);
    tcase_add_test(tc, trend_rule_on_series);
    tcase_add_test(tc, trend_false_alarms_on_autocorrelated_losses);
    tcase_add_test(tc, trend_detects_a_real_rise);
    tcase_add_test(tc, trend_short_histories_never_warn);
    tcase_add_test(tc, bad_job_warns_good_job_does_not);
    tcase_add_test(tc, collapse_warns_on_a_dead_model_not_on_a_good_one);
    tcase_add_test(tc, collapse_spares_dense_bins_and_count_modes);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(warnings_suite)
