/* Streaming NPY decoder: any split of the body gives exactly what the
 * whole-buffer reader gives; truncation, excess and hostile headers fail. */
#include <stdio.h>
#include <string.h>

#include "render/npy_stream.h"
#include "engine/core/alloc.h"
#include "support/pg_test.h"

typedef struct collect {
    float out[4096];
    size_t n;
    int headers;
    int stop_at_header;
} collect;

static int c_header(void *ctx, const pg_npy_header *h, pg_error *err)
{
    collect *c = ctx;
    c->headers++;
    (void)h;
    return c->stop_at_header ? pg_error_set(err, PG_EINVAL, "stopped") : PG_OK;
}

static int c_values(void *ctx, const float *x, size_t count, uint64_t first, pg_error *err)
{
    collect *c = ctx;
    if (first != c->n || c->n + count > 4096) return pg_error_set(err, PG_ERANGE, "bad index");
    memcpy(c->out + c->n, x, count * sizeof *x);
    c->n += count;
    return PG_OK;
}

static const pg_npy_stream_cb CB = {c_header, c_values};

/* Feeds buf in pieces whose sizes come from a small LCG. */
static int feed_split(pg_npy_stream *s, const unsigned char *buf, size_t len, unsigned seed,
                      collect *c)
{
    size_t at = 0;
    while (at < len) {
        seed = seed * 1103515245u + 12345u;
        size_t k = 1 + (seed >> 16) % (seed % 3 == 0 ? 3 : 200);
        if (k > len - at) k = len - at;
        int rc = pg_npy_stream_feed(s, buf + at, k, &CB, c, NULL);
        if (rc) return rc;
        at += k;
    }
    return PG_OK;
}

static size_t be_f8(unsigned char *buf, const double *v, size_t n0, size_t n1, size_t n2, int v2)
{
    char hdr[160];
    int hl = snprintf(hdr, sizeof hdr,
                      "{'descr': '>f8', 'fortran_order': False, 'shape': (%zu, %zu, %zu), }", n0,
                      n1, n2);
    size_t pre = v2 ? 12 : 10, total = pre + (size_t)hl + 1, pad = (64 - total % 64) % 64;
    size_t len = (size_t)hl + pad + 1;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = v2 ? 2 : 1;
    buf[7] = 0;
    memset(buf + 8, 0, 4);
    buf[8] = (unsigned char)(len & 255);
    buf[9] = (unsigned char)(len >> 8);
    memcpy(buf + pre, hdr, (size_t)hl);
    memset(buf + pre + hl, ' ', pad);
    buf[pre + len - 1] = '\n';
    size_t at = pre + len;
    for (size_t i = 0; i < n0 * n1 * n2; i++)
        for (int k = 0; k < 8; k++) buf[at + i * 8 + (size_t)k] = ((unsigned char *)&v[i])[7 - k];
    return at + n0 * n1 * n2 * 8;
}

static void check_against_reader(const unsigned char *buf, size_t len)
{
    pg_npy_header h;
    float *ref;
    ck_assert_int_eq(pg_npy_read(buf, len, &h, &ref, NULL), PG_OK);
    for (unsigned seed = 1; seed < 40; seed++) {
        pg_npy_stream *s = malloc(sizeof *s);
        collect *c = calloc(1, sizeof *c);
        pg_npy_stream_init(s);
        ck_assert_int_eq(feed_split(s, buf, len, seed, c), PG_OK);
        ck_assert(pg_npy_stream_complete(s));
        ck_assert_int_eq(c->headers, 1);
        ck_assert_uint_eq(c->n, h.count);
        ck_assert_mem_eq(c->out, ref, h.count * sizeof *ref);
        free(s);
        free(c);
    }
    pg_free(ref);
}

