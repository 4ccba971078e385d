/* Every layer's backward pass against central finite differences.
 *
 * Each case builds a one- or two-layer network, fills parameters and inputs
 * with random values, and uses the scalar loss L = sum_i c_i y_i (c random,
 * accumulated in double) so that dL/dy = c is the gradient fed to backward.
 * The analytic input and parameter gradients are then compared with
 * (L(t + h) - L(t - h)) / 2h for every coordinate t (or 150 sampled ones).
 *
 * Tolerance: the forward pass runs in float32, so each L carries a rounding
 * error of about 2^-24 * sum |c_i y_i| (< 1e-5 here); divided by 2h with
 * h = 1e-2 that is < 1e-3. The truncation error h^2/6 * f''' is zero for the
 * piecewise-linear layers (inputs are kept away from the ReLU kink by more than
 * h) and below 1e-4 for tanh, sigmoid and batchnorm at these scales. Hence
 * |analytic - fd| <= 4e-3 + 4e-3 |analytic|.
 */
#include <stdio.h>

#include "engine/core/alloc.h"
#include "engine/core/rng.h"
#include "engine/nn/nn.h"
#include "support/pg_test.h"

#define H 1e-2

typedef struct fd_case {
    pg_nn *net;
    float *x;
    int32_t labels[8];
    double *c;
    size_t n, in, out;
} fd_case;

static double loss(fd_case *k)
{
    const float *y;
    pg_error err = {0};
    ck_assert_msg(pg_nn_forward(k->net, k->x, k->labels, k->n, &y, &err) == PG_OK, "%s", err.msg);
    double s = 0.0;
    for (size_t i = 0; i < k->n * k->out; i++) s += k->c[i] * (double)y[i];
    return s;
}

static void check_close(double an, double fd, const char *what, size_t i, const char *arch)
{
    ck_assert_msg(fabs(an - fd) <= 4e-3 + 4e-3 * fabs(an),
                  "%s[%zu]: analytic %.6g vs finite difference %.6g (arch %s)", what, i, an, fd,
                  arch);
}

/* min_abs: inputs are pushed to |x| >= min_abs (kinks of ReLU-like layers). */
static void fd_check(const char *arch, size_t n, bool train, double min_abs)
{
    pg_error err = {0};
    fd_case k = {0};
    k.n = n;
    ck_assert_msg(pg_nn_create(arch, n, 7, &k.net, &err) == PG_OK, "%s: %s", arch, err.msg);
    k.in = pg_nn_in_size(k.net), k.out = pg_nn_out_size(k.net);
    pg_rng g;
    pg_rng_seeded(&g, 42, 0);
    size_t np = pg_nn_param_count(k.net), ns = pg_nn_state_count(k.net);
    float *p = pg_nn_params(k.net), *st = pg_nn_state(k.net);
    pg_rng_fill_uniform(&g, p, np, -1.0f, 1.0f);
    /* Running statistics for eval mode: means anywhere, variances positive. */
    for (size_t i = 0; i < ns; i++) st[i] = (float)pg_rng_uniform(&g) + 0.5f;
    k.x = pg_alloc_f32(n * k.in);
    k.c = malloc(n * k.out * sizeof *k.c);
    for (size_t i = 0; i < n * k.in; i++) {
        double v = 2.0 * pg_rng_uniform(&g) - 1.0;
        if (fabs(v) < min_abs) v = v < 0 ? -min_abs - fabs(v) : min_abs + fabs(v);
        k.x[i] = (float)v;
    }
    for (size_t i = 0; i < n * k.out; i++) k.c[i] = 2.0 * pg_rng_uniform(&g) - 1.0;
    size_t classes = pg_nn_num_classes(k.net);
    for (size_t j = 0; j < n; j++) k.labels[j] = classes ? (int32_t)(j * 7 % classes) : 0;
    pg_nn_set_train(k.net, train);

    /* Analytic gradients. */
    const float *y;
    ck_assert_int_eq(pg_nn_forward(k.net, k.x, k.labels, n, &y, &err), PG_OK);
    float *gout = pg_alloc_f32(n * k.out), *gin = pg_alloc_f32(n * k.in);
    for (size_t i = 0; i < n * k.out; i++) gout[i] = (float)k.c[i];
    pg_nn_zero_grad(k.net);
    ck_assert_int_eq(pg_nn_backward(k.net, gout, gin, &err), PG_OK);
    float *gp = malloc((np ? np : 1) * sizeof *gp);
    memcpy(gp, pg_nn_grads(k.net), np * sizeof *gp);

    /* Finite differences on inputs, then parameters. Running stats are saved
     * and restored so train-mode forwards do not drift them between probes. */
    float *st0 = malloc((ns ? ns : 1) * sizeof *st0);
    memcpy(st0, st, ns * sizeof *st);
    size_t stride_in = n * k.in > 150 ? n * k.in / 150 + 1 : 1;
    for (size_t i = 0; i < n * k.in; i += stride_in) {
        float v = k.x[i];
        k.x[i] = v + (float)H;
        double lp = loss(&k);
        k.x[i] = v - (float)H;
        double lm = loss(&k);
        k.x[i] = v;
        double h2 = (double)(v + (float)H) - (double)(v - (float)H);
        check_close(gin[i], (lp - lm) / h2, "dx", i, arch);
    }
    size_t stride_p = np > 150 ? np / 150 + 1 : 1;
    for (size_t i = 0; i < np; i += stride_p) {
        float v = p[i];
        p[i] = v + (float)H;
        double lp = loss(&k);
        p[i] = v - (float)H;
        double lm = loss(&k);
        p[i] = v;
        double h2 = (double)(v + (float)H) - (double)(v - (float)H);
        check_close(gp[i], (lp - lm) / h2, "dparam", i, arch);
    }
    memcpy(st, st0, ns * sizeof *st);
    free(st0);
    free(gp);
    pg_free(gout);
    pg_free(gin);
    pg_free(k.x);
    free(k.c);
    pg_nn_free(k.net);
}

