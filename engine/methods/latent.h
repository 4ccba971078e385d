/* engine/methods/latent.h - an autoencoder fitted on PUBLIC rows, giving the
 * particle flows (swd_flow, swd_flow_r) a low-dimensional latent space for
 * images.
 *
 * encode(x) = normalize(E(x)): every latent lies on the unit sphere of R^k,
 * whatever the input, so a flow on encoded private rows has clip norm R = 1
 * without clipping anything away. decode(z) = lo + (hi - lo) * D(z / |z|):
 * rows in the data's declared range. E and D are MLPs (engine/nn) trained
 * jointly on the reconstruction MSE of rows scaled to [0, 1], THROUGH the
 * normalization, so D is trained on exactly the sphere it decodes from.
 *
 * Privacy: training reads public rows only and uses a seeded generator; a
 * pg_latent is therefore a fixed, data-independent (of the private data)
 * function by the time any private row is encoded. See swd_flow.c for the
 * resulting sensitivity argument.
 *
 * Ownership: a pg_latent is immutable after training or loading and
 * reference counted (atomic): the trainer and every snapshot share it; the
 * last pg_latent_release frees. encode/decode allocate their per-call
 * scratch, so any number of threads may call them at once. Errors: PG_EINVAL
 * for bad shapes or configurations, PG_ENOMEM, PG_ENUMERIC when training
 * diverges, PG_EFORMAT for a malformed checkpoint part.
 */
#ifndef PG_METHODS_LATENT_H
#define PG_METHODS_LATENT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/checkpoint/checkpoint.h"
#include "engine/core/error.h"
#include "engine/methods/method.h"
#include "engine/methods/spec.h"

struct pg_dataset;

#define PG_LATENT_MAX_HIDDEN 4

typedef struct pg_latent_cfg {
    size_t dim; /* k */
    size_t hidden[PG_LATENT_MAX_HIDDEN];
    int nhidden;
    long steps;   /* Adam steps on minibatches */
    size_t batch; /* rows per step (capped at the public row count) */
    double lr;
    uint64_t seed; /* initialization and minibatches: public data only */
} pg_latent_cfg;

typedef struct pg_latent pg_latent;

extern const char *const pg_latent_archs[];

/* Spec rows of the latent mode (splice into a flow's table). They take
 * effect only when the job names a public dataset; validation drops them
 * from the resolved spec otherwise, so "latent" in a resolved spec means
 * latent mode. */
#define PG_LATENT_PARAM_ROWS                                                                       \
    {"latent.dim",                                                                                 \
     PG_PARAM_INT,                                                                                 \
     "16",                                                                                         \
     1,                                                                                            \
     4096,                                                                                         \
     NULL,                                                                                         \
     0,                                                                                            \
     0,                                                                                            \
     "With public_dataset_id: dimension k of the autoencoder's code; the flow runs on "            \
     "normalize(encoder(x)), so privacy.clip_norm is 1."},                                         \
        {"latent.arch",                                                                            \
         PG_PARAM_STR,                                                                             \
         "\"mlp\"",                                                                                \
         0,                                                                                        \
         0,                                                                                        \
         pg_latent_archs,                                                                          \
         0,                                                                                        \
         0,                                                                                        \
         "Autoencoder architecture (mlp: encoder d -> hidden -> k, decoder mirrored, sigmoid "     \
         "output on the data range)."},                                                            \
        {"latent.hidden",                                                                          \
         PG_PARAM_INT_LIST,                                                                        \
         "[512]",                                                                                  \
         1,                                                                                        \
         8192,                                                                                     \
         NULL,                                                                                     \
         PG_LATENT_MAX_HIDDEN,                                                                     \
         0,                                                                                        \
         "Hidden widths of the encoder (the decoder uses them reversed)."},                        \
        {"latent.steps",                                                                           \
         PG_PARAM_INT,                                                                             \
         "2000",                                                                                   \
         1,                                                                                        \
         200000,                                                                                   \
         NULL,                                                                                     \
         0,                                                                                        \
         0,                                                                                        \
         "Adam steps of autoencoder training on the public rows (setup, before any private "       \
         "row is read)."},                                                                         \
        {"latent.batch",                                                                           \
         PG_PARAM_INT,                                                                             \
         "128",                                                                                    \
         1,                                                                                        \
         4096,                                                                                     \
         NULL,                                                                                     \
         0,                                                                                        \
         0,                                                                                        \
         "Public rows per autoencoder step."},                                                     \
    {                                                                                              \
        "latent.lr", PG_PARAM_NUM, "0.001", 0, 1, NULL, 0, PG_PARAM_EXCLUSIVE_MIN,                 \
            "Autoencoder learning rate (Adam)."                                                    \
    }

