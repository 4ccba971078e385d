#include <jansson.h>

#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/data/dataset.h"
#include "engine/data/synth.h"
#include "engine/eval/arc.h"
#include "engine/data/table.h"
#include "engine/data/table_ldp.h"
#include "engine/methods/generator.h"
#include "engine/methods/heads.h"
#include "engine/methods/ldp_cost.h"
#include "engine/methods/method.h"
#include "engine/methods/spec.h"
#include "engine/privacy/privacy.h"
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

/* ---- typed local tables ------------------------------------------------ */

/* Every kind of block: x (1 unit), n nullable (value, indicator), c (3),
 * cn nullable (2 + missing), b (1), bn nullable (true, missing): width 12,
 * label y (no units). Seven columns, so a total epsilon E gives E / 7 each. */
static const char *LDP_TABLE =
    "{\"columns\":["
    "{\"name\":\"x\",\"type\":\"continuous\",\"min\":-5,\"max\":5},"
    "{\"name\":\"n\",\"type\":\"integer\",\"min\":0,\"max\":10,\"nullable\":true},"
    "{\"name\":\"c\",\"type\":\"categorical\",\"categories\":[\"a\",\"b\",\"c\"]},"
    "{\"name\":\"cn\",\"type\":\"categorical\",\"categories\":[\"u\",\"v\"],\"nullable\":true},"
    "{\"name\":\"b\",\"type\":\"boolean\"},"
    "{\"name\":\"bn\",\"type\":\"boolean\",\"nullable\":true},"
    "{\"name\":\"y\",\"type\":\"categorical\",\"categories\":[\"no\",\"yes\"]}],"
    "\"label\":\"y\"}";

static pg_table *ldp_table(void)
{
    json_t *j = json_loads(LDP_TABLE, 0, NULL);
    pg_table *t = NULL;
    pg_error err = {0};
    ck_assert_msg(pg_table_from_json(j, &t, &err) == PG_OK, "%s", err.msg);
    json_decref(j);
    ck_assert_uint_eq(t->width, 12);
    return t;
}

/* A clean row: x 1.5, n 4, c "b", cn "v", b true, bn false. */
static void clean_row(const pg_table *t, float *row)
{
    const pg_table_value v[6] = {{.num = 1.5}, {.num = 4}, {.cat = 1},
                                 {.cat = 1},   {.cat = 1}, {.cat = 0}};
    for (size_t c = 0; c < 6; c++)
        ck_assert_int_eq(pg_table_encode_value(t, c, &v[c], PG_TABLE_BOUNDS_REFUSE, row, NULL),
                         PG_OK);
}

static double cost1(const pg_ldp_cost *c, const float *x, const float *y)
{
    float v;
    pg_error err = {0};
    ck_assert_msg(pg_ldp_cost_matrix(c, x, 1, y, 1, &v, 1, &err) == PG_OK, "%s", err.msg);
    return v;
}

/* The cost is the negative log-likelihood of the channel the privatizer
 * (pg_ldp_apply) really applies, block by block:
 *  - randomized response: reporting another state than the generated one
 *    costs log(keep / other) more than reporting it, which for k-ary
 *    randomized response is exactly the column's epsilon (the missing
 *    indicator of a nullable number: half of it). Checked at a column epsilon
 *    of 30, where the old common floor (q >= 1e-6) capped the difference at
 *    13.8 (this part fails on the old code), and at 1.
 *  - Laplace: moving the generated value by h changes the cost by h / b,
 *    and b is the scale of the noise the privatizer adds: over N = 40000
 *    privatized copies of one clean row, mean(|y - x|) / b estimates 1
 *    (|Laplace(b)| / b is Exp(1)); the bound 0.05 has a Chernoff false-alarm
 *    probability below exp(-40000 * 0.0012) = 1e-21 per side.
 *  - randomized response frequencies: the share of copies that keep their
 *    state estimates the plan's keep probability (Hoeffding: |error| > 0.02
 *    has probability below 2 exp(-2 N 0.02^2) = 2.5e-14). */
