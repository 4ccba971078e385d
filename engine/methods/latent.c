/* latent - the public-data autoencoder of the latent particle flows (see
 * latent.h). */
#include "engine/core/fmt.h"
#include "engine/methods/latent.h"

#include <math.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/core/rng.h"
#include "engine/data/dataset.h"
#include "engine/methods/snapshot.h"
#include "engine/nn/nn.h"

/* Rows per forward pass when encoding or decoding outside training. */
#define CHUNK 256

struct pg_latent {
    atomic_long refs;
    size_t d, k;
    float lo, hi;
    char *arch[2];   /* encoder, decoder (canonical JSON) */
    float *param[2]; /* copies, for checkpoints */
    size_t nparam[2];
    pg_nn_snapshot *net[2];
    double mse;
};

enum { ENC = 0, DEC = 1 };

static void latent_free(pg_latent *ae)
{
    if (!ae) return;
    for (int i = 0; i < 2; i++) {
        free(ae->arch[i]);
        pg_free(ae->param[i]);
        pg_nn_snapshot_free(ae->net[i]);
    }
    free(ae);
}

void pg_latent_retain(pg_latent *ae)
{
    if (ae) atomic_fetch_add_explicit(&ae->refs, 1, memory_order_relaxed);
}

void pg_latent_release(pg_latent *ae)
{
    if (ae && atomic_fetch_sub_explicit(&ae->refs, 1, memory_order_acq_rel) == 1) latent_free(ae);
}

size_t pg_latent_dim(const pg_latent *ae)
{
    return ae->k;
}

size_t pg_latent_data_dim(const pg_latent *ae)
{
    return ae->d;
}

double pg_latent_train_mse(const pg_latent *ae)
{
    return ae->mse;
}

/* MLP arch JSON: in -> hidden (ReLU) ... -> out (+ sigmoid for the decoder). */
static char *mlp_arch(size_t in, const size_t *hidden, int nh, size_t out, bool sigmoid)
{
    json_t *layers = json_array();
    for (int i = 0; i < nh; i++) {
        json_array_append_new(
            layers, json_pack("{s:s,s:I}", "type", "linear", "out", (json_int_t)hidden[i]));
        json_array_append_new(layers, json_pack("{s:s}", "type", "relu"));
    }
    json_array_append_new(layers, json_pack("{s:s,s:I}", "type", "linear", "out", (json_int_t)out));
    if (sigmoid) json_array_append_new(layers, json_pack("{s:s}", "type", "sigmoid"));
    json_t *a = json_pack("{s:I,s:s,s:o}", "input", (json_int_t)in, "init", "kaiming_uniform",
                          "layers", layers);
    char *s = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    return s;
}

/* Freezes a trained (or loaded) network into the autoencoder. */
static int adopt(pg_latent *ae, int which, pg_nn *net, pg_error *err)
{
    ae->nparam[which] = pg_nn_param_count(net);
    ae->arch[which] = strdup(pg_nn_arch(net));
    ae->param[which] = pg_alloc_f32(ae->nparam[which]);
    if (!ae->arch[which] || !ae->param[which])
        return pg_error_set(err, PG_ENOMEM, "cannot allocate the autoencoder");
    memcpy(ae->param[which], pg_nn_params(net), ae->nparam[which] * sizeof(float));
    pg_nn_set_train(net, false);
    return pg_nn_snapshot_take(net, &ae->net[which], err);
}

/* z (rows of stride zs) <- z / |z| over the first k values; returns the norms
 * into nrm (may be NULL). */
static void normalize_rows(float *z, size_t n, size_t k, size_t zs, float *nrm)
{
    for (size_t i = 0; i < n; i++) {
        float *r = z + i * zs;
        double s = 0.0;
        for (size_t j = 0; j < k; j++) s += (double)r[j] * r[j];
        float q = (float)sqrt(s);
        if (nrm) nrm[i] = q;
        if (q > 0.0f)
            for (size_t j = 0; j < k; j++) r[j] /= q;
    }
}

