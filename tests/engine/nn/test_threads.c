/* The OpenMP element kernels (batchnorm, activations, upsample, direct
 * convolution, im2col-free paths) split independent outputs across threads and
 * compute each one in serial order, and pg_sgemm sums every element in a fixed
 * order (mat.h), so a forward + backward pass must give the same bits on 1, 2
 * and 3 threads. The networks are large enough that every loop passes the
 * parallel threshold (NN_PAR_MIN). */
#include <check.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/core/mat.h"
#include "engine/core/rng.h"
#include "engine/nn/nn.h"
#include "support/pg_test.h"

#define BATCH 16

static const char *ARCH =
    "{\"input\":[4,14,14],\"layers\":["
    "{\"type\":\"batchnorm\"},{\"type\":\"leaky_relu\",\"slope\":0.2},"
    "{\"type\":\"upsample\",\"mode\":\"bilinear\",\"factor\":2,\"align_corners\":true},"
    "{\"type\":\"conv2d\",\"out\":3,\"kernel\":5,\"padding\":2},{\"type\":\"tanh\"},"
    "{\"type\":\"upsample\",\"mode\":\"nearest\",\"factor\":2},"
    "{\"type\":\"conv2d\",\"out\":2,\"kernel\":3,\"padding\":1},{\"type\":\"relu\"},"
    "{\"type\":\"conv2d\",\"out\":1,\"kernel\":4},{\"type\":\"sigmoid\"}]}";

/* The implicit-GEMM convolution (8..64 channels), with a partial 16-channel
 * block in each direction. */
static const char *ARCH_IMPLICIT =
    "{\"input\":[4,14,14],\"layers\":["
    "{\"type\":\"upsample\",\"mode\":\"nearest\",\"factor\":2},"
    "{\"type\":\"conv2d\",\"out\":12,\"kernel\":3,\"padding\":1},{\"type\":\"relu\"},"
    "{\"type\":\"conv2d\",\"out\":20,\"kernel\":5,\"padding\":2},{\"type\":\"tanh\"},"
    "{\"type\":\"conv2d\",\"out\":1,\"kernel\":4},{\"type\":\"sigmoid\"}]}";

/* The GEMM layers: linear, transposed conv and strided conv (im2col), whose
 * OpenBLAS SGEMM calls gave thread-dependent bits on Zen. */
static const char *ARCH_GEMM =
    "{\"input\":[16],\"layers\":["
    "{\"type\":\"linear\",\"out\":392},{\"type\":\"batchnorm\"},{\"type\":\"relu\"},"
    "{\"type\":\"reshape\",\"shape\":[8,7,7]},"
    "{\"type\":\"conv_transpose2d\",\"out\":16,\"kernel\":4,\"stride\":2,\"padding\":1},"
    "{\"type\":\"relu\"},"
    "{\"type\":\"conv2d\",\"out\":6,\"kernel\":4,\"stride\":2,\"padding\":1},"
    "{\"type\":\"tanh\"}]}";

typedef struct run_out {
    float *y, *g, *dx;
    size_t ny, ng, nx;
} run_out;

static void run(const char *arch, int threads, const float *x, const float *dy, run_out *o)
{
    pg_error err = {0};
    pg_nn *net;
    const float *y;
    pg_threads_set(threads);
    ck_assert_int_eq(pg_nn_create(arch, BATCH, 7, &net, &err), PG_OK);
    o->ny = pg_nn_out_size(net) * BATCH;
    o->ng = pg_nn_param_count(net);
    o->nx = pg_nn_in_size(net) * BATCH;
    o->y = pg_alloc_f32(o->ny);
    o->g = pg_alloc_f32(o->ng);
    o->dx = pg_alloc_f32(o->nx);
    ck_assert_ptr_nonnull(o->y);
    ck_assert_ptr_nonnull(o->g);
    ck_assert_ptr_nonnull(o->dx);
    pg_nn_set_train(net, true);
    pg_nn_zero_grad(net);
    ck_assert_int_eq(pg_nn_forward(net, x, NULL, BATCH, &y, &err), PG_OK);
    memcpy(o->y, y, o->ny * sizeof *y);
    ck_assert_int_eq(pg_nn_backward(net, dy, o->dx, &err), PG_OK);
    memcpy(o->g, pg_nn_grads(net), o->ng * sizeof *o->g);
    pg_nn_free(net);
}

