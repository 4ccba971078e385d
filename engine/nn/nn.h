/* engine/nn/nn.h - small feed-forward neural networks on the CPU (generators).
 *
 * Tensors are float32, NCHW, batch first; a flat feature vector of F values is
 * the shape (F, 1, 1). A network is a sequence of layers described by a JSON
 * architecture (see nn_arch.c for the schema) or a preset name.
 *
 * Ownership and lifetime:
 *  - pg_nn_create builds a network for a maximum batch size: parameters,
 *    gradients, activations and all scratch are allocated there, once. Forward,
 *    backward and optimizer steps never allocate; any batch 1..max_batch runs.
 *  - Views returned by pg_nn_forward point into the network and stay valid until
 *    the next forward on that network. The network copies its input and labels,
 *    so the caller's buffers may be reused right after forward returns.
 *  - A pg_nn is not thread-safe. For serving, pg_nn_snapshot_take deep-copies
 *    architecture and parameters into an immutable snapshot; any number of
 *    threads may run it concurrently, each with its own pg_nn_ws.
 *
 * Threads and determinism: the same network, parameters, inputs and batch
 * give the same bits for every thread count (pg_threads_set), and in eval
 * mode a sample's output does not depend on the other samples in its batch
 * (batchnorm in train mode does, by design). SGEMM is pg_sgemm (mat.h), whose
 * every element is one fixed-order chain; the element kernels (im2col,
 * col2im, direct and implicit-GEMM conv, upsample, batchnorm, activations)
 * run as static OpenMP loops over independent samples/channels between the
 * GEMMs, never around them, each output computed in serial order. A new kernel
 * must keep this: split work only over independent outputs, never split a sum
 * at a point that depends on the thread count. Run with
 * OMP_WAIT_POLICY=passive: actively spinning OpenMP workers starve each other
 * on a loaded 2-core box.
 *
 * Errors: fallible calls return a pg_status and fill `err`; on failure outputs
 * are untouched (create/take/load return nothing to free).
 *
 * Training protocol: forward(train) -> caller computes dLoss/dOutput ->
 * backward (ADDS to the parameter gradients; zero them with pg_nn_zero_grad) ->
 * pg_nn_opt_step. Batchnorm uses batch statistics in train mode and running
 * statistics in eval mode (PyTorch conventions: momentum 0.1, unbiased running
 * variance).
 */
#ifndef PG_NN_NN_H
#define PG_NN_NN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/checkpoint/checkpoint.h"
#include "engine/core/error.h"
#include "engine/core/rng.h"

typedef struct pg_nn pg_nn;
typedef struct pg_nn_snapshot pg_nn_snapshot;
typedef struct pg_nn_ws pg_nn_ws;

/* Hard limits that keep a hostile architecture (e.g. from a checkpoint) from
 * requesting absurd allocations. */
#define PG_NN_MAX_LAYERS 256
#define PG_NN_MAX_DIM    65536
#define PG_NN_MAX_PARAMS ((size_t)1 << 28)
#define PG_NN_MAX_BATCH  65536
/* Per-sample values over all activations (and per layer scratch). */
#define PG_NN_MAX_ACT ((size_t)1 << 26)

/* Parameter initialization schemes. DEFAULT is PyTorch's default for linear
 * and conv layers (weights and biases U(+-1/sqrt(fan_in))); KAIMING_* use the
 * ReLU gain sqrt(2); DCGAN is N(0, 0.02) weights and N(1, 0.02) batchnorm
 * scales (Radford et al.). Kaiming/Xavier/DCGAN zero the biases. Embedding
 * tables are N(0, 1) for every scheme. Fan-in/out follow PyTorch, including
 * its convention for transposed convolutions (weights cin x cout x k x k). */
enum pg_nn_init {
    PG_NN_INIT_DEFAULT = 0,
    PG_NN_INIT_KAIMING_UNIFORM,
    PG_NN_INIT_KAIMING_NORMAL,
    PG_NN_INIT_XAVIER_UNIFORM,
    PG_NN_INIT_XAVIER_NORMAL,
    PG_NN_INIT_DCGAN,
};
/* "default", "kaiming_uniform", ...; -1 if unknown. */
int pg_nn_init_parse(const char *name);

