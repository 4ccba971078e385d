/* Samples bodies: a streamed body (read in pieces of every size) is byte for
 * byte the whole-body encoding of the same rows; NPY equals the independent
 * writer's bytes (render/render.h); text values read back bit for bit with
 * strtof; the block rule draws the first block with the request's seed; a
 * stream's own memory does not grow with n. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

#include "render/render.h"
#include "render/samples_stream.h"
#include "engine/core/alloc.h"
#include "engine/core/rng.h"
#include "engine/methods/snapshot.h"
#include "support/pg_test.h"

/* A model whose rows are a pure function of (seed, row within the call):
 * random bit patterns (subnormals, huge values, both zeros) and, in one row
 * in 97, a NaN and an infinity. */
typedef struct fake {
    size_t d;
    long calls;
} fake;

static int fake_sample(const void *impl, size_t n, uint64_t seed, int label, float *out,
                       pg_error *err)
{
    const fake *f = impl;
    (void)label;
    (void)err;
    pg_rng r;
    pg_rng_seeded(&r, seed, 99);
    for (size_t i = 0; i < n; i++)
        for (size_t j = 0; j < f->d; j++) {
            uint32_t b = pg_rng_u32(&r);
            if ((b >> 23 & 0xff) == 0xff) b &= 0xbfffffff;
            float v;
            memcpy(&v, &b, sizeof v);
            if (j == 0 && i % 97 == 5) v = NAN;
            if (j == 1 && i % 97 == 5) v = -INFINITY;
            if (j == 0 && i % 3 == 1) v = (float)pg_rng_uniform(&r) * 8 - 4; /* plain range */
            out[i * f->d + j] = v;
        }
    return PG_OK;
}

static void fake_destroy(void *impl)
{
    free(impl);
}

static const pg_snapshot_ops FAKE = {fake_sample, fake_destroy, NULL};

static pg_snapshot *fake_snapshot(size_t d)
{
    fake *f = calloc(1, sizeof *f);
    f->d = d;
    pg_snapshot *s;
    ck_assert_int_eq(pg_snapshot_new(&FAKE, f, 7, d, 0, &s, NULL), PG_OK);
    return s;
}

static pg_samples_spec spec(int format, size_t n, size_t d)
{
    pg_samples_spec sp = {.format = format,
                          .n = n,
                          .d = d,
                          .ndim = 1,
                          .shape = {d, 0, 0},
                          .step = 7,
                          .seed = 12345,
                          .label = -1};
    if (d == 784) {
        sp.ndim = 3;
        sp.shape[0] = 1, sp.shape[1] = 28, sp.shape[2] = 28;
    }
    return sp;
}

/* The whole body streamed with read sizes from a small LCG (1 byte to 100 KB):
 * large reads take the path that prints rows straight into the caller's
 * buffer, small ones the staged path. A canary after each read's window
 * proves neither writes past it (the printer's scratch included). */
static char *stream_all(const pg_samples_spec *sp, pg_snapshot *s, size_t *len, unsigned seed)
{
    pg_samples_stream *st;
    ck_assert_int_eq(pg_samples_stream_open(sp, s, &st, NULL), PG_OK);
    size_t cap = 1 << 16, k = 0;
    char *out = malloc(cap);
    for (;;) {
        seed = seed * 1103515245u + 12345u;
        size_t want = seed % 5 == 0 ? 1 + seed % 7 : 1 + (seed >> 8) % 100000;
        if (k + want + 64 > cap) {
            while (k + want + 64 > cap) cap *= 2;
            out = realloc(out, cap);
        }
        memset(out + k + want, 0xA5, 64);
        ssize_t got = pg_samples_stream_read(st, out + k, want, NULL);
        ck_assert_int_ge(got, 0);
        for (size_t i = 0; i < 64; i++) ck_assert_int_eq((unsigned char)out[k + want + i], 0xA5);
        if (got == 0) break;
        ck_assert_uint_le((size_t)got, want);
        k += (size_t)got;
    }
    ck_assert_int_eq(pg_samples_stream_read(st, out, 16, NULL), 0); /* stays at the end */
    pg_samples_stream_free(st);
    *len = k;
    return out;
}

