/* Methods on typed tables and their central defaults: the generators' per-block output heads
 * (heads.h) checked by finite differences and by the Gumbel-max law, every method trained on a
 * mixed table with decodable, in-range samples and a checkpoint that carries
 * the table map (a restore with another table is refused), and the
 * sliced-Wasserstein clip radius and sensitivity taken from the schema. */
#include <jansson.h>
#include <math.h>

#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/data/dataset.h"
#include "engine/data/table.h"
#include "engine/data/table_ldp.h"
#include "engine/methods/defaults.h"
#include "engine/methods/generator.h"
#include "engine/methods/heads.h"
#include "engine/methods/method.h"
#include "engine/methods/spec.h"
#include "engine/methods/swd_spec.h"
#include "engine/privacy/privacy.h"
#include "support/pg_method_test.h"
#include "support/pg_table_test.h"
#include "support/pg_test.h"

/* Every kind of block: width 1 + 2 + 3 + 3 + 1 + 2 = 12, label y. */
static const char *MIXED =
    "{\"columns\":["
    "{\"name\":\"x\",\"type\":\"continuous\",\"min\":-5,\"max\":5},"
    "{\"name\":\"n\",\"type\":\"integer\",\"min\":0,\"max\":10,\"nullable\":true},"
    "{\"name\":\"c\",\"type\":\"categorical\",\"categories\":[\"a\",\"b\",\"c\"]},"
    "{\"name\":\"cn\",\"type\":\"categorical\",\"categories\":[\"u\",\"v\"],\"nullable\":true},"
    "{\"name\":\"b\",\"type\":\"boolean\"},"
    "{\"name\":\"bn\",\"type\":\"boolean\",\"nullable\":true},"
    "{\"name\":\"y\",\"type\":\"categorical\",\"categories\":[\"no\",\"yes\"]}],"
    "\"label\":\"y\"}";

static pg_table *table_of(const char *text)
{
    return pg_test_table(text);
}

START_TEST(heads_cover_every_unit_once)
{
    pg_table *t = table_of(MIXED);
    ck_assert_uint_eq(t->width, 12);
    pg_heads *h;
    ck_assert_int_eq(pg_heads_from_table(t, PG_HEADS_TAU, &h, NULL), PG_OK);
    int seen[12] = {0};
    for (size_t j = 0; j < h->n; j++)
        for (size_t k = 0; k < h->h[j].width; k++) seen[h->h[j].offset + k]++;
    for (int u = 0; u < 12; u++) ck_assert_int_eq(seen[u], 1);
    /* x numeric; n numeric + indicator; c softmax 3; cn softmax 3 (values
     * and missing); b sigmoid; bn 3-way softmax with false implicit. */
    const int kinds[7] = {PG_HEAD_NUMERIC,    PG_HEAD_NUMERIC, PG_HEAD_SOFTMAX_REF,
                          PG_HEAD_SOFTMAX,    PG_HEAD_SOFTMAX, PG_HEAD_SOFTMAX_REF,
                          PG_HEAD_SOFTMAX_REF};
    const size_t widths[7] = {1, 1, 1, 3, 3, 1, 2};
    ck_assert_uint_eq(h->n, 7);
    for (int j = 0; j < 7; j++) {
        ck_assert_int_eq(h->h[j].kind, kinds[j]);
        ck_assert_uint_eq(h->h[j].width, widths[j]);
    }
    pg_heads_free(h);
    pg_table_free(t);
}
END_TEST

/* L(z) = sum_i w_i y_i(z) in double from the float outputs. */
static double head_loss(const pg_heads *h, const float *z, size_t rows, const double *w,
                        const pg_rng *noise)
{
    float buf[4 * 12];
    memcpy(buf, z, rows * 12 * sizeof(float));
    pg_rng r;
    if (noise) r = *noise;
    pg_heads_forward(h, noise ? &r : NULL, buf, 12, rows);
    double l = 0;
    for (size_t i = 0; i < rows * 12; i++) l += w[i] * buf[i];
    return l;
}

