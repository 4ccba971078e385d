/* entropic_gan - the entropic OT GAN of Reshetova, Chen, Ozgur (paper 000,
 * Algorithm 1) that learns the clean distribution from locally privatized
 * rows: with the mechanism's negative log-likelihood as the cost and the
 * matching entropic regularization (Laplace: l1 cost, reg = s; Gaussian:
 * squared Euclidean cost, reg = 2 s^2), the raw OT_reg between the generator's
 * law and the privatized data is minimized by the clean law (Theorem 1).
 * The loss is the raw OT_reg, never the debiased divergence, which the noisy
 * law itself minimizes.
 *
 * Baselines for comparison runs: ot.reg = "tiny" (nearly unregularized OT,
 * which learns the noisy law) and variant = "noisy_w1" (paper eq. (15): fresh
 * mechanism noise added to the generated samples, then nearly plain OT).
 *
 * Typed local tables (desc->table and desc->ldp set, table_ldp.h): the
 * generator has per-block heads (generator.h) and the cost is the per-column
 * channel's negative log-likelihood (ldp_cost.h): generated category,
 * boolean and missing-indicator probabilities pass through the same k-ary
 * randomized-response channel the owner applied, numeric units through the
 * declared Laplace or Gaussian noise, and the entropic regularization is 1
 * (the cost is already in likelihood units; "tiny" scales it like on vector
 * rows). The GAN so fits the clean law whose privatized image matches the
 * rows. ot.channel = false drops the randomized-response channels (the
 * baseline that learns the privatized frequencies).
 *
 * The label of a typed local table went through k-ary randomized
 * response like any categorical column (keep p, any other class q =
 * (1 - p) / (k - 1)). A conditional generator (the default on a labelled
 * table) is given classes c drawn from the channel's inverse of the
 * privatized label frequencies f, w = (f - q) / (p - q) (each count clipped
 * at 1, label_count.h's rule, then normalized), and the cost of matching a
 * generated (x, c) with a privatized (y, c') gains the label's negative
 * log-likelihood, -log p when c' = c and -log q otherwise (q computed
 * without cancellation and floored at 1e-30 as in ldp_cost.c): the columns were
 * privatized independently, so this is the same Theorem 1 cost on the joint
 * of features and label. The snapshot draws its classes from w. All of it is
 * post-processing of the local reports: nothing is charged. ot.channel =
 * false: w = f and a mismatch costs ot.class_alpha (the baseline).
 *
 * Class-conditional calibration (typed local tables, calibration.class_means,
 * on by default with the channel; engine/methods/calib_ldp.h): the GAN
 * matched the marginals but not the classes (credit_data at a local epsilon
 * of 1000: classifier 0.74 on its rows, 0.785 fitted on the reports
 * themselves; its numbers' within-class spread was about half the real
 * one). From the privatized rows and labels alone (post-processing, no
 * budget) each class's numeric means and spreads and category frequencies
 * are debiased through every channel, the label's included; snapshots move
 * each class's samples onto them, keeping a class difference only where it
 * clears the noise. The targets and their errors are in checkpoints
 * ("calib_ldp"; absent in older ones, which load uncalibrated).
 *
 * Defaults: on small untyped vector data (engine/methods/defaults.h) a
 * [128, 128] generator with a d-dimensional latent whose parameter average
 * (train.ema 0.999) the snapshots serve, and batches of min(256, n) rows.
 *
 * Privacy: the rows were privatized on the clients, so training is
 * post-processing and charges nothing. Batch selection therefore uses the
 * job's seeded generator, which makes a resumed job continue exactly.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/data/dataset.h"
#include "engine/methods/calib_ldp.h"
#include "engine/methods/warnings.h"
#include "engine/methods/defaults.h"
#include "engine/methods/dp_sinkhorn.h"
#include "engine/methods/generator.h"
#include "engine/methods/label_count.h"
#include "engine/methods/ldp_cost.h"
#include "engine/methods/snapshot.h"
#include "engine/methods/trainer.h"
#include "engine/ot/sinkhorn.h"

/* "tiny" regularization, relative to the mechanism's own: small enough that
 * OT_reg is essentially the unregularized cost at this data scale, large
 * enough for the log-domain solver to converge in a few hundred iterations. */
#define TINY_FACTOR 0.02

static const char *const OPTIMIZERS[] = {"adam", "rmsprop", "sgd", "adamw", NULL};
static const char *const REG_WORDS[] = {"auto", "tiny", NULL};
static const char *const VARIANTS[] = {"entropic", "noisy_w1", NULL};
static const char *const LR_DECAYS[] = {"none", "cosine", "linear", NULL};

