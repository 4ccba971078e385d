/* Direct stride-1 convolution for layers with few output channels.
 *
 * im2col inflates the input k*k times; when the GEMM that follows has only a
 * handful of output rows (e.g. the last 5x5 conv of a generator, 32 -> 1
 * channels at 28x28) that buffer dominates the cost and the GEMM degenerates
 * to a memory-bound GEMV. Here each sample's input is zero-padded once and the
 * k*k shifted rows are accumulated in registers, so the working set of one
 * sample stays in L1/L2. Samples (and, for the weight gradient, channel
 * pairs) are split across OpenMP threads; the inner loops are compiled for AVX2/FMA as well
 * (target_clones).
 *
 * Scratch per sample: padded input, plus (backward) padded input gradient.
 */
#include <string.h>

#include "engine/nn/nn_internal.h"

#define FLAT_MAX 2048 /* floats accumulated per block by the flattened kernels */
#define ROW_MAX  256  /* output rows wider than this are processed in pieces */

/* AVX2 + FMA clone next to the baseline one; ISO C mode disables FMA
 * contraction by default, so allow it here (it only changes rounding). */
#define KERNEL                                                                                     \
    __attribute__((target_clones("arch=x86-64-v3", "default"), optimize("fp-contract=fast")))

typedef struct dgeom {
    size_t ci, co, h, w, k, p, hp, wp, oh, ow;
} dgeom;

static dgeom dg(const nn_layer *L)
{
    dgeom g = {L->in_c, L->out_c, L->in_h, L->in_w, L->k, L->pad, 0, 0, L->out_h, L->out_w};
    g.hp = g.h + 2 * g.p;
    g.wp = g.w + 2 * g.p;
    return g;
}

bool nn_conv_direct_ok(const nn_layer *L)
{
    /* One padded row (of the input or of the padded output gradient) must fit
     * the flattened kernels' accumulator. */
    return L->type == NN_CONV2D && L->stride == 1 && L->out_c <= 4 &&
           L->in_w + 2 * L->pad + 2 * L->k <= FLAT_MAX;
}

/* Slack after each padded plane set: the flattened kernels below read up to
 * one row plus k floats past the last plane (into lanes that are discarded). */
static size_t slack(const dgeom *g)
{
    return g->wp + 2 * g->k + 16;
}

/* Padded input of one sample, with slack. */
static size_t xp_size(const dgeom *g)
{
    return g->ci * g->hp * g->wp + slack(g);
}

/* Output gradient padded by k - 1 on every side, so the input gradient is a
 * plain correlation with the kernel taps (see bwd_data_sample). */
/* One output-gradient plane laid out on the padded input's row width wp (zero
 * in columns >= ow), rounded up to whole 8-lane blocks; see bwd_weight_k. */
static size_t dyw_plane(const dgeom *g)
{
    return (g->oh * g->wp + 7) & ~(size_t)7;
}

/* The per-sample dyp area also holds the co dyw planes while the weight
 * gradient is computed (before the input gradient needs dyp). */
static size_t dyp_size(const dgeom *g)
{
    size_t wq = g->ow + 2 * (g->k - 1);
    size_t a = g->co * (g->oh + 2 * (g->k - 1)) * wq + wq + 2 * g->k + 16;
    size_t b = g->co * dyw_plane(g);
    return a > b ? a : b;
}

size_t nn_conv_direct_scratch(const nn_layer *L, bool backward)
{
    dgeom g = dg(L);
    /* Backward keeps one padded output gradient per sample so samples can run
     * in parallel. */
    return xp_size(&g) + (backward ? dyp_size(&g) : 0);
}

/* Writes every float of the padded sample once: border rows, then each
 * interior row as left pad, copy, right pad, then the slack. */
NN_INLINE_COPIES static void pad_one(const dgeom *g, const float *x, float *xp)
{
    size_t wp = g->wp, p = g->p, plane = g->hp * wp;
    for (size_t c = 0; c < g->ci; c++) {
        float *pl = xp + c * plane;
        memset(pl, 0, p * wp * sizeof *pl);
        memset(pl + (p + g->h) * wp, 0, p * wp * sizeof *pl);
        for (size_t y = 0; y < g->h; y++) {
            float *d = pl + (y + p) * wp;
            const float *s = x + (c * g->h + y) * g->w;
            for (size_t i = 0; i < p; i++) d[i] = 0.0f;
            for (size_t i = 0; i < g->w; i++) d[p + i] = s[i];
            for (size_t i = p + g->w; i < wp; i++) d[i] = 0.0f;
        }
    }
    memset(xp + g->ci * plane, 0, (xp_size(g) - g->ci * plane) * sizeof *xp);
}

