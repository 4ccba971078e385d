/* Forward and backward kernels of the non-convolutional layers, and the
 * per-layer dispatch. Reductions over the batch accumulate in double so that
 * finite-difference tests and large batches see the same numbers. */
#include <math.h>
#include <string.h>
#include <time.h>

#include "engine/nn/nn_internal.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

void nn_sgemm(const nn_run *r, bool ta, bool tb, size_t m, size_t n, size_t k, float alpha,
              const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c,
              size_t ldc)
{
    if (m == 0 || n == 0) return;
    double t0 = r->blas_ms ? now_ms() : 0.0;
    pg_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    if (r->blas_ms) *r->blas_ms += now_ms() - t0;
}

/* y = x W^T + b with W out x in (PyTorch layout). */
static void linear_forward(const nn_layer *L, const nn_run *r, const float *x, float *y)
{
    size_t in = L->in_size, out = L->out_size, n = r->n;
    const float *W = r->params + L->p_off;
    if (L->bias) {
        const float *b = W + out * in;
        for (size_t j = 0; j < n; j++) memcpy(y + j * out, b, out * sizeof *y);
    }
    if (r->packed) { /* the same product from the snapshot's packed W^T */
        double t0 = r->blas_ms ? now_ms() : 0.0;
        pg_sgemm_packed(false, n, out, in, 1.0f, x, in, r->packed, L->bias ? 1.0f : 0.0f, y, out);
        if (r->blas_ms) *r->blas_ms += now_ms() - t0;
        return;
    }
    nn_sgemm(r, false, true, n, out, in, 1.0f, x, in, W, in, L->bias ? 1.0f : 0.0f, y, out);
}

static void linear_backward(const nn_layer *L, const nn_run *r, const float *x, const float *dy,
                            float *dx)
{
    size_t in = L->in_size, out = L->out_size, n = r->n;
    const float *W = r->params + L->p_off;
    float *dW = r->grads + L->p_off;
    nn_sgemm(r, true, false, out, in, n, 1.0f, dy, out, x, in, 1.0f, dW, in);
    if (L->bias) {
        /* Row by row so the loop runs along contiguous memory and vectorizes. */
        float *db = dW + out * in;
        for (size_t j = 0; j < n; j++) {
            const float *g = dy + j * out;
            for (size_t o = 0; o < out; o++) db[o] += g[o];
        }
    }
    if (dx) nn_sgemm(r, false, false, n, in, out, 1.0f, dy, out, W, in, 0.0f, dx, in);
}

/* Batchnorm over channel c: statistics across the batch and the h x w plane
 * (1d for flat features, 2d for images). aux holds the mean and 1/std used by
 * the last forward. params: gamma[c], beta[c]; state: running mean[c], var[c]. */
/* Sums over one plane in double with BN_LANES independent partial sums (a
 * fixed order, so results stay deterministic): a single running double sum is
 * a serial add chain that costs several cycles per element. */
#define BN_LANES 8

static double lane_sum(const float *p, size_t S)
{
    double acc[BN_LANES] = {0};
    size_t q = 0;
    for (; q + BN_LANES <= S; q += BN_LANES)
        for (size_t l = 0; l < BN_LANES; l++) acc[l] += p[q + l];
    for (; q < S; q++) acc[0] += p[q];
    double t = 0.0;
    for (size_t l = 0; l < BN_LANES; l++) t += acc[l];
    return t;
}

static double lane_sqdev(const float *p, size_t S, double mu)
{
    double acc[BN_LANES] = {0};
    size_t q = 0;
    for (; q + BN_LANES <= S; q += BN_LANES)
        for (size_t l = 0; l < BN_LANES; l++) {
            double d = p[q + l] - mu;
            acc[l] += d * d;
        }
    for (; q < S; q++) {
        double d = p[q] - mu;
        acc[0] += d * d;
    }
    double t = 0.0;
    for (size_t l = 0; l < BN_LANES; l++) t += acc[l];
    return t;
}

