#include "engine/methods/generator.h"

#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/data/table.h"
#include "engine/methods/calib_copula.h"
#include "engine/methods/calib_table.h"
#include "engine/methods/label_count.h"
#include "engine/methods/snapshot.h"
#include "engine/methods/trainer.h"

const char *const pg_generator_archs[] = {"mlp", "conv_small", "dcgan28", "dcgan32", NULL};
const char *const pg_generator_latents[] = {"uniform", "normal", NULL};
const char *const pg_generator_activations[] = {"relu", "leaky_relu", "tanh", "sigmoid", NULL};
const char *const pg_generator_out_activations[] = {"auto", "none", "tanh", "sigmoid", NULL};
const char *const pg_generator_numeric_heads[] = {"tanh", "clip", NULL};

/* Maps an output activation's range [a, b] onto the data range [lo, hi]. */
static void set_affine(pg_generator *g, const char *out_act, float lo, float hi)
{
    float a = 0, b = 0;
    if (strcmp(out_act, "tanh") == 0)
        a = -1, b = 1;
    else if (strcmp(out_act, "sigmoid") == 0)
        a = 0, b = 1;
    if (b > a) {
        g->out_scale = (hi - lo) / (b - a);
        g->out_shift = lo - a * g->out_scale;
    } else {
        g->out_scale = 1.0f;
        g->out_shift = 0.0f;
    }
}

static bool image_shape(const pg_data_desc *d, size_t c, size_t hw)
{
    return d->ndim == 3 && (c == 0 || d->shape[0] == c) && d->shape[1] == hw && d->shape[2] == hw;
}

int pg_generator_config(const json_t *r, const pg_data_desc *desc, pg_generator *g,
                        pg_spec_errors *errors, pg_error *err)
{
    memset(g, 0, sizeof *g);
    int before = errors->count;
    const char *arch = pg_spec_str(r, "model.arch", "mlp");
    snprintf(g->arch, sizeof g->arch, "%s", arch);
    bool conditional = pg_spec_bool(r, "model.conditional", false);
    if (conditional && desc->num_classes <= 0)
        pg_spec_error_add(errors, "model.conditional",
                          "the dataset has no labels, so the generator cannot be conditional");
    /* The samples of a labelled table carry its label column, and only a
     * conditional generator models the label: an unconditional
     * one would serve rows without it, or with classes drawn apart from
     * the rows. */
    if (!conditional && desc->table && desc->table->label != PG_TABLE_NONE && desc->num_classes > 0)
        pg_spec_error_add(errors, "model.conditional",
                          "must be true on a table with a label: the samples carry the label "
                          "column and only a conditional generator models it (leave it out for "
                          "the default, or drop the schema's label)");
    g->num_classes = conditional ? desc->num_classes : 0;
    g->latent.kind = strcmp(pg_spec_str(r, "model.latent", "uniform"), "normal") == 0
                         ? PG_NN_LATENT_NORMAL
                         : PG_NN_LATENT_UNIFORM;
    g->latent.a = -1.0f;
    g->latent.b = 1.0f;
    g->d = desc->d;

    json_t *o = json_object();
    const char *out_act = "none";
    long latent = pg_spec_int(r, "model.latent_dim", 0);
    if (strcmp(arch, "mlp") == 0) {
        if (!latent) latent = 32;
        out_act = pg_spec_str(r, "model.out_activation", "auto");
        if (desc->table && strcmp(out_act, "auto") != 0 && strcmp(out_act, "none") != 0)
            pg_spec_error_add(errors, "model.out_activation",
                              "a typed table has per-column output heads: use auto or none");
        if (strcmp(out_act, "auto") == 0) out_act = "none";
        json_object_set_new(o, "out", json_integer((json_int_t)desc->d));
        json_object_set(o, "hidden", (json_t *)pg_spec_get(r, "model.hidden"));
        json_object_set_new(o, "activation",
                            json_string(pg_spec_str(r, "model.activation", "relu")));
        json_object_set_new(o, "out_activation", json_string(out_act));
        json_object_set_new(o, "batchnorm",
                            json_boolean(pg_spec_bool(r, "model.batchnorm", false)));
        json_object_set_new(o, "classes", json_integer(g->num_classes));
        long up = pg_spec_int(r, "model.upsample", 1);
        if (up > 1) {
            if (desc->ndim != 3 || desc->shape[1] % (size_t)up || desc->shape[2] % (size_t)up)
                pg_spec_error_add(errors, "model.upsample",
                                  "needs image rows (c, h, w) whose height and width are "
                                  "multiples of %ld",
                                  up);
            else
                json_object_set_new(o, "image",
                                    json_pack("[I,I,I]", (json_int_t)desc->shape[0],
                                              (json_int_t)desc->shape[1],
                                              (json_int_t)desc->shape[2]));
            json_object_set_new(o, "upsample", json_integer(up));
        }
    } else if (strcmp(arch, "conv_small") == 0) {
        if (!latent) latent = 10;
        out_act = "sigmoid";
        if (!image_shape(desc, 0, 28))
            pg_spec_error_add(errors, "model.arch", "conv_small generates Cx28x28 images");
        else
            json_object_set_new(o, "out_channels", json_integer((json_int_t)desc->shape[0]));
        json_object_set_new(o, "classes", json_integer(g->num_classes));
    } else if (strcmp(arch, "dcgan28") == 0) {
        if (!latent) latent = 12;
        out_act = "tanh";
        if (!image_shape(desc, 0, 28))
            pg_spec_error_add(errors, "model.arch", "dcgan28 generates Cx28x28 images");
        else
            json_object_set_new(o, "channels", json_integer((json_int_t)desc->shape[0]));
        json_object_set_new(o, "classes", json_integer(g->num_classes));
        json_object_set_new(o, "embed", json_integer(g->num_classes ? 4 : 0));
    } else {
        if (!latent) latent = 100;
        out_act = "tanh";
        if (!image_shape(desc, 0, 32))
            pg_spec_error_add(errors, "model.arch", "dcgan32 generates Cx32x32 images");
        else
            json_object_set_new(o, "channels", json_integer((json_int_t)desc->shape[0]));
        json_object_set_new(o, "classes", json_integer(g->num_classes));
    }
    if (strcmp(arch, "mlp") != 0 && pg_spec_int(r, "model.upsample", 1) > 1)
        pg_spec_error_add(errors, "model.upsample", "applies to the mlp generator only");
    json_object_set_new(o, "latent", json_integer(latent));
    g->latent_dim = (size_t)latent;
    set_affine(g, out_act, desc->lo, desc->hi);
    if (!desc->table && pg_spec_num(r, "model.logit_gain", 1.0) != 1.0)
        pg_spec_error_add(errors, "model.logit_gain", "applies to typed tables only; must be 1");
    bool clip = strcmp(pg_spec_str(r, "model.numeric_head", "tanh"), "clip") == 0;
    if (!desc->table && clip)
        pg_spec_error_add(errors, "model.numeric_head", "applies to typed tables only");
    if (desc->table && errors->count == before) {
        if (strcmp(arch, "mlp") != 0)
            pg_spec_error_add(errors, "model.arch", "a typed table needs the mlp generator");
        else if (desc->table->width != desc->d)
            pg_spec_error_add(errors, "dataset_id",
                              "the table's encoded width %zu differs from the rows' %zu values",
                              desc->table->width, desc->d);
        else {
            int hrc = pg_heads_from_table(desc->table, PG_HEADS_TAU, &g->heads, err);
            if (hrc) {
                json_decref(o);
                pg_generator_free(g);
                return hrc;
            }
            g->heads->gain = (float)pg_spec_num(r, "model.logit_gain", 1.0);
            g->heads->numeric = clip ? PG_HEADS_NUMERIC_CLIP : PG_HEADS_NUMERIC_TANH;
            g->table_map = pg_table_to_json(desc->table);
            if (!g->table_map) {
                json_decref(o);
                pg_generator_free(g);
                return pg_error_set(err, PG_ENOMEM, "cannot encode the table map");
            }
        }
    }
    g->options = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    if (!g->options) return pg_error_set(err, PG_ENOMEM, "cannot encode generator options");
    if (errors->count != before) {
        pg_generator_free(g);
        return PG_EINVAL;
    }
    /* Build once at batch 1: catches every remaining inconsistency (sizes,
     * limits) as a field error before any data is touched. */
    pg_nn *net = NULL;
    pg_error e2 = {0};
    if (pg_generator_build(g, 1, 0, &net, &e2) != PG_OK) {
        pg_spec_error_add(errors, "model", "%s", e2.msg);
        pg_generator_free(g);
        return PG_EINVAL;
    }
    bool ok = pg_nn_out_size(net) == desc->d;
    pg_nn_free(net);
    if (!ok) {
        pg_spec_error_add(errors, "model.arch",
                          "the generator's output size does not match the "
                          "dataset's %zu values per row",
                          desc->d);
        pg_generator_free(g);
        return PG_EINVAL;
    }
    return PG_OK;
}

