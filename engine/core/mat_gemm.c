/* Fixed-order SGEMM (the contract is in mat.h).
 *
 * Every C element is one chain acc = fma(a[i][p], b[p][j], acc) over p = 0, 1,
 * ..., k-1 from acc = 0, then alpha * acc (+ beta * c). The blocked code below
 * keeps that chain intact: a 6 x 16 register tile carries the accumulators
 * across a k block, and an accumulator buffer carries them across k blocks, so
 * tiling, packing and thread assignment change which core computes an element
 * but never its operations. The tile sizes may therefore depend on the thread
 * count; only speed changes.
 *
 * OpenBLAS is not used here on purpose: its Haswell/Zen SGEMM kernels order a
 * dot product differently depending on where the element falls in their
 * blocking, which follows the thread partition and the matrix shape (see the
 * determinism rule in mat.h).
 */
#include <immintrin.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/core/mat.h"

#define MR     6
#define NR     16
#define KC     256
#define MC     96  /* rows per packed A block */
#define MT_MAX 384 /* rows per tile (accumulator buffer) */
#define NT_MAX 256 /* columns per tile (packed B panel) */
/* Packing buffers up to this many floats live on the stack (32 KiB). */
#define STACK_FLOATS ((size_t)8192)
/* Below this many multiply-adds a call stays on the calling thread. */
#define PAR_MIN ((size_t)1 << 18)

typedef struct gemm_args {
    bool ta, tb;
    size_t m, n, k;
    float alpha, beta;
    const float *a, *b;
    size_t lda, ldb, ldc;
    float *c;
    const float *pb; /* op(B) packed whole (pg_sgemm_pack_b), or NULL */
} gemm_args;

static inline float op_a(const gemm_args *g, size_t i, size_t p)
{
    return g->ta ? g->a[p * g->lda + i] : g->a[i * g->lda + p];
}

static inline float op_b(const gemm_args *g, size_t p, size_t j)
{
    if (g->pb) { /* the layout pg_sgemm_pack_b writes */
        size_t p0 = p / KC * KC, kc = g->k - p0 < KC ? g->k - p0 : KC;
        size_t npad = (g->n + NR - 1) / NR * NR;
        return g->pb[p0 * npad + j / NR * NR * kc + (p - p0) * NR + j % NR];
    }
    return g->tb ? g->b[j * g->ldb + p] : g->b[p * g->ldb + j];
}

/* Rows [i0, i0 + mc) x depth [p0, p0 + kc) of op(A) as MR-row slivers, each
 * laid out depth-major (MR floats per step), zero past row mc. Both layouts
 * read memory along its rows: striding down a column of a matrix whose rows
 * are a multiple of 4 KiB apart would thrash the cache. */
__attribute__((noinline)) static void pack_a(const gemm_args *g, size_t i0, size_t mc, size_t p0,
                                             size_t kc, float *dst)
{
    if (!g->ta) {
        /* One sliver at a time: MR row streams read in parallel, and the
         * next sliver's rows are prefetched (each row is only kc floats, too
         * short for the hardware prefetcher to pick up). */
        size_t i = 0;
        for (; i + MR <= mc; i += MR, dst += MR * kc) {
            const float *src = g->a + (i0 + i) * g->lda + p0;
            size_t ld = g->lda, p = 0;
            bool ahead = i + 2 * MR <= mc;
            for (; p + 4 <= kc; p += 4) {
                if (ahead && p % 16 == 0)
                    for (size_t r = 0; r < MR; r++) __builtin_prefetch(src + (MR + r) * ld + p);
                /* Rows 0-3: a 4 x 4 transpose; rows 4-5: interleaved pairs. */
                __m128 r0 = _mm_loadu_ps(src + p), r1 = _mm_loadu_ps(src + ld + p);
                __m128 r2 = _mm_loadu_ps(src + 2 * ld + p), r3 = _mm_loadu_ps(src + 3 * ld + p);
                _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
                float *d = dst + p * MR;
                _mm_storeu_ps(d, r0);
                _mm_storeu_ps(d + MR, r1);
                _mm_storeu_ps(d + 2 * MR, r2);
                _mm_storeu_ps(d + 3 * MR, r3);
                __m128 r4 = _mm_loadu_ps(src + 4 * ld + p), r5 = _mm_loadu_ps(src + 5 * ld + p);
                __m128 lo = _mm_unpacklo_ps(r4, r5), hi = _mm_unpackhi_ps(r4, r5);
                _mm_storel_pi((__m64 *)(d + 4), lo);
                _mm_storeh_pi((__m64 *)(d + MR + 4), lo);
                _mm_storel_pi((__m64 *)(d + 2 * MR + 4), hi);
                _mm_storeh_pi((__m64 *)(d + 3 * MR + 4), hi);
            }
            for (; p < kc; p++)
                for (size_t r = 0; r < MR; r++) dst[p * MR + r] = src[r * ld + p];
        }
        if (i < mc)
            for (size_t p = 0; p < kc; p++)
                for (size_t r = 0; r < MR; r++)
                    dst[p * MR + r] = i + r < mc ? g->a[(i0 + i + r) * g->lda + p0 + p] : 0.0f;
        return;
    }
    for (size_t p = 0; p < kc; p++) {
        const float *src = g->a + (p0 + p) * g->lda + i0;
        float *d = dst + p * MR;
        if (p + 4 < kc)
            for (size_t i = 0; i < mc; i += 16) __builtin_prefetch(src + 4 * g->lda + i);
        size_t i = 0;
        for (; i + MR <= mc; i += MR) {
            _mm_storeu_ps(d + i * kc, _mm_loadu_ps(src + i));
            _mm_storel_pi((__m64 *)(d + i * kc + 4),
                          _mm_loadl_pi(_mm_setzero_ps(), (const __m64 *)(src + i + 4)));
        }
        if (i < mc)
            for (size_t r = 0; r < MR; r++) d[i * kc + r] = i + r < mc ? src[i + r] : 0.0f;
    }
}

