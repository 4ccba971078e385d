/* Convolution and transposed convolution through im2col/col2im + SGEMM.
 *
 * The whole batch goes through one GEMM per pass so OpenBLAS sees large
 * matrices: the column buffer is K x (n * P) where K = channels * k * k and P
 * the number of sliding positions, sample-major along the columns. GEMM
 * results are channel-major over the batch and are transposed into NCHW
 * (adding the bias on the way), which costs one pass over the output.
 *
 * Other paths, chosen by shape: stride-1 convs with <= 4 output channels run
 * on the direct kernel (nn_conv_direct.c), with 8..64 channels on the
 * implicit GEMM (nn_conv_implicit.c); a transposed conv from a 1x1 input
 * without padding is one dense GEMM (convt_dense below).
 */
#include <string.h>

#include "engine/nn/nn_internal.h"

/* Geometry of a sliding window over an image of c x h x w producing oh x ow
 * positions. */
typedef struct geom {
    size_t c, h, w, oh, ow, k, s, p;
} geom;

/* Output columns [*lo, *hi) whose tap kj falls inside the image row, so the
 * copy loops below run without per-element bounds checks. */
static void ox_range(const geom *g, size_t kj, size_t *lo, size_t *hi)
{
    size_t a = 0, b = 0;
    if (g->p > kj) a = (g->p - kj + g->s - 1) / g->s;
    if (g->w + g->p > kj) b = (g->w + g->p - kj + g->s - 1) / g->s;
    if (b > g->ow) b = g->ow;
    if (a > b) a = b;
    *lo = a;
    *hi = b;
}

/* col[r][j * P + q] = img[j][ci][oh*s - p + ki][ow*s - p + kj], r = (ci, ki, kj). */
NN_INLINE_COPIES static void im2col(const geom *g, size_t n, const float *img, float *col)
{
    size_t P = g->oh * g->ow, nP = n * P, K = g->c * g->k * g->k;
    ptrdiff_t H = (ptrdiff_t)g->h;
#pragma omp parallel for schedule(static) if (K * nP >= NN_PAR_MIN)
    for (size_t r = 0; r < K; r++) {
        size_t ci = r / (g->k * g->k), ki = (r / g->k) % g->k, kj = r % g->k, lo, hi;
        ox_range(g, kj, &lo, &hi);
        /* ix = ox * s + kj - p, shifted so that it stays unsigned for ox >= lo. */
        size_t ix0 = lo * g->s + kj - g->p;
        float *row = col + r * nP;
        for (size_t j = 0; j < n; j++) {
            const float *src = img + (j * g->c + ci) * g->h * g->w;
            float *dst = row + j * P;
            for (size_t oy = 0; oy < g->oh; oy++) {
                ptrdiff_t iy = (ptrdiff_t)(oy * g->s + ki) - (ptrdiff_t)g->p;
                float *d = dst + oy * g->ow;
                if (iy < 0 || iy >= H || lo == hi) {
                    memset(d, 0, g->ow * sizeof *d);
                    continue;
                }
                const float *sr = src + (size_t)iy * g->w + ix0;
                for (size_t ox = 0; ox < lo; ox++) d[ox] = 0.0f;
                /* Rows are short (tens of floats): an inline loop beats a
                 * memcpy call, and constant strides let the compiler
                 * vectorize the common cases. */
                if (g->s == 1)
                    for (size_t ox = lo; ox < hi; ox++) d[ox] = sr[ox - lo];
                else if (g->s == 2)
                    for (size_t ox = lo; ox < hi; ox++) d[ox] = sr[(ox - lo) * 2];
                else
                    for (size_t ox = lo; ox < hi; ox++) d[ox] = sr[(ox - lo) * g->s];
                for (size_t ox = hi; ox < g->ow; ox++) d[ox] = 0.0f;
            }
        }
    }
}

/* Adjoint of im2col: img = bias (per channel; zero if NULL) + scatter of col.
 * Each channel's planes are initialized by the thread that then scatters into
 * them, right before use, instead of in a separate pass. */
