/* The model blob: bit-exact round trips; every truncation, bit flip and a
 * set of hostile blobs (valid checksum, bad contents) refused. */
#include <stdio.h>
#include <zlib.h>

#include "pgm_testutil.h"

static pg_pgm_model *fitted(void)
{
    /* A cycle (fill edge), an unmeasured attribute and noisy counts. */
    size_t sizes[5] = {2, 3, 2, 3, 4};
    pg_pgm_measure ms[4] = {{2, {0, 1}, NULL, 1, NULL},
                            {2, {1, 2}, NULL, 1, NULL},
                            {2, {2, 3}, NULL, 2, NULL},
                            {2, {0, 3}, NULL, 1, NULL}};
    static double ys[4][9];
    pg_rng r;
    pg_rng_seeded(&r, 8, 0);
    for (size_t i = 0; i < 4; i++) {
        for (size_t c = 0; c < 9; c++) ys[i][c] = 50 + 20 * pg_rng_normal(&r);
        ms[i].y = ys[i];
    }
    pg_pgm_fit_opts o = {.max_iters = 200};
    pg_pgm_model *m = NULL;
    pg_error err = {0};
    ck_assert_int_eq(pg_pgm_fit(sizes, 5, ms, 4, &o, NULL, &m, &err), PG_OK);
    return m;
}

START_TEST(round_trip_bit_exact)
{
    pg_pgm_model *m = fitted();
    unsigned char *b1 = NULL, *b2 = NULL;
    size_t n1 = 0, n2 = 0;
    pg_error err = {0};
    ck_assert_int_eq(pg_pgm_save(m, &b1, &n1, &err), PG_OK);
    pg_pgm_model *l = NULL;
    ck_assert_int_eq(pg_pgm_load(b1, n1, &l, &err), PG_OK);
    ck_assert_int_eq(pg_pgm_save(l, &b2, &n2, &err), PG_OK);
    ck_assert_uint_eq(n1, n2);
    ck_assert(memcmp(b1, b2, n1) == 0);
    ck_assert(pg_pgm_model_total(l) == pg_pgm_model_total(m));
    ck_assert(pg_pgm_model_cells(l) == pg_pgm_model_cells(m));
    ck_assert_uint_eq(pg_pgm_model_ncliques(l), pg_pgm_model_ncliques(m));
    /* Same marginals (one clique's, one across cliques) and same rows. */
    size_t qs[2][2] = {{0, 1}, {1, 4}};
    for (size_t i = 0; i < 2; i++) {
        double a[12], b[12];
        ck_assert_int_eq(pg_pgm_marginal(m, qs[i], 2, a, &err), PG_OK);
        ck_assert_int_eq(pg_pgm_marginal(l, qs[i], 2, b, &err), PG_OK);
        ck_assert(memcmp(a, b, (i ? 12 : 6) * sizeof *a) == 0);
    }
    uint32_t ra[500 * 5], rb[500 * 5];
    pg_rng r1, r2;
    pg_rng_seeded(&r1, 5, 5);
    pg_rng_seeded(&r2, 5, 5);
    ck_assert_int_eq(pg_pgm_sample(m, &r1, 500, ra, &err), PG_OK);
    ck_assert_int_eq(pg_pgm_sample(l, &r2, 500, rb, &err), PG_OK);
    ck_assert(memcmp(ra, rb, sizeof ra) == 0);
    free(b1);
    free(b2);
    pg_pgm_model_free(m);
    pg_pgm_model_free(l);
}
END_TEST

START_TEST(truncations_and_flips_refused)
{
    pg_pgm_model *m = fitted();
    unsigned char *b = NULL;
    size_t n = 0;
    pg_error err = {0};
    ck_assert_int_eq(pg_pgm_save(m, &b, &n, &err), PG_OK);
    for (size_t len = 0; len < n; len++) {
        pg_pgm_model *l = NULL;
        unsigned char *copy = malloc(len + 1); /* exact-size buffer for ASan */
        memcpy(copy, b, len);
        ck_assert_int_ne(pg_pgm_load(len ? copy : NULL, len, &l, &err), PG_OK);
        ck_assert_ptr_null(l);
        free(copy);
    }
    /* One more byte at the end. */
    unsigned char *longer = malloc(n + 1);
    memcpy(longer, b, n);
    longer[n] = 0;
    pg_pgm_model *l = NULL;
    ck_assert_int_ne(pg_pgm_load(longer, n + 1, &l, &err), PG_OK);
    free(longer);
    /* Every byte with one bit flipped (the bit varies with the position). */
    for (size_t i = 0; i < n; i++) {
        b[i] ^= (unsigned char)(1u << (i % 8));
        ck_assert_int_ne(pg_pgm_load(b, n, &l, &err), PG_OK);
        ck_assert_ptr_null(l);
        b[i] ^= (unsigned char)(1u << (i % 8));
    }
    ck_assert_int_eq(pg_pgm_load(b, n, &l, &err), PG_OK);
    pg_pgm_model_free(l);
    free(b);
    pg_pgm_model_free(m);
}
END_TEST

