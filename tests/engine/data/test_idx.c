#include <zlib.h>

#include "engine/core/alloc.h"
#include "engine/data/gzip.h"
#include "engine/data/idx.h"
#include "support/pg_gzip_test.h"
#include "support/pg_test.h"

/* gzip-compresses src (test fixture, level 9); returns malloc'ed bytes. */
static unsigned char *gz(const void *src, size_t n, size_t *out_n)
{
    return pg_test_gzip(src, n, 9, out_n);
}

static unsigned char *make_idx(int type, const void *data, const size_t *dims, int ndim, size_t *n)
{
    *n = pg_idx_size(type, dims, ndim);
    ck_assert_uint_gt(*n, 0);
    unsigned char *b = malloc(*n);
    ck_assert_int_eq(pg_idx_write(type, data, dims, ndim, b, *n, NULL), PG_OK);
    return b;
}

START_TEST(mnist_layout_bytes)
{
    /* Hand-written bytes of a 2x3 uint8 "image" file, as in the MNIST spec. */
    const unsigned char f[] = {0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 0, 1, 2, 127, 128, 255};
    pg_idx_header h;
    float *x;
    int32_t *v;
    ck_assert_int_eq(pg_idx_read_f32(f, sizeof f, 0, &h, &x, NULL), PG_OK);
    ck_assert_int_eq(h.type, PG_IDX_U8);
    ck_assert_int_eq(h.ndim, 2);
    ck_assert_uint_eq(h.dims[0], 2);
    ck_assert_uint_eq(h.dims[1], 3);
    ck_assert_uint_eq(h.count, 6);
    ck_assert_float_eq(x[3], 127.0f);
    ck_assert_float_eq(x[5], 255.0f);
    ck_assert_int_eq(pg_idx_read_i32(f, sizeof f, 0, &h, &v, NULL), PG_OK);
    ck_assert_int_eq(v[4], 128);
    pg_free(x);
    pg_free(v);
    size_t n;
    unsigned char u8[6] = {0, 1, 2, 127, 128, 255};
    size_t dims[2] = {2, 3};
    unsigned char *w = make_idx(PG_IDX_U8, u8, dims, 2, &n);
    ck_assert_uint_eq(n, sizeof f);
    ck_assert_int_eq(memcmp(w, f, n), 0);
    free(w);
}
END_TEST

START_TEST(every_type_roundtrips)
{
    size_t dims[3] = {2, 2, 2};
    int8_t i8[8] = {-128, -1, 0, 1, 2, 3, 100, 127};
    int16_t i16[8] = {-32768, -300, -1, 0, 1, 255, 256, 32767};
    int32_t i32[8] = {INT32_MIN, -70000, -1, 0, 1, 16777217, 70000, INT32_MAX};
    float f32[8] = {-1.5f, 0.0f, 1e-30f, 3.25f, -0.0f, 1e30f, 7, 8};
    double f64[8] = {-1.5, 0.0, 1e-30, 3.25, 0.1, 1e30, 7, 8};
    struct {
        int type;
        const void *data;
    } cases[] = {{PG_IDX_I8, i8},
                 {PG_IDX_I16, i16},
                 {PG_IDX_I32, i32},
                 {PG_IDX_F32, f32},
                 {PG_IDX_F64, f64}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        size_t n, zn;
        unsigned char *b = make_idx(cases[c].type, cases[c].data, dims, 3, &n);
        unsigned char *z = gz(b, n, &zn);
        for (int compressed = 0; compressed < 2; compressed++) {
            pg_idx_header h;
            float *x;
            int32_t *v;
            const void *src = compressed ? z : b;
            size_t sn = compressed ? zn : n;
            ck_assert_int_eq(pg_idx_read_f32(src, sn, n, &h, &x, NULL), PG_OK);
            ck_assert_int_eq(h.type, cases[c].type);
            ck_assert_uint_eq(h.count, 8);
            int rc = pg_idx_read_i32(src, sn, n, &h, &v, NULL);
            for (int i = 0; i < 8; i++) {
                switch (cases[c].type) {
                case PG_IDX_I8:
                    ck_assert_int_eq(v[i], i8[i]);
                    ck_assert_float_eq(x[i], i8[i]);
                    break;
                case PG_IDX_I16:
                    ck_assert_int_eq(v[i], i16[i]);
                    ck_assert_float_eq(x[i], i16[i]);
                    break;
                case PG_IDX_I32:
                    ck_assert_int_eq(v[i], i32[i]);
                    ck_assert_float_eq(x[i], (float)i32[i]);
                    break;
                case PG_IDX_F32:
                    ck_assert(memcmp(&x[i], &f32[i], 4) == 0);
                    break;
                case PG_IDX_F64:
                    ck_assert_float_eq(x[i], (float)f64[i]);
                    break;
                }
            }
            if (cases[c].type == PG_IDX_F32 || cases[c].type == PG_IDX_F64) {
                ck_assert_int_eq(rc, PG_ENOTSUP);
                ck_assert_ptr_null(v);
            } else {
                ck_assert_int_eq(rc, PG_OK);
                pg_free(v);
            }
            pg_free(x);
        }
        free(b);
        free(z);
    }
}
END_TEST

