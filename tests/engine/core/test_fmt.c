#include <float.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <math.h>

#include "engine/core/fmt.h"
#include "engine/core/rng.h"
#include "support/pg_test.h"

static float from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static int same_bits(float a, float b)
{
    return memcmp(&a, &b, sizeof a) == 0;
}

/* Significant digits of a decimal text: mantissa digits without leading or
 * trailing zeros. */
static int sig_digits(const char *s)
{
    char d[64];
    int n = 0;
    for (const char *p = s; *p && *p != 'e' && n < 63; p++)
        if (*p >= '0' && *p <= '9') d[n++] = *p;
    int a = 0, b = n;
    while (a < b && d[a] == '0') a++;
    while (b > a && d[b - 1] == '0') b--;
    return b - a;
}

/* Brute force, independent of fmt.c: does a decimal with n - 1 significant
 * digits read back to f? The only candidates that can are the two multiples
 * of 10^(e - n + 2) around |f| (e = decimal exponent of |f|), read here from
 * glibc's 60-digit expansion: if any shorter decimal lies in f's rounding
 * interval, one of those two lies between it and f, hence inside too. */
static int shorter_exists(float f, int n)
{
    if (n < 2) return 0;
    char buf[128];
    snprintf(buf, sizeof buf, "%.60e", fabs((double)f));
    int ex = atoi(strchr(buf, 'e') + 1);
    unsigned long long t = (unsigned long long)(buf[0] - '0');
    for (int i = 0; i < n - 2; i++) t = t * 10 + (unsigned long long)(buf[2 + i] - '0');
    for (unsigned long long c = t; c <= t + 1; c++) {
        char s[64];
        snprintf(s, sizeof s, "%llue%d", c, ex - (n - 2));
        if (same_bits(strtof(s, NULL), fabsf(f))) return 1;
    }
    return 0;
}

/* Round trip always; shortness when `shortest`. */
static void check(float f, int shortest)
{
    char s[PG_FMT_F32_MAX];
    size_t len = pg_fmt_f32(f, s);
    ck_assert_uint_eq(len, strlen(s));
    ck_assert_uint_lt(len, PG_FMT_F32_MAX);
    float back = strtof(s, NULL);
    if (!same_bits(back, f)) ck_abort_msg("%.9g printed as '%s' reads back as %.9g", f, s, back);
    if (shortest && f != 0 && shorter_exists(f, sig_digits(s)))
        ck_abort_msg("'%s' (%.9g) is not the shortest round-trip text", s, f);
}

