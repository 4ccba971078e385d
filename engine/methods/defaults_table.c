/* defaults_table - the typed-table defaults of the paper methods that follow
 * the table (defaults.h, "Typed tables": pg_defaults_table_fill). Kept apart
 * from the small-vector rules of defaults.c. */
#include <math.h>
#include <string.h>

#include <jansson.h>

#include "engine/data/qmap.h"
#include "engine/data/table.h"
#include "engine/methods/defaults.h"
#include "engine/methods/heads.h"
#include "engine/methods/spec.h"

/* dp_sinkhorn and swd_gen on labelled central tables: when their classes'
 * released marginals are redrawn (calibration.independence 1,
 * calib_table.h, tied together by each class's copula below) instead of
 * the generator's within-class dependence. Decided from the plan's
 * quantities alone (the target epsilon, n, the heads H, the classes K),
 * never from the rows: wherever the released marginals are accurate, the
 * sd of a class's category frequency from the class statistics' release,
 * sqrt(2 H) s / (n / K) at s = max(1, 9 / sqrt(epsilon)) (classes taken
 * equal: the plan knows n, not the class sizes), at most
 * PG_DEFAULTS_INDEP_ERROR, at every epsilon. credit_data at epsilon 5:
 * 0.012; attrition (n 1176, H 30): 0.053, where independent marginals
 * scored 0.813 (0.803-0.827) against the generator's 0.826.
 * Until issue 28's hi39 pass the rule also needed epsilon below 100 or
 * fewer than 50 rows per encoded unit, keeping the generator's dependence
 * on credit_data (115 rows per unit) from 100 on. Measured on credit_data
 * (docs/benchmarks.md, "Issue 28, eps 1000 (hi39)"; logistic-regression
 * accuracy, mean (min-max) over 10 runs, generator's dependence -> the
 * classes' copula): dp_sinkhorn at 1000 0.776 (0.759-0.791) -> 0.791
 * (0.782-0.808), 200 0.772 (0.748-0.788) -> 0.783 (0.772-0.797), 100
 * 0.755 (0.680-0.786) -> 0.787 (0.773-0.800); swd_gen at 1000 0.783
 * (0.767-0.796, 6 runs) -> 0.790 (0.777-0.797, 12 runs, with its floors
 * halved, see the swd_gen block below). The copula's runs are also
 * narrower (sd 0.005-0.007 against 0.010-0.032): every 3-run mean >= 0.78.
 * On such a table every categorical head and every number is redrawn, so
 * the generator's samples are not used, but for the shape of numbers
 * inside bins whose sub-bin release kept nothing (dp_sinkhorn with one
 * step scored as with 1500), while its steps keep most of the budget
 * (docs/benchmarks.md says how much). */
#define PG_DEFAULTS_INDEP_ERROR 0.03
/* No longer part of the rule (hi39); dp_sinkhorn's map rule under
 * independence (PG_DEFAULTS_QMAP_INDEP, eps39) applies below it. */
#define PG_DEFAULTS_INDEP_EPSILON 100.0
/* Where the rule holds: the copula's noise multiplier max(1, this /
 * epsilon) (calib_copula.h). credit_data at epsilon 5 (5 runs each): 2 ->
 * 0.777 (0.769-0.781), 3 -> 0.771, 4 -> 0.767 (0.749-0.782), off 0.759
 * (0.740-0.778). 1 / epsilon, not 1 / sqrt(epsilon): the other releases
 * already take most of a small budget (at epsilon 1 a copula at 4.5 left
 * no noise multiplier for the steps; 10 fits), and at 5 it may take more
 * than they do, the steps mattering little once the columns are redrawn.
 * On merged main (with the sub-bins), 15 runs each: 2 -> 0.778
 * (0.760-0.791 over 30 runs), 3 -> 0.779 (0.772-0.788), hence 15 / epsilon. */
#define PG_DEFAULTS_COPULA_NOISE 15.0
/* dp_sinkhorn where the rule holds below PG_DEFAULTS_INDEP_EPSILON: the
 * quantile map's noise multiplier max(1, min(6.7 / sqrt(epsilon), this /
 * epsilon)), 1.5 at epsilon 5 (was max(2, 6.7 / sqrt(epsilon)), 3.0), 3.75
 * at 2, 1 from 7.5 on; unchanged up to epsilon 1.25 and from 100 on. With every column redrawn from
 * the releases, the steps' noise barely matters (their multiplier 1.06 -> 1.27 at epsilon 5) and
 * the map's does most (issue 28, eps39; credit_data at epsilon 5, each release's noise set near 0
 * in turn at the others' eps-5 values, 10 runs each: map 0.788 (0.778-0.804), copula 0.781, class
 * statistics 0.779, sub-bins 0.773, none 0.780 (0.761-0.796, 16 runs)). Measured with this rule:
 * see docs/benchmarks.md, "Issue 28, eps 5 tail (eps39)". */
