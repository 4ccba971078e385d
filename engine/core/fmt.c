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

/* 2^e for a normal double (-1022 <= e <= 1023), from its exponent bits. */
static inline double pow2(int e)
{
    union {
        uint64_t u;
        double d;
    } p = {(uint64_t)(1023 + e) << 52};
    return p.d;
}

static inline uint32_t bits_of(const float *p)
{
    uint32_t u;
    memcpy(&u, p, sizeof u);
    return u;
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
    uint64_t i = (uint64_t)((double)x * pow2(sh) / dden);
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
    uint32_t bits = bits_of(&f);
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
        double sc = pow2(q - 2) * TEN_NEG[k + 45];
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

/* One value's text at o without a NUL (put_nonfinite's is harmless), for
 * pg_fmt_f32 and the joins: non-finite values print "null" when json_null
 * is nonzero. Returns its length. */
static size_t put_value(char *o, float v, int json_null)
{
    uint32_t bits = bits_of(&v);
    unsigned d;
    int k;
    if (pg_fmt_f32_decimal(v, &d, &k) == 0) return put_dec(o, bits, d, k);
    if (!json_null) return put_nonfinite(o, bits);
    memcpy(o, "null", 4);
    return 4;
}

size_t pg_fmt_f32(float v, char *out)
{
    size_t n = put_value(out, v, 0);
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
 * pg_fmt_f32_join runs in blocks of JOIN_BLOCK values. With AVX2, pass one
 * has two loops over the block. The first, eight values at a time (field
 * extraction in 32-bit lanes, the scaled products in doubles, four a
 * register), decides each value's digits by the double-precision fast path
 * of pg_fmt_f32_decimal: the same products, and the same test written with
 * distances to the nearest integer; where it passes, its answers are the
 * exact ones, as in the scalar code. It keeps d unstripped (a multiple of
 * ten's tenth may still end in zeros) and classifies the lane. The second
 * loop writes d as ASCII with the decimal point already in place (see
 * join_block). Pass two then finds each text's ends in its slot with one
 * byte compare and copies it with one 16-byte store: no loop and no branch
 * on the digit count or layout. Scientific notation and whole numbers of
 * 10^5 and above take a short path from the same digits; a lane whose fast
 * path is undecided, and zeros, subnormals, non-finite values and powers of
 * two, go through pg_fmt_f32_decimal and put_dec. Split so, each loop's
 * chain from input to output stays short enough for the core to overlap
 * iterations; `privgen-bench fmt --exhaustive --join` compares the two
 * printers on all 2^32 inputs. */
enum { JOIN_BLOCK = 64 };

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

/* The fast path's scale 2^(q-2) 10^-k by biased exponent e (q = e - 150,
 * k = floor_log10_pow2(q)): the product pg_fmt_f32_decimal forms, exact
 * (a power of two times a double that stays normal), as hex literals made
 * with Python's float.hex. e = 0 and 255 (scalar lanes) repeat e = 1 and
 * 254. */
static const double JOIN_SCALE[256] = {
    0x1.66bb7f0435c9ep-2, 0x1.66bb7f0435c9ep-2, 0x1.66bb7f0435c9ep-1, 0x1.66bb7f0435c9ep+0,
    0x1.1efc659cf7d4cp-2, 0x1.1efc659cf7d4cp-1, 0x1.1efc659cf7d4cp+0, 0x1.1efc659cf7d4cp+1,
    0x1.cb2d6f618c879p-2, 0x1.cb2d6f618c879p-1, 0x1.cb2d6f618c879p+0, 0x1.6f578c4e0a061p-2,
    0x1.6f578c4e0a061p-1, 0x1.6f578c4e0a061p+0, 0x1.25dfa371a19e7p-2, 0x1.25dfa371a19e7p-1,
    0x1.25dfa371a19e7p+0, 0x1.25dfa371a19e7p+1, 0x1.d6329f1c35ca5p-2, 0x1.d6329f1c35ca5p-1,
    0x1.d6329f1c35ca5p+0, 0x1.78287f49c4a1dp-2, 0x1.78287f49c4a1dp-1, 0x1.78287f49c4a1dp+0,
    0x1.2ced32a16a1b1p-2, 0x1.2ced32a16a1b1p-1, 0x1.2ced32a16a1b1p+0, 0x1.2ced32a16a1b1p+1,
    0x1.e17b84357691bp-2, 0x1.e17b84357691bp-1, 0x1.e17b84357691bp+0, 0x1.812f9cf7920e3p-2,
    0x1.812f9cf7920e3p-1, 0x1.812f9cf7920e3p+0, 0x1.3426172c74d82p-2, 0x1.3426172c74d82p-1,
    0x1.3426172c74d82p+0, 0x1.3426172c74d82p+1, 0x1.ed09bead87c03p-2, 0x1.ed09bead87c03p-1,
    0x1.ed09bead87c03p+0, 0x1.8a6e32246c99cp-2, 0x1.8a6e32246c99cp-1, 0x1.8a6e32246c99cp+0,
    0x1.3b8b5b5056e17p-2, 0x1.3b8b5b5056e17p-1, 0x1.3b8b5b5056e17p+0, 0x1.3b8b5b5056e17p+1,
    0x1.f8def8808b024p-2, 0x1.f8def8808b024p-1, 0x1.f8def8808b024p+0, 0x1.93e5939a08ceap-2,
    0x1.93e5939a08ceap-1, 0x1.93e5939a08ceap+0, 0x1.431e0fae6d721p-2, 0x1.431e0fae6d721p-1,
    0x1.431e0fae6d721p+0, 0x1.027e72f1f1281p-2, 0x1.027e72f1f1281p-1, 0x1.027e72f1f1281p+0,
    0x1.027e72f1f1281p+1, 0x1.9d971e4fe8402p-2, 0x1.9d971e4fe8402p-1, 0x1.9d971e4fe8402p+0,
    0x1.4adf4b7320335p-2, 0x1.4adf4b7320335p-1, 0x1.4adf4b7320335p+0, 0x1.08b2a2c280291p-2,
    0x1.08b2a2c280291p-1, 0x1.08b2a2c280291p+0, 0x1.08b2a2c280291p+1, 0x1.a784379d99db4p-2,
    0x1.a784379d99db4p-1, 0x1.a784379d99db4p+0, 0x1.52d02c7e14af6p-2, 0x1.52d02c7e14af6p-1,
    0x1.52d02c7e14af6p+0, 0x1.0f0cf064dd592p-2, 0x1.0f0cf064dd592p-1, 0x1.0f0cf064dd592p+0,
    0x1.0f0cf064dd592p+1, 0x1.b1ae4d6e2ef50p-2, 0x1.b1ae4d6e2ef50p-1, 0x1.b1ae4d6e2ef50p+0,
    0x1.5af1d78b58c40p-2, 0x1.5af1d78b58c40p-1, 0x1.5af1d78b58c40p+0, 0x1.158e460913d00p-2,
    0x1.158e460913d00p-1, 0x1.158e460913d00p+0, 0x1.158e460913d00p+1, 0x1.bc16d674ec800p-2,
    0x1.bc16d674ec800p-1, 0x1.bc16d674ec800p+0, 0x1.6345785d8a000p-2, 0x1.6345785d8a000p-1,
    0x1.6345785d8a000p+0, 0x1.1c37937e08000p-2, 0x1.1c37937e08000p-1, 0x1.1c37937e08000p+0,
    0x1.1c37937e08000p+1, 0x1.c6bf526340000p-2, 0x1.c6bf526340000p-1, 0x1.c6bf526340000p+0,
    0x1.6bcc41e900000p-2, 0x1.6bcc41e900000p-1, 0x1.6bcc41e900000p+0, 0x1.2309ce5400000p-2,
    0x1.2309ce5400000p-1, 0x1.2309ce5400000p+0, 0x1.2309ce5400000p+1, 0x1.d1a94a2000000p-2,
    0x1.d1a94a2000000p-1, 0x1.d1a94a2000000p+0, 0x1.74876e8000000p-2, 0x1.74876e8000000p-1,
    0x1.74876e8000000p+0, 0x1.2a05f20000000p-2, 0x1.2a05f20000000p-1, 0x1.2a05f20000000p+0,
    0x1.2a05f20000000p+1, 0x1.dcd6500000000p-2, 0x1.dcd6500000000p-1, 0x1.dcd6500000000p+0,
    0x1.7d78400000000p-2, 0x1.7d78400000000p-1, 0x1.7d78400000000p+0, 0x1.312d000000000p-2,
    0x1.312d000000000p-1, 0x1.312d000000000p+0, 0x1.312d000000000p+1, 0x1.e848000000000p-2,
    0x1.e848000000000p-1, 0x1.e848000000000p+0, 0x1.86a0000000000p-2, 0x1.86a0000000000p-1,
    0x1.86a0000000000p+0, 0x1.3880000000000p-2, 0x1.3880000000000p-1, 0x1.3880000000000p+0,
    0x1.3880000000000p+1, 0x1.f400000000000p-2, 0x1.f400000000000p-1, 0x1.f400000000000p+0,
    0x1.9000000000000p-2, 0x1.9000000000000p-1, 0x1.9000000000000p+0, 0x1.4000000000000p-2,
    0x1.4000000000000p-1, 0x1.4000000000000p+0, 0x1.0000000000000p-2, 0x1.0000000000000p-1,
    0x1.0000000000000p+0, 0x1.0000000000000p+1, 0x1.999999999999ap-2, 0x1.999999999999ap-1,
    0x1.999999999999ap+0, 0x1.47ae147ae147bp-2, 0x1.47ae147ae147bp-1, 0x1.47ae147ae147bp+0,
    0x1.0624dd2f1a9fcp-2, 0x1.0624dd2f1a9fcp-1, 0x1.0624dd2f1a9fcp+0, 0x1.0624dd2f1a9fcp+1,
    0x1.a36e2eb1c432dp-2, 0x1.a36e2eb1c432dp-1, 0x1.a36e2eb1c432dp+0, 0x1.4f8b588e368f1p-2,
    0x1.4f8b588e368f1p-1, 0x1.4f8b588e368f1p+0, 0x1.0c6f7a0b5ed8dp-2, 0x1.0c6f7a0b5ed8dp-1,
    0x1.0c6f7a0b5ed8dp+0, 0x1.0c6f7a0b5ed8dp+1, 0x1.ad7f29abcaf48p-2, 0x1.ad7f29abcaf48p-1,
    0x1.ad7f29abcaf48p+0, 0x1.5798ee2308c3ap-2, 0x1.5798ee2308c3ap-1, 0x1.5798ee2308c3ap+0,
    0x1.12e0be826d695p-2, 0x1.12e0be826d695p-1, 0x1.12e0be826d695p+0, 0x1.12e0be826d695p+1,
    0x1.b7cdfd9d7bdbbp-2, 0x1.b7cdfd9d7bdbbp-1, 0x1.b7cdfd9d7bdbbp+0, 0x1.5fd7fe1796495p-2,
    0x1.5fd7fe1796495p-1, 0x1.5fd7fe1796495p+0, 0x1.19799812dea11p-2, 0x1.19799812dea11p-1,
    0x1.19799812dea11p+0, 0x1.19799812dea11p+1, 0x1.c25c268497682p-2, 0x1.c25c268497682p-1,
    0x1.c25c268497682p+0, 0x1.6849b86a12b9bp-2, 0x1.6849b86a12b9bp-1, 0x1.6849b86a12b9bp+0,
    0x1.203af9ee75616p-2, 0x1.203af9ee75616p-1, 0x1.203af9ee75616p+0, 0x1.203af9ee75616p+1,
    0x1.cd2b297d889bcp-2, 0x1.cd2b297d889bcp-1, 0x1.cd2b297d889bcp+0, 0x1.70ef54646d497p-2,
    0x1.70ef54646d497p-1, 0x1.70ef54646d497p+0, 0x1.2725dd1d243acp-2, 0x1.2725dd1d243acp-1,
    0x1.2725dd1d243acp+0, 0x1.2725dd1d243acp+1, 0x1.d83c94fb6d2acp-2, 0x1.d83c94fb6d2acp-1,
    0x1.d83c94fb6d2acp+0, 0x1.79ca10c924223p-2, 0x1.79ca10c924223p-1, 0x1.79ca10c924223p+0,
    0x1.2e3b40a0e9b4fp-2, 0x1.2e3b40a0e9b4fp-1, 0x1.2e3b40a0e9b4fp+0, 0x1.2e3b40a0e9b4fp+1,
    0x1.e392010175ee6p-2, 0x1.e392010175ee6p-1, 0x1.e392010175ee6p+0, 0x1.82db34012b251p-2,
    0x1.82db34012b251p-1, 0x1.82db34012b251p+0, 0x1.357c299a88ea7p-2, 0x1.357c299a88ea7p-1,
    0x1.357c299a88ea7p+0, 0x1.357c299a88ea7p+1, 0x1.ef2d0f5da7dd9p-2, 0x1.ef2d0f5da7dd9p-1,
    0x1.ef2d0f5da7dd9p+0, 0x1.8c240c4aecb14p-2, 0x1.8c240c4aecb14p-1, 0x1.8c240c4aecb14p+0,
    0x1.3ce9a36f23c10p-2, 0x1.3ce9a36f23c10p-1, 0x1.3ce9a36f23c10p+0, 0x1.3ce9a36f23c10p+1,
    0x1.fb0f6be506019p-2, 0x1.fb0f6be506019p-1, 0x1.fb0f6be506019p+0, 0x1.95a5efea6b347p-2,
    0x1.95a5efea6b347p-1, 0x1.95a5efea6b347p+0, 0x1.4484bfeebc2a0p-2, 0x1.4484bfeebc2a0p-1,
    0x1.4484bfeebc2a0p+0, 0x1.039d665896880p-2, 0x1.039d665896880p-1, 0x1.039d665896880p-1,
};

/* "e-45" .. "e38" (no NUL) and their lengths, by decimal exponent + 45. */
static const char EXP_TEXT[84][4] = {
    "e-45", "e-44", "e-43", "e-42", "e-41", "e-40", "e-39", "e-38", "e-37", "e-36", "e-35", "e-34",
    "e-33", "e-32", "e-31", "e-30", "e-29", "e-28", "e-27", "e-26", "e-25", "e-24", "e-23", "e-22",
    "e-21", "e-20", "e-19", "e-18", "e-17", "e-16", "e-15", "e-14", "e-13", "e-12", "e-11", "e-10",
    "e-9",  "e-8",  "e-7",  "e-6",  "e-5",  "e-4",  "e-3",  "e-2",  "e-1",  "e0",   "e1",   "e2",
    "e3",   "e4",   "e5",   "e6",   "e7",   "e8",   "e9",   "e10",  "e11",  "e12",  "e13",  "e14",
    "e15",  "e16",  "e17",  "e18",  "e19",  "e20",  "e21",  "e22",  "e23",  "e24",  "e25",  "e26",
    "e27",  "e28",  "e29",  "e30",  "e31",  "e32",  "e33",  "e34",  "e35",  "e36",  "e37",  "e38"};
static const unsigned char EXP_LEN[84] = {
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 3, 3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3,
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3};

/* an immediate, also without optimization */
#define JOIN_NEAREST (_MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC)

/* Pass one's output. Slot i is value i's text in plain notation when its
 * units digit is one of d's digits (so every plain value below 10^5): d,
 * not stripped of trailing zeros, as nine digits (leading zeros as '0')
 * after six '0's, with a point after the units digit, as "000000.047471486",
 * "00000003.1415927" or "000000001200.000". The text runs from the first
 * nonzero digit, or the '0' before the point when that comes first, to the
 * last nonzero digit, or the byte before the point when that comes last.
 * The others (scientific notation, whole numbers of 10^5 and above) keep
 * the fifteen digits in bytes 0-14 and the point at byte 15. The extra slot
 * keeps pass two's 16-byte loads inside. */
typedef struct join_block {
    _Alignas(32) char ascii[JOIN_BLOCK + 1][16];
    _Alignas(32) double dd[JOIN_BLOCK]; /* d, from pass one's first loop */
    int pm1[JOIN_BLOCK];                /* byte of the point in the slot, minus one */
    int u14[JOIN_BLOCK];                /* exponent of d's last digit, plus 14 */
} join_block;

/* Values i .. i + 7 of the block: returns the mask of those pass two must
 * compute alone, and above it (bits 8-15) that of those whose slot does not
 * hold their text (see join_block). Eight at a time in 32-bit lanes, four at a time in doubles
 * where the fast path needs 53 bits. For the lanes it keeps (normal, no
 * power of two) c >= 2^23 and the scaled value is at least 2^23, so d,
 * either that value's neighbour or a tenth of a multiple of ten near it, has
 * six to nine digits. */
__attribute__((target("avx2,fma"))) static inline unsigned dec8(const float *x, join_block *b,
                                                                size_t i)
{
    __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)x);
    __m256i e = _mm256_and_si256(_mm256_srli_epi32(u, 23), _mm256_set1_epi32(0xff));
    __m256i t = _mm256_and_si256(u, _mm256_set1_epi32(0x7fffff));
    /* Zeros, subnormals, non-finite values and powers of two: scalar. */
    __m256i odd = _mm256_or_si256(_mm256_cmpeq_epi32(e, _mm256_setzero_si256()),
                                  _mm256_cmpeq_epi32(e, _mm256_set1_epi32(0xff)));
    odd = _mm256_or_si256(odd, _mm256_cmpeq_epi32(t, _mm256_setzero_si256()));
    __m256i q = _mm256_sub_epi32(e, _mm256_set1_epi32(150));
    __m256i kk = _mm256_srai_epi32(_mm256_mullo_epi32(q, _mm256_set1_epi32(315653)), 20);
    __m256i c4 = _mm256_slli_epi32(_mm256_or_si256(t, _mm256_set1_epi32(1 << 23)), 2);
    const __m256d eps = _mm256_set1_pd(1.0 / (1 << 20));
    const __m256d half_eps = _mm256_set1_pd(0.5 - 1.0 / (1 << 20));
    const __m256d two = _mm256_set1_pd(2.0), sign = _mm256_set1_pd(-0.0);
    __m256d has10[2];
    unsigned okbits = 0;
    for (int h = 0; h < 2; h++) {
        __m128i xh = h ? _mm256_extracti128_si256(c4, 1) : _mm256_castsi256_si128(c4);
        /* the scale by scalar loads: a gather costs more on the machines measured */
        const float *xh4 = x + 4 * h;
        __m128d s01 = _mm_loadh_pd(_mm_load_sd(JOIN_SCALE + (uint8_t)(bits_of(xh4) >> 23)),
                                   JOIN_SCALE + (uint8_t)(bits_of(xh4 + 1) >> 23));
        __m128d s23 = _mm_loadh_pd(_mm_load_sd(JOIN_SCALE + (uint8_t)(bits_of(xh4 + 2) >> 23)),
                                   JOIN_SCALE + (uint8_t)(bits_of(xh4 + 3) >> 23));
        __m256d sc = _mm256_insertf128_pd(_mm256_castpd128_pd256(s01), s23, 1);
        __m256d xv = _mm256_cvtepi32_pd(xh);
        __m256d dl = _mm256_mul_pd(_mm256_sub_pd(xv, two), sc);
        __m256d dv = _mm256_mul_pd(xv, sc);
        __m256d dr = _mm256_mul_pd(_mm256_add_pd(xv, two), sc);
        /* The fast path's test in other words: the bounds' fractional parts
         * are in (eps, 1 - eps) when they lie further than eps from the
         * nearest integer, and the value's is not within eps of 1/2 when it
         * lies nearer than 1/2 - eps to the nearest integer. */
        __m256d near = _mm256_round_pd(dv, JOIN_NEAREST);
        __m256d gl = _mm256_andnot_pd(sign, _mm256_sub_pd(dl, _mm256_round_pd(dl, JOIN_NEAREST)));
        __m256d gr = _mm256_andnot_pd(sign, _mm256_sub_pd(dr, _mm256_round_pd(dr, JOIN_NEAREST)));
        __m256d gv = _mm256_andnot_pd(sign, _mm256_sub_pd(dv, near));
        __m256d ok = _mm256_and_pd(_mm256_cmp_pd(_mm256_min_pd(gl, gr), eps, _CMP_GT_OQ),
                                   _mm256_cmp_pd(gv, half_eps, _CMP_LT_OQ));
        okbits |= (unsigned)_mm256_movemask_pd(ok) << 4 * h;
        /* Where the test passes: the integers in the interval are
         * [floor(dl) + 1, floor(dr)], none of them a bound, and the one
         * nearest the value, near, is among them (the interval is at least
         * one wide). The first multiple of ten in it is 10 floor(dl / 10 + 1);
         * dl's distance from every integer keeps the rounded fma on the
         * right side of the floor (0.1 is the double just above a tenth). */
        __m256d q10 =
            _mm256_floor_pd(_mm256_fmadd_pd(dl, _mm256_set1_pd(0.1), _mm256_set1_pd(1.0)));
        has10[h] = _mm256_cmp_pd(_mm256_mul_pd(q10, _mm256_set1_pd(10.0)), dr, _CMP_LT_OQ);
        _mm256_store_pd(b->dd + i + 4 * h, _mm256_blendv_pd(near, q10, has10[h]));
    }
    /* ek = k + has10, the exponent of d's last digit (the two halves'
     * masks back in value order); E = ek + nd - 1 that of its first */
    __m256i m10 = _mm256_castps_si256(
        _mm256_shuffle_ps(_mm256_castpd_ps(has10[0]), _mm256_castpd_ps(has10[1]), 0x88));
    __m256i ek = _mm256_sub_epi32(kk, _mm256_permute4x64_epi64(m10, 0xd8));
    __m256i di = _mm256_set_m128i(_mm256_cvttpd_epi32(_mm256_load_pd(b->dd + i + 4)),
                                  _mm256_cvttpd_epi32(_mm256_load_pd(b->dd + i)));
    __m256i more = _mm256_add_epi32(_mm256_cmpgt_epi32(di, _mm256_set1_epi32(999999)),
                                    _mm256_cmpgt_epi32(di, _mm256_set1_epi32(9999999)));
    more = _mm256_add_epi32(more, _mm256_cmpgt_epi32(di, _mm256_set1_epi32(99999999)));
    __m256i E = _mm256_sub_epi32(_mm256_add_epi32(ek, _mm256_set1_epi32(5)), more);
    /* plain (-5 <= E <= 8) with the units digit among d's (ek < 0) */
    __m256i plain = _mm256_and_si256(_mm256_cmpgt_epi32(E, _mm256_set1_epi32(-6)),
                                     _mm256_cmpgt_epi32(_mm256_set1_epi32(9), E));
    plain = _mm256_and_si256(plain, _mm256_cmpgt_epi32(_mm256_setzero_si256(), ek));
    _mm256_storeu_si256((__m256i *)(void *)(b->pm1 + i),
                        _mm256_add_epi32(_mm256_set1_epi32(14), _mm256_and_si256(ek, plain)));
    _mm256_storeu_si256((__m256i *)(void *)(b->u14 + i),
                        _mm256_add_epi32(ek, _mm256_set1_epi32(14)));
    unsigned scalar = (~okbits | (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(odd))) & 0xff;
    return scalar | (unsigned)(_mm256_movemask_ps(_mm256_castsi256_ps(plain)) ^ 0xff) << 8;
}

/* Slots i .. i + 3 from the integers d: d = top 10^8 + mid 10^4 + low with
 * top 0 or 1 (d < 10 2^24); mid | low << 32 made an integer by adding 2^52
 * (the double's low mantissa bits are then the number); each four-digit part
 * splits into two pairs (x * 5243 >> 19 is x / 100 below 43 699) and each
 * pair into digits (y * 6554 >> 16 is y / 10 below 100), bytes most
 * significant first. A loop of its own: with the digits in the same loop as
 * the fast path, the chain from bits to text outgrew what the core keeps in
 * flight. */
__attribute__((target("avx2,fma"))) static inline void ascii4(join_block *b, size_t i)
{
    const __m256d p52 = _mm256_set1_pd(4503599627370496.0); /* 2^52 */
    __m256d dd = _mm256_load_pd(b->dd + i);
    /* floor(d / 10^4): the double nearest 10^-4 lies above it, and the
     * product stays below the next integer for d below 10^11 */
    __m256d hi5 = _mm256_floor_pd(_mm256_mul_pd(dd, _mm256_set1_pd(1e-4)));
    __m256d low = _mm256_fnmadd_pd(hi5, _mm256_set1_pd(1e4), dd);
    __m256d top = _mm256_cmp_pd(hi5, _mm256_set1_pd(1e4), _CMP_GE_OQ);
    __m256d mid = _mm256_sub_pd(hi5, _mm256_and_pd(top, _mm256_set1_pd(1e4)));
    __m256i w = _mm256_xor_si256(_mm256_castpd_si256(_mm256_fmadd_pd(
                                     low, _mm256_set1_pd(4294967296.0), _mm256_add_pd(mid, p52))),
                                 _mm256_castpd_si256(p52));
    __m256i hq = _mm256_srli_epi16(_mm256_mulhi_epu16(w, _mm256_set1_epi16(5243)), 3);
    __m256i lr = _mm256_sub_epi16(w, _mm256_mullo_epi16(hq, _mm256_set1_epi16(100)));
    __m256i pairs = _mm256_or_si256(hq, _mm256_slli_epi32(lr, 16));
    __m256i tens = _mm256_mulhi_epu16(pairs, _mm256_set1_epi16(6554));
    __m256i ones = _mm256_sub_epi16(pairs, _mm256_mullo_epi16(tens, _mm256_set1_epi16(10)));
    __m256i tail =
        _mm256_or_si256(_mm256_or_si256(tens, _mm256_slli_epi16(ones, 8)), _mm256_set1_epi8('0'));
    /* a '.', six '0's and the top digit */
    __m256i head = _mm256_or_si256(
        _mm256_and_si256(_mm256_castpd_si256(top), _mm256_set1_epi64x((int64_t)1 << 56)),
        _mm256_set1_epi64x(0x303030303030302e));
    __m256i s02 = _mm256_unpacklo_epi64(head, tail), s13 = _mm256_unpackhi_epi64(head, tail);
    /* Two slots a register: byte j takes byte j + 1 before the point, then
     * the point (byte 0), then byte j. */
    const __m256i idx1 = _mm256_setr_epi8(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 1,
                                          2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16);
    const __m256i idx = _mm256_sub_epi8(idx1, _mm256_set1_epi8(1));
    const __m256i idxm1 = _mm256_sub_epi8(idx, _mm256_set1_epi8(1));
    const __m256i spread = _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4,
                                            4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4);
    const __m256i slots[2] = {_mm256_permute2x128_si256(s02, s13, 0x20),
                              _mm256_permute2x128_si256(s02, s13, 0x31)};
    for (int h = 0; h < 2; h++) {
        __m256i v = slots[h];
        int64_t pp;
        memcpy(&pp, b->pm1 + i + 2 * h, sizeof pp);
        __m256i pm = _mm256_shuffle_epi8(_mm256_set1_epi64x(pp), spread);
        __m256i sel = _mm256_andnot_si256(_mm256_cmpeq_epi8(idxm1, pm),
                                          _mm256_add_epi8(idx1, _mm256_cmpgt_epi8(idx, pm)));
        _mm256_store_si256((__m256i *)(void *)b->ascii[i + 2 * h], _mm256_shuffle_epi8(v, sel));
    }
}