int pg_latent_train(const pg_latent_cfg *cfg, const pg_dataset *pub, float lo, float hi,
                    pg_latent **out, pg_error *err)
{
    *out = NULL;
    if (!pub || pub->n == 0 || cfg->dim == 0 || cfg->steps < 1 || cfg->batch == 0 ||
        cfg->nhidden < 0 || cfg->nhidden > PG_LATENT_MAX_HIDDEN || !(hi > lo) || !(cfg->lr > 0))
        return pg_error_set(err, PG_EINVAL, "the autoencoder needs public rows and a valid setup");
    size_t d = pub->d, k = cfg->dim, b = cfg->batch < pub->n ? cfg->batch : pub->n;
    pg_latent *ae = calloc(1, sizeof *ae);
    if (!ae) return pg_error_set(err, PG_ENOMEM, "cannot allocate the autoencoder");
    atomic_init(&ae->refs, 1);
    ae->d = d;
    ae->k = k;
    ae->lo = lo;
    ae->hi = hi;
    ae->mse = NAN;
    char *ea = mlp_arch(d, cfg->hidden, cfg->nhidden, k, false);
    size_t rev[PG_LATENT_MAX_HIDDEN];
    for (int i = 0; i < cfg->nhidden; i++) rev[i] = cfg->hidden[cfg->nhidden - 1 - i];
    char *da = mlp_arch(k, rev, cfg->nhidden, d, true);
    pg_nn *enc = NULL, *dec = NULL;
    pg_nn_opt *oe = NULL, *od = NULL;
    float *x = pg_alloc_f32(b * d), *z = pg_alloc_f32(b * k), *g = pg_alloc_f32(b * d);
    float *gz = pg_alloc_f32(b * k), *nrm = pg_alloc_f32(b);
    uint32_t *perm = pg_alloc(pub->n * sizeof(uint32_t));
    pg_nn_opt_config oc = pg_nn_opt_defaults(PG_NN_ADAM);
    oc.lr = (float)cfg->lr;
    int rc = PG_OK;
    if (!ea || !da || !x || !z || !g || !gz || !nrm || !perm)
        rc = pg_error_set(err, PG_ENOMEM, "cannot allocate the autoencoder");
    if (!rc) rc = pg_nn_create(ea, b, cfg->seed, &enc, err);
    if (!rc) rc = pg_nn_create(da, b, cfg->seed ^ 0x5bd1e995u, &dec, err);
    if (!rc) rc = pg_nn_opt_create(&oc, pg_nn_param_count(enc), &oe, err);
    if (!rc) rc = pg_nn_opt_create(&oc, pg_nn_param_count(dec), &od, err);
    pg_rng rng;
    pg_rng_seeded(&rng, cfg->seed, 7);
    for (size_t i = 0; i < pub->n; i++) perm[i] = (uint32_t)i;
    size_t pos = pub->n; /* reshuffle before the first batch */
    const float scale = 1.0f / (hi - lo);
    double epoch_sum = 0.0, last = NAN;
    size_t epoch_vals = 0;
    for (long s = 0; !rc && s < cfg->steps; s++) {
        if (pos + b > pub->n) { /* a new epoch: shuffle (public data: seeded is fine) */
            if (epoch_vals) last = epoch_sum / (double)epoch_vals;
            epoch_sum = 0.0;
            epoch_vals = 0;
            for (size_t i = pub->n - 1; i > 0; i--) {
                size_t j = (size_t)pg_rng_below(&rng, i + 1);
                uint32_t t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
            }
            pos = 0;
        }
        for (size_t i = 0; i < b; i++) {
            const float *src = pub->x + (size_t)perm[pos + i] * d;
            for (size_t j = 0; j < d; j++) {
                float v = (src[j] - lo) * scale;
                x[i * d + j] = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
            }
        }
        pos += b;
        const float *u, *y;
        if ((rc = pg_nn_forward(enc, x, NULL, b, &u, err))) break;
        memcpy(z, u, b * k * sizeof(float));
        normalize_rows(z, b, k, k, nrm);
        if ((rc = pg_nn_forward(dec, z, NULL, b, &y, err))) break;
        double sum = 0.0;
        const float two = 2.0f / (float)(b * d);
        for (size_t i = 0; i < b * d; i++) {
            float e = y[i] - x[i];
            sum += (double)e * e;
            g[i] = two * e;
        }
        if (!isfinite(sum)) {
            rc = pg_error_set(err, PG_ENUMERIC, "autoencoder training diverged: lower latent.lr");
            break;
        }
        epoch_sum += sum;
        epoch_vals += b * d;
        pg_nn_zero_grad(enc);
        pg_nn_zero_grad(dec);
        if ((rc = pg_nn_backward(dec, g, gz, err))) break;
        /* Through z = u / |u|: du = (gz - z (z . gz)) / |u|. */
        for (size_t i = 0; i < b; i++) {
            float *gr = gz + i * k;
            const float *zr = z + i * k;
            double dot = 0.0;
            for (size_t j = 0; j < k; j++) dot += (double)zr[j] * gr[j];
            float inv = nrm[i] > 1e-12f ? 1.0f / nrm[i] : 0.0f;
            for (size_t j = 0; j < k; j++) gr[j] = (gr[j] - (float)dot * zr[j]) * inv;
        }
        if ((rc = pg_nn_backward(enc, gz, NULL, err))) break;
        if ((rc = pg_nn_opt_step_net(oe, enc, err)) || (rc = pg_nn_opt_step_net(od, dec, err)))
            break;
    }
    if (!rc) {
        ae->mse = isnan(last) ? epoch_sum / (double)(epoch_vals ? epoch_vals : 1) : last;
        if (!(rc = adopt(ae, ENC, enc, err))) rc = adopt(ae, DEC, dec, err);
    }
    free(ea);
    free(da);
    pg_nn_free(enc);
    pg_nn_free(dec);
    pg_nn_opt_free(oe);
    pg_nn_opt_free(od);
    pg_free(x);
    pg_free(z);
    pg_free(g);
    pg_free(gz);
    pg_free(nrm);
    pg_free(perm);
    if (rc) {
        latent_free(ae);
        return rc;
    }
    *out = ae;
    return PG_OK;
}

