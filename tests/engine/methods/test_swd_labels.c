/* Class conditioning of the sliced-Wasserstein methods (labels.class_alpha):
 * flow particles have clamped label coordinates (balanced fixed classes, the
 * flow moves only the feature block), sample(label = k) returns class-k
 * particles (brute force against the checkpoint's particles), label-k
 * samples land on blob k (also past the trained particles, through replay),
 * the privacy code uses the augmented dimension d + C (the noise actually
 * released and the Chernoff bound), checkpoints keep the classes and refuse
 * a mismatched conditioning or broken label coordinates, and validation
 * names the field. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/checkpoint/checkpoint.h"
#include "engine/core/alloc.h"
#include "engine/data/dataset.h"
#include "engine/methods/method.h"
#include "engine/methods/snapshot.h"
#include "engine/methods/spec.h"
#include "engine/methods/swd.h"
#include "engine/methods/swd_spec.h"
#include "engine/methods/trainer.h"
#include "engine/ot/sliced.h"
#include "engine/privacy/privacy.h"
#include "support/pg_method_test.h"
#include "support/pg_test.h"

#define BLOB_X 2.0f

/* Two classes in 2-D: class 0 around (-2, 0), class 1 around (2, 0), std
 * 0.3; a fraction frac0 of the rows is class 0. */
static void make_blobs(size_t n, double frac0, pg_dataset *ds, pg_data_desc *desc)
{
    float *x = pg_alloc_f32(n * 2);
    int32_t *lab = pg_alloc(n * sizeof(int32_t));
    pg_rng r;
    pg_rng_seeded(&r, 41, 0);
    for (size_t i = 0; i < n; i++) {
        lab[i] = pg_rng_uniform(&r) < frac0 ? 0 : 1;
        x[2 * i] = (lab[i] ? BLOB_X : -BLOB_X) + 0.3f * (float)pg_rng_normal(&r);
        x[2 * i + 1] = 0.3f * (float)pg_rng_normal(&r);
    }
    pg_test_central_2d(x, lab, n, 2, 10, ds, desc);
}

static json_t *resolve(const pg_method *m, const char *text, const pg_data_desc *desc,
                       pg_spec_errors *e)
{
    return pg_test_resolve(m, text, &(pg_job_data){.desc = desc}, e);
}

static pg_trainer *train(const pg_method *m, json_t *r, const pg_data_desc *desc,
                         const pg_dataset *ds, pg_step_report *last)
{
    pg_trainer *t;
    pg_error err = {0};
    ck_assert_msg(m->create(r, &(pg_job_data){.desc = desc, .rows = ds}, 1, &t, &err) == PG_OK,
                  "%s", err.msg);
    memset(last, 0, sizeof *last);
    while (!last->done) ck_assert_msg(m->step(t, last, &err) == PG_OK, "%s", err.msg);
    return t;
}

/* Fraction of n 2-D rows within distance 1 of blob k's centre (blob std
 * 0.3: a true class-k row is farther with probability 0.004), checking that
 * every row is finite. */
static double near_blob(const float *x, size_t n, int k)
{
    size_t hit = 0;
    float cx = k ? BLOB_X : -BLOB_X;
    for (size_t i = 0; i < n; i++) {
        ck_assert(isfinite(x[2 * i]) && isfinite(x[2 * i + 1]));
        float dx = x[2 * i] - cx, dy = x[2 * i + 1];
        if (dx * dx + dy * dy < 1.0f) hit++;
    }
    return (double)hit / (double)n;
}

/* Samples n rows of label k (or -1) and returns the fraction near blob k
 * (k >= 0) or near blob 0 (k == -1). */
static double sample_side(const pg_snapshot *s, size_t n, uint64_t seed, int k, float *keep)
{
    float *x = pg_alloc_f32(n * 2);
    pg_error err = {0};
    ck_assert_msg(pg_snapshot_sample(s, n, seed, k, x, &err) == PG_OK, "%s", err.msg);
    double f = near_blob(x, n, k < 0 ? 0 : k);
    if (keep) memcpy(keep, x, n * 2 * sizeof(float));
    pg_free(x);
    return f;
}

/* A fixed pool needs more directions than the 4-D joint has (a pool of 8
 * reused every step stalls far from the blobs); fresh directions do not.
 * Clamped labels couple to the features only through the label part of the
 * directions, so alpha is large next to the blobs' spread (at the default
 * R / 2 the classes sort out about three times slower). */
