/* Shortest round-trip float32 printing, in the family of Ryu and Schubfach:
 * the float v = c 2^q owns the interval of reals that round back to it,
 * bounded by the midpoints to its neighbours, (4c - dl) 2^(q-2) and
 * (4c + 2) 2^(q-2) (dl = 1 at a power of two whose predecessor is closer,
 * else 2); the bounds belong to v when c is even (round-half-even). With k
 * the floor of log10 of the interval's width, the width measured in units of
 * 10^k lies in [1, 10): the scaled interval holds at least one integer and at
 * most one multiple of ten. If it holds a multiple of ten, that one is the
 * unique shortest answer; otherwise every integer inside has the same number
 * of digits, no finer decimal is shorter, and the integer nearest v wins.
 *
 * The three scaled values x 2^(q-2) / 10^k (x = 4c - dl, 4c, 4c + 2) are
 * computed exactly as an integer part and a remainder over a known
 * denominator: for k <= 0 the denominator is a power of two and the
 * numerator x 5^-k is at most 131 bits (three 64-bit limbs); for k > 0 the
 * numerator x 2^(q-2-k) fits 97 bits and the denominator is 5^k < 2^72, and
 * a double estimate of the quotient (off by at most one) is corrected with
 * the exact remainder.
 *
 * A fast path does the same in double precision first: x 2^(q-2) is exact,
 * and one product with the rounded 10^-k leaves a relative error below
 * 2^-52, under 2^-23 in absolute terms for scaled values below 2^28. When no
 * fractional part the decision reads (the bounds' against 0 and 1, the
 * value's against 1/2) is within 2^-20 of its threshold, the double answers
 * are the exact ones; otherwise (about three inputs in a million, and exact
 * integers such as 1.0) the exact path decides. The exhaustive check in
 * privgen-bench confirms the whole on all 2^32 inputs. */
#include "engine/core/fmt.h"

#include <stdio.h>
#include <stdlib.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

typedef unsigned __int128 u128;

/* 5^k for k = 0..45 as {high, low} 64-bit halves (generated with Python's
 * exact integers; 5^45 < 2^105). */
