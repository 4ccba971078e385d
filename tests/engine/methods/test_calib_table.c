/* Class-conditional calibration on typed tables (engine/methods/calib_table.h)
 * and its use by dp_sinkhorn:
 *  - the released vector's l2 sensitivity is sqrt(2) for any row, hostile
 *    ones included, and attained by a valid row;
 *  - the release's noise is N(0, 2 s^2) per coordinate (KS and variance);
 *  - the rule moves categories and numbers onto the targets (statistical
 *    bounds), and malformed targets are refused;
 *  - dp_sinkhorn on a labelled table: the plan equals an independent curve,
 *    the calibrated samples' per-class frequencies and means match the data's
 *    (the old code refused the option on tables), checkpoints round-trip and a
 *    spec without calibration cannot adopt one; hostile options are refused.
 *
 * Data: N rows; x continuous on [0, 10], c categorical {a, b, c}, f boolean,
 * label y boolean with P(y) = 0.3. Class 0: x = 2 + u, c ~ (0.7, 0.2, 0.1),
 * f true w.p. 0.2; class 1: x = 7 + u, c ~ (0.1, 0.2, 0.7), f w.p. 0.8.
 * Encoded width 5: x (numeric), c (3 units, softmax), f (1 unit, reference). */
#include <jansson.h>
#include <math.h>
#include <string.h>

#include "engine/checkpoint/checkpoint.h"
#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/data/dataset.h"
#include "engine/data/table.h"
#include "engine/data/qmap.h"
#include "engine/methods/calib_table.h"
#include "engine/methods/qmap_spec.h"
#include "engine/methods/generator.h"
#include "engine/methods/method.h"
#include "engine/methods/snapshot.h"
#include "engine/methods/spec.h"
#include "engine/methods/trainer.h"
#include "engine/methods/warnings.h"
#include "engine/privacy/privacy.h"
#include "support/pg_method_test.h"
#include "support/pg_table_test.h"
#include "support/pg_test.h"

static const char *SCHEMA = "{\"columns\":["
                            "{\"name\":\"x\",\"type\":\"continuous\",\"min\":0,\"max\":10},"
                            "{\"name\":\"c\",\"type\":\"categorical\",\"categories\":[\"a\",\"b\","
                            "\"c\"]},"
                            "{\"name\":\"f\",\"type\":\"boolean\"},"
                            "{\"name\":\"y\",\"type\":\"boolean\"}],"
                            "\"label\":\"y\"}";

enum { N = 3000, D = 5 };
static const double PC[2][3] = {{0.7, 0.2, 0.1}, {0.1, 0.2, 0.7}};
static const double PF[2] = {0.2, 0.8};

typedef struct fixture {
    pg_table *t;
    pg_heads *h;
    pg_dataset ds;
    pg_data_desc desc;
    double freq[2][3], ftrue[2], xmean[2]; /* the data's, per class (encoded x) */
    size_t count[2];
} fixture;

static size_t draw3(pg_rng *r, const double *p)
{
    double u = pg_rng_uniform(r);
    return u < p[0] ? 0 : u < p[0] + p[1] ? 1 : 2;
}

static void make(fixture *f)
{
    memset(f, 0, sizeof *f);
    json_t *j = json_loads(SCHEMA, 0, NULL);
    ck_assert_int_eq(pg_table_from_json(j, &f->t, NULL), PG_OK);
    json_decref(j);
    ck_assert_int_eq(f->t->width, D);
    ck_assert_int_eq(pg_heads_from_table(f->t, PG_HEADS_TAU, &f->h, NULL), PG_OK);
    ck_assert_uint_eq(f->h->n, 3);
    pg_rng r;
    pg_rng_seeded(&r, 36, 0);
    float *x = pg_alloc_f32(N * D);
    int32_t *lab = pg_calloc(N, sizeof *lab);
    for (size_t i = 0; i < N; i++) {
        int y = pg_rng_uniform(&r) < 0.3;
        pg_table_value v = {.num = (y ? 7.0 : 2.0) + pg_rng_uniform(&r)};
        ck_assert_int_eq(
            pg_table_encode_value(f->t, 0, &v, PG_TABLE_BOUNDS_REFUSE, x + D * i, NULL), PG_OK);
        pg_table_value c = {.cat = draw3(&r, PC[y])};
        ck_assert_int_eq(
            pg_table_encode_value(f->t, 1, &c, PG_TABLE_BOUNDS_REFUSE, x + D * i, NULL), PG_OK);
        pg_table_value b = {.num = pg_rng_uniform(&r) < PF[y], .cat = 0};
        b.cat = (size_t)b.num;
        ck_assert_int_eq(
            pg_table_encode_value(f->t, 2, &b, PG_TABLE_BOUNDS_REFUSE, x + D * i, NULL), PG_OK);
        lab[i] = y;
        f->count[y]++;
        f->xmean[y] += x[D * i];
        for (int k = 0; k < 3; k++) f->freq[y][k] += x[D * i + 1 + k];
        f->ftrue[y] += x[D * i + 4];
    }
    for (int y = 0; y < 2; y++) {
        f->xmean[y] /= (double)f->count[y];
        f->ftrue[y] /= (double)f->count[y];
        for (int k = 0; k < 3; k++) f->freq[y][k] /= (double)f->count[y];
    }
    size_t shape[1] = {D};
    ck_assert_int_eq(pg_dataset_adopt(&f->ds, x, lab, N, shape, 1, 2, -1.0f, 1.0f, NULL), PG_OK);
    f->desc = (pg_data_desc){.n = N,
                             .d = D,
                             .ndim = 1,
                             .shape = {D},
                             .lo = -1.0f,
                             .hi = 1.0f,
                             .model = PG_PRIVACY_CENTRAL,
                             .cap_epsilon = 1e4,
                             .cap_delta = 1e-5,
                             .num_classes = 2,
                             .table = f->t};
}

static void unmake(fixture *f)
{
    pg_dataset_free(&f->ds);
    pg_heads_free(f->h);
    pg_table_free(f->t);
}

/* ---- the release --------------------------------------------------------- */

/* Adding one row moves the noise-free vector by at most sqrt(2) in l2,
 * whatever the row holds; a valid extreme row attains it. */
START_TEST(sensitivity_is_sqrt2_for_any_row)
{
    fixture f;
    make(&f);
    size_t m = 2 * D + 2;
    double base[2 * D + 2], more[2 * D + 2];
    ck_assert_int_eq(pg_calib_table_stats(f.h, NULL, f.ds.x, f.ds.labels, 50, 2, base, NULL),
                     PG_OK);
    float *x = pg_alloc_f32(51 * D);
    int32_t lab[51];
    memcpy(x, f.ds.x, 50 * D * sizeof *x);
    memcpy(lab, f.ds.labels, 50 * sizeof *lab);
    const float hostile[][D] = {
        {1e30f, 5.0f, 5.0f, 5.0f, -3.0f}, {-1e30f, 1.0f, 1.0f, 1.0f, 1e30f},
        {NAN, NAN, 1.0f, NAN, INFINITY},  {-INFINITY, -1.0f, -1.0f, 7.0f, 0.0f},
        {1.0f, 1.0f, 0.0f, 0.0f, 1.0f},   /* valid: x at its max, a one-hot, true */
        {-1.0f, 0.0f, 0.0f, 1.0f, 1.0f}}; /* valid: x at its min, true */
    for (size_t hrow = 0; hrow < sizeof hostile / sizeof hostile[0]; hrow++)
        for (int32_t y = 0; y < 2; y++) {
            memcpy(x + 50 * D, hostile[hrow], sizeof hostile[hrow]);
            lab[50] = y;
            ck_assert_int_eq(pg_calib_table_stats(f.h, NULL, x, lab, 51, 2, more, NULL), PG_OK);
            double d2 = 0;
            for (size_t i = 0; i < m; i++) d2 += (more[i] - base[i]) * (more[i] - base[i]);
            ck_assert_msg(isfinite(d2) && sqrt(d2) <= M_SQRT2 + 1e-9, "row %zu: %g", hrow,
                          sqrt(d2));
            if (hrow >= 4) ck_assert_double_eq_tol(sqrt(d2), M_SQRT2, 1e-6);
        }
    ck_assert_double_eq(pg_calib_table_bound2(f.h), 3.0);
    pg_free(x);
    unmake(&f);
}
END_TEST

static double normal_cdf(double x, void *ctx)
{
    double s = *(double *)ctx;
    return 0.5 * erfc(-x / (s * sqrt(2.0)));
}

/* The noise on every released coordinate is N(0, 2 s^2): variance within 6
 * standard errors (m = 24 000 draws: se 0.0091, false alarm 2e-9) and KS at
 * PG_TEST_KS_SECURE; a 30 % larger std is rejected by the same KS. */
