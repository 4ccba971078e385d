/* swd_flow, swd_flow_r - differentially private sliced-Wasserstein flows
 * (Sebag et al., paper 004 section 4, Algorithms 1-2, on Rakotomamonjy &
 * Ralaivola, paper 002). Non-parametric: N particles move along the smoothed
 * SW2 gradient flow toward the data; the data is seen only through noisy
 * projections (engine/methods/swd.h).
 *
 * swd_flow (fixed pool): N_theta directions drawn once; P_Y = Y Theta + Z
 * released ONCE, before the first step; each step flows along M_theta of the
 * pool. The data copy is dropped right after the release. swd_flow_r: fresh
 * directions and a fresh release every step, on all rows or on a fixed-size
 * subsample drawn without replacement by the secure generator.
 *
 * Privacy derivation. Rows are clipped to l2 norm R; neighbouring datasets
 * have the same size and differ in one row (replace-one), so the rows differ
 * by at most 2R. For a release on k directions, ||(y - y') Theta||_F^2 <=
 * 4 R^2 w with w = ceil(k / d) for orthonormal blocks (exact: each block is
 * an isometry onto its span) or, for i.i.d. uniform directions, w from
 * pg_swd_sensitivity with failure probability delta0 per release (Chernoff by
 * default; Bernstein; CLT only as a flagged approximation). A release is then
 * the Gaussian mechanism with sensitivity 2R sqrt(w) and noise std
 * S * 2R sqrt(w) (S = noise multiplier): RDP alpha / (2 S^2); subsamples of m
 * out of n without replacement use the Wang-Balle-Kasiviswanathan bound (the
 * replace-one analysis matching this adjacency). swd_flow charges one
 * release for the whole pool (M_theta subsets are post-processing), swd_flow_r
 * composes `steps` releases. Epsilon is reported at delta - releases * delta0:
 * the total delta includes every release's delta0 once (union bound over the
 * bound's failure events). The seeds' code redraws the noise each step while
 * counting one release and spends delta0 twice; here each release is counted.
 *
 * Directions are data-independent. Orthonormal blocks come from the job's
 * seed: the exact bound holds for every Theta, so a user who picks the seed
 * gains nothing. Random unit directions come from the secure generator: their
 * bound holds only with probability 1 - delta0 over Theta, which a chosen
 * seed could defeat. Both are stored for replay (they are public outputs).
 *
 * Labels (labels.class_alpha = alpha > 0 on a labelled dataset, swd_spec.h):
 * every private row becomes [x ; alpha onehot(y)] before the clip to R, so
 * the replace-one bound above holds unchanged with d replaced by d + C
 * everywhere (w and the random-direction bounds are evaluated at d + C). The
 * labels reach the output only through the release. Particles live in
 * d + C dimensions with clamped label coordinates: particle i has a fixed
 * class c_i (balanced over classes, from the job seed) and its label part is
 * alpha onehot(c_i) for the whole flow; drift and diffusion move the feature
 * part only. Projections mix both blocks, so matching the released joint
 * quantiles pushes class-c particles toward class c's features. Clamping
 * only changes how the released tables are used (which coordinates the
 * post-processing moves): privacy is unchanged. The class proportions are
 * assumed uniform, because the data's proportions are private (estimating
 * them would cost budget): on imbalanced data part of a frequent class's
 * mass goes to particles of the rarer ones. Sampling label k returns class-k
 * particles directly; replay starts fresh chunks with the training's
 * balanced classes (the particles interact, so a chunk of class k alone
 * would not follow the trained flow) and keeps their class-k particles.
 * (An earlier version let label coordinates move and read labels off their
 * argmax: on Fashion-MNIST latents that left the class link at chance.)
 *
 * Defaults on small unlabelled vector data (engine/methods/defaults.h): clip
 * norm R = max(|lo|, |hi|) of the declared range, d directions per step (one
 * orthonormal block); swd_flow: pool 2d released once, 100 flow steps (free
 * after the release); swd_flow_r: 10 steps = 10 releases, h = d. On central
 * data with a finite declared range every sample is clamped to it
 * (pg_snapshot_clamp_wrap: post-processing of the particles, no privacy
 * cost); the range travels in the checkpoint as "clamp".
 *
 * What the defaults cannot do. Each row's projection gets noise of std
 * 2 R S sqrt(w); for one release at delta 1e-5, S = 4.05 / 1.49 / 0.53 at
 * epsilon 1 / 3 / 10, so swd_flow's release (w = 2) has std 11.4 / 4.2 /
 * 1.5 R, wider than the data it describes. The flow matches the smoothed
 * laws, which is a deconvolution: with n = 5000 rows it recovers the mean and
 * a little spread but no shape until the std falls near 0.3 R (epsilon about
 * 100; docs/benchmarks.md, "Defaults"). Samples then gather where the clamp
 * puts them, at the edges of the range.
 *
 * Particle-side smoothing (N(0, sigma^2) with sigma the release's noise std,
 * as the paper smooths both measures alike) and the diffusion noise use the
 * job seed: they touch no data.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/checkpoint/checkpoint.h"
#include "engine/core/alloc.h"
#include "engine/data/dataset.h"
#include "engine/data/table.h"
#include "engine/data/table_ldp.h"
#include "engine/methods/defaults.h"
#include "engine/methods/generator.h"
#include "engine/methods/label_count.h"
#include "engine/methods/latent.h"
#include "engine/methods/snapshot.h"
#include "engine/methods/swd.h"
#include "engine/methods/swd_spec.h"
#include "engine/methods/trainer.h"
#include "engine/ot/sliced.h"
#include "engine/privacy/privacy.h"

/* Largest release store kept for replay (floats): 256 MiB. */
#define STORE_CAP_FLOATS ((size_t)1 << 26)
/* Largest particles x directions workspace (floats, per buffer). */
#define WS_CAP_FLOATS   ((size_t)1 << 27)
#define SUBSET_SALT     0x9e3779b97f4a7c15ull
#define DIR_STREAM_BASE ((uint64_t)1 << 40)

