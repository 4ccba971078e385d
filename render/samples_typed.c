#include "render/samples_typed.h"

#include <stdlib.h>
#include <string.h>

#include "render/samples_stream.h"
#include "engine/core/alloc.h"
#include "engine/data/records.h"
#include "engine/methods/draw.h"
#include "engine/methods/snapshot.h"

int pg_typed_samples_table(const pg_table *t, const pg_snapshot *snap, pg_table **out,
                           pg_error *err)
{
    return pg_draw_table_for(t, snap, out, err);
}

int pg_typed_samples_draw(const pg_table *t, const pg_snapshot *snap, size_t n, uint64_t seed,
                          int label, float *x, int64_t *labels, pg_cpu_budget *cpu, int cap,
                          pg_error *err)
{
    pg_cpu_scope sc;
    pg_cpu_scope_begin(cpu, cap, &sc);
    int rc = pg_draw_table_rows(t, snap, n, seed, label, x, labels, err);
    pg_cpu_scope_end(&sc);
    return rc;
}

struct pg_typed_samples {
    pg_table *t;
    pg_snapshot *snap;
    pg_cpu_budget *cpu; /* blocks are drawn under it (NULL: none) */
    int cap;
    int format;
    size_t n, block_rows, next_row, block_index;
    uint64_t seed;
    int label;
    float *x, *tmp;
    int64_t *labels;
    char *text;
    size_t text_len, text_cap, text_off;
    int done;
};

void pg_typed_samples_free(pg_typed_samples *st)
{
    if (!st) return;
    if (st->snap) pg_snapshot_release(st->snap);
    pg_table_free(st->t);
    pg_free(st->x);
    pg_free(st->tmp);
    free(st->labels);
    free(st->text);
    free(st);
}

int pg_typed_samples_open(const pg_table *t, pg_snapshot *snap, int format, size_t n, uint64_t seed,
                          int label, pg_cpu_budget *cpu, int cap, pg_typed_samples **out,
                          pg_error *err)
{
    *out = NULL;
    if (format < PG_RECORDS_CSV || format > PG_RECORDS_NDJSON || n == 0)
        return pg_error_set(err, PG_EINVAL, "bad typed samples request");
    if (pg_snapshot_dim(snap) != t->width)
        return pg_error_set(err, PG_EINVAL,
                            "the model's rows (%zu values) do not have the table's width (%zu)",
                            pg_snapshot_dim(snap), t->width);
    pg_typed_samples *st = calloc(1, sizeof *st);
    if (!st) return pg_error_set(err, PG_ENOMEM, "out of memory opening a samples stream");
    int rc = pg_typed_samples_table(t, snap, &st->t, err);
    if (rc) {
        free(st);
        return rc;
    }
    st->format = format;
    st->n = n;
    st->seed = seed;
    st->label = label;
    st->cpu = cpu;
    st->cap = cap;
    st->block_rows = pg_samples_block_rows(t->width);
    size_t rows = n < st->block_rows ? n : st->block_rows;
    st->x = pg_alloc_f32(rows * t->width);
    if (st->t->label != PG_TABLE_NONE) {
        st->tmp = pg_alloc_f32(rows * t->width);
        st->labels = malloc(rows * sizeof *st->labels);
    }
    if (!st->x || (st->t->label != PG_TABLE_NONE && (!st->tmp || !st->labels))) {
        pg_typed_samples_free(st);
        return pg_error_set(err, PG_ENOMEM, "out of memory opening a samples stream");
    }
    pg_snapshot_retain(snap);
    st->snap = snap;
    *out = st;
    return PG_OK;
}

static int put(pg_typed_samples *st, const void *buf, size_t len)
{
    if (st->text_len + len > st->text_cap) {
        size_t cap = st->text_cap ? st->text_cap : 4096;
        while (cap < st->text_len + len) cap *= 2;
        char *t = realloc(st->text, cap);
        if (!t) return -1;
        st->text = t;
        st->text_cap = cap;
    }
    memcpy(st->text + st->text_len, buf, len);
    st->text_len += len;
    return 0;
}

