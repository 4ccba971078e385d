#include "engine/methods/snapshot.h"

#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/core/rng.h"

struct pg_snapshot {
    atomic_long refs;
    long step;
    size_t d;
    int num_classes;
    double *weights; /* num_classes proportions, NULL: uniform */
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
        free(s->weights);
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

int pg_snapshot_set_class_weights(pg_snapshot *s, const double *w, pg_error *err)
{
    if (s->num_classes <= 0)
        return pg_error_set(err, PG_EINVAL, "class proportions need a conditional model");
    double sum = 0;
    for (int k = 0; k < s->num_classes; k++) {
        if (!(w[k] >= 0) || !isfinite(w[k]))
            return pg_error_set(err, PG_EINVAL, "class proportion %d is not a finite number >= 0",
                                k);
        sum += w[k];
    }
    if (!(sum > 0) || !isfinite(sum))
        return pg_error_set(err, PG_EINVAL, "class proportions must sum to more than 0");
    double *c = malloc((size_t)s->num_classes * sizeof *c);
    if (!c) return pg_error_set(err, PG_ENOMEM, "cannot allocate class proportions");
    for (int k = 0; k < s->num_classes; k++) c[k] = w[k] / sum;
    free(s->weights);
    s->weights = c;
    return PG_OK;
}

const double *pg_snapshot_class_weights(const pg_snapshot *s)
{
    return s->weights;
}

/* The stream of the class draws: apart from every stream a sample call uses
 * for its rows (those are seeded by class seeds derived below). */
#define CLASS_STREAM UINT64_C(0xC1A55E5)

int pg_snapshot_sample_labelled(const pg_snapshot *s, size_t n, uint64_t seed, float *out,
                                int32_t *labels, pg_error *err)
{
    int K = s->num_classes;
    if (K <= 0) return pg_error_set(err, PG_EINVAL, "labelled draws need a conditional model");
    pg_rng r;
    pg_rng_seeded(&r, seed, CLASS_STREAM);
    size_t *cnt = calloc((size_t)K, sizeof *cnt);
    if (!cnt) return pg_error_set(err, PG_ENOMEM, "out of memory drawing classes");
    for (size_t i = 0; i < n; i++) {
        int k = K - 1;
        if (s->weights) {
            double u = pg_rng_uniform(&r), acc = 0;
            for (int j = 0; j < K - 1; j++)
                if (u < (acc += s->weights[j])) {
                    k = j;
                    break;
                }
        } else {
            k = (int)pg_rng_below(&r, (uint64_t)K);
        }
        labels[i] = k;
        cnt[k]++;
    }
    size_t most = 0;
    for (int k = 0; k < K; k++) most = cnt[k] > most ? cnt[k] : most;
    float *tmp = most ? pg_alloc_f32(most * s->d) : NULL;
    int rc = most && !tmp ? pg_error_set(err, PG_ENOMEM, "out of memory drawing samples") : PG_OK;
    for (int k = 0; rc == PG_OK && k < K; k++) {
        if (!cnt[k]) continue;
        /* Class k's rows come from their own seed, a function of (seed, k)
         * only: the first rows of a larger draw are the rows of a smaller
         * one (labels and rows alike), as for unlabelled draws. */
        pg_rng kr;
        pg_rng_seeded(&kr, seed, CLASS_STREAM + 1 + (uint64_t)k);
        rc = s->ops->sample(s->impl, cnt[k], pg_rng_u64(&kr), k, tmp, err);
        for (size_t i = 0, j = 0; rc == PG_OK && i < n; i++)
            if (labels[i] == k) memcpy(out + i * s->d, tmp + j++ * s->d, s->d * sizeof *out);
    }
    pg_free(tmp);
    free(cnt);
    return rc;
}

int pg_snapshot_sample(const pg_snapshot *s, size_t n, uint64_t seed, int label, float *out,
                       pg_error *err)
{
    if (label >= 0 && (s->num_classes == 0 || label >= s->num_classes))
        return pg_error_set(err, PG_EINVAL, "label %d is outside the model's %d classes", label,
                            s->num_classes);
    if (label < -1) return pg_error_set(err, PG_EINVAL, "label %d is invalid", label);
    if (label == -1 && s->weights) {
        /* Rows of any class follow the released proportions. */
        int32_t *lab = malloc((n ? n : 1) * sizeof *lab);
        if (!lab) return pg_error_set(err, PG_ENOMEM, "out of memory drawing classes");
        int rc = pg_snapshot_sample_labelled(s, n, seed, out, lab, err);
        free(lab);
        return rc;
    }
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
    const double *w = pg_snapshot_class_weights(inner);
    int rc = pg_snapshot_new(&CLAMP_SNAP, c, pg_snapshot_step(inner), pg_snapshot_dim(inner),
                             pg_snapshot_num_classes(inner), out, err);
    /* The wrapper's unlabelled draws must follow the inner proportions. */
    if (rc == PG_OK && w && (rc = pg_snapshot_set_class_weights(*out, w, err))) {
        pg_snapshot_release(*out);
        *out = NULL;
    }
    return rc;
}