START_TEST(heads_gradient_matches_finite_differences)
{
    pg_table *t = table_of(MIXED);
    pg_heads *h;
    ck_assert_int_eq(pg_heads_from_table(t, PG_HEADS_TAU, &h, NULL), PG_OK);
    enum { ROWS = 4 };
    pg_rng r;
    pg_rng_seeded(&r, 9, 0);
    float z[ROWS * 12];
    double w[ROWS * 12];
    for (int i = 0; i < ROWS * 12; i++) {
        z[i] = (float)(0.3 * pg_rng_normal(&r));
        w[i] = pg_rng_normal(&r);
    }
    /* _i: 0 without noise, 1 with a fixed Gumbel draw (temperature 1 here so
     * that the noise does not saturate every softmax). */
    h->tau = _i == 0 ? PG_HEADS_TAU : 1.0f;
    /* _i 2: a logit gain (model.logit_gain), with noise */
    if (_i == 2) h->gain = 3.0f;
    pg_rng noise;
    pg_rng_seeded(&noise, 21, 0);
    const pg_rng *nz = _i ? &noise : NULL;
    float y[ROWS * 12], g[ROWS * 12];
    memcpy(y, z, sizeof y);
    pg_rng copy = noise;
    pg_heads_forward(h, nz ? &copy : NULL, y, 12, ROWS);
    for (int i = 0; i < ROWS * 12; i++) g[i] = (float)w[i];
    pg_heads_backward(h, y, 12, g, ROWS);
    double worst = 0;
    for (int i = 0; i < ROWS * 12; i++) {
        const double e = 1e-3;
        float zp[ROWS * 12], zm[ROWS * 12];
        memcpy(zp, z, sizeof z);
        memcpy(zm, z, sizeof z);
        zp[i] += (float)e;
        zm[i] -= (float)e;
        double fd = (head_loss(h, zp, ROWS, w, nz) - head_loss(h, zm, ROWS, w, nz)) /
                    ((double)zp[i] - (double)zm[i]);
        double tol = 2e-3 + 1e-2 * fabs(fd);
        ck_assert_msg(fabs(fd - g[i]) < tol, "unit %d: finite difference %.6f, analytic %.6f", i,
                      fd, (double)g[i]);
        worst = fmax(worst, fabs(fd - g[i]));
    }
    /* Not a vacuous check: the gradient is far from zero somewhere. */
    double norm = 0;
    for (int i = 0; i < ROWS * 12; i++) norm += (double)g[i] * g[i];
    ck_assert(norm > 1e-2);
    pg_heads_free(h);
    pg_table_free(t);
}
END_TEST

/* The Gumbel-max property the decoder relies on: with logit gain g the
 * largest unit of a softmax head is a draw from softmax(g z) (_i 0: g = 1;
 * _i 1: g = 10 on logits z / 10, so the law is softmax(z) in both); 200000
 * rows give a standard error below 0.0011 per frequency, the bound is 0.006. */