/* Validation of a flow's resolved spec r (from `spec`): without public data,
 * refuses explicit latent fields and drops the defaults; with it, checks the
 * public data's shape and the training cost, and sets privacy.clip_norm to
 * the exact norm of the flow's rows (refusing another explicit value): 1 for
 * codes, sqrt(1 + alpha^2) for [code ; alpha onehot(y)] on labelled data,
 * where labels.class_alpha defaults to 1. Call before pg_swd_spec_labels. */
void pg_latent_spec_validate(json_t *r, const json_t *spec, const pg_job_data *in,
                             pg_spec_errors *errors);
/* Whether a resolved spec runs in latent mode. */
bool pg_latent_spec_on(const json_t *r);
/* The description of the rows the flow sees: desc itself, or in latent mode
 * its rows as k-dimensional codes. */
pg_data_desc pg_latent_flow_desc(const json_t *r, const pg_data_desc *desc);
/* Training setup of a resolved latent spec (seed: the job's). */
void pg_latent_spec_cfg(const json_t *r, uint64_t seed, pg_latent_cfg *cfg);

/* Trains on the public rows, scaled by the PRIVATE data's range [lo, hi]
 * (values outside it are clamped: the decoder can only produce that range).
 * *out has refcount 1. */
int pg_latent_train(const pg_latent_cfg *cfg, const struct pg_dataset *pub, float lo, float hi,
                    pg_latent **out, pg_error *err);

void pg_latent_retain(pg_latent *ae);
void pg_latent_release(pg_latent *ae);

size_t pg_latent_dim(const pg_latent *ae);      /* k */
size_t pg_latent_data_dim(const pg_latent *ae); /* d */
/* Mean squared reconstruction error per value, in [0, 1] units, over the
 * last full training epoch's minibatches (NaN when unknown). Carried by the
 * checkpoint JSON as "train_mse". */
double pg_latent_train_mse(const pg_latent *ae);

/* z (n rows of zstride >= k floats; the first k of each are written) =
 * normalize(E(x)); x: n x d. A zero code stays zero. */
int pg_latent_encode(const pg_latent *ae, const float *x, size_t n, float *z, size_t zstride,
                     pg_error *err);
/* x (n x d) = decode of the first k values of each z row (stride zstride). */
int pg_latent_decode(const pg_latent *ae, const float *z, size_t n, size_t zstride, float *x,
                     pg_error *err);

/* Checkpoint part: a JSON description (architectures, range, k) and two
 * tensors that alias the autoencoder's parameters (valid while ae lives). */
json_t *pg_latent_to_json(const pg_latent *ae);
void pg_latent_tensors(const pg_latent *ae, pg_ckpt_tensor ts[2]);
/* Rebuilds from that JSON and the tensors of a decoded container. */
int pg_latent_from_ckpt(const json_t *j, const pg_ckpt *ck, pg_latent **out, pg_error *err);

/* A snapshot that samples `inner` (latent rows of width >= k) and decodes
 * them; d and classes are the data's. Retains ae; ownership of inner moves in
 * (released on failure too). */
int pg_latent_snapshot_wrap(pg_latent *ae, pg_snapshot *inner, pg_snapshot **out, pg_error *err);

#endif
