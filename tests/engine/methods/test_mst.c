/* mst and aim (engine/methods/mst.c) through the method interface: the plan
 * against an independent zCDP composition and conversion, the 422s, whole
 * runs on a table with known dependencies (valid rows, learned structure,
 * class balance, conditional draws, same seed same rows), checkpoints, and a
 * resumed run that keeps the measurements it had. */
#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "engine/checkpoint/checkpoint.h"
#include "engine/core/alloc.h"
#include "engine/data/dataset.h"
#include "engine/data/table.h"
#include "engine/methods/method.h"
#include "engine/methods/snapshot.h"
#include "engine/methods/spec.h"
#include "engine/pgm/pgm.h"
#include "engine/privacy/privacy.h"
#include "support/pg_method_test.h"
#include "support/pg_table_test.h"
#include "support/pg_test.h"

static const char *SCHEMA =
    "{\"columns\":["
    "{\"name\":\"y\",\"type\":\"categorical\",\"categories\":[\"no\",\"yes\"]},"
    "{\"name\":\"a\",\"type\":\"categorical\",\"categories\":[\"p\",\"q\",\"r\"]},"
    "{\"name\":\"b\",\"type\":\"integer\",\"min\":0,\"max\":9},"
    "{\"name\":\"c\",\"type\":\"continuous\",\"min\":0,\"max\":1,\"nullable\":true},"
    "{\"name\":\"e\",\"type\":\"boolean\"}],"
    "\"label\":\"y\"}";
#define ROWS 4000

static pg_table *table(void)
{
    return pg_test_table(SCHEMA);
}

/* a uniform; b = 3a + {0,1,2}; y = (a == r) with prob 0.9; e = y with prob
 * 0.9; c missing 10 %, else uniform. */
static void rows(const pg_table *t, pg_dataset *ds)
{
    float *x = pg_alloc_f32((size_t)ROWS * t->width);
    int32_t *lab = pg_alloc(ROWS * sizeof *lab);
    pg_rng rng;
    pg_rng_seeded(&rng, 5, 1);
    for (size_t i = 0; i < ROWS; i++) {
        float *r = x + i * t->width;
        memset(r, 0, t->width * sizeof *r);
        size_t a = pg_rng_below(&rng, 3);
        int y = pg_rng_uniform(&rng) < 0.9 ? a == 2 : a != 2;
        int e = pg_rng_uniform(&rng) < 0.9 ? y : !y;
        pg_table_value v = {0};
        v.cat = a;
        ck_assert_int_eq(pg_table_encode_value(t, 1, &v, PG_TABLE_BOUNDS_REFUSE, r, NULL), 0);
        v.num = (double)(3 * a + pg_rng_below(&rng, 3));
        ck_assert_int_eq(pg_table_encode_value(t, 2, &v, PG_TABLE_BOUNDS_REFUSE, r, NULL), 0);
        v = (pg_table_value){.missing = pg_rng_uniform(&rng) < 0.1, .num = pg_rng_uniform(&rng)};
        ck_assert_int_eq(pg_table_encode_value(t, 3, &v, PG_TABLE_BOUNDS_REFUSE, r, NULL), 0);
        v = (pg_table_value){.cat = (size_t)e};
        ck_assert_int_eq(pg_table_encode_value(t, 4, &v, PG_TABLE_BOUNDS_REFUSE, r, NULL), 0);
        lab[i] = y;
    }
    size_t shape[1] = {t->width};
    ck_assert_int_eq(
        pg_dataset_adopt(ds, x, lab, ROWS, shape, 1, 2, (float)t->lo, (float)t->hi, NULL), 0);
}

static pg_data_desc desc_of(const pg_table *t)
{
    return pg_test_table_desc(t, ROWS, 2, 100, 1e-5);
}

/* The ledger's grid written out by hand and the improved conversion. */
static double eps_of_rho(double rho, double delta)
{
    double best = INFINITY;
    for (int i = 11; i <= 1024; i++) {
        double a = i <= 109 ? i / 10.0 : i <= 172 ? i - 98 : 0;
        if (i > 172) {
            if (i == 173)
                a = 128;
            else if (i == 174)
                a = 256;
            else if (i == 175)
                a = 512;
            else if (i == 176)
                a = 1024;
            else
                break;
        }
        double v = a * rho + log1p(-1.0 / a) - (log(delta) + log(a)) / (a - 1.0);
        best = fmin(best, v);
    }
    return fmax(best, 0);
}

