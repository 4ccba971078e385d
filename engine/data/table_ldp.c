/* engine/data/table_ldp.c - column-by-column local DP (contract in table_ldp.h). */
#include "engine/core/fmt.h"
#include "engine/data/table_ldp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/privacy/privacy.h"

static const char *const mech_names[] = {NULL, "randomized_response", "laplace", "gaussian"};

static int is_numeric(const pg_table_col *c)
{
    return c->type == PG_COL_CONTINUOUS || c->type == PG_COL_INTEGER;
}

/* Values randomized response ranges over: categories (or false/true), then
 * "missing" when nullable. */
static size_t rr_k(const pg_table_col *c)
{
    return (c->type == PG_COL_BOOLEAN ? 2 : c->ncat) + (size_t)c->nullable;
}

void pg_ldp_plan_free(pg_ldp_plan *plan)
{
    if (!plan) return;
    free(plan->cols);
    memset(plan, 0, sizeof *plan);
}

/* Noise of a numeric column's value unit for its epsilon (minus the
 * indicator's share when nullable) and delta. */
static int numeric_scale(const pg_table *t, size_t c, int mech, pg_ldp_column *pc, pg_error *err)
{
    pc->units = 1;
    pc->sensitivity = t->hi - t->lo;
    double eps = pc->epsilon - pc->missing_epsilon;
    pg_error e = {0};
    int rc =
        !(eps > 0.0) ? pg_error_set(&e, PG_EINVAL, "no epsilon left for the value")
        : mech == PG_LDP_LAPLACE
            ? pg_privacy_laplace_scale(pc->sensitivity, eps, 1, &pc->noise_scale, NULL, &e)
            : pg_privacy_gaussian_analytic(eps, pc->delta, pc->sensitivity, &pc->noise_scale, &e);
    if (!rc && t->cols[c].nullable)
        rc = pg_rr_keep_probability(2, pc->missing_epsilon, &pc->missing_keep, &e);
    if (rc) return pg_error_set(err, rc, "column '%s': %s", t->cols[c].name, e.msg);
    return PG_OK;
}

/* ---- The label-aware split ----------------------------------------------
 *
 * Objective. A class-conditional statistic of a feature coordinate g (a
 * numeric value unit, or the indicator of one state of a randomized-response
 * block) is estimated from the reports by debiasing both channels; the
 * difference of two classes' debiased moments is
 *   mean(g~ (1{y~ = c} - 1{y~ = c'})) / ((P - Q) gain_g)
 * (the label's Q cancels), with P - Q the label channel's keep minus other
 * probability and gain_g the feature channel's (p - q for a state, 1 for a
 * value). Its standard error is sqrt(Var g~ ...) / (P - Q) / gain_g, so its
 * signal-to-noise ratio, for a class difference that is a fixed fraction of
 * the coordinate's own spread, is proportional to
 *   (P - Q) * rho_g,  rho_g^2 = gain_g^2 Var(g) / Var(g~)
 * (the share of the report's variance that is the true value's). Per
 * coordinate, data-independently (only the schema, epsilon and K):
 *   label, K values          P - Q = (e^eL - 1) / (e^eL + K - 1)
 *   state of a k-ary RR      rho^2 = (p - q)^2 (uniform states: Var g~ =
 *                            Var g = (1/k)(1 - 1/k))
 *   numeric value            rho^2 = s^2 / (s^2 + noise variance), s^2 =
 *                            (hi - lo)^2 / 12 (a value uniform on the range);
 *                            noise variance 2 (Delta / e_v)^2 (Laplace, the
 *                            grid's inflation of b ignored) or sigma^2
 *                            (analytic Gaussian), e_v the value's epsilon
 *                            (half the column's when nullable)
 * The split maximises (P - Q)^2 * mean over feature columns of rho^2 (the
 * mean squared SNR, i.e. the chi-square noncentrality of a test for a class
 * difference) over eL in (0, eps), the features sharing eps - eL evenly.
 * With noise-dominated numerics and K = 2 this is tanh(eL / 2) (eps - eL)
 * squared, whose optimum at eps 5 is eL ~ 1.86 against 5/14 for the even
 * split over credit_data's 14 columns (SNR x2.8). Solved numerically: a grid
 * of SPLIT_GRID points, then golden-section search around the best one. */