START_TEST(noise_is_multiplier_times_sensitivity)
{
    fixture f;
    make(&f);
    pg_rng sec;
    ck_assert_int_eq(pg_rng_secure(&sec, NULL), PG_OK);
    size_t m1 = 2 * D + 2, reps = 2000, m = reps * m1;
    double stats[2 * D + 2], raw[2 * D + 2], s = 0.7;
    ck_assert_int_eq(pg_calib_table_stats(f.h, NULL, f.ds.x, f.ds.labels, N, 2, stats, NULL),
                     PG_OK);
    double *xi = malloc(m * sizeof *xi), var = 0;
    float targets[4 * D];
    for (size_t r = 0; r < reps; r++) {
        ck_assert_int_eq(pg_calib_table_release(&sec, f.h, NULL, f.ds.x, f.ds.labels, N, 2, s,
                                                false, targets, raw, NULL),
                         PG_OK);
        for (size_t i = 0; i < m1; i++) xi[r * m1 + i] = raw[i] - stats[i];
    }
    double std = M_SQRT2 * s;
    for (size_t i = 0; i < m; i++) var += xi[i] * xi[i] / (double)m;
    ck_assert_msg(fabs(var / (std * std) - 1.0) < 6.0 * sqrt(2.0 / (double)m), "var ratio %g",
                  var / (std * std));
    ck_assert_msg(sqrt((double)m) * pg_test_ks(xi, m, normal_cdf, &std) < PG_TEST_KS_SECURE, "KS");
    double wrong = 1.3 * std;
    ck_assert(sqrt((double)m) * pg_test_ks(xi, m, normal_cdf, &wrong) > PG_TEST_KS_SECURE);
    /* Refused: a seeded generator, no noise, no heads. */
    pg_rng seeded;
    pg_rng_seeded(&seeded, 1, 0);
    ck_assert_int_eq(pg_calib_table_release(&seeded, f.h, NULL, f.ds.x, f.ds.labels, N, 2, s, false,
                                            targets, NULL, NULL),
                     PG_EPRIVACY);
    ck_assert_int_eq(pg_calib_table_release(&sec, f.h, NULL, f.ds.x, f.ds.labels, N, 2, 0.0, false,
                                            targets, NULL, NULL),
                     PG_EINVAL);
    ck_assert_int_eq(pg_calib_table_release(&sec, NULL, NULL, f.ds.x, f.ds.labels, N, 2, s, false,
                                            targets, NULL, NULL),
                     PG_EINVAL);
    int32_t bad = 2;
    ck_assert_int_eq(
        pg_calib_table_release(&sec, f.h, NULL, f.ds.x, &bad, 1, 2, s, false, targets, NULL, NULL),
        PG_EINVAL);
    /* With almost no noise the targets are the data's own statistics. */
    ck_assert_int_eq(pg_calib_table_release(&sec, f.h, NULL, f.ds.x, f.ds.labels, N, 2, 1e-6, false,
                                            targets, NULL, NULL),
                     PG_OK);
    ck_assert_int_eq(pg_calib_table_check_targets(f.h, 2, targets, NULL), PG_OK);
    for (int y = 0; y < 2; y++) {
        ck_assert_double_eq_tol(targets[y * 2 * D], f.xmean[y], 1e-4);
        for (int k = 0; k < 3; k++)
            ck_assert_double_eq_tol(targets[y * 2 * D + 1 + k], f.freq[y][k], 1e-4);
        ck_assert_double_eq_tol(targets[y * 2 * D + 4], f.ftrue[y], 1e-4);
        ck_assert_double_eq(targets[y * 2 * D + D], -1.0); /* no map: no spread target */
    }
    free(xi);
    unmake(&f);
}
END_TEST

/* ---- the rule ------------------------------------------------------------ */

/* Rows of a "generator" with known law (c ~ (0.2, 0.5, 0.3), f w.p. 0.5, x
 * uniform on [-1, 0]) calibrated onto targets: fresh rows' frequencies and
 * mean land on the targets. Each checked frequency has sd <= 0.0065 (fit on
 * 6000 rows, checked on 12 000), bound 0.04 = 6 sd (false alarm 2e-9 each). */
static void gen_rows(pg_rng *r, float *x, size_t n)
{
    static const double q[3] = {0.2, 0.5, 0.3};
    for (size_t i = 0; i < n; i++) {
        float *row = x + i * D;
        memset(row, 0, D * sizeof *row);
        row[0] = -(float)pg_rng_uniform(r);
        row[1 + draw3(r, q)] = 0.97f; /* a relaxed one-hot, as the heads serve */
        row[4] = pg_rng_uniform(r) < 0.5 ? 0.98f : 0.01f;
    }
}

START_TEST(rule_moves_samples_onto_the_targets)
{
    fixture f;
    make(&f);
    float targets[2 * D] = {0.3f, 0.6f, 0.1f, 0.3f, 0.9f, /* sds: */ -1, -1, -1, -1, -1};
    ck_assert_int_eq(pg_calib_table_check_targets(f.h, 0, targets, NULL), PG_OK);
    pg_calib_table *c;
    ck_assert_int_eq(pg_calib_table_new(f.h, 0, &c, NULL), PG_OK);
    pg_rng r, a;
    pg_rng_seeded(&r, 5, 0);
    pg_rng_seeded(&a, 6, 0);
    size_t nf = 6000, n = 12000;
    float *x = pg_alloc_f32(n * D);
    gen_rows(&r, x, nf);
    ck_assert_int_eq(pg_calib_table_fit(c, 0, targets, x, nf, NULL), PG_OK);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) { /* a spread target: the rank map, uniform with mean m and sd s */
            targets[D] = 0.1f;
            gen_rows(&r, x, nf);
            ck_assert_int_eq(pg_calib_table_fit(c, 0, targets, x, nf, NULL), PG_OK);
        }
        gen_rows(&r, x, n);
        pg_calib_table_apply(c, &a, x, NULL, n);
        double fr[3] = {0}, ft = 0, mx = 0, mx2 = 0;
        for (size_t i = 0; i < n; i++) {
            const float *row = x + i * D;
            size_t best = row[2] > row[1] ? 1 : 0;
            if (row[3] > row[1 + best]) best = 2;
            fr[best] += 1.0 / n;
            ft += (row[4] > 0.5f) / (double)n;
            mx += row[0] / (double)n, mx2 += row[0] * row[0] / (double)n;
            ck_assert(row[0] >= -1.0f && row[0] <= 1.0f);
        }
        for (int k = 0; k < 3; k++)
            ck_assert_msg(fabs(fr[k] - targets[1 + k]) < 0.04, "pass %d category %d: %g", pass, k,
                          fr[k]);
        ck_assert_msg(fabs(ft - 0.9) < 0.04, "true %g", ft);
        /* x: sd of the mean 0.3 / sqrt(6000) + 0.3 / sqrt(12000) < 0.007 */
        ck_assert_msg(fabs(mx - 0.3) < 0.04, "pass %d mean %g", pass, mx);
        if (pass == 1) ck_assert_msg(fabs(sqrt(mx2 - mx * mx) - 0.1) < 0.01, "sd");
        /* the old law was far from the targets: the rule did the work */
        ck_assert(fabs(0.2 - targets[1]) > 0.3 && fabs(-0.5 - targets[0]) > 0.5);
    }
    pg_free(x);
    pg_calib_table_free(c);
    /* Malformed targets (as a corrupt checkpoint would carry) are refused. */
    float bad[2 * D];
    memcpy(bad, targets, sizeof bad);
    bad[1] = 0.9f; /* frequencies sum to 1.3 */
    ck_assert_int_eq(pg_calib_table_check_targets(f.h, 0, bad, NULL), PG_EFORMAT);
    memcpy(bad, targets, sizeof bad);
    bad[0] = 1.5f; /* mean out of range */
    ck_assert_int_eq(pg_calib_table_check_targets(f.h, 0, bad, NULL), PG_EFORMAT);
    memcpy(bad, targets, sizeof bad);
    bad[4] = -0.1f;
    ck_assert_int_eq(pg_calib_table_check_targets(f.h, 0, bad, NULL), PG_EFORMAT);
    memcpy(bad, targets, sizeof bad);
    bad[D] = 3.0f; /* sd beyond the half range */
    ck_assert_int_eq(pg_calib_table_check_targets(f.h, 0, bad, NULL), PG_EFORMAT);
    unmake(&f);
}
END_TEST

/* ---- dp_sinkhorn ----------------------------------------------------------- */

static json_t *resolve(const char *spec, fixture *f, pg_spec_errors *e)
{
    pg_job_data in = {.desc = &f->desc, .rows = &f->ds};
    return pg_test_resolve(pg_method_find("dp_sinkhorn"), spec, &in, e);
}

static pg_trainer *train(const json_t *r, fixture *f)
{
    pg_job_data in = {.desc = &f->desc, .rows = &f->ds};
    return pg_test_train(pg_method_find("dp_sinkhorn"), r, &in, NULL);
}

/* A checkpoint restored under another calibration (noise, rule, or none) is
 * refused: PG_EPRIVACY or PG_EFORMAT, and no trainer. */
static void restore_refused(const pg_method *m, fixture *f, const pg_job_data *in,
                            const unsigned char *bytes, size_t len, const char *spec)
{
    pg_spec_errors e;
    json_t *r2 = resolve(spec, f, &e);
    ck_assert_ptr_nonnull(r2);
    pg_trainer *t2 = NULL;
    int rc = m->restore(r2, in, 1, bytes, len, &t2, NULL);
    ck_assert_msg(rc == PG_EPRIVACY || rc == PG_EFORMAT, "%s: rc %d", spec, rc);
    ck_assert_ptr_null(t2);
    json_decref(r2);
}

/* Every spec of bad[0..n) is refused, its first error on `field` (with
 * prefix: on a field whose name starts with it). */
static void refused(fixture *f, const char *const *bad, size_t n, const char *field, bool prefix)
{
    for (size_t i = 0; i < n; i++) {
        pg_spec_errors e;
        json_t *x = resolve(bad[i], f, &e);
        ck_assert_msg(x == NULL && e.count > 0, "accepted: %s", bad[i]);
        if (prefix)
            ck_assert_msg(strncmp(e.items[0].field, field, strlen(field)) == 0, "%s",
                          e.items[0].field);
        else
            ck_assert_str_eq(e.items[0].field, field);
    }
}

/* Resolves spec on the fixture's rows described as n rows (the plan's n). */
static json_t *resolve_at_n(const char *spec, fixture *f, size_t n)
{
    pg_spec_errors e;
    f->desc.n = n;
    json_t *r = resolve(spec, f, &e);
    f->desc.n = N;
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    return r;
}