#define PG_DEFAULTS_QMAP_INDEP 7.5
/* ... and its bins (encoding.quantile_bins, 32 elsewhere): the sub-bins
 * (32 per bin) keep the shape inside a bin, while each bin the noise leaves
 * above its threshold in a class's empty tail puts mass where the class
 * has none, and halving the bins halves those tails. credit_data at
 * epsilon 5 with the map at 1.5, 10 runs each: 32 bins 0.782 (0.760-0.800,
 * 30 runs), 16 bins 0.788 (0.780-0.800), 8 bins 0.783 (0.774-0.792). The
 * map's cost does not depend on its bins (qmap.h). */
#define PG_DEFAULTS_QMAP_INDEP_BINS 16
/* ... with 64 sub-bins per bin (encoding.quantile_sub, 32 elsewhere), so
 * that the cells stay as fine as 32 x 32 (an integer bin of at most 64
 * values keeps a point per value); the sub-bins' cost does not depend on
 * their number either. At epsilon 5, 16 bins of 32 sub-bins left the
 * numbers' KS at 0.074 (0.062 with 32 bins); 64 sub-bins: 0.063. */
#define PG_DEFAULTS_QMAP_INDEP_SUB 64

static double indep_error(const pg_table *t, const pg_data_desc *desc, double epsilon)
{
    pg_heads *h = NULL;
    if (!(epsilon > 0.0) || desc->num_classes <= 0 || desc->n == 0 ||
        pg_heads_from_table(t, PG_HEADS_TAU, &h, NULL) != PG_OK)
        return INFINITY;
    double s = 9.0 / sqrt(epsilon), H = (double)h->n;
    pg_heads_free(h);
    s = s < 1.0 ? 1.0 : s;
    return sqrt(2.0 * H) * s / ((double)desc->n / desc->num_classes);
}

static void fill(json_t *s, const char *path, json_t *v)
{
    const json_t *cur = pg_spec_get(s, path);
    if (cur && !json_is_null(cur))
        json_decref(v);
    else
        pg_spec_set(s, path, v); /* null counts as absent, as in the resolver */
}

/* The predicate of the rule above the file (PG_DEFAULTS_INDEP_*), at the
 * target epsilon e (0 when the spec has none). */
static bool indep_rule(const json_t *s, const pg_table *t, const pg_data_desc *desc, double e)
{
    return e > 0.0 && pg_spec_bool(s, "calibration.class_means", false) && pg_qmap_columns(t) > 0 &&
           !json_is_false(pg_spec_get(s, "encoding.quantile_map")) &&
           indep_error(t, desc, e) <= PG_DEFAULTS_INDEP_ERROR;
}

/* The rule above (PG_DEFAULTS_INDEP_*) for a labelled central table whose
 * class calibration is already filled: calibration.independence 1 where it
 * holds, and then, where the resolved value is 1 (a job that asks for the
 * generator's dependence keeps the steps' share), more of the budget to the
 * releases that set the marginals: calibration.noise_multiplier max(1,
 * 9 / sqrt(epsilon)) and encoding.quantile_noise max(2, 6.7 / sqrt(epsilon))
 * (dp_sinkhorn below PG_DEFAULTS_INDEP_EPSILON: PG_DEFAULTS_QMAP_INDEP and
 * _BINS).
 * Called before the general fills of those two, which then leave them. The
 * plan charges whatever the spec resolves to, so only accuracy rides on
 * this. */