static const uint64_t POW5[46][2] = {
    {0x0000000000000000u, 0x0000000000000001u}, /* 5^0 */
    {0x0000000000000000u, 0x0000000000000005u}, /* 5^1 */
    {0x0000000000000000u, 0x0000000000000019u}, /* 5^2 */
    {0x0000000000000000u, 0x000000000000007du}, /* 5^3 */
    {0x0000000000000000u, 0x0000000000000271u}, /* 5^4 */
    {0x0000000000000000u, 0x0000000000000c35u}, /* 5^5 */
    {0x0000000000000000u, 0x0000000000003d09u}, /* 5^6 */
    {0x0000000000000000u, 0x000000000001312du}, /* 5^7 */
    {0x0000000000000000u, 0x000000000005f5e1u}, /* 5^8 */
    {0x0000000000000000u, 0x00000000001dcd65u}, /* 5^9 */
    {0x0000000000000000u, 0x00000000009502f9u}, /* 5^10 */
    {0x0000000000000000u, 0x0000000002e90eddu}, /* 5^11 */
    {0x0000000000000000u, 0x000000000e8d4a51u}, /* 5^12 */
    {0x0000000000000000u, 0x0000000048c27395u}, /* 5^13 */
    {0x0000000000000000u, 0x000000016bcc41e9u}, /* 5^14 */
    {0x0000000000000000u, 0x000000071afd498du}, /* 5^15 */
    {0x0000000000000000u, 0x0000002386f26fc1u}, /* 5^16 */
    {0x0000000000000000u, 0x000000b1a2bc2ec5u}, /* 5^17 */
    {0x0000000000000000u, 0x000003782dace9d9u}, /* 5^18 */
    {0x0000000000000000u, 0x00001158e460913du}, /* 5^19 */
    {0x0000000000000000u, 0x000056bc75e2d631u}, /* 5^20 */
    {0x0000000000000000u, 0x0001b1ae4d6e2ef5u}, /* 5^21 */
    {0x0000000000000000u, 0x000878678326eac9u}, /* 5^22 */
    {0x0000000000000000u, 0x002a5a058fc295edu}, /* 5^23 */
    {0x0000000000000000u, 0x00d3c21bcecceda1u}, /* 5^24 */
    {0x0000000000000000u, 0x0422ca8b0a00a425u}, /* 5^25 */
    {0x0000000000000000u, 0x14adf4b7320334b9u}, /* 5^26 */
    {0x0000000000000000u, 0x6765c793fa10079du}, /* 5^27 */
    {0x0000000000000002u, 0x04fce5e3e2502611u}, /* 5^28 */
    {0x000000000000000au, 0x18f07d736b90be55u}, /* 5^29 */
    {0x0000000000000032u, 0x7cb2734119d3b7a9u}, /* 5^30 */
    {0x00000000000000fcu, 0x6f7c40458122964du}, /* 5^31 */
    {0x00000000000004eeu, 0x2d6d415b85acef81u}, /* 5^32 */
    {0x00000000000018a6u, 0xe32246c99c60ad85u}, /* 5^33 */
    {0x0000000000007b42u, 0x6fab61f00de36399u}, /* 5^34 */
    {0x000000000002684cu, 0x2e58e9b04570f1fdu}, /* 5^35 */
    {0x00000000000c097cu, 0xe7bc90715b34b9f1u}, /* 5^36 */
    {0x00000000003c2f70u, 0x86aed236c807a1b5u}, /* 5^37 */
    {0x00000000012ced32u, 0xa16a1b11e8262889u}, /* 5^38 */
    {0x0000000005e0a1fdu, 0x2712875988becaadu}, /* 5^39 */
    {0x000000001d6329f1u, 0xc35ca4bfabb9f561u}, /* 5^40 */
    {0x0000000092efd1b8u, 0xd0cf37be5aa1cae5u}, /* 5^41 */
    {0x00000002deaf189cu, 0x140c16b7c528f679u}, /* 5^42 */
    {0x0000000e596b7b0cu, 0x643c7196d9ccd05du}, /* 5^43 */
    {0x00000047bf19673du, 0xf52e37f2410011d1u}, /* 5^44 */
    {0x00000166bb7f0435u, 0xc9e717bb45005915u}, /* 5^45 */
};

static const unsigned POW10[10] = {1,      10,      100,      1000,      10000,
                                   100000, 1000000, 10000000, 100000000, 1000000000};

/* 10^-k for k = -45..31, each the double nearest (the compiler rounds
 * decimal literals correctly). */
static const double TEN_NEG[77] = {
    1e45,  1e44,  1e43,  1e42,  1e41,  1e40,  1e39,  1e38,  1e37,  1e36,  1e35,  1e34,  1e33,
    1e32,  1e31,  1e30,  1e29,  1e28,  1e27,  1e26,  1e25,  1e24,  1e23,  1e22,  1e21,  1e20,
    1e19,  1e18,  1e17,  1e16,  1e15,  1e14,  1e13,  1e12,  1e11,  1e10,  1e9,   1e8,   1e7,
    1e6,   1e5,   1e4,   1e3,   1e2,   1e1,   1e0,   1e-1,  1e-2,  1e-3,  1e-4,  1e-5,  1e-6,
    1e-7,  1e-8,  1e-9,  1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15, 1e-16, 1e-17, 1e-18, 1e-19,
    1e-20, 1e-21, 1e-22, 1e-23, 1e-24, 1e-25, 1e-26, 1e-27, 1e-28, 1e-29, 1e-30, 1e-31};

static u128 pow5(int k)
{
    return (u128)POW5[k][0] << 64 | POW5[k][1];
}

/* A scaled value: integer part i plus r / den, 0 <= r < den. */
typedef struct scaled {
    uint64_t i;
    u128 r;
} scaled;

/* floor(log10(2^q)) and floor(log10(3 2^(q-2))) for |q| <= 200: fixed-point
 * logarithms (2^20 scale) whose error stays far from every integer crossing
 * in that range; the unit test compares both with long double logs. */
static int floor_log10_pow2(int q)
{
    return (int)(((int64_t)q * 315653) >> 20);
}

static int floor_log10_three_quarters_pow2(int q)
{
    return (int)(((int64_t)q * 315653 - 131008) >> 20);
}

