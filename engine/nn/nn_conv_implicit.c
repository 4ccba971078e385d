/* Implicit-GEMM stride-1 convolution for layers with a few tens of channels.
 *
 * For conv_small's 16 -> 32 channel 5x5 conv the im2col buffer is 25 times the
 * input and building it (and scattering it back in col2im) cost as much as
 * the GEMMs. Here the GEMM micro-kernel reads the padded image directly:
 * output (o, pos) = sum over taps t of A[t][o] * src[base(pos) + off(t)], with
 * A the weights repacked tap-major in blocks of 16 output channels (zero-padded
 * past the last channel). A block of 16 channels x 6 positions is held in
 * twelve 8-lane accumulators, so each tap costs two weight loads, six
 * broadcasts and twelve FMAs and no intermediate buffer exists.
 *
 * The same kernel computes the input gradient (a correlation of the output
 * gradient, padded by k - 1, with the flipped, transposed weights), and a
 * transposed variant the weight gradient: G[t][o] = sum over samples and
 * positions of dy[pos][o] * src[base(pos) + off(t)].
 *
 * Every output value is summed in one fixed order by one thread, so results
 * do not depend on the thread count. Working set per sample: padded input,
 * padded output gradient and the output gradient transposed to [pos][o].
 */
#include <omp.h>
#include <string.h>

#include "engine/nn/nn_internal.h"

#define MB 16 /* output channels per micro-kernel: two 8-lane vectors */
#define NB 6  /* output positions (forward) or taps (weight gradient) per micro-kernel */

#define KERNEL                                                                                     \
    __attribute__((target_clones("arch=x86-64-v3", "default"), optimize("fp-contract=fast")))

typedef float v8f __attribute__((vector_size(32)));

/* One implicit-GEMM pass over a sample. Taps run over (c, ki, kj) with source
 * offset c*cs + ki*ks + kj*js; positions over (y, x) < (oh, ow) with source
 * offset s0 + y*sy + x and destination offset o*dplane + y*ow + x. */
typedef struct icv {
    size_t m, lda;        /* output channels; row stride of A within a block (MB) */
    size_t c, k;          /* taps */
    ptrdiff_t cs, ks, js; /* tap offsets */
    size_t oh, ow;
    ptrdiff_t s0, sy; /* position offsets */
    size_t dplane;
} icv;

static size_t round_mb(size_t m)
{
    return (m + MB - 1) / MB * MB;
}

bool nn_conv_implicit_ok(const nn_layer *L)
{
    /* Below 8 channels on either side a 16-channel block is mostly padding
     * (the direct kernel covers out_c <= 4). Measured against im2col + SGEMM
     * at 1 thread: 1.4-1.9x faster for 5x5 kernels at 16..64 channels, even
     * for 3x3 at 32..64; at 128..256 channels the packed GEMM wins. */
    return L->type == NN_CONV2D && L->stride == 1 && L->out_c >= 8 && L->out_c <= 64 &&
           L->in_c >= 8 && L->in_c <= 64;
}

/* Geometry shared by the layer's passes. */
typedef struct igeom {
    size_t ci, co, h, w, k, p, hp, wp, oh, ow, q, hq, wq, ldo, ldi;
} igeom;

static igeom ig(const nn_layer *L)
{
    igeom g = {L->in_c,
               L->out_c,
               L->in_h,
               L->in_w,
               L->k,
               L->pad,
               0,
               0,
               L->out_h,
               L->out_w,
               L->k - 1,
               0,
               0,
               round_mb(L->out_c),
               round_mb(L->in_c)};
    g.hp = g.h + 2 * g.p, g.wp = g.w + 2 * g.p;
    g.hq = g.oh + 2 * g.q, g.wq = g.ow + 2 * g.q;
    return g;
}

/* Per-sample scratch: padded input (forward); plus padded output gradient and
 * its [pos][o] transpose (backward). */
static size_t xp_size(const igeom *g)
{
    return g->ci * g->hp * g->wp;
}
static size_t dyp_size(const igeom *g)
{
    return g->co * g->hq * g->wq;
}
static size_t dyt_size(const igeom *g)
{
    return g->oh * g->ow * g->ldo;
}
/* Floats rounded up to whole 64-byte lines so every area stays aligned. */
static size_t lines(size_t n)
{
    return (n + 15) & ~(size_t)15;
}

size_t nn_conv_implicit_scratch(const nn_layer *L, bool backward)
{
    igeom g = ig(L);
    return lines(xp_size(&g)) + (backward ? lines(dyp_size(&g)) + lines(dyt_size(&g)) : 0);
}