START_TEST(fd_linear)
{
    fd_check("{\"input\":5,\"layers\":[{\"type\":\"linear\",\"out\":4}]}", 3, true, 0);
    fd_check("{\"input\":[2,2,2],\"layers\":[{\"type\":\"linear\",\"out\":3,\"bias\":false}]}", 2,
             true, 0);
}
END_TEST

START_TEST(fd_conv2d)
{
    fd_check("{\"input\":[2,5,6],\"layers\":[{\"type\":\"conv2d\",\"out\":3,\"kernel\":3,"
             "\"stride\":2,\"padding\":1}]}",
             2, true, 0);
    fd_check("{\"input\":[2,4,4],\"layers\":[{\"type\":\"conv2d\",\"out\":2,\"kernel\":5,"
             "\"padding\":2,\"bias\":false}]}",
             3, true, 0);
    fd_check("{\"input\":[1,6,5],\"layers\":[{\"type\":\"conv2d\",\"out\":2,\"kernel\":2}]}", 2,
             true, 0);
    /* Stride 1 with 5..7 output channels (or fewer than 8 input channels)
     * takes the im2col path; with at most 4 (the cases above, except the
     * strided one) the direct kernel; with 8..64 channels on both sides the
     * implicit GEMM (the two cases after the next). */
    fd_check("{\"input\":[2,5,4],\"layers\":[{\"type\":\"conv2d\",\"out\":6,\"kernel\":3,"
             "\"padding\":1}]}",
             2, true, 0);
    fd_check("{\"input\":[3,4,5],\"layers\":[{\"type\":\"conv2d\",\"out\":1,\"kernel\":3,"
             "\"padding\":0}]}",
             3, true, 0);
    fd_check("{\"input\":[8,5,6],\"layers\":[{\"type\":\"conv2d\",\"out\":9,\"kernel\":3,"
             "\"padding\":1}]}",
             2, true, 0);
    fd_check("{\"input\":[9,4,5],\"layers\":[{\"type\":\"conv2d\",\"out\":17,\"kernel\":5,"
             "\"padding\":2,\"bias\":false}]}",
             1, true, 0);
}
END_TEST

START_TEST(fd_conv_transpose2d)
{
    fd_check("{\"input\":[3,3,4],\"layers\":[{\"type\":\"conv_transpose2d\",\"out\":2,"
             "\"kernel\":4,\"stride\":2,\"padding\":1}]}",
             2, true, 0);
    fd_check("{\"input\":[2,4,4],\"layers\":[{\"type\":\"conv_transpose2d\",\"out\":2,"
             "\"kernel\":3,\"stride\":1,\"padding\":1,\"bias\":false}]}",
             2, true, 0);
    /* From a 1x1 "image": the dcgan first layer (GEMM-only path). */
    fd_check("{\"input\":4,\"layers\":[{\"type\":\"conv_transpose2d\",\"out\":3,\"kernel\":3}]}", 3,
             true, 0);
}
END_TEST