/* x 2^(q-2) / 10^k with k <= 0: (x 5^-k) / 2^s, s = k + 2 - q. */
static scaled scale_down(uint64_t x, int k, int q, int *s_out)
{
    scaled v;
    int s = k + 2 - q;
    *s_out = s;
    u128 p5 = pow5(-k);
    u128 a = (u128)x * (uint64_t)p5;         /* x * low half */
    u128 b = (u128)x * (uint64_t)(p5 >> 64); /* x * high half */
    uint64_t p0 = (uint64_t)a;
    u128 t = (a >> 64) + (uint64_t)b;
    uint64_t p1 = (uint64_t)t;
    uint64_t p2 = (uint64_t)(b >> 64) + (uint64_t)(t >> 64);
    if (s <= 0) { /* an integer: x 5^-k 2^-s (small here: q <= 3) */
        v.i = p0 << -s;
        v.r = 0;
        return v;
    }
    u128 low = (u128)p1 << 64 | p0;
    v.r = s >= 128 ? low : low & (((u128)1 << s) - 1);
    if (s < 64)
        v.i = (p0 >> s) | (p1 << (64 - s));
    else if (s == 64)
        v.i = p1;
    else
        v.i = (p1 >> (s - 64)) | (p2 << (128 - s));
    return v;
}

/* x 2^(q-2) / 10^k with k > 0: (x 2^(q-2-k)) / 5^k. */
static scaled scale_up(uint64_t x, int k, int q, u128 den, double dden)
{
    int sh = q - 2 - k; /* 0..71 */
    u128 num = (u128)x << sh;
    union {
        uint64_t u;
        double d;
    } p2 = {(uint64_t)(1023 + sh) << 52};
    uint64_t i = (uint64_t)((double)x * p2.d / dden);
    __int128 r = (__int128)num - (__int128)((u128)i * den);
    while (r < 0) r += (__int128)den, i--;
    while (r >= (__int128)den) r -= (__int128)den, i++;
    return (scaled){i, (u128)r};
}

/* Exact integer parts and remainders of the three scaled values. */
static void exact_scaled(uint64_t xl, uint64_t xv, uint64_t xr, int k, int q, scaled *L, scaled *V,
                         scaled *R, u128 *den)
{
    if (k <= 0) {
        int s;
        *L = scale_down(xl, k, q, &s);
        *V = scale_down(xv, k, q, &s);
        *R = scale_down(xr, k, q, &s);
        *den = s <= 0 ? 1 : (u128)1 << s;
    } else {
        *den = pow5(k);
        double dden = (double)*den;
        *L = scale_up(xl, k, q, *den, dden);
        *V = scale_up(xv, k, q, *den, dden);
        *R = scale_up(xr, k, q, *den, dden);
    }
}

int pg_fmt_f32_decimal(float f, unsigned *digits, int *exp10)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    uint32_t e = bits >> 23 & 0xff, t = bits & 0x7fffff;
    if (e == 0xff) return -1;
    if (e == 0 && t == 0) {
        *digits = 0;
        *exp10 = 0;
        return 0;
    }
    uint64_t c = e ? t | 1u << 23 : t;
    int q = e ? (int)e - 150 : -149;
    int boundary = t == 0 && e > 1;
    int k = boundary ? floor_log10_three_quarters_pow2(q) : floor_log10_pow2(q);
    uint64_t xl = 4 * c - (boundary ? 1 : 2), xv = 4 * c, xr = 4 * c + 2;
    int incl = (c & 1) == 0;
    uint64_t lo, hi, vi;
    int up;
    {
        union {
            uint64_t u;
            double d;
        } p2 = {(uint64_t)(1023 + q - 2) << 52};
        double sc = p2.d * TEN_NEG[k + 45];
        double dl = (double)(int64_t)xl * sc, dv = (double)(int64_t)xv * sc,
               dr = (double)(int64_t)xr * sc;
        /* scaled values are below 2^31: the signed conversion is one instruction */
        uint64_t il = (uint64_t)(int64_t)dl, iv = (uint64_t)(int64_t)dv, ir = (uint64_t)(int64_t)dr;
        double fl = dl - (double)il, fv = dv - (double)iv, fr = dr - (double)ir;
        const double eps = 1.0 / (1 << 20);
        if (fl > eps && fl < 1 - eps && fr > eps && fr < 1 - eps && fabs(fv - 0.5) > eps) {
            lo = il + 1; /* no bound is an integer here */
            hi = ir;
            vi = iv;
            up = fv > 0.5;
        } else {
            scaled L, V, R;
            u128 den;
            exact_scaled(xl, xv, xr, k, q, &L, &V, &R, &den);
            lo = L.i + (L.r != 0 || !incl);
            hi = (R.r != 0 || incl) ? R.i : R.i - 1;
            vi = V.i;
            u128 twice = V.r << 1;
            up = twice > den || (twice == den && (V.i & 1));
        }
    }
    /* Integers inside the interval: [lo, hi]. A multiple of ten inside is
     * the only candidate with fewer digits; otherwise the integer nearest
     * the value (it is no multiple of ten, so it has no zeros to drop).
     * Both are computed and one selected: the choice is data-dependent and
     * would mispredict as a branch. */
    uint64_t m10 = (lo + 9) / 10 * 10;
    int has10 = m10 <= hi;
    uint64_t near = vi + (uint64_t)up;
    near = near < lo ? lo : near;
    near = near > hi ? hi : near;
    uint64_t d = has10 ? m10 / 10 : near;
    k += has10;
    while (d % 10 == 0) { /* only after a multiple of ten */
        d /= 10;
        k++;
    }
    *digits = (unsigned)d;
    *exp10 = k;
    return 0;
}