void pg_generator_free(pg_generator *g)
{
    if (!g) return;
    free(g->options);
    g->options = NULL;
    pg_heads_free(g->heads);
    g->heads = NULL;
    json_decref(g->table_map);
    g->table_map = NULL;
    pg_qmap_free(g->qmap);
    g->qmap = NULL;
}

int pg_generator_build(const pg_generator *g, size_t max_batch, uint64_t seed, pg_nn **net,
                       pg_error *err)
{
    return pg_nn_create_preset(g->arch, g->options, max_batch, seed, net, err);
}

void pg_generator_to_data(const pg_generator *g, pg_rng *rng, float *x, size_t stride, size_t rows)
{
    if (g->heads) {
        pg_heads_forward(g->heads, rng, x, stride, rows);
        return;
    }
    if (g->out_scale == 1.0f && g->out_shift == 0.0f) return;
    for (size_t r = 0; r < rows; r++)
        for (size_t i = 0; i < g->d; i++)
            x[r * stride + i] = g->out_scale * x[r * stride + i] + g->out_shift;
}

void pg_generator_grad_to_net(const pg_generator *g, const float *y, size_t ystride, float *grad,
                              size_t rows)
{
    if (g->heads) {
        pg_heads_backward(g->heads, y, ystride, grad, rows);
        return;
    }
    if (g->out_scale == 1.0f) return;
    for (size_t i = 0; i < rows * g->d; i++) grad[i] *= g->out_scale;
}

int pg_generator_check_saved(const pg_generator *g, const json_t *saved, pg_error *err)
{
    const json_t *map = json_object_get(saved, "table");
    if (json_is_null(map)) map = NULL;
    if (!g->table_map && !map) return PG_OK;
    if (!g->table_map || !map)
        return pg_error_set(err, PG_EFORMAT,
                            g->table_map ? "the checkpoint was trained on untyped rows, the job "
                                           "has a typed table"
                                         : "the checkpoint was trained on a typed table, the "
                                           "job's rows are untyped");
    if (!json_equal((json_t *)map, g->table_map))
        return pg_error_set(err, PG_EFORMAT,
                            "the checkpoint's table layout differs from the job's table");
    return PG_OK;
}

