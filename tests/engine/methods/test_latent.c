/* Tests of the public-data autoencoder (engine/methods/latent.h) and the
 * latent mode of swd_flow / swd_flow_r: reconstruction of a simple image set
 * against the mean-image baseline, unit-norm codes, checkpoint round trip
 * and hostile checkpoint parts, a latent flow whose decoded samples are
 * closer (SW2) to the private images than decoded random codes, the
 * accountant's epsilon for R = 1 in dimension k, validation, restore that
 * continues exactly, and load_snapshot decoding without the public data. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/checkpoint/checkpoint.h"
#include "engine/core/alloc.h"
#include "engine/data/dataset.h"
#include "engine/methods/latent.h"
#include "engine/methods/method.h"
#include "engine/methods/snapshot.h"
#include "engine/methods/spec.h"
#include "engine/methods/swd.h"
#include "engine/methods/trainer.h"
#include "engine/ot/sliced.h"
#include "engine/privacy/privacy.h"
#include "support/pg_method_test.h"
#include "support/pg_test.h"

#define SIDE 12
#define D    (SIDE * SIDE)

/* 12x12 images of one Gaussian blob (std 1.5 px) in [0, 1]. Public: centers
 * uniform over [2, 10]^2. Private: centers near (3.5, 3.5) or (8.5, 8.5)
 * (std 0.5): a different distribution of the same kind of image. */
static void blobs(size_t n, uint64_t seed, bool private_, float *out)
{
    pg_rng r;
    pg_rng_seeded(&r, seed, 0);
    for (size_t i = 0; i < n; i++) {
        double cx, cy;
        if (private_) {
            double c = pg_rng_uniform(&r) < 0.5 ? 3.5 : 8.5;
            cx = c + 0.5 * pg_rng_normal(&r);
            cy = c + 0.5 * pg_rng_normal(&r);
        } else {
            cx = 2.0 + 8.0 * pg_rng_uniform(&r);
            cy = 2.0 + 8.0 * pg_rng_uniform(&r);
        }
        for (int y = 0; y < SIDE; y++)
            for (int x = 0; x < SIDE; x++) {
                double q = ((x - cx) * (x - cx) + (y - cy) * (y - cy)) / (2.0 * 1.5 * 1.5);
                out[i * D + (size_t)(y * SIDE + x)] = (float)exp(-q);
            }
    }
}

static void make_ds(size_t n, uint64_t seed, bool private_, pg_dataset *ds, pg_data_desc *desc)
{
    float *x = pg_alloc_f32(n * D);
    blobs(n, seed, private_, x);
    size_t shape[3] = {1, SIDE, SIDE};
    ck_assert_int_eq(pg_dataset_adopt(ds, x, NULL, n, shape, 3, 0, 0.0f, 1.0f, NULL), PG_OK);
    pg_data_desc d = {.n = n,
                      .d = D,
                      .ndim = 3,
                      .shape = {1, SIDE, SIDE},
                      .lo = 0.0f,
                      .hi = 1.0f,
                      .model = private_ ? PG_PRIVACY_CENTRAL : PG_PRIVACY_PUBLIC,
                      .cap_epsilon = 10,
                      .cap_delta = 1e-5};
    *desc = d;
}

/* Private blobs labelled by their cluster (0: near (3.5, 3.5), 1: near
 * (8.5, 8.5)). */
static void make_labelled(size_t n, uint64_t seed, pg_dataset *ds, pg_data_desc *desc)
{
    make_ds(n, seed, true, ds, desc);
    int32_t *lab = pg_alloc(n * sizeof(int32_t));
    for (size_t i = 0; i < n; i++) {
        double s = 0.0, cx = 0.0;
        for (size_t j = 0; j < D; j++) {
            s += ds->x[i * D + j];
            cx += ds->x[i * D + j] * (double)(j % SIDE);
        }
        lab[i] = cx / s > 6.0;
    }
    ds->labels = lab;
    ds->num_classes = 2;
    desc->num_classes = 2;
}