#define SPLIT_GRID 512

/* p - q of k-ary randomized response at eps (keep minus other), written so
 * that a large eps does not overflow. */
static double rr_gain(size_t k, double eps)
{
    double e = exp(-eps);
    return -expm1(-eps) / (1.0 + (double)(k - 1) * e);
}

typedef struct split_ctx {
    const pg_table *t;
    int numeric;
    double eps, delta_col; /* total; Gaussian delta per numeric column */
    size_t nfeat;
} split_ctx;

/* rho^2 of a numeric value at e_v; -1 when the calibration fails. */
static double numeric_rho2(const split_ctx *s, double ev)
{
    double n2; /* noise variance over (hi - lo)^2 */
    if (s->numeric == PG_LDP_LAPLACE) {
        n2 = 2.0 / (ev * ev);
    } else {
        double sigma;
        if (pg_privacy_gaussian_analytic(ev, s->delta_col, 1.0, &sigma, NULL)) return -1.0;
        n2 = sigma * sigma;
    }
    return (1.0 / 12.0) / (1.0 / 12.0 + n2);
}

/* The objective at a label epsilon eL (see above); -1 on a failed
 * calibration (treated as worse than any split). */
static double split_objective(const split_ctx *s, double eL)
{
    const pg_table *t = s->t;
    double ef = (s->eps - eL) / (double)s->nfeat, sum = 0.0;
    double rho_num = -2.0, rho_null = -2.0; /* cached: same for every column */
    for (size_t c = 0; c < t->ncols; c++) {
        const pg_table_col *col = &t->cols[c];
        if (c == t->label) continue;
        if (!is_numeric(col)) {
            double g = rr_gain(rr_k(col), ef);
            sum += g * g;
            continue;
        }
        double *r = col->nullable ? &rho_null : &rho_num;
        if (*r < -1.5) *r = numeric_rho2(s, col->nullable ? ef / 2.0 : ef);
        if (*r < 0.0) return -1.0;
        sum += *r;
    }
    double gl = rr_gain(rr_k(&t->cols[t->label]), eL);
    return gl * gl * sum / (double)s->nfeat;
}

int pg_ldp_label_epsilon(const pg_table *t, int numeric, double epsilon_total, double delta_total,
                         double *eps_label, pg_error *err)
{
    if (t->label == PG_TABLE_NONE)
        return pg_error_set(err, PG_EINVAL, "the label split needs a table with a label");
    if (!(epsilon_total > 0.0) || !isfinite(epsilon_total))
        return pg_error_set(err, PG_EINVAL, "the label split needs a total epsilon > 0");
    split_ctx s = {.t = t, .numeric = numeric, .eps = epsilon_total, .nfeat = t->ncols - 1};
    size_t nnum = 0;
    for (size_t c = 0; c < t->ncols; c++) nnum += c != t->label && is_numeric(&t->cols[c]);
    if (numeric == PG_LDP_GAUSSIAN && nnum) s.delta_col = delta_total / (double)nnum;
    if (s.nfeat == 0) {
        *eps_label = epsilon_total;
        return PG_OK;
    }
    size_t best = 1;
    double fbest = -1.0, h = epsilon_total / SPLIT_GRID;
    for (size_t i = 1; i < SPLIT_GRID; i++) {
        double f = split_objective(&s, h * (double)i);
        if (f > fbest) fbest = f, best = i;
    }
    if (!(fbest > 0.0))
        return pg_error_set(err, PG_EINVAL,
                            "no split of epsilon %g leaves every column a usable epsilon",
                            epsilon_total);
    /* Golden section on the grid's bracket around its best point (the label
     * factor rises and the feature factor falls with eL, each log-concave;
     * the result is kept only if it beats the grid's best). */
    const double phi = 0.6180339887498949;
    double a = h * (double)(best - 1), b = h * (double)(best + 1);
    double x1 = b - phi * (b - a), x2 = a + phi * (b - a);
    double f1 = split_objective(&s, x1), f2 = split_objective(&s, x2);
    for (int it = 0; it < 200 && b - a > 1e-13 * epsilon_total; it++) {
        if (f1 >= f2) {
            b = x2, x2 = x1, f2 = f1;
            x1 = b - phi * (b - a);
            f1 = split_objective(&s, x1);
        } else {
            a = x1, x1 = x2, f1 = f2;
            x2 = a + phi * (b - a);
            f2 = split_objective(&s, x2);
        }
    }
    double x = f1 >= f2 ? x1 : x2, fx = f1 >= f2 ? f1 : f2;
    *eps_label = fx >= fbest ? x : h * (double)best;
    return PG_OK;
}