START_TEST(gumbel_heads_draw_the_softmax_law)
{
    pg_table *t = table_of(MIXED);
    pg_heads *h;
    ck_assert_int_eq(pg_heads_from_table(t, PG_HEADS_TAU, &h, NULL), PG_OK);
    ck_assert(h->gain == 1.0f);
    float gain = _i == 0 ? 1.0f : 10.0f;
    h->gain = gain;
    enum { N = 200000 };
    float *x = pg_alloc_f32((size_t)N * 12);
    float z[12] = {0.4f, -0.2f, 0.3f, 1.0f, 0.0f, -1.0f, 0.5f, -0.5f, 0.2f, 0.5f, 0.3f, -1.0f};
    /* units 0 and 1 are numeric (no gain), units 2.. are logits */
    for (int u = 2; u < 12; u++) z[u] /= gain;
    for (size_t i = 0; i < N; i++) memcpy(x + i * 12, z, sizeof z);
    pg_rng r;
    pg_rng_seeded(&r, 4, 0);
    pg_heads_forward(h, &r, x, 12, N);
    double c[3] = {0}, cn[3] = {0}, b = 0, bn[3] = {0};
    for (size_t i = 0; i < N; i++) {
        const float *row = x + i * 12;
        for (int u = 0; u < 12; u++) {
            ck_assert(row[u] >= -1.0f && row[u] <= 1.0f);
            if (u != 0 && u != 1) ck_assert(row[u] >= 0.0f);
        }
        pg_table_value v;
        pg_table_decode_value(t, 2, row, 1, &v);
        c[v.cat]++;
        pg_table_decode_value(t, 3, row, 1, &v);
        cn[v.missing ? 2 : v.cat]++;
        pg_table_decode_value(t, 4, row, 1, &v);
        b += v.cat;
        pg_table_decode_value(t, 5, row, 1, &v);
        bn[v.missing ? 2 : v.cat]++;
    }
    /* c: softmax(1, 0, -1); cn: softmax(0.5, -0.5, 0.2) over (u, v,
     * missing); b: sigmoid(0.5); bn: softmax(0, 0.3, -1) over (false, true,
     * missing). */
    double e1 = exp(1.0), e0 = 1.0, em = exp(-1.0), s = e1 + e0 + em;
    const double want_c[3] = {e1 / s, e0 / s, em / s};
    double a = exp(0.5), bb = exp(-0.5), cc = exp(0.2), s2 = a + bb + cc;
    const double want_cn[3] = {a / s2, bb / s2, cc / s2};
    double want_b = 1.0 / (1.0 + exp(-0.5));
    double f0 = 1.0, f1 = exp(0.3), f2 = exp(-1.0), s3 = f0 + f1 + f2;
    const double want_bn[3] = {f0 / s3, f1 / s3, f2 / s3};
    for (int k = 0; k < 3; k++) {
        ck_assert_msg(fabs(c[k] / N - want_c[k]) < 0.006, "c %d: %.4f vs %.4f", k, c[k] / N,
                      want_c[k]);
        ck_assert_msg(fabs(cn[k] / N - want_cn[k]) < 0.006, "cn %d", k);
        ck_assert_msg(fabs(bn[k] / N - want_bn[k]) < 0.006, "bn %d", k);
    }
    ck_assert_msg(fabs(b / N - want_b) < 0.006, "b %.4f vs %.4f", b / N, want_b);
    pg_free(x);
    pg_heads_free(h);
    pg_table_free(t);
}
END_TEST

/* The same network, once through the generator's heads: the parameter
 * gradient of L = sum w y(G(z)) matches central differences. */