/* Depth [p0, p0 + kc) x columns [j0, j0 + nc) of op(B) as NR-column slivers,
 * each depth-major (NR floats per step), zero past column nc. */
__attribute__((noinline)) static void pack_b(const gemm_args *g, size_t p0, size_t kc, size_t j0,
                                             size_t nc, float *dst)
{
    if (!g->tb) {
        for (size_t p = 0; p < kc; p++) {
            const float *src = g->b + (p0 + p) * g->ldb + j0;
            float *d = dst + p * NR;
            size_t j = 0;
            for (; j + NR <= nc; j += NR) {
                /* Rows are short (nc floats): fetch a few rows ahead. */
                if (p + 4 < kc) __builtin_prefetch(src + 4 * g->ldb + j);
                for (size_t c = 0; c < NR; c++) d[j * kc + c] = src[j + c];
            }
            if (j < nc)
                for (size_t c = 0; c < NR; c++) d[j * kc + c] = j + c < nc ? src[j + c] : 0.0f;
        }
        return;
    }
    size_t j = 0;
    for (; j + NR <= nc; j += NR, dst += NR * kc) {
        const float *src = g->b + (j0 + j) * g->ldb + p0;
        size_t ld = g->ldb, p = 0;
        for (; p + 4 <= kc; p += 4) {
            if (p % 16 == 0 && j + 2 * NR <= nc)
                for (size_t c = 0; c < NR; c++) __builtin_prefetch(src + (NR + c) * ld + p);
            /* Four 4 x 4 transposes: columns c..c+3 at depths p..p+3. */
            for (size_t c = 0; c < NR; c += 4) {
                const float *s0 = src + c * ld + p;
                __m128 r0 = _mm_loadu_ps(s0), r1 = _mm_loadu_ps(s0 + ld);
                __m128 r2 = _mm_loadu_ps(s0 + 2 * ld), r3 = _mm_loadu_ps(s0 + 3 * ld);
                _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
                float *d = dst + p * NR + c;
                _mm_store_ps(d, r0);
                _mm_store_ps(d + NR, r1);
                _mm_store_ps(d + 2 * NR, r2);
                _mm_store_ps(d + 3 * NR, r3);
            }
        }
        for (; p < kc; p++)
            for (size_t c = 0; c < NR; c++) dst[p * NR + c] = src[c * ld + p];
    }
    if (j < nc)
        for (size_t p = 0; p < kc; p++)
            for (size_t c = 0; c < NR; c++)
                dst[p * NR + c] = j + c < nc ? g->b[(j0 + j + c) * g->ldb + p0 + p] : 0.0f;
}

/* Where a register tile goes after a k block: back to the accumulator buffer
 * (final = false), or, after the last block, to C as alpha * acc (+ beta * C),
 * each product rounded on its own as in the scalar contract. */
typedef struct kout {
    float *p;
    size_t ld;
    bool final;
    float alpha, beta;
} kout;

/* One MR x NR register tile: chains resumed from in (row stride ld_in; NULL:
 * start at zero), continued over kc steps of the packed slivers a and b, and
 * stored per o. Twelve named accumulators: as an array, GCC keeps them in
 * memory. */
