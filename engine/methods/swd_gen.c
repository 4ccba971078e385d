/* swd_gen - a generator trained on the DP smoothed sliced-Wasserstein loss
 * (Rakotomamonjy & Ralaivola, paper 002 eq. 8; the DPSWgen baseline of paper
 * 004): each step releases the data's projections on fresh directions with
 * Gaussian noise exactly as swd_flow_r does (one release per step, all rows
 * or a fixed-size subsample without replacement), smooths the generated
 * side's projections with the same N(0, sigma^2), and descends
 * SW2^2(G(z) Theta + Z_X, Y Theta + Z_Y) with the gradient through the sorted
 * matching (engine/ot/sliced.h): dL/dX = G Theta^T, G = dL/d(projections).
 *
 * Defaults on small vector data (engine/methods/defaults.h): d directions
 * per release (one orthonormal block), min(n, 500) rows per release, 200
 * steps, clip norm R = max(|lo|, |hi|) of the declared range (unlabelled
 * central data), a [64, 64] generator with a d-dimensional latent and a tanh
 * output scaled to the declared range. They keep samples in the range and
 * finish in about a second, but do not learn 2-D toys at epsilon <= 10: the
 * 200 releases of 500 rows (sampling fraction 0.1 at n = 5000) need noise
 * multipliers S = 57 / 21 / 1.7 at epsilon 1 / 3 / 10 (delta 1e-5), a noise
 * std of 114 / 42 / 3.5 R per projection, and still 0.67 R at epsilon 1000
 * (15 % within 0.1 of the half circle there): docs/benchmarks.md, "Defaults".
 * Fewer releases would need a generator that learns in fewer steps, or
 * several steps per release (free post-processing, not built).
 *
 * Reused releases (train.steps_per_release r > 1): a release is made at
 * every step that is a multiple of r, so the job makes ceil(steps / r)
 * releases (what the plan composes); each step draws, with the seeded
 * latent stream, one of the releases made so far and fits its directions
 * and the Hazen quantiles of its noisy projections (at most 1024 levels),
 * with fresh latents and fresh smoothing noise: post-processing. The kept
 * releases are in the checkpoint, so a resume never releases again. Why: a
 * release's noise std is S x the table's diameter, and S grows with the
 * number of releases; on credit_data 10 releases instead of 2000 cut S at
 * epsilon 1000 from 1.1 to 0.079 (noise std 8 -> 0.57 against projections
 * of sd 0.3), and drawing from all of them (not only the newest) let the
 * last steps fit every release (noise-free: 0.80 against 0.73 accuracy).
 * Table defaults: defaults_table.c.
 *
 * Privacy: identical to swd_flow_r (derivation at the top of swd_flow.c):
 * sensitivity 2R sqrt(w) per release under replace-one adjacency, RDP
 * composed over steps, delta0 of a probabilistic bound charged per release.
 * Release noise and subsamples come from the secure generator created in
 * create()/restore(); the job seed drives initialization, latents, the
 * generated side's smoothing and the orthonormal directions (exact bound, so
 * a chosen seed gains nothing; random directions use the secure generator).
 *
 * Labels (labels.class_alpha = alpha > 0 on a labelled dataset, swd_spec.h):
 * private rows become [x ; alpha onehot(y)] before the clip to R, and the
 * release, its sensitivity bound and the directions live in d + C
 * dimensions (derivation in swd_flow.c). The generator is conditional;
 * generated rows are [G(z, c) ; alpha onehot(c)] with c uniform from the
 * latent stream, the label part fixed (no gradient). As in dp_sinkhorn the
 * generated classes are uniform: on a class-imbalanced dataset the joint
 * cannot be matched exactly and some rows of an over-generated class are
 * pulled toward other classes. On a labelled typed table the classes follow
 * a DP count of the label instead (labels.count_noise, charged in the plan).
 *
 * Class calibration (calibration.*, calib_wire.h; on by default on labelled
 * central tables): before the first step one Gaussian release of per-class
 * sums and counts of the encoded rows (calib_table.h) and, under the
 * default numeric rule "quantile", the quantile map released per class
 * (same cost as the pooled map, qmap.h). Replace-one moves the class
 * statistics by 2 in l2 against noise std sqrt(2) s: RDP alpha / s^2,
 * composed into the plan with the projections (swd_core.c). Every published
 * snapshot moves each class's samples onto the released category
 * frequencies and numeric CDFs (post-processing). Why: the projections are
 * noised at S x the schema's diameter, so at epsilon 5 the sliced loss
 * sees little more than the mean and the generator's class dependence is
 * noise (credit_data: accuracy 0.48, below the majority class 0.73), while
 * the class statistics see every row in full at a small share of the
 * budget (0.75 there, docs/benchmarks.md, swd_gen calibrated). The targets
 * and class CDFs travel in the checkpoint; a restore never releases again.
 * calibration.independence (calib_wire.h, post-processing) redraws each
 * categorical column and quantile-mapped number from its class's released
 * marginal alone; the defaults set it by dp_sinkhorn's rule
 * (defaults_table.c), with more of the budget to the releases, and where it
 * holds release each class's Gaussian copula too (calibration.copula_noise,
 * calib_copula.h: replace-one RDP 2 alpha / c^2, folded into the class
 * statistics' multiplier in the plan, calib_wire.h) so that the redrawn
 * columns keep their class's dependence.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/alloc.h"
#include "engine/data/dataset.h"
#include "engine/data/table_ldp.h"
#include "engine/methods/calib_wire.h"
#include "engine/methods/generator.h"
#include "engine/methods/label_count.h"
#include "engine/methods/qmap_spec.h"
#include "engine/methods/snapshot.h"
#include "engine/methods/swd.h"
#include "engine/methods/swd_spec.h"
#include "engine/methods/trainer.h"
#include "engine/methods/defaults.h"
#include "engine/methods/warnings.h"
#include "engine/ot/sliced.h"
#include "engine/privacy/privacy.h"

#define DIR_STREAM_BASE ((uint64_t)1 << 40)
/* Quantile levels kept per direction of a reused release. */
#define PG_SWD_GEN_LEVELS 1024
#define POOL_THETA        "swd_pool_theta"
#define POOL_Q            "swd_pool_q"