/* Values of a text body in order (null -> NaN) read with strtof. */
static size_t text_values(const char *b, size_t len, int json, float *out, size_t cap)
{
    const char *p = b, *end = b + len;
    size_t n = 0;
    if (json)
        p = strstr(b, "\"samples\":") + 10;
    else
        p = memchr(b, '\n', len) + 1; /* skip the CSV header */
    while (p < end && n < cap) {
        if (json && !strncmp(p, "],\"seed\"", 8)) break;
        if (*p == '-' || (*p >= '0' && *p <= '9') || *p == 'N' || *p == 'I') {
            char *e;
            out[n++] = strtof(p, &e);
            ck_assert_ptr_ne(e, p);
            p = e;
        } else if (json && !strncmp(p, "null", 4)) {
            out[n++] = NAN;
            p += 4;
        } else {
            p++;
        }
    }
    return n;
}

START_TEST(stream_equals_whole_body)
{
    size_t ds[] = {2, 784, 3};
    size_t d = ds[_i % 3];
    size_t b = pg_samples_block_rows(d);
    size_t ns[] = {1, 5, b - 1, b, b + 1, 2 * b + 7};
    pg_snapshot *s = fake_snapshot(d);
    for (size_t in = 0; in < sizeof ns / sizeof ns[0]; in++) {
        size_t n = ns[in];
        if (d == 784 && n > 400) continue; /* wide rows: one block and its edges */
        for (int format = PG_SAMPLES_JSON; format <= PG_SAMPLES_NPY; format++) {
            pg_samples_spec sp = spec(format, n, d);
            float *x = pg_alloc_f32(n * d);
            ck_assert_int_eq(pg_samples_draw(s, &sp, x, NULL), PG_OK);
            char *whole;
            size_t wlen;
            ck_assert_int_eq(pg_samples_encode(&sp, x, &whole, &wlen, NULL), PG_OK);
            size_t slen;
            char *streamed = stream_all(&sp, s, &slen, (unsigned)(n + 31 * format));
            ck_assert_uint_eq(slen, wlen);
            ck_assert(memcmp(streamed, whole, wlen) == 0);
            if (format == PG_SAMPLES_NPY) {
                ck_assert_uint_eq(pg_samples_body_size(&sp), wlen);
                char *ref;
                size_t rlen;
                ck_assert_int_eq(pg_render_npy(x, n, sp.shape, sp.ndim, &ref, &rlen, NULL), PG_OK);
                ck_assert_uint_eq(rlen, wlen);
                ck_assert(memcmp(ref, whole, wlen) == 0);
                free(ref);
            } else {
                ck_assert_uint_eq(pg_samples_body_size(&sp), 0);
                float *back = pg_alloc_f32(n * d + 1);
                size_t got = text_values(whole, wlen, format == PG_SAMPLES_JSON, back, n * d + 1);
                ck_assert_uint_eq(got, n * d);
                for (size_t i = 0; i < n * d; i++) {
                    if (isnan(x[i])) {
                        ck_assert(isnan(back[i]));
                    } else if (format == PG_SAMPLES_JSON && !isfinite(x[i])) {
                        ck_assert(isnan(back[i])); /* JSON has no infinity: null */
                    } else {
                        ck_assert(memcmp(&back[i], &x[i], sizeof(float)) == 0);
                    }
                }
                pg_free(back);
            }
            if (format == PG_SAMPLES_JSON) {
                json_error_t je;
                json_t *o = json_loadb(whole, wlen, 0, &je);
                ck_assert_msg(o != NULL, "invalid JSON: %s", je.text);
                ck_assert_int_eq(json_integer_value(json_object_get(o, "n")), (json_int_t)n);
                ck_assert_int_eq(json_integer_value(json_object_get(o, "d")), (json_int_t)d);
                ck_assert_int_eq(json_integer_value(json_object_get(o, "step")), 7);
                ck_assert_int_eq(json_integer_value(json_object_get(o, "seed")), 12345);
                ck_assert_uint_eq(json_array_size(json_object_get(o, "samples")), n);
                json_decref(o);
            }
            free(whole);
            free(streamed);
            pg_free(x);
        }
    }
    pg_snapshot_release(s);
}
END_TEST

/* Block 0 is one sampling call with the request's seed; later blocks use
 * other seeds (so they are not copies of block 0). */