/* Fraction of images whose intensity centroid lies on cluster `label`'s side. */
static double on_side(const float *x, size_t n, int label)
{
    size_t ok = 0;
    for (size_t i = 0; i < n; i++) {
        double s = 0.0, cx = 0.0, cy = 0.0;
        for (size_t j = 0; j < D; j++) {
            s += x[i * D + j];
            cx += x[i * D + j] * (double)(j % SIDE);
            cy += x[i * D + j] * (double)(j / SIDE);
        }
        ok += ((cx + cy) / (2.0 * s) > 6.0) == (label == 1);
    }
    return (double)ok / (double)n;
}

static pg_latent_cfg small_cfg(void)
{
    pg_latent_cfg c = {
        .dim = 8, .hidden = {64}, .nhidden = 1, .steps = 1500, .batch = 64, .lr = 3e-3, .seed = 11};
    return c;
}

/* Mean squared error per value between a and b (n x D). */
static double mse(const float *a, const float *b, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n * D; i++) s += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    return s / (double)(n * D);
}

START_TEST(autoencoder_reconstructs_public_blobs)
{
    pg_dataset pub;
    pg_data_desc pd;
    make_ds(2000, 1, false, &pub, &pd);
    pg_latent_cfg c = small_cfg();
    pg_latent *ae;
    pg_error err = {0};
    ck_assert_msg(pg_latent_train(&c, &pub, 0.0f, 1.0f, &ae, &err) == PG_OK, "%s", err.msg);
    ck_assert_uint_eq(pg_latent_dim(ae), 8);
    ck_assert_uint_eq(pg_latent_data_dim(ae), D);
    ck_assert(isfinite(pg_latent_train_mse(ae)));
    /* Held-out rows: reconstruction vs the best constant image (the mean). */
    size_t n = 500;
    float *x = pg_alloc_f32(n * D), *z = pg_alloc_f32(n * 9), *y = pg_alloc_f32(n * D);
    float *mean = pg_alloc_f32(n * D);
    blobs(n, 2, false, x);
    ck_assert_int_eq(pg_latent_encode(ae, x, n, z, 9, NULL), PG_OK); /* stride > k */
    for (size_t i = 0; i < n; i++) {
        double s = 0.0;
        for (size_t j = 0; j < 8; j++) s += (double)z[i * 9 + j] * z[i * 9 + j];
        ck_assert_double_eq_tol(s, 1.0, 1e-5);
    }
    ck_assert_int_eq(pg_latent_decode(ae, z, n, 9, y, NULL), PG_OK);
    for (size_t j = 0; j < D; j++) {
        double s = 0.0;
        for (size_t i = 0; i < n; i++) s += x[i * D + j];
        for (size_t i = 0; i < n; i++) mean[i * D + j] = (float)(s / (double)n);
    }
    for (size_t i = 0; i < n * D; i++) ck_assert(y[i] >= 0.0f && y[i] <= 1.0f);
    double rec = mse(x, y, n), base = mse(x, mean, n);
    /* Threshold: a tenth of the mean-image error (a blob has two degrees of
     * freedom; an 8-dimensional code on the sphere has room for them). */
    ck_assert_msg(rec < 0.1 * base, "reconstruction %g vs baseline %g", rec, base);
    /* Decoding is scale-free: the decoder sees codes on the sphere. */
    for (size_t i = 0; i < 8; i++) z[i] *= 3.0f;
    float y0[D];
    ck_assert_int_eq(pg_latent_decode(ae, z, 1, 9, y0, NULL), PG_OK);
    for (size_t j = 0; j < D; j++) ck_assert_float_eq_tol(y0[j], y[j], 1e-5f);

    /* Checkpoint part: round trip decodes identically. */
    json_t *j = pg_latent_to_json(ae);
    char *hdr = json_dumps(j, JSON_COMPACT);
    pg_ckpt_tensor ts[2];
    pg_latent_tensors(ae, ts);
    unsigned char *buf;
    size_t len;
    ck_assert_int_eq(pg_ckpt_encode(hdr, ts, 2, &buf, &len, NULL), PG_OK);
    pg_ckpt ck;
    ck_assert_int_eq(pg_ckpt_decode(buf, len, &ck, NULL), PG_OK);
    pg_latent *ae2;
    ck_assert_msg(pg_latent_from_ckpt(j, &ck, &ae2, &err) == PG_OK, "%s", err.msg);
    float *y2 = pg_alloc_f32(n * D);
    ck_assert_int_eq(pg_latent_decode(ae2, z + 9, n - 1, 9, y2, NULL), PG_OK);
    ck_assert(memcmp(y2, y + D, (n - 1) * D * sizeof(float)) == 0);
    ck_assert(pg_latent_train_mse(ae2) == pg_latent_train_mse(ae));
    ck_assert(pg_latent_train_mse(ae) < 0.1 * base); /* the training loss agrees */
    pg_latent_release(ae2);
    /* Hostile parts: a wrong size, a NaN weight, a lying shape. */
    pg_ckpt_tensor bad[2] = {ts[0], ts[1]};
    bad[1].dims[0] -= 1;
    unsigned char *b2;
    size_t l2;
    pg_ckpt c2;
    ck_assert_int_eq(pg_ckpt_encode(hdr, bad, 2, &b2, &l2, NULL), PG_OK);
    ck_assert_int_eq(pg_ckpt_decode(b2, l2, &c2, NULL), PG_OK);
    ck_assert_int_eq(pg_latent_from_ckpt(j, &c2, &ae2, NULL), PG_EFORMAT);
    pg_ckpt_free(&c2);
    free(b2);
    float *nanp = pg_alloc_f32(ts[0].dims[0]);
    memcpy(nanp, ts[0].data, ts[0].dims[0] * sizeof(float));
    nanp[3] = NAN;
    bad[1] = ts[1];
    bad[0].data = nanp;
    ck_assert_int_eq(pg_ckpt_encode(hdr, bad, 2, &b2, &l2, NULL), PG_OK);
    ck_assert_int_eq(pg_ckpt_decode(b2, l2, &c2, NULL), PG_OK);
    ck_assert_int_eq(pg_latent_from_ckpt(j, &c2, &ae2, NULL), PG_EFORMAT);
    pg_ckpt_free(&c2);
    free(b2);
    pg_free(nanp);
    json_object_set_new(j, "k", json_integer(9));
    ck_assert_int_eq(pg_latent_from_ckpt(j, &ck, &ae2, NULL), PG_EFORMAT);
    json_object_set_new(j, "k", json_integer(8));
    json_object_set_new(j, "hi", json_real(-1.0));
    ck_assert_int_eq(pg_latent_from_ckpt(j, &ck, &ae2, NULL), PG_EFORMAT);
    pg_ckpt_free(&ck);
    free(buf);
    free(hdr);
    json_decref(j);
    pg_free(x);
    pg_free(z);
    pg_free(y);
    pg_free(y2);
    pg_free(mean);
    pg_latent_release(ae);
    pg_dataset_free(&pub);
}
END_TEST