static void bn_forward(const nn_layer *L, const nn_run *r, const float *x, float *y)
{
    size_t C = L->in_c, S = L->in_h * L->in_w, n = r->n, m = n * S;
    const float *gamma = r->params + L->p_off, *beta = gamma + C;
    float *rmean = r->state + L->s_off, *rvar = rmean + C;
    float *mean = r->aux + L->a_off, *istd = mean + C;
#pragma omp parallel for schedule(static) if (n * C * S >= NN_PAR_MIN)
    for (size_t c = 0; c < C; c++) {
        double mu, var;
        if (r->train) {
            double s = 0.0, s2 = 0.0;
            for (size_t j = 0; j < n; j++) s += lane_sum(x + (j * C + c) * S, S);
            mu = s / (double)m;
            for (size_t j = 0; j < n; j++) s2 += lane_sqdev(x + (j * C + c) * S, S, mu);
            var = s2 / (double)m;
            double unbiased = m > 1 ? var * (double)m / (double)(m - 1) : var;
            rmean[c] = (float)((1.0 - L->moment) * rmean[c] + L->moment * mu);
            rvar[c] = (float)((1.0 - L->moment) * rvar[c] + L->moment * unbiased);
        } else {
            mu = rmean[c];
            var = rvar[c];
        }
        float fm = (float)mu, is = (float)(1.0 / sqrt(var + L->eps));
        mean[c] = fm;
        istd[c] = is;
        float a = gamma[c] * is, b = beta[c] - a * fm;
        for (size_t j = 0; j < n; j++) {
            const float *p = x + (j * C + c) * S;
            float *o = y + (j * C + c) * S;
            for (size_t q = 0; q < S; q++) o[q] = a * p[q] + b;
        }
    }
}

static void bn_backward(const nn_layer *L, const nn_run *r, const float *x, const float *dy,
                        float *dx)
{
    size_t C = L->in_c, S = L->in_h * L->in_w, n = r->n, m = n * S;
    const float *gamma = r->params + L->p_off;
    float *dgamma = r->grads + L->p_off, *dbeta = dgamma + C;
    const float *mean = r->aux + L->a_off, *istd = mean + C;
#pragma omp parallel for schedule(static) if (n * C * S >= NN_PAR_MIN)
    for (size_t c = 0; c < C; c++) {
        double sdy = 0.0, sdyx = 0.0;
        float mu = mean[c], is = istd[c];
        for (size_t j = 0; j < n; j++) {
            const float *p = x + (j * C + c) * S, *g = dy + (j * C + c) * S;
            float a[BN_LANES] = {0}, b[BN_LANES] = {0};
            size_t q = 0;
            for (; q + BN_LANES <= S; q += BN_LANES)
                for (size_t l = 0; l < BN_LANES; l++) {
                    a[l] += g[q + l];
                    b[l] += g[q + l] * (p[q + l] - mu);
                }
            for (; q < S; q++) {
                a[0] += g[q];
                b[0] += g[q] * (p[q] - mu);
            }
            for (size_t l = 0; l < BN_LANES; l++) {
                sdy += a[l];
                sdyx += b[l];
            }
        }
        sdyx *= is; /* sum dy * xhat */
        dgamma[c] += (float)sdyx;
        dbeta[c] += (float)sdy;
        if (!dx) continue;
        float k = gamma[c] * is;
        if (r->train) {
            /* Batch statistics depend on x: dx = k (dy - mean(dy) - xhat mean(dy xhat)). */
            float a = (float)(sdy / (double)m), b = (float)(sdyx / (double)m);
            for (size_t j = 0; j < n; j++) {
                const float *p = x + (j * C + c) * S, *g = dy + (j * C + c) * S;
                float *o = dx + (j * C + c) * S;
                for (size_t q = 0; q < S; q++) o[q] = k * (g[q] - a - (p[q] - mu) * is * b);
            }
        } else {
            for (size_t j = 0; j < n; j++) {
                const float *g = dy + (j * C + c) * S;
                float *o = dx + (j * C + c) * S;
                for (size_t q = 0; q < S; q++) o[q] = k * g[q];
            }
        }
    }
}

