/* engine/methods/generator.h - the neural generator shared by the GAN-style
 * methods (entropic_gan, dp_sinkhorn, swd_gen): its spec parameters, how a
 * resolved spec becomes an engine/nn network, and snapshots that sample it.
 *
 * Spec (all under "model"): arch (mlp | conv_small | dcgan28 | dcgan32),
 * latent_dim, latent (uniform | normal), hidden, activation, out_activation,
 * batchnorm, conditional. The generator's output must have the dataset's row
 * shape; a conditional generator needs a labelled dataset. Everything here is
 * checked at validation time by building the network once at batch 1.
 *
 * Typed tables (desc->table set): the mlp's raw outputs go through per-block
 * heads (heads.h: tanh onto [lo, hi] for numbers, Gumbel-softmax over each
 * categorical block, sigmoid or 3-way softmax for booleans and indicators);
 * model.out_activation must then be auto or none. The table map
 * (pg_table_to_json) is part of pg_generator_to_json, hence of every
 * checkpoint: a snapshot rebuilds its heads from it without the dataset, and
 * pg_generator_check_saved refuses a checkpoint whose map differs from the
 * job's table (or that has a map when the job has none, or none when it has).
 *
 * Ownership: pg_generator owns its options JSON text, its heads and its table
 * map; pg_generator_free releases them. Snapshots own a deep copy of the
 * network (engine/nn) and of the heads.
 */
#ifndef PG_METHODS_GENERATOR_H
#define PG_METHODS_GENERATOR_H

#include "engine/methods/spec.h"
#include "engine/checkpoint/checkpoint.h"
#include "engine/data/qmap.h"
#include "engine/methods/heads.h"
#include "engine/nn/nn.h"

/* Rows of a pg_param table (splice into a method's table). */
#define PG_GENERATOR_PARAM_ROWS                                                                     \
    {"model.arch",                                                                                  \
     PG_PARAM_STR,                                                                                  \
     "\"mlp\"",                                                                                     \
     0,                                                                                             \
     0,                                                                                             \
     pg_generator_archs,                                                                            \
     0,                                                                                             \
     0,                                                                                             \
     "Generator architecture: mlp for vectors; conv_small, dcgan28 (1x28x28) or dcgan32 "           \
     "(Cx32x32) for images."},                                                                      \
        {"model.latent_dim",                                                                        \
         PG_PARAM_INT,                                                                              \
         NULL,                                                                                      \
         1,                                                                                         \
         4096,                                                                                      \
         NULL,                                                                                      \
         0,                                                                                         \
         PG_PARAM_OPTIONAL,                                                                         \
         "Latent dimension (default: d for mlp on rows of at most 16 values, else 32; the "         \
         "preset's own for other archs)."},                                                         \
        {"model.latent",                                                                            \
         PG_PARAM_STR,                                                                              \
         "\"uniform\"",                                                                             \
         0,                                                                                         \
         0,                                                                                         \
         pg_generator_latents,                                                                      \
         0,                                                                                         \
         0,                                                                                         \
         "Latent distribution: uniform on [-1, 1]^k or standard normal."},                          \
        {"model.hidden",                                                                            \
         PG_PARAM_INT_LIST,                                                                         \
         "[256, 256]",                                                                              \
         1,                                                                                         \
         8192,                                                                                      \
         NULL,                                                                                      \
         16,                                                                                        \
         0,                                                                                         \
         "Hidden layer widths (mlp; [64, 64] on rows of at most 16 values, [128, 128] for "         \
         "entropic_gan on untyped rows)."},                                                         \
        {"model.activation",        PG_PARAM_STR, "\"relu\"", 0, 0, pg_generator_activations, 0, 0, \
         "Hidden activation (mlp)."},                                                               \
        {"model.out_activation",                                                                    \
         PG_PARAM_STR,                                                                              \
         "\"auto\"",                                                                                \
         0,                                                                                         \
         0,                                                                                         \
         pg_generator_out_activations,                                                              \
         0,                                                                                         \
         0,                                                                                         \
         "Output activation (mlp), scaled onto the declared range; auto means none. Left out, "     \
         "it is tanh on central rows of at most 16 values with a finite range, else auto."},        \
        {"model.batchnorm",                                                                         \
         PG_PARAM_BOOL,                                                                             \
         "false",                                                                                   \
         0,                                                                                         \
         0,                                                                                         \
         NULL,                                                                                      \
         0,                                                                                         \
         0,                                                                                         \
         "Batch normalization after hidden layers (mlp)."},                                         \
        {"model.upsample",                                                                          \
         PG_PARAM_INT,                                                                              \
         "1",                                                                                       \
         1,                                                                                         \
         16,                                                                                        \
         NULL,                                                                                      \
         0,                                                                                         \
         0,                                                                                         \
         "mlp on images: the last layer emits a 1/f-resolution image that a fixed bilinear "        \
         "upsampling maps to full size (1: off). Fewer output values, so the DP noise on "          \
         "image gradients reaches the generator through fewer directions."},                        \
        {"model.logit_gain",                                                                        \
         PG_PARAM_NUM,                                                                              \
         "1",                                                                                       \
         0,                                                                                         \
         100,                                                                                       \
         NULL,                                                                                      \
         0,                                                                                         \
         PG_PARAM_EXCLUSIVE_MIN,                                                                    \
         "Typed tables: factor g on the logits of every categorical, boolean and missing-"          \
         "indicator head (engine/methods/heads.h); a draw follows softmax(g z). Left out: 1 for "   \
         "every method (engine/methods/defaults.c says why). Other data: must stay 1."},            \
        {"model.numeric_head",                                                                      \
         PG_PARAM_STR,                                                                              \
         "\"tanh\"",                                                                                \
         0,                                                                                         \
         0,                                                                                         \
         pg_generator_numeric_heads,                                                                \
         0,                                                                                         \
         0,                                                                                         \
         "Typed tables: numeric head, tanh onto the range or clip (linear, clamped to the range; "  \
         "engine/methods/heads.h). Left out: clip for entropic_gan on local tables, else tanh."},   \
    {                                                                                               \
        "model.conditional", PG_PARAM_BOOL, "false", 0, 0, NULL, 0, 0,                              \
            "Condition the generator on the dataset's labels (needs a labelled dataset)."           \
    }