START_TEST(any_split_matches_whole_reader)
{
    static unsigned char buf[65536];
    float f[300];
    for (int i = 0; i < 300; i++) f[i] = (float)i * 0.37f - 20.0f;
    size_t shape[2] = {100, 3};
    size_t len = pg_npy_size(shape, 2);
    ck_assert_int_eq(pg_npy_write(f, shape, 2, buf, sizeof buf, NULL), PG_OK);
    check_against_reader(buf, len);
    double d[60];
    for (int i = 0; i < 60; i++) d[i] = (double)i / 7.0 - 3.0;
    check_against_reader(buf, be_f8(buf, d, 5, 3, 4, 0));
    check_against_reader(buf, be_f8(buf, d, 2, 5, 6, 1)); /* v2.0 header */
}
END_TEST

START_TEST(truncation_excess_and_hostile_headers)
{
    static unsigned char buf[4096];
    float f[6] = {1, 2, 3, 4, 5, 6};
    size_t shape[2] = {2, 3};
    size_t len = pg_npy_size(shape, 2);
    pg_npy_write(f, shape, 2, buf, sizeof buf, NULL);
    static pg_npy_stream s;
    collect c = {0};
    for (size_t cut = 0; cut < len; cut++) { /* every prefix: incomplete, never an error */
        pg_npy_stream_init(&s);
        memset(&c, 0, sizeof c);
        ck_assert_int_eq(pg_npy_stream_feed(&s, buf, cut, &CB, &c, NULL), PG_OK);
        ck_assert(!pg_npy_stream_complete(&s));
    }
    buf[len] = 0;
    pg_npy_stream_init(&s);
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(pg_npy_stream_feed(&s, buf, len + 1, &CB, &c, NULL), PG_EFORMAT);
    /* bad magic; a v2 header claiming 1 GiB; an unsupported dtype */
    pg_npy_stream_init(&s);
    ck_assert_int_eq(pg_npy_stream_feed(&s, "\x93NUMPX\x01\x00\x10\x00", 10, &CB, &c, NULL),
                     PG_EFORMAT);
    pg_npy_stream_init(&s);
    ck_assert_int_eq(pg_npy_stream_feed(&s, "\x93NUMPY\x02\x00\x00\x00\x00\x40", 12, &CB, &c, NULL),
                     PG_EFORMAT);
    unsigned char bad[512];
    memcpy(bad, buf, len);
    unsigned char *descr = memmem(bad, len, "<f4", 3);
    ck_assert_ptr_nonnull(descr);
    descr[1] = 'i'; /* '<i4' */
    pg_npy_stream_init(&s);
    ck_assert_int_ne(pg_npy_stream_feed(&s, bad, len, &CB, &c, NULL), PG_OK);
    /* a header callback's refusal stops the stream with its code */
    pg_npy_stream_init(&s);
    memset(&c, 0, sizeof c);
    c.stop_at_header = 1;
    ck_assert_int_eq(pg_npy_stream_feed(&s, buf, len, &CB, &c, NULL), PG_EINVAL);
    ck_assert_uint_eq(c.n, 0);
}
END_TEST

START_TEST(raw_mode)
{
    float f[10] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9};
    static pg_npy_stream s;
    collect c = {0};
    pg_npy_stream_init_raw(&s, 10);
    ck_assert_int_eq(feed_split(&s, (const unsigned char *)f, sizeof f, 7, &c), PG_OK);
    ck_assert(pg_npy_stream_complete(&s));
    ck_assert_int_eq(c.headers, 0);
    ck_assert_mem_eq(c.out, f, sizeof f);
    pg_npy_stream_init_raw(&s, 9);
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(pg_npy_stream_feed(&s, f, sizeof f, &CB, &c, NULL), PG_EFORMAT);
    pg_npy_stream_init_raw(&s, 10);
    memset(&c, 0, sizeof c);
    ck_assert_int_eq(pg_npy_stream_feed(&s, f, sizeof f - 1, &CB, &c, NULL), PG_OK);
    ck_assert(!pg_npy_stream_complete(&s));
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("npy_stream");
    TCase *t = tcase_create("core");
    tcase_add_test(t, any_split_matches_whole_reader);
    tcase_add_test(t, truncation_excess_and_hostile_headers);
    tcase_add_test(t, raw_mode);
    suite_add_tcase(s, t);
    return s;
}

PG_TEST_MAIN(suite)