static void col2im(const geom *g, size_t n, const float *col, float *img, const float *bias)
{
    size_t P = g->oh * g->ow, nP = n * P, kk = g->k * g->k;
    ptrdiff_t H = (ptrdiff_t)g->h, W = (ptrdiff_t)g->w;
    /* Channels write disjoint image planes: one thread per channel range. */
#pragma omp parallel for schedule(static) if (g->c * kk * nP >= NN_PAR_MIN)
    for (size_t ci = 0; ci < g->c; ci++) {
        for (size_t j = 0; j < n; j++) {
            float *pl = img + (j * g->c + ci) * g->h * g->w;
            if (!bias) {
                memset(pl, 0, g->h * g->w * sizeof *img);
                continue;
            }
            for (size_t q = 0; q < g->h * g->w; q++) pl[q] = bias[ci];
        }
        for (size_t q = 0; q < kk; q++) {
            size_t ki = q / g->k, kj = q % g->k, lo, hi;
            ox_range(g, kj, &lo, &hi);
            if (lo == hi) continue;
            size_t ix0 = lo * g->s + kj - g->p;
            const float *row = col + (ci * kk + q) * nP;
            for (size_t j = 0; j < n; j++) {
                float *dst = img + (j * g->c + ci) * g->h * g->w;
                const float *src = row + j * P;
                for (size_t oy = 0; oy < g->oh; oy++) {
                    ptrdiff_t iy = (ptrdiff_t)(oy * g->s + ki) - (ptrdiff_t)g->p;
                    if (iy < 0 || iy >= H) continue;
                    float *d = dst + iy * W + ix0;
                    const float *s = src + oy * g->ow;
                    if (g->s == 1)
                        for (size_t ox = lo; ox < hi; ox++) d[ox - lo] += s[ox];
                    else if (g->s == 2)
                        for (size_t ox = lo; ox < hi; ox++) d[(ox - lo) * 2] += s[ox];
                    else
                        for (size_t ox = lo; ox < hi; ox++) d[(ox - lo) * g->s] += s[ox];
                }
            }
        }
    }
}

/* NCHW (n x c x P) -> channel-major (c x n*P). */
static void to_cmajor(size_t n, size_t c, size_t P, const float *x, float *t)
{
#pragma omp parallel for schedule(static) if (n * c * P >= NN_PAR_MIN)
    for (size_t ci = 0; ci < c; ci++)
        for (size_t j = 0; j < n; j++)
            memcpy(t + ci * n * P + j * P, x + (j * c + ci) * P, P * sizeof *x);
}

/* channel-major (c x n*P) -> NCHW, plus bias[c] if not NULL. */
static void from_cmajor(size_t n, size_t c, size_t P, const float *t, const float *bias, float *x)
{
#pragma omp parallel for schedule(static) if (n * c * P >= NN_PAR_MIN)
    for (size_t j = 0; j < n; j++)
        for (size_t ci = 0; ci < c; ci++) {
            const float *s = t + ci * n * P + j * P;
            float *d = x + (j * c + ci) * P;
            float b = bias ? bias[ci] : 0.0f;
            for (size_t q = 0; q < P; q++) d[q] = s[q] + b;
        }
}

/* Adds per-channel sums of dy (n x c x P) into db. */
static void bias_grad(size_t n, size_t c, size_t P, const float *dy, float *db)
{
#pragma omp parallel for schedule(static) if (n * c * P >= NN_PAR_MIN)
    for (size_t ci = 0; ci < c; ci++) {
        double s = 0.0;
        for (size_t j = 0; j < n; j++) {
            const float *d = dy + (j * c + ci) * P;
            float t = 0.0f;
            for (size_t q = 0; q < P; q++) t += d[q];
            s += t;
        }
        db[ci] += (float)s;
    }
}

static geom conv_geom(const nn_layer *L)
{
    geom g = {L->in_c, L->in_h, L->in_w, L->out_h, L->out_w, L->k, L->stride, L->pad};
    return g;
}

/* The transposed convolution is the adjoint of a convolution whose "image" is
 * the output and whose sliding positions are the input pixels. */
static geom convt_geom(const nn_layer *L)
{
    geom g = {L->out_c, L->out_h, L->out_w, L->in_h, L->in_w, L->k, L->stride, L->pad};
    return g;
}