/* A lane pass one left alone: its text, then sep. */
__attribute__((noinline, cold)) static char *join_one(char *o, float v, int json_null, char sep)
{
    o += put_value(o, v, json_null);
    *o = sep;
    return o + 1;
}

/* Scientific notation from pass one's digits: the first digit, the point
 * and the others when there are any, then the exponent. */
static inline char *put_sci(char *o, const char *s, int sig, int E)
{
    memcpy(o, s, 16);
    memcpy(o + 2, s + 1, 16);
    o[1] = '.';
    o += sig > 1 ? sig + 1 : 1;
    memcpy(o, EXP_TEXT[E + 45], 4);
    return o + EXP_LEN[E + 45];
}

/* The first and last byte of a slot that hold a nonzero digit (neither
 * '0' nor '.' is above '0'); the slot has at least one. */
static inline void nonzero_span(const char *slot, unsigned *first, unsigned *last)
{
    unsigned nz = (unsigned)_mm_movemask_epi8(
        _mm_cmpgt_epi8(_mm_load_si128((const __m128i *)(const void *)slot), _mm_set1_epi8('0')));
    *first = (unsigned)__builtin_ctz(nz);
    *last = 31u ^ (unsigned)__builtin_clz(nz);
}

/* A value whose slot does not hold its text (scientific notation, or a
 * whole number of 10^5 and above): its digits are slot bytes 0-14. */
