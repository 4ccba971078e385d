/* Every convolution kernel path against a brute-force reference.
 *
 * conv2d and conv_transpose2d pick a kernel by shape (direct for <= 4 output
 * channels, implicit GEMM for 8..64 channels, im2col + SGEMM otherwise; the
 * transposed conv has its own paths). Each case below builds a one-layer
 * network, runs forward and backward with random parameters, input and output
 * gradient, and compares y, dW, db and dx with the textbook sums evaluated in
 * double: y = b + sum W x, and their adjoints. Shapes cover odd sizes,
 * padding 0..2, stride 1 and 2, channel counts that leave partial 16-channel
 * blocks, and batch 1 and > 1.
 *
 * Tolerance: each value is a sum of at most a few thousand float products of
 * O(1) terms; float32 accumulation error stays below 1e-5 * sum |terms|, so
 * |got - ref| <= 1e-4 * (1 + sum |terms|) holds with margin for any summation
 * order and cannot hide a wrong or missing term (each is O(0.1) or more).
 */
#include <stdio.h>

#include "engine/core/alloc.h"
#include "engine/core/rng.h"
#include "engine/nn/nn.h"
#include "support/pg_test.h"

typedef struct cshape {
    size_t ci, co, h, w, k, s, p, n;
    bool bias, transposed;
} cshape;

/* Output size of a conv (or transposed conv) along one axis. */
static size_t out_len(const cshape *c, size_t in)
{
    return c->transposed ? (in - 1) * c->s + c->k - 2 * c->p : (in + 2 * c->p - c->k) / c->s + 1;
}

/* Weight index: conv W[o][c][ki][kj], transposed W[c][o][ki][kj]. */
static size_t widx(const cshape *c, size_t o, size_t ci, size_t ki, size_t kj)
{
    size_t a = c->transposed ? ci * c->co + o : o * c->ci + ci;
    return (a * c->k + ki) * c->k + kj;
}

/* Calls f(o, ci, ki, kj, j, input index, output index) for every product term
 * W x of the layer: for a conv the output pixel reads input (oy s - p + ki, ...);
 * for a transposed conv input pixel (iy, ix) feeds output (iy s - p + ki, ...). */
typedef struct ref {
    const cshape *c;
    size_t oh, ow;
    const float *W, *x, *dy;
    double *y, *ya, *dW, *dx; /* ya: sum of |terms| per output, for the tolerance */
    double *dWa, *dxa;
} ref;

static void term(ref *r, size_t o, size_t ci, size_t ki, size_t kj, size_t j, size_t xi, size_t yi)
{
    const cshape *c = r->c;
    size_t wi = widx(c, o, ci, ki, kj);
    double w = r->W[wi], xv = r->x[xi], g = r->dy[yi];
    r->y[yi] += w * xv;
    r->ya[yi] += fabs(w * xv);
    r->dW[wi] += g * xv;
    r->dWa[wi] += fabs(g * xv);
    r->dx[xi] += g * w;
    r->dxa[xi] += fabs(g * w);
    (void)j;
}

static void ref_all(ref *r)
{
    const cshape *c = r->c;
    for (size_t j = 0; j < c->n; j++)
        for (size_t o = 0; o < c->co; o++)
            for (size_t ci = 0; ci < c->ci; ci++)
                for (size_t ki = 0; ki < c->k; ki++)
                    for (size_t kj = 0; kj < c->k; kj++) {
                        /* (a, b): sliding position; (u, v): the pixel it meets. */
                        size_t na = c->transposed ? c->h : r->oh, nb = c->transposed ? c->w : r->ow;
                        for (size_t a = 0; a < na; a++)
                            for (size_t b = 0; b < nb; b++) {
                                long u = (long)(a * c->s + ki) - (long)c->p;
                                long v = (long)(b * c->s + kj) - (long)c->p;
                                size_t lim_h = c->transposed ? r->oh : c->h;
                                size_t lim_w = c->transposed ? r->ow : c->w;
                                if (u < 0 || v < 0 || (size_t)u >= lim_h || (size_t)v >= lim_w)
                                    continue;
                                size_t xi, yi;
                                if (c->transposed) {
                                    xi = ((j * c->ci + ci) * c->h + a) * c->w + b;
                                    yi = ((j * c->co + o) * r->oh + (size_t)u) * r->ow + (size_t)v;
                                } else {
                                    xi = ((j * c->ci + ci) * c->h + (size_t)u) * c->w + (size_t)v;
                                    yi = ((j * c->co + o) * r->oh + a) * r->ow + b;
                                }
                                term(r, o, ci, ki, kj, j, xi, yi);
                            }
                    }
}

