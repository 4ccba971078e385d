/* Network lifetime, forward/backward drivers and serving snapshots. */
#include <stdlib.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/nn/nn_internal.h"

void nn_ws_free(const nn_model *m, nn_ws *w)
{
    if (w->act)
        for (size_t i = 0; i < m->n_layers; i++) pg_free(w->act[i]);
    free(w->act);
    pg_free(w->input);
    pg_free(w->aux);
    pg_free(w->scr);
    free(w->labels);
    memset(w, 0, sizeof *w);
}

/* Allocates n floats (at least one) or records failure in *bad. */
static float *alloc_n(size_t n, size_t batch, bool *bad)
{
    size_t bytes;
    if (pg_size_mul(n ? n : 1, batch, &bytes) || pg_size_mul(bytes, sizeof(float), &bytes)) {
        *bad = true;
        return NULL;
    }
    float *p = pg_alloc(bytes);
    if (!p)
        *bad = true;
    else
        memset(p, 0, bytes);
    return p;
}

int nn_ws_alloc(const nn_model *m, size_t max_batch, bool training, nn_ws *w, pg_error *err)
{
    memset(w, 0, sizeof *w);
    if (max_batch < 1 || max_batch > PG_NN_MAX_BATCH)
        return pg_error_set(err, PG_EINVAL, "max batch must be in [1, %d]", PG_NN_MAX_BATCH);
    bool bad = false;
    w->max_batch = max_batch;
    w->input = alloc_n(m->in_size, max_batch, &bad);
    w->aux = alloc_n(m->n_aux, 1, &bad);
    size_t scr = training && m->scr_bwd > m->scr_fwd ? m->scr_bwd : m->scr_fwd;
    w->scr = alloc_n(scr, max_batch, &bad);
    w->labels = calloc(max_batch, sizeof *w->labels);
    w->act = calloc(m->n_layers, sizeof *w->act);
    if (!w->labels || !w->act) bad = true;
    for (size_t i = 0; !bad && i < m->n_layers; i++)
        w->act[i] = alloc_n(m->layers[i].out_size, max_batch, &bad);
    if (bad) {
        nn_ws_free(m, w);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate network buffers for batch %zu",
                            max_batch);
    }
    return PG_OK;
}

int nn_model_forward(const nn_model *m, const float *const *packed, nn_ws *w, const float *x,
                     const int32_t *labels, size_t n, bool train, float *state, double *blas_ms,
                     const float **out, pg_error *err)
{
    if (n < 1 || n > w->max_batch)
        return pg_error_set(err, PG_EINVAL, "batch %zu is outside [1, %zu]", n, w->max_batch);
    if (!x) return pg_error_set(err, PG_EINVAL, "forward needs an input");
    if (m->classes) {
        if (!labels)
            return pg_error_set(err, PG_EINVAL, "this network is conditional: labels required");
        for (size_t j = 0; j < n; j++)
            if (labels[j] < 0 || (size_t)labels[j] >= m->classes)
                return pg_error_set(err, PG_EINVAL, "label %d is outside [0, %zu)", (int)labels[j],
                                    m->classes);
        memcpy(w->labels, labels, n * sizeof *labels);
    }
    memcpy(w->input, x, n * m->in_size * sizeof *x);
    nn_run r = {m->params, NULL, state, w->aux, w->scr, w->labels, n, train, blas_ms, NULL};
    const float *in = w->input;
    for (size_t i = 0; i < m->n_layers; i++) {
        r.packed = packed ? packed[i] : NULL;
        nn_layer_forward(&m->layers[i], &r, in, w->act[i]);
        in = w->act[i];
    }
    *out = in;
    return PG_OK;
}

void pg_nn_free(pg_nn *net)
{
    if (!net) return;
    nn_ws_free(&net->m, &net->w);
    pg_free(net->grads);
    pg_free(net->gbuf[0]);
    pg_free(net->gbuf[1]);
    nn_model_free(&net->m);
    free(net);
}