static const char *const OPTIMIZERS[] = {"adam", "rmsprop", "sgd", "adamw", NULL};

static const pg_param GEN_PARAMS[] = {
    PG_GENERATOR_PARAM_ROWS,
    PG_QMAP_PARAM_ROWS,
    PG_SWD_PRIVACY_ROWS,
    PG_SWD_PROJECTION_ROWS,
    PG_SWD_LABEL_ROWS,
    PG_CALIB_WIRE_PARAM_ROWS,
    {"labels.count_noise", PG_PARAM_NUM, "10", 0, 1e6, NULL, 0, PG_PARAM_EXCLUSIVE_MIN,
     "Noise multiplier s of the DP count of each class (label_count.h) on a labelled typed "
     "table: the generated classes of training and of samples follow the count. One Gaussian "
     "release (replace-one: RDP alpha / s^2) composed into the plan."},
    {"train.steps", PG_PARAM_INT, "2000", 1, 1e7, NULL, 0, 0,
     "Training steps (one release each; small vector data: 200)."},
    {"train.steps_per_release", PG_PARAM_INT, "1", 1, 1e6, NULL, 0, 0,
     "Generator steps on each release (post-processing: the release's noisy projections are "
     "reused with fresh latents and smoothing); the job makes ceil(steps / this) releases."},
    {"train.batch_size", PG_PARAM_INT, NULL, 2, 1e8, NULL, 0, PG_PARAM_OPTIONAL,
     "Rows per release, drawn without replacement (default: every row each step; small vector "
     "data: min(rows, 500))."},
    {"train.gen_batch", PG_PARAM_INT, "256", 2, 65536, NULL, 0, 0, "Generated samples per step."},
    {"train.optimizer", PG_PARAM_STR, "\"adam\"", 0, 0, OPTIMIZERS, 0, 0, "Optimizer."},
    {"train.lr", PG_PARAM_NUM, "0.001", 0, 10, NULL, 0, PG_PARAM_EXCLUSIVE_MIN, "Learning rate."},
    {"train.weight_decay", PG_PARAM_NUM, "0", 0, 1, NULL, 0, 0, "Weight decay."},
    {"seed", PG_PARAM_INT, NULL, 0, 9007199254740991.0, NULL, 0, PG_PARAM_OPTIONAL,
     "Seed of initialization, latents, public directions and sampling (never of DP noise)."},
    {"checkpoint_every", PG_PARAM_INT, "100", 1, 1e7, NULL, 0, 0,
     "Steps between checkpoints and published snapshots."},
    {0},
};

static const char *const IGNORED[] = {"dataset_id", "method", "public_dataset_id", NULL};

typedef struct sgen {
    pg_trainer base;
    long releases; /* must follow base (pg_swd_trainer_releases) */
    pg_generator gen;
    pg_nn *net;
    pg_nn_opt *opt;
    pg_swd_privacy priv;
    double S, noise_std;
    bool orthonormal;
    size_t n, m, b, d, k;
    size_t classes, D; /* label coordinates appended to each row; D = d + classes */
    double alpha;
    uint64_t seed;
    long step, steps, per_release;
    /* Releases kept for reuse (per_release > 1): entry j holds release j's
     * directions (D x k) and the Hazen quantiles of its sorted noisy
     * projections at L levels (k x L). */
    size_t pool_cap, L;
    float *pool_theta, *pool_q;
    float *y, *ybat, *theta, *z, *xbuf, *px, *gp, *grad;
    int32_t *labels;                /* generated labels of a step (conditional) */
    double *label_counts, *label_w; /* released class counts, proportions (or NULL) */
    uint32_t *rowperm;
    pg_calib_wire cal; /* per-class table calibration (calib_wire.h) */
    pg_swd_ws rel;     /* release workspace: ws.py holds the noisy projections */
    pg_sw_ws sw;
    pg_rng latent_rng, noise_rng, secure;
} sgen;