START_TEST(channel_cost_is_the_privatizers_likelihood)
{
    pg_table *t = ldp_table();
    const double col_eps = _i == 0 ? 30.0 : 1.0;
    pg_ldp_plan plan;
    pg_error err = {0};
    ck_assert_int_eq(
        pg_ldp_plan_make_split(t, PG_LDP_LAPLACE, 7 * col_eps, 0, PG_LDP_SPLIT_EVEN, &plan, &err),
        PG_OK);
    pg_ldp_cost *c = NULL;
    ck_assert_msg(pg_ldp_cost_make(t, &plan, true, &c, &err) == PG_OK, "%s", err.msg);
    float x[12] = {0}, y[12];
    clean_row(t, x);
    double base = cost1(c, x, x);
    /* Each randomized-response block: flip the reported state only (units:
     * x 0; n 1 value, 2 indicator; c 3-5; cn 6-8 with 8 missing; b 9; bn 10
     * true, 11 missing). -1: no unit. */
    const struct {
        int clear, set;
        double eps;
    } flips[] = {
        {-1, 2, col_eps / 2}, /* n: present -> missing (the indicator's half) */
        {4, 3, col_eps},      /* c: b -> a */
        {7, 8, col_eps},      /* cn: v -> missing */
        {9, -1, col_eps},     /* b: true -> false */
        {-1, 10, col_eps},    /* bn: false -> true */
    };
    for (size_t f = 0; f < sizeof flips / sizeof flips[0]; f++) {
        memcpy(y, x, sizeof y);
        if (flips[f].clear >= 0) y[flips[f].clear] = 0.0f;
        if (flips[f].set >= 0) y[flips[f].set] = 1.0f;
        double diff = cost1(c, x, y) - base;
        ck_assert_msg(fabs(diff - flips[f].eps) < 1e-3 * flips[f].eps + 1e-4,
                      "flip %zu at column epsilon %g: cost difference %.6f, channel says %.6f", f,
                      col_eps, diff, flips[f].eps);
    }
    /* Laplace on x (unit 0) and n's value (unit 1): cost slope 1 / b. */
    for (size_t u = 0; u < 2; u++) {
        const pg_ldp_column *pc = &plan.cols[u];
        memcpy(y, x, sizeof y);
        y[u] += 0.25f;
        double slope = (cost1(c, x, y) - base) / 0.25;
        ck_assert_double_eq_tol(slope, 1.0 / pc->noise_scale, 1e-4 / pc->noise_scale);
    }
    /* The privatizer's noise against the scale and keep the cost uses. */
    enum { N = 40000 };
    float *rows = pg_alloc_f32((size_t)N * 12);
    int64_t *lab = pg_calloc(N, sizeof *lab);
    for (size_t i = 0; i < N; i++) memcpy(rows + i * 12, x, sizeof x);
    pg_rng sec;
    ck_assert_int_eq(pg_rng_secure(&sec, &err), PG_OK);
    ck_assert_msg(pg_ldp_apply(&sec, t, &plan, rows, lab, N, &err) == PG_OK, "%s", err.msg);
    double absdev[2] = {0, 0}, kept_c = 0, kept_y = 0;
    for (size_t i = 0; i < N; i++) {
        for (size_t u = 0; u < 2; u++) absdev[u] += fabs((double)rows[i * 12 + u] - x[u]);
        kept_c += rows[i * 12 + 4] == 1.0f;
        kept_y += lab[i] == 0;
    }
    for (size_t u = 0; u < 2; u++) {
        double r = absdev[u] / N / plan.cols[u].noise_scale;
        ck_assert_msg(fabs(r - 1.0) < 0.05, "unit %zu: mean |noise| / b = %.4f", u, r);
    }
    ck_assert_msg(fabs(kept_c / N - plan.cols[2].keep) < 0.02, "c kept %.4f, plan %.4f", kept_c / N,
                  plan.cols[2].keep);
    ck_assert_msg(fabs(kept_y / N - plan.cols[6].keep) < 0.02, "label kept %.4f, plan %.4f",
                  kept_y / N, plan.cols[6].keep);
    pg_free(rows);
    pg_free(lab);
    pg_ldp_cost_free(c);
    pg_ldp_plan_free(&plan);
    pg_table_free(t);
}
END_TEST

/* pg_ldp_rr_other: (1 - keep) / (k - 1) without the cancellation that zeroes
 * it at a large epsilon; equal to it where 1 - keep is representable. */