#define ROW_LOAD(r)                                                                                \
    __m256 c##r##0 = in ? _mm256_loadu_ps(in + (r)*ld_in) : _mm256_setzero_ps();                   \
    __m256 c##r##1 = in ? _mm256_loadu_ps(in + (r)*ld_in + 8) : _mm256_setzero_ps()
#define ROW_FMA(r)                                                                                 \
    do {                                                                                           \
        __m256 ar = _mm256_broadcast_ss(a + (r));                                                  \
        c##r##0 = _mm256_fmadd_ps(ar, b0, c##r##0);                                                \
        c##r##1 = _mm256_fmadd_ps(ar, b1, c##r##1);                                                \
    } while (0)
#define ROW_STORE(r)                                                                               \
    do {                                                                                           \
        float *d = o->p + (r)*o->ld;                                                               \
        __m256 x0 = c##r##0, x1 = c##r##1;                                                         \
        if (scale) {                                                                               \
            x0 = _mm256_mul_ps(al, x0);                                                            \
            x1 = _mm256_mul_ps(al, x1);                                                            \
        }                                                                                          \
        if (add) {                                                                                 \
            x0 = _mm256_add_ps(x0, _mm256_mul_ps(be, _mm256_loadu_ps(d)));                         \
            x1 = _mm256_add_ps(x1, _mm256_mul_ps(be, _mm256_loadu_ps(d + 8)));                     \
        }                                                                                          \
        _mm256_storeu_ps(d, x0);                                                                   \
        _mm256_storeu_ps(d + 8, x1);                                                               \
    } while (0)

__attribute__((target("avx2,fma"))) static void kern_fma(size_t kc, const float *a, const float *b,
                                                         size_t ldb, const float *in, size_t ld_in,
                                                         const kout *o)
{
    ROW_LOAD(0);
    ROW_LOAD(1);
    ROW_LOAD(2);
    ROW_LOAD(3);
    ROW_LOAD(4);
    ROW_LOAD(5);
#pragma GCC unroll 4
    for (size_t p = 0; p < kc; p++) {
        __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
        ROW_FMA(0);
        ROW_FMA(1);
        ROW_FMA(2);
        ROW_FMA(3);
        ROW_FMA(4);
        ROW_FMA(5);
        a += MR;
        b += ldb;
    }
    bool scale = o->final && o->alpha != 1.0f, add = o->final && o->beta != 0.0f;
    __m256 al = _mm256_set1_ps(o->alpha), be = _mm256_set1_ps(o->beta);
    ROW_STORE(0);
    ROW_STORE(1);
    ROW_STORE(2);
    ROW_STORE(3);
    ROW_STORE(4);
    ROW_STORE(5);
}

/* The same chains with a separate multiply and add, for CPUs without FMA
 * (x86-64-v2): different bits from the FMA path, but fixed order all the same. */
static void kern_plain(size_t kc, const float *a, const float *b, size_t ldb, const float *in,
                       size_t ld_in, const kout *o)
{
    float c[MR][NR];
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NR; j++) c[r][j] = in ? in[r * ld_in + j] : 0.0f;
    for (size_t p = 0; p < kc; p++) {
        for (int r = 0; r < MR; r++)
            for (int j = 0; j < NR; j++) {
                float t = a[r] * b[j];
                c[r][j] = c[r][j] + t;
            }
        a += MR;
        b += ldb;
    }
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NR; j++) {
            float *d = o->p + r * o->ld + j, x = c[r][j];
            if (o->final && o->alpha != 1.0f) x = o->alpha * x;
            if (o->final && o->beta != 0.0f) {
                float y = o->beta * *d;
                x = x + y;
            }
            *d = x;
        }
}

typedef void (*kern_fn)(size_t, const float *, const float *, size_t, const float *, size_t,
                        const kout *);

static kern_fn pick_kernel(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? kern_fma : kern_plain;
}

typedef struct tile_buf {
    float *a, *b, *acc; /* acc: only when k spans several blocks */
} tile_buf;

/* C rows [i0, i0 + mt) x columns [j0, j0 + nt), over the whole depth. Per k
 * block, the B panel is packed once and reused by every A block of the tile;
 * a B sliver (kc x NR) stays in L1 while the A slivers stream from L2. Chains
 * that continue past a block wait in acc; after the last block, full register
 * tiles go straight to C and edge tiles through a small buffer. */