/* The forward and input-gradient kernels run over whole padded rows at once:
 * output position i = y * width + x of a block of rows reads the source at
 * i + tap offset, so one long contiguous loop replaces many short (ow-wide)
 * ones, and the columns x >= ow computed on the way are dropped. The k taps of
 * a kernel row are applied to a lane before it is stored again, in the same
 * order as a tap-by-tap loop; instantiating the kernels for k = 3 and 5 lets
 * the compiler unroll that inner loop and keep the lane in a register. */
#define DEFINE_FWD(NAME, KEXPR)                                                                    \
    KERNEL static void NAME(const dgeom *g, const float *W, const float *b, const float *xp,       \
                            float *out)                                                            \
    {                                                                                              \
        const size_t k = (KEXPR), kk = k * k, wp = g->wp, plane = g->hp * wp;                      \
        size_t rows = FLAT_MAX / wp;                                                               \
        for (size_t o = 0; o < g->co; o++)                                                         \
            for (size_t y0 = 0; y0 < g->oh; y0 += rows) {                                          \
                size_t nr = g->oh - y0 < rows ? g->oh - y0 : rows, len = nr * wp;                  \
                float acc[FLAT_MAX];                                                               \
                float bv = b ? b[o] : 0.0f;                                                        \
                for (size_t i = 0; i < len; i++) acc[i] = bv;                                      \
                for (size_t c = 0; c < g->ci; c++)                                                 \
                    for (size_t ki = 0; ki < k; ki++) {                                            \
                        const float *row = xp + c * plane + (y0 + ki) * wp;                        \
                        const float *w = W + (o * g->ci + c) * kk + ki * k;                        \
                        for (size_t i = 0; i < len; i++) {                                         \
                            float a = acc[i];                                                      \
                            for (size_t kj = 0; kj < k; kj++) a += w[kj] * row[i + kj];            \
                            acc[i] = a;                                                            \
                        }                                                                          \
                    }                                                                              \
                for (size_t y = 0; y < nr; y++)                                                    \
                    memcpy(out + (o * g->oh + y0 + y) * g->ow, acc + y * wp, g->ow * sizeof *acc); \
            }                                                                                      \
    }

DEFINE_FWD(fwd_k3, 3)
DEFINE_FWD(fwd_k5, 5)
DEFINE_FWD(fwd_kn, g->k)

static void fwd_sample(const dgeom *g, const float *W, const float *b, const float *xp, float *out)
{
    if (g->k == 5)
        fwd_k5(g, W, b, xp, out);
    else if (g->k == 3)
        fwd_k3(g, W, b, xp, out);
    else
        fwd_kn(g, W, b, xp, out);
}

/* dx[c][y][x] = sum_{o,ki,kj} W[o][c][ki][kj] dy[o][y + p - ki][x + p - kj]: the
 * gather form over dy zero-padded by q = k - 1 (dyp, width wq), so each
 * input-gradient row block is accumulated locally and stored once. */
#define DEFINE_BWD_DATA(NAME, KEXPR)                                                               \
    KERNEL static void NAME(const dgeom *g, const float *W, const float *dyp, float *dx)           \
    {                                                                                              \
        const size_t k = (KEXPR), kk = k * k, q = k - 1;                                           \
        const size_t hq = g->oh + 2 * q, wq = g->ow + 2 * q;                                       \
        size_t rows = FLAT_MAX / wq;                                                               \
        for (size_t c = 0; c < g->ci; c++)                                                         \
            for (size_t y0 = 0; y0 < g->h; y0 += rows) {                                           \
                size_t nr = g->h - y0 < rows ? g->h - y0 : rows, len = nr * wq;                    \
                float acc[FLAT_MAX];                                                               \
                for (size_t i = 0; i < len; i++) acc[i] = 0.0f;                                    \
                for (size_t o = 0; o < g->co; o++)                                                 \
                    for (size_t ki = 0; ki < k; ki++) {                                            \
                        /* Tap kj reads column x + p + q - kj = base + (q - kj). */                \
                        const float *row = dyp + (o * hq + y0 + g->p + q - ki) * wq + g->p;        \
                        const float *w = W + (o * g->ci + c) * kk + ki * k;                        \
                        for (size_t i = 0; i < len; i++) {                                         \
                            float a = acc[i];                                                      \
                            for (size_t kj = 0; kj < k; kj++) a += w[kj] * row[i + q - kj];        \
                            acc[i] = a;                                                            \
                        }                                                                          \
                    }                                                                              \
                for (size_t y = 0; y < nr; y++)                                                    \
                    memcpy(dx + (c * g->h + y0 + y) * g->w, acc + y * wq, g->w * sizeof *acc);     \
            }                                                                                      \
    }