/* Builds a network from a JSON architecture. Parameters are initialized with
 * the arch's "init" scheme (default: PG_NN_INIT_DEFAULT) from a seeded
 * generator keyed by `seed`. The network starts in train mode. */
int pg_nn_create(const char *arch_json, size_t max_batch, uint64_t seed, pg_nn **out,
                 pg_error *err);
/* Same from a preset: "mlp", "dcgan28", "dcgan32", "conv_small"; `options_json`
 * (may be NULL) overrides preset options (see nn_preset.c). */
int pg_nn_create_preset(const char *name, const char *options_json, size_t max_batch, uint64_t seed,
                        pg_nn **out, pg_error *err);
/* The JSON architecture of a preset (malloc'ed, caller frees with free()). */
int pg_nn_preset_arch(const char *name, const char *options_json, char **arch_json, pg_error *err);
void pg_nn_free(pg_nn *net);

/* Re-initializes every parameter; batchnorm running stats are reset. */
void pg_nn_init_params(pg_nn *net, int scheme, uint64_t seed);

/* Shape queries. in_size / out_size are per-sample value counts. */
size_t pg_nn_param_count(const pg_nn *net);
size_t pg_nn_in_size(const pg_nn *net);
size_t pg_nn_out_size(const pg_nn *net);
/* Output shape per sample (c, h, w); flat outputs are (F, 1, 1). */
void pg_nn_out_shape(const pg_nn *net, size_t shape[3]);
size_t pg_nn_max_batch(const pg_nn *net);
/* Number of label classes the network is conditioned on (0: unconditional). */
size_t pg_nn_num_classes(const pg_nn *net);
/* The canonical architecture JSON (owned by the network). */
const char *pg_nn_arch(const pg_nn *net);

/* Flat parameter, gradient and state (batchnorm running mean/var) arrays,
 * owned by the network, layer by layer in architecture order. */
float *pg_nn_params(pg_nn *net);
float *pg_nn_grads(pg_nn *net);
float *pg_nn_state(pg_nn *net);
size_t pg_nn_state_count(const pg_nn *net);

void pg_nn_set_train(pg_nn *net, bool train);
bool pg_nn_is_train(const pg_nn *net);
void pg_nn_zero_grad(pg_nn *net);

/* x: batch x in_size values; labels: batch class ids in [0, num_classes)
 * (required iff the network is conditional, else ignored). *out points to
 * batch x out_size values. */
int pg_nn_forward(pg_nn *net, const float *x, const int32_t *labels, size_t batch,
                  const float **out, pg_error *err);
/* Backpropagates grad_out (batch x out_size, batch of the last forward) and
 * adds the parameter gradients into pg_nn_grads. grad_in (may be NULL)
 * receives dLoss/dx, batch x in_size. */
int pg_nn_backward(pg_nn *net, const float *grad_out, float *grad_in, pg_error *err);

/* Optional profiling: when enabled, the network accumulates the wall time
 * spent inside SGEMM calls (milliseconds) until reset. */
void pg_nn_profile(pg_nn *net, bool enable);
double pg_nn_blas_ms(const pg_nn *net);
void pg_nn_blas_ms_reset(pg_nn *net);

/* Immutable deep copy (architecture, parameters, running stats) for serving. */
int pg_nn_snapshot_take(const pg_nn *net, pg_nn_snapshot **out, pg_error *err);
void pg_nn_snapshot_free(pg_nn_snapshot *snap);
size_t pg_nn_snapshot_out_size(const pg_nn_snapshot *snap);
size_t pg_nn_snapshot_in_size(const pg_nn_snapshot *snap);
size_t pg_nn_snapshot_param_count(const pg_nn_snapshot *snap);
/* Bytes pg_nn_ws_create allocates for max_batch (activations, scratch). */
size_t pg_nn_snapshot_ws_bytes(const pg_nn_snapshot *snap, size_t max_batch);
size_t pg_nn_snapshot_num_classes(const pg_nn_snapshot *snap);
/* Per-thread scratch for eval-mode forward passes of one snapshot. */
int pg_nn_ws_create(const pg_nn_snapshot *snap, size_t max_batch, pg_nn_ws **out, pg_error *err);
void pg_nn_ws_free(pg_nn_ws *ws);
/* Eval-mode forward; *out points into ws. */
int pg_nn_snapshot_forward(const pg_nn_snapshot *snap, pg_nn_ws *ws, const float *x,
                           const int32_t *labels, size_t batch, const float **out, pg_error *err);

