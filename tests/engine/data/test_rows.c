#include <zlib.h>

#include "engine/core/alloc.h"
#include "engine/data/idx.h"
#include "engine/data/npy.h"
#include "engine/data/raw.h"
#include "engine/data/rows.h"
#include "support/pg_gzip_test.h"
#include "support/pg_test.h"

static const float X[12] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, -11.5f};

/* gzip-compresses src (test fixture, level 6); returns malloc'ed bytes. */
static unsigned char *gz(const void *src, size_t n, size_t *out_n)
{
    return pg_test_gzip(src, n, 6, out_n);
}

static void expect(const pg_rows *r, int format, size_t n, size_t d)
{
    ck_assert_int_eq(r->format, format);
    ck_assert_uint_eq(r->n, n);
    ck_assert_uint_eq(r->d, d);
    ck_assert_int_eq(memcmp(r->x, X, n * d * sizeof(float)), 0);
}

START_TEST(autodetects_every_format)
{
    pg_rows r;
    pg_error err = {0};
    pg_rows_limits lim = {0, 0, 1 << 20, 0};

    size_t shape[3] = {3, 2, 2};
    size_t nn = pg_npy_size(shape, 3);
    unsigned char *npy = malloc(nn);
    ck_assert_int_eq(pg_npy_write(X, shape, 3, npy, nn, NULL), PG_OK);
    ck_assert_msg(pg_rows_decode(npy, nn, PG_ROWS_AUTO, &lim, &r, &err) == PG_OK, "%s", err.msg);
    expect(&r, PG_ROWS_NPY, 3, 4);
    ck_assert(r.ndim == 2 && r.shape[0] == 2 && r.shape[1] == 2);
    ck_assert_ptr_null(r.labels);
    pg_rows_free(&r);
    size_t flat[1] = {12};
    nn = pg_npy_size(flat, 1);
    ck_assert_int_eq(pg_npy_write(X, flat, 1, npy, nn, NULL), PG_OK);
    ck_assert_int_eq(pg_rows_decode(npy, nn, PG_ROWS_AUTO, &lim, &r, &err), PG_OK);
    expect(&r, PG_ROWS_NPY, 12, 1);
    ck_assert(r.ndim == 1 && r.shape[0] == 1);
    pg_rows_free(&r);
    free(npy);

    size_t in;
    size_t dims[2] = {4, 3};
    in = pg_idx_size(PG_IDX_F32, dims, 2);
    unsigned char *idx = malloc(in);
    ck_assert_int_eq(pg_idx_write(PG_IDX_F32, X, dims, 2, idx, in, NULL), PG_OK);
    ck_assert_int_eq(pg_rows_decode(idx, in, PG_ROWS_AUTO, &lim, &r, &err), PG_OK);
    expect(&r, PG_ROWS_IDX, 4, 3);
    pg_rows_free(&r);
    size_t zn;
    unsigned char *z = gz(idx, in, &zn);
    ck_assert_int_eq(pg_rows_decode(z, zn, PG_ROWS_AUTO, &lim, &r, &err), PG_OK);
    expect(&r, PG_ROWS_IDX, 4, 3);
    pg_rows_free(&r);
    pg_rows_limits nogz = {0, 0, 0, 0};
    ck_assert_int_eq(pg_rows_decode(z, zn, PG_ROWS_AUTO, &nogz, &r, &err), PG_EINVAL);
    ck_assert(strstr(err.msg, "decompression limit") != NULL);
    pg_rows_limits small = {0, 0, in - 1, 0};
    ck_assert_int_eq(pg_rows_decode(z, zn, PG_ROWS_AUTO, &small, &r, &err), PG_ENOMEM);
    free(z);
    free(idx);

    const char *csv = "a,b,label\n0,1,7\n2,3,8\n";
    ck_assert_int_eq(pg_rows_decode(csv, strlen(csv), PG_ROWS_AUTO, NULL, &r, &err), PG_OK);
    expect(&r, PG_ROWS_CSV, 2, 2);
    ck_assert(r.labels && r.labels[0] == 7 && r.labels[1] == 8);
    pg_rows_free(&r);

    unsigned char raw[48];
    pg_raw_write(X, 12, raw);
    pg_rows_limits rl = {0, 0, 0, 6};
    ck_assert_int_eq(pg_rows_decode(raw, 48, PG_ROWS_RAW, &rl, &r, &err), PG_OK);
    expect(&r, PG_ROWS_RAW, 2, 6);
    pg_rows_free(&r);
    rl.raw_d = 5;
    ck_assert_int_eq(pg_rows_decode(raw, 48, PG_ROWS_RAW, &rl, &r, &err), PG_EFORMAT);
    rl.raw_d = 0;
    ck_assert_int_eq(pg_rows_decode(raw, 48, PG_ROWS_RAW, &rl, &r, &err), PG_EINVAL);
    /* Raw is never guessed: these bytes read as (bad) CSV. */
    ck_assert_int_eq(pg_rows_decode(raw, 48, PG_ROWS_AUTO, NULL, &r, &err), PG_EFORMAT);
    ck_assert_ptr_null(r.x);
}
END_TEST