int pg_latent_encode(const pg_latent *ae, const float *x, size_t n, float *z, size_t zstride,
                     pg_error *err)
{
    if (zstride < ae->k) return pg_error_set(err, PG_EINVAL, "latent rows are too narrow");
    pg_nn_ws *ws;
    size_t c = n < CHUNK ? (n ? n : 1) : CHUNK;
    int rc = pg_nn_ws_create(ae->net[ENC], c, &ws, err);
    if (rc) return rc;
    float *buf = pg_alloc_f32(c * ae->d);
    if (!buf) rc = pg_error_set(err, PG_ENOMEM, "cannot allocate the encoder's scratch");
    const float scale = 1.0f / (ae->hi - ae->lo);
    for (size_t r0 = 0; !rc && r0 < n; r0 += c) {
        size_t m = n - r0 < c ? n - r0 : c;
        for (size_t i = 0; i < m * ae->d; i++) {
            float v = (x[r0 * ae->d + i] - ae->lo) * scale;
            buf[i] = v < 0.0f ? 0.0f : v > 1.0f ? 1.0f : v;
        }
        const float *u;
        if ((rc = pg_nn_snapshot_forward(ae->net[ENC], ws, buf, NULL, m, &u, err))) break;
        for (size_t i = 0; i < m; i++)
            memcpy(z + (r0 + i) * zstride, u + i * ae->k, ae->k * sizeof(float));
        normalize_rows(z + r0 * zstride, m, ae->k, zstride, NULL);
    }
    pg_free(buf);
    pg_nn_ws_free(ws);
    return rc;
}