static const char *const FLOW_SPECS[2] = {
    "{\"privacy\": {\"noise_multiplier\": 0.01, \"clip_norm\": 3}, \"labels\":"
    " {\"class_alpha\": 2.5}, \"projections\": {\"per_step\": 16, \"pool\": 200}, \"flow\":"
    " {\"steps\": 250, \"particles\": 400, \"quantile_levels\": 200}, \"seed\": 3}",
    "{\"privacy\": {\"noise_multiplier\": 0.01, \"clip_norm\": 3}, \"labels\":"
    " {\"class_alpha\": 2.5}, \"projections\": {\"per_step\": 8}, \"flow\": {\"steps\": 100,"
    " \"particles\": 400, \"quantile_levels\": 200}, \"seed\": 3}",
};

/* The clamp itself: 3 classes over 10 particles start balanced (4/3/3) at
 * alpha onehot(c) exactly; 30 diffusing flow steps and a replay move every
 * feature coordinate and leave every label coordinate bit for bit. */
START_TEST(flow_clamps_label_coordinates)
{
    enum { N = 10, F = 2, C = 3, DD = F + C, K = 5, L = 20, M = 60 };
    pg_swd_flow_cfg cfg = {.d = DD,
                           .particles = N,
                           .per_step = K,
                           .levels = L,
                           .h = 0.5,
                           .lambda = 0.05,
                           .classes = C,
                           .alpha = 0.75};
    pg_rng r;
    pg_rng_seeded(&r, 5, 0);
    float x[N * DD], x0[N * DD], y[M * DD], theta[DD * K], q[K * L];
    pg_swd_init_particles(&cfg, &r, x, N, 1.0);
    size_t count[C] = {0};
    for (size_t i = 0; i < N; i++) {
        int c = pg_swd_particle_label(&cfg, x + i * DD);
        ck_assert(c >= 0 && c < C);
        count[c]++;
        for (size_t j = 0; j < C; j++) ck_assert(x[i * DD + F + j] == ((int)j == c ? 0.75f : 0.0f));
    }
    for (size_t c = 0; c < C; c++) ck_assert(count[c] == 3 || count[c] == 4);
    ck_assert(pg_swd_labels_valid(&cfg, x, N));
    memcpy(x0, x, sizeof x);
    for (size_t i = 0; i < M; i++) { /* labelled rows around (3, 3) */
        for (size_t a = 0; a < F; a++) y[i * DD + a] = 3.0f + (float)pg_rng_normal(&r);
        for (size_t j = 0; j < C; j++) y[i * DD + F + j] = j == i % C ? 0.75f : 0.0f;
    }
    pg_swd_ws ws;
    ck_assert_int_eq(pg_swd_ws_init(&ws, N, DD, K, M, L, 0, NULL), PG_OK);
    pg_mat tm = pg_mat_view(theta, DD, K);
    for (int step = 0; step < 30; step++) {
        ck_assert_int_eq(pg_sw_directions(&r, true, &tm, NULL), PG_OK);
        ck_assert_int_eq(pg_swd_release(&ws, NULL, y, M, theta, K, 0.0, q, L, NULL), PG_OK);
        ck_assert_int_eq(pg_swd_flow_step(&ws, &cfg, x, N, theta, K, q, &r, NULL, NULL), PG_OK);
    }
    pg_swd_store *st;
    ck_assert_int_eq(pg_swd_store_new(DD, K, L, 1, &st, NULL), PG_OK);
    memcpy(st->theta, theta, sizeof theta);
    memcpy(st->q, q, sizeof q);
    ck_assert_int_eq(pg_swd_replay(&ws, &cfg, st, 1, x, N, &r, NULL), PG_OK);
    for (size_t i = 0; i < N; i++) {
        for (size_t a = 0; a < F; a++) ck_assert(x[i * DD + a] != x0[i * DD + a]);
        ck_assert(memcmp(x + i * DD + F, x0 + i * DD + F, C * sizeof(float)) == 0);
    }
    /* The checkpoint check: a moved or doubled label coordinate is caught. */
    x[3 * DD + F] += 0.25f;
    ck_assert(!pg_swd_labels_valid(&cfg, x, N));
    memcpy(x, x0, sizeof x);
    x[3 * DD + F] = x[3 * DD + F + 1] = x[3 * DD + F + 2] = 0.75f;
    ck_assert(!pg_swd_labels_valid(&cfg, x, N));
    pg_swd_store_release(st);
    pg_swd_ws_free(&ws);
}
END_TEST