extern const pg_method pg_method_swd_gen;

static json_t *gen_catalogue(void)
{
    return pg_spec_catalogue(GEN_PARAMS);
}

static void shape_of(const json_t *r, size_t n, size_t *k, long *releases, size_t *m)
{
    *k = (size_t)pg_spec_int(r, "projections.per_step", 200);
    long steps = pg_spec_int(r, "train.steps", 1),
         per = pg_spec_int(r, "train.steps_per_release", 1);
    *releases = (steps + per - 1) / per;
    *m = (size_t)pg_spec_int(r, "train.batch_size", (long)n);
    if (*m > n) *m = n;
}

static int gen_validate(const json_t *spec, const pg_job_data *in, json_t **resolved,
                        pg_spec_errors *errors, pg_error *err)
{
    const pg_data_desc *desc = in->desc;
    *resolved = NULL;
    int before = errors->count;
    pg_job_data_no_public(in, "swd_gen", errors);
    json_t *r = NULL;
    json_t *filled = pg_defaults_fill("swd_gen", spec, desc);
    if (!filled) return pg_error_set(err, PG_ENOMEM, "cannot copy the job spec");
    pg_spec_resolve(GEN_PARAMS, filled, IGNORED, &r, errors);
    json_decref(filled);
    if (!r || errors->count != before) {
        json_decref(r);
        return PG_EINVAL;
    }
    pg_swd_spec_data_checks(desc, errors);
    if (pg_spec_get(r, "train.batch_size") &&
        (size_t)pg_spec_int(r, "train.batch_size", 0) > desc->n)
        pg_spec_error_add(errors, "train.batch_size", "is larger than the dataset's %zu rows",
                          desc->n);
    pg_swd_spec_labels(r, desc, errors);
    pg_qmap_spec_check(r, desc, errors);
    pg_calib_wire_check(r, desc, errors);
    double alpha;
    bool labelled = pg_swd_spec_classes(r, desc, &alpha) > 0;
    /* Class conditioning and a conditional generator go together: the
     * generated rows are [G(z, c); alpha onehot(c)]. */
    const json_t *cond = pg_spec_get(spec, "model.conditional");
    if (labelled && cond && !json_is_true(cond))
        pg_spec_error_add(errors, "model.conditional",
                          "labels.class_alpha > 0 on a labelled dataset needs a conditional "
                          "generator: set labels.class_alpha to 0 for an unconditional one");
    else if (labelled)
        pg_spec_set(r, "model.conditional", json_true());
    else if (pg_spec_bool(r, "model.conditional", false))
        pg_spec_error_add(errors, "model.conditional",
                          "swd_gen conditions on labels only through labels.class_alpha > 0 on "
                          "a labelled dataset");
    pg_generator g;
    if (pg_generator_config(r, desc, &g, errors, err) == PG_OK) {
        pg_spec_set(r, "model.latent_dim", json_integer((json_int_t)g.latent_dim));
        pg_generator_free(&g);
    }
    if (errors->count == before) {
        size_t k, m;
        long releases;
        shape_of(r, desc->n, &k, &releases, &m);
        pg_swd_privacy p;
        double S;
        pg_swd_spec_privacy(r, desc, k, releases, (double)m / (double)desc->n, &p, &S, errors);
    }
    if (errors->count != before) {
        json_decref(r);
        return PG_EINVAL;
    }
    *resolved = r;
    return PG_OK;
}

static int gen_plan(const json_t *r, const pg_job_data *in, pg_privacy_plan *plan, pg_error *err)
{
    const pg_data_desc *desc = in->desc;
    size_t k, m;
    long releases;
    shape_of(r, desc->n, &k, &releases, &m);
    double gamma = (double)m / (double)desc->n;
    return pg_swd_spec_plan(r, desc, k, releases, pg_spec_int(r, "train.steps", 1), gamma,
                            gamma < 1.0 ? "gaussian_projection_per_step_subsampled_wor"
                                        : "gaussian_projection_per_step",
                            plan, err);
}

static void gen_destroy(pg_trainer *t)
{
    sgen *g = (sgen *)t;
    if (!g) return;
    pg_generator_train_free(&g->gen, g->net, g->opt, NULL);
    pg_free(g->y);
    pg_free(g->ybat);
    pg_free(g->theta);
    pg_free(g->z);
    pg_free(g->xbuf);
    pg_free(g->px);
    pg_free(g->gp);
    pg_free(g->grad);
    pg_free(g->labels);
    free(g->label_counts);
    free(g->label_w);
    pg_free(g->rowperm);
    pg_free(g->pool_theta);
    pg_free(g->pool_q);
    pg_swd_ws_free(&g->rel);
    pg_sw_ws_free(&g->sw);
    pg_calib_wire_free(&g->cal);
    free(g);
}