extern const char *const pg_generator_archs[];
extern const char *const pg_generator_latents[];
extern const char *const pg_generator_activations[];
extern const char *const pg_generator_out_activations[];
extern const char *const pg_generator_numeric_heads[];

typedef struct pg_generator {
    char arch[16];
    char *options; /* preset options JSON (malloc'ed) */
    pg_nn_latent latent;
    size_t latent_dim;
    int num_classes; /* 0 unless conditional */
    size_t d;        /* output values per sample */
    /* Data-space value = out_scale * network output + out_shift: bounded
     * output activations (tanh, sigmoid) are mapped onto the declared range. */
    float out_scale, out_shift;
    pg_heads *heads;   /* typed tables only, else NULL */
    json_t *table_map; /* pg_table_to_json of the table, else NULL */
    /* DP quantile map of the numeric units (engine/data/qmap.h), set by a
     * method that released one, else NULL: the network learns mapped units
     * and snapshots decode their samples through it. Owned; saved as
     * "qmap" by pg_generator_to_json (absent in older checkpoints). */
    pg_qmap *qmap;
} pg_generator;

/* Reads the model.* fields of a resolved spec, checks them against the data
 * (adding field errors) and fills g. PG_EINVAL when errors were added. */
int pg_generator_config(const json_t *resolved, const pg_data_desc *desc, pg_generator *g,
                        pg_spec_errors *errors, pg_error *err);
void pg_generator_free(pg_generator *g);

/* Builds the network for max_batch with parameters initialized from seed. */
int pg_generator_build(const pg_generator *g, size_t max_batch, uint64_t seed, pg_nn **net,
                       pg_error *err);

/* In place: network outputs -> data space, `rows` rows of g->d values at row
 * stride `stride`. rng draws the heads' Gumbel noise (typed tables; NULL:
 * none); it is not touched otherwise. */
void pg_generator_to_data(const pg_generator *g, pg_rng *rng, float *x, size_t stride, size_t rows);
/* In place: dLoss/d(data-space X) -> dLoss/d(network output) for `rows`
 * contiguous rows of g->d; y are the data-space outputs to_data produced
 * (rows at stride ystride), needed by the heads' Jacobians. */
void pg_generator_grad_to_net(const pg_generator *g, const float *y, size_t ystride, float *grad,
                              size_t rows);

/* PG_EFORMAT unless the generator description `saved` (from a checkpoint)
 * has the same table map as g (both none counts as the same). */
int pg_generator_check_saved(const pg_generator *g, const json_t *saved, pg_error *err);

/* The sampling fields of g (not the build options) as JSON, for checkpoints,
 * so a snapshot can be rebuilt from a checkpoint without the job spec; and
 * back (PG_EFORMAT on any malformed or out-of-range field). */
json_t *pg_generator_to_json(const pg_generator *g);
int pg_generator_from_json(const json_t *j, pg_generator *g, pg_error *err);

