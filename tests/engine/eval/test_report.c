#include <jansson.h>

#include "engine/core/alloc.h"
#include "engine/core/rng.h"
#include "engine/eval/report.h"
#include "support/pg_test.h"

/* Rows of d columns: two Gaussian blobs by label (class c has mean 2c on
 * column 0), column 1 = column 0 + noise, the rest noise; with `cats`, the
 * last two columns are category codes (k = 3 and 4) tied to the label. */
static void rows(pg_rng *r, float *x, int32_t *y, size_t n, size_t d, float shift, bool cats)
{
    for (size_t i = 0; i < n; i++) {
        int c = (int)pg_rng_below(r, 2);
        y[i] = c;
        for (size_t j = 0; j < d; j++) x[i * d + j] = (float)pg_rng_normal(r) + shift;
        x[i * d] += 2.0f * (float)c;
        x[i * d + 1] = x[i * d] + 0.5f * (float)pg_rng_normal(r);
        if (cats) {
            x[i * d + d - 2] = (float)(pg_rng_below(r, 4) == 0 ? pg_rng_below(r, 3) : (uint64_t)c);
            x[i * d + d - 1] = (float)pg_rng_below(r, 4);
        }
    }
}

typedef struct data {
    size_t ns, nr, d;
    float *syn, *ref;
    int32_t *ys, *yr;
} data;

static data make(size_t ns, size_t nr, size_t d, float shift, bool cats, uint64_t seed)
{
    data t = {
        ns, nr, d, pg_alloc_f32(ns * d), pg_alloc_f32(nr * d), pg_calloc(ns, 4), pg_calloc(nr, 4)};
    pg_rng r;
    pg_rng_seeded(&r, seed, 0);
    rows(&r, t.ref, t.yr, nr, d, 0.0f, cats);
    rows(&r, t.syn, t.ys, ns, d, shift, cats);
    return t;
}

static void drop(data *t)
{
    pg_free(t->syn), pg_free(t->ref), pg_free(t->ys), pg_free(t->yr);
}

static pg_eval_input input(const data *t, const pg_eval_column *cols)
{
    return (pg_eval_input){t->syn, t->ref, t->ns, t->nr, t->d, cols,
                           t->ys,  t->yr,  2,     NULL,  NULL, 0};
}

static pg_eval_opts quick(void)
{
    pg_eval_opts o;
    pg_eval_defaults(&o);
    o.seed = 11;
    o.sw_directions = 100;
    o.sinkhorn_rows = 300;
    return o;
}

START_TEST(copy_scores_perfect_marginals_and_flags_memorisation)
{
    data t = make(600, 600, 6, 0.0f, false, 1);
    memcpy(t.syn, t.ref, 600 * 6 * sizeof(float));
    memcpy(t.ys, t.yr, 600 * sizeof(int32_t));
    pg_eval_input in = input(&t, NULL);
    pg_eval_opts o = quick();
    pg_eval_report r;
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, NULL), PG_OK);
    ck_assert_uint_eq(r.h, 300);
    ck_assert_uint_eq(r.m, 300);
    for (size_t j = 0; j < 6; j++) {
        ck_assert_double_eq(r.columns[j].ks, 0.0);
        ck_assert_double_eq(r.columns[j].w1, 0.0);
        ck_assert_double_eq(r.columns[j].mean_syn, r.columns[j].mean_real);
    }
    ck_assert_double_eq(r.pearson_mad, 0.0);
    ck_assert_uint_eq(r.pearson_pairs, 15);
    /* S is a random half of a copy of the reference: about half its rows are
     * copies of B rows (DCR 0), the others are fresh rows for B. */
    ck_assert_double_eq(r.dcr_syn_q[0], 0.0);
    ck_assert_double_eq(r.dcr_syn_q[1], 0.0);
    ck_assert(r.dcr_real_q[0] > 0.0);
    ck_assert(r.dcr_share_below > 0.35 && r.dcr_share_below < 0.65);
    ck_assert(r.acc_syn > 0.8 && r.acc_real > 0.8);
    pg_eval_report_free(&r);
    drop(&t);
}
END_TEST