DEFINE_BWD_DATA(bwd_data_k3, 3)
DEFINE_BWD_DATA(bwd_data_k5, 5)
DEFINE_BWD_DATA(bwd_data_kn, g->k)

static void bwd_data_sample(const dgeom *g, const float *W, const float *dy, float *dyp, float *dx)
{
    size_t q = g->k - 1, hq = g->oh + 2 * q, wq = g->ow + 2 * q;
    memset(dyp, 0, dyp_size(g) * sizeof *dyp);
    for (size_t o = 0; o < g->co; o++)
        for (size_t y = 0; y < g->oh; y++)
            memcpy(dyp + (o * hq + y + q) * wq + q, dy + (o * g->oh + y) * g->ow,
                   g->ow * sizeof *dy);
    if (g->k == 5)
        bwd_data_k5(g, W, dyp, dx);
    else if (g->k == 3)
        bwd_data_k3(g, W, dyp, dx);
    else
        bwd_data_kn(g, W, dyp, dx);
}

/* dW[o][c][ki][kj] += sum_{j,y,x} dy[j][o][y][x] xp[j][c][y+ki][x+kj]. Samples
 * are the outer loop so one sample's planes stay in L1 across the k*k taps;
 * partial sums are kept per x lane (acc) so the loop vectorizes without
 * reassociating a scalar reduction. */
KERNEL static void bwd_weight_pair(const dgeom *g, size_t n, size_t o, size_t c, const float *dy,
                                   const float *xps, size_t xstride, float *dw)
{
    size_t osz = g->oh * g->ow, kk = g->k * g->k;
    double s[64 * 64];
    for (size_t q = 0; q < kk; q++) s[q] = 0.0;
    for (size_t j = 0; j < n; j++) {
        const float *d = dy + (j * g->co + o) * osz;
        const float *xc = xps + j * xstride + c * g->hp * g->wp;
        for (size_t ki = 0; ki < g->k; ki++)
            for (size_t kj = 0; kj < g->k; kj++) {
                double t = 0.0;
                for (size_t x0 = 0; x0 < g->ow; x0 += ROW_MAX) {
                    size_t len = g->ow - x0 < ROW_MAX ? g->ow - x0 : ROW_MAX;
                    float acc[ROW_MAX];
                    for (size_t x = 0; x < len; x++) acc[x] = 0.0f;
                    for (size_t y = 0; y < g->oh; y++) {
                        const float *dr = d + y * g->ow + x0;
                        const float *xr = xc + (y + ki) * g->wp + kj + x0;
                        for (size_t x = 0; x < len; x++) acc[x] += dr[x] * xr[x];
                    }
                    for (size_t x = 0; x < len; x++) t += acc[x];
                }
                s[ki * g->k + kj] += t;
            }
    }
    for (size_t q = 0; q < kk; q++) dw[q] += (float)s[q];
}

/* Same sums as bwd_weight_pair over the flattened planes: dyw (zero in the
 * columns >= ow) against the padded input shifted by ki * wp + kj, 8 lanes at a
 * time with the k taps of a kernel row sharing each load of dyw. The lanes
 * past the end of a plane multiply zeros with finite padding/slack values. */
typedef float v8f __attribute__((vector_size(32)));