/* The private rows as released: [x ; alpha onehot(y)], the numeric units of
 * x through the quantile map when there is one (a row-wise map into the
 * same ranges, so rows stay valid encodings and the schema's diameter still
 * bounds their distance), then clipped to R. */
static int fill_rows(sgen *g, const pg_dataset *data, pg_error *err)
{
    pg_swd_augment(data->x, data->labels, g->n, g->d, g->classes, g->alpha, g->y);
    pg_qmap_encode(g->gen.qmap, g->y, g->D, g->n);
    return pg_privacy_clip_l2(g->y, g->n, g->D, g->priv.clip, err);
}

static int gen_common(const json_t *r, const pg_job_data *in, sgen **out, pg_error *err)
{
    const pg_data_desc *desc = in->desc;
    const pg_dataset *data = in->rows;
    *out = NULL;
    if (!data || data->n == 0 || data->d != desc->d || data->n != desc->n)
        return pg_error_set(err, PG_EINVAL, "the dataset is empty or its shape changed");
    /* The sensitivity uses the schema's diameter (swd_spec.c): it holds for
     * valid encodings only. */
    if (desc->table && desc->table->width == desc->d) {
        int vrc = pg_table_check_encoded(desc->table, data->x, data->n, err);
        if (vrc) return vrc;
    }
    sgen *g = calloc(1, sizeof *g);
    if (!g) return pg_error_set(err, PG_ENOMEM, "cannot allocate the trainer");
    g->base.method = &pg_method_swd_gen;
    pg_spec_errors errors = {0};
    int rc = pg_generator_config(r, desc, &g->gen, &errors, err);
    if (rc) {
        free(g);
        return errors.count ? pg_error_set(err, PG_EINVAL, "%s: %s", errors.items[0].field,
                                           errors.items[0].message)
                            : rc;
    }
    long releases;
    g->n = data->n;
    g->d = desc->d;
    g->classes = pg_swd_spec_classes(r, desc, &g->alpha);
    g->D = g->d + g->classes;
    if (g->classes &&
        ((size_t)g->gen.num_classes != g->classes || data->num_classes != desc->num_classes ||
         !data->labels ||
         pg_dataset_check_labels(data->labels, data->n, data->num_classes, NULL, err))) {
        gen_destroy(&g->base);
        return pg_error_set(err, PG_EINVAL,
                            "class conditioning needs a conditional generator and the dataset's "
                            "labels");
    }
    shape_of(r, g->n, &g->k, &releases, &g->m);
    rc = pg_swd_spec_privacy_get(r, desc, g->k, releases, (double)g->m / (double)g->n, &g->priv,
                                 &g->S, err);
    if (rc) {
        gen_destroy(&g->base);
        return rc;
    }
    g->noise_std = g->S * g->priv.sensitivity;
    if ((rc = pg_calib_wire_init(&g->cal, r, desc, &g->gen, err))) {
        gen_destroy(&g->base);
        return rc;
    }
    if (g->priv.count_noise > 0.0 &&
        (!(g->label_counts = calloc(g->classes, sizeof *g->label_counts)) ||
         !(g->label_w = calloc(g->classes, sizeof *g->label_w)))) {
        gen_destroy(&g->base);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate the label counts");
    }
    g->orthonormal = strcmp(pg_spec_str(r, "projections.kind", "orthonormal"), "orthonormal") == 0;
    g->steps = pg_spec_int(r, "train.steps", 1);
    g->per_release = pg_spec_int(r, "train.steps_per_release", 1);
    g->b = (size_t)pg_spec_int(r, "train.gen_batch", 256);
    g->seed = (uint64_t)pg_spec_int(r, "seed", 0);
    pg_rng_seeded(&g->latent_rng, g->seed, PG_STREAM_LATENT);
    pg_rng_seeded(&g->noise_rng, g->seed, PG_STREAM_NOISE);
    /* Released and generated rows are D = d + classes wide (label part
     * last, clipped together with x). */
    size_t n = g->n, D = g->D, b = g->b, k = g->k, m = g->m;
    g->y = pg_alloc_f32(n * D);
    g->theta = pg_alloc_f32(D * k);
    g->z = pg_alloc_f32(b * g->gen.latent_dim);
    g->xbuf = pg_alloc_f32(b * D);
    g->px = pg_alloc_f32(k * b);
    g->gp = pg_alloc_f32(k * b);
    g->grad = pg_alloc_f32(b * D);
    g->labels = pg_calloc(b, sizeof(int32_t));
    if (m < n) {
        g->ybat = pg_alloc_f32(m * D);
        g->rowperm = pg_alloc(n * sizeof(uint32_t));
    }
    if (g->per_release > 1) {
        g->pool_cap = (size_t)releases;
        g->L = m < PG_SWD_GEN_LEVELS ? m : PG_SWD_GEN_LEVELS;
        g->pool_theta = pg_alloc_f32(g->pool_cap * D * k);
        g->pool_q = pg_alloc_f32(g->pool_cap * k * g->L);
    }
    if (!g->y || !g->theta || !g->z || !g->xbuf || !g->px || !g->gp || !g->grad || !g->labels ||
        (m < n && (!g->ybat || !g->rowperm)) || (g->pool_cap && (!g->pool_theta || !g->pool_q))) {
        gen_destroy(&g->base);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate training buffers");
    }
    if ((rc = fill_rows(g, data, err)) || (rc = pg_swd_ws_init(&g->rel, 1, D, k, m, 2, 0, err)) ||
        (rc = pg_sw_ws_init(&g->sw, b, m, k, D, err)) || (rc = pg_rng_secure(&g->secure, err))) {
        gen_destroy(&g->base);
        return rc;
    }
    *out = g;
    return PG_OK;
}

