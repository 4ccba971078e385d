/* pg_sgemm's determinism contract (mat.h): every element of C is the chain
 * acc = fma(a, b, acc) over k in order from zero, then alpha * acc (+ beta * C).
 * Checked bit for bit against a scalar loop that does exactly that, across
 * shapes that cross the kernel's tile edges and k blocks, across thread counts
 * on shapes where OpenBLAS 0.3.21's Haswell/Zen SGEMM gave different bits for
 * 1, 2 and 3 threads, and across a row's position in the batch. */
#include <math.h>

#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/core/rng.h"
#include "support/pg_test.h"

/* The kernel uses FMA where the CPU has it (with AVX2), else a separate
 * multiply and add; the reference follows the same rule. */
static bool cpu_fma(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}

typedef struct problem {
    bool ta, tb;
    size_t m, n, k, lda, ldb, ldc;
    float alpha, beta;
    float *a, *b, *c;
} problem;

static void problem_make(problem *p, bool ta, bool tb, size_t m, size_t n, size_t k, float alpha,
                         float beta, uint64_t seed)
{
    p->ta = ta;
    p->tb = tb;
    p->m = m;
    p->n = n;
    p->k = k;
    p->alpha = alpha;
    p->beta = beta;
    /* Row strides wider than the rows, so the leading dimensions matter. */
    p->lda = (ta ? m : k) + 3;
    p->ldb = (tb ? k : n) + 5;
    p->ldc = n + 2;
    size_t na = (ta ? k : m) * p->lda, nb = (tb ? n : k) * p->ldb, nc = m * p->ldc;
    p->a = pg_alloc_f32(na);
    p->b = pg_alloc_f32(nb);
    p->c = pg_alloc_f32(nc);
    ck_assert(p->a && p->b && p->c);
    pg_rng r;
    pg_rng_seeded(&r, seed, 0);
    pg_rng_fill_normal(&r, p->a, na, 0.0f, 1.0f);
    pg_rng_fill_normal(&r, p->b, nb, 0.0f, 1.0f);
    pg_rng_fill_normal(&r, p->c, nc, 0.0f, 1.0f);
    /* With beta = 0, C is write-only: garbage (NaN) must not leak through. */
    if (beta == 0.0f)
        for (size_t i = 0; i < nc; i++) p->c[i] = NAN;
}

static void problem_free(problem *p)
{
    pg_free(p->a);
    pg_free(p->b);
    pg_free(p->c);
}

/* Fresh copy of C with the product applied by pg_sgemm. */
static float *run_gemm(const problem *p)
{
    size_t nc = p->m * p->ldc;
    float *c = pg_alloc_f32(nc);
    ck_assert_ptr_nonnull(c);
    memcpy(c, p->c, nc * sizeof *c);
    pg_sgemm(p->ta, p->tb, p->m, p->n, p->k, p->alpha, p->a, p->lda, p->b, p->ldb, p->beta, c,
             p->ldc);
    return c;
}

/* The contract, one element at a time. */
static float *run_reference(const problem *p)
{
    bool fused = cpu_fma();
    size_t nc = p->m * p->ldc;
    float *c = pg_alloc_f32(nc);
    ck_assert_ptr_nonnull(c);
    memcpy(c, p->c, nc * sizeof *c);
    for (size_t i = 0; i < p->m; i++)
        for (size_t j = 0; j < p->n; j++) {
            float acc = 0.0f;
            for (size_t l = 0; l < p->k; l++) {
                float a = p->ta ? p->a[l * p->lda + i] : p->a[i * p->lda + l];
                float b = p->tb ? p->b[j * p->ldb + l] : p->b[l * p->ldb + j];
                if (fused) {
                    acc = fmaf(a, b, acc);
                } else {
                    float t = a * b;
                    acc = acc + t;
                }
            }
            float *d = c + i * p->ldc + j;
            if (p->beta == 0.0f) {
                *d = p->alpha * acc;
            } else {
                float x = p->alpha * acc, y = p->beta * *d;
                *d = x + y;
            }
        }
    return c;
}