int pg_ldp_plan_make(const pg_table *t, int numeric, double epsilon_total, double delta_total,
                     pg_ldp_plan *plan, pg_error *err)
{
    return pg_ldp_plan_make_split(t, numeric, epsilon_total, delta_total, PG_LDP_SPLIT_DEFAULT,
                                  plan, err);
}

int pg_ldp_plan_make_split(const pg_table *t, int numeric, double epsilon_total, double delta_total,
                           int split, pg_ldp_plan *plan, pg_error *err)
{
    memset(plan, 0, sizeof *plan);
    if (numeric != PG_LDP_LAPLACE && numeric != PG_LDP_GAUSSIAN)
        return pg_error_set(err, PG_EINVAL, "numeric columns take laplace or gaussian noise");
    if (!(epsilon_total >= 0.0) || !isfinite(epsilon_total))
        return pg_error_set(err, PG_EINVAL, "total epsilon must be finite and >= 0");
    size_t nnum = 0;
    for (size_t c = 0; c < t->ncols; c++) {
        nnum += c != t->label && is_numeric(&t->cols[c]);
        if (epsilon_total > 0.0 && t->cols[c].epsilon > 0.0)
            return pg_error_set(err, PG_EINVAL,
                                "column '%s' has its own epsilon in the schema: give either a "
                                "total epsilon or per-column epsilons, not both",
                                t->cols[c].name);
        if (epsilon_total == 0.0 && !(t->cols[c].epsilon > 0.0))
            return pg_error_set(err, PG_EINVAL,
                                "column '%s' has no epsilon in the schema: give a total epsilon "
                                "or an epsilon for every column",
                                t->cols[c].name);
    }
    if (numeric == PG_LDP_GAUSSIAN && nnum > 0 && !(delta_total > 0.0 && delta_total < 1.0))
        return pg_error_set(err, PG_EINVAL, "the Gaussian mechanism needs a total delta in (0, 1)");
    if ((numeric == PG_LDP_LAPLACE || nnum == 0) && delta_total != 0.0)
        return pg_error_set(err, PG_EINVAL,
                            "delta applies only to Gaussian noise on numeric "
                            "columns: drop it");
    if (split != PG_LDP_SPLIT_DEFAULT && split != PG_LDP_SPLIT_EVEN && split != PG_LDP_SPLIT_LABEL)
        return pg_error_set(err, PG_EINVAL, "split must be even or label");
    if (split != PG_LDP_SPLIT_DEFAULT && epsilon_total == 0.0)
        return pg_error_set(err, PG_EINVAL,
                            "a split applies to a total epsilon, not to the schema's per-column "
                            "epsilons");
    if (split == PG_LDP_SPLIT_LABEL && t->label == PG_TABLE_NONE)
        return pg_error_set(err, PG_EINVAL, "split 'label' needs a table with a label");
    /* The label's share; the features split the rest evenly. */
    double eps_label = 0.0, eps_feat = 0.0;
    int label_split = epsilon_total > 0.0 && t->label != PG_TABLE_NONE && t->ncols > 1 &&
                      split != PG_LDP_SPLIT_EVEN;
    if (label_split) {
        int rc = pg_ldp_label_epsilon(t, numeric, epsilon_total, delta_total, &eps_label, err);
        if (rc) return rc;
        eps_feat = (epsilon_total - eps_label) / (double)(t->ncols - 1);
        /* The columns' sum, in the order the plan adds them, must not exceed
         * the total by rounding: the declared total is then exactly the
         * owner's epsilon (the label gives up the last ulps). */
        for (int it = 0; it < 64; it++) {
            double sum = 0.0;
            for (size_t c = 0; c < t->ncols; c++) sum += c == t->label ? eps_label : eps_feat;
            if (sum <= epsilon_total) break;
            eps_label = nextafter(eps_label, 0.0);
        }
    }
    plan->cols = calloc(t->ncols, sizeof *plan->cols);
    if (!plan->cols) return pg_error_set(err, PG_ENOMEM, "out of memory");
    plan->ncols = t->ncols;
    plan->numeric = numeric;
    for (size_t c = 0; c < t->ncols; c++) {
        const pg_table_col *col = &t->cols[c];
        pg_ldp_column *pc = &plan->cols[c];
        pc->epsilon = label_split           ? (c == t->label ? eps_label : eps_feat)
                      : epsilon_total > 0.0 ? epsilon_total / (double)t->ncols
                                            : col->epsilon;
        int rc;
        if (c != t->label && is_numeric(col)) {
            pc->mechanism = numeric;
            if (numeric == PG_LDP_GAUSSIAN) pc->delta = delta_total / (double)nnum;
            if (col->nullable) pc->missing_epsilon = pc->epsilon / 2.0;
            rc = numeric_scale(t, c, numeric, pc, err);
        } else {
            pc->mechanism = PG_LDP_RR;
            pc->k = rr_k(col);
            rc = pg_rr_keep_probability(pc->k, pc->epsilon, &pc->keep, err);
        }
        if (rc) {
            pg_ldp_plan_free(plan);
            return rc;
        }
        plan->epsilon += pc->epsilon;
        plan->delta += pc->delta;
    }
    /* the sum is at most the total (above): declare the owner's total */
    if (label_split) plan->epsilon = epsilon_total;
    return PG_OK;
}

