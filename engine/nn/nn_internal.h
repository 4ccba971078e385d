/* engine/nn/nn_internal.h - layer descriptors and kernels shared by the nn sources.
 * Not part of the module contract (nn.h). */
#ifndef PG_NN_INTERNAL_H
#define PG_NN_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/core/mat.h"

#include "engine/nn/nn.h"

enum nn_type {
    NN_LINEAR = 1,
    NN_CONV2D,
    NN_CONVT2D,
    NN_BATCHNORM,
    NN_RELU,
    NN_LEAKY_RELU,
    NN_TANH,
    NN_SIGMOID,
    NN_RESHAPE,
    NN_UPSAMPLE,
    NN_EMBED,
};

enum nn_up_mode { NN_UP_NEAREST = 0, NN_UP_BILINEAR = 1 };

typedef struct nn_layer {
    int type;
    size_t in_c, in_h, in_w, out_c, out_h, out_w;
    size_t in_size, out_size; /* per sample */
    /* Hyperparameters (meaning depends on type). */
    size_t k, stride, pad;
    bool bias;
    float slope;       /* leaky_relu */
    int up_mode;       /* upsample */
    size_t factor;     /* upsample */
    bool align;        /* bilinear align_corners */
    size_t classes;    /* embed */
    size_t dim;        /* embed: appended features */
    bool onehot;       /* embed: fixed one-hot instead of a learned table */
    float eps, moment; /* batchnorm */
    /* Offsets into the flat parameter / state / aux arrays. */
    size_t p_off, n_p, s_off, n_s, a_off, n_a;
    /* Scratch floats per sample (forward, backward). */
    size_t scr_fwd, scr_bwd;
} nn_layer;

/* Immutable structure + parameters; shared shape of pg_nn and snapshots. */
typedef struct nn_model {
    size_t n_layers;
    nn_layer *layers;
    char *arch_json;
    size_t in_size, out_size, n_params, n_state, n_aux, classes;
    size_t max_act;          /* largest per-sample activation (in or out of any layer) */
    size_t scr_fwd, scr_bwd; /* per-sample scratch */
    float *params, *state;
} nn_model;

/* Per-run buffers, sized for max_batch. */
typedef struct nn_ws {
    size_t max_batch;
    float *input; /* copy of x */
    float **act;  /* act[i]: output of layer i */
    float *aux;   /* per-layer saved statistics */
    float *scr;   /* scratch shared by layers */
    int32_t *labels;
} nn_ws;

/* Everything a layer kernel needs for one call. */
typedef struct nn_run {
    const float *params;
    float *grads;
    float *state;
    float *aux;
    float *scr;
    const int32_t *labels;
    size_t n;
    bool train;
    double *blas_ms; /* NULL: no profiling */
    /* The layer's weights prepacked for pg_sgemm_packed (linear layers of a
     * snapshot), or NULL. */
    const float *packed;
} nn_run;

struct pg_nn_snapshot {
    nn_model m;
    /* Per layer: a linear layer's W^T packed once at take (served networks
     * run many small batches, and packing the weights cost each call about
     * a tenth of its time); NULL for other layers. */
    float **packed;
};

struct pg_nn_ws {
    nn_ws w;
    const pg_nn_snapshot *snap;
};

struct pg_nn {
    nn_model m;
    nn_ws w;
    float *grads;
    float *gbuf[2]; /* ping-pong gradient buffers, max_act * max_batch each */
    bool train, fwd_train, have_fwd, profile;
    size_t last_n;
    double blas_ms;
};

/* Element-kernel loops run as `omp parallel for schedule(static)` over
 * independent outputs (samples, channels, planes), each output computed in the
 * same order as a serial loop, so results do not depend on the thread count.
 * Below this many floats of work a loop stays on the calling thread: waking the
 * team would cost more than it saves. SGEMM is never called inside a region. */
#define NN_PAR_MIN ((size_t)16384)

/* For copy kernels over short rows (a few to tens of floats): keeps GCC from
 * turning the loops back into memcpy/memset calls, whose call overhead
 * dominates at these lengths. */
#define NN_INLINE_COPIES __attribute__((optimize("no-tree-loop-distribute-patterns")))

/* C = alpha op(A) op(B) + beta C, row-major, with optional timing. */
void nn_sgemm(const nn_run *r, bool ta, bool tb, size_t m, size_t n, size_t k, float alpha,
              const float *a, size_t lda, const float *b, size_t ldb, float beta, float *c,
              size_t ldc);

/* Layer kernels (nn_layers.c, nn_conv.c). x: n x in_size, y: n x out_size. */
void nn_layer_forward(const nn_layer *L, const nn_run *r, const float *x, float *y);
/* dx may be NULL (not needed). y is the forward output. */
void nn_layer_backward(const nn_layer *L, const nn_run *r, const float *x, const float *y,
                       const float *dy, float *dx);

void nn_conv_forward(const nn_layer *L, const nn_run *r, const float *x, float *y);
void nn_conv_backward(const nn_layer *L, const nn_run *r, const float *x, const float *dy,
                      float *dx);
void nn_convt_forward(const nn_layer *L, const nn_run *r, const float *x, float *y);
void nn_convt_backward(const nn_layer *L, const nn_run *r, const float *x, const float *dy,
                       float *dx);

/* Direct stride-1 convolution (nn_conv_direct.c), used when nn_conv_direct_ok. */
bool nn_conv_direct_ok(const nn_layer *L);
size_t nn_conv_direct_scratch(const nn_layer *L, bool backward);
void nn_conv_direct_forward(const nn_layer *L, const nn_run *r, const float *x, float *y);
void nn_conv_direct_backward(const nn_layer *L, const nn_run *r, const float *x, const float *dy,
                             float *dx);

/* Implicit-GEMM stride-1 convolution (nn_conv_implicit.c) for layers with 8 to
 * 64 channels on both sides; needs nn_conv_implicit_aux floats of aux. */
bool nn_conv_implicit_ok(const nn_layer *L);
size_t nn_conv_implicit_scratch(const nn_layer *L, bool backward);
size_t nn_conv_implicit_aux(const nn_layer *L);
void nn_conv_implicit_forward(const nn_layer *L, const nn_run *r, const float *x, float *y);
void nn_conv_implicit_backward(const nn_layer *L, const nn_run *r, const float *x, const float *dy,
                               float *dx);

/* Architecture parsing (nn_arch.c): fills layers, shapes, offsets and sizes of m
 * (params/state left NULL). Takes ownership of nothing. */
int nn_arch_parse(const char *arch_json, nn_model *m, int *init_scheme, pg_error *err);
void nn_model_free(nn_model *m);
int nn_model_copy(const nn_model *src, nn_model *dst, pg_error *err);
/* Initialization (nn_init.c). */
void nn_init_params(const nn_model *m, float *params, float *state, int scheme, uint64_t seed);

int nn_ws_alloc(const nn_model *m, size_t max_batch, bool training, nn_ws *w, pg_error *err);
void nn_ws_free(const nn_model *m, nn_ws *w);
/* packed: per-layer prepacked weights (a snapshot's), or NULL. */
int nn_model_forward(const nn_model *m, const float *const *packed, nn_ws *w, const float *x,
                     const int32_t *labels, size_t n, bool train, float *state, double *blas_ms,
                     const float **out, pg_error *err);

#endif
