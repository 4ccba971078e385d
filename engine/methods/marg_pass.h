/* engine/methods/marg_pass.h - marginal counts of a discretized table in one
 * pass over a row source (engine/data/rowsrc.h), so mst and aim need never
 * hold the rows: memory is the tables asked for plus a fixed buffer of
 * PG_MARG_PASS_ROWS coded rows, whatever n.
 *
 * Every row is encoded with pg_disc_encode (engine/data/discretize.h; its
 * class from the source's labels, 0 when unlabelled), each attribute's code
 * then mapped through fwd[a] when non-NULL (a compressed domain of sizes[a]
 * codes), and every set's cell incremented by 1. A set's table is row-major
 * with its last attribute fastest (as pg_marg_count and the pgm module), at
 * out[off .. off + cells), cells the product of its attributes' sizes.
 * Counts are exact (integers in doubles, below 2^53), so they do not depend
 * on how the source cuts its chunks.
 *
 * Errors: PG_EINVAL for a set whose cells or range do not match (nothing
 * read), PG_ENOMEM, and whatever the source's pass returns; on any error out
 * holds garbage that must not be released.
 */
#ifndef PG_METHODS_MARG_PASS_H
#define PG_METHODS_MARG_PASS_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/data/discretize.h"
#include "engine/data/rowsrc.h"
#include "engine/data/table.h"

#define PG_MARG_PASS_ROWS    1024
#define PG_MARG_PASS_MAX_SET 8

typedef struct pg_marg_set {
    size_t k; /* 1 .. PG_MARG_PASS_MAX_SET attributes */
    size_t attrs[PG_MARG_PASS_MAX_SET];
    size_t off, cells;
} pg_marg_set;

/* Zeroes out[0 .. len) and counts every set over one pass of src. t is the
 * table D was built from (NULL for untyped rows); fwd may be NULL (no
 * compression at all). */
int pg_marg_pass_count(const pg_rowsrc *src, const pg_disc *D, const pg_table *t,
                       const uint32_t *const *fwd, const size_t *sizes, const pg_marg_set *sets,
                       size_t ns, double *out, size_t len, pg_error *err);

#endif
