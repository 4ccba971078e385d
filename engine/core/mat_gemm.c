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
} gemm_args;

static inline float op_a(const gemm_args *g, size_t i, size_t p)
{
    return g->ta ? g->a[p * g->lda + i] : g->a[i * g->lda + p];
}

/* Rows [i0, i0 + mc) x depth [p0, p0 + kc) of op(A) as MR-row slivers, each
 * laid out depth-major (MR floats per step), zero past row mc. Both layouts
 * read memory along its rows: striding down a column of a matrix whose rows
 * are a multiple of 4 KiB apart would thrash the cache. */
static void pack_a(const gemm_args *g, size_t i0, size_t mc, size_t p0, size_t kc, float *dst)
{
    if (!g->ta) {
        /* One sliver at a time: MR row streams read in parallel, and the
         * next sliver's rows are prefetched (each row is only kc floats, too
         * short for the hardware prefetcher to pick up). */
        size_t i = 0;
        for (; i + MR <= mc; i += MR, dst += MR * kc) {
            const float *src = g->a + (i0 + i) * g->lda + p0;
            size_t ld = g->lda;
            bool ahead = i + 2 * MR <= mc;
            for (size_t p = 0; p < kc; p++) {
                if (ahead && p % 16 == 0)
                    for (size_t r = 0; r < MR; r++) __builtin_prefetch(src + (MR + r) * ld + p);
                for (size_t r = 0; r < MR; r++) dst[p * MR + r] = src[r * ld + p];
            }
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
        for (; i + MR <= mc; i += MR)
            for (size_t r = 0; r < MR; r++) d[i * kc + r] = src[i + r];
        if (i < mc)
            for (size_t r = 0; r < MR; r++) d[i * kc + r] = i + r < mc ? src[i + r] : 0.0f;
    }
}

/* Depth [p0, p0 + kc) x columns [j0, j0 + nc) of op(B) as NR-column slivers,
 * each depth-major (NR floats per step), zero past column nc. */
static void pack_b(const gemm_args *g, size_t p0, size_t kc, size_t j0, size_t nc, float *dst)
{
    size_t ncp = (nc + NR - 1) / NR * NR;
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
    for (size_t j = 0; j < ncp; j++) {
        float *d = dst + (j / NR) * NR * kc + j % NR;
        if (j >= nc) {
            for (size_t p = 0; p < kc; p++) d[p * NR] = 0.0f;
            continue;
        }
        const float *src = g->b + (j0 + j) * g->ldb + p0;
        for (size_t p = 0; p < kc; p++) {
            if (p % 16 == 0 && j + 4 < nc) __builtin_prefetch(src + 4 * g->ldb + p);
            d[p * NR] = src[p];
        }
    }
}

/* acc (MR x NR, row stride ld) continues its chains over kc steps of the
 * packed slivers a and b; first starts them at zero. Twelve named
 * accumulators: as an array, GCC keeps them in memory. */
#define ROW_LOAD(r)                                                                                \
    __m256 c##r##0 = first ? _mm256_setzero_ps() : _mm256_loadu_ps(acc + (r)*ld);                  \
    __m256 c##r##1 = first ? _mm256_setzero_ps() : _mm256_loadu_ps(acc + (r)*ld + 8)
#define ROW_FMA(r)                                                                                 \
    do {                                                                                           \
        __m256 ar = _mm256_broadcast_ss(a + (r));                                                  \
        c##r##0 = _mm256_fmadd_ps(ar, b0, c##r##0);                                                \
        c##r##1 = _mm256_fmadd_ps(ar, b1, c##r##1);                                                \
    } while (0)
#define ROW_STORE(r)                                                                               \
    do {                                                                                           \
        _mm256_storeu_ps(acc + (r)*ld, c##r##0);                                                   \
        _mm256_storeu_ps(acc + (r)*ld + 8, c##r##1);                                               \
    } while (0)

__attribute__((target("avx2,fma"))) static void kern_fma(size_t kc, const float *a, const float *b,
                                                         float *acc, size_t ld, bool first)
{
    ROW_LOAD(0);
    ROW_LOAD(1);
    ROW_LOAD(2);
    ROW_LOAD(3);
    ROW_LOAD(4);
    ROW_LOAD(5);
    for (size_t p = 0; p < kc; p++) {
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8);
        ROW_FMA(0);
        ROW_FMA(1);
        ROW_FMA(2);
        ROW_FMA(3);
        ROW_FMA(4);
        ROW_FMA(5);
        a += MR;
        b += NR;
    }
    ROW_STORE(0);
    ROW_STORE(1);
    ROW_STORE(2);
    ROW_STORE(3);
    ROW_STORE(4);
    ROW_STORE(5);
}

/* The same chains with a separate multiply and add, for CPUs without FMA
 * (x86-64-v2): different bits from the FMA path, but fixed order all the same. */
static void kern_plain(size_t kc, const float *a, const float *b, float *acc, size_t ld, bool first)
{
    float c[MR][NR];
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NR; j++) c[r][j] = first ? 0.0f : acc[r * ld + j];
    for (size_t p = 0; p < kc; p++) {
        for (int r = 0; r < MR; r++)
            for (int j = 0; j < NR; j++) {
                float t = a[r] * b[j];
                c[r][j] = c[r][j] + t;
            }
        a += MR;
        b += NR;
    }
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NR; j++) acc[r * ld + j] = c[r][j];
}