int pg_nn_create(const char *arch_json, size_t max_batch, uint64_t seed, pg_nn **out, pg_error *err)
{
    pg_nn *net = calloc(1, sizeof *net);
    if (!net) return pg_error_set(err, PG_ENOMEM, "cannot allocate a network");
    int scheme, rc = nn_arch_parse(arch_json, &net->m, &scheme, err);
    if (rc) {
        free(net);
        return rc;
    }
    if ((rc = nn_ws_alloc(&net->m, max_batch, true, &net->w, err))) {
        pg_nn_free(net);
        return rc;
    }
    bool bad = false;
    net->m.params = alloc_n(net->m.n_params, 1, &bad);
    net->m.state = alloc_n(net->m.n_state, 1, &bad);
    net->grads = alloc_n(net->m.n_params, 1, &bad);
    net->gbuf[0] = alloc_n(net->m.max_act, max_batch, &bad);
    net->gbuf[1] = alloc_n(net->m.max_act, max_batch, &bad);
    if (bad) {
        pg_nn_free(net);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate network parameters");
    }
    nn_init_params(&net->m, net->m.params, net->m.state, scheme, seed);
    net->train = true;
    *out = net;
    return PG_OK;
}

void pg_nn_init_params(pg_nn *net, int scheme, uint64_t seed)
{
    nn_init_params(&net->m, net->m.params, net->m.state, scheme, seed);
}

size_t pg_nn_param_count(const pg_nn *net)
{
    return net->m.n_params;
}
size_t pg_nn_in_size(const pg_nn *net)
{
    return net->m.in_size;
}
size_t pg_nn_out_size(const pg_nn *net)
{
    return net->m.out_size;
}
void pg_nn_out_shape(const pg_nn *net, size_t shape[3])
{
    const nn_layer *L = &net->m.layers[net->m.n_layers - 1];
    shape[0] = L->out_c, shape[1] = L->out_h, shape[2] = L->out_w;
}
size_t pg_nn_max_batch(const pg_nn *net)
{
    return net->w.max_batch;
}
size_t pg_nn_num_classes(const pg_nn *net)
{
    return net->m.classes;
}
const char *pg_nn_arch(const pg_nn *net)
{
    return net->m.arch_json;
}
float *pg_nn_params(pg_nn *net)
{
    return net->m.params;
}
float *pg_nn_grads(pg_nn *net)
{
    return net->grads;
}
float *pg_nn_state(pg_nn *net)
{
    return net->m.state;
}
size_t pg_nn_state_count(const pg_nn *net)
{
    return net->m.n_state;
}
void pg_nn_set_train(pg_nn *net, bool train)
{
    net->train = train;
}
bool pg_nn_is_train(const pg_nn *net)
{
    return net->train;
}
void pg_nn_zero_grad(pg_nn *net)
{
    memset(net->grads, 0, net->m.n_params * sizeof *net->grads);
}
void pg_nn_profile(pg_nn *net, bool enable)
{
    net->profile = enable;
}
double pg_nn_blas_ms(const pg_nn *net)
{
    return net->blas_ms;
}
void pg_nn_blas_ms_reset(pg_nn *net)
{
    net->blas_ms = 0.0;
}

int pg_nn_forward(pg_nn *net, const float *x, const int32_t *labels, size_t batch,
                  const float **out, pg_error *err)
{
    int rc = nn_model_forward(&net->m, NULL, &net->w, x, labels, batch, net->train, net->m.state,
                              net->profile ? &net->blas_ms : NULL, out, err);
    net->have_fwd = rc == PG_OK;
    if (rc) return rc;
    net->fwd_train = net->train;
    net->last_n = batch;
    return PG_OK;
}

int pg_nn_backward(pg_nn *net, const float *grad_out, float *grad_in, pg_error *err)
{
    if (!net->have_fwd) return pg_error_set(err, PG_ESTATE, "backward needs a forward pass first");
    if (!grad_out) return pg_error_set(err, PG_EINVAL, "backward needs the output gradient");
    const nn_model *m = &net->m;
    nn_run r = {m->params,   net->grads,     m->state,
                net->w.aux,  net->w.scr,     net->w.labels,
                net->last_n, net->fwd_train, net->profile ? &net->blas_ms : NULL,
                NULL};
    const float *dy = grad_out;
    for (size_t i = m->n_layers; i-- > 0;) {
        const float *x = i == 0 ? net->w.input : net->w.act[i - 1];
        float *dx = i == 0 ? grad_in : net->gbuf[i % 2];
        nn_layer_backward(&m->layers[i], &r, x, net->w.act[i], dy, dx);
        dy = dx;
    }
    return PG_OK;
}

