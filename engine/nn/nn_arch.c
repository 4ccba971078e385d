/* JSON architecture -> layer list with shapes and buffer offsets.
 *
 * Schema:
 *   {"input": 12 | [c, h, w], "init": "default"|"kaiming_uniform"|...,
 *    "layers": [ {"type": ..., ...}, ... ]}
 * Layer types and their keys (defaults in brackets):
 *   linear            out, bias [true]              (flattens its input)
 *   conv2d            out, kernel, stride [1], padding [0], bias [true]
 *   conv_transpose2d  out, kernel, stride [1], padding [0], bias [true]
 *   batchnorm         eps [1e-5], momentum [0.1]    (1d on flat, 2d on images)
 *   relu | tanh | sigmoid
 *   leaky_relu        slope [0.01]
 *   reshape           shape [c, h, w] (or [f])
 *   upsample          factor [2], mode ["nearest"|"bilinear"], align_corners [false]
 *   label_embed       classes, dim     (appends a learned classes x dim code)
 *   label_onehot      classes          (appends the one-hot label)
 * A network has at most one label layer; it makes the network conditional.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/nn/nn_internal.h"

static int get_size(json_t *o, const char *key, long long dflt, long long lo, long long hi,
                    size_t *out, int idx, pg_error *err)
{
    json_t *v = json_object_get(o, key);
    long long x = dflt;
    if (v) {
        if (!json_is_integer(v))
            return pg_error_set(err, PG_EINVAL, "layer %d: \"%s\" must be an integer", idx, key);
        x = json_integer_value(v);
    } else if (dflt < 0) {
        return pg_error_set(err, PG_EINVAL, "layer %d: \"%s\" is required", idx, key);
    }
    if (x < lo || x > hi)
        return pg_error_set(err, PG_EINVAL, "layer %d: \"%s\" = %lld is outside [%lld, %lld]", idx,
                            key, x, lo, hi);
    *out = (size_t)x;
    return PG_OK;
}

static int get_bool(json_t *o, const char *key, bool dflt, bool *out, int idx, pg_error *err)
{
    json_t *v = json_object_get(o, key);
    if (!v) {
        *out = dflt;
        return PG_OK;
    }
    if (!json_is_boolean(v))
        return pg_error_set(err, PG_EINVAL, "layer %d: \"%s\" must be true or false", idx, key);
    *out = json_is_true(v);
    return PG_OK;
}

static int get_real(json_t *o, const char *key, double dflt, double lo, double hi, float *out,
                    int idx, pg_error *err)
{
    json_t *v = json_object_get(o, key);
    double x = dflt;
    if (v) {
        if (!json_is_number(v))
            return pg_error_set(err, PG_EINVAL, "layer %d: \"%s\" must be a number", idx, key);
        x = json_number_value(v);
    }
    if (!(x >= lo && x <= hi))
        return pg_error_set(err, PG_EINVAL, "layer %d: \"%s\" is outside [%g, %g]", idx, key, lo,
                            hi);
    *out = (float)x;
    return PG_OK;
}

/* Reads [c, h, w] or [f] or an integer f into shape. */
static int get_shape(json_t *v, size_t shape[3], const char *what, pg_error *err)
{
    shape[0] = shape[1] = shape[2] = 1;
    if (json_is_integer(v)) {
        long long x = json_integer_value(v);
        if (x < 1 || x > PG_NN_MAX_DIM * 16LL)
            return pg_error_set(err, PG_EINVAL, "%s must be a positive size", what);
        shape[0] = (size_t)x;
        return PG_OK;
    }
    if (!json_is_array(v) || (json_array_size(v) != 1 && json_array_size(v) != 3))
        return pg_error_set(err, PG_EINVAL, "%s must be [c, h, w] or [features]", what);
    for (size_t i = 0; i < json_array_size(v); i++) {
        json_t *e = json_array_get(v, i);
        if (!json_is_integer(e) || json_integer_value(e) < 1 ||
            json_integer_value(e) > (i == 0 ? PG_NN_MAX_DIM * 16LL : PG_NN_MAX_DIM))
            return pg_error_set(err, PG_EINVAL, "%s has an invalid size", what);
        shape[i] = (size_t)json_integer_value(e);
    }
    return PG_OK;
}