/* Conv2d: W is cout x (cin k k), scratch = col (K nP) + out (cout nP). */
static void conv_forward_chunk(const nn_layer *L, const nn_run *r, const float *x, float *y)
{
    geom g = conv_geom(L);
    size_t n = r->n, P = g.oh * g.ow, nP = n * P, K = g.c * g.k * g.k;
    const float *W = r->params + L->p_off, *b = L->bias ? W + L->out_c * K : NULL;
    float *col = r->scr, *t = col + K * nP;
    im2col(&g, n, x, col);
    nn_sgemm(r, false, false, L->out_c, nP, K, 1.0f, W, K, col, nP, 0.0f, t, nP);
    from_cmajor(n, L->out_c, P, t, b, y);
}

static void conv_backward_chunk(const nn_layer *L, const nn_run *r, const float *x, const float *dy,
                                float *dx)
{
    geom g = conv_geom(L);
    size_t n = r->n, P = g.oh * g.ow, nP = n * P, K = g.c * g.k * g.k, co = L->out_c;
    const float *W = r->params + L->p_off;
    float *dW = r->grads + L->p_off;
    float *col = r->scr, *dyt = col + K * nP;
    im2col(&g, n, x, col);
    to_cmajor(n, co, P, dy, dyt);
    nn_sgemm(r, false, true, co, K, nP, 1.0f, dyt, nP, col, nP, 1.0f, dW, K);
    if (L->bias) bias_grad(n, co, P, dy, dW + co * K);
    if (!dx) return;
    nn_sgemm(r, true, false, K, nP, co, 1.0f, W, K, dyt, nP, 0.0f, col, nP);
    col2im(&g, n, col, dx, NULL);
}

/* ConvTranspose2d: W is cin x (cout k k); scratch = xt (cin nP) + col (KK nP). */
static void convt_forward_chunk(const nn_layer *L, const nn_run *r, const float *x, float *y)
{
    geom g = convt_geom(L);
    size_t n = r->n, P = L->in_h * L->in_w, nP = n * P, KK = L->out_c * g.k * g.k;
    const float *W = r->params + L->p_off, *b = L->bias ? W + L->in_c * KK : NULL;
    float *xt = r->scr, *col = xt + L->in_c * nP;
    const float *xin = x;
    if (P > 1) {
        to_cmajor(n, L->in_c, P, x, xt);
        xin = xt;
    }
    /* With one input pixel, x (n x cin) is read transposed by the GEMM itself. */
    if (P == 1)
        nn_sgemm(r, true, true, KK, n, L->in_c, 1.0f, W, KK, xin, L->in_c, 0.0f, col, nP);
    else
        nn_sgemm(r, true, false, KK, nP, L->in_c, 1.0f, W, KK, xin, nP, 0.0f, col, nP);
    col2im(&g, n, col, y, b);
}

static void convt_backward_chunk(const nn_layer *L, const nn_run *r, const float *x,
                                 const float *dy, float *dx)
{
    geom g = convt_geom(L);
    size_t n = r->n, P = L->in_h * L->in_w, nP = n * P, KK = L->out_c * g.k * g.k;
    const float *W = r->params + L->p_off;
    float *dW = r->grads + L->p_off;
    float *xt = r->scr, *col = xt + L->in_c * nP;
    im2col(&g, n, dy, col);
    if (L->bias) bias_grad(n, L->out_c, L->out_h * L->out_w, dy, dW + L->in_c * KK);
    if (P == 1) {
        nn_sgemm(r, true, true, L->in_c, KK, n, 1.0f, x, L->in_c, col, nP, 1.0f, dW, KK);
        if (dx) nn_sgemm(r, true, true, n, L->in_c, KK, 1.0f, col, nP, W, KK, 0.0f, dx, L->in_c);
        return;
    }
    to_cmajor(n, L->in_c, P, x, xt);
    nn_sgemm(r, false, true, L->in_c, KK, nP, 1.0f, xt, nP, col, nP, 1.0f, dW, KK);
    if (!dx) return;
    nn_sgemm(r, false, false, L->in_c, nP, KK, 1.0f, W, KK, col, nP, 0.0f, xt, nP);
    from_cmajor(n, L->in_c, P, xt, NULL, dx);
}

/* Samples per GEMM: enough columns for an efficient GEMM, few enough that the
 * column buffer of one chunk stays in the last-level cache instead of
 * streaming the whole batch's k*k-inflated copy through memory. */