/* SW2 between image sets (n x D and m x D) along 400 random directions. */
static double sw2_images(const float *x, size_t n, const float *y, size_t m)
{
    size_t k = 400;
    float *th = pg_alloc_f32(D * k);
    pg_rng r;
    pg_rng_seeded(&r, 5, 5);
    pg_mat tm = pg_mat_view(th, D, k), xm = pg_mat_view((float *)x, n, D);
    pg_mat ym = pg_mat_view((float *)y, m, D);
    ck_assert_int_eq(pg_sw_directions(&r, false, &tm, NULL), PG_OK);
    pg_sw_ws ws;
    ck_assert_int_eq(pg_sw_ws_init(&ws, n, m, k, D, NULL), PG_OK);
    double s2;
    ck_assert_int_eq(pg_sw2(&ws, &xm, &ym, &tm, &s2, NULL, NULL), PG_OK);
    pg_sw_ws_free(&ws);
    pg_free(th);
    return sqrt(s2);
}

#define LATENT_SPEC                                                                                \
    "\"latent\": {\"dim\": 8, \"hidden\": [64], \"steps\": 1500, \"batch\": 64, \"lr\": 0.003}, "  \
    "\"seed\": 11"

START_TEST(latent_flow_samples_beat_random_codes_and_epsilon_is_r1)
{
    pg_dataset priv, pub;
    pg_data_desc dd, pd;
    make_ds(1000, 3, true, &priv, &dd);
    make_ds(2000, 1, false, &pub, &pd);
    const pg_method *m = pg_method_find("swd_flow_r");
    pg_job_data in = {.desc = &dd, .rows = &priv, .public_desc = &pd, .public_rows = &pub};
    pg_spec_errors e;
    json_t *r = pg_test_resolve(
        m,
        "{\"privacy\": {\"noise_multiplier\": 0.1, \"delta\": 1e-5}, "
        "\"projections\": {\"per_step\": 8}, \"flow\": {\"steps\": 200, \"init_std\": 0.35, "
        "\"particles\": 400, \"quantile_levels\": 64}, " LATENT_SPEC "}",
        &in, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    ck_assert(pg_spec_num(r, "privacy.clip_norm", 0) == 1.0);
    ck_assert_int_eq(pg_spec_int(r, "latent.dim", 0), 8);
    pg_privacy_plan plan;
    pg_error err = {0};
    /* plan() needs no public description (a finished job's may be gone) */
    ck_assert_int_eq(m->plan(r, &(pg_job_data){.desc = &dd}, &plan, NULL), PG_OK);
    /* 8 orthonormal directions in R^8: one block, sensitivity 2R = 2; noise
     * std 0.1 * 2; 200 Gaussian releases composed in RDP. (A weak-privacy
     * setting on purpose: the test is about the latent plumbing, and the
     * flow's deconvolution of larger noise on 1000 rows takes longer.) */
    double eps;
    ck_assert_int_eq(pg_rdp_epsilon(1.0, 0.1, 200, 1e-5, PG_RDP_CONV_IMPROVED, &eps, NULL, NULL),
                     PG_OK);
    ck_assert_double_eq_tol(plan.epsilon, eps, 1e-9 * eps);
    ck_assert(plan.charges);
    pg_trainer *t;
    ck_assert_msg(m->create(r, &in, 1, &t, &err) == PG_OK, "%s", err.msg);
    pg_step_report rep = {0};
    for (int i = 0; i < 30; i++) ck_assert_int_eq(m->step(t, &rep, NULL), PG_OK);
    unsigned char *mid;
    size_t lmid;
    ck_assert_int_eq(m->save(t, &mid, &lmid, NULL), PG_OK);
    while (!rep.done) ck_assert_int_eq(m->step(t, &rep, NULL), PG_OK);
    ck_assert_int_eq(pg_swd_trainer_releases(t), 200);
    ck_assert_double_eq_tol(rep.epsilon_spent, eps, 1e-9 * eps);

    size_t n = 400, nt = 1000;
    pg_snapshot *s;
    ck_assert_int_eq(m->snapshot(t, &s, NULL), PG_OK);
    ck_assert_uint_eq(pg_snapshot_dim(s), D);
    float *x = pg_alloc_f32(n * D), *ref = pg_alloc_f32(nt * D);
    ck_assert_int_eq(pg_snapshot_sample(s, n, 9, -1, x, NULL), PG_OK);
    for (size_t i = 0; i < n * D; i++) ck_assert(x[i] >= 0.0f && x[i] <= 1.0f);
    blobs(nt, 4, true, ref);
    double flow = sw2_images(x, n, ref, nt);
    /* The same decoder on uniform random codes (no private information). */
    pg_latent_cfg c = small_cfg();
    pg_latent *ae;
    ck_assert_int_eq(pg_latent_train(&c, &pub, 0.0f, 1.0f, &ae, NULL), PG_OK);
    float *zr = pg_alloc_f32(n * 8), *xr = pg_alloc_f32(n * D);
    pg_rng rr;
    pg_rng_seeded(&rr, 8, 8);
    pg_rng_fill_normal(&rr, zr, n * 8, 0.0f, 1.0f);
    ck_assert_int_eq(pg_latent_decode(ae, zr, n, 8, xr, NULL), PG_OK);
    double rnd = sw2_images(xr, n, ref, nt);
    /* And the autoencoder's own reconstructions: the floor the flow can reach. */
    float *zp = pg_alloc_f32(n * 8), *xp = pg_alloc_f32(n * D);
    ck_assert_int_eq(pg_latent_encode(ae, priv.x, n, zp, 8, NULL), PG_OK);
    ck_assert_int_eq(pg_latent_decode(ae, zp, n, 8, xp, NULL), PG_OK);
    double floor_ = sw2_images(xp, n, ref, nt);
    ck_assert_msg(flow < 0.6 * rnd, "flow %g, random codes %g, reconstructions %g", flow, rnd,
                  floor_);

    /* Restore from the middle, without the public rows: the state is exactly
     * the saved one (autoencoder included), and it runs to the planned end. */
    pg_trainer *t2;
    pg_job_data in2 = {.desc = &dd, .rows = &priv, .public_desc = &pd};
    ck_assert_msg(m->restore(r, &in2, 1, mid, lmid, &t2, &err) == PG_OK, "%s", err.msg);
    unsigned char *e1, *e2;
    size_t l1, l2;
    ck_assert_int_eq(m->save(t2, &e2, &l2, NULL), PG_OK);
    ck_assert_uint_eq(l2, lmid);
    ck_assert(memcmp(e2, mid, lmid) == 0);
    pg_step_report r2 = {0};
    while (!r2.done) ck_assert_int_eq(m->step(t2, &r2, NULL), PG_OK);
    ck_assert_int_eq(r2.step, 200);
    ck_assert_int_eq(m->save(t, &e1, &l1, NULL), PG_OK);
    ck_assert_int_eq(pg_swd_trainer_releases(t2), 200);
    ck_assert_double_eq_tol(r2.epsilon_spent, eps, 1e-9 * eps);

    /* load_snapshot decodes with no spec and no data at all. */
    pg_snapshot *ls;
    ck_assert_msg(m->load_snapshot(e1, l1, &ls, &err) == PG_OK, "%s", err.msg);
    ck_assert_uint_eq(pg_snapshot_dim(ls), D);
    float *x2 = pg_alloc_f32(n * D);
    ck_assert_int_eq(pg_snapshot_sample(ls, n, 9, -1, x2, NULL), PG_OK);
    ck_assert(memcmp(x, x2, n * D * sizeof(float)) == 0); /* same particles, same decoder */
    /* More samples than particles: replayed in latent space, then decoded. */
    float *big = pg_alloc_f32(2 * n * D);
    ck_assert_int_eq(pg_snapshot_sample(ls, 2 * n, 10, -1, big, NULL), PG_OK);
    double replay = sw2_images(big + n * D, n, ref, nt);
    ck_assert_msg(replay < 0.6 * rnd, "replayed %g, random codes %g", replay, rnd);
    pg_snapshot_release(ls);
    /* A checkpoint without its autoencoder cannot restore a latent spec. */
    pg_ckpt ck;
    ck_assert_int_eq(pg_ckpt_decode(e1, l1, &ck, NULL), PG_OK);
    unsigned char *cut;
    size_t lc;
    ck_assert_int_eq(pg_ckpt_encode(ck.header, ck.tensors, 3, &cut, &lc, NULL), PG_OK);
    ck_assert_int_eq(m->load_snapshot(cut, lc, &ls, NULL), PG_EFORMAT);
    m->destroy(t2);
    ck_assert_int_ne(m->restore(r, &in2, 1, cut, lc, &t2, NULL), PG_OK);
    free(cut);
    pg_ckpt_free(&ck);

    free(e1);
    free(e2);
    free(mid);
    pg_free(x);
    pg_free(x2);
    pg_free(big);
    pg_free(ref);
    pg_free(zr);
    pg_free(xr);
    pg_free(zp);
    pg_free(xp);
    pg_latent_release(ae);
    pg_snapshot_release(s);
    m->destroy(t);
    json_decref(r);
    pg_dataset_free(&priv);
    pg_dataset_free(&pub);
}
END_TEST

START_TEST(labelled_latent_flow)
{
    pg_dataset priv, pub;
    pg_data_desc dd, pd;
    make_labelled(1000, 3, &priv, &dd);
    make_ds(2000, 1, false, &pub, &pd);
    const pg_method *m = pg_method_find("swd_flow_r");
    pg_job_data in = {.desc = &dd, .rows = &priv, .public_desc = &pd, .public_rows = &pub};
    pg_spec_errors e;
    json_t *r = pg_test_resolve(
        m,
        "{\"privacy\": {\"noise_multiplier\": 0.1, \"delta\": 1e-5}, "
        "\"projections\": {\"per_step\": 10}, \"flow\": {\"steps\": 200, "
        "\"init_std\": 0.35, \"particles\": 400, \"quantile_levels\": 64}, " LATENT_SPEC "}",
        &in, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    /* rows [code ; 1 * onehot(y)]: norm sqrt(2), which is the clip norm */
    ck_assert(pg_spec_num(r, "labels.class_alpha", 0) == 1.0);
    ck_assert_double_eq_tol(pg_spec_num(r, "privacy.clip_norm", 0), sqrt(2.0), 1e-15);
    /* 10 orthonormal directions in R^(8 + 2): one block, 200 releases at
     * multiplier 0.1 (weak privacy on purpose, as above) */
    pg_privacy_plan plan;
    ck_assert_int_eq(m->plan(r, &(pg_job_data){.desc = &dd}, &plan, NULL), PG_OK);
    double eps;
    ck_assert_int_eq(pg_rdp_epsilon(1.0, 0.1, 200, 1e-5, PG_RDP_CONV_IMPROVED, &eps, NULL, NULL),
                     PG_OK);
    ck_assert_double_eq_tol(plan.epsilon, eps, 1e-9 * eps);
    pg_error err = {0};
    pg_trainer *t;
    ck_assert_msg(m->create(r, &in, 1, &t, &err) == PG_OK, "%s", err.msg);
    pg_step_report rep = {0};
    while (!rep.done) ck_assert_int_eq(m->step(t, &rep, NULL), PG_OK);
    pg_snapshot *s;
    ck_assert_int_eq(m->snapshot(t, &s, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_num_classes(s), 2);
    ck_assert_uint_eq(pg_snapshot_dim(s), D);
    size_t n = 150;
    float *x = pg_alloc_f32(n * D);
    for (int label = 0; label < 2; label++) {
        ck_assert_int_eq(pg_snapshot_sample(s, n, 20 + (uint64_t)label, label, x, NULL), PG_OK);
        double f = on_side(x, n, label);
        ck_assert_msg(f > 0.8, "label %d: %.2f of the samples on its side", label, f);
    }
    /* and through a checkpoint, without the public data */
    unsigned char *b;
    size_t l;
    ck_assert_int_eq(m->save(t, &b, &l, NULL), PG_OK);
    pg_snapshot *ls;
    ck_assert_int_eq(m->load_snapshot(b, l, &ls, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_num_classes(ls), 2);
    float *y = pg_alloc_f32(n * D);
    ck_assert_int_eq(pg_snapshot_sample(ls, n, 21, 1, y, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_sample(s, n, 21, 1, x, NULL), PG_OK);
    ck_assert(memcmp(x, y, n * D * sizeof(float)) == 0);
    /* an explicit clip norm other than sqrt(1 + alpha^2) is refused */
    json_t *bad = pg_test_resolve(m,
                                  "{\"privacy\": {\"epsilon\": 5, \"clip_norm\": 1}, "
                                  "\"labels\": {\"class_alpha\": 2}}",
                                  &in, &e);
    ck_assert_ptr_null(bad);
    ck_assert(pg_test_has_error(&e, "privacy.clip_norm"));
    free(b);
    pg_free(x);
    pg_free(y);
    pg_snapshot_release(ls);
    pg_snapshot_release(s);
    m->destroy(t);
    json_decref(r);
    pg_dataset_free(&priv);
    pg_dataset_free(&pub);
}
END_TEST

START_TEST(latent_validation)
{
    pg_data_desc dd = {.n = 100,
                       .d = D,
                       .ndim = 3,
                       .shape = {1, SIDE, SIDE},
                       .lo = 0,
                       .hi = 1,
                       .model = PG_PRIVACY_CENTRAL,
                       .cap_epsilon = 10,
                       .cap_delta = 1e-5};
    pg_data_desc pd = dd;
    pd.model = PG_PRIVACY_PUBLIC;
    pg_spec_errors e;
    json_t *r;
    const char *const names[] = {"swd_flow", "swd_flow_r"};
    for (int i = 0; i < 2; i++) {
        const pg_method *m = pg_method_find(names[i]);
        pg_job_data none = {.desc = &dd}, with = {.desc = &dd, .public_desc = &pd};
        /* without public data: no latent block in the resolved spec */
        ck_assert_ptr_nonnull(r = pg_test_resolve(m, "{\"privacy\": {\"epsilon\": 1}}", &none, &e));
        ck_assert_ptr_null(pg_spec_get(r, "latent"));
        json_decref(r);
        ck_assert_ptr_null(
            r = pg_test_resolve(m, "{\"privacy\": {\"epsilon\": 1}, \"latent\": {\"dim\": 4}}",
                                &none, &e));
        ck_assert(pg_test_has_error(&e, "latent"));
        /* with it: resolved, R forced to 1, re-validates to itself */
        ck_assert_ptr_nonnull(r = pg_test_resolve(m, "{\"privacy\": {\"epsilon\": 1}}", &with, &e));
        ck_assert_int_eq(pg_spec_int(r, "latent.dim", 0), 16);
        char *txt = json_dumps(r, JSON_COMPACT | JSON_SORT_KEYS);
        json_t *r2 = pg_test_resolve(m, txt, &with, &e);
        ck_assert_ptr_nonnull(r2);
        char *txt2 = json_dumps(r2, JSON_COMPACT | JSON_SORT_KEYS);
        ck_assert_str_eq(txt, txt2);
        free(txt);
        free(txt2);
        json_decref(r2);
        json_decref(r);
        ck_assert_ptr_null(
            r = pg_test_resolve(m, "{\"privacy\": {\"epsilon\": 1, \"clip_norm\": 3}}", &with, &e));
        ck_assert(pg_test_has_error(&e, "privacy.clip_norm"));
        ck_assert_ptr_null(
            r = pg_test_resolve(m,
                                "{\"privacy\": {\"epsilon\": 1}, \"latent\": {\"steps\": 200000, "
                                "\"batch\": 4096, \"hidden\": [8192, 8192]}}",
                                &with, &e));
        ck_assert(pg_test_has_error(&e, "latent.steps"));
        pg_data_desc wide = pd;
        wide.d = D + 1;
        pg_job_data bad = {.desc = &dd, .public_desc = &wide};
        ck_assert_ptr_null(r = pg_test_resolve(m, "{\"privacy\": {\"epsilon\": 1}}", &bad, &e));
        ck_assert(pg_test_has_error(&e, "public_dataset_id"));
        pg_data_desc notpub = dd;
        bad.public_desc = &notpub;
        ck_assert_ptr_null(r = pg_test_resolve(m, "{\"privacy\": {\"epsilon\": 1}}", &bad, &e));
        ck_assert(pg_test_has_error(&e, "public_dataset_id"));
        /* create without the public rows is refused, not silently raw */
        pg_dataset ds;
        pg_data_desc d2;
        make_ds(100, 3, true, &ds, &d2);
        ck_assert_ptr_nonnull(r = pg_test_resolve(m, "{\"privacy\": {\"epsilon\": 1}}", &with, &e));
        pg_trainer *t;
        ck_assert_int_eq(
            m->create(r, &(pg_job_data){.desc = &dd, .rows = &ds, .public_desc = &pd}, 1, &t, NULL),
            PG_EINVAL);
        json_decref(r);
        pg_dataset_free(&ds);
    }
    /* Methods without a latent mode refuse public data. */
    const char *const others[] = {"swd_gen", "dp_sinkhorn"};
    for (int i = 0; i < 2; i++) {
        const pg_method *m = pg_method_find(others[i]);
        ck_assert_ptr_null(r = pg_test_resolve(m, "{\"privacy\": {\"epsilon\": 1}}",
                                               &(pg_job_data){.desc = &dd, .public_desc = &pd},
                                               &e));
        ck_assert(pg_test_has_error(&e, "public_dataset_id"));
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("latent");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, autoencoder_reconstructs_public_blobs);
    tcase_add_test(tc, latent_flow_samples_beat_random_codes_and_epsilon_is_r1);
    tcase_add_test(tc, labelled_latent_flow);
    tcase_add_test(tc, latent_validation);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
