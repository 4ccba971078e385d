#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/rng.h"
#include "support/pg_test.h"

/* Known answers from the Random123 distribution's kat_vectors (philox4x32_10). */
START_TEST(philox_known_answers)
{
    static const struct {
        uint32_t c[4], k[2], want[4];
    } kat[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}},
        {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu},
         {0xffffffffu, 0xffffffffu},
         {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}},
        {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u},
         {0xa4093822u, 0x299f31d0u},
         {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}},
    };
    for (size_t v = 0; v < sizeof kat / sizeof kat[0]; v++) {
        uint32_t out[4];
        pg_philox4x32_10(kat[v].c, kat[v].k, out);
        for (int w = 0; w < 4; w++)
            ck_assert_msg(out[w] == kat[v].want[w], "vector %zu word %d: %#x, want %#x", v, w,
                          out[w], kat[v].want[w]);
    }
}
END_TEST

/* RFC 8439 section 2.3.2 test vector for the ChaCha20 block function. */
START_TEST(chacha20_rfc8439_block)
{
    uint32_t key[8], out[16];
    for (int i = 0; i < 8; i++) {
        uint8_t b[4] = {(uint8_t)(4 * i), (uint8_t)(4 * i + 1), (uint8_t)(4 * i + 2),
                        (uint8_t)(4 * i + 3)};
        key[i] = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    }
    const uint32_t nonce[3] = {0x09000000u, 0x4a000000u, 0x00000000u};
    pg_chacha20_block(key, 1, nonce, out);
    const uint32_t expect[16] = {0xe4e7f110u, 0x15593bd1u, 0x1fdd0f50u, 0xc47120a3u,
                                 0xc7f4d1c7u, 0x0368c033u, 0x9aaa2204u, 0x4e6cd4c3u,
                                 0x466482d2u, 0x09aa9f07u, 0x05d7c214u, 0xa2028bd9u,
                                 0xd19c12b5u, 0xb94e16deu, 0xe883d0cbu, 0x4e3c50a2u};
    for (int i = 0; i < 16; i++) ck_assert_uint_eq(out[i], expect[i]);
}
END_TEST

START_TEST(seeded_is_reproducible_and_streams_differ)
{
    pg_rng a, b, c;
    pg_rng_seeded(&a, 42, 0);
    pg_rng_seeded(&b, 42, 0);
    pg_rng_seeded(&c, 42, 1);
    int same_c = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = pg_rng_u64(&a);
        ck_assert_uint_eq(x, pg_rng_u64(&b));
        same_c += x == pg_rng_u64(&c);
    }
    ck_assert_int_lt(same_c, 2);
}
END_TEST

START_TEST(save_restore_continues_exactly)
{
    pg_rng a, b;
    pg_rng_state st;
    pg_rng_seeded(&a, 7, 3);
    for (int i = 0; i < 37; i++)
        pg_rng_normal(&a); /* odd count: leaves a spare and a partial buffer */
    ck_assert_int_eq(pg_rng_save(&a, &st, NULL), PG_OK);
    pg_rng_restore(&b, &st);
    for (int i = 0; i < 100; i++) ck_assert(pg_rng_normal(&a) == pg_rng_normal(&b));
    pg_rng s;
    pg_error err;
    ck_assert_int_eq(pg_rng_secure(&s, &err), PG_OK);
    ck_assert_int_eq(pg_rng_save(&s, &st, &err), PG_ESTATE);
}
END_TEST

START_TEST(secure_instances_differ)
{
    pg_rng a, b;
    ck_assert_int_eq(pg_rng_secure(&a, NULL), PG_OK);
    ck_assert_int_eq(pg_rng_secure(&b, NULL), PG_OK);
    ck_assert(pg_rng_is_secure(&a));
    int same = 0;
    for (int i = 0; i < 64; i++) same += pg_rng_u64(&a) == pg_rng_u64(&b);
    ck_assert_int_eq(same, 0);
}
END_TEST

