#include "render/samples_stream.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/core/fmt.h"
#include "engine/methods/draw.h"

/* Text staged per refill of a stream (grown to one row when a row is longer). */
#define TEXT_CAP ((size_t)64 << 10)

size_t pg_samples_block_rows(size_t d)
{
    return pg_draw_block_rows(d);
}

uint64_t pg_samples_block_seed(uint64_t seed, size_t block)
{
    return pg_draw_block_seed(seed, block);
}

int pg_samples_draw(const pg_snapshot *s, const pg_samples_spec *sp, float *x, pg_error *err)
{
    pg_cpu_scope sc;
    pg_cpu_scope_begin(sp->cpu, sp->cpu_cap, &sc);
    int rc = pg_draw_rows(s, sp->n, sp->d, sp->seed, sp->label, x, err);
    pg_cpu_scope_end(&sc);
    return rc;
}

/* ---- encoders: head, rows, tail ------------------------------------------ */

/* The NPY header numpy writes for float32 C order, version 1.0 (the same
 * bytes as engine/data/npy.c's writer). Returns its length (0: too long). */
static size_t npy_head(const pg_samples_spec *sp, char *out, size_t cap)
{
    char dims[96];
    int p = snprintf(dims, sizeof dims, "%zu,", sp->n);
    for (int i = 0; i < sp->ndim; i++)
        p += snprintf(dims + p, sizeof dims - (size_t)p, " %zu,", sp->shape[i]);
    if (sp->ndim > 0) dims[--p] = '\0'; /* "(a, b)", but "(a,)" for rank 1 */
    char txt[160];
    int n = snprintf(txt, sizeof txt, "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }",
                     dims);
    size_t total = 10 + (size_t)n + 1, pad = (64 - total % 64) % 64;
    size_t hl = (size_t)n + pad + 1;
    if (10 + hl > cap || hl > 65535) return 0;
    memcpy(out, "\x93NUMPY\x01\x00", 8);
    out[8] = (char)(hl & 0xff);
    out[9] = (char)(hl >> 8);
    memcpy(out + 10, txt, (size_t)n);
    memset(out + 10 + n, ' ', pad);
    out[10 + hl - 1] = '\n';
    return 10 + hl;
}

static size_t head_max(const pg_samples_spec *sp)
{
    return sp->format == PG_SAMPLES_CSV ? 24 * sp->d + 2 : 256;
}

static size_t row_max(const pg_samples_spec *sp)
{
    /* A value is at most 16 chars ("-0.000012345678") plus a separator;
     * a row adds ",[", "]" or "\n" (the printer's scratch past the last
     * value is the buffers' PG_FMT_F32_MAX extra bytes). */
    return sp->format == PG_SAMPLES_NPY ? 4 * sp->d : sp->d * 17 + 8;
}

static size_t put_head(const pg_samples_spec *sp, char *o)
{
    switch (sp->format) {
    case PG_SAMPLES_JSON:
        return (size_t)sprintf(o, "{\"n\":%zu,\"d\":%zu,\"step\":%ld,\"samples\":[", sp->n, sp->d,
                               sp->step);
    case PG_SAMPLES_CSV: {
        size_t k = 0;
        for (size_t j = 0; j < sp->d; j++) k += (size_t)sprintf(o + k, "%sx%zu", j ? "," : "", j);
        o[k++] = '\n';
        return k;
    }
    default:
        return npy_head(sp, o, head_max(sp));
    }
}

static size_t put_tail(const pg_samples_spec *sp, char *o)
{
    if (sp->format != PG_SAMPLES_JSON) return 0;
    if (sp->seed < (UINT64_C(1) << 53))
        return (size_t)sprintf(o, "],\"seed\":%llu}", (unsigned long long)sp->seed);
    return (size_t)sprintf(o, "],\"seed\":null}");
}

/* Text of `rows` rows starting at global row `first`. */
static size_t put_rows(const pg_samples_spec *sp, const float *x, size_t rows, size_t first,
                       char *o)
{
    char *p = o;
    size_t d = sp->d;
    if (sp->format == PG_SAMPLES_NPY) {
        memcpy(p, x, rows * d * sizeof(float)); /* little-endian hosts, as engine/data/npy.c */
        return rows * d * sizeof(float);
    }
    for (size_t i = 0; i < rows; i++) {
        const float *r = x + i * d;
        if (sp->format == PG_SAMPLES_JSON) {
            if (first + i) *p++ = ',';
            *p++ = '[';
            p += pg_fmt_f32_join(r, d, ',', 1, p); /* non-finite values as null */
            *p++ = ']';
        } else {
            p += pg_fmt_f32_join(r, d, ',', 0, p);
            *p++ = '\n';
        }
    }
    return (size_t)(p - o);
}