__attribute__((noinline)) static void gemm_tile(const gemm_args *g, kern_fn kern, size_t i0,
                                                size_t mt, size_t j0, size_t nt, const tile_buf *t)
{
    size_t ntp = (nt + NR - 1) / NR * NR;
    float edge[MR * NR] __attribute__((aligned(64)));
    bool direct = !g->tb && mt <= 4 * MR;
    for (size_t p0 = 0; p0 < g->k; p0 += KC) {
        size_t kc = g->k - p0 < KC ? g->k - p0 : KC;
        bool first = p0 == 0, last = p0 + kc == g->k;
        /* A tile of a few rows reads B (k x n, rows contiguous) in place:
         * packing it would cost more than the few slivers that use it. */
        size_t full = direct ? nt / NR * NR : 0;
        /* Prepacked B: block p0 starts at p0 * npad, sliver j at j * kc. */
        const float *pb = g->pb ? g->pb + p0 * ((g->n + NR - 1) / NR * NR) + j0 * kc : NULL;
        if (pb) full = 0;
        if (!pb && full < nt) pack_b(g, p0, kc, j0 + full, nt - full, t->b);
        for (size_t ib = 0; ib < mt; ib += MC) {
            size_t mc = mt - ib < MC ? mt - ib : MC;
            pack_a(g, i0 + ib, mc, p0, kc, t->a);
            for (size_t js = 0; js < nt; js += NR)
                for (size_t is = 0; is < mc; is += MR) {
                    size_t rows = mc - is < MR ? mc - is : MR, cols = nt - js < NR ? nt - js : NR;
                    float *acc = last && first ? NULL : t->acc + (ib + is) * ntp + js;
                    const float *in = first ? NULL : acc;
                    float *c = g->c + (i0 + ib + is) * g->ldc + j0 + js;
                    kout o = {acc, ntp, false, 1.0f, 0.0f};
                    if (last && rows == MR && cols == NR)
                        o = (kout){c, g->ldc, true, g->alpha, g->beta};
                    else if (last)
                        o = (kout){edge, NR, false, 1.0f, 0.0f};
                    const float *b = (pb ? pb : t->b) + (js - full) * kc;
                    size_t ldb = NR;
                    if (js < full) {
                        b = g->b + p0 * g->ldb + j0 + js;
                        ldb = g->ldb;
                    }
                    kern(kc, t->a + is * kc, b, ldb, in, ntp, &o);
                    if (!last || (rows == MR && cols == NR)) continue;
                    for (size_t r = 0; r < rows; r++)
                        for (size_t j = 0; j < cols; j++) {
                            float x = edge[r * NR + j], *d = c + r * g->ldc + j;
                            if (g->alpha != 1.0f) x = g->alpha * x;
                            if (g->beta != 0.0f) {
                                float y = g->beta * *d;
                                x = x + y;
                            }
                            *d = x;
                        }
                }
        }
    }
}

/* Scales C by beta (k = 0: the product is empty). */
static void gemm_scale(const gemm_args *g)
{
    for (size_t i = 0; i < g->m; i++) {
        float *row = g->c + i * g->ldc;
        for (size_t j = 0; j < g->n; j++) row[j] = g->beta == 0.0f ? 0.0f : g->beta * row[j];
    }
}

/* Without scratch memory: the same chains, one element at a time, for rows
 * [i0, i0 + mc) x columns [j0, j0 + nc). */
static void gemm_unblocked(const gemm_args *g, bool fused, size_t i0, size_t mc, size_t j0,
                           size_t nc)
{
    for (size_t i = i0; i < i0 + mc; i++)
        for (size_t j = j0; j < j0 + nc; j++) {
            float acc = 0.0f;
            for (size_t p = 0; p < g->k; p++) {
                float a = op_a(g, i, p), b = op_b(g, p, j);
                if (fused) {
                    acc = fmaf(a, b, acc);
                } else {
                    float t = a * b;
                    acc = acc + t;
                }
            }
            float *d = g->c + i * g->ldc + j;
            if (g->beta == 0.0f) {
                *d = g->alpha == 1.0f ? acc : g->alpha * acc;
            } else {
                float x = g->alpha * acc, y = g->beta * *d;
                *d = x + y;
            }
        }
}

/* Splits `len` into `parts` near-equal pieces, each a multiple of `unit`
 * (but the last); returns the piece size. */
static size_t piece(size_t len, size_t parts, size_t unit)
{
    size_t p = (len + parts - 1) / parts;
    return (p + unit - 1) / unit * unit;
}