#define FLOW_COMMON_ROWS                                                                           \
    PG_SWD_PRIVACY_ROWS, PG_SWD_PROJECTION_ROWS, PG_SWD_LABEL_ROWS,                                \
        {"flow.steps",                                                                             \
         PG_PARAM_INT,                                                                             \
         "500",                                                                                    \
         1,                                                                                        \
         1e7,                                                                                      \
         NULL,                                                                                     \
         0,                                                                                        \
         0,                                                                                        \
         "Flow steps (small unlabelled vector data: 100 for swd_flow, 10 for swd_flow_r)."},       \
        {"flow.particles", PG_PARAM_INT, "1000", 2, 1e6, NULL, 0, 0, "Particles (N)."},            \
        {"flow.h",                                                                                 \
         PG_PARAM_NUM,                                                                             \
         "1",                                                                                      \
         0,                                                                                        \
         100,                                                                                      \
         NULL,                                                                                     \
         0,                                                                                        \
         PG_PARAM_EXCLUSIVE_MIN,                                                                   \
         "Euler-Maruyama step size h (swd_flow_r on small unlabelled vector data: d)."},           \
        {"flow.lambda",                                                                            \
         PG_PARAM_NUM,                                                                             \
         "0.001",                                                                                  \
         0,                                                                                        \
         10,                                                                                       \
         NULL,                                                                                     \
         0,                                                                                        \
         0,                                                                                        \
         "Diffusion lambda (noise sqrt(2 lambda h) per step)."},                                   \
        {"flow.init_std",                                                                          \
         PG_PARAM_NUM,                                                                             \
         "1",                                                                                      \
         0,                                                                                        \
         1e6,                                                                                      \
         NULL,                                                                                     \
         0,                                                                                        \
         PG_PARAM_EXCLUSIVE_MIN,                                                                   \
         "Particles start from N(0, init_std^2 I)."},                                              \
        {"flow.quantile_levels",                                                                   \
         PG_PARAM_INT,                                                                             \
         "256",                                                                                    \
         2,                                                                                        \
         100000,                                                                                   \
         NULL,                                                                                     \
         0,                                                                                        \
         0,                                                                                        \
         "Levels of each released quantile table (linear interpolation between them)."},           \
        {"seed",                                                                                   \
         PG_PARAM_INT,                                                                             \
         NULL,                                                                                     \
         0,                                                                                        \
         9007199254740991.0,                                                                       \
         NULL,                                                                                     \
         0,                                                                                        \
         PG_PARAM_OPTIONAL,                                                                        \
         "Seed of particles, public directions and sampling (never of DP noise)."},                \
    {                                                                                              \
        "checkpoint_every", PG_PARAM_INT, "100", 1, 1e7, NULL, 0, 0,                               \
            "Steps between checkpoints and published snapshots."                                   \
    }

static const pg_param FLOW_PARAMS[] = {
    FLOW_COMMON_ROWS,
    PG_LATENT_PARAM_ROWS,
    {"labels.count_noise", PG_PARAM_NUM, "10", 0, 1e6, NULL, 0, PG_PARAM_EXCLUSIVE_MIN,
     "Noise multiplier s of the DP count of each class (label_count.h) on a labelled typed "
     "table: unlabelled samples draw their classes from it. One Gaussian release "
     "(replace-one: RDP alpha / s^2) composed into the plan."},
    {"projections.pool", PG_PARAM_INT, NULL, 1, 1e6, NULL, 0, PG_PARAM_OPTIONAL,
     "N_theta: directions released once (default: projections.per_step)."},
    {0},
};

static const pg_param FLOW_R_PARAMS[] = {
    FLOW_COMMON_ROWS,
    PG_LATENT_PARAM_ROWS,
    {"labels.count_noise", PG_PARAM_NUM, "10", 0, 1e6, NULL, 0, PG_PARAM_EXCLUSIVE_MIN,
     "Noise multiplier s of the DP count of each class (label_count.h) on a labelled typed "
     "table: unlabelled samples draw their classes from it. One Gaussian release "
     "(replace-one: RDP alpha / s^2) composed into the plan."},
    {"train.batch_size", PG_PARAM_INT, NULL, 2, 1e8, NULL, 0, PG_PARAM_OPTIONAL,
     "Rows per release, drawn without replacement (default: every row each step)."},
    {0},
};

typedef struct swdf {
    pg_trainer base;
    long releases; /* must follow base (pg_swd_trainer_releases) */
    bool resample, orthonormal;
    pg_swd_flow_cfg cfg;
    pg_swd_privacy priv;
    double S, noise_std, init_std;
    size_t n, m; /* rows, rows per release */
    uint64_t seed;
    float *y;    /* n x d clipped rows; NULL once swd_flow has released */
    float *ybat; /* m x d subsample (swd_flow_r with batches) */
    uint32_t *rowperm;
    float *x; /* particles x d */
    pg_swd_store *store;
    pg_latent *ae; /* latent mode: the public autoencoder; NULL otherwise */
    /* Samples are clamped to the declared range [lo, hi] (central data with
     * a finite range; post-processing). Kept in checkpoints as "clamp". */
    bool clamp;
    float lo, hi;
    /* Typed tables: the table map (pg_table_to_json), kept in checkpoints as
     * "table" so samples decode without the dataset (categories by their
     * largest unit); a restore refuses a checkpoint whose map differs. */
    json_t *table_map;
    pg_swd_ws ws;
    long step, steps;
    pg_rng prng, secure;
    double *label_counts, *label_w; /* released class counts, proportions (or NULL) */
} swdf;

extern const pg_method pg_method_swd_flow, pg_method_swd_flow_r;

static json_t *flow_catalogue(void)
{
    return pg_spec_catalogue(FLOW_PARAMS);
}

static json_t *flow_r_catalogue(void)
{
    return pg_spec_catalogue(FLOW_R_PARAMS);
}

static const char *const IGNORED[] = {"dataset_id", "method", "public_dataset_id", NULL};

/* Directions per release, releases, and rows per release of a resolved spec. */
static void shape_of(const json_t *r, bool resample, size_t n, size_t *k_release, long *releases,
                     size_t *m)
{
    size_t per = (size_t)pg_spec_int(r, "projections.per_step", 200);
    *k_release = resample ? per : (size_t)pg_spec_int(r, "projections.pool", (long)per);
    *releases = resample ? pg_spec_int(r, "flow.steps", 1) : 1;
    *m = resample ? (size_t)pg_spec_int(r, "train.batch_size", (long)n) : n;
    if (*m > n) *m = n;
}