static int gen_create(const json_t *r, const pg_job_data *in, int threads, pg_trainer **out,
                      pg_error *err)
{
    (void)threads;
    *out = NULL;
    sgen *g;
    int rc = gen_common(r, in, &g, err);
    if (rc) return rc;
    rc = pg_generator_train_init(&g->gen, r, g->b, g->seed, 1e-3, &g->net, &g->opt, NULL, err);
    /* The job's one quantile map (replace-one, qmap.h; per class under
     * calibration.numeric "quantile") and class statistics (calib_wire.h),
     * both charged in the plan: released before the first step, then the
     * rows are mapped through the map. */
    if (rc == PG_OK && (g->priv.qmap_noise > 0.0 || g->cal.sigma > 0.0) &&
        (rc = pg_calib_wire_release(&g->cal, r, in->desc, &g->secure, in->rows, 1, &g->gen, err)) ==
            PG_OK)
        rc = fill_rows(g, in->rows, err);
    if (rc == PG_OK) pg_warn_qmap_empty(&g->base, g->gen.qmap, in->desc->table); /* released */
    if (rc == PG_OK && g->cal.quantile)
        pg_warn_class_qmap_empty(&g->base, g->gen.qmap, g->gen.num_classes, g->cal.class_cdf,
                                 in->desc->table);
    /* The one label count of the job (charged in the plan); a restore reads
     * it back from the checkpoint instead of releasing again. */
    if (rc == PG_OK && g->label_counts) {
        rc = pg_label_count_release(&g->secure, in->rows->labels, in->rows->n, (int)g->classes,
                                    g->priv.count_noise, g->label_counts, err);
        if (rc == PG_OK) pg_label_count_weights(g->label_counts, (int)g->classes, g->label_w);
        if (rc == PG_OK) /* released: a class lost in the noise is said */
            pg_warn_class_counts(&g->base, in->desc->table, g->label_counts, (int)g->classes,
                                 g->priv.count_noise);
    }
    if (rc) {
        gen_destroy(&g->base);
        return rc;
    }
    *out = &g->base;
    return PG_OK;
}

/* The only data access of a step: fresh directions, then the release. */
static int release(sgen *g, pg_error *err)
{
    size_t d = g->D, k = g->k;
    pg_mat tm = pg_mat_view(g->theta, d, k);
    int rc;
    if (g->orthonormal) {
        pg_rng dr;
        pg_rng_seeded(&dr, g->seed, DIR_STREAM_BASE + (uint64_t)g->step);
        rc = pg_sw_directions(&dr, true, &tm, err);
    } else {
        rc = pg_sw_directions(&g->secure, false, &tm, err);
    }
    if (rc) return rc;
    const float *rows = g->y;
    if (g->m < g->n) {
        for (size_t i = 0; i < g->n; i++) g->rowperm[i] = (uint32_t)i;
        for (size_t c = 0; c < g->m; c++) {
            size_t j = c + (size_t)pg_rng_below(&g->secure, g->n - c);
            uint32_t t = g->rowperm[c];
            g->rowperm[c] = g->rowperm[j];
            g->rowperm[j] = t;
            memcpy(g->ybat + c * d, g->y + (size_t)g->rowperm[c] * d, d * sizeof(float));
        }
        rows = g->ybat;
    }
    rc = pg_swd_release(&g->rel, &g->secure, rows, g->m, g->theta, k, g->noise_std, NULL, 0, err);
    if (rc) return rc;
    if (g->pool_cap) {
        /* kept for the steps that reuse it (post-processing of the release) */
        size_t j = (size_t)g->releases, L = g->L;
        if (j >= g->pool_cap) return pg_error_set(err, PG_EINVAL, "release pool overflow");
        memcpy(g->pool_theta + j * d * k, g->theta, d * k * sizeof(float));
        for (size_t a = 0; a < k; a++) {
            const float *row = g->rel.py + a * g->m;
            float *qa = g->pool_q + (j * k + a) * L;
            if (L == g->m)
                memcpy(qa, row, L * sizeof(float));
            else
                for (size_t l = 0; l < L; l++)
                    qa[l] = pg_sw_quantile(row, g->m, ((double)l + 0.5) / (double)L);
        }
    }
    g->releases++;
    return PG_OK;
}