START_TEST(limits_apply_to_every_format)
{
    pg_rows r;
    pg_error err = {0};
    size_t shape[2] = {3, 4};
    size_t nn = pg_npy_size(shape, 2);
    unsigned char *npy = malloc(nn);
    ck_assert_int_eq(pg_npy_write(X, shape, 2, npy, nn, NULL), PG_OK);
    size_t in = pg_idx_size(PG_IDX_F32, shape, 2);
    unsigned char *idx = malloc(in);
    ck_assert_int_eq(pg_idx_write(PG_IDX_F32, X, shape, 2, idx, in, NULL), PG_OK);
    const char *csv = "0,1,2,3\n4,5,6,7\n8,9,10,-11.5\n";
    unsigned char raw[48];
    pg_raw_write(X, 12, raw);
    struct {
        const void *b;
        size_t n;
        int fmt;
    } in_[4] = {{npy, nn, PG_ROWS_NPY},
                {idx, in, PG_ROWS_IDX},
                {csv, strlen(csv), PG_ROWS_CSV},
                {raw, 48, PG_ROWS_RAW}};
    for (int i = 0; i < 4; i++) {
        pg_rows_limits ok = {3, 4, 0, 4}, rows = {2, 0, 0, 4}, cols = {0, 3, 0, 4};
        ck_assert_int_eq(pg_rows_decode(in_[i].b, in_[i].n, in_[i].fmt, &ok, &r, &err), PG_OK);
        expect(&r, in_[i].fmt, 3, 4);
        pg_rows_free(&r);
        ck_assert_int_eq(pg_rows_decode(in_[i].b, in_[i].n, in_[i].fmt, &rows, &r, &err),
                         PG_ENOMEM);
        ck_assert_ptr_null(r.x);
        ck_assert_int_eq(pg_rows_decode(in_[i].b, in_[i].n, in_[i].fmt, &cols, &r, &err),
                         PG_ENOMEM);
        ck_assert_ptr_null(r.x);
    }
    free(npy);
    free(idx);

    int f;
    ck_assert_int_eq(pg_rows_format_from_name("idx", &f, NULL), PG_OK);
    ck_assert_int_eq(f, PG_ROWS_IDX);
    ck_assert_int_eq(pg_rows_format_from_name("parquet", &f, &err), PG_EINVAL);
    ck_assert_int_eq(pg_rows_decode(csv, 3, 99, NULL, &r, &err), PG_EINVAL);
    /* Zero-width rows are refused; zero rows are fine. */
    size_t zw[2] = {2, 0}, zr[2] = {0, 5};
    unsigned char b[256];
    ck_assert_int_eq(pg_npy_write(X, zw, 2, b, sizeof b, NULL), PG_OK);
    ck_assert_int_eq(pg_rows_decode(b, pg_npy_size(zw, 2), PG_ROWS_AUTO, NULL, &r, &err),
                     PG_EFORMAT);
    ck_assert_int_eq(pg_npy_write(X, zr, 2, b, sizeof b, NULL), PG_OK);
    ck_assert_int_eq(pg_rows_decode(b, pg_npy_size(zr, 2), PG_ROWS_AUTO, NULL, &r, &err), PG_OK);
    ck_assert(r.n == 0 && r.d == 5 && r.x != NULL);
    pg_rows_free(&r);
}
END_TEST

static Suite *rows_suite(void)
{
    Suite *s = suite_create("data/rows");
    TCase *tc = tcase_create("rows");
    tcase_add_test(tc, autodetects_every_format);
    tcase_add_test(tc, limits_apply_to_every_format);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(rows_suite)
