#include "engine/methods/draw.h"

#include <string.h>

#include "engine/core/alloc.h"
#include "engine/methods/snapshot.h"

/* About 1 MiB of floats per block (at most 4096 rows): big enough for
 * efficient GEMMs, small enough to keep a stream's memory flat. */
#define BLOCK_VALUES ((size_t)1 << 18)
#define BLOCK_ROWS   4096

size_t pg_draw_block_rows(size_t d)
{
    size_t b = d ? BLOCK_VALUES / d : BLOCK_ROWS;
    return b < 1 ? 1 : b > BLOCK_ROWS ? BLOCK_ROWS : b;
}

uint64_t pg_draw_block_seed(uint64_t seed, size_t block)
{
    if (block == 0) return seed;
    uint64_t z = seed + (uint64_t)block * UINT64_C(0x9E3779B97F4A7C15);
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

int pg_draw_rows(const pg_snapshot *s, size_t n, size_t d, uint64_t seed, int label, float *x,
                 pg_error *err)
{
    size_t b = pg_draw_block_rows(d);
    for (size_t at = 0, blk = 0; at < n; at += b, blk++) {
        size_t rows = n - at < b ? n - at : b;
        int rc = pg_snapshot_sample(s, rows, pg_draw_block_seed(seed, blk), label, x + at * d, err);
        if (rc) return rc;
    }
    return PG_OK;
}

int pg_draw_table_for(const pg_table *t, const pg_snapshot *snap, pg_table **out, pg_error *err)
{
    *out = NULL;
    json_t *map = pg_table_to_json(t);
    if (!map) return pg_error_set(err, PG_ENOMEM, "out of memory");
    if (t->label != PG_TABLE_NONE && pg_snapshot_num_classes(snap) == 0) {
        json_array_remove(json_object_get(map, "columns"), t->label);
        json_object_del(map, "label");
        json_object_del(map, "width");
        json_object_del(map, "blocks");
    }
    int rc = pg_table_from_json(map, out, err);
    json_decref(map);
    return rc;
}

/* Class k's seed within a block (k + 1: never the block's own seed). */
static uint64_t class_seed(uint64_t block_seed, size_t k)
{
    return pg_draw_block_seed(block_seed ^ UINT64_C(0x5851F42D4C957F2D), k + 1);
}

int pg_draw_table_block(const pg_table *t, const pg_snapshot *snap, size_t m, uint64_t seed,
                        int label, float *x, int64_t *labels, float *tmp, pg_error *err)
{
    size_t w = t->width, classes = labels ? pg_table_num_classes(t) : 0;
    if (!classes || label >= 0) {
        int rc = pg_snapshot_sample(snap, m, seed, classes ? label : -1, x, err);
        for (size_t i = 0; labels && i < m; i++) labels[i] = label;
        return rc;
    }
    if (pg_snapshot_has_joint_labels(snap)) {
        /* Models of the label as one more column (mst, aim) draw each row's
         * class with it: the classes follow the model's distribution instead
         * of being balanced here. */
        int32_t *cls = pg_alloc(m * sizeof *cls);
        if (!cls) return pg_error_set(err, PG_ENOMEM, "out of memory drawing samples");
        int rc = pg_snapshot_sample_labeled(snap, m, seed, x, cls, err);
        for (size_t i = 0; !rc && i < m; i++) labels[i] = cls[i];
        pg_free(cls);
        return rc;
    }
    for (size_t k = 0; k < classes && k < m; k++) {
        size_t cnt = (m - k + classes - 1) / classes; /* rows i = k, k + C, ... */
        int rc = pg_snapshot_sample(snap, cnt, class_seed(seed, k), (int)k, tmp, err);
        if (rc) return rc;
        for (size_t j = 0; j < cnt; j++) {
            size_t i = k + j * classes;
            memcpy(x + i * w, tmp + j * w, w * sizeof *x);
            labels[i] = (int64_t)k;
        }
    }
    return PG_OK;
}

int pg_draw_table_rows(const pg_table *t, const pg_snapshot *snap, size_t n, uint64_t seed,
                       int label, float *x, int64_t *labels, pg_error *err)
{
    size_t b = pg_draw_block_rows(t->width);
    int has_label = t->label != PG_TABLE_NONE;
    float *tmp = has_label ? pg_alloc_f32((n < b ? n : b) * t->width) : NULL;
    if (has_label && !tmp) return pg_error_set(err, PG_ENOMEM, "out of memory drawing samples");
    int rc = PG_OK;
    for (size_t at = 0, blk = 0; !rc && at < n; at += b, blk++) {
        size_t m = n - at < b ? n - at : b;
        rc = pg_draw_table_block(t, snap, m, pg_draw_block_seed(seed, blk), label,
                                 x + at * t->width, has_label ? labels + at : NULL, tmp, err);
    }
    pg_free(tmp);
    return rc;
}
