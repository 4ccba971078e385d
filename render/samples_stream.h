/* render/samples_stream.h - samples response bodies (JSON, CSV, NPY), whole or
 * streamed in constant memory.
 *
 * Rows follow engine/methods/draw.h (the rule reports share): blocks of
 * pg_samples_block_rows(d) rows, block 0 with the
 * request's seed, block b > 0 with pg_samples_block_seed(seed, b). A given
 * (snapshot, seed, label, n) therefore names the same rows whether the body
 * is built at once or streamed, and the first block's rows are what a single
 * pg_snapshot_sample call with the seed gives.
 *
 * Text formats print every float32 as its shortest round-trip decimal
 * (engine/core/fmt.h); JSON writes null for a non-finite value. NPY is the
 * little-endian float32 array numpy's np.save writes, shape (n, *shape).
 *
 * Ownership: a stream retains the snapshot it was opened with and releases
 * it in pg_samples_stream_free. Errors: PG_ENOMEM, PG_EINVAL (bad spec), or
 * the snapshot's sampling error, with err set.
 */
#ifndef PG_RENDER_SAMPLES_STREAM_H
#define PG_RENDER_SAMPLES_STREAM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "engine/core/error.h"
#include "engine/methods/method.h"

enum pg_samples_format { PG_SAMPLES_JSON = 0, PG_SAMPLES_CSV, PG_SAMPLES_NPY };

typedef struct pg_samples_spec {
    int format; /* enum pg_samples_format */
    size_t n, d;
    int ndim; /* NPY: shape of one row (1..3 dims, product d) */
    size_t shape[3];
    long step;     /* JSON: echoed */
    uint64_t seed; /* drawing seed; JSON echoes it when below 2^53 */
    int label;     /* -1: none */
    /* The process's CPU budget each block is drawn under (NULL: none) and
     * the most cores a block takes (0: no cap); see pg_cpu_scope_begin. */
    pg_cpu_budget *cpu;
    int cpu_cap;
} pg_samples_spec;

size_t pg_samples_block_rows(size_t d);
uint64_t pg_samples_block_seed(uint64_t seed, size_t block);

/* Draws rows [0, n) into x (n * d floats) by the block rule. */
int pg_samples_draw(const pg_snapshot *s, const pg_samples_spec *sp, float *x, pg_error *err);

/* The whole body of n drawn rows x: malloc'ed into *out (caller frees). */
int pg_samples_encode(const pg_samples_spec *sp, const float *x, char **out, size_t *len,
                      pg_error *err);

/* Body size when known in advance (NPY), else 0. */
size_t pg_samples_body_size(const pg_samples_spec *sp);

typedef struct pg_samples_stream pg_samples_stream;

int pg_samples_stream_open(const pg_samples_spec *sp, pg_snapshot *snap, pg_samples_stream **out,
                           pg_error *err);
/* Next body bytes into buf (at most cap, cap >= 1): the count, 0 once the
 * body is complete, -1 on a sampling error (err set; the body is cut). */
ssize_t pg_samples_stream_read(pg_samples_stream *st, char *buf, size_t cap, pg_error *err);
/* Bytes the stream allocated for itself (its buffers), whatever n is. */
size_t pg_samples_stream_footprint(const pg_samples_stream *st);
void pg_samples_stream_free(pg_samples_stream *st);

#endif