static inline char *put_other(char *o, const char *slot, int u14)
{
    unsigned f, l;
    nonzero_span(slot, &f, &l);
    int first = (int)f, last = (int)l;
    int E = u14 - first;
    if ((unsigned)(E + 5) <= 13u) { /* a whole number, up to three zeros after d */
        memcpy(o, slot + first, 16);
        memcpy(o + 15 - first, "000", 4);
        return o + E + 1;
    }
    return put_sci(o, slot + first, last - first + 1, E);
}

__attribute__((target("avx2,fma"))) static size_t join_avx2(const float *x, size_t n, char sep,
                                                            int json_null, char *out)
{
    join_block b;
    float pad[8]; /* a block's last few values, when fewer than eight */
    char *o = out;
    const __m128i zc = _mm_set1_epi8('0');
    /* After each value sep and a '-' the next value keeps if it is
     * negative (the last sep is dropped at the end). */
    const uint16_t sep_minus = (uint16_t)((unsigned char)sep | '-' << 8);
    *o = '-';
    for (size_t at = 0; at < n; at += JOIN_BLOCK) {
        size_t m = n - at < JOIN_BLOCK ? n - at : JOIN_BLOCK, i = 0;
        uint64_t scalar = 0, other = 0;
        for (; i < m; i += 8) {
            const float *src = x + at + i;
            if (m - i < 8) { /* the last few of a short block, padded with zeros (scalar lanes) */
                memset(pad, 0, sizeof pad);
                memcpy(pad, src, (m - i) * sizeof *pad);
                src = pad;
            }
            unsigned r = dec8(src, &b, i);
            scalar |= (uint64_t)(r & 0xff) << i;
            other |= (uint64_t)((r | r >> 8) & 0xff) << i;
        }
        for (size_t j = 0; j < i; j += 4) ascii4(&b, j);
        _mm_store_si128((__m128i *)(void *)b.ascii[i], zc);
        const float *xb = x + at;
        for (i = 0; i < m;) {
            /* the plain values up to the next other one */
            uint64_t rest = other >> i;
            size_t stop = rest ? i + (size_t)__builtin_ctzll(rest) : m;
            stop = stop < m ? stop : m;
            for (; i < stop; i++) {
                /* From the first nonzero digit (or the '0' before the point)
                 * to the last (or the byte before the point). */
                const char *slot = b.ascii[i];
                unsigned first, last;
                nonzero_span(slot, &first, &last);
                unsigned pm = (unsigned)b.pm1[i];
                unsigned start = first < pm ? first : pm, end = (last > pm ? last : pm) + 1;
                o += bits_of(xb + i) >> 31;
                _mm_storeu_si128((__m128i *)(void *)o,
                                 _mm_loadu_si128((const __m128i *)(const void *)(slot + start)));
                o += end - start;
                memcpy(o, &sep_minus, 2);
                o++;
            }
            if (i == m) break;
            if (scalar >> i & 1) {
                o = join_one(o, x[at + i], json_null, sep);
            } else {
                o += bits_of(xb + i) >> 31;
                o = put_other(o, b.ascii[i], b.u14[i]);
                *o++ = sep;
            }
            *o = '-';
            i++;
        }
    }
    return o > out ? (size_t)(o - out) - 1 : 0;
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