static const pg_param EGAN_PARAMS[] = {
    PG_GENERATOR_PARAM_ROWS,
    {"train.steps", PG_PARAM_INT, "2000", 1, 1e7, NULL, 0, 0, "Training steps."},
    {"train.batch_size", PG_PARAM_INT, "256", 2, 4096, NULL, 0, 0,
     "Generated and data samples per step (default: min(256, rows))."},
    {"train.optimizer", PG_PARAM_STR, "\"adam\"", 0, 0, OPTIMIZERS, 0, 0, "Optimizer."},
    {"train.lr", PG_PARAM_NUM, "0.001", 0, 10, NULL, 0, PG_PARAM_EXCLUSIVE_MIN, "Learning rate."},
    {"train.ema", PG_PARAM_NUM, "0", 0, 0.999999, NULL, 0, 0,
     "Decay of the moving average of the generator's parameters that snapshots serve (0: serve "
     "the last iterate; small untyped vector data: 0.999)."},
    {"train.lr_decay", PG_PARAM_STR, "\"none\"", 0, 0, LR_DECAYS, 0, 0,
     "Learning-rate schedule over train.steps: none (constant), cosine or linear decay to 0 "
     "(small untyped vector data: cosine, so the last iterate settles)."},
    {"train.weight_decay", PG_PARAM_NUM, "0", 0, 1, NULL, 0, 0,
     "Weight decay (L2 for adam/rmsprop/sgd, decoupled for adamw)."},
    {"ot.p", PG_PARAM_INT, NULL, 1, 2, NULL, 0, PG_PARAM_OPTIONAL,
     "Wasserstein order; fixed by the dataset's mechanism (1 for Laplace, 2 for Gaussian)."},
    {"ot.reg", PG_PARAM_NUM_OR_STR, "\"auto\"", 0, 1e6, REG_WORDS, 0, PG_PARAM_EXCLUSIVE_MIN,
     "Entropic regularization: auto (s for Laplace, 2s^2 for Gaussian), tiny (baseline), or a "
     "positive number (experiments only)."},
    {"ot.max_iter", PG_PARAM_INT, "200", 1, 100000, NULL, 0, 0, "Sinkhorn iterations per step."},
    {"ot.tol", PG_PARAM_NUM, "0.001", 0, 1, NULL, 0, 0,
     "Stop Sinkhorn when the marginal L1 error falls below this (0: run max_iter)."},
    {"ot.scaling", PG_PARAM_NUM, "0.7", 0, 0.999, NULL, 0, 0,
     "Epsilon-scaling factor from the largest cost down to reg (0 disables)."},
    {"ot.class_alpha", PG_PARAM_NUM, "10", 0, 1e4, NULL, 0, 0,
     "Class augmentation weight for conditional models."},
    {"ot.channel", PG_PARAM_BOOL, "true", 0, 0, NULL, 0, 0,
     "Typed local tables: pass generated categories through the rows' randomized-response "
     "channel before the loss (false: the baseline that fits the privatized frequencies). "
     "Ignored on untyped rows."},
    {"ot.numeric_weight", PG_PARAM_NUM, "1", 0, 1e4, NULL, 0, PG_PARAM_EXCLUSIVE_MIN,
     "Typed local tables: factor on the numeric columns' noise likelihood in the cost (1: the "
     "channel's own, what Theorem 1 needs; larger removes less noise). Experiments only."},
    {"calibration.class_means", PG_PARAM_BOOL, "true", 0, 0, NULL, 0, 0,
     "Typed local tables: after training, move each class's samples onto the class means of "
     "the numeric columns and the class frequencies of the categories that the privatized rows "
     "give once every channel is inverted, and, where the noise is small enough to fix a "
     "number's shape, onto each class's law of it deconvolved from the reports "
     "(engine/methods/calib_ldp.h). Post-processing of the reports: no budget. Ignored on "
     "untyped rows."},
    {"calibration.samples_per_class", PG_PARAM_INT, "2000", 10, 100000, NULL, 0, 0,
     "Typed local tables: rows per class of the fixed-seed draw that measures the generator "
     "before calibrating it."},
    {"variant", PG_PARAM_STR, "\"entropic\"", 0, 0, VARIANTS, 0, 0,
     "entropic (the method) or noisy_w1 (the paper's eq. (15) baseline)."},
    {"seed", PG_PARAM_INT, NULL, 0, 9007199254740991.0, NULL, 0, PG_PARAM_OPTIONAL,
     "Seed of initialization, latents, batch selection and sampling."},
    {"checkpoint_every", PG_PARAM_INT, "100", 1, 1e7, NULL, 0, 0,
     "Steps between checkpoints and published snapshots."},
    {0},
};

static const char *const IGNORED[] = {"dataset_id", "method", "public_dataset_id", NULL};