static int parse_layer(json_t *o, int idx, const size_t in[3], nn_layer *L, pg_error *err)
{
    memset(L, 0, sizeof *L);
    if (!json_is_object(o))
        return pg_error_set(err, PG_EINVAL, "layer %d must be a JSON object", idx);
    const char *t = json_string_value(json_object_get(o, "type"));
    if (!t) return pg_error_set(err, PG_EINVAL, "layer %d has no \"type\" string", idx);
    L->in_c = in[0], L->in_h = in[1], L->in_w = in[2];
    L->out_c = in[0], L->out_h = in[1], L->out_w = in[2];
    size_t flat = in[0] * in[1] * in[2];
    if (flat > PG_NN_MAX_PARAMS)
        return pg_error_set(err, PG_EINVAL, "layer %d: input of %zu values is too large", idx,
                            flat);
    int rc = PG_OK;
    if (!strcmp(t, "linear")) {
        L->type = NN_LINEAR;
        if ((rc = get_size(o, "out", -1, 1, PG_NN_MAX_DIM * 16LL, &L->out_c, idx, err)) ||
            (rc = get_bool(o, "bias", true, &L->bias, idx, err)))
            return rc;
        L->out_h = L->out_w = 1;
        L->n_p = L->out_c * flat + (L->bias ? L->out_c : 0);
    } else if (!strcmp(t, "conv2d") || !strcmp(t, "conv_transpose2d")) {
        bool tr = t[4] == '_';
        L->type = tr ? NN_CONVT2D : NN_CONV2D;
        if ((rc = get_size(o, "out", -1, 1, 16384, &L->out_c, idx, err)) ||
            (rc = get_size(o, "kernel", -1, 1, 64, &L->k, idx, err)) ||
            (rc = get_size(o, "stride", 1, 1, 64, &L->stride, idx, err)) ||
            (rc = get_size(o, "padding", 0, 0, 64, &L->pad, idx, err)) ||
            (rc = get_bool(o, "bias", true, &L->bias, idx, err)))
            return rc;
        if ((tr ? L->out_c : in[0]) * L->k * L->k > PG_NN_MAX_PARAMS)
            return pg_error_set(err, PG_EINVAL, "layer %d: convolution is too large", idx);
        if (tr) {
            /* Output size of the adjoint convolution; refuse negative sizes. */
            long long oh = ((long long)in[1] - 1) * (long long)L->stride - 2 * (long long)L->pad +
                           (long long)L->k;
            long long ow = ((long long)in[2] - 1) * (long long)L->stride - 2 * (long long)L->pad +
                           (long long)L->k;
            if (oh < 1 || ow < 1 || oh > PG_NN_MAX_DIM || ow > PG_NN_MAX_DIM)
                return pg_error_set(err, PG_EINVAL, "layer %d: transposed conv output is empty",
                                    idx);
            L->out_h = (size_t)oh, L->out_w = (size_t)ow;
            L->n_p = in[0] * L->out_c * L->k * L->k + (L->bias ? L->out_c : 0);
        } else {
            if (in[1] + 2 * L->pad < L->k || in[2] + 2 * L->pad < L->k)
                return pg_error_set(err, PG_EINVAL, "layer %d: kernel larger than padded input",
                                    idx);
            L->out_h = (in[1] + 2 * L->pad - L->k) / L->stride + 1;
            L->out_w = (in[2] + 2 * L->pad - L->k) / L->stride + 1;
            L->n_p = L->out_c * in[0] * L->k * L->k + (L->bias ? L->out_c : 0);
        }
    } else if (!strcmp(t, "batchnorm")) {
        L->type = NN_BATCHNORM;
        if ((rc = get_real(o, "eps", 1e-5, 1e-12, 1.0, &L->eps, idx, err)) ||
            (rc = get_real(o, "momentum", 0.1, 0.0, 1.0, &L->moment, idx, err)))
            return rc;
        L->n_p = 2 * in[0];
        L->n_s = 2 * in[0];
        L->n_a = 2 * in[0];
    } else if (!strcmp(t, "relu")) {
        L->type = NN_RELU;
    } else if (!strcmp(t, "leaky_relu")) {
        L->type = NN_LEAKY_RELU;
        if ((rc = get_real(o, "slope", 0.01, -1e3, 1e3, &L->slope, idx, err))) return rc;
    } else if (!strcmp(t, "tanh")) {
        L->type = NN_TANH;
    } else if (!strcmp(t, "sigmoid")) {
        L->type = NN_SIGMOID;
    } else if (!strcmp(t, "reshape")) {
        L->type = NN_RESHAPE;
        size_t s[3];
        if ((rc = get_shape(json_object_get(o, "shape"), s, "reshape \"shape\"", err))) return rc;
        if (s[0] * s[1] * s[2] != flat)
            return pg_error_set(err, PG_EINVAL, "layer %d: reshape to %zu values from %zu", idx,
                                s[0] * s[1] * s[2], flat);
        L->out_c = s[0], L->out_h = s[1], L->out_w = s[2];
    } else if (!strcmp(t, "upsample")) {
        L->type = NN_UPSAMPLE;
        const char *mode = json_string_value(json_object_get(o, "mode"));
        if (!mode || !strcmp(mode, "nearest"))
            L->up_mode = NN_UP_NEAREST;
        else if (!strcmp(mode, "bilinear"))
            L->up_mode = NN_UP_BILINEAR;
        else
            return pg_error_set(err, PG_EINVAL, "layer %d: upsample mode is nearest or bilinear",
                                idx);
        if ((rc = get_size(o, "factor", 2, 1, 16, &L->factor, idx, err)) ||
            (rc = get_bool(o, "align_corners", false, &L->align, idx, err)))
            return rc;
        L->out_h = in[1] * L->factor, L->out_w = in[2] * L->factor;
        if (L->out_h > PG_NN_MAX_DIM || L->out_w > PG_NN_MAX_DIM)
            return pg_error_set(err, PG_EINVAL, "layer %d: upsampled image too large", idx);
    } else if (!strcmp(t, "label_embed") || !strcmp(t, "label_onehot")) {
        L->type = NN_EMBED;
        L->onehot = t[6] == 'o';
        if ((rc = get_size(o, "classes", -1, 1, 100000, &L->classes, idx, err))) return rc;
        if (L->onehot)
            L->dim = L->classes;
        else if ((rc = get_size(o, "dim", -1, 1, 4096, &L->dim, idx, err)))
            return rc;
        L->out_c = flat + L->dim, L->out_h = L->out_w = 1;
        L->n_p = L->onehot ? 0 : L->classes * L->dim;
    } else {
        return pg_error_set(err, PG_EINVAL, "layer %d: unknown type \"%s\"", idx, t);
    }
    L->in_size = flat;
    L->out_size = L->out_c * L->out_h * L->out_w;
    if (L->out_size > PG_NN_MAX_ACT)
        return pg_error_set(err, PG_EINVAL, "layer %d: output of %zu values is too large", idx,
                            L->out_size);
    /* Per-sample scratch: see the kernels in nn_conv.c. */
    if (L->type == NN_CONV2D) {
        size_t P = L->out_h * L->out_w, K = L->in_c * L->k * L->k;
        L->scr_fwd = L->scr_bwd = (K + L->out_c) * P;
        if (nn_conv_direct_ok(L)) {
            L->scr_fwd = nn_conv_direct_scratch(L, false);
            L->scr_bwd = nn_conv_direct_scratch(L, true);
        } else if (nn_conv_implicit_ok(L)) {
            L->scr_fwd = nn_conv_implicit_scratch(L, false);
            L->scr_bwd = nn_conv_implicit_scratch(L, true);
            L->n_a = nn_conv_implicit_aux(L);
        }
    } else if (L->type == NN_CONVT2D) {
        size_t P = L->in_h * L->in_w, KK = L->out_c * L->k * L->k;
        L->scr_fwd = L->scr_bwd = (KK + L->in_c) * P;
    }
    return PG_OK;
}