static int flow_validate_any(bool resample, const json_t *spec, const pg_job_data *in,
                             json_t **resolved, pg_spec_errors *errors, pg_error *err)
{
    *resolved = NULL;
    int before = errors->count;
    json_t *r = NULL;
    /* Data-derived defaults (defaults.h) on raw rows only: in latent mode the
     * flow runs on codes whose width the public autoencoder fixes. */
    json_t *filled = in->public_desc
                         ? json_incref((json_t *)spec)
                         : pg_defaults_fill(resample ? "swd_flow_r" : "swd_flow", spec, in->desc);
    if (!filled) return pg_error_set(err, PG_ENOMEM, "cannot copy the job spec");
    pg_spec_resolve(resample ? FLOW_R_PARAMS : FLOW_PARAMS, filled, IGNORED, &r, errors);
    json_decref(filled);
    if (!r || errors->count != before) {
        json_decref(r);
        return PG_EINVAL;
    }
    pg_swd_spec_data_checks(in->desc, errors);
    pg_latent_spec_validate(r, spec, in, errors);
    /* In latent mode the flow, and its privacy, see k-dimensional codes
     * (plus the label coordinates on labelled data). */
    pg_data_desc fd = pg_latent_flow_desc(r, in->desc);
    const pg_data_desc *desc = &fd;
    pg_swd_spec_labels(r, desc, errors);
    double alpha;
    size_t D = desc->d + pg_swd_spec_classes(r, desc, &alpha);
    size_t per = (size_t)pg_spec_int(r, "projections.per_step", 200);
    if ((size_t)pg_spec_int(r, "flow.particles", 1000) < D - desc->d)
        pg_spec_error_add(errors, "flow.particles",
                          "must be at least the number of classes (%zu): every class needs "
                          "particles",
                          D - desc->d);
    if (!resample) {
        long pool = pg_spec_int(r, "projections.pool", (long)per);
        if ((size_t)pool < per)
            pg_spec_error_add(errors, "projections.pool",
                              "must be at least projections.per_step (%zu)", per);
        pg_spec_set(r, "projections.pool", json_integer(pool));
    } else if (pg_spec_get(r, "train.batch_size")) {
        long b = pg_spec_int(r, "train.batch_size", 0);
        if ((size_t)b > desc->n)
            pg_spec_error_add(errors, "train.batch_size", "is larger than the dataset's %zu rows",
                              desc->n);
    }
    size_t k, m;
    long releases;
    shape_of(r, resample, desc->n, &k, &releases, &m);
    size_t L = (size_t)pg_spec_int(r, "flow.quantile_levels", 256);
    size_t entries = resample ? (size_t)releases : 1;
    double floats = (double)entries * (double)k * ((double)D + (double)L);
    if (floats > (double)STORE_CAP_FLOATS)
        pg_spec_error_add(errors, resample ? "flow.quantile_levels" : "projections.pool",
                          "the released tables kept for replay would hold %.3g floats (limit "
                          "%zu): use fewer levels, directions or steps",
                          floats, STORE_CAP_FLOATS);
    if ((double)pg_spec_int(r, "flow.particles", 1000) * (double)k > (double)WS_CAP_FLOATS)
        pg_spec_error_add(errors, "flow.particles",
                          "particles x directions exceeds %zu: use fewer of either", WS_CAP_FLOATS);
    if (errors->count == before) {
        double gamma = desc->n ? (double)m / (double)desc->n : 1.0;
        pg_swd_privacy p;
        double S;
        pg_swd_spec_privacy(r, desc, k, releases, gamma, &p, &S, errors);
    }
    if (errors->count != before) {
        json_decref(r);
        return PG_EINVAL;
    }
    (void)err;
    *resolved = r;
    return PG_OK;
}

static int flow_validate(const json_t *spec, const pg_job_data *in, json_t **resolved,
                         pg_spec_errors *errors, pg_error *err)
{
    return flow_validate_any(false, spec, in, resolved, errors, err);
}

static int flow_r_validate(const json_t *spec, const pg_job_data *in, json_t **resolved,
                           pg_spec_errors *errors, pg_error *err)
{
    return flow_validate_any(true, spec, in, resolved, errors, err);
}

static int flow_plan_any(bool resample, const json_t *r, const pg_job_data *in,
                         pg_privacy_plan *plan, pg_error *err)
{
    pg_data_desc fd = pg_latent_flow_desc(r, in->desc);
    const pg_data_desc *desc = &fd;
    size_t k, m;
    long releases;
    shape_of(r, resample, desc->n, &k, &releases, &m);
    double gamma = desc->n ? (double)m / (double)desc->n : 1.0;
    const char *mech = !resample     ? "gaussian_projection_single_release"
                       : gamma < 1.0 ? "gaussian_projection_per_step_subsampled_wor"
                                     : "gaussian_projection_per_step";
    return pg_swd_spec_plan(r, desc, k, releases, pg_spec_int(r, "flow.steps", 1), gamma, mech,
                            plan, err);
}

static int flow_plan(const json_t *r, const pg_job_data *in, pg_privacy_plan *plan, pg_error *err)
{
    return flow_plan_any(false, r, in, plan, err);
}

static int flow_r_plan(const json_t *r, const pg_job_data *in, pg_privacy_plan *plan, pg_error *err)
{
    return flow_plan_any(true, r, in, plan, err);
}

static void flow_destroy(pg_trainer *t)
{
    swdf *f = (swdf *)t;
    if (!f) return;
    json_decref(f->table_map);
    free(f->label_counts);
    free(f->label_w);
    pg_free(f->y);
    pg_free(f->ybat);
    pg_free(f->rowperm);
    pg_free(f->x);
    pg_swd_store_release(f->store);
    pg_latent_release(f->ae);
    pg_swd_ws_free(&f->ws);
    free(f);
}

/* Everything but the particles' state, which create and restore set. In
 * latent mode `ae` (retained here) encodes the rows before anything else.
 *
 * Latent privacy. The autoencoder is trained on public rows only, with the
 * job seed, before this function reads a private row: the encoder is a fixed
 * function of data the analysis treats as public. Each private row x becomes
 * z = E(x) / |E(x)| with |z| = 1 (or z = 0), and replacing one private row
 * replaces exactly one code: |z - z'| <= 2 = 2R with R = 1. The release is
 * thus the same Gaussian mechanism as on raw rows clipped to R = 1, in
 * dimension k: the derivation above applies verbatim with d = k, and the
 * clip (a no-op on codes) still guarantees the bound. On labelled data the
 * row is [z ; alpha onehot(y)], of norm exactly sqrt(1 + alpha^2), which is
 * the clip norm R the spec records: replace-one moves both parts, within 2R,
 * in dimension k + C. Decoding samples is post-processing. */