/* The index randomized response works on, for a valid block. */
static int block_value(const pg_table *t, size_t c, const float *row, size_t *v)
{
    const pg_table_col *col = &t->cols[c];
    const float *u = row + col->offset;
    size_t vw = col->width - (size_t)col->nullable;
    if (col->nullable) {
        if (u[vw] != 0.0f && u[vw] != 1.0f) return 0;
        if (u[vw] == 1.0f) {
            for (size_t j = 0; j < vw; j++)
                if (u[j] != 0.0f) return 0;
            *v = rr_k(col) - 1;
            return 1;
        }
    }
    if (is_numeric(col)) return isfinite(u[0]) && u[0] >= t->lo && u[0] <= t->hi;
    if (col->type == PG_COL_BOOLEAN) {
        *v = u[0] == 1.0f;
        return u[0] == 0.0f || u[0] == 1.0f;
    }
    size_t ones = 0;
    for (size_t j = 0; j < vw; j++) {
        if (u[j] == 1.0f)
            ones++, *v = j;
        else if (u[j] != 0.0f)
            return 0;
    }
    return ones == 1;
}

static int check_rows(const pg_table *t, const float *x, const int64_t *labels, size_t n,
                      pg_error *err)
{
    size_t classes = pg_table_num_classes(t), v;
    for (size_t i = 0; i < n; i++)
        for (size_t c = 0; c < t->ncols; c++) {
            int ok = c == t->label ? labels && labels[i] >= 0 && (uint64_t)labels[i] < classes
                                   : block_value(t, c, x + i * t->width, &v);
            if (!ok)
                return pg_error_set(err, PG_EINVAL,
                                    "row %zu, column '%s': not a valid encoding inside the "
                                    "schema's bounds (the noise is calibrated for those)",
                                    i + 1, t->cols[c].name);
        }
    return PG_OK;
}