static void expect_close(const char *what, const char *arch, const float *got, const double *want,
                         const double *mag, size_t len)
{
    for (size_t i = 0; i < len; i++)
        ck_assert_msg(fabs((double)got[i] - want[i]) <= 1e-4 * (1.0 + mag[i]),
                      "%s[%zu] = %.7g, reference %.7g (%s)", what, i, (double)got[i], want[i],
                      arch);
}

static void check_shape(const cshape *c)
{
    char arch[512];
    snprintf(arch, sizeof arch,
             "{\"input\":[%zu,%zu,%zu],\"layers\":[{\"type\":\"%s\",\"out\":%zu,\"kernel\":%zu,"
             "\"stride\":%zu,\"padding\":%zu,\"bias\":%s}]}",
             c->ci, c->h, c->w, c->transposed ? "conv_transpose2d" : "conv2d", c->co, c->k, c->s,
             c->p, c->bias ? "true" : "false");
    pg_error err = {0};
    pg_nn *net;
    ck_assert_msg(pg_nn_create(arch, c->n, 3, &net, &err) == PG_OK, "%s: %s", arch, err.msg);
    size_t shape[3];
    pg_nn_out_shape(net, shape);
    ref r = {0};
    r.c = c, r.oh = out_len(c, c->h), r.ow = out_len(c, c->w);
    ck_assert_uint_eq(shape[0], c->co);
    ck_assert_uint_eq(shape[1], r.oh);
    ck_assert_uint_eq(shape[2], r.ow);
    size_t nx = c->n * c->ci * c->h * c->w, ny = c->n * c->co * r.oh * r.ow;
    size_t nw = c->ci * c->co * c->k * c->k, np = pg_nn_param_count(net);
    ck_assert_uint_eq(np, nw + (c->bias ? c->co : 0));

    pg_rng g;
    pg_rng_seeded(&g, 99, c->ci * 31 + c->co);
    float *p = pg_nn_params(net), *x = pg_alloc_f32(nx), *dy = pg_alloc_f32(ny);
    float *dx = pg_alloc_f32(nx);
    pg_rng_fill_uniform(&g, p, np, -1.0f, 1.0f);
    pg_rng_fill_uniform(&g, x, nx, -1.0f, 1.0f);
    pg_rng_fill_uniform(&g, dy, ny, -1.0f, 1.0f);
    r.W = p, r.x = x, r.dy = dy;
    r.y = calloc(ny, sizeof(double)), r.ya = calloc(ny, sizeof(double));
    r.dW = calloc(nw, sizeof(double)), r.dWa = calloc(nw, sizeof(double));
    r.dx = calloc(nx, sizeof(double)), r.dxa = calloc(nx, sizeof(double));
    ref_all(&r);
    size_t plane = r.oh * r.ow;
    double *db = calloc(c->co, sizeof(double)), *dba = calloc(c->co, sizeof(double));
    if (c->bias)
        for (size_t j = 0; j < c->n; j++)
            for (size_t o = 0; o < c->co; o++)
                for (size_t q = 0; q < plane; q++) {
                    size_t yi = (j * c->co + o) * plane + q;
                    r.y[yi] += p[nw + o];
                    r.ya[yi] += fabs(p[nw + o]);
                    db[o] += dy[yi];
                    dba[o] += fabs(dy[yi]);
                }

    const float *y;
    ck_assert_int_eq(pg_nn_forward(net, x, NULL, c->n, &y, &err), PG_OK);
    expect_close("y", arch, y, r.y, r.ya, ny);
    pg_nn_zero_grad(net);
    ck_assert_int_eq(pg_nn_backward(net, dy, dx, &err), PG_OK);
    const float *gp = pg_nn_grads(net);
    expect_close("dW", arch, gp, r.dW, r.dWa, nw);
    if (c->bias) expect_close("db", arch, gp + nw, db, dba, c->co);
    expect_close("dx", arch, dx, r.dx, r.dxa, nx);
    /* Backward accumulates into the gradients: a second pass doubles them. */
    ck_assert_int_eq(pg_nn_backward(net, dy, NULL, &err), PG_OK);
    for (size_t i = 0; i < nw; i++) r.dW[i] *= 2, r.dWa[i] *= 2;
    expect_close("dW (accumulated)", arch, gp, r.dW, r.dWa, nw);

    free(db);
    free(dba);
    free(r.y), free(r.ya), free(r.dW), free(r.dWa), free(r.dx), free(r.dxa);
    pg_free(x);
    pg_free(dy);
    pg_free(dx);
    pg_nn_free(net);
}