typedef struct egan {
    pg_trainer base;
    const pg_dataset *data;
    pg_generator gen;
    pg_nn *net;
    pg_nn_opt *opt;
    pg_generator_ema ema; /* what snapshots serve (train.ema; off at 0) */
    pg_ot_ws ws;
    pg_ot_cost cost;
    pg_sinkhorn_opts sk;
    bool noisy_w1;
    int mechanism;
    double noise_scale;
    size_t batch, d;
    long step, steps;
    double lr;    /* train.lr, the schedule's start */
    int lr_decay; /* index into LR_DECAYS */
    pg_rng latent_rng, batch_rng, noise_rng;
    float *z, *y, *grad, *xbuf;
    int32_t *labels;
    pg_ldp_cost *ldp; /* typed local tables, else NULL */
    float *xgen;      /* data-space outputs of the heads (before noisy_w1's noise) */
    /* Conditional on a typed local table (see the top): the privatized
     * labels of the batch, the channel-inverted class counts (classes) and
     * weights (classes) in one block, and the label's cost when the classes
     * agree / differ. NULL / unused otherwise. */
    int32_t *ylabels;
    double *label_counts, *label_w;
    float label_same, label_diff;
    /* Class-conditional calibration (calib_ldp.h), NULL when off: targets
     * debiased from the privatized rows, applied to every snapshot. */
    pg_calib_ldp *cal;
    size_t cal_per;
} egan;

static json_t *egan_catalogue(void)
{
    return pg_spec_catalogue(EGAN_PARAMS);
}

/* The mechanism fixes p, the cost and the regularization (paper Cor. 1-2). */
static double auto_reg(const pg_data_desc *d)
{
    return d->mechanism == PG_LOCAL_LAPLACE ? d->noise_scale
                                            : 2.0 * d->noise_scale * d->noise_scale;
}

static int egan_validate_filled(const json_t *spec, const pg_job_data *in, json_t **resolved,
                                pg_spec_errors *errors, pg_error *err);

/* Fills the data-derived defaults (defaults.h) into absent fields first. */
static int egan_validate(const json_t *spec, const pg_job_data *in, json_t **resolved,
                         pg_spec_errors *errors, pg_error *err)
{
    *resolved = NULL;
    json_t *filled = pg_defaults_fill("entropic_gan", spec, in->desc);
    if (!filled) return pg_error_set(err, PG_ENOMEM, "cannot copy the job spec");
    int rc = egan_validate_filled(filled, in, resolved, errors, err);
    json_decref(filled);
    return rc;
}

static int egan_validate_filled(const json_t *spec, const pg_job_data *in, json_t **resolved,
                                pg_spec_errors *errors, pg_error *err)
{
    const pg_data_desc *desc = in->desc;
    *resolved = NULL;
    int before = errors->count;
    pg_job_data_no_public(in, "entropic_gan", errors);
    if (desc->model != PG_PRIVACY_LOCAL)
        pg_spec_error_add(errors, "dataset_id",
                          "entropic_gan trains on local (client-privatized) datasets only");
    if (json_is_object(spec) && json_object_get(spec, "privacy"))
        pg_spec_error_add(errors, "privacy",
                          "training on a local dataset is post-processing and spends no budget: "
                          "omit privacy");
    json_t *r = NULL;
    if (json_is_object(spec)) {
        json_t *copy = json_copy((json_t *)spec);
        json_object_del(copy, "privacy");
        pg_spec_resolve(EGAN_PARAMS, copy, IGNORED, &r, errors);
        json_decref(copy);
    } else {
        pg_spec_resolve(EGAN_PARAMS, spec, IGNORED, &r, errors);
    }
    if (!r || errors->count != before) {
        json_decref(r);
        return PG_EINVAL;
    }
    if (desc->model == PG_PRIVACY_LOCAL && desc->ldp) {
        /* Typed local table: the per-column channel fixes the cost. */
        int want_p = desc->ldp->numeric == PG_LDP_GAUSSIAN ? 2 : 1;
        if (pg_spec_int(r, "ot.p", want_p) != want_p)
            pg_spec_error_add(errors, "ot.p", "is fixed by the table's numeric mechanism (%d)",
                              want_p);
        pg_spec_set(r, "ot.p", json_integer(want_p));
        if (!desc->table)
            pg_spec_error_add(errors, "dataset_id", "a per-column local plan needs the table");
        if (pg_spec_bool(r, "model.conditional", false) && desc->table &&
            (desc->table->label == PG_TABLE_NONE || desc->table->label >= desc->ldp->ncols ||
             desc->ldp->cols[desc->table->label].mechanism != PG_LDP_RR ||
             desc->ldp->cols[desc->table->label].k != (size_t)desc->num_classes))
            pg_spec_error_add(errors, "model.conditional",
                              "needs the table's label privatized by randomized response over "
                              "its classes (a nullable label's channel is not modelled)");
        if (strcmp(pg_spec_str(r, "variant", "entropic"), "entropic") != 0)
            pg_spec_error_add(errors, "variant", "typed local tables support entropic only");
        const json_t *reg = pg_spec_get(r, "ot.reg");
        if (json_is_string(reg))
            pg_spec_set(r, "ot.reg",
                        json_real(strcmp(json_string_value(reg), "tiny") == 0 ? TINY_FACTOR : 1.0));
        if (desc->table) {
            pg_ldp_cost *c = NULL;
            pg_error e2 = {0};
            if (pg_ldp_cost_make(desc->table, desc->ldp, true, &c, &e2) != PG_OK)
                pg_spec_error_add(errors, "dataset_id", "%s", e2.msg);
            pg_ldp_cost_free(c);
        }
    } else if (desc->model == PG_PRIVACY_LOCAL) {
        int want_p = desc->mechanism == PG_LOCAL_LAPLACE ? 1 : 2;
        long p = pg_spec_int(r, "ot.p", want_p);
        if (p != want_p)
            pg_spec_error_add(
                errors, "ot.p",
                "the dataset was privatized with the %s mechanism, which needs p = %d",
                want_p == 1 ? "Laplace" : "Gaussian", want_p);
        pg_spec_set(r, "ot.p", json_integer(want_p));
        if (!(desc->noise_scale > 0.0) || !isfinite(desc->noise_scale))
            pg_spec_error_add(errors, "dataset_id", "the dataset declares no usable noise scale");
        const json_t *reg = pg_spec_get(r, "ot.reg");
        if (json_is_string(reg)) {
            double lam = auto_reg(desc);
            if (strcmp(json_string_value(reg), "tiny") == 0) lam *= TINY_FACTOR;
            pg_spec_set(r, "ot.reg", json_real(lam));
        }
    }
    long batch = pg_spec_int(r, "train.batch_size", 0);
    if ((size_t)batch > desc->n)
        pg_spec_error_add(errors, "train.batch_size", "is larger than the dataset's %zu rows",
                          desc->n);
    pg_generator g;
    if (pg_generator_config(r, desc, &g, errors, err) == PG_OK) {
        pg_spec_set(r, "model.latent_dim", json_integer((json_int_t)g.latent_dim));
        pg_generator_free(&g);
    }
    if (errors->count != before) {
        json_decref(r);
        return PG_EINVAL;
    }
    *resolved = r;
    return PG_OK;
}