/* Compares the m x n part of two C buffers (the padding is never written). */
static void same_bits(const problem *p, const float *x, const float *y)
{
    for (size_t i = 0; i < p->m; i++)
        ck_assert_msg(memcmp(x + i * p->ldc, y + i * p->ldc, p->n * sizeof *x) == 0,
                      "row %zu of %zu x %zu x %zu (ta %d tb %d) differs", i, p->m, p->n, p->k,
                      p->ta, p->tb);
}

/* m, n, k around the 6 x 16 register tile, the 96-row A block and the
 * 256-deep k block, and the shapes of the network layers. */
static const size_t SHAPES[][3] = {
    {1, 1, 1},     {5, 3, 7},     {6, 16, 1},    {7, 17, 300}, {13, 33, 257},
    {97, 65, 513}, {385, 40, 20}, {12, 300, 36}, {2, 600, 9},  {64, 8, 64},
};

START_TEST(gemm_is_the_fixed_chain)
{
    bool ta = _i & 1, tb = (_i >> 1) & 1;
    static const float AB[][2] = {{1.0f, 0.0f}, {2.0f, 0.5f}, {-0.5f, 1.0f}};
    pg_threads_set(2);
    for (size_t s = 0; s < sizeof SHAPES / sizeof *SHAPES; s++)
        for (size_t v = 0; v < 3; v++) {
            problem p;
            problem_make(&p, ta, tb, SHAPES[s][0], SHAPES[s][1], SHAPES[s][2], AB[v][0], AB[v][1],
                         100 + s);
            float *got = run_gemm(&p), *want = run_reference(&p);
            same_bits(&p, got, want);
            /* Not vacuous: the product really moved C. */
            if (p.beta != 0.0f) ck_assert(memcmp(got, p.c, p.n * sizeof *got) != 0);
            pg_free(got);
            pg_free(want);
            problem_free(&p);
        }
    pg_threads_set(1);
}
END_TEST

/* im2col forward (12 x 12544 x 36), its weight gradient (12 x 36 x 12544,
 * B^T), a square product, and linear-layer gradients (A^T). With OpenBLAS
 * 0.3.21 on Zen, each gave different bits for 1, 2 and 3 threads. */
START_TEST(gemm_same_bits_any_thread_count)
{
    static const struct {
        bool ta, tb;
        size_t m, n, k;
    } S[] = {{false, false, 12, 12544, 36},
             {false, true, 12, 36, 12544},
             {false, false, 256, 256, 256},
             {true, false, 64, 784, 500},
             {false, true, 500, 784, 64}};
    for (size_t s = 0; s < sizeof S / sizeof *S; s++) {
        problem p;
        problem_make(&p, S[s].ta, S[s].tb, S[s].m, S[s].n, S[s].k, 1.0f, s % 2 ? 1.0f : 0.0f,
                     7 + s);
        pg_threads_set(1);
        float *ref = run_gemm(&p);
        for (int t = 2; t <= 3; t++) {
            pg_threads_set(t);
            float *got = run_gemm(&p);
            same_bits(&p, got, ref);
            pg_free(got);
        }
        if (s == 0) {
            float *want = run_reference(&p);
            same_bits(&p, ref, want);
            pg_free(want);
        }
        pg_free(ref);
        problem_free(&p);
    }
    pg_threads_set(1);
}
END_TEST

/* A linear layer y = x W^T over a batch: row i must not depend on the rows
 * around it (OpenBLAS's Zen kernel changed it when the batch shifted by one
 * row, which broke the autoencoder's decode of a shifted batch). */