static int count_digits(unsigned v)
{
    /* bit length * log10(2), then one correction */
    int t = ((32 - __builtin_clz(v | 1)) * 1233) >> 12;
    return t + (v >= POW10[t]);
}

static const char PAIRS[] = "00010203040506070809101112131415161718192021222324252627282930313233"
                            "34353637383940414243444546474849505152535455565758596061626364656667"
                            "6869707172737475767778798081828384858687888990919293949596979899";

/* Writes the n digits of v (v < 10^9, n = count_digits(v)) at out, using
 * up to 9 bytes. The low eight digits are made in one 64-bit register (two
 * four-digit halves, split into pairs, then into digits, lane-parallel with
 * multiply-shift divisions exact in these ranges), so there is neither a
 * loop nor a store the following load has to wait for. Little-endian byte
 * order puts the most significant digit first in memory. */
static void put_digits(char *out, unsigned v, int n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    unsigned top = v / 100000000, low = v % 100000000;
    uint64_t x = (uint64_t)(low / 10000) | (uint64_t)(low % 10000) << 32;
    uint64_t hundreds = ((x * 5243) >> 19) & UINT64_C(0x0000007F0000007F); /* x / 100 */
    uint64_t y = hundreds | (x - hundreds * 100) << 16;
    uint64_t tens = ((y * 103) >> 10) & UINT64_C(0x000F000F000F000F); /* y / 10 */
    uint64_t z = (tens | (y - tens * 10) << 8) + UINT64_C(0x3030303030303030);
    int nine = n == 9;
    out[0] = (char)('0' + top);
    z >>= 8 * (8 - n + nine);
    memcpy(out + nine, &z, 8);
#else
    for (int i = n - 1; i >= 0; i--, v /= 10) out[i] = (char)('0' + v % 10);
#endif
}

/* The text of sign, digits d (no trailing zeros) and exponent k at out,
 * without a NUL; returns its length. Uses up to PG_FMT_F32_MAX bytes. */
static inline size_t put_dec(char *out, uint32_t bits, unsigned d, int k)
{
    char *o = out;
    *o = '-';
    o += bits >> 31;
    if (d == 0) {
        *o++ = '0';
        return (size_t)(o - out);
    }
    int n = count_digits(d);
    int E = k + n - 1;      /* v = d[0].d[1..] x 10^E */
    if (E < 0 && E >= -5) { /* "0.000ddd": the common case of values below one */
        memcpy(o, "0.000000", 8);
        o += 1 - E;
        put_digits(o, d, n);
        o += n;
    } else if (E >= 0 && E <= 8) {
        put_digits(o, d, n);
        if (E >= n - 1) { /* an integer: digits, then up to eight zeros */
            memcpy(o + n, "00000000", 8);
            o += E + 1;
        } else { /* digits with the point after E + 1 of them: move the
                    (at most eight) digits after it up by one */
            char tail[8];
            memcpy(tail, o + E + 1, 8);
            o[E + 1] = '.';
            memcpy(o + E + 2, tail, 8);
            o += n + 1;
        }
    } else {
        put_digits(o + 1, d, n);
        o[0] = o[1];
        o[1] = '.';
        o += n > 1 ? n + 1 : 1;
        *o++ = 'e';
        *o = '-';
        o += E < 0;
        unsigned ae = (unsigned)(E < 0 ? -E : E);
        memcpy(o, PAIRS + 2 * ae, 2); /* ae <= 45 */
        o += 1 + (ae >= 10);
        if (ae < 10) o[-1] = (char)('0' + ae);
    }
    return (size_t)(o - out);
}