static void run_free(run_out *o)
{
    pg_free(o->y);
    pg_free(o->g);
    pg_free(o->dx);
}

static void same_bits(const char *arch, size_t in_size, size_t out_size)
{
    size_t nx = in_size * BATCH, ny = out_size * BATCH;
    float *x = pg_alloc_f32(nx), *dy = pg_alloc_f32(ny);
    ck_assert_ptr_nonnull(x);
    ck_assert_ptr_nonnull(dy);
    pg_rng r;
    pg_rng_seeded(&r, 11, 0);
    pg_rng_fill_normal(&r, x, nx, 0.5f, 2.0f);
    pg_rng_fill_normal(&r, dy, ny, 0.0f, 1.0f);
    run_out ref, o;
    run(arch, 1, x, dy, &ref);
    ck_assert_uint_eq(ref.ny, ny);
    /* The pass really computes something: outputs and gradients are not all zero. */
    float gmax = 0.0f;
    for (size_t i = 0; i < ref.ng; i++) gmax = ref.g[i] > gmax ? ref.g[i] : gmax;
    ck_assert_float_gt(gmax, 0.0f);
    for (int t = 2; t <= 3; t++) {
        run(arch, t, x, dy, &o);
        ck_assert_int_eq(memcmp(o.y, ref.y, ny * sizeof *o.y), 0);
        ck_assert_int_eq(memcmp(o.g, ref.g, ref.ng * sizeof *o.g), 0);
        ck_assert_int_eq(memcmp(o.dx, ref.dx, nx * sizeof *o.dx), 0);
        run_free(&o);
    }
    run_free(&ref);
    pg_free(x);
    pg_free(dy);
    pg_threads_set(1);
}

/* Eval mode: a sample's output must not depend on its neighbours in the
 * batch, so samples 1..BATCH-1 run as a batch of their own (on 2 threads)
 * reproduce the full batch's rows. */
static void batch_free_of_neighbours(const char *arch, size_t in_size, size_t out_size)
{
    float *x = pg_alloc_f32(in_size * BATCH), *full = pg_alloc_f32(out_size * BATCH);
    ck_assert(x && full);
    pg_rng r;
    pg_rng_seeded(&r, 5, 0);
    pg_rng_fill_normal(&r, x, in_size * BATCH, 0.5f, 2.0f);
    pg_error err = {0};
    pg_nn *net;
    const float *y;
    pg_threads_set(2);
    ck_assert_int_eq(pg_nn_create(arch, BATCH, 7, &net, &err), PG_OK);
    pg_nn_set_train(net, false);
    ck_assert_int_eq(pg_nn_forward(net, x, NULL, BATCH, &y, &err), PG_OK);
    memcpy(full, y, out_size * BATCH * sizeof *y);
    ck_assert_int_eq(pg_nn_forward(net, x + in_size, NULL, BATCH - 1, &y, &err), PG_OK);
    ck_assert(memcmp(y, full + out_size, out_size * (BATCH - 1) * sizeof *y) == 0);
    pg_nn_free(net);
    pg_free(x);
    pg_free(full);
    pg_threads_set(1);
}

START_TEST(eval_rows_ignore_their_batch)
{
    batch_free_of_neighbours(ARCH, 4 * 14 * 14, 53 * 53);
    batch_free_of_neighbours(ARCH_IMPLICIT, 4 * 14 * 14, 25 * 25);
    batch_free_of_neighbours(ARCH_GEMM, 16, 6 * 7 * 7);
}
END_TEST

START_TEST(same_bits_any_thread_count)
{
    same_bits(ARCH, 4 * 14 * 14, 53 * 53);
    same_bits(ARCH_IMPLICIT, 4 * 14 * 14, 25 * 25);
    same_bits(ARCH_GEMM, 16, 6 * 7 * 7);
}
END_TEST

static Suite *threads_suite(void)
{
    Suite *s = suite_create("nn_threads");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, same_bits_any_thread_count);
    tcase_add_test(tc, eval_rows_ignore_their_batch);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(threads_suite)