static int flow_common(bool resample, const json_t *r, const pg_job_data *in, pg_latent *ae,
                       swdf **out, pg_error *err)
{
    pg_data_desc fd = pg_latent_flow_desc(r, in->desc);
    const pg_data_desc *desc = &fd;
    const pg_dataset *data = in->rows;
    *out = NULL;
    if (!data || data->n == 0 || data->d != in->desc->d || data->n != desc->n)
        return pg_error_set(err, PG_EINVAL, "the dataset is empty or its shape changed");
    if (!ae != !pg_latent_spec_on(r) ||
        (ae && (pg_latent_dim(ae) != desc->d || pg_latent_data_dim(ae) != data->d)))
        return pg_error_set(err, PG_EINVAL, "the autoencoder does not match the latent spec");
    /* The sensitivity uses the schema's diameter (swd_spec.c): it holds for
     * valid encodings only. */
    if (!ae && in->desc->table && in->desc->table->width == data->d) {
        int vrc = pg_table_check_encoded(in->desc->table, data->x, data->n, err);
        if (vrc) return vrc;
    }
    swdf *f = calloc(1, sizeof *f);
    if (!f) return pg_error_set(err, PG_ENOMEM, "cannot allocate the trainer");
    pg_latent_retain(ae);
    f->ae = ae;
    const pg_data_desc *raw = in->desc;
    f->clamp = raw->model == PG_PRIVACY_CENTRAL && raw->lo < raw->hi && fabsf(raw->lo) < 1e29f &&
               fabsf(raw->hi) < 1e29f;
    f->lo = raw->lo;
    f->hi = raw->hi;
    if (raw->table && !(f->table_map = pg_table_to_json(raw->table))) {
        pg_latent_release(ae);
        free(f);
        return pg_error_set(err, PG_ENOMEM, "cannot encode the table map");
    }
    f->base.method = resample ? &pg_method_swd_flow_r : &pg_method_swd_flow;
    f->resample = resample;
    double alpha;
    size_t classes = pg_swd_spec_classes(r, desc, &alpha);
    if (classes && (data->num_classes != desc->num_classes || !data->labels ||
                    pg_dataset_check_labels(data->labels, data->n, data->num_classes, NULL, err))) {
        json_decref(f->table_map);
        free(f);
        return pg_error_set(err, PG_EINVAL, "the dataset's labels do not match its description");
    }
    /* Rows and particles live in d + classes dimensions (label coordinates
     * last); the privacy code uses that dimension too (swd_spec.h). */
    size_t d = desc->d + classes, k;
    long releases;
    shape_of(r, resample, data->n, &k, &releases, &f->m);
    f->n = data->n;
    double gamma = (double)f->m / (double)f->n;
    int rc = pg_swd_spec_privacy_get(r, desc, k, releases, gamma, &f->priv, &f->S, err);
    if (rc) {
        json_decref(f->table_map);
        free(f);
        return rc;
    }
    f->noise_std = f->S * f->priv.sensitivity;
    if (f->priv.count_noise > 0.0 &&
        (!(f->label_counts = calloc(classes, sizeof *f->label_counts)) ||
         !(f->label_w = calloc(classes, sizeof *f->label_w)))) {
        free(f->label_counts);
        json_decref(f->table_map);
        free(f);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate the label counts");
    }
    f->orthonormal = strcmp(pg_spec_str(r, "projections.kind", "orthonormal"), "orthonormal") == 0;
    f->seed = (uint64_t)pg_spec_int(r, "seed", 0);
    f->steps = pg_spec_int(r, "flow.steps", 1);
    f->init_std = pg_spec_num(r, "flow.init_std", 1.0);
    pg_swd_flow_cfg *c = &f->cfg;
    c->d = d;
    c->particles = (size_t)pg_spec_int(r, "flow.particles", 1000);
    c->per_step = (size_t)pg_spec_int(r, "projections.per_step", 200);
    c->pool = resample ? 0 : k;
    c->levels = (size_t)pg_spec_int(r, "flow.quantile_levels", 256);
    c->h = pg_spec_num(r, "flow.h", 1.0);
    c->lambda = pg_spec_num(r, "flow.lambda", 1e-3);
    c->smooth = f->noise_std;
    c->subset_seed = f->seed ^ SUBSET_SALT;
    c->classes = classes;
    c->alpha = alpha;
    pg_rng_seeded(&f->prng, f->seed, PG_STREAM_LATENT);
    f->y = pg_alloc_f32(f->n * d);
    f->x = pg_alloc_f32(c->particles * d);
    if (resample && f->m < f->n) {
        f->ybat = pg_alloc_f32(f->m * d);
        f->rowperm = pg_alloc(f->n * sizeof(uint32_t));
    }
    if (!f->y || !f->x || (resample && f->m < f->n && (!f->ybat || !f->rowperm))) {
        flow_destroy(&f->base);
        return pg_error_set(err, PG_ENOMEM, "cannot allocate the flow's buffers");
    }
    if (ae) { /* [normalize(E(x)) ; alpha onehot(y)]: norm sqrt(1 + alpha^2) = R */
        float *codes = pg_alloc_f32(f->n * desc->d);
        rc = codes ? pg_latent_encode(ae, data->x, f->n, codes, desc->d, err)
                   : pg_error_set(err, PG_ENOMEM, "cannot allocate the latent codes");
        if (!rc) pg_swd_augment(codes, data->labels, f->n, desc->d, classes, alpha, f->y);
        pg_free(codes);
    } else {
        pg_swd_augment(data->x, data->labels, f->n, desc->d, classes, alpha, f->y);
    }
    if (rc || (rc = pg_privacy_clip_l2(f->y, f->n, d, f->priv.clip, err)) ||
        (rc = pg_swd_ws_init(&f->ws, c->particles, d, k, f->m, c->levels, c->pool, err)) ||
        (rc = pg_swd_store_new(d, k, c->levels, resample ? (size_t)f->steps : 1, &f->store, err)) ||
        (rc = pg_rng_secure(&f->secure, err))) {
        flow_destroy(&f->base);
        return rc;
    }
    *out = f;
    return PG_OK;
}