START_TEST(gemm_row_ignores_its_batch)
{
    size_t n = 257, in = 64, out = 144;
    problem p;
    problem_make(&p, false, true, n, out, in, 1.0f, 0.0f, 3);
    pg_threads_set(2);
    float *all = run_gemm(&p);
    for (size_t off = 1; off <= 7; off += 3) {
        problem q = p;
        q.m = n - off;
        q.a = p.a + off * p.lda;
        q.c = p.c + off * p.ldc;
        float *part = run_gemm(&q);
        ck_assert(memcmp(part, all + off * p.ldc,
                         (q.m - 1) * p.ldc * sizeof *part + p.n * sizeof *part) == 0);
        pg_free(part);
    }
    pg_free(all);
    problem_free(&p);
    pg_threads_set(1);
}
END_TEST

START_TEST(gemm_empty_products)
{
    float a[4] = {1, 2, 3, 4}, c[4] = {1, 2, 3, 4};
    pg_sgemm(false, false, 2, 2, 0, 1.0f, a, 2, a, 2, 0.5f, c, 2); /* k = 0: C = beta C */
    ck_assert(c[0] == 0.5f && c[3] == 2.0f);
    c[1] = NAN;
    pg_sgemm(false, false, 2, 2, 0, 1.0f, a, 2, a, 2, 0.0f, c, 2);
    ck_assert(c[0] == 0.0f && c[1] == 0.0f);
    c[0] = 9.0f;
    pg_sgemm(false, false, 0, 2, 2, 1.0f, a, 2, a, 2, 0.0f, c, 2); /* m = 0: no-op */
    ck_assert(c[0] == 9.0f);
}
END_TEST

/* A prepacked right operand (pg_sgemm_pack_b + pg_sgemm_packed) gives the
 * contract's bits too, on the shapes above (k blocks, tile edges) at one and
 * two threads, both layouts of B and of A, and a large product that takes
 * the parallel path. */
START_TEST(gemm_packed_b_is_the_fixed_chain)
{
    static const float AB[][2] = {{1.0f, 0.0f}, {2.0f, 0.5f}, {-0.5f, 1.0f}};
    const size_t big[3] = {200, 150, 700};
    for (int threads = 1; threads <= 2; threads++) {
        pg_threads_set(threads);
        for (size_t s = 0; s <= sizeof SHAPES / sizeof *SHAPES; s++)
            for (int l = 0; l < 4; l++) {
                const size_t *sh = s < sizeof SHAPES / sizeof *SHAPES ? SHAPES[s] : big;
                bool ta = l & 1, tb = (l >> 1) & 1;
                const float *ab = AB[(s + (size_t)l) % 3];
                problem p;
                problem_make(&p, ta, tb, sh[0], sh[1], sh[2], ab[0], ab[1], 300 + s);
                float *packed = pg_alloc_f32(pg_sgemm_packed_size(p.n, p.k));
                ck_assert_ptr_nonnull(packed);
                pg_sgemm_pack_b(p.tb, p.n, p.k, p.b, p.ldb, packed);
                size_t nc = p.m * p.ldc;
                float *got = pg_alloc_f32(nc), *want = run_reference(&p);
                memcpy(got, p.c, nc * sizeof *got);
                pg_sgemm_packed(p.ta, p.m, p.n, p.k, p.alpha, p.a, p.lda, packed, p.beta, got,
                                p.ldc);
                same_bits(&p, got, want);
                pg_free(got);
                pg_free(want);
                pg_free(packed);
                problem_free(&p);
            }
    }
    pg_threads_set(1);
}
END_TEST

static Suite *gemm_suite(void)
{
    Suite *s = suite_create("core/gemm");
    TCase *tc = tcase_create("gemm");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, gemm_is_the_fixed_chain, 0, 4);
    tcase_add_test(tc, gemm_same_bits_any_thread_count);
    tcase_add_test(tc, gemm_row_ignores_its_batch);
    tcase_add_test(tc, gemm_empty_products);
    tcase_add_test(tc, gemm_packed_b_is_the_fixed_chain);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(gemm_suite)