START_TEST(fresh_draws_sit_at_the_noise_floor_and_shifts_do_not)
{
    data same = make(800, 800, 5, 0.0f, false, 2), moved = make(800, 800, 5, 1.0f, false, 2);
    pg_eval_opts o = quick();
    pg_eval_report a, b;
    pg_eval_input ia = input(&same, NULL), ib = input(&moved, NULL);
    ck_assert_int_eq(pg_eval_report_run(&ia, &o, &a, NULL), PG_OK);
    ck_assert_int_eq(pg_eval_report_run(&ib, &o, &b, NULL), PG_OK);
    /* Same distribution: both figures within a factor 2 of the floor. A shift of
     * 1 in every column: sliced W2 near sqrt(5)/sqrt(5) = 1 (shift norm over
     * sqrt(d) on average), far above the floor. */
    ck_assert(a.sw2_syn < 2 * a.sw2_floor && a.sw2_floor < 2 * a.sw2_syn);
    ck_assert(b.sw2_syn > 5 * b.sw2_floor);
    ck_assert(b.sinkhorn_syn > 5 * fabs(b.sinkhorn_floor));
    ck_assert(fabs(a.sinkhorn_syn) < 3 * fabs(a.sinkhorn_floor) + 1e-3);
    ck_assert(b.columns[2].ks > 0.25 && a.columns[2].ks < 0.1);
    ck_assert_double_eq_tol(b.columns[2].mean_syn - b.columns[2].mean_real, 1.0, 0.15);
    /* The same seed draws the same split and directions: the floors agree (up
     * to the order in which the sliced kernel's threads add directions up). */
    ck_assert_double_eq_tol(a.sw2_floor, b.sw2_floor, 1e-12 * a.sw2_floor);
    ck_assert_double_eq_tol(a.sinkhorn_floor, b.sinkhorn_floor, 1e-4 * fabs(a.sinkhorn_floor));
    ck_assert_double_eq(a.dcr_real_q[2], b.dcr_real_q[2]);
    /* Memorisation: fresh draws are not closer to B than real rows. */
    ck_assert(a.dcr_share_below < 0.12);
    pg_eval_report_free(&a);
    pg_eval_report_free(&b);
    drop(&same);
    drop(&moved);
}
END_TEST

START_TEST(utility_sees_wrong_labels)
{
    data t = make(1000, 1000, 4, 0.0f, false, 3);
    for (size_t i = 0; i < t.ns; i++) t.ys[i] = 1 - t.ys[i];
    pg_eval_input in = input(&t, NULL);
    pg_eval_opts o = quick();
    o.marginals = o.pairwise = o.distribution = o.memorisation = false;
    pg_eval_report r;
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, NULL), PG_OK);
    ck_assert(r.has_utility && !r.has_marginals && !r.has_memorisation);
    ck_assert(r.acc_real > 0.8);
    ck_assert(r.acc_syn < 0.2); /* flipped labels: the classifier is inverted */
    pg_eval_report_free(&r);
    in.syn_labels = in.ref_labels = NULL;
    o.marginals = true;
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, NULL), PG_OK);
    ck_assert(!r.has_utility && r.has_marginals);
    pg_eval_report_free(&r);
    drop(&t);
}
END_TEST

START_TEST(mixed_columns)
{
    data t = make(500, 700, 6, 0.0f, true, 4);
    pg_eval_column cols[6] = {
        {PG_EVAL_NUMERIC, 0, "x0", NULL},    {PG_EVAL_NUMERIC, 0, "x1", NULL},
        {PG_EVAL_NUMERIC, 0, NULL, NULL},    {PG_EVAL_NUMERIC, 0, NULL, NULL},
        {PG_EVAL_CATEGORICAL, 3, "c", NULL}, {PG_EVAL_CATEGORICAL, 4, "u", NULL}};
    pg_eval_input in = input(&t, cols);
    pg_eval_opts o = quick();
    pg_eval_report r;
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, NULL), PG_OK);
    ck_assert_uint_eq(r.h, 350);
    ck_assert_uint_eq(r.m, 350);
    ck_assert_uint_eq(r.pearson_pairs, 6);
    ck_assert_uint_eq(r.cramer_pairs, 1);
    ck_assert(isnan(r.assoc_real[0 * 6 + 4])); /* mixed pair */
    ck_assert(isnan(r.columns[4].ks) && r.columns[4].tv < 0.1 && r.columns[0].ks < 0.15);
    double s = 0;
    for (int c = 0; c < 4; c++) s += r.columns[5].freq_real[c];
    ck_assert_double_eq_tol(s, 1.0, 1e-12);
    ck_assert(r.assoc_real[0 * 6 + 1] > 0.8);
    ck_assert_double_eq_tol(r.assoc_real[0 * 6 + 1], r.assoc_syn[0 * 6 + 1], 0.1);

    json_t *j = NULL;
    ck_assert_int_eq(pg_eval_report_json(&r, cols, 10, &j, NULL), PG_OK);
    ck_assert_str_eq(
        json_string_value(json_object_get(
            json_array_get(json_object_get(json_object_get(j, "marginals"), "columns"), 4),
            "name")),
        "c");
    json_t *pw = json_object_get(j, "pairwise");
    ck_assert(json_is_null(json_array_get(json_array_get(json_object_get(pw, "real"), 0), 4)));
    ck_assert_double_eq(json_real_value(json_object_get(pw, "pearson_mean_abs_diff")),
                        r.pearson_mad);
    ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(j, "split"), "matched")),
                     350);
    ck_assert(
        json_is_object(json_object_get(json_object_get(j, "distribution"), "sinkhorn_divergence")));
    json_decref(j);
    ck_assert_int_eq(pg_eval_report_json(&r, cols, 5, &j, NULL), PG_OK);
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(j, "pairwise"), "matrices")),
                     "omitted");
    json_decref(j);
    pg_eval_report_free(&r);
    drop(&t);
}
END_TEST