static int flow_create_any(bool resample, const json_t *r, const pg_job_data *in, int threads,
                           pg_trainer **out, pg_error *err)
{
    (void)threads;
    *out = NULL;
    swdf *f;
    pg_latent *ae = NULL;
    int rc = PG_OK;
    if (pg_latent_spec_on(r)) { /* setup on public rows, before any private row */
        if (!in->public_rows || !in->public_desc)
            return pg_error_set(err, PG_EINVAL, "latent mode needs the public dataset's rows");
        pg_latent_cfg lc;
        pg_latent_spec_cfg(r, (uint64_t)pg_spec_int(r, "seed", 0), &lc);
        rc = pg_latent_train(&lc, in->public_rows, in->desc->lo, in->desc->hi, &ae, err);
    }
    if (!rc) rc = flow_common(resample, r, in, ae, &f, err);
    pg_latent_release(ae);
    if (rc) return rc;
    /* The one label count of the job (charged in the plan); a restore reads
     * it back from the checkpoint. */
    if (f->label_counts) {
        rc = pg_label_count_release(&f->secure, in->rows->labels, in->rows->n, (int)f->cfg.classes,
                                    f->priv.count_noise, f->label_counts, err);
        if (rc) {
            flow_destroy(&f->base);
            return rc;
        }
        pg_label_count_weights(f->label_counts, (int)f->cfg.classes, f->label_w);
    }
    pg_rng init;
    pg_rng_seeded(&init, f->seed, PG_STREAM_INIT);
    pg_swd_init_particles(&f->cfg, &init, f->x, f->cfg.particles, f->init_std);
    *out = &f->base;
    return PG_OK;
}

static int flow_create(const json_t *r, const pg_job_data *in, int threads, pg_trainer **out,
                       pg_error *err)
{
    return flow_create_any(false, r, in, threads, out, err);
}

static int flow_r_create(const json_t *r, const pg_job_data *in, int threads, pg_trainer **out,
                         pg_error *err)
{
    return flow_create_any(true, r, in, threads, out, err);
}

/* The only data access: directions for store entry e, then the release. */
static int release(swdf *f, size_t e, pg_error *err)
{
    pg_swd_store *st = f->store;
    size_t d = st->d, k = st->k;
    float *theta = st->theta + e * d * k;
    float *q = st->q + e * k * st->levels;
    pg_mat tm = pg_mat_view(theta, d, k);
    int rc;
    if (f->orthonormal) {
        pg_rng dr;
        pg_rng_seeded(&dr, f->seed, DIR_STREAM_BASE + e);
        rc = pg_sw_directions(&dr, true, &tm, err);
    } else {
        rc = pg_sw_directions(&f->secure, false, &tm, err);
    }
    if (rc) return rc;
    const float *rows = f->y;
    if (f->m < f->n) {
        /* Fixed-size subsample without replacement (partial Fisher-Yates on
         * the secure generator), as the WBK amplification assumes. */
        for (size_t i = 0; i < f->n; i++) f->rowperm[i] = (uint32_t)i;
        for (size_t c = 0; c < f->m; c++) {
            size_t j = c + (size_t)pg_rng_below(&f->secure, f->n - c);
            uint32_t t = f->rowperm[c];
            f->rowperm[c] = f->rowperm[j];
            f->rowperm[j] = t;
            memcpy(f->ybat + c * d, f->y + (size_t)f->rowperm[c] * d, d * sizeof(float));
        }
        rows = f->ybat;
    }
    rc = pg_swd_release(&f->ws, &f->secure, rows, f->m, theta, k, f->noise_std, q, st->levels, err);
    if (rc) return rc;
    f->releases++;
    return PG_OK;
}

static int flow_step(pg_trainer *t, pg_step_report *rep, pg_error *err)
{
    swdf *f = (swdf *)t;
    memset(rep, 0, sizeof *rep);
    rep->step = f->step;
    if (f->step >= f->steps) {
        rep->done = true;
        return pg_swd_privacy_epsilon(&f->priv, f->S, f->releases, &rep->epsilon_spent, err);
    }
    int rc = PG_OK;
    if (f->resample)
        rc = release(f, (size_t)f->step, err);
    else if (f->releases == 0) {
        rc = release(f, 0, err);
        if (rc == PG_OK) { /* one release for the whole job: drop the rows */
            pg_free(f->y);
            f->y = NULL;
        }
    }
    if (rc) return rc;
    const float *th, *q;
    pg_swd_step_tables(&f->ws, &f->cfg, f->store, f->step, &th, &q);
    double loss;
    rc = pg_swd_flow_step(&f->ws, &f->cfg, f->x, f->cfg.particles, th, f->cfg.per_step, q, &f->prng,
                          &loss, err);
    if (rc) return rc;
    f->step++;
    rep->step = f->step;
    rep->loss = loss;
    rep->done = f->step >= f->steps;
    return pg_swd_privacy_epsilon(&f->priv, f->S, f->releases, &rep->epsilon_spent, err);
}

static int flow_snapshot(pg_trainer *t, pg_snapshot **out, pg_error *err)
{
    swdf *f = (swdf *)t;
    size_t nd = f->cfg.particles * f->cfg.d;
    float *x = pg_alloc_f32(nd);
    if (!x) return pg_error_set(err, PG_ENOMEM, "cannot allocate a snapshot");
    memcpy(x, f->x, nd * sizeof(float));
    int rc = pg_swd_snapshot_new(&f->cfg, f->store, f->step, x, f->init_std, out, err);
    if (rc == PG_OK && f->ae) rc = pg_latent_snapshot_wrap(f->ae, *out, out, err);
    if (rc == PG_OK && f->clamp) rc = pg_snapshot_clamp_wrap(*out, f->lo, f->hi, out, err);
    /* Unlabelled draws follow the released class proportions. */
    if (rc == PG_OK && f->label_w && (rc = pg_snapshot_set_class_weights(*out, f->label_w, err))) {
        pg_snapshot_release(*out);
        *out = NULL;
    }
    return rc;
}

/* ---- checkpoints --------------------------------------------------------- */

static json_t *cfg_json(const swdf *f)
{
    const pg_swd_flow_cfg *c = &f->cfg;
    char ss[24];
    snprintf(ss, sizeof ss, "%016llx", (unsigned long long)c->subset_seed);
    json_t *j =
        json_pack("{s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:s,s:f}", "d", (json_int_t)c->d, "particles",
                  (json_int_t)c->particles, "per_step", (json_int_t)c->per_step, "pool",
                  (json_int_t)c->pool, "levels", (json_int_t)c->levels, "h", c->h, "lambda",
                  c->lambda, "smooth", c->smooth, "subset_seed", ss, "init_std", f->init_std);
    /* Unlabelled flows keep the original header (no label fields). */
    if (j && c->classes) {
        json_object_set_new(j, "classes", json_integer((json_int_t)c->classes));
        json_object_set_new(j, "alpha", json_real(c->alpha));
    }
    return j;
}