json_t *pg_generator_to_json(const pg_generator *gen)
{
    json_t *j = json_pack("{s:s,s:i,s:I,s:I,s:I,s:f,s:f}", "arch", gen->arch, "latent_kind",
                          gen->latent.kind, "latent_dim", (json_int_t)gen->latent_dim,
                          "num_classes", (json_int_t)gen->num_classes, "d", (json_int_t)gen->d,
                          "out_scale", (double)gen->out_scale, "out_shift", (double)gen->out_shift);
    if (j && gen->table_map &&
        (json_object_set(j, "table", gen->table_map) ||
         json_object_set_new(j, "heads_tau", json_real(gen->heads->tau)) ||
         json_object_set_new(j, "heads_gain", json_real(gen->heads->gain)) ||
         (gen->heads->numeric == PG_HEADS_NUMERIC_CLIP &&
          json_object_set_new(j, "heads_numeric", json_string("clip"))))) {
        json_decref(j);
        return NULL;
    }
    if (j && gen->qmap && json_object_set_new(j, "qmap", pg_qmap_to_json(gen->qmap))) {
        json_decref(j);
        return NULL;
    }
    return j;
}

int pg_generator_from_json(const json_t *j, pg_generator *gen, pg_error *err)
{
    memset(gen, 0, sizeof *gen);
    const char *arch = json_string_value(json_object_get(j, "arch"));
    json_int_t kind = json_integer_value(json_object_get(j, "latent_kind"));
    json_int_t ld = json_integer_value(json_object_get(j, "latent_dim"));
    json_int_t nc = json_integer_value(json_object_get(j, "num_classes"));
    json_int_t d = json_integer_value(json_object_get(j, "d"));
    if (!arch || ld <= 0 || ld > 65536 || nc < 0 || nc > 100000 || d <= 0 ||
        (kind != PG_NN_LATENT_NORMAL && kind != PG_NN_LATENT_UNIFORM) ||
        !json_is_number(json_object_get(j, "out_scale")))
        return pg_error_set(err, PG_EFORMAT, "checkpoint generator description is malformed");
    snprintf(gen->arch, sizeof gen->arch, "%s", arch);
    gen->latent.kind = (int)kind;
    gen->latent.a = -1.0f;
    gen->latent.b = 1.0f;
    gen->latent_dim = (size_t)ld;
    gen->num_classes = (int)nc;
    gen->d = (size_t)d;
    gen->out_scale = (float)json_number_value(json_object_get(j, "out_scale"));
    gen->out_shift = (float)json_number_value(json_object_get(j, "out_shift"));
    const json_t *map = json_object_get(j, "table");
    if (!map || json_is_null(map)) return PG_OK;
    const json_t *qm = json_object_get(j, "qmap");
    if (qm && !json_is_null(qm)) {
        int qrc = pg_qmap_from_json(qm, gen->d, &gen->qmap, err);
        if (qrc) return qrc;
    }
    /* The map is parsed and checked like a schema: the heads follow from it. */
    pg_table *t = NULL;
    double tau = json_number_value(json_object_get(j, "heads_tau"));
    int rc = pg_table_from_json(map, &t, err);
    if (rc == PG_OK && (t->width != gen->d || !(tau > 0.0) || !isfinite(tau) || tau > 100.0))
        rc = pg_error_set(err, PG_EFORMAT, "checkpoint table map does not match its generator");
    /* Checkpoints written before the gain existed used 1. */
    const json_t *gj = json_object_get(j, "heads_gain");
    double gain = gj ? json_number_value(gj) : 1.0;
    if (rc == PG_OK && !(gain > 0.0 && gain <= 100.0))
        rc = pg_error_set(err, PG_EFORMAT, "checkpoint table map does not match its generator");
    if (rc == PG_OK) rc = pg_heads_from_table(t, (float)tau, &gen->heads, err);
    /* Absent: tanh, the only numeric head before "clip" existed. */
    const json_t *nj = json_object_get(j, "heads_numeric");
    const char *num = nj ? json_string_value(nj) : "tanh";
    if (rc == PG_OK && (!num || (strcmp(num, "tanh") && strcmp(num, "clip"))))
        rc = pg_error_set(err, PG_EFORMAT, "checkpoint table map does not match its generator");
    if (rc == PG_OK) gen->heads->gain = (float)gain;
    if (rc == PG_OK)
        gen->heads->numeric = strcmp(num, "clip") ? PG_HEADS_NUMERIC_TANH : PG_HEADS_NUMERIC_CLIP;
    pg_table_free(t);
    if (rc) {
        pg_heads_free(gen->heads);
        gen->heads = NULL;
        pg_qmap_free(gen->qmap);
        gen->qmap = NULL;
        return rc == PG_ENOMEM ? rc
                               : pg_error_set(err, PG_EFORMAT, "checkpoint table map is malformed");
    }
    gen->table_map = json_incref((json_t *)map);
    return PG_OK;
}