int pg_latent_decode(const pg_latent *ae, const float *z, size_t n, size_t zstride, float *x,
                     pg_error *err)
{
    if (zstride < ae->k) return pg_error_set(err, PG_EINVAL, "latent rows are too narrow");
    pg_nn_ws *ws;
    size_t c = n < CHUNK ? (n ? n : 1) : CHUNK;
    int rc = pg_nn_ws_create(ae->net[DEC], c, &ws, err);
    if (rc) return rc;
    float *buf = pg_alloc_f32(c * ae->k);
    if (!buf) rc = pg_error_set(err, PG_ENOMEM, "cannot allocate the decoder's scratch");
    for (size_t r0 = 0; !rc && r0 < n; r0 += c) {
        size_t m = n - r0 < c ? n - r0 : c;
        for (size_t i = 0; i < m; i++)
            memcpy(buf + i * ae->k, z + (r0 + i) * zstride, ae->k * sizeof(float));
        /* The decoder was trained on the sphere; particles only approach it. */
        normalize_rows(buf, m, ae->k, ae->k, NULL);
        const float *y;
        if ((rc = pg_nn_snapshot_forward(ae->net[DEC], ws, buf, NULL, m, &y, err))) break;
        for (size_t i = 0; i < m * ae->d; i++)
            x[r0 * ae->d + i] = ae->lo + (ae->hi - ae->lo) * y[i];
    }
    pg_free(buf);
    pg_nn_ws_free(ws);
    return rc;
}

/* ---- checkpoints --------------------------------------------------------- */

static const char *const TNAME[2] = {"latent.encoder", "latent.decoder"};

json_t *pg_latent_to_json(const pg_latent *ae)
{
    json_t *e = json_loads(ae->arch[ENC], 0, NULL), *dj = json_loads(ae->arch[DEC], 0, NULL);
    json_t *j =
        json_pack("{s:I,s:I,s:f,s:f,s:o,s:o}", "d", (json_int_t)ae->d, "k", (json_int_t)ae->k, "lo",
                  (double)ae->lo, "hi", (double)ae->hi, "encoder", e, "decoder", dj);
    /* The setup's outcome, for whoever reads the checkpoint (informational). */
    if (j && isfinite(ae->mse)) json_object_set_new(j, "train_mse", json_real(ae->mse));
    return j;
}

void pg_latent_tensors(const pg_latent *ae, pg_ckpt_tensor ts[2])
{
    for (int i = 0; i < 2; i++)
        ts[i] = (pg_ckpt_tensor){
            .name = TNAME[i], .ndim = 1, .dims = {ae->nparam[i]}, .data = ae->param[i]};
}

int pg_latent_from_ckpt(const json_t *j, const pg_ckpt *ck, pg_latent **out, pg_error *err)
{
    *out = NULL;
    json_int_t d = json_integer_value(json_object_get(j, "d"));
    json_int_t k = json_integer_value(json_object_get(j, "k"));
    double lo = json_number_value(json_object_get(j, "lo"));
    double hi = json_number_value(json_object_get(j, "hi"));
    if (d <= 0 || d > PG_NN_MAX_DIM || k <= 0 || k > PG_NN_MAX_DIM || !isfinite(lo) ||
        !isfinite(hi) || !(hi > lo))
        return pg_error_set(err, PG_EFORMAT, "checkpoint autoencoder is malformed");
    pg_latent *ae = calloc(1, sizeof *ae);
    if (!ae) return pg_error_set(err, PG_ENOMEM, "cannot allocate the autoencoder");
    atomic_init(&ae->refs, 1);
    ae->d = (size_t)d;
    ae->k = (size_t)k;
    ae->lo = (float)lo;
    ae->hi = (float)hi;
    const json_t *mj = json_object_get(j, "train_mse");
    ae->mse = json_is_number(mj) && json_number_value(mj) >= 0 ? json_number_value(mj) : NAN;
    int rc = PG_OK;
    static const char *const KEY[2] = {"encoder", "decoder"};
    for (int i = 0; !rc && i < 2; i++) {
        char *a = json_dumps(json_object_get(j, KEY[i]), JSON_COMPACT);
        pg_nn *net = NULL;
        const pg_ckpt_tensor *t = pg_ckpt_find(ck, TNAME[i]);
        if (!a || !t) rc = pg_error_set(err, PG_EFORMAT, "checkpoint autoencoder is incomplete");
        if (!rc && pg_nn_create(a, 1, 0, &net, NULL) != PG_OK)
            rc = pg_error_set(err, PG_EFORMAT, "checkpoint autoencoder architecture is invalid");
        size_t in = i == ENC ? ae->d : ae->k, o = i == ENC ? ae->k : ae->d;
        if (!rc &&
            (pg_nn_in_size(net) != in || pg_nn_out_size(net) != o || pg_nn_num_classes(net) != 0 ||
             pg_nn_state_count(net) != 0 || t->ndim != 1 || t->dims[0] != pg_nn_param_count(net)))
            rc = pg_error_set(err, PG_EFORMAT, "checkpoint autoencoder does not match its shape");
        for (size_t q = 0; !rc && q < pg_nn_param_count(net); q++)
            if (!isfinite(t->data[q]))
                rc = pg_error_set(err, PG_EFORMAT, "checkpoint autoencoder is not finite");
        if (!rc) {
            memcpy(pg_nn_params(net), t->data, pg_nn_param_count(net) * sizeof(float));
            rc = adopt(ae, i, net, err);
        }
        pg_nn_free(net);
        free(a);
    }
    if (rc) {
        latent_free(ae);
        return rc;
    }
    *out = ae;
    return PG_OK;
}