static int check_spec(const pg_samples_spec *sp, pg_error *err)
{
    size_t prod = 1;
    for (int i = 0; i < sp->ndim; i++) prod *= sp->shape[i];
    if (sp->d == 0 || sp->ndim < 1 || sp->ndim > 3 || prod != sp->d ||
        sp->format < PG_SAMPLES_JSON || sp->format > PG_SAMPLES_NPY)
        return pg_error_set(err, PG_EINVAL, "the sample shape cannot be encoded");
    if (sp->n > (SIZE_MAX / 64) / sp->d) return pg_error_set(err, PG_EINVAL, "too many samples");
    return PG_OK;
}

size_t pg_samples_body_size(const pg_samples_spec *sp)
{
    if (sp->format != PG_SAMPLES_NPY || check_spec(sp, NULL)) return 0;
    char h[256];
    return npy_head(sp, h, sizeof h) + sp->n * sp->d * sizeof(float);
}

int pg_samples_encode(const pg_samples_spec *sp, const float *x, char **out, size_t *len,
                      pg_error *err)
{
    *out = NULL;
    *len = 0;
    int rc = check_spec(sp, err);
    if (rc) return rc;
    size_t cap = head_max(sp) + sp->n * row_max(sp) + 64 + PG_FMT_F32_MAX;
    char *b = malloc(cap);
    if (!b) return pg_error_set(err, PG_ENOMEM, "out of memory encoding samples");
    size_t k = put_head(sp, b);
    k += put_rows(sp, x, sp->n, 0, b + k);
    k += put_tail(sp, b + k);
    /* Text bodies end up well below the bound: give the slack back. */
    char *s = k + 1 < cap / 2 ? realloc(b, k + 1) : NULL;
    *out = s ? s : b;
    *len = k;
    return PG_OK;
}

/* ---- streams ------------------------------------------------------------ */

enum { PH_HEAD, PH_ROWS, PH_TAIL, PH_DONE };

struct pg_samples_stream {
    pg_samples_spec sp;
    pg_snapshot *snap;
    size_t block_rows;
    float *block; /* the current block's rows */
    size_t in_block, used_in_block, block_index;
    size_t next_row; /* rows encoded so far */
    char *text;
    size_t text_cap;
    const char *src; /* bytes pending: text, or the block itself for NPY */
    size_t src_len, src_off;
    int phase;
};

int pg_samples_stream_open(const pg_samples_spec *sp, pg_snapshot *snap, pg_samples_stream **out,
                           pg_error *err)
{
    *out = NULL;
    int rc = check_spec(sp, err);
    if (rc) return rc;
    pg_samples_stream *st = calloc(1, sizeof *st);
    if (!st) return pg_error_set(err, PG_ENOMEM, "out of memory opening a samples stream");
    st->sp = *sp;
    st->block_rows = pg_samples_block_rows(sp->d);
    size_t rows = sp->n < st->block_rows ? sp->n : st->block_rows;
    st->block = pg_alloc_f32(rows * sp->d);
    size_t need = head_max(sp) > row_max(sp) ? head_max(sp) : row_max(sp);
    st->text_cap = need > TEXT_CAP ? need : TEXT_CAP;
    /* + PG_FMT_F32_MAX: the printer's scratch past the last value */
    st->text = malloc(st->text_cap + PG_FMT_F32_MAX);
    if (!st->block || !st->text) {
        pg_samples_stream_free(st);
        return pg_error_set(err, PG_ENOMEM, "out of memory opening a samples stream");
    }
    pg_snapshot_retain(snap);
    st->snap = snap;
    *out = st;
    return PG_OK;
}

/* Makes sure the current block has rows left to encode (draws the next
 * block when it is used up); -1 on a sampling error. */