static double cdf_uniform(double x, void *ctx)
{
    (void)ctx;
    return x <= 0 ? 0 : x >= 1 ? 1 : x;
}
static double cdf_normal(double x, void *ctx)
{
    (void)ctx;
    return 0.5 * erfc(-x / sqrt(2.0));
}
static double cdf_laplace(double x, void *ctx)
{
    double b = *(double *)ctx;
    return x < 0 ? 0.5 * exp(x / b) : 1.0 - 0.5 * exp(-x / b);
}

enum { NS = 200000 };
static double xs[NS];

/* ks_max: 1.95 for a seeded generator (a fixed outcome), PG_TEST_KS_SECURE
 * for the secure one (new samples every run; see pg_test.h). */
static void check_distribution(pg_rng *r, int which, double ks_max)
{
    double b = 1.7, sum = 0, sum2 = 0;
    for (int i = 0; i < NS; i++) {
        xs[i] = which == 0   ? pg_rng_uniform(r)
                : which == 1 ? pg_rng_normal(r)
                             : pg_rng_laplace(r, b);
        ck_assert(isfinite(xs[i]));
        sum += xs[i];
        sum2 += xs[i] * xs[i];
    }
    double mean = sum / NS, var = sum2 / NS - mean * mean;
    double want_mean = which == 0 ? 0.5 : 0.0;
    double want_var = which == 0 ? 1.0 / 12.0 : which == 1 ? 1.0 : 2.0 * b * b;
    /* 6 standard errors of the mean (false alarm 2e-9). The sample
     * variance's relative standard error is sqrt((kurtosis - 1) / NS):
     * 0.0020 (uniform, kurtosis 1.8), 0.0032 (normal, 3), 0.0050 (Laplace,
     * 6). A fixed 2 % was 4 of them for the Laplace, a false alarm of
     * 6e-5 per secure run; 7 of them (< 1e-9 even with the Laplace's
     * skewed variance estimate) still rejects a scale off by 2 %. */
    ck_assert_double_lt(fabs(mean - want_mean), 6.0 * sqrt(want_var / NS));
    double kurt = which == 0 ? 1.8 : which == 1 ? 3.0 : 6.0;
    ck_assert_double_lt(fabs(var / want_var - 1.0), 7.0 * sqrt((kurt - 1.0) / NS));
    double d = pg_test_ks(xs, NS,
                          which == 0   ? cdf_uniform
                          : which == 1 ? cdf_normal
                                       : cdf_laplace,
                          &b);
    ck_assert_double_lt(sqrt((double)NS) * d, ks_max);
}

START_TEST(distributions_seeded)
{
    pg_rng r;
    pg_rng_seeded(&r, 12345, 0);
    check_distribution(&r, _i, 1.95);
}
END_TEST

START_TEST(distributions_secure)
{
    pg_rng r;
    ck_assert_int_eq(pg_rng_secure(&r, NULL), PG_OK);
    check_distribution(&r, _i, PG_TEST_KS_SECURE);
}
END_TEST

START_TEST(below_is_unbiased)
{
    pg_rng r;
    pg_rng_seeded(&r, 99, 0);
    int counts[7] = {0};
    for (int i = 0; i < 70000; i++) counts[pg_rng_below(&r, 7)]++;
    double chi2 = 0;
    for (int k = 0; k < 7; k++) chi2 += (counts[k] - 10000.0) * (counts[k] - 10000.0) / 10000.0;
    ck_assert_double_lt(chi2, 22.46); /* chi-square, 6 dof, p = 0.001 */
}
END_TEST

/* ---- bulk secure path ---------------------------------------------------- */

/* Reference keystream word `idx` (0-based from block `c0`) straight from the
 * scalar RFC 8439 block function. */
static uint32_t ref_word(const uint32_t key[8], const uint32_t nonce[3], uint32_t c0, size_t idx)
{
    uint32_t blk[16];
    pg_chacha20_block(key, c0 + (uint32_t)(idx / 16), nonce, blk);
    return blk[idx % 16];
}