/* ---- snapshots ------------------------------------------------------------ */

typedef struct latent_snap {
    pg_latent *ae;
    pg_snapshot *inner;
    size_t zd; /* width of the inner snapshot's rows */
} latent_snap;

static int snap_sample(const void *impl, size_t n, uint64_t seed, int label, float *out,
                       pg_error *err)
{
    const latent_snap *s = impl;
    /* One inner draw for all n: the particle snapshot hands out its final
     * particles first and replays only beyond them, which chunked draws
     * would repeat. Latent rows are k << d wide, so this is small. */
    float *z = pg_alloc_f32((n ? n : 1) * s->zd);
    if (!z) return pg_error_set(err, PG_ENOMEM, "cannot allocate latent samples");
    int rc = pg_snapshot_sample(s->inner, n, seed, label, z, err);
    if (!rc) rc = pg_latent_decode(s->ae, z, n, s->zd, out, err);
    pg_free(z);
    return rc;
}

static void snap_destroy(void *impl)
{
    latent_snap *s = impl;
    pg_snapshot_release(s->inner);
    pg_latent_release(s->ae);
    free(s);
}

static const pg_snapshot_ops LATENT_SNAP = {snap_sample, snap_destroy, NULL};

int pg_latent_snapshot_wrap(pg_latent *ae, pg_snapshot *inner, pg_snapshot **out, pg_error *err)
{
    *out = NULL;
    if (pg_snapshot_dim(inner) < ae->k) {
        pg_snapshot_release(inner);
        return pg_error_set(err, PG_EINVAL, "latent snapshot rows are narrower than the code");
    }
    latent_snap *s = calloc(1, sizeof *s);
    if (!s) {
        pg_snapshot_release(inner);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate a snapshot");
    }
    pg_latent_retain(ae);
    s->ae = ae;
    s->inner = inner;
    s->zd = pg_snapshot_dim(inner);
    return pg_snapshot_new(&LATENT_SNAP, s, pg_snapshot_step(inner), ae->d,
                           pg_snapshot_num_classes(inner), out, err);
}

/* ---- spec ------------------------------------------------------------------ */

const char *const pg_latent_archs[] = {"mlp", NULL};

/* Autoencoder training above this many multiply-adds (about 6 per parameter
 * per row per step) is refused: create() trains it in one call. */
#define TRAIN_FLOP_CAP 1e13

bool pg_latent_spec_on(const json_t *r)
{
    return json_is_object(pg_spec_get(r, "latent"));
}