typedef struct watch {
    int calls, stop_at;
    double last;
} watch;

static int watcher(void *ctx, const char *stage, double frac)
{
    watch *w = ctx;
    ck_assert_ptr_nonnull(stage);
    ck_assert_msg(frac >= w->last - 1e-12 && frac <= 1.0 + 1e-12, "%s: %g after %g", stage, frac,
                  w->last);
    w->last = frac;
    return ++w->calls == w->stop_at;
}

START_TEST(progress_is_monotone_and_cancellation_stops)
{
    data t = make(300, 300, 4, 0.0f, false, 5);
    pg_eval_input in = input(&t, NULL);
    pg_eval_opts o = quick();
    watch w = {0, -1, 0.0};
    o.progress = watcher;
    o.progress_ctx = &w;
    pg_eval_report r;
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, NULL), PG_OK);
    ck_assert_double_eq_tol(w.last, 1.0, 1e-12);
    int total = w.calls;
    ck_assert_int_gt(total, 8);
    pg_eval_report_free(&r);
    for (int k = 1; k <= total; k += 3) {
        w = (watch){0, k, 0.0};
        pg_error e = {0};
        ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, &e), PG_ECANCELLED);
        ck_assert_ptr_nonnull(strstr(e.msg, "cancelled"));
        ck_assert_ptr_null(r.columns);
        ck_assert_ptr_null(r.assoc_real);
        ck_assert(!r.has_memorisation);
    }
    drop(&t);
}
END_TEST

START_TEST(hostile_inputs)
{
    data t = make(50, 50, 3, 0.0f, false, 6);
    pg_eval_opts o = quick();
    pg_eval_report r;
    pg_error e = {0};
    pg_eval_input in = input(&t, NULL);
    in.syn_labels = NULL;
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, &e), PG_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "both"));
    in = input(&t, NULL);
    in.n_ref = 1;
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, NULL), PG_EINVAL);
    in = input(&t, NULL);
    t.yr[7] = 2;
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, &e), PG_EINVAL);
    t.yr[7] = 0;
    t.syn[10] = NAN;
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, &e), PG_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "synthetic row 4 column 2")); /* from 1 */
    t.syn[10] = 0.0f;
    pg_eval_column cols[3] = {{PG_EVAL_NUMERIC, 0, NULL, NULL},
                              {PG_EVAL_NUMERIC, 0, NULL, NULL},
                              {PG_EVAL_CATEGORICAL, 2, NULL, NULL}};
    in.columns = cols; /* column 2 holds Gaussian noise, not codes */
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, &e), PG_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "column 2"));
    ck_assert_ptr_null(r.columns);
    cols[2].categories = 0;
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, NULL), PG_EINVAL);
    cols[2].categories = 2;
    in.columns = NULL;
    o.sw_directions = 0;
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, NULL), PG_EINVAL);
    o = quick();
    o.sinkhorn_rows = PG_EVAL_MAX_SINKHORN_ROWS + 1;
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, NULL), PG_EINVAL);
    o.sinkhorn_rows = 100;
    o.sinkhorn_reg_rel = NAN;
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, NULL), PG_EINVAL);
    o = quick();
    /* A constant reference: every figure but the Sinkhorn divergence. */
    float *keep = pg_alloc_f32(50 * 3);
    memcpy(keep, t.ref, 50 * 3 * sizeof(float));
    for (size_t i = 0; i < 50 * 3; i++) t.ref[i] = 0.5f;
    in = input(&t, NULL);
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, NULL), PG_OK);
    ck_assert(r.has_distribution && !r.has_sinkhorn && r.sw2_floor == 0.0);
    ck_assert(isnan(r.pearson_mad) && r.pearson_pairs == 0);
    ck_assert_double_eq(r.dcr_real_q[4], 0.0);
    pg_eval_report_free(&r);
    memcpy(t.ref, keep, 50 * 3 * sizeof(float));
    pg_free(keep);
    /* One synthetic row still reports (m = 1). */
    in = input(&t, NULL);
    in.n_syn = 1;
    o.utility = false;
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, NULL), PG_OK);
    ck_assert_uint_eq(r.m, 1);
    pg_eval_report_free(&r);
    drop(&t);
}
END_TEST