static int gen_step(pg_trainer *t, pg_step_report *rep, pg_error *err)
{
    sgen *g = (sgen *)t;
    memset(rep, 0, sizeof *rep);
    rep->step = g->step;
    if (g->step >= g->steps) {
        rep->done = true;
        return pg_swd_privacy_epsilon(&g->priv, g->S, g->releases, &rep->epsilon_spent, err);
    }
    int rc = g->step % g->per_release == 0 ? release(g, err) : PG_OK;
    if (rc) return rc;
    size_t b = g->b, d = g->d, D = g->D, k = g->k, C = g->classes;
    pg_nn_latent_sample(&g->gen.latent, &g->latent_rng, g->z, b * g->gen.latent_dim);
    for (size_t i = 0; i < b && C; i++) {
        if (!g->label_w) {
            g->labels[i] = (int32_t)pg_rng_below(&g->latent_rng, (uint64_t)C);
            continue;
        }
        /* the released proportions: the joint of (class, row) can match */
        double u = pg_rng_uniform(&g->latent_rng), acc = 0;
        size_t c = C - 1;
        for (size_t j = 0; j + 1 < C; j++)
            if (u < (acc += g->label_w[j])) {
                c = j;
                break;
            }
        g->labels[i] = (int32_t)c;
    }
    const float *out;
    rc = pg_nn_forward(g->net, g->z, C ? g->labels : NULL, b, &out, err);
    if (rc) return rc;
    /* Generated rows [G(z, c); alpha onehot(c)]: the label part is fixed,
     * only the first d columns carry gradient. */
    pg_swd_augment(out, g->labels, b, d, C, g->alpha, g->xbuf);
    pg_generator_to_data(&g->gen, &g->latent_rng, g->xbuf, D, b);
    /* The step's directions and data quantiles: its own release, or (steps
     * reusing releases) one drawn uniformly from those made so far with the
     * seeded stream, so the last steps fit every release, not only the
     * newest one. */
    float *theta = g->theta, *py = g->rel.py;
    size_t ycols = g->m;
    if (g->pool_cap) {
        size_t j = (size_t)pg_rng_below(&g->latent_rng, (uint64_t)g->releases);
        theta = g->pool_theta + j * D * k;
        py = g->pool_q + j * k * g->L;
        ycols = g->L;
    }
    pg_mat xm = pg_mat_view(g->xbuf, b, D), tm = pg_mat_view(theta, D, k);
    pg_mat pm = pg_mat_view(g->px, k, b), pym = pg_mat_view(py, k, ycols);
    pg_mat gm = pg_mat_view(g->gp, k, b), grad = pg_mat_view(g->grad, b, D);
    rc = pg_sw_project(&xm, &tm, &pm, err);
    if (rc) return rc;
    /* Smooth the generated side like the data side (paper 002: both
     * measures convolved with N(0, sigma^2)). Not a DP mechanism: seeded. */
    for (size_t i = 0; i < k * b; i++)
        g->px[i] += (float)(g->noise_std * pg_rng_normal(&g->noise_rng));
    double loss;
    rc = pg_sw2_proj(&g->sw, &pm, &pym, &loss, &gm, err);
    if (rc == PG_OK) rc = pg_gemm(1.0f, &gm, true, &tm, true, 0.0f, &grad, err);
    if (rc) return rc;
    if (!isfinite(loss)) return pg_error_set(err, PG_ENUMERIC, "the SW loss is not finite");
    /* Drop the label columns: rows move down in place (i d <= i D). */
    for (size_t i = 1; i < b && C; i++)
        memmove(g->grad + i * d, g->grad + i * D, d * sizeof(float));
    pg_generator_grad_to_net(&g->gen, g->xbuf, D, g->grad, b);
    pg_nn_zero_grad(g->net);
    rc = pg_nn_backward(g->net, g->grad, NULL, err);
    if (rc == PG_OK) rc = pg_nn_opt_step_net(g->opt, g->net, err);
    if (rc) return rc;
    g->step++;
    rep->step = g->step;
    rep->loss = loss;
    rep->done = g->step >= g->steps;
    return pg_swd_privacy_epsilon(&g->priv, g->S, g->releases, &rep->epsilon_spent, err);
}

static int gen_snapshot(pg_trainer *t, pg_snapshot **out, pg_error *err)
{
    sgen *g = (sgen *)t;
    int rc = pg_calib_wire_snapshot(&g->cal, &g->gen, g->net, g->step, out, err);
    /* Samples follow the released class proportions (post-processing). */
    if (rc == PG_OK && g->label_w && (rc = pg_snapshot_set_class_weights(*out, g->label_w, err))) {
        pg_snapshot_release(*out);
        *out = NULL;
    }
    return rc;
}