static int egan_plan(const json_t *resolved, const pg_job_data *in, pg_privacy_plan *plan,
                     pg_error *err)
{
    const pg_data_desc *desc = in->desc;
    memset(plan, 0, sizeof *plan);
    plan->charges = false; /* post-processing of epsilon-LDP reports */
    plan->steps = pg_spec_int(resolved, "train.steps", 0);
    if (desc->ldp) {
        plan->epsilon = desc->ldp->epsilon;
        plan->delta = desc->ldp->delta;
        snprintf(plan->mechanism, sizeof plan->mechanism, "local_per_column");
        snprintf(plan->neighbouring, sizeof plan->neighbouring, "local_record");
        return PG_OK;
    }
    plan->epsilon = desc->epsilon;
    plan->delta = desc->mechanism == PG_LOCAL_GAUSSIAN ? desc->delta : 0.0;
    plan->steps = pg_spec_int(resolved, "train.steps", 0);
    plan->sampling_rate = 0.0;
    snprintf(plan->mechanism, sizeof plan->mechanism, "%s",
             desc->mechanism == PG_LOCAL_LAPLACE ? "local_laplace" : "local_gaussian");
    snprintf(plan->neighbouring, sizeof plan->neighbouring, "local_record");
    return PG_OK;
}

static void egan_destroy(pg_trainer *t)
{
    egan *g = (egan *)t;
    if (!g) return;
    pg_generator_train_free(&g->gen, g->net, g->opt, &g->ema);
    pg_ot_ws_free(&g->ws);
    pg_free(g->z);
    pg_free(g->y);
    pg_free(g->grad);
    pg_free(g->xbuf);
    pg_free(g->labels);
    pg_free(g->xgen);
    pg_ldp_cost_free(g->ldp);
    pg_calib_ldp_free(g->cal);
    pg_free(g->ylabels);
    free(g->label_counts);
    free(g);
}

extern const pg_method pg_method_entropic_gan;

/* The label's channel on a typed local table (see the top): class weights
 * from the inverse of the randomized response applied to the privatized
 * label frequencies, and the label's negative log-likelihood as cost. */
static int label_channel(egan *g, const pg_data_desc *desc, bool channel, double alpha,
                         pg_error *err)
{
    int K = g->gen.num_classes;
    const pg_dataset *ds = g->data;
    const pg_ldp_column *col = &desc->ldp->cols[desc->table->label];
    if (!ds->labels || col->mechanism != PG_LDP_RR || col->k != (size_t)K || K < 2)
        return pg_error_set(err, PG_EINVAL,
                            "the label was not privatized by randomized response over its "
                            "%d classes",
                            K);
    g->ylabels = pg_calloc(g->batch, sizeof *g->ylabels);
    g->label_counts = calloc(2 * (size_t)K, sizeof *g->label_counts);
    if (!g->ylabels || !g->label_counts)
        return pg_error_set(err, PG_ENOMEM, "cannot allocate the label channel");
    g->label_w = g->label_counts + K;
    double p = channel ? col->keep : 1.0, n = (double)ds->n;
    double q = channel ? pg_ldp_rr_other((size_t)K, p, col->epsilon) : 0.0;
    for (size_t i = 0; i < ds->n; i++) {
        int32_t c = ds->labels[i];
        if (c < 0 || c >= K) return pg_error_set(err, PG_EINVAL, "label %d out of range", c);
        g->label_counts[c] += 1.0;
    }
    /* E[f] = q + (p - q) w for the clean proportions w: invert it (p > q
     * for any finite epsilon); counts in rows so label_count.h's clip at 1
     * and the checkpoint's "label_counts" apply unchanged. */
    for (int k = 0; k < K; k++) g->label_counts[k] = n * ((g->label_counts[k] / n - q) / (p - q));
    pg_label_count_weights(g->label_counts, K, g->label_w);
    /* q exact without cancellation (pg_ldp_rr_other) and floored where
     * ldp_cost.c floors a reported state's probability through the channel
     * (1e-30). The old floor 1e-6 capped a mismatch at 13.8 whatever the
     * label's epsilon: at 71 (local epsilon 1000 over 14 columns) the
     * channel says 71.4, and classes matched across at a fifth of it. */
    g->label_same = channel ? (float)-log(p) : 0.0f;
    g->label_diff = channel ? (float)-log(fmax(q, 1e-30)) : (float)alpha;
    return PG_OK;
}