/* Source index pair and weight of output coordinate o for bilinear upsampling
 * (PyTorch's conventions for align_corners true/false). */
static void bilin_src(size_t o, size_t in, size_t out, size_t f, bool align, size_t *i0, size_t *i1,
                      float *lam)
{
    double s;
    if (align)
        s = out > 1 ? (double)o * (double)(in - 1) / (double)(out - 1) : 0.0;
    else {
        s = ((double)o + 0.5) / (double)f - 0.5;
        if (s < 0.0) s = 0.0;
    }
    size_t a = (size_t)s;
    if (a > in - 1) a = in - 1;
    *i0 = a;
    *i1 = a + 1 < in ? a + 1 : a;
    *lam = (float)(s - (double)a);
}

#define UP_TAB 512 /* column tables cover this many output columns at a time */

/* Source indices and weights of output coordinates [c0, c0 + len) along an
 * axis of in -> out pixels. */
static void up_tab(const nn_layer *L, size_t in, size_t out, size_t c0, size_t len, size_t *x0,
                   size_t *x1, float *lx)
{
    for (size_t i = 0; i < len; i++) {
        if (L->up_mode == NN_UP_NEAREST)
            x0[i] = x1[i] = (c0 + i) / L->factor, lx[i] = 0.0f;
        else
            bilin_src(c0 + i, in, out, L->factor, L->align, &x0[i], &x1[i], &lx[i]);
    }
}

#define UP_SEP 4096 /* floats of the per-plane row buffer of the separable path */

/* One plane, output columns [c0, c0 + len) (y points at column c0), done
 * separably: the input rows are interpolated along x once into t (H x len),
 * then every output row blends two rows of t, so the inner loops are
 * contiguous. Backward runs the adjoint steps in reverse order and adds into x. */
static void up_plane_sep(const nn_layer *L, size_t len, const size_t *tx0, const size_t *tx1,
                         const float *tlx, const size_t *ty0, const size_t *ty1, const float *tly,
                         float *x, float *y, bool back)
{
    size_t H = L->in_h, W = L->in_w, OH = L->out_h, OW = L->out_w;
    float t[UP_SEP];
    if (!back)
        for (size_t iy = 0; iy < H; iy++) {
            const float *r = x + iy * W;
            float *d = t + iy * len;
            for (size_t i = 0; i < len; i++)
                d[i] = (1.0f - tlx[i]) * r[tx0[i]] + tlx[i] * r[tx1[i]];
        }
    else
        memset(t, 0, H * len * sizeof *t);
    for (size_t oy = 0; oy < OH; oy++) {
        float ly = tly[oy];
        float *t0 = t + ty0[oy] * len, *t1 = t + ty1[oy] * len, *o = y + oy * OW;
        if (!back) {
            for (size_t i = 0; i < len; i++) o[i] = (1.0f - ly) * t0[i] + ly * t1[i];
        } else {
            for (size_t i = 0; i < len; i++) t0[i] += (1.0f - ly) * o[i];
            for (size_t i = 0; i < len; i++) t1[i] += ly * o[i];
        }
    }
    if (back)
        for (size_t iy = 0; iy < H; iy++) {
            float *r = x + iy * W;
            const float *d = t + iy * len;
            for (size_t i = 0; i < len; i++) {
                r[tx0[i]] += (1.0f - tlx[i]) * d[i];
                r[tx1[i]] += tlx[i] * d[i];
            }
        }
}

/* Forward (back = false): y = up(x). Backward: x is dx (overwritten) and y is dy.
 * Planes are independent, so they are split across threads. */