int pg_table_check_encoded(const pg_table *t, const float *x, size_t n, pg_error *err)
{
    size_t v;
    for (size_t i = 0; i < n; i++)
        for (size_t c = 0; c < t->ncols; c++)
            if (c != t->label && !block_value(t, c, x + i * t->width, &v))
                return pg_error_set(err, PG_EINVAL,
                                    "row %zu, column '%s': not a valid encoding inside the "
                                    "schema's bounds",
                                    i + 1, t->cols[c].name);
    return PG_OK;
}

int pg_ldp_apply(pg_rng *rng, const pg_table *t, const pg_ldp_plan *plan, float *x, int64_t *labels,
                 size_t n, pg_error *err)
{
    if (!pg_rng_is_secure(rng))
        return pg_error_set(err, PG_EPRIVACY, "local DP needs the secure generator");
    if (!plan || plan->ncols != t->ncols)
        return pg_error_set(err, PG_EINVAL, "the plan does not belong to this table");
    if (n == 0) return PG_OK;
    int rc = check_rows(t, x, labels, n, err);
    if (rc) return rc;
    size_t *vals = malloc(n * sizeof *vals);
    float *blk = malloc(n * sizeof *blk);
    if (!vals || !blk) {
        free(vals);
        free(blk);
        return pg_error_set(err, PG_ENOMEM, "out of memory");
    }
    for (size_t c = 0; c < t->ncols && !rc; c++) {
        const pg_table_col *col = &t->cols[c];
        const pg_ldp_column *pc = &plan->cols[c];
        if (pc->mechanism == PG_LDP_RR) {
            for (size_t i = 0; i < n; i++) {
                if (c == t->label)
                    vals[i] = (size_t)labels[i];
                else
                    block_value(t, c, x + i * t->width, &vals[i]);
            }
            rc = pg_rr_randomize(rng, pc->k, pc->epsilon, vals, vals, n, err);
            for (size_t i = 0; i < n && !rc; i++) {
                if (c == t->label) {
                    labels[i] = (int64_t)vals[i];
                    continue;
                }
                pg_table_value v = {0};
                if (col->nullable && vals[i] == pc->k - 1)
                    v.missing = 1;
                else
                    v.cat = vals[i];
                rc = pg_table_encode_value(t, c, &v, PG_TABLE_BOUNDS_REFUSE, x + i * t->width, err);
            }
            continue;
        }
        float *unit0 = x + col->offset;
        if (col->nullable) {
            for (size_t i = 0; i < n; i++) vals[i] = unit0[i * t->width + 1] == 1.0f;
            rc = pg_rr_randomize(rng, 2, pc->missing_epsilon, vals, vals, n, err);
            for (size_t i = 0; i < n && !rc; i++) unit0[i * t->width + 1] = (float)vals[i];
        }
        for (size_t i = 0; i < n; i++) blk[i] = unit0[i * t->width];
        double scale;
        if (!rc)
            rc = pc->mechanism == PG_LDP_LAPLACE
                     ? pg_privacy_laplace_mech(rng, blk, n, 1, pc->sensitivity,
                                               pc->epsilon - pc->missing_epsilon, &scale, err)
                     : pg_privacy_gaussian_noise(rng, blk, n, pc->noise_scale, err);
        for (size_t i = 0; i < n && !rc; i++) unit0[i * t->width] = blk[i];
    }
    free(vals);
    free(blk);
    return rc;
}