#define CHUNK_FLOATS ((size_t)1 << 20)

static size_t chunk_of(const nn_layer *L, size_t n)
{
    size_t per = L->scr_fwd > L->scr_bwd ? L->scr_fwd : L->scr_bwd;
    size_t c = per ? CHUNK_FLOATS / per : n;
    return c < 1 ? 1 : c > n ? n : c;
}

void nn_conv_forward(const nn_layer *L, const nn_run *r, const float *x, float *y)
{
    size_t c = chunk_of(L, r->n);
    for (size_t j = 0; j < r->n; j += c) {
        nn_run rc = *r;
        rc.n = r->n - j < c ? r->n - j : c;
        conv_forward_chunk(L, &rc, x + j * L->in_size, y + j * L->out_size);
    }
}

void nn_conv_backward(const nn_layer *L, const nn_run *r, const float *x, const float *dy,
                      float *dx)
{
    size_t c = chunk_of(L, r->n);
    for (size_t j = 0; j < r->n; j += c) {
        nn_run rc = *r;
        rc.n = r->n - j < c ? r->n - j : c;
        conv_backward_chunk(L, &rc, x + j * L->in_size, dy + j * L->out_size,
                            dx ? dx + j * L->in_size : NULL);
    }
}

/* A transposed conv from a 1x1 input without padding (the first layer of the
 * DCGAN generators) is a linear layer: sample j's output, NCHW, is the row
 * x_j W of the weights viewed as cin x (cout k k). One GEMM over the whole
 * batch, no column buffer and no col2im / im2col. */
static bool convt_dense(const nn_layer *L)
{
    return L->in_h == 1 && L->in_w == 1 && L->pad == 0;
}

static void convt_dense_forward(const nn_layer *L, const nn_run *r, const float *x, float *y)
{
    size_t n = r->n, kk = L->k * L->k, KK = L->out_c * kk;
    const float *W = r->params + L->p_off;
    nn_sgemm(r, false, false, n, KK, L->in_c, 1.0f, x, L->in_c, W, KK, 0.0f, y, KK);
    if (!L->bias) return;
    const float *b = W + L->in_c * KK;
#pragma omp parallel for schedule(static) if (n * KK >= NN_PAR_MIN)
    for (size_t j = 0; j < n; j++)
        for (size_t c = 0; c < L->out_c; c++) {
            float *d = y + j * KK + c * kk;
            for (size_t q = 0; q < kk; q++) d[q] += b[c];
        }
}

static void convt_dense_backward(const nn_layer *L, const nn_run *r, const float *x,
                                 const float *dy, float *dx)
{
    size_t n = r->n, kk = L->k * L->k, KK = L->out_c * kk;
    const float *W = r->params + L->p_off;
    float *dW = r->grads + L->p_off;
    if (L->bias) bias_grad(n, L->out_c, kk, dy, dW + L->in_c * KK);
    nn_sgemm(r, true, false, L->in_c, KK, n, 1.0f, x, L->in_c, dy, KK, 1.0f, dW, KK);
    if (dx) nn_sgemm(r, false, true, n, L->in_c, KK, 1.0f, dy, KK, W, KK, 0.0f, dx, L->in_c);
}

void nn_convt_forward(const nn_layer *L, const nn_run *r, const float *x, float *y)
{
    if (convt_dense(L)) {
        convt_dense_forward(L, r, x, y);
        return;
    }
    size_t c = chunk_of(L, r->n);
    for (size_t j = 0; j < r->n; j += c) {
        nn_run rc = *r;
        rc.n = r->n - j < c ? r->n - j : c;
        convt_forward_chunk(L, &rc, x + j * L->in_size, y + j * L->out_size);
    }
}

void nn_convt_backward(const nn_layer *L, const nn_run *r, const float *x, const float *dy,
                       float *dx)
{
    if (convt_dense(L)) {
        convt_dense_backward(L, r, x, dy, dx);
        return;
    }
    size_t c = chunk_of(L, r->n);
    for (size_t j = 0; j < r->n; j += c) {
        nn_run rc = *r;
        rc.n = r->n - j < c ? r->n - j : c;
        convt_backward_chunk(L, &rc, x + j * L->in_size, dy + j * L->out_size,
                             dx ? dx + j * L->in_size : NULL);
    }
}