START_TEST(generator_parameter_gradient_through_heads)
{
    pg_threads_set(1);
    pg_table *t = table_of(MIXED);
    pg_data_desc desc = {.n = 10,
                         .d = 12,
                         .ndim = 1,
                         .shape = {12},
                         .lo = -1,
                         .hi = 1,
                         .num_classes = 2,
                         .model = PG_PRIVACY_CENTRAL,
                         .table = t};
    /* rows without their labels here: a generator on a labelled table must
     * be conditional (generator.c), and this one is not */
    desc.num_classes = 0;
    json_t *spec = json_pack("{s:{s:s,s:I,s:[i],s:s}}", "model", "arch", "mlp", "latent_dim",
                             (json_int_t)4, "hidden", 16, "activation", "tanh");
    pg_spec_errors e = {0};
    pg_generator gen;
    ck_assert_msg(pg_generator_config(spec, &desc, &gen, &e, NULL) == PG_OK, "%s",
                  e.count ? e.items[0].message : "");
    ck_assert_ptr_nonnull(gen.heads);
    pg_nn *net;
    ck_assert_int_eq(pg_generator_build(&gen, 3, 7, &net, NULL), PG_OK);
    float zl[3 * 4];
    double w[3 * 12];
    pg_rng r;
    pg_rng_seeded(&r, 3, 0);
    for (int i = 0; i < 12; i++) zl[i] = (float)pg_rng_normal(&r);
    for (int i = 0; i < 36; i++) w[i] = pg_rng_normal(&r);
    float y[36], g[36];
    const float *out;
    ck_assert_int_eq(pg_nn_forward(net, zl, NULL, 3, &out, NULL), PG_OK);
    memcpy(y, out, sizeof y);
    pg_generator_to_data(&gen, NULL, y, 12, 3);
    for (int i = 0; i < 36; i++) g[i] = (float)w[i];
    pg_generator_grad_to_net(&gen, y, 12, g, 3);
    pg_nn_zero_grad(net);
    ck_assert_int_eq(pg_nn_backward(net, g, NULL, NULL), PG_OK);
    size_t np = pg_nn_param_count(net);
    float *p = pg_nn_params(net), *grads = pg_nn_grads(net);
    double *an = malloc(np * sizeof *an);
    for (size_t i = 0; i < np; i++) an[i] = grads[i];
    int checked = 0;
    for (size_t i = 0; i < np; i += 5) {
        float keep = p[i];
        double l[2];
        for (int s = 0; s < 2; s++) {
            p[i] = keep + (s ? -1e-2f : 1e-2f);
            ck_assert_int_eq(pg_nn_forward(net, zl, NULL, 3, &out, NULL), PG_OK);
            memcpy(y, out, sizeof y);
            pg_generator_to_data(&gen, NULL, y, 12, 3);
            l[s] = 0;
            for (int k = 0; k < 36; k++) l[s] += w[k] * y[k];
        }
        p[i] = keep;
        double fd = (l[0] - l[1]) / 2e-2;
        ck_assert_msg(fabs(fd - an[i]) < 5e-3 + 3e-2 * fabs(fd),
                      "parameter %zu: finite difference %.5f, analytic %.5f", i, fd, an[i]);
        checked++;
    }
    ck_assert_int_gt(checked, 20);
    free(an);
    pg_nn_free(net);
    pg_generator_free(&gen);
    json_decref(spec);
    pg_table_free(t);
}
END_TEST

/* ---- every method on a mixed table ------------------------------------- */

enum { ROWS = 400 };

/* ROWS valid rows of MIXED (encoded with the table's encoder) and labels. */
static void make_rows(const pg_table *t, pg_dataset *ds, bool labelled)
{
    pg_rng r;
    pg_rng_seeded(&r, 12, 0);
    float *x = pg_alloc_f32((size_t)ROWS * t->width);
    int32_t *lab = labelled ? pg_calloc(ROWS, sizeof(int32_t)) : NULL;
    for (size_t i = 0; i < ROWS; i++) {
        size_t cls = pg_rng_below(&r, 2);
        if (lab) lab[i] = (int32_t)cls;
        for (size_t c = 0; c < t->ncols; c++) {
            if (c == t->label) continue;
            const pg_table_col *col = &t->cols[c];
            pg_table_value v = {0};
            v.missing = col->nullable && pg_rng_uniform(&r) < 0.2;
            if (col->type == PG_COL_CONTINUOUS)
                v.num = col->min + (col->max - col->min) * pg_rng_uniform(&r);
            else if (col->type == PG_COL_INTEGER)
                v.num =
                    (double)(int)(col->min + pg_rng_below(&r, (uint64_t)(col->max - col->min + 1)));
            else if (col->type == PG_COL_CATEGORICAL)
                v.cat = (cls + pg_rng_below(&r, 2)) % col->ncat;
            else
                v.cat = pg_rng_below(&r, 2);
            pg_error err = {0};
            ck_assert_msg(pg_table_encode_value(t, c, &v, PG_TABLE_BOUNDS_REFUSE, x + i * t->width,
                                                &err) == PG_OK,
                          "%s", err.msg);
        }
    }
    size_t shape[1] = {t->width};
    ck_assert_int_eq(pg_dataset_adopt(ds, x, lab, ROWS, shape, 1, labelled ? 2 : 0, (float)t->lo,
                                      (float)t->hi, NULL),
                     PG_OK);
}