static int jset(json_t *o, const char *k, json_t *v)
{
    return v ? json_object_set_new(o, k, v) : -1;
}

json_t *pg_ldp_declaration(const pg_table *t, const pg_ldp_plan *plan, uint64_t rows)
{
    json_t *d = json_object(), *cols = json_array();
    int bad = !d || !cols;
    bad |= jset(d, "model", json_string("local"));
    bad |= jset(d, "mechanism", json_string("per_column"));
    bad |= jset(d, "neighbouring", json_string("any_two_rows"));
    bad |= jset(d, "composition", json_string("basic"));
    bad |= jset(d, "epsilon", json_real(plan->epsilon));
    bad |= jset(d, "delta", plan->delta > 0.0 ? json_real(plan->delta) : json_null());
    bad |= jset(d, "rows", json_integer((json_int_t)rows));
    for (size_t c = 0; !bad && c < t->ncols; c++) {
        const pg_ldp_column *pc = &plan->cols[c];
        json_t *j = json_object();
        bad |= json_array_append_new(cols, j);
        bad |= jset(j, "name", json_string(t->cols[c].name));
        bad |= jset(j, "mechanism", json_string(mech_names[pc->mechanism]));
        bad |= jset(j, "epsilon", json_real(pc->epsilon));
        if (pc->mechanism == PG_LDP_RR) {
            bad |= jset(j, "k", json_integer((json_int_t)pc->k));
            bad |= jset(j, "keep_probability", json_real(pc->keep));
            bad |= jset(j, "missing_is_a_value", json_boolean(t->cols[c].nullable));
            continue;
        }
        int lap = pc->mechanism == PG_LDP_LAPLACE;
        bad |= jset(j, "delta", lap ? json_null() : json_real(pc->delta));
        bad |= jset(j, "units", json_integer((json_int_t)pc->units));
        bad |= jset(j, "norm", json_string(lap ? "l1" : "l2"));
        bad |= jset(j, "sensitivity", json_real(pc->sensitivity));
        bad |= jset(j, "noise_scale", json_real(pc->noise_scale));
        bad |= jset(j, "calibration",
                    json_string(lap ? "discrete_laplace_grid" : "analytic_gaussian"));
        if (!t->cols[c].nullable) continue;
        json_t *m = json_object();
        bad |= jset(j, "missing", m);
        bad |= jset(m, "mechanism", json_string("randomized_response"));
        bad |= jset(m, "epsilon", json_real(pc->missing_epsilon));
        bad |= jset(m, "k", json_integer(2));
        bad |= jset(m, "keep_probability", json_real(pc->missing_keep));
    }
    bad |= jset(d, "columns", cols);
    if (bad) {
        json_decref(d);
        return NULL;
    }
    return d;
}

static int bad_field(char *field, const char *path, size_t idx, const char *key)
{
    if (field) {
        if (idx == (size_t)-1)
            snprintf(field, PG_LDP_FIELD_MAX, "%s", path);
        else
            snprintf(field, PG_LDP_FIELD_MAX, "%s[%zu].%s", path, idx, key);
    }
    return 0;
}

static int num(const json_t *o, const char *k, double *v)
{
    const json_t *j = json_object_get(o, k);
    if (!json_is_number(j)) return 0;
    *v = json_number_value(j);
    return isfinite(*v);
}