/* Latent distributions drawn from a seeded (or any) pg_rng. */
enum pg_nn_latent_kind { PG_NN_LATENT_NORMAL = 0, PG_NN_LATENT_UNIFORM = 1 };
typedef struct pg_nn_latent {
    int kind;
    float a, b; /* uniform on [a, b]^k; ignored for normal */
} pg_nn_latent;
/* Fills n values (batch * latent dim). */
void pg_nn_latent_sample(const pg_nn_latent *lat, pg_rng *rng, float *out, size_t n);

/* Optimizers over the flat parameter vector (PyTorch update rules). */
enum pg_nn_opt_kind { PG_NN_SGD = 0, PG_NN_RMSPROP, PG_NN_ADAM, PG_NN_ADAMW };
typedef struct pg_nn_opt_config {
    int kind;
    float lr;
    float momentum;     /* SGD */
    float alpha;        /* RMSprop smoothing (0.99) */
    float beta1, beta2; /* Adam(W) (0.9, 0.999) */
    float eps;          /* RMSprop / Adam(W) (1e-8) */
    float weight_decay; /* L2 added to the gradient; decoupled for AdamW */
} pg_nn_opt_config;
typedef struct pg_nn_opt pg_nn_opt;
/* Defaults for a kind (lr 1e-3, PyTorch's other defaults; AdamW wd 0.01). */
pg_nn_opt_config pg_nn_opt_defaults(int kind);
/* "sgd", "rmsprop", "adam", "adamw"; -1 if unknown. */
int pg_nn_opt_parse(const char *name);
const char *pg_nn_opt_name(int kind);
int pg_nn_opt_create(const pg_nn_opt_config *cfg, size_t n_params, pg_nn_opt **out, pg_error *err);
void pg_nn_opt_free(pg_nn_opt *opt);
/* One update of params from grads (both n_params long). */
void pg_nn_opt_step(pg_nn_opt *opt, float *params, const float *grads);
/* Convenience: step on a network's parameters and gradients. */
int pg_nn_opt_step_net(pg_nn_opt *opt, pg_nn *net, pg_error *err);
const pg_nn_opt_config *pg_nn_opt_get_config(const pg_nn_opt *opt);
void pg_nn_opt_set_lr(pg_nn_opt *opt, float lr);
/* State for checkpoints: step count and the moment buffers (NULL if the
 * method has none; each n_params long). */
uint64_t pg_nn_opt_steps(const pg_nn_opt *opt);
float *pg_nn_opt_buf(pg_nn_opt *opt, int which); /* 0: momentum / m, 1: v */
void pg_nn_opt_set_steps(pg_nn_opt *opt, uint64_t t);
size_t pg_nn_opt_size(const pg_nn_opt *opt);

/* Checkpoints (engine/checkpoint container). The header is
 *   {"format":"privgen-nn","arch":{...},"train":bool,"optimizer":{...}|null,
 *    "extra":<extra_json>|null}
 * and the tensors "nn.params", "nn.state" (if any), "opt.m"/"opt.v" (if the
 * optimizer has them), then the caller's extra tensors, whose names must not
 * start with "nn." or "opt.". A trainer stores its step, RNG and privacy state
 * in extra_json (a JSON object, may be NULL) and extra tensors.
 * Decoding rebuilds the network for max_batch and checks every tensor's size
 * against the architecture and every value for finiteness. opt (may be NULL:
 * the optimizer is then not restored) receives NULL when none was saved.
 * extra_json (may be NULL) receives a malloc'ed string or NULL; rest (may be
 * NULL) receives the whole decoded container, for the extra tensors
 * (release with pg_ckpt_free). */
int pg_nn_checkpoint_encode(const pg_nn *net, const pg_nn_opt *opt, const char *extra_json,
                            const pg_ckpt_tensor *extra, size_t n_extra, unsigned char **buf,
                            size_t *len, pg_error *err);
int pg_nn_checkpoint_decode(const unsigned char *buf, size_t len, size_t max_batch, pg_nn **net,
                            pg_nn_opt **opt, char **extra_json, pg_ckpt *rest, pg_error *err);

#endif