START_TEST(block_rule)
{
    size_t d = 2, b = pg_samples_block_rows(d);
    pg_snapshot *s = fake_snapshot(d);
    pg_samples_spec sp = spec(PG_SAMPLES_NPY, 2 * b, d);
    float *x = pg_alloc_f32(2 * b * d), *y = pg_alloc_f32(2 * b * d);
    ck_assert_int_eq(pg_samples_draw(s, &sp, x, NULL), PG_OK);
    ck_assert_int_eq(pg_snapshot_sample(s, b, sp.seed, -1, y, NULL), PG_OK);
    ck_assert(memcmp(x, y, b * d * sizeof(float)) == 0);
    ck_assert(memcmp(x + b * d, y, b * d * sizeof(float)) != 0);
    ck_assert_int_eq(pg_snapshot_sample(s, b, pg_samples_block_seed(sp.seed, 1), -1, y, NULL),
                     PG_OK);
    ck_assert(memcmp(x + b * d, y, b * d * sizeof(float)) == 0);
    ck_assert_uint_eq(pg_samples_block_seed(77, 0), 77);
    ck_assert_uint_ne(pg_samples_block_seed(77, 1), pg_samples_block_seed(77, 2));
    ck_assert_uint_ge(pg_samples_block_rows(1), 1);
    ck_assert_uint_ge(pg_samples_block_rows(1 << 20), 1);
    pg_free(x);
    pg_free(y);
    pg_snapshot_release(s);
}
END_TEST

/* A stream's buffers are one block and a fixed text window, whatever n:
 * the same footprint for 5e3 and 3e8 rows, under 2 MiB; and a 5000 x 784
 * NPY body (16 MB, 15 blocks) streams through with exactly its announced size. */
START_TEST(memory_is_flat)
{
    pg_snapshot *s = fake_snapshot(784);
    for (int format = PG_SAMPLES_JSON; format <= PG_SAMPLES_NPY; format++) {
        pg_samples_spec small = spec(format, 5000, 784), huge = spec(format, 300000000, 784);
        pg_samples_stream *a, *b;
        ck_assert_int_eq(pg_samples_stream_open(&small, s, &a, NULL), PG_OK);
        ck_assert_int_eq(pg_samples_stream_open(&huge, s, &b, NULL), PG_OK);
        ck_assert_uint_eq(pg_samples_stream_footprint(a), pg_samples_stream_footprint(b));
        ck_assert_uint_lt(pg_samples_stream_footprint(a), (size_t)2 << 20);
        if (format == PG_SAMPLES_NPY) {
            char buf[1 << 16];
            size_t total = 0;
            ssize_t k;
            while ((k = pg_samples_stream_read(a, buf, sizeof buf, NULL)) > 0) total += (size_t)k;
            ck_assert_int_eq(k, 0);
            ck_assert_uint_eq(total, pg_samples_body_size(&small));
        }
        pg_samples_stream_free(a);
        pg_samples_stream_free(b);
    }
    pg_snapshot_release(s);
}
END_TEST

START_TEST(bad_specs)
{
    pg_snapshot *s = fake_snapshot(4);
    pg_samples_stream *st;
    pg_error err = {0};
    pg_samples_spec sp = spec(PG_SAMPLES_NPY, 3, 4);
    sp.shape[0] = 5; /* product != d */
    ck_assert_int_eq(pg_samples_stream_open(&sp, s, &st, &err), PG_EINVAL);
    char *out;
    size_t len;
    float x[12] = {0};
    ck_assert_int_eq(pg_samples_encode(&sp, x, &out, &len, &err), PG_EINVAL);
    sp = spec(7, 3, 4);
    ck_assert_int_eq(pg_samples_encode(&sp, x, &out, &len, &err), PG_EINVAL);
    pg_snapshot_release(s);
}
END_TEST

static Suite *samples_suite(void)
{
    Suite *s = suite_create("render/samples_stream");
    TCase *tc = tcase_create("stream");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, stream_equals_whole_body, 0, 3);
    tcase_add_test(tc, block_rule);
    tcase_add_test(tc, memory_is_flat);
    tcase_add_test(tc, bad_specs);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(samples_suite)