void pg_latent_spec_cfg(const json_t *r, uint64_t seed, pg_latent_cfg *c)
{
    memset(c, 0, sizeof *c);
    c->dim = (size_t)pg_spec_int(r, "latent.dim", 16);
    const json_t *h = pg_spec_get(r, "latent.hidden");
    for (size_t i = 0; i < json_array_size(h) && i < PG_LATENT_MAX_HIDDEN; i++)
        c->hidden[c->nhidden++] = (size_t)json_integer_value(json_array_get(h, i));
    c->steps = pg_spec_int(r, "latent.steps", 2000);
    c->batch = (size_t)pg_spec_int(r, "latent.batch", 128);
    c->lr = pg_spec_num(r, "latent.lr", 1e-3);
    c->seed = seed;
}

pg_data_desc pg_latent_flow_desc(const json_t *r, const pg_data_desc *desc)
{
    pg_data_desc f = *desc;
    if (pg_latent_spec_on(r)) {
        f.d = (size_t)pg_spec_int(r, "latent.dim", 16);
        f.ndim = 1;
        f.shape[0] = f.d;
        f.shape[1] = f.shape[2] = 0;
        f.lo = -1.0f;
        f.hi = 1.0f;
    }
    return f;
}

void pg_latent_spec_validate(json_t *r, const json_t *spec, const pg_job_data *in,
                             pg_spec_errors *errors)
{
    if (!in->public_desc) {
        if (pg_spec_get(spec, "latent"))
            pg_spec_error_add(errors, "latent",
                              "latent mode trains an autoencoder on public data: give "
                              "public_dataset_id");
        json_object_del(r, "latent");
        return;
    }
    const pg_data_desc *p = in->public_desc, *d = in->desc;
    if (p->model != PG_PRIVACY_PUBLIC)
        pg_spec_error_add(errors, "public_dataset_id", "the dataset is not declared public");
    else if (p->d != d->d)
        pg_spec_error_add(errors, "public_dataset_id",
                          "its rows have %zu values, the private rows %zu", p->d, d->d);
    else if (p->n == 0)
        pg_spec_error_add(errors, "public_dataset_id", "the public dataset has no rows");
    /* Rows are codes on the unit sphere, or on labelled data (swd_spec.h)
     * [code ; alpha onehot(y)] of norm sqrt(1 + alpha^2) exactly: that is
     * the clip norm, so clipping never distorts a row. alpha defaults to 1,
     * the code's own scale. */
    double alpha = 0.0;
    if (d->num_classes > 0) {
        const json_t *a = pg_spec_get(r, "labels.class_alpha");
        alpha = a ? json_number_value(a) : 1.0;
        if (!a) pg_spec_set(r, "labels.class_alpha", json_real(alpha));
    }
    double R = sqrt(1.0 + alpha * alpha);
    const json_t *clip = pg_spec_get(spec, "privacy.clip_norm");
    char fr[PG_FMT_F64_MAX];
    if (clip && fabs(json_number_value(clip) - R) > 1e-12 * R)
        pg_spec_error_add(errors, "privacy.clip_norm",
                          "latent rows [code ; alpha onehot(y)] have norm sqrt(1 + alpha^2) = "
                          "%s: leave privacy.clip_norm out",
                          pg_fmt_f64(R, fr));
    pg_spec_set(r, "privacy.clip_norm", json_real(R));
    pg_latent_cfg c;
    pg_latent_spec_cfg(r, 0, &c);
    double params = 0.0, prev = (double)d->d;
    for (int i = 0; i < c.nhidden; i++) {
        params += (prev + 1.0) * (double)c.hidden[i];
        prev = (double)c.hidden[i];
    }
    params += (prev + 1.0) * (double)c.dim;
    params *= 2.0; /* the decoder mirrors the encoder (up to biases) */
    double rows = (double)(c.batch < p->n ? c.batch : p->n);
    double flops = 6.0 * params * rows * (double)c.steps;
    if (flops > TRAIN_FLOP_CAP)
        pg_spec_error_add(errors, "latent.steps",
                          "autoencoder training would take about %.3g multiply-adds (limit %.3g): "
                          "use fewer steps, a smaller batch or narrower layers",
                          flops, TRAIN_FLOP_CAP);
    if (c.dim > d->d)
        pg_spec_error_add(errors, "latent.dim", "must not exceed the row width %zu", d->d);
}