START_TEST(rr_other_probability_survives_a_large_epsilon)
{
    double keep;
    ck_assert_int_eq(pg_rr_keep_probability(3, 2.0, &keep, NULL), PG_OK);
    ck_assert_double_eq_tol(pg_ldp_rr_other(3, keep, 2.0), (1 - keep) / 2, 1e-15);
    ck_assert_int_eq(pg_rr_keep_probability(3, 80.0, &keep, NULL), PG_OK);
    ck_assert(keep == 1.0); /* the cancellation the old code hit */
    double q = pg_ldp_rr_other(3, keep, 80.0);
    ck_assert_double_eq_tol(-log(q), 80.0 + log1p(2 * exp(-80.0)), 1e-9);
    /* a keep below the maximum for its epsilon (more private) is honoured */
    ck_assert_double_eq_tol(pg_ldp_rr_other(2, 0.75, 80.0), 0.25, 1e-15);
}
END_TEST

/* The clip numeric head (heads.h): linear inside the range, exactly on the
 * bound outside it; its gradient passes straight through except where the
 * value sits on a bound and descent would push it further out. */
START_TEST(clip_head_is_linear_and_reaches_the_bounds)
{
    pg_table *t = ldp_table();
    pg_heads *h;
    ck_assert_int_eq(pg_heads_from_table(t, PG_HEADS_TAU, &h, NULL), PG_OK);
    ck_assert_int_eq(h->numeric, PG_HEADS_NUMERIC_TANH); /* the default */
    h->numeric = PG_HEADS_NUMERIC_CLIP;
    const float z[5] = {-3.0f, -1.0f, -0.25f, 0.5f, 2.0f};
    const float want[5] = {-1.0f, -1.0f, -0.25f, 0.5f, 1.0f}; /* model range [-1, 1] */
    ck_assert(h->lo == -1.0f && h->hi == 1.0f);
    float rows[5][12], g[5][12];
    memset(rows, 0, sizeof rows);
    for (int i = 0; i < 5; i++) rows[i][0] = z[i];
    pg_heads_forward(h, NULL, &rows[0][0], 12, 5);
    for (int i = 0; i < 5; i++) ck_assert_float_eq(rows[i][0], want[i]);
    /* descent direction -g: g > 0 pushes down, g < 0 pushes up */
    const float gin[5] = {1.0f, -1.0f, 1.0f, -1.0f, -1.0f};
    const float gout[5] = {0.0f, -1.0f, 1.0f, -1.0f, 0.0f}; /* half = 1 */
    memset(g, 0, sizeof g);
    for (int i = 0; i < 5; i++) g[i][0] = gin[i];
    pg_heads_backward(h, &rows[0][0], 12, &g[0][0], 5);
    for (int i = 0; i < 5; i++) ck_assert_float_eq(g[i][0], gout[i]);
    /* tanh on the same rows can never reach the bound */
    h->numeric = PG_HEADS_NUMERIC_TANH;
    float row2[12] = {-3.0f};
    pg_heads_forward(h, NULL, row2, 12, 1);
    ck_assert(row2[0] > -1.0f);
    pg_heads_free(h);
    pg_table_free(t);
}
END_TEST

/* entropic_gan on a local table resolves model.numeric_head to clip; the
 * generator description of a checkpoint carries it and a snapshot rebuilt
 * from the description has it; a description without it (older
 * checkpoints) means tanh; an unknown word is refused. On untyped rows clip
 * is refused. */