int pg_nn_snapshot_take(const pg_nn *net, pg_nn_snapshot **out, pg_error *err)
{
    pg_nn_snapshot *s = calloc(1, sizeof *s);
    if (!s) return pg_error_set(err, PG_ENOMEM, "cannot allocate a snapshot");
    int rc = nn_model_copy(&net->m, &s->m, err);
    if (rc) {
        free(s);
        return rc;
    }
    const nn_model *m = &s->m;
    s->packed = calloc(m->n_layers, sizeof *s->packed);
    bool bad = !s->packed;
    for (size_t i = 0; !bad && i < m->n_layers; i++) {
        const nn_layer *L = &m->layers[i];
        if (L->type != NN_LINEAR) continue;
        s->packed[i] = pg_alloc_f32(pg_sgemm_packed_size(L->out_size, L->in_size));
        if (!s->packed[i])
            bad = true;
        else /* op(B) = W^T, W out x in */
            pg_sgemm_pack_b(true, L->out_size, L->in_size, m->params + L->p_off, L->in_size,
                            s->packed[i]);
    }
    if (bad) {
        pg_nn_snapshot_free(s);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate a snapshot's packed weights");
    }
    *out = s;
    return PG_OK;
}

void pg_nn_snapshot_free(pg_nn_snapshot *snap)
{
    if (!snap) return;
    for (size_t i = 0; snap->packed && i < snap->m.n_layers; i++) pg_free(snap->packed[i]);
    free(snap->packed);
    nn_model_free(&snap->m);
    free(snap);
}

size_t pg_nn_snapshot_out_size(const pg_nn_snapshot *snap)
{
    return snap->m.out_size;
}
size_t pg_nn_snapshot_in_size(const pg_nn_snapshot *snap)
{
    return snap->m.in_size;
}
size_t pg_nn_snapshot_param_count(const pg_nn_snapshot *snap)
{
    return snap->m.n_params;
}
size_t pg_nn_snapshot_ws_bytes(const pg_nn_snapshot *snap, size_t max_batch)
{
    const nn_model *m = &snap->m;
    size_t per_row = m->in_size + m->scr_fwd;
    for (size_t i = 0; i < m->n_layers; i++) per_row += m->layers[i].out_size;
    return (per_row * max_batch + m->n_aux) * sizeof(float) + max_batch * sizeof(int32_t);
}
size_t pg_nn_snapshot_num_classes(const pg_nn_snapshot *snap)
{
    return snap->m.classes;
}

int pg_nn_ws_create(const pg_nn_snapshot *snap, size_t max_batch, pg_nn_ws **out, pg_error *err)
{
    pg_nn_ws *ws = calloc(1, sizeof *ws);
    if (!ws) return pg_error_set(err, PG_ENOMEM, "cannot allocate a workspace");
    int rc = nn_ws_alloc(&snap->m, max_batch, false, &ws->w, err);
    if (rc) {
        free(ws);
        return rc;
    }
    ws->snap = snap;
    *out = ws;
    return PG_OK;
}

void pg_nn_ws_free(pg_nn_ws *ws)
{
    if (!ws) return;
    nn_ws_free(&ws->snap->m, &ws->w);
    free(ws);
}

int pg_nn_snapshot_forward(const pg_nn_snapshot *snap, pg_nn_ws *ws, const float *x,
                           const int32_t *labels, size_t batch, const float **out, pg_error *err)
{
    if (ws->snap != snap)
        return pg_error_set(err, PG_EINVAL, "workspace belongs to another snapshot");
    /* Eval mode never writes the running statistics, so the snapshot stays
     * immutable; the cast only satisfies the shared kernel signature. */
    return nn_model_forward(&snap->m, (const float *const *)snap->packed, &ws->w, x, labels, batch,
                            false, (float *)(uintptr_t)snap->m.state, NULL, out, err);
}