/* NaN, Infinity or -Infinity (JSON writers map them to null themselves). */
static size_t put_nonfinite(char *out, uint32_t bits)
{
    const char *s = (bits & 0x7fffff) ? "NaN" : (bits >> 31) ? "-Infinity" : "Infinity";
    size_t n = strlen(s);
    memcpy(out, s, n + 1);
    return n;
}

size_t pg_fmt_f32(float v, char *out)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    unsigned d;
    int k;
    if (pg_fmt_f32_decimal(v, &d, &k)) return put_nonfinite(out, bits);
    size_t n = put_dec(out, bits, d, k);
    out[n] = '\0';
    return n;
}

const char *pg_fmt_f64(double v, char out[PG_FMT_F64_MAX])
{
    /* %.17g always round-trips a double; shorter precisions are tried first
     * and the first that reads back exactly is the shortest. */
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(out, PG_FMT_F64_MAX, "%.*g", prec, v);
        if (!isfinite(v) || strtod(out, NULL) == v) break;
    }
    /* %g turns to exponent notation once the exponent reaches the precision
     * ("1e+02" for 100); people read whole numbers below 10^17 plainly, and
     * more digits of the same value still read back exactly. */
    const char *e = strchr(out, 'e');
    if (e) {
        int exp10 = atoi(e + 1);
        if (exp10 >= 0 && exp10 < 17) snprintf(out, PG_FMT_F64_MAX, "%.*g", exp10 + 1, v);
    }
    return out;
}

/* ---- many values at once -------------------------------------------------
 * pg_fmt_f32_join runs in blocks of JOIN_BLOCK values. With AVX2, a first
 * pass computes four values at a time: the double-precision fast path of
 * pg_fmt_f32_decimal operation for operation (same roundings, so the same
 * digits), then the digits as ASCII (floor divisions exact in doubles, then
 * multiply-shift splits in 32- and 16-bit lanes). A second pass places each
 * value's text with byte shuffles: "0.000ddd", "ddd.ddd" and "ddd000" need
 * no loop and no branch on the digit count. A lane whose fast path is
 * undecided, and zeros, subnormals, non-finite values and powers of two, go
 * through pg_fmt_f32_decimal and put_dec, as does scientific notation. One
 * value at a time, the long chain from bits to text left most of the core
 * idle; `privgen-bench fmt --exhaustive --join` compares the two printers on
 * all 2^32 inputs. */
enum { JOIN_BLOCK = 64 };

static size_t put_value(char *o, float v, int json_null)
{
    uint32_t bits;
    memcpy(&bits, &v, sizeof bits);
    unsigned d;
    int k;
    if (pg_fmt_f32_decimal(v, &d, &k) == 0) return put_dec(o, bits, d, k);
    if (!json_null) return put_nonfinite(o, bits);
    memcpy(o, "null", 4);
    return 4;
}

static size_t join_scalar(const float *x, size_t n, char sep, int json_null, char *out)
{
    char *o = out;
    for (size_t i = 0; i < n; i++) {
        *o = sep;
        o += i > 0;
        o += put_value(o, x[i], json_null);
    }
    return (size_t)(o - out);
}

#if defined(__x86_64__)
#include <immintrin.h>

