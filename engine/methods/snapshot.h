/* engine/methods/snapshot.h - building blocks for method implementers.
 *
 * A snapshot is immutable after pg_snapshot_new returns it: request threads
 * sample from it concurrently while the trainer keeps stepping. The reference
 * count is atomic; the last pg_snapshot_release calls ops->destroy(impl).
 * The service only uses the functions declared in method.h.
 */
#ifndef PG_METHODS_SNAPSHOT_H
#define PG_METHODS_SNAPSHOT_H

#include "engine/methods/method.h"

typedef struct pg_snapshot_ops {
    /* Draws n rows into out (n x d). Must be safe to call from many threads on
     * the same impl: allocate per-call scratch (or reuse it from a pool the
     * impl guards with its own lock, as the generator does), and never change
     * what the rows depend on. */
    int (*sample)(const void *impl, size_t n, uint64_t seed, int label, float *out, pg_error *err);
    void (*destroy)(void *impl);
    /* Optional (NULL for conditional models): draws n rows from the model's
     * joint distribution of rows and classes, each row's class into
     * labels[i]. Models that learn the label as part of the row (mst, aim)
     * implement it so serving keeps the data's class balance. */
    int (*sample_labeled)(const void *impl, size_t n, uint64_t seed, float *out, int32_t *labels,
                          pg_error *err);
} pg_snapshot_ops;

/* Wraps impl (ownership moves in, even on failure) with refcount 1. */
int pg_snapshot_new(const pg_snapshot_ops *ops, void *impl, long step, size_t d, int num_classes,
                    pg_snapshot **out, pg_error *err);

/* A snapshot that draws from `inner` (reference moves in, even on failure)
 * and clamps every value to [lo, hi]: how a method keeps central samples in
 * the dataset's declared range. Clamping is post-processing: no privacy cost. */
int pg_snapshot_clamp_wrap(pg_snapshot *inner, float lo, float hi, pg_snapshot **out,
                           pg_error *err);

const void *pg_snapshot_impl(const pg_snapshot *s);
int pg_snapshot_num_classes(const pg_snapshot *s);

#endif