/* Everything but the network and optimizer, which create and restore build
 * differently. */
static int egan_common(const json_t *r, const pg_job_data *in, int threads, egan **out,
                       pg_error *err)
{
    const pg_data_desc *desc = in->desc;
    const pg_dataset *data = in->rows;
    *out = NULL;
    if (!data || data->n == 0 || data->d != desc->d)
        return pg_error_set(err, PG_EINVAL, "the dataset is empty or its width changed");
    egan *g = calloc(1, sizeof *g);
    if (!g) return pg_error_set(err, PG_ENOMEM, "cannot allocate the trainer");
    g->base.method = &pg_method_entropic_gan;
    g->data = data;
    pg_spec_errors errors = {0};
    int rc = pg_generator_config(r, desc, &g->gen, &errors, err);
    if (rc) {
        free(g);
        return errors.count ? pg_error_set(err, PG_EINVAL, "%s: %s", errors.items[0].field,
                                           errors.items[0].message)
                            : rc;
    }
    g->batch = (size_t)pg_spec_int(r, "train.batch_size", 256);
    if (g->batch > data->n) g->batch = data->n;
    g->d = desc->d;
    g->steps = pg_spec_int(r, "train.steps", 1);
    g->lr = pg_spec_num(r, "train.lr", 1e-3);
    const char *decay = pg_spec_str(r, "train.lr_decay", "none");
    g->lr_decay = !strcmp(decay, "cosine") ? 1 : !strcmp(decay, "linear") ? 2 : 0;
    g->mechanism = desc->mechanism;
    g->noise_scale = desc->noise_scale;
    g->noisy_w1 = strcmp(pg_spec_str(r, "variant", "entropic"), "noisy_w1") == 0;
    g->cost.kind = pg_spec_int(r, "ot.p", 1) == 1 ? PG_OT_L1 : PG_OT_SQEUCLIDEAN;
    g->cost.class_alpha = g->gen.num_classes ? (float)pg_spec_num(r, "ot.class_alpha", 10) : 0.0f;
    g->sk = pg_sinkhorn_defaults((float)pg_spec_num(r, "ot.reg", 1.0));
    if (g->noisy_w1) g->sk.reg *= (float)TINY_FACTOR; /* eq. (15) compares with plain OT */
    g->sk.tol = (float)pg_spec_num(r, "ot.tol", 1e-3);
    g->sk.max_iter = (int)pg_spec_int(r, "ot.max_iter", 200);
    g->sk.scaling = (float)pg_spec_num(r, "ot.scaling", 0.7);
    uint64_t seed = (uint64_t)pg_spec_int(r, "seed", 0);
    pg_rng_seeded(&g->latent_rng, seed, PG_STREAM_LATENT);
    pg_rng_seeded(&g->batch_rng, seed, PG_STREAM_BATCH);
    pg_rng_seeded(&g->noise_rng, seed, PG_STREAM_NOISE);
    (void)threads; /* the caller sets the job's thread count for OpenMP/BLAS */
    size_t b = g->batch, d = g->d;
    g->z = pg_alloc_f32(b * g->gen.latent_dim);
    g->y = pg_alloc_f32(b * d);
    g->grad = pg_alloc_f32(b * d);
    g->xbuf = pg_alloc_f32(b * d);
    g->labels = pg_calloc(b, sizeof(int32_t));
    g->xgen = pg_alloc_f32(b * d);
    if (!g->z || !g->y || !g->grad || !g->xbuf || !g->labels || !g->xgen) {
        egan_destroy(&g->base);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate training buffers");
    }
    rc = pg_ot_ws_init(&g->ws, b, b, d, err);
    if (rc == PG_OK && desc->model == PG_PRIVACY_LOCAL && desc->ldp && desc->table)
        rc = pg_ldp_cost_make(desc->table, desc->ldp, pg_spec_bool(r, "ot.channel", true), &g->ldp,
                              err);
    if (rc == PG_OK && g->ldp)
        pg_ldp_cost_set_numeric_weight(g->ldp, pg_spec_num(r, "ot.numeric_weight", 1.0));
    if (rc == PG_OK && g->ldp && g->gen.num_classes)
        rc = label_channel(g, desc, pg_spec_bool(r, "ot.channel", true),
                           pg_spec_num(r, "ot.class_alpha", 10), err);
    /* Calibration targets: a function of the privatized rows and labels
     * the job was given, nothing else (no budget; recomputed on restore). */
    if (rc == PG_OK && g->ldp && pg_spec_bool(r, "calibration.class_means", true) &&
        pg_spec_bool(r, "ot.channel", true)) {
        g->cal_per = (size_t)pg_spec_int(r, "calibration.samples_per_class", 2000);
        rc = pg_calib_ldp_make(desc->table, g->gen.num_classes, &g->cal, err);
        if (rc == PG_OK)
            rc = pg_calib_ldp_estimate(g->cal, desc->ldp, data->x,
                                       g->gen.num_classes ? data->labels : NULL, data->n, err);
    }
    if (rc == PG_OK) pg_warn_ldp_signal(&g->base, g->cal); /* pooled classes: say so */
    if (rc) {
        egan_destroy(&g->base);
        return rc;
    }
    *out = g;
    return PG_OK;
}