#define DEFINE_BWD_W(NAME, K)                                                                      \
    KERNEL static void NAME(const dgeom *g, size_t n, size_t o, size_t c, const float *dyws,       \
                            size_t dstride, const float *xps, size_t xstride, float *dw)           \
    {                                                                                              \
        const size_t len = dyw_plane(g);                                                           \
        double s[K * K];                                                                           \
        for (size_t q = 0; q < K * K; q++) s[q] = 0.0;                                             \
        for (size_t j = 0; j < n; j++) {                                                           \
            const float *d = dyws + j * dstride + o * len;                                         \
            const float *xc = xps + j * xstride + c * g->hp * g->wp;                               \
            for (size_t ki = 0; ki < K; ki++) {                                                    \
                const float *xr = xc + ki * g->wp;                                                 \
                v8f acc[K];                                                                        \
                for (size_t kj = 0; kj < K; kj++) acc[kj] = (v8f){0};                              \
                for (size_t i = 0; i < len; i += 8) {                                              \
                    v8f dv, xv;                                                                    \
                    memcpy(&dv, d + i, sizeof dv);                                                 \
                    for (size_t kj = 0; kj < K; kj++) {                                            \
                        memcpy(&xv, xr + i + kj, sizeof xv);                                       \
                        acc[kj] += dv * xv;                                                        \
                    }                                                                              \
                }                                                                                  \
                for (size_t kj = 0; kj < K; kj++) {                                                \
                    double t = 0.0;                                                                \
                    for (size_t l = 0; l < 8; l++) t += acc[kj][l];                                \
                    s[ki * K + kj] += t;                                                           \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
        for (size_t q = 0; q < K * K; q++) dw[q] += (float)s[q];                                   \
    }

DEFINE_BWD_W(bwd_weight_k3, 3)
DEFINE_BWD_W(bwd_weight_k5, 5)

NN_INLINE_COPIES static void dyw_fill(const dgeom *g, const float *dy, float *dyw)
{
    size_t len = dyw_plane(g);
    memset(dyw, 0, g->co * len * sizeof *dyw);
    for (size_t o = 0; o < g->co; o++)
        for (size_t y = 0; y < g->oh; y++) {
            float *d = dyw + o * len + y * g->wp;
            const float *s = dy + (o * g->oh + y) * g->ow;
            for (size_t i = 0; i < g->ow; i++) d[i] = s[i];
        }
}

void nn_conv_direct_forward(const nn_layer *L, const nn_run *r, const float *x, float *y)
{
    dgeom g = dg(L);
    const float *W = r->params + L->p_off;
    const float *b = L->bias ? W + g.co * g.ci * g.k * g.k : NULL;
    size_t xs = xp_size(&g);
#pragma omp parallel for schedule(static) if (r->n * L->in_size * g.k * g.k >= NN_PAR_MIN)
    for (size_t j = 0; j < r->n; j++) {
        float *xp = r->scr + j * xs;
        pad_one(&g, x + j * L->in_size, xp);
        fwd_sample(&g, W, b, xp, y + j * L->out_size);
    }
}

void nn_conv_direct_backward(const nn_layer *L, const nn_run *r, const float *x, const float *dy,
                             float *dx)
{
    dgeom g = dg(L);
    size_t n = r->n, kk = g.k * g.k, xs = xp_size(&g);
    const float *W = r->params + L->p_off;
    float *dW = r->grads + L->p_off;
    float *xps = r->scr;
    float *dyp = xps + n * xs; /* past the padded inputs, one per sample */
    size_t ds = dyp_size(&g);
    bool par = n * L->in_size * kk >= NN_PAR_MIN;
#pragma omp parallel for schedule(static) if (par)
    for (size_t j = 0; j < n; j++) {
        pad_one(&g, x + j * L->in_size, xps + j * xs);
        if (g.k == 3 || g.k == 5) dyw_fill(&g, dy + j * L->out_size, dyp + j * ds);
    }
    /* Each (output, input) channel pair owns its k*k weights. */
#pragma omp parallel for schedule(static) if (par)
    for (size_t pc = 0; pc < g.co * g.ci; pc++) {
        size_t o = pc / g.ci, c = pc % g.ci;
        if (g.k == 5)
            bwd_weight_k5(&g, n, o, c, dyp, ds, xps, xs, dW + pc * kk);
        else if (g.k == 3)
            bwd_weight_k3(&g, n, o, c, dyp, ds, xps, xs, dW + pc * kk);
        else
            bwd_weight_pair(&g, n, o, c, dy, xps, xs, dW + pc * kk);
    }
    if (L->bias) {
        float *db = dW + g.co * g.ci * kk;
        size_t osz = g.oh * g.ow;
        for (size_t o = 0; o < g.co; o++) {
            double s = 0.0;
            for (size_t j = 0; j < n; j++)
                for (size_t q = 0; q < osz; q++) s += dy[(j * g.co + o) * osz + q];
            db[o] += (float)s;
        }
    }
    if (!dx) return;
#pragma omp parallel for schedule(static) if (par)
    for (size_t j = 0; j < n; j++)
        bwd_data_sample(&g, W, dy + j * L->out_size, dyp + j * ds, dx + j * L->in_size);
}