START_TEST(truncation_and_trailing_bytes)
{
    size_t dims[2] = {3, 4};
    float f[12] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    size_t n, zn;
    unsigned char *b = make_idx(PG_IDX_F32, f, dims, 2, &n);
    unsigned char *z = gz(b, n, &zn);
    pg_idx_header h;
    float *x = (float *)1;
    for (size_t cut = 0; cut < n; cut++) {
        ck_assert_int_ne(pg_idx_read_f32(b, cut, 1 << 20, &h, &x, NULL), PG_OK);
        ck_assert_ptr_null(x);
    }
    for (size_t cut = 0; cut < zn; cut++) {
        pg_error err = {0};
        ck_assert_int_ne(pg_idx_read_f32(z, cut, 1 << 20, &h, &x, &err), PG_OK);
        ck_assert_ptr_null(x);
        ck_assert(err.msg[0] != '\0');
        /* Same without an error record (a NULL err once turned gzip errors
         * into success). */
        ck_assert_int_ne(pg_idx_read_f32(z, cut, 1 << 20, &h, &x, NULL), PG_OK);
        ck_assert_ptr_null(x);
    }
    unsigned char *longer = malloc(n + 1);
    memcpy(longer, b, n);
    longer[n] = 0;
    pg_error err = {0};
    ck_assert_int_eq(pg_idx_read_f32(longer, n + 1, 0, &h, &x, &err), PG_EFORMAT);
    ck_assert(strstr(err.msg, "trailing") != NULL);
    free(longer);
    /* Gzip trailing garbage and a corrupted CRC are rejected; two members
     * concatenated decode as one file (gunzip semantics). */
    unsigned char *zz = malloc(2 * zn + 1);
    memcpy(zz, z, zn);
    zz[zn] = 'x';
    ck_assert_int_eq(pg_idx_read_f32(zz, zn + 1, 1 << 20, &h, &x, &err), PG_EFORMAT);
    ck_assert(strstr(err.msg, "trailing garbage") != NULL);
    memcpy(zz, z, zn);
    zz[zn - 6] ^= 0x55; /* inside the CRC32 trailer */
    ck_assert_int_eq(pg_idx_read_f32(zz, zn, 1 << 20, &h, &x, &err), PG_EFORMAT);
    size_t half = 20, z1n, z2n;
    unsigned char *z1 = gz(b, half, &z1n), *z2 = gz(b + half, n - half, &z2n);
    unsigned char *cat = malloc(z1n + z2n);
    memcpy(cat, z1, z1n);
    memcpy(cat + z1n, z2, z2n);
    ck_assert_int_eq(pg_idx_read_f32(cat, z1n + z2n, 1 << 20, &h, &x, NULL), PG_OK);
    ck_assert_int_eq(memcmp(x, f, sizeof f), 0);
    pg_free(x);
    free(z1);
    free(z2);
    free(cat);
    free(zz);
    free(b);
    free(z);
}
END_TEST