static int egan_create(const json_t *r, const pg_job_data *in, int threads, pg_trainer **out,
                       pg_error *err)
{
    *out = NULL;
    egan *g;
    int rc = egan_common(r, in, threads, &g, err);
    if (rc) return rc;
    uint64_t seed = (uint64_t)pg_spec_int(r, "seed", 0);
    rc = pg_generator_train_init(&g->gen, r, g->batch, seed, 1e-3, &g->net, &g->opt, &g->ema, err);
    if (rc) {
        egan_destroy(&g->base);
        return rc;
    }
    *out = &g->base;
    return PG_OK;
}

static int egan_step(pg_trainer *t, pg_step_report *rep, pg_error *err)
{
    egan *g = (egan *)t;
    memset(rep, 0, sizeof *rep);
    if (g->step >= g->steps) {
        rep->step = g->step;
        rep->done = true;
        return PG_OK;
    }
    size_t b = g->batch, d = g->d;
    const pg_dataset *ds = g->data;
    for (size_t i = 0; i < b; i++) {
        size_t j = (size_t)pg_rng_below(&g->batch_rng, ds->n);
        memcpy(g->y + i * d, pg_dataset_row(ds, j), d * sizeof(float));
        if (g->gen.num_classes) (g->label_w ? g->ylabels : g->labels)[i] = ds->labels[j];
    }
    pg_nn_latent_sample(&g->gen.latent, &g->latent_rng, g->z, b * g->gen.latent_dim);
    /* Typed local: the generated classes follow the channel's inverse, not
     * the privatized labels of the batch. */
    if (g->label_w)
        pg_generator_draw_classes(&g->latent_rng, g->label_w, g->gen.num_classes, b, g->labels);
    const float *out;
    int rc = pg_nn_forward(g->net, g->z, g->gen.num_classes ? g->labels : NULL, b, &out, err);
    if (rc) return rc;
    memcpy(g->xbuf, out, b * d * sizeof(float));
    pg_generator_to_data(&g->gen, &g->latent_rng, g->xbuf, d, b);
    memcpy(g->xgen, g->xbuf, b * d * sizeof(float));
    pg_ot_result res;
    if (g->ldp) {
        pg_mat cm = pg_ot_ws_cost(&g->ws, b, b);
        rc = pg_ldp_cost_matrix(g->ldp, g->xgen, b, g->y, b, cm.data, pg_ot_ld(b), err);
        /* the label's negative log-likelihood (no gradient: classes are given) */
        for (size_t i = 0; rc == PG_OK && g->label_w && i < b; i++)
            for (size_t j = 0; j < b; j++)
                cm.data[i * pg_ot_ld(b) + j] +=
                    g->labels[i] == g->ylabels[j] ? g->label_same : g->label_diff;
        pg_sinkhorn_opts sk = g->sk;
        sk.keep_plan = true;
        if (rc == PG_OK) rc = pg_sinkhorn_solve(&g->ws, b, b, NULL, NULL, &sk, &res, err);
        if (rc == PG_OK)
            rc = pg_ldp_cost_grad(g->ldp, g->xgen, b, g->y, b, g->ws.plan.data, pg_ot_ld(b),
                                  g->grad, err);
        if (rc) return rc;
        goto backward;
    }
    if (g->noisy_w1) {
        /* The baseline's noise mimics the clients' mechanism on generated
         * samples; it protects nothing, so the seeded stream is right. */
        for (size_t i = 0; i < b * d; i++)
            g->xbuf[i] += (float)(g->mechanism == PG_LOCAL_LAPLACE
                                      ? pg_rng_laplace(&g->noise_rng, g->noise_scale)
                                      : g->noise_scale * pg_rng_normal(&g->noise_rng));
    }
    pg_ot_cloud cx = {pg_mat_view(g->xbuf, b, d), NULL, g->gen.num_classes ? g->labels : NULL};
    pg_ot_cloud cy = {pg_mat_view(g->y, b, d), NULL, g->gen.num_classes ? g->labels : NULL};
    pg_mat grad = pg_mat_view(g->grad, b, d);
    rc = pg_ot_sinkhorn(&g->ws, &g->cost, &cx, &cy, &g->sk, &res, &grad, NULL, err);
    if (rc) return rc;
backward:
    if (!isfinite(res.value)) return pg_error_set(err, PG_ENUMERIC, "the OT loss is not finite");
    pg_generator_grad_to_net(&g->gen, g->xgen, d, g->grad, b);
    pg_nn_zero_grad(g->net);
    rc = pg_nn_backward(g->net, g->grad, NULL, err);
    /* The rate is a function of the step, so a restored job continues the
     * same schedule (dp_sinkhorn.h has the shapes). */
    pg_nn_opt_set_lr(g->opt, (float)pg_dp_sinkhorn_lr(g->lr, g->lr_decay, g->step, g->steps));
    if (rc == PG_OK) rc = pg_nn_opt_step_net(g->opt, g->net, err);
    if (rc) return rc;
    pg_generator_ema_update(&g->ema, g->net);
    g->step++;
    rep->step = g->step;
    rep->loss = res.value;
    rep->ot_iters = res.iters;
    rep->marginal_error = res.marginal_error;
    rep->epsilon_spent = 0.0;
    rep->done = g->step >= g->steps;
    return PG_OK;
}