START_TEST(plans_charge_the_zcdp_curve_within_epsilon)
{
    const char *names[] = {"mst", "aim"};
    double eps[] = {0.3, 1, 5};
    pg_table *t = table();
    pg_data_desc desc = desc_of(t);
    pg_job_data in = {.desc = &desc};
    for (int m = 0; m < 2; m++)
        for (int k = 0; k < 3; k++) {
            const pg_method *M = pg_method_find(names[m]);
            char spec[256];
            snprintf(spec, sizeof spec, "{\"privacy\":{\"epsilon\":%g},\"seed\":1}", eps[k]);
            pg_spec_errors e;
            json_t *r = pg_test_resolve(M, spec, &in, &e);
            ck_assert_msg(r, "%s: %s", e.items[0].field, e.items[0].message);
            pg_privacy_plan p;
            ck_assert_int_eq(M->plan(r, &in, &p, NULL), PG_OK);
            const json_t *acc = json_object_get(r, "accounting");
            double rho = json_number_value(json_object_get(acc, "rho"));
            ck_assert(p.charges);
            ck_assert_str_eq(p.neighbouring, "add_remove");
            for (int i = 0; i < p.norders; i++)
                ck_assert_double_eq_tol(p.rdp[i], p.orders[i] * rho, 1e-15 * p.orders[i] * rho);
            double want = eps_of_rho(rho, 1e-5);
            ck_assert_msg(pg_test_reldiff(p.epsilon, want) < 1e-12, "plan %.15g, by hand %.15g",
                          p.epsilon, want);
            ck_assert_double_le(p.epsilon, eps[k]);
            ck_assert_double_ge(p.epsilon, eps[k] * (1 - 1e-9));
            if (m == 0) {
                /* MST's three thirds, composed by hand from the dry run's
                 * numbers: d one-ways, d-1 selections, d-1 pairs. */
                double d = 5, s1 = json_number_value(json_object_get(acc, "sigma_one_way"));
                double s2 = json_number_value(json_object_get(acc, "sigma_pairs"));
                double es = json_number_value(json_object_get(acc, "selection_epsilon"));
                double tot = d / (2 * s1 * s1) + (d - 1) * es * es / 8 + (d - 1) / (2 * s2 * s2);
                ck_assert_msg(pg_test_reldiff(tot, rho) < 1e-12, "composed %g, rho %g", tot, rho);
            }
            json_decref(r);
        }
    pg_table_free(t);
}
END_TEST