/* Serving snapshot straight from a checkpoint written by a generator method
 * whose extra JSON carries "method", "step" and "generator" (to_json above):
 * no spec, no data. PG_EFORMAT when the checkpoint belongs to another method
 * or its generator does not match the network. */
int pg_generator_load_snapshot(const unsigned char *bytes, size_t len, const char *method,
                               pg_snapshot **out, pg_error *err);

/* Immutable snapshot of `net` that samples latents from g's distribution.
 * Sampling reuses workspaces the snapshot pools (each sized for 256 rows;
 * up to 8 and 64 MiB of them idle, at least one; freed with the snapshot) and runs calls of under
 * 2^26 rows x parameters on the calling thread alone; neither changes the bits, which depend only
 * on the snapshot, n, seed and label. */
int pg_generator_snapshot(const pg_generator *g, const pg_nn *net, long step, pg_snapshot **out,
                          pg_error *err);

/* Same from an already taken network snapshot (ownership moves in). */
int pg_generator_snapshot_wrap(const pg_generator *g, pg_nn_snapshot *nn, long step,
                               pg_snapshot **out, pg_error *err);

/* Snapshot whose samples are shifted per class so that their mean is
 * `means` (max(num_classes, 1) x d, data space; see calib.h): the shifts are
 * measured once here on per_class rows per class drawn with a fixed seed, and
 * every sample is clamped to [lo, hi] after the shift. Ownership of nn moves
 * in, even on failure. */
#define PG_GENERATOR_CALIB_TENSOR "calibration.means"
int pg_generator_snapshot_calibrated(const pg_generator *g, pg_nn_snapshot *nn, long step,
                                     const float *means, size_t per_class, float lo, float hi,
                                     pg_snapshot **out, pg_error *err);

/* The same on a typed table (calib_table.h): `targets` (max(num_classes, 1)
 * x d, a release's post-processed means and frequencies) give per-class
 * category moves and numeric shifts fitted on per_class rows per class drawn
 * with a fixed seed; every sample gets them after the heads, before the
 * quantile map decodes. class_cdf (NULL: none): the classes' released
 * CDFs of the quantile rule (calib_table.h, needs g->qmap), saved in the
 * checkpoint tensor below. Ownership of nn moves in, even on failure. */
#define PG_GENERATOR_CLASS_CDF_TENSOR "calibration.class_cdf"
int pg_generator_snapshot_calibrated_table(const pg_generator *g, pg_nn_snapshot *nn, long step,
                                           const float *targets, const float *class_cdf,
                                           size_t per_class, pg_snapshot **out, pg_error *err);
/* The same with calib_table.h's independence (in [0, 1]; the above: 0). */
int pg_generator_snapshot_calibrated_table_indep(const pg_generator *g, pg_nn_snapshot *nn,
                                                 long step, const float *targets,
                                                 const float *class_cdf, size_t per_class,
                                                 double independence, pg_snapshot **out,
                                                 pg_error *err);
/* And with calib_table.h's copula (K x m x m correlation matrices, NULL:
 * none), saved in the checkpoint as PG_GENERATOR_COPULA_TENSOR (K x m^2)
 * with "copula" in the calibration header (calib_copula.h). */
#define PG_GENERATOR_COPULA_TENSOR "calibration.copula"
int pg_generator_snapshot_calibrated_table_copula(const pg_generator *g, pg_nn_snapshot *nn,
                                                  long step, const float *targets,
                                                  const float *class_cdf, size_t per_class,
                                                  double independence, const float *copula,
                                                  pg_snapshot **out, pg_error *err);

/* ---- parameter averaging ------------------------------------------------
 * An exponential moving average of the generator's parameters, updated after
 * every optimizer step; snapshots serve the average instead of the last
 * iterate. Averaging iterates that were computed from released (noised)
 * gradients is post-processing: it costs no privacy, and it damps the noise
 * the last few DP steps leave in the parameters. The effective decay
 * min(decay, (1 + t) / (10 + t)) lets the average follow the fast early
 * iterates instead of remembering the initialization. Batchnorm running
 * statistics are not averaged: they belong to the training network.
 * Ownership: the struct owns its two buffers (pg_generator_ema_free). */
typedef struct pg_generator_ema {
    double decay; /* 0: off (every function below is then a no-op) */
    size_t n;
    uint64_t updates;
    float *avg, *scratch;
} pg_generator_ema;

/* Starts the average at net's current parameters. decay in [0, 1). */
int pg_generator_ema_init(pg_generator_ema *e, double decay, pg_nn *net, pg_error *err);
void pg_generator_ema_update(pg_generator_ema *e, pg_nn *net);
/* Snapshot of net carrying the averaged parameters (net is left unchanged);
 * the plain snapshot when averaging is off. */
