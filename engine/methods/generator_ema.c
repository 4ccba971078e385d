/* generator_ema.c - the exponential moving average of generator parameters
 * that snapshots serve (contract in generator.h). */
#include <math.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/methods/generator.h"

int pg_generator_ema_init(pg_generator_ema *e, double decay, pg_nn *net, pg_error *err)
{
    memset(e, 0, sizeof *e);
    if (!(decay >= 0.0 && decay < 1.0))
        return pg_error_set(err, PG_EINVAL, "the averaging decay must lie in [0, 1)");
    e->decay = decay;
    if (decay == 0.0) return PG_OK;
    e->n = pg_nn_param_count(net);
    e->avg = pg_alloc_f32(e->n);
    e->scratch = pg_alloc_f32(e->n);
    if (!e->avg || !e->scratch) {
        pg_generator_ema_free(e);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate the parameter average");
    }
    memcpy(e->avg, pg_nn_params(net), e->n * sizeof(float));
    return PG_OK;
}

void pg_generator_ema_update(pg_generator_ema *e, pg_nn *net)
{
    if (e->decay == 0.0) return;
    e->updates++;
    double warm = (1.0 + (double)e->updates) / (10.0 + (double)e->updates);
    float b = (float)(warm < e->decay ? warm : e->decay), a = 1.0f - b;
    const float *p = pg_nn_params(net);
    float *avg = e->avg;
    for (size_t i = 0; i < e->n; i++) avg[i] = b * avg[i] + a * p[i];
}

int pg_generator_ema_take(pg_generator_ema *e, pg_nn *net, pg_nn_snapshot **nn, pg_error *err)
{
    if (e->decay == 0.0) return pg_nn_snapshot_take(net, nn, err);
    /* The snapshot deep-copies the network, so swapping the average in for
     * the duration of the copy is enough. */
    float *p = pg_nn_params(net);
    memcpy(e->scratch, p, e->n * sizeof(float));
    memcpy(p, e->avg, e->n * sizeof(float));
    int rc = pg_nn_snapshot_take(net, nn, err);
    memcpy(p, e->scratch, e->n * sizeof(float));
    return rc;
}

int pg_generator_ema_snapshot(pg_generator_ema *e, const pg_generator *g, pg_nn *net, long step,
                              pg_snapshot **out, pg_error *err)
{
    pg_nn_snapshot *nn = NULL;
    int rc = pg_generator_ema_take(e, net, &nn, err);
    if (rc) return rc;
    return pg_generator_snapshot_wrap(g, nn, step, out, err);
}

void pg_generator_ema_tensor(const pg_generator_ema *e, pg_ckpt_tensor *t, size_t *n_out)
{
    *n_out = 0;
    if (e->decay == 0.0) return;
    memset(t, 0, sizeof *t);
    t->name = PG_GENERATOR_EMA_TENSOR;
    t->ndim = 1;
    t->dims[0] = e->n;
    t->data = e->avg;
    *n_out = 1;
}

int pg_generator_ema_restore(pg_generator_ema *e, pg_nn *net, const pg_ckpt *ck, uint64_t updates,
                             pg_error *err)
{
    if (e->decay == 0.0) return PG_OK;
    const pg_ckpt_tensor *t = ck ? pg_ckpt_find(ck, PG_GENERATOR_EMA_TENSOR) : NULL;
    if (!t) {
        memcpy(e->avg, pg_nn_params(net), e->n * sizeof(float));
        e->updates = 0;
        return PG_OK;
    }
    size_t n = pg_ckpt_tensor_size(t);
    if (t->ndim != 1 || n != e->n)
        return pg_error_set(err, PG_EFORMAT,
                            "the checkpoint's parameter average has %zu values, the network %zu", n,
                            e->n);
    for (size_t i = 0; i < n; i++)
        if (!isfinite(t->data[i]))
            return pg_error_set(err, PG_EFORMAT,
                                "the checkpoint's parameter average is not finite");
    memcpy(e->avg, t->data, n * sizeof(float));
    e->updates = updates;
    return PG_OK;
}

void pg_generator_ema_free(pg_generator_ema *e)
{
    pg_free(e->avg);
    pg_free(e->scratch);
    e->avg = e->scratch = NULL;
}