/* ---- hostile blobs with a valid checksum -------------------------------- */

static void put32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void put64d(unsigned char *p, double d)
{
    uint64_t v;
    memcpy(&v, &d, 8);
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static void reseal(unsigned char *b, size_t n)
{
    put32(b + n - 4, (uint32_t)crc32(crc32(0L, Z_NULL, 0), b, (uInt)(n - 4)));
}

/* A hand-made blob: chain 0-1-2 of sizes 2,3,2: cliques {0,1} (root) and
 * {1,2} (parent 0), 12 potentials. */
static size_t build(unsigned char *b)
{
    unsigned char *p = b;
    memcpy(p, "PGPGM\r\n\0", 8), p += 8;
    put32(p, 1), p += 4;
    put32(p, 3), p += 4;
    put32(p, 2), put32(p + 4, 3), put32(p + 8, 2), p += 12;
    put64d(p, 100), p += 8;
    put64d(p, 1000), p += 8;
    put32(p, 2), p += 4;
    *p++ = 2, put32(p, 0), put32(p + 4, 1), put32(p + 8, 0xffffffffu), p += 12;
    *p++ = 2, put32(p, 1), put32(p + 4, 2), put32(p + 8, 0), p += 12;
    for (int i = 0; i < 12; i++) put64d(p, 0.1 * i), p += 8;
    p += 4;
    size_t n = (size_t)(p - b);
    reseal(b, n);
    return n;
}

enum {
    OFF_VER = 8,
    OFF_NATTR = 12,
    OFF_SIZES = 16,
    OFF_TOTAL = 28,
    OFF_MAXC = 36,
    OFF_NC = 44,
    OFF_C0 = 48,
    OFF_C1 = 61,
    OFF_THETA = 74
};

START_TEST(hostile_blobs_refused)
{
    unsigned char b[256];
    size_t n = build(b);
    pg_pgm_model *m = NULL;
    pg_error err = {0};
    ck_assert_int_eq(pg_pgm_load(b, n, &m, &err), PG_OK);
    ck_assert(pg_pgm_model_cells(m) == 12);
    /* Its marginal of {0,2} is well-defined and sums to the total. */
    size_t q[2] = {0, 2};
    double out[4], s = 0;
    ck_assert_int_eq(pg_pgm_marginal(m, q, 2, out, &err), PG_OK);
    for (int i = 0; i < 4; i++) s += out[i];
    ck_assert(fabs(s - 100) < 1e-9);
    pg_pgm_model_free(m);

    for (int c = 0; c < 18; c++) {
        n = build(b);
        size_t len = n;
        switch (c) {
        case 0:
            put32(b + OFF_VER, 2);
            break; /* version */
        case 1:
            put32(b + OFF_NATTR, 0);
            break; /* no attributes */
        case 2:
            put32(b + OFF_NATTR, 0xffffffffu);
            break; /* absurd count */
        case 3:
            put32(b + OFF_SIZES + 4, 0);
            break; /* a size 0 */
        case 4:
            put32(b + OFF_SIZES + 4, 0x7fffffff);
            break; /* huge levels */
        case 5:
            put64d(b + OFF_TOTAL, -1);
            break; /* negative total */
        case 6:
            put64d(b + OFF_TOTAL, NAN);
            break; /* NaN total */
        case 7:
            put32(b + OFF_NC, 0);
            break; /* no cliques */
        case 8:
            put32(b + OFF_NC, 3);
            break; /* more cliques than there are */
        case 9:
            b[OFF_C0] = 9;
            break; /* clique too big */
        case 10:
            put32(b + OFF_C0 + 1, 1), put32(b + OFF_C0 + 5, 0);
            break; /* unsorted */
        case 11:
            put32(b + OFF_C1 + 5, 7);
            break; /* attribute out of range */
        case 12:
            put32(b + OFF_C1 + 9, 1);
            break; /* own parent */
        case 13:
            put32(b + OFF_C0 + 9, 1);
            break; /* root with a parent */
        case 14:   /* cliques {0,2} and {0,2}: attribute 1 in none */
            put32(b + OFF_C1 + 1, 0), put32(b + OFF_C1 + 5, 2);
            put32(b + OFF_C0 + 5, 2);
            break;
        case 15:
            put64d(b + OFF_THETA + 16, INFINITY);
            break; /* non-finite potential */
        case 17:
            put64d(b + OFF_TOTAL, 4.9e-324); /* subnormal total (fuzz_pgm_blob found it) */
            break;
        case 16:
            len = n - 8;
            memmove(b + len - 4, b + n - 4, 4);
            break; /* potentials short */
        }
        reseal(b, len);
        m = NULL;
        int rc = pg_pgm_load(b, len, &m, &err);
        ck_assert_msg(rc != PG_OK, "case %d accepted", c);
        ck_assert_ptr_null(m);
    }
    /* Running intersection broken: attribute 0 in the root {0,1} and in {0,2}
     * whose parent {1,2} lacks it. */
    unsigned char ri[256], *w = ri;
    memcpy(w, "PGPGM\r\n\0", 8), w += 8;
    put32(w, 1), w += 4;
    put32(w, 3), w += 4;
    put32(w, 2), put32(w + 4, 3), put32(w + 8, 2), w += 12;
    put64d(w, 10), w += 8;
    put64d(w, 1000), w += 8;
    put32(w, 3), w += 4;
    *w++ = 2, put32(w, 0), put32(w + 4, 1), put32(w + 8, 0xffffffffu), w += 12;
    *w++ = 2, put32(w, 1), put32(w + 4, 2), put32(w + 8, 0), w += 12;
    *w++ = 2, put32(w, 0), put32(w + 4, 2), put32(w + 8, 1), w += 12;
    for (int i = 0; i < 16; i++) put64d(w, 0), w += 8;
    w += 4;
    reseal(ri, (size_t)(w - ri));
    m = NULL;
    ck_assert_int_eq(pg_pgm_load(ri, (size_t)(w - ri), &m, &err), PG_EFORMAT);
    ck_assert_msg(strstr(err.msg, "disconnected") != NULL, "%s", err.msg);
    /* The same with the third clique {2} under {1,2} is accepted. */
    w = ri + 8 + 4 + 4 + 12 + 16 + 4 + 13 + 13;
    *w++ = 1, put32(w, 2), put32(w + 4, 1), w += 8;
    for (int i = 0; i < 14; i++) put64d(w, 0), w += 8;
    w += 4;
    reseal(ri, (size_t)(w - ri));
    ck_assert_int_eq(pg_pgm_load(ri, (size_t)(w - ri), &m, &err), PG_OK);
    pg_pgm_model_free(m);
    /* A clique layout whose cells overflow is refused before any allocation:
     * eight attributes of 2^24 levels. */
    unsigned char big[512], *p = big;
    memcpy(p, "PGPGM\r\n\0", 8), p += 8;
    put32(p, 1), p += 4;
    put32(p, 8), p += 4;
    for (int i = 0; i < 8; i++) put32(p, 1u << 24), p += 4;
    put64d(p, 1), p += 8;
    put64d(p, 1e300), p += 8;
    put32(p, 1), p += 4;
    *p++ = 8;
    for (int i = 0; i < 8; i++) put32(p, (uint32_t)i), p += 4;
    put32(p, 0xffffffffu), p += 4;
    p += 4;
    reseal(big, (size_t)(p - big));
    m = NULL;
    ck_assert_int_ne(pg_pgm_load(big, (size_t)(p - big), &m, &err), PG_OK);
    ck_assert_ptr_null(m);
}
END_TEST

static Suite *io_suite(void)
{
    Suite *s = suite_create("pgm/io");
    TCase *tc = tcase_create("io");
    tcase_add_test(tc, round_trip_bit_exact);
    tcase_add_test(tc, truncations_and_flips_refused);
    tcase_add_test(tc, hostile_blobs_refused);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(io_suite)