int pg_generator_ema_snapshot(pg_generator_ema *e, const pg_generator *g, pg_nn *net, long step,
                              pg_snapshot **out, pg_error *err);
/* The network snapshot under those snapshots (averaged parameters when on). */
int pg_generator_ema_take(pg_generator_ema *e, pg_nn *net, pg_nn_snapshot **nn, pg_error *err);
/* Checkpoint tensor "ema.params" (n_out = 0 when averaging is off), and the
 * way back: the average and its update count from a decoded checkpoint.
 * A checkpoint without the tensor restarts the average at net's parameters;
 * a tensor of the wrong size is PG_EFORMAT. */
#define PG_GENERATOR_EMA_TENSOR "ema.params"
void pg_generator_ema_tensor(const pg_generator_ema *e, pg_ckpt_tensor *t, size_t *n_out);
int pg_generator_ema_restore(pg_generator_ema *e, pg_nn *net, const pg_ckpt *ck, uint64_t updates,
                             pg_error *err);
void pg_generator_ema_free(pg_generator_ema *e);

/* ---- the trainer scaffolding every generator method shares ---------------
 * entropic_gan, dp_sinkhorn and swd_gen each train a pg_nn with a pg_nn_opt
 * (and, where the spec has train.ema, a parameter average) and checkpoint
 * them the same way: the network and optimizer through pg_nn_checkpoint_*,
 * a compact JSON header carrying "method", "step" and "generator"
 * (pg_generator_to_json), the average as the tensor "ema.params" and its
 * update count as "ema_updates". What differs (the privacy state, the rng
 * streams, released statistics) stays in each method. Outputs are released
 * and set to NULL on failure, so a method's destroy may run either way. */

/* Builds the network for max_batch rows (parameters from the job seed's
 * initialization stream), its optimizer (train.optimizer, train.lr with
 * default_lr when absent, train.weight_decay) and, when ema is not NULL, the
 * average (train.ema, off when absent). */
int pg_generator_train_init(const pg_generator *g, const json_t *resolved, size_t max_batch,
                            uint64_t seed, double default_lr, pg_nn **net, pg_nn_opt **opt,
                            pg_generator_ema *ema, pg_error *err);

/* Releases the generator, network, optimizer and average (ema may be NULL);
 * each may already be empty. */
void pg_generator_train_free(pg_generator *g, pg_nn *net, pg_nn_opt *opt, pg_generator_ema *ema);

/* Encodes a checkpoint: `header` (ownership moves in, even on failure; NULL
 * is PG_ENOMEM) as compact JSON, then the average's tensor when ema is not
 * NULL and on, then the n_more tensors of `more` (their data stays the
 * caller's). *bytes is malloc'ed. */
int pg_generator_ckpt_save(json_t *header, const pg_nn *net, const pg_nn_opt *opt,
                           const pg_generator_ema *ema, const pg_ckpt_tensor *more, size_t n_more,
                           unsigned char **bytes, size_t *len, pg_error *err);

/* Opens a checkpoint written by `method` for a trainer of generator g:
 * decodes the network (for max_batch rows) and optimizer and parses the
 * header; PG_EFORMAT unless the header names `method`, its step is at least
 * 0, the optimizer is there, the network has g->d outputs and the table map
 * matches (pg_generator_check_saved). When ema is not NULL it is started at
 * the network (train.ema of `resolved`) and restored from the checkpoint.
 * On success the caller owns *header (json_decref) and *rest (pg_ckpt_free;
 * rest may be NULL when no other tensor is needed). */
int pg_generator_ckpt_open(const pg_generator *g, const char *method, const json_t *resolved,
                           const unsigned char *bytes, size_t len, size_t max_batch, pg_nn **net,
                           pg_nn_opt **opt, pg_generator_ema *ema, json_t **header, long *step,
                           pg_ckpt *rest, pg_error *err);

/* The released label counts (label_count.h) in a checkpoint's JSON header:
 * an array of num_classes numbers. A snapshot loaded from a checkpoint that
 * has them draws its classes in their proportions. */
#define PG_GENERATOR_LABEL_COUNTS "label_counts"
/* Reads the array into counts (classes entries): PG_EFORMAT when it is
 * missing, of another length or not finite. */
/* Generated classes drawn from class weights w (classes of them, summing to 1)
 * into out[0..n). Used where released class proportions stand in for uniform
 * classes, so that the joint of (class, row) matches the data's; data-free
 * beyond the weights. */
void pg_generator_draw_classes(pg_rng *rng, const double *w, int classes, size_t n, int32_t *out);

int pg_generator_label_counts_from_json(const json_t *a, int classes, double *counts,
                                        pg_error *err);

#endif