static void upsample(const nn_layer *L, size_t n, const float *x, float *y, bool back)
{
    size_t C = L->in_c, H = L->in_h, W = L->in_w, OH = L->out_h, OW = L->out_w, f = L->factor;
    size_t planes = n * C;
    for (size_t c0 = 0; c0 < OW; c0 += UP_TAB) {
        size_t len = OW - c0 < UP_TAB ? OW - c0 : UP_TAB;
        size_t tx0[UP_TAB], tx1[UP_TAB];
        float tlx[UP_TAB];
        size_t ty0[UP_TAB], ty1[UP_TAB];
        float tly[UP_TAB];
        up_tab(L, W, OW, c0, len, tx0, tx1, tlx);
        bool sep = H * len <= UP_SEP && OH <= UP_TAB;
        if (sep) up_tab(L, H, OH, 0, OH, ty0, ty1, tly);
#pragma omp parallel for schedule(static) if (planes * OH * len >= NN_PAR_MIN)
        for (size_t pl = 0; pl < planes; pl++) {
            float *xi = (float *)(uintptr_t)x + pl * H * W;
            float *yo = y + pl * OH * OW;
            if (back && c0 == 0) memset(xi, 0, H * W * sizeof *xi);
            if (sep) {
                up_plane_sep(L, len, tx0, tx1, tlx, ty0, ty1, tly, xi, yo + c0, back);
                continue;
            }
            for (size_t oy = 0; oy < OH; oy++) {
                size_t y0, y1;
                float ly;
                if (L->up_mode == NN_UP_NEAREST)
                    y0 = y1 = oy / f, ly = 0.0f;
                else
                    bilin_src(oy, H, OH, f, L->align, &y0, &y1, &ly);
                float *r0 = xi + y0 * W, *r1 = xi + y1 * W, *o = yo + oy * OW + c0;
                for (size_t i = 0; i < len; i++) {
                    size_t a = tx0[i], b = tx1[i];
                    float lx = tlx[i];
                    float w00 = (1 - ly) * (1 - lx), w01 = (1 - ly) * lx, w10 = ly * (1 - lx),
                          w11 = ly * lx;
                    if (!back) {
                        o[i] = w00 * r0[a] + w01 * r0[b] + w10 * r1[a] + w11 * r1[b];
                    } else {
                        float g = o[i];
                        r0[a] += w00 * g;
                        r0[b] += w01 * g;
                        r1[a] += w10 * g;
                        r1[b] += w11 * g;
                    }
                }
            }
        }
    }
}

/* Appends a class code to each flat input: a learned row of the table
 * (classes x dim) or the one-hot vector of the label. */
static void embed_forward(const nn_layer *L, const nn_run *r, const float *x, float *y)
{
    size_t F = L->in_size, O = L->out_size, D = L->dim;
    const float *E = r->params + L->p_off;
    for (size_t j = 0; j < r->n; j++) {
        float *o = y + j * O;
        memcpy(o, x + j * F, F * sizeof *o);
        size_t lab = (size_t)r->labels[j];
        if (L->onehot) {
            memset(o + F, 0, D * sizeof *o);
            o[F + lab] = 1.0f;
        } else {
            memcpy(o + F, E + lab * D, D * sizeof *o);
        }
    }
}

static void embed_backward(const nn_layer *L, const nn_run *r, const float *dy, float *dx)
{
    size_t F = L->in_size, O = L->out_size, D = L->dim;
    float *dE = L->onehot ? NULL : r->grads + L->p_off;
    for (size_t j = 0; j < r->n; j++) {
        if (dx) memcpy(dx + j * F, dy + j * O, F * sizeof *dx);
        if (dE) {
            float *g = dE + (size_t)r->labels[j] * D;
            for (size_t d = 0; d < D; d++) g[d] += dy[j * O + F + d];
        }
    }
}