START_TEST(known_texts)
{
    struct {
        float f;
        const char *s;
    } cases[] = {
        {0.0f, "0"},
        {-0.0f, "-0"},
        {1.0f, "1"},
        {-2.5f, "-2.5"},
        {0.1f, "0.1"},
        {0.3f, "0.3"},
        {1.0f / 3.0f, "0.33333334"},
        {123456.789f, "123456.79"},
        {16777216.0f, "16777216"},
        {100000000.0f, "100000000"},
        {1e9f, "1e9"},
        {1e10f, "1e10"},
        {0.00012f, "0.00012"},
        {1e-5f, "0.00001"},
        {1.5e-6f, "1.5e-6"},
        {1e-7f, "1e-7"},
        {FLT_MAX, "3.4028235e38"},
        {-FLT_MAX, "-3.4028235e38"},
        {FLT_MIN, "1.1754944e-38"},
        {FLT_TRUE_MIN, "1e-45"},
        {2 * FLT_TRUE_MIN, "3e-45"},
        {from_bits(0x007fffff), "1.1754942e-38"}, /* largest subnormal */
        {33554436.0f, "33554436"},
        {1e38f, "1e38"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char s[PG_FMT_F32_MAX];
        pg_fmt_f32(cases[i].f, s);
        ck_assert_str_eq(s, cases[i].s);
        check(cases[i].f, 1);
    }
    char s[PG_FMT_F32_MAX];
    pg_fmt_f32(from_bits(0x7f800000), s);
    ck_assert_str_eq(s, "Infinity");
    pg_fmt_f32(from_bits(0xff800000), s);
    ck_assert_str_eq(s, "-Infinity");
    pg_fmt_f32(from_bits(0x7fc00000), s);
    ck_assert_str_eq(s, "NaN");
    unsigned d;
    int e;
    ck_assert_int_eq(pg_fmt_f32_decimal(from_bits(0x7fc00000), &d, &e), -1);
    ck_assert_int_eq(pg_fmt_f32_decimal(1.25e-3f, &d, &e), 0);
    ck_assert_uint_eq(d, 125);
    ck_assert_int_eq(e, -5);
}
END_TEST

/* Every exponent's boundary (powers of two, where the lower neighbour is
 * closer), its neighbours, the subnormal range's ends and both signs. */
START_TEST(powers_of_two_and_neighbours)
{
    for (uint32_t e = 0; e < 255; e++)
        for (int sign = 0; sign < 2; sign++) {
            uint32_t b = (uint32_t)sign << 31 | e << 23;
            check(from_bits(b), 1);
            check(from_bits(b + 1), 1);
            check(from_bits(b | 0x7fffff), 1);
            if (e) check(from_bits(b - 1), 1);
        }
}
END_TEST

/* Powers of ten and decimals with few digits, as strtof reads them (the
 * cases where a shorter text than the float's neighbours' must be found),
 * and exact halves (ties between two candidates). */
START_TEST(decimal_inputs)
{
    char s[64];
    for (int ex = -45; ex <= 38; ex++)
        for (int m = 1; m <= 99; m += (m < 10 ? 1 : 7)) {
            snprintf(s, sizeof s, "%de%d", m, ex);
            float f = strtof(s, NULL);
            check(f, 1);
            check(-f, 1);
            if (f != 0 && isfinite(f) && fabsf(f) >= FLT_MIN) {
                /* A short decimal reads back as itself (its float's shortest
                 * text is at most as long). */
                char o[PG_FMT_F32_MAX];
                pg_fmt_f32(f, o);
                ck_assert_int_le(sig_digits(o), m < 10 ? 1 : 2);
            }
        }
    for (int i = 1; i < 4096; i += 2) check((float)i / 2.0f, 1);
    for (int i = 1; i < 4096; i += 2) check(16777216.0f + 2.0f * (float)i, 1);
}
END_TEST

/* A million random bit patterns (every finite one counts): round trip for
 * all, brute-force shortness on one in 50. */
/* pg_fmt_f64: the shortest %.Ng that reads back, for messages. */
START_TEST(doubles_for_people)
{
    char b[PG_FMT_F64_MAX];
    ck_assert_str_eq(pg_fmt_f64(0.1, b), "0.1");
    ck_assert_str_eq(pg_fmt_f64(0.1 + 0.2, b), "0.30000000000000004");
    ck_assert_str_eq(pg_fmt_f64(3.0, b), "3");
    ck_assert_str_eq(pg_fmt_f64(100.0, b), "100");
    ck_assert_str_eq(pg_fmt_f64(-20.0, b), "-20");
    ck_assert_str_eq(pg_fmt_f64(1.5e10, b), "15000000000");
    ck_assert_str_eq(pg_fmt_f64(-2.5e-7, b), "-2.5e-07");
    ck_assert_str_eq(pg_fmt_f64(1e300, b), "1e+300");
    ck_assert_str_eq(pg_fmt_f64(DBL_MAX, b), "1.7976931348623157e+308");
    ck_assert_str_eq(pg_fmt_f64(5e-324, b), "5e-324"); /* the smallest subnormal */
    pg_fmt_f64(1.0 / 0.0, b);
    ck_assert_str_eq(b, "inf");
    /* Round trip and shortness on random bit patterns: the text reads back
     * exactly, and one digit fewer never does. */
    pg_rng r;
    pg_rng_seeded(&r, 77, 0);
    for (int i = 0; i < 20000; i++) {
        uint64_t bits = ((uint64_t)pg_rng_u32(&r) << 32) | pg_rng_u32(&r);
        double v;
        memcpy(&v, &bits, sizeof v);
        if (!isfinite(v)) continue;
        pg_fmt_f64(v, b);
        ck_assert(strtod(b, NULL) == v);
        char shorter[64];
        for (int prec = 1; prec < 17; prec++) {
            snprintf(shorter, sizeof shorter, "%.*g", prec, v);
            if (strtod(shorter, NULL) == v) {
                /* the same text, or its plain spelling (same value) */
                ck_assert(!strcmp(shorter, b) || (strchr(shorter, 'e') && !strchr(b, 'e')));
                break;
            }
        }
    }
}
END_TEST

START_TEST(random_million)
{
    pg_rng r;
    pg_rng_seeded(&r, 21, 0);
    size_t tested = 0;
    while (tested < 1000000) {
        uint32_t b = pg_rng_u32(&r);
        if ((b >> 23 & 0xff) == 0xff) continue;
        check(from_bits(b), tested % 50 == 0);
        tested++;
    }
    /* Values as a model serves them: uniform in [-4, 4] and normal. */
    for (int i = 0; i < 200000; i++) {
        check((float)(pg_rng_uniform(&r) * 8 - 4), i % 20 == 0);
        check((float)pg_rng_normal(&r), i % 20 == 0);
    }
}
END_TEST

/* pg_fmt_f32_join prints each value exactly as pg_fmt_f32 (whose round trip
 * and shortness the tests above check) in runs of every length from 1 to a
 * few blocks: a million random bit patterns, NaN and infinities among them,
 * and values as a model serves them. */
static void join_check(const float *x, size_t n, char sep, int json_null, char *text)
{
    size_t len = pg_fmt_f32_join(x, n, sep, json_null, text);
    ck_assert_uint_eq(strlen(text), len);
    const char *t = text;
    for (size_t i = 0; i < n; i++) {
        char s[PG_FMT_F32_MAX];
        size_t k = pg_fmt_f32(x[i], s);
        if (json_null && !isfinite(x[i])) k = (size_t)sprintf(s, "null");
        if (strncmp(t, s, k) != 0) {
            uint32_t u;
            memcpy(&u, &x[i], sizeof u);
            ck_abort_msg("value %zu of %zu (0x%08x): expected %s, got %.*s", i, n, u, s, (int)k, t);
        }
        t += k;
        ck_assert_int_eq(*t, i + 1 < n ? sep : '\0');
        t++;
    }
}

START_TEST(join_equals_one_at_a_time)
{
    enum { RUN = 300 };
    float x[RUN];
    char *text = malloc(RUN * 17 + PG_FMT_F32_MAX);
    pg_rng r;
    pg_rng_seeded(&r, 2121, 0);
    size_t done = 0;
    for (int round = 0; done < 1000000; round++) {
        size_t n = 1 + (size_t)round % RUN;
        for (size_t i = 0; i < n; i++) {
            uint32_t b = pg_rng_u32(&r);
            int kind = round % 4;
            x[i] = kind == 0   ? from_bits(b)
                   : kind == 1 ? (float)(pg_rng_uniform(&r) * 0.4 - 0.2)
                   : kind == 2 ? (float)pg_rng_normal(&r)
                               : (float)(pg_rng_uniform(&r) * 8 - 4);
        }
        join_check(x, n, round % 2 ? ',' : '\n', round % 3 == 0, text);
        done += n;
    }
    /* Every special class in every lane position of a block. */
    const uint32_t special[] = {0x00000000, 0x80000000, 0x7f800000, 0xff800000, 0x7fc00000,
                                0x00000001, 0x807fffff, 0x3f800000, 0x4b800000, 0x7f7fffff,
                                0x00800000, 0x3dcccccd, 0x42c80000, 0x5f000000};
    size_t ns = sizeof special / sizeof special[0];
    for (size_t shift = 0; shift < 8; shift++) {
        for (size_t i = 0; i < RUN; i++) x[i] = from_bits(special[(i + shift) % ns]);
        join_check(x, RUN, ',', 1, text);
        join_check(x, RUN, ',', 0, text);
    }
    free(text);
}
END_TEST

/* The batch printer's own corners, each value in every position of runs
 * that cross its blocks of 64 and groups of 8: digits that end in zeros
 * (0.5, 1200, powers of ten), the edges between plain and scientific
 * notation (1e-5, 1e9) and between fractions and whole numbers of 10^5 and
 * above (printed from other bytes), the shortest and longest texts, signs,
 * zeros, subnormals and non-finite values with and without json_null; then
 * the 4000 bit patterns around every power of ten from 10^-8 to 10^10 and
 * every whole number up to 2^20. */
static void join_runs(const float *v, size_t nv, char *text)
{
    enum { RUN = 150 };
    float x[RUN];
    for (size_t k = 0; k < nv; k++) {
        for (size_t pos = 0; pos < RUN; pos += (pos < 70 ? 1 : 13)) {
            for (size_t i = 0; i < RUN; i++) x[i] = (float)(0.0123456 * (double)(i % 7) - 0.03);
            x[pos] = v[k];
            if (pos + 1 < RUN) x[pos + 1] = -v[k];
            join_check(x, RUN, ',', (int)(pos & 1), text);
            join_check(x, pos + 1, '\n', (int)(pos & 1) ^ 1, text);
        }
    }
}

START_TEST(join_corners)
{
    char *text = malloc(300 * 17 + PG_FMT_F32_MAX);
    const float corners[] = {
        0.5f,         0.25f,         0.125f,         0.75f,       1e-5f,        9.99999e-6f,
        1.00001e-5f,  1.2e-5f,       0.0001f,        0.001f,      0.01f,        0.1f,
        0.2f,         0.3f,          1.5f,           2.5f,        3.0f,         10.0f,
        100.0f,       1200.0f,       99999.99f,      100000.0f,   100001.0f,    123456.8f,
        123456.0f,    999999.9f,     1e6f,           1234567.0f,  9999999.0f,   1e7f,
        12345678.0f,  16777215.0f,   16777216.0f,    16777218.0f, 99999990.0f,  1e8f,
        123456790.0f, 999999900.0f,  999999940.0f,   1e9f,        1.0000001e9f, 4e9f,
        1e10f,        3.4028235e38f, 1.1754944e-38f, 1e-38f,      1e-7f,        1.2345678e-6f,
        0.047471486f, 0.0059820376f, 0.1999999f,     3.1415927f,  0.33333334f,  7.0e-6f,
        0.00012f,     5e-5f,         0.00099999f,    1.0e-45f,    0.0f,         NAN,
        INFINITY,     -0.0f,         1.0f,           2.0f,        0.099999994f};
    join_runs(corners, sizeof corners / sizeof corners[0], text);
    enum { AROUND = 2000, RUN = 250 };
    float x[RUN];
    for (int p = -8; p <= 10; p++) {
        float t = (float)pow(10.0, p);
        uint32_t u;
        memcpy(&u, &t, sizeof u);
        for (uint32_t b = u - AROUND; b < u + AROUND; b += RUN) {
            for (size_t i = 0; i < RUN; i++)
                x[i] = from_bits((b + (uint32_t)i) ^ (i % 3 == 0 ? 0x80000000u : 0));
            join_check(x, RUN, ',', 1, text);
        }
    }
    for (uint32_t w = 1; w < (1u << 20); w += RUN) {
        for (size_t i = 0; i < RUN; i++)
            x[i] = (float)(w + (uint32_t)i) * (i % 5 == 0 ? -1.0f : 1.0f);
        join_check(x, RUN, ',', 0, text);
    }
    free(text);
}
END_TEST

static Suite *fmt_suite(void)
{
    Suite *s = suite_create("core/fmt");
    TCase *tc = tcase_create("fmt");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, known_texts);
    tcase_add_test(tc, powers_of_two_and_neighbours);
    tcase_add_test(tc, decimal_inputs);
    tcase_add_test(tc, random_million);
    tcase_add_test(tc, join_equals_one_at_a_time);
    tcase_add_test(tc, join_corners);
    tcase_add_test(tc, doubles_for_people);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(fmt_suite)