int pg_ldp_check_declaration(const pg_table *t, const json_t *decl, double *epsilon, double *delta,
                             char *field, pg_error *err)
{
    if (field) field[0] = '\0';
    const json_t *cols = json_object_get(decl, "columns");
    const char *model = json_string_value(json_object_get(decl, "model"));
    const char *mech = json_string_value(json_object_get(decl, "mechanism"));
    if (!json_is_object(decl) || !model || strcmp(model, "local") || !mech ||
        strcmp(mech, "per_column")) {
        bad_field(field, "privacy", (size_t)-1, NULL);
        return pg_error_set(err, PG_EINVAL,
                            "a table declaration has model 'local' and mechanism 'per_column'");
    }
    double eps_total, delta_total = 0.0;
    const json_t *dj = json_object_get(decl, "delta");
    if (!num(decl, "epsilon", &eps_total) || !(eps_total > 0.0) ||
        (dj && !json_is_null(dj) && !num(decl, "delta", &delta_total)) || delta_total < 0.0 ||
        delta_total >= 1.0) {
        bad_field(field, "privacy.epsilon", (size_t)-1, NULL);
        return pg_error_set(err, PG_EINVAL, "declaration: epsilon > 0 and delta in [0, 1) needed");
    }
    if (!json_is_array(cols) || json_array_size(cols) != t->ncols) {
        bad_field(field, "privacy.columns", (size_t)-1, NULL);
        return pg_error_set(err, PG_EINVAL, "declaration: 'columns' must list the %zu columns",
                            t->ncols);
    }
    double eps_sum = 0.0, delta_sum = 0.0;
    for (size_t c = 0; c < t->ncols; c++) {
        const pg_table_col *col = &t->cols[c];
        const json_t *j = json_array_get(cols, c);
        const char *name = json_string_value(json_object_get(j, "name"));
        const char *m = json_string_value(json_object_get(j, "mechanism"));
        if (!name || strcmp(name, col->name)) {
            bad_field(field, "privacy.columns", c, "name");
            return pg_error_set(err, PG_EINVAL, "declaration column %zu must be '%s'", c + 1,
                                col->name);
        }
        pg_ldp_column pc = {0};
        if (!num(j, "epsilon", &pc.epsilon) || !(pc.epsilon > 0.0)) {
            bad_field(field, "privacy.columns", c, "epsilon");
            return pg_error_set(err, PG_EINVAL, "column '%s': epsilon must be > 0", col->name);
        }
        eps_sum += pc.epsilon;
        int numeric = c != t->label && is_numeric(col);
        int want = !numeric                      ? PG_LDP_RR
                   : m && !strcmp(m, "gaussian") ? PG_LDP_GAUSSIAN
                                                 : PG_LDP_LAPLACE;
        if (!m || strcmp(m, mech_names[want])) {
            bad_field(field, "privacy.columns", c, "mechanism");
            return pg_error_set(err, PG_EINVAL, "column '%s': mechanism must be %s", col->name,
                                numeric ? "laplace or gaussian" : "randomized_response");
        }
        if (want == PG_LDP_RR) {
            double keep, pmax;
            const json_t *kj = json_object_get(j, "k");
            if (!json_is_integer(kj) || (uint64_t)json_integer_value(kj) != rr_k(col)) {
                bad_field(field, "privacy.columns", c, "k");
                return pg_error_set(err, PG_EINVAL, "column '%s': k must be %zu", col->name,
                                    rr_k(col));
            }
            if (!num(j, "keep_probability", &keep) ||
                pg_rr_keep_probability(rr_k(col), pc.epsilon, &pmax, err)) {
                bad_field(field, "privacy.columns", c, "keep_probability");
                return pg_error_set(err, PG_EINVAL, "column '%s': keep_probability is required",
                                    col->name);
            }
            /* A smaller keep probability is more private, never less. */
            if (!(keep >= 1.0 / (double)rr_k(col)) || keep > pmax) {
                bad_field(field, "privacy.columns", c, "keep_probability");
                char f1[PG_FMT_F64_MAX], f2[PG_FMT_F64_MAX], f3[PG_FMT_F64_MAX];
                return pg_error_set(err, PG_EPRIVACY,
                                    "column '%s': keep probability %s is not in [1/k, %s] "
                                    "for epsilon %s",
                                    col->name, pg_fmt_f64(keep, f1), pg_fmt_f64(pmax, f2),
                                    pg_fmt_f64(pc.epsilon, f3));
            }
            continue;
        }
        pc.mechanism = want;
        if (want == PG_LDP_GAUSSIAN &&
            (!num(j, "delta", &pc.delta) || !(pc.delta > 0.0 && pc.delta < 1.0))) {
            bad_field(field, "privacy.columns", c, "delta");
            return pg_error_set(err, PG_EINVAL, "column '%s': delta in (0, 1) needed", col->name);
        }
        delta_sum += pc.delta;
        if (col->nullable) {
            const json_t *mj = json_object_get(j, "missing");
            const char *mm = json_string_value(json_object_get(mj, "mechanism"));
            const json_t *kj = json_object_get(mj, "k");
            double keep, pmax;
            if (!mm || strcmp(mm, "randomized_response") || !json_is_integer(kj) ||
                json_integer_value(kj) != 2 || !num(mj, "epsilon", &pc.missing_epsilon) ||
                !(pc.missing_epsilon > 0.0 && pc.missing_epsilon < pc.epsilon) ||
                !num(mj, "keep_probability", &keep)) {
                bad_field(field, "privacy.columns", c, "missing");
                return pg_error_set(err, PG_EINVAL,
                                    "column '%s': 'missing' must declare randomized_response, "
                                    "k = 2, an epsilon below the column's and keep_probability",
                                    col->name);
            }
            pg_rr_keep_probability(2, pc.missing_epsilon, &pmax, NULL);
            if (!(keep >= 0.5) || keep > pmax) {
                bad_field(field, "privacy.columns", c, "missing");
                char f1[PG_FMT_F64_MAX], f2[PG_FMT_F64_MAX];
                return pg_error_set(err, PG_EPRIVACY,
                                    "column '%s': missing keep probability %s is not in "
                                    "[1/2, %s]",
                                    col->name, pg_fmt_f64(keep, f1), pg_fmt_f64(pmax, f2));
            }
        }
        double declared, sens;
        if (!num(j, "noise_scale", &declared) || !num(j, "sensitivity", &sens)) {
            bad_field(field, "privacy.columns", c, "noise_scale");
            return pg_error_set(err, PG_EINVAL,
                                "column '%s': sensitivity and noise_scale are required", col->name);
        }
        int rc = numeric_scale(t, c, want, &pc, err);
        if (rc) {
            bad_field(field, "privacy.columns", c, "epsilon");
            return rc;
        }
        if (sens < pc.sensitivity) {
            bad_field(field, "privacy.columns", c, "sensitivity");
            char f1[PG_FMT_F64_MAX], f2[PG_FMT_F64_MAX];
            return pg_error_set(err, PG_EPRIVACY,
                                "column '%s': sensitivity %s is below hi - lo = %s", col->name,
                                pg_fmt_f64(sens, f1), pg_fmt_f64(pc.sensitivity, f2));
        }
        if (declared < pc.noise_scale) {
            bad_field(field, "privacy.columns", c, "noise_scale");
            char f1[PG_FMT_F64_MAX], f2[PG_FMT_F64_MAX], f3[PG_FMT_F64_MAX];
            return pg_error_set(err, PG_EPRIVACY,
                                "column '%s': noise scale %s is below the minimum %s for "
                                "epsilon %s",
                                col->name, pg_fmt_f64(declared, f1), pg_fmt_f64(pc.noise_scale, f2),
                                pg_fmt_f64(pc.epsilon, f3));
        }
    }
    /* The even split sums back with rounding: allow 1e-12 relative. */
    if (eps_total < eps_sum * (1.0 - 1e-12) || delta_total < delta_sum * (1.0 - 1e-12)) {
        bad_field(field, "privacy.epsilon", (size_t)-1, NULL);
        return pg_error_set(err, PG_EPRIVACY,
                            "declared totals (%g, %g) are below the columns' sums (%g, %g)",
                            eps_total, delta_total, eps_sum, delta_sum);
    }
    if (epsilon) *epsilon = eps_total;
    if (delta) *delta = delta_total;
    return PG_OK;
}