int pg_generator_load_snapshot(const unsigned char *bytes, size_t len, const char *method,
                               pg_snapshot **out, pg_error *err)
{
    *out = NULL;
    pg_nn *net = NULL;
    char *extra_text = NULL;
    pg_ckpt rest = {0};
    int rc = pg_nn_checkpoint_decode(bytes, len, 1, &net, NULL, &extra_text, &rest, err);
    if (rc) return rc;
    json_t *extra = json_loads(extra_text ? extra_text : "", 0, NULL);
    free(extra_text);
    const char *name = json_string_value(json_object_get(extra, "method"));
    pg_generator gen = {0};
    if (!name || strcmp(name, method) != 0)
        rc = pg_error_set(err, PG_EFORMAT, "not a %s checkpoint", method);
    else
        rc = pg_generator_from_json(json_object_get(extra, "generator"), &gen, err);
    if (rc == PG_OK && pg_nn_out_size(net) != gen.d)
        rc = pg_error_set(err, PG_EFORMAT, "checkpoint generator does not match its description");
    /* A trainer that averaged its parameters served the average: so does
     * the snapshot rebuilt from its checkpoint. */
    const pg_ckpt_tensor *avg = pg_ckpt_find(&rest, PG_GENERATOR_EMA_TENSOR);
    if (rc == PG_OK && avg) {
        size_t n = pg_ckpt_tensor_size(avg);
        bool finite = true;
        for (size_t i = 0; i < n && finite; i++) finite = isfinite(avg->data[i]);
        if (avg->ndim != 1 || n != pg_nn_param_count(net) || !finite)
            rc = pg_error_set(err, PG_EFORMAT, "the checkpoint's parameter average is malformed");
        else
            memcpy(pg_nn_params(net), avg->data, n * sizeof(float));
    }
    long step = (long)json_integer_value(json_object_get(extra, "step"));
    const json_t *cal = json_object_get(extra, "calibration");
    if (rc == PG_OK && json_is_object(cal)) {
        /* A calibrated trainer served shifted samples: so does the reload. */
        const pg_ckpt_tensor *m = pg_ckpt_find(&rest, PG_GENERATOR_CALIB_TENSOR);
        json_int_t per = json_integer_value(json_object_get(cal, "per_class"));
        double lo = json_number_value(json_object_get(cal, "lo"));
        double hi = json_number_value(json_object_get(cal, "hi"));
        size_t K = gen.num_classes > 0 ? (size_t)gen.num_classes : 1;
        /* "kind": "table" (calib_table.h) since issue 28; absent: class means. */
        const char *kind = json_string_value(json_object_get(cal, "kind"));
        bool table = kind && strcmp(kind, "table") == 0;
        bool ok = m && m->ndim == 2 && m->dims[0] == K && m->dims[1] == (table ? 2 : 1) * gen.d &&
                  per > 0 && per <= 1000000 &&
                  (table ? gen.heads != NULL && !json_object_get(cal, "lo")
                         : !kind && isfinite(lo) && isfinite(hi) && lo < hi);
        for (size_t i = 0; ok && i < K * m->dims[1]; i++) ok = isfinite(m->data[i]);
        if (ok && table)
            ok = pg_calib_table_check_targets(gen.heads, gen.num_classes, m->data, NULL) == PG_OK;
        /* "numeric": "quantile" (calib_table.h): the classes' released
         * CDFs come in a tensor of their own. */
        const char *num = json_string_value(json_object_get(cal, "numeric"));
        const pg_ckpt_tensor *cc = NULL;
        if (ok && table && num && strcmp(num, "quantile") == 0) {
            cc = pg_ckpt_find(&rest, PG_GENERATOR_CLASS_CDF_TENSOR);
            ok = cc && gen.qmap && cc->ndim == 2 && cc->dims[0] == K &&
                 cc->dims[1] == pg_calib_table_cdf_len(gen.qmap) &&
                 pg_calib_table_check_cdf(gen.qmap, gen.num_classes, cc->data, NULL) == PG_OK;
        }
        /* "independence" (calib_table.h): absent means 0. */
        const json_t *ij = json_object_get(cal, "independence");
        double indep = ij ? json_number_value(ij) : 0.0;
        if (ij && !(json_is_number(ij) && indep >= 0.0 && indep <= 1.0 && table)) ok = false;
        /* "copula" (calib_copula.h): the classes' released correlation
         * matrices in a tensor of their own, checked when set. */
        const pg_ckpt_tensor *cop = NULL;
        if (ok && json_object_get(cal, "copula")) {
            size_t cm = gen.heads ? pg_copula_dim(gen.heads, gen.qmap, NULL) : 0;
            cop = pg_ckpt_find(&rest, PG_GENERATOR_COPULA_TENSOR);
            ok = cc && cop && cm > 0 && cop->ndim == 2 && cop->dims[0] == K &&
                 cop->dims[1] == cm * cm && pg_copula_check(cop->data, K, cm, NULL) == PG_OK;
        }
        pg_nn_snapshot *nn = NULL;
        if (!ok)
            rc = pg_error_set(err, PG_EFORMAT, "the checkpoint's calibration is malformed");
        else if ((rc = pg_nn_snapshot_take(net, &nn, err)) == PG_OK)
            rc = table ? pg_generator_snapshot_calibrated_table_copula(
                             &gen, nn, step, m->data, cc ? cc->data : NULL, (size_t)per, indep,
                             cop ? cop->data : NULL, out, err)
                       : pg_generator_snapshot_calibrated(&gen, nn, step, m->data, (size_t)per,
                                                          (float)lo, (float)hi, out, err);
    } else if (rc == PG_OK) {
        rc = pg_generator_snapshot(&gen, net, step, out, err);
    }
    const json_t *counts = json_object_get(extra, PG_GENERATOR_LABEL_COUNTS);
    if (rc == PG_OK && counts) {
        /* A trainer that released label counts served their proportions. */
        size_t K = gen.num_classes > 0 ? (size_t)gen.num_classes : 1;
        double *c = malloc(2 * K * sizeof *c);
        rc = !c ? pg_error_set(err, PG_ENOMEM, "cannot read the label counts")
                : pg_generator_label_counts_from_json(counts, gen.num_classes, c, err);
        if (rc == PG_OK) {
            pg_label_count_weights(c, gen.num_classes, c + K);
            rc = pg_snapshot_set_class_weights(*out, c + K, err);
        }
        free(c);
        if (rc) {
            pg_snapshot_release(*out);
            *out = NULL;
        }
    }
    if (name && strcmp(name, method) == 0) pg_generator_free(&gen);
    json_decref(extra);
    pg_ckpt_free(&rest);
    pg_nn_free(net);
    return rc;
}