/* Decoded columns with units (a typed table): NaN is a missing number only
 * there and only in numeric columns; the units must be complete and given
 * for both sets; the majority rate is the share of B's most frequent class,
 * B being the documented split (seeded stream 0x5e1f, the first h of a
 * shuffled prefix), recomputed here. */
START_TEST(decoded_columns_with_units)
{
    data t = make(60, 80, 3, 0.0f, false, 9);
    data u = make(60, 80, 4, 0.0f, false, 10);
    pg_eval_opts o = quick();
    pg_eval_report r;
    pg_error e = {0};
    pg_eval_column cols[3] = {{PG_EVAL_NUMERIC, 0, NULL, NULL},
                              {PG_EVAL_NUMERIC, 0, NULL, NULL},
                              {PG_EVAL_CATEGORICAL, 2, NULL, NULL}};
    for (size_t i = 0; i < 60; i++) t.syn[i * 3 + 2] = (float)(i % 2);
    for (size_t i = 0; i < 80; i++) t.ref[i * 3 + 2] = (float)(i % 3 == 0);
    t.syn[0 * 3 + 1] = NAN; /* missing numbers */
    t.ref[5 * 3 + 1] = NAN;
    t.ref[6 * 3 + 1] = NAN;
    pg_eval_input in = input(&t, cols);
    /* without units a NaN is refused */
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, &e), PG_EINVAL);
    in.syn_units = u.syn;
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, &e), PG_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "units"));
    in.ref_units = u.ref;
    in.units = 4;
    for (size_t i = 0; i < 80; i++) t.yr[i] = i % 4 == 0; /* 1 in 4 is class 1 */
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, &e), PG_OK);
    ck_assert_double_eq_tol(r.columns[1].missing_syn, 1.0 / 60, 1e-15);
    ck_assert_double_eq_tol(r.columns[1].missing_real, 2.0 / 80, 1e-15);
    ck_assert(isfinite(r.columns[1].ks) && isfinite(r.columns[1].mean_real));
    ck_assert(isfinite(r.assoc_real[0 * 3 + 1]) && r.pearson_pairs == 1);
    ck_assert(r.has_utility && r.has_distribution && r.has_memorisation);
    /* the majority rate over B, recomputed from the documented split */
    pg_rng rng;
    pg_rng_seeded(&rng, o.seed, 0x5e1f);
    uint32_t perm[80];
    for (uint32_t i = 0; i < 80; i++) perm[i] = i;
    for (size_t i = 0; i < r.h + r.m && i + 1 < 80; i++) {
        size_t j = i + (size_t)pg_rng_below(&rng, 80 - i);
        uint32_t tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
    }
    size_t ones = 0;
    for (size_t i = 0; i < r.h; i++) ones += (size_t)t.yr[perm[i]];
    size_t top = ones > r.h - ones ? ones : r.h - ones;
    ck_assert_double_eq_tol(r.majority, (double)top / (double)r.h, 1e-15);
    ck_assert_int_eq(r.majority_class, ones > r.h - ones ? 1 : 0);
    pg_eval_report_free(&r);
    /* a NaN in a categorical column, or in the units, is refused */
    t.syn[3 * 3 + 2] = NAN;
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, &e), PG_EINVAL);
    t.syn[3 * 3 + 2] = 1.0f;
    u.ref[7] = NAN;
    ck_assert_int_eq(pg_eval_report_run(&in, &o, &r, &e), PG_EINVAL);
    ck_assert_ptr_nonnull(strstr(e.msg, "unit"));
    drop(&t);
    drop(&u);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("eval_report");
    TCase *t = tcase_create("core");
    tcase_set_timeout(t, 120);
    tcase_add_test(t, copy_scores_perfect_marginals_and_flags_memorisation);
    tcase_add_test(t, fresh_draws_sit_at_the_noise_floor_and_shifts_do_not);
    tcase_add_test(t, utility_sees_wrong_labels);
    tcase_add_test(t, mixed_columns);
    tcase_add_test(t, progress_is_monotone_and_cancellation_stops);
    tcase_add_test(t, hostile_inputs);
    tcase_add_test(t, decoded_columns_with_units);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