/* Is each of n 2-D rows exactly the feature part of a class-k particle of
 * the checkpoint (particles x 4 tensor, label coordinates last)? */
static bool rows_are_class_particles(const float *rows, size_t n, const unsigned char *bytes,
                                     size_t len, int k)
{
    pg_ckpt ck;
    ck_assert_int_eq(pg_ckpt_decode(bytes, len, &ck, NULL), PG_OK);
    const pg_ckpt_tensor *tp = pg_ckpt_find(&ck, "particles");
    ck_assert(tp && tp->ndim == 2 && tp->dims[1] == 4);
    bool all = true;
    for (size_t i = 0; i < n && all; i++) {
        bool found = false;
        for (size_t p = 0; p < tp->dims[0] && !found; p++) {
            const float *row = tp->data + p * 4;
            found = memcmp(row, rows + 2 * i, 2 * sizeof(float)) == 0 && row[2 + k] > 0.0f;
        }
        all = found;
    }
    pg_ckpt_free(&ck);
    return all;
}

/* Near-zero noise (the methods refuse sigma = 0) on balanced blobs: label-k
 * samples are trained class-k particles (brute force against the
 * checkpoint) and sit on blob k, from the trained particles and from
 * replayed ones alike; the unlabelled mix is balanced. */
START_TEST(flow_labels_follow_classes)
{
    pg_dataset ds;
    pg_data_desc desc;
    make_blobs(1500, 0.5, &ds, &desc);
    for (int resample = 0; resample < 2; resample++) {
        const pg_method *m = pg_method_find(resample ? "swd_flow_r" : "swd_flow");
        pg_spec_errors e;
        json_t *r = resolve(m, FLOW_SPECS[resample], &desc, &e);
        ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
        ck_assert_double_eq(pg_spec_num(r, "labels.class_alpha", 0), 2.5);
        pg_step_report rep;
        pg_trainer *t = train(m, r, &desc, &ds, &rep);
        pg_snapshot *s;
        ck_assert_int_eq(m->snapshot(t, &s, NULL), PG_OK);
        ck_assert_uint_eq(pg_snapshot_dim(s), 2);
        ck_assert_int_eq(pg_snapshot_num_classes(s), 2);
        long rel = pg_swd_trainer_releases(t);
        unsigned char *bytes;
        size_t len;
        ck_assert_int_eq(m->save(t, &bytes, &len, NULL), PG_OK);
        float keep[200 * 2];
        for (int k = 0; k < 2; k++) {
            /* 200 = the class's trained particles: all of them, no replay. */
            double f = sample_side(s, 200, 20 + (uint64_t)k, k, keep);
            ck_assert_msg(f > 0.9, "%s label %d: %.3f near its blob", m->name, k, f);
            ck_assert(rows_are_class_particles(keep, 200, bytes, len, k));
            ck_assert(!rows_are_class_particles(keep, 200, bytes, len, 1 - k));
            /* 400 exceeds them: the last 200 come from a replayed chunk. */
            f = sample_side(s, 400, 10 + (uint64_t)k, k, NULL);
            ck_assert_msg(f > 0.9, "%s label %d (replay): %.3f near its blob", m->name, k, f);
        }
        free(bytes);
        double f0 = sample_side(s, 400, 5, -1, NULL);
        ck_assert_msg(fabs(f0 - 0.5) < 0.08, "%s class-0 share %.3f", m->name, f0);
        ck_assert_int_eq(pg_swd_trainer_releases(t), rel); /* sampling releases nothing */
        /* Labels outside [0, C) are refused. */
        float tmp[2];
        ck_assert_int_eq(pg_snapshot_sample(s, 1, 1, 2, tmp, NULL), PG_EINVAL);
        pg_snapshot_release(s);
        m->destroy(t);
        json_decref(r);
    }
    pg_dataset_free(&ds);
}
END_TEST

/* The released noise has std S * 2R sqrt(w) with w from the AUGMENTED
 * dimension: one repeated labelled row, an orthonormal pool of 4 directions
 * in d + C = 4 dimensions gives w = 1 (the unaugmented d = 2 would give
 * w = 2, a std larger by sqrt 2). Each table's mean is the projection of the
 * clipped augmented row. */