static int egan_snapshot(pg_trainer *t, pg_snapshot **out, pg_error *err)
{
    egan *g = (egan *)t;
    int rc = pg_generator_ema_snapshot(&g->ema, &g->gen, g->net, g->step, out, err);
    /* Samples follow the channel-inverted class proportions. */
    if (rc == PG_OK && g->label_w && (rc = pg_snapshot_set_class_weights(*out, g->label_w, err))) {
        pg_snapshot_release(*out);
        *out = NULL;
    }
    /* then onto the debiased class-conditional targets (keeps the weights) */
    if (rc == PG_OK && g->cal) {
        pg_snapshot *inner = *out;
        *out = NULL;
        rc = pg_calib_ldp_wrap(g->cal, inner, g->cal_per, out, err);
    }
    return rc;
}

static int egan_save(pg_trainer *t, unsigned char **bytes, size_t *len, pg_error *err)
{
    egan *g = (egan *)t;
    json_t *extra = json_pack(
        "{s:s,s:I,s:I,s:o,s:{s:o,s:o,s:o}}", "method", "entropic_gan", "step", (json_int_t)g->step,
        "ema_updates", (json_int_t)g->ema.updates, "generator", pg_generator_to_json(&g->gen),
        "rng", "latent", pg_rng_state_to_json(&g->latent_rng), "batch",
        pg_rng_state_to_json(&g->batch_rng), "noise", pg_rng_state_to_json(&g->noise_rng));
    /* the class counts (recomputed from the rows on restore): snapshots
     * loaded from the checkpoint draw their classes from them */
    json_t *c = extra && g->label_counts ? json_array() : NULL;
    for (int k = 0; c && k < g->gen.num_classes; k++)
        json_array_append_new(c, json_real(g->label_counts[k]));
    if (c) json_object_set_new(extra, PG_GENERATOR_LABEL_COUNTS, c);
    /* the calibration targets, so a snapshot loaded from the checkpoint
     * serves calibrated rows (absent: older checkpoints, or off) */
    if (extra && g->cal) {
        json_t *cj = pg_calib_ldp_to_json(g->cal, g->cal_per);
        if (!cj) {
            json_decref(extra);
            return pg_error_set(err, PG_ENOMEM, "cannot save the calibration");
        }
        json_object_set_new(extra, "calib_ldp", cj);
    }
    return pg_generator_ckpt_save(extra, g->net, g->opt, &g->ema, NULL, 0, bytes, len, err);
}

static int egan_restore(const json_t *r, const pg_job_data *in, int threads,
                        const unsigned char *bytes, size_t len, pg_trainer **out, pg_error *err)
{
    *out = NULL;
    egan *g;
    int rc = egan_common(r, in, threads, &g, err);
    if (rc) return rc;
    pg_ckpt rest = {0};
    json_t *extra = NULL;
    long step = 0;
    rc = pg_generator_ckpt_open(&g->gen, "entropic_gan", r, bytes, len, g->batch, &g->net, &g->opt,
                                &g->ema, &extra, &step, &rest, err);
    if (rc == PG_OK) {
        const json_t *rng = json_object_get(extra, "rng");
        if ((rc = pg_rng_state_from_json(json_object_get(rng, "latent"), &g->latent_rng, err)) ||
            (rc = pg_rng_state_from_json(json_object_get(rng, "batch"), &g->batch_rng, err)) ||
            (rc = pg_rng_state_from_json(json_object_get(rng, "noise"), &g->noise_rng, err)))
            ;
        else
            g->step = step;
    }
    json_decref(extra);
    pg_ckpt_free(&rest);
    if (rc) {
        egan_destroy(&g->base);
        return rc;
    }
    *out = &g->base;
    return PG_OK;
}