START_TEST(bad_jobs_get_field_errors)
{
    pg_table *t = table();
    pg_data_desc desc = desc_of(t);
    pg_job_data in = {.desc = &desc};
    const pg_method *M = pg_method_find("mst"), *A = pg_method_find("aim");
    pg_spec_errors e;
    ck_assert_ptr_null(pg_test_resolve(M, "{\"seed\":1}", &in, &e));
    ck_assert(pg_test_has_error(&e, "privacy.epsilon"));
    ck_assert_ptr_null(
        pg_test_resolve(M, "{\"privacy\":{\"epsilon\":1},\"discretize\":{\"bins\":1}}", &in, &e));
    ck_assert(pg_test_has_error(&e, "discretize.bins"));
    ck_assert_ptr_null(pg_test_resolve(M, "{\"privacy\":{\"epsilon\":1},\"bogus\":2}", &in, &e));
    ck_assert_int_gt(e.count, 0);
    ck_assert_ptr_null(pg_test_resolve(M, "{\"privacy\":{\"epsilon\":1,\"delta\":1e-3}}", &in,
                                       &e)); /* above the cap */
    ck_assert(pg_test_has_error(&e, "privacy.delta"));
    /* a model that cannot fit: the message gives the size it needs */
    desc.n = 200000;
    ck_assert_ptr_null(pg_test_resolve(M,
                                       "{\"privacy\":{\"epsilon\":1},\"discretize\":{\"bins\":1024}"
                                       ",\"model\":{\"max_cells\":1000}}",
                                       &in, &e));
    ck_assert(pg_test_has_error(&e, "model.max_cells"));
    ck_assert_ptr_nonnull(strstr(e.items[0].message, "cells"));
    ck_assert_ptr_null(pg_test_resolve(A,
                                       "{\"privacy\":{\"epsilon\":1},\"discretize\":{\"bins\":1024}"
                                       ",\"model\":{\"max_cells\":1000}}",
                                       &in, &e));
    ck_assert(pg_test_has_error(&e, "model.max_cells"));
    desc.n = ROWS;
    /* local data, images, wide untyped */
    desc.model = PG_PRIVACY_LOCAL;
    ck_assert_ptr_null(pg_test_resolve(A, "{\"privacy\":{\"epsilon\":1}}", &in, &e));
    ck_assert(pg_test_has_error(&e, "dataset_id"));
    pg_data_desc img = {.n = 100,
                        .d = 784,
                        .ndim = 3,
                        .shape = {1, 28, 28},
                        .lo = -1,
                        .hi = 1,
                        .model = PG_PRIVACY_CENTRAL,
                        .cap_delta = 1e-5};
    pg_job_data ii = {.desc = &img};
    ck_assert_ptr_null(pg_test_resolve(M, "{\"privacy\":{\"epsilon\":1}}", &ii, &e));
    ck_assert(pg_test_has_error(&e, "dataset_id"));
    ck_assert_ptr_nonnull(strstr(e.items[0].message, "images"));
    img.ndim = 1, img.d = 65, img.shape[0] = 65;
    ck_assert_ptr_null(pg_test_resolve(M, "{\"privacy\":{\"epsilon\":1}}", &ii, &e));
    ck_assert(pg_test_has_error(&e, "dataset_id"));
    ck_assert_ptr_nonnull(strstr(e.items[0].message, "64"));
    img.d = 64, img.shape[0] = 64;
    json_t *r = pg_test_resolve(M, "{\"privacy\":{\"epsilon\":1}}", &ii, &e);
    ck_assert_msg(r, "%s", e.count ? e.items[0].message : "");
    json_decref(r);
    pg_table_free(t);
}
END_TEST

/* Draws n rows with classes and checks each against the schema. Returns the
 * rows (caller frees) and fills cls. */
static float *draw_valid(const pg_table *t, pg_snapshot *s, size_t n, uint64_t seed, int32_t *cls)
{
    float *y = pg_alloc_f32(n * t->width);
    pg_error err = {0};
    ck_assert_msg(pg_snapshot_sample_labeled(s, n, seed, y, cls, &err) == PG_OK, "%s", err.msg);
    for (size_t i = 0; i < n; i++) {
        const float *row = y + i * t->width;
        ck_assert(cls[i] == 0 || cls[i] == 1);
        for (size_t c = 0; c < t->ncols; c++) {
            if (c == t->label) continue;
            pg_table_value v;
            pg_table_decode_value(t, c, row, 0, &v);
            float tmp[16] = {0};
            ck_assert_int_eq(pg_table_encode_value(t, c, &v, PG_TABLE_BOUNDS_REFUSE, tmp, NULL), 0);
            /* the decoder's own encoding gives back the same units */
            for (size_t u = 0; u < t->cols[c].width; u++)
                ck_assert_float_eq(tmp[t->cols[c].offset + u], row[t->cols[c].offset + u]);
        }
    }
    return y;
}