static int gen_save(pg_trainer *t, unsigned char **bytes, size_t *len, pg_error *err)
{
    sgen *g = (sgen *)t;
    json_t *extra =
        json_pack("{s:s,s:I,s:I,s:o,s:{s:o,s:o}}", "method", "swd_gen", "step", (json_int_t)g->step,
                  "releases", (json_int_t)g->releases, "generator", pg_generator_to_json(&g->gen),
                  "rng", "latent", pg_rng_state_to_json(&g->latent_rng), "noise",
                  pg_rng_state_to_json(&g->noise_rng));
    /* Unconditional runs keep the original header (no label fields). */
    if (extra && g->classes)
        json_object_set_new(
            extra, "labels",
            json_pack("{s:I,s:f}", "classes", (json_int_t)g->classes, "alpha", g->alpha));
    if (extra && g->label_counts) {
        json_object_set_new(json_object_get(extra, "labels"), "count_noise",
                            json_real(g->priv.count_noise));
        json_t *c = json_array();
        for (size_t k = 0; c && k < g->classes; k++)
            json_array_append_new(c, json_real(g->label_counts[k]));
        json_object_set_new(extra, PG_GENERATOR_LABEL_COUNTS, c);
    }
    if (extra && g->priv.qmap_noise > 0.0 &&
        json_object_set_new(extra, "privacy",
                            json_pack("{s:f}", "quantile_noise", g->priv.qmap_noise))) {
        json_decref(extra);
        extra = NULL;
    }
    /* The sub-bins' release (charged in the plan, qmap_spec.h). */
    if (extra && g->priv.qmap_noise > 0.0 &&
        pg_qmap_spec_save_sub(json_object_get(extra, "privacy"), &g->gen)) {
        json_decref(extra);
        extra = NULL;
    }
    /* The kept releases: a resume reuses them, it never releases again. */
    size_t made = (size_t)g->releases, nt = g->pool_cap && made ? 2 : 0, nc = 0;
    pg_ckpt_tensor more[5] = {
        {.name = POOL_THETA, .ndim = 2, .dims = {made, g->D * g->k}, .data = g->pool_theta},
        {.name = POOL_Q, .ndim = 2, .dims = {made, g->k * g->L}, .data = g->pool_q}};
    /* The class statistics (and CDFs) after them. */
    int rc = extra ? pg_calib_wire_save(&g->cal, extra, more + nt, &nc, err)
                   : pg_error_set(err, PG_ENOMEM, "cannot write the checkpoint header");
    if (rc) {
        json_decref(extra);
        return rc;
    }
    return pg_generator_ckpt_save(extra, g->net, g->opt, NULL, more, nt + nc, bytes, len, err);
}

/* Releases made before step s: one at each step that is a multiple of
 * train.steps_per_release. */
static long releases_before(const sgen *g, long s)
{
    return (s + g->per_release - 1) / g->per_release;
}

/* The kept releases come back from the checkpoint (drawing them again would
 * be releases the plan never charged); every value must be finite. */
static int restore_pool(sgen *g, const pg_ckpt *rest, size_t made, pg_error *err)
{
    if (!g->pool_cap || made == 0) return PG_OK;
    const pg_ckpt_tensor *th = pg_ckpt_find(rest, POOL_THETA), *q = pg_ckpt_find(rest, POOL_Q);
    size_t a = g->D * g->k, b = g->k * g->L;
    bool ok = made <= g->pool_cap && th && q && th->ndim == 2 && q->ndim == 2 &&
              th->dims[0] == made && th->dims[1] == a && q->dims[0] == made && q->dims[1] == b;
    for (size_t i = 0; ok && i < made * a; i++) ok = isfinite(th->data[i]);
    for (size_t i = 0; ok && i < made * b; i++) ok = isfinite(q->data[i]);
    if (!ok)
        return pg_error_set(err, PG_EFORMAT,
                            "the checkpoint's kept releases are missing or "
                            "malformed");
    memcpy(g->pool_theta, th->data, made * a * sizeof(float));
    memcpy(g->pool_q, q->data, made * b * sizeof(float));
    return PG_OK;
}

/* Checkpoints without "labels" (unconditional, or written before labels
 * existed) match only an unconditional spec. */
static bool labels_match(const sgen *g, const json_t *extra)
{
    const json_t *l = json_object_get(extra, "labels");
    json_int_t classes = json_integer_value(json_object_get(l, "classes"));
    double alpha = json_number_value(json_object_get(l, "alpha"));
    pg_generator saved;
    if (pg_generator_from_json(json_object_get(extra, "generator"), &saved, NULL) != PG_OK)
        return false;
    int saved_classes = saved.num_classes;
    pg_generator_free(&saved);
    if (saved_classes != g->gen.num_classes) return false;
    const json_t *cn = json_object_get(l, "count_noise");
    if (g->label_counts ? !cn || json_number_value(cn) != g->priv.count_noise : cn != NULL)
        return false;
    return (size_t)classes == g->classes && (g->classes == 0 || alpha == g->alpha);
}