void nn_layer_forward(const nn_layer *L, const nn_run *r, const float *x, float *y)
{
    size_t total = r->n * L->out_size;
    switch (L->type) {
    case NN_LINEAR:
        linear_forward(L, r, x, y);
        break;
    case NN_CONV2D:
        if (nn_conv_direct_ok(L))
            nn_conv_direct_forward(L, r, x, y);
        else if (nn_conv_implicit_ok(L))
            nn_conv_implicit_forward(L, r, x, y);
        else
            nn_conv_forward(L, r, x, y);
        break;
    case NN_CONVT2D:
        nn_convt_forward(L, r, x, y);
        break;
    case NN_BATCHNORM:
        bn_forward(L, r, x, y);
        break;
    case NN_RELU:
#pragma omp parallel for schedule(static) if (total >= NN_PAR_MIN)
        for (size_t i = 0; i < total; i++) y[i] = x[i] > 0.0f ? x[i] : 0.0f;
        break;
    case NN_LEAKY_RELU:
#pragma omp parallel for schedule(static) if (total >= NN_PAR_MIN)
        for (size_t i = 0; i < total; i++) y[i] = x[i] > 0.0f ? x[i] : L->slope * x[i];
        break;
    case NN_TANH:
#pragma omp parallel for schedule(static) if (total >= NN_PAR_MIN)
        for (size_t i = 0; i < total; i++) y[i] = tanhf(x[i]);
        break;
    case NN_SIGMOID:
#pragma omp parallel for schedule(static) if (total >= NN_PAR_MIN)
        for (size_t i = 0; i < total; i++) y[i] = 1.0f / (1.0f + expf(-x[i]));
        break;
    case NN_RESHAPE:
        memcpy(y, x, total * sizeof *y);
        break;
    case NN_UPSAMPLE:
        upsample(L, r->n, x, y, false);
        break;
    case NN_EMBED:
        embed_forward(L, r, x, y);
        break;
    default:
        break;
    }
}

void nn_layer_backward(const nn_layer *L, const nn_run *r, const float *x, const float *y,
                       const float *dy, float *dx)
{
    size_t total = r->n * L->in_size;
    switch (L->type) {
    case NN_LINEAR:
        linear_backward(L, r, x, dy, dx);
        return;
    case NN_CONV2D:
        if (nn_conv_direct_ok(L))
            nn_conv_direct_backward(L, r, x, dy, dx);
        else if (nn_conv_implicit_ok(L))
            nn_conv_implicit_backward(L, r, x, dy, dx);
        else
            nn_conv_backward(L, r, x, dy, dx);
        return;
    case NN_CONVT2D:
        nn_convt_backward(L, r, x, dy, dx);
        return;
    case NN_BATCHNORM:
        bn_backward(L, r, x, dy, dx);
        return;
    case NN_EMBED:
        embed_backward(L, r, dy, dx);
        return;
    default:
        break;
    }
    if (!dx) return;
    switch (L->type) {
    case NN_RELU:
#pragma omp parallel for schedule(static) if (total >= NN_PAR_MIN)
        /* dy is loaded unconditionally so the select vectorizes; a
         * conditional load compiles to a branch on the sign of x, which
         * mispredicts half the time. */
        for (size_t i = 0; i < total; i++) {
            float g = dy[i];
            dx[i] = x[i] > 0.0f ? g : 0.0f;
        }
        break;
    case NN_LEAKY_RELU:
#pragma omp parallel for schedule(static) if (total >= NN_PAR_MIN)
        for (size_t i = 0; i < total; i++) {
            float g = dy[i];
            dx[i] = x[i] > 0.0f ? g : L->slope * g;
        }
        break;
    case NN_TANH:
#pragma omp parallel for schedule(static) if (total >= NN_PAR_MIN)
        for (size_t i = 0; i < total; i++) dx[i] = dy[i] * (1.0f - y[i] * y[i]);
        break;
    case NN_SIGMOID:
#pragma omp parallel for schedule(static) if (total >= NN_PAR_MIN)
        for (size_t i = 0; i < total; i++) dx[i] = dy[i] * y[i] * (1.0f - y[i]);
        break;
    case NN_RESHAPE:
        memcpy(dx, dy, total * sizeof *dx);
        break;
    case NN_UPSAMPLE:
        upsample(L, r->n, dx, (float *)(uintptr_t)dy, true);
        break;
    default:
        break;
    }
}