static void run(const char *name, const char *spec, double min_agree)
{
    pg_table *t = table();
    pg_dataset ds;
    rows(t, &ds);
    pg_data_desc desc = desc_of(t);
    pg_job_data in = {.desc = &desc, .rows = &ds};
    const pg_method *M = pg_method_find(name);
    pg_spec_errors e;
    json_t *r = pg_test_resolve(M, spec, &in, &e);
    ck_assert_msg(r, "%s: %s", e.items[0].field, e.items[0].message);
    pg_privacy_plan p;
    ck_assert_int_eq(M->plan(r, &in, &p, NULL), PG_OK);
    unsigned char *mid = NULL;
    size_t midlen = 0;
    pg_step_report rep;
    pg_trainer *tr = pg_test_run_plan(M, r, &in, &p, 2, &mid, &midlen, &rep);
    pg_error err = {0};
    /* every bit of rho is spent, none more */
    ck_assert_msg(pg_test_reldiff(rep.epsilon_spent, p.epsilon) < 1e-9, "spent %g of %g",
                  rep.epsilon_spent, p.epsilon);
    pg_snapshot *s;
    ck_assert_int_eq(M->snapshot(tr, &s, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_num_classes(s), 2);
    enum { S = 3000 };
    int32_t cls[S], cls2[S];
    float *y = draw_valid(t, s, S, 11, cls);
    float *y2 = draw_valid(t, s, S, 11, cls2);
    ck_assert(!memcmp(y, y2, (size_t)S * t->width * sizeof *y)); /* same seed, same rows */
    ck_assert(!memcmp(cls, cls2, sizeof cls));
    /* learned structure: y agrees with (a == r) and e agrees with y (0.9 in
     * the data); the class balance is the data's (1/3 yes) */
    double agree = 0, agree_e = 0, yes = 0;
    for (size_t i = 0; i < S; i++) {
        pg_table_value va, ve;
        pg_table_decode_value(t, 1, y + i * t->width, 0, &va);
        pg_table_decode_value(t, 4, y + i * t->width, 0, &ve);
        agree += (va.cat == 2) == (cls[i] == 1);
        agree_e += (int)ve.cat == cls[i];
        yes += cls[i];
    }
    ck_assert_msg(agree / S > min_agree && agree_e / S > min_agree, "%s: agreement %.3f %.3f", name,
                  agree / S, agree_e / S);
    ck_assert_msg(fabs(yes / S - 1.0 / 3) < 0.06, "%s: class yes %.3f", name, yes / S);
    /* conditional draws: class 1's rows have e mostly true */
    ck_assert_int_eq(pg_snapshot_sample(s, S, 12, 1, y, NULL), PG_OK);
    double e1 = 0;
    for (size_t i = 0; i < S; i++) {
        pg_table_value ve;
        pg_table_decode_value(t, 4, y + i * t->width, 0, &ve);
        e1 += ve.cat;
    }
    ck_assert_msg(e1 / S > min_agree, "%s: P(e | yes) = %.3f", name, e1 / S);
    pg_free(y);
    pg_free(y2);
    pg_snapshot_release(s);
    unsigned char *bytes;
    size_t len;
    ck_assert_int_eq(M->save(tr, &bytes, &len, NULL), PG_OK);
    pg_test_checkpoint_round_trip(M, r, &in, bytes, len, 200, t->width, -1);
    pg_test_checkpoint_round_trip(M, r, &in, bytes, len, 200, t->width, 1);
    /* Resumed from step 2: the measurements made by then come back from the
     * checkpoint, never drawn again, and the run finishes. */
    pg_trainer *t2;
    ck_assert_msg(M->restore(r, &in, 1, mid, midlen, &t2, &err) == PG_OK, "%s", err.msg);
    rep = (pg_step_report){0};
    while (!rep.done) ck_assert_msg(M->step(t2, &rep, &err) == PG_OK, "%s", err.msg);
    unsigned char *fin;
    size_t finlen;
    ck_assert_int_eq(M->save(t2, &fin, &finlen, NULL), PG_OK);
    pg_ckpt c0, c1;
    ck_assert_int_eq(pg_ckpt_decode(mid, midlen, &c0, NULL), PG_OK);
    ck_assert_int_eq(pg_ckpt_decode(fin, finlen, &c1, NULL), PG_OK);
    const pg_ckpt_tensor *y0 = pg_ckpt_find(&c0, "y"), *y1 = pg_ckpt_find(&c1, "y");
    ck_assert_uint_gt(y0->dims[0], 0);
    ck_assert_uint_gt(y1->dims[0], y0->dims[0]);
    ck_assert(!memcmp(y0->data, y1->data, y0->dims[0] * sizeof(float)));
    pg_ckpt_free(&c0);
    pg_ckpt_free(&c1);
    /* a checkpoint of another schema is refused */
    char *other = strdup(SCHEMA);
    *strstr(other, "\"p\"") = '"', strstr(other, "\"p\"")[1] = 'z';
    json_t *oj = json_loads(other, 0, NULL);
    pg_table *ot = NULL;
    ck_assert_int_eq(pg_table_from_json(oj, &ot, NULL), PG_OK);
    pg_data_desc d2 = desc;
    d2.table = ot;
    pg_job_data in2 = {.desc = &d2, .rows = &ds};
    pg_trainer *t3 = NULL;
    ck_assert_int_eq(M->restore(r, &in2, 1, bytes, len, &t3, &err), PG_EFORMAT);
    pg_table_free(ot);
    json_decref(oj);
    free(other);
    free(fin);
    free(mid);
    free(bytes);
    M->destroy(t2);
    M->destroy(tr);
    json_decref(r);
    pg_dataset_free(&ds);
    pg_table_free(t);
}

/* An mst trainer with the given spec on the ROWS rows x (labels lab),
 * which ds adopts; ds, desc and in must outlive the trainer, r is the
 * resolved spec the caller releases. */
static pg_trainer *mst_start(const pg_table *t, float *x, int32_t *lab, const char *spec,
                             pg_dataset *ds, pg_data_desc *desc, pg_job_data *in, json_t **r)
{
    size_t shape[1] = {t->width};
    ck_assert_int_eq(
        pg_dataset_adopt(ds, x, lab, ROWS, shape, 1, 2, (float)t->lo, (float)t->hi, NULL), 0);
    *desc = desc_of(t);
    *in = (pg_job_data){.desc = desc, .rows = ds};
    const pg_method *M = pg_method_find("mst");
    pg_spec_errors e;
    *r = pg_test_resolve(M, spec, in, &e);
    ck_assert(*r);
    pg_trainer *tr;
    pg_error err = {0};
    ck_assert_msg(M->create(*r, in, 1, &tr, &err) == PG_OK, "%s", err.msg);
    return tr;
}

/* A level no row has is merged alone by MST's domain compression (its noisy
 * count is below 3 sigma almost surely: 0 against 3 x 15.8 here). A single
 * merged level is no compression at all; an earlier version kept its map
 * while the model stayed on the original codes, so every level of the column
 * came back permuted (q's share served as r, and so on). */
START_TEST(mst_single_rare_level_keeps_the_levels)
{
    pg_table *t = table();
    float *x = pg_alloc_f32((size_t)ROWS * t->width);
    int32_t *lab = pg_alloc(ROWS * sizeof *lab);
    pg_rng rng;
    pg_rng_seeded(&rng, 9, 1);
    for (size_t i = 0; i < ROWS; i++) {
        float *r = x + i * t->width;
        memset(r, 0, t->width * sizeof *r);
        size_t a = pg_rng_uniform(&rng) < 0.7 ? 1 : 2; /* q 70 %, r 30 %, p never */
        pg_table_value v = {.cat = a};
        ck_assert_int_eq(pg_table_encode_value(t, 1, &v, PG_TABLE_BOUNDS_REFUSE, r, NULL), 0);
        v = (pg_table_value){.num = (double)pg_rng_below(&rng, 10)};
        ck_assert_int_eq(pg_table_encode_value(t, 2, &v, PG_TABLE_BOUNDS_REFUSE, r, NULL), 0);
        v = (pg_table_value){.num = pg_rng_uniform(&rng)};
        ck_assert_int_eq(pg_table_encode_value(t, 3, &v, PG_TABLE_BOUNDS_REFUSE, r, NULL), 0);
        v = (pg_table_value){.cat = pg_rng_below(&rng, 2)};
        ck_assert_int_eq(pg_table_encode_value(t, 4, &v, PG_TABLE_BOUNDS_REFUSE, r, NULL), 0);
        lab[i] = (int32_t)pg_rng_below(&rng, 2);
    }
    pg_dataset ds;
    pg_data_desc desc;
    pg_job_data in;
    json_t *r;
    const pg_method *M = pg_method_find("mst");
    pg_trainer *tr =
        mst_start(t, x, lab, "{\"privacy\":{\"epsilon\":1},\"seed\":4}", &ds, &desc, &in, &r);
    pg_error err = {0};
    pg_step_report rep = {0};
    while (!rep.done) ck_assert_msg(M->step(tr, &rep, &err) == PG_OK, "%s", err.msg);
    /* served from the snapshot and from the checkpoint (what a restarted
     * replica serves) alike */
    pg_snapshot *snaps[2];
    ck_assert_int_eq(M->snapshot(tr, &snaps[0], NULL), PG_OK);
    unsigned char *bytes;
    size_t len;
    ck_assert_int_eq(M->save(tr, &bytes, &len, NULL), PG_OK);
    ck_assert_msg(M->load_snapshot(bytes, len, &snaps[1], &err) == PG_OK, "%s", err.msg);
    enum { S = 4000 };
    float *y = pg_alloc_f32((size_t)S * t->width);
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(pg_snapshot_sample(snaps[k], S, 21, -1, y, NULL), PG_OK);
        double f[3] = {0};
        for (size_t i = 0; i < S; i++) {
            pg_table_value va;
            pg_table_decode_value(t, 1, y + i * t->width, 0, &va);
            f[va.cat] += 1.0 / S;
        }
        /* sampling error of a share of 4000 rows: sd < 0.008; the noise of
         * the counts (sd 15.8 of 4000) is smaller still */
        ck_assert_msg(f[0] < 0.03 && fabs(f[1] - 0.7) < 0.05 && fabs(f[2] - 0.3) < 0.05,
                      "snapshot %d serves p %.3f q %.3f r %.3f (data 0, 0.7, 0.3)", k, f[0], f[1],
                      f[2]);
        pg_snapshot_release(snaps[k]);
    }
    pg_free(y);
    free(bytes);
    M->destroy(tr);
    json_decref(r);
    pg_dataset_free(&ds);
    pg_table_free(t);
}
END_TEST