typedef struct dec_block {
    unsigned d[JOIN_BLOCK]; /* digits, no trailing zeros */
    int k[JOIN_BLOCK];      /* decimal exponent of the last digit */
    /* d as nine ASCII digits: the first, then the next four and last four */
    uint32_t top[JOIN_BLOCK], mid[JOIN_BLOCK], low[JOIN_BLOCK];
    unsigned char scalar[JOIN_BLOCK]; /* 1: pass two computes this one alone */
} dec_block;

/* Values i .. i + 3 of the block. */
__attribute__((target("avx2,fma"))) static inline void dec4(const float *x, dec_block *b, size_t i)
{
    __m128i u = _mm_loadu_si128((const __m128i *)(const void *)x);
    __m128i e = _mm_and_si128(_mm_srli_epi32(u, 23), _mm_set1_epi32(0xff));
    __m128i t = _mm_and_si128(u, _mm_set1_epi32(0x7fffff));
    /* Zeros, subnormals, non-finite values and powers of two: scalar. */
    __m128i odd = _mm_or_si128(_mm_cmpeq_epi32(e, _mm_setzero_si128()),
                               _mm_cmpeq_epi32(e, _mm_set1_epi32(0xff)));
    odd = _mm_or_si128(odd, _mm_cmpeq_epi32(t, _mm_setzero_si128()));
    __m128i c = _mm_or_si128(t, _mm_set1_epi32(1 << 23));
    /* e = 0 lanes (scalar anyway) computed as e = 1 keep the table index
     * k + 45 in range. */
    __m128i q = _mm_sub_epi32(_mm_max_epi32(e, _mm_set1_epi32(1)), _mm_set1_epi32(150));
    __m128i kk = _mm_srai_epi32(_mm_mullo_epi32(q, _mm_set1_epi32(315653)), 20);
    __m128i c4 = _mm_slli_epi32(c, 2);
    __m256d xl = _mm256_cvtepi32_pd(_mm_sub_epi32(c4, _mm_set1_epi32(2)));
    __m256d xv = _mm256_cvtepi32_pd(c4);
    __m256d xr = _mm256_cvtepi32_pd(_mm_add_epi32(c4, _mm_set1_epi32(2)));
    __m256i p2 =
        _mm256_slli_epi64(_mm256_cvtepi32_epi64(_mm_add_epi32(q, _mm_set1_epi32(1021))), 52);
    __m256d ten = _mm256_i32gather_pd(TEN_NEG + 45, kk, 8);
    __m256d sc = _mm256_mul_pd(_mm256_castsi256_pd(p2), ten);
    __m256d dl = _mm256_mul_pd(xl, sc), dv = _mm256_mul_pd(xv, sc), dr = _mm256_mul_pd(xr, sc);
    __m128i il = _mm256_cvttpd_epi32(dl), iv = _mm256_cvttpd_epi32(dv),
            ir = _mm256_cvttpd_epi32(dr);
    __m256d fl = _mm256_sub_pd(dl, _mm256_cvtepi32_pd(il));
    __m256d fv = _mm256_sub_pd(dv, _mm256_cvtepi32_pd(iv));
    __m256d fr = _mm256_sub_pd(dr, _mm256_cvtepi32_pd(ir));
    const __m256d eps = _mm256_set1_pd(1.0 / (1 << 20));
    const __m256d one_eps = _mm256_set1_pd(1 - 1.0 / (1 << 20));
    const __m256d half = _mm256_set1_pd(0.5), one = _mm256_set1_pd(1.0);
    const __m256d tenf = _mm256_set1_pd(10.0);
    __m256d dist = _mm256_andnot_pd(_mm256_set1_pd(-0.0), _mm256_sub_pd(fv, half));
    __m256d ok =
        _mm256_and_pd(_mm256_cmp_pd(fl, eps, _CMP_GT_OQ), _mm256_cmp_pd(fl, one_eps, _CMP_LT_OQ));
    ok = _mm256_and_pd(ok, _mm256_cmp_pd(fr, eps, _CMP_GT_OQ));
    ok = _mm256_and_pd(ok, _mm256_cmp_pd(fr, one_eps, _CMP_LT_OQ));
    ok = _mm256_and_pd(ok, _mm256_cmp_pd(dist, eps, _CMP_GT_OQ));
    /* Integer candidates in [lo, hi] = [il + 1, ir] (exact in doubles). */
    __m256d lo = _mm256_add_pd(_mm256_cvtepi32_pd(il), one);
    __m256d hi = _mm256_cvtepi32_pd(ir);
    __m256d near = _mm256_add_pd(_mm256_cvtepi32_pd(iv),
                                 _mm256_and_pd(_mm256_cmp_pd(fv, half, _CMP_GT_OQ), one));
    near = _mm256_min_pd(_mm256_max_pd(near, lo), hi);
    /* floor((lo + 9) / 10) as floor((lo + 9) * 0.1): the doubles nearest
     * 10^-1, 10^-4 and 10^-8 all lie above the true values, so for the
     * integers here (below 2^31, 10^8, 10^9) the product is never below the
     * quotient and stays further below the next integer than the error
     * of 0.1, 10^-4 or 10^-8 can carry it (a division, exact too, costs
     * four times the latency). */
    __m256d q10 =
        _mm256_floor_pd(_mm256_mul_pd(_mm256_add_pd(lo, _mm256_set1_pd(9.0)), _mm256_set1_pd(0.1)));
    __m256d has10 = _mm256_cmp_pd(_mm256_mul_pd(q10, tenf), hi, _CMP_LE_OQ);
    __m256d dd = _mm256_blendv_pd(near, q10, has10);
    __m256d ek = _mm256_add_pd(_mm256_cvtepi32_pd(kk), _mm256_and_pd(has10, one));
    /* Trailing zeros (only after a multiple of ten; d < 10^9 has at most
     * eight): strip 8, 4, 2 and 1 of them where they divide, no branch. A
     * quotient that is an integer comes out of the rounded product exactly,
     * and the product back checks it. */
    static const double STRIP[4][2] = {{1e8, 1e-8}, {1e4, 1e-4}, {1e2, 1e-2}, {10.0, 0.1}};
    static const double STRIP_Z[4] = {8, 4, 2, 1};
    for (int st = 0; st < 4; st++) {
        __m256d dq = _mm256_round_pd(_mm256_mul_pd(dd, _mm256_set1_pd(STRIP[st][1])),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m256d hit = _mm256_and_pd(
            has10, _mm256_cmp_pd(_mm256_mul_pd(dq, _mm256_set1_pd(STRIP[st][0])), dd, _CMP_EQ_OQ));
        dd = _mm256_blendv_pd(dd, dq, hit);
        ek = _mm256_add_pd(ek, _mm256_and_pd(hit, _mm256_set1_pd(STRIP_Z[st])));
    }
    _mm_storeu_si128((__m128i *)(void *)(b->d + i), _mm256_cvttpd_epi32(dd));
    _mm_storeu_si128((__m128i *)(void *)(b->k + i), _mm256_cvtpd_epi32(ek));
    /* ASCII: d = top 10^8 + mid 10^4 + low; each four-digit part splits into
     * two pairs (x * 5243 >> 19 is x / 100 below 43 699) and each pair into
     * digits (y * 6554 >> 16 is y / 10 below 100), bytes most significant
     * first. */
    const __m256d e8 = _mm256_set1_pd(1e8), e4 = _mm256_set1_pd(1e4);
    __m256d top = _mm256_floor_pd(_mm256_mul_pd(dd, _mm256_set1_pd(1e-8)));
    __m256d rest = _mm256_sub_pd(dd, _mm256_mul_pd(top, e8));
    __m256d mid = _mm256_floor_pd(_mm256_mul_pd(rest, _mm256_set1_pd(1e-4)));
    __m256d low = _mm256_sub_pd(rest, _mm256_mul_pd(mid, e4));
    __m256i w = _mm256_set_m128i(_mm256_cvttpd_epi32(low), _mm256_cvttpd_epi32(mid));
    __m256i h = _mm256_srli_epi32(_mm256_mullo_epi32(w, _mm256_set1_epi32(5243)), 19);
    __m256i l = _mm256_sub_epi32(w, _mm256_mullo_epi32(h, _mm256_set1_epi32(100)));
    __m256i pairs = _mm256_or_si256(h, _mm256_slli_epi32(l, 16));
    __m256i tens = _mm256_mulhi_epu16(pairs, _mm256_set1_epi16(6554));
    __m256i ones = _mm256_sub_epi16(pairs, _mm256_mullo_epi16(tens, _mm256_set1_epi16(10)));
    __m256i ascii =
        _mm256_add_epi8(_mm256_or_si256(tens, _mm256_slli_epi16(ones, 8)), _mm256_set1_epi8('0'));
    _mm_storeu_si128((__m128i *)(void *)(b->mid + i), _mm256_castsi256_si128(ascii));
    _mm_storeu_si128((__m128i *)(void *)(b->low + i), _mm256_extracti128_si256(ascii, 1));
    _mm_storeu_si128((__m128i *)(void *)(b->top + i),
                     _mm_add_epi32(_mm256_cvttpd_epi32(top), _mm_set1_epi32('0')));
    int okm = _mm256_movemask_pd(ok) & ~_mm_movemask_ps(_mm_castsi128_ps(odd));
    for (int j = 0; j < 4; j++) b->scalar[i + j] = !(okm >> j & 1);
}

__attribute__((target("avx2,fma"))) static size_t join_avx2(const float *x, size_t n, char sep,
                                                            int json_null, char *out)
{
    dec_block b;
    char *o = out;
    const __m128i idx = _mm_setr_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (size_t at = 0; at < n; at += JOIN_BLOCK) {
        size_t m = n - at < JOIN_BLOCK ? n - at : JOIN_BLOCK, i = 0;
        for (; i + 4 <= m; i += 4) dec4(x + at + i, &b, i);
        for (; i < m; i++) b.scalar[i] = 1;
        for (i = 0; i < m; i++) {
            *o = sep;
            o += at + i > 0;
            if (__builtin_expect(b.scalar[i], 0)) {
                o += put_value(o, x[at + i], json_null);
                continue;
            }
            unsigned d = b.d[i];
            int nd = count_digits(d), E = b.k[i] + nd - 1;
            if (E < -5 || E > 8) { /* scientific */
                uint32_t bits;
                memcpy(&bits, x + at + i, sizeof bits);
                o += put_dec(o, bits, d, b.k[i]);
                continue;
            }
            /* The nine digits with seven leading '0's: sixteen bytes. */
            uint64_t head = UINT64_C(0x0030303030303030) | (uint64_t)b.top[i] << 56;
            uint64_t tail = b.mid[i] | (uint64_t)b.low[i] << 32;
            __m128i v = _mm_set_epi64x((long long)tail, (long long)head);
            *o = '-';
            o += x[at + i] < 0.0f;
            /* The last L bytes of v first, then '0's (byte 0 of v). */
            int L = E < 0 ? nd - E - 1 : nd;
            __m128i sel = _mm_and_si128(_mm_add_epi8(idx, _mm_set1_epi8((char)(16 - L))),
                                        _mm_cmpgt_epi8(_mm_set1_epi8((char)L), idx));
            __m128i txt = _mm_shuffle_epi8(v, sel);
            if (E < 0) { /* "0." then the zeros and digits */
                memcpy(o, "0.", 2);
                _mm_storeu_si128((__m128i *)(void *)(o + 2), txt);
                o += 2 + L;
            } else if (E >= nd - 1) { /* an integer: digits, then zeros */
                _mm_storeu_si128((__m128i *)(void *)o, txt);
                o += E + 1;
            } else { /* the point after E + 1 digits: later bytes move up one */
                __m128i p = _mm_set1_epi8((char)(E + 1)), at_p = _mm_cmpeq_epi8(idx, p);
                __m128i mv = _mm_add_epi8(idx, _mm_cmpgt_epi8(idx, p));
                mv = _mm_or_si128(mv, _mm_and_si128(at_p, _mm_set1_epi8((char)0x80)));
                txt = _mm_or_si128(_mm_shuffle_epi8(txt, mv),
                                   _mm_and_si128(at_p, _mm_set1_epi8('.')));
                _mm_storeu_si128((__m128i *)(void *)o, txt);
                o += nd + 1;
            }
        }
    }
    return (size_t)(o - out);
}
#endif

size_t pg_fmt_f32_join(const float *x, size_t n, char sep, int json_null, char *out)
{
    size_t len;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        len = join_avx2(x, n, sep, json_null, out);
    else
#endif
        len = join_scalar(x, n, sep, json_null, out);
    out[len] = '\0';
    return len;
}