START_TEST(conv2d_paths)
{
    static const cshape cases[] = {
        /* implicit GEMM: partial channel blocks, odd sizes, padding 0..2 */
        {8, 9, 5, 7, 3, 1, 1, 3, true, false},
        {16, 32, 14, 14, 5, 1, 2, 2, true, false},
        {12, 20, 6, 5, 2, 1, 0, 1, false, false},
        {9, 17, 7, 6, 3, 1, 2, 2, true, false},
        {64, 8, 4, 5, 3, 1, 1, 2, false, false},
        /* direct (<= 4 output channels) and im2col (strided, wide) */
        {32, 1, 9, 8, 5, 1, 2, 2, true, false},
        {3, 2, 7, 6, 3, 1, 0, 3, true, false},
        {4, 6, 7, 9, 3, 2, 1, 2, true, false},
        {3, 70, 5, 4, 3, 1, 1, 2, true, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_shape(&cases[i]);
}
END_TEST

START_TEST(conv_transpose2d_paths)
{
    static const cshape cases[] = {
        /* stride 2, kernel 4, padding 1: the DCGAN upsampling layer */
        {16, 8, 3, 3, 4, 2, 1, 2, false, true},
        {5, 3, 4, 3, 4, 2, 1, 1, true, true},
        {8, 12, 5, 4, 4, 2, 1, 3, false, true},
        /* stride 2 with other kernels and padding */
        {4, 6, 3, 5, 3, 2, 0, 2, true, true},
        {6, 5, 4, 4, 5, 2, 2, 2, true, true},
        /* stride 1, padding below and at the kernel size */
        {8, 1, 6, 5, 3, 1, 1, 2, true, true},
        {5, 3, 5, 4, 4, 1, 0, 2, true, true},
        {4, 2, 6, 6, 3, 1, 2, 1, false, true},
        {3, 2, 5, 5, 2, 1, 2, 2, true, true},
        {3, 6, 5, 4, 3, 1, 1, 2, true, true},
        /* 1x1 input: without padding the dense (linear) path, with padding
         * the column path */
        {6, 10, 1, 1, 4, 1, 0, 3, false, true},
        {5, 7, 1, 1, 3, 2, 0, 2, true, true},
        {4, 3, 1, 1, 4, 1, 1, 2, true, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) check_shape(&cases[i]);
}
END_TEST

static Suite *conv_paths_suite(void)
{
    Suite *s = suite_create("nn_conv_paths");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, conv2d_paths);
    tcase_add_test(tc, conv_transpose2d_paths);
    suite_add_tcase(s, tc);
    return s;
}

PG_TEST_MAIN(conv_paths_suite)