typedef void (*kern_fn)(size_t, const float *, const float *, float *, size_t, bool);

static kern_fn pick_kernel(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? kern_fma : kern_plain;
}

typedef struct tile_buf {
    float *a, *b, *acc;
} tile_buf;

/* C rows [i0, i0 + mt) x columns [j0, j0 + nt), over the whole depth. Per k
 * block, the B panel is packed once and reused by every A block of the tile;
 * a B sliver (kc x NR) stays in L1 while the A slivers stream from L2. */
static void gemm_tile(const gemm_args *g, kern_fn kern, size_t i0, size_t mt, size_t j0, size_t nt,
                      const tile_buf *t)
{
    size_t ntp = (nt + NR - 1) / NR * NR;
    for (size_t p0 = 0; p0 < g->k; p0 += KC) {
        size_t kc = g->k - p0 < KC ? g->k - p0 : KC;
        pack_b(g, p0, kc, j0, nt, t->b);
        for (size_t ib = 0; ib < mt; ib += MC) {
            size_t mc = mt - ib < MC ? mt - ib : MC, mcp = (mc + MR - 1) / MR * MR;
            pack_a(g, i0 + ib, mc, p0, kc, t->a);
            for (size_t js = 0; js < ntp; js += NR)
                for (size_t is = 0; is < mcp; is += MR)
                    kern(kc, t->a + is * kc, t->b + js * kc, t->acc + (ib + is) * ntp + js, ntp,
                         p0 == 0);
        }
    }
    for (size_t i = 0; i < mt; i++) {
        const float *s = t->acc + i * ntp;
        float *d = g->c + (i0 + i) * g->ldc + j0;
        if (g->beta == 0.0f) {
            if (g->alpha == 1.0f)
                memcpy(d, s, nt * sizeof *d);
            else
                for (size_t j = 0; j < nt; j++) d[j] = g->alpha * s[j];
        } else {
            for (size_t j = 0; j < nt; j++) {
                float x = g->alpha * s[j], y = g->beta * d[j];
                d[j] = x + y;
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
                float a = op_a(g, i, p), b = g->tb ? g->b[j * g->ldb + p] : g->b[p * g->ldb + j];
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
    while (pm * pn < (size_t)threads * 4) {
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

void pg_sgemm(bool trans_a, bool trans_b, size_t m, size_t n, size_t k, float alpha, const float *a,
              size_t lda, const float *b, size_t ldb, float beta, float *c, size_t ldc)
{
    if (m == 0 || n == 0) return;
    gemm_args g = {trans_a, trans_b, m, n, k, alpha, beta, a, b, lda, ldb, ldc, c};
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
    size_t na = (mcp * kc + 15) / 16 * 16, nb = kc * ncp, nacc = (mc + MR) * ncp;
#pragma omp parallel num_threads(threads) if (threads > 1)
    {
        /* Small products (most calls of a small network) pack on the stack:
         * a heap block of this size per call would cost more than the GEMM. */
        float stack[STACK_FLOATS] __attribute__((aligned(64)));
        bool small = na + nb + nacc <= STACK_FLOATS;
        float *heap = small ? NULL : pg_alloc_f32(na + nb + nacc);
        float *base = small ? stack : heap;
        tile_buf t = {base, base ? base + na : NULL, base ? base + na + nb : NULL};
        /* Out of memory for the packing buffers: the same chains unblocked. */
        bool ok = t.a && t.b && t.acc;
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