/* MST's merged rare levels: after step 1 (one-way marginals measured, rare
 * levels merged, the model fitted to them) the checkpoint holds the noisy
 * one-ways, the compression maps and the model. b has 2 common values and 8
 * rare ones (30 rows each, below 3 sigma = 47 most of the time), so its
 * merged level is the sum of about 7 noisy counts, variance nrare sigma^2.
 * The fit must weigh it so: the total is the inverse-variance mean of the
 * measurements' sums with that variance, and b's fitted one-way is the
 * weighted projection y_c + (N - sum y) (1/w_c) / sum_j (1/w_j). The old fit
 * weighed the merged cell as one cell of variance sigma^2 (its total differs
 * by several counts: sd of the sums' discrepancy about 40). */
START_TEST(mst_weighs_merged_levels_by_their_noise)
{
    pg_table *t = table();
    float *x = pg_alloc_f32((size_t)ROWS * t->width);
    int32_t *lab = pg_alloc(ROWS * sizeof *lab);
    pg_rng rng;
    pg_rng_seeded(&rng, 11, 1);
    for (size_t i = 0; i < ROWS; i++) {
        float *r = x + i * t->width;
        memset(r, 0, t->width * sizeof *r);
        pg_table_value v = {.cat = pg_rng_below(&rng, 3)};
        ck_assert_int_eq(pg_table_encode_value(t, 1, &v, PG_TABLE_BOUNDS_REFUSE, r, NULL), 0);
        /* rows 0..239: values 1-4, 6-9, 30 each; then 0 and 5 alternately */
        int rare[8] = {1, 2, 3, 4, 6, 7, 8, 9};
        v = (pg_table_value){.num = i < 240 ? rare[i / 30] : (i % 2 ? 5 : 0)};
        ck_assert_int_eq(pg_table_encode_value(t, 2, &v, PG_TABLE_BOUNDS_REFUSE, r, NULL), 0);
        v = (pg_table_value){.num = pg_rng_uniform(&rng)};
        ck_assert_int_eq(pg_table_encode_value(t, 3, &v, PG_TABLE_BOUNDS_REFUSE, r, NULL), 0);
        v = (pg_table_value){.cat = pg_rng_below(&rng, 2)};
        ck_assert_int_eq(pg_table_encode_value(t, 4, &v, PG_TABLE_BOUNDS_REFUSE, r, NULL), 0);
        lab[i] = (int32_t)pg_rng_below(&rng, 2);
    }
    pg_dataset ds;
    pg_data_desc desc;
    pg_job_data in;
    json_t *r;
    const pg_method *M = pg_method_find("mst");
    /* 10 bins: each of b's integers its own level (the default 8 bins
     * pair 3-4 and 8-9 into levels of 60 rows, above 3 sigma one time in
     * five, and then too few levels were rare one run in 150). */
    pg_trainer *tr = mst_start(
        t, x, lab, "{\"privacy\":{\"epsilon\":1},\"seed\":4,\"discretize\":{\"bins\":10}}", &ds,
        &desc, &in, &r);
    pg_error err = {0};
    pg_step_report rep = {0};
    ck_assert_msg(M->step(tr, &rep, &err) == PG_OK, "%s", err.msg);
    unsigned char *bytes;
    size_t len;
    ck_assert_int_eq(M->save(tr, &bytes, &len, NULL), PG_OK);
    pg_ckpt c = {0};
    ck_assert_int_eq(pg_ckpt_decode(bytes, len, &c, NULL), PG_OK);
    json_t *h = json_loads(c.header, 0, NULL);
    ck_assert(h);
    const json_t *ms = json_object_get(h, "measures"), *cms = json_object_get(h, "compress");
    const float *y = pg_ckpt_find(&c, "y")->data;
    const pg_ckpt_tensor *mt = pg_ckpt_find(&c, "model");
    pg_pgm_model *model = NULL;
    ck_assert_int_eq(pg_pgm_load((const unsigned char *)mt->data,
                                 (size_t)json_integer_value(json_object_get(h, "model_len")),
                                 &model, NULL),
                     PG_OK);
    /* b is attribute 2 (schema order; the label is column 0) */
    const size_t B = 2;
    const json_t *cb = json_array_get(cms, B);
    ck_assert_msg(json_is_object(cb), "b was not compressed");
    size_t nrare = json_array_size(json_object_get(cb, "rare"));
    ck_assert_uint_ge(nrare, 2);
    double num = 0, den = 0, num_old = 0, den_old = 0;
    size_t bo = 0, bc = 0;
    ck_assert_uint_eq(json_array_size(ms), 5);
    for (size_t i = 0; i < json_array_size(ms); i++) {
        const json_t *o = json_array_get(ms, i);
        size_t off = (size_t)json_integer_value(json_object_get(o, "off"));
        size_t cells = (size_t)json_integer_value(json_object_get(o, "cells"));
        double sg = json_number_value(json_object_get(o, "sigma")), s = 0;
        for (size_t j = 0; j < cells; j++) s += y[off + j];
        double var = sg * sg * (double)cells, var_old = var;
        if (i == B) {
            var = sg * sg * (double)(cells - 1 + nrare);
            bo = off, bc = cells;
        }
        num += s / var, den += 1 / var;
        num_old += s / var_old, den_old += 1 / var_old;
    }
    double N = num / den, N_old = num_old / den_old, tot = pg_pgm_model_total(model);
    ck_assert_msg(fabs(tot - N) < 1e-9 * N, "total %.6f, want %.6f (unweighted merged level: %.6f)",
                  tot, N, N_old);
    /* b's one-way: the weighted projection onto sum = N */
    double sy = 0, winv = (double)(bc - 1) + (double)nrare, got[16];
    for (size_t j = 0; j < bc; j++) sy += y[bo + j];
    ck_assert_int_eq(pg_pgm_marginal(model, &B, 1, got, NULL), PG_OK);
    for (size_t j = 0; j < bc; j++) {
        double inv = j + 1 == bc ? (double)nrare : 1.0;
        double want = y[bo + j] + (N - sy) * inv / winv;
        ck_assert_msg(want > 1, "cell %zu would be clipped (%.2f): the closed form needs > 0", j,
                      want);
        /* Step 0's fit is a warm-up of at most 250 mirror-descent
         * iterations, not run to convergence: over 500 runs its cells sat
         * up to 0.17 counts from the closed form, so 0.05 failed about
         * one run in six. 1 count keeps a wide margin and still tells the
         * weightings apart: the total above is exact, and the unweighted
         * projection moves a common cell by about a quarter (1/3 against
         * 1/10) of the discrepancy N - sum y, whose sd is about 40. */
        ck_assert_msg(fabs(got[j] - want) < 1.0, "b cell %zu: %.4f, want %.4f", j, got[j], want);
    }
    pg_pgm_model_free(model);
    json_decref(h);
    pg_ckpt_free(&c);
    free(bytes);
    M->destroy(tr);
    json_decref(r);
    pg_dataset_free(&ds);
    pg_table_free(t);
}
END_TEST