START_TEST(clip_head_is_the_local_default_and_round_trips)
{
    pg_table *t = ldp_table();
    pg_ldp_plan plan;
    ck_assert_int_eq(pg_ldp_plan_make(t, PG_LDP_LAPLACE, 70, 0, &plan, NULL), PG_OK);
    enum { ROWS = 64 };
    float *x = pg_alloc_f32(ROWS * 12);
    int64_t *lab = pg_calloc(ROWS, sizeof *lab);
    for (size_t i = 0; i < ROWS; i++) clean_row(t, x + i * 12), lab[i] = (int64_t)(i % 2);
    pg_rng sec;
    ck_assert_int_eq(pg_rng_secure(&sec, NULL), PG_OK);
    ck_assert_int_eq(pg_ldp_apply(&sec, t, &plan, x, lab, ROWS, NULL), PG_OK);
    int32_t *l32 = pg_calloc(ROWS, sizeof *l32);
    for (size_t i = 0; i < ROWS; i++) l32[i] = (int32_t)lab[i];
    pg_free(lab);
    pg_dataset ds;
    size_t shape[1] = {12};
    ck_assert_int_eq(pg_dataset_adopt(&ds, x, l32, ROWS, shape, 1, 2, -1e30f, 1e30f, NULL), PG_OK);
    pg_data_desc desc = {.n = ROWS,
                         .d = 12,
                         .ndim = 1,
                         .shape = {12},
                         .lo = (float)t->lo,
                         .hi = (float)t->hi,
                         .model = PG_PRIVACY_LOCAL,
                         .epsilon = plan.epsilon,
                         .cap_epsilon = 1e4,
                         .cap_delta = 1e-5,
                         .num_classes = 2,
                         .table = t,
                         .ldp = &plan};
    pg_job_data in = {.desc = &desc, .rows = &ds};
    const pg_method *m = pg_method_find("entropic_gan");
    pg_spec_errors e;
    json_t *r = pg_test_resolve(m, "{\"train\": {\"steps\": 2}}", &in, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.count ? e.items[0].field : "",
                  e.count ? e.items[0].message : "");
    ck_assert_str_eq(pg_spec_str(r, "model.numeric_head", ""), "clip");
    pg_generator g;
    pg_spec_errors e2 = {0};
    ck_assert_int_eq(pg_generator_config(r, &desc, &g, &e2, NULL), PG_OK);
    ck_assert_int_eq(g.heads->numeric, PG_HEADS_NUMERIC_CLIP);
    json_t *j = pg_generator_to_json(&g);
    ck_assert_str_eq(json_string_value(json_object_get(j, "heads_numeric")), "clip");
    pg_generator back;
    ck_assert_int_eq(pg_generator_from_json(j, &back, NULL), PG_OK);
    ck_assert_int_eq(back.heads->numeric, PG_HEADS_NUMERIC_CLIP);
    pg_generator_free(&back);
    json_object_del(j, "heads_numeric");
    ck_assert_int_eq(pg_generator_from_json(j, &back, NULL), PG_OK);
    ck_assert_int_eq(back.heads->numeric, PG_HEADS_NUMERIC_TANH);
    pg_generator_free(&back);
    json_object_set_new(j, "heads_numeric", json_string("cubic"));
    ck_assert_int_eq(pg_generator_from_json(j, &back, NULL), PG_EFORMAT);
    json_decref(j);
    pg_generator_free(&g);
    json_decref(r);
    /* an explicit tanh is kept */
    r = pg_test_resolve(m, "{\"model\": {\"numeric_head\": \"tanh\"}}", &in, &e);
    ck_assert_ptr_nonnull(r);
    ck_assert_str_eq(pg_spec_str(r, "model.numeric_head", ""), "tanh");
    json_decref(r);
    pg_dataset_free(&ds);
    pg_ldp_plan_free(&plan);
    /* untyped local rows: clip refused */
    pg_dataset vds;
    pg_data_desc vdesc;
    make_local(200, &vds, &vdesc, 0);
    pg_job_data vin = {.desc = &vdesc, .rows = &vds};
    r = pg_test_resolve(m, "{\"model\": {\"numeric_head\": \"clip\"}}", &vin, &e);
    ck_assert_ptr_null(r);
    ck_assert(pg_test_has_error(&e, "model.numeric_head"));
    pg_dataset_free(&vds);
    pg_table_free(t);
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
    TCase *tt = tcase_create("typed local tables");
    tcase_set_timeout(tt, 60);
    tcase_add_loop_test(tt, channel_cost_is_the_privatizers_likelihood, 0, 2);
    tcase_add_test(tt, rr_other_probability_survives_a_large_epsilon);
    tcase_add_test(tt, clip_head_is_linear_and_reaches_the_bounds);
    tcase_add_test(tt, clip_head_is_the_local_default_and_round_trips);
    suite_add_tcase(s, tt);
    return s;
}

PG_TEST_MAIN(egan_suite)