static int cfg_from_json(const json_t *j, pg_swd_flow_cfg *c, double *init_std, pg_error *err)
{
    memset(c, 0, sizeof *c);
    json_int_t d = json_integer_value(json_object_get(j, "d"));
    json_int_t n = json_integer_value(json_object_get(j, "particles"));
    json_int_t k = json_integer_value(json_object_get(j, "per_step"));
    json_int_t pool = json_integer_value(json_object_get(j, "pool"));
    json_int_t L = json_integer_value(json_object_get(j, "levels"));
    const char *ss = json_string_value(json_object_get(j, "subset_seed"));
    double h = json_number_value(json_object_get(j, "h"));
    double lam = json_number_value(json_object_get(j, "lambda"));
    double sm = json_number_value(json_object_get(j, "smooth"));
    double is = json_number_value(json_object_get(j, "init_std"));
    /* Absent in checkpoints of unlabelled flows (and of flows written before
     * labels existed): those read as unlabelled. */
    json_int_t classes = json_integer_value(json_object_get(j, "classes"));
    double alpha = json_number_value(json_object_get(j, "alpha"));
    char *end = NULL;
    unsigned long long seed = ss ? strtoull(ss, &end, 16) : 0;
    if (d <= 0 || d > (1 << 20) || n < 2 || n > 1000000 || k <= 0 || k > 1000000 || pool < 0 ||
        (pool && pool < k) || pool > 1000000 || L < 2 || L > 100000 || !ss || !end || *end ||
        !(h > 0) || !(lam >= 0) || !(sm >= 0) || !(is > 0) || !isfinite(h + lam + sm + is) ||
        classes < 0 || classes >= d || classes > 100000 || classes > n ||
        (classes && !(alpha > 0)) || !isfinite(alpha))
        return pg_error_set(err, PG_EFORMAT, "checkpoint flow description is malformed");
    c->d = (size_t)d;
    c->particles = (size_t)n;
    c->per_step = (size_t)k;
    c->pool = (size_t)pool;
    c->levels = (size_t)L;
    c->h = h;
    c->lambda = lam;
    c->smooth = sm;
    c->subset_seed = seed;
    c->classes = (size_t)classes;
    c->alpha = classes ? alpha : 0.0;
    *init_std = is;
    return PG_OK;
}

static int flow_save(pg_trainer *t, unsigned char **bytes, size_t *len, pg_error *err)
{
    swdf *f = (swdf *)t;
    const pg_swd_store *st = f->store;
    size_t entries = (size_t)f->releases;
    json_t *h = json_pack("{s:s,s:I,s:I,s:o,s:o}", "method", f->base.method->name, "step",
                          (json_int_t)f->step, "releases", (json_int_t)f->releases, "flow",
                          cfg_json(f), "rng", pg_rng_state_to_json(&f->prng));
    if (h && f->ae) json_object_set_new(h, "latent", pg_latent_to_json(f->ae));
    if (h && f->clamp)
        json_object_set_new(h, "clamp", json_pack("[f,f]", (double)f->lo, (double)f->hi));
    if (h && f->table_map) json_object_set(h, "table", f->table_map);
    if (h && f->label_counts) {
        json_object_set_new(h, "label_count_noise", json_real(f->priv.count_noise));
        json_t *lc = json_array();
        for (size_t k = 0; lc && k < f->cfg.classes; k++)
            json_array_append_new(lc, json_real(f->label_counts[k]));
        json_object_set_new(h, PG_GENERATOR_LABEL_COUNTS, lc);
    }
    char *text = h ? json_dumps(h, JSON_COMPACT) : NULL;
    json_decref(h);
    if (!text) return pg_error_set(err, PG_ENOMEM, "cannot encode the trainer state");
    pg_ckpt_tensor ts[5] = {
        {.name = "particles", .ndim = 2, .dims = {f->cfg.particles, f->cfg.d}, .data = f->x},
        {.name = "theta", .ndim = 3, .dims = {entries, st->d, st->k}, .data = st->theta},
        {.name = "quantiles", .ndim = 3, .dims = {entries, st->k, st->levels}, .data = st->q},
    };
    size_t nts = 3;
    if (f->ae) {
        pg_latent_tensors(f->ae, ts + 3);
        nts = 5;
    }
    int rc = pg_ckpt_encode(text, ts, nts, bytes, len, err);
    free(text);
    return rc;
}

/* Parses a checkpoint into header JSON + tensors, checking the shapes against
 * cfg and a store capacity (entries allowed). */
static int parse_ckpt(const unsigned char *bytes, size_t len, const char *want_method, pg_ckpt *ck,
                      json_t **hdr, pg_error *err)
{
    *hdr = NULL;
    int rc = pg_ckpt_decode(bytes, len, ck, err);
    if (rc) return rc;
    json_t *h = json_loads(ck->header, 0, NULL);
    const char *m = json_string_value(json_object_get(h, "method"));
    if (!h || !m || strncmp(m, "swd_flow", 8) != 0 || (want_method && strcmp(m, want_method))) {
        json_decref(h);
        pg_ckpt_free(ck);
        return pg_error_set(err, PG_EFORMAT, "not a %s checkpoint",
                            want_method ? want_method : "swd_flow");
    }
    *hdr = h;
    return PG_OK;
}

/* Copies particles and released tables out of a checkpoint. */
static int load_state(const pg_ckpt *ck, const pg_swd_flow_cfg *c, long releases, pg_swd_store *st,
                      float *x, pg_error *err)
{
    const pg_ckpt_tensor *tp = pg_ckpt_find(ck, "particles");
    const pg_ckpt_tensor *tt = pg_ckpt_find(ck, "theta");
    const pg_ckpt_tensor *tq = pg_ckpt_find(ck, "quantiles");
    if (!tp || !tt || !tq || tp->ndim != 2 || tp->dims[0] != c->particles || tp->dims[1] != c->d ||
        tt->ndim != 3 || tt->dims[0] != (uint64_t)releases || tt->dims[1] != st->d ||
        tt->dims[2] != st->k || tq->ndim != 3 || tq->dims[0] != (uint64_t)releases ||
        tq->dims[1] != st->k || tq->dims[2] != st->levels || (size_t)releases > st->cap)
        return pg_error_set(err, PG_EFORMAT, "checkpoint tensors do not match the flow");
    memcpy(x, tp->data, c->particles * c->d * sizeof(float));
    memcpy(st->theta, tt->data, pg_ckpt_tensor_size(tt) * sizeof(float));
    memcpy(st->q, tq->data, pg_ckpt_tensor_size(tq) * sizeof(float));
    for (size_t i = 0; i < c->particles * c->d; i++)
        if (!isfinite(x[i]))
            return pg_error_set(err, PG_EFORMAT, "checkpoint particles are not finite");
    /* The particles' classes travel in their clamped label coordinates. */
    if (!pg_swd_labels_valid(c, x, c->particles))
        return pg_error_set(err, PG_EFORMAT,
                            "checkpoint particles' label coordinates are not alpha onehot(class)");
    return PG_OK;
}