int pg_generator_label_counts_from_json(const json_t *a, int classes, double *counts, pg_error *err)
{
    bool ok = json_is_array(a) && classes > 0 && json_array_size(a) == (size_t)classes;
    for (int k = 0; ok && k < classes; k++) {
        const json_t *v = json_array_get(a, (size_t)k);
        ok = json_is_number(v) && isfinite(json_number_value(v));
        if (ok) counts[k] = json_number_value(v);
    }
    return ok ? PG_OK
              : pg_error_set(err, PG_EFORMAT, "the checkpoint's label counts are malformed");
}

/* ---- snapshots ---------------------------------------------------------- */

/* Scratch of one sampling call: a network workspace for SAMPLE_CHUNK rows,
 * the latents and the labels. Kept in the snapshot's pool between calls. */
typedef struct gen_ws {
    pg_nn_ws *ws;
    float *z;
    int32_t *labels;
    struct gen_ws *next;
} gen_ws;

/* Idle workspaces of a snapshot. A request takes one (or makes one when the
 * pool is empty) and gives it back, so a serving thread allocates and zeroes
 * megabytes of activations once, not per request. At most POOL_MAX stay
 * idle (more threads sampling at once than the HTTP pool runs), and no more
 * than POOL_BYTES of them, but always one: an image generator's workspace
 * for 256 rows can be tens of megabytes. */
enum { POOL_MAX = 8 };
#define POOL_BYTES ((size_t)64 << 20)
typedef struct gen_pool {
    pthread_mutex_t mu;
    gen_ws *idle;
    size_t n_idle;
} gen_pool;

typedef struct gen_snap {
    pg_nn_snapshot *nn;
    pg_generator g; /* options not kept: only the sampling fields */
    /* Class-mean calibration (calib.h): max(num_classes, 1) x d shifts added
     * to data-space samples, then clamped to [lo, hi]; NULL when off. */
    float *offset;
    float lo, hi;
    /* Table calibration (calib_table.h): per-class moves and shifts applied
     * after the heads; NULL when off. */
    pg_calib_table *tcal;
    /* The only mutable part, behind its mutex: sampling leaves the rest of
     * the snapshot untouched. */
    gen_pool *pool;
    size_t params;   /* network parameters: the work of one row, roughly */
    size_t ws_bytes; /* one pooled workspace */
} gen_snap;

enum { SAMPLE_CHUNK = 256 };
/* Stream id of sampling draws: keeps served samples independent of the
 * training streams that use the same job seed. */
#define PG_SAMPLE_STREAM 0x53414d50ull
/* The output heads' Gumbel draws (typed tables) come from a stream of their
 * own: a fixed number per row, so row i gets the same draws whatever the
 * chunking, and a request for n rows begins with the rows of a request for
 * fewer (the streamed and the one-piece responses agree). Sharing the latent
 * stream would interleave them chunk by chunk. */
#define PG_SAMPLE_HEADS_STREAM 0x53414d48ull
/* And the table calibration's moves (calib_table.h) one of their own. */
#define PG_SAMPLE_CALIB_STREAM 0x53414d43ull
/* Below this many (rows x parameters) a call runs on the calling thread
 * alone: waking the OpenMP team for each layer of a small request costs more
 * than it gains, and a serving process already runs one request per HTTP
 * thread. The thread count never changes the bits (nn.h). */
#define TEAM_MIN_WORK ((size_t)1 << 26)

static void ws_free(gen_ws *w)
{
    if (!w) return;
    pg_nn_ws_free(w->ws);
    pg_free(w->z);
    pg_free(w->labels);
    free(w);
}

static int ws_take(const gen_snap *s, gen_ws **out, pg_error *err)
{
    pthread_mutex_lock(&s->pool->mu);
    gen_ws *w = s->pool->idle;
    if (w) {
        s->pool->idle = w->next;
        s->pool->n_idle--;
    }
    pthread_mutex_unlock(&s->pool->mu);
    *out = w;
    if (w) return PG_OK;
    w = calloc(1, sizeof *w);
    if (!w) return pg_error_set(err, PG_ENOMEM, "cannot allocate sampling buffers");
    int rc = pg_nn_ws_create(s->nn, SAMPLE_CHUNK, &w->ws, err);
    if (rc) {
        free(w);
        return rc;
    }
    w->z = pg_alloc_f32(SAMPLE_CHUNK * s->g.latent_dim);
    w->labels = pg_calloc(SAMPLE_CHUNK, sizeof *w->labels);
    if (!w->z || !w->labels) {
        ws_free(w);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate sampling buffers");
    }
    *out = w;
    return PG_OK;
}

static void ws_give(const gen_snap *s, gen_ws *w)
{
    pthread_mutex_lock(&s->pool->mu);
    bool keep = s->pool->n_idle < POOL_MAX &&
                (s->pool->n_idle == 0 || (s->pool->n_idle + 1) * s->ws_bytes <= POOL_BYTES);
    if (keep) {
        w->next = s->pool->idle;
        s->pool->idle = w;
        s->pool->n_idle++;
    }
    pthread_mutex_unlock(&s->pool->mu);
    if (!keep) ws_free(w);
}