/* aim.model_cells: the dry run states the bound (auto: max(131072, 32 rows),
 * never above model.max_cells), and a run keeps its model under it (the
 * paper's rule: s x bound after spending a share s of the budget, so under
 * the bound at the end). At epsilon 20 on this table the model would grow
 * past 400 cells (every label triple fits the default bound). */
START_TEST(aim_model_stays_under_its_bound)
{
    pg_table *t = table();
    pg_dataset ds;
    rows(t, &ds);
    pg_data_desc desc = desc_of(t);
    pg_job_data in = {.desc = &desc, .rows = &ds};
    const pg_method *M = pg_method_find("aim");
    pg_spec_errors e;
    struct {
        const char *spec;
        double cells;
    } cases[] = {{"{\"privacy\":{\"epsilon\":20}}", 131072},
                 {"{\"privacy\":{\"epsilon\":20},\"model\":{\"max_cells\":100000}}", 100000},
                 {"{\"privacy\":{\"epsilon\":20},\"aim\":{\"model_cells\":400}}", 400}};
    for (size_t c = 0; c < 3; c++) {
        json_t *r = pg_test_resolve(M, cases[c].spec, &in, &e);
        ck_assert_msg(r, "%s: %s", e.items[0].field, e.items[0].message);
        double mc =
            json_number_value(json_object_get(json_object_get(r, "accounting"), "model_cells"));
        ck_assert_msg(mc == cases[c].cells, "case %zu: model_cells %g, want %g", c, mc,
                      cases[c].cells);
        if (c < 2) {
            json_decref(r);
            continue;
        }
        pg_trainer *tr;
        pg_error err = {0};
        ck_assert_msg(M->create(r, &in, 1, &tr, &err) == PG_OK, "%s", err.msg);
        pg_step_report rep = {0};
        while (!rep.done) ck_assert_msg(M->step(tr, &rep, &err) == PG_OK, "%s", err.msg);
        unsigned char *bytes;
        size_t len;
        ck_assert_int_eq(M->save(tr, &bytes, &len, NULL), PG_OK);
        pg_ckpt ck = {0};
        ck_assert_int_eq(pg_ckpt_decode(bytes, len, &ck, NULL), PG_OK);
        json_t *h = json_loads(ck.header, 0, NULL);
        pg_pgm_model *model = NULL;
        ck_assert_int_eq(pg_pgm_load((const unsigned char *)pg_ckpt_find(&ck, "model")->data,
                                     (size_t)json_integer_value(json_object_get(h, "model_len")),
                                     &model, NULL),
                         PG_OK);
        ck_assert_msg(pg_pgm_model_cells(model) <= 400, "model of %g cells above the bound 400",
                      pg_pgm_model_cells(model));
        pg_pgm_model_free(model);
        json_decref(h);
        pg_ckpt_free(&ck);
        free(bytes);
        M->destroy(tr);
        json_decref(r);
    }
    pg_dataset_free(&ds);
    pg_table_free(t);
}
END_TEST

START_TEST(mst_learns_the_tree_and_serves_valid_rows)
{
    run("mst", "{\"privacy\":{\"epsilon\":20},\"seed\":3}", 0.8);
}
END_TEST

START_TEST(aim_learns_the_workload_and_serves_valid_rows)
{
    run("aim", "{\"privacy\":{\"epsilon\":20},\"seed\":3,\"aim\":{\"rounds\":20}}", 0.8);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("mst");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, plans_charge_the_zcdp_curve_within_epsilon);
    tcase_add_test(tc, bad_jobs_get_field_errors);
    tcase_add_test(tc, mst_learns_the_tree_and_serves_valid_rows);
    tcase_add_test(tc, mst_single_rare_level_keeps_the_levels);
    tcase_add_test(tc, mst_weighs_merged_levels_by_their_noise);
    tcase_add_test(tc, aim_learns_the_workload_and_serves_valid_rows);
    tcase_add_test(tc, aim_model_stays_under_its_bound);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