static int flow_restore_any(bool resample, const json_t *r, const pg_job_data *in,
                            const unsigned char *bytes, size_t len, pg_trainer **out, pg_error *err)
{
    *out = NULL;
    swdf *f;
    pg_ckpt ck;
    json_t *h;
    int rc = parse_ckpt(bytes, len, resample ? "swd_flow_r" : "swd_flow", &ck, &h, err);
    if (rc) return rc;
    /* Latent mode: the autoencoder comes from the checkpoint (the public
     * rows are not needed again; retraining could differ). */
    pg_latent *ae = NULL;
    const json_t *lj = json_object_get(h, "latent");
    if (!lj != !pg_latent_spec_on(r))
        rc = pg_error_set(err, PG_EFORMAT, "checkpoint was written for a different spec");
    else if (lj)
        rc = pg_latent_from_ckpt(lj, &ck, &ae, err);
    if (!rc) rc = flow_common(resample, r, in, ae, &f, err);
    pg_latent_release(ae);
    if (rc) {
        json_decref(h);
        pg_ckpt_free(&ck);
        return rc;
    }
    json_int_t step = json_integer_value(json_object_get(h, "step"));
    json_int_t rel = json_integer_value(json_object_get(h, "releases"));
    pg_swd_flow_cfg c;
    double is;
    rc = cfg_from_json(json_object_get(h, "flow"), &c, &is, err);
    if (rc == PG_OK && (memcmp(&c, &f->cfg, sizeof c) != 0 || is != f->init_std))
        rc = pg_error_set(err, PG_EFORMAT, "checkpoint was written for a different spec");
    long want_rel = resample ? (long)step : (step > 0 ? 1 : (long)rel);
    if (rc == PG_OK && (step < 0 || step > f->steps || rel != want_rel || rel < 0))
        rc = pg_error_set(err, PG_EFORMAT, "checkpoint step and release count are inconsistent");
    const json_t *map = json_object_get(h, "table");
    if (rc == PG_OK && !map != !f->table_map)
        rc = pg_error_set(err, PG_EFORMAT,
                          map ? "the checkpoint was trained on a typed table, the job's rows are "
                                "untyped"
                              : "the checkpoint was trained on untyped rows, the job has a typed "
                                "table");
    else if (rc == PG_OK && map && !json_equal((json_t *)map, f->table_map))
        rc = pg_error_set(err, PG_EFORMAT,
                          "the checkpoint's table layout differs from the job's table");
    const json_t *lcn = json_object_get(h, "label_count_noise");
    if (rc == PG_OK &&
        (f->label_counts ? !lcn || json_number_value(lcn) != f->priv.count_noise : lcn != NULL))
        rc = pg_error_set(err, PG_EPRIVACY,
                          "the checkpoint was accounted under another label count than this spec");
    if (rc == PG_OK && f->label_counts &&
        (rc = pg_generator_label_counts_from_json(json_object_get(h, PG_GENERATOR_LABEL_COUNTS),
                                                  (int)f->cfg.classes, f->label_counts, err)) ==
            PG_OK)
        pg_label_count_weights(f->label_counts, (int)f->cfg.classes, f->label_w);
    if (rc == PG_OK) rc = load_state(&ck, &f->cfg, (long)rel, f->store, f->x, err);
    if (rc == PG_OK) rc = pg_rng_state_from_json(json_object_get(h, "rng"), &f->prng, err);
    if (rc == PG_OK) {
        f->step = (long)step;
        f->releases = (long)rel;
        if (!resample && f->releases > 0) {
            pg_free(f->y);
            f->y = NULL;
        }
    }
    json_decref(h);
    pg_ckpt_free(&ck);
    if (rc) {
        flow_destroy(&f->base);
        return rc;
    }
    *out = &f->base;
    return PG_OK;
}

static int flow_restore(const json_t *r, const pg_job_data *in, int threads,
                        const unsigned char *bytes, size_t len, pg_trainer **out, pg_error *err)
{
    (void)threads;
    return flow_restore_any(false, r, in, bytes, len, out, err);
}

static int flow_r_restore(const json_t *r, const pg_job_data *in, int threads,
                          const unsigned char *bytes, size_t len, pg_trainer **out, pg_error *err)
{
    (void)threads;
    return flow_restore_any(true, r, in, bytes, len, out, err);
}

