/* tests/support/pg_method_test.h - fixtures shared by the method tests:
 * validating a spec written as JSON text and looking for a field error, the
 * checkpoint round trip, a live snapshot against one loaded from bytes
 * (both on a trainer's checkpoint at once), a plan's curve against one computed by hand, a trainer
 * run to its end, and 2-D toy rows adopted with their description. Check assertions fail the
 * calling test on malformed test input.
 */
#ifndef PG_METHOD_TEST_H
#define PG_METHOD_TEST_H

#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine/checkpoint/checkpoint.h"
#include "engine/data/dataset.h"
#include "engine/methods/method.h"
#include "engine/privacy/privacy.h"

/* Validates `text` for method m against `in`: the resolved spec (caller
 * decrefs) or NULL with the field errors in *e. */
static inline json_t *pg_test_resolve(const pg_method *m, const char *text, const pg_job_data *in,
                                      pg_spec_errors *e)
{
    ck_assert_ptr_nonnull(m);
    json_t *spec = json_loads(text, 0, NULL);
    ck_assert_msg(spec != NULL, "bad JSON in test: %s", text);
    json_t *r = NULL;
    memset(e, 0, sizeof *e);
    m->validate(spec, in, &r, e, NULL);
    json_decref(spec);
    return r;
}

static inline bool pg_test_has_error(const pg_spec_errors *e, const char *field)
{
    for (int i = 0; i < e->count; i++)
        if (strcmp(e->items[i].field, field) == 0) return true;
    return false;
}

/* The checkpoint round trip every trainer must pass: restoring `bytes` and
 * saving again gives the same bytes, and the restored trainer's snapshot and
 * the snapshot rebuilt from the bytes alone (no data) draw identical samples
 * (n rows of d values, label k or -1). */