START_TEST(flow_release_uses_augmented_dimension)
{
    size_t n = 4000;
    float *x = pg_alloc_f32(n * 2);
    int32_t *lab = pg_alloc(n * sizeof(int32_t));
    for (size_t i = 0; i < n; i++) {
        x[2 * i] = 3.0f;
        x[2 * i + 1] = 4.0f;
        lab[i] = 1;
    }
    pg_dataset ds;
    size_t shape[1] = {2};
    ck_assert_int_eq(pg_dataset_adopt(&ds, x, lab, n, shape, 1, 2, -10.0f, 10.0f, NULL), PG_OK);
    pg_data_desc desc = {.n = n,
                         .d = 2,
                         .ndim = 1,
                         .shape = {2},
                         .lo = -10,
                         .hi = 10,
                         .num_classes = 2,
                         .model = PG_PRIVACY_CENTRAL,
                         .cap_delta = 1e-5};
    const pg_method *m = pg_method_find("swd_flow");
    pg_spec_errors e;
    json_t *r = resolve(m,
                        "{\"privacy\": {\"noise_multiplier\": 0.1}, \"labels\": {\"class_alpha\":"
                        " 0.8}, \"projections\": {\"per_step\": 2, \"pool\": 4}, \"flow\":"
                        " {\"steps\": 1, \"particles\": 10, \"quantile_levels\": 400}}",
                        &desc, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    pg_step_report rep;
    pg_trainer *t = train(m, r, &desc, &ds, &rep);
    unsigned char *bytes;
    size_t len;
    ck_assert_int_eq(m->save(t, &bytes, &len, NULL), PG_OK);
    pg_ckpt ck;
    ck_assert_int_eq(pg_ckpt_decode(bytes, len, &ck, NULL), PG_OK);
    const pg_ckpt_tensor *tq = pg_ckpt_find(&ck, "quantiles");
    const pg_ckpt_tensor *tt = pg_ckpt_find(&ck, "theta");
    ck_assert(tq && tt && tt->dims[1] == 4 && tq->dims[1] == 4 && tq->dims[2] == 400);
    /* [3, 4, 0, 0.8] has norm sqrt(25.64); clipped to R = 1. */
    double norm = sqrt(25.64), row[4] = {3 / norm, 4 / norm, 0, 0.8 / norm};
    double want = 0.1 * 2.0 * 1.0 * 1.0;
    for (size_t j = 0; j < 4; j++) {
        const float *qj = tq->data + j * 400;
        double mean = 0, var = 0, centre = 0;
        for (size_t l = 0; l < 400; l++) mean += qj[l] / 400.0;
        for (size_t l = 0; l < 400; l++) var += (qj[l] - mean) * (qj[l] - mean) / 400.0;
        for (size_t a = 0; a < 4; a++) centre += row[a] * tt->data[a * 4 + j];
        ck_assert_msg(fabs(sqrt(var) - want) < 0.08 * want, "std %.4f want %.4f", sqrt(var), want);
        /* 0.1 want: 6.3 standard errors of the mean of 4000 noisy
         * projections (see test_swd_flow's released_noise; 0.08 was 5.06) */
        ck_assert_double_eq_tol(mean, centre, 0.1 * want);
    }
    pg_ckpt_free(&ck);
    free(bytes);
    m->destroy(t);
    json_decref(r);
    /* Random directions: the Chernoff bound is evaluated at d + C. */
    r = resolve(pg_method_find("swd_flow_r"),
                "{\"privacy\": {\"noise_multiplier\": 0.7, \"delta0\": 1e-8}, \"projections\":"
                " {\"kind\": \"random\", \"per_step\": 30}, \"flow\": {\"steps\": 20}}",
                &desc, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    pg_swd_privacy p;
    double S;
    ck_assert_int_eq(pg_swd_spec_privacy_get(r, &desc, 30, 20, 1.0, &p, &S, NULL), PG_OK);
    double w;
    int approx;
    ck_assert_int_eq(pg_swd_sensitivity(PG_SWD_CHERNOFF, 4, 30, 1e-8, &w, &approx, NULL), PG_OK);
    ck_assert_uint_eq(p.d, 4);
    ck_assert_double_eq(p.w, w);
    ck_assert_double_eq_tol(p.sensitivity, 2.0 * 1.0 * sqrt(w), 1e-12);
    pg_privacy_plan plan;
    ck_assert_int_eq(
        pg_method_find("swd_flow_r")->plan(r, &(pg_job_data){.desc = &desc}, &plan, NULL), PG_OK);
    double eps;
    ck_assert_int_eq(
        pg_rdp_epsilon(1.0, 0.7, 20, 1e-5 - 20e-8, PG_RDP_CONV_IMPROVED, &eps, NULL, NULL), PG_OK);
    ck_assert_double_eq_tol(plan.epsilon, eps, 1e-9 * eps);
    json_decref(r);
    pg_dataset_free(&ds);
}
END_TEST

/* Save mid-run and restore: bit-identical state, the same labelled samples
 * from a snapshot rebuilt out of the bytes; a checkpoint of an unlabelled
 * run (the format written before labels existed) is refused by a labelled
 * spec with a clear error, and a header claiming too many label
 * coordinates is refused. */
START_TEST(flow_label_checkpoints)
{
    pg_dataset ds;
    pg_data_desc desc;
    make_blobs(600, 0.5, &ds, &desc);
    const pg_method *m = pg_method_find("swd_flow_r");
    pg_spec_errors e;
    const char *spec = "{\"privacy\": {\"epsilon\": 5, \"clip_norm\": 3}, \"projections\":"
                       " {\"per_step\": 6}, \"flow\": {\"steps\": 12, \"particles\": 64,"
                       " \"quantile_levels\": 50}}";
    json_t *r = resolve(m, spec, &desc, &e);
    ck_assert_ptr_nonnull(r);
    pg_trainer *t, *t2;
    ck_assert_int_eq(m->create(r, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, &t, NULL), PG_OK);
    pg_step_report rep;
    for (int i = 0; i < 5; i++) ck_assert_int_eq(m->step(t, &rep, NULL), PG_OK);
    unsigned char *b1;
    size_t l1;
    ck_assert_int_eq(m->save(t, &b1, &l1, NULL), PG_OK);
    pg_test_checkpoint_round_trip(m, r, &(pg_job_data){.desc = &desc, .rows = &ds}, b1, l1, 100, 2,
                                  1);
    pg_error err = {0};
    pg_snapshot *s2;
    ck_assert_int_eq(m->load_snapshot(b1, l1, &s2, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_num_classes(s2), 2);
    pg_snapshot_release(s2);
    /* A header that claims more label coordinates than the rows have. */
    pg_ckpt ck;
    ck_assert_int_eq(pg_ckpt_decode(b1, l1, &ck, NULL), PG_OK);
    char *at = strstr(ck.header, "\"classes\":2");
    ck_assert_ptr_nonnull(at);
    at[10] = '4';
    unsigned char *bad;
    size_t lb;
    ck_assert_int_eq(pg_ckpt_encode(ck.header, ck.tensors, ck.n, &bad, &lb, NULL), PG_OK);
    ck_assert_int_eq(m->load_snapshot(bad, lb, &s2, NULL), PG_EFORMAT);
    ck_assert_int_eq(
        m->restore(r, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, bad, lb, &t2, NULL),
        PG_EFORMAT);
    free(bad);
    /* Particles whose label coordinates are not alpha onehot(class). */
    at[10] = '2';
    const pg_ckpt_tensor *tp = pg_ckpt_find(&ck, "particles");
    ck_assert(tp && tp->dims[0] == 64 && tp->dims[1] == 4);
    float *moved = (float *)(uintptr_t)tp->data; /* owned by ck, decoded copy */
    moved[5 * 4 + 3] += 0.5f;
    ck_assert_int_eq(pg_ckpt_encode(ck.header, ck.tensors, ck.n, &bad, &lb, NULL), PG_OK);
    ck_assert_int_eq(m->load_snapshot(bad, lb, &s2, &err), PG_EFORMAT);
    ck_assert_ptr_nonnull(strstr(err.msg, "label coordinates"));
    ck_assert_int_eq(
        m->restore(r, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, bad, lb, &t2, NULL),
        PG_EFORMAT);
    free(bad);
    pg_ckpt_free(&ck);
    free(b1);
    m->destroy(t);
    /* An unlabelled run on the same data (class_alpha 0): its checkpoint
     * has no label fields, restores under its own spec and is refused by
     * the labelled one. */
    json_t *r0 = resolve(m,
                         "{\"privacy\": {\"epsilon\": 5, \"clip_norm\": 3}, \"labels\":"
                         " {\"class_alpha\": 0}, \"projections\": {\"per_step\": 6}, \"flow\":"
                         " {\"steps\": 12, \"particles\": 64, \"quantile_levels\": 50}}",
                         &desc, &e);
    ck_assert_ptr_nonnull(r0);
    ck_assert_int_eq(m->create(r0, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, &t, NULL), PG_OK);
    ck_assert_int_eq(m->step(t, &rep, NULL), PG_OK);
    ck_assert_int_eq(m->save(t, &b1, &l1, NULL), PG_OK);
    ck_assert_int_eq(pg_ckpt_decode(b1, l1, &ck, NULL), PG_OK);
    ck_assert_ptr_null(strstr(ck.header, "classes"));
    pg_ckpt_free(&ck);
    ck_assert_int_eq(
        m->restore(r0, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, b1, l1, &t2, NULL), PG_OK);
    m->destroy(t2);
    ck_assert_int_eq(
        m->restore(r, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, b1, l1, &t2, &err),
        PG_EFORMAT);
    ck_assert_ptr_nonnull(strstr(err.msg, "different spec"));
    ck_assert_int_eq(m->load_snapshot(b1, l1, &s2, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_num_classes(s2), 0);
    pg_snapshot_release(s2);
    free(b1);
    m->destroy(t);
    json_decref(r0);
    json_decref(r);
    pg_dataset_free(&ds);
}
END_TEST

/* A class with 0.5 % of the rows still has half of the particles (the
 * balanced-classes assumption): asking for as many of its samples as there
 * are particles is served by a bounded replay (no refusal), and the common
 * class still sits on its blob. */
START_TEST(rare_label_is_served)
{
    pg_dataset ds;
    pg_data_desc desc;
    make_blobs(800, 0.995, &ds, &desc);
    const pg_method *m = pg_method_find("swd_flow_r");
    pg_spec_errors e;
    json_t *r = resolve(m,
                        "{\"privacy\": {\"noise_multiplier\": 0.01, \"clip_norm\": 3},"
                        " \"projections\": {\"per_step\": 8}, \"flow\": {\"steps\": 40,"
                        " \"particles\": 200, \"quantile_levels\": 100}, \"seed\": 3}",
                        &desc, &e);
    ck_assert_ptr_nonnull(r);
    pg_step_report rep;
    pg_trainer *t = train(m, r, &desc, &ds, &rep);
    pg_snapshot *s;
    ck_assert_int_eq(m->snapshot(t, &s, NULL), PG_OK);
    float *x = pg_alloc_f32(200 * 2);
    pg_error err = {0};
    ck_assert_msg(pg_snapshot_sample(s, 200, 1, 1, x, &err) == PG_OK, "%s", err.msg);
    for (size_t i = 0; i < 2 * 200; i++) ck_assert(isfinite(x[i]));
    ck_assert_int_eq(pg_snapshot_sample(s, 100, 1, 0, x, NULL), PG_OK);
    ck_assert(near_blob(x, 100, 0) > 0.95);
    pg_free(x);
    pg_snapshot_release(s);
    m->destroy(t);
    json_decref(r);
    pg_dataset_free(&ds);
}
END_TEST

/* Fraction of n 2-D rows on class k's side of x = 0. */
static double on_side(const float *x, size_t n, int k)
{
    size_t hit = 0;
    for (size_t i = 0; i < n; i++)
        if ((k == 0 && x[2 * i] < 0) || (k == 1 && x[2 * i] > 0)) hit++;
    return (double)hit / (double)n;
}

static const char *GEN_SPEC =
    "{\"privacy\": {\"noise_multiplier\": 0.005, \"clip_norm\": 3}, \"model\": {\"hidden\":"
    " [64, 64], \"latent_dim\": 4, \"latent\": \"normal\"}, \"projections\": {\"per_step\":"
    " 20}, \"train\": {\"steps\": 400, \"batch_size\": 1000, \"gen_batch\": 256, \"lr\":"
    " 0.003}, \"seed\": 2}";

/* swd_gen on balanced blobs at near-zero noise: the conditional generator
 * puts label-k samples on blob k (ignoring the label would put half of them
 * on the other side); one release per step at the augmented dimension. */
START_TEST(gen_labels_follow_classes)
{
    pg_dataset ds;
    pg_data_desc desc;
    make_blobs(1500, 0.5, &ds, &desc);
    const pg_method *m = pg_method_find("swd_gen");
    pg_spec_errors e;
    json_t *r = resolve(m, GEN_SPEC, &desc, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    ck_assert(json_is_true(pg_spec_get(r, "model.conditional")));
    pg_privacy_plan plan;
    ck_assert_int_eq(m->plan(r, &(pg_job_data){.desc = &desc}, &plan, NULL), PG_OK);
    pg_swd_privacy p;
    double S;
    ck_assert_int_eq(pg_swd_spec_privacy_get(r, &desc, 20, 400, 1000.0 / 1500.0, &p, &S, NULL),
                     PG_OK);
    ck_assert_uint_eq(p.d, 4);
    ck_assert_double_eq(p.w, 5.0); /* ceil(20 / 4) orthonormal blocks */
    pg_step_report rep;
    pg_trainer *t = train(m, r, &desc, &ds, &rep);
    ck_assert_int_eq(pg_swd_trainer_releases(t), 400);
    ck_assert_double_eq_tol(rep.epsilon_spent, plan.epsilon, 1e-9 * plan.epsilon);
    pg_snapshot *s;
    ck_assert_int_eq(m->snapshot(t, &s, NULL), PG_OK);
    ck_assert_uint_eq(pg_snapshot_dim(s), 2);
    ck_assert_int_eq(pg_snapshot_num_classes(s), 2);
    float *x = pg_alloc_f32(1000 * 2);
    for (int k = 0; k < 2; k++) {
        ck_assert_int_eq(pg_snapshot_sample(s, 1000, 7, k, x, NULL), PG_OK);
        double side = on_side(x, 1000, k), near = near_blob(x, 1000, k);
        ck_assert_msg(side > 0.9 && near > 0.75, "label %d: %.3f on its side, %.3f near", k, side,
                      near);
    }
    pg_free(x);
    pg_snapshot_release(s);
    m->destroy(t);
    json_decref(r);
    pg_dataset_free(&ds);
}
END_TEST

/* swd_gen checkpoints carry the conditioning: a labelled run resumes bit
 * for bit and serves labels from the bytes alone; an unconditional run's
 * checkpoint (the format written before labels existed) is refused by a
 * labelled spec, and a labelled one by an unconditional spec. */
START_TEST(gen_label_checkpoints)
{
    pg_dataset ds;
    pg_data_desc desc;
    make_blobs(300, 0.5, &ds, &desc);
    const pg_method *m = pg_method_find("swd_gen");
    pg_spec_errors e;
    json_t *rl = resolve(m,
                         "{\"privacy\": {\"epsilon\": 3, \"clip_norm\": 3}, \"model\":"
                         " {\"hidden\": [16]}, \"projections\": {\"per_step\": 8}, \"train\":"
                         " {\"steps\": 10, \"gen_batch\": 32}}",
                         &desc, &e);
    json_t *r0 = resolve(m,
                         "{\"privacy\": {\"epsilon\": 3, \"clip_norm\": 3}, \"labels\":"
                         " {\"class_alpha\": 0}, \"model\": {\"hidden\": [16]}, \"projections\":"
                         " {\"per_step\": 8}, \"train\": {\"steps\": 10, \"gen_batch\": 32}}",
                         &desc, &e);
    ck_assert(rl && r0);
    ck_assert(!json_is_true(pg_spec_get(r0, "model.conditional")));
    pg_trainer *tl, *t0, *t2;
    pg_step_report rep;
    ck_assert_int_eq(m->create(rl, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, &tl, NULL),
                     PG_OK);
    ck_assert_int_eq(m->create(r0, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, &t0, NULL),
                     PG_OK);
    for (int i = 0; i < 3; i++) {
        ck_assert_int_eq(m->step(tl, &rep, NULL), PG_OK);
        ck_assert_int_eq(m->step(t0, &rep, NULL), PG_OK);
    }
    unsigned char *bl, *b0;
    size_t ll, l0;
    ck_assert_int_eq(m->save(tl, &bl, &ll, NULL), PG_OK);
    ck_assert_int_eq(m->save(t0, &b0, &l0, NULL), PG_OK);
    pg_test_checkpoint_round_trip(m, rl, &(pg_job_data){.desc = &desc, .rows = &ds}, bl, ll, 50, 2,
                                  1);
    pg_error err = {0};
    pg_snapshot *s2;
    ck_assert_int_eq(m->load_snapshot(bl, ll, &s2, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_num_classes(s2), 2);
    pg_snapshot_release(s2);
    ck_assert_int_eq(
        m->restore(r0, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, b0, l0, &t2, NULL), PG_OK);
    m->destroy(t2);
    t2 = NULL;
    ck_assert_int_eq(
        m->restore(rl, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, b0, l0, &t2, &err),
        PG_EFORMAT);
    ck_assert_ptr_nonnull(strstr(err.msg, "class conditioning"));
    ck_assert_int_ne(
        m->restore(r0, &(pg_job_data){.desc = &desc, .rows = &ds}, 1, bl, ll, &t2, NULL), PG_OK);
    ck_assert_ptr_null(t2);
    free(bl);
    free(b0);
    m->destroy(tl);
    m->destroy(t0);
    json_decref(rl);
    json_decref(r0);
    pg_dataset_free(&ds);
}
END_TEST

START_TEST(label_validation)
{
    pg_dataset ds;
    pg_data_desc desc;
    make_blobs(100, 0.5, &ds, &desc);
    const char *names[3] = {"swd_flow", "swd_flow_r", "swd_gen"};
    for (int i = 0; i < 3; i++) {
        const pg_method *m = pg_method_find(names[i]);
        pg_spec_errors e;
        json_t *r;
        /* alpha above R: the clip would cut the label part itself. */
        ck_assert_ptr_null(r = resolve(m,
                                       "{\"privacy\": {\"epsilon\": 1, \"clip_norm\": 2},"
                                       " \"labels\": {\"class_alpha\": 2.5}}",
                                       &desc, &e));
        ck_assert(pg_test_has_error(&e, "labels.class_alpha"));
        /* Labels asked of an unlabelled dataset. */
        pg_data_desc plain = desc;
        plain.num_classes = 0;
        ck_assert_ptr_null(
            r = resolve(m, "{\"privacy\": {\"epsilon\": 1}, \"labels\": {\"class_alpha\": 0.5}}",
                        &plain, &e));
        ck_assert(pg_test_has_error(&e, "labels.class_alpha"));
        /* Unlabelled data resolves without the field; labelled data gets
         * alpha = R / 2 written, and the resolved spec re-validates to
         * itself. */
        r = resolve(m, "{\"privacy\": {\"epsilon\": 1}}", &plain, &e);
        ck_assert_ptr_nonnull(r);
        ck_assert_ptr_null(pg_spec_get(r, "labels.class_alpha"));
        json_decref(r);
        r = resolve(m, "{\"privacy\": {\"epsilon\": 1, \"clip_norm\": 4}}", &desc, &e);
        ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
        ck_assert_double_eq(pg_spec_num(r, "labels.class_alpha", 0), 2.0);
        if (i < 2) { /* flows: every class needs a particle */
            pg_data_desc three = desc;
            three.num_classes = 3;
            json_t *bad = resolve(
                m, "{\"privacy\": {\"epsilon\": 1}, \"flow\": {\"particles\": 2}}", &three, &e);
            ck_assert_ptr_null(bad);
            ck_assert(pg_test_has_error(&e, "flow.particles"));
            json_t *ok = resolve(m, "{\"privacy\": {\"epsilon\": 1}, \"flow\": {\"particles\": 3}}",
                                 &three, &e);
            ck_assert_ptr_nonnull(ok);
            json_decref(ok);
        }
        if (i == 2) { /* swd_gen: labels need the conditional generator */
            json_t *bad = resolve(m,
                                  "{\"privacy\": {\"epsilon\": 1}, \"model\": {\"conditional\":"
                                  " false}}",
                                  &desc, &e);
            ck_assert_ptr_null(bad);
            ck_assert(pg_test_has_error(&e, "model.conditional"));
        }
        char *text = json_dumps(r, 0);
        json_t *r2 = resolve(m, text, &desc, &e);
        free(text);
        ck_assert_ptr_nonnull(r2);
        ck_assert(json_equal(r, r2));
        json_decref(r2);
        json_decref(r);
    }
    pg_dataset_free(&ds);
}
END_TEST

static Suite *labels_suite(void)
{
    Suite *s = suite_create("methods/swd_labels");
    TCase *tc = tcase_create("swd_labels");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, flow_clamps_label_coordinates);
    tcase_add_test(tc, flow_labels_follow_classes);
    tcase_add_test(tc, flow_release_uses_augmented_dimension);
    tcase_add_test(tc, flow_label_checkpoints);
    tcase_add_test(tc, rare_label_is_served);
    tcase_add_test(tc, gen_labels_follow_classes);
    tcase_add_test(tc, gen_label_checkpoints);
    tcase_add_test(tc, label_validation);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(labels_suite)