static int flow_load_snapshot(const unsigned char *bytes, size_t len, pg_snapshot **out,
                              pg_error *err)
{
    *out = NULL;
    pg_ckpt ck;
    json_t *h;
    int rc = parse_ckpt(bytes, len, NULL, &ck, &h, err);
    if (rc) return rc;
    pg_swd_flow_cfg c;
    double is;
    pg_swd_store *st = NULL;
    float *x = NULL;
    json_int_t step = json_integer_value(json_object_get(h, "step"));
    json_int_t rel = json_integer_value(json_object_get(h, "releases"));
    rc = cfg_from_json(json_object_get(h, "flow"), &c, &is, err);
    const pg_ckpt_tensor *tt = pg_ckpt_find(&ck, "theta");
    size_t k = c.pool ? c.pool : c.per_step;
    bool resample = c.pool == 0;
    if (rc == PG_OK && (step < 0 || rel < 0 || (resample && rel != step) ||
                        (!resample && rel != (step > 0 ? 1 : rel)) || (!resample && rel > 1) ||
                        !tt || tt->ndim != 3))
        rc = pg_error_set(err, PG_EFORMAT, "checkpoint step and release count are inconsistent");
    /* Sizes come from an untrusted header: check them against the tensors
     * (bounded by the buffer) and the training limits before allocating. */
    const pg_ckpt_tensor *tq = pg_ckpt_find(&ck, "quantiles");
    const pg_ckpt_tensor *tp = pg_ckpt_find(&ck, "particles");
    if (rc == PG_OK &&
        (!tq || !tp || tp->ndim != 2 || tp->dims[0] != c.particles || tp->dims[1] != c.d ||
         tt->dims[0] != (uint64_t)rel || tt->dims[1] != c.d || tt->dims[2] != k || tq->ndim != 3 ||
         tq->dims[0] != (uint64_t)rel || tq->dims[1] != k || tq->dims[2] != c.levels ||
         (double)k * ((double)c.d + (double)c.levels) > STORE_CAP_FLOATS ||
         (double)c.per_step * (double)c.particles > WS_CAP_FLOATS))
        rc = pg_error_set(err, PG_EFORMAT, "checkpoint tensors do not match the flow");
    if (rc == PG_OK) rc = pg_swd_store_new(c.d, k, c.levels, rel > 0 ? (size_t)rel : 1, &st, err);
    if (rc == PG_OK && !(x = pg_alloc_f32(c.particles * c.d)))
        rc = pg_error_set(err, PG_ENOMEM, "cannot allocate particles");
    const json_t *map = json_object_get(h, "table");
    if (rc == PG_OK && map) {
        /* The map must be a valid table of the samples' width (the data
         * width: in latent mode the flow's own d is the code size). */
        pg_table *tb = NULL;
        const json_t *lj0 = json_object_get(h, "latent");
        rc = pg_table_from_json(map, &tb, err);
        if (rc == PG_OK && !lj0 && tb->width != c.d - c.classes)
            rc = pg_error_set(err, PG_EFORMAT, "checkpoint table map does not match the flow");
        else if (rc != PG_OK)
            rc = pg_error_set(err, PG_EFORMAT, "checkpoint table map is malformed");
        pg_table_free(tb);
    }
    if (rc == PG_OK) rc = load_state(&ck, &c, (long)rel, st, x, err);
    if (rc == PG_OK) {
        rc = pg_swd_snapshot_new(&c, st, (long)step, x, is, out, err);
        x = NULL;
    }
    const json_t *lj = json_object_get(h, "latent");
    if (rc == PG_OK && lj) { /* decode without the public data: the checkpoint has it all */
        pg_latent *ae = NULL;
        rc = pg_latent_from_ckpt(lj, &ck, &ae, err);
        if (rc == PG_OK && pg_latent_dim(ae) != c.d - c.classes)
            rc = pg_error_set(err, PG_EFORMAT, "checkpoint autoencoder does not match the flow");
        if (rc == PG_OK)
            rc = pg_latent_snapshot_wrap(ae, *out, out, err);
        else {
            pg_snapshot_release(*out);
            *out = NULL;
        }
        pg_latent_release(ae);
    }
    /* Absent in checkpoints of unbounded data and of flows written before
     * clamping existed: those samples stay as they were. */
    const json_t *cj = json_object_get(h, "clamp");
    if (rc == PG_OK && cj) {
        double lo = json_number_value(json_array_get(cj, 0)),
               hi = json_number_value(json_array_get(cj, 1));
        if (json_array_size(cj) != 2 || !isfinite(lo) || !isfinite(hi) || !(lo < hi)) {
            pg_snapshot_release(*out);
            *out = NULL;
            rc = pg_error_set(err, PG_EFORMAT, "checkpoint clamp range is malformed");
        } else {
            rc = pg_snapshot_clamp_wrap(*out, (float)lo, (float)hi, out, err);
        }
    }
    const json_t *lcj = json_object_get(h, PG_GENERATOR_LABEL_COUNTS);
    if (rc == PG_OK && lcj) { /* the released class proportions, as the trainer served */
        size_t K = c.classes > 0 ? c.classes : 1;
        double *cw = malloc(2 * K * sizeof *cw);
        rc = !cw ? pg_error_set(err, PG_ENOMEM, "cannot read the label counts")
                 : pg_generator_label_counts_from_json(lcj, (int)c.classes, cw, err);
        if (rc == PG_OK) {
            pg_label_count_weights(cw, (int)c.classes, cw + K);
            rc = pg_snapshot_set_class_weights(*out, cw + K, err);
        }
        free(cw);
        if (rc) {
            pg_snapshot_release(*out);
            *out = NULL;
        }
    }
    pg_free(x);
    pg_swd_store_release(st);
    json_decref(h);
    pg_ckpt_free(&ck);
    return rc;
}

const pg_method pg_method_swd_flow = {
    .name = "swd_flow",
    .summary = "DP sliced-Wasserstein particle flow: one noisy release of the data's "
               "projections on a fixed pool of directions (Sebag et al., DPSWflow). On small "
               "2-D data it learns little at epsilon <= 10 (each release adds noise of std "
               "1.5 R at epsilon 10, R the clip norm): with its defaults 1 / 13 / 17 % of "
               "samples lie within 0.1 of a half circle at epsilon 1 / 3 / 10 (points uniform "
               "in the declared range: 7 %), 40 % at epsilon 100. Samples are clamped to the "
               "declared range.",
    .accepts = PG_PRIVACY_CENTRAL,
    .catalogue = flow_catalogue,
    .validate = flow_validate,
    .plan = flow_plan,
    .create = flow_create,
    .step = flow_step,
    .snapshot = flow_snapshot,
    .save = flow_save,
    .restore = flow_restore,
    .load_snapshot = flow_load_snapshot,
    .destroy = flow_destroy,
};

const pg_method pg_method_swd_flow_r = {
    .name = "swd_flow_r",
    .summary = "DP sliced-Wasserstein particle flow with fresh directions and a fresh noisy "
               "release every step (Sebag et al., DPSWflow-r). Every step is a release, so it is "
               "noisier than swd_flow: on small 2-D data its defaults (10 releases) put 1 / 3 / "
               "8 % of samples within 0.1 of a half circle at epsilon 1 / 3 / 10 (points "
               "uniform in the declared range: 7 %), 19 % at epsilon 100; it does not learn "
               "there at epsilon <= 10. Samples are clamped to the declared range.",
    .accepts = PG_PRIVACY_CENTRAL,
    .catalogue = flow_r_catalogue,
    .validate = flow_r_validate,
    .plan = flow_r_plan,
    .create = flow_r_create,
    .step = flow_step,
    .snapshot = flow_snapshot,
    .save = flow_save,
    .restore = flow_r_restore,
    .load_snapshot = flow_load_snapshot,
    .destroy = flow_destroy,
};
