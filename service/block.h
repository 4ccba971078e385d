/* service/block.h - row-block files: DATA_DIR/datasets/<id>/rows-<k>.f32.
 *
 * Layout (little-endian), 32-byte header then payload:
 *   0 magic "PGRB" | 4 u32 version (1) | 8 u64 n rows | 16 u32 d | 20 u32 has_labels
 *   24 u32 CRC-32 of the payload | 28 u32 CRC-32 of header bytes 0..27
 *   payload: n*d float32, then n int32 labels when has_labels.
 *
 * Writing streams values into a temporary file (".tmp-<random>", locked by
 * its writer) in the dataset directory,
 * computing the CRC on the fly (constant memory whatever the size); finish
 * patches the header and fsyncs; the store renames it into place. Reading
 * checks magic, version, both CRCs and that the file length matches n and d
 * exactly: a corrupt or hostile file is an error, never a crash.
 */
#ifndef PG_SVC_BLOCK_H
#define PG_SVC_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "engine/core/error.h"
#include "engine/data/rowsrc.h"

#define PG_BLOCK_HEADER 32

typedef struct pg_block_writer {
    int fd;
    char path[4096];
    size_t d;
    uint64_t values; /* float32 values written so far */
    uint32_t crc;
} pg_block_writer;

/* Creates a temporary block file in dir for rows of width d. */
int pg_block_open(pg_block_writer *w, const char *dir, size_t d, pg_error *err);
/* Appends `count` float32 values (any split across calls). */
int pg_block_write(pg_block_writer *w, const float *x, size_t count, pg_error *err);
/* Writes labels (NULL for none) for all rows, the header and fsyncs.
 * Fails when the values written are not a whole number of rows. On success
 * the file at w->path is complete; *rows and *bytes describe it. It stays
 * open (and locked) until pg_block_close (after the store renamed it) or
 * pg_block_abort. */
int pg_block_finish(pg_block_writer *w, const int32_t *labels, uint64_t *rows, uint64_t *bytes,
                    pg_error *err);
/* Closes the file without removing it (it has been renamed into place). */
void pg_block_close(pg_block_writer *w);
/* Closes and removes the temporary file (safe after a failed finish). */
void pg_block_abort(pg_block_writer *w);

/* Removes the temporary files (".tmp-*") in dir that no writer owns: a
 * writer holds an exclusive flock on its file from creation to rename, and
 * the lock dies with its process (kill -9 included), so a file that can be
 * locked is left over from a crash, whichever process sharing the data dir
 * made it. An empty unlocked file is removed only once min_age_s old (a
 * writer may be between its open and its lock). *removed counts them. A
 * missing dir is fine; PG_EIO when it cannot be read. */
int pg_block_sweep(const char *dir, int min_age_s, size_t *removed, pg_error *err);

typedef struct pg_block {
    uint64_t n;
    size_t d;
    float *x;        /* n*d, pg_alloc'ed */
    int32_t *labels; /* n, pg_alloc'ed, or NULL */
} pg_block;

/* Streams a block file in windows of at most `chunk` rows (memory: one
 * window, whatever the block's size): the header and file length are checked
 * first (PG_EFORMAT, also when the block's width is not d), then fn (as in
 * engine/data/rowsrc.h) gets the first `limit` rows window by window, with
 * their labels when want_labels (PG_EINVAL when the block has none; NULL
 * labels otherwise). Rows past limit are read for the checksum only. The
 * payload CRC is known only at the end: a corrupt block fails (PG_EFORMAT)
 * after some of its rows were delivered, so the caller must discard what the
 * pass accumulated. *rows receives the block's row count (may be NULL). */
int pg_block_pass(const char *path, size_t d, int want_labels, uint64_t limit, size_t chunk,
                  pg_rowsrc_fn fn, void *ctx, uint64_t *rows, pg_error *err);

/* Reads and verifies a block file; refuses files larger than max_bytes. */
int pg_block_read(const char *path, size_t max_bytes, pg_block *out, pg_error *err);
void pg_block_free(pg_block *b);

#endif