static void fill_independence(json_t *s, const pg_table *t, const pg_data_desc *desc,
                              bool replace_one)
{
    const json_t *eps = pg_spec_get(s, "privacy.epsilon");
    double e = json_is_number(eps) ? json_number_value(eps) : 0.0;
    bool indep = indep_rule(s, t, desc, e);
    if (indep) fill(s, "calibration.independence", json_real(1.0));
    const json_t *ind = pg_spec_get(s, "calibration.independence");
    if (indep && json_is_number(ind) && json_number_value(ind) >= 1.0) {
        double c = 9.0 / sqrt(e);
        fill(s, "calibration.noise_multiplier", json_real(c < 1.0 ? 1.0 : c));
        double q = 6.7 / sqrt(e);
        if (!replace_one && e < PG_DEFAULTS_INDEP_EPSILON) {
            /* dp_sinkhorn: the map's noise is the release that moves its
             * accuracy (PG_DEFAULTS_QMAP_INDEP), so it takes more of eps
             * above 1.25, and the steps less. */
            double q1 = PG_DEFAULTS_QMAP_INDEP / e;
            q = q1 < q ? q1 : q;
            fill(s, "encoding.quantile_noise", json_real(q < 1.0 ? 1.0 : q));
            fill(s, "encoding.quantile_bins", json_integer(PG_DEFAULTS_QMAP_INDEP_BINS));
            fill(s, "encoding.quantile_sub", json_integer(PG_DEFAULTS_QMAP_INDEP_SUB));
        } else
            fill(s, "encoding.quantile_noise", json_real(q < 2.0 ? 2.0 : q));
    }
    /* The classes' Gaussian copula (calib_copula.h), so that the redrawn
     * columns keep each class's dependence: wherever the rule holds and
     * some columns are redrawn (a resumed job may change the share, which
     * is post-processing, without changing the plan), under the numeric
     * rule it needs ("quantile", filled later when unset). */
    const json_t *num = pg_spec_get(s, "calibration.numeric");
    bool quantile = !num || json_is_null(num) ||
                    (json_is_string(num) && strcmp(json_string_value(num), "quantile") == 0);
    if (indep && quantile && json_is_number(ind) && json_number_value(ind) > 0.0) {
        /* Under replace-one (swd_gen) the release's sensitivity doubles:
         * twice the multiplier is the same curve, alpha e^2 / (2 k^2). */
        double cop = PG_DEFAULTS_COPULA_NOISE / e;
        cop = cop < 1.0 ? 1.0 : cop;
        fill(s, "calibration.copula_noise", json_real(replace_one ? 2.0 * cop : cop));
    }
}

/* The quantile rule's sub-bins (qmap.h, calibration.numeric "quantile" with
 * the map on): 32 per bin, and their noise s2 = max(0.5, 13.4 /
 * sqrt(epsilon)), twice the map's own rule under independence (6.7 /
 * sqrt(epsilon)) so that the release costs a quarter of the map's where the
 * budget is tight (at epsilon 1 a noise of 6.7 left no noise multiplier for
 * the steps on test_table_label's small table), with a lower floor: a bin's
 * sub-counts are smaller than its count, and at large epsilon the release
 * costs next to nothing (credit_data at epsilon 1000, 0.5: the steps' noise
 * multiplier 0.1700 -> 0.1701). Measured on credit_data (docs/benchmarks.md,
 * issue 28 seventh pass): the numbers' mean KS against the real 20 %
 * 0.168 -> 0.049 at epsilon 1000 and 0.17 -> 0.06 at 5 (floor 0.026), the
 * classes' served zero assets, debts and Time's 12-month steps kept instead
 * of spread over their bins. Without an epsilon target s2 is left out
 * (twice encoding.quantile_noise). */
static void fill_sub(json_t *s)
{
    const json_t *num = pg_spec_get(s, "calibration.numeric");
    if (!pg_spec_bool(s, "encoding.quantile_map", false) ||
        !pg_spec_bool(s, "calibration.class_means", false) || !json_is_string(num) ||
        strcmp(json_string_value(num), "quantile") != 0)
        return;
    fill(s, "encoding.quantile_sub", json_integer(32));
    const json_t *eps = pg_spec_get(s, "privacy.epsilon");
    if (json_is_number(eps) && json_number_value(eps) > 0) {
        double q = 13.4 / sqrt(json_number_value(eps));
        fill(s, "encoding.quantile_sub_noise", json_real(q < 0.5 ? 0.5 : q));
    }
}

/* The per-class calibration of a labelled central table (calib_table.h):
 * on, 4000 draws per class, and a noise multiplier that follows the target,
 * s = max(1, 20 / sqrt(epsilon)) (dp_sinkhorn's measurements below). */
static void fill_class_calibration(json_t *s)
{
    fill(s, "calibration.class_means", json_true());
    fill(s, "calibration.samples_per_class", json_integer(4000));
    const json_t *eps = pg_spec_get(s, "privacy.epsilon");
    if (json_is_number(eps) && json_number_value(eps) > 0) {
        double c = 20.0 / sqrt(json_number_value(eps));
        fill(s, "calibration.noise_multiplier", json_real(c < 1.0 ? 1.0 : c));
    }
}