static int ensure_block(pg_samples_stream *st, pg_error *err)
{
    const pg_samples_spec *sp = &st->sp;
    if (st->used_in_block < st->in_block) return 0;
    size_t rows = sp->n - st->next_row;
    if (rows > st->block_rows) rows = st->block_rows;
    pg_cpu_scope sc;
    pg_cpu_scope_begin(sp->cpu, sp->cpu_cap, &sc);
    int rc = pg_snapshot_sample(st->snap, rows, pg_samples_block_seed(sp->seed, st->block_index),
                                sp->label, st->block, err);
    pg_cpu_scope_end(&sc);
    if (rc) return -1;
    st->block_index++;
    st->in_block = rows;
    st->used_in_block = 0;
    return 0;
}

/* Stages the next bytes (src/src_len); 0 at the end, -1 on error. */
static int refill(pg_samples_stream *st, pg_error *err)
{
    const pg_samples_spec *sp = &st->sp;
    st->src = st->text;
    st->src_off = st->src_len = 0;
    for (;;) {
        switch (st->phase) {
        case PH_HEAD:
            st->src_len = put_head(sp, st->text);
            st->phase = PH_ROWS;
            return 1;
        case PH_ROWS: {
            if (st->next_row == sp->n) {
                st->phase = PH_TAIL;
                continue;
            }
            if (ensure_block(st, err)) return -1;
            size_t left = st->in_block - st->used_in_block;
            const float *x = st->block + st->used_in_block * sp->d;
            if (sp->format == PG_SAMPLES_NPY) { /* hand out the floats themselves */
                st->src = (const char *)x;
                st->src_len = left * sp->d * sizeof(float);
                st->used_in_block += left;
                st->next_row += left;
                return 1;
            }
            size_t fit = st->text_cap / row_max(sp);
            size_t rows = left < fit ? left : fit;
            st->src_len = put_rows(sp, x, rows, st->next_row, st->text);
            st->used_in_block += rows;
            st->next_row += rows;
            return 1;
        }
        case PH_TAIL:
            st->src_len = put_tail(sp, st->text);
            st->phase = PH_DONE;
            if (st->src_len) return 1;
            continue;
        default:
            return 0;
        }
    }
}

/* Text rows printed straight into the caller's buffer (no staging copy)
 * while whole worst-case rows, and the printer's scratch, fit in it: the
 * count of bytes written, 0 when not even one row fits (or not in the
 * rows), -1 on a sampling error. */
static ssize_t rows_direct(pg_samples_stream *st, char *buf, size_t room, pg_error *err)
{
    const pg_samples_spec *sp = &st->sp;
    size_t rm = row_max(sp);
    if (sp->format == PG_SAMPLES_NPY || st->phase != PH_ROWS || st->next_row == sp->n ||
        room < rm + PG_FMT_F32_MAX)
        return 0;
    if (ensure_block(st, err)) return -1;
    size_t left = st->in_block - st->used_in_block, fit = (room - PG_FMT_F32_MAX) / rm;
    size_t rows = left < fit ? left : fit;
    size_t k = put_rows(sp, st->block + st->used_in_block * sp->d, rows, st->next_row, buf);
    st->used_in_block += rows;
    st->next_row += rows;
    return (ssize_t)k;
}

ssize_t pg_samples_stream_read(pg_samples_stream *st, char *buf, size_t cap, pg_error *err)
{
    size_t done = 0;
    while (done < cap) {
        if (st->src_off == st->src_len) {
            ssize_t k = rows_direct(st, buf + done, cap - done, err);
            if (k < 0) return -1;
            if (k > 0) {
                done += (size_t)k;
                continue;
            }
            int r = refill(st, err);
            if (r < 0) return -1;
            if (r == 0) break;
            continue;
        }
        size_t k = st->src_len - st->src_off;
        if (k > cap - done) k = cap - done;
        memcpy(buf + done, st->src + st->src_off, k);
        st->src_off += k;
        done += k;
    }
    return (ssize_t)done;
}

size_t pg_samples_stream_footprint(const pg_samples_stream *st)
{
    size_t rows = st->sp.n < st->block_rows ? st->sp.n : st->block_rows;
    return sizeof *st + rows * st->sp.d * sizeof(float) + st->text_cap + PG_FMT_F32_MAX;
}

void pg_samples_stream_free(pg_samples_stream *st)
{
    if (!st) return;
    pg_snapshot_release(st->snap);
    pg_free(st->block);
    free(st->text);
    free(st);
}
