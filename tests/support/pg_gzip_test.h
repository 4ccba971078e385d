/* tests/support/pg_gzip_test.h - gzip-compressed fixtures for the readers'
 * tests (one gzip member, zlib's deflate at the given level).
 * Check assertions fail the calling test if zlib refuses.
 */
#ifndef PG_GZIP_TEST_H
#define PG_GZIP_TEST_H

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* src[0..n) as one gzip member at level (0-9): malloc'ed bytes (caller
 * frees), their length into *out_n. */
static inline unsigned char *pg_test_gzip(const void *src, size_t n, int level, size_t *out_n)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    ck_assert_int_eq(deflateInit2(&zs, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY),
                     Z_OK);
    size_t cap = deflateBound(&zs, (uLong)n) + 64;
    unsigned char *o = malloc(cap);
    ck_assert_ptr_nonnull(o);
    zs.next_in = (unsigned char *)src;
    zs.avail_in = (uInt)n;
    zs.next_out = o;
    zs.avail_out = (uInt)cap;
    ck_assert_int_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
    *out_n = zs.total_out;
    deflateEnd(&zs);
    return o;
}

#endif