static int put_cb(void *ctx, const void *buf, size_t len)
{
    return put(ctx, buf, len);
}

static int put_json_cb(void *ctx, const void *buf, size_t len)
{
    const char *p = buf, *end = p + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t k = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (put(ctx, p, k) || (nl && put(ctx, ",\n", 2))) return -1;
        p += k + (nl ? 1 : 0);
    }
    return 0;
}

/* The next block's text into st->text; 0 at the end, -1 on error. */
static int refill(pg_typed_samples *st, pg_error *err)
{
    st->text_len = st->text_off = 0;
    if (st->done) return 0;
    if (st->next_row == st->n) {
        st->done = 1;
        if (st->format != PG_RECORDS_JSON) return 0;
        if (put(st, "]\n", 2)) {
            pg_error_set(err, PG_ENOMEM, "out of memory");
            return -1;
        }
        return 1;
    }
    size_t m = st->n - st->next_row;
    if (m > st->block_rows) m = st->block_rows;
    pg_cpu_scope sc;
    pg_cpu_scope_begin(st->cpu, st->cap, &sc);
    int brc =
        pg_draw_table_block(st->t, st->snap, m, pg_samples_block_seed(st->seed, st->block_index),
                            st->label, st->x, st->labels, st->tmp, err);
    pg_cpu_scope_end(&sc);
    if (brc) return -1;
    int first = st->block_index == 0;
    int rc;
    if (st->format == PG_RECORDS_JSON) {
        /* Written as NDJSON with each record's line break turned into ",\n"
         * (a record's text never holds a raw line break: JSON escapes it),
         * the last one dropped: the blocks join into pg_records_write's own
         * JSON layout, "[" records joined by ",\n" "]\n". */
        rc = put(st, first ? "[" : ",\n", first ? 1 : 2) ||
             pg_records_write(st->t, PG_RECORDS_NDJSON, st->x, st->labels, m, 1, put_json_cb, st,
                              err);
        if (!rc) st->text_len -= 2;
    } else {
        rc = pg_records_write(st->t, st->format, st->x, st->labels, m, 1, put_cb, st, err);
    }
    if (rc) {
        if (!err->code) pg_error_set(err, PG_ENOMEM, "out of memory");
        return -1;
    }
    if (st->format == PG_RECORDS_CSV && !first) {
        /* Column names hold no control characters: the header is one line. */
        char *nl = memchr(st->text, '\n', st->text_len);
        st->text_off = nl ? (size_t)(nl - st->text) + 1 : st->text_len;
    }
    st->block_index++;
    st->next_row += m;
    return 1;
}

ssize_t pg_typed_samples_read(pg_typed_samples *st, char *buf, size_t cap, pg_error *err)
{
    size_t done = 0;
    while (done < cap) {
        if (st->text_off == st->text_len) {
            int r = refill(st, err);
            if (r < 0) return -1;
            if (r == 0) break;
            continue;
        }
        size_t k = st->text_len - st->text_off;
        if (k > cap - done) k = cap - done;
        memcpy(buf + done, st->text + st->text_off, k);
        st->text_off += k;
        done += k;
    }
    return (ssize_t)done;
}

int pg_typed_samples_body(pg_typed_samples *st, char **out, size_t *len, pg_error *err)
{
    size_t cap = 1 << 14, n = 0;
    char *b = malloc(cap);
    for (;;) {
        if (!b) return pg_error_set(err, PG_ENOMEM, "out of memory");
        ssize_t k = pg_typed_samples_read(st, b + n, cap - n, err);
        if (k < 0) {
            free(b);
            return err->code ? err->code : PG_EIO;
        }
        n += (size_t)k;
        if (n < cap) break;
        cap *= 2;
        char *nb = realloc(b, cap);
        if (!nb) free(b);
        b = nb;
    }
    *out = b;
    *len = n;
    return PG_OK;
}