void nn_model_free(nn_model *m)
{
    free(m->layers);
    free(m->arch_json);
    pg_free(m->params);
    pg_free(m->state);
    memset(m, 0, sizeof *m);
}

int nn_arch_parse(const char *arch_json, nn_model *m, int *init_scheme, pg_error *err)
{
    memset(m, 0, sizeof *m);
    json_error_t je;
    json_t *root = json_loads(arch_json ? arch_json : "", JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return pg_error_set(err, PG_EINVAL, "architecture is not valid JSON (line %d: %s)", je.line,
                            je.text);
    int rc = PG_OK;
    json_t *layers = json_object_get(root, "layers");
    size_t shape[3];
    if (!json_is_object(root) || !json_is_array(layers) || json_array_size(layers) == 0 ||
        json_array_size(layers) > PG_NN_MAX_LAYERS) {
        rc = pg_error_set(err, PG_EINVAL, "architecture needs \"input\" and 1..%d \"layers\"",
                          PG_NN_MAX_LAYERS);
        goto out;
    }
    if ((rc = get_shape(json_object_get(root, "input"), shape, "architecture \"input\"", err)))
        goto out;
    *init_scheme = PG_NN_INIT_DEFAULT;
    json_t *init = json_object_get(root, "init");
    if (init &&
        (!json_is_string(init) || (*init_scheme = pg_nn_init_parse(json_string_value(init))) < 0)) {
        rc = pg_error_set(err, PG_EINVAL, "unknown \"init\" scheme");
        goto out;
    }
    m->n_layers = json_array_size(layers);
    m->layers = calloc(m->n_layers, sizeof *m->layers);
    if (!m->layers) {
        rc = pg_error_set(err, PG_ENOMEM, "cannot allocate the layer list");
        goto out;
    }
    m->in_size = shape[0] * shape[1] * shape[2];
    m->max_act = m->in_size;
    size_t act_total = m->in_size;
    for (size_t i = 0; i < m->n_layers; i++) {
        nn_layer *L = &m->layers[i];
        if ((rc = parse_layer(json_array_get(layers, i), (int)i, shape, L, err))) goto out;
        if (L->type == NN_EMBED) {
            if (m->classes) {
                rc = pg_error_set(err, PG_EINVAL, "layer %zu: only one label layer allowed", i);
                goto out;
            }
            m->classes = L->classes;
        }
        L->p_off = m->n_params, L->s_off = m->n_state, L->a_off = m->n_aux;
        m->n_params += L->n_p, m->n_state += L->n_s, m->n_aux += L->n_a;
        if (m->n_params > PG_NN_MAX_PARAMS || L->n_p > PG_NN_MAX_PARAMS) {
            rc = pg_error_set(err, PG_EINVAL, "architecture has more than %zu parameters",
                              PG_NN_MAX_PARAMS);
            goto out;
        }
        if (L->scr_fwd > m->scr_fwd) m->scr_fwd = L->scr_fwd;
        if (L->scr_bwd > m->scr_bwd) m->scr_bwd = L->scr_bwd;
        act_total += L->out_size;
        if (L->scr_fwd > PG_NN_MAX_ACT || act_total > PG_NN_MAX_ACT) {
            rc = pg_error_set(err, PG_EINVAL,
                              "layer %zu: activations need more than %zu values per sample", i,
                              PG_NN_MAX_ACT);
            goto out;
        }
        if (L->out_size > m->max_act) m->max_act = L->out_size;
        shape[0] = L->out_c, shape[1] = L->out_h, shape[2] = L->out_w;
    }
    m->out_size = shape[0] * shape[1] * shape[2];
    m->arch_json = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    if (!m->arch_json) rc = pg_error_set(err, PG_ENOMEM, "cannot serialize the architecture");
out:
    json_decref(root);
    if (rc) nn_model_free(m);
    return rc;
}

int nn_model_copy(const nn_model *src, nn_model *dst, pg_error *err)
{
    memset(dst, 0, sizeof *dst);
    *dst = *src;
    dst->layers = malloc(src->n_layers * sizeof *dst->layers);
    dst->arch_json = strdup(src->arch_json);
    dst->params = pg_alloc_f32(src->n_params ? src->n_params : 1);
    dst->state = pg_alloc_f32(src->n_state ? src->n_state : 1);
    if (!dst->layers || !dst->arch_json || !dst->params || !dst->state) {
        nn_model_free(dst);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate a copy of the network");
    }
    memcpy(dst->layers, src->layers, src->n_layers * sizeof *dst->layers);
    memcpy(dst->params, src->params, src->n_params * sizeof(float));
    memcpy(dst->state, src->state, src->n_state * sizeof(float));
    return PG_OK;
}