/* Per-layer area (aux): forward weights taps x ldo, input-gradient weights
 * taps x ldi, and the weight-gradient accumulator (taps x ldo doubles). */
size_t nn_conv_implicit_aux(const nn_layer *L)
{
    igeom g = ig(L);
    size_t t = g.ci * g.k * g.k;
    /* + one line: the layer's offset into aux need not be aligned. */
    return lines(t * g.ldo) + lines(g.co * g.k * g.k * g.ldi) + 2 * lines(t * g.ldo) + 16;
}

/* The layer's aux area, rounded up to a 64-byte boundary. */
static float *aux_area(const nn_layer *L, const nn_run *r)
{
    uintptr_t p = (uintptr_t)(r->aux + L->a_off);
    return (float *)((p + 63) & ~(uintptr_t)63);
}

/* Zero-pads c planes of h x w by p on every side, writing each float once. */
NN_INLINE_COPIES static void pad_plane_set(size_t c, size_t h, size_t w, size_t p, const float *x,
                                           float *xp)
{
    size_t wp = w + 2 * p, plane = (h + 2 * p) * wp;
    for (size_t ci = 0; ci < c; ci++) {
        float *pl = xp + ci * plane;
        memset(pl, 0, p * wp * sizeof *pl);
        memset(pl + (p + h) * wp, 0, p * wp * sizeof *pl);
        for (size_t y = 0; y < h; y++) {
            float *d = pl + (y + p) * wp;
            const float *s = x + (ci * h + y) * w;
            for (size_t i = 0; i < p; i++) d[i] = 0.0f;
            for (size_t i = 0; i < w; i++) d[p + i] = s[i];
            for (size_t i = p + w; i < wp; i++) d[i] = 0.0f;
        }
    }
}

/* out[.][i] = sum_t A[t][o0 .. o0+15] * s[i][off(t)]. The sums live in local
 * arrays (whose address never escapes) so they stay in registers. */
KERNEL static void micro_fwd(const icv *g, const float *a, const float *const s[NB], v8f out[2][NB])
{
    v8f c0[NB], c1[NB];
    const float *s0 = s[0], *s1 = s[1], *s2 = s[2], *s3 = s[3], *s4 = s[4], *s5 = s[5];
    for (size_t i = 0; i < NB; i++) c0[i] = c1[i] = (v8f){0};
    for (size_t c = 0; c < g->c; c++)
        for (size_t ki = 0; ki < g->k; ki++) {
            const float *ar = a + (c * g->k + ki) * g->k * g->lda;
            ptrdiff_t base = (ptrdiff_t)c * g->cs + (ptrdiff_t)ki * g->ks;
            for (size_t kj = 0; kj < g->k; kj++, ar += g->lda, base += g->js) {
                v8f w0, w1;
                memcpy(&w0, ar, sizeof w0);
                memcpy(&w1, ar + 8, sizeof w1);
                float v[NB] = {s0[base], s1[base], s2[base], s3[base], s4[base], s5[base]};
                for (size_t i = 0; i < NB; i++) {
                    c0[i] += w0 * v[i];
                    c1[i] += w1 * v[i];
                }
            }
        }
    for (size_t i = 0; i < NB; i++) out[0][i] = c0[i], out[1][i] = c1[i];
}

/* dst[o][pos] = bias[o] + sum_t A[t][o] src[s0 + pos offset + off(t)] for one
 * sample. Position blocks past the end repeat the last position (computed,
 * not stored). */
static void icv_run(const icv *g, const float *a, const float *bias, const float *src, float *dst)
{
    size_t npos = g->oh * g->ow;
    for (size_t p0 = 0; p0 < npos; p0 += NB) {
        size_t nb = npos - p0 < NB ? npos - p0 : NB;
        const float *s[NB];
        for (size_t i = 0; i < NB; i++) {
            size_t pos = p0 + (i < nb ? i : nb - 1), y = pos / g->ow, x = pos % g->ow;
            s[i] = src + g->s0 + (ptrdiff_t)y * g->sy + (ptrdiff_t)x;
        }
        for (size_t o0 = 0; o0 < g->m; o0 += MB) {
            v8f acc[2][NB];
            micro_fwd(g, a + o0 / MB * (g->c * g->k * g->k * MB), s, acc);
            size_t mo = g->m - o0 < MB ? g->m - o0 : MB;
            for (size_t o = 0; o < mo; o++) {
                float b = bias ? bias[o0 + o] : 0.0f;
                float *d = dst + (o0 + o) * g->dplane + p0;
                for (size_t i = 0; i < nb; i++) d[i] = acc[o / 8][i][o % 8] + b;
            }
        }
    }
}