/* The plan's curve: the steps' subsampled Gaussian, the label count's
 * alpha / (2 10^2), the quantile map's alpha / (2 4^2), its sub-bins'
 * alpha / (2 8^2) (encoding.quantile_sub, filled with the quantile rule; its
 * noise left out: twice the map's) and the class statistics' alpha /
 * (2 3^2), computed here by hand; the mechanism names the release. */
START_TEST(plan_charges_the_release_exactly)
{
    fixture f;
    make(&f);
    pg_spec_errors e;
    json_t *r = resolve("{\"privacy\": {\"noise_multiplier\": 1.3}, \"train\": {\"steps\": 40, "
                        "\"batch_size\": 64}, \"encoding\": {\"quantile_noise\": 4}, "
                        "\"calibration\": {\"class_means\": true, \"noise_multiplier\": 3}}",
                        &f, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    pg_privacy_plan p;
    pg_job_data in = {.desc = &f.desc, .rows = &f.ds};
    ck_assert_int_eq(pg_method_find("dp_sinkhorn")->plan(r, &in, &p, NULL), PG_OK);
    ck_assert_str_eq(p.mechanism, "poisson_subsampled_gaussian+label_counts+class_stats+qmap");
    const double releases[] = {10, 4, 8, 3}; /* label count, map, sub-bins, class stats */
    double eps = pg_test_plan_curve(&p, 64.0 / N, 1.3, 40, releases, 4);
    ck_assert_int_eq(pg_spec_int(r, "encoding.quantile_sub", 0), 32);
    ck_assert_double_eq_tol(p.epsilon, eps, 1e-12 * eps);
    json_decref(r);
    /* Hostile options: no noise, a negative one, a per-class draw of 0. */
    const char *bad[] = {"{\"privacy\": {\"epsilon\": 5}, \"calibration\": {\"class_means\": "
                         "true, \"noise_multiplier\": 0}}",
                         "{\"privacy\": {\"epsilon\": 5}, \"calibration\": {\"class_means\": "
                         "true, \"noise_multiplier\": -2}}",
                         "{\"privacy\": {\"epsilon\": 5}, \"calibration\": {\"class_means\": "
                         "true, \"samples_per_class\": 0}}",
                         "{\"privacy\": {\"epsilon\": 5}, \"calibration\": {\"class_means\": "
                         "\"yes\"}}",
                         "{\"privacy\": {\"epsilon\": 5}, \"calibration\": {\"numeric\": "
                         "\"median\"}}"};
    refused(&f, bad, sizeof bad / sizeof bad[0], "calibration.", true);
    unmake(&f);
}
END_TEST

/* A barely trained generator (5 steps) calibrated with almost no release
 * noise serves, per class, the data's category and boolean frequencies and
 * its mean of x (encoded; no quantile map, so the rule shifts). 8000 samples
 * per class, the rule fitted on 8000: a frequency's sd <= 0.008, x's mean
 * <= 0.01 (x's encoded sd within a class is at most 0.06 + the shift's
 * clamp), bounds 0.05: 6 sd (false alarm 2e-9 per check, 14 checks). The
 * same run uncalibrated is off by more than 0.1 somewhere (the rule did the
 * work). The old code refused calibration on typed tables. */
START_TEST(calibrated_samples_match_the_release)
{
    pg_threads_set(1);
    fixture f;
    make(&f);
    const char *base =
        "{\"seed\": 9, \"privacy\": {\"epsilon\": 1000}, \"train\": {\"steps\": 5}, "
        "\"encoding\": {\"quantile_map\": false}, \"calibration\": {\"class_means\": "
        "%s, \"noise_multiplier\": 0.2, \"samples_per_class\": 8000}}";
    double worst_off = 0;
    for (int on = 1; on >= 0; on--) {
        char spec[512];
        snprintf(spec, sizeof spec, base, on ? "true" : "false");
        pg_spec_errors e;
        json_t *r = resolve(spec, &f, &e);
        ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
        pg_trainer *tr = train(r, &f);
        pg_snapshot *s;
        ck_assert_int_eq(pg_method_find("dp_sinkhorn")->snapshot(tr, &s, NULL), PG_OK);
        size_t n = 8000;
        float *x = pg_alloc_f32(n * D);
        for (int y = 0; y < 2; y++) {
            ck_assert_int_eq(pg_snapshot_sample(s, n, 77 + (uint64_t)y, y, x, NULL), PG_OK);
            double fr[3] = {0}, ft = 0, mx = 0;
            for (size_t i = 0; i < n; i++) {
                pg_table_value v;
                pg_table_decode_value(f.t, 1, x + i * D, 0, &v);
                fr[v.cat] += 1.0 / n;
                pg_table_decode_value(f.t, 2, x + i * D, 0, &v);
                ft += v.cat / (double)n;
                mx += x[i * D] / (double)n;
            }
            double off = fabs(mx - f.xmean[y]);
            off = fmax(off, fabs(ft - f.ftrue[y]));
            for (int k = 0; k < 3; k++) off = fmax(off, fabs(fr[k] - f.freq[y][k]));
            fprintf(stderr,
                    "calibration %s, class %d: c (%.3f %.3f %.3f) data (%.3f %.3f %.3f), "
                    "f %.3f data %.3f, x %.3f data %.3f\n",
                    on ? "on" : "off", y, fr[0], fr[1], fr[2], f.freq[y][0], f.freq[y][1],
                    f.freq[y][2], ft, f.ftrue[y], mx, f.xmean[y]);
            if (on)
                ck_assert_msg(off < 0.05, "class %d: off by %g", y, off);
            else
                worst_off = fmax(worst_off, off);
        }
        pg_free(x);
        pg_snapshot_release(s);
        pg_method_find("dp_sinkhorn")->destroy(tr);
        json_decref(r);
    }
    ck_assert_msg(worst_off > 0.1, "uncalibrated already matched (%g)", worst_off);
    unmake(&f);
}
END_TEST

/* The targets travel in the checkpoint (kind "table"): a restore re-saves
 * the same bytes and serves the same samples, the snapshot rebuilt from the
 * bytes alone draws what the trainer's does, and a spec without calibration
 * (or with another noise, or shifting its numbers) is refused. With the quantile map on (default)
 * and calibration.numeric "rank", so the rank map is exercised too. */
START_TEST(checkpoints_carry_the_calibration)
{
    pg_threads_set(1);
    fixture f;
    make(&f);
    pg_job_data in = {.desc = &f.desc, .rows = &f.ds};
    const pg_method *m = pg_method_find("dp_sinkhorn");
    pg_spec_errors e;
    json_t *r = resolve("{\"seed\": 3, \"privacy\": {\"epsilon\": 50}, \"train\": {\"steps\": 20}, "
                        "\"calibration\": {\"class_means\": true, \"noise_multiplier\": 4, "
                        "\"numeric\": \"rank\"}}",
                        &f, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    pg_trainer *tr = train(r, &f);
    size_t len;
    unsigned char *bytes = pg_test_checked_checkpoint(m, tr, r, &in, D, "\"kind\":\"table\"", &len);
    const char *other[] = {"{\"seed\": 3, \"privacy\": {\"epsilon\": 50}, \"train\": {\"steps\": "
                           "20}}",
                           "{\"seed\": 3, \"privacy\": {\"epsilon\": 50}, \"train\": {\"steps\": "
                           "20}, \"calibration\": {\"class_means\": true, \"noise_multiplier\": "
                           "5}}",
                           "{\"seed\": 3, \"privacy\": {\"epsilon\": 50}, \"train\": {\"steps\": "
                           "20}, \"calibration\": {\"class_means\": true, \"noise_multiplier\": "
                           "4}}"};
    for (int i = 0; i < 3; i++) restore_refused(m, &f, &in, bytes, len, other[i]);
    free(bytes);
    m->destroy(tr);
    json_decref(r);
    unmake(&f);
}
END_TEST

/* The same rows untyped (the image path): nothing new is on by default, the
 * plan's mechanism is the plain one, and training and checkpoints carry no
 * table calibration. */
START_TEST(untyped_rows_are_unchanged)
{
    pg_threads_set(1);
    fixture f;
    make(&f);
    f.desc.table = NULL;
    pg_spec_errors e;
    json_t *r =
        resolve("{\"seed\": 3, \"privacy\": {\"epsilon\": 5}, \"train\": {\"steps\": 5}}", &f, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    ck_assert(!pg_spec_bool(r, "calibration.class_means", false));
    ck_assert_int_eq(pg_spec_int(r, "calibration.samples_per_class", 0), 1000);
    pg_privacy_plan p;
    pg_job_data in = {.desc = &f.desc, .rows = &f.ds};
    ck_assert_int_eq(pg_method_find("dp_sinkhorn")->plan(r, &in, &p, NULL), PG_OK);
    ck_assert_str_eq(p.mechanism, "poisson_subsampled_gaussian");
    pg_trainer *tr = train(r, &f);
    unsigned char *bytes;
    size_t len;
    ck_assert_int_eq(pg_method_find("dp_sinkhorn")->save(tr, &bytes, &len, NULL), PG_OK);
    ck_assert(memmem(bytes, len, "calibration", 11) == NULL);
    free(bytes);
    pg_method_find("dp_sinkhorn")->destroy(tr);
    json_decref(r);
    unmake(&f);
}
END_TEST

static int cmp_f(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* ---- the per-class quantile map and rule (calibration.numeric "quantile") -- */

/* The true per-class histograms of column x over the map's bins. */
static void true_counts(const fixture *f, const pg_qmap *m, double *out)
{
    size_t nb = m->cols[0].bins;
    memset(out, 0, 2 * nb * sizeof *out);
    for (size_t i = 0; i < N; i++) {
        double u = f->ds.x[i * D];
        size_t b = 0;
        while (b + 1 < nb && m->cols[0].edge[b + 1] <= u) b++;
        out[(size_t)f->ds.labels[i] * nb + b] += 1.0;
    }
}

/* pg_qmap_release_classes: each class's map is its own noisy histogram
 * post-processed with threshold sigma, the pooled map is the sum of the
 * classes' noisy histograms with threshold sqrt(K) sigma (bit for bit), and
 * each count carries N(0, sigma^2), sigma = s sqrt(c) (c = 1 here; 2 c under
 * replace-one): 200 releases x 64 cells = 12800 residuals, mean within 6 sd
 * (6 sigma / sqrt(12800)) and variance within 6 sd of a chi-square (relative
 * sd sqrt(2 / 12800)): false alarm < 1e-8 per check. A seeded generator is
 * refused. */
START_TEST(class_maps_sum_to_the_pooled_map)
{
    fixture f;
    make(&f);
    pg_rng sec;
    ck_assert_int_eq(pg_rng_secure(&sec, NULL), PG_OK);
    const double s = 1.5;
    for (int replace = 0; replace <= 1; replace++) {
        double sigma = pg_qmap_count_sigma(s, 1, replace);
        ck_assert_double_eq_tol(sigma, s * (replace ? sqrt(2.0) : 1.0), 1e-15);
        double sum = 0, sq = 0;
        size_t cells = 0;
        for (int rep = 0; rep < 200; rep++) {
            pg_qmap *pooled, *per[2];
            double raw[2 * 32], truth[2 * 32];
            ck_assert_int_eq(pg_qmap_release_classes(&sec, f.t, f.ds.x, f.ds.labels, N, D, 2, 32, s,
                                                     replace, &pooled, per, raw, NULL),
                             PG_OK);
            ck_assert_uint_eq(pg_qmap_total_bins(pooled), 32);
            true_counts(&f, pooled, truth);
            for (size_t i = 0; i < 64; i++) {
                double r = raw[i] - truth[i];
                sum += r;
                sq += r * r;
                cells++;
            }
            if (rep < 3) {
                double *c0[1] = {raw}, *c1[1] = {raw + 32}, tot[32], *ct[1] = {tot};
                for (size_t b = 0; b < 32; b++) tot[b] = raw[b] + raw[32 + b];
                pg_qmap *a, *b, *c;
                ck_assert_int_eq(pg_qmap_layout(f.t, 32, &a, NULL), PG_OK);
                ck_assert_int_eq(pg_qmap_layout(f.t, 32, &b, NULL), PG_OK);
                ck_assert_int_eq(pg_qmap_layout(f.t, 32, &c, NULL), PG_OK);
                pg_qmap_set_counts(a, c0, sigma);
                pg_qmap_set_counts(b, c1, sigma);
                pg_qmap_set_counts(c, ct, sqrt(2.0) * sigma);
                for (size_t k = 0; k <= 32; k++) {
                    ck_assert(a->cols[0].cdf[k] == per[0]->cols[0].cdf[k]);
                    ck_assert(b->cols[0].cdf[k] == per[1]->cols[0].cdf[k]);
                    ck_assert(c->cols[0].cdf[k] == pooled->cols[0].cdf[k]);
                }
                /* the classes' maps differ (x ~ 2 + u against 7 + u): the
                 * other class's 16 empty bins keep noise above sigma, about
                 * 2.8 counts (sd 3.1 at sigma 2.1) of class 1's 900 rows, so
                 * the old 0.01 bar (9 counts) failed one run in 7; 0.05 is
                 * 45 counts, 13 sd. A pooled map would put 0.7 here. */
                ck_assert(per[0]->cols[0].cdf[16] > 0.95 && per[1]->cols[0].cdf[16] < 0.05);
                pg_qmap_free(a);
                pg_qmap_free(b);
                pg_qmap_free(c);
            }
            pg_qmap_free(pooled);
            pg_qmap_free(per[0]);
            pg_qmap_free(per[1]);
        }
        double mean = sum / (double)cells, var = sq / (double)cells;
        ck_assert_msg(fabs(mean) < 6 * sigma / sqrt((double)cells), "mean %g", mean);
        ck_assert_msg(fabs(var / (sigma * sigma) - 1) < 6 * sqrt(2.0 / (double)cells),
                      "variance %g, sigma^2 %g", var, sigma * sigma);
    }
    pg_rng seeded;
    pg_rng_seeded(&seeded, 1, 0);
    pg_qmap *pooled, *per[2];
    ck_assert_int_eq(pg_qmap_release_classes(&seeded, f.t, f.ds.x, f.ds.labels, N, D, 2, 32, s, 0,
                                             &pooled, per, NULL, NULL),
                     PG_EPRIVACY);
    int32_t bad = f.ds.labels[0];
    f.ds.labels[0] = 2;
    ck_assert_int_eq(pg_qmap_release_classes(&sec, f.t, f.ds.x, f.ds.labels, N, D, 2, 32, s, 0,
                                             &pooled, per, NULL, NULL),
                     PG_EINVAL);
    f.ds.labels[0] = bad;
    unmake(&f);
}
END_TEST

/* The per-class quantile maps of the fixture's rows at noise 1 (32 bins,
 * spread 0.3), as the quantile-rule tests start from. */
static void release_class_maps(const fixture *f, pg_qmap **pooled, pg_qmap *per[2])
{
    pg_rng sec;
    ck_assert_int_eq(pg_rng_secure(&sec, NULL), PG_OK);
    ck_assert_int_eq(pg_qmap_release_classes(&sec, f->t, f->ds.x, f->ds.labels, N, D, 2, 32, 1.0, 0,
                                             pooled, per, NULL, NULL),
                     PG_OK);
    ck_assert_int_eq(pg_qmap_set_spread(*pooled, 0.3, NULL), PG_OK);
}

/* The data's own per-class targets (calib_table.h layout): the class's mean
 * in the mapped space, its category and boolean frequencies. */
static void data_targets(const fixture *f, const pg_qmap *pooled, float *targets)
{
    for (int y = 0; y < 2; y++) {
        float *t = targets + y * 2 * D;
        float xm = (float)f->xmean[y];
        pg_qmap_encode(pooled, &xm, 1, 1);
        t[0] = xm;
        for (int k = 0; k < 3; k++) t[1 + k] = (float)f->freq[y][k];
        t[4] = (float)f->ftrue[y];
        for (int u = 0; u < D; u++) t[D + u] = u == 0 ? -1.0f : 0.0f;
    }
}

/* The quantile-rule tests' setting: the fixture's per-class maps
 * (release_class_maps), their class CDFs and the data's targets (all
 * checked well formed), and RM generator rows per class of two kinds, `draw`
 * (what the rule is fitted on) and `rows` (what it is applied to), row i of
 * each filled in turn by gen from one stream seeded with seed; rows
 * [0, RM) are class 0, [RM, 2 RM) class 1. */
enum { RM = 4000 };
typedef struct rule_case {
    pg_qmap *pooled, *per[2];
    float cdf[2 * 33];
    float targets[2 * 2 * D];
    float *draw, *rows;
    int32_t *lab;
} rule_case;

static void rule_case_make(const fixture *f, uint64_t seed, void (*gen)(pg_rng *, float *),
                           rule_case *rc)
{
    release_class_maps(f, &rc->pooled, rc->per);
    ck_assert_uint_eq(pg_calib_table_cdf_len(rc->pooled), 33);
    pg_calib_table_class_cdf((const pg_qmap *const *)rc->per, 2, rc->cdf);
    ck_assert_int_eq(pg_calib_table_check_cdf(rc->pooled, 2, rc->cdf, NULL), PG_OK);
    data_targets(f, rc->pooled, rc->targets);
    ck_assert_int_eq(pg_calib_table_check_targets(f->h, 2, rc->targets, NULL), PG_OK);
    rc->draw = pg_alloc_f32(2 * RM * D);
    rc->rows = pg_alloc_f32(2 * RM * D);
    rc->lab = pg_calloc(2 * RM, sizeof *rc->lab);
    pg_rng g;
    pg_rng_seeded(&g, seed, 0);
    for (size_t i = 0; i < 2 * RM; i++) {
        gen(&g, rc->draw + i * D);
        gen(&g, rc->rows + i * D);
        rc->lab[i] = i < RM ? 0 : 1;
    }
}

static void rule_case_free(rule_case *rc)
{
    pg_free(rc->draw);
    pg_free(rc->rows);
    pg_free(rc->lab);
    pg_qmap_free(rc->pooled);
    pg_qmap_free(rc->per[0]);
    pg_qmap_free(rc->per[1]);
}

/* A calibration fitted on the case's draws to its targets, with the quantile
 * rule on the class CDFs when quantiles (else the shift rule). */
static pg_calib_table *rule_case_fit(const fixture *f, const rule_case *rc, bool quantiles)
{
    pg_calib_table *c;
    ck_assert_int_eq(pg_calib_table_new(f->h, 2, &c, NULL), PG_OK);
    if (quantiles)
        ck_assert_int_eq(pg_calib_table_set_quantiles(c, rc->pooled, rc->cdf, NULL), PG_OK);
    ck_assert_int_eq(pg_calib_table_fit_all(c, rc->targets, rc->draw, RM, NULL), PG_OK);
    return c;
}

/* The case's rows calibrated by c (its draws seeded with seed) and decoded
 * through the pooled map (caller pg_frees). */
static float *rule_case_apply(const pg_calib_table *c, const rule_case *rc, uint64_t seed)
{
    float *x = pg_alloc_f32(2 * RM * D);
    memcpy(x, rc->rows, 2 * RM * D * sizeof *x);
    pg_rng cr;
    pg_rng_seeded(&cr, seed, 0);
    pg_calib_table_apply(c, &cr, x, rc->lab, 2 * RM);
    pg_qmap_decode(rc->pooled, x, D, 2 * RM);
    return x;
}

/* The largest gap between the empirical CDF of class y's decoded x in
 * x (rule_case_apply's rows) and the class's released CDF, at the bins'
 * edges, where the release says something (inside a bin the rule keeps the
 * generator's own shape when its draw has enough distinct values there,
 * calib_table.h). */
static double class_ks_at_edges(const float *x, int y, const rule_case *rc)
{
    float *col = pg_alloc_f32(RM);
    for (size_t i = 0; i < RM; i++) col[i] = x[((size_t)y * RM + i) * D];
    qsort(col, RM, sizeof *col, cmp_f);
    double ks = 0;
    const pg_qmap_col *pc = &rc->per[y]->cols[0];
    for (size_t b = 0, i = 0; b <= pc->bins; b++) {
        while (i < RM && col[i] <= pc->edge[b]) i++;
        ks = fmax(ks, fabs(pc->cdf[b] - (double)i / RM));
    }
    pg_free(col);
    return ks;
}

/* quantile_rule_matches_the_class_cdf's generator row: x half on 0.25, half
 * N(0, 0.3^2) clamped to [-1, 1], category a. */
static void collapsed_row(pg_rng *g, float *r)
{
    memset(r, 0, D * sizeof *r);
    double v = pg_rng_uniform(g) < 0.5 ? 0.25 : 0.3 * pg_rng_normal(g);
    r[0] = (float)(v < -1 ? -1 : v > 1 ? 1 : v);
    r[1] = 1.0f;
}

/* independence_breaks_only_the_dependence's generator row: all three
 * columns follow one uniform z. */
static void one_z_row(pg_rng *g, float *r)
{
    double z = pg_rng_uniform(g);
    memset(r, 0, D * sizeof *r);
    r[0] = (float)(-0.9 + 1.8 * z);
    r[1 + (z < 0.4 ? 0 : z < 0.7 ? 1 : 2)] = 0.97f;
    r[4] = z > 0.5 ? 0.98f : 0.01f;
}

/* A deliberately wrong generator: in class k, half its x units sit on one
 * value (a collapse, all ties) and the rest are N(0, 0.3^2) clamped, in the
 * mapped space, nothing like the class's law. With the quantile rule the
 * decoded x of class k follows the class's released CDF F_k at every bin
 * edge: the largest gap there between 4000 calibrated samples' empirical CDF
 * and F_k, the rule fitted on another 4000 draws (a two-sample situation;
 * a sup over edges is at most the KS distance), is below 0.06 =
 * 2.69 sqrt(2 / 4000), the asymptotic two-sample Kolmogorov bound at false
 * alarm 1e-6 per class (interpolation of G adds < 1 / 4000). The shift rule
 * on the same draws (the default before) is off by more than 0.15. */
START_TEST(quantile_rule_matches_the_class_cdf)
{
    fixture f;
    make(&f);
    rule_case rc;
    rule_case_make(&f, 5, collapsed_row, &rc);
    double worst[2] = {0, 0};
    for (int rule = 1; rule >= 0; rule--) {
        pg_calib_table *c = rule_case_fit(&f, &rc, rule);
        float *x = rule_case_apply(c, &rc, 11);
        for (int y = 0; y < 2; y++) {
            double ks = class_ks_at_edges(x, y, &rc);
            fprintf(stderr, "%s rule, class %d: KS %.4f\n", rule ? "quantile" : "shift", y, ks);
            if (rule)
                ck_assert_msg(ks < 0.06, "class %d: KS %g", y, ks);
            else
                worst[y] = ks;
        }
        pg_free(x);
        pg_calib_table_free(c);
    }
    ck_assert_msg(worst[0] > 0.15 && worst[1] > 0.15, "the shift already matched (%g %g)", worst[0],
                  worst[1]);
    /* malformed class CDFs are refused */
    rc.cdf[5] = rc.cdf[4] - 0.1f;
    ck_assert_int_eq(pg_calib_table_check_cdf(rc.pooled, 2, rc.cdf, NULL), PG_EFORMAT);
    rule_case_free(&rc);
    unmake(&f);
}
END_TEST

/* Pearson's chi-square statistic of an r x c table of counts. */
static double chi2(const double *n, int r, int c)
{
    double tot = 0, row[4] = {0}, col[4] = {0}, x = 0;
    for (int i = 0; i < r; i++)
        for (int j = 0; j < c; j++)
            row[i] += n[i * c + j], col[j] += n[i * c + j], tot += n[i * c + j];
    for (int i = 0; i < r; i++)
        for (int j = 0; j < c; j++) {
            double e = row[i] * col[j] / tot;
            if (e > 0) x += (n[i * c + j] - e) * (n[i * c + j] - e) / e;
        }
    return x;
}

/* calibration.independence (calib_table.h). A "generator" whose three
 * columns all follow one uniform z within each class (x = -0.9 + 1.8 z in
 * the mapped space, c = a / b / c at z < 0.4 / 0.7 / else, f = z > 0.5),
 * calibrated with the quantile rule onto the fixture's per-class maps and
 * frequencies. At independence 1, per class: each pair of columns (x split
 * at the class's centre, 2.5 / 7.5: -0.5 / 0.5 encoded) passes Pearson's chi-square test of
 * independence at p = 1e-6 (27.63 at 2 degrees of freedom, 23.93 at 1; six
 * tests, false alarm <= 6e-6), the frequencies sit within 0.04 of the
 * targets (sd <= 0.0079 on 4000 rows: 5 sd, 6e-7 each) and x's CDF within
 * 0.06 of the class's released one at the bins' edges, as the rule at 0
 * does. At 0 the generator's dependence stays (every pair above 50).
 * Out-of-range values are refused. New: the old code had no independence. */
START_TEST(independence_breaks_only_the_dependence)
{
    fixture f;
    make(&f);
    rule_case rc;
    rule_case_make(&f, 8, one_z_row, &rc);
    for (int on = 1; on >= 0; on--) {
        pg_calib_table *c = rule_case_fit(&f, &rc, true);
        ck_assert_int_eq(pg_calib_table_set_independence(c, on ? 1.0 : 0.0, NULL), PG_OK);
        ck_assert_double_eq(pg_calib_table_independence(c), on ? 1.0 : 0.0);
        float *x = rule_case_apply(c, &rc, 12);
        for (int y = 0; y < 2; y++) {
            double cf[6] = {0}, xc[6] = {0}, xf[4] = {0}, fr[3] = {0}, ft = 0;
            for (size_t i = 0; i < RM; i++) {
                const float *row = x + ((size_t)y * RM + i) * D;
                pg_table_value v;
                pg_table_decode_value(f.t, 1, row, 0, &v);
                size_t cat = v.cat;
                pg_table_decode_value(f.t, 2, row, 0, &v);
                size_t fl = v.cat, hi = row[0] > (y ? 0.5f : -0.5f);
                cf[cat * 2 + fl] += 1, xc[hi * 3 + cat] += 1, xf[hi * 2 + fl] += 1;
                fr[cat] += 1.0 / RM, ft += (double)fl / RM;
            }
            double a = chi2(cf, 3, 2), b = chi2(xc, 2, 3), d = chi2(xf, 2, 2);
            fprintf(stderr, "independence %d, class %d: chi2 c-f %.1f x-c %.1f x-f %.1f\n", on, y,
                    a, b, d);
            if (on) {
                ck_assert_msg(a < 27.63 && b < 27.63 && d < 23.93, "class %d: dependent", y);
                for (int k = 0; k < 3; k++)
                    ck_assert_msg(fabs(fr[k] - f.freq[y][k]) < 0.04, "class %d cat %d", y, k);
                ck_assert_msg(fabs(ft - f.ftrue[y]) < 0.04, "class %d true %g", y, ft);
            } else {
                ck_assert_msg(a > 50 && b > 50 && d > 50,
                              "class %d: the generator's dependence was lost", y);
            }
            double ks = class_ks_at_edges(x, y, &rc);
            ck_assert_msg(ks < 0.06, "independence %d class %d: KS %g", on, y, ks);
        }
        pg_free(x);
        ck_assert_int_eq(pg_calib_table_set_independence(c, 1.5, NULL), PG_EINVAL);
        ck_assert_int_eq(pg_calib_table_set_independence(c, -0.1, NULL), PG_EINVAL);
        ck_assert_int_eq(pg_calib_table_set_independence(c, NAN, NULL), PG_EINVAL);
        pg_calib_table_free(c);
    }
    rule_case_free(&rc);
    unmake(&f);
}
END_TEST

/* dp_sinkhorn with calibration.numeric "quantile": the plan is the shift
 * rule's, equal to the independent curve (steps + label count + per-class
 * map at alpha / (2 4^2) + class statistics); the checkpoint carries the
 * class CDFs, round-trips, the snapshot rebuilt from its bytes draws what
 * the trainer's does, and a restore under another rule is refused. */
START_TEST(quantile_rule_in_dp_sinkhorn)
{
    pg_threads_set(1);
    fixture f;
    make(&f);
    pg_job_data in = {.desc = &f.desc, .rows = &f.ds};
    const pg_method *m = pg_method_find("dp_sinkhorn");
    pg_spec_errors e;
    const char *fmt = "{\"seed\": 3, \"privacy\": {\"noise_multiplier\": 1.3}, \"train\": "
                      "{\"steps\": 20, \"batch_size\": 64}, \"encoding\": {\"quantile_noise\": 4}, "
                      "\"calibration\": {\"class_means\": true, \"noise_multiplier\": 3, "
                      "\"numeric\": \"%s\"}}";
    char spec[512];
    pg_privacy_plan p[2];
    for (int i = 0; i < 2; i++) {
        snprintf(spec, sizeof spec, fmt, i ? "quantile" : "shift");
        json_t *r = resolve(spec, &f, &e);
        ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
        ck_assert_int_eq(m->plan(r, &in, &p[i], NULL), PG_OK);
        json_decref(r);
    }
    ck_assert_str_eq(p[1].mechanism, p[0].mechanism);
    /* the quantile rule's sub-bins (noise twice the map's, 8) on top */
    const double releases[] = {10, 4, 8, 3};
    double eps = pg_test_plan_curve(&p[1], 64.0 / N, 1.3, 20, releases, 4);
    ck_assert_double_eq_tol(p[1].epsilon, eps, 1e-12 * eps);
    ck_assert(p[1].epsilon > p[0].epsilon);
    /* a quantile rule without the map is refused */
    ck_assert_ptr_null(resolve("{\"encoding\": {\"quantile_map\": false}, \"calibration\": "
                               "{\"class_means\": true, \"numeric\": \"quantile\"}}",
                               &f, &e));
    json_t *r = resolve(spec, &f, &e);
    pg_trainer *tr = train(r, &f);
    size_t len;
    unsigned char *bytes =
        pg_test_checked_checkpoint(m, tr, r, &in, D, "\"numeric\":\"quantile\"", &len);
    ck_assert(memmem(bytes, len, PG_GENERATOR_CLASS_CDF_TENSOR, 21) != NULL);
    for (int i = 0; i < 2; i++) {
        snprintf(spec, sizeof spec, fmt, i ? "rank" : "shift");
        restore_refused(m, &f, &in, bytes, len, spec);
    }
    /* the checkpoint's privacy object lists the sub-bins' release next to
     * the map's (the plan charged both): S = 32, s2 = 8 */
    ck_assert_int_eq(pg_spec_int(r, "encoding.quantile_sub", 0), 32);
    ck_assert_double_eq(pg_spec_num(r, "encoding.quantile_noise", 0), 4);
    pg_test_ckpt_privacy_sub(bytes, len, r);
    /* the sub-bins were charged and released under S = 32, s2 = 8: other
     * values (or none) are refused */
    const char *subs[] = {"\"quantile_sub\": 16", "\"quantile_sub\": 0",
                          "\"quantile_sub_noise\": 5"};
    for (int i = 0; i < 3; i++) {
        snprintf(spec, sizeof spec,
                 "{\"seed\": 3, \"privacy\": {\"noise_multiplier\": 1.3}, \"train\": "
                 "{\"steps\": 20, \"batch_size\": 64}, \"encoding\": {\"quantile_noise\": 4, %s}, "
                 "\"calibration\": {\"class_means\": true, \"noise_multiplier\": 3, "
                 "\"numeric\": \"quantile\"}}",
                 subs[i]);
        restore_refused(m, &f, &in, bytes, len, spec);
    }
    free(bytes);
    m->destroy(tr);
    json_decref(r);
    unmake(&f);
}
END_TEST

/* Table defaults (defaults_table.c): on a labelled central table whose
 * per-class marginals the release pins down (any epsilon since issue 28
 * hi39; below 100 or under 50 rows per encoded unit before),
 * calibration.independence 1 and the releases' noises 9 / sqrt(eps) (class
 * statistics) and max(1, min(6.7 / sqrt(eps), 7.5 / eps)) (the map,
 * map_noise_follows_one_over_epsilon). The plan at epsilon 5 equals the
 * independent curve (the steps at the resolved multiplier, the label count
 * alpha / 200, the map alpha / (2 q^2), the class statistics alpha / (2
 * s^2)) and meets the target; when a job asks for 0, or on a table too
 * small for the release to pin each class's marginals down, the noises are
 * the old ones. The checkpoint carries the independence and the snapshot
 * rebuilt from its bytes draws what the trainer's does; one out of [0, 1]
 * is refused, as are hostile spec values. Fails on the old code (no
 * calibration.independence). */
START_TEST(independence_by_default_at_small_epsilon)
{
    pg_threads_set(1);
    fixture f;
    make(&f);
    pg_job_data in = {.desc = &f.desc, .rows = &f.ds};
    const pg_method *m = pg_method_find("dp_sinkhorn");
    pg_spec_errors e;
    json_t *r =
        resolve("{\"seed\": 4, \"privacy\": {\"epsilon\": 5}, \"train\": {\"steps\": 20}}", &f, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    ck_assert_double_eq(pg_spec_num(r, "calibration.independence", -1), 1.0);
    double s = pg_spec_num(r, "calibration.noise_multiplier", 0);
    double q = pg_spec_num(r, "encoding.quantile_noise", 0);
    double q2 = pg_spec_num(r, "encoding.quantile_sub_noise", 0);
    ck_assert_double_eq_tol(s, 9.0 / sqrt(5.0), 1e-12);
    ck_assert_double_eq_tol(q, 7.5 / 5.0, 1e-12);
    ck_assert_int_eq(pg_spec_int(r, "encoding.quantile_sub", 0), 64);
    ck_assert_double_eq_tol(q2, 13.4 / sqrt(5.0), 1e-12); /* max(0.5, 13.4 / sqrt(eps)) */
    /* and the classes' copula (test_calib_copula.c), alpha / (2 c^2) */
    double cop = pg_spec_num(r, "calibration.copula_noise", 0);
    ck_assert_msg(cop > 0.0, "no copula by default");
    pg_privacy_plan p;
    ck_assert_int_eq(m->plan(r, &in, &p, NULL), PG_OK);
    double rate = (double)pg_spec_int(r, "train.batch_size", 0) / N;
    ck_assert_double_eq_tol(rate, 64.0 / N, 1e-15);
    const double releases[] = {10, q, q2, s, cop};
    double eps = pg_test_plan_curve(&p, rate, pg_spec_num(r, "privacy.noise_multiplier", 0), 20,
                                    releases, 5);
    ck_assert_double_eq_tol(p.epsilon, eps, 1e-12 * eps);
    ck_assert_msg(eps <= 5.0 + 1e-9 && eps > 4.9, "epsilon %g", eps);
    pg_trainer *tr = train(r, &f);
    size_t len;
    unsigned char *bytes = pg_test_checked_checkpoint(m, tr, r, &in, D, "\"independence\":1", &len);
    /* A checkpoint whose independence is out of [0, 1] is refused. */
    unsigned char *at = memmem(bytes, len, "\"independence\":1", 16);
    at[15] = '7';
    pg_snapshot *bad_snap = NULL;
    ck_assert_int_eq(m->load_snapshot(bytes, len, &bad_snap, NULL), PG_EFORMAT);
    ck_assert_ptr_null(bad_snap);
    free(bytes);
    m->destroy(tr);
    json_decref(r);
    /* The old noises when a job asks for 0 (and at a large epsilon, where
     * the rule now holds too, issue 28 hi39: independence 1, and both
     * noises at their floors, which the old rule gave as well). */
    const char *old[] = {
        "{\"privacy\": {\"epsilon\": 1000}, \"calibration\": {\"independence\": 0}}",
        "{\"privacy\": {\"epsilon\": 5}, \"calibration\": {\"independence\": 0}}"};
    const double eo[] = {1000, 5};
    r = resolve("{\"privacy\": {\"epsilon\": 1000}}", &f, &e);
    ck_assert_ptr_nonnull(r);
    ck_assert_double_eq(pg_spec_num(r, "calibration.independence", 0), 1.0);
    ck_assert_double_eq(pg_spec_num(r, "calibration.noise_multiplier", 0), 1.0);
    ck_assert_double_eq(pg_spec_num(r, "encoding.quantile_noise", 0), 2.0);
    json_decref(r);
    for (int i = 0; i < 2; i++) {
        r = resolve(old[i], &f, &e);
        ck_assert_ptr_nonnull(r);
        ck_assert_double_eq(pg_spec_num(r, "calibration.independence", 0), 0.0);
        ck_assert_double_eq_tol(pg_spec_num(r, "calibration.noise_multiplier", 0),
                                fmax(1.0, 20.0 / sqrt(eo[i])), 1e-12);
        ck_assert_double_eq_tol(pg_spec_num(r, "encoding.quantile_noise", 0),
                                fmax(2.0, 10.0 / sqrt(eo[i])), 1e-12);
        /* the sub-bins' noise: max(0.5, 13.4 / sqrt(eps)) either way */
        ck_assert_int_eq(pg_spec_int(r, "encoding.quantile_sub", 0), 32);
        ck_assert_double_eq_tol(pg_spec_num(r, "encoding.quantile_sub_noise", 0),
                                fmax(0.5, 13.4 / sqrt(eo[i])), 1e-12);
        json_decref(r);
    }
    /* A table whose per-class marginals the release cannot pin down (the
     * plan's n 100: a class frequency's sd sqrt(2 3) 9 / sqrt(5) / 50 =
     * 0.20 > 0.03) keeps the generator's dependence and the old noises;
     * at 3000 rows it is 0.0066. */
    r = resolve_at_n("{\"privacy\": {\"epsilon\": 5}}", &f, 100);
    ck_assert_double_eq(pg_spec_num(r, "calibration.independence", 0), 0.0);
    ck_assert_double_eq_tol(pg_spec_num(r, "calibration.noise_multiplier", 0), 20.0 / sqrt(5.0),
                            1e-12);
    json_decref(r);
    /* Few rows per encoded unit (200 / 5 < 50): independent even at
     * epsilon 1000 (sd sqrt(6) / 100 = 0.024 <= 0.03), where the noises
     * are the old ones (1 and 2) anyway. */
    r = resolve_at_n("{\"privacy\": {\"epsilon\": 1000}}", &f, 200);
    ck_assert_double_eq(pg_spec_num(r, "calibration.independence", 0), 1.0);
    ck_assert_double_eq(pg_spec_num(r, "calibration.noise_multiplier", 0), 1.0);
    ck_assert_double_eq(pg_spec_num(r, "encoding.quantile_noise", 0), 2.0);
    json_decref(r);
    const char *bad[] = {
        "{\"privacy\": {\"epsilon\": 5}, \"calibration\": {\"independence\": 1.5}}",
        "{\"privacy\": {\"epsilon\": 5}, \"calibration\": {\"independence\": -1}}",
        "{\"privacy\": {\"epsilon\": 5}, \"calibration\": {\"class_means\": false, "
        "\"independence\": 1}}"};
    refused(&f, bad, sizeof bad / sizeof bad[0], "calibration.independence", false);
    unmake(&f);
}
END_TEST

/* KS distance between the sorted a[0..na) and b[0..nb). */
static double ks2(const double *a, size_t na, const double *b, size_t nb)
{
    double d = 0;
    for (size_t i = 0, j = 0; i < na || j < nb;) {
        double x = i < na && (j >= nb || a[i] <= b[j]) ? a[i] : b[j];
        while (i < na && a[i] <= x) i++;
        while (j < nb && b[j] <= x) j++;
        d = fmax(d, fabs((double)i / (double)na - (double)j / (double)nb));
    }
    return d;
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Sub-bins (qmap.h, encoding.quantile_sub) under the quantile rule with
 * independence 1: a column with a point mass at 0 and a heavy tail (assets
 * on [0, 500000]: class 0 40 % zeros, class 1 15 %, the rest log-normal
 * around 3000, so 90 % of the rows lie in the first of 32 bins) and one of
 * 12-month steps (Time on [0, 120]: bins 3.75 values wide), released nearly
 * without noise (s = s2 = 0.01; a per-cell std 0.014) through
 * pg_qmap_spec_release_classes, served from a collapsed draw (every row at
 * the centre). Each class's served values (20000 rows) are within KS 0.05
 * of the class's data (2000 rows): the sampling part exceeds 0.02 with
 * probability at most 2 exp(-2 20000 0.02^2) = 2.3e-7 (DKW), and the rest
 * (the linear shape inside a sub-bin 488 values wide, the noise) is below
 * 0.02 on this data (measured: KS 0.006-0.017). The old rule (sub-bins 0,
 * printed too: linear inside a bin) serves the zeros spread over
 * [0, 15625] and Time between its steps: KS 0.43-0.54 and 0.26-0.35. */
START_TEST(sub_bins_serve_point_masses_and_tails)
{
    pg_table *t = pg_test_table("{\"columns\":["
                                "{\"name\":\"a\",\"type\":\"integer\",\"min\":0,\"max\":500000},"
                                "{\"name\":\"t\",\"type\":\"integer\",\"min\":0,\"max\":120},"
                                "{\"name\":\"y\",\"type\":\"boolean\"}],\"label\":\"y\"}");
    const size_t n = 4000, m = 20000, d = t->width;
    float *x = pg_alloc_f32(n * d);
    int32_t *lab = malloc(n * sizeof *lab);
    double *val[2][2];
    size_t cnt[2] = {0, 0};
    for (int k = 0; k < 2; k++)
        for (int c = 0; c < 2; c++) val[k][c] = malloc(n * sizeof(double));
    pg_rng r;
    pg_rng_seeded(&r, 11, 0);
    static const double steps[5] = {12, 24, 36, 48, 60};
    static const double pt[2][5] = {{0.1, 0.2, 0.2, 0.2, 0.3}, {0.05, 0.1, 0.25, 0.2, 0.4}};
    for (size_t i = 0; i < n; i++) {
        int k = (int)(i % 2);
        lab[i] = k;
        double u = pg_rng_uniform(&r), av = 0;
        if (u >= (k ? 0.15 : 0.4)) {
            av = round(exp(8.0 + 1.5 * pg_rng_normal(&r)));
            av = av > 500000 ? 500000 : av;
        }
        double v = pg_rng_uniform(&r), run = 0, tv = 60;
        for (int q = 0; q < 5; q++)
            if (v < (run += pt[k][q])) {
                tv = steps[q];
                break;
            }
        pg_table_value a = {.num = av}, b = {.num = tv};
        ck_assert_int_eq(pg_table_encode_value(t, 0, &a, PG_TABLE_BOUNDS_REFUSE, x + i * d, NULL),
                         PG_OK);
        ck_assert_int_eq(pg_table_encode_value(t, 1, &b, PG_TABLE_BOUNDS_REFUSE, x + i * d, NULL),
                         PG_OK);
        val[k][0][cnt[k]] = av;
        val[k][1][cnt[k]++] = tv;
    }
    pg_data_desc desc = pg_test_table_desc(t, n, 2, 0, 0);
    pg_heads *h = NULL;
    ck_assert_int_eq(pg_heads_from_table(t, PG_HEADS_TAU, &h, NULL), PG_OK);
    pg_rng sec;
    ck_assert_int_eq(pg_rng_secure(&sec, NULL), PG_OK);
    for (int sub = 32; sub >= 0; sub -= 32) {
        char spec[256];
        snprintf(spec, sizeof spec,
                 "{\"encoding\": {\"quantile_map\": true, \"quantile_bins\": 32, "
                 "\"quantile_noise\": 0.01, \"quantile_sub\": %d, \"quantile_sub_noise\": 0.01}}",
                 sub);
        json_t *rs = json_loads(spec, 0, NULL);
        size_t Q = pg_qmap_spec_cdf_len(rs, &desc);
        float *cdf = malloc(2 * Q * sizeof *cdf);
        pg_generator gen;
        memset(&gen, 0, sizeof gen);
        pg_error err = {0};
        ck_assert_msg(pg_qmap_spec_release_classes(rs, &desc, &sec, x, lab, n, 2, 0, &gen, cdf,
                                                   &err) == PG_OK,
                      "%s", err.msg);
        ck_assert_uint_eq(Q, pg_calib_table_cdf_len(gen.qmap));
        ck_assert_uint_eq(gen.qmap->sub, (size_t)sub);
        pg_calib_table *c = NULL;
        ck_assert_int_eq(pg_calib_table_new(h, 2, &c, NULL), PG_OK);
        ck_assert_msg(pg_calib_table_set_quantiles(c, gen.qmap, cdf, &err) == PG_OK, "%s", err.msg);
        /* targets: the units' centres (unused by the redraws) */
        float *targets = calloc(2 * 2 * d, sizeof *targets);
        for (size_t q = 0; q < 2 * 2 * d; q++) targets[q] = q % (2 * d) < d ? 0.0f : -1.0f;
        float *draw = pg_alloc_f32(2 * 500 * d);
        memset(draw, 0, 2 * 500 * d * sizeof *draw); /* collapsed: every row at the centre */
        ck_assert_int_eq(pg_calib_table_fit_all(c, targets, draw, 500, NULL), PG_OK);
        ck_assert_int_eq(pg_calib_table_set_independence(c, 1.0, NULL), PG_OK);
        float *rows = pg_alloc_f32(m * d);
        int32_t *rl = malloc(m * sizeof *rl);
        double *got = malloc(m * sizeof *got);
        for (int k = 0; k < 2; k++) {
            memset(rows, 0, m * d * sizeof *rows);
            for (size_t i = 0; i < m; i++) rl[i] = k;
            pg_rng ar;
            pg_rng_seeded(&ar, 5 + (uint64_t)k, 0);
            pg_calib_table_apply(c, &ar, rows, rl, m);
            pg_qmap_decode(gen.qmap, rows, d, m);
            for (int col = 0; col < 2; col++) {
                for (size_t i = 0; i < m; i++) {
                    pg_table_value v;
                    pg_table_decode_value(t, (size_t)col, rows + i * d, 1, &v);
                    got[i] = v.num;
                }
                qsort(got, m, sizeof *got, cmp_dbl);
                qsort(val[k][col], cnt[k], sizeof(double), cmp_dbl);
                double ks = ks2(got, m, val[k][col], cnt[k]);
                fprintf(stderr, "sub-bins %d: class %d column %d KS %.3f\n", sub, k, col, ks);
                if (sub) ck_assert_msg(ks <= 0.05, "class %d column %d: KS %.3f", k, col, ks);
            }
        }
        free(got);
        free(rl);
        pg_free(rows);
        pg_free(draw);
        free(targets);
        pg_calib_table_free(c);
        pg_qmap_free(gen.qmap);
        free(cdf);
        json_decref(rs);
    }
    pg_heads_free(h);
    for (int k = 0; k < 2; k++)
        for (int c = 0; c < 2; c++) free(val[k][c]);
    free(lab);
    pg_free(x);
    pg_table_free(t);
}
END_TEST

/* A class whose per-class histogram of a column kept nothing above its
 * noise gets a map uniform over the bins (qmap.h); the trainer warning
 * class_quantile_map_empty names that class and column and nothing else.
 * The released CDFs of a 2-class release (data in both classes) are
 * edited by hand: class "yes" of column "t" made uniform (what the
 * fallback writes), then also class "no" of "a". Fails on the old code
 * (no such warning). */
START_TEST(empty_class_map_is_warned)
{
    pg_table *t = pg_test_table("{\"columns\":["
                                "{\"name\":\"a\",\"type\":\"integer\",\"min\":0,\"max\":500000},"
                                "{\"name\":\"t\",\"type\":\"integer\",\"min\":0,\"max\":120},"
                                "{\"name\":\"y\",\"type\":\"categorical\",\"categories\":[\"no\","
                                "\"yes\"]}],\"label\":\"y\"}");
    const size_t n = 500, d = t->width;
    float *x = pg_alloc_f32(n * d);
    int32_t *lab = calloc(n, sizeof *lab);
    pg_rng r;
    pg_rng_seeded(&r, 3, 0);
    for (size_t i = 0; i < n; i++) {
        pg_table_value a = {.num = (double)pg_rng_below(&r, 20000)},
                       b = {.num = (double)(12 * (1 + pg_rng_below(&r, 5)))};
        pg_table_encode_value(t, 0, &a, PG_TABLE_BOUNDS_REFUSE, x + i * d, NULL);
        pg_table_encode_value(t, 1, &b, PG_TABLE_BOUNDS_REFUSE, x + i * d, NULL);
        lab[i] = i < 250 ? 0 : 1;
    }
    pg_data_desc desc = pg_test_table_desc(t, n, 2, 0, 0);
    json_t *rs = json_loads("{\"encoding\": {\"quantile_map\": true, \"quantile_noise\": 0.01, "
                            "\"quantile_sub\": 32, \"quantile_sub_noise\": 0.01}}",
                            0, NULL);
    pg_rng sec;
    ck_assert_int_eq(pg_rng_secure(&sec, NULL), PG_OK);
    size_t Q = pg_qmap_spec_cdf_len(rs, &desc);
    float *cdf = malloc(2 * Q * sizeof *cdf);
    pg_generator gen;
    memset(&gen, 0, sizeof gen);
    ck_assert_int_eq(
        pg_qmap_spec_release_classes(rs, &desc, &sec, x, lab, n, 2, 0, &gen, cdf, NULL), PG_OK);
    size_t nb0 = gen.qmap->cols[0].bins, nb1 = gen.qmap->cols[1].bins;
    /* the release itself: 250 rows a class, nothing said */
    pg_trainer tr = {0};
    pg_warn_class_qmap_empty(&tr, gen.qmap, 2, cdf, t);
    ck_assert_int_eq(tr.warnings.count, 0);
    /* class "yes", column "t" uniform over its bins */
    float *f = cdf + Q + nb0 + 1;
    for (size_t b = 0; b <= nb1; b++) f[b] = (float)b / (float)nb1;
    pg_warn_class_qmap_empty(&tr, NULL, 2, cdf, t);
    pg_warn_class_qmap_empty(&tr, gen.qmap, 2, NULL, t);
    pg_warn_class_qmap_empty(&tr, gen.qmap, 1, cdf, t);
    ck_assert_int_eq(tr.warnings.count, 0);
    pg_warn_class_qmap_empty(&tr, gen.qmap, 2, cdf, t);
    ck_assert_int_eq(tr.warnings.count, 1);
    ck_assert_str_eq(tr.warnings.items[0].code, PG_WARN_CLASS_QMAP_EMPTY);
    const char *msg = tr.warnings.items[0].message;
    ck_assert_msg(strstr(msg, "for \"t\" in class \"yes\", so its served") != NULL, "%s", msg);
    ck_assert_ptr_null(strstr(msg, "\"a\""));
    /* and class "no", column "a": both named, in class order */
    for (size_t b = 0; b <= nb0; b++) cdf[b] = (float)b / (float)nb0;
    pg_warn_class_qmap_empty(&tr, gen.qmap, 2, cdf, t);
    ck_assert_int_eq(tr.warnings.count, 1); /* replaced */
    msg = tr.warnings.items[0].message;
    ck_assert_msg(strstr(msg, "for \"a\" in class \"no\", \"t\" in class \"yes\", so their") !=
                      NULL,
                  "%s", msg);
    pg_qmap_free(gen.qmap);
    free(cdf);
    json_decref(rs);
    free(lab);
    pg_free(x);
    pg_table_free(t);
}
END_TEST

/* The quantile map's noise under the independence rule (defaults_table.c,
 * PG_DEFAULTS_QMAP_INDEP; issue 28, eps39): dp_sinkhorn's map takes
 * max(1, min(6.7 / sqrt(eps), 7.5 / eps)), so unchanged up to epsilon 1.25 (5.99 there),
 * 1.5 at 5, 1 from 7.5 to 100 (from 100 on the old max(2, 6.7 / sqrt(eps)):
 * independence_by_default_at_small_epsilon's 200 rows at 1000), and every plan meets its target
 * with the steps taking what is left; a job's own value is kept; swd_gen
 * (replace-one) keeps max(2, 6.7 / sqrt(eps)). The map then has 16 bins
 * of 64 sub-bins (32 and 32 elsewhere). Fails on the old code (3.0 at epsilon 5, 32 bins). */
START_TEST(map_noise_follows_one_over_epsilon)
{
    fixture f;
    make(&f);
    pg_job_data in = {.desc = &f.desc, .rows = &f.ds};
    const pg_method *m = pg_method_find("dp_sinkhorn");
    const double eps[] = {1.0, 1.25, 2.0, 5.0, 10.0, 50.0};
    const double want[] = {6.7, 6.7 / sqrt(1.25), 3.75, 1.5, 1.0, 1.0};
    for (size_t i = 0; i < sizeof eps / sizeof eps[0]; i++) {
        char spec[96];
        snprintf(spec, sizeof spec, "{\"privacy\": {\"epsilon\": %g}}", eps[i]);
        pg_spec_errors e;
        json_t *r = resolve(spec, &f, &e);
        ck_assert_msg(r != NULL, "eps %g: %s: %s", eps[i], e.items[0].field, e.items[0].message);
        ck_assert_double_eq(pg_spec_num(r, "calibration.independence", -1), 1.0);
        ck_assert_msg(fabs(pg_spec_num(r, "encoding.quantile_noise", 0) - want[i]) < 1e-12,
                      "eps %g: map noise %.17g, want %.17g", eps[i],
                      pg_spec_num(r, "encoding.quantile_noise", 0), want[i]);
        ck_assert_int_eq(pg_spec_int(r, "encoding.quantile_bins", 0), 16);
        ck_assert_int_eq(pg_spec_int(r, "encoding.quantile_sub", 0), 64);
        pg_privacy_plan p;
        ck_assert_int_eq(m->plan(r, &in, &p, NULL), PG_OK);
        ck_assert_msg(p.epsilon <= eps[i] * (1 + 1e-9) && p.epsilon > 0.98 * eps[i],
                      "eps %g: plan %g", eps[i], p.epsilon);
        json_decref(r);
    }
    pg_spec_errors e;
    json_t *r =
        resolve("{\"privacy\": {\"epsilon\": 5}, \"encoding\": {\"quantile_noise\": 3}}", &f, &e);
    ck_assert_ptr_nonnull(r);
    ck_assert_double_eq(pg_spec_num(r, "encoding.quantile_noise", 0), 3.0);
    json_decref(r);
    r = pg_test_resolve(pg_method_find("swd_gen"), "{\"privacy\": {\"epsilon\": 5}}", &in, &e);
    ck_assert_msg(r != NULL, "swd_gen: %s: %s", e.items[0].field, e.items[0].message);
    ck_assert_double_eq(pg_spec_num(r, "calibration.independence", -1), 1.0);
    ck_assert_double_eq_tol(pg_spec_num(r, "encoding.quantile_noise", 0), 6.7 / sqrt(5.0), 1e-12);
    ck_assert_int_eq(pg_spec_int(r, "encoding.quantile_bins", PG_QMAP_DEFAULT_BINS), 32);
    json_decref(r);
    /* A job's own bins are kept; the generator's dependence (independence
     * 0) keeps the old map: 32 bins, max(2, 10 / sqrt(eps)). */
    r = resolve("{\"privacy\": {\"epsilon\": 5}, \"encoding\": {\"quantile_bins\": 40}}", &f, &e);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(pg_spec_int(r, "encoding.quantile_bins", 0), 40);
    json_decref(r);
    r = resolve("{\"privacy\": {\"epsilon\": 5}, \"calibration\": {\"independence\": 0}}", &f, &e);
    ck_assert_ptr_nonnull(r);
    ck_assert_int_eq(pg_spec_int(r, "encoding.quantile_bins", PG_QMAP_DEFAULT_BINS), 32);
    ck_assert_int_eq(pg_spec_int(r, "encoding.quantile_sub", 0), 32);
    ck_assert_double_eq_tol(pg_spec_num(r, "encoding.quantile_noise", 0), 10 / sqrt(5.0), 1e-12);
    json_decref(r);
    unmake(&f);
}
END_TEST

static Suite *calib_table_suite(void)
{
    Suite *s = suite_create("calib_table");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, sensitivity_is_sqrt2_for_any_row);
    tcase_add_test(tc, noise_is_multiplier_times_sensitivity);
    tcase_add_test(tc, rule_moves_samples_onto_the_targets);
    tcase_add_test(tc, plan_charges_the_release_exactly);
    tcase_add_test(tc, calibrated_samples_match_the_release);
    tcase_add_test(tc, checkpoints_carry_the_calibration);
    tcase_add_test(tc, untyped_rows_are_unchanged);
    tcase_add_test(tc, class_maps_sum_to_the_pooled_map);
    tcase_add_test(tc, quantile_rule_matches_the_class_cdf);
    tcase_add_test(tc, quantile_rule_in_dp_sinkhorn);
    tcase_add_test(tc, independence_breaks_only_the_dependence);
    tcase_add_test(tc, independence_by_default_at_small_epsilon);
    tcase_add_test(tc, sub_bins_serve_point_masses_and_tails);
    tcase_add_test(tc, empty_class_map_is_warned);
    tcase_add_test(tc, map_noise_follows_one_over_epsilon);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(calib_table_suite)
