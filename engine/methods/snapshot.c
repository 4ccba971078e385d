#include "engine/methods/snapshot.h"

#include <omp.h>
#include <stdatomic.h>
#include <stdlib.h>

struct pg_snapshot {
    atomic_long refs;
    long step;
    size_t d;
    int num_classes;
    const pg_snapshot_ops *ops;
    void *impl;
};

int pg_snapshot_new(const pg_snapshot_ops *ops, void *impl, long step, size_t d, int num_classes,
                    pg_snapshot **out, pg_error *err)
{
    *out = NULL;
    pg_snapshot *s = calloc(1, sizeof *s);
    if (!s) {
        ops->destroy(impl);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate a snapshot");
    }
    atomic_init(&s->refs, 1);
    s->step = step;
    s->d = d;
    s->num_classes = num_classes;
    s->ops = ops;
    s->impl = impl;
    *out = s;
    return PG_OK;
}

void pg_snapshot_retain(pg_snapshot *s)
{
    if (s) atomic_fetch_add_explicit(&s->refs, 1, memory_order_relaxed);
}

void pg_snapshot_release(pg_snapshot *s)
{
    if (!s) return;
    /* acq_rel: the freeing thread must see every other holder's last use. */
    if (atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) == 1) {
        s->ops->destroy(s->impl);
        free(s);
    }
}

long pg_snapshot_step(const pg_snapshot *s)
{
    return s->step;
}

size_t pg_snapshot_dim(const pg_snapshot *s)
{
    return s->d;
}

int pg_snapshot_num_classes(const pg_snapshot *s)
{
    return s->num_classes;
}

const void *pg_snapshot_impl(const pg_snapshot *s)
{
    return s->impl;
}

int pg_snapshot_sample(const pg_snapshot *s, size_t n, uint64_t seed, int label, float *out,
                       pg_error *err)
{
    if (label >= 0 && (s->num_classes == 0 || label >= s->num_classes))
        return pg_error_set(err, PG_EINVAL, "label %d is outside the model's %d classes", label,
                            s->num_classes);
    if (label < -1) return pg_error_set(err, PG_EINVAL, "label %d is invalid", label);
    return s->ops->sample(s->impl, n, seed, label, out, err);
}

int pg_snapshot_has_joint_labels(const pg_snapshot *s)
{
    return s->num_classes > 0 && s->ops->sample_labeled != NULL;
}

int pg_snapshot_sample_labeled(const pg_snapshot *s, size_t n, uint64_t seed, float *out,
                               int32_t *labels, pg_error *err)
{
    if (!pg_snapshot_has_joint_labels(s))
        return pg_error_set(err, PG_ENOTSUP, "this model does not draw classes jointly");
    return s->ops->sample_labeled(s->impl, n, seed, out, labels, err);
}

typedef struct clamp_snap {
    pg_snapshot *inner;
    float lo, hi;
} clamp_snap;

static int clamp_sample(const void *impl, size_t n, uint64_t seed, int label, float *out,
                        pg_error *err)
{
    const clamp_snap *c = impl;
    int rc = pg_snapshot_sample(c->inner, n, seed, label, out, err);
    if (rc) return rc;
    size_t m = n * pg_snapshot_dim(c->inner);
    for (size_t i = 0; i < m; i++) /* NaN stays NaN: nothing to clamp it to */
        out[i] = out[i] < c->lo ? c->lo : out[i] > c->hi ? c->hi : out[i];
    return PG_OK;
}

static void clamp_destroy(void *impl)
{
    clamp_snap *c = impl;
    pg_snapshot_release(c->inner);
    free(c);
}

static const pg_snapshot_ops CLAMP_SNAP = {clamp_sample, clamp_destroy, NULL};

int pg_snapshot_clamp_wrap(pg_snapshot *inner, float lo, float hi, pg_snapshot **out, pg_error *err)
{
    *out = NULL;
    if (!(lo < hi)) {
        pg_snapshot_release(inner);
        return pg_error_set(err, PG_EINVAL, "a clamp needs lo < hi");
    }
    clamp_snap *c = calloc(1, sizeof *c);
    if (!c) {
        pg_snapshot_release(inner);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate a snapshot");
    }
    c->inner = inner;
    c->lo = lo;
    c->hi = hi;
    return pg_snapshot_new(&CLAMP_SNAP, c, pg_snapshot_step(inner), pg_snapshot_dim(inner),
                           pg_snapshot_num_classes(inner), out, err);
}