static inline void pg_test_checkpoint_round_trip(const pg_method *m, const json_t *r,
                                                 const pg_job_data *in, const unsigned char *bytes,
                                                 size_t len, size_t n, size_t d, int label)
{
    pg_trainer *t = NULL;
    pg_error err = {0};
    ck_assert_msg(m->restore(r, in, 1, bytes, len, &t, &err) == PG_OK, "%s", err.msg);
    unsigned char *again;
    size_t len2;
    ck_assert_int_eq(m->save(t, &again, &len2, NULL), PG_OK);
    ck_assert_uint_eq(len, len2);
    ck_assert(memcmp(bytes, again, len) == 0);
    free(again);
    pg_snapshot *s1, *s2;
    ck_assert_int_eq(m->snapshot(t, &s1, NULL), PG_OK);
    ck_assert_int_eq(m->load_snapshot(bytes, len, &s2, NULL), PG_OK);
    ck_assert_uint_eq(pg_snapshot_dim(s2), d);
    float *a = malloc(n * d * sizeof(float)), *b = malloc(n * d * sizeof(float));
    ck_assert(a && b);
    ck_assert_int_eq(pg_snapshot_sample(s1, n, 4, label, a, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_sample(s2, n, 4, label, b, NULL), PG_OK);
    ck_assert(memcmp(a, b, n * d * sizeof(float)) == 0);
    free(a), free(b);
    pg_snapshot_release(s1);
    pg_snapshot_release(s2);
    m->destroy(t);
}

/* The trainer's live snapshot and one loaded from its checkpoint bytes serve
 * the same 500 rows of d values for a seed, and a 100-row request gets the
 * first 100 of them (chunking does not change a row's draws). */
static inline void pg_test_same_rows_live_and_loaded(const pg_method *m, pg_trainer *tr,
                                                     const unsigned char *bytes, size_t len,
                                                     size_t d)
{
    pg_snapshot *a, *b;
    ck_assert_int_eq(m->snapshot(tr, &a, NULL), PG_OK);
    ck_assert_int_eq(m->load_snapshot(bytes, len, &b, NULL), PG_OK);
    float *xa = malloc(500 * d * sizeof(float)), *xb = malloc(500 * d * sizeof(float));
    ck_assert(xa && xb);
    ck_assert_int_eq(pg_snapshot_sample(a, 500, 4, -1, xa, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_sample(b, 500, 4, -1, xb, NULL), PG_OK);
    ck_assert(memcmp(xa, xb, 500 * d * sizeof *xa) == 0);
    ck_assert_int_eq(pg_snapshot_sample(b, 100, 4, -1, xb, NULL), PG_OK);
    ck_assert(memcmp(xa, xb, 100 * d * sizeof *xa) == 0);
    free(xa), free(xb);
    pg_snapshot_release(a);
    pg_snapshot_release(b);
}

/* The trainer's checkpoint as every checkpoint test starts from it: saved,
 * holding the text needle, passing pg_test_checkpoint_round_trip (300 rows
 * of d, unlabelled) and pg_test_same_rows_live_and_loaded. The bytes (caller
 * frees), their length into *len. */
static inline unsigned char *pg_test_checked_checkpoint(const pg_method *m, pg_trainer *tr,
                                                        const json_t *r, const pg_job_data *in,
                                                        size_t d, const char *needle, size_t *len)
{
    unsigned char *bytes;
    ck_assert_int_eq(m->save(tr, &bytes, len, NULL), PG_OK);
    ck_assert_msg(memmem(bytes, *len, needle, strlen(needle)) != NULL, "no %s", needle);
    pg_test_checkpoint_round_trip(m, r, in, bytes, *len, 300, d, -1);
    pg_test_same_rows_live_and_loaded(m, tr, bytes, *len, d);
    return bytes;
}

/* A plan's curve against one computed by hand: `steps` steps of the
 * Poisson-subsampled Gaussian (rate, sigma) plus, at every order alpha, one
 * alpha / (2 s^2) per one-shot Gaussian release of multiplier s in
 * releases[0..nrel); each order within 1e-12 relative. Returns the hand
 * curve's epsilon at delta 1e-5 (improved conversion), for the caller to
 * hold the plan's against. */
static inline double pg_test_plan_curve(const pg_privacy_plan *p, double rate, double sigma,
                                        uint64_t steps, const double *releases, size_t nrel)
{
    double own[PG_PLAN_MAX_ORDERS], eps;
    ck_assert_int_eq(pg_rdp_compute(rate, sigma, steps, p->orders, (size_t)p->norders, own, NULL),
                     PG_OK);
    for (int i = 0; i < p->norders; i++) {
        double al = p->orders[i], extra = 0;
        for (size_t k = 0; k < nrel; k++) extra += al / (2 * releases[k] * releases[k]);
        own[i] += extra;
        ck_assert_msg(fabs(p->rdp[i] - own[i]) <= 1e-12 * own[i], "order %g", al);
    }
    ck_assert_int_eq(pg_rdp_to_dp(p->orders, own, (size_t)p->norders, 1e-5, PG_RDP_CONV_IMPROVED,
                                  &eps, NULL, NULL),
                     PG_OK);
    return eps;
}

/* Creates a trainer of m for the resolved spec r on in (one thread) and
 * steps it to its end; the last step's report into *last (may be NULL).
 * Fails the test with the method's message on any error. Caller destroys
 * the trainer (m->destroy). */
static inline pg_trainer *pg_test_train(const pg_method *m, const json_t *r, const pg_job_data *in,
                                        pg_step_report *last)
{
    pg_trainer *t = NULL;
    pg_error err = {0};
    ck_assert_msg(m->create(r, in, 1, &t, &err) == PG_OK, "%s", err.msg);
    pg_step_report rep = {0};
    while (!rep.done) ck_assert_msg(m->step(t, &rep, &err) == PG_OK, "%s", err.msg);
    if (last) *last = rep;
    return t;
}

/* Runs a planned job as the worker does: a trainer of m for r on in, stepped
 * to its end, each step checked against the plan (no more than plan->steps
 * steps, no more than plan->epsilon spent so far). The checkpoint after
 * step save_at is saved into *mid, *midlen (caller frees). Returns the
 * trainer (m->destroy); the last step's report into *last. */
static inline pg_trainer *pg_test_run_plan(const pg_method *m, const json_t *r,
                                           const pg_job_data *in, const pg_privacy_plan *plan,
                                           long save_at, unsigned char **mid, size_t *midlen,
                                           pg_step_report *last)
{
    pg_trainer *t = NULL;
    pg_error err = {0};
    ck_assert_msg(m->create(r, in, 1, &t, &err) == PG_OK, "%s", err.msg);
    pg_step_report rep = {0};
    long steps = 0;
    while (!rep.done) {
        ck_assert_msg(m->step(t, &rep, &err) == PG_OK, "%s", err.msg);
        ck_assert_int_le(++steps, plan->steps);
        ck_assert_double_le(rep.epsilon_spent, plan->epsilon * (1 + 1e-12));
        if (steps == save_at) ck_assert_int_eq(m->save(t, mid, midlen, NULL), PG_OK);
    }
    *last = rep;
    return t;
}

/* Adopts n central 2-D rows x declared on [-10, 10], with labels lab of
 * num_classes classes (NULL and 0: unlabelled); ds owns x and lab
 * afterwards. *desc describes them under a cap of (cap_epsilon, 1e-5). */
static inline void pg_test_central_2d(float *x, int32_t *lab, size_t n, int num_classes,
                                      double cap_epsilon, pg_dataset *ds, pg_data_desc *desc)
{
    size_t shape[1] = {2};
    ck_assert_int_eq(pg_dataset_adopt(ds, x, lab, n, shape, 1, num_classes, -10.0f, 10.0f, NULL),
                     PG_OK);
    *desc = (pg_data_desc){.n = n,
                           .d = 2,
                           .ndim = 1,
                           .shape = {2},
                           .lo = -10.0f,
                           .hi = 10.0f,
                           .num_classes = num_classes,
                           .model = PG_PRIVACY_CENTRAL,
                           .cap_epsilon = cap_epsilon,
                           .cap_delta = 1e-5};
}

/* Adopts n unlabelled 2-D rows x declared on [lo, hi] as local data
 * privatized with Laplace noise of scale 0.4 per coordinate: epsilon 5 at
 * l1 sensitivity 2, as in paper 000 section IV-A; ds owns x afterwards.
 * *desc describes them. */
static inline void pg_test_local_laplace_2d(float *x, size_t n, float lo, float hi, pg_dataset *ds,
                                            pg_data_desc *desc)
{
    size_t shape[1] = {2};
    ck_assert_int_eq(pg_dataset_adopt(ds, x, NULL, n, shape, 1, 0, lo, hi, NULL), PG_OK);
    *desc = (pg_data_desc){.n = n,
                           .d = 2,
                           .ndim = 1,
                           .shape = {2},
                           .lo = lo,
                           .hi = hi,
                           .model = PG_PRIVACY_LOCAL,
                           .mechanism = PG_LOCAL_LAPLACE,
                           .epsilon = 5,
                           .sensitivity = 2.0,
                           .noise_scale = 0.4};
}

/* A checkpoint's privacy object (under the header's generator-description
 * member, where the methods' save writes it) checked against the sub-bins
 * of the resolved spec r: quantile_sub and quantile_sub_noise equal the
 * spec's when it has sub-bins (S >= 2; a spec without quantile_sub_noise
 * means twice the map's noise, qmap_spec.h), absent otherwise;
 * quantile_noise equals encoding.quantile_noise. */
static inline void pg_test_ckpt_privacy_sub(const unsigned char *bytes, size_t len, const json_t *r)
{
    pg_ckpt ck;
    ck_assert_int_eq(pg_ckpt_decode(bytes, len, &ck, NULL), PG_OK);
    json_t *h = json_loads(ck.header, 0, NULL);
    ck_assert_ptr_nonnull(h);
    const json_t *priv = json_object_get(h, "privacy"), *v;
    const char *key;
    json_object_foreach(h, key, v) if (!priv && json_object_get(v, "privacy")) priv =
        json_object_get(v, "privacy");
    ck_assert_ptr_nonnull(priv);
    const json_t *enc = json_object_get(r, "encoding");
    double q = json_number_value(json_object_get(enc, "quantile_noise"));
    json_int_t S = json_integer_value(json_object_get(enc, "quantile_sub"));
    ck_assert_double_eq_tol(json_number_value(json_object_get(priv, "quantile_noise")), q,
                            1e-12 * q);
    if (S >= 2) {
        const json_t *js2 = json_object_get(enc, "quantile_sub_noise");
        double s2 = json_is_number(js2) ? json_number_value(js2) : 2.0 * q;
        ck_assert_int_eq(json_integer_value(json_object_get(priv, "quantile_sub")), S);
        ck_assert_double_eq_tol(json_number_value(json_object_get(priv, "quantile_sub_noise")), s2,
                                1e-12 * s2);
    } else {
        ck_assert_ptr_null(json_object_get(priv, "quantile_sub"));
        ck_assert_ptr_null(json_object_get(priv, "quantile_sub_noise"));
    }
    json_decref(h);
    pg_ckpt_free(&ck);
}

#endif