START_TEST(bulk_keystream_matches_block_function)
{
    pg_rng r;
    ck_assert_int_eq(pg_rng_secure(&r, NULL), PG_OK);
    uint32_t key[8], nonce[3];
    memcpy(key, r.key, sizeof key);
    memcpy(nonce, r.nonce, sizeof nonce);
    /* Misalign first (5 scalar words), then bulk of several lengths, then
     * scalar again: one continuous stream, nothing skipped or repeated. */
    size_t pos = 0;
    for (int i = 0; i < 5; i++, pos++)
        ck_assert_uint_eq(pg_rng_u32(&r), ref_word(key, nonce, 0, pos));
    static const size_t lens[] = {0, 1, 11, 16, 127, 128, 129, 1000, 4099, 3};
    uint32_t *out = malloc(4099 * sizeof *out);
    ck_assert_ptr_nonnull(out);
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
        pg_rng_keystream(&r, out, lens[l]);
        for (size_t j = 0; j < lens[l]; j++, pos++)
            ck_assert_uint_eq(out[j], ref_word(key, nonce, 0, pos));
        ck_assert_uint_eq(pg_rng_u32(&r), ref_word(key, nonce, 0, pos));
        pos++;
    }
    free(out);
}
END_TEST

START_TEST(bulk_keystream_stops_at_the_rekey_point)
{
    /* Ten blocks before the counter's end: one 8-block batch, two scalar
     * blocks, then the generator must rekey from the OS instead of wrapping. */
    pg_rng r;
    ck_assert_int_eq(pg_rng_secure(&r, NULL), PG_OK);
    uint32_t c0 = UINT32_MAX - 10, key[8], nonce[3];
    r.chacha_counter = c0;
    memcpy(key, r.key, sizeof key);
    memcpy(nonce, r.nonce, sizeof nonce);
    uint32_t out[160];
    pg_rng_keystream(&r, out, 160);
    for (size_t j = 0; j < 160; j++) ck_assert_uint_eq(out[j], ref_word(key, nonce, c0, j));
    ck_assert_uint_eq(r.chacha_counter, UINT32_MAX);
    (void)pg_rng_u32(&r);
    ck_assert_uint_eq(r.chacha_counter, 1);
    ck_assert(memcmp(key, r.key, sizeof key) != 0);
}
END_TEST

/* Bulk normals are the scalar loop, bit for bit, across lengths that leave a
 * spare deviate behind and with scalar draws interleaved. */
static void bulk_equals_scalar(pg_rng *a, pg_rng *b)
{
    static const size_t lens[] = {0, 1, 2, 3, 7, 1001, 4096, 100003, 1};
    float *xa = malloc(100003 * sizeof *xa), *xb = malloc(100003 * sizeof *xb);
    ck_assert(xa && xb);
    for (size_t l = 0; l < sizeof lens / sizeof lens[0]; l++) {
        size_t n = lens[l];
        double sigma = 0.3 + (double)l;
        for (size_t i = 0; i < n; i++) xa[i] = xb[i] = (float)i * 0.01f - 3.0f;
        pg_rng_add_normal(a, xa, n, sigma);
        for (size_t i = 0; i < n; i++) xb[i] = (float)((double)xb[i] + sigma * pg_rng_normal(b));
        ck_assert_int_eq(memcmp(xa, xb, n * sizeof *xa), 0);
        if (l % 2) ck_assert_double_eq(pg_rng_normal(a), pg_rng_normal(b));
        if (l % 3 == 0) ck_assert_uint_eq(pg_rng_u32(a), pg_rng_u32(b));
    }
    free(xa);
    free(xb);
}

START_TEST(bulk_normals_equal_scalar_secure)
{
    pg_rng a, b;
    ck_assert_int_eq(pg_rng_secure(&a, NULL), PG_OK);
    b = a; /* a copy of the state: same stream, for the comparison only */
    bulk_equals_scalar(&a, &b);
}
END_TEST

START_TEST(bulk_normals_equal_scalar_seeded)
{
    pg_rng a, b;
    pg_rng_seeded(&a, 7, 3);
    pg_rng_seeded(&b, 7, 3);
    bulk_equals_scalar(&a, &b);
}
END_TEST

