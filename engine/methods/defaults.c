/* defaults - data-derived defaults of every method (rules in defaults.h). */
#include "engine/methods/defaults.h"

#include <math.h>
#include <string.h>

#include "engine/data/table.h"
#include "engine/methods/spec.h"

bool pg_defaults_small(const pg_data_desc *desc)
{
    return desc->ndim == 1 && desc->d >= 1 && desc->d <= PG_DEFAULTS_SMALL_D;
}

static bool finite_range(const pg_data_desc *desc)
{
    return isfinite(desc->lo) && isfinite(desc->hi) && desc->lo < desc->hi &&
           (double)desc->hi - (double)desc->lo <= 1e6;
}

/* Sets `path` to `v` (stolen) unless the spec gives it (null counts as absent,
 * as in the resolver). */
static void fill(json_t *s, const char *path, json_t *v)
{
    const json_t *cur = pg_spec_get(s, path);
    if (cur && !json_is_null(cur)) {
        json_decref(v);
        return;
    }
    pg_spec_set(s, path, v); /* a non-object parent is the resolver's to report */
}

static size_t clampz(size_t v, size_t lo, size_t hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static void generator_rules(json_t *s, const pg_data_desc *desc)
{
    const char *arch = pg_spec_str(s, "model.arch", "mlp");
    if (strcmp(arch, "mlp") != 0 || !pg_defaults_small(desc)) return;
    fill(s, "model.hidden", json_pack("[i,i]", 64, 64));
    fill(s, "model.latent_dim", json_integer((json_int_t)desc->d));
    if (desc->model == PG_PRIVACY_CENTRAL && finite_range(desc))
        fill(s, "model.out_activation", json_string("tanh"));
}

/* entropic_gan on small untyped vectors: a [128, 128] generator, and
 * snapshots that serve the moving average of its parameters (train.ema
 * 0.999). The privatized rows make this a deconvolution, and the entropic
 * loss on 256-row batches keeps moving the last iterate: with [64, 64] and
 * the last iterate, README tutorial 1 (local Laplace epsilon 5, 20 000
 * rows) put 0.53-0.82 of the samples within 0.1 of the arc over 23 runs.
 * The wider generator settles closer (median 0.80 over 10 runs) at almost
 * the same cost (the b x b Sinkhorn solve dominates a step), and the
 * average removes most of the run-to-run spread of the last iterate
 * (docs/benchmarks.md, "Tutorial 1 defaults"). Averaging is
 * post-processing of the trained parameters: no privacy cost, and local
 * data charges nothing anyway. Typed tables keep the generic rules (their
 * heads are measured by test_table_ldp_gan). */
static void egan_rules(json_t *s, const pg_data_desc *desc)
{
    if (desc->table || !pg_defaults_small(desc)) return;
    if (strcmp(pg_spec_str(s, "model.arch", "mlp"), "mlp") != 0) return;
    fill(s, "model.hidden", json_pack("[i,i]", 128, 128));
    fill(s, "train.ema", json_real(0.999));
}

/* ---- typed tables (desc->table): rules in defaults.h, "Typed tables" ---- */

static bool is_swd(const char *method)
{
    return strcmp(method, "swd_flow") == 0 || strcmp(method, "swd_flow_r") == 0 ||
           strcmp(method, "swd_gen") == 0;
}

double pg_defaults_table_clip(const pg_table *t, int num_classes, const json_t *spec)
{
    double l1, nb;
    pg_table_norm_bound(t, &l1, &nb);
    if (num_classes <= 0) return nb;
    /* Rows [x; alpha onehot(y)] have norm up to sqrt(nb^2 + alpha^2). */
    const json_t *a = pg_spec_get(spec, "labels.class_alpha");
    if (a && json_is_number(a)) {
        double alpha = json_number_value(a);
        return sqrt(nb * nb + alpha * alpha);
    }
    /* The default alpha is R / 2, so R^2 = nb^2 + R^2 / 4. */
    return nb * 2.0 / sqrt(3.0);
}

static void table_rules(json_t *s, const char *method, const pg_data_desc *desc)
{
    /* Per-block heads bound every generated unit: no output activation. */
    if (strcmp(method, "entropic_gan") == 0 || strcmp(method, "dp_sinkhorn") == 0 ||
        strcmp(method, "swd_gen") == 0)
        fill(s, "model.out_activation", json_string("auto"));
    /* No logit gain by default (heads.h: model.logit_gain 1). A gain of 10
     * lifted the entropic GAN's column dependence on credit_data, but it
     * also made its recovery of category frequencies through the
     * randomized-response channel unreliable (test_table_ldp_gan: max error
     * 0.008-0.041 over 5 runs with 10, missing
     * 0.02 twice; 0.003-0.017 over 8 runs with 1), and that recovery is
     * what the method is for; a user who wants the dependence sets it. */
    if (desc->model == PG_PRIVACY_CENTRAL && is_swd(method) && desc->table->width == desc->d &&
        !pg_spec_get(s, "latent"))
        fill(s, "privacy.clip_norm",
             json_real(pg_defaults_table_clip(desc->table, desc->num_classes, s)));
}

/* dp_sinkhorn on small vector data. Poisson batches of about sqrt(n) / 4
 * rows: the sampling rate q = b / n = 1 / (4 sqrt n) falls as n grows, so
 * amplification lowers the noise multiplier a target epsilon needs, while the
 * per-step cost (Sinkhorn on b x b) grows only like n. The clipped b x d
 * cross-gradient carries noise on every entry, so smaller batches put less
 * noise on each generated row; below 8 rows the gradient is too coarse, and
 * above 32 the half circle gains nothing measurable (docs/benchmarks.md). */
static void dp_sinkhorn_rules(json_t *s, const pg_data_desc *desc)
{
    size_t n = desc->n;
    if (!pg_defaults_small(desc) || n < 1) return;
    size_t b = clampz((size_t)llround(sqrt((double)n) / 4.0), 8, 32);
    fill(s, "train.batch_size", json_integer((json_int_t)(b < n ? b : n)));
    fill(s, "train.steps", json_integer(2000));
    fill(s, "train.lr", json_real(0.001));
}

/* Clip norm R of the sliced-Wasserstein methods from the declared range:
 * max(|lo|, |hi|), the ball inside the range's box when it is centred at 0,
 * so a row inside the range loses nothing unless it sits in a corner. Every
 * release's noise std is 2 R S sqrt(w) (S the noise multiplier), so a larger
 * R costs noise and a smaller one crushes the data: the table default R = 1
 * folded the five Gaussians (radius 2) onto the unit circle. Labelled data
 * keeps the table's R (its label part is clipped with the row). */
static void swd_clip_rule(json_t *s, const pg_data_desc *desc)
{
    if (desc->model != PG_PRIVACY_CENTRAL || desc->num_classes > 0 || !finite_range(desc)) return;
    double R = fmax(fabs((double)desc->lo), fabs((double)desc->hi));
    if (R > 0.0) fill(s, "privacy.clip_norm", json_real(R));
}

static void swd_gen_rules(json_t *s, const pg_data_desc *desc)
{
    size_t n = desc->n;
    if (!pg_defaults_small(desc) || n < 2) return;
    swd_clip_rule(s, desc);
    fill(s, "projections.per_step", json_integer((json_int_t)desc->d));
    fill(s, "train.batch_size", json_integer((json_int_t)(n < 500 ? n : 500)));
    fill(s, "train.steps", json_integer(200));
}

static void swd_flow_rules(json_t *s, const pg_data_desc *desc, bool resample)
{
    if (!pg_defaults_small(desc) || desc->n < 2 || desc->num_classes > 0) return;
    size_t d = desc->d;
    swd_clip_rule(s, desc);
    long per = pg_spec_int(s, "projections.per_step", (long)d);
    fill(s, "projections.per_step", json_integer((json_int_t)d));
    if (!resample) {
        /* two blocks, and never fewer than the directions used per step */
        long pool = per > (long)(2 * d) ? per : (long)(2 * d);
        fill(s, "projections.pool", json_integer(pool));
        fill(s, "flow.steps", json_integer(100));
    } else {
        /* Every swd_flow_r step is a release, and T releases need a noise
         * multiplier about sqrt(T) times one release's: 10 steps instead of
         * 100 cut the noise by sqrt(10). h = d makes each step the whole
         * one-dimensional transport along its orthonormal block (the drift
         * averages the block's d displacements), so 10 steps still arrive. */
        fill(s, "flow.steps", json_integer(10));
        fill(s, "flow.h", json_real((double)d));
    }
}

json_t *pg_defaults_fill(const char *method, const json_t *spec, const pg_data_desc *desc)
{
    if (!json_is_object(spec)) return json_incref((json_t *)spec);
    json_t *s = json_deep_copy(spec);
    if (!s) return NULL;
    if (desc->table) table_rules(s, method, desc);
    size_t n = desc->n;
    if (strcmp(method, "entropic_gan") == 0) {
        egan_rules(s, desc);
        generator_rules(s, desc);
        if (n >= 2) fill(s, "train.batch_size", json_integer((json_int_t)(n < 256 ? n : 256)));
    } else if (strcmp(method, "dp_sinkhorn") == 0) {
        generator_rules(s, desc);
        dp_sinkhorn_rules(s, desc);
    } else if (strcmp(method, "swd_gen") == 0) {
        generator_rules(s, desc);
        swd_gen_rules(s, desc);
    } else if (strcmp(method, "swd_flow") == 0 || strcmp(method, "swd_flow_r") == 0) {
        swd_flow_rules(s, desc, strcmp(method, "swd_flow_r") == 0);
    }
    return s;
}