START_TEST(fd_batchnorm)
{
    const char *bn1 = "{\"input\":6,\"layers\":[{\"type\":\"batchnorm\"}]}";
    const char *bn2 = "{\"input\":[3,3,2],\"layers\":[{\"type\":\"batchnorm\"}]}";
    fd_check(bn1, 5, true, 0);
    fd_check(bn2, 3, true, 0);
    fd_check(bn1, 4, false, 0);
    fd_check(bn2, 2, false, 0);
}
END_TEST

START_TEST(fd_activations)
{
    fd_check("{\"input\":[2,3,3],\"layers\":[{\"type\":\"relu\"}]}", 2, true, 3 * H);
    fd_check("{\"input\":[2,3,3],\"layers\":[{\"type\":\"leaky_relu\",\"slope\":0.2}]}", 2, true,
             3 * H);
    fd_check("{\"input\":[2,3,3],\"layers\":[{\"type\":\"tanh\"}]}", 2, true, 0);
    fd_check("{\"input\":[2,3,3],\"layers\":[{\"type\":\"sigmoid\"}]}", 2, true, 0);
    fd_check("{\"input\":[12],\"layers\":[{\"type\":\"reshape\",\"shape\":[3,2,2]},"
             "{\"type\":\"conv2d\",\"out\":1,\"kernel\":2}]}",
             2, true, 0);
}
END_TEST

START_TEST(fd_upsample)
{
    const char *modes[] = {
        "{\"type\":\"upsample\",\"mode\":\"nearest\",\"factor\":2}",
        "{\"type\":\"upsample\",\"mode\":\"nearest\",\"factor\":3}",
        "{\"type\":\"upsample\",\"mode\":\"bilinear\",\"factor\":2}",
        "{\"type\":\"upsample\",\"mode\":\"bilinear\",\"factor\":3}",
        "{\"type\":\"upsample\",\"mode\":\"bilinear\",\"factor\":2,\"align_corners\":true}",
    };
    for (int i = 0; i < 5; i++) {
        char arch[256];
        snprintf(arch, sizeof arch, "{\"input\":[2,3,4],\"layers\":[%s]}", modes[i]);
        fd_check(arch, 2, true, 0);
    }
}
END_TEST

START_TEST(fd_label_embed)
{
    fd_check("{\"input\":3,\"layers\":[{\"type\":\"label_embed\",\"classes\":4,\"dim\":2},"
             "{\"type\":\"linear\",\"out\":2}]}",
             6, true, 0);
    fd_check("{\"input\":3,\"layers\":[{\"type\":\"label_onehot\",\"classes\":3},"
             "{\"type\":\"linear\",\"out\":2}]}",
             4, true, 0);
}
END_TEST

/* A whole generator-shaped stack, to check the chaining of the drivers. */
START_TEST(fd_network)
{
    fd_check("{\"input\":3,\"layers\":[{\"type\":\"label_embed\",\"classes\":3,\"dim\":2},"
             "{\"type\":\"conv_transpose2d\",\"out\":4,\"kernel\":3,\"bias\":false},"
             "{\"type\":\"batchnorm\"},{\"type\":\"tanh\"},"
             "{\"type\":\"upsample\",\"mode\":\"bilinear\"},"
             "{\"type\":\"conv2d\",\"out\":2,\"kernel\":3,\"padding\":1},"
             "{\"type\":\"reshape\",\"shape\":[72]},{\"type\":\"linear\",\"out\":5},"
             "{\"type\":\"batchnorm\"},{\"type\":\"sigmoid\"}]}",
             4, true, 0);
}
END_TEST

/* Hand-checked forward values: nearest/bilinear upsampling of a 2x2 image and a
 * one-hot concatenation. */