static gen_pool *pool_new(void)
{
    gen_pool *p = calloc(1, sizeof *p);
    if (p && pthread_mutex_init(&p->mu, NULL)) {
        free(p);
        p = NULL;
    }
    return p;
}

static void pool_free(gen_pool *p)
{
    if (!p) return;
    while (p->idle) {
        gen_ws *w = p->idle;
        p->idle = w->next;
        ws_free(w);
    }
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* Rows in chunks of SAMPLE_CHUNK, each from the same latent stream as
 * before pooling: the chunking, not the workspace, fixes the draws. */
static int gen_sample(const void *impl, size_t n, uint64_t seed, int label, float *out,
                      pg_error *err)
{
    const gen_snap *s = impl;
    gen_ws *w;
    int rc = ws_take(s, &w, err);
    if (rc) return rc;
    int threads = omp_get_max_threads();
    bool alone = threads > 1 && n * s->params < TEAM_MIN_WORK;
    if (alone) omp_set_num_threads(1);
    pg_rng rng, heads_rng;
    pg_rng_seeded(&rng, seed, PG_SAMPLE_STREAM);
    pg_rng_seeded(&heads_rng, seed, PG_SAMPLE_HEADS_STREAM);
    pg_rng cal_rng; /* a fixed number of draws per row too (calib_table.h) */
    pg_rng_seeded(&cal_rng, seed, PG_SAMPLE_CALIB_STREAM);
    for (size_t done = 0; done < n;) {
        size_t b = n - done < SAMPLE_CHUNK ? n - done : SAMPLE_CHUNK;
        pg_nn_latent_sample(&s->g.latent, &rng, w->z, b * s->g.latent_dim);
        for (size_t i = 0; i < b && s->g.num_classes; i++)
            w->labels[i] =
                label >= 0 ? label : (int32_t)pg_rng_below(&rng, (uint64_t)s->g.num_classes);
        const float *y;
        rc = pg_nn_snapshot_forward(s->nn, w->ws, w->z, s->g.num_classes ? w->labels : NULL, b, &y,
                                    err);
        if (rc) break;
        memcpy(out + done * s->g.d, y, b * s->g.d * sizeof(float));
        pg_generator_to_data(&s->g, &heads_rng, out + done * s->g.d, s->g.d, b);
        /* Before decoding: the table calibration works where the generator
         * does (calib_table.h). */
        if (s->tcal)
            pg_calib_table_apply(s->tcal, &cal_rng, out + done * s->g.d,
                                 s->g.num_classes ? w->labels : NULL, b);
        for (size_t i = 0; i < b && s->offset; i++) {
            const float *off = s->offset + (s->g.num_classes ? (size_t)w->labels[i] : 0) * s->g.d;
            float *row = out + (done + i) * s->g.d;
            for (size_t j = 0; j < s->g.d; j++) {
                float v = row[j] + off[j];
                row[j] = v < s->lo ? s->lo : v > s->hi ? s->hi : v;
            }
        }
        pg_qmap_decode(s->g.qmap, out + done * s->g.d, s->g.d, b);
        done += b;
    }
    if (alone) omp_set_num_threads(threads);
    ws_give(s, w);
    return rc;
}

static void gen_destroy(void *impl)
{
    gen_snap *s = impl;
    if (!s) return;
    pool_free(s->pool); /* workspaces read their network's shapes when freed */
    pg_nn_snapshot_free(s->nn);
    pg_heads_free(s->g.heads);
    pg_qmap_free(s->g.qmap);
    pg_calib_table_free(s->tcal);
    free(s->offset);
    free(s);
}

/* A gen_snap around nn (ownership moves in, even on failure). */
static int snap_new(const pg_generator *g, pg_nn_snapshot *nn, gen_snap **out, pg_error *err)
{
    gen_snap *s = calloc(1, sizeof *s);
    gen_pool *pool = pool_new();
    *out = s;
    if (!s || !pool) {
        free(s);
        *out = NULL;
        pool_free(pool);
        pg_nn_snapshot_free(nn);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate a snapshot");
    }
    s->nn = nn;
    s->g = *g;
    s->g.options = NULL;
    s->g.table_map = NULL;
    s->g.heads = NULL;
    s->g.qmap = NULL;
    s->pool = pool;
    int rc = pg_heads_copy(g->heads, &s->g.heads, err);
    if (rc == PG_OK) rc = pg_qmap_copy(g->qmap, &s->g.qmap, err);
    if (rc) {
        gen_destroy(s);
        *out = NULL;
        return rc;
    }
    s->params = pg_nn_snapshot_param_count(nn);
    s->ws_bytes = pg_nn_snapshot_ws_bytes(nn, SAMPLE_CHUNK) +
                  SAMPLE_CHUNK * (g->latent_dim * sizeof(float) + sizeof(int32_t));
    return PG_OK;
}

static const pg_snapshot_ops GEN_SNAPSHOT_OPS = {gen_sample, gen_destroy, NULL};

int pg_generator_snapshot_wrap(const pg_generator *g, pg_nn_snapshot *nn, long step,
                               pg_snapshot **out, pg_error *err)
{
    gen_snap *s;
    int rc = snap_new(g, nn, &s, err);
    if (rc) return rc;
    return pg_snapshot_new(&GEN_SNAPSHOT_OPS, s, step, g->d, g->num_classes, out, err);
}

int pg_generator_snapshot(const pg_generator *g, const pg_nn *net, long step, pg_snapshot **out,
                          pg_error *err)
{
    pg_nn_snapshot *nn = NULL;
    int rc = pg_nn_snapshot_take(net, &nn, err);
    if (rc) return rc;
    return pg_generator_snapshot_wrap(g, nn, step, out, err);
}

/* Fixed seed of the draws that measure a snapshot's class means: the same
 * network always gets the same shifts (a checkpoint reload reproduces them). */
#define PG_CALIB_SEED 0x43414c49ull

int pg_generator_snapshot_calibrated(const pg_generator *g, pg_nn_snapshot *nn, long step,
                                     const float *means, size_t per_class, float lo, float hi,
                                     pg_snapshot **out, pg_error *err)
{
    *out = NULL;
    if (!(lo < hi) || per_class == 0 || !means) {
        pg_nn_snapshot_free(nn);
        return pg_error_set(err, PG_EINVAL, "calibration needs means, lo < hi and per_class >= 1");
    }
    gen_snap *s;
    int rc = snap_new(g, nn, &s, err);
    if (rc) return rc;
    nn = NULL;
    size_t K = g->num_classes > 0 ? (size_t)g->num_classes : 1, d = g->d;
    float *buf = pg_alloc_f32(per_class * d);
    double *acc = calloc(d, sizeof *acc);
    if (!buf || !acc) {
        rc = pg_error_set(err, PG_ENOMEM, "cannot allocate a calibrated snapshot");
        goto fail;
    }
    s->lo = lo;
    s->hi = hi;
    float *offset = malloc(K * d * sizeof *offset);
    if (!offset) {
        rc = pg_error_set(err, PG_ENOMEM, "cannot allocate calibration shifts");
        goto fail;
    }
    /* Measure before publishing: s is private to this call until
     * pg_snapshot_new, so the sampler still runs without shifts. */
    for (size_t k = 0; k < K && rc == PG_OK; k++) {
        rc = gen_sample(s, per_class, PG_CALIB_SEED + k, g->num_classes ? (int)k : -1, buf, err);
        memset(acc, 0, d * sizeof *acc);
        for (size_t i = 0; i < per_class && rc == PG_OK; i++)
            for (size_t j = 0; j < d; j++) acc[j] += buf[i * d + j];
        for (size_t j = 0; j < d && rc == PG_OK; j++)
            offset[k * d + j] = (float)((double)means[k * d + j] - acc[j] / (double)per_class);
    }
    if (rc) {
        free(offset);
        goto fail;
    }
    s->offset = offset;
    pg_free(buf);
    free(acc);
    return pg_snapshot_new(&GEN_SNAPSHOT_OPS, s, step, g->d, g->num_classes, out, err);
fail:
    gen_destroy(s);
    pg_free(buf);
    free(acc);
    return rc;
}

int pg_generator_snapshot_calibrated_table(const pg_generator *g, pg_nn_snapshot *nn, long step,
                                           const float *targets, const float *class_cdf,
                                           size_t per_class, pg_snapshot **out, pg_error *err)
{
    return pg_generator_snapshot_calibrated_table_indep(g, nn, step, targets, class_cdf, per_class,
                                                        0.0, out, err);
}

int pg_generator_snapshot_calibrated_table_indep(const pg_generator *g, pg_nn_snapshot *nn,
                                                 long step, const float *targets,
                                                 const float *class_cdf, size_t per_class,
                                                 double independence, pg_snapshot **out,
                                                 pg_error *err)
{
    return pg_generator_snapshot_calibrated_table_copula(g, nn, step, targets, class_cdf, per_class,
                                                         independence, NULL, out, err);
}

int pg_generator_snapshot_calibrated_table_copula(const pg_generator *g, pg_nn_snapshot *nn,
                                                  long step, const float *targets,
                                                  const float *class_cdf, size_t per_class,
                                                  double independence, const float *copula,
                                                  pg_snapshot **out, pg_error *err)
{
    *out = NULL;
    if (!g->heads || per_class < 2 || !targets) {
        pg_nn_snapshot_free(nn);
        return pg_error_set(err, PG_EINVAL,
                            "table calibration needs heads, targets, per_class >= 2");
    }
    gen_snap *s;
    int rc = snap_new(g, nn, &s, err);
    if (rc) return rc;
    size_t K = g->num_classes > 0 ? (size_t)g->num_classes : 1, d = g->d;
    pg_calib_table *c = NULL;
    float *buf = pg_alloc_f32(K * per_class * d);
    rc = buf ? pg_calib_table_new(g->heads, g->num_classes, &c, err)
             : pg_error_set(err, PG_ENOMEM, "cannot allocate a calibrated snapshot");
    if (rc == PG_OK && class_cdf)
        rc = g->qmap ? pg_calib_table_set_quantiles(c, g->qmap, class_cdf, err)
                     : pg_error_set(err, PG_EINVAL, "the quantile rule needs the quantile map");
    /* Measured on the uncalibrated sampler (s is private to this call)
     * with the quantile map's decoding held back: the rule works in the
     * space the release was taken in, where gen_sample applies it. */
    pg_qmap *qm = s->g.qmap;
    s->g.qmap = NULL;
    for (size_t k = 0; k < K && rc == PG_OK; k++)
        rc = gen_sample(s, per_class, PG_CALIB_SEED + k, g->num_classes ? (int)k : -1,
                        buf + k * per_class * d, err);
    if (rc == PG_OK) rc = pg_calib_table_fit_all(c, targets, buf, per_class, err);
    if (rc == PG_OK) rc = pg_calib_table_set_independence(c, independence, err);
    if (rc == PG_OK && copula) rc = pg_calib_table_set_copula(c, targets, copula, err);
    s->g.qmap = qm;
    pg_free(buf);
    if (rc) {
        pg_calib_table_free(c);
        gen_destroy(s);
        return rc;
    }
    s->tcal = c;
    return pg_snapshot_new(&GEN_SNAPSHOT_OPS, s, step, g->d, g->num_classes, out, err);
}

/* ---- trainer scaffolding ------------------------------------------------ */

int pg_generator_train_init(const pg_generator *g, const json_t *resolved, size_t max_batch,
                            uint64_t seed, double default_lr, pg_nn **net, pg_nn_opt **opt,
                            pg_generator_ema *ema, pg_error *err)
{
    *net = NULL;
    *opt = NULL;
    int rc = pg_generator_build(g, max_batch, seed ^ ((uint64_t)PG_STREAM_INIT << 56), net, err);
    if (rc == PG_OK) {
        int kind = pg_nn_opt_parse(pg_spec_str(resolved, "train.optimizer", "adam"));
        pg_nn_opt_config cfg = pg_nn_opt_defaults(kind);
        cfg.lr = (float)pg_spec_num(resolved, "train.lr", default_lr);
        cfg.weight_decay = (float)pg_spec_num(resolved, "train.weight_decay", 0.0);
        rc = pg_nn_opt_create(&cfg, pg_nn_param_count(*net), opt, err);
    }
    if (rc == PG_OK && ema)
        rc = pg_generator_ema_init(ema, pg_spec_num(resolved, "train.ema", 0), *net, err);
    if (rc) {
        pg_nn_opt_free(*opt);
        pg_nn_free(*net);
        *opt = NULL;
        *net = NULL;
    }
    return rc;
}

void pg_generator_train_free(pg_generator *g, pg_nn *net, pg_nn_opt *opt, pg_generator_ema *ema)
{
    pg_nn_free(net);
    pg_nn_opt_free(opt);
    if (ema) pg_generator_ema_free(ema);
    pg_generator_free(g);
}

int pg_generator_ckpt_save(json_t *header, const pg_nn *net, const pg_nn_opt *opt,
                           const pg_generator_ema *ema, const pg_ckpt_tensor *more, size_t n_more,
                           unsigned char **bytes, size_t *len, pg_error *err)
{
    /* JSON_REAL_PRECISION(17) is jansson's default: the header's bytes do
     * not depend on which method wrote it. */
    char *text = header ? json_dumps(header, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    json_decref(header);
    pg_ckpt_tensor *tensors = text ? calloc(n_more + 1, sizeof *tensors) : NULL;
    if (!tensors) {
        free(text);
        return pg_error_set(err, PG_ENOMEM, "cannot encode the trainer state");
    }
    size_t nt = 0;
    if (ema) pg_generator_ema_tensor(ema, &tensors[0], &nt);
    for (size_t i = 0; i < n_more; i++) tensors[nt++] = more[i];
    int rc = pg_nn_checkpoint_encode(net, opt, text, tensors, nt, bytes, len, err);
    free(tensors);
    free(text);
    return rc;
}

int pg_generator_ckpt_open(const pg_generator *g, const char *method, const json_t *resolved,
                           const unsigned char *bytes, size_t len, size_t max_batch, pg_nn **net,
                           pg_nn_opt **opt, pg_generator_ema *ema, json_t **header, long *step,
                           pg_ckpt *rest, pg_error *err)
{
    *header = NULL;
    *step = 0;
    *net = NULL;
    *opt = NULL;
    if (rest) memset(rest, 0, sizeof *rest);
    char *text = NULL;
    int rc = pg_nn_checkpoint_decode(bytes, len, max_batch, net, opt, &text, rest, err);
    if (rc == PG_OK && ema)
        rc = pg_generator_ema_init(ema, pg_spec_num(resolved, "train.ema", 0), *net, err);
    json_t *h = rc == PG_OK ? json_loads(text ? text : "", 0, NULL) : NULL;
    free(text);
    if (rc == PG_OK) {
        json_int_t s = json_integer_value(json_object_get(h, "step"));
        const char *name = json_string_value(json_object_get(h, "method"));
        if (!h || !name || strcmp(name, method) != 0 || s < 0 || !*opt)
            rc = pg_error_set(err, PG_EFORMAT, "not %s %s checkpoint",
                              strchr("aeiou", method[0]) ? "an" : "a", method);
        else if (pg_nn_out_size(*net) != g->d)
            rc = pg_error_set(err, PG_EFORMAT, "checkpoint generator does not match the data");
        else if ((rc = pg_generator_check_saved(g, json_object_get(h, "generator"), err)))
            ;
        else if (ema && (rc = pg_generator_ema_restore(
                             ema, *net, rest,
                             (uint64_t)json_integer_value(json_object_get(h, "ema_updates")), err)))
            ;
        else
            *step = (long)s;
    }
    if (rc) {
        json_decref(h);
        if (rest) pg_ckpt_free(rest);
        if (ema) pg_generator_ema_free(ema);
        pg_nn_opt_free(*opt);
        pg_nn_free(*net);
        *opt = NULL;
        *net = NULL;
        return rc;
    }
    *header = h;
    return PG_OK;
}

void pg_generator_draw_classes(pg_rng *rng, const double *w, int classes, size_t n, int32_t *out)
{
    for (size_t i = 0; i < n; i++) {
        double u = pg_rng_uniform(rng), acc = 0;
        int k = classes - 1;
        for (int j = 0; j < classes - 1; j++)
            if (u < (acc += w[j])) {
                k = j;
                break;
            }
        out[i] = k;
    }
}