/* out[.][i] = sum over positions of dyt[pos][o0 .. o0+15] * src[pos offset + toff[i]]. */
KERNEL static void micro_wgrad(const icv *g, const float *dyt, const float *src,
                               const ptrdiff_t toff[NB], v8f out[2][NB])
{
    v8f c0[NB], c1[NB];
    const ptrdiff_t t0 = toff[0], t1 = toff[1], t2 = toff[2], t3 = toff[3], t4 = toff[4],
                    t5 = toff[5];
    for (size_t i = 0; i < NB; i++) c0[i] = c1[i] = (v8f){0};
    for (size_t y = 0; y < g->oh; y++) {
        const float *sr = src + g->s0 + (ptrdiff_t)y * g->sy;
        const float *dr = dyt + y * g->ow * g->lda;
        for (size_t x = 0; x < g->ow; x++, dr += g->lda, sr++) {
            v8f d0, d1;
            memcpy(&d0, dr, sizeof d0);
            memcpy(&d1, dr + 8, sizeof d1);
            float v[NB] = {sr[t0], sr[t1], sr[t2], sr[t3], sr[t4], sr[t5]};
            for (size_t i = 0; i < NB; i++) {
                c0[i] += d0 * v[i];
                c1[i] += d1 * v[i];
            }
        }
    }
    for (size_t i = 0; i < NB; i++) out[0][i] = c0[i], out[1][i] = c1[i];
}

static ptrdiff_t tap_off(const icv *g, size_t t)
{
    size_t c = t / (g->k * g->k), ki = t / g->k % g->k, kj = t % g->k;
    return (ptrdiff_t)c * g->cs + (ptrdiff_t)ki * g->ks + (ptrdiff_t)kj * g->js;
}

/* Forward geometry: taps (c, ki, kj) over the input padded by p. */
static icv fwd_icv(const igeom *g)
{
    icv v = {g->co, MB,    g->ci, g->k, (ptrdiff_t)(g->hp * g->wp), (ptrdiff_t)g->wp,
             1,     g->oh, g->ow, 0,    (ptrdiff_t)g->wp,           g->oh * g->ow};
    return v;
}

/* Input-gradient geometry: dx[c][y][x] = sum_{o,ki,kj} W[o][c][ki][kj]
 * dy[o][y + p - ki][x + p - kj], read from dy padded by q = k - 1 (so the
 * row index y + p - ki + q is never negative), taps (o, ki, kj). */
static icv bwd_icv(const igeom *g)
{
    ptrdiff_t wq = (ptrdiff_t)g->wq, pq = (ptrdiff_t)(g->p + g->q);
    icv v = {g->ci, MB,           g->co, g->k,       (ptrdiff_t)(g->hq * g->wq), -wq, -1, g->h,
             g->w,  pq * wq + pq, wq,    g->h * g->w};
    return v;
}

/* A[t][o] = W[o][t] (zero for o >= co), stored as 16-channel blocks
 * [o / 16][t][o % 16] so the micro-kernel streams one contiguous block. */
static void pack_fwd(const igeom *g, const float *W, float *a)
{
    size_t t = g->ci * g->k * g->k;
    memset(a, 0, t * g->ldo * sizeof *a);
    for (size_t o = 0; o < g->co; o++)
        for (size_t i = 0; i < t; i++) a[(o / MB * t + i) * MB + o % MB] = W[o * t + i];
}

/* B[(o, ki, kj)][c] = W[o][c][ki][kj] (zero for c >= ci), blocked like A. */
static void pack_bwd(const igeom *g, const float *W, float *b)
{
    size_t kk = g->k * g->k;
    memset(b, 0, g->co * kk * g->ldi * sizeof *b);
    for (size_t o = 0; o < g->co; o++)
        for (size_t c = 0; c < g->ci; c++)
            for (size_t q = 0; q < kk; q++)
                b[(c / MB * g->co * kk + o * kk + q) * MB + c % MB] = W[(o * g->ci + c) * kk + q];
}