START_TEST(fill_normal_equals_scalar_loop)
{
    /* pg_rng_fill_normal now rides the bulk path; its values must not move. */
    enum { N = 3001 };
    static float fa[N], fb[N];
    pg_rng a, b, c, d;
    ck_assert_int_eq(pg_rng_secure(&a, NULL), PG_OK);
    b = a;
    pg_rng_seeded(&c, 5, 1);
    pg_rng_seeded(&d, 5, 1);
    pg_rng *ra[2] = {&a, &c}, *rb[2] = {&b, &d};
    for (int g = 0; g < 2; g++) {
        pg_rng_fill_normal(ra[g], fa, N, 1.5f, 0.25f);
        for (int i = 0; i < N; i++) fb[i] = (float)(1.5 + 0.25 * pg_rng_normal(rb[g]));
        ck_assert_int_eq(memcmp(fa, fb, sizeof fa), 0);
        ck_assert_double_eq(pg_rng_normal(ra[g]), pg_rng_normal(rb[g]));
    }
}
END_TEST

START_TEST(bulk_normals_distribution)
{
    /* N(mu_i, sigma^2) added to a ramp: the standardized residuals must be
     * N(0, 1) by moments and Kolmogorov-Smirnov. Odd length on purpose. */
    enum { N = NS - 1 };
    pg_rng r;
    ck_assert_int_eq(pg_rng_secure(&r, NULL), PG_OK);
    float *x = malloc(N * sizeof *x);
    ck_assert_ptr_nonnull(x);
    double sigma = 2.5, sum = 0, sum2 = 0;
    for (int i = 0; i < N; i++) x[i] = (float)(i % 100) - 50.0f;
    pg_rng_add_normal(&r, x, N, sigma);
    for (int i = 0; i < N; i++) {
        ck_assert(isfinite(x[i]));
        xs[i] = ((double)x[i] - ((double)(i % 100) - 50.0)) / sigma;
        sum += xs[i];
        sum2 += xs[i] * xs[i];
    }
    free(x);
    double mean = sum / N, var = sum2 / N - mean * mean;
    ck_assert_double_lt(fabs(mean), 6.0 * sqrt(1.0 / N));
    ck_assert_double_lt(fabs(var - 1.0), 0.02);
    ck_assert_double_lt(sqrt((double)N) * pg_test_ks(xs, N, cdf_normal, NULL), PG_TEST_KS_SECURE);
}
END_TEST

START_TEST(bulk_secure_instances_differ)
{
    enum { N = 4097 };
    pg_rng a, b;
    ck_assert_int_eq(pg_rng_secure(&a, NULL), PG_OK);
    ck_assert_int_eq(pg_rng_secure(&b, NULL), PG_OK);
    static float xa[N], xb[N];
    memset(xa, 0, sizeof xa);
    memset(xb, 0, sizeof xb);
    pg_rng_add_normal(&a, xa, N, 1.0);
    pg_rng_add_normal(&b, xb, N, 1.0);
    int same = 0, zero = 0;
    for (int i = 0; i < N; i++) same += xa[i] == xb[i], zero += xa[i] == 0.0f;
    ck_assert_int_lt(same, 3);
    ck_assert_int_lt(zero, 3);
}
END_TEST

static Suite *rng_suite(void)
{
    Suite *s = suite_create("core/rng");
    TCase *tc = tcase_create("rng");
    tcase_add_test(tc, philox_known_answers);
    tcase_add_test(tc, chacha20_rfc8439_block);
    tcase_add_test(tc, seeded_is_reproducible_and_streams_differ);
    tcase_add_test(tc, save_restore_continues_exactly);
    tcase_add_test(tc, secure_instances_differ);
    tcase_add_loop_test(tc, distributions_seeded, 0, 3);
    tcase_add_loop_test(tc, distributions_secure, 0, 3);
    tcase_add_test(tc, below_is_unbiased);
    tcase_add_test(tc, bulk_keystream_matches_block_function);
    tcase_add_test(tc, bulk_keystream_stops_at_the_rekey_point);
    tcase_add_test(tc, bulk_normals_equal_scalar_secure);
    tcase_add_test(tc, bulk_normals_equal_scalar_seeded);
    tcase_add_test(tc, fill_normal_equals_scalar_loop);
    tcase_add_test(tc, bulk_normals_distribution);
    tcase_add_test(tc, bulk_secure_instances_differ);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(rng_suite)