/* Tile sizes: as large as the caches allow (at most MT_MAX x NT_MAX), cut
 * further while there are fewer than four tiles per thread. Results do not
 * depend on them. */
static void tile_sizes(size_t m, size_t n, int threads, size_t *mt, size_t *nt)
{
    size_t pm = (m + MT_MAX - 1) / MT_MAX, pn = (n + NT_MAX - 1) / NT_MAX;
    /* One thread gains nothing from more tiles, and each tile packs its
     * rows of A again. */
    while (threads > 1 && pm * pn < (size_t)threads * 4) {
        size_t a = piece(m, pm, MR), b = piece(n, pn, NR);
        if (b >= 64 && (b >= a || a < 2 * MR * 4))
            pn++;
        else if (a >= 2 * MR * 4)
            pm++;
        else
            break;
    }
    *mt = piece(m, pm, MR);
    *nt = piece(n, pn, NR);
}

static void sgemm(const gemm_args *gp)
{
    gemm_args g = *gp;
    size_t m = g.m, n = g.n, k = g.k;
    if (m == 0 || n == 0) return;
    if (k == 0) {
        gemm_scale(&g);
        return;
    }
    kern_fn kern = pick_kernel();
    size_t work = m * n * k;
    int threads = work >= PAR_MIN && !omp_in_parallel() ? omp_get_max_threads() : 1;
    size_t mc, nc;
    tile_sizes(m, n, threads, &mc, &nc);
    size_t tm = (m + mc - 1) / mc, tn = (n + nc - 1) / nc, tiles = tm * tn;
    if ((size_t)threads > tiles) threads = (int)tiles;
    size_t mcp = (mc < MC ? mc : MC) + MR, ncp = (nc + NR - 1) / NR * NR, kc = k < KC ? k : KC;
    /* Each part starts 64-byte aligned (the kernel's aligned B loads). */
    size_t na = (mcp * kc + 15) / 16 * 16, nb = kc * ncp, nacc = k > KC ? (mc + MR) * ncp : 0;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        /* Small products (most calls of a small network) pack on the stack:
         * a heap block of this size per call would cost more than the GEMM. */
        float stack[STACK_FLOATS] __attribute__((aligned(64)));
        bool small = na + nb + nacc <= STACK_FLOATS;
        /* Not zeroed (pg_alloc, not pg_alloc_f32): packing writes every
         * float it reads. The sum cannot overflow: each part is a few tiles. */
        float *heap = small ? NULL : pg_alloc((na + nb + nacc) * sizeof(float));
        float *base = small ? stack : heap;
        tile_buf t = {base, base ? base + na : NULL, base ? base + na + nb : NULL};
        /* Out of memory for the packing buffers: the same chains unblocked. */
        bool ok = base != NULL;
#pragma omp for schedule(dynamic)
        for (size_t q = 0; q < tiles; q++) {
            size_t i0 = (q / tn) * mc, j0 = (q % tn) * nc;
            size_t mq = m - i0 < mc ? m - i0 : mc, nq = n - j0 < nc ? n - j0 : nc;
            if (ok)
                gemm_tile(&g, kern, i0, mq, j0, nq, &t);
            else
                gemm_unblocked(&g, kern == kern_fma, i0, mq, j0, nq);
        }
        pg_free(heap);
    }
}

void pg_sgemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha, const float *a,
              size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
    gemm_args g = {trans_a, trans_b, m, n, k, alpha, beta, a, b, lda, ldb, ldc, c, NULL};
    sgemm(&g);
}

size_t pg_sgemm_packed_size(size_t n, size_t k)
{
    return k * ((n + NR - 1) / NR * NR);
}

void pg_sgemm_pack_b(bool trans_b, size_t n, size_t k, const float *b, size_t ldb, float *packed)
{
    gemm_args g = {false, trans_b, 0, n, k, 1.0f, 0.0f, NULL, b, 0, ldb, 0, NULL, NULL};
    size_t npad = (n + NR - 1) / NR * NR;
    for (size_t p0 = 0; p0 < k; p0 += KC) {
        size_t kc = k - p0 < KC ? k - p0 : KC;
        pack_b(&g, p0, kc, 0, n, packed + p0 * npad);
    }
}

void pg_sgemm_packed(bool trans_a, size_t m, size_t n, size_t k, float alpha, const float *a,
                     size_t lda, const float *packed_b, float beta, float *c, size_t ldc)
{
    gemm_args g = {trans_a, false, m, n, k, alpha, beta, a, NULL, lda, 0, ldc, c, packed_b};
    sgemm(&g);
}