START_TEST(forward_known_values)
{
    pg_error err = {0};
    pg_nn *net;
    const float *y;
    float x[4] = {1, 2, 3, 4};
    ck_assert_int_eq(pg_nn_create("{\"input\":[1,2,2],\"layers\":[{\"type\":\"upsample\","
                                  "\"mode\":\"bilinear\"}]}",
                                  1, 0, &net, &err),
                     PG_OK);
    ck_assert_int_eq(pg_nn_forward(net, x, NULL, 1, &y, &err), PG_OK);
    /* Row 0 of the 4x4 output: 1, 1.25, 1.75, 2 (half-pixel centers, clamped). */
    ck_assert_float_eq_tol(y[0], 1.0f, 1e-6f);
    ck_assert_float_eq_tol(y[1], 1.25f, 1e-6f);
    ck_assert_float_eq_tol(y[2], 1.75f, 1e-6f);
    ck_assert_float_eq_tol(y[3], 2.0f, 1e-6f);
    ck_assert_float_eq_tol(y[5], 1.25f + 0.25f * 2.0f, 1e-6f);
    pg_nn_free(net);
    ck_assert_int_eq(pg_nn_create("{\"input\":2,\"layers\":[{\"type\":\"label_onehot\","
                                  "\"classes\":3}]}",
                                  2, 0, &net, &err),
                     PG_OK);
    int32_t lab[2] = {2, 0};
    ck_assert_int_eq(pg_nn_forward(net, x, lab, 2, &y, &err), PG_OK);
    float want[10] = {1, 2, 0, 0, 1, 3, 4, 1, 0, 0};
    for (int i = 0; i < 10; i++) ck_assert_float_eq(y[i], want[i]);
    lab[1] = 3;
    ck_assert_int_eq(pg_nn_forward(net, x, lab, 2, &y, &err), PG_EINVAL);
    ck_assert_int_eq(pg_nn_forward(net, x, NULL, 2, &y, &err), PG_EINVAL);
    ck_assert_int_eq(pg_nn_forward(net, x, lab, 3, &y, &err), PG_EINVAL);
    pg_nn_free(net);
}
END_TEST

START_TEST(bad_architectures)
{
    const char *bad[] = {
        "",
        "[]",
        "{\"input\":3}",
        "{\"input\":3,\"layers\":[]}",
        "{\"input\":0,\"layers\":[{\"type\":\"relu\"}]}",
        "{\"input\":3,\"layers\":[{\"type\":\"nope\"}]}",
        "{\"input\":3,\"layers\":[{\"type\":\"linear\"}]}",
        "{\"input\":3,\"layers\":[{\"type\":\"linear\",\"out\":-1}]}",
        "{\"input\":[1,3,3],\"layers\":[{\"type\":\"conv2d\",\"out\":1,\"kernel\":5}]}",
        "{\"input\":[1,3,3],\"layers\":[{\"type\":\"reshape\",\"shape\":[2,2,2]}]}",
        "{\"input\":[1,2,2],\"layers\":[{\"type\":\"conv_transpose2d\",\"out\":1,\"kernel\":1,"
        "\"padding\":2}]}",
        "{\"input\":3,\"layers\":[{\"type\":\"linear\",\"out\":1000000},"
        "{\"type\":\"linear\",\"out\":1000000}]}",
        "{\"input\":3,\"layers\":[{\"type\":\"label_onehot\",\"classes\":2},"
        "{\"type\":\"label_onehot\",\"classes\":2}]}",
        "{\"input\":3,\"init\":\"zeros\",\"layers\":[{\"type\":\"relu\"}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        pg_nn *net = NULL;
        pg_error err = {0};
        ck_assert_msg(pg_nn_create(bad[i], 4, 0, &net, &err) == PG_EINVAL, "accepted %s", bad[i]);
        ck_assert_ptr_null(net);
        ck_assert(err.msg[0] != '\0');
    }
}
END_TEST

static Suite *layers_suite(void)
{
    Suite *s = suite_create("nn_layers");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, fd_linear);
    tcase_add_test(tc, fd_conv2d);
    tcase_add_test(tc, fd_conv_transpose2d);
    tcase_add_test(tc, fd_batchnorm);
    tcase_add_test(tc, fd_activations);
    tcase_add_test(tc, fd_upsample);
    tcase_add_test(tc, fd_label_embed);
    tcase_add_test(tc, fd_network);
    tcase_add_test(tc, forward_known_values);
    tcase_add_test(tc, bad_architectures);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(layers_suite)