static int egan_load_snapshot(const unsigned char *bytes, size_t len, pg_snapshot **out,
                              pg_error *err)
{
    int rc = pg_generator_load_snapshot(bytes, len, "entropic_gan", out, err);
    if (rc) return rc;
    /* A calibrated trainer served calibrated rows: so does the reload. */
    pg_nn *net = NULL;
    char *text = NULL;
    pg_ckpt rest = {0};
    rc = pg_nn_checkpoint_decode(bytes, len, 1, &net, NULL, &text, &rest, err);
    pg_nn_free(net);
    pg_ckpt_free(&rest);
    json_t *extra = rc == PG_OK ? json_loads(text ? text : "", 0, NULL) : NULL;
    free(text);
    const json_t *cj = json_object_get(extra, "calib_ldp");
    if (rc == PG_OK && cj) {
        const json_t *map = json_object_get(json_object_get(extra, "generator"), "table");
        pg_table *t = NULL;
        pg_calib_ldp *cal = NULL;
        size_t per = 0;
        if (!map || pg_table_from_json(map, &t, NULL) != PG_OK)
            rc = pg_error_set(err, PG_EFORMAT, "the checkpoint's calibration has no table map");
        else if ((rc = pg_calib_ldp_from_json(cj, t, pg_snapshot_num_classes(*out), &cal, &per,
                                              err)) == PG_OK) {
            pg_snapshot *inner = *out;
            *out = NULL;
            rc = pg_calib_ldp_wrap(cal, inner, per, out, err);
        }
        pg_calib_ldp_free(cal);
        pg_table_free(t);
    }
    json_decref(extra);
    if (rc) {
        pg_snapshot_release(*out);
        *out = NULL;
    }
    return rc;
}

static size_t egan_memory(const json_t *r, const pg_job_data *in)
{
    const pg_data_desc *desc = in->desc;
    size_t b = (size_t)pg_spec_int(r, "train.batch_size", 256), d = desc->d;
    size_t latent = (size_t)pg_spec_int(r, "model.latent_dim", 32);
    /* Generator: parameters, gradients, optimizer moments and the parameter
     * average with its scratch copy (6 copies), plus activations for the
     * batch; the hidden widths bound both. */
    size_t params = 0, acts = 0, prev = latent;
    const json_t *hidden = pg_spec_get(r, "model.hidden");
    for (size_t i = 0; i < json_array_size(hidden); i++) {
        size_t w = (size_t)json_integer_value(json_array_get(hidden, i));
        params += prev * w + w;
        acts += 4 * w; /* pre/post activation and their gradients */
        prev = w;
    }
    params += prev * d + d;
    acts += 4 * d;
    if (strcmp(pg_spec_str(r, "model.arch", "mlp"), "mlp") != 0) {
        params = 4u << 20; /* conv presets: a few million parameters at most */
        acts = 64 * d;
    }
    /* Sinkhorn workspace: the b x b cost/plan matrix dominates. */
    size_t ot = b * b + 16 * b + 2 * b * d;
    return sizeof(float) * (6 * params + b * acts + ot + 4 * b * d + b * latent);
}

const pg_method pg_method_entropic_gan = {
    .name = "entropic_gan",
    .summary =
        "Entropic W1/W2 GAN that recovers the clean distribution from locally "
        "privatized rows (Reshetova, Chen, Ozgur). The method for locally privatized "
        "tables: on credit_data privatized at a local epsilon of 1000 per row (with "
        "model.logit_gain 10) its rows trained a classifier to 0.77 (majority class 0.73, "
        "real data 0.80); at a local epsilon of 5 per row to 0.54. With the schema's label "
        "it is conditional by default, reading the privatized label through its "
        "randomized-response channel, and calibrates each class onto the means, spreads "
        "and frequencies the privatized rows give (calibration.class_means, no budget): "
        "0.80 and 0.71 (0.73 and 0.58 without; 0.774 before the numbers' quantile maps "
        "deconvolved from the reports, calib_ldp.h); at a local epsilon of 5 the reports show "
        "no class difference, so the classes get one law and no classifier beats the "
        "majority class reliably (0.70, 0.48-0.73, 4 of 10 runs above it; privgen "
        "privatize --split label, 1.86 of the 5 to the label: 0.72, 0.64-0.74, 3 of 10; "
        "docs/benchmarks.md, tables).",
    .accepts = PG_PRIVACY_LOCAL,
    .catalogue = egan_catalogue,
    .validate = egan_validate,
    .plan = egan_plan,
    .create = egan_create,
    .step = egan_step,
    .snapshot = egan_snapshot,
    .save = egan_save,
    .restore = egan_restore,
    .load_snapshot = egan_load_snapshot,
    .destroy = egan_destroy,
    .memory_estimate = egan_memory,
};