void nn_conv_implicit_forward(const nn_layer *L, const nn_run *r, const float *x, float *y)
{
    igeom g = ig(L);
    icv v = fwd_icv(&g);
    size_t t = g.ci * g.k * g.k, xs = lines(nn_conv_implicit_scratch(L, false));
    const float *W = r->params + L->p_off, *b = L->bias ? W + g.co * t : NULL;
    float *a = aux_area(L, r);
    pack_fwd(&g, W, a);
#pragma omp parallel for schedule(static) if (r->n * L->out_size * t >= NN_PAR_MIN)
    for (size_t j = 0; j < r->n; j++) {
        float *xp = r->scr + j * xs;
        pad_plane_set(g.ci, g.h, g.w, g.p, x + j * L->in_size, xp);
        icv_run(&v, a, b, xp, y + j * L->out_size);
    }
}

NN_INLINE_COPIES static void transpose_dy(const igeom *g, const float *dy, float *dyt)
{
    size_t npos = g->oh * g->ow;
    for (size_t pos = 0; pos < npos; pos++) {
        float *d = dyt + pos * g->ldo;
        for (size_t o = 0; o < g->co; o++) d[o] = dy[o * npos + pos];
        for (size_t o = g->co; o < g->ldo; o++) d[o] = 0.0f;
    }
}

void nn_conv_implicit_backward(const nn_layer *L, const nn_run *r, const float *x, const float *dy,
                               float *dx)
{
    igeom g = ig(L);
    icv vf = fwd_icv(&g), vb = bwd_icv(&g);
    vf.lda = g.ldo; /* here: row stride of the transposed output gradient */
    size_t n = r->n, kk = g.k * g.k, t = g.ci * kk, npos = g.oh * g.ow;
    size_t ss = nn_conv_implicit_scratch(L, true), xs = lines(xp_size(&g));
    size_t ds = lines(dyp_size(&g));
    const float *W = r->params + L->p_off;
    float *dW = r->grads + L->p_off;
    float *bw = aux_area(L, r) + lines(t * g.ldo);
    double *acc = (double *)(bw + lines(g.co * kk * g.ldi));
    bool par = n * L->out_size * t >= NN_PAR_MIN;
#pragma omp parallel for schedule(static) if (par)
    for (size_t j = 0; j < n; j++) {
        float *s = r->scr + j * ss;
        pad_plane_set(g.ci, g.h, g.w, g.p, x + j * L->in_size, s);
        transpose_dy(&g, dy + j * L->out_size, s + xs + ds);
        if (dx) pad_plane_set(g.co, g.oh, g.ow, g.q, dy + j * L->out_size, s + xs);
    }
    /* Weight gradient: each thread owns a fixed range of (tap block, channel
     * block) pairs and walks the samples in order, so one sample's padded
     * input and transposed gradient stay in cache across its blocks; every
     * entry sums the per-sample partials (float over positions) in double in
     * sample order, whichever thread owns it. */
    size_t tb = (t + NB - 1) / NB, ob = g.ldo / MB, nblk = tb * ob;
    memset(acc, 0, t * g.ldo * sizeof *acc);
#pragma omp parallel if (par)
    {
        size_t nt_ = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
        size_t lo = nblk * id / nt_, hi = nblk * (id + 1) / nt_;
        for (size_t j = 0; j < n; j++) {
            const float *s = r->scr + j * ss;
            for (size_t blk = lo; blk < hi; blk++) {
                size_t t0 = blk / ob * NB, o0 = blk % ob * MB, nt = t - t0 < NB ? t - t0 : NB;
                ptrdiff_t toff[NB];
                for (size_t i = 0; i < NB; i++) toff[i] = tap_off(&vf, t0 + (i < nt ? i : nt - 1));
                v8f part[2][NB];
                micro_wgrad(&vf, s + xs + ds + o0, s, toff, part);
                for (size_t i = 0; i < nt; i++)
                    for (size_t o = 0; o < MB; o++)
                        acc[(t0 + i) * g.ldo + o0 + o] += (double)part[o / 8][i][o % 8];
            }
        }
    }
    for (size_t o = 0; o < g.co; o++)
        for (size_t i = 0; i < t; i++) dW[o * t + i] += (float)acc[i * g.ldo + o];
    if (L->bias) {
        float *db = dW + g.co * t;
        for (size_t o = 0; o < g.co; o++) {
            double s = 0.0;
            for (size_t j = 0; j < n; j++) {
                const float *d = dy + (j * g.co + o) * npos;
                float u = 0.0f;
                for (size_t q = 0; q < npos; q++) u += d[q];
                s += u;
            }
            db[o] += (float)s;
        }
    }
    if (!dx) return;
    pack_bwd(&g, W, bw);
#pragma omp parallel for schedule(static) if (par)
    for (size_t j = 0; j < n; j++)
        icv_run(&vb, bw, NULL, r->scr + j * ss + xs, dx + j * L->in_size);
}
