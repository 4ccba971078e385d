/* render/npy_stream.h - incremental NPY (or headerless float32) body decoder.
 *
 * Feeds arrive in arbitrary pieces (however the network splits the body);
 * the decoder reassembles the header, then converts whole elements to
 * float32 in bounded batches and hands them to a sink with their flat index.
 * Memory is the struct itself (about 100 KiB), whatever the body size.
 *
 * Errors: PG_EFORMAT for a malformed or oversized header or a body longer
 * than its shape; otherwise whatever code a callback returned (callbacks
 * report their own errors). pg_npy_stream_complete tells whether exactly the
 * declared payload arrived.
 */
#ifndef PG_RENDER_NPY_STREAM_H
#define PG_RENDER_NPY_STREAM_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/data/npy.h"

#define PG_NPY_STREAM_BATCH 8192
#define PG_NPY_STREAM_HDR   (12 + 65536)

typedef struct pg_npy_stream_cb {
    /* Called once when the header is parsed (not in raw mode); nonzero stops. */
    int (*on_header)(void *ctx, const pg_npy_header *h, pg_error *err);
    /* Called with consecutive converted values; first = flat index of x[0]. */
    int (*on_values)(void *ctx, const float *x, size_t count, uint64_t first, pg_error *err);
} pg_npy_stream_cb;

typedef struct pg_npy_stream {
    int hdr_done;
    size_t hdr_len, hdr_need;
    pg_npy_header h;
    unsigned char carry[8];
    size_t carry_len;
    uint64_t done;
    float conv[PG_NPY_STREAM_BATCH];
    unsigned char hdr[PG_NPY_STREAM_HDR];
} pg_npy_stream;

/* NPY mode: the body starts with an NPY header. */
void pg_npy_stream_init(pg_npy_stream *s);
/* Raw mode: `count` little-endian float32 values, no header. */
void pg_npy_stream_init_raw(pg_npy_stream *s, size_t count);

int pg_npy_stream_feed(pg_npy_stream *s, const void *data, size_t len, const pg_npy_stream_cb *cb,
                       void *ctx, pg_error *err);

/* 1 when the header was read and exactly its payload followed. */
int pg_npy_stream_complete(const pg_npy_stream *s);

#endif