static const char *const METHODS[] = {"dp_sinkhorn", "swd_gen", "swd_flow", "swd_flow_r",
                                      "entropic_gan"};
static const char *const SPECS[] = {
    "{\"seed\": 1, \"privacy\": {\"epsilon\": 5, \"delta\": 1e-5}, \"train\": {\"steps\": 4, "
    "\"batch_size\": 16}, \"model\": {\"hidden\": [32]}}",
    "{\"seed\": 1, \"privacy\": {\"epsilon\": 5}, \"train\": {\"steps\": 4, \"batch_size\": 64}, "
    "\"projections\": {\"per_step\": 12}, \"model\": {\"hidden\": [32]}}",
    "{\"seed\": 1, \"privacy\": {\"epsilon\": 5}, \"flow\": {\"steps\": 4, \"particles\": 200}, "
    "\"projections\": {\"per_step\": 12, \"pool\": 24}}",
    "{\"seed\": 1, \"privacy\": {\"epsilon\": 5}, \"flow\": {\"steps\": 4, \"particles\": 200}, "
    "\"projections\": {\"per_step\": 12}}",
    "{\"seed\": 1, \"train\": {\"steps\": 4, \"batch_size\": 64}, \"model\": {\"hidden\": [32]}}",
};

START_TEST(every_method_trains_on_a_mixed_table)
{
    pg_threads_set(1);
    const pg_method *m = pg_method_find(METHODS[_i]);
    ck_assert_ptr_nonnull(m);
    bool local = strcmp(METHODS[_i], "entropic_gan") == 0;
    pg_table *t = table_of(MIXED);
    pg_dataset ds;
    make_rows(t, &ds, !local);
    pg_ldp_plan plan = {0};
    if (local) {
        pg_rng sec;
        ck_assert_int_eq(pg_rng_secure(&sec, NULL), PG_OK);
        ck_assert_int_eq(pg_ldp_plan_make(t, PG_LDP_LAPLACE, 12, 0, &plan, NULL), PG_OK);
        int64_t lab[ROWS];
        for (size_t i = 0; i < ROWS; i++) lab[i] = 0;
        pg_error err = {0};
        ck_assert_msg(pg_ldp_apply(&sec, t, &plan, ds.x, lab, ROWS, &err) == PG_OK, "%s", err.msg);
    }
    pg_data_desc desc = {.n = ROWS,
                         .d = t->width,
                         .ndim = 1,
                         .shape = {t->width},
                         .lo = (float)t->lo,
                         .hi = (float)t->hi,
                         .num_classes = local ? 0 : 2,
                         .model = local ? PG_PRIVACY_LOCAL : PG_PRIVACY_CENTRAL,
                         .epsilon = local ? plan.epsilon : 0,
                         .cap_epsilon = 100,
                         .cap_delta = 1e-5,
                         .table = t,
                         .ldp = local ? &plan : NULL};
    pg_job_data in = {.desc = &desc, .rows = &ds};
    pg_spec_errors e;
    json_t *r = pg_test_resolve(m, SPECS[_i], &in, &e);
    ck_assert_msg(r != NULL, "%s: %s: %s", METHODS[_i], e.items[0].field, e.items[0].message);
    /* defaults.h, typed tables: no logit gain unless asked for */
    if (strncmp(METHODS[_i], "swd_flow", 8) != 0)
        ck_assert(pg_spec_num(r, "model.logit_gain", -1) == 1.0);
    pg_trainer *tr = pg_test_train(m, r, &in, NULL);
    pg_snapshot *s;
    ck_assert_int_eq(m->snapshot(tr, &s, NULL), PG_OK);
    enum { S = 300 };
    float *y = pg_alloc_f32((size_t)S * t->width);
    ck_assert_int_eq(pg_snapshot_sample(s, S, 2, -1, y, NULL), PG_OK);
    bool generator = strncmp(METHODS[_i], "swd_flow", 8) != 0;
    for (size_t i = 0; i < S; i++) {
        const float *row = y + i * t->width;
        for (size_t u = 0; u < t->width; u++)
            ck_assert_msg(row[u] >= t->lo && row[u] <= t->hi, "%s: unit %zu = %g", METHODS[_i], u,
                          (double)row[u]);
        for (size_t c = 0; c < t->ncols; c++) {
            if (c == t->label) continue;
            pg_table_value v;
            pg_table_decode_value(t, c, row, 0, &v);
            const pg_table_col *col = &t->cols[c];
            if (v.missing) continue;
            if (col->type == PG_COL_CONTINUOUS || col->type == PG_COL_INTEGER)
                ck_assert(v.num >= col->min && v.num <= col->max);
            else if (col->type == PG_COL_CATEGORICAL)
                ck_assert_uint_lt(v.cat, col->ncat);
        }
        /* Generators: each softmax block is a distribution. */
        if (generator) {
            ck_assert(fabsf(row[3] + row[4] + row[5] - 1.0f) < 1e-4f);
            ck_assert(fabsf(row[6] + row[7] + row[8] - 1.0f) < 1e-4f);
            ck_assert(row[10] + row[11] <= 1.0f + 1e-4f);
        }
    }
    /* A request for fewer rows (another chunking: 100 < the 256-row sample
     * chunk) gets the first rows of the larger one, bit for bit: the heads'
     * Gumbel draws do not depend on how the rows were chunked. The service
     * draws typed rows class by class (a given label), as here. */
    enum { F = 100 };
    int lab = local || strcmp(METHODS[_i], "dp_sinkhorn") == 0 ? -1 : 1; /* conditional ones */
    float *f = pg_alloc_f32((size_t)F * t->width);
    ck_assert_int_eq(pg_snapshot_sample(s, S, 3, lab, y, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_sample(s, F, 3, lab, f, NULL), PG_OK);
    ck_assert_msg(!memcmp(f, y, (size_t)F * t->width * sizeof *f), "%s: prefix differs",
                  METHODS[_i]);
    pg_free(f);
    pg_free(y);
    pg_snapshot_release(s);

    unsigned char *bytes;
    size_t len;
    ck_assert_int_eq(m->save(tr, &bytes, &len, NULL), PG_OK);
    pg_test_checkpoint_round_trip(m, r, &in, bytes, len, 50, t->width, -1);
    /* Another table of the same width (categories renamed) and no table at
     * all: both refused. */
    char *other_text = strdup(MIXED);
    char *at = strstr(other_text, "\"u\"");
    at[1] = 'w';
    pg_table *other = table_of(other_text);
    pg_data_desc d2 = desc;
    d2.table = other;
    pg_job_data in2 = {.desc = &d2, .rows = &ds};
    pg_trainer *t2 = NULL;
    pg_error e2 = {0};
    ck_assert_int_eq(m->restore(r, &in2, 1, bytes, len, &t2, &e2), PG_EFORMAT);
    ck_assert_msg(strstr(e2.msg, "table") != NULL, "%s", e2.msg);
    if (!local) { /* a local typed job needs its table to validate at all */
        d2.table = NULL;
        e2 = (pg_error){0};
        ck_assert_int_ne(m->restore(r, &in2, 1, bytes, len, &t2, &e2), PG_OK);
    }
    pg_table_free(other);
    free(other_text);
    free(bytes);
    m->destroy(tr);
    json_decref(r);
    pg_dataset_free(&ds);
    pg_ldp_plan_free(&plan);
    pg_table_free(t);
}
END_TEST

/* model.logit_gain: refused on untyped rows unless 1; on a typed table a
 * given value wins over the default. */
START_TEST(logit_gain_needs_a_table)
{
    pg_table *t = table_of(MIXED);
    pg_dataset ds;
    make_rows(t, &ds, false);
    pg_data_desc desc = {.n = ROWS,
                         .d = t->width,
                         .ndim = 1,
                         .shape = {t->width},
                         .lo = (float)t->lo,
                         .hi = (float)t->hi,
                         .model = PG_PRIVACY_CENTRAL,
                         .cap_epsilon = 100,
                         .cap_delta = 1e-5};
    pg_job_data in = {.desc = &desc, .rows = &ds};
    const pg_method *m = pg_method_find("dp_sinkhorn");
    const char *spec = "{\"privacy\": {\"epsilon\": 5, \"delta\": 1e-5}, \"model\": "
                       "{\"logit_gain\": 2}}";
    pg_spec_errors e;
    json_t *r = pg_test_resolve(m, spec, &in, &e);
    ck_assert_ptr_null(r);
    ck_assert(pg_test_has_error(&e, "model.logit_gain"));
    desc.table = t;
    r = pg_test_resolve(m, spec, &in, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.count ? e.items[0].field : "",
                  e.count ? e.items[0].message : "");
    ck_assert(pg_spec_num(r, "model.logit_gain", -1) == 2.0);
    json_decref(r);
    pg_dataset_free(&ds);
    pg_table_free(t);
}
END_TEST

/* Item 2: the swd clip radius is the schema's norm bound (clipping never
 * changes a valid row), the release's sensitivity uses the schema's diameter,
 * and the epsilon the plan reports is the Gaussian accountant's for the
 * resolved noise multiplier. Unlabelled, then labelled (R = 2 nb / sqrt 3). */
START_TEST(swd_clip_and_sensitivity_follow_the_schema)
{
    pg_table *t = table_of(MIXED);
    double l1, nb, dl1, diam;
    pg_table_norm_bound(t, &l1, &nb);
    pg_table_diameter(t, &dl1, &diam);
    /* Independent values for the default range [-1, 1]: six encoded
     * columns, each of squared norm at most 1; squared diameters 4 (x),
     * 4 (n: values span 2, missing moves 1 + 1), 2, 2, 1, 2. */
    ck_assert(fabs(nb - sqrt(6.0)) < 1e-12);
    ck_assert(fabs(diam - sqrt(15.0)) < 1e-12);
    pg_dataset ds;
    bool labelled = _i == 1;
    make_rows(t, &ds, labelled);
    /* Every valid row is inside the clip ball. */
    double maxnorm = 0;
    for (size_t i = 0; i < ROWS; i++) {
        double s = 0;
        for (size_t u = 0; u < t->width; u++)
            s += (double)ds.x[i * t->width + u] * ds.x[i * t->width + u];
        maxnorm = fmax(maxnorm, sqrt(s));
    }
    ck_assert(maxnorm <= nb + 1e-9);
    pg_data_desc desc = {.n = ROWS,
                         .d = t->width,
                         .ndim = 1,
                         .shape = {t->width},
                         .lo = -1,
                         .hi = 1,
                         .num_classes = labelled ? 2 : 0,
                         .model = PG_PRIVACY_CENTRAL,
                         .cap_epsilon = 100,
                         .cap_delta = 1e-5,
                         .table = t};
    pg_job_data in = {.desc = &desc, .rows = &ds};
    const pg_method *m = pg_method_find("swd_flow");
    pg_spec_errors e;
    json_t *r = pg_test_resolve(
        m,
        "{\"privacy\": {\"epsilon\": 1, \"delta\": 1e-5}, \"projections\": {\"per_step\": 12, "
        "\"pool\": 12}, \"flow\": {\"steps\": 3}}",
        &in, &e);
    ck_assert_msg(r != NULL, "%s: %s", e.items[0].field, e.items[0].message);
    double R = pg_spec_num(r, "privacy.clip_norm", 0);
    double want_R = labelled ? 2.0 * nb / sqrt(3.0) : nb;
    ck_assert_msg(fabs(R - want_R) < 1e-9, "clip %.9f, schema bound %.9f", R, want_R);
    double alpha = pg_spec_num(r, "labels.class_alpha", 0);
    if (labelled) ck_assert(fabs(alpha - R / 2) < 1e-9);
    /* The privacy the trainer runs: sensitivity from the diameter. */
    size_t dim = t->width + (labelled ? 2 : 0);
    pg_swd_privacy p;
    double S;
    pg_error err = {0};
    ck_assert_msg(pg_swd_spec_privacy_get(r, &desc, 12, 1, 1.0, &p, &S, &err) == PG_OK, "%s",
                  err.msg);
    double want_diam = sqrt(15.0 + (labelled ? 2 * alpha * alpha : 0.0));
    ck_assert(want_diam < 2 * R);
    /* orthonormal block of 12 directions in dim >= 12: w = 1 */
    ck_assert_uint_eq(p.d, dim);
    ck_assert(fabs(p.sensitivity - want_diam * sqrt(p.w)) < 1e-9);
    ck_assert(fabs(p.w - 1.0) < 1e-12);
    /* swd_flow releases once on all rows: one Gaussian mechanism at noise
     * multiplier S, replace-one; with a label, plus the DP count of the label
     * (Gaussian, noise labels.count_noise = s, two counts move
     * under replace-one, RDP alpha / s^2). */
    pg_privacy_plan plan;
    ck_assert_int_eq(m->plan(r, &in, &plan, NULL), PG_OK);
    double eps, orders[PG_RDP_DEFAULT_ORDERS], curve[PG_RDP_DEFAULT_ORDERS];
    size_t no = pg_rdp_default_orders(orders, PG_RDP_DEFAULT_ORDERS);
    double sc = labelled ? pg_spec_num(r, "labels.count_noise", 0) : 0;
    for (size_t i = 0; i < no; i++)
        curve[i] = orders[i] / (2 * S * S) + (labelled ? orders[i] / (sc * sc) : 0.0);
    ck_assert_int_eq(pg_rdp_to_dp(orders, curve, no, 1e-5, PG_RDP_CONV_IMPROVED, &eps, NULL, NULL),
                     PG_OK);
    ck_assert_msg(fabs(plan.epsilon - eps) < 1e-9, "plan %.9f, accountant %.9f", plan.epsilon, eps);
    ck_assert(plan.epsilon <= 1.0 + 1e-9 && plan.epsilon > 0.99);
    /* An invalid row (a half-hot category) is refused by the trainer: the
     * diameter holds for valid encodings only. */
    ds.x[3 * t->width + 3] = 0.5f;
    pg_trainer *tr = NULL;
    ck_assert_int_eq(m->create(r, &in, 1, &tr, &err), PG_EINVAL);
    json_decref(r);
    pg_dataset_free(&ds);
    pg_table_free(t);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("methods/table_methods");
    TCase *tc = tcase_create("table_methods");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, heads_cover_every_unit_once);
    tcase_add_loop_test(tc, heads_gradient_matches_finite_differences, 0, 3);
    tcase_add_loop_test(tc, gumbel_heads_draw_the_softmax_law, 0, 2);
    tcase_add_test(tc, logit_gain_needs_a_table);
    tcase_add_test(tc, generator_parameter_gradient_through_heads);
    tcase_add_loop_test(tc, every_method_trains_on_a_mixed_table, 0, 5);
    tcase_add_loop_test(tc, swd_clip_and_sensitivity_follow_the_schema, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(suite)
