/* engine/data/rowsrc.h - passes over a dataset's rows in chunks, for
 * methods that only accumulate statistics (mst, aim: marginal counts) and
 * so need not hold the rows in memory.
 *
 * A row source is a description (n rows of width d, labelled or not) plus a
 * pass function supplied by whoever holds the rows (the service streams them
 * from storage; pg_rowsrc_dataset wraps an in-memory dataset). A pass calls
 * `fn` with consecutive chunks of at most `chunk` rows, in row order, each
 * row exactly once, then returns; the row count over a pass is exactly n.
 * x is chunk x d float32 row-major, labels chunk int32 (NULL when the source
 * is unlabelled); both are borrowed for the call only. A callback's non-zero
 * return ends the pass with that status (its pg_error already filled).
 *
 * The source may fail a pass part-way (PG_EIO, PG_EFORMAT: a block that fails
 * its checksum may be detected only after some of its rows were delivered),
 * so a caller must treat what it accumulated during a failed pass as
 * garbage, never release it. Sources have no hidden state between passes:
 * every pass yields the same rows in the same order.
 *
 * Ownership: the holder owns the source and keeps it (and `impl`) alive for
 * as long as it lent it (for a trainer: its lifetime). Passes are not
 * re-entrant on one source.
 */
#ifndef PG_DATA_ROWSRC_H
#define PG_DATA_ROWSRC_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"

struct pg_dataset; /* engine/data/dataset.h */

typedef int (*pg_rowsrc_fn)(void *ctx, const float *x, const int32_t *labels, size_t rows,
                            pg_error *err);

typedef struct pg_rowsrc {
    size_t n, d;
    int labelled;
    size_t chunk; /* most rows per callback (>= 1) */
    int (*pass)(void *impl, const struct pg_rowsrc *src, pg_rowsrc_fn fn, void *ctx, pg_error *err);
    void *impl;
} pg_rowsrc;

/* One pass: checks that the source delivered exactly src->n rows (PG_EIO
 * otherwise) besides what the source's own pass checks. */
int pg_rowsrc_pass(const pg_rowsrc *src, pg_rowsrc_fn fn, void *ctx, pg_error *err);

/* A source over an in-memory dataset (borrowed, kept alive by the caller),
 * in chunks of `chunk` rows (0: 4096). */
void pg_rowsrc_dataset(pg_rowsrc *src, const struct pg_dataset *ds, size_t chunk);

#endif