START_TEST(hostile_headers)
{
    const unsigned char bad[][20] = {
        {1, 0, 0x08, 1, 0, 0, 0, 1, 0}, /* bad magic */
        {0, 0, 0x0A, 1, 0, 0, 0, 1, 0}, /* unknown type */
        {0, 0, 0x08, 0},                /* 0 dims */
        {0, 0, 0x08, 9},                /* too many dims */
        {0, 0, 0x08, 3, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255}, /* 2^96 */
        {0, 0, 0x0E, 2, 255, 255, 255, 255, 32, 0, 0, 0}, /* 2^61 * 8 bytes */
        {0, 0, 0x08, 1, 0, 0, 0, 200, 1, 2},              /* payload short */
    };
    const size_t lens[] = {9, 9, 4, 4, 16, 12, 10};
    const int codes[] = {PG_EFORMAT, PG_ENOTSUP, PG_ENOTSUP, PG_ENOTSUP,
                         PG_EFORMAT, PG_EFORMAT, PG_EFORMAT};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        pg_idx_header h;
        float *x;
        pg_error err = {0};
        ck_assert_msg(pg_idx_read_f32(bad[i], lens[i], 0, &h, &x, &err) == codes[i], "case %zu: %s",
                      i, err.msg);
        ck_assert_ptr_null(x);
    }
    /* An empty dimension is a valid, empty array. */
    const unsigned char empty[] = {0, 0, 0x08, 2, 0, 0, 0, 0, 0, 0, 0, 28};
    pg_idx_header h;
    float *x;
    ck_assert_int_eq(pg_idx_read_f32(empty, sizeof empty, 0, &h, &x, NULL), PG_OK);
    ck_assert_uint_eq(h.count, 0);
    pg_free(x);
}
END_TEST

START_TEST(gzip_bomb_rejected_by_limit)
{
    /* 64 MiB of zeros compresses ~1000:1; the limit must stop inflation. */
    size_t big = 64u << 20;
    unsigned char *zeros = calloc(big, 1);
    zeros[3] = 0x08; /* looks like an IDX header, and a valid one when small */
    zeros[2] = 0x08;
    zeros[3] = 1;
    size_t zn;
    unsigned char *z = gz(zeros, big, &zn);
    free(zeros);
    ck_assert_uint_lt(zn, big / 500);
    pg_idx_header h;
    float *x;
    pg_error err = {0};
    ck_assert_int_eq(pg_idx_read_f32(z, zn, 1u << 20, &h, &x, &err), PG_ENOMEM);
    ck_assert_ptr_null(x);
    ck_assert(strstr(err.msg, "1048576-byte limit") != NULL);
    unsigned char *raw;
    size_t rn;
    ck_assert_int_eq(pg_gzip_inflate(z, zn, big - 1, &raw, &rn, NULL), PG_ENOMEM);
    ck_assert_ptr_null(raw);
    ck_assert_int_eq(pg_gzip_inflate(z, zn, big, &raw, &rn, NULL), PG_OK);
    ck_assert_uint_eq(rn, big);
    ck_assert_int_eq(raw[2], 0x08);
    ck_assert_int_eq(raw[big - 1], 0);
    pg_free(raw);
    free(z);
    /* Not gzip at all. */
    ck_assert_int_eq(pg_gzip_inflate("\x1f", 1, 10, &raw, &rn, NULL), PG_EFORMAT);
}
END_TEST

static Suite *idx_suite(void)
{
    Suite *s = suite_create("data/idx");
    TCase *tc = tcase_create("idx");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, mnist_layout_bytes);
    tcase_add_test(tc, every_type_roundtrips);
    tcase_add_test(tc, truncation_and_trailing_bytes);
    tcase_add_test(tc, hostile_headers);
    tcase_add_test(tc, gzip_bomb_rejected_by_limit);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(idx_suite)