void pg_defaults_table_fill(json_t *s, const char *method, const pg_data_desc *desc)
{
    const pg_table *t = desc->table;
    if (!t) return;
    bool labelled = t->label != PG_TABLE_NONE && desc->num_classes > 0;
    /* dp_sinkhorn conditions on the schema's label, as paper 001 conditions
     * on the class: the rows of each class are matched to that class's
     * rows, so the class's dependence on the other columns is what the
     * model learns, and samples carry the label with the proportions of a
     * DP count (label_count.h). */
    if (strcmp(method, "dp_sinkhorn") == 0 && labelled && desc->model == PG_PRIVACY_CENTRAL)
        fill(s, "model.conditional", json_true());
    /* entropic_gan the same way, on central rows and on local ones (whose
     * privatized labels it reads through their randomized-response
     * channel, entropic_gan.c). */
    if (strcmp(method, "entropic_gan") == 0 && labelled) fill(s, "model.conditional", json_true());
    /* entropic_gan on local tables: the clipped linear numeric head (heads.h).
     * tanh's slope fades toward the bounds, where skewed columns live
     * (credit_data: Assets, Debt piled at 0), and the raw OT loss has no
     * repulsion to offset that: at a local epsilon of 1000 tanh served them
     * with a tenth of their spread. The head is a reparametrization of the
     * generator (the clean law it can express is the same), so Theorem 1's
     * cost is unchanged (docs/benchmarks.md, issue 28 third pass). */
    if (strcmp(method, "entropic_gan") == 0 && desc->model == PG_PRIVACY_LOCAL)
        fill(s, "model.numeric_head", json_string("clip"));
    /* dp_sinkhorn's parameter table is sized for images (lr 1e-4, batch 50,
     * steps 2000 at 60 000 rows); on tables the credit_data bench ran 1500
     * steps of 64 rows at lr 1e-3 (docs/benchmarks.md, credit_data). */
    if (strcmp(method, "dp_sinkhorn") == 0 && desc->n >= 2) {
        fill(s, "train.batch_size", json_integer((json_int_t)(desc->n < 64 ? desc->n : 64)));
        fill(s, "train.steps", json_integer(1500));
        fill(s, "train.lr", json_real(0.001));
        fill(s, "model.hidden", json_pack("[i,i]", 128, 128));
        /* Fully debiased: the paper's semi-debiased term at p = 0.4 compares
         * X[0:n] with X[n':n+n'], which share n - n' rows that match
         * themselves at no cost, so the repulsion that offsets the
         * entropic blur is weak and the numbers collapse toward their
         * class means (credit_data without noise: Assets sd 0.009 against
         * 0.112 real, Income 0.18 against 0.33). At p = 1 the two halves
         * are disjoint: sd 0.055 and 0.27, TV 0.043 -> 0.028
         * (docs/benchmarks.md, tables). Data-free: no privacy effect. */
        fill(s, "ot.debias_fraction", json_real(1.0));
        /* Class-conditional calibration (calib_table.h) on labelled tables:
         * one Gaussian release of per-class means and category frequencies
         * that the served samples are moved onto. credit_data: categorical
         * TV 0.24-0.28 -> 0.02-0.03 at epsilon 5 (docs/benchmarks.md, issue
         * 28, fourth pass). Its noise follows the target: s = max(1,
         * 20 / sqrt(epsilon)), 8.9 at epsilon 5 (s = 3 and 5 left the steps
         * too little and scored lower, 0.70 against 0.74 at 8, 5 runs
         * each), 1 from epsilon 400 on (a per-class frequency within about
         * 0.01 on 1000 rows of a class). */
        if (labelled && desc->model == PG_PRIVACY_CENTRAL && t->width == desc->d) {
            fill(s, "calibration.class_means", json_true());
            fill(s, "calibration.samples_per_class", json_integer(4000));
            /* Where the rule above the file says (PG_DEFAULTS_INDEP_*), the
             * samples are each class's released marginals drawn
             * independently (calibration.independence 1): on credit_data at
             * epsilon 5 the generator's within-class dependence scored
             * 0.707-0.784 over 10 runs, the classes' marginals alone
             * 0.743-0.768. The steps then matter only for the shape inside
             * the quantile map's bins, so more of the budget goes to the
             * releases that set the marginals: s = max(1, 9 / sqrt(epsilon)),
             * 4 at epsilon 5 (0.756 -> 0.760, categorical TV 0.034 -> 0.020;
             * 2.5 with a map at 2 scored 0.755), and the map's noise
             * max(2, 6.7 / sqrt(epsilon)), 3 at epsilon 5 (since issue 28's
             * eps39 pass below epsilon 100: PG_DEFAULTS_QMAP_INDEP, 1.5 at
             * epsilon 5, over PG_DEFAULTS_QMAP_INDEP_BINS bins). */
            fill_independence(s, t, desc, false);
            fill_class_calibration(s); /* what the rule above left unset */
        }
    }
    /* swd_gen on a central typed table (docs/benchmarks.md, "swd_gen on
     * tables"). Every release adds noise of std S x diameter to each row's
     * projection (credit_data: diameter 7.2 with the label part, the data's
     * projections have sd 0.3); the old parameter table (200 releases of
     * 500 rows, or 2000 of all rows) gave S = 0.35 / 1.1 at epsilon 1000, a
     * noise std of 2.5 / 8, under which the smoothed loss only sees the
     * mean and the numbers collapsed (per-class sd 0.004-0.02). Instead:
     * - one orthonormal block of d + C directions per release (w = 1: the
     *   whole block costs what one direction costs);
     * - 10 releases of all rows, each reused for 100 steps with fresh
     *   latents and smoothing, a step drawing one of the releases made so
     *   far (post-processing): S = 0.079 at epsilon 1000;
     * - as many generated rows per step as data rows (up to 4096): the
     *   smoothing noise of the generated side then averages over as many
     *   rows as the data side's (256 rows: 0.728 accuracy, all rows 0.768);
     * - the quantile map spread over the whole range (k = 1): the numbers'
     *   share of each projection grows against the schema's diameter,
     *   which the spread does not change. */
    if (strcmp(method, "swd_gen") == 0 && desc->model == PG_PRIVACY_CENTRAL &&
        t->width == desc->d && desc->n >= 2 && !pg_spec_get(s, "latent")) {
        const json_t *a = pg_spec_get(s, "labels.class_alpha");
        size_t C = labelled && !(json_is_number(a) && !(json_number_value(a) > 0.0))
                       ? (size_t)desc->num_classes
                       : 0;
        fill(s, "projections.per_step", json_integer((json_int_t)(desc->d + C)));
        fill(s, "train.batch_size", json_integer((json_int_t)desc->n));
        fill(s, "train.gen_batch", json_integer((json_int_t)(desc->n < 4096 ? desc->n : 4096)));
        fill(s, "train.steps", json_integer(1000));
        fill(s, "train.steps_per_release", json_integer(100));
        if (pg_qmap_columns(t) > 0) fill(s, "encoding.quantile_spread", json_real(1.0));
        /* Labelled: dp_sinkhorn's independence rule (fill_independence),
         * before the map's and the calibration's noise fills below, under
         * the numeric rule it needs (calib_wire.h: "quantile", which the
         * block below fills when unset). Its releases' noise multipliers
         * are charged under swd_gen's replace-one relation like any other
         * (swd_spec.c). credit_data: docs/benchmarks.md, "swd_gen
         * calibrated per class". */
        const json_t *num = pg_spec_get(s, "calibration.numeric");
        if (C > 0 && (!num || json_is_null(num) ||
                      (json_is_string(num) && strcmp(json_string_value(num), "quantile") == 0))) {
            fill(s, "calibration.class_means", json_true());
            /* Where the rule holds, swd_gen's releases are charged under
             * replace-one, so at a given multiplier their noise is twice
             * dp_sinkhorn's against what one row moves; where the floors
             * bind (large epsilon), halve them: class statistics max(0.5,
             * 9 / sqrt(epsilon)), map max(1, 6.7 / sqrt(epsilon)),
             * sub-bins max(0.25, 13.4 / sqrt(epsilon)), copula twice
             * max(0.5, PG_DEFAULTS_COPULA_NOISE / epsilon). The generator's
             * samples being unused there, the projections' share shrinks
             * at no cost. credit_data at epsilon 1000, 10 steps (one
             * release), 10 runs each: 0.785 (0.778-0.791) -> 0.792
             * (0.786-0.800); with the floors over sqrt(2) 0.791
             * (0.778-0.807); dp_sinkhorn with one step 0.786
             * (docs/benchmarks.md, "Issue 28, eps 1000 (hi39)"). Unless a
             * job asks for independence 0 (any other share is
             * post-processing: a resumed job may change it under the same
             * plan, so the noises must not follow it). Before
             * fill_independence and the general fills, which then leave
             * these. */
            const json_t *ep = pg_spec_get(s, "privacy.epsilon");
            double e = json_is_number(ep) ? json_number_value(ep) : 0.0;
            const json_t *ind = pg_spec_get(s, "calibration.independence");
            if (indep_rule(s, t, desc, e) &&
                !(json_is_number(ind) && !(json_number_value(ind) > 0.0))) {
                fill(s, "calibration.noise_multiplier", json_real(fmax(0.5, 9.0 / sqrt(e))));
                fill(s, "encoding.quantile_noise", json_real(fmax(1.0, 6.7 / sqrt(e))));
                fill(s, "encoding.quantile_sub_noise", json_real(fmax(0.25, 13.4 / sqrt(e))));
                fill(s, "calibration.copula_noise",
                     json_real(2.0 * fmax(0.5, PG_DEFAULTS_COPULA_NOISE / e)));
            }
            fill_independence(s, t, desc, true);
        }
    }
    /* The central generators train on numeric columns mapped through a DP
     * quantile map (engine/data/qmap.h): a tanh head squeezes a skewed
     * column at the edge of its range (credit_data: Assets sd 0.005-0.01
     * against 0.11 real), while mapped columns are spread over the range
     * (docs/benchmarks.md, tables). Its cost, RDP alpha / 200 at the
     * default noise, is composed into the plan. */
    if ((strcmp(method, "dp_sinkhorn") == 0 || strcmp(method, "swd_gen") == 0) &&
        desc->model == PG_PRIVACY_CENTRAL && t->width == desc->d && pg_qmap_columns(t) > 0) {
        fill(s, "encoding.quantile_map", json_true());
        /* Its noise follows the target: s = max(2, 10 / sqrt(epsilon)) keeps
         * its share of the budget about constant (credit_data, 1500 steps:
         * the steps' noise multiplier grows 1.5 % at epsilon 5 and 10 % at
         * epsilon 1 next to s = 10 at 1), and at large epsilon the counts
         * are nearly exact instead of carrying a noise std of 30 each. */
        const json_t *eps = pg_spec_get(s, "privacy.epsilon");
        if (json_is_number(eps) && json_number_value(eps) > 0) {
            double q = 10.0 / sqrt(json_number_value(eps));
            fill(s, "encoding.quantile_noise", json_real(q < 2.0 ? 2.0 : q));
        }
    }
    /* swd_gen on labelled central tables (class_alpha > 0, the default):
     * the per-class calibration dp_sinkhorn has (calib_wire.h). Its
     * releases see each row in full where the sliced loss sees it through
     * a projection noised at S x the schema's diameter, so at epsilon 5
     * (noise std 22 against projections of sd 0.3) the generator learns
     * little beyond the mean and the release is what carries the classes'
     * frequencies and numbers (docs/benchmarks.md, swd_gen calibrated). */
    if (strcmp(method, "swd_gen") == 0 && labelled && desc->model == PG_PRIVACY_CENTRAL &&
        t->width == desc->d && !pg_spec_get(s, "latent")) {
        const json_t *a = pg_spec_get(s, "labels.class_alpha");
        if (!(json_is_number(a) && !(json_number_value(a) > 0.0))) {
            fill_class_calibration(s);
            if (pg_spec_bool(s, "encoding.quantile_map", false) &&
                pg_spec_bool(s, "calibration.class_means", false))
                fill(s, "calibration.numeric", json_string("quantile"));
            fill_sub(s);
        }
    }
    /* dp_sinkhorn on labelled central tables, with the map and the class
     * calibration both on: the map released per class (same cost, qmap.h)
     * and each class's numbers sent onto its released CDF
     * (calibration.numeric "quantile", calib_table.h). Against the shift:
     * credit_data 0.716 -> 0.728 at epsilon 5 (10 and 15 runs), 0.785 ->
     * 0.786 at 1000; attrition 0.720 -> 0.796 at 1000; numeric KS 0.21 ->
     * 0.16 and 0.19 -> 0.09 (docs/benchmarks.md, issue 28 fifth pass). */
    if (strcmp(method, "dp_sinkhorn") == 0 && labelled && desc->model == PG_PRIVACY_CENTRAL &&
        t->width == desc->d && pg_spec_bool(s, "encoding.quantile_map", false) &&
        pg_spec_bool(s, "calibration.class_means", false)) {
        fill(s, "calibration.numeric", json_string("quantile"));
        fill_sub(s);
    }
}