static int gen_restore(const json_t *r, const pg_job_data *in, int threads,
                       const unsigned char *bytes, size_t len, pg_trainer **out, pg_error *err)
{
    (void)threads;
    *out = NULL;
    sgen *g;
    int rc = gen_common(r, in, &g, err);
    if (rc) return rc;
    json_t *extra = NULL;
    long step = 0;
    pg_ckpt rest = {0};
    rc = pg_generator_ckpt_open(&g->gen, "swd_gen", r, bytes, len, g->b, &g->net, &g->opt, NULL,
                                &extra, &step, &rest, err);
    if (rc == PG_OK) {
        const json_t *rng = json_object_get(extra, "rng");
        json_int_t rel = json_integer_value(json_object_get(extra, "releases"));
        if (step < 0 || step > g->steps || rel != releases_before(g, step))
            rc = pg_error_set(err, PG_EFORMAT, "not a swd_gen checkpoint of this spec");
        else if (!labels_match(g, extra))
            rc = pg_error_set(err, PG_EFORMAT,
                              "the checkpoint was trained with a different class conditioning "
                              "(labels.class_alpha) than this spec");
        else if ((rc = pg_rng_state_from_json(json_object_get(rng, "latent"), &g->latent_rng,
                                              err)) ||
                 (rc = pg_rng_state_from_json(json_object_get(rng, "noise"), &g->noise_rng, err)))
            ;
        else if (g->label_counts && (rc = pg_generator_label_counts_from_json(
                                         json_object_get(extra, PG_GENERATOR_LABEL_COUNTS),
                                         (int)g->classes, g->label_counts, err)))
            ;
        else if ((rc = pg_qmap_spec_restore(r, in->desc, extra, &g->gen, err)) ||
                 (rc = pg_calib_wire_restore(&g->cal, extra, &rest, &g->gen, err)) ||
                 (rc = fill_rows(g, in->rows, err)) ||
                 (rc = restore_pool(g, &rest, (size_t)rel, err)))
            ;
        else {
            if (g->label_counts)
                pg_label_count_weights(g->label_counts, (int)g->classes, g->label_w);
            g->step = step;
            g->releases = (long)rel;
        }
    }
    json_decref(extra);
    pg_ckpt_free(&rest);
    if (rc) {
        gen_destroy(&g->base);
        return rc;
    }
    *out = &g->base;
    return PG_OK;
}

static int gen_load_snapshot(const unsigned char *bytes, size_t len, pg_snapshot **out,
                             pg_error *err)
{
    return pg_generator_load_snapshot(bytes, len, "swd_gen", out, err);
}

const pg_method pg_method_swd_gen = {
    .name = "swd_gen",
    .summary =
        "Generator trained on the DP smoothed sliced-Wasserstein loss, one noisy "
        "projection release per step (Rakotomamonjy & Ralaivola, DP-SWD). It does not "
        "learn small 2-D data at epsilon <= 10: its defaults put at most 8 % of samples "
        "within 0.1 of a half circle at epsilon 1, 3 or 10 (its 200 releases add noise of "
        "std 3.5 R to each projection at epsilon 10, R the clip norm; 15 % at epsilon "
        "1000); samples stay in the declared range (tanh output). On a labelled typed "
        "table its classes follow a DP count of the label, its numbers pass through a DP "
        "quantile map, its samples are moved onto DP per-class category frequencies and "
        "per-class numeric CDFs (calibration.*, all charged in the plan; where that release "
        "pins each class's marginals down, at any epsilon, each class's released marginals "
        "are redrawn, calibration.independence, through a DP Gaussian copula of the class, "
        "calibration.copula_noise, and the generator's samples are then not used but for "
        "the shape of numbers inside bins without released sub-bins: 0.78 at epsilon 5 on "
        "credit_data, 2 runs, 0.79 at 1000, 0.777-0.797 over 12 runs, with its releases' noise "
        "floors half dp_sinkhorn's since replace-one doubles what a row moves), and its "
        "table defaults make 10 "
        "releases of all rows, each reused for 100 steps: on credit_data its rows trained "
        "a classifier to 0.78 (0.77-0.80 over 11 runs) at epsilon 1000 with the "
        "generator's dependence and 0.76 (0.74-0.77 over 5) at epsilon 5 "
        "(0.66-0.70 and 0.48-0.60 without the calibration; majority class 0.73, real "
        "rows 0.80); on attrition 0.85-0.87 at 1000 (2 runs; 0.73 with the generator's "
        "dependence), above its majority class 0.83, and 0.83 at 5. On small tables the marginal "
        "methods (aim, mst) do better "
        "(docs/benchmarks.md, swd_gen calibrated).",
    .accepts = PG_PRIVACY_CENTRAL,
    .catalogue = gen_catalogue,
    .validate = gen_validate,
    .plan = gen_plan,
    .create = gen_create,
    .step = gen_step,
    .snapshot = gen_snapshot,
    .save = gen_save,
    .restore = gen_restore,
    .load_snapshot = gen_load_snapshot,
    .destroy = gen_destroy,
};
